/* Block quantisation for the attention's order-free reductions (docs/kernels.md, "Order-free
 * reductions"). A vector of n floats shares one power-of-two unit 2^E taken from its largest
 * exponent field, and each value becomes an integer mantissa m = round(x / 2^E) with
 * |m| <= 2^b. Products of two such vectors' mantissas then sum exactly in int32 in any order
 * (a SIMD lane split, pmaddwd's pairs, a GPU's tree), and the sum is scaled back and rounded to
 * float once. Integer steps only, from the values' bit patterns: the same on every tier and in
 * kernels/webgpu/attention_*.wgsl. */
#ifndef PK_ATTENTION_BLOCKS_H
#define PK_ATTENTION_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include "pk_math.h"

/* pk_block_quantise's exponent for a vector holding an inf or NaN */
#define PK_BLOCK_NONFINITE INT32_MIN

static inline int pk_float_is_finite(float x) { return pk_f32_field(x) != 0xffu; }

/* The mantissa bits b for a sum of n products: b = min(11, floor((30 - ceil(log2 n)) / 2)), so
 * n * 2^(2b) <= 2^30 (|a sum| stays below 2^30 in int32) and n * 2^b < 2^24 (a sum of n
 * mantissas converts to float exactly) for every n <= 65536. 11 bits at n <= 256 (dk = 128: the
 * unit is at most 2^-10 of the vector's largest value, 8 times finer than the linears' int8
 * activations' amax / 127). */
static inline int pk_block_bits(int n) {
    int c = 0;
    while ((1L << c) < n) c++;                          /* ceil(log2 n) */
    int b = (30 - c) / 2;
    return b < 11 ? b : 11;
}

/* Rows of mantissas are stored padded with zeros to a multiple of 32 (any SIMD width's whole
 * vectors: no scalar tail in the dot products; zeros add nothing to an integer sum). */
static inline int pk_block_padded(int n) { return (n + 31) & ~31; }

/* One value's mantissa (bits u, finite) in a block whose largest exponent field is F (>= the
 * value's, >= 1): |x| / 2^(F - 126 - b) rounded to the nearest integer, halves away from zero,
 * with x's sign: the 24-bit significand shifted right by F - f + 24 - b >= 13 places. */
static inline int16_t pk_block_mantissa(uint32_t u, unsigned F, int b) {
    uint32_t f = (u >> 23) & 0xffu;
    uint32_t sig = (u & 0x7fffffu) | (f ? 0x800000u : 0u);
    int shift = (int)F - (int)(f ? f : 1) + 24 - b;
    shift = shift > 25 ? 25 : shift;                    /* from 25 places on every sig gives 0 */
    int32_t q = (int32_t)((sig + (1u << (shift - 1))) >> shift);
    return (int16_t)(u >> 31 ? -q : q);
}

/* x[0], x[stride], ..., x[(n - 1) * stride] -> m[0..n) with value ~ m * 2^E; returns E, or
 * PK_BLOCK_NONFINITE (m all 0) when a value is inf or NaN. With F = max(1, the largest exponent
 * field), every |x| < 2^(F - 126) and E = F - 126 - b; each m rounds |x| / 2^E to the nearest
 * integer, halves away from zero, from the bits (the 24-bit significand shifted right by
 * F - f + 24 - b >= 13 places), so |m| <= 2^b. Subnormals count as field 1; zeros give 0. */
static inline int32_t pk_block_quantise(int n, const float *x, size_t stride, int b, int16_t *m) {
    unsigned F = 1;
    for (int i = 0; i < n; i++) {
        unsigned f = pk_f32_field(x[(size_t)i * stride]);
        if (f > F) F = f;
    }
    if (F == 0xffu) {
        memset(m, 0, (size_t)n * sizeof *m);
        return PK_BLOCK_NONFINITE;
    }
    for (int i = 0; i < n; i++)                         /* branch-free: compilers vectorise it */
        m[i] = pk_block_mantissa(pk_float_to_bits(x[(size_t)i * stride]), F, b);
    return (int32_t)F - 126 - b;
}

/* a * 2^e rounded to float once (to nearest even; subnormal or infinite results as IEEE-754
 * gives them): a double holds a * 2^e exactly for |a| < 2^31 and the exponents two block units
 * add up to (-272 .. 256), and the conversion to float is the one rounding. */
static inline float pk_block_scaled(int32_t a, int e) { return (float)((double)a * pk_pow2d(e)); }

#endif
