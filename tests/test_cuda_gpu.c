/* test_cuda_gpu.c: the CUDA kernels on a GPU (CTest label `gpu`; exit 77,
 * a skip, without one).  For every kernel at the numerics point it claims
 * on the GPU's class (devices/cuda/POINTS.md), on generated inputs:
 *   Tier 2: the eager run's bits equal the exact reference (refimpl/);
 *   Tier 1: a second eager run, a graphed run (captured, replayed) and the
 *           batch variants (each row alone, the batch reversed) give the
 *           same bits as the first run.
 * On sm90 the wgmma kernel runs too (Hopper's published atom: bit-exact),
 * and the mma.sync kernel at Hopper's measured atom (chain(16), wgmma's).
 * Every gemm run is also held against its atom's 15 neighbours
 * (hold_to_neighbours): with fp32 output each must differ.
 * A point marked as assumed (exact = 0; none at present) is measured: its
 * mismatches and greatest ulp distance are reported, and only more than
 * PARITY_MEASURED_ULP (default 2) ulps fails.
 * PARITY_TRACE_DIR=DIR also writes each case's eager and graphed runs as
 * traces (with their inputs) through dev_cuda_write_trace. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_backend.h"
#include "cuda_plan.h"
#include "point_toml.h"
#include "refimpl.h"

static int failures;

static void die(const char *what, const nx_err *e)
{
    fprintf(stderr, "test_cuda_gpu: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static void spec_init(fam_spec *s, const char *family, const char *cls, const char *point)
{
    memset(s, 0, sizeof *s);
    s->family = strdup(family);
    s->point = strdup(point);
    s->class_name = strdup(cls);
}

static void param(fam_spec *s, const char *k, const char *v)
{
    nx_err e = {0};
    if (fam_spec_set_param(s, k, v, &e))
        die(k, &e);
}

static void red(fam_spec *s, const char *name, const char *toml)
{
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(toml, name, &pt, &e))
        die(toml, &e);
    char *tree = nx_tree_print(pt.tree);
    if (fam_spec_add_reduction(s, name, &pt, tree, &e))
        die(name, &e);
    free(tree);
}

/* Signed-magnitude pattern of element i as an ordered integer. */
static long long ordered(const st_tensor *t, size_t i)
{
    unsigned bits = st_dtype_bits(t->dtype);
    uint64_t u = st_get_bits(t, t->data, i), sign = (uint64_t)1 << (bits - 1);
    return (u & sign) ? -(long long)(u & (sign - 1)) : (long long)u;
}

static int is_nan(const st_tensor *t, size_t i)
{
    uint64_t u = st_get_bits(t, t->data, i);
    switch (t->dtype) {
    case ST_F32: return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
    case ST_F16: return (u & 0x7c00u) == 0x7c00u && (u & 0x3ffu);
    case ST_BF16: return (u & 0x7f80u) == 0x7f80u && (u & 0x7fu);
    default: return 0;
    }
}

/* Compares tensor `name` of got and want (rows of want: map[r] or r);
 * returns mismatches, *maxulp the greatest pattern distance. */
static size_t compare(const st_file *got, const st_file *want, const char *name, const long *map, long rows,
                      long long *maxulp, char *first, size_t flen)
{
    const st_tensor *g = st_find(got, name), *w = st_find(want, name);
    *maxulp = 0;
    if (!g || !w || g->dtype != w->dtype) {
        snprintf(first, flen, "%s: missing or of another dtype", name);
        return 1;
    }
    size_t per = rows > 0 ? (size_t)(g->nelem / (uint64_t)rows) : (size_t)g->nelem, bad = 0;
    first[0] = 0;
    for (size_t i = 0; i < g->nelem; i++) {
        size_t wi = map ? (size_t)map[i / per] * per + i % per : i;
        if (is_nan(g, i) && is_nan(w, wi))
            continue;
        uint64_t a = st_get_bits(g, g->data, i), b = st_get_bits(w, w->data, wi);
        if (a == b)
            continue;
        long long d = llabs(ordered(g, i) - ordered(w, wi));
        if (d > *maxulp)
            *maxulp = d;
        if (!bad++)
            snprintf(first, flen, "%s[%zu]: 0x%llx, want 0x%llx", name, i, (unsigned long long)a,
                     (unsigned long long)b);
    }
    return bad;
}

