/* Native run-time CPU detection (host library only): which native tiers this CPU can run.
 * Bit 0: avx2 (with the SSE4.1/SSSE3 it implies). The Python side (engine/kernels.py) maps
 * bits to tier names and picks the best one for tier "auto". */
#include "common.h"

PK_API int pk_cpu_features(void) {
    int bits = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) bits |= 1;
#endif
    return bits;
}
