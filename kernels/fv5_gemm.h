/* fv5 GEMM: Y[N][O] = dequant(sum_k panel[o][k] * xq[n][k]) for a five-value linear stored
 * as fv5-b5x3t7-v1 blocks (fv5_decode.h), with per-token int8 activations (quantize_act.h)
 * and the per-row grid and scale of fv5_grid.h. Dequantisation order: gemm_common.h.
 *
 *   xq     [N][K] int8, |xq| <= 127      xs   [N] float32
 *   packed [O/8][fv5_block_bytes(K)]     lut  [O][8] int8     ws [O] float32
 *   bias   [O] float32 or NULL           y    [N][O] float32 (row-major, o fastest)
 *   scratch >= gemm_scratch_bytes(N, K) bytes
 * Shapes: 1 <= N, O % 8 == 0, K % 8 == 0, all <= PK_MAX_DIM.
 *
 * Driver (every tier): for each 8-row block, decode it into the staging panel, then run the
 * tile over all N tokens. The int32 sums are exact, so tiers may order them freely; the float
 * steps are only the dequantisation, identical everywhere.
 */
#ifndef PK_FV5_GEMM_H
#define PK_FV5_GEMM_H

#include "common.h"
#include "gemm_common.h"

#define PK_FV5_GEMM_ARGS                                                                   \
    int N, int O, int K, const int8_t *xq, const float *xs, const uint8_t *packed,         \
        const int8_t *lut, const float *ws, const float *bias, float *y, void *scratch,    \
        size_t scratch_bytes

PK_API int fv5_gemm__scalar(PK_FV5_GEMM_ARGS);
PK_API int fv5_gemm__wasm_simd128(PK_FV5_GEMM_ARGS);
PK_API int fv5_gemm__avx2(PK_FV5_GEMM_ARGS);
PK_API int fv5_gemm__avx512vnni(PK_FV5_GEMM_ARGS);
PK_API int fv5_gemm__wasm_relaxed_simd(PK_FV5_GEMM_ARGS);

#endif
