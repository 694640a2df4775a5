/* Per-token activation quantisation, scalar reference tier (contract in quantize_act.h). */
#include <math.h>
#include <string.h>
#include "quantize_act.h"

static uint32_t abs_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x7fffffffu;
}

int quantize_act__scalar(int N, int K, const float *x, int8_t *xq, float *xs) {
    if (N <= 0 || K <= 0 || N > PK_MAX_DIM || K > PK_MAX_DIM) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * K;
        int8_t *out = xq + (size_t)n * K;
        uint32_t amax_bits = 0;
        for (int k = 0; k < K; k++) {
            uint32_t b = abs_bits(row[k]);
            if (b > amax_bits) amax_bits = b;
        }
        if (amax_bits >= PK_FLOAT_INF_BITS) return n + 1;
        if (amax_bits < PK_QUANT_TINY_BITS) {
            memset(out, 0, (size_t)K);
            xs[n] = 0.0f;
            continue;
        }
        float amax;
        memcpy(&amax, &amax_bits, sizeof amax);
        float inv = 127.0f / amax;
        for (int k = 0; k < K; k++) {
            float q = nearbyintf(row[k] * inv);
            if (q > 127.0f) q = 127.0f;
            if (q < -127.0f) q = -127.0f;
            out[k] = (int8_t)q;
        }
        xs[n] = amax / 127.0f;
    }
    return PK_OK;
}
