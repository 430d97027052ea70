/* test_tree.c: the tree language (docs/numerics.md §4): parse errors that point
 * at the column, the canonical printer (parse ∘ print is the identity), the
 * explicit bracketing of every construct, and the canonical hash. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_program.h"
#include "point_toml.h"

/* Expected messages are written out in full: they are part of the CLI. */
static void expect_parse_error(const char *text, const char *want)
{
    nx_tree *t = NULL;
    nx_err err = {0};
    assert_int_equal(nx_tree_parse(text, "tree", &t, &err), NX_EINVAL);
    assert_null(t);
    if (strcmp(err.msg, want) != 0) {
        print_error("tree '%s'\n  got:  %s\n  want: %s\n", text, err.msg, want);
        fail();
    }
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_parse_error("split(4 seq", "tree:1:9: expected ',' after the split count, found 's'");
    expect_parse_error("split(4, seq", "tree:1:13: expected ',' after the tree of the slices, found the end of the tree");
    expect_parse_error("split(4, seq, seq", "tree:1:18: expected ')' to close 'split(', found the end of the tree");
    expect_parse_error("sequential", "tree:1:1: unknown tree 'sequential' (expected seq, pairwise, halving, atomic, chain, reverse, split, tile, stride, body, head, order, expr, lanes)");
    expect_parse_error("", "tree:1:1: expected a tree (seq, pairwise, halving, atomic, chain, reverse, split, tile, stride, body, head, order, expr, lanes), found the end of the tree");
    expect_parse_error("seq@bf17", "tree:1:5: unknown format 'bf17' after '@'");
    expect_parse_error("seq@", "tree:1:5: expected a format name after '@', found the end of the tree");
    expect_parse_error("seq seq", "tree:1:5: unexpected 's' after the end of the tree");
    expect_parse_error("chain(0)", "tree:1:7: the group size must be at least 1");
    expect_parse_error("chain()", "tree:1:7: expected an integer (the group size), found ')'");
    expect_parse_error("split(2, seq, seq, block=4)", "tree:1:20: unknown option 'block' of 'split(' (expected 'align=')");
    expect_parse_error("stride(32, seq, halving, block=)",
                       "tree:1:32: expected an integer (the block size), found ')'");
    expect_parse_error("tile(99999999999, seq, seq)", "tree:1:6: the tile size is too large (at most 1073741824)");
    expect_parse_error("reverse seq", "tree:1:9: expected '(' after 'reverse', found 's'");
    expect_parse_error("split(2,\n seq,\n sq)", "tree:3:2: unknown tree 'sq' (expected seq, pairwise, halving, atomic, chain, reverse, split, tile, stride, body, head, order, expr, lanes)");
    /* third edition (docs/numerics.md §4.1) */
    expect_parse_error("body(0, seq, seq)", "tree:1:6: the body multiple must be at least 1");
    /* eighth edition */
    expect_parse_error("head(0, seq, seq)", "tree:1:6: the head modulus must be at least 1");
    expect_parse_error("head(4, seq)", "tree:1:12: expected ',' after the tree of the head, found ')'");
    expect_parse_error("head(4, carry, seq)", "tree:1:9: 'carry' is allowed only as the last argument of body(...) or head(...) or as tile's combinator");
    expect_parse_error("head(4, seq, seq, carry, seq)", "tree:1:24: expected ')' to close 'head(', found ','");
    expect_parse_error("body(4, seq, seq, carry, seq)", "tree:1:24: expected ')' to close 'body(', found ','");
    expect_parse_error("split(2, seq, carry)", "tree:1:15: 'carry' is allowed only as the last argument of body(...) or head(...) or as tile's combinator");
    /* fifth edition: carry is tile's combinator, nowhere else in tile */
    expect_parse_error("tile(4, carry, seq)", "tree:1:9: 'carry' is allowed only as the last argument of body(...) or head(...) or as tile's combinator");
    expect_parse_error("stride(4, seq, carry)", "tree:1:16: 'carry' is allowed only as the last argument of body(...) or head(...) or as tile's combinator");
    expect_parse_error("tile([2, 4], seq, carry, halve=2)", "tree:1:24: expected ')' to close 'tile(', found ','");
    expect_parse_error("tile([4, 0], seq, seq)", "tree:1:10: a tile size must be at least 1");
    expect_parse_error("tile([4, 2], seq, seq, halve=2)", "tree:1:22: expected ')' to close 'tile(', found ','");
    expect_parse_error("tile(4, seq, seq, halve=0)", "tree:1:25: the halving multiple must be at least 1");
    expect_parse_error("order([1, 1], seq)", "tree:1:7: the order uses index 1 twice");
    expect_parse_error("order([0, 2], seq)", "tree:1:7: the order has 2 indices, so each must be below 2; found 2");
    expect_parse_error("expr(((0 + 1) + 3))", "tree:1:6: the bracketing has 3 indices, so each must be below 3; found 3");
    expect_parse_error("expr((0 1))", "tree:1:9: expected '+' between the two sides of a bracket, found '1'");
    expect_parse_error("seq[fma=true, fma=false]", "tree:1:15: setting 'fma' given twice");
    expect_parse_error("seq@bf16[acc=fp32]", "tree:1:10: setting 'acc' given twice (an '@FMT' suffix sets acc)");
    expect_parse_error("seq[speed=fast]",
                       "tree:1:5: unknown setting 'speed' (expected acc, fma, product, rounding, store)");
    /* seventh edition: store once, a format */
    expect_parse_error("seq[store=fp32, store=bf16]", "tree:1:17: setting 'store' given twice");
    expect_parse_error("seq[store=exact]",
                       "tree:1:11: store must be a format (a result kept exact is no store: leave the setting out)");
    expect_parse_error("seq[store=fp33]", "tree:1:11: unknown format 'fp33' for 'store'");
    expect_parse_error("seq[fma=maybe]", "tree:1:9: fma must be true or false, found 'maybe'");
    expect_parse_error("seq[rounding=up]", "tree:1:14: unknown rounding mode 'up' (expected rne, rna, rz, ru, rd)");
    expect_parse_error("seq[fma=false", "tree:1:14: expected ']' to close the settings, found the end of the tree");
    /* lanes (docs/numerics.md §4.2): widths are checked stage by stage */
    expect_parse_error("lanes(0, [loop(1)], seq)", "tree:1:7: the lane count must be at least 1");
    expect_parse_error("lanes(4, [loop(5)], seq)", "tree:1:11: loop(5) needs 5 lanes, but 4 are live here");
    expect_parse_error("lanes(8, [fold(4, [(0 + 1)]), peel(8, 16)], seq)",
                       "tree:1:31: peel(8, ...) needs 8 lanes, but 4 are live here");
    expect_parse_error("lanes(4, [fold(3, [0])], seq)",
                       "tree:1:11: fold(3, ...): the 4 live lanes are not a whole number of registers of 3 lanes");
    expect_parse_error("lanes(4, [fold(2, [0])], seq)",
                       "tree:1:11: fold(2, ...) over 4 live lanes has 2 registers, and its brackets name 1: every "
                       "register must be used exactly once");
    expect_parse_error("lanes(4, [fold(2, [(0 + 0)])], seq)",
                       "tree:1:11: fold(2, ...) uses register 0 twice (every register must be used exactly once)");
    expect_parse_error("lanes(4, [fold(2, [(0 + 2)])], seq)",
                       "tree:1:20: fold(2, ...) over 4 live lanes has 2 registers (0 ... 1); found 2");
    expect_parse_error("lanes(4, [jump(2)], seq)", "tree:1:11: unknown stage 'jump' of lanes (expected loop, peel, fold, rest)");
    expect_parse_error("lanes(4, [], seq)", "tree:1:11: expected a stage of lanes (loop, peel, fold, rest), found ']'");
    /* the sixth edition's loop(B, U) and rest(L) */
    expect_parse_error("lanes(2, [loop(2, 5)], seq)",
                       "tree:1:11: loop(2, 5): the terms a round takes must be a multiple of the block size 2");
    expect_parse_error("lanes(4, [loop(4, 2)], seq)",
                       "tree:1:11: loop(4, 2): the terms a round takes must be a multiple of the block size 4");
    expect_parse_error("lanes(2, [loop(4, 8)], seq)", "tree:1:11: loop(4, ...) needs 4 lanes, but 2 are live here");
    expect_parse_error("lanes(2, [loop(2, 0)], seq)", "tree:1:19: the terms a round takes must be at least 1");
    expect_parse_error("lanes(2, [rest(2)], seq)", "tree:1:11: rest(2) names lane 2, but lanes 0 ... 1 are live here");
    expect_parse_error("lanes(4, [fold(2, [(0 + 1)]), rest(2)], seq)",
                       "tree:1:31: rest(2) names lane 2, but lanes 0 ... 1 are live here");
    expect_parse_error("lanes(2, [rest(0), loop(2)], seq)",
                       "tree:1:20: a stage after rest(...): rest takes every term left, so it is the last stage");
    expect_parse_error("lanes(2, [rest()], seq)", "tree:1:16: expected an integer (the lane), found ')'");
    expect_parse_error("lanes(4, [peel(2)], seq)", "tree:1:17: expected ',' after the block size, found ')'");
    expect_parse_error("lanes(4, [peel(2, 0)], seq)", "tree:1:19: the modulus must be at least 1");
    expect_parse_error("lanes(4, [loop(4)] seq)", "tree:1:20: expected ',' after the list of stages, found 's'");
    /* a huge width costs nothing before the brackets are checked */
    expect_parse_error("lanes(1073741824, [fold(1, [0])], seq)",
                       "tree:1:20: fold(1, ...) over 1073741824 live lanes has 1073741824 registers, and its brackets "
                       "name 1: every register must be used exactly once");
}

