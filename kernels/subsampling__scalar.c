/* The subsampling head, scalar tier (contract in subsampling.h): ops__scalar.c's loops. */
#include "ops.h"
#include "subsampling.h"

int subsampling_head__scalar(PK_SUBSAMPLING_HEAD_ARGS) {
    return pk_subsampling_head(T, F, C, x, w0, b0, w2, b2, scratch, y);
}
