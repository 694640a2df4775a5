/* The subsampling's 3x3 stride-2 padding-1 convolutions (conv0, and the depthwise conv2 and
 * conv5) over block-quantised rows (docs/kernels.md, "The subsampling's convolutions"): integer
 * products and integer sums, so any order - SIMD lanes, a GPU's invocations - gives the same
 * bits, and one rounding to float per output. Integer steps from the values' bit patterns, the
 * same on every tier and in kernels/webgpu/conv_rows.wgsl and conv_s2.wgsl.
 *
 * The rule, for output (i, j) of one channel with taps w [3][3] and bias b:
 *   1. each input row r (one channel's W values; read through pk_relu's formula where the conv
 *      takes relu(x)) is one block: unit E_r and mantissas m with |m| <= 2^11
 *      (pk_conv_quantise: pk_block_quantise's steps with PK_CONV_BITS); the nine taps are one
 *      block too (unit E_w, mantissas t);
 *   2. the partial sum of each input row a = 0..2 inside the map (row 2i + a - 1):
 *      P_a = sum over its columns 2j + e - 1 inside the map of t[a][e] m[col]: at most three
 *      products of 2^22, |P_a| < 2^24;
 *   3. the rows joined on the unit of the highest, E_h: S = sum_a floor(P_a / 2^(E_h - E_a))
 *      (an arithmetic shift, by at most 31), |S| < 2^26 - each lower row loses less than one
 *      unit of 2^(E_h + E_w), about 2^-21 of the largest output the taps can give;
 *   4. one rounding: y = (float)(S 2^(E_h + E_w)) (pk_block_scaled), then y + b in float, then
 *      pk_relu's formula where the conv has a ReLU.
 * A block holding an inf or NaN (a row inside the map, or the taps) makes the output 0x7fc00000
 * (before the bias; a ReLU then gives +0).
 *
 * Layouts: a quantised row's mantissas are read as m[col * col_stride + lane * lane_stride] and
 * its units as E[lane * lane_stride] - lane_stride 1 for channel-last maps (channels in lanes),
 * 0 for conv0's one input channel (every output channel reads the same row). Taps are
 * transposed to [9][PK_CHANNEL_BLOCK] per block of channels (pk_conv_taps). */
#ifndef PK_CONV_BLOCKS_H
#define PK_CONV_BLOCKS_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include "attention_blocks.h"
#include "common.h"
#include "pk_math.h"

#define PK_CONV_BITS 11         /* |m|, |t| <= 2^11: a row's three products < 2^24, S < 2^26 */

/* Channel blocks of the channel-last convs (head_impl.h; its scratch sizes in ops__scalar.c). */
#define PK_CHANNEL_BLOCK 64

/* pk_relu's formula on bits: u when 0 < x <= +inf, else +0 (-0, negatives and NaN give +0). */
static inline uint32_t pk_relu_bits(uint32_t u) { return u - 1u < 0x7f800000u ? u : 0u; }

/* The unit of n values x[0], x[xs], ... (through pk_relu's formula with relu): E = F - 126 -
 * PK_CONV_BITS from their largest exponent field F (at least 1), so every |x| < 2^(E + 11); or
 * PK_BLOCK_NONFINITE for an inf or NaN. */
static inline int32_t pk_conv_unit(int n, const float *x, size_t xs, int relu) {
    unsigned F = 1;
    for (int i = 0; i < n; i++) {
        uint32_t u = pk_float_to_bits(x[(size_t)i * xs]);
        unsigned f = ((relu ? pk_relu_bits(u) : u) >> 23) & 0xffu;
        F = f > F ? f : F;
    }
    return F == 0xffu ? PK_BLOCK_NONFINITE : (int32_t)F - 126 - PK_CONV_BITS;
}

/* x's mantissa on the finite unit E (x through pk_relu's formula with relu). */
static inline int16_t pk_conv_mantissa(float x, int32_t E, int relu) {
    uint32_t u = pk_float_to_bits(x);
    return pk_block_mantissa(relu ? pk_relu_bits(u) : u, (unsigned)(E + 126 + PK_CONV_BITS), PK_CONV_BITS);
}

/* n values x[0], x[xs], ... -> mantissas m[0], m[ms], ... on their unit, which it returns
 * (PK_BLOCK_NONFINITE: m all 0). The mantissas are integers of at most 11 bits, kept as floats
 * (exact), as the channel-last loops multiply them. */
