/* test_atom.c: the MMA atom's alignment rule (docs/numerics.md §5 step 2),
 * hand-worked.  Each case runs through the MPFR engine, the fast engine and
 * the independent oracle, under `align = "operands"` (the default) and
 * `align = "values"`.  Expected values are worked out in the comments and
 * written as hex-float literals; inputs to the oracle are hand-encoded bit
 * patterns.  None comes from the code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_bound.h"
#include "nx_engine.h"
#include "oracle/oracle.h"
#include "point_toml.h"
#include "testutil.h"

typedef struct acase {
    const char *toml;                /* the point */
    nx_fmt fmt;                      /* the tensors' format */
    const char *fmt_name;
    size_t n;
    double a[4], b[4];
    uint64_t abits[4], bbits[4];     /* the same values, hand-encoded */
    double want;                     /* fp32 result */
} acase;

static nx_program *build(const char *toml, size_t n)
{
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(toml, "point", &pt, &err) != NX_OK) {
        print_error("%s: %s\n", toml, err.msg);
        fail();
    }
    nx_program *p;
    assert_int_equal(nx_program_build(&pt, n, 1, &p, &err), NX_OK);
    nx_point_free(&pt);
    return p;
}

static void run_engines(const acase *c, const char *toml)
{
    nx_program *p = build(toml, c->n);
    nx_err err = {0};
    nx_rows rows = {.rows = 1, .a_fmt = c->fmt, .a = c->a, .b_fmt = c->fmt, .b = c->b};
    double y = -1;
    assert_int_equal(nx_mpfr_reduce(p, &rows, &y, 1, &err), NX_OK);
    assert_double_bits_eq_ctx(y, c->want, toml);
    y = -1;
    assert_int_equal(nx_fast_reduce(p, &rows, &y, 1, &err), NX_OK);
    assert_double_bits_eq_ctx(y, c->want, toml);
    nx_program_free(p);
}

/* The oracle with the same atom given as parameters. */
static void run_oracle(const acase *c, const char *in, int frac_bits, const char *acc, const char *align,
                       size_t group)
{
    char tree[32];
    snprintf(tree, sizeof tree, "chain(%zu)", group);
    orc_point op = {0};
    op.acc = "fp32";
    op.rounding = "rne";
    op.in = in;
    op.fma = 1;
    op.tree = tree;
    op.has_atom = 1;
    op.atom_frac_bits = frac_bits;
    op.atom_term_round = "rz";
    op.atom_round = "rz";
    op.atom_acc = acc;
    op.atom_align = align;
    op.out = "fp32";
    op.out_rounding = "rne";
    uint64_t got = 0;
    char err[256];
    int rc = orc_reduce(&op, c->fmt_name, c->fmt_name, c->abits, c->bbits, c->n, &got, err, sizeof err);
    if (rc) {
        print_error("oracle: %s\n", err);
        fail();
    }
    float w = (float)c->want;
    uint32_t wb;
    memcpy(&wb, &w, 4);
    if (got != wb) {
        print_error("oracle (align %s): got 0x%08llx, want 0x%08x (%a)\n", align ? align : "default",
                    (unsigned long long)got, wb, c->want);
        fail();
    }
}

/* §5's example, Volta's atom (group 4, F = 23, rz, rz, fp32), fp16 operands:
 * products 1.5·1.5 = 2.25 and -(1 - 2^-11)·2^-13.
 * operands: e = 0 + 0 = 0 and -1 + -13 = -14, so E = 0, quantum 2^-23.
 *   -(2^-13 - 2^-24) = -1023.5 quanta, cut toward zero: -1023·2^-23.
 *   2.25 - 1023·2^-23 lies between fp32 neighbours 2.25 - 512·2^-22 and
 *   2.25 - 511·2^-22; rz gives 2.25 - 2^-13 = 0x1.1ffcp+1.
 * values: E = floor(log2 2.25) = 1, quantum 2^-22: -511.75 quanta → -511;
 *   2.25 - 511·2^-22 is an fp32 number: 0x1.1ffc02p+1. */
