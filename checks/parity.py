"""Deterministic kernel sweep, runnable in any runtime (CPython natively, Pyodide in Node or a
browser): the same seeded inputs, every op, and a sha256 of every output. Tiers and runtimes
are bit-identical exactly when their digest tables are equal.

Standard library only (Pyodide has no numpy): inputs come from ``random.Random`` (the
Mersenne Twister gives the same stream everywhere) and integer arithmetic; floats are built
from integers and powers of two, so no libm function touches the data.

    python3 -m checks.parity [--tier T] [--only SUBSTR] [--json]
"""

from __future__ import annotations

import hashlib
import random
import struct
from array import array

from engine.kernels import Kernels, fv5_block_bytes

# Shapes include the awkward ones: K whose last code group is short (24, 80, 256, 1024, 4096;
# K = 48 is exactly one full group), K = 8 (a single code vector with one padding digit),
# single tokens, token counts around the 4- and 6-token tiles, and odd row counts (int8).
DECODE_K = (8, 16, 24, 48, 80, 256, 1024, 4096)
QUANT_SHAPES = ((1, 8), (3, 24), (7, 5), (67, 80), (5, 4096), (375, 64))
FV5_SHAPES = ((8, 8), (16, 48), (24, 80), (8, 256), (32, 1024), (8, 4096), (16, 24))
FV5_TOKENS = (1, 2, 3, 4, 5, 6, 7, 8, 13, 67)
INT8_SHAPES = ((1, 8), (7, 64), (8, 16), (9, 1024), (33, 80), (640, 640))
INT8_TOKENS = (1, 4, 5, 6, 67)
# silu: +-87 and the floats either side, 88.72 (exp overflow), -103.98 (underflow), +-inf, NaN,
# +-0, a subnormal, +-200
SILU_SPECIAL_BITS = (0x42AE0000, 0xC2AE0000, 0x42AE0001, 0xC2AE0001, 0x42ADFFFF, 0xC2ADFFFF, 0x42B17218,
                     0xC2CFF1B5, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000000, 0x80000000, 0x00000001,
                     0x43480000, 0xC3480000)
VARIANTS = ("random", "special")   # special: zero rows, hi = 0, lo = hi, extreme activations


