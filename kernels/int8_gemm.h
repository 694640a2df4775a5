/* Plain int8 GEMM (the model's int8 tables: no decode):
 *   Y[N][O] = dequant(sum_k w[o][k] * xq[n][k]), dequantisation order of gemm_common.h.
 *
 *   xq [N][K] int8, |xq| <= 127    xs [N] float32
 *   w  [O][K] int8 (full range)    ws [O] float32 (per-row scale)
 *   bias [O] float32 or NULL       y  [N][O] float32
 *   scratch >= gemm_scratch_bytes(N, K) bytes
 * Shapes: 1 <= N, 1 <= O (any: a short last block is padded with zero rows internally),
 * K % 8 == 0, all <= PK_MAX_DIM.
 *
 * int8_gemm_peak__<tier>: the same tile on weights already in the tier's dot-order staging
 * layout (no decode, no re-layout, no dequantisation: writes the int32 sums acc[N][O]).
 * It is the ceiling a decode+GEMM can approach in that runtime; benchmarks only.
 * Its weights come from int8_stage_weights__<tier> ([O/8][8*K] bytes, O % 8 == 0).
 */
#ifndef PK_INT8_GEMM_H
#define PK_INT8_GEMM_H

#include "common.h"
#include "gemm_common.h"

#define PK_INT8_GEMM_ARGS                                                                  \
    int N, int O, int K, const int8_t *xq, const float *xs, const int8_t *w,               \
        const float *ws, const float *bias, float *y, void *scratch, size_t scratch_bytes

PK_API int int8_gemm__scalar(PK_INT8_GEMM_ARGS);
PK_API int int8_gemm__wasm_simd128(PK_INT8_GEMM_ARGS);
PK_API int int8_gemm__avx2(PK_INT8_GEMM_ARGS);
PK_API int int8_gemm__avx512vnni(PK_INT8_GEMM_ARGS);
PK_API int int8_gemm__wasm_relaxed_simd(PK_INT8_GEMM_ARGS);

#define PK_INT8_PEAK_ARGS                                                                  \
    int N, int O, int K, const int8_t *xq, const int8_t *staged, int32_t *acc,             \
        void *scratch, size_t scratch_bytes

PK_API int int8_stage_weights__wasm_simd128(int O, int K, const int8_t *w, int8_t *staged);
PK_API int int8_stage_weights__avx2(int O, int K, const int8_t *w, int8_t *staged);
PK_API int int8_gemm_peak__wasm_simd128(PK_INT8_PEAK_ARGS);
PK_API int int8_gemm_peak__avx2(PK_INT8_PEAK_ARGS);

#endif
