/* Relative-position self-attention (contracts in ops.h: pk_rel_scores, pk_softmax_rows,
 * pk_matmul_nn, pk_attention_heads), written once and compiled twice: in ops__scalar.c as the
 * exported pk_ functions every module has, and per tier in one_call_impl.h for the one-call layer,
 * with that tier's compiler flags (the loops over j and n have independent outputs, so
 * compilers vectorise them at the tier's width without touching any sum's order) and the
 * tier's exp for the softmax (pk_expf's steps lane-wise: activation.h softmax_exp_row__<tier>).
 *
 * The includer defines PK_ATTENTION(name), the (static) name of each function,
 * PK_ATTENTION_EXP_ROW(n, row, mx), which sets row[i] = pk_expf(row[i] - mx) for i < n, and
 * PK_ATTENTION_LANES, the width of the score and weighted-sum tiles (4 or 8 floats).
 *
 * Tiles: 4 rows x PK_ATTENTION_LANES columns of scores (or of the weighted sum) are summed in
 * vector locals - registers - across the whole of d (or of the scores' row), written with the
 * compilers' vector extension: lane-wise IEEE operations, so every output still adds its terms
 * in ascending order, as the plain loops do for the edges that do not fill a tile. */

#include <string.h>
#include "ops.h"
#include "pk_math.h"

typedef float pk_attention_vec __attribute__((vector_size(4 * PK_ATTENTION_LANES)));
enum { PK_ATTENTION_TILE_ROWS = 4 };

static inline pk_attention_vec PK_ATTENTION(load)(const float *p) {
    pk_attention_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

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
    enum { R = PK_ATTENTION_TILE_ROWS, L = PK_ATTENTION_LANES };
    int m = 0;
    for (; m + R <= M; m += R) {
        int n = 0;
        for (; n + L <= N; n += L) {                        /* a tile: R rows x L columns */
            pk_attention_vec acc[R];
            for (int r = 0; r < R; r++) acc[r] = (pk_attention_vec){0};
            for (int k = 0; k < K; k++) {                   /* for each output: k ascending */
                pk_attention_vec bv = PK_ATTENTION(load)(b + (size_t)k * N + n);
                for (int r = 0; r < R; r++) acc[r] = acc[r] + bv * a[(size_t)(m + r) * K + k];
            }
            for (int r = 0; r < R; r++) memcpy(c + (size_t)(m + r) * N + n, &acc[r], sizeof acc[r]);
        }
        for (int r = 0; r < R; r++)                         /* the columns past the last tile */
            for (int nn = n; nn < N; nn++) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++) acc = acc + a[(size_t)(m + r) * K + k] * b[(size_t)k * N + nn];
                c[(size_t)(m + r) * N + nn] = acc;
            }
    }
    for (; m < M; m++) {                                    /* the rows past the last tile */
        float *cr = c + (size_t)m * N;
        for (int n = 0; n < N; n++) cr[n] = 0.0f;
        for (int k = 0; k < K; k++) {
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
    enum { R = PK_ATTENTION_TILE_ROWS, L = PK_ATTENTION_LANES };
    int i = 0;
    for (; i + R <= T; i += R) {
        int j = 0;
        for (; j + L <= T; j += L) {                        /* a tile: R rows x L columns */
            pk_attention_vec ac[R], bt[R];
            for (int r = 0; r < R; r++) ac[r] = bt[r] = (pk_attention_vec){0};
            for (int d = 0; d < dk; d++) {
                pk_attention_vec kv = PK_ATTENTION(load)(kt + (size_t)d * T + j);
                for (int r = 0; r < R; r++) {
                    ac[r] = ac[r] + kv * qu[(size_t)(i + r) * dk + d];
                    bt[r] = bt[r] + PK_ATTENTION(load)(pt + (size_t)d * P + (T - 1 - (i + r)) + j) * qv[(size_t)(i + r) * dk + d];
                }
            }
            for (int r = 0; r < R; r++) {
                pk_attention_vec out = (ac[r] + bt[r]) / s;
                memcpy(y + (size_t)(i + r) * T + j, &out, sizeof out);
            }
        }
        for (int r = 0; r < R; r++)                         /* the columns past the last tile */
            for (int jj = j; jj < T; jj++) {
                float ac = 0.0f, bt = 0.0f;
                for (int d = 0; d < dk; d++) {
                    ac = ac + qu[(size_t)(i + r) * dk + d] * kt[(size_t)d * T + jj];
                    bt = bt + qv[(size_t)(i + r) * dk + d] * pt[(size_t)d * P + (T - 1 - (i + r)) + jj];
                }
                y[(size_t)(i + r) * T + jj] = (ac + bt) / s;
            }
    }
    for (; i < T; i++) {                                    /* the rows past the last tile */
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
