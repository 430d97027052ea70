/* fuzz_space.c: the --space grammar of fit and reveal (parity/fit/space.c,
 * docs/fit.md "--space"): the input is a space's text, parsed for a dot
 * product of fp32 terms (let lists, {NAME} expansion, inline points, tree
 * lines, `default`, `atoms`), and each candidate printed.  The expansion's
 * cost is bounded before anything is built (docs/limits.md). */
#include "fuzz_util.h"

#include "fit.h"
#include "nx_limits.h"

#define FZ_MAX_INPUT (1 << 13)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    static int limited;
    if (!limited) {
        nx_limits l = *nx_limits_get();
        l.max_ops = 1u << 14;
        l.max_bytes = 64u << 20;
        nx_limits_set(&l);
        /* the bounds are checked the same at any size: 1,000 candidates
         * a line (100,000 in all) reach them without parsing 100,000
         * lines per input */
        fit_space_set_limits(1000, 100000);
        limited = 1;
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    fit_ctx ctx = {NX_FP32, NX_FP32, 1};
    fit_space s;
    fit_space_init(&s, NX_FP32);
    nx_err err = {0};
    if (fit_space_parse(&s, &ctx, text, "fuzz", &err) == NX_OK)
        for (size_t i = 0; i < s.count && i < 64; i++)
            free(fit_cand_text(&s, i));
    fit_space_free(&s);
    free(text);
    return 0;
}
