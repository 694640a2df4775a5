/* PCM decoding: interleaved little-endian samples -> mono float32, in a fixed order:
 * each sample to float64 as v / 2^(bits-1) (u8: (v - 128) / 128; floats as they are), the
 * channels of a frame summed in order in float64, divided by the channel count, rounded to
 * float32. One implementation built into every module.
 *
 * Formats: 0 u8, 1 s16, 2 s24, 3 s32, 4 f32, 5 f64. Returns 0, frame+1 of the first frame with
 * a NaN/inf sample (float formats), or PK_E_SHAPE. */
#ifndef PK_PCM_H
#define PK_PCM_H

#include "common.h"

PK_API int pk_pcm_to_mono(int format, int channels, int frames, const uint8_t *data, float *out);

#endif
