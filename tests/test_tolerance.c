/* test_tolerance.c: the derived bound of whole families (refimpl/ref_bound.c,
 * docs/tolerance.md) holds and is not vacuous.
 *
 * For pairs of points of one family (gemm split-K 4 vs 8, seq vs a Hopper
 * atom chain, bf16 vs fp32 accumulation, an `atomic` split; the MoE expert
 * GEMM and combine; gemv per-element vs per-group scales; rmsnorm's sum of
 * squares; silu_and_mul; paged attention without and with splits) on
 * adversarial inputs (all the same sign, heavy
 * cancellation, exponents over a wide range, tiny and huge terms mixed):
 *
 *  - each point's output y (the reference, refimpl) is within its bound of
 *    the family's exact value y*, computed here independently: exact
 *    rationals (GMP mpq) for the families of sums of products, MPFR at 400
 *    bits for rmsnorm's square root, silu's and the softmax's exp;
 *  - |y_P - y_Q| <= bound_P + bound_Q, decided exactly (mpq);
 *  - on the same-sign inputs, the bound is at most TIGHT_FACTOR times the
 *    error it bounds on the element where the bound is used most (the
 *    factor measured for each case is printed with PARITY_VERBOSE=1; the
 *    worst is printed always).
 *
 * PARITY_SEED overrides the seed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_bound.h"
#include "nx_engine.h"
#include "nx_round_fast.h"
#include "point_toml.h"
#include "refimpl.h"
#include "rows.h"
#include "testutil.h"

/* On same-sign inputs the bound is within this factor of the largest
 * observed error (bound / error on the element the bound is used most). */
#define TIGHT_FACTOR 64.0

enum { SAME_SIGN, CANCEL, WIDE, MIXED, NKINDS };
static const char *const kind_names[NKINDS] = {"same-sign", "cancellation", "wide-exponent", "tiny+huge"};

static uint64_t rng;

static double unif(void)
{
    return (double)(tu_rand64(&rng) >> 11) * 0x1p-53;
}

/* One value of format f for input kind k (index i: cancellation pairs). */
static double draw(int k, nx_fmt f, size_t i, double prev)
{
    double v;
    switch (k) {
    case SAME_SIGN:
        v = 1 + unif(); /* long mantissas, all positive */
        break;
    case CANCEL:
        if (i % 2 == 1 && unif() < 0.9)
            return -prev; /* x, -x: the exact sum is small */
        v = (unif() < 0.5 ? -1 : 1) * ldexp(1 + unif(), (int)(tu_rand64(&rng) % 9) - 4);
        break;
    case WIDE:
        v = (unif() < 0.5 ? -1 : 1) * ldexp(1 + unif(), (int)(tu_rand64(&rng) % 41) - 20);
        break;
    default:
        v = (unif() < 0.5 ? -1 : 1) * ldexp(1 + unif(), unif() < 0.5 ? 14 : -14);
        break;
    }
    return nx_round_fast(v, f, NX_RNE, 0);
}

static void add_tensor(st_file *f, const char *name, nx_fmt fmt, int ndim, const int64_t *shape, const double *v)
{
    st_tensor *t;
    nx_err e = {0};
    assert_int_equal(st_add_tensor(f, name, rows_dtype_of_fmt(fmt), ndim, shape, &t, &e), NX_OK);
    if (rows_encode(fmt, v, t->nelem, t, t->data, &e) != NX_OK)
        fail_msg("encode %s: %s", name, e.msg);
}

static double *vals(int k, nx_fmt f, size_t n)
{
    double *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = draw(k, f, i, i ? v[i - 1] : 0);
    return v;
}

static double *decode_all(const st_file *f, const char *name)
{
    const st_tensor *t = st_find(f, name);
    assert_non_null(t);
    double *v = malloc((t->nelem ? t->nelem : 1) * sizeof *v);
    assert_non_null(v);
    nx_err e = {0};
    assert_int_equal(rows_decode(t, v, &e), NX_OK);
    return v;
}

/* --- specs ------------------------------------------------------------------------- */

static void spec_init(fam_spec *s, const char *family, const char *point)
{
    memset(s, 0, sizeof *s);
    s->family = strdup(family);
    s->point = strdup(point);
    s->class_name = strdup("cpu");
}

static void param(fam_spec *s, const char *k, const char *v)
{
    assert_int_equal(fam_spec_set_param(s, k, v, NULL), NX_OK);
}

static void red(fam_spec *s, const char *name, const char *toml)
{
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(toml, name, &pt, &e) != NX_OK)
        fail_msg("point %s: %s", toml, e.msg);
    assert_int_equal(fam_spec_add_reduction(s, name, &pt, toml, NULL), NX_OK);
}

static void params(fam_spec *s, const char *kv)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", kv);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(p, '=');
        assert_non_null(eq);
        *eq = 0;
        param(s, p, eq + 1);
    }
}

/* --- exact values --------------------------------------------------------------------- */

