/* campaign.c: one family point through the three steps of the harness:
 * inputs (Philox, seeded), the class backend (repeats, eager and graphed,
 * the legacy kernel, batch variants), the reference (refimpl over
 * numerics/), and the Tier 1 / Tier 2 verdicts. */
#include "campaign.h"
#include "refimpl.h"
#include "rows.h"
#include "trace.h"
#include "tolerance.h"
#include "nx_sbuf.h"

#include <jansson.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const check_names[CK_COUNT] = {"determinism", "eager_graphed", "new_legacy", "rows",
                                                  "tier2"};

const char *camp_check_name(int ck)
{
    return ck >= 0 && ck < CK_COUNT ? check_names[ck] : "?";
}

/* Data, not branches: which dimension holds independent rows. */
static const struct { const char *family, *dim; } batch_dims[] = {
    {"gemm", "M"}, {"gemv_w4a16", "B"}, {"moe_grouped_gemm", "T"},
    {"paged_decode_attention", "B"}, {"rmsnorm", "T"}, {"silu_and_mul", "T"},
};

const char *camp_batch_dim(const char *family)
{
    for (size_t i = 0; i < sizeof batch_dims / sizeof batch_dims[0]; i++)
        if (strcmp(batch_dims[i].family, family) == 0)
            return batch_dims[i].dim;
    return NULL;
}

/* Shape presets.  8b-layer: one decoder layer of an 8B-class model (hidden
 * 4096, intermediate 14336, 32 query / 8 KV heads of dim 128, context 4096),
 * batch 16 (attention: 4 sequences of up to 4096 positions; MoE: an
 * 8-expert slice with N = 2048 so that it runs in seconds on a CPU). */
static const struct { const char *preset, *family, *shape; } presets[] = {
    {"small", "gemm", "M=4,N=24,K=200"},
    {"small", "gemv_w4a16", "B=3,N=20,K=512"},
    {"small", "moe_grouped_gemm", "T=5,E=4,H=96,N=16,topk=2"},
    {"small", "paged_decode_attention", "B=3,HQ=4,HKV=2,D=16,P=8,NP=12,MAXP=4"},
    {"small", "rmsnorm", "T=4,H=160"},
    {"small", "silu_and_mul", "T=4,H=96"},
    {"8b-layer", "gemm", "M=16,N=4096,K=4096"},
    {"8b-layer", "gemv_w4a16", "B=1,N=14336,K=4096"},
    {"8b-layer", "moe_grouped_gemm", "T=16,E=8,H=4096,N=2048,topk=2"},
    {"8b-layer", "paged_decode_attention", "B=4,HQ=32,HKV=8,D=128,P=16,NP=1024,MAXP=256"},
    {"8b-layer", "rmsnorm", "T=16,H=4096"},
    {"8b-layer", "silu_and_mul", "T=16,H=14336"},
};

const char *camp_preset_shape(const char *preset, const char *family)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].preset, preset) == 0 && strcmp(presets[i].family, family) == 0)
            return presets[i].shape;
    return NULL;
}

