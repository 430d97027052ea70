/* test_refimpl.c: each reference family against an independent slow
 * computation on small shapes.
 *
 * The expected outputs are computed here from docs/families.md directly:
 * every reduction by the exact-rational oracle (tests/oracle: orc_reduce on
 * the bit patterns, with the point given as strings; no numerics/ code),
 * every elementwise step as an exact GMP rational rounded once by
 * orc_round_bits, and exp, rsqrt and silu with MPFR at 300 bits (no Ziv
 * loop, no round-to-odd: another path than refimpl/ref_math.c).  Only the
 * inputs come from the generator.  Specs are built by hand (fam_spec), the
 * points read from TOML text made from the same strings the oracle gets.
 *
 * Covered: gemm split-K with alpha/beta/bias, a chain atom, e4m3 inputs;
 * gemv per_element vs per_group (both exact, and they differ); moe top-k
 * with the combine order (seq vs reverse: both exact, and they differ);
 * paged attention with GQA, a split and the log-sum-exp combine, and without
 * a split; rmsnorm with residual; silu_and_mul; softmax (rows with -inf,
 * NaN and +inf, and one row worked by hand); integer inputs that make
 * every tree agree; input validation messages. */
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

#include "oracle/oracle.h"
#include "point_toml.h"
#include "ref_internal.h"
#include "refimpl.h"
#include "testutil.h"

/* --- specs ------------------------------------------------------------------- */

static void point_toml(const orc_point *p, char *buf, size_t cap)
{
    size_t k = (size_t)snprintf(buf, cap, "{ acc = \"%s\", rounding = \"%s\", fma = %s, tree = \"%s\"",
                                p->acc ? p->acc : "fp32", p->rounding ? p->rounding : "rne", p->fma ? "true" : "false",
                                p->tree ? p->tree : "seq");
    if (p->in)
        k += (size_t)snprintf(buf + k, cap - k, ", in = \"%s\", in_rounding = \"%s\"", p->in,
                              p->in_rounding ? p->in_rounding : "rne");
    if (p->product)
        k += (size_t)snprintf(buf + k, cap - k, ", product = \"%s\"", p->product);
    if (p->has_atom) {
        k += (size_t)snprintf(buf + k, cap - k, ", atom = { term_round = \"%s\"",
                              p->atom_term_round ? p->atom_term_round : "rz");
        if (p->atom_frac_bits >= 0)
            k += (size_t)snprintf(buf + k, cap - k, ", frac_bits = %d", p->atom_frac_bits);
        if (p->atom_round)
            k += (size_t)snprintf(buf + k, cap - k, ", round = \"%s\"", p->atom_round);
        if (p->atom_acc)
            k += (size_t)snprintf(buf + k, cap - k, ", acc = \"%s\"", p->atom_acc);
        k += (size_t)snprintf(buf + k, cap - k, " }");
    }
    if (p->out)
        k += (size_t)snprintf(buf + k, cap - k, ", out = \"%s\"", p->out);
    if (p->out_rounding)
        k += (size_t)snprintf(buf + k, cap - k, ", out_rounding = \"%s\"", p->out_rounding);
    snprintf(buf + k, cap - k, ", saturate = %s }", p->saturate ? "true" : "false");
}

static void spec_init(fam_spec *s, const char *family)
{
    memset(s, 0, sizeof *s);
    s->family = strdup(family);
    s->point = strdup("test");
    s->class_name = strdup("cpu");
}

static void param(fam_spec *s, const char *k, const char *v)
{
    assert_int_equal(fam_spec_set_param(s, k, v, NULL), NX_OK);
}

static void red(fam_spec *s, const char *name, const orc_point *op)
{
    char txt[1024];
    point_toml(op, txt, sizeof txt);
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(txt, name, &pt, &e) != NX_OK)
        fail_msg("point %s: %s", txt, e.msg);
    assert_int_equal(fam_spec_add_reduction(s, name, &pt, op->tree ? op->tree : "seq", NULL), NX_OK);
}

static orc_point P(const char *acc, const char *tree, const char *out)
{
    orc_point p;
    memset(&p, 0, sizeof p);
    p.acc = acc;
    p.tree = tree;
    p.out = out;
    p.fma = 1;
    p.atom_frac_bits = -1;
    return p;
}

/* --- running ----------------------------------------------------------------- */

static void gen(const fam_spec *s, nx_dist dist, uint64_t seed, st_file *in)
{
    st_init(in);
    ref_gen_opts o = {seed, dist, 0, 2};
    nx_err e = {0};
    if (ref_generate(s, &o, in, &e) != NX_OK)
        fail_msg("ref_generate: %s", e.msg);
}

/* Runs the reference with the fast engine (the default) and with MPFR; the
 * two must agree bit for bit before either is compared with the oracle. */
static void run(const fam_spec *s, const st_file *in, st_file *out)
{
    st_init(out);
    nx_err e = {0};
    if (ref_run(s, in, out, 2, &e) != NX_OK)
        fail_msg("ref_run: %s", e.msg);
    st_file m;
    st_init(&m);
    ref_opts o = {1, NX_ENGINE_MPFR};
    if (ref_run_opts(s, in, &m, &o, &e) != NX_OK)
        fail_msg("ref_run_opts(mpfr): %s", e.msg);
    assert_int_equal(m.ntensors, out->ntensors);
    for (size_t i = 0; i < m.ntensors; i++) {
        assert_string_equal(m.tensors[i].name, out->tensors[i].name);
        assert_int_equal(m.tensors[i].nbytes, out->tensors[i].nbytes);
        if (memcmp(m.tensors[i].data, out->tensors[i].data, m.tensors[i].nbytes) != 0)
            fail_msg("%s.%s: '%s' differs between the default engine (%s) and mpfr", s->family, s->point,
                     m.tensors[i].name, nx_engine_name(ref_engine_default()));
    }
    st_free(&m);
}

static const st_tensor *T(const st_file *f, const char *name)
{
    const st_tensor *t = st_find(f, name);
    if (!t)
        fail_msg("no tensor '%s'", name);
    return t;
}

static uint64_t B(const st_tensor *t, size_t i)
{
    return st_get_bits(t, t->data, i);
}

static long I(const st_tensor *t, size_t i)
{
    uint64_t b = B(t, i);
    return t->dtype == ST_I32 ? (long)(int32_t)b : (long)b;
}

static uint64_t orc(const orc_point *p, const char *af, const char *bf, const uint64_t *a, const uint64_t *b, size_t n)
{
    uint64_t out = 0;
    char e[512];
    if (orc_reduce(p, af, bf, a, b, n, &out, e, sizeof e))
        fail_msg("oracle: %s", e);
    return out;
}

/* Compares tensor `name` with want[] pattern by pattern. */
static void expect(const st_file *out, const char *name, const uint64_t *want, size_t n, const char *ctx)
{
    const st_tensor *t = T(out, name);
    assert_int_equal(t->nelem, n);
    for (size_t i = 0; i < n; i++) {
        if (B(t, i) != want[i]) {
            print_error("%s: %s[%zu] (%s): got 0x%llx, want 0x%llx\n", ctx, name, i, st_dtype_name(t->dtype),
                        (unsigned long long)B(t, i), (unsigned long long)want[i]);
            fail();
        }
    }
}

static size_t count_diff(const st_file *x, const st_file *y, const char *name)
{
    const st_tensor *a = T(x, name), *b = T(y, name);
    size_t d = 0;
    for (size_t i = 0; i < a->nelem; i++)
        d += B(a, i) != B(b, i);
    return d;
}

/* --- exact values with a signed zero ---------------------------------------- */

typedef struct tv {
    mpq_t q;
    int neg0; /* a zero's sign */
} tv;

static void tv_init(tv *x) { mpq_init(x->q); x->neg0 = 0; }
static void tv_clear(tv *x) { mpq_clear(x->q); }
static int tv_neg(const tv *x) { return mpq_sgn(x->q) < 0 || (mpq_sgn(x->q) == 0 && x->neg0); }

static void tv_bits(tv *x, const char *fmt, uint64_t bits)
{
    int nz = 0;
    int k = orc_decode(fmt, bits, x->q, &nz);
    if (k != 0)
        fail_msg("pattern 0x%llx of %s is not finite (%d)", (unsigned long long)bits, fmt, k);
    x->neg0 = nz;
}

static void tv_d(tv *x, double d)
{
    mpq_set_d(x->q, d);
    x->neg0 = signbit(d) != 0;
}

static uint64_t tv_round(const tv *x, const char *fmt, const char *mode, int sat)
{
    uint64_t b;
    if (orc_round_bits(fmt, mode, sat, x->q, x->neg0 ? -1 : 1, &b))
        fail_msg("orc_round_bits to %s failed", fmt);
    return b;
}

/* x = fp32(x): rounded and decoded back */
static void tv_f32(tv *x)
{
    tv_bits(x, "fp32", tv_round(x, "fp32", "rne", 0));
}

static void tv_mul(tv *r, const tv *a, const tv *b)
{
    int z = tv_neg(a) ^ tv_neg(b);
    mpq_mul(r->q, a->q, b->q);
    r->neg0 = z;
}

/* IEEE: an exact zero sum is +0 (rne) unless both operands are -0 */
static void tv_add(tv *r, const tv *a, const tv *b)
{
    int z = mpq_sgn(a->q) == 0 && mpq_sgn(b->q) == 0 && a->neg0 && b->neg0;
    mpq_add(r->q, a->q, b->q);
    r->neg0 = z;
}

static void tv_sub(tv *r, const tv *a, const tv *b)
{
    tv nb;
    tv_init(&nb);
    mpq_neg(nb.q, b->q);
    nb.neg0 = !b->neg0;
    tv_add(r, a, &nb);
    tv_clear(&nb);
}

static void tv_div(tv *r, const tv *a, const tv *b)
{
    assert_true(mpq_sgn(b->q) != 0);
    int z = tv_neg(a) ^ tv_neg(b);
    mpq_div(r->q, a->q, b->q);
    r->neg0 = z;
}

static int tv_cmp(const tv *a, const tv *b)
{
    return mpq_cmp(a->q, b->q);
}

/* f(x) at 300 bits with MPFR, then rounded to fp32: exp, rsqrt, silu */
enum { F_EXP, F_RSQRT, F_SILU };

