/* test_cpu_backend.c: the embedded cpu backend (devices/cpu) against the
 * exact reference (refimpl, MPFR) on every cpu point of the sample registry.
 *
 * The expected bits never come from the backend: each point is resolved
 * from kernels/ at a small shape, its inputs generated (normal, adversarial
 * with inf/NaN, int), and the backend's outputs must equal ref_run's BIT
 * FOR BIT: that is the proof that each kernel realises the tree its point
 * declares.  Then Tier 1 material: one thread == 2, 3, 7 threads, the
 * legacy kernel (the point's kernel id + "_legacy") == the new one, a row
 * alone == the same row in a batch; and the negative controls DO differ
 * (cpu_gemm_splitk_threads between thread counts, cpu_gemm_batch_split
 * between batch sizes).  Also: the declared approximations (silu and
 * softmax with libm's expf) stay within their ulp bounds, softmax's rows
 * with -inf, NaN and +inf, input validation names the tensor, a kernel refuses
 * a point it does not realise, describe() is JSON, and the format
 * conversions and correctly rounded functions against independent oracles
 * (scaled nearbyint in binary64; MPFR).  PARITY_SEED overrides the seeds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "device.h"
#include "refimpl.h"
#include "registry.h"
#include "testutil.h"

static reg_registry *REG;
static uint64_t SEED;

static int setup(void **state)
{
    (void)state;
    nx_err e = {0};
    if (reg_load(PARITY_KERNELS_DIR, &REG, &e) != NX_OK) {
        print_error("reg_load %s: %s\n", PARITY_KERNELS_DIR, e.msg);
        return -1;
    }
    SEED = tu_seed(20250101);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reg_free(REG);
    return 0;
}

/* --- helpers ------------------------------------------------------------------------ */

/* Small shapes that still cut every loop unevenly: K not a multiple of the
 * 8 lanes nor of the 4 slices, GQA with two KV heads, context lengths over
 * several pages. */
static const char *small_shape(const char *family)
{
    if (!strcmp(family, "gemm"))
        return "M=3,N=6,K=37";
    if (!strcmp(family, "gemv_w4a16"))
        return "B=2,N=5,K=256";
    if (!strcmp(family, "moe_grouped_gemm"))
        return "T=3,E=4,H=19,N=5,topk=2";
    if (!strcmp(family, "paged_decode_attention"))
        return "B=3,HQ=4,HKV=2,D=16,P=4,NP=8,MAXP=4";
    if (!strcmp(family, "rmsnorm"))
        return "T=3,H=45";
    if (!strcmp(family, "silu_and_mul"))
        return "T=3,H=21";
    if (!strcmp(family, "softmax"))
        return "T=5,H=37";
    return NULL;
}

static void resolve(const char *id, const char *shape, fam_spec *s)
{
    nx_err e = {0};
    if (reg_resolve(REG, "cpu", id, shape, s, &e) != NX_OK)
        fail_msg("reg_resolve cpu %s at %s: %s", id, shape ? shape : "-", e.msg);
}

static void gen(const fam_spec *s, nx_dist dist, int specials, uint64_t seed, st_file *in)
{
    st_init(in);
    ref_gen_opts o = {seed, dist, specials, 2};
    nx_err e = {0};
    if (ref_generate(s, &o, in, &e) != NX_OK)
        fail_msg("ref_generate %s.%s: %s", s->family, s->point, e.msg);
}

static void ref(const fam_spec *s, const st_file *in, st_file *out)
{
    st_init(out);
    nx_err e = {0};
    if (ref_run(s, in, out, 2, &e) != NX_OK)
        fail_msg("ref_run %s.%s: %s", s->family, s->point, e.msg);
}

static void dev(const fam_spec *s, const st_file *in, dev_mode mode, int threads, const char *kernel, st_file *out)
{
    st_init(out);
    dev_opts o = {mode, threads, kernel};
    nx_err e = {0};
    if (dev_run(dev_cpu_backend(), s, in, out, &o, &e) != NX_OK)
        fail_msg("cpu run %s.%s (kernel %s, %s, %d threads): %s", s->family, s->point, kernel ? kernel : "default",
                 mode == DEV_EAGER ? "eager" : "graphed", threads, e.msg);
}

/* Elements whose bits differ between got and want (every tensor of want,
 * which got must hold with the same dtype and shape).  With `report`, the
 * first difference is printed. */
static size_t ndiff(const st_file *got, const st_file *want, const char *ctx, int report)
{
    assert_int_equal(got->ntensors, want->ntensors);
    size_t d = 0;
    for (size_t i = 0; i < want->ntensors; i++) {
        const st_tensor *w = &want->tensors[i], *g = st_find(got, w->name);
        if (!g)
            fail_msg("%s: output '%s' missing", ctx, w->name);
        assert_int_equal(g->dtype, w->dtype);
        assert_int_equal(g->ndim, w->ndim);
        for (int k = 0; k < w->ndim; k++)
            assert_int_equal(g->shape[k], w->shape[k]);
        for (size_t e = 0; e < w->nelem; e++) {
            uint64_t a = st_get_bits(g, g->data, e), b = st_get_bits(w, w->data, e);
            if (a != b) {
                if (report && d == 0)
                    print_error("%s: %s[%zu]: got 0x%llx, want 0x%llx (%s)\n", ctx, w->name, e,
                                (unsigned long long)a, (unsigned long long)b, st_dtype_name(w->dtype));
                d++;
            }
        }
    }
    return d;
}

static void assert_same(const st_file *got, const st_file *want, const char *ctx)
{
    size_t d = ndiff(got, want, ctx, 1);
    if (d)
        fail_msg("%s: %zu elements differ (seed %llu)", ctx, d, (unsigned long long)SEED);
}

/* A point built to fail a Tier 1 check names it in param negative_control. */
static int is_negative_control(const fam_spec *s)
{
    return fam_param_get(s, "negative_control") != NULL;
}

static int is_approx(const fam_spec *s)
{
    for (size_t i = 0; i < s->nelems; i++)
        if (s->elems[i].impl == FAM_ELEM_APPROX)
            return 1;
    return 0;
}

/* Every cpu point's point-kernel, eager and graphed at 2, 3, 7 threads,
 * against the reference on one input set. */
