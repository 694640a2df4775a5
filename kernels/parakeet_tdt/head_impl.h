/* The subsampling head on channel-last maps (contract in ops.h: pk_subsampling_head_cl) and the
 * depthwise conv after it (pk_dwconv2d_s2_cl), written once and compiled per tier in
 * one_call_impl.h as subsampling_head_cl__<tier> and dwconv2d_s2_cl__<tier>, with the tier's
 * compiler flags. Both convolutions follow conv_blocks.h's rule (integer sums: the tiers'
 * compilers may vectorise them as they like, the bits cannot change).
 *
 * Blocks of PK_CHANNEL_BLOCK channels, lanes = channels. conv0 has one input channel, so every
 * channel of an output pixel reads the same input row blocks (lane stride 0). conv0's output rows
 * are quantised per channel as they are made and kept three at a time (a ring: conv2's row i reads
 * conv0's rows 2i - 1 .. 2i + 1), as are the input rows conv0 reads: the head needs
 * pk_subsampling_head_cl_scratch_floats(F) of scratch, not conv0's whole map.
 *
 * The includer defines PK_HEAD(name), the (static) name of each function. */

#include <string.h>
#include "ops.h"
#include "subsampling.h"

/* Where the head's rings sit in its scratch (W1 = ceil(F / 2)). The mantissa rows have a zero
 * column on each side (the convs' padding: pk_conv_s2_row reads columns -1 .. W), zeroed here
 * once; the quantisation writes only the columns between. */
typedef struct {
    float *row;            /* [W1][CB] conv0's row being made, before quantisation */
    int32_t *units;        /* [3][CB] the ring's rows' units, per channel */
    int32_t *x_units;      /* [3] the input rows' units */
    float *mantissas;      /* [3][W1 + 2][CB], integers as floats */
    float *x_mantissas;    /* [3][F + 2] */
} PK_HEAD(rings);

static PK_HEAD(rings) PK_HEAD(carve)(int F, float *scratch) {
    enum { CB = PK_CHANNEL_BLOCK };
    size_t W1 = (size_t)(F + 1) / 2;
    PK_HEAD(rings) r;
    r.row = scratch;
    r.units = (int32_t *)(r.row + W1 * CB);
    r.x_units = r.units + 3 * CB;
    r.mantissas = (float *)(r.x_units + 4);
    r.x_mantissas = r.mantissas + 3 * (W1 + 2) * CB;
    for (int slot = 0; slot < 3; slot++) {
        float *m = r.mantissas + slot * (W1 + 2) * CB, *xm = r.x_mantissas + slot * (size_t)(F + 2);
        memset(m, 0, CB * sizeof *m);
        memset(m + (W1 + 1) * CB, 0, CB * sizeof *m);
        xm[0] = xm[F + 1] = 0;
    }
    return r;
}

