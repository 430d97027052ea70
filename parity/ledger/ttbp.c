/* ttbp.c: time to bit parity from the ledger (ttbp.h, docs/ledger.md). */
#include "ttbp.h"
#include "ledger_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "nx_sbuf.h"

static ttbp_point *find_point(ttbp_report *r, const char *id, nx_err *err, int *oom)
{
    for (size_t i = 0; i < r->npts; i++)
        if (strcmp(r->pts[i].id, id) == 0)
            return &r->pts[i];
    ttbp_point *p = realloc(r->pts, (r->npts + 1) * sizeof *p);
    if (!p) {
        *oom = 1;
        nx_err_set(err, NX_ENOMEM, "out of memory");
        return NULL;
    }
    r->pts = p;
    p = &r->pts[r->npts++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    return p;
}

static const char *col(sqlite3_stmt *s, int i)
{
    const char *v = (const char *)sqlite3_column_text(s, i);
    return v ? v : "";
}

nx_status ttbp_compute(const char *path, const char *class_name, const char *model, ttbp_report *r, nx_err *err)
{
    return ttbp_compute_in(path, class_name, model, NULL, 0, NULL, r, err);
}

static int listed(const char *const *only, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(only[i], id) == 0)
            return 1;
    return 0;
}

nx_status ttbp_compute_in(const char *path, const char *class_name, const char *model, const char *const *only,
                          size_t nonly, const char *scope_said, ttbp_report *r, nx_err *err)
{
    memset(r, 0, sizeof *r);
    snprintf(r->scope, sizeof r->scope, "%s", scope_said ? scope_said : "every point the campaigns recorded");
    snprintf(r->ledger, sizeof r->ledger, "%s", path);
    snprintf(r->class_name, sizeof r->class_name, "%s", class_name);
    snprintf(r->model, sizeof r->model, "%s", model ? model : "");
    sqlite3 *db;
    nx_status st = ledger_open_read(path, &db, err);
    if (st)
        return st;
    sqlite3_stmt *s = NULL;
    const char *scope = "class = ?1 AND (?2 IS NULL OR model = ?2)";
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM run WHERE complete = 0 AND %s", scope);
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, path, "reading runs", err);
        goto out;
    }
    sqlite3_bind_text(s, 1, class_name, -1, SQLITE_STATIC);
    if (model)
        sqlite3_bind_text(s, 2, model, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW)
        r->incomplete = (size_t)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    /* every record of every complete run in scope, runs in order of start */
    snprintf(sql, sizeof sql,
             "SELECT r.id, r.started_s, p.id, p.tier1, p.tier2, p.tier2_basis, p.bit_exact, p.error,"
             " (SELECT group_concat(c.name, ', ') FROM check_result c WHERE c.run_id = p.run_id"
             "   AND c.point_id = p.id AND c.verdict = 'fail' AND c.name <> 'tier2' AND c.name <> 'parity'),"
             " EXISTS (SELECT 1 FROM check_result c WHERE c.run_id = p.run_id AND c.point_id = p.id"
             "   AND c.negative = 1)"
             " FROM run r LEFT JOIN point p ON p.run_id = r.id"
             " WHERE r.complete = 1 AND r.%s ORDER BY r.started_s, r.id, p.seq",
             "class = ?1 AND (?2 IS NULL OR r.model = ?2)");
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, path, "reading points", err);
        goto out;
    }
    sqlite3_bind_text(s, 1, class_name, -1, SQLITE_STATIC);
    if (model)
        sqlite3_bind_text(s, 2, model, -1, SQLITE_STATIC);
    int64_t prev_run = -1;
    int rc, oom = 0;
    char **skipped = NULL; /* ids left out, each counted once */
    size_t nskip = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && !oom) {
        int64_t run = sqlite3_column_int64(s, 0), at = sqlite3_column_int64(s, 1);
        if (run != prev_run) {
            if (!r->runs++) {
                r->first_run = run;
                r->t0 = at;
            }
            r->last_at = at;
            prev_run = run;
        }
        if (sqlite3_column_type(s, 2) == SQLITE_NULL)
            continue; /* a run without points */
        /* a negative control never counts; a point off the list neither */
        if (sqlite3_column_int(s, 9) || (only && !listed(only, nonly, col(s, 2)))) {
            int ctl = sqlite3_column_int(s, 9), seen = 0;
            for (size_t k = 0; k < nskip && !seen; k++)
                seen = strcmp(skipped[k], col(s, 2)) == 0;
            char **g = seen ? NULL : realloc(skipped, (nskip + 1) * sizeof *g);
            if (!seen && (!g || !(g[nskip] = strdup(col(s, 2))))) {
                skipped = g ? g : skipped;
                oom = 1;
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                break;
            }
            if (!seen) {
                skipped = g;
                nskip++;
                if (ctl)
                    r->controls++;
                else
                    r->not_hot++;
            }
            continue;
        }
        ttbp_point *p = find_point(r, col(s, 2), err, &oom);
        if (!p)
            break;
        const char *t1 = col(s, 3), *t2 = col(s, 4), *basis = col(s, 5), *perr = col(s, 7), *failed = col(s, 8);
        int bits = sqlite3_column_int(s, 6) == 1;
        int t1ok = strcmp(t1, "pass") == 0 || strcmp(t1, "skip") == 0;
        int t2ok = strcmp(t2, "pass") == 0;
        int ok = t1ok && t2ok && (bits || strcmp(basis, "declared") == 0);
        char why[512] = "";
        if (*perr)
            snprintf(why, sizeof why, "input error: %s", perr);
        else if (!t1ok)
            snprintf(why, sizeof why, "tier1 fail: %s", *failed ? failed : t1);
        else if (!t2ok)
            snprintf(why, sizeof why, "tier2 %s", t2);
        else if (!ok)
            snprintf(why, sizeof why, "not bit-exact (tier2 passed by the %s)",
                     strcmp(basis, "derived") == 0 ? "bound derived from the trees" : "default tolerance");
        if (ok && !p->reached) {
            p->reached = 1;
            p->run = run;
            p->at = at;
            snprintf(p->basis, sizeof p->basis, "%s", bits ? "bits" : "declared tolerance");
        } else if (p->reached && !ok && p->now) {
            ttbp_regression *g = realloc(p->regs, (p->nregs + 1) * sizeof *g);
            if (!g) {
                oom = 1;
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                break;
            }
            p->regs = g;
            g = &p->regs[p->nregs++];
            memset(g, 0, sizeof *g);
            g->run = run;
            g->at = at;
            snprintf(g->why, sizeof g->why, "%s", why);
        } else if (p->reached && ok && !p->now && p->nregs) {
            p->regs[p->nregs - 1].back_run = run;
            p->regs[p->nregs - 1].back_at = at;
        }
        p->now = ok;
        snprintf(p->now_why, sizeof p->now_why, "%s", why);
        p->last_run = run;
    }
    for (size_t k = 0; k < nskip; k++)
        free(skipped[k]);
    free(skipped);
    if (oom) {
        if (!st)
            st = NX_ENOMEM;
        sqlite3_finalize(s);
        goto out;
    }
    if (rc != SQLITE_DONE) {
        st = ledger_sql_error(db, path, "reading points", err);
        sqlite3_finalize(s);
        goto out;
    }
    sqlite3_finalize(s);
    if (!r->runs) {
        st = model ? nx_err_set(err, NX_EINVAL, "ledger %s: no complete campaign of class '%s' with model '%s'", path,
                                class_name, model)
                   : nx_err_set(err, NX_EINVAL, "ledger %s: no complete campaign of class '%s'", path, class_name);
        goto out;
    }
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        r->reached += p->reached != 0;
        r->now += p->now != 0;
        r->regressed += p->nregs != 0;
        /* the latest point to reach parity, by time and then by run: two
         * campaigns may start within one second */
        if (p->reached && (p->at > r->overall_at || !r->overall_run ||
                           (p->at == r->overall_at && p->run > r->overall_run))) {
            r->overall_at = p->at;
            r->overall_run = p->run;
        }
    }
