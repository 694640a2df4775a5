"""Native kernel tests: every tier against numpy references of the contracts in kernels/*.h,
every tier against scalar bit for bit on shape sweeps, the GEMM against an exact float64
five-value product within a derived bound, and bad input."""

from __future__ import annotations

from array import array
from fractions import Fraction

import numpy as np
import pytest

from conftest import NATIVE_TIERS, SIMD_TIERS
from modeltools.fv5 import pack_b5x3t7
from engine.kernels import Kernels, KernelError, fv5_block_bytes

SPEC_K = (8, 16, 24, 48, 80, 256, 1024, 4096)
LEVEL_P = np.array([0.091, 0.153, 0.513, 0.153, 0.090]) / 1.0


# ---------------------------------------------------------------------------------------------
# numpy references, written from the headers' contracts

def ref_quantize(x: np.ndarray):
    """quantize_act.h: amax on |x| bits, inv = 127/amax, rint half-even, clamp, xs = amax/127."""
    x = np.ascontiguousarray(x, np.float32)
    bits = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
    amax_bits = bits.max(axis=1)
    assert (amax_bits < 0x7F800000).all()
    amax = amax_bits.view(np.float32)
    tiny = amax_bits < 0x0D800000
    safe = np.where(tiny, np.float32(1), amax).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    q = np.clip(np.rint((x * inv[:, None]).astype(np.float32)), -127, 127).astype(np.int8)
    q[tiny] = 0
    xs = np.where(tiny, np.float32(0), (amax / np.float32(127)).astype(np.float32)).astype(np.float32)
    return q, xs


def ref_dequant(acc: np.ndarray, xs, ws, bias):
    """gemm_common.h order: ((float)acc * xs) * ws (+ bias), float32 throughout."""
    y = (acc.astype(np.float32) * xs[:, None].astype(np.float32)).astype(np.float32)
    y = (y * ws[None, :].astype(np.float32)).astype(np.float32)
    if bias is not None:
        y = (y + bias[None, :]).astype(np.float32)
    return y


def lut_matrix(lut: bytearray, codes: np.ndarray) -> np.ndarray:
    """(O, K) int8 weights from level codes and the [O][8] lut."""
    table = np.frombuffer(bytes(lut), np.int8).reshape(-1, 8)
    return np.take_along_axis(table, codes.astype(np.int64), axis=1)


