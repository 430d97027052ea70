/* cmd_reduce.c: `parity reduce`, docs/numerics.md §6: evaluates a numerics point
 * over the rows of IN and writes tensor y to OUT (atomically: a failure
 * leaves OUT as it was).  Engines: mpfr (the truth), fast (bit-identical,
 * nx_engine_fast.c) and auto (fast, then a deterministic sample of rows
 * re-evaluated by MPFR: a difference is an internal error, exit 3, and
 * nothing is written).  --report writes each row's exact value, error in
 * ulps and a-priori bound (nx_bound.h) as JSON, atomically too. */
#include "cli.h"
#include "pa_core.h"
#include "nx_bound.h"
#include "nx_engine.h"
#include "nx_limits.h"
#include "nx_rowclass.h"
#include "nx_simd.h"
#include "point_toml.h"
#include "rows.h"
#include "rows_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <jansson.h>
#include <math.h>
#include <mpfr.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char reduce_usage[] =
    "usage: parity reduce --numerics POINT --in IN.safetensors --out OUT.safetensors\n"
    "                     [--engine auto|fast|mpfr] [--check K] [--report FILE.json]\n"
    "                     [--threads N]\n"
    "\n"
    "Evaluates the numerics point POINT (an inline TOML table, docs/numerics.md §3)\n"
    "over every row of IN: tensor 'a' of shape [rows, n] and, for a dot product,\n"
    "tensor 'b' of the same shape, in any dtype of docs/numerics.md §1.  Row r's terms\n"
    "are a[r,i]*b[r,i] (or a[r,i]).  An optional tensor 'c' of shape [rows], any\n"
    "dtype of §1, is the accumulator's start value, the C of D = A*B + C: row r\n"
    "is reduced from c[r], exactly (docs/numerics.md §4.1, §6).  OUT receives tensor\n"
    "'y' of shape [rows] in the point's `out` format (tf32 and e8m13 are stored as F32, and so are F4/F6\n"
    "formats whose rows do not fill whole bytes), with the canonical\n"
    "point and its hash in __metadata__ (and c's dtype, when IN has c).  Every\n"
    "engine gives the same bits.\n"
    "\n"
    "example:\n"
    "  parity reduce --numerics '{ acc = \"fp32\", tree = \"split(4, seq, pairwise)\" }' \\\n"
    "                --in in.safetensors --out y.safetensors --report y.json\n"
    "\n"
    "options:\n"
    "  --numerics P   the numerics point (required)\n"
    "  --in FILE      input safetensors (required)\n"
    "  --out FILE     output safetensors (required); written to a temporary file\n"
    "                 and renamed, so a failure leaves an existing file untouched\n"
    "  --engine E     auto (the default): the fast engine, then K rows (first,\n"
    "                   last and evenly spaced between) re-evaluated by MPFR; any\n"
    "                   difference is an internal error (exit 3, nothing written);\n"
    "                 fast: the fast engine alone (docs/engines.md);\n"
    "                 mpfr: the exact reference alone (slow)\n"
    "  --check K      rows auto re-evaluates with MPFR (default 32; all if fewer)\n"
    "  --report FILE  also write FILE.json: per row the exact value (hex float and\n"
    "                 decimal; the terms' sum + c), the result, its error in ulps of the out format\n"
    "                 and the a-priori error bound; a summary with the largest\n"
    "                 error and the largest bound/observed ratio.  Atomic, like OUT\n"
    "  --threads N    rows evaluated in parallel (default: all cores); never\n"
    "                 changes a bit.  PARITY_SIMD=off|scalar|avx2|avx512 picks the\n"
    "                 fast engine's vector path (docs/engines.md); never a bit either\n"
    "\n"
    "Sizes from IN are held to the global limits --max-bytes, --max-terms, --max-ops\n"
    "and --max-work (`parity --help`, docs/limits.md) before anything is allocated.\n"
    "\n"
    "exit status: 0 success; 2 bad point, file or shape, or a size over a limit\n"
    "(OUT is not written);\n"
    "3 internal error: the engines disagreed (nothing is written), or out of memory.\n";

typedef struct reduce_job {
    nx_point pt;
    int have_pt;
    st_file in, out;
    pa_reduce_out r;
} reduce_job;

static void job_free(reduce_job *j)
{
    if (j->have_pt)
        nx_point_free(&j->pt);
    st_free(&j->in);
    st_free(&j->out);
    pa_reduce_out_free(&j->r);
}

