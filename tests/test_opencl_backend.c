/* test_opencl_backend.c LIB.so [--probe]: libparity_opencl.so through its C ABI
 * alone (dlopen, parity_backend_v1), the way parity's library host loads
 * it.  Exit 77 (a skip, said on stdout) when no OpenCL platform or device
 * is present (--probe: only that, exit 0 when one is).
 *
 * Expected values never come from the library: the worked examples of
 * docs/numerics.md §3 and docs/families.md (softmax) as written there, and
 * gemm / rmsnorm rows reduced here in C by the declared trees, written
 * out loop by loop (the build has -ffp-contract=off: every fmaf is one
 * rounding, every other operation its own). */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity_backend.h"

static int failures;
#define CHECK(c, ...)                                                                                                  \
    do {                                                                                                               \
        if (!(c)) {                                                                                                    \
            failures++;                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

static const parity_backend *B;

/* ---- a minimal host --------------------------------------------------------------------- */

typedef struct out_t {
    char name[32], dtype[8];
    int64_t n;
    void *data;
} out_t;

static out_t outs[4];
static int nouts;

static void *host_output(parity_run *r, const char *name, const char *dtype, int ndim, const int64_t *shape)
{
    (void)r;
    if (nouts >= 4)
        return NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    size_t esz = strcmp(dtype, "F32") ? 2 : 4;
    out_t *o = &outs[nouts++];
    snprintf(o->name, sizeof o->name, "%s", name);
    snprintf(o->dtype, sizeof o->dtype, "%s", dtype);
    o->n = n;
    o->data = calloc((size_t)(n ? n : 1), esz);
    return o->data;
}

static void outs_free(void)
{
    for (int i = 0; i < nouts; i++)
        free(outs[i].data);
    nouts = 0;
}

static out_t *out_get(const char *name)
{
    for (int i = 0; i < nouts; i++)
        if (!strcmp(outs[i].name, name))
            return &outs[i];
    return NULL;
}

typedef struct pt {
    parity_point p;
    parity_kv params[16], reds[2];
} pt;

static void pt_init(pt *t, const char *family, const char *point, const char *kernel, const char *red,
                    const char *tree)
{
    memset(t, 0, sizeof *t);
    t->p.family = family;
    t->p.point = point;
    t->p.class_name = "opencl";
    t->p.kernel = kernel;
    t->p.hash = "";
    t->p.params = t->params;
    t->p.reductions = t->reds;
    t->reds[0].key = red;
    t->reds[0].value = tree;
    t->p.nreductions = 1;
}

static void pt_set(pt *t, const char *k, const char *v)
{
    t->params[t->p.nparams].key = k;
    t->params[t->p.nparams].value = v;
    t->p.nparams++;
}

static int run(pt *t, const char *kernel, parity_tensor *in, size_t nin, char *err, size_t len)
{
    outs_free();
    parity_run r;
    memset(&r, 0, sizeof r);
    r.abi = PARITY_BACKEND_ABI;
    r.point = &t->p;
    r.kernel = kernel;
    r.inputs = in;
    r.ninputs = nin;
    r.output = host_output;
    int rc = B->run(&r);
    snprintf(err, len, "%s", r.error);
    return rc;
}

static parity_tensor tensor(const char *name, const char *dtype, int ndim, int64_t d0, int64_t d1, void *data)
{
    parity_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.data = data;
    t.nbytes = (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1) * (strcmp(dtype, "F32") ? 2 : 4);
    return t;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bf16f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* fp32 -> bf16 in rne, written here independently: the exact value's
 * neighbours compared with the midpoint in binary64. */
static uint16_t bf16_rne(float f)
{
    if (isnan(f))
        return 0x7fc0;
    uint16_t lo = (uint16_t)(fbits(f) >> 16), hi = (uint16_t)(lo + 1);
    double d = fabs((double)f), a = fabs((double)bf16f(lo)), b = fabs((double)bf16f(hi));
    if ((fbits(f) & 0xffffu) == 0)
        return lo;
    if (d - a < b - d)
        return lo;
    if (d - a > b - d)
        return hi;
    return (lo & 1) ? hi : lo;
}

/* a small deterministic generator of bf16 values in about [-2, 2] */
static uint32_t lcg = 12345;
static uint16_t rnd_bf16(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    float v = (float)((int32_t)(lcg >> 8) - (1 << 23)) / (float)(1 << 22);
    return (uint16_t)(fbits(v) >> 16); /* truncation: any bf16 value will do */
}

/* ---- gemm -------------------------------------------------------------------------------- */

static float pairwise_ref(const float *v, size_t n)
{
    if (n == 0)
        return 0.0f;
    if (n == 1)
        return v[0];
    size_t h = (n + 1) / 2;
    return pairwise_ref(v, h) + pairwise_ref(v + h, n - h);
}

static float ref_dot(const char *tree, const float *a, const float *b, size_t K, size_t S, size_t V)
{
    if (!strcmp(tree, "seq")) {
        float s = 0.0f;
        for (size_t i = 0; i < K; i++)
            s = fmaf(a[i], b[i], s);
        return s;
    }
    if (!strcmp(tree, "seq_nofma")) {
        float s = 0.0f;
        for (size_t i = 0; i < K; i++) {
            float p = a[i] * b[i];
            s = s + p;
        }
        return s;
    }
    if (!strcmp(tree, "halving")) { /* stride(V, seq, halving) */
        float lane[256];
        for (size_t l = 0; l < V; l++) {
            lane[l] = 0.0f;
            for (size_t i = l; i < K; i += V)
                lane[l] = fmaf(a[i], b[i], lane[l]);
        }
        for (size_t o = V / 2; o >= 1; o /= 2)
            for (size_t j = 0; j < o; j++)
                lane[j] = lane[j] + lane[j + o];
        return lane[0];
    }
    /* split(S, stride(V, seq, pairwise), seq) */
    size_t c = (K + S - 1) / S;
    float s = 0.0f;
    for (size_t k = 0; k < S; k++) {
        size_t lo = k * c < K ? k * c : K, hi = lo + c < K ? lo + c : K;
        float lane[64];
        for (size_t l = 0; l < V; l++) {
            lane[l] = 0.0f;
            for (size_t i = lo + l; i < hi; i += V)
                lane[l] = fmaf(a[i], b[i], lane[l]);
        }
        s = s + pairwise_ref(lane, V);
    }
    return s;
}

static void test_gemm_examples(void)
{
    /* docs/numerics.md §3: terms (-1)(1) and (1 + 2^-12)^2, tree seq */
    float a[2] = {-1.0f, 1.0f + 0x1p-12f}, b[2] = {1.0f, 1.0f + 0x1p-12f};
    parity_tensor in[2] = {tensor("a", "F32", 2, 1, 2, a), tensor("b", "F32", 2, 1, 2, b)};
    const char *kern[2] = {"ocl_gemm_seq", "ocl_gemm_seq_nofma"};
    uint32_t want[2] = {0x3a000400u, 0x3a000000u};
    for (int i = 0; i < 2; i++) {
        pt t;
        char err[512];
        pt_init(&t, "gemm", "seq", kern[i], "k", "seq");
        pt_set(&t, "M", "1");
        pt_set(&t, "N", "1");
        pt_set(&t, "K", "2");
        pt_set(&t, "in", "fp32");
        pt_set(&t, "out", "fp32");
        CHECK(B->supports(&t.p, NULL), "%s supports seq", kern[i]);
        int rc = run(&t, NULL, in, 2, err, sizeof err);
        CHECK(rc == 0, "%s: %s", kern[i], err);
        out_t *y = out_get("y");
        CHECK(y && !strcmp(y->dtype, "F32") && y->n == 1, "%s: y", kern[i]);
        if (y) {
            uint32_t got;
            memcpy(&got, y->data, 4);
            CHECK(got == want[i], "%s: numerics.md's fma example: 0x%08x, want 0x%08x", kern[i], got, want[i]);
        }
    }
}

static void test_gemm_trees(void)
{
    enum { M = 3, N = 5, K = 203 };
    static uint16_t a[M * K], b[N * K];
    static float af[M * K], bfl[N * K];
    for (int i = 0; i < M * K; i++)
        af[i] = bf16f(a[i] = rnd_bf16());
    for (int i = 0; i < N * K; i++)
        bfl[i] = bf16f(b[i] = rnd_bf16());
    parity_tensor in[2] = {tensor("a", "BF16", 2, M, K, a), tensor("b", "BF16", 2, N, K, b)};
    struct {
        const char *kernel, *point, *tree, *ref, *split, *vec, *wg, *out;
        size_t S, V;
    } cases[] = {
        {"ocl_gemm_seq", "seq", "seq", "seq", NULL, NULL, NULL, "fp32", 1, 1},
        {"ocl_gemm_seq_nofma", "seq_nofma", "seq", "seq_nofma", NULL, NULL, NULL, "fp32", 1, 1},
        {"ocl_gemm_splitk", "splitk", "split(4, stride(8, seq, pairwise), seq)", "split", "4", "8", NULL, "fp32", 4, 8},
        {"ocl_gemm_splitk_legacy", "splitk", "split(4, stride(8, seq, pairwise), seq)", "split", "4", "8", NULL, "fp32", 4,
         8},
        {"ocl_gemm_splitk", "splitk", "split(3, stride(4, seq, pairwise), seq)", "split", "3", "4", NULL, "bf16", 3, 4},
        {"ocl_gemm_splitk", "splitk", "split(64, stride(8, seq, pairwise), seq)", "split", "64", "8", NULL, "fp32", 64, 8},
        {"ocl_gemm_wg", "wg", "stride(32, seq, halving)", "halving", NULL, NULL, "32", "fp32", 1, 32},
        {"ocl_gemm_wg", "wg", "stride(256, seq, halving)", "halving", NULL, NULL, "256", "bf16", 1, 256},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        pt t;
        char err[512];
        pt_init(&t, "gemm", cases[c].point, cases[c].kernel, "k", cases[c].tree);
        pt_set(&t, "M", "3");
        pt_set(&t, "N", "5");
        pt_set(&t, "K", "203");
        pt_set(&t, "out", cases[c].out);
        if (cases[c].split)
            pt_set(&t, "split_k", cases[c].split);
        if (cases[c].vec)
            pt_set(&t, "vec", cases[c].vec);
        if (cases[c].wg)
            pt_set(&t, "wg", cases[c].wg);
        CHECK(B->supports(&t.p, NULL) == 1, "%s supports %s", cases[c].kernel, cases[c].tree);
        CHECK(!B->check_params || B->check_params(&t.p, NULL, err, sizeof err) == 0, "%s: check_params: %s",
              cases[c].kernel, err);
        int rc = run(&t, NULL, in, 2, err, sizeof err);
        CHECK(rc == 0, "%s %s: %s", cases[c].kernel, cases[c].tree, err);
        out_t *y = out_get("y");
        if (rc || !y)
            continue;
        int bad = 0, f32 = !strcmp(cases[c].out, "fp32");
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float r = ref_dot(cases[c].ref, af + m * K, bfl + n * K, K, cases[c].S, cases[c].V);
                uint32_t want = f32 ? fbits(r) : bf16_rne(r), got;
                if (f32)
                    memcpy(&got, (uint32_t *)y->data + m * N + n, 4);
                else
                    got = ((uint16_t *)y->data)[m * N + n];
                if (got != want && bad++ < 3)
                    printf("  %s %s: y[%d, %d] = 0x%x, want 0x%x\n", cases[c].kernel, cases[c].tree, m, n, got, want);
            }
        CHECK(bad == 0, "%s %s: %d outputs differ", cases[c].kernel, cases[c].tree, bad);
    }
}

static void test_gemm_refusals(void)
{
    pt t;
    char why[512] = "";
    /* the declared tree is not the kernel's */
    pt_init(&t, "gemm", "splitk", "ocl_gemm_splitk", "k", "split(4, stride(8, seq, pairwise), seq)");
    pt_set(&t, "split_k", "2");
    pt_set(&t, "M", "1");
    pt_set(&t, "N", "1");
    pt_set(&t, "K", "8");
    CHECK(B->supports(&t.p, NULL) == 0, "split_k = 2 with a split(4, ...) tree: supported");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "split(2"), "tree mismatch: '%s'", why);
    /* a vec the kernel cannot do, named */
    pt_init(&t, "gemm", "splitk", "ocl_gemm_splitk", "k", "split(4, stride(6, seq, pairwise), seq)");
    pt_set(&t, "split_k", "4");
    pt_set(&t, "vec", "6");
    pt_set(&t, "M", "1");
    pt_set(&t, "N", "1");
    pt_set(&t, "K", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'vec'"), "vec = 6: '%s'", why);
    pt_init(&t, "gemm", "wg", "ocl_gemm_wg", "k", "stride(24, seq, halving)");
    pt_set(&t, "wg", "24");
    pt_set(&t, "M", "1");
    pt_set(&t, "N", "1");
    pt_set(&t, "K", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'wg'"), "wg = 24: '%s'", why);
    pt_init(&t, "gemm", "seq", "ocl_gemm_seq", "k", "seq");
    pt_set(&t, "in", "e4m3");
    pt_set(&t, "M", "1");
    pt_set(&t, "N", "1");
    pt_set(&t, "K", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'in'"), "in = e4m3: '%s'", why);
    pt_init(&t, "gemm", "seq", "ocl_no_such_kernel", "k", "seq");
    CHECK(B->supports(&t.p, NULL) == 0, "an unknown kernel: supported");
    pt_init(&t, "rmsnorm", "seq", "ocl_gemm_seq", "sumsq", "seq");
    CHECK(B->supports(&t.p, NULL) == 0, "a gemm kernel for rmsnorm: supported");
    /* bad inputs are errors, not crashes */
    pt_init(&t, "gemm", "seq", "ocl_gemm_seq", "k", "seq");
    pt_set(&t, "M", "2");
    pt_set(&t, "N", "2");
    pt_set(&t, "K", "4");
    uint16_t buf[8] = {0};
    parity_tensor in[2] = {tensor("a", "BF16", 2, 2, 4, buf), tensor("b", "BF16", 2, 2, 3, buf)};
    int rc = run(&t, NULL, in, 2, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "'b'"), "b of shape [2, 3]: rc %d, '%s'", rc, why);
    rc = run(&t, NULL, in, 1, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "'b' missing"), "no b: rc %d, '%s'", rc, why);
    in[1] = tensor("b", "F16", 2, 2, 4, buf);
    rc = run(&t, NULL, in, 2, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "'b'"), "b in F16: rc %d, '%s'", rc, why);
    pt_init(&t, "gemm", "seq", "ocl_gemm_seq", "k", "seq");
    pt_set(&t, "M", "x");
    pt_set(&t, "N", "2");
    pt_set(&t, "K", "4");
    rc = run(&t, NULL, in, 2, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "'M'"), "M = x: rc %d, '%s'", rc, why);
    outs_free();
}

