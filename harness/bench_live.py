"""The full-size model live (`build.py bench --live`): continuous speech fed at real time to a
stream, natively on one thread and in Chromium (relaxed SIMD) with one and two workers, today's
schedule (the "fast" setting at the exact pace) beside the microphone's (the "balanced" setting
at the live pace), each run in the same process or browser session one after the other.

Which model places the tokens: the full-size synthetic model has random weights and emits
tokens everywhere, so its own windows would never move into pauses (every window would grow to
max_window). So each window is decoded twice: by the full-size synthetic model, whose decode
time is the run's cost, and by the shipped trained model, whose tokens the stream takes (where
a real model puts words on this speech: engine/worker/stream.py TokensFrom; in the page the debug
hook place-tokens-with). The trained model's own decode time (a twentieth of the big one's
here) is measured apart and left out of the compute figure.

Per run: compute per audio second (the full-size decodes' time over the audio's length),
the audio waiting (fed but not decoded) sampled at every poll (p50, p95, max), the first
partial's latency (from the speech onset, wall clock), and the commit lag in wall time (from a
word's end being fed to its commit being shown: the decode's time included).

    python3 build.py bench --live            (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_live [--seconds 180] [--workers 1 2] [--size full|tiny]
                                           [--runs fast:exact balanced:live] [--no-native] [--no-browser] [--json F]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from harness.bench_behind import chromium_version
from harness.bench_e2e import SIZES, synthetic_model
from harness.bench_threads import cpu_name
from harness.long_speech import long_speech
from harness.results import write_result

ROOT = Path(__file__).resolve().parent.parent
TRAINED = ROOT / "models" / "phonon-small.gguf"
PACKAGE = ROOT / "dist" / "phonon-web"
CHUNK = 4096                    # samples at 16 kHz fed at a time (256 ms), as bench --behind feeds
POLL_S = 0.15                   # how often the native loop polls, as the engine worker's step timer


def quantiles(values: list) -> dict:
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * len(v)))], 2) if v else None     # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "max": round(v[-1], 2) if v else None}


def speech_onset(x: np.ndarray) -> float:
    """Seconds to the first 20 ms block above -45 dBFS (the stream's own onset rule)."""
    blocks = x[: x.size // 320 * 320].reshape(-1, 320).astype(np.float64)
    loud = np.flatnonzero((blocks ** 2).mean(axis=1) > 10 ** -4.5)
    return float(loud[0] * 0.02) if loud.size else 0.0


def native_run(costly, placing, x: np.ndarray, latency: str, pace: str) -> dict:
    """x fed at real time by a feeder thread; this thread polls every POLL_S as the worker does."""
    from engine.stream.session import StreamConfig, Stream
    from engine.worker import TokensFrom
    recogniser = TokensFrom(costly, placing)
    session = Stream(recogniser, 16000, StreamConfig.for_latency(latency, pace=pace))
    onset = speech_onset(x)
    started = time.perf_counter()

    def feed():
        for i in range(0, x.size, CHUNK):
            ahead = i / 16000 - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
            session.feed(x[i:i + CHUNK])
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    waiting, lags, first = [], [], None
    while feeder.is_alive() or session.due:
        waiting.append(session.pending_seconds)
        view = session.partial()
        now = time.perf_counter() - started
        if first is None and (view["added_text"] or view["tentative"]):
            first = now - onset
        lags += [now - w["end"] for w in view["added_words"]]
        rest = POLL_S - (time.perf_counter() - started - now)
        if rest > 0 and not session.due:
            time.sleep(rest)
    ended = time.perf_counter()
    final = session.finish()
    audio = x.size / 16000
    compute = session.stats.compute_seconds - recogniser.placing_seconds
    return {"compute_per_audio": round(compute / audio, 3), "placing_per_audio": round(recogniser.placing_seconds / audio, 3),
            "waiting": quantiles(waiting), "max_pending_seconds": round(session.stats.max_pending / 16000, 2),
            "first_partial_seconds": round(first, 2) if first is not None else None,
            "commit_lag": quantiles(lags), "decodes": session.stats.decodes,
            "decoded_audio_per_second": round(session.stats.decoded_audio / 16000 / audio, 2),
            "jumps": len(final["jumps"]), "finish_seconds": round(time.perf_counter() - ended, 2),
            "words": len(final["words"])}


LIVE_JS = """async ({ model, placing, tier, threads, latency, pace, onset }) => {
    const api = await import("/phonon.mjs");
    let placed;
    const ready = new Promise((done) => { placed = done; });
    const r = await api.Recognizer.load({ model, threads, debug: true, silenceMs: 15000,
                                          onWorkerMessage: (m) => { if (m.kind === "tokens-placed") placed(); } });
    r.debug.post({ kind: "place-tokens-with", bytes: await (await fetch(placing)).arrayBuffer(), tier });
    const late = new Promise((_, fail) => setTimeout(() => fail(new Error(
        "the engine worker did not answer place-tokens-with in 120 s (a package built before the hook?)")), 120000));
    await Promise.race([ready, late]);
    const x = window.audio;
    const s = r.stream({ sampleRate: 16000, latency, pace });
    const waiting = [], lags = [];
    let first = null;
    const start = performance.now();
    const now = () => (performance.now() - start) / 1000;
    s.addEventListener("partial", (e) => {
        waiting.push(e.detail.metrics.pending_seconds || 0);
        if (first === null && (e.detail.committed || e.detail.tentative)) first = now() - onset;
    });
    s.addEventListener("commit", (e) => { for (const w of e.detail.words) lags.push(now() - w.end); });
    for (let i = 0; i < x.length; i += 4096) {
        s.feed(x.subarray(i, i + 4096));
        const ahead = (i + 4096) / 16 - (performance.now() - start);
        if (ahead > 0) await new Promise((done) => setTimeout(done, ahead));
    }
    const ended = performance.now();
    const final = await s.finish();
    const out = { final: { metrics: final.metrics, jumps: final.jumps.length, words: final.words.length },
                  waiting, lags, first, finishSeconds: (performance.now() - ended) / 1000, threads: r.threads };
    r.close();
    return out;
}"""


def browser_runs(model: Path, x: np.ndarray, workers: list, runs: list) -> list:
    from harness.server import StaticServer
    from harness.site_check import SiteBrowser
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        x.astype("<f4").tofile(Path(tmp) / "speech.f32")
        routes = {"/": PACKAGE, "/test/": ROOT / "tests" / "data" / "api-page", "/data/": Path(tmp),
                  "/m/costly/": model.parent, "/m/placing/": TRAINED.parent}
        with StaticServer(routes, isolate=True) as server, SiteBrowser() as browser:
            page = browser.browser.new_context().new_page()
            page.set_default_timeout(3_600_000)
            page.goto(server.url + "/test/index.html")
            page.evaluate("async () => { window.audio = new Float32Array(await (await fetch('/data/speech.f32')).arrayBuffer()); }")
            for threads in workers:
                for latency, pace in runs:
                    print(f"  Chromium, {threads} worker(s), {latency} at the {pace} pace, {x.size / 16000:.0f} s ...", flush=True)
                    got = page.evaluate(LIVE_JS, {"model": f"/m/costly/{model.name}", "placing": f"/m/placing/{TRAINED.name}",
                                                  "tier": "wasm_relaxed_simd", "threads": threads, "latency": latency,
                                                  "pace": pace, "onset": speech_onset(x)})
                    m = got["final"]["metrics"]
                    audio = x.size / 16000
                    placing = m.get("placing_seconds") or 0.0
                    rows.append({"runtime": "chromium", "workers": got["threads"], "latency": latency, "pace": pace,
                                 "compute_per_audio": round((m["compute_seconds"] - placing) / audio, 3),
                                 "placing_per_audio": round(placing / audio, 3),
                                 "waiting": quantiles(got["waiting"]), "max_pending_seconds": m["max_pending_seconds"],
                                 "first_partial_seconds": round(got["first"], 2) if got["first"] is not None else None,
                                 "commit_lag": quantiles(got["lags"]), "decodes": m["decodes"],
                                 "decoded_audio_per_second": round(m["decoded_audio_seconds"] / audio, 2),
                                 "jumps": got["final"]["jumps"], "finish_seconds": round(got["finishSeconds"], 2),
                                 "words": got["final"]["words"]})
                    print(f"    {rows[-1]}", flush=True)
    return rows


def native_rows(model: Path, x: np.ndarray, runs: list) -> list:
    from engine.transcribe import Engine
    costly, placing = Engine.open(model, "auto", 1), Engine.open(TRAINED, "auto", 1)
    rows = []
    for latency, pace in runs:
        print(f"  native ({costly.tier}, 1 thread), {latency} at the {pace} pace, {x.size / 16000:.0f} s ...", flush=True)
        rows.append({"runtime": "native", "tier": costly.tier, "workers": 1, "latency": latency, "pace": pace,
                     **native_run(costly, placing, x, latency, pace)})
        print(f"    {rows[-1]}", flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_live")
    parser.add_argument("--seconds", type=float, default=180.0, help="continuous speech to feed (default 180)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model that pays for each decode: full (default) or tiny (a smoke run)")
    parser.add_argument("--runs", nargs="+", default=["fast:exact", "balanced:live"],
                        help="setting:pace pairs (default: today's schedule, then the microphone's)")
    parser.add_argument("--no-native", action="store_true")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", type=Path, help="write the record here (default: results/live.json for a full run)")
    args = parser.parse_args(argv)
    runs = [tuple(r.split(":")) for r in args.runs]
    x, _ = long_speech(args.seconds / 60, seed=44)
    x = x[: int(args.seconds * 16000)]
    model = synthetic_model(args.size)
    rows = [] if args.no_native else native_rows(model, x, runs)
    if not args.no_browser:
        rows += browser_runs(model, x, args.workers, runs)
    record = {"cpu": cpu_name(), "model": model.name, "placing_model": TRAINED.name,
              "audio_seconds": round(x.size / 16000, 1), "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    elif args.size == "full" and args.seconds >= 180:
        print(f"wrote {write_result('live', record, None if args.no_browser else chromium_version())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