static inline int32_t pk_conv_quantise(int n, const float *x, size_t xs, int relu, float *m, size_t ms) {
    int32_t E = pk_conv_unit(n, x, xs, relu);
    for (int i = 0; i < n; i++)
        m[(size_t)i * ms] = E == PK_BLOCK_NONFINITE ? 0.0f : (float)pk_conv_mantissa(x[(size_t)i * xs], E, relu);
    return E;
}

/* The taps of channels c0 .. c0 + cb - 1 (w [C][3][3]) quantised per channel, transposed:
 * t [9][PK_CHANNEL_BLOCK] (lanes past cb 0), units E [cb]. */
static inline void pk_conv_taps(int cb, const float *w, int c0, float *t, int32_t *E) {
    for (int i = 0; i < 9 * PK_CHANNEL_BLOCK; i++) t[i] = 0.0f;
    for (int c = 0; c < cb; c++) E[c] = pk_conv_quantise(9, w + (size_t)(c0 + c) * 9, 1, 0, t + c, PK_CHANNEL_BLOCK);
}

/* Steps 3 and 4 for one output: the rows' partial sums P and units E (present: bit a set for a
 * row inside the map), the taps' unit Ew, bias b, relu. */
static inline float pk_conv_join(const int32_t P[3], const int32_t E[3], int present, int32_t Ew, float b, int relu) {
    int32_t Eh = INT32_MIN;
    int marked = Ew == PK_BLOCK_NONFINITE;
    for (int a = 0; a < 3; a++)
        if (present >> a & 1) {
            marked |= E[a] == PK_BLOCK_NONFINITE;
            Eh = E[a] > Eh ? E[a] : Eh;
        }
    int32_t S = 0;
    for (int a = 0; a < 3; a++)
        if (present >> a & 1) S += P[a] >> (Eh - E[a] < 31 ? Eh - E[a] : 31);   /* >>: floor */
    float y = marked ? pk_bits_to_float(0x7fc00000u) : pk_block_scaled(S, Eh + Ew) + b;
    return relu ? pk_bits_to_float(pk_relu_bits(pk_float_to_bits(y))) : y;
}

/* Lanes for the channel-last loops below, as vector-extension types (GCC and Clang: lane-wise
 * operations): eight where the target has 256-bit vectors (AVX), else four, one SSE2 or
 * WebAssembly SIMD128 register (GCC turns an eight-lane comparison without AVX into one
 * compare and branch per lane: five times slower than the plain float conv it replaced). */
#if defined(__AVX__)
#include <immintrin.h>
enum { PK_CONV_LANES = 8 };
#else
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
enum { PK_CONV_LANES = 4 };
#endif
typedef int32_t pk_conv_vi __attribute__((vector_size(4 * PK_CONV_LANES)));
typedef uint32_t pk_conv_vu __attribute__((vector_size(4 * PK_CONV_LANES)));
typedef float pk_conv_vf __attribute__((vector_size(4 * PK_CONV_LANES)));

/* floor(q) as int32 lanes for |q| < 2^31: the target's floor instruction where it has one
 * (AVX, WebAssembly SIMD128), else a truncating conversion less one where it went up. */
static inline pk_conv_vi pk_conv_floor(pk_conv_vf q) {
#if defined(__AVX__)
    return __builtin_convertvector((pk_conv_vf)_mm256_floor_ps((__m256)q), pk_conv_vi);
#elif defined(__wasm_simd128__)
    return __builtin_convertvector((pk_conv_vf)wasm_f32x4_floor((v128_t)q), pk_conv_vi);
#else
    pk_conv_vi whole = __builtin_convertvector(q, pk_conv_vi);                 /* toward 0 */
    return whole + (pk_conv_vi)(__builtin_convertvector(whole, pk_conv_vf) > q);   /* -1: the floor */
#endif
}

/* pk_relu_bits lane-wise (a comparison gives all ones or 0 per lane) */
#define PK_CONV_RELU_LANES(u) ((u) & (pk_conv_vu)((u) - 1u < 0x7f800000u))

/* A row of n columns x cb channels (x[col * xs + c], through pk_relu's formula with relu)
 * quantised per channel, PK_CONV_LANES channels at a time: mantissas as floats m[col * PK_CHANNEL_BLOCK
 * + c], units E[c] - pk_conv_quantise's values for each channel (lanes past cb, up to the next
 * multiple of PK_CONV_LANES, are read and written too). The mantissa is taken in float32 lanes:
 * |x| 2^-E by two exact power-of-two scalings (2^-E may be past float's range; a product under
 * 2^-126, the only inexact one, is below a half and gives 0 either way), then floor(v + 1/2) as
 * the integer part (a truncating conversion) plus one where the remainder (exact) is at least a
 * half, then the sign; WebAssembly has no per-lane shifts for
 * pk_block_mantissa's way. tests/test_conv_rule.py holds the two to the same bits. */
