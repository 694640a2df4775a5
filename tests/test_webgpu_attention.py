"""Relative-position attention on the WebGPU tier (engine/executors/webgpu/attention.py GpuAttention;
kernels/webgpu/attention_blocks.wgsl, attention_scores.wgsl, attention_softmax.wgsl,
attention_context.wgsl) against the C scalar tier's Kernels.attention_heads, bit for bit, on a
shape sweep (T, dk, H) with the model's full size among them, random data with large scores
(exp underflowing to 0, weights below a block's mantissa resolution), ties, signed zeros, infinities; the scores pass
against pk_rel_scores and the softmax and weighted sum against pk_attention_context; permuted
inputs (the sums' order is free); and shader mutations the comparison must catch. Natively
through PyPI wgpu on lavapipe, as tests/test_webgpu_kernels.py."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from engine.kernels import KernelError
from engine.executors.webgpu.attention import GpuAttention
from engine.executors.webgpu.device import GpuKernels

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")
from test_webgpu_kernels import bits, device  # noqa: E402,F401 - the fixture: a device, or a skip saying why

pytestmark = pytest.mark.webgpu

# T, dk, H: every combination of T in (1, 2, 5, 13, 40), dk in (4, 8, 64), H in (1, 2, 8);
# tile edges (T % 8, T % 16 and T % 32: the scores' and the context's tiles are 32 square, their
# chunks 32 d or j, staged eight to a vec4 from rows padded to four; dk % 4, dk % 8: 17, 12, 5,
# 24; dk 36: a whole chunk and half a vec4); the full-size model's shape (D = 1024, 8 heads of
# 128) at T = 26; T = 80: softmax rows longer than its 64 invocations; T = 33 and 67 one past
# whole score tiles.
SWEEP = ([(T, dk, H) for T in (1, 2, 5, 13, 40) for dk in (4, 8, 64) for H in (1, 2, 8)]
         + [(13, 17, 3), (40, 24, 2), (17, 12, 5), (80, 8, 2), (26, 128, 8), (33, 8, 2), (67, 24, 3), (35, 36, 2)])


@pytest.fixture(scope="module")
def gpu(device):
    return GpuKernels(device, packed_dot=False)


def assert_same_bits(got, want, what):
    g, w = bits(got), bits(want)
    bad = np.flatnonzero(g != w)
    assert not bad.size, (f"{what}: {bad.size} of {g.size} differ; first #{bad[0]}: "
                          f"got {g[bad[0]]:#010x} want {w[bad[0]]:#010x}")


def attention_inputs(T, D, seed):
    """q, k, v [T][D], p [2T-1][D], u, vb [D] float32: a mix of scales so that some rows'
    scores spread by hundreds (exp underflows to 0, or below the block's mantissa resolution), equal rows (tied
    scores: the first maximum), signed zeros, subnormal values."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((T, D)).astype(np.float32)
    k = rng.standard_normal((T, D)).astype(np.float32)
    v = rng.standard_normal((T, D)).astype(np.float32)
    p = rng.standard_normal((2 * T - 1, D)).astype(np.float32)
    u = (0.5 * rng.standard_normal(D)).astype(np.float32)
    vb = (0.5 * rng.standard_normal(D)).astype(np.float32)
    q[::3] *= np.float32(12.0)                            # large scores: exp down to 0
    k[1::4] *= np.float32(9.0)
    if T > 2:
        k[2] = k[0]                                       # ties in a row's scores
        p[T - 1] = p[T + 1] if 2 * T - 1 > T + 1 else p[T - 1]
    if T > 3:
        q[3] = 0.0                                        # a row of equal scores if u, vb = 0
        q[3, ::2] = -0.0
    v[:, ::5] = np.where(rng.random((T, len(range(0, D, 5)))) < 0.3, np.float32(1e-39), v[:, ::5])
    v[-1, 1::7] = -0.0
    u[::11] = 0.0
    return q, k, v, p, u, vb


