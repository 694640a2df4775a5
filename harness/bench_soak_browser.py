"""A long live session in a browser engine: do the poll's cost, the message
the page receives, the engine worker's heap and the page's own heap stay flat as the session
grows, and is the transcript still native's at the end?

The package's JavaScript API in Chromium, Firefox ESR or WebKitGTK (harness/bench_engines.launch,
the blank page tests/data/api-page): N minutes of generated speech (harness/long_speech, served a
minute per file) fed to `r.stream()` in 0.25 s chunks at `--pace` times real time (1: as a
microphone delivers it; the engine worker decodes on its own timer, as live), a stream with the
default model. Every `--every` minutes of audio a row: the median and 90th-percentile cost of the
worker's steps that ran no decode (`stepMs` of its "partial" messages: the per-poll overhead),
the median and largest message (the "partial" message as JSON), the engine worker's wasm heap
(r.heapBytes: it never shrinks, so growth shows), the page's JS heap (Chromium's
performance.memory, precise; the others give none), the committed words and text, and the live
lag (commit lag, audio waiting). At the end the final tokens against native `engine stream`
over the same samples (computed beside the run), and the slopes per hour of audio.

    python3 build.py bench --soak --engine chromium [--minutes 60] [--pace 1]
    .venv/bin/python -m harness.bench_soak_browser --engine E [--minutes N] [--every M] [--pace P] [--json F]

Writes (merges, one run per engine) results/soak-browser.json; BENCHMARKS.md's table is
generated from it (`python3 build.py docs`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dist" / "phonon-web"   # build.py package (build.py bench builds it first)
CHUNK = 4000                        # 0.25 s at 16 kHz, as bench_soak feeds natively

# Starts the soak in the page and returns at once; window.soak holds its progress and rows.
START_JS = """async ({ minutes, every, pace, chunk }) => {
    const { Recognizer } = await import("/phonon.mjs");
    const soak = window.soak = { rows: [], audio: 0, done: false, error: null, final: null };
    // the live heap: collected first where the page may (Chromium with --expose-gc)
    const memory = () => { if (self.gc) self.gc(); return self.performance && performance.memory ? performance.memory.usedJSHeapSize : null; };
    let period = { steps: [], sizes: [] }, decodes = 0, last = null;
    const r = await Recognizer.load({ onWorkerMessage: (m) => {
        if (m.kind !== "partial") return;
        period.sizes.push(JSON.stringify(m).length);
        if (m.metrics.decodes === decodes) period.steps.push(m.stepMs);
        decodes = m.metrics.decodes;
        last = m.metrics;
    } });
    soak.tier = r.tier;
    soak.userAgent = navigator.userAgent;
    const s = r.stream({ sampleRate: 16000 });
    let words = 0, textBytes = 0;
    s.addEventListener("commit", (e) => { words += e.detail.words.length; textBytes += new TextEncoder().encode(e.detail.added).length; });
    const quantile = (xs, q) => { const v = xs.slice().sort((a, b) => a - b); return v.length ? v[Math.floor(q * (v.length - 1))] : 0; };
    const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
    const row = (audio) => {
        soak.rows.push({ minute: Math.round(audio / 60 * 100) / 100, polls_without_decode: period.steps.length,
                         poll_ms_median: quantile(period.steps, 0.5), poll_ms_p90: quantile(period.steps, 0.9),
                         message_bytes_median: quantile(period.sizes, 0.5), message_bytes_max: Math.max(0, ...period.sizes),
                         worker_heap_bytes: r.heapBytes, page_heap_bytes: memory(),
                         committed_words: words, committed_text_bytes: textBytes,
                         commit_lag_last: last && last.commit_lag_last, pending_seconds: s.pending });
        period = { steps: [], sizes: [] };
    };
    (async () => {
        const t0 = performance.now();
        let fed = 0, nextRow = every * 60;
        for (let m = 0; m < Math.ceil(minutes); m++) {
            const x = new Float32Array(await (await fetch(`/data/minute-${m}.f32`)).arrayBuffer());
            for (let i = 0; i < x.length; i += chunk) {
                const part = x.subarray(i, i + chunk);
                if (s.pending > 30) await s.pendingBelow(5);       // slower than the pace: wait, never skip
                s.feed(part);
                fed += part.length;
                soak.audio = fed / 16000;
                const wait = t0 + 1000 * soak.audio / pace - performance.now();
                if (wait > 0) await sleep(wait);
                if (soak.audio >= nextRow) { row(soak.audio); nextRow += every * 60; }
            }
        }
        const final = await s.finish();
        const lastRow = soak.rows.length ? soak.rows[soak.rows.length - 1].minute * 60 : 0;
        if (soak.audio > lastRow + every * 30) row(soak.audio);
        soak.final = { tokens: final.tokens, text: final.text, words: final.words.length, restarts: s.restarts };
        soak.wallSeconds = (performance.now() - t0) / 1000;
        r.close();
    })().catch((e) => { soak.error = String(e && e.stack || e); }).finally(() => { soak.done = true; });
    return true;
}"""


def soak_browser(engine: str, minutes: float, every: float, pace: float, seed: int = 41, log=print) -> dict:
    from harness.bench_engines import engine_version
    from harness.bench_soak import slope_per_hour, slopes
    from harness.long_speech import long_speech
    from harness.server import StaticServer
    package = PACKAGE
    x, _ = long_speech(minutes, seed)
    native = {}
    compare = threading.Thread(target=lambda: native.update(native_stream(package, x)), daemon=True)
    compare.start()                                   # beside the browser: the other core
    with tempfile.TemporaryDirectory() as tmp:
        for m in range(0, -(-x.size // 960_000)):
            x[m * 960_000:(m + 1) * 960_000].astype("<f4").tofile(Path(tmp) / f"minute-{m}.f32")
        routes = {"/": package, "/test/": ROOT / "tests" / "data" / "api-page", "/data/": Path(tmp)}
        with StaticServer(routes) as server, launch(engine) as browser:
            page = browser.open(server.url + "/test/index.html")
            version = engine_version(engine, browser, page)
            page.evaluate(START_JS, {"minutes": x.size / 960_000, "every": every, "pace": pace, "chunk": CHUNK})
            started, shown = time.monotonic(), 0
            while not page.evaluate("window.soak.done"):
                time.sleep(5)
                state = page.evaluate("({ audio: soak.audio, rows: soak.rows.slice(%d) })" % shown)
                for r in state["rows"]:
                    log(f"{engine} {r['minute']:6.1f} min: poll {r['poll_ms_median']:.2f} ms (p90 {r['poll_ms_p90']:.2f}), "
                        f"message {r['message_bytes_median']} B (max {r['message_bytes_max']}), worker heap "
                        f"{r['worker_heap_bytes'] / 1e6:.1f} MB, page heap {fmt_mb(r['page_heap_bytes'])}, "
                        f"{r['committed_words']} words, lag {r['commit_lag_last']} s; {time.monotonic() - started:.0f} s")
                shown += len(state["rows"])
            soak = page.evaluate("({ rows: soak.rows, final: soak.final, error: soak.error, tier: soak.tier, "
                                 "wall: soak.wallSeconds, userAgent: soak.userAgent })")
            problems = list(page.problems)
            page.close()
    if soak["error"]:
        raise RuntimeError(f"the soak failed in {engine}: {soak['error']}")
    compare.join()
    rows = soak["rows"]
    for r in rows:                                    # bench_soak.slopes' names
        r["heap_bytes"] = r["worker_heap_bytes"]
    figures = {"engine": engine, "version": version, "tier": soak["tier"], "model": package_model(package).name,
               "minutes": round(x.size / 960_000, 2), "pace": pace, "chunk_seconds": CHUNK / 16000, "rows": rows,
               "words": soak["final"]["words"], "restarts": soak["final"]["restarts"],
               "slopes": slopes(rows) | {"page_heap_bytes_per_hour": slope_per_hour(rows, "page_heap_bytes", 1)},
               "same_tokens_as_engine_stream": soak["final"]["tokens"] == native["tokens"]
               and soak["final"]["text"] == native["text"],
               "wall_seconds": round(soak["wall"], 1), "problems": problems}
    return figures


def launch(engine: str):
    """harness/bench_engines.launch, with Chromium's gc() exposed to the page (a row's page heap
    is then what is live, not what the collector has not reached yet)."""
    from harness.bench_engines import ChromiumEngine, launch as launch_engine
    return ChromiumEngine(["--js-flags=--expose-gc"]) if engine == "chromium" else launch_engine(engine)


def fmt_mb(value) -> str:
    return "-" if value is None else f"{value / 1e6:.1f} MB"


def package_model(package: Path) -> Path:
    return package / json.loads((package / "manifest.json").read_text())["model"]["path"]


def native_stream(package: Path, x) -> dict:
    """`engine stream`'s final over the samples (20 ms chunks), on the machine's best tier: the
    tiers agree bit for bit (tests/test_parity_runtimes.py), and the scalar one would take as
    long as the soak."""
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    engine = Engine.open(str(package_model(package)), "auto", 1)
    final = stream_samples(engine.stream(16000), x, 320)["final"]
    return {"tokens": final["tokens"], "text": final["text"]}


def merge_result(figures: dict, folder: Path | None = None) -> Path:
    """results/soak-browser.json: this engine's run replaces its earlier one; each run keeps
    where, when and at which commit it was measured."""
    import fcntl
    from harness.results import RESULTS, commit, machine, write_result
    folder = folder or RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "soak-browser.json"
    run = {**figures, "date": time.strftime("%Y-%m-%d"), "commit": commit(), **machine(),
           "command": "python3 -m harness.bench_soak_browser " + " ".join(sys.argv[1:])}
    with open(folder / ".soak-browser.lock", "w") as lock:      # engines soaked side by side finish apart
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = json.loads(path.read_text())["figures"]["runs"] if path.exists() else []
        runs = [r for r in runs if r["engine"] != figures["engine"]] + [run]
        order = ["chromium", "firefox", "webkit", "webkit-sab"]
        runs.sort(key=lambda r: order.index(r["engine"]) if r["engine"] in order else len(order))
        return write_result("soak-browser", {"runs": runs}, browser="; ".join(r["version"] for r in runs), folder=folder)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_soak_browser")
    parser.add_argument("--engine", default="chromium", choices=["chromium", "firefox", "webkit", "webkit-sab"])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--every", type=float, default=5, help="minutes of audio between rows")
    parser.add_argument("--pace", type=float, default=1.0, help="times real time the audio is fed (1: live)")
    parser.add_argument("--json", type=Path, help="write the figures here, not into results/")
    args = parser.parse_args(argv)
    if not args.pace > 0:
        parser.error("--pace must be above 0")
    sys.path.insert(0, str(ROOT))
    figures = soak_browser(args.engine, args.minutes, args.every, args.pace)
    s = figures["slopes"]
    print(f"{args.engine}: slopes per hour: poll {s['poll_ms_median_per_hour']} ms, message "
          f"{s['message_bytes_median_per_hour']} B, worker heap {s['heap_bytes_per_hour']} B, page heap "
          f"{s['page_heap_bytes_per_hour']} B; last / minute 5: {s['last_over_minute5']}; {figures['words']} words; "
          f"same tokens as engine stream: {figures['same_tokens_as_engine_stream']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    else:
        print(f"wrote {merge_result(figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
