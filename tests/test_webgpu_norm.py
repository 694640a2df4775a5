"""The WebGPU tier's soft-double (kernels/webgpu/softdouble.wgsl) against numpy's IEEE float64,
sf_sqrt against numpy's float32 sqrt, and the layer norm (kernels/webgpu/layer_norm.wgsl through
engine/executors/webgpu/norm.py) against the C scalar tier's pk_layernorm, bit for bit; and a mutation
(the double sum done in float) that the comparison must catch.

Natively through PyPI wgpu on any Vulkan adapter; here Mesa lavapipe (a CPU emulation)."""

from __future__ import annotations

from array import array

from pathlib import Path

import numpy as np
import pytest

from engine.kernels import KernelError
from engine.executors.webgpu.norm import GpuLayerNorm, double_op
from engine.executors.webgpu.device import SHADER_DIR, GpuKernels

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")
from test_webgpu_kernels import device  # noqa: E402,F401 - the fixture: a device, or a skip saying why

pytestmark = pytest.mark.webgpu

CASES = 100_000


@pytest.fixture(scope="module")
def gpu(device):
    return GpuKernels(device, packed_dot=False)


def assert_same(got, want, what, nbits=64):
    """Equal bit patterns, any NaN where the reference has a NaN."""
    dt = np.uint64 if nbits == 64 else np.uint32
    got, want = np.asarray(got, dt), np.asarray(want, dt)
    mag = dt(0x7FFFFFFFFFFFFFFF if nbits == 64 else 0x7FFFFFFF)
    inf = dt(0x7FF0000000000000 if nbits == 64 else 0x7F800000)
    both_nan = ((got & mag) > inf) & ((want & mag) > inf)
    bad = np.flatnonzero((got != want) & ~both_nan)
    w = nbits // 4
    assert not bad.size, (f"{what}: {bad.size} of {got.size} differ; first: #{bad[0]} "
                          f"got {int(got[bad[0]]):#0{w + 2}x} want {int(want[bad[0]]):#0{w + 2}x}")


# ---------------------------------------------------------------------------------------------
# inputs biased towards the hard cases

def special_f64(rng, n):
    """float64 bit patterns: random exponents, and over-represented zeros, subnormals, the
    subnormal border, near overflow, the exponents whose products or quotients cross those
    borders (about 512 and 1535), infinities, NaN, short significands (exact results, ties)."""
    u = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    kinds = rng.integers(0, 12, n)
    field = (u >> np.uint64(52)) & np.uint64(0x7FF)
    field = np.where(kinds == 1, 0, field)
    field = np.where(kinds == 2, rng.integers(1, 4, n), field)
    field = np.where(kinds == 3, rng.integers(2040, 2047, n), field)
    field = np.where(kinds == 4, rng.integers(480, 545, n), field)
    field = np.where(kinds == 5, rng.integers(1500, 1570, n), field)
    field = np.where(kinds == 6, rng.integers(1000, 1050, n), field).astype(np.uint64)
    frac = u & np.uint64((1 << 52) - 1)
    keep = rng.integers(0, 53, n).astype(np.uint64)                  # short significands
    short = frac & ~((np.uint64(1) << (np.uint64(52) - keep)) - np.uint64(1))
    frac = np.where((kinds == 7) | (kinds == 6), short, frac)
    out = (u & np.uint64(1 << 63)) | (field << np.uint64(52)) | frac
    out[kinds == 8] = (u[kinds == 8] & np.uint64(1 << 63)) | np.uint64(0x7FF0000000000000)
    out[kinds == 9] &= np.uint64(1 << 63)                            # zeros
    nan = kinds == 10
    out[nan] = (u[nan] | np.uint64(0x7FF0000000000000)) & ~np.uint64(1 << 51)
    out[nan & (frac == 0)] |= np.uint64(1)
    return out.astype(np.uint64)


def near_pairs64(rng, n):
    """b close to -a (cancellation) or to a (carries), or 50..56 binades below (ties, sticky
    bits of the alignment)."""
    a = special_f64(rng, n)
    a = a[(a & np.uint64(0x7FF0000000000000)) != np.uint64(0x7FF0000000000000)]
    m = a.size
    mag = (a & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64)
    delta = rng.integers(-(1 << 54), 1 << 54, m)
    delta = np.where(rng.integers(0, 2, m) == 1, delta >> rng.integers(0, 54, m), delta)
    close = mag + delta
    far = mag - (rng.integers(50, 57, m) << 52) + rng.integers(-4, 5, m)
    bmag = np.where(rng.integers(0, 3, m) == 0, far, close).clip(0, 0x7FEFFFFFFFFFFFFF).astype(np.uint64)
    sign = np.where(rng.integers(0, 2, m) == 1, np.uint64(1 << 63), np.uint64(0))
    return a, bmag | sign


