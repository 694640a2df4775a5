/* What the one-call entry points share (kernels/parakeet_tdt/layer.h: one encoder layer; decoder_step.h: one
 * joint evaluation, one prediction-network step): a linear's weights as C sees them and the
 * buffers its call needs. Their flow is compiled per tier from one_call_impl.h (one_call__<tier>.c),
 * so a one-call entry point computes with the kernels a composed call of that tier would use:
 * the same bits. */
#ifndef PK_LINEAR_CALL_H
#define PK_LINEAR_CALL_H

#include "activation.h"
#include "fv5_gemm.h"
#include "gemm_common.h"
#include "int8_gemm.h"
#include "norm.h"
#include "ops.h"
#include "quantize_act.h"

enum { PK_LINEAR_INT8 = 0, PK_LINEAR_FV5 = 1 };

/* A linear y [N][O] = x [N][K] W^T (+ bias): fv5 (packed blocks, per-row lut and scale from
 * fv5_row_grid) or int8 (w [O][K], per-row scale). */
typedef struct {
    int32_t kind, O, K;
    const uint8_t *packed;            /* fv5: (O / 8) stored blocks; int8: NULL */
    const int8_t *w;                  /* fv5: lut [O][8]; int8: w [O][K] */
    const float *ws;                  /* [O] */
    const float *bias;                /* [O] or NULL */
} pk_linear;

/* The buffers a linear's call needs: its input quantised per token, the GEMM's scratch. */
typedef struct {
    int8_t *xq;                       /* [N][K] */
    float *xs;                        /* [N] */
    void *gemm;
    size_t gemm_bytes;
} pk_linear_buffers;

/* 1 when L holds an O x K linear of a known kind (pointers set). */
int pk_linear_is(const pk_linear *L, int O, int K);

/* Lay out, from scratch (its first 64-byte boundary on), n float buffers of floats[i] floats
 * each at *where[i], then a linear's xs (xs_floats), xq (xq_bytes) and GEMM scratch
 * (gemm_bytes) in lin, each 64-byte aligned. Returns the bytes it needs; with scratch NULL it
 * only counts them. */
size_t pk_carve(void *scratch, int n, const size_t *floats, float **const *where, size_t xs_floats, size_t xq_bytes,
                size_t gemm_bytes, pk_linear_buffers *lin);

static inline size_t pk_round64(size_t n) { return (n + 63u) & ~(size_t)63u; }

#endif
