/* fuzz_point.c: a numerics point as inline TOML (family/point_toml.c over
 * the toml++ shim, docs/numerics.md §3): parse; a point accepted is
 * printed canonically, which must parse to the same print, and built into
 * a program at a small n (the first byte) and hashed. */
#include "fuzz_util.h"

#include "nx_limits.h"
#include "nx_program.h"
#include "point_toml.h"

#define FZ_MAX_TEXT 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int limited;
    if (!limited) {
        nx_limits l = *nx_limits_get();
        l.max_ops = 1u << 16;
        l.max_bytes = 64u << 20;
        nx_limits_set(&l);
        limited = 1;
    }
    size_t n = data[0] % 33;
    char *text = fz_str(data + 1, size - 1, FZ_MAX_TEXT);
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(text, "point", &pt, &err) == NX_OK) {
        char *p1 = nx_point_print(&pt);
        if (!p1)
            abort();
        nx_point pt2;
        nx_err e2 = {0};
        if (pt_from_text(p1, "printed", &pt2, &e2) != NX_OK) {
            fprintf(stderr, "canonical print does not parse: %s\n  input: %s\n  print: %s\n", e2.msg, text, p1);
            abort();
        }
        char *p2 = nx_point_print(&pt2);
        if (!p2 || strcmp(p1, p2) != 0) {
            fprintf(stderr, "canonical print not stable:\n  input: %s\n  print: %s\n  again: %s\n", text, p1,
                    p2 ? p2 : "(null)");
            abort();
        }
        free(p2);
        nx_point_free(&pt2);
        nx_program *prog = NULL;
        if (nx_program_build(&pt, n, data[0] & 0x80, &prog, &err) == NX_OK) {
            char hex[65];
            (void)nx_program_hash(prog, hex, &err);
            nx_program_free(prog);
        }
        free(p1);
        nx_point_free(&pt);
    }
    free(text);
    return 0;
}
