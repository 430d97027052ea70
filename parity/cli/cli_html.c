/* cli_html.c: the --html reports of `parity check` and `parity campaign`
 * (docs/reports.md), drawn with parity/html/.  check's page is drawn from
 * the JSON object that --json writes, so the two reports carry the same
 * numbers; campaign's from the results that its JSON is made of. */
#include "safetensors.h"
#include "cli.h"
#include "cli_html.h"
#include "html.h"
#include "nx_program.h"
#include "point_toml.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A histogram of an object {"0": n, "1": n, ...} in key order (a
 * cmp_result_json's "ulp_histogram"). */
static void hist_json(html_doc *d, const char *title, const json_t *h)
{
    if (!json_is_object(h) || json_object_size(h) == 0 || json_object_size(h) > 32)
        return;
    const char *labels[32];
    size_t counts[32];
    int nb = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)h, k, v)
    {
        labels[nb] = k;
        counts[nb++] = json_is_integer(v) ? (size_t)json_integer_value(v) : 0;
    }
    html_histogram_svg(d, title, labels, counts, nb);
}

static long long jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_object(v))
        v = json_object_get(v, "value");
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static nx_status write_page(const char *path, html_doc *d, nx_err *err)
{
    char *text = html_end(d);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = st_write_text_atomic(path, text, err);
    free(text);
    return st;
}

