/* Shared definitions for every kernel and every tier.
 *
 * Kernels are plain C (no Python.h): the same sources build into the host shared library
 * (gcc) and into emscripten side modules that Pyodide loads with ctypes.
 *
 * Naming: an entry point is `<op>__<tier>` (XNNPACK style), a tier's inline helper
 * `pk_<name>_<tier>`, in its file `<op>__<tier>.c` or `<part>__<tier>.h`. Tiers: scalar (the
 * reference), wasm_simd128, wasm_relaxed_simd, avx2, avx512vnni. Code written once for several
 * tiers sits in an `*_impl.h` that each tier's file includes after defining PK_TIER, and names
 * what it calls and defines by that rule (PK_TIER_FN, PK_TIER_HELPER below).
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

/* The naming rule as macros, for the *_impl.h files: PK_TIER_FN(fv5_gemm) is fv5_gemm__<tier>,
 * PK_TIER_HELPER(tile) is pk_tile_<tier>, PK_HELPER_OF(name, tier) pk_<name>_<tier> for a
 * named tier (where one tier borrows another's helpers). */
#define PK_PASTE3(a, b, c) a##b##c
#define PK_EXPAND3(a, b, c) PK_PASTE3(a, b, c)
#define PK_TIER_FN(op) PK_EXPAND3(op, __, PK_TIER)
#define PK_HELPER_OF(name, tier) PK_EXPAND3(pk_##name##_, tier, )
#define PK_TIER_HELPER(name) PK_HELPER_OF(name, PK_TIER)

/* A helper the compiler must inline: the written-once GEMM drivers' block loop, which GCC
 * otherwise keeps out of line at a few percent of the GEMM's time. */
#define PK_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Round a pointer up to a multiple of 64 bytes (scratch carving). */
static inline void *pk_align64(void *p) {
    uintptr_t u = (uintptr_t)p;
    return (void *)((u + 63u) & ~(uintptr_t)63u);
}

#endif
