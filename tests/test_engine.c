/* test_engine.c: the MPFR engine on hand-worked cases.  Every expected
 * value is worked out by hand from docs/numerics.md in the comment beside it and
 * written as a hex-float literal; none comes from the code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_engine.h"
#include "point_toml.h"
#include "testutil.h"

static double eval(const char *toml, const double *a, const double *b, size_t n, nx_fmt in)
{
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(toml, "point", &pt, &err) != NX_OK) {
        print_error("%s\n", err.msg);
        fail();
    }
    nx_program *p;
    assert_int_equal(nx_program_build(&pt, n, b != NULL, &p, &err), NX_OK);
    nx_rows rows = {.rows = 1, .a_fmt = in, .a = a, .b_fmt = in, .b = b};
    double y;
    assert_int_equal(nx_mpfr_reduce(p, &rows, &y, 1, &err), NX_OK);
    nx_program_free(p);
    nx_point_free(&pt);
    return y;
}

#define CHECK(toml, a, b, n, in, want)                                                  \
    do {                                                                                \
        double got_ = eval(toml, a, b, n, in);                                          \
        assert_double_bits_eq_ctx(got_, want, toml);                                    \
    } while (0)

/* Subtree settings (docs/numerics.md §4.1), worked by hand. */
static void test_settings(void **state)
{
    (void)state;
    /* fp32 dot: t0 = -(1 + 2^-11)·1, t1 = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24.
     * fused: -(1 + 2^-11) + t1 exactly = 2^-24.  Not fused: t1 rounds to
     * fp32 first, 2^-24 is half an ulp of 1 and ties to even 1 + 2^-11: 0. */
    const double a[2] = {-0x1.002p0, 0x1.001p0}, b[2] = {1.0, 0x1.001p0};
    CHECK("{ tree = \"seq\" }", a, b, 2, NX_FP32, 0x1p-24);
    CHECK("{ tree = \"seq[fma=false]\" }", a, b, 2, NX_FP32, 0.0);
    CHECK("{ fma = false, tree = \"seq[fma=true]\" }", a, b, 2, NX_FP32, 0x1p-24);
    /* a setting on a node reaches every descendant, down to one that sets
     * its own: the slices of split(1, seq, seq)[fma=false] are not fused */
    CHECK("{ tree = \"split(1, seq, seq)[fma=false]\" }", a, b, 2, NX_FP32, 0.0);
    CHECK("{ tree = \"split(1, seq[fma=true], seq)[fma=false]\" }", a, b, 2, NX_FP32, 0x1p-24);
    /* product: (1 + 2^-8)^2 = 1 + 2^-7 + 2^-16; rounded to bf16 (ulp 2^-7
     * at 1) it is 1 + 2^-7; exact (fused into fp32) it stays */
    const double p[1] = {0x1.01p0};
    CHECK("{ tree = \"seq\" }", p, p, 1, NX_FP32, 0x1.0201p0);
    CHECK("{ tree = \"seq[product=bf16]\" }", p, p, 1, NX_FP32, 0x1.02p0);
    CHECK("{ product = \"bf16\", tree = \"seq[product=exact]\" }", p, p, 1, NX_FP32, 0x1.0201p0);
    /* rounding: 1 + 2^-30 in fp32 is 1 under rne, 1 + 2^-23 under ru */
    const double x[2] = {1.0, 0x1p-30};
    CHECK("{ tree = \"seq\" }", x, NULL, 2, NX_FP32, 1.0);
    CHECK("{ tree = \"seq[rounding=ru]\" }", x, NULL, 2, NX_FP32, 0x1.000002p0);
    CHECK("{ rounding = \"ru\", tree = \"pairwise[rounding=rne]\" }", x, NULL, 2, NX_FP32, 1.0);
    /* acc: 1 + 2^-9 is 1 in bf16 (a quarter ulp), exact in fp32 */
    const double y[2] = {1.0, 0x1p-9};
    CHECK("{ tree = \"seq\" }", y, NULL, 2, NX_FP32, 0x1.008p0);
    CHECK("{ tree = \"seq[acc=bf16]\" }", y, NULL, 2, NX_FP32, 1.0);
    CHECK("{ tree = \"seq@bf16\" }", y, NULL, 2, NX_FP32, 1.0);
}

