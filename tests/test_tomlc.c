/* test_tomlc.c: the C view of TOML documents (family/tomlc.h).
 *
 * Expected positions are counted by hand from the documents below, expected
 * floats are C literals compared bit for bit; nothing is taken from the code
 * under test. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nx_error.h"
#include "tomlc.h"

/* ---- helpers ---------------------------------------------------------- */

static tc_node *parse_ok(const char *text, const char *name)
{
    tc_node *root = NULL;
    nx_err err = {0};
    nx_status s = tc_parse_string(text, name, &root, &err);
    if (s != NX_OK)
        fail_msg("parse of %s failed: %s", name, err.msg);
    assert_non_null(root);
    return root;
}

/* The child at key, which must exist and be of kind k. */
static const tc_node *child(const tc_node *t, const char *key, tc_kind k)
{
    const tc_node *n = tc_get(t, key);
    if (!n)
        fail_msg("missing key '%s'", key);
    if (n->kind != k)
        fail_msg("key '%s': kind %s, expected %s", key, tc_kind_name(n->kind), tc_kind_name(k));
    return n;
}

static void assert_pos(const tc_node *n, int line, int col, int key_line, int key_col)
{
    if (n->line != line || n->column != col || n->key_line != key_line || n->key_column != key_col)
        fail_msg("'%s': value at %d:%d key at %d:%d, expected value at %d:%d key at %d:%d",
                 n->key ? n->key : "(no key)", n->line, n->column, n->key_line, n->key_column, line,
                 col, key_line, key_col);
}

static void assert_keys(const tc_node *t, const char *const *keys, size_t n)
{
    assert_int_equal(t->kind, TC_TABLE);
    if (t->nitems != n)
        fail_msg("table '%s' has %zu keys, expected %zu", t->key ? t->key : "(root)", t->nitems, n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t->items[i]->key, keys[i]) != 0)
            fail_msg("key %zu is '%s', expected '%s' (document order)", i, t->items[i]->key, keys[i]);
}

static void assert_bits_eq(double got, double want)
{
    uint64_t g, w;
    memcpy(&g, &got, sizeof g);
    memcpy(&w, &want, sizeof w);
    if (g != w)
        fail_msg("got %a (0x%016llx), expected %a (0x%016llx)", got, (unsigned long long)g, want,
                 (unsigned long long)w);
}

/* The message must start with prefix and contain needle (toml++'s own
 * wording is checked by a phrase, not verbatim). */
static void assert_msg(const nx_err *e, const char *prefix, const char *needle)
{
    if (strncmp(e->msg, prefix, strlen(prefix)) != 0)
        fail_msg("message '%s' does not start with '%s'", e->msg, prefix);
    if (needle && !strstr(e->msg, needle))
        fail_msg("message '%s' does not contain '%s'", e->msg, needle);
}

static void parse_fails(const char *text, const char *name, nx_status want, const char *prefix,
                        const char *needle)
{
    tc_node *root = (tc_node *)&root; /* must be reset to NULL */
    nx_err err = {0};
    nx_status s = tc_parse_string(text, name, &root, &err);
    if (s != want)
        fail_msg("status %d (%s), expected %d; message '%s'", s, nx_status_name(s), want, err.msg);
    assert_null(root);
    assert_int_equal(err.code, want);
    assert_msg(&err, prefix, needle);
}

/* ---- tables and order ------------------------------------------------- */

static const char nested_doc[] =
    "zeta = 1\n"            /* 1 */
    "alpha.beta = \"x\"\n"  /* 2 */
    "[srv.http]\n"          /* 3 */
    "port = 8080\n"         /* 4 */
    "[srv]\n"               /* 5 */
    "name = \"s\"\n"        /* 6 */
    "[middle]\n"            /* 7 */
    "k = true\n";           /* 8 */

