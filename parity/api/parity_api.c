/* parity_api.c: the C ABI of libparity.so (parity_api.h).  Each function
 * wraps the caller's memory in safetensors tensors that borrow it (no
 * copy) and runs what the CLI runs: pa_core.c for reduce, check --numerics
 * and fit, parity/reveal for reveal. */
#define _GNU_SOURCE /* dladdr */
#include "parity_api.h"
#include "famdesc.h"

#include "diff.h"
#include "fit.h"
#include "nx_limits.h"
#include "pa_core.h"
#include "parity_probe.h"
#include "point_toml.h"
#include "refimpl.h"
#include "registry.h"
#include "reveal.h"
#include "rows.h"
#include "rows_input.h"
#include "trace.h"
#include "trace_check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(parity_api_probe) == sizeof(parity_probe), "parity_api_probe is parity_probe");

#ifndef PARITY_VERSION
#define PARITY_VERSION "unknown"
#endif

API int parity_api_version(void)
{
    return PARITY_API_VERSION;
}

API const char *parity_version(void)
{
    return PARITY_VERSION;
}

API void parity_free(void *p)
{
    free(p);
}

/* nx_status to the CLI's exit status (cli_fail's mapping). */
static int fail(parity_error *e, const nx_err *x)
{
    int code = x->code == NX_ENOMEM || x->code == NX_EINTERNAL || x->code == NX_EDEVICE ? PARITY_EINTERNAL : PARITY_EINPUT;
    if (e) {
        e->code = code;
        snprintf(e->msg, sizeof e->msg, "%s", x->msg);
    }
    return code;
}

static int ok(parity_error *e, int code)
{
    if (e) {
        e->code = code;
        e->msg[0] = 0;
    }
    return code;
}

static int input_error(parity_error *e, const char *fmt, const char *what)
{
    nx_err x;
    nx_err_set(&x, NX_EINVAL, fmt, what);
    return fail(e, &x);
}

/* A tensor named name that borrows t's memory. */
static nx_status view(const char *arg, const char *name, const parity_tensor *t, st_tensor *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    out->name = (char *)name;
    if (!t->dtype || !trace_dtype_from_name(t->dtype, &out->dtype))
        return nx_err_set(err, NX_EINVAL, "%s: unknown dtype '%s'", arg, t->dtype ? t->dtype : "(null)");
    if (t->ndim < 0 || t->ndim > ST_MAX_NDIM || (t->ndim && !t->shape))
        return nx_err_set(err, NX_EINVAL, "%s: %d dimensions (at most %d)", arg, t->ndim, ST_MAX_NDIM);
    out->ndim = t->ndim;
    uint64_t ne = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return nx_err_set(err, NX_EINVAL, "%s: dimension %d is %lld", arg, d, (long long)t->shape[d]);
        out->shape[d] = t->shape[d];
        if (t->shape[d] && ne > UINT64_MAX / 64 / (uint64_t)t->shape[d])
            return nx_err_set(err, NX_EINVAL, "%s: too many elements", arg);
        ne *= (uint64_t)t->shape[d];
    }
    uint64_t bits = ne * (uint64_t)st_dtype_bits(out->dtype);
    if (bits % 8)
        return nx_err_set(err, NX_EINVAL, "%s: %llu elements of %s do not fill whole bytes", arg,
                          (unsigned long long)ne, st_dtype_name(out->dtype));
    out->nelem = ne;
    out->nbytes = bits / 8;
    out->data = (uint8_t *)t->data;
    out->owns_data = false;
    if (!t->data && ne)
        return nx_err_set(err, NX_EINVAL, "%s: no data", arg);
    return NX_OK;
}

/* The inputs a, b, c as the st_file `parity reduce` reads (borrowed). */
typedef struct in_view {
    st_tensor t[3];
    st_file f;
} in_view;

static nx_status in_file(const parity_tensor *a, const parity_tensor *b, const parity_tensor *c, in_view *v,
                         nx_err *err)
{
    memset(v, 0, sizeof *v);
    nx_status st;
    if (!a)
        return nx_err_set(err, NX_EINVAL, "a: missing");
    size_t k = 0;
    if ((st = view("a", "a", a, &v->t[k++], err)))
        return st;
    if (b && b->data && (st = view("b", "b", b, &v->t[k++], err)))
        return st;
    if (c && c->data && (st = view("c", "c", c, &v->t[k++], err)))
        return st;
    v->f.tensors = v->t;
    v->f.ntensors = k;
    v->f.tensors_cap = k;
    return NX_OK;
}

