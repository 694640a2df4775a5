/* fv5 block decode for the WebAssembly SIMD128 tier (internal header, used by the decode op
 * and, fused with the dot-order staging, by the fv5 GEMM). Same bytes as the scalar tier.
 *
 * Per code vector x (16 lanes, 0..124):
 *   q  = x / 5  = ((x + 1) * 51) >> 8   (exact on 0..124, in 16-bit lanes)
 *   d0 = x - 5q,  d2 = q / 5 (same trick, q <= 24),  d1 = q - 5*d2
 *   panel vector 3t+i = swizzle(table of its row pair, d_i | (8 on lanes 8..15))
 * The row-pair table is 16 bytes of lut: row 2p's 8 entries then row 2p+1's.
 *
 * Fast path: code vectors come in quads t = 4u..4u+3 (two per stored group of eight); a quad
 * makes panel vectors 12u..12u+11, whose row pairs are 0,1,2,3,0,1,... - known at compile time
 * - and which are exactly the k-blocks 3u..3u+2. Quads that reach past K/2 and the short
 * last group take the general path (panel vector by panel vector).
 */
#ifndef PK_FV5_DECODE_WASM_SIMD128_H
#define PK_FV5_DECODE_WASM_SIMD128_H

#include <wasm_simd128.h>
#include "fv5_decode.h"
#include "gemm_tile__wasm_simd128.h"

/* The staging the fused decode writes: the dot-order pairs of gemm_tile__wasm_simd128.h unless
 * the including file names another layout's k-block and range functions first (the
 * relaxed-SIMD GEMM does). */
#ifndef PK_DECODE_STAGE_KB
#define PK_DECODE_STAGE_KB pk_stage_kb_wasm_simd128
#define PK_DECODE_STAGE_RANGE pk_stage_from_panel_wasm_simd128
#endif

/* x / 5 on 16-bit lanes holding 0..124: ((x + 1) * 51) >> 8. */
static inline v128_t pk_div5_u16(v128_t x) {
    return wasm_u16x8_shr(wasm_i16x8_mul(wasm_i16x8_add(x, wasm_i16x8_splat(1)), wasm_i16x8_splat(51)), 8);
}

/* Digits of one half (8 lanes, widened to 16 bits): d0 = x % 5, d1 = x / 5 % 5, d2 = x / 25.
 * Everything stays in 16-bit lanes: wasm has no i8x16.mul, and LLVM turns (q << 2) + q on
 * bytes into one, which it then scalarises lane by lane. */
static inline void pk_digits_u16(v128_t x, v128_t d[3]) {
    const v128_t five = wasm_i16x8_splat(5);
    v128_t q = pk_div5_u16(x);
    v128_t d2 = pk_div5_u16(q);
    d[0] = wasm_i16x8_sub(x, wasm_i16x8_mul(q, five));
    d[1] = wasm_i16x8_sub(q, wasm_i16x8_mul(d2, five));
    d[2] = d2;
}

/* Swizzle indices of the three digits of code vector x (row-pair half selected by +8 on
 * lanes 8..15). */
static inline void pk_digit_indices(v128_t x, v128_t d[3]) {
    const v128_t upper = wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    v128_t lo[3], hi[3];
    pk_digits_u16(wasm_u16x8_extend_low_u8x16(x), lo);
    pk_digits_u16(wasm_u16x8_extend_high_u8x16(x), hi);
    for (int i = 0; i < 3; i++) d[i] = wasm_v128_or(wasm_u8x16_narrow_i16x8(lo[i], hi[i]), upper);
}

/* General path: the (up to three) panel vectors of code vector t, into the panel buffer. */
static inline void pk_emit_code(v128_t x, int t, int vectors, const v128_t *table, int8_t *panel) {
    v128_t d[3];
    pk_digit_indices(x, d);
    for (int i = 0; i < 3; i++) {
        int v = 3 * t + i;
        if (v >= vectors) return;
        wasm_v128_store(panel + (size_t)v * 16, wasm_i8x16_swizzle(table[v & 3], d[i]));
    }
}

/* Fast path: quad u -> panel vectors P[0..11] (row pair of P[i] is i % 4). */
static inline void pk_decode_quad(const v128_t *x, const v128_t *table, v128_t *P) {
    for (int a = 0; a < 4; a++) {
        v128_t d[3];
        pk_digit_indices(x[a], d);
        for (int i = 0; i < 3; i++) P[3 * a + i] = wasm_i8x16_swizzle(table[(3 * a + i) & 3], d[i]);
    }
}

/* Decode one block. stage == NULL: write the spec panel. Otherwise write the dot-order staging
 * of gemm_tile__wasm_simd128.h (panel is then only scratch for the general path). */
static inline void pk_fv5_decode_wasm_simd128(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel,
                                 int8_t *stage) {
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    int full = T / 8;
    v128_t table[4];
    for (int p = 0; p < 4; p++) table[p] = wasm_v128_load(lut + 16 * p);
    const v128_t low7 = wasm_i8x16_splat(0x7f);
    int kb_staged = 0;
    for (int g = 0; g < full; g++) {
        const uint8_t *s = stored + (size_t)g * 7 * 16;
        v128_t x[8];
        v128_t code7 = wasm_i8x16_splat(0);
        for (int m = 0; m < 7; m++) {
            v128_t sm = wasm_v128_load(s + 16 * m);
            code7 = wasm_v128_or(code7, wasm_i8x16_shl(wasm_u8x16_shr(sm, 7), m));
            x[m] = wasm_v128_and(sm, low7);
        }
        x[7] = code7;
        for (int h = 0; h < 2; h++) {
            int u = 2 * g + h;
            if (12 * u + 11 < vectors) {
                v128_t P[12];
                pk_decode_quad(x + 4 * h, table, P);
                if (stage) {
                    for (int c = 0; c < 3; c++)
                        PK_DECODE_STAGE_KB(P[4 * c], P[4 * c + 1], P[4 * c + 2], P[4 * c + 3],
                                           stage + (size_t)(3 * u + c) * 64);
                    kb_staged = 3 * u + 3;
                } else {
                    for (int i = 0; i < 12; i++) wasm_v128_store(panel + (size_t)(12 * u + i) * 16, P[i]);
                }
            } else {
                for (int a = 0; a < 4; a++) pk_emit_code(x[4 * h + a], 4 * u + a, vectors, table, panel);
            }
        }
    }
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int m = 0; m < T % 8; m++)
        pk_emit_code(wasm_v128_load(tail + 16 * m), 8 * full + m, vectors, table, panel);
    if (stage) PK_DECODE_STAGE_RANGE(kb_staged, K / 8, panel, stage);
}

#endif
