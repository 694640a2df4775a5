"""Continuous speech: long recordings whose sentences run together, scored three ways.

    .venv/bin/python -m tools.continuous_speech [--model models/phonon-small.gguf] [--seeds 41 42 43]
                                                [--recordings 12] [--json OUT] [--kinds]

Each recording joins 8 held-out sentences (held-out voices; training.corpus.long_recording)
with pauses drawn from 0-1.2 s, a quarter of them 0 (the sentences run on). Per seed:
- stream: the live stream's final transcript (16 kHz, 20 ms feeds, a partial after each);
- file: Engine.transcribe of the whole recording (windows of at most 30 s cut at pauses);
- one at a time: each sentence's span alone, framed by 0.3 s of silence (what a perfect
  segmenter would give) - the bound the other two are held to (<= 1.10 x).
WER is pooled per seed (training.metrics). With --kinds, every error of the stream and the
file is classed by where it falls (training.metrics alignment): at a sentence boundary (the
last or first word of a sentence) or inside a sentence, and as a deletion, insertion or
substitution.

Seeds: the recordings' sentences and voices follow the seed; the release's long recordings use
5 and 20, so 41-43 are new. Tune on one, report the others.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RATE = 16000
SENTENCES = 8
FRAME_PAD_S = 0.3


def pauses(seed: int, recording: int) -> list:
    """SENTENCES - 1 pauses in 0-1.2 s, a quarter of them 0 (run-on)."""
    r = random.Random(f"continuous/{seed}/{recording}")
    return [0.0 if r.random() < 0.25 else round(r.uniform(0.05, 1.2), 2) for _ in range(SENTENCES - 1)]


def recording(seed: int, index: int):
    from training.corpus import long_recording
    return long_recording(seed * 1000 + index, SENTENCES, pauses(seed, index))


def stream_text(engine, x: np.ndarray, **config) -> str:
    session = engine.stream(RATE, **config)
    for i in range(0, x.size, 320):
        session.feed(x[i:i + 320])
        session.partial()
    return session.finish()["text"]


def one_at_a_time(engine, x: np.ndarray, spans: list) -> list:
    pad = np.zeros(round(FRAME_PAD_S * RATE), np.float32)
    return [engine.transcribe(np.concatenate([pad, x[round(s * RATE):round(e * RATE)], pad]))["text"]
            for _, s, e in spans]


def align(ref: list, hyp: list) -> list:
    """Levenshtein alignment of word lists: [(op, ref index or None)], op in ok/sub/del/ins."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    ops, i, j = [], n, m
    while i or j:
        if i and j and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            ops.append(("ok" if ref[i - 1] == hyp[j - 1] else "sub", i - 1))
            i, j = i - 1, j - 1
        elif i and d[i][j] == d[i - 1][j] + 1:
            ops.append(("del", i - 1))
            i -= 1
        else:
            ops.append(("ins", i - 1 if i else None))     # after ref word i-1
            j -= 1
    return ops[::-1]


def error_kinds(sentences: list, hyp: str) -> dict:
    """Errors of `hyp` against the joined sentences, by place (boundary: a sentence's first or
    last word, or an insertion between sentences) and kind."""
    from training.metrics import normalize
    ref, boundary = [], set()
    for text in sentences:
        words = normalize(text)
        if words:
            boundary |= {len(ref), len(ref) + len(words) - 1}
        ref += words
    out = {}
    for op, i in align(ref, normalize(hyp)):
        if op == "ok":
            continue
        place = "boundary" if i is None or i in boundary or (op == "ins" and i + 1 in boundary) else "inside"
        out[f"{place} {op}"] = out.get(f"{place} {op}", 0) + 1
    return out


def evaluate(gguf: Path, seed: int, recordings: int, kinds: bool = False, **config) -> dict:
    from engine.transcribe import Engine
    from training.metrics import wer
    engine = Engine.open(gguf)
    refs, streams, files, singles, audio_s, kinds_out = [], [], [], [], 0.0, {"stream": {}, "file": {}}
    started = time.perf_counter()
    for r in range(recordings):
        x, spans = recording(seed, r)
        audio_s += x.size / RATE
        sentences = [t for t, _, _ in spans]
        refs.append(" ".join(sentences))
        streams.append(stream_text(engine, x, **config))
        files.append(engine.transcribe(x)["text"])
        singles.append(" ".join(one_at_a_time(engine, x, spans)))
        if kinds:
            for name, hyp in (("stream", streams[-1]), ("file", files[-1])):
                for k, v in error_kinds(sentences, hyp).items():
                    kinds_out[name][k] = kinds_out[name].get(k, 0) + v
    out = {"seed": seed, "recordings": recordings, "audio_seconds": round(audio_s, 1),
           "stream_wer": round(wer(refs, streams), 4), "file_wer": round(wer(refs, files), 4),
           "one_at_a_time_wer": round(wer(refs, singles), 4), "seconds": round(time.perf_counter() - started, 1)}
    single = max(out["one_at_a_time_wer"], 1e-9)
    out["stream_ratio"] = round(out["stream_wer"] / single, 2)
    out["file_ratio"] = round(out["file_wer"] / single, 2)
    if kinds:
        out["error_kinds"] = kinds_out
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.continuous_speech")
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "phonon-small.gguf")
    parser.add_argument("--seeds", type=int, nargs="+", default=[41, 42, 43])
    parser.add_argument("--recordings", type=int, default=12)
    parser.add_argument("--kinds", action="store_true", help="class every error by place and kind")
    parser.add_argument("--config", type=json.loads, default={}, help='StreamConfig fields as JSON, e.g. {"hop_ms": 240}')
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for seed in args.seeds:
        row = evaluate(args.model, seed, args.recordings, args.kinds, **args.config)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
