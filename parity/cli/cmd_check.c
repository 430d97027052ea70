/* cmd_check.c: `parity check TRACE...`: device runs recorded as traces,
 * checked anywhere (no device needed): Tier 2 of every trace against the
 * exact reference of its point (or of --reference), Tier 1 across traces of
 * one point (determinism, eager vs graphed, new vs legacy, row invariance). */
#include "cli.h"
#include "nx_limits.h"
#include "campaign.h"
#include "cli_html.h"
#include "html.h"
#include "nx_philox.h"
#include "refimpl.h"
#include "report.h"
#include "rows.h"
#include "trace.h"
#include "npy.h"
#include "tolerance.h"

#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char check_usage[] =
    "usage: parity check TRACE... [--kernels DIR] [--reference FAMILY.POINT]\n"
    "                    [--reference-class C] [--engine fast|mpfr] [--json FILE]\n"
    "                    [--html FILE]\n"
    "\n"
    "Checks traces (docs/traces.md) written by `parity campaign --traces`, by the\n"
    "CUDA backend or by a kernel's host code through the capture API.\n"
    "\n"
    "Tier 2, per trace: the reference of the trace's point (resolved in the\n"
    "registry for the trace's class and shape) is evaluated on the trace's inputs\n"
    "(its in.* tensors, or the seed that regenerates them) and compared with its\n"
    "outputs, row by row through the trace's batch layout.  Bit for bit when the\n"
    "trace's point and the reference point have the same numerics hash; else\n"
    "within the trace point's declared tolerance, else within the bound derived\n"
    "from both points' trees (docs/tolerance.md), else (the last resort, said as\n"
    "such) torch.testing's default for the output format; with what differs.\n"
    "Tier 1, across traces of one point, class and shape: runs that differ only in\n"
    "run index (determinism), in mode (eager vs graphed), in kernel (new vs\n"
    "legacy) or in batch layout (row invariance) must agree bit for bit on every\n"
    "logical row they share.  A trace that says it is a negative control\n"
    "(metadata negative_control, expected_fail) is judged as the campaign judged\n"
    "its run: by its declared tolerance at Tier 2, and the Tier 1 checks it is\n"
    "built to fail must differ: \"ok (negative control failed as expected)\".\n"
    "Cross-class parity, across traces of one point and shape on two classes\n"
    "with the same inputs: where the registry says the two points are the same\n"
    "(equal hashes, no atomic), bit for bit: \"bit parity between A and B at F.P:\n"
    "yes\", or where the bits first differ and how many; where the points differ,\n"
    "what `registry compare` says differs (a declared difference, not a failure).\n"
    "\n"
    "options:\n"
    "  --kernels DIR        the registry (default: kernels)\n"
    "  --reference F.P      check against this point instead of the trace's own\n"
    "  --reference-class C  the class of --reference (default: the trace's)\n"
    "  --engine E           reference engine (default: fast when built, else mpfr)\n"
    "  --json FILE          write the verdicts as JSON\n"
    "  --html FILE          write a report to look at: the verdict table and each\n"
    "                       trace's ulp histogram (docs/reports.md)\n"
    "\n"
    "A kernel's output saved as .npy (v1-v3; <f2 <f4 <f8, ml_dtypes names such as\n"
    "bfloat16 or float8_e4m3fn, or raw <u2 |u1 <V2 with --dtype) is checked as a\n"
    "trace built from options instead of metadata:\n"
    "  --npy FILE --point F.P --class C --shape S --seed N [--dist D]\n"
    "  [--dtype bf16|fp16|e4m3|...] [--name y] [--mode eager|graphed]\n"
    "  [--kernel K] [--batch rows=0..15]\n"
    "\n"
    "Any kernel's output, without a registry, against a numerics point's exact\n"
    "reference on `parity reduce`'s input (see `parity check --numerics --help`):\n"
    "  --numerics P --in IN.safetensors --out Y.safetensors|Y.npy\n"
    "\n"
    "exit status: 0 every check passed (a negative control failing as it must,\n"
    "and a declared cross-class difference, are passes); 1 a parity check failed\n"
    "(Tier 2, Tier 1, or bit parity between classes where it is expected); 2 usage or input\n"
    "error: a malformed or mismatched trace (unknown family or point, wrong\n"
    "shape or dtype, missing metadata), named with its file and field.\n";

