/* cmd_fit.c: `parity fit`: searches a space of numerics points for one that
 * reproduces given outputs bit for bit (docs/fit.md, parity/fit/). */
#include "cli.h"
#include "pa_core.h"
#include "rows_input.h"
#include "nx_limits.h"
#include "fit.h"
#include "npy.h"
#include "rows.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: parity fit --in IN --ref Y [--in IN2 --ref Y2 ...] [--space SPEC]\n"
    "                  [--max N] [--threads T] [--json] [--no-classes] [--grid M,N]\n"
    "\n"
    "Searches a space of numerics points for one whose exact evaluation\n"
    "reproduces every Y bit for bit.  IN holds 'a' (and 'b', optional 'c') of\n"
    "shape [rows, n] as for `parity reduce`; Y holds 'y' [rows] (safetensors) or\n"
    "is a .npy array.  Pairs may differ in n and rows: one point must explain\n"
    "them all.  The candidates' out format is Y's dtype.\n"
    "\n"
    "options:\n"
    "  --in FILE, --ref FILE  an input and its outputs (repeatable, in pairs)\n"
    "  --space SPEC  a file, or the text itself: lines (or ';'-separated items)\n"
    "                of trees (crossed with the default settings), inline TOML\n"
    "                points, `let NAME = v1, v2` lists expanded where {NAME}\n"
    "                appears, and the words `default` and `atoms` (docs/fit.md)\n"
    "  --max N       evaluate only the first N candidates\n"
    "  --threads T   candidates evaluated in parallel (default: all cores)\n"
    "  --json        a JSON summary line on stdout before the point\n"
    "  --no-classes  do not fit row classes when no single point fits\n"
    "  --grid M,N    the rows of every pair are an M x N grid (row r = i * N + j;\n"
    "                M * N must be each pair's row count): row classes over i, j,\n"
    "                M, N (edge tiles, up to two rectangles of row and column\n"
    "                sets) are tried first, and the point holds grid = [M, N]\n"
    "\n"
    "Progress on stderr.  The last line of stdout is the fitted point as one\n"
    "inline TOML table that `parity reduce --numerics` accepts.\n"
    "\n"
    "exit status: 0 a point reproduces every row (verified with MPFR); 1 nothing in\n"
    "the space does (the closest candidates are printed with their mismatch\n"
    "counts); 2 bad input, named with the file and tensor; 3 internal error.\n";

#define MAX_PAIRS 64

typedef struct pair_data {
    st_file in, yf;
    npy_array ny;
    pa_fit_vals v;
} pair_data;

