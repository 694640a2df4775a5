"""One candidate model, the figures a model is weighed by, in one command (about 10 minutes).

    .venv/bin/python -m tools.candidate --run RUN [--checkpoint final.pt] --data DATA
                                        [--utterances 600] [--continuous-seed 41] [--recordings 12]
                                        [--paused 6]
                                        [--json OUT]
    .venv/bin/python -m tools.candidate --gguf models/phonon-small.gguf --data DATA ...

A training run's checkpoint is exported to RUN/candidate-CHECKPOINT.gguf (training.release.ship:
the release's export and verified conversion, without the card); a GGUF is taken as it is. Then,
through the engine natively (int8 activations, what users get):
- clean and 10 dB WER on the first --utterances of DATA/test-clean and DATA/test-noise
  (training.release.engine_wer; the release's figures use 600);
- continuous speech on one seed of tools.continuous_speech (stream / whole file / each
  sentence alone; 41 is the seed the rules were tuned on, 42 and 43 are the release's);
- the release's paused long recordings (training.release.stream_vs_batch, 0.3-2 s pauses),
  and the same recordings' first-partial latency and commit lags (stream_latency).
Prints one JSON object (and writes it to --json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def candidate_gguf(run: Path, checkpoint: str) -> Path:
    """RUN/CHECKPOINT -> RUN/candidate-<checkpoint's stem>.gguf (with its training sidecar beside
    it), one file per checkpoint so that two evaluations of one run do not share a model file."""
    from engine.parakeet_tdt.layout import Dims
    from training.release import ship
    cfg = json.loads((run / "config.json").read_text())
    gguf = run / f"candidate-{Path(checkpoint).stem}.gguf"
    ship(run, checkpoint, gguf, Dims(**cfg["dims"]))
    return gguf


def stream_latency(gguf: Path, recordings: int, seed: int = 5) -> dict:
    """The release's paused recordings (stream_vs_batch's, the same seeds and 20 ms feeds):
    commit lag p50 / p95 pooled over every word, first-partial latency from the speech onset
    (median, maximum) and decodes (tools.stream_rules) - the figures the stream is bounded by (p50 <= 1.5 s,
    p95 <= 2.5 s, first partial <= 0.5 s)."""
    from engine.transcribe import Engine
    from tools.stream_rules import paused_recordings, stream_figures
    fig = stream_figures(Engine.open(gguf), paused_recordings(seed, recordings))
    return {k: fig[k] for k in ("commit_lag_p50", "commit_lag_p95", "first_partial_median", "first_partial_max",
                                "decodes", "decoded_audio_per_second")}


def evaluate(gguf: Path, data: Path, utterances: int, continuous_seed: int, paused: int,
             recordings: int = 12) -> dict:
    from tools.continuous_speech import evaluate as continuous
    from training.data import Corpus
    from training.release import engine_wer, stream_vs_batch
    out = {"model": str(gguf)}
    started = time.perf_counter()
    for name, folder in (("clean", "test-clean"), ("noise10db", "test-noise")):
        if not (data / folder / "info.json").exists():
            raise FileNotFoundError(f"{data / folder} is not a corpus: make it with training.corpus "
                                    "(docs/training.md, \"Reproduce the shipped model\")")
        corpus = Corpus(data / folder)
        if len(corpus.rows) < utterances:
            raise ValueError(f"{data / folder} has {len(corpus.rows)} utterances, fewer than --utterances {utterances}")
        w, by_voice, _, _ = engine_wer(gguf, corpus, utterances)
        out[name] = {"wer": round(w, 4), "by_voice": by_voice}
    out["continuous"] = continuous(gguf, continuous_seed, recordings)
    out["paused"] = stream_vs_batch(gguf, paused)
    out["latency"] = stream_latency(gguf, paused)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tools.candidate", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", type=Path, help="a training run folder (training.train --out)")
    which.add_argument("--gguf", type=Path, help="a shipped model")
    p.add_argument("--checkpoint", default="final.pt", help="with --run: which checkpoint (default final.pt)")
    p.add_argument("--data", type=Path, required=True, help="the folder holding test-clean and test-noise")
    p.add_argument("--utterances", type=int, default=600)
    p.add_argument("--continuous-seed", type=int, default=41)
    p.add_argument("--recordings", type=int, default=12, help="continuous-speech recordings (the release uses 12)")
    p.add_argument("--paused", type=int, default=6, help="paused long recordings (the release uses 6)")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if min(a.utterances, a.paused, a.recordings) < 1:
        p.error("--utterances, --recordings and --paused must be at least 1")
    if a.run and not (a.run / a.checkpoint).exists():
        p.error(f"{a.run / a.checkpoint} does not exist")
    gguf = candidate_gguf(a.run, a.checkpoint) if a.run else a.gguf
    result = evaluate(gguf, a.data, a.utterances, a.continuous_seed, a.paused, a.recordings)
    text = json.dumps(result, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
