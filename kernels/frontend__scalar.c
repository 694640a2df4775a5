/* Audio frontend (contract in frontend.h). */
#include "frontend.h"
#include "pk_math.h"

size_t pk_frontend_scratch_bytes(int n_samples, int n_fft) {
    /* y[n_samples], re[n_fft], im[n_fft], cos/sin twiddles[n_fft/2 each], power[n_fft/2+1] */
    return (size_t)64 + 4 * ((size_t)n_samples + 4 * (size_t)n_fft + 8);
}

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* In-place radix-2 decimation-in-time FFT of (re, im), n a power of two. */
static void fft(int n, float *re, float *im, const float *tw_cos, const float *tw_sin) {
    for (int i = 1, j = 0; i < n; i++) {                      /* bit-reversal permutation */
        int bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            float t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        int half = len >> 1, step = n / len;
        for (int start = 0; start < n; start += len) {
            for (int k = 0; k < half; k++) {
                float wr = tw_cos[k * step], wi = -tw_sin[k * step];   /* exp(-2 pi i k / len) */
                int a = start + k, b = a + half;
                float xr = re[b] * wr - im[b] * wi;
                float xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] = re[a] + xr;
                im[a] = im[a] + xi;
            }
        }
    }
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

    float *y = (float *)pk_align64(scratch);
    float *re = y + n_samples, *im = re + n_fft;
    float *tw_cos = im + n_fft, *tw_sin = tw_cos + n_fft / 2, *power = tw_sin + n_fft / 2;
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
    for (int t = 0; t < N; t++) {
        for (int i = 0; i < n_fft; i++) re[i] = im[i] = 0.0f;
        int first = hop * t - win / 2;
        for (int m = 0; m < win; m++) {
            int s = first + m;
            if (s >= 0 && s < n_samples) re[pad + m] = window[m] * y[s];
        }
        fft(n_fft, re, im, tw_cos, tw_sin);
        int finite = 1;
        for (int k = 0; k < bins; k++) {
            float mag = sqrtf(re[k] * re[k] + im[k] * im[k]);
            power[k] = mag * mag;
            finite &= (pk_float_to_bits(power[k]) & 0x7fffffffu) < 0x7f800000u;
        }
        for (int c = 0; c < n_mels; c++) {
            const float *row = fb + (size_t)c * bins;
            float mel = 0.0f;
            int k0 = 0, k1 = bins - 1;
            if (spans && finite) k0 = span_lo[c], k1 = span_hi[c];
            for (int k = k0; k <= k1; k++) mel = mel + row[k] * power[k];
            features[(size_t)c * N + t] = pk_logf(mel + log_guard);
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
