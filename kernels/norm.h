/* The layer norm in every tier: layernorm__<tier>(N, D, x, g, b, eps, y) gives pk_layernorm's
 * bits (below; the rule, and its scalar writing: norm__scalar.c). x, y [N][D], g, b [D].
 *
 * pk_layernorm(N, D, x, g, b, eps, y): per row, mean and var as exact integer sums of the row in
 * block fixed point, rounded once, inv = 1 / sqrtf(var + eps), y = ((x - mean) * inv) * g + b.
 *
 * Why a tier of its own: the rule's row sums are exact integer sums of fixed-point values, and
 * written for one element at a time (a double -> int64 conversion each, which WebAssembly SIMD
 * has no lane instruction for) the 120 norms of a full-size encode cost a few times what the
 * float sums they replaced did in a browser. The SIMD tiers (norm_impl.h) find a row's extremes
 * on float32 lanes and form the integer sums on float64 lanes, each fixed-point value split in
 * two integers that a double holds exactly: the same integers, so the same bits.
 *
 * The helpers below are the rule's steps that do not depend on how a row is walked; the scalar
 * writing and the lanes both use them.
 *
 * Returns 0, or PK_E_SHAPE for N <= 0 or D <= 0. */
#ifndef PK_NORM_H
#define PK_NORM_H

#include <math.h>
#include <string.h>
#include "common.h"
#include "pk_math.h"

/* B = 62 - ceil(log2 D): D values each below 2^B in magnitude sum in int64 without overflow. */
static inline int pk_norm_value_bits(int D) {
    int k = 0;
    while (k < 31 && (1 << k) < D) k++;
    return 62 - k;
}

/* A double's biased exponent field (|v| < 2^(field - 1022) for a nonzero v). */
static inline unsigned pk_norm_field_f64(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (unsigned)((u >> 52) & 0x7ffu);
}

/* The scale of the row's values: 2^shift with shift = B - top for |x| < 2^top, top = field - 126
 * from the row's largest float32 exponent field (at least 1). */
static inline int pk_norm_shift(unsigned largest_field, int B) { return B - ((int)largest_field - 126); }

/* The scale of the squares (x - mean)^2 (doubles), from the row's extremes: rounding is
 * monotone, so the largest square is that of max(hi - mean, mean - lo), and its field bounds
 * them all. A nonzero square is at least 2^-298 (both sides are floats, so x - mean is a multiple
 * of 2^-149): field 722 (2^-300) bounds a row of zeros. */
static inline int pk_norm_square_shift(float lo, float hi, float mean, int B) {
    const double v_hi = (double)hi - (double)mean, v_lo = (double)mean - (double)lo;
    const double v_max = v_hi > v_lo ? v_hi : v_lo;
    unsigned largest = pk_norm_field_f64(v_max * v_max);
    if (largest < 722) largest = 722;
    return B - ((int)largest - 1022);
}

/* sum / D for a fixed-point sum of values scaled by 2^shift: (float)((double)sum * 2^-shift / D),
 * the rule's one rounding of the sum (int64 -> double, round to nearest even). */
static inline float pk_norm_average(int64_t sum, int shift, int D) {
    return (float)(((double)sum * pk_pow2d(-shift)) / (double)D);
}

/* A row with an inf or a NaN is NaN. */
static inline void pk_norm_nan_row(int D, float *out) {
    for (int d = 0; d < D; d++) out[d] = pk_bits_to_float(0x7fc00000u);
}

/* y = ((x - mean) * inv) * g + b, inv = 1 / sqrtf(var + eps): independent lanes, which the
 * compiler may vectorise with the including file's flags. */
static inline void pk_norm_scale_row(int D, const float *row, float mean, float var, float eps, const float *g,
                                     const float *b, float *out) {
    const float inv = 1.0f / sqrtf(var + eps);
    for (int d = 0; d < D; d++) out[d] = ((row[d] - mean) * inv) * g[d] + b[d];
}

#define PK_LAYERNORM_ARGS int N, int D, const float *x, const float *g, const float *b, float eps, float *y
PK_API int layernorm__scalar(PK_LAYERNORM_ARGS);
PK_API int layernorm__avx2(PK_LAYERNORM_ARGS);
PK_API int layernorm__avx512vnni(PK_LAYERNORM_ARGS);
PK_API int layernorm__wasm_simd128(PK_LAYERNORM_ARGS);
PK_API int layernorm__wasm_relaxed_simd(PK_LAYERNORM_ARGS);

PK_API int pk_layernorm(int N, int D, const float *x, const float *g, const float *b, float eps, float *y);

#endif
