/* cmd_reduce.c: `parity reduce`, docs/numerics.md §6: evaluates a numerics point
 * over the rows of IN and writes tensor y to OUT (atomically: a failure
 * leaves OUT as it was).  Engines: mpfr (the truth), fast (bit-identical,
 * nx_engine_fast.c) and auto (fast, then a deterministic sample of rows
 * re-evaluated by MPFR: a difference is an internal error, exit 3, and
 * nothing is written).  --report writes each row's exact value, error in
 * ulps and a-priori bound (nx_bound.h) as JSON, atomically too. */
#include "cli.h"
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
    double *a, *b, *c, *y;
    nx_program *prog;
} reduce_job;

static void job_free(reduce_job *j)
{
    if (j->have_pt)
        nx_point_free(&j->pt);
    st_free(&j->in);
    st_free(&j->out);
    free(j->a);
    free(j->b);
    free(j->c);
    free(j->y);
    nx_program_free(j->prog);
}

static double *alloc_vals(size_t count)
{
    return malloc((count ? count : 1) * sizeof(double));
}

/* The pattern of a result in the out format; 0 when it has none (a NaN in
 * a format without NaN). */
static int pattern_of(nx_fmt f, double v, uint64_t *bits)
{
    return nx_encode(f, v, bits, NULL) == NX_OK;
}

/* IN's tensors, read in blocks of rows (docs/engines.md: reduce streams). */
typedef struct reduce_src {
    const st_tensor *a, *b, *c;
    size_t rows, n;
    nx_fmt a_fmt, b_fmt, c_fmt;
} reduce_src;

/* Rows r0 .. r0 + cnt - 1 decoded into a[cnt * n], b and c[cnt] (buffers
 * the caller reuses), as nx_rows. */
static nx_status src_rows(const reduce_src *s, size_t r0, size_t cnt, double *a, double *b, double *c, nx_rows *in,
                          nx_err *err)
{
    nx_status st;
    if ((st = rows_decode_range(s->a, r0 * s->n, cnt * s->n, a, err)) ||
        (s->b && (st = rows_decode_range(s->b, r0 * s->n, cnt * s->n, b, err))) ||
        (s->c && (st = rows_decode_range(s->c, r0, cnt, c, err))))
        return st;
    *in = (nx_rows){.rows = cnt, .a_fmt = s->a_fmt, .a = a, .b_fmt = s->b_fmt, .b = s->b ? b : NULL,
                    .c_fmt = s->c_fmt, .c = s->c ? c : NULL};
    return NX_OK;
}

/* The storage nx_simd reads in place; -1: none. */
static int simd_store(const st_tensor *t)
{
    switch (t->dtype) {
    case ST_F64: return NX_ST_F64;
    case ST_F32: return NX_ST_F32;
    case ST_BF16: return NX_ST_BF16;
    case ST_F16: return NX_ST_F16;
    default: return -1;
    }
}

/* Every row of s into y, streaming: the fast engine's vector path reads
 * the rows as stored; otherwise blocks of rows are decoded into reusable
 * buffers (a few hundred KiB per thread) and evaluated, each thread its own
 * blocks.  Every row is evaluated alone, so the bits do not depend on the
 * thread count or the block size. */
static nx_status reduce_stream(const nx_program *p, const reduce_src *s, int mpfr, int threads, double *y,
                               nx_err *err)
{
    size_t rows = s->rows, n = s->n;
    nx_status st = NX_OK;
    nx_fast *fast = NULL;
    if (!mpfr) {
        int sa = simd_store(s->a), sb = s->b ? simd_store(s->b) : sa, sc = s->c ? simd_store(s->c) : sa;
        if (sa >= 0 && sb >= 0 && sc >= 0) {
            nx_simd_rows sr = {.rows = rows,
                               .a = {s->a->data, (nx_simd_store)sa, s->a_fmt, n},
                               .b = {s->b ? s->b->data : NULL, (nx_simd_store)sb, s->b_fmt, n},
                               .c = {s->c ? s->c->data : NULL, (nx_simd_store)sc, s->c_fmt, 1}};
            int done = 0;
            if ((st = nx_fast_reduce_raw(p, &sr, y, threads, &done, err)) || done)
                return st;
        }
        if (!(fast = nx_fast_new(p, s->a_fmt, s->b_fmt, s->c != NULL, s->c_fmt, err)))
            return err->code;
    }
    /* blocks of whole engine blocks (8 rows), about 2^17 decoded values */
    size_t per = (size_t)1 << 17, cnt = n && per / n > 8 ? per / n / 8 * 8 : 8;
    size_t nblk = (rows + cnt - 1) / cnt;
    int failed = 0;
    nx_err first = {0};
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (nblk > 1)
    {
        double *a = alloc_vals(cnt * n), *b = s->b ? alloc_vals(cnt * n) : NULL, *c = alloc_vals(cnt);
        nx_err e = {0};
        nx_status est = (!a || (s->b && !b) || !c) ? nx_err_set(&e, NX_ENOMEM, "out of memory for %zu rows of "
                                                                               "%zu values", cnt, n)
                                                   : NX_OK;
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nblk; k++) {
            if (est || failed)
                continue;
            size_t r0 = k * cnt, m = rows - r0 < cnt ? rows - r0 : cnt;
            nx_rows in;
            if (!(est = src_rows(s, r0, m, a, b, c, &in, &e)))
                est = mpfr ? nx_mpfr_reduce(p, &in, y + r0, 1, &e) : nx_fast_run(fast, &in, y + r0, 1, NULL, &e);
        }
        if (est) {
#pragma omp critical(reduce_stream_err)
            if (!failed) {
                failed = 1;
                first = e;
            }
        }
        free(a);
        free(b);
        free(c);
        if (mpfr)
            mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    nx_fast_free(fast);
    if (failed) {
        *err = first;
        return first.code;
    }
    return NX_OK;
}

