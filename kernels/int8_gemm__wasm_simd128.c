/* Plain int8 GEMM, WebAssembly SIMD128 tier (contract in int8_gemm.h): rows are re-laid
 * into dot-order staging per 8-row block (a short last block padded with zero rows), then
 * the same tile as fv5_gemm. Also the benchmark-only peak kernel on pre-staged weights. */
#include "int8_gemm.h"
#include "gemm_tile__wasm_simd128.h"

/* A row's exact dot product with one token in i16 lanes (pk_int8_gemv's few-token path). */
static inline int32_t row_dot(int K, const int8_t *wr, const int8_t *x) {
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

int int8_gemm__wasm_simd128(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    if (N <= PK_GEMV_MAX_TOKENS) {
        pk_int8_gemv(row_dot, N, O, K, xq, xs, w, ws, bias, y);
        return PK_OK;
    }
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch(scratch, K, &panel, &stage, &x16);
    pk_widen_activations(N, K, xq, x16);
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        pk_stage_from_rows(K, w + (size_t)o0 * K, rows, stage);
        pk_block_gemm(N, O, K, o0, rows, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}

int int8_stage_weights__wasm_simd128(int O, int K, const int8_t *w, int8_t *staged) {
    if (O <= 0 || O % 8 != 0 || K <= 0 || K % 8 != 0) return PK_E_SHAPE;
    for (int o0 = 0; o0 < O; o0 += 8) pk_stage_from_rows(K, w + (size_t)o0 * K, 8, staged + (size_t)o0 * K);
    return PK_OK;
}

int int8_gemm_peak__wasm_simd128(PK_INT8_PEAK_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch(scratch, K, &panel, &stage, &x16);
    pk_widen_activations(N, K, xq, x16);
    v128_t sums[2 * PK_TILE_TOKENS];
    for (int o0 = 0; o0 < O; o0 += 8) {
        const int8_t *st = staged + (size_t)o0 * K;
        for (int n = 0; n < N; n += PK_TILE_TOKENS) {
            int tokens = N - n < PK_TILE_TOKENS ? N - n : PK_TILE_TOKENS;
            pk_tile(K, st, x16 + (size_t)n * K, tokens, sums);
            for (int t = 0; t < tokens; t++) {
                wasm_v128_store(acc + (size_t)(n + t) * O + o0, sums[2 * t]);
                wasm_v128_store(acc + (size_t)(n + t) * O + o0 + 4, sums[2 * t + 1]);
            }
        }
    }
    return PK_OK;
}
