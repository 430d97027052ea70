/* test_point_diff.c: nx_point_diff, the words `registry compare` and
 * `parity explain` print for two points, on hand-written points with the
 * expected lines written out here. */
#include "nx_point.h"
#include "nx_sbuf.h"
#include "point_toml.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The difference of x and y (inline TOML) as text; *nd its count. */
static char *diff_of(const char *x, const char *y, size_t *nd)
{
    nx_point px, py;
    nx_err e = {0};
    if (pt_from_text(x, "x", &px, &e) || pt_from_text(y, "y", &py, &e))
        fail_msg("%s", e.msg);
    nx_sbuf b = {0};
    *nd = 0;
    nx_point_diff(&b, nd, &px, &py);
    nx_point_free(&px);
    nx_point_free(&py);
    char *t = nx_sbuf_take(&b);
    return t ? t : strdup("");
}

static void expect(const char *x, const char *y, size_t want_nd, const char *want)
{
    size_t nd;
    char *t = diff_of(x, y, &nd);
    if (nd != want_nd || strcmp(t, want) != 0)
        fail_msg("%s vs %s:\n got %zu lines:\n%s\n want %zu lines:\n%s", x, y, nd, t, want_nd, want);
    free(t);
}

static void test_same_point_no_lines(void **state)
{
    (void)state;
    expect("{ tree = \"split(4, stride(8, seq, pairwise), seq)\" }",
           "{ acc = \"fp32\", tree = \"split(4, stride(8, seq, pairwise), seq)\" }", 0, "");
}

static void test_split_count(void **state)
{
    (void)state;
    expect("{ tree = \"split(4, stride(8, seq, pairwise), seq)\" }",
           "{ tree = \"split(8, stride(8, seq, pairwise), seq)\" }", 1,
           "    tree: split(4, stride(8, seq, pairwise), seq) vs split(8, stride(8, seq, pairwise), seq)\n"
           "      split count: 4 vs 8\n");
}

static void test_nested_combine_and_lanes(void **state)
{
    (void)state;
    /* the lanes' combine inside the split's parts, and the lane count */
    expect("{ tree = \"split(2, stride(8, seq, pairwise), seq)\" }",
           "{ tree = \"split(2, stride(4, seq, seq), seq)\" }", 2,
           "    tree: split(2, stride(8, seq, pairwise), seq) vs split(2, stride(4, seq, seq), seq)\n"
           "      split parts: stride lanes: 8 vs 4\n"
           "      split parts: stride combine: pairwise vs seq\n");
}

/* seventh edition: a split's parts stored in fp32 (a float partial of a
 * double loop) against parts that enter the combine as they are */
static void test_stored_parts(void **state)
{
    (void)state;
    expect("{ acc = \"fp64\", tree = \"split(2, seq[store=fp32], seq)\" }",
           "{ acc = \"fp64\", tree = \"split(2, seq, seq)\" }", 1,
           "    tree: split(2, seq[store=fp32], seq) vs split(2, seq, seq)\n"
           "      split parts: seq result stored: fp32 vs not stored\n");
}

static void test_kinds_and_settings(void **state)
{
    (void)state;
    /* another kind of tree is one line; acc, fma and out are lines of their own */
    expect("{ acc = \"fp32\", fma = true, tree = \"seq\", out = \"bf16\" }",
           "{ acc = \"fp64\", fma = false, tree = \"pairwise\", out = \"fp32\" }", 4,
           "    acc: fp32 vs fp64\n"
           "    fma: true vs false\n"
           "    tree: seq vs pairwise\n"
           "    out: bf16 vs fp32\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_point_no_lines),
        cmocka_unit_test(test_split_count),
        cmocka_unit_test(test_nested_combine_and_lanes),
        cmocka_unit_test(test_stored_parts),
        cmocka_unit_test(test_kinds_and_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
