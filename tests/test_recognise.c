/* test_recognise.c: reveal's order probes and its recogniser
 * (parity/reveal/order.c, recognise.c) on simulated kernels.
 *
 * A kernel here is a numerics point evaluated in process
 * (rv_kernel_point): its bracketing is known.  Reveal must recover it and
 * name it in the tree language; the test does not take reveal's words for
 * it: the named tree and the true one are both expanded at n by numerics/
 * (nx_program_expansion, the module `parity tree show` prints) and their
 * bracketings must be the same text.  A tree the recogniser names wrongly,
 * or an order probe that misplaces one pair, fails. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_point.h"
#include "nx_program.h"
#include "reveal.h"

/* The bracketing of tree at n, as `parity tree show TREE --n N` prints it. */
static char *expansion(const char *tree, size_t n)
{
    nx_err e = {0};
    nx_point pt;
    assert_int_equal(nx_point_init(&pt, &e), NX_OK);
    assert_int_equal(nx_point_set_tree(&pt, tree, "tree", &e), NX_OK);
    nx_program *p = NULL;
    assert_int_equal(nx_program_build(&pt, n, 0, &p, &e), NX_OK);
    char *x = nx_program_expansion(p);
    nx_program_free(p);
    nx_point_free(&pt);
    assert_non_null(x);
    return x;
}

/* The bracketing with the signed-zero starting values dropped ("(+0+t0)"
 * is "t0"): reveal's order probes see which terms meet, not a +0 that
 * starts a chain, so a tree named with or without one is the same order.
 * The operands of each addition are put in text order: an addition is
 * commutative bit for bit ((t1+t0) is (t0+t1)). */
static const char *cur;
static char *canon_expr(void);
static char *canon_term(void)
{
    if (*cur == '(') {
        cur++;
        char *e = canon_expr();
        assert_int_equal(*cur, ')');
        cur++;
        return e;
    }
    if ((cur[0] == '+' || cur[0] == '-') && cur[1] == '0') {
        cur += 2;
        return NULL; /* a zero */
    }
    assert_int_equal(*cur, 't');
    const char *b = cur++;
    while (*cur >= '0' && *cur <= '9')
        cur++;
    char *t = malloc((size_t)(cur - b) + 1);
    memcpy(t, b, (size_t)(cur - b));
    t[cur - b] = 0;
    return t;
}
static char *canon_expr(void)
{
    char *acc = canon_term();
    while (*cur == '+') {
        cur++;
        char *r = canon_term();
        if (!acc || !r) {
            acc = acc ? acc : r;
            continue;
        }
        char *m = malloc(strlen(acc) + strlen(r) + 4);
        if (strcmp(acc, r) <= 0)
            sprintf(m, "(%s+%s)", acc, r);
        else
            sprintf(m, "(%s+%s)", r, acc);
        free(acc);
        free(r);
        acc = m;
    }
    return acc;
}
static char *canon(const char *x)
{
    cur = x;
    char *c = canon_expr();
    assert_int_equal(*cur, 0);
    return c;
}

static void same_bracketing(const char *tree, const char *named, size_t n)
{
    char *we = expansion(tree, n), *ge = expansion(named, n);
    char *want = canon(we), *got = canon(ge);
    free(we);
    free(ge);
    if (strcmp(want, got) != 0)
        print_error("%s at n = %zu: named %s\n  want %s\n  got  %s\n", tree, n, named, want, got);
    assert_string_equal(got, want);
    free(want);
    free(got);
}

/* Reveals the order of a simulated kernel running tree at n; the named
 * tree must expand to the true one's bracketing at n and, by induction, at
 * the other lengths probed (rv_induction_length, the third length of
 * folded lanes, the length that told names apart), and at held[0 .. nh),
 * lengths never probed; `has`, where given, must be part of the name. */
