/* The dequantisation every GEMM tier applies to an exact int32 dot product. Fixed order,
 * float32, no fused multiply-add (built with -ffp-contract=off):
 *
 *   y[n][o] = ((float)acc[n][o] * xs[n]) * ws[o]            if bias == NULL
 *   y[n][o] = (((float)acc[n][o] * xs[n]) * ws[o]) + bias[o] otherwise
 *
 * (float)acc rounds to nearest even (exact while |acc| < 2^24). A NULL bias adds nothing:
 * adding 0.0f would turn -0.0f into +0.0f.
 *
 * Scratch: the GEMM drivers carve their staging buffers from caller-provided scratch of at
 * least gemm_scratch_bytes(N, K) bytes (same formula for every tier and both GEMMs):
 *   64 (alignment) + 8*K (decoded panel) + 8*K (dot-order staging) + 2*N*K (int16 activations).
 */
#ifndef PK_GEMM_COMMON_H
#define PK_GEMM_COMMON_H

#include "common.h"

static inline float pk_dequant(int32_t acc, float xs, float ws, const float *bias, int o) {
    float y = ((float)acc * xs) * ws;
    if (bias) y = y + bias[o];
    return y;
}

static inline size_t pk_gemm_scratch_bytes(int N, int K) {
    return (size_t)64 + (size_t)16 * (size_t)K + (size_t)2 * (size_t)N * (size_t)K;
}

/* The scratch's layout (above): the panel, the staging, and the activations' area, which the
 * tiers fill as their tiles read them (gemm_block_impl.h). */
static inline void *pk_gemm_carve(void *scratch, int K, int8_t **panel, int8_t **stage) {
    int8_t *base = (int8_t *)pk_align64(scratch);
    *panel = base;
    *stage = base + (size_t)8 * K;
    return base + (size_t)16 * K;
}

/* Shape and scratch checks shared by the GEMM drivers (o_multiple: 8 for fv5, 1 for int8). */
static inline int pk_gemm_check(int N, int O, int K, int o_multiple, size_t scratch_bytes) {
    if (N <= 0 || O <= 0 || K <= 0) return PK_E_SHAPE;
    if (N > PK_MAX_DIM || O > PK_MAX_DIM || K > PK_MAX_DIM) return PK_E_SHAPE;
    if (K % 8 != 0 || O % o_multiple != 0) return PK_E_SHAPE;
    if (scratch_bytes < pk_gemm_scratch_bytes(N, K)) return PK_E_SCRATCH;
    return PK_OK;
}

/* Few tokens (the decoder's one-token steps): each row's dot product read straight from the
 * row-major weights instead of staging the whole matrix for a token or three. `dot` is the
 * tier's exact int32 dot product of a row and a token (K terms); the integer sums are exact
 * either way, so the same bits as the staged GEMM. */
enum { PK_GEMV_MAX_TOKENS = 3 };
typedef int32_t (*pk_row_dot_fn)(int K, const int8_t *w, const int8_t *x);

static inline void pk_int8_gemv(pk_row_dot_fn dot, int N, int O, int K, const int8_t *xq, const float *xs,
                                const int8_t *w, const float *ws, const float *bias, float *y) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++)
            y[(size_t)n * O + o] = pk_dequant(dot(K, w + (size_t)o * K, xq + (size_t)n * K), xs[n], ws[o], bias, o);
}

PK_API size_t gemm_scratch_bytes(int N, int K);

#endif
