"""The web app (dist/site, built by `python3 build.py site`) in headless Chromium.

- served by a plain static server from a sub-path, it reaches "ready" with no console errors
  and no failed requests, and requests nothing outside its folder;
- the microphone (Chromium's fake device playing espeak-ng speech) gives partial text while
  the audio plays, committed text after it, and a final transcript equal to the native
  `python3 -m engine stream` over exactly the samples the page captured: once as shipped
  (transferable blocks), once cross-origin isolated (SharedArrayBuffer ring) with the tiny
  test model, whose random weights always emit tokens;
- a file gives the native `python3 -m engine transcribe` result in both kernel tiers, and
  through WebAudio's decodeAudioData too; a file longer than a 30 s window goes a window at a
  time with progress, gives the CLI's windows and tokens, and cancels;
- a second visit takes the model from Cache Storage and works with the network cut;
- a tampered model is refused with the sha256 message and not cached;
- a refused microphone, a dead worker and a browser without WebAssembly get clear messages;
- screenshots of the idle, listening and finished states go to build/artifacts/.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import shutil
import subprocess
import warnings
import zipfile
from pathlib import Path

import brotli
import pytest

from conftest import build_artifact
from harness.runtimes import POLL_MS
from harness.site_check import SENTENCES as SPOKEN
from tools.precompress import archive_entries

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "artifacts"
SUB = "/sub/path/"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site() -> Path:
    return build_artifact("PHONON_SITE")


@pytest.fixture(scope="module")
def manifest(site) -> dict:
    return json.loads((site / "manifest.json").read_text())


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> tuple:
    """(wav path, seconds): 48 kHz 16-bit espeak-ng speech, also the fake microphone."""
    from harness.site_check import speech_wav
    path = tmp_path_factory.mktemp("speech") / "speech.wav"
    return path, speech_wav(path)


@pytest.fixture(scope="module")
def browser(speech):
    from harness.site_check import SiteBrowser
    with SiteBrowser(fake_mic=speech[0]) as b:
        yield b


def serve(directory: Path, isolate: bool = False):
    from harness.server import StaticServer
    return StaticServer({SUB: directory}, isolate=isolate)


@pytest.fixture(scope="module")
def server(site):
    with serve(site) as s:
        yield s


@pytest.fixture(scope="module")
def first_visit(browser, server):
    """A first visit in a fresh profile: the service worker caches the shell, the engine
    worker downloads the model. Kept open for the second-visit test."""
    context = browser.context()
    app = browser.open(server.url + SUB + "?debug=1", context)
    yield context, app
    context.close()


def shoot(app, name: str):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app.page.screenshot(path=str(ARTIFACTS / f"site-{name}.png"))


def test_manifest_lists_every_file_with_its_digest(site, manifest):
    on_disk = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert on_disk - {"manifest.json"} == set(manifest["files"]) | set(manifest["compressed"])
    for rel, entry in manifest["compressed"].items():           # a brotli or gzip copy of its file, for hosts that send them
        packed = (site / rel).read_bytes()
        unpacked = brotli.decompress(packed) if entry["encoding"] == "br" else gzip.decompress(packed)
        original = (site / entry["of"]).read_bytes()
        if entry["same"] == "entries":                            # a zip: the same archive, its entries stored
            assert archive_entries(unpacked) == archive_entries(original), rel
            assert all(i.compress_type == zipfile.ZIP_STORED for i in zipfile.ZipFile(io.BytesIO(unpacked)).infolist())
        else:
            assert (entry["same"], unpacked) == ("bytes", original), rel
        assert (hashlib.sha256(packed).hexdigest(), len(packed)) == (entry["sha256"], entry["size"]), rel
        assert entry["size"] < manifest["files"][entry["of"]]["size"]
    copies = {(entry["of"], entry["encoding"]) for entry in manifest["compressed"].values()}
    for big in ("pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip", manifest["wheel"], "phonon.mjs"):
        assert {(big, "br"), (big, "gzip")} <= copies, big
    for rel, entry in manifest["files"].items():
        data = (site / rel).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (entry["sha256"], entry["size"]), rel
    model = manifest["model"]
    assert manifest["files"][model["path"]]["sha256"] == model["sha256"]
    html = (site / "index.html").read_text()
    for absolute in ('src="/', 'href="/', "http://", "https://"):
        assert absolute not in html, f"index.html has an absolute URL ({absolute})"


def test_transcript_formats():
    """SRT and WebVTT cues (sentence ends, pauses, no overlap), text and JSON (node)."""
    code = """