static void check_point(const fam_spec *s, nx_dist dist, int specials, uint64_t seed)
{
    char ctx[256];
    st_file in, want, got;
    gen(s, dist, specials, seed, &in);
    ref(s, &in, &want);
    snprintf(ctx, sizeof ctx, "%s.%s %s%s eager", s->family, s->point, nx_dist_name(dist), specials ? "+specials" : "");
    dev(s, &in, DEV_EAGER, 0, NULL, &got);
    assert_same(&got, &want, ctx);
    st_free(&got);
    static const int threads[] = {2, 3, 7};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        snprintf(ctx, sizeof ctx, "%s.%s %s graphed %d threads", s->family, s->point, nx_dist_name(dist), threads[t]);
        dev(s, &in, DEV_GRAPHED, threads[t], NULL, &got);
        assert_same(&got, &want, ctx);
        st_free(&got);
    }
    st_free(&want);
    st_free(&in);
}

/* --- every point, bit for bit ---------------------------------------------------------- */

static void test_every_point_bit_exact(void **state)
{
    (void)state;
    char **ids;
    size_t n;
    nx_err e = {0};
    assert_int_equal(reg_list_points(REG, "cpu", &ids, &n, &e), NX_OK);
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        char fam[64];
        snprintf(fam, sizeof fam, "%.*s", (int)strcspn(ids[i], "."), ids[i]);
        const char *shape = small_shape(fam);
        if (!shape)
            fail_msg("no small shape for family %s (a new family: add one here)", fam);
        fam_spec s;
        resolve(ids[i], shape, &s);
        assert_true(dev_supports(dev_cpu_backend(), &s, NULL));
        if (!is_negative_control(&s) && !is_approx(&s)) {
            check_point(&s, NX_DIST_NORMAL, 0, SEED + i);
            check_point(&s, NX_DIST_ADVERSARIAL, 1, SEED + 100 + i);
            check_point(&s, NX_DIST_INT, 0, SEED + 200 + i);
            checked++;
        }
        fam_spec_free(&s);
        free(ids[i]);
    }
    free(ids);
    assert_true(checked >= 11);
}

/* Shapes that reach the corners: K shorter than the lanes (empty lanes and
 * empty slices give +0), one output, a context longer than one page table
 * row. */
static void test_corner_shapes(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"gemm.splitk", "M=1,N=1,K=3"},   {"gemm.splitk", "M=2,N=9,K=8"},    {"gemm.splitk", "M=5,N=3,K=130"},
        {"gemm.seq", "M=1,N=3,K=1"},      {"rmsnorm.plain", "T=1,H=3"},      {"rmsnorm.fused_add", "T=2,H=17"},
        {"rmsnorm.plain", "T=400,H=5"}, /* many rsqrt calls: 1/sqrtf would differ somewhere */
        {"gemv_w4a16.per_element", "B=1,N=3,K=128"},
        {"moe_grouped_gemm.vec", "T=2,E=3,H=5,N=2,topk=3"},
        {"paged_decode_attention.nosplit", "B=2,HQ=2,HKV=1,D=3,P=1,NP=3,MAXP=5"},
        {"softmax.plain", "T=1,H=1"},     {"softmax.plain", "T=3,H=5"},      {"softmax.plain", "T=2,H=4099"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fam_spec s;
        resolve(cases[i][0], cases[i][1], &s);
        check_point(&s, NX_DIST_NORMAL, 0, SEED + 300 + i);
        check_point(&s, NX_DIST_ADVERSARIAL, 1, SEED + 400 + i);
        fam_spec_free(&s);
    }
}

/* Signed zeros through the trees: bf16 products that underflow to -0 in
 * fp32 keep a seq chain (and every stride lane) at -0, while a split's seq
 * combinator starts from +0 (+0 + -0 = +0), and an exact +0 product turns
 * a -0 chain into +0.  Crafted inputs (a = 2^-133, b = -2^-133, some +0),
 * every gemm point, against the reference. */
static void test_signed_zeros(void **state)
{
    (void)state;
    static const char *const ids[] = {"gemm.seq", "gemm.splitk", "gemm.splitk_threads", "gemm.batch_split"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        fam_spec s;
        resolve(ids[i], "M=2,N=3,K=64", &s);
        st_file in, want, got;
        gen(&s, NX_DIST_NORMAL, 0, SEED, &in);
        const st_tensor *a = st_find(&in, "a"), *b = st_find(&in, "b");
        for (size_t e = 0; e < a->nelem; e++)
            st_put_bits(a, a->data, e, 0x0001); /* +2^-133, the smallest bf16 subnormal */
        for (size_t e = 0; e < b->nelem; e++)
            st_put_bits(b, b->data, e, e < 128 || e % 7 ? 0x8001 : 0x0000); /* -2^-133; +0 in column 2 */
        ref(&s, &in, &want);
        for (int t = 1; t <= 3; t++) {
            dev(&s, &in, t == 1 ? DEV_EAGER : DEV_GRAPHED, t, NULL, &got);
            assert_same(&got, &want, ids[i]);
            st_free(&got);
        }
        if (!strcmp(ids[i], "gemm.seq")) /* the chain stays at -0 */
            assert_int_equal(st_get_bits(st_find(&want, "y"), st_find(&want, "y")->data, 0), 0x8000);
        st_free(&want);
        st_free(&in);
        fam_spec_free(&s);
    }
}

/* split512 at a context of up to 768 positions (two splits), and the same
 * point with split = 3 set by hand (many splits, the combine's order). */
static void test_attention_splits(void **state)
{
    (void)state;
    fam_spec s;
    resolve("paged_decode_attention.split512", "B=2,HQ=2,HKV=1,D=8,P=64,NP=12,MAXP=12", &s);
    check_point(&s, NX_DIST_NORMAL, 0, SEED + 500);
    fam_spec_free(&s);
    resolve("paged_decode_attention.split512", "B=3,HQ=4,HKV=2,D=16,P=4,NP=8,MAXP=4", &s);
    assert_int_equal(fam_spec_set_param(&s, "split", "3", NULL), NX_OK);
    check_point(&s, NX_DIST_NORMAL, 0, SEED + 501);
    check_point(&s, NX_DIST_ADVERSARIAL, 1, SEED + 502);
    fam_spec_free(&s);
}

/* The same points with fp32 outputs (param `out`): a bf16 output rounds
 * away most one-ulp differences of the fp32 steps before it (1/sqrtf for
 * the cr rsqrt, expf for the cr exp), an fp32 output shows them. */
