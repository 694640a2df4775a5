/* The fv5 GEMM's driver (contract in fv5_gemm.h), written once for the tiers that decode each
 * 8-row block straight into dot-order staging and run a tile over it (avx2, wasm_simd128):
 * each fv5_gemm__<tier>.c includes its fv5_decode__<tier>.h and gemm_tile__<tier>.h, defines
 * PK_TIER, then includes this file. Helpers are named pk_<name>_<tier> (int8_gemm_impl.h). */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including fv5_gemm_impl.h"
#endif

#define PK_FV5_PASTE(a, b, sep) a##sep##b
#define PK_FV5_EXPAND(a, b, sep) PK_FV5_PASTE(a, b, sep)

int PK_FV5_EXPAND(fv5_gemm, PK_TIER, __)(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    PK_FV5_EXPAND(pk_carve_scratch, PK_TIER, _)(scratch, K, &panel, &stage, &x16);
    PK_FV5_EXPAND(pk_widen_activations, PK_TIER, _)(N, K, xq, x16);
    size_t block_bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++) {
        PK_FV5_EXPAND(pk_fv5_decode, PK_TIER, _)(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        PK_FV5_EXPAND(pk_block_gemm, PK_TIER, _)(N, O, K, 8 * b, 8, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}
