/* test_lkb.c: the LKB report's arithmetic pieces (parity/lkb/lkb.h): the
 * step manifest's integer expressions and the "beat the baseline beyond
 * the noise band" rule.  Expected values are worked by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lkb.h"

static const char *const names[] = {"C", "M", "N"};
static const long long values[] = {16, 3, 4096};

static void ok(const char *expr, long long want)
{
    long long v = -7;
    nx_err e = {0};
    if (lkb_eval(expr, names, values, 3, &v, &e) != NX_OK)
        fail_msg("'%s': %s", expr, e.msg);
    if (v != want)
        fail_msg("'%s' = %lld, want %lld", expr, v, want);
}

static void bad(const char *expr, const char *msg)
{
    long long v = 0;
    nx_err e = {0};
    if (lkb_eval(expr, names, values, 3, &v, &e) == NX_OK)
        fail_msg("'%s' was accepted (= %lld)", expr, v);
    if (!strstr(e.msg, msg))
        fail_msg("'%s': message '%s' lacks '%s'", expr, e.msg, msg);
}

static void test_eval(void **state)
{
    (void)state;
    ok("0", 0);
    ok("2*(M*N + C)", 2 * (3 * 4096 + 16));      /* 24608 */
    ok(" C - 2 - 3 ", 11);                       /* left to right */
    ok("C/4*M", 12);                             /* (16 / 4) * 3 */
    ok("-M + 10", 7);
    ok("min(8, 2*C)", 8);
    ok("max(8, 2*C)", 32);
    ok("min(max(1, M), 2)", 2);
    ok("4611686018427387904", 4611686018427387904LL); /* 2^62 */
    bad("C/3", "inexact division at character 4");
    bad("C/(M-3)", "division by zero");
    bad("2*Q", "unknown name 'Q' at character 3");
    bad("2*(C", "')' expected");
    bad("C C", "unexpected character at character 3");
    bad("", "unexpected end");
    bad("4611686018427387904*4", "product too large");
    bad("9223372036854775807", "integer too large");
    bad("min(1 2)", "',' expected");
    /* 40 nested parentheses: deeper than the 32 allowed */
    char deep[128] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "(");
    strcat(deep, "1");
    for (int i = 0; i < 40; i++)
        strcat(deep, ")");
    bad(deep, "nested too deeply");
}

static void test_op_eval(void **state)
{
    (void)state;
    lkb_op op = {.id = "up", .shape = "M=C,N=2*M+1,K=7", .flops = "2*M*N*K", .bytes = "N*K + min(M, 4)",
                 .where = "t:1"};
    char shape[64];
    long long f, b;
    nx_err e = {0};
    assert_int_equal(lkb_op_eval(&op, 16, shape, sizeof shape, &f, &b, &e), NX_OK);
    assert_string_equal(shape, "M=16,N=33,K=7");
    assert_int_equal(f, 2 * 16 * 33 * 7); /* 7392 */
    assert_int_equal(b, 33 * 7 + 4);      /* 235 */
    op.shape = "M=C-16";
    assert_int_not_equal(lkb_op_eval(&op, 16, shape, sizeof shape, &f, &b, &e), NX_OK);
    assert_non_null(strstr(e.msg, "shape dimension M = 0 at C = 16 (must be >= 1)"));
}

static void test_beats(void **state)
{
    (void)state;
    /* the kernel's slowest run against the baseline's fastest */
    lkb_record r = {.has_baseline = 1, .max_s = 0x1.0p-10, .b_min_s = 0x1.0p-10};
    assert_int_equal(lkb_record_beats_speed(&r), 0); /* equal: inside the band */
    r.max_s = 0x1.fffffffffffffp-11;                 /* one ulp below 2^-10 */
    assert_int_equal(lkb_record_beats_speed(&r), 1);
    r.has_baseline = 0;
    assert_int_equal(lkb_record_beats_speed(&r), 0); /* no baseline: never */
    lkb_record e = {.has_energy = 1, .has_b_energy = 1, .e_max_j = 2.0, .be_min_j = 2.5};
    assert_int_equal(lkb_record_beats_energy(&e), 1);
    e.has_b_energy = 0;
    assert_int_equal(lkb_record_beats_energy(&e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_op_eval),
        cmocka_unit_test(test_beats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