static void reveal_held(const char *tree, size_t n, const size_t *held, size_t nh, const char *has)
{
    char toml[1024];
    snprintf(toml, sizeof toml, "{acc = \"fp32\", tree = \"%s\"}", tree);
    rv_kernel *k = NULL;
    nx_err e = {0};
    assert_int_equal(rv_kernel_point(toml, NX_FP32, &k, &e), NX_OK);
    rv_opts o = {0};
    o.n = n;
    o.order_only = 1;
    o.seed = 1;
    rv_result r;
    memset(&r, 0, sizeof r);
    nx_status st = rv_reveal_order(k, &o, &r, &e);
    if (st)
        print_error("%s at n = %zu: %s\n", tree, n, e.msg);
    assert_int_equal(st, NX_OK);
    if (!r.tree_text)
        print_error("%s at n = %zu: not recognised (bracketing %s)\n", tree, n, rv_tree_text(&r.tree));
    assert_non_null(r.tree_text);
    same_bracketing(tree, r.tree_text, n);
    if (!strstr(r.tree_text, "expr(")) {
        assert_int_equal(r.induce_n, rv_induction_length(n));
        same_bracketing(tree, r.tree_text, r.induce_n);
        if (r.induce_n3)
            same_bracketing(tree, r.tree_text, r.induce_n3);
        if (r.separate_n)
            same_bracketing(tree, r.tree_text, r.separate_n);
    }
    if (has)
        assert_non_null(strstr(r.tree_text, has));
    for (size_t h = 0; h < nh; h++)
        same_bracketing(tree, r.tree_text, held[h]);
    rv_result_free(&r);
    rv_kernel_free(k);
}

static void reveal_names(const char *tree, size_t n)
{
    reveal_held(tree, n, NULL, 0, NULL);
}

static void test_sequential(void **state)
{
    (void)state;
    reveal_names("seq", 16);
    reveal_names("reverse(seq)", 16);
}

static void test_pairwise_and_halving(void **state)
{
    (void)state;
    reveal_names("pairwise", 16);
    reveal_names("pairwise", 13); /* odd halves: ceil(n/2) first */
    reveal_names("halving", 16);
}

static void test_lanes_and_splits(void **state)
{
    (void)state;
    reveal_names("stride(4, seq, pairwise)", 32);
    reveal_names("stride(8, seq, pairwise)", 37); /* a lane tail */
    reveal_names("split(4, seq, seq)", 64);
    reveal_names("split(3, stride(2, seq, pairwise), seq)", 30);
}

/* Induction: one bracketing at n with several names; the name must hold
 * at the second length too.  At n = 32 split(4, pairwise, seq) and tile(8,
 * pairwise, seq) are one bracketing; a body whose width divides n hides its
 * tail; BLIS's generic sdot adds its remainder in pairs to the body's sum. */
static void test_induction_names_the_loop(void **state)
{
    (void)state;
    reveal_names("tile(8, pairwise, seq)", 32);
    reveal_names("split(4, pairwise, seq)", 32);
    reveal_names("body(32, stride(32, seq, pairwise), seq)", 64);
    reveal_names("body(4, stride(4, seq, halving), tile(2, seq, seq), carry)", 100);
    /* eighth edition: the clean-up loop first.  At n = 100 the heads of 4
     * and 5 are empty; the induction length 107 shows them (3 and 2
     * terms); a rest added to the head, and one continuing from it */
    reveal_names("head(4, seq, stride(4, seq, pairwise))", 100);
    reveal_names("head(5, pairwise, tile(5, seq, seq), carry)", 100);
    reveal_names("head(8, seq, stride(8, seq, halving), carry)", 203);
    /* the induction length: 7 mod 8 where n mod 8 < 4, else 3 mod 8, past
     * n; below n at the largest n */
    assert_int_equal(rv_induction_length(32), 39);
    assert_int_equal(rv_induction_length(35), 39);
    assert_int_equal(rv_induction_length(100), 107);
    assert_int_equal(rv_induction_length(517), 523);
    assert_int_equal(rv_induction_length(777), 783);
    assert_int_equal(rv_induction_length(783), 787);
    assert_int_equal(rv_induction_length(RV_MAX_N), RV_MAX_N - 1);
    assert_int_equal(rv_induction_length(RV_MAX_N - 2), RV_MAX_N - 5);
}

/* Lanes read off the bracketing (docs/reveal.md "Lanes"): a peeled head,
 * folds between loops of several widths, a combine no family names, a tail
 * after the lanes.  The name must expand to the kernel's bracketing at n,
 * at the induction length, at the third length of folded lanes and at
 * lengths never probed (a remainder of every loop width). */
