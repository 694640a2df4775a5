/* The layer norm, AVX2 tier (contract in norm.h): extremes on 8 float32 lanes, the exact row
 * sums on 4 float64 lanes (norm_impl.h). */
#include "f32_lanes__avx2.h"

#define PK_TIER avx2
#include "norm_impl.h"