/* |y - x| <= B, exactly (x an mpq). */
static int within(double y, const mpq_t x, double B, double *err)
{
    mpq_t d, b;
    mpq_inits(d, b, NULL);
    mpq_set_d(d, y);
    mpq_sub(d, d, x);
    mpq_abs(d, d);
    mpq_set_d(b, B);
    int ok = mpq_cmp(d, b) <= 0;
    *err = mpq_get_d(d);
    mpq_clears(d, b, NULL);
    return ok;
}

typedef struct tally {
    double worst_tight; /* the largest factor on same-sign inputs */
    long elems, cases;
} tally;

/* The checks of one pair on one input: y_P, y_Q against the exact values x
 * (mpq, n of them) and against each other. */
static void check_pair(const char *what, int kind, size_t n, const double *yP, const double *BP, const double *yQ,
                       const double *BQ, mpq_t *x, tally *t)
{
    double use_P = 0, err_at = 0, b_at = 0;
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double eP = 0, eQ = 0;
        int okP = within(yP[i], x[i], BP[i], &eP), okQ = within(yQ[i], x[i], BQ[i], &eQ);
        if (!okP || !okQ) {
            if (bad++ < 5)
                fprintf(stderr, "VIOLATION %s (%s) element %zu: y_P %a (err %a, bound %a), y_Q %a (err %a, bound %a)\n",
                        what, kind_names[kind], i, yP[i], eP, BP[i], yQ[i], eQ, BQ[i]);
            continue;
        }
        /* the pair, exactly: |y_P - y_Q| <= B_P + B_Q */
        mpq_t q;
        mpq_init(q);
        mpq_set_d(q, yQ[i]);
        double ePQ;
        if (!within(yP[i], q, BP[i] + BQ[i], &ePQ)) {
            if (bad++ < 5)
                fprintf(stderr, "VIOLATION %s (%s) element %zu: |y_P - y_Q| = %a > %a\n", what, kind_names[kind], i,
                        ePQ, BP[i] + BQ[i]);
        }
        mpq_clear(q);
        if (eP / BP[i] > use_P) {
            use_P = eP / BP[i];
            err_at = eP;
            b_at = BP[i];
        }
        t->elems++;
    }
    t->cases++;
    double factor = use_P > 0 ? 1 / use_P : INFINITY;
    if (getenv("PARITY_VERBOSE"))
        fprintf(stderr, "  %-58s %-14s bound/error %8.2f (error %.3g, bound %.3g)\n", what, kind_names[kind], factor,
                err_at, b_at);
    assert_int_equal(bad, 0);
    if (kind == SAME_SIGN) {
        if (factor > t->worst_tight)
            t->worst_tight = factor;
        if (!(factor <= TIGHT_FACTOR))
            fail_msg("%s: on same-sign inputs the bound is %g times the largest error (at most %g allowed)", what,
                     factor, TIGHT_FACTOR);
    }
}

static double *run_y(const fam_spec *s, const st_file *in)
{
    st_file out;
    st_init(&out);
    nx_err e = {0};
    if (ref_run(s, in, &out, 2, &e) != NX_OK)
        fail_msg("ref_run %s.%s: %s", s->family, s->point, e.msg);
    double *y = decode_all(&out, "y");
    st_free(&out);
    return y;
}

static double *bound_of(const fam_spec *s, const st_file *in, size_t n)
{
    double *b;
    size_t cnt;
    char why[512];
    nx_err e = {0};
    if (ref_bound(s, in, 1, 2, &b, &cnt, why, sizeof why, &e) != NX_OK)
        fail_msg("ref_bound %s.%s: %s", s->family, s->point, e.msg);
    assert_int_equal(cnt, n);
    return b;
}

/* Both points on one input: y, bounds and the checks. */
static void pair_on(const fam_spec *P, const fam_spec *Q, const char *what, int kind, const st_file *in, size_t n,
                    mpq_t *x, tally *t)
{
    char why[256];
    assert_true(ref_bound_same_function(P, Q, why, sizeof why));
    double *yP = run_y(P, in), *yQ = run_y(Q, in), *BP = bound_of(P, in, n), *BQ = bound_of(Q, in, n);
    check_pair(what, kind, n, yP, BP, yQ, BQ, x, t);
    free(yP);
    free(yQ);
    free(BP);
    free(BQ);
}

static mpq_t *mpq_array(size_t n)
{
    mpq_t *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        mpq_init(x[i]);
    return x;
}

static void mpq_array_free(mpq_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mpq_clear(x[i]);
    free(x);
}

/* x += a * b exactly */
static void mpq_addmul_d(mpq_t x, double a, double b)
{
    mpq_t p, q;
    mpq_inits(p, q, NULL);
    mpq_set_d(p, a);
    mpq_set_d(q, b);
    mpq_mul(p, p, q);
    mpq_add(x, x, p);
    mpq_clears(p, q, NULL);
}

/* --- gemm ----------------------------------------------------------------------------- */

typedef struct gemm_pair {
    const char *name, *params, *kP, *kQ;
} gemm_pair;

