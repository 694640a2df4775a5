"""The subsampling's convolutions on a WebGPU device (engine/executors/webgpu/subsampling.py,
kernels/webgpu/conv_rows.wgsl, conv_s2.wgsl, flatten_relu.wgsl) against the C scalar
tier, bit for bit: the head (Kernels.subsampling_head_cl), the depthwise conv5
(Kernels.dwconv2d_s2_cl with relu_input) and the flatten (Kernels.transpose_last2 with relu) on
awkward shapes and data (zeros of both signs, negatives, subnormals, products that underflow or
overflow); the whole stack against Subsampling._frames on the tiny model; shader mutations the
comparisons must catch, and one they must not (the integer sums in another order).

Natively through PyPI wgpu on Mesa lavapipe here (a CPU emulation). Skipped, saying why,
without wgpu or an adapter."""

from __future__ import annotations

import numpy as np
import pytest

from engine.executors import Alone
from engine.family import load
from engine.kernels import KernelError
from engine.parakeet_tdt.encoder import Subsampling
from engine.executors.webgpu.subsampling import GpuSubsamplingConvs
from engine.executors.webgpu.device import GpuKernels, GpuLinear, shader_source

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")
from test_webgpu_kernels import bits, device  # noqa: E402,F401 - the fixture: a device, or a skip saying why

pytestmark = pytest.mark.webgpu


@pytest.fixture(scope="module")
def gpu(device):
    return GpuKernels(device, packed_dot=False)


def differing(got, want) -> int:
    """Outputs whose float32 bits differ (any NaN matches any NaN: payloads are not kept)."""
    g, w = bits(got), bits(want)
    nan = ((g & 0x7FFFFFFF) > 0x7F800000) & ((w & 0x7FFFFFFF) > 0x7F800000)
    return int(((g != w) & ~nan).sum())


def awkward(rng, n: int, special: bool = True) -> np.ndarray:
    """float32 values: ordinary ones of both signs, and (special) zeros of both signs,
    subnormals, tiny normals whose products underflow, and huge ones whose products overflow."""
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-3, 4, n))).astype(np.float32)
    if special:
        kind = rng.integers(0, 10, n)
        u = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
        sign = u & 0x80000000
        b = x.view(np.uint32).copy()
        b[kind == 0] = sign[kind == 0]                                          # +-0
        b[kind == 1] = sign[kind == 1] | (u[kind == 1] & 0x7FFFFF)              # subnormals
        b[kind == 2] = sign[kind == 2] | ((u[kind == 2] & 0x07FFFFFF) + 0x00800000)   # tiny normals
        b[kind == 3] = sign[kind == 3] | ((u[kind == 3] & 0x00FFFFFF) + 0x7E000000)   # huge
        x = b.view(np.float32)
    return x


def weights(rng, C: int, special: bool = True) -> list:
    """w0, b0, w2, b2, w5, b5."""
    return [awkward(rng, n, special) for n in (9 * C, C, 9 * C, C, 9 * C, C)]


# T, F, C: odd and even frames and mel bins (a map of one row or column included), channel
# counts below, at and between the C head's 4-lane vectors and 64-channel blocks (and conv_s2's
# groups of four channels: C % 4 = 1, 2, 3 leave padding lanes)
HEAD_SHAPES = ([(T, F, C) for T in (1, 2, 3, 9, 17, 64) for F in (8, 80) for C in (4, 13)]
               + [(T, 8, C) for T in (3, 9) for C in (1, 2, 6)]
               + [(T, F, 16) for T in (2, 17, 64) for F in (7, 128)]
               + [(T, F, C) for T in (1, 3, 9) for F in (8, 80) for C in (100, 256)]
               + [(520, 128, 256)])          # a whole chunk's slice at Phonon-2's size (0.5 s here)


@pytest.mark.parametrize("T,F,C", HEAD_SHAPES)
def test_head(gpu, scalar, T, F, C):
    rng = np.random.default_rng(T * 1000 + F * 10 + C)
    w = weights(rng, C)
    convs = GpuSubsamplingConvs(gpu, C, F, *w)
    x = awkward(rng, T * F)
    want, H2, W2 = scalar.subsampling_head_cl(x, T, F, C, *w[:4])
    assert convs.head_shape(T) == (H2, W2)
    assert differing(convs.head(x, T), want) == 0
    # the front end's layout [F][frames], a slice of frames read through the strides
    total, t0 = T + 5, 3
    features = awkward(rng, F * total)
    want, _, _ = scalar.subsampling_head_cl(scalar.transpose3(features, F, total, 1)[t0 * F:(t0 + T) * F],
                                            T, F, C, *w[:4])
    assert differing(convs.head(features, T, frames_total=total, t0=t0), want) == 0