/* The third edition's orders on values that tell them apart (fp32 sums). */
static void test_paths(void **state)
{
    (void)state;
    /* body(2, seq, seq, carry) over 2^24, 1, 1: body 2^24 + 1 ties to 2^24;
     * the tail continues: 2^24 + 1 → 2^24.  With C = seq the tail is 1 on
     * its own, and 2^24 + 1 → 2^24 again; with the tail first (reverse as
     * C), 1 + 2^24 → 2^24.  A 3-term tail tells carry from seq:
     * body(1, ...) has no tail; body(4, seq, seq, carry) over 2^24, 1, 1, 1,
     * 1, 1: body = 2^24 (each +1 ties down); tail 1, 1 from 2^24: 2^24.
     * body(4, seq, seq) over the same: tail 1 + 1 = 2 alone; 2^24 + 2 = 2^24 + 2 */
    const double v[6] = {0x1p24, 1, 1, 1, 1, 1};
    CHECK("{ tree = \"body(4, seq, seq, carry)\" }", v, NULL, 6, NX_FP32, 0x1p24);
    CHECK("{ tree = \"body(4, seq, seq)\" }", v, NULL, 6, NX_FP32, 0x1.000002p24);
    /* eighth edition, the remainder first: 6 mod 4 = 2, the head is 2^24, 1
     * (2^24 + 1 ties to 2^24).  head(4, seq, seq): the rest, four 1s, is 4
     * on its own, 2^24 + 4 exact.  With carry the rest continues from 2^24
     * and each + 1 ties back: 2^24.  A body would have 2^24 + 2 (above). */
    CHECK("{ tree = \"head(4, seq, seq)\" }", v, NULL, 6, NX_FP32, 0x1.000004p24);
    CHECK("{ tree = \"head(4, seq, seq, carry)\" }", v, NULL, 6, NX_FP32, 0x1p24);
    CHECK("{ tree = \"head(4, seq, seq, pairwise)\" }", v, NULL, 6, NX_FP32, 0x1.000004p24);
    /* n = 4: no head, the rest is seq over 2^24, 1, 1, 1: 2^24; n = 3 < L:
     * all head, pairwise: (2^24 + 1) + 1 → 2^24 */
    CHECK("{ tree = \"head(4, pairwise, seq)\" }", v, NULL, 4, NX_FP32, 0x1p24);
    CHECK("{ tree = \"head(4, pairwise, seq)\" }", v, NULL, 3, NX_FP32, 0x1p24);
    /* the head by pairwise over 1, 1 and 2^24 last, at n = 5 = 4 + 1:
     * the head is t0 alone; over 1, 1, 1, 1, 2^24 the rest 1 + 1 + 1 +
     * 2^24 = 2^24 + 3 ties to 2^24 + 4, + 1 (head) → 2^24 + 4 (tie to even) */
    const double hv[5] = {1, 1, 1, 1, 0x1p24};
    CHECK("{ tree = \"head(4, seq, seq)\" }", hv, NULL, 5, NX_FP32, 0x1.000004p24);
    /* order([1, 0], seq) over 1, 2^24, 1, 2^24: 2^24 + 1 → 2^24, + 2^24 = 2^25,
     * + 1 → 2^25; seq: 1 + 2^24 → 2^24, + 1 → 2^24, + 2^24 = 2^25, + 1 → 2^25.
     * Over 2^24, 1, 1, 1: order gives 1 + 2^24 → 2^24, + 1 → 2^24, + 1 → 2^24;
     * seq the same.  A value that tells: 1, 1, 2^24: seq: 2, + 2^24 = 2^24 + 2;
     * order([2, 0, 1], seq): 2^24 + 1 → 2^24, + 1 → 2^24. */
    const double w[3] = {1, 1, 0x1p24};
    CHECK("{ tree = \"seq\" }", w, NULL, 3, NX_FP32, 0x1.000002p24);
    CHECK("{ tree = \"order([2, 0, 1], seq)\" }", w, NULL, 3, NX_FP32, 0x1p24);
    /* expr(((0 + 1) + 2)) is seq without the +0: the same bits here;
     * expr((0 + (1 + 2))): 1 + 2^24 → 2^24, 1 + 2^24 → 2^24 */
    CHECK("{ tree = \"expr(((0 + 1) + 2))\" }", w, NULL, 3, NX_FP32, 0x1.000002p24);
    CHECK("{ tree = \"expr((0 + (1 + 2)))\" }", w, NULL, 3, NX_FP32, 0x1p24);
    /* fifth edition, docs/numerics.md's worked value: tile(2, seq, carry)
     * over 1, 2^-24, 2^-24, 2^-24 is one running sum: 1 + 2^-24 ties to 1,
     * three times; tile(2, seq, seq): the second tile 2^-23 on its own, and
     * 1 + 2^-23 is exact. */
    const double tc[4] = {1, 0x1p-24, 0x1p-24, 0x1p-24};
    CHECK("{ tree = \"tile(2, seq, carry)\" }", tc, NULL, 4, NX_FP32, 1.0);
    CHECK("{ tree = \"tile(2, seq, seq)\" }", tc, NULL, 4, NX_FP32, 0x1.000002p0);
    CHECK("{ tree = \"tile([1, 3], seq, carry)\" }", tc, NULL, 4, NX_FP32, 1.0);
    /* tiles [1] and [3]: the second 3 * 2^-24 exactly; 1 + 1.5 ulp ties to
     * even, 1 + 2 ulp */
    CHECK("{ tree = \"tile([1, 3], seq, seq)\" }", tc, NULL, 4, NX_FP32, 0x1.000004p0);
    /* tile([1, 2], seq, seq): tiles 1 | 1, 2^24: 1 + (1 + 2^24 → 2^24) → 2^24 */
    CHECK("{ tree = \"tile([1, 2], seq, seq)\" }", w, NULL, 3, NX_FP32, 0x1p24);
    CHECK("{ tree = \"tile([2], seq, seq)\" }", w, NULL, 3, NX_FP32, 0x1.000002p24);
    /* lanes (docs/numerics.md §4.2, its worked values).  t0 = 1, t1 = 2^24,
     * t4 = 1 among twelve: 12 mod 8 = 4, so t0 ... t3 are peeled into lanes
     * 0-3 and t4 joins t0 in lane 0: 2 + 2^24 exactly; stride(8) puts t4 in
     * lane 4, and 1 + 2^24 ties to 2^24 twice.  At n = 16 there is no peel. */
    double p[16] = {1, 0x1p24, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    CHECK("{ tree = \"lanes(8, [peel(4, 8), loop(8)], seq)\" }", p, NULL, 12, NX_FP32, 0x1.000002p24);
    CHECK("{ tree = \"stride(8, seq, seq)\" }", p, NULL, 12, NX_FP32, 0x1p24);
    CHECK("{ tree = \"lanes(8, [peel(4, 8), loop(8)], seq)\" }", p, NULL, 16, NX_FP32, 0x1p24);
    /* 2^24, 1, 0, 1, 1: lanes 2^24 and 2, folded to 2^24 + 2; the left-over
     * 1 goes to the one live lane: 2^24 + 3 ties to even, 2^24 + 4.
     * stride(2): 2^24 + 0 + 1 → 2^24 and 2: 2^24 + 2. */
    const double f[5] = {0x1p24, 1, 0, 1, 1};
    CHECK("{ tree = \"lanes(2, [loop(2), fold(1, [(0 + 1)])], seq)\" }", f, NULL, 5, NX_FP32, 0x1.000004p24);
    CHECK("{ tree = \"stride(2, seq, seq)\" }", f, NULL, 5, NX_FP32, 0x1.000002p24);
    /* lanes(W, [loop(W)], C) is stride(W, seq, C) at every n */
    CHECK("{ tree = \"lanes(2, [loop(2)], seq)\" }", f, NULL, 5, NX_FP32, 0x1.000002p24);
    /* sixth edition: +0, 2^24, +0, +0, 1, 1.  loop(2, 4) takes one round of
     * four: lanes +0 and 2^24; rest(0) adds 1 and 1 to lane 0: 2, exact;
     * 2 + 2^24 exactly (0x4b800001).  Without rest the two left go to lanes
     * 0 and 1 (stride(2)): 1, and 2^24 + 1 → 2^24; 1 + 2^24 → 2^24. */
    const double r[6] = {0, 0x1p24, 0, 0, 1, 1};
    CHECK("{ tree = \"lanes(2, [loop(2, 4), rest(0)], seq)\" }", r, NULL, 6, NX_FP32, 0x1.000002p24);
    CHECK("{ tree = \"lanes(2, [loop(2, 4)], seq)\" }", r, NULL, 6, NX_FP32, 0x1p24);
    CHECK("{ tree = \"stride(2, seq, seq)\" }", r, NULL, 6, NX_FP32, 0x1p24);
    /* seventh edition, docs/numerics.md's worked value: parts in fp64 over
     * 1, (1 + 2^-16) 2^-24, -2^-25, +0: P0 = 1 + 2^-24 + 2^-40, stored in
     * fp32 as 1 + 2^-23; P1 = -2^-25; the fp64 combine 1 + 3 * 2^-25 gives
     * 1 + 2^-23 at the output.  Not stored: 1 + 2^-25 + 2^-40 gives 1. */
    const double st[4] = {1, 0x1.0001p-24, -0x1p-25, 0};
    CHECK("{ acc = \"fp64\", out = \"fp32\", tree = \"split(2, seq[store=fp32], seq)\" }", st, NULL, 4, NX_FP32,
          0x1.000002p0);
    CHECK("{ acc = \"fp64\", out = \"fp32\", tree = \"split(2, seq, seq)\" }", st, NULL, 4, NX_FP32, 1.0);
    CHECK("{ acc = \"fp64\", out = \"fp32\", tree = \"split(2, seq[store=fp64], seq)\" }", st, NULL, 4, NX_FP32,
          1.0);
    CHECK("{ acc = \"fp64\", out = \"fp32\", tree = \"split(2, seq[rounding=rz, store=fp32], seq)\" }", st, NULL,
          4, NX_FP32, 1.0);
}

/* fp32 terms 2^24, 1, -2^24, 1 (docs/numerics.md's hint).  In fp32 2^24 + 1 is a
 * tie between 2^24 and 2^24 + 2, and rne picks 2^24 (even). */
static void test_constructs_differ(void **state)
{
    (void)state;
    const double x[4] = {0x1p24, 1, -0x1p24, 1};
    /* seq: ((((0 + 2^24) + 1) → 2^24) − 2^24 = 0) + 1 = 1 */
    CHECK("{ tree = \"seq\" }", x, NULL, 4, NX_FP32, 1.0);
    /* halving: (t0 + t2) + (t1 + t3) = 0 + 2 = 2 */
    CHECK("{ tree = \"halving\" }", x, NULL, 4, NX_FP32, 2.0);
    /* reverse(seq): 1 − 2^24 = −16777215 (exact), + 1 = −16777214, + 2^24 = 2 */
    CHECK("{ tree = \"reverse(seq)\" }", x, NULL, 4, NX_FP32, 2.0);
    /* stride(2, seq, seq): lane 0 = t0 + t2 = 0, lane 1 = t1 + t3 = 2 → 2 */
    CHECK("{ tree = \"stride(2, seq, seq)\" }", x, NULL, 4, NX_FP32, 2.0);
    /* Terms 1, 2^24, 1, -2^24 separate seq, pairwise, halving:
     * seq: 1 + 2^24 → 2^24 (tie, even), + 1 → 2^24, − 2^24 = 0
     * pairwise: (1 + 2^24 → 2^24) + (1 − 2^24 = −16777215) = 1
     * halving: (1 + 1) + (2^24 − 2^24) = 2
     * split(2, seq, seq): same slices as pairwise → 1; as a value sum of
     *   P0 = 2^24, P1 = −16777215 in seq: 0 + 2^24 − 16777215 = 1
     * tile(3, seq, seq): tile 0 = ((1 + 2^24) → 2^24) + 1 → 2^24, tile 1 = −2^24 → 0
     * stride(2, seq, seq, block=2): lane 0 = t0 t1 → 2^24; lane 1 = t2 t3 → −16777215; 1
     * reverse(pairwise): (−2^24 + 1) + (2^24 + 1 → 2^24) = 1 ... same as pairwise;
     * reverse(seq): −2^24 + 1 = −16777215, + 2^24 = 1, + 1 = 2 */
    const double y[4] = {1, 0x1p24, 1, -0x1p24};
    CHECK("{ tree = \"seq\" }", y, NULL, 4, NX_FP32, 0.0);
    CHECK("{ tree = \"pairwise\" }", y, NULL, 4, NX_FP32, 1.0);
    CHECK("{ tree = \"halving\" }", y, NULL, 4, NX_FP32, 2.0);
    CHECK("{ tree = \"split(2, seq, seq)\" }", y, NULL, 4, NX_FP32, 1.0);
    CHECK("{ tree = \"tile(3, seq, seq)\" }", y, NULL, 4, NX_FP32, 0.0);
    CHECK("{ tree = \"reverse(seq)\" }", y, NULL, 4, NX_FP32, 2.0);
    /* split with align: c = ceil(4/2) = 2 → align 4 → one slice of all four
     * terms, one empty: seq over all = 0 */
    CHECK("{ tree = \"split(2, seq, seq, align=4)\" }", y, NULL, 4, NX_FP32, 0.0);
    /* chain(4) with an exact atom (no frac_bits): one exact sum 2, rounded → 2 */
    CHECK("{ tree = \"chain(4)\", atom = { round = \"rne\" } }", y, NULL, 4, NX_FP32, 2.0);
    /* chain(2): [0 + 1 + 2^24] = 16777217 → fp32 rne tie → 2^24;
     * [2^24 + 1 − 2^24] = 1 */
    CHECK("{ tree = \"chain(2)\", atom = { round = \"rne\" } }", y, NULL, 4, NX_FP32, 1.0);
    /* with rz as the atom's rounding the first group truncates to 2^24 as well: 1 */
    CHECK("{ tree = \"chain(2)\", atom = { round = \"rz\" } }", y, NULL, 4, NX_FP32, 1.0);
}

static void test_signed_zeros(void **state)
{
    (void)state;
    const double nz[2] = {-0.0, -0.0};
    /* seq starts at +0: (+0) + (−0) = +0 */
    CHECK("{ tree = \"seq\" }", nz, NULL, 2, NX_FP32, 0.0);
    /* pairwise: leaf(−0) + leaf(−0) = −0 */
    CHECK("{ tree = \"pairwise\" }", nz, NULL, 2, NX_FP32, -0.0);
    /* in rd, (+0) + (−0) = −0 */
    CHECK("{ tree = \"seq\", rounding = \"rd\" }", nz, NULL, 2, NX_FP32, -0.0);
    const double c[2] = {1, -1};
    /* exact cancellation: +0, except rd: −0 */
    CHECK("{ tree = \"pairwise\" }", c, NULL, 2, NX_FP32, 0.0);
    CHECK("{ tree = \"pairwise\", rounding = \"rz\" }", c, NULL, 2, NX_FP32, 0.0);
    CHECK("{ tree = \"pairwise\", rounding = \"rd\" }", c, NULL, 2, NX_FP32, -0.0);
    /* a tiny negative value rounded to zero keeps its sign: −2^-200 in fp32 → −0 */
    const double t[1] = {-0x1p-200};
    CHECK("{ tree = \"pairwise\" }", t, NULL, 1, NX_FP64, -0.0);
    /* an atom whose addends are all −0 ... but s = +0 takes part: +0 */
    const double z2[2] = {-0.0, -0.0}, o2[2] = {1, 1};
    CHECK("{ tree = \"chain(2)\", atom = { frac_bits = 24 } }", z2, o2, 2, NX_FP32, 0.0);
    /* a dot product whose terms are 0 * -1 = −0 under fma: (+0) + (−0) = +0 */
    const double m1[2] = {-1, -1}, zz[2] = {0, 0};
    CHECK("{ }", zz, m1, 2, NX_FP32, 0.0);
    /* pairwise over the same products: leaf(−0) + leaf(−0) = −0 */
    CHECK("{ tree = \"pairwise\" }", zz, m1, 2, NX_FP32, -0.0);
}

static void test_subtree_format(void **state)
{
    (void)state;
    /* bf16 has p = 8: 1 + 2^-8 is a tie between 1 and 1 + 2^-7; rne → 1.
     * seq@bf16 over 1, 2^-8, 2^-8: 1, 1 → 1.  In fp32 it is 1 + 2^-7. */
    const double x[3] = {1, 0x1p-8, 0x1p-8};
    CHECK("{ tree = \"seq\" }", x, NULL, 3, NX_FP32, 0x1.02p0);
    CHECK("{ tree = \"seq@bf16\" }", x, NULL, 3, NX_FP32, 1.0);
    CHECK("{ tree = \"seq\", acc = \"bf16\" }", x, NULL, 3, NX_FP32, 1.0);
    /* split(2, seq@bf16, seq) over 1, 2^-8, 2^-8, 2^-8 (c = 2):
     * P0 = bf16(1 + 2^-8) = 1; P1 = bf16(2^-8 + 2^-8) = 2^-7; in fp32:
     * 0 + 1 + 2^-7 = 0x1.02p0 */
    const double w[4] = {1, 0x1p-8, 0x1p-8, 0x1p-8};
    CHECK("{ tree = \"split(2, seq@bf16, seq)\" }", w, NULL, 4, NX_FP32, 0x1.02p0);
    /* the reverse: slices in fp32 (P0 = 1 + 2^-8 exactly in fp32), combined
     * in bf16: 0 + P0 → bf16(1 + 2^-8) = 1, then 1 + 2^-7 = 0x1.02p0 exact in bf16 */
    CHECK("{ tree = \"split(2, seq, seq@bf16)\" }", w, NULL, 4, NX_FP32, 0x1.02p0);
    /* and rz in bf16: 1 + 2^-8 → 1; the same here */
    CHECK("{ tree = \"split(2, seq, seq@bf16)\", rounding = \"ru\" }", w, NULL, 4, NX_FP32, 0x1.04p0);
}

static void test_fma_and_products(void **state)
{
    (void)state;
    /* a = b = 1 + 2^-12: a*b = 1 + 2^-11 + 2^-24.  In fp32 (ulp 2^-23 at 1)
     * 2^-24 is a tie: rne → 1 + 2^-11.  Terms: a*b, then -1 * 1. */
    const double a[2] = {0x1.001p0, -1}, b[2] = {0x1.001p0, 1};
    /* fma in seq: s = fp32(a*b + 0) = 1 + 2^-11; s = fp32(-1 + s) = 2^-11 */
    CHECK("{ fma = true }", a, b, 2, NX_FP32, 0x1p-11);
    /* reverse order with fma: s = -1, then fp32(a*b + -1) = 2^-11 + 2^-24
     * = 2^-11 · (1 + 2^-13) exactly */
    CHECK("{ fma = true, tree = \"reverse(seq)\" }", a, b, 2, NX_FP32, 0x1.0008p-11);
    /* without fma: the product is rounded first: 2^-11 */
    CHECK("{ fma = false, tree = \"reverse(seq)\" }", a, b, 2, NX_FP32, 0x1p-11);
    /* product = "bf16" rounds each product to bf16 first: 1 + 2^-11 → 1 (p = 8), − 1 = 0 */
    CHECK("{ product = \"bf16\", tree = \"reverse(seq)\" }", a, b, 2, NX_FP32, 0.0);
    /* in = "bf16", in_rounding = "rz": 1 + 2^-12 truncates to 1: 1*1 − 1 = 0 */
    CHECK("{ in = \"bf16\", in_rounding = \"rz\", tree = \"reverse(seq)\" }", a, b, 2, NX_FP32, 0.0);
    /* fp64 products need no special case: (1 + 2^-40)^2 = 1 + 2^-39 + 2^-80;
     * with fma in fp64: fp64(a*b − 1) exact = 2^-39 + 2^-80 = 2^-39 (1 + 2^-41) */
    const double c[2] = {-1, 0x1.0000000001p0}, d[2] = {1, 0x1.0000000001p0};
    CHECK("{ acc = \"fp64\" }", c, d, 2, NX_FP64, 0x1.00000000008p-39);
}

static void test_atom_truncation(void **state)
{
    (void)state;
    /* atom over s = 0 and 1, 3·2^-4, 3·2^-4, 3·2^-4, 3·2^-4: E = 0; with
     * frac_bits = 2 every addend is cut to a multiple of 2^-2 toward zero:
     * 3·2^-4 = 0.1875 → 0; sum 1.  The exact sum is 1.75 (fp32 exact). */
    const double x[5] = {1, 0x3p-4, 0x3p-4, 0x3p-4, 0x3p-4};
    CHECK("{ tree = \"chain(5)\", atom = { frac_bits = 2 } }", x, NULL, 5, NX_FP32, 1.0);
    CHECK("{ tree = \"chain(5)\", atom = { } }", x, NULL, 5, NX_FP32, 0x1.cp0);
    /* frac_bits = 4: 3·2^-4 is a multiple of 2^-4: nothing is cut: 1.75 */
    CHECK("{ tree = \"chain(5)\", atom = { frac_bits = 4 } }", x, NULL, 5, NX_FP32, 0x1.cp0);
    /* frac_bits = 3: 0.1875 → 0.125 each: 1.5 */
    CHECK("{ tree = \"chain(5)\", atom = { frac_bits = 3 } }", x, NULL, 5, NX_FP32, 0x1.8p0);
    /* term_round = rne at frac_bits 3: 0.1875 = 1.5 quanta → tie → 2 quanta = 0.25: 2.0 */
    CHECK("{ tree = \"chain(5)\", atom = { frac_bits = 3, term_round = \"rne\" } }", x, NULL, 5, NX_FP32, 2.0);
    /* a negative term is cut toward zero too: 1 − 0.1875 → 1 − 0.125 = 0.875 at F = 3 */
    const double y[2] = {1, -0x3p-4};
    CHECK("{ tree = \"chain(2)\", atom = { frac_bits = 3 } }", y, NULL, 2, NX_FP32, 0x1.cp-1);
    /* the e8m13 accumulator of the fp8 preset: products 1·1 and 2^-14·1:
     * E = 0, F = 13: 2^-14 is cut to 0 → 1 */
    const double a[2] = {1, 0x1p-14}, b[2] = {1, 1};
    CHECK("{ tree = \"chain(32)\", atom = \"sm90.wgmma.fp8\" }", a, b, 2, NX_FP32, 1.0);
    /* and the round of the atom sum to e8m13 (p = 14) in rz: 1 + 2^-13 + 2^-13
     * is a multiple of 2^-13 (kept): 1 + 2^-12 */
    const double a3[3] = {1, 0x1p-13, 0x1p-13}, b3[3] = {1, 1, 1};
    CHECK("{ tree = \"chain(32)\", atom = \"sm90.wgmma.fp8\" }", a3, b3, 3, NX_FP32, 0x1.001p0);
}

static void test_out_conversion(void **state)
{
    (void)state;
    const double big[2] = {0x1p127, 0x1p127};
    /* fp32: 2^128 overflows: rne → inf; rz → max finite */
    CHECK("{ }", big, NULL, 2, NX_FP32, INFINITY);
    CHECK("{ rounding = \"rz\" }", big, NULL, 2, NX_FP32, 0x1.fffffep127);
    /* out e4m3 of 464: tie between 448 and 480 (quantum 32): rne → 448 (even) */
    const double v[1] = {464};
    CHECK("{ out = \"e4m3\" }", v, NULL, 1, NX_FP32, 448);
    /* 465 → 480 > 448: overflow: NaN in e4m3, 448 with saturate */
    const double w[1] = {465};
    CHECK("{ out = \"e4m3\" }", w, NULL, 1, NX_FP32, NAN);
    CHECK("{ out = \"e4m3\", saturate = true }", w, NULL, 1, NX_FP32, 448);
    /* out e2m1 (max 6, no inf, no NaN): 7 → overflow → max finite 6 */
    const double s[1] = {7};
    CHECK("{ out = \"e2m1\" }", s, NULL, 1, NX_FP32, 6);
    /* fp16 subnormal: 3·2^-25 is 1.5 quanta of 2^-24 (fp16's subnormal
     * quantum): rne → 2 quanta = 2^-23 (even); rz → 2^-24 */
    const double u[1] = {0x3p-25};
    CHECK("{ out = \"fp16\" }", u, NULL, 1, NX_FP32, 0x1p-23);
    CHECK("{ out = \"fp16\", out_rounding = \"rz\" }", u, NULL, 1, NX_FP32, 0x1p-24);
    /* 3·2^-26 is 0.75 quanta: rne → 2^-24 */
    const double q[1] = {0x3p-26};
    CHECK("{ out = \"fp16\" }", q, NULL, 1, NX_FP32, 0x1p-24);
    /* 2^-25 is half a quantum: rne → +0 (even), rna → 2^-24, ru → 2^-24 */
    const double h[1] = {0x1p-25};
    CHECK("{ out = \"fp16\" }", h, NULL, 1, NX_FP32, 0.0);
    CHECK("{ out = \"fp16\", out_rounding = \"rna\" }", h, NULL, 1, NX_FP32, 0x1p-24);
    const double hn[1] = {-0x1p-25};
    CHECK("{ out = \"fp16\" }", hn, NULL, 1, NX_FP32, -0.0);
    CHECK("{ out = \"fp16\", out_rounding = \"rd\" }", hn, NULL, 1, NX_FP32, -0x1p-24);
}

static void test_specials(void **state)
{
    (void)state;
    const double x[3] = {INFINITY, 1, -INFINITY};
    CHECK("{ }", x, NULL, 3, NX_FP32, NAN);
    CHECK("{ }", x, NULL, 2, NX_FP32, INFINITY);
    const double z[1] = {0}, i[1] = {INFINITY};
    CHECK("{ }", z, i, 1, NX_FP32, NAN); /* 0 · inf */
    const double n[2] = {NAN, 1};
    CHECK("{ tree = \"pairwise\" }", n, NULL, 2, NX_FP32, NAN);
    /* inf into e4m3 (no inf): NaN */
    CHECK("{ out = \"e4m3\" }", i, NULL, 1, NX_FP32, NAN);
}

static void test_threads_and_rows(void **state)
{
    (void)state;
    /* 64 rows of a split-K reduction: results do not depend on the thread count */
    enum { R = 64, N = 100 };
    double *a = malloc(R * N * sizeof *a), *b = malloc(R * N * sizeof *b), y1[R], y2[R];
    for (int i = 0; i < R * N; i++) {
        a[i] = ldexp((double)((i * 7919) % 2001 - 1000), (i % 13) - 6);
        b[i] = ldexp((double)((i * 104729) % 1999 - 999), -(i % 7));
    }
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ acc = \"bf16\", tree = \"split(4, stride(8, seq, halving, block=2), seq)\" }",
                                  "p", &pt, &err),
                     NX_OK);
    nx_program *p;
    assert_int_equal(nx_program_build(&pt, N, 1, &p, &err), NX_OK);
    nx_rows rows = {.rows = R, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32, .b = b};
    assert_int_equal(nx_mpfr_reduce(p, &rows, y1, 1, &err), NX_OK);
    assert_int_equal(nx_mpfr_reduce(p, &rows, y2, 4, &err), NX_OK);
    for (int r = 0; r < R; r++)
        assert_double_bits_eq(y1[r], y2[r]);
    nx_program_free(p);
    nx_point_free(&pt);
    free(a);
    free(b);
}