def special_f32(rng, n):
    """float32 bit patterns over the whole range, zeros, subnormals, the border, near
    overflow, infinities, NaN, short significands."""
    u = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    kinds = rng.integers(0, 8, n)
    exp = np.where(kinds == 1, 0, np.where(kinds == 2, rng.integers(1, 4, n),
                   np.where(kinds == 3, rng.integers(250, 255, n), (u >> 23) & 0xFF)))
    frac = np.where(kinds == 4, u & 0x7FF000, u & 0x7FFFFF)
    out = (u & 0x80000000) | (exp.astype(np.uint32) << 23) | frac.astype(np.uint32)
    out[kinds == 5] = (u[kinds == 5] & 0x80000000) | 0x7F800000
    out[kinds == 6] &= 0x80000000
    out[kinds == 7] = (u[kinds == 7] | 0x7F800000) | 0x400000
    return out.astype(np.uint32)


F32_SPECIALS = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
                         0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                         0x3F800000, 0xBF800000, 0x40800000, 0x3F7FFFFF, 0x3F800001, 0x00000004],
                        np.uint32)


def f64(u):
    return np.asarray(u, np.uint64).view(np.float64)


def f32(u):
    return np.asarray(u, np.uint32).view(np.float32)


# ---------------------------------------------------------------------------------------------
# the soft-double against numpy float64

def test_from_f32_exact(gpu):
    rng = np.random.default_rng(1)
    a = np.concatenate([F32_SPECIALS, special_f32(rng, CASES), np.arange(0, 1 << 16, dtype=np.uint32)])
    got = np.frombuffer(double_op(gpu, "from_f32", a), np.uint64)
    with np.errstate(invalid="ignore"):
        want = f32(a).astype(np.float64).view(np.uint64)
    assert_same(got, want, "(double)float")
    # every finite one back: (float)(double)f == f
    back = np.frombuffer(double_op(gpu, "to_f32", got), np.uint32)
    finite = (a & 0x7F800000) != 0x7F800000
    assert (back[finite] == a[finite]).all()


