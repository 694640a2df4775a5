/* Polyphase windowed-sinc resampler (contract in resample.h). */
#include "pk_math.h"
#include "resample.h"

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int pk_resample_plan(int in_rate, int out_rate, int *in, int *out, int *half) {
    if (in_rate <= 0 || out_rate <= 0 || in_rate > 768000 || out_rate > 768000) return PK_E_SHAPE;
    int g = gcd(in_rate, out_rate);
    *in = in_rate / g;
    *out = out_rate / g;
    if (*in > 64 * *out || *out > 64 * *in) return PK_E_SHAPE;      /* ratio within 1/64..64 */
    double scale = *out < *in ? (double)*out / (double)*in : 1.0;
    *half = (int)ceil(16.0 / scale);                                /* <= PK_RESAMPLE_MAX_HALF */
    return PK_OK;
}

/* Tap i of phase r, before normalisation (float64). */
static double tap(int in, int out, int half, int r, int i) {
    const double pi = 3.14159265358979323846;
    double fc = 0.95 * (out < in ? (double)out / (double)in : 1.0);
    double d = (double)(i - half + 1) - (double)r / (double)out;
    double x = pi * fc * d;
    double sinc = d == 0.0 ? 1.0 : pk_sin(x) / x;
    double u = d / (double)half;
    double w = (u <= -1.0 || u >= 1.0) ? 0.0 : 0.42 + 0.5 * pk_cos(pi * u) + 0.08 * pk_cos(2.0 * pi * u);
    return fc * sinc * w;
}

int pk_resample_table(int in, int out, int half, float *table) {
    if (in <= 0 || out <= 0 || half <= 0 || half > PK_RESAMPLE_MAX_HALF) return PK_E_SHAPE;
    int taps = 2 * half;
    for (int r = 0; r < out; r++) {
        double sum = 0.0;                                  /* i ascending */
        for (int i = 0; i < taps; i++) sum += tap(in, out, half, r, i);
        for (int i = 0; i < taps; i++) table[(size_t)r * taps + i] = (float)(tap(in, out, half, r, i) / sum);
    }
    return PK_OK;
}

int pk_resample(int in, int out, int half, const float *table, const float *x, int n_x,
                int q0, int r0, int n_out, float *y) {
    if (in <= 0 || out <= 0 || half <= 0 || n_x < 0 || n_out < 0 || r0 < 0 || r0 >= out) return PK_E_SHAPE;
    int taps = 2 * half;
    int q = q0, r = r0;
    for (int j = 0; j < n_out; j++) {
        const float *h = table + (size_t)r * taps;
        int first = q - half + 1;
        float acc = 0.0f;
        for (int i = 0; i < taps; i++) {
            int s = first + i;
            if (s < 0 || s >= n_x) continue;
            float v = x[s];
            if ((pk_float_to_bits(v) & 0x7fffffffu) >= 0x7f800000u) return s + 1;
            acc = acc + v * h[i];
        }
        y[j] = acc;
        r += in;                          /* next output: position advances by in/out */
        while (r >= out) {
            r -= out;
            q += 1;
        }
    }
    return PK_OK;
}
