/* fv5-b5x3t7-v1: five-value weights, three levels per 7-bit code. Contract of the decoder.
 *
 * The full layout is ../docs/b5x3t7.md. In short, for one
 * 8-row block of a five-value linear W[O][K] (O % 8 == 0, K % 8 == 0):
 *
 *   panel: K/2 vectors of 16 int8 lanes (8*K bytes). Vector v = 4*kb + p, lane j holds
 *          row 2p + (j >= 8), column k = 8*kb + (j % 8) of the block, as lut[row][code].
 *   codes: code vector t (0 <= t < T = ceil((K/2)/3)) lane j =
 *          c(3t)[j] + 5*c(3t+1)[j] + 25*c(3t+2)[j] (< 125); panel vectors >= K/2 count as 0.
 *   stored: each full group of 8 code vectors is 7 stored vectors,
 *          stored_m[j] = code_{8g+m}[j] | (((code_{8g+7}[j] >> m) & 1) << 7);
 *          a last group of r < 8 code vectors is stored as those r vectors (bit 7 zero).
 *   block bytes: 16 * (7*(T/8) + T%8).
 *
 * The int8 grid (per row, built by fv5_row_grid in fv5_grid.h): lut[row] = {-Q, -q, 0, q, Q}
 * for level codes 0..4 ({-hi, -lo, 0, +lo, +hi}), with 1 <= Q <= 63 and the row's weight
 * scale hi/Q. |entry| <= 63 keeps a later relaxed-SIMD / VNNI tier exact.
 *
 * lut is passed as [8][8] int8 for the block's 8 rows: entries 0..4 are the levels, 5..7 are
 * zero padding (so one 16-byte load gives the tables of a row pair).
 *
 * Inputs must have passed fv5_check_blocks (fv5_grid.h): every code < 125, padding digits 0.
 * On such input every tier writes the same panel bytes.
 */
#ifndef PK_FV5_DECODE_H
#define PK_FV5_DECODE_H

#include "common.h"

/* Bytes of one stored 8-row block for K columns (K % 8 == 0, K > 0). */
static inline size_t fv5_block_bytes(int K) {
    int vectors = K / 2;                 /* panel vectors per block */
    int T = (vectors + 2) / 3;           /* code vectors */
    return (size_t)16 * (size_t)(7 * (T / 8) + T % 8);
}

/* Code vector t (0 <= t < T), lane j, of one stored block: the reading the scalar decoder
 * and the validator share. */
static inline uint8_t fv5_code_at(int T, const uint8_t *stored, int t, int j) {
    int g = t / 8, m = t % 8, full = T / 8;
    if (g == full) return stored[(size_t)full * 7 * 16 + (size_t)m * 16 + j];
    const uint8_t *s = stored + (size_t)g * 7 * 16;
    if (m < 7) return s[m * 16 + j] & 0x7f;
    uint8_t c7 = 0;
    for (int b = 0; b < 7; b++) c7 |= (uint8_t)(((s[b * 16 + j] >> 7) & 1) << b);
    return c7;
}

/* Decode one block: stored (fv5_block_bytes(K) bytes) -> panel (8*K bytes). */
PK_API int fv5_decode_block__scalar(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel);
PK_API int fv5_decode_block__wasm_simd128(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel);
PK_API int fv5_decode_block__avx2(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel);
PK_API int fv5_decode_block__avx512vnni(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel);
PK_API int fv5_decode_blocks__avx512vnni(int blocks, int K, const uint8_t *packed, const int8_t *lut,
                                         int8_t *panels, size_t panel_stride);
PK_API int fv5_decode_block__wasm_relaxed_simd(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel);
PK_API int fv5_decode_blocks__wasm_relaxed_simd(int blocks, int K, const uint8_t *packed, const int8_t *lut,
                                                int8_t *panels, size_t panel_stride);

/* Decode `blocks` consecutive blocks (lut [blocks*8][8]) into panels + b * panel_stride bytes.
 * panel_stride = 8*K lays out a whole tensor's panels; 0 reuses one staging panel, as the
 * GEMM drivers do (benchmarks time the decode that way). */
PK_API int fv5_decode_blocks__scalar(int blocks, int K, const uint8_t *packed, const int8_t *lut,
                                     int8_t *panels, size_t panel_stride);
PK_API int fv5_decode_blocks__wasm_simd128(int blocks, int K, const uint8_t *packed, const int8_t *lut,
                                           int8_t *panels, size_t panel_stride);
PK_API int fv5_decode_blocks__avx2(int blocks, int K, const uint8_t *packed, const int8_t *lut,
                                   int8_t *panels, size_t panel_stride);

/* A SIMD tier's fv5_decode_block__<tier> (its pk_fv5_decode_<tier>, fv5_decode_impl.h, into
 * the spec panel) and fv5_decode_blocks__<tier>. */
#define PK_DEFINE_DECODE_OPS(tier)                                                               \
    int fv5_decode_block__##tier(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) { \
        if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;                          \
        pk_fv5_decode_##tier(K, stored, lut, panel, NULL);                                      \
        return PK_OK;                                                                            \
    }                                                                                            \
    PK_DEFINE_DECODE_BLOCKS(tier)

/* The loop behind fv5_decode_blocks__<tier>. */
#define PK_DEFINE_DECODE_BLOCKS(tier)                                                            \
    int fv5_decode_blocks__##tier(int blocks, int K, const uint8_t *packed, const int8_t *lut,   \
                                  int8_t *panels, size_t panel_stride) {                         \
        if (blocks <= 0 || K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;           \
        size_t bytes = fv5_block_bytes(K);                                                       \
        for (int b = 0; b < blocks; b++)                                                         \
            fv5_decode_block__##tier(K, packed + (size_t)b * bytes, lut + (size_t)b * 64,        \
                                     panels + (size_t)b * panel_stride);                         \
        return PK_OK;                                                                            \
    }

#endif