/* ---- softmax and rmsnorm ---------------------------------------------------------------- */

static void test_softmax_examples(void)
{
    /* docs/families.md, softmax: fp32, sum = seq (stride(1, seq, pairwise) is seq) */
    float x[5] = {1.0f, 0.5f, -0.25f, 2.0f, -3.0f};
    float want[5] = {0x1.ba5e2p-3f, 0x1.0c4f4p-3f, 0x1.faf63ap-5f, 0x1.2c9eb8p-1f, 0x1.03459ap-8f};
    parity_tensor in[1] = {tensor("x", "F32", 2, 1, 5, x)};
    pt t;
    char err[512];
    pt_init(&t, "softmax", "plain", "ocl_softmax", "sum", "stride(1, seq, pairwise)");
    pt_set(&t, "T", "1");
    pt_set(&t, "H", "5");
    pt_set(&t, "vec", "1");
    pt_set(&t, "in", "fp32");
    int rc = run(&t, NULL, in, 1, err, sizeof err);
    CHECK(rc == 0, "softmax fp32: %s", err);
    out_t *y = out_get("y");
    for (int i = 0; !rc && y && i < 5; i++) {
        uint32_t got;
        memcpy(&got, (uint32_t *)y->data + i, 4);
        CHECK(got == fbits(want[i]), "families.md softmax example: y[%d] = 0x%08x, want 0x%08x", i, got,
              fbits(want[i]));
    }
    /* bf16: {0, -inf, 0, -inf, 0} gives {0x3eab, 0, 0x3eab, 0, 0x3eab} under any tree */
    uint16_t xb[5] = {0x0000, 0xff80, 0x0000, 0xff80, 0x0000}, wantb[5] = {0x3eab, 0, 0x3eab, 0, 0x3eab};
    in[0] = tensor("x", "BF16", 2, 1, 5, xb);
    pt_init(&t, "softmax", "plain", "ocl_softmax", "sum", "stride(8, seq, pairwise)");
    pt_set(&t, "T", "1");
    pt_set(&t, "H", "5");
    rc = run(&t, NULL, in, 1, err, sizeof err);
    CHECK(rc == 0, "softmax bf16: %s", err);
    y = out_get("y");
    for (int i = 0; !rc && y && i < 5; i++)
        CHECK(((uint16_t *)y->data)[i] == wantb[i], "families.md bf16 example: y[%d] = 0x%04x, want 0x%04x", i,
              ((uint16_t *)y->data)[i], wantb[i]);
    /* a row of -inf only, and a row with a NaN: NaN everywhere (canonical 0x7fc0) */
    uint16_t xn[10] = {0xff80, 0xff80, 0xff80, 0xff80, 0xff80, 0x3f80, 0x7fc1, 0, 0, 0};
    in[0] = tensor("x", "BF16", 2, 2, 5, xn);
    t.params[0].value = "2"; /* T */
    rc = run(&t, NULL, in, 1, err, sizeof err);
    CHECK(rc == 0, "softmax specials: %s", err);
    y = out_get("y");
    for (int i = 0; !rc && y && i < 10; i++)
        CHECK(((uint16_t *)y->data)[i] == 0x7fc0, "specials: y[%d] = 0x%04x, want 0x7fc0", i, ((uint16_t *)y->data)[i]);
    outs_free();
}

