/* cmd_reveal.c: `parity reveal`: a black-box kernel probed for the numerics
 * point it realises (docs/reveal.md, parity/reveal/). */
#include "cli.h"
#include "nx_limits.h"
#include "pa_core.h"
#include "cli_html.h"
#include "fit.h"
#include "nx_tree.h"
#include "reveal.h"
#include "rows.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static const char usage[] =
    "usage: parity reveal (--exec 'CMD {in} {out}' | --serve CMD | --dlopen LIB.so:SYMBOL\n"
    "                      | --simulate POINT) --n N[,N2,...] [--dtype D] [--order-only]\n"
    "                      [--shared-b | --grid M,N] [--rows R] [--confirm R] [--seed S]\n"
    "                      [--space SPEC] [-v]\n"
    "                      [--timeout S]\n"
    "                      [--html FILE]\n"
    "\n"
    "Probes a kernel with inputs that expose its summation order, its fused\n"
    "groups and its rounding, and prints the numerics point it realises.\n"
    "A probe file holds `a` and `b` of shape [rows, N] (the layout of `parity\n"
    "reduce`); the kernel answers `y` [rows] in the dtype it computes.\n"
    "\n"
    "kernels:\n"
    "  --exec CMD     run by /bin/sh once per batch of probes, {in} and {out}\n"
    "                 replaced by the file names\n"
    "  --serve CMD    started once; reads lines \"IN OUT\" on stdin, answers \"ok\"\n"
    "                 on stdout (parity_probe.h's --serve loop)\n"
    "  --dlopen L:S   the function S of the shared library L, called in process\n"
    "                 (int S(parity_probe *p), parity/reveal/parity_probe.h)\n"
    "  --simulate P   a numerics point evaluated in process (for tests)\n"
    "\n"
    "options:\n"
    "  --n N          terms per row (2 ... 65536).  A list N1,N2,... probes each\n"
    "                 length and prints one point that holds at all of them, or\n"
    "                 names the lengths whose points disagree (exit 1).  Either\n"
    "                 way the point is then confirmed at two lengths not probed\n"
    "                 (N1 + 1 and the largest prime at most N1 / 2, so that a\n"
    "                 loop's remainder runs); a point that fails there is\n"
    "                 reported, not printed as the answer (exit 1)\n"
    "  --dtype D      the dtype of a and b: F32 (default), BF16, F16, F64\n"
    "  --order-only   reveal the order only\n"
    "  --shared-b     the kernel takes one b for all the rows of a call (a\n"
    "                 gemv's x, a column of a gemm's B, the rows being its\n"
    "                 outputs): every call's rows share b (the order's probes\n"
    "                 as (a*b, 1), exact; the arithmetic on random rows only;\n"
    "                 F32, BF16 or F64 inputs)\n"
    "  --grid M,N     the kernel is a gemm: every call is one M x N output, row\n"
    "                 r = i*N + j holding A's row i as a and B's column j as b\n"
    "                 (the same a along each i, the same b down each j; the\n"
    "                 kernel reads M,N from the environment variable\n"
    "                 PARITY_GRID).  Row classes are named over i and j (edge\n"
    "                 rows and columns of a tile, or up to two rectangles of\n"
    "                 row and column sets, or their complement); the point\n"
    "                 holds grid = [M, N]; --rows is M*N; no call of one row\n"
    "  --rows R       random rows the arithmetic is fitted to, and the batch of\n"
    "                 rows whose every index a probe is run at when rows\n"
    "                 differ by their index (row classes; default 255,\n"
    "                 odd so that the remainder rows of any power-of-two tile exist)\n"
    "  --confirm R    fresh random rows the point is confirmed on (default 1000)\n"
    "  --seed S       the seed of the random rows\n"
    "  --timeout S    --exec, --serve: seconds one call may take (default 600);\n"
    "                 past them the command and every process it started\n"
    "                 (its process group) are killed, and reveal exits 3\n"
    "  --space SPEC   trees (a file, or the text; the syntax of `parity fit\n"
    "                 --space`) tried first as spellings of the revealed order:\n"
    "                 your guesses of the kernel's loops; the first whose\n"
    "                 bracketing at N is the revealed one names the order, and\n"
    "                 the arithmetic is fitted on it\n"
    "  -v             progress on stderr\n"
    "  --html FILE    also write a report to look at: the verdict, the probes and\n"
    "                 calls, the confidence and the revealed tree drawn as a tree\n"
    "                 (docs/reports.md); not written on exit 2 or 3\n"
    "\n"
    "Stdout: the revealed order (with a `row class:` line per selector when\n"
    "rows reduce in different orders), the probes (rows) and calls used, the\n"
    "confidence, a `lengths:` line per length the point is confirmed at, a\n"
    "`rows:` line holding the point to single-row calls (R = 1; where they\n"
    "take another path, it is revealed one row a call under `R = 1, n = N:`\n"
    "and joined as a class `select = \"R == 1\"`, docs/reveal.md); the\n"
    "last line is the point as one inline TOML table that `parity reduce\n"
    "--numerics` accepts, or, when a confirmation row differs (at N or at\n"
    "another length), a line `not confirmed: ...` naming where and the point.\n"
    "\n"
    "exit status: 0 a point was revealed and reproduced every confirmation row;\n"
    "1 the probes reveal no tree, no point of the space fits, a confirmation\n"
    "row differs, at any length; 2 usage or bad input; 3 the kernel failed, or internal error.\n";

