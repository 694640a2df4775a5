"""The conv module's middle on the device (engine/executors/webgpu/conv.py GpuConvMiddle: kernels/webgpu/
glu.wgsl, dwconv_silu.wgsl) against the C scalar tier's silu(dwconv1d(glu(h))), bit for bit
(a NaN where C has one counts as equal: payloads are not reproduced), on ordinary and extreme
data (sigmoid saturating, pk_expq overflowing and underflowing, products overflowing to
infinity, zeros of both signs, subnormals); and shader mutations the comparison must catch.

Natively through PyPI wgpu on any Vulkan adapter; here Mesa lavapipe. Skipped, saying why,
without wgpu or an adapter."""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels import KernelError
from engine.executors.webgpu.conv import GpuConvMiddle
from engine.executors.webgpu.device import SHADER_DIR, GpuKernels

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")
from test_webgpu_kernels import device  # noqa: E402,F401 - the fixture: a device, or a skip saying why

pytestmark = pytest.mark.webgpu

SHAPES = ([(T, D, K) for T in (1, 2, 4, 9, 31, 125) for D in (8, 64) for K in (1, 3, 9, 31)]
          + [(T, D, K) for T in (1, 9, 31) for D in (1, 6, 13) for K in (3, 9)]   # D % 4 != 0: padded lanes
          + [(9, 1024, K) for K in (1, 3, 9, 31)])


@pytest.fixture(scope="module")
def gpu(device):
    return GpuKernels(device, packed_dot=False)


def mixed(rng, n, extreme):
    """float32 values: mostly ordinary (normal, sd 3), with a share (most of them when
    `extreme`) of gates past pk_expq's thresholds (|v| in 80..120: sigmoid 0 or 1, exp overflow
    and underflow), huge values (1e30..3.4e38: products overflow), zeros of both signs,
    subnormals and tiny normals; and, when `extreme`, infinities."""
    out = (rng.standard_normal(n) * 3).astype(np.float32)
    kind = rng.integers(0, 10 if extreme else 40, n)
    sign = np.where(rng.integers(0, 2, n) == 1, -1, 1).astype(np.float32)
    out[kind == 0] = (sign * rng.uniform(80, 120, n)).astype(np.float32)[kind == 0]
    out[kind == 1] = (sign * 10.0 ** rng.uniform(30, 38.5, n)).astype(np.float32)[kind == 1]
    out[kind == 2] = (sign * 0.0).astype(np.float32)[kind == 2]
    sub = (rng.integers(1, 1 << 23, n, dtype=np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)).view(np.float32)
    out[kind == 3] = sub[kind == 3]
    out[kind == 4] = (sign * 10.0 ** rng.uniform(-38, -30, n)).astype(np.float32)[kind == 4]
    out[kind == 5] = (sign * rng.uniform(10, 60, n)).astype(np.float32)[kind == 5]
    out = np.nan_to_num(out, posinf=3.4e38, neginf=-3.4e38).astype(np.float32)
    if extreme:                   # a few infinities (pw1's GEMM can overflow; an infinite tap)
        few = rng.integers(0, 50, n) == 0
        out[few] = (sign * np.float32(np.inf))[few]
    return out


def case(seed, T, D, K, extreme=False):
    rng = np.random.default_rng(seed)
    h = mixed(rng, T * 2 * D, extreme)
    w = mixed(rng, D * K, extreme) * np.float32(0.3)
    b = mixed(rng, D, extreme)
    return h, w.astype(np.float32), b


def reference(scalar, h, w, b, T, D, K):
    g = scalar.glu(h, T, D)
    return np.frombuffer(scalar.silu(scalar.dwconv1d(g, T, D, w, b, K), T * D), np.float32)


def mismatches(got, want) -> np.ndarray:
    got = np.frombuffer(memoryview(got).cast("B"), np.uint32)
    want = np.asarray(want, np.float32).view(np.uint32)
    nan_g, nan_w = (got & 0x7FFFFFFF) > 0x7F800000, (want & 0x7FFFFFFF) > 0x7F800000
    return np.flatnonzero((got != want) & ~(nan_g & nan_w))


def check_data(gpu, scalar, h, w, b, T, D, K):
    got = GpuConvMiddle(gpu, w, b, K)(h, T)
    want = reference(scalar, h, w, b, T, D, K)
    bad = mismatches(got, want)
    if bad.size:
        i = bad[0]
        pytest.fail(f"T={T} D={D} K={K}: {bad.size} of {T * D} differ; first t={i // D} c={i % D}: "
                    f"got {np.frombuffer(got, np.uint32)[i]:#010x} want {want.view(np.uint32)[i]:#010x}")
    return want


def check(gpu, scalar, T, D, K, seed, extreme=False):
    return check_data(gpu, scalar, *case(seed, T, D, K, extreme), T, D, K)


@pytest.mark.parametrize("T,D,K", SHAPES, ids=[f"T{T}-D{D}-K{K}" for T, D, K in SHAPES])
def test_conv_middle_matches_scalar(gpu, scalar, T, D, K):
    check(gpu, scalar, T, D, K, seed=T * 100003 + D * 101 + K)


@pytest.mark.parametrize("T,D,K", [(31, 64, 9), (125, 8, 31), (9, 1024, 3), (4, 64, 1)])
def test_conv_middle_extreme_data(gpu, scalar, T, D, K):
    """Mostly extreme values: infinities, NaNs and -0.0 among the outputs."""
    want = check(gpu, scalar, T, D, K, seed=7 + K, extreme=True)
    u = want.view(np.uint32)
    assert (u == 0x80000000).any() and ((u & 0x7FFFFFFF) == 0x7F800000).any()
    assert ((u & 0x7FFFFFFF) > 0x7F800000).any()


