/* Native run-time CPU detection (host library only): which native tiers this CPU can run.
 * Bit 0: avx2 (with the SSE4.1/SSSE3 it implies). Bit 1: avx512vnni (with AVX512VL/BW and
 * AVX2, for 256-bit vpdpbusd). The Python side (engine/kernels.py) maps
 * bits to tier names and picks the best one for tier "auto". */
#include "common.h"

PK_API int pk_cpu_features(void) {
    int bits = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) bits |= 1;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
        bits |= 2;
#endif
    return bits;
}
