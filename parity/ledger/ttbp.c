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
    return ttbp_compute_opts(path, class_name, model, only, nonly, scope_said, NULL, r, err);
}

/* The chain (after the class itself) and the declared reference of the
 * class, from its latest complete run that recorded them. */
static void class_target(sqlite3 *db, const char *cls, char ***anc, size_t *nanc, char *ref, size_t len)
{
    *anc = NULL;
    *nanc = 0;
    ref[0] = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT chain, reference FROM run WHERE class = ?1 AND complete = 1 AND chain IS NOT"
                           " NULL ORDER BY started_s DESC, id DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(s, 1, cls, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW) {
        json_t *a = json_loads(col(s, 0), 0, NULL);
        snprintf(ref, len, "%s", col(s, 1));
        size_t i;
        json_t *x;
        if (json_is_array(a) && json_array_size(a) > 1 && (*anc = calloc(json_array_size(a), sizeof **anc)))
            json_array_foreach(a, i, x) if (i > 0 && json_string_value(x))
                (*anc)[(*nanc)++] = strdup(json_string_value(x));
        json_decref(a);
    }
    sqlite3_finalize(s);
}

/* Whether class c has a complete record of point id (at the shapes that count). */
static int class_ran(sqlite3 *db, const char *c, const char *id)
{
    sqlite3_stmt *s = NULL;
    int yes = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM point p JOIN run r ON r.id = p.run_id WHERE r.complete = 1 AND"
                           " r.class = ?1 AND p.id = ?2 AND p.error IS NULL LIMIT 1", -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, c, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
        yes = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    return yes;
}

/* One record of a class held to reference class ref: 2 bit parity (its
 * bits equal ref's at the same point, shape and inputs), 1 declared
 * parity (the points differ by declaration and it passes its own Tier 2:
 * bit-exact against its declared point, or within its declared
 * tolerance), 0 neither; why says which and against which run. */
static int against_ref(sqlite3 *db, const char *ref, const char *id, const char *shape, const char *hash,
                       const char *in_d, const char *out_d, int64_t at, int t2ok, int against_yes, char *why,
                       size_t len, char *decl, size_t dlen)
{
    if (!*out_d || !*in_d) {
        snprintf(why, len, "no digest of its outputs (recorded before ledger schema 5): its bits cannot be held "
                 "to %s's", ref);
        return 0;
    }
    sqlite3_stmt *s = NULL;
    int lvl = 0;
    if (sqlite3_prepare_v2(db, "SELECT r.id, p.hash, p.out_digest FROM point p JOIN run r ON r.id = p.run_id"
                           " WHERE r.complete = 1 AND r.class = ?1 AND p.id = ?2 AND p.shape IS ?3 AND p.in_digest = ?4"
                           " AND p.error IS NULL AND p.out_digest IS NOT NULL"
                           " ORDER BY (r.started_s > ?5), CASE WHEN r.started_s <= ?5 THEN -r.started_s ELSE"
                           " r.started_s END, r.id DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK) {
        snprintf(why, len, "the reference's records could not be read: %s", sqlite3_errmsg(db));
        return 0;
    }
    sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
    if (*shape)
        sqlite3_bind_text(s, 3, shape, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, in_d, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, at);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_finalize(s);
        if (against_yes)
            return 2; /* --against REF said "bit parity ...: yes" */
        snprintf(why, len, "reference %s has no record of %s at this shape and inputs (run it, or campaign --against %s)",
                 ref, id, ref);
        return 0;
    }
    long long rrun = sqlite3_column_int64(s, 0);
    const char *rh = col(s, 1), *rd = col(s, 2);
    if (!strcmp(rh, hash)) {
        if (!strcmp(rd, out_d))
            lvl = 2;
        else
            snprintf(why, len, "bits differ from %s's (run %lld) at the same point and inputs", ref, rrun);
    } else if (t2ok) {
        lvl = 1;
        snprintf(decl, dlen, "numerics point %.12s, %s's %.12s (run %lld): a declared difference", *hash ? hash : "none",
                 ref, rh, rrun);
        snprintf(why, len, "declared parity only: %.400s", decl);
    } else {
        snprintf(why, len, "numerics point %.12s differs from %s's %.12s (run %lld) and its Tier 2 did not pass",
                 *hash ? hash : "none", ref, rh, rrun);
    }
    sqlite3_finalize(s);
    return lvl;
}

