/* SiLU, GLU and the softmax's exponentials, AVX2 tier (contract in activation.h): pk_expq's main
 * path on 8 lanes (activation_impl.h). */
#include "f32_lanes__avx2.h"

#define PK_TIER avx2
#include "activation_impl.h"
