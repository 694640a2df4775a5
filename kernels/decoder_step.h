/* The TDT decoder's two per-step computations in one call each (issue 23, step 3: fewer
 * crossings per decoded frame). engine/parakeet_tdt/decoder.py composes them from five to ten
 * kernel calls; these make the same calls in the same order from C: the same bits (the test
 * compares them on every tier).
 *
 * prediction_step__<tier>(M, x, state, g, scratch, bytes): one step of the stacked LSTM and
 *   the prediction projection. x [P] is the token's embedding row; state [layers][2][P] holds
 *   each layer's (h, c) and is updated in place; g [J] = proj(h of the top layer). Per layer:
 *   gates = w_ih(x) + 1 * w_hh(h) (pk_add_scaled), pk_lstm_cell(gates, c, h), x = h.
 * joint_best__<tier>(M, f, g, best, scratch, bytes): z = head(relu(f + 1 * g)) for the
 *   projected encoder frame f [J] and prediction g [J]; best[0] = pk_argmax over z's V + 1
 *   token and blank logits, best[1] = pk_argmax over its n_dur duration logits.
 *
 * Scratch: pk_decoder_scratch_bytes(P, J, O) bytes for both (O = the head's rows). Returns 0;
 * 1 + row when a linear's input is not finite (quantize_act's code); PK_E_SHAPE / PK_E_SCRATCH.
 */
#ifndef PK_DECODER_STEP_H
#define PK_DECODER_STEP_H

#include "fused.h"

typedef struct {
    int32_t layers, P, J;
    const pk_linear *w_ih, *w_hh;     /* [layers], each 4P x P, with their biases */
    pk_linear proj;                   /* J x P */
} pk_prediction;

typedef struct {
    int32_t V, n_dur, J;              /* V tokens (blank = V), n_dur durations */
    pk_linear head;                   /* (V + 1 + n_dur) x J */
} pk_joint;

PK_API size_t pk_decoder_scratch_bytes(int P, int J, int O);

#define PK_PREDICTION_STEP_ARGS                                                            \
    const pk_prediction *M, const float *x, float *state, float *g, void *scratch, size_t scratch_bytes
#define PK_JOINT_BEST_ARGS                                                                 \
    const pk_joint *M, const float *f, const float *g, int32_t *best, void *scratch, size_t scratch_bytes

PK_API int prediction_step__scalar(PK_PREDICTION_STEP_ARGS);
PK_API int prediction_step__avx2(PK_PREDICTION_STEP_ARGS);
PK_API int prediction_step__avx512vnni(PK_PREDICTION_STEP_ARGS);
PK_API int prediction_step__wasm_simd128(PK_PREDICTION_STEP_ARGS);
PK_API int prediction_step__wasm_relaxed_simd(PK_PREDICTION_STEP_ARGS);
PK_API int joint_best__scalar(PK_JOINT_BEST_ARGS);
PK_API int joint_best__avx2(PK_JOINT_BEST_ARGS);
PK_API int joint_best__avx512vnni(PK_JOINT_BEST_ARGS);
PK_API int joint_best__wasm_simd128(PK_JOINT_BEST_ARGS);
PK_API int joint_best__wasm_relaxed_simd(PK_JOINT_BEST_ARGS);

/* Where the steps' buffers sit in their scratch (NULL scratch: only the size, returned). */
typedef struct {
    float *a, *b, *h, *z;             /* gates [4P] twice, the joint's hidden [J] and logits [O] */
    pk_linear_buffers lin;
} pk_decoder_buffers;
size_t pk_decoder_carve(int P, int J, int O, void *scratch, pk_decoder_buffers *d);

#endif