static void test_nested_tables_keep_document_order(void **state)
{
    (void)state;
    tc_node *root = parse_ok(nested_doc, "nested.toml");
    assert_int_equal(root->kind, TC_TABLE);
    assert_null(root->key);
    assert_string_equal(root->source, "nested.toml");
    /* alphabetical would be alpha, middle, srv, zeta */
    const char *top[] = {"zeta", "alpha", "srv", "middle"};
    assert_keys(root, top, 4);

    const tc_node *alpha = child(root, "alpha", TC_TABLE);
    const tc_node *beta = child(alpha, "beta", TC_STRING);
    assert_string_equal(beta->str, "x");

    const tc_node *srv = child(root, "srv", TC_TABLE);
    const char *srv_keys[] = {"http", "name"};
    assert_keys(srv, srv_keys, 2);
    assert_int_equal(child(child(srv, "http", TC_TABLE), "port", TC_INT)->i, 8080);
    assert_string_equal(child(srv, "name", TC_STRING)->str, "s");
    assert_int_equal(child(child(root, "middle", TC_TABLE), "k", TC_BOOL)->b, 1);
    assert_string_equal(child(srv, "http", TC_TABLE)->source, "nested.toml");
    tc_free(root);
}

static void test_positions_of_values_and_keys(void **state)
{
    (void)state;
    tc_node *root = parse_ok(nested_doc, "nested.toml");
    assert_int_equal(root->line, 0); /* the document itself has no position */
    assert_pos(child(root, "zeta", TC_INT), 1, 8, 1, 1);
    const tc_node *alpha = child(root, "alpha", TC_TABLE);
    assert_pos(alpha, 2, 1, 2, 1);
    assert_pos(child(alpha, "beta", TC_STRING), 2, 14, 2, 7);
    /* srv: key first seen in [srv.http], the table itself opened at [srv] */
    const tc_node *srv = child(root, "srv", TC_TABLE);
    assert_pos(srv, 5, 1, 3, 2);
    const tc_node *http = child(srv, "http", TC_TABLE);
    assert_pos(http, 3, 1, 3, 6);
    assert_pos(child(http, "port", TC_INT), 4, 8, 4, 1);
    assert_pos(child(srv, "name", TC_STRING), 6, 8, 6, 1);
    assert_pos(child(root, "middle", TC_TABLE), 7, 1, 7, 2);
    tc_free(root);
}

static void test_arrays_of_tables(void **state)
{
    (void)state;
    tc_node *root = parse_ok("[[family]]\n"       /* 1 */
                             "name = \"gemv\"\n"  /* 2 */
                             "[family.tile]\n"    /* 3 */
                             "m = 4\n"            /* 4 */
                             "[[family]]\n"       /* 5 */
                             "name = \"gemm\"\n"  /* 6 */
                             "other = 2\n",       /* 7 */
                             "fam.toml");
    const tc_node *fam = child(root, "family", TC_ARRAY);
    assert_pos(fam, 1, 1, 1, 3);
    assert_int_equal(fam->nitems, 2);
    const tc_node *f0 = fam->items[0], *f1 = fam->items[1];
    assert_int_equal(f0->kind, TC_TABLE);
    assert_int_equal(f1->kind, TC_TABLE);
    assert_null(f0->key);
    assert_null(f1->key);
    assert_int_equal(f0->inline_table, 0);
    assert_pos(f0, 1, 1, 0, 0);
    assert_pos(f1, 5, 1, 0, 0);
    const char *k0[] = {"name", "tile"}, *k1[] = {"name", "other"};
    assert_keys(f0, k0, 2);
    assert_keys(f1, k1, 2);
    assert_string_equal(child(f0, "name", TC_STRING)->str, "gemv");
    assert_string_equal(child(f1, "name", TC_STRING)->str, "gemm");
    const tc_node *tile = child(f0, "tile", TC_TABLE);
    assert_pos(tile, 3, 1, 3, 9);
    assert_int_equal(child(tile, "m", TC_INT)->i, 4);
    assert_null(tc_get(f1, "tile"));
    tc_free(root);
}