static void tv_func(tv *r, int f, const tv *x)
{
    if (mpq_sgn(x->q) == 0) {
        if (f == F_EXP) {
            mpq_set_ui(r->q, 1, 1);
            r->neg0 = 0;
        } else if (f == F_SILU) {
            mpq_set_ui(r->q, 0, 1);
            r->neg0 = x->neg0;
        } else {
            fail_msg("rsqrt(0) in a test");
        }
        return;
    }
    mpfr_t a, t;
    mpfr_inits2(300, a, t, (mpfr_ptr)0);
    mpfr_set_q(a, x->q, MPFR_RNDN); /* exact: an fp32 value */
    switch (f) {
    case F_EXP:
        mpfr_exp(t, a, MPFR_RNDN);
        break;
    case F_RSQRT:
        mpfr_rec_sqrt(t, a, MPFR_RNDN);
        break;
    default:
        mpfr_neg(t, a, MPFR_RNDN);
        mpfr_exp(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_div(t, a, t, MPFR_RNDN);
        break;
    }
    assert_true(mpfr_number_p(t));
    int neg = mpfr_signbit(t) != 0;
    if (mpfr_zero_p(t) || mpfr_get_exp(t) < -400)
        mpfr_set_zero(t, neg ? -1 : 1); /* below 2^-400: +-0 in fp32, and a small rational */
    assert_true(mpfr_zero_p(t) || mpfr_get_exp(t) < 400);
    mpfr_get_q(r->q, t);
    r->neg0 = neg;
    mpfr_clears(a, t, (mpfr_ptr)0);
    tv_f32(r);
}

/* A decimal param as fp32: parsed as an exact rational, rounded once. */
static void tv_param_f32(tv *x, const char *num, const char *den)
{
    mpz_t n, d;
    mpz_init_set_str(n, num, 10);
    mpz_init_set_str(d, den, 10);
    mpq_set_num(x->q, n);
    mpq_set_den(x->q, d);
    mpq_canonicalize(x->q);
    x->neg0 = 0;
    mpz_clear(n);
    mpz_clear(d);
    tv_f32(x);
}

static uint64_t *alloc_u64(size_t n)
{
    uint64_t *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

/* --- gemm ----------------------------------------------------------------------- */

typedef struct gemm_case {
    const char *in, *out;
    long M, N, K;
    double alpha, beta;
    int bias;
    orc_point k;
    nx_dist dist;
} gemm_case;

static void gemm_spec(fam_spec *s, const gemm_case *c)
{
    char v[64];
    spec_init(s, "gemm");
    snprintf(v, sizeof v, "%ld", c->M), param(s, "M", v);
    snprintf(v, sizeof v, "%ld", c->N), param(s, "N", v);
    snprintf(v, sizeof v, "%ld", c->K), param(s, "K", v);
    param(s, "in", c->in);
    param(s, "out", c->out);
    snprintf(v, sizeof v, "%a", c->alpha), param(s, "alpha", v);
    snprintf(v, sizeof v, "%a", c->beta), param(s, "beta", v);
    param(s, "bias", c->bias ? "true" : "false");
    red(s, "k", &c->k);
}

static void gemm_expect(const gemm_case *c, const st_file *in, uint64_t *want)
{
    const st_tensor *a = T(in, "a"), *b = T(in, "b");
    size_t M = (size_t)c->M, N = (size_t)c->N, K = (size_t)c->K;
    uint64_t *ar = alloc_u64(K), *br = alloc_u64(K);
    tv acc, t, u, al, be;
    tv_init(&acc), tv_init(&t), tv_init(&u), tv_init(&al), tv_init(&be);
    tv_d(&al, c->alpha);
    tv_d(&be, c->beta);
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            for (size_t k = 0; k < K; k++) {
                ar[k] = B(a, m * K + k);
                br[k] = B(b, n * K + k);
            }
            tv_bits(&acc, "fp32", orc(&c->k, c->in, c->in, ar, br, K));
            tv_mul(&t, &al, &acc);
            tv_f32(&t);
            if (c->beta != 0) {
                tv_bits(&u, c->out, B(T(in, "c"), m * N + n));
                tv_mul(&u, &be, &u);
                tv_f32(&u);
                tv_add(&t, &t, &u);
                tv_f32(&t);
            }
            if (c->bias) {
                tv_bits(&u, "fp32", B(T(in, "bias"), n));
                tv_add(&t, &t, &u);
                tv_f32(&t);
            }
            want[m * N + n] = tv_round(&t, c->out, c->k.out_rounding ? c->k.out_rounding : "rne", c->k.saturate);
        }
    tv_clear(&acc), tv_clear(&t), tv_clear(&u), tv_clear(&al), tv_clear(&be);
    free(ar);
    free(br);
}

static void gemm_check(const gemm_case *c, uint64_t seed, st_file *keep_out)
{
    fam_spec s;
    st_file in, out;
    gemm_spec(&s, c);
    gen(&s, c->dist, seed, &in);
    run(&s, &in, &out);
    uint64_t *want = alloc_u64((size_t)(c->M * c->N));
    gemm_expect(c, &in, want);
    expect(&out, "y", want, (size_t)(c->M * c->N), c->k.tree);
    free(want);
    if (keep_out)
        *keep_out = out;
    else
        st_free(&out);
    st_free(&in);
    fam_spec_free(&s);
}

static void test_gemm_splitk_epilogue(void **state)
{
    (void)state;
    /* K = 37: split(4) slices of 10, 10, 10, 7 */
    gemm_case c = {"bf16", "bf16", 3, 5, 37, 0.75, -1.5, 1, P("fp32", "split(4, seq, seq)", "fp32"), NX_DIST_NORMAL};
    gemm_check(&c, tu_seed(11), NULL);
    c.dist = NX_DIST_ADVERSARIAL; /* subnormals, signed zeros, cancellation */
    c.out = "fp32";
    gemm_check(&c, tu_seed(12), NULL);
}

static void test_gemm_atom_and_fp8(void **state)
{
    (void)state;
    gemm_case c = {"fp16", "fp16", 2, 4, 50, 1.0, 0.0, 0, P("fp32", "chain(16)", "fp32"), NX_DIST_NORMAL};
    c.k.has_atom = 1;
    c.k.atom_frac_bits = 25;
    c.k.atom_term_round = "rz";
    c.k.atom_round = "rz";
    gemm_check(&c, tu_seed(13), NULL);
    gemm_case f8 = {"e4m3", "fp32", 3, 3, 64, 2.0, 0.0, 1, P("fp32", "split(2, pairwise, seq, align=8)", "fp32"),
                    NX_DIST_NORMAL};
    gemm_check(&f8, tu_seed(14), NULL);
}

/* The tree changes bits on normal inputs (both still exact against the
 * oracle); on integer inputs every tree gives the same bits. */
static void test_gemm_trees_matter_but_not_on_ints(void **state)
{
    (void)state;
    gemm_case a = {"bf16", "fp32", 4, 8, 96, 1.0, 0.0, 0, P("bf16", "seq", "fp32"), NX_DIST_NORMAL};
    gemm_case b = a;
    b.k = P("bf16", "reverse(seq)", "fp32");
    st_file ya, yb;
    gemm_check(&a, tu_seed(15), &ya);
    gemm_check(&b, tu_seed(15), &yb);
    assert_true(count_diff(&ya, &yb, "y") > 0);
    st_free(&ya);
    st_free(&yb);

    const char *trees[] = {"seq", "pairwise", "split(4, seq, halving)", "reverse(stride(8, seq, pairwise))"};
    st_file first;
    st_init(&first);
    for (int i = 0; i < 4; i++) {
        gemm_case c = {"bf16", "fp32", 3, 6, 512, 1.0, 0.0, 0, P("fp32", trees[i], "fp32"), NX_DIST_INT};
        st_file y;
        gemm_check(&c, tu_seed(16), &y);
        if (i == 0)
            first = y;
        else {
            assert_int_equal(count_diff(&first, &y, "y"), 0);
            st_free(&y);
        }
    }
    /* and the inputs were integers within the bound */
    fam_spec s;
    gemm_case c = {"bf16", "fp32", 3, 6, 512, 1.0, 0.0, 0, P("fp32", "seq", "fp32"), NX_DIST_INT};
    gemm_spec(&s, &c);
    st_file in;
    gen(&s, NX_DIST_INT, tu_seed(16), &in);
    tv x;
    tv_init(&x);
    for (size_t i = 0; i < T(&in, "a")->nelem; i++) {
        tv_bits(&x, "bf16", B(T(&in, "a"), i));
        assert_true(mpz_cmp_ui(mpq_denref(x.q), 1) == 0);
        assert_true(mpz_cmpabs_ui(mpq_numref(x.q), 181) <= 0); /* 512 * 181^2 < 2^24 */
    }
    tv_clear(&x);
    st_free(&in);
    fam_spec_free(&s);
    st_free(&first);
}

/* --- gemv_w4a16 ---------------------------------------------------------------------- */

typedef struct gemv_case {
    long B, N, K, G;
    int zp, per_group;
    orc_point k, group;
    int packed; /* qweight and zeros two per byte, low nibble first, rows on whole bytes */
} gemv_case;

/* Value i of row r of a 4-bit tensor with n values per row, unpacked here
 * from the bytes (docs/families.md, sub-byte integer storage). */
static long u4(const st_tensor *t, size_t r, size_t n, size_t i, int packed)
{
    if (!packed)
        return I(t, r * n + i);
    uint64_t byte = B(t, r * ((n + 1) / 2) + i / 2);
    return (long)(i % 2 ? byte >> 4 : byte & 0xf);
}

static void gemv_spec(fam_spec *s, const gemv_case *c)
{
    char v[32];
    spec_init(s, "gemv_w4a16");
    snprintf(v, sizeof v, "%ld", c->B), param(s, "B", v);
    snprintf(v, sizeof v, "%ld", c->N), param(s, "N", v);
    snprintf(v, sizeof v, "%ld", c->K), param(s, "K", v);
    snprintf(v, sizeof v, "%ld", c->G), param(s, "group", v);
    param(s, "zero_points", c->zp ? "true" : "false");
    if (c->packed)
        param(s, "packed", "true");
    param(s, "scale_apply", c->per_group ? "per_group" : "per_element");
    red(s, "k", &c->k);
    if (c->per_group)
        red(s, "group", &c->group);
}

static void gemv_expect(const gemv_case *c, const st_file *in, uint64_t *want)
{
    const st_tensor *x = T(in, "x"), *q = T(in, "qweight"), *sc = T(in, "scales");
    const st_tensor *zt = c->zp ? T(in, "zeros") : NULL;
    size_t Bn = (size_t)c->B, N = (size_t)c->N, K = (size_t)c->K, G = (size_t)c->G, ng = K / G;
    uint64_t *xa = alloc_u64(K), *wb = alloc_u64(K), *u = alloc_u64(ng);
    tv w, s, t;
    tv_init(&w), tv_init(&s), tv_init(&t);
    const char *kout = c->k.out ? c->k.out : "fp32";
    for (size_t b = 0; b < Bn; b++)
        for (size_t n = 0; n < N; n++) {
            for (size_t k = 0; k < K; k++) {
                size_t g = k / G;
                long z = zt ? u4(zt, n, ng, g, c->packed) : 8;
                long qz = u4(q, n, K, k, c->packed) - z;
                xa[k] = B(x, b * K + k);
                tv_bits(&s, "fp16", B(sc, n * ng + g));
                if (!c->per_group) { /* w = fp16((q - z) * s), IEEE zero sign */
                    mpq_set_si(w.q, qz, 1);
                    w.neg0 = 0;
                    tv_mul(&w, &w, &s);
                    wb[k] = tv_round(&w, "fp16", "rne", 0);
                } else {
                    mpq_set_si(w.q, qz, 1);
                    w.neg0 = 0;
                    wb[k] = tv_round(&w, "fp16", "rne", 0);
                }
            }
            if (!c->per_group) {
                want[b * N + n] = orc(&c->k, "fp16", "fp16", xa, wb, K);
                continue;
            }
            for (size_t g = 0; g < ng; g++) {
                uint64_t p = orc(&c->group, "fp16", "fp16", xa + g * G, wb + g * G, G);
                tv_bits(&t, c->group.out ? c->group.out : "fp32", p);
                tv_bits(&s, "fp16", B(sc, n * ng + g));
                tv_mul(&t, &t, &s);
                u[g] = tv_round(&t, "fp32", "rne", 0);
            }
            want[b * N + n] = orc(&c->k, "fp32", NULL, u, NULL, ng);
        }
    (void)kout;
    tv_clear(&w), tv_clear(&s), tv_clear(&t);
    free(xa);
    free(wb);
    free(u);
}

static void gemv_check(const gemv_case *c, uint64_t seed, st_file *keep)
{
    fam_spec s;
    st_file in, out;
    gemv_spec(&s, c);
    gen(&s, NX_DIST_NORMAL, seed, &in);
    run(&s, &in, &out);
    uint64_t *want = alloc_u64((size_t)(c->B * c->N));
    gemv_expect(c, &in, want);
    expect(&out, "y", want, (size_t)(c->B * c->N), c->per_group ? "per_group" : "per_element");
    free(want);
    if (keep)
        *keep = out;
    else
        st_free(&out);
    st_free(&in);
    fam_spec_free(&s);
}

static void test_gemv_per_element_vs_per_group(void **state)
{
    (void)state;
    for (int zp = 0; zp < 2; zp++) {
        gemv_case e = {2, 24, 128, 32, zp, 0, P("fp32", "split(2, seq, halving)", "fp32"), P("fp32", "seq", NULL), 0};
        gemv_case g = {2, 24, 128, 32, zp, 1, P("fp32", "split(2, seq, halving)", "fp32"), P("fp32", "seq", NULL), 0};
        st_file ye, yg;
        gemv_check(&e, tu_seed(21 + (uint64_t)zp), &ye);
        gemv_check(&g, tu_seed(21 + (uint64_t)zp), &yg);
        size_t d = count_diff(&ye, &yg, "y");
        if (d == 0)
            print_error("per_element and per_group agree on every output (zero points %d)\n", zp);
        assert_true(d > 0);
        st_free(&ye);
        st_free(&yg);
    }
    /* the usual fp16 output */
    gemv_case h = {1, 16, 64, 16, 1, 1, P("fp32", "seq", "fp16"), P("fp32", "pairwise", NULL), 0};
    gemv_check(&h, tu_seed(23), NULL);
}

static void expect_fail(const fam_spec *s, const st_file *in, const char *needle);

/* The 16 weights of a group, fp16((q - z) * s), as the fast reference
 * rounds them (F16C where the CPU has it) against MPFR's rounding of the
 * exact product: every finite fp16 s, and the infinities and a NaN (which
 * take the other path), at the zero points 0, 8 and 15. */
static void test_gemv_weights(void **state)
{
    (void)state;
    ref_math m;
    ref_math_init(&m);
    nx_rfmt f16;
    nx_rfmt_init(&f16, NX_FP16);
    long checked = 0;
    for (uint32_t pat = 0; pat < 0x10000; pat++) {
        double s = nx_decode(NX_FP16, pat, NULL);
        if (isnan(s) && pat != 0x7e00)
            continue;
        static const int zs[] = {0, 8, 15};
        for (int zi = 0; zi < 3; zi++) {
            double w[16];
            ref_fp16_weights(s, zs[zi], &f16, &m, w);
            for (int q = 0; q < 16; q++) {
                double want = ref_round(&m, (double)(q - zs[zi]) * s, NX_FP16, NX_RNE, 0);
                int same = isnan(want) ? isnan(w[q]) : memcmp(&want, &w[q], sizeof want) == 0;
                if (!same)
                    fail_msg("s = 0x%04x (%a), z = %d, q = %d: %a, MPFR %a", pat, s, zs[zi], q, w[q], want);
                checked++;
            }
        }
    }
    assert_true(checked > 3000000);
    ref_math_clear(&m);
}

/* Packed int4 (two per byte): the expected values unpack the bytes here;
 * an odd K and an odd number of groups pad each row with a nibble; packed
 * and unpacked inputs from one seed hold the same values, so y is the same
 * bytes; a padding nibble that is not 0 is refused with its byte named. */
static void test_gemv_packed(void **state)
{
    (void)state;
    for (int pg = 0; pg < 2; pg++) {
        gemv_case c = {2, 5, 45, 15, 1, pg, P("fp32", "stride(4, seq, pairwise)", "fp16"), P("fp32", "seq", NULL), 1};
        st_file yp, yu;
        gemv_check(&c, tu_seed(24), &yp);
        c.packed = 0;
        gemv_check(&c, tu_seed(24), &yu);
        assert_int_equal(count_diff(&yp, &yu, "y"), 0);
        st_free(&yp);
        st_free(&yu);
    }
    gemv_case e = {1, 7, 64, 16, 0, 0, P("fp32", "seq", "fp16"), P("fp32", "seq", NULL), 1};
    gemv_check(&e, tu_seed(25), NULL);

    /* the stored shapes: [N, ceil(K/2)] and [N, ceil(K/group/2)] */
    gemv_case c = {1, 3, 45, 15, 1, 0, P("fp32", "seq", "fp16"), P("fp32", "seq", NULL), 1};
    fam_spec s;
    gemv_spec(&s, &c);
    st_file in;
    gen(&s, NX_DIST_NORMAL, tu_seed(26), &in);
    const st_tensor *q = T(&in, "qweight"), *z = T(&in, "zeros");
    assert_int_equal(q->dtype, ST_U8);
    assert_int_equal(q->shape[0], 3);
    assert_int_equal(q->shape[1], 23);
    assert_int_equal(z->shape[1], 2);
    for (size_t r = 0; r < 3; r++) { /* padding nibbles are 0 */
        assert_int_equal(B(q, r * 23 + 22) >> 4, 0);
        assert_int_equal(B(z, r * 2 + 1) >> 4, 0);
    }
    st_tensor *qt = (st_tensor *)q;
    qt->data[23 + 22] |= 0x50; /* row 1's padding */
    expect_fail(&s, &in, "input tensor 'qweight': byte 45 (the last of row 1) has 5 in its high nibble");
    qt->data[23 + 22] &= 0x0f;
    ((st_tensor *)z)->data[2 * 2 + 1] |= 0x10;
    expect_fail(&s, &in, "input tensor 'zeros': byte 5 (the last of row 2) has 1 in its high nibble");
    st_free(&in);
    fam_spec_free(&s);
}

/* --- moe_grouped_gemm -------------------------------------------------------------------- */

typedef struct moe_case {
    long T, E, H, N, topk;
    orc_point k, combine;
} moe_case;

static void moe_check(const moe_case *c, uint64_t seed, st_file *keep)
{
    fam_spec s;
    char v[32];
    spec_init(&s, "moe_grouped_gemm");
    snprintf(v, sizeof v, "%ld", c->T), param(&s, "T", v);
    snprintf(v, sizeof v, "%ld", c->E), param(&s, "E", v);
    snprintf(v, sizeof v, "%ld", c->H), param(&s, "H", v);
    snprintf(v, sizeof v, "%ld", c->N), param(&s, "N", v);
    snprintf(v, sizeof v, "%ld", c->topk), param(&s, "topk", v);
    red(&s, "k", &c->k);
    red(&s, "combine", &c->combine);
    st_file in, out;
    gen(&s, NX_DIST_NORMAL, seed, &in);
    run(&s, &in, &out);
    const st_tensor *x = T(&in, "x"), *w = T(&in, "w"), *ids = T(&in, "topk_ids"), *tw = T(&in, "topk_weights");
    size_t Tn = (size_t)c->T, N = (size_t)c->N, H = (size_t)c->H, K = (size_t)c->topk;
    /* top-k ids: distinct experts per token */
    for (size_t t = 0; t < Tn; t++)
        for (size_t i = 0; i < K; i++) {
            assert_true(I(ids, t * K + i) >= 0 && I(ids, t * K + i) < c->E);
            for (size_t j = 0; j < i; j++)
                assert_true(I(ids, t * K + i) != I(ids, t * K + j));
        }
    uint64_t *xa = alloc_u64(H), *wb = alloc_u64(H), *want = alloc_u64(Tn * N), wa[16], hb[16];
    const char *hf = c->k.out;
    for (size_t t = 0; t < Tn; t++)
        for (size_t n = 0; n < N; n++) {
            for (size_t j = 0; j < K; j++) {
                size_t e = (size_t)I(ids, t * K + j);
                for (size_t i = 0; i < H; i++) {
                    xa[i] = B(x, t * H + i);
                    wb[i] = B(w, (e * N + n) * H + i);
                }
                hb[j] = orc(&c->k, "bf16", "bf16", xa, wb, H);
                wa[j] = B(tw, t * K + j);
            }
            want[t * N + n] = orc(&c->combine, "fp32", hf, wa, hb, K);
        }
    expect(&out, "y", want, Tn * N, c->combine.tree);
    free(xa);
    free(wb);
    free(want);
    if (keep)
        *keep = out;
    else
        st_free(&out);
    st_free(&in);
    fam_spec_free(&s);
}

static void test_moe_combine_order(void **state)
{
    (void)state;
    moe_case a = {6, 8, 24, 10, 4, P("fp32", "split(3, seq, seq)", "bf16"), P("bf16", "seq", "fp32")};
    moe_case b = a;
    b.combine = P("bf16", "reverse(seq)", "fp32");
    st_file ya, yb;
    moe_check(&a, tu_seed(31), &ya);
    moe_check(&b, tu_seed(31), &yb);
    assert_true(count_diff(&ya, &yb, "y") > 0);
    st_free(&ya);
    st_free(&yb);
    moe_case c = {5, 6, 16, 7, 2, P("fp32", "pairwise", "bf16"), P("fp32", "seq", "bf16")};
    moe_check(&c, tu_seed(32), NULL);
}

/* --- paged_decode_attention ---------------------------------------------------------------- */

typedef struct attn_case {
    long B, HQ, HKV, D, P, NP, MAXP, split;
    orc_point qk, ssum, pv, combine;
    const int *lens; /* B context lengths forced into the inputs */
    const char *out; /* param `out` (NULL: bf16, the default) */
    int negative;    /* q >= 0 and k <= 0: every score is <= 0 */
} attn_case;

static void attn_check(const attn_case *c, uint64_t seed)
{
    fam_spec s;
    char v[32];
    spec_init(&s, "paged_decode_attention");
    const char *names[] = {"B", "HQ", "HKV", "D", "P", "NP", "MAXP", "split"};
    const long vals[] = {c->B, c->HQ, c->HKV, c->D, c->P, c->NP, c->MAXP, c->split};
    for (int i = 0; i < 8; i++)
        snprintf(v, sizeof v, "%ld", vals[i]), param(&s, names[i], v);
    red(&s, "qk", &c->qk);
    red(&s, "softmax_sum", &c->ssum);
    red(&s, "pv", &c->pv);
    if (c->split)
        red(&s, "combine", &c->combine);
    if (c->out)
        param(&s, "out", c->out);
    st_file in, out;
    gen(&s, NX_DIST_NORMAL, seed, &in);
    if (c->negative) { /* sign bits of bf16: q cleared, k set */
        const st_tensor *tq = T(&in, "q"), *tk = T(&in, "k_cache");
        for (size_t i = 0; i < tq->nelem; i++)
            st_put_bits(tq, tq->data, i, B(tq, i) & 0x7fffu);
        for (size_t i = 0; i < tk->nelem; i++)
            st_put_bits(tk, tk->data, i, B(tk, i) | 0x8000u);
    }
    const st_tensor *cl = T(&in, "context_lens");
    for (size_t b = 0; b < (size_t)c->B; b++)
        st_put_bits(cl, cl->data, b, (uint64_t)(uint32_t)c->lens[b]);
    run(&s, &in, &out);

    const st_tensor *q = T(&in, "q"), *kc = T(&in, "k_cache"), *vc = T(&in, "v_cache"), *bt = T(&in, "block_table");
    size_t HQ = (size_t)c->HQ, HKV = (size_t)c->HKV, D = (size_t)c->D, P = (size_t)c->P;
    size_t maxl = (size_t)(c->MAXP * c->P);
    uint64_t *want = alloc_u64((size_t)c->B * HQ * D), qa[64], kb[64];
    uint64_t *pb = alloc_u64(maxl), *vb = alloc_u64(maxl), lb[64], ob[64][64], wb[64], tmp[64];
    tv scale, sj[64], m[64], t, M, L, O, eight;
    tv_init(&scale), tv_init(&t), tv_init(&M), tv_init(&L), tv_init(&O), tv_init(&eight);
    for (int i = 0; i < 64; i++)
        tv_init(&sj[i]), tv_init(&m[i]);
    mpq_set_ui(eight.q, (unsigned long)D, 1);
    tv_func(&scale, F_RSQRT, &eight); /* fp32(1/sqrt(D)), correctly rounded */
    const char *lf = c->ssum.out ? c->ssum.out : "fp32", *of = c->pv.out ? c->pv.out : "fp32";
    for (size_t b = 0; b < (size_t)c->B; b++)
        for (size_t h = 0; h < HQ; h++) {
            size_t L_ = (size_t)c->lens[b], kvh = h / (HQ / HKV), S = c->split ? (size_t)c->split : L_;
            size_t ns = (L_ + S - 1) / S;
            assert_true(L_ <= 64);
            for (size_t j = 0; j < L_; j++) {
                size_t page = (size_t)I(bt, b * (size_t)c->MAXP + j / P), slot = j % P;
                for (size_t d = 0; d < D; d++) {
                    qa[d] = B(q, (b * HQ + h) * D + d);
                    kb[d] = B(kc, ((page * P + slot) * HKV + kvh) * D + d);
                }
                tv_bits(&t, c->qk.out ? c->qk.out : "fp32", orc(&c->qk, "bf16", "bf16", qa, kb, D));
                tv_mul(&sj[j], &scale, &t);
                tv_f32(&sj[j]);
                if (c->negative && mpq_sgn(sj[j].q) >= 0)
                    fail_msg("score %zu of (%zu, %zu) is not negative", j, b, h);
            }
            for (size_t sp = 0; sp < ns; sp++) {
                size_t j0 = sp * S, len = L_ - j0 < S ? L_ - j0 : S;
                mpq_set(m[sp].q, sj[j0].q);
                m[sp].neg0 = sj[j0].neg0;
                for (size_t j = j0; j < j0 + len; j++)
                    if (tv_cmp(&sj[j], &m[sp]) > 0)
                        mpq_set(m[sp].q, sj[j].q), m[sp].neg0 = sj[j].neg0;
                for (size_t j = j0; j < j0 + len; j++) {
                    tv_sub(&t, &sj[j], &m[sp]);
                    tv_f32(&t);
                    tv_func(&t, F_EXP, &t);
                    pb[j - j0] = tv_round(&t, "fp32", "rne", 0);
                }
                lb[sp] = orc(&c->ssum, "fp32", NULL, pb, NULL, len);
                for (size_t d = 0; d < D; d++) {
                    for (size_t j = j0; j < j0 + len; j++) {
                        size_t page = (size_t)I(bt, b * (size_t)c->MAXP + j / P), slot = j % P;
                        vb[j - j0] = B(vc, ((page * P + slot) * HKV + kvh) * D + d);
                    }
                    ob[sp][d] = orc(&c->pv, "fp32", "bf16", pb, vb, len);
                }
            }
            for (size_t d = 0; d < D; d++) {
                if (!c->split) {
                    tv_bits(&L, lf, lb[0]);
                    tv_bits(&O, of, ob[0][d]);
                } else {
                    mpq_set(M.q, m[0].q);
                    for (size_t sp = 1; sp < ns; sp++)
                        if (tv_cmp(&m[sp], &M) > 0)
                            mpq_set(M.q, m[sp].q);
                    for (size_t sp = 0; sp < ns; sp++) {
                        tv_sub(&t, &m[sp], &M);
                        tv_f32(&t);
                        tv_func(&t, F_EXP, &t);
                        wb[sp] = tv_round(&t, "fp32", "rne", 0);
                        tmp[sp] = ob[sp][d];
                    }
                    tv_bits(&L, c->combine.out ? c->combine.out : "fp32", orc(&c->combine, "fp32", lf, wb, lb, ns));
                    tv_bits(&O, c->combine.out ? c->combine.out : "fp32", orc(&c->combine, "fp32", of, wb, tmp, ns));
                }
                tv_div(&t, &O, &L);
                tv_f32(&t);
                want[(b * HQ + h) * D + d] = tv_round(&t, c->out ? c->out : "bf16", "rne", 0);
            }
        }
    expect(&out, "y", want, (size_t)c->B * HQ * D, c->split ? "split" : "no split");
    tv_clear(&scale), tv_clear(&t), tv_clear(&M), tv_clear(&L), tv_clear(&O), tv_clear(&eight);
    for (int i = 0; i < 64; i++)
        tv_clear(&sj[i]), tv_clear(&m[i]);
    free(want);
    free(pb);
    free(vb);
    st_free(&in);
    st_free(&out);
    fam_spec_free(&s);
}

static void test_attention_gqa_split(void **state)
{
    (void)state;
    static const int lens[] = {12, 6, 1};
    /* GQA: 4 query heads on 2 KV heads; split 5: 12 -> 5 + 5 + 2, 6 -> 5 + 1, 1 -> 1 */
    attn_case c = {3, 4, 2, 8, 4, 7, 3, 5, P("fp32", "pairwise", NULL), P("fp32", "seq", NULL),
                   P("fp32", "split(2, seq, seq)", NULL), P("fp32", "seq", NULL), lens, NULL, 0};
    attn_check(&c, tu_seed(41));
    c.split = 0; /* one split, no combine */
    attn_check(&c, tu_seed(42));
    c.split = 4;
    c.combine = P("fp32", "reverse(seq)", NULL);
    c.qk = P("fp32", "stride(4, seq, halving)", NULL);
    attn_check(&c, tu_seed(43));
}

/* Every score negative (q >= 0, k <= 0), fp32 output, odd D and odd
 * lengths: the running max must start at -inf (per split and in the
 * combine).  A max started at 0 gives p_j = exp(s_j) and w_c = exp(m_c)
 * instead: the same ratio on paper, other fp32 bits (and bf16 hides them). */
static void test_attention_negative_scores(void **state)
{
    (void)state;
    static const int lens[] = {13, 7, 3};
    /* split 3: 13 -> 3 + 3 + 3 + 3 + 1, 7 -> 3 + 3 + 1, 3 -> 3 */
    attn_case c = {3, 2, 1, 7, 4, 8, 4, 3, P("fp32", "pairwise", NULL), P("fp32", "seq", NULL),
                   P("fp32", "seq", NULL), P("fp32", "seq", NULL), lens, "fp32", 1};
    attn_check(&c, tu_seed(44));
    c.split = 0; /* one split: only the per-split max */
    attn_check(&c, tu_seed(45));
    c.split = 5; /* 13 -> 5 + 5 + 3, 7 -> 5 + 2, 3 -> 3 */
    c.combine = P("fp32", "pairwise", NULL);
    c.pv = P("fp32", "pairwise", NULL);
    attn_check(&c, tu_seed(46));
}

/* pairwise at odd n (the first half is the larger: ceil(n/2)), with a bf16
 * accumulator so that every bracketing shows in the fp32 output; and inside
 * a split whose slices have odd lengths. */
static void test_gemm_pairwise_odd(void **state)
{
    (void)state;
    static const long ks[] = {3, 5, 7, 11};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        gemm_case c = {"bf16", "fp32", 6, 16, ks[i], 1.0, 0.0, 0, P("bf16", "pairwise", "fp32"), NX_DIST_NORMAL};
        gemm_check(&c, tu_seed(17 + i), NULL);
        c.k = P("fp32", "pairwise", "fp32");
        c.in = "fp16";
        gemm_check(&c, tu_seed(27 + i), NULL);
    }
    /* K = 13: slices of 7 and 6; K = 9: 5 and 4 */
    gemm_case c = {"bf16", "fp32", 6, 16, 13, 1.0, 0.0, 0, P("bf16", "split(2, pairwise, seq)", "fp32"),
                   NX_DIST_NORMAL};
    gemm_check(&c, tu_seed(37), NULL);
    c.K = 9;
    c.k = P("bf16", "split(2, seq, seq, align=1)", "fp32");
    gemm_check(&c, tu_seed(38), NULL);
}

