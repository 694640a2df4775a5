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

#include "common.h"

#define PK_QUANT_TINY_BITS 0x0d800000u  /* 2^-100 */
#define PK_FLOAT_INF_BITS 0x7f800000u

PK_API int quantize_act__scalar(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__wasm_simd128(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__avx2(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__avx512vnni(int N, int K, const float *x, int8_t *xq, float *xs);
PK_API int quantize_act__wasm_relaxed_simd(int N, int K, const float *x, int8_t *xq, float *xs);

#endif