typedef struct checked {
    trace t;
    fam_spec spec;
    st_file ref;           /* reference outputs, one row per logical row (or batch row with in.*) */
    int ref_by_batch;      /* the reference was computed on the trace's own in.* inputs */
    char id[128];
    camp_check t2;
    int bit_exact;
    cmp_result cmp;
    char *cmp_text;
    html_heat heat;        /* elements whose bits differ from the reference (--html) */
} checked;

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

/* Tier 2 of one trace. */
static nx_status check_one(const reg_registry *reg, const char *ref_point, const char *ref_class, int engine,
                           checked *c, nx_err *err)
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
    const char *bd = camp_batch_dim(rs->family);
    if (have) {
        /* in batch order: the reference sees the batch as its rows */
        char nb[32];
        snprintf(nb, sizeof nb, "%zu", t->nrows);
        if (bd && (st = fam_spec_set_param(rs, bd, nb, err)))
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
    ref_opts ro = {0, (ref_engine)engine};
    st_init(&c->ref);
    if ((st = ref_run_opts(rs, &in, &c->ref, &ro, err))) {
        nx_err_prefix(err, "%s", t->path);
        goto out;
    }
    /* every reference output must be in the trace with the batch's rows */
    const st_tensor *main_ref = NULL, *main_got = NULL;
    for (size_t i = 0; i < c->ref.ntensors; i++) {
        const st_tensor *r = &c->ref.tensors[i];
        const st_tensor *g = trace_output(t, r->name);
        if (!g) {
            st = nx_err_set(err, NX_EINVAL, "%s: output tensor '%s' is missing (family %s outputs it)", t->path, r->name,
                            rs->family);
            goto out;
        }
        if (g->dtype != r->dtype) {
            st = nx_err_set(err, NX_EINVAL, "%s: output '%s' has dtype %s; the point's output is %s", t->path, r->name,
                            st_dtype_name(g->dtype), st_dtype_name(r->dtype));
            goto out;
        }
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
            st = nx_err_set(err, NX_EINVAL, "%s: output '%s' has shape [%s]; its shape and batch ('%s') need [%s]",
                            t->path, r->name, gs, t->batch, rsb);
            goto out;
        }
        for (size_t j = 0; j < t->nrows && !c->ref_by_batch; j++)
            if (t->rows[j] >= r->shape[0]) {
                st = nx_err_set(err, NX_EINVAL, "%s: metadata 'batch': row %lld is beyond the shape's %lld rows", t->path,
                                (long long)t->rows[j], (long long)r->shape[0]);
                goto out;
            }
        if (!main_ref || strcmp(r->name, "y") == 0) {
            main_ref = r;
            main_got = g;
        }
    }
    if (!main_ref) {
        st = nx_err_set(err, NX_EINTERNAL, "%s: the reference produced no output", t->path);
        goto out;
    }
    /* Tier 2 on the main output: reference rows picked by the batch */
    int fmt = rows_fmt_of_dtype(main_ref->dtype);
    size_t per_row = (size_t)(main_got->nelem / (t->nrows ? t->nrows : 1));
    size_t n = (size_t)main_got->nelem;
    char what[320];
    snprintf(what, sizeof what, "%s: output '%s' (%zu elements, 24 bytes each compared)", t->path, main_got->name, n);
    if ((st = nx_limits_elems(n, 24, what, err))) /* docs/limits.md */
        goto out;
    uint64_t *g = malloc((n ? n : 1) * sizeof *g), *r = malloc((n ? n : 1) * sizeof *r);
    if (!g || !r || fmt < 0) {
        free(g);
        free(r);
        st = fmt < 0 ? nx_err_set(err, NX_EUNSUPPORTED, "%s: output dtype %s is not a number format", t->path,
                                  st_dtype_name(main_ref->dtype))
                     : nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    size_t *srcs = malloc((n ? n : 1) * sizeof *srcs);
    if (!srcs) {
        free(g);
        free(r);
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t row = i / per_row, col = i % per_row;
        size_t src = c->ref_by_batch ? i : (size_t)t->rows[row] * per_row + col;
        g[i] = st_get_bits(main_got, main_got->data, i);
        r[i] = st_get_bits(main_ref, main_ref->data, src);
        srcs[i] = src;
    }
    /* where the bits differ, in the trace's own layout, for --html */
    int64_t hcols = main_got->ndim ? main_got->shape[main_got->ndim - 1] : 1;
    if (hcols < 1)
        hcols = 1;
    html_heat_free(&c->heat);
    if (html_heat_init(&c->heat, (int64_t)(n / (size_t)hcols), hcols) == 0)
        for (size_t i = 0; i < n; i++)
            if (g[i] != r[i])
                html_heat_add(&c->heat, (int64_t)(i / (size_t)hcols), (int64_t)(i % (size_t)hcols));
    t2_policy pol;
    memset(&pol, 0, sizeof pol);
    int approx = 0;
    for (size_t i = 0; i < c->spec.nelems; i++)
        approx |= c->spec.elems[i].impl == FAM_ELEM_APPROX;
    int same_point = c->spec.hash && rs->hash && strcmp(c->spec.hash, rs->hash) == 0;
    cmp_options opt;
    char why[2048] = "";
    if (same_point && !approx && !t->negative_control) {
        cmp_options_init(&opt, CMP_BITWISE);
    } else {
        if (!same_point) {
            char *diff = NULL;
            char a[160], b[160];
            snprintf(a, sizeof a, "%s:%s", t->class_name, c->id);
            snprintf(b, sizeof b, "%s:%s", ref_class ? ref_class : t->class_name, ref_point ? ref_point : c->id);
            int parity;
            nx_err e2;
            if (reg_compare(reg, a, b, shape, &diff, &parity, &e2) == NX_OK && diff) {
                char sum[600];
                camp_compare_summary(diff, sum, sizeof sum);
                snprintf(why, sizeof why, "the trace's point %s and the reference %s differ: %s", a, b,
                         *sum ? sum : "in their numerics hashes");
            } else {
                snprintf(why, sizeof why, "the trace's point and the reference have different numerics hashes");
            }
            free(diff);
        } else if (t->negative_control) {
            /* the trace says so (docs/traces.md): judged as the campaign judged its run */
            snprintf(why, sizeof why, "a negative control: judged by its declared tolerance");
        } else {
            snprintf(why, sizeof why, "an elementwise function is a declared approximation");
        }
        /* the declared tolerance, else the bound from both points'
         * trees on these inputs, else torch.testing's default */
        char nb[32];
        snprintf(nb, sizeof nb, "%zu", t->nrows);
        if (c->ref_by_batch && bd)
            st = fam_spec_set_param(&c->spec, bd, nb, err);
        if (!st)
            st = t2_policy_choose(&c->spec, rs, &in, (nx_fmt)fmt, n, r, srcs, 0, &pol, err);
        opt = pol.opt;
        size_t l = strlen(why);
        snprintf(why + l, sizeof why - l, "; %s", pol.why);
    }
    int64_t shp[CMP_MAX_NDIM];
    for (int d = 0; d < main_got->ndim && d < CMP_MAX_NDIM; d++)
        shp[d] = main_got->shape[d];
    cmp_input ci = {(nx_fmt)fmt, n, g, r, NULL, NULL, main_got->ndim, shp};
    t2_policy_input(&pol, &ci);
    if (!st)
        st = cmp_compare(&ci, &opt, &c->cmp, err);
    t2_policy_free(&pol);
    free(srcs);
    free(g);
    free(r);
    if (st)
        goto out;
    c->cmp_text = cmp_result_text(&c->cmp);
    char idx[160] = "";
    if (c->cmp.first_mismatch != CMP_NO_INDEX) {
        /* name the element by its logical row */
        size_t fm = c->cmp.first_mismatch, row = fm / per_row;
        cmp_format_index(idx, sizeof idx, fm, main_got->ndim, shp, CMP_INDEX_BRACKETS);
        size_t l = strlen(idx);
        snprintf(idx + l, sizeof idx - l, " (logical row %lld)", (long long)t->rows[row]);
    }
    /* the one judge: the same words as the campaign's for the same evidence */
    vd_evidence ev = {.kind = VD_TIER2, .cmp = &c->cmp, .output = main_ref->name, .first_at = idx, .why = why};
    c->t2.verdict = vd_judge(&ev, c->t2.detail, sizeof c->t2.detail) ? CV_PASS : CV_FAIL;
    c->bit_exact = c->cmp.bits_differ == 0;
    /* the other outputs, bit for bit when judged so */
    for (size_t i = 0; i < c->ref.ntensors && opt.policy == CMP_BITWISE && c->t2.verdict == CV_PASS; i++) {
        const st_tensor *x = &c->ref.tensors[i], *y = trace_output(t, x->name);
        if (x == main_ref)
            continue;
        size_t rb = camp_row_bytes(y);
        for (size_t j = 0; j < t->nrows; j++) {
            size_t src = c->ref_by_batch ? j : (size_t)t->rows[j];
            if (memcmp(y->data + j * rb, x->data + src * rb, rb) != 0) {
                c->t2.verdict = CV_FAIL;
                c->bit_exact = 0;
                snprintf(c->t2.detail, sizeof c->t2.detail, "%s: not bit-exact: output '%s' batch row %zu differs from the "
                         "reference", VD_FAIL, x->name, j);
                break;
            }
        }
    }
out:
    st_free(&in);
    fam_spec_free(&refspec);
    return st;
}

