"""Kernel throughput, runnable in any runtime (CPython natively, Pyodide in Node or Chromium):
the same shapes and timing rule everywhere, so runtimes can be compared side by side.

Records: {"runtime", "tier", "op", "O", "K", "N", "gmacs"} with op one of
  fv5_gemm            decode + GEMM on fv5-b5x3t7 weights (what the encoder runs)
  int8_gemm           plain int8 weights (re-laid per call, as for the model's int8 tables)
  peak_int8_gemm      the same tile on pre-staged int8 weights: this runtime's ceiling
  decode_ns_per_block the decode alone, ns per 8-row block (gmacs is null)
Timing: one warm-up call, then batches of calls (each >= 20 ms, as browser clocks are coarse)
for at least `min_seconds` (and 2 batches); the fastest batch counts (the least disturbed by
other load on a shared machine).
"""

from __future__ import annotations

import random
import time
from array import array

from engine.kernels import Kernels, available_tiers, fv5_block_bytes

SHAPES = ((4096, 1024), (1024, 4096), (1024, 1024), (2048, 1024))   # Phonon-2's linears (O, K)
TOKENS = (8, 64, 375)
DECODE_SHAPE = (4096, 1024)

# Byte tables for random valid stored vectors (decode cost does not depend on the values).
_LOW7_OK = bytes(b if (b & 0x7F) < 125 else b - 3 for b in range(256))       # code < 125
_LOW7_OK_TOP_CLEAR = bytes(_LOW7_OK[b] & 0x7F for b in range(256))           # and bit 7 clear


def random_packed(rng: random.Random, O: int, K: int) -> bytes:
    """Valid random fv5-b5x3t7 blocks, fast enough for Pyodide (bytes.translate per vector).
    Bit 7 is kept clear in stored vectors m >= 4 of a group, so code 7 < 16 < 25 everywhere,
    which also satisfies the padding rule wherever the last code vector is a code 7."""
    V = K // 2
    T = (V + 2) // 3
    full, rest = T // 8, T % 8
    used_last = V - 3 * (T - 1)
    tail_table = bytes(b % (5 ** used_last) for b in range(256))
    plain_table = bytes(b % 125 for b in range(256))
    blocks = []
    for _ in range(O // 8):
        parts = []
        for _ in range(full):
            parts.append(rng.randbytes(64).translate(_LOW7_OK))
            parts.append(rng.randbytes(48).translate(_LOW7_OK_TOP_CLEAR))
        if rest:
            parts.append(rng.randbytes(16 * (rest - 1)).translate(plain_table))
            parts.append(rng.randbytes(16).translate(tail_table))
        blocks.append(b"".join(parts))
    out = b"".join(blocks)
    assert len(out) == (O // 8) * fv5_block_bytes(K)
    return out


def _magnitudes(rng, O):
    hi = array("f", [0.5 + rng.random() for _ in range(O)])
    lo = array("f", [h * rng.random() for h in hi])
    return lo, hi


def best_seconds(fn, min_seconds: float, batch_seconds: float = 0.02) -> float:
    """Seconds per call of the fastest batch. Calls are timed in batches of at least
    `batch_seconds`, because browsers coarsen performance.now() (to 100 us in Chromium)."""
    fn()                                    # warm-up: often many times slower than the rest
    reps = 1                                # then the batch doubles until it lasts batch_seconds
    while True:                             # (a batch sized from the warm-up alone could fall
        t0 = time.perf_counter()            # under the clock's step and time as 0)
        for _ in range(reps):
            fn()
        if time.perf_counter() - t0 >= batch_seconds:
            break
        reps *= 2
    best, spent, runs = float("inf"), 0.0, 0
    while spent < min_seconds or runs < 2:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = time.perf_counter() - t0
        best, spent, runs = min(best, dt / reps), spent + dt, runs + 1
    return best


def run(runtime: str, tiers=None, shapes=SHAPES, tokens=TOKENS, min_seconds: float = 0.3,
        ops=("fv5_gemm", "int8_gemm", "peak_int8_gemm", "decode_ns_per_block")) -> list:
    rng = random.Random(2026)
    records = []
    tiers = tiers or available_tiers()
    data = {}
    for O, K in shapes:
        lo, hi = _magnitudes(rng, O)
        data[O, K] = (random_packed(rng, O, K), lo, hi, bytearray(rng.randbytes(O * K)),
                      array("f", [1.0 / 4096] * O))
    acts = {}
    for N in tokens:
        for K in {k for _, k in shapes}:
            acts[N, K] = (bytearray(rng.randbytes(N * K)).translate(bytes((b if b != 128 else 129) for b in range(256))),
                          array("f", [1.0 / 127] * N))
    for tier in tiers:
        k = Kernels(tier)
        def record(op, O, K, N, gmacs, **extra):
            records.append({"runtime": runtime, "tier": tier, "op": op, "O": O, "K": K, "N": N,
                            "gmacs": gmacs, **extra})
        for (O, K), (packed, lo, hi, w8, ws8) in data.items():
            weights = k.prepare_fv5(packed, lo, hi, O, K)
            staged = k.stage_int8(w8, O, K) if k.has_peak() and "peak_int8_gemm" in ops else None
            out = array("f", bytes(4 * max(tokens) * O))
            acc = array("i", bytes(4 * max(tokens) * O))
            for N in tokens:
                xq, xs = acts[N, K]
                macs = O * K * N
                if "fv5_gemm" in ops:
                    t = best_seconds(lambda: k.fv5_gemm(xq, xs, N, weights, out=out), min_seconds)
                    record("fv5_gemm", O, K, N, round(macs / t / 1e9, 3))
                if "int8_gemm" in ops:
                    t = best_seconds(lambda: k.int8_gemm(xq, xs, N, w8, ws8, O, K, out=out), min_seconds)
                    record("int8_gemm", O, K, N, round(macs / t / 1e9, 3))
                if staged is not None:
                    t = best_seconds(lambda: k.int8_gemm_peak(xq, N, staged, O, K, acc=acc), min_seconds)
                    record("peak_int8_gemm", O, K, N, round(macs / t / 1e9, 3))
            if "decode_ns_per_block" in ops and (O, K) == DECODE_SHAPE:
                panel = bytearray(8 * K)
                t = best_seconds(lambda: k.decode_blocks(weights, panel, reuse=True), min_seconds)
                record("decode_ns_per_block", O, K, None, None, ns_per_block=round(t / (O // 8) * 1e9, 1))
    return records
