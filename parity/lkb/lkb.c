/* lkb.c: the LKB report of a class (lkb.h, docs/lkb.md): coverage of a
 * model's step, the evidence envelope, the residual and its single-class
 * bucket, promotion candidates, TTPV and parameterization yield. */
#include "lkb.h"
#include "famdesc.h"
#include "campaign.h"

#include <dirent.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ledger.h"
#include "nx_sbuf.h"
#include "tomlc.h"

const char *const lkb_cat_names[LKB_NCAT] = {"shared", "shared-unmeasured", "parameterisation", "policy variant",
                                             "novel"};
static const long long batch_c[3] = {1, 16, 128};

static nx_status oom(nx_err *err)
{
    return nx_err_set(err, NX_ENOMEM, "out of memory");
}

static char *fmt(const char *f, const char *a, const char *b)
{
    nx_sbuf s = {0};
    nx_sbuf_printf(&s, f, a, b);
    return nx_sbuf_take(&s);
}

static char *read_all(const char *path)
{
    FILE *f = nx_fopen_input(path, NULL);
    if (!f)
        return NULL;
    nx_sbuf b = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        nx_sbuf_put(&b, buf, n);
    fclose(f);
    nx_sbuf_printf(&b, "%s", "");
    return nx_sbuf_take(&b);
}

/* `text` appears between backticks in FORKS.md. */
static int in_forks(const char *forks, const char *text)
{
    if (!forks || !text)
        return 0;
    size_t n = strlen(text);
    for (const char *p = strchr(forks, '`'); p; p = strchr(p + 1, '`'))
        if (strncmp(p + 1, text, n) == 0 && p[1 + n] == '`')
            return 1;
    return 0;
}

/* ---- the residual ------------------------------------------------------ */

typedef struct res_list {
    lkb_residual *v;
    size_t n;
} res_list;

static lkb_residual *res_push(res_list *l)
{
    lkb_residual *g = realloc(l->v, (l->n + 1) * sizeof *g);
    if (!g)
        return NULL;
    l->v = g;
    memset(&g[l->n], 0, sizeof *g);
    g[l->n].users = 1;
    return &g[l->n++];
}

static void res_free(lkb_residual *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].what), free(v[i].scope), free(v[i].why), free(v[i].measurement), free(v[i].users_text),
            free(v[i].kernel_id);
        free(v[i].where);
    }
    free(v);
}

static long long count_lines(const char *path)
{
    FILE *f = nx_fopen_input(path, NULL);
    if (!f)
        return 0;
    long long n = 0;
    int c, last = '\n';
    while ((c = getc(f)) != EOF) {
        n += c == '\n';
        last = c;
    }
    fclose(f);
    return n + (last != '\n');
}

static int is_data_file(const char *rel_in_class, const char *name)
{
    if (strcmp(name, "KERNEL.toml") == 0)
        return 1;
    size_t n = strlen(name);
    if (n >= 3 && strcmp(name + n - 3, ".md") == 0)
        return 1;
    return strcmp(rel_in_class, "HARDWARE.toml") == 0 || strcmp(rel_in_class, "MEASUREMENTS.toml") == 0 ||
           strcmp(rel_in_class, "common/KERNEL_FAMILIES.toml") == 0 ||
           strcmp(rel_in_class, "common/FUSIONS.toml") == 0;
}

typedef struct kernel_toml {
    char *id, *why, *measurement, *users_text, *where;
    int users;
    char *shadow_point, *shadow_why, *shadow_measurement, *shadow_where;
} kernel_toml;

static void kt_free(kernel_toml *k)
{
    free(k->id), free(k->why), free(k->measurement), free(k->users_text), free(k->where);
    free(k->shadow_point), free(k->shadow_why), free(k->shadow_measurement), free(k->shadow_where);
    memset(k, 0, sizeof *k);
}

static char *node_loc(const tc_node *n)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s:%d", n->source ? n->source : "?", n->key_line > 0 ? n->key_line : n->line > 0 ? n->line : 1);
    return nx_sbuf_take(&b);
}

static const char *str_of(const tc_node *t, const char *key)
{
    const tc_node *v = tc_get(t, key);
    return v && v->kind == TC_STRING ? v->str : NULL;
}

/* Whether name is a class (KDIR/NAME/HARDWARE.toml) or a model
 * (KDIR/models/NAME/STEP.toml) of the registry. */
static int user_exists(const char *kdir, const char *name)
{
    char p[4400];
    struct stat sb;
    if (!*name || strchr(name, '/'))
        return 0;
    snprintf(p, sizeof p, "%s/%s/HARDWARE.toml", kdir, name);
    if (stat(p, &sb) == 0)
        return 1;
    snprintf(p, sizeof p, "%s/models/%s/STEP.toml", kdir, name);
    return stat(p, &sb) == 0;
}

/* Reads DIR/KERNEL.toml when present; problems (unknown keys, kinds, users
 * that name no class or model of KDIR) are appended to probs as
 * "file:line: error: ..." lines. */
