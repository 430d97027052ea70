/* trace_check.c: traces checked anywhere (trace_check.h): Tier 2 of each
 * trace through the one Tier 2, Tier 1 across the traces of one point,
 * cross-class parity across classes; and the trace a .npy output stands for. */
#include "trace_check.h"
#include "famdesc.h"
#include "npy.h"
#include "refimpl.h"
#include "rows.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tc_trace_init(tc_trace *c)
{
    memset(c, 0, sizeof *c);
    trace_init(&c->t);
    st_init(&c->ref);
}

void tc_trace_free(tc_trace *c)
{
    trace_free(&c->t);
    fam_spec_free(&c->spec);
    st_free(&c->ref);
    t2_result_free(&c->r);
}

/* The trace's inputs as the family names them (in.a → a), or NULL when the
 * trace holds none. */
static nx_status trace_inputs(const trace *t, st_file *out, int *have, nx_err *err)
{
    *have = 0;
    for (size_t i = 0; i < t->file.ntensors; i++) {
        const st_tensor *x = &t->file.tensors[i];
        if (!trace_tensor_is_input(x))
            continue;
        st_tensor *o;
        nx_status st = st_add_tensor(out, x->name + strlen(TRACE_INPUT_PREFIX), x->dtype, x->ndim, x->shape, &o, err);
        if (st)
            return st;
        memcpy(o->data, x->data, (size_t)x->nbytes);
        *have = 1;
    }
    return NX_OK;
}

/* "the trace's point A and the reference B differ: ..." (registry compare). */
static void points_differ(const reg_registry *reg, const trace *t, const char *id, const char *ref_point,
                          const char *ref_class, const char *shape, char *why, size_t len)
{
    char *diff = NULL;
    char a[160], b[160];
    snprintf(a, sizeof a, "%s:%s", t->class_name, id);
    snprintf(b, sizeof b, "%s:%s", ref_class ? ref_class : t->class_name, ref_point ? ref_point : id);
    int parity;
    nx_err e2;
    if (reg_compare(reg, a, b, shape, &diff, &parity, &e2) == NX_OK && diff) {
        char sum[600];
        camp_compare_summary(diff, sum, sizeof sum);
        snprintf(why, len, "the trace's point %s and the reference %s differ: %s", a, b,
                 *sum ? sum : "in their numerics hashes");
    } else {
        snprintf(why, len, "the trace's point and the reference have different numerics hashes");
    }
    free(diff);
}

/* Every reference output must be in the trace with the batch's rows. */
static nx_status check_outputs(const tc_trace *c, const char *family, nx_err *err)
{
    const trace *t = &c->t;
    for (size_t i = 0; i < c->ref.ntensors; i++) {
        const st_tensor *r = &c->ref.tensors[i];
        const st_tensor *g = trace_output(t, r->name);
        if (!g)
            return nx_err_set(err, NX_EINVAL, "%s: output tensor '%s' is missing (family %s outputs it)", t->path,
                              r->name, family);
        if (g->dtype != r->dtype)
            return nx_err_set(err, NX_EINVAL, "%s: output '%s' has dtype %s; the point's output is %s", t->path,
                              r->name, st_dtype_name(g->dtype), st_dtype_name(r->dtype));
        int ok = g->ndim == r->ndim && g->ndim > 0 && (uint64_t)g->shape[0] == t->nrows;
        for (int d = 1; ok && d < g->ndim; d++)
            ok = g->shape[d] == r->shape[d];
        if (!ok) {
            char gs[128] = "", rsb[128] = "";
            size_t a = 0, b = 0;
            for (int d = 0; d < g->ndim; d++)
                a += (size_t)snprintf(gs + a, sizeof gs - a, "%s%lld", d ? ", " : "", (long long)g->shape[d]);
            for (int d = 0; d < r->ndim; d++)
                b += (size_t)snprintf(rsb + b, sizeof rsb - b, "%s%lld", d ? ", " : "",
                                      d == 0 ? (long long)t->nrows : (long long)r->shape[d]);
            return nx_err_set(err, NX_EINVAL, "%s: output '%s' has shape [%s]; its shape and batch ('%s') need [%s]",
                              t->path, r->name, gs, t->batch, rsb);
        }
        for (size_t j = 0; j < t->nrows && !c->ref_by_batch; j++)
            if (t->rows[j] >= r->shape[0])
                return nx_err_set(err, NX_EINVAL, "%s: metadata 'batch': row %lld is beyond the shape's %lld rows",
                                  t->path, (long long)t->rows[j], (long long)r->shape[0]);
    }
    if (!c->ref.ntensors)
        return nx_err_set(err, NX_EINTERNAL, "%s: the reference produced no output", t->path);
    return NX_OK;
}

