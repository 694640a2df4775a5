/* Per-token activation quantisation, scalar reference tier (contract in quantize_act.h). */
#include "quantize_act.h"

int quantize_act__scalar(int N, int K, const float *x, int8_t *xq, float *xs) {
    if (N <= 0 || K <= 0 || N > PK_MAX_DIM || K > PK_MAX_DIM) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * K;
        int8_t *out = xq + (size_t)n * K;
        uint32_t amax_bits = 0;
        for (int k = 0; k < K; k++) {
            uint32_t b = pk_abs_bits(row[k]);
            if (b > amax_bits) amax_bits = b;
        }
        if (amax_bits >= PK_FLOAT_INF_BITS) return n + 1;
        float inv;
        if (!pk_quant_scale(amax_bits, K, out, &inv, &xs[n])) continue;
        for (int k = 0; k < K; k++) out[k] = pk_quant_value(row[k], inv);
    }
    return PK_OK;
}
