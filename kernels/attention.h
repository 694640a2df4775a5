/* Relative-position self-attention of the Parakeet-TDT graph, one head or a range of heads
 * (docs/parakeet-tdt.md). The flow is written once (attention_impl.h) and compiled in
 * attention__scalar.c as these exported functions, and per tier in one_call_impl.h for the
 * one-call layer; both reductions are exact integer sums over block-quantised operands
 * (attention_blocks.h), so every compilation gives the same bits.
 *
 * pk_rel_scores(T, dk, qu, k, qv, p, s, scratch, y)   relative-position scores of one head:
 *                                   qu, qv, k [T][dk], p [2T-1][dk] (row r: position T-1-r),
 *                                   y[i][j] = (ac + bd) / s with ac ~ sum_d qu[i][d] * k[j][d],
 *                                   bd ~ sum_d qv[i][d] * p[T-1-i+j][d], each an exact int32 sum of
 *                                   block-quantised rows rounded once (attention_impl.h,
 *                                   attention_blocks.h): the rel-shift applied by indexing, only
 *                                   the T used columns; scratch: pk_rel_scores_scratch_bytes(T, dk)
 * pk_attention_context(T, dk, scores, v, scratch, out)   softmax(scores) v of one head: scores
 *                                   [T][T] (overwritten with exp(x - max)), v, out [T][dk]; the
 *                                   exponentials and v's columns block-quantised, the weighted sum
 *                                   an exact int32 sum divided by the mantissas' int sum
 *                                   (attention_impl.h); scratch: pk_attention_context_scratch_bytes
 * pk_attention_heads(T, D, dk, h0, h1, q, k, v, p, u, vb, s, scratch, out)   heads h0..h1-1 of
 *                                   relative-position self-attention, in one call (one per thread):
 *                                   q, k, v, out [T][D], p [2T-1][D], u, vb [D] (bias_u, bias_v);
 *                                   for each head, its columns of q, k, v, p (pk_take_cols),
 *                                   qu = qh + 1 * u_h, qv = qh + 1 * vb_h (pk_add_scaled's
 *                                   formula), pk_rel_scores, pk_attention_context with vh,
 *                                   into the head's columns of out: the bits of those calls made
 *                                   one by one. scratch: pk_attention_scratch_floats(T, dk) floats
 */
#ifndef PK_ATTENTION_H
#define PK_ATTENTION_H

#include "common.h"

PK_API size_t pk_rel_scores_scratch_bytes(int T, int dk);
PK_API int pk_rel_scores(int T, int dk, const float *qu, const float *k, const float *qv, const float *p,
                         float s, void *scratch, float *y);
PK_API size_t pk_attention_context_scratch_bytes(int T, int dk);
PK_API int pk_attention_context(int T, int dk, float *scores, const float *v, void *scratch, float *out);
PK_API size_t pk_attention_scratch_floats(int T, int dk);
PK_API int pk_attention_heads(int T, int D, int dk, int h0, int h1, const float *q, const float *k,
                              const float *v, const float *p, const float *u, const float *vb, float s,
                              float *scratch, float *out);

#endif
