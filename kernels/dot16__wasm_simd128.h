/* The attention's int16 dot products on WebAssembly SIMD128 (internal header; attention_impl.h
 * uses it wherever it is compiled with SIMD128). Written with i32x4.dot_i16x8_s because clang
 * vectorises the plain loop into widening multiplies and adds that ran the scores at half this
 * speed (0.93 ms against 0.47 ms a head, T = 125, dk = 128, Node). The sum is an exact int32 sum
 * (attention_blocks.h bounds it), so its order is free and the bits are the plain loop's. */
#ifndef PK_DOT16_WASM_SIMD128_H
#define PK_DOT16_WASM_SIMD128_H

#include <stdint.h>
#include <wasm_simd128.h>

/* sum_d a[d] * b[d] for n a multiple of 16 (rows padded to 32: pk_block_padded). */
static inline int32_t pk_dot16_wasm_simd128(const int16_t *a, const int16_t *b, int n) {
    v128_t even = wasm_i32x4_splat(0), odd = even;
    for (int d = 0; d < n; d += 16) {
        even = wasm_i32x4_add(even, wasm_i32x4_dot_i16x8(wasm_v128_load(a + d), wasm_v128_load(b + d)));
        odd = wasm_i32x4_add(odd, wasm_i32x4_dot_i16x8(wasm_v128_load(a + d + 8), wasm_v128_load(b + d + 8)));
    }
    v128_t sum = wasm_i32x4_add(even, odd);
    sum = wasm_i32x4_add(sum, wasm_i32x4_shuffle(sum, sum, 2, 3, 0, 1));
    sum = wasm_i32x4_add(sum, wasm_i32x4_shuffle(sum, sum, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(sum, 0);
}

#endif
