/* The one-call entry points (layer.h, decoder_step.h) on the avx2 tier's kernels. */
#define PK_TIER avx2
#include "one_call_impl.h"
