/* Plain int8 GEMM, WebAssembly SIMD128 tier (contract in int8_gemm.h): rows are re-laid
 * into dot-order staging per 8-row block (a short last block padded with zero rows), then
 * the same tile as fv5_gemm. Also the benchmark-only peak kernel on pre-staged weights. */
#include "int8_gemm.h"
#include "gemm_tile__wasm_simd128.h"

/* A row's exact dot product with one token in i16 lanes (the few-token path, pk_int8_gemv). */
static inline int32_t pk_row_dot_wasm_simd128(int K, const int8_t *wr, const int8_t *x) {
    v128_t acc = wasm_i32x4_splat(0);
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        v128_t a = wasm_v128_load(wr + k), b = wasm_v128_load(x + k);
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(a), wasm_i16x8_extend_low_i8x16(b)));
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(a), wasm_i16x8_extend_high_i8x16(b)));
    }
    int32_t sum = wasm_i32x4_extract_lane(acc, 0) + wasm_i32x4_extract_lane(acc, 1) +
                  wasm_i32x4_extract_lane(acc, 2) + wasm_i32x4_extract_lane(acc, 3);
    for (; k < K; k++) sum += (int32_t)wr[k] * x[k];
    return sum;
}

/* A tile's sums into acc rows (the peak kernel). */
static inline void pk_store_tile_wasm_simd128(int32_t *acc, int O, int tokens,
                                              const pk_tile_sums_wasm_simd128 *sums) {
    for (int t = 0; t < tokens; t++) {
        wasm_v128_store(acc + (size_t)t * O, sums->v[2 * t]);
        wasm_v128_store(acc + (size_t)t * O + 4, sums->v[2 * t + 1]);
    }
}

#define PK_TIER wasm_simd128
#include "int8_gemm_impl.h"
