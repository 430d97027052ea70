/* cmd_explain.c: `parity explain A [B]`: why two family traces (or a trace
 * and the reference of its point) differ in bits, as the points they
 * realise (parity/explain/, docs/explain.md). */
#include "cli.h"
#include "explain.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: parity explain A [B] [--kernels DIR] [--max-rows N] [--threads T] [--progress]\n"
    "                      [--json]\n"
    "\n"
    "Explains a parity diff.  A and B are traces of one family point (two\n"
    "classes, two kernels, before and after a change); without B, A is\n"
    "compared with the exact reference of its declared point.  Prints the diff\n"
    "of the outputs, then for each side the numerics point it realises: its\n"
    "declared point when that reproduces every row of the family's reduction\n"
    "bit for bit, else the point `parity fit` finds on those rows (the nearest\n"
    "to the declared one when several fit), and the difference between the\n"
    "two in `registry compare`'s words (\"split count: 4 vs 8\").  The inputs\n"
    "are the traces' own, or those their seed regenerates (docs/traces.md).\n"
    "\n"
    "  --kernels DIR   the registry (default: kernels)\n"
    "  --max-rows N    rows of the reduction fitted per side (default 4096);\n"
    "                  more are sampled evenly and the report says so\n"
    "  --threads T     threads of the search (default: all cores)\n"
    "  --progress      the search's progress on stderr\n"
    "  --json          print one JSON object instead of the text (docs/explain.md)\n"
    "\n"
    "exit status: 0 the outputs agree in every bit (nothing to explain); 1 they\n"
    "differ (the explanation printed, or why none was found); 2 usage error or\n"
    "bad input (a trace that does not validate, traces of two families, a point\n"
    "the registry does not resolve); 3 internal error.\n";

int cmd_explain(int argc, char **argv)
{
    const char *kdir = "kernels", *rows_s = NULL, *threads_s = NULL;
    const char *paths[2] = {NULL, NULL};
    size_t np = 0;
    int bad = 0, progress = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--progress")) {
            progress = 1;
            continue;
        }
        if (cli_flag(argv, i, "--json")) {
            json = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) || cli_opt(argc, argv, &i, "--max-rows", &rows_s, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad))
            continue;
        if (bad)
            return EXIT_INPUT;
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("explain", "unknown option '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        if (np == 2) {
            cli_error("explain", "more than two traces ('%s'); explain compares A with B (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        paths[np++] = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (np == 0) {
        cli_error("explain", "needs a trace A, and optionally B (see --help)");
        return EXIT_INPUT;
    }
    ex_opts o = {0, 0, progress};
    long v;
    if (rows_s) {
        if ((v = cli_long("explain", "--max-rows", rows_s, 1, 1L << 24)) < 0)
            return EXIT_INPUT;
        o.max_rows = (size_t)v;
    }
    if (threads_s) {
        if ((v = cli_long("explain", "--threads", threads_s, 1, 4096)) < 0)
            return EXIT_INPUT;
        o.threads = (int)v;
    }
    nx_err err = {0};
    reg_registry *reg = NULL;
    if (reg_load(kdir, &reg, &err) != NX_OK)
        return cli_fail("explain", &err);
    ex_result r;
    int rc;
    if (ex_explain(reg, paths[0], paths[1], &o, &r, &err) != NX_OK) {
        rc = cli_fail("explain", &err);
    } else {
        char *jt = json && r.json ? json_dumps(r.json, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (json && !jt) {
            cli_error("explain", "out of memory");
            rc = EXIT_INTERNAL;
        } else {
            if (jt)
                printf("%s\n", jt);
            else
                fputs(r.text, stdout);
            rc = r.outcome == EX_SAME ? EXIT_PASS : EXIT_PARITY;
        }
        free(jt);
    }
    ex_result_free(&r);
    reg_free(reg);
    return rc;
}
