/* Float operations of the Parakeet-TDT graph (docs/parakeet-tdt.md). One
 * implementation (ops__scalar.c) built into every module, float32 in the order written here
 * (sums: float64 where marked, else float32 in ascending index), -ffp-contract=off, the
 * project's own exp (pk_math.h). Layouts are row-major; "rows" are tokens (time frames).
 *
 * pk_f16_to_f32(n, h, y)            IEEE half -> float, exact (subnormals, inf, NaN kept)
 * pk_silu(n, x, y)                  y = x * sigmoid(x)
 * pk_relu(n, x, y)                  y = x > 0 ? x : 0
 * pk_glu(N, C, x, y)                x [N][2C] -> y [N][C] = x[:, :C] * sigmoid(x[:, C:])
 * pk_glu_split(N, C, a, b, y)       y [N][C] = a * sigmoid(b), a and b [N][C]: pk_glu with its two
 *                                   halves apart (a channel range of the conv module per worker)
 * pk_add_scaled(n, x, s, d, y)      y = x + s * d
 * pk_dwconv1d(T, C, K, x, w, b, y)  x, y [T][C], w [C][K] (K odd), b [C]:
 *                                   y[t][c] = (sum_j w[c][j] * x[t + j - K/2][c]) + b[c], zero pad
 * pk_matmul_nt(M, N, K, a, b, s, c) c [M][N] = (sum_k a[m][k] * b[n][k]) * s   (float32 sum)
 * pk_lstm_cell(P, gates, c, h)      gates [4P] = (i, f, g, o) pre-activations (PyTorch order);
 *                                   c = sigmoid(f) * c + sigmoid(i) * tanh(g); h = sigmoid(o) * tanh(c)
 *                                   (c and h updated in place)
 * pk_argmax(n, x)                   the first index of the largest value (NaN never wins)
 * pk_subsampling_head(T, F, C, x, w0, b0, w2, b2, scratch, y)   the first two subsampling
 *                                   convs per channel, channel-first: pk_conv2d_s2 (conv0),
 *                                   pk_relu, pk_conv2d_s2 (conv2): x [T][F] ->
 *                                   y [C][ceil(ceil(T/2)/2)][ceil(ceil(F/2)/2)]; scratch holds one
 *                                   channel of conv0's output (ceil(T/2) * ceil(F/2) floats). The
 *                                   plain reference; the engine runs pk_subsampling_head_cl
 * pk_transpose3(A, B, C, x, y)     x [A][B][C] -> y [B][A][C] (data movement only)
 * pk_subsampling_head_cl(T, F, C, c0, c1, x, w0, b0, w2, b2, scratch, y)   (exported per tier as
 *                                   subsampling_head_cl__<tier>: subsampling.h) pk_subsampling_head's
 *                                   bits for channels c0..c1-1, channel-last: y [H2][W2][C]
 *                                   (H2, W2 as pk_subsampling_head; the other channels of y
 *                                   untouched); scratch: pk_subsampling_head_cl_scratch_floats(F)
 * pk_transpose_last2(N, A, B, relu, x, y)   x [N][A][B] -> y [N][B][A] (data movement; with
 *                                   relu != 0 each value passes pk_relu's formula on the way)
 * pk_dwconv2d_s2_cl(H, W, C, c0, c1, relu_input, x, w, b, scratch, y)   (exported per tier as
 *                                   dwconv2d_s2_cl__<tier>: subsampling.h) pk_conv2d_s2's bits
 *                                   with groups = C on channel-last maps: x [H][W][C], w [C][3][3],
 *                                   y [ceil(H/2)][ceil(W/2)][C], channels c0..c1-1 only (the
 *                                   others of y untouched), of pk_relu(x) when relu_input != 0;
 *                                   scratch: pk_dwconv2d_s2_cl_scratch_bytes(W)
 * pk_block_power(n, B, x, y)      y[i] = mean of x^2 over block i = x[iB, min(iB + B, n)): a double
 *                                   sum in sample order over the block, divided by its length,
 *                                   rounded to float (ceil(n / B) outputs; pauses in long files)
 * pk_block_sums(n, B, x, y)       y[i] = the same double sum of x^2 over block i, not divided or
 *                                   rounded (the stream's frame energies and quiet test: the
 *                                   bits Python's plain float sum gave, on every platform)
 * pk_copy_cols(N, W, x, O, c0, y) x [N][W] -> columns c0..c0+W-1 of y [N][O] (data movement
 *                                   only; how a row slice of a split linear joins its output)
 * pk_take_cols(N, O, c0, W, x, y)  columns c0..c0+W-1 of x [N][O] -> y [N][W] (data movement
 *                                   only; one attention head's slice of Q, K, V or P)
 * pk_rel_positions(T, D, pe)        pe [2T-1][D], row k for relative position p = T-1-k, in
 *                                   NeMo's float32 steps: c = (float)(-ln(10000) / D),
 *                                   w_i = pk_expf((float)(2i) * c), a = (float)p * w_i,
 *                                   pe[k][2i] = (float)pk_sin(a), pe[k][2i+1] = (float)pk_cos(a)
 * pk_conv2d_s2(Cin, Cout, H, W, x, w, b, groups, y)   3x3, stride 2, padding 1, one input
 *                                   channel per group (groups = Cin): x [Cin][H][W],
 *                                   w [Cout][1][3][3], y [Cout][ceil(H/2)][ceil(W/2)] by
 *                                   conv_blocks.h's rule (block-quantised rows, exact integer sums,
 *                                   one rounding), written out one output at a time
 * pk_conv2d_s2_f32(Cin, Cout, H, W, x, w, b, groups, y)   the same conv in float32 (any grouping):
 *                                   y = (sum over (ci, a, e) ascending of w * x, taps outside the
 *                                   map skipped, from 0) + b; the graph check's executor's
 */
