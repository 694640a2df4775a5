/* Relative-position self-attention, the exported scalar functions (contract in attention.h). */
#include "attention.h"
#include "pk_math.h"

/* The attention flow (attention_impl.h) as this file's static attention_*, with pk_expq. */
static void exp_row_scalar(int n, float *row, float mx) {
    for (int i = 0; i < n; i++) row[i] = pk_expq(row[i] - mx);
}
#define PK_ATTENTION(name) attention_##name
#define PK_ATTENTION_EXP_ROW(n, row, mx) exp_row_scalar(n, row, mx)
#include "attention_impl.h"

/* The attention's scratch (attention_impl.h): block exponents (int32) then mantissas (int16). */
size_t pk_rel_scores_scratch_bytes(int T, int dk) {
    size_t vectors = (size_t)5 * T - 1;                 /* rows of qu, qv, k (T each) and p (2T-1) */
    return vectors * sizeof(int32_t) + vectors * pk_block_padded(dk) * sizeof(int16_t);
}

size_t pk_attention_context_scratch_bytes(int T, int dk) {
    return (size_t)dk * sizeof(int32_t) + ((size_t)dk + 1) * pk_block_padded(T) * sizeof(int16_t);
}

int pk_rel_scores(int T, int dk, const float *qu, const float *k, const float *qv, const float *p,
                  float s, void *scratch, float *y) {
    if (T <= 0 || dk <= 0 || T > 65536 || dk > 65536) return PK_E_SHAPE;
    attention_rel_scores(T, dk, qu, k, qv, p, s, scratch, y);
    return PK_OK;
}

int pk_attention_context(int T, int dk, float *scores, const float *v, void *scratch, float *out) {
    if (T <= 0 || dk <= 0 || T > 65536 || dk > 65536) return PK_E_SHAPE;
    attention_context(T, dk, scores, v, scratch, out);
    return PK_OK;
}

size_t pk_attention_scratch_floats(int T, int dk) {
    size_t td = (size_t)T * dk, pd = ((size_t)2 * T - 1) * dk;
    size_t blocks = pk_rel_scores_scratch_bytes(T, dk), context = pk_attention_context_scratch_bytes(T, dk);
    if (context > blocks) blocks = context;
    return 6 * td + pd + (size_t)T * T + (blocks + sizeof(float) - 1) / sizeof(float);
}

int pk_attention_heads(int T, int D, int dk, int h0, int h1, const float *q, const float *k, const float *v,
                       const float *p, const float *u, const float *vb, float s, float *scratch, float *out) {
    if (T <= 0 || dk <= 0 || D <= 0 || D % dk || h0 < 0 || h1 > D / dk || h0 >= h1 || T > 65536 || dk > 65536)
        return PK_E_SHAPE;
    attention_heads(T, D, dk, h0, h1, q, k, v, p, u, vb, s, scratch, out);
    return PK_OK;
}