import { toText, toJSON, toSRT, toVTT, timestamp } from "./web/formats.mjs";
const t = { text: "Hello there. How are you?", audio_seconds: 4.5, words: [
  { word: "Hello", start: 0.24, end: 0.56 }, { word: "there.", start: 0.56, end: 0.96 },
  { word: "How", start: 2.4, end: 2.56 }, { word: "are", start: 2.56, end: 2.64 },
  { word: "you?", start: 2.64, end: 2.64 } ] };
console.log(JSON.stringify({ text: toText(t), json: JSON.parse(toJSON(t, { tier: "scalar" })),
  srt: toSRT(t), vtt: toVTT(t), long: timestamp(3723.4567, ",") }));
"""
    out = json.loads(subprocess.run(["node", "--input-type=module", "-e", code], cwd=ROOT,
                                    capture_output=True, text=True, check=True).stdout)
    assert out["text"] == "Hello there. How are you?\n"
    assert out["json"]["words"][2] == {"word": "How", "start": 2.4, "end": 2.56}
    assert out["json"]["tier"] == "scalar" and out["json"]["audio_seconds"] == 4.5
    assert out["srt"] == ("1\n00:00:00,240 --> 00:00:00,960\nHello there.\n\n"
                          "2\n00:00:02,400 --> 00:00:02,640\nHow are you?\n")
    assert out["vtt"] == ("WEBVTT\n\n00:00:00.240 --> 00:00:00.960\nHello there.\n\n"
                          "00:00:02.400 --> 00:00:02.640\nHow are you?\n")
    assert out["long"] == "01:02:03,457"


def test_loads_from_a_subpath_without_errors(first_visit, server, manifest):
    _, app = first_visit
    assert app.state == "ready", app.alert()
    assert not app.problems, app.problems
    outside = [u for u in app.requests if not u.startswith(server.url + SUB)]
    assert not outside, f"requests outside the site's folder: {outside}"
    info = app.phonon()
    assert info["serviceWorker"] == "controlled"
    assert info["ready"]["tier"] == "wasm_relaxed_simd"           # Chromium 156 validates relaxed SIMD
    assert info["ready"]["modelSource"] == "network"
    assert server.log.count(SUB + manifest["model"]["path"]) == 1
    # a plain static server sends no COOP/COEP: the service worker adds them, after one reload
    # on the first visit; the default model is too small to gain from more workers, so one
    # runs and the page says why (?threads=N forces a split: test_kernel_workers_in_the_page)
    assert app.page.evaluate("crossOriginIsolated")
    assert info["threadsWanted"] == min(app.page.evaluate("navigator.hardwareConcurrency"), 4)
    assert info["ready"]["threads"] == 1 and "small enough" in info["threadsNote"]
    assert app.page.evaluate("document.getElementById('m-tier').textContent") == "wasm_relaxed_simd · 1 worker"
    assert app.page.is_visible("#threads-note")
    shoot(app, "idle")


def check_stream(app, run: dict, seconds: float, model: Path, require_text: bool, commit_slack: float = 1.5,
                 partial_slack: float = 0.0):
    """The page's live run against the native stream over the samples it captured; the first
    words show while the audio plays (or within `partial_slack` seconds of its end) and commit
    within `commit_slack` seconds of its end."""
    samples, rate = app.captured()
    assert rate == run["rate"] and len(samples) / 4 / rate >= seconds - 0.5
    native = native_stream_of(model, samples, rate, run["latency"], run["result"].get("jumps"))
    final = run["result"]
    assert run["metrics"]["dropped_samples"] == 0 and run["metrics"]["refused_seconds"] == 0, \
        "audio was lost between the microphone and the engine"
    assert final["text"] == native["final"]["text"]
    assert final["tokens"] == native["final"]["tokens"]
    assert final["words"] == native["final"]["words"]
    if not native["final"]["text"]:
        assert not require_text, "the model gave no text for the speech"
        warnings.warn(f"{model.name} says nothing on this speech: the finals are equal (empty), "
                      "live text timing was not checked (the tiny-model run checks it)")
        return
    from harness.site_check import assert_views_follow
    assert_views_follow([(p["committed"], p["tentative"]) for p in run["partials"]], native["events"])
    start = run["timings"]["captureStart"]
    first_partial = next(p for p in run["partials"] if p["committed"] or p["tentative"])
    first_commit = next(p for p in run["partials"] if p["committed"])
    assert first_partial["t"] - start < (seconds + partial_slack) * 1000, "no partial text while the audio played"
    assert first_commit["t"] > first_partial["t"] and first_commit["t"] - start < (seconds + commit_slack) * 1000


TRAINED_MODEL = "phonon-small.gguf"      # the shipped trained model in models/
MAX_WORD_ERRORS = 1                      # of the 12 words the fake microphone says


def word_errors(text: str, sentences) -> int:
    """Word edit distance between a transcript and the spoken sentences, both normalised as
    the Open ASR leaderboard does (lower case, no punctuation)."""
    from training.metrics import edit_distance, normalize
    return edit_distance(normalize(text), normalize(" ".join(sentences)))


def native_stream_of(model, samples, rate, latency="fast", jumps=None):
    """Native `engine stream` over the page's samples with its setting (the demo's microphone:
    balanced at the live pace) and, where the page fell behind, its jumps replayed."""
    from harness.site_check import native_stream
    return native_stream(model, samples, rate, latency, jumps)


def test_microphone_matches_native_stream(browser, server, site, manifest, speech):
    """One worker, not isolated (?threads=1: the service worker adds no COOP/COEP): the
    transferable-block transport; partial, then committed text, final = native."""
    app = browser.open(server.url + SUB + "?threads=1&debug=1")
    assert app.state == "ready", app.alert()
    run = app.listen(speech[1] + 1.0, screenshot=lambda name: shoot(app, name))
    assert run["transport"] == "transfer"
    page = app.page
    page.set_viewport_size({"width": 390, "height": 844})
    shoot(app, "finished-phone")
    assert not app.problems, app.problems
    # word times on hover: every word carries a title with its start and end
    titles = page.evaluate("[...document.querySelectorAll('#committed .w')].map(w => w.title)")
    assert len(titles) == len(run["result"]["words"])
    assert all(t.endswith(" s") and "–" in t for t in titles)
    model = site / manifest["model"]["path"]
    trained = model.name == TRAINED_MODEL
    check_stream(app, run, speech[1], model, require_text=trained)
    if trained:
        # the shipped model recognises speech: the page shows what was said
        assert word_errors(run["result"]["text"], SPOKEN) <= MAX_WORD_ERRORS, (run["result"]["text"], SPOKEN)


def test_a_reload_mid_stream_offers_the_committed_words_back_and_clear_clears(browser, speech, tmp_path):
    """The page keeps committed words on the device as they commit: reloaded after a few
    committed words (saving stopped first, as a crash at that instant would), it offers exactly
    those words back, with their times and text, and exports them; Clear deletes them."""
    tiny_site = build_artifact("PHONON_SITE_TINY")
    with serve(tiny_site) as plain:
        app = browser.open(plain.url + SUB + "?threads=1&debug=1")
        assert app.state == "ready", app.alert()
        assert app.page.is_hidden("#restore")                       # a fresh profile keeps nothing
        app.page.click("#mic")
        app.wait(("listening",), 30_000)
        app.page.wait_for_function("document.querySelectorAll('#committed .w').length >= 3", timeout=60_000, polling=POLL_MS)
        # in one task: no commit can come between reading the committed words and the hold
        committed = app.page.evaluate("(() => { phonon.kept.hold(); return phonon.kept.committed(); })()")
        app.page.evaluate("phonon.kept.settled()")
        assert len(committed["words"]) >= 3
        rate = app.phonon("phonon.sampleRate")
        app.page.reload()
        app.wait(("ready", "done", "error"))
        app.page.wait_for_selector("#restore", state="visible", timeout=10_000)
        offer = app.page.text_content("#restore-text")
        assert "An unfinished transcript" in offer and f"{len(committed['words'])} words" in offer, offer
        kept = app.page.evaluate("phonon.kept.latest()")
        assert kept["words"] == committed["words"] and kept["text"] == committed["text"]
        assert kept["session"]["finished"] is False and kept["session"]["sampleRate"] == rate
        app.page.click("#restore-show")
        shown = app.page.evaluate("[...document.querySelectorAll('#committed .w')].map(w => w.textContent)")
        assert shown == [w["word"] for w in committed["words"]]
        assert app.page.is_hidden("#restore") and app.state == "done"
        with app.page.expect_download() as info:
            app.page.click("[data-format=json]")
        exported = json.loads(Path(info.value.path()).read_text())
        assert exported["words"] == committed["words"] and exported["text"] == committed["text"]
        assert exported["model"] == kept["session"]["model"]["name"] and exported["started"] == kept["session"]["started"]
        app.page.click("#clear")
        app.page.wait_for_function("phonon.kept.latest().then(k => k === null)", timeout=10_000, polling=POLL_MS)
        app.reload()
        assert app.state == "ready" and app.page.is_hidden("#restore")
        assert app.page.evaluate("phonon.kept.latest()") is None
        assert not app.problems, app.problems


def listening_on_the_tiny_model(browser, server_url: str, query: str = ""):
    app = browser.open(server_url + SUB + "?threads=1&debug=1" + query)
    assert app.state == "ready", app.alert()
    app.page.click("#mic")
    app.wait(("listening",), 30_000)
    return app


def finish_and_compare(app, seconds: float) -> dict:
    """Stop once `seconds` of audio reached the engine; the final transcript must equal native
    `engine stream` over exactly the samples the page captured, with nothing dropped."""
    app.wait_for_audio(seconds)
    if app.state == "listening":
        app.page.click("#mic")
    assert app.wait(("done", "error"), 120_000) == "done", app.alert()
    samples, rate = app.captured()
    # every sample the worklet sent reached the stream once (across worker restarts too)
    app.page.wait_for_function("phonon.captureSent !== undefined", timeout=10_000, polling=POLL_MS)
    assert len(samples) // 4 == app.phonon("phonon.captureSent")    # float32 bytes
    tiny_site = build_artifact("PHONON_SITE_TINY")
    model = tiny_site / json.loads((tiny_site / "manifest.json").read_text())["model"]["path"]
    result, metrics = app.phonon("phonon.result"), app.phonon("phonon.metrics")
    native = native_stream_of(model, samples, rate, app.phonon("phonon.latency"), result.get("jumps"))
    assert result["tokens"] == native["final"]["tokens"] and result["words"] == native["final"]["words"]
    assert metrics["dropped_samples"] == 0
    return result


STALL = "(() => { const t = performance.now(); while (performance.now() - t < 6000) {} })()"


def test_a_stalled_page_keeps_its_worker_and_its_stream(browser, speech):
    """The page's own thread stops for twice the heartbeat's silence limit (what a hidden tab's
    throttled timers, one a minute, or a long pause of the page look like to it), idle and then
    while listening: the engine worker, which went on meanwhile, is not declared dead, the
    stream goes on, and nothing is lost."""
    with serve(build_artifact("PHONON_SITE_TINY")) as plain:
        app = browser.open(plain.url + SUB + "?threads=1&debug=1&silence_ms=3000")
        assert app.state == "ready", app.alert()
        app.page.evaluate(STALL)
        app.page.wait_for_timeout(4000)                 # two heartbeats: a ping out and its answer back
        assert app.state == "ready", app.alert()
        app.page.click("#mic")
        app.wait(("listening",), 30_000)
        app.wait_for_audio(1.0)
        app.page.evaluate(STALL)
        finish_and_compare(app, speech[1] + 1.0)
        assert not app.problems, app.problems


def test_a_microphone_that_ends_stops_with_a_message_and_keeps_the_words(browser, speech):
    """The track ends mid-stream (unplugged): listening stops with a message saying so, the
    committed words stay on screen and on the device, the export has them."""
    with serve(build_artifact("PHONON_SITE_TINY")) as plain:
        app = listening_on_the_tiny_model(browser, plain.url)
        app.page.wait_for_function("document.querySelectorAll('#committed .w').length >= 2", timeout=60_000, polling=POLL_MS)
        app.page.evaluate("phonon.mic().media.getAudioTracks()[0].dispatchEvent(new Event('ended'))")
        assert app.wait(("done", "error"), 60_000) == "done", app.alert()
        assert "The microphone stopped" in app.alert() and "kept" in app.alert()
        result = app.phonon("phonon.result")
        shown = app.page.evaluate("[...document.querySelectorAll('#committed .w')].map(w => w.textContent)")
        assert len(shown) >= 2 and shown == [w["word"] for w in result["words"]]
        kept = app.page.evaluate("phonon.kept.latest()")
        assert kept["session"]["finished"] and kept["words"] == result["words"] and kept["text"] == result["text"]
        with app.page.expect_download() as info:
            app.page.click("[data-format=txt]")
        assert Path(info.value.path()).read_text().strip() == result["text"]
        assert not app.problems, app.problems


@pytest.mark.parametrize("isolate", [False, True], ids=["transfer", "shared-ring"])
def test_an_engine_worker_that_dies_mid_stream_is_restarted_and_nothing_is_lost(browser, speech, isolate):
    """The engine worker dies while the microphone streams (it stops answering, as a crashed or
    killed worker does): the heartbeat notices, a new worker loads the model and resumes the
    stream from its newest checkpoint, the capture worklet feeds it the input it kept since
    (what it captured during the restart included); the page says what happened, and the final
    transcript is native `engine stream`'s over every sample captured, nothing dropped. With
    either transport: transferred blocks, or the SharedArrayBuffer ring."""
    with serve(build_artifact("PHONON_SITE_TINY"), isolate=isolate) as plain:
        app = browser.open(plain.url + SUB + "?threads=1&debug=1&silence_ms=3000")
        assert app.state == "ready", app.alert()
        app.page.click("#mic")
        app.wait(("listening",), 30_000)
        assert app.phonon("phonon.transport") == ("shared-ring" if isolate else "transfer")
        app.page.wait_for_function("document.querySelectorAll('#committed .w').length >= 2", timeout=60_000, polling=POLL_MS)
        before = app.page.evaluate("[...document.querySelectorAll('#committed .w')].map(w => w.textContent)")
        app.page.evaluate("phonon.debug.crashWorker()")
        app.page.wait_for_function("phonon.restarts === 1", timeout=60_000, polling=POLL_MS)
        assert "was restarted in" in app.alert() and "nothing committed was lost" in app.alert()
        assert app.state == "listening"
        result = finish_and_compare(app, speech[1] + 1.0)
        assert [w["word"] for w in result["words"][:len(before)]] == before
        shown = app.page.evaluate("[...document.querySelectorAll('#committed .w')].map(w => w.textContent)")
        assert shown == [w["word"] for w in result["words"]]
        assert not app.problems, app.problems


def test_a_suspended_audio_context_resumes_and_the_stream_goes_on(browser, speech):
    """The browser suspends the AudioContext mid-stream: the page resumes it, says capture was
    paused, and the stream goes on to native's transcript of what was captured."""
    with serve(build_artifact("PHONON_SITE_TINY")) as plain:
        app = listening_on_the_tiny_model(browser, plain.url)
        app.wait_for_audio(1.0)
        app.page.evaluate("phonon.mic().context.suspend()")
        app.page.wait_for_function("phonon.captureGaps === 1", timeout=10_000, polling=POLL_MS)
        assert "paused the microphone" in app.alert() and app.state == "listening"
        finish_and_compare(app, speech[1] + 1.0)
        assert not app.problems, app.problems