typedef struct npy_opts {
    const char *path, *point, *cls, *shape, *seed, *dist, *dtype, *name, *mode, *kernel, *batch;
} npy_opts;

/* Builds a trace from a .npy output and the options that stand in for its
 * metadata; the trace validator then checks them like any trace's. */
static nx_status npy_trace(const npy_opts *o, trace *t, nx_err *err)
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
static void npy_name_option(nx_err *err)
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

int cmd_check(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* any output against a numerics point, no registry */
        if (!strcmp(argv[i], "--numerics") || !strncmp(argv[i], "--numerics=", 11))
            return cmd_check_numerics(argc, argv);
    npy_opts no = {0};
    const char *kdir = "kernels", *refp = NULL, *refc = NULL, *eng_s = NULL, *json = NULL, *html = NULL;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    size_t np = 0;
    int bad = 0;
    if (!paths)
        return EXIT_INTERNAL;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(check_usage, stdout);
            free(paths);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) || cli_opt(argc, argv, &i, "--reference", &refp, &bad) ||
            cli_opt(argc, argv, &i, "--reference-class", &refc, &bad) || cli_opt(argc, argv, &i, "--engine", &eng_s, &bad) ||
            cli_opt(argc, argv, &i, "--json", &json, &bad) || cli_opt(argc, argv, &i, "--npy", &no.path, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad) ||
            cli_opt(argc, argv, &i, "--point", &no.point, &bad) || cli_opt(argc, argv, &i, "--class", &no.cls, &bad) ||
            cli_opt(argc, argv, &i, "--shape", &no.shape, &bad) || cli_opt(argc, argv, &i, "--seed", &no.seed, &bad) ||
            cli_opt(argc, argv, &i, "--dist", &no.dist, &bad) || cli_opt(argc, argv, &i, "--dtype", &no.dtype, &bad) ||
            cli_opt(argc, argv, &i, "--name", &no.name, &bad) || cli_opt(argc, argv, &i, "--mode", &no.mode, &bad) ||
            cli_opt(argc, argv, &i, "--kernel", &no.kernel, &bad) || cli_opt(argc, argv, &i, "--batch", &no.batch, &bad))
            continue;
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            cli_error("check", "unknown option '%s' (see --help)", argv[i]);
            free(paths);
            return EXIT_INPUT;
        }
        paths[np++] = argv[i];
    }
    if (no.path)
        paths[np++] = no.path;
    if (bad || np == 0) {
        if (!bad)
            cli_error("check", "needs at least one TRACE (see --help)");
        free(paths);
        return EXIT_INPUT;
    }
    cli_file *ins = json || html ? calloc(np, sizeof *ins) : NULL;
    for (size_t k = 0; ins && k < np; k++)
        ins[k] = (cli_file){"TRACE", paths[k]};
    const cli_file outs[] = {{"--json", json}, {"--html", html}};
    int alias = (json || html) && (!ins || cli_check_outputs("check", outs, 2, ins, np));
    free(ins);
    if (alias) {
        free(paths);
        return EXIT_INPUT;
    }
    int engine = (int)ref_engine_default();
    if (eng_s) {
        engine = ref_engine_from_name(eng_s);
        if (engine < 0 || !ref_engine_available((ref_engine)engine)) {
            cli_error("check", "--engine: '%s' is not an engine built into this binary", eng_s);
            free(paths);
            return EXIT_INPUT;
        }
    }
    nx_err err = {0};
    reg_registry *reg = NULL;
    checked *cs = calloc(np, sizeof *cs);
    int rc = EXIT_PASS;
    if (!cs) {
        free(paths);
        return EXIT_INTERNAL;
    }
    if (reg_load(kdir, &reg, &err) != NX_OK) {
        rc = cli_fail("check", &err);
        goto done;
    }
    /* every trace is read and checked before any verdict: bad input first */
    for (size_t i = 0; i < np; i++) {
        trace_init(&cs[i].t);
        st_init(&cs[i].ref);
        nx_status rs = no.path && paths[i] == no.path ? npy_trace(&no, &cs[i].t, &err) : trace_read(paths[i], &cs[i].t, &err);
        if (rs != NX_OK || check_one(reg, refp, refc, engine, &cs[i], &err) != NX_OK) {
            if (no.path && paths[i] == no.path)
                npy_name_option(&err);
            rc = cli_fail("check", &err);
            np = i + 1;
            goto done;
        }
    }
    size_t failed = 0, t1 = 0;
    json_t *jroot = json_object(), *jt = json_array(), *jp = json_array();
    printf("%-46s %-8s %-10s %s\n", "trace", "mode", "tier2", "detail");
    for (size_t i = 0; i < np; i++) {
        checked *c = &cs[i];
        printf("%-46s %-8s %-10s %s\n", c->t.path, trace_mode_name(c->t.mode),
               c->t2.verdict == CV_PASS ? (c->bit_exact ? "bits" : c->cmp.opt.policy == CMP_BOUND ? "bound" : "tolerance")
                                          : "FAIL", c->t2.detail);
        if (c->t2.verdict == CV_FAIL) {
            failed++;
            report_indent(stdout, c->cmp_text, 4);
        }
        json_t *o = json_object();
        json_object_set_new(o, "trace", json_string(c->t.path));
        json_object_set_new(o, "point", json_string(c->id));
        json_object_set_new(o, "class", json_string(c->t.class_name));
        json_object_set_new(o, "verdict", json_string(c->t2.verdict == CV_PASS ? "pass" : "fail"));
        json_object_set_new(o, "bit_exact", json_boolean(c->bit_exact));
        json_object_set_new(o, "detail", json_string(c->t2.detail));
        json_object_set_new(o, "compare", cmp_result_json(&c->cmp));
        json_array_append_new(jt, o);
    }
    /* Tier 1: pairs of traces of one point, class and shape, judged by the
     * campaign's judge: a trace that says it is a negative control for the
     * check (its expected_fail) must differ */
    for (size_t i = 0; i < np; i++)
        for (size_t j = i + 1; j < np; j++) {
            trace *a = &cs[i].t, *b = &cs[j].t;
            if (strcmp(cs[i].id, cs[j].id) || strcmp(a->class_name, b->class_name) || !same_shape(a, b))
                continue;
            int ck = strcmp(a->kernel, b->kernel) ? CK_NEW_LEGACY
                     : a->mode != b->mode         ? CK_EAGER_GRAPHED
                     : strcmp(a->batch, b->batch) ? CK_ROWS
                                                  : CK_DETERMINISM;
            /* a pair that differs in more than one respect mixes two checks:
             * compared for ordinary kernels, but a negative control's
             * difference could not be told apart, so such a pair is left out */
            int aspects = !!strcmp(a->kernel, b->kernel) + (a->mode != b->mode) + !!strcmp(a->batch, b->batch);
            if (aspects > 1 && (a->negative_control || b->negative_control))
                continue;
            vd_diff d;
            camp_diff_runs(&a->file, a->rows, a->nrows, &b->file, b->rows, b->nrows, &d);
            if (d.rows == 0)
                continue;
            const char *name = camp_check_name(ck);
            int negative = (a->negative_control && vd_in_list(a->expected_fail, name)) ||
                           (b->negative_control && vd_in_list(b->expected_fail, name));
            char what[600], text[2048];
            camp_tier1_what(ck, a->batch, b->batch, what, sizeof what);
            vd_evidence ev = {.kind = VD_TIER1, .negative = negative, .what = what, .diff = &d};
            int pass = vd_judge(&ev, text, sizeof text);
            t1++;
            printf("tier1 %-13s %s vs %s: %s\n", name, a->path, b->path, text);
            if (!pass)
                failed++;
            json_t *o = json_object();
            json_object_set_new(o, "check", json_string(name));
            json_object_set_new(o, "a", json_string(a->path));
            json_object_set_new(o, "b", json_string(b->path));
            json_object_set_new(o, "verdict", json_string(pass ? "pass" : "fail"));
            json_object_set_new(o, "negative_control", json_boolean(negative));
            json_object_set_new(o, "shared_rows", json_integer((json_int_t)d.rows));
            json_object_set_new(o, "detail", json_string(text));
            json_array_append_new(jp, o);
        }
    /* Cross-class parity: traces of one point and shape on two classes, one
     * comparison per pair of classes (the first pair of traces with the
     * same batch and mode, else the first that shares rows) */
    json_t *jx = json_array();
    size_t nx = 0;
    char **done = calloc(np * np + 1, sizeof *done);
    size_t ndone = 0;
    for (int pass = 0; pass < 2 && done; pass++)
        for (size_t i = 0; i < np; i++)
            for (size_t j = i + 1; j < np; j++) {
                trace *a = &cs[i].t, *b = &cs[j].t;
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
                camp_check x = {0};
                if (!*idiff) {
                    vd_diff d;
                    camp_diff_runs(&a->file, a->rows, a->nrows, &b->file, b->rows, b->nrows, &d);
                    if (d.rows == 0)
                        continue;
                }
                if (camp_cross_class(reg, a->class_name, b->class_name, cs[i].id, shape, &a->file, a->rows,
                                     a->nrows, &b->file, b->rows, b->nrows, *idiff ? idiff : NULL, &x, &err) != NX_OK) {
                    rc = cli_fail("check", &err);
                    break;
                }
                done[ndone++] = strdup(key);
                nx++;
                printf("parity %s vs %s: %s\n", a->path, b->path, x.detail);
                if (x.verdict == CV_FAIL)
                    failed++;
                json_t *o = json_object();
                json_object_set_new(o, "point", json_string(cs[i].id));
                json_object_set_new(o, "a", json_string(a->path));
                json_object_set_new(o, "b", json_string(b->path));
                json_object_set_new(o, "verdict", json_string(x.verdict == CV_PASS ? "pass"
                                                              : x.verdict == CV_FAIL ? "fail" : "skip"));
                json_object_set_new(o, "detail", json_string(x.detail));
                json_array_append_new(jx, o);
            }
    for (size_t k = 0; k < ndone; k++)
        free(done[k]);
    free(done);
    json_object_set_new(jroot, "parity", jx);
    if (nx)
        printf("%zu cross-class comparison(s)\n", nx);
    printf("%zu trace(s), %zu tier-1 comparison(s): %s\n", np, t1, failed ? "FAILED" : "all passed");
    json_object_set_new(jroot, "traces", jt);
    json_object_set_new(jroot, "tier1", jp);
    json_object_set_new(jroot, "failed", json_integer((json_int_t)failed));
    if (json) {
        char *text = json_dumps(jroot, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text || report_write_atomic(json, text, &err) != NX_OK)
            rc = text ? cli_fail("check", &err) : EXIT_INTERNAL;
        free(text);
    }
    if (html && rc != EXIT_INPUT) {
        const html_heat **heats = calloc(np, sizeof *heats);
        for (size_t i = 0; heats && i < np; i++)
            heats[i] = &cs[i].heat;
        if (!heats)
            rc = EXIT_INTERNAL;
        else if (cli_html_check(html, jroot, heats, np, &err) != NX_OK)
            rc = cli_fail("check", &err);
        free(heats);
    }
    json_decref(jroot);
    if (rc == EXIT_PASS && failed)
        rc = EXIT_PARITY;
done:
    for (size_t i = 0; i < np; i++) {
        trace_free(&cs[i].t);
        fam_spec_free(&cs[i].spec);
        st_free(&cs[i].ref);
        free(cs[i].cmp_text);
        html_heat_free(&cs[i].heat);
    }
    free(cs);
    free(paths);
    reg_free(reg);
    return rc;
}