nx_status cli_html_check(const char *path, const json_t *root, const struct html_heat *const *heats, size_t nheats,
                         nx_err *err)
{
    const json_t *jt = json_object_get(root, "traces"), *jp = json_object_get(root, "tier1"),
                 *jx = json_object_get(root, "parity");
    size_t n = json_array_size(jt) + json_array_size(jp) + json_array_size(jx);
    html_verdict_row *rows = calloc(n ? n : 1, sizeof *rows);
    char (*what)[640] = calloc(n ? n : 1, sizeof *what);
    if (!rows || !what) {
        free(rows);
        free(what);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t k = 0, i;
    json_t *o;
    json_array_foreach(jt, i, o)
    {
        const json_t *c = json_object_get(o, "compare");
        snprintf(what[k], sizeof what[k], "%s (%s, class %s)", jstr(o, "trace"), jstr(o, "point"), jstr(o, "class"));
        rows[k] = (html_verdict_row){what[k], "Tier 2", jstr(o, "verdict"), jint(c, "mismatched"), jint(c, "n"),
                                     jint(c, "max_ulp"), jstr(o, "detail")};
        k++;
    }
    json_array_foreach(jp, i, o)
    {
        snprintf(what[k], sizeof what[k], "%s vs %s", jstr(o, "a"), jstr(o, "b"));
        rows[k] = (html_verdict_row){what[k], jstr(o, "check"), jstr(o, "verdict"), -1, -1, -1, jstr(o, "detail")};
        k++;
    }
    json_array_foreach(jx, i, o)
    {
        snprintf(what[k], sizeof what[k], "%s: %s vs %s", jstr(o, "point"), jstr(o, "a"), jstr(o, "b"));
        rows[k] = (html_verdict_row){what[k], "parity", jstr(o, "verdict"), -1, -1, -1, jstr(o, "detail")};
        k++;
    }
    html_doc d;
    char title[160];
    snprintf(title, sizeof title, "parity check: %zu trace(s), %lld failed", json_array_size(jt),
             jint(root, "failed"));
    html_begin(&d, title);
    html_heading(&d, 2, "Verdicts");
    html_verdict_table(&d, rows, k);
    free(rows);
    free(what);
    html_heading(&d, 2, "Tier 2: each trace against its reference (ulp histogram; where the bits differ)");
    json_array_foreach(jt, i, o)
    {
        if (i >= 64) {
            html_para(&d, "(the first 64 traces are drawn)");
            break;
        }
        const json_t *c = json_object_get(o, "compare");
        char t[512];
        snprintf(t, sizeof t, "%s: output %s", jstr(o, "trace"), jstr(c, "format"));
        hist_json(&d, t, json_object_get(c, "ulp_histogram"));
        if (i < nheats && heats[i] && heats[i]->total) {
            snprintf(t, sizeof t, "%s: elements whose bits differ from the reference", jstr(o, "trace"));
            html_heat_svg(&d, heats[i], t, "rows", "columns");
        }
    }
    return write_page(path, &d, err);
}

nx_status cli_html_campaign(const char *path, const camp_result *r, size_t n, const char *title, nx_err *err)
{
    html_verdict_row *rows = calloc(n * CK_COUNT + 1, sizeof *rows);
    if (!rows)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    size_t k = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error) {
            rows[k++] = (html_verdict_row){x->id, "-", "error", -1, -1, -1, x->errmsg};
            continue;
        }
        for (int c = 0; c < CK_COUNT; c++) {
            if (c == CK_PARITY && !x->against[0])
                continue;
            const camp_check *ck = &x->checks[c];
            const char *v = ck->verdict == CV_PASS ? "pass" : ck->verdict == CV_FAIL ? "fail" : "skip";
            failed += ck->verdict == CV_FAIL;
            html_verdict_row row = {x->id, camp_check_name(c), v, -1, -1, -1, ck->detail};
            if (c == CK_TIER2) {
                row.mismatches = (long long)x->t2.mismatched;
                row.n = (long long)x->t2.n;
                row.max_ulp = x->t2.max_ulp_index == CMP_NO_INDEX ? -1 : (long long)x->t2.max_ulp;
            }
            rows[k++] = row;
        }
    }
    html_doc d;
    html_begin(&d, title);
    char summary[160];
    snprintf(summary, sizeof summary, "%zu point(s), %zu failed check(s)", n, failed);
    html_para(&d, summary);
    html_heading(&d, 2, "Verdicts");
    html_verdict_table(&d, rows, k);
    free(rows);
    html_heading(&d, 2, "ulp histograms (Tier 2: each point against its exact reference)");
    size_t drawn = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error || !x->t2.n)
            continue;
        if (drawn++ == 64) {
            html_para(&d, "(the first 64 points are drawn)");
            break;
        }
        const char *labels[CMP_HIST_NBUCKETS];
        for (int b = 0; b < CMP_HIST_NBUCKETS; b++)
            labels[b] = cmp_hist_bucket_name(b);
        char t[512];
        snprintf(t, sizeof t, "%s: output %s, %s", x->id, x->t2_output, x->shape);
        html_histogram_svg(&d, t, labels, x->t2.hist, CMP_HIST_NBUCKETS);
    }
    /* the grid as check draws it: leading axes flattened into rows, the
     * last axis the columns */
    html_heading(&d, 2, "Heat maps (Tier 2: the elements whose bits differ from the exact reference)");
    size_t maps = 0, differ = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error || !x->t2.bits_differ)
            continue;
        differ++;
        char t[512];
        if (!x->t2_diff) {
            snprintf(t, sizeof t, "%s: heat map left out for size: its %zu mismatching element(s) are more than "
                     "the campaign could still keep (%zu Mi mismatching elements in all, for every point)", x->id,
                     x->t2.bits_differ, CLI_HTML_HEAT_BUDGET >> 20);
            html_para(&d, t);
            continue;
        }
        if (maps++ == 64) {
            html_para(&d, "(the first 64 heat maps are drawn)");
            break;
        }
        int64_t cols = x->t2_cols > 0 ? x->t2_cols : 1;
        html_heat h;
        if (html_heat_init(&h, (int64_t)(x->t2.n / (size_t)cols), cols) != 0) {
            html_free(&d);
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        }
        for (size_t k = 0; k < x->t2_ndiff; k++)
            html_heat_add(&h, (int64_t)(x->t2_diff[k] / (uint64_t)cols), (int64_t)(x->t2_diff[k] % (uint64_t)cols));
        snprintf(t, sizeof t, "%s: output %s, %s: elements whose bits differ from the reference", x->id, x->t2_output,
                 x->shape);
        html_heat_svg(&d, &h, t, "rows", "columns");
        html_heat_free(&h);
    }
    if (!differ)
        html_para(&d, "No heat map: no point's Tier 2 output differs from its reference in any bit.");
    return write_page(path, &d, err);
}

/* The row classes of a reveal (docs/reveal.md "Row classes"): a table of
 * selector, row indices and order, then each class's tree drawn. */