static nx_status kt_load(const char *kdir, const char *dir, kernel_toml *k, nx_sbuf *probs, nx_err *err)
{
    memset(k, 0, sizeof *k);
    char path[4200];
    snprintf(path, sizeof path, "%s/KERNEL.toml", dir);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return NX_OK;
    tc_node *root = NULL;
    nx_err e = {0};
    if (tc_parse_file(path, &root, &e)) {
        if (probs)
            nx_sbuf_printf(probs, "%s: error: %s\n", path, e.msg);
        else
            return nx_err_set(err, NX_EINVAL, "%s", e.msg);
        return NX_OK;
    }
    static const char *const keys[] = {"id", "family", "description", "why", "measurement", "users", "shadow", NULL};
    static const char *const skeys[] = {"point", "why", "measurement", NULL};
    for (size_t i = 0; i < root->nitems; i++) {
        const tc_node *v = root->items[i];
        int ok = 0;
        for (const char *const *q = keys; *q; q++)
            ok |= strcmp(*q, v->key) == 0;
        if (!ok && probs) {
            char *l = node_loc(v);
            nx_sbuf_printf(probs, "%s: error: unknown key '%.200s%s' in KERNEL.toml\n", l, v->key, strlen(v->key) > 200 ? "..." : "");
            free(l);
        }
    }
    k->where = strdup(path);
    k->id = lkb_strdup(str_of(root, "id"));
    k->why = lkb_strdup(str_of(root, "why"));
    k->measurement = lkb_strdup(str_of(root, "measurement"));
    const tc_node *u = tc_get(root, "users");
    if (u && u->kind == TC_ARRAY) {
        nx_sbuf b = {0};
        for (size_t i = 0; i < u->nitems; i++)
            if (u->items[i]->kind == TC_STRING) {
                int rep = 0;
                for (size_t j = 0; j < i && !rep; j++)
                    rep = u->items[j]->kind == TC_STRING && !strcmp(u->items[j]->str, u->items[i]->str);
                if (rep) { /* one user once: a repeated name would pass rule 1 alone */
                    if (probs) {
                        char *l = node_loc(u->items[i]);
                        nx_sbuf_printf(probs, "%s: error: users: '%s' is named twice\n", l, u->items[i]->str);
                        free(l);
                    }
                    continue;
                }
                nx_sbuf_printf(&b, "%s%s", k->users ? ", " : "", u->items[i]->str), k->users++;
                if (probs && !user_exists(kdir, u->items[i]->str)) {
                    char *l = node_loc(u->items[i]);
                    nx_sbuf_printf(probs, "%s: error: users: '%s' is no class (%s/NAME/HARDWARE.toml) and no model "
                                   "(%s/models/NAME/STEP.toml) of the registry\n",
                                   l, u->items[i]->str, kdir, kdir);
                    free(l);
                }
            }
        k->users_text = nx_sbuf_take(&b);
    }
    const tc_node *sh = tc_get(root, "shadow");
    if (sh && sh->kind == TC_TABLE) {
        for (size_t i = 0; i < sh->nitems && probs; i++) {
            int ok = 0;
            for (const char *const *q = skeys; *q; q++)
                ok |= strcmp(*q, sh->items[i]->key) == 0;
            if (!ok) {
                char *l = node_loc(sh->items[i]);
                nx_sbuf_printf(probs, "%s: error: unknown key '%.200s%s' in [shadow]\n", l, sh->items[i]->key,
                               strlen(sh->items[i]->key) > 200 ? "..." : "");
                free(l);
            }
        }
        k->shadow_point = lkb_strdup(str_of(sh, "point"));
        k->shadow_why = lkb_strdup(str_of(sh, "why"));
        k->shadow_measurement = lkb_strdup(str_of(sh, "measurement"));
        k->shadow_where = node_loc(sh);
        if (!k->shadow_point && probs)
            nx_sbuf_printf(probs, "%s: error: [shadow] without 'point' (the FAMILY.POINT it shadows)\n",
                           k->shadow_where);
    } else if (sh && probs) {
        char *l = node_loc(sh);
        nx_sbuf_printf(probs, "%s: error: 'shadow' must be a table [shadow]\n", l);
        free(l);
    }
    tc_free(root);
    return NX_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walks DIR/<class>/REL (depth-limited), adding each source file and each
 * [shadow] to l. */
static nx_status walk(const char *kdir, const char *cls, const char *rel, int depth, const char *forks, res_list *l,
                      nx_sbuf *probs, nx_err *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s%s%s", kdir, cls, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d)
        return NX_OK;
    char **names = NULL;
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char **g = realloc(names, (nn + 1) * sizeof *g);
        if (g)
            names = g;
        if (!g || !(names[nn] = strdup(de->d_name))) {
            for (size_t i = 0; i < nn; i++)
                free(names[i]);
            free(names);
            closedir(d);
            return oom(err);
        }
        nn++;
    }
    closedir(d);
    if (nn > 1) /* an empty folder: names is NULL, which qsort may not be given */
        qsort(names, nn, sizeof *names, cmp_names);
    kernel_toml kt;
    nx_status st = kt_load(kdir, dir, &kt, probs, err);
    const char *scope = "class";
    char first[256] = "";
    if (*rel) {
        snprintf(first, sizeof first, "%s", rel);
        first[strcspn(first, "/")] = 0;
        if (strcmp(first, "common") != 0)
            scope = first;
    }
    if (!st && kt.shadow_point) {
        lkb_residual *e = res_push(l);
        if (!e)
            st = oom(err);
        else {
            char *what = fmt("%s%s", kt.shadow_point, "");
            char key[512];
            snprintf(key, sizeof key, "%s:%s", cls, kt.shadow_point);
            e->kind = LKB_RES_SHADOW;
            e->what = what;
            e->why = lkb_strdup(kt.shadow_why ? kt.shadow_why : kt.why);
            e->measurement = lkb_strdup(kt.shadow_measurement ? kt.shadow_measurement : kt.measurement);
            e->in_forks = in_forks(forks, key) || in_forks(forks, kt.shadow_point);
            e->users = kt.users ? kt.users : 1;
            e->users_text = lkb_strdup(kt.users_text);
            e->kernel_id = lkb_strdup(kt.id);
            e->where = lkb_strdup(kt.shadow_where);
            e->scope = strdup(scope);
        }
    }
    for (size_t i = 0; i < nn && !st; i++) {
        char sub[4400], full[8600];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        snprintf(full, sizeof full, "%s/%s", dir, names[i]);
        struct stat sb;
        if (lstat(full, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth < 8)
                st = walk(kdir, cls, sub, depth + 1, forks, l, probs, err);
            continue;
        }
        if (!S_ISREG(sb.st_mode) || is_data_file(sub, names[i]))
            continue;
        lkb_residual *e = res_push(l);
        if (!e) {
            st = oom(err);
            break;
        }
        e->kind = LKB_RES_SOURCE;
        e->what = fmt("%s/%s", cls, sub);
        e->scope = strdup(scope);
        e->lines = count_lines(full);
        e->why = lkb_strdup(kt.why);
        e->measurement = lkb_strdup(kt.measurement);
        e->users = kt.users ? kt.users : 1;
        e->users_text = lkb_strdup(kt.users_text);
        e->kernel_id = lkb_strdup(kt.id);
        e->where = lkb_strdup(kt.where ? kt.where : full);
        e->in_forks = in_forks(forks, e->what);
        if (!e->what || !e->scope)
            st = oom(err);
    }
    kt_free(&kt);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    return st;
}

/* The residual of class cls in registry r: sources, shadows, copy points. */
static nx_status residual_of(const reg_registry *r, const char *cls, res_list *l, nx_sbuf *probs, nx_err *err)
{
    const char *kdir = reg_dir(r);
    char fpath[4096];
    snprintf(fpath, sizeof fpath, "%s/FORKS.md", kdir);
    char *forks = read_all(fpath);
    nx_status st = walk(kdir, cls, "", 0, forks, l, probs, err);
    reg_point_meta *m = NULL;
    size_t nm = 0;
    reg_evidence_row *ev = NULL;
    size_t nev = 0;
    if (!st)
        st = reg_point_metas(r, cls, &m, &nm, err);
    if (!st)
        st = reg_evidence_rows(r, &ev, &nev, err);
    for (size_t i = 0; i < nm && !st; i++) {
        if (!m[i].how || strcmp(m[i].how, "copy") != 0)
            continue;
        lkb_residual *e = res_push(l);
        if (!e) {
            st = oom(err);
            break;
        }
        e->kind = LKB_RES_COPY;
        e->what = strdup(m[i].id);
        e->why = lkb_strdup(m[i].reason);
        e->where = lkb_strdup(m[i].where);
        for (size_t k = 0; k < nev && !e->measurement; k++)
            if (ev[k].class_name && ev[k].point && ev[k].family && strcmp(ev[k].class_name, cls) == 0 &&
                strcmp(ev[k].family, m[i].family) == 0 && strcmp(ev[k].point, m[i].point) == 0)
                e->measurement = lkb_strdup(ev[k].measurement);
        /* listed as CLASS:FAMILY.POINT for this class or the ancestor it inherits the copy from */
        e->in_forks = in_forks(forks, m[i].id);
        const char *c = cls;
        for (int depth = 0; c && (size_t)depth <= reg_class_count(r) && !e->in_forks; depth++, c = reg_class_parent(r, c)) {
            char key[512];
            snprintf(key, sizeof key, "%s:%s", c, m[i].id);
            e->in_forks = in_forks(forks, key);
        }
    }
    reg_point_metas_free(m, nm);
    reg_evidence_rows_free(ev, nev);
    free(forks);
    return st;
}

/* ---- lowering rules ---------------------------------------------------- */

typedef struct rule {
    char *family, *op, *point, *where;
    long long lo, hi;
} rule;

typedef struct rules {
    rule *v;
    size_t n;
} rules;

