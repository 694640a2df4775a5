/* The plain int8 GEMM's drivers (contract in int8_gemm.h), written once for the tiers that
 * stage 8-row blocks into dot order and run a tile over them (avx2, wasm_simd128). Each
 * int8_gemm__<tier>.c includes its gemm_tile__<tier>.h, defines PK_TIER, its exact row dot
 * product (row_dot: the few-token path) and its tile store (store_tile: a tile's int32 sums
 * into acc rows, for the peak kernel), then includes this file.
 *
 * Naming: a tier's entry points are name__<tier>; its inline helpers pk_<name>_<tier>. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including int8_gemm_impl.h"
#endif

#define PK_INT8_PASTE(a, b, sep) a##sep##b
#define PK_INT8_EXPAND(a, b, sep) PK_INT8_PASTE(a, b, sep)
#define PK_INT8_FN(name) PK_INT8_EXPAND(name, PK_TIER, __)          /* int8_gemm__<tier> */
#define PK_TILE(name) PK_INT8_EXPAND(pk_##name, PK_TIER, _)          /* pk_tile_<tier> */

int PK_INT8_FN(int8_gemm)(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    if (N <= PK_GEMV_MAX_TOKENS) {
        pk_int8_gemv(row_dot, N, O, K, xq, xs, w, ws, bias, y);
        return PK_OK;
    }
    int8_t *panel, *stage;
    int16_t *x16;
    PK_TILE(carve_scratch)(scratch, K, &panel, &stage, &x16);
    PK_TILE(widen_activations)(N, K, xq, x16);
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        PK_TILE(stage_from_rows)(K, w + (size_t)o0 * K, rows, stage);
        PK_TILE(block_gemm)(N, O, K, o0, rows, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}

int PK_INT8_FN(int8_stage_weights)(int O, int K, const int8_t *w, int8_t *staged) {
    if (O <= 0 || O % 8 != 0 || K <= 0 || K % 8 != 0) return PK_E_SHAPE;
    for (int o0 = 0; o0 < O; o0 += 8) PK_TILE(stage_from_rows)(K, w + (size_t)o0 * K, 8, staged + (size_t)o0 * K);
    return PK_OK;
}

int PK_INT8_FN(int8_gemm_peak)(PK_INT8_PEAK_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    PK_TILE(carve_scratch)(scratch, K, &panel, &stage, &x16);
    PK_TILE(widen_activations)(N, K, xq, x16);
    PK_TILE_SUMS sums;
    for (int o0 = 0; o0 < O; o0 += 8) {
        const int8_t *st = staged + (size_t)o0 * K;
        for (int n = 0; n < N; n += PK_TILE_TOKENS) {
            int tokens = N - n < PK_TILE_TOKENS ? N - n : PK_TILE_TOKENS;
            PK_TILE(tile)(K, st, x16 + (size_t)n * K, tokens, sums.v);
            store_tile(acc + (size_t)n * O + o0, O, tokens, sums.v);
        }
    }
    return PK_OK;
}
