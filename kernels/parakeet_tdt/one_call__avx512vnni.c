/* The one-call entry points (layer.h, decoder_step.h) on the avx512vnni tier's kernels. */
#define PK_TIER avx512vnni
#include "one_call_impl.h"