def test_conv_middle_through_the_thresholds(gpu, scalar):
    """Gates and SiLU inputs placed where pk_expq switches paths: channels 0..31 carry values
    v with gate 100 (sigmoid 1), so y = silu(v); channels 32..63 value 1 with gate v, so
    y = silu(sigmoid(v)) (subnormal sigmoids for v near -100); v sweeps -110..110, the
    thresholds' neighbourhoods, zeros and subnormals; taps (0, 1, 0), bias 0. Outputs include
    subnormals, both zeros and the 0.5-rounding ties."""
    T, D, K = 125, 64, 3
    rng = np.random.default_rng(5)
    edges = np.float32([88.72, 88.0, 87.33654, 87.0, 0.0, 1e-30, 1e-40])
    near = ((np.concatenate([edges, -edges]).view(np.int32)[:, None]
             + np.arange(-20, 20, dtype=np.int32)[None, :]).ravel().view(np.float32))
    v = np.concatenate([near, rng.uniform(-110, 110, T * 32 - near.size).astype(np.float32)])
    v = rng.permutation(v).reshape(T, 32)
    h = np.empty((T, 2, D), np.float32)
    h[:, 0, :32], h[:, 1, :32] = v, 100.0
    h[:, 0, 32:], h[:, 1, 32:] = 1.0, v[::-1]
    w = np.tile(np.float32([0.0, 1.0, 0.0]), D)
    want = check_data(gpu, scalar, h.reshape(-1), w, np.zeros(D, np.float32), T, D, K)
    u = want.view(np.uint32) & 0x7FFFFFFF
    assert ((u > 0) & (u < 0x800000)).sum() > 10 and (want.view(np.uint32) == 0x80000000).any()


def test_passes_batch_with_other_work(gpu, scalar):
    """passes() reads and writes device buffers: two conv middles in one submission."""
    T, D, K = 31, 64, 9
    (h1, w, b), (h2, _, _) = case(1, T, D, K), case(2, T, D, K)
    conv = GpuConvMiddle(gpu, w, b, K)
    hb1, hb2 = gpu.upload(h1), gpu.upload(h2)
    o1, o2 = gpu.storage(4 * T * D), gpu.storage(4 * T * D)
    before = gpu.counters["submissions"]
    gpu.run(conv.passes(hb1, o1, T) + [])
    gpu.run(conv.passes(hb2, o2, T))
    assert gpu.counters["submissions"] == before + 2
    for hb, o, h in ((hb1, o1, h1), (hb2, o2, h2)):
        assert not mismatches(gpu.read(o, 4 * T * D), reference(scalar, h, w, b, T, D, K)).size


def test_shapes_refused(gpu):
    w, b = np.zeros(8 * 3, np.float32), np.zeros(8, np.float32)
    with pytest.raises(KernelError, match="odd"):
        GpuConvMiddle(gpu, np.zeros(8 * 4, np.float32), b, 4)
    with pytest.raises(KernelError, match="dw holds"):
        GpuConvMiddle(gpu, w[:20], b, 3)
    with pytest.raises(KernelError, match="float32"):
        GpuConvMiddle(gpu, w.astype(np.float64), b, 3)
    conv = GpuConvMiddle(gpu, w, b, 3)
    with pytest.raises(KernelError, match="h holds"):
        conv(np.zeros(2 * 8 * 5, np.float32), 4)
    with pytest.raises(KernelError, match="T must be"):
        conv(np.zeros(0, np.float32), 0)
    with pytest.raises(KernelError, match="out buffer"):
        conv.passes(gpu.storage(2 * 8 * 4 * 4), gpu.storage(16), 4)


MUTATIONS = {
    # the taps summed in reverse
    "taps_reversed": ("for (var j = first; j < last; j++) {\n        acc",
                      "for (var jr = first; jr < last; jr++) {\n        let j = first + last - 1u - jr;\n        acc"),
    # the bias as the sum's start (as well as added last)
    "bias_first": ("var acc = vec4<u32>(0u);", "var acc = b[c4];"),
    # the first tap inside the sequence dropped at its start (t < K/2)
    "edge_tap_dropped": ("select(0u, half - t, t < half)", "select(0u, half - t + 1u, t < half)"),
    # the second channel of a group multiplied by the first channel's tap
    "lanes_swapped": ("sf_mul(taps.y, x.y)", "sf_mul(taps.x, x.y)"),
    # GLU as value * sigmoid(-gate)
    "glu_gate_negated": ("sf_sigmoid(h[row + gp.d + c])", "sf_sigmoid(h[row + gp.d + c] ^ F32_SIGN)"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutations_are_caught(device, scalar, name):
    old, new = MUTATIONS[name]

    def patch(source):
        if "fn main" in source and old in source:
            return source.replace(old, new)
        return source
    mutated = GpuKernels(device, packed_dot=False, patch=patch)
    seen = []
    for T, D, K, extreme in ((31, 64, 9, False), (9, 64, 3, True), (9, 64, 3, False)):
        h, w, b = case(11, T, D, K, extreme)
        if len(seen) == 2:
            w.reshape(D, K)[::2, 0] = np.inf            # edge taps infinite: skipped, or NaN
        seen.append(mismatches(GpuConvMiddle(mutated, w, b, K)(h, T), reference(scalar, h, w, b, T, D, K)).size)
    assert any(seen), f"mutation {name} not caught"
    assert sum((SHADER_DIR / f"{m}.wgsl").read_text().count(old) for m in ("glu", "dwconv_silu")) == 1
