/* registry_lkb.c: what the LKB report (parity/lkb/, docs/lkb.md) reads from
 * the registry: each point's kind (`how`), reason, kernel and atom bundle
 * at a class, the families of a class's view with their compute unit,
 * every evidence row, the [[bundle]] declarations and HARDWARE.toml's
 * [rates] along a chain. */
#include "registry_int.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *loc_text(const tc_node *n)
{
    nx_sbuf b = {0};
    reg_put_loc(&b, n);
    return nx_sbuf_take(&b);
}

const char *reg_dir(const reg_registry *r)
{
    return r->dir;
}

static nx_status view_of(const reg_registry *r, const char *class_name, reg_view *v, nx_err *err)
{
    int c = reg_class_find(r, class_name);
    if (c < 0)
        return nx_err_set(err, NX_EINVAL, "registry %s: no class '%s'", r->dir, class_name);
    return reg_view_build(r, (size_t)c, 0, v, err);
}

void reg_point_metas_free(reg_point_meta *m, size_t n)
{
    for (size_t i = 0; m && i < n; i++) {
        free(m[i].id);
        free(m[i].family);
        free(m[i].point);
        free(m[i].how);
        free(m[i].reason);
        free(m[i].kernel);
        free(m[i].bundle);
        free(m[i].where);
        free(m[i].unit);
    }
    free(m);
}

nx_status reg_point_metas(const reg_registry *r, const char *class_name, reg_point_meta **out, size_t *count,
                          nx_err *err)
{
    *out = NULL;
    *count = 0;
    reg_view v;
    nx_status st = view_of(r, class_name, &v, err);
    if (st)
        return st;
    size_t total = 0;
    for (size_t i = 0; i < v.nfams; i++)
        total += v.fams[i].npoints ? v.fams[i].npoints : 1;
    reg_point_meta *m = calloc(total ? total : 1, sizeof *m);
    size_t n = 0;
    int ok = m != NULL;
    for (size_t i = 0; ok && i < v.nfams; i++) {
        const reg_vfamily *f = &v.fams[i];
        const tc_node *comp = f->f[4]; /* "compute", reg_vfamily_field_names */
        const tc_node *unit = comp ? tc_get(comp, "unit") : NULL;
        /* a family without points still implements its ops: one entry, point NULL */
        for (size_t j = 0; ok && j < (f->npoints ? f->npoints : 1); j++) {
            reg_point_meta *e = &m[n++];
            e->family = strdup(f->id);
            e->unit = dup_or_null(unit && unit->kind == TC_STRING ? unit->str : NULL);
            ok = e->family != NULL;
            if (!f->npoints) {
                e->where = loc_text(f->decls[f->ndecls - 1]);
                continue;
            }
            const reg_vpoint *p = &f->points[j];
            size_t len = strlen(f->id) + strlen(p->id) + 2;
            e->id = malloc(len);
            if (e->id)
                snprintf(e->id, len, "%s.%s", f->id, p->id);
            e->point = strdup(p->id);
            e->how = strdup(p->how && p->how->kind == TC_STRING ? p->how->str : "instantiation");
            e->reason = dup_or_null(p->reason && p->reason->kind == TC_STRING ? p->reason->str : NULL);
            e->kernel = dup_or_null(p->kernel && p->kernel->kind == TC_STRING ? p->kernel->str : NULL);
            for (size_t d = p->ndecls; d-- > 0;) { /* the nearest declaration that names a bundle */
                const tc_node *b = tc_get(p->decls[d], "bundle");
                if (b && b->kind == TC_STRING) {
                    e->bundle = strdup(b->str);
                    break;
                }
            }
            e->where = loc_text(p->decls[p->ndecls - 1]);
            ok = e->id && e->point && e->how && e->where;
        }
    }
    reg_view_free(&v);
    if (!ok) {
        reg_point_metas_free(m, n);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    *out = m;
    *count = n;
    return NX_OK;
}

void reg_evidence_rows_free(reg_evidence_row *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++) {
        free(e[i].family);
        free(e[i].class_name);
        free(e[i].point);
        free(e[i].measurement);
        free(e[i].where);
        free(e[i].manifest_class);
        free(e[i].rows);
    }
    free(e);
}