static void test_rmsnorm(void)
{
    enum { T = 3, H = 37 };
    static uint16_t x[T * H], w[H], res[T * H];
    for (int i = 0; i < T * H; i++)
        x[i] = rnd_bf16(), res[i] = rnd_bf16();
    for (int i = 0; i < H; i++)
        w[i] = rnd_bf16();
    for (int fused = 0; fused < 2; fused++) {
        parity_tensor in[3] = {tensor("x", "BF16", 2, T, H, x), tensor("weight", "BF16", 1, H, 0, w),
                               tensor("residual", "BF16", 2, T, H, res)};
        pt t;
        char err[512];
        pt_init(&t, "rmsnorm", fused ? "fused_add" : "plain", fused ? "ocl_fused_add_rmsnorm" : "ocl_rmsnorm", "sumsq",
                "stride(8, seq, pairwise)");
        pt_set(&t, "T", "3");
        pt_set(&t, "H", "37");
        if (fused)
            pt_set(&t, "residual", "true");
        int rc = run(&t, NULL, in, fused ? 3 : 2, err, sizeof err);
        CHECK(rc == 0, "rmsnorm: %s", err);
        out_t *y = out_get("y"), *ro = out_get("residual_out");
        CHECK(y && (!fused || ro), "rmsnorm outputs");
        if (rc || !y || (fused && !ro))
            continue;
        int bad = 0;
        for (int r = 0; r < T; r++) {
            float xr[H], lane[8] = {0};
            for (int i = 0; i < H; i++) {
                xr[i] = bf16f(x[r * H + i]);
                if (fused) {
                    float s = xr[i] + bf16f(res[r * H + i]);
                    xr[i] = bf16f(bf16_rne(s));
                    if (((uint16_t *)ro->data)[r * H + i] != bf16_rne(s) && bad++ < 3)
                        printf("  residual_out[%d, %d]\n", r, i);
                }
                lane[i % 8] = fmaf(xr[i], xr[i], lane[i % 8]);
            }
            float ss = pairwise_ref(lane, 8), ms = ss / (float)H, v = ms + 0x1.0c6f7ap-20f /* fp32(1e-6) */;
            /* rsqrt correctly rounded: the fp32 neighbour of 1/sqrt(v) whose square times v is nearest 1,
             * decided here in long double (64 bits: the products of a 24-bit candidate are exact) */
            float c = (float)(1.0 / sqrt((double)v)), best = c;
            long double bestd = 1e30L;
            for (int d = -2; d <= 2; d++) {
                uint32_t u = fbits(c) + (uint32_t)d;
                float f;
                memcpy(&f, &u, 4);
                long double e = fabsl((long double)f - 1.0L / sqrtl((long double)v));
                if (e < bestd)
                    bestd = e, best = f;
            }
            for (int i = 0; i < H; i++) {
                float t1 = xr[i] * best, t2 = t1 * bf16f(w[i]);
                uint16_t want = bf16_rne(t2), got = ((uint16_t *)y->data)[r * H + i];
                if (got != want && bad++ < 3)
                    printf("  rmsnorm y[%d, %d] = 0x%04x, want 0x%04x\n", r, i, got, want);
            }
        }
        CHECK(bad == 0, "rmsnorm (fused %d): %d differ", fused, bad);
    }
    /* residual mismatch and a vec the kernel cannot do, named */
    pt t;
    char why[512] = "";
    pt_init(&t, "rmsnorm", "plain", "ocl_fused_add_rmsnorm", "sumsq", "stride(8, seq, pairwise)");
    pt_set(&t, "T", "1");
    pt_set(&t, "H", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'residual'"), "residual: '%s'", why);
    pt_init(&t, "rmsnorm", "plain", "ocl_rmsnorm", "sumsq", "stride(5, seq, pairwise)");
    pt_set(&t, "vec", "5");
    pt_set(&t, "T", "1");
    pt_set(&t, "H", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'vec'"), "vec = 5: '%s'", why);
    pt_init(&t, "rmsnorm", "plain", "ocl_rmsnorm", "sumsq", "stride(8, seq, pairwise)");
    pt_set(&t, "eps", "-1");
    pt_set(&t, "T", "1");
    pt_set(&t, "H", "8");
    CHECK(B->check_params(&t.p, NULL, why, sizeof why) != 0 && strstr(why, "'eps'"), "eps = -1: '%s'", why);
    outs_free();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_opencl_backend LIB.so [--probe]\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    parity_backend_entry entry;
    *(void **)&entry = dlsym(h, PARITY_BACKEND_SYMBOL);
    if (!entry || !(B = entry()) || B->abi != PARITY_BACKEND_ABI) {
        printf("FAIL: %s: no %s, or another ABI\n", argv[1], PARITY_BACKEND_SYMBOL);
        return 1;
    }
    CHECK(!strcmp(B->name, "opencl") && B->threaded == 0, "name '%s', threaded %d", B->name, B->threaded);
    char why[512] = "";
    if (!B->available(why, sizeof why)) {
        if (strstr(why, "no OpenCL platform") || strstr(why, "no OpenCL device")) {
            printf("SKIP: %s\n", why);
            return 77;
        }
        printf("FAIL: unavailable: %s\n", why);
        return 1;
    }
    if (argc > 2 && !strcmp(argv[2], "--probe")) /* tests/opencl_campaign.sh: is there a device? */
        return 0;
    char json[4096];
    CHECK(B->describe(json, sizeof json) == 0, "describe");
    const char *keys[] = {"\"platform\"", "\"platform_version\"", "\"device\"", "\"driver\"", "\"opencl_c\"",
                          "-cl-fp32-correctly-rounded-divide-sqrt"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK(strstr(json, keys[i]), "describe has no %s: %s", keys[i], json);
    CHECK(!strstr(json, "fast-relaxed"), "fast math in the build options: %s", json);
    CHECK(B->describe(json, 16) != 0, "describe into 16 bytes succeeded");
    printf("device: %s\n", json);
    test_gemm_examples();
    test_gemm_trees();
    test_gemm_refusals();
    test_softmax_examples();
    test_rmsnorm();
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