def c_reference(scalar, T, D, H, q, k, v, p, u, vb, s):
    out = np.zeros((T, D), np.float32)
    scalar.attention_heads(T, D, D // H, 0, H, q, k, v, p, u, vb, s, out)
    return out


def sqrt_dk(dk):
    return array("f", [dk ** 0.5])[0]          # as engine/parakeet_tdt/encoder.py SelfAttention


@pytest.mark.parametrize("T,dk,H", SWEEP, ids=[f"T{T}-dk{dk}-H{H}" for T, dk, H in SWEEP])
def test_attention_matches_scalar(gpu, scalar, T, dk, H):
    D = dk * H
    q, k, v, p, u, vb = attention_inputs(T, D, seed=1000 * T + 10 * dk + H)
    s = sqrt_dk(dk)
    want = c_reference(scalar, T, D, H, q, k, v, p, u, vb, s)
    got = GpuAttention(gpu, D, H, u, vb, s)(q, k, v, p, T)
    assert_same_bits(got, want, f"attention T={T} dk={dk} H={H}")


def test_position_biases_on_special_values(gpu, scalar):
    """qu = q + 1.0f * u and qv = q + 1.0f * vb, which the shader adds without the multiply (one
    soft-float add: 1.0f * x is x but for quieting a NaN, which the add does anyway): biases
    holding a signalling and a quiet NaN, infinities, both zeros, subnormals and the largest
    float, against queries that cancel them exactly (+0), overflow with them, or are -0 and
    subnormal. Head 0 carries the NaNs and infinities; head 1 only finite specials, so its
    outputs stay numbers."""
    T, dk, H = 5, 8, 2
    D = dk * H
    q, k, v, p, u, vb = attention_inputs(T, D, seed=3)
    bits = lambda *w: np.array(w, np.uint32).view(np.float32)          # noqa: E731
    u[:5] = bits(0x7F800001, 0x7FC01234, 0x7F800000, 0xFF800000, 0x7F7FFFFF)   # sNaN, qNaN, +-inf, max
    vb[:5] = bits(0xFF800005, 0x00000001, 0x7F7FFFFF, 0x80000000, 0xFF7FFFFF)  # -sNaN, subnormal, +-max, -0
    q[1, 4] = bits(0x7F7FFFFF)[0]                      # max + max: +inf; max - max: +0
    u[dk:dk + 4] = bits(0x80000000, 0x00000003, 0x80400000, 0x7149F2CA)    # -0, subnormals, 1e30
    vb[dk:dk + 4] = bits(0x00000000, 0x807FFFFF, 0x3F800000, 0xF149F2CA)   # +0, subnormal, 1, -1e30
    q[1, dk:dk + 3] = -u[dk:dk + 3]                    # exact cancellations
    q[2, dk:dk + 2] = bits(0x80000000, 0x00000002)
    s = sqrt_dk(dk)
    want = c_reference(scalar, T, D, H, q, k, v, p, u, vb, s)
    got = GpuAttention(gpu, D, H, u, vb, s)(q, k, v, p, T)
    assert_same_bits(got, want, "special position biases")
    assert np.isnan(np.asarray(want)[:, dk:]).sum() < T * dk      # head 1 is not all NaN


def test_scores_alone(gpu, scalar):
    """The quantisation and scores passes against pk_rel_scores per head (with qu, qv as the C
    adds them), read back from the scratch."""
    T, dk, H = 21, 16, 3
    D = dk * H
    q, k, v, p, u, vb = attention_inputs(T, D, seed=7)
    s = sqrt_dk(dk)
    att = GpuAttention(gpu, D, H, u, vb, s)
    bufs = [gpu.upload(x) for x in (q, k, v, p)]
    out = gpu.storage(4 * T * D)
    passes = att.passes(*bufs, out, T)
    scores_buf = passes[1][1][-1]
    gpu.run(passes[:2])
    got = np.frombuffer(gpu.read(scores_buf, 4 * H * T * T), np.float32).reshape(H, T, T)
    want = np.empty_like(got)
    for h in range(H):
        c = slice(h * dk, (h + 1) * dk)
        qu = np.ascontiguousarray(q[:, c] + np.float32(1.0) * u[c])
        qv = np.ascontiguousarray(q[:, c] + np.float32(1.0) * vb[c])
        want[h] = np.frombuffer(scalar.rel_scores(qu, np.ascontiguousarray(k[:, c]), qv,
                                                  np.ascontiguousarray(p[:, c]), T, dk, s),
                                np.float32).reshape(T, T)
    assert_same_bits(got, want, "scores")


def test_softmax_and_context_on_awkward_scores(gpu, scalar):
    """Given scores (rows whose maximum occurs more than once, +0 before -0 and the reverse,
    -inf, +inf and NaN, subnormals, spreads of hundreds) through the softmax and weighted-sum
    passes against pk_attention_context per head, with v holding subnormals, signed zeros and
    one column with an inf."""
    T, H, dk = 70, 2, 5
    D = H * dk
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((H * T, T)) * 40).astype(np.float32)
    x[0] = 0.0
    x[0, 5] = -0.0
    x[1] = -0.0
    x[1, 64] = 0.0
    x[2, [3, 40, 66]] = 500.0
    x[3] = np.float32(1e-40) * rng.integers(-3, 4, T).astype(np.float32)
    x[4, :] = -np.inf
    x[4, 9] = 1.0
    x[5, ::2] = 3.0
    x[6, 7] = np.inf
    x[T + 3, 2] = np.nan
    v = rng.standard_normal((T, D)).astype(np.float32)
    v[::4, 1] = np.float32(1e-39)
    v[5, :] = -0.0
    v[9, 2 * dk - 1] = np.inf
    zeros = np.zeros(D, np.float32)
    att = GpuAttention(gpu, D, H, zeros, zeros, 1.0)
    dummy = gpu.upload(np.zeros((2 * T - 1) * D, np.float32))
    out = gpu.storage(4 * T * D)
    passes = att.passes(dummy, dummy, gpu.upload(v), dummy, out, T)
    gpu.write(passes[1][1][-1], x)                       # the scores, as if the scores pass wrote them
    gpu.run([passes[0], passes[2], passes[3]])
    got = np.frombuffer(gpu.read(out, 4 * T * D), np.float32).reshape(T, D)
    want = np.empty_like(got)
    for h in range(H):
        c = slice(h * dk, (h + 1) * dk)
        want[:, c] = np.frombuffer(scalar.attention_context(x[h * T:(h + 1) * T].copy(), np.ascontiguousarray(v[:, c]),
                                                            T, dk), np.float32).reshape(T, dk)
    assert_same_bits(got, want, "softmax and context")
    assert (bits(want) == 0x7fc00000).any() and (bits(want) != 0x7fc00000).any()