static void test_fp32_outputs(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"rmsnorm.plain", "T=64,H=33"},
        {"rmsnorm.fused_add", "T=64,H=20"},
        {"silu_and_mul.cr", "T=32,H=128"},
        {"softmax.plain", "T=16,H=131"},
        {"paged_decode_attention.nosplit", "B=4,HQ=8,HKV=2,D=16,P=8,NP=16,MAXP=8"},
        {"paged_decode_attention.split512", "B=4,HQ=8,HKV=2,D=16,P=8,NP=16,MAXP=8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fam_spec s;
        resolve(cases[i][0], cases[i][1], &s);
        assert_int_equal(fam_spec_set_param(&s, "out", "fp32", NULL), NX_OK);
        if (!strcmp(s.point, "split512"))
            assert_int_equal(fam_spec_set_param(&s, "split", "5", NULL), NX_OK);
        check_point(&s, NX_DIST_NORMAL, 0, SEED + 1200 + i);
        fam_spec_free(&s);
    }
}

/* gemm with alpha, beta, c and bias, fp16 in and out; e4m3 in. */
static void test_gemm_epilogue(void **state)
{
    (void)state;
    fam_spec s;
    resolve("gemm.splitk", "M=3,N=5,K=41", &s);
    assert_int_equal(fam_spec_set_param(&s, "alpha", "0.3", NULL), NX_OK);
    assert_int_equal(fam_spec_set_param(&s, "beta", "-1.7", NULL), NX_OK);
    assert_int_equal(fam_spec_set_param(&s, "bias", "true", NULL), NX_OK);
    check_point(&s, NX_DIST_NORMAL, 0, SEED + 600);
    assert_int_equal(fam_spec_set_param(&s, "in", "fp16", NULL), NX_OK);
    assert_int_equal(fam_spec_set_param(&s, "out", "fp16", NULL), NX_OK);
    check_point(&s, NX_DIST_ADVERSARIAL, 1, SEED + 601);
    assert_int_equal(fam_spec_set_param(&s, "in", "e4m3", NULL), NX_OK);
    assert_int_equal(fam_spec_set_param(&s, "out", "fp32", NULL), NX_OK);
    check_point(&s, NX_DIST_NORMAL, 0, SEED + 602);
    fam_spec_free(&s);
    resolve("gemv_w4a16.per_group", "B=3,N=4,K=256", &s);
    assert_int_equal(fam_spec_set_param(&s, "zero_points", "true", NULL), NX_OK);
    check_point(&s, NX_DIST_NORMAL, 0, SEED + 603);
    fam_spec_free(&s);
}

/* Both int4 layouts (the registry's packed = true and packed = false), an
 * odd K and an odd number of groups (rows padded with a nibble), with and
 * without zero points: each against the reference (check_point), and the
 * two layouts' outputs byte for byte the same. */
static void test_gemv_layouts(void **state)
{
    (void)state;
    static const char *const pts[] = {"gemv_w4a16.per_group", "gemv_w4a16.per_element"};
    for (size_t i = 0; i < 2; i++)
        for (int zp = 0; zp < 2; zp++) {
            st_file y[2];
            for (int pk = 0; pk < 2; pk++) {
                fam_spec s;
                resolve(pts[i], "B=2,N=5,K=45", &s);
                assert_int_equal(fam_spec_set_param(&s, "group", "15", NULL), NX_OK);
                assert_int_equal(fam_spec_set_param(&s, "zero_points", zp ? "true" : "false", NULL), NX_OK);
                assert_int_equal(fam_spec_set_param(&s, "packed", pk ? "true" : "false", NULL), NX_OK);
                check_point(&s, NX_DIST_NORMAL, 0, SEED + 610 + i * 2 + (size_t)zp);
                st_file in;
                gen(&s, NX_DIST_NORMAL, 0, SEED + 620 + i * 2 + (size_t)zp, &in);
                assert_int_equal(st_find(&in, "qweight")->shape[1], pk ? 23 : 45);
                dev(&s, &in, DEV_EAGER, 0, NULL, &y[pk]);
                st_free(&in);
                fam_spec_free(&s);
            }
            assert_same(&y[0], &y[1], pts[i]);
            st_free(&y[0]);
            st_free(&y[1]);
        }
}

/* --- Tier 1 material --------------------------------------------------------------------- */

/* The legacy rule: the legacy kernel of a point is its kernel id + "_legacy".
 * It realises the same point in other code: same bits as the new kernel. */
static void test_legacy_equals_new(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"gemm.splitk", "M=3,N=6,K=37"}, {"gemm.splitk", "M=4,N=9,K=300"}, {"gemm.splitk", "M=1,N=2,K=5"},
        {"rmsnorm.plain", "T=3,H=45"},   {"rmsnorm.plain", "T=2,H=7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fam_spec s;
        resolve(cases[i][0], cases[i][1], &s);
        char legacy[96], ctx[160];
        snprintf(legacy, sizeof legacy, "%s_legacy", s.kernel);
        assert_true(dev_supports(dev_cpu_backend(), &s, legacy));
        for (int d = 0; d < 2; d++) {
            st_file in, a, b;
            gen(&s, d ? NX_DIST_ADVERSARIAL : NX_DIST_NORMAL, d, SEED + 700 + i, &in);
            dev(&s, &in, DEV_GRAPHED, 2, NULL, &a);
            dev(&s, &in, DEV_EAGER, 0, legacy, &b);
            snprintf(ctx, sizeof ctx, "%s at %s: %s vs %s", cases[i][0], cases[i][1], s.kernel, legacy);
            assert_same(&b, &a, ctx);
            st_free(&a);
            st_free(&b);
            st_free(&in);
        }
        fam_spec_free(&s);
    }
}

/* Copies rows [0, rows) of every input tensor whose first dimension is the
 * batch into a file shaped for `rows` rows (the other tensors as they are). */
static void first_rows(const st_file *in, const char *const *batched, size_t nb, int64_t rows, st_file *out)
{
    st_init(out);
    for (size_t i = 0; i < in->ntensors; i++) {
        const st_tensor *t = &in->tensors[i];
        int64_t shape[ST_MAX_NDIM];
        memcpy(shape, t->shape, sizeof shape);
        int cut = 0;
        for (size_t k = 0; k < nb; k++)
            cut |= !strcmp(t->name, batched[k]);
        if (cut)
            shape[0] = rows;
        st_tensor *o;
        assert_int_equal(st_add_tensor(out, t->name, t->dtype, t->ndim, shape, &o, NULL), NX_OK);
        memcpy(o->data, t->data, o->nbytes); /* row-major: the first rows are a prefix */
    }
}

/* Row invariance holds for the real kernels: gemm row 0 alone == row 0 of a
 * batch of 16; rmsnorm token 0 alone == token 0 of 16. */
