/* The layer norm, WebAssembly SIMD128 tier (contract in norm.h): extremes on 4 float32 lanes,
 * the exact row sums on 2 float64 lanes (norm_impl.h). */
#include "f32_lanes__wasm_simd128.h"

#define PK_TIER wasm_simd128
#include "norm_impl.h"
