/* fv5 and int8 GEMMs, AVX-512 VNNI tier (contracts in fv5_gemm.h / int8_gemm.h, tile in
 * gemm_tile__avx512vnni.h): per 8-row block, AVX2's decode steps write straight into the VNNI
 * staging (weights + 64; the driver: fv5_gemm_impl.h), or plain int8 rows are staged + 128;
 * then vpdpbusd over int8 activations. The other ops of this tier are the AVX2 ones. */
#include "fv5_decode__avx2.h"
#include "fv5_gemm.h"
#include "gemm_tile__avx512vnni.h"
#include "int8_gemm.h"
#include "quantize_act.h"

#define PK_TIER avx512vnni
#define PK_DECODE_LANES avx2
#include "fv5_decode_impl.h"
#include "fv5_gemm_impl.h"

/* Rows o0 .. o0 + rows - 1 of plain int8 weights as VNNI staging, + 128 (missing rows: 0 + 128,
 * whose sums the correction brings back to 0). */
static void pk_stage_int8_rows_avx512vnni(int K, const int8_t *w, int rows, uint8_t *stage) {
    for (int h = 0; h < K / 4; h++)
        for (int r = 0; r < 8; r++)
            for (int i = 0; i < 4; i++)
                stage[32 * h + 4 * r + i] = (uint8_t)((r < rows ? w[(size_t)r * K + 4 * h + i] : 0) + 128);
}

/* Below this many tokens the byte-wise staging costs more than vpdpbusd saves (the decoder's
 * one-token steps): the AVX2 GEMM, whose sums are the same integers. */
enum { pk_int8_min_tokens_avx512vnni = 16 };

int int8_gemm__avx512vnni(PK_INT8_GEMM_ARGS) {
    if (N < pk_int8_min_tokens_avx512vnni)
        return int8_gemm__avx2(N, O, K, xq, xs, w, ws, bias, y, scratch, scratch_bytes);
    int status = pk_gemm_check(N, O, K, 1, scratch_bytes);
    if (status != PK_OK) return status;
    int8_t *panel, *stage;
    int32_t *corrections = (int32_t *)pk_gemm_carve(scratch, K, &panel, &stage);
    pk_corrections_avx512vnni(N, K, xq, 128, corrections);
    for (int o0 = 0; o0 < O; o0 += 8) {
        int rows = O - o0 < 8 ? O - o0 : 8;
        pk_stage_int8_rows_avx512vnni(K, w + (size_t)o0 * K, rows, (uint8_t *)stage);
        pk_block_gemm_avx512vnni(N, O, K, o0, rows, stage, xq, corrections, xs, ws, bias, y);
    }
    return PK_OK;
}

/* The rest of the tier: AVX2 implementations. */
int quantize_act__avx512vnni(int N, int K, const float *x, int8_t *xq, float *xs) {
    return quantize_act__avx2(N, K, x, xq, xs);
}
PK_DEFINE_DECODE_OPS(avx512vnni)
