/* campaign.c: one family point through the three steps of the harness:
 * inputs (Philox, seeded), the class backend (repeats, eager and graphed,
 * the legacy kernel, batch variants), the reference (refimpl over
 * numerics/), and the Tier 1 / Tier 2 verdicts. */
#include "campaign.h"
#include "ext_backend.h"
#include "famdesc.h"
#include "refimpl.h"
#include "rows.h"
#include "trace.h"
#include "power.h"
#include "tier2.h"
#include "tolerance.h"
#include "nx_sbuf.h"
#include "nx_sha256.h"

#include <jansson.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const check_names[CK_COUNT] = {"determinism", "eager_graphed", "new_legacy", "rows",
                                                  "tier2",       "parity"};

const char *camp_check_name(int ck)
{
    return ck >= 0 && ck < CK_COUNT ? check_names[ck] : "?";
}

const dev_backend *camp_class_backend(const reg_registry *reg, const char *cls)
{
    reg_backend rb;
    if (reg_class_backend(reg, cls, &rb)) {
        if (rb.builtin)
            return strcmp(rb.builtin, "cpu") == 0 ? dev_cpu_backend() : dev_cuda_backend();
        ext_spec es = {rb.serve ? EXT_SERVE : EXT_DLOPEN, rb.serve ? rb.serve : rb.dlopen, rb.dir, rb.cls,
                       rb.timeout_s, rb.in_process};
        const dev_backend *b = NULL;
        return ext_open(&es, &b, NULL) == NX_OK ? b : NULL;
    }
    const char *c = cls;
    for (size_t depth = 0; c && depth <= reg_class_count(reg); depth++) {
        if (strcmp(c, "cpu") == 0)
            return dev_cpu_backend();
        const char *p = reg_class_parent(reg, c);
        if (!p)
            break;
        c = p;
    }
    return strncmp(c ? c : "", "sm", 2) == 0 ? dev_cuda_backend() : NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void camp_default_tolerance(nx_fmt f, cmp_options *o, char *what, size_t len)
{
    vd_default_tolerance(f, o, what, len);
}

void camp_compare_summary(const char *text, char *out, size_t len)
{
    size_t k = 0;
    int in = 0;
    out[0] = 0;
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        const char *q = p;
        while (l && *q == ' ')
            q++, l--;
        if (l >= 12 && strncmp(q, "differences:", 12) == 0)
            in = 1;
        else if (l >= 10 && strncmp(q, "tolerance:", 10) == 0)
            in = 0;
        else if (in && l && k + l + 3 < len) /* "reduction k: tree: ...; split count: 4 vs 8" */
            k += (size_t)snprintf(out + k, len - k, "%s%.*s", !k ? "" : out[k - 1] == ':' ? " " : "; ", (int)l, q);
        p = e ? e + 1 : NULL;
    }
}

void camp_cache_free(camp_cache *c)
{
    if (!c)
        return;
    free(c->key);
    c->key = NULL;
    st_free(&c->in);
}

/* What determines the generated inputs: the seed, the distribution and each
 * tensor's description (name, dtype, shape, ranges).  malloc'd. */
static char *inputs_key(const fam_spec *spec, const camp_opts *o, nx_err *err)
{
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    if (ref_inputs(spec, &d, &nd, err))
        return NULL;
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s seed=%llu dist=%d", spec->family, o->seed, o->dist);
    for (size_t i = 0; i < nd; i++) {
        nx_sbuf_printf(&b, ";%s k%d t%d f%d [", d[i].name, (int)d[i].kind, (int)d[i].dtype, d[i].fmt);
        for (int k = 0; k < d[i].ndim; k++)
            nx_sbuf_printf(&b, "%lld,", (long long)d[i].shape[k]);
        nx_sbuf_printf(&b, "] %ld %ld %ld", d[i].lo, d[i].hi, d[i].int_max);
    }
    free(d);
    char *s = nx_sbuf_take(&b);
    if (!s)
        nx_err_set(err, NX_ENOMEM, "out of memory");
    return s;
}

/* Generates spec's inputs into *in, or borrows the cache's when they are the
 * same tensors; *use says which file to read (the cache's is not freed here). */
static nx_status get_inputs(const fam_spec *spec, const camp_opts *o, st_file *in, const st_file **use,
                            nx_err *err)
{
    ref_gen_opts go = {o->seed, (nx_dist)o->dist, 0, o->threads};
    if (!o->cache) {
        *use = in;
        return ref_generate(spec, &go, in, err);
    }
    char *key = inputs_key(spec, o, err);
    if (!key)
        return err ? err->code : NX_ENOMEM;
    if (!o->cache->key || strcmp(o->cache->key, key) != 0) {
        camp_cache_free(o->cache);
        st_init(&o->cache->in);
        nx_status st = ref_generate(spec, &go, &o->cache->in, err);
        if (st) {
            free(key);
            camp_cache_free(o->cache);
            return st;
        }
        o->cache->key = key;
    } else {
        free(key);
    }
    *use = &o->cache->in;
    return NX_OK;
}

void camp_result_free(camp_result *res)
{
    free(res->t2_text);
    res->t2_text = NULL;
    free(res->t2_diff);
    res->t2_diff = NULL;
    res->t2_ndiff = 0;
}

int camp_result_failed(const camp_result *res)
{
    for (int i = 0; i < CK_COUNT; i++)
        if (res->checks[i].verdict == CV_FAIL)
            return 1;
    return 0;
}