def to_f32_inputs(rng, n):
    """doubles over the float range and its borders (float subnormals, underflow to zero,
    overflow), ties at float precision and their neighbours, and special_f64's."""
    e = rng.integers(1023 - 160, 1023 + 130, n).astype(np.uint64)
    frac = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    kinds = rng.integers(0, 4, n)
    # ties: the bits below float precision exactly one half (29 bits for normals; more for
    # the float subnormals, the tie bit then sits higher), or one ulp either side of it
    tie_bit = np.uint64(1) << (np.uint64(28) + np.clip(1023 - 126 - e.astype(np.int64), 0, 23).astype(np.uint64))
    tie = (frac & ~((tie_bit << np.uint64(1)) - np.uint64(1))) | tie_bit
    frac = np.where(kinds == 1, tie, np.where(kinds == 2, tie + np.uint64(1), np.where(kinds == 3, tie - np.uint64(1), frac)))
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    return np.concatenate([sign | (e << np.uint64(52)) | frac, special_f64(rng, n // 2)])


def test_to_f32(gpu):
    rng = np.random.default_rng(2)
    a = to_f32_inputs(rng, CASES)
    got = np.frombuffer(double_op(gpu, "to_f32", a), np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = f64(a).astype(np.float32).view(np.uint32)
    assert_same(got, want, "(float)double", 32)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_sub(gpu, op):
    rng = np.random.default_rng(3 if op == "add" else 4)
    a1 = special_f64(rng, CASES // 2)
    b1 = special_f64(rng, CASES // 2)
    a2, b2 = near_pairs64(rng, CASES // 2)
    a, b = np.concatenate([a1, a2]), np.concatenate([b1, b2])
    got = np.frombuffer(double_op(gpu, op, a, b), np.uint64)
    with np.errstate(all="ignore"):
        want = (f64(a) + f64(b)) if op == "add" else (f64(a) - f64(b))
    assert_same(got, want.view(np.uint64), f"double {op}")


@pytest.mark.parametrize("op", ["mul", "div"])
def test_mul_div(gpu, op):
    rng = np.random.default_rng(5 if op == "mul" else 6)
    a, b = special_f64(rng, CASES), special_f64(rng, CASES)
    got = np.frombuffer(double_op(gpu, op, a, b), np.uint64)
    with np.errstate(all="ignore"):
        want = (f64(a) * f64(b)) if op == "mul" else (f64(a) / f64(b))
    assert_same(got, want.view(np.uint64), f"double {op}")


def test_div_small(gpu):
    """sd_div_small(a, D): a normal double over an integer 1..65536 (the layer norm's averages),
    against IEEE division: random significands at every exponent scale (results down into the
    subnormals), the powers of two and their neighbours among the divisors. A quotient of two
    doubles is never exactly halfway between two doubles, so the rounding's hard cases are the
    near-halfway ones whose remainder decides (about one in a thousand here: the jammed bit)."""
    rng = np.random.default_rng(8)
    n = 40000
    D = np.concatenate([np.uint64([1, 2, 3, 5, 7, 1023, 1024, 1025, 4095, 4096, 65535, 65536]),
                        rng.integers(1, 65537, n - 12, dtype=np.uint64)])
    sig = rng.integers(1 << 52, 1 << 53, n, dtype=np.uint64)
    exp = rng.integers(-1050, 1023, n)                 # a = sig 2^(exp - 52)
    a = np.ldexp(sig.astype(np.float64), exp - 52)
    keep = np.isfinite(a) & (np.abs(a) >= np.finfo(np.float64).tiny)
    a, D = a[keep], D[keep]
    a = np.where(rng.integers(0, 2, a.size) == 1, -a, a)
    got = np.frombuffer(double_op(gpu, "div_small", a.view(np.uint64), D), np.uint64)
    want = (a / D.astype(np.float64)).view(np.uint64)
    assert_same(got, want, "double / small integer")


def test_from_u32(gpu):
    a = np.concatenate([np.arange(0, 4096, dtype=np.uint32),
                        np.random.default_rng(7).integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32),
                        np.uint32([0xFFFFFFFF, 0x80000000, 0x7FFFFFFF])])
    got = np.frombuffer(double_op(gpu, "from_u32", a), np.uint64)
    assert_same(got, a.astype(np.float64).view(np.uint64), "(double)u32")


def test_double_op_refuses(gpu):
    with pytest.raises(KernelError, match="unknown"):
        double_op(gpu, "fma", [0], [0])
    with pytest.raises(KernelError, match="equal length"):
        double_op(gpu, "add", [0, 1], [0])


# ---------------------------------------------------------------------------------------------
# sf_sqrt against numpy's float32 sqrt (correctly rounded, as C's sqrtf)

def test_sqrt(gpu):
    rng = np.random.default_rng(8)
    a = np.concatenate([F32_SPECIALS, special_f32(rng, 1 << 18),
                        np.arange(0, 1 << 16, dtype=np.uint32),                     # subnormals
                        np.arange(0x3F000000, 0x3F000000 + (1 << 16), dtype=np.uint32),
                        np.arange(0x7F7F0000, 0x7F800000, dtype=np.uint32)]).astype(np.uint32)
    got = np.frombuffer(double_op(gpu, "sqrt_f32", a), np.uint32)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(f32(a)).view(np.uint32)
    assert_same(got, want, "sqrtf", 32)
    negative = ((a & 0x80000000) != 0) & ((a & 0x7FFFFFFF) != 0) & ((a & 0x7FFFFFFF) <= 0x7F800000)
    assert negative.sum() > 1000 and (got[negative] == 0xFFC00000).all()      # the default NaN
    assert got[a == 0x80000000].tolist() and (got[a == 0x80000000] == 0x80000000).all()
    assert (got[a == 0x7F800000] == 0x7F800000).all()


def test_sqrt_every_significand(gpu):
    """Every float in [1, 4): every significand with either exponent parity (other binades,
    subnormals normalised too, only shift the exponent)."""
    a = np.arange(0x3F800000, 0x40800000, dtype=np.uint32)
    got = np.frombuffer(double_op(gpu, "sqrt_f32", a), np.uint32)
    assert_same(got, np.sqrt(f32(a)).view(np.uint32), "sqrtf", 32)


# ---------------------------------------------------------------------------------------------
# the layer norm against C pk_layernorm

def norm_data(rng, kind, N, D):
    """x [N][D], g, b, eps: ordinary rows; large offsets (float sums would round); a wide
    exponent spread with mixed signs (the double sums round); tiny values and subnormals."""
    if kind == "ordinary":
        x = rng.normal(0, 1, (N, D))
        eps = 1e-5
    elif kind == "offset":
        x = 3e7 + rng.integers(-1000, 1000, (N, D)) + rng.normal(0, 1, (N, D))
        x[::2, rng.integers(0, D)] = -1e21                       # the double sums round too
        eps = 1e-5
    elif kind == "wide":
        x = rng.choice([-1, 1], (N, D)) * np.exp2(rng.uniform(-70, 70, (N, D))) * rng.uniform(1, 2, (N, D))
        eps = 1e-12
    elif kind == "tiny":
        x = rng.normal(0, 1, (N, D)) * np.float32(1e-39)                           # subnormals
        x[:, ::3] = rng.normal(0, 1e-30, (N, -(-D // 3)))
        eps = 1e-45 if N % 2 else 1e-30
    else:
        raise ValueError(kind)
    g = rng.normal(1, 0.5, D).astype(np.float32)
    g[::7] = -g[::7]
    b = rng.normal(0, 0.1, D).astype(np.float32)
    return np.ascontiguousarray(x, np.float32), g, b, eps


SHAPES = [(N, D) for N in (1, 3, 17, 125) for D in (8, 24, 176, 1024) if N * D <= 17 * 1024] + \
    [(3, 1), (2, 63), (3, 65), (2, 1025), (1, 3001)]      # past 1024: squares not kept (NORM_KEPT)


@pytest.mark.parametrize("kind", ["ordinary", "offset", "wide", "tiny"])
def test_layer_norm(gpu, scalar, kind):
    rng = np.random.default_rng(len(kind))
    shapes = SHAPES + [(125, 1024)] if kind in ("wide", "offset") else SHAPES
    for N, D in shapes:
        x, g, b, eps = norm_data(rng, kind, N, D)
        got = GpuLayerNorm(gpu, g, b, eps)(x, N)
        want = scalar.layernorm(x, N, D, g, b, eps)
        assert_same(np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32), f"{kind} {N}x{D}", 32)


def test_layer_norm_special_rows(gpu, scalar):
    """A constant row (variance 0), a row with an infinity, one with NaN, zeros with eps 0 (NaN
    outputs), a row of +-3.4e38 (the double sums do not overflow; the float steps do)."""
    D = 40
    x = np.zeros((6, D), np.float32)
    x[0] = 2.5
    x[1] = np.linspace(-1, 1, D)
    x[1, 5] = np.inf
    x[2] = np.linspace(-1, 1, D)
    x[2, 7] = np.nan
    x[4] = np.float32(3.4e38) * np.where(np.arange(D) % 3, 1, -1)
    x[5] = np.arange(D) * np.float32(1e-45)
    g, b = np.ones(D, np.float32), np.linspace(-1, 1, D).astype(np.float32)
    for eps in (1e-5, 0.0):
        got = GpuLayerNorm(gpu, g, b, eps)(x, 6)
        want = scalar.layernorm(x, 6, D, g, b, eps)
        assert_same(np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32), f"special rows eps {eps}", 32)


def squares_rows(rng, D):
    """Rows whose mean is in [1, 2) and whose outliers +-V (cancelling in the sum) lie 4..9 and
    26..32 binades above it, with the longest significands (the largest differences) and random
    ones; a row of elements equal to the mean and subnormal elements."""
    rows = []
    for k in (*range(4, 10), *range(26, 33)):
        for top in (np.float32(2) - np.float32(2.0 ** -23), np.float32(rng.uniform(1, 2))):
            row = rng.uniform(1, 2, D).astype(np.float32)
            row[0], row[1] = -top * np.float32(2.0 ** k), top * np.float32(2.0 ** k)
            rows.append(row)
    row = np.full(D, np.float32(1.25))
    row[0], row[1], row[2] = 1e-40, -1e-40, 1.5        # subnormals; the rest equal the mean
    rows.append(row)
    return np.ascontiguousarray(rows, np.float32)


def test_layer_norm_squares_around_the_exact_difference_bounds(gpu, scalar):
    """layer_norm.wgsl squares x - mean from one 32 x 32 product when they are at most 7
    binades apart, forms the difference in 64-bit integers up to 29 binades (it then fits 53
    bits) and takes the soft-double steps beyond: squares_rows straddles both bounds."""
    rng = np.random.default_rng(29)
    D = 64
    x = squares_rows(rng, D)
    N = len(x)
    g, b = rng.normal(1, 0.5, D).astype(np.float32), np.zeros(D, np.float32)
    got = GpuLayerNorm(gpu, g, b, 1e-5)(x, N)
    want = scalar.layernorm(x, N, D, g, b, 1e-5)
    assert_same(np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32), "squares around 7 and 29 binades", 32)


@pytest.mark.parametrize("old,new", [
    ("i32(q + 2u * e0) + 723", "i32(q + 2u * e0) + 724"),                       # the exponent off by one
    ("let q = 63u - sd_u64_clz(product);", "let q = 62u - sd_u64_clz(product);"),  # the wrong leading bit
])
def test_layer_norm_square_mutation_caught(device, scalar, old, new):
    hits = []

    def patch(source):
        hits.append(old in source)
        return source.replace(old, new)

    rng = np.random.default_rng(30)
    D = 64
    x = squares_rows(rng, D)
    N = len(x)
    g, b = rng.normal(1, 0.5, D).astype(np.float32), np.zeros(D, np.float32)
    got = GpuLayerNorm(GpuKernels(device, packed_dot=False, patch=patch), g, b, 1e-5)(x, N)
    want = scalar.layernorm(x, N, D, g, b, 1e-5)
    assert any(hits)
    assert (np.frombuffer(got, np.uint32) != np.frombuffer(want, np.uint32)).any()


def test_layer_norm_2d_grid(gpu, scalar):
    """More rows than one grid dimension holds (65,535 workgroups): a 2-D grid."""
    N, D = 65_536, 8
    x, g, b, eps = norm_data(np.random.default_rng(9), "ordinary", N, D)
    got = GpuLayerNorm(gpu, g, b, eps)(x, N)
    want = scalar.layernorm(x, N, D, g, b, eps)
    assert_same(np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32), "65,536 rows", 32)


def cancelling_rows(rng, N, D):
    """Large values that cancel in pairs among ordinary ones, and no bias (which would hide
    the mean's last bits): an index-order double sum loses bits an exact sum keeps."""
    x = rng.normal(0, 1, (N, D))
    big = np.exp2(rng.integers(30, 45, (N, D // 8)))
    x[:, : D // 8], x[:, D // 8: D // 4] = big, -big
    g = rng.normal(1, 0.5, D).astype(np.float32)
    return np.ascontiguousarray(x, np.float32), g, np.zeros(D, np.float32), 1e-5


def test_layer_norm_in_index_order_is_caught(device, scalar):
    """The shader the integer sums replaced (double sums in index order, tests/data) gives other
    bits than the rule on cancelling rows: the comparison can tell an ordered float sum from the
    order-free one."""
    old = (Path(__file__).parent / "data" / "layer_norm_in_index_order.wgsl").read_text()
    new = (SHADER_DIR / "layer_norm.wgsl").read_text()
    assert "sum = sd_add(sum, norm_chunk[j]);" in old and "norm_total" in new
    swapped = []

    def patch(source):
        swapped.append(new in source)
        return source.replace(new, old)

    N, D = 17, 176
    x, g, b, eps = cancelling_rows(np.random.default_rng(10), N, D)
    gpu = GpuKernels(device, packed_dot=False, patch=patch)
    got = GpuLayerNorm(gpu, g, b, eps)(x, N)
    want = scalar.layernorm(x, N, D, g, b, eps)
    assert any(swapped)
    assert (np.frombuffer(got, np.uint32) != np.frombuffer(want, np.uint32)).sum() > N * D // 8


def test_layer_norm_rows_in_any_order(gpu, scalar):
    """A row permuted (with its gains and biases) gives its outputs permuted, bit for bit."""
    N, D = 5, 1024
    x, g, b, eps = cancelling_rows(np.random.default_rng(11), N, D)
    perm = np.random.default_rng(12).permutation(D)
    y = np.frombuffer(GpuLayerNorm(gpu, g, b, eps)(x, N), np.uint32).reshape(N, D)
    xp, gp, bp = (np.ascontiguousarray(a[..., perm]) for a in (x, g, b))
    yp = np.frombuffer(GpuLayerNorm(gpu, gp, bp, eps)(xp, N), np.uint32).reshape(N, D)
    assert (yp == y[:, perm]).all()


def test_layer_norm_refuses(gpu):
    g = array("f", [1.0] * 8)
    with pytest.raises(KernelError):
        GpuLayerNorm(gpu, g, array("f", [0.0] * 7), 1e-5)
    norm = GpuLayerNorm(gpu, g, g, 1e-5)
    with pytest.raises(KernelError, match="x holds"):
        norm(array("f", [0.0] * 15), 2)
    with pytest.raises(KernelError):
        norm(array("f", [0.0] * 16), 0)
    with pytest.raises(KernelError, match="buffer holds"):
        norm.passes(gpu.storage(32), gpu.storage(64), 2)
    with pytest.raises(KernelError, match="float32"):
        GpuLayerNorm(gpu, array("d", [1.0] * 8), g, 1e-5)
