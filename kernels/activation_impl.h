/* SiLU, GLU and the softmax's exponentials (contract in activation.h), written once for the
 * SIMD tiers on their float32 lanes (f32_lanes__<tier>.h): each activation__<tier>.c includes
 * its lanes header, defines PK_TIER, then includes this file. pk_expq's main path runs
 * lane-wise, step by step as pk_math.h writes it, on groups whose every input is within +-87;
 * other groups and the tail run the scalar steps. */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including activation_impl.h"
#endif

#include "activation.h"

#define PK_V PK_TIER_HELPER(f32v)
#define PK_IV PK_TIER_HELPER(i32v)
#define PK_LANES PK_TIER_HELPER(f32_lanes)

/* Unsigned 32-bit lanes for pk_expq's integer steps (logical shifts, products modulo 2^32). */
typedef uint32_t PK_TIER_HELPER(u32v) __attribute__((vector_size(sizeof(PK_IV))));
#define PK_UV PK_TIER_HELPER(u32v)

/* pk_expq(v) for lanes with |v| <= 87: pk_math.h's steps. Then |t| < 2^23 and k = t >> 16 is in
 * [-126, 125], so neither limit applies and (k + 126) << 23 is a normal exponent. */
static inline PK_V PK_TIER_HELPER(expq_main_path)(PK_V v) {
    PK_IV t = __builtin_convertvector(PK_TIER_HELPER(f32_round)(v * PK_EXPQ_SCALE), PK_IV);
    PK_UV f = (PK_UV)t & 0xffffu;
    PK_UV p = PK_EXPQ_POLY(f);
    PK_IV bits = (((t >> 16) + 126) << 23) + (PK_IV)(p >> 7);
    return (PK_V)bits;
}

/* pk_sigmoidq(v) = 1 / (1 + pk_expq(-v)), lane-wise (every |v| <= 87). */
static inline PK_V PK_TIER_HELPER(sigmoid_main_path)(PK_V v) {
    return 1.0f / (1.0f + PK_TIER_HELPER(expq_main_path)(-v));
}

int PK_TIER_FN(silu)(int n, const float *x, float *y) {
    if (n < 0) return PK_E_SHAPE;
    int i = 0;
    for (; i + PK_LANES <= n; i += PK_LANES) {
        PK_V v = PK_TIER_HELPER(f32_load)(x + i);
        if (!PK_TIER_HELPER(f32_all_within)(v, PK_SILU_FAST_LIMIT)) {
            for (int j = i; j < i + PK_LANES; j++) y[j] = pk_silu_one(x[j]);
            continue;
        }
        PK_TIER_HELPER(f32_store)(y + i, v * PK_TIER_HELPER(sigmoid_main_path)(v));
    }
    for (; i < n; i++) y[i] = pk_silu_one(x[i]);
    return PK_OK;
}

void PK_TIER_FN(softmax_exp_row)(int n, float *row, float mx) {
    int i = 0;
    for (; i + PK_LANES <= n; i += PK_LANES) {
        PK_V v = PK_TIER_HELPER(f32_load)(row + i) - mx;
        if (!PK_TIER_HELPER(f32_all_within)(v, PK_SILU_FAST_LIMIT)) {
            for (int j = i; j < i + PK_LANES; j++) row[j] = pk_expq(row[j] - mx);
            continue;
        }
        PK_TIER_HELPER(f32_store)(row + i, PK_TIER_HELPER(expq_main_path)(v));
    }
    for (; i < n; i++) row[i] = pk_expq(row[i] - mx);
}

int PK_TIER_FN(glu)(int N, int C, const float *x, float *y) {
    if (N <= 0 || C <= 0) return PK_E_SHAPE;
    for (int n = 0; n < N; n++) {
        const float *a = x + (size_t)n * 2 * C, *g = a + C;
        float *out = y + (size_t)n * C;
        int c = 0;
        for (; c + PK_LANES <= C; c += PK_LANES) {
            PK_V v = PK_TIER_HELPER(f32_load)(g + c);
            if (!PK_TIER_HELPER(f32_all_within)(v, PK_SILU_FAST_LIMIT)) {
                for (int j = c; j < c + PK_LANES; j++) out[j] = a[j] * pk_sigmoidq(g[j]);
                continue;
            }
            PK_V sigmoid = PK_TIER_HELPER(sigmoid_main_path)(v);
            PK_TIER_HELPER(f32_store)(out + c, PK_TIER_HELPER(f32_load)(a + c) * sigmoid);
        }
        for (; c < C; c++) out[c] = a[c] * pk_sigmoidq(g[c]);
    }
    return PK_OK;
}

#undef PK_V
#undef PK_IV
#undef PK_LANES
#undef PK_UV
