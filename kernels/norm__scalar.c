/* The layer norm, scalar tier (contract in norm.h): pk_layernorm, the rule's own writing. */
#include "norm.h"
#include "ops.h"

int layernorm__scalar(PK_LAYERNORM_ARGS) { return pk_layernorm(N, D, x, g, b, eps, y); }
