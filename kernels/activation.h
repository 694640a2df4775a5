/* SiLU in every tier: y[i] = x[i] * pk_sigmoidq(x[i]), bit for bit what ops__scalar.c's
 * pk_silu computes (pk_sigmoidq(x) = 1 / (1 + pk_expq(-x)), pk_math.h).
 *
 * Why a tier of its own: the feed-forward and conv modules take silu of [T][4096] and
 * [T][1024] maps in every layer; in scalar code that was a tenth of the full-size encoder's
 * time (profiled). The SIMD tiers run pk_expq's steps lane-wise - the same float multiply
 * (round half to even for nearbyintf, no fused multiply-add), the same 32-bit integer steps,
 * IEEE division - on groups whose every input has |x| <= 87, where pk_expq(-x) takes its main
 * path only (k = floor(-x log2(e)) in [-126, 125], a normal float built from bits).
 * A group with any other input (|x| > 87, NaN, inf) and the tail run the scalar steps.
 *
 * Returns 0, or PK_E_SHAPE for n < 0.
 */
#ifndef PK_ACTIVATION_H
#define PK_ACTIVATION_H

#include "common.h"
#include "pk_math.h"

#define PK_SILU_FAST_LIMIT 87.0f

/* A NaN comes back as it went in, bit for bit: WebAssembly leaves the sign and payload of a NaN
 * that arithmetic returns to the engine (JavaScriptCore gave silu(0x7fc00000) as 0xffc00000),
 * and every runtime must give the same bits. Moving a value changes no bit. */
static inline float pk_silu_one(float x) { return x != x ? x : x * pk_sigmoidq(x); }

PK_API int silu__scalar(int n, const float *x, float *y);
PK_API int silu__avx2(int n, const float *x, float *y);
PK_API int silu__avx512vnni(int n, const float *x, float *y);
PK_API int silu__wasm_simd128(int n, const float *x, float *y);
PK_API int silu__wasm_relaxed_simd(int n, const float *x, float *y);

/* GLU in every tier: y [N][C] = x[:, :C] * pk_sigmoidq(x[:, C:]) for x [N][2C], pk_glu's bits
 * (pk_sigmoidq(v) = 1 / (1 + pk_expq(-v))), lane-wise as silu. For the one-call layer. */
int glu__scalar(int N, int C, const float *x, float *y);
int glu__avx2(int N, int C, const float *x, float *y);
int glu__avx512vnni(int N, int C, const float *x, float *y);
int glu__wasm_simd128(int N, int C, const float *x, float *y);
int glu__wasm_relaxed_simd(int N, int C, const float *x, float *y);

/* The softmax's exponentials in every tier: row[i] = pk_expq(row[i] - mx) for i < n, the same
 * lane-wise steps as silu (groups whose every row[i] - mx is within +-87, others and the tail
 * by the scalar steps). For kernels/attention_impl.h in the one-call layer. */
void softmax_exp_row__scalar(int n, float *row, float mx);
void softmax_exp_row__avx2(int n, float *row, float mx);
void softmax_exp_row__avx512vnni(int n, float *row, float mx);
void softmax_exp_row__wasm_simd128(int n, float *row, float mx);
void softmax_exp_row__wasm_relaxed_simd(int n, float *row, float mx);

#endif