def test_microphone_shared_ring_matches_native_stream(browser, speech):
    """Cross-origin isolated (COOP/COEP): the SharedArrayBuffer ring; the tiny test model."""
    tiny_site = build_artifact("PHONON_SITE_TINY")
    model = tiny_site / json.loads((tiny_site / "manifest.json").read_text())["model"]["path"]
    with serve(tiny_site, isolate=True) as isolated:
        app = browser.open(isolated.url + SUB + "?debug=1")
        assert app.state == "ready", app.alert()
        assert app.page.evaluate("crossOriginIsolated")
        run = app.listen(speech[1] + 1.0)
        assert run["transport"] == "shared-ring"
        assert not app.problems, app.problems
        check_stream(app, run, speech[1], model, require_text=True)


@pytest.mark.parametrize("tier", [None, "scalar"])
def test_file_matches_native_transcribe(browser, server, site, manifest, speech, tier, tmp_path):
    from harness.site_check import native_transcribe, speech_wav
    app = browser.open(server.url + SUB + (f"?tier={tier}&debug=1" if tier else "?debug=1"))
    assert app.state == "ready", app.alert()
    expected_tier = tier or "wasm_relaxed_simd"
    assert app.phonon("window.phonon.ready.tier") == expected_tier
    model = site / manifest["model"]["path"]
    result = app.transcribe_file(speech[0])
    native = native_transcribe(model, speech[0])
    assert result["timing"]["tier"] == expected_tier
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    if tier is None:
        # the same audio through WebAudio's decodeAudioData (float WAV at 48 kHz: exact samples)
        f32 = tmp_path / "speech-f32.wav"
        speech_wav(f32, float32=True)
        app.page.evaluate("window.phonon.decodeAllFiles = true")
        decoded = app.transcribe_file(f32)
        native = native_transcribe(model, f32)
        assert (decoded["text"], decoded["tokens"]) == (native["text"], native["tokens"])
        # exports: the JSON download carries the words with times
        with app.page.expect_download() as info:
            app.page.click("[data-format=json]")
        saved = json.loads(Path(info.value.path()).read_text())
        assert saved["words"] == native["words"] and saved["tier"] == expected_tier
        # not audio: a clear message, and the app stays usable
        junk = tmp_path / "notes.mp3"
        junk.write_text("not audio")
        app.page.set_input_files("#file", str(junk))
        app.page.wait_for_function("!document.getElementById('alert').hidden", polling=POLL_MS)
        assert "not in an audio format this browser can decode" in app.alert()
        assert app.state == "ready"
    assert not app.problems, app.problems


