/* Per-token activation quantisation: x[N][K] float32 -> xq[N][K] int8 and xs[N] float32.
 *
 * For each token (row) n, in this order, in float32:
 *   amax  = max_k |x[n][k]|, computed on the bit patterns (|x| as uint32 = bits & 0x7fffffff;
 *           for finite floats the integer order is the float order, so every tier and every
 *           reduction order finds the same amax, and no NaN can slip through a max).
 *   if any |x| bits >= 0x7f800000 (NaN or +-inf): stop and return n+1 (nothing defined is
 *           written for rows >= n; the caller raises an error naming row n).
 *   if amax < 2^-100 (bits < 0x0d800000, including 0): xq[n][:] = 0, xs[n] = 0.
 *           (Tiny rows would make 127/amax overflow; such a token carries no signal after a
 *           LayerNorm anyway.)
 *   else:   inv   = 127.0f / amax
 *           xq    = (int8) clamp(nearbyint(x * inv), -127, 127)   round half to even
 *           xs[n] = amax / 127.0f
 * So x ~= xs[n] * xq, with |x - xs*xq| <= xs/2 (plus float32 rounding of x*inv), and
 * xq is never -128 (the GEMM tiers rely on |xq| <= 127).
 *
 * Returns 0, n+1 for the first token with a NaN/inf, or PK_E_SHAPE.
 */
#ifndef PK_QUANTIZE_ACT_H
#define PK_QUANTIZE_ACT_H

#include <math.h>
#include <string.h>
#include "common.h"

#define PK_QUANT_TINY_BITS 0x0d800000u  /* 2^-100 */
#define PK_FLOAT_INF_BITS 0x7f800000u

/* Steps every tier shares (the per-element ones are also the SIMD tiers' tails). */
static inline uint32_t pk_abs_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x7fffffffu;
}

/* One element: clamp(nearbyint(x * inv), -127, 127). */
static inline int8_t pk_quant_value(float x, float inv) {
    float q = nearbyintf(x * inv);
    if (q > 127.0f) q = 127.0f;
    if (q < -127.0f) q = -127.0f;
    return (int8_t)q;
}

/* From a finite row's amax bits: 0 for a zero row (xq = 0, xs = 0, written here), else 1
 * with *inv = 127 / amax and *xs = amax / 127. */
static inline int pk_quant_scale(uint32_t amax_bits, int K, int8_t *out, float *inv, float *xs) {
    if (amax_bits < PK_QUANT_TINY_BITS) {
        memset(out, 0, (size_t)K);
        *xs = 0.0f;
        return 0;
    }
    float amax;
    memcpy(&amax, &amax_bits, sizeof amax);
    *inv = 127.0f / amax;
    *xs = amax / 127.0f;
    return 1;
}

PK_API int quantize_act__scalar(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__wasm_simd128(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__avx2(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__avx512vnni(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__wasm_relaxed_simd(int N, int K, const float *x, int8_t *xq, float *xs);

#endif
