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

/* The activations as the tile reads them: xq[N][K] widened to int16 once per call. */
typedef int16_t pk_act_avx2;
static inline void pk_prepare_activations_avx2(int N, int K, const int8_t *xq, int16_t *x16) {
    size_t total = (size_t)N * (size_t)K;
    size_t i = 0;
    for (; i + 16 <= total; i += 16)
        _mm256_storeu_si256((__m256i *)(x16 + i),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(xq + i))));
    for (; i < total; i++) x16[i] = xq[i];
}

enum { pk_tile_tokens_avx2 = 6 };
typedef struct { __m256i v[pk_tile_tokens_avx2]; } pk_tile_sums_avx2;     /* v[t]: token t's 8 rows */

static inline __m256i pk_pair_splat_avx2(const int16_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* The 8 rows' sums of tokens n .. n + tokens - 1 (tokens <= pk_tile_tokens_avx2), from x16
 * (xq: unused here). */
static inline void pk_tile_avx2(int K, const int8_t *stage, const int8_t *xq, const int16_t *x16, int n, int tokens,
                                pk_tile_sums_avx2 *sums) {
    (void)xq;
    const int16_t *x = x16 + (size_t)n * K;
    __m256i *acc = sums->v;
    if (tokens == pk_tile_tokens_avx2) {
        __m256i a[pk_tile_tokens_avx2];
        for (int t = 0; t < pk_tile_tokens_avx2; t++) a[t] = _mm256_setzero_si256();
        for (int j = 0; j < K / 2; j++) {
            __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(stage + 16 * j)));
            for (int t = 0; t < pk_tile_tokens_avx2; t++)
                a[t] = _mm256_add_epi32(a[t], _mm256_madd_epi16(w, pk_pair_splat_avx2(x + (size_t)t * K + 2 * j)));
        }
        for (int t = 0; t < pk_tile_tokens_avx2; t++) acc[t] = a[t];
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

/* Token t's 8 row sums -> y row yr, rows o0 .. o0 + rows - 1, in gemm_common.h's order:
 * ((float)acc * xs) * ws (+ bias). (Also the VNNI tier's, whose tile gives the same vector.) */
static inline void pk_dequant_rows_avx2(__m256i acc, int rows, float xs, const float *ws, const float *bias,
                                        int o0, float *yr) {
    if (rows == 8) {
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(xs));
        v = _mm256_mul_ps(v, _mm256_loadu_ps(ws + o0));
        if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o0));
        _mm256_storeu_ps(yr + o0, v);
    } else {
        int32_t sums[8];
        _mm256_storeu_si256((__m256i *)sums, acc);
        for (int r = 0; r < rows; r++) yr[o0 + r] = pk_dequant(sums[r], xs, ws[o0 + r], bias, o0 + r);
    }
}

/* Token t's sums of a tile, dequantised into y row yr. */
static inline void pk_dequant_token_avx2(const pk_tile_sums_avx2 *sums, int t, int rows, float xs, const float *ws,
                                         const float *bias, int o0, float *yr) {
    pk_dequant_rows_avx2(sums->v[t], rows, xs, ws, bias, o0, yr);
}

#endif