out:
    sqlite3_close(db);
    if (st)
        ttbp_free(r);
    return st;
}

void ttbp_free(ttbp_report *r)
{
    for (size_t i = 0; i < r->npts; i++)
        free(r->pts[i].regs);
    free(r->pts);
    r->pts = NULL;
    r->npts = 0;
}

int ttbp_ok(const ttbp_report *r)
{
    return r->npts > 0 && r->reached == r->npts && r->now == r->npts;
}

char *ttbp_text(const ttbp_report *r)
{
    nx_sbuf b = {0};
    char t[32], d[48];
    ledger_format_utc(r->t0, t, sizeof t);
    nx_sbuf_printf(&b, "time to bit parity: class %s%s%s, ledger %s\n", r->class_name, *r->model ? ", model " : "",
                   r->model, r->ledger);
    nx_sbuf_printf(&b, "first campaign: run %lld at %s; %zu complete run(s)", (long long)r->first_run, t, r->runs);
    if (r->incomplete)
        nx_sbuf_printf(&b, " (%zu incomplete run(s) ignored)", r->incomplete);
    nx_sbuf_printf(&b, "\npoints that count: %s (%zu); left out: %zu negative control(s), never counted, and %zu "
                   "recorded point(s) outside them", r->scope, r->npts, r->controls, r->not_hot);
    nx_sbuf_printf(&b, "\n\n%-40s %-20s %5s %-12s %-18s %s\n", "family.point", "reached at", "run", "TTBP", "parity",
                   "since");
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        if (!p->reached) {
            nx_sbuf_printf(&b, "%-40s %-20s %5s %-12s %-18s %s\n", p->id, "not yet", "-", "-", "-", p->now_why);
            continue;
        }
        ledger_format_utc(p->at, t, sizeof t);
        ledger_format_duration(p->at - r->t0, d, sizeof d);
        nx_sbuf_printf(&b, "%-40s %-20s %5lld %-12s %-18s %s\n", p->id, t, (long long)p->run, d, p->basis,
                       !p->nregs ? "held" : p->now ? "regressed, back" : "regressed");
    }
    int head = 0;
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        for (size_t k = 0; k < p->nregs; k++) {
            const ttbp_regression *g = &p->regs[k];
            if (!head++)
                nx_sbuf_printf(&b, "\nregressions:\n");
            ledger_format_utc(g->at, t, sizeof t);
            nx_sbuf_printf(&b, "  %s: broken by run %lld at %s (%s)", p->id, (long long)g->run, t, g->why);
            if (g->back_run) {
                ledger_format_utc(g->back_at, t, sizeof t);
                nx_sbuf_printf(&b, "; at parity again from run %lld at %s\n", (long long)g->back_run, t);
            } else {
                nx_sbuf_printf(&b, "; not at parity since\n");
            }
        }
    }
    nx_sbuf_printf(&b, "\n");
    if (r->npts && r->reached == r->npts) {
        ledger_format_utc(r->overall_at, t, sizeof t);
        ledger_format_duration(r->overall_at - r->t0, d, sizeof d);
        nx_sbuf_printf(&b, "overall: all %zu point(s) reached bit parity by run %lld at %s: TTBP %s\n", r->npts,
                       (long long)r->overall_run, t, d);
    } else {
        nx_sbuf_printf(&b, "overall: not reached: %zu of %zu point(s) reached bit parity\n", r->reached, r->npts);
    }
    nx_sbuf_printf(&b, "held since: %s (%zu point(s) regressed at some run, %zu of %zu at parity in their latest run)\n",
                   r->regressed ? "no" : "yes", r->regressed, r->now, r->npts);
    return nx_sbuf_take(&b);
}