nx_status tc_check_trace(const reg_registry *reg, const char *ref_point, const char *ref_class, int engine,
                         tc_trace *c, nx_err *err)
{
    trace *t = &c->t;
    snprintf(c->id, sizeof c->id, "%s.%s", t->family, t->point);
    char shape[512] = "";
    size_t k = 0;
    for (size_t i = 0; i < t->nshape && k + 64 < sizeof shape; i++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%s=%lld", i ? "," : "", t->shape[i].name,
                              (long long)t->shape[i].value);
    nx_status st = reg_resolve(reg, t->class_name, c->id, shape, &c->spec, err);
    if (st) {
        nx_err_prefix(err, "%s: metadata 'family'/'point'/'class'", t->path);
        return st;
    }
    fam_spec refspec;
    memset(&refspec, 0, sizeof refspec);
    fam_spec *rs = &c->spec;
    if (ref_point) {
        if ((st = reg_resolve(reg, ref_class ? ref_class : t->class_name, ref_point, shape, &refspec, err))) {
            nx_err_prefix(err, "--reference");
            return st;
        }
        if (strcmp(refspec.family, c->spec.family) != 0) {
            st = nx_err_set(err, NX_EINVAL, "%s: family '%s' cannot be checked against a point of family '%s'", t->path,
                            c->spec.family, refspec.family);
            fam_spec_free(&refspec);
            return st;
        }
        rs = &refspec;
    }
    /* inputs: the trace's own, or regenerated from its seed */
    st_file in;
    st_init(&in);
    int have = 0;
    if ((st = trace_inputs(t, &in, &have, err)))
        goto out;
    const char *bd = fam_batch_dim(rs->family);
    if (have) {
        /* in batch order: the reference sees the batch as its rows, and so
         * does a bound derived from the trace's point */
        char nb[32];
        snprintf(nb, sizeof nb, "%zu", t->nrows);
        if (bd && ((st = fam_spec_set_param(rs, bd, nb, err)) ||
                   (rs != &c->spec && (st = fam_spec_set_param(&c->spec, bd, nb, err)))))
            goto out;
        c->ref_by_batch = 1;
    } else if (t->has_seed) {
        int d = nx_dist_from_name(t->dist);
        if (d < 0) {
            st = nx_err_set(err, NX_EINVAL, "%s: metadata 'dist': unknown distribution '%s'", t->path, t->dist);
            goto out;
        }
        ref_gen_opts go = {t->seed, (nx_dist)d, 0, 0};
        if ((st = ref_generate(rs, &go, &in, err)))
            goto out;
    }
    ref_opts ro = {0, (nx_engine_kind)engine};
    st_init(&c->ref);
    if ((st = ref_run_opts(rs, &in, &c->ref, &ro, err))) {
        nx_err_prefix(err, "%s", t->path);
        goto out;
    }
    if ((st = check_outputs(c, rs->family, err)))
        goto out;
    char why[1024] = "";
    int same_point = c->spec.hash && rs->hash && strcmp(c->spec.hash, rs->hash) == 0;
    if (!same_point)
        points_differ(reg, t, c->id, ref_point, ref_class, shape, why, sizeof why);
    size_t budget = SIZE_MAX;
    t2_case tc = {.name = t->path, .dev = &c->spec, .ref = rs, .differs = why, .negative = t->negative_control,
                  .in = &in, .got = &t->file, .want = &c->ref, .rows = t->rows,
                  .ref_rows = c->ref_by_batch ? NULL : t->rows, .threads = 0, .diff_budget = &budget};
    if ((st = t2_judge(&tc, &c->r, err))) {
        /* a trace whose output is not the family's is bad input here */
        if (st == NX_EDEVICE) {
            st = NX_EINVAL;
            if (err)
                err->code = NX_EINVAL;
        }
        goto out;
    }
    c->t2.verdict = c->r.pass ? CV_PASS : CV_FAIL;
    snprintf(c->t2.detail, sizeof c->t2.detail, "%s", c->r.detail);
out:
    st_free(&in);
    fam_spec_free(&refspec);
    return st;
}