/* --space: the trees of its candidates, tried first as spellings of the
 * revealed order (pa_reveal_hints). */
static nx_status load_hints(const char *spec, nx_fmt in, rv_opts *o, nx_err *err)
{
    fit_space sp;
    fit_space_init(&sp, NX_FP32);
    fit_ctx ctx = {.out = NX_FP32, .in_fmt = in, .dot = 1};
    nx_status st = cli_load_space(spec, &ctx, &sp, err);
    if (!st)
        st = pa_reveal_hints(&sp, o, err);
    fit_space_free(&sp);
    return st;
}

/* The `induction:` line (docs/reveal.md "Induction"). */
static void print_induction(const rv_result *res)
{
    const char *none = "a tree with fused nodes that no tree of the language names";
    if (res->induce_n3 && res->induce != RV_INDUCE_NOT_RUN)
        printf("induction: folded lanes: probed at n = %zu too, a remainder that runs every loop between the "
               "folds (rows and calls counted below)\n",
               res->induce_n3);
    if (res->separate_n && res->separate_rounds > 1)
        printf("induction: %zu names hold at the lengths probed; at n = %zu, where their bracketings differ, and "
               "then at %zu more length%s up to n = %zu, %s\n",
               res->separate_names, res->separate_n, res->separate_rounds - 1, res->separate_rounds > 2 ? "s" : "",
               res->separate_n_last,
               res->separate_kept ? "the order is probed again and the first that holds at all of them is kept"
                                  : "the order is probed again and none holds (the first is kept)");
    else if (res->separate_n)
        printf("induction: %zu names hold at the lengths probed; at n = %zu, where their bracketings differ, %s\n",
               res->separate_names, res->separate_n,
               res->separate_kept ? "the order is probed again and the first that holds there is kept"
                                  : "the order is probed again and none holds (the first is kept)");
    if (res->induce_classes && res->induce != RV_INDUCE_NO_TREE) {
        printf("induction: probed again at n = %zu at every row index (%zu rows in %zu calls): the same row classes; "
               "%s\n",
               res->induce_n, res->induce_probes, res->induce_calls,
               res->induce == RV_INDUCE_HOLDS     ? "each class's name holds there too"
               : res->induce == RV_INDUCE_RENAMED ? "each class named by a tree that holds at both lengths (the names "
                                                    "above)"
                                                  : "a class has no name that holds at both lengths: named at n alone");
        return;
    }
    switch (res->induce) {
    case RV_INDUCE_HOLDS:
        printf("induction: probed again at n = %zu (%zu rows in %zu calls): the same name holds there\n",
               res->induce_n, res->induce_probes, res->induce_calls);
        break;
    case RV_INDUCE_RENAMED:
        if (res->induce_n3 || res->separate_n)
            printf("induction: probed again at n = %zu (%zu rows in %zu calls): %s has the bracketing of n = %zu but "
                   "not of every length probed; %s has all\n",
                   res->induce_n, res->induce_probes, res->induce_calls, res->induce_alone, res->n, res->tree_text);
        else
            printf("induction: probed again at n = %zu (%zu rows in %zu calls): %s has the bracketing of n = %zu but "
                   "not of n = %zu; %s has both\n",
                   res->induce_n, res->induce_probes, res->induce_calls, res->induce_alone, res->n, res->induce_n,
                   res->tree_text);
        break;
    case RV_INDUCE_ONE_LENGTH:
        printf("induction: probed again at n = %zu (%zu rows in %zu calls): there the order is %s; no tree of the "
               "language has the bracketings of both lengths: the order is named at n = %zu alone\n",
               res->induce_n, res->induce_probes, res->induce_calls, res->induce_other ? res->induce_other : none,
               res->n);
        break;
    case RV_INDUCE_NO_TREE:
        printf("induction: probed again at n = %zu (%zu rows in %zu calls): no tree (%s); the order is named at "
               "n = %zu alone\n",
               res->induce_n, res->induce_probes, res->induce_calls, res->induce_why ? res->induce_why : "?", res->n);
        break;
    default:
        if (res->tree_text && res->nclass > 1)
            printf("induction: not run: the kernel has row classes; the order is named at n = %zu alone\n", res->n);
    }
}