char *ttbp_json(const ttbp_report *r)
{
    char t[32], d[48];
    json_t *root = json_object(), *pts = json_array();
    ledger_format_utc(r->t0, t, sizeof t);
    json_object_set_new(root, "ledger", json_string(r->ledger));
    json_object_set_new(root, "scope", json_string(r->scope));
    json_object_set_new(root, "negative_controls_left_out", json_integer((json_int_t)r->controls));
    json_object_set_new(root, "points_left_out", json_integer((json_int_t)r->not_hot));
    json_object_set_new(root, "class", json_string(r->class_name));
    json_object_set_new(root, "model", *r->model ? json_string(r->model) : json_null());
    json_object_set_new(root, "first_run", json_integer(r->first_run));
    json_object_set_new(root, "first_utc", json_string(t));
    json_object_set_new(root, "runs", json_integer((json_int_t)r->runs));
    json_object_set_new(root, "incomplete_runs_ignored", json_integer((json_int_t)r->incomplete));
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        json_t *o = json_object(), *regs = json_array();
        json_object_set_new(o, "id", json_string(p->id));
        json_object_set_new(o, "reached", json_boolean(p->reached));
        if (p->reached) {
            ledger_format_utc(p->at, t, sizeof t);
            ledger_format_duration(p->at - r->t0, d, sizeof d);
            json_object_set_new(o, "run", json_integer(p->run));
            json_object_set_new(o, "reached_utc", json_string(t));
            json_object_set_new(o, "ttbp_s", json_integer(p->at - r->t0));
            json_object_set_new(o, "ttbp", json_string(d));
            json_object_set_new(o, "parity", json_string(p->basis));
        }
        json_object_set_new(o, "held", json_boolean(p->reached && !p->nregs));
        json_object_set_new(o, "at_parity_now", json_boolean(p->now));
        if (!p->now)
            json_object_set_new(o, "why_not", json_string(p->now_why));
        for (size_t k = 0; k < p->nregs; k++) {
            const ttbp_regression *g = &p->regs[k];
            json_t *x = json_object();
            ledger_format_utc(g->at, t, sizeof t);
            json_object_set_new(x, "run", json_integer(g->run));
            json_object_set_new(x, "at_utc", json_string(t));
            json_object_set_new(x, "why", json_string(g->why));
            if (g->back_run) {
                ledger_format_utc(g->back_at, t, sizeof t);
                json_object_set_new(x, "back_run", json_integer(g->back_run));
                json_object_set_new(x, "back_utc", json_string(t));
            }
            json_array_append_new(regs, x);
        }
        json_object_set_new(o, "regressions", regs);
        json_array_append_new(pts, o);
    }
    json_object_set_new(root, "points", pts);
    json_t *ov = json_object();
    int all = r->npts && r->reached == r->npts;
    json_object_set_new(ov, "points", json_integer((json_int_t)r->npts));
    json_object_set_new(ov, "points_reached", json_integer((json_int_t)r->reached));
    json_object_set_new(ov, "points_at_parity_now", json_integer((json_int_t)r->now));
    json_object_set_new(ov, "points_regressed", json_integer((json_int_t)r->regressed));
    json_object_set_new(ov, "reached", json_boolean(all));
    if (all) {
        ledger_format_utc(r->overall_at, t, sizeof t);
        ledger_format_duration(r->overall_at - r->t0, d, sizeof d);
        json_object_set_new(ov, "run", json_integer(r->overall_run));
        json_object_set_new(ov, "reached_utc", json_string(t));
        json_object_set_new(ov, "ttbp_s", json_integer(r->overall_at - r->t0));
        json_object_set_new(ov, "ttbp", json_string(d));
    }
    json_object_set_new(ov, "held", json_boolean(all && !r->regressed));
    json_object_set_new(root, "overall", ov);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *out = malloc(n + 2);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\n';
        out[n + 1] = 0;
    }
    free(s);
    return out;
}

