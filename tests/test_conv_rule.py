"""The subsampling's convolutions over block-quantised rows (docs/kernels.md, "The subsampling's
convolutions"; kernels/conv_blocks.h): each input row and each channel's nine taps one block of
11-bit mantissas, exact integer partial sums per row, the rows joined in integers on the highest
row's unit (the lower ones floored to it), one rounding per output. Here the rule is written out again in Python integers,
independently of the C, and every implementation is held to it bit for bit: the plain reference
(pk_conv2d_s2, pk_subsampling_head), the channel-last head and depthwise conv on every native tier,
whole and in channel ranges. The sums have no order (the rule summed backwards gives the same
bits), while the float32 sums it replaced give other bits when their order changes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_attention_rule import NAN_BITS, bits, f32, written_quantise

BITS = 11


def relu(x):
    """pk_relu's formula: x > 0 ? x : +0 (-0 and NaN give +0)."""
    x = f32(x)
    return np.where(x > 0, x, np.float32(0)).astype(np.float32)


def written_conv(x, w, b, relu_out: bool = False, sums: str = "integer"):
    """One channel: x [H][W] (float32), w [3][3], b -> y [ceil(H/2)][ceil(W/2)].
    sums="backwards" adds every integer sum in the opposite order; sums="float32 in order" is the
    rule it replaced (taps rows then columns, float32 multiply then add from 0, then + b), and
    "float32 backwards" the same with the taps in the opposite order."""
    H, W = x.shape
    Ho, Wo = (H + 1) // 2, (W + 1) // 2
    y = np.empty((Ho, Wo), np.float32)
    rows = [written_quantise(x[r], BITS) for r in range(H)]
    Ew, t = written_quantise(w.reshape(9), BITS)
    taps = [(a, e) for a in range(3) for e in range(3)]
    for i in range(Ho):
        for j in range(Wo):
            inside = [a for a in range(3) if 0 <= 2 * i + a - 1 < H]
            if sums.startswith("float32"):
                acc = np.float32(0)
                for a, e in (taps if sums == "float32 in order" else taps[::-1]):
                    r, col = 2 * i + a - 1, 2 * j + e - 1
                    if a in inside and 0 <= col < W:
                        acc = np.float32(acc + np.float32(w[a, e] * x[r, col]))
                v = np.float32(acc + b)
            elif Ew is None or any(rows[2 * i + a - 1][0] is None for a in inside):
                v = np.uint32(NAN_BITS).view(np.float32)
            else:
                P, E = {}, {}
                for a in inside:
                    E[a], m = rows[2 * i + a - 1]
                    cols = [e for e in range(3) if 0 <= 2 * j + e - 1 < W]
                    if sums == "backwards":
                        cols.reverse()
                    P[a] = sum(int(t[a * 3 + e]) * int(m[2 * j + e - 1]) for e in cols)
                Eh = max(E.values())
                order = sorted(inside, reverse=sums == "backwards")
                S = sum(P[a] >> min(Eh - E[a], 31) for a in order)       # >>: floor
                assert abs(S) < 2 ** 26
                v = np.float32(np.float32(math.ldexp(float(S), Eh + Ew)) + b)
            y[i, j] = (v if v > 0 else np.float32(0)) if relu_out else v      # pk_relu's formula
    return y


