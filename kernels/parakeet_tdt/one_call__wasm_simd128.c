/* The one-call entry points (layer.h, decoder_step.h) on the wasm_simd128 tier's kernels. */
#define PK_TIER wasm_simd128
#include "one_call_impl.h"
