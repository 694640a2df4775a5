/* What every one-call entry point shares (contract in linear_call.h): the check of its linears, the
 * carving of its scratch. */
#include "linear_call.h"

int pk_linear_is(const pk_linear *L, int O, int K) {
    if (L->O != O || L->K != K || !L->w || !L->ws) return 0;
    return L->kind == PK_LINEAR_INT8 || (L->kind == PK_LINEAR_FV5 && L->packed);
}

size_t pk_carve(void *scratch, int n, const size_t *floats, float **const *where, size_t xs_floats, size_t xq_bytes,
                size_t gemm_bytes, pk_linear_buffers *lin) {
    uint8_t *base = scratch ? (uint8_t *)pk_align64(scratch) : NULL;
    size_t offset = 0;
    for (int i = 0; i <= n; i++) {                        /* the n buffers, then the linear's xs */
        if (base) {
            if (i < n) *where[i] = (float *)(base + offset);
            else lin->xs = (float *)(base + offset);
        }
        offset += pk_round64(4 * (i < n ? floats[i] : xs_floats));
    }
    if (base) {
        lin->xq = (int8_t *)(base + offset);
        lin->gemm = base + offset + pk_round64(xq_bytes);
        lin->gemm_bytes = gemm_bytes;
    }
    return 64 + offset + pk_round64(xq_bytes) + gemm_bytes;    /* 64: room to align the base */
}
