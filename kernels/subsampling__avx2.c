/* The subsampling head, AVX2 tier (contract in subsampling.h): 8 output columns in lanes. */
#include <immintrin.h>
#include "subsampling.h"

/* The even and odd samples of x[0..15]: lanes k = x[2k] and x[2k + 1]. */
static inline void deinterleave(const float *x, __m256 *even, __m256 *odd) {
    __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
    __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));   /* lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 */
    __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* y [Ho][Wo] = conv(x [H][W]) (+ relu): one channel, 3x3, stride 2, padding 1. */
static void conv1_s2(int H, int W, const float *x, const float *w, float b, int relu, float *y) {
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2;
    /* vector blocks start at j >= 1 (no left padding) and keep every load inside the row (the
     * last one reads x[2j + 16]); column 0 and the rest run the scalar steps */
    const __m256 vb = _mm256_set1_ps(b), zero = _mm256_setzero_ps();
    __m256 vw[9];
    for (int t = 0; t < 9; t++) vw[t] = _mm256_set1_ps(w[t]);
    for (int i = 0; i < Ho; i++) {
        float *row = y + (size_t)i * Wo;
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, 0, 1, row);
        int j = 1;
        for (; j + 8 <= Wo && 2 * j + 16 <= W - 1; j += 8) {
            __m256 acc = zero;
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                if (r < 0 || r >= H) continue;
                const float *xr = x + (size_t)r * W + 2 * j - 1;
                __m256 t0, t1, t2, unused;
                deinterleave(xr, &t0, &t1);              /* x[2j-1+2k], x[2j+2k] */
                deinterleave(xr + 2, &t2, &unused);      /* x[2j+1+2k] */
                acc = _mm256_add_ps(acc, _mm256_mul_ps(vw[a * 3 + 0], t0));
                acc = _mm256_add_ps(acc, _mm256_mul_ps(vw[a * 3 + 1], t1));
                acc = _mm256_add_ps(acc, _mm256_mul_ps(vw[a * 3 + 2], t2));
            }
            __m256 v = _mm256_add_ps(acc, vb);
            if (relu) v = _mm256_and_ps(v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
            _mm256_storeu_ps(row + j, v);
        }
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, j, Wo, row);
    }
}

int subsampling_head__avx2(PK_SUBSAMPLING_HEAD_ARGS) {
    return pk_subsampling_head_with(conv1_s2, T, F, C, x, w0, b0, w2, b2, scratch, y);
}
