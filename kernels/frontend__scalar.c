/* Audio frontend (contract in frontend.h). */
#include "frontend.h"
#include "pk_math.h"

/* Frames are transformed FRAME_LANES at a time, each value of a frame in its own lane of
 * [index][FRAME_LANES] arrays: every loop over lanes applies one operation to independent
 * frames, so compilers vectorise it (SSE/AVX natively, -msimd128 in the SIMD wasm modules)
 * while each frame sees exactly the operations, in the order, that contract gives one frame. */
enum { FRAME_LANES = 8 };

size_t pk_frontend_scratch_bytes(int n_samples, int n_fft) {
    /* y[n_samples], re and im [n_fft][lanes], cos/sin twiddles [n_fft/2 each],
     * power [n_fft/2 + 1][lanes] */
    size_t lanes = FRAME_LANES;
    return (size_t)64 + 4 * ((size_t)n_samples + 2 * (size_t)n_fft * lanes + (size_t)n_fft +
                             ((size_t)n_fft / 2 + 1) * lanes + 8);
}

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* One butterfly in every lane: (a, b) <- (a + w b, a - w b), w = wr + i wi. */
static inline void butterfly_lanes(float *restrict ra, float *restrict ia, float *restrict rb, float *restrict ib,
                                   float wr, float wi) {
    for (int l = 0; l < FRAME_LANES; l++) {
        float xr = rb[l] * wr - ib[l] * wi;
        float xi = rb[l] * wi + ib[l] * wr;
        rb[l] = ra[l] - xr;
        ib[l] = ia[l] - xi;
        ra[l] = ra[l] + xr;
        ia[l] = ia[l] + xi;
    }
}

/* In-place radix-2 decimation-in-time FFT of (re, im) [n][FRAME_LANES], n a power of two:
 * FRAME_LANES independent transforms, lane by lane the steps of one. */
static void fft_lanes(int n, float *re, float *im, const float *tw_cos, const float *tw_sin) {
    enum { L = FRAME_LANES };
    for (int i = 1, j = 0; i < n; i++) {                      /* bit-reversal permutation */
        int bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j)
            for (int l = 0; l < L; l++) {
                float t = re[i * L + l]; re[i * L + l] = re[j * L + l]; re[j * L + l] = t;
                t = im[i * L + l]; im[i * L + l] = im[j * L + l]; im[j * L + l] = t;
            }
    }
    for (int len = 2; len <= n; len <<= 1) {
        int half = len >> 1, step = n / len;
        for (int start = 0; start < n; start += len)
            for (int k = 0; k < half; k++) {
                int a = (start + k) * L, b = a + half * L;
                butterfly_lanes(re + a, im + a, re + b, im + b, tw_cos[k * step], -tw_sin[k * step]);
            }                                                 /* w = exp(-2 pi i k / len) */
    }
}

/* mel[l] = sum over k in [k0, k1] of row[k] * power[k][l] (k ascending) for every lane. */
static void mel_lanes(const float *row, const float *power, int k0, int k1, float *mel) {
    for (int l = 0; l < FRAME_LANES; l++) mel[l] = 0.0f;
    for (int k = k0; k <= k1; k++)
        for (int l = 0; l < FRAME_LANES; l++) mel[l] = mel[l] + row[k] * power[(size_t)k * FRAME_LANES + l];
}