__attribute__((format(printf, 3, 4)))
static void set_check(camp_result *r, int ck, const char *fmt, ...);

static void set_check(camp_result *r, int ck, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->checks[ck].detail, sizeof r->checks[ck].detail, fmt, ap);
    va_end(ap);
}

/* A Tier 1 check's outcome from the evidence of two runs, in the judge's
 * words (verdict.h): a negative control must disagree. */
static void judge(camp_result *r, int ck, const vd_diff *d, const char *what)
{
    camp_check *c = &r->checks[ck];
    vd_evidence e = {.kind = VD_TIER1, .negative = c->negative, .what = what, .diff = d};
    c->verdict = vd_judge(&e, c->detail, sizeof c->detail) ? CV_PASS : CV_FAIL;
}

nx_status camp_cross_class(const reg_registry *reg, const char *class_a, const char *class_b, const char *id,
                           const char *shape, const st_file *a, const int64_t *arows, size_t an, const st_file *b,
                           const int64_t *brows, size_t bn, const char *inputs_differ, camp_check *out, nx_err *err)
{
    char pa[200], pb[200], declared[1024] = "";
    snprintf(pa, sizeof pa, "%s:%s", class_a, id);
    snprintf(pb, sizeof pb, "%s:%s", class_b, id);
    char *text = NULL;
    int parity = 0;
    nx_status st = reg_compare(reg, pa, pb, shape, &text, &parity, err);
    if (st)
        return st;
    if (!parity) {
        char sum[900];
        camp_compare_summary(text, sum, sizeof sum);
        if (*sum)
            snprintf(declared, sizeof declared, "the points differ: %s", sum);
        /* no difference listed: the same point, but one with `atomic` */
        const char *m = text ? strstr(text, "bits may differ: ") : NULL;
        if (!*declared && m) {
            m += strlen("bits may differ: ");
            size_t l = strcspn(m, "\n");
            snprintf(declared, sizeof declared, "%.*s", (int)l, m);
        }
    }
    free(text);
    vd_diff d;
    memset(&d, 0, sizeof d);
    if (!inputs_differ)
        camp_diff_runs(a, arows, an, b, brows, bn, &d);
    vd_evidence e = {.kind = VD_PARITY, .diff = &d, .class_a = class_a, .class_b = class_b, .point = id,
                     .parity_expected = parity, .declared = declared, .inputs_differ = inputs_differ};
    int v = vd_judge(&e, out->detail, sizeof out->detail);
    out->verdict = v > 0 ? CV_PASS : v == 0 ? CV_FAIL : CV_SKIP;
    out->negative = 0;
    return NX_OK;
}

void camp_tier1_what(int ck, const char *batch_a, const char *batch_b, char *buf, size_t len)
{
    switch (ck) {
    case CK_DETERMINISM: snprintf(buf, len, "repeated runs"); break;
    case CK_EAGER_GRAPHED: snprintf(buf, len, "eager and graphed runs"); break;
    case CK_NEW_LEGACY: snprintf(buf, len, "the new and the legacy kernel"); break;
    case CK_ROWS: snprintf(buf, len, "batch %s and batch %s", batch_a ? batch_a : "?", batch_b ? batch_b : "?"); break;
    default: snprintf(buf, len, "%s", camp_check_name(ck)); break;
    }
}

void camp_expected_fail(const fam_spec *spec, char *buf, size_t len)
{
    const char *v = fam_param_get(spec, "negative_control");
    size_t k = 0;
    buf[0] = 0;
    for (int c = CK_DETERMINISM; c <= CK_ROWS && v; c++)
        if (vd_in_list(v, check_names[c]) && k + strlen(check_names[c]) + 2 < len)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? "," : "", check_names[c]);
}

size_t camp_row_bytes(const st_tensor *t)
{
    if (t->ndim == 0 || t->shape[0] == 0)
        return 0;
    return (size_t)(t->nbytes / (uint64_t)t->shape[0]);
}

/* First dimension name of a "[M, K]" dims string. */
static int first_dim_is(const char *dims, const char *name)
{
    size_t n = strlen(name);
    return dims[0] == '[' && strncmp(dims + 1, name, n) == 0 && (dims[1 + n] == ',' || dims[1 + n] == ']');
}

static nx_status copy_rows(st_file *out, const st_tensor *t, int sliced, const int64_t *rows, size_t n,
                           nx_err *err)
{
    int64_t shape[ST_MAX_NDIM];
    memcpy(shape, t->shape, sizeof shape);
    if (sliced)
        shape[0] = (int64_t)n;
    st_tensor *o;
    nx_status st = st_add_tensor(out, t->name, t->dtype, t->ndim, shape, &o, err);
    if (st)
        return st;
    if (!sliced) {
        memcpy(o->data, t->data, (size_t)t->nbytes);
        return NX_OK;
    }
    size_t rb = camp_row_bytes(t);
    if ((uint64_t)rb * (uint64_t)t->shape[0] != t->nbytes || (st_dtype_bits(t->dtype) % 8) != 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "tensor '%s': rows of a packed dtype cannot be sliced", t->name);
    for (size_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= t->shape[0])
            return nx_err_set(err, NX_EINVAL, "tensor '%s': row %lld out of range [0, %lld)", t->name,
                              (long long)rows[i], (long long)t->shape[0]);
        memcpy(o->data + i * rb, t->data + (size_t)rows[i] * rb, rb);
    }
    return NX_OK;
}

