/* lkb_out.c: the LKB report as text and as JSON (docs/lkb.md names every
 * number and its arithmetic). */
#include "lkb.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "nx_sbuf.h"

static const char *const res_kind[] = {"source", "shadow", "copy"};

static double pct(double f)
{
    return 100.0 * f;
}

static void put_ttpv(nx_sbuf *b, int known, int64_t secs, int early, const char *id, const char *utc)
{
    char d[64];
    ledger_format_duration(secs, d, sizeof d);
    if (known)
        nx_sbuf_printf(b, "%s (record %s at %s%s)", d, id, utc,
                       early ? ", before the class's first campaign: TTPV 0" : "");
}

char *lkb_text(const lkb_report *r)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "LKB report: class %s, registry %s\n", r->class_name, r->kernels);
    if (r->has_step) {
        nx_sbuf_printf(&b, "step: model %s (%s), %lld layers, %zu ops\n", r->model, r->step.path, r->step.layers,
                       r->step.nops);
        for (int k = 0; k < 3; k++) {
            const lkb_coverage *c = &r->cov[k];
            nx_sbuf_printf(&b, "\nC%lld: LKB coverage %.2f%% of the step, measured on this class %.2f%%\n", c->c,
                           pct(c->coverage), pct(c->measured));
            nx_sbuf_printf(&b,
                           "  Shared %.2f%% (measured on this class), shared-unmeasured %.2f%%, parameterisation "
                           "%.2f%%, policy variant %.2f%%, novel %.2f%% of the step\n",
                           pct(c->share[LKB_SHARED]), pct(c->share[LKB_SHARED_UNMEASURED]), pct(c->share[LKB_PARAM]),
                           pct(c->share[LKB_POLICY]), pct(c->share[LKB_NOVEL]));
            nx_sbuf_printf(&b, "  weights: %zu op(s) by measured time, %zu by the roofline model (HARDWARE.toml "
                           "[rates]); step time %.6g s\n",
                           c->n_measured_w, c->n_model_w, c->total_s);
            for (size_t i = 0; i < c->nops; i++) {
                const lkb_op_at *o = &c->ops[i];
                nx_sbuf_printf(&b, "  %-12s %-32s %-18s %6.2f%%  %s%s\n", o->op->id, *o->point ? o->point : "-",
                               lkb_cat_names[o->cat], pct(c->total_s > 0 ? o->t_s / c->total_s : 0),
                               o->weight_measured ? "measured" : "roofline",
                               o->no_rule ? ", no rule of this class covers it"
                               : o->cat == LKB_NOVEL ? ", no family implements it"
                               : o->covered && o->in_envelope ? ", optimized (inside the envelope)"
                               : o->covered ? ", not claimed optimized (outside the envelope)"
                                            : ", a copy point (residual)");
            }
        }
    } else {
        nx_sbuf_printf(&b, "step: none (--model M reads kernels/models/M/STEP.toml): no coverage\n");
    }
    nx_sbuf_printf(&b, "\nevidence envelope (class %s: points and rows with a record):\n", r->class_name);
    if (!r->nenv)
        nx_sbuf_printf(&b, "  none: no record on this class; nothing is claimed optimized\n");
    for (size_t i = 0; i < r->nenv; i++) { /* one line per family, its points in manifest order */
        if (i == 0 || strcmp(r->env[i - 1].family, r->env[i].family) != 0)
            nx_sbuf_printf(&b, "%s  %s: ", i ? "\n" : "", r->env[i].family);
        else
            nx_sbuf_printf(&b, "; ");
        nx_sbuf_printf(&b, "%s rows", r->env[i].point);
        for (size_t k = 0; k < r->env[i].nrows; k++)
            nx_sbuf_printf(&b, "%s%lld", k ? ", " : " ", r->env[i].rows[k]);
    }
    if (r->nenv)
        nx_sbuf_printf(&b, "\n");
    nx_sbuf_printf(&b, "\nLKB residual: %lld entries: %lld source file(s) (%lld lines), %lld [shadow], %lld copy "
                   "point(s)\n",
                   r->res_count, r->res_sources, r->res_loc, r->res_shadow, r->res_copy);
    for (size_t i = 0; i < r->nres; i++) {
        const lkb_residual *x = &r->res[i];
        nx_sbuf_printf(&b, "  %-6s %s", res_kind[x->kind], x->what);
        if (x->kind == LKB_RES_SOURCE)
            nx_sbuf_printf(&b, " (%s, %lld lines)", x->scope, x->lines);
        nx_sbuf_printf(&b, ": why: %s; measurement: %s%s%s%s\n", x->why ? x->why : "none given",
                       x->measurement ? x->measurement : "none", x->in_forks ? "; listed in FORKS.md" : "",
                       x->users >= 1 ? "; users: " : "", x->users >= 1 ? x->users_text : "");
    }
    nx_sbuf_printf(&b, "single-class bucket: %zu point(s) on a bundle only class %s realises\n", r->nsingle,
                   r->class_name);
    for (size_t i = 0; i < r->nsingle; i++)
        nx_sbuf_printf(&b, "  %s (bundle %s, %s)\n", r->single[i].point, r->single[i].bundle, r->single[i].where);
    nx_sbuf_printf(&b, "promotion candidates (a residual entry with a second user): %zu\n", r->n_candidates);
    for (size_t i = 0; i < r->nres; i++)
        if (r->res[i].users >= 2)
            nx_sbuf_printf(&b, "  %s (users: %s)\n", r->res[i].what, r->res[i].users_text);
    if (r->yield.computed) {
        const lkb_yield *y = &r->yield;
        nx_sbuf_printf(&b, "\nparameterization yield since %s: %lld residual line(s) deleted (%lld -> %lld), "
                       "residual entries %lld -> %lld\n", y->before, y->loc_before - y->loc_after, y->loc_before,
                       y->loc_after, y->count_before, y->count_after);
        nx_sbuf_printf(&b, "  families promoted: %zu%s%s\n", y->nfamilies, y->nfamilies ? ": " : "",
                       y->families_promoted);
        nx_sbuf_printf(&b, "  points promoted: %zu%s%s\n", y->npoints, y->npoints ? ": " : "", y->points_promoted);
        if (y->nnot)
            nx_sbuf_printf(&b, "  not promotions: %s\n", y->points_not);
    }
    nx_sbuf_printf(&b, "\nTTPV (t0: %s):\n", r->t0_what);
    if (!r->nttpv)
        nx_sbuf_printf(&b, "  no record on this class\n");
    for (size_t i = 0; i < r->nttpv; i++) {
        const lkb_ttpv *t = &r->ttpv[i];
        nx_sbuf_printf(&b, "  %s: speed ", t->point);
        if (t->speed_known)
            put_ttpv(&b, 1, t->speed_s, t->speed_early, t->speed_id, t->speed_utc);
        else
            nx_sbuf_printf(&b, "not yet (no record beat its baseline beyond the noise band)");
        nx_sbuf_printf(&b, "; energy ");
        if (t->energy_known)
            put_ttpv(&b, 1, t->energy_s, t->energy_early, t->energy_id, t->energy_utc);
        else if (!t->energy_readable)
            nx_sbuf_printf(&b, "not measured: no energy counter readable here");
        else
            nx_sbuf_printf(&b, "not yet (no record beat its baseline beyond the noise band)");
        nx_sbuf_printf(&b, "\n");
    }
    nx_sbuf_printf(&b, "\nledger fields: residual_count %lld, residual_loc %lld, residual_copy_points %lld, "
                   "residual_single_class %zu",
                   r->res_count, r->res_loc, r->res_copy, r->nsingle);
    if (r->has_step)
        nx_sbuf_printf(&b, ", coverage_c1 %.4f (measured %.4f), coverage_c16 %.4f (measured %.4f), coverage_c128 "
                       "%.4f (measured %.4f)",
                       r->cov[0].coverage, r->cov[0].measured, r->cov[1].coverage, r->cov[1].measured,
                       r->cov[2].coverage, r->cov[2].measured);
    nx_sbuf_printf(&b, "\n");
    return nx_sbuf_take(&b);
}

