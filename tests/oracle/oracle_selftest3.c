/* oracle_selftest3.c: hand-worked cases for the oracle's third edition of
 * the point language (docs/numerics.md §4.1-§4.3): subtree settings
 * X[k=v, ...], body and carry, tile lists and halve=, order, expr, lanes
 * (loop, peel, fold; the sixth edition's loop(B, U) and rest(L)), reducing from a start value, row classes with select
 * and grid, and the malformed cases.
 *
 * Every expected bit pattern was worked out by hand from the contract (the
 * working is in the comments); none was produced by the oracle.  Exit
 * status 0 when all pass.
 *
 * fp32 near 2^24 (written T below, pattern 0x4b800000): the quantum on
 * [2^24, 2^25) is 2, so T + 2k has the pattern 0x4b800000 + k, and T + odd
 * is a tie that rne sends to the neighbour whose significand is even
 * (T + 1 -> T, T + 3 -> T + 4, T + 5 -> T + 4).  On [2^25, 2^26) the
 * quantum is 4. */
#include "selftest_util.h"

static void sel_is(const char *expr, int64_t r, int64_t R, const int64_t *grid, int64_t want)
{
    char err[512] = "";
    int64_t got = -12345;
    checks++;
    int rc = orc_select_eval(expr, r, R, grid, &got, err, sizeof err);
    if (rc != 0 || got != want) {
        failures++;
        printf("FAIL select \"%s\" r=%lld R=%lld: rc %d (%s) value %lld, want %lld\n", expr,
               (long long)r, (long long)R, rc, err, (long long)got, (long long)want);
    }
}

static void sel_fails(const char *expr, int64_t r, int64_t R, const int64_t *grid)
{
    char err[512] = "";
    int64_t got = 0;
    checks++;
    int rc = orc_select_eval(expr, r, R, grid, &got, err, sizeof err);
    if (rc == 0 || err[0] == 0) {
        failures++;
        printf("FAIL select \"%s\": expected an error with a message, got rc %d value %lld\n", expr, rc,
               (long long)got);
    }
}

/* rows: R rows of n terms, all the classes; compares every row */
static void rows_are(const char *what, const orc_point *p, const orc_rowclass *cl, size_t ncl,
                     const int64_t *grid, size_t R, const char *fmt, const uint64_t *a,
                     const uint64_t *b, size_t n, const uint64_t *want)
{
    char err[512] = "";
    uint64_t got[16] = {0};
    checks++;
    int rc = orc_reduce_rows(p, cl, ncl, grid, R, fmt, NULL, a, b, n, NULL, NULL, got, err, sizeof err);
    if (rc != 0) {
        failures++;
        printf("FAIL %s: error %d: %s\n", what, rc, err);
        return;
    }
    for (size_t r = 0; r < R; r++)
        if (got[r] != want[r]) {
            failures++;
            printf("FAIL %s: row %zu: got 0x%llx, want 0x%llx\n", what, r, (unsigned long long)got[r],
                   (unsigned long long)want[r]);
        }
}

static void rows_fail(const char *what, const orc_point *p, const orc_rowclass *cl, size_t ncl,
                      const int64_t *grid, size_t R, const uint64_t *a, size_t n)
{
    char err[512] = "";
    uint64_t got[16] = {0};
    checks++;
    int rc = orc_reduce_rows(p, cl, ncl, grid, R, "fp32", NULL, a, NULL, n, NULL, NULL, got, err, sizeof err);
    if (rc == 0 || err[0] == 0) {
        failures++;
        printf("FAIL %s: expected an error with a message (rc %d)\n", what, rc);
    }
}

#define F1 0x3F800000ULL   /* 1 */
#define FM1 0xBF800000ULL  /* -1 */
#define FH 0x3F000000ULL   /* 0.5 */
#define F2 0x40000000ULL   /* 2 */
#define F3 0x40400000ULL   /* 3 */
#define FT 0x4B800000ULL   /* T = 2^24 */
#define FMT 0xCB800000ULL  /* -T */
#define FPZ 0x00000000ULL  /* +0 */
#define FNZ 0x80000000ULL  /* -0 */
#define T_(k) (0x4B800000ULL + (k)) /* T + 2k */

/* The dot product of docs/numerics.md §4.2: t0 = -(1 + 2^-11)·1 and
 * t1 = (1 + 2^-12)·(1 + 2^-12) = 1 + 2^-11 + 2^-24.  1 + 2^-11 is
 * 0x3f801000, 1 + 2^-12 is 0x3f800800.
 * Fused: s = -(1 + 2^-11); round(t1 + s) = 2^-24 exactly: 0x33800000.
 * Unfused: t1 rounds to fp32 first; 2^-24 is half an ulp of 1, a tie, and
 * the even neighbour is 1 + 2^-11; the sum is an exact zero: +0. */
static const uint64_t FMA_A[2] = {0xBF801000, 0x3F800800}, FMA_B[2] = {0x3F800000, 0x3F800800};
#define FMA_FUSED 0x33800000ULL
#define FMA_UNFUSED 0x00000000ULL

