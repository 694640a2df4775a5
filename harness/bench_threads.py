"""Encoder threads, side by side in one process: the full-size synthetic model (and
the default model) encoding the same audio with 1..N threads, runs interleaved so that the
machine's noise hits every count alike; median seconds, speed-up against 1 thread, and the
encoder output's digest (the same for every count, or this exits non-zero).

    .venv/bin/python -m harness.bench_threads [--seconds 10 30] [--threads 1 2] [--repeats 3]
                                              [--size full|tiny]

`--size tiny` puts the committed tiny synthetic model in the full one's place (a smoke run:
`--size tiny --seconds 1 --repeats 1`, tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import time
from array import array
from pathlib import Path

from engine.transcribe import Engine
from harness.bench_e2e import SIZES, synthetic_model

ROOT = Path(__file__).resolve().parent.parent


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def noise(seconds: float) -> array:
    rng = random.Random(7)
    return array("f", [rng.uniform(-0.3, 0.3) for _ in range(int(16000 * seconds))])


def bench(model: Path, seconds: float, counts: list, repeats: int) -> dict:
    """The engine at each thread count, interleaved with the ideal 2-thread split of its largest
    linear (IdealSplit, 5 samples per repeat): `efficiency` is the engine's 2-thread speed-up
    over the ideal split's, measured under the same noise."""
    engines = {n: Engine.open(model, "auto", n) for n in counts}
    ideal = IdealSplit(round(seconds * 12.5))
    x = noise(seconds)
    times = {n: [] for n in counts}
    ideal_samples = []
    digests = {}
    for n in counts:                                   # warm-up (first-touch of the weights)
        engines[n].encode(x)
    for _ in range(repeats):
        for n in counts:
            start = time.perf_counter()
            enc, _ = engines[n].encode(x)
            times[n].append(time.perf_counter() - start)
            digests[n] = hashlib.sha256(bytes(memoryview(enc).cast("B"))).hexdigest()
        ideal_samples += [ideal.sample() for _ in range(5)]
    base = statistics.median(times[counts[0]])
    ideal_ratio = statistics.median(s[0] for s in ideal_samples) / statistics.median(s[1] for s in ideal_samples)
    speedup = {n: round(base / statistics.median(t), 2) for n, t in times.items()}
    return {"model": model.name, "audio_seconds": seconds, "tier": engines[counts[0]].tier,
            "median_seconds": {n: round(statistics.median(t), 3) for n, t in times.items()},
            "speedup": speedup, "ideal_split": round(ideal_ratio, 2),
            "efficiency": round(speedup[2] / ideal_ratio, 2) if 2 in speedup else None,
            "identical": len(set(digests.values())) == 1}


class IdealSplit:
    """This machine's bound on a 2-thread split: one fv5 GEMM of the encoder's largest shape
    (feed-forward [4096][1024], `tokens` encoder frames) on one thread against its two row
    halves on two threads at once, each thread with its own Kernels and weights - no serial
    work, one join, nothing shared but the activations. An engine split cannot beat this.
    sample() times one of each; interleave it with the engine's runs to share their noise."""

    def __init__(self, tokens: int, O: int = 4096, K: int = 1024):
        from checks.kernel_bench import _magnitudes, random_packed
        from engine.kernels import Kernels
        rng = random.Random(11)
        half = O // 2
        self.tokens = tokens
        self.kernels = [Kernels("auto"), Kernels("auto")]
        packed = random_packed(rng, O, K)
        lo, hi = _magnitudes(rng, O)
        block = len(packed) // (O // 8)
        self.whole = self.kernels[0].prepare_fv5(packed, lo, hi, O, K)
        self.halves = [self.kernels[i].prepare_fv5(packed[i * half // 8 * block:(i + 1) * half // 8 * block],
                                                   lo[i * half:(i + 1) * half], hi[i * half:(i + 1) * half], half, K)
                       for i in range(2)]
        x = array("f", [rng.uniform(-1, 1) for _ in range(tokens * K)])
        self.acts = [k.quantize(x, tokens, K) for k in self.kernels]
        self.shape, self.tier = [O, K, tokens], self.kernels[0].tier

    def sample(self) -> tuple:
        """(seconds on one thread, seconds for the halves on two)."""
        import threading
        start = time.perf_counter()
        self.kernels[0].fv5_gemm(*self.acts[0], self.tokens, self.whole)
        one = time.perf_counter() - start
        threads = [threading.Thread(target=self.kernels[i].fv5_gemm, args=(*self.acts[i], self.tokens, self.halves[i]))
                   for i in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return one, time.perf_counter() - start


def ceiling(tokens: int, repeats: int) -> dict:
    ideal = IdealSplit(tokens)
    samples = [ideal.sample() for _ in range(repeats)]
    one, two = statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
    return {"shape": ideal.shape, "tier": ideal.tier, "one_thread_seconds": round(one, 4),
            "two_threads_seconds": round(two, 4), "ceiling": round(one / two, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, nargs="+", default=[10.0, 30.0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--ceiling", action="store_true",
                        help="only the machine's bound: one GEMM on one thread vs its halves on two")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model beside the default one: full (default) or tiny (a smoke run)")
    args = parser.parse_args(argv)
    print(f"CPU: {cpu_name()}")
    if args.ceiling:
        for seconds in args.seconds:
            r = ceiling(round(12.5 * seconds), max(args.repeats, 15))
            print(f"fv5 GEMM {r['shape'][0]}x{r['shape'][1]}, {r['shape'][2]} tokens ({seconds:.0f} s) [{r['tier']}]: "
                  f"1 thread {r['one_thread_seconds']} s, its halves on 2 threads {r['two_threads_seconds']} s "
                  f"-> ceiling x{r['ceiling']}", flush=True)
        return 0
    records = []
    for model in (synthetic_model(args.size), ROOT / "models" / "phonon-small.gguf"):
        for seconds in args.seconds:
            r = bench(model, seconds, args.threads, args.repeats)
            records.append(r)
            cells = "  ".join(f"{n} thr {r['median_seconds'][n]:.3f} s (x{r['speedup'][n]:.2f})" for n in args.threads)
            print(f"{r['model']:34s} {seconds:4.0f} s audio [{r['tier']}]  {cells}  "
                  f"{'identical' if r['identical'] else 'DIFFERENT OUTPUTS'}  (ideal 2-thread split of its largest "
                  f"linear x{r['ideal_split']}: efficiency {r['efficiency']})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_name(), "records": records}, indent=1) + "\n")
    return 0 if all(r["identical"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