static void rules_free(rules *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        free(rs->v[i].family), free(rs->v[i].op), free(rs->v[i].point), free(rs->v[i].where);
    free(rs->v);
    memset(rs, 0, sizeof *rs);
}

/* The rules of cls's chain, nearest class first, each file in its order. */
static nx_status rules_load(const reg_registry *r, const char *cls, rules *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    const char *c = cls;
    nx_status st = NX_OK;
    static const char *const top[] = {"rule", NULL};
    static const char *const rk[] = {"family", "op", "rows", "point", "description", NULL};
    for (int depth = 0; c && (size_t)depth <= reg_class_count(r) && !st; depth++, c = reg_class_parent(r, c)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/common/FUSIONS.toml", reg_dir(r), c);
        struct stat sb;
        if (stat(path, &sb) != 0)
            continue;
        tc_node *root = NULL;
        if ((st = tc_parse_file(path, &root, err)))
            break;
        const tc_node *rl = tc_get(root, "rule");
        for (size_t i = 0; i < root->nitems && !st; i++)
            if (strcmp(root->items[i]->key, top[0]) != 0)
                st = tc_errf(err, NX_EINVAL, root->items[i], "unknown key '%s' in FUSIONS.toml", root->items[i]->key);
        if (!st && rl && rl->kind != TC_ARRAY)
            st = tc_errf(err, NX_EINVAL, rl, "'rule' must be an array of tables ([[rule]])");
        for (size_t i = 0; !st && rl && i < rl->nitems; i++) {
            const tc_node *t = rl->items[i];
            for (size_t k = 0; k < t->nitems && !st; k++) {
                int ok = 0;
                for (const char *const *q = rk; *q; q++)
                    ok |= strcmp(*q, t->items[k]->key) == 0;
                if (!ok)
                    st = tc_errf(err, NX_EINVAL, t->items[k], "unknown key '%s' in [[rule]]", t->items[k]->key);
            }
            const char *fam = str_of(t, "family"), *pt = str_of(t, "point"), *op = str_of(t, "op");
            if (!st && (!fam || !pt))
                st = tc_errf(err, NX_EINVAL, t, "[[rule]] needs 'family' and 'point' (strings)");
            if (!st && tc_get(t, "op") && !op)
                st = tc_errf(err, NX_EINVAL, tc_get(t, "op"), "'op' must be a string");
            long long lo = 1, hi = (1LL << 62);
            const tc_node *rows = tc_get(t, "rows");
            if (!st && rows) {
                if (rows->kind == TC_INT)
                    lo = hi = rows->i;
                else if (rows->kind == TC_ARRAY && rows->nitems == 2 && rows->items[0]->kind == TC_INT &&
                         rows->items[1]->kind == TC_INT)
                    lo = rows->items[0]->i, hi = rows->items[1]->i;
                else
                    lo = 0;
                if (lo < 1 || hi < lo)
                    st = tc_errf(err, NX_EINVAL, rows, "'rows' must be an integer or [MIN, MAX], 1 <= MIN <= MAX");
            }
            if (st)
                break;
            rule *g = realloc(out->v, (out->n + 1) * sizeof *g);
            if (!g) {
                st = oom(err);
                break;
            }
            out->v = g;
            rule *x = &out->v[out->n++];
            x->family = strdup(fam), x->point = strdup(pt), x->op = lkb_strdup(op), x->where = node_loc(t);
            x->lo = lo, x->hi = hi;
        }
        tc_free(root);
    }
    if (st)
        rules_free(out);
    return st;
}

static const rule *rule_for(const rules *rs, const lkb_op *op, long long c)
{
    for (size_t i = 0; i < rs->n; i++) {
        const rule *x = &rs->v[i];
        if (strcmp(x->family, op->family) == 0 && (!x->op || strcmp(x->op, op->id) == 0) && c >= x->lo && c <= x->hi)
            return x;
    }
    return NULL;
}

nx_status lkb_lower(const reg_registry *r, const char *class_name, const lkb_op *op, long long c, char *point,
                    size_t plen, char *where, size_t wlen, nx_err *err)
{
    point[0] = where[0] = 0;
    if (!op->family)
        return NX_OK;
    rules rs;
    nx_status st = rules_load(r, class_name, &rs, err);
    if (st)
        return st;
    const rule *x = rule_for(&rs, op, c);
    if (x) {
        snprintf(point, plen, "%s.%s", x->family, x->point);
        snprintf(where, wlen, "%s", x->where);
    }
    rules_free(&rs);
    return NX_OK;
}

/* ---- the report -------------------------------------------------------- */

void lkb_report_free(lkb_report *rep)
{
    for (int k = 0; k < 3; k++)
        free(rep->cov[k].ops);
    for (size_t i = 0; i < rep->nenv; i++)
        free(rep->env[i].family), free(rep->env[i].point);
    free(rep->env);
    res_free(rep->res, rep->nres);
    for (size_t i = 0; i < rep->nsingle; i++)
        free(rep->single[i].point), free(rep->single[i].bundle), free(rep->single[i].where);
    free(rep->single);
    for (size_t i = 0; i < rep->nttpv; i++)
        free(rep->ttpv[i].point);
    free(rep->ttpv);
    free(rep->yield.families_promoted), free(rep->yield.points_promoted), free(rep->yield.points_not);
    lkb_step_free(&rep->step);
    memset(rep, 0, sizeof *rep);
}

static const reg_point_meta *meta_find(const reg_point_meta *m, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].id && strcmp(m[i].id, id) == 0)
            return &m[i];
    return NULL;
}

static const reg_point_meta *family_find(const reg_point_meta *m, size_t n, const char *fam)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].family, fam) == 0)
            return &m[i];
    return NULL;
}

/* ---- users: who runs a residual entry --------------------------------- */

/* One route: class cls, running model's step, lowers an op to point (at
 * C = 1, 16 or 128), whose kernel at cls is kernel. */
typedef struct route {
    char *cls, *model, *point, *kernel, *where;
} route;

typedef struct routes {
    route *v;
    size_t n;
} routes;

static void routes_free(routes *rt)
{
    for (size_t i = 0; i < rt->n; i++)
        free(rt->v[i].cls), free(rt->v[i].model), free(rt->v[i].point), free(rt->v[i].kernel), free(rt->v[i].where);
    free(rt->v);
    memset(rt, 0, sizeof *rt);
}

/* The models of the registry: the folders of KDIR/models with a STEP.toml,
 * sorted.  *out malloc'd (free each and the array). */
static size_t list_models(const char *kdir, char ***out)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/models", kdir);
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char p[8600];
        struct stat sb;
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s/STEP.toml", dir, de->d_name);
        if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        char **g = realloc(*out, (n + 1) * sizeof *g);
        if (!g || !(g[n] = strdup(de->d_name))) {
            if (g)
                *out = g;
            break;
        }
        *out = g;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(*out, n, sizeof **out, cmp_names);
    return n;
}

/* Every route of every class and model of the registry.  A class whose
 * rules or a model whose step do not load is left out (lint says why). */