def test_content_security_policy_holds(browser, server, speech):
    """The page's Content-Security-Policy (no inline script, no eval; WebAssembly allowed) is
    enforced here (no bypass), the workers get theirs from the service worker, and the app
    still starts and transcribes a file with no violation reported. Waits poll with
    page.evaluate: wait_for_function would need eval."""
    import time
    context = browser.context(bypass_csp=False)
    page = context.new_page()
    problems, violations = [], []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                         "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI))")

    def wait_until(expr: str, seconds: float = 180):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if page.evaluate(expr):
                    return
            except Exception:                 # a navigation (the isolation reload) in between
                pass
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {expr}")
    page.goto(server.url + SUB + "?debug=1")
    wait_until("window.phonon && ['ready', 'error'].includes(window.phonon.state)")
    assert page.evaluate("window.phonon.state") == "ready"
    page.set_input_files("#file", str(speech[0]))
    wait_until("window.phonon.result !== null || window.phonon.state === 'error'")
    assert page.evaluate("window.phonon.state") == "done"
    # the engine worker runs under the workers' policy (the service worker adds it to their
    # scripts): Pyodide and the kernels work there, and eval is refused
    page.evaluate("window.phonon.toWorker({ kind: 'csp-probe' })")
    wait_until("window.phonon.log.some((m) => m.kind === 'csp-probe')", 30)
    probe = page.evaluate("window.phonon.log.find((m) => m.kind === 'csp-probe')")
    violations = page.evaluate("window.__csp")
    context.close()
    assert probe["evalBlocked"] is True, probe
    assert not violations, violations
    assert not [p for p in problems if "Content Security Policy" in p], problems