static const gemm_pair gemm_pairs[] = {
    {"gemm split-K 4 vs 8 (fp32 out)", "out=fp32,alpha=1.5,bias=true", "{ acc = \"fp32\", tree = \"split(4, seq, seq)\" }",
     "{ acc = \"fp32\", tree = \"split(8, seq, seq)\" }"},
    {"gemm split-K 4 vs 8 (bf16 out)", "out=bf16", "{ acc = \"fp32\", tree = \"split(4, seq, seq)\" }",
     "{ acc = \"fp32\", tree = \"split(8, seq, seq)\" }"},
    {"gemm seq vs wgmma chain(16)", "out=fp32",
     "{ acc = \"fp32\", tree = \"seq\" }",
     "{ acc = \"fp32\", tree = \"split(2, chain(16), seq)\", atom = \"sm90.wgmma.bf16\" }"},
    {"gemm bf16 stride accumulation vs fp32 pairwise", "out=fp32",
     "{ acc = \"fp32\", tree = \"stride(8, seq@bf16, pairwise)\" }",
     "{ acc = \"fp32\", tree = \"pairwise\" }"},
    {"gemm atomic split vs seq (beta)", "out=fp32,beta=0.5",
     "{ acc = \"fp32\", tree = \"split(4, stride(4, seq, pairwise), atomic)\" }",
     "{ acc = \"fp32\", tree = \"seq\" }"},
};

static void gemm_spec(fam_spec *s, const char *pt, const char *kv, const char *k, const char *shape)
{
    spec_init(s, "gemm", pt);
    params(s, shape);
    params(s, kv);
    char toml[512];
    snprintf(toml, sizeof toml, "%.*s, out = \"fp32\" }", (int)(strlen(k) - 2), k);
    red(s, "k", toml);
}

static void test_gemm(void **state)
{
    tally *t = *state;
    const size_t M = 8, N = 8, K = 512;
    for (size_t pi = 0; pi < sizeof gemm_pairs / sizeof gemm_pairs[0]; pi++) {
        const gemm_pair *gp = &gemm_pairs[pi];
        fam_spec P, Q;
        gemm_spec(&P, "P", gp->params, gp->kP, "M=8,N=8,K=512");
        gemm_spec(&Q, "Q", gp->params, gp->kQ, "M=8,N=8,K=512");
        double alpha = 1, beta = 0;
        int bias = strstr(gp->params, "bias=true") != NULL;
        if (strstr(gp->params, "alpha=1.5"))
            alpha = 1.5;
        if (strstr(gp->params, "beta=0.5"))
            beta = 0.5;
        for (int k = 0; k < NKINDS; k++) {
            st_file in;
            st_init(&in);
            double *a = vals(k, NX_BF16, M * K), *b = vals(k == CANCEL ? SAME_SIGN : k, NX_BF16, N * K);
            double *c = vals(SAME_SIGN, NX_FP32, M * N), *bv = vals(SAME_SIGN, NX_FP32, N);
            add_tensor(&in, "a", NX_BF16, 2, (int64_t[]){(int64_t)M, (int64_t)K}, a);
            add_tensor(&in, "b", NX_BF16, 2, (int64_t[]){(int64_t)N, (int64_t)K}, b);
            if (beta != 0) {
                for (size_t i = 0; i < M * N; i++) /* c is in the out format */
                    c[i] = nx_round_fast(c[i], NX_FP32, NX_RNE, 0);
                add_tensor(&in, "c", NX_FP32, 2, (int64_t[]){(int64_t)M, (int64_t)N}, c);
            }
            if (bias)
                add_tensor(&in, "bias", NX_FP32, 1, (int64_t[]){(int64_t)N}, bv);
            mpq_t *x = mpq_array(M * N), al, tmp;
            mpq_inits(al, tmp, NULL);
            mpq_set_d(al, alpha);
            for (size_t m = 0; m < M; m++)
                for (size_t n = 0; n < N; n++) {
                    mpq_ptr xi = x[m * N + n];
                    for (size_t i = 0; i < K; i++)
                        mpq_addmul_d(xi, a[m * K + i], b[n * K + i]);
                    mpq_mul(xi, xi, al);
                    if (beta != 0)
                        mpq_addmul_d(xi, beta, c[m * N + n]);
                    if (bias) {
                        mpq_set_d(tmp, bv[n]);
                        mpq_add(xi, xi, tmp);
                    }
                }
            pair_on(&P, &Q, gp->name, k, &in, M * N, x, t);
            mpq_clears(al, tmp, NULL);
            mpq_array_free(x, M * N);
            free(a);
            free(b);
            free(c);
            free(bv);
            st_free(&in);
        }
        fam_spec_free(&P);
        fam_spec_free(&Q);
    }
}

/* --- moe_grouped_gemm -------------------------------------------------------------- */

static void moe_spec(fam_spec *s, const char *pt, const char *k, const char *comb)
{
    spec_init(s, "moe_grouped_gemm", pt);
    params(s, "T=3,E=4,H=256,N=5,topk=2");
    red(s, "k", k);
    red(s, "combine", comb);
}

