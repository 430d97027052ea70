/* report.c: renders campaign results: a terminal table (one line per point,
 * the details of every failure below it), JSON (jansson) and JUnit XML (one
 * testcase per point and check, so CI systems show each verdict). */
#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nx_sbuf.h"
#include "safetensors.h"

static const char *mark(const camp_check *c)
{
    switch (c->verdict) {
    case CV_PASS: return c->negative ? "ok(neg)" : "ok";
    case CV_FAIL: return "FAIL";
    default: return "skip";
    }
}

void report_indent(FILE *f, const char *text, int indent)
{
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        if (len)
            fprintf(f, "%*s%.*s\n", indent, "", len, p);
        p = e ? e + 1 : p + len;
    }
}

void report_table(FILE *f, const camp_result *r, size_t n, const report_meta *m)
{
    fprintf(f, "\nparity campaign: class %s, backend %s, shapes %s, seed %llu, %s inputs, reference engine %s\n",
            m->class_name, m->backend, m->preset, m->seed, m->dist, m->engine);
    if (m->against)
        fprintf(f, "cross-class parity against class %s\n", m->against);
    fprintf(f, "%-40s %-8s %-8s %-8s %-8s %-9s %s%-8s %9s %8s\n", "family.point", "determ", "eag/gra", "new/leg",
            "rows", "tier2", m->against ? "parity    " : "", "max ulp", "run s", "ref s");
    size_t pass = 0, fail = 0, skip = 0, err = 0, berr = 0;
    double tg = 0, tr = 0, tf = 0, tc = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        tg += x->t_gen;
        tr += x->t_run;
        tf += x->t_ref;
        tc += x->t_cmp;
        if (x->error) {
            fprintf(f, "%-40s ERROR: %s\n", x->id, x->errmsg);
            if (x->backend_error)
                berr++;
            else
                err++;
            continue;
        }
        char ulp[24] = "-";
        if (x->checks[CK_TIER2].verdict != CV_SKIP)
            snprintf(ulp, sizeof ulp, "%llu", (unsigned long long)x->t2.max_ulp);
        /* parity: "yes" bits equal at one point, "declared" the points
         * differ (not a failure), else the verdict */
        const camp_check *pc = &x->checks[CK_PARITY];
        char par[16] = "";
        if (m->against)
            snprintf(par, sizeof par, "%-9s ",
                     pc->verdict == CV_PASS ? (strncmp(pc->detail, VD_OK_DECLARED, strlen(VD_OK_DECLARED)) == 0
                                                   ? "declared" : "yes")
                                            : mark(pc));
        fprintf(f, "%-40s %-8s %-8s %-8s %-8s %-9s %s%-8s %9.3f %8.3f\n", x->id, mark(&x->checks[CK_DETERMINISM]),
                mark(&x->checks[CK_EAGER_GRAPHED]), mark(&x->checks[CK_NEW_LEGACY]), mark(&x->checks[CK_ROWS]),
                x->checks[CK_TIER2].verdict == CV_PASS ? (x->bit_exact ? "bits" : "tol") : mark(&x->checks[CK_TIER2]),
                par, ulp, x->t_run, x->t_ref);
        int all_skip = 1;
        for (int c = 0; c < CK_COUNT; c++)
            if (x->checks[c].verdict != CV_SKIP)
                all_skip = 0;
        if (all_skip)
            skip++;
        else if (camp_result_failed(x))
            fail++;
        else
            pass++;
    }
    /* details: failures, negative controls, not-bit-exact verdicts, the
     * cross-class verdicts; each the judge's words (verdict.h) */
    int head = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error)
            continue;
        for (int c = 0; c < CK_COUNT; c++) {
            const camp_check *k = &x->checks[c];
            if (c == CK_PARITY && !*x->against)
                continue;
            int show = k->verdict == CV_FAIL || k->negative ||
                       (c == CK_TIER2 && k->verdict == CV_PASS && (!x->bit_exact || x->t2.opt.policy != CMP_BITWISE)) ||
                       c == CK_PARITY;
            if (!show)
                continue;
            if (!head++)
                fprintf(f, "\ndetails:\n");
            fprintf(f, "  %s %s: %s\n", x->id, camp_check_name(c), k->detail);
            if (c == CK_TIER2 && k->verdict == CV_FAIL && x->t2_text)
                report_indent(f, x->t2_text, 6);
        }
    }
    /* power (docs/power.md): what the inputs could tell apart, per point */
    int phead = 0;
    double tp = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error || !x->power_run)
            continue;
        tp += x->t_power;
        if (!phead++)
            fprintf(f, "\npower: the neighbouring points a port plausibly realises instead, told apart by the inputs\n");
        if (x->power_verdict == 2) /* PW_SKIP */
            fprintf(f, "  %-38s not probed: %s\n", x->id, x->power_detail);
        else if (x->power_verdict == 1) /* PW_FAIL: the neighbours are not counted after a failure */
            fprintf(f, "  %-38s FAIL: the kernel does not realise the declared point (its tier2 line says "
                    "on which input); neighbours not counted\n", x->id);
        else
            fprintf(f, "  %-38s %s: %zu distinguished, %zu equivalent, %zu not distinguished%s%s\n", x->id,
                    x->power_verdict == 1 ? "FAIL" : "ok", x->power_dist, x->power_equiv, x->power_unseen,
                    x->power_unseen ? " (a warning): " : "", x->power_unseen ? x->power_unseen_names : "");
        if (x->power_space[0] && x->power_verdict != 2)
            fprintf(f, "  %-38s input space: %s\n", "", x->power_space);
    }
    fprintf(f, "\n%zu point(s): %zu passed, %zu failed, %zu skipped, %zu input error(s)", n, pass, fail, skip, err);
    if (berr)
        fprintf(f, ", %zu backend error(s)", berr);
    fputc('\n', f);
    if (phead)
        fprintf(f, "time: generate %.2f s, run %.2f s, reference %.2f s, compare %.2f s, power %.2f s (wall %.2f s)\n",
                tg, tr, tf, tc, tp, m->seconds);
    else
        fprintf(f, "time: generate %.2f s, run %.2f s, reference %.2f s, compare %.2f s (wall %.2f s)\n", tg, tr, tf,
                tc, m->seconds);
}