/* The tensors of `in` restricted to the rows map[0 .. n) of the batch
 * dimension (the first dimension of the batched tensors). */
static void take_rows(const st_file *in, const char *const *batched, const long *map, long n, st_file *out)
{
    st_init(out);
    for (size_t i = 0; i < in->ntensors; i++) {
        const st_tensor *t = &in->tensors[i];
        int b = 0;
        for (const char *const *p = batched; *p; p++)
            b |= strcmp(*p, t->name) == 0;
        int64_t shape[ST_MAX_NDIM];
        memcpy(shape, t->shape, sizeof shape);
        if (b)
            shape[0] = n;
        st_tensor *o = NULL;
        nx_err e = {0};
        if (st_add_tensor(out, t->name, t->dtype, t->ndim, shape, &o, &e))
            die("take_rows", &e);
        if (!b) {
            memcpy(o->data, t->data, t->nbytes);
            continue;
        }
        size_t row = (size_t)(t->nbytes / (uint64_t)t->shape[0]);
        for (long r = 0; r < n; r++)
            memcpy(o->data + (size_t)r * row, t->data + (size_t)map[r] * row, row);
    }
}

typedef struct gcase {
    const char *name;
    fam_spec spec;
    const char *bdim;          /* the batch dimension */
    const char *const *batched; /* input tensors with the batch as first dim */
    int exact;                  /* 0: the atom is assumed (measured, not bit-exact) */
    fam_spec *neg;              /* a negative control: the same run against this other point must differ */
} gcase;

static void run_or_die(const dev_backend *b, const fam_spec *s, const st_file *in, st_file *out, dev_mode m)
{
    dev_opts o = {m, 0, NULL};
    nx_err e = {0};
    st_init(out);
    if (dev_run(b, s, in, out, &o, &e))
        die(s->point, &e);
}

static void report(const char *cname, const char *check, size_t bad, long long maxulp, const char *first,
                   int must_match)
{
    int ok = bad == 0;
    if (!must_match) {
        const char *lim = getenv("PARITY_MEASURED_ULP");
        ok = maxulp <= (lim ? atoll(lim) : 2);
    }
    printf("%-34s %-22s %s", cname, check, bad == 0 ? "bit-exact" : ok ? "measured" : "FAIL");
    if (bad)
        printf("  (%zu mismatches, max %lld ulp; first %s)", bad, maxulp, first);
    printf("\n");
    if (!ok)
        failures++;
}

/* The atom's neighbours: the same eager run held against the gemm points a
 * port or a wrong assumption would declare instead (chain(8) or chain(16)
 * steps, atoms of 23 to 26 fraction bits, rz or rne: 16 points, the
 * declared one among them).  Each line a measurement of what the hardware
 * does.  With fp32 output (no output rounding to hide a difference) every
 * neighbour must differ, so that the declared atom is the only one of the
 * 16 the GPU reproduces; with a 16-bit output the counts are reported. */
