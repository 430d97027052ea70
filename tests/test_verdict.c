/* test_verdict.c: the one judge (parity/check/verdict.h) that `parity
 * campaign` and `parity check` both print.
 *
 * Every expected sentence is written here by hand from the evidence the
 * case builds (bf16 patterns: 1.0 = 0x3f80, the next value up 0x3f81,
 * 2.0 = 0x4000).  The central rule: "not bit-exact" is said only when some
 * bit differs, whatever the policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "verdict.h"
#include "testutil.h"

static cmp_result compare(const uint64_t *got, const uint64_t *ref, size_t n, const cmp_options *o)
{
    cmp_input in = {.fmt = NX_BF16, .n = n, .got = got, .ref = ref};
    cmp_result r;
    nx_err e = {0};
    assert_int_equal(cmp_compare(&in, o, &r, &e), NX_OK);
    return r;
}

static cmp_options tol(void)
{
    cmp_options o;
    cmp_options_init(&o, CMP_TOLERANCE);
    o.rtol = 1e-2;
    o.atol = 0;
    return o;
}

static int judge_t2(const cmp_result *r, const char *first_at, const char *why, char *text, size_t len)
{
    vd_evidence e = {.kind = VD_TIER2, .cmp = r, .output = "y", .first_at = first_at, .why = why};
    return vd_judge(&e, text, len);
}

static void test_tier2_bitwise(void **state)
{
    (void)state;
    uint64_t ref[3] = {0x3f80, 0x4000, 0x3f80}, same[3] = {0x3f80, 0x4000, 0x3f80}, off[3] = {0x3f80, 0x4001, 0x3f80};
    cmp_options o;
    cmp_options_init(&o, CMP_BITWISE);
    char text[1024];
    cmp_result r = compare(same, ref, 3, &o);
    assert_int_equal(judge_t2(&r, "", "", text, sizeof text), 1);
    assert_string_equal(text, "ok: bit-exact: 0 / 3 elements of 'y' differ");
    r = compare(off, ref, 3, &o);
    assert_int_equal(judge_t2(&r, "[1] (logical row 1)", "", text, sizeof text), 0);
    assert_string_equal(text, "FAIL: not bit-exact: 1 / 3 elements of 'y' differ, first at [1] (logical row 1)");
}

/* The bug this judge fixes: a run judged by a tolerance whose bits all match
 * was called "not bit-exact" while its JSON said bits_differ = 0. */
static void test_tier2_tolerance_but_bit_exact(void **state)
{
    (void)state;
    uint64_t ref[3] = {0x3f80, 0x4000, 0x3f80};
    cmp_options o = tol();
    cmp_result r = compare(ref, ref, 3, &o);
    assert_int_equal(r.bits_differ, 0);
    char text[1024];
    assert_int_equal(judge_t2(&r, "", "a negative control: judged by its declared tolerance", text, sizeof text), 1);
    assert_string_equal(text, "ok: bit-exact: 0 / 3 elements of 'y' differ (judged by tolerance rtol 0.01, atol 0: "
                              "a negative control: judged by its declared tolerance)");
    assert_null(strstr(text, "not bit-exact"));
}

static void test_tier2_tolerance(void **state)
{
    (void)state;
    /* 0x3f81 is 1/128 above 1.0: inside rtol 1e-2; 0x4000 vs 0x3f80 is not */
    uint64_t ref[3] = {0x3f80, 0x3f80, 0x3f80}, near[3] = {0x3f80, 0x3f81, 0x3f80}, far[3] = {0x3f80, 0x3f81, 0x4000};
    cmp_options o = tol();
    char text[1024];
    cmp_result r = compare(near, ref, 3, &o);
    assert_int_equal(judge_t2(&r, "", "why", text, sizeof text), 1);
    assert_string_equal(text, "ok: within the tolerance, not bit-exact: 1 / 3 elements of 'y' differ in their bits, "
                              "none outside tolerance rtol 0.01, atol 0, max ulp 1 (why)");
    r = compare(far, ref, 3, &o);
    assert_int_equal(judge_t2(&r, "[2] (logical row 2)", "why", text, sizeof text), 0);
    assert_string_equal(text, "FAIL: outside the tolerance: 1 / 3 elements of 'y' outside tolerance rtol 0.01, atol 0, "
                              "first at [2] (logical row 2); 2 differ in their bits, max ulp 128 (why)");
}

