/* Anti-aliasing resampler: any integer input rate to any integer output rate, a polyphase
 * windowed-sinc filter. One implementation (resample__scalar.c) built into every module;
 * usable for whole files and for streams (the caller slides a window over the input).
 *
 * Rates reduce by their gcd to in : out. Output sample j sits at input position j * in / out:
 * base q = floor(j * in / out), phase r = (j * in) mod out. With half = the filter half-width
 * in input samples and taps = 2 * half:
 *     y[j] = sum_{i=0..taps-1} x[q - half + 1 + i] * table[r][i]      (i ascending, float32)
 * where x outside the given buffer counts as 0.
 *
 * The table (pk_resample_table, float64 then rounded to float32): cutoff fc = 0.95 *
 * min(1, out/in) (cycles per input sample / 0.5), for tap i at distance
 * d = (q - half + 1 + i) - (q + r / out) = i - half + 1 - r/out:
 *     h = fc * sinc(fc * d) * blackman(d / half),  blackman(u) = 0.42 + 0.5 cos(pi u) + 0.08 cos(2 pi u)
 * and each phase's taps are divided by their sum (DC gain 1). half = ceil(16 / min(1, out/in)).
 * sin/cos are pk_math.h's.
 */
#ifndef PK_RESAMPLE_H
#define PK_RESAMPLE_H

#include "common.h"

#define PK_RESAMPLE_MAX_HALF 1024

/* Reduced rates and filter size: writes in, out (reduced) and half; returns 0 or PK_E_SHAPE
 * (rates outside 1..768000, or a ratio beyond 64). Table size: out * 2 * half floats. */
PK_API int pk_resample_plan(int in_rate, int out_rate, int *in, int *out, int *half);
PK_API int pk_resample_table(int in, int out, int half, float *table);

/* n_out outputs starting at base q0 (index into x) and phase r0 (0 <= r0 < out); x has n_x
 * samples. Returns 0, or the index+1 of the first non-finite input sample read. */
PK_API int pk_resample(int in, int out, int half, const float *table, const float *x, int n_x,
                       int q0, int r0, int n_out, float *y);

#endif
