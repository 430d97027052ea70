/* pa_core.c: `parity reduce` and `parity check --numerics` on tensors in
 * memory (pa_core.h), for the CLI and the C ABI alike.  Engines: mpfr (the
 * truth), fast (bit-identical, nx_engine_fast.c) and auto (fast, then a
 * deterministic sample of rows re-evaluated by MPFR: a difference is an
 * internal error). */
#include "pa_core.h"

#include "nx_bound.h"
#include "nx_limits.h"
#include "nx_rowclass.h"
#include "nx_simd.h"
#include "nx_tree.h"
#include "report.h"
#include "rows.h"
#include "rows_input.h"

#include <math.h>
#include <mpfr.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * number of differing rows (the first ten in o->disagree), or -1 when out
 * of memory. */
static long check_sample(const nx_program *p, const reduce_src *src, const double *y, size_t k, int threads,
                         pa_reduce_out *o)
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
        if (bad < 10)
            o->disagree[bad] = (pa_disagree){rs[j], pf, pm, y[rs[j]], ym[j]};
        bad++;
    }
    free(rs);
    free(ym);
    return failed ? -1 : bad;
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


st_dtype pa_y_dtype(nx_fmt out, size_t rows, int *widened)
{
    st_dtype dt = rows_dtype_of_fmt(out);
    *widened = ((uint64_t)rows * st_dtype_bits(dt)) % 8 != 0;
    return *widened ? ST_F32 : dt;
}

void pa_reduce_out_free(pa_reduce_out *o)
{
    nx_program_free(o->prog);
    free(o->y);
    free((void *)o->in.a);
    free((void *)o->in.b);
    free((void *)o->in.c);
    memset(o, 0, sizeof *o);
}


/* Every row class keeps the point's out format: the rows are one tensor y
 * (docs/numerics.md §4.3); `reduce` and `check --numerics` both hold it. */
static nx_status classes_one_out(const nx_point *pt, nx_err *err)
{
    for (size_t k = 0; k < pt->nclasses; k++)
        if (nx_point_out(pt->classes[k].pt) != nx_point_out(pt))
            return nx_err_set(err, NX_EINVAL,
                              "--numerics: key 'rows[%zu]': out = \"%s\" differs from the point's \"%s\": the rows "
                              "are one tensor y of one format",
                              k, nx_format(nx_point_out(pt->classes[k].pt))->name, nx_format(nx_point_out(pt))->name);
    return NX_OK;
}