static vd_diff differ_at_1(void)
{
    vd_diff d = {.same = 0, .differ = 1, .compared = 8, .rows = 2};
    snprintf(d.output, sizeof d.output, "y");
    snprintf(d.first_at, sizeof d.first_at, "[0, 1] (logical row 0; 0x3f80 vs 0x3f81)");
    return d;
}

static void test_tier1(void **state)
{
    (void)state;
    vd_diff same = {.same = 1, .compared = 8, .rows = 2}, diff = differ_at_1();
    char text[1024];
    vd_evidence e = {.kind = VD_TIER1, .what = "eager and graphed runs", .diff = &same};
    assert_int_equal(vd_judge(&e, text, sizeof text), 1);
    assert_string_equal(text, "ok: eager and graphed runs: identical bit for bit");
    e.diff = &diff;
    assert_int_equal(vd_judge(&e, text, sizeof text), 0);
    assert_string_equal(text, "FAIL: eager and graphed runs: the bits differ: output 'y': 1 / 8 elements differ, "
                              "first at [0, 1] (logical row 0; 0x3f80 vs 0x3f81)");
    /* a negative control must differ */
    e.negative = 1;
    assert_int_equal(vd_judge(&e, text, sizeof text), 1);
    assert_string_equal(text, "ok (negative control failed as expected): eager and graphed runs: the bits differ, as "
                              "this kernel is built to make them: output 'y': 1 / 8 elements differ, first at [0, 1] "
                              "(logical row 0; 0x3f80 vs 0x3f81)");
    e.diff = &same;
    assert_int_equal(vd_judge(&e, text, sizeof text), 0);
    assert_string_equal(text, "FAIL (negative control did not fail): eager and graphed runs: identical bit for bit, but "
                              "this kernel is built to make them differ: the check cannot tell it apart");
}

static void test_parity(void **state)
{
    (void)state;
    vd_diff same = {.same = 1, .compared = 8, .rows = 2}, diff = differ_at_1();
    char text[1024];
    vd_evidence e = {.kind = VD_PARITY, .diff = &same, .class_a = "cpu", .class_b = "cpu2", .point = "gemm.splitk",
                     .parity_expected = 1};
    assert_int_equal(vd_judge(&e, text, sizeof text), 1);
    assert_string_equal(text, "ok: bit parity between cpu and cpu2 at gemm.splitk: yes (2 logical rows, 8 elements)");
    e.diff = &diff;
    assert_int_equal(vd_judge(&e, text, sizeof text), 0);
    assert_string_equal(text, "FAIL: bit parity between cpu and cpu2 at gemm.splitk: no: output 'y': 1 / 8 elements "
                              "differ, first at [0, 1] (logical row 0; 0x3f80 vs 0x3f81)");
    /* points that differ by declaration: never a failure, bits or not */
    e.parity_expected = 0;
    e.declared = "the points differ: split count: 4 vs 8";
    assert_int_equal(vd_judge(&e, text, sizeof text), 1);
    assert_string_equal(text, "ok (declared difference): bit parity between cpu and cpu2 at gemm.splitk: not expected: "
                              "the points differ: split count: 4 vs 8; the bits differ: output 'y': 1 / 8 elements "
                              "differ, first at [0, 1] (logical row 0; 0x3f80 vs 0x3f81)");
    e.diff = &same;
    assert_int_equal(vd_judge(&e, text, sizeof text), 1);
    assert_non_null(strstr(text, "the bits agree nevertheless"));
    /* other inputs: nothing to judge */
    e.inputs_differ = "seed 1 vs 2";
    assert_int_equal(vd_judge(&e, text, sizeof text), -1);
    assert_string_equal(text, "skipped: bit parity between cpu and cpu2 at gemm.splitk: not compared: the runs saw "
                              "other inputs (seed 1 vs 2)");
}

static void test_in_list(void **state)
{
    (void)state;
    assert_true(vd_in_list("eager_graphed", "eager_graphed"));
    assert_true(vd_in_list("rows,determinism", "determinism"));
    assert_true(vd_in_list("rows, determinism", "determinism"));
    assert_false(vd_in_list("rows_extra", "rows"));
    assert_false(vd_in_list("xrows", "rows"));
    assert_false(vd_in_list(NULL, "rows"));
    assert_false(vd_in_list("rows", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier2_bitwise), cmocka_unit_test(test_tier2_tolerance_but_bit_exact),
        cmocka_unit_test(test_tier2_tolerance), cmocka_unit_test(test_tier1),
        cmocka_unit_test(test_parity), cmocka_unit_test(test_in_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
