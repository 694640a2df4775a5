/* The AVX2 GEMM tile shared by fv5_gemm and int8_gemm (internal header).
 * Same dot-order staging as gemm_tile__wasm_simd128.h (16 bytes per k pair: byte 2r + i =
 * W[row r][2j + i]); here one vpmovsxbw gives all 8 rows as int16 pairs, and one vpmaddwd
 * against a broadcast activation pair adds 2 products to each of the 8 rows. */
#ifndef PK_GEMM_TILE_AVX2_H
#define PK_GEMM_TILE_AVX2_H

#include <immintrin.h>
#include <string.h>
#include "gemm_common.h"

static inline void pk_stage_kb_avx2(__m128i P0, __m128i P1, __m128i P2, __m128i P3, int8_t *out) {
    __m128i t0 = _mm_unpacklo_epi16(P0, P1), t1 = _mm_unpackhi_epi16(P0, P1);
    __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1); /* rows 0-3 */
    __m128i s0 = _mm_unpacklo_epi16(P2, P3), s1 = _mm_unpackhi_epi16(P2, P3);
    __m128i v0 = _mm_unpacklo_epi16(s0, s1), v1 = _mm_unpackhi_epi16(s0, s1); /* rows 4-7 */
    _mm_storeu_si128((__m128i *)(out + 0), _mm_unpacklo_epi64(u0, v0));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_unpackhi_epi64(u0, v0));
    _mm_storeu_si128((__m128i *)(out + 32), _mm_unpacklo_epi64(u1, v1));
    _mm_storeu_si128((__m128i *)(out + 48), _mm_unpackhi_epi64(u1, v1));
}

/* Spec panel (fv5_decode.h) -> staging, for k-blocks kb_begin..kb_end-1. */
static inline void pk_stage_from_panel_avx2(int kb_begin, int kb_end, const int8_t *panel, int8_t *stage) {
    for (int kb = kb_begin; kb < kb_end; kb++) {
        const __m128i *p = (const __m128i *)(panel + (size_t)kb * 64);
        pk_stage_kb_avx2(_mm_loadu_si128(p), _mm_loadu_si128(p + 1), _mm_loadu_si128(p + 2),
                         _mm_loadu_si128(p + 3), stage + (size_t)kb * 64);
    }
}

static inline void pk_stage_from_rows_avx2(int K, const int8_t *w, int rows, int8_t *stage) {
    for (int kb = 0; kb < K / 8; kb++) {
        __m128i P[4];
        for (int p = 0; p < 4; p++) {
            int64_t lo = 0, hi = 0;
            if (2 * p < rows) memcpy(&lo, w + (size_t)(2 * p) * K + 8 * kb, 8);
            if (2 * p + 1 < rows) memcpy(&hi, w + (size_t)(2 * p + 1) * K + 8 * kb, 8);
            P[p] = _mm_set_epi64x(hi, lo);
        }
        pk_stage_kb_avx2(P[0], P[1], P[2], P[3], stage + (size_t)kb * 64);
    }
}

static inline void pk_widen_activations_avx2(int N, int K, const int8_t *xq, int16_t *x16) {
    size_t total = (size_t)N * (size_t)K;
    size_t i = 0;
    for (; i + 16 <= total; i += 16)
        _mm256_storeu_si256((__m256i *)(x16 + i),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(xq + i))));
    for (; i < total; i++) x16[i] = xq[i];
}

#define PK_AVX2_TILE_TOKENS 6

static inline __m256i pk_pair_splat_avx2(const int16_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* acc[t] = the 8 rows' sums of token t, for `tokens` (1..PK_AVX2_TILE_TOKENS) rows of x16. */
static inline void pk_tile_avx2(int K, const int8_t *stage, const int16_t *x, int tokens, __m256i *acc) {
    if (tokens == PK_AVX2_TILE_TOKENS) {
        __m256i a[PK_AVX2_TILE_TOKENS];
        for (int t = 0; t < PK_AVX2_TILE_TOKENS; t++) a[t] = _mm256_setzero_si256();
        for (int j = 0; j < K / 2; j++) {
            __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(stage + 16 * j)));
            for (int t = 0; t < PK_AVX2_TILE_TOKENS; t++)
                a[t] = _mm256_add_epi32(a[t], _mm256_madd_epi16(w, pk_pair_splat_avx2(x + (size_t)t * K + 2 * j)));
        }
        for (int t = 0; t < PK_AVX2_TILE_TOKENS; t++) acc[t] = a[t];
        return;
    }
    for (int t = 0; t < tokens; t++) {
        const int16_t *xt = x + (size_t)t * K;
        __m256i a = _mm256_setzero_si256();
        for (int j = 0; j < K / 2; j++) {
            __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(stage + 16 * j)));
            a = _mm256_add_epi32(a, _mm256_madd_epi16(w, pk_pair_splat_avx2(xt + 2 * j)));
        }
        acc[t] = a;
    }
}

static inline void pk_block_gemm_avx2(int N, int O, int K, int o0, int rows, const int8_t *stage,
                                      const int16_t *x16, const float *xs, const float *ws,
                                      const float *bias, float *y) {
    __m256i acc[PK_AVX2_TILE_TOKENS];
    for (int n = 0; n < N; n += PK_AVX2_TILE_TOKENS) {
        int tokens = N - n < PK_AVX2_TILE_TOKENS ? N - n : PK_AVX2_TILE_TOKENS;
        pk_tile_avx2(K, stage, x16 + (size_t)n * K, tokens, acc);
        for (int t = 0; t < tokens; t++) {
            float *yr = y + (size_t)(n + t) * O;
            if (rows == 8) {
                /* gemm_common.h order: ((float)acc * xs) * ws (+ bias) */
                __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(xs[n + t]));
                v = _mm256_mul_ps(v, _mm256_loadu_ps(ws + o0));
                if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o0));
                _mm256_storeu_ps(yr + o0, v);
            } else {
                int32_t sums[8];
                _mm256_storeu_si256((__m256i *)sums, acc[t]);
                for (int r = 0; r < rows; r++)
                    yr[o0 + r] = pk_dequant(sums[r], xs[n + t], ws[o0 + r], bias, o0 + r);
            }
        }
    }
}

static inline void pk_carve_scratch_avx2(void *scratch, int K, int8_t **panel, int8_t **stage,
                                         int16_t **x16) {
    int8_t *base = (int8_t *)pk_align64(scratch);
    *panel = base;
    *stage = base + (size_t)8 * K;
    *x16 = (int16_t *)(base + (size_t)16 * K);
}

#endif
