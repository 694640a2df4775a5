"""The attention's order-free reductions (docs/kernels.md, "Order-free reductions"): the scores'
dot products and the weighted sum of values are exact int32 sums of block-quantised operands.
Here the rule is written out again in Python integers and numpy float32 steps, independently of
kernels/attention_blocks.h, and the C is held to it bit for bit; permuted inputs give permuted
outputs (any order of the sums computes the same bits), and the float sums the rule replaced
would fail that test."""

from __future__ import annotations

import math

import numpy as np
import pytest

NAN_BITS = 0x7fc00000
rng = np.random.default_rng(47)


def f32(a):
    return np.ascontiguousarray(a, np.float32)


def bits(a):
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def written_bits(n: int) -> int:
    """b = min(11, floor((30 - ceil(log2 n)) / 2))."""
    return min(11, (30 - (n - 1).bit_length()) // 2)


def written_quantise(vec, b: int):
    """(E, mantissas) with vec ~ m * 2^E, or (None, zeros) when vec holds an inf or NaN. The unit
    is 2^(F - 126 - b) for F the largest exponent field (at least 1); each |x| / unit rounded to
    the nearest integer, halves away from zero (exact in double: a float32 scaled by a power of
    two, and below 0.25 whenever x + 0.5 could round)."""
    fields = (bits(vec).astype(np.int64) >> 23) & 0xff
    if (fields == 0xff).any():
        return None, np.zeros(len(vec), np.int64)
    E = max(1, int(fields.max())) - 126 - b
    m = [int(math.floor(math.ldexp(abs(float(x)), -E) + 0.5)) * (-1 if x < 0 else 1) for x in vec]
    return E, np.array(m, np.int64)


def scaled(a: int, e: int) -> np.float32:
    """a * 2^e rounded to float32 once (the double is exact)."""
    return np.float32(math.ldexp(float(a), e))


def written_scores(qu, k, qv, p, s, sums: str = "integer"):
    """pk_rel_scores' rule. sums="float32 in order" is the rule it replaced (d ascending, float32
    multiply then add): the mutation the order-free tests must catch."""
    T, dk = qu.shape
    y = np.empty((T, T), np.float32)
    if sums == "float32 in order":
        for i in range(T):
            for j in range(T):
                ac = bd = np.float32(0)
                for d in range(dk):
                    ac = np.float32(ac + np.float32(qu[i, d] * k[j, d]))
                    bd = np.float32(bd + np.float32(qv[i, d] * p[T - 1 - i + j, d]))
                y[i, j] = (ac + bd) / np.float32(s)
        return y
    b = written_bits(dk)
    q_qu, q_k, q_qv, q_p = ([written_quantise(row, b) for row in m] for m in (qu, k, qv, p))
    for i in range(T):
        for j in range(T):
            r = T - 1 - i + j
            (ea, ma), (ek, mk), (ec, mc), (ep, mp) = q_qu[i], q_k[j], q_qv[i], q_p[r]
            if None in (ea, ek, ec, ep):
                y[i, j] = np.uint32(NAN_BITS).view(np.float32)
                continue
            ac = scaled(int(ma @ mk), ea + ek)
            bd = scaled(int(mc @ mp), ec + ep)
            y[i, j] = (ac + bd) / np.float32(s)
    return y


def written_context(scalar, scores, v, sums: str = "integer"):
    """pk_attention_context's rule (pk_expq from the kernels: it is elementwise, not under test).
    sums="float" is the rule it replaced: exp, a float64 sum, e / (float)sum, then float32 sums
    over j in order."""
    T, dk = v.shape
    out = np.empty((T, dk), np.float32)
    b = written_bits(T)
    columns = [written_quantise(v[:, d], b) for d in range(dk)]
    for i in range(T):
        row = scores[i]
        if not np.isfinite(row).all():
            out[i] = np.uint32(NAN_BITS).view(np.float32)
            continue
        e = np.frombuffer(scalar.math("expq", f32(row - row.max()), T), np.float32)
        if sums == "float":
            w = e / np.float32(sum(float(x) for x in e))       # the double sum, in order
            for d in range(dk):
                acc = np.float32(0)
                for j in range(T):
                    acc = np.float32(acc + np.float32(w[j] * v[j, d]))
                out[i, d] = acc
            continue
        _, m = written_quantise(e, b)
        total = np.float32(int(m.sum()))
        for d in range(dk):
            ev, mv = columns[d]
            out[i, d] = np.uint32(NAN_BITS).view(np.float32) if ev is None else scaled(int(m @ mv), ev) / total
    return out


def operands(kind: str, rows: int, cols: int, seed: int):
    """Rows an attention meets and awkward ones: projections' typical values, a wide dynamic
    range per row, zeros, subnormals, and a row with an inf or NaN."""
    r = np.random.default_rng(seed)
    if kind == "normal":
        return f32(r.standard_normal((rows, cols)) * 2)
    if kind == "wide":
        return f32(r.standard_normal((rows, cols)) * np.exp2(r.integers(-30, 12, (rows, cols))))
    if kind == "zeros":
        x = f32(r.standard_normal((rows, cols)))
        x[::2] = 0.0
        x[1::3] = -0.0
        return x
    if kind == "subnormal":
        raw = r.integers(0, 1 << 23, (rows, cols), dtype=np.uint32) | (r.integers(0, 2, (rows, cols), dtype=np.uint32) << 31)
        x = raw.view(np.float32).copy()
        x[0] = f32(r.standard_normal(cols))          # subnormals beside normal rows
        return x
    if kind == "nonfinite":
        x = f32(r.standard_normal((rows, cols)))
        x[rows // 2, cols // 2] = np.inf
        x[-1, 0] = np.nan
        return x
    raise ValueError(kind)


SCORE_SHAPES = [(1, 1), (2, 3), (9, 16), (33, 5), (17, 128), (5, 257), (3, 600)]   # dk > 256: b < 11
KINDS = ["normal", "wide", "zeros", "subnormal", "nonfinite"]


@pytest.mark.parametrize("T, dk", SCORE_SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_scores_are_their_written_rule_bit_for_bit(scalar, kind, T, dk):
    qu, qv = operands(kind, T, dk, 1), operands("normal", T, dk, 2)
    k, p = operands(kind, T, dk, 3), operands(kind, 2 * T - 1, dk, 4)
    s = np.float32(math.sqrt(dk))
    got = np.frombuffer(scalar.rel_scores(qu, k, qv, p, T, dk, s), np.float32).reshape(T, T)
    want = written_scores(qu, k, qv, p, s)
    assert (bits(got) == bits(want)).all()
    if kind == "nonfinite" and T > 8:
        assert (bits(got) == NAN_BITS).any() and (bits(got) != NAN_BITS).any()


@pytest.mark.parametrize("T, dk", [(1, 1), (2, 3), (9, 16), (70, 8), (257, 3), (300, 2)])    # T > 256: b < 11
@pytest.mark.parametrize("kind", KINDS)
def test_context_is_its_written_rule_bit_for_bit(scalar, kind, T, dk):
    scores = f32(rng.standard_normal((T, T)) * 4)
    if kind == "nonfinite" and T > 1:
        scores[T // 2, 0] = np.inf
    v = operands(kind, T, dk, 5)
    got = np.frombuffer(scalar.attention_context(scores.copy(), v, T, dk), np.float32).reshape(T, dk)
    want = written_context(scalar, scores, v)
    assert (bits(got) == bits(want)).all()


def test_attention_is_close_to_float64_attention(scalar):
    """The quantised sums cost little accuracy: a head of full-size proportions (dk = 128,
    T = 125) against float64 softmax attention: relative L2 0.27% on these random operands
    (diffuse weights, where the exponentials' 2^-10 unit matters most), held below 0.5%."""
    T, dk = 125, 128
    qu, k, qv, v = (f32(rng.standard_normal((T, dk))) for _ in range(4))
    p = f32(rng.standard_normal((2 * T - 1, dk)))
    s = np.float32(math.sqrt(dk))
    scores = np.frombuffer(scalar.rel_scores(qu, k, qv, p, T, dk, s), np.float32).reshape(T, T)
    got = np.frombuffer(scalar.attention_context(scores.copy(), v, T, dk), np.float32).reshape(T, dk)
    q64 = [m.astype(np.float64) for m in (qu, k, qv, p, v)]
    ref_scores = (q64[0] @ q64[1].T + np.stack([q64[2][i] @ q64[3][T - 1 - i:2 * T - 1 - i].T for i in range(T)])) / s
    assert np.abs(scores - ref_scores).max() < 0.05
    e = np.exp(ref_scores - ref_scores.max(1, keepdims=True))
    ref = (e / e.sum(1, keepdims=True)) @ q64[4]
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 5e-3


def test_the_sums_are_order_free_and_the_old_float_sums_were_not(scalar):
    """Permuting d (the same way in qu, k, qv and p) leaves every score's bits; permuting j (the
    scores' columns and v's rows) leaves the context's. The float32 sums the rule replaced give
    other bits on the same permutations: a float sum reintroduced anywhere fails this test."""
    T, dk = 24, 64
    qu, k, qv = (operands("wide", T, dk, seed) for seed in (6, 7, 8))
    p = operands("wide", 2 * T - 1, dk, 9)
    s = np.float32(8)
    perm = np.random.default_rng(10).permutation(dk)
    pd = [f32(m[:, perm]) for m in (qu, k, qv, p)]
    y = np.frombuffer(scalar.rel_scores(qu, k, qv, p, T, dk, s), np.uint32)
    assert (np.frombuffer(scalar.rel_scores(*pd[:3], pd[3], T, dk, s), np.uint32) == y).all()
    old = written_scores(qu, k, qv, p, s, sums="float32 in order")
    old_permuted = written_scores(*pd, s, sums="float32 in order")
    assert (bits(old) != bits(old_permuted)).any(), "the data must be able to tell an order-dependent sum"

    scores = f32(rng.standard_normal((T, T)) * 3)
    v = operands("wide", T, dk, 11)
    jperm = np.random.default_rng(12).permutation(T)
    ctx = scalar.attention_context(scores.copy(), v, T, dk).tobytes()
    assert scalar.attention_context(f32(scores[:, jperm]), f32(v[jperm]), T, dk).tobytes() == ctx
    old = written_context(scalar, scores, v, sums="float")
    old_permuted = written_context(scalar, f32(scores[:, jperm]), f32(v[jperm]), sums="float")
    assert (bits(old) != bits(old_permuted)).any(), "the data must be able to tell an order-dependent sum"
