/* The layer norm, relaxed-SIMD tier: the SIMD128 code (relaxed ops are not bit-stable, and
 * this op needs none). */
#include "norm.h"

int layernorm__wasm_relaxed_simd(PK_LAYERNORM_ARGS) { return layernorm__wasm_simd128(N, D, x, g, b, eps, y); }