int camp_preset_known(const char *preset)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].preset, preset) == 0)
            return 1;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void camp_default_tolerance(nx_fmt f, cmp_options *o, char *what, size_t len)
{
    cmp_options_init(o, CMP_TOLERANCE);
    switch (f) {
    case NX_FP64: o->rtol = 1e-7; o->atol = 1e-7; break;
    case NX_FP32: case NX_TF32: case NX_E8M13: o->rtol = 1.3e-6; o->atol = 1e-5; break;
    case NX_FP16: o->rtol = 1e-3; o->atol = 1e-5; break;
    case NX_BF16: o->rtol = 1.6e-2; o->atol = 1e-5; break;
    default: o->rtol = 1e-1; o->atol = 1e-5; break;
    }
    snprintf(what, len, "no tolerance is declared: torch.testing's default for %s applies (rtol %g, atol %g)",
             nx_format(f)->name, o->rtol, o->atol);
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
        else if (in && l && k + l + 3 < len)
            k += (size_t)snprintf(out + k, len - k, "%s%.*s", k ? "; " : "", (int)l, q);
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

/* A check's outcome: `same` is whether the compared runs agreed bit for
 * bit; `where` says where they first differ.  A negative control must
 * disagree. */
static void judge(camp_result *r, int ck, int same, const char *what, const char *where)
{
    camp_check *c = &r->checks[ck];
    if (c->negative) {
        c->verdict = same ? CV_FAIL : CV_PASS;
        if (same)
            set_check(r, ck, "negative control: %s agreed, but this kernel is built to differ: the check cannot "
                             "tell it apart", what);
        else
            set_check(r, ck, "negative control: %s: the bits differ, as this kernel is built to make them: %s", what,
                      where);
    } else {
        c->verdict = same ? CV_PASS : CV_FAIL;
        if (same)
            set_check(r, ck, "%s: identical bit for bit", what);
        else
            set_check(r, ck, "%s: the bits differ: %s", what, where);
    }
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
    const char *bd = camp_batch_dim(spec->family);
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

/* 1 if every output of a and b is bit-identical. */
static int same_outputs(const st_file *a, const st_file *b, char *where, size_t wlen)
{
    if (a->ntensors != b->ntensors) {
        snprintf(where, wlen, "different numbers of outputs");
        return 0;
    }
    for (size_t i = 0; i < a->ntensors; i++) {
        const st_tensor *x = &a->tensors[i], *y = st_find(b, x->name);
        if (!y || y->nbytes != x->nbytes || y->dtype != x->dtype) {
            snprintf(where, wlen, "output '%s' has another shape or dtype", x->name);
            return 0;
        }
        if (memcmp(x->data, y->data, (size_t)x->nbytes) != 0) {
            size_t e = 0;
            while (e < x->nelem && st_get_bits(x, x->data, e) == st_get_bits(y, y->data, e))
                e++;
            snprintf(where, wlen, "output '%s' first differs at flat element %zu (0x%llx vs 0x%llx)", x->name, e,
                     (unsigned long long)st_get_bits(x, x->data, e), (unsigned long long)st_get_bits(y, y->data, e));
            return 0;
        }
    }
    return 1;
}

/* Compares rows of `part` (batch rows rows[i]) with the same logical rows
 * of `full`. */
static int same_rows(const st_file *full, const st_file *part, const int64_t *rows, size_t n, char *where,
                     size_t wlen)
{
    for (size_t i = 0; i < part->ntensors; i++) {
        const st_tensor *p = &part->tensors[i], *f = st_find(full, p->name);
        if (!f || f->ndim != p->ndim || p->ndim == 0 || p->shape[0] != (int64_t)n) {
            snprintf(where, wlen, "output '%s' has another shape", p->name);
            return 0;
        }
        size_t rb = camp_row_bytes(p);
        for (size_t r = 0; r < n; r++) {
            if (memcmp(p->data + r * rb, f->data + (size_t)rows[r] * rb, rb) != 0) {
                snprintf(where, wlen, "output '%s': logical row %lld differs (batch position %zu of %zu)", p->name,
                         (long long)rows[r], r, n);
                return 0;
            }
        }
    }
    return 1;
}

static nx_status run_backend(const camp_opts *o, const fam_spec *spec, const st_file *in, dev_mode mode,
                             const char *kernel, st_file *out, camp_result *res, nx_err *err)
{
    dev_opts d = {mode, o->threads, kernel};
    double t0 = now();
    st_init(out);
    nx_status st = o->backend->run(spec, in, out, &d, err);
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
    if (o->backend->describe(dev, sizeof dev, &derr) != NX_OK)
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
    int same = 1;
    char where[512] = "", what[128] = "";
    for (int k = 0; k < 3 && same && !st; k++) {
        for (size_t i = 0; i < v[k].n; i++)
            rows[i] = k == 0 ? nrows - 1 : k == 1 ? nrows - 1 - (int64_t)i : (int64_t)i;
        /* the same point at a smaller batch: only the batch dimension changes */
        char nb[32];
        snprintf(nb, sizeof nb, "%zu", v[k].n);
        st_file sin, sout;
        st_init(&sin);
        st_init(&sout);
        if ((st = camp_slice_inputs(spec, in, rows, v[k].n, &sin, err)) == NX_OK &&
            (st = fam_spec_set_param(spec, camp_batch_dim(spec->family), nb, err)) == NX_OK &&
            (st = run_backend(o, spec, &sin, DEV_GRAPHED, NULL, &sout, res, err)) == NX_OK) {
            same = same_rows(full, &sout, rows, v[k].n, where, sizeof where);
            snprintf(what, sizeof what, "%s", v[k].what);
            char b[256];
            batch_string(b, sizeof b, rows, v[k].n, v[k].perm);
            if (!st)
                st = save_trace(o, spec, res, &sout, k == 0 ? "row-alone" : k == 1 ? "row-perm" : "row-half",
                                DEV_GRAPHED, 0, NULL, b, err);
        }
        st_free(&sin);
        st_free(&sout);
    }
    char full_n[32];
    snprintf(full_n, sizeof full_n, "%lld", (long long)nrows);
    nx_status st2 = fam_spec_set_param(spec, camp_batch_dim(spec->family), full_n, err);
    if (!st)
        st = st2;
    free(rows);
    if (st)
        return st;
    judge(res, CK_ROWS, same, same ? "a row alone, the reversed batch and the half batch" : what, where);
    return NX_OK;
}

/* Tier 2 over the first output tensor (every family's main output `y`),
 * then the others must agree bit for bit when judged bitwise. */
static nx_status tier2(const fam_spec *spec, const st_file *in, const st_file *dev, const st_file *ref, camp_result *res,
                       const camp_opts *o, nx_err *err)
{
    double t0 = now();
    const st_tensor *rt = ref->ntensors ? &ref->tensors[0] : NULL;
    for (size_t i = 0; i < ref->ntensors; i++)
        if (strcmp(ref->tensors[i].name, "y") == 0)
            rt = &ref->tensors[i];
    if (!rt)
        return nx_err_set(err, NX_EINTERNAL, "%s: the reference produced no output", res->id);
    const st_tensor *dt = st_find(dev, rt->name);
    if (!dt || dt->dtype != rt->dtype || dt->nelem != rt->nelem)
        return nx_err_set(err, NX_EINVAL, "%s: the device output '%s' is missing or has another dtype or size than the reference's",
                          res->id, rt->name);
    int f = rows_fmt_of_dtype(rt->dtype);
    if (f < 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "output '%s' has dtype %s, not a number format", rt->name,
                          st_dtype_name(rt->dtype));
    snprintf(res->t2_output, sizeof res->t2_output, "%s", rt->name);
    uint64_t *g = malloc((size_t)(rt->nelem ? rt->nelem : 1) * sizeof *g), *r = malloc((size_t)(rt->nelem ? rt->nelem : 1) * sizeof *r);
    if (!g || !r) {
        free(g);
        free(r);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < rt->nelem; i++) {
        g[i] = st_get_bits(dt, dt->data, i);
        r[i] = st_get_bits(rt, rt->data, i);
    }
    /* Bit-exact when the device runs the reference's point: the campaign
     * runs the spec itself, so that is every point except those whose
     * elementwise functions are approximations and negative controls. */
    int approx = 0;
    for (size_t i = 0; i < spec->nelems; i++)
        if (spec->elems[i].impl == FAM_ELEM_APPROX)
            approx = 1;
    cmp_options opt;
    const char *why = "";
    t2_policy pol;
    memset(&pol, 0, sizeof pol);
    nx_status st = NX_OK;
    int negative = 0;
    for (int c = 0; c < CK_COUNT; c++)
        negative |= res->checks[c].negative;
    if (!approx && !negative) {
        cmp_options_init(&opt, CMP_BITWISE);
        res->bit_exact = 1;
    } else {
        why = approx ? "an elementwise function is a declared approximation" : "a negative control: judged by its declared tolerance";
        /* the declared tolerance, else the bound of the point's tree
         * against itself (the device's approximations vs the reference's
         * cr, an `atomic` in any order), else torch.testing's default */
        st = t2_policy_choose(spec, spec, in, (nx_fmt)f, (size_t)rt->nelem, r, NULL, o->threads, &pol, err);
        opt = pol.opt;
    }
    cmp_input ci = {(nx_fmt)f, (size_t)rt->nelem, g, r, NULL, NULL, rt->ndim, rt->shape};
    t2_policy_input(&pol, &ci);
    if (!st)
        st = cmp_compare(&ci, &opt, &res->t2, err);
    t2_policy_free(&pol);
    free(g);
    free(r);
    if (st)
        return st;
    res->t2_text = cmp_result_text(&res->t2);
    camp_check *c = &res->checks[CK_TIER2];
    c->verdict = res->t2.mismatched == 0 ? CV_PASS : CV_FAIL;
    char idx[96] = "";
    if (res->t2.first_mismatch != CMP_NO_INDEX)
        cmp_format_index(idx, sizeof idx, res->t2.first_mismatch, rt->ndim, rt->shape, CMP_INDEX_BRACKETS);
    if (res->bit_exact)
        set_check(res, CK_TIER2, "bit-exact: %zu / %zu elements differ from the reference%s%s", res->t2.mismatched,
                  (size_t)rt->nelem, *idx ? ", first at " : "", idx);
    else
        set_check(res, CK_TIER2, "not bit-exact (%s%s%s); %s: %zu / %zu elements outside, max ulp %llu%s%s", why,
                  *pol.why ? "; " : "", pol.why, cmp_policy_name(opt.policy), res->t2.mismatched, (size_t)rt->nelem,
                  (unsigned long long)res->t2.max_ulp, *idx ? ", first at " : "", idx);
    /* other outputs (rmsnorm's residual_out) must match bit for bit when bitwise */
    for (size_t i = 0; i < ref->ntensors && res->bit_exact && c->verdict == CV_PASS; i++) {
        const st_tensor *x = &ref->tensors[i], *y = st_find(dev, x->name);
        if (x == rt)
            continue;
        if (!y || y->nbytes != x->nbytes || memcmp(x->data, y->data, (size_t)x->nbytes) != 0) {
            c->verdict = CV_FAIL;
            set_check(res, CK_TIER2, "output '%s' differs from the reference", x->name);
        }
    }
    res->t_cmp += now() - t0;
    return NX_OK;
}

static int negative_for(const fam_spec *spec, const char *check)
{
    const char *v = fam_param_get(spec, "negative_control");
    if (!v)
        return 0;
    size_t n = strlen(check);
    for (const char *p = v; (p = strstr(p, check)) != NULL; p += n)
        if ((p == v || p[-1] == ',' || p[-1] == ' ') && (p[n] == 0 || p[n] == ',' || p[n] == ' '))
            return 1;
    return 0;
}

nx_status camp_run_point(const reg_registry *reg, const char *class_name, const char *id, const char *shape,
                         const camp_opts *o, camp_result *res, nx_err *err)
{
    memset(res, 0, sizeof *res);
    snprintf(res->id, sizeof res->id, "%s", id);
    snprintf(res->class_name, sizeof res->class_name, "%s", class_name);
    snprintf(res->shape, sizeof res->shape, "%s", shape ? shape : "");
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
        if (!o->backend->supports(&spec, res->legacy))
            res->legacy[0] = 0;
    }
    for (int c = 0; c < CK_COUNT; c++)
        res->checks[c].negative = negative_for(&spec, check_names[c]);
    if (!o->backend->supports(&spec, spec.kernel)) {
        for (int c = 0; c < CK_COUNT; c++) {
            res->checks[c].verdict = CV_SKIP;
            set_check(res, c, "skipped: the %s backend has no kernel '%s'", o->backend->name,
                      spec.kernel ? spec.kernel : "(none)");
        }
        goto out;
    }

    const char *bd = camp_batch_dim(spec.family);
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
    int repeats = o->repeats < 2 ? 2 : o->repeats;
    char where[512] = "";
    int same = 1;
    if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, NULL, &runs[0], res, err)))
        goto out;
    if ((st = save_trace(o, &spec, res, &runs[0], "graphed-0", DEV_GRAPHED, 0, NULL, full_batch, err)))
        goto out;
    for (int k = 1; k < repeats && same; k++) {
        st_free(&runs[1]);
        if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, NULL, &runs[1], res, err)))
            goto out;
        same = same_outputs(&runs[0], &runs[1], where, sizeof where);
    }
    char runs_what[64];
    snprintf(runs_what, sizeof runs_what, "%d repeated runs", repeats);
    judge(res, CK_DETERMINISM, same, runs_what, where);
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
    same = same_outputs(&runs[0], &eager, where, sizeof where);
    judge(res, CK_EAGER_GRAPHED, same, "eager and graphed runs", where);

    /* Tier 1: new vs legacy kernel of the same point. */
    if (!*res->legacy) {
        res->checks[CK_NEW_LEGACY].verdict = CV_SKIP;
        set_check(res, CK_NEW_LEGACY, "skipped: the point names no legacy kernel");
    } else if (!o->backend->supports(&spec, res->legacy)) {
        res->checks[CK_NEW_LEGACY].verdict = CV_SKIP;
        set_check(res, CK_NEW_LEGACY, "skipped: the %s backend has no kernel '%s'", o->backend->name, res->legacy);
    } else {
        if ((st = run_backend(o, &spec, inp, DEV_GRAPHED, res->legacy, &legacy, res, err)))
            goto out;
        same = same_outputs(&runs[0], &legacy, where, sizeof where);
        judge(res, CK_NEW_LEGACY, same, "the new and the legacy kernel", where);
    }

    /* Tier 1: row invariance. */
    if (!bd || nrows <= 0) {
        res->checks[CK_ROWS].verdict = CV_SKIP;
        set_check(res, CK_ROWS, "skipped: no batch dimension for family '%s'", spec.family);
    } else if ((st = check_rows(o, &spec, inp, &runs[0], nrows, res, err))) {
        goto out;
    }

tier2:
    /* Tier 2 against the reference. */
    t0 = now();
    ref_opts ro = {o->threads, (ref_engine)o->engine};
    if ((st = ref_run_opts(&spec, inp, &ref, &ro, err)))
        goto out;
    res->t_ref += now() - t0;
    st = tier2(&spec, inp, &runs[0], &ref, res, o, err);
out:
    if (st) {
        res->error = 1;
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
