/* The WebAssembly SIMD128 GEMM tile shared by fv5_gemm and int8_gemm (internal header).
 *
 * Dot-order staging of one 8-row block (8*K bytes): for each k pair j (0 <= j < K/2) one
 * 16-byte vector, byte 2r + i = W[row r][2j + i]. Sign-extended with i16x8.load8x8_s it gives
 * rows 0-3 (low 8 bytes) and rows 4-7 (high 8 bytes) as (k, k+1) int16 pairs, so one
 * i32x4.dot_i16x8_s against a splatted activation pair adds 2 products to each of 4 rows:
 * each accumulator lane is one row's running sum and no horizontal reduction is needed.
 * Activations are widened to int16 once per call (x16[N][K]).
 */
#ifndef PK_GEMM_TILE_WASM_SIMD128_H
#define PK_GEMM_TILE_WASM_SIMD128_H

#include <wasm_simd128.h>
#include "gemm_common.h"

/* Four panel vectors of one kb (rows 0-1, 2-3, 4-5, 6-7 by 8 k) -> four staging vectors. */
static inline void pk_stage_kb_wasm_simd128(v128_t P0, v128_t P1, v128_t P2, v128_t P3, int8_t *out) {
    /* As int16 lanes, P0 = r0q0 r0q1 r0q2 r0q3 r1q0 r1q1 r1q2 r1q3 (q = k pair). */
    v128_t t0 = wasm_i16x8_shuffle(P0, P1, 0, 8, 1, 9, 2, 10, 3, 11);   /* r0 r2 by q */
    v128_t t1 = wasm_i16x8_shuffle(P0, P1, 4, 12, 5, 13, 6, 14, 7, 15); /* r1 r3 by q */
    v128_t u0 = wasm_i16x8_shuffle(t0, t1, 0, 8, 1, 9, 2, 10, 3, 11);   /* r0..r3 q0, q1 */
    v128_t u1 = wasm_i16x8_shuffle(t0, t1, 4, 12, 5, 13, 6, 14, 7, 15); /* r0..r3 q2, q3 */
    v128_t s0 = wasm_i16x8_shuffle(P2, P3, 0, 8, 1, 9, 2, 10, 3, 11);
    v128_t s1 = wasm_i16x8_shuffle(P2, P3, 4, 12, 5, 13, 6, 14, 7, 15);
    v128_t v0 = wasm_i16x8_shuffle(s0, s1, 0, 8, 1, 9, 2, 10, 3, 11);   /* r4..r7 q0, q1 */
    v128_t v1 = wasm_i16x8_shuffle(s0, s1, 4, 12, 5, 13, 6, 14, 7, 15); /* r4..r7 q2, q3 */
    wasm_v128_store(out + 0, wasm_i64x2_shuffle(u0, v0, 0, 2));
    wasm_v128_store(out + 16, wasm_i64x2_shuffle(u0, v0, 1, 3));
    wasm_v128_store(out + 32, wasm_i64x2_shuffle(u1, v1, 0, 2));
    wasm_v128_store(out + 48, wasm_i64x2_shuffle(u1, v1, 1, 3));
}

/* Row-major int8 rows (rows valid of 8, the rest zero) -> staging. */
static inline void pk_stage_from_rows_wasm_simd128(int K, const int8_t *w, int rows, int8_t *stage) {
    for (int kb = 0; kb < K / 8; kb++) {
        v128_t P[4];
        for (int p = 0; p < 4; p++) {
            v128_t v = wasm_i64x2_splat(0);
            int r0 = 2 * p, r1 = 2 * p + 1;
            if (r0 < rows) v = wasm_v128_load64_lane(w + (size_t)r0 * K + 8 * kb, v, 0);
            if (r1 < rows) v = wasm_v128_load64_lane(w + (size_t)r1 * K + 8 * kb, v, 1);
            P[p] = v;
        }
        pk_stage_kb_wasm_simd128(P[0], P[1], P[2], P[3], stage + (size_t)kb * 64);
    }
}

/* The activations as the tile reads them: xq[N][K] int8 -> x16[N][K] int16 (K % 8 == 0). */
typedef int16_t pk_act_wasm_simd128;
static inline void pk_prepare_activations_wasm_simd128(int N, int K, const int8_t *xq, int16_t *x16) {
    size_t total = (size_t)N * (size_t)K;
    for (size_t i = 0; i < total; i += 8) wasm_v128_store(x16 + i, wasm_i16x8_load8x8(xq + i));
}

