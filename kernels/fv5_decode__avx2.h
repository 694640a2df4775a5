/* fv5 block decode, AVX2's vector steps (internal header; the loop is fv5_decode_impl.h, which
 * the decode op and the AVX2 and VNNI GEMMs instantiate). The steps of fv5_decode__wasm_simd128.h
 * with 128-bit SSE4.1/SSSE3 operations (VEX-encoded under -mavx2): digits in 16-bit lanes of a
 * ymm, pshufb on the row-pair table, code vectors in quads whose row pairs are compile-time
 * constants. Same bytes as the scalar tier. */
#ifndef PK_FV5_DECODE_AVX2_H
#define PK_FV5_DECODE_AVX2_H

#include <immintrin.h>
#include "fv5_decode.h"

typedef __m128i pk_u8x16_avx2;

static inline __m128i pk_load16_avx2(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline void pk_store16_avx2(void *p, __m128i v) { _mm_storeu_si128((__m128i *)p, v); }

/* A stored group of 7 vectors -> its 8 code vectors (bit 7 of stored vector m is bit m of the
 * eighth). */
static inline void pk_unpack_group_avx2(const uint8_t *s, __m128i x[8]) {
    const __m128i low7 = _mm_set1_epi8(0x7f), one = _mm_set1_epi8(1);
    __m128i code7 = _mm_setzero_si128();
    for (int m = 0; m < 7; m++) {
        __m128i sm = _mm_loadu_si128((const __m128i *)(s + 16 * m));
        /* bit 7 of each byte -> bit m: 16-bit shift, then one bit per byte */
        __m128i top = _mm_and_si128(_mm_srli_epi16(sm, 7), one);
        code7 = _mm_or_si128(code7, _mm_sll_epi16(top, _mm_cvtsi32_si128(m)));
        x[m] = _mm_and_si128(sm, low7);
    }
    x[7] = code7;
}

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

/* A row-pair table's entries at the given byte indices. */
static inline __m128i pk_swizzle_avx2(__m128i table, __m128i indices) { return _mm_shuffle_epi8(table, indices); }

#endif
