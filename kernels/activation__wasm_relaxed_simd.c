/* SiLU, relaxed-SIMD tier: the SIMD128 code (relaxed ops are not bit-stable, and this op
 * needs none). */
#include "activation.h"

int silu__wasm_relaxed_simd(int n, const float *x, float *y) { return silu__wasm_simd128(n, x, y); }
void softmax_exp_row__wasm_relaxed_simd(int n, float *row, float mx) { softmax_exp_row__wasm_simd128(n, row, mx); }
int glu__wasm_relaxed_simd(int N, int C, const float *x, float *y) { return glu__wasm_simd128(N, C, x, y); }
