/* Array entry points for the project's math functions (pk_math.h): used by tests to compare
 * them with exact references and across runtimes. One implementation for every module. */
#include "common.h"
#include "pk_math.h"

PK_API int pk_math_array(int op, int n, const float *x, float *y) {
    if (n <= 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) {
        switch (op) {
        case 0: y[i] = pk_expf(x[i]); break;
        case 1: y[i] = pk_logf(x[i]); break;
        case 2: y[i] = pk_tanhf(x[i]); break;
        case 3: y[i] = pk_sigmoidf(x[i]); break;
        case 4: y[i] = pk_expq(x[i]); break;
        case 5: y[i] = pk_sigmoidq(x[i]); break;
        default: return PK_E_RANGE;
        }
    }
    return PK_OK;
}

/* sin and cos in float64: y[2i] = sin(x[i]), y[2i+1] = cos(x[i]). */
PK_API int pk_sincos_array(int n, const double *x, double *y) {
    if (n <= 0) return PK_E_SHAPE;
    for (int i = 0; i < n; i++) {
        y[2 * i] = pk_sin(x[i]);
        y[2 * i + 1] = pk_cos(x[i]);
    }
    return PK_OK;
}