/* Nesting deeper than NX_TREE_MAX_DEPTH is an input error, not a crash. */
static void test_depth_limit(void **state)
{
    (void)state;
    size_t depth = 50000;
    char *text = malloc(depth * 9 + 8);
    assert_non_null(text);
    size_t l = 0;
    for (size_t i = 0; i < depth; i++)
        l += (size_t)sprintf(text + l, "reverse(");
    l += (size_t)sprintf(text + l, "seq");
    for (size_t i = 0; i < depth; i++)
        text[l++] = ')';
    text[l] = 0;
    nx_tree *t = NULL;
    nx_err err = {0};
    assert_int_equal(nx_tree_parse(text, "tree", &t, &err), NX_EINVAL);
    assert_non_null(strstr(err.msg, "nested deeper than 256 levels"));
    /* 256 levels are fine */
    l = 0;
    for (size_t i = 0; i < 255; i++)
        l += (size_t)sprintf(text + l, "reverse(");
    l += (size_t)sprintf(text + l, "seq");
    for (size_t i = 0; i < 255; i++)
        text[l++] = ')';
    text[l] = 0;
    assert_int_equal(nx_tree_parse(text, "tree", &t, &err), NX_OK);
    nx_tree_free(t);
    free(text);
}

static void expect_canonical(const char *text, const char *want)
{
    nx_tree *t, *t2;
    nx_err err = {0};
    assert_int_equal(nx_tree_parse(text, "tree", &t, &err), NX_OK);
    char *p = nx_tree_print(t);
    assert_string_equal(p, want);
    /* parse(print(t)) prints the same: the printer is canonical */
    assert_int_equal(nx_tree_parse(p, "tree", &t2, &err), NX_OK);
    char *p2 = nx_tree_print(t2);
    assert_string_equal(p2, p);
    free(p);
    free(p2);
    nx_tree_free(t);
    nx_tree_free(t2);
}

