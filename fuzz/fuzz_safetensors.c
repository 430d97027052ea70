/* fuzz_safetensors.c: the safetensors reader (traces/safetensors.c) on any
 * bytes: read, look every tensor and metadata key up, read a few elements'
 * bits, decode the first elements as rows of exact values (traces/rows.c). */
#include "fuzz_util.h"

#include "rows.h"
#include "safetensors.h"

#define FZ_MAX_INPUT (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const char *path = fz_scratch("st");
    if (fz_write(path, data, size))
        abort();
    st_file f;
    nx_err err = {0};
    if (st_read(path, &f, &err) == NX_OK) {
        for (size_t i = 0; i < f.ntensors; i++) {
            const st_tensor *t = &f.tensors[i];
            if (st_find(&f, t->name) == NULL)
                abort(); /* a tensor read must be found by its name */
            for (uint64_t k = 0; k < t->nelem && k < 16; k++)
                (void)st_get_bits(t, t->data, (size_t)k);
            if (t->nelem && rows_fmt_of_dtype(t->dtype) >= 0) {
                size_t n = t->nelem < 16 ? (size_t)t->nelem : 16;
                double v[16];
                nx_err e2 = {0};
                (void)rows_decode_range(t, 0, n, v, &e2);
            }
        }
        for (size_t i = 0; i < f.nmeta; i++)
            if (st_get_meta(&f, f.meta[i].key) == NULL)
                abort();
        st_free(&f);
    }
    unlink(path);
    return 0;
}
