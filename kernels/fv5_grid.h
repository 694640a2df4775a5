/* Per-row int8 grid of a five-value linear, and validation of packed blocks.
 * One implementation shared by all tiers (they run once per tensor at load time).
 *
 * The grid. Row r has magnitudes 0 <= lo <= hi (finite float32). Its levels
 * {-hi, -lo, 0, +lo, +hi} become the int8 values {-Q, -q, 0, +q, +Q} times the float32 row
 * scale s = hi / Q, where (q, Q) is the best rational approximation of lo/hi with
 * 1 <= Q <= 63:
 *   ratio = (double)lo / (double)hi
 *   for Q = 1..63:  q = floor(ratio*Q + 0.5);  err = |ratio*Q - q| / Q   (double arithmetic)
 *   keep the first Q with the smallest err (ties keep the smaller Q);
 *   s = (float)hi / (float)Q   (one float32 division).
 * So +-hi is exact up to the rounding of s (2^-24 relative), and +-lo is off by hi * err:
 * at most hi/126 (for lo/hi just below 1/126 or above 125/126, halfway between 0/1 and 1/63),
 * and below hi/(2*63*Q) ~ 1e-4 * hi for ratios well inside (0, 1).
 * hi == 0 gives lut {0,0,0,0,0} and s = 0. |lut| <= 63 keeps relaxed-SIMD / VNNI tiers exact.
 *
 * lut layout: [O][8] int8, entries 0..4 as above, 5..7 zero.
 */
#ifndef PK_FV5_GRID_H
#define PK_FV5_GRID_H

#include "common.h"

#define FV5_GRID_MAX_Q 63

/* Returns 0, or row+1 of the first row whose lo/hi is negative, non-finite or lo > hi
 * (nothing is written for rows from there on). */
PK_API int fv5_row_grid(int O, const float *lo, const float *hi, int8_t *lut, float *scale);

/* Checks O/8 packed blocks (fv5_block_bytes(K) bytes each) against the layout: every code
 * < 125, bit 7 clear in a short last group, digits of padding panel vectors zero.
 * Returns 0, block+1 of the first bad block, or PK_E_SHAPE. */
PK_API int fv5_check_blocks(int O, int K, const uint8_t *packed);

#endif
