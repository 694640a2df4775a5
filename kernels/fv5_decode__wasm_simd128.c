/* fv5 block decode, WebAssembly SIMD128 tier: the loop of fv5_decode_impl.h on the steps of
 * fv5_decode__wasm_simd128.h. */
#include "fv5_decode__wasm_simd128.h"
#include "gemm_tile__wasm_simd128.h"

#define PK_TIER wasm_simd128
#define PK_DECODE_LANES wasm_simd128
#include "fv5_decode_impl.h"

PK_DEFINE_DECODE_OPS(wasm_simd128)
