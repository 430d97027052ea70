/* tier3.c: metrics against declared bars (tier3.h). */
#include "tier3.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare.h"
#include "nx_limits.h"
#include "nx_sbuf.h"
#include "report_json.h"

/* A metric's value: a JSON number, or one of the strings "nan", "inf",
 * "-inf" (JSON has no non-finite number; tier3_number_json writes them so);
 * 0 when v is neither. */
static int number_of(const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    const char *t = json_string_value(v);
    if (t && !strcmp(t, "nan"))
        *out = NAN;
    else if (t && !strcmp(t, "inf"))
        *out = INFINITY;
    else if (t && !strcmp(t, "-inf"))
        *out = -INFINITY;
    else
        return 0;
    return 1;
}

json_t *tier3_number_json(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static nx_status parse_bar(const char *bars_name, const char *key, const json_t *v, tier3_item *it,
                           nx_err *err)
{
    if (number_of(v, &it->min)) {
        it->has_min = 1;
        return NX_OK;
    }
    if (!json_is_object(v))
        return nx_err_set(err, NX_EINVAL,
                          "%s: key \"%s\": the bar is %s, not a number (a minimum) or an object "
                          "with \"min\" and/or \"max\"",
                          bars_name, key, rj_kind(v));
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        double *slot = strcmp(k, "min") == 0 ? &it->min : strcmp(k, "max") == 0 ? &it->max : NULL;
        if (!slot)
            return nx_err_set(err, NX_EINVAL, "%s: key \"%s\": unknown bar key \"%s\" (min or max)",
                              bars_name, key, k);
        if (!number_of(x, slot))
            return nx_err_set(err, NX_EINVAL, "%s: key \"%s\": \"%s\" is %s, not a number", bars_name,
                              key, k, rj_kind(x));
        if (slot == &it->min)
            it->has_min = 1;
        else
            it->has_max = 1;
    }
    if (!it->has_min && !it->has_max)
        return nx_err_set(err, NX_EINVAL, "%s: key \"%s\": the bar has neither \"min\" nor \"max\"",
                          bars_name, key);
    if (it->has_min && it->has_max && it->min > it->max)
        return nx_err_set(err, NX_EINVAL, "%s: key \"%s\": min %g is above max %g", bars_name, key,
                          it->min, it->max);
    return NX_OK;
}

nx_status tier3_check_json(const char *metrics_name, const json_t *metrics, const char *bars_name,
                           const json_t *bars, tier3_result *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(metrics))
        return nx_err_set(err, NX_EINVAL, "%s: the metrics are %s, not an object of name -> number",
                          metrics_name, rj_kind(metrics));
    if (!json_is_object(bars))
        return nx_err_set(err, NX_EINVAL, "%s: the bars are %s, not an object of name -> bar", bars_name,
                          rj_kind(bars));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)metrics, key, v) {
        double x;
        if (!number_of(v, &x))
            return nx_err_set(err, NX_EINVAL, "%s: key \"%s\": the metric is %s, not a number (nor \"nan\", \"inf\", "
                              "\"-inf\")", metrics_name, key, rj_kind(v));
    }
    size_t n = json_object_size(bars);
    if (n == 0)
        return nx_err_set(err, NX_EINVAL, "%s: no bars (a Tier 3 check needs at least one)", bars_name);
    out->metrics_name = strdup(metrics_name);
    out->bars_name = strdup(bars_name);
    out->items = calloc(n, sizeof *out->items);
    if (!out->metrics_name || !out->bars_name || !out->items) {
        tier3_result_free(out);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    nx_status st = NX_OK;
    json_object_foreach((json_t *)bars, key, v) {
        tier3_item *it = &out->items[out->n++];
        if (!(it->name = strdup(key))) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        if ((st = parse_bar(bars_name, key, v, it, err)))
            break;
        const json_t *m = json_object_get(metrics, key);
        it->present = m != NULL;
        if (m)
            number_of(m, &it->value);
        it->pass = it->present && (!it->has_min || it->value >= it->min) &&
                   (!it->has_max || it->value <= it->max);
        out->passed += it->pass;
        out->failed += !it->pass;
        out->missing += !it->present;
    }
    if (st) {
        tier3_result_free(out);
        return st;
    }
    json_object_foreach((json_t *)metrics, key, v) {
        if (!json_object_get(bars, key))
            out->unchecked++;
    }
    return NX_OK;
}