def test_kernel_workers_in_the_page(browser, server, site, manifest, speech):
    """?threads=3: the engine worker and two kernel workers split the encoder, and a file gives
    the native result bit for bit; with no service worker and no COOP/COEP from the server, one
    worker, and the page says why."""
    from harness.site_check import native_transcribe
    app = browser.open(server.url + SUB + "?threads=3&debug=1")
    assert app.state == "ready", app.alert()
    assert app.phonon("window.phonon.threads") == 3
    assert app.page.evaluate("document.getElementById('m-tier').textContent").endswith("· 3 workers")
    result = app.transcribe_file(speech[0])
    native = native_transcribe(site / manifest["model"]["path"], speech[0])
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    assert result["timing"]["threads"] == 3
    assert not app.problems, app.problems

    # the once-per-session isolation reload already spent: the service worker now serves the page
    # with COOP/COEP, but this document was loaded before it could
    plain = browser.open(server.url + SUB + "?threads=2",
                         init_script="sessionStorage.setItem('phonon-web-isolation-reload', '1')")
    assert plain.state == "ready", plain.alert()
    assert not plain.page.evaluate("crossOriginIsolated")
    assert plain.phonon("window.phonon.threads") == 1
    note = plain.page.text_content("#threads-note")
    assert plain.page.is_visible("#threads-note") and "reload it to use every core" in note, note
    assert plain.page.evaluate("document.getElementById('m-tier').textContent").endswith("· 1 worker")