int main(void)
{
    orc_point p;

    /* ---- A. body, the example of §4.1 (n = 7, L = 4) ----
     * terms T, 1, 1, 1, 0.5, 0.5, -1; m = 7 - 7 % 4 = 4.
     * body by stride(4, seq, halving): each lane holds one term, its seq is
     * that term; halving over the lanes: ((t0 + t2) + (t1 + t3)) =
     * ((T + 1) + (1 + 1)) = (T + 2) = T + 2 (T + 1 ties to T): H = T + 2.
     * (seq over the body would give T: each + 1 ties back to T.)
     * tail by tile(2, pairwise, seq): tiles {t4, t5}, {t6}: partials
     * P0 = (0.5 + 0.5) = 1, P1 = leaf(-1) = -1.
     * carry: the tail's seq combinator from H: ((H + 1) + -1):
     *   T + 3 ties to T + 4; T + 4 - 1 = T + 3 ties to T + 4: 0x4b800002.
     * seq (and the default C): ((+0 + H) + ((+0 + 1) + -1)) = (H + +0)
     *   = T + 2: 0x4b800001.
     * (Had the tiles been {t4}, {t5, t6}, carry would give
     *  ((T + 2.5) + -0.5) = T + 2: the tile boundary shows.) */
    {
        const uint64_t x[7] = {FT, F1, F1, F1, FH, FH, FM1};
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq), carry)");
        sum("A body carry", &p, "fp32", x, 7, T_(2));
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq), seq)");
        sum("A body seq", &p, "fp32", x, 7, T_(1));
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq))");
        sum("A body default C", &p, "fp32", x, 7, T_(1));
        /* whitespace between every two tokens */
        p = pt(" body ( 4 , stride ( 4 , seq , halving ) , tile ( 2 , pairwise , seq ) , carry ) ");
        sum("A body carry spaced", &p, "fp32", x, 7, T_(2));
        /* from s0 = -2 (fp32 0xc0000000), carry: v = round(s0 + H) = T;
         * then the tail from v: T + 1 ties to T, T - 1 is exact (quantum 1
         * below 2^24): 0x4b7fffff.  (round(carry + s0) would be T + 2, and
         * the tail from s0 alone -2.) */
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq), carry)");
        sum_c("A body carry from s0", &p, "fp32", x, 7, "fp32", 0xC0000000, 0x4B7FFFFF);
        /* seq combinator from s0: ((s0 + H) + Tail) = (T + +0) = T */
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq))");
        sum_c("A body seq from s0", &p, "fp32", x, 7, "fp32", 0xC0000000, FT);
        /* combinator pairwise from s0: round((H + Tail) + s0) = T + 2 - 2 = T */
        p = pt("body(4, stride(4, seq, halving), tile(2, pairwise, seq), pairwise)");
        sum_c("A body pairwise from s0", &p, "fp32", x, 7, "fp32", 0xC0000000, FT);
    }
    /* fifth edition, docs/numerics.md §4.2 worked value: tile(2, seq,
     * carry) over 1, 2^-24, 2^-24, 2^-24 is one running sum, each 1 + 2^-24
     * a tie to even, 1 (0x3f800000); tile(2, seq, seq): the second tile is
     * 2^-23 alone and 1 + 2^-23 is exact (0x3f800001).  With -0, -0 and
     * pairwise tiles of 2: the one tile's -0 is the result, as body's
     * carry keeps it (+0 appears only where a seq starts from nothing). */
    {
        const uint64_t x[4] = {F1, 0x33800000ULL, 0x33800000ULL, 0x33800000ULL}; /* 1, 2^-24 */
        p = pt("tile(2, seq, carry)");
        sum("A5 tile carry", &p, "fp32", x, 4, F1);
        p = pt("tile(2, seq, seq)");
        sum("A5 tile seq", &p, "fp32", x, 4, 0x3F800001ULL);
        const uint64_t nz[2] = {FNZ, FNZ};
        p = pt("tile(2, pairwise, carry)");
        sum("A5 tile carry -0", &p, "fp32", nz, 2, FNZ);
    }
    /* docs/numerics.md §4.2 worked values: body(4, seq, seq, carry) over
     * T, 1, 1, 1, 1, 1: the body's + 1s tie back to T; the tail continues
     * from T and stays T.  body(4, seq, seq): the tail is 2 on its own and
     * T + 2 is exact. */
    {
        const uint64_t x[6] = {FT, F1, F1, F1, F1, F1};
        p = pt("body(4, seq, seq, carry)");
        sum("A2 body carry", &p, "fp32", x, 6, FT);
        p = pt("body(4, seq, seq)");
        sum("A2 body", &p, "fp32", x, 6, T_(1));
        /* empty tail (n = 4): carry gives T's value as it is; the seq
         * combinator gives (+0 + T's value).  With the terms -0, -0 and
         * L = 2: pairwise = (-0 + -0) = -0; carry keeps -0, seq makes +0. */
        const uint64_t nz[2] = {FNZ, FNZ};
        p = pt("body(2, pairwise, seq, carry)");
        sum("A2 body carry empty tail", &p, "fp32", nz, 2, FNZ);
        p = pt("body(2, pairwise, seq)");
        sum("A2 body seq empty tail", &p, "fp32", nz, 2, FPZ);
        /* empty body (n < L), carry: the tail from scratch.  Terms 1, T, 1
         * under L = 4 and U = reverse(seq): ((1 + T) + 1) = T. */
        const uint64_t y[3] = {F1, FT, F1};
        p = pt("body(4, seq, reverse(seq), carry)");
        sum("A2 body carry empty body", &p, "fp32", y, 3, FT);
    }

    /* ---- B. tile(P, T, C, halve=A) at n = 1000: P = 320, A = 8 ----
     * Tiles 320, 320 (at least 640 remain each time), then r = 360 > 320:
     * ceil(360/2) = 180 up to a multiple of 8 = 184, and 176.
     * Probe (fp32 inputs, T = seq@bf16, C = seq in fp32): x_i = 1, except
     * x_320 = 1024 and x_i = 1024 for i >= 824.  bf16 holds the integers up
     * to 256 exactly; 256 + 1 ties back to 256 (quantum 2), 1024 + 1 ties
     * back to 1024 (quantum 8); k·1024 is exact for k <= 255.
     *   tile [0, 320): 320 ones -> 256
     *   tile [320, 640): 1024 then 319 ones -> 1024
     *   tile [640, 824): 184 ones -> 184
     *   tile [824, 1000): 176 times 1024 -> 180224
     * seq in fp32: 256 + 1024 + 184 + 180224 = 181688, exact:
     * 181688 = 2^17 · (1 + 50616/131072); mantissa 50616·2^6 = 0x316e00,
     * exponent 17 + 127 = 0x90: 0x48316e00.
     * (Tiles 320, 320, 180, 180 give 181684; 321, 319, ... give 181944;
     * plain tile(320, ...) gives 0x48314000.) */
    {
        static uint64_t x[1000];
        for (size_t i = 0; i < 1000; i++)
            x[i] = (i == 320 || i >= 824) ? 0x44800000 /* 1024 */ : F1;
        p = pt("tile(320, seq@bf16, seq, halve=8)");
        sum("B halve=8 n=1000", &p, "fp32", x, 1000, 0x48316E00);
        p = pt("tile(320, seq[acc=bf16], seq, halve = 8)");
        sum("B halve=8 [acc=bf16]", &p, "fp32", x, 1000, 0x48316E00);
        /* the same tiles as a list: 320, 320, 184, and the rest (176) */
        p = pt("tile([320, 320, 184], seq@bf16, seq)");
        sum("B tile list", &p, "fp32", x, 1000, 0x48316E00);
    }
    /* docs/numerics.md §4.2: tile(4, ..., halve=1) at n = 13 is 4, 4, 3, 2;
     * halve=2 is 4, 4, 4, 1.  Probe: T = seq@bf16 over ones with
     * x_i = 256 where a tile should start: 256 + 1 ties back to 256, so a
     * tile that starts with 256 sums to 256, a tile of ones alone to its
     * length.  Terms: 1 x8, 256, 1, 1, 256, 1 (indices 8 and 11 hold 256).
     *   halve=1: tiles [0,4) 4, [4,8) 4, [8,11) 256 (256, 1, 1), [11,13) 256
     *            (256, 1): 4 + 4 + 256 + 256 = 520 = 0x44020000.
     *   halve=2: tiles [0,4) 4, [4,8) 4, [8,12) 256 + 1 + 1 + 256 = 512 in
     *            bf16 (257 -> 256, 257 -> 256, 512 exact), [12,13) 1:
     *            4 + 4 + 512 + 1 = 521 = 0x44024000. */
    {
        const uint64_t o = F1, h = 0x43800000; /* 256 */
        const uint64_t x[13] = {o, o, o, o, o, o, o, o, h, o, o, h, o};
        p = pt("tile(4, seq@bf16, seq, halve=1)");
        sum("B halve=1 n=13", &p, "fp32", x, 13, 0x44020000);
        p = pt("tile(4, seq@bf16, seq, halve=2)");
        sum("B halve=2 n=13", &p, "fp32", x, 13, 0x44024000);
    }

    /* ---- C. tile lists: tile([2, 3], pairwise, seq) at n = 7 ----
     * tiles {t0, t1}, {t2, t3, t4}, {t5, t6} (the terms past 2 + 3 form one
     * more tile).  Terms 3, T, 3, 3, T, 2, -T.
     *   P0 = (3 + T) = T + 3 -> T + 4 (tie, even)
     *   P1 = pairwise(3, 3, T) = ((3 + 3) + T) = T + 6 (exact)
     *   P2 = (2 + -T) = -(T - 2) (exact, quantum 1 below T)
     * seq: P0 + P1 = 2^25 + 10, quantum 4: 10/4 = 2.5 ties to 2 (even):
     * 2^25 + 8; + P2 = T + 10 (exact): 0x4b800005.
     * (Tiles 2, 5 or 3, 2, 2 or 2, 2, 3 or 7 give other bits.) */
    {
        const uint64_t x[7] = {F3, FT, F3, F3, FT, F2, FMT};
        p = pt("tile([2, 3], pairwise, seq)");
        sum("C tile list", &p, "fp32", x, 7, T_(5));
        /* sizes past n: tile([2, 3, 9], ...) at n = 7 cuts the third tile at
         * 7 and has no further tile: the same three tiles */
        p = pt("tile([2,3,9], pairwise, seq)");
        sum("C tile list cut at n", &p, "fp32", x, 7, T_(5));
        /* from s0 = -T (seq combinator): ((-T + P0) + P1) + P2 =
         * 4 -> T + 10 (exact) -> 12: 0x41400000 */
        p = pt("tile([2, 3], pairwise, seq)");
        sum_c("C tile list from s0", &p, "fp32", x, 7, "fp32", FMT, 0x41400000);
    }

    /* ---- D. order ----
     * order([1, 0], seq) over 1, 0, T, 1, 1: blocks {t0, t1}, {t2, t3} are
     * swapped, the partial block {t4} kept: 0, 1, 1, T, 1.  seq: 1, 2, T + 2
     * (exact), T + 3 -> T + 4 (tie): 0x4b800002.  Plain seq: 1, 1, T + 1 ->
     * T, T, T: 0x4b800000. */
    {
        const uint64_t x[5] = {F1, FPZ, FT, F1, F1};
        p = pt("order([1, 0], seq)");
        sum("D order [1,0]", &p, "fp32", x, 5, T_(2));
        p = pt("seq");
        sum("D seq", &p, "fp32", x, 5, FT);
        /* docs/numerics.md §4.2: order([2, 0, 1], seq) over 1, 1, T: T, 1, 1:
         * T + 1 ties to T twice: T.  seq: 2 + T: 0x4b800001. */
        const uint64_t y[3] = {F1, F1, FT};
        p = pt("order([2, 0, 1], seq)");
        sum("D order [2,0,1]", &p, "fp32", y, 3, FT);
        p = pt("seq");
        sum("D seq 2", &p, "fp32", y, 3, T_(1));
        /* from s0 = 1 over T, 1: the seq runs on 1, T from s0: 1 + 1 = 2,
         * 2 + T exact: 0x4b800001 (round(T' + s0) would give T) */
        const uint64_t z[2] = {FT, F1};
        p = pt("order([1, 0], seq)");
        sum_c("D order from s0", &p, "fp32", z, 2, "fp32", F1, T_(1));
    }

    /* ---- E. expr ----
     * expr(((0 + 2) + (1 + 3))) over T, 1, 3, 1: (T + 3) -> T + 4;
     * (1 + 1) = 2; T + 6: 0x4b800003.  pairwise: (T + 1) -> T; (3 + 1) = 4;
     * T + 4: 0x4b800002. */
    {
        const uint64_t x[6] = {FT, F1, F3, F1, F1, F1};
        p = pt("expr(((0 + 2) + (1 + 3)))");
        sum("E expr", &p, "fp32", x, 4, T_(3));
        p = pt("pairwise");
        sum("E pairwise", &p, "fp32", x, 4, T_(2));
        /* tile(4, expr(...), seq) at n = 6: the second tile has t4, t5 only;
         * indices 2 and 3 are absent: ((t4 + absent) + (t5 + absent)) =
         * (t4 + t5) = 2; seq: (T + 6) + 2 = T + 8: 0x4b800004 */
        p = pt("tile(4, expr(((0 + 2) + (1 + 3))), seq)");
        sum("E tile expr n=6", &p, "fp32", x, 6, T_(4));
        /* one present term: the value of leaf(t0) as it is, not rounded
         * again: -0 stays -0 (an addition of +0 would give +0) */
        const uint64_t nz[1] = {FNZ};
        p = pt("expr(((0 + 2) + (1 + 3)))");
        sum("E expr one present -0", &p, "fp32", nz, 1, FNZ);
        /* all absent (n = 0): +0 */
        p = pt("expr(((0 + 2) + (1 + 3)))");
        sum("E expr n=0", &p, "fp32", nz, 0, FPZ);
        /* a leaf is leaf(t_i): under @bf16, 1 + 2^-8 (fp32 0x3f808000)
         * rounds to 1 (a tie, even) */
        const uint64_t e[1] = {0x3F808000};
        p = pt("expr((1 + 0))@bf16");
        sum("E expr leaf rounds", &p, "fp32", e, 1, F1);
        /* more terms than indices: malformed at that n */
        p = pt("expr(((0 + 2) + (1 + 3)))");
        sum_fails("E expr n > k", &p, "fp32", x, 5);
        /* from s0 = 1: round(expr + s0) = round(2 + 1) with terms 1, 1 */
        p = pt("expr((1 + 0))");
        sum_c("E expr from s0", &p, "fp32", x + 3, 2, "fp32", F1, F3);
    }

    /* ---- F. subtree settings ---- */
    {
        /* fma: the worked values above */
        p = pt("seq");
        dot("F seq fused", &p, "fp32", FMA_A, FMA_B, 2, FMA_FUSED);
        p = pt("seq[fma=false]");
        dot("F seq[fma=false]", &p, "fp32", FMA_A, FMA_B, 2, FMA_UNFUSED);
        p = pt("seq[fma=true]");
        p.fma = 0;
        dot("F point fma=false, seq[fma=true]", &p, "fp32", FMA_A, FMA_B, 2, FMA_FUSED);
        /* a descendant that sets its own wins: the slice is fused; the seq
         * combinator over one value is (+0 + 2^-24) */
        p = pt("split(1, seq[fma=true], seq)[fma=false]");
        dot("F inner fma wins", &p, "fp32", FMA_A, FMA_B, 2, FMA_FUSED);
        p = pt("split(1, seq, seq)[fma=false]");
        dot("F outer fma=false reaches the slice", &p, "fp32", FMA_A, FMA_B, 2, FMA_UNFUSED);

        /* product: (1 + 2^-8)^2 = 1 + 2^-7 + 2^-16 (a = b = 0x3f808000).
         * seq keeps it (exact in fp32): 0x3f810080; [product=bf16] rounds
         * the product to bf16 first, 1 + 2^-7: 0x3f810000 */
        const uint64_t q[1] = {0x3F808000};
        p = pt("seq");
        dot("F seq product exact", &p, "fp32", q, q, 1, 0x3F810080);
        p = pt("seq[product=bf16]");
        dot("F seq[product=bf16]", &p, "fp32", q, q, 1, 0x3F810000);
        p = pt("seq[product=exact]");
        p.product = "bf16";
        dot("F point product=bf16, seq[product=exact]", &p, "fp32", q, q, 1, 0x3F810080);

        /* rounding: 1 + 2^-30 (2^-30 = 0x30800000): rne 1, ru 1 + 2^-23 */
        const uint64_t r2[2] = {F1, 0x30800000};
        p = pt("seq[rounding=ru]");
        sum("F seq[rounding=ru]", &p, "fp32", r2, 2, 0x3F800001);
        p = pt("seq");
        sum("F seq rne", &p, "fp32", r2, 2, F1);

        /* acc: bf16 terms 1, 2^-8, 2^-8, 2^-8 (0x3f80, 0x3b80).
         * seq in bf16: 1 + 2^-8 ties to 1, three times: 1.
         * reverse(seq) in bf16: 2^-7, 3·2^-8, 1 + 3·2^-8 ties to 1 + 2^-6.
         * seq in fp32: 1 + 3·2^-8 exact, 0x3f818000.
         * X[acc=bf16] is X@bf16; the result enters the fp32 point as a value. */
        const uint64_t b[4] = {0x3F80, 0x3B80, 0x3B80, 0x3B80};
        p = pt("seq[acc=bf16]");
        sum("F seq[acc=bf16]", &p, "bf16", b, 4, F1);
        p = pt("seq@bf16");
        sum("F seq@bf16", &p, "bf16", b, 4, F1);
        p = pt("reverse(seq)[acc=bf16]");
        sum("F reverse(seq)[acc=bf16]", &p, "bf16", b, 4, 0x3F820000);
        p = pt("reverse(seq)@bf16");
        sum("F reverse(seq)@bf16", &p, "bf16", b, 4, 0x3F820000);
        p = pt("seq");
        sum("F seq fp32", &p, "bf16", b, 4, 0x3F818000);
        /* @ and other settings together: reverse in bf16 with rz:
         * 1 + 3·2^-8 truncates to 1 + 2^-7 */
        p = pt("reverse(seq)@bf16[rounding=rz]");
        sum("F reverse(seq)@bf16[rounding=rz]", &p, "bf16", b, 4, 0x3F810000);
        p = pt("reverse(seq)[ rounding = rz , acc = bf16 ]");
        sum("F reverse(seq)[rounding=rz, acc=bf16]", &p, "bf16", b, 4, 0x3F810000);
        /* an inner @ wins over an outer [acc=]: seq@fp32 inside bf16 */
        p = pt("split(1, seq@fp32, seq)[acc=bf16]");
        p.acc = "bf16";
        p.out = "fp32";
        /* slice in fp32: 1 + 3·2^-8 exact; the combinator seq in bf16:
         * +0 + (1 + 3·2^-8) ties to 1 + 2^-6: 0x3f820000 */
        sum("F inner @ wins", &p, "bf16", b, 4, 0x3F820000);

        /* the atom follows the subtree's rounding when it has no round of
         * its own: atom = {} (exact), terms 1 and 3·2^-25 (0x33c00000):
         * 1 + 0.75 ulp rounds up under rne (0x3f800001), down under rz */
        const uint64_t at[2] = {F1, 0x33C00000};
        p = pt("chain(2)");
        p.has_atom = 1;
        sum("F chain rne", &p, "fp32", at, 2, 0x3F800001);
        p = pt("chain(2)[rounding=rz]");
        p.has_atom = 1;
        sum("F chain[rounding=rz]", &p, "fp32", at, 2, F1);
        p = pt("chain(2)[rounding=rz]");
        p.has_atom = 1;
        p.atom_round = "rne";
        sum("F chain[rounding=rz], atom round rne", &p, "fp32", at, 2, 0x3F800001);

        /* from s0, [...] passes s0 to its child: seq[rounding=ru] from 1
         * over 2^-30: 1 + 2^-30 rounds up */
        p = pt("seq[rounding=ru]");
        sum_c("F [] passes s0", &p, "fp32", r2 + 1, 1, "fp32", F1, 0x3F800001);
        /* a tree that does not start from s0 adds it in its own settings:
         * pairwise[rounding=ru] from 1 over 2^-30: round_ru(2^-30 + 1) */
        p = pt("pairwise[rounding=ru]");
        sum_c("F pairwise[] + s0", &p, "fp32", r2 + 1, 1, "fp32", F1, 0x3F800001);
    }

    /* ---- G. malformed trees ---- */
    {
        const uint64_t x[2] = {F1, F1};
        const char *bad[] = {
            /* settings */
            "seq@bf16[acc=fp32]", "seq[fma=true, fma=false]", "seq[speed=fast]", "seq[]",
            "seq[fma=yes]", "seq[rounding=up]", "seq[product=fp99]", "seq[acc=fp12]",
            "seq[acc=bf16]@fp32", "seq[fma=false", "seq[fma]", "seq[fma=false,]",
            "seq[rounding=rz][fma=false]",
            /* body and carry */
            "body(0, seq, seq)", "body(4, seq)", "body(4, seq, seq, carry, seq)", "body(4, seq, seq,)",
            "body(4, seq, carry)", "body(4, carry, seq)", "body(4, seq, seq, carry@bf16)",
            "tile(2, carry, seq)", "tile(2, seq, carry@bf16)", "stride(2, seq, carry)",
            "split(2, seq, seq, carry)", "reverse(carry)", "carry",
            "order([1, 0], carry)", "body(4, seq, seq, carry)@bf16@fp32",
            /* tiles */
            "tile([], seq, seq)", "tile([2, 0], seq, seq)", "tile([0], seq, seq)", "tile(0, seq, seq, halve=8)",
            "tile(320, seq, seq, halve=0)", "tile([2, 3], seq, seq, halve=2)", "tile(2, seq, seq, block=2)",
            "tile([2, 3, seq, seq)", "tile([2 3], seq, seq)",
            /* order */
            "order([1, 1], seq)", "order([0, 2], seq)", "order([], seq)", "order([1, 0])", "order(1, seq)",
            "order([1, 0], seq, seq)",
            /* expr */
            "expr((0 + 0))", "expr((0 + 2))", "expr(1)", "expr((0 + 1)", "expr(0 + 1)", "expr((0, 1))",
            "expr()", "expr((0 + (1)))", "expr(((0 + 1) + (3 + 4)))",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char what[128];
            snprintf(what, sizeof what, "G tree \"%s\"", bad[i]);
            p = pt(bad[i]);
            sum_fails(what, &p, "fp32", x, 2);
        }
        /* and accepted spellings: expr(0) (k = 1), order([0], T), a setting
         * on a combinator, carry followed by spaces */
        const char *good[] = {"expr(0)", "order([0], seq)", "tile(1, seq, seq[fma=false])",
                              "body(1, seq, seq, carry )", "tile([1], seq, seq)", "seq@fp32[fma=false]"};
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            char what[128];
            snprintf(what, sizeof what, "G tree \"%s\"", good[i]);
            p = pt(good[i]);
            /* n = 1, term 1: each of these is 1 */
            sum(what, &p, "fp32", x, 1, F1);
        }
    }

    /* ---- H. selectors ---- */
    {
        const int64_t g23[2] = {2, 3};
        /* the micro-kernel example: R = 6, 6 % 4 = 2, rows 4 and 5 */
        sel_is("r >= R - R % 4", 3, 6, NULL, 0);
        sel_is("r >= R - R % 4", 4, 6, NULL, 1);
        sel_is("1 + 2 * 3", 0, 1, NULL, 7);
        sel_is("(1 + 2) * 3", 0, 1, NULL, 9);
        sel_is("7 / 2 + 7 % 2 * 10", 0, 1, NULL, 13);
        sel_is("10 - 4 - 3", 0, 1, NULL, 3);       /* left associative */
        sel_is("24 / 4 / 2", 0, 1, NULL, 3);
        sel_is("!0 + !5", 0, 1, NULL, 1);
        sel_is("!(r == 2)", 2, 4, NULL, 0);
        sel_is("1 < 2 == 1", 0, 1, NULL, 1);       /* < binds tighter than == */
        sel_is("2 == 2 && 3 != 3", 0, 1, NULL, 0);
        sel_is("0 || 5", 0, 1, NULL, 1);
        sel_is("1 || 0 && 0", 0, 1, NULL, 1);      /* && binds tighter than || */
        sel_is("r <= 1 && r > 0 || R >= 100", 1, 4, NULL, 1);
        sel_is("r<=1&&r>0", 2, 4, NULL, 0);
        sel_is(" ( ( r ) ) ", 3, 4, NULL, 3);
        /* grid [2, 3]: row 5 is i = 1, j = 2 */
        sel_is("i * 10 + j", 5, 6, g23, 12);
        sel_is("j == N - 1 && i == M - 1", 5, 6, g23, 1);
        sel_is("i", 2, 6, g23, 0);
        sel_fails("r / 0", 0, 1, NULL);
        sel_fails("r % (R - R)", 1, 2, NULL);
        sel_fails("r +", 0, 1, NULL);
        sel_fails("(r", 0, 1, NULL);
        sel_fails("r)", 0, 1, NULL);
        sel_fails("x == 1", 0, 1, NULL);
        sel_fails("i == 0", 0, 1, NULL);           /* i needs a grid */
        sel_fails("N", 0, 1, NULL);
        sel_fails("r = 1", 0, 1, NULL);
        sel_fails("r & 1", 0, 1, NULL);
        sel_fails("", 0, 1, NULL);
        sel_fails("rr", 0, 1, NULL);
        sel_fails("99999999999999999999", 0, 1, NULL);
    }

    /* ---- I. row classes ---- */
    {
        /* the remainder rows of a 4-row micro-kernel, R = 6: rows 4 and 5
         * run without fma.  Every row holds the fma terms. */
        uint64_t a[12], bb[12];
        for (int r = 0; r < 6; r++) {
            a[2 * r] = FMA_A[0];
            a[2 * r + 1] = FMA_A[1];
            bb[2 * r] = FMA_B[0];
            bb[2 * r + 1] = FMA_B[1];
        }
        orc_rowclass rem;
        memset(&rem, 0, sizeof rem);
        rem.select = "r >= R - R % 4";
        rem.set = ORC_K_FMA | ORC_K_TREE;
        rem.keys.fma = 0;
        rem.keys.tree = "seq";
        p = pt("seq");
        const uint64_t w1[6] = {FMA_FUSED, FMA_FUSED, FMA_FUSED, FMA_FUSED, FMA_UNFUSED, FMA_UNFUSED};
        rows_are("I remainder rows", &p, &rem, 1, NULL, 6, "fp32", a, bb, 2, w1);

        /* docs/numerics.md §4.3: rows 1, 1, T; odd rows reverse(seq):
         * even rows 2 + T (0x4b800001), odd rows T + 1 twice -> T */
        uint64_t x[12];
        for (int r = 0; r < 4; r++) {
            x[3 * r] = F1;
            x[3 * r + 1] = F1;
            x[3 * r + 2] = FT;
        }
        orc_rowclass odd;
        memset(&odd, 0, sizeof odd);
        odd.select = "r % 2 == 1";
        odd.set = ORC_K_TREE;
        odd.keys.tree = "reverse(seq)";
        const uint64_t w2[4] = {T_(1), FT, T_(1), FT};
        rows_are("I odd rows", &p, &odd, 1, NULL, 4, "fp32", x, NULL, 3, w2);

        /* grid [2, 3], first match wins: class 0 (i == 1) reverse(seq): T;
         * class 1 (j == 0) reverse(seq) with ru: T + 1 -> T + 2, T + 3 ->
         * T + 4; the rest seq: T + 2.
         * rows (i, j): 0 (0,0) class 1; 1, 2 none; 3 (1,0) both match, class
         * 0 wins; 4, 5 class 0. */
        const int64_t g23[2] = {2, 3};
        uint64_t x6[18];
        for (int r = 0; r < 6; r++) {
            x6[3 * r] = F1;
            x6[3 * r + 1] = F1;
            x6[3 * r + 2] = FT;
        }
        orc_rowclass two[2];
        memset(two, 0, sizeof two);
        two[0].select = "i == 1";
        two[0].set = ORC_K_TREE;
        two[0].keys.tree = "reverse(seq)";
        two[1].select = "j == 0";
        two[1].set = ORC_K_TREE | ORC_K_ROUNDING;
        two[1].keys.tree = "reverse(seq)";
        two[1].keys.rounding = "ru";
        const uint64_t w3[6] = {T_(2), T_(1), T_(1), FT, FT, FT};
        rows_are("I grid first match", &p, two, 2, g23, 6, "fp32", x6, NULL, 3, w3);
        /* no classes: every row is the point */
        const uint64_t w4[6] = {T_(1), T_(1), T_(1), T_(1), T_(1), T_(1)};
        rows_are("I no classes", &p, NULL, 0, g23, 6, "fp32", x6, NULL, 3, w4);

        /* malformed */
        const int64_t g22[2] = {2, 2};
        rows_fail("I grid M·N != R", &p, two, 2, g22, 6, x6, 3);
        orc_rowclass bad = odd;
        bad.set |= ORC_K_GRID;
        rows_fail("I class holds grid", &p, &bad, 1, NULL, 4, x, 3);
        bad = odd;
        bad.set |= ORC_K_ROWS;
        rows_fail("I class holds rows", &p, &bad, 1, NULL, 4, x, 3);
        bad = odd;
        bad.select = "r / (r - 1) == 0"; /* row 1 divides by zero */
        rows_fail("I selector divides by zero", &p, &bad, 1, NULL, 4, x, 3);
        /* a selector that does not parse, in a class no row reaches */
        orc_rowclass pair[2] = {odd, odd};
        pair[0].select = "1";
        pair[1].select = "r ==";
        rows_fail("I selector does not parse", &p, pair, 2, NULL, 4, x, 3);
        /* a class with a bad tree, never selected */
        pair[1].select = "0";
        pair[1].keys.tree = "body(0, seq, seq)";
        rows_fail("I class tree malformed", &p, pair, 2, NULL, 4, x, 3);
        /* a class that changes out: acc = bf16 moves out (default acc) too */
        bad = odd;
        bad.set = ORC_K_ACC;
        bad.keys.acc = "bf16";
        rows_fail("I class changes out", &p, &bad, 1, NULL, 4, x, 3);
        /* with the point's out set, a class may change acc.  Odd rows in
         * bf16: 1 + 1 = 2, then T + 2 = 2^24·(1 + 2^-23) lies below half a
         * bf16 ulp of T (2^17): T.  Even rows in fp32: T + 2. */
        orc_point po = pt("seq");
        po.out = "fp32";
        const uint64_t w5[4] = {T_(1), FT, T_(1), FT};
        rows_are("I class acc with out fixed", &po, &bad, 1, NULL, 4, "fp32", x, NULL, 3, w5);
    }

    /* ---- J. lanes(W, [stages], C) (docs/numerics.md §4.2) ---- */
    {
        /* The first worked value of the contract: lanes(8, [peel(4, 8),
         * loop(8)], seq) over twelve terms, t0 = 1, t1 = T, t4 = 1, the rest
         * +0.  12 mod 8 = 4 >= 4: the peel puts t0 ... t3 in lanes 0-3;
         * loop(8) puts t4 ... t11 in lanes 0-7.  Lane 0 = 1 + 1 = 2, lane 1
         * = T, the others +0; seq over the lanes: 2 + T exact: 0x4b800001.
         * stride(8, seq, seq) puts t4 in lane 4: lane 0 = 1, and 1 + T ties
         * to T, twice: 0x4b800000. */
        uint64_t x[16] = {0};
        x[0] = F1;
        x[1] = FT;
        x[4] = F1;
        p = pt("lanes(8, [peel(4, 8), loop(8)], seq)");
        sum("J lanes peel fires (n = 12)", &p, "fp32", x, 12, T_(1));
        p = pt("stride(8, seq, seq)");
        sum("J stride(8) (n = 12)", &p, "fp32", x, 12, FT);
        /* The same tree at n = 16 (t12 ... t15 = +0): 16 mod 8 = 0 < 4, no
         * peel; loop(8) runs twice, lane j holds {t_j, t_{j+8}}: lane 0 =
         * 1, lane 1 = T, lane 4 = 1; seq: 1 + T -> T, T + 1 -> T: 0x4b800000.
         * (Had the peel fired, loop(8) would put t4 in lane 0 again, 2 + T
         * = 0x4b800001.)  At n = 13 (13 mod 8 = 5 >= 4) it fires: lane 0 =
         * 2, one loop(8) block t4 ... t11, the left-over t12 (+0) goes to
         * lane 0: 0x4b800001 again. */
        p = pt("lanes(8, [peel(4, 8), loop(8)], seq)");
        sum("J lanes peel does not fire (n = 16)", &p, "fp32", x, 16, FT);
        sum("J lanes peel fires (n = 13)", &p, "fp32", x, 13, T_(1));
        /* peel(4, 8) at n = 11: 11 mod 8 = 3 < 4, no peel: loop(8) takes
         * t0 ... t7 (lane 0 = 1, lane 1 = T, lane 4 = 1), the left-over
         * t8 ... t10 (+0) go to lanes 0-2: seq gives T (as stride(8)). */
        sum("J lanes peel does not fire (n = 11)", &p, "fp32", x, 11, FT);
    }
    {
        /* The second worked value: lanes(2, [loop(2), fold(1, [(0 + 1)])],
         * seq) over T, 1, 0, 1, 1.  loop(2) twice: lane 0 = T + 0 = T, lane
         * 1 = 1 + 1 = 2; fold: T + 2, exact; w = 1, the left-over t4 goes
         * to lane 0: T + 3, a tie, to T + 4: 0x4b800002.
         * stride(2, seq, seq): lane 0 = T + 0 + 1 -> T, lane 1 = 2, the sum
         * T + 2: 0x4b800001. */
        const uint64_t x[5] = {FT, F1, FPZ, F1, F1};
        p = pt("lanes(2, [loop(2), fold(1, [(0 + 1)])], seq)");
        sum("J lanes fold, left-over", &p, "fp32", x, 5, T_(2));
        p = pt("stride(2, seq, seq)");
        sum("J stride(2)", &p, "fp32", x, 5, T_(1));
    }
    {
        /* The sixth edition's worked value: lanes(2, [loop(2, 4), rest(0)],
         * seq) over +0, T, +0, +0, 1, 1.  loop(2, 4) runs once (6 >= 4,
         * then 2 < 4): lane 0 = +0 + +0, lane 1 = T + 0 = T; rest(0) adds
         * t4, t5 to lane 0: 1, then 2, exact; seq over the lanes: 2 + T,
         * exact: 0x4b800001.  stride(2, seq, seq) puts t5 in lane 1: lane 0
         * = 1, lane 1 = T + 1, a tie, T; 1 + T ties to T: 0x4b800000.  And
         * loop(2, 4) alone (the terms left in blocks of two) is stride. */
        const uint64_t x[6] = {FPZ, FT, FPZ, FPZ, F1, F1};
        p = pt("lanes(2, [loop(2, 4), rest(0)], seq)");
        sum("J lanes loop(2, 4), rest(0)", &p, "fp32", x, 6, T_(1));
        p = pt("stride(2, seq, seq)");
        sum("J stride(2), no rest", &p, "fp32", x, 6, FT);
        p = pt("lanes(2, [loop(2, 4)], seq)");
        sum("J lanes loop(2, 4), no rest", &p, "fp32", x, 6, FT);
    }
    {
        /* The worked bracketing lanes(4, [loop(4), fold(2, [(1 + 0)]),
         * loop(2)], pairwise) at n = 7: after loop(4) the lanes are t0 ...
         * t3; registers 0 = (lanes 0, 1), 1 = (lanes 2, 3); the fold makes
         * lane 0 = (t2 + t0), lane 1 = (t3 + t1); loop(2) adds t4, t5; the
         * left-over t6 goes to lane 0; pairwise over the two lanes.
         * Terms T, 1, 2, 0, 1, 1, 1:
         *   fold: lane 0 = (2 + T) = T + 2 (exact), lane 1 = (0 + 1) = 1
         *   loop(2): lane 0 = T + 3 -> T + 4 (tie, even), lane 1 = 2
         *   t6: lane 0 = T + 5 -> T + 4 (tie; T + 4 is 0x4b800002, even)
         *   pairwise: (T + 4) + 2 = T + 6: 0x4b800003.
         * Folding adjacent lanes instead ((t0 + t1), (t2 + t3)) gives
         * T, 2 -> T, 3 -> T + 4 at the end (0x4b800002); the left-over in
         * lane 1 instead gives T + 4 + 3 -> T + 8 (0x4b800004). */
        const uint64_t x[7] = {FT, F1, F2, FPZ, F1, F1, F1};
        p = pt("lanes(4, [loop(4), fold(2, [(1 + 0)]), loop(2)], pairwise)");
        sum("J fold(2, [(1 + 0)]) n = 7", &p, "fp32", x, 7, T_(3));
        /* (0 + 1) is the same fold: round(x + y) = round(y + x) */
        p = pt("lanes(4, [loop(4), fold(2, [(0 + 1)]), loop(2)], pairwise)");
        sum("J fold(2, [(0 + 1)]) n = 7", &p, "fp32", x, 7, T_(3));
        /* With three registers the bracketing shows: lanes(3, [loop(3),
         * fold(1, [((2 + 0) + 1)])], seq) over T, -T, 1, 1: ((1 + T) + -T)
         * = (T + -T) = +0 (1 + T ties to T); the left-over t3 goes to the
         * one live lane: 0 + 1 = 1: 0x3f800000.  ((0 + 1) + 2) would give
         * (0 + 1) = 1, then 2: 0x40000000. */
        const uint64_t y[4] = {FT, FMT, F1, F1};
        p = pt("lanes(3, [loop(3), fold(1, [((2 + 0) + 1)])], seq)");
        sum("J fold ((2 + 0) + 1)", &p, "fp32", y, 4, F1);
        p = pt("lanes(3, [loop(3), fold(1, [((0 + 1) + 2)])], seq)");
        sum("J fold ((0 + 1) + 2)", &p, "fp32", y, 4, F2);
        /* A fold that only permutes: fold(1, [1, 0]) swaps lanes 0 and 1
         * (a lone index is that lane's value).  lanes(2, [loop(2), fold(1,
         * [1, 0])], seq) over T, 1, 1, 1, 1: lanes T + 1 -> T and 2,
         * swapped: 2, T; the left-over t4 goes to lane 0: 3; seq: 3 + T ->
         * T + 4 (tie, even): 0x4b800002.  Without the swap lane 0 would be
         * T + 1 -> T and T + 2: 0x4b800001. */
        const uint64_t z[5] = {FT, F1, F1, F1, F1};
        p = pt("lanes(2, [loop(2), fold(1, [1, 0])], seq)");
        sum("J fold permutes", &p, "fp32", z, 5, T_(2));
    }
    {
        /* The worked bracketing lanes(16, [loop(16), fold(8, [(0 + 1)]),
         * loop(8)], seq) at n = 40: L_j = (t_j + t_{j+16}); lane j =
         * (L_j + L_{j+8}); loop(8) adds t_{32+j}.  Terms: t0 = T, t8 = t16 =
         * t24 = t32 = 1, the rest +0.  L_0 = T + 1 -> T, L_8 = 1 + 1 = 2;
         * lane 0 = T + 2; + t32 = T + 3 -> T + 4: 0x4b800002.  stride(8,
         * seq, seq) adds t0, t8, ..., t32 in one lane: T + 1 -> T four
         * times: 0x4b800000. */
        uint64_t x[40] = {0};
        x[0] = FT;
        x[8] = x[16] = x[24] = x[32] = F1;
        p = pt("lanes(16, [loop(16), fold(8, [(0 + 1)]), loop(8)], seq)");
        sum("J loop(16) fold loop(8) n = 40", &p, "fp32", x, 40, T_(2));
        p = pt("stride(8, seq, seq)");
        sum("J stride(8) n = 40", &p, "fp32", x, 40, FT);
    }
    {
        /* From a start value (§4.1: as stride).  lanes(2, [loop(2)], seq)
         * over 1, 1 from s0 = T: lanes 1, 1; the seq combinator starts from
         * s0: (T + 1) -> T, (T + 1) -> T: 0x4b800000.  (round(C + s0) would
         * be 2 + T = 0x4b800001.)  seq@fp32 is seq too. */
        const uint64_t x[2] = {F1, F1};
        p = pt("lanes(2, [loop(2)], seq)");
        sum_c("J lanes seq C from s0", &p, "fp32", x, 2, "fp32", FT, FT);
        p = pt("lanes(2, [loop(2)], seq@fp32)");
        sum_c("J lanes seq@fp32 C from s0", &p, "fp32", x, 2, "fp32", FT, FT);
        /* a C that is not seq: round(C + s0) = (1 + 1) + T = T + 2 */
        p = pt("lanes(2, [loop(2)], pairwise)");
        sum_c("J lanes pairwise C from s0", &p, "fp32", x, 2, "fp32", FT, T_(1));
        /* n = 0: the lanes are +0 and the seq C still adds them to s0:
         * s0 = 1 + 2^-30 (fp64 0x3ff0000000400000, exact, not an fp32
         * number); round(s0 + +0) = 1 under rne (0x3f800000), 1 + 2^-23
         * under ru (0x3f800001).  (A plain seq at n = 0 gives s0 itself and
         * only the out conversion rounds it: 1 under rne too, and
         * 0x3f800001 under ru.) */
        p = pt("lanes(2, [loop(2)], seq)");
        sum_c("J lanes n = 0 from s0", &p, "fp32", x, 0, "fp64", 0x3FF0000000400000ULL, F1);
        p.rounding = "ru";
        sum_c("J lanes n = 0 from s0, ru", &p, "fp32", x, 0, "fp64", 0x3FF0000000400000ULL, 0x3F800001);
    }
    {
        /* FMA: steps of loop, peel and the left-over are seq's steps.
         * Dot terms t0 = -(1 + 2^-11)·1, t1 = 0·0, t2 = (1 + 2^-12)^2,
         * t3 = 0·0 under lanes(2, [loop(2), fold(1, [(0 + 1)])], seq):
         * lane 0 = step(step(+0, t0), t2): fused, the exact 1 + 2^-11 +
         * 2^-24 - (1 + 2^-11) = 2^-24; lane 1 = +0; fold 2^-24 + 0; seq:
         * 0x33800000.  fma = false: t2 rounds to 1 + 2^-11 (a tie, even)
         * first and lane 0 is +0: 0x00000000. */
        const uint64_t a[4] = {FMA_A[0], FPZ, FMA_A[1], FPZ}, b[4] = {FMA_B[0], FPZ, FMA_B[1], FPZ};
        p = pt("lanes(2, [loop(2), fold(1, [(0 + 1)])], seq)");
        dot("J lanes fused loop", &p, "fp32", a, b, 4, FMA_FUSED);
        p.fma = 0;
        dot("J lanes loop fma = false", &p, "fp32", a, b, 4, FMA_UNFUSED);
        p = pt("lanes(2, [loop(2), fold(1, [(0 + 1)])], seq)[fma=false]");
        dot("J lanes[fma=false]", &p, "fp32", a, b, 4, FMA_UNFUSED);
        /* the left-over by step, fused too: lanes(2, [peel(1, 2), fold(1,
         * [(0 + 1)])], seq) over t0, t1 of the §4.2 example: 2 mod 2 = 0,
         * no peel; the fold gives +0 in the one live lane; t0 and t1 go to
         * it by step: 2^-24 (fma = false: +0) */
        p = pt("lanes(2, [peel(1, 2), fold(1, [(0 + 1)])], seq)");
        dot("J lanes fused left-over", &p, "fp32", FMA_A, FMA_B, 2, FMA_FUSED);
        p.fma = 0;
        dot("J lanes left-over fma = false", &p, "fp32", FMA_A, FMA_B, 2, FMA_UNFUSED);
        /* lanes as a combinator sees values, never fused: tile(1, seq, C)
         * gives the partials round(t0) = -(1 + 2^-11), round(t1) = 1 +
         * 2^-11; lanes(1, [loop(1)], seq) over them: +0. */
        p = pt("tile(1, seq, lanes(1, [loop(1)], seq))");
        dot("J lanes as a combinator", &p, "fp32", FMA_A, FMA_B, 2, FMA_UNFUSED);
        p = pt("lanes(1, [loop(1)], seq)");
        dot("J lanes(1) fused", &p, "fp32", FMA_A, FMA_B, 2, FMA_FUSED);
    }
    {
        /* Lanes as a combinator on values: tile(1, seq, lanes(2, [loop(2),
         * fold(1, [(1 + 0)])], seq)) over T, 1, 0, 1: lane 0 = T + 0 = T,
         * lane 1 = 1 + 1 = 2, the fold T + 2: 0x4b800001 (seq over the
         * values: T + 1 -> T twice: 0x4b800000). */
        const uint64_t x[4] = {FT, F1, FPZ, F1};
        p = pt("tile(1, seq, lanes(2, [loop(2), fold(1, [(1 + 0)])], seq))");
        sum("J lanes combinator on values", &p, "fp32", x, 4, T_(1));
        p = pt("tile(1, seq, seq)");
        sum("J seq combinator on values", &p, "fp32", x, 4, FT);
    }
    {
        /* Settings on a lanes node hold for its steps, folds and C.  bf16
         * terms 1, 2^-8, 2^-8, 2^-8 (0x3f80, 0x3b80) under lanes(2,
         * [loop(2)], seq):
         *   @bf16: lane 0 = 1 + 2^-8, a tie, stays 1; lane 1 = 2^-7; seq in
         *   bf16: 1 + 2^-7, exact: 0x3f810000 (out fp32).
         *   fp32: lane 0 = 1 + 2^-8; 1 + 3·2^-8: 0x3f818000.
         *   [acc=bf16, rounding=ru]: lane 0 = 1 + 2^-8 -> 1 + 2^-7; + 2^-7 =
         *   1 + 2^-6, exact: 0x3f820000.
         *   [rounding=rz]@... with fold: lanes(2, [loop(2), fold(1, [(0 +
         *   1)])], seq)@bf16[rounding=rz]: lane 0 = 1, lane 1 = 2^-7, the
         *   fold 1 + 2^-7, exact: 0x3f810000. */
        const uint64_t x[4] = {0x3F80, 0x3B80, 0x3B80, 0x3B80};
        p = pt("lanes(2, [loop(2)], seq)@bf16");
        sum("J lanes@bf16", &p, "bf16", x, 4, 0x3F810000);
        p = pt("lanes(2, [loop(2)], seq)");
        sum("J lanes fp32", &p, "bf16", x, 4, 0x3F818000);
        p = pt("lanes(2, [loop(2)], seq)[acc=bf16, rounding=ru]");
        sum("J lanes[acc=bf16, rounding=ru]", &p, "bf16", x, 4, 0x3F820000);
        p = pt("lanes(2, [loop(2), fold(1, [(0 + 1)])], seq)@bf16[rounding=rz]");
        sum("J lanes fold @bf16[rounding=rz]", &p, "bf16", x, 4, 0x3F810000);
    }
    {
        /* malformed lanes */
        const uint64_t x[2] = {F1, F1};
        const char *bad[] = {
            "lanes(0, [loop(1)], seq)", "lanes(4, [loop(0)], seq)", "lanes(4, [peel(0, 4)], seq)",
            "lanes(4, [peel(2, 0)], seq)", "lanes(4, [fold(0, [0])], seq)",
            /* wider than the live lanes */
            "lanes(4, [loop(8)], seq)", "lanes(4, [peel(5, 8)], seq)",
            "lanes(8, [fold(4, [(0 + 1)]), loop(8)], seq)", "lanes(8, [fold(4, [(0 + 1)]), peel(5, 8)], seq)",
            "lanes(8, [loop(8), fold(2, [(0 + 1), (2 + 3)]), loop(8)], seq)",
            /* V does not divide the live width */
            "lanes(6, [fold(4, [0])], seq)", "lanes(8, [fold(2, [(0 + 1), (2 + 3)]), fold(3, [0])], seq)",
            /* brackets that do not use each register exactly once */
            "lanes(8, [fold(4, [0])], seq)", "lanes(8, [fold(4, [(0 + 0)])], seq)",
            "lanes(8, [fold(4, [(0 + 2)])], seq)", "lanes(8, [fold(4, [0, 1, 1])], seq)",
            "lanes(8, [fold(2, [(0 + 1), (2 + 3)]), fold(4, [(0 + 1)])], seq)",
            /* syntax */
            "lanes(4, [], seq)", "lanes(4, [loop(4)])", "lanes(4, loop(4), seq)", "lanes(4, [loop(4), carry], seq)",
            "lanes(4, [step(4)], seq)", "lanes(4, [loop(4)], seq, seq)", "lanes(4, [peel(4)], seq)",
            "lanes(4, [fold(2, [(0 + 1)], seq)", "lanes(4, [fold(2, [])], seq)", "lanes(4, [loop(4)], carry)",
            "lanes(4, [fold(2, (0 + 1))], seq)", "lanes(4, [loop(4)], seq)@bf16@fp32", "lanes(4, [loop(4),], seq)",
            "lanes(4, [loop 4], seq)", "lanes(4, [fold(2, [(0, 1)])], seq)", "lanes(4, [loop(4)] seq)",
            "lanes", "lanes()", "lanes(4, [loop(4)], seq", "lanes(4, [loop(-4)], seq)",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char what[160];
            snprintf(what, sizeof what, "J tree \"%s\"", bad[i]);
            p = pt(bad[i]);
            sum_fails(what, &p, "fp32", x, 2);
        }
        /* accepted: n = 1, term 1, each is 1 (the term is left over and
         * goes to lane 0, or a loop(1)/peel(1, 1) puts it there) */
        const char *good[] = {
            "lanes(1, [loop(1)], seq)", " lanes ( 4 , [ peel ( 1 , 2 ) , fold ( 2 , [ ( 1 + 0 ) ] ) , loop ( 2 ) ] , seq ) ",
            "lanes(4,[peel(1,1),fold(1,[((3+1)+(0+2))])],halving)", "lanes(2, [fold(1, [1, 0])], pairwise)",
            "lanes(4, [loop(4)], lanes(2, [loop(2)], seq))[fma=false]", "lanes(8, [peel(4, 8), loop(8)], seq@bf16)",
            /* the real kernels of §4.2 */
            "lanes(64, [loop(64), fold(8, [(0 + 1), (2 + 3), (4 + 5), (6 + 7)]), loop(32), "
            "fold(8, [(((0 + 1) + 2) + 3)]), fold(4, [(0 + 1)])], pairwise)",
            "lanes(80, [loop(80), fold(8, [(0 + 5), (1 + 6), (2 + 7), (3 + 8), (4 + 9)]), loop(40), "
            "fold(8, [((0 + 2) + 4), (1 + 3)]), loop(16), fold(8, [(0 + 1)]), loop(8)], seq)",
        };
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
            char what[300];
            snprintf(what, sizeof what, "J tree \"%s\"", good[i]);
            p = pt(good[i]);
            sum(what, &p, "fp32", x, 1, F1);
        }
    }

    {
        /* The seventh edition's worked value: split(2, seq[store=fp32],
         * seq) with acc fp64, out fp32, over 1, 1 + 2^-16 times 2^-24
         * (0x33800080), -2^-25 (0xb3000000), +0.  In fp64 the first part
         * is P0 = 1 + 2^-24 + 2^-40 exactly, the second P1 = -2^-25.
         * Stored: P0 is above the midpoint 1 + 2^-24, so 1 + 2^-23; P1 is
         * exact; the combine in fp64, 1 + 2^-23 - 2^-25 = 1 + 3 * 2^-25,
         * rounds at the output to 1 + 2^-23: 0x3f800001.  Without store
         * the combine adds P0 and P1 exactly, 1 + 2^-25 + 2^-40, which
         * rounds to 1: 0x3f800000.  store=fp64 changes nothing there; in
         * the part's own mode rz the stored P0 is 1 (0x3f800000 again). */
        const uint64_t x[4] = {F1, 0x33800080ULL, 0xb3000000ULL, FPZ};
        p = pt("split(2, seq[store=fp32], seq)");
        p.acc = "fp64";
        p.out = "fp32";
        sum("K split, parts stored in fp32", &p, "fp32", x, 4, 0x3f800001ULL);
        p.tree = "split(2, seq, seq)";
        sum("K split, parts not stored", &p, "fp32", x, 4, F1);
        p.tree = "split(2, seq[store=fp64], seq)";
        sum("K split, parts stored in fp64", &p, "fp32", x, 4, F1);
        p.tree = "split(2, seq[rounding=rz, store=fp32], seq)";
        sum("K split, stored toward zero", &p, "fp32", x, 4, F1);
        /* the whole tree stored: the output conversion then sees 1 + 2^-23 */
        p.tree = "seq[store=fp32]";
        sum("K seq stored", &p, "fp32", x, 4, F1);
        /* malformed: store twice, exact, an unknown format */
        const char *bad[] = {"seq[store=fp32, store=bf16]", "seq[store=exact]", "seq[store=fp33]"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char what[160];
            snprintf(what, sizeof what, "K tree \"%s\"", bad[i]);
            p = pt(bad[i]);
            sum_fails(what, &p, "fp32", x, 4);
        }
    }

    printf("oracle third-edition self-test: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