nx_status ttbp_compute_opts(const char *path, const char *class_name, const char *model, const char *const *only,
                            size_t nonly, const char *scope_said, const ttbp_opts *o, ttbp_report *r, nx_err *err)
{
    const ttbp_opts none = {0};
    if (!o)
        o = &none;
    memset(r, 0, sizeof *r);
    snprintf(r->scope, sizeof r->scope, "%s", scope_said ? scope_said : "every point the campaigns recorded");
    snprintf(r->ledger, sizeof r->ledger, "%s", path);
    snprintf(r->class_name, sizeof r->class_name, "%s", class_name);
    snprintf(r->model, sizeof r->model, "%s", model ? model : "");
    snprintf(r->shapes, sizeof r->shapes, "%s", o->shapes ? o->shapes : "");
    sqlite3 *db;
    nx_status st = ledger_open_read(path, &db, err);
    if (st)
        return st;
    char **anc = NULL;
    size_t nanc = 0;
    char declared_ref[64];
    class_target(db, class_name, &anc, &nanc, declared_ref, sizeof declared_ref);
    if (o->reference) {
        snprintf(r->reference, sizeof r->reference, "%s", o->reference);
        snprintf(r->reference_how, sizeof r->reference_how, "%s (--reference)", o->reference);
    } else if (*declared_ref) {
        snprintf(r->reference, sizeof r->reference, "%s", declared_ref);
        snprintf(r->reference_how, sizeof r->reference_how, "%s (its HARDWARE.toml reference)", declared_ref);
    } else if (nanc) {
        snprintf(r->reference_how, sizeof r->reference_how, "per point, the nearest ancestor that ran it (%s first)",
                 anc[0]);
    } else {
        snprintf(r->reference_how, sizeof r->reference_how, "the exact reference of its own points (a class with "
                 "no parent and no reference)");
    }
    sqlite3_stmt *s = NULL;
    const char *scope = "class = ?1 AND (?2 IS NULL OR model = ?2)";
    char sql[3072];
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
             "   AND c.negative = 1),"
             " p.hash, p.shape, p.in_digest, p.out_digest, r.shapes, r.against,"
             " (SELECT c.verdict || ' ' || coalesce(c.detail, '') FROM check_result c WHERE c.run_id = p.run_id"
             "   AND c.point_id = p.id AND c.name = 'parity')"
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
        const char *pid = col(s, 2), *run_shapes = col(s, 14);
        /* only the records at the shapes that count (a model's own point
         * is its decode, at its own scale) */
        if (o->shapes && strcmp(run_shapes, o->shapes) != 0 && strncmp(pid, "model.", 6) != 0) {
            r->other_shapes++;
            if (!strstr(r->other_shapes_said, run_shapes)) {
                size_t l = strlen(r->other_shapes_said);
                snprintf(r->other_shapes_said + l, sizeof r->other_shapes_said - l, "%s%s", l ? ", " : "", run_shapes);
            }
            continue;
        }
        /* a negative control never counts; a point off the list neither */
        if (sqlite3_column_int(s, 9) || (only && !listed(only, nonly, pid))) {
            int ctl = sqlite3_column_int(s, 9), seen = 0;
            for (size_t k = 0; k < nskip && !seen; k++)
                seen = strcmp(skipped[k], pid) == 0;
            char **g = seen ? NULL : realloc(skipped, (nskip + 1) * sizeof *g);
            if (!seen && (!g || !(g[nskip] = strdup(pid)))) {
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
        ttbp_point *p = find_point(r, pid, err, &oom);
        if (!p)
            break;
        const char *t1 = col(s, 3), *t2 = col(s, 4), *basis = col(s, 5), *perr = col(s, 7), *failed = col(s, 8);
        const char *hash = col(s, 10), *shape = col(s, 11), *in_d = col(s, 12), *out_d = col(s, 13),
                   *against = col(s, 15), *pcheck = col(s, 16);
        int bits = sqlite3_column_int(s, 6) == 1;
        int t1ok = strcmp(t1, "pass") == 0 || strcmp(t1, "skip") == 0;
        int t2ok = strcmp(t2, "pass") == 0;
        int own_ok = t2ok && (bits || strcmp(basis, "declared") == 0);
        /* the target: --reference, the declared reference, else the
         * nearest ancestor that ran the point; none: the exact reference */
        const char *ref = *r->reference ? r->reference : NULL;
        for (size_t k = 0; !ref && k < nanc && strncmp(pid, "model.", 6) != 0; k++)
            if (class_ran(db, anc[k], pid))
                ref = anc[k];
        if (!ref && nanc && strncmp(pid, "model.", 6) != 0)
            ref = anc[0]; /* none ran it: held to the parent, which has no record */
        snprintf(p->reference, sizeof p->reference, "%s", ref ? ref : "");
        int against_yes = ref && !strcmp(against, ref) && !strncmp(pcheck, "pass ", 5) && strstr(pcheck, ": yes");
        char why[512] = "", decl[512] = "";
        int lvl = 0;
        if (*perr)
            snprintf(why, sizeof why, "input error: %s", perr);
        else if (!t1ok)
            snprintf(why, sizeof why, "tier1 fail: %s", *failed ? failed : t1);
        else if (!ref && !t2ok)
            snprintf(why, sizeof why, "tier2 %s", t2);
        else if (!ref && !own_ok)
            snprintf(why, sizeof why, "not bit-exact (tier2 passed by the %s)",
                     strcmp(basis, "derived") == 0 ? "bound derived from the trees" : "default tolerance");
        else if (!ref) {
            lvl = bits ? 2 : 1;
            if (!bits) {
                snprintf(decl, sizeof decl, "within its declared tolerance, not bit-exact");
                snprintf(why, sizeof why, "declared parity only: %.400s", decl);
            }
        } else {
            lvl = against_ref(db, ref, pid, shape, hash, in_d, out_d, at, own_ok, against_yes, why, sizeof why, decl,
                              sizeof decl);
        }
        /* a numerics change: parity reached under the old hash does not
         * count for the new one (it does again if the old hash comes back) */
        int old_best = p->reached ? 2 : p->decl ? 1 : 0, changed = *p->hash && *hash && strcmp(p->hash, hash) != 0;
        if (changed) {
            ttbp_hash_event *g = realloc(p->events, (p->nevents + 1) * sizeof *g);
            ttbp_hash_state *h = realloc(p->hist, (p->nhist + 1) * sizeof *h);
            if (g)
                p->events = g;
            if (h)
                p->hist = h;
            if (!g || !h) {
                oom = 1;
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                break;
            }
            g = &p->events[p->nevents++];
            memset(g, 0, sizeof *g);
            g->run = run;
            g->at = at;
            snprintf(g->was, sizeof g->was, "%s", p->hash);
            snprintf(g->now, sizeof g->now, "%s", hash);
            g->dropped_run = p->reached ? p->run : p->decl ? p->decl_run : 0;
            size_t k = 0;
            while (k < p->nhist && strcmp(p->hist[k].hash, p->hash) != 0)
                k++;
            if (k == p->nhist)
                p->nhist++;
            h = &p->hist[k];
            snprintf(h->hash, sizeof h->hash, "%s", p->hash);
            h->reached = p->reached, h->decl = p->decl, h->run = p->run, h->at = p->at;
            h->decl_run = p->decl_run, h->decl_at = p->decl_at;
            snprintf(h->decl_why, sizeof h->decl_why, "%s", p->decl_why);
            p->reached = p->decl = 0;
            for (k = 0; k < p->nhist; k++)
                if (!strcmp(p->hist[k].hash, hash)) {
                    h = &p->hist[k];
                    p->reached = h->reached, p->decl = h->decl, p->run = h->run, p->at = h->at;
                    p->decl_run = h->decl_run, p->decl_at = h->decl_at;
                    snprintf(p->decl_why, sizeof p->decl_why, "%s", h->decl_why);
                }
            r->hash_events++;
        }
        snprintf(p->hash, sizeof p->hash, "%s", hash);
        int best = p->reached ? 2 : p->decl ? 1 : 0, cmp_best = changed ? old_best : best;
        if (lvl > best) {
            if (lvl == 2) {
                p->reached = 1;
                p->decl = 0;
                p->run = run;
                p->at = at;
                snprintf(p->basis, sizeof p->basis, "bits");
            } else {
                p->decl = 1;
                p->decl_run = run;
                p->decl_at = at;
                snprintf(p->decl_why, sizeof p->decl_why, "%s", decl);
            }
            best = lvl;
        }
        if (p->reached)
            snprintf(p->basis, sizeof p->basis, "bits");
        if (cmp_best && lvl < cmp_best && p->now_level == cmp_best) {
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
        } else if (p->nregs && !p->regs[p->nregs - 1].back_run && lvl > 0 && lvl >= best) {
            p->regs[p->nregs - 1].back_run = run;
            p->regs[p->nregs - 1].back_at = at;
        }
        p->now_level = lvl;
        p->now = lvl == 2;
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
    /* a listed point with no record that counts has not run: it counts,
     * not reached (model.M without a `parity model` run) */
    for (size_t k = 0; only && k < nonly; k++) {
        int seen = 0;
        for (size_t i = 0; i < r->npts && !seen; i++)
            seen = strcmp(r->pts[i].id, only[k]) == 0;
        if (seen)
            continue;
        ttbp_point *p = find_point(r, only[k], err, &oom);
        if (!p) {
            st = NX_ENOMEM;
            goto out;
        }
        p->not_run = 1;
        if (!strncmp(only[k], "model.", 6))
            snprintf(p->now_why, sizeof p->now_why, "not run: no `parity model --ledger` run of %s on class %s is "
                     "recorded", only[k] + 6, class_name);
        else
            snprintf(p->now_why, sizeof p->now_why, "not run%s%s", o->shapes ? " at shapes " : "",
                     o->shapes ? o->shapes : "");
    }
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        r->reached += p->reached != 0;
        r->declared += !p->reached && p->decl;
        r->now += p->now != 0;
        r->regressed += p->nregs != 0;
        /* the latest point to reach parity, by time and then by run: two
         * campaigns may start within one second */
        if (p->reached && (p->at > r->overall_at || !r->overall_run ||
                           (p->at == r->overall_at && p->run > r->overall_run))) {
            r->overall_at = p->at;
            r->overall_run = p->run;
        }
        int64_t dat = p->reached ? p->at : p->decl_at, drun = p->reached ? p->run : p->decl_run;
        if ((p->reached || p->decl) && (dat > r->decl_overall_at || !r->decl_overall_run ||
                                        (dat == r->decl_overall_at && drun > r->decl_overall_run))) {
            r->decl_overall_at = dat;
            r->decl_overall_run = drun;
        }
    }
out:
    for (size_t k = 0; k < nanc; k++)
        free(anc[k]);
    free(anc);
    sqlite3_close(db);
    if (st)
        ttbp_free(r);
    return st;
}

void ttbp_free(ttbp_report *r)
{
    for (size_t i = 0; i < r->npts; i++) {
        free(r->pts[i].regs);
        free(r->pts[i].events);
        free(r->pts[i].hist);
    }
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
    if (*r->shapes)
        nx_sbuf_printf(&b, "\nshapes that count: %s (the model's own point at its decode); left out: %zu record(s) at "
                       "other shapes%s%s%s", r->shapes, r->other_shapes, r->other_shapes ? " (" : "",
                       r->other_shapes_said, r->other_shapes ? ")" : "");
    nx_sbuf_printf(&b, "\nparity against: %s", r->reference_how);
    nx_sbuf_printf(&b, "\n\n%-40s %-20s %5s %-12s %-18s %s\n", "family.point", "reached at", "run", "TTBP", "parity",
                   "since");
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        if (!p->reached && p->decl) {
            ledger_format_utc(p->decl_at, t, sizeof t);
            ledger_format_duration(p->decl_at - r->t0, d, sizeof d);
            nx_sbuf_printf(&b, "%-40s %-20s %5s %-12s %-18s declared parity since run %lld at %s (%s): %s%s%s\n", p->id,
                           "not yet", "-", "-", "declared", (long long)p->decl_run, t, d, p->decl_why,
                           p->now_level ? "" : "; now: ", p->now_level ? "" : p->now_why);
            continue;
        }
        if (!p->reached) {
            nx_sbuf_printf(&b, "%-40s %-20s %5s %-12s %-18s %s\n", p->id, "not yet", "-", "-", p->not_run ? "not run" : "-",
                           p->now_why);
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
    head = 0;
    for (size_t i = 0; i < r->npts; i++) {
        const ttbp_point *p = &r->pts[i];
        for (size_t k = 0; k < p->nevents; k++) {
            const ttbp_hash_event *g = &p->events[k];
            if (!head++)
                nx_sbuf_printf(&b, "\nnumerics changed (parity under the old point does not count for the new):\n");
            ledger_format_utc(g->at, t, sizeof t);
            nx_sbuf_printf(&b, "  %s: by run %lld at %s: numerics point %.12s, was %.12s", p->id, (long long)g->run, t,
                           g->now, g->was);
            if (g->dropped_run)
                nx_sbuf_printf(&b, "; the parity reached at run %lld no longer counts\n", (long long)g->dropped_run);
            else
                nx_sbuf_printf(&b, "\n");
        }
    }
    nx_sbuf_printf(&b, "\n");
    if (r->npts && r->reached == r->npts) {
        ledger_format_utc(r->overall_at, t, sizeof t);
        ledger_format_duration(r->overall_at - r->t0, d, sizeof d);
        nx_sbuf_printf(&b, "overall: all %zu point(s) reached bit parity by run %lld at %s: TTBP %s\n", r->npts,
                       (long long)r->overall_run, t, d);
    } else {
        nx_sbuf_printf(&b, "overall: not reached: %zu of %zu point(s) reached bit parity", r->reached, r->npts);
        if (r->declared)
            nx_sbuf_printf(&b, ", %zu more at declared parity only", r->declared);
        nx_sbuf_printf(&b, "\n");
        if (r->declared && r->reached + r->declared == r->npts) {
            ledger_format_utc(r->decl_overall_at, t, sizeof t);
            ledger_format_duration(r->decl_overall_at - r->t0, d, sizeof d);
            nx_sbuf_printf(&b, "declared parity: all %zu point(s) at bit or declared parity by run %lld at %s: %s (not "
                           "a TTBP)\n", r->npts, (long long)r->decl_overall_run, t, d);
        }
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
    json_object_set_new(root, "reference", *r->reference ? json_string(r->reference) : json_null());
    json_object_set_new(root, "parity_against", json_string(r->reference_how));
    json_object_set_new(root, "shapes", *r->shapes ? json_string(r->shapes) : json_null());
    json_object_set_new(root, "records_at_other_shapes", json_integer((json_int_t)r->other_shapes));
    json_object_set_new(root, "other_shapes", json_string(r->other_shapes_said));
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
        if (!p->reached && p->decl) {
            ledger_format_utc(p->decl_at, t, sizeof t);
            json_object_set_new(o, "parity", json_string("declared"));
            json_object_set_new(o, "declared_run", json_integer(p->decl_run));
            json_object_set_new(o, "declared_utc", json_string(t));
            json_object_set_new(o, "declared_s", json_integer(p->decl_at - r->t0));
            json_object_set_new(o, "declared_why", json_string(p->decl_why));
        }
        json_object_set_new(o, "reference", *p->reference ? json_string(p->reference) : json_null());
        json_object_set_new(o, "hash", json_string(p->hash));
        json_object_set_new(o, "not_run", json_boolean(p->not_run));
        json_t *ev = json_array();
        for (size_t k = 0; k < p->nevents; k++) {
            const ttbp_hash_event *g = &p->events[k];
            ledger_format_utc(g->at, t, sizeof t);
            json_t *x = json_pack("{s:I,s:s,s:s,s:s}", "run", (json_int_t)g->run, "at_utc", t, "hash", g->now, "was", g->was);
            if (g->dropped_run)
                json_object_set_new(x, "dropped_parity_run", json_integer(g->dropped_run));
            json_array_append_new(ev, x);
        }
        json_object_set_new(o, "numerics_changes", ev);
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
    json_object_set_new(ov, "points_declared_only", json_integer((json_int_t)r->declared));
    json_object_set_new(ov, "numerics_changes", json_integer((json_int_t)r->hash_events));
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

/* The class files of a later run against the first run's ("A changed, B
 * added, C removed"), appended to out; the count. */
static int files_diff(json_t *first, json_t *now, char *out, size_t len)
{
    int n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(now, k, v) {
        json_t *w = json_object_get(first, k);
        if (w && json_equal(v, w))
            continue;
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s %s", n++ ? ", " : "", k, w ? "changed" : "added");
    }
    json_object_foreach(first, k, v) {
        if (json_object_get(now, k))
            continue;
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s removed", n++ ? ", " : "", k);
    }
    return n;
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
                      " p.run_id = r.id), r.class_files FROM run r WHERE r.complete = 1 AND r.class = ?1"
                      " AND (?2 = '' OR r.model = ?2)"
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
    json_t *first = NULL, *first_files = NULL;
    char *first_pts = NULL;
    long long first_run = 0;
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW && !*z->change) {
        const char *rj = (const char *)sqlite3_column_text(s, 1), *pts = col(s, 2),
                   *fj = (const char *)sqlite3_column_text(s, 3);
        long long run = (long long)sqlite3_column_int64(s, 0);
        json_t *a = rj ? json_loads(rj, 0, NULL) : NULL, *files = fj ? json_loads(fj, 0, NULL) : NULL;
        if (!n++) {
            first = a;
            first_files = files;
            first_pts = strdup(pts);
            first_run = run;
            continue;
        }
        char said[sizeof z->change] = "";
        int k = 0;
        /* the registry's files of the class and its ancestors (version 5) */
        if (json_is_object(files) && json_is_object(first_files)) {
            char fl[sizeof z->change - 80] = "";
            if (files_diff(first_files, files, fl, sizeof fl))
                k += snprintf(said, sizeof said, "class files changed since run %lld: %s", first_run, fl) > 0;
        } else if (json_is_object(files) != json_is_object(first_files)) {
            k += snprintf(said, sizeof said, "class files not known (run %lld recorded none: ledger schema < 5)",
                          json_is_object(files) ? first_run : run) > 0;
        }
        size_t i;
        json_t *e;
        if (json_is_array(a) && json_is_array(first))
            json_array_foreach(a, i, e) {
                if (!zd_has(first, e)) {
                    size_t l = strlen(said);
                    snprintf(said + l, sizeof said - l, "%sa new residual entry: %s %s", k++ ? "; " : "",
                             json_string_value(json_object_get(e, "kind")), json_string_value(json_object_get(e, "what")));
                    break;
                }
            }
        for (const char *p = pts; *p && first_pts;) {
            size_t l = strcspn(p, "\n");
            int in = 0;
            for (const char *q = first_pts; *q && !in;) {
                size_t m = strcspn(q, "\n");
                in = m == l && !strncmp(p, q, l);
                q += m + (q[m] == '\n');
            }
            if (!in) {
                size_t sl = strlen(said);
                snprintf(said + sl, sizeof said - sl, "%sa point the first campaign did not have: %.*s", k++ ? "; " : "",
                         (int)l, p);
                break;
            }
            p += l + (p[l] == '\n');
        }
        if (k)
            snprintf(z->change, sizeof z->change, "run %lld: %.480s", run, said);
        json_decref(a);
        json_decref(files);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    json_decref(first);
    json_decref(first_files);
    free(first_pts);
    z->ready = z->reached && !*z->change;
    return NX_OK;
}
