/* The subsampling head on channel-last maps (contract in ops.h: pk_subsampling_head_cl), written
 * once and compiled twice, as attention_impl.h: in ops__scalar.c as the exported
 * pk_subsampling_head_cl, and per tier in one_call_impl.h as subsampling_head_cl__<tier>, with the
 * tier's compiler flags.
 *
 * Lanes = channels. Interior pixels (all nine taps inside the map) are computed a vector of
 * PK_HEAD_LANES channels at a time with the nine taps' weights and the sums in vector locals -
 * registers - written with the compilers' vector extension (lane-wise IEEE operations: every
 * output still adds its taps in pk_conv_s2_taps' order, from 0, then the bias). Pixels on the
 * map's edges, which skip the taps outside it, and channels past the last whole vector take
 * the plain loops.
 *
 * The includer defines PK_HEAD(name), the (static) name of each function, and may define
 * PK_HEAD_LANES (4 or 8 floats; default 4). */

#include <string.h>
#include "ops.h"
#include "subsampling.h"

#ifndef PK_HEAD_LANES
#define PK_HEAD_LANES 4
#endif

typedef float PK_HEAD(vec) __attribute__((vector_size(4 * PK_HEAD_LANES)));
typedef int32_t PK_HEAD(ivec) __attribute__((vector_size(4 * PK_HEAD_LANES)));