static void test_section5_example(void **state)
{
    (void)state;
    acase c = {.fmt = NX_FP16, .fmt_name = "fp16", .n = 2,
               .a = {0x1.8p0, -0x1.ffcp-1}, .b = {0x1.8p0, 0x1p-13},
               .abits = {0x3E00, 0xBBFF}, .bbits = {0x3E00, 0x0800}};
    c.want = 0x1.1ffcp+1;
    run_engines(&c, "{ tree = \"chain(4)\", atom = \"sm70.hmma.f16\" }");
    run_engines(&c, "{ tree = \"chain(4)\", atom = { preset = \"sm70.hmma.f16\", align = \"operands\" } }");
    run_oracle(&c, NULL, 23, "fp32", NULL, 4);
    run_oracle(&c, NULL, 23, "fp32", "operands", 4);
    c.want = 0x1.1ffc02p+1;
    run_engines(&c, "{ tree = \"chain(4)\", atom = { preset = \"sm70.hmma.f16\", align = \"values\" } }");
    run_oracle(&c, NULL, 23, "fp32", "values", 4);
}

/* A subnormal operand counts at its format's emin.  Volta's atom, fp16:
 *   1.5·0.5 = 0.75            e = 0 + -1 = -1
 *   (3·2^-24)·2^15 = 3·2^-9   3·2^-24 is subnormal in fp16: e = -14 + 15 = 1
 *   2^-12·(3·2^-12) = 3·2^-24 e = -12 + -11 = -23
 * operands: E = 1, quantum 2^-22: 3·2^-24 = 0.75 quanta → 0;
 *   0.75 + 3·2^-9 = 0x1.83p-1 (exact in fp32).
 * values: E = floor(log2 0.75) = -1, quantum 2^-24: every product is exact;
 *   0.75 + 3·2^-9 + 3·2^-24 = 0x1.830006p-1 (exact in fp32).
 * The same values in fp32 tensors: 3·2^-24 is normal there (e = -23, the
 * product's e = -8), so operands also gives E = -1 and 0x1.830006p-1; with
 * `in = "fp16"` the operands are fp16 members again and E = 1. */
static void test_subnormal_operand(void **state)
{
    (void)state;
    acase c = {.fmt = NX_FP16, .fmt_name = "fp16", .n = 3,
               .a = {0x1.8p0, 0x1.8p-23, 0x1p-12}, .b = {0x1p-1, 0x1p15, 0x1.8p-11},
               .abits = {0x3E00, 0x0003, 0x0C00}, .bbits = {0x3800, 0x7800, 0x1200}};
    c.want = 0x1.83p-1;
    run_engines(&c, "{ tree = \"chain(4)\", atom = \"sm70.hmma.f16\" }");
    run_oracle(&c, NULL, 23, "fp32", NULL, 4);
    c.want = 0x1.830006p-1;
    run_engines(&c, "{ tree = \"chain(4)\", atom = { preset = \"sm70.hmma.f16\", align = \"values\" } }");
    run_oracle(&c, NULL, 23, "fp32", "values", 4);

    acase d = c;
    d.fmt = NX_FP32;
    d.fmt_name = "fp32";
    const uint64_t ab[3] = {0x3FC00000, 0x34400000, 0x39800000}, bb[3] = {0x3F000000, 0x47000000, 0x3A400000};
    memcpy(d.abits, ab, sizeof ab);
    memcpy(d.bbits, bb, sizeof bb);
    d.want = 0x1.830006p-1;
    run_engines(&d, "{ tree = \"chain(4)\", atom = \"sm70.hmma.f16\" }");
    run_oracle(&d, NULL, 23, "fp32", NULL, 4);
    d.want = 0x1.83p-1;
    run_engines(&d, "{ in = \"fp16\", tree = \"chain(4)\", atom = \"sm70.hmma.f16\" }");
    run_oracle(&d, "fp16", 23, "fp32", NULL, 4);
}

