/* oracle_selftest.c: hand-worked cases for the exact oracle.
 *
 * Every expected bit pattern below was worked out by hand from docs/numerics.md
 * and docs/interpretations.md (the working is in the comments); none was
 * produced by the oracle.  Exit status 0 when all pass.
 *
 * Build: gcc -std=c17 -Wall -Wextra -O1 tests/oracle/oracle.c \
 *            tests/oracle/oracle_selftest.c -lgmp -o /tmp/orc && /tmp/orc */
#include "selftest_util.h"

/* value given as a GMP rational string, e.g. "465", "-3/67108864" */
static void rnd(const char *fmt, const char *mode, int sat, const char *val, int zsign, uint64_t want)
{
    mpq_t q;
    mpq_init(q);
    mpq_set_str(q, val, 10);
    mpq_canonicalize(q);
    uint64_t got = 0;
    int rc = orc_round_bits(fmt, mode, sat, q, zsign, &got);
    char what[160];
    snprintf(what, sizeof what, "round %s %s%s %s", fmt, mode, sat ? " sat" : "", val);
    expect_bits(what, rc, "orc_round_bits failed", got, want);
    mpq_clear(q);
}

static void dec(const char *fmt, uint64_t bits, int want_rc, const char *want_val, int want_nz)
{
    mpq_t q, w;
    mpq_init(q);
    mpq_init(w);
    mpq_set_str(w, want_val, 10);
    mpq_canonicalize(w);
    int nz = -1;
    int rc = orc_decode(fmt, bits, q, &nz);
    checks++;
    if (rc != want_rc || (rc == 0 && (!mpq_equal(q, w) || nz != want_nz))) {
        failures++;
        gmp_printf("FAIL decode %s 0x%llx: rc %d value %Qd nz %d; want rc %d value %s nz %d\n", fmt,
                   (unsigned long long)bits, rc, q, nz, want_rc, want_val, want_nz);
    }
    mpq_clear(q);
    mpq_clear(w);
}

/* fp32 patterns used below */
#define F1 0x3F800000ULL      /* 1 */
#define FM1 0xBF800000ULL     /* -1 */
#define F2_24 0x4B800000ULL   /* 2^24 */
#define FM2_24 0xCB800000ULL  /* -2^24 */
#define FPZ 0x00000000ULL     /* +0 */
#define FNZ 0x80000000ULL     /* -0 */