static void test_canonical(void **state)
{
    (void)state;
    expect_canonical("body( 4 ,seq,pairwise , seq )", "body(4, seq, pairwise)");
    expect_canonical("body(4, seq, pairwise, seq@bf16)", "body(4, seq, pairwise, seq@bf16)");
    expect_canonical("body(4,seq,seq,carry)", "body(4, seq, seq, carry)");
    /* eighth edition: the head's tree first, as written */
    expect_canonical("head( 4 ,pairwise,seq , seq )", "head(4, pairwise, seq)");
    expect_canonical("head(4, pairwise, seq, seq@bf16)", "head(4, pairwise, seq, seq@bf16)");
    expect_canonical("head(4,seq,stride(4,seq,pairwise),carry)", "head(4, seq, stride(4, seq, pairwise), carry)");
    expect_canonical("head(5, seq[fma=false], seq)[store=bf16]", "head(5, seq[fma=false], seq)[store=bf16]");
    expect_canonical("tile(8,tile([2,4,2],pairwise,seq),carry)", "tile(8, tile([2, 4, 2], pairwise, seq), carry)");
    expect_canonical("tile(4, seq, carry, halve=2)", "tile(4, seq, carry, halve=2)");
    expect_canonical("lanes(64,[loop(64),fold(8,[(0+1),(2+3),(4+5),(6+7)]),loop( 32 ),fold(8,[(((0+1)+2)+3)]),"
                     "fold(4,[(0+1)])],pairwise)",
                     "lanes(64, [loop(64), fold(8, [(0 + 1), (2 + 3), (4 + 5), (6 + 7)]), loop(32), fold(8, [(((0 + "
                     "1) + 2) + 3)]), fold(4, [(0 + 1)])], pairwise)");
    expect_canonical("lanes(8,[peel(4,8),loop(8)],seq)@fp32[fma=true]", "lanes(8, [peel(4, 8), loop(8)], seq)@fp32[fma=true]");
    expect_canonical("lanes(2,[loop(2,8),rest(0)],seq)", "lanes(2, [loop(2, 8), rest(0)], seq)");
    /* seventh edition: store prints last among the settings; a body's seq
     * combinator that stores is not the default one */
    expect_canonical("split(2,seq[store=fp32 , fma=false],seq)", "split(2, seq[fma=false, store=fp32], seq)");
    expect_canonical("body(4, seq, seq, seq[store=bf16])", "body(4, seq, seq, seq[store=bf16])");
    expect_canonical("seq@fp64[rounding=rz,store=fp32]", "seq@fp64[rounding=rz, store=fp32]");
    expect_canonical("lanes(4, [loop(4, 4), rest( 3 )], pairwise)", "lanes(4, [loop(4), rest(3)], pairwise)");
    expect_canonical("lanes(4, [fold(2, [1, 0]), loop(4)], expr(((0 + 1) + (2 + 3))))",
                     "lanes(4, [fold(2, [1, 0]), loop(4)], expr(((0 + 1) + (2 + 3))))");
    expect_canonical("tile([320,320 , 8],seq,seq)", "tile([320, 320, 8], seq, seq)");
    expect_canonical("tile(320, seq, seq, halve = 8)", "tile(320, seq, seq, halve=8)");
    expect_canonical("order([1,0],seq)", "order([1, 0], seq)");
    expect_canonical("expr(((0+2)+(1+3)))", "expr(((0 + 2) + (1 + 3)))");
    expect_canonical("expr(0)", "expr(0)");
    expect_canonical("seq[rounding=rz, fma=false, acc=bf16]", "seq@bf16[fma=false, rounding=rz]");
    expect_canonical("pairwise [ product = exact ]", "pairwise[product=exact]");
    expect_canonical("split(2, seq[product=bf16], seq)@fp32", "split(2, seq[product=bf16], seq)@fp32");
    expect_canonical("seq", "seq");
    expect_canonical("  halving  ", "halving");
    expect_canonical("split(4,stride(32,seq,halving,block=8),seq)", "split(4, stride(32, seq, halving, block=8), seq)");
    expect_canonical("split( 4 , seq , pairwise , align = 64 )", "split(4, seq, pairwise, align=64)");
    expect_canonical("split(4, seq, seq, align=1)", "split(4, seq, seq)");
    expect_canonical("stride(8, seq, seq, block=1)", "stride(8, seq, seq)");
    expect_canonical("reverse( chain(16) )@fp32", "reverse(chain(16))@fp32");
    expect_canonical("tile(128, seq@bf16, pairwise)@fp64", "tile(128, seq@bf16, pairwise)@fp64");
    expect_canonical("atomic", "atomic");
    expect_canonical("split(2, split(3, seq, halving), reverse(pairwise), align=8)",
                     "split(2, split(3, seq, halving), reverse(pairwise), align=8)");
}