static void test_moe(void **state)
{
    tally *t = *state;
    const size_t T = 3, E = 4, H = 256, N = 5, topk = 2;
    fam_spec P, Q;
    moe_spec(&P, "P", "{ acc = \"fp32\", tree = \"seq\", out = \"bf16\" }",
             "{ acc = \"fp32\", tree = \"seq\", out = \"fp32\" }");
    moe_spec(&Q, "Q", "{ acc = \"fp32\", tree = \"split(4, stride(8, seq, halving), seq)\", out = \"fp32\" }",
             "{ acc = \"fp32\", tree = \"pairwise\", fma = false, out = \"fp32\" }");
    for (int k = 0; k < NKINDS; k++) {
        st_file in;
        st_init(&in);
        double *x = vals(k, NX_BF16, T * H), *w = vals(k == CANCEL ? SAME_SIGN : k, NX_BF16, E * N * H);
        double *tw = vals(SAME_SIGN, NX_FP32, T * topk);
        int32_t ids[6] = {0, 2, 3, 1, 2, 0};
        add_tensor(&in, "x", NX_BF16, 2, (int64_t[]){3, 256}, x);
        add_tensor(&in, "w", NX_BF16, 3, (int64_t[]){4, 5, 256}, w);
        st_tensor *it;
        assert_int_equal(st_add_tensor(&in, "topk_ids", ST_I32, 2, (int64_t[]){3, 2}, &it, NULL), NX_OK);
        memcpy(it->data, ids, sizeof ids);
        add_tensor(&in, "topk_weights", NX_FP32, 2, (int64_t[]){3, 2}, tw);
        mpq_t *X = mpq_array(T * N), h;
        mpq_init(h);
        for (size_t tt = 0; tt < T; tt++)
            for (size_t n = 0; n < N; n++)
                for (size_t j = 0; j < topk; j++) {
                    size_t e = (size_t)ids[tt * topk + j];
                    mpq_set_ui(h, 0, 1);
                    for (size_t i = 0; i < H; i++)
                        mpq_addmul_d(h, x[tt * H + i], w[(e * N + n) * H + i]);
                    mpq_t wq;
                    mpq_init(wq);
                    mpq_set_d(wq, tw[tt * topk + j]);
                    mpq_mul(wq, wq, h);
                    mpq_add(X[tt * N + n], X[tt * N + n], wq);
                    mpq_clear(wq);
                }
        mpq_clear(h);
        pair_on(&P, &Q, "moe: bf16 h, seq vs split-stride h, pairwise combine", k, &in, T * N, X, t);
        mpq_array_free(X, T * N);
        free(x);
        free(w);
        free(tw);
        st_free(&in);
    }
    fam_spec_free(&P);
    fam_spec_free(&Q);
}

/* --- gemv_w4a16 ------------------------------------------------------------------- */

static void test_gemv(void **state)
{
    tally *t = *state;
    const size_t B = 2, N = 4, K = 256, G = 64, ng = K / G;
    fam_spec P, Q;
    spec_init(&P, "gemv_w4a16", "per_element");
    params(&P, "B=2,N=4,K=256,group=64,zero_points=true,scale_apply=per_element");
    red(&P, "k", "{ acc = \"fp32\", tree = \"stride(32, seq, halving)\", out = \"fp16\" }");
    spec_init(&Q, "gemv_w4a16", "per_group");
    params(&Q, "B=2,N=4,K=256,group=64,zero_points=true,scale_apply=per_group");
    red(&Q, "group", "{ acc = \"fp32\", tree = \"seq\", out = \"fp32\" }");
    red(&Q, "k", "{ acc = \"fp32\", tree = \"seq\", out = \"fp16\" }");
    for (int k = 0; k < NKINDS; k++) {
        st_file in;
        st_init(&in);
        /* within fp16's range: wide and mixed inputs scaled by 2^-12 (into
         * its subnormals), scales small so that fp16 holds (q - z) s and y */
        double *x = vals(k, NX_FP64, B * K), *sc = vals(k == SAME_SIGN ? SAME_SIGN : CANCEL, NX_FP64, N * ng);
        for (size_t i = 0; i < B * K; i++)
            x[i] = nx_round_fast(ldexp(x[i], k == WIDE || k == MIXED ? -12 : 0), NX_FP16, NX_RNE, 0);
        for (size_t i = 0; i < N * ng; i++)
            sc[i] = nx_round_fast(ldexp(sc[i], -6), NX_FP16, NX_RNE, 0);
        add_tensor(&in, "x", NX_FP16, 2, (int64_t[]){2, 256}, x);
        add_tensor(&in, "scales", NX_FP16, 2, (int64_t[]){4, 4}, sc);
        st_tensor *q, *z;
        assert_int_equal(st_add_tensor(&in, "qweight", ST_U8, 2, (int64_t[]){4, 256}, &q, NULL), NX_OK);
        assert_int_equal(st_add_tensor(&in, "zeros", ST_U8, 2, (int64_t[]){4, 4}, &z, NULL), NX_OK);
        for (size_t i = 0; i < N * K; i++) /* same-sign: q > z everywhere */
            q->data[i] = (uint8_t)(k == SAME_SIGN ? 9 + tu_rand64(&rng) % 7 : tu_rand64(&rng) % 16);
        for (size_t i = 0; i < N * ng; i++)
            z->data[i] = (uint8_t)(k == SAME_SIGN ? 8 : tu_rand64(&rng) % 16);
        mpq_t *X = mpq_array(B * N);
        for (size_t b = 0; b < B; b++)
            for (size_t n = 0; n < N; n++)
                for (size_t i = 0; i < K; i++)
                    mpq_addmul_d(X[b * N + n], x[b * K + i],
                                 (double)((int)q->data[n * K + i] - (int)z->data[n * ng + i / G]) * sc[n * ng + i / G]);
        pair_on(&P, &Q, "gemv_w4a16: per-element vs per-group scales", k, &in, B * N, X, t);
        mpq_array_free(X, B * N);
        free(x);
        free(sc);
        st_free(&in);
    }
    fam_spec_free(&P);
    fam_spec_free(&Q);
}

