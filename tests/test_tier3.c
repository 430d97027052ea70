/* test_tier3.c: metrics against declared bars (parity/check/tier3.h).
 *
 * Metrics and bars are written inline; which bar passes is decided here by
 * hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier3.h"

static json_t *js(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (!v)
        print_error("test JSON: %s\n", je.text);
    assert_non_null(v);
    return v;
}

static nx_status check(const char *metrics, const char *bars, tier3_result *r, nx_err *e)
{
    json_t *m = js(metrics), *b = js(bars);
    nx_status st = tier3_check_json("m.json", m, "b.json", b, r, e);
    json_decref(m);
    json_decref(b);
    return st;
}

static void bad(const char *metrics, const char *bars, const char *want)
{
    tier3_result r;
    nx_err e = {0};
    assert_int_equal(check(metrics, bars, &r, &e), NX_EINVAL);
    if (strcmp(e.msg, want) != 0) {
        print_error("got  \"%s\"\nwant \"%s\"\n", e.msg, want);
        fail();
    }
    assert_int_equal(r.n, 0);
}

static void test_min_max_missing(void **state)
{
    (void)state;
    tier3_result r;
    nx_err e = {0};
    assert_int_equal(check("{\"acc\": 0.71, \"ppl\": 9.2, \"extra\": 1}",
                           "{\"acc\": 0.7, \"ppl\": {\"max\": 8.5}, \"f1\": {\"min\": 0.5, \"max\": 1}}", &r,
                           &e),
                     NX_OK);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.items[0].name, "acc");
    assert_true(r.items[0].has_min && !r.items[0].has_max); /* a number is a minimum */
    assert_true(r.items[0].pass);
    assert_false(r.items[1].pass); /* 9.2 > 8.5 */
    assert_true(r.items[1].present);
    assert_string_equal(r.items[2].name, "f1");
    assert_false(r.items[2].present);
    assert_false(r.items[2].pass);
    assert_int_equal(r.passed, 1);
    assert_int_equal(r.failed, 2);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.unchecked, 1);
    assert_false(tier3_pass(&r));

    char *text = tier3_result_text(&r);
    assert_non_null(text);
    assert_string_equal(text, "Tier 3: m.json against b.json: 1 / 3 bars met, 1 metrics missing, 1 "
                              "metrics without a bar\n"
                              "pass acc: 0.71 (min 0.7)\n"
                              "FAIL ppl: 9.2 (max 8.5)\n"
                              "FAIL f1: missing from m.json (min 0.5, max 1.0)\n");
    free(text);

    json_t *j = tier3_result_json(&r);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "pass")));
    assert_int_equal(json_integer_value(json_object_get(j, "metrics_missing")), 1);
    json_t *items = json_object_get(j, "items");
    assert_int_equal(json_array_size(items), 3);
    json_t *f1 = json_array_get(items, 2);
    assert_string_equal(json_string_value(json_object_get(f1, "name")), "f1");
    assert_true(json_is_null(json_object_get(f1, "value")));
    assert_true(json_real_value(json_object_get(f1, "max")) == 1.0);
    json_decref(j);
    tier3_result_free(&r);
}

/* A metric JSON cannot write as a number ("nan", "inf", "-inf") is present
 * and fails every bar; the JSON report carries it back as the same string. */
static void test_non_finite(void **state)
{
    (void)state;
    tier3_result r;
    assert_int_equal(check("{\"gap\": \"nan\", \"hi\": \"inf\", \"lo\": \"-inf\"}",
                           "{\"gap\": {\"max\": 0.05}, \"hi\": {\"min\": 0}, \"lo\": {\"max\": 0}}", &r, NULL),
                     NX_OK);
    assert_true(r.items[0].present);
    assert_false(r.items[0].pass); /* NaN meets no bar */
    assert_true(r.items[1].pass);  /* inf >= 0 */
    assert_true(r.items[2].pass);  /* -inf <= 0 */
    assert_int_equal(r.missing, 0);
    json_t *j = tier3_result_json(&r);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "value")),
                        "nan");
    json_decref(j);
    tier3_result_free(&r);
}