static void test_row_invariance(void **state)
{
    (void)state;
    static const char *const gemm_rows[] = {"a"}, *const rms_rows[] = {"x"}; /* softmax's rows are x's too */
    static const struct {
        const char *id, *big, *small;
        const char *const *rows;
    } cases[] = {
        {"gemm.splitk", "M=16,N=7,K=100", "M=1,N=7,K=100", gemm_rows},
        {"gemm.seq", "M=16,N=7,K=100", "M=1,N=7,K=100", gemm_rows},
        {"rmsnorm.plain", "T=16,H=45", "T=1,H=45", rms_rows},
        {"softmax.plain", "T=16,H=45", "T=1,H=45", rms_rows},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fam_spec big, small;
        resolve(cases[i].id, cases[i].big, &big);
        resolve(cases[i].id, cases[i].small, &small);
        st_file in, in1, yb, y1, y1ref;
        gen(&big, NX_DIST_NORMAL, 0, SEED + 800 + i, &in);
        first_rows(&in, cases[i].rows, 1, 1, &in1);
        dev(&big, &in, DEV_GRAPHED, 2, NULL, &yb);
        dev(&small, &in1, DEV_EAGER, 0, NULL, &y1);
        ref(&small, &in1, &y1ref);
        assert_same(&y1, &y1ref, cases[i].id);
        const st_tensor *a = st_find(&yb, "y"), *b = st_find(&y1, "y");
        for (size_t e = 0; e < b->nelem; e++)
            assert_int_equal(st_get_bits(a, a->data, e), st_get_bits(b, b->data, e));
        st_free(&in);
        st_free(&in1);
        st_free(&yb);
        st_free(&y1);
        st_free(&y1ref);
        fam_spec_free(&big);
        fam_spec_free(&small);
    }
}

/* NEGATIVE CONTROL: cpu_gemm_splitk_threads splits K over the team.  With
 * two threads it is the declared point (split_k = 2: equal to the
 * reference); with one or three it is not, and the bits differ. */
static void test_negative_control_threads(void **state)
{
    (void)state;
    fam_spec s;
    resolve("gemm.splitk_threads", "M=4,N=8,K=512", &s);
    assert_string_equal(s.kernel, "cpu_gemm_splitk_threads");
    assert_true(s.tol.has_rtol);
    st_file in, want, t1, t2, t3, t0;
    gen(&s, NX_DIST_NORMAL, 0, SEED + 900, &in);
    ref(&s, &in, &want);
    dev(&s, &in, DEV_EAGER, 0, NULL, &t1);
    dev(&s, &in, DEV_GRAPHED, 2, NULL, &t2);
    dev(&s, &in, DEV_GRAPHED, 3, NULL, &t3);
    assert_same(&t2, &want, "splitk_threads at 2 threads (the nominal split) vs the reference");
    size_t d12 = ndiff(&t1, &t2, "", 0), d23 = ndiff(&t2, &t3, "", 0), d1r = ndiff(&t1, &want, "", 0);
    print_message("negative control splitk_threads: 1 vs 2 threads: %zu of 32 differ; 2 vs 3: %zu\n", d12, d23);
    assert_true(d12 > 0);
    assert_true(d23 > 0);
    assert_true(d1r > 0); /* Tier 2: not bit-exact at one thread ... */
    /* ... but within the declared tolerance: |got - ref| <= atol + rtol |ref| */
    const st_tensor *g = st_find(&t1, "y"), *w = st_find(&want, "y");
    assert_int_equal(g->dtype, ST_F32);
    for (size_t e = 0; e < g->nelem; e++) {
        float a = cpu_bits_f32((uint32_t)st_get_bits(g, g->data, e)), b = cpu_bits_f32((uint32_t)st_get_bits(w, w->data, e));
        assert_true(fabs((double)a - (double)b) <= s.tol.atol + s.tol.rtol * fabs((double)b));
    }
    /* DEV_GRAPHED with threads = 0 is all of OpenMP's threads: force 2 */
    int old = omp_get_max_threads();
    omp_set_num_threads(2);
    dev(&s, &in, DEV_GRAPHED, 0, NULL, &t0);
    omp_set_num_threads(old);
    assert_same(&t0, &t2, "splitk_threads, omp_set_num_threads(2) and threads = 0");
    st_free(&in);
    st_free(&want);
    st_free(&t1);
    st_free(&t2);
    st_free(&t3);
    st_free(&t0);
    fam_spec_free(&s);
}

/* NEGATIVE CONTROL: cpu_gemm_batch_split splits K over 8 / M slices below 8
 * rows: row 0 alone (8 slices) differs from row 0 in a batch of 16 (1 slice,
 * the declared point, equal to the reference); thread counts change nothing. */
static void test_negative_control_batch(void **state)
{
    (void)state;
    static const char *const rows[] = {"a"};
    fam_spec big, small;
    resolve("gemm.batch_split", "M=16,N=8,K=256", &big);
    resolve("gemm.batch_split", "M=1,N=8,K=256", &small);
    assert_string_equal(big.kernel, "cpu_gemm_batch_split");
    assert_true(big.tol.has_rtol);
    st_file in, in1, want, yb, yb1, y1;
    gen(&big, NX_DIST_NORMAL, 0, SEED + 1000, &in);
    first_rows(&in, rows, 1, 1, &in1);
    ref(&big, &in, &want);
    dev(&big, &in, DEV_EAGER, 0, NULL, &yb);
    dev(&big, &in, DEV_GRAPHED, 3, NULL, &yb1);
    dev(&small, &in1, DEV_EAGER, 0, NULL, &y1);
    assert_same(&yb, &want, "batch_split at M = 16 (the nominal split) vs the reference");
    assert_same(&yb1, &yb, "batch_split eager vs graphed");
    const st_tensor *a = st_find(&yb, "y"), *b = st_find(&y1, "y");
    size_t d = 0;
    for (size_t e = 0; e < b->nelem; e++)
        d += st_get_bits(a, a->data, e) != st_get_bits(b, b->data, e);
    print_message("negative control batch_split: row 0 alone vs in a batch of 16: %zu of 8 differ\n", d);
    assert_true(d > 0);
    st_free(&in);
    st_free(&in1);
    st_free(&want);
    st_free(&yb);
    st_free(&yb1);
    st_free(&y1);
    fam_spec_free(&big);
    fam_spec_free(&small);
}