static const char *verdict_name(camp_verdict v)
{
    return v == CV_PASS ? "pass" : v == CV_FAIL ? "fail" : "skip";
}

nx_status report_json(const char *path, const camp_result *r, size_t n, const report_meta *m, nx_err *err)
{
    json_t *root = json_object(), *pts = json_array();
    json_object_set_new(root, "tool", json_string("parity campaign"));
    json_object_set_new(root, "class", json_string(m->class_name));
    json_object_set_new(root, "backend", json_string(m->backend));
    json_t *dev = m->device_json ? json_loads(m->device_json, 0, NULL) : NULL;
    json_object_set_new(root, "device", dev ? dev : json_object());
    json_object_set_new(root, "shapes", json_string(m->preset));
    json_object_set_new(root, "seed", json_integer((json_int_t)m->seed));
    json_object_set_new(root, "dist", json_string(m->dist));
    json_object_set_new(root, "engine", json_string(m->engine));
    json_object_set_new(root, "repeats", json_integer(m->repeats));
    json_object_set_new(root, "seconds", json_real(m->seconds));
    if (m->against)
        json_object_set_new(root, "against", json_string(m->against));
    size_t failed = 0, errors = 0;
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        json_t *p = json_object();
        json_object_set_new(p, "id", json_string(x->id));
        json_object_set_new(p, "shape", json_string(x->shape));
        if (x->error) {
            errors++;
            json_object_set_new(p, "error", json_string(x->errmsg));
            if (x->backend_error) /* the backend failed, not the input (docs/backends.md) */
                json_object_set_new(p, "backend_error", json_true());
            json_array_append_new(pts, p);
            continue;
        }
        json_object_set_new(p, "kernel", json_string(x->kernel));
        if (*x->legacy)
            json_object_set_new(p, "legacy_kernel", json_string(x->legacy));
        json_object_set_new(p, "hash", json_string(x->hash));
        json_t *cks = json_object();
        for (int c = 0; c < CK_COUNT; c++) {
            if (c == CK_PARITY && !*x->against)
                continue;
            json_t *k = json_object();
            json_object_set_new(k, "verdict", json_string(verdict_name(x->checks[c].verdict)));
            json_object_set_new(k, "negative_control", json_boolean(x->checks[c].negative));
            json_object_set_new(k, "detail", json_string(x->checks[c].detail));
            json_object_set_new(cks, camp_check_name(c), k);
        }
        json_object_set_new(p, "checks", cks);
        if (x->checks[CK_TIER2].verdict != CV_SKIP) {
            json_object_set_new(p, "bit_exact", json_boolean(x->bit_exact));
            json_t *t2 = cmp_result_json(&x->t2);
            json_object_set_new(t2, "output", json_string(x->t2_output));
            json_object_set_new(p, "tier2", t2);
        }
        if (x->power_run) {
            json_t *pw = json_object();
            json_object_set_new(pw, "verdict", json_string(x->power_verdict == 0 ? "pass" : x->power_verdict == 1
                                                           ? "fail" : "skip"));
            json_object_set_new(pw, "detail", json_string(x->power_detail));
            if (x->power_space[0])
                json_object_set_new(pw, "input_space", json_string(x->power_space));
            json_object_set_new(pw, "neighbours_distinguished", json_integer((json_int_t)x->power_dist));
            json_object_set_new(pw, "neighbours_equivalent", json_integer((json_int_t)x->power_equiv));
            json_object_set_new(pw, "neighbours_not_distinguished", json_integer((json_int_t)x->power_unseen));
            json_object_set_new(pw, "not_distinguished", json_string(x->power_unseen_names));
            json_object_set_new(p, "power", pw);
        }
        json_t *tm = json_object();
        json_object_set_new(tm, "generate", json_real(x->t_gen));
        json_object_set_new(tm, "run", json_real(x->t_run));
        json_object_set_new(tm, "reference", json_real(x->t_ref));
        json_object_set_new(tm, "compare", json_real(x->t_cmp));
        if (x->power_run)
            json_object_set_new(tm, "power", json_real(x->t_power));
        json_object_set_new(p, "seconds", tm);
        if (camp_result_failed(x))
            failed++;
        json_array_append_new(pts, p);
    }
    json_object_set_new(root, "points", pts);
    json_object_set_new(root, "failed", json_integer((json_int_t)failed));
    json_object_set_new(root, "input_errors", json_integer((json_int_t)errors));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory rendering %s", path);
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s\n", text);
    free(text);
    char *s = nx_sbuf_take(&b);
    if (!s)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = st_write_text_atomic(path, s, err);
    free(s);
    return st;
}

