/* The one-call entry points' flow, compiled once per tier: each kernels/parakeet_tdt/one_call__<tier>.c defines
 * PK_TIER and includes this file, so every call below is a direct call to that tier's kernel
 * (PK_TIER_FN(fv5_gemm) = fv5_gemm__<tier>), the kernel a composed call of that tier makes.
 * Direct calls, not a table of function pointers: a side module that takes function addresses
 * needs the loader to provide a function table, and the browser's kernel workers load the same
 * module with a minimal loader that has none (web/kernel-worker.mjs).
 *
 * The calls follow engine/parakeet_tdt/encoder.py's ConformerLayer and decoder.py's
 * PredictionNetwork.step / Joint one by one, in their order (contracts: layer.h, decoder_step.h). */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including one_call_impl.h"
#endif

#include "decoder_step.h"
#include "layer.h"
#include "subsampling.h"

/* Attention with this tier's flags and exponentials (attention_impl.h). */
#define PK_ATTENTION(name) tier_attention_##name
#define PK_ATTENTION_EXP_ROW(n, row, mx) PK_TIER_FN(softmax_exp_row)(n, row, mx)
#include "attention_impl.h"

/* The channel-last subsampling head with this tier's flags (head_impl.h). */
#define PK_HEAD(name) tier_head_##name
#include "head_impl.h"

int PK_TIER_FN(subsampling_head_cl)(PK_SUBSAMPLING_HEAD_CL_ARGS) {
    return tier_head_channel_last(T, F, C, c0, c1, x, w0, b0, w2, b2, scratch, y);
}

int PK_TIER_FN(dwconv2d_s2_cl)(PK_DWCONV2D_S2_CL_ARGS) {
    return tier_head_dwconv(H, W, C, c0, c1, relu_input, x, w, b, scratch, y);
}

/* y = L(x) for x already quantised into b. */
static int run_linear(const pk_linear *L, int N, const pk_linear_buffers *b, float *y) {
    if (L->kind == PK_LINEAR_FV5)
        return PK_TIER_FN(fv5_gemm)(N, L->O, L->K, b->xq, b->xs, L->packed, L->w, L->ws, L->bias, y, b->gemm,
                                    b->gemm_bytes);
    return PK_TIER_FN(int8_gemm)(N, L->O, L->K, b->xq, b->xs, L->w, L->ws, L->bias, y, b->gemm, b->gemm_bytes);
}

/* y = L(x) for float x [N][L->K]: quantised per token into b first. */
static int linear_forward(const pk_linear *L, int N, const float *x, const pk_linear_buffers *b, float *y) {
    int status = PK_TIER_FN(quantize_act)(N, L->K, x, b->xq, b->xs);
    return status ? status : run_linear(L, N, b, y);
}

/* --- the encoder layer (layer.h) --- */

/* ff(z) = out(silu(in(z))) into b->out; z [T][D]. */
static int feed_forward(const pk_linear *in, const pk_linear *out, int T,
                        const pk_layer_buffers *b) {
    int status = linear_forward(in, T, b->z, &b->lin, b->wide);
    if (status) return status;
    PK_TIER_FN(silu)(T * in->O, b->wide, b->wide);
    return linear_forward(out, T, b->wide, &b->lin, b->out);
}

/* pos_keys: pos(pe) [2T-1][D] from the caller, or NULL to compute it here from pe. */
static int attention(const pk_conformer_layer *L, int T, const float *pe, const float *pos_keys,
                     const pk_layer_buffers *b) {
    int D = L->D, status = PK_TIER_FN(quantize_act)(T, D, b->z, b->lin.xq, b->lin.xs);
    if (status) return status;
    if ((status = run_linear(&L->q, T, &b->lin, b->q)) || (status = run_linear(&L->k, T, &b->lin, b->k)) ||
        (status = run_linear(&L->v, T, &b->lin, b->v)))
        return status;
    if (!pos_keys && (status = linear_forward(&L->pos, 2 * T - 1, pe, &b->lin, b->p))) return status;
    tier_attention_heads(T, D, D / L->heads, 0, L->heads, b->q, b->k, b->v, pos_keys ? pos_keys : b->p,
                         L->bias_u, L->bias_v, L->sqrt_dk, b->attn, b->ctx);
    return linear_forward(&L->o, T, b->ctx, &b->lin, b->out);
}

/* pw2(silu(dwconv(glu(pw1(z))))) into b->out (glu and the conv in b->q and b->k). */
static int conv_module(const pk_conformer_layer *L, int T, const pk_layer_buffers *b) {
    int D = L->D, status = linear_forward(&L->pw1, T, b->z, &b->lin, b->wide);
    if (status) return status;
    PK_TIER_FN(glu)(T, D, b->wide, b->q);
    pk_dwconv1d(T, D, L->conv_kernel, b->q, L->dw_w, L->dw_b, b->k);
    PK_TIER_FN(silu)(T * D, b->k, b->k);
    return linear_forward(&L->pw2, T, b->k, &b->lin, b->out);
}