static inline PK_HEAD(vec) PK_HEAD(load)(const float *p) {
    PK_HEAD(vec) v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void PK_HEAD(store)(float *p, PK_HEAD(vec) v) { memcpy(p, &v, sizeof v); }

/* pk_relu's formula lane-wise: v > 0 ? v : +0 (NaN and -0 give +0). */
static inline PK_HEAD(vec) PK_HEAD(relu)(PK_HEAD(vec) v) {
    PK_HEAD(ivec) keep = v > (PK_HEAD(vec)){0};
    return (PK_HEAD(vec))((PK_HEAD(ivec))v & keep);
}

/* conv0 + ReLU at output pixel (r, j) for channels c_from .. c_to - 1 of the block, skipping
 * taps outside the map (the plain loops: edges and the channels past the last whole vector);
 * acc: the pixel's [CB] channels. */
static void PK_HEAD(conv0_pixel)(int T, int F, const float *x, const float *taps0, const float *b0, int c_from,
                                 int c_to, int r, int j, float *acc) {
    enum { CB = PK_CHANNEL_BLOCK };
    for (int c = c_from; c < c_to; c++) acc[c] = 0.0f;
    for (int a = 0; a < 3; a++) {
        int row = 2 * r + a - 1;
        if (row < 0 || row >= T) continue;
        for (int e = 0; e < 3; e++) {
            int col = 2 * j + e - 1;
            if (col < 0 || col >= F) continue;
            float v = x[(size_t)row * F + col];
            const float *wt = taps0 + (a * 3 + e) * CB;
            for (int c = c_from; c < c_to; c++) acc[c] = acc[c] + wt[c] * v;
        }
    }
    for (int c = c_from; c < c_to; c++) {
        float v = acc[c] + b0[c];
        acc[c] = v > 0.0f ? v : 0.0f;                         /* pk_relu's formula */
    }
}

/* Row r of conv0 + ReLU for channels cb0 .. cb0 + cb - 1, lanes = channels: out [W1][CB]. */
static void PK_HEAD(conv0_row)(int T, int F, const float *x, const float *taps0, const float *b0, int cb, int r,
                               float *out) {
    enum { CB = PK_CHANNEL_BLOCK, L = PK_HEAD_LANES };
    int W1 = (F + 1) / 2;
    int interior = r >= 1 && 2 * r + 1 < T;                   /* all three input rows inside */
    int j_end = (F - 2) / 2 + 1;                              /* interior columns: 1 <= j < j_end */
    int vectors = interior ? cb / L : 0;
    if (vectors > 0 && j_end > 1) {
        const float *x0 = x + (size_t)(2 * r - 1) * F, *x1 = x0 + F, *x2 = x1 + F;
        for (int v = 0; v < vectors; v++) {
            PK_HEAD(vec) w[9], bias = PK_HEAD(load)(b0 + v * L);
            for (int t = 0; t < 9; t++) w[t] = PK_HEAD(load)(taps0 + t * CB + v * L);
            for (int j = 1; j < j_end; j++) {
                const float *p0 = x0 + 2 * j - 1, *p1 = x1 + 2 * j - 1, *p2 = x2 + 2 * j - 1;
                PK_HEAD(vec) acc = (PK_HEAD(vec)){0};
                acc = acc + w[0] * p0[0];
                acc = acc + w[1] * p0[1];
                acc = acc + w[2] * p0[2];
                acc = acc + w[3] * p1[0];
                acc = acc + w[4] * p1[1];
                acc = acc + w[5] * p1[2];
                acc = acc + w[6] * p2[0];
                acc = acc + w[7] * p2[1];
                acc = acc + w[8] * p2[2];
                PK_HEAD(store)(out + (size_t)j * CB + v * L, PK_HEAD(relu)(acc + bias));
            }
        }
    }
    int done = vectors * L;                                   /* channels the vectors wrote */
    for (int j = 0; j < W1; j++) {
        int inside = vectors > 0 && j >= 1 && j < j_end;
        if (!inside || done < cb) PK_HEAD(conv0_pixel)(T, F, x, taps0, b0, inside ? done : 0, cb, r, j, out + (size_t)j * CB);
    }
}

/* Output row i of the depthwise 3x3/2 conv (columns 0..W2-1) for cb channels of the block,
 * from the three ring rows (NULL outside the map), into y's row (channel-last, stride C). */
static void PK_HEAD(conv2_row)(int cb, const float *const rows[3], int W1, int W2, const float *taps2,
                               const float *b2, int C, float *y) {
    enum { CB = PK_CHANNEL_BLOCK, L = PK_HEAD_LANES };
    int interior = rows[0] && rows[1] && rows[2];
    int j_end = (W1 - 2) / 2 + 1;                             /* columns 2j+1 < W1 */
    int vectors = interior ? cb / L : 0;
    if (vectors > 0 && j_end > 1) {
        for (int v = 0; v < vectors; v++) {
            PK_HEAD(vec) w[9], bias = PK_HEAD(load)(b2 + v * L);
            for (int t = 0; t < 9; t++) w[t] = PK_HEAD(load)(taps2 + t * CB + v * L);
            const float *r0 = rows[0] + v * L, *r1 = rows[1] + v * L, *r2 = rows[2] + v * L;
            for (int j = 1; j < j_end; j++) {
                size_t c0 = (size_t)(2 * j - 1) * CB, c1 = c0 + CB, c2 = c1 + CB;
                PK_HEAD(vec) acc = (PK_HEAD(vec)){0};
                acc = acc + w[0] * PK_HEAD(load)(r0 + c0);
                acc = acc + w[1] * PK_HEAD(load)(r0 + c1);
                acc = acc + w[2] * PK_HEAD(load)(r0 + c2);
                acc = acc + w[3] * PK_HEAD(load)(r1 + c0);
                acc = acc + w[4] * PK_HEAD(load)(r1 + c1);
                acc = acc + w[5] * PK_HEAD(load)(r1 + c2);
                acc = acc + w[6] * PK_HEAD(load)(r2 + c0);
                acc = acc + w[7] * PK_HEAD(load)(r2 + c1);
                acc = acc + w[8] * PK_HEAD(load)(r2 + c2);
                PK_HEAD(store)(y + (size_t)j * C + v * L, acc + bias);
            }
        }
    }
    int done = vectors * L;
    for (int j = 0; j < W2; j++) {
        int inside = vectors > 0 && j >= 1 && j < j_end;
        if (inside && done == cb) continue;
        if (!inside) {
            pk_dw_s2_pixel_cl(cb, rows, CB, W1, j, taps2, 0, b2, y + (size_t)j * C);
            continue;
        }
        const float *tail[3] = {rows[0] + done, rows[1] + done, rows[2] + done};
        pk_dw_s2_pixel_cl(cb - done, tail, CB, W1, j, taps2 + done, 0, b2 + done, y + (size_t)j * C + done);
    }
}

static int PK_HEAD(channel_last)(int T, int F, int C, int c0, int c1, const float *x, const float *w0,
                                 const float *b0, const float *w2, const float *b2, float *scratch, float *y) {
    if (T <= 0 || F <= 0 || C <= 0 || c0 < 0 || c1 > C || c0 >= c1) return PK_E_SHAPE;
    /* Blocks of CB channels: conv0 has one input channel, so every channel of an output pixel
     * reads the same nine inputs - broadcast, no gathers. conv0's rows are kept three at a time
     * (a ring: conv2's row i reads conv0's rows 2i - 1 .. 2i + 1), so the head needs 3 rows of
     * scratch, not conv0's whole map; the output is channel-last, as the pointwise convs take it. */
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
            PK_HEAD(conv2_row)(cb, rows, W1, W2, taps2, b2 + cb0, C, y + (size_t)i * W2 * C + cb0);
        }
    }
    return PK_OK;
}
