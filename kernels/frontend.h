/* Audio frontend: samples -> normalised log-mel features (docs/parakeet-tdt.md §2,
 * NeMo >= 2.5). One implementation (frontend__scalar.c) built into every module; float steps
 * in the order written here, the project's own FFT and log (pk_math.h).
 *
 *   y[0] = x[0], y[n] = x[n] - preemph * x[n-1]
 *   frame t (0 <= t < N = n_samples / hop): fft_in[pad + m] = window[m] * y[hop*t - win/2 + m]
 *       for m < win (y = 0 outside [0, n_samples)), pad = (n_fft - win) / 2, zeros elsewhere
 *   X = FFT(fft_in) (radix-2, n_fft a power of two; twiddles cos/sin(2 pi k / n_fft) in float64,
 *       rounded to float32); for k <= n_fft/2: mag = sqrtf(re*re + im*im), p[k] = mag * mag
 *   mel[c] = sum_k fb[c][k] * p[k] (k ascending);  F[c][t] = pk_logf(mel[c] + log_guard)
 *   if normalize: per c, in float64 (t ascending): mean = (float)(sum_t F / N),
 *       var = sum_t (F - mean)^2 / (N - 1), std = (float)sqrt(var) (0 when N == 1);
 *       then in float32 F = (F - mean) / (std + norm_eps)
 *   features[c][t] (row-major [n_mels][N])
 *
 * Returns 0, i+1 for the first non-finite sample i (nothing defined is written), or a
 * negative PK_E code. Scratch: pk_frontend_scratch_bytes(n_samples, n_fft).
 */
#ifndef PK_FRONTEND_H
#define PK_FRONTEND_H

#include "common.h"

PK_API size_t pk_frontend_scratch_bytes(int n_samples, int n_fft);
PK_API int pk_frontend(int n_samples, const float *samples, const float *window, int win, int n_fft,
                       int hop, const float *fb, int n_mels, float preemph, float log_guard,
                       float norm_eps, int normalize, float *features, void *scratch, size_t scratch_bytes);

#endif