static nx_status routes_all(const reg_registry *r, routes *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    char **models = NULL;
    size_t nmod = list_models(reg_dir(r), &models);
    nx_status st = NX_OK;
    for (size_t c = 0; c < reg_class_count(r) && !st; c++) {
        const char *cls = reg_class_name(r, c);
        rules rs;
        nx_err e;
        reg_point_meta *m = NULL;
        size_t nm = 0;
        if (rules_load(r, cls, &rs, &e))
            continue;
        if (reg_point_metas(r, cls, &m, &nm, &e)) {
            rules_free(&rs);
            continue;
        }
        for (size_t k = 0; k < nmod && !st; k++) {
            lkb_step step;
            if (lkb_step_load(reg_dir(r), models[k], &step, &e))
                continue;
            for (size_t i = 0; i < step.nops && !st; i++) {
                const lkb_op *op = &step.ops[i];
                for (int b = 0; b < 3 && op->family && !st; b++) {
                    const rule *x = rule_for(&rs, op, batch_c[b]);
                    char pid[300];
                    if (!x)
                        continue;
                    snprintf(pid, sizeof pid, "%s.%s", x->family, x->point);
                    const reg_point_meta *pm = meta_find(m, nm, pid);
                    int seen = 0;
                    for (size_t q = 0; q < out->n && !seen; q++)
                        seen = !strcmp(out->v[q].cls, cls) && !strcmp(out->v[q].model, models[k]) &&
                               !strcmp(out->v[q].point, pid);
                    if (seen || !pm)
                        continue;
                    route *g = realloc(out->v, (out->n + 1) * sizeof *g);
                    if (!g) {
                        st = oom(err);
                        break;
                    }
                    out->v = g;
                    route *y = &out->v[out->n++];
                    y->cls = strdup(cls), y->model = strdup(models[k]), y->point = strdup(pid);
                    y->kernel = lkb_strdup(pm->kernel), y->where = lkb_strdup(pm->where);
                    if (!y->cls || !y->model || !y->point)
                        st = oom(err);
                }
            }
            lkb_step_free(&step);
        }
        rules_free(&rs);
        reg_point_metas_free(m, nm);
    }
    for (size_t k = 0; k < nmod; k++)
        free(models[k]);
    free(models);
    if (st)
        routes_free(out);
    return st;
}

/* 1 when class c is cls or inherits from it. */
static int in_subtree(const reg_registry *r, const char *c, const char *cls)
{
    for (int depth = 0; c && (size_t)depth <= reg_class_count(r); depth++, c = reg_class_parent(r, c))
        if (strcmp(c, cls) == 0)
            return 1;
    return 0;
}

/* Whether route y runs residual entry e of class cls: a copy point, the
 * same declaration (the class sees it where cls does); a shadow, its point
 * at cls or a class below; a source, a point whose kernel is the source's
 * KERNEL.toml id at cls or below; a per-model entry, that model only. */
static int route_runs(const reg_registry *r, const char *cls, const char *copy_where, const lkb_residual *e,
                      const route *y)
{
    int model_ok = !e->scope || strcmp(e->scope, "class") == 0 || strcmp(e->scope, y->model) == 0;
    if (!model_ok)
        return 0;
    switch (e->kind) {
    case LKB_RES_COPY:
        return strcmp(y->point, e->what) == 0 && copy_where && y->where && strcmp(copy_where, y->where) == 0;
    case LKB_RES_SHADOW:
        return strcmp(y->point, e->what) == 0 && in_subtree(r, y->cls, cls);
    default:
        return e->kernel_id && y->kernel && strcmp(e->kernel_id, y->kernel) == 0 && in_subtree(r, y->cls, cls);
    }
}

/* The users of every entry of l (class cls): the routes that run it, then
 * the KERNEL.toml `users` that name a class or model no route already has;
 * a per-model source is run by its model at cls at least. */
static nx_status derive_users(const reg_registry *r, const char *cls, const routes *rt, lkb_residual *v, size_t n,
                              nx_err *err)
{
    reg_point_meta *m = NULL;
    size_t nm = 0;
    nx_status st = reg_point_metas(r, cls, &m, &nm, err);
    for (size_t i = 0; i < n && !st; i++) {
        lkb_residual *e = &v[i];
        const reg_point_meta *pm = e->kind == LKB_RES_COPY ? meta_find(m, nm, e->what) : NULL;
        nx_sbuf b = {0};
        int users = 0;
        nx_sbuf_printf(&b, "%s", "");
        for (size_t k = 0; k < rt->n; k++)
            if (route_runs(r, cls, pm ? pm->where : NULL, e, &rt->v[k])) {
                int dup = 0; /* one (class, model) pair once, whatever the point */
                for (size_t q = 0; q < k && !dup; q++)
                    dup = route_runs(r, cls, pm ? pm->where : NULL, e, &rt->v[q]) && !strcmp(rt->v[q].cls, rt->v[k].cls) &&
                          !strcmp(rt->v[q].model, rt->v[k].model);
                if (!dup)
                    nx_sbuf_printf(&b, "%s%s/%s", users++ ? ", " : "", rt->v[k].cls, rt->v[k].model);
            }
        if (!users && e->kind == LKB_RES_SOURCE && e->scope && strcmp(e->scope, "class") != 0)
            nx_sbuf_printf(&b, "%s/%s", cls, e->scope), users++;
        /* hand-written names add a user where no derived pair has them */
        char *hand = e->users_text;
        int extra = 0;
        for (char *p = hand; p && *p;) {
            size_t l = strcspn(p, ",");
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), p);
            char *q = name;
            while (*q == ' ')
                q++;
            int have = 0;
            const char *txt = b.s ? b.s : "";
            for (const char *t = txt; *t && !have;) {
                size_t tl = strcspn(t, ",");
                static const char hand_tag[] = " (KERNEL.toml)"; /* a name added above: itself */
                size_t hl = sizeof hand_tag - 1;
                if (tl > hl && !strncmp(t + tl - hl, hand_tag, hl))
                    tl -= hl;
                const char *sl = memchr(t, '/', tl);
                size_t cl = sl ? (size_t)(sl - t) : tl;
                have = (cl == strlen(q) && !strncmp(t, q, cl)) ||
                       (sl && tl - cl - 1 == strlen(q) && !strncmp(sl + 1, q, tl - cl - 1));
                t += strcspn(t, ",");
                while (*t == ',' || *t == ' ')
                    t++;
            }
            if (!have && *q)
                nx_sbuf_printf(&b, "%s%s (KERNEL.toml)", users + extra++ ? ", " : "", q);
            p += l;
            while (*p == ',' || *p == ' ')
                p++;
        }
        free(e->users_text);
        e->users_text = nx_sbuf_take(&b);
        e->users = users + extra;
        if (!e->users_text)
            st = oom(err);
    }
    reg_point_metas_free(m, nm);
    return st;
}