/* stride whose combinator sees the lane order (seq over 3 lanes, not a
 * commutative bracketing), lanes of unequal length, bf16 accumulator; the
 * reversed combinator must give other bits on the same inputs. */
static void test_gemm_stride_lane_order(void **state)
{
    (void)state;
    gemm_case a = {"bf16", "fp32", 6, 16, 11, 1.0, 0.0, 0, P("bf16", "stride(3, seq, seq)", "fp32"),
                   NX_DIST_NORMAL};
    gemm_case b = a;
    b.k = P("bf16", "stride(3, seq, reverse(seq))", "fp32");
    st_file ya, yb;
    gemm_check(&a, tu_seed(39), &ya);
    gemm_check(&b, tu_seed(39), &yb);
    assert_true(count_diff(&ya, &yb, "y") > 0);
    st_free(&ya);
    st_free(&yb);
    gemm_case c = {"bf16", "fp32", 6, 16, 13, 1.0, 0.0, 0, P("bf16", "stride(4, seq, seq, block=2)", "fp32"),
                   NX_DIST_NORMAL};
    gemm_check(&c, tu_seed(40), NULL);
    c.k = P("bf16", "stride(3, pairwise, seq)", "fp32");
    gemm_check(&c, tu_seed(47), NULL);
}

/* exp near fp32 overflow: every fp32 argument in [88.5, 88.73] is either
 * correctly rounded (finite) or +inf, exactly as MPFR at 300 bits rounded
 * once by the oracle says.  The last finite one, hand-worked: e^x < (2 -
 * 2^-24) 2^127 iff x < 88.72283908187067677...; fp32 0x1.62e42ep+6 =
 * 88.72283172607421875 has e^x = 1.99998522885698... 2^127, which rounds to
 * 0x1.ffff08p+127 (0x1ffff08 / 2^24 = 1.99998521804...; the next pattern is
 * 1.99998527765..., further away), and the next fp32 argument, 0x1.62e430p+6
 * = 88.72283935546875, is past the boundary: +inf. */