def test_head_ordinary_data_is_not_all_zeros(gpu, scalar):
    """The sweep's data keep most outputs non-zero (the comparison is not vacuous)."""
    rng = np.random.default_rng(5)
    T, F, C = 17, 80, 16
    w = weights(rng, C, special=False)
    got = bits(GpuSubsamplingConvs(gpu, C, F, *w).head(awkward(rng, T * F, special=False), T))
    assert (got & 0x7FFFFFFF != 0).mean() > 0.9


# H, W, C: the maps conv5 reads (the head's output), odd and even
DW_SHAPES = ([(H, W, C) for H in (1, 2, 3, 5, 16, 33) for W in (1, 2, 20, 33) for C in (4, 13)]
             + [(H, W, C) for H in (1, 4) for W in (2, 32) for C in (100, 256)])


@pytest.mark.parametrize("H,W,C", DW_SHAPES)
def test_dwconv_of_relu(gpu, scalar, H, W, C):
    rng = np.random.default_rng(H * 1000 + W * 10 + C)
    w = weights(rng, C)
    x = awkward(rng, H * W * C)
    want, _, _ = scalar.dwconv2d_s2_cl(x, H, W, C, w[4], w[5], relu_input=True)
    assert differing(GpuSubsamplingConvs(gpu, C, 8, *w).dw(x, H, W), want) == 0


@pytest.mark.parametrize("H,W,C", [(1, 2, 4), (1, 1, 8), (1, 8, 4), (3, 5, 13), (9, 10, 16), (2, 16, 256)])
def test_flatten_relu(gpu, scalar, H, W, C):
    rng = np.random.default_rng(H * 1000 + W * 10 + C)
    x = awkward(rng, H * W * C)
    x.view(np.uint32)[:5] = [0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001]  # -0, +-inf, NaN
    want = scalar.transpose_last2(x, H, W, C, relu=True)
    got = GpuSubsamplingConvs(gpu, C, 8, *weights(rng, C)).flatten(x, H, W)
    assert (bits(got) == bits(want)).all()          # relu turns NaN into +0: exact bits throughout


# ---------------------------------------------------------------------------------------------
# the whole stack on the tiny model against Subsampling.forward (block by block on the CPU)

@pytest.fixture(scope="module")
def tiny(tiny_gguf_path, scalar, gpu):
    sub = Subsampling(Alone(scalar, one_call=False), load(tiny_gguf_path))
    convs = GpuSubsamplingConvs(gpu, sub.C, sub.n_mels, *sub.conv0, *sub.conv2, *sub.conv5)
    linears = [GpuLinear.from_weights(gpu, lin.weights, scalar) for lin in (sub.pw3, sub.pw6, sub.linear)]
    return sub, convs, linears


@pytest.mark.parametrize("T", [1, 2, 9, 17, 64, 520])      # 520: a whole chunk's slice
def test_frames_equal_the_composed_subsampling(tiny, T):
    sub, convs, linears = tiny
    F = sub.n_mels
    rng = np.random.default_rng(T)
    features = awkward(rng, F * (T + 2), special=False)                 # [F][frames], as the front end's
    x = sub.k.transpose3(features, F, T + 2, 1)[F:(T + 1) * F]          # frames 1..T, [T][F]
    want, frames = sub.forward(x, T)
    got, got_frames = convs.frames(x, T, *linears)
    assert got_frames == frames and len(got) == len(want)
    assert differing(got, want) == 0 and (bits(got) & 0x7FFFFFFF != 0).all()
    got, _ = convs.frames(features, T, *linears, frames_total=T + 2, t0=1)
    assert differing(got, want) == 0