def planes(kind: str, C: int, H: int, W: int, seed: int):
    """Maps the subsampling meets and awkward ones: typical values, rows whose ranges differ by
    far more than the 31 places step 3 shifts at most, zero rows, subnormals, an inf and a NaN."""
    r = np.random.default_rng(seed)
    x = f32(r.standard_normal((C, H, W)) * 2)
    if kind == "wide rows":
        x = f32(x * np.exp2(r.integers(-40, 8, (C, H, 1))))
    elif kind == "zeros":
        x[:, ::2] = 0.0
        x[:, 1::3, ::2] = -0.0
    elif kind == "subnormal":
        raw = r.integers(0, 1 << 23, (C, H, W), dtype=np.uint32) | (r.integers(0, 2, (C, H, W), dtype=np.uint32) << 31)
        x[:, 1::2] = raw.view(np.float32)[:, 1::2]
    elif kind == "nonfinite" and H * W > 8:
        x[0, H // 2, W // 2] = np.inf
        x[-1, -1, 0] = np.nan
    return x


KINDS = ["normal", "wide rows", "zeros", "subnormal", "nonfinite"]
SHAPES = [(1, 1), (2, 3), (3, 2), (5, 7), (9, 16), (17, 33), (40, 12)]


@pytest.mark.parametrize("H, W", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_conv2d_s2_is_the_written_rule_bit_for_bit(scalar, kind, H, W):
    C = 3
    x = planes(kind, C, H, W, H * 100 + W)
    w = f32(np.random.default_rng(W).standard_normal((C, 3, 3)))
    w[1] *= np.float32(2.0 ** -30)                       # a channel of tiny taps
    b = f32(np.random.default_rng(H).standard_normal(C))
    got, Ho, Wo = scalar.conv2d_s2(x, C, H, W, w, b, C, groups=C)
    got = np.frombuffer(got, np.float32).reshape(C, Ho, Wo)
    for c in range(C):
        assert (bits(got[c]) == bits(written_conv(x[c], w[c], b[c]))).all(), c
    if kind == "nonfinite" and H * W > 8:
        assert (bits(got) == NAN_BITS).any() and (bits(got) != NAN_BITS).any()


@pytest.mark.parametrize("T, F, C", [(1, 1, 1), (5, 7, 3), (13, 9, 70), (24, 40, 5), (9, 128, 2)])
@pytest.mark.parametrize("kind", ["normal", "wide rows", "nonfinite"])
def test_the_head_and_conv5_are_the_written_rule_on_every_tier(scalar, kind, T, F, C):
    """The head (relu(conv0) per channel, then the depthwise conv2) and conv5 (the depthwise
    conv of relu(x)) by the rule in Python against the channel-last C on every native tier,
    whole and in channel ranges, and against the plain channel-first reference."""
    from conftest import NATIVE_TIERS
    from engine.kernels import Kernels
    x = planes(kind, 1, T, F, T * F)[0]
    r = np.random.default_rng(C)
    w0, w2 = f32(r.standard_normal((C, 3, 3))), f32(r.standard_normal((C, 3, 3)))
    b0, b2 = f32(r.standard_normal(C)), f32(r.standard_normal(C))
    conv0 = [written_conv(x, w0[c], b0[c], relu_out=True) for c in range(C)]
    want = np.stack([written_conv(conv0[c], w2[c], b2[c]) for c in range(C)])     # [C][H2][W2]
    first, H2, W2 = scalar.subsampling_head(x, T, F, C, w0, b0, w2, b2)
    assert bits(np.frombuffer(first, np.float32)).tobytes() == bits(want).tobytes()
    want_last = f32(want.transpose(1, 2, 0))
    m = f32(want_last * 3 - 1)                           # conv5's input: negatives for its ReLU
    want5 = np.stack([written_conv(relu(m[:, :, c]), w2[c], b0[c]) for c in range(C)]).transpose(1, 2, 0)
    for tier in NATIVE_TIERS:
        k = Kernels(tier)
        got, H, W = k.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2)
        assert (H, W) == (H2, W2) and got.tobytes() == want_last.tobytes(), tier
        parts = np.zeros(H * W * C, np.float32)
        for c0, c1 in ((0, C // 3), (C // 3, C)) if C > 2 else ((0, C),):
            k.subsampling_head_cl(x, T, F, C, w0, b0, w2, b2, c0, c1, out=parts)
        assert parts.tobytes() == want_last.tobytes(), tier
        got5, _, _ = k.dwconv2d_s2_cl(m, H2, W2, C, w2, b0, relu_input=True)
        assert got5.tobytes() == f32(want5).tobytes(), tier


def test_the_sums_have_no_order_and_the_old_float_sums_had_one(scalar):
    """The rule summed backwards (every tap sum and the rows' join) gives the same bits as the C;
    the float32 sums the rule replaced give other bits when summed backwards on the same data, so
    a float sum reintroduced anywhere fails the bit-for-bit tests above."""
    H, W = 24, 40
    x = planes("wide rows", 1, H, W, 5)[0] + planes("normal", 1, H, W, 6)[0]
    w = f32(np.random.default_rng(7).standard_normal((3, 3)) * np.exp2(np.arange(9).reshape(3, 3) * 3 - 12))
    b = np.float32(0.25)
    got = np.frombuffer(scalar.conv2d_s2(x, 1, H, W, w.reshape(1, 3, 3), f32([b]), 1, groups=1)[0], np.float32)
    got = got.reshape(H // 2, W // 2)
    assert bits(got).tobytes() == bits(written_conv(x, w, b, sums="backwards")).tobytes()
    forwards = written_conv(x, w, b, sums="float32 in order")
    backwards = written_conv(x, w, b, sums="float32 backwards")
    assert (bits(forwards) != bits(backwards)).any(), "the data must be able to tell an order-dependent sum"
    assert (bits(forwards) != bits(got)).any()


def test_the_convs_stay_close_to_float64(scalar):
    """The quantised sums cost little accuracy: conv0's shape on mel-like rows (F = 128) against
    a float64 conv: relative L2 6.9e-4 here (11-bit mantissas of each row's largest value; the
    pointwise conv that follows quantises to int8 per token, 2^-7), held below 1.5e-3."""
    H, W = 64, 128
    x = f32(np.random.default_rng(8).standard_normal((H, W)) * 2 - 1)
    w = f32(np.random.default_rng(9).standard_normal((4, 3, 3)) * 0.3)
    b = f32(np.random.default_rng(10).standard_normal(4) * 0.1)
    got = np.frombuffer(scalar.conv2d_s2(x, 1, H, W, w, b, 4, groups=1)[0], np.float32).reshape(4, H // 2, W // 2)
    pad = np.pad(x.astype(np.float64), 1)
    ref = np.stack([sum(float(w[c, a, e]) * pad[a:a + H:2, e:e + W:2] for a in range(3) for e in range(3)) + float(b[c])
                    for c in range(4)])
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1.5e-3