static void hold_to_neighbours(const gcase *c, const st_file *in, const st_file *e1)
{
    const fam_spec *s = &c->spec;
    if (strcmp(s->family, "gemm") || s->nreds != 1 || s->reds[0].point.atom.frac_bits < 0)
        return;
    const char *tree = s->reds[0].tree_text, *ch = strstr(tree, "chain(");
    const char *close = ch ? strchr(ch, ')') : NULL;
    if (!ch || !close)
        return;
    int decl_g = atoi(ch + 6), decl_fb = s->reds[0].point.atom.frac_bits;
    const char *out = fam_param_get(s, "out");
    int strict = out && !strcmp(out, "fp32");
    static const int groups[] = {8, 16};
    static const char *const rnd[] = {"rz", "rne"};
    size_t exact = 0, tried = 0;
    char same[512] = "";
    for (int g = 0; g < 2; g++)
        for (int fb = 23; fb <= 26; fb++)
            for (int r = 0; r < 2; r++) {
                if (groups[g] == decl_g && fb == decl_fb && r == 0)
                    continue; /* the declared point: Tier 2 above */
                fam_spec cs;
                spec_init(&cs, s->family, s->class_name, s->point);
                for (size_t i = 0; i < s->nparams; i++)
                    param(&cs, s->params[i].name, s->params[i].value);
                char t[256], k[512];
                snprintf(t, sizeof t, "%.*schain(%d)%s", (int)(ch - tree), tree, groups[g], close + 1);
                snprintf(k, sizeof k,
                         "{ acc = \"fp32\", tree = \"%s\", atom = { frac_bits = %d, term_round = \"rz\", round = "
                         "\"%s\", acc = \"fp32\" }, out = \"fp32\" }",
                         t, fb, rnd[r]);
                red(&cs, "k", k);
                st_file ref;
                st_init(&ref);
                nx_err e = {0};
                if (ref_run(&cs, in, &ref, 0, &e))
                    die("ref_run (neighbour)", &e);
                char first[160];
                long long mu;
                size_t bad = compare(e1, &ref, "y", NULL, 0, &mu, first, sizeof first);
                tried++;
                printf("%-34s neighbour %-44s frac_bits %d round %-3s %s", c->name, t, fb, rnd[r],
                       bad ? "differs" : "bit-exact");
                if (bad)
                    printf(" (%zu mismatches, max %lld ulp)", bad, mu);
                else {
                    exact++;
                    size_t l = strlen(same);
                    snprintf(same + l, sizeof same - l, "%s%s frac_bits %d %s", l ? "; " : "", t, fb, rnd[r]);
                }
                printf("\n");
                st_free(&ref);
                fam_spec_free(&cs);
            }
    int ok = !strict || exact == 0;
    printf("%-34s %-22s %s (%zu of %zu neighbouring points differ%s%s%s)\n", c->name, "tier2 neighbours",
           ok ? (strict ? "pass" : "reported") : "FAIL", tried - exact, tried, exact ? "; the same bits: " : "", same,
           strict ? "" : "; a 16-bit output may hide a difference");
    if (!ok)
        failures++;
}

