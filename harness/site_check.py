"""Drive the built web app (dist/site) in headless Chromium: shared by tests/test_site.py and
harness/measure_site.py.

    wav_seconds = speech_wav(path)                    # espeak-ng: 1 s, sentence, 1 s, sentence, 2 s
    with SiteBrowser(fake_mic=path) as browser:       # Debian Chromium, fake microphone
        app = browser.open(url + "?debug=1")          # -> App (page + problems), state "ready"
        run = app.listen(wav_seconds + 1)             # start, wait, stop -> timeline + result
        samples, rate = app.captured()                # exactly what the engine was fed
    native_stream_of_run(model, samples, rate, run)   # `python3 -m engine stream` on them (its setting, jumps)

The page's state is in window.phonon (web/app.mjs): state, timings (ms since navigation),
result, metrics; with ?debug=1 also every worker message and the captured samples.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import wave
from array import array
from pathlib import Path

from .runtimes import CHROMIUM, POLL_MS, chromium_flags

ROOT = Path(__file__).resolve().parent.parent
# What the fake microphone says: commands of the shipped model's domain (training/corpus.py's
# templates and slot values: "turn on the {room} lights", "play {genre} in the {room}"). The
# earlier second sentence, "Then play some quiet music in the living room.", had two phrases
# the text generator never makes (no sentence starts with "then"; "quiet" is no genre), so
# test_site's word check would have measured the model's language prior, not the app.
SENTENCES = ("Turn on the kitchen lights.", "Play some jazz in the living room.")
IDLE = ("ready", "done")
FED_SLACK = 0.3             # listen(seconds) stops once this close to `seconds` of audio was fed


def speech_wav(path: Path, rate: int = 48000, float32: bool = False, sentences=SENTENCES,
               lead_seconds: float = 1.0) -> float:
    """espeak-ng speech as a microphone would hear it: `lead_seconds` of silence, a sentence,
    1 s pause, another sentence, 2 s of silence (each sentence of `sentences` followed by 1 s,
    the last by 2 s); mono at `rate` (16-bit PCM, or 32-bit float). Returns its duration.
    The lead matters for a fake microphone: it plays this file in a loop from when the device
    opens, and on a loaded machine the page's capture starts later; without the lead it cut
    the first word ("turn on the kitchen lights" heard as "open the kitchen lights")."""
    from engine.audio import resample
    from engine.kernels import Kernels
    pieces, espeak_rate = array("f"), None
    with tempfile.TemporaryDirectory() as tmp:
        for i, sentence in enumerate(sentences):
            out = Path(tmp) / f"{i}.wav"
            subprocess.run(["espeak-ng", "-w", str(out), sentence], check=True)
            with wave.open(str(out)) as w:
                espeak_rate = w.getframerate()
                pcm = array("h", w.readframes(w.getnframes()))
            if i == 0:
                pieces.extend([0.0] * round(lead_seconds * espeak_rate))
            pieces.extend(v / 32768 for v in pcm)
            pieces.extend([0.0] * (2 * espeak_rate if i == len(sentences) - 1 else espeak_rate))
    x = resample(Kernels("scalar"), pieces, espeak_rate, rate)
    with open(path, "wb") as f:
        write_wav(f, x, rate, float32)
    return len(x) / rate


def write_wav(f, samples, rate: int, float32: bool):
    import struct
    if float32:
        data, tag, bits = array("f", samples).tobytes(), 3, 32
    else:
        data = array("h", (max(-32768, min(32767, round(v * 32767))) for v in samples)).tobytes()
        tag, bits = 1, 16
    f.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE")
    f.write(b"fmt " + struct.pack("<IHHIIHH", 16, tag, 1, rate, rate * bits // 8, bits // 8, bits))
    f.write(b"data" + struct.pack("<I", len(data)) + data)


def native(*args) -> dict:
    """`python3 -m engine ARGS --json` in this Python, parsed."""
    proc = subprocess.run([sys.executable, "-m", "engine", *map(str, args), "--json"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"python3 -m engine {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def native_stream(model: Path, samples: bytes, rate: int, latency: str = "fast", jumps=None) -> dict:
    """The native streaming session over exactly these float32 samples at `rate`, with the
    page's setting; jumps: a live-paced stream's result["jumps"], decoded where it decoded."""
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        f.write(samples)
        f.flush()
        replay = ["--replay", json.dumps(jumps)] if jumps else []
        return native("stream", f.name, "--raw-rate", rate, "--model", model, "--latency", latency, *replay)


def native_stream_of_run(model: Path, samples: bytes, rate: int, run: dict) -> dict:
    """native_stream for a page's microphone run (SiteBrowser.listen): its setting and jumps."""
    return native_stream(model, samples, rate, run["latency"], run["result"].get("jumps"))