/* The pattern of a result in the out format; 0 when it has none (a NaN in
 * a format without NaN). */
static int pattern_of(nx_fmt f, double v, uint64_t *bits)
{
    return nx_encode(f, v, bits, NULL) == NX_OK;
}

/* A JSON number, or a string for a value JSON cannot hold. */
static json_t *jnum(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *jstr_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *jstr_printf(const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return json_string(buf);
}

/* An MPFR number as text (fmt "%Ra" or "%.25Rg"); NaN and inf spelled out. */
static char *mp_text(const char *fmt, mpfr_srcptr x)
{
    if (mpfr_nan_p(x))
        return strdup("nan");
    if (mpfr_inf_p(x))
        return strdup(mpfr_signbit(x) ? "-inf" : "inf");
    char *s = NULL;
    if (mpfr_asprintf(&s, fmt, x) < 0)
        return NULL;
    char *c = strdup(s);
    mpfr_free_str(s);
    return c;
}

typedef struct row_text {
    char *hex, *dec;
} row_text;

/* The report's JSON text (malloc'd). */
static nx_status build_report(const nx_program *p, const nx_rows *in, const double *y, const char *point,
                              const char *hash, const char *engine, int threads, char **text, nx_err *err)
{
    size_t rows = in->rows, n = p->n;
    nx_bound_row *br = malloc((rows ? rows : 1) * sizeof *br);
    row_text *rt = calloc(rows ? rows : 1, sizeof *rt);
    if (!br || !rt) {
        free(br);
        free(rt);
        return nx_err_set(err, NX_ENOMEM, "out of memory for the report of %zu rows", rows);
    }
    int failed = 0;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (rows > 1)
    {
        nx_bound *b = nx_bound_new(p);
        mpfr_t x;
        mpfr_init2(x, 2);
        if (!b) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t r = 0; r < rows; r++) {
            if (!b)
                continue;
            nx_bound_eval_c(b, p, in->a_fmt, in->a + r * n, in->b_fmt, in->b ? in->b + r * n : NULL,
                            nx_rows_start(in, r), y[r], &br[r], x);
            rt[r].hex = mp_text("%Ra", x);
            rt[r].dec = mp_text("%.25Rg", x);
            if (!rt[r].hex || !rt[r].dec) {
#pragma omp atomic write
                failed = 1;
            }
        }
        mpfr_clear(x);
        nx_bound_free(b);
        mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    nx_status st = NX_OK;
    json_t *root = json_object(), *arr = json_array();
    int ok = root && arr && !failed;
    double max_ulps = 0, max_bound_ulps = 0, max_ratio = 0;
    size_t exact_rows = 0, violations = 0;
    for (size_t r = 0; r < rows && ok; r++) {
        const nx_bound_row *q = &br[r];
        uint64_t bits = 0;
        int has = pattern_of(p->out, y[r], &bits);
        json_t *o = json_object();
        ok = o != NULL;
        ok = ok && json_object_set_new(o, "row", json_integer((json_int_t)r)) == 0;
        ok = ok && json_object_set_new(o, "exact", json_string(rt[r].hex)) == 0;
        ok = ok && json_object_set_new(o, "exact_decimal", json_string(rt[r].dec)) == 0;
        ok = ok && json_object_set_new(o, "result", jstr_printf("%a", y[r])) == 0;
        ok = ok && json_object_set_new(o, "result_decimal", jstr_printf("%.17g", y[r])) == 0;
        ok = ok && json_object_set_new(o, "result_bits", has ? jstr_printf("0x%llx", (unsigned long long)bits)
                                                            : json_null()) == 0;
        ok = ok && json_object_set_new(o, "error_ulps", jnum(q->error_ulps)) == 0;
        ok = ok && json_object_set_new(o, "error", jnum(q->error)) == 0;
        ok = ok && json_object_set_new(o, "bound_ulps", jnum(q->bound_ulps)) == 0;
        ok = ok && json_object_set_new(o, "bound", jnum(q->bound)) == 0;
        ok = ok && json_object_set_new(o, "ulp", jnum(q->ulp)) == 0;
        ok = ok && json_array_append_new(arr, o) == 0;
        if (!(q->error_ulps <= max_ulps))
            max_ulps = q->error_ulps;
        if (!(q->bound_ulps <= max_bound_ulps))
            max_bound_ulps = q->bound_ulps;
        if (q->error == 0)
            exact_rows++;
        else if (isfinite(q->bound) && q->bound / q->error > max_ratio)
            max_ratio = q->bound / q->error;
        if (!(q->error <= q->bound))
            violations++;
    }
    json_t *sum = ok ? json_object() : NULL;
    ok = ok && sum;
    ok = ok && json_object_set_new(sum, "max_error_ulps", jnum(max_ulps)) == 0;
    ok = ok && json_object_set_new(sum, "max_bound_ulps", jnum(max_bound_ulps)) == 0;
    ok = ok && json_object_set_new(sum, "max_bound_over_observed", jnum(max_ratio)) == 0;
    ok = ok && json_object_set_new(sum, "rows_exact", json_integer((json_int_t)exact_rows)) == 0;
    ok = ok && json_object_set_new(sum, "bound_violations", json_integer((json_int_t)violations)) == 0;
    ok = ok && json_object_set_new(root, "numerics", json_string(point)) == 0;
    ok = ok && json_object_set_new(root, "numerics_hash", json_string(hash)) == 0;
    ok = ok && json_object_set_new(root, "engine", json_string(engine)) == 0;
    ok = ok && json_object_set_new(root, "out_format", json_string(nx_format(p->out)->name)) == 0;
    ok = ok && json_object_set_new(root, "rows", json_integer((json_int_t)rows)) == 0;
    ok = ok && json_object_set_new(root, "n", json_integer((json_int_t)n)) == 0;
    /* the start values' format, or null: the exact values include c */
    ok = ok && json_object_set_new(root, "c_format", in->c ? json_string(nx_format(in->c_fmt)->name)
                                                          : json_null()) == 0;
    ok = ok && json_object_set_new(root, "summary", sum) == 0;
    sum = NULL;
    ok = ok && json_object_set_new(root, "per_row", arr) == 0;
    arr = NULL;
    *text = ok ? json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    if (!*text)
        st = nx_err_set(err, NX_ENOMEM, "out of memory building the report");
    else if (violations)
        fprintf(stderr, "parity reduce: warning: the error bound is exceeded on %zu row(s): a bug in nx_bound, "
                        "see the report\n", violations);
    json_decref(root);
    json_decref(arr);
    json_decref(sum);
    for (size_t r = 0; r < rows; r++) {
        free(rt[r].hex);
        free(rt[r].dec);
    }
    free(rt);
    free(br);
    return st;
}

/* First half of an atomic write: text into a synced temporary file next to
 * path; rename (or unlink) it later. */

int cmd_reduce(int argc, char **argv)
{
    const char *numerics = NULL, *inp = NULL, *outp = NULL, *engine = "auto", *threads_s = NULL,
               *check_s = NULL, *reportp = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(reduce_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--numerics", &numerics, &bad) || cli_opt(argc, argv, &i, "--in", &inp, &bad) ||
            cli_opt(argc, argv, &i, "--out", &outp, &bad) || cli_opt(argc, argv, &i, "--engine", &engine, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad) ||
            cli_opt(argc, argv, &i, "--check", &check_s, &bad) || cli_opt(argc, argv, &i, "--report", &reportp, &bad))
            continue;
        cli_error("reduce", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!numerics || !inp || !outp) {
        cli_error("reduce", "needs --numerics, --in and --out (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--out", outp}, {"--report", reportp}}, ins[] = {{"--in", inp}};
    if (cli_check_outputs("reduce", outs, 2, ins, 1))
        return EXIT_INPUT;
    int eng = nx_engine_from_name(engine, 1), eng_auto = eng == NX_ENGINE_AUTO;
    if (eng < 0) {
        cli_error("reduce", "--engine: unknown engine '%s' (expected auto, fast or mpfr)", engine);
        return EXIT_INPUT;
    }
    int threads = 0;
    if (threads_s && (threads = (int)cli_long("reduce", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;
    long check = 32;
    if (check_s && (check = cli_long("reduce", "--check", check_s, 1, 1L << 30)) < 0)
        return EXIT_INPUT;
    if (check_s && !eng_auto) {
        cli_error("reduce", "--check applies to --engine auto only");
        return EXIT_INPUT;
    }

    reduce_job j;
    memset(&j, 0, sizeof j);
    st_init(&j.in);
    st_init(&j.out);
    nx_err err = {0};
    nx_status st;
    int rc = EXIT_PASS;
    char *rtext = NULL, *rtmp = NULL;
    if ((st = pt_from_text(numerics, "--numerics", &j.pt, &err)))
        goto fail;
    j.have_pt = 1;
    if ((st = st_read(inp, &j.in, &err)))
        goto fail;
    st = pa_reduce(&j.pt, inp, &j.in, (nx_engine_kind)eng,
                   (size_t)check, threads, reportp ? 2 : 0, &j.r, &err);
    if (j.r.prog && j.r.prog->nondeterministic)
        fprintf(stderr, "parity reduce: note: the tree uses 'atomic', whose order is undefined; the result is "
                        "its seq order, one admissible order, not a bit-exact reference\n");
    if (st == NX_EINTERNAL && j.r.ndisagree) {
        nx_fmt of = j.r.prog->out;
        for (size_t k = 0; k < j.r.ndisagree && k < 10 && !j.pt.nclasses; k++) {
            const pa_disagree *d = &j.r.disagree[k];
            fprintf(stderr,
                    "parity reduce: INTERNAL ERROR: the fast engine and the MPFR engine disagree on row %zu: "
                    "fast %s 0x%llx (%a), mpfr %s 0x%llx (%a)\n",
                    d->row, nx_format(of)->name, (unsigned long long)d->fast, d->vf, nx_format(of)->name,
                    (unsigned long long)d->mpfr, d->vm);
        }
        snprintf(err.msg, sizeof err.msg, "the fast engine differs from MPFR on %zu of the %zu rows%s; %s was not "
                 "written.  This is a bug: please report it with the point and %s", j.r.ndisagree, j.r.nchecked,
                 j.pt.nclasses ? "" : " checked", outp, inp);
    }
    if (st)
        goto fail;
    size_t rows = j.r.rows, n = j.r.n;
    const nx_rows in = j.r.in;
    int tb = j.r.dot, tc = j.r.has_c;
    const st_tensor *tcx = tc ? st_find(&j.in, "c") : NULL;

    nx_fmt of = j.r.prog->out;
    int64_t shape[1] = {(int64_t)rows};
    st_tensor *ty;
    char hash[65], *ptxt = nx_point_print(&j.pt);
    /* A sub-byte dtype (F4, F6_*) holds only whole bytes of elements; when
     * `rows` of them do not fill whole bytes, y is written widened to F32
     * (every value is exact there) and the metadata says so. */
    int widened;
    st_dtype ydt = pa_y_dtype(of, rows, &widened);
    if ((st = st_add_tensor(&j.out, "y", ydt, 1, shape, &ty, &err)) ||
        (st = pa_y_encode(&j.r, ty, ty->data, &err))) {
        free(ptxt);
        goto fail;
    }
    if ((st = j.pt.nclasses ? nx_point_hash(&j.pt, n, tb, tc, hash, &err)
                            : nx_program_hash(j.r.prog, hash, &err)) ||
        (st = st_add_meta(&j.out, "numerics", ptxt ? ptxt : "", &err)) ||
        (st = st_add_meta(&j.out, "numerics_hash", hash, &err)) ||
        (st = st_add_meta(&j.out, "out_format", nx_format(of)->name, &err)) ||
        (st = st_add_meta(&j.out, "engine", engine, &err)) ||
        (tcx && (st = st_add_meta(&j.out, "c", st_dtype_name(tcx->dtype), &err))) ||
        (widened && (st = st_add_meta(&j.out, "y_storage",
                                      "F32: widened, the rows do not fill whole bytes of the packed dtype", &err)))) {
        free(ptxt);
        goto fail;
    }
    if (reportp) {
        st = build_report(j.r.prog, &in, j.r.y, ptxt ? ptxt : "", hash, engine, threads, &rtext, &err);
        if (!st)
            st = st_text_stage(reportp, rtext, strlen(rtext), &rtmp, &err);
        if (st) {
            free(ptxt);
            goto fail;
        }
    }
    free(ptxt);
    if ((st = st_write_atomic(outp, &j.out, &err)))
        goto fail;
    if (rtmp && (st = st_tmp_commit(&rtmp, reportp, &err))) {
        nx_err_prefix(&err, "%s was written, but", outp);
        goto fail;
    }
    free(rtext);
    job_free(&j);
    return rc;
fail:
    st_tmp_discard(&rtmp);
    free(rtext);
    job_free(&j);
    return cli_fail("reduce", &err);
}