/* The largest distance in ulps (ordinals, sign-magnitude) between the
 * elements of two tensors of one float dtype; *differ: how many differ. */
static uint64_t worst_ulps(const st_tensor *g, const st_tensor *w, size_t *differ)
{
    uint64_t worst = 0;
    *differ = 0;
    int bits = (int)st_dtype_bits(g->dtype);
    for (size_t e = 0; e < g->nelem; e++) {
        int64_t a = (int64_t)st_get_bits(g, g->data, e), b = (int64_t)st_get_bits(w, w->data, e);
        int64_t sa = (a >> (bits - 1)) ? -(a & ((1LL << (bits - 1)) - 1)) : a;
        int64_t sb = (b >> (bits - 1)) ? -(b & ((1LL << (bits - 1)) - 1)) : b;
        uint64_t dist = (uint64_t)(sa > sb ? sa - sb : sb - sa);
        *differ += dist != 0;
        if (dist > worst)
            worst = dist;
    }
    return worst;
}

/* A declared approximation (point `approx`, kernel approx_k) against the
 * correctly rounded point `cr` (kernel cr_k) of its family at shape: each
 * kernel refuses the other's point, and the approximation's y stays within
 * its declared ulps of the reference, with the output in its own format and
 * then in fp32 (which shows the approximation's own error), there within
 * the declared ulps plus fp32_slack. */
static void approx_within_tolerance(const char *approx, const char *cr_id, const char *approx_k, const char *cr_k,
                                    const char *shape, uint64_t seed, double fp32_slack)
{
    fam_spec s, cr;
    resolve(approx, shape, &s);
    resolve(cr_id, shape, &cr);
    assert_true(s.tol.has_ulp);
    assert_false(dev_supports(dev_cpu_backend(), &cr, approx_k));
    assert_false(dev_supports(dev_cpu_backend(), &s, cr_k));
    for (int o = 0; o < 2; o++) {
        if (o)
            assert_int_equal(fam_spec_set_param(&s, "out", "fp32", NULL), NX_OK);
        st_file in, want, got;
        gen(&s, NX_DIST_NORMAL, 0, seed + (uint64_t)o, &in);
        ref(&s, &in, &want);
        dev(&s, &in, DEV_GRAPHED, 2, NULL, &got);
        size_t differ;
        uint64_t worst = worst_ulps(st_find(&got, "y"), st_find(&want, "y"), &differ);
        print_message("%s vs %s (%s out): %zu of %llu differ, worst %llu ulp\n", approx, cr_id, o ? "fp32" : "declared",
                      differ, (unsigned long long)st_find(&got, "y")->nelem, (unsigned long long)worst);
        assert_true((double)worst <= s.tol.ulp + (o ? fp32_slack : 0));
        st_free(&in);
        st_free(&want);
        st_free(&got);
    }
    fam_spec_free(&s);
    fam_spec_free(&cr);
}

/* silu via libm expf: in bf16 its declared ulps; in fp32 one more (the fp32
 * silu error, then one product rounding). */
static void test_silu_libm_within_tolerance(void **state)
{
    (void)state;
    approx_within_tolerance("silu_and_mul.libm", "silu_and_mul.cr", "cpu_silu_and_mul_libm", "cpu_silu_and_mul",
                            "T=8,H=256", SEED + 1100, 1);
}

/* fp32 ulps between two finite floats (ordinals, sign-magnitude). */
static uint64_t f32_ulps(float a, float b)
{
    uint32_t ua = cpu_f32_bits(a), ub = cpu_f32_bits(b);
    int64_t sa = (ua >> 31) ? -(int64_t)(ua & 0x7fffffffu) : (int64_t)ua;
    int64_t sb = (ub >> 31) ? -(int64_t)(ub & 0x7fffffffu) : (int64_t)ub;
    return (uint64_t)(sa > sb ? sa - sb : sb - sa);
}

/* The libm kernel's silu far below 0, where expf(-g) overflows (g < -88.72):
 * g / (1 + expf(-g)) is then -0, yet silu(g) = g e^g / (1 + e^g) is a normal
 * fp32 number down to g = -92 and a subnormal down to g = -108.7.  The
 * campaign at 8b-layer with adversarial inputs met 119 such gates (the worst:
 * g = -89.5, u = 0x1.c8p+40, y = -0 against -0x1.26p-82, 5779 bf16 ulps).
 * The kernel runs with in = out = fp32 and up = 1, so y is its silu; the
 * expected values are MPFR's (cpu_silu_mpfr, Ziv) and, for the campaign's
 * element, a hex literal (silu(-89.5) u = -2.36805e-25 by mpmath at 200
 * bits, rounded to bf16). */
static void test_silu_libm_underflow(void **state)
{
    (void)state;
    enum { N = 4096 };
    static const float pinned[] = {-0x1.62e43p+6f, -0x1.66p+6f, -0x1.6cp+6f, -92.0f, -0x1.7ap+6f, -103.5f, -107.0f,
                                   -0x1.b2p+6f, -109.0f, -128.0f, -1000.0f, -INFINITY, -80.0f, -0x1.62e42ep+6f};
    char shape[64];
    snprintf(shape, sizeof shape, "T=1,H=%d", N);
    fam_spec s;
    resolve("silu_and_mul.libm", shape, &s);
    assert_int_equal(fam_spec_set_param(&s, "in", "fp32", NULL), NX_OK);
    assert_int_equal(fam_spec_set_param(&s, "out", "fp32", NULL), NX_OK);
    st_file in, got;
    st_init(&in);
    st_tensor *t;
    assert_int_equal(st_add_tensor(&in, "x", ST_F32, 2, (int64_t[]){1, 2 * N}, &t, NULL), NX_OK);
    float *x = (float *)t->data;
    size_t np = sizeof pinned / sizeof pinned[0];
    for (size_t i = 0; i < N; i++) {
        /* the pinned values, then fp32 numbers spread over [-112, -80] */
        x[i] = i < np ? pinned[i] : -80.0f - 32.0f * (float)(i - np) / (float)(N - np);
        x[N + i] = 1.0f;
    }
    dev(&s, &in, DEV_GRAPHED, 2, NULL, &got);
    const st_tensor *y = st_find(&got, "y");
    assert_non_null(y);
    const float *yv = (const float *)y->data;
    uint64_t worst = 0;
    for (size_t i = 0; i < N; i++) {
        float want = cpu_silu_mpfr(x[i]);
        uint64_t d = f32_ulps(yv[i], want);
        if (d > worst)
            worst = d;
        if (d > 2)
            fail_msg("silu libm(%a) = %a (0x%08x), MPFR %a (0x%08x): %llu ulps, beyond the declared 2", (double)x[i],
                     (double)yv[i], cpu_f32_bits(yv[i]), (double)want, cpu_f32_bits(want), (unsigned long long)d);
    }
    print_message("silu libm on [-112, -80]: worst %llu ulp against MPFR\n", (unsigned long long)worst);
    /* silu(-inf) = -0 (docs/families.md) */
    assert_int_equal(cpu_f32_bits(yv[11]), 0x80000000u);
    st_free(&got);
    st_free(&in);

    /* The campaign's worst element, as the point declares it (bf16 in and out). */
    fam_spec b;
    resolve("silu_and_mul.libm", "T=1,H=1", &b);
    st_init(&in);
    assert_int_equal(st_add_tensor(&in, "x", ST_BF16, 2, (int64_t[]){1, 2}, &t, NULL), NX_OK);
    st_put_bits(t, t->data, 0, 0xc2b3);  /* -0x1.66p+6 = -89.5 */
    st_put_bits(t, t->data, 1, 0x53e4);  /* 0x1.c8p+40 */
    dev(&b, &in, DEV_GRAPHED, 1, NULL, &got);
    y = st_find(&got, "y");
    assert_non_null(y);
    uint64_t bits = st_get_bits(y, y->data, 0);
    if (bits != 0x9693) /* -0x1.26p-82 */
        fail_msg("silu_and_mul.libm(g = -89.5, u = 0x1.c8p+40) = 0x%04llx, want 0x9693 (-0x1.26p-82)",
                 (unsigned long long)bits);
    st_free(&got);
    st_free(&in);
    fam_spec_free(&b);
    fam_spec_free(&s);
}