/* rv_say's line: one line of stdout. */
static void say_line(void *ctx, const char *text)
{
    (void)ctx;
    printf("%s\n", text);
}

/* One length: the order, the arithmetic and the confirmation at o->n, with
 * their lines on stdout.  The point is printed here only when its
 * confirmation rows differ (exit 1); otherwise generalise() prints it. */
static int reveal_one(rv_kernel *k, const rv_opts *o, int order_only, rv_result *res, nx_err *err)
{
    int rc = EXIT_PASS;
    nx_status st = rv_reveal_order(k, o, res, err);
    if (st) {
        if (st == NX_EUNSUPPORTED) {
            cli_error("reveal", "%s", err->msg);
            printf("order: not revealed (%zu probes in %zu calls)\n", res->order_probes, res->order_calls);
            rc = EXIT_PARITY;
        } else
            rc = cli_fail("reveal", err);
        return rc;
    }
    if (res->n <= 64) {
        char *br = rv_tree_text(&res->tree);
        printf("bracketing: %s\n", br ? br : "?");
        free(br);
    }
    printf("order: %s\n", res->tree_text ? res->tree_text : "a tree with fused nodes that no tree of the language names");
    printf("order probes: %zu rows in %zu calls (n = %zu; counts exact to %d bits; %s)\n", res->order_probes,
           res->order_calls, res->n, res->count_bits,
           res->filler_sign > 0 ? "positive fillers"
           : res->filler_sign < 0 ? "negative fillers (rounding up)"
                                 : "counts modulo the ulp of M (rounding toward zero)");
    for (size_t c = 1; c < res->nclass; c++)
        printf("row class: select = \"%s\", order: %s (rows probed at every index of %zu)\n", res->class_select[c],
               res->class_tree[c], res->probe_rows);
    if (res->rows_nR) {
        printf("row selectors: held at R = %zu and at R =", res->probe_rows);
        for (size_t i = 0; i < res->rows_nR; i++)
            printf("%s %zu", i ? "," : "", res->rows_R[i]);
        printf(" (%zu probe rows in %zu calls)\n", res->rows_probes, res->rows_calls);
    }
    print_induction(res);
    if (!res->tree_text) {
        rc = EXIT_PARITY;
        return rc;
    }
    if (order_only) {
        printf("%s\n", res->tree_text);
        return rc;
    }
    st = rv_reveal_arith(k, o, res, err);
    if (st) {
        rc = cli_fail("reveal", err);
        return rc;
    }
    printf("arithmetic probes: %zu rows in %zu calls\n", res->arith_probes, res->arith_calls);
    for (size_t c = res->nclass - res->arith_classes; c < res->nclass; c++)
        printf("row class: select = \"%s\", order: %s, the arithmetic apart (rows whose order the probes could not "
               "tell from the others', whose results are not theirs)\n",
               res->class_select[c], res->class_tree[c]);
    if (res->disambig_tried)
        printf("arithmetic: %zu points of the space fit the search rows; at n = %zu, %zu sparse rows on which they "
               "disagree and %zu random rows: %zu of them reproduce all%s\n",
               res->disambig_tried, res->disambig_n, res->disambig_sparse, res->disambig_rows, res->disambig_held,
               res->disambig_held ? ", the first is kept" : "; the first is kept, unconfirmed");
    if (res->per_part)
        printf("arithmetic: no point of the space reproduces the search rows; each part of the tree in a setting of "
               "its own does, %s (%zu probe rows, %zu of the settings settled on the search rows, %zu points "
               "evaluated, docs/reveal.md \"Per-part arithmetic\")\n",
               res->per_part == RV_PER_PART_PROBED     ? "each read from rows that only its own additions round"
               : res->per_part == RV_PER_PART_SEARCHED ? "found by a search over the search rows"
                                                       : "read from rows of its own for some classes, searched for others",
               res->part_probes, res->part_settled, res->part_evals);
    printf("calls: %zu, probes: %zu in all\n", k->calls, k->probes);
    if (!res->point) {
        printf("arithmetic: no point of the space reproduces the kernel with this order\n");
        /* an expr that is the order itself (not a lanes combine, whose
         * lanes are running sums that fuse) */
        if (res->tree_text && !strncmp(res->tree_text, "expr(", 5))
            fprintf(stderr, "parity reveal: the order is spelled with expr(...), whose additions never fuse: a "
                            "vector kernel with FMA lanes, or a body and tail in different formats, needs a tree "
                            "that says so (stride, body, lanes: docs/numerics.md section 4.2), found with `parity fit "
                            "--space` on the kernel's outputs (docs/fit.md, \"Real kernels\")\n");
        rc = EXIT_PARITY;
        return rc;
    }
    printf("confidence: reproduced %zu of %zu fresh random rows%s", res->confirm_ok, res->confirm_rows,
           res->alternatives ? "" : "\n");
    if (res->alternatives)
        printf("; %zu other points of the space fit the fitted rows too\n", res->alternatives);
    if (res->confirm_ok != res->confirm_rows) {
        /* refuted: the point is named, not given as the answer (a script
         * that reads the last line must not take it for one) */
        printf("not confirmed: the point revealed at n = %zu reproduced %zu of %zu fresh random rows: %s\n", res->n,
               res->confirm_ok, res->confirm_rows, res->point);
        rc = EXIT_PARITY;
    } else {
        /* induction saw another order that no name shares: a size class,
         * or the point held to that length */
        int v;
        rv_say say = {say_line, NULL};
        if (rv_one_length(k, o, res, &say, &v, err))
            return cli_fail("reveal", err);
        if (v == RV_LEN_REFUSED)
            rc = EXIT_PARITY;
    }
    return rc;
}

