/* test_tier2.c: the one Tier 2 (parity/campaign/tier2.h) and the trace
 * checker's Tier 1 pairs (trace_check.h) on hand-made cases.
 *
 * The reference is refimpl's for a real point of the sample registry; the
 * "device" output is that reference copied, then changed by hand (one bit
 * of one element, one row of a second output, rows taken in another
 * order), so every expected verdict follows from the change, not from the
 * code under test: a flipped bit must fail and be named at its element and
 * logical row; a batch in another order must pass through the row map and
 * fail without it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "refimpl.h"
#include "registry.h"
#include "tier2.h"
#include "trace_check.h"

static reg_registry *REG;

static int setup(void **state)
{
    (void)state;
    nx_err e = {0};
    if (reg_load(PARITY_KERNELS_DIR, &REG, &e) != NX_OK) {
        print_error("reg_load %s: %s\n", PARITY_KERNELS_DIR, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reg_free(REG);
    return 0;
}

/* A point's inputs and reference at a shape. */
typedef struct fixture {
    fam_spec spec;
    st_file in, ref, dev;
} fixture;

static void fixture_make(fixture *f, const char *id, const char *shape)
{
    nx_err e = {0};
    memset(f, 0, sizeof *f);
    st_init(&f->in);
    st_init(&f->ref);
    st_init(&f->dev);
    assert_int_equal(reg_resolve(REG, "cpu", id, shape, &f->spec, &e), NX_OK);
    ref_gen_opts go = {1, NX_DIST_NORMAL, 0, 1};
    assert_int_equal(ref_generate(&f->spec, &go, &f->in, &e), NX_OK);
    ref_opts ro = {1, ref_engine_default()};
    assert_int_equal(ref_run_opts(&f->spec, &f->in, &f->ref, &ro, &e), NX_OK);
}

/* dev := ref with batch row i holding reference row perm[i] (perm NULL:
 * the same rows). */
static void fixture_device(fixture *f, const int64_t *perm)
{
    nx_err e = {0};
    st_free(&f->dev);
    st_init(&f->dev);
    for (size_t k = 0; k < f->ref.ntensors; k++) {
        const st_tensor *r = &f->ref.tensors[k];
        st_tensor *o;
        assert_int_equal(st_add_tensor(&f->dev, r->name, r->dtype, r->ndim, r->shape, &o, &e), NX_OK);
        size_t rb = (size_t)(r->nbytes / (uint64_t)r->shape[0]);
        for (int64_t i = 0; i < r->shape[0]; i++)
            memcpy(o->data + (size_t)i * rb, r->data + (size_t)(perm ? perm[i] : i) * rb, rb);
    }
}

static void fixture_free(fixture *f)
{
    st_free(&f->in);
    st_free(&f->ref);
    st_free(&f->dev);
    fam_spec_free(&f->spec);
}

static t2_case case_of(fixture *f)
{
    t2_case c = {.name = "case", .dev = &f->spec, .ref = &f->spec, .in = &f->in, .got = &f->dev, .want = &f->ref,
                 .threads = 1};
    return c;
}

static void test_bit_exact_passes(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "gemm.splitk", "M=4,N=24,K=200");
    fixture_device(&f, NULL);
    t2_case c = case_of(&f);
    t2_result r;
    nx_err e = {0};
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_true(r.pass);
    assert_true(r.bit_exact);
    assert_string_equal(r.output, "y");
    assert_string_equal(r.detail, "ok: bit-exact: 0 / 96 elements of 'y' differ");
    t2_result_free(&r);
    fixture_free(&f);
}

/* One bit of element [2, 5] flipped: a failure named there, at its logical
 * row; with a row map the logical row is the map's. */
static void test_flipped_bit_fails_at_its_row(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "gemm.splitk", "M=4,N=24,K=200");
    fixture_device(&f, NULL);
    st_tensor *y = (st_tensor *)st_find(&f.dev, "y");
    assert_non_null(y);
    assert_int_equal(y->dtype, ST_BF16);
    y->data[(2 * 24 + 5) * 2] ^= 1; /* the last mantissa bit of a little-endian bf16 */
    size_t budget = 100;
    t2_case c = case_of(&f);
    c.diff_budget = &budget;
    t2_result r;
    nx_err e = {0};
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_false(r.pass);
    assert_false(r.bit_exact);
    assert_string_equal(r.detail,
                        "FAIL: not bit-exact: 1 / 96 elements of 'y' differ, first at [2, 5] (logical row 2)");
    assert_int_equal(r.ndiff, 1);
    assert_int_equal(r.diff[0], 2 * 24 + 5);
    assert_int_equal(budget, 99);
    t2_result_free(&r);
    int64_t logical[4] = {7, 8, 9, 10};
    c.rows = logical;
    c.diff_budget = NULL;
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_false(r.pass);
    assert_non_null(strstr(r.detail, "first at [2, 5] (logical row 9)"));
    assert_null(r.diff);
    t2_result_free(&r);
    fixture_free(&f);
}

