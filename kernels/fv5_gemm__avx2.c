/* fv5 GEMM, AVX2 tier (contract in fv5_gemm.h, tile in gemm_tile__avx2.h): per 8-row block,
 * decode straight into the dot-order staging (fv5_decode_impl.h on fv5_decode__avx2.h's steps),
 * then the tile (the driver: fv5_gemm_impl.h). */
#include "fv5_decode__avx2.h"
#include "fv5_gemm.h"
#include "gemm_tile__avx2.h"

#define PK_TIER avx2
#define PK_DECODE_LANES avx2
#include "fv5_decode_impl.h"
#include "fv5_gemm_impl.h"