def test_permuted_columns_give_permuted_outputs(gpu):
    """Permuting d within every head (q, k, p, u, vb and v alike) permutes the output columns bit
    for bit: the dot products' order is free on the device too (their chunks of 32 and
    packed vec4s now hold other terms)."""
    T, dk, H = 26, 40, 2
    D = dk * H
    q, k, v, p, u, vb = attention_inputs(T, D, seed=21)
    perm = np.concatenate([h * dk + np.random.default_rng(22 + h).permutation(dk) for h in range(H)])
    s = sqrt_dk(dk)
    out = np.frombuffer(GpuAttention(gpu, D, H, u, vb, s)(q, k, v, p, T), np.float32).reshape(T, D)
    pq, pk, pv, pp = (np.ascontiguousarray(m[:, perm]) for m in (q, k, v, p))
    got = GpuAttention(gpu, D, H, np.ascontiguousarray(u[perm]), np.ascontiguousarray(vb[perm]), s)(pq, pk, pv, pp, T)
    assert_same_bits(np.frombuffer(got, np.float32), np.ascontiguousarray(out[:, perm]), "permuted")


def test_shapes_refused(gpu):
    z = np.zeros(8, np.float32)
    with pytest.raises(KernelError, match="multiple"):
        GpuAttention(gpu, 8, 3, z, z, 1.0)
    with pytest.raises(KernelError, match="u holds"):
        GpuAttention(gpu, 8, 2, np.zeros(7, np.float32), z, 1.0)
    att = GpuAttention(gpu, 8, 2, z, z, 2.0)
    with pytest.raises(KernelError, match="q holds"):
        att(np.zeros(15, np.float32), np.zeros(16, np.float32), np.zeros(16, np.float32), np.zeros(24, np.float32), 2)
    with pytest.raises(KernelError, match="bytes"):
        att.groups(4200)
    with pytest.raises(KernelError, match="T must be"):
        att.groups(0)


MUTATIONS = {
    "blocks: truncate, not round": ("mag = (sig + (1u << (shift - 1u))) >> shift;", "mag = sig >> shift;"),
    "blocks: the largest field of the even elements only": ("F = max(F, (x >> 23u) & 0xffu);",
                                                            "F = max(F, select((x >> 23u) & 0xffu, 1u, (i & 1u) == 1u));"),
    "scores: shift the other way": ("let pl = (SCORE_TILE - 1u - li + lj)", "let pl = (SCORE_TILE - 1u - lj + li)"),
    "softmax: the tree keeps the smaller": ("if (kb > ka || (kb == ka", "if (kb < ka || (kb == ka"),
    "softmax: the total misses a part": ("sm_val[lid] = bitcast<u32>(part);", "sm_val[lid] = bitcast<u32>(part * i32(lid != 1u));"),
    "context: the last eight j of a chunk dropped": ("for (var g = 0u; g < CTX_GROUPS; g = g + 1u) {",
                                                     "for (var g = 0u; g + 1u < CTX_GROUPS; g = g + 1u) {"),
    "packing: the odd mantissas lose their sign": ("return bitcast<vec4<i32>>(w) >> vec4<u32>(16u);",
                                                   "return bitcast<vec4<i32>>(w >> vec4<u32>(16u));"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutation_caught(device, scalar, name):
    old, new = MUTATIONS[name]
    hits = []

    def patch(source):
        hits.append(old in source)
        return source.replace(old, new)

    gpu = GpuKernels(device, packed_dot=False, patch=patch)
    T, dk, H = 40, 16, 2
    D = dk * H
    q, k, v, p, u, vb = attention_inputs(T, D, seed=11)
    s = sqrt_dk(dk)
    want = c_reference(scalar, T, D, H, q, k, v, p, u, vb, s)
    got = GpuAttention(gpu, D, H, u, vb, s)(q, k, v, p, T)
    assert any(hits), f"mutation {name!r} matched no source"
    assert (bits(got) != bits(want)).any(), f"mutation {name!r} was not caught"
