/* fv5 block decode, scalar reference tier: plain loops, the layout of fv5_decode.h read
 * literally. Every other tier must produce these exact bytes. */
#include "fv5_decode.h"

int fv5_decode_block__scalar(int K, const uint8_t *stored, const int8_t *lut, int8_t *panel) {
    if (K <= 0 || K % 8 != 0 || K > PK_MAX_DIM) return PK_E_SHAPE;
    int vectors = K / 2;
    int T = (vectors + 2) / 3;
    for (int t = 0; t < T; t++) {
        for (int j = 0; j < 16; j++) {
            int code = fv5_code_at(T, stored, t, j);
            int digit[3] = {code % 5, (code / 5) % 5, code / 25};
            for (int i = 0; i < 3; i++) {
                int v = 3 * t + i;                /* panel vector */
                if (v >= vectors) break;          /* short last code vector */
                int p = v % 4;                    /* row pair within the block */
                int row = 2 * p + (j >= 8);
                /* & 7: a corrupt code (never one that passed fv5_check_blocks) stays inside
                 * the row's 8-entry table */
                panel[(size_t)v * 16 + j] = lut[row * 8 + (digit[i] & 7)];
            }
        }
    }
    return PK_OK;
}

PK_DEFINE_DECODE_BLOCKS(scalar)