static void test_exp_near_overflow(void **state)
{
    (void)state;
    ref_math m;
    ref_math_init(&m);
    nx_err e = {0};
    mpfr_t a, t;
    mpfr_inits2(300, a, t, (mpfr_ptr)0);
    tv r;
    tv_init(&r);
    size_t finite = 0, inf = 0;
    for (float f = 88.5f; f <= 88.73f; f = nextafterf(f, INFINITY)) {
        mpfr_set_flt(a, f, MPFR_RNDN);
        mpfr_exp(t, a, MPFR_RNDN);
        mpfr_get_q(r.q, t);
        r.neg0 = 0;
        uint64_t want = tv_round(&r, "fp32", "rne", 0);
        double got = ref_f32_exp(&m, (double)f, &e);
        float gf = (float)got;
        uint32_t gb;
        memcpy(&gb, &gf, sizeof gb);
        if ((double)gf != got || gb != (uint32_t)want)
            fail_msg("exp(%a): got %a, want fp32 pattern 0x%08llx", (double)f, got, (unsigned long long)want);
        finite += want != 0x7f800000u;
        inf += want == 0x7f800000u;
    }
    assert_int_equal(e.code, NX_OK);
    assert_true(finite > 20000 && inf > 900); /* both sides of the boundary were seen */
    assert_double_bits_eq(ref_f32_exp(&m, 0x1.62e42ep+6, &e), 0x1.ffff08p+127);
    assert_double_bits_eq(ref_f32_exp(&m, 0x1.62e430p+6, &e), INFINITY);
    tv_clear(&r);
    mpfr_clears(a, t, (mpfr_ptr)0);
    ref_math_clear(&m);
}

