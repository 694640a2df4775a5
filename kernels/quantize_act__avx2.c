/* Per-token activation quantisation, AVX2 tier (contract in quantize_act.h). amax over |x|
 * bit patterns with vpmaxud; vroundps(nearest) = nearbyintf; the tail runs the scalar steps. */
#include <immintrin.h>
#include "quantize_act.h"

int quantize_act__avx2(int N, int K, const float *x, int8_t *xq, float *xs) {
    if (N <= 0 || K <= 0 || N > PK_MAX_DIM || K > PK_MAX_DIM) return PK_E_SHAPE;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    int K8 = K & ~7;
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * K;
        int8_t *out = xq + (size_t)n * K;
        __m256i m8 = _mm256_setzero_si256();
        for (int k = 0; k < K8; k += 8)
            m8 = _mm256_max_epu32(m8, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(row + k)), abs_mask));
        uint32_t lanes[8], amax_bits = 0;
        _mm256_storeu_si256((__m256i *)lanes, m8);
        for (int i = 0; i < 8; i++)
            if (lanes[i] > amax_bits) amax_bits = lanes[i];
        for (int k = K8; k < K; k++) {
            uint32_t b = pk_abs_bits(row[k]);
            if (b > amax_bits) amax_bits = b;
        }
        if (amax_bits >= PK_FLOAT_INF_BITS) return n + 1;
        float inv;
        if (!pk_quant_scale(amax_bits, K, out, &inv, &xs[n])) continue;
        const __m256 vinv = _mm256_set1_ps(inv);
        const __m256 lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
        int k = 0;
        for (; k < K8; k += 8) {
            __m256 q = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(row + k), vinv),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            q = _mm256_min_ps(_mm256_max_ps(q, nlim), lim);
            __m256i i32 = _mm256_cvtps_epi32(q);
            __m128i i16 = _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
            _mm_storel_epi64((__m128i *)(out + k), _mm_packs_epi16(i16, i16));
        }
        for (; k < K; k++) out[k] = pk_quant_value(row[k], inv);
    }
    return PK_OK;
}