/* --- rmsnorm ------------------------------------------------------------------------- */

static void test_rmsnorm(void **state)
{
    tally *t = *state;
    const size_t T = 3, H = 512;
    for (int out32 = 0; out32 < 2; out32++) {
        fam_spec P, Q;
        spec_init(&P, "rmsnorm", "seq");
        spec_init(&Q, "rmsnorm", "tree");
        const char *kv = out32 ? "T=3,H=512,out=fp32,eps=1e-5" : "T=3,H=512,eps=1e-5";
        params(&P, kv);
        params(&Q, kv);
        red(&P, "sumsq", "{ acc = \"fp32\", tree = \"seq\", out = \"fp32\" }");
        red(&Q, "sumsq", "{ acc = \"fp32\", tree = \"stride(32, seq, halving, block=4)\", out = \"fp32\" }");
        for (int k = 0; k < NKINDS; k++) {
            st_file in;
            st_init(&in);
            double *x = vals(k, NX_BF16, T * H), *w = vals(k == CANCEL ? SAME_SIGN : k, NX_BF16, H);
            if (k == MIXED)
                for (size_t i = 0; i < H; i++)
                    w[i] = nx_round_fast(1 + unif(), NX_BF16, NX_RNE, 0);
            add_tensor(&in, "x", NX_BF16, 2, (int64_t[]){3, 512}, x);
            add_tensor(&in, "weight", NX_BF16, 1, (int64_t[]){512}, w);
            /* y* = x w / sqrt(sum x^2 / H + eps): the sum exactly, the rest at 400 bits */
            mpq_t *X = mpq_array(T * H), ss, tq;
            mpq_inits(ss, tq, NULL);
            mpfr_t r, v;
            mpfr_inits2(400, r, v, (mpfr_ptr)0);
            double eps = nx_round_fast(1e-5, NX_FP32, NX_RNE, 0);
            for (size_t tt = 0; tt < T; tt++) {
                mpq_set_ui(ss, 0, 1);
                for (size_t h = 0; h < H; h++)
                    mpq_addmul_d(ss, x[tt * H + h], x[tt * H + h]);
                mpq_set_ui(tq, 1, (unsigned long)H);
                mpq_mul(ss, ss, tq);
                mpq_set_d(tq, eps);
                mpq_add(ss, ss, tq);
                mpfr_set_q(r, ss, MPFR_RNDN);
                mpfr_rec_sqrt(r, r, MPFR_RNDN);
                for (size_t h = 0; h < H; h++) {
                    mpfr_mul_d(v, r, x[tt * H + h], MPFR_RNDN);
                    mpfr_mul_d(v, v, w[h], MPFR_RNDN);
                    mpfr_get_q(X[tt * H + h], v);
                }
            }
            mpfr_clears(r, v, (mpfr_ptr)0);
            mpq_clears(ss, tq, NULL);
            pair_on(&P, &Q, out32 ? "rmsnorm: seq vs strided sum of squares (fp32 out)"
                                  : "rmsnorm: seq vs strided sum of squares (bf16 out)",
                    k, &in, T * H, X, t);
            mpq_array_free(X, T * H);
            free(x);
            free(w);
            st_free(&in);
        }
        fam_spec_free(&P);
        fam_spec_free(&Q);
    }
}

/* --- silu_and_mul ---------------------------------------------------------------------- */

