/* Float operations of the graph (contract in ops.h). */
#include <math.h>
#include <string.h>
#include "activation.h"
#include "conv_blocks.h"
#include "norm.h"
#include "ops.h"
#include "pk_math.h"

int pk_f16_to_f32(int n, const uint16_t *h, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) {
        uint32_t sign = (uint32_t)(h[i] & 0x8000u) << 16, exp = (h[i] >> 10) & 0x1fu, man = h[i] & 0x3ffu;
        uint32_t bits;
        if (exp == 0x1fu) {
            bits = sign | 0x7f800000u | (man << 13);                  /* inf, NaN */
        } else if (exp != 0) {
            bits = sign | ((exp + 112u) << 23) | (man << 13);         /* normal: bias 15 -> 127 */
        } else if (man == 0) {
            bits = sign;                                              /* +-0 */
        } else {                                                      /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
        }
        y[i] = pk_bits_to_float(bits);
    }
    return PK_OK;
}

int pk_silu(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}

int pk_relu(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return PK_OK;
}

int pk_glu(int N, int C, const float *x, float *y) { return glu__scalar(N, C, x, y); }

int pk_glu_split(int N, int C, const float *a, const float *b, float *y) {
    if (N <= 0 || C <= 0) return PK_E_SHAPE;
    for (size_t i = 0; i < (size_t)N * C; i++) y[i] = a[i] * pk_sigmoidq(b[i]);
    return PK_OK;
}

int pk_add_scaled(int n, const float *x, float s, const float *d, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) y[i] = x[i] + s * d[i];
    return PK_OK;
}

int pk_dwconv1d(int T, int C, int K, const float *x, const float *w, const float *b, float *y) {
    if (T <= 0 || C <= 0 || K <= 0 || K % 2 == 0) return PK_E_SHAPE;
    /* Lanes = channels: blocks of CB channels with the block's taps transposed to [K][CB], so the
     * inner loop runs over independent channels (compilers vectorise it) while every output
     * still adds its taps j = 0, 1, ... in order, skipping those outside [0, T). */
    enum { CB = 64, MAX_TAPS = 64 };
    int half = K / 2;
    if (K > MAX_TAPS) {                                     /* the plain loop (same sums) */
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                float acc = 0.0f;
                for (int j = 0; j < K; j++) {
                    int s = t + j - half;
                    if (s >= 0 && s < T) acc = acc + w[(size_t)c * K + j] * x[(size_t)s * C + c];
                }
                y[(size_t)t * C + c] = acc + b[c];
            }
        return PK_OK;
    }
    float taps[MAX_TAPS * CB], acc[CB];
    for (int c0 = 0; c0 < C; c0 += CB) {
        int cb = C - c0 < CB ? C - c0 : CB;
        for (int j = 0; j < K; j++)
            for (int c = 0; c < cb; c++) taps[j * CB + c] = w[(size_t)(c0 + c) * K + j];
        for (int t = 0; t < T; t++) {
            for (int c = 0; c < cb; c++) acc[c] = 0.0f;
            for (int j = 0; j < K; j++) {
                int s = t + j - half;
                if (s < 0 || s >= T) continue;
                const float *xs = x + (size_t)s * C + c0, *wj = taps + j * CB;
                for (int c = 0; c < cb; c++) acc[c] = acc[c] + wj[c] * xs[c];
            }
            for (int c = 0; c < cb; c++) y[(size_t)t * C + c0 + c] = acc[c] + b[c0 + c];
        }
    }
    return PK_OK;
}

int pk_matmul_nt(int M, int N, int K, const float *a, const float *b, float s, float *c) {
    if (M <= 0 || N <= 0 || K <= 0) return PK_E_SHAPE;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float *ar = a + (size_t)m * K, *br = b + (size_t)n * K;
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc = acc + ar[k] * br[k];
            c[(size_t)m * N + n] = acc * s;
        }
    return PK_OK;
}