nx_status tc_npy_trace(const tc_npy_opts *o, trace *t, nx_err *err)
{
    if (!o->point || !o->cls || !o->shape || !o->seed)
        return nx_err_set(err, NX_EINVAL, "--npy %s needs --point, --class, --shape and --seed (the inputs' seed)",
                          o->path);
    char fam[128];
    snprintf(fam, sizeof fam, "%s", o->point);
    char *dot = strchr(fam, '.');
    if (!dot)
        return nx_err_set(err, NX_EINVAL, "--point: '%s' is not FAMILY.POINT", o->point);
    *dot = 0;
    npy_array a;
    npy_init(&a);
    nx_status st = npy_read(o->path, o->dtype, &a, err);
    if (st)
        return st;
    st_file f;
    st_init(&f);
    st_tensor *x;
    char created[32], batch[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(batch, sizeof batch, "rows=0..%lld", a.t.ndim ? (long long)a.t.shape[0] - 1 : 0LL);
    if ((st = st_add_tensor(&f, o->name ? o->name : "y", a.t.dtype, a.t.ndim, a.t.shape, &x, err)) == NX_OK) {
        memcpy(x->data, a.t.data, (size_t)a.t.nbytes);
        const char *kv[][2] = {{"parity.trace", "1"}, {"family", fam}, {"point", dot + 1}, {"class", o->cls},
                               {"kernel", o->kernel ? o->kernel : "unknown"}, {"device", "{}"}, {"shape", o->shape},
                               {"seed", o->seed}, {"dist", o->dist ? o->dist : "normal"},
                               {"mode", o->mode ? o->mode : "graphed"}, {"run", "0"},
                               {"batch", o->batch ? o->batch : batch}, {"created", created},
                               {"producer", "parity check --npy"}};
        for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !st; i++)
            st = st_add_meta(&f, kv[i][0], kv[i][1], err);
    }
    npy_free(&a);
    if (st) {
        st_free(&f);
        return st;
    }
    return trace_from_st(o->path, &f, t, err);
}

/* A .npy's metadata came from the options of the same names: an error about
 * one (the validator's or the reference's) is prefixed with its option. */
void tc_npy_name_option(nx_err *err)
{
    static const char *const keys[] = {"seed", "dist", "mode", "batch", "kernel", "shape", "class", "point"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char k1[32], k2[32];
        snprintf(k1, sizeof k1, "key '%s'", keys[i]);
        snprintf(k2, sizeof k2, "metadata '%s'", keys[i]);
        if (strstr(err->msg, k1) || strstr(err->msg, k2)) {
            nx_err_prefix(err, "--%s", keys[i]);
            return;
        }
    }
    if (strstr(err->msg, "metadata 'family'/'point'/'class'"))
        nx_err_prefix(err, "--point/--class");
}

static int same_shape(const trace *a, const trace *b)
{
    int same = a->nshape == b->nshape;
    for (size_t d = 0; same && d < a->nshape; d++) {
        int64_t v;
        same = trace_shape_dim(b, a->shape[d].name, &v) && v == a->shape[d].value;
    }
    return same;
}

static void shape_text(const trace *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < t->nshape && k + 64 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s=%lld", i ? "," : "", t->shape[i].name,
                              (long long)t->shape[i].value);
}

/* Whether two traces' runs saw the same inputs: the same seed and
 * distribution, and the same input tensors where both hold them.  Says how
 * they differ into buf, "" when they do not. */