def tiled_wav(path: Path, speech_16k: Path, seconds: float) -> float:
    """The 16 kHz speech clip repeated until `seconds`: a long file that has pauses to cut at."""
    import wave
    with wave.open(str(speech_16k)) as w:
        clip, rate = w.readframes(w.getnframes()), w.getframerate()
    repeats = math.ceil(seconds * rate * 2 / len(clip))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(clip * repeats)
    return len(clip) * repeats / 2 / rate


def test_long_file_in_windows_with_progress_and_cancel(browser, server, site, manifest, tmp_path):
    """A file longer than one 30 s window takes the page's stepped path: progress after every
    step, the native CLI's windows and tokens, and a cancel that stops it and leaves the page
    usable (the same code path a 30-minute file takes, only shorter)."""
    from harness.site_check import native_transcribe, speech_wav
    clip = tmp_path / "clip16k.wav"
    speech_wav(clip, rate=16000)
    long_wav = tmp_path / "long.wav"
    seconds = tiled_wav(long_wav, clip, 75)
    app = browser.open(server.url + SUB + "?debug=1")
    assert app.state == "ready", app.alert()
    model = site / manifest["model"]["path"]

    app.page.evaluate("window.phonon.log = []")
    result = app.transcribe_file(long_wav)
    native = native_transcribe(model, long_wav)
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    assert result["timing"]["windows"] == native["timing"]["windows"] and len(native["timing"]["windows"]) >= 3
    progress = app.phonon("window.phonon.log.filter(m => m.kind === 'file-progress')")
    done = [m["done"] for m in progress]
    assert len(progress) >= seconds // 10 and done == sorted(done) and 0 < done[len(done) // 2] < seconds
    assert all(m["total"] == pytest.approx(seconds, abs=0.01) for m in progress)

    # five minutes, cancelled after its first window: stopped, said so, and the page goes on
    longer = tmp_path / "longer.wav"
    tiled_wav(longer, clip, 300)
    app.page.evaluate("window.phonon.log = []; window.phonon.result = null")
    app.page.set_input_files("#file", str(longer))
    app.page.wait_for_function("window.phonon.log.some(m => m.kind === 'file-progress' && m.done > 0)", polling=POLL_MS)
    assert app.page.is_visible("#cancel-file") and app.page.is_visible("#file-progress")
    assert "%" in app.page.text_content("#status-text")
    app.page.click("#cancel-file")
    app.page.wait_for_function("window.phonon.log.some(m => m.kind === 'file-cancelled' || m.kind === 'file-result')", polling=POLL_MS)
    kinds = [m["kind"] for m in app.phonon("window.phonon.log")]
    assert "file-cancelled" in kinds and "file-result" not in kinds
    assert "Stopped transcribing longer.wav" in app.alert()
    assert app.state == "ready" and not app.page.is_visible("#cancel-file")
    again = app.transcribe_file(clip)
    assert again["tokens"] == native_transcribe(model, clip)["tokens"]
    assert not app.problems, app.problems


