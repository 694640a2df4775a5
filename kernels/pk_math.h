/* The project's own transcendental functions (libm differs between glibc and emscripten's
 * musl in the last bit; these do not). Only IEEE-exact operations are used - +, -, *, /,
 * sqrt, nearbyint, bit manipulation - in a fixed order, built with -ffp-contract=off, so
 * every target computes the same bits.
 *
 *   pk_expf(x)   float32, |error| < 2 ulp on the normal range; exp(x) = 2^k * p(r),
 *                r = x - k*ln2 (Cody-Waite, 2-part ln2), p = Taylor degree 7 (Horner).
 *   pk_logf(x)   float32, |error| < 2 ulp; x = m * 2^e, m in [sqrt(1/2), sqrt(2)),
 *                log(m) = 2 atanh(s), s = (m-1)/(m+1), series to s^9.
 *   pk_sin(x), pk_cos(x)   float64, for |x| < 2^20; reduction by pi/2 with a 3-part
 *                constant, Taylor series to x^15 / x^16 on [-pi/4, pi/4].
 *   pk_tanhf, pk_sigmoidf   from pk_expf, in the order written (the decoder's LSTM).
 *   pk_expq(x), pk_sigmoidq(x)   exp with a fixed-point core, the encoder's (softmax, SiLU,
 *                GLU): one float multiply, then 32-bit integer steps; relative error < 1e-5.
 * Special values: expf(NaN) = NaN, expf(+inf) = +inf, expf(-inf) = 0, overflow -> +inf,
 * underflow -> 0 or a subnormal; logf(0) = -inf, logf(x < 0) = NaN, logf(+inf) = +inf.
 */
#ifndef PK_MATH_H
#define PK_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float pk_bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t pk_float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* 2^k for integer k in [-126, 127], exactly. */
static inline float pk_pow2i(int k) { return pk_bits_to_float((uint32_t)(k + 127) << 23); }

