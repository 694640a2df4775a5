/* The subsampling head, AVX-512 VNNI tier: the AVX2 code (the tier's gain is in the GEMM). */
#include "subsampling.h"

int subsampling_head__avx512vnni(PK_SUBSAMPLING_HEAD_ARGS) { return subsampling_head__avx2(T, F, C, x, w0, b0, w2, b2, scratch, y); }