static void inputs_differ(const trace *a, const trace *b, char *buf, size_t len)
{
    buf[0] = 0;
    if (a->has_seed != b->has_seed || (a->has_seed && (a->seed != b->seed || strcmp(a->dist, b->dist)))) {
        snprintf(buf, len, "%s: seed %llu, %s; %s: seed %llu, %s", a->path, (unsigned long long)a->seed,
                 a->has_seed ? a->dist : "none", b->path, (unsigned long long)b->seed, b->has_seed ? b->dist : "none");
        return;
    }
    if (!a->ninputs && !b->ninputs)
        return;
    if (strcmp(a->batch, b->batch) != 0 || a->ninputs != b->ninputs) {
        snprintf(buf, len, "their input tensors cannot be matched (other batches or other tensors)");
        return;
    }
    for (size_t i = 0; i < a->file.ntensors; i++) {
        const st_tensor *x = &a->file.tensors[i];
        if (!trace_tensor_is_input(x))
            continue;
        const st_tensor *y = st_find(&b->file, x->name);
        if (!y || y->nbytes != x->nbytes || memcmp(x->data, y->data, (size_t)x->nbytes) != 0) {
            snprintf(buf, len, "input tensor '%s' differs", x->name);
            return;
        }
    }
}

/* Judges traces i and j as the Tier 1 check their difference names; adds
 * the pair to *out when they share rows. */
static nx_status tier1_pair(const tc_trace *cs, size_t i, size_t j, tc_pair **out, size_t *nout, size_t *cap,
                            nx_err *err)
{
    const trace *a = &cs[i].t, *b = &cs[j].t;
    int ck = strcmp(a->kernel, b->kernel) ? CK_NEW_LEGACY
             : a->mode != b->mode         ? CK_EAGER_GRAPHED
             : strcmp(a->batch, b->batch) ? CK_ROWS
                                          : CK_DETERMINISM;
    /* a pair that differs in more than one respect mixes two checks:
     * compared for ordinary kernels, but a negative control's difference
     * could not be told apart, so such a pair is left out */
    int aspects = !!strcmp(a->kernel, b->kernel) + (a->mode != b->mode) + !!strcmp(a->batch, b->batch);
    if (aspects > 1 && (a->negative_control || b->negative_control))
        return NX_OK;
    vd_diff d;
    camp_diff_runs(&a->file, a->rows, a->nrows, &b->file, b->rows, b->nrows, &d);
    if (d.rows == 0)
        return NX_OK;
    if (*nout == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        tc_pair *p = realloc(*out, nc * sizeof *p);
        if (!p)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        *out = p;
        *cap = nc;
    }
    tc_pair *p = &(*out)[(*nout)++];
    memset(p, 0, sizeof *p);
    const char *name = camp_check_name(ck);
    p->check = ck;
    p->a = i;
    p->b = j;
    p->negative = (a->negative_control && vd_in_list(a->expected_fail, name)) ||
                  (b->negative_control && vd_in_list(b->expected_fail, name));
    p->shared_rows = d.rows;
    char what[600];
    camp_tier1_what(ck, a->batch, b->batch, what, sizeof what);
    vd_evidence ev = {.kind = VD_TIER1, .negative = p->negative, .what = what, .diff = &d};
    p->pass = vd_judge(&ev, p->detail, sizeof p->detail);
    return NX_OK;
}

/* The same point, class and shape: traces Tier 1 compares at all. */
static int same_group(const tc_trace *x, const tc_trace *y)
{
    return !strcmp(x->id, y->id) && !strcmp(x->t.class_name, y->t.class_name) && same_shape(&x->t, &y->t);
}

/* The same run configuration as well (kernel, mode, batch): traces whose
 * bits must be equal by determinism. */
static int same_config(const tc_trace *x, const tc_trace *y)
{
    return same_group(x, y) && !strcmp(x->t.kernel, y->t.kernel) && x->t.mode == y->t.mode &&
           !strcmp(x->t.batch, y->t.batch);
}

/* Linear in the traces, not quadratic: bit equality is transitive, so each
 * trace is compared with the first trace of its configuration (determinism)
 * and those first traces with each other (the other checks).  N runs of
 * one point are N - 1 comparisons; a trace that differs is named against
 * the first. */
nx_status tc_tier1(const tc_trace *cs, size_t n, tc_pair **out, size_t *nout, nx_err *err)
{
    *out = NULL;
    *nout = 0;
    size_t cap = 0, nreps = 0;
    size_t *reps = malloc((n ? n : 1) * sizeof *reps);
    if (!reps)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = NX_OK;
    for (size_t i = 0; i < n && !st; i++) {
        size_t r = 0;
        while (r < nreps && !same_config(&cs[reps[r]], &cs[i]))
            r++;
        if (r < nreps)
            st = tier1_pair(cs, reps[r], i, out, nout, &cap, err);
        else
            reps[nreps++] = i;
    }
    for (size_t x = 0; x < nreps && !st; x++)
        for (size_t y = x + 1; y < nreps && !st; y++)
            if (same_group(&cs[reps[x]], &cs[reps[y]]))
                st = tier1_pair(cs, reps[x], reps[y], out, nout, &cap, err);
    free(reps);
    return st;
}

