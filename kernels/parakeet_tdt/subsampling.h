/* The subsampling: its head (conv0 + ReLU, then the depthwise conv2) channel-last per tier, and
 * the whole stack in one call. The convolutions follow conv_blocks.h's rule (block-quantised rows,
 * exact integer sums, one rounding per output), so every tier gives the same bits however it
 * orders the sums.
 */
#ifndef PK_SUBSAMPLING_H
#define PK_SUBSAMPLING_H

#include "common.h"
#include "conv_blocks.h"
#include "linear_call.h"          /* pk_linear, for the one-call stack below */

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

/* The depthwise conv channel-last (ops.h pk_dwconv2d_s2_cl), compiled likewise per tier. */
#define PK_DWCONV2D_S2_CL_ARGS                                                              \
    int H, int W, int C, int c0, int c1, int relu_input, const float *x, const float *w,    \
        const float *b, void *scratch, float *y
PK_API int dwconv2d_s2_cl__scalar(PK_DWCONV2D_S2_CL_ARGS);
PK_API int dwconv2d_s2_cl__avx2(PK_DWCONV2D_S2_CL_ARGS);
PK_API int dwconv2d_s2_cl__avx512vnni(PK_DWCONV2D_S2_CL_ARGS);
PK_API int dwconv2d_s2_cl__wasm_simd128(PK_DWCONV2D_S2_CL_ARGS);
PK_API int dwconv2d_s2_cl__wasm_relaxed_simd(PK_DWCONV2D_S2_CL_ARGS);


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