/* 2^e as a double for integer e in [-1022, 1023], exactly. */
static inline double pk_pow2d(int e) {
    uint64_t u = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* A float32's biased exponent field: 0 for zeros and subnormals, 255 for inf and NaN. */
static inline unsigned pk_f32_field(float x) { return (pk_float_to_bits(x) >> 23) & 0xffu; }

/* pk_expf's steps after k = round(x / ln 2), written once for this function and for the SIMD
 * tiers' lanes (activation_impl.h): any operand type whose + - * are float32 IEEE operations.
 * r = x - k ln 2, ln 2 in two parts (k times the high part is exact); p(r) = the Taylor series
 * to r^7 / 7!, Horner from 1/7!. */
#define PK_EXPF_LOG2E 1.44269502162933349609375f
#define PK_EXPF_REDUCED(x, k) ((x) - (k) * 0.693145751953125f - (k) * 1.428606765330187045e-06f)
#define PK_EXPF_TAYLOR(r)                                                                    \
    (((((((1.98412698e-4f * (r) + 1.38888889e-3f) * (r) + 8.33333377e-3f) * (r) + 4.16666679e-2f) \
         * (r) + 1.66666672e-1f) * (r) + 0.5f) * (r) + 1.0f) * (r) + 1.0f)

static inline float pk_expf(float x) {
    if (x != x) return x;                                    /* NaN */
    if (x > 88.72283935546875f) return pk_bits_to_float(0x7f800000u);
    if (x < -103.97208404541016f) return 0.0f;
    float k = nearbyintf(x * PK_EXPF_LOG2E);                 /* round(x / ln 2) */
    float r = PK_EXPF_REDUCED(x, k);
    float p = PK_EXPF_TAYLOR(r);
    int ki = (int)k;
    if (ki > 127) return (p * pk_pow2i(127)) * pk_pow2i(ki - 127);
    if (ki < -126) return (p * pk_pow2i(-126)) * pk_pow2i(ki + 126);
    return p * pk_pow2i(ki);
}

static inline float pk_logf(float x) {
    uint32_t bits = pk_float_to_bits(x);
    if (x != x || x < 0.0f) return pk_bits_to_float(0x7fc00000u);     /* NaN */
    if (x == 0.0f) return pk_bits_to_float(0xff800000u);             /* -inf */
    if (bits == 0x7f800000u) return x;                                /* +inf */
    int e = 0;
    if (bits < 0x00800000u) {                                         /* subnormal: scale up */
        x = x * 8388608.0f;                                           /* 2^23, exact */
        bits = pk_float_to_bits(x);
        e = -23;
    }
    e += (int)(bits >> 23) - 127;
    float m = pk_bits_to_float((bits & 0x007fffffu) | 0x3f800000u);  /* [1, 2) */
    if (m > 1.41421353816986083984375f) {                             /* > sqrt(2): halve */
        m = m * 0.5f;
        e += 1;
    }
    float f = m - 1.0f;                                               /* exact */
    float s = f / (2.0f + f);
    float z = s * s;
    float R = 0.111111111f;                                           /* 1/9, 1/7, 1/5, 1/3 */
    R = R * z + 0.142857143f;
    R = R * z + 0.2f;
    R = R * z + 0.333333343f;
    R = R * z;
    float t = 2.0f * s;                                               /* log(m) = 2s(1 + R) */
    float log_m = t + t * R;
    float ef = (float)e;
    return ef * 0.693145751953125f + (log_m + ef * 1.428606765330187045e-06f);
}

/* sin and cos of r in [-pi/4, pi/4] (Taylor, Horner in z = r^2). */
static inline double pk_sin_kernel(double r) {
    double z = r * r;
    double p = 7.6471637318198164759e-13;                             /* 1/15! */
    p = p * z - 1.6059043836821614599e-10;                            /* -1/13! */
    p = p * z + 2.5052108385441718775e-08;                            /* 1/11! */
    p = p * z - 2.7557319223985890653e-06;                            /* -1/9! */
    p = p * z + 1.9841269841269841270e-04;                            /* 1/7! */
    p = p * z - 8.3333333333333333333e-03;                            /* -1/5! */
    p = p * z + 1.6666666666666666667e-01;                            /* 1/3! */
    return r - (r * z) * p;
}

static inline double pk_cos_kernel(double r) {
    double z = r * r;
    double p = 4.7794773323873852974e-14;                             /* 1/16! */
    p = p * z - 1.1470745597729724714e-11;                            /* -1/14! */
    p = p * z + 2.0876756987868098979e-09;                            /* 1/12! */
    p = p * z - 2.7557319223985890653e-07;                            /* -1/10! */
    p = p * z + 2.4801587301587301587e-05;                            /* 1/8! */
    p = p * z - 1.3888888888888888889e-03;                            /* -1/6! */
    p = p * z + 4.1666666666666666667e-02;                            /* 1/4! */
    p = p * z - 0.5;                                                  /* -1/2! */
    return 1.0 + z * p;
}

/* x = n * pi/2 + r, |r| <= pi/4 (+ rounding), for |x| < 2^20: each n * part is exact. */
static inline double pk_reduce_pio2(double x, int *quadrant) {
    double n = nearbyint(x * 6.36619772367581382433e-01);            /* 2/pi */
    double r = x - n * 1.57079632673412561417e+00;                    /* pi/2, first 33 bits */
    r = r - n * 6.07710050630396597660e-11;                           /* next 33 bits */
    r = r - n * 2.02226624879595063154e-21;                           /* the rest */
    *quadrant = (int)((int64_t)n & 3);
    return r;
}

static inline double pk_sin(double x) {
    int q;
    double r = pk_reduce_pio2(x, &q);
    switch (q) {
    case 0: return pk_sin_kernel(r);
    case 1: return pk_cos_kernel(r);
    case 2: return -pk_sin_kernel(r);
    default: return -pk_cos_kernel(r);
    }
}

static inline double pk_cos(double x) {
    int q;
    double r = pk_reduce_pio2(x, &q);
    switch (q) {
    case 0: return pk_cos_kernel(r);
    case 1: return -pk_sin_kernel(r);
    case 2: return -pk_cos_kernel(r);
    default: return pk_sin_kernel(r);
    }
}

/* tanh(x) = 1 - 2 / (exp(2x) + 1); sigmoid(x) = 1 / (1 + exp(-x)). Saturate cleanly. */
static inline float pk_tanhf(float x) {
    if (x > 9.0f) return 1.0f;
    if (x < -9.0f) return -1.0f;
    return 1.0f - 2.0f / (pk_expf(2.0f * x) + 1.0f);
}

static inline float pk_sigmoidf(float x) { return 1.0f / (1.0f + pk_expf(-x)); }

/* pk_expq: the encoder's exponential (the softmax's e = exp(x - max), the SiLU's and the GLU's
 * sigmoids), defined so that after one float multiply every step is 32-bit integer arithmetic:
 * a GPU then runs it in a few dozen integer operations where pk_expf's float reduction and
 * polynomial cost it about 1,500 in float emulation (docs/kernels.md, "The encoder's
 * exponential: a fixed-point core").
 *
 *   x is NaN: x.   x > 88.72f: +inf.   x < -88.0f: 0.
 *   t = (int32)nearbyintf(x * PK_EXPQ_SCALE)      x log2(e) in Q16, |t| < 2^23 (exact)
 *   k = t >> 16 (floor), f = t & 0xffff           x log2(e) = k + f / 2^16
 *   k < -126: 0.
 *   p = PK_EXPQ_POLY(f)                           2^(f / 2^16) in Q30, in [2^30, 2^31)
 *   bits = ((k + 126) << 23) + (p >> 7)           2^k p / 2^30, the mantissa truncated: the
 *                                                 carry of p's leading bit makes the exponent k + 127
 *
 * Relative error below 1e-5 (9.2e-6 measured, near x = 87): the Q16 argument's rounding (at most
 * 2^-17 ln 2 = 5.3e-6) plus the float multiply's (up to 2^-25 of |t|: 2.7e-6 at the range's
 * ends), the degree-5 polynomial (8.4e-8; fitted for relative error with 2^0 exact, so
 * pk_expq(0) = 1 exactly), the truncations (< 2^-23 each). The int8 activations the encoder's
 * linears take are 2^-8 steps. tests/test_frontend_math.py measures it against float64. */
#define PK_EXPQ_SCALE 94548.4609375f          /* log2(e) * 2^16, rounded to float */

/* One Horner step in Q30: p * f / 2^16 + c for p < 2^31, f < 2^16, with p split in 16-bit halves
 * so that each product fits 32 bits (p_hi f < 2^31, p_lo f < 2^32), the low product's fraction
 * truncated. Any unsigned 32-bit operand type: uint32_t, u32 in WGSL, a SIMD tier's lanes. */
#define PK_EXPQ_STEP(p, f, c) (((p) >> 16) * (f) + ((((p) & 0xffffu) * (f)) >> 16) + (c))
#define PK_EXPQ_POLY(f)                                                                      \
    PK_EXPQ_STEP(PK_EXPQ_STEP(PK_EXPQ_STEP(PK_EXPQ_STEP(PK_EXPQ_STEP(                       \
        2004792u, f, 9682152u), f, 59914413u), f, 257874763u), f, 744265531u), f, 1073741824u)

static inline float pk_expq(float x) {
    if (x != x) return x;                                    /* NaN */
    if (x > 88.72f) return pk_bits_to_float(0x7f800000u);
    if (x < -88.0f) return 0.0f;
    int32_t t = (int32_t)nearbyintf(x * PK_EXPQ_SCALE);
    int32_t k = t >> 16;                                     /* arithmetic shift: floor */
    if (k < -126) return 0.0f;
    uint32_t f = (uint32_t)t & 0xffffu;
    uint32_t p = PK_EXPQ_POLY(f);
    return pk_bits_to_float(((uint32_t)(k + 126) << 23) + (p >> 7));
}

/* The encoder's sigmoid: 1 / (1 + pk_expq(-x)), in that order. */
static inline float pk_sigmoidq(float x) { return 1.0f / (1.0f + pk_expq(-x)); }

#endif
