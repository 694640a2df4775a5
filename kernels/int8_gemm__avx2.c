/* Plain int8 GEMM, AVX2 tier (contract in int8_gemm.h, tile in gemm_tile__avx2.h, drivers in
 * int8_gemm_impl.h). */
#include "int8_gemm.h"
#include "gemm_tile__avx2.h"

/* A row's exact dot product with one token in i16 lanes (the few-token path, pk_int8_gemv). */
static inline int32_t pk_row_dot_avx2(int K, const int8_t *wr, const int8_t *x) {
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

/* A tile's sums into acc rows (the peak kernel). */
static inline void pk_store_tile_avx2(int32_t *acc, int O, int tokens, const pk_tile_sums_avx2 *sums) {
    for (int t = 0; t < tokens; t++) _mm256_storeu_si256((__m256i *)(acc + (size_t)t * O), sums->v[t]);
}

#define PK_TIER avx2
#include "int8_gemm_impl.h"
