"""Float ops of the graph (kernels/ops.h) against numpy float64 references."""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels import KernelError

rng = np.random.default_rng(0)


def f32(a):
    return np.ascontiguousarray(a, np.float32)


def arr(x, shape):
    return np.frombuffer(x, np.float32).reshape(shape)


def test_f16_to_f32_exhaustive(scalar):
    h = np.arange(65536, dtype=np.uint16)
    got = np.frombuffer(scalar.f16_to_f32(h, h.size), np.uint32)
    want = h.view(np.float16).astype(np.float32).view(np.uint32)
    nan = np.isnan(h.view(np.float16))
    assert (got[~nan] == want[~nan]).all() and np.isnan(got[nan].view(np.float32)).all()


def test_layernorm(scalar):
    x, g, b = f32(rng.standard_normal((7, 64)) * 3 + 1), f32(rng.standard_normal(64)), f32(rng.standard_normal(64))
    y = arr(scalar.layernorm(x, 7, 64, g, b, 1e-5), (7, 64))
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * g + b
    assert np.abs(y - ref).max() < 1e-5


def norm_rows(kind: str, N: int, D: int, seed: int):
    """Rows a layer norm meets and the awkward ones: residual-stream-like values, a wide dynamic
    range (a few large values among tiny ones: where a float sum's order matters most), values
    close around a large one, constant rows (variance 0), zeros, subnormals."""
    r = np.random.default_rng(seed)
    if kind == "normal":
        return f32(r.standard_normal((N, D)) * 3 + 1)
    if kind == "wide":
        x = r.standard_normal((N, D)) * np.exp2(r.integers(-40, 40, (N, D)))
        return f32(x)
    if kind == "cancelling":                # large values that cancel in pairs among small ones
        x = r.standard_normal((N, D))
        big = np.exp2(r.integers(30, 45, (N, D // 8)))
        x[:, : D // 8], x[:, D // 8: 2 * (D // 8)] = big, -big
        return f32(x)
    if kind == "offset":                    # a large common value, a tiny spread: the mean's rounding
        x = 1000 + r.standard_normal((N, D)) * 1e-3   # decides which end holds the largest square
        x[0::2, 0], x[1::2, 0] = 1000.5, 999.5        # one far value, above or below
        return f32(x)
    if kind == "constant":
        return f32(np.repeat(r.standard_normal((N, 1)), D, 1))
    if kind == "zeros":
        return np.zeros((N, D), np.float32)
    if kind == "subnormal":
        bits = r.integers(0, 1 << 23, (N, D), dtype=np.uint32) | (r.integers(0, 2, (N, D), dtype=np.uint32) << 31)
        return bits.view(np.float32)
    raise ValueError(kind)


def written_layernorm(x, g, b, eps: float, sums: str = "fixed"):
    """pk_layernorm as kernels/norm__scalar.c's comment defines it, in Python integers and numpy
    float32/float64 steps (an independent writing of the rule). sums="float64 in order" is the
    rule it replaced (sequential double sums): the mutation the order-free test must catch."""
    import math
    N, D = x.shape
    B = 62 - max(0, (D - 1).bit_length())
    y = np.empty_like(x)
    for n in range(N):
        row = x[n]
        if not np.isfinite(row).all():
            y[n] = np.uint32(0x7fc00000).view(np.float32)
            continue
        def top_f32(v):
            e = (int(np.float32(v).view(np.uint32)) >> 23) & 0xff
            return max(e, 1) - 126
        def top_f64(v):
            e = (int(np.float64(v).view(np.uint64)) >> 52) & 0x7ff
            return max(e, 1) - 1022
        if sums == "fixed":
            top = max(top_f32(v) for v in row)
            total = sum(int(math.ldexp(float(v), B - top)) for v in row)
            mean = np.float32(math.ldexp(float(total), top - B) / D)
        else:
            acc = 0.0
            for v in row:
                acc += float(v)
            mean = np.float32(acc / D)
        sq = [(float(v) - float(mean)) ** 2 for v in row]
        if sums == "fixed":
            top2 = max([-300] + [top_f64(v) for v in sq])
            total2 = sum(int(math.ldexp(v, B - top2)) for v in sq)
            var = np.float32(math.ldexp(float(total2), top2 - B) / D)
        else:
            acc = 0.0
            for v in sq:
                acc += v
            var = np.float32(acc / D)
        inv = np.float32(1) / np.sqrt(np.float32(var + np.float32(eps)))
        y[n] = ((row - mean) * inv) * g + b
    return y


@pytest.mark.parametrize("D", [1, 3, 64, 65, 640, 1024, 1025])
@pytest.mark.parametrize("kind", ["normal", "wide", "cancelling", "offset", "constant", "zeros", "subnormal"])
def test_layernorm_is_its_written_rule_bit_for_bit(scalar, kind, D):
    """The C layer norm against the rule written out independently (integer row sums)."""
    N = 3
    x = norm_rows(kind, N, D, seed=D)
    g, b = f32(rng.standard_normal(D)), f32(rng.standard_normal(D))
    got = arr(scalar.layernorm(x, N, D, g, b, 1e-5), (N, D))
    want = written_layernorm(x, g, b, 1e-5)
    assert (got.view(np.uint32) == want.view(np.uint32)).all()


def test_layernorm_rows_are_order_free_and_the_old_float_sums_were_not(scalar):
    """Permuting a row (with its gains and biases) permutes the output bit for bit: the row sums
    are exact integer sums, so a SIMD or GPU split in any order computes the same bits. The rule
    it replaced (float64 sums in index order) gives other bits on the same permuted rows."""
    N, D = 16, 1024
    x = norm_rows("cancelling", N, D, seed=5)
    g, b = f32(rng.standard_normal(D)), np.zeros(D, np.float32)     # no bias to hide the mean's bits
    perm = np.random.default_rng(6).permutation(D)
    y = arr(scalar.layernorm(x, N, D, g, b, 1e-5), (N, D))
    yp = arr(scalar.layernorm(f32(x[:, perm]), N, D, f32(g[perm]), f32(b[perm]), 1e-5), (N, D))
    assert (yp.view(np.uint32) == y[:, perm].view(np.uint32)).all()
    old = written_layernorm(x, g, b, 1e-5, sums="float64 in order")
    old_permuted = written_layernorm(f32(x[:, perm]), f32(g[perm]), f32(b[perm]), 1e-5, sums="float64 in order")
    assert (old_permuted.view(np.uint32) != old[:, perm].view(np.uint32)).any(), \
        "the data must be able to tell an order-dependent sum"


def test_layernorm_of_a_row_with_inf_or_nan_is_nan(scalar):
    D = 8
    x = f32(rng.standard_normal((3, D)))
    x[0, 3], x[1, 0], x[2, 7] = np.inf, -np.inf, np.nan
    g, b = f32(np.ones(D)), f32(np.zeros(D))
    y = arr(scalar.layernorm(x, 3, D, g, b, 1e-5), (3, D))
    assert (y.view(np.uint32) == 0x7fc00000).all()


@pytest.mark.parametrize("D", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1023, 1024, 1025])
@pytest.mark.parametrize("kind", ["normal", "wide", "cancelling", "offset", "constant", "zeros", "subnormal"])
def test_layernorm_tiers_bit_identical_to_scalar(scalar, tier_kernels, kind, D):
    """The SIMD tiers' layer norm (kernels/norm.h: extremes on float32 lanes, the row sums split
    into two exact float64 lane sums) against pk_layernorm, at lengths around the lane counts
    (where the lanes end and the scalar tail begins), on every kind of row; one row also gets
    -0 and +0 at its ends, and one an inf or a NaN past the lanes' first group."""
    N = 4
    x = norm_rows(kind, N, D, seed=1000 + D)
    x[0, 0], x[0, -1] = -0.0, 0.0
    if D > 9:
        x[1, 9] = np.nan if D % 2 else -np.inf
    g, b = f32(rng.standard_normal(D)), f32(rng.standard_normal(D))
    want = scalar.layernorm(x, N, D, g, b, 1e-5)
    assert tier_kernels.layernorm(x, N, D, g, b, 1e-5).tobytes() == want.tobytes()


def test_activations(scalar):
    x = f32(rng.uniform(-20, 20, 1000))
    x64 = x.astype(np.float64)
    assert np.abs(arr(scalar.silu(x, 1000), 1000) - x64 / (1 + np.exp(-x64))).max() < 1e-5
    assert (arr(scalar.relu(x, 1000), 1000) == np.maximum(x, 0)).all()
    g = f32(rng.standard_normal((5, 12)))
    y = arr(scalar.glu(g, 5, 6), (5, 6))
    assert np.abs(y - g[:, :6] / (1 + np.exp(-g[:, 6:].astype(np.float64)))).max() < 1e-5      # pk_expq: relative 1e-5
    d = f32(rng.standard_normal(1000))
    assert (arr(scalar.add_scaled(x, 0.5, d, 1000), 1000) == x + np.float32(0.5) * d).all()


def test_dwconv1d(scalar):
    T, C, K = 11, 6, 9
    x, w, b = f32(rng.standard_normal((T, C))), f32(rng.standard_normal((C, K))), f32(rng.standard_normal(C))
    y = arr(scalar.dwconv1d(x, T, C, w, b, K), (T, C))
    pad = np.concatenate([np.zeros((K // 2, C)), x, np.zeros((K // 2, C))])
    ref = np.stack([(pad[t:t + K] * w.T).sum(0) for t in range(T)]) + b
    assert np.abs(y - ref).max() < 1e-5
    with pytest.raises(KernelError, match="must be odd"):
        scalar.dwconv1d(x, T, C, w, b, 8)


def test_matmul_nt(scalar):
    a, b = f32(rng.standard_normal((5, 16))), f32(rng.standard_normal((7, 16)))
    assert np.abs(arr(scalar.matmul_nt(a, b, 5, 7, 16, 0.25), (5, 7)) - a @ b.T * 0.25).max() < 1e-5


@pytest.mark.parametrize("T, C, K", [(1, 1, 1), (5, 3, 9), (40, 70, 9), (3, 8, 31), (7, 130, 65)])
def test_dwconv1d_is_the_written_sum_bit_for_bit(scalar, T, C, K):
    """pk_dwconv1d runs channels in lanes (blocks of 64, the plain loop past 64 taps); each output
    must still be ((0 + w0 x0) + w1 x1 + ...) + b in float32, taps in order, those outside the
    clip skipped - emulated here in numpy float32, one rounded operation at a time."""
    x, w, b = f32(rng.standard_normal((T, C))), f32(rng.standard_normal((C, K))), f32(rng.standard_normal(C))
    acc = np.zeros((T, C), np.float32)
    for j in range(K):
        for t in range(T):
            s = t + j - K // 2
            if 0 <= s < T:
                acc[t] = acc[t] + w[:, j] * x[s]
    want = acc + b
    assert arr(scalar.dwconv1d(x, T, C, w, b, K), (T, C)).tobytes() == want.tobytes()


@pytest.mark.parametrize("Cin, Cout", [(1, 4), (4, 4), (4, 8)])
def test_conv2d_stride2(scalar, Cin, Cout):
    """One input channel per group (conv0: Cin 1; the depthwise convs: Cin = Cout): close to a
    float64 conv (the rule's bits: tests/test_conv_rule.py); other groupings are refused."""
    H, W = 9, 16
    x, w, b = f32(rng.standard_normal((Cin, H, W))), f32(rng.standard_normal((Cout, 1, 3, 3))), f32(rng.standard_normal(Cout))
    y, Ho, Wo = scalar.conv2d_s2(x, Cin, H, W, w, b, Cout, Cin)
    assert (Ho, Wo) == (5, 8)
    pad = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    ref = np.zeros((Cout, Ho, Wo))
    for co in range(Cout):
        g = co // (Cout // Cin)
        for a in range(3):
            for e in range(3):
                ref[co] += w[co, 0, a, e] * pad[g, a:a + 2 * Ho:2, e:e + 2 * Wo:2]
        ref[co] += b[co]
    assert np.abs(arr(y, (Cout, Ho, Wo)) - ref).max() < 2e-2          # 11-bit mantissas of rows ~3 wide
    with pytest.raises(KernelError, match="one input channel per group"):
        scalar.conv2d_s2(x, Cin, H, W, f32(rng.standard_normal((Cout, Cin, 3, 3))), b, Cout, 1) if Cin > 1 else \
            scalar.conv2d_s2(x, 2, H, W // 2, w, b, Cout, 1)


@pytest.mark.parametrize("H, W, C", [(1, 1, 1), (2, 3, 5), (9, 16, 8), (17, 7, 3), (5, 6, 130)])
def test_channel_last_depthwise_conv_is_the_grouped_conv(scalar, H, W, C):
    """The subsampling's third conv on channel-last maps gives pk_conv2d_s2's bits (groups = C),
    whole or in channel ranges (one per thread), and leaves the other channels alone."""
    x, w, b = f32(rng.standard_normal((C, H, W))), f32(rng.standard_normal((C, 1, 3, 3))), f32(rng.standard_normal(C))
    want, Ho, Wo = scalar.conv2d_s2(x, C, H, W, w, b, C, groups=C)
    want = arr(want, (C, Ho, Wo)).transpose(1, 2, 0)
    x_last = f32(x.transpose(1, 2, 0))
    y, Ho2, Wo2 = scalar.dwconv2d_s2_cl(x_last, H, W, C, w, b)
    assert (Ho2, Wo2) == (Ho, Wo) and arr(y, (Ho, Wo, C)).tobytes() == f32(want).tobytes()
    parts = np.full((Ho, Wo, C), 7.0, np.float32)
    for c0, c1 in ((0, C // 2), (C // 2, C)) if C > 1 else ((0, 1),):
        if c0 < c1:
            scalar.dwconv2d_s2_cl(x_last, H, W, C, w, b, c0, c1, out=parts)
            assert parts[:, :, c0:c1].tobytes() == f32(want[:, :, c0:c1]).tobytes()
    assert parts.tobytes() == f32(want).tobytes()
    relu_first, _, _ = scalar.dwconv2d_s2_cl(scalar.relu(x_last, x_last.size), H, W, C, w, b)
    assert scalar.dwconv2d_s2_cl(x_last, H, W, C, w, b, relu_input=True)[0].tobytes() == relu_first.tobytes()
    with pytest.raises(KernelError, match="channels 2..1"):
        scalar.dwconv2d_s2_cl(x_last, H, W, C, w, b, 2, 1)
    with pytest.raises(KernelError, match="x: need"):
        scalar.dwconv2d_s2_cl(x_last[:-1], H + 1, W, C, w, b)


@pytest.mark.parametrize("N, A, B", [(1, 1, 1), (3, 5, 7), (2, 16, 33)])
def test_transpose_last2(scalar, N, A, B):
    x = f32(rng.standard_normal((N, A, B)))
    x.flat[0], x.flat[-1] = -0.0, np.nan
    want = f32(x.transpose(0, 2, 1))
    assert arr(scalar.transpose_last2(x, N, A, B), (N, B, A)).tobytes() == want.tobytes()
    relu = arr(scalar.relu(want, want.size), want.size).tobytes()         # pk_relu: -0 and NaN -> +0
    assert arr(scalar.transpose_last2(x, N, A, B, relu=True), want.size).tobytes() == relu


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 1000, 4099])
def test_silu_tiers_bit_identical_to_scalar(scalar, tier_kernels, n):
    """The SIMD tiers' silu (kernels/activation.h) against pk_silu: random values across the
    fast-path limit |x| <= 87 and every special value, at lengths around the lane counts."""
    values = rng.uniform(-95, 95, n).astype(np.float32)
    specials = np.array([87, -87, np.nextafter(np.float32(87), np.float32(100)), -np.nextafter(np.float32(87), np.float32(100)),
                         88.73, -103.98, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, 200, -200], np.float32)
    values[::5] = np.resize(specials, values[::5].size)
    plain = np.frombuffer(scalar._unary("pk_silu", values, n) if n else b"", np.uint32)
    got = np.frombuffer(tier_kernels.silu(values, n), np.uint32)
    assert got.tobytes() == plain.tobytes()


@pytest.mark.parametrize("T, D, dk, h0, h1", [(1, 8, 4, 0, 2), (9, 48, 16, 1, 3), (33, 40, 8, 0, 5), (70, 128, 64, 1, 2)])
def test_attention_heads_equal_the_unfused_ops(scalar, T, D, dk, h0, h1):
    """pk_attention_heads = for each head: its columns of q, k, v, p, qu = qh + u_h,
    qv = qh + vb_h (add_scaled with 1), rel_scores, attention_context, into its columns of
    out - bit for bit; the other heads' columns are left alone."""
    q, k, v = (f32(rng.standard_normal((T, D))) for _ in range(3))
    p = f32(rng.standard_normal((2 * T - 1, D)))
    u, vb = f32(rng.standard_normal(D)), f32(rng.standard_normal(D))
    s = np.float32(dk ** 0.5)
    out = np.full((T, D), 7.0, np.float32)
    scalar.attention_heads(T, D, dk, h0, h1, q, k, v, p, u, vb, s, out)
    want = out.copy()
    want[:, h0 * dk:h1 * dk] = 0
    for h in range(h0, h1):
        cols = slice(h * dk, (h + 1) * dk)
        qh, kh, vh, ph = (np.ascontiguousarray(m[:, cols]) for m in (q, k, v, p))
        qu = arr(scalar.add_scaled(qh, 1.0, f32(np.tile(u[cols], T)), T * dk), (T, dk))
        qv = arr(scalar.add_scaled(qh, 1.0, f32(np.tile(vb[cols], T)), T * dk), (T, dk))
        scores = scalar.rel_scores(qu, kh, qv, ph, T, dk, s)
        want[:, cols] = arr(scalar.attention_context(scores, vh, T, dk), (T, dk))
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("T, F, C", [(1, 1, 1), (5, 7, 3), (40, 80, 96), (13, 9, 130), (19, 37, 100), (8, 6, 16)])
def test_channel_last_head_is_the_head_in_every_tier(scalar, T, F, C):
    """subsampling_head_cl (kernels/parakeet_tdt/head_impl.h: lanes over channels, interior pixels in vector
    registers, conv0 kept three rows at a time) gives pk_subsampling_head's bits, transposed to
    [H2][W2][C], in every native tier, whole and in channel ranges (one per thread; ranges that
    are not whole vectors), with -0, NaN and inf among the inputs."""
    from conftest import NATIVE_TIERS
    from engine.kernels import Kernels
    x = f32(rng.standard_normal((T, F)))
    flat = x.reshape(-1)
    flat[::13] = -0.0
    if T * F > 40:
        flat[29], flat[31], flat[37] = np.nan, np.inf, -np.inf
    w0, b0, w2, b2 = (f32(rng.standard_normal(n)) for n in (C * 9, C, C * 9, C))
    y, H2, W2 = scalar.subsampling_head(x, T, F, C, w0, b0, w2, b2)
    want = f32(arr(y, (C, H2 * W2)).T).tobytes()
    for tier in NATIVE_TIERS:
        k = Kernels(tier)
        got, H, W = k.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2)
        assert (H, W) == (H2, W2) and got.tobytes() == want, tier
        parts = np.zeros(H * W * C, np.float32)
        for c0, c1 in ((0, C // 3), (C // 3, C)) if C > 2 else ((0, C),):
            k.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2, c0, c1, out=parts)
        assert parts.tobytes() == want, tier
    with pytest.raises(KernelError, match="channels 0..0"):
        scalar.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2, 0, 0)