/* "M,N": two positive integers; -1 when malformed */
static int parse_grid(const char *v, long *m, long *n)
{
    char *e;
    if (*v < '0' || *v > '9')
        return -1;
    *m = strtol(v, &e, 10);
    if (*e != ',' || e[1] < '0' || e[1] > '9')
        return -1;
    *n = strtol(e + 1, &e, 10);
    if (*e || *m <= 0 || *n <= 0 || *m > (1L << 30) || *n > (1L << 30))
        return -1;
    return 0;
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static nx_status load_pair(const char *inp, const char *yp, pair_data *d, fit_pair *fp, nx_fmt *yfmt, nx_err *err)
{
    const st_tensor *ta, *tb, *tc, *ty;
    nx_status st;
    if ((st = st_read(inp, &d->in, err)) || (st = rows_check_inputs_c(inp, &d->in, &ta, &tb, &tc, err)))
        return st;
    size_t rows = (size_t)ta->shape[0];
    if (ends_with(yp, ".npy")) {
        if ((st = npy_read(yp, NULL, &d->ny, err)))
            return st;
        ty = &d->ny.t;
    } else {
        if ((st = st_read(yp, &d->yf, err)))
            return st;
        if (!(ty = st_find(&d->yf, "y")))
            return nx_err_set(err, NX_EINVAL, "%s: no tensor 'y' (expected the outputs, shape [%zu])", yp, rows);
    }
    const char *tn = ty == &d->ny.t ? "the array" : "tensor 'y'";
    return pa_fit_pair(inp, ta, tb, tc, yp, tn, ty, &d->v, fp, yfmt, err);
}

int cmd_fit(int argc, char **argv)
{
    const char *ins[MAX_PAIRS], *refs[MAX_PAIRS], *space_s = NULL, *max_s = NULL, *threads_s = NULL, *grid_s = NULL,
               *v;
    size_t nin = 0, nref = 0;
    int bad = 0, json = 0, classes = 1;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--json")) {
            json = 1;
            continue;
        }
        if (cli_flag(argv, i, "--no-classes")) {
            classes = 0;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--in", &v, &bad)) {
            if (nin == MAX_PAIRS) {
                cli_error("fit", "at most %d --in files", MAX_PAIRS);
                return EXIT_INPUT;
            }
            ins[nin++] = v;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--ref", &v, &bad)) {
            if (nref == MAX_PAIRS) {
                cli_error("fit", "at most %d --ref files", MAX_PAIRS);
                return EXIT_INPUT;
            }
            refs[nref++] = v;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--grid", &v, &bad)) {
            if (grid_s) {
                cli_error("fit", "--grid given twice: one grid holds for every pair (the fitted point holds one)");
                return EXIT_INPUT;
            }
            grid_s = v;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--space", &space_s, &bad) || cli_opt(argc, argv, &i, "--max", &max_s, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad))
            continue;
        cli_error("fit", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!nin || nin != nref) {
        cli_error("fit", "needs --in and --ref in pairs (%zu --in, %zu --ref; see --help)", nin, nref);
        return EXIT_INPUT;
    }
    long maxc = 0, threads = 0;
    if (max_s && (maxc = cli_long("fit", "--max", max_s, 1, 1L << 30)) < 0)
        return EXIT_INPUT;
    if (threads_s && (threads = cli_long("fit", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;
    long grid_m = 0, grid_n = 0;
    if (grid_s && parse_grid(grid_s, &grid_m, &grid_n)) {
        cli_error("fit", "--grid '%s': expected M,N, two positive integers (the rows as an M x N grid)", grid_s);
        return EXIT_INPUT;
    }

    pair_data pd[MAX_PAIRS];
    fit_pair fp[MAX_PAIRS];
    memset(pd, 0, sizeof pd);
    for (size_t p = 0; p < nin; p++) {
        st_init(&pd[p].in);
        st_init(&pd[p].yf);
        npy_init(&pd[p].ny);
    }
    nx_err err = {0};
    nx_status st = NX_OK;
    int rc = EXIT_PASS;
    fit_space space;
    fit_space_init(&space, NX_FP32);
    fit_result res;
    memset(&res, 0, sizeof res);
    nx_fmt yfmt = NX_FP32;
    for (size_t p = 0; p < nin && !st; p++) {
        nx_fmt f = NX_FP32;
        st = load_pair(ins[p], refs[p], &pd[p], &fp[p], &f, &err);
        if (st)
            break;
        if (p)
            st = pa_fit_pairs_agree(fp, p, f, yfmt, ins[p], refs[p], ins[0], refs[0], &err);
        yfmt = f;
        fp[p].grid_m = grid_m;
        fp[p].grid_n = grid_n;
        if (!st && grid_s && (size_t)grid_m * (size_t)grid_n != fp[p].in.rows)
            st = nx_err_set(&err, NX_EINVAL, "--grid %ld,%ld lays out %ld rows, but pair %zu (%s, %s) has %zu", grid_m,
                            grid_n, grid_m * grid_n, p + 1, ins[p], refs[p], fp[p].in.rows);
    }
    if (st)
        goto fail;
    fit_ctx ctx = {.out = yfmt, .in_fmt = fp[0].in.a_fmt, .dot = fp[0].dot};
    space.out = yfmt;
    if (space_s) {
        if ((st = cli_load_space(space_s, &ctx, &space, &err)))
            goto fail;
    } else if ((st = fit_space_default(&space, &ctx, 0, &err)))
        goto fail;
    size_t total_rows = 0;
    for (size_t p = 0; p < nin; p++)
        total_rows += fp[p].in.rows;
    fprintf(stderr, "parity fit: %zu candidates (out %s), %zu pair(s), %zu rows\n",
            maxc && (size_t)maxc < space.count ? (size_t)maxc : space.count, nx_format(yfmt)->name, nin, total_rows);
    fit_opts o = {.threads = (int)threads,
                  .max = (size_t)maxc,
                  .progress = 1,
                  .engine = NX_ENGINE_FAST,
                  .classes = classes,
                  .verify = 1,
                  .parts = 1};
    if ((st = fit_run(fp, nin, &space, &o, &res, &err)))
        goto fail;
    if (res.found) {
        /* what the lengths could not show: a tail that runs only at the
         * remainders no pair has (n mod 4 in {2, 3} from n = 300, 517,
         * 1000) is not in the rows, and the point may miss it */
        for (size_t m = 2; m <= 8; m *= 2) {
            unsigned seen = 0;
            for (size_t p = 0; p < nin; p++)
                seen |= 1u << (fp[p].n % m);
            if (seen == (1u << m) - 1)
                continue;
            char miss[64] = "";
            for (size_t r = 0; r < m; r++)
                if (!(seen & (1u << r)))
                    snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%zu", *miss ? ", " : "", r);
            fprintf(stderr, "parity fit: note: no pair has n mod %zu in {%s}: a path that runs only there (a tail, "
                    "a peel) is not in these rows; fit or check the point at such a length too\n", m, miss);
            break;
        }
    }
    if (json) {
        json_t *j = json_object(), *near = json_array();
        json_object_set_new(j, "found", json_boolean(res.found));
        json_object_set_new(j, "point", res.point ? json_string(res.point) : json_null());
        json_object_set_new(j, "row_classes", json_integer((json_int_t)res.nclasses));
        json_object_set_new(j, "per_part", json_boolean(res.per_part));
        json_object_set_new(j, "candidates", json_integer((json_int_t)res.evaluated));
        json_object_set_new(j, "over_work", json_integer((json_int_t)res.over_work));
        json_object_set_new(j, "candidates_fitting", json_integer((json_int_t)res.nfit));
        json_object_set_new(j, "rows", json_integer((json_int_t)res.total_rows));
        json_object_set_new(j, "row_evaluations", json_integer((json_int_t)res.row_evals));
        json_object_set_new(j, "seconds", json_real(res.seconds));
        json_object_set_new(j, "candidates_per_second", json_real(res.cands_per_s));
        for (size_t i = 0; i < res.nnear; i++) {
            char *t = fit_cand_text(&space, res.near[i].cand);
            json_t *e = json_object();
            json_object_set_new(e, "point", json_string(t ? t : "?"));
            json_object_set_new(e, "mismatched_rows", json_integer((json_int_t)res.near[i].mismatches));
            json_array_append_new(near, e);
            free(t);
        }
        json_object_set_new(j, "closest", near);
        char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(j);
    }
    if (res.found) {
        fprintf(stderr, "parity fit: reproduces all %zu rows (verified with MPFR)%s; %zu candidate(s) fit on their own\n",
                res.total_rows, res.nclasses ? " with row classes" : "", res.nfit);
        for (size_t i = 0; i < res.nalt && i < FIT_SHOW_ALT; i++) { /* ranked below the winner: later in the space */
            char *t = fit_cand_text(&space, res.alt[i]);
            fprintf(stderr, "parity fit: also fits: %s\n", t ? t : "?");
            free(t);
        }
        printf("%s\n", res.point);
    } else {
        rc = EXIT_PARITY;
        fprintf(stderr, "parity fit: no point in the space (%zu candidates) reproduces every row; closest:\n",
                res.evaluated);
        for (size_t i = 0; i < res.nnear; i++) {
            char *t = fit_cand_text(&space, res.near[i].cand);
            printf("closest %zu: %zu/%zu rows differ: %s\n", i + 1, res.near[i].mismatches, res.total_rows,
                   t ? t : "?");
            free(t);
        }
        if (!res.nnear)
            printf("no candidate could be evaluated\n");
    }
    if (res.over_work)
        fprintf(stderr,
                "parity fit: %zu candidate%s skipped: a pair's rows x the operations of %s expansion are more than "
                "--max-work (%llu; raise it with --max-work)\n",
                res.over_work, res.over_work == 1 ? "" : "s", res.over_work == 1 ? "its" : "their",
                (unsigned long long)nx_limits_get()->max_work);
    fflush(stdout);
    goto out;
fail:
    rc = cli_fail("fit", &err);
out:
    fit_result_free(&res);
    fit_space_free(&space);
    for (size_t p = 0; p < nin; p++) {
        st_free(&pd[p].in);
        st_free(&pd[p].yf);
        npy_free(&pd[p].ny);
        pa_fit_vals_free(&pd[p].v);
    }
    return rc;
}
