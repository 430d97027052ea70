/* cmd_inspect.c: `parity inspect FILE`: what a safetensors file holds:
 * metadata, tensors, and their first values with bit patterns. */
#include "cli.h"
#include "rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char inspect_usage[] =
    "usage: parity inspect FILE.safetensors [--limit N]\n"
    "\n"
    "Prints the metadata and the tensors of FILE (name, dtype, shape) and the\n"
    "first N values of each (default 8; 0 for none) as hex floats with their\n"
    "bit patterns.  The file is validated strictly, as every command reads it.\n"
    "\n"
    "exit status: 0 success, 2 unreadable or malformed file.\n";

int cmd_inspect(int argc, char **argv)
{
    const char *path = NULL, *limit_s = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(inspect_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--limit", &limit_s, &bad))
            continue;
        if (argv[i][0] == '-' || path) {
            cli_error("inspect", "unexpected argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        path = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (!path) {
        cli_error("inspect", "needs a FILE (see --help)");
        return EXIT_INPUT;
    }
    long limit = 8;
    if (limit_s && (limit = cli_long("inspect", "--limit", limit_s, 0, 1L << 40)) < 0)
        return EXIT_INPUT;
    st_file f;
    st_init(&f);
    nx_err err = {0};
    if (st_read(path, &f, &err) != NX_OK)
        return cli_fail("inspect", &err);
    printf("%s\n", path);
    for (size_t i = 0; i < f.nmeta; i++)
        printf("  meta %s = %s\n", f.meta[i].key, f.meta[i].value);
    for (size_t i = 0; i < f.ntensors; i++) {
        const st_tensor *t = &f.tensors[i];
        printf("  tensor %s: %s [", t->name, st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++)
            printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
        printf("]\n");
        int fmt = rows_fmt_of_dtype(t->dtype);
        for (uint64_t k = 0; k < t->nelem && (long)k < limit; k++) {
            uint64_t bits = st_get_bits(t, t->data, k);
            if (fmt >= 0)
                printf("    [%llu] %a (0x%llx)\n", (unsigned long long)k, nx_decode((nx_fmt)fmt, bits, NULL),
                       (unsigned long long)bits);
            else
                printf("    [%llu] 0x%llx\n", (unsigned long long)k, (unsigned long long)bits);
        }
        if ((long)t->nelem > limit && limit > 0)
            printf("    ... %llu more\n", (unsigned long long)(t->nelem - (uint64_t)limit));
    }
    st_free(&f);
    return EXIT_PASS;
}
