/* The tier-independent part of the one-call subsampling (contract in subsampling.h): where its
 * buffers sit in the scratch, and the check of its weights. The stack itself: one_call_impl.h. */
#include "subsampling.h"

static int halved(int n) { return (n + 1) / 2; }

size_t pk_subsampling_carve(int T, int F, int C, int D, void *scratch, pk_subsampling_buffers *b) {
    pk_subsampling_buffers sizes_only;
    if (!b) b = &sizes_only;
    int H2 = halved(halved(T)), W2 = halved(halved(F)), H3 = halved(H2), W3 = halved(W2);
    size_t map2 = (size_t)H2 * W2 * C, map3 = (size_t)H3 * W3 * C;
    size_t floats[6] = {map2, map2, map3, map3, map3, pk_subsampling_head_cl_scratch_floats(F)};
    float **const where[6] = {&b->head, &b->a, &b->b, &b->c, &b->flat, &b->ring};
    size_t tokens = (size_t)H2 * W2;                                   /* pw3's: the most tokens */
    size_t gemm_a = pk_gemm_scratch_bytes((int)tokens, C), gemm_b = pk_gemm_scratch_bytes(H3, C * W3);
    (void)D;
    return pk_carve(scratch, 6, floats, where, tokens, map2 > map3 ? map2 : map3, gemm_a > gemm_b ? gemm_a : gemm_b,
                    &b->lin);
}

size_t pk_subsampling_scratch_bytes(int T, int F, int C, int D) {
    if (T <= 0 || F <= 0 || C <= 0 || D <= 0 || T > PK_MAX_DIM || F > PK_MAX_DIM || C > PK_MAX_DIM) return 0;
    return pk_subsampling_carve(T, F, C, D, NULL, NULL);
}

int pk_subsampling_check(const pk_subsampling *S, int T) {
    int C = S->C, F = S->F, D = S->D, H2 = halved(halved(T)), W2 = halved(halved(F));
    if (T <= 0 || F <= 0 || C <= 0 || D <= 0 || (size_t)H2 * W2 > PK_MAX_DIM) return 0;
    if (!S->w0 || !S->b0 || !S->w2 || !S->b2 || !S->w5 || !S->b5) return 0;
    return pk_linear_is(&S->pw3, C, C) && pk_linear_is(&S->pw6, C, C) && pk_linear_is(&S->linear, D, C * halved(W2));
}