int pk_frontend(int n_samples, const float *samples, const float *window, int win, int n_fft,
                int hop, const float *fb, int n_mels, float preemph, float log_guard, float norm_eps,
                int normalize, float *features, void *scratch, size_t scratch_bytes) {
    if (n_samples <= 0 || hop <= 0 || win <= 0 || win > n_fft || !is_pow2(n_fft) || n_mels <= 0)
        return PK_E_SHAPE;
    int N = n_samples / hop;
    if (N <= 0) return PK_E_SHAPE;
    if (scratch_bytes < pk_frontend_scratch_bytes(n_samples, n_fft)) return PK_E_SCRATCH;
    for (int i = 0; i < n_samples; i++)
        if ((pk_float_to_bits(samples[i]) & 0x7fffffffu) >= 0x7f800000u) return i + 1;

    enum { L = FRAME_LANES };
    float *y = (float *)pk_align64(scratch);
    float *re = y + n_samples, *im = re + (size_t)n_fft * L;
    float *tw_cos = im + (size_t)n_fft * L, *tw_sin = tw_cos + n_fft / 2, *power = tw_sin + n_fft / 2;
    int bins = n_fft / 2 + 1, pad = (n_fft - win) / 2;

    y[0] = samples[0];
    for (int i = 1; i < n_samples; i++) y[i] = samples[i] - preemph * samples[i - 1];
    for (int k = 0; k < n_fft / 2; k++) {
        double angle = 6.283185307179586476925 * (double)k / (double)n_fft;
        tw_cos[k] = (float)pk_cos(angle);
        tw_sin[k] = (float)pk_sin(angle);
    }
    /* Each filter's nonzero span [lo, hi]: outside it the terms row[k] * power[k] are +-0 while
     * power is finite, and adding +-0 to a sum that starts at +0 leaves it unchanged (it can
     * never be -0), so the span alone gives the same bits. A frame with an infinite power (an
     * overflowing input) takes the full sum, where 0 * inf makes NaN as it always did. */
    enum { MAX_SPAN_MELS = 256 };
    int span_lo[MAX_SPAN_MELS], span_hi[MAX_SPAN_MELS];
    int spans = n_mels <= MAX_SPAN_MELS;
    for (int c = 0; spans && c < n_mels; c++) {
        const float *row = fb + (size_t)c * bins;
        int lo = 0, hi = -1;
        for (int k = 0; k < bins; k++)
            if (row[k] != 0.0f) { if (hi < 0) lo = k; hi = k; }
        span_lo[c] = lo;
        span_hi[c] = hi;
    }
    for (int t0 = 0; t0 < N; t0 += L) {                      /* frames t0 .. t0 + L - 1 */
        int frames = N - t0 < L ? N - t0 : L;                 /* lanes past N transform zeros */
        for (size_t i = 0; i < (size_t)n_fft * L; i++) re[i] = im[i] = 0.0f;
        for (int l = 0; l < frames; l++) {
            int first = hop * (t0 + l) - win / 2;
            for (int m = 0; m < win; m++) {
                int s = first + m;
                if (s >= 0 && s < n_samples) re[(size_t)(pad + m) * L + l] = window[m] * y[s];
            }
        }
        fft_lanes(n_fft, re, im, tw_cos, tw_sin);
        int finite[L];
        for (int l = 0; l < L; l++) finite[l] = 1;
        for (int k = 0; k < bins; k++)
            for (int l = 0; l < L; l++) {
                size_t i = (size_t)k * L + l;
                float mag = sqrtf(re[i] * re[i] + im[i] * im[i]);
                power[i] = mag * mag;
            }
        for (size_t i = 0; i < (size_t)bins * L; i++)
            finite[i % L] &= (pk_float_to_bits(power[i]) & 0x7fffffffu) < 0x7f800000u;
        int all_finite = 1;
        for (int l = 0; l < L; l++) all_finite &= finite[l];
        for (int c = 0; c < n_mels; c++) {
            const float *row = fb + (size_t)c * bins;
            float mel[L], full[L];
            if (spans) mel_lanes(row, power, span_lo[c], span_hi[c], mel);
            if (!spans || !all_finite) mel_lanes(row, power, 0, bins - 1, full);
            for (int l = 0; l < frames; l++) {
                float v = spans && finite[l] ? mel[l] : full[l];
                features[(size_t)c * N + t0 + l] = pk_logf(v + log_guard);
            }
        }
    }
    if (!normalize) return PK_OK;
    for (int c = 0; c < n_mels; c++) {
        float *row = features + (size_t)c * N;
        double sum = 0.0;                       /* float64 sums: exact enough that a constant */
        for (int t = 0; t < N; t++) sum += row[t];   /* row (silence) normalises to exact 0 */
        float mean = (float)(sum / (double)N);
        float std = 0.0f;
        if (N > 1) {
            double sq = 0.0;
            for (int t = 0; t < N; t++) {
                double d = (double)row[t] - (double)mean;
                sq += d * d;
            }
            std = (float)sqrt(sq / (double)(N - 1));
        }
        float denom = std + norm_eps;
        for (int t = 0; t < N; t++) row[t] = (row[t] - mean) / denom;
    }
    return PK_OK;
}
