/* fv5 block decode for the AVX2 tier (internal header, used by the decode op and, fused with
 * the dot-order staging, by the fv5 GEMM). The steps of fv5_decode__wasm_simd128.h with
 * 128-bit SSE4.1/SSSE3 operations (VEX-encoded under -mavx2): digits in 16-bit lanes of a ymm,
 * pshufb on the row-pair table, code vectors in quads whose row pairs are compile-time
 * constants. Same bytes as the scalar tier. */
#ifndef PK_FV5_DECODE_AVX2_H
#define PK_FV5_DECODE_AVX2_H

#include <immintrin.h>
#include "fv5_decode.h"
#include "gemm_tile__avx2.h"

/* The staging the fused decode writes: the dot-order pairs of gemm_tile__avx2.h unless the
 * including file names another layout's k-block and range functions first (the VNNI GEMM). */
#ifndef PK_DECODE_STAGE_KB
#define PK_DECODE_STAGE_KB pk_stage_kb_avx2
#define PK_DECODE_STAGE_RANGE pk_stage_from_panel_avx2
#endif

/* x / 5 on 16-bit lanes holding 0..124: ((x + 1) * 51) >> 8. */
static inline __m256i pk_div5_u16_avx2(__m256i x) {
    return _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_add_epi16(x, _mm256_set1_epi16(1)),
                                                _mm256_set1_epi16(51)), 8);
}

/* Swizzle indices of the three digits of code vector x: all 16 lanes widened to 16 bits in
 * one ymm, digits computed there, then packed back to bytes (+8 on lanes 8..15). */
static inline void pk_digit_indices_avx2(__m128i x, __m128i d[3]) {
    const __m128i upper = _mm_set_epi8(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i five = _mm256_set1_epi16(5);
    __m256i x16 = _mm256_cvtepu8_epi16(x);
    __m256i q = pk_div5_u16_avx2(x16);
    __m256i d2 = pk_div5_u16_avx2(q);
    __m256i digit[3] = {_mm256_sub_epi16(x16, _mm256_mullo_epi16(q, five)),
                        _mm256_sub_epi16(q, _mm256_mullo_epi16(d2, five)), d2};
    for (int i = 0; i < 3; i++)
        d[i] = _mm_or_si128(_mm_packus_epi16(_mm256_castsi256_si128(digit[i]),
                                             _mm256_extracti128_si256(digit[i], 1)), upper);
}

static inline void pk_emit_code_avx2(__m128i x, int t, int vectors, const __m128i *table, int8_t *panel) {
    __m128i d[3];
    pk_digit_indices_avx2(x, d);
    for (int i = 0; i < 3; i++) {
        int v = 3 * t + i;
        if (v >= vectors) return;
        _mm_storeu_si128((__m128i *)(panel + (size_t)v * 16), _mm_shuffle_epi8(table[v & 3], d[i]));
    }
}

static inline void pk_decode_quad_avx2(const __m128i *x, const __m128i *table, __m128i *P) {
    for (int a = 0; a < 4; a++) {
        __m128i d[3];
        pk_digit_indices_avx2(x[a], d);
        for (int i = 0; i < 3; i++) P[3 * a + i] = _mm_shuffle_epi8(table[(3 * a + i) & 3], d[i]);
    }
}

/* stage == NULL: write the spec panel; otherwise the dot-order staging of gemm_tile__avx2.h. */
static inline void pk_fv5_decode_avx2(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel,
                                      int8_t *stage) {
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    int full = T / 8;
    __m128i table[4];
    for (int p = 0; p < 4; p++) table[p] = _mm_loadu_si128((const __m128i *)(lut + 16 * p));
    const __m128i low7 = _mm_set1_epi8(0x7f), one = _mm_set1_epi8(1);
    int kb_staged = 0;
    for (int g = 0; g < full; g++) {
        const uint8_t *s = stored + (size_t)g * 7 * 16;
        __m128i x[8];
        __m128i code7 = _mm_setzero_si128();
        for (int m = 0; m < 7; m++) {
            __m128i sm = _mm_loadu_si128((const __m128i *)(s + 16 * m));
            /* bit 7 of each byte -> bit m: 16-bit shift, then one bit per byte */
            __m128i top = _mm_and_si128(_mm_srli_epi16(sm, 7), one);
            code7 = _mm_or_si128(code7, _mm_sll_epi16(top, _mm_cvtsi32_si128(m)));
            x[m] = _mm_and_si128(sm, low7);
        }
        x[7] = code7;
        for (int h = 0; h < 2; h++) {
            int u = 2 * g + h;
            if (12 * u + 11 < vectors) {
                __m128i P[12];
                pk_decode_quad_avx2(x + 4 * h, table, P);
                if (stage) {
                    for (int c = 0; c < 3; c++)
                        PK_DECODE_STAGE_KB(P[4 * c], P[4 * c + 1], P[4 * c + 2], P[4 * c + 3],
                                           stage + (size_t)(3 * u + c) * 64);
                    kb_staged = 3 * u + 3;
                } else {
                    for (int i = 0; i < 12; i++)
                        _mm_storeu_si128((__m128i *)(panel + (size_t)(12 * u + i) * 16), P[i]);
                }
            } else {
                for (int a = 0; a < 4; a++) pk_emit_code_avx2(x[4 * h + a], 4 * u + a, vectors, table, panel);
            }
        }
    }
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int m = 0; m < T % 8; m++)
        pk_emit_code_avx2(_mm_loadu_si128((const __m128i *)(tail + 16 * m)), 8 * full + m, vectors, table, panel);
    if (stage) PK_DECODE_STAGE_RANGE(kb_staged, K / 8, panel, stage);
}

#endif
