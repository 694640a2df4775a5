/* The subsampling head in every tier: for each channel c, conv0 (3x3, stride 2, padding 1, one
 * input channel) + ReLU, then the depthwise conv2 (the same shape) - bit for bit what
 * ops__scalar.c's pk_subsampling_head computes (pk_conv2d_s2 + pk_relu + pk_conv2d_s2):
 *
 *   y[i][j] = (sum over a = 0..2, e = 0..2 ascending, skipping taps outside the map, of
 *              w[a][e] * x[2i + a - 1][2j + e - 1], from acc = 0, float32) + b
 *   relu(v) = v > 0 ? v : +0
 *
 * Why a tier of its own: on the default model the head was the largest single cost of a
 * transcription (12 of 55 ms for 6.5 s natively), its scalar loops test the padding on every
 * tap. The SIMD tiers put 8 (AVX2) or 4 (SIMD128) neighbouring output columns in lanes for the
 * columns whose taps are all inside the map, loading two input rows' even and odd samples
 * (stride 2) with shuffles; every lane adds the same terms in the same order as the scalar
 * loop, with separate multiply and add (no fused multiply-add). Edge columns, and the rows'
 * padding, run the scalar steps. ReLU is a compare-and-mask: +0 for -0 and NaN, as scalar.
 *
 * T, F: input frames and mel bins (x [T][F]); C channels; w0, w2 [C][3][3]; b0, b2 [C];
 * scratch: ceil(T/2) * ceil(F/2) floats; y [C][ceil(ceil(T/2)/2)][ceil(ceil(F/2)/2)].
 */
#ifndef PK_SUBSAMPLING_H
#define PK_SUBSAMPLING_H

#include "common.h"
#include "one_call.h"          /* pk_linear, for the one-call stack below */

#define PK_SUBSAMPLING_HEAD_ARGS                                                            \
    int T, int F, int C, const float *x, const float *w0, const float *b0, const float *w2, \
        const float *b2, float *scratch, float *y

/* acc plus one input channel's taps for output (i, j) of a 3x3 stride-2 padding-1 conv, in
 * the written order (rows, then columns; taps outside the map skipped): the scalar steps every
 * conv of the subsampling shares (ops__scalar.c pk_conv2d_s2 sums them over input channels). */
static inline float pk_conv_s2_taps(float acc, int H, int W, const float *x, const float *w, int i, int j) {
    for (int a = 0; a < 3; a++) {
        int r = 2 * i + a - 1;
        if (r < 0 || r >= H) continue;
        for (int e = 0; e < 3; e++) {
            int col = 2 * j + e - 1;
            if (col < 0 || col >= W) continue;
            acc = acc + w[a * 3 + e] * x[(size_t)r * W + col];
        }
    }
    return acc;
}

/* Channel blocks of the channel-last convs (ops__scalar.c pk_dwconv2d_s2_cl, head_impl.h). */
#define PK_CHANNEL_BLOCK 64

/* One output pixel (column j) of a 3x3 stride-2 padding-1 depthwise conv on channel-last maps,
 * cb <= PK_CHANNEL_BLOCK channels in lanes: out[c] = (the taps in pk_conv_s2_taps' order, those
 * outside the map skipped) + b[c]. rows[a] is input row 2i + a - 1 at column 0 of the block
 * (NULL outside the map), columns col_stride floats apart, W columns; taps [9][block];
 * relu: the inputs are read through pk_relu's formula. */
static inline void pk_dw_s2_pixel_cl(int cb, const float *const rows[3], size_t col_stride, int W, int j,
                                     const float *taps, int relu, const float *b, float *out) {
    float acc[PK_CHANNEL_BLOCK];
    for (int c = 0; c < cb; c++) acc[c] = 0.0f;
    for (int a = 0; a < 3; a++) {
        if (!rows[a]) continue;
        for (int e = 0; e < 3; e++) {
            int col = 2 * j + e - 1;
            if (col < 0 || col >= W) continue;
            const float *xs = rows[a] + (size_t)col * col_stride, *wt = taps + (a * 3 + e) * PK_CHANNEL_BLOCK;
            if (relu)
                for (int c = 0; c < cb; c++) acc[c] = acc[c] + wt[c] * (xs[c] > 0.0f ? xs[c] : 0.0f);
            else
                for (int c = 0; c < cb; c++) acc[c] = acc[c] + wt[c] * xs[c];
        }
    }
    for (int c = 0; c < cb; c++) out[c] = acc[c] + b[c];
}

/* One output element of a one-channel 3x3 stride-2 padding-1 conv: the scalar steps. */
static inline float pk_conv1_s2_at(int H, int W, const float *x, const float *w, float b, int i, int j) {
    return pk_conv_s2_taps(0.0f, H, W, x, w, i, j) + b;
}

static inline float pk_relu_one(float v) { return v > 0.0f ? v : 0.0f; }

/* Output columns [j0, j1) of row i by the scalar steps: the SIMD tiers' edges and tails. */
static inline void pk_conv1_s2_cols(int H, int W, const float *x, const float *w, float b, int relu,
                                    int i, int j0, int j1, float *row) {
    for (int j = j0; j < j1; j++) {
        float v = pk_conv1_s2_at(H, W, x, w, b, i, j);
        row[j] = relu ? pk_relu_one(v) : v;
    }
}