nx_status pa_reduce(const nx_point *pt, const char *inp, const st_file *in, nx_engine_kind engine, size_t check,
                    int threads, int whole, pa_reduce_out *o, nx_err *err)
{
    memset(o, 0, sizeof *o);
    const st_tensor *ta, *tb, *tc;
    nx_status st;
    /* row classes and the report read every row in memory; everything else
     * streams (reduce_stream), and only its rows count against the limits */
    if (pt->nclasses && !whole)
        whole = 1;
    if ((st = rows_check_inputs_as(inp, in, &ta, &tb, &tc, whole ? 1 | (whole > 1 ? ROWS_WHOLE_REPORT : 0) : 0,
                                   err)))
        return st;
    size_t rows = (size_t)ta->shape[0], n = (size_t)ta->shape[1];
    o->rows = rows;
    o->n = n;
    o->dot = tb != NULL;
    o->has_c = tc != NULL;
    if ((st = nx_program_build_ex(pt, n, tb != NULL, tc != NULL, &o->prog, err))) {
        nx_err_prefix(err, "--numerics");
        return st;
    }
    if ((st = rows_check_work(inp, ta, o->prog, err)))
        return st;
    reduce_src src = {.a = ta, .b = tb, .c = tc, .rows = rows, .n = n,
                      .a_fmt = (nx_fmt)rows_fmt_of_dtype(ta->dtype),
                      .b_fmt = tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64,
                      .c_fmt = tc ? (nx_fmt)rows_fmt_of_dtype(tc->dtype) : NX_FP64};
    double *a = NULL, *b = NULL, *c = NULL;
    if (whole) {
        a = alloc_vals(ta->nelem);
        b = tb ? alloc_vals(tb->nelem) : NULL;
        c = tc ? alloc_vals(rows) : NULL;
    }
    o->in = (nx_rows){.rows = rows, .a_fmt = src.a_fmt, .a = a, .b_fmt = src.b_fmt, .b = b, .c_fmt = src.c_fmt,
                      .c = c};
    o->y = alloc_vals(rows);
    if ((whole && (!a || (tb && !b) || (tc && !c))) || !o->y)
        return nx_err_set(err, NX_ENOMEM, "out of memory for %zu x %zu values", rows, n);
    if (whole && ((st = rows_decode(ta, a, err)) || (tb && (st = rows_decode(tb, b, err))) ||
                  (tc && (st = rows_decode(tc, c, err))))) {
        nx_err_prefix(err, "%s", inp);
        return st;
    }
    int mpfr = engine == NX_ENGINE_MPFR;
    if (pt->nclasses) {
        /* row classes (docs/numerics.md §4.3): one program per class */
        if ((st = classes_one_out(pt, err)))
            return st;
        if (whole > 1)
            return nx_err_set(err, NX_EINVAL,
                              "--report: points with row classes are not supported by the report yet");
        if ((st = nx_point_reduce(pt, &o->in, n, tb != NULL, mpfr ? NX_ENGINE_MPFR : NX_ENGINE_FAST, threads, o->y,
                                  err)))
            return st;
        if (!mpfr)
            inject_fault(o->prog, o->y, rows);
        if (engine == NX_ENGINE_AUTO && rows > 0) {
            /* every row again with MPFR: the classes' programs differ */
            double *ym = alloc_vals(rows);
            if (!ym)
                return nx_err_set(err, NX_ENOMEM, "out of memory re-evaluating rows with MPFR");
            st = nx_point_reduce(pt, &o->in, n, tb != NULL, NX_ENGINE_MPFR, threads, ym, err);
            size_t diff = 0;
            for (size_t r = 0; r < rows && !st; r++)
                diff += memcmp(&ym[r], &o->y[r], sizeof *ym) != 0 && !(isnan(ym[r]) && isnan(o->y[r]));
            free(ym);
            if (st)
                return st;
            o->nchecked = rows;
            if ((o->ndisagree = diff) > 0)
                return nx_err_set(err, NX_EINTERNAL, "the fast engine differs from MPFR on %zu of the %zu rows", diff,
                                  rows);
        }
        return NX_OK;
    }
    if (mpfr)
        return whole ? nx_mpfr_reduce(o->prog, &o->in, o->y, threads, err)
                     : reduce_stream(o->prog, &src, 1, threads, o->y, err);
    if ((st = whole ? nx_fast_reduce(o->prog, &o->in, o->y, threads, err)
                    : reduce_stream(o->prog, &src, 0, threads, o->y, err)))
        return st;
    inject_fault(o->prog, o->y, rows);
    if (engine == NX_ENGINE_AUTO && rows > 0) {
        long diff = check_sample(o->prog, &src, o->y, check, threads, o);
        if (diff < 0)
            return nx_err_set(err, NX_ENOMEM, "out of memory re-evaluating rows with MPFR");
        o->nchecked = check < rows ? check : rows;
        if ((o->ndisagree = (size_t)diff) > 0)
            return nx_err_set(err, NX_EINTERNAL, "the fast engine differs from MPFR on %ld of the %zu rows checked",
                              diff, o->nchecked);
    }
    return NX_OK;
}

void pa_check_out_free(pa_check_out *o)
{
    nx_program_free(o->prog);
    free(o->gb);
    free(o->rb);
    memset(o, 0, sizeof *o);
}