nx_status reg_evidence_rows(const reg_registry *r, reg_evidence_row **out, size_t *count, nx_err *err)
{
    *out = NULL;
    *count = 0;
    reg_evidence_row *e = NULL;
    size_t n = 0, cap = 0;
    for (size_t c = 0; c < r->ncls; c++) {
        const tc_node *fams = r->cls[c].kf ? tc_get(r->cls[c].kf, "family") : NULL;
        for (size_t i = 0; fams && i < fams->nitems; i++) {
            const tc_node *f = fams->items[i], *fid = tc_get(f, "id"), *ev = tc_get(f, "evidence");
            for (size_t j = 0; ev && j < ev->nitems; j++) {
                const tc_node *x = ev->items[j], *cl = tc_get(x, "class"), *pt = tc_get(x, "point"),
                              *me = tc_get(x, "measurement"), *rows = tc_get(x, "rows");
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    reg_evidence_row *g = realloc(e, cap * sizeof *g);
                    if (!g)
                        goto oom;
                    e = g;
                }
                reg_evidence_row *y = &e[n++];
                memset(y, 0, sizeof *y);
                y->family = dup_or_null(fid ? fid->str : NULL);
                y->class_name = dup_or_null(cl && cl->kind == TC_STRING ? cl->str : NULL);
                y->point = dup_or_null(pt && pt->kind == TC_STRING ? pt->str : NULL);
                y->measurement = dup_or_null(me && me->kind == TC_STRING ? me->str : NULL);
                y->manifest_class = strdup(r->cls[c].name);
                y->where = loc_text(x);
                if (rows && rows->kind == TC_ARRAY && rows->nitems) {
                    if (!(y->rows = calloc(rows->nitems, sizeof *y->rows)))
                        goto oom;
                    for (size_t k = 0; k < rows->nitems; k++)
                        if (rows->items[k]->kind == TC_INT)
                            y->rows[y->nrows++] = rows->items[k]->i;
                }
                if (!y->where || !y->manifest_class)
                    goto oom;
            }
        }
    }
    *out = e;
    *count = n;
    return NX_OK;
oom:
    reg_evidence_rows_free(e, n);
    return nx_err_set(err, NX_ENOMEM, "out of memory");
}

void reg_bundles_free(reg_bundle *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++) {
        free(b[i].id);
        for (size_t k = 0; k < RG_BUNDLE_NFIELDS; k++)
            free(b[i].field[k]);
        for (size_t k = 0; k < b[i].nclasses; k++)
            free(b[i].classes[k]);
        free(b[i].classes);
        free(b[i].where);
        free(b[i].problems);
    }
    free(b);
}

const char *const reg_bundle_fields[RG_BUNDLE_NFIELDS] = {"mma", "operands", "schedule", "accumulator",
                                                          "description"};

