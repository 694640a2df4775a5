/* Per-token activation quantisation, WebAssembly SIMD128 tier (contract in quantize_act.h).
 * amax over |x| bit patterns with u32 max; f32x4.nearest rounds half to even like
 * nearbyintf; the tail (K % 16) runs the scalar steps, which are the same float operations. */
#include <wasm_simd128.h>
#include "quantize_act.h"

int quantize_act__wasm_simd128(int N, int K, const float *x, int8_t *xq, float *xs) {
    if (N <= 0 || K <= 0 || N > PK_MAX_DIM || K > PK_MAX_DIM) return PK_E_SHAPE;
    const v128_t abs_mask = wasm_i32x4_splat(0x7fffffff);
    int K4 = K & ~3, K16 = K & ~15;
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * K;
        int8_t *out = xq + (size_t)n * K;
        v128_t m4 = wasm_i32x4_splat(0);
        for (int k = 0; k < K4; k += 4)
            m4 = wasm_u32x4_max(m4, wasm_v128_and(wasm_v128_load(row + k), abs_mask));
        uint32_t amax_bits = 0;
        uint32_t lanes[4];
        wasm_v128_store(lanes, m4);
        for (int i = 0; i < 4; i++)
            if (lanes[i] > amax_bits) amax_bits = lanes[i];
        for (int k = K4; k < K; k++) {
            uint32_t b = pk_abs_bits(row[k]);
            if (b > amax_bits) amax_bits = b;
        }
        if (amax_bits >= PK_FLOAT_INF_BITS) return n + 1;
        float inv;
        if (!pk_quant_scale(amax_bits, K, out, &inv, &xs[n])) continue;
        const v128_t vinv = wasm_f32x4_splat(inv);
        const v128_t lim = wasm_f32x4_splat(127.0f), nlim = wasm_f32x4_splat(-127.0f);
        int k = 0;
        for (; k < K16; k += 16) {
            v128_t i32[4];
            for (int c = 0; c < 4; c++) {
                v128_t q = wasm_f32x4_nearest(wasm_f32x4_mul(wasm_v128_load(row + k + 4 * c), vinv));
                q = wasm_f32x4_pmin(wasm_f32x4_pmax(q, nlim), lim);
                i32[c] = wasm_i32x4_trunc_sat_f32x4(q);
            }
            v128_t i16a = wasm_i16x8_narrow_i32x4(i32[0], i32[1]);
            v128_t i16b = wasm_i16x8_narrow_i32x4(i32[2], i32[3]);
            wasm_v128_store(out + k, wasm_i8x16_narrow_i16x8(i16a, i16b));
        }
        for (; k < K; k++) out[k] = pk_quant_value(row[k], inv);
    }
    return PK_OK;
}