/* Each length of lens revealed by reveal_one (under a header `PREFIXn =
 * N:` where there are several lengths or a prefix), then one point for
 * all of them, confirmed at lengths not probed (rv_generalise).  res: the
 * last length's result.  The exit status (a failure already said); *pt
 * (malloc'd) the point where it is EXIT_PASS and not order_only. */
static int reveal_lengths(rv_kernel *k, rv_opts *o, const size_t *lens, size_t nlens, int order_only,
                          const char *prefix, rv_result *res, char **pt, nx_err *err)
{
    char *points[RV_MAX_LENGTHS] = {0};
    int rc = EXIT_PASS;
    *pt = NULL;
    for (size_t l = 0; l < nlens && rc == EXIT_PASS; l++) {
        if (nlens > 1 || prefix[0])
            printf("%sn = %zu:\n", prefix, lens[l]);
        if (l > 0) {
            rv_result_free(res);
            memset(res, 0, sizeof *res);
        }
        o->n = lens[l];
        rc = reveal_one(k, o, order_only, res, err);
        if (rc == EXIT_PASS && !order_only && res->point && !(points[l] = strdup(res->point))) {
            nx_err_set(err, NX_ENOMEM, "out of memory");
            rc = cli_fail("reveal", err);
        }
        if (rc == EXIT_PARITY && nlens > 1)
            printf("lengths: stopped at n = %zu: no confirmed point there (above)\n", lens[l]);
    }
    if (rc == EXIT_PASS && !order_only) {
        int v;
        rv_say say = {say_line, NULL};
        if (rv_generalise(k, o, lens, nlens, points, &say, &v, pt, err))
            rc = cli_fail("reveal", err);
        else if (v == RV_LEN_REFUSED)
            rc = EXIT_PARITY;
    }
    for (size_t l = 0; l < nlens; l++)
        free(points[l]);
    return rc;
}

/* The one-row path (rv_one_row's reveal_fn; k sends every row alone):
 * the lengths revealed as the batches were, under `R = 1, n = N:`. */