#ifndef PK_OPS_H
#define PK_OPS_H

#include "common.h"

PK_API int pk_f16_to_f32(int n, const uint16_t *h, float *y);
PK_API int pk_silu(int n, const float *x, float *y);
PK_API int pk_relu(int n, const float *x, float *y);
PK_API int pk_glu(int N, int C, const float *x, float *y);
PK_API int pk_add_scaled(int n, const float *x, float s, const float *d, float *y);
PK_API int pk_dwconv1d(int T, int C, int K, const float *x, const float *w, const float *b, float *y);
PK_API int pk_matmul_nt(int M, int N, int K, const float *a, const float *b, float s, float *c);
PK_API int pk_lstm_cell(int P, const float *gates, float *c, float *h);
PK_API int pk_argmax(int n, const float *x);
PK_API int pk_rel_positions(int T, int D, float *pe);
PK_API int pk_subsampling_head(int T, int F, int C, const float *x, const float *w0, const float *b0,
                               const float *w2, const float *b2, float *scratch, float *y);
PK_API size_t pk_subsampling_head_cl_scratch_floats(int F);
PK_API int pk_transpose_last2(int N, int A, int B, int relu, const float *x, float *y);
PK_API size_t pk_dwconv2d_s2_cl_scratch_bytes(int W);
PK_API int pk_transpose3(int A, int B, int C, const float *x, float *y);
PK_API int pk_copy_cols(int N, int W, const float *x, int O, int c0, float *y);
PK_API int pk_glu_split(int N, int C, const float *a, const float *b, float *y);
PK_API int pk_take_cols(int N, int O, int c0, int W, const float *x, float *y);
PK_API int pk_block_power(int n, int B, const float *x, float *y);
PK_API int pk_block_sums(int n, int B, const float *x, double *y);
PK_API int pk_conv2d_s2(int Cin, int Cout, int H, int W, const float *x, const float *w, const float *b,
                        int groups, float *y);
PK_API int pk_conv2d_s2_f32(int Cin, int Cout, int H, int W, const float *x, const float *w, const float *b,
                            int groups, float *y);

#endif