nx_status camp_slice_inputs(const fam_spec *spec, const st_file *in, const int64_t *rows, size_t n, st_file *out,
                            nx_err *err)
{
    const char *bd = fam_batch_dim(spec->family);
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    nx_status st = ref_inputs(spec, &d, &nd, err);
    if (st)
        return st;
    for (size_t i = 0; i < in->ntensors && !st; i++) {
        const st_tensor *t = &in->tensors[i];
        int sliced = 0;
        for (size_t k = 0; k < nd; k++)
            if (strcmp(d[k].name, t->name) == 0 && bd && first_dim_is(d[k].dims, bd))
                sliced = 1;
        st = copy_rows(out, t, sliced, rows, n, err);
    }
    free(d);
    return st;
}

/* Logical row -> batch position of a run (-1: the run does not hold it),
 * through a table when the rows are small numbers, else NULL (search). */
static int64_t *row_index(const int64_t *rows, size_t n, int64_t *span)
{
    int64_t mx = -1;
    for (size_t i = 0; i < n; i++)
        if (rows[i] > mx)
            mx = rows[i];
    *span = mx + 1;
    if (mx < 0 || mx > (int64_t)(1u << 22))
        return NULL;
    int64_t *ix = malloc((size_t)(mx + 1) * sizeof *ix);
    if (!ix)
        return NULL;
    for (int64_t i = 0; i <= mx; i++)
        ix[i] = -1;
    for (size_t i = 0; i < n; i++)
        ix[rows[i]] = (int64_t)i;
    return ix;
}

void camp_diff_runs(const st_file *a, const int64_t *arows, size_t an, const st_file *b, const int64_t *brows,
                    size_t bn, vd_diff *d)
{
    memset(d, 0, sizeof *d);
    d->same = 1;
    int64_t *ida = NULL, *idb = NULL;
    if (!arows || !brows) { /* a whole batch in order on that side */
        for (size_t i = 0; i < a->ntensors && !arows; i++)
            if (!trace_tensor_is_input(&a->tensors[i]) && a->tensors[i].ndim > 0) {
                an = (size_t)a->tensors[i].shape[0];
                break;
            }
        for (size_t i = 0; i < b->ntensors && !brows; i++)
            if (!trace_tensor_is_input(&b->tensors[i]) && b->tensors[i].ndim > 0) {
                bn = (size_t)b->tensors[i].shape[0];
                break;
            }
        ida = malloc((an ? an : 1) * sizeof *ida);
        idb = malloc((bn ? bn : 1) * sizeof *idb);
        if (!ida || !idb) {
            free(ida);
            free(idb);
            d->same = 0;
            snprintf(d->first_at, sizeof d->first_at, "(out of memory)");
            return;
        }
        for (size_t i = 0; i < an; i++)
            ida[i] = (int64_t)i;
        for (size_t i = 0; i < bn; i++)
            idb[i] = (int64_t)i;
        arows = arows ? arows : ida;
        brows = brows ? brows : idb;
    }
    int64_t span;
    int64_t *bpos = row_index(brows, bn, &span);
    /* pairs[k] = (batch row of a, batch row of b) of each shared logical row, in a's order */
    size_t *pa = malloc((an ? an : 1) * sizeof *pa), *pb = malloc((an ? an : 1) * sizeof *pb), np = 0;
    for (size_t i = 0; pa && pb && i < an; i++) {
        int64_t j = -1;
        if (bpos)
            j = arows[i] >= 0 && arows[i] < span ? bpos[arows[i]] : -1;
        else
            for (size_t k = 0; k < bn && j < 0; k++)
                if (brows[k] == arows[i])
                    j = (int64_t)k;
        if (j >= 0) {
            pa[np] = i;
            pb[np++] = (size_t)j;
        }
    }
    d->rows = np;
    for (size_t t = 0; t < a->ntensors && d->same && pa && pb; t++) {
        const st_tensor *x = &a->tensors[t];
        if (trace_tensor_is_input(x) || x->ndim == 0)
            continue;
        const st_tensor *y = st_find(b, x->name);
        int ok = y && y->dtype == x->dtype && y->ndim == x->ndim;
        for (int k = 1; ok && k < x->ndim; k++)
            ok = y->shape[k] == x->shape[k];
        size_t per = x->shape[0] ? (size_t)(x->nelem / (uint64_t)x->shape[0]) : 0;
        if (!ok) {
            d->same = 0;
            snprintf(d->output, sizeof d->output, "%s", x->name);
            d->differ = d->compared = np * per;
            snprintf(d->first_at, sizeof d->first_at, "every element (the other run's '%s' is missing or has another "
                     "dtype or row shape)", x->name);
            break;
        }
        size_t differ = 0, first = SIZE_MAX, first_row = 0;
        uint64_t fa = 0, fb = 0;
        for (size_t k = 0; k < np; k++)
            for (size_t c = 0; c < per; c++) {
                uint64_t u = st_get_bits(x, x->data, pa[k] * per + c), v = st_get_bits(y, y->data, pb[k] * per + c);
                if (u != v) {
                    if (!differ++) {
                        first = pa[k] * per + c;
                        first_row = (size_t)arows[pa[k]];
                        fa = u;
                        fb = v;
                    }
                }
            }
        d->compared += np * per;
        if (differ) {
            d->same = 0;
            d->differ = differ;
            d->compared = np * per;
            snprintf(d->output, sizeof d->output, "%s", x->name);
            char idx[96];
            cmp_format_index(idx, sizeof idx, first, x->ndim, x->shape, CMP_INDEX_BRACKETS);
            int hex = (st_dtype_bits(x->dtype) + 3) / 4;
            snprintf(d->first_at, sizeof d->first_at, "%s (logical row %zu; 0x%0*llx vs 0x%0*llx)", idx, first_row, hex,
                     (unsigned long long)fa, hex, (unsigned long long)fb);
        }
    }
    free(pa);
    free(pb);
    free(bpos);
    free(ida);
    free(idb);
}

