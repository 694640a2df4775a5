/* The subsampling head, WebAssembly SIMD128 tier (contract in subsampling.h): 4 output columns
 * in lanes. */
#include <wasm_simd128.h>
#include "subsampling.h"

/* y [Ho][Wo] = conv(x [H][W]) (+ relu): one channel, 3x3, stride 2, padding 1. */
static void conv1_s2(int H, int W, const float *x, const float *w, float b, int relu, float *y) {
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2;
    const v128_t vb = wasm_f32x4_splat(b), zero = wasm_f32x4_splat(0.0f);
    v128_t vw[9];
    for (int t = 0; t < 9; t++) vw[t] = wasm_f32x4_splat(w[t]);
    for (int i = 0; i < Ho; i++) {
        float *row = y + (size_t)i * Wo;
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, 0, 1, row);
        int j = 1;
        /* vector blocks start at j >= 1 (no left padding) and keep every load inside the row
         * (the last one reads x[2j + 8]); column 0 and the rest run the scalar steps */
        for (; j + 4 <= Wo && 2 * j + 8 <= W - 1; j += 4) {
            v128_t acc = zero;
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                if (r < 0 || r >= H) continue;
                const float *xr = x + (size_t)r * W + 2 * j - 1;
                v128_t lo = wasm_v128_load(xr), hi = wasm_v128_load(xr + 4), far = wasm_v128_load(xr + 6);
                v128_t t0 = wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6);          /* x[2j-1+2k] */
                v128_t t1 = wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7);          /* x[2j+2k] */
                v128_t t2 = wasm_i32x4_shuffle(wasm_i32x4_shuffle(lo, hi, 2, 4, 6, 6), far, 0, 1, 2, 6);
                                                                              /* x[2j+1+2k]: xr[2], xr[4], xr[6], xr[8] */
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(vw[a * 3 + 0], t0));
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(vw[a * 3 + 1], t1));
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(vw[a * 3 + 2], t2));
            }
            v128_t v = wasm_f32x4_add(acc, vb);
            if (relu) v = wasm_v128_and(v, wasm_f32x4_gt(v, zero));
            wasm_v128_store(row + j, v);
        }
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, j, Wo, row);
    }
}

int subsampling_head__wasm_simd128(PK_SUBSAMPLING_HEAD_ARGS) {
    return pk_subsampling_head_with(conv1_s2, T, F, C, x, w0, b0, w2, b2, scratch, y);
}
