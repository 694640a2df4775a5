/* fv5 block decode, AVX2 tier: the loop of fv5_decode_impl.h on the steps of
 * fv5_decode__avx2.h. */
#include "fv5_decode__avx2.h"
#include "gemm_tile__avx2.h"

#define PK_TIER avx2
#define PK_DECODE_LANES avx2
#include "fv5_decode_impl.h"

PK_DEFINE_DECODE_OPS(avx2)
