"""A cost model of the WebGPU tier's shaders: integer operations per dispatch,
counted from each shader's loop structure and the per-operation costs below, so that the work
of an encode can be read per kernel and checked against a per-kernel time (harness/bench_webgpu.py
prints both; harness/webgpu_profile.py records the dispatches and times them).

    python3 -m harness.webgpu_cost [--size full|default|tiny] [--seconds 10]

records one encode's dispatches on this machine's adapter without running them (a dry
DispatchProfile: the passes are built exactly as the executor builds them, with their real
shapes, and counted instead of submitted) and prints the operations per kernel.

What one "operation" is: one WGSL integer or logical operation of a shader's path for finite,
normal operands (an add, multiply, shift, mask, compare, select, min/max, a storage or
workgroup load or store with its address arithmetic), and dot4I8Packed. An integer division
or remainder counts as one operation too (GPUs emulate division by a runtime value: a known
undercount, not priced apart). The
soft-float primitives' costs (SOFT) are their functions' operation counts on that path, written
down by reading kernels/webgpu/softfloat.wgsl, silu.wgsl and softdouble.wgsl; composites
(expq, sigmoid, SiLU, the GEMM epilogue) are summed from their calls here, not stated apart.
`--check` times the soft-float operations one by one on the adapter (softfloat_check.wgsl,
65,536 elements each) and prints the measured time per element beside the stated costs: on a CPU
emulation the ratios should roughly follow.

The per-dispatch functions follow the shaders' loops: invocations that do work x trips x the
work of one trip; idle invocations (past the matrix) and barriers are not counted. They are
estimates within some tens of percent, good for where the work goes and for totals; they are
not instruction counts of any compiler's output.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHADERS = ROOT / "kernels" / "webgpu"


# Soft-float primitives: operations on the finite, normal path (see the module docstring).
SOFT = {
    "sf_mul": 52,             # normal operands and result (sf_mul_normal): fields and range test,
                              # 24x24 product from 16-bit limbs, normalise, round, pack (sf_mul_any: 75)
    "sf_add": 52,             # two normal operands (sf_add to sf_add_ordered): fields and range test, order,
                              # align with jam, add or subtract, normalise, round, pack (sf_add_any: 72)
    "sf_div_finite": 105,     # unpack, round, pack (~30) + sf_div_sig's path for an estimate within
                              # 2^27 of the quotient (~55 WGSL operations, and two f32 divisions
                              # priced at 10 each: GPUs divide in several instructions); the long
                              # division it falls back to (26 steps of 6) is not priced
    "sf_div": 120,            # sf_div_finite + the special-case tests
    "sf_from_i32_scaled": 30,
    "sf_rint": 20,            # sf_rint_small / sf_rint_clamp127
    "sf_sqrt": 300,           # 27 digit-by-digit steps
    "sd_add": 136, "sd_mul": 187, "sd_div": 2120,     # soft-double, as the review counted
    "sd_from_f32": 20, "sd_to_f32": 40, "u64_add": 6,
}


def expq() -> float:
    """silu.wgsl sf_expq: the range tests, x * log2(e) 2^16 (one soft-float multiply), its rint,
    k and f, five Horner steps of 32-bit integer arithmetic (two products, three shifts, a mask,
    two adds each) and the bits of the result."""
    return 10 + SOFT["sf_mul"] + SOFT["sf_rint"] + 4 + 5 * 8 + 4


def sigmoid() -> float:
    return expq() + SOFT["sf_add"] + SOFT["sf_div"]


def silu() -> float:
    return sigmoid() + SOFT["sf_mul"]


def dequant(bias: bool) -> float:
    """sf_dequant: ((float)acc * xs) * ws (+ bias)."""
    return SOFT["sf_from_i32_scaled"] + 2 * SOFT["sf_mul"] + (SOFT["sf_add"] if bias else 0)


def wgsl_const(file: str, name: str) -> int:
    """A `const NAME: u32 = <int>u;` of a shader (so the model follows a changed tile shape)."""
    text = (SHADERS / f"{file}.wgsl").read_text()
    found = re.search(rf"const {name}: u32 = (\d+)u;", text)
    if found is None:
        raise KeyError(f"{name} is not an integer constant of kernels/webgpu/{file}.wgsl")
    return int(found.group(1))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# -- one function per module: (params, packed_dot) -> operations ---------------------

def quantize_act(p, packed):
    N, K = p[:2]
    per_row = 2 * K + 2 * SOFT["sf_div_finite"] + K * (SOFT["sf_mul"] + SOFT["sf_rint"] + 3)
    return N * per_row


def gemm(p, packed, fused_decode: bool):
    """gemm_tile.wgsl (+ fv5_weights.wgsl when fused_decode): per workgroup and K chunk, the
    staging of 64 tokens' and 64 rows' words, the fused decode, and every busy invocation's 4x8
    block of dot4 + add over the chunk's words; then the epilogue once per output."""
    N, O, K, flags = p[:4]
    rows, tokens = wgsl_const("gemm_tile", "GEMM_ROWS"), wgsl_const("gemm_tile", "GEMM_TOKENS")
    chunk_kb = wgsl_const("gemm_tile", "GEMM_CHUNK_KB")
    chunk_words = 2 * chunk_kb
    chunks = cdiv(K // 8, chunk_kb)
    workgroups = cdiv(O, rows) * cdiv(N, tokens)
    # per pair of words (one kb, a vec2 load): index split, bounds, the load and its address,
    # two stores and their addresses
    stage = (tokens + rows) * chunk_kb * 14
    if fused_decode:
        codes = chunk_kb * 4 // 3                         # code vectors per chunk
        stage = tokens * chunk_kb * 14 + (rows // 8) * (codes // 8 * 28) * 10
        stage += (rows // 8) * codes * 4 * (15 + 3 * (12 + fv5_word()))
    # per column word, dot4_<variant>.wgsl word_products: 32 dot4I8Packed, or (plain) the
    # twelve words unpacked once (7 shifts each) and 32 dot products of four lanes (4 multiplies
    # and 3 adds)
    products = 32 if packed else 12 * 7 + 32 * 7
    # the busy invocations (first row and token inside the matrix: gemm_tile.wgsl `busy`), each
    # owning 4 rows x 8 tokens, per word 3 loads (a vec4 of four rows' words, two of four
    # tokens') + the products + 32 adds + addressing
    sub_rows, sub_tokens = rows // 4, tokens // 8
    busy = (sum(min(sub_rows, cdiv(O - o0, 4)) for o0 in range(0, O, rows))
            * sum(min(sub_tokens, cdiv(N - n0, 8)) for n0 in range(0, N, tokens)))
    macs = busy * chunks * chunk_words * (3 + products + 32 + 5)
    return workgroups * chunks * stage + macs + gemm_epilogue(N, O, flags)


def gemm_epilogue(N: int, O: int, flags: int) -> float:
    """gemm_tile.wgsl's epilogue, once per output: dequantisation (+ bias), SiLU when asked."""
    return N * O * (dequant(bool(flags & 1)) + (silu() if flags & 2 else 0) + 6)


def fv5_word() -> float:
    """One word (four weights) of fv5_codes.wgsl: a third of fv5_digits (the three digit words
    of four codes: two halves, c / 5 and c / 25 by multiply, shift and mask, the remainders,
    the halves merged: 29), picking the word's digit (2), its row's grid words (one load), and
    fv5_levels (three bit masks, the +-q choice, four byte masks and their merge: 21)."""
    return 29 / 3 + 2 + 1 + 21


def fv5_decode(p, packed):
    """fv5_decode.wgsl: per (block, group, quarter) seven loads and the top-bit gather, then
    eight codes x three vectors, each a word of four weights with its row and column."""
    from engine.executors.webgpu.device import fv5_decode_items
    return fv5_decode_items(*p[:2]) * (7 * 6 + 8 * 3 * (12 + fv5_word()))


def layer_norm(p, packed):
    """layer_norm.wgsl per row: the largest field, the exact int64 sum of x, the mean (a double
    over the integer D), the largest field of (x - mean)^2 (the double square, kept in
    workgroup memory for the first NORM_KEPT elements) and its exact sum (the kept square read
    back, or computed again past NORM_KEPT), the variance, 1/sqrt, and the output's four float
    steps."""
    N, D = p[:2]
    threads = wgsl_const("layer_norm", "NORM_THREADS")
    kept = min(D, wgsl_const("layer_norm", "NORM_KEPT"))
    # norm_square's path for x and mean at most 7 binades apart (the common case; a GPU's wave
    # runs only it when all its elements take it): fields and alignment in 32 bits (~20), one
    # 32x32 product from 16-bit limbs (~16), the leading bit and the shift (~10), sd_round_pack
    # (~25). (Up to 29 binades the 64-bit difference and sd_mul_sig cost ~180.)
    square = 75
    per_element = 4 + (25 + SOFT["u64_add"] + 1) + (square + 4 + 4) + (30 + SOFT["u64_add"] + 4) \
        + (2 * SOFT["sf_add"] + 2 * SOFT["sf_mul"] + 4)
    # the average: the int64 to double (~60), sd_div_small (six 16-bit steps of a u32 division,
    # ~10 each as GPUs emulate it, and sd_round_pack: ~100 in all), the rounding to float
    average = 100 + SOFT["sd_to_f32"] + 60
    per_row = (D * per_element + (D - kept) * square + 2 * average
               + SOFT["sf_sqrt"] + SOFT["sf_div"] + SOFT["sf_add"] + threads * threads.bit_length() * 4 * 10)
    return N * per_row


def attention_blocks(p, packed):
    """attention_blocks.wgsl: one invocation per operand vector reads it once (its largest
    field; q + u and q + v cost a soft-float add: the C's 1.0f * u is folded, see the shader),
    stores the values, then reads them back for the mantissas."""
    T, D, dk, H = p[:4]
    read_q = SOFT["sf_add"] + 7
    mantissa = 15 + 2
    elements = {"qu": (H * T * dk, read_q), "qv": (H * T * dk, read_q), "k": (H * T * dk, 5),
                "p": (H * (2 * T - 1) * dk, 5), "v": (H * dk * T, 5)}
    work = sum(n * (cost + 6 + mantissa) for n, cost in elements.values())
    vectors = H * (3 * T + (2 * T - 1) + dk)
    return work + vectors * 20


def attention_scores(p, packed):
    """attention_scores.wgsl: 32x32 tiles, 4x4 outputs per invocation; per eight d (one packed
    vec4 per row): 19 vec4 loads (four qu, four qv, four k, the seven p of its band) with their
    addresses, their 152 unpackings (a shift each, two for the low halves), 256 multiplies and
    256 adds; staging per chunk of 32 d: each packed vec4 of qu, qv, k (32 rows) and p (63 rows)
    from two storage vec4 loads, eight packings; the epilogue two scaled conversions, an add and
    the division by sqrt(dk) per score."""
    T, dk, H = p[:3]
    tile, chunk = wgsl_const("attention_scores", "SCORE_TILE"), wgsl_const("attention_scores", "SCORE_CHUNK")
    groups = chunk // 8
    workgroups = H * cdiv(T, tile) ** 2
    chunks = cdiv(dk, chunk)
    stage = (3 * tile + 2 * tile - 1) * groups * (2 * 4 + 8 * 3 + 8)
    compute = 64 * groups * (19 * 2 + 152 * 1.5 + 512)
    per_chunk = stage + compute
    epilogue = 2 * SOFT["sf_from_i32_scaled"] + SOFT["sf_add"] + SOFT["sf_div"] + 16
    return workgroups * chunks * per_chunk + H * T * T * epilogue


def attention_softmax(p, packed):
    """attention_softmax.wgsl per score: the ordered-key max, exp(x - max) with its field, the
    mantissa and its sum; per row three 16-wide trees (four levels)."""
    rows, T = p[:2]
    per_score = 10 + (SOFT["sf_add"] + expq() + 8) + (15 + 4)
    return rows * (T * per_score + 3 * 16 * 4 * 8)


def attention_context(p, packed):
    """attention_context.wgsl: 32x32 tiles of (i, d), 4x4 per invocation; per eight j (one packed
    vec4 per row): 8 vec4 loads, their 64 unpackings, 128 multiplies, 128 adds; staging per chunk
    of 32 j: each packed vec4 of weights from eight guarded storage loads, of values from two
    storage vec4 loads, eight packings; the epilogue a scaled conversion, (float)total, a division."""
    T, D, dk, H = p[:4]
    tile, chunk = wgsl_const("attention_context", "CTX_TILE"), wgsl_const("attention_context", "CTX_CHUNK")
    groups = chunk // 8
    workgroups = H * cdiv(dk, tile) * cdiv(T, tile)
    chunks = cdiv(T, chunk)
    stage = tile * groups * ((8 * 4 + 8 * 3 + 4) + (2 * 4 + 8 * 3 + 4))
    compute = 64 * groups * (8 * 2 + 64 * 1.5 + 256)
    per_chunk = stage + compute
    epilogue = 2 * SOFT["sf_from_i32_scaled"] + SOFT["sf_div"] + 12
    return workgroups * chunks * per_chunk + T * H * dk * epilogue


def glu(p, packed):
    """glu.wgsl per element of g [T][Dp]: a sigmoid and a product (padding columns a store)."""
    T, D, Dp = p[:3]
    return T * D * (sigmoid() + SOFT["sf_mul"] + 8) + T * (Dp - D) * 4


def dwconv_silu(p, packed):
    """dwconv_silu.wgsl per output: K taps of multiply + add (the tap's and the input's loads and
    addresses shared by four channels: ~2 a tap and channel), the bias add and SiLU; per
    invocation of four channels the index split and the taps' range (~12)."""
    T, D, K, Dp = p[:4]
    tap = SOFT["sf_mul"] + SOFT["sf_add"] + 2
    return T * Dp * (K * tap + SOFT["sf_add"] + silu() + 3) + T * (Dp // 4) * 12


def conv_rows(p, packed):
    """conv_rows.wgsl per block of W values: the largest field (a strided load, the ReLU's select,
    shift, mask, max: ~8 a value), then each mantissa (the load again, block_mantissa's fields,
    shift and rounding: ~16) and its store."""
    R, W, L, Lp = p[0], p[1], p[2], p[8]
    return R * L * (W * (8 + 16 + 3) + 10) + R * (Lp - L) * (W + 4)


def conv_s2(p, packed):
    """conv_s2.wgsl per invocation of four channels: index split (~12), per row inside the map
    its units and the tests (~8 + 4 a channel) and three taps of two vector loads with their
    addresses (~8) and per channel a multiply and an add (2), the join (per row and channel a
    shift by the capped unit difference and an add: ~5); per channel the scaled conversion of
    the i32 sum, the bias add, ReLU and the store."""
    n = p[3]
    per_channel = 3 * (4 + 3 * 2 + 5) + SOFT["sf_from_i32_scaled"] + SOFT["sf_add"] + 5
    return n * (12 + 3 * (8 + 3 * 8) + 4 * per_channel)


MODULE_COSTS = {
    "quantize_act": quantize_act,
    "int8_gemm": lambda p, packed: gemm(p, packed, fused_decode=False),
    "fv5_gemm": lambda p, packed: gemm(p, packed, fused_decode=True),
    "fv5_decode": fv5_decode,
    "layer_norm": layer_norm,
    "attention_blocks": attention_blocks,
    "attention_scores": attention_scores,
    "attention_softmax": attention_softmax,
    "attention_context": attention_context,
    "add_scaled": lambda p, packed: p[0] * (SOFT["sf_mul"] + SOFT["sf_add"] + 5),
    "copy_values": lambda p, packed: p[0] * 3,
    "flatten_relu": lambda p, packed: p[3] * 14,
    "glu": glu,
    "dwconv_silu": dwconv_silu,
    "conv_rows": conv_rows,
    "conv_s2": conv_s2,
}

# kernels grouped as the issue's criterion reads them: the GEMMs' integer products against the rest
GEMM_MODULES = ("int8_gemm", "fv5_gemm")


def dispatch_ops(module: str, params: tuple, packed_dot: bool = True) -> float:
    """The operations of one dispatch (KeyError for a module the model does not know)."""
    if module not in MODULE_COSTS:
        raise KeyError(f"the cost model has no formula for module {module!r} (harness/webgpu_cost.py)")
    return float(MODULE_COSTS[module](params, packed_dot))


def gemm_split(module: str, params: tuple, packed_dot: bool = True) -> tuple:
    """(the GEMM's integer products and staging, its epilogue) of a GEMM dispatch."""
    epilogue = gemm_epilogue(*params[:2], params[3])
    return dispatch_ops(module, params, packed_dot) - epilogue, epilogue


def by_module(records, packed_dot: bool = True) -> dict:
    """{module: {"dispatches", "seconds", "ops"}} of DispatchProfile records, in order seen."""
    from harness.webgpu_profile import group_by_module
    rows = group_by_module(records)
    for row in rows.values():
        row["ops"] = 0.0
    for r in records:
        rows[r.module]["ops"] += dispatch_ops(r.module, r.params, packed_dot)
    return rows


def split_totals(records, packed_dot: bool = True) -> dict:
    """{"gemm_products": ops, "gemm_epilogues": ops, "other": ops, "total": ops} of the records
    (a GEMM's epilogue is counted apart from its products; its time is not)."""
    products = epilogues = other = 0.0
    for r in records:
        if r.module in GEMM_MODULES:
            a, b = gemm_split(r.module, r.params, packed_dot)
            products, epilogues = products + a, epilogues + b
        else:
            other += dispatch_ops(r.module, r.params, packed_dot)
    return {"gemm_products": products, "gemm_epilogues": epilogues, "other": other,
            "total": products + epilogues + other}


def table(rows: dict) -> list:
    """Markdown lines: kernel, dispatches, G operations, share, and ms and ps per operation
    where timed."""
    total = sum(r["ops"] for r in rows.values()) or 1.0
    timed = any(r["seconds"] for r in rows.values())
    head = "| kernel | dispatches | G ops | share |" + (" ms | ps per op |" if timed else "")
    out = [head, "|---|---:|---:|---:|" + ("---:|---:|" if timed else "")]
    for module, r in sorted(rows.items(), key=lambda kv: -kv[1]["ops"]):
        line = f"| {module} | {r['dispatches']} | {r['ops'] / 1e9:.2f} | {100 * r['ops'] / total:.1f}% |"
        if timed:
            per = 1e12 * r["seconds"] / r["ops"] if r["ops"] else 0.0
            line += f" {1e3 * r['seconds']:.1f} | {per:.1f} |"
        out.append(line)
    seconds = sum(r["seconds"] for r in rows.values())
    last = f"| total | {sum(r['dispatches'] for r in rows.values())} | {total / 1e9:.2f} | 100% |"
    if timed:
        last += f" {1e3 * seconds:.1f} | {1e12 * seconds / total:.1f} |"
    out.append(last)
    return out


# -- recording an encode's dispatches ---------------------------------------------------------

def record_encode(path: Path, audio, device):
    """(DispatchProfile of one encode's passes, recorded without submitting any, GpuKernels)."""
    from engine.executors.webgpu.device import GpuKernels
    from engine.transcribe import Engine
    from harness.webgpu_profile import DispatchProfile
    gpu = GpuKernels(device)
    engine = Engine.open(path, "scalar", gpu=gpu)
    profile = DispatchProfile(gpu, dry=True)
    engine.encode(audio)                       # what it reads back is meaningless: nothing ran
    return profile, gpu


def check_soft_costs(device, n: int = 1 << 16, reps: int = 64) -> list:
    """Markdown lines: the GPU time of each soft-float operation on this adapter
    (softfloat_check.wgsl over n normal inputs, each a chain of `reps` dependent operations;
    timestamp queries where the device has them, less the same pass with an operation id that
    computes nothing; median of 3) beside the stated costs: where ps per stated op is about
    even, the stated costs' ratios hold."""
    import random
    from array import array
    from engine.executors.webgpu.device import FLOAT_OPS, GpuKernels, element_groups
    from harness.webgpu_profile import DispatchProfile
    gpu = GpuKernels(device)
    profile = DispatchProfile(gpu)
    rng = random.Random(5)
    a = gpu.upload(array("f", [rng.uniform(-8.0, 8.0) or 1.0 for _ in range(n)]))
    b = gpu.upload(array("f", [rng.uniform(0.5, 4.0) for _ in range(n)]))      # divisors, addends
    ints = gpu.upload(array("i", [rng.getrandbits(20) for _ in range(n)]))
    out = gpu.storage(4 * n)
    groups = element_groups(n)

    def seconds(op_id: int, x) -> float:
        times = []
        for _ in range(3):
            profile.clear()
            gpu.run([("softfloat_check", [gpu.uniform(op_id, n, reps), x, b, b, out], groups)])
            times.append(profile.records[-1].seconds)
        return sorted(times)[1]

    stated = {"mul": SOFT["sf_mul"], "add": SOFT["sf_add"], "from_i32": SOFT["sf_from_i32_scaled"],
              "div": SOFT["sf_div_finite"], "expq": expq(), "sigmoid": sigmoid(), "silu": silu()}
    empty = seconds(255, a)                       # no such operation: loads, switch, store
    lines = [f"soft-float operations on this adapter, {n} elements x {reps} each (an empty pass: "
             f"{1e9 * empty / n / reps:.2f} ns per operation, subtracted):",
             "| operation | stated ops | ns per operation | ps per stated op |", "|---|---:|---:|---:|"]
    for op, cost in stated.items():
        per = max(0.0, seconds(FLOAT_OPS[op], ints if op == "from_i32" else a) - empty) / n / reps
        lines.append(f"| {op} | {cost:.0f} | {1e9 * per:.2f} | {1e12 * per / cost:.1f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.webgpu_cost")
    parser.add_argument("--size", choices=("full", "default", "tiny"), default="full")
    parser.add_argument("--seconds", type=float, default=10, help="audio for the full-size model")
    parser.add_argument("--check", action="store_true",
                        help="also time the soft-float operations one by one on the adapter")
    args = parser.parse_args(argv)
    from harness.webgpu_adapter import NoAdapter, describe, model_and_audio, open_device
    try:
        device, info = open_device()
    except NoAdapter as e:
        print(f"no adapter: {e}")
        return 2
    path, audio = model_and_audio(args.size, args.seconds)
    profile, gpu = record_encode(path, audio, device)
    rows = by_module(profile.records, gpu.packed_dot)
    split = split_totals(profile.records, gpu.packed_dot)
    print(f"cost model: one encode of {len(audio) / 16000:g} s, model {path.name} "
          f"(dispatches recorded on {describe(info)}, not run)")
    print("\n".join(table(rows)))
    print(f"GEMM integer products + staging {split['gemm_products'] / 1e9:.1f} G, GEMM epilogues "
          f"{split['gemm_epilogues'] / 1e9:.1f} G, everything else {split['other'] / 1e9:.1f} G; "
          f"total {split['total'] / 1e9:.1f} G")
    if args.check:
        print("\n".join(check_soft_costs(device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