def test_a_kernel_worker_that_dies_loses_nothing(browser, server, site, manifest, tmp_path):
    """A kernel worker terminated mid-file (as a crash would): the page says so, the engine
    finishes with one worker, and the transcript is still the native one, bit for bit."""
    from harness.site_check import native_transcribe, speech_wav
    clip = tmp_path / "clip16k.wav"
    speech_wav(clip, rate=16000)
    long_wav = tmp_path / "long.wav"
    tiled_wav(long_wav, clip, 75)
    app = browser.open(server.url + SUB + "?threads=2&debug=1")
    assert app.state == "ready" and app.phonon("window.phonon.threads") == 2, app.alert()
    app.page.evaluate("window.phonon.log = []; window.phonon.result = null")
    app.page.set_input_files("#file", str(long_wav))
    app.page.wait_for_function("window.phonon.log.some(m => m.kind === 'file-progress' && m.done > 0)", polling=POLL_MS)
    app.page.evaluate("window.phonon.toWorker({ kind: 'kill-kernel-worker', slot: 0 })")
    app.page.wait_for_function("window.phonon.result || window.phonon.state === 'error'", timeout=180_000, polling=POLL_MS)
    assert app.state == "done", app.alert()
    lost = app.phonon("window.phonon.log.filter(m => m.kind === 'workers-lost')")
    kinds = [m["kind"] for m in app.phonon("window.phonon.log")]
    assert len(lost) == 1 and "stopped answering" in lost[0]["message"], (lost, kinds, app.phonon("window.phonon.threads"))
    assert "goes on with one worker" in app.alert()
    assert app.page.evaluate("document.getElementById('m-tier').textContent").endswith("· 1 worker")
    result = app.phonon("window.phonon.result")
    native = native_transcribe(site / manifest["model"]["path"], long_wav)
    assert (result["text"], result["tokens"], result["words"]) == (native["text"], native["tokens"], native["words"])
    again = app.transcribe_file(clip)                 # and the next file, with one worker
    assert again["tokens"] == native_transcribe(site / manifest["model"]["path"], clip)["tokens"]
    assert again["timing"]["threads"] == 1