int PK_TIER_FN(conformer_layer)(PK_CONFORMER_LAYER_ARGS) {
    if (!L || !x || !(pe || pos_keys) || !y || !scratch || !pk_conformer_layer_check(L, T)) return PK_E_SHAPE;
    int D = L->D, n = T * D, status;
    if (scratch_bytes < pk_conformer_layer_scratch_bytes(T, D, L->ff, L->heads)) return PK_E_SCRATCH;
    pk_layer_buffers b;
    pk_layer_carve(T, D, L->ff, L->heads, scratch, &b);
    const float *const *g = L->norm_g, *const *nb = L->norm_b;

    PK_TIER_FN(layernorm)(T, D, x, g[0], nb[0], L->eps, b.z);
    if ((status = feed_forward(&L->ff1_in, &L->ff1_out, T, &b))) return status;
    pk_add_scaled(n, x, 0.5f, b.out, b.r);

    PK_TIER_FN(layernorm)(T, D, b.r, g[1], nb[1], L->eps, b.z);
    if ((status = attention(L, T, pe, pos_keys, &b))) return status;
    pk_add_scaled(n, b.r, 1.0f, b.out, b.r);

    PK_TIER_FN(layernorm)(T, D, b.r, g[2], nb[2], L->eps, b.z);
    if ((status = conv_module(L, T, &b))) return status;
    pk_add_scaled(n, b.r, 1.0f, b.out, b.r);

    PK_TIER_FN(layernorm)(T, D, b.r, g[3], nb[3], L->eps, b.z);
    if ((status = feed_forward(&L->ff2_in, &L->ff2_out, T, &b))) return status;
    pk_add_scaled(n, b.r, 0.5f, b.out, b.r);

    return PK_TIER_FN(layernorm)(T, D, b.r, g[4], nb[4], L->eps, y);
}

/* --- the decoder's steps (decoder_step.h) --- */

int PK_TIER_FN(prediction_step)(PK_PREDICTION_STEP_ARGS) {
    if (!M || !x || !state || !g || !scratch || M->layers <= 0 || M->P <= 0 || !M->w_ih || !M->w_hh) return PK_E_SHAPE;
    int P = M->P, status;
    for (int i = 0; i < M->layers; i++)
        if (!pk_linear_is(&M->w_ih[i], 4 * P, P) || !pk_linear_is(&M->w_hh[i], 4 * P, P)) return PK_E_SHAPE;
    if (!pk_linear_is(&M->proj, M->J, P)) return PK_E_SHAPE;
    if (scratch_bytes < pk_decoder_scratch_bytes(P, M->J, 1)) return PK_E_SCRATCH;
    pk_decoder_buffers d;
    pk_decoder_carve(P, M->J, 1, scratch, &d);
    const float *input = x;
    for (int i = 0; i < M->layers; i++) {
        float *h = state + (size_t)2 * i * P, *c = h + P;
        if ((status = linear_forward(&M->w_ih[i], 1, input, &d.lin, d.a)) ||
            (status = linear_forward(&M->w_hh[i], 1, h, &d.lin, d.b)))
            return status;
        pk_add_scaled(4 * P, d.a, 1.0f, d.b, d.a);
        pk_lstm_cell(P, d.a, c, h);
        input = h;
    }
    return linear_forward(&M->proj, 1, input, &d.lin, g);
}

int PK_TIER_FN(joint_best)(PK_JOINT_BEST_ARGS) {
    if (!M || !f || !g || !best || !scratch || M->V <= 0 || M->n_dur <= 0) return PK_E_SHAPE;
    int J = M->J, O = M->V + 1 + M->n_dur, status;
    if (!pk_linear_is(&M->head, O, J)) return PK_E_SHAPE;
    if (scratch_bytes < pk_decoder_scratch_bytes(1, J, O)) return PK_E_SCRATCH;
    pk_decoder_buffers d;
    pk_decoder_carve(1, J, O, scratch, &d);
    pk_add_scaled(J, f, 1.0f, g, d.h);
    pk_relu(J, d.h, d.h);
    if ((status = linear_forward(&M->head, 1, d.h, &d.lin, d.z))) return status;
    best[0] = pk_argmax(M->V + 1, d.z);
    best[1] = pk_argmax(M->n_dur, d.z + M->V + 1);
    return PK_OK;
}

/* --- the greedy decoding (decoder_step.h) --- */

/* (token or blank id, duration in frames) of the joint at frame t; a blank of duration 0 is
 * given duration 1 (greedy_rules: the blank never stays on its frame). */
