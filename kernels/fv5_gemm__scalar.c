/* fv5 GEMM, scalar reference tier (contract in fv5_gemm.h): decode a block into the panel,
 * then plain dot products read straight from the panel layout. */
#include "fv5_decode.h"
#include "fv5_gemm.h"

size_t gemm_scratch_bytes(int N, int K) { return pk_gemm_scratch_bytes(N, K); }

int fv5_gemm__scalar(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel = (int8_t *)pk_align64(scratch);        /* [K/2][16] */
    size_t block_bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++) {
        fv5_decode_block__scalar(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel);
        for (int n = 0; n < N; n++) {
            const int8_t *x = xq + (size_t)n * K;
            for (int r = 0; r < 8; r++) {
                int32_t acc = 0;
                for (int kb = 0; kb < K / 8; kb++) {
                    /* panel vector 4*kb + r/2 holds rows r&~1 (lanes 0..7) and r|1 (8..15). */
                    const int8_t *wv = panel + (size_t)(4 * kb + r / 2) * 16 + (r & 1) * 8;
                    for (int i = 0; i < 8; i++) acc += (int32_t)wv[i] * (int32_t)x[8 * kb + i];
                }
                int o = 8 * b + r;
                y[(size_t)n * O + o] = pk_dequant(acc, xs[n], ws[o], bias, o);
            }
        }
    }
    return PK_OK;
}
