/* fv5 block decode, WebAssembly SIMD128 tier. Same bytes as the scalar tier.
 * Per code vector x (16 lanes, 0..124):
 *   q  = x / 5  = ((x + 1) * 51) >> 8   (exact on 0..124; u8 x u8 -> u16 extmul)
 *   d0 = x - 5q,  d2 = q / 5 (same trick, q <= 24),  d1 = q - 5*d2
 *   panel vector 3t+i = swizzle(table of its row pair, d_i | (8 on lanes 8..15))
 * The row-pair table is 16 bytes of lut: row 2p's 8 entries then row 2p+1's. */
#include <wasm_simd128.h>
#include "fv5_decode.h"

static inline v128_t div5_u8(v128_t x) {
    const v128_t one = wasm_i8x16_splat(1), k51 = wasm_i8x16_splat(51);
    v128_t x1 = wasm_i8x16_add(x, one);
    v128_t lo = wasm_u16x8_shr(wasm_u16x8_extmul_low_u8x16(x1, k51), 8);
    v128_t hi = wasm_u16x8_shr(wasm_u16x8_extmul_high_u8x16(x1, k51), 8);
    return wasm_u8x16_narrow_i16x8(lo, hi);
}

static inline v128_t times5_u8(v128_t q) { return wasm_i8x16_add(wasm_i8x16_shl(q, 2), q); }

/* Write the (up to three) panel vectors of code vector t. */
static inline void emit(v128_t x, int t, int vectors, const v128_t *table, int8_t *panel) {
    const v128_t upper = wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    v128_t q = div5_u8(x);
    v128_t d2 = div5_u8(q);
    v128_t d[3] = {wasm_i8x16_sub(x, times5_u8(q)), wasm_i8x16_sub(q, times5_u8(d2)), d2};
    for (int i = 0; i < 3; i++) {
        int v = 3 * t + i;
        if (v >= vectors) return;
        v128_t out = wasm_i8x16_swizzle(table[v & 3], wasm_v128_or(d[i], upper));
        wasm_v128_store(panel + (size_t)v * 16, out);
    }
}

int fv5_decode_block__wasm_simd128(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    v128_t table[4];
    for (int p = 0; p < 4; p++) table[p] = wasm_v128_load(lut + 16 * p);
    const v128_t low7 = wasm_i8x16_splat(0x7f);
    int full = T / 8;
    for (int g = 0; g < full; g++) {
        const uint8_t *s = stored + (size_t)g * 7 * 16;
        v128_t code7 = wasm_i8x16_splat(0);
        for (int m = 0; m < 7; m++) {
            v128_t sm = wasm_v128_load(s + 16 * m);
            code7 = wasm_v128_or(code7, wasm_i8x16_shl(wasm_u8x16_shr(sm, 7), m));
            emit(wasm_v128_and(sm, low7), 8 * g + m, vectors, table, panel);
        }
        emit(code7, 8 * g + 7, vectors, table, panel);
    }
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int m = 0; m < T % 8; m++)
        emit(wasm_v128_load(tail + 16 * m), 8 * full + m, vectors, table, panel);
    return PK_OK;
}

PK_DEFINE_DECODE_BLOCKS(wasm_simd128)