/* fp8 e4m3 on Ada's atom (group 16, F = 13, rz, rz, e8m13):
 *   1.75·1.75 = 3.0625         e = 0 + 0 = 0
 *   (1.125·2^-5)·2^-8 = 9·2^-16 2^-8 is subnormal in e4m3 (emin -6): e = -5 + -6 = -11
 *   -1.5·1 = -1.5              e = 0
 * operands: E = 0, quantum 2^-13: 9·2^-16 = 1.125 quanta → 2^-13;
 *   3.0625 + 2^-13 - 1.5 = 1.5625 + 2^-13, an e8m13 number (ulp 2^-13
 *   in [1, 2)): 0x1.9008p+0.
 * values: E = floor(log2 3.0625) = 1, quantum 2^-12: 9·2^-16 → 0; 1.5625. */
static void test_fp8(void **state)
{
    (void)state;
    acase c = {.fmt = NX_E4M3, .fmt_name = "e4m3", .n = 3,
               .a = {0x1.cp0, 0x1.2p-5, -0x1.8p0}, .b = {0x1.cp0, 0x1p-8, 1.0},
               .abits = {0x3E, 0x11, 0xBC}, .bbits = {0x3E, 0x02, 0x38}};
    c.want = 0x1.9008p+0;
    run_engines(&c, "{ tree = \"chain(16)\", atom = \"sm89.mma.fp8\", out = \"fp32\" }");
    run_oracle(&c, NULL, 13, "e8m13", NULL, 16);
    c.want = 0x1.9p+0;
    run_engines(&c, "{ tree = \"chain(16)\", atom = { preset = \"sm89.mma.fp8\", align = \"values\" }, out = \"fp32\" }");
    run_oracle(&c, NULL, 13, "e8m13", "values", 16);
}

/* The accumulator s counts by its value under both rules: s = 2.25 from a
 * first group, then the §5 example's small product alone.
 * chain(1), Volta's atom, fp16: group 1 = [+0, 1.5·1.5]: E = 0 (operands),
 * 2.25 exact.  group 2 = [s = 2.25, -(1 - 2^-11)·2^-13]: s counts with
 * floor(log2 2.25) = 1 under both rules, quantum 2^-22, so both give
 * 0x1.1ffc02p+1 (the values result of the §5 example). */
static void test_accumulator_counts_by_value(void **state)
{
    (void)state;
    acase c = {.fmt = NX_FP16, .fmt_name = "fp16", .n = 2,
               .a = {0x1.8p0, -0x1.ffcp-1}, .b = {0x1.8p0, 0x1p-13},
               .abits = {0x3E00, 0xBBFF}, .bbits = {0x3E00, 0x0800}};
    c.want = 0x1.1ffc02p+1;
    run_engines(&c, "{ tree = \"chain(1)\", atom = \"sm70.hmma.f16\" }");
    run_engines(&c, "{ tree = \"chain(1)\", atom = { preset = \"sm70.hmma.f16\", align = \"values\" } }");
    run_oracle(&c, NULL, 23, "fp32", NULL, 1);
    run_oracle(&c, NULL, 23, "fp32", "values", 1);
}

