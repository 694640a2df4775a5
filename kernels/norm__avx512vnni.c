/* The layer norm, AVX-512 VNNI tier: the AVX2 code (the tier's gain is in the GEMM). */
#include "norm.h"

int layernorm__avx512vnni(PK_LAYERNORM_ARGS) { return layernorm__avx2(N, D, x, g, b, eps, y); }
