/* SiLU, GLU and the softmax's exponentials, AVX2 tier (contract in activation.h): pk_expf's main
 * path on 8 lanes. */
#include <immintrin.h>
#include "activation.h"

/* pk_expf(v) for lanes with |v| <= 87, step by step as pk_math.h writes it. */
static inline __m256 expf_main_path(__m256 v) {
    __m256 k = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269502162933349609375f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(v, _mm256_mul_ps(k, _mm256_set1_ps(0.693145751953125f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(k, _mm256_set1_ps(1.428606765330187045e-06f)));
    __m256 p = _mm256_set1_ps(1.98412698e-4f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.38888889e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.33333377e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.16666679e-2f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.66666672e-1f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(0.5f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

int silu__avx2(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 limit = _mm256_set1_ps(PK_SILU_FAST_LIMIT), one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 inside = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), limit, _CMP_LE_OQ);   /* false for NaN */
        if (_mm256_movemask_ps(inside) != 0xff) {
            for (int j = i; j < i + 8; j++) y[j] = pk_silu_one(x[j]);
            continue;
        }
        __m256 e = expf_main_path(_mm256_xor_ps(v, sign));                             /* pk_expf(-x) */
        _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, e))));
    }
    for (; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}

void softmax_exp_row__avx2(int n, float *row, float mx) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 limit = _mm256_set1_ps(PK_SILU_FAST_LIMIT), m = _mm256_set1_ps(mx);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(row + i), m);
        __m256 inside = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), limit, _CMP_LE_OQ);   /* false for NaN */
        if (_mm256_movemask_ps(inside) != 0xff) {
            for (int j = i; j < i + 8; j++) row[j] = pk_expf(row[j] - mx);
            continue;
        }
        _mm256_storeu_ps(row + i, expf_main_path(v));
    }
    for (; i < n; i++) row[i] = pk_expf(row[i] - mx);
}

int glu__avx2(int N, int C, const float *x, float *y) {
    if (N <= 0 || C <= 0) return PK_E_SHAPE;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 limit = _mm256_set1_ps(PK_SILU_FAST_LIMIT), one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    for (int n = 0; n < N; n++) {
        const float *a = x + (size_t)n * 2 * C, *g = a + C;
        float *out = y + (size_t)n * C;
        int c = 0;
        for (; c + 8 <= C; c += 8) {
            __m256 v = _mm256_loadu_ps(g + c);
            __m256 inside = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), limit, _CMP_LE_OQ);   /* false for NaN */
            if (_mm256_movemask_ps(inside) != 0xff) {
                for (int j = c; j < c + 8; j++) out[j] = a[j] * pk_sigmoidf(g[j]);
                continue;
            }
            __m256 e = expf_main_path(_mm256_xor_ps(v, sign));                         /* pk_expf(-v) */
            _mm256_storeu_ps(out + c, _mm256_mul_ps(_mm256_loadu_ps(a + c), _mm256_div_ps(one, _mm256_add_ps(one, e))));
        }
        for (; c < C; c++) out[c] = a[c] * pk_sigmoidf(g[c]);
    }
    return PK_OK;
}
