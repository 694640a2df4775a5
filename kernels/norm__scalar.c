/* The layer norm, scalar tier (contract in norm.h): pk_layernorm, the rule's own writing, and
 * layernorm__scalar, which is it. */
#include "norm.h"

/* The layer norm's two row sums are exact integer sums, so any order (a SIMD lane split, a GPU
 * tree) gives the same bits (docs/kernels.md, "Order-free reductions"). For a row of D values
 * each below 2^top in magnitude, every value is put in fixed point with B = 62 - ceil(log2 D)
 * bits below 2^top, truncated toward zero (an integer shift of its mantissa): |q| < 2^B, and
 * the D of them sum in int64 without overflow (|sum| < 2^62). The one rounding is the sum's
 * conversion to double (round to nearest even, C's and WebAssembly's int64 -> double).
 * Truncation loses less than 2^(1-B) of the row's largest value per element (2^-51 at D = 1024),
 * below a float32's own precision. The steps that do not depend on how the row is walked are
 * norm.h's pk_norm_* helpers, which the SIMD tiers (norm_impl.h) share. */

/* A value in fixed point: trunc(v * 2^shift) toward zero, for v a float32 value or a square of
 * a difference of two (a double at least 2^-298 when nonzero) with |v * 2^shift| < 2^62. Scaling
 * a double by a power of two is exact while the result stays normal, which it does here (the
 * scaled values lie between 2^-504 and 2^62), and C's (and WebAssembly's) double -> int64
 * conversion truncates toward zero: so this is the integer shift of the value's significand
 * the rule describes, done by the FPU's one conversion instead of a per-element variable
 * 64-bit shift. kernels/webgpu/layer_norm.wgsl does the shifts in integers. */
static int64_t norm_fixed(double v, double scale) {
    return (int64_t)(v * scale);
}

int pk_layernorm(int N, int D, const float *x, const float *g, const float *b, float eps, float *y) {
    if (N <= 0 || D <= 0) return PK_E_SHAPE;
    const int B = pk_norm_value_bits(D);
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * D;
        float *out = y + (size_t)n * D;
        /* the row's bound: |x| < 2^(field - 126) for its largest float32 exponent field (at
         * least 1); a field of 255 is an inf or NaN */
        unsigned largest = 1;
        for (int d = 0; d < D; d++)
            if (pk_f32_field(row[d]) > largest) largest = pk_f32_field(row[d]);
        if (largest == 0xffu) {                     /* an inf or NaN: the row is NaN */
            pk_norm_nan_row(D, out);
            continue;
        }
        float lo = row[0], hi = row[0];             /* the extremes bound the squares */
        for (int d = 1; d < D; d++) {
            lo = row[d] < lo ? row[d] : lo;
            hi = row[d] > hi ? row[d] : hi;
        }
        const int shift = pk_norm_shift(largest, B);
        const double scale = pk_pow2d(shift);
        int64_t sum = 0;
        for (int d = 0; d < D; d++) sum += norm_fixed((double)row[d], scale);
        const float mean = pk_norm_average(sum, shift, D);
        const int shift2 = pk_norm_square_shift(lo, hi, mean, B);
        const double scale2 = pk_pow2d(shift2);
        int64_t sq = 0;
        for (int d = 0; d < D; d++) {
            double v = (double)row[d] - (double)mean;
            sq += norm_fixed(v * v, scale2);
        }
        pk_norm_scale_row(D, row, mean, pk_norm_average(sq, shift2, D), eps, g, b, out);
    }
    return PK_OK;
}

int layernorm__scalar(PK_LAYERNORM_ARGS) { return pk_layernorm(N, D, x, g, b, eps, y); }
