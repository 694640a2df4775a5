/* Relative-position self-attention (contracts in attention.h: pk_rel_scores, pk_attention_context,
 * pk_attention_heads), written once and compiled twice: in attention__scalar.c as the exported
 * pk_ functions every module has, and per tier in one_call_impl.h for the one-call layer, with that
 * tier's compiler flags and the tier's exp for the softmax (pk_expq's steps lane-wise:
 * activation.h softmax_exp_row__<tier>).
 *
 * Both reductions are exact integer sums over block-quantised operands (attention_blocks.h;
 * docs/kernels.md "Order-free reductions"): the scores' dot products over d and the weighted
 * sum of values over j. Integer addition is associative, so the compilers may vectorise the
 * dot products any way they like (pmaddwd, i32x4.dot_i16x8_s) and a GPU may add them in a tree:
 * every tier gets the same bits by construction.
 *
 * The includer defines PK_ATTENTION(name), the (static) name of each function, and
 * PK_ATTENTION_EXP_ROW(n, row, mx), which sets row[i] = pk_expq(row[i] - mx) for i < n. */

#include <string.h>
#include "attention.h"
#include "attention_blocks.h"
#include "ops.h"               /* pk_take_cols, pk_copy_cols: a head's columns */
#include "pk_math.h"

#ifdef __wasm_simd128__
#include "dot16__wasm_simd128.h"
#endif

/* sum_d a[d] * b[d] of block mantissas quantised with b = pk_block_bits(length) (n: the length
 * padded with zeros to a multiple of 32): |a|, |b| <= 2^b and length * 2^(2b) <= 2^30, so the
 * int32 sum is exact in any order. Compilers for x86 turn the loop into pmaddwd; for SIMD128 it
 * is written with the instruction (dot16__wasm_simd128.h). */
static inline int32_t PK_ATTENTION(dot16)(const int16_t *restrict a, const int16_t *restrict b, int n) {
#ifdef __wasm_simd128__
    return pk_dot16_wasm_simd128(a, b, n);
#else
    int32_t acc = 0;
    for (int d = 0; d < n; d++) acc += (int32_t)a[d] * b[d];
    return acc;
#endif
}

/* One head's scores y [T][T] (scratch: pk_rel_scores_scratch_bytes(T, dk)):
 *   A = sum_d Q(qu)[i][d] Q(k)[j][d],  B = sum_d Q(qv)[i][d] Q(p)[r][d],  r = T-1-i+j,
 *   y[i][j] = (float(A, E(qu_i) + E(k_j)) + float(B, E(qv_i) + E(p_r))) / s
 * each row of qu, qv, k and p quantised on its own (pk_block_quantise with b = pk_block_bits(dk));
 * float(a, e) is a * 2^e rounded once (pk_block_scaled); a score with a non-finite operand row is
 * 0x7fc00000. */
static void PK_ATTENTION(rel_scores)(int T, int dk, const float *qu, const float *k, const float *qv, const float *p,
                                        float s, void *scratch, float *y) {
    const int b = pk_block_bits(dk), P = 2 * T - 1, n = pk_block_padded(dk);
    int32_t *e_qu = scratch, *e_qv = e_qu + T, *e_k = e_qv + T, *e_p = e_k + T;
    int16_t *m_qu = (int16_t *)(e_p + P), *m_qv = m_qu + (size_t)T * n, *m_k = m_qv + (size_t)T * n,
            *m_p = m_k + (size_t)T * n;                 /* rows of n: dk mantissas, then zeros */
    memset(m_qu, 0, ((size_t)5 * T - 1) * n * sizeof *m_qu);
    for (int t = 0; t < T; t++) {
        e_qu[t] = pk_block_quantise(dk, qu + (size_t)t * dk, 1, b, m_qu + (size_t)t * n);
        e_qv[t] = pk_block_quantise(dk, qv + (size_t)t * dk, 1, b, m_qv + (size_t)t * n);
        e_k[t] = pk_block_quantise(dk, k + (size_t)t * dk, 1, b, m_k + (size_t)t * n);
    }
    for (int r = 0; r < P; r++) e_p[r] = pk_block_quantise(dk, p + (size_t)r * dk, 1, b, m_p + (size_t)r * n);
    for (int i = 0; i < T; i++) {
        const int16_t *a = m_qu + (size_t)i * n, *c = m_qv + (size_t)i * n;
        for (int j = 0; j < T; j++) {
            const int r = T - 1 - i + j;
            int32_t ea = e_qu[i], ek = e_k[j], ec = e_qv[i], ep = e_p[r];
            if (ea == PK_BLOCK_NONFINITE || ek == PK_BLOCK_NONFINITE || ec == PK_BLOCK_NONFINITE ||
                ep == PK_BLOCK_NONFINITE) {
                y[(size_t)i * T + j] = pk_bits_to_float(0x7fc00000u);
                continue;
            }
            float ac = pk_block_scaled(PK_ATTENTION(dot16)(a, m_k + (size_t)j * n, n), ea + ek);
            float bd = pk_block_scaled(PK_ATTENTION(dot16)(c, m_p + (size_t)r * n, n), ec + ep);
            y[(size_t)i * T + j] = (ac + bd) / s;
        }
    }
}

