/* fv5 GEMM, WebAssembly SIMD128 tier (contract in fv5_gemm.h, tile in
 * gemm_tile__wasm_simd128.h): per 8-row block, SIMD decode straight into dot-order staging
 * (fv5_decode_impl.h on fv5_decode__wasm_simd128.h's steps), then the 8-row x 4-token
 * i32x4.dot_i16x8_s tile over all tokens (the driver: fv5_gemm_impl.h). */
#include "fv5_decode__wasm_simd128.h"
#include "fv5_gemm.h"
#include "gemm_tile__wasm_simd128.h"

#define PK_TIER wasm_simd128
#define PK_DECODE_LANES wasm_simd128
#include "fv5_decode_impl.h"
#include "fv5_gemm_impl.h"
