/* fv5 block decode, WebAssembly SIMD128's vector steps (internal header; the loop is
 * fv5_decode_impl.h, which the decode op and the SIMD128 and relaxed-SIMD GEMMs instantiate).
 * Same bytes as the scalar tier.
 *
 * Per code vector x (16 lanes, 0..124):
 *   q  = x / 5  = ((x + 1) * 51) >> 8   (exact on 0..124, in 16-bit lanes)
 *   d0 = x - 5q,  d2 = q / 5 (same trick, q <= 24),  d1 = q - 5*d2
 *   panel vector 3t+i = swizzle(table of its row pair, d_i | (8 on lanes 8..15))
 * The row-pair table is 16 bytes of lut: row 2p's 8 entries then row 2p+1's.
 */
#ifndef PK_FV5_DECODE_WASM_SIMD128_H
#define PK_FV5_DECODE_WASM_SIMD128_H

#include <wasm_simd128.h>
#include "fv5_decode.h"

typedef v128_t pk_u8x16_wasm_simd128;

static inline v128_t pk_load16_wasm_simd128(const void *p) { return wasm_v128_load(p); }
static inline void pk_store16_wasm_simd128(void *p, v128_t v) { wasm_v128_store(p, v); }

/* A stored group of 7 vectors -> its 8 code vectors (bit 7 of stored vector m is bit m of the
 * eighth). */
static inline void pk_unpack_group_wasm_simd128(const uint8_t *s, v128_t x[8]) {
    const v128_t low7 = wasm_i8x16_splat(0x7f);
    v128_t code7 = wasm_i8x16_splat(0);
    for (int m = 0; m < 7; m++) {
        v128_t sm = wasm_v128_load(s + 16 * m);
        code7 = wasm_v128_or(code7, wasm_i8x16_shl(wasm_u8x16_shr(sm, 7), m));
        x[m] = wasm_v128_and(sm, low7);
    }
    x[7] = code7;
}

/* x / 5 on 16-bit lanes holding 0..124: ((x + 1) * 51) >> 8. */
static inline v128_t pk_div5_u16_wasm_simd128(v128_t x) {
    return wasm_u16x8_shr(wasm_i16x8_mul(wasm_i16x8_add(x, wasm_i16x8_splat(1)), wasm_i16x8_splat(51)), 8);
}

/* Digits of one half (8 lanes, widened to 16 bits): d0 = x % 5, d1 = x / 5 % 5, d2 = x / 25.
 * Everything stays in 16-bit lanes: wasm has no i8x16.mul, and LLVM turns (q << 2) + q on
 * bytes into one, which it then scalarises lane by lane. */
static inline void pk_digits_u16_wasm_simd128(v128_t x, v128_t d[3]) {
    const v128_t five = wasm_i16x8_splat(5);
    v128_t q = pk_div5_u16_wasm_simd128(x);
    v128_t d2 = pk_div5_u16_wasm_simd128(q);
    d[0] = wasm_i16x8_sub(x, wasm_i16x8_mul(q, five));
    d[1] = wasm_i16x8_sub(q, wasm_i16x8_mul(d2, five));
    d[2] = d2;
}

/* Swizzle indices of the three digits of code vector x (row-pair half selected by +8 on
 * lanes 8..15). */
static inline void pk_digit_indices_wasm_simd128(v128_t x, v128_t d[3]) {
    const v128_t upper = wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    v128_t lo[3], hi[3];
    pk_digits_u16_wasm_simd128(wasm_u16x8_extend_low_u8x16(x), lo);
    pk_digits_u16_wasm_simd128(wasm_u16x8_extend_high_u8x16(x), hi);
    for (int i = 0; i < 3; i++) d[i] = wasm_v128_or(wasm_u8x16_narrow_i16x8(lo[i], hi[i]), upper);
}

/* A row-pair table's entries at the given byte indices. */
static inline v128_t pk_swizzle_wasm_simd128(v128_t table, v128_t indices) {
    return wasm_i8x16_swizzle(table, indices);
}

#endif