nx_status tc_cross_class(const reg_registry *reg, const tc_trace *cs, size_t n, tc_cross **out, size_t *nout,
                         nx_err *err)
{
    *out = NULL;
    *nout = 0;
    size_t cap = 0;
    /* the (point, shape, class pair) keys compared already: grows with the
     * comparisons made, never n * n */
    size_t dcap = 16;
    char **done = malloc(dcap * sizeof *done);
    size_t ndone = 0;
    nx_status st = done ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
    for (int pass = 0; pass < 2 && !st; pass++)
        for (size_t i = 0; i < n && !st; i++)
            for (size_t j = i + 1; j < n && !st; j++) {
                const trace *a = &cs[i].t, *b = &cs[j].t;
                if (strcmp(cs[i].id, cs[j].id) || !strcmp(a->class_name, b->class_name) || !same_shape(a, b))
                    continue;
                if (pass == 0 && (strcmp(a->batch, b->batch) || a->mode != b->mode))
                    continue;
                char key[1024], shape[512];
                shape_text(a, shape, sizeof shape);
                int lo = strcmp(a->class_name, b->class_name) < 0;
                snprintf(key, sizeof key, "%s|%s|%s|%s", cs[i].id, shape, lo ? a->class_name : b->class_name,
                         lo ? b->class_name : a->class_name);
                int seen = 0;
                for (size_t k = 0; k < ndone && !seen; k++)
                    seen = !strcmp(done[k], key);
                if (seen)
                    continue;
                char idiff[600] = "";
                inputs_differ(a, b, idiff, sizeof idiff);
                if (!*idiff) {
                    vd_diff d;
                    camp_diff_runs(&a->file, a->rows, a->nrows, &b->file, b->rows, b->nrows, &d);
                    if (d.rows == 0)
                        continue;
                }
                camp_check x = {0};
                if ((st = camp_cross_class(reg, a->class_name, b->class_name, cs[i].id, shape, &a->file, a->rows,
                                           a->nrows, &b->file, b->rows, b->nrows, *idiff ? idiff : NULL, &x, err)))
                    break;
                if (*nout == cap) {
                    size_t nc = cap ? 2 * cap : 8;
                    tc_cross *p = realloc(*out, nc * sizeof *p);
                    if (!p) {
                        st = nx_err_set(err, NX_ENOMEM, "out of memory");
                        break;
                    }
                    *out = p;
                    cap = nc;
                }
                if (ndone == dcap) {
                    char **nd = realloc(done, 2 * dcap * sizeof *nd);
                    if (!nd) {
                        st = nx_err_set(err, NX_ENOMEM, "out of memory");
                        break;
                    }
                    done = nd;
                    dcap *= 2;
                }
                if (!(done[ndone] = strdup(key))) {
                    st = nx_err_set(err, NX_ENOMEM, "out of memory");
                    break;
                }
                ndone++;
                (*out)[(*nout)++] = (tc_cross){i, j, x};
            }
    for (size_t k = 0; k < ndone; k++)
        free(done[k]);
    free(done);
    return st;
}

