/* PCM decoding and mixdown (contract in pcm.h). */
#include <string.h>
#include "pcm.h"

static const int bytes_per_sample[6] = {1, 2, 3, 4, 4, 8};

static double sample_at(int format, const uint8_t *p) {
    switch (format) {
    case 0: return ((double)p[0] - 128.0) / 128.0;
    case 1: return (double)(int16_t)(p[0] | (p[1] << 8)) / 32768.0;
    case 2: {
        int32_t v = (int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24) >> 8;
        return (double)v / 8388608.0;
    }
    case 3: {
        int32_t v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        return (double)v / 2147483648.0;
    }
    case 4: {
        float f;
        memcpy(&f, p, 4);
        return (double)f;
    }
    default: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    }
}

int pk_pcm_to_mono(int format, int channels, int frames, const uint8_t *data, float *out) {
    if (format < 0 || format > 5 || channels <= 0 || channels > 64 || frames < 0) return PK_E_SHAPE;
    int size = bytes_per_sample[format];
    for (int t = 0; t < frames; t++) {
        double sum = 0.0;
        for (int c = 0; c < channels; c++) {
            double v = sample_at(format, data + ((size_t)t * channels + c) * size);
            if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) return t + 1;
            sum += v;
        }
        out[t] = (float)(sum / (double)channels);
    }
    return PK_OK;
}