/* --- rmsnorm --------------------------------------------------------------------------- */

static void rms_check(int residual, const char *in_fmt, const char *out_fmt, nx_dist dist, uint64_t seed)
{
    fam_spec s;
    spec_init(&s, "rmsnorm");
    const size_t Tn = 4, H = 48;
    param(&s, "T", "4");
    param(&s, "H", "48");
    param(&s, "in", in_fmt);
    param(&s, "out", out_fmt);
    param(&s, "eps", "1e-5");
    param(&s, "residual", residual ? "true" : "false");
    orc_point sq = P("fp32", "stride(4, seq, halving)", NULL);
    red(&s, "sumsq", &sq);
    st_file in, out;
    gen(&s, dist, seed, &in);
    run(&s, &in, &out);
    const st_tensor *x = T(&in, "x"), *w = T(&in, "weight"), *r = residual ? T(&in, "residual") : NULL;
    uint64_t *xp = alloc_u64(Tn * H), *want = alloc_u64(Tn * H);
    tv a, b, eps, ms, rs, hh;
    tv_init(&a), tv_init(&b), tv_init(&eps), tv_init(&ms), tv_init(&rs), tv_init(&hh);
    tv_param_f32(&eps, "1", "100000");
    mpq_set_ui(hh.q, H, 1);
    for (size_t i = 0; i < Tn * H; i++) {
        if (!r) {
            xp[i] = B(x, i);
            continue;
        }
        tv_bits(&a, in_fmt, B(x, i));
        tv_bits(&b, in_fmt, B(r, i));
        tv_add(&a, &a, &b);
        xp[i] = tv_round(&a, in_fmt, "rne", 0);
    }
    if (r)
        expect(&out, "residual_out", xp, Tn * H, "residual_out");
    for (size_t t = 0; t < Tn; t++) {
        tv_bits(&ms, "fp32", orc(&sq, in_fmt, in_fmt, xp + t * H, xp + t * H, H));
        tv_div(&ms, &ms, &hh);
        tv_f32(&ms);
        tv_add(&ms, &ms, &eps);
        tv_f32(&ms);
        tv_func(&rs, F_RSQRT, &ms);
        for (size_t h = 0; h < H; h++) {
            tv_bits(&a, in_fmt, xp[t * H + h]);
            tv_mul(&a, &a, &rs);
            tv_f32(&a);
            tv_bits(&b, in_fmt, B(w, h));
            tv_mul(&a, &a, &b);
            tv_f32(&a);
            want[t * H + h] = tv_round(&a, out_fmt, "rne", 0);
        }
    }
    expect(&out, "y", want, Tn * H, residual ? "with residual" : "no residual");
    assert_string_equal(out.tensors[0].name, "y");
    tv_clear(&a), tv_clear(&b), tv_clear(&eps), tv_clear(&ms), tv_clear(&rs), tv_clear(&hh);
    free(xp);
    free(want);
    st_free(&in);
    st_free(&out);
    fam_spec_free(&s);
}

static void test_rmsnorm_residual(void **state)
{
    (void)state;
    rms_check(1, "bf16", "bf16", NX_DIST_NORMAL, tu_seed(51));
    rms_check(1, "fp16", "fp32", NX_DIST_ADVERSARIAL, tu_seed(52));
    rms_check(0, "bf16", "fp16", NX_DIST_NORMAL, tu_seed(53));
}

/* --- silu_and_mul ------------------------------------------------------------------------ */

static void silu_check(const char *in_fmt, const char *out_fmt, nx_dist dist, uint64_t seed)
{
    fam_spec s;
    spec_init(&s, "silu_and_mul");
    const size_t Tn = 3, H = 40;
    param(&s, "T", "3");
    param(&s, "H", "40");
    param(&s, "in", in_fmt);
    param(&s, "out", out_fmt);
    st_file in, out;
    gen(&s, dist, seed, &in);
    run(&s, &in, &out);
    const st_tensor *x = T(&in, "x");
    uint64_t *want = alloc_u64(Tn * H);
    tv g, u;
    tv_init(&g), tv_init(&u);
    for (size_t t = 0; t < Tn; t++)
        for (size_t h = 0; h < H; h++) {
            tv_bits(&g, in_fmt, B(x, t * 2 * H + h));
            tv_bits(&u, in_fmt, B(x, t * 2 * H + H + h));
            tv_func(&g, F_SILU, &g);
            tv_mul(&g, &g, &u);
            tv_f32(&g);
            want[t * H + h] = tv_round(&g, out_fmt, "rne", 0);
        }
    expect(&out, "y", want, Tn * H, in_fmt);
    tv_clear(&g), tv_clear(&u);
    free(want);
    st_free(&in);
    st_free(&out);
    fam_spec_free(&s);
}

static void test_silu_and_mul(void **state)
{
    (void)state;
    silu_check("bf16", "bf16", NX_DIST_NORMAL, tu_seed(61));
    silu_check("fp16", "fp32", NX_DIST_ADVERSARIAL, tu_seed(62));
    silu_check("fp32", "fp32", NX_DIST_ADVERSARIAL, tu_seed(63));
}

