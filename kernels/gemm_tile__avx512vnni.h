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
#include "gemm_tile__avx2.h"      /* pk_dequant_rows_avx2: the same 8-lane sums */

enum { pk_tile_tokens_avx512vnni = 8 };
typedef struct { __m256i v[pk_tile_tokens_avx512vnni]; } pk_tile_sums_avx512vnni;   /* v[t]: token t's 8 rows */

/* Four panel vectors of one k-block -> two staging vectors (k quads 2kb and 2kb+1). */
static inline void pk_stage_kb_avx512vnni(__m128i P0, __m128i P1, __m128i P2, __m128i P3, int8_t *out) {
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

/* offset * sum_k xq[n][k] for every token: what weights staged + offset add to its sums. */
static inline void pk_corrections_avx512vnni(int N, int K, const int8_t *xq, int offset, int32_t *corrections) {
    for (int n = 0; n < N; n++) {
        int32_t s = 0;
        for (int k = 0; k < K; k++) s += xq[(size_t)n * K + k];
        corrections[n] = offset * s;
    }
}

/* The activations as the tile reads them: xq itself, and per token the correction of fv5
 * staging (weights + 64). */
typedef int32_t pk_act_avx512vnni;
static inline void pk_prepare_activations_avx512vnni(int N, int K, const int8_t *xq, int32_t *corrections) {
    pk_corrections_avx512vnni(N, K, xq, 64, corrections);
}

static inline __m256i pk_quad_splat_avx512vnni(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* The 8 rows' exact sums of tokens n .. n + tokens - 1 (weights staged + offset, the
 * corrections taken off), read from xq. */
static inline void pk_tile_avx512vnni(int K, const int8_t *stage, const int8_t *xq, const int32_t *corrections, int n,
                                      int tokens, pk_tile_sums_avx512vnni *sums) {
    const int8_t *x = xq + (size_t)n * K;
    __m256i *acc = sums->v;
    __m256i a[pk_tile_tokens_avx512vnni];
    for (int t = 0; t < pk_tile_tokens_avx512vnni; t++) a[t] = _mm256_setzero_si256();
    if (tokens == pk_tile_tokens_avx512vnni) {
        for (int h = 0; h < K / 4; h++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(stage + 32 * h));
            for (int t = 0; t < pk_tile_tokens_avx512vnni; t++)
                a[t] = _mm256_dpbusd_epi32(a[t], w, pk_quad_splat_avx512vnni(x + (size_t)t * K + 4 * h));
        }
    } else {
        for (int t = 0; t < tokens; t++)
            for (int h = 0; h < K / 4; h++)
                a[t] = _mm256_dpbusd_epi32(a[t], _mm256_loadu_si256((const __m256i *)(stage + 32 * h)),
                                           pk_quad_splat_avx512vnni(x + (size_t)t * K + 4 * h));
    }
    for (int t = 0; t < tokens; t++) acc[t] = _mm256_sub_epi32(a[t], _mm256_set1_epi32(corrections[n + t]));
}

/* Token t's sums of a tile, dequantised into y row yr (AVX2's steps: the same 8-lane sums). */
static inline void pk_dequant_token_avx512vnni(const pk_tile_sums_avx512vnni *sums, int t, int rows, float xs,
                                               const float *ws, const float *bias, int o0, float *yr) {
    pk_dequant_rows_avx2(sums->v[t], rows, xs, ws, bias, o0, yr);
}

#endif
