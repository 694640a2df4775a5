"""End-to-end benchmark on the full-size synthetic Phonon-2: RTFx on 10 s and 30 s
of audio natively (each native tier) and in Chromium (each wasm tier), the time split by
section (engine/timing.py), native peak RSS and the browser's wasm heap.

    python3 -m harness.bench_e2e [--json FILE] [--seconds 10,30] [--runtimes native,chromium]
                                 [--size full|tiny]

The model is generated (python3 -m modeltools synth --size full --seed 1) and converted on first
use into build/bench-models/ (again when its generator's sources change; a copy is kept in
.cache/synthetic-models/); the audio is a deterministic speech-like signal. `--size tiny`
(a smoke run: tests/test_bench_smoke.py) takes the committed tiny synthetic model instead.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from modeltools.convert import convert, read_config
from engine.kernels import available_tiers
from modeltools.synth import make
from engine.timing import Timer
from engine.transcribe import Engine

from .runtimes import Chromium, bench_parser

MODEL_NAME = "phonon2-full-synthetic.gguf"
TINY_NAME = "phonon2-tiny-synthetic.gguf"
TINY_SOURCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "tiny"
SIZES = ("full", "tiny")


@functools.cache
def tiny_model() -> Path:
    """The committed tiny synthetic model (tests/data/tiny, 2 layers of d_model 32) converted into
    build/bench-models/ beside the full one (the harness pages serve that folder): the benchmarks'
    smoke size. Converted afresh once per process (a tenth of a second), so a smoke run goes
    through today's converter, not a file an older one left."""
    gguf = Chromium.models_dir() / TINY_NAME
    # a name of this process's own: test workers running side by side each convert it, and the
    # rename makes whichever finishes last the file readers see, whole
    partial = gguf.with_name(f"{gguf.name}.{os.getpid()}.partial")
    convert(TINY_SOURCE / "model.fermion", read_config(TINY_SOURCE / "config.json"), partial, "synthetic",
            "synthetic-phonon-2-tiny")
    partial.replace(gguf)
    return gguf


def synthetic_model(size: str = "full") -> Path:
    """The synthetic Phonon-2 of this size ("full": full_model(), "tiny": tiny_model())."""
    if size not in SIZES:
        raise ValueError(f"size {size!r}: one of {', '.join(SIZES)}")
    return tiny_model() if size == "tiny" else full_model()


SYNTHETIC_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "synthetic-models"
# What the full-size model is made by: a change to any of these makes a new one.
GENERATOR = ["modeltools/*.py", "engine/parakeet_tdt/*.py", "engine/gguf_file.py", "harness/bench_e2e.py"]