/* --- softmax ------------------------------------------------------------------------------- */

/* A softmax spec: T x H, params in and out, reduction `sum` at point sp. */
static void softmax_spec(fam_spec *s, size_t Tn, size_t H, const char *in_fmt, const char *out_fmt,
                         const orc_point *sp)
{
    char v[32];
    spec_init(s, "softmax");
    snprintf(v, sizeof v, "%zu", Tn), param(s, "T", v);
    snprintf(v, sizeof v, "%zu", H), param(s, "H", v);
    param(s, "in", in_fmt);
    param(s, "out", out_fmt);
    red(s, "sum", sp);
}

/* Every step of docs/families.md over exact rationals: m the largest x,
 * d = fp32(x - m), e = exp(d) by MPFR at 300 bits rounded once, s by the
 * oracle over the e (values), y = fp32(e / s) rounded to out.  The inputs
 * are finite (no --specials). */
static void softmax_check(const char *in_fmt, const char *out_fmt, const char *tree, nx_dist dist, uint64_t seed,
                          st_file *keep)
{
    fam_spec s;
    const size_t Tn = 4, H = 37; /* H: no multiple of the lanes */
    orc_point sp = P("fp32", tree, NULL);
    softmax_spec(&s, Tn, H, in_fmt, out_fmt, &sp);
    st_file in, out;
    gen(&s, dist, seed, &in);
    run(&s, &in, &out);
    const st_tensor *x = T(&in, "x");
    uint64_t *e = alloc_u64(H), *want = alloc_u64(Tn * H);
    tv xv[37], m, d, sum;
    for (size_t h = 0; h < H; h++)
        tv_init(&xv[h]);
    tv_init(&m), tv_init(&d), tv_init(&sum);
    for (size_t t = 0; t < Tn; t++) {
        for (size_t h = 0; h < H; h++) {
            tv_bits(&xv[h], in_fmt, B(x, t * H + h));
            if (h == 0 || tv_cmp(&xv[h], &m) > 0)
                mpq_set(m.q, xv[h].q), m.neg0 = xv[h].neg0;
        }
        for (size_t h = 0; h < H; h++) {
            tv_sub(&d, &xv[h], &m);
            tv_f32(&d);
            tv_func(&d, F_EXP, &d);
            e[h] = tv_round(&d, "fp32", "rne", 0);
        }
        tv_bits(&sum, "fp32", orc(&sp, "fp32", NULL, e, NULL, H));
        assert_true(mpq_cmp_ui(sum.q, 1, 1) >= 0); /* the largest x's term is e^0 = 1 */
        for (size_t h = 0; h < H; h++) {
            tv_bits(&d, "fp32", e[h]);
            tv_div(&d, &d, &sum);
            tv_f32(&d);
            want[t * H + h] = tv_round(&d, out_fmt, "rne", 0);
        }
    }
    char ctx[96];
    snprintf(ctx, sizeof ctx, "softmax %s -> %s, sum %s, %s", in_fmt, out_fmt, tree, nx_dist_name(dist));
    expect(&out, "y", want, Tn * H, ctx);
    for (size_t h = 0; h < H; h++)
        tv_clear(&xv[h]);
    tv_clear(&m), tv_clear(&d), tv_clear(&sum);
    free(e);
    free(want);
    st_free(&in);
    if (keep)
        *keep = out;
    else
        st_free(&out);
    fam_spec_free(&s);
}

static void test_softmax(void **state)
{
    (void)state;
    softmax_check("bf16", "bf16", "stride(8, seq, pairwise)", NX_DIST_NORMAL, tu_seed(71), NULL);
    softmax_check("fp16", "fp32", "stride(4, seq, halving)", NX_DIST_ADVERSARIAL, tu_seed(72), NULL);
    softmax_check("fp32", "fp16", "pairwise", NX_DIST_ADVERSARIAL, tu_seed(73), NULL);
    softmax_check("bf16", "bf16", "seq", NX_DIST_INT, tu_seed(74), NULL);
    /* the tree of `sum` shows in an fp32 output: seq and its reverse, both
     * exact, differ on the same inputs */
    st_file ya, yb;
    softmax_check("fp32", "fp32", "seq", NX_DIST_NORMAL, tu_seed(75), &ya);
    softmax_check("fp32", "fp32", "reverse(seq)", NX_DIST_NORMAL, tu_seed(75), &yb);
    assert_true(count_diff(&ya, &yb, "y") > 0);
    st_free(&ya);
    st_free(&yb);
}

/* Runs softmax over T rows of H bf16 patterns; returns y's patterns. */
static void softmax_rows(const uint16_t *xb, size_t Tn, size_t H, const char *out_fmt, const char *tree,
                         st_file *out)
{
    fam_spec s;
    orc_point sp = P("fp32", tree, NULL);
    softmax_spec(&s, Tn, H, "bf16", out_fmt, &sp);
    st_file in;
    gen(&s, NX_DIST_NORMAL, 1, &in);
    const st_tensor *x = T(&in, "x");
    for (size_t i = 0; i < Tn * H; i++)
        st_put_bits(x, x->data, i, xb[i]);
    run(&s, &in, out);
    st_free(&in);
    fam_spec_free(&s);
}

/* Worked by hand.  A row whose k largest elements are equal and whose
 * others are -inf has e = 1 (d = +0) k times and e = +0 (d = -inf) else:
 * s = k exactly under any tree, y = fp32(1/k) there and +0 elsewhere.
 * k = 4: 0.25 (bf16 0x3e80); k = 3: fp32(1/3) = 0x3eaaaaab, whose bf16
 * rounding is 0x3eab (the 16 bits cut, 0xaaab, are above half); k = 1: 1.
 * A row of -inf only: d = -inf - -inf = NaN, so every y is NaN, and so is
 * every y of a row that holds a NaN, or a +inf (inf - inf = NaN).  Row 6,
 * {-100, -101} and -inf: only the max subtraction keeps its terms normal
 * (e^-100 is an fp32 subnormal): d = {0, -1}, e = {1, 0x1.78b564p-2},
 * s = fp32(1 + e1) = 0x1.5e2d58p+0 (every other addition adds +0, in any
 * tree), y = 0x1.764d5p-1 (bf16 0x3f3b) and 0x1.136562p-2 (bf16 0x3e8a:
 * the bits cut, 0xb2b1, are above half). */
static void test_softmax_special_rows(void **state)
{
    (void)state;
    enum { TN = 7, H = 12 };
    const uint16_t NI = 0xff80, PI = 0x7f80, QN = 0x7fc0;
    static const char *const trees[] = {"seq", "stride(8, seq, pairwise)", "reverse(pairwise)"};
    uint16_t xb[TN * H];
    for (size_t i = 0; i < TN * H; i++)
        xb[i] = NI;
    for (size_t h = 0; h < H; h += 3) /* row 0: four zeros at 0, 3, 6, 9 */
        xb[h] = h % 2 ? 0x8000 : 0x0000; /* -0 and +0: both the maximum, d = +0 */
    xb[H + 2] = xb[H + 7] = xb[H + 11] = 0x4020; /* row 1: three 2.5 */
    xb[2 * H + 5] = 0xc2c8;                      /* row 2: -100 alone: y = 1 */
    /* row 3: -inf only */
    for (size_t h = 0; h < H; h++) /* row 4: a NaN among finite values; row 5: a +inf among them */
        xb[4 * H + h] = xb[5 * H + h] = (uint16_t)(0x3f80 + h);
    xb[4 * H + 6] = QN;
    xb[5 * H + 1] = PI;
    xb[6 * H + 0] = 0xc2c8; /* row 6: -100 and -101 */
    xb[6 * H + 4] = 0xc2ca;
    for (size_t k = 0; k < 3; k++)
        for (int o = 0; o < 2; o++) {
            st_file out;
            softmax_rows(xb, TN, H, o ? "fp32" : "bf16", trees[k], &out);
            const st_tensor *y = T(&out, "y");
            for (size_t h = 0; h < H; h++) {
                uint64_t w0 = h % 3 ? 0 : (o ? 0x3e800000u : 0x3e80);
                uint64_t w1 = h == 2 || h == 7 || h == 11 ? (o ? 0x3eaaaaabu : 0x3eab) : 0;
                uint64_t w2 = h == 5 ? (o ? 0x3f800000u : 0x3f80) : 0;
                uint64_t nan = o ? 0x7fc00000u : 0x7fc0;
                uint64_t w6 = h == 0 ? (o ? 0x3f3b26a8u : 0x3f3b) : h == 4 ? (o ? 0x3e89b2b1u : 0x3e8a) : 0;
                const uint64_t w[TN] = {w0, w1, w2, nan, nan, nan, w6};
                for (size_t t = 0; t < TN; t++)
                    if (B(y, t * H + h) != w[t])
                        fail_msg("sum %s, %s out: y[%zu, %zu] = 0x%llx, want 0x%llx", trees[k], o ? "fp32" : "bf16",
                                 t, h, (unsigned long long)B(y, t * H + h), (unsigned long long)w[t]);
            }
            st_free(&out);
        }
}

/* One row worked outside the code: x = {1, 0.5, -0.25, 2, -3} in fp32,
 * sum `seq`, fp32 out.  m = 2; d = {-1, -1.5, -2.25, 0, -5} (exact);
 * e = exp(d) rounded to fp32 (from exp to 80 decimal digits):
 * 0x1.78b564p-2, 0x1.c8f878p-3, 0x1.afb718p-4, 1, 0x1.b993fep-8;
 * s = (((e0 + e1) + e2) + 1) + e4 in fp32 = 0x1.b4016ep+0 (the exact sum of
 * the e is 1.70314678503..., s = 1.70314681529...); y = fp32(e / s) =
 * 0x1.ba5e2p-3, 0x1.0c4f4p-3, 0x1.faf63ap-5, 0x1.2c9eb8p-1, 0x1.03459ap-8.
 * The test checks the e against MPFR and the rest in float arithmetic
 * (IEEE single, -ffp-contract=off) before it compares the reference. */