static char *expand(const char *tree, size_t n, const char *atom_toml)
{
    nx_point pt;
    nx_err err = {0};
    char text[512];
    snprintf(text, sizeof text, "{ tree = \"%s\"%s%s }", tree, atom_toml ? ", atom = " : "", atom_toml ? atom_toml : "");
    if (pt_from_text(text, "point", &pt, &err) != NX_OK) {
        print_error("%s\n", err.msg);
        fail();
    }
    nx_program *p;
    assert_int_equal(nx_program_build(&pt, n, 0, &p, &err), NX_OK);
    char *s = nx_program_expansion(p);
    nx_program_free(p);
    nx_point_free(&pt);
    return s;
}

static void expect_expansion(const char *tree, size_t n, const char *want)
{
    char *got = expand(tree, n, strstr(tree, "chain") ? "{ frac_bits = 24 }" : NULL);
    if (strcmp(got, want) != 0) {
        print_error("%s at n = %zu\n  got:  %s\n  want: %s\n", tree, n, got, want);
        free(got);
        fail();
    }
    free(got);
}

/* Each expected bracketing is worked out by hand from §4. */
static void test_expansions(void **state)
{
    (void)state;
    /* sixth edition: rounds of U terms, the rest to one lane (docs/numerics.md's bracketing table) */
    expect_expansion("lanes(2, [loop(2, 8), rest(0)], seq)", 20,
                     "(+0+((((((((((((+0+t0)+t2)+t4)+t6)+t8)+t10)+t12)+t14)+t16)+t17)+t18)+t19))"
                     "+((((((((+0+t1)+t3)+t5)+t7)+t9)+t11)+t13)+t15)");
    expect_expansion("lanes(2, [loop(2, 8), rest(0)], seq)", 16,
                     "(+0+((((((((+0+t0)+t2)+t4)+t6)+t8)+t10)+t12)+t14))+((((((((+0+t1)+t3)+t5)+t7)+t9)+t11)+t13)+t15)");
    expect_expansion("lanes(2, [loop(2, 4), rest(1)], pairwise)", 7, "((+0+t0)+t2)+(((((+0+t1)+t3)+t4)+t5)+t6)");
    /* two lanes of four take the round; the two terms left go in a block
     * of the live width 4: to lanes 0 and 1, lanes 2 and 3 stay +0 */
    expect_expansion("lanes(4, [loop(2, 4)], seq)", 6,
                     "(((+0+(((+0+t0)+t2)+t4))+(((+0+t1)+t3)+t5))+(+0))+(+0)");
    expect_expansion("halving", 8, "((t0+t4)+(t2+t6))+((t1+t5)+(t3+t7))");
    expect_expansion("halving", 4, "(t0+t2)+(t1+t3)");
    expect_expansion("halving", 3, "(t0+t2)+(t1+(+0))"); /* padded with +0 to w = 4 */
    expect_expansion("halving", 1, "t0");
    expect_expansion("halving", 0, "+0");
    expect_expansion("seq", 4, "(((+0+t0)+t1)+t2)+t3");
    expect_expansion("seq", 0, "+0");
    expect_expansion("pairwise", 4, "(t0+t1)+(t2+t3)");
    expect_expansion("pairwise", 5, "((t0+t1)+t2)+(t3+t4)");
    expect_expansion("pairwise", 1, "t0");
    expect_expansion("reverse(seq)", 3, "((+0+t2)+t1)+t0");
    expect_expansion("split(2, seq, seq)", 4, "(+0+((+0+t0)+t1))+((+0+t2)+t3)");
    /* c = ceil(5/2) = 3, rounded up to align 4: slices [0,4) and [4,5) */
    expect_expansion("split(2, pairwise, pairwise, align=4)", 5, "((t0+t1)+(t2+t3))+t4");
    /* c = ceil(2/4) = 1: slices 2 and 3 are empty and give +0 */
    expect_expansion("split(4, pairwise, pairwise)", 2, "(t0+t1)+(+0+(+0))");
    expect_expansion("tile(2, pairwise, seq)", 5, "((+0+(t0+t1))+(t2+t3))+t4");
    /* blocks of 2: block b to lane b mod 2: lane 0 = t0 t1 t4 t5, lane 1 = t2 t3 t6 t7 */
    expect_expansion("stride(2, pairwise, pairwise, block=2)", 8, "((t0+t1)+(t4+t5))+((t2+t3)+(t6+t7))");
    expect_expansion("stride(3, seq, pairwise)", 4, "(((+0+t0)+t3)+(+0+t1))+(+0+t2)");
    expect_expansion("stride(4, seq, pairwise)", 2, "((+0+t0)+(+0+t1))+(+0+(+0))");
    expect_expansion("chain(4)", 6, "[[+0+t0+t1+t2+t3]+t4+t5]");
    expect_expansion("split(2, chain(2), pairwise)", 4, "[+0+t0+t1]+[+0+t2+t3]");
    expect_expansion("atomic", 2, "(+0+t0)+t1");
    expect_expansion("seq@bf16", 2, "(+0+t0)+t1");
    /* §4.1's example, n = 7, L = 4: H = ((t0 + t2) + (t1 + t3)) from the
     * strided lanes (+0 + t_l); carry: ((H + (t4 + t5)) + t6) */
    expect_expansion("body(4, stride(4, seq, halving), tile(2, pairwise, seq), carry)", 7,
                     "((((+0+t0)+(+0+t2))+((+0+t1)+(+0+t3)))+(t4+t5))+t6");
    /* C = seq: the tail from scratch, then +0 + H + tail */
    expect_expansion("body(4, stride(4, seq, halving), tile(2, pairwise, seq))", 7,
                     "(+0+(((+0+t0)+(+0+t2))+((+0+t1)+(+0+t3))))+((+0+(t4+t5))+t6)");
    /* carry with an empty tail is the body's value; an empty body leaves the tail alone */
    /* fifth edition: each tile from the running value (BLIS's generic
     * sgemv N: parts of 2, 4 and 2 columns added to y in a permuted order).
     * n = 9: tiles t0-t3, t4-t7, t8; the first from scratch, its seq
     * combinator from +0: v1 = ((+0 + t0) + ((t1 + t2) + t3)); the second's
     * parts added to v1: ((v1 + t4) + ((t5 + t6) + t7)); the third: + t8 */
    expect_expansion("tile(4, tile([1, 3], pairwise, seq), carry)", 9,
                     "((((+0+t0)+((t1+t2)+t3))+t4)+((t5+t6)+t7))+t8");
    /* pairwise takes no start value: round(T + v) each time (section 4.1) */
    expect_expansion("tile(2, pairwise, carry)", 5, "t4+((t2+t3)+(t0+t1))");
    /* the permuted sequence t2 t3 t0 t1 | t6 t7 t4 t5, two tiles of two pairs */
    expect_expansion("order([2, 3, 0, 1], tile(4, tile([2, 2], pairwise, seq), carry))", 8,
                     "(((+0+(t2+t3))+(t0+t1))+(t6+t7))+(t4+t5)");
    expect_expansion("body(2, pairwise, seq, carry)", 4, "(t0+t1)+(t2+t3)");
    /* eighth edition: the first n mod L terms by U, then the rest by T.
     * n = 7, L = 4: head t0-t2 by seq, rest t3-t6 by 4 lanes, pairwise */
    expect_expansion("head(4, seq, stride(4, seq, pairwise))", 7,
                     "(+0+(((+0+t0)+t1)+t2))+(((+0+t3)+(+0+t4))+((+0+t5)+(+0+t6)))");
    expect_expansion("head(4, pairwise, seq)", 6, "(+0+(t0+t1))+((((+0+t2)+t3)+t4)+t5)");
    expect_expansion("head(4, pairwise, seq, carry)", 6, "((((t0+t1)+t2)+t3)+t4)+t5");
    /* no head (n a multiple of L), no rest (n < L) */
    expect_expansion("head(4, pairwise, seq, carry)", 4, "(((+0+t0)+t1)+t2)+t3");
    expect_expansion("head(4, pairwise, seq)", 3, "+0+((t0+t1)+t2)");
    expect_expansion("head(4, pairwise, seq, carry)", 3, "(t0+t1)+t2");
    /* a head inside tiles: each tile of 6 has a head of 2 */
    expect_expansion("tile(6, head(4, pairwise, seq, carry), seq)", 7, "(+0+(((((t0+t1)+t2)+t3)+t4)+t5))+t6");
    expect_expansion("body(8, pairwise, pairwise, carry)", 3, "(t0+t1)+t2");
    expect_expansion("body(8, pairwise, pairwise)", 3, "+0+((t0+t1)+t2)");
    /* halve=1, n = 13, P = 4: 4, 4 (9 >= 8), then 5 > 4: ceil(5/2) = 3 and 2 */
    expect_expansion("tile(4, pairwise, seq, halve=1)", 13,
                     "(((+0+((t0+t1)+(t2+t3)))+((t4+t5)+(t6+t7)))+((t8+t9)+t10))+(t11+t12)");
    /* halve=2: ceil(5/2) = 3 rounds up to 4, the rest 1 */
    expect_expansion("tile(4, pairwise, seq, halve=2)", 13,
                     "(((+0+((t0+t1)+(t2+t3)))+((t4+t5)+(t6+t7)))+((t8+t9)+(t10+t11)))+t12");
    /* listed tiles, then one tile of the rest; cut at n */
    expect_expansion("tile([2, 3], pairwise, seq)", 7, "((+0+(t0+t1))+((t2+t3)+t4))+(t5+t6)");
    expect_expansion("tile([2, 3], pairwise, seq)", 3, "(+0+(t0+t1))+t2");
    /* full blocks of 2 odd term first; the last partial block as it is */
    expect_expansion("order([1, 0], seq)", 5, "((((+0+t1)+t0)+t3)+t2)+t4");
    /* the second tile has t4, t5 only: indices 2 and 3 are absent */
    expect_expansion("tile(4, expr(((0 + 2) + (1 + 3))), seq)", 6, "(+0+((t0+t2)+(t1+t3)))+(t4+t5)");
    /* settings leave the bracketing alone */
    expect_expansion("seq[fma=false, rounding=rz]", 2, "(+0+t0)+t1");
}