static void test_inline_tables(void **state)
{
    (void)state;
    tc_node *root = parse_ok(
        "point = { acc = \"fp32\", atom = { frac_bits = 25 }, z.y = 1 }\n"
        "list = [ { a = 1 }, { a = 2 } ]\n"
        "[hdr]\n"
        "x = 1\n",
        "inl.toml");
    assert_int_equal(root->inline_table, 0);
    const tc_node *point = child(root, "point", TC_TABLE);
    assert_int_equal(point->inline_table, 1);
    assert_pos(point, 1, 9, 1, 1);
    const char *pk[] = {"acc", "atom", "z"};
    assert_keys(point, pk, 3);
    const tc_node *atom = child(point, "atom", TC_TABLE);
    assert_int_equal(atom->inline_table, 1);
    assert_int_equal(child(atom, "frac_bits", TC_INT)->i, 25);
    /* z is opened by a dotted key inside the braces: part of the inline value */
    assert_int_equal(child(point, "z", TC_TABLE)->inline_table, 1);
    const tc_node *list = child(root, "list", TC_ARRAY);
    assert_int_equal(list->nitems, 2);
    assert_int_equal(list->items[1]->kind, TC_TABLE);
    assert_int_equal(list->items[1]->inline_table, 1);
    assert_int_equal(child(list->items[1], "a", TC_INT)->i, 2);
    assert_int_equal(child(root, "hdr", TC_TABLE)->inline_table, 0);
    tc_free(root);
}

/* ---- every kind ------------------------------------------------------- */

static void test_every_kind(void **state)
{
    (void)state;
    tc_node *root = parse_ok("s = \"a\\tb\\u00e9\"\n"
                             "lit = 'C:\\path'\n"
                             "ml = \"\"\"\n"
                             "two\n"
                             "lines\"\"\"\n"
                             "neg = -42\n"
                             "hex = 0xff\n"
                             "max = 9223372036854775807\n"
                             "min = -9223372036854775808\n"
                             "f = 1.5e-3\n"
                             "fz = -0.0\n"
                             "fi = -inf\n"
                             "fn = nan\n"
                             "t = true\n"
                             "fa = false\n"
                             "odt = 1979-05-27 07:32:00.500+00:00\n"
                             "odt2 = 1979-05-27T00:32:00.999999-07:00\n"
                             "ldt = 1979-05-27T07:32:00\n"
                             "ld = 1979-05-27\n"
                             "lt = 07:32:00\n"
                             "arr = [1, \"two\", [3.0], { x = 1 }]\n"
                             "empty = []\n"
                             "et = {}\n",
                             "kinds.toml");
    assert_string_equal(child(root, "s", TC_STRING)->str, "a\tb\xc3\xa9");
    assert_string_equal(child(root, "lit", TC_STRING)->str, "C:\\path");
    assert_string_equal(child(root, "ml", TC_STRING)->str, "two\nlines");
    assert_true(child(root, "neg", TC_INT)->i == -42);
    assert_true(child(root, "hex", TC_INT)->i == 255);
    assert_true(child(root, "max", TC_INT)->i == 9223372036854775807LL);
    assert_true(child(root, "min", TC_INT)->i == -9223372036854775807LL - 1);
    assert_bits_eq(child(root, "f", TC_FLOAT)->f, 1.5e-3);
    assert_bits_eq(child(root, "fz", TC_FLOAT)->f, -0.0);
    assert_bits_eq(child(root, "fi", TC_FLOAT)->f, -INFINITY);
    assert_true(isnan(child(root, "fn", TC_FLOAT)->f));
    assert_int_equal(child(root, "t", TC_BOOL)->b, 1);
    assert_int_equal(child(root, "fa", TC_BOOL)->b, 0);
    assert_string_equal(child(root, "odt", TC_DATETIME)->str, "1979-05-27T07:32:00.5Z");
    assert_string_equal(child(root, "odt2", TC_DATETIME)->str, "1979-05-27T00:32:00.999999-07:00");
    assert_string_equal(child(root, "ldt", TC_DATETIME)->str, "1979-05-27T07:32:00");
    assert_string_equal(child(root, "ld", TC_DATETIME)->str, "1979-05-27");
    assert_string_equal(child(root, "lt", TC_DATETIME)->str, "07:32:00");

    const tc_node *arr = child(root, "arr", TC_ARRAY);
    assert_int_equal(arr->nitems, 4);
    assert_int_equal(arr->items[0]->kind, TC_INT);
    assert_null(arr->items[0]->key);
    assert_pos(arr->items[0], 21, 8, 0, 0);
    assert_int_equal(arr->items[1]->kind, TC_STRING);
    assert_string_equal(arr->items[1]->str, "two");
    assert_int_equal(arr->items[2]->kind, TC_ARRAY);
    assert_int_equal(arr->items[2]->nitems, 1);
    assert_bits_eq(arr->items[2]->items[0]->f, 3.0);
    assert_int_equal(arr->items[3]->kind, TC_TABLE);
    assert_int_equal(child(arr->items[3], "x", TC_INT)->i, 1);
    assert_int_equal(child(root, "empty", TC_ARRAY)->nitems, 0);
    assert_int_equal(child(root, "et", TC_TABLE)->nitems, 0);
    assert_int_equal(root->nitems, 21);

    assert_string_equal(tc_kind_name(TC_TABLE), "table");
    assert_string_equal(tc_kind_name(TC_ARRAY), "array");
    assert_string_equal(tc_kind_name(TC_STRING), "string");
    assert_string_equal(tc_kind_name(TC_INT), "integer");
    assert_string_equal(tc_kind_name(TC_FLOAT), "float");
    assert_string_equal(tc_kind_name(TC_BOOL), "boolean");
    assert_string_equal(tc_kind_name(TC_DATETIME), "datetime");
    tc_free(root);
}