/* 4 tokens: 8 accumulators + 2 weight + 4 activation vectors fit V8's 16 xmm registers on
 * x86-64; 2, 3, 5, 6 measured slower in Node (5 and 6 spill), and so did unrolling j by 2. */
enum { pk_tile_tokens_wasm_simd128 = 4 };
typedef struct { v128_t v[2 * pk_tile_tokens_wasm_simd128]; } pk_tile_sums_wasm_simd128;   /* v[2t], v[2t + 1]:
                                                                       token t's rows 0-3, 4-7 */

/* The 8 rows' sums of tokens n .. n + tokens - 1 (tokens <= 4), from x16 (xq: unused here). */
static inline void pk_tile_wasm_simd128(int K, const int8_t *stage, const int8_t *xq, const int16_t *x16, int n,
                                        int tokens, pk_tile_sums_wasm_simd128 *sums) {
    (void)xq;
    const int16_t *x = x16 + (size_t)n * K;
    v128_t *acc = sums->v;
    for (int i = 0; i < 2 * pk_tile_tokens_wasm_simd128; i++) acc[i] = wasm_i32x4_splat(0);
    if (tokens == pk_tile_tokens_wasm_simd128) {
        /* constant trip counts: clang unrolls these and keeps a[] in wasm locals */
        v128_t a[2 * pk_tile_tokens_wasm_simd128];
        for (int i = 0; i < 2 * pk_tile_tokens_wasm_simd128; i++) a[i] = wasm_i32x4_splat(0);
        for (int j = 0; j < K / 2; j++) {
            v128_t wa = wasm_i16x8_load8x8(stage + 16 * j);
            v128_t wb = wasm_i16x8_load8x8(stage + 16 * j + 8);
            for (int t = 0; t < pk_tile_tokens_wasm_simd128; t++) {
                v128_t v = wasm_v128_load32_splat(x + (size_t)t * K + 2 * j);
                a[2 * t] = wasm_i32x4_add(a[2 * t], wasm_i32x4_dot_i16x8(wa, v));
                a[2 * t + 1] = wasm_i32x4_add(a[2 * t + 1], wasm_i32x4_dot_i16x8(wb, v));
            }
        }
        for (int i = 0; i < 2 * pk_tile_tokens_wasm_simd128; i++) acc[i] = a[i];
        return;
    }
    for (int t = 0; t < tokens; t++) {
        const int16_t *xt = x + (size_t)t * K;
        v128_t a0 = acc[2 * t], a1 = acc[2 * t + 1];
        for (int j = 0; j < K / 2; j++) {
            v128_t v = wasm_v128_load32_splat(xt + 2 * j);
            a0 = wasm_i32x4_add(a0, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(stage + 16 * j), v));
            a1 = wasm_i32x4_add(a1, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(stage + 16 * j + 8), v));
        }
        acc[2 * t] = a0;
        acc[2 * t + 1] = a1;
    }
}

/* Dequantise 4 rows (o0..o0+3) of token n in the order of gemm_common.h. */
static inline v128_t pk_dequant4_wasm_simd128(v128_t acc, float xs, const float *ws, const float *bias, int o0) {
    v128_t y = wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), wasm_f32x4_splat(xs)),
                              wasm_v128_load(ws + o0));
    if (bias) y = wasm_f32x4_add(y, wasm_v128_load(bias + o0));
    return y;
}

/* Token t's 8 sums of a tile (v[2t]: rows 0-3, v[2t + 1]: rows 4-7) -> y row yr, rows
 * o0 .. o0 + rows - 1. (Also the relaxed-SIMD tier's, whose tile gives the same pairs.) */
static inline void pk_dequant_token_wasm_simd128(const pk_tile_sums_wasm_simd128 *sums, int t, int rows, float xs,
                                                 const float *ws, const float *bias, int o0, float *yr) {
    const v128_t *acc = sums->v + 2 * t;
    if (rows == 8) {
        wasm_v128_store(yr + o0, pk_dequant4_wasm_simd128(acc[0], xs, ws, bias, o0));
        wasm_v128_store(yr + o0 + 4, pk_dequant4_wasm_simd128(acc[1], xs, ws, bias, o0 + 4));
    } else {
        int32_t lanes[8];
        wasm_v128_store(lanes, acc[0]);
        wasm_v128_store(lanes + 4, acc[1]);
        for (int r = 0; r < rows; r++) yr[o0 + r] = pk_dequant(lanes[r], xs, ws[o0 + r], bias, o0 + r);
    }
}

#endif
