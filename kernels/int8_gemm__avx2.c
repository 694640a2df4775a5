/* Plain int8 GEMM, AVX2 tier (contract in int8_gemm.h, tile in gemm_tile__avx2.h). */
#include "int8_gemm.h"
#include "gemm_tile__avx2.h"

/* A row's exact dot product with one token in i16 lanes (pk_int8_gemv's few-token path). */
static inline int32_t row_dot(int K, const int8_t *wr, const int8_t *x) {
    __m256i acc = _mm256_setzero_si256();
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256i a = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wr + k)));
        __m256i b = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + k)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
    }
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
    int32_t sum = _mm_cvtsi128_si32(s4);
    for (; k < K; k++) sum += (int32_t)wr[k] * x[k];
    return sum;
}

int int8_gemm__avx2(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    if (N <= PK_GEMV_MAX_TOKENS) {
        pk_int8_gemv(row_dot, N, O, K, xq, xs, w, ws, bias, y);
        return PK_OK;
    }
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