/* One op at C: its category, the point serving it, its time. */
static nx_status op_at(const reg_registry *r, const char *cls, const lkb_step *s, const lkb_op *op, long long c,
                       const reg_point_meta *m, size_t nm, const rules *rs, const lkb_records *recs, lkb_op_at *o,
                       nx_err *err)
{
    memset(o, 0, sizeof *o);
    o->op = op;
    long long flops, bytes;
    nx_status st = lkb_op_eval(op, c, o->shape, sizeof o->shape, &flops, &bytes, err);
    if (st)
        return st;
    const reg_point_meta *fam = op->family ? family_find(m, nm, op->family) : NULL;
    const rule *x = fam ? rule_for(rs, op, c) : NULL;
    const reg_point_meta *pm = NULL;
    if (!fam) {
        o->cat = LKB_NOVEL;
    } else if (!x) {
        o->cat = LKB_SHARED_UNMEASURED;
        o->no_rule = 1;
    } else {
        snprintf(o->point, sizeof o->point, "%s.%s", x->family, x->point);
        snprintf(o->rule_where, sizeof o->rule_where, "%s", x->where);
        if (!(pm = meta_find(m, nm, o->point)))
            return nx_err_set(err, NX_EINVAL, "%s: rule names point '%s', which class %s does not have", x->where,
                              o->point, cls);
        o->in_envelope = lkb_record_find(recs, cls, o->point, c, NULL) != NULL;
        if (strcmp(pm->how, "copy") == 0) {
            o->cat = LKB_PARAM;
        } else {
            o->covered = 1;
            o->cat = strcmp(pm->how, "branch") == 0 ? LKB_POLICY : o->in_envelope ? LKB_SHARED : LKB_SHARED_UNMEASURED;
        }
    }
    long long mult = op->count * (op->per_layer ? s->layers : 1);
    const lkb_record *rec = *o->point ? lkb_record_find(recs, cls, o->point, c, o->shape) : NULL;
    if (rec) {
        o->t_s = rec->median_s * (double)mult;
        o->weight_measured = 1;
        return NX_OK;
    }
    /* the roofline model: the slower of the arithmetic at the family's unit's
     * peak and the bytes at the memory bandwidth */
    const char *unit = fam && fam->unit ? fam->unit : "cuda_core";
    double gbs, tf = 0;
    char where[256];
    int hb = reg_class_rate(r, cls, "memory_gbs", &gbs, where, sizeof where);
    const char *pk = strcmp(unit, "tensor_core") == 0 ? "tensor_tflops" : "vector_tflops";
    int ht = strcmp(unit, "memory") == 0 ? 1 : reg_class_rate(r, cls, pk, &tf, where, sizeof where);
    if (hb != 1 || ht != 1)
        return nx_err_set(err, NX_EINVAL,
                          "class %s: op '%s' at C = %lld has no record to weigh it, and HARDWARE.toml [rates] of its "
                          "chain has no %s for the roofline model",
                          cls, op->id, c, hb != 1 ? "memory_gbs" : pk);
    double t = (double)bytes / (gbs * 1e9);
    if (tf > 0 && (double)flops / (tf * 1e12) > t)
        t = (double)flops / (tf * 1e12);
    o->t_s = t * (double)mult;
    return NX_OK;
}

static nx_status coverage_at(const reg_registry *r, const char *cls, const lkb_step *s, long long c,
                             const reg_point_meta *m, size_t nm, const rules *rs, const lkb_records *recs,
                             lkb_coverage *cv, nx_err *err)
{
    memset(cv, 0, sizeof *cv);
    cv->c = c;
    if (!(cv->ops = calloc(s->nops, sizeof *cv->ops)))
        return oom(err);
    cv->nops = s->nops;
    double part[LKB_NCAT] = {0}, covered = 0, measured = 0;
    for (size_t i = 0; i < s->nops; i++) {
        nx_status st = op_at(r, cls, s, &s->ops[i], c, m, nm, rs, recs, &cv->ops[i], err);
        if (st)
            return st;
        const lkb_op_at *o = &cv->ops[i];
        cv->total_s += o->t_s;
        part[o->cat] += o->t_s;
        if (o->covered)
            covered += o->t_s;
        if (o->covered && o->in_envelope)
            measured += o->t_s;
        if (o->weight_measured)
            cv->n_measured_w++;
        else
            cv->n_model_w++;
    }
    for (int k = 0; k < LKB_NCAT; k++)
        cv->share[k] = cv->total_s > 0 ? part[k] / cv->total_s : 0;
    cv->coverage = cv->total_s > 0 ? covered / cv->total_s : 0;
    cv->measured = cv->total_s > 0 ? measured / cv->total_s : 0;
    return NX_OK;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static nx_status envelope(const reg_point_meta *m, size_t nm, const lkb_records *recs, const char *cls,
                          lkb_report *rep, nx_err *err)
{
    for (size_t i = 0; i < nm; i++) {
        if (!m[i].id)
            continue;
        lkb_envelope_item it = {0};
        for (size_t k = 0; k < recs->n; k++) {
            const lkb_record *x = &recs->r[k];
            if (strcmp(x->class_name, cls) || strcmp(x->point, m[i].id))
                continue;
            int dup = 0;
            for (size_t j = 0; j < it.nrows; j++)
                dup |= it.rows[j] == x->rows;
            if (!dup && it.nrows < 32)
                it.rows[it.nrows++] = x->rows;
        }
        if (!it.nrows)
            continue;
        qsort(it.rows, it.nrows, sizeof *it.rows, cmp_ll);
        lkb_envelope_item *g = realloc(rep->env, (rep->nenv + 1) * sizeof *g);
        if (!g)
            return oom(err);
        rep->env = g;
        it.family = strdup(m[i].family);
        it.point = strdup(m[i].point);
        rep->env[rep->nenv++] = it;
    }
    return NX_OK;
}

/* t0: the start of the class's first complete campaign in the ledger, else
 * the class's first record. */
/* An absent ledger is no campaign; one that is there but cannot be read
 * as a ledger (a FIFO, not SQLite, another program's database) is an
 * input error, not "no campaign of the class". */
static nx_status ttpv_t0(const char *ledger, const char *cls, const lkb_records *recs, char *what, size_t len,
                         int64_t *out, nx_err *err)
{
    int64_t t0 = 0;
    int have = 0;
    sqlite3 *db = NULL;
    struct stat sb;
    *out = 0;
    if (ledger && lstat(ledger, &sb) == 0) {
        nx_status st = ledger_open_read(ledger, &db, err);
        if (st) {
            nx_err_prefix(err, "--ledger");
            return st;
        }
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "SELECT min(started_s), min(started_utc) FROM run WHERE class = ?1 AND complete = 1",
                               -1, &s, NULL) != SQLITE_OK) {
            st = nx_err_set(err, NX_EINVAL, "--ledger %s: reading runs: %s", ledger, sqlite3_errmsg(db));
            sqlite3_close(db);
            return st;
        }
        sqlite3_bind_text(s, 1, cls, -1, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
            t0 = sqlite3_column_int64(s, 0);
            have = 1;
            snprintf(what, len, "the first campaign of class %s in %s, %s", cls, ledger,
                     (const char *)sqlite3_column_text(s, 1));
        } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            st = nx_err_set(err, NX_EINVAL, "--ledger %s: reading runs: %s", ledger, sqlite3_errmsg(db));
        }
        sqlite3_finalize(s);
        sqlite3_close(db);
        if (st)
            return st;
    }
    if (have) {
        *out = t0;
        return NX_OK;
    }
    const lkb_record *first = NULL;
    for (size_t i = 0; i < recs->n; i++)
        if (strcmp(recs->r[i].class_name, cls) == 0 && (!first || recs->r[i].utc_s < first->utc_s))
            first = &recs->r[i];
    if (first) {
        snprintf(what, len, "the first record of class %s, %s (no campaign of the class in the ledger)", cls,
                 first->utc);
        *out = first->utc_s;
        return NX_OK;
    }
    snprintf(what, len, "none (no record of class %s)", cls);
    return NX_OK;
}

