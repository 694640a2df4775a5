/* The fv5 block decode (contract in fv5_decode.h), written once for the SIMD tiers: each file
 * that needs it defines PK_TIER (whose staging the fused decode writes: pk_stage_kb_<tier>
 * stages a k-block's four panel vectors, gemm_tile__<tier>.h) and PK_DECODE_LANES (whose
 * 16-byte vector steps decode: avx2, or wasm_simd128, fv5_decode__<lanes>.h), then includes
 * this file, and gets pk_fv5_decode_<tier>. The VNNI tier decodes with AVX2's steps into its own staging, the
 * relaxed-SIMD tier with SIMD128's. Same bytes as the scalar tier.
 *
 * Fast path: code vectors come in quads t = 4u..4u+3 (two per stored group of eight); a quad
 * makes panel vectors 12u..12u+11, whose row pairs are 0,1,2,3,0,1,... - known at compile time
 * - and which are exactly the k-blocks 3u..3u+2, staged as soon as they are decoded. Quads that
 * reach past K/2 and the short last group take the general path (panel vector by panel vector,
 * into the panel buffer), whose k-blocks are staged at the end.
 *
 * A decode lanes' steps (fv5_decode__<lanes>.h, pk_<name>_<lanes>): the 16-byte vector type
 * u8x16, load16 and store16, unpack_group (7 stored vectors -> 8 code vectors),
 * digit_indices (a code vector's three digits as table indices) and swizzle (a row-pair
 * table at those indices). */
#if !defined(PK_TIER) || !defined(PK_DECODE_LANES)
#error "define PK_TIER and PK_DECODE_LANES before including fv5_decode_impl.h"
#endif

#define PK_DECODE_STEP(name) PK_HELPER_OF(name, PK_DECODE_LANES)

/* General path: the (up to three) panel vectors of code vector t, into the panel buffer. */
static inline void PK_TIER_HELPER(emit_code)(PK_DECODE_STEP(u8x16) x, int t, int vectors,
                                             const PK_DECODE_STEP(u8x16) *table, int8_t *panel) {
    PK_DECODE_STEP(u8x16) d[3];
    PK_DECODE_STEP(digit_indices)(x, d);
    for (int i = 0; i < 3; i++) {
        int v = 3 * t + i;
        if (v >= vectors) return;
        PK_DECODE_STEP(store16)(panel + (size_t)v * 16, PK_DECODE_STEP(swizzle)(table[v & 3], d[i]));
    }
}

/* Fast path: quad u -> panel vectors P[0..11] (row pair of P[i] is i % 4). */
static inline void PK_TIER_HELPER(decode_quad)(const PK_DECODE_STEP(u8x16) *x, const PK_DECODE_STEP(u8x16) *table,
                                               PK_DECODE_STEP(u8x16) *P) {
    for (int a = 0; a < 4; a++) {
        PK_DECODE_STEP(u8x16) d[3];
        PK_DECODE_STEP(digit_indices)(x[a], d);
        for (int i = 0; i < 3; i++) P[3 * a + i] = PK_DECODE_STEP(swizzle)(table[(3 * a + i) & 3], d[i]);
    }
}

/* Spec panel k-blocks kb_begin .. kb_end - 1 -> the tier's staging. */
static inline void PK_TIER_HELPER(stage_from_panel)(int kb_begin, int kb_end, const int8_t *panel, int8_t *stage) {
    for (int kb = kb_begin; kb < kb_end; kb++) {
        const int8_t *p = panel + (size_t)kb * 64;
        PK_TIER_HELPER(stage_kb)(PK_DECODE_STEP(load16)(p), PK_DECODE_STEP(load16)(p + 16),
                                 PK_DECODE_STEP(load16)(p + 32), PK_DECODE_STEP(load16)(p + 48),
                                 stage + (size_t)kb * 64);
    }
}

/* Decode one block. stage == NULL: write the spec panel. Otherwise write the tier's staging
 * (panel is then only scratch for the general path). */
static inline void PK_TIER_HELPER(fv5_decode)(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel,
                                              int8_t *stage) {
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    int full = T / 8;
    PK_DECODE_STEP(u8x16) table[4];
    for (int p = 0; p < 4; p++) table[p] = PK_DECODE_STEP(load16)(lut + 16 * p);
    int kb_staged = 0;
    for (int g = 0; g < full; g++) {
        PK_DECODE_STEP(u8x16) x[8];
        PK_DECODE_STEP(unpack_group)(stored + (size_t)g * 7 * 16, x);
        for (int h = 0; h < 2; h++) {
            int u = 2 * g + h;
            if (12 * u + 11 < vectors) {
                PK_DECODE_STEP(u8x16) P[12];
                PK_TIER_HELPER(decode_quad)(x + 4 * h, table, P);
                if (stage) {
                    for (int c = 0; c < 3; c++)
                        PK_TIER_HELPER(stage_kb)(P[4 * c], P[4 * c + 1], P[4 * c + 2], P[4 * c + 3],
                                                 stage + (size_t)(3 * u + c) * 64);
                    kb_staged = 3 * u + 3;
                } else {
                    for (int i = 0; i < 12; i++) PK_DECODE_STEP(store16)(panel + (size_t)(12 * u + i) * 16, P[i]);
                }
            } else {
                for (int a = 0; a < 4; a++) PK_TIER_HELPER(emit_code)(x[4 * h + a], 4 * u + a, vectors, table, panel);
            }
        }
    }
    const uint8_t *tail = stored + (size_t)full * 7 * 16;
    for (int m = 0; m < T % 8; m++)
        PK_TIER_HELPER(emit_code)(PK_DECODE_STEP(load16)(tail + 16 * m), 8 * full + m, vectors, table, panel);
    if (stage) PK_TIER_HELPER(stage_from_panel)(kb_staged, K / 8, panel, stage);
}

#undef PK_DECODE_STEP
