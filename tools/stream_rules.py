"""The stream's rules measured on long recordings: every figure a rule change is held
to, for one or more StreamConfig variants side by side.

    .venv/bin/python -m tools.stream_rules [--model models/phonon-small.gguf]
        [--config '{}' '{"agree_context_ms": 800}' ...] [--paused-seed 5] [--paused 24]
        [--runon-seeds 41] [--runon-recordings 12] [--json OUT]

Two kinds of recording, both of held-out sentences and voices (training.corpus.long_recording):
- paused: the release's long recordings (training.release.stream_vs_batch's: 8 utterances
  joined by 0.3-2 s pauses), `--paused` of them from `--paused-seed`; the release uses seed 5;
- run-on: tools.continuous_speech's (pauses 0-1.2 s, a quarter none), 12 per seed
  (`--runon-recordings`; a smoke run, tests/test_bench_smoke.py: `--paused 1 --runon-recordings 1`).
Each is streamed at 16 kHz in 20 ms feeds with a partial after each. Per set and config:
- stream WER (pooled) and, for the paused set, batch WER of each utterance alone (padded
  spans, the release's "one at a time");
- decodes per audio minute and decoded audio per audio second (the windows' lengths summed:
  what the encoder works through, the compute that grows with the model);
- commit lag p50 / p95 over every word committed live (pooled), and the first-partial latency
  from the speech onset (engine.stream.view.stream_metrics) as median and maximum.
Tune on one seed, report on others: --paused-seed 100 and --runon-seeds 42 43 were not used to
choose the defaults of 2026-12-04 (docs/history.md, "The rules of 2026-12-04").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
RATE = 16000


def paused_recordings(seed: int, count: int) -> list:
    from training.release import paused_recording
    return [paused_recording(seed + r) for r in range(count)]


def runon_recordings(seed: int, count: int = 12) -> list:
    from tools.continuous_speech import recording
    return [recording(seed, r) for r in range(count)]


def stream_figures(engine, recordings: list, **config) -> dict:
    """recordings: [(float32 samples at 16 kHz, [(text, start_s, end_s)])] -> the figures above."""
    from engine.stream.view import lag_seconds
    from engine.stream.session import stream_samples
    from training.metrics import wer
    refs, hyps, lags, firsts = [], [], [], []
    decodes = decoded = 0
    audio = 0.0
    for x, spans in recordings:
        session = engine.stream(RATE, **config)
        out = stream_samples(session, x, RATE // 50)
        refs.append(" ".join(t for t, _, _ in spans))
        hyps.append(out["final"]["text"])
        lags += session.stats.commit_lags
        if out["metrics"]["first_partial_latency_seconds"] is not None:
            firsts.append(out["metrics"]["first_partial_latency_seconds"])
        decodes += session.stats.decodes
        decoded += session.stats.decoded_audio
        audio += x.size / RATE
    lags.sort()
    return {"recordings": len(recordings), "audio_seconds": round(audio, 1),
            "stream_wer": round(wer(refs, hyps), 4), "decodes": decodes,
            "decodes_per_minute": round(60 * decodes / audio, 1),
            "decoded_audio_per_second": round(decoded / RATE / audio, 2),
            "commit_lag_p50": lag_seconds(lags, 0.5), "commit_lag_p95": lag_seconds(lags, 0.95),
            "first_partial_median": round(median(firsts), 2) if firsts else None,
            "first_partial_max": max(firsts) if firsts else None}


def batch_wer(engine, recordings: list) -> float:
    """Each utterance alone (the release's padded spans), pooled per recording."""
    from training.metrics import wer
    from training.release import batch_one_at_a_time
    refs = [" ".join(t for t, _, _ in spans) for _, spans in recordings]
    return round(wer(refs, [batch_one_at_a_time(engine, x, spans) for x, spans in recordings]), 4)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.stream_rules")
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "phonon-small.gguf")
    parser.add_argument("--config", type=json.loads, nargs="+", default=[{}],
                        help='StreamConfig variants as JSON objects ({} is the defaults)')
    parser.add_argument("--paused-seed", type=int, default=5)
    parser.add_argument("--paused", type=int, default=24, help="paused recordings (0: none)")
    parser.add_argument("--runon-seeds", type=int, nargs="*", default=[41])
    parser.add_argument("--runon-recordings", type=int, default=12, help="run-on recordings per seed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.runon_recordings < 1:
        parser.error("--runon-recordings: at least 1")
    from engine.transcribe import Engine
    engine = Engine.open(args.model)
    sets = {}
    if args.paused:
        sets[f"paused {args.paused_seed}"] = paused_recordings(args.paused_seed, args.paused)
    for seed in args.runon_seeds:
        sets[f"run-on {seed}"] = runon_recordings(seed, args.runon_recordings)
    rows = []
    batch = {name: batch_wer(engine, recs) for name, recs in sets.items() if name.startswith("paused")}
    for config in args.config:
        row = {"config": config}
        for name, recs in sets.items():
            row[name] = stream_figures(engine, recs, **config)
            if name in batch:
                row[name]["batch_wer"] = batch[name]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