def native_transcribe(model: Path, wav: Path) -> dict:
    return native("transcribe", wav, "--model", model)


def assert_views_follow(views: list, events: list):
    """The views a page showed during a stream ((committed, tentative) text pairs, in order) are
    views the native stream showed (its "events"), in its order. Only fewer: a page that ran two
    due decodes in one step showed the view after both."""
    from engine.stream.session import committed_views
    shown = [v for i, v in enumerate(views) if any(v) and (i == 0 or v != views[i - 1])]
    native = committed_views(events)
    assert shown, "the page showed no text while streaming"
    at = 0
    for view in shown:
        assert view in native[at:], f"the page showed {view}, not a view native's stream showed next: {native[at:]}"
        at = native.index(view, at)


class App:
    """One page of the app, with what went wrong on it (console errors, page errors, failed
    requests) and every request URL it made."""

    def __init__(self, page):
        self.page = page
        self.problems: list[str] = []
        self.requests: list[str] = []
        if not hasattr(page, "on"):               # a harness.engines page collects its own
            self.problems = page.problems
            return
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(
            f"request failed: {r.url} {r.failure} (page state {self._state_now()})"))
        page.on("request", lambda r: self.requests.append(r.url))

    def _state_now(self) -> str:
        try:
            return self.page.evaluate("window.phonon && window.phonon.state")
        except Exception as e:                  # noqa: BLE001 - only for the message
            return f"unknown ({type(e).__name__})"

    def goto(self, url: str, states=IDLE + ("error",), timeout_ms: int = 180_000):
        self.page.goto(url)
        return self.wait(states, timeout_ms)

    def reload(self, states=IDLE + ("error",), timeout_ms: int = 180_000):
        self.page.reload()
        return self.wait(states, timeout_ms)

    def wait(self, states, timeout_ms: int = 180_000) -> str:
        self.page.wait_for_function("(states) => states.includes(window.phonon && window.phonon.state)",
                                    arg=list(states), timeout=timeout_ms, polling=POLL_MS)
        return self.state

    @property
    def state(self) -> str:
        return self.page.evaluate("window.phonon.state")

    def phonon(self, expr: str = "window.phonon"):
        return self.page.evaluate(f"JSON.parse(JSON.stringify({expr}))")

    def alert(self) -> str:
        return self.page.evaluate("document.getElementById('alert').hidden ? '' : "
                                  "document.getElementById('alert-text').textContent")

    def listen(self, seconds: float, screenshot=None, final_timeout_ms: int = 120_000) -> dict:
        """Start the microphone, let `seconds` of audio reach the engine (by the page's own
        clock), stop, wait up to final_timeout_ms for the final transcript (the backlog of a
        slow tier is decoded first). screenshot(name) is called at the listening midpoint and
        after the end."""
        page = self.page
        page.click("#mic")
        self.wait(("listening",) + IDLE, 30_000)
        assert self.state == "listening", self.alert() or "the microphone did not start"
        started = page.evaluate("window.phonon.timings.captureStart")
        if screenshot:
            page.wait_for_function("(t) => performance.now() > t", arg=started + seconds * 500, polling=POLL_MS)
            screenshot("listening")
        page.wait_for_function("(t) => performance.now() > t", arg=started + seconds * 1000,
                               timeout=int(seconds * 1000) + 60_000, polling=POLL_MS)
        self.wait_for_audio(seconds - FED_SLACK)
        page.click("#mic")
        self.wait(IDLE + ("error",), final_timeout_ms)
        assert self.state == "done", self.alert()
        if screenshot:
            page.wait_for_timeout(900)          # the newest words' settle animation
            screenshot("finished")
        run = self.phonon("({timings: phonon.timings, result: phonon.result, metrics: phonon.metrics, "
                          "latency: phonon.latency, pace: phonon.pace, "
                          "transport: phonon.transport, rate: phonon.sampleRate, heap: phonon.heapBytes, "
                          "partials: phonon.log.filter(e => e.kind === 'partial')"
                          ".map(e => ({t: e.t, audio: e.view.audio_seconds, added_text: e.view.added_text, "
                          "tentative: e.view.tentative}))})")
        from engine.stream.session import committed_views    # a poll carries what was added
        for p, (committed, _) in zip(run["partials"], committed_views(run["partials"])):
            p["committed"] = committed
            del p["added_text"]
        return run

    def wait_for_audio(self, seconds: float, timeout_ms: int = 30_000):
        """Until the engine worker has been fed `seconds` of audio (its partials' fed_seconds).
        A fake microphone is a real-time device: on a machine loaded by parallel tests its
        audio thread can fall behind the page's clock (Firefox's mock audio device delivered
        2.3 s in 3 s once), so the amount captured, not the clock, says when enough has come.
        Gives up quietly after timeout_ms: the caller's own checks then name what is short."""
        try:
            self.page.wait_for_function("(s) => ((window.phonon.metrics || {}).fed_seconds || 0) >= s",
                                        arg=seconds, timeout=timeout_ms, polling=POLL_MS)
        except Exception:                   # noqa: BLE001 - playwright's or a driver's timeout
            pass

    def captured(self) -> tuple:
        """(float32 bytes, rate): the samples the worker fed to the stream (?debug=1)."""
        out = self.page.evaluate("window.phonon.debug.captured()")
        return base64.b64decode(out["base64"]), out["rate"]

    def transcribe_file(self, path: Path, timeout_ms: int = 180_000) -> dict:
        self.page.evaluate("window.phonon.result = null")
        self.page.set_input_files("#file", str(path))
        self.page.wait_for_function("window.phonon.result || window.phonon.state === 'error' || "
                                    "!document.getElementById('alert').hidden", timeout=timeout_ms, polling=POLL_MS)
        assert self.state == "done", self.alert()
        return self.phonon("window.phonon.result")


