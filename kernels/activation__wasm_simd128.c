/* SiLU, GLU and the softmax's exponentials, WebAssembly SIMD128 tier (contract in activation.h):
 * pk_expf's main path on 4 lanes. */
#include <wasm_simd128.h>
#include "activation.h"

/* pk_expf(v) for lanes with |v| <= 87, step by step as pk_math.h writes it. */
static inline v128_t expf_main_path(v128_t v) {
    v128_t k = wasm_f32x4_nearest(wasm_f32x4_mul(v, wasm_f32x4_splat(1.44269502162933349609375f)));
    v128_t r = wasm_f32x4_sub(v, wasm_f32x4_mul(k, wasm_f32x4_splat(0.693145751953125f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, wasm_f32x4_splat(1.428606765330187045e-06f)));
    v128_t p = wasm_f32x4_splat(1.98412698e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.38888889e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.33333377e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.16666679e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.66666672e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(0.5f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.0f));
    v128_t bits = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(k), wasm_i32x4_splat(127)), 23);
    return wasm_f32x4_mul(p, bits);
}

int silu__wasm_simd128(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    const v128_t limit = wasm_f32x4_splat(PK_SILU_FAST_LIMIT), one = wasm_f32x4_splat(1.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        v128_t v = wasm_v128_load(x + i);
        if (!wasm_i32x4_all_true(wasm_f32x4_le(wasm_f32x4_abs(v), limit))) {      /* false for NaN */
            for (int j = i; j < i + 4; j++) y[j] = pk_silu_one(x[j]);
            continue;
        }
        v128_t e = expf_main_path(wasm_f32x4_neg(v));                                /* pk_expf(-x) */
        wasm_v128_store(y + i, wasm_f32x4_mul(v, wasm_f32x4_div(one, wasm_f32x4_add(one, e))));
    }
    for (; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}

void softmax_exp_row__wasm_simd128(int n, float *row, float mx) {
    const v128_t limit = wasm_f32x4_splat(PK_SILU_FAST_LIMIT), m = wasm_f32x4_splat(mx);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        v128_t v = wasm_f32x4_sub(wasm_v128_load(row + i), m);
        if (!wasm_i32x4_all_true(wasm_f32x4_le(wasm_f32x4_abs(v), limit))) {      /* false for NaN */
            for (int j = i; j < i + 4; j++) row[j] = pk_expf(row[j] - mx);
            continue;
        }
        wasm_v128_store(row + i, expf_main_path(v));
    }
    for (; i < n; i++) row[i] = pk_expf(row[i] - mx);
}

int glu__wasm_simd128(int N, int C, const float *x, float *y) {
    if (N <= 0 || C <= 0) return PK_E_SHAPE;
    const v128_t limit = wasm_f32x4_splat(PK_SILU_FAST_LIMIT), one = wasm_f32x4_splat(1.0f);
    for (int n = 0; n < N; n++) {
        const float *a = x + (size_t)n * 2 * C, *g = a + C;
        float *out = y + (size_t)n * C;
        int c = 0;
        for (; c + 4 <= C; c += 4) {
            v128_t v = wasm_v128_load(g + c);
            if (!wasm_i32x4_all_true(wasm_f32x4_le(wasm_f32x4_abs(v), limit))) {  /* false for NaN */
                for (int j = c; j < c + 4; j++) out[j] = a[j] * pk_sigmoidf(g[j]);
                continue;
            }
            v128_t e = expf_main_path(wasm_f32x4_neg(v));                            /* pk_expf(-v) */
            wasm_v128_store(out + c, wasm_f32x4_mul(wasm_v128_load(a + c), wasm_f32x4_div(one, wasm_f32x4_add(one, e))));
        }
        for (; c < C; c++) out[c] = a[c] * pk_sigmoidf(g[c]);
    }
    return PK_OK;
}
