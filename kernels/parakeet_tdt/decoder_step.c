/* The tier-independent part of the decoder's one-call steps (contract in decoder_step.h): where
 * their buffers sit in the scratch. The steps themselves: one_call_impl.h. */
#include "decoder_step.h"

/* Scratch: two [4P] gate buffers, h [J], z [O], xs, then xq and the GEMM's scratch. */
size_t pk_decoder_carve(int P, int J, int O, void *scratch, pk_decoder_buffers *d) {
    pk_decoder_buffers sizes_only;                                       /* scratch NULL: only the size */
    if (!d) d = &sizes_only;
    size_t floats[4] = {(size_t)4 * P, (size_t)4 * P, (size_t)J, (size_t)O};
    size_t widest = P > J ? (size_t)P : (size_t)J;
    float **const where[4] = {&d->a, &d->b, &d->h, &d->z};
    return pk_carve(scratch, 4, floats, where, 1, widest, pk_gemm_scratch_bytes(1, (int)widest), &d->lin);
}

size_t pk_decoder_scratch_bytes(int P, int J, int O) {
    if (P <= 0 || J <= 0 || O <= 0 || P > PK_MAX_DIM / 4 || J > PK_MAX_DIM || O > PK_MAX_DIM) return 0;
    return pk_decoder_carve(P, J, O, NULL, NULL);
}

/* The decoder's scratch, then the token's embedding row [P] (64-byte aligned). */
size_t pk_tdt_scratch_bytes(int P, int J, int O) {
    size_t steps = pk_decoder_scratch_bytes(P, J, O);
    if (steps == 0) return 0;
    return (steps + 63) / 64 * 64 + (size_t)4 * P + 64;
}