static void run_case(const dev_backend *b, gcase *c, const char *trace_dir)
{
    fam_spec *s = &c->spec;
    st_file in, ref, e1, e2, g1;
    nx_err e = {0};
    st_init(&in);
    st_init(&ref);
    ref_gen_opts go = {.seed = 20251202, .dist = NX_DIST_NORMAL, .specials = 0, .threads = 0};
    if (ref_generate(s, &go, &in, &e))
        die("ref_generate", &e);
    clock_t t0 = clock();
    if (ref_run(s, &in, &ref, 0, &e))
        die("ref_run", &e);
    double tref = (double)(clock() - t0) / CLOCKS_PER_SEC;
    run_or_die(b, s, &in, &e1, DEV_EAGER);
    run_or_die(b, s, &in, &e2, DEV_EAGER);
    run_or_die(b, s, &in, &g1, DEV_GRAPHED);
    char first[160];
    long long mu;
    size_t bad = compare(&e1, &ref, "y", NULL, 0, &mu, first, sizeof first);
    report(c->name, "tier2 vs reference", bad, mu, first, c->exact);
    hold_to_neighbours(c, &in, &e1);
    if (st_find(&ref, "residual_out")) {
        bad = compare(&e1, &ref, "residual_out", NULL, 0, &mu, first, sizeof first);
        report(c->name, "tier2 residual_out", bad, mu, first, 1);
    }
    if (c->neg) {
        /* a check that cannot fail proves nothing: against a point with
         * another atom (fewer fraction bits) the same run must differ */
        st_file ref2;
        st_init(&ref2);
        if (ref_run(c->neg, &in, &ref2, 0, &e))
            die("ref_run (negative control)", &e);
        bad = compare(&e1, &ref2, "y", NULL, 0, &mu, first, sizeof first);
        printf("%-34s %-22s %s (%zu elements differ)\n", c->name, "tier2 negative control", bad ? "pass" : "FAIL",
               bad);
        if (!bad)
            failures++;
        st_free(&ref2);
    }
    bad = compare(&e2, &e1, "y", NULL, 0, &mu, first, sizeof first);
    report(c->name, "tier1 determinism", bad, mu, first, 1);
    bad = compare(&g1, &e1, "y", NULL, 0, &mu, first, sizeof first);
    report(c->name, "tier1 eager=graphed", bad, mu, first, 1);
    /* batch variants: every row alone, then the batch reversed */
    long rows = 0;
    fam_param_long(s, c->bdim, &rows, NULL);
    char full[32];
    snprintf(full, sizeof full, "%ld", rows);
    size_t rbad = 0;
    long long rmu = 0;
    char rfirst[256] = "";
    for (long r = 0; r < rows; r++) {
        st_file ir, o;
        take_rows(&in, c->batched, &r, 1, &ir);
        param(s, c->bdim, "1");
        run_or_die(b, s, &ir, &o, DEV_EAGER);
        param(s, c->bdim, full);
        long long m1;
        char f1[160];
        size_t nb = compare(&o, &e1, "y", &r, 1, &m1, f1, sizeof f1);
        if (nb && !rbad)
            snprintf(rfirst, sizeof rfirst, "row %ld alone: %s", r, f1);
        rbad += nb;
        rmu = m1 > rmu ? m1 : rmu;
        st_free(&ir);
        st_free(&o);
    }
    report(c->name, "tier1 row alone", rbad, rmu, rfirst, 1);
    long *perm = malloc((size_t)rows * sizeof *perm);
    for (long r = 0; r < rows; r++)
        perm[r] = rows - 1 - r;
    st_file ip, op;
    take_rows(&in, c->batched, perm, rows, &ip);
    run_or_die(b, s, &ip, &op, DEV_EAGER);
    bad = compare(&op, &e1, "y", perm, rows, &mu, first, sizeof first);
    report(c->name, "tier1 batch permuted", bad, mu, first, 1);
    free(perm);
    st_free(&ip);
    st_free(&op);
    if (trace_dir) {
        char path[4096];
        dev_cuda_trace t = {.point = NULL, .run = 0, .has_seed = 1, .seed = go.seed, .dist = "normal",
                            .inputs = &in};
        dev_opts oe = {DEV_EAGER, 0, NULL}, og = {DEV_GRAPHED, 0, NULL};
        snprintf(path, sizeof path, "%s/%s.%s.eager.safetensors", trace_dir, s->family, s->point);
        if (dev_cuda_write_trace(path, s, &e1, &oe, &t, &e))
            die(path, &e);
        snprintf(path, sizeof path, "%s/%s.%s.graphed.safetensors", trace_dir, s->family, s->point);
        if (dev_cuda_write_trace(path, s, &g1, &og, &t, &e))
            die(path, &e);
    }
    printf("%-34s reference %.2f s (CPU)\n", c->name, tref);
    st_free(&in);
    st_free(&ref);
    st_free(&e1);
    st_free(&e2);
    st_free(&g1);
}

static const char *const gemm_b[] = {"a", "c", NULL};
static const char *const gemv_b[] = {"x", NULL};
static const char *const rms_b[] = {"x", "residual", NULL};
static const char *const attn_b[] = {"q", "block_table", "context_lens", NULL};

static void gemm_case(gcase *c, const char *cls, const char *name, const char *in, const char *out, long M, long N,
                      long K, const char *tree, int epilogue)
{
    char v[32], k[512];
    spec_init(&c->spec, "gemm", cls, name);
    c->name = name;
    c->bdim = "M";
    c->batched = gemm_b;
    c->exact = 1; /* Hopper's mma.sync atom: measured (devices/cuda/POINTS.md) */
    c->spec.kernel = strdup("cuda_gemm_mma"); /* on sm90 wgmma serves the same points first */
    snprintf(v, sizeof v, "%ld", M);
    param(&c->spec, "M", v);
    snprintf(v, sizeof v, "%ld", N);
    param(&c->spec, "N", v);
    snprintf(v, sizeof v, "%ld", K);
    param(&c->spec, "K", v);
    param(&c->spec, "in", in);
    param(&c->spec, "out", out);
    if (epilogue) {
        param(&c->spec, "alpha", "0.75");
        param(&c->spec, "beta", "0.5");
        param(&c->spec, "bias", "true");
    }
    snprintf(k, sizeof k, "{ acc = \"fp32\", tree = \"%s\", atom = %s, out = \"fp32\" }", tree,
             cu_claim_atom(cls, in));
    red(&c->spec, "k", k);
}

