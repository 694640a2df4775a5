/* SiLU, GLU and the softmax's exponentials, WebAssembly SIMD128 tier (contract in
 * activation.h): pk_expq's main path on 4 lanes (activation_impl.h). */
#include "f32_lanes__wasm_simd128.h"

#define PK_TIER wasm_simd128
#include "activation_impl.h"