static nx_engine_kind engine_of(const char *s, int *bad)
{
    int e = s ? nx_engine_from_name(s, 1) : NX_ENGINE_AUTO;
    *bad = e < 0;
    return e < 0 ? NX_ENGINE_AUTO : (nx_engine_kind)e;
}

API int parity_point_parse(const char *point, size_t rows, char **canonical, char *out_dtype, parity_error *e)
{
    if (canonical)
        *canonical = NULL;
    if (!point)
        return input_error(e, "%s: missing", "point");
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(point, "point", &pt, &err))
        return fail(e, &err);
    int rc = PARITY_OK;
    if (out_dtype) {
        int widened;
        snprintf(out_dtype, 16, "%s", st_dtype_name(pa_y_dtype(nx_point_out(&pt), rows, &widened)));
    }
    if (canonical && !(*canonical = nx_point_print(&pt))) {
        nx_err_set(&err, NX_ENOMEM, "out of memory");
        rc = fail(e, &err);
    }
    nx_point_free(&pt);
    return rc ? rc : ok(e, PARITY_OK);
}

API int parity_reduce(const char *point, const parity_tensor *a, const parity_tensor *b, const parity_tensor *c,
                      const char *engine, int threads, size_t check, void *y, size_t y_bytes, parity_error *e)
{
    int bad;
    nx_engine_kind eng = engine_of(engine, &bad);
    if (bad)
        return input_error(e, "engine: unknown engine '%s' (expected auto, fast or mpfr)", engine);
    if (!point)
        return input_error(e, "%s: missing", "point");
    nx_err err = {0};
    in_view v;
    nx_point pt;
    if (in_file(a, b, c, &v, &err) || pt_from_text(point, "point", &pt, &err))
        return fail(e, &err);
    pa_reduce_out o;
    nx_status st = pa_reduce(&pt, "the inputs", &v.f, eng, check ? check : 32, threads, 0, &o, &err);
    if (!st) {
        int widened;
        parity_tensor yt = {y, st_dtype_name(pa_y_dtype(o.prog->out, o.rows, &widened)), 1,
                            (int64_t[1]){(int64_t)o.rows}};
        st_tensor ty;
        if (!(st = view("y", "y", &yt, &ty, &err))) {
            if (ty.nbytes != y_bytes)
                st = nx_err_set(&err, NX_EINVAL, "y: %zu bytes, but %zu rows of %s need %llu", y_bytes, o.rows,
                                yt.dtype, (unsigned long long)ty.nbytes);
            else
                st = pa_y_encode(&o, &ty, ty.data, &err);
        }
    }
    pa_reduce_out_free(&o);
    nx_point_free(&pt);
    return st ? fail(e, &err) : ok(e, PARITY_OK);
}

API int parity_check_numerics(const char *point, const parity_tensor *a, const parity_tensor *b,
                              const parity_tensor *y, const char *name, const char *engine, int threads,
                              char **verdict, parity_error *e)
{
    if (verdict)
        *verdict = NULL;
    int eng = engine ? nx_engine_from_name(engine, 0) : NX_ENGINE_FAST, mpfr = eng == NX_ENGINE_MPFR;
    if (eng < 0)
        return input_error(e, "engine: unknown engine '%s' (expected fast or mpfr)", engine);
    if (!point)
        return input_error(e, "%s: missing", "point");
    if (!y)
        return input_error(e, "%s: missing", "y");
    nx_err err = {0};
    in_view v;
    nx_point pt;
    st_tensor ty;
    if (in_file(a, b, NULL, &v, &err) || pt_from_text(point, "point", &pt, &err))
        return fail(e, &err);
    const char *yname = name ? name : "y";
    pa_check_out o;
    nx_status st = pa_check_prepare(&pt, "the inputs", &v.f, &o, &err);
    if (!st && !(st = view(yname, "y", y, &ty, &err)))
        st = pa_check_numerics("the inputs", &v.f, yname, "y", &ty, mpfr, threads, &o, &err);
    int rc = PARITY_OK;
    if (!st) {
        rc = o.res.mismatched ? PARITY_FAIL : PARITY_OK;
        if (verdict && !(*verdict = pa_check_text(&o, yname)))
            st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    }
    pa_check_out_free(&o);
    nx_point_free(&pt);
    return st ? fail(e, &err) : ok(e, rc);
}