static void test_lanes_read(void **state)
{
    (void)state;
    /* (OpenBLAS's and BLIS's folds at n = 300 are tests/cli_reveal.sh's:
     * under the sanitizers they cost a minute here) */
    static const char *const k[] = {
        "lanes(8, [peel(4, 8), loop(8)], expr((((0 + 4) + (1 + 5)) + ((2 + 6) + (3 + 7)))))",
        "lanes(4, [loop(4), fold(2, [(1 + 0)]), loop(2)], pairwise)",
        "lanes(16, [loop(16), fold(4, [(0 + 2), (1 + 3)]), loop(8), fold(4, [(0 + 1)])], seq)",
        "body(8, lanes(16, [peel(8, 16), loop(16), fold(8, [(0 + 1)])], pairwise), seq, carry)",
    };
    static const size_t n[] = {100, 100, 100, 100}, held[] = {7, 95, 613, 2053};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        reveal_held(k[i], n[i], held, 4, "lanes(");
}

/* Two names that hold at n and at the induction length (OpenBLAS's sgemm
 * K blocking of 320 and a blocking of 512 both halve 517 and 523): the
 * order is probed where they differ and the kernel's kept. */
static void test_separating_length(void **state)
{
    (void)state;
    static const char *const k[] = {"tile(320, seq, seq, halve=8)", "tile(512, seq, seq, halve=8)"};
    static const size_t held[] = {1000, 1500}; /* never probed; the two blockings differ there */
    for (size_t i = 0; i < 2; i++)
        reveal_held(k[i], 517, held, 2, NULL);
}

/* A kernel of several paths by length, and where the switch is. */
static size_t size_switch(const char *toml, size_t lo, const char *tlo, size_t hi, const char *thi, size_t *reveals)
{
    rv_kernel *k = NULL;
    nx_err e = {0};
    assert_int_equal(rv_kernel_point(toml, NX_FP32, &k, &e), NX_OK);
    rv_opts o = {0};
    o.seed = 1;
    size_t T = 99999;
    assert_int_equal(rv_size_switch(k, &o, lo, tlo, hi, thi, &T, reveals, &e), NX_OK);
    rv_kernel_free(k);
    return T;
}

static void test_size_switch(void **state)
{
    (void)state;
    size_t rv;
    /* one switch at 102: found by 3 reveals between 100 and 107 */
    assert_int_equal(size_switch("{ tree = \"seq\", rows = [{ select = \"n >= 102\", tree = \"reverse(seq)\" }] }",
                                 100, "seq", 107, "reverse(seq)", &rv),
                     102);
    assert_int_equal(rv, 3);
    /* between 7 and 100, at 48 */
    assert_int_equal(size_switch("{ tree = \"seq\", rows = [{ select = \"n < 48\", tree = \"reverse(seq)\" }] }", 7,
                                 "reverse(seq)", 100, "seq", &rv),
                     48);
    /* a third order between: no single switch (0) */
    assert_int_equal(size_switch("{ tree = \"seq\", rows = [{ select = \"n >= 105\", tree = \"reverse(seq)\" }, "
                                 "{ select = \"n >= 103\", tree = \"pairwise\" }] }",
                                 100, "seq", 107, "reverse(seq)", &rv),
                     0);
}

/* The expansion itself, against brackets written by hand (the README's
 * halving example), so that the comparison above rests on a checked base. */
static void test_expansion_by_hand(void **state)
{
    (void)state;
    char *x = expansion("halving", 8);
    assert_string_equal(x, "((t0+t4)+(t2+t6))+((t1+t5)+(t3+t7))");
    free(x);
    x = expansion("pairwise", 4);
    assert_string_equal(x, "(t0+t1)+(t2+t3)");
    free(x);
    x = expansion("seq", 4);
    assert_string_equal(x, "(((+0+t0)+t1)+t2)+t3");
    char *c = canon(x);
    assert_string_equal(c, "(((t0+t1)+t2)+t3)");
    free(c);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expansion_by_hand),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_pairwise_and_halving),
        cmocka_unit_test(test_lanes_and_splits),
        cmocka_unit_test(test_induction_names_the_loop),
        cmocka_unit_test(test_lanes_read),
        cmocka_unit_test(test_separating_length),
        cmocka_unit_test(test_size_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
