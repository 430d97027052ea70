/* test_html.c: the HTML writer (parity/html/, docs/reports.md): escaping of
 * hostile input, well-formedness checked by an independent tag checker (a
 * stack of open elements and a list of the only elements the writer may
 * emit), the verdict table's numbers, the histogram's log scale, the heat
 * map's binning and the tree of a small program, all against values worked
 * out by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "nx_point.h"
#include "nx_program.h"
#include "point_toml.h"

/* --- an independent checker ------------------------------------------------- */

static const char *const allowed[] = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4",
                                      "p", "table", "tr", "th", "td", "figure", "figcaption", "svg", "rect",
                                      "line", "text", "g", "polygon", NULL};

static int is_allowed(const char *name)
{
    for (int i = 0; allowed[i]; i++)
        if (!strcmp(allowed[i], name))
            return 1;
    return 0;
}

/* Returns NULL when every tag of s is an allowed element, every element is
 * closed in order (or self-closed with "/>"), attribute values are quoted,
 * and no '<' or '>' stands outside a tag; else a message. */
static const char *check_tags(const char *s, char *msg, size_t cap)
{
    char stack[256][16];
    int depth = 0;
    const char *p = s;
    if (strncmp(p, "<!DOCTYPE html>", 15))
        return "no doctype";
    p += 15;
    while (*p) {
        if (*p == '>') {
            snprintf(msg, cap, "a '>' outside a tag at byte %td", p - s);
            return msg;
        }
        if (*p != '<') {
            p++;
            continue;
        }
        int closing = p[1] == '/';
        const char *q = p + 1 + closing;
        char name[16];
        size_t n = 0;
        while (isalnum((unsigned char)*q) && n + 1 < sizeof name)
            name[n++] = *q++;
        name[n] = 0;
        if (!n || !is_allowed(name)) {
            snprintf(msg, cap, "element '%s' at byte %td is not one the writer emits", name, p - s);
            return msg;
        }
        /* attributes: name="value" (no '<' or '>' in values) */
        int self = 0;
        while (*q && *q != '>') {
            if (*q == '"') {
                const char *e = strchr(q + 1, '"');
                if (!e) {
                    snprintf(msg, cap, "an unterminated attribute at byte %td", q - s);
                    return msg;
                }
                for (const char *c = q + 1; c < e; c++)
                    if (*c == '<' || *c == '>') {
                        snprintf(msg, cap, "'%c' inside an attribute at byte %td", *c, c - s);
                        return msg;
                    }
                q = e + 1;
                continue;
            }
            if (*q == '<' || *q == '\'') {
                snprintf(msg, cap, "'%c' inside a tag at byte %td", *q, q - s);
                return msg;
            }
            if (*q == '/' && q[1] == '>')
                self = 1;
            q++;
        }
        if (!*q)
            return "a tag runs to the end";
        if (closing) {
            if (!depth || strcmp(stack[depth - 1], name)) {
                snprintf(msg, cap, "</%s> at byte %td closes %s", name, p - s, depth ? stack[depth - 1] : "nothing");
                return msg;
            }
            depth--;
        } else if (!self) {
            if (depth == 256)
                return "too deep";
            snprintf(stack[depth++], 16, "%s", name);
        }
        p = q + 1;
    }
    if (depth) {
        snprintf(msg, cap, "%d element(s) left open, the innermost %s", depth, stack[depth - 1]);
        return msg;
    }
    return NULL;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void assert_well_formed(const char *s)
{
    char msg[256];
    const char *why = check_tags(s, msg, sizeof msg);
    if (why)
        fail_msg("not well-formed: %s", why);
}

/* The checker itself must be able to fail. */
static void test_checker(void **state)
{
    (void)state;
    char msg[256];
    assert_null(check_tags("<!DOCTYPE html><html><body><p>a &lt; b</p></body></html>", msg, sizeof msg));
    assert_non_null(check_tags("<!DOCTYPE html><html><body><p>a</body></html>", msg, sizeof msg));
    assert_non_null(check_tags("<!DOCTYPE html><html><body><img src=x></body></html>", msg, sizeof msg));
    assert_non_null(check_tags("<!DOCTYPE html><html><body>a > b</body></html>", msg, sizeof msg));
    assert_non_null(check_tags("<!DOCTYPE html><html><body><p title=\"<\">a</p></body></html>", msg, sizeof msg));
    assert_non_null(check_tags("<!DOCTYPE html><html><body><script>x</script></body></html>", msg, sizeof msg));
}

static const char hostile[] = "</script><img src=x onerror=alert(1)>\"'&amp;</td></tr></table><svg onload=x>";

static void test_escape(void **state)
{
    (void)state;
    html_doc d;
    memset(&d, 0, sizeof d);
    html_esc(&d, hostile);
    assert_string_equal(d.s, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;amp;&lt;/td&gt;"
                             "&lt;/tr&gt;&lt;/table&gt;&lt;svg onload=x&gt;");
    html_free(&d);
    memset(&d, 0, sizeof d);
    html_esc(&d, "a\x01" "b\x7f\tc");
    assert_string_equal(d.s, "a&#xfffd;b\x7f\tc");
    html_free(&d);
}

/* Hostile strings in every place input reaches: the title, facts, the
 * table, a histogram's title and labels, the heat map's title, the tree's
 * caption. */
static void test_hostile_page(void **state)
{
    (void)state;
    html_doc d;
    html_begin(&d, hostile);
    const char *const kv[][2] = {{hostile, hostile}};
    html_facts(&d, kv, 1);
    html_heading(&d, 2, hostile);
    html_para(&d, hostile);
    html_verdict_row row = {hostile, hostile, hostile, 1, 2, 3, hostile};
    html_verdict_table(&d, &row, 1);
    const char *labels[2] = {hostile, "1"};
    size_t counts[2] = {5, 7};
    html_histogram_svg(&d, hostile, labels, counts, 2);
    html_heat h;
    assert_int_equal(html_heat_init(&h, 4, 4), 0);
    html_heat_add(&h, 1, 2);
    html_heat_svg(&d, &h, hostile, "rows", "columns");
    html_heat_free(&h);
    nx_point pt;
    nx_err err = {0};
    nx_program *p = NULL;
    assert_int_equal(nx_point_init(&pt, &err), NX_OK);
    assert_int_equal(nx_program_build(&pt, 4, 0, &p, &err), NX_OK);
    html_tree_svg(&d, p, hostile, 0);
    nx_program_free(p);
    nx_point_free(&pt);
    char *s = html_end(&d);
    assert_non_null(s);
    assert_well_formed(s);
    assert_null(strstr(s, "<img"));
    assert_null(strstr(s, "<script"));
    assert_null(strstr(s, "onerror=alert(1)>"));
    assert_null(strstr(s, "<svg onload"));
    /* every place: the title twice (title, h1), facts twice, heading, para
     * (6), 4 table cells (10), histogram title twice (title, text) and a
     * label twice (bar tooltip, axis) (14), heat map title twice (16),
     * caption (17) */
    assert_int_equal(count(s, "&lt;img src=x onerror=alert(1)&gt;"), 17);
    free(s);
}

/* The table carries the numbers it is given, as decimal integers. */
static void test_table(void **state)
{
    (void)state;
    html_doc d;
    html_begin(&d, "t");
    html_verdict_row rows[3] = {{"p.a", "Tier 2", "fail", 8, 1024, 3, "bits differ"},
                                {"p.b", "determinism", "pass", -1, -1, -1, "ok"},
                                {"p.c", "Tier 2", "pass", 0, 18446744073709551LL, 0, ""}};
    html_verdict_table(&d, rows, 3);
    char *s = html_end(&d);
    assert_well_formed(s);
    assert_non_null(strstr(s, "<tr class=\"fail\"><td>p.a</td><td>Tier 2</td><td class=\"v\">fail</td>"
                              "<td class=\"num\">8 / 1024</td><td class=\"num\">3</td>"));
    assert_non_null(strstr(s, "<tr class=\"pass\"><td>p.b</td><td>determinism</td><td class=\"v\">pass</td>"
                              "<td class=\"num\">-</td><td class=\"num\">-</td>"));
    assert_non_null(strstr(s, "<td class=\"num\">0 / 18446744073709551</td>"));
    assert_int_equal(count(s, "<tr"), 4);
    free(s);
}

/* Bars log10(1 + count) / log10(1 + max) of 160 px: counts 1016, 5, 3, 0
 * give 160, 160 * log10(6) / log10(1017) = 41.40, 160 * log10(4) /
 * log10(1017) = 32.03 (worked out by hand from the logarithms), 0. */
static void test_histogram(void **state)
{
    (void)state;
    html_doc d;
    html_begin(&d, "h");
    const char *labels[4] = {"0", "1", "2-3", "4-15"};
    size_t counts[4] = {1016, 5, 3, 0};
    html_histogram_svg(&d, "y", labels, counts, 4);
    char *s = html_end(&d);
    assert_well_formed(s);
    assert_int_equal(count(s, "<rect class=\"bar\""), 4);
    assert_non_null(strstr(s, "height=\"160.0\" fill=\"#7aa97a\""));
    assert_non_null(strstr(s, "height=\"41.4\" fill=\"#c0392b\""));
    assert_non_null(strstr(s, "height=\"32.0\" fill=\"#c0392b\""));
    assert_non_null(strstr(s, "height=\"0.0\" fill=\"#c0392b\""));
    assert_non_null(strstr(s, "ulp distance (1024 elements)"));
    free(s);
}

/* Binning: 300 x 5 in cells of 3 rows (300 / 128 rounded up) x 1 column,
 * 100 x 5 cells; 1000 x 1000 in cells of 8 x 8, 125 x 125; 7 x 1 as is. */
static void test_heat(void **state)
{
    (void)state;
    html_heat h;
    assert_int_equal(html_heat_init(&h, 300, 5), 0);
    assert_int_equal(h.rbin, 3);
    assert_int_equal(h.cbin, 1);
    assert_int_equal(h.gr, 100);
    assert_int_equal(h.gc, 5);
    html_heat_add(&h, 299, 4);
    html_heat_add(&h, 297, 4);
    html_heat_add(&h, 296, 4);
    html_heat_add(&h, 300, 0); /* outside: ignored */
    assert_int_equal(h.cnt[99 * 5 + 4], 2);
    assert_int_equal(h.cnt[98 * 5 + 4], 1);
    assert_int_equal(h.total, 3);
    html_doc d;
    html_begin(&d, "h");
    html_heat_svg(&d, &h, "y", "rows", "columns");
    char *s = html_end(&d);
    assert_well_formed(s);
    assert_int_equal(count(s, "<rect class=\"cell\""), 2);
    assert_non_null(strstr(s, "<title>rows 297-299, columns 4-4: 2</title>"));
    assert_non_null(strstr(s, "a cell is 3 rows x 1 columns; 3 in all"));
    /* the largest count is the darkest colour, 1 the palest */
    assert_non_null(strstr(s, "fill=\"#8c001a\"><title>rows 297-299"));
    assert_non_null(strstr(s, "fill=\"#fddb6e\"><title>rows 294-296"));
    free(s);
    html_heat_free(&h);
    assert_int_equal(html_heat_init(&h, 1000, 1000), 0);
    assert_int_equal(h.rbin, 8);
    assert_int_equal(h.gr, 125);
    assert_int_equal(h.gc, 125);
    html_heat_free(&h);
    assert_int_equal(html_heat_init(&h, 7, 1), 0);
    assert_int_equal(h.rbin, 1);
    assert_int_equal(h.gr, 7);
    html_heat_free(&h);
}

/* From two tensors: [3, 4] F32, elements 1 ([0, 1]) and 11 ([2, 3]) differ. */
static void test_heat_tensors(void **state)
{
    (void)state;
    uint32_t a[12] = {0}, b[12] = {0};
    b[1] = 0x3f800000u;
    b[11] = 0x00000001u;
    st_tensor ta = {.name = "y", .dtype = ST_F32, .ndim = 2, .shape = {3, 4}, .nelem = 12, .nbytes = 48,
                    .data = (uint8_t *)a};
    st_tensor tb = ta;
    tb.data = (uint8_t *)b;
    html_heat h;
    assert_int_equal(html_heat_from_tensors(&h, &ta, &tb), 0);
    assert_int_equal(h.gr, 3);
    assert_int_equal(h.gc, 4);
    assert_int_equal(h.total, 2);
    assert_int_equal(h.cnt[0 * 4 + 1], 1);
    assert_int_equal(h.cnt[2 * 4 + 3], 1);
    html_heat_free(&h);
    tb.shape[0] = 4;
    tb.shape[1] = 3;
    assert_int_equal(html_heat_from_tensors(&h, &ta, &tb), -1);
}

/* seq over 4 terms is (((+0 + t0) + t1) + t2) + t3 (docs/numerics.md §4:
 * s = +0, then s = step(s, t_i)): four additions, five leaves, eight
 * edges, in fp32 rne; the caption is escaped. */
static void test_tree(void **state)
{
    (void)state;
    nx_point pt;
    nx_err err = {0};
    nx_program *p = NULL;
    assert_int_equal(nx_point_init(&pt, &err), NX_OK);
    assert_int_equal(nx_program_build(&pt, 4, 0, &p, &err), NX_OK);
    html_doc d;
    html_begin(&d, "tree");
    html_tree_svg(&d, p, "{ tree = \"seq\" }", 0);
    char *s = html_end(&d);
    assert_well_formed(s);
    assert_int_equal(count(s, ">+</text>"), 4);
    assert_int_equal(count(s, ">+0</text>"), 1);
    for (int t = 0; t < 4; t++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, ">t%d</text>", t);
        assert_int_equal(count(s, leaf), 1);
    }
    assert_int_equal(count(s, "<line"), 8);
    assert_non_null(strstr(s, "addition in fp32 rne over 4 terms t0..t3"));
    assert_non_null(strstr(s, "{ tree = &quot;seq&quot; } (n = 4;"));
    free(s);
    nx_program_free(p);
    /* 4096 terms pairwise: drawn to a depth that keeps at most 64 leaves
     * (6 levels: 64 triangles of 64 terms each) */
    assert_int_equal(nx_point_set_tree(&pt, "pairwise", "t", &err), NX_OK);
    assert_int_equal(nx_program_build(&pt, 4096, 0, &p, &err), NX_OK);
    html_begin(&d, "tree");
    html_tree_svg(&d, p, "pairwise", 0);
    s = html_end(&d);
    assert_well_formed(s);
    assert_int_equal(count(s, "<g class=\"collapsed\">"), 64);
    assert_int_equal(count(s, ">+</text>"), 63);
    assert_non_null(strstr(s, "a subtree of 64 terms t0..t63, not drawn"));
    assert_non_null(strstr(s, "a subtree of 64 terms t4032..t4095, not drawn"));
    free(s);
    nx_program_free(p);
    nx_point_free(&pt);
}