nx_status pa_check_prepare(const nx_point *pt, const char *inp, const st_file *in, pa_check_out *o, nx_err *err)
{
    memset(o, 0, sizeof *o);
    const st_tensor *ta, *tb;
    nx_status st;
    if ((st = rows_check_inputs(inp, in, &ta, &tb, err)))
        return st;
    o->rows = (size_t)ta->shape[0];
    o->n = (size_t)ta->shape[1];
    o->pt = pt;
    if ((st = classes_one_out(pt, err)))
        return st;
    if ((st = nx_program_build(pt, o->n, tb != NULL, &o->prog, err))) {
        nx_err_prefix(err, "--numerics");
        return st;
    }
    /* row classes: every class's program must build at n and be
     * deterministic (the bound of an `atomic` tree is one program's) */
    for (size_t k = 0; k < pt->nclasses; k++) {
        nx_program *cp = NULL;
        if ((st = nx_program_build(pt->classes[k].pt, o->n, tb != NULL, &cp, err))) {
            nx_err_prefix(err, "--numerics: rows[%zu]", k);
            return st;
        }
        int nd = cp->nondeterministic;
        st = rows_check_work(inp, ta, cp, err);
        nx_program_free(cp);
        if (st)
            return st;
        if (nd || o->prog->nondeterministic)
            return nx_err_set(err, NX_EUNSUPPORTED, "--numerics: row classes with an 'atomic' tree (rows[%zu] or the "
                                                    "point): the bound is checked for points without classes only",
                              k);
    }
    return rows_check_work(inp, ta, o->prog, err);
}