/* softmax rows with -inf, NaN and +inf (docs/families.md, softmax): bf16
 * inputs drawn normal, then row 0 with -inf at every third element, row 1
 * -inf but one element (y = 1 there), row 2 -inf only, row 3 one NaN,
 * row 4 one +inf, row 5 -150 - h (e^x underflows to 0 in fp32: only the max
 * subtraction leaves finite, nonzero y).  Each
 * kernel against the reference bit for bit at 1 and 3 threads, and the
 * values the family fixes: +0 where x = -inf, 1 where a row has one finite
 * element, the canonical NaN on the rows that must give NaN. */
static void test_softmax_special_rows(void **state)
{
    (void)state;
    static const char *const ids[] = {"softmax.plain", "softmax.libm"};
    enum { TN = 6, H = 29 };
    for (size_t k = 0; k < 2; k++)
        for (int o = 0; o < 2; o++) {
            fam_spec s;
            resolve(ids[k], "T=6,H=29", &s);
            if (o)
                assert_int_equal(fam_spec_set_param(&s, "out", "fp32", NULL), NX_OK);
            st_file in, want, got;
            gen(&s, NX_DIST_NORMAL, 0, SEED + 1300 + k, &in);
            const st_tensor *x = st_find(&in, "x");
            for (size_t h = 0; h < H; h++) {
                if (h % 3 == 0)
                    st_put_bits(x, x->data, 0 * H + h, 0xff80);
                if (h != 17)
                    st_put_bits(x, x->data, 1 * H + h, 0xff80);
                st_put_bits(x, x->data, 2 * H + h, 0xff80);
                float v = -150.0f - (float)h; /* an integer of 8 bits: exact in bf16 */
                st_put_bits(x, x->data, 5 * H + h, cpu_f32_bits(v) >> 16);
            }
            st_put_bits(x, x->data, 3 * H + 7, 0x7fc0);
            st_put_bits(x, x->data, 4 * H + 28, 0x7f80);
            ref(&s, &in, &want);
            const st_tensor *y = st_find(&want, "y");
            uint64_t one = o ? 0x3f800000u : 0x3f80, nan = o ? 0x7fc00000u : 0x7fc0;
            for (size_t h = 0; h < H; h++) {
                if (h % 3 == 0)
                    assert_int_equal(st_get_bits(y, y->data, 0 * H + h), 0);
                assert_int_equal(st_get_bits(y, y->data, 1 * H + h), h == 17 ? one : 0);
                assert_int_equal(st_get_bits(y, y->data, 2 * H + h), nan);
                assert_int_equal(st_get_bits(y, y->data, 3 * H + h), nan);
                assert_int_equal(st_get_bits(y, y->data, 4 * H + h), nan);
                uint64_t b5 = st_get_bits(y, y->data, 5 * H + h) & (o ? 0x7fffffffu : 0x7fff);
                assert_true(b5 > 0 && b5 < (o ? 0x7f800000u : 0x7f80)); /* finite, not 0 */
            }
            for (int t = 1; t <= 3; t += 2) {
                char ctx[96];
                snprintf(ctx, sizeof ctx, "%s special rows, %s out, %d threads", ids[k], o ? "fp32" : "bf16", t);
                dev(&s, &in, t == 1 ? DEV_EAGER : DEV_GRAPHED, t, NULL, &got);
                if (k == 0 || !o) { /* libm's exp: its fp32 outputs may differ by its ulp */
                    assert_same(&got, &want, ctx);
                } else { /* the elements the family fixes */
                    const st_tensor *g = st_find(&got, "y");
                    for (size_t i = 0; i < TN * H; i++)
                        if ((i < H && i % 3 == 0) || (i >= H && i < 5 * H))
                            assert_int_equal(st_get_bits(g, g->data, i), st_get_bits(y, y->data, i));
                }
                st_free(&got);
            }
            st_free(&want);
            st_free(&in);
            fam_spec_free(&s);
        }
}

/* softmax with libm's expf: in bf16 its declared ulps; in fp32 one more
 * (it held over 96 runs of four shapes and every distribution, worst 2,
 * plus one for the seed). */
static void test_softmax_libm_within_tolerance(void **state)
{
    (void)state;
    approx_within_tolerance("softmax.libm", "softmax.plain", "cpu_softmax_libm", "cpu_softmax", "T=64,H=1000",
                            SEED + 1400, 1);
}

/* --- refusals and errors ------------------------------------------------------------------- */

