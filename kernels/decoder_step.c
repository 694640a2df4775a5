/* The tier-independent part of the decoder's one-call steps (contract in decoder_step.h): where
 * their buffers sit in the scratch. The steps themselves: fused_impl.h. */
#include "decoder_step.h"

/* Scratch: two [4P] gate buffers, h [J], z [O], xs, then xq and the GEMM's scratch. */
size_t pk_decoder_carve(int P, int J, int O, void *scratch, pk_decoder_buffers *d) {
    size_t floats[5] = {(size_t)4 * P, (size_t)4 * P, (size_t)J, (size_t)O, 1};
    size_t widest = P > J ? (size_t)P : (size_t)J;
    size_t gemm = pk_gemm_scratch_bytes(1, (int)widest);
    float *xs, **where[5] = {&d->a, &d->b, &d->h, &d->z, &xs};
    uint8_t *base = scratch ? (uint8_t *)pk_align64(scratch) : NULL;
    size_t offset = 0;
    for (int i = 0; i < 5; i++) {
        if (base) *where[i] = (float *)(base + offset);
        offset += pk_round64(4 * floats[i]);
    }
    if (base) {
        d->lin.xs = xs;
        d->lin.xq = (int8_t *)(base + offset);
        d->lin.gemm = base + offset + pk_round64(widest);
        d->lin.gemm_bytes = gemm;
    }
    return 64 + offset + pk_round64(widest) + gemm;                 /* 64: room to align the base */
}

size_t pk_decoder_scratch_bytes(int P, int J, int O) {
    if (P <= 0 || J <= 0 || O <= 0 || P > PK_MAX_DIM / 4 || J > PK_MAX_DIM || O > PK_MAX_DIM) return 0;
    return pk_decoder_carve(P, J, O, NULL, NULL);
}