nx_status pa_check_numerics(const char *inp, const st_file *in, const char *outp, const char *tname,
                            const st_tensor *ty, int mpfr, int threads, pa_check_out *o, nx_err *err)
{
    const st_tensor *ta = st_find(in, "a"), *tb = st_find(in, "b");
    nx_status st = NX_OK;
    double *a = NULL, *b = NULL, *ref = NULL, *exact = NULL, *bound = NULL;
    size_t rows = o->rows, n = o->n;
    nx_fmt of = o->prog->out;
    st_dtype want = rows_dtype_of_fmt(of);
    int widened = ((uint64_t)rows * st_dtype_bits(want)) % 8 != 0; /* reduce writes such rows as F32 */
    if (ty->dtype != want && !(widened && ty->dtype == ST_F32))
        return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' has dtype %s; the point's out format %s is %s%s", outp,
                          tname, st_dtype_name(ty->dtype), nx_format(of)->name, st_dtype_name(want),
                          widened ? " (or F32, widened)" : "");
    if (ty->ndim != 1 || (size_t)ty->shape[0] != rows) {
        char sh[128] = "";
        size_t k = 0;
        for (int d = 0; d < ty->ndim && k + 24 < sizeof sh; d++)
            k += (size_t)snprintf(sh + k, sizeof sh - k, "%s%lld", d ? ", " : "", (long long)ty->shape[d]);
        return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' has shape [%s]; %s has %zu rows, so [%zu] is expected",
                          outp, tname, sh, inp, rows, rows);
    }
    nx_fmt yfmt = ty->dtype == want ? of : NX_FP32;
    o->yfmt = yfmt;
    /* the reference */
    a = malloc((ta->nelem ? ta->nelem : 1) * sizeof *a);
    b = tb ? malloc((tb->nelem ? tb->nelem : 1) * sizeof *b) : NULL;
    ref = malloc((rows ? rows : 1) * sizeof *ref);
    o->gb = malloc((rows ? rows : 1) * sizeof *o->gb);
    o->rb = malloc((rows ? rows : 1) * sizeof *o->rb);
    if (!a || (tb && !b) || !ref || !o->gb || !o->rb) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory for %zu x %zu values", rows, n);
        goto done;
    }
    if ((st = rows_decode(ta, a, err)) || (tb && (st = rows_decode(tb, b, err)))) {
        nx_err_prefix(err, "%s", inp);
        goto done;
    }
    nx_rows rin;
    memset(&rin, 0, sizeof rin);
    rin.rows = rows;
    rin.a_fmt = (nx_fmt)rows_fmt_of_dtype(ta->dtype);
    rin.a = a;
    rin.b_fmt = tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64;
    rin.b = b;
    if (o->pt && o->pt->nclasses)
        st = nx_point_reduce(o->pt, &rin, n, tb != NULL, mpfr ? NX_ENGINE_MPFR : NX_ENGINE_FAST, threads, ref, err);
    else
        st = (mpfr ? nx_mpfr_reduce : nx_fast_reduce)(o->prog, &rin, ref, threads, err);
    if (st)
        goto done;
    for (size_t r = 0; r < rows; r++) {
        o->gb[r] = st_get_bits(ty, ty->data, r);
        uint64_t bits = 0;
        if (nx_encode(yfmt, ref[r], &bits, NULL) != NX_OK) {
            st = nx_err_set(err, NX_EINVAL,
                            "the reference has no %s encoding at row %zu (a NaN in a format without NaN)",
                            nx_format(yfmt)->name, r);
            goto done;
        }
        o->rb[r] = bits;
    }
    /* Tier 2 */
    if (!o->prog->nondeterministic) {
        cmp_options_init(&o->opt, CMP_BITWISE);
        snprintf(o->why, sizeof o->why, "bit-exact: the output must have the bits of the point's reference");
    } else {
        /* no defined order: within the tree's bound of the exact value,
         * every order of the `atomic` additions covered */
        exact = malloc((rows ? rows : 1) * sizeof *exact);
        bound = malloc((rows ? rows : 1) * sizeof *bound);
        nx_bound_row *br = malloc((rows ? rows : 1) * sizeof *br);
        if (!exact || !bound || !br) {
            free(br);
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        st = nx_bound_rows(o->prog, &rin, ref, br, threads, err);
        for (size_t r = 0; r < rows && !st; r++) {
            exact[r] = br[r].exact;
            /* the exact value is rounded to binary64: widen by its rounding */
            bound[r] = br[r].bound + fabs(br[r].exact) * 0x1p-52;
        }
        free(br);
        if (st)
            goto done;
        cmp_options_init(&o->opt, CMP_BOUND);
    }
    int64_t shp[1] = {(int64_t)rows};
    cmp_input ci = {yfmt, rows, o->gb, o->rb, exact, bound, 1, shp};
    if ((st = cmp_compare(&ci, &o->opt, &o->res, err))) {
        nx_err_prefix(err, "%s: tensor '%s'", outp, tname);
        goto done;
    }
    /* "not bit-exact" only when some bit differs (the judge's rule, verdict.h) */
    if (o->opt.policy == CMP_BOUND)
        snprintf(o->why, sizeof o->why,
                 "%s: the tree uses 'atomic' (no defined order); within the bound its tree gives against the exact "
                 "value, in any order (docs/tolerance.md)",
                 o->res.bits_differ ? "not bit-exact" : "bit-exact, judged by the bound");
done:
    free(a);
    free(b);
    free(ref);
    free(exact);
    free(bound);
    return st;
}