static void test_softmax_hand_row(void **state)
{
    (void)state;
    static const float x[5] = {1.0f, 0.5f, -0.25f, 2.0f, -3.0f};
    static const float e_want[5] = {0x1.78b564p-2f, 0x1.c8f878p-3f, 0x1.afb718p-4f, 1.0f, 0x1.b993fep-8f};
    static const float y_want[5] = {0x1.ba5e2p-3f, 0x1.0c4f4p-3f, 0x1.faf63ap-5f, 0x1.2c9eb8p-1f, 0x1.03459ap-8f};
    mpfr_t a;
    mpfr_init2(a, 200);
    float s = 0.0f;
    for (int h = 0; h < 5; h++) {
        mpfr_set_flt(a, x[h] - 2.0f, MPFR_RNDN); /* exact */
        mpfr_exp(a, a, MPFR_RNDN);
        assert_true(mpfr_get_flt(a, MPFR_RNDN) == e_want[h]);
        s = s + e_want[h];
    }
    mpfr_clear(a);
    assert_true(s == 0x1.b4016ep+0f);
    for (int h = 0; h < 5; h++)
        assert_true(e_want[h] / s == y_want[h]);

    fam_spec sp;
    orc_point pt = P("fp32", "seq", NULL);
    softmax_spec(&sp, 1, 5, "fp32", "fp32", &pt);
    st_file in, out;
    gen(&sp, NX_DIST_NORMAL, 1, &in);
    const st_tensor *xt = T(&in, "x");
    for (int h = 0; h < 5; h++) {
        uint32_t u;
        memcpy(&u, &x[h], sizeof u);
        st_put_bits(xt, xt->data, (size_t)h, u);
    }
    run(&sp, &in, &out);
    const st_tensor *y = T(&out, "y");
    for (int h = 0; h < 5; h++) {
        uint32_t u;
        memcpy(&u, &y_want[h], sizeof u);
        if (B(y, (size_t)h) != u)
            fail_msg("y[%d] = 0x%08llx, want 0x%08x (%a)", h, (unsigned long long)B(y, (size_t)h), u, (double)y_want[h]);
    }
    st_free(&in);
    st_free(&out);
    fam_spec_free(&sp);
}

static double f32_of_bits(uint64_t b);

/* ref_bound for softmax: every element of the reference's y within its
 * bound of the exact softmax (MPFR at 300 bits: e^(x - m) summed and
 * divided, no fp32 step), under fp32 and bf16 outputs and three trees; a
 * row holding a NaN has no finite bound. */
static void test_softmax_bound(void **state)
{
    (void)state;
    static const char *const trees[] = {"seq", "stride(8, seq, pairwise)", "split(3, pairwise, seq)"};
    static const nx_dist dists[] = {NX_DIST_NORMAL, NX_DIST_ADVERSARIAL, NX_DIST_INT};
    const size_t Tn = 6, H = 300;
    double *ex = malloc(Tn * H * sizeof *ex);
    assert_non_null(ex);
    mpfr_t s, t;
    mpfr_inits2(300, s, t, (mpfr_ptr)0);
    for (size_t k = 0; k < 3; k++)
        for (int o = 0; o < 2; o++) {
            fam_spec sp;
            orc_point pt = P("fp32", trees[k], NULL);
            softmax_spec(&sp, Tn, H, "fp32", o ? "fp32" : "bf16", &pt);
            st_file in, out;
            gen(&sp, dists[k], tu_seed(76 + k * 2 + (uint64_t)o), &in);
            run(&sp, &in, &out);
            const st_tensor *x = T(&in, "x"), *y = T(&out, "y");
            for (size_t r = 0; r < Tn; r++) {
                double mx = -INFINITY;
                for (size_t h = 0; h < H; h++)
                    mx = fmax(mx, f32_of_bits(B(x, r * H + h)));
                mpfr_set_zero(s, 1);
                for (size_t h = 0; h < H; h++) {
                    mpfr_set_d(t, f32_of_bits(B(x, r * H + h)), MPFR_RNDN);
                    mpfr_sub_d(t, t, mx, MPFR_RNDN); /* exact at 300 bits: two fp32 values */
                    mpfr_exp(t, t, MPFR_RNDN);
                    mpfr_add(s, s, t, MPFR_RNDN);
                }
                for (size_t h = 0; h < H; h++) {
                    mpfr_set_d(t, f32_of_bits(B(x, r * H + h)), MPFR_RNDN);
                    mpfr_sub_d(t, t, mx, MPFR_RNDN);
                    mpfr_exp(t, t, MPFR_RNDN);
                    mpfr_div(t, t, s, MPFR_RNDN);
                    ex[r * H + h] = mpfr_get_d(t, MPFR_RNDN);
                }
            }
            double *bound;
            size_t n;
            char why[256];
            nx_err e = {0};
            if (ref_bound(&sp, &in, 1, 2, &bound, &n, why, sizeof why, &e) != NX_OK)
                fail_msg("ref_bound: %s", e.msg);
            assert_int_equal(n, Tn * H);
            for (size_t i = 0; i < n; i++) {
                double got = o ? f32_of_bits(B(y, i)) : f32_of_bits(B(y, i) << 16);
                if (!(fabs(got - ex[i]) <= bound[i]))
                    fail_msg("sum %s, %s out: y[%zu] = %a, exact %a: error %g beyond the bound %g", trees[k],
                             o ? "fp32" : "bf16", i, got, ex[i], fabs(got - ex[i]), bound[i]);
            }
            free(bound);
            if (k == 0 && o == 1) { /* a NaN: no finite bound, said as such */
                st_put_bits(x, x->data, 2 * H + 5, 0x7fc00000u);
                assert_int_equal(ref_bound(&sp, &in, 1, 2, &bound, &n, why, sizeof why, &e), NX_EUNSUPPORTED);
                assert_non_null(strstr(why, "unbounded at element 600"));
            }
            st_free(&in);
            st_free(&out);
            fam_spec_free(&sp);
        }
    mpfr_clears(s, t, (mpfr_ptr)0);
    free(ex);
}

/* --- elementwise functions, directly ------------------------------------------------------ */