static nx_status load(const char *path, json_t **out, nx_err *err)
{
    json_error_t je;
    *out = NULL;
    nx_status st = nx_limits_file(path, 64, "a JSON tree", err); /* docs/limits.md */
    if (st)
        return st;
    struct stat sb;
    if (stat(path, &sb) == 0 && (st = nx_check_input(path, err))) /* a FIFO: refused, not waited on */
        return st;
    *out = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (*out)
        return NX_OK;
    if (json_error_code(&je) == json_error_cannot_open_file)
        return nx_err_set(err, NX_EIO, "%s: %s", path, je.text);
    return nx_err_set(err, NX_EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
}

nx_status tier3_check_files(const char *metrics_path, const char *bars_path, tier3_result *out,
                            nx_err *err)
{
    json_t *m = NULL, *b = NULL;
    memset(out, 0, sizeof *out);
    nx_status st = load(metrics_path, &m, err);
    if (st == NX_OK && (st = load(bars_path, &b, err)) == NX_OK)
        st = tier3_check_json(metrics_path, m, bars_path, b, out, err);
    json_decref(m);
    json_decref(b);
    return st;
}

int tier3_pass(const tier3_result *r)
{
    return r->n > 0 && r->failed == 0;
}

void tier3_result_free(tier3_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].name);
    free(r->items);
    free(r->metrics_name);
    free(r->bars_name);
    memset(r, 0, sizeof *r);
}

static void put_bar(nx_sbuf *b, const tier3_item *it)
{
    char x[32];
    nx_sbuf_put(b, "(", 1);
    if (it->has_min) {
        cmp_num_text(x, sizeof x, it->min);
        nx_sbuf_printf(b, "min %s", x);
    }
    if (it->has_max) {
        cmp_num_text(x, sizeof x, it->max);
        nx_sbuf_printf(b, "%smax %s", it->has_min ? ", " : "", x);
    }
    nx_sbuf_put(b, ")", 1);
}

char *tier3_result_text(const tier3_result *r)
{
    nx_sbuf b = {0};
    char x[32];
    nx_sbuf_printf(&b, "Tier 3: %s against %s: %zu / %zu bars met", r->metrics_name, r->bars_name,
                   r->passed, r->n);
    if (r->missing)
        nx_sbuf_printf(&b, ", %zu metrics missing", r->missing);
    if (r->unchecked)
        nx_sbuf_printf(&b, ", %zu metrics without a bar", r->unchecked);
    nx_sbuf_put(&b, "\n", 1);
    for (size_t i = 0; i < r->n; i++) {
        const tier3_item *it = &r->items[i];
        nx_sbuf_printf(&b, "%s %s: ", it->pass ? "pass" : "FAIL", it->name);
        if (it->present) {
            cmp_num_text(x, sizeof x, it->value);
            nx_sbuf_printf(&b, "%s ", x);
        } else {
            nx_sbuf_printf(&b, "missing from %s ", r->metrics_name);
        }
        put_bar(&b, it);
        nx_sbuf_put(&b, "\n", 1);
    }
    return nx_sbuf_take(&b);
}

static json_t *item_json(const tier3_item *it)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int ok = 1;
    rj_set(o, "name", json_string(it->name), &ok);
    rj_set(o, "present", json_boolean(it->present), &ok);
    rj_set(o, "value", it->present ? tier3_number_json(it->value) : json_null(), &ok);
    if (it->has_min)
        rj_set(o, "min", json_real(it->min), &ok);
    if (it->has_max)
        rj_set(o, "max", json_real(it->max), &ok);
    rj_set(o, "pass", json_boolean(it->pass), &ok);
    return rj_done(o, ok);
}

json_t *tier3_result_json(const tier3_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int ok = 1;
    rj_set(o, "metrics", json_string(r->metrics_name), &ok);
    rj_set(o, "bars", json_string(r->bars_name), &ok);
    rj_set(o, "pass", json_boolean(tier3_pass(r)), &ok);
    rj_set(o, "bars_met", json_integer((json_int_t)r->passed), &ok);
    rj_set(o, "bars_failed", json_integer((json_int_t)r->failed), &ok);
    rj_set(o, "metrics_missing", json_integer((json_int_t)r->missing), &ok);
    rj_set(o, "metrics_unchecked", json_integer((json_int_t)r->unchecked), &ok);
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->n; i++)
        if (json_array_append_new(a, item_json(&r->items[i])) != 0)
            ok = 0;
    rj_set(o, "items", a, &ok);
    return rj_done(o, ok);
}
