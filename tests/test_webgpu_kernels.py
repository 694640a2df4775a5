"""The WebGPU tier's kernels (kernels/webgpu/*.wgsl through engine/executors/webgpu/device.py) against the C
scalar tier, bit for bit: the integer soft-float against the host's IEEE float32, activation
quantisation, the fv5 GEMM (decoding the packed blocks in the shader) and the int8 GEMM on
seeded shape sweeps, for both dot-product variants; and mutations of the shaders that the
comparisons must catch.

Natively through PyPI wgpu (wgpu-native) on any Vulkan adapter; here Mesa lavapipe, a CPU
emulation (build.py setup installs it). Skipped, saying why, without wgpu or an adapter."""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels import KernelError, Kernels
from engine.executors.webgpu.device import MODULES, SHADER_DIR, GpuKernels, GpuLinear, fv5_grid_words, shader_source
from modeltools.fv5 import pack_b5x3t7
from test_kernels_native import random_acts, random_fv5
from test_kernels_native import test_quantize_names_the_nonfinite_row as native_nonfinite_row_check

pytestmark = pytest.mark.webgpu

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")

# O, K, N: the brief's awkward sizes, every fv5 tail shape (T % 8 and the panel vectors used by
# the last code vector) on small blocks, and the model's sizes; N up to 64 (one tile of tokens)
# decodes the blocks in the GEMM (fv5_weights.wgsl), N above 64 in the decode pass
# (fv5_decode.wgsl), so both see every tail shape.
LAYOUT_K = tuple(range(8, 200, 8))
SWEEP = ([(O, K, N) for O in (8, 40) for K in (8, 24, 1032) for N in (1, 7, 33, 67)]
         + [(8, K, N) for K in LAYOUT_K if K not in (8, 24) for N in (3, 67)]
         + [(1024, 1032, 7), (1024, 1024, 67), (16, 4096, 9)])


@pytest.fixture(scope="module")
def device():
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:         # noqa: BLE001 - no Vulkan loader or driver
        pytest.skip(f"no WebGPU adapter: {e} (build.py setup installs mesa-vulkan-drivers)")
    if adapter is None:
        pytest.skip("no WebGPU adapter (build.py setup installs mesa-vulkan-drivers: lavapipe)")
    return adapter.request_device_sync()


@pytest.fixture(scope="module", params=[True, False], ids=["dot4I8Packed", "plain-i32"])
def gpu(device, request):
    if request.param and not GpuKernels(device).packed_dot:
        pytest.skip("this adapter refuses dot4I8Packed (packed_4x8_integer_dot_product)")
    return GpuKernels(device, packed_dot=request.param)


@pytest.fixture(scope="module")
def scalar():
    return Kernels("scalar")


def bits(values) -> np.ndarray:
    return np.frombuffer(bytes(memoryview(values).cast("B")), np.uint32)


def differing(got, want) -> int:
    return int((bits(got) != bits(want)).sum())


# ---------------------------------------------------------------------------------------------
# the soft-float against numpy's float32 (IEEE: round to nearest even, subnormals kept)

def special_f32(rng, n):
    """Bit patterns over the whole range with the awkward ones over-represented: zeros,
    subnormals, the normal/subnormal border, near overflow, infinities, ties."""
    u = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    kinds = rng.integers(0, 8, n)
    exp = np.where(kinds == 1, 0, np.where(kinds == 2, rng.integers(1, 4, n),
                   np.where(kinds == 3, rng.integers(250, 255, n), (u >> 23) & 0xFF)))
    frac = np.where(kinds == 4, u & 0x7FF000, u & 0x7FFFFF)          # short significands: ties
    out = (u & 0x80000000) | (exp.astype(np.uint32) << 23) | frac.astype(np.uint32)
    out[kinds == 5] = (u[kinds == 5] & 0x80000000) | 0x7F800000      # infinities
    out[kinds == 6] &= 0x80000000                                    # zeros
    return out.astype(np.uint32)