int pk_conv2d_s2(int Cin, int Cout, int H, int W, const float *x, const float *w, const float *b,
                 int groups, float *y) {
    /* conv_blocks.h's rule written out plainly, one output at a time (each row's unit found
     * again for every output that reads it): the reference the channel-last convs are tested
     * against. One input channel per group (conv0, and the depthwise conv2 and conv5). */
    if (Cin <= 0 || Cout <= 0 || H <= 0 || W <= 0 || groups != Cin || Cout % groups) return PK_E_SHAPE;
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2, cog = Cout / groups;
    for (int co = 0; co < Cout; co++) {
        const float *plane = x + (size_t)(co / cog) * H * W;
        float t[9];
        int32_t Ew = pk_conv_quantise(9, w + (size_t)co * 9, 1, 0, t, 1);
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                int32_t P[3] = {0, 0, 0}, E[3] = {0, 0, 0};
                int present = 0;
                for (int a = 0; a < 3; a++) {
                    int r = 2 * i + a - 1;
                    if (r < 0 || r >= H) continue;
                    const float *row = plane + (size_t)r * W;
                    present |= 1 << a;
                    E[a] = pk_conv_unit(W, row, 1, 0);
                    if (E[a] == PK_BLOCK_NONFINITE) continue;
                    for (int e = 0; e < 3; e++) {
                        int col = 2 * j + e - 1;
                        if (col >= 0 && col < W) P[a] += (int32_t)t[a * 3 + e] * pk_conv_mantissa(row[col], E[a], 0);
                    }
                }
                y[((size_t)co * Ho + i) * Wo + j] = pk_conv_join(P, E, present, Ew, b[co], 0);
            }
    }
    return PK_OK;
}

int pk_conv2d_s2_f32(int Cin, int Cout, int H, int W, const float *x, const float *w, const float *b,
                     int groups, float *y) {
    /* The float32 form, for the graph check's executor (engine/executors/cpu.py
     * FloatActivations): y = (sum over (ci, a, e) ascending, taps outside the map skipped, of
     * w * x from 0) + b, each step rounded (-ffp-contract=off). */
    if (Cin <= 0 || Cout <= 0 || H <= 0 || W <= 0 || groups <= 0 || Cin % groups || Cout % groups)
        return PK_E_SHAPE;
    int Ho = (H + 1) / 2, Wo = (W + 1) / 2, cig = Cin / groups, cog = Cout / groups;
    for (int co = 0; co < Cout; co++) {
        int g = co / cog;
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                float acc = 0.0f;
                for (int ci = 0; ci < cig; ci++) {
                    const float *plane = x + (size_t)(g * cig + ci) * H * W, *taps = w + ((size_t)co * cig + ci) * 9;
                    for (int a = 0; a < 3; a++) {
                        int r = 2 * i + a - 1;
                        if (r < 0 || r >= H) continue;
                        for (int e = 0; e < 3; e++) {
                            int col = 2 * j + e - 1;
                            if (col >= 0 && col < W) acc = acc + taps[a * 3 + e] * plane[(size_t)r * W + col];
                        }
                    }
                }
                y[((size_t)co * Ho + i) * Wo + j] = acc + b[co];
            }
    }
    return PK_OK;
}

size_t pk_dwconv2d_s2_cl_scratch_bytes(int W) {
    if (W <= 0 || W > PK_MAX_DIM) return 0;
    return (size_t)3 * PK_CHANNEL_BLOCK * (sizeof(int32_t) + (size_t)(W + 2) * sizeof(float));
}

size_t pk_subsampling_head_cl_scratch_floats(int F) {
    /* head_impl.h's rings: conv0's row [W1][CB] floats, units [3][CB] + [4] int32, mantissas
     * [3][W1 + 2][CB] + [3][F + 2] floats */
    size_t W1 = (size_t)(F + 1) / 2, CB = PK_CHANNEL_BLOCK;
    return W1 * CB + 3 * CB + 4 + 3 * (W1 + 2) * CB + 3 * ((size_t)F + 2);
}

int pk_transpose_last2(int N, int A, int B, int relu, const float *x, float *y) {
    if (N <= 0 || A <= 0 || B <= 0) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *src = x + (size_t)n * A * B;
        float *dst = y + (size_t)n * A * B;
        for (int a = 0; a < A; a++)
            for (int b = 0; b < B; b++) {
                float v = src[(size_t)a * B + b];
                dst[(size_t)b * A + a] = relu && !(v > 0.0f) ? 0.0f : v;       /* pk_relu's formula */
            }
    }
    return PK_OK;
}