def _rng(name: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def _float_from_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def activations(rng: random.Random, N: int, K: int, special: bool) -> array:
    """float32 [N][K]: int16 values times a power of two per token. `special` adds extreme
    tokens: all zero, largest finite, subnormal-only, mixed huge/tiny."""
    raw = array("h", rng.randbytes(2 * N * K))
    x = array("f", bytes(4 * N * K))
    for n in range(N):
        scale = 2.0 ** rng.randrange(-20, 4)
        base = n * K
        for k in range(K):
            x[base + k] = raw[base + k] * scale
        if special:
            kind = n % 5
            if kind == 1:
                for k in range(K):
                    x[base + k] = 0.0
            elif kind == 2:
                x[base + rng.randrange(K)] = _float_from_bits(0x7F7FFFFF)    # FLT_MAX
                x[base + rng.randrange(K)] = -_float_from_bits(0x7F7FFFFF)
            elif kind == 3:
                for k in range(K):
                    x[base + k] = _float_from_bits(rng.randrange(1, 0x800000)) * (1 if k % 2 else -1)
            elif kind == 4:
                x[base] = 1e30
                x[base + K - 1] = 1e-30
    return x


def int8_values(rng: random.Random, count: int) -> bytearray:
    return bytearray(rng.randbytes(count))


def magnitudes(rng: random.Random, O: int, special: bool):
    """lo, hi float32 [O]; `special` adds hi = 0 rows, lo = hi rows and lo = 0 rows."""
    lo, hi = array("f", bytes(4 * O)), array("f", bytes(4 * O))
    for r in range(O):
        h = (1 + rng.randrange(1024) / 1024) * 2.0 ** rng.randrange(-12, 2)
        hi[r] = h
        lo[r] = h * rng.randrange(1025) / 1024
        if special and r % 4 == 1:
            lo[r] = hi[r] = 0.0
        elif special and r % 4 == 2:
            lo[r] = hi[r]
        elif special and r % 4 == 3:
            lo[r] = 0.0
    return lo, hi


def _zero_row0(lane: int, t: int, V: int) -> int:
    """Set to level 2 (zero) the digits of a lane (j < 8) that belong to row 0: those of panel
    vectors v = 3t + i with v % 4 == 0 (row pair 0)."""
    digits = [lane % 5, lane // 5 % 5, lane // 25]
    for i in range(3):
        if (3 * t + i) % 4 == 0 and 3 * t + i < V:
            digits[i] = 2
    return digits[0] + 5 * digits[1] + 25 * digits[2]


def packed_blocks(rng: random.Random, O: int, K: int, special: bool) -> bytearray:
    """Random valid fv5-b5x3t7 blocks, built straight from code vectors (no numpy packer):
    lanes hold base-5 digit triples, padding digits are zero, `special` makes row 0 all zero
    (level code 2)."""
    V = K // 2
    T = (V + 2) // 3
    used_last = V - 3 * (T - 1)
    out = bytearray()
    for b in range(O // 8):
        codes = []
        for t in range(T):
            limit = 125 if t < T - 1 else 5 ** used_last
            lanes = [rng.randrange(limit) for _ in range(16)]
            if special and b == 0:
                lanes = [_zero_row0(lane, t, V) if j < 8 else lane for j, lane in enumerate(lanes)]
            codes.append(lanes)
        full = T // 8
        for g in range(full):
            c7 = codes[8 * g + 7]
            for m in range(7):
                cm = codes[8 * g + m]
                out += bytes(cm[j] | (((c7[j] >> m) & 1) << 7) for j in range(16))
        for t in range(8 * full, T):
            out += bytes(codes[t])
    assert len(out) == (O // 8) * fv5_block_bytes(K)
    return out


# --------------------------------------------------------------------------------------------

def cases():
    """(name, op, params) for the whole sweep, in a fixed order."""
    out = []
    for variant in VARIANTS:
        for K in DECODE_K:
            out.append((f"decode/K{K}/{variant}", "decode", {"O": 16, "K": K, "variant": variant}))
        for N, K in QUANT_SHAPES:
            out.append((f"quantize/N{N}/K{K}/{variant}", "quantize", {"N": N, "K": K, "variant": variant}))
        for O, K in FV5_SHAPES:
            for N in FV5_TOKENS:
                out.append((f"fv5_gemm/O{O}/K{K}/N{N}/{variant}", "fv5_gemm",
                            {"N": N, "O": O, "K": K, "variant": variant}))
        out.append((f"fv5_gemm/O16/K1024/N375/{variant}", "fv5_gemm",
                    {"N": 375, "O": 16, "K": 1024, "variant": variant}))
        for N in range(1, 68):            # every token count up to 67 on one small shape
            if N not in FV5_TOKENS:
                out.append((f"fv5_gemm/O8/K80/N{N}/{variant}", "fv5_gemm",
                            {"N": N, "O": 8, "K": 80, "variant": variant}))
        for O, K in INT8_SHAPES:
            for N in INT8_TOKENS:
                out.append((f"int8_gemm/O{O}/K{K}/N{N}/{variant}", "int8_gemm",
                            {"N": N, "O": O, "K": K, "variant": variant}))
    for op in ("exp", "log", "tanh", "sigmoid"):
        out.append((f"math/{op}", "math", {"op": op}))
    out.append(("math/sincos", "sincos", {}))
    for rate in (8000, 22050, 44100, 48000):
        out.append((f"resample/{rate}", "resample", {"rate": rate}))
    for op in ("f16", "layernorm", "silu", "glu", "dwconv1d", "rel_scores", "attention_context", "matmul_nt", "conv2d", "dwconv2d",
               "subsampling_head", "block_sums"):
        out.append((f"ops/{op}", "ops", {"op": op}))
    for fmt in ("u8", "s16", "s24", "s32", "f32", "f64"):
        out.append((f"pcm/{fmt}/stereo", "pcm", {"fmt": fmt}))
    for seconds, variant in ((0.5, "random"), (2.05, "random"), (1.0, "silence"), (0.011, "random")):
        out.append((f"frontend/{seconds}s/{variant}", "frontend", {"samples": int(16000 * seconds),
                                                                    "variant": variant}))
    return out


def math_inputs(rng: random.Random, op: str) -> array:
    """4096 float32 inputs spanning each function's interesting range (built from integers)."""
    raw = array("i", rng.randbytes(4 * 4096))
    if op == "log":
        return array("f", [_float_from_bits(abs(v) & 0x7F7FFFFF) for v in raw])   # all positive finite
    span = {"exp": 100.0, "tanh": 12.0, "sigmoid": 20.0}[op]
    return array("f", [v / 2 ** 31 * span for v in raw])


def floats(rng: random.Random, n: int, scale: float = 1.0) -> array:
    return array("f", [v / 32768 * scale for v in array("h", rng.randbytes(2 * n))])


def layernorm_rows(rng: random.Random, N: int, D: int) -> array:
    """float32 [N][D]: rows of seeded values, then (N >= 6) a row of values from 2^-80 to 2^59, a row of
    zeros with a -0, a constant row, a row with an inf and one with a NaN past the first lanes."""
    x = floats(rng, N * D, 8)
    if N >= 6:
        for d in range(D):
            x[D + d] = (rng.randrange(1, 1 << 20) - (1 << 19)) * 2.0 ** rng.randrange(-80, 41)
            x[2 * D + d] = 0.0
            x[3 * D + d] = 3.25
        x[2 * D] = -0.0
        x[4 * D + (D - 1) // 2] = float("inf")
        x[5 * D + D - 1] = float("nan")
    return x


def run_op(kernels: Kernels, rng: random.Random, op: str) -> bytes:
    """One float op of kernels/ops.h on seeded inputs."""
    if op == "f16":
        return kernels.f16_to_f32(bytearray(rng.randbytes(2 * 4096)), 4096).tobytes()
    if op == "layernorm":      # the SIMD tiers' lanes and tails, and the rows whose bounds are awkward
        out = b""
        for N, D in ((13, 96), (6, 1), (6, 5), (6, 7), (6, 1023)):
            x = layernorm_rows(rng, N, D)
            out += kernels.layernorm(x, N, D, floats(rng, D), floats(rng, D), 1e-5).tobytes()
        return out
    if op == "silu":           # the SIMD tiers' fast-path limit (|x| <= 87) and specials, odd length
        x = floats(rng, 4093, 30)
        x.extend([_float_from_bits(b) for b in SILU_SPECIAL_BITS])
        return kernels.silu(x, len(x)).tobytes()
    if op == "subsampling_head":   # the tier's channel-last head: odd and even sizes, channel blocks
        out = b""
        for T, F, C in ((37, 29, 3), (64, 128, 2), (5, 40, 1), (2, 3, 2)):
            x = floats(rng, T * F, 4)
            x[::7] = array("f", [-0.0]) * len(x[::7])
            w0, b0, w2, b2 = floats(rng, 9 * C), floats(rng, C), floats(rng, 9 * C), floats(rng, C)
            out += kernels.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2)[0].tobytes()
        return out
    if op == "block_sums":     # the stream's 80 ms frame energies and 20 ms quiet blocks, a short tail
        x = floats(rng, 1280 * 7 + 333, 1.0)
        return kernels.block_sums(x, len(x), 1280).tobytes() + kernels.block_sums(x, len(x), 320).tobytes()
    if op == "glu":
        return kernels.glu(floats(rng, 7 * 64, 10), 7, 32).tobytes()
    if op == "dwconv1d":
        return kernels.dwconv1d(floats(rng, 23 * 16), 23, 16, floats(rng, 16 * 9), floats(rng, 16), 9).tobytes()
    if op == "rel_scores":     # dk = 40 (b = 11) and dk = 300 (b = 10); a zero row of k
        out = b""
        for T, dk in ((13, 40), (3, 300)):
            qu, k, qv = floats(rng, T * dk, 3), floats(rng, T * dk, 3), floats(rng, T * dk, 3)
            k[:dk] = array("f", [0.0]) * dk
            out += kernels.rel_scores(qu, k, qv, floats(rng, (2 * T - 1) * dk, 3), T, dk, dk ** 0.5).tobytes()
        return out
    if op == "attention_context":    # T = 50 (b = 11) and T = 260 (b = 10)
        out = b""
        for T, dk in ((50, 9), (260, 3)):
            scores = floats(rng, T * T, 40)
            out += kernels.attention_context(scores, floats(rng, T * dk, 2), T, dk).tobytes() + scores.tobytes()
        return out
    if op == "matmul_nt":
        return kernels.matmul_nt(floats(rng, 9 * 128), floats(rng, 17 * 128), 9, 17, 128, 0.088).tobytes()
    cin = 8 if op == "dwconv2d" else 1                 # depthwise, or conv0's one input channel
    y, _, _ = kernels.conv2d_s2(floats(rng, cin * 21 * 32), cin, 21, 32, floats(rng, 8 * 9), floats(rng, 8), 8, cin)
    return y.tobytes()


def run_special(kernels: Kernels, name: str, op: str, p: dict) -> bytes:
    """Output bytes of the math, sincos and frontend cases."""
    rng = _rng(name)
    if op == "math":
        x = math_inputs(rng, p["op"])
        return kernels.math(p["op"], x, len(x)).tobytes()
    if op == "ops":
        return run_op(kernels, rng, p["op"])
    if op == "resample":
        x = array("f", [v / 32768 for v in array("h", rng.randbytes(2 * (p["rate"] // 4)))])
        plan = kernels.resampler_plan(p["rate"], 16000)
        return plan[3].tobytes() + kernels.resample(plan, x, len(x), 0, 0, len(x) * plan[1] // plan[0]).tobytes()
    if op == "pcm":
        size = kernels.PCM_FORMATS[p["fmt"]][1]
        raw = bytearray(rng.randbytes(2 * 1000 * size))
        if p["fmt"] in ("f32", "f64"):        # finite floats: values in [-1, 1) from integers
            code = "f" if p["fmt"] == "f32" else "d"
            raw = bytearray(array(code, [v / 2 ** 31 for v in array("i", rng.randbytes(4 * 2000))]).tobytes())
        return kernels.pcm_to_mono(raw, p["fmt"], 2).tobytes()
    if op == "sincos":
        x = array("d", [(v / 2 ** 31) * 6000.0 for v in array("i", rng.randbytes(4 * 1024))])
        return kernels.sincos(x, len(x)).tobytes()
    n = p["samples"]
    samples = array("f", bytes(4 * n))
    if p["variant"] == "random":
        samples = array("f", [v / 32768 for v in array("h", rng.randbytes(2 * n))])
    window = array("f", [rng.randrange(1 << 16) / 65536 for _ in range(400)])
    fb = array("f", [rng.randrange(1 << 10) / 1024 if rng.random() < 0.05 else 0.0 for _ in range(128 * 257)])
    feats, _ = kernels.frontend(samples, n, window, fb, 128)
    return feats.tobytes()


def run_case(kernels: Kernels, name: str, op: str, p: dict) -> bytes:
    """The output bytes of one case (panel; xq + xs; y float32; math; features)."""
    if op in ("math", "sincos", "frontend", "resample", "pcm", "ops"):
        return run_special(kernels, name, op, p)
    rng = _rng(name)
    special = p["variant"] == "special"
    if op == "decode":
        O, K = p["O"], p["K"]
        packed = packed_blocks(rng, O, K, special)
        lo, hi = magnitudes(rng, O, special)
        weights = kernels.prepare_fv5(packed, lo, hi, O, K)
        bb = fv5_block_bytes(K)
        return b"".join(bytes(kernels.decode_block(packed[b * bb:(b + 1) * bb],
                                                   weights.lut[64 * b:64 * (b + 1)], K))
                        for b in range(O // 8))
    if op == "quantize":
        N, K = p["N"], p["K"]
        xq, xs = kernels.quantize(activations(rng, N, K, special), N, K)
        return bytes(xq) + xs.tobytes()
    N, O, K = p["N"], p["O"], p["K"]
    x = activations(rng, N, K, special)
    bias = array("f", [(rng.randrange(2001) - 1000) / 256 for _ in range(O)]) if O % 2 else None
    if op == "fv5_gemm":
        packed = packed_blocks(rng, O, K, special)
        lo, hi = magnitudes(rng, O, special)
        weights = kernels.prepare_fv5(packed, lo, hi, O, K)
        xq, xs = kernels.quantize(x, N, K)
        return kernels.fv5_gemm(xq, xs, N, weights, bias=bias).tobytes()
    if op == "int8_gemm":
        w = int8_values(rng, O * K)
        if special:
            for k in range(K):
                w[k] = 0x80            # row 0 all -128: the full int8 range
        ws = array("f", [(1 + rng.randrange(256)) * 2.0 ** -14 for _ in range(O)])
        xq, xs = kernels.quantize(x, N, K)
        return kernels.int8_gemm(xq, xs, N, w, ws, O, K, bias=bias).tobytes()
    raise ValueError(f"unknown op {op}")


def digests(tier: str = "auto", only: str | None = None) -> dict:
    """{"tier": ..., "cases": {name: sha256 hex}} for the sweep (optionally names containing
    `only`)."""
    kernels = Kernels(tier)
    table = {}
    for name, op, params in cases():
        if only and only not in name:
            continue
        table[name] = hashlib.sha256(run_case(kernels, name, op, params)).hexdigest()
    return {"tier": kernels.tier, "cases": table}


def combined_digest(table: dict) -> str:
    """One sha256 over a digests() table's cases (sorted): equal tables, equal digests."""
    text = "\n".join(f"{k} {v}" for k, v in sorted(table["cases"].items()))
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv=None) -> int:
    import argparse
    import json
    import sys
    parser = argparse.ArgumentParser(prog="python3 -m checks.parity",
                                     description="run the deterministic kernel sweep and print digests")
    parser.add_argument("--tier", default="auto")
    parser.add_argument("--only", help="run only cases whose name contains this")
    parser.add_argument("--json", action="store_true", help="print the digest table as JSON")
    args = parser.parse_args(argv)
    table = digests(args.tier, args.only)
    if args.json:
        json.dump(table, sys.stdout, indent=1)
        print()
    else:
        print(f"tier {table['tier']}: {len(table['cases'])} cases, combined sha256 {combined_digest(table)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