/* U+0000 cannot live in a C string: refused rather than cut short. */
static void test_nul_in_string_rejected(void **state)
{
    (void)state;
    parse_fails("ok = 1\ns = \"a\\u0000b\"\n", "nul.toml", NX_EINVAL, "nul.toml:2:5: ", "U+0000");
    parse_fails("\"k\\u0000\" = 1\n", "nul.toml", NX_EINVAL, "nul.toml:1:1: key", "U+0000");
}

/* A quote glued to a value is no string start (toml++ 3.3.0 reached
 * undefined behaviour on the non-ASCII character after it, found by
 * fuzz/fuzz_point.c); a quote after a key's '.' still is one. */
static void test_quote_glued_to_a_value_rejected(void **state)
{
    (void)state;
    parse_fails("s = 3'\xc3\xbd\n", "q.toml", NX_EINVAL, "q.toml:1:6: ", "a quote right after '3'");
    parse_fails("s = true\"\xc3\xbd\"\n", "q.toml", NX_EINVAL, "q.toml:1:9: ", "a quote right after 'e'");
    parse_fails("s = 1.'x'\n", "q.toml", NX_EINVAL, "q.toml:1:7: ", "a quote right after '.'");
    parse_fails("s = 3\x05'\xc3\xbd\n", "q.toml", NX_EINVAL, "q.toml:1:7: ", "a quote right after byte 0x05");
    tc_node *root = NULL;
    nx_err err = {0};
    assert_int_equal(tc_parse_string("a.'b c'.\"d\" = 1\n", "q.toml", &root, &err), NX_OK);
    tc_free(root);
}

/* toml++ is only ever given ASCII (family/tomlc.cpp): non-ASCII text in
 * strings becomes escapes, a literal string holding some becomes the basic
 * string of the same value, comments lose it; the values are the same, and
 * positions are the user's.  Expected values written out by hand. */
