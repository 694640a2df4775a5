/* Native run-time CPU detection (host library only): which native tiers this CPU can run.
 * Bit i is the i-th native tier of engine/tiers.py that needs CPU features (cpu_tiers.h, which
 * build.py generates from that table: one PK_CPU_TIER(bit, condition) each); the Python side
 * (engine/kernels.py) maps the bits back to tier names with the same table. */
#include "common.h"

PK_API int pk_cpu_features(void) {
    int bits = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#define PK_CPU_TIER(bit, supported) if (supported) bits |= 1 << (bit);
#include "cpu_tiers.h"
#undef PK_CPU_TIER
#endif
    return bits;
}