/* ---------------------------------------------------------------------- */
/* The accumulator input c (docs/numerics.md §4.1 "Reducing from a start
 * value s0", §6): the MPFR and the fast engine from one start value c of
 * format cf, each against the hand-worked value. */

static double eval_c(const char *toml, const double *a, const double *b, size_t n, nx_fmt in, nx_fmt cf,
                     double c, int fast)
{
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(toml, "point", &pt, &err) != NX_OK) {
        print_error("%s\n", err.msg);
        fail();
    }
    nx_program *p;
    assert_int_equal(nx_program_build_ex(&pt, n, b != NULL, 1, &p, &err), NX_OK);
    assert_int_equal(p->start, 1);
    nx_rows rows = {.rows = 1, .a_fmt = in, .a = a, .b_fmt = in, .b = b, .c_fmt = cf, .c = &c};
    double y;
    if (fast)
        assert_int_equal(nx_fast_reduce(p, &rows, &y, 1, &err), NX_OK);
    else
        assert_int_equal(nx_mpfr_reduce(p, &rows, &y, 1, &err), NX_OK);
    nx_program_free(p);
    nx_point_free(&pt);
    return y;
}

#define CHECK_C(toml, a, b, n, in, cf, c, want)                                         \
    do {                                                                                \
        char ctx_[256];                                                                 \
        snprintf(ctx_, sizeof ctx_, "%s from c = %a (mpfr)", toml, (double)(c));        \
        assert_double_bits_eq_ctx(eval_c(toml, a, b, n, in, cf, c, 0), want, ctx_);    \
        snprintf(ctx_, sizeof ctx_, "%s from c = %a (fast)", toml, (double)(c));        \
        assert_double_bits_eq_ctx(eval_c(toml, a, b, n, in, cf, c, 1), want, ctx_);    \
    } while (0)