static nx_status run_backend(const camp_opts *o, const fam_spec *spec, const st_file *in, dev_mode mode,
                             const char *kernel, st_file *out, camp_result *res, nx_err *err)
{
    dev_opts d = {mode, o->threads, kernel};
    double t0 = now();
    st_init(out);
    nx_status st = dev_run(o->backend, spec, in, out, &d, err);
    res->t_run += now() - t0;
    return st;
}

/* A trace's device object holds scalar members only (docs/traces.md): a
 * backend's description may carry lists, which are left out here. */
static void scalar_members(char *dev, size_t len)
{
    json_t *j = json_loads(dev, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(dev, len, "{}");
        return;
    }
    const char *k;
    json_t *v, *out = json_object();
    json_object_foreach(j, k, v) {
        if (json_is_string(v) || json_is_integer(v) || json_is_boolean(v))
            json_object_set(out, k, v);
    }
    char *s = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    snprintf(dev, len, "%s", s && strlen(s) < len ? s : "{}");
    free(s);
    json_decref(out);
    json_decref(j);
}

/* Writes a trace of one run when a traces directory was given. */
static nx_status save_trace(const camp_opts *o, const fam_spec *spec, const camp_result *res, const st_file *out,
                            const char *tag, dev_mode mode, unsigned run, const char *kernel, const char *batch,
                            nx_err *err)
{
    if (!o->traces)
        return NX_OK;
    char path[1024], dev[1024] = "{}";
    nx_err derr;
    if (dev_describe(o->backend, dev, sizeof dev, &derr) != NX_OK)
        snprintf(dev, sizeof dev, "{}");
    scalar_members(dev, sizeof dev);
    snprintf(path, sizeof path, "%s/%s.%s.%s.safetensors", o->traces, res->class_name, res->id, tag);
    trace_info ti = {0};
    ti.family = spec->family;
    ti.point = spec->point;
    ti.class_name = res->class_name;
    ti.kernel = kernel && *kernel ? kernel : (spec->kernel ? spec->kernel : "unknown");
    ti.device = dev;
    ti.shape = res->shape;
    ti.has_seed = true;
    ti.seed = o->seed;
    ti.dist = nx_dist_name((nx_dist)o->dist);
    ti.mode = mode == DEV_EAGER ? TRACE_EAGER : TRACE_GRAPHED;
    ti.run = run;
    ti.batch = batch;
    ti.producer = "parity campaign";
    /* a negative control says so, and which checks it is built to fail, so
     * that `parity check` judges its trace as the campaign judges the run */
    char expected[128];
    camp_expected_fail(spec, expected, sizeof expected);
    ti.negative_control = *expected != 0;
    ti.expected_fail = expected;
    return trace_write(path, &ti, out, err);
}

static void batch_string(char *buf, size_t len, const int64_t *rows, size_t n, int perm)
{
    size_t k = (size_t)snprintf(buf, len, perm ? "perm=" : "rows=");
    if (!perm && n > 0) {
        snprintf(buf + k, len - k, "%lld..%lld", (long long)rows[0], (long long)rows[n - 1]);
        return;
    }
    for (size_t i = 0; i < n && k + 24 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)rows[i]);
}

/* The Tier 1 row-invariance variants: the last row alone, the batch
 * reversed, the first half of the batch. */
static nx_status check_rows(const camp_opts *o, fam_spec *spec, const st_file *in, const st_file *full,
                            int64_t nrows, camp_result *res, nx_err *err)
{
    if (nrows < 2) {
        res->checks[CK_ROWS].verdict = CV_SKIP;
        set_check(res, CK_ROWS, "skipped: the batch has %lld row(s)", (long long)nrows);
        return NX_OK;
    }
    int64_t *rows = malloc((size_t)nrows * sizeof *rows);
    if (!rows)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    struct { const char *what; size_t n; int perm; } v[3] = {
        {"the last row alone", 1, 0}, {"the batch reversed", (size_t)nrows, 1}, {"the first half", (size_t)(nrows / 2), 0}};
    nx_status st = NX_OK;
    vd_diff d = {.same = 1};
    char what[1400] = "", full_b[64], all[512] = "";
    snprintf(full_b, sizeof full_b, "rows=0..%lld", (long long)nrows - 1);
    for (int k = 0; k < 3 && d.same && !st; k++) {
        for (size_t i = 0; i < v[k].n; i++)
            rows[i] = k == 0 ? nrows - 1 : k == 1 ? nrows - 1 - (int64_t)i : (int64_t)i;
        /* the same point at a smaller batch: only the batch dimension changes */
        char nb[32];
        snprintf(nb, sizeof nb, "%zu", v[k].n);
        st_file sin, sout;
        st_init(&sin);
        st_init(&sout);
        if ((st = camp_slice_inputs(spec, in, rows, v[k].n, &sin, err)) == NX_OK &&
            (st = fam_spec_set_param(spec, fam_batch_dim(spec->family), nb, err)) == NX_OK &&
            (st = run_backend(o, spec, &sin, DEV_GRAPHED, NULL, &sout, res, err)) == NX_OK) {
            char b[256];
            batch_string(b, sizeof b, rows, v[k].n, v[k].perm);
            camp_diff_runs(full, NULL, 0, &sout, rows, v[k].n, &d);
            camp_tier1_what(CK_ROWS, full_b, b, what, sizeof what);
            size_t l = strlen(all);
            snprintf(all + l, sizeof all - l, "%s%s", l ? ", " : "", b);
            if (!st)
                st = save_trace(o, spec, res, &sout, k == 0 ? "row-alone" : k == 1 ? "row-perm" : "row-half",
                                DEV_GRAPHED, 0, NULL, b, err);
        }
        st_free(&sin);
        st_free(&sout);
    }
    char full_n[32];
    snprintf(full_n, sizeof full_n, "%lld", (long long)nrows);
    nx_status st2 = fam_spec_set_param(spec, fam_batch_dim(spec->family), full_n, err);
    if (!st)
        st = st2;
    free(rows);
    if (st)
        return st;
    if (d.same) {
        char each[600];
        snprintf(each, sizeof each, "each of %s", all);
        camp_tier1_what(CK_ROWS, full_b, each, what, sizeof what);
    }
    judge(res, CK_ROWS, &d, what);
    return NX_OK;
}

