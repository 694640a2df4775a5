/* SiLU, AVX-512 VNNI tier: the AVX2 code (the tier's gain is in the GEMM; this op is
 * bandwidth-light and 8 lanes already hide its latency). */
#include "activation.h"

int silu__avx512vnni(int n, const float *x, float *y) { return silu__avx2(n, x, y); }
void softmax_exp_row__avx512vnni(int n, float *row, float mx) { softmax_exp_row__avx2(n, row, mx); }
int glu__avx512vnni(int N, int C, const float *x, float *y) { return glu__avx2(N, C, x, y); }
