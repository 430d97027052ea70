/* cmd_diff.c: `parity diff A B`: two outputs (traces, safetensors, .npy)
 * element by element, and where they differ (parity/diff/, docs/diff.md). */
#include "cli.h"
#include "diff.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: parity diff A B [--tensor NAME] [--json] [--max-list K] [--dtype-a T] [--dtype-b T]\n"
    "\n"
    "Compares two outputs bit for bit: traces, safetensors files or .npy arrays,\n"
    "in any pairing.  By default a trace's outputs, a safetensors file's every\n"
    "tensor and a .npy's array, in file order (the first diverging one is named\n"
    "and analysed); --tensor NAME picks one tensor of each file that holds several.\n"
    "Says how many elements differ, an ulp histogram in the output's format, the\n"
    "first and the worst element (index, both bit patterns in hex and %a), the\n"
    "largest absolute and relative error of B against A, which rows, columns and\n"
    "heads differ and the pattern they form (every k-th, the last, a tile edge,\n"
    "the partial last tile, whole blocks), and the KV heads, pages and experts\n"
    "the differing rows share where a trace names them (docs/diff.md).\n"
    "\n"
    "  --tensor NAME  the tensor to compare (a trace's input as in.NAME)\n"
    "  --json         print one JSON object instead of the text\n"
    "  --max-list K   elements and index ranges listed (default 10)\n"
    "  --dtype-a T, --dtype-b T  the format of a .npy's raw bytes (bf16, e4m3, ...)\n"
    "\n"
    "exit status: 0 identical; 1 some bit differs; 2 usage error, a file that\n"
    "cannot be read, a missing tensor, shapes or dtypes that differ (both named).\n";

int cmd_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *tensor = NULL, *maxs = NULL, *hint[2] = {NULL, NULL};
    int json = 0, bad = 0, np = 0;
    for (int i = 1; i < argc; i++)
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--tensor", &tensor, &bad) || cli_opt(argc, argv, &i, "--max-list", &maxs, &bad) ||
            cli_opt(argc, argv, &i, "--dtype-a", &hint[0], &bad) || cli_opt(argc, argv, &i, "--dtype-b", &hint[1], &bad))
            continue;
        if (cli_flag(argv, i, "--json")) {
            json = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("diff", "unknown option '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        if (np == 2) {
            cli_error("diff", "more than two files ('%s'); diff compares A with B (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        paths[np++] = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (np != 2) {
        cli_error("diff", "needs two files, A and B (see --help)");
        return EXIT_INPUT;
    }
    long max_list = 10;
    if (maxs && (max_list = cli_long("diff", "--max-list", maxs, 1, 1000000)) < 0)
        return EXIT_INPUT;

    diff_source s[2];
    diff_source_init(&s[0]);
    diff_source_init(&s[1]);
    diff_files_result r;
    memset(&r, 0, sizeof r);
    nx_err err = {0};
    int rc = EXIT_INPUT;
    for (int k = 0; k < 2; k++) {
        diff_source_free(&s[k]);
        if (diff_source_open(paths[k], hint[k], &s[k], &err) != NX_OK) {
            rc = cli_fail("diff", &err);
            goto out;
        }
    }
    if (diff_files(&s[0], &s[1], tensor, (size_t)max_list, &r, &err) != NX_OK) {
        rc = cli_fail("diff", &err);
        goto out;
    }
    if (json) {
        json_t *o = diff_files_json(&s[0], &s[1], &r);
        char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        if (!text) {
            cli_error("diff", "out of memory");
            rc = EXIT_INTERNAL;
            goto out;
        }
        puts(text);
        free(text);
    } else {
        char *text = diff_files_text(&s[0], &s[1], &r);
        if (!text) {
            cli_error("diff", "out of memory");
            rc = EXIT_INTERNAL;
            goto out;
        }
        fputs(text, stdout);
        free(text);
    }
    rc = r.first_diverging == SIZE_MAX ? EXIT_PASS : EXIT_PARITY;
out:
    diff_files_result_free(&r);
    diff_source_free(&s[0]);
    diff_source_free(&s[1]);
    return rc;
}
