/* The check every one-call entry point makes of its linears (contract in fused.h). */
#include "fused.h"

int pk_linear_is(const pk_linear *L, int O, int K) {
    if (L->O != O || L->K != K || !L->w || !L->ws) return 0;
    return L->kind == PK_LINEAR_INT8 || (L->kind == PK_LINEAR_FV5 && L->packed);
}