/* The rows auto re-evaluates: first, last, evenly spaced between. */
static size_t sample_rows(size_t rows, size_t k, size_t *out)
{
    if (k >= rows) {
        for (size_t r = 0; r < rows; r++)
            out[r] = r;
        return rows;
    }
    if (k == 1) {
        out[0] = 0;
        return 1;
    }
    for (size_t j = 0; j < k; j++)
        out[j] = (size_t)((unsigned long long)j * (rows - 1) / (k - 1));
    return k;
}

/* Re-evaluates the sample with MPFR and compares patterns.  Returns the
 * number of differing rows (each reported on stderr), or -1 when out of
 * memory. */
static long check_sample(const nx_program *p, const reduce_src *src, const double *y, size_t k, int threads)
{
    size_t *rs = malloc((k ? k : 1) * sizeof *rs);
    double *ym = malloc((k ? k : 1) * sizeof *ym);
    if (!rs || !ym) {
        free(rs);
        free(ym);
        return -1;
    }
    size_t m = sample_rows(src->rows, k, rs), n = p->n;
    int failed = 0;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (m > 1)
    {
        nx_mpfr_row *r = nx_mpfr_row_new(p);
        double *ab = alloc_vals(2 * n), c = 0;
        if (!r || !ab) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t j = 0; j < m; j++) {
            nx_rows in;
            if (!r || !ab || src_rows(src, rs[j], 1, ab, ab + n, &c, &in, NULL)) {
#pragma omp atomic write
                failed = 1;
                continue;
            }
            ym[j] = nx_mpfr_row_eval_c(r, p, in.a_fmt, in.a, in.b_fmt, in.b, nx_rows_start(&in, 0));
        }
        nx_mpfr_row_free(r);
        free(ab);
        mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    long bad = 0;
    for (size_t j = 0; j < m && !failed; j++) {
        uint64_t pf = 0, pm = 0;
        int ef = pattern_of(p->out, y[rs[j]], &pf), em = pattern_of(p->out, ym[j], &pm);
        if (ef == em && pf == pm && (ef || (isnan(y[rs[j]]) && isnan(ym[j]))))
            continue;
        if (bad++ < 10)
            fprintf(stderr,
                    "parity reduce: INTERNAL ERROR: the fast engine and the MPFR engine disagree on row %zu: "
                    "fast %s 0x%llx (%a), mpfr %s 0x%llx (%a)\n",
                    rs[j], nx_format(p->out)->name, (unsigned long long)pf, y[rs[j]], nx_format(p->out)->name,
                    (unsigned long long)pm, ym[j]);
    }
    free(rs);
    free(ym);
    return failed ? -1 : bad;
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
static nx_status write_temp(const char *path, const char *text, char **tmp_out, nx_err *err)
{
    char *tmp;
    int fd = st_tmp_create(path, &tmp, err); /* short name, mode 0666 & ~umask, removed on signals */
    if (fd < 0)
        return err->code;
    const char *what = "write";
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0)
            goto fail;
        off += (size_t)w;
    }
    what = "fsync";
    if (fsync(fd) != 0)
        goto fail;
    what = "close";
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    *tmp_out = tmp;
    return NX_OK;
fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    nx_status st = nx_err_set(err, NX_EIO, "%s: %s of temporary file %s failed: %s", path, what, tmp, strerror(e));
    st_tmp_discard(&tmp);
    return st;
}

/* PARITY_REDUCE_FAULT_ROW=r flips the last bit of row r's fast result: the
 * CLI tests' way to prove that auto's MPFR check catches a difference. */