int pk_transpose3(int A, int B, int C, const float *x, float *y) {
    if (A <= 0 || B <= 0 || C <= 0) return PK_E_SHAPE;
    /* In tiles of 32 x 32 (a, b) so that both the reads and the writes of a tile stay in cache:
     * a plain loop writes with a stride of A * C floats and misses on nearly every element for
     * the subsampling's [channels][positions] maps. Data movement only: any order gives the
     * same bits. */
    enum { TILE = 32 };
    for (int a0 = 0; a0 < A; a0 += TILE)
        for (int b0 = 0; b0 < B; b0 += TILE) {
            int a1 = a0 + TILE < A ? a0 + TILE : A, b1 = b0 + TILE < B ? b0 + TILE : B;
            for (int a = a0; a < a1; a++)
                for (int b = b0; b < b1; b++) {
                    const float *src = x + ((size_t)a * B + b) * C;
                    float *dst = y + ((size_t)b * A + a) * C;
                    for (int c = 0; c < C; c++) dst[c] = src[c];
                }
        }
    return PK_OK;
}

static double sum_squares(const float *x, int n) {
    double sum = 0.0;                                   /* in sample order, from 0.0 */
    for (int j = 0; j < n; j++) sum += (double)x[j] * (double)x[j];
    return sum;
}

int pk_block_power(int n, int B, const float *x, float *y) {
    if (n <= 0 || B <= 0) return PK_E_SHAPE;
    for (int i = 0, start = 0; start < n; i++, start += B) {
        int len = start + B < n ? B : n - start;
        y[i] = (float)(sum_squares(x + start, len) / (double)len);
    }
    return PK_OK;
}

int pk_block_sums(int n, int B, const float *x, double *y) {
    if (n <= 0 || B <= 0) return PK_E_SHAPE;
    for (int i = 0, start = 0; start < n; i++, start += B) {
        y[i] = sum_squares(x + start, start + B < n ? B : n - start);
    }
    return PK_OK;
}

int pk_copy_cols(int N, int W, const float *x, int O, int c0, float *y) {
    if (N <= 0 || W <= 0 || O <= 0 || c0 < 0 || c0 > O - W) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *src = x + (size_t)n * W;
        float *dst = y + (size_t)n * O + c0;
        for (int w = 0; w < W; w++) dst[w] = src[w];
    }
    return PK_OK;
}

int pk_take_cols(int N, int O, int c0, int W, const float *x, float *y) {
    if (N <= 0 || W <= 0 || O <= 0 || c0 < 0 || c0 > O - W) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *src = x + (size_t)n * O + c0;
        float *dst = y + (size_t)n * W;
        for (int w = 0; w < W; w++) dst[w] = src[w];
    }
    return PK_OK;
}

int pk_lstm_cell(int P, const float *gates, float *c, float *h) {
    if (P <= 0) return PK_E_SHAPE;
    for (int j = 0; j < P; j++) {
        float i = pk_sigmoidf(gates[j]), f = pk_sigmoidf(gates[P + j]);
        float g = pk_tanhf(gates[2 * P + j]), o = pk_sigmoidf(gates[3 * P + j]);
        c[j] = f * c[j] + i * g;
        h[j] = o * pk_tanhf(c[j]);
    }
    return PK_OK;
}

int pk_argmax(int n, const float *x) {
    if (n <= 0) return PK_E_SHAPE;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = i;
    return best;
}

int pk_rel_positions(int T, int D, float *pe) {
    if (T <= 0 || D <= 0 || D % 2) return PK_E_SHAPE;
    float c = (float)(-9.210340371976184 / (double)D);          /* -ln(10000) / D */
    for (int k = 0; k < 2 * T - 1; k++) {
        float p = (float)(T - 1 - k);
        for (int i = 0; i < D / 2; i++) {
            float w = pk_expf((float)(2 * i) * c);
            float a = p * w;
            pe[(size_t)k * D + 2 * i] = (float)pk_sin((double)a);
            pe[(size_t)k * D + 2 * i + 1] = (float)pk_cos((double)a);
        }
    }
    return PK_OK;
}

int pk_subsampling_head(int T, int F, int C, const float *x, const float *w0, const float *b0,
                        const float *w2, const float *b2, float *scratch, float *y) {
    if (T <= 0 || F <= 0 || C <= 0) return PK_E_SHAPE;
    int H1 = (T + 1) / 2, W1 = (F + 1) / 2, H2 = (H1 + 1) / 2, W2 = (W1 + 1) / 2;
    for (int c = 0; c < C; c++) {
        pk_conv2d_s2(1, 1, T, F, x, w0 + (size_t)c * 9, b0 + c, 1, scratch);
        pk_relu(H1 * W1, scratch, scratch);
        pk_conv2d_s2(1, 1, H1, W1, scratch, w2 + (size_t)c * 9, b2 + c, 1, y + (size_t)c * H2 * W2);
    }
    return PK_OK;
}