static void reveal_classes(html_doc *d, const rv_result *res)
{
    char h[192];
    int w = snprintf(h, sizeof h, "Row classes (rows probed at every index of %zu", res->probe_rows);
    for (size_t i = 0; i < res->rows_nR && w > 0 && (size_t)w < sizeof h; i++)
        w += snprintf(h + w, sizeof h - (size_t)w, "%s%zu", i ? ", " : "; selectors held at R = ", res->rows_R[i]);
    if (w > 0 && (size_t)w < sizeof h)
        snprintf(h + w, sizeof h - (size_t)w, ")");
    html_heading(d, 2, h);
    html_raw(d, "<table><tr><th>class</th><th>select</th><th>row indices</th><th>order</th></tr>\n");
    for (size_t c = 0; c < res->nclass; c++) {
        size_t cnt = 0;
        for (size_t r = 0; r < res->probe_rows; r++)
            cnt += res->row_class && res->row_class[r] == (int)c;
        html_rawf(d, "<tr><td>%zu</td><td>", c);
        html_esc(d, res->class_select[c] ? res->class_select[c] : "(every other row: the point's own tree)");
        html_rawf(d, "</td><td>%zu of %zu</td><td>", cnt, res->probe_rows);
        html_esc(d, res->class_tree[c] ? res->class_tree[c] : "?");
        html_raw(d, "</td></tr>\n");
    }
    html_raw(d, "</table>\n");
    for (size_t c = 1; c < res->nclass; c++) {
        nx_point pt;
        nx_program *p = NULL;
        nx_err e = {0};
        if (!res->class_tree[c] || nx_point_init(&pt, &e) != NX_OK)
            continue;
        if (nx_point_set_tree(&pt, res->class_tree[c], "order", &e) == NX_OK &&
            nx_program_build(&pt, res->n, 1, &p, &e) == NX_OK) {
            char cap[512];
            snprintf(cap, sizeof cap, "class %zu (%s): %s", c, res->class_select[c] ? res->class_select[c] : "",
                     res->class_tree[c]);
            html_tree_svg(d, p, cap, 0);
        }
        nx_program_free(p);
        nx_point_free(&pt);
    }
}

nx_status cli_html_reveal(const char *path, const char *kernel, const rv_result *res, size_t calls, size_t probes,
                          int rc, nx_err *err)
{
    html_doc d;
    char title[512];
    snprintf(title, sizeof title, "parity reveal %s", kernel);
    html_begin(&d, title);
    char n[32], ord[96], ari[96], all[96], conf[128];
    snprintf(n, sizeof n, "%zu", res->n);
    snprintf(ord, sizeof ord, "%zu rows in %zu calls", res->order_probes, res->order_calls);
    snprintf(ari, sizeof ari, "%zu rows in %zu calls", res->arith_probes, res->arith_calls);
    snprintf(all, sizeof all, "%zu rows in %zu calls", probes, calls);
    if (res->confirm_rows)
        snprintf(conf, sizeof conf, "reproduced %zu of %zu fresh random rows; %zu other points fit the fitted rows",
                 res->confirm_ok, res->confirm_rows, res->alternatives);
    else
        snprintf(conf, sizeof conf, "not confirmed (no point, or the order only)");
    const char *const facts[][2] = {{"kernel", kernel},
                                    {"n (terms per row)", n},
                                    {"order", res->tree_text ? res->tree_text : "no tree of the language names it"},
                                    {"order probes", ord},
                                    {"arithmetic probes", ari},
                                    {"probes in all", all},
                                    {"confidence", conf},
                                    {"point", res->point ? res->point : "none"}};
    html_facts(&d, facts, 8);
    html_heading(&d, 2, "Verdict");
    html_verdict_row row = {kernel,
                            "reveal",
                            rc != 0 ? "fail" : res->point ? "pass: revealed and confirmed" : "pass: the order revealed",
                            res->confirm_rows ? (long long)(res->confirm_rows - res->confirm_ok) : -1,
                            res->confirm_rows ? (long long)res->confirm_rows : -1,
                            -1,
                            res->point     ? res->point
                            : res->tree_text ? "the order only: no point of the space fits, or --order-only"
                                           : "the probes reveal no tree that the language names"};
    html_verdict_table(&d, &row, 1);
    html_heading(&d, 2, "The revealed tree");
    nx_point pt;
    nx_program *p = NULL;
    int have = 0;
    nx_err e2 = {0};
    if (res->point && pt_from_text(res->point, "point", &pt, &e2) == NX_OK)
        have = 1;
    else if (res->tree_text && nx_point_init(&pt, &e2) == NX_OK) {
        have = 1;
        if (nx_point_set_tree(&pt, res->tree_text, "order", &e2) != NX_OK) {
            nx_point_free(&pt);
            have = 0;
        }
    }
    if (have && nx_program_build(&pt, res->n, 1, &p, &e2) == NX_OK)
        html_tree_svg(&d, p, res->point ? res->point : res->tree_text, 0);
    else if (res->tree.count) {
        char *br = rv_tree_text(&res->tree);
        html_para(&d, "(not drawn: no point of the language spells it; the bracketing, a fused node in [ ]:)");
        html_para(&d, br ? br : "?");
        free(br);
    } else {
        html_para(&d, "(no tree revealed)");
    }
    nx_program_free(p);
    if (have)
        nx_point_free(&pt);
    if (res->nclass > 1)
        reveal_classes(&d, res);
    return write_page(path, &d, err);
}
