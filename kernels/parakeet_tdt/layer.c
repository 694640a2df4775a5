/* The tier-independent part of the one-call layer (contract in layer.h): where its buffers sit
 * in the scratch, and the check of its weights. The layer itself: one_call_impl.h. */
#include "attention.h"
#include "layer.h"

size_t pk_layer_carve(int T, int D, int ff, int heads, void *scratch, pk_layer_buffers *b) {
    pk_layer_buffers sizes_only;                                       /* scratch NULL: only the size */
    if (!b) b = &sizes_only;
    size_t td = (size_t)T * D, rows = (size_t)2 * T - 1;             /* pe has 2T - 1 rows */
    size_t wide = (size_t)T * (ff > 2 * D ? ff : 2 * D);             /* ff hidden, pw1's [T][2D] */
    size_t widest_k = ff > D ? (size_t)ff : (size_t)D;
    size_t xq_bytes = rows * widest_k;                               /* the largest N x K input */
    size_t gemm_a = pk_gemm_scratch_bytes((int)rows, D), gemm_b = pk_gemm_scratch_bytes(T, ff);
    size_t gemm = gemm_a > gemm_b ? gemm_a : gemm_b;
    size_t floats[10] = {td, td, wide, td, td, td, td, rows * D, td, pk_attention_scratch_floats(T, D / heads)};
    float **const where[10] = {&b->r, &b->z, &b->wide, &b->out, &b->q, &b->k, &b->v, &b->p, &b->ctx, &b->attn};
    return pk_carve(scratch, 10, floats, where, rows, xq_bytes, gemm, &b->lin);
}

size_t pk_conformer_layer_scratch_bytes(int T, int D, int ff, int heads) {
    if (T <= 0 || D <= 0 || ff <= 0 || heads <= 0 || D % heads) return 0;
    return pk_layer_carve(T, D, ff, heads, NULL, NULL);
}

int pk_conformer_layer_check(const pk_conformer_layer *L, int T) {
    int D = L->D, F = L->ff;
    if (T <= 0 || T > PK_MAX_DIM / 2 || D <= 0 || F <= 0 || L->heads <= 0 || D % L->heads) return 0;
    if (L->conv_kernel <= 0 || L->conv_kernel % 2 == 0) return 0;
    return pk_linear_is(&L->ff1_in, F, D) && pk_linear_is(&L->ff1_out, D, F) && pk_linear_is(&L->q, D, D) &&
           pk_linear_is(&L->k, D, D) && pk_linear_is(&L->v, D, D) && pk_linear_is(&L->o, D, D) &&
           pk_linear_is(&L->pos, D, D) && pk_linear_is(&L->pw1, 2 * D, D) && pk_linear_is(&L->pw2, D, D) &&
           pk_linear_is(&L->ff2_in, F, D) && pk_linear_is(&L->ff2_out, D, F);
}