static void test_silu(void **state)
{
    tally *t = *state;
    const size_t T = 2, H = 256;
    fam_spec P;
    spec_init(&P, "silu_and_mul", "cr");
    params(&P, "T=2,H=256,out=fp32");
    for (int k = 0; k < NKINDS; k++) {
        st_file in;
        st_init(&in);
        double *x = vals(k, NX_BF16, T * 2 * H);
        add_tensor(&in, "x", NX_BF16, 2, (int64_t[]){2, 512}, x);
        mpq_t *X = mpq_array(T * H);
        mpfr_t g, e;
        mpfr_inits2(400, g, e, (mpfr_ptr)0);
        for (size_t i = 0; i < T * H; i++) {
            size_t tt = i / H, h = i % H;
            mpfr_set_d(g, x[tt * 2 * H + h], MPFR_RNDN);
            mpfr_neg(e, g, MPFR_RNDN);
            mpfr_exp(e, e, MPFR_RNDN);
            mpfr_add_ui(e, e, 1, MPFR_RNDN);
            mpfr_div(g, g, e, MPFR_RNDN);
            mpfr_mul_d(g, g, x[tt * 2 * H + H + h], MPFR_RNDN);
            mpfr_get_q(X[i], g);
        }
        mpfr_clears(g, e, (mpfr_ptr)0);
        pair_on(&P, &P, "silu_and_mul (no reduction: the cr silu and one product)", k, &in, T * H, X, t);
        mpq_array_free(X, T * H);
        free(x);
        st_free(&in);
    }
    fam_spec_free(&P);
}

/* --- paged_decode_attention -------------------------------------------------------- */

static void attn_spec(fam_spec *s, const char *pt, const char *kv, const char *qk, const char *ss, const char *pv,
                      const char *comb)
{
    spec_init(s, "paged_decode_attention", pt);
    params(s, "B=2,HQ=2,HKV=1,D=16,P=4,NP=8,MAXP=4");
    if (*kv)
        params(s, kv);
    red(s, "qk", qk);
    red(s, "softmax_sum", ss);
    red(s, "pv", pv);
    if (comb)
        red(s, "combine", comb);
}

static void test_attention(void **state)
{
    tally *t = *state;
    const size_t B = 2, HQ = 2, D = 16, P = 4, NP = 8, MAXP = 4;
    fam_spec Pp, Qp;
    attn_spec(&Pp, "nosplit", "", "{ acc = \"fp32\", tree = \"seq\" }", "{ acc = \"fp32\", tree = \"seq\" }",
              "{ acc = \"fp32\", tree = \"seq\" }", NULL);
    attn_spec(&Qp, "split4", "split=4", "{ acc = \"fp32\", tree = \"pairwise\" }",
              "{ acc = \"fp32\", tree = \"halving\" }", "{ acc = \"fp32\", tree = \"stride(2, seq, pairwise)\" }",
              "{ acc = \"fp32\", tree = \"seq\", fma = false }");
    double scale = nx_round_fast(1 / sqrt(16.0), NX_FP32, NX_RNE, 0); /* 0.25: exact */
    for (int k = 0; k < NKINDS; k++) {
        st_file in;
        st_init(&in);
        /* scores of moderate size: q and k scaled so that the softmax is not one-hot everywhere */
        double *q = vals(k, NX_FP64, B * HQ * D), *kc = vals(k == CANCEL ? SAME_SIGN : k, NX_FP64, NP * P * D);
        double *vc = vals(k, NX_BF16, NP * P * D);
        for (size_t i = 0; i < B * HQ * D; i++)
            q[i] = nx_round_fast(ldexp(q[i], k == WIDE || k == MIXED ? -12 : -2), NX_BF16, NX_RNE, 0);
        for (size_t i = 0; i < NP * P * D; i++)
            kc[i] = nx_round_fast(ldexp(kc[i], k == WIDE || k == MIXED ? -10 : -2), NX_BF16, NX_RNE, 0);
        int32_t bt[8] = {3, 0, 6, 1, 7, 2, 5, 4}, cl[2] = {13, 16};
        add_tensor(&in, "q", NX_BF16, 3, (int64_t[]){2, 2, 16}, q);
        add_tensor(&in, "k_cache", NX_BF16, 4, (int64_t[]){8, 4, 1, 16}, kc);
        add_tensor(&in, "v_cache", NX_BF16, 4, (int64_t[]){8, 4, 1, 16}, vc);
        st_tensor *tt;
        assert_int_equal(st_add_tensor(&in, "block_table", ST_I32, 2, (int64_t[]){2, 4}, &tt, NULL), NX_OK);
        memcpy(tt->data, bt, sizeof bt);
        assert_int_equal(st_add_tensor(&in, "context_lens", ST_I32, 1, (int64_t[]){2}, &tt, NULL), NX_OK);
        memcpy(tt->data, cl, sizeof cl);
        /* y* = sum e^(s_j) v_j / sum e^(s_j), s_j = scale (q . k_j) exact, the rest at 400 bits */
        mpq_t *X = mpq_array(B * HQ * D), sq;
        mpq_init(sq);
        mpfr_t sj[16], mx, e, num, den;
        for (int i = 0; i < 16; i++)
            mpfr_init2(sj[i], 400);
        mpfr_inits2(400, mx, e, num, den, (mpfr_ptr)0);
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < HQ; h++) {
                size_t L = (size_t)cl[b];
                for (size_t jj = 0; jj < L; jj++) {
                    size_t page = (size_t)bt[b * MAXP + jj / P];
                    mpq_set_ui(sq, 0, 1);
                    for (size_t d = 0; d < D; d++)
                        mpq_addmul_d(sq, q[(b * HQ + h) * D + d], kc[(page * P + jj % P) * D + d]);
                    mpfr_set_q(sj[jj], sq, MPFR_RNDN);
                    mpfr_mul_d(sj[jj], sj[jj], scale, MPFR_RNDN);
                    if (jj == 0 || mpfr_greater_p(sj[jj], mx))
                        mpfr_set(mx, sj[jj], MPFR_RNDN);
                }
                for (size_t d = 0; d < D; d++) {
                    mpfr_set_ui(num, 0, MPFR_RNDN);
                    mpfr_set_ui(den, 0, MPFR_RNDN);
                    for (size_t jj = 0; jj < L; jj++) {
                        size_t page = (size_t)bt[b * MAXP + jj / P];
                        mpfr_sub(e, sj[jj], mx, MPFR_RNDN);
                        mpfr_exp(e, e, MPFR_RNDN);
                        mpfr_add(den, den, e, MPFR_RNDN);
                        mpfr_mul_d(e, e, vc[(page * P + jj % P) * D + d], MPFR_RNDN);
                        mpfr_add(num, num, e, MPFR_RNDN);
                    }
                    mpfr_div(num, num, den, MPFR_RNDN);
                    mpfr_get_q(X[(b * HQ + h) * D + d], num);
                }
            }
        for (int i = 0; i < 16; i++)
            mpfr_clear(sj[i]);
        mpfr_clears(mx, e, num, den, (mpfr_ptr)0);
        mpq_clear(sq);
        pair_on(&Pp, &Qp, "attention: no split vs split 4 with combine", k, &in, B * HQ * D, X, t);
        mpq_array_free(X, B * HQ * D);
        free(q);
        free(kc);
        free(vc);
        st_free(&in);
    }
    fam_spec_free(&Pp);
    fam_spec_free(&Qp);
}

