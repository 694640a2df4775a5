/* float32 lanes of the WebAssembly SIMD128 tier (internal header): f32_lanes__avx2.h's
 * interface on 4 lanes. */
#ifndef PK_F32_LANES_WASM_SIMD128_H
#define PK_F32_LANES_WASM_SIMD128_H

#include <wasm_simd128.h>
#include <stdint.h>

enum { pk_f32_lanes_wasm_simd128 = 4 };
typedef float pk_f32v_wasm_simd128 __attribute__((vector_size(16)));
typedef int32_t pk_i32v_wasm_simd128 __attribute__((vector_size(16)));
typedef double pk_f64v_wasm_simd128 __attribute__((vector_size(16)));          /* 2 float64 lanes */

static inline pk_f32v_wasm_simd128 pk_f32_load_wasm_simd128(const float *p) {
    return (pk_f32v_wasm_simd128)wasm_v128_load(p);
}
static inline void pk_f32_store_wasm_simd128(float *p, pk_f32v_wasm_simd128 v) { wasm_v128_store(p, (v128_t)v); }

/* nearbyintf: round half to even. */
static inline pk_f32v_wasm_simd128 pk_f32_round_wasm_simd128(pk_f32v_wasm_simd128 v) {
    return (pk_f32v_wasm_simd128)wasm_f32x4_nearest((v128_t)v);
}

/* v < lo ? v : lo and v > hi ? v : hi lane-wise, as C's comparisons pick (pmin(a, b) is
 * b < a ? b : a). */
static inline pk_f32v_wasm_simd128 pk_f32_min_wasm_simd128(pk_f32v_wasm_simd128 v, pk_f32v_wasm_simd128 lo) {
    return (pk_f32v_wasm_simd128)wasm_f32x4_pmin((v128_t)lo, (v128_t)v);
}
static inline pk_f32v_wasm_simd128 pk_f32_max_wasm_simd128(pk_f32v_wasm_simd128 v, pk_f32v_wasm_simd128 hi) {
    return (pk_f32v_wasm_simd128)wasm_f32x4_pmax((v128_t)hi, (v128_t)v);
}

/* The 4 lanes as doubles (exact): out[0] lanes 0-1, out[1] lanes 2-3. */
static inline void pk_f64_from_f32_wasm_simd128(pk_f32v_wasm_simd128 v, pk_f64v_wasm_simd128 out[2]) {
    out[0] = (pk_f64v_wasm_simd128)wasm_f64x2_promote_low_f32x4((v128_t)v);
    out[1] = (pk_f64v_wasm_simd128)wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle((v128_t)v, (v128_t)v, 2, 3, 2, 3));
}

/* Rounding toward zero, lane-wise (exact). */
static inline pk_f64v_wasm_simd128 pk_f64_trunc_wasm_simd128(pk_f64v_wasm_simd128 v) {
    return (pk_f64v_wasm_simd128)wasm_f64x2_trunc((v128_t)v);
}

/* Every lane has |v| <= limit (false for NaN). */
static inline int pk_f32_all_within_wasm_simd128(pk_f32v_wasm_simd128 v, float limit) {
    return wasm_i32x4_all_true(wasm_f32x4_le(wasm_f32x4_abs((v128_t)v), wasm_f32x4_splat(limit)));
}

#endif
