/* fuzz_npy.c: the .npy reader (traces/npy.c) on any bytes, in memory, with
 * each dtype hint the CLI passes (the first byte picks it); a few elements
 * of an array it accepts are read. */
#include "fuzz_util.h"

#include "npy.h"
#include "safetensors.h"

#define FZ_MAX_INPUT (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const hints[] = {NULL, "bf16", "e4m3", "e5m2", "fp16", "fp32", "BF16", "e8m0", "fp64"};
    if (size < 1 || size > FZ_MAX_INPUT)
        return 0;
    const char *hint = hints[data[0] % (sizeof hints / sizeof hints[0])];
    npy_array a;
    nx_err err = {0};
    if (npy_parse("fuzz.npy", data + 1, size - 1, hint, &a, &err) == NX_OK) {
        for (uint64_t k = 0; k < a.t.nelem && k < 16; k++)
            (void)st_get_bits(&a.t, a.t.data, (size_t)k);
        npy_free(&a);
    }
    return 0;
}