static void inject_fault(const nx_program *p, double *y, size_t rows)
{
    const char *f = getenv("PARITY_REDUCE_FAULT_ROW");
    if (!f || !*f)
        return;
    char *end;
    unsigned long long r = strtoull(f, &end, 10);
    uint64_t bits;
    if (*end || r >= rows || !pattern_of(p->out, y[r], &bits))
        return;
    y[r] = nx_decode(p->out, bits ^ 1, NULL);
}

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
    int eng_auto = strcmp(engine, "auto") == 0, eng_fast = strcmp(engine, "fast") == 0,
        eng_mpfr = strcmp(engine, "mpfr") == 0;
    if (!eng_auto && !eng_fast && !eng_mpfr) {
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
    const st_tensor *ta, *tb, *tc;
    char *rtext = NULL, *rtmp = NULL;
    if ((st = pt_from_text(numerics, "--numerics", &j.pt, &err)))
        goto fail;
    j.have_pt = 1;
    /* row classes and the report read every row in memory; everything else
     * streams (reduce_stream), and only its rows count against the limits */
    if ((st = st_read(inp, &j.in, &err)) ||
        (st = rows_check_inputs_as(inp, &j.in, &ta, &tb, &tc,
                                 (j.pt.nclasses || reportp ? 1 : 0) | (reportp ? ROWS_WHOLE_REPORT : 0), &err)))
        goto fail;
    size_t rows = (size_t)ta->shape[0], n = (size_t)ta->shape[1];
    if ((st = nx_program_build_ex(&j.pt, n, tb != NULL, tc != NULL, &j.prog, &err))) {
        nx_err_prefix(&err, "--numerics");
        goto fail;
    }
    if ((st = rows_check_work(inp, ta, j.prog, &err)))
        goto fail;
    if (j.prog->nondeterministic)
        fprintf(stderr, "parity reduce: note: the tree uses 'atomic', whose order is undefined; the result is "
                        "its seq order, one admissible order, not a bit-exact reference\n");
    /* Row classes and the report read every row in memory; everything else
     * streams (reduce_stream) */
    int whole = j.pt.nclasses || reportp;
    reduce_src src = {.a = ta, .b = tb, .c = tc, .rows = rows, .n = n,
                      .a_fmt = (nx_fmt)rows_fmt_of_dtype(ta->dtype),
                      .b_fmt = tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64,
                      .c_fmt = tc ? (nx_fmt)rows_fmt_of_dtype(tc->dtype) : NX_FP64};
    if (whole) {
        j.a = alloc_vals(ta->nelem);
        j.b = tb ? alloc_vals(tb->nelem) : NULL;
        j.c = tc ? alloc_vals(rows) : NULL;
    }
    j.y = alloc_vals(rows);
    if ((whole && (!j.a || (tb && !j.b) || (tc && !j.c))) || !j.y) {
        st = nx_err_set(&err, NX_ENOMEM, "out of memory for %zu x %zu values", rows, n);
        goto fail;
    }
    if (whole && ((st = rows_decode(ta, j.a, &err)) || (tb && (st = rows_decode(tb, j.b, &err))) ||
                  (tc && (st = rows_decode(tc, j.c, &err))))) {
        nx_err_prefix(&err, "%s", inp);
        goto fail;
    }
    nx_rows in = {.rows = rows,
                  .a_fmt = (nx_fmt)rows_fmt_of_dtype(ta->dtype),
                  .a = j.a,
                  .b_fmt = tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64,
                  .b = j.b,
                  .c_fmt = tc ? (nx_fmt)rows_fmt_of_dtype(tc->dtype) : NX_FP64,
                  .c = j.c};
    if (j.pt.nclasses) {
        /* row classes (docs/numerics.md §4.3): one program per class */
        for (size_t k = 0; k < j.pt.nclasses; k++)
            if (nx_point_out(j.pt.classes[k].pt) != nx_point_out(&j.pt)) {
                st = nx_err_set(&err, NX_EINVAL,
                                "--numerics: key 'rows[%zu]': out = \"%s\" differs from the point's \"%s\": the "
                                "rows are one tensor y of one format",
                                k, nx_format(nx_point_out(j.pt.classes[k].pt))->name,
                                nx_format(nx_point_out(&j.pt))->name);
                goto fail;
            }
        if (reportp) {
            st = nx_err_set(&err, NX_EINVAL, "--report: points with row classes are not supported by the report yet");
            goto fail;
        }
        if ((st = nx_point_reduce(&j.pt, &in, n, tb != NULL, eng_mpfr ? NX_ENGINE_MPFR : NX_ENGINE_FAST, threads,
                                  j.y, &err)))
            goto fail;
        if (!eng_mpfr)
            inject_fault(j.prog, j.y, rows);
        if (eng_auto && rows > 0) {
            /* every row again with MPFR: the classes' programs differ */
            double *ym = alloc_vals(rows);
            if (!ym) {
                st = nx_err_set(&err, NX_ENOMEM, "out of memory re-evaluating rows with MPFR");
                goto fail;
            }
            st = nx_point_reduce(&j.pt, &in, n, tb != NULL, NX_ENGINE_MPFR, threads, ym, &err);
            long diff = 0;
            for (size_t r = 0; r < rows && !st; r++)
                diff += memcmp(&ym[r], &j.y[r], sizeof *ym) != 0 && !(isnan(ym[r]) && isnan(j.y[r]));
            free(ym);
            if (st)
                goto fail;
            if (diff > 0) {
                st = nx_err_set(&err, NX_EINTERNAL,
                                "the fast engine differs from MPFR on %ld of the %zu rows; %s was not written.  "
                                "This is a bug: please report it with the point and %s",
                                diff, rows, outp, inp);
                goto fail;
            }
        }
    } else if (eng_mpfr) {
        if ((st = whole ? nx_mpfr_reduce(j.prog, &in, j.y, threads, &err)
                        : reduce_stream(j.prog, &src, 1, threads, j.y, &err)))
            goto fail;
    } else {
        if ((st = whole ? nx_fast_reduce(j.prog, &in, j.y, threads, &err)
                        : reduce_stream(j.prog, &src, 0, threads, j.y, &err)))
            goto fail;
        inject_fault(j.prog, j.y, rows);
        if (eng_auto && rows > 0) {
            long diff = check_sample(j.prog, &src, j.y, (size_t)check, threads);
            if (diff < 0) {
                st = nx_err_set(&err, NX_ENOMEM, "out of memory re-evaluating rows with MPFR");
                goto fail;
            }
            if (diff > 0) {
                st = nx_err_set(&err, NX_EINTERNAL,
                                "the fast engine differs from MPFR on %ld of the %zu rows checked; %s was not "
                                "written.  This is a bug: please report it with the point and %s",
                                diff, (size_t)check < rows ? (size_t)check : rows, outp, inp);
                goto fail;
            }
        }
    }

    nx_fmt of = j.prog->out;
    int64_t shape[1] = {(int64_t)rows};
    st_tensor *ty;
    char hash[65], *ptxt = nx_point_print(&j.pt);
    /* A sub-byte dtype (F4, F6_*) holds only whole bytes of elements; when
     * `rows` of them do not fill whole bytes, y is written widened to F32
     * (every value is exact there) and the metadata says so. */
    st_dtype ydt = rows_dtype_of_fmt(of);
    nx_fmt yfmt = of;
    int widened = 0;
    if (((uint64_t)rows * st_dtype_bits(ydt)) % 8 != 0) {
        ydt = ST_F32;
        yfmt = NX_FP32;
        widened = 1;
        for (size_t r = 0; r < rows; r++) { /* every value must still be one of `out` */
            uint64_t bits;
            nx_err e;
            if (nx_encode(of, j.y[r], &bits, &e) != NX_OK) {
                free(ptxt);
                st = nx_err_set(&err, NX_EINVAL, "cannot write the result: row %zu: %s", r, e.msg);
                goto fail;
            }
        }
    }
    if ((st = st_add_tensor(&j.out, "y", ydt, 1, shape, &ty, &err)) ||
        (st = rows_encode(yfmt, j.y, rows, ty, ty->data, &err))) {
        free(ptxt);
        if (st == NX_EINVAL)
            nx_err_prefix(&err, "cannot write the result (the element index is the row)");
        goto fail;
    }
    if ((st = j.pt.nclasses ? nx_point_hash(&j.pt, n, tb != NULL, tc != NULL, hash, &err)
                            : nx_program_hash(j.prog, hash, &err)) ||
        (st = st_add_meta(&j.out, "numerics", ptxt ? ptxt : "", &err)) ||
        (st = st_add_meta(&j.out, "numerics_hash", hash, &err)) ||
        (st = st_add_meta(&j.out, "out_format", nx_format(of)->name, &err)) ||
        (st = st_add_meta(&j.out, "engine", engine, &err)) ||
        (tc && (st = st_add_meta(&j.out, "c", st_dtype_name(tc->dtype), &err))) ||
        (widened && (st = st_add_meta(&j.out, "y_storage",
                                      "F32: widened, the rows do not fill whole bytes of the packed dtype", &err)))) {
        free(ptxt);
        goto fail;
    }
    if (reportp) {
        st = build_report(j.prog, &in, j.y, ptxt ? ptxt : "", hash, engine, threads, &rtext, &err);
        if (!st)
            st = write_temp(reportp, rtext, &rtmp, &err);
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
