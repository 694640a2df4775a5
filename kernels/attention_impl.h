/* Relative-position self-attention (contracts in ops.h: pk_rel_scores, pk_softmax_rows,
 * pk_matmul_nn, pk_attention_heads), written once and compiled twice: in ops__scalar.c as the
 * exported pk_ functions every module has, and per tier in fused_impl.h for the one-call layer,
 * with that tier's compiler flags (the loops over j and n have independent outputs, so
 * compilers vectorise them at the tier's width without touching any sum's order) and the
 * tier's exp for the softmax (pk_expf's steps lane-wise: activation.h softmax_exp_row__<tier>).
 *
 * The includer defines PK_ATTENTION(name), the (static) name of each function, and
 * PK_ATTENTION_EXP_ROW(n, row, mx), which sets row[i] = pk_expf(row[i] - mx) for i < n. */

#include "ops.h"
#include "pk_math.h"

static void PK_ATTENTION(softmax_rows)(int M, int N, float *x) {
    for (int m = 0; m < M; m++) {
        float *row = x + (size_t)m * N;
        float mx = row[0];
        for (int n = 1; n < N; n++) if (row[n] > mx) mx = row[n];
        PK_ATTENTION_EXP_ROW(N, row, mx);
        double sum = 0.0;
        for (int n = 0; n < N; n++) sum += row[n];
        float total = (float)sum;
        for (int n = 0; n < N; n++) row[n] = row[n] / total;
    }
}

static void PK_ATTENTION(matmul_nn)(int M, int N, int K, const float *a, const float *b, float *c) {
    for (int m = 0; m < M; m++) {
        float *cr = c + (size_t)m * N;
        for (int n = 0; n < N; n++) cr[n] = 0.0f;
        for (int k = 0; k < K; k++) {                       /* for each n: k ascending */
            float av = a[(size_t)m * K + k];
            const float *br = b + (size_t)k * N;
            for (int n = 0; n < N; n++) cr[n] = cr[n] + av * br[n];
        }
    }
}

static void PK_ATTENTION(rel_scores)(int T, int dk, const float *qu, const float *k, const float *qv, const float *p,
                                        float s, float *scratch, float *y) {
    /* Lanes = outputs j: with k and p transposed to [dk][T] and [dk][2T-1], the inner loops run
     * over j with independent accumulators, so compilers vectorise them (-msimd128, SSE/AVX)
     * while every sum still adds d = 0, 1, ... in order: the bits of the dot-product form. */
    size_t P = (size_t)2 * T - 1;
    float *restrict kt = scratch, *restrict pt = kt + (size_t)dk * T, *restrict bd = pt + (size_t)dk * P;
    for (int j = 0; j < T; j++)
        for (int d = 0; d < dk; d++) kt[(size_t)d * T + j] = k[(size_t)j * dk + d];
    for (size_t r = 0; r < P; r++)
        for (int d = 0; d < dk; d++) pt[(size_t)d * P + r] = p[r * dk + d];
    for (int i = 0; i < T; i++) {
        float *restrict ac = y + (size_t)i * T;
        for (int j = 0; j < T; j++) ac[j] = 0.0f, bd[j] = 0.0f;
        for (int d = 0; d < dk; d++) {
            float a = qu[(size_t)i * dk + d], b = qv[(size_t)i * dk + d];
            const float *restrict kr = kt + (size_t)d * T, *restrict pr = pt + (size_t)d * P + (T - 1 - i);
            for (int j = 0; j < T; j++) ac[j] = ac[j] + a * kr[j];
            for (int j = 0; j < T; j++) bd[j] = bd[j] + b * pr[j];
        }
        for (int j = 0; j < T; j++) ac[j] = (ac[j] + bd[j]) / s;
    }
}

static void PK_ATTENTION(heads)(int T, int D, int dk, int h0, int h1, const float *q, const float *k, const float *v,
                                const float *p, const float *u, const float *vb, float s, float *scratch, float *out) {
    size_t td = (size_t)T * dk, pd = ((size_t)2 * T - 1) * dk;
    float *qh = scratch, *kh = qh + td, *vh = kh + td, *qu = vh + td, *qv = qu + td, *ctx = qv + td;
    float *ph = ctx + td, *rel = ph + pd, *scores = rel + (((size_t)3 * T - 1) * dk + T);
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
        PK_ATTENTION(rel_scores)(T, dk, qu, kh, qv, ph, s, rel, scores);
        PK_ATTENTION(softmax_rows)(T, T, scores);
        PK_ATTENTION(matmul_nn)(T, dk, T, scores, vh, ctx);
        pk_copy_cols(T, dk, ctx, D, c0, out);
    }
}
