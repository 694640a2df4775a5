/* Plain int8 GEMM, AVX2 tier (contract in int8_gemm.h, tile in gemm_tile__avx2.h). */
#include "int8_gemm.h"
#include "gemm_tile__avx2.h"

int int8_gemm__avx2(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch_avx2(scratch, K, &panel, &stage, &x16);
    pk_widen_activations_avx2(N, K, xq, x16);
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        pk_stage_from_rows_avx2(K, w + (size_t)o0 * K, rows, stage);
        pk_block_gemm_avx2(N, O, K, o0, rows, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}

int int8_stage_weights__avx2(int O, int K, const int8_t *w, int8_t *staged) {
    if (O <= 0 || O % 8 != 0 || K <= 0 || K % 8 != 0) return PK_E_SHAPE;
    for (int o0 = 0; o0 < O; o0 += 8) pk_stage_from_rows_avx2(K, w + (size_t)o0 * K, 8, staged + (size_t)o0 * K);
    return PK_OK;
}

int int8_gemm_peak__avx2(PK_INT8_PEAK_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch_avx2(scratch, K, &panel, &stage, &x16);
    pk_widen_activations_avx2(N, K, xq, x16);
    __m256i sums[PK_AVX2_TILE_TOKENS];
    for (int o0 = 0; o0 < O; o0 += 8) {
        const int8_t *st = staged + (size_t)o0 * K;
        for (int n = 0; n < N; n += PK_AVX2_TILE_TOKENS) {
            int tokens = N - n < PK_AVX2_TILE_TOKENS ? N - n : PK_AVX2_TILE_TOKENS;
            pk_tile_avx2(K, st, x16 + (size_t)n * K, tokens, sums);
            for (int t = 0; t < tokens; t++)
                _mm256_storeu_si256((__m256i *)(acc + (size_t)(n + t) * O + o0), sums[t]);
        }
    }
    return PK_OK;
}