static void test_non_ascii_text_keeps_its_value(void **state)
{
    (void)state;
    tc_node *root = parse_ok("# caf\xc3\xa9 \xe2\x82\xac\n"
                             "b = \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\" # \xce\x9a\n"
                             "l = '\xc3\xa9 \"q\" \\n'\n"
                             "ml = '''\n"
                             "\xc3\xa9 \\ \"\"\" ''\n"
                             "x'''''\n"
                             "'k\xc3\xa9' = 1\n"
                             "plain = 'C:\\x'\n",
                             "u.toml");
    assert_string_equal(child(root, "b", TC_STRING)->str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_string_equal(child(root, "l", TC_STRING)->str, "\xc3\xa9 \"q\" \\n");
    assert_string_equal(child(root, "ml", TC_STRING)->str, "\xc3\xa9 \\ \"\"\" ''\nx''");
    assert_int_equal(child(root, "k\xc3\xa9", TC_INT)->i, 1);
    assert_string_equal(child(root, "plain", TC_STRING)->str, "C:\\x");
    /* the position of a key after escapes is counted in characters */
    const tc_node *k = child(root, "k\xc3\xa9", TC_INT);
    assert_int_equal(k->line, 7);
    tc_free(root);
    /* a syntax error after escaped characters: the user's column (x is
     * the 10th character of line 1) */
    parse_fails("s = \"\xc3\xa9\xc3\xa9\" x\n", "c.toml", NX_EINVAL, "c.toml:1:10: ", NULL);
    parse_fails("s = '\xc3\xa9\xc3\xa9' x\n", "c.toml", NX_EINVAL, "c.toml:1:10: ", NULL);
    /* a character after a backslash, invalid UTF-8 in a string or comment */
    parse_fails("s = \"\\\xc3\xa9\"\n", "e.toml", NX_EINVAL, "e.toml:1:7: ", "U+00E9 after '\\'");
    parse_fails("s = \"\xff\"\n", "e.toml", NX_EINVAL, "e.toml:1:6: ", "byte 0xFF (not UTF-8)");
    parse_fails("# \xed\xa0\x80\n", "e.toml", NX_EINVAL, "e.toml:1:3: ", "invalid UTF-8 in a string or comment: U+D800");
    /* inputs on which toml++ 3.3.0 reached TOML_UNREACHABLE, found by
     * fuzz/fuzz_point.c: an error now, whatever this scanner makes of them */
    tc_node *r2 = NULL;
    nx_err err = {0};
    assert_int_equal(tc_parse_inline_table("{s =3.666`{'\xef\xbb\xb7", "f", &r2, &err), NX_EINVAL);
    assert_null(r2);
    assert_int_equal(tc_parse_string("a = '\xce\x9a\n\xce\x9a = 1\n", "f", &r2, &err), NX_EINVAL);
    assert_null(r2);
}

/* ---- errors ----------------------------------------------------------- */

static void test_parse_error_has_line_and_column(void **state)
{
    (void)state;
    parse_fails("a = 1\nb = [1, 2,, 3]\n", "bad.toml", NX_EINVAL, "bad.toml:2:11: ",
                "expected value");
    parse_fails("a = 1\nb = \"unterminated\n", "bad.toml", NX_EINVAL, "bad.toml:2:", NULL);
    parse_fails("x = 1 ; y = 2\n", NULL, NX_EINVAL, "<string>:1:7: ", NULL);
}

static void test_duplicate_keys_rejected(void **state)
{
    (void)state;
    parse_fails("a = 1\na = 2\n", "dup.toml", NX_EINVAL, "dup.toml:2:", "'a'");
    parse_fails("a.b = 1\na.b = 2\n", "dup.toml", NX_EINVAL, "dup.toml:2:", "'a.b'");
    parse_fails("[t]\nx = 1\n[t]\ny = 2\n", "dup.toml", NX_EINVAL, "dup.toml:3:1: ", "'t'");
    parse_fails("t = { a = 1, a = 2 }\n", "dup.toml", NX_EINVAL, "dup.toml:1:", "'a'");
    parse_fails("a = 1\n[a]\n", "dup.toml", NX_EINVAL, "dup.toml:2:1: ", "'a'");
}

static void test_null_arguments(void **state)
{
    (void)state;
    tc_node *root = (tc_node *)&root;
    nx_err err = {0};
    assert_int_equal(tc_parse_string(NULL, "x", &root, &err), NX_EINVAL);
    assert_null(root);
    assert_int_equal(tc_parse_string("a = 1", "x", NULL, &err), NX_EINVAL);
    assert_int_equal(tc_parse_file(NULL, &root, NULL), NX_EINVAL);
    assert_int_equal(tc_parse_inline_table(NULL, "x", &root, &err), NX_EINVAL);
    tc_free(NULL);
}

/* ---- files ------------------------------------------------------------ */

static void test_parse_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_tomlc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char doc[] = "[a]\nb = \"file\"\n";
    assert_int_equal(write(fd, doc, sizeof doc - 1), (ssize_t)(sizeof doc - 1));
    close(fd);

    tc_node *root = NULL;
    nx_err err = {0};
    nx_status s = tc_parse_file(path, &root, &err);
    if (s != NX_OK)
        fail_msg("%s", err.msg);
    const tc_node *b = child(child(root, "a", TC_TABLE), "b", TC_STRING);
    assert_string_equal(b->str, "file");
    assert_string_equal(b->source, path);
    assert_pos(b, 2, 5, 2, 1);
    tc_free(root);

    /* a parse error in a file names the file */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a = 1\n\n  = 2\n", f);
    fclose(f);
    root = (tc_node *)&root;
    assert_int_equal(tc_parse_file(path, &root, &err), NX_EINVAL);
    assert_null(root);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s:3:", path);
    assert_msg(&err, prefix, NULL);

    unlink(path);
    root = (tc_node *)&root;
    assert_int_equal(tc_parse_file(path, &root, &err), NX_EIO);
    assert_null(root);
    assert_int_equal(err.code, NX_EIO);
    assert_msg(&err, path, "cannot open");
}

