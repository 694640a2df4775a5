/* Plain int8 GEMM, scalar reference tier (contract in int8_gemm.h). */
#include "int8_gemm.h"

int int8_gemm__scalar(PK_INT8_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    (void)scratch;
    for (int n = 0; n < N; n++) {
        const int8_t *x = xq + (size_t)n * K;
        for (int o = 0; o < O; o++) {
            const int8_t *wr = w + (size_t)o * K;
            int32_t acc = 0;
            for (int k = 0; k < K; k++) acc += (int32_t)wr[k] * (int32_t)x[k];
            y[(size_t)n * O + o] = pk_dequant(acc, xs[n], ws[o], bias, o);
        }
    }
    return PK_OK;
}
