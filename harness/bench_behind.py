"""A stream that falls behind, measured in Chromium: how far behind it gets, how long
it takes to catch up after the audio ends, and that it still gives the native tokens.

1. The JavaScript API at real-time pace: a recording of generated speech (harness/long_speech)
   fed to Recognizer.stream() in 4096-sample chunks no faster than it plays, by the full-size
   synthetic model (slower than real time here) with one worker and with two (the page
   cross-origin isolated), and by the default model (which keeps up).
2. The page on the fake microphone: the same speech played by Chromium's fake capture device
   into the demo app built with each model; the final against native `engine stream` over
   exactly the samples the page captured.

    python3 build.py bench --behind            (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_behind [--seconds 120] [--mic-seconds 60] [--json F]
                                             [--skip-mic] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.bench_e2e import full_model
from harness.bench_threads import cpu_name
from harness.long_speech import long_speech
from harness.results import write_result
from harness.server import StaticServer
from harness.site_check import SiteBrowser, native_stream, write_wav

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "models" / "phonon-small.gguf"
PACKAGE = ROOT / "dist" / "phonon-web"

# window.audio (float32 at 16 kHz, or its first `seconds`) fed to a new Recognizer's stream at the
# pace it plays; -> the final, the most pending seen, errors and the catch-up time after the end.
PACED_JS = """async ({ model, threads, silenceMs = 15000, seconds = null }) => {
    const api = await import("/phonon.mjs");
    const r = await api.Recognizer.load({ model, threads, silenceMs });
    const x = seconds === null ? window.audio : window.audio.subarray(0, Math.round(seconds * 16000));
    const s = r.stream({ sampleRate: 16000 });
    const seen = { maxPending: 0, errors: [] };
    r.addEventListener("error", (e) => seen.errors.push(e.detail.message));
    s.addEventListener("partial", (e) => { seen.maxPending = Math.max(seen.maxPending, e.detail.metrics.pending_seconds); });
    const start = performance.now();
    try {
        for (let i = 0; i < x.length; i += 4096) {
            s.feed(x.subarray(i, i + 4096));
            const ahead = (i + 4096) / 16 - (performance.now() - start);
            if (ahead > 0) await new Promise((done) => setTimeout(done, ahead));
        }
    } catch (e) {           // the stream failed (the recognizer's "error" event above says why)
        seen.errors.push(`feed() at ${((performance.now() - start) / 1000).toFixed(1)} s: ${e.message}`);
        return { final: null, seen, threads: r.threads, closed: r.closed };
    }
    const ended = performance.now();
    const final = await s.finish();
    const out = { final, seen, catchUpSeconds: (performance.now() - ended) / 1000, threads: r.threads, closed: r.closed };
    r.close();
    return out;
}"""


def chromium_version() -> str:
    from harness.runtimes import CHROMIUM
    out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.split()
    return " ".join(out[:2]) if out else "Chromium (unknown version)"


def native_final(model: Path, x: np.ndarray) -> dict:
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    return stream_samples(Engine.open(model).stream(16000), x, 4096)["final"]


def paced_runs(models: dict, x: np.ndarray, workers: list) -> list:
    """Section 1: each (model, threads) through the API at real-time pace."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        x.astype("<f4").tofile(Path(tmp) / "speech.f32")
        routes = {"/": PACKAGE, "/test/": ROOT / "tests" / "data" / "api-page", "/data/": Path(tmp)}
        routes.update({f"/m/{name}/": path.parent for name, path in models.items()})
        with StaticServer(routes, isolate=True) as server, SiteBrowser() as browser:
            page = browser.browser.new_context().new_page()
            page.set_default_timeout(3_600_000)
            page.goto(server.url + "/test/index.html")
            page.evaluate("async () => { window.audio = new Float32Array(await (await fetch('/data/speech.f32')).arrayBuffer()); }")
            for name, path in models.items():
                want = native_final(path, x)
                for threads in (workers if name == "full" else [1]):
                    print(f"  {name} model, {threads} worker(s), {x.size / 16000:.0f} s at real-time pace ...", flush=True)
                    got = page.evaluate(PACED_JS, {"model": f"/m/{name}/{path.name}", "threads": threads})
                    if got["final"] is None:
                        raise RuntimeError(f"the {name} model's stream failed: {got['seen']['errors']}")
                    metrics = got["final"]["metrics"]
                    rows.append({"how": "api, real-time pace", "model": name, "workers": got["threads"],
                                 "audio_seconds": round(x.size / 16000, 1),
                                 "compute_per_audio": metrics["compute_per_audio"],
                                 "max_pending_seconds": metrics["max_pending_seconds"],
                                 "deferred_seconds": metrics["deferred_seconds"],
                                 "catch_up_seconds": round(got["catchUpSeconds"], 1),
                                 "commit_lag_p50_seconds": metrics["commit_lag_p50_seconds"],
                                 "commit_lag_p95_seconds": metrics["commit_lag_p95_seconds"],
                                 "errors": got["seen"]["errors"],
                                 "native_tokens": got["final"]["tokens"] == want["tokens"],
                                 "tokens": len(want["tokens"])})
                    print(f"    {rows[-1]}", flush=True)
    return rows