PK_ALWAYS_INLINE void pk_conv_quantise_lanes(int n, int cb, const float *x, size_t xs, int relu, float *m,
                                             int32_t *E) {
    enum { CB = PK_CHANNEL_BLOCK, L = PK_CONV_LANES };
    int lanes = (cb + L - 1) / L * L;
    for (int c = 0; c < lanes; c += L) {
        pk_conv_vu F = (pk_conv_vu){0} + 1u;
        for (int col = 0; col < n; col++) {
            pk_conv_vu u;
            memcpy(&u, x + (size_t)col * xs + c, sizeof u);
            if (relu) u = PK_CONV_RELU_LANES(u);
            pk_conv_vu f = (u >> 23) & 0xffu, more = (pk_conv_vu)(f > F);
            F = (f & more) | (F & ~more);
        }
        pk_conv_vf s1, s2;
        pk_conv_vi Ec;
        for (int l = 0; l < L; l++) {
            int finite = F[l] != 0xffu, up = finite ? 126 + PK_CONV_BITS - (int)F[l] : 0;    /* -E */
            Ec[l] = finite ? -up : PK_BLOCK_NONFINITE;
            s1[l] = finite ? pk_pow2i(up < 127 ? up : 127) : 0.0f;
            s2[l] = pk_pow2i(up < 127 ? 0 : up - 127);
        }
        memcpy(E + c, &Ec, sizeof Ec);
        for (int col = 0; col < n; col++) {
            pk_conv_vu u;
            memcpy(&u, x + (size_t)col * xs + c, sizeof u);
            if (relu) u = PK_CONV_RELU_LANES(u);
            pk_conv_vu low = u & 0x7fffffffu;
            low &= (pk_conv_vu)(low <= 0x7f800000u) & (pk_conv_vu)(s1 != 0.0f);   /* NaN, a marked block: 0 */
            pk_conv_vf mag;
            memcpy(&mag, &low, sizeof mag);
            pk_conv_vf v = mag * s1 * s2;
            pk_conv_vf q = __builtin_convertvector(__builtin_convertvector(v, pk_conv_vi), pk_conv_vf);
            pk_conv_vi up = (pk_conv_vi)(v - q >= 0.5f) & (pk_conv_vi)((pk_conv_vf){0} + 1.0f);   /* 1.0f or +0 */
            pk_conv_vf one;
            memcpy(&one, &up, sizeof one);
            q += one;
            pk_conv_vu qb;
            memcpy(&qb, &q, sizeof qb);
            qb |= u & 0x80000000u;                                    /* the sign (+-0 alike) */
            memcpy(m + (size_t)col * CB + c, &qb, sizeof qb);
        }
    }
}

/* Output row i (columns 0 .. Wo - 1) of the conv for cb channels: pk_conv_join's value for each,
 * PK_CONV_LANES channels at a time. m[a], E[a]: input row 2i + a - 1 (NULL outside the map), its
 * mantissas (as floats) read at m[a][col * col_stride + c * lane_stride] for col = -1 .. 2 Wo - 1
 * (the padding columns -1 and W must read 0; lanes up to the next multiple of PK_CONV_LANES are read)
 * and its units at E[a][c * lane_stride]; taps t [9][CB] as floats, units Ew, biases b of the
 * block; y[j * y_stride + c].
 *
 * Mantissas and taps are integers of at most 11 bits, so a row's three products and their sum
 * (below 2^24) are exact in float32, in any order. Per channel the row's factors come first:
 * f_a = 2^-(E_h - E_a) (the shift capped at 31; 0 for a row outside the map) and
 * k = 2^(E_h + E_w). Each floor(P_a / 2^(E_h - E_a)) is then P_a f_a (exact) floored, summed in
 * int32; the one rounding is (float)S * k, which is pk_block_scaled's when k is a normal float32
 * (E_h + E_w in -126..127: a non-zero S * k is then normal or overflows, and scaling by a power
 * of two commutes with rounding). A channel outside that range (values near the ends of the
 * float range) takes pk_conv_join instead. Always inlined, so each caller's strides are
 * constants. */
