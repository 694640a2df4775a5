/* fv5 per-row grid and packed-block validation (see fv5_grid.h). */
#include <math.h>
#include "fv5_grid.h"
#include "fv5_decode.h"

static int magnitude_ok(float lo, float hi) {
    /* isfinite and comparisons are exact everywhere; NaN fails every comparison. */
    return isfinite(lo) && isfinite(hi) && lo >= 0.0f && hi >= lo;
}

int fv5_row_grid(int O, const float *lo, const float *hi, int8_t *lut, float *scale) {
    if (O <= 0 || O > PK_MAX_DIM) return PK_E_SHAPE;
    for (int r = 0; r < O; r++) {
        if (!magnitude_ok(lo[r], hi[r])) return r + 1;
        int8_t *row = lut + (size_t)r * 8;
        for (int i = 0; i < 8; i++) row[i] = 0;
        if (hi[r] == 0.0f) {
            scale[r] = 0.0f;
            continue;
        }
        double ratio = (double)lo[r] / (double)hi[r];
        int best_Q = 1, best_q = 0;
        double best_err = 2.0;
        for (int Q = 1; Q <= FV5_GRID_MAX_Q; Q++) {
            double q = floor(ratio * (double)Q + 0.5);
            double err = fabs(ratio * (double)Q - q) / (double)Q;
            if (err < best_err) {
                best_err = err;
                best_Q = Q;
                best_q = (int)q;
            }
        }
        row[0] = (int8_t)-best_Q;
        row[1] = (int8_t)-best_q;
        row[3] = (int8_t)best_q;
        row[4] = (int8_t)best_Q;
        scale[r] = hi[r] / (float)best_Q;
    }
    return PK_OK;
}

/* One block: every code < 125, bit 7 clear in a short last group, and digits that land on
 * panel vectors >= K/2 zero. */
static int block_ok(int K, const uint8_t *stored) {
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    int full = T / 8;
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int i = 0; i < (T % 8) * 16; i++)
        if (tail[i] & 0x80) return 0;
    int used_in_last = vectors - 3 * (T - 1); /* 1, 2 or 3 panel vectors */
    int limit_last = used_in_last == 1 ? 5 : used_in_last == 2 ? 25 : 125;
    for (int t = 0; t < T; t++) {
        int limit = t == T - 1 ? limit_last : 125;
        for (int j = 0; j < 16; j++)
            if (fv5_code_at(T, stored, t, j) >= limit) return 0;
    }
    return 1;
}

int fv5_check_blocks(int O, int K, const uint8_t *packed) {
    if (O <= 0 || O % 8 != 0 || O > PK_MAX_DIM) return PK_E_SHAPE;
    if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;
    size_t bytes = fv5_block_bytes(K);
    for (int b = 0; b < O / 8; b++)
        if (!block_ok(K, packed + (size_t)b * bytes)) return b + 1;
    return PK_OK;
}