static void point_hash(const char *toml, size_t n, int dot, char hex[65])
{
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(toml, "point", &pt, &err) != NX_OK) {
        print_error("%s\n", err.msg);
        fail();
    }
    nx_program *p;
    assert_int_equal(nx_program_build(&pt, n, dot, &p, &err), NX_OK);
    assert_int_equal(nx_program_hash(p, hex, &err), NX_OK);
    nx_program_free(p);
    nx_point_free(&pt);
}

static void test_hash(void **state)
{
    (void)state;
    char h1[65], h2[65];
    /* a preset and its parameters are the same point */
    point_hash("{ tree = \"chain(16)\", atom = \"sm90.wgmma.f16\" }", 64, 1, h1);
    point_hash("{ tree = \"chain(16)\", atom = { frac_bits = 25, term_round = \"rz\", round = \"rz\", acc = \"fp32\" } }", 64, 1, h2);
    assert_string_equal(h1, h2);
    /* one bit of atom precision apart */
    point_hash("{ tree = \"chain(16)\", atom = { frac_bits = 24, term_round = \"rz\", round = \"rz\", acc = \"fp32\" } }", 64, 1, h2);
    assert_string_not_equal(h1, h2);
    /* spelling does not matter, the expansion does */
    point_hash("{ tree = \"split(4,seq,seq)\" }", 64, 1, h1);
    point_hash("{ tree = \"split( 4 , seq , seq , align=1 )\", acc = \"fp32\", rounding = \"rne\" }", 64, 1, h2);
    assert_string_equal(h1, h2);
    /* split counts differ */
    point_hash("{ tree = \"split(8,seq,seq)\" }", 64, 1, h2);
    assert_string_not_equal(h1, h2);
    char h3[65], h4[65];
    /* seventh edition: a store that cannot change a value (fp64, or the
     * part's own format) is no store, a narrower one is */
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq, seq)\" }", 64, 1, h3);
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq[store=fp64], seq)\" }", 64, 1, h4);
    assert_string_equal(h3, h4);
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq@fp32[store=fp32], seq)\" }", 64, 1, h3);
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq@fp32, seq)\" }", 64, 1, h4);
    assert_string_equal(h3, h4);
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq[store=fp32], seq)\" }", 64, 1, h4);
    assert_string_not_equal(h3, h4);
    point_hash("{ acc = \"fp64\", tree = \"split(2, seq, seq)\" }", 64, 1, h3);
    assert_string_not_equal(h3, h4);
    /* eighth edition: a head carried into a running sum is that running
     * sum (the same program at every n); added on its own it is not, and a
     * head of 4 is a body at a multiple of 4 (no head, no tail) */
    point_hash("{ tree = \"seq\" }", 67, 1, h3);
    point_hash("{ tree = \"head(4, seq, seq, carry)\" }", 67, 1, h4);
    assert_string_equal(h3, h4);
    point_hash("{ tree = \"head(4, seq, seq)\" }", 67, 1, h4);
    assert_string_not_equal(h3, h4);
    point_hash("{ tree = \"head(4, pairwise, stride(4, seq, seq))\" }", 64, 1, h3);
    point_hash("{ tree = \"body(4, stride(4, seq, seq), pairwise)\" }", 64, 1, h4);
    assert_string_equal(h3, h4);
    point_hash("{ tree = \"head(4, pairwise, stride(4, seq, seq))\" }", 67, 1, h3);
    point_hash("{ tree = \"body(4, stride(4, seq, seq), pairwise)\" }", 67, 1, h4);
    assert_string_not_equal(h3, h4);
    /* align that changes nothing at this n (64/4 = 16 is a multiple of 8) gives the same expansion */
    point_hash("{ tree = \"split(4,seq,seq,align=8)\" }", 64, 1, h2);
    assert_string_equal(h1, h2);
    /* ... and one that does */
    point_hash("{ tree = \"split(4,seq,seq,align=32)\" }", 64, 1, h2);
    assert_string_not_equal(h1, h2);
    /* the shape is part of the hash */
    point_hash("{ tree = \"split(4,seq,seq)\" }", 65, 1, h2);
    assert_string_not_equal(h1, h2);
    /* fma matters for products, not for value sums */
    point_hash("{ fma = true }", 16, 1, h1);
    point_hash("{ fma = false }", 16, 1, h2);
    assert_string_not_equal(h1, h2);
    point_hash("{ fma = true }", 16, 0, h1);
    point_hash("{ fma = false }", 16, 0, h2);
    assert_string_equal(h1, h2);
    /* rounding mode, accumulator, output */
    point_hash("{ rounding = \"rz\" }", 16, 0, h2);
    assert_string_not_equal(h1, h2);
    point_hash("{ acc = \"bf16\" }", 16, 0, h2);
    assert_string_not_equal(h1, h2);
    point_hash("{ out = \"bf16\" }", 16, 0, h2);
    assert_string_not_equal(h1, h2);
    point_hash("{ out = \"fp32\", out_rounding = \"rne\" }", 16, 0, h2);
    assert_string_equal(h1, h2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_expansions),
        cmocka_unit_test(test_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
