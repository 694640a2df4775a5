/* The fv5 GEMM's driver (contract in fv5_gemm.h), written once for the tiers that decode each
 * 8-row block straight into their staging and run a tile over it (avx2, wasm_simd128,
 * avx512vnni, wasm_relaxed_simd): each fv5_gemm__<tier>.c includes its gemm_tile__<tier>.h
 * (what gemm_block_impl.h lists), instantiates fv5_decode_impl.h for its tier
 * (pk_fv5_decode_<tier>), then includes this file with PK_TIER defined. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including fv5_gemm_impl.h"
#endif

#include "gemm_block_impl.h"

int PK_TIER_FN(fv5_gemm)(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    PK_TIER_HELPER(act) *act = PK_TIER_HELPER(prepare_scratch)(scratch, N, K, xq, &panel, &stage);
    size_t block_bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++) {
        PK_TIER_HELPER(fv5_decode)(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        PK_TIER_HELPER(block_gemm)(N, O, K, 8 * b, 8, stage, xq, act, xs, ws, bias, y);
    }
    return PK_OK;
}