static nx_status ttpv(const lkb_records *recs, const char *cls, const char *ledger, lkb_report *rep, nx_err *err)
{
    int64_t t0;
    nx_status st0 = ttpv_t0(ledger, cls, recs, rep->t0_what, sizeof rep->t0_what, &t0, err);
    if (st0)
        return st0;
    for (size_t i = 0; i < recs->n; i++) {
        const lkb_record *x = &recs->r[i];
        if (strcmp(x->class_name, cls))
            continue;
        lkb_ttpv *t = NULL;
        for (size_t k = 0; k < rep->nttpv && !t; k++)
            if (strcmp(rep->ttpv[k].point, x->point) == 0)
                t = &rep->ttpv[k];
        if (!t) {
            lkb_ttpv *g = realloc(rep->ttpv, (rep->nttpv + 1) * sizeof *g);
            if (!g)
                return oom(err);
            rep->ttpv = g;
            t = &rep->ttpv[rep->nttpv++];
            memset(t, 0, sizeof *t);
            if (!(t->point = strdup(x->point)))
                return oom(err);
        }
        t->energy_readable |= x->has_energy;
        /* a record before the class's first campaign (t0): the value was
         * there from the start, TTPV 0, never a negative time */
        int64_t since; /* saturating: a ledger's started_s is data, and may be anything */
        if (__builtin_sub_overflow(x->utc_s, t0, &since))
            since = INT64_MAX;
        if (since < 0)
            since = 0;
        int early = x->utc_s < t0;
        if (lkb_record_beats_speed(x) && (!t->speed_known || since < t->speed_s)) {
            t->speed_known = 1;
            t->speed_s = since;
            t->speed_early = early;
            snprintf(t->speed_id, sizeof t->speed_id, "%s", x->id);
            snprintf(t->speed_utc, sizeof t->speed_utc, "%s", x->utc);
        }
        if (lkb_record_beats_energy(x) && (!t->energy_known || since < t->energy_s)) {
            t->energy_known = 1;
            t->energy_s = since;
            t->energy_early = early;
            snprintf(t->energy_id, sizeof t->energy_id, "%s", x->id);
            snprintf(t->energy_utc, sizeof t->energy_utc, "%s", x->utc);
        }
    }
    return NX_OK;
}

static void residual_totals(const lkb_residual *v, size_t n, long long *count, long long *loc, long long *copy,
                            long long *shadow, long long *sources)
{
    *count = (long long)n;
    *loc = *copy = *shadow = *sources = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind == LKB_RES_SOURCE)
            ++*sources, *loc += v[i].lines;
        else if (v[i].kind == LKB_RES_COPY)
            ++*copy;
        else
            ++*shadow;
    }
}

static nx_status yield(const reg_registry *r, const char *cls, const char *before, lkb_report *rep, nx_err *err)
{
    lkb_yield *y = &rep->yield;
    snprintf(y->before, sizeof y->before, "%s", before);
    reg_registry *b = NULL;
    nx_status st = reg_load(before, &b, err);
    if (st) {
        nx_err_prefix(err, "--before %s", before);
        return st;
    }
    res_list l = {0};
    routes rt = {0};
    reg_point_meta *mb = NULL, *ma = NULL;
    size_t nb = 0, na = 0;
    long long dummy;
    if ((st = residual_of(b, cls, &l, NULL, err)) || (st = reg_point_metas(b, cls, &mb, &nb, err)) ||
        (st = reg_point_metas(r, cls, &ma, &na, err))) {
        nx_err_prefix(err, "--before %s", before);
        goto out;
    }
    residual_totals(l.v, l.n, &y->count_before, &y->loc_before, &dummy, &dummy, &dummy);
    y->count_after = rep->res_count;
    y->loc_after = rep->res_loc;
    if ((st = routes_all(r, &rt, err)))
        goto out;
    nx_sbuf fb = {0}, pb = {0}, nb_ = {0};
    nx_sbuf_printf(&fb, "%s", "");
    nx_sbuf_printf(&pb, "%s", "");
    nx_sbuf_printf(&nb_, "%s", "");
    for (size_t i = 0; i < na; i++) {
        int first_of_family = 1;
        for (size_t k = 0; k < i; k++)
            first_of_family &= strcmp(ma[k].family, ma[i].family) != 0;
        if (first_of_family && !family_find(mb, nb, ma[i].family))
            nx_sbuf_printf(&fb, "%s%s", y->nfamilies++ ? ", " : "", ma[i].family);
        if (!ma[i].id || strcmp(ma[i].how, "copy") == 0)
            continue;
        const reg_point_meta *old = meta_find(mb, nb, ma[i].id);
        if (!old) {
            nx_sbuf_printf(&nb_, "%s%s (new: nothing of the residual went)", y->nnot++ ? ", " : "", ma[i].id);
            continue;
        }
        if (strcmp(old->how, "copy") != 0)
            continue;
        /* a copy replaced: a promotion when the numerics point is the same
         * and two users run it (rule 1) */
        int users = 0;
        for (size_t k = 0; k < rt.n; k++) {
            int dup = 0;
            if (strcmp(rt.v[k].point, ma[i].id) || !rt.v[k].where || !ma[i].where || strcmp(rt.v[k].where, ma[i].where))
                continue;
            for (size_t q = 0; q < k && !dup; q++)
                dup = !strcmp(rt.v[q].point, ma[i].id) && !strcmp(rt.v[q].cls, rt.v[k].cls) &&
                      !strcmp(rt.v[q].model, rt.v[k].model);
            users += !dup;
        }
        fam_spec sa = {0}, sb = {0};
        nx_err e2;
        const char *shape = fam_preset_shape("small", ma[i].family);
        int same = reg_resolve(b, cls, ma[i].id, shape, &sb, &e2) == NX_OK &&
                   reg_resolve(r, cls, ma[i].id, shape, &sa, &e2) == NX_OK && sa.hash && sb.hash &&
                   strcmp(sa.hash, sb.hash) == 0;
        fam_spec_free(&sa);
        fam_spec_free(&sb);
        if (!same)
            nx_sbuf_printf(&nb_, "%s%s (was a copy; its numerics point changed)", y->nnot++ ? ", " : "", ma[i].id);
        else if (users < 2)
            nx_sbuf_printf(&nb_, "%s%s (was a copy; %d user: rule 1 needs two)", y->nnot++ ? ", " : "", ma[i].id,
                           users);
        else
            nx_sbuf_printf(&pb, "%s%s (was a copy)", y->npoints++ ? ", " : "", ma[i].id);
    }
    y->families_promoted = nx_sbuf_take(&fb);
    y->points_promoted = nx_sbuf_take(&pb);
    y->points_not = nx_sbuf_take(&nb_);
    y->computed = 1;
    if (!y->families_promoted || !y->points_promoted || !y->points_not)
        st = oom(err);
out:
    routes_free(&rt);
    res_free(l.v, l.n);
    reg_point_metas_free(mb, nb);
    reg_point_metas_free(ma, na);
    reg_free(b);
    return st;
}