/* --- what is not derivable, said as such ----------------------------------------------- */

static void test_not_derivable(void **state)
{
    (void)state;
    fam_spec A, B;
    spec_init(&A, "paged_decode_attention", "a");
    params(&A, "B=1,HQ=2,HKV=1,D=8,P=4,NP=2,MAXP=2");
    red(&A, "qk", "{ acc = \"fp32\" }");
    red(&A, "softmax_sum", "{ acc = \"fp32\" }");
    red(&A, "pv", "{ acc = \"fp32\" }");
    assert_int_equal(fam_spec_add_elem(&A, "exp", FAM_ELEM_APPROX, "ex2.approx.ftz.f32", 2, NULL), NX_OK);
    st_file in;
    st_init(&in);
    ref_gen_opts go = {7, NX_DIST_NORMAL, 0, 1};
    nx_err e = {0};
    assert_int_equal(ref_generate(&A, &go, &in, &e), NX_OK);
    double *b;
    size_t n;
    char why[512];
    /* a device running an approximate exp: its terms are not the reference's */
    assert_int_equal(ref_bound(&A, &in, 0, 1, &b, &n, why, sizeof why, &e), NX_EUNSUPPORTED);
    assert_non_null(strstr(why, "exp is a declared approximation"));
    /* the reference evaluates it correctly rounded: derivable */
    assert_int_equal(ref_bound(&A, &in, 1, 1, &b, &n, why, sizeof why, &e), NX_OK);
    assert_int_equal(n, 16);
    free(b);
    st_free(&in);
    /* points that compute different functions are not comparable by bounds */
    fam_spec_free(&A);
    spec_init(&A, "gemm", "a");
    spec_init(&B, "gemm", "b");
    params(&A, "alpha=1");
    params(&B, "alpha=2");
    assert_false(ref_bound_same_function(&A, &B, why, sizeof why));
    assert_non_null(strstr(why, "alpha"));
    fam_spec_free(&A);
    fam_spec_free(&B);
}

/* `atomic` has no defined order: its bound must hold for every order of
 * the combinator's additions, not only the seq order the engines use.  The
 * partials of split(4, seq, .) (one term each: three just under half an
 * ulp of the fourth, large one) combined in seq, reversed, pairwise and
 * halving order stay within the bound of split(4, seq, atomic) of the
 * exact sum.  In reverse order the large partial comes first and absorbs
 * each small one, erring three times by almost half an ulp: beyond the
 * bound of the seq order alone (the control below), within the atomic one. */