static int tdt_best(const pk_tdt_decoder *M, const float *f, int t, const float *g, int32_t out[2],
                    void *scratch, size_t bytes) {
    int32_t best[2];
    const pk_joint *J = M->joint;
    int status = PK_TIER_FN(joint_best)(J, f + (size_t)t * J->J, g, best, scratch, bytes);
    if (status) return status > 0 ? PK_TDT_JOINT_NONFINITE : status;
    int d = M->durations[best[1]];
    out[0] = best[0];
    out[1] = best[0] == J->V && d == 0 ? 1 : d;
    return PK_OK;
}

int PK_TIER_FN(tdt_greedy)(PK_TDT_GREEDY_ARGS) {
    if (!M || !M->pred || !M->joint || !M->embedding || !M->embedding_scale || !M->durations || !f || !cur ||
        !state || !g || !tokens || !scratch || T <= 0 || t_stop > T || capacity < 0 || max_symbols < 0)
        return PK_E_SHAPE;
    const pk_prediction *pred = M->pred;
    const pk_joint *joint = M->joint;
    int P = pred->P, V = joint->V, O = V + 1 + joint->n_dur, blank = V;
    if (P <= 0 || V <= 0 || joint->n_dur <= 0 || joint->J != pred->J) return PK_E_SHAPE;
    for (int i = 0; i < joint->n_dur; i++)
        if (M->durations[i] < 0 || M->durations[i] > PK_MAX_DIM) return PK_E_SHAPE;
    size_t steps = pk_decoder_scratch_bytes(P, joint->J, O);
    if (steps == 0) return PK_E_SHAPE;
    if (scratch_bytes < pk_tdt_scratch_bytes(P, joint->J, O)) return PK_E_SCRATCH;
    size_t steps_bytes = (steps + 63) / 64 * 64;
    float *row = (float *)pk_align64((char *)scratch + steps_bytes);
    int32_t t = cur->t, last_frame = cur->last_frame, count = cur->count, n = cur->n_tokens, status;
    while (!cur->done && t < t_stop) {
        int32_t best[2];
        if ((status = tdt_best(M, f, t, g, best, scratch, steps))) return status;
        int32_t token = best[0], d = best[1], frame = t;
        t += d;
        while (token == blank && t < T) {                     /* decoder state fixed */
            frame = t;
            if ((status = tdt_best(M, f, t, g, best, scratch, steps))) return status;
            token = best[0], d = best[1];
            t += d;
        }
        if (token == blank) {                                 /* ran off the end on blanks */
            cur->done = 1;
            break;
        }
        if (n >= capacity) return PK_E_SHAPE;
        tokens[3 * n] = token, tokens[3 * n + 1] = frame, tokens[3 * n + 2] = d;   /* d may be 0 */
        n++;
        count = last_frame == frame ? count + 1 : 1;
        last_frame = frame;
        const int8_t *q = M->embedding + (size_t)token * P;
        float scale = M->embedding_scale[token];
        for (int i = 0; i < P; i++) row[i] = (float)q[i] * scale;
        if ((status = PK_TIER_FN(prediction_step)(pred, row, state, g, scratch, steps)))
            return status > 0 ? PK_TDT_PREDICTION_NONFINITE : status;
        if (count >= max_symbols && last_frame == t && t < T) t += 1;     /* max symbols per frame */
    }
    cur->t = t, cur->last_frame = last_frame, cur->count = count, cur->n_tokens = n;
    if (t >= T) cur->done = 1;
    return PK_OK;
}

/* --- the subsampling stack (subsampling.h) --- */

int PK_TIER_FN(subsampling_frames)(PK_SUBSAMPLING_FRAMES_ARGS) {
    if (!S || !x || !y || !scratch || !pk_subsampling_check(S, T)) return PK_E_SHAPE;
    int C = S->C, F = S->F, status;
    if (scratch_bytes < pk_subsampling_scratch_bytes(T, F, C, S->D)) return PK_E_SCRATCH;
    pk_subsampling_buffers b;
    pk_subsampling_carve(T, F, C, S->D, scratch, &b);
    int H2 = ((T + 1) / 2 + 1) / 2, W2 = ((F + 1) / 2 + 1) / 2, H3 = (H2 + 1) / 2, W3 = (W2 + 1) / 2;
    tier_head_channel_last(T, F, C, 0, C, x, S->w0, S->b0, S->w2, S->b2, b.ring, b.head);
    if ((status = linear_forward(&S->pw3, H2 * W2, b.head, &b.lin, b.a))) return status;
    tier_head_dwconv(H2, W2, C, 0, C, 1, b.a, S->w5, S->b5, b.ring, b.b);   /* the head's rings, free now */
    if ((status = linear_forward(&S->pw6, H3 * W3, b.b, &b.lin, b.c))) return status;
    pk_transpose_last2(H3, W3, C, 1, b.c, b.flat);
    return linear_forward(&S->linear, H3, b.flat, &b.lin, y);
}