static void test_bounds_inclusive(void **state)
{
    (void)state;
    tier3_result r;
    /* equal to the bar passes, on both sides; integers are numbers */
    assert_int_equal(check("{\"acc\": 0.7, \"n\": 3}",
                           "{\"acc\": {\"min\": 0.7, \"max\": 0.7}, \"n\": {\"max\": 3}}", &r, NULL),
                     NX_OK);
    assert_true(tier3_pass(&r));
    assert_int_equal(r.passed, 2);
    tier3_result_free(&r);
    /* one double below the minimum fails */
    assert_int_equal(check("{\"acc\": 0.69999999999999996}", "{\"acc\": 0.7}", &r, NULL), NX_OK);
    assert_true(tier3_pass(&r)); /* the same double as 0.7 */
    tier3_result_free(&r);
    assert_int_equal(check("{\"acc\": 0.69999999999999984}", "{\"acc\": 0.7}", &r, NULL), NX_OK);
    assert_false(tier3_pass(&r));
    tier3_result_free(&r);
    assert_int_equal(check("{\"loss\": 2.0000000000000004}", "{\"loss\": {\"max\": 2}}", &r, NULL), NX_OK);
    assert_false(tier3_pass(&r));
    tier3_result_free(&r);
}

static void test_errors(void **state)
{
    (void)state;
    bad("{\"acc\": \"high\"}", "{\"acc\": 0.7}", "m.json: key \"acc\": the metric is a string, not a number (nor \"nan\", \"inf\", \"-inf\")");
    bad("[0.7]", "{\"acc\": 0.7}", "m.json: the metrics are an array, not an object of name -> number");
    bad("{\"acc\": 0.7}", "0.7", "b.json: the bars are a real number, not an object of name -> bar");
    bad("{\"acc\": 0.7}", "{}", "b.json: no bars (a Tier 3 check needs at least one)");
    bad("{\"acc\": 0.7}", "{\"acc\": {\"mn\": 0.5}}", "b.json: key \"acc\": unknown bar key \"mn\" (min or max)");
    bad("{\"acc\": 0.7}", "{\"acc\": {}}", "b.json: key \"acc\": the bar has neither \"min\" nor \"max\"");
    bad("{\"acc\": 0.7}", "{\"acc\": {\"min\": \"0.5\"}}", "b.json: key \"acc\": \"min\" is a string, not a number");
    bad("{\"acc\": 0.7}", "{\"acc\": {\"min\": 0.9, \"max\": 0.8}}", "b.json: key \"acc\": min 0.9 is above max 0.8");
    bad("{\"acc\": 0.7}", "{\"acc\": [0.5]}",
        "b.json: key \"acc\": the bar is an array, not a number (a minimum) or an object with \"min\" "
        "and/or \"max\"");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_tier3_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char m[128], b[128], none[128];
    snprintf(m, sizeof m, "%s/metrics.json", dir);
    snprintf(b, sizeof b, "%s/bars.json", dir);
    snprintf(none, sizeof none, "%s/none.json", dir);
    write_file(m, "{\"acc\": 0.8}\n");
    write_file(b, "{\"acc\": 0.75}\n");
    tier3_result r;
    nx_err e = {0};
    assert_int_equal(tier3_check_files(m, b, &r, &e), NX_OK);
    assert_true(tier3_pass(&r));
    assert_string_equal(r.metrics_name, m);
    tier3_result_free(&r);

    assert_int_equal(tier3_check_files(m, none, &r, &e), NX_EIO);
    assert_non_null(strstr(e.msg, none));

    write_file(b, "{\"acc\": 0.75,\n \"acc\": 0.5}\n");
    assert_int_equal(tier3_check_files(m, b, &r, &e), NX_EINVAL);
    char want[200];
    snprintf(want, sizeof want, "%s:2:", b);
    if (strncmp(e.msg, want, strlen(want)) != 0) {
        print_error("%s\n", e.msg);
        fail();
    }
    assert_non_null(strstr(e.msg, "duplicate"));

    write_file(m, "{\"acc\": 0.8,}\n");
    assert_int_equal(tier3_check_files(m, b, &r, &e), NX_EINVAL);
    snprintf(want, sizeof want, "%s:1:", m);
    assert_true(strncmp(e.msg, want, strlen(want)) == 0);

    unlink(m);
    unlink(b);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_max_missing),
        cmocka_unit_test(test_bounds_inclusive),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