/* Tier 2 over the main output (every family's `y`) through the one Tier 2
 * (tier2.h): the campaign's run holds its whole batch, so batch row =
 * logical row, and the device runs the spec itself. */
static nx_status tier2(const fam_spec *spec, const st_file *in, const st_file *dev, const st_file *ref, camp_result *res,
                       const camp_opts *o, nx_err *err)
{
    double t0 = now();
    int negative = 0;
    for (int c = 0; c < CK_COUNT; c++)
        negative |= res->checks[c].negative;
    t2_case tc = {.name = res->id, .dev = spec, .ref = spec, .negative = negative, .in = in, .got = dev, .want = ref,
                  .threads = o->threads, .diff_budget = o->diff_budget};
    t2_result tr;
    nx_status st = t2_judge(&tc, &tr, err);
    if (st)
        return st;
    snprintf(res->t2_output, sizeof res->t2_output, "%s", tr.output);
    res->t2 = tr.cmp;
    res->t2_text = tr.text;
    res->t2_diff = tr.diff;
    res->t2_ndiff = tr.ndiff;
    res->t2_diff_dropped = tr.diff_dropped;
    res->t2_cols = tr.cols;
    res->bit_exact = tr.bit_exact;
    camp_check *c = &res->checks[CK_TIER2];
    c->verdict = tr.pass ? CV_PASS : CV_FAIL;
    snprintf(c->detail, sizeof c->detail, "%s", tr.detail);
    res->t_cmp += now() - t0;
    return NX_OK;
}

/* CK_PARITY: the point's run on this class (mine, the graphed run 0)
 * against class o->against's, read from its trace or run here. */
static nx_status cross_class(const reg_registry *reg, const fam_spec *spec, const camp_opts *o, camp_result *res,
                             const st_file *mine, nx_err *err)
{
    camp_check *c = &res->checks[CK_PARITY];
    const char *cls = o->against;
    fam_spec ds;
    memset(&ds, 0, sizeof ds);
    st_file din, dout;
    st_init(&din);
    st_init(&dout);
    trace t;
    trace_init(&t);
    const st_file *theirs = &dout;
    const int64_t *trows = NULL;
    size_t tn = 0;
    char idiff[1600] = "", path[1200];
    nx_err e2 = {0};
    nx_status st = NX_OK;
    c->verdict = CV_SKIP;
    if (reg_resolve(reg, cls, res->id, res->shape, &ds, &e2) != NX_OK) {
        set_check(res, CK_PARITY, "skipped: class %s has no point %s (%s)", cls, res->id, e2.msg);
        goto out;
    }
    if (o->against_traces) {
        snprintf(path, sizeof path, "%s/%s.%s.graphed-0.safetensors", o->against_traces, cls, res->id);
        struct stat sb;
        if (stat(path, &sb) != 0) {
            set_check(res, CK_PARITY, "skipped: no trace of class %s for %s: %s does not exist", cls, res->id, path);
            goto out;
        }
        if ((st = trace_read(path, &t, err)))
            goto out;
        trace_expect want = {.family = spec->family, .point = spec->point, .class_name = cls, .shape = res->shape,
                             .batch_dim = fam_batch_dim(spec->family)};
        if ((st = trace_check(&t, &want, err)))
            goto out;
        const char *dist = nx_dist_name((nx_dist)o->dist);
        if (!t.has_seed || t.seed != o->seed || strcmp(t.dist, dist) != 0)
            snprintf(idiff, sizeof idiff, "%s was generated from seed %llu, %s; this campaign's from seed %llu, %s",
                     path, t.has_seed ? (unsigned long long)t.seed : 0ULL, t.has_seed ? t.dist : "(none)",
                     o->seed, dist);
        theirs = &t.file;
        trows = t.rows;
        tn = t.nrows;
    } else {
        if (!o->against_backend || !dev_supports(o->against_backend, &ds, ds.kernel)) {
            set_check(res, CK_PARITY, "skipped: class %s: the %s backend has no kernel '%s'", cls,
                      o->against_backend ? o->against_backend->name : "(no)", ds.kernel ? ds.kernel : "(none)");
            goto out;
        }
        char *ka = inputs_key(spec, o, err), *kb = ka ? inputs_key(&ds, o, err) : NULL;
        int same_inputs = ka && kb && strcmp(ka, kb) == 0;
        free(ka);
        free(kb);
        if (!same_inputs) {
            snprintf(idiff, sizeof idiff, "the two points read other input tensors (formats or shapes)");
        } else {
            const st_file *use = &din;
            dev_opts d = {DEV_GRAPHED, o->threads, NULL};
            double t0 = now();
            if ((st = get_inputs(&ds, o, &din, &use, err)) || (st = dev_run(o->against_backend, &ds, use, &dout, &d, err)))
                goto out;
            res->t_run += now() - t0;
        }
    }
    st = camp_cross_class(reg, res->class_name, cls, res->id, res->shape, mine, NULL, 0, theirs, trows, tn,
                          *idiff ? idiff : NULL, c, err);
    /* a declared difference the campaign's inputs hide (bf16 outputs): the
     * inputs that show one, run on both backends, so that the report says
     * where it shows, not only that it was declared */
    if (!st && !o->against_traces && c->verdict == CV_PASS && strstr(c->detail, "the bits agree nevertheless")) {
        char said[700];
        int shown = 0;
        double t0 = now();
        if ((st = pw_cross_show(o->backend, spec, o->against_backend, &ds, o->seed, o->threads, &shown, said,
                                sizeof said, err)))
            goto out;
        res->t_run += now() - t0;
        size_t l = strlen(c->detail);
        snprintf(c->detail + l, sizeof c->detail - l, "; outputs identical at these inputs, %s", said);
    }
out:
    trace_free(&t);
    st_free(&din);
    st_free(&dout);
    fam_spec_free(&ds);
    return st;
}