/* A detail with where it came from, cut to the buffer. */
static void put_detail(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* The main trace of a point: the most rows, then graphed, then run 0. */
static int better_main(const trace *a, const trace *b)
{
    if (a->nrows != b->nrows)
        return a->nrows > b->nrows;
    if (a->mode != b->mode)
        return a->mode == TRACE_GRAPHED;
    return a->run < b->run;
}

nx_status tc_points(const tc_trace *cs, size_t n, const tc_pair *pairs, size_t npairs, camp_result **out,
                    size_t **mainp, size_t *nout, nx_err *err)
{
    static const char *const differ[] = {"run index", "mode", "kernel", "batch layout"};
    *out = NULL;
    *mainp = NULL;
    *nout = 0;
    camp_result *res = calloc(n ? n : 1, sizeof *res);
    size_t *mains = calloc(n ? n : 1, sizeof *mains);
    size_t *of = calloc(n ? n : 1, sizeof *of); /* trace i belongs to result of[i] */
    if (!res || !mains || !of) {
        free(res);
        free(mains);
        free(of);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < np && strcmp(res[k].id, cs[i].id) != 0)
            k++;
        of[i] = k;
        if (k == np) {
            snprintf(res[np].id, sizeof res[np].id, "%s", cs[i].id);
            mains[np++] = i;
        } else if (better_main(&cs[i].t, &cs[mains[k]].t)) {
            mains[k] = i;
        }
    }
    for (size_t k = 0; k < np; k++) {
        camp_result *r = &res[k];
        const tc_trace *m = &cs[mains[k]];
        snprintf(r->class_name, sizeof r->class_name, "%s", m->t.class_name);
        shape_text(&m->t, r->shape, sizeof r->shape);
        snprintf(r->hash, sizeof r->hash, "%s", m->spec.hash ? m->spec.hash : "");
        snprintf(r->kernel, sizeof r->kernel, "%s", m->t.kernel);
        const char *ctl = fam_param_get(&m->spec, "negative_control");
        for (int c = 0; c < CK_COUNT; c++) {
            r->checks[c].verdict = CV_SKIP;
            r->checks[c].negative = c <= CK_ROWS && ctl && vd_in_list(ctl, camp_check_name(c));
        }
        snprintf(r->checks[CK_PARITY].detail, sizeof r->checks[CK_PARITY].detail, "skipped: no --against class");
        /* Tier 2 over the point's traces */
        const tc_trace *decide = m;
        int fail = 0, bits = 1;
        uint64_t max_ulp = 0;
        size_t differ_n = 0;
        for (size_t i = 0; i < n; i++) {
            if (of[i] != k)
                continue;
            const tc_trace *c = &cs[i];
            if (c->t2.verdict == CV_FAIL && !fail) {
                fail = 1;
                decide = c;
            }
            bits &= c->r.bit_exact != 0;
            if (c->r.cmp.max_ulp > max_ulp)
                max_ulp = c->r.cmp.max_ulp;
            differ_n += c->r.cmp.bits_differ;
            if (strcmp(c->t.kernel, r->kernel) != 0 && !r->legacy[0])
                snprintf(r->legacy, sizeof r->legacy, "%s", c->t.kernel);
            for (int ck = CK_DETERMINISM; ck <= CK_ROWS && c->t.negative_control; ck++)
                r->checks[ck].negative |= vd_in_list(c->t.expected_fail, camp_check_name(ck));
        }
        r->checks[CK_TIER2].verdict = fail ? CV_FAIL : CV_PASS;
        r->checks[CK_TIER2].negative = m->t.negative_control;
        put_detail(r->checks[CK_TIER2].detail, sizeof r->checks[CK_TIER2].detail, "%s (%s)", decide->t2.detail,
                 decide->t.path);
        r->t2 = decide->r.cmp;
        r->t2.max_ulp = max_ulp;
        r->t2.bits_differ = differ_n;
        r->bit_exact = bits && !fail;
        /* Tier 1 from the pairs of the point's traces */
        for (size_t q = 0; q < npairs; q++) {
            const tc_pair *p = &pairs[q];
            if (of[p->a] != k || p->check < CK_DETERMINISM || p->check > CK_ROWS)
                continue;
            camp_check *ck = &r->checks[p->check];
            ck->negative |= p->negative;
            if (ck->verdict == CV_FAIL || (ck->verdict == CV_PASS && p->pass))
                continue;
            ck->verdict = p->pass ? CV_PASS : CV_FAIL;
            put_detail(ck->detail, sizeof ck->detail, "%s (%s vs %s)", p->detail, cs[p->a].t.path, cs[p->b].t.path);
        }
        for (int c = CK_DETERMINISM; c <= CK_ROWS; c++)
            if (r->checks[c].verdict == CV_SKIP)
                snprintf(r->checks[c].detail, sizeof r->checks[c].detail,
                         "skipped: no two traces of the point differ only in %s", differ[c - CK_DETERMINISM]);
    }
    free(of);
    *out = res;
    *mainp = mains;
    *nout = np;
    return NX_OK;
}
