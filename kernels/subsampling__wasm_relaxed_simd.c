/* The subsampling head, relaxed-SIMD tier: the SIMD128 code (no relaxed op is bit-stable). */
#include "subsampling.h"

int subsampling_head__wasm_relaxed_simd(PK_SUBSAMPLING_HEAD_ARGS) {
    return subsampling_head__wasm_simd128(T, F, C, x, w0, b0, w2, b2, scratch, y);
}
