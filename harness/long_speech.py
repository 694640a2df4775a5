"""Long recordings of generated speech for the stream's load tests and benchmarks: held-out
sentences of the training corpus (espeak-ng and flite voices) joined by pauses drawn from
0.3-1.5 s, 16 kHz mono float32. The same seed and length give the same samples.

    x, spans = long_speech(minutes=15, seed=41)       # float32 [L], [(text, start_s, end_s)]
    python3 -m harness.long_speech --minutes 15 --out speech.wav [--seed 41]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "long-speech"
SECONDS_PER_SENTENCE = 2.5          # an espeak sentence of the corpus with its pause: 2.7-3 s


def long_speech(minutes: float, seed: int = 41) -> tuple:
    """At least `minutes` of speech (whole sentences) -> (float32 [L] at 16 kHz, the spans
    [(text, start s, end s)] of the sentences it holds).
    Cached under build/long-speech (generating 15 minutes takes a few seconds)."""
    from training.corpus import long_recording
    n = max(2, int(minutes * 60 / SECONDS_PER_SENTENCE) + 1)
    cache = CACHE / f"seed{seed}-n{n}.f32"
    r = random.Random(f"pauses/{seed}")
    gaps = [round(r.uniform(0.3, 1.5), 2) for _ in range(n - 1)]
    spans_file = cache.with_suffix(".json")
    if cache.exists() and spans_file.exists():
        x = np.fromfile(cache, np.float32)
        spans = [tuple(s) for s in json.loads(spans_file.read_text())]
    else:
        x, spans = long_recording(seed, n, gaps)
        cache.parent.mkdir(parents=True, exist_ok=True)
        x.astype(np.float32).tofile(cache)
        spans_file.write_text(json.dumps(spans))
    keep = min(x.size, max(int(minutes * 60 * 16000), 1))
    end = _sentence_end(x, keep)            # cut in a pause, never inside a sentence
    return x[:end].astype(np.float32), [s for s in spans if s[2] * 16000 <= end]


def _sentence_end(x: np.ndarray, at: int) -> int:
    """The first sample at or after `at` that begins 250 ms of silence (the joins are exact
    zeros), or the end."""
    quiet = np.flatnonzero(x[at:] == 0)
    for i in quiet:
        if i + 4000 <= x.size - at and not np.any(x[at + i:at + i + 4000]):
            return at + int(i)
    return x.size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.long_speech")
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--out", required=True, help="a WAV file (float32, 16 kHz)")
    args = parser.parse_args(argv)
    from harness.site_check import write_wav
    x, _ = long_speech(args.minutes, args.seed)
    with open(args.out, "wb") as f:
        write_wav(f, x, 16000, True)
    print(f"{args.out}: {x.size / 16000:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