def test_shapes_are_checked(gpu, tiny):
    sub, convs, linears = tiny
    C = 4
    w = [np.zeros(n, np.float32) for n in (9 * C, C, 9 * C, C, 9 * C, C)]
    with pytest.raises(KernelError, match="w0 holds"):
        GpuSubsamplingConvs(gpu, C, 8, w[0][:9], *w[1:])
    with pytest.raises(KernelError, match="C must be"):
        GpuSubsamplingConvs(gpu, 0, 8, *w)
    convs4 = GpuSubsamplingConvs(gpu, C, 8, *w)
    with pytest.raises(KernelError, match="x holds"):
        convs4.head(np.zeros(7, np.float32), 1)
    with pytest.raises(KernelError, match="outside"):
        convs4.head(np.zeros(8 * 4, np.float32), 3, frames_total=4, t0=2)
    with pytest.raises(KernelError, match="T must be"):
        convs4.head(np.zeros(8, np.float32), 0)
    with pytest.raises(KernelError, match="x holds"):
        convs4.head_passes(gpu.storage(16), gpu.storage(4096), 9)
    pw3, pw6, linear = linears
    with pytest.raises(KernelError, match="pw6 is"):
        convs.frames(np.zeros(9 * sub.n_mels, np.float32), 9, pw3, linear, linear)


# ---------------------------------------------------------------------------------------------
# the comparisons can fail: shader mutations they must catch

MUTATIONS = {
    # ReLU keeping the sign of a negative input (-0 instead of +0, as a max(v, 0) may give)
    "relu sign": ("select(0u, v, v - 1u < F32_INF)", "select(v & F32_SIGN, v, v - 1u < F32_INF)"),
    # mantissas of 10 bits where the rule has 11 (a coarser block)
    "mantissa bits": ("F, 11u);", "F, 10u);"),
    # a lower row's partial sum rounded to the highest row's unit instead of floored
    "floor": ("S += P[a] >> vec4<u32>(min(Eh - Ea[a], vec4<i32>(31)));",
              "S += (P[a] + select(vec4<i32>(0), vec4<i32>(1) << vec4<u32>(min(Eh - Ea[a], vec4<i32>(31)) - 1), "
              "Eh > Ea[a])) >> vec4<u32>(min(Eh - Ea[a], vec4<i32>(31)));"),
    # conv0's one input lane read from the wrong component of its vec4 (every fourth value right)
    "one lane": ("vec4<i32>(v[at & 3u])", "vec4<i32>(v[0])"),
    # four channels' taps taken from the neighbouring group (only the first group right)
    "tap group": ("tm[u32(a * 3 + e) * C4 + c4]", "tm[u32(a * 3 + e) * C4 + min(c4 + 1u, C4 - 1u)]"),
}
# the taps of a row summed right to left, and the rows joined last to first: integer sums, so
# another order must give the same bits
REORDER = [("for (var e = 0; e < 3; e++) {", "for (var e = 2; e >= 0; e--) {"),
           ("for (var a = 0; a < 3; a++) {\n        if (present[a])", "for (var a = 2; a >= 0; a--) {\n        if (present[a])")]


def conv_differences(kernels: GpuKernels, scalar) -> int:
    """Outputs of the head, conv5 and the flatten on kernels that differ from the C: ordinary
    data whose rows span more than the join's 20 binades."""
    rng = np.random.default_rng(7)
    T, F, C = 17, 80, 16
    w = weights(rng, C, special=False)
    convs = GpuSubsamplingConvs(kernels, C, F, *w)
    x = awkward(rng, T * F, special=False).reshape(T, F)
    x[1::4] *= np.float32(2.0 ** -24)                # rows far under their neighbours
    x = x.reshape(-1)
    found = differing(convs.head(x, T), scalar.subsampling_head_cl(x, T, F, C, *w[:4])[0])
    H, W = 9, 20
    a = awkward(rng, H * W * C, special=False).reshape(H, W * C)
    a[::3] *= np.float32(2.0 ** -30)
    a = a.reshape(-1)
    found += differing(convs.dw(a, H, W), scalar.dwconv2d_s2_cl(a, H, W, C, w[4], w[5], relu_input=True)[0])
    found += differing(convs.flatten(a, H, W), scalar.transpose_last2(a, H, W, C, relu=True))
    return found


def patched(device, edits) -> GpuKernels:
    sources = [shader_source(m, False) for m in ("conv_rows", "conv_s2", "flatten_relu")]
    for old, _ in edits:
        assert any(old in source for source in sources), f"{old!r} is no longer in the shaders"

    def patch(source):
        for old, new in edits:
            source = source.replace(old, new)
        return source
    return GpuKernels(device, packed_dot=False, patch=patch)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_shader_fails_the_comparison(device, scalar, name):
    assert conv_differences(patched(device, [MUTATIONS[name]]), scalar) > 0, f"mutation {name!r} went unnoticed"


def test_the_convs_sums_in_another_order_give_the_same_bits(device, scalar):
    assert conv_differences(patched(device, REORDER), scalar) == 0
