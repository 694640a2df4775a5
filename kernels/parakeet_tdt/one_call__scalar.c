/* The one-call entry points (layer.h, decoder_step.h) on the scalar tier's kernels. */
#define PK_TIER scalar
#include "one_call_impl.h"