/* The power checks (power.h): a kernel that realises another point than
 * the declared one fails Tier 2, said with what it realises; a pass says
 * how much was tried and which neighbouring points the inputs could not
 * tell apart. */
static nx_status power(const camp_opts *o, const fam_spec *spec, camp_result *res, nx_err *err)
{
    pw_opts po;
    pw_opts_default(&po);
    po.seed = o->seed;
    po.engine = o->engine;
    pw_result pr;
    double t0 = now();
    nx_status st = pw_check_point(o->backend, spec, &po, &pr, err);
    res->t_power += now() - t0;
    if (st)
        return st;
    res->power_run = 1;
    res->power_verdict = (int)pr.verdict;
    res->power_dist = pr.ndist;
    res->power_equiv = pr.nequiv;
    res->power_unseen = pr.nunseen;
    snprintf(res->power_detail, sizeof res->power_detail, "%s", pr.detail);
    memcpy(res->power_space, pr.space, sizeof res->power_space);
    res->power_space[sizeof res->power_space - 1] = 0;
    size_t k = 0;
    for (size_t i = 0; i < pr.nneigh && k + 4 < sizeof res->power_unseen_names; i++)
        if (pr.neigh[i].seen == PW_UNSEEN)
            k += (size_t)snprintf(res->power_unseen_names + k, sizeof res->power_unseen_names - k, "%s%s",
                                  k ? "; " : "", pr.neigh[i].what);
    camp_check *c = &res->checks[CK_TIER2];
    if (pr.verdict == PW_FAIL) {
        char was[640];
        snprintf(was, sizeof was, "%.600s", c->detail);
        snprintf(c->detail, sizeof c->detail, "%s: power: %.1300s (on the campaign's own inputs: %s)", VD_FAIL,
                 pr.detail, was);
        c->verdict = CV_FAIL;
        res->bit_exact = 0;
    } else if (pr.verdict == PW_PASS && c->verdict == CV_PASS) {
        size_t l = strlen(c->detail);
        snprintf(c->detail + l, sizeof c->detail - l,
                 "; power: %zu run(s), %zu order-probe row(s) bit-exact; neighbouring points %zu distinguished, %zu "
                 "equivalent, %zu not distinguished%s%.400s",
                 pr.runs, pr.probe_rows, pr.ndist, pr.nequiv, pr.nunseen, pr.nunseen ? " (a warning): " : "",
                 pr.nunseen ? res->power_unseen_names : "");
    }
    pw_result_free(&pr);
    return NX_OK;
}

/* A negative control whose check saw no difference under the campaign's
 * inputs may only be unable to show one: --dist int sums exactly in any
 * order, so no reduction-order control can differ there.  Such a check is
 * run again on added rows that can show it (normal inputs, the same seed):
 * failing there as built, the control is "not exercised by these inputs",
 * a pass that says so; identical there too, it stays a failure. */
static nx_status exercise_controls(const reg_registry *reg, const char *class_name, const char *id, const char *shape,
                                   const camp_opts *o, camp_result *res, nx_err *err)
{
    int need = 0;
    for (int c = CK_DETERMINISM; c <= CK_ROWS; c++)
        need |= res->checks[c].negative && res->checks[c].verdict == CV_FAIL;
    if (!need || o->dist == NX_DIST_NORMAL)
        return NX_OK;
    camp_opts so = *o;
    so.dist = NX_DIST_NORMAL;
    so.traces = NULL;
    so.cache = NULL;
    so.against = NULL;
    so.diff_budget = NULL;
    camp_result *sub = malloc(sizeof *sub);
    if (!sub)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = camp_run_point(reg, class_name, id, shape, &so, sub, err);
    for (int c = CK_DETERMINISM; c <= CK_ROWS && !st; c++) {
        camp_check *k = &res->checks[c];
        if (!k->negative || k->verdict != CV_FAIL || sub->checks[c].verdict != CV_PASS)
            continue;
        /* "LABEL: WHAT: identical bit for bit, but ..." -> WHAT: identical bit for bit */
        const char *was = strchr(k->detail, ':'), *now = strchr(sub->checks[c].detail, ':');
        const char *same = was ? strstr(was, ": identical bit for bit") : NULL;
        int wl = was ? (same ? (int)(same - was) + (int)strlen(": identical bit for bit") : (int)strlen(was)) : 0;
        char buf[sizeof k->detail];
        snprintf(buf, sizeof buf, "%s: under --dist %s%.*s; on added rows of --dist normal inputs (seed %llu)%s",
                 VD_OK_NOT_EXERCISED, nx_dist_name((nx_dist)o->dist), wl, was ? was : "", o->seed, now ? now : "");
        memcpy(k->detail, buf, sizeof buf);
        k->verdict = CV_PASS;
    }
    res->t_gen += sub->t_gen;
    res->t_run += sub->t_run;
    res->t_ref += sub->t_ref;
    res->t_cmp += sub->t_cmp;
    camp_result_free(sub);
    free(sub);
    return st;
}

