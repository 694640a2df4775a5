/* SiLU, GLU and the softmax's exponentials, scalar tier (contract in activation.h). */
#include "activation.h"

int silu__scalar(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}

void softmax_exp_row__scalar(int n, float *row, float mx) {
    for (int i = 0; i < n; i++) row[i] = pk_expq(row[i] - mx);
}

int glu__scalar(int N, int C, const float *x, float *y) {
    if (N <= 0 || C <= 0) return PK_E_SHAPE;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            y[(size_t)n * C + c] = x[(size_t)n * 2 * C + c] * pk_sigmoidq(x[(size_t)n * 2 * C + C + c]);
    return PK_OK;
}