/* Lines appended to a malloc'd text. */
static int appendf(char **s, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int appendf(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *n = k < 0 ? NULL : realloc(*s, *len + (size_t)k + 1);
    if (!n)
        return -1;
    va_start(ap, fmt);
    vsnprintf(n + *len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    *s = n;
    *len += (size_t)k;
    return 0;
}

API int parity_fit(size_t npairs, const parity_tensor *a, const parity_tensor *b, const parity_tensor *y,
                   const char *space, int threads, char **point, char **report, parity_error *e)
{
    if (point)
        *point = NULL;
    if (report)
        *report = NULL;
    if (!npairs || !a || !y)
        return input_error(e, "%s: at least one pair of inputs and outputs is needed", "pairs");
    nx_err err = {0};
    nx_status st = NX_OK;
    in_view *iv = calloc(npairs, sizeof *iv);
    st_tensor *ty = calloc(npairs, sizeof *ty);
    pa_fit_vals *vals = calloc(npairs, sizeof *vals);
    fit_pair *fp = calloc(npairs, sizeof *fp);
    char (*ins)[32] = calloc(npairs, sizeof *ins), (*ys)[32] = calloc(npairs, sizeof *ys);
    fit_space sp;
    fit_space_init(&sp, NX_FP32);
    fit_result res;
    memset(&res, 0, sizeof res);
    char *text = NULL;
    size_t tlen = 0;
    int rc = PARITY_OK;
    if (!iv || !ty || !vals || !fp || !ins || !ys) {
        st = nx_err_set(&err, NX_ENOMEM, "out of memory");
        goto out;
    }
    nx_fmt yfmt = NX_FP32;
    for (size_t p = 0; p < npairs && !st; p++) {
        snprintf(ins[p], sizeof ins[p], "inputs[%zu]", p);
        snprintf(ys[p], sizeof ys[p], "outputs[%zu]", p);
        const st_tensor *ta, *tb, *tc;
        nx_fmt f = NX_FP32;
        if ((st = in_file(&a[p], b ? &b[p] : NULL, NULL, &iv[p], &err)) ||
            (st = rows_check_inputs_c(ins[p], &iv[p].f, &ta, &tb, &tc, &err)) ||
            (st = view(ys[p], "y", &y[p], &ty[p], &err)) ||
            (st = pa_fit_pair(ins[p], ta, tb, tc, ys[p], "y", &ty[p], &vals[p], &fp[p], &f, &err)))
            break;
        if (p)
            st = pa_fit_pairs_agree(fp, p, f, yfmt, ins[p], ys[p], ins[0], ys[0], &err);
        yfmt = f;
    }
    if (st)
        goto out;
    fit_ctx ctx = {.out = yfmt, .in_fmt = fp[0].in.a_fmt, .dot = fp[0].dot};
    sp.out = yfmt;
    if (space) {
        if (!(st = fit_space_parse(&sp, &ctx, space, "space", &err)) && !sp.count)
            st = nx_err_set(&err, NX_EINVAL, "space: no candidates");
    } else
        st = fit_space_default(&sp, &ctx, 0, &err);
    if (st)
        goto out;
    fit_opts o = {.threads = threads, .engine = NX_ENGINE_FAST, .classes = 1, .verify = 1, .parts = 1};
    if ((st = fit_run(fp, npairs, &sp, &o, &res, &err)))
        goto out;
    int bad = 0;
    if (res.found) {
        bad |= appendf(&text, &tlen, "reproduces all %zu rows (verified with MPFR)%s; %zu candidate(s) fit on their own\n",
                       res.total_rows, res.nclasses ? " with row classes" : "", res.nfit);
        for (size_t i = 0; i < res.nalt && i < FIT_SHOW_ALT; i++) {
            char *t = fit_cand_text(&sp, res.alt[i]);
            bad |= appendf(&text, &tlen, "also fits: %s\n", t ? t : "?");
            free(t);
        }
        if (point && !(*point = strdup(res.point)))
            bad = 1;
    } else {
        rc = PARITY_FAIL;
        bad |= appendf(&text, &tlen, "no point in the space (%zu candidates) reproduces every row; closest:\n",
                       res.evaluated);
        for (size_t i = 0; i < res.nnear; i++) {
            char *t = fit_cand_text(&sp, res.near[i].cand);
            bad |= appendf(&text, &tlen, "closest %zu: %zu/%zu rows differ: %s\n", i + 1, res.near[i].mismatches,
                           res.total_rows, t ? t : "?");
            free(t);
        }
    }
    if (bad)
        st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    else if (report) {
        *report = text;
        text = NULL;
    }
out:
    free(text);
    fit_result_free(&res);
    fit_space_free(&sp);
    for (size_t p = 0; vals && p < npairs; p++)
        pa_fit_vals_free(&vals[p]);
    free(iv);
    free(ty);
    free(vals);
    free(fp);
    free(ins);
    free(ys);
    if (st && point) {
        free(*point);
        *point = NULL;
    }
    return st ? fail(e, &err) : ok(e, rc);
}

/* --- reveal through a callback --------------------------------------------
 * The kernel is called as `parity reveal --dlopen` calls a C function:
 * rv_kernel_dlopen opens this library (already loaded: the same handle) at
 * the trampoline below, which calls the function parity_reveal was given.
 * One reveal at a time: the callback is process-wide. */

static pthread_mutex_t reveal_lock = PTHREAD_MUTEX_INITIALIZER;
static parity_api_probe_fn reveal_fn;

API int parity_api_reveal_trampoline(parity_probe *p)
{
    return reveal_fn((parity_api_probe *)p);
}

/* The last line of reveal's account of the lengths (rv_say), for the
 * error message when a point is refused; under reveal_lock. */
static char last_line[1024];

static void keep_line(void *ctx, const char *text)
{
    snprintf((char *)ctx, sizeof last_line, "%s", text);
}

static int reveal_impl(parity_api_probe_fn fn, const size_t *lens, size_t nlens, const char *dtype, const char *space,
                       unsigned long long seed, unsigned flags, size_t grid_m, size_t grid_n, char **point,
                       char **order, parity_reveal_info *info, parity_error *e);

/* The point at o->n as `parity reveal` finds it: the order, the
 * arithmetic, the confirmation, then the lengths (the order another
 * induction length showed, two lengths not probed).  res->point: the point,
 * or NULL; *stage: 0 no order, 1 no arithmetic, 2 the point's
 * confirmation rows differ (the point kept), 3 refused at a length
 * (last_line says why), 4 found. */
/* The lengths a reveal probes (the API's n, or its list). */
typedef struct reveal_lens {
    const size_t *v;
    size_t n;
} reveal_lens;

/* One length, o->n: the order, the arithmetic, the point held at that
 * length (rv_one_length).  *stage as reveal_point's, 4 meaning held. */
static nx_status reveal_at(rv_kernel *k, const rv_opts *o, rv_result *res, int *stage, nx_err *err)
{
    *stage = 0;
    nx_status st = rv_reveal_order(k, o, res, err);
    if (st == NX_EUNSUPPORTED)
        return NX_OK;
    if (st || !res->tree_text)
        return st;
    *stage = 1;
    if ((st = rv_reveal_arith(k, o, res, err)) || !res->point)
        return st;
    *stage = 2;
    if (res->confirm_ok != res->confirm_rows)
        return NX_OK; /* kept: info's confirmation counts say so */
    int v;
    rv_say say = {keep_line, last_line};
    last_line[0] = 0;
    if ((st = rv_one_length(k, o, res, &say, &v, err)))
        return st;
    *stage = v == RV_LEN_REFUSED ? 3 : 4;
    return NX_OK;
}

/* Every length of ls revealed (reveal_at), then one point for all of
 * them confirmed at lengths not probed (rv_generalise), as `parity reveal
 * --n N1,N2,...`.  *stage: 0 the order not found, 1 the arithmetic not
 * found, 2 not confirmed at the length, 3 refused (the last line says
 * why), 4 res->point holds.  res: the last length's result. */
static nx_status reveal_point(rv_kernel *k, const rv_opts *o0, const reveal_lens *ls, rv_result *res, int *stage,
                              nx_err *err)
{
    char *points[RV_MAX_LENGTHS] = {0};
    rv_opts o = *o0;
    nx_status st = NX_OK;
    *stage = 4;
    for (size_t l = 0; l < ls->n && !st && *stage == 4; l++) {
        if (l > 0) {
            rv_result_free(res);
            memset(res, 0, sizeof *res);
        }
        o.n = ls->v[l];
        if (!(st = reveal_at(k, &o, res, stage, err)) && *stage == 4 && !(points[l] = strdup(res->point)))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    if (!st && *stage == 4) {
        int v;
        char *pt = NULL;
        rv_say say = {keep_line, last_line};
        o.n = ls->v[0];
        if (!(st = rv_generalise(k, &o, ls->v, ls->n, points, &say, &v, &pt, err))) {
            free(res->point);
            res->point = v == RV_LEN_REFUSED ? (free(pt), NULL) : pt;
            *stage = v == RV_LEN_REFUSED ? 3 : 4;
        }
    } else if (!st && *stage == 3) {
        free(res->point);
        res->point = NULL;
    }
    for (size_t l = 0; l < ls->n; l++)
        free(points[l]);
    return st;
}

/* rv_one_row's reveal_fn: the one-row path's point, found as above at
 * every length (ctx: the reveal_lens). */
static nx_status reveal_rows1(rv_kernel *k, const rv_opts *o, void *ctx, char **point, nx_err *err)
{
    rv_result res = {0};
    int stage;
    nx_status st = reveal_point(k, o, ctx, &res, &stage, err);
    *point = !st && stage == 4 ? res.point : NULL;
    if (*point)
        res.point = NULL;
    rv_result_free(&res);
    return st;
}

API int parity_reveal(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                      char **point, char **order, parity_reveal_info *info, parity_error *e)
{
    return reveal_impl(fn, &n, 1, dtype, space, seed, 0, 0, 0, point, order, info, e);
}

API int parity_reveal2(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                       unsigned flags, char **point, char **order, parity_reveal_info *info, parity_error *e)
{
    return reveal_impl(fn, &n, 1, dtype, space, seed, flags, 0, 0, point, order, info, e);
}

API int parity_reveal3(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                       unsigned flags, size_t grid_m, size_t grid_n, char **point, char **order, parity_reveal_info *info,
                       parity_error *e)
{
    return reveal_impl(fn, &n, 1, dtype, space, seed, flags, grid_m, grid_n, point, order, info, e);
}

API int parity_reveal4(parity_api_probe_fn fn, const size_t *lens, size_t nlens, const char *dtype, const char *space,
                       unsigned long long seed, unsigned flags, size_t grid_m, size_t grid_n, char **point, char **order,
                       parity_reveal_info *info, parity_error *e)
{
    return reveal_impl(fn, lens, nlens, dtype, space, seed, flags, grid_m, grid_n, point, order, info, e);
}

static int reveal_impl(parity_api_probe_fn fn, const size_t *lens, size_t nlens, const char *dtype, const char *space,
                       unsigned long long seed, unsigned flags, size_t grid_m, size_t grid_n, char **point,
                       char **order, parity_reveal_info *info, parity_error *e)
{
    if (point)
        *point = NULL;
    if (order)
        *order = NULL;
    if (info)
        memset(info, 0, sizeof *info);
    if (!fn)
        return input_error(e, "%s: no kernel function", "fn");
    char why[160];
    if (!lens || nlens < 1 || nlens > RV_MAX_LENGTHS) {
        snprintf(why, sizeof why, "%zu lengths (1 ... %d)", lens ? nlens : 0, RV_MAX_LENGTHS);
        return input_error(e, "n: %s", why);
    }
    for (size_t l = 0; l < nlens; l++) {
        if (lens[l] < 2 || lens[l] > RV_MAX_N) {
            snprintf(why, sizeof why, "%zu must be in 2 .. 65536 (docs/limits.md: the probes cost about n^1.8)",
                     lens[l]);
            return input_error(e, "n: %s", why);
        }
        for (size_t q = 0; q < l; q++)
            if (lens[q] == lens[l]) {
                snprintf(why, sizeof why, "%zu is given twice", lens[l]);
                return input_error(e, "n: %s", why);
            }
    }
    size_t n = lens[0];
    reveal_lens ls = {lens, nlens};
    st_dtype dt;
    int in = -1;
    if (dtype && st_dtype_from_name(dtype, &dt))
        in = rows_fmt_of_dtype(dt);
    if (in != NX_FP32 && in != NX_BF16 && in != NX_FP16 && in != NX_FP64)
        return input_error(e, "dtype: '%s' is not one of F32, BF16, F16, F64", dtype ? dtype : "(null)");
    if (flags & ~(unsigned)PARITY_REVEAL_SHARED_B)
        return input_error(e, "%s: unknown bits (PARITY_REVEAL_SHARED_B is the only flag)", "flags");
    if ((flags & PARITY_REVEAL_SHARED_B) && in == NX_FP16)
        return input_error(e, "%s", "shared_b: takes F32, BF16 or F64 inputs: the order's probes need products beyond "
                                    "F16's range, which rows that share b cannot carry");
    nx_err ge = {0};
    for (size_t l = 0; l < nlens; l++)
        if ((grid_m || grid_n) && rv_grid_check(grid_m, grid_n, lens[l], !!(flags & PARITY_REVEAL_SHARED_B), &ge))
            return input_error(e, "grid: %s", ge.msg);
    nx_err err = {0};
    nx_status st = NX_OK;
    rv_opts o = {0};
    o.n = n;
    o.seed = seed;
    o.fit_rows = grid_m * grid_n; /* 0: the default */
    if (space) {
        fit_space sp;
        fit_space_init(&sp, NX_FP32);
        fit_ctx ctx = {.out = NX_FP32, .in_fmt = (nx_fmt)in, .dot = 1};
        if (!(st = fit_space_parse(&sp, &ctx, space, "space", &err)) && !sp.count)
            st = nx_err_set(&err, NX_EINVAL, "space: no candidates");
        if (!st)
            st = pa_reveal_hints(&sp, &o, &err);
        fit_space_free(&sp);
        if (st)
            return fail(e, &err);
    }
    Dl_info dl;
    if (!dladdr((void *)parity_api_reveal_trampoline, &dl) || !dl.dli_fname) {
        pa_free_hints(&o);
        nx_err_set(&err, NX_EINTERNAL, "reveal: cannot find the library's own path");
        return fail(e, &err);
    }
    char spec[4200];
    snprintf(spec, sizeof spec, "%s:parity_api_reveal_trampoline", dl.dli_fname);
    pthread_mutex_lock(&reveal_lock);
    reveal_fn = fn;
    rv_kernel *k = NULL;
    rv_result res = {0};
    int rc = PARITY_OK, res_found_order = 0;
    if ((st = rv_kernel_dlopen(spec, (nx_fmt)in, &k, &err)))
        goto out;
    k->shared_b = !!(flags & PARITY_REVEAL_SHARED_B);
    k->grid_m = grid_m;
    k->grid_n = grid_n;
    int stage = 0;
    if ((st = reveal_point(k, &o, &ls, &res, &stage, &err)))
        goto out;
    res_found_order = stage >= 1;
    if (!res.point) {
        rc = PARITY_FAIL;
        if (stage == 3) /* refused at a length: the last line says why */
            nx_err_set(&err, NX_EUNSUPPORTED, "%s", last_line);
        goto done;
    }
    /* one row a call (R = 1), as `parity reveal` holds it */
    if (stage == 4) {
        rv_say say = {keep_line, last_line};
        char *fin = NULL;
        if ((st = rv_one_row(k, &o, n, res.point, reveal_rows1, &ls, &say, &fin, &err)))
            goto out;
        free(res.point);
        res.point = fin;
    }
done:
    if (order && res.tree_text && !(*order = strdup(res.tree_text)))
        st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    if (point && res.point && !(*point = strdup(res.point)))
        st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    if (info)
        *info = (parity_reveal_info){k->calls, k->probes, res.order_calls, res.order_probes, res.arith_calls,
                                     res.arith_probes, res.confirm_rows, res.confirm_ok, res.alternatives};
out:
    if (k)
        rv_kernel_free(k);
    reveal_fn = NULL;
    pthread_mutex_unlock(&reveal_lock);
    rv_result_free(&res);
    pa_free_hints(&o);
    if (st) {
        if (point) {
            free(*point);
            *point = NULL;
        }
        if (order) {
            free(*order);
            *order = NULL;
        }
        return fail(e, &err);
    }
    ok(e, rc);
    if (e && rc == PARITY_FAIL)
        snprintf(e->msg, sizeof e->msg, "%s", err.msg[0] ? err.msg
                                              : !res_found_order ? "the order was not revealed"
                                                                 : "no point of the space reproduces the kernel with "
                                                                   "the revealed order");
    return rc;
}

/* --- family points: the reference, and a kernel's outputs checked -------- */

struct parity_outputs {
    st_file f;
};

API size_t parity_outputs_count(const parity_outputs *o)
{
    return o ? o->f.ntensors : 0;
}

API int parity_outputs_tensor(const parity_outputs *o, size_t i, const char **name, const char **dtype, int *ndim,
                              const int64_t **shape, const void **data, size_t *nbytes)
{
    if (!o || i >= o->f.ntensors)
        return PARITY_EINPUT;
    const st_tensor *t = &o->f.tensors[i];
    *name = t->name;
    *dtype = st_dtype_name(t->dtype);
    *ndim = t->ndim;
    *shape = t->shape;
    *data = t->data;
    *nbytes = (size_t)t->nbytes;
    return PARITY_OK;
}

API void parity_outputs_free(parity_outputs *o)
{
    if (!o)
        return;
    st_free(&o->f);
    free(o);
}

/* Adds tensor name to f, borrowing t's memory (st_free leaves it alone). */
static nx_status add_borrowed(st_file *f, const char *arg, const char *name, const parity_tensor *t, nx_err *err)
{
    st_tensor v, *added;
    nx_status st;
    if ((st = view(arg, name, t, &v, err)) || (st = st_add_tensor(f, name, v.dtype, v.ndim, v.shape, &added, err)))
        return st;
    if (added->owns_data)
        free(added->data);
    added->data = v.data;
    added->owns_data = false;
    return NX_OK;
}

static nx_status add_inputs(st_file *f, const char *prefix, size_t n, const char *const *names,
                            const parity_tensor *ts, nx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char full[160];
        if (!names || !names[i])
            return nx_err_set(err, NX_EINVAL, "%s[%zu]: no name", *prefix ? "outputs" : "inputs", i);
        snprintf(full, sizeof full, "%s%s", prefix, names[i]);
        nx_status st = add_borrowed(f, full, full, &ts[i], err);
        if (st)
            return st;
    }
    return NX_OK;
}

static nx_status ref_engine_of(const char *s, ref_opts *o, nx_err *err)
{
    o->engine = ref_engine_default();
    if (!s)
        return NX_OK;
    int e = nx_engine_from_name(s, 0);
    if (e < 0 || !ref_engine_available((nx_engine_kind)e))
        return nx_err_set(err, NX_EINVAL, "engine: '%s' is not an engine built into this library", s);
    o->engine = (nx_engine_kind)e;
    return NX_OK;
}

API int parity_reference(const char *kernels, const char *fp, const char *cls, const char *shape, size_t ninputs,
                         const char *const *names, const parity_tensor *inputs, const char *engine, int threads,
                         parity_outputs **out, parity_error *e)
{
    *out = NULL;
    if (!fp)
        return input_error(e, "%s: missing", "family_point");
    nx_err err = {0};
    ref_opts o = {threads, ref_engine_default()};
    st_file in;
    st_init(&in);
    reg_registry *reg = NULL;
    fam_spec spec;
    memset(&spec, 0, sizeof spec);
    parity_outputs *res = calloc(1, sizeof *res);
    nx_status st = res ? NX_OK : nx_err_set(&err, NX_ENOMEM, "out of memory");
    if (!st)
        st_init(&res->f);
    if (!st && !(st = ref_engine_of(engine, &o, &err)) && !(st = add_inputs(&in, "", ninputs, names, inputs, &err)))
        st = pa_reference(kernels ? kernels : "kernels", fp, &cls, &shape, &in, "inputs", &o, &reg, &spec, &res->f,
                          &err);
    st_free(&in);
    fam_spec_free(&spec);
    reg_free(reg);
    if (st) {
        parity_outputs_free(res);
        return fail(e, &err);
    }
    *out = res;
    return ok(e, PARITY_OK);
}

API int parity_check_point(const char *kernels, const char *fp, const char *cls, const char *shape, size_t ninputs,
                           const char *const *in_names, const parity_tensor *inputs, size_t noutputs,
                           const char *const *out_names, const parity_tensor *outputs, const char *kernel,
                           const char *name, const char *engine, char **verdict, parity_error *e)
{
    if (verdict)
        *verdict = NULL;
    const char *dot = fp ? strchr(fp, '.') : NULL;
    if (!dot || dot == fp || !dot[1])
        return input_error(e, "family_point: expected FAMILY.POINT, got '%s'", fp ? fp : "(null)");
    if (!shape)
        return input_error(e, "%s: missing (e.g. \"M=16,N=64,K=256\")", "shape");
    nx_err err = {0};
    ref_opts o = {0, ref_engine_default()};
    char family[160], point[160], batch[64], created[32];
    snprintf(family, sizeof family, "%.*s", (int)(dot - fp), fp);
    snprintf(point, sizeof point, "%s", dot + 1);
    /* the batch: every row of the family's batch dimension, in order */
    const char *bd = fam_batch_dim(family);
    trace_dim *dims = NULL;
    size_t nd = 0;
    int64_t rows = -1;
    nx_status st = ref_engine_of(engine, &o, &err);
    if (!st && !(st = trace_parse_shape(shape, &dims, &nd, &err))) {
        for (size_t i = 0; i < nd; i++)
            if (bd && !strcmp(dims[i].name, bd))
                rows = dims[i].value;
        for (size_t i = 0; i < nd; i++)
            free(dims[i].name);
        free(dims);
        if (rows <= 0)
            st = nx_err_set(&err, NX_EINVAL, "shape: '%s' has no batch dimension %s of at least one row", shape,
                            bd ? bd : "(unknown family)");
    } else if (st)
        nx_err_prefix(&err, "shape");
    if (st)
        return fail(e, &err);
    snprintf(batch, sizeof batch, rows == 1 ? "rows=0" : "rows=0..%lld", (long long)rows - 1);
    time_t now = time(NULL);
    struct tm tmv;
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    st_file f;
    st_init(&f);
    const char *meta[][2] = {{"parity.trace", "1"}, {"family", family}, {"point", point},
                             {"class", cls ? cls : "cpu"}, {"kernel", kernel ? kernel : "python"},
                             {"device", "{}"}, {"shape", shape}, {"mode", "eager"}, {"run", "0"},
                             {"batch", batch}, {"created", created}, {"producer", "parity.py"}};
    for (size_t i = 0; i < sizeof meta / sizeof *meta && !st; i++)
        st = st_add_meta(&f, meta[i][0], meta[i][1], &err);
    if (!st && !(st = add_inputs(&f, TRACE_INPUT_PREFIX, ninputs, in_names, inputs, &err)))
        st = add_inputs(&f, "", noutputs, out_names, outputs, &err);
    if (st) {
        st_free(&f);
        return fail(e, &err);
    }
    tc_trace c;
    tc_trace_init(&c);
    reg_registry *reg = NULL;
    int rc = PARITY_OK;
    if (!(st = trace_from_st(name ? name : "actual", &f, &c.t, &err)) &&
        !(st = reg_load(kernels ? kernels : "kernels", &reg, &err)) &&
        !(st = tc_check_trace(reg, NULL, NULL, (int)o.engine, &c, &err))) {
        rc = c.t2.verdict == CV_FAIL ? PARITY_FAIL : PARITY_OK;
        if (verdict && !(*verdict = pa_trace_text(&c)))
            st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    }
    tc_trace_free(&c);
    reg_free(reg);
    return st ? fail(e, &err) : ok(e, rc);
}

/* --- two outputs, bit for bit ------------------------------------------- */

API int parity_diff(const parity_tensor *a, const parity_tensor *b, const char *name_a, const char *name_b,
                    size_t max_list, char **text, parity_error *e)
{
    if (text)
        *text = NULL;
    if (!a || !b)
        return input_error(e, "%s: missing", !a ? "a" : "b");
    nx_err err = {0};
    diff_source s[2];
    diff_files_result r;
    memset(&r, 0, sizeof r);
    const parity_tensor *t[2] = {a, b};
    const char *names[2] = {name_a ? name_a : "a", name_b ? name_b : "b"};
    nx_status st = NX_OK;
    for (int k = 0; k < 2; k++) {
        diff_source_init(&s[k]);
        s[k].path = names[k];
        s[k].kind = DIFF_SAFETENSORS;
        if (!st)
            st = add_borrowed(&s[k].st, names[k], "y", t[k], &err);
    }
    int rc = PARITY_OK;
    if (!st && !(st = diff_files(&s[0], &s[1], "y", max_list ? max_list : 10, &r, &err))) {
        rc = r.first_diverging == SIZE_MAX ? PARITY_OK : PARITY_FAIL;
        if (text && !(*text = diff_files_text(&s[0], &s[1], &r)))
            st = nx_err_set(&err, NX_ENOMEM, "out of memory");
    }
    diff_files_result_free(&r);
    diff_source_free(&s[0]);
    diff_source_free(&s[1]);
    return st ? fail(e, &err) : ok(e, rc);
}