/* SHA-256 (hex) of the tensors of f that are outputs (all = 0: an "in."
 * tensor is an input, left out) or of every tensor (all = 1): each one's
 * name, dtype, shape and bytes. */
static void digest_tensors(const st_file *f, int all, char out[65])
{
    nx_sha256 h;
    nx_sha256_init(&h);
    for (size_t i = 0; i < f->ntensors; i++) {
        const st_tensor *t = &f->tensors[i];
        if (!all && trace_tensor_is_input(t))
            continue;
        int32_t dt = (int32_t)t->dtype, nd = t->ndim;
        nx_sha256_update(&h, t->name, strlen(t->name) + 1);
        nx_sha256_update(&h, &dt, sizeof dt);
        nx_sha256_update(&h, &nd, sizeof nd);
        nx_sha256_update(&h, t->shape, (size_t)nd * sizeof t->shape[0]);
        nx_sha256_update(&h, t->data, (size_t)t->nbytes);
    }
    uint8_t dg[32];
    nx_sha256_final(&h, dg);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", dg[i]);
}

nx_status camp_run_point(const reg_registry *reg, const char *class_name, const char *id, const char *shape,
                         const camp_opts *o, camp_result *res, nx_err *err)
{
    memset(res, 0, sizeof *res);
    snprintf(res->id, sizeof res->id, "%s", id);
    snprintf(res->class_name, sizeof res->class_name, "%s", class_name);
    snprintf(res->shape, sizeof res->shape, "%s", shape ? shape : "");
    snprintf(res->against, sizeof res->against, "%s", o->against ? o->against : "");
    res->checks[CK_PARITY].verdict = CV_SKIP;
    set_check(res, CK_PARITY, "skipped: no --against class");
    fam_spec spec;
    memset(&spec, 0, sizeof spec);
    st_file in, ref, runs[2], eager, legacy;
    st_init(&in);
    st_init(&ref);
    st_init(&runs[0]);
    st_init(&runs[1]);
    st_init(&eager);
    st_init(&legacy);
    nx_status st = reg_resolve(reg, class_name, id, shape, &spec, err);
    if (st)
        goto out;
    snprintf(res->kernel, sizeof res->kernel, "%s", spec.kernel ? spec.kernel : "");
    snprintf(res->hash, sizeof res->hash, "%s", spec.hash ? spec.hash : "");
    /* The legacy kernel of a point: param legacy_kernel, else the point's
     * kernel id followed by "_legacy" when the backend has it. */
    const char *leg = fam_param_get(&spec, "legacy_kernel");
    if (leg)
        snprintf(res->legacy, sizeof res->legacy, "%s", leg);
    else if (spec.kernel) {
        snprintf(res->legacy, sizeof res->legacy, "%s_legacy", spec.kernel);
        if (!dev_supports(o->backend, &spec, res->legacy))
            res->legacy[0] = 0;
    }
    for (int c = 0; c < CK_COUNT; c++)
        res->checks[c].negative = c <= CK_ROWS && vd_in_list(fam_param_get(&spec, "negative_control"), check_names[c]);
    /* a kernel that exists but refuses the point's params is the point's
     * input error, named, never a skip */
    if ((st = dev_check_params(o->backend, &spec, spec.kernel, err))) {
        nx_err_prefix(err, "%s: the %s backend's kernel '%s' refuses the point's params", id, o->backend->name,
                      spec.kernel ? spec.kernel : "(none)");
        goto out;
    }
    if (!dev_supports(o->backend, &spec, spec.kernel)) {
        for (int c = 0; c < CK_COUNT; c++) {
            res->checks[c].verdict = CV_SKIP;
            set_check(res, c, "skipped: the %s backend has no kernel '%s'", o->backend->name,
                      spec.kernel ? spec.kernel : "(none)");
        }
        goto out;
    }

    const char *bd = fam_batch_dim(spec.family);
    long nrows = 0;
    char full_batch[64] = "rows=0";
    if (bd && fam_param_long(&spec, bd, &nrows, NULL) == NX_OK && nrows > 0)
        snprintf(full_batch, sizeof full_batch, "rows=0..%ld", nrows - 1);
    double t0 = now();
    const st_file *inp = &in;
    if ((st = get_inputs(&spec, o, &in, &inp, err)))
        goto out;
    res->t_gen += now() - t0;

    /* Tier 1: determinism over repeated graphed runs; eager vs graphed. */
    int nondet = 0;
    int repeats = o->repeats < 2 ? 2 : o->repeats;
    vd_diff d = {.same = 1};
    char what[128];
    if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, NULL, &runs[0], res, err)))
        goto out;
    if ((st = save_trace(o, &spec, res, &runs[0], "graphed-0", DEV_GRAPHED, 0, NULL, full_batch, err)))
        goto out;
    digest_tensors(&runs[0], 0, res->out_digest);
    digest_tensors(inp, 1, res->in_digest);
    for (int k = 1; k < repeats && d.same; k++) {
        st_free(&runs[1]);
        if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, NULL, &runs[1], res, err)))
            goto out;
        camp_diff_runs(&runs[0], NULL, 0, &runs[1], NULL, 0, &d);
    }
    camp_tier1_what(CK_DETERMINISM, NULL, NULL, what, sizeof what);
    judge(res, CK_DETERMINISM, &d, what);
    /* a backend may declare a kernel nondeterministic on purpose (atomics,
     * a scheduler's order; docs/backends.md): then runs that differ are
     * what it said, and the checks that compare runs cannot be judged */
    nondet = !res->checks[CK_DETERMINISM].negative && dev_nondeterministic(o->backend, &spec, spec.kernel);
    if (nondet) {
        res->checks[CK_DETERMINISM].verdict = CV_SKIP;
        set_check(res, CK_DETERMINISM, "skipped: the %s backend declares kernel '%s' nondeterministic on purpose (%s)",
                  o->backend->name, spec.kernel ? spec.kernel : "(none)",
                  d.same ? "the repeated runs agreed this time" : "the repeated runs differed, as declared");
        for (int c = CK_EAGER_GRAPHED; c <= CK_ROWS; c++) {
            res->checks[c].verdict = CV_SKIP;
            set_check(res, c, "skipped: the backend declares the kernel nondeterministic on purpose");
        }
        goto tier2;
    }
    if (res->checks[CK_DETERMINISM].negative) {
        /* a kernel nondeterministic by design: the other Tier 1 checks,
         * which compare runs, cannot be judged on it */
        for (int c = CK_EAGER_GRAPHED; c <= CK_ROWS; c++) {
            res->checks[c].verdict = CV_SKIP;
            set_check(res, c, "skipped: the kernel is nondeterministic by design (the determinism control)");
        }
        goto tier2;
    }
    if ((st = run_backend(o, &spec, inp, DEV_EAGER, NULL, &eager, res, err)))
        goto out;
    if ((st = save_trace(o, &spec, res, &eager, "eager-0", DEV_EAGER, 0, NULL, full_batch, err)))
        goto out;
    camp_diff_runs(&runs[0], NULL, 0, &eager, NULL, 0, &d);
    camp_tier1_what(CK_EAGER_GRAPHED, NULL, NULL, what, sizeof what);
    judge(res, CK_EAGER_GRAPHED, &d, what);

    /* Tier 1: new vs legacy kernel of the same point. */
    if (!*res->legacy) {
        res->checks[CK_NEW_LEGACY].verdict = CV_SKIP;
        set_check(res, CK_NEW_LEGACY, "skipped: the point names no legacy kernel");
    } else if (!dev_supports(o->backend, &spec, res->legacy)) {
        res->checks[CK_NEW_LEGACY].verdict = CV_SKIP;
        set_check(res, CK_NEW_LEGACY, "skipped: the %s backend has no kernel '%s'", o->backend->name, res->legacy);
    } else {
        if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, res->legacy, &legacy, res, err)))
            goto out;
        camp_diff_runs(&runs[0], NULL, 0, &legacy, NULL, 0, &d);
        camp_tier1_what(CK_NEW_LEGACY, NULL, NULL, what, sizeof what);
        judge(res, CK_NEW_LEGACY, &d, what);
    }

    /* Tier 1: row invariance. */
    if (!bd || nrows <= 0) {
        res->checks[CK_ROWS].verdict = CV_SKIP;
        set_check(res, CK_ROWS, "skipped: no batch dimension for family '%s'", spec.family);
    } else if ((st = check_rows(o, &spec, inp, &runs[0], nrows, res, err))) {
        goto out;
    }

