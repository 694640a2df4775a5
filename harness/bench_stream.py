"""Streaming benchmarks.

    python3 -m harness.bench_stream [--json FILE] [--runtimes native,chromium] [--hops 400,800]
                                    [--size full|tiny] [--utterances 8]
    python3 -m harness.bench_stream --soak [--soak-minutes 60] [--model models/phonon-small.gguf]
                                    [--slice-minutes 5]

Default: the full-size synthetic Phonon-2 (build/bench-models/, as bench_e2e) streams a
generated recording - held-out TTS utterances joined by 0.3-2 s pauses, then 10 s of quiet -
in 20 ms chunks through one Stream, natively (best tier) and in Chromium (wasm
simd128), at each hop: compute / audio (1.0 = just keeps up with real time), decodes, the
longest window, first-partial latency and commit lag. Random weights emit tokens everywhere,
so this measures the cost of the schedule at its busiest, not accuracy.

--soak: one long session (default 60 minutes of generated speech and pauses, 12 distinct
recordings cycled) through the trained model natively: memory (RSS), decodes and compute per
audio second per 5-minute slice must stay flat, and every utterance's words must reach the
final transcript at its own time.

Smoke runs (tests/test_bench_smoke.py): `--size tiny --utterances 2 --hops 400` and `--soak
--soak-minutes 0.5 --slice-minutes 0.25 --soak-distinct 1`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from engine.stream.session import stream_samples
from engine.transcribe import Engine

from .bench_e2e import SIZES, synthetic_model
from .runtimes import Chromium

ROOT = Path(__file__).resolve().parent.parent


def recording(seed: int = 3, utterances: int = 8) -> np.ndarray:
    from training.corpus import long_recording
    pauses = [0.3, 1.5, 0.6, 2.0, 0.4, 1.0, 0.8, 0.5, 1.2, 0.7][: utterances - 1]
    x, _ = long_recording(seed, utterances, pauses)
    return np.concatenate([x, np.zeros(10 * 16000, np.float32)])


def summary(runtime: str, tier: str, hop: int, out: dict) -> dict:
    m = out["metrics"]
    return {"runtime": runtime, "tier": tier, "hop_ms": hop, "audio_seconds": out["final"]["audio_seconds"],
            **{k: m[k] for k in ("compute_per_audio", "compute_seconds", "decodes", "skipped_quiet",
                                 "longest_window_seconds", "first_partial_latency_seconds",
                                 "commit_lag_p50_seconds", "commit_lag_p95_seconds", "revisions")}}


def native(gguf: Path, audio: np.ndarray, hops: list) -> list:
    engine = Engine.open(gguf)
    rows = []
    for hop in hops:
        out = stream_samples(engine.stream(16000, hop_ms=hop), audio, 320)
        rows.append(summary("native", engine.tier, hop, out))
        print(json.dumps(rows[-1]), flush=True)
    return rows




def chromium(gguf: Path, audio: np.ndarray, hops: list) -> list:
    (Chromium.models_dir() / "stream-audio.f32").write_bytes(audio.tobytes())
    with Chromium(timeout_ms=7_200_000) as browser:
        rows = browser.run_job("bench_stream_hops", model={"url": f"/models/{gguf.name}"},
                               audio={"url": "/models/stream-audio.f32"}, hops=list(hops))
    out = [summary("chromium", "wasm_simd128", r["hop"], r["run"]) for r in rows]
    for row in out:
        print(json.dumps(row), flush=True)
    return out


SOAK_PAUSES = [0.4, 1.2, 0.6, 2.5, 0.3, 1.0, 0.8]
SLICE = 5 * 60 * 16000          # samples per reported slice


def soak(model: Path, minutes: float, distinct: int = 12, slice_samples: int = SLICE) -> dict:
    """One session over `minutes` of speech: per 5-minute slice, RSS, decodes and compute /
    audio. `distinct` recordings (8 held-out utterances each, about 25 s) are generated once
    and cycled: TTS would otherwise take most of the hour's wall time. Every occurrence of an
    utterance is checked in its own time span of the final transcript (the words whose
    midpoint is within 0.5 s of it), so a lost repeat is not hidden by another."""
    from training.corpus import long_recording
    from training.metrics import normalize
    blocks = [long_recording(100 + b, 8, SOAK_PAUSES) for b in range(distinct)]
    engine = Engine.open(model)
    session = engine.stream(16000)
    slices, occurrences, fed, n = [], [], 0, 0
    mark = {"fed": 0, "compute": 0.0, "decodes": 0, "wall": time.perf_counter()}
    while fed < minutes * 60 * 16000:
        x, spans = blocks[n % distinct]
        n += 1
        occurrences += [(text, fed / 16000 + a, fed / 16000 + b) for text, a, b in spans]
        for i in range(0, x.size, 320):
            session.feed(x[i:i + 320])
            session.partial()
        fed += x.size
        if fed // slice_samples > len(slices):
            stats = session.stats
            audio = (fed - mark["fed"]) / 16000
            slices.append({"minutes": round(fed / 16000 / 60, 1),
                           "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                           "decodes_per_minute": round((stats.decodes - mark["decodes"]) * 60 / audio, 1),
                           "compute_per_audio": round((stats.compute_seconds - mark["compute"]) / audio, 3),
                           "wall_seconds": round(time.perf_counter() - mark["wall"], 1)})
            mark = {"fed": fed, "compute": stats.compute_seconds, "decodes": stats.decodes, "wall": time.perf_counter()}
            print(json.dumps(slices[-1]), flush=True)
    final = session.finish()
    missing = [text for text, a, b in occurrences
               if not _covered(normalize(text), normalize(" ".join(
                   w["word"] for w in final["words"] if a - 0.5 <= (w["start"] + w["end"]) / 2 <= b + 0.5)))]
    return {"minutes": round(fed / 16000 / 60, 1), "utterances": len(occurrences), "distinct_recordings": distinct,
            "slices": slices, "decodes": final["stats"]["decodes"],
            "longest_window_seconds": final["stats"]["longest_window_seconds"],
            "utterances_missing": len(missing), "missing_examples": missing[:5]}


def _covered(ref: list, hyp: list) -> bool:
    """At least half the utterance's words appear somewhere in the transcript."""
    text = " " + " ".join(hyp) + " "
    return sum(f" {w} " in text for w in ref) * 2 >= len(ref)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_stream")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--runtimes", default="native,chromium")
    parser.add_argument("--hops", default="400,800")
    parser.add_argument("--soak", action="store_true")
    parser.add_argument("--soak-minutes", type=float, default=60)
    parser.add_argument("--soak-distinct", type=int, default=12, help="distinct recordings cycled in the soak")
    parser.add_argument("--slice-minutes", type=float, default=5, help="the soak's reporting slice")
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "phonon-small.gguf")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model streamed: full (default) or tiny (a smoke run)")
    parser.add_argument("--utterances", type=int, default=8, help="utterances in the streamed recording (2-8)")
    args = parser.parse_args(argv)
    if not 2 <= args.utterances <= 8:
        parser.error("--utterances: 2 to 8")
    if args.soak:
        result = soak(args.model, args.soak_minutes, args.soak_distinct, round(args.slice_minutes * 60 * 16000))
    else:
        gguf, audio = synthetic_model(args.size), recording(utterances=args.utterances)
        hops = [int(h) for h in args.hops.split(",")]
        result = []
        if "native" in args.runtimes:
            result += native(gguf, audio, hops)
        if "chromium" in args.runtimes:
            result += chromium(gguf, audio, hops)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
