/* float32 lanes of the AVX2 tier (internal header) for the float kernels written once
 * (activation_impl.h, norm_impl.h): 8 lanes as a vector-extension type, whose + - * /
 * are lane-wise IEEE operations (never fused: -ffp-contract=off), and the few steps that need
 * the ISA's own instructions. */
#ifndef PK_F32_LANES_AVX2_H
#define PK_F32_LANES_AVX2_H

#include <immintrin.h>
#include <stdint.h>

enum { pk_f32_lanes_avx2 = 8 };
typedef float pk_f32v_avx2 __attribute__((vector_size(32)));
typedef int32_t pk_i32v_avx2 __attribute__((vector_size(32)));
typedef double pk_f64v_avx2 __attribute__((vector_size(32)));                  /* 4 float64 lanes */

static inline pk_f32v_avx2 pk_f32_load_avx2(const float *p) { return (pk_f32v_avx2)_mm256_loadu_ps(p); }
static inline void pk_f32_store_avx2(float *p, pk_f32v_avx2 v) { _mm256_storeu_ps(p, (__m256)v); }

/* nearbyintf: round half to even. */
static inline pk_f32v_avx2 pk_f32_round_avx2(pk_f32v_avx2 v) {
    return (pk_f32v_avx2)_mm256_round_ps((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* v < lo ? v : lo and v > hi ? v : hi lane-wise, as C's comparisons pick (minps returns its
 * second operand unless the first is smaller). */
static inline pk_f32v_avx2 pk_f32_min_avx2(pk_f32v_avx2 v, pk_f32v_avx2 lo) { return (pk_f32v_avx2)_mm256_min_ps((__m256)v, (__m256)lo); }
static inline pk_f32v_avx2 pk_f32_max_avx2(pk_f32v_avx2 v, pk_f32v_avx2 hi) { return (pk_f32v_avx2)_mm256_max_ps((__m256)v, (__m256)hi); }

/* The 8 lanes as doubles (exact): out[0] lanes 0-3, out[1] lanes 4-7. */
static inline void pk_f64_from_f32_avx2(pk_f32v_avx2 v, pk_f64v_avx2 out[2]) {
    out[0] = (pk_f64v_avx2)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)v));
    out[1] = (pk_f64v_avx2)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)v, 1));
}

/* Rounding toward zero, lane-wise (exact). */
static inline pk_f64v_avx2 pk_f64_trunc_avx2(pk_f64v_avx2 v) {
    return (pk_f64v_avx2)_mm256_round_pd((__m256d)v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

/* Every lane has |v| <= limit (false for NaN). */
static inline int pk_f32_all_within_avx2(pk_f32v_avx2 v, float limit) {
    __m256 abs = _mm256_and_ps((__m256)v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    return _mm256_movemask_ps(_mm256_cmp_ps(abs, _mm256_set1_ps(limit), _CMP_LE_OQ)) == 0xff;
}

#endif
