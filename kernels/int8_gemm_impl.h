/* The plain int8 GEMM's drivers (contract in int8_gemm.h), written once for the tiers that
 * stage 8-row blocks into dot order and run a tile over them (avx2, wasm_simd128). Each
 * int8_gemm__<tier>.c includes its gemm_tile__<tier>.h (what gemm_block_impl.h lists, and
 * pk_stage_from_rows_<tier>), defines its exact row dot product pk_row_dot_<tier> (the
 * few-token path) and pk_store_tile_<tier> (a tile's sums into int32 acc rows, for the peak
 * kernel), then PK_TIER, and includes this file. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including int8_gemm_impl.h"
#endif

#include "gemm_block_impl.h"

/* Weights staged once, for the peak kernel below. */
int PK_TIER_FN(int8_stage_weights)(int O, int K, const int8_t *w, int8_t *staged) {
    if (O <= 0 || O % 8 != 0 || K <= 0 || K % 8 != 0) return PK_E_SHAPE;
    for (int o0 = 0; o0 < O; o0 += 8)
        PK_TIER_HELPER(stage_from_rows)(K, w + (size_t)o0 * K, 8, staged + (size_t)o0 * K);
    return PK_OK;
}

int PK_TIER_FN(int8_gemm)(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    if (N <= PK_GEMV_MAX_TOKENS) {
        pk_int8_gemv(PK_TIER_HELPER(row_dot), N, O, K, xq, xs, w, ws, bias, y);
        return PK_OK;
    }
    int8_t *panel, *stage;
    PK_TIER_HELPER(act) *act = PK_TIER_HELPER(prepare_scratch)(scratch, N, K, xq, &panel, &stage);
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        PK_TIER_HELPER(stage_from_rows)(K, w + (size_t)o0 * K, rows, stage);
        PK_TIER_HELPER(block_gemm)(N, O, K, o0, rows, stage, xq, act, xs, ws, bias, y);
    }
    return PK_OK;
}

int PK_TIER_FN(int8_gemm_peak)(PK_INT8_PEAK_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    PK_TIER_HELPER(act) *act = PK_TIER_HELPER(prepare_scratch)(scratch, N, K, xq, &panel, &stage);
    enum { TOKENS = PK_TIER_HELPER(tile_tokens) };
    PK_TIER_HELPER(tile_sums) sums;
    for (int o0 = 0; o0 < O; o0 += 8) {
        const int8_t *st = staged + (size_t)o0 * K;
        for (int n = 0; n < N; n += TOKENS) {
            int tokens = N - n < TOKENS ? N - n : TOKENS;
            PK_TIER_HELPER(tile)(K, st, xq, act, n, tokens, &sums);
            PK_TIER_HELPER(store_tile)(acc + (size_t)n * O + o0, O, tokens, &sums);
        }
    }
    return PK_OK;
}