class SiteBrowser:
    """Headless Debian Chromium; with fake_mic, its microphone plays that WAV once; with webgpu,
    WebGPU on SwiftShader (harness.runtimes.chromium_flags)."""

    def __init__(self, fake_mic: Path | None = None, webgpu: bool = False):
        self.flags = chromium_flags(webgpu)
        if fake_mic:
            self.flags += ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                           f"--use-file-for-fake-audio-capture={Path(fake_mic).resolve()}%noloop"]

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=self.flags)
        return self

    def __exit__(self, *exc):
        self.browser.close()
        self._pw.stop()

    def context(self, **kwargs):
        kwargs.setdefault("viewport", {"width": 1200, "height": 820})
        # Playwright's wait_for_function evaluates its predicate with eval(), which the site's
        # Content-Security-Policy forbids; tests/test_site.py checks the policy itself in a
        # context without this bypass.
        kwargs.setdefault("bypass_csp", True)
        kwargs.setdefault("accept_downloads", True)
        # the page's pulsing status dot and ringing microphone button (web/style.css) made the
        # headless compositor draw 60 frames a second while loading, listening or transcribing:
        # 0.1 s of CPU per second (0.02 s without them); the app honours reduced motion, as a user may ask
        kwargs.setdefault("reduced_motion", "reduce")
        return self.browser.new_context(**kwargs)

    def open(self, url: str, context=None, init_script: str | None = None) -> App:
        context = context or self.context()
        page = context.new_page()
        page.set_default_timeout(60_000)
        if init_script:
            page.add_init_script(init_script)
        app = App(page)
        app.goto(url)
        return app

