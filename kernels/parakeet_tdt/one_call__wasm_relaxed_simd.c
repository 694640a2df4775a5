/* The one-call entry points (layer.h, decoder_step.h) on the wasm_relaxed_simd tier's kernels. */
#define PK_TIER wasm_relaxed_simd
#include "one_call_impl.h"