/* chain(64) with the exact fused adder over 4096 terms: 64 atom nodes in a
 * chain, each a multi-way node of 64 sources and its running value.  Each
 * drawn shows the running value, the first six sources, "+53" (64 - 11)
 * and the last five (12 leaves); the chain is cut where more than 64
 * leaves would be drawn: L levels of atoms give 12 L + 1 leaves (the last
 * running value collapsed), 61 for L = 5, 73 for 6: the last 5 groups are
 * drawn (terms 59 x 64 = 3776 on), group 58 (3712 ...) is not.  The work
 * is bounded however wide the groups. */
static void test_tree_atoms(void **state)
{
    (void)state;
    nx_point pt;
    nx_err err = {0};
    nx_program *p = NULL;
    assert_int_equal(pt_from_text("{ tree = \"chain(64)\", atom = {} }", "t", &pt, &err), NX_OK);
    assert_int_equal(nx_program_build(&pt, 4096, 1, &p, &err), NX_OK);
    html_doc d;
    html_begin(&d, "atoms");
    html_tree_svg(&d, p, "chain", 0);
    char *s = html_end(&d);
    assert_well_formed(s);
    assert_int_equal(count(s, ">atom 64</text>"), 5);
    assert_int_equal(count(s, ">+53</text>"), 5);
    assert_int_equal(count(s, "<g class=\"collapsed\">"), 1);
    assert_non_null(strstr(s, "5 levels of operations drawn"));
    assert_non_null(strstr(s, ">t3776</text>"));
    assert_null(strstr(s, ">t3712</text>"));
    assert_non_null(strstr(s, ">t4095</text>"));
    assert_non_null(strstr(s, ">t4032</text>"));
    assert_non_null(strstr(s, ">t4037</text>"));
    assert_null(strstr(s, ">t4038</text>"));
    free(s);
    nx_program_free(p);
    nx_point_free(&pt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checker),   cmocka_unit_test(test_escape), cmocka_unit_test(test_hostile_page),
        cmocka_unit_test(test_table),     cmocka_unit_test(test_histogram), cmocka_unit_test(test_heat),
        cmocka_unit_test(test_heat_tensors), cmocka_unit_test(test_tree),
        cmocka_unit_test(test_tree_atoms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
