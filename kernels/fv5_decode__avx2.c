/* fv5 block decode, AVX2 tier (128-bit SSSE3/SSE4.1 operations, VEX-encoded). Same steps
 * as the wasm_simd128 tier: x/5 = ((x+1)*51)>>8 in 16-bit lanes, pshufb on the row-pair
 * table. Same bytes as the scalar tier. */
#include <immintrin.h>
#include "fv5_decode.h"

static inline __m128i div5_u8(__m128i x) {
    const __m128i k51 = _mm_set1_epi16(51);
    __m128i x1 = _mm_add_epi8(x, _mm_set1_epi8(1));
    __m128i lo = _mm_srli_epi16(_mm_mullo_epi16(_mm_cvtepu8_epi16(x1), k51), 8);
    __m128i hi = _mm_srli_epi16(_mm_mullo_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(x1, 8)), k51), 8);
    return _mm_packus_epi16(lo, hi);
}

static inline __m128i times5_u8(__m128i q) {
    __m128i q2 = _mm_add_epi8(q, q);
    return _mm_add_epi8(_mm_add_epi8(q2, q2), q);
}

static inline void emit(__m128i x, int t, int vectors, const __m128i *table, int8_t *panel) {
    const __m128i upper = _mm_set_epi8(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
    __m128i q = div5_u8(x);
    __m128i d2 = div5_u8(q);
    __m128i d[3] = {_mm_sub_epi8(x, times5_u8(q)), _mm_sub_epi8(q, times5_u8(d2)), d2};
    for (int i = 0; i < 3; i++) {
        int v = 3 * t + i;
        if (v >= vectors) return;
        __m128i out = _mm_shuffle_epi8(table[v & 3], _mm_or_si128(d[i], upper));
        _mm_storeu_si128((__m128i *)(panel + (size_t)v * 16), out);
    }
}

int fv5_decode_block__avx2(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    __m128i table[4];
    for (int p = 0; p < 4; p++) table[p] = _mm_loadu_si128((const __m128i *)(lut + 16 * p));
    const __m128i low7 = _mm_set1_epi8(0x7f), one = _mm_set1_epi8(1);
    int full = T / 8;
    for (int g = 0; g < full; g++) {
        const uint8_t *s = stored + (size_t)g * 7 * 16;
        __m128i code7 = _mm_setzero_si128();
        for (int m = 0; m < 7; m++) {
            __m128i sm = _mm_loadu_si128((const __m128i *)(s + 16 * m));
            /* bit 7 of each byte -> bit m: 16-bit shift, then mask to one bit per byte. */
            __m128i top = _mm_and_si128(_mm_srli_epi16(sm, 7), one);
            code7 = _mm_or_si128(code7, _mm_sll_epi16(top, _mm_cvtsi32_si128(m)));
            emit(_mm_and_si128(sm, low7), 8 * g + m, vectors, table, panel);
        }
        emit(code7, 8 * g + 7, vectors, table, panel);
    }
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int m = 0; m < T % 8; m++)
        emit(_mm_loadu_si128((const __m128i *)(tail + 16 * m)), 8 * full + m, vectors, table, panel);
    return PK_OK;
}

PK_DEFINE_DECODE_BLOCKS(avx2)