struct one_row_ctx {
    const size_t *lens;
    size_t nlens;
    int rc; /* the exit status where it failed (and said so) */
};

static nx_status reveal_rows1(rv_kernel *k, const rv_opts *o0, void *ctx, char **point, nx_err *err)
{
    struct one_row_ctx *c = ctx;
    rv_opts o = *o0;
    rv_result res = {0};
    int rc = reveal_lengths(k, &o, c->lens, c->nlens, 0, "R = 1, ", &res, point, err);
    rv_result_free(&res);
    if (rc == EXIT_PASS || rc == EXIT_PARITY)
        return NX_OK;
    c->rc = rc;
    return err->code ? err->code : NX_EINTERNAL;
}

/* Parses --n: one length or a list N1,N2,... (each 2 ... RV_MAX_N, no
 * repeats). */
static int parse_lengths(const char *s, size_t *lens, size_t *nlens)
{
    *nlens = 0;
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        cli_error("reveal", "--n: the list is too long");
        return 1;
    }
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*nlens == RV_MAX_LENGTHS) {
            cli_error("reveal", "--n: at most %d lengths", RV_MAX_LENGTHS);
            return 1;
        }
        char *end;
        errno = 0;
        long long big = strtoll(tok, &end, 10);
        if (!errno && *end == 0 && end != tok && big > RV_MAX_N) {
            cli_error("reveal", "--n: %lld is above the limit %d: the order's probes cost about n^1.8 probe terms "
                      "(%d takes about 90 s on two cores; docs/limits.md)", big, RV_MAX_N, RV_MAX_N);
            return 1;
        }
        long v = cli_long("reveal", "--n", tok, 2, RV_MAX_N);
        if (v < 0)
            return 1;
        for (size_t q = 0; q < *nlens; q++)
            if (lens[q] == (size_t)v) {
                cli_error("reveal", "--n: %ld is listed twice", v);
                return 1;
            }
        lens[(*nlens)++] = (size_t)v;
    }
    if (*nlens == 0 || s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,")) {
        cli_error("reveal", "--n: '%s' is not a length or a list N1,N2,...", s);
        return 1;
    }
    return 0;
}

