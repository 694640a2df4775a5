/* SiLU, scalar tier (contract in activation.h). */
#include "activation.h"

int silu__scalar(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}
