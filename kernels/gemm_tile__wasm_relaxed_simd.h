/* The WebAssembly relaxed-SIMD GEMM tile (internal header; compiled by a clang new enough for
 * -mrelaxed-simd, see build.py). `i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, c)` adds to each
 * i32 lane the dot product of 4 adjacent int8 pairs; it is deterministic (the same on every
 * engine, pmaddubsw/vpdpbusd underneath) only when every lane of b is in [0, 127].
 *
 * So the staging stores weights offset by +64: every five-value grid entry is in [-63, 63]
 * (fv5_grid.h), so w + 64 is in [1, 127]. Activations stay signed (|xq| <= 127), and
 *     sum_k xq * (w + 64) = sum_k xq * w + 64 * sum_k xq
 * is exact in int32 (pair sums <= 2*127*127 < 2^15, no saturation), so subtracting
 * 64 * sum_k xq per token gives the exact integer dot product: the same bits as every tier.
 *
 * Staging of an 8-row block (8*K bytes): per k quad h (0 <= h < K/4) two vectors, rows 0-3
 * then rows 4-7; lane 4r + i = W[row r][4h + i] + 64.
 */
#ifndef PK_GEMM_TILE_WASM_RELAXED_SIMD_H
#define PK_GEMM_TILE_WASM_RELAXED_SIMD_H

#include <wasm_simd128.h>
#include "gemm_common.h"
#include "gemm_tile__wasm_simd128.h"      /* its tile sums and their dequantisation */

/* A tile's sums as SIMD128's (4 tokens, a pair of vectors each), dequantised as SIMD128's. */
enum { pk_tile_tokens_wasm_relaxed_simd = pk_tile_tokens_wasm_simd128 };
typedef pk_tile_sums_wasm_simd128 pk_tile_sums_wasm_relaxed_simd;
#define pk_dequant_token_wasm_relaxed_simd pk_dequant_token_wasm_simd128

static inline v128_t pk_dot_wasm_relaxed_simd(v128_t x, v128_t w7, v128_t acc) {
    return (v128_t)__builtin_wasm_relaxed_dot_i8x16_i7x16_add_s_i32x4((__i8x16)x, (__i8x16)w7, (__i32x4)acc);
}

/* Four panel vectors of one k-block (rows 0-1, 2-3, 4-5, 6-7 by 8 k) -> relaxed staging. */
static inline void pk_stage_kb_wasm_relaxed_simd(v128_t P0, v128_t P1, v128_t P2, v128_t P3, int8_t *out) {
    const v128_t offset = wasm_i8x16_splat(64);
    /* as i32 lanes: P0 = r0 k0-3, r0 k4-7, r1 k0-3, r1 k4-7 */
    wasm_v128_store(out + 0, wasm_i8x16_add(wasm_i32x4_shuffle(P0, P1, 0, 2, 4, 6), offset));
    wasm_v128_store(out + 16, wasm_i8x16_add(wasm_i32x4_shuffle(P2, P3, 0, 2, 4, 6), offset));
    wasm_v128_store(out + 32, wasm_i8x16_add(wasm_i32x4_shuffle(P0, P1, 1, 3, 5, 7), offset));
    wasm_v128_store(out + 48, wasm_i8x16_add(wasm_i32x4_shuffle(P2, P3, 1, 3, 5, 7), offset));
}

/* The activations as the tile reads them: xq itself, and per token 64 * sum_k xq[n][k], what
 * the staging's + 64 adds to its sums. */
typedef int32_t pk_act_wasm_relaxed_simd;
static inline void pk_prepare_activations_wasm_relaxed_simd(int N, int K, const int8_t *xq, int32_t *corrections) {
    for (int n = 0; n < N; n++) {
        const int8_t *x = xq + (size_t)n * K;
        v128_t s = wasm_i32x4_splat(0);
        for (int k = 0; k < K; k += 8)
            s = wasm_i32x4_add(s, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_load8x8(x + k)));
        corrections[n] = 64 * (wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1) +
                               wasm_i32x4_extract_lane(s, 2) + wasm_i32x4_extract_lane(s, 3));
    }
}

/* The 8 rows' exact sums of tokens n .. n + tokens - 1 (the corrections taken off), read
 * from xq. */
static inline void pk_tile_wasm_relaxed_simd(int K, const int8_t *stage, const int8_t *xq, const int32_t *corrections,
                                             int n, int tokens, pk_tile_sums_wasm_relaxed_simd *sums) {
    const int8_t *x = xq + (size_t)n * K;
    v128_t *acc = sums->v;
    v128_t a[2 * pk_tile_tokens_wasm_relaxed_simd];
    for (int i = 0; i < 2 * pk_tile_tokens_wasm_relaxed_simd; i++) a[i] = wasm_i32x4_splat(0);
    if (tokens == pk_tile_tokens_wasm_relaxed_simd) {
        for (int h = 0; h < K / 4; h++) {
            v128_t wa = wasm_v128_load(stage + 32 * h), wb = wasm_v128_load(stage + 32 * h + 16);
            for (int t = 0; t < pk_tile_tokens_wasm_relaxed_simd; t++) {
                v128_t v = wasm_v128_load32_splat(x + (size_t)t * K + 4 * h);
                a[2 * t] = pk_dot_wasm_relaxed_simd(v, wa, a[2 * t]);
                a[2 * t + 1] = pk_dot_wasm_relaxed_simd(v, wb, a[2 * t + 1]);
            }
        }
    } else {
        for (int t = 0; t < tokens; t++)
            for (int h = 0; h < K / 4; h++) {
                v128_t v = wasm_v128_load32_splat(x + (size_t)t * K + 4 * h);
                a[2 * t] = pk_dot_wasm_relaxed_simd(v, wasm_v128_load(stage + 32 * h), a[2 * t]);
                a[2 * t + 1] = pk_dot_wasm_relaxed_simd(v, wasm_v128_load(stage + 32 * h + 16), a[2 * t + 1]);
            }
    }
    for (int t = 0; t < tokens; t++) {
        v128_t correction = wasm_i32x4_splat(corrections[n + t]);
        acc[2 * t] = wasm_i32x4_sub(a[2 * t], correction);
        acc[2 * t + 1] = wasm_i32x4_sub(a[2 * t + 1], correction);
    }
}

#endif