/* ---- inline tables from the command line ------------------------------ */

static void test_inline_table_text(void **state)
{
    (void)state;
    static const char text[] =
        "{ acc = \"fp32\", tree = \"split(4, seq, seq)\", atom = { frac_bits = 25 } }";
    tc_node *root = NULL;
    nx_err err = {0};
    nx_status s = tc_parse_inline_table(text, "--point", &root, &err);
    if (s != NX_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(root->kind, TC_TABLE);
    assert_null(root->key);
    assert_int_equal(root->inline_table, 1);
    assert_string_equal(root->source, "--point");
    /* columns of text, not of the wrapper `v = ` */
    assert_pos(root, 1, 1, 0, 0);
    const char *keys[] = {"acc", "tree", "atom"};
    assert_keys(root, keys, 3);
    assert_pos(child(root, "acc", TC_STRING), 1, 9, 1, 3);
    assert_pos(child(root, "tree", TC_STRING), 1, 24, 1, 17);
    assert_string_equal(child(root, "tree", TC_STRING)->str, "split(4, seq, seq)");
    const tc_node *atom = child(root, "atom", TC_TABLE);
    assert_int_equal(child(atom, "frac_bits", TC_INT)->i, 25);
    assert_int_equal(atom->inline_table, 1);
    tc_free(root);

    /* leading blanks are kept in the columns */
    assert_int_equal(tc_parse_inline_table("  {a = 1}", "cli", &root, &err), NX_OK);
    assert_pos(root, 1, 3, 0, 0);
    assert_pos(child(root, "a", TC_INT), 1, 8, 1, 4);
    tc_free(root);

    /* a value spanning lines: positions after the first line are not shifted */
    assert_int_equal(tc_parse_inline_table("{ a = [1,\n2] }", "cli", &root, &err), NX_OK);
    assert_pos(child(root, "a", TC_ARRAY)->items[1], 2, 1, 0, 0);
    tc_free(root);

    assert_int_equal(tc_parse_inline_table("{}", "cli", &root, &err), NX_OK);
    assert_int_equal(root->nitems, 0);
    tc_free(root);
}

static void inline_fails(const char *text, const char *prefix, const char *needle)
{
    tc_node *root = (tc_node *)&root;
    nx_err err = {0};
    nx_status s = tc_parse_inline_table(text, "--point", &root, &err);
    if (s != NX_EINVAL)
        fail_msg("'%s': status %d, expected NX_EINVAL; message '%s'", text, s, err.msg);
    assert_null(root);
    assert_msg(&err, prefix, needle);
}

static void test_inline_table_errors_point_into_text(void **state)
{
    (void)state;
    /*                      123456789012345678901234 */
    inline_fails("{ acc = \"fp32\", tree = }", "--point:1:24: ", "expected value");
    inline_fails("{ a = 1, a = 2 }", "--point:1:", "'a'");
    inline_fails("{ a = 1,, }", "--point:1:9: ", NULL);
    inline_fails("acc = \"fp32\"", "--point:1:1: ", "starting with '{'");
    inline_fails("   42", "--point:1:4: ", "starting with '{'");
    inline_fails("", "--point: ", "found nothing");
    inline_fails("{ a = 1 }\nb = 2", "--point:2:1: ", "unexpected key 'b'");
    inline_fails("{ a = 1 } x", "--point:1:11: ", NULL);
    inline_fails("{ a = 1 }\n[v.x]", "--point:2:", NULL);
}

/* ---- lookups and helpers ---------------------------------------------- */

static void test_get_missing_keys(void **state)
{
    (void)state;
    tc_node *root = parse_ok("a = 1\n[t]\nb = [1]\n", "get.toml");
    assert_non_null(tc_get(root, "a"));
    assert_null(tc_get(root, "b")); /* b lives in t, not at top level */
    assert_null(tc_get(root, "A"));
    assert_null(tc_get(root, ""));
    assert_null(tc_get(root, NULL));
    assert_null(tc_get(NULL, "a"));
    const tc_node *t = child(root, "t", TC_TABLE);
    assert_null(tc_get(t, "a"));
    assert_null(tc_get(tc_get(root, "a"), "a")); /* not a table */
    assert_null(tc_get(tc_get(t, "b"), "0"));    /* arrays have no keys */
    tc_free(root);
}

static void test_typed_helpers(void **state)
{
    (void)state;
    tc_node *root = parse_ok("acc = 3\n"
                             "[fam]\n"
                             "name = \"x\"\n"
                             "accc = 1\n"
                             "list = [1, \"two\"]\n",
                             "reg.toml");
    const tc_node *out = root;
    nx_err err = {0};

    assert_int_equal(tc_want(root, "acc", TC_STRING, &out, &err), NX_EINVAL);
    assert_null(out);
    assert_string_equal(err.msg, "reg.toml:1:7: key 'acc' must be a string, found integer");

    assert_int_equal(tc_want(root, "zz", TC_INT, &out, &err), NX_EINVAL);
    assert_string_equal(err.msg, "reg.toml: table is missing key 'zz'");

    const tc_node *fam = child(root, "fam", TC_TABLE);
    assert_int_equal(tc_want(fam, "zz", TC_INT, &out, &err), NX_EINVAL);
    assert_string_equal(err.msg, "reg.toml:2:1: table 'fam' is missing key 'zz'");

    assert_int_equal(tc_want(fam, "name", TC_STRING, &out, &err), NX_OK);
    assert_non_null(out);
    assert_string_equal(out->str, "x");

    const tc_node *list = child(fam, "list", TC_ARRAY);
    assert_int_equal(tc_check_kind(list->items[0], TC_INT, &err), NX_OK);
    assert_int_equal(tc_check_kind(list->items[1], TC_INT, &err), NX_EINVAL);
    assert_string_equal(err.msg, "reg.toml:5:12: value must be an integer, found string");

    const char *allowed[] = {"name", "list", NULL};
    assert_int_equal(tc_check_keys(fam, allowed, &err), NX_EINVAL);
    assert_string_equal(err.msg, "reg.toml:4:1: unknown key 'accc'");
    const char *all[] = {"name", "list", "accc", NULL};
    assert_int_equal(tc_check_keys(fam, all, &err), NX_OK);

    assert_int_equal(tc_errf(&err, NX_EUNSUPPORTED, child(fam, "name", TC_STRING),
                             "unknown accumulator '%s'", "x"),
                     NX_EUNSUPPORTED);
    assert_int_equal(err.code, NX_EUNSUPPORTED);
    assert_string_equal(err.msg, "reg.toml:3:8: unknown accumulator 'x'");
    tc_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_tables_keep_document_order),
        cmocka_unit_test(test_positions_of_values_and_keys),
        cmocka_unit_test(test_arrays_of_tables),
        cmocka_unit_test(test_inline_tables),
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_nul_in_string_rejected),
        cmocka_unit_test(test_quote_glued_to_a_value_rejected),
        cmocka_unit_test(test_non_ascii_text_keeps_its_value),
        cmocka_unit_test(test_parse_error_has_line_and_column),
        cmocka_unit_test(test_duplicate_keys_rejected),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_parse_file),
        cmocka_unit_test(test_inline_table_text),
        cmocka_unit_test(test_inline_table_errors_point_into_text),
        cmocka_unit_test(test_get_missing_keys),
        cmocka_unit_test(test_typed_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
