/* The TDT decoder's two per-step computations in one call each (fewer
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

#include "linear_call.h"

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

/* The whole greedy decoding in one call per stretch of frames (one crossing per
 * utterance slice, not two per decoded frame).
 *
 * tdt_greedy__<tier>(M, f, T, max_symbols, t_stop, cur, state, g, tokens, capacity, scratch,
 *   bytes) runs NeMo's TDT greedy rules - engine/parakeet_tdt/decoder.py greedy_rules, step for
 *   step: a blank of duration 0 advances 1 frame, blanks skip frames with the state fixed, at
 *   most max_symbols tokens on one frame - from the cursor while cur->t < t_stop, on the
 *   projected encoder output f [T][J]. Each emitted token is appended to tokens [capacity][3]
 *   as (id, frame, duration) at cur->n_tokens and advances the prediction network through
 *   prediction_step__<tier> on its embedding row, computed as float(q) * scale (the engine's
 *   float32 products). state and g are the prediction network's, already advanced on the start
 *   symbol. Returns with cur->done = 1 once the rules end (t >= T, or only blanks were left);
 *   called again with a later t_stop it continues exactly where it stopped, so the caller can
 *   check for cancellation between stretches.
 * Scratch: pk_tdt_scratch_bytes(P, J, O). Returns 0; PK_TDT_PREDICTION_NONFINITE or
 * PK_TDT_JOINT_NONFINITE when a linear's input is not finite; PK_E_SHAPE (bad sizes, a
 * duration or id outside its table, capacity reached) / PK_E_SCRATCH. */
typedef struct {
    const pk_prediction *pred;
    const pk_joint *joint;
    const int8_t *embedding;          /* [V + 1][P] int8 rows; row V is the blank (start symbol) */
    const float *embedding_scale;     /* [V + 1] */
    const int32_t *durations;         /* [n_dur] frames each, 0 <= d <= PK_MAX_DIM */
} pk_tdt_decoder;

typedef struct {
    int32_t t, last_frame, count;     /* greedy_rules' loop variables (start: 0, -1, 0) */
    int32_t n_tokens;                 /* tokens written so far */
    int32_t done;                     /* 1 once the rules have ended */
} pk_tdt_cursor;

enum { PK_TDT_PREDICTION_NONFINITE = 1, PK_TDT_JOINT_NONFINITE = 2 };

PK_API size_t pk_tdt_scratch_bytes(int P, int J, int O);

#define PK_TDT_GREEDY_ARGS                                                                 \
    const pk_tdt_decoder *M, const float *f, int T, int max_symbols, int t_stop, pk_tdt_cursor *cur, \
        float *state, float *g, int32_t *tokens, int capacity, void *scratch, size_t scratch_bytes

PK_API int tdt_greedy__scalar(PK_TDT_GREEDY_ARGS);
PK_API int tdt_greedy__avx2(PK_TDT_GREEDY_ARGS);
PK_API int tdt_greedy__avx512vnni(PK_TDT_GREEDY_ARGS);
PK_API int tdt_greedy__wasm_simd128(PK_TDT_GREEDY_ARGS);
PK_API int tdt_greedy__wasm_relaxed_simd(PK_TDT_GREEDY_ARGS);

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