def near_pairs(rng, n):
    """b close to -a (cancellation in a + b) or to a (carries): exponents within 0..2."""
    a = special_f32(rng, n)
    a = a[(a & 0x7F800000) != 0x7F800000]
    delta = rng.integers(-(1 << 25), 1 << 25, a.size).astype(np.int64)
    b = ((a.astype(np.int64) & 0x7FFFFFFF) + delta).clip(0, 0x7F7FFFFF).astype(np.uint32)
    b |= np.where(rng.integers(0, 2, a.size) == 1, np.uint32(0x80000000), np.uint32(0))
    return a, b


def assert_same_floats(got, want, what):
    got, want = np.asarray(got, np.uint32), np.asarray(want, np.uint32)
    nan_g = (got & 0x7FFFFFFF) > 0x7F800000
    nan_w = (want & 0x7FFFFFFF) > 0x7F800000
    bad = np.flatnonzero((got != want) & ~(nan_g & nan_w))
    assert not bad.size, (f"{what}: {bad.size} of {got.size} differ; first: inputs #{bad[0]} "
                          f"got {got[bad[0]]:#010x} want {want[bad[0]]:#010x}")


def f32(u):
    return np.asarray(u, np.uint32).view(np.float32)


SOFTFLOAT_CASES = 1 << 18


SOFTFLOAT_OPS = ["mul", "add", "div", "div_any", "from_i32", "rint_clamp127", "dequant", "silu", "expq", "sigmoid"]


