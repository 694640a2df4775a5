/* The subsampling head, WebAssembly SIMD128 tier (contract in subsampling.h): 4 output columns
 * in lanes (subsampling_impl.h). */
#include "f32_lanes__wasm_simd128.h"

#define PK_TIER wasm_simd128
#include "subsampling_impl.h"
