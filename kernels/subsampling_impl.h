/* The subsampling head (contract in subsampling.h), written once for the SIMD tiers on their
 * float32 lanes (f32_lanes__<tier>.h): each subsampling__<tier>.c includes its lanes header,
 * defines PK_TIER, then includes this file. Neighbouring output columns in lanes, every lane
 * adding the same terms in the same order as the scalar loop. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including subsampling_impl.h"
#endif

#include "subsampling.h"

#define PK_V PK_TIER_HELPER(f32v)
#define PK_IV PK_TIER_HELPER(i32v)
#define PK_LANES PK_TIER_HELPER(f32_lanes)

/* y [Ho][Wo] = conv(x [H][W]) (+ relu): one channel, 3x3, stride 2, padding 1. */
static void PK_TIER_HELPER(conv1_s2)(int H, int W, const float *x, const float *w, float b, int relu, float *y) {
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2;
    PK_V vw[9];                                       /* the weights in every lane, kept in registers */
    for (int t = 0; t < 9; t++)
        for (int l = 0; l < PK_LANES; l++) vw[t][l] = w[t];
    for (int i = 0; i < Ho; i++) {
        float *row = y + (size_t)i * Wo;
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, 0, 1, row);
        int j = 1;
        /* vector blocks start at j >= 1 (no left padding) and keep every load inside the row
         * (the last one reads x[2j + 2 * lanes]); column 0 and the rest run the scalar steps */
        for (; j + PK_LANES <= Wo && 2 * j + 2 * PK_LANES <= W - 1; j += PK_LANES) {
            PK_V acc = {0};
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                if (r < 0 || r >= H) continue;
                PK_V t[3];                            /* x[2j-1+2k], x[2j+2k], x[2j+1+2k] */
                PK_TIER_HELPER(f32_s2_taps)(x + (size_t)r * W + 2 * j - 1, t);
                for (int e = 0; e < 3; e++) acc = acc + vw[a * 3 + e] * t[e];
            }
            PK_V v = acc + b;
            if (relu) v = (PK_V)((PK_IV)v & (v > (PK_V){0}));      /* v > 0 ? v : +0 */
            PK_TIER_HELPER(f32_store)(row + j, v);
        }
        pk_conv1_s2_cols(H, W, x, w, b, relu, i, j, Wo, row);
    }
}

int PK_TIER_FN(subsampling_head)(PK_SUBSAMPLING_HEAD_ARGS) {
    return pk_subsampling_head_with(PK_TIER_HELPER(conv1_s2), T, F, C, x, w0, b0, w2, b2, scratch, y);
}

#undef PK_V
#undef PK_IV
#undef PK_LANES