def exp_inputs(rng, n):
    """Inputs of pk_expq and SiLU: the whole range, its working range densely, a few ulps around
    the thresholds (+inf above 88.72, 0 below -88 and where k < -126) and around x log2(e) = k
    (where the Q16 argument's integer part steps) and its ties (x log2(e) 2^16 = j + 1/2), either
    sign, every bit pattern of both signs."""
    edges = np.float32([88.72, 88.0, 87.33654, 87.0, 0.0, 1e-30])
    steps = np.arange(-127, 129) / np.float64(1.4426950408889634)
    ties = (rng.integers(-2 ** 22, 2 ** 22, 256) + 0.5) / np.float64(94548.4609375)
    centres = np.concatenate([edges, -edges, steps.astype(np.float32), ties.astype(np.float32)]).view(np.int32)
    near = (centres[:, None] + np.arange(-24, 25, dtype=np.int32)[None, :]).ravel().view(np.uint32)
    return np.concatenate([special_f32(rng, n // 2), rng.uniform(-110, 110, n // 2).astype(np.float32).view(np.uint32),
                           near]).astype(np.uint32)


def project_math(scalar, op, a):
    """The C scalar tier's SiLU (activation.h), pk_sigmoidq or pk_expq of bit patterns a, float32."""
    x = f32(a).copy()
    if op == "silu":
        return np.asarray(scalar.silu(x, x.size), np.float32)
    return np.asarray(scalar.math("sigmoidq" if op == "sigmoid" else "expq", x, x.size), np.float32)


@pytest.mark.parametrize("op", SOFTFLOAT_OPS)
def test_softfloat_matches_ieee_float32(gpu, scalar, op):
    if not gpu.packed_dot:
        pytest.skip("the soft-float does not depend on the dot-product variant")
    rng = np.random.default_rng(SOFTFLOAT_OPS.index(op))
    n = SOFTFLOAT_CASES
    with np.errstate(all="ignore"):
        if op in ("silu", "expq", "sigmoid"):       # the project's functions, not IEEE ones: the C scalar tier's
            a = exp_inputs(rng, n)
            got, want = gpu.float_op(op, a), project_math(scalar, op, a)
        elif op in ("mul", "add"):
            a, b = special_f32(rng, n), special_f32(rng, n)
            if op == "add":
                pa, pb = near_pairs(rng, n)
                a, b = np.concatenate([a, pa]), np.concatenate([b, pb])
            want = (f32(a) * f32(b)) if op == "mul" else (f32(a) + f32(b))
            got = gpu.float_op(op, a, b)
        elif op == "div":
            a, b = division_cases(rng, n)
            got, want = gpu.float_op(op, a, b), f32(a) / f32(b)
        elif op == "div_any":           # zeros, infinities and NaN included
            a, b = special_f32(rng, n), special_f32(rng, n)
            got, want = gpu.float_op(op, a, b), f32(a) / f32(b)
        elif op == "from_i32":
            a = np.concatenate([rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64),
                                rng.integers(-2 ** 26, 2 ** 26, n, dtype=np.int64),
                                [0, 1, -1, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 31), 2 ** 31 - 1]]).astype(np.int32)
            got, want = gpu.float_op(op, a.view(np.uint32)), a.astype(np.float32)
        elif op == "rint_clamp127":
            a = np.concatenate([(rng.standard_normal(n) * 2.0 ** rng.integers(-3, 9, n)).astype(np.float32),
                                (rng.integers(-600, 600, n) / np.float32(4)).astype(np.float32),  # halves
                                np.float32([0.5, -0.5, 1.5, 2.5, 126.5, 127.5, -127.5, 128, -3e38, 1e-45])])
            got = np.asarray(gpu.float_op(op, a.view(np.uint32)), np.uint32).view(np.int32)
            np.testing.assert_array_equal(got, np.clip(np.rint(a), -127, 127).astype(np.int32))
            return
        else:   # dequant: ((float)acc * xs) * ws, the GEMM epilogue, and with a bias of 1.0f
            acc = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
            acc[: n // 2] >>= rng.integers(0, 31, n // 2).astype(np.int32)
            xs, ws = special_f32(rng, n), special_f32(rng, n)
            got = gpu.float_op(op, acc.view(np.uint32), xs, ws)
            want = (acc.astype(np.float32) * f32(xs)) * f32(ws)
            assert_same_floats(got, np.asarray(want, np.float32).view(np.uint32), "dequant")
            got = gpu.float_op("dequant_bias1", acc.view(np.uint32), xs, ws)
            want = want + np.float32(1)
    assert_same_floats(got, np.asarray(want, np.float32).view(np.uint32), op)


def division_cases(rng, n):
    """Finite non-zero (a, b) bit patterns: special_f32's, and exact quotients (a = b c with
    short significands: a remainder of zero) across the exponent range."""
    a, b = special_f32(rng, n), special_f32(rng, n)
    ok = ((a & 0x7FFFFFFF) - 1 < 0x7F7FFFFF) & ((b & 0x7FFFFFFF) - 1 < 0x7F7FFFFF)
    short = lambda: (rng.integers(1 << 11, 1 << 12, n // 4) * 2.0 ** rng.integers(-60, 50, n // 4))
    bb, c = short(), short() * rng.choice([-1.0, 1.0], n // 4)
    ea = (bb * c).astype(np.float32).view(np.uint32)
    return np.concatenate([a[ok], ea]), np.concatenate([b[ok], bb.astype(np.float32).view(np.uint32)])


# softfloat.wgsl's division takes an f32 estimate of the quotient and proves or discards it in
# integers: estimates a few units off, thousands of units off, and corrections one or two units
# off must all give the same bits (the last two by the correction step and by the long division).
DIV_ESTIMATE = "f32(ma) / f32(mb) * 33554432.0"
DIV_CORRECTION = "floor(f32(r) / f32(mb))"
WRONG_ESTIMATES = {
    "estimate-a-few-units-high": (DIV_ESTIMATE, "f32(ma) / f32(mb) * 33554440.0"),
    "estimate-thousands-low": (DIV_ESTIMATE, "f32(ma) / f32(mb) * 33550000.0"),
    "correction-one-high": (DIV_CORRECTION, "(floor(f32(r) / f32(mb)) + 1.0)"),
    "correction-two-low": (DIV_CORRECTION, "(floor(f32(r) / f32(mb)) - 2.0)"),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_ESTIMATES))
def test_division_bits_do_not_depend_on_the_f32_estimate(device, wrong):
    old, new = WRONG_ESTIMATES[wrong]
    assert old in (SHADER_DIR / "softfloat.wgsl").read_text()
    patched = GpuKernels(device, packed_dot=False, patch=lambda source: source.replace(old, new))
    a, b = division_cases(np.random.default_rng(7), 1 << 16)
    with np.errstate(all="ignore"):
        want = f32(a) / f32(b)
    assert_same_floats(patched.float_op("div", a, b), np.asarray(want, np.float32).view(np.uint32), wrong)


# ---------------------------------------------------------------------------------------------
# activation quantisation

@pytest.mark.parametrize("N, K", [(1, 8), (7, 24), (33, 1032), (3, 64), (375, 64), (2, 4096)])
@pytest.mark.parametrize("extreme", [False, True])
def test_quantize_bit_identical_to_scalar(gpu, scalar, N, K, extreme):
    x = random_acts(np.random.default_rng(N * K + extreme), N, K, extreme)
    if extreme and N > 5:
        x[4] = np.float32(2.0 ** -100) * np.sign(x[4])              # amax at the tiny threshold
        x[5] = np.float32(2.0 ** -100) * np.float32(0.99999994) * np.sign(x[5])  # just below it
    xq, xs = gpu.quantize(x, N, K)
    rq, rs = scalar.quantize(x, N, K)
    assert bytes(xq) == bytes(rq)
    assert differing(xs, rs) == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_quantize_names_the_nonfinite_row(gpu, bad):
    native_nonfinite_row_check(gpu, bad)          # the native tiers' test, on the device


# ---------------------------------------------------------------------------------------------
# GEMMs

def fv5_linear(rng, O, K, bias=True, special=False, scale=1.0):
    codes, lo, hi = random_fv5(rng, O, K, special)
    lo, hi = (lo * np.float32(scale)).astype(np.float32), (hi * np.float32(scale)).astype(np.float32)
    lo = np.minimum(lo, hi)
    b = rng.standard_normal(O).astype(np.float32) if bias else None
    return pack_b5x3t7(codes), lo, hi, b


def fv5_differences(gpu, scalar, O, K, N, seed, bias, special=False, scale=1.0, act_scale=1.0,
                    resident=False):
    """Outputs of the WebGPU fv5 linear (quantise + GEMM) that differ from the C scalar tier."""
    rng = np.random.default_rng(seed)
    packed, lo, hi, b = fv5_linear(rng, O, K, bias, special, scale)
    x = (random_acts(rng, N, K, extreme=special) * np.float32(act_scale)).astype(np.float32)
    lin = GpuLinear(gpu, "fv5", O, K, packed, lo, hi, b, kernels=scalar, resident=resident)
    assert lin.resident == resident
    y = lin(x, N)
    xq, xs = scalar.quantize(x, N, K)
    want = scalar.fv5_gemm(xq, xs, N, scalar.prepare_fv5(packed, lo, hi, O, K), bias=b)
    return differing(y, want)


@pytest.mark.parametrize("O, K, N", SWEEP)
def test_fv5_gemm_bit_identical_to_scalar(gpu, scalar, O, K, N):
    for bias in (True, False):
        for special in (False, True):
            seed = 7 * O + 3 * K + N + bias + 2 * special
            assert fv5_differences(gpu, scalar, O, K, N, seed, bias, special) == 0, (bias, special)


@pytest.mark.parametrize("O, K, N", [(8, 24, 1), (40, 1032, 7), (40, 1032, 67), (8, 184, 40), (1024, 1024, 67)])
def test_fv5_resident_weights_bit_identical_to_scalar(gpu, scalar, O, K, N):
    """Weights decoded once when the linear is made (GpuLinear resident): the int8 GEMM on them
    for every N, one tile of tokens or several, gives the scalar tier's bits."""
    for special in (False, True):
        assert fv5_differences(gpu, scalar, O, K, N, seed=O + K + N, bias=True, special=special,
                               resident=True) == 0, special


@pytest.mark.parametrize("scale, act_scale", [(1e-36, 1.0), (1e-30, 1e-8), (2.0 ** -140, 1.0),
                                              (1e30, 1e8), (1e37, 1e30)])
def test_fv5_gemm_extreme_scales(gpu, scalar, scale, act_scale):
    """Subnormal weight scales and outputs, outputs that overflow to infinity."""
    for N in (1, 7):
        assert fv5_differences(gpu, scalar, 40, 1032, N, seed=N, bias=N == 7,
                               scale=scale, act_scale=act_scale) == 0


def int8_differences(gpu, scalar, O, K, N, seed, bias, ws_scale=1.0, saturate=False):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (O, K), dtype=np.int8)
    w[0] = -128                                                   # the full int8 range
    if O > 2:
        w[1] = 0                                                  # a zero row
    ws = (rng.uniform(1e-3, 1e-2, O) * ws_scale).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32) if bias else None
    lin = GpuLinear(gpu, "int8", O, K, w, ws, None, b)
    if saturate:          # |acc| up to 127 * 128 * K: (float)acc rounds above 2^24
        xq = np.where(rng.integers(0, 8, (N, K)) == 0, -127, 127).astype(np.int8)
        xs = rng.uniform(0.01, 1, N).astype(np.float32)
        return differing(lin.gemm(xq, xs, N), scalar.int8_gemm(xq, xs, N, w, ws, O, K, bias=b))
    x = random_acts(rng, N, K, extreme=True)
    xq, xs = scalar.quantize(x, N, K)
    return differing(lin(x, N), scalar.int8_gemm(xq, xs, N, w, ws, O, K, bias=b))


@pytest.mark.parametrize("O, K, N", [(O, K, N) for O in (1, 8, 40, 63, 1024) for K in (8, 24, 1032)
                                     for N in (1, 7, 33, 67) if O * N <= 67 * 1024 and (O < 1024 or K > 8)])
def test_int8_gemm_bit_identical_to_scalar(gpu, scalar, O, K, N):
    for bias in (True, False):
        assert int8_differences(gpu, scalar, O, K, N, seed=O * K + N + bias, bias=bias) == 0, bias


@pytest.mark.parametrize("ws_scale", [1.0, 1e-33, 1e36])
def test_int8_gemm_large_sums_and_extreme_scales(gpu, scalar, ws_scale):
    assert int8_differences(gpu, scalar, 24, 4096, 5, seed=5, bias=True, ws_scale=ws_scale,
                            saturate=True) == 0


def test_dot_product_variant_choice(device):
    """dot4I8Packed when the language features list it or the device compiles it, else plain i32."""
    assert GpuKernels(device, language_features={"packed_4x8_integer_dot_product"}).packed_dot
    unknown = GpuKernels(device, patch=lambda s: s.replace("requires packed_4x8_integer_dot_product;",
                                                          "requires no_such_language_extension;"))
    assert not unknown.packed_dot
    unknown.pipeline("int8_gemm")                       # the plain module compiles


class DescribedDevice:
    """A device with the adapter info a BrowserDevice carries."""
    def __init__(self, device, info: dict):
        self._device, self.adapter_info = device, info

    def __getattr__(self, name):
        return getattr(self._device, name)


def test_gpus_without_a_packed_dot_instruction_take_the_plain_variant(device):
    """An Apple GPU (no packed int8 dot instruction: the browser would unpack both operands of
    every dot4I8Packed) runs the plain variant even where the language offers dot4I8Packed;
    other vendors, and adapters that say nothing, keep the packed one."""
    packed = {"packed_4x8_integer_dot_product"}
    assert not GpuKernels(DescribedDevice(device, {"vendor": "apple", "architecture": "metal-3"}),
                          language_features=packed).packed_dot
    assert GpuKernels(DescribedDevice(device, {"vendor": "intel", "architecture": "xe-lp"}),
                      language_features=packed).packed_dot
    assert GpuKernels(DescribedDevice(device, {}), language_features=packed).packed_dot


def test_gpu_linear_refuses_bad_shapes(gpu):
    with pytest.raises(KernelError, match="multiple of 8"):
        GpuLinear(gpu, "int8", 4, 12, bytes(48), np.ones(4, np.float32))
    with pytest.raises(KernelError, match="O % 8"):
        GpuLinear(gpu, "fv5", 12, 16, bytes(64), np.zeros(12, np.float32), np.ones(12, np.float32))
    lin = GpuLinear(gpu, "int8", 4, 8, bytes(32), np.ones(4, np.float32))
    with pytest.raises(KernelError, match="need 16"):
        lin(np.ones(8, np.float32), 2)


# ---------------------------------------------------------------------------------------------
# the comparisons can fail: shader mutations they must catch

MUTATIONS = {
    # the epilogue reassociated, as WGSL lets an implementation do with f32 (xs * ws first)
    "reassociated epilogue": ("sf_mul(sf_mul(sf_from_i32(acc), xs), ws)",
                              "sf_mul(sf_from_i32(acc), sf_mul(xs, ws))"),
    # one ulp more on every output
    "one ulp": ("y[n * O + o] = v;", "y[n * O + o] = v + 1u;"),
    # pk_expq's Horner step rounding its low product where C truncates it
    "exp step rounded": ("(((p & 0xffffu) * f) >> 16u)", "(((p & 0xffffu) * f + 0x8000u) >> 16u)"),
    # SiLU as x / (1 + exp(-x)), one rounding fewer than C's x * (1 / (1 + exp(-x)))
    "silu order": ("return sf_mul(x, sf_sigmoid(x));", "return sf_div(x, sf_add(F32_ONE, sf_expq(x ^ F32_SIGN)));"),
    # ties rounded away from zero instead of to even
    "ties away": ("r = r & ~1u;", "r = r;"),
    # the last fv5 digit read from the wrong place value
    "fv5 digit": ("let even25 = ((even5 * 205u) >> 10u)", "let even25 = ((even5 * 41u) >> 10u)"),
    # digits 1 and 3 built on the wrong grid entry
    "fv5 level": ("let lo_level = grid.y ^", "let lo_level = grid.x ^"),
}


def test_fv5_grid_words_repeat_each_entry():
    lut = bytes([0xFD, 0xFF, 0, 1, 3, 0, 0, 0]) + bytes([0x81, 0xC0, 0, 0x40, 0x7F, 0, 0, 0])   # -3 -1 0 1 3; -127 -64 0 64 127
    words = np.frombuffer(fv5_grid_words(lut, 2), np.uint32)
    assert [hex(w) for w in words] == ["0xfdfdfdfd", "0xffffffff", "0xfefefefe", "0x3030303",
                                       "0x81818181", "0xc0c0c0c0", "0x80808080", "0x7f7f7f7f"]
    with pytest.raises(KernelError, match="need 8 \\* O = 24"):
        fv5_grid_words(lut, 3)


def test_fv5_digit_arithmetic_holds_for_every_code():
    """fv5_codes.wgsl's division-free digits, two codes per word (one per 16-bit half): c / 5 and
    (c / 5) / 5 by multiply, shift and mask, exact for every pair of 7-bit codes (the shader
    masks codes to 7 bits), neither half disturbing the other."""
    source = (SHADER_DIR / "fv5_codes.wgsl").read_text()
    assert "let even5 = ((even * 205u) >> 10u) & 0x003f003fu;" in source
    assert "let even25 = ((even5 * 205u) >> 10u) & 0x003f003fu;" in source
    c = np.arange(128, dtype=np.uint64)
    lo, hi = np.meshgrid(c, c)
    word = (lo | (hi << 16)).ravel()
    fives = ((word * 205) >> 10) & 0x003F003F
    twentyfives = ((fives * 205) >> 10) & 0x003F003F
    assert ((word * 205) < 2 ** 32).all()
    for got, want in [(fives, c // 5), (twentyfives, c // 25)]:
        np.testing.assert_array_equal(got & 0xFFFF, np.meshgrid(want, want)[0].ravel())
        np.testing.assert_array_equal(got >> 16, np.meshgrid(want, want)[1].ravel())


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_shader_fails_the_comparison(device, scalar, name):
    old, new = MUTATIONS[name]

    def patch(source: str) -> str:
        if old in source:
            return source.replace(old, new)
        return source

    assert any(old in shader_source(m, False) for m in MODULES), f"mutation {name!r} no longer applies"
    bad = GpuKernels(device, packed_dot=False, patch=patch)
    if name == "ties away":
        # a tie in the conversion of a large sum: 2^24 + 1 is halfway between 2^24 and 2^24 + 2
        assert bad.float_op("from_i32", [2 ** 24 + 1])[0] != np.float32(2 ** 24 + 1).view(np.uint32)
        return
    if name in ("exp step rounded", "silu order"):
        a = exp_inputs(np.random.default_rng(1), 1 << 14)
        assert (bits(bad.float_op("silu", a)) != bits(project_math(scalar, "silu", a))).any(), name
        return
    # one shape decoding in the GEMM (N <= 64), one in the decode pass: the fv5 mutations must be
    # caught on both, the epilogue's on either
    found = [fv5_differences(bad, scalar, O, K, N, seed=O + K + N, bias=True)
             for O, K, N in [(40, 1032, 7), (8, 24, 67)]]
    assert all(found) if name.startswith("fv5") else any(found), f"mutation {name!r} went unnoticed: {found}"


def test_from_linear_weights(gpu, scalar):
    """A linear as the engine holds it (engine/executors/linear.py) gives its C result on the device."""
    from engine.executors.linear import LinearWeights, whole_gemm
    rng = np.random.default_rng(11)
    packed, lo, hi, b = fv5_linear(rng, 40, 24, bias=True)
    q = rng.integers(-128, 128, (16, 24), dtype=np.int8)
    scale = rng.uniform(1e-3, 1e-2, 16).astype(np.float32)
    x = random_acts(rng, 7, 24)
    for w in (LinearWeights("fv5", "fv5", 40, 24, packed=packed, lo=lo, hi=hi, bias=b),
              LinearWeights("int8", "int8", 16, 24, q=q, scale=scale)):
        xq, xs = scalar.quantize(x, 7, 24)
        for activation in (None, "silu"):
            assert differing(GpuLinear.from_weights(gpu, w, scalar, activation)(x, 7),
                             whole_gemm(scalar, w, xq, xs, 7, activation)) == 0, (w.kind, activation)


@pytest.mark.parametrize("kind", ["fv5", "int8"])
@pytest.mark.parametrize("O, K, N", [(40, 1032, 7), (1024, 256, 67), (8, 64, 1)])
def test_gemm_with_silu_bit_identical_to_scalar(gpu, scalar, kind, O, K, N):
    """The SiLU epilogue on the device against C's GEMM then silu, outputs spread over exp's range."""
    from engine.executors.linear import LinearWeights, whole_gemm
    rng = np.random.default_rng(O + K + N)
    if kind == "fv5":
        packed, lo, hi, b = fv5_linear(rng, O, K, bias=True, scale=0.3)
        w = LinearWeights("fv5", "fv5", O, K, packed=packed, lo=lo, hi=hi, bias=b * np.float32(40))
    else:
        q = rng.integers(-128, 128, (O, K), dtype=np.int8)
        w = LinearWeights("int8", "int8", O, K, q=q, scale=rng.uniform(1e-3, 3e-2, O).astype(np.float32),
                          bias=(rng.standard_normal(O) * 40).astype(np.float32))
    x = random_acts(rng, N, K)
    xq, xs = scalar.quantize(x, N, K)
    want = whole_gemm(scalar, w, xq, xs, N, "silu")
    assert differing(GpuLinear.from_weights(gpu, w, scalar, "silu")(x, N), want) == 0
