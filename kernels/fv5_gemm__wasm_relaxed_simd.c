/* fv5 GEMM, WebAssembly relaxed-SIMD tier (contract in fv5_gemm.h, tile in
 * gemm_tile__wasm_relaxed_simd.h): per 8-row block, the SIMD128 decoder writes straight into
 * the relaxed staging (weights + 64 for i32x4.relaxed_dot_i8x16_i7x16_add_s); activations
 * are used as int8 directly. The other ops of this tier are the SIMD128 ones. */
#include "gemm_tile__wasm_relaxed_simd.h"
#define PK_DECODE_STAGE_KB pk_relaxed_stage_kb
#define PK_DECODE_STAGE_RANGE pk_relaxed_stage_from_panel
#include "fv5_decode__wasm_simd128.h"
#include "fv5_gemm.h"
#include "int8_gemm.h"
#include "quantize_act.h"

int fv5_gemm__wasm_relaxed_simd(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *base = (int8_t *)pk_align64(scratch);
    int8_t *panel = base, *stage = base + (size_t)8 * K;
    int32_t *xsum = (int32_t *)(base + (size_t)16 * K);      /* N int32 <= 2*N*K bytes */
    pk_token_sums(N, K, xq, xsum);
    size_t block_bytes = fv5_block_bytes(K);
    v128_t acc[2 * PK_RELAXED_TOKENS];
    for (int b = 0; b < O / 8; b++) {
        int o0 = 8 * b;
        pk_fv5_decode_wasm_simd128(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        for (int n = 0; n < N; n += PK_RELAXED_TOKENS) {
            int tokens = N - n < PK_RELAXED_TOKENS ? N - n : PK_RELAXED_TOKENS;
            pk_relaxed_tile(K, stage, xq + (size_t)n * K, xsum + n, tokens, acc);
            for (int t = 0; t < tokens; t++) {
                float *yr = y + (size_t)(n + t) * O;
                wasm_v128_store(yr + o0, pk_dequant4_wasm_simd128(acc[2 * t], xs[n + t], ws, bias, o0));
                wasm_v128_store(yr + o0 + 4, pk_dequant4_wasm_simd128(acc[2 * t + 1], xs[n + t], ws, bias, o0 + 4));
            }
        }
    }
    return PK_OK;
}

/* The rest of the tier: SIMD128 implementations (int8 tables may use all of [-128, 127],
 * which the +64 trick cannot hold). */
int int8_gemm__wasm_relaxed_simd(PK_INT8_GEMM_ARGS) {
    return int8_gemm__wasm_simd128(N, O, K, xq, xs, w, ws, bias, y, scratch, scratch_bytes);
}
int quantize_act__wasm_relaxed_simd(int N, int K, const float *x, int8_t *xq, float *xs) {
    return quantize_act__wasm_simd128(N, K, x, xq, xs);
}
int fv5_decode_block__wasm_relaxed_simd(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    return fv5_decode_block__wasm_simd128(K, stored, lut, panel);
}
PK_DEFINE_DECODE_BLOCKS(wasm_relaxed_simd)