int cmd_reveal(int argc, char **argv)
{
    const char *exec = NULL, *serve = NULL, *dl = NULL, *sim = NULL, *nstr = NULL, *dtype = "F32";
    const char *rows_s = NULL, *conf_s = NULL, *seed_s = NULL, *html = NULL, *space_s = NULL, *timeout_s = NULL;
    const char *grid_s = NULL;
    int bad = 0, order_only = 0, verbose = 0, shared = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--shared-b")) {
            shared = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--exec", &exec, &bad) || cli_opt(argc, argv, &i, "--serve", &serve, &bad) ||
            cli_opt(argc, argv, &i, "--dlopen", &dl, &bad) || cli_opt(argc, argv, &i, "--simulate", &sim, &bad) ||
            cli_opt(argc, argv, &i, "--n", &nstr, &bad) || cli_opt(argc, argv, &i, "--dtype", &dtype, &bad) ||
            cli_opt(argc, argv, &i, "--rows", &rows_s, &bad) || cli_opt(argc, argv, &i, "--confirm", &conf_s, &bad) ||
            cli_opt(argc, argv, &i, "--seed", &seed_s, &bad) || cli_opt(argc, argv, &i, "--html", &html, &bad) ||
            cli_opt(argc, argv, &i, "--space", &space_s, &bad) || cli_opt(argc, argv, &i, "--timeout", &timeout_s, &bad) ||
            cli_opt(argc, argv, &i, "--grid", &grid_s, &bad))
            continue;
        if (cli_flag(argv, i, "--order-only")) {
            order_only = 1;
            continue;
        }
        if (cli_flag(argv, i, "-v") || cli_flag(argv, i, "--verbose")) {
            verbose = 1;
            continue;
        }
        cli_error("reveal", "unknown option '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!!exec + !!serve + !!dl + !!sim != 1) {
        cli_error("reveal", "give exactly one of --exec, --serve, --dlopen, --simulate (see --help)");
        return EXIT_INPUT;
    }
    if (!nstr) {
        cli_error("reveal", "--n is required");
        return EXIT_INPUT;
    }
    if (html) {
        /* the library of --dlopen LIB:SYMBOL is an input */
        char lib[4096] = "";
        const char *colon = dl ? strrchr(dl, ':') : NULL;
        if (dl)
            snprintf(lib, sizeof lib, "%.*s", colon ? (int)(colon - dl) : (int)strlen(dl), dl);
        /* and a --space that names a file (else it is the space's text) */
        struct stat sb;
        cli_file ins[2 + 16];
        size_t nins = 0;
        if (dl)
            ins[nins++] = (cli_file){"--dlopen", lib};
        if (space_s && stat(space_s, &sb) == 0)
            ins[nins++] = (cli_file){"--space", space_s};
        /* and every word of the kernel's command that names a file (its
         * script, its program): the report must not replace the kernel */
        const char *cmdline = exec ? exec : serve;
        char words[16][1024];
        size_t nw = 0;
        for (const char *w = cmdline; w && *w && nw < 16;) {
            w += strspn(w, " \t");
            size_t l = strcspn(w, " \t");
            if (l && l < sizeof words[0]) {
                memcpy(words[nw], w, l);
                words[nw][l] = 0;
                if (stat(words[nw], &sb) == 0 && S_ISREG(sb.st_mode)) {
                    ins[nins++] = (cli_file){exec ? "--exec" : "--serve", words[nw]};
                    nw++;
                }
            }
            w += l;
        }
        const cli_file outs[] = {{"--html", html}};
        if (cli_check_outputs("reveal", outs, 1, ins, nins))
            return EXIT_INPUT;
    }
    rv_opts o = {0};
    long v;
    size_t lens[RV_MAX_LENGTHS], nlens = 0;
    if (parse_lengths(nstr, lens, &nlens))
        return EXIT_INPUT;
    o.n = lens[0];
    if (rows_s && (v = cli_long("reveal", "--rows", rows_s, 1, 1L << 20)) < 0)
        return EXIT_INPUT;
    o.fit_rows = rows_s ? (size_t)v : 0;
    /* rows x n bounded before anything is allocated: the probe and
     * arithmetic rows hold a, b, y and their exact evaluation, about 48
     * bytes a term (--max-bytes; docs/limits.md) */
    for (size_t l = 0; l < nlens; l++) {
        nx_err le = {0};
        char what[96];
        size_t r = o.fit_rows ? o.fit_rows : RV_DEFAULT_ROWS;
        snprintf(what, sizeof what, "reveal --rows %zu at n = %zu (about 48 bytes a term)", r, lens[l]);
        if (nx_limits_terms(r, lens[l], what, &le) || nx_limits_elems((uint64_t)r * lens[l], 48, what, &le))
            return cli_fail("reveal", &le);
    }
    size_t gm = 0, gn = 0;
    if (grid_s) {
        char *e1, *e2 = NULL;
        errno = 0;
        unsigned long long m = strtoull(grid_s, &e1, 10), nn = *e1 == ',' ? strtoull(e1 + 1, &e2, 10) : 0;
        if (errno || !isdigit((unsigned char)grid_s[0]) || *e1 != ',' || !isdigit((unsigned char)e1[1]) || *e2 ||
            m > RV_GRID_MAX_SIDE || nn > RV_GRID_MAX_SIDE) {
            cli_error("reveal", "--grid: '%s' is not M,N (two integers, 1 to %d each)", grid_s, RV_GRID_MAX_SIDE);
            return EXIT_INPUT;
        }
        gm = (size_t)m;
        gn = (size_t)nn;
        nx_err ge = {0};
        for (size_t q = 0; q < nlens; q++)
            if (rv_grid_check(gm, gn, lens[q], shared, &ge)) {
                cli_error("reveal", "--grid: %s", ge.msg);
                return EXIT_INPUT;
            }
        if (rows_s && o.fit_rows != gm * gn) {
            cli_error("reveal", "--rows %zu: a grid kernel's batch is its M x N = %zu outputs", o.fit_rows, gm * gn);
            return EXIT_INPUT;
        }
        o.fit_rows = gm * gn;
        /* the kernel learns its grid from the environment (every backend:
         * a child inherits it, a library reads it in process) */
        char env[64];
        snprintf(env, sizeof env, "%zu,%zu", gm, gn);
        if (setenv("PARITY_GRID", env, 1)) {
            cli_error("reveal", "--grid: cannot set PARITY_GRID: %s", strerror(errno));
            return EXIT_INPUT;
        }
    } else
        unsetenv("PARITY_GRID"); /* a kernel never sees a grid reveal did not set */
    if (conf_s && (v = cli_long("reveal", "--confirm", conf_s, 1, 1L << 20)) < 0)
        return EXIT_INPUT;
    o.confirm_rows = conf_s ? (size_t)v : 0;
    if (seed_s) {
        char *end;
        errno = 0;
        o.seed = strtoull(seed_s, &end, 0);
        /* strtoull would take "-1" as 2^64 - 1, skip leading blanks, and
         * saturate past 2^64 - 1 */
        if (errno || !isdigit((unsigned char)seed_s[0]) || *end) {
            cli_error("reveal", "--seed: '%s' is not an unsigned integer", seed_s);
            return EXIT_INPUT;
        }
    }
    double timeout = RV_TIMEOUT_DEFAULT_S;
    if (timeout_s) {
        char *end;
        errno = 0;
        timeout = strtod(timeout_s, &end);
        if (errno || end == timeout_s || *end || !(timeout > 0 && timeout <= 31536000)) {
            cli_error("reveal", "--timeout: '%s' is not a number of seconds in (0, 31536000]", timeout_s);
            return EXIT_INPUT;
        }
    }
    o.order_only = order_only;
    o.verbose = verbose;
    st_dtype dt;
    int in = -1;
    if (st_dtype_from_name(dtype, &dt))
        in = rows_fmt_of_dtype(dt);
    if (in != NX_FP32 && in != NX_BF16 && in != NX_FP16 && in != NX_FP64) {
        cli_error("reveal", "--dtype: '%s' is not one of F32, BF16, F16, F64", dtype);
        return EXIT_INPUT;
    }
    if (shared && in == NX_FP16) {
        /* the order's probes split their large values between a and b: a
         * product that fp16 cannot hold, so no one b can carry them */
        cli_error("reveal", "--shared-b takes F32, BF16 or F64 inputs: the order's probes need products beyond "
                            "F16's range, which rows that share b cannot carry");
        return EXIT_INPUT;
    }
    nx_err err = {0};
    if (space_s && load_hints(space_s, (nx_fmt)in, &o, &err) != NX_OK)
        return cli_fail("reveal", &err);
    rv_kernel *k = NULL;
    nx_status st = exec ? rv_kernel_exec(exec, (nx_fmt)in, &k, &err)
                   : serve ? rv_kernel_serve(serve, (nx_fmt)in, &k, &err)
                   : dl ? rv_kernel_dlopen(dl, (nx_fmt)in, &k, &err)
                        : rv_kernel_point(sim, (nx_fmt)in, &k, &err);
    if (st) {
        pa_free_hints(&o);
        return cli_fail("reveal", &err);
    }
    k->timeout_s = timeout;
    k->shared_b = shared;
    k->grid_m = gm;
    k->grid_n = gn;
    rv_result res = {0};
    char *pt = NULL;
    int rc = reveal_lengths(k, &o, lens, nlens, order_only, "", &res, &pt, &err);
    if (rc == EXIT_PASS && !order_only) {
        /* one row a call, a batch size the probes never send: held there,
         * and where it fails that path revealed and joined */
        struct one_row_ctx c1 = {lens, nlens, 0};
        rv_say say = {say_line, NULL};
        char *fin = NULL;
        if (rv_one_row(k, &o, lens[0], pt, reveal_rows1, &c1, &say, &fin, &err))
            rc = c1.rc ? c1.rc : cli_fail("reveal", &err); /* reveal_rows1 said it */
        else {
            printf("%s\n", fin);
            /* the report shows the point printed last (a size class or the
             * one-row path joined), not the last length's own */
            free(res.point);
            res.point = fin;
        }
    }
    free(pt);
    if (html && (rc == EXIT_PASS || rc == EXIT_PARITY)) {
        const char *kernel = exec ? exec : serve ? serve : dl ? dl : sim;
        char what[1024];
        snprintf(what, sizeof what, "%s %s", exec ? "--exec" : serve ? "--serve" : dl ? "--dlopen" : "--simulate",
                 kernel);
        if (cli_html_reveal(html, what, &res, k->calls, k->probes, rc, &err) != NX_OK)
            rc = cli_fail("reveal", &err);
    }
    rv_result_free(&res);
    rv_kernel_free(k);
    pa_free_hints(&o);
    return rc;
}