int main(void)
{
    const dev_backend *b = dev_cuda_backend();
    char why[256];
    if (!dev_available(b, why, sizeof why)) {
        printf("skipped: %s\n", why);
        return 77;
    }
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    printf("device: %s, %d SMs, compute capability %d.%d, class %s, driver %s, runtime %s, nvcc %s\n", info.sku,
           info.sm_count, info.cc_major, info.cc_minor, info.class_name[0] ? info.class_name : "(none)", info.driver,
           info.runtime, info.nvcc);
    if (!info.class_name[0]) {
        printf("skipped: no kernels for compute capability %d.%d\n", info.cc_major, info.cc_minor);
        return 77;
    }
    const char *cls = info.class_name, *trace_dir = getenv("PARITY_TRACE_DIR");
    gcase cs[16];
    memset(cs, 0, sizeof cs);
    size_t n = 0;
    /* the mma.sync step: two 8-term atoms per k16 on sm80 and sm89, one
     * 16-term atom on sm90 (measured) */
    int g = strcmp(cls, "sm90") ? 8 : 16;
    static char t_chain[32], t_split3[64], t_split4[64], t_neg[256];
    snprintf(t_chain, sizeof t_chain, "chain(%d)", g);
    snprintf(t_split3, sizeof t_split3, "split(3, chain(%d), seq, align=32)", g);
    snprintf(t_split4, sizeof t_split4, "split(4, chain(%d), seq)", g);
    gemm_case(&cs[n++], cls, "gemm_chain_bf16", "bf16", "bf16", 5, 40, 200, t_chain, 0);
    static fam_spec neg;
    spec_init(&neg, "gemm", cls, "gemm_chain_bf16_frac20");
    param(&neg, "M", "5");
    param(&neg, "N", "40");
    param(&neg, "K", "200");
    param(&neg, "in", "bf16");
    param(&neg, "out", "fp32"); /* the k result itself: no bf16 rounding to hide the difference */
    snprintf(t_neg, sizeof t_neg,
             "{ acc = \"fp32\", tree = \"chain(%d)\", atom = { frac_bits = 20, term_round = \"rz\", round = "
             "\"rz\", acc = \"fp32\" }, out = \"fp32\" }",
             g);
    red(&neg, "k", t_neg);
    cs[0].neg = &neg;
    param(&cs[0].spec, "out", "fp32");
    gemm_case(&cs[n++], cls, "gemm_split3_bf16", "bf16", "bf16", 17, 300, 1000, t_split3, 1);
    gemm_case(&cs[n++], cls, "gemm_split4_fp16", "fp16", "fp16", 16, 512, 4096, t_split4, 0);
    if (!strcmp(cls, "sm90")) { /* the wgmma kernel: Hopper's published atom, bit-exact */
        const char *wg = "{ acc = \"fp32\", tree = \"%s\", atom = \"sm90.wgmma.%s\", out = \"fp32\" }";
        const char *trees[] = {"split(4, chain(16), seq, align=64)", "chain(16)"};
        const char *names[] = {"gemm_wgmma_split4_bf16", "gemm_wgmma_fp16"};
        for (int i = 0; i < 2; i++) {
            gcase *w = &cs[n++];
            char k[256];
            spec_init(&w->spec, "gemm", cls, names[i]);
            w->name = names[i];
            w->bdim = "M";
            w->batched = gemm_b;
            w->exact = 1;
            w->spec.kernel = strdup("cuda_gemm_wgmma");
            param(&w->spec, "M", i ? "70" : "16");
            param(&w->spec, "N", i ? "100" : "512");
            param(&w->spec, "K", i ? "333" : "4096");
            param(&w->spec, "in", i ? "fp16" : "bf16");
            param(&w->spec, "out", i ? "fp32" : "bf16");
            snprintf(k, sizeof k, wg, trees[i], i ? "f16" : "bf16");
            red(&w->spec, "k", k);
        }
    }

    gcase *c = &cs[n++];
    spec_init(&c->spec, "gemv_w4a16", cls, "gemv_dequant");
    c->name = "gemv_dequant";
    c->bdim = "B";
    c->batched = gemv_b;
    c->exact = 1;
    param(&c->spec, "B", "3");
    param(&c->spec, "N", "70");
    param(&c->spec, "K", "512");
    param(&c->spec, "group", "128");
    param(&c->spec, "zero_points", "true");
    param(&c->spec, "scale_apply", "per_element");
    red(&c->spec, "k", "{ acc = \"fp32\", tree = \"stride(32, seq, halving, block=8)\", out = \"fp16\" }");

    c = &cs[n++];
    spec_init(&c->spec, "gemv_w4a16", cls, "gemv_dequant_split");
    c->name = "gemv_dequant_split";
    c->bdim = "B";
    c->batched = gemv_b;
    c->exact = 1;
    param(&c->spec, "B", "4");
    param(&c->spec, "N", "33");
    param(&c->spec, "K", "1024");
    param(&c->spec, "group", "64");
    param(&c->spec, "scale_apply", "per_element");
    red(&c->spec, "k",
        "{ acc = \"fp32\", tree = \"split(3, stride(32, seq, halving, block=8), seq, align=8)\", out = \"fp16\" }");

    c = &cs[n++];
    spec_init(&c->spec, "gemv_w4a16", cls, "gemv_grouped_split");
    c->name = "gemv_grouped_split";
    c->bdim = "B";
    c->batched = gemv_b;
    c->exact = 1;
    param(&c->spec, "B", "2");
    param(&c->spec, "N", "65");
    param(&c->spec, "K", "8192");
    param(&c->spec, "group", "128");
    param(&c->spec, "zero_points", "true");
    param(&c->spec, "scale_apply", "per_group");
    red(&c->spec, "group", "{ acc = \"fp32\", tree = \"seq\" }");
    red(&c->spec, "k", "{ acc = \"fp32\", tree = \"split(2, stride(32, seq, halving), seq)\", out = \"fp16\" }");

    c = &cs[n++];
    spec_init(&c->spec, "rmsnorm", cls, "rmsnorm_residual");
    c->name = "rmsnorm_residual";
    c->bdim = "T";
    c->batched = rms_b;
    c->exact = 1;
    param(&c->spec, "T", "4");
    param(&c->spec, "H", "1000");
    param(&c->spec, "residual", "true");
    red(&c->spec, "sumsq", "{ acc = \"fp32\", tree = \"stride(256, seq, halving, block=8)\" }");

    c = &cs[n++];
    spec_init(&c->spec, "rmsnorm", cls, "rmsnorm_fp16");
    c->name = "rmsnorm_fp16";
    c->bdim = "T";
    c->batched = rms_b;
    c->exact = 1;
    param(&c->spec, "T", "3");
    param(&c->spec, "H", "4096");
    param(&c->spec, "in", "fp16");
    red(&c->spec, "sumsq", "{ acc = \"fp32\", tree = \"stride(128, seq, halving)\" }");

    const char *splits[] = {"0", "64"};
    const char *names[] = {"attention_nosplit", "attention_split64"};
    for (int i = 0; i < 2; i++) {
        c = &cs[n++];
        spec_init(&c->spec, "paged_decode_attention", cls, names[i]);
        c->name = names[i];
        c->bdim = "B";
        c->batched = attn_b;
        c->exact = 1;
        const char *dims[][2] = {{"B", "3"}, {"HQ", "8"}, {"HKV", "2"}, {"D", "64"}, {"P", "16"}, {"NP", "32"},
                                 {"MAXP", "16"}};
        for (size_t d = 0; d < 7; d++)
            param(&c->spec, dims[d][0], dims[d][1]);
        param(&c->spec, "split", splits[i]);
        red(&c->spec, "qk", "{ tree = \"seq\" }");
        red(&c->spec, "softmax_sum", "{ tree = \"stride(128, seq, halving)\" }");
        red(&c->spec, "pv", "{ tree = \"seq\", out = \"bf16\" }");
        if (i)
            red(&c->spec, "combine", "{ tree = \"seq\" }");
        fam_spec_add_elem(&c->spec, "exp", FAM_ELEM_CR, NULL, 0, NULL);
    }

    for (size_t i = 0; i < n; i++) {
        if (!dev_supports(b, &cs[i].spec, NULL)) {
            cu_plan p;
            nx_err e = {0};
            cu_plan_make(&cs[i].spec, NULL, cls, &p, &e);
            printf("%-34s FAIL: not supported: %s\n", cs[i].name, e.msg);
            failures++;
            continue;
        }
        run_case(b, &cs[i], trace_dir);
        fam_spec_free(&cs[i].spec);
    }
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