nx_status lkb_compute(const reg_registry *r, const char *cls, const lkb_opts *o, lkb_report *rep, nx_err *err)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->class_name, sizeof rep->class_name, "%s", cls);
    snprintf(rep->kernels, sizeof rep->kernels, "%s", reg_dir(r));
    reg_point_meta *m = NULL;
    size_t nm = 0;
    lkb_records recs = {0};
    rules rs = {0};
    res_list l = {0};
    reg_bundle *bs = NULL;
    size_t nbs = 0;
    nx_status st = reg_point_metas(r, cls, &m, &nm, err);
    if (!st)
        st = lkb_records_load(reg_dir(r), cls, &recs, err);
    if (!st && o->model) {
        snprintf(rep->model, sizeof rep->model, "%s", o->model);
        if (!(st = lkb_step_load(reg_dir(r), o->model, &rep->step, err)) && !(st = rules_load(r, cls, &rs, err))) {
            rep->has_step = 1;
            for (int k = 0; k < 3 && !st; k++)
                st = coverage_at(r, cls, &rep->step, batch_c[k], m, nm, &rs, &recs, &rep->cov[k], err);
        }
    }
    if (!st)
        st = envelope(m, nm, &recs, cls, rep, err);
    if (!st)
        st = residual_of(r, cls, &l, NULL, err);
    if (!st) {
        routes rt;
        if (!(st = routes_all(r, &rt, err))) {
            st = derive_users(r, cls, &rt, l.v, l.n, err);
            routes_free(&rt);
        }
    }
    if (!st) {
        rep->res = l.v, rep->nres = l.n;
        l.v = NULL, l.n = 0;
        residual_totals(rep->res, rep->nres, &rep->res_count, &rep->res_loc, &rep->res_copy, &rep->res_shadow,
                        &rep->res_sources);
        for (size_t i = 0; i < rep->nres; i++)
            rep->n_candidates += rep->res[i].users >= 2;
        st = reg_bundles(r, &bs, &nbs, err);
    }
    for (size_t i = 0; i < nm && !st; i++) {
        if (!m[i].bundle)
            continue;
        for (size_t k = 0; k < nbs; k++)
            if (bs[k].id && strcmp(bs[k].id, m[i].bundle) == 0 && bs[k].nclasses == 1 &&
                strcmp(bs[k].classes[0], cls) == 0) {
                lkb_single *g = realloc(rep->single, (rep->nsingle + 1) * sizeof *g);
                if (!g) {
                    st = oom(err);
                    break;
                }
                rep->single = g;
                g[rep->nsingle].point = strdup(m[i].id);
                g[rep->nsingle].bundle = strdup(m[i].bundle);
                g[rep->nsingle++].where = strdup(m[i].where);
                break;
            }
    }
    if (!st)
        st = ttpv(&recs, cls, o->ledger, rep, err);
    if (!st && o->before)
        st = yield(r, cls, o->before, rep, err);
    reg_point_metas_free(m, nm);
    lkb_records_free(&recs);
    rules_free(&rs);
    res_free(l.v, l.n);
    reg_bundles_free(bs, nbs);
    if (st)
        lkb_report_free(rep);
    return st;
}

/* ---- lint ---------------------------------------------------------------- */

/* Whether class cls's MEASUREMENTS.toml failed to load (unread[c] set). */
static int class_unread(const reg_registry *r, const unsigned char *unread, const char *cls)
{
    for (size_t c = 0; unread && c < reg_class_count(r); c++)
        if (unread[c] && strcmp(reg_class_name(r, c), cls) == 0)
            return 1;
    return 0;
}

