/* The AVX-512 VNNI GEMM tile (internal header; 256-bit vectors: AVX512VL + AVX512VNNI).
 * vpdpbusd adds to each i32 lane the dot product of 4 unsigned bytes by 4 signed bytes. As in
 * the wasm relaxed-SIMD tier (gemm_tile__wasm_relaxed_simd.h), weights are stored as
 * w + 64 in [1, 127] (every grid entry is in [-63, 63]) and activations stay signed, so
 *     sum_k (w + 64) * xq - 64 * sum_k xq = sum_k w * xq
 * exactly: the same integer sums, hence the same bits, as every other tier.
 *
 * Staging of an 8-row block (8*K bytes): per k quad h one 32-byte vector, byte 4r + i =
 * W[row r][4h + i] + 64 - the wasm relaxed layout with its two halves side by side.
 *
 * Plain int8 weights (int8_gemm) span [-128, 127]: they are staged as w + 128 in [0, 255], the
 * correction 128 * sum_k xq. Still exact: |sum_k (w + 128) xq| <= 255 * 128 * K < 2^31 for every
 * K <= PK_MAX_DIM, so no partial sum overflows.
 */
#ifndef PK_GEMM_TILE_AVX512VNNI_H
#define PK_GEMM_TILE_AVX512VNNI_H

#include <immintrin.h>
#include <string.h>
#include "gemm_common.h"

#define PK_VNNI_TOKENS 8

/* Four panel vectors of one k-block -> two staging vectors (k quads 2kb and 2kb+1). */
static inline void pk_vnni_stage_kb(__m128i P0, __m128i P1, __m128i P2, __m128i P3, int8_t *out) {
    const __m128i offset = _mm_set1_epi8(64);
    /* as i32 lanes: P0 = r0 k0-3, r0 k4-7, r1 k0-3, r1 k4-7 */
    __m128 a = _mm_castsi128_ps(P0), b = _mm_castsi128_ps(P1);
    __m128 c = _mm_castsi128_ps(P2), d = _mm_castsi128_ps(P3);
    __m128i lo01 = _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    __m128i lo23 = _mm_castps_si128(_mm_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)));
    __m128i hi01 = _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    __m128i hi23 = _mm_castps_si128(_mm_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_si128((__m128i *)(out + 0), _mm_add_epi8(lo01, offset));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_add_epi8(lo23, offset));
    _mm_storeu_si128((__m128i *)(out + 32), _mm_add_epi8(hi01, offset));
    _mm_storeu_si128((__m128i *)(out + 48), _mm_add_epi8(hi23, offset));
}

static inline void pk_vnni_stage_from_panel(int kb_begin, int kb_end, const int8_t *panel, int8_t *stage) {
    for (int kb = kb_begin; kb < kb_end; kb++) {
        const __m128i *p = (const __m128i *)(panel + (size_t)kb * 64);
        pk_vnni_stage_kb(_mm_loadu_si128(p), _mm_loadu_si128(p + 1), _mm_loadu_si128(p + 2),
                         _mm_loadu_si128(p + 3), stage + (size_t)kb * 64);
    }
}

static inline void pk_vnni_token_sums(int N, int K, const int8_t *xq, int32_t *sums) {
    for (int n = 0; n < N; n++) {
        int32_t s = 0;
        for (int k = 0; k < K; k++) s += xq[(size_t)n * K + k];
        sums[n] = s;
    }
}

static inline __m256i pk_quad_splat(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* acc[t] = the 8 rows' exact sums of token t (correction applied: weights staged + offset). */
static inline void pk_vnni_tile(int K, const int8_t *stage, const int8_t *x, const int32_t *xsum,
                                int tokens, int offset, __m256i *acc) {
    __m256i a[PK_VNNI_TOKENS];
    for (int t = 0; t < PK_VNNI_TOKENS; t++) a[t] = _mm256_setzero_si256();
    if (tokens == PK_VNNI_TOKENS) {
        for (int h = 0; h < K / 4; h++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(stage + 32 * h));
            for (int t = 0; t < PK_VNNI_TOKENS; t++)
                a[t] = _mm256_dpbusd_epi32(a[t], w, pk_quad_splat(x + (size_t)t * K + 4 * h));
        }
    } else {
        for (int t = 0; t < tokens; t++)
            for (int h = 0; h < K / 4; h++)
                a[t] = _mm256_dpbusd_epi32(a[t], _mm256_loadu_si256((const __m256i *)(stage + 32 * h)),
                                           pk_quad_splat(x + (size_t)t * K + 4 * h));
    }
    for (int t = 0; t < tokens; t++) acc[t] = _mm256_sub_epi32(a[t], _mm256_set1_epi32(offset * xsum[t]));
}

#endif