PK_ALWAYS_INLINE void pk_conv_s2_row(int cb, const float *const m[3], const int32_t *const E[3],
                                     ptrdiff_t col_stride, size_t lane_stride, int Wo, const float *t,
                                     const int32_t *Ew, const float *b, int relu, float *y, size_t y_stride) {
    enum { CB = PK_CHANNEL_BLOCK, L = PK_CONV_LANES };
    float f[3][CB], k[CB], bias[CB], out[CB];
    uint32_t marked[CB];
    int32_t Ec[3][CB];
    unsigned char plain_join[CB];                    /* k out of float's normal range: pk_conv_join */
    int lanes = (cb + L - 1) / L * L, slow = 0, present = (m[0] ? 1 : 0) | (m[1] ? 2 : 0) | (m[2] ? 4 : 0);
    for (int c = 0; c < lanes; c++) {
        int32_t Eh = INT32_MIN;
        int bad = c >= cb || Ew[c] == PK_BLOCK_NONFINITE;
        for (int a = 0; a < 3; a++) {
            Ec[a][c] = m[a] && c < cb ? E[a][c * lane_stride] : 0;
            if (m[a] && c < cb) {
                bad |= Ec[a][c] == PK_BLOCK_NONFINITE;
                Eh = Ec[a][c] > Eh ? Ec[a][c] : Eh;
            }
        }
        int32_t e = bad ? 0 : Eh + Ew[c];
        for (int a = 0; a < 3; a++)
            f[a][c] = m[a] && !bad ? pk_pow2i(-(Eh - Ec[a][c] < 31 ? Eh - Ec[a][c] : 31)) : 0.0f;
        k[c] = e >= -126 && e <= 127 ? pk_pow2i(e) : 0.0f;
        plain_join[c] = !bad && (e < -126 || e > 127);
        slow |= plain_join[c];
        marked[c] = bad ? ~0u : 0u;
        bias[c] = c < cb ? b[c] : 0.0f;
    }
    const float *any = m[1] ? m[1] : m[0] ? m[0] : m[2];         /* a row outside reads another, times 0 */
    const float *r[3] = {m[0] ? m[0] : any, m[1] ? m[1] : any, m[2] ? m[2] : any};
    for (int j = 0; j < Wo; j++) {
        ptrdiff_t left = (ptrdiff_t)(2 * j - 1) * col_stride;
        float Pj[3][CB];
        for (int c = 0; c < lanes; c += L) {
            pk_conv_vi S = {0};
            for (int a = 0; a < 3; a++) {
                pk_conv_vf P = {0};
                for (int e = 0; e < 3; e++) {
                    const float *x = r[a] + left + e * col_stride + c * lane_stride;
                    pk_conv_vf v, tap;
                    if (lane_stride)
                        memcpy(&v, x, sizeof v);
                    else
                        v = (pk_conv_vf){0} + x[0];
                    memcpy(&tap, t + (a * 3 + e) * CB + c, sizeof tap);
                    P += tap * v;                                        /* exact */
                }
                pk_conv_vf fa;
                memcpy(&fa, f[a] + c, sizeof fa);
                if (slow) memcpy(Pj[a] + c, &P, sizeof P);
                S += pk_conv_floor(P * fa);                              /* P * fa exact */
            }
            pk_conv_vf kv, bv;
            pk_conv_vu u, mk;
            memcpy(&kv, k + c, sizeof kv);
            memcpy(&bv, bias + c, sizeof bv);
            pk_conv_vf v = __builtin_convertvector(S, pk_conv_vf) * kv + bv;
            memcpy(&u, &v, sizeof u);
            memcpy(&mk, marked + c, sizeof mk);
            u = (u & ~mk) | (0x7fc00000u & mk);
            if (relu) u = PK_CONV_RELU_LANES(u);
            memcpy(out + c, &u, sizeof u);
        }
        if (slow)
            for (int c = 0; c < cb; c++)
                if (plain_join[c]) {
                    int32_t P[3] = {(int32_t)Pj[0][c], (int32_t)Pj[1][c], (int32_t)Pj[2][c]};
                    int32_t Ea[3] = {Ec[0][c], Ec[1][c], Ec[2][c]};
                    out[c] = pk_conv_join(P, Ea, present, Ew[c], b[c], relu);
                }
        memcpy(y + (size_t)j * y_stride, out, (size_t)cb * sizeof *out);
    }
}

#endif