char *pa_check_text(const pa_check_out *o, const char *outp)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const cmp_result *res = &o->res;
    char first[96] = "";
    if (res->first_mismatch != CMP_NO_INDEX)
        snprintf(first, sizeof first, ", first at row %zu", res->first_mismatch);
    fprintf(f, "%-46s %-10s %s: %zu / %zu rows differ%s\n", outp,
            res->mismatched ? "FAIL" : o->opt.policy == CMP_BITWISE ? "bits" : "bound", o->why, res->mismatched,
            o->rows, first);
    char *text = cmp_result_text(res);
    if (res->mismatched && text)
        report_indent(f, text, 4);
    free(text);
    /* the rows by their bits: what a kernel author compares first */
    const char *fn = nx_format(o->yfmt)->name;
    const struct {
        const char *what;
        size_t row;
    } at[2] = {{"first", res->first_mismatch}, {"worst", res->max_ulp_index}};
    for (int k = 0; k < 2 && res->mismatched; k++) {
        size_t r = at[k].row;
        if (r == CMP_NO_INDEX || r >= o->rows)
            continue;
        fprintf(f, "    %s mismatch, row %zu: output %s 0x%0*llx (%.9g), reference 0x%0*llx (%.9g)\n", at[k].what, r,
                fn, (nx_format(o->yfmt)->storage_bits + 3) / 4, (unsigned long long)o->gb[r],
                nx_decode(o->yfmt, o->gb[r], NULL), (nx_format(o->yfmt)->storage_bits + 3) / 4,
                (unsigned long long)o->rb[r], nx_decode(o->yfmt, o->rb[r], NULL));
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

void pa_fit_vals_free(pa_fit_vals *v)
{
    free(v->a);
    free(v->b);
    free(v->c);
    free(v->y);
    memset(v, 0, sizeof *v);
}

nx_status pa_fit_pair(const char *inp, const st_tensor *ta, const st_tensor *tb, const st_tensor *tc, const char *yp,
                      const char *tn, const st_tensor *ty, pa_fit_vals *v, fit_pair *fp, nx_fmt *yfmt, nx_err *err)
{
    nx_status st;
    size_t rows = (size_t)ta->shape[0], n = (size_t)ta->shape[1];
    if (ty->ndim != 1 || (size_t)ty->shape[0] != rows)
        return nx_err_set(err, NX_EINVAL, "%s: %s has %d dimension(s) of shape [%lld...]; %s has %zu rows, so [%zu] is "
                                          "expected",
                          yp, tn, ty->ndim, ty->ndim ? (long long)ty->shape[0] : 0LL, inp, rows, rows);
    int f = rows_fmt_of_dtype(ty->dtype);
    if (f < 0)
        return nx_err_set(err, NX_EINVAL, "%s: %s: dtype %s is not a number format of docs/numerics.md §1", yp, tn,
                          st_dtype_name(ty->dtype));
    *yfmt = (nx_fmt)f;
    size_t ne = ta->nelem ? ta->nelem : 1;
    v->a = malloc(ne * sizeof *v->a);
    v->b = tb ? malloc(ne * sizeof *v->b) : NULL;
    v->c = tc ? malloc((rows ? rows : 1) * sizeof *v->c) : NULL;
    v->y = malloc((rows ? rows : 1) * sizeof *v->y);
    if (!v->a || (tb && !v->b) || (tc && !v->c) || !v->y)
        return nx_err_set(err, NX_ENOMEM, "out of memory for %zu x %zu values", rows, n);
    if ((st = rows_decode(ta, v->a, err)) || (tb && (st = rows_decode(tb, v->b, err))) ||
        (tc && (st = rows_decode(tc, v->c, err)))) {
        nx_err_prefix(err, "%s", inp);
        return st;
    }
    if ((st = rows_decode(ty, v->y, err))) {
        nx_err_prefix(err, "%s", yp);
        return st;
    }
    memset(fp, 0, sizeof *fp);
    fp->in.rows = rows;
    fp->in.a_fmt = (nx_fmt)rows_fmt_of_dtype(ta->dtype);
    fp->in.a = v->a;
    fp->in.b_fmt = tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64;
    fp->in.b = v->b;
    fp->in.c_fmt = tc ? (nx_fmt)rows_fmt_of_dtype(tc->dtype) : NX_FP64;
    fp->in.c = v->c;
    fp->n = n;
    fp->dot = tb != NULL;
    fp->y = v->y;
    return NX_OK;
}


nx_status pa_fit_pairs_agree(const fit_pair *fp, size_t p, nx_fmt f, nx_fmt yfmt, const char *inp, const char *yp,
                             const char *in0, const char *y0, nx_err *err)
{
    if (f != yfmt)
        return nx_err_set(err, NX_EINVAL, "%s: y is %s but %s's is %s: one point has one out format", yp,
                          nx_format(f)->name, y0, nx_format(yfmt)->name);
    if (fp[p].dot != fp[0].dot)
        return nx_err_set(err, NX_EINVAL, "%s: %s 'b' but %s %s: the pairs must all be dot products or all sums",
                          inp, fp[p].dot ? "has" : "has no", in0, fp[0].dot ? "has" : "has not");
    return NX_OK;
}

void pa_free_hints(rv_opts *o)
{
    for (size_t i = 0; i < o->nhints; i++)
        free(o->hints[i]);
    free(o->hints);
    o->hints = NULL;
    o->nhints = 0;
}

nx_status pa_reveal_hints(const fit_space *sp, rv_opts *o, nx_err *err)
{
    nx_status st = NX_OK;
    if (!(o->hints = calloc(sp->count ? sp->count : 1, sizeof *o->hints)))
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t i = 0; i < sp->count && !st; i++) {
        nx_point pt;
        if ((st = fit_cand_point(sp, i, &pt, err))) {
            nx_err_prefix(err, "--space");
            break;
        }
        char *t = nx_tree_print(pt.tree);
        nx_point_free(&pt);
        if (!t) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        int seen = 0;
        for (size_t h = 0; h < o->nhints && !seen; h++)
            seen = strcmp(o->hints[h], t) == 0;
        if (seen)
            free(t);
        else
            o->hints[o->nhints++] = t;
    }
    if (st)
        pa_free_hints(o);
    return st;
}

