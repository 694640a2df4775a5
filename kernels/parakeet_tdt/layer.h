/* One FastConformer layer in one call (fewer Python-to-C crossings).
 *
 * engine/parakeet_tdt/encoder.py composes a layer from about seventy kernel calls; for a small
 * model the Python between them cost as much as the arithmetic (BENCHMARKS.md, "Per-call
 * overhead"). conformer_layer__<tier> makes the same calls, in the same order, on the same
 * buffers' values, from C: the same bits as the composed layer, by construction (the test
 * compares them on every tier). Only the single-worker encoder uses it; a split encoder (threads,
 * kernel workers) keeps the composed path, whose slices are cut between these calls.
 *
 *   x [T][D] -> y [T][D], pe [2T-1][D] (the relative positional table), or pos_keys [2T-1][D]
 *   (pos(pe) computed already: its rows depend only on their position, so a caller keeps them
 *   across window lengths and passes the slice for T; then pe may be NULL):
 *   r = x + 0.5 * ff1(norm1(x))            ff(z) = out(silu(in(z)))
 *   r = r + attention(norm2(r), pe)        o(heads(q(z), k(z), v(z), pos(pe)))
 *   r = r + conv(norm3(r))                 pw2(silu(dwconv(glu(pw1(z)))))
 *   r = r + 0.5 * ff2(norm4(r))
 *   y = norm5(r)
 *
 * Each linear quantises its input per token (quantize_act) and runs the tier's GEMM for its
 * format. q, k and v read the same quantised norm2(r) (quantisation is deterministic, so
 * quantising once gives the bits of quantising three times).
 *
 * Returns 0; a positive code 1 + row when a row of a linear's input is not finite
 * (quantize_act's code: the caller raises); PK_E_SHAPE / PK_E_SCRATCH on a bad call.
 */
#ifndef PK_LAYER_H
#define PK_LAYER_H

#include "linear_call.h"

/* The weights of one layer (norms in the order of the formula above). */
typedef struct {
    int32_t D, heads, ff, conv_kernel;
    float eps, sqrt_dk;
    const float *norm_g[5], *norm_b[5];
    pk_linear ff1_in, ff1_out, q, k, v, o, pos, pw1, pw2, ff2_in, ff2_out;
    const float *bias_u, *bias_v;     /* [D] */
    const float *dw_w, *dw_b;         /* [D][conv_kernel], [D] */
} pk_conformer_layer;

PK_API size_t pk_conformer_layer_scratch_bytes(int T, int D, int ff, int heads);

#define PK_CONFORMER_LAYER_ARGS                                                            \
    const pk_conformer_layer *L, int T, const float *x, const float *pe,                  \
        const float *pos_keys, float *y, void *scratch, size_t scratch_bytes

PK_API int conformer_layer__scalar(PK_CONFORMER_LAYER_ARGS);
PK_API int conformer_layer__avx2(PK_CONFORMER_LAYER_ARGS);
PK_API int conformer_layer__avx512vnni(PK_CONFORMER_LAYER_ARGS);
PK_API int conformer_layer__wasm_simd128(PK_CONFORMER_LAYER_ARGS);
PK_API int conformer_layer__wasm_relaxed_simd(PK_CONFORMER_LAYER_ARGS);

/* Where a layer's buffers sit in its scratch (each 64-byte aligned; see layer.c). */
typedef struct {
    float *r, *z, *wide, *out, *q, *k, *v, *p, *ctx, *attn;
    pk_linear_buffers lin;
} pk_layer_buffers;

/* The carving of `scratch` (NULL scratch: only the size, returned). */
size_t pk_layer_carve(int T, int D, int ff, int heads, void *scratch, pk_layer_buffers *b);

/* 1 when L's dimensions and linears fit together and T is in range. */
int pk_conformer_layer_check(const pk_conformer_layer *L, int T);

#endif
