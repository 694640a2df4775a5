/* fv5 block decode, WebAssembly SIMD128 tier: the steps are in fv5_decode__wasm_simd128.h. */
#include "fv5_decode__wasm_simd128.h"

int fv5_decode_block__wasm_simd128(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;
    pk_fv5_decode_wasm_simd128(K, stored, lut, panel, NULL);
    return PK_OK;
}

PK_DEFINE_DECODE_BLOCKS(wasm_simd128)