static int PK_HEAD(channel_last)(int T, int F, int C, int c0, int c1, const float *x, const float *w0,
                                 const float *b0, const float *w2, const float *b2, float *scratch, float *y) {
    if (T <= 0 || F <= 0 || C <= 0 || c0 < 0 || c1 > C || c0 >= c1) return PK_E_SHAPE;
    enum { CB = PK_CHANNEL_BLOCK };
    int H1 = (T + 1) / 2, W1 = (F + 1) / 2, H2 = (H1 + 1) / 2, W2 = (W1 + 1) / 2;
    PK_HEAD(rings) ring = PK_HEAD(carve)(F, scratch);
    float t0[9 * CB], t2[9 * CB];
    int32_t E0[CB], E2[CB];
    for (int cb0 = c0; cb0 < c1; cb0 += CB) {
        int cb = c1 - cb0 < CB ? c1 - cb0 : CB;
        pk_conv_taps(cb, w0, cb0, t0, E0);
        pk_conv_taps(cb, w2, cb0, t2, E2);
        int x_have = -1, have = -1;                   /* input rows 0..x_have, conv0 rows 0..have made */
        for (int i = 0; i < H2; i++) {
            for (int r = have + 1; r <= 2 * i + 1 && r < H1; r++, have++) {
                for (int q = x_have + 1; q <= 2 * r + 1 && q < T; q++, x_have++)
                    ring.x_units[q % 3] = pk_conv_quantise(F, x + (size_t)q * F, 1, 0,
                                                           ring.x_mantissas + (size_t)(q % 3) * (F + 2) + 1, 1);
                const float *m[3];
                const int32_t *E[3];
                for (int a = 0; a < 3; a++) {
                    int q = 2 * r + a - 1;
                    int inside = q >= 0 && q < T;
                    m[a] = inside ? ring.x_mantissas + (size_t)(q % 3) * (F + 2) + 1 : NULL;
                    E[a] = inside ? ring.x_units + q % 3 : NULL;
                }
                pk_conv_s2_row(cb, m, E, 1, 0, W1, t0, E0, b0 + cb0, 1, ring.row, CB);
                pk_conv_quantise_lanes(W1, cb, ring.row, CB, 0, ring.mantissas + (size_t)(r % 3) * (W1 + 2) * CB + CB,
                                       ring.units + (r % 3) * CB);
            }
            const float *m[3];
            const int32_t *E[3];
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                int inside = r >= 0 && r < H1;
                m[a] = inside ? ring.mantissas + (size_t)(r % 3) * (W1 + 2) * CB + CB : NULL;
                E[a] = inside ? ring.units + (r % 3) * CB : NULL;
            }
            pk_conv_s2_row(cb, m, E, CB, 1, W2, t2, E2, b2 + cb0, 0, y + (size_t)i * W2 * C + cb0, C);
        }
    }
    return PK_OK;
}

/* The depthwise conv of channel-last maps (ops.h pk_dwconv2d_s2_cl: conv5, and conv2's rule on a
 * map already in memory), with the same row kernels and this includer's flags. */
static int PK_HEAD(dwconv)(int H, int W, int C, int c0, int c1, int relu_input, const float *x, const float *w,
                          const float *b, void *scratch, float *y) {
    if (H <= 0 || W <= 0 || C <= 0 || c0 < 0 || c1 > C || c0 >= c1) return PK_E_SHAPE;
    /* Blocks of CB channels in lanes; the input rows quantised per channel as the head's conv2
     * reads them (head_impl.h), three at a time in the scratch: units [3][CB], mantissas
     * [3][W + 2][CB] (integers as floats) with a zero column on each side (the padding). */
    enum { CB = PK_CHANNEL_BLOCK };
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2;
    size_t row = (size_t)(W + 2) * CB;
    int32_t *units = scratch, Ew[CB];
    float *mantissas = (float *)(units + 3 * CB), t[9 * CB];
    for (int slot = 0; slot < 3; slot++) {
        memset(mantissas + slot * row, 0, CB * sizeof *mantissas);
        memset(mantissas + slot * row + (size_t)(W + 1) * CB, 0, CB * sizeof *mantissas);
    }
    for (int cb0 = c0; cb0 < c1; cb0 += CB) {
        int cb = c1 - cb0 < CB ? c1 - cb0 : CB;
        pk_conv_taps(cb, w, cb0, t, Ew);
        int have = -1;                                    /* input rows 0..have quantised */
        for (int i = 0; i < Ho; i++) {
            for (int r = have + 1; r <= 2 * i + 1 && r < H; r++, have++)
                pk_conv_quantise_lanes(W, cb, x + (size_t)r * W * C + cb0, (size_t)C, relu_input,
                                       mantissas + (r % 3) * row + CB, units + (r % 3) * CB);
            const float *m[3];
            const int32_t *E[3];
            for (int a = 0; a < 3; a++) {
                int r = 2 * i + a - 1;
                int inside = r >= 0 && r < H;
                m[a] = inside ? mantissas + (r % 3) * row + CB : NULL;
                E[a] = inside ? units + (r % 3) * CB : NULL;
            }
            pk_conv_s2_row(cb, m, E, CB, 1, Wo, t, Ew, b + cb0, 0, y + (size_t)i * Wo * C + cb0, (size_t)C);
        }
    }
    return PK_OK;
}