static void expect_run_error(const fam_spec *s, const st_file *in, const char *kernel, nx_status code,
                             const char *needle1, const char *needle2)
{
    st_file out;
    st_init(&out);
    dev_opts o = {DEV_EAGER, 0, kernel};
    nx_err e = {0};
    nx_status st = dev_run(dev_cpu_backend(), s, in, &out, &o, &e);
    st_free(&out);
    if (st != code || !strstr(e.msg, needle1) || (needle2 && !strstr(e.msg, needle2)))
        fail_msg("expected %s mentioning '%s'%s%s, got %s: %s", nx_status_name(code), needle1, needle2 ? " and " : "",
                 needle2 ? needle2 : "", nx_status_name(st), e.msg);
}

static void test_input_validation(void **state)
{
    (void)state;
    fam_spec s;
    resolve("gemm.splitk", "M=2,N=3,K=16", &s);
    st_file in, bad;
    gen(&s, NX_DIST_NORMAL, 0, SEED, &in);
    /* missing b */
    st_init(&bad);
    st_tensor *t;
    const st_tensor *a = st_find(&in, "a");
    assert_int_equal(st_add_tensor(&bad, "a", a->dtype, a->ndim, a->shape, &t, NULL), NX_OK);
    memcpy(t->data, a->data, a->nbytes);
    expect_run_error(&s, &bad, NULL, NX_EINVAL, "missing input tensor 'b'", "[N, K] = [3, 16]");
    /* b with the wrong dtype */
    assert_int_equal(st_add_tensor(&bad, "b", ST_F32, 2, (int64_t[]){3, 16}, &t, NULL), NX_OK);
    expect_run_error(&s, &bad, NULL, NX_EINVAL, "'b' has dtype F32", "BF16");
    st_free(&bad);
    /* a with the wrong shape */
    st_init(&bad);
    assert_int_equal(st_add_tensor(&bad, "a", ST_BF16, 2, (int64_t[]){2, 15}, &t, NULL), NX_OK);
    assert_int_equal(st_add_tensor(&bad, "b", ST_BF16, 2, (int64_t[]){3, 16}, &t, NULL), NX_OK);
    expect_run_error(&s, &bad, NULL, NX_EINVAL, "'a' has shape [2, 15]", "[M, K] = [2, 16]");
    /* an extra tensor */
    assert_int_equal(st_add_tensor(&bad, "c2", ST_BF16, 1, (int64_t[]){1}, &t, NULL), NX_OK);
    expect_run_error(&s, &bad, NULL, NX_EINVAL, "unexpected input tensor 'c2'", NULL);
    st_free(&bad);
    st_free(&in);
    fam_spec_free(&s);

    /* an out-of-range page index */
    resolve("paged_decode_attention.nosplit", "B=2,HQ=2,HKV=1,D=4,P=2,NP=3,MAXP=2", &s);
    gen(&s, NX_DIST_NORMAL, 0, SEED, &in);
    const st_tensor *bt = st_find(&in, "block_table");
    st_put_bits(bt, bt->data, 3, 7);
    expect_run_error(&s, &in, NULL, NX_EINVAL, "'block_table': element 3 is 7", "[0, 2]");
    st_free(&in);
    fam_spec_free(&s);
}

/* A kernel runs only the point it realises. */
static void test_refuses_other_points(void **state)
{
    (void)state;
    const dev_backend *b = dev_cpu_backend();
    fam_spec s;
    resolve("gemm.splitk", "M=2,N=3,K=16", &s);
    st_file in;
    gen(&s, NX_DIST_NORMAL, 0, SEED, &in);
    assert_true(dev_supports(b, &s, NULL));
    assert_false(dev_supports(b, &s, "cpu_gemm_seq"));
    expect_run_error(&s, &in, "cpu_gemm_seq", NX_EUNSUPPORTED, "realises k = seq", "split(4, stride(8, seq, pairwise), seq)");
    expect_run_error(&s, &in, "cpu_rmsnorm", NX_EINVAL, "belongs to family 'rmsnorm'", NULL);
    expect_run_error(&s, &in, "no_such_kernel", NX_EUNSUPPORTED, "no kernel 'no_such_kernel'", NULL);
    /* the kernel reads split_k = 3, but the tree says 4 */
    assert_int_equal(fam_spec_set_param(&s, "split_k", "3", NULL), NX_OK);
    assert_false(dev_supports(b, &s, NULL));
    expect_run_error(&s, &in, NULL, NX_EUNSUPPORTED, "split(3, stride(8, seq, pairwise), seq)",
                     "declares split(4, stride(8, seq, pairwise), seq)");
    st_free(&in);
    fam_spec_free(&s);
    /* an approximation the cr kernel does not compute */
    resolve("rmsnorm.plain", "T=2,H=8", &s);
    fam_elem *e = NULL; /* the point lists rsqrt = "cr": make it an approximation */
    for (size_t i = 0; i < s.nelems; i++)
        if (!strcmp(s.elems[i].name, "rsqrt"))
            e = &s.elems[i];
    if (!e) {
        assert_int_equal(fam_spec_add_elem(&s, "rsqrt", FAM_ELEM_APPROX, "rsqrt.approx.f32", 2, NULL), NX_OK);
    } else {
        e->impl = FAM_ELEM_APPROX;
        free(e->approx);
        e->approx = strdup("rsqrt.approx.f32");
        e->ulp = 2;
    }
    expect_run_error(&s, NULL, NULL, NX_EUNSUPPORTED, "computes rsqrt correctly rounded", "rsqrt.approx.f32");
    assert_false(dev_supports(b, &s, NULL));
    fam_spec_free(&s);
}

static void test_describe(void **state)
{
    (void)state;
    const dev_backend *b = dev_cpu_backend();
    char why[64] = "x", json[4096];
    assert_int_equal(dev_available(b, why, sizeof why), 1);
    assert_string_equal(b->name, "cpu");
    nx_err e = {0};
    assert_int_equal(dev_describe(b, json, sizeof json, &e), NX_OK);
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "backend")), "cpu");
    assert_non_null(json_string_value(json_object_get(o, "host")));
    assert_non_null(json_string_value(json_object_get(o, "cpu_model")));
    assert_non_null(json_string_value(json_object_get(o, "compiler")));
    assert_true(json_integer_value(json_object_get(o, "threads")) >= 1);
    assert_int_equal(json_array_size(json_object_get(o, "kernels")), cpu_nkernels);
    json_decref(o);
    assert_int_equal(dev_describe(b, json, 8, &e), NX_EINVAL);
}

/* --- formats and functions against independent oracles --------------------------------------- */

/* rne of v to a format of precision p, minimum exponent emin, overflow
 * threshold ovf (max finite + half an ulp, itself rounding up), in binary64:
 * scale to the quantum, nearbyint (rne), scale back. */
