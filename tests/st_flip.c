/* st_flip.c: flips one bit of one element of a tensor in a safetensors
 * file, keeping everything else (the CLI tests' way to corrupt a trace).
 *   st_flip FILE TENSOR ELEMENT BIT */
#include <stdio.h>
#include <stdlib.h>

#include "safetensors.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: st_flip FILE TENSOR ELEMENT BIT\n");
        return 2;
    }
    st_file f;
    st_init(&f);
    nx_err err;
    if (st_read(argv[1], &f, &err) != NX_OK) {
        fprintf(stderr, "st_flip: %s\n", err.msg);
        return 2;
    }
    const st_tensor *t = st_find(&f, argv[2]);
    size_t e = strtoul(argv[3], NULL, 10);
    unsigned bit = (unsigned)strtoul(argv[4], NULL, 10);
    if (!t || e >= t->nelem || bit >= st_dtype_bits(t->dtype)) {
        fprintf(stderr, "st_flip: no such tensor, element or bit\n");
        return 2;
    }
    st_put_bits(t, t->data, e, st_get_bits(t, t->data, e) ^ (1ull << bit));
    if (st_write_atomic(argv[1], &f, &err) != NX_OK) {
        fprintf(stderr, "st_flip: %s\n", err.msg);
        return 2;
    }
    st_free(&f);
    return 0;
}
