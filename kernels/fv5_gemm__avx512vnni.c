/* fv5 and int8 GEMMs, AVX-512 VNNI tier (contracts in fv5_gemm.h / int8_gemm.h, tile in
 * gemm_tile__avx512vnni.h): per 8-row block, the AVX2 decoder writes straight into the VNNI
 * staging (weights + 64), or plain int8 rows are staged + 128; then vpdpbusd over int8
 * activations. The other ops of this tier are the AVX2 ones. */
#include "gemm_tile__avx512vnni.h"
#define PK_DECODE_STAGE_KB pk_vnni_stage_kb
#define PK_DECODE_STAGE_RANGE pk_vnni_stage_from_panel
#include "fv5_decode__avx2.h"
#include "fv5_gemm.h"
#include "int8_gemm.h"
#include "quantize_act.h"

int fv5_gemm__avx512vnni(PK_FV5_GEMM_ARGS) {
    int status = pk_gemm_check(N, O, K, 8, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *base = (int8_t *)pk_align64(scratch);
    int8_t *panel = base, *stage = base + (size_t)8 * K;
    int32_t *xsum = (int32_t *)(base + (size_t)16 * K);      /* N int32 <= 2*N*K bytes */
    pk_vnni_token_sums(N, K, xq, xsum);
    size_t block_bytes = fv5_block_bytes(K);
    __m256i acc[PK_VNNI_TOKENS];
    for (int b = 0; b < O / 8; b++) {
        int o0 = 8 * b;
        pk_fv5_decode_avx2(K, packed + (size_t)b * block_bytes, lut + (size_t)b * 64, panel, stage);
        for (int n = 0; n < N; n += PK_VNNI_TOKENS) {
            int tokens = N - n < PK_VNNI_TOKENS ? N - n : PK_VNNI_TOKENS;
            pk_vnni_tile(K, stage, xq + (size_t)n * K, xsum + n, tokens, 64, acc);
            for (int t = 0; t < tokens; t++) {
                /* gemm_common.h order: ((float)acc * xs) * ws (+ bias) */
                __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(xs[n + t]));
                v = _mm256_mul_ps(v, _mm256_loadu_ps(ws + o0));
                if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o0));
                _mm256_storeu_ps(y + (size_t)(n + t) * O + o0, v);
            }
        }
    }
    return PK_OK;
}

/* Rows o0 .. o0 + rows - 1 of plain int8 weights as VNNI staging, + 128 (missing rows: 0 + 128,
 * whose sums the correction brings back to 0). */
static void stage_int8_rows(int K, const int8_t *w, int rows, uint8_t *stage) {
    for (int h = 0; h < K / 4; h++)
        for (int r = 0; r < 8; r++)
            for (int i = 0; i < 4; i++)
                stage[32 * h + 4 * r + i] = (uint8_t)((r < rows ? w[(size_t)r * K + 4 * h + i] : 0) + 128);
}

/* Below this many tokens the byte-wise staging costs more than vpdpbusd saves (the decoder's
 * one-token steps): the AVX2 GEMM, whose sums are the same integers. */
enum { VNNI_INT8_MIN_TOKENS = 16 };

int int8_gemm__avx512vnni(PK_INT8_GEMM_ARGS) {
    if (N < VNNI_INT8_MIN_TOKENS) return int8_gemm__avx2(N, O, K, xq, xs, w, ws, bias, y, scratch, scratch_bytes);
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *base = (int8_t *)pk_align64(scratch);
    uint8_t *stage = (uint8_t *)base + (size_t)8 * K;
    int32_t *xsum = (int32_t *)(base + (size_t)16 * K);      /* N int32 <= 2*N*K bytes */
    pk_vnni_token_sums(N, K, xq, xsum);
    __m256i acc[PK_VNNI_TOKENS];
    int32_t lanes[8];
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        stage_int8_rows(K, w + (size_t)o0 * K, rows, stage);
        for (int n = 0; n < N; n += PK_VNNI_TOKENS) {
            int tokens = N - n < PK_VNNI_TOKENS ? N - n : PK_VNNI_TOKENS;
            pk_vnni_tile(K, (const int8_t *)stage, xq + (size_t)n * K, xsum + n, tokens, 128, acc);
            for (int t = 0; t < tokens; t++) {
                float *out = y + (size_t)(n + t) * O + o0;
                if (rows == 8) {                  /* gemm_common.h order: ((float)acc * xs) * ws (+ bias) */
                    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(xs[n + t]));
                    v = _mm256_mul_ps(v, _mm256_loadu_ps(ws + o0));
                    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o0));
                    _mm256_storeu_ps(out, v);
                } else {
                    _mm256_storeu_si256((__m256i *)lanes, acc[t]);
                    for (int r = 0; r < rows; r++) out[r] = pk_dequant(lanes[r], xs[n + t], ws[o0 + r], bias, o0 + r);
                }
            }
        }
    }
    return PK_OK;
}

/* The rest of the tier: AVX2 implementations. */
int quantize_act__avx512vnni(int N, int K, const float *x, int8_t *xq, float *xs) {
    return quantize_act__avx2(N, K, x, xq, xs);
}
int fv5_decode_block__avx512vnni(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    return fv5_decode_block__avx2(K, stored, lut, panel);
}
PK_DEFINE_DECODE_BLOCKS(avx512vnni)