def mic_runs(models: dict, x: np.ndarray) -> list:
    """Section 2: the demo page on the fake microphone, one site per model."""
    import build
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        from engine.audio import resample
        from engine.kernels import Kernels
        with open(wav, "wb") as f:
            write_wav(f, resample(Kernels("scalar"), x, 16000, 48000), 48000, False)
        seconds = x.size / 16000
        with SiteBrowser(fake_mic=wav) as browser:
            for name, path in models.items():
                site = Path(tmp) / f"site-{name}"
                build.cmd_site(argparse.Namespace(model=str(path), out=str(site)))
                with StaticServer({"/app/": site}, isolate=True) as server:
                    print(f"  {name} model on the fake microphone, {seconds:.0f} s ...", flush=True)
                    # the exact pace: every position decoded, later (what falling behind costs)
                    app = browser.open(server.url + "/app/?debug=1&threads=1&latency=fast&pace=exact")
                    assert app.state == "ready", app.alert()
                    started = time.perf_counter()
                    run = app.listen(seconds + 0.5)
                    samples, rate = app.captured()
                    want = native_stream(path, samples, rate, run["latency"])["final"]
                    metrics = run["metrics"]
                    stop = run["timings"]["final"] - (run["timings"]["captureStart"] + (seconds + 0.5) * 1000)
                    rows.append({"how": "page, fake microphone", "model": name, "workers": 1,
                                 "audio_seconds": round(len(samples) / 4 / rate, 1),
                                 "compute_per_audio": metrics["compute_per_audio"],
                                 "max_pending_seconds": metrics["max_pending_seconds"],
                                 "deferred_seconds": metrics["deferred_seconds"],
                                 "catch_up_seconds": round(stop / 1000, 1),
                                 "commit_lag_p50_seconds": metrics["commit_lag_p50_seconds"],
                                 "commit_lag_p95_seconds": metrics["commit_lag_p95_seconds"],
                                 "dropped_samples": metrics["dropped_samples"],
                                 "native_tokens": run["result"]["tokens"] == want["tokens"],
                                 "tokens": len(want["tokens"]), "wall_seconds": round(time.perf_counter() - started, 1),
                                 "notice": app.alert()})
                    print(f"    {rows[-1]}", flush=True)
                    app.page.context.close()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_behind")
    parser.add_argument("--seconds", type=float, default=120, help="audio fed through the API at real-time pace")
    parser.add_argument("--mic-seconds", type=float, default=60, help="audio the fake microphone plays")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-mic", action="store_true")
    parser.add_argument("--json", help="write the record here too")
    parser.add_argument("--no-result", action="store_true",
                        help="do not write results/behind.json (BENCHMARKS.md's table: `python3 build.py docs`)")
    args = parser.parse_args(argv)
    models = {"small": SMALL, "full": full_model()}
    x, _ = long_speech(args.seconds / 60, seed=45)
    rows = paced_runs(models, x, args.workers)
    if not args.skip_mic:
        mic, _ = long_speech(args.mic_seconds / 60, seed=46)
        rows += mic_runs(models, mic)
    record = {"cpu": cpu_name(), "date": time.strftime("%Y-%m-%d"), "rows": rows}
    if not args.no_result:
        write_result("behind", {"rows": rows}, browser=chromium_version())
    print(f"CPU: {record['cpu']}")
    print("| how | model | workers | audio s | compute/audio | most behind s | deferred s | catch-up s | "
          "commit lag p50/p95 s | native tokens |")
    for r in rows:
        print(f"| {r['how']} | {r['model']} | {r['workers']} | {r['audio_seconds']} | {r['compute_per_audio']} | "
              f"{r['max_pending_seconds']} | {r['deferred_seconds']} | {r['catch_up_seconds']} | "
              f"{r['commit_lag_p50_seconds']} / {r['commit_lag_p95_seconds']} | "
              f"{'yes' if r['native_tokens'] else 'NO'} ({r['tokens']}) |")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0 if all(r["native_tokens"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