nx_status reg_bundles(const reg_registry *r, reg_bundle **out, size_t *count, nx_err *err)
{
    *out = NULL;
    *count = 0;
    reg_bundle *b = NULL;
    size_t n = 0, cap = 0;
    for (size_t c = 0; c < r->ncls; c++) {
        const tc_node *bs = r->cls[c].kf ? tc_get(r->cls[c].kf, "bundle") : NULL;
        for (size_t i = 0; bs && i < bs->nitems; i++) {
            const tc_node *t = bs->items[i];
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                reg_bundle *g = realloc(b, cap * sizeof *g);
                if (!g)
                    goto oom;
                b = g;
            }
            reg_bundle *y = &b[n++];
            memset(y, 0, sizeof *y);
            nx_sbuf pb = {0};
            y->where = loc_text(t);
            for (size_t k = 0; t->kind == TC_TABLE && k < t->nitems; k++) {
                const tc_node *v = t->items[k];
                int known = strcmp(v->key, "id") == 0 || strcmp(v->key, "classes") == 0;
                for (size_t f = 0; f < RG_BUNDLE_NFIELDS; f++)
                    if (strcmp(v->key, reg_bundle_fields[f]) == 0) {
                        known = 1;
                        if (v->kind == TC_STRING)
                            y->field[f] = strdup(v->str);
                        else
                            reg_put_loc(&pb, v), nx_sbuf_printf(&pb, ": key '%s' must be a string\n", v->key);
                    }
                if (!known)
                    reg_put_loc(&pb, v), nx_sbuf_printf(&pb, ": unknown key '%.200s%s' in [[bundle]]\n", v->key, strlen(v->key) > 200 ? "..." : "");
            }
            const tc_node *id = tc_get(t, "id"), *cl = tc_get(t, "classes");
            if (id && id->kind == TC_STRING)
                y->id = strdup(id->str);
            else
                reg_put_loc(&pb, t), nx_sbuf_printf(&pb, ": [[bundle]] without a string 'id'\n");
            if (cl && cl->kind == TC_ARRAY) {
                y->classes = calloc(cl->nitems ? cl->nitems : 1, sizeof *y->classes);
                if (!y->classes)
                    goto oom;
                for (size_t k = 0; k < cl->nitems; k++)
                    if (cl->items[k]->kind == TC_STRING)
                        y->classes[y->nclasses++] = strdup(cl->items[k]->str);
            } else {
                reg_put_loc(&pb, t), nx_sbuf_printf(&pb, ": [[bundle]] without 'classes' (an array of class names)\n");
            }
            for (size_t f = 0; f < 4; f++)
                if (!y->field[f] && !tc_get(t, reg_bundle_fields[f]))
                    reg_put_loc(&pb, t),
                        nx_sbuf_printf(&pb, ": [[bundle]] '%s' without '%s'\n", y->id ? y->id : "?",
                                       reg_bundle_fields[f]);
            y->problems = nx_sbuf_take(&pb);
        }
    }
    *out = b;
    *count = n;
    return NX_OK;
oom:
    reg_bundles_free(b, n);
    return nx_err_set(err, NX_ENOMEM, "out of memory");
}

int reg_class_rate(const reg_registry *r, const char *class_name, const char *key, double *value, char *where,
                   size_t len)
{
    int c = reg_class_find(r, class_name);
    for (size_t depth = 0; c >= 0 && depth <= r->ncls; depth++, c = r->cls[c].parent) {
        const tc_node *rates = r->cls[c].hw ? tc_get(r->cls[c].hw, "rates") : NULL;
        const tc_node *v = rates ? tc_get(rates, key) : NULL;
        if (!v)
            continue;
        if (v->kind != TC_INT && v->kind != TC_FLOAT)
            return -1;
        *value = v->kind == TC_INT ? (double)v->i : v->f;
        if (where && len) {
            char *l = loc_text(v);
            snprintf(where, len, "%s", l ? l : "?");
            free(l);
        }
        return 1;
    }
    return 0;
}

char *reg_rates_problems(const reg_registry *r)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s", "");
    for (size_t c = 0; c < r->ncls; c++) {
        const tc_node *rates = r->cls[c].hw ? tc_get(r->cls[c].hw, "rates") : NULL;
        for (size_t i = 0; rates && i < rates->nitems; i++) {
            const tc_node *v = rates->items[i];
            int known = 0;
            for (const char *const *k = reg_rate_keys; *k; k++)
                known |= strcmp(*k, v->key) == 0;
            if (!known)
                reg_put_loc(&b, v), nx_sbuf_printf(&b, ": unknown key '%.200s%s' in [rates]\n", v->key, strlen(v->key) > 200 ? "..." : "");
            else if ((v->kind != TC_INT && v->kind != TC_FLOAT) ||
                     (v->kind == TC_INT ? v->i <= 0 || v->i > 1000000000000LL : !(v->f >= 1e-6 && v->f <= 1e12)))
                /* a rate is divided into bytes and flops: 5e-324 made the roofline's times inf and the
                 * coverage NaN, inf made them 0 */
                reg_put_loc(&b, v), nx_sbuf_printf(&b, ": [rates] %s must be a number in [1e-6, 1e12]\n", v->key);
        }
    }
    return nx_sbuf_take(&b);
}

const char *const reg_rate_keys[] = {"memory_gbs", "tensor_tflops", "vector_tflops", NULL};