static void test_atomic_orders(void **state)
{
    (void)state;
    const size_t n = 4, rows = 64;
    static const char *const orders[] = {"seq", "reverse(seq)", "pairwise", "halving"};
    nx_err e = {0};
    nx_point pa;
    nx_program *pga;
    assert_int_equal(pt_from_text("{ acc = \"bf16\", tree = \"split(4, seq, atomic)\" }", "a", &pa, &e), NX_OK);
    assert_int_equal(nx_program_build(&pa, n, 0, &pga, &e), NX_OK);
    nx_bound *bd = nx_bound_new(pga);
    assert_non_null(bd);
    nx_bound_atomic_combinator(bd, 1);
    nx_point ps; /* the control: the same tree with a seq combinator */
    nx_program *pgs;
    assert_int_equal(pt_from_text("{ acc = \"bf16\", tree = \"split(4, seq, seq)\" }", "s", &ps, &e), NX_OK);
    assert_int_equal(nx_program_build(&ps, n, 0, &pgs, &e), NX_OK);
    nx_bound *bs = nx_bound_new(pgs);
    assert_non_null(bs);
    long checked = 0, beyond_seq = 0;
    for (size_t r = 0; r < rows; r++) {
        double a[4];
        double big = nx_round_fast((r % 2 ? -1 : 1) * ldexp(1 + unif(), (int)(r % 9) - 4), NX_BF16, NX_RNE, 0);
        int q = nx_rf_lg(big) - 7; /* bf16: the ulp of big is 2^q */
        for (size_t i = 0; i < 3; i++) /* just under half an ulp, the same sign: absorbed */
            a[i] = (big < 0 ? -1 : 1) * ldexp(1 - ldexp(1.0, -7) * (double)(1 + tu_rand64(&rng) % 3), q - 1);
        a[3] = big;
        double sum_abs, B = nx_bound_apriori_sum(bd, pga, NX_BF16, a, NX_BF16, NULL, &sum_abs);
        double Bs = nx_bound_apriori(bs, pgs, NX_BF16, a, NX_BF16, NULL);
        mpq_t x;
        mpq_init(x);
        for (size_t i = 0; i < n; i++)
            mpq_addmul_d(x, a[i], 1);
        for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++) {
            char toml[128];
            snprintf(toml, sizeof toml, "{ acc = \"bf16\", tree = \"split(4, seq, %s)\" }", orders[o]);
            nx_point p;
            nx_program *pg;
            assert_int_equal(pt_from_text(toml, "o", &p, &e), NX_OK);
            assert_int_equal(nx_program_build(&p, n, 0, &pg, &e), NX_OK);
            nx_rows in;
            memset(&in, 0, sizeof in);
            in.rows = 1;
            in.a_fmt = NX_BF16;
            in.a = a;
            in.b_fmt = NX_BF16;
            double y, err;
            assert_int_equal(nx_fast_reduce(pg, &in, &y, 1, &e), NX_OK);
            if (!within(y, x, B, &err))
                fail_msg("row %zu, combinator %s: |y - x| = %a exceeds the atomic bound %a", r, orders[o], err, B);
            if (!within(y, x, Bs, &err))
                beyond_seq++;
            checked++;
            nx_program_free(pg);
            nx_point_free(&p);
        }
        mpq_clear(x);
    }
    assert_int_equal(checked, (long)rows * 4);
    assert_true(beyond_seq > 0); /* the seq-order bound alone would not have held */
    nx_bound_free(bs);
    nx_program_free(pgs);
    nx_point_free(&ps);
    nx_bound_free(bd);
    nx_program_free(pga);
    nx_point_free(&pa);
}

/* A result off by more than the bound is caught: the check can fail. */
static void test_negative_control(void **state)
{
    (void)state;
    fam_spec P;
    gemm_spec(&P, "P", "out=fp32", "{ acc = \"fp32\", tree = \"seq\" }", "M=1,N=1,K=64");
    st_file in;
    st_init(&in);
    double *a = vals(SAME_SIGN, NX_BF16, 64), *b = vals(SAME_SIGN, NX_BF16, 64);
    add_tensor(&in, "a", NX_BF16, 2, (int64_t[]){1, 64}, a);
    add_tensor(&in, "b", NX_BF16, 2, (int64_t[]){1, 64}, b);
    double *y = run_y(&P, &in), *B = bound_of(&P, &in, 1), err;
    mpq_t x;
    mpq_init(x);
    for (size_t i = 0; i < 64; i++)
        mpq_addmul_d(x, a[i], b[i]);
    assert_true(within(y[0], x, B[0], &err));
    assert_false(within(y[0] + 2 * B[0], x, B[0], &err));
    mpq_clear(x);
    free(a);
    free(b);
    free(y);
    free(B);
    st_free(&in);
    fam_spec_free(&P);
}

static tally the_tally;

static int report(void **state)
{
    (void)state;
    fprintf(stderr,
            "derived bounds: %ld cases, %ld elements, no violations; on same-sign inputs the bound is at most %.2f "
            "times the largest error (allowed %.0f)\n",
            the_tally.cases, the_tally.elems, the_tally.worst_tight, TIGHT_FACTOR);
    return 0;
}

int main(void)
{
    rng = tu_seed(20261202);
    void *st = &the_tally;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_negative_control, st), cmocka_unit_test_prestate(test_not_derivable, st),
        cmocka_unit_test_prestate(test_gemm, st),             cmocka_unit_test_prestate(test_moe, st),
        cmocka_unit_test_prestate(test_gemv, st),             cmocka_unit_test_prestate(test_rmsnorm, st),
        cmocka_unit_test_prestate(test_silu, st),
        cmocka_unit_test_prestate(test_attention, st),
        cmocka_unit_test_prestate(test_atomic_orders, st),
    };
    return cmocka_run_group_tests(tests, NULL, report);
}
