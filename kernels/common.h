/* Shared definitions for every kernel and every tier.
 *
 * Kernels are plain C (no Python.h): the same sources build into the host shared library
 * (gcc) and into emscripten side modules that Pyodide loads with ctypes.
 *
 * Naming: `<op>__<tier>` (XNNPACK style). Tiers: scalar (the reference), wasm_simd128,
 * wasm_relaxed_simd, avx2, avx512vnni.
 * Every function returns 0 on success or a negative PK_E* code. The Python wrapper
 * (engine/kernels.py) validates shapes and buffer sizes before calling, so these codes are
 * a second line of defence, never the user-facing error.
 *
 * Build rules that make tiers bit-identical (see ARCHITECTURE.md): -ffp-contract=off, no
 * fast-math, float operations in the exact order written in each op's header, and int8 x int8
 * products accumulated in int32 (exact, so any order gives the same sum).
 */
#ifndef PK_COMMON_H
#define PK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define PK_API __attribute__((visibility("default")))

enum {
    PK_OK = 0,
    PK_E_SHAPE = -1,      /* O, K or N outside what the op accepts */
    PK_E_SCRATCH = -2,    /* scratch buffer smaller than *_scratch_bytes() says */
    PK_E_NONFINITE = -3,  /* reserved; quantize_act reports rows as positive codes */
    PK_E_RANGE = -4,      /* a value outside its documented range (level code, lo/hi) */
};

/* Largest dimensions accepted. They keep every int32 sum exact for any int8 inputs, -128
 * included: |acc| <= K * 128 * 128 = 2^30 for K <= 65536 (and the relaxed/VNNI correction
 * 64 * sum(xq) is smaller still). */
#define PK_MAX_DIM 65536

/* Round a pointer up to a multiple of 64 bytes (scratch carving). */
static inline void *pk_align64(void *p) {
    uintptr_t u = (uintptr_t)p;
    return (void *)((u + 63u) & ~(uintptr_t)63u);
}

#endif