nx_status pa_y_encode(const pa_reduce_out *o, st_tensor *ty, uint8_t *data, nx_err *err)
{
    nx_fmt of = o->prog->out;
    int widened;
    pa_y_dtype(of, o->rows, &widened);
    if (widened)
        for (size_t r = 0; r < o->rows; r++) { /* every value must still be one of `out` */
            uint64_t bits;
            nx_err e;
            if (nx_encode(of, o->y[r], &bits, &e) != NX_OK)
                return nx_err_set(err, NX_EINVAL, "cannot write the result: row %zu: %s", r, e.msg);
        }
    nx_status st = rows_encode(widened ? NX_FP32 : of, o->y, o->rows, ty, data, err);
    if (st == NX_EINVAL)
        nx_err_prefix(err, "cannot write the result (the element index is the row)");
    return st;
}

nx_status pa_reference(const char *kdir, const char *fp, const char **cls, const char **shape, const st_file *in,
                       const char *inp, const ref_opts *o, reg_registry **reg, fam_spec *spec, st_file *out,
                       nx_err *err)
{
    nx_status st;
    if (!*shape)
        *shape = st_get_meta(in, "shape");
    if (!*cls)
        *cls = st_get_meta(in, "class") ? st_get_meta(in, "class") : "cpu";
    if ((st = reg_load(kdir, reg, err)) || (st = reg_resolve(*reg, *cls, fp, *shape, spec, err)))
        return st;
    const char *in_family = st_get_meta(in, "family");
    if (in_family && strcmp(in_family, spec->family) != 0)
        return nx_err_set(err, NX_EINVAL, "%s holds inputs of family '%s', not '%s'", inp, in_family, spec->family);
    if ((st = ref_run_opts(spec, in, out, o, err)))
        nx_err_prefix(err, "%s", inp);
    return st;
}

char *pa_trace_text(const tc_trace *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "%-46s %-8s %-10s %s\n", c->t.path, trace_mode_name(c->t.mode),
            c->t2.verdict == CV_PASS ? (c->r.bit_exact ? "bits" : c->r.cmp.opt.policy == CMP_BOUND ? "bound" : "tolerance")
                                       : "FAIL",
            c->t2.detail);
    if (c->t2.verdict == CV_FAIL)
        report_indent(f, c->r.text, 4);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
