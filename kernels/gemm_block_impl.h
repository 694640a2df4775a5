/* One 8-row block of a staged GEMM, written once for every staged-tile tier (fv5_gemm_impl.h
 * and int8_gemm_impl.h include it): the tier's tile over all N tokens, pk_tile_tokens_<tier>
 * at a time, each token's 8 sums dequantised into y rows o0 .. o0 + rows - 1.
 *
 * What a tier provides (the naming rule of common.h, pk_<name>_<tier>), in its
 * gemm_tile__<tier>.h:
 *   pk_act_<tier>              the element type of the activations as its tile reads them
 *   pk_prepare_activations_<tier>  them, from xq: int16 copies (avx2, wasm_simd128), or per
 *                              token the correction of the staging's offset to unsigned
 *                              (avx512vnni, wasm_relaxed_simd, whose tiles read xq itself)
 *   pk_tile_tokens_<tier>, pk_tile_sums_<tier>, pk_tile_<tier>: a tile's tokens, its sums,
 *                              and the tile (tokens n .. n + tokens - 1 against one staged block)
 *   pk_dequant_token_<tier>    one token's 8 sums of a tile, dequantised (gemm_common.h order) */
#ifndef PK_TIER
#error "define PK_TIER (the tier suffix) before including gemm_block_impl.h"
#endif

/* The scratch carved (gemm_common.h), the activations prepared in their area. */
static inline PK_TIER_HELPER(act) *PK_TIER_HELPER(prepare_scratch)(void *scratch, int N, int K, const int8_t *xq,
                                                                    int8_t **panel, int8_t **stage) {
    PK_TIER_HELPER(act) *act = pk_gemm_carve(scratch, K, panel, stage);
    PK_TIER_HELPER(prepare_activations)(N, K, xq, act);
    return act;
}

PK_ALWAYS_INLINE void PK_TIER_HELPER(block_gemm)(int N, int O, int K, int o0, int rows, const int8_t *stage,
                                                 const int8_t *xq, const PK_TIER_HELPER(act) *act, const float *xs,
                                                 const float *ws, const float *bias, float *y) {
    enum { TOKENS = PK_TIER_HELPER(tile_tokens) };
    PK_TIER_HELPER(tile_sums) sums;
    for (int n = 0; n < N; n += TOKENS) {
        int tokens = N - n < TOKENS ? N - n : TOKENS;
        PK_TIER_HELPER(tile)(K, stage, xq, act, n, tokens, &sums);
        for (int t = 0; t < tokens; t++)
            PK_TIER_HELPER(dequant_token)(&sums, t, rows, xs[n + t], ws, bias, o0, y + (size_t)(n + t) * O);
    }
}
