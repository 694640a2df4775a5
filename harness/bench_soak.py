"""A long live session, measured: does a poll cost the same at hour three as at
minute five, and does memory stay flat?

Natively, through engine/worker/'s WebWorker (the module the browser's engine worker runs, with
the worker's calls): N minutes of generated speech (harness/long_speech) fed in 0.25 s chunks as
fast as it decodes, `partial(250)` after each chunk, as the worker polls. Every `--every`
minutes of audio a row: the median and 90th-percentile time of the polls that ran no decode (the
per-poll overhead a session adds), the median and largest message (the JSON the worker posts to
the page), the Python heap the session holds (tracemalloc, from just before the stream opened),
the committed words and the committed text's size. At the end: the final tokens against a second
stream over the same samples fed as `engine stream` feeds a file (20 ms chunks), and the slopes.

    python3 build.py bench --soak [--minutes 180]     (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_soak [--minutes 180] [--every 5] [--model M.gguf] [--no-compare]

Writes results/soak-native.json (harness/results.py); BENCHMARKS.md's table is generated from it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "models" / "phonon-small.gguf"
CHUNK = 4000                        # 0.25 s at 16 kHz: the measurement
STEP_BUDGET_MS = 250                # web/worker/stream.mjs's budget for one step


def soak_native(model: Path, minutes: float, every: float, compare: bool = True, seed: int = 41,
                log=print) -> dict:
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    from engine.worker import WebWorker
    from harness.long_speech import long_speech
    x, _ = long_speech(minutes, seed)
    app = WebWorker()
    app.model.load(bytearray(model.read_bytes()), "auto")
    tracemalloc.start()
    app.stream.start(16000)
    heap_base = tracemalloc.get_traced_memory()[0]
    rows, period = [], {"polls": [], "sizes": []}
    decodes, next_row = 0, every * 60
    started = time.perf_counter()
    for i in range(0, x.size, CHUNK):
        app.stream.feed(memoryview(x[i:i + CHUNK]))
        t0 = time.perf_counter()
        message = app.stream.partial(STEP_BUDGET_MS)
        took = time.perf_counter() - t0
        out = json.loads(message)
        if out["metrics"]["decodes"] == decodes:        # a poll that decoded nothing: the overhead
            period["polls"].append(took * 1000)
        decodes = out["metrics"]["decodes"]
        period["sizes"].append(len(message.encode()))
        audio = min(i + CHUNK, x.size) / 16000
        if audio >= next_row or (i + CHUNK >= x.size and (not rows or audio > rows[-1]["minute"] * 60 + every * 30)):   # a last half period or more
            rows.append(row(app, audio, period, heap_base))
            log(f"{audio / 60:6.1f} min: poll {rows[-1]['poll_ms_median']} ms (p90 {rows[-1]['poll_ms_p90']}), "
                f"message {rows[-1]['message_bytes_median']} B (max {rows[-1]['message_bytes_max']}), "
                f"heap {rows[-1]['heap_bytes'] / 1e6:.2f} MB, {rows[-1]['committed_words']} words; "
                f"{time.perf_counter() - started:.0f} s")
            period, next_row = {"polls": [], "sizes": []}, next_row + every * 60
    final = json.loads(app.stream.finish())["result"]
    heap_after = tracemalloc.get_traced_memory()[0] - heap_base
    tracemalloc.stop()
    figures = {"model": model.name, "tier": app.model.engine.tier, "minutes": round(x.size / 16000 / 60, 2),
               "chunk_seconds": CHUNK / 16000, "rows": rows, "words": len(final["words"]),
               "text_bytes": len(final["text"].encode()), "heap_bytes_after_finish": heap_after,
               "slopes": slopes(rows), "wall_seconds": round(time.perf_counter() - started, 1)}
    if compare:
        engine = Engine.open(str(model), "auto", 1)
        want = stream_samples(engine.stream(16000), x, 320)["final"]
        figures["same_tokens_as_engine_stream"] = want["tokens"] == final["tokens"] and want["text"] == final["text"]
    return figures


def row(app, audio_seconds: float, period: dict, heap_base: int) -> dict:
    polls = sorted(period["polls"]) or [0.0]
    transcript = app.stream.session.view.transcript
    return {"minute": round(audio_seconds / 60, 2), "polls_without_decode": len(period["polls"]),
            "poll_ms_median": round(statistics.median(polls), 4),
            "poll_ms_p90": round(polls[int(0.9 * (len(polls) - 1))], 4),
            "message_bytes_median": int(statistics.median(period["sizes"])),
            "message_bytes_max": max(period["sizes"]),
            "heap_bytes": tracemalloc.get_traced_memory()[0] - heap_base,
            "committed_words": len(transcript), "committed_text_bytes": len(transcript.text().encode()),
            "transcript_store_bytes": transcript.nbytes()}


def slope_per_hour(rows: list, key: str, digits: int = 4):
    """rows[key]'s least-squares slope per hour of audio over the rows after the first (its
    period holds the start-up) that have a value; None with fewer than two."""
    use = [r for r in (rows[1:] if len(rows) > 2 else rows) if r.get(key) is not None]
    if len(use) < 2:
        return None
    xs, ys = [r["minute"] / 60 for r in use], [r[key] for r in use]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((a - mx) ** 2 for a in xs)
    return round(sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / var, digits) if var else None


def slopes(rows: list) -> dict:
    """Per hour of audio, least squares over the rows after the first (its period holds the
    start-up), and the last row against the row nearest minute 5."""
    per_hour = lambda key: slope_per_hour(rows, key)
    five = min(rows, key=lambda r: abs(r["minute"] - 5))
    last = rows[-1]
    ratio = lambda key: round(last[key] / five[key], 3) if five[key] else None
    return {"poll_ms_median_per_hour": per_hour("poll_ms_median"),
            "message_bytes_median_per_hour": per_hour("message_bytes_median"),
            "heap_bytes_per_hour": per_hour("heap_bytes"),
            "last_over_minute5": {"minute": five["minute"], "poll_ms_median": ratio("poll_ms_median"),
                                  "message_bytes_median": ratio("message_bytes_median"),
                                  "message_bytes_max": ratio("message_bytes_max")},
            "heap_over_text_bytes": last["heap_bytes"] - last["committed_text_bytes"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_soak")
    parser.add_argument("--minutes", type=float, default=180)
    parser.add_argument("--every", type=float, default=5, help="minutes of audio between rows")
    parser.add_argument("--model", type=Path, default=SMALL)
    parser.add_argument("--no-compare", action="store_true", help="skip the second stream for the tokens")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from harness.results import write_result
    figures = soak_native(args.model.resolve(), args.minutes, args.every, not args.no_compare)
    s = figures["slopes"]
    print(f"slopes per hour: poll {s['poll_ms_median_per_hour']} ms, message {s['message_bytes_median_per_hour']} B, "
          f"heap {s['heap_bytes_per_hour']} B; last / minute 5: {s['last_over_minute5']}; "
          f"heap - text {s['heap_over_text_bytes'] / 1e6:.2f} MB, heap after finish {figures['heap_bytes_after_finish'] / 1e6:.2f} MB; "
          f"{figures['words']} words; same tokens: {figures.get('same_tokens_as_engine_stream')}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    else:
        print(f"wrote {write_result('soak-native', figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