int main(void)
{
    orc_point p;

    /* ---- A. docs/numerics.md worked example, n = 4, fp32 terms 2^24, 1, -2^24, 1 ----
     * fp32 near 2^24: quantum 2, so 2^24 + 1 is a tie between 2^24 (significand
     * 2^23, even) and 2^24 + 2 (odd): rne gives 2^24.
     * seq: ((+0 + 2^24) + 1) = 2^24; - 2^24 = +0; + 1 = 1.
     * pairwise: (2^24 + 1 -> 2^24) + (-2^24 + 1 = -16777215 exact) = 1.
     * halving: (t0 + t2 = +0) + (t1 + t3 = 2) = 2.
     * split(2, seq, seq): P0 = 2^24, P1 = -16777215; (+0 + P0) + P1 = 1.
     * reverse(seq): 1; 1 - 2^24 = -16777215; + 1 = -16777214; + 2^24 = 2. */
    {
        const uint64_t x[4] = {F2_24, F1, FM2_24, F1};
        p = pt("seq");                        sum("A seq", &p, "fp32", x, 4, 0x3F800000);
        p = pt(NULL);                         sum("A default tree", &p, "fp32", x, 4, 0x3F800000);
        p = pt("pairwise");                   sum("A pairwise", &p, "fp32", x, 4, 0x3F800000);
        p = pt("halving");                    sum("A halving", &p, "fp32", x, 4, 0x40000000);
        p = pt("split(2, seq, seq)");         sum("A split", &p, "fp32", x, 4, 0x3F800000);
        p = pt("reverse(seq)");               sum("A reverse", &p, "fp32", x, 4, 0x40000000);
        p = pt("atomic");                     sum("A atomic = seq", &p, "fp32", x, 4, 0x3F800000);
        /* ru seq: 2^24; 2^24 + 1 -> 2^24 + 2; - 2^24 = 2; + 1 = 3 */
        p = pt("seq"); p.rounding = "ru";     sum("A seq ru", &p, "fp32", x, 4, 0x40400000);
        /* rd seq: 2^24; 2^24 + 1 -> 2^24; - 2^24 = exact zero -> -0 in rd; -0 + 1 = 1 */
        p = pt("seq"); p.rounding = "rd";     sum("A seq rd", &p, "fp32", x, 4, 0x3F800000);
        /* rz halving: t0 + t2 = +0 (rz is not rd), t1 + t3 = 2, sum 2 */
        p = pt("halving"); p.rounding = "rz"; sum("A halving rz", &p, "fp32", x, 4, 0x40000000);
    }

    /* ---- B. terms 2^24, 1, 1, -2^24: seq ends in an exact zero ----
     * seq: 2^24, 2^24, 2^24, then 2^24 - 2^24 = +0 (rne), -0 (rd).
     * pairwise: (2^24 + 1 -> 2^24) + (1 - 2^24 = -16777215) = 1. */
    {
        const uint64_t x[4] = {F2_24, F1, F1, FM2_24};
        p = pt("seq");                       sum("B seq rne", &p, "fp32", x, 4, FPZ);
        p = pt("seq"); p.rounding = "rd";    sum("B seq rd", &p, "fp32", x, 4, FNZ);
        p = pt("pairwise");                  sum("B pairwise", &p, "fp32", x, 4, 0x3F800000);
    }

    /* ---- C. exact-zero signs ---- */
    {
        const uint64_t x[2] = {F1, FM1};
        p = pt("seq");                       sum("C 1-1 rne", &p, "fp32", x, 2, FPZ);
        p = pt("seq"); p.rounding = "rz";    sum("C 1-1 rz", &p, "fp32", x, 2, FPZ);
        p = pt("seq"); p.rounding = "ru";    sum("C 1-1 ru", &p, "fp32", x, 2, FPZ);
        p = pt("seq"); p.rounding = "rd";    sum("C 1-1 rd", &p, "fp32", x, 2, FNZ);
        const uint64_t nz[2] = {FNZ, FNZ};
        /* seq starts at +0: (+0) + (-0) = +0, except rd -0 */
        p = pt("seq");                       sum("C seq -0 rne", &p, "fp32", nz, 1, FPZ);
        p = pt("seq"); p.rounding = "rd";    sum("C seq -0 rd", &p, "fp32", nz, 1, FNZ);
        p = pt("seq");                       sum("C seq -0,-0 rne", &p, "fp32", nz, 2, FPZ);
        /* pairwise n = 1 is leaf(-0) = -0; halving: (-0) + (-0) = -0 in every mode */
        p = pt("pairwise");                  sum("C pairwise -0", &p, "fp32", nz, 1, FNZ);
        p = pt("halving");                   sum("C halving -0,-0", &p, "fp32", nz, 2, FNZ);
        p = pt("halving"); p.rounding = "ru"; sum("C halving -0,-0 ru", &p, "fp32", nz, 2, FNZ);
        /* halving n = 1: leaf; n = 0: +0 (interpretation 9); pairwise n = 0: +0 */
        p = pt("halving");                   sum("C halving n=1", &p, "fp32", nz, 1, FNZ);
        p = pt("halving");                   sum("C halving n=0", &p, "fp32", NULL, 0, FPZ);
        p = pt("pairwise"); p.rounding = "rd"; sum("C pairwise n=0 rd", &p, "fp32", NULL, 0, FPZ);
        p = pt("split(3, seq, seq)");        sum("C split n=0", &p, "fp32", NULL, 0, FPZ);
        /* fma with a -0 product: round(-0 + (+0)) = +0 (rne), -0 (rd) */
        const uint64_t a[1] = {FNZ}, b[1] = {F1};
        p = pt("seq");                       dot("C fma -0 rne", &p, "fp32", a, b, 1, FPZ);
        p = pt("seq"); p.rounding = "rd";    dot("C fma -0 rd", &p, "fp32", a, b, 1, FNZ);
        /* product sign of a zero: (-0) * (-1) = +0; pairwise leaf keeps it */
        const uint64_t a2[1] = {FNZ}, b2[1] = {FM1};
        p = pt("pairwise");                  dot("C -0*-1", &p, "fp32", a2, b2, 1, FPZ);
        p = pt("pairwise");                  dot("C -0*1", &p, "fp32", a, b, 1, FNZ);
    }

    /* ---- D. rna ties: 2^24 + 1 is a tie; rna goes away from zero ---- */
    {
        const uint64_t x[2] = {F2_24, F1};
        const uint64_t y[2] = {FM2_24, FM1};
        p = pt("seq"); p.rounding = "rna";   sum("D rna +", &p, "fp32", x, 2, 0x4B800001);
        p = pt("seq"); p.rounding = "rna";   sum("D rna -", &p, "fp32", y, 2, 0xCB800001);
        p = pt("seq");                       sum("D rne +", &p, "fp32", x, 2, 0x4B800000);
        /* fp16: 1 + 2^-11 is halfway between 1 (0x3c00) and 1 + 2^-10 (0x3c01) */
        rnd("fp16", "rna", 0, "2049/2048", 1, 0x3C01);
        rnd("fp16", "rne", 0, "2049/2048", 1, 0x3C00);
        rnd("fp16", "rna", 0, "-2049/2048", 1, 0xBC01);
        /* 1 + 3*2^-11: between 1025/1024 (odd) and 1026/1024 (even): both give 0x3c02 */
        rnd("fp16", "rne", 0, "2051/2048", 1, 0x3C02);
        rnd("fp16", "rna", 0, "2051/2048", 1, 0x3C02);
        /* bf16 out: 1 + 2^-8 (fp32 0x3f808000) is a tie between 0x3f80 and 0x3f81 */
        const uint64_t z[1] = {0x3F808000};
        p = pt("seq"); p.out = "bf16";                        sum("D bf16 rne", &p, "fp32", z, 1, 0x3F80);
        p = pt("seq"); p.out = "bf16"; p.out_rounding = "rna"; sum("D bf16 rna", &p, "fp32", z, 1, 0x3F81);
        p = pt("seq"); p.out = "bf16"; p.out_rounding = "ru";  sum("D bf16 ru", &p, "fp32", z, 1, 0x3F81);
    }

    /* ---- E. fp16 subnormals: quantum 2^-24 below 2^-14 ---- */
    rnd("fp16", "rne", 0, "3/67108864", 1, 0x0001);     /* 0.75 q -> 1 q */
    rnd("fp16", "rne", 0, "1/33554432", 1, 0x0000);     /* 0.5 q: tie -> 0 (even) */
    rnd("fp16", "rna", 0, "1/33554432", 1, 0x0001);
    rnd("fp16", "ru", 0, "1/33554432", 1, 0x0001);
    rnd("fp16", "rd", 0, "1/33554432", 1, 0x0000);
    rnd("fp16", "rne", 0, "-1/33554432", 1, 0x8000);    /* rounds to zero, keeps sign */
    rnd("fp16", "rna", 0, "-1/33554432", 1, 0x8001);
    rnd("fp16", "rd", 0, "-1/33554432", 1, 0x8001);
    rnd("fp16", "ru", 0, "-1/33554432", 1, 0x8000);
    rnd("fp16", "rne", 0, "5/33554432", 1, 0x0002);     /* 2.5 q -> 2 q */
    rnd("fp16", "rna", 0, "5/33554432", 1, 0x0003);
    rnd("fp16", "rne", 0, "2047/33554432", 1, 0x0400);  /* 1023.5 q -> 1024 q = 2^-14 */
    rnd("fp16", "rz", 0, "1/1073741824", 1, 0x0000);    /* 2^-30 */
    rnd("fp16", "ru", 0, "1/1073741824", 1, 0x0001);
    rnd("fp16", "rne", 0, "0", -1, 0x8000);
    rnd("fp16", "rne", 0, "0", 1, 0x0000);
    {
        /* fp16 accumulator, fp32 inputs 2^-24 (0x33800000), 2^-26 (0x32800000):
         * +0 + 2^-24 = 1 q; 1 q + 0.25 q = 1.25 q -> rne 1 q (0x0001), ru 2 q (0x0002) */
        const uint64_t x[2] = {0x33800000, 0x32800000};
        p = pt("seq"); p.acc = "fp16";                    sum("E fp16 acc rne", &p, "fp32", x, 2, 0x0001);
        p = pt("seq"); p.acc = "fp16"; p.rounding = "ru"; sum("E fp16 acc ru", &p, "fp32", x, 2, 0x0002);
        /* 65520 (fp32 0x477ff000) = 65504 + 16: a tie, 2047 odd -> 2048 * 32 = 65536
         * overflows: rne inf 0x7c00, rz max 0x7bff */
        const uint64_t y[1] = {0x477FF000};
        p = pt("seq"); p.acc = "fp16";                    sum("E fp16 ovf rne", &p, "fp32", y, 1, 0x7C00);
        p = pt("seq"); p.acc = "fp16"; p.rounding = "rz"; sum("E fp16 ovf rz", &p, "fp32", y, 1, 0x7BFF);
    }

    /* ---- F. e4m3: max 448 = 14 * 2^5 (0x7e); 480 = 15 * 2^5 is past it ---- */
    rnd("e4m3", "rne", 0, "464", 1, 0x7E);   /* 14.5: tie -> 14 */
    rnd("e4m3", "rne", 0, "465", 1, 0x7F);   /* -> 15 * 32 = 480 > 448: NaN */
    rnd("e4m3", "rne", 0, "-465", 1, 0x7F);  /* canonical NaN has sign 0 */
    rnd("e4m3", "rz", 0, "465", 1, 0x7E);
    rnd("e4m3", "rne", 1, "465", 1, 0x7E);   /* saturate */
    rnd("e4m3", "rne", 1, "-100000", 1, 0xFE);
    rnd("e4m3", "rz", 0, "-1000", 1, 0xFE);
    rnd("e4m3", "rd", 0, "480", 1, 0x7E);
    rnd("e4m3", "ru", 0, "480", 1, 0x7F);
    rnd("e4m3", "ru", 0, "-480", 1, 0xFE);
    rnd("e4m3", "rne", 0, "1/512", 1, 0x01); /* min subnormal 2^-9 */
    rnd("e4m3", "rne", 0, "1/1024", 1, 0x00);
    rnd("e4m3", "rne", 0, "1", 1, 0x38);     /* code 7 -> 0 0111 000 */

    /* ---- G. fp32 overflow ---- */
    rnd("fp32", "rne", 0, "340282366920938463463374607431768211456", 1, 0x7F800000); /* 2^128 */
    rnd("fp32", "rz", 0, "340282366920938463463374607431768211456", 1, 0x7F7FFFFF);
    rnd("fp32", "rd", 0, "340282366920938463463374607431768211456", 1, 0x7F7FFFFF);
    rnd("fp32", "ru", 0, "340282366920938463463374607431768211456", 1, 0x7F800000);
    rnd("fp32", "ru", 0, "-340282366920938463463374607431768211456", 1, 0xFF7FFFFF);
    rnd("fp32", "rd", 0, "-340282366920938463463374607431768211456", 1, 0xFF800000);
    rnd("fp32", "rne", 1, "340282366920938463463374607431768211456", 1, 0x7F7FFFFF);
    /* max + half ulp = (2^25 - 1) * 2^103: a tie, 2^24 - 1 odd -> 2^128: overflow.
     * (2^25 - 1) * 2^103 = 340282356779733661637539395458142568448 */
    rnd("fp32", "rne", 0, "340282356779733661637539395458142568448", 1, 0x7F800000);
    rnd("fp32", "rz", 0, "340282356779733661637539395458142568448", 1, 0x7F7FFFFF);
    /* fp32 min subnormal 2^-149 = 1/713623846352979940529142984724747568191373312 */
    rnd("fp32", "rne", 0, "1/713623846352979940529142984724747568191373312", 1, 0x00000001);
    rnd("fp32", "rne", 0, "-1/1427247692705959881058285969449495136382746624", 1, 0x80000000);

    /* ---- H. the atom (section 5) ---- */
    {
        /* fp32 terms 1, 0.375 (0x3ec00000), 0.375; chain(3), frac_bits 2, rz/rz:
         * addends +0, 1, 0.375, 0.375; E = 0; cut to multiples of 2^-2 toward
         * zero: 1, 0.25, 0.25; sum 1.5 (0x3fc00000).  The exact sum is 1.75. */
        const uint64_t x[4] = {F1, 0x3EC00000, 0x3EC00000, 0x3EC00000};
        p = pt("chain(3)"); p.has_atom = 1; p.atom_frac_bits = 2; p.atom_round = "rz";
        sum("H atom trunc", &p, "fp32", x, 3, 0x3FC00000);
        p = pt("chain(3)"); p.has_atom = 1; p.atom_round = "rz";
        sum("H atom exact", &p, "fp32", x, 3, 0x3FE00000);
        p = pt("seq");
        sum("H seq", &p, "fp32", x, 3, 0x3FE00000);
        /* term_round rne: 0.375 / 0.25 = 1.5, a tie -> 2 -> 0.5 each: sum 2 */
        p = pt("chain(3)"); p.has_atom = 1; p.atom_frac_bits = 2; p.atom_term_round = "rne";
        sum("H atom term rne", &p, "fp32", x, 3, 0x40000000);
        /* chain(2) over 1, .375, .375, .375: group 1: 0 + 1 + .25 = 1.25;
         * group 2: 1.25 + .25 + .25 = 1.75 (exact sum would be 2.125) */
        p = pt("chain(2)"); p.has_atom = 1; p.atom_frac_bits = 2; p.atom_round = "rz";
        sum("H chain(2)", &p, "fp32", x, 4, 0x3FE00000);
        /* dot, fp16 a = 1.5, 1.5 (0x3e00), b = 1.5, -0.5 (0xb800): products 2.25,
         * -0.75.  align "values": E = floor(log2 2.25) = 1; frac_bits 1:
         * multiples of 1, rz: 2 and -0: sum 2.  align "operands" (the
         * default): 2.25 counts with 0 + 0, -0.75 with 0 + -1, so E = 0 and
         * the quantum is 2^-1: 2 and -0.5, sum 1.5.  The exact sum is 1.5. */
        const uint64_t a[2] = {0x3E00, 0x3E00}, b[2] = {0x3E00, 0xB800};
        p = pt("chain(2)"); p.has_atom = 1; p.atom_frac_bits = 1; p.atom_round = "rz";
        p.atom_align = "values";
        dot("H atom dot trunc values", &p, "fp16", a, b, 2, 0x40000000);
        p.atom_align = NULL;
        dot("H atom dot trunc operands", &p, "fp16", a, b, 2, 0x3FC00000);
        p.atom_align = "operands";
        dot("H atom dot trunc operands (explicit)", &p, "fp16", a, b, 2, 0x3FC00000);
        p = pt("chain(2)"); p.has_atom = 1; p.atom_round = "rz";
        dot("H atom dot exact", &p, "fp16", a, b, 2, 0x3FC00000);
        /* product = "fp16" would round 2.25 -> 2.25 anyway; atoms take exact
         * products: with product e5m2 (2.25 -> 2, -0.75 -> -0.75) the atom still
         * sees 2.25 - 0.75 = 1.5 */
        p = pt("chain(2)"); p.has_atom = 1; p.product = "e5m2";
        dot("H atom ignores product", &p, "fp16", a, b, 2, 0x3FC00000);
        /* zero sum of nonzero addends is +0 even when the atom rounds rd */
        const uint64_t c[2] = {F1, FM1};
        p = pt("chain(2)"); p.has_atom = 1; p.rounding = "rd";
        sum("H atom zero rd", &p, "fp32", c, 2, FPZ);
        p = pt("seq"); p.rounding = "rd";
        sum("H seq zero rd", &p, "fp32", c, 2, FNZ);
        /* addends +0, -0, -0: not every addend is -0, so +0 */
        const uint64_t nz[2] = {FNZ, FNZ};
        p = pt("chain(2)"); p.has_atom = 1;
        sum("H atom -0", &p, "fp32", nz, 2, FPZ);
        /* atom acc e8m13 (p = 14): 1 + 2^-20 (fp32 2^-20 = 0x35800000) -> rz 1,
         * ru 1 + 2^-13 = fp32 0x3f800400 */
        const uint64_t d[2] = {F1, 0x35800000};
        p = pt("chain(2)"); p.has_atom = 1; p.atom_round = "rz"; p.atom_acc = "e8m13";
        sum("H e8m13 rz", &p, "fp32", d, 2, 0x3F800000);
        p = pt("chain(2)"); p.has_atom = 1; p.atom_round = "ru"; p.atom_acc = "e8m13";
        sum("H e8m13 ru", &p, "fp32", d, 2, 0x3F800400);
        p = pt("chain(2)"); p.has_atom = 1; p.atom_round = "ru"; p.atom_acc = "e8m13"; p.out = "e8m13";
        sum("H e8m13 out", &p, "fp32", d, 2, 0x3F800400);
        /* inf addends: +inf with -inf is NaN, +inf alone is +inf */
        const uint64_t e[2] = {0x7F800000, 0xFF800000}, f[2] = {0x7F800000, F1};
        p = pt("chain(2)"); p.has_atom = 1; sum("H atom inf-inf", &p, "fp32", e, 2, 0x7FC00000);
        p = pt("chain(2)"); p.has_atom = 1; sum("H atom inf", &p, "fp32", f, 2, 0x7F800000);
        /* chain(3) with ru over 2^24, 1, 1, 1, 1, 1 (exact addends):
         * group 1: 2^24 + 2 exact; group 2: 2^24 + 2 + 3 = 2^24 + 5 -> ru 2^24 + 6 */
        const uint64_t g[6] = {F2_24, F1, F1, F1, F1, F1};
        p = pt("chain(3)"); p.has_atom = 1; p.atom_round = "ru";
        sum("H chain(3) ru", &p, "fp32", g, 6, 0x4B800003);
        /* chain without an atom is an error */
        p = pt("chain(2)");
        sum_fails("H chain without atom", &p, "fp32", g, 6);
    }

    /* ---- I. fma and product ----
     * a = -1, 1+2^-12 (0x3f800800); b = 1, 1+2^-12.  t1 = 1 + 2^-11 + 2^-24 exactly.
     * fma: round(t1 + (-1)) = 2^-11 + 2^-24 = 0x3a000400 (2^-11 = 0x3a000000, 2^-24 is
     * mantissa bit 10).  No fma: t1 -> 1 + 2^-11 (a tie, even), then 2^-11. */
    {
        const uint64_t a[2] = {FM1, 0x3F800800}, b[2] = {F1, 0x3F800800};
        p = pt("seq");                     dot("I fma", &p, "fp32", a, b, 2, 0x3A000400);
        p = pt("seq"); p.fma = 0;          dot("I no fma", &p, "fp32", a, b, 2, 0x3A000000);
        p = pt("seq"); p.product = "exact"; dot("I product exact", &p, "fp32", a, b, 2, 0x3A000400);
        p = pt("seq"); p.product = "fp32"; dot("I product fp32", &p, "fp32", a, b, 2, 0x3A000000);
        /* bf16 product: t1 -> 1, so -1 + 1 = +0 */
        p = pt("seq"); p.product = "bf16"; dot("I product bf16", &p, "fp32", a, b, 2, FPZ);
        /* fma only in step: pairwise leaves round the product */
        p = pt("pairwise");                dot("I pairwise", &p, "fp32", a, b, 2, 0x3A000000);
        /* X@FMT rounds products to FMT: fp16 leaf of t1 = 1 + 2^-10 (above the tie) */
        const uint64_t a1[1] = {0x3F800800}, b1[1] = {0x3F800800};
        p = pt("pairwise@fp16");           dot("I leaf@fp16", &p, "fp32", a1, b1, 1, 0x3F802000);
        /* NaN: 0 * inf */
        const uint64_t z[1] = {FPZ}, inf[1] = {0x7F800000};
        p = pt("seq");                     dot("I 0*inf fma", &p, "fp32", z, inf, 1, 0x7FC00000);
        p = pt("seq"); p.fma = 0;          dot("I 0*inf", &p, "fp32", z, inf, 1, 0x7FC00000);
    }

    /* ---- J. in rounding: 0x3f801001 = 1 + 2^-11 + 2^-23 ---- */
    {
        const uint64_t x[1] = {0x3F801001};
        p = pt("seq");                                    sum("J no in", &p, "fp32", x, 1, 0x3F801001);
        p = pt("seq"); p.in = "tf32"; p.in_rounding = "rz"; sum("J tf32 rz", &p, "fp32", x, 1, 0x3F800000);
        p = pt("seq"); p.in = "tf32";                      sum("J tf32 rne", &p, "fp32", x, 1, 0x3F802000);
        p = pt("seq"); p.out = "tf32";                     sum("J out tf32", &p, "fp32", x, 1, 0x3F802000);
        p = pt("seq"); p.out = "tf32"; p.out_rounding = "rz"; sum("J out tf32 rz", &p, "fp32", x, 1, 0x3F800000);
        const uint64_t a[1] = {0x3F801001}, b[1] = {0x3F801001};
        /* both inputs truncated to 1: product 1 */
        p = pt("seq"); p.in = "tf32"; p.in_rounding = "rz"; dot("J dot tf32 rz", &p, "fp32", a, b, 1, 0x3F800000);
    }

    /* ---- K. X@FMT: terms 2048 (0x45000000), 1, 1, 0 ----
     * fp16 near 2048: quantum 2, 2049 is a tie -> 2048. */
    {
        const uint64_t x[4] = {0x45000000, F1, F1, FPZ};
        p = pt("seq");                   sum("K seq fp32", &p, "fp32", x, 4, 0x45002000); /* 2050 */
        p = pt("seq@fp16");              sum("K seq@fp16", &p, "fp32", x, 4, 0x45000000);
        p = pt(" seq @ fp16 ");          sum("K ws", &p, "fp32", x, 4, 0x45000000);
        /* P0 = 2048 (fp16), P1 = 1; combined in fp32: 2049 = 0x45001000 */
        p = pt("split(2, seq@fp16, seq)"); sum("K split T@fp16", &p, "fp32", x, 4, 0x45001000);
        /* P0 = 2049 (fp32), P1 = 1; combined in fp16: 2049 -> 2048, + 1 -> 2048 */
        p = pt("split(2, seq, seq@fp16)"); sum("K split C@fp16", &p, "fp32", x, 4, 0x45000000);
        /* acc fp16, inner seq@fp32 gives 2050, which enters as a value; the out
         * conversion (out = acc = fp16) keeps it: at 2048 the fp16 quantum is 2,
         * so 2050 = 2^11 * (1 + 2^-10) is exact: 0x6801.  (seq in fp16 would
         * give 2048 = 0x6800.) */
        p = pt("seq@fp32"); p.acc = "fp16"; sum("K fp16 point, fp32 subtree", &p, "fp32", x, 4, 0x6801);
    }

    /* ---- L. out conversion ---- */
    {
        const uint64_t x[1] = {0x47800000}; /* 65536 */
        p = pt("seq"); p.out = "e5m2";                     sum("L e5m2 inf", &p, "fp32", x, 1, 0x7C);
        p = pt("seq"); p.out = "e5m2"; p.saturate = 1;     sum("L e5m2 sat", &p, "fp32", x, 1, 0x7B);
        p = pt("seq"); p.out = "e5m2"; p.out_rounding = "rz"; sum("L e5m2 rz", &p, "fp32", x, 1, 0x7B);
        /* saturate touches only the out conversion: the fp16 accumulator
         * overflows to inf, which the saturating conversion takes to fp32's
         * max finite (docs/interpretations.md 3) */
        p = pt("seq"); p.acc = "fp16"; p.out = "fp32"; p.saturate = 1;
        sum("L sat out only", &p, "fp32", x, 1, 0x7F7FFFFF);
        const uint64_t inf[1] = {0x7F800000};
        p = pt("seq"); p.out = "e3m2";                     sum("L inf->e3m2", &p, "fp32", inf, 1, 0x1F);
        p = pt("seq"); p.out = "e4m3";                     sum("L inf->e4m3", &p, "fp32", inf, 1, 0x7F);
        p = pt("seq"); p.out = "e4m3"; p.saturate = 1;     sum("L inf->e4m3 sat", &p, "fp32", inf, 1, 0x7E);
        p = pt("seq"); p.out = "fp16"; p.saturate = 1;     sum("L inf->fp16 sat", &p, "fp32", inf, 1, 0x7BFF);
        p = pt("seq"); p.acc = "e3m2";                     sum("L acc e3m2 inf", &p, "fp32", inf, 1, 0x1F);
        const uint64_t five[1] = {0x40A00000};
        p = pt("seq"); p.out = "e2m1";                     sum("L 5->e2m1", &p, "fp32", five, 1, 0x6);
        const uint64_t nan[1] = {0xFF800001};
        p = pt("seq"); p.out = "fp16";                     sum("L NaN->fp16", &p, "fp32", nan, 1, 0x7E00);
        p = pt("seq"); p.out = "e4m3";                     sum("L NaN->e4m3", &p, "fp32", nan, 1, 0x7F);
        p = pt("seq"); p.out = "bf16";                     sum("L NaN->bf16", &p, "fp32", nan, 1, 0x7FC0);
        p = pt("seq"); p.out = "e5m2";                     sum("L NaN->e5m2", &p, "fp32", nan, 1, 0x7E);
        p = pt("seq"); p.out = "fp64";                     sum("L NaN->fp64", &p, "fp32", nan, 1, 0x7FF8000000000000ULL);
        p = pt("seq"); p.out = "e8m0";                     sum("L NaN->e8m0", &p, "fp32", nan, 1, 0xFF);
        p = pt("seq"); p.out = "e3m2";                     sum_fails("L NaN->e3m2", &p, "fp32", nan, 1);
        p = pt("seq"); p.acc = "e2m1";                     sum_fails("L NaN in e2m1 acc", &p, "fp32", nan, 1);
        /* NaN flows through e2m3 (interpretations 4) and is written as fp32's NaN */
        p = pt("seq"); p.in = "e2m3";                      sum("L NaN in e2m3", &p, "fp32", nan, 1, 0x7FC00000);
        /* fp64: 2^53 + 1 -> 2^53 (tie, even); out fp32 2^53 = 0x5a000000 */
        const uint64_t d[2] = {0x4340000000000000ULL, 0x3FF0000000000000ULL};
        p = pt("seq"); p.acc = "fp64";                     sum("L fp64", &p, "fp64", d, 2, 0x4340000000000000ULL);
        p = pt("seq"); p.acc = "fp64"; p.out = "fp32";     sum("L fp64->fp32", &p, "fp64", d, 2, 0x5A000000);
        /* e8m0 output of a zero sum has no encoding: NaN 0xff */
        const uint64_t c[2] = {F1, FM1};
        p = pt("seq"); p.out = "e8m0";                     sum("L 0->e8m0", &p, "fp32", c, 2, 0xFF);
    }

    /* ---- M. split / tile / stride on 2^24, 1, 1, 1, 1, 1 ----
     * 2^24 + 1 -> 2^24 (tie, even); 2^24 + 3 -> 2^24 + 4 (tie between
     * significands 2^23 + 1 and 2^23 + 2); 2^24 + 2 exact.
     * stride(2): lanes {2^24,1,1} -> 2^24, {1,1,1} -> 3: 2^24 + 4.
     * stride(2, block=2): lanes {t0,t1,t4,t5} -> 2^24, {t2,t3} -> 2: 2^24 + 2.
     * tile(2): 2^24, 2, 2: (2^24 + 2) + 2 = 2^24 + 4.
     * split(2): c = 3: 2^24, 3: 2^24 + 4.  align=4: c = 4: 2^24, 2: 2^24 + 2.
     * pairwise: (pw(2^24,1) = 2^24 + pw(1) = 1 -> 2^24) + (2 + 1 = 3) = 2^24 + 4.
     * halving: w = 8: o=4: 2^24, 2, 1, 1; o=2: 2^24, 3; o=1: 2^24 + 4. */
    {
        const uint64_t x[6] = {F2_24, F1, F1, F1, F1, F1};
        p = pt("seq");                           sum("M seq", &p, "fp32", x, 6, 0x4B800000);
        p = pt("stride(2, seq, seq)");           sum("M stride", &p, "fp32", x, 6, 0x4B800002);
        p = pt("stride(2, seq, seq, block=2)");  sum("M stride block", &p, "fp32", x, 6, 0x4B800001);
        p = pt("tile(2, seq, seq)");             sum("M tile", &p, "fp32", x, 6, 0x4B800002);
        p = pt("split(2, seq, seq)");            sum("M split", &p, "fp32", x, 6, 0x4B800002);
        p = pt("split(2, seq, seq, align=4)");   sum("M split align", &p, "fp32", x, 6, 0x4B800001);
        p = pt(" split ( 2 , seq , seq , align = 4 ) "); sum("M ws", &p, "fp32", x, 6, 0x4B800001);
        p = pt("pairwise");                      sum("M pairwise", &p, "fp32", x, 6, 0x4B800002);
        p = pt("halving");                       sum("M halving", &p, "fp32", x, 6, 0x4B800002);
        /* stride(8): lanes 0..5 hold one term each, 6 and 7 give +0; seq over
         * 2^24, 1, 1, 1, 1, 1, 0, 0 -> 2^24 */
        p = pt("stride(8, seq, seq)");           sum("M stride wide", &p, "fp32", x, 6, 0x4B800000);
        /* reverse(seq): 1+1+1+1+1 = 5, + 2^24 -> 2^24 + 5: (2^23 + 2.5) -> 2^23 + 2 */
        p = pt("reverse(seq)");                  sum("M reverse", &p, "fp32", x, 6, 0x4B800002);
        /* split(4) with n = 2: c = 1, slices {1}, {1}, {}, {} -> 2 */
        p = pt("split(4, seq, seq)");            sum("M split empty", &p, "fp32", x + 1, 2, 0x40000000);
        /* combinator that is not seq: split(3, seq, halving): partials 2^24, 2, 2;
         * halving w = 4: (2^24 + 2) , (2 + 0) ; 2^24 + 4 */
        p = pt("split(3, seq, halving)");        sum("M split halving", &p, "fp32", x, 6, 0x4B800002);
        /* split(3, seq, reverse(seq)): partials 2^24, 2, 2 reversed: 2 + 2 = 4, + 2^24 exact */
        p = pt("split(3, seq, reverse(seq))");   sum("M split reverse", &p, "fp32", x, 6, 0x4B800002);
        /* chain as a combinator (exact atom): partials 2^24, 2, 2 in groups of 2:
         * 0 + 2^24 + 2 = 2^24 + 2; then 2^24 + 2 + 2 = 2^24 + 4 */
        p = pt("split(3, seq, chain(2))"); p.has_atom = 1;
        sum("M split chain", &p, "fp32", x, 6, 0x4B800002);
        /* tile(4, reverse(seq), seq): tile 1 reversed 1,1,1,2^24: 3 + 2^24 -> 2^24 + 4;
         * tile 2: 2; total 2^24 + 6 exact */
        p = pt("tile(4, reverse(seq), seq)");    sum("M tile reverse", &p, "fp32", x, 6, 0x4B800003);
    }

    /* ---- N. NaN and inf through sums ---- */
    {
        const uint64_t a[2] = {0x7FC00001, F1};
        const uint64_t b[2] = {0x7F800000, 0xFF800000};
        const uint64_t c[2] = {0x7F800000, F1};
        p = pt("seq");      sum("N NaN in", &p, "fp32", a, 2, 0x7FC00000);
        p = pt("seq");      sum("N inf-inf", &p, "fp32", b, 2, 0x7FC00000);
        p = pt("pairwise"); sum("N inf-inf pw", &p, "fp32", b, 2, 0x7FC00000);
        p = pt("seq");      sum("N inf+1", &p, "fp32", c, 2, 0x7F800000);
        /* e4m3 accumulator: inf rounds to NaN (no inf, has NaN) */
        p = pt("seq"); p.acc = "e4m3"; sum("N e4m3 inf", &p, "fp32", c, 2, 0x7F);
        /* e4m3 accumulator overflow: 448 + 32 = 480 -> rne NaN, rz 448 */
        const uint64_t d[2] = {0x43E00000 /* 448 */, 0x42000000 /* 32 */};
        p = pt("seq"); p.acc = "e4m3";                    sum("N e4m3 ovf", &p, "fp32", d, 2, 0x7F);
        p = pt("seq"); p.acc = "e4m3"; p.rounding = "rz"; sum("N e4m3 ovf rz", &p, "fp32", d, 2, 0x7E);
        /* 448 + 16 = 464 -> tie -> 448 */
        const uint64_t e[2] = {0x43E00000, 0x41800000 /* 16 */};
        p = pt("seq"); p.acc = "e4m3";                    sum("N e4m3 464", &p, "fp32", e, 2, 0x7E);
    }

    /* ---- O. e8m0: 2^(E-127), no zero, no negatives ---- */
    rnd("e8m0", "rne", 0, "1", 1, 0x7F);
    rnd("e8m0", "rne", 0, "3", 1, 0x81);   /* 1.5 * 2: tie -> 2 * 2 = 4 */
    rnd("e8m0", "rne", 0, "5", 1, 0x81);   /* 1.25 * 4 -> 4 */
    rnd("e8m0", "rne", 0, "6", 1, 0x82);   /* 1.5 * 4: tie -> 8 */
    rnd("e8m0", "rz", 0, "6", 1, 0x81);
    rnd("e8m0", "rne", 0, "0", 1, 0xFF);
    rnd("e8m0", "rne", 0, "-1", 1, 0xFF);
    rnd("e8m0", "rne", 1, "-1", 1, 0xFF);
    /* 2^-127 = 1/170141183460469231731687303715884105728 */
    rnd("e8m0", "rne", 0, "1/170141183460469231731687303715884105728", 1, 0x00);
    rnd("e8m0", "rne", 0, "1/340282366920938463463374607431768211456", 1, 0xFF); /* 2^-128: tie -> 0 */
    rnd("e8m0", "ru", 0, "1/340282366920938463463374607431768211456", 1, 0x00);
    rnd("e8m0", "rne", 0, "3/680564733841876926926749214863536422912", 1, 0x00); /* 0.75 * 2^-127 */
    rnd("e8m0", "rne", 0, "170141183460469231731687303715884105728", 1, 0xFE);   /* 2^127 */
    rnd("e8m0", "rne", 0, "340282366920938463463374607431768211456", 1, 0xFF);   /* 2^128: NaN */
    rnd("e8m0", "rz", 0, "340282366920938463463374607431768211456", 1, 0xFE);
    rnd("e8m0", "rne", 1, "340282366920938463463374607431768211456", 1, 0xFE);

    /* ---- P. the 6- and 4-bit formats ---- */
    rnd("e2m1", "rne", 0, "5", 1, 0x6);     /* 2.5 * 2: tie -> 2 * 2 = 4 = 0 10 0 */
    rnd("e2m1", "ru", 0, "5", 1, 0x7);
    rnd("e2m1", "rne", 0, "7", 1, 0x7);     /* -> 8 > 6: no inf, no NaN: max */
    rnd("e2m1", "rne", 0, "-7", 1, 0xF);
    rnd("e2m1", "rne", 0, "1/4", 1, 0x0);   /* 0.5 q: tie -> 0 */
    rnd("e2m1", "rne", 0, "-1/4", 1, 0x8);
    rnd("e2m1", "rna", 0, "1/4", 1, 0x1);
    rnd("e2m1", "rne", 0, "3/4", 1, 0x2);   /* 1.5 q: tie -> 2 q = 1.0 = 0 01 0 */
    rnd("e2m1", "rne", 0, "5/2", 1, 0x4);
    rnd("e2m3", "rne", 0, "15/2", 1, 0x1F);
    rnd("e2m3", "rne", 0, "31/4", 1, 0x1F); /* 7.75 -> 8 -> overflow -> max */
    rnd("e2m3", "rne", 0, "-8", 1, 0x3F);
    rnd("e2m3", "rne", 0, "1/8", 1, 0x01);
    rnd("e3m2", "rne", 0, "28", 1, 0x1F);
    rnd("e3m2", "rne", 0, "30", 1, 0x1F);   /* 7.5 * 4: tie -> 32 -> overflow -> max */
    rnd("e3m2", "rne", 0, "1/16", 1, 0x01);
    rnd("e3m2", "rne", 0, "1/4", 1, 0x04);  /* 2^-2 = emin: code 1, mant 0 */
    rnd("e5m2", "rne", 0, "57344", 1, 0x7B);
    rnd("e5m2", "rne", 0, "61440", 1, 0x7C); /* 7.5 * 8192: tie -> 8 -> 65536: inf */
    rnd("tf32", "rz", 0, "2049/2048", 1, 0x3F800000);
    rnd("tf32", "ru", 0, "2049/2048", 1, 0x3F802000);
    rnd("e8m13", "rne", 0, "16385/16384", 1, 0x3F800000); /* 1 + 2^-14: tie -> 1 */
    rnd("e8m13", "rne", 0, "16387/16384", 1, 0x3F800800); /* 1 + 3*2^-14 -> 1 + 2^-12 */
    rnd("bf16", "rne", 0, "1", 1, 0x3F80);

    /* ---- Q. decoding ---- */
    dec("fp16", 0x0001, 0, "1/16777216", 0);
    dec("fp16", 0x8000, 0, "0", 1);
    dec("fp16", 0x7BFF, 0, "65504", 0);
    dec("fp16", 0xFC00, -1, "0", 0);
    dec("fp32", 0x80000000, 0, "0", 1);
    dec("fp32", 0x7F800000, 1, "0", 0);
    dec("fp32", 0x7F800001, 2, "0", 0);
    dec("fp32", 0x00000001, 0, "1/713623846352979940529142984724747568191373312", 0);
    dec("fp32", 0x100000000ULL, 3, "0", 0);
    dec("e4m3", 0x7F, 2, "0", 0);
    dec("e4m3", 0xFF, 2, "0", 0);
    dec("e4m3", 0x7E, 0, "448", 0);
    dec("e4m3", 0x78, 0, "256", 0);
    dec("e4m3", 0x01, 0, "1/512", 0);
    dec("e5m2", 0x7C, 1, "0", 0);
    dec("e5m2", 0xFC, -1, "0", 0);
    dec("e5m2", 0x7D, 2, "0", 0);
    dec("e5m2", 0x7B, 0, "57344", 0);
    dec("e8m0", 0x00, 0, "1/170141183460469231731687303715884105728", 0);
    dec("e8m0", 0x7F, 0, "1", 0);
    dec("e8m0", 0xFF, 2, "0", 0);
    dec("e2m3", 0x1F, 0, "15/2", 0);
    dec("e2m3", 0x3F, 0, "-15/2", 0);
    dec("e2m3", 0x01, 0, "1/8", 0);
    dec("e3m2", 0x1F, 0, "28", 0);
    dec("e3m2", 0x20, 0, "0", 1);
    dec("e3m2", 0x40, 3, "0", 0);
    dec("e2m1", 0xF, 0, "-6", 0);
    dec("e2m1", 0x1, 0, "1/2", 0);
    dec("e2m1", 0x10, 3, "0", 0);
    dec("tf32", 0x3F802000, 0, "1025/1024", 0);
    dec("tf32", 0x3F800001, 3, "0", 0);
    dec("tf32", 0x7FC00000, 2, "0", 0);
    dec("e8m13", 0x3F800400, 0, "8193/8192", 0);
    dec("e8m13", 0x3F800200, 3, "0", 0);
    dec("bf16", 0x7F80, 1, "0", 0);
    dec("bf16", 0x3F81, 0, "129/128", 0);
    dec("fp64", 0x3FF0000000000000ULL, 0, "1", 0);
    dec("fp64", 0x0000000000000001ULL, 0,
        "1/202402253307310618352495346718917307049556649764142118356901358027430339567995346891960383701437124495187077864316811911389808737385793476867013399940738509921517424276566361364466907742093216341239767678472745068562007483424692698618103355649159556340810056512358769552333414615230502532186327508646006263307707741093494784",
        0);
    dec("nope", 0, 3, "0", 0);

    /* ---- R. malformed points and trees ---- */
    {
        const uint64_t x[2] = {F1, F1};
        const char *bad_trees[] = {
            "split(0, seq, seq)", "foo", "seq@fp99", "seq extra", "split(2, seq, seq, block=2)",
            "tile(2, seq)", "", "chain()", "chain(2", "reverse()", "stride(2, seq, seq, align=2)",
            "seq@", "tile(2, seq, seq, align=1)", "split(2,,seq)", "seq@fp16@fp32", "SEQ",
        };
        for (size_t i = 0; i < sizeof bad_trees / sizeof bad_trees[0]; i++) {
            char what[96];
            snprintf(what, sizeof what, "R tree \"%s\"", bad_trees[i]);
            p = pt(bad_trees[i]);
            p.has_atom = 1;
            sum_fails(what, &p, "fp32", x, 2);
        }
        p = pt("seq"); p.acc = "fp8";           sum_fails("R acc fp8", &p, "fp32", x, 2);
        p = pt("seq"); p.rounding = "rn";       sum_fails("R rounding rn", &p, "fp32", x, 2);
        p = pt("seq"); p.product = "int8";      sum_fails("R product int8", &p, "fp32", x, 2);
        p = pt("seq"); p.out_rounding = "up";   sum_fails("R out_rounding", &p, "fp32", x, 2);
        p = pt("seq"); p.in = "fp12";           sum_fails("R in", &p, "fp32", x, 2);
        p = pt("chain(2)"); p.has_atom = 1; p.atom_acc = "x"; sum_fails("R atom acc", &p, "fp32", x, 2);
        p = pt("seq");                          sum_fails("R input fmt", &p, "fp31", x, 2);
        const uint64_t wide[1] = {0x1FFFF};
        p = pt("seq");                          sum_fails("R fp16 pattern too wide", &p, "fp16", wide, 1);
        /* a bad atom is ignored when has_atom = 0 */
        p = pt("seq"); p.atom_acc = "x";        sum("R atom ignored", &p, "fp32", x, 2, 0x40000000);
    }

    /* S: the start value c (section 6, section 4.1 "Reducing from a start
     * value s0").  fp32, rne; 1 + 2^-24 is a tie between 1 and 1 + 2^-23 and
     * rne keeps 1.  H = 2^-24 (0x33800000). */
    {
        const uint64_t H = 0x33800000, h2[2] = {H, H}, h4[4] = {H, H, H, H};
        const uint64_t one = F1;
        /* seq from 1: 1 + H -> 1, again -> 1 */
        p = pt("seq");                 sum_c("S seq", &p, "fp32", h2, 2, "fp32", one, F1);
        /* pairwise, halving, atomic: round(T + c) = round(2^-23 + 1) = 1 + 2^-23 */
        p = pt("pairwise");            sum_c("S pairwise", &p, "fp32", h2, 2, "fp32", one, 0x3F800001);
        p = pt("halving");             sum_c("S halving", &p, "fp32", h2, 2, "fp32", one, 0x3F800001);
        p = pt("atomic");              sum_c("S atomic", &p, "fp32", h2, 2, "fp32", one, 0x3F800001);
        /* split(2, seq, seq) over H x4: slices from +0 (2^-23 each), the seq
         * combinator from 1: 1 + 2^-23, then 1 + 2^-22 */
        p = pt("split(2, seq, seq)");  sum_c("S split seq comb", &p, "fp32", h4, 4, "fp32", one, 0x3F800002);
        /* over H x2: 1 + H -> 1, 1 + H -> 1 (round(T + c) would be 1 + 2^-23) */
        p = pt("split(2, seq, seq)");  sum_c("S split seq comb 2", &p, "fp32", h2, 2, "fp32", one, F1);
        p = pt("stride(2, seq, seq)"); sum_c("S stride seq comb", &p, "fp32", h2, 2, "fp32", one, F1);
        p = pt("tile(1, seq, seq)");   sum_c("S tile seq comb", &p, "fp32", h2, 2, "fp32", one, F1);
        /* combinator pairwise: round((H + H) + 1) = 1 + 2^-23 */
        p = pt("split(2, seq, pairwise)"); sum_c("S split pairwise comb", &p, "fp32", h2, 2, "fp32", one, 0x3F800001);
        /* reverse(seq) over 1, H from c = H: H + H = 2^-23, + 1 = 1 + 2^-23 */
        const uint64_t r2[2] = {F1, H};
        p = pt("reverse(seq)");        sum_c("S reverse", &p, "fp32", r2, 2, "fp32", H, 0x3F800001);
        /* chain(2), frac_bits 4 (rz cuts): addends c = 2^-5, 1, 1; E = 0;
         * c cut to a multiple of 2^-4 is 0; sum 2 (round(T + c) = 0x40020000) */
        const uint64_t o2[2] = {F1, F1};
        p = pt("chain(2)"); p.has_atom = 1; p.atom_frac_bits = 4;
        sum_c("S chain", &p, "fp32", o2, 2, "fp32", 0x3D000000, 0x40000000);
        /* seq@bf16 from c = 1 + 2^-10 (fp32 0x3f802000, not rounded to bf16):
         * bf16(1 + 2^-10 + 2^-8) = 1 + 2^-7 (0x3f810000) */
        const uint64_t e8[1] = {0x3B800000};
        p = pt("seq@bf16");            sum_c("S seq@bf16", &p, "fp32", e8, 1, "fp32", 0x3F802000, 0x3F810000);
        /* pairwise@bf16 from 1: bf16(2^-8 + 1) = 1 (a tie, even) */
        p = pt("pairwise@bf16");       sum_c("S pairwise@bf16", &p, "fp32", e8, 1, "fp32", one, F1);
        /* no terms: seq is c, pairwise is round(+0 + c) */
        p = pt("seq");                 sum_c("S seq n=0 -0", &p, "fp32", e8, 0, "fp32", 0x80000000, 0x80000000);
        p = pt("pairwise");            sum_c("S pairwise n=0 -0", &p, "fp32", e8, 0, "fp32", 0x80000000, 0);
        /* signed zeros: (-0) + (-0) = -0; (-0) + (+0) = +0, in rd -0 */
        const uint64_t nz[1] = {0x80000000}, pz[1] = {0};
        p = pt("seq");                 sum_c("S seq -0 -0", &p, "fp32", nz, 1, "fp32", 0x80000000, 0x80000000);
        p = pt("seq");                 sum_c("S seq +0 -0", &p, "fp32", pz, 1, "fp32", 0x80000000, 0);
        p = pt("seq"); p.rounding = "rd"; sum_c("S seq rd", &p, "fp32", pz, 1, "fp32", 0x80000000, 0x80000000);
        p = pt("pairwise");            sum_c("S pairwise -0 -0", &p, "fp32", nz, 1, "fp32", 0x80000000, 0x80000000);
        p = pt("pairwise");            sum_c("S pairwise -0 +0", &p, "fp32", nz, 1, "fp32", 0, 0);
        /* NaN (with a payload) and infinities */
        p = pt("seq");                 sum_c("S NaN", &p, "fp32", o2, 1, "fp32", 0x7FC00001, 0x7FC00000);
        p = pt("chain(1)"); p.has_atom = 1; p.atom_frac_bits = 24;
        sum_c("S chain NaN", &p, "fp32", o2, 1, "fp32", 0x7FC00001, 0x7FC00000);
        p = pt("seq");                 sum_c("S +inf", &p, "fp32", o2, 2, "fp32", 0x7F800000, 0x7F800000);
        const uint64_t pinf[1] = {0x7F800000};
        p = pt("seq");                 sum_c("S inf - inf", &p, "fp32", pinf, 1, "fp32", 0xFF800000, 0x7FC00000);
        p = pt("pairwise");            sum_c("S -inf", &p, "fp32", o2, 1, "fp32", 0xFF800000, 0xFF800000);
        /* bf16 c = -1 (0xbf80) with fp32 a = 1 + 2^-23, b = 1 + 2^-22: fused,
         * 3·2^-23 + 2^-45 = 0x1.800002p-22 (0x34c00001); without fma the
         * product rounds to 1 + 3·2^-23 first: 0x1.8p-22 (0x34c00000) */
        const uint64_t a1[1] = {0x3F800001}, b1[1] = {0x3F800002};
        p = pt("seq");                 dot_c("S bf16 c fma", &p, "fp32", a1, b1, 1, "bf16", 0xBF80, 0x34C00001);
        p = pt("seq"); p.fma = 0;      dot_c("S bf16 c no fma", &p, "fp32", a1, b1, 1, "bf16", 0xBF80, 0x34C00000);
        /* fp64 c = 1 + 2^-30: fp32(1 + 2^-30 + 2^-24) = 1 + 2^-23 */
        const uint64_t q1[1] = {H};
        p = pt("seq");                 sum_c("S fp64 c", &p, "fp32", q1, 1, "fp64", 0x3FF0000000400000ull, 0x3F800001);
        /* c is not rounded to `in` (in = bf16): 1 + 2^-10 + 2^-8 is exact in
         * fp32 (0x3f80a000); a bf16 c would be 1, giving 0x3f808000 */
        p = pt("seq"); p.in = "bf16";  sum_c("S c not in-rounded", &p, "fp32", e8, 1, "fp32", 0x3F802000, 0x3F80A000);
    }

    printf("oracle self-test: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