static json_t *jstr(const char *s)
{
    return s ? json_string(s) : json_null();
}

char *lkb_json(const lkb_report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "class", json_string(r->class_name));
    json_object_set_new(o, "kernels", json_string(r->kernels));
    json_object_set_new(o, "model", r->has_step ? json_string(r->model) : json_null());
    static const char *const ck[3] = {"c1", "c16", "c128"};
    static const char *const cat_keys[LKB_NCAT] = {"shared", "shared_unmeasured", "parameterisation",
                                                   "policy_variant", "novel"};
    for (int k = 0; k < 3; k++) {
        if (!r->has_step) {
            json_object_set_new(o, ck[k], json_null());
            continue;
        }
        const lkb_coverage *c = &r->cov[k];
        json_t *j = json_object(), *ops = json_array();
        json_object_set_new(j, "rows", json_integer(c->c));
        json_object_set_new(j, "coverage", json_real(c->coverage));
        json_object_set_new(j, "coverage_measured", json_real(c->measured));
        for (int q = 0; q < LKB_NCAT; q++)
            json_object_set_new(j, cat_keys[q], json_real(c->share[q]));
        json_object_set_new(j, "step_s", json_real(c->total_s));
        json_object_set_new(j, "weights_measured", json_integer((json_int_t)c->n_measured_w));
        json_object_set_new(j, "weights_roofline", json_integer((json_int_t)c->n_model_w));
        for (size_t i = 0; i < c->nops; i++) {
            const lkb_op_at *x = &c->ops[i];
            json_t *e = json_object();
            json_object_set_new(e, "op", json_string(x->op->id));
            json_object_set_new(e, "point", *x->point ? json_string(x->point) : json_null());
            json_object_set_new(e, "shape", json_string(x->shape));
            json_object_set_new(e, "category", json_string(cat_keys[x->cat]));
            json_object_set_new(e, "no_rule", json_boolean(x->no_rule));
            json_object_set_new(e, "covered", json_boolean(x->covered));
            json_object_set_new(e, "in_envelope", json_boolean(x->in_envelope));
            json_object_set_new(e, "time_s", json_real(x->t_s));
            json_object_set_new(e, "weight", json_string(x->weight_measured ? "measured" : "roofline"));
            json_array_append_new(ops, e);
        }
        json_object_set_new(j, "ops", ops);
        json_object_set_new(o, ck[k], j);
    }
    json_t *env = json_object();
    for (size_t i = 0; i < r->nenv; i++) {
        json_t *fam = json_object_get(env, r->env[i].family);
        if (!fam) {
            fam = json_object();
            json_object_set_new(env, r->env[i].family, fam);
        }
        json_t *rows = json_array();
        for (size_t k = 0; k < r->env[i].nrows; k++)
            json_array_append_new(rows, json_integer(r->env[i].rows[k]));
        json_object_set_new(fam, r->env[i].point, rows);
    }
    json_object_set_new(o, "envelope", env);
    json_t *res = json_array();
    for (size_t i = 0; i < r->nres; i++) {
        const lkb_residual *x = &r->res[i];
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(res_kind[x->kind]));
        json_object_set_new(e, "what", json_string(x->what));
        json_object_set_new(e, "scope", jstr(x->scope));
        json_object_set_new(e, "lines", json_integer(x->lines));
        json_object_set_new(e, "why", jstr(x->why));
        json_object_set_new(e, "measurement", jstr(x->measurement));
        json_object_set_new(e, "in_forks", json_boolean(x->in_forks));
        json_object_set_new(e, "users", json_integer(x->users));
        json_object_set_new(e, "where", jstr(x->where));
        json_array_append_new(res, e);
    }
    json_object_set_new(o, "residual", res);
    json_t *sc = json_array();
    for (size_t i = 0; i < r->nsingle; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "point", json_string(r->single[i].point));
        json_object_set_new(e, "bundle", json_string(r->single[i].bundle));
        json_array_append_new(sc, e);
    }
    json_object_set_new(o, "single_class", sc);
    json_t *pc = json_array();
    for (size_t i = 0; i < r->nres; i++)
        if (r->res[i].users >= 2)
            json_array_append_new(pc, json_string(r->res[i].what));
    json_object_set_new(o, "promotion_candidates", pc);
    json_t *tt = json_array();
    for (size_t i = 0; i < r->nttpv; i++) {
        const lkb_ttpv *t = &r->ttpv[i];
        json_t *e = json_object();
        json_object_set_new(e, "point", json_string(t->point));
        json_object_set_new(e, "speed_s", t->speed_known ? json_integer(t->speed_s) : json_null());
        json_object_set_new(e, "speed_before_t0", json_boolean(t->speed_known && t->speed_early));
        json_object_set_new(e, "speed_record", t->speed_known ? json_string(t->speed_id) : json_null());
        json_object_set_new(e, "energy_s", t->energy_known ? json_integer(t->energy_s) : json_null());
        json_object_set_new(e, "energy_before_t0", json_boolean(t->energy_known && t->energy_early));
        json_object_set_new(e, "energy_record", t->energy_known ? json_string(t->energy_id) : json_null());
        json_object_set_new(e, "energy", json_string(t->energy_known ? "measured" : t->energy_readable
                                                                                    ? "not yet"
                                                                                    : "not measured: no energy counter "
                                                                                      "readable here"));
        json_array_append_new(tt, e);
    }
    json_object_set_new(o, "ttpv", tt);
    json_object_set_new(o, "ttpv_t0", json_string(r->t0_what));
    if (r->yield.computed) {
        json_t *y = json_object();
        json_object_set_new(y, "before", json_string(r->yield.before));
        json_object_set_new(y, "residual_lines_deleted", json_integer(r->yield.loc_before - r->yield.loc_after));
        json_object_set_new(y, "residual_loc_before", json_integer(r->yield.loc_before));
        json_object_set_new(y, "residual_count_before", json_integer(r->yield.count_before));
        json_object_set_new(y, "families_promoted", json_integer((json_int_t)r->yield.nfamilies));
        json_object_set_new(y, "points_promoted", json_integer((json_int_t)r->yield.npoints));
        json_object_set_new(y, "not_promotions", json_string(r->yield.points_not ? r->yield.points_not : ""));
        json_object_set_new(y, "families", json_string(r->yield.families_promoted));
        json_object_set_new(y, "points", json_string(r->yield.points_promoted));
        json_object_set_new(o, "yield", y);
    }
    json_object_set_new(o, "residual_count", json_integer(r->res_count));
    json_object_set_new(o, "residual_loc", json_integer(r->res_loc));
    json_object_set_new(o, "residual_copy_points", json_integer(r->res_copy));
    json_object_set_new(o, "residual_single_class", json_integer((json_int_t)r->nsingle));
    for (int k = 0; k < 3; k++) {
        char key[40];
        snprintf(key, sizeof key, "coverage_%s", ck[k]);
        json_object_set_new(o, key, r->has_step ? json_real(r->cov[k].coverage) : json_null());
        snprintf(key, sizeof key, "coverage_%s_measured", ck[k]);
        json_object_set_new(o, key, r->has_step ? json_real(r->cov[k].measured) : json_null());
    }
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *out = malloc(n + 2);
    if (out) {
        memcpy(out, text, n);
        out[n] = '\n', out[n + 1] = 0;
    }
    free(text);
    return out;
}