tier2:
    if ((st = exercise_controls(reg, class_name, id, shape, o, res, err)))
        goto out;
    /* Tier 2 against the reference. */
    t0 = now();
    ref_opts ro = {o->threads, (nx_engine_kind)o->engine};
    if ((st = ref_run_opts(&spec, inp, &ref, &ro, err)))
        goto out;
    res->t_ref += now() - t0;
    st = tier2(&spec, inp, &runs[0], &ref, res, o, err);
    if (!st && o->power && !nondet && !res->checks[CK_DETERMINISM].negative && !res->checks[CK_EAGER_GRAPHED].negative &&
        !res->checks[CK_NEW_LEGACY].negative && !res->checks[CK_ROWS].negative)
        st = power(o, &spec, res, err);
    if (!st && o->against)
        st = cross_class(reg, &spec, o, res, &runs[0], err);
out:
    if (st) {
        res->error = 1;
        /* a backend that hung, died, broke its protocol, failed its kernel or
         * wrote another output than the family's (devices/ext, tier2.c) */
        res->backend_error = st == NX_EDEVICE;
        snprintf(res->errmsg, sizeof res->errmsg, "%s", err ? err->msg : "error");
    }
    st_free(&in);
    st_free(&ref);
    st_free(&runs[0]);
    st_free(&runs[1]);
    st_free(&eager);
    st_free(&legacy);
    fam_spec_free(&spec);
    return st;
}
