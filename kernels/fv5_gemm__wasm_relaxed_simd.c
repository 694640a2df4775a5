/* fv5 GEMM, WebAssembly relaxed-SIMD tier (contract in fv5_gemm.h, tile in
 * gemm_tile__wasm_relaxed_simd.h): per 8-row block, SIMD128's decode steps write straight into
 * the relaxed staging (weights + 64 for i32x4.relaxed_dot_i8x16_i7x16_add_s); activations are
 * used as int8 directly (the driver: fv5_gemm_impl.h). The other ops of this tier are the
 * SIMD128 ones. */
#include "fv5_decode__wasm_simd128.h"
#include "fv5_gemm.h"
#include "gemm_tile__wasm_relaxed_simd.h"
#include "int8_gemm.h"
#include "quantize_act.h"

#define PK_TIER wasm_relaxed_simd
#define PK_DECODE_LANES wasm_simd128
#include "fv5_decode_impl.h"
#include "fv5_gemm_impl.h"

/* The rest of the tier: SIMD128 implementations (int8 tables may use all of [-128, 127],
 * which the +64 trick cannot hold). */
int int8_gemm__wasm_relaxed_simd(PK_INT8_GEMM_ARGS) {
    return int8_gemm__wasm_simd128(N, O, K, xq, xs, w, ws, bias, y, scratch, scratch_bytes);
}
int quantize_act__wasm_relaxed_simd(int N, int K, const float *x, int8_t *xq, float *xs) {
    return quantize_act__wasm_simd128(N, K, x, xq, xs);
}
PK_DEFINE_DECODE_OPS(wasm_relaxed_simd)