nx_status ttbp_model_classes(const char *path, const char *model, char ***out, size_t *n, nx_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3 *db;
    nx_status st = ledger_open_read(path, &db, err);
    if (st)
        return st;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT class FROM run WHERE complete = 1 AND model = ?1 ORDER BY class", -1, &s,
                           NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, path, "reading runs", err);
        sqlite3_close(db);
        return st;
    }
    sqlite3_bind_text(s, 1, model, -1, SQLITE_STATIC);
    while (!st && sqlite3_step(s) == SQLITE_ROW) {
        char **g = realloc(*out, (*n + 1) * sizeof *g);
        if (!g || !(g[*n] = strdup(col(s, 0)))) {
            if (g)
                *out = g;
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        *out = g;
        ++*n;
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return st;
}

/* Whether entry e (kind, what) is in the JSON array a. */
static int zd_has(json_t *a, json_t *e)
{
    const char *k = json_string_value(json_object_get(e, "kind")), *w = json_string_value(json_object_get(e, "what"));
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        const char *k2 = json_string_value(json_object_get(x, "kind")), *w2 = json_string_value(json_object_get(x, "what"));
        if (k && w && k2 && w2 && !strcmp(k, k2) && !strcmp(w, w2))
            return 1;
    }
    return 0;
}

nx_status ttbp_zero_day_of(const char *path, const ttbp_report *r, ttbp_zero_day *z, nx_err *err)
{
    memset(z, 0, sizeof *z);
    z->reached = r->npts && r->reached == r->npts;
    if (z->reached) {
        z->run = r->overall_run;
        z->at = r->overall_at;
        z->ttbp_s = r->overall_at - r->t0;
    }
    sqlite3 *db;
    nx_status st = ledger_open_read(path, &db, err);
    if (st)
        return st;
    /* the runs in scope up to the one at parity (all of them if none) */
    sqlite3_stmt *s = NULL;
    const char *sql = "SELECT r.id, r.residual_entries, (SELECT group_concat(p.id, char(10)) FROM point p WHERE"
                      " p.run_id = r.id) FROM run r WHERE r.complete = 1 AND r.class = ?1 AND (?2 = '' OR r.model = ?2)"
                      " AND (?3 = 0 OR r.started_s < ?3 OR (r.started_s = ?3 AND r.id <= ?4))"
                      " ORDER BY r.started_s, r.id";
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, path, "reading runs", err);
        sqlite3_close(db);
        return st;
    }
    sqlite3_bind_text(s, 1, r->class_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, r->model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, z->reached ? z->at : 0);
    sqlite3_bind_int64(s, 4, z->reached ? z->run : 0);
    json_t *first = NULL;
    char *first_pts = NULL;
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW && !*z->change) {
        const char *rj = (const char *)sqlite3_column_text(s, 1), *pts = col(s, 2);
        json_t *a = rj ? json_loads(rj, 0, NULL) : NULL;
        if (!n++) {
            first = a;
            first_pts = strdup(pts);
            continue;
        }
        size_t i;
        json_t *e;
        if (json_is_array(a) && json_is_array(first))
            json_array_foreach(a, i, e) {
                if (!zd_has(first, e)) {
                    snprintf(z->change, sizeof z->change, "run %lld: a new residual entry: %s %s",
                             (long long)sqlite3_column_int64(s, 0), json_string_value(json_object_get(e, "kind")),
                             json_string_value(json_object_get(e, "what")));
                    break;
                }
            }
        for (const char *p = pts; *p && !*z->change && first_pts;) {
            size_t l = strcspn(p, "\n");
            int in = 0;
            for (const char *q = first_pts; *q && !in;) {
                size_t m = strcspn(q, "\n");
                in = m == l && !strncmp(p, q, l);
                q += m + (q[m] == '\n');
            }
            if (!in)
                snprintf(z->change, sizeof z->change, "run %lld: a point the first campaign did not have: %.*s",
                         (long long)sqlite3_column_int64(s, 0), (int)l, p);
            p += l + (p[l] == '\n');
        }
        json_decref(a);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    json_decref(first);
    free(first_pts);
    z->ready = z->reached && !*z->change;
    return NX_OK;
}