size_t lkb_lint(const reg_registry *r, char **report)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s", "");
    size_t errors = 0;
    const char *kdir = reg_dir(r);
    lkb_records recs = {0};
    nx_err e = {0};
    /* every class's records; a class whose file has an error is said once,
     * not again for every id its evidence names (those records are not read) */
    size_t ncls = reg_class_count(r);
    unsigned char *unread = calloc(ncls ? ncls : 1, 1);
    for (size_t c = 0; c < ncls; c++)
        if (lkb_records_load(kdir, reg_class_name(r, c), &recs, &e)) {
            nx_sbuf_printf(&b, "%s: error: %s\n", kdir, e.msg);
            errors++;
            if (unread)
                unread[c] = 1;
        }
    /* evidence rows name existing records of their class */
    reg_evidence_row *ev = NULL;
    size_t nev = 0;
    if (reg_evidence_rows(r, &ev, &nev, &e) == NX_OK) {
        for (size_t i = 0; i < nev; i++) {
            if (!ev[i].measurement || !ev[i].class_name || class_unread(r, unread, ev[i].class_name))
                continue; /* reg_lint reports the missing key; the records' own error is said */
            const lkb_record *x = NULL;
            for (size_t k = 0; k < recs.n && !x; k++)
                if (strcmp(recs.r[k].id, ev[i].measurement) == 0)
                    x = &recs.r[k];
            if (!x) {
                nx_sbuf_printf(&b,
                               "%s: error: evidence measurement '%s' does not exist (no [[measurement]] with this id "
                               "in %s/%s/MEASUREMENTS.toml)\n",
                               ev[i].where, ev[i].measurement, kdir, ev[i].class_name);
                errors++;
                continue;
            }
            char fp[256];
            snprintf(fp, sizeof fp, "%s.%s", ev[i].family ? ev[i].family : "?", ev[i].point ? ev[i].point : "?");
            if (strcmp(x->class_name, ev[i].class_name) || strcmp(x->point, fp)) {
                nx_sbuf_printf(&b, "%s: error: evidence of %s at class %s names measurement '%s', a record of %s at "
                               "class %s (%s)\n",
                               ev[i].where, fp, ev[i].class_name, ev[i].measurement, x->point, x->class_name, x->where);
                errors++;
                continue;
            }
            for (size_t k = 0; k < ev[i].nrows; k++)
                if (!lkb_record_find(&recs, x->class_name, x->point, ev[i].rows[k], NULL)) {
                    nx_sbuf_printf(&b, "%s: error: evidence of %s at class %s claims rows %ld, which no record of "
                                   "the point at that class measured\n",
                                   ev[i].where, fp, ev[i].class_name, ev[i].rows[k]);
                    errors++;
                }
        }
    }
    reg_evidence_rows_free(ev, nev);
    /* the residual of each class: silent entries, measurements that do not exist */
    for (size_t c = 0; c < reg_class_count(r); c++) {
        const char *cls = reg_class_name(r, c);
        reg_point_meta *vm = NULL;
        size_t nvm = 0;
        if (reg_point_metas(r, cls, &vm, &nvm, &e) != NX_OK)
            continue; /* a broken chain: reg_lint reports it */
        reg_point_metas_free(vm, nvm);
        res_list l = {0};
        nx_sbuf probs = {0};
        nx_sbuf_printf(&probs, "%s", "");
        if (residual_of(r, cls, &l, &probs, &e)) {
            nx_sbuf_printf(&b, "%s/%s: error: %s\n", kdir, cls, e.msg);
            errors++;
        }
        char *p = nx_sbuf_take(&probs);
        for (const char *q = p; q && *q; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : q + strlen(q))
            errors += *q != 0;
        nx_sbuf_printf(&b, "%s", p ? p : "");
        free(p);
        static const char *const kind[] = {"source", "[shadow]", "copy point"};
        for (size_t i = 0; i < l.n; i++) {
            const lkb_residual *x = &l.v[i];
            if (!x->why && !x->measurement && !x->in_forks) {
                nx_sbuf_printf(&b,
                               "%s: error: silent residual of class %s: %s %s has no reason (KERNEL.toml 'why'), no "
                               "measurement, and is not listed in %s/FORKS.md\n",
                               x->where, cls, kind[x->kind], x->what, kdir);
                errors++;
            }
            if (x->measurement && !(unread && unread[c])) {
                int found = 0;
                for (size_t k = 0; k < recs.n && !found; k++)
                    found = strcmp(recs.r[k].id, x->measurement) == 0;
                if (!found) {
                    nx_sbuf_printf(&b, "%s: error: residual %s of class %s names measurement '%s', which does not "
                                   "exist\n",
                                   x->where, x->what, cls, x->measurement);
                    errors++;
                }
            }
        }
        res_free(l.v, l.n);
        /* lowering rules name points of the class */
        rules rs = {0};
        if (rules_load(r, cls, &rs, &e)) {
            nx_sbuf_printf(&b, "%s\n", e.msg);
            errors++;
        } else {
            reg_point_meta *m = NULL;
            size_t nm = 0;
            if (reg_point_metas(r, cls, &m, &nm, &e) == NX_OK)
                for (size_t i = 0; i < rs.n; i++) {
                    char fp[300];
                    snprintf(fp, sizeof fp, "%s.%s", rs.v[i].family, rs.v[i].point);
                    if (!meta_find(m, nm, fp)) {
                        nx_sbuf_printf(&b, "%s: error: rule names point '%s', which class %s does not have\n",
                                       rs.v[i].where, fp, cls);
                        errors++;
                    }
                }
            reg_point_metas_free(m, nm);
        }
        rules_free(&rs);
    }
    /* bundles: keys, declared once, classes that exist; points naming one */
    reg_bundle *bs = NULL;
    size_t nbs = 0;
    if (reg_bundles(r, &bs, &nbs, &e) == NX_OK) {
        for (size_t i = 0; i < nbs; i++) {
            if (bs[i].problems && *bs[i].problems) {
                for (const char *q = bs[i].problems; *q; q = strchr(q, '\n') + 1) {
                    const char *colon = strstr(q, ": ");
                    nx_sbuf_printf(&b, "%.*s: error: %.*s\n", (int)(colon - q), q, (int)(strchr(q, '\n') - colon - 2),
                                   colon + 2);
                    errors++;
                }
            }
            for (size_t k = 0; k < i; k++)
                if (bs[i].id && bs[k].id && strcmp(bs[i].id, bs[k].id) == 0) {
                    nx_sbuf_printf(&b, "%s: error: bundle '%s' declared twice (first at %s): declare it once\n",
                                   bs[i].where, bs[i].id, bs[k].where);
                    errors++;
                    break;
                }
            for (size_t k = 0; k < bs[i].nclasses; k++) {
                int found = 0;
                for (size_t c = 0; c < reg_class_count(r) && !found; c++)
                    found = strcmp(reg_class_name(r, c), bs[i].classes[k]) == 0;
                if (!found) {
                    nx_sbuf_printf(&b, "%s: error: bundle '%s' names class '%s', which does not exist\n", bs[i].where,
                                   bs[i].id ? bs[i].id : "?", bs[i].classes[k]);
                    errors++;
                }
            }
        }
        for (size_t c = 0; c < reg_class_count(r); c++) {
            reg_point_meta *m = NULL;
            size_t nm = 0;
            if (reg_point_metas(r, reg_class_name(r, c), &m, &nm, &e) != NX_OK)
                continue;
            for (size_t i = 0; i < nm; i++) {
                if (!m[i].bundle)
                    continue;
                const reg_bundle *x = NULL;
                for (size_t k = 0; k < nbs && !x; k++)
                    if (bs[k].id && strcmp(bs[k].id, m[i].bundle) == 0)
                        x = &bs[k];
                int realises = 0;
                for (size_t k = 0; x && k < x->nclasses; k++)
                    realises |= strcmp(x->classes[k], reg_class_name(r, c)) == 0;
                if (!x || !realises) {
                    char line[768];
                    if (!x)
                        snprintf(line, sizeof line, "%s: error: point %s names bundle '%s', which no [[bundle]] "
                                 "declares\n", m[i].where, m[i].id, m[i].bundle);
                    else
                        snprintf(line, sizeof line, "%s: warning: point %s names bundle '%s', which class %s does "
                                 "not realise (not in the bundle's classes)\n", m[i].where, m[i].id, m[i].bundle,
                                 reg_class_name(r, c));
                    if (b.s && strstr(b.s, line)) /* seen from another class of the chain */
                        continue;
                    nx_sbuf_printf(&b, "%s", line);
                    errors += !x; /* a class inheriting a point of a bundle it lacks: a warning, as for atoms */
                }
            }
            reg_point_metas_free(m, nm);
        }
    }
    reg_bundles_free(bs, nbs);
    char *rp = reg_rates_problems(r);
    for (const char *q = rp; q && *q; q = strchr(q, '\n') + 1) {
        const char *colon = strstr(q, ": ");
        nx_sbuf_printf(&b, "%.*s: error: %.*s\n", (int)(colon - q), q, (int)(strchr(q, '\n') - colon - 2), colon + 2);
        errors++;
    }
    free(rp);
    /* step manifests: every model under DIR/models */
    char mdir[4096];
    snprintf(mdir, sizeof mdir, "%s/models", kdir);
    DIR *d = opendir(mdir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        lkb_step s;
        char path[4400];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s/STEP.toml", mdir, de->d_name);
        if (stat(path, &sb) != 0)
            continue;
        if (lkb_step_load(kdir, de->d_name, &s, &e)) {
            nx_sbuf_printf(&b, "%s: error: %s\n", path, e.msg);
            errors++;
        } else {
            lkb_step_free(&s);
        }
    }
    if (d)
        closedir(d);
    lkb_records_free(&recs);
    free(unread);
    *report = nx_sbuf_take(&b);
    return errors;
}

void lkb_ledger_fields(const reg_registry *r, const char *cls, const char *model, ledger_lkb *f)
{
    memset(f, 0, sizeof *f);
    for (int k = 0; k < 3; k++)
        f->coverage[k] = f->measured[k] = -1;
    char path[4400];
    struct stat sb;
    snprintf(path, sizeof path, "%s/models/%s/STEP.toml", reg_dir(r), model ? model : "");
    /* a model label without a step manifest still gets the residual */
    lkb_opts o = {model && stat(path, &sb) == 0 ? model : NULL, NULL, NULL};
    lkb_report rep;
    nx_err e = {0};
    if (lkb_compute(r, cls, &o, &rep, &e) != NX_OK) {
        size_t n = strlen(e.msg);
        snprintf(f->why, sizeof f->why, "the LKB report failed: %.*s%s", n > 150 ? 150 : (int)n, e.msg,
                 n > 150 ? "..." : "");
        return;
    }
    f->set = 1;
    f->count = rep.res_count, f->loc = rep.res_loc, f->copy_points = rep.res_copy;
    /* the entries themselves, for the exit line's promotions */
    json_t *a = json_array();
    static const char *const kinds[] = {"source", "shadow", "copy"};
    for (size_t i = 0; a && i < rep.nres; i++) {
        const lkb_residual *x = &rep.res[i];
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(kinds[x->kind]));
        json_object_set_new(e, "what", json_string(x->what ? x->what : ""));
        json_object_set_new(e, "lines", json_integer(x->lines));
        json_object_set_new(e, "kernel", x->kernel_id ? json_string(x->kernel_id) : json_null());
        json_object_set_new(e, "users", json_integer(x->users));
        json_object_set_new(e, "users_text", json_string(x->users_text ? x->users_text : ""));
        json_array_append_new(a, e);
    }
    f->residual_json = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    f->single_class = (long long)rep.nsingle;
    for (int k = 0; rep.has_step && k < 3; k++)
        f->coverage[k] = rep.cov[k].coverage, f->measured[k] = rep.cov[k].measured;
    lkb_report_free(&rep);
}