static double oracle_round(double v, int p, int emin, double ovf)
{
    if (isnan(v) || isinf(v) || v == 0)
        return v;
    if (fabs(v) >= ovf)
        return copysign(INFINITY, v);
    int e = ilogb(v);
    double q = ldexp(1.0, (e > emin ? e : emin) - p + 1);
    double r = nearbyint(v / q) * q;
    return r == 0 ? copysign(0.0, v) : r;
}

static void check_round(float f)
{
    double want16 = oracle_round(f, 11, -14, 65520.0);
    double want_b = oracle_round(f, 8, -126, 0x1.ffp127);
    float got16 = cpu_fp16_to_f32(cpu_f32_to_fp16(f, 0)), got_b = cpu_bf16_to_f32(cpu_f32_to_bf16(f, 0));
    if (isnan(f)) {
        assert_int_equal(cpu_f32_to_fp16(f, 0), 0x7e00);
        assert_int_equal(cpu_f32_to_bf16(f, 0), 0x7fc0);
        return;
    }
    if (!tu_same_double(got16, want16) || !tu_same_double(got_b, want_b))
        fail_msg("round %a: fp16 %a want %a; bf16 %a want %a", (double)f, (double)got16, want16, (double)got_b, want_b);
}

static void test_format_rounding(void **state)
{
    (void)state;
    uint64_t rs = SEED;
    for (int i = 0; i < 2000000; i++)
        check_round(cpu_bits_f32((uint32_t)tu_rand64(&rs)));
    /* ties and their neighbours around every fp16 and bf16 pattern */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float a = cpu_fp16_to_f32((uint16_t)h), b = cpu_fp16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)a + (double)b) / 2);
        check_round(mid);
        check_round(nextafterf(mid, 0));
        check_round(nextafterf(mid, INFINITY));
        check_round(-mid);
        assert_int_equal(cpu_f32_to_fp16(a, 0), h); /* every value round-trips */
    }
    for (uint32_t h = 0; h < 0x7f80; h += 3) {
        float a = cpu_bf16_to_f32((uint16_t)h), b = cpu_bf16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)a + (double)b) / 2);
        check_round(mid);
        check_round(nextafterf(mid, 0));
        check_round(-nextafterf(mid, INFINITY));
    }
    /* saturate */
    assert_int_equal(cpu_f32_to_fp16(70000.0f, 1), 0x7bff);
    assert_int_equal(cpu_f32_to_fp16(-INFINITY, 1), 0xfbff);
    assert_int_equal(cpu_f32_to_bf16(0x1.fffffep127f, 1), 0x7f7f);
    assert_int_equal(cpu_f32_to_bf16(0x1.fffffep127f, 0), 0x7f80);
    /* decoding of every narrow pattern against nx_decode */
    for (uint32_t p = 0; p < 65536; p++) {
        assert_true(tu_same_double(cpu_fp16_to_f32((uint16_t)p), nx_decode(NX_FP16, p, NULL)));
        assert_true(tu_same_double(cpu_bf16_to_f32((uint16_t)p), nx_decode(NX_BF16, p, NULL)));
    }
    for (uint32_t p = 0; p < 256; p++) {
        assert_true(tu_same_double(cpu_e4m3_to_f32((uint8_t)p), nx_decode(NX_E4M3, p, NULL)));
        assert_true(tu_same_double(cpu_e5m2_to_f32((uint8_t)p), nx_decode(NX_E5M2, p, NULL)));
    }
}

static void check_fn(const char *name, float (*fast)(float), float (*slow)(float), float x)
{
    float a = fast(x), b = slow(x);
    uint32_t ua = cpu_f32_bits(a), ub = cpu_f32_bits(b);
    if (ua != ub)
        fail_msg("%s(%a): got %a (0x%08x), MPFR %a (0x%08x); seed %llu", name, (double)x, (double)a, ua, (double)b, ub,
                 (unsigned long long)SEED);
}

static void test_cr_functions(void **state)
{
    (void)state;
    uint64_t rs = SEED ^ 0x5eed;
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 88.72283f, 88.7228394f,
                                     89.0f, -87.33655f, -103.972f, -103.9721f, -104.0f, 0x1p-149f, -0x1p-149f,
                                     0x1.fffffep127f, 0x1p-126f, -200.0f, -199.99f, 31.999998f, 32.0f, -0x1p-30f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        check_fn("exp", cpu_exp_cr, cpu_exp_mpfr, specials[i]);
        check_fn("rsqrt", cpu_rsqrt_cr, cpu_rsqrt_mpfr, specials[i]);
        check_fn("silu", cpu_silu_cr, cpu_silu_mpfr, specials[i]);
    }
    for (int i = 0; i < 60000; i++) {
        uint64_t r = tu_rand64(&rs);
        float u = (float)((double)(r >> 11) * 0x1p-53);
        check_fn("exp", cpu_exp_cr, cpu_exp_mpfr, -110.0f + 200.0f * u);                /* underflow .. overflow */
        check_fn("exp", cpu_exp_cr, cpu_exp_mpfr, -20.0f * u);                          /* softmax arguments */
        check_fn("rsqrt", cpu_rsqrt_cr, cpu_rsqrt_mpfr, cpu_bits_f32((uint32_t)(r >> 32) & 0x7fffffffu));
        check_fn("silu", cpu_silu_cr, cpu_silu_mpfr, -210.0f + 250.0f * u);
        check_fn("silu", cpu_silu_cr, cpu_silu_mpfr, cpu_bits_f32((uint32_t)r));      /* any pattern */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_point_bit_exact),
        cmocka_unit_test(test_corner_shapes),
        cmocka_unit_test(test_signed_zeros),
        cmocka_unit_test(test_attention_splits),
        cmocka_unit_test(test_fp32_outputs),
        cmocka_unit_test(test_gemm_epilogue),
        cmocka_unit_test(test_gemv_layouts),
        cmocka_unit_test(test_legacy_equals_new),
        cmocka_unit_test(test_row_invariance),
        cmocka_unit_test(test_negative_control_threads),
        cmocka_unit_test(test_negative_control_batch),
        cmocka_unit_test(test_silu_libm_within_tolerance),
        cmocka_unit_test(test_silu_libm_underflow),
        cmocka_unit_test(test_softmax_special_rows),
        cmocka_unit_test(test_softmax_libm_within_tolerance),
        cmocka_unit_test(test_input_validation),
        cmocka_unit_test(test_refuses_other_points),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_format_rounding),
        cmocka_unit_test(test_cr_functions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