/* A batch in another order passes through the row map and fails without. */
static void test_row_map(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "gemm.splitk", "M=4,N=24,K=200");
    int64_t perm[4] = {3, 1, 0, 2};
    fixture_device(&f, perm);
    t2_case c = case_of(&f);
    t2_result r;
    nx_err e = {0};
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_false(r.pass);
    t2_result_free(&r);
    c.ref_rows = perm;
    c.rows = perm;
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_true(r.pass);
    t2_result_free(&r);
    /* a map past the reference's rows is an input error */
    int64_t bad[4] = {0, 1, 2, 4};
    c.ref_rows = bad;
    assert_int_not_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_non_null(strstr(e.msg, "reads row 4 of the reference, which has 4 rows"));
    fixture_free(&f);
}

/* rmsnorm.fused_add's second output: one row of residual_out changed
 * fails a run whose y is bit-exact. */
static void test_other_output_row(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "rmsnorm.fused_add", "T=4,H=160");
    fixture_device(&f, NULL);
    st_tensor *res = (st_tensor *)st_find(&f.dev, "residual_out");
    assert_non_null(res);
    size_t rb = (size_t)(res->nbytes / (uint64_t)res->shape[0]);
    res->data[3 * rb] ^= 1;
    t2_case c = case_of(&f);
    t2_result r;
    nx_err e = {0};
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_false(r.pass);
    assert_true(r.cmp.bits_differ == 0);
    assert_string_equal(r.detail, "FAIL: not bit-exact: output 'residual_out' batch row 3 differs from the reference");
    t2_result_free(&r);
    fixture_free(&f);
}

/* A negative control is judged by a tolerance, said so; a device output of
 * another dtype is an input error naming the case. */
static void test_negative_and_mismatched(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "gemm.splitk", "M=4,N=24,K=200");
    fixture_device(&f, NULL);
    t2_case c = case_of(&f);
    c.negative = 1;
    t2_result r;
    nx_err e = {0};
    assert_int_equal(t2_judge(&c, &r, &e), NX_OK);
    assert_true(r.pass);
    assert_int_not_equal(r.cmp.opt.policy, CMP_BITWISE);
    assert_non_null(strstr(r.detail, "a negative control: judged by its declared tolerance"));
    t2_result_free(&r);
    st_tensor *y = (st_tensor *)st_find(&f.dev, "y");
    y->dtype = ST_F16;
    c.negative = 0;
    /* a device error (exit 3), saying what the device wrote */
    assert_int_equal(t2_judge(&c, &r, &e), NX_EDEVICE);
    assert_string_equal(e.msg, "case: the device output 'y' is missing or has another dtype or size than the reference's "
                               "(the device wrote F16 [4, 24]; the reference's is BF16 [4, 24])");
    fixture_free(&f);
}

/* Tier 1 across traces: two runs of one point that differ only in run
 * index are a determinism pair; a changed bit fails it, and a trace that
 * says it is the determinism control turns that into a pass. */
static void test_tier1_pairs(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, "gemm.splitk", "M=4,N=24,K=200");
    tc_trace cs[2];
    for (int k = 0; k < 2; k++) {
        tc_trace_init(&cs[k]);
        fixture_device(&f, NULL);
        trace *t = &cs[k].t;
        t->file = f.dev;
        st_init(&f.dev);
        snprintf(cs[k].id, sizeof cs[k].id, "gemm.splitk");
        t->class_name = "cpu";
        t->kernel = "cpu_gemm_splitk";
        t->batch = "rows=0..3";
        t->path = strdup(k ? "b" : "a");
        t->mode = TRACE_GRAPHED;
    }
    tc_pair *p = NULL;
    size_t np = 0;
    nx_err e = {0};
    assert_int_equal(tc_tier1(cs, 2, &p, &np, &e), NX_OK);
    assert_int_equal(np, 1);
    assert_int_equal(p[0].check, CK_DETERMINISM);
    assert_true(p[0].pass);
    free(p);
    ((st_tensor *)st_find(&cs[1].t.file, "y"))->data[0] ^= 1;
    assert_int_equal(tc_tier1(cs, 2, &p, &np, &e), NX_OK);
    assert_int_equal(np, 1);
    assert_false(p[0].pass);
    free(p);
    cs[1].t.negative_control = 1;
    cs[1].t.expected_fail = "determinism";
    assert_int_equal(tc_tier1(cs, 2, &p, &np, &e), NX_OK);
    assert_true(p[0].negative);
    assert_true(p[0].pass);
    free(p);
    for (int k = 0; k < 2; k++)
        tc_trace_free(&cs[k]);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_exact_passes),     cmocka_unit_test(test_flipped_bit_fails_at_its_row),
        cmocka_unit_test(test_row_map),              cmocka_unit_test(test_other_output_row),
        cmocka_unit_test(test_negative_and_mismatched), cmocka_unit_test(test_tier1_pairs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
