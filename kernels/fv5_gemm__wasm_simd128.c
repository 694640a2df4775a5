/* fv5 GEMM, WebAssembly SIMD128 tier (contract in fv5_gemm.h, tile in
 * gemm_tile__wasm_simd128.h): per 8-row block, SIMD decode straight into dot-order staging,
 * then the 8-row x 4-token i32x4.dot_i16x8_s tile over all tokens. */
#include "fv5_decode__wasm_simd128.h"
#include "fv5_gemm.h"
#include "gemm_tile__wasm_simd128.h"

int fv5_gemm__wasm_simd128(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch(scratch, K, &panel, &stage, &x16);
    pk_widen_activations(N, K, xq, x16);
    size_t block_bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++) {
        pk_fv5_decode(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        pk_block_gemm(N, O, K, 8 * b, 8, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}