/* softmax(scores) v for one head, out [T][dk] (scores [T][T] are overwritten with the
 * exponentials; scratch: pk_attention_context_scratch_bytes(T, dk)). Per row i:
 *   mx = max_j x[j]; e[j] = pk_expq(x[j] - mx); m = Q(e) (b = pk_block_bits(T)), total = sum_j m[j];
 *   out[i][d] = float(sum_j m[j] Q(v)[j][d], E(v_d)) / (float)total
 * with each column d of v quantised on its own. The exponentials' block exponent cancels in the
 * ratio, so the weights are exactly m[j] / total. A row of scores holding an inf or NaN, or a
 * column of v holding one, gives 0x7fc00000 where it is used. */
static void PK_ATTENTION(context)(int T, int dk, float *scores, const float *v, void *scratch, float *out) {
    const int b = pk_block_bits(T), n = pk_block_padded(T);
    int32_t *e_v = scratch;
    int16_t *m_v = (int16_t *)(e_v + dk), *m_e = m_v + (size_t)dk * n;      /* m_v [dk][n]: columns */
    memset(m_v, 0, ((size_t)dk + 1) * n * sizeof *m_v);                     /* and m_e's padding */
    for (int d = 0; d < dk; d++) e_v[d] = pk_block_quantise(T, v + d, (size_t)dk, b, m_v + (size_t)d * n);
    for (int i = 0; i < T; i++) {
        float *row = scores + (size_t)i * T, *o = out + (size_t)i * dk;
        int finite = 1;
        for (int j = 0; j < T; j++) finite &= pk_float_is_finite(row[j]);
        if (!finite) {
            for (int d = 0; d < dk; d++) o[d] = pk_bits_to_float(0x7fc00000u);
            continue;
        }
        float mx = row[0];
        for (int j = 1; j < T; j++) if (row[j] > mx) mx = row[j];
        PK_ATTENTION_EXP_ROW(T, row, mx);
        pk_block_quantise(T, row, 1, b, m_e);
        int32_t total = 0;
        for (int j = 0; j < T; j++) total += m_e[j];
        const float denominator = (float)total;        /* exact: total < 2^24 (attention_blocks.h) */
        for (int d = 0; d < dk; d++)
            o[d] = e_v[d] == PK_BLOCK_NONFINITE
                       ? pk_bits_to_float(0x7fc00000u)
                       : pk_block_scaled(PK_ATTENTION(dot16)(m_e, m_v + (size_t)d * n, n), e_v[d]) / denominator;
    }
}

static void PK_ATTENTION(heads)(int T, int D, int dk, int h0, int h1, const float *q, const float *k, const float *v,
                                const float *p, const float *u, const float *vb, float s, float *scratch, float *out) {
    size_t td = (size_t)T * dk, pd = ((size_t)2 * T - 1) * dk;
    float *qh = scratch, *kh = qh + td, *vh = kh + td, *qu = vh + td, *qv = qu + td, *ctx = qv + td;
    float *ph = ctx + td, *scores = ph + pd;
    void *blocks = scores + (size_t)T * T;              /* the quantised operands (either step's) */
    for (int h = h0; h < h1; h++) {
        int c0 = h * dk;
        pk_take_cols(T, D, c0, dk, q, qh);
        pk_take_cols(T, D, c0, dk, k, kh);
        pk_take_cols(T, D, c0, dk, v, vh);
        pk_take_cols(2 * T - 1, D, c0, dk, p, ph);
        for (int t = 0; t < T; t++)                       /* pk_add_scaled(qh, 1, bias repeated) */
            for (int d = 0; d < dk; d++) {
                size_t i = (size_t)t * dk + d;
                qu[i] = qh[i] + 1.0f * u[c0 + d];
                qv[i] = qh[i] + 1.0f * vb[c0 + d];
            }
        PK_ATTENTION(rel_scores)(T, dk, qu, kh, qv, ph, s, blocks, scores);
        PK_ATTENTION(context)(T, dk, scores, vh, blocks, ctx);
        pk_copy_cols(T, dk, ctx, D, c0, out);
    }
}