/* A tier's one-channel conv: y [ceil(H/2)][ceil(W/2)] = conv(x [H][W]) (+ relu). */
typedef void (*pk_conv1_s2_fn)(int H, int W, const float *x, const float *w, float b, int relu, float *y);

/* The head over all channels with a tier's one-channel conv (every tier's driver). */
static inline int pk_subsampling_head_with(pk_conv1_s2_fn conv, PK_SUBSAMPLING_HEAD_ARGS) {
    if (T <= 0 || F <= 0 || C <= 0) return PK_E_SHAPE;
    int H1 = (T + 1) / 2, W1 = (F + 1) / 2, H2 = (H1 + 1) / 2, W2 = (W1 + 1) / 2;
    for (int c = 0; c < C; c++) {
        conv(T, F, x, w0 + (size_t)c * 9, b0[c], 1, scratch);
        conv(H1, W1, scratch, w2 + (size_t)c * 9, b2[c], 0, y + (size_t)c * H2 * W2);
    }
    return PK_OK;
}

/* The head channel-last, channels c0..c1-1 (ops.h pk_subsampling_head_cl; head_impl.h compiled
 * with each tier's flags in one_call__<tier>.c): lanes over channels, the same bits. */
#define PK_SUBSAMPLING_HEAD_CL_ARGS                                                         \
    int T, int F, int C, int c0, int c1, const float *x, const float *w0, const float *b0,  \
        const float *w2, const float *b2, float *scratch, float *y
PK_API int subsampling_head_cl__scalar(PK_SUBSAMPLING_HEAD_CL_ARGS);
PK_API int subsampling_head_cl__avx2(PK_SUBSAMPLING_HEAD_CL_ARGS);
PK_API int subsampling_head_cl__avx512vnni(PK_SUBSAMPLING_HEAD_CL_ARGS);
PK_API int subsampling_head_cl__wasm_simd128(PK_SUBSAMPLING_HEAD_CL_ARGS);
PK_API int subsampling_head_cl__wasm_relaxed_simd(PK_SUBSAMPLING_HEAD_CL_ARGS);

PK_API int subsampling_head__scalar(PK_SUBSAMPLING_HEAD_ARGS);
PK_API int subsampling_head__avx2(PK_SUBSAMPLING_HEAD_ARGS);
PK_API int subsampling_head__avx512vnni(PK_SUBSAMPLING_HEAD_ARGS);
PK_API int subsampling_head__wasm_simd128(PK_SUBSAMPLING_HEAD_ARGS);
PK_API int subsampling_head__wasm_relaxed_simd(PK_SUBSAMPLING_HEAD_ARGS);

/* The whole subsampling stack on one slice of time in one call (fewer crossings),
 * the calls engine/parakeet_tdt/encoder.py's Subsampling._frames makes one by one, in its order:
 *   head = pk_subsampling_head_cl(x)                        [H2][W2][C]
 *   a = pw3(head)                                           [H2 W2][C]  (relu: as the conv reads it)
 *   b = pk_dwconv2d_s2_cl(relu(a); w5, b5)                  [H3][W3][C]
 *   c = pw6(b); flat = pk_transpose_last2(relu(c))          [H3][C W3]
 *   y = linear(flat)                                        [H3][D]
 * x [T][F] (time, mel bins); the linears quantise per token, as every linear. The tiers build it
 * from one_call_impl.h. Returns 0, 1 + row for a non-finite linear input, or PK_E_*. */

typedef struct {
    int32_t C, F, D;                                   /* channels, mel bins in, d_model out */
    const float *w0, *b0, *w2, *b2, *w5, *b5;          /* the convs: [C][3][3], [C] */
    pk_linear pw3, pw6, linear;                        /* C x C, C x C, D x (C * ceil(F / 8)) */
} pk_subsampling;

PK_API size_t pk_subsampling_scratch_bytes(int T, int F, int C, int D);

/* Where the stack's buffers sit in its scratch (NULL scratch: only the size). */
typedef struct {
    float *head, *a, *b, *c, *flat, *ring;
    pk_linear_buffers lin;
} pk_subsampling_buffers;
size_t pk_subsampling_carve(int T, int F, int C, int D, void *scratch, pk_subsampling_buffers *b);
int pk_subsampling_check(const pk_subsampling *S, int T);

#define PK_SUBSAMPLING_FRAMES_ARGS                                                          \
    const pk_subsampling *S, int T, const float *x, float *y, void *scratch, size_t scratch_bytes
PK_API int subsampling_frames__scalar(PK_SUBSAMPLING_FRAMES_ARGS);
PK_API int subsampling_frames__avx2(PK_SUBSAMPLING_FRAMES_ARGS);
PK_API int subsampling_frames__avx512vnni(PK_SUBSAMPLING_FRAMES_ARGS);
PK_API int subsampling_frames__wasm_simd128(PK_SUBSAMPLING_FRAMES_ARGS);
PK_API int subsampling_frames__wasm_relaxed_simd(PK_SUBSAMPLING_FRAMES_ARGS);

#endif