static void xml_escape(nx_sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': nx_sbuf_put(b, "&lt;", 4); break;
        case '>': nx_sbuf_put(b, "&gt;", 4); break;
        case '&': nx_sbuf_put(b, "&amp;", 5); break;
        case '"': nx_sbuf_put(b, "&quot;", 6); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                nx_sbuf_put(b, "?", 1);
            else
                nx_sbuf_put(b, s, 1);
        }
    }
}

nx_status report_junit(const char *path, const camp_result *r, size_t n, const report_meta *m, nx_err *err)
{
    size_t tests = 0, failures = 0, errors = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].error) {
            tests++;
            errors++;
            continue;
        }
        for (int c = 0; c < CK_COUNT; c++) {
            if (c == CK_PARITY && !*r[i].against)
                continue;
            tests++;
            failures += r[i].checks[c].verdict == CV_FAIL;
            skipped += r[i].checks[c].verdict == CV_SKIP;
        }
    }
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    nx_sbuf_printf(&b, "  <testsuite name=\"parity.campaign.");
    xml_escape(&b, m->class_name);
    nx_sbuf_printf(&b, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n", tests,
                   failures, errors, skipped, m->seconds);
    for (size_t i = 0; i < n; i++) {
        const camp_result *x = &r[i];
        if (x->error) {
            nx_sbuf_printf(&b, "    <testcase classname=\"");
            xml_escape(&b, x->id);
            nx_sbuf_printf(&b, "\" name=\"input\"><error message=\"");
            xml_escape(&b, x->errmsg);
            nx_sbuf_printf(&b, "\"/></testcase>\n");
            continue;
        }
        for (int c = 0; c < CK_COUNT; c++) {
            const camp_check *k = &x->checks[c];
            if (c == CK_PARITY && !*x->against)
                continue;
            nx_sbuf_printf(&b, "    <testcase classname=\"");
            xml_escape(&b, x->id);
            nx_sbuf_printf(&b, "\" name=\"%s\" time=\"%.3f\">", camp_check_name(c),
                           c == CK_TIER2 ? x->t_ref + x->t_cmp : x->t_run / CK_COUNT);
            if (k->verdict == CV_FAIL) {
                nx_sbuf_printf(&b, "<failure message=\"");
                xml_escape(&b, k->detail);
                nx_sbuf_printf(&b, "\">");
                if (c == CK_TIER2 && x->t2_text)
                    xml_escape(&b, x->t2_text);
                nx_sbuf_printf(&b, "</failure>");
            } else if (k->verdict == CV_SKIP) {
                nx_sbuf_printf(&b, "<skipped message=\"");
                xml_escape(&b, k->detail);
                nx_sbuf_printf(&b, "\"/>");
            } else {
                nx_sbuf_printf(&b, "<system-out>");
                xml_escape(&b, k->detail);
                nx_sbuf_printf(&b, "</system-out>");
            }
            nx_sbuf_printf(&b, "</testcase>\n");
        }
    }
    nx_sbuf_printf(&b, "  </testsuite>\n</testsuites>\n");
    char *s = nx_sbuf_take(&b);
    if (!s)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = st_write_text_atomic(path, s, err);
    free(s);
    return st;
}
