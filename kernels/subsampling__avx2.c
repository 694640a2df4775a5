/* The subsampling head, AVX2 tier (contract in subsampling.h): 8 output columns in lanes
 * (subsampling_impl.h). */
#include "f32_lanes__avx2.h"

#define PK_TIER avx2
#include "subsampling_impl.h"
