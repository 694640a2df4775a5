/* fv5 GEMM, AVX2 tier (contract in fv5_gemm.h, tile in gemm_tile__avx2.h): per 8-row block,
 * decode straight into the dot-order staging (fv5_decode__avx2.h), then the tile. */
#include "fv5_decode__avx2.h"
#include "fv5_gemm.h"
#include "gemm_tile__avx2.h"

int fv5_gemm__avx2(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int16_t *x16;
    pk_carve_scratch_avx2(scratch, K, &panel, &stage, &x16);
    pk_widen_activations_avx2(N, K, xq, x16);
    size_t block_bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++) {
        pk_fv5_decode_avx2(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        pk_block_gemm_avx2(N, O, K, 8 * b, 8, stage, x16, xs, ws, bias, y);
    }
    return PK_OK;
}