def generator_digest() -> str:
    """sha256 of the sources that make the full-size synthetic model (GENERATOR), in path order."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(p for pattern in GENERATOR for p in root.glob(pattern)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def full_model() -> Path:
    """The full-size synthetic Phonon-2 (195 MiB) in build/bench-models/, made by today's
    generator: its digest (generator_digest) is kept beside it, and a model an older generator
    made is made again. Generating takes about a minute of CPU, so a copy is kept in
    .cache/synthetic-models/ under that digest (a fresh checkout with the set-up cache reuses
    it). Processes asking at the same time (parallel test workers) wait for the first one."""
    from filelock import FileLock
    models = Chromium.models_dir()
    gguf = models / MODEL_NAME
    made_by = gguf.with_name(gguf.name + ".generator")
    key = generator_digest()
    with FileLock(str(gguf) + ".lock"):
        if gguf.exists() and made_by.exists() and made_by.read_text() == key:
            return gguf
        cached = SYNTHETIC_CACHE / f"{MODEL_NAME[:-5]}-{key[:24]}.gguf"
        partial = gguf.with_name(gguf.name + ".partial")
        if cached.exists():
            shutil.copyfile(cached, partial)
        else:
            src = models / "full-synthetic"
            print("generating the full-size synthetic model (about 40 s) ...", flush=True)
            container = make("full", 1, src)
            convert(container, read_config(src / "config.json"), partial, "synthetic", "synthetic-phonon-2-full")
            # whole or not at all: checkouts sharing the cache may write it at the same time
            staged = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
            cached.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(partial, staged)
            staged.replace(cached)
        partial.replace(gguf)
        made_by.write_text(key)
    return gguf


def speechlike(seconds: float) -> np.ndarray:
    rng = np.random.default_rng(1)
    t = np.arange(int(16000 * seconds)) / 16000
    f0 = 120 + 30 * np.sin(2 * np.pi * 2 * t)
    voiced = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / 16000) / k for k in range(1, 12))
    return (0.1 * voiced * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def record(runtime, tier, seconds, result, split, **extra):
    return {"runtime": runtime, "tier": tier, "op": "transcribe", "audio_seconds": seconds,
            "compute_seconds": result["timing"]["compute_seconds"], "rtfx": result["timing"]["rtfx"],
            "split": {k: round(v, 3) for k, v in split.items()}, **extra}


def native(gguf: Path, seconds_list) -> list:
    out = []
    for tier in available_tiers():
        engine = Engine.open(gguf, tier)
        for seconds in seconds_list:
            audio = speechlike(seconds)
            with Timer() as timer:
                result = engine.transcribe(audio)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            out.append(record("native", tier, seconds, result, timer.seconds, peak_rss_bytes=rss))
            print(f"native {tier} {seconds} s: RTFx {result['timing']['rtfx']}", flush=True)
    return out




def chromium(gguf: Path, seconds_list, tiers) -> list:
    for seconds in seconds_list:
        (Chromium.models_dir() / f"audio-{seconds}s.f32").write_bytes(speechlike(seconds).tobytes())
    with Chromium(timeout_ms=3_600_000) as browser:
        rows = browser.run_job("bench_transcribe", model={"url": f"/models/{gguf.name}"},
                               seconds=list(seconds_list), tiers=list(tiers))
        version = browser.version()
    print(f"chromium {version}")
    return [record("chromium", r["tier"], r["seconds"], r["result"], r["split"],
                   wasm_heap_bytes=r["wasm_heap_bytes"], model_bytes=gguf.stat().st_size) for r in rows]


# engine/timing.py's sections in pipeline order. The one-call path runs a whole encoder layer as one
# C call ("conformer layer (one call)"), so the composed path's parts (linears, attention, ...)
# appear only when a split encoder or the float-activation path runs them: the table shows the
# sections that were timed and no column of zeros for those that never ran.
SECTIONS = ["frontend", "subsampling", "conformer layer (one call)", "linears", "attention", "conv module",
            "feed-forward", "norms and residuals", "decode"]


def table(records: list) -> str:
    timed = {s for r in records for s in r["split"]}
    sections = [s for s in SECTIONS if s in timed] + sorted(timed - set(SECTIONS))
    lines = ["| runtime | tier | audio s | compute s | RTFx | " + " | ".join(sections) + " | memory |",
             "|" + "---|" * (6 + len(sections))]
    for r in records:
        mem = (f"RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB" if "peak_rss_bytes" in r
               else f"wasm heap {r['wasm_heap_bytes'] / 2**20:.0f} MiB")
        cells = [f"{r['split'][s]:.2f}" if s in r["split"] else "–" for s in sections]
        lines.append(f"| {r['runtime']} | {r['tier']} | {r['audio_seconds']} | {r['compute_seconds']} | "
                     f"{r['rtfx']} | " + " | ".join(cells) + f" | {mem} |")
    return "\n".join(lines)


def main(argv=None):
    parser = bench_parser("python3 -m harness.bench_e2e", "native,chromium")
    parser.add_argument("--seconds", default="10,30")
    parser.add_argument("--browser-tiers", default="wasm_relaxed_simd,wasm_simd128,scalar")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model: full (default) or tiny (a smoke run)")
    args = parser.parse_args(argv)
    seconds = [int(s) for s in args.seconds.split(",")]
    gguf = synthetic_model(args.size)
    records = []
    started = time.time()
    if "native" in args.runtimes:
        records += native(gguf, seconds)
    if "chromium" in args.runtimes:
        records += chromium(gguf, seconds, args.browser_tiers.split(","))
    print(f"\n{time.time() - started:.0f} s\n\n{table(records)}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
