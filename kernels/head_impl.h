/* The subsampling head on channel-last maps (contract in ops.h: pk_subsampling_head_cl), written
 * once and compiled twice, as attention_impl.h: in ops__scalar.c as the exported
 * pk_subsampling_head_cl, and per tier in fused_impl.h as subsampling_head_cl__<tier>, with the
 * tier's compiler flags (its loops over channels are independent outputs: the compilers
 * vectorise them at the tier's width, no sum's order changes).
 *
 * The includer defines PK_HEAD(name), the (static) name of each function. */

#include "ops.h"
#include "subsampling.h"

/* Row r of conv0 + ReLU for channels cb0 .. cb0 + cb - 1, lanes = channels: out [W1][64]. */
static void PK_HEAD(conv0_row)(int T, int F, const float *x, const float *taps0, const float *b0, int cb, int r,
                           float *out) {
    enum { CB = PK_CHANNEL_BLOCK };
    int W1 = (F + 1) / 2;
    for (int j = 0; j < W1; j++) {
        float *acc = out + (size_t)j * CB;
        for (int c = 0; c < cb; c++) acc[c] = 0.0f;
        for (int a = 0; a < 3; a++) {
            int row = 2 * r + a - 1;
            if (row < 0 || row >= T) continue;
            for (int e = 0; e < 3; e++) {
                int col = 2 * j + e - 1;
                if (col < 0 || col >= F) continue;
                float v = x[(size_t)row * F + col];
                const float *wt = taps0 + (a * 3 + e) * CB;
                for (int c = 0; c < cb; c++) acc[c] = acc[c] + wt[c] * v;
            }
        }
        for (int c = 0; c < cb; c++) {
            float v = acc[c] + b0[c];
            acc[c] = v > 0.0f ? v : 0.0f;                     /* pk_relu's formula */
        }
    }
}

static int PK_HEAD(channel_last)(int T, int F, int C, int c0, int c1, const float *x, const float *w0,
                                 const float *b0, const float *w2, const float *b2, float *scratch, float *y) {
    if (T <= 0 || F <= 0 || C <= 0 || c0 < 0 || c1 > C || c0 >= c1) return PK_E_SHAPE;
    /* Lanes = channels, blocks of CB: conv0 has one input channel, so every channel of an
     * output pixel reads the same nine inputs - broadcast, no gathers - and each output still
     * adds its taps in pk_conv_s2_taps' order. conv0's rows are kept three at a time (a ring:
     * conv2's row i reads conv0's rows 2i - 1 .. 2i + 1), so the head needs 3 rows of scratch,
     * not conv0's whole map; the output is channel-last, as the pointwise convs take it. */
    enum { CB = PK_CHANNEL_BLOCK };
    int H1 = (T + 1) / 2, W1 = (F + 1) / 2, H2 = (H1 + 1) / 2, W2 = (W1 + 1) / 2;
    float taps0[9 * CB], taps2[9 * CB];
    for (int cb0 = c0; cb0 < c1; cb0 += CB) {
        int cb = c1 - cb0 < CB ? c1 - cb0 : CB;
        for (int t = 0; t < 9; t++)
            for (int c = 0; c < cb; c++) {
                taps0[t * CB + c] = w0[(size_t)(cb0 + c) * 9 + t];
                taps2[t * CB + c] = w2[(size_t)(cb0 + c) * 9 + t];
            }
        int have = -1;                                        /* conv0 rows 0..have are in the ring */
        for (int i = 0; i < H2; i++) {
            for (int r = have + 1; r <= 2 * i + 1 && r < H1; r++, have++)
                PK_HEAD(conv0_row)(T, F, x, taps0, b0 + cb0, cb, r, scratch + (size_t)(r % 3) * W1 * CB);
            const float *rows[3];
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                rows[a] = r >= 0 && r < H1 ? scratch + (size_t)(r % 3) * W1 * CB : NULL;
            }
            for (int j = 0; j < W2; j++)
                pk_dw_s2_pixel_cl(cb, rows, CB, W1, j, taps2, 0, b2 + cb0, y + ((size_t)i * W2 + j) * C + cb0);
        }
    }
    return PK_OK;
}