def test_second_visit_uses_the_cache_and_works_offline(first_visit, server, manifest, speech, site):
    from harness.site_check import native_transcribe
    context, app = first_visit
    model_url = SUB + manifest["model"]["path"]
    server.log.clear()
    app.requests.clear()
    assert app.reload() == "ready", app.alert()
    assert app.phonon("window.phonon.ready.modelSource") == "cache"
    # Python came back from the memory snapshot the first visit kept (web/start-snapshot.mjs)
    assert app.phonon("window.phonon.ready.start") == {"snapshot": "restored", "note": None}
    assert model_url not in server.log, "the model was downloaded again"
    assert not [u for u in app.requests if u.endswith(model_url)]
    assert not [p for p in server.log if not p.endswith("sw.js")], \
        f"a warm start fetched from the network: {server.log}"
    context.set_offline(True)
    try:
        assert app.reload() == "ready", app.alert()
        assert app.phonon("window.phonon.ready.start.snapshot") == "restored"
        result = app.transcribe_file(speech[0])
    finally:
        context.set_offline(False)
    native = native_transcribe(site / manifest["model"]["path"], speech[0])
    assert (result["text"], result["tokens"]) == (native["text"], native["tokens"])
    assert not [p for p in app.problems if "sw.js" not in p], app.problems


def test_tampered_model_is_refused(browser, site, manifest, tmp_path):
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    model = copy / manifest["model"]["path"]
    data = bytearray(model.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 16] = bytes(b ^ 0x5A for b in data[middle:middle + 16])
    model.write_bytes(data)                                       # same size, other bytes
    with serve(copy) as tampered:
        app = browser.open(tampered.url + SUB)
        assert app.state == "error"
        message = app.alert()
        assert "integrity check (sha256)" in message and manifest["model"]["sha256"] in message, message
        assert app.phonon("window.phonon.fatal.code") == "model-digest"
        cached = app.page.evaluate("caches.open('phonon-web-model').then(c => c.keys()).then(k => k.length)")
        assert cached == 0, "a model that failed its check was left in Cache Storage"
        assert app.page.evaluate("document.getElementById('mic').disabled")


def test_refused_microphone_and_dead_worker(browser, server):
    refuse = """navigator.mediaDevices.getUserMedia = () =>
        Promise.reject(new DOMException("Permission denied", "NotAllowedError"));"""
    app = browser.open(server.url + SUB + "?debug=1&silence_ms=2500", init_script=refuse)
    assert app.state == "ready", app.alert()
    app.page.click("#mic")
    app.page.wait_for_function("!document.getElementById('alert').hidden", polling=POLL_MS)
    assert "Microphone access was refused" in app.alert()
    assert app.state == "ready"
    app.page.evaluate("window.phonon.debug.killWorker()")
    app.wait(("error",), 20_000)
    assert "The speech engine stopped (it stopped responding)" in app.alert()


def test_browser_without_webassembly_is_told(browser, server):
    app = browser.open(server.url + SUB, init_script="delete window.WebAssembly;")
    assert app.state == "error"
    assert "needs WebAssembly" in app.alert()
