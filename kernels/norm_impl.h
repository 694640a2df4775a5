/* The layer norm (contract in norm.h) written once for the SIMD tiers: each norm__<tier>.c
 * includes its lanes header (f32_lanes__<tier>.h: float32 lanes, float64 lanes of half as
 * many), defines PK_TIER, then includes this file.
 *
 * Per row, as norm__scalar.c's pk_layernorm: the extremes (and whether a NaN is there), the
 * fixed-point sum of the values, the mean, the fixed-point sum of the squares, the variance, the
 * scaled row. The sums are where the lanes differ from the scalar writing: each value
 * t = trunc(a * 2^shift) (|t| < 2^B <= 2^62, an integer a double holds exactly: the scaling
 * is by a power of two and stays normal, the truncation is exact) is split as
 *   h = trunc(t * 2^-26)   |h| < 2^36          l = t - h * 2^26   |l| < 2^26 (both exact)
 * and the h and the l are summed in float64 lanes: D of them stay below 2^53 (|sum h| < 2^36 as
 * D 2^(B - 26) <= 2^36; |sum l| < D 2^26 <= 2^52 for D <= 2^26, longer rows take the scalar
 * loop), so every partial sum is exact and
 * sum t = (sum h) 2^26 + sum l, in int64, is the scalar loop's integer. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including norm_impl.h"
#endif

#include "norm.h"

#define PK_V PK_TIER_HELPER(f32v)
#define PK_IV PK_TIER_HELPER(i32v)
#define PK_DV PK_TIER_HELPER(f64v)
#define PK_LANES PK_TIER_HELPER(f32_lanes)

/* The row's extremes, and whether it holds a NaN (then 1). Lanes keep either zero where the
 * scalar loop keeps the other (min(-0, +0)); nothing after can tell: a zero's exponent field is
 * 0, and mean - lo, hi - mean are the same values for lo, hi = +0 or -0 (x - x = +0). */
static inline int PK_TIER_HELPER(norm_extremes)(int D, const float *row, float *lo_out, float *hi_out) {
    float lo = row[0], hi = row[0];
    int nan = 0, d = 0;
    if (D >= PK_LANES) {
        PK_V vlo = PK_TIER_HELPER(f32_load)(row), vhi = vlo;
        PK_IV bad = vlo != vlo;
        for (d = PK_LANES; d + PK_LANES <= D; d += PK_LANES) {
            PK_V v = PK_TIER_HELPER(f32_load)(row + d);
            vlo = PK_TIER_HELPER(f32_min)(v, vlo);
            vhi = PK_TIER_HELPER(f32_max)(v, vhi);
            bad |= v != v;
        }
        for (int k = 0; k < PK_LANES; k++) {
            lo = vlo[k] < lo ? vlo[k] : lo;
            hi = vhi[k] > hi ? vhi[k] : hi;
            nan |= bad[k] != 0;
        }
    }
    for (; d < D; d++) {
        lo = row[d] < lo ? row[d] : lo;
        hi = row[d] > hi ? row[d] : hi;
        nan |= row[d] != row[d];
    }
    *lo_out = lo;
    *hi_out = hi;
    return nan;
}

/* sum over the row of trunc(a * scale), a = x (squares = 0) or a = (x - mean)^2 in double (the
 * rule's square: the difference and the product each rounded to double), exactly (above). */
static inline int64_t PK_TIER_HELPER(norm_fixed_sum)(int D, const float *row, double scale, double mean,
                                                     int squares) {
    const PK_DV zero = {0}, down = zero + 0x1p-26, up = zero + 0x1p26, m = zero + mean, s = zero + scale;
    PK_DV h_sum[2] = {zero, zero}, l_sum[2] = {zero, zero};
    int d = 0;
    for (; d + PK_LANES <= D; d += PK_LANES) {
        PK_DV a[2];
        PK_TIER_HELPER(f64_from_f32)(PK_TIER_HELPER(f32_load)(row + d), a);
        for (int half = 0; half < 2; half++) {
            PK_DV v = a[half];
            if (squares) {
                v = v - m;
                v = v * v;
            }
            PK_DV t = PK_TIER_HELPER(f64_trunc)(v * s);
            PK_DV h = PK_TIER_HELPER(f64_trunc)(t * down);
            h_sum[half] += h;
            l_sum[half] += t - h * up;
        }
    }
    int64_t high = 0, low = 0;
    for (int k = 0; k < PK_LANES / 2; k++) {
        high += (int64_t)h_sum[0][k] + (int64_t)h_sum[1][k];
        low += (int64_t)l_sum[0][k] + (int64_t)l_sum[1][k];
    }
    int64_t sum = high * ((int64_t)1 << 26) + low;
    for (; d < D; d++) {
        double v = (double)row[d];
        if (squares) {
            v = v - mean;
            v = v * v;
        }
        sum += (int64_t)(v * scale);
    }
    return sum;
}

int PK_TIER_FN(layernorm)(PK_LAYERNORM_ARGS) {
    if (N <= 0 || D <= 0) return PK_E_SHAPE;
    if (D > (1 << 26)) return pk_layernorm(N, D, x, g, b, eps, y);     /* past the l sums' exact bound */
    const int B = pk_norm_value_bits(D);
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * D;
        float *out = y + (size_t)n * D;
        float lo, hi;
        const int nan = PK_TIER_HELPER(norm_extremes)(D, row, &lo, &hi);
        /* the largest exponent field is that of lo or hi: |x| is largest at one of them */
        unsigned largest = pk_f32_field(lo) > pk_f32_field(hi) ? pk_f32_field(lo) : pk_f32_field(hi);
        if (nan || largest == 0xffu) {
            pk_norm_nan_row(D, out);
            continue;
        }
        const int shift = pk_norm_shift(largest > 1 ? largest : 1, B);
        const float mean = pk_norm_average(PK_TIER_HELPER(norm_fixed_sum)(D, row, pk_pow2d(shift), 0.0, 0), shift, D);
        const int shift2 = pk_norm_square_shift(lo, hi, mean, B);
        const float var =
            pk_norm_average(PK_TIER_HELPER(norm_fixed_sum)(D, row, pk_pow2d(shift2), (double)mean, 1), shift2, D);
        pk_norm_scale_row(D, row, mean, var, eps, g, b, out);
    }
    return PK_OK;
}

#undef PK_V
#undef PK_IV
#undef PK_DV
#undef PK_LANES