/* The key: printed, hashed where it matters, errors named. */
static void test_align_key(void **state)
{
    (void)state;
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ tree = \"chain(4)\", atom = { frac_bits = 23, align = \"sideways\" } }",
                                  "point", &pt, &err),
                     NX_EINVAL);
    assert_non_null(strstr(err.msg, "atom.align"));
    assert_non_null(strstr(err.msg, "sideways"));
    assert_int_equal(pt_from_text("{ tree = \"chain(4)\", atom = { frac_bits = 23, align = 1 } }", "point", &pt,
                                  &err),
                     NX_EINVAL);
    assert_non_null(strstr(err.msg, "align"));

    assert_int_equal(pt_from_text("{ tree = \"chain(4)\", atom = \"sm80.mma.bf16\" }", "point", &pt, &err), NX_OK);
    char *s = nx_point_print(&pt);
    assert_non_null(strstr(s, "align = \"operands\""));
    free(s);
    nx_point_free(&pt);

    /* cut addends of products: the two rules hash apart; an exact atom, or
     * a value sum, gives the same bits under both and hashes alike */
    const char *pairs[][2] = {
        {"{ tree = \"chain(4)\", atom = { frac_bits = 23 } }",
         "{ tree = \"chain(4)\", atom = { frac_bits = 23, align = \"values\" } }"},
        {"{ tree = \"chain(4)\", atom = {} }", "{ tree = \"chain(4)\", atom = { align = \"values\" } }"},
    };
    for (int dot = 1; dot >= 0; dot--) {
        for (int i = 0; i < 2; i++) {
            char h[2][65];
            for (int j = 0; j < 2; j++) {
                assert_int_equal(pt_from_text(pairs[i][j], "point", &pt, &err), NX_OK);
                nx_program *p;
                assert_int_equal(nx_program_build(&pt, 8, dot, &p, &err), NX_OK);
                assert_int_equal(nx_program_hash(p, h[j], &err), NX_OK);
                nx_program_free(p);
                nx_point_free(&pt);
            }
            int differ = strcmp(h[0], h[1]) != 0;
            if (differ != (dot && i == 0)) {
                print_error("%s vs %s (dot %d): hashes %s\n", pairs[i][0], pairs[i][1], dot,
                            differ ? "differ" : "agree");
                fail();
            }
        }
    }
}

/* The a-priori bound (parity reduce --report, derived tolerances) must cover
 * the cut under "operands", where a subnormal operand makes a small product
 * set a coarse quantum.  Volta's atom, fp16:
 *   2^-24·2^15 = 2^-9          2^-24 subnormal: e = -14 + 15 = 1
 *   (1 - 2^-11)·2^-13          e = -1 + -13 = -14
 * E = 1, quantum 2^-22: 2^-9 = 8192 quanta, 2^-13 - 2^-24 = 511.75 → 511;
 * y = 8703·2^-22 exactly, the exact value 8703.75·2^-22: error 0.75·2^-22.
 * A bound that takes 2^E <= the largest addend (2^-9) would give about
 * 5·2^-23·2^-9 and miss it. */
static void test_bound_covers_operand_alignment(void **state)
{
    (void)state;
    const double a[2] = {0x1p-24, 0x1.ffcp-1}, b[2] = {0x1p15, 0x1p-13};
    nx_program *p = build("{ tree = \"chain(4)\", atom = \"sm70.hmma.f16\" }", 2);
    nx_rows rows = {.rows = 1, .a_fmt = NX_FP16, .a = a, .b_fmt = NX_FP16, .b = b};
    nx_err err = {0};
    double y = -1;
    assert_int_equal(nx_mpfr_reduce(p, &rows, &y, 1, &err), NX_OK);
    assert_double_bits_eq_ctx(y, 0x1.0ff8p-9, "8703·2^-22");
    nx_bound *bd = nx_bound_new(p);
    assert_non_null(bd);
    double bound = nx_bound_apriori(bd, p, NX_FP16, a, NX_FP16, b);
    if (!(bound >= 0x1.8p-23)) {
        print_error("bound %a below the error 0x1.8p-23\n", bound);
        fail();
    }
    nx_bound_free(bd);
    nx_program_free(p);
}

/* Ada's fp8 preset runs groups of 16 (the k32 instruction as two halves). */
static void test_ada_fp8_preset(void **state)
{
    (void)state;
    const nx_atom_preset *p = nx_atom_preset_find("sm89.mma.fp8");
    assert_non_null(p);
    assert_int_equal(p->group, 16);
    assert_int_equal(p->frac_bits, 13);
    assert_int_equal(p->acc, NX_E8M13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_section5_example),
        cmocka_unit_test(test_subnormal_operand),
        cmocka_unit_test(test_fp8),
        cmocka_unit_test(test_accumulator_counts_by_value),
        cmocka_unit_test(test_align_key),
        cmocka_unit_test(test_bound_covers_operand_alignment),
        cmocka_unit_test(test_ada_fp8_preset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