def ref_panel(weights_int8: np.ndarray) -> bytes:
    """The spec panel of every block: vector 4*kb + p, lane j = row 2p + (j>=8), k = 8kb + j%8."""
    O, K = weights_int8.shape
    w = weights_int8.reshape(O // 8, 4, 2, K // 8, 8).transpose(0, 3, 1, 2, 4)
    return w.reshape(O // 8, K // 2, 16).tobytes()


def random_fv5(rng, O, K, special=False):
    codes = rng.choice(5, size=(O, K), p=LEVEL_P / LEVEL_P.sum()).astype(np.uint8)
    hi = (rng.uniform(0.5, 2.0, O) * 2.0 ** rng.integers(-8, 2, O)).astype(np.float32)
    lo = (hi * rng.uniform(0, 1, O)).astype(np.float32)
    if special:
        codes[1] = 2                 # zero row
        hi[2] = lo[2] = 0            # hi = 0
        lo[3] = hi[3]                # lo = hi
        lo[4] = 0
    return codes, lo, hi


def random_acts(rng, N, K, extreme=False):
    x = (rng.standard_normal((N, K)) * 2.0 ** rng.integers(-6, 6, (N, 1))).astype(np.float32)
    if extreme:
        x[0 % N] = 0
        if N > 1:
            x[1, rng.integers(K)] = np.float32(3.4e38)
        if N > 2:
            x[2] = np.float32(1e-40) * np.sign(x[2])     # subnormal-only token
        if N > 3:
            x[3, 0], x[3, -1] = 1e30, -1e-30
    return x


# ---------------------------------------------------------------------------------------------
# grid

def test_grid_is_best_rational_approximation(scalar):
    rng = np.random.default_rng(1)
    O = 512
    hi = rng.uniform(0.01, 3, O).astype(np.float32)
    lo = (hi * rng.uniform(0, 1, O)).astype(np.float32)
    lo[:3] = [0, hi[1], hi[2] * np.float32(0.5)]
    lut, ws = scalar.row_grid(lo, hi, O)
    table = np.frombuffer(bytes(lut), np.int8).reshape(O, 8)
    for r in range(O):
        Q, q = int(table[r, 4]), int(table[r, 3])
        assert list(table[r]) == [-Q, -q, 0, q, Q, 0, 0, 0]
        assert 1 <= Q <= 63 and 0 <= q <= Q
        ratio = Fraction(float(lo[r])) / Fraction(float(hi[r]))
        best = min(abs(ratio - Fraction(round(ratio * d), d)) for d in range(1, 64))
        assert abs(ratio - Fraction(q, Q)) <= best + Fraction(1, 10**15)
        assert ws[r] == np.float32(hi[r]) / np.float32(Q)
    assert list(table[0][:5]) == [-1, 0, 0, 0, 1]      # lo = 0
    assert list(table[1][:5]) == [-1, -1, 0, 1, 1]     # lo = hi
    assert list(table[2][:5]) == [-2, -1, 0, 1, 2]     # lo = hi/2


def test_grid_zero_hi_and_bad_magnitudes(scalar):
    lut, ws = scalar.row_grid(array("f", [0, 0.5]), array("f", [0, 1.0]), 2)
    assert bytes(lut[:8]) == bytes(8) and ws[0] == 0
    for lo, hi, row in (([0.5, 2.0], [1.0, 1.0], 1), ([-1.0], [1.0], 0),
                        ([float("nan")], [1.0], 0), ([0.0], [float("inf")], 0)):
        with pytest.raises(KernelError, match=f"row {row}: need finite 0 <= lo <= hi"):
            scalar.row_grid(array("f", lo), array("f", hi), len(lo))


# ---------------------------------------------------------------------------------------------
# decode

@pytest.mark.parametrize("K", SPEC_K)
@pytest.mark.parametrize("special", [False, True])
def test_decode_matches_spec_panel(tier_kernels, K, special):
    rng = np.random.default_rng(K + special)
    O = 16
    codes, lo, hi = random_fv5(rng, O, K, special)
    packed = pack_b5x3t7(codes)
    w = tier_kernels.prepare_fv5(packed, lo, hi, O, K)
    expected = ref_panel(lut_matrix(w.lut, codes))
    bb = fv5_block_bytes(K)
    got = b"".join(bytes(tier_kernels.decode_block(packed[b * bb:(b + 1) * bb], w.lut[64 * b:64 * b + 64], K))
                   for b in range(O // 8))
    assert got == expected
    assert bytes(tier_kernels.decode_blocks(w)) == expected            # whole tensor at once
    assert bytes(tier_kernels.decode_blocks(w, reuse=True)) == expected[-8 * K:]   # staging reuse


# ---------------------------------------------------------------------------------------------
# activation quantisation

@pytest.mark.parametrize("N, K", [(1, 1), (1, 8), (3, 7), (5, 13), (67, 80), (4, 1024), (375, 64)])
@pytest.mark.parametrize("extreme", [False, True])
def test_quantize_matches_reference(tier_kernels, N, K, extreme):
    x = random_acts(np.random.default_rng(N * K), N, K, extreme)
    xq, xs = tier_kernels.quantize(x, N, K)
    q_ref, xs_ref = ref_quantize(x)
    np.testing.assert_array_equal(np.frombuffer(bytes(xq), np.int8).reshape(N, K), q_ref)
    assert np.frombuffer(xs, np.float32).view(np.uint32).tolist() == xs_ref.view(np.uint32).tolist()
    assert np.frombuffer(bytes(xq), np.int8).min() >= -127


def test_quantize_rounds_half_to_even(scalar):
    # amax 127 -> inv 1: x * inv is x itself, so halves show the rounding rule
    x = array("f", [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0])
    xq, xs = scalar.quantize(x, 1, 8)
    assert list(np.frombuffer(bytes(xq), np.int8)) == [127, 0, 2, 2, 0, -2, -2, 0]
    assert xs[0] == 1.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_quantize_names_the_nonfinite_row(tier_kernels, bad):
    x = np.ones((4, 16), np.float32)
    x[2, 5] = bad
    with pytest.raises(KernelError, match="activation row 2 contains NaN or infinity"):
        tier_kernels.quantize(x, 4, 16)


# ---------------------------------------------------------------------------------------------
# GEMMs: scalar == numpy integer reference; every tier == scalar, bit for bit

def fv5_case(k: Kernels, O, K, N, seed, special=False, bias=True):
    rng = np.random.default_rng(seed)
    codes, lo, hi = random_fv5(rng, O, K, special)
    packed = pack_b5x3t7(codes)
    x = random_acts(rng, N, K, extreme=special)
    b = rng.standard_normal(O).astype(np.float32) if bias else None
    w = k.prepare_fv5(packed, lo, hi, O, K)
    xq, xs = k.quantize(x, N, K)
    y = np.frombuffer(k.fv5_gemm(xq, xs, N, w, bias=b), np.float32).reshape(N, O)
    return dict(codes=codes, lo=lo, hi=hi, x=x, bias=b, lut=w.lut, ws=w.ws, xq=xq, xs=xs, y=y)


def assert_bits_equal(got: np.ndarray, want: np.ndarray, what: str):
    g, w = got.view(np.uint32), want.view(np.uint32)
    bad = np.argwhere(g != w)
    if bad.size:
        n, o = bad[0]
        raise AssertionError(f"{what}: {len(bad)} outputs differ; first at token {n}, row {o} "
                             f"(block {o // 8}): {got[n, o]!r} vs {want[n, o]!r}")


@pytest.mark.parametrize("O, K, N", [(8, 8, 1), (16, 48, 5), (24, 80, 7), (8, 256, 67), (16, 1024, 13),
                                     (8, 4096, 3), (32, 1024, 375)])
def test_fv5_gemm_scalar_matches_integer_reference(scalar, O, K, N):
    c = fv5_case(scalar, O, K, N, seed=O * K + N)
    W = lut_matrix(c["lut"], c["codes"]).astype(np.int64)
    acc = np.frombuffer(bytes(c["xq"]), np.int8).reshape(N, K).astype(np.int64) @ W.T
    want = ref_dequant(acc.astype(np.int32), np.frombuffer(c["xs"], np.float32),
                       np.frombuffer(c["ws"], np.float32), c["bias"])
    assert_bits_equal(c["y"], want, "fv5_gemm scalar vs numpy")


def sweep_tokens(K):
    return list(range(1, 68)) + [375] if K <= 256 else [1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 31, 64, 67, 375]


@pytest.mark.skipif(not SIMD_TIERS, reason="this CPU runs only the scalar tier")
@pytest.mark.parametrize("tier", SIMD_TIERS)
@pytest.mark.parametrize("K", SPEC_K)
@pytest.mark.parametrize("O", [8, 24])
def test_fv5_gemm_tiers_bit_identical_to_scalar(scalar, tier, O, K):
    k = Kernels(tier)
    for N in sweep_tokens(K):
        for special in (False, True):
            seed = 1000 * K + N + O
            a = fv5_case(scalar, O, K, N, seed, special, bias=N % 2 == 0)
            b = fv5_case(k, O, K, N, seed, special, bias=N % 2 == 0)
            assert bytes(a["xq"]) == bytes(b["xq"])
            assert_bits_equal(b["y"], a["y"], f"{tier} O={O} K={K} N={N} special={special}")


def int8_case(k: Kernels, O, K, N, seed, bias=True):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (O, K), dtype=np.int8)
    w[0] = -128                                   # the full int8 range
    ws = rng.uniform(1e-3, 1e-2, O).astype(np.float32)
    x = random_acts(rng, N, K)
    b = rng.standard_normal(O).astype(np.float32) if bias else None
    xq, xs = k.quantize(x, N, K)
    y = np.frombuffer(k.int8_gemm(xq, xs, N, w, ws, O, K, bias=b), np.float32).reshape(N, O)
    return dict(w=w, ws=ws, xq=xq, xs=xs, bias=b, y=y)


@pytest.mark.parametrize("O, K, N", [(1, 8, 1), (7, 64, 5), (9, 1024, 67), (8198, 640, 1), (640, 640, 4)])
def test_int8_gemm_scalar_matches_integer_reference(scalar, O, K, N):
    c = int8_case(scalar, O, K, N, seed=O + K + N)
    acc = np.frombuffer(bytes(c["xq"]), np.int8).reshape(N, K).astype(np.int64) @ c["w"].astype(np.int64).T
    want = ref_dequant(acc.astype(np.int32), np.frombuffer(c["xs"], np.float32), c["ws"], c["bias"])
    assert_bits_equal(c["y"], want, "int8_gemm scalar vs numpy")


@pytest.mark.skipif(not SIMD_TIERS, reason="this CPU runs only the scalar tier")
@pytest.mark.parametrize("tier", SIMD_TIERS)
@pytest.mark.parametrize("O", [1, 5, 8, 9, 15, 17, 64])
def test_int8_gemm_tiers_bit_identical_to_scalar(scalar, tier, O):
    k = Kernels(tier)
    for K in (8, 16, 80, 640, 1024):
        for N in (1, 2, 3, 4, 5, 6, 7, 13, 16, 33, 67):        # >= 16: the VNNI tier's own path
            a = int8_case(scalar, O, K, N, seed=O * K + N, bias=N % 2 == 1)
            b = int8_case(k, O, K, N, seed=O * K + N, bias=N % 2 == 1)
            assert_bits_equal(b["y"], a["y"], f"{tier} int8 O={O} K={K} N={N}")


@pytest.mark.skipif("avx2" not in NATIVE_TIERS, reason="this CPU has no AVX2")
def test_peak_kernel_gives_exact_sums():
    k = Kernels("avx2")
    rng = np.random.default_rng(5)
    O, K, N = 16, 256, 9
    w = rng.integers(-128, 128, (O, K), dtype=np.int8)
    xq = rng.integers(-127, 128, (N, K), dtype=np.int8)
    acc = k.int8_gemm_peak(xq, N, k.stage_int8(w, O, K), O, K)
    want = xq.astype(np.int64) @ w.astype(np.int64).T
    np.testing.assert_array_equal(np.frombuffer(acc, np.int32).reshape(N, O), want)


# ---------------------------------------------------------------------------------------------
# accuracy: GEMM against the exact five-value product

def test_fv5_gemm_within_derived_bound_of_exact_product(tier_kernels):
    """Bound (derived in docs/kernels.md), per output (n, o), with amax_n = max|x_n|:
        |y - y_exact| <= sum_k |w~_ok| (xs_n/2 + 2^-20 amax_n)      activation rounding
                       + sum_k |w_ok - w~_ok| |x_nk|                the int8 grid of lo
                       + 2^-21 (|y~| + |bias_o|)                    float32 dequantisation
    where w~ = lut * ws is the grid weight and y~ = ws * xs * acc."""
    ratios = []
    for O, K, N in [(64, 1024, 16), (32, 4096, 8), (24, 80, 67)]:
        c = fv5_case(tier_kernels, O, K, N, seed=7 * K + N)
        levels = np.stack([-c["hi"], -c["lo"], np.zeros(O, np.float32), c["lo"], c["hi"]], 1)
        W = np.take_along_axis(levels.astype(np.float64), c["codes"].astype(np.int64), 1)
        y_exact = c["x"].astype(np.float64) @ W.T + c["bias"].astype(np.float64)
        ws = np.frombuffer(c["ws"], np.float32).astype(np.float64)
        xs = np.frombuffer(c["xs"], np.float32).astype(np.float64)
        Wg = lut_matrix(c["lut"], c["codes"]).astype(np.float64) * ws[:, None]
        amax = np.abs(c["x"]).max(1).astype(np.float64)
        acc = np.frombuffer(bytes(c["xq"]), np.int8).reshape(N, K).astype(np.float64) @ \
            lut_matrix(c["lut"], c["codes"]).astype(np.float64).T
        y_grid = acc * xs[:, None] * ws[None, :]
        bound = (np.abs(Wg).sum(1)[None, :] * (xs[:, None] / 2 + 2.0 ** -20 * amax[:, None])
                 + np.abs(c["x"]).astype(np.float64) @ np.abs(W - Wg).T
                 + 2.0 ** -21 * (np.abs(y_grid) + np.abs(c["bias"])[None, :]))
        err = np.abs(c["y"].astype(np.float64) - y_exact)
        assert (err <= bound).all(), f"O={O} K={K} N={N}: worst err/bound {np.max(err / bound):.3f}"
        ratios.append(float(np.max(err / bound)))
    # the bound is not vacuous: the worst case uses a good share of it
    assert max(ratios) > 0.05, ratios


# ---------------------------------------------------------------------------------------------
# bad input: clear Python errors, never a crash

def test_bad_shapes_and_buffers(scalar):
    rng = np.random.default_rng(0)
    codes, lo, hi = random_fv5(rng, 8, 16)
    packed = pack_b5x3t7(codes)
    with pytest.raises(KernelError, match="O = 12 is not a multiple of 8"):
        scalar.prepare_fv5(packed, lo, hi, 12, 16)
    with pytest.raises(KernelError, match="K = 0 is outside"):
        scalar.prepare_fv5(packed, lo, hi, 8, 0)
    with pytest.raises(KernelError, match="K = 12 is not a multiple of 8"):
        scalar.int8_gemm(bytearray(12), array("f", [1]), 1, bytearray(12), array("f", [1]), 1, 12)
    with pytest.raises(KernelError, match=r"packed: need 48 uint8 values \(48 bytes\), buffer has 47"):
        scalar.prepare_fv5(packed[:-1], lo, hi, 8, 16)
    with pytest.raises(KernelError, match="expected float32"):
        scalar.quantize(np.zeros((2, 8)), 2, 8)                   # float64
    with pytest.raises(KernelError, match="C-contiguous"):
        scalar.quantize(np.zeros((8, 4), np.float32).T, 4, 8)
    with pytest.raises(KernelError, match="expected a buffer"):
        scalar.quantize([0.0] * 8, 1, 8)
    w = scalar.prepare_fv5(packed, lo, hi, 8, 16)
    xq, xs = scalar.quantize(np.ones((2, 16), np.float32), 2, 16)
    with pytest.raises(KernelError, match="out: need 16 float32"):
        scalar.fv5_gemm(xq, xs, 2, w, out=array("f", [0] * 15))
    with pytest.raises(KernelError, match="read-only"):
        scalar.fv5_gemm(xq, xs, 2, w, out=memoryview(array("f", [0] * 16)).toreadonly())
    with pytest.raises(KernelError, match="xq: need 48 int8"):
        scalar.fv5_gemm(xq, xs, 3, w)
    with pytest.raises(KernelError, match="prepare_fv5"):
        scalar.fv5_gemm(xq, xs, 2, packed)
    with pytest.raises(KernelError, match="N must be an int"):
        scalar.quantize(np.ones((2, 16), np.float32), 2.0, 16)


def test_corrupt_blocks_are_named(scalar):
    codes = np.full((16, 48), 2, np.uint8)
    packed = bytearray(pack_b5x3t7(codes))
    bb = fv5_block_bytes(48)
    bad = bytearray(packed)
    bad[bb + 5] = 125                           # block 1, a code >= 125
    with pytest.raises(KernelError, match=r"packed block 1 \(rows 8..15\) is corrupt"):
        scalar.check_blocks(bad, 16, 48)
    short = bytearray(pack_b5x3t7(np.full((8, 24), 2, np.uint8)))    # K=24: T=4, all short
    short[-1] = (short[-1] & 0x7F) | 0x80        # bit 7 set in the short group (code < 125)
    with pytest.raises(KernelError, match="packed block 0"):
        scalar.check_blocks(short, 8, 24)
    # K = 80: 40 panel vectors, T = 14, the last code vector uses 1 digit -> padding digits
    packed80 = bytearray(pack_b5x3t7(np.zeros((8, 80), np.uint8)))
    packed80[-1] = 5                             # digit 1 of the last vector is padding
    with pytest.raises(KernelError, match="packed block 0"):
        scalar.check_blocks(packed80, 8, 80)


def test_unknown_or_unavailable_tier(monkeypatch):
    with pytest.raises(KernelError, match="unknown tier 'wasm_simd128'"):
        Kernels("wasm_simd128")
    import engine.kernels as kernels_module
    monkeypatch.setattr(kernels_module, "available_tiers", lambda: ["scalar"])
    with pytest.raises(KernelError, match="tier 'avx2' cannot run here; available: scalar"):
        Kernels("avx2")
    assert Kernels("auto").tier == "scalar"


def test_weights_only_from_prepare_and_immutable(scalar):
    codes, lo, hi = random_fv5(np.random.default_rng(3), 8, 16)
    packed = pack_b5x3t7(codes)
    from engine.kernels import Fv5Weights
    with pytest.raises(KernelError, match="prepare_fv5"):
        Fv5Weights(None, packed, bytearray(64), array("f", [1] * 8), 8, 16)
    w = scalar.prepare_fv5(packed, lo, hi, 8, 16)
    with pytest.raises(TypeError):
        w.lut[0] = 100                     # a private immutable copy
    with pytest.raises(AttributeError):
        w.O = 4096                         # shapes are fixed at preparation
    with pytest.raises(KernelError, match="prepare_fv5"):
        scalar.decode_blocks(packed)


def test_decode_block_validates_its_inputs(scalar):
    packed = bytearray(pack_b5x3t7(np.full((8, 24), 2, np.uint8)))
    lut = bytearray(64)
    packed[-1] = 255
    with pytest.raises(KernelError, match="packed block 0"):
        scalar.decode_block(packed, lut, 24)
    packed[-1] = 62
    lut[3] = 100                           # outside the grid's -63..63
    with pytest.raises(KernelError, match="lut row 0"):
        scalar.decode_block(packed, lut, 24)


def test_peak_kernel_only_on_tiers_that_have_one(scalar):
    with pytest.raises(KernelError, match="no peak kernel"):
        scalar.stage_int8(bytearray(64), 8, 8)


@pytest.mark.parametrize("N", [1, 16])
@pytest.mark.parametrize("weight", [-128, 127])
def test_int8_gemm_exact_at_the_largest_k_with_minus_128(tier_kernels, N, weight):
    """|acc| <= K * 128 * 128 = 2^30 at K = 65536: exact even for xq = -128 everywhere, with
    w = -128 or 127 (the VNNI tier's staged w + 128 = 255: partial sums down to -2^31 + 2^23)."""
    K, O = 65536, 8
    xq = np.full((N, K), -128, np.int8)
    w = np.full((O, K), weight, np.int8)
    y = tier_kernels.int8_gemm(xq, array("f", [1.0] * N), N, w, array("f", [1.0] * O), O, K)
    assert list(y) == [float(-128 * weight * K)] * (O * N)


def test_fv5_gemm_tiers_agree_on_minus_128_activations(scalar):
    """xq = -128 never comes from quantize, but a caller may pass it: every tier stays exact
    (the +64 offset tiers included) and equal to scalar."""
    rng = np.random.default_rng(11)
    O, K, N = 16, 4096, 9
    codes, lo, hi = random_fv5(rng, O, K)
    packed = pack_b5x3t7(codes)
    xq = np.full((N, K), -128, np.int8)
    xs = array("f", [1.0] * N)
    want = np.frombuffer(scalar.fv5_gemm(xq, xs, N, scalar.prepare_fv5(packed, lo, hi, O, K)), np.float32)
    for tier in NATIVE_TIERS:
        k = Kernels(tier)
        got = np.frombuffer(k.fv5_gemm(xq, xs, N, k.prepare_fv5(packed, lo, hi, O, K)), np.float32)
        assert_bits_equal(got.reshape(N, O), want.reshape(N, O), f"{tier} xq=-128")