static double f32_of_bits(uint64_t b)
{
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

static double want_func(int f, double x)
{
    tv a, r;
    tv_init(&a), tv_init(&r);
    tv_d(&a, x);
    tv_func(&r, f, &a);
    double w = f32_of_bits(tv_round(&r, "fp32", "rne", 0));
    tv_clear(&a), tv_clear(&r);
    return w;
}

/* exp, rsqrt, silu and division against MPFR at 300 bits and exact
 * rationals, on random fp32 arguments and on the edges: subnormal and
 * overflowing exp, silu's cut-offs, division into the subnormals. */
static void test_elementwise_cr(void **state)
{
    (void)state;
    ref_math m;
    ref_math_init(&m);
    nx_err e = {0};
    uint64_t rs = tu_seed(71);
    char ctx[96];
    for (int i = 0; i < 6000; i++) {
        double x;
        int kind = i % 6;
        uint32_t r32 = (uint32_t)tu_rand64(&rs);
        float f;
        if (kind == 0) { /* exp near under/overflow and everywhere in between */
            x = -110.0 + 200.0 * (double)(r32 >> 8) / 16777216.0;
        } else if (kind == 1) { /* any finite positive fp32 for rsqrt */
            r32 &= 0x7fffffffu;
            if ((r32 >> 23) == 0xff)
                r32 = 0x3f800000u;
            memcpy(&f, &r32, sizeof f);
            x = f;
        } else if (kind == 2) { /* silu around its cut-offs */
            x = -120.0 + 160.0 * (double)(r32 >> 8) / 16777216.0;
        } else if (kind == 3) { /* small arguments */
            x = ldexp((double)(r32 >> 8), -24 - (int)(r32 & 31));
            if (r32 & 0x80)
                x = -x;
        } else {
            x = 0;
        }
        x = (double)(float)x; /* an fp32 argument */
        if (kind <= 3) {
            if (kind != 1) {
                double got = ref_f32_exp(&m, x, &e), want;
                snprintf(ctx, sizeof ctx, "exp(%a)", x);
                if (x < 88.5)
                    assert_double_bits_eq_ctx(got, want_func(F_EXP, x), ctx);
                else if (x > 88.73) /* beyond log((2 - 2^-24) 2^127) = 88.7228...: inf in rne */
                    assert_double_bits_eq_ctx(got, INFINITY, ctx);
                got = ref_f32_silu(&m, x, &e), want = want_func(F_SILU, x);
                snprintf(ctx, sizeof ctx, "silu(%a)", x);
                assert_double_bits_eq_ctx(got, want, ctx);
            }
            if (x > 0) {
                snprintf(ctx, sizeof ctx, "rsqrt(%a)", x);
                assert_double_bits_eq_ctx(ref_f32_rsqrt(&m, x), want_func(F_RSQRT, x), ctx);
            }
        } else { /* division of fp32 values, results down to the subnormals */
            uint32_t a32 = (uint32_t)tu_rand64(&rs) & 0x7f7fffffu, b32 = (uint32_t)tu_rand64(&rs) & 0x7f7fffffu;
            float fa, fb;
            memcpy(&fa, &a32, sizeof fa);
            memcpy(&fb, &b32, sizeof fb);
            if (fb == 0)
                continue;
            tv a, b, q;
            tv_init(&a), tv_init(&b), tv_init(&q);
            tv_d(&a, fa), tv_d(&b, kind == 5 ? -(double)fb : fb);
            tv_div(&q, &a, &b);
            double want = f32_of_bits(tv_round(&q, "fp32", "rne", 0));
            double got = ref_f32_div(&m, fa, kind == 5 ? -(double)fb : fb);
            if (isinf(want) || isinf(got))
                assert_true(isinf(want) && isinf(got) && signbit(want) == signbit(got));
            else {
                snprintf(ctx, sizeof ctx, "%a / %a", (double)fa, (double)fb);
                assert_double_bits_eq_ctx(got, want, ctx);
            }
            tv_clear(&a), tv_clear(&b), tv_clear(&q);
        }
    }
    assert_int_equal(e.code, NX_OK);
    /* specials */
    assert_double_bits_eq(ref_f32_exp(&m, -INFINITY, &e), 0.0);
    assert_double_bits_eq(ref_f32_exp(&m, 0.0, &e), 1.0);
    assert_double_bits_eq(ref_f32_rsqrt(&m, -0.0), -INFINITY);
    assert_true(isnan(ref_f32_rsqrt(&m, -1.0)));
    assert_double_bits_eq(ref_f32_silu(&m, -0.0, &e), -0.0);
    assert_double_bits_eq(ref_f32_silu(&m, -1000.0, &e), -0.0);
    assert_double_bits_eq(ref_f32_silu(&m, 0x1p100, &e), 0x1p100);
    assert_double_bits_eq(ref_f32_div(&m, 1.0, -0.0), -INFINITY);
    ref_math_clear(&m);
}

/* Decimal params: parsed exactly, rounded once to fp32. */
static void test_param_f32(void **state)
{
    (void)state;
    const char *txt[][3] = {{"1e-6", "1", "1000000"}, {"0.1", "1", "10"}, {"1e-5", "1", "100000"},
                            {"0.7", "7", "10"}, {"1e-45", "1", "1000000000000000000000000000000000000000000000"}};
    for (size_t i = 0; i < sizeof txt / sizeof txt[0]; i++) {
        fam_spec s;
        spec_init(&s, "rmsnorm");
        param(&s, "eps", txt[i][0]);
        double got;
        assert_int_equal(ref_param_f32(&s, "eps", "0", &got, NULL), NX_OK);
        tv w;
        tv_init(&w);
        tv_param_f32(&w, txt[i][1], txt[i][2]);
        uint64_t wb = tv_round(&w, "fp32", "rne", 0);
        assert_double_bits_eq_ctx(got, f32_of_bits(wb), txt[i][0]);
        tv_clear(&w);
        fam_spec_free(&s);
    }
    fam_spec s;
    spec_init(&s, "rmsnorm");
    double v;
    /* absent, no family default: the caller's */
    assert_int_equal(ref_param_f32(&s, "alpha", "0x1p-3", &v, NULL), NX_OK);
    assert_double_bits_eq(v, 0.125);
    /* absent with a family default (rmsnorm's eps = 1e-6, family/famdesc.c): the
     * family's, 1e-6 rounded to fp32 = 0x1.0c6f7ap-20, whatever the caller says */
    assert_int_equal(ref_param_f32(&s, "eps", "0x1p-3", &v, NULL), NX_OK);
    assert_double_bits_eq(v, 0x1.0c6f7ap-20);
    /* just above the tie 1 + 2^-24, by far less than 2^-256: round-to-odd keeps the sticky bit */
    param(&s, "eps", "1.000000059604644775390625" "00000000000000000000000000000000000000000000000000"
                     "00000000000000000000000000000000000000000000000000001");
    assert_int_equal(ref_param_f32(&s, "eps", "0", &v, NULL), NX_OK);
    assert_double_bits_eq(v, 0x1.000002p+0);
    param(&s, "eps", "-1.000000059604644775390625");
    assert_int_equal(ref_param_f32(&s, "eps", "0", &v, NULL), NX_OK);
    assert_double_bits_eq(v, -1.0); /* the tie itself: to even */
    param(&s, "eps", "1e-6x");
    nx_err e = {0};
    assert_int_equal(ref_param_f32(&s, "eps", "0", &v, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "'1e-6x' is not a finite number"));
    param(&s, "eps", "1e39");
    assert_int_equal(ref_param_f32(&s, "eps", "0", &v, &e), NX_EINVAL);
    fam_spec_free(&s);
}

/* --- validation -------------------------------------------------------------------------- */

static void expect_fail(const fam_spec *s, const st_file *in, const char *needle)
{
    st_file out;
    st_init(&out);
    nx_err e = {0};
    assert_int_not_equal(ref_run(s, in, &out, 1, &e), NX_OK);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' does not say '%s'", e.msg, needle);
    st_free(&out);
}

static void test_validation(void **state)
{
    (void)state;
    gemm_case c = {"bf16", "bf16", 3, 5, 37, 1.0, 0.0, 0, P("fp32", "seq", "fp32"), NX_DIST_NORMAL};
    fam_spec s;
    gemm_spec(&s, &c);
    st_file in;
    gen(&s, NX_DIST_NORMAL, 1, &in);
    /* a file without b, and one with b of the wrong shape and dtype */
    st_file bad;
    st_init(&bad);
    const st_tensor *a = T(&in, "a");
    st_tensor *t;
    assert_int_equal(st_add_tensor(&bad, "a", a->dtype, 2, a->shape, &t, NULL), NX_OK);
    expect_fail(&s, &bad, "missing input tensor 'b' (expected BF16 [N, K] = [5, 37])");
    assert_int_equal(st_add_tensor(&bad, "b", ST_BF16, 2, (int64_t[]){5, 36}, &t, NULL), NX_OK);
    expect_fail(&s, &bad, "input tensor 'b' has shape [5, 36]; expected [N, K] = [5, 37]");
    st_free(&bad);
    st_init(&bad);
    assert_int_equal(st_add_tensor(&bad, "a", ST_F16, 2, a->shape, &t, NULL), NX_OK);
    expect_fail(&s, &bad, "input tensor 'a' has dtype F16; expected BF16 [M, K] = [3, 37]");
    assert_int_equal(st_add_tensor(&bad, "junk", ST_F16, 1, (int64_t[]){1}, &t, NULL), NX_OK);
    expect_fail(&s, &bad, "unexpected input tensor 'junk'");
    st_free(&bad);
    st_free(&in);
    fam_spec_free(&s);

    /* the k reduction of gemm must end in fp32 */
    gemm_spec(&s, &c);
    gen(&s, NX_DIST_NORMAL, 1, &in);
    fam_spec_free(&s);
    c.k = P("fp32", "seq", "bf16");
    gemm_spec(&s, &c);
    expect_fail(&s, &in, "reduction 'k' has out = bf16");
    st_free(&in);
    fam_spec_free(&s);

    /* int4 weights out of range */
    gemv_case g = {1, 4, 32, 16, 1, 0, P("fp32", "seq", "fp16"), P("fp32", "seq", NULL), 0};
    gemv_spec(&s, &g);
    gen(&s, NX_DIST_NORMAL, 1, &in);
    const st_tensor *q = T(&in, "qweight");
    st_put_bits(q, q->data, 5, 16);
    expect_fail(&s, &in, "input tensor 'qweight': element 5 is 16, outside [0, 15]");
    st_free(&in);
    fam_spec_free(&s);

    /* missing reduction, missing dimension, unknown family */
    spec_init(&s, "rmsnorm");
    param(&s, "T", "2");
    param(&s, "H", "8");
    st_init(&in);
    expect_fail(&s, &in, "declares no numerics for reduction 'sumsq'");
    fam_spec_free(&s);
    spec_init(&s, "rmsnorm");
    param(&s, "T", "2");
    expect_fail(&s, &in, "dimension 'H' has no value");
    fam_spec_free(&s);
    spec_init(&s, "conv2d");
    expect_fail(&s, &in, "family 'conv2d' has no reference implementation");
    fam_spec_free(&s);
}

/* The metadata a reference carries about its spec. */
static void test_spec_meta(void **state)
{
    (void)state;
    fam_spec s;
    spec_init(&s, "gemm");
    orc_point k = P("fp32", "split(2, seq, atomic)", "fp32");
    red(&s, "k", &k);
    assert_int_equal(fam_spec_add_elem(&s, "exp", FAM_ELEM_APPROX, "ex2.approx.ftz.f32", 2, NULL), NX_OK);
    s.hash = strdup("abc123");
    st_file out;
    st_init(&out);
    assert_int_equal(ref_spec_meta(&s, &out, NULL), NX_OK);
    assert_string_equal(st_get_meta(&out, "spec_hash"), "abc123");
    assert_string_equal(st_get_meta(&out, "reduction.k"), "split(2, seq, atomic)");
    assert_non_null(strstr(st_get_meta(&out, "numerics.k"), "tree = \"split(2, seq, atomic)\""));
    assert_non_null(strstr(st_get_meta(&out, "nondeterministic.k"), "evaluated in seq order"));
    assert_non_null(strstr(st_get_meta(&out, "elementwise.exp"), "ex2.approx.ftz.f32 (2 ulp): evaluated as cr"));
    st_free(&out);
    fam_spec_free(&s);
}


/* Descriptions of the inputs, as the generator and devices see them. */
static void test_inputs_description(void **state)
{
    (void)state;
    fam_spec s;
    spec_init(&s, "paged_decode_attention");
    const char *kv[][2] = {{"B", "2"}, {"HQ", "8"}, {"HKV", "2"}, {"D", "16"}, {"P", "4"}, {"NP", "9"}, {"MAXP", "5"}};
    for (int i = 0; i < 7; i++)
        param(&s, kv[i][0], kv[i][1]);
    orc_point p = P("fp32", "seq", NULL);
    red(&s, "qk", &p);
    red(&s, "softmax_sum", &p);
    red(&s, "pv", &p);
    ref_tensor_desc *d;
    size_t n;
    assert_int_equal(ref_inputs(&s, &d, &n, NULL), NX_OK);
    assert_int_equal(n, 5);
    assert_string_equal(d[1].name, "k_cache");
    assert_string_equal(d[1].dims, "[NP, P, HKV, D]");
    assert_int_equal(d[1].shape[0], 9);
    assert_int_equal(d[1].shape[3], 16);
    assert_int_equal(d[3].kind, REF_INTS);
    assert_int_equal(d[3].hi, 8);
    assert_int_equal(d[4].lo, 1);
    assert_int_equal(d[4].hi, 20);
    free(d);
    fam_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_splitk_epilogue),
        cmocka_unit_test(test_gemm_atom_and_fp8),
        cmocka_unit_test(test_gemm_trees_matter_but_not_on_ints),
        cmocka_unit_test(test_gemv_per_element_vs_per_group),
        cmocka_unit_test(test_gemv_packed),
        cmocka_unit_test(test_gemv_weights),
        cmocka_unit_test(test_moe_combine_order),
        cmocka_unit_test(test_attention_gqa_split),
        cmocka_unit_test(test_attention_negative_scores),
        cmocka_unit_test(test_gemm_pairwise_odd),
        cmocka_unit_test(test_gemm_stride_lane_order),
        cmocka_unit_test(test_exp_near_overflow),
        cmocka_unit_test(test_rmsnorm_residual),
        cmocka_unit_test(test_silu_and_mul),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_special_rows),
        cmocka_unit_test(test_softmax_hand_row),
        cmocka_unit_test(test_softmax_bound),
        cmocka_unit_test(test_elementwise_cr),
        cmocka_unit_test(test_param_f32),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_inputs_description),
        cmocka_unit_test(test_spec_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