/* fp32, rne.  1 + 2^-24 is a tie between 1 and 1 + 2^-23: rne gives 1. */
static void test_start_trees(void **state)
{
    (void)state;
    const double h2[2] = {0x1p-24, 0x1p-24}, h4[4] = {0x1p-24, 0x1p-24, 0x1p-24, 0x1p-24};
    /* seq from c = 1: (1 + 2^-24 → 1) + 2^-24 → 1.  (round(seq + c) would be
     * 1 + 2^-23, and from +0 it is 2^-23.) */
    CHECK_C("{ tree = \"seq\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 1.0);
    /* seventh edition: a stored result holds its start value.  In fp64 from
     * c = 1 over 2^-8, 2^-40: 1 + 2^-8 + 2^-40, stored in bf16 (ulp 2^-7,
     * above the midpoint) 1 + 2^-7 (0x3f810000); not stored, the output
     * conversion to fp32 gives 1 + 2^-8 (0x3f808000) */
    const double sb[2] = {0x1p-8, 0x1p-40};
    CHECK_C("{ acc = \"fp64\", out = \"fp32\", tree = \"seq[store=bf16]\" }", sb, NULL, 2, NX_FP32, NX_FP32, 1.0,
            0x1.02p0);
    CHECK_C("{ acc = \"fp64\", out = \"fp32\", tree = \"seq\" }", sb, NULL, 2, NX_FP32, NX_FP32, 1.0, 0x1.01p0);
    /* pairwise, halving: round(T + c) = round(2^-23 + 1) = 1 + 2^-23 */
    CHECK_C("{ tree = \"pairwise\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 0x1.000002p0);
    CHECK_C("{ tree = \"halving\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 0x1.000002p0);
    /* atomic is not seq for the start rule: round(T + c), 1 + 2^-23 */
    CHECK_C("{ tree = \"atomic\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 0x1.000002p0);
    /* split(2, seq, seq) over four 2^-24: the slices start from +0 (P0 = P1
     * = 2^-23), the seq combinator from c: 1 + 2^-23, + 2^-23 = 1 + 2^-22.
     * (Starting slice 0 from c instead: 1, 1, then 1 + 2^-23.) */
    CHECK_C("{ tree = \"split(2, seq, seq)\" }", h4, NULL, 4, NX_FP32, NX_FP32, 1.0, 0x1.000004p0);
    /* over two 2^-24: P0 = P1 = 2^-24; from c: 1 + 2^-24 → 1, again → 1.
     * (round(T + c) would be round(2^-23 + 1) = 1 + 2^-23.) */
    CHECK_C("{ tree = \"split(2, seq, seq)\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 1.0);
    CHECK_C("{ tree = \"stride(2, seq, seq)\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 1.0);
    CHECK_C("{ tree = \"tile(1, seq, seq)\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 1.0);
    /* a combinator that is not seq: round(T + c), T = P0 + P1 = 2^-23 */
    CHECK_C("{ tree = \"split(2, seq, pairwise)\" }", h2, NULL, 2, NX_FP32, NX_FP32, 1.0, 0x1.000002p0);
    /* eighth edition, head from c: over 2^24, 1, 1, 1, 1, 1 (head 2^24, 1).
     * carry: the head from c = 1, (1 + 2^24) ties to 2^24, + 1 ties back,
     * and the rest keeps 2^24.  Without carry the seq combinator from c:
     * 1 + 2^24 → 2^24, then + 4 (the rest on its own): 2^24 + 4. */
    const double hv[6] = {0x1p24, 1, 1, 1, 1, 1};
    CHECK_C("{ tree = \"head(4, seq, seq, carry)\" }", hv, NULL, 6, NX_FP32, NX_FP32, 1.0, 0x1p24);
    CHECK_C("{ tree = \"head(4, seq, seq)\" }", hv, NULL, 6, NX_FP32, NX_FP32, 1.0, 0x1.000004p24);
    /* an empty head (n = 4): carry takes the rest from c: seq from 1 over
     * 2^24, 1, 1, 1: 1 + 2^24 → 2^24, the 1s tie back: 2^24.  Over four
     * 2^-24 from c = 1 the rest's seq from c keeps 1; without carry the
     * rest is 2^-22 on its own and 1 + 2^-22 is exact. */
    /* the head itself starts from c (it is not reduced from scratch and c
     * added): over 2^-24, 2^-24, 0, 0, 0, 0, seq from 1 keeps 1 twice and
     * the rest adds zeros: 1.  From scratch the head would be 2^-23, and
     * 1 + 2^-23 is exact: that is the combinator's result without carry. */
    const double hz[6] = {0x1p-24, 0x1p-24, 0, 0, 0, 0};
    CHECK_C("{ tree = \"head(4, seq, seq, carry)\" }", hz, NULL, 6, NX_FP32, NX_FP32, 1.0, 1.0);
    CHECK_C("{ tree = \"head(4, seq, seq)\" }", hz, NULL, 6, NX_FP32, NX_FP32, 1.0, 0x1.000002p0);
    CHECK_C("{ tree = \"head(4, seq, seq, carry)\" }", hv, NULL, 4, NX_FP32, NX_FP32, 1.0, 0x1p24);
    CHECK_C("{ tree = \"head(4, seq, seq, carry)\" }", h4, NULL, 4, NX_FP32, NX_FP32, 1.0, 1.0);
    CHECK_C("{ tree = \"head(4, seq, seq)\" }", h4, NULL, 4, NX_FP32, NX_FP32, 1.0, 0x1.000004p0);
    /* reverse(seq) over 1, 2^-24 from c = 2^-24: c + 2^-24 = 2^-23, + 1 =
     * 1 + 2^-23.  (seq from c: 1, 1; round(reverse(seq) + c): 1, 1.) */
    const double r2[2] = {1.0, 0x1p-24};
    CHECK_C("{ tree = \"reverse(seq)\" }", r2, NULL, 2, NX_FP32, NX_FP32, 0x1p-24, 0x1.000002p0);
    /* chain(2), frac_bits 4, rz cuts: the first atom's addends are c = 2^-5,
     * 1, 1; E = 0, c is cut to a multiple of 2^-4: 0; sum 2.  (round(T + c)
     * would be 2 + 2^-5 = 0x1.04p1.) */
    const double o2[2] = {1.0, 1.0};
    CHECK_C("{ tree = \"chain(2)\", atom = { frac_bits = 4 } }", o2, NULL, 2, NX_FP32, NX_FP32, 0x1p-5, 2.0);
    /* seq@bf16 from c = 1 + 2^-10 (fp32, not a bf16 value: it enters exactly):
     * bf16(1 + 2^-10 + 2^-8) = 1 + 2^-7 (above the midpoint 1 + 2^-8) */
    const double e8[1] = {0x1p-8};
    CHECK_C("{ tree = \"seq@bf16\" }", e8, NULL, 1, NX_FP32, NX_FP32, 0x1.004p0, 0x1.02p0);
    /* pairwise@bf16: X@FMT passes c to X, whose round(T + c) is in bf16:
     * bf16(2^-8 + 1) = 1 (tie, even).  In fp32 it would be 1 + 2^-8. */
    CHECK_C("{ tree = \"pairwise@bf16\" }", e8, NULL, 1, NX_FP32, NX_FP32, 1.0, 1.0);
    /* no terms: seq is c itself (then `out`), pairwise is round(+0 + c) */
    CHECK_C("{ tree = \"seq\" }", e8, NULL, 0, NX_FP32, NX_FP64, 0x1.00000001p0, 1.0);
    CHECK_C("{ tree = \"seq\", out = \"fp64\" }", e8, NULL, 0, NX_FP32, NX_FP64, 0x1.00000001p0, 0x1.00000001p0);
    CHECK_C("{ tree = \"seq\" }", e8, NULL, 0, NX_FP32, NX_FP32, -0.0, -0.0);
    CHECK_C("{ tree = \"pairwise\" }", e8, NULL, 0, NX_FP32, NX_FP32, -0.0, 0.0);
}

static void test_start_values(void **state)
{
    (void)state;
    /* c = -0: seq over -0 from -0 is (-0) + (-0) = -0 (from +0 it is +0) */
    const double nz[1] = {-0.0}, pz[1] = {0.0};
    CHECK_C("{ tree = \"seq\" }", nz, NULL, 1, NX_FP32, NX_FP32, -0.0, -0.0);
    CHECK_C("{ tree = \"seq\" }", pz, NULL, 1, NX_FP32, NX_FP32, -0.0, 0.0);
    CHECK_C("{ tree = \"seq\", rounding = \"rd\" }", pz, NULL, 1, NX_FP32, NX_FP32, -0.0, -0.0);
    CHECK_C("{ tree = \"pairwise\" }", nz, NULL, 1, NX_FP32, NX_FP32, 0.0, 0.0);
    CHECK_C("{ tree = \"pairwise\" }", nz, NULL, 1, NX_FP32, NX_FP32, -0.0, -0.0);
    /* a dot product: 0·(-1) = -0 fused with c = -0: (-0) + (-0) = -0 */
    const double z1[1] = {0.0}, m1[1] = {-1.0};
    CHECK_C("{ }", z1, m1, 1, NX_FP32, NX_FP32, -0.0, -0.0);
    /* NaN and infinities */
    const double one[1] = {1.0}, one2[2] = {1.0, 2.0}, inf1[1] = {INFINITY};
    CHECK_C("{ tree = \"seq\" }", one, NULL, 1, NX_FP32, NX_FP32, NAN, NAN);
    CHECK_C("{ tree = \"pairwise\" }", one, NULL, 1, NX_FP32, NX_FP32, NAN, NAN);
    CHECK_C("{ tree = \"chain(1)\", atom = { frac_bits = 24 } }", one, NULL, 1, NX_FP32, NX_FP32, NAN, NAN);
    CHECK_C("{ tree = \"seq\" }", one2, NULL, 2, NX_FP32, NX_FP32, INFINITY, INFINITY);
    CHECK_C("{ tree = \"seq\" }", inf1, NULL, 1, NX_FP32, NX_FP32, -INFINITY, NAN);
    CHECK_C("{ tree = \"pairwise\" }", one, NULL, 1, NX_FP32, NX_FP32, -INFINITY, -INFINITY);
    /* c of another format than a and b: bf16 c = -1 with fp32 a = 1 + 2^-23,
     * b = 1 + 2^-22.  a·b = 1 + 3·2^-23 + 2^-45; fused with c: 3·2^-23 +
     * 2^-45 = 0x1.800002p-22, exact in fp32.  Without fma the product is
     * rounded first (to 1 + 3·2^-23): 0x1.8p-22. */
    const double a1[1] = {0x1.000002p0}, b1[1] = {0x1.000004p0};
    CHECK_C("{ }", a1, b1, 1, NX_FP32, NX_BF16, -1.0, 0x1.800002p-22);
    CHECK_C("{ fma = false }", a1, b1, 1, NX_FP32, NX_BF16, -1.0, 0x1.8p-22);
    /* fp64 c = 1 + 2^-30 with fp32 terms: fp32(1 + 2^-30 + 2^-24) = 1 + 2^-23
     * (above the midpoint); c rounded to fp32 first would give 1 */
    const double q1[1] = {0x1p-24};
    CHECK_C("{ tree = \"seq\" }", q1, NULL, 1, NX_FP32, NX_FP64, 0x1.00000004p0, 0x1.000002p0);
    /* c is not rounded to `in`: in = bf16, c = 1 + 2^-10, fp32(c + 2^-8) =
     * 1 + 2^-8 + 2^-10 exactly (a bf16 c would be 1, giving 1 + 2^-8) */
    const double e8[1] = {0x1p-8};
    CHECK_C("{ tree = \"seq\", in = \"bf16\" }", e8, NULL, 1, NX_FP32, NX_FP32, 0x1.004p0, 0x1.014p0);
}

/* The start value is part of the program: its hash differs, its expansion
 * prints it as c. */
static void test_start_program(void **state)
{
    (void)state;
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ tree = \"split(2, seq, seq)\" }", "p", &pt, &err), NX_OK);
    nx_program *p0, *p1;
    assert_int_equal(nx_program_build(&pt, 4, 0, &p0, &err), NX_OK);
    assert_int_equal(nx_program_build_ex(&pt, 4, 0, 1, &p1, &err), NX_OK);
    char h0[65], h1[65];
    assert_int_equal(nx_program_hash(p0, h0, &err), NX_OK);
    assert_int_equal(nx_program_hash(p1, h1, &err), NX_OK);
    assert_string_not_equal(h0, h1);
    char *e = nx_program_expansion(p1);
    assert_string_equal(e, "(c+((+0+t0)+t1))+((+0+t2)+t3)");
    free(e);
    /* rows without c for a program that needs them: an error, not a guess */
    double a[4] = {1, 2, 3, 4}, y;
    nx_rows rows = {.rows = 1, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
    assert_int_not_equal(nx_mpfr_reduce(p1, &rows, &y, 1, &err), NX_OK);
    assert_int_not_equal(nx_fast_reduce(p1, &rows, &y, 1, &err), NX_OK);
    nx_program_free(p0);
    nx_program_free(p1);
    nx_point_set_tree(&pt, "pairwise", "tree", &err);
    assert_int_equal(nx_program_build_ex(&pt, 2, 0, 1, &p1, &err), NX_OK);
    e = nx_program_expansion(p1);
    assert_string_equal(e, "(t0+t1)+c");
    free(e);
    nx_program_free(p1);
    nx_point_free(&pt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_trees),       cmocka_unit_test(test_start_values),
        cmocka_unit_test(test_start_program),
        cmocka_unit_test(test_settings),          cmocka_unit_test(test_paths),
        cmocka_unit_test(test_constructs_differ), cmocka_unit_test(test_signed_zeros),
        cmocka_unit_test(test_subtree_format),    cmocka_unit_test(test_fma_and_products),
        cmocka_unit_test(test_atom_truncation),   cmocka_unit_test(test_out_conversion),
        cmocka_unit_test(test_specials),          cmocka_unit_test(test_threads_and_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
