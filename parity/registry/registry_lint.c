/* registry_lint.c: every lint rule of docs/registry.md over a loaded
 * registry.  Rules about one file run once per file; rules that depend on
 * the class chain (inherited params, templates, kernels across families)
 * run on each class's merged view, and identical findings are reported once.
 * Each finding is "file:line:col: error|warning: message". */
#include "registry_int.h"

#include "nx_program.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct finding {
    char *file;
    int line, col;
    int error;
    char *msg;
} finding;

typedef struct seen_key {
    const void *node;
    char name[64];
} seen_key;

typedef struct lint {
    const reg_registry *r;
    finding *v;
    size_t n;
    int oom;
    const tc_node **skip; /* numerics tables already found bad: not parsed again */
    size_t nskip;
    seen_key *seen;       /* (node, template name) pairs already reported */
    size_t nseen;
} lint;

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void addv(lint *L, int error, const char *file, int line, int col, const char *fmt, va_list ap)
{
    char msg[NX_ERR_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    finding *v = realloc(L->v, (L->n + 1) * sizeof *v);
    if (!v) {
        L->oom = 1;
        return;
    }
    L->v = v;
    finding *f = &v[L->n];
    f->file = xstrdup(file ? file : "?");
    f->msg = xstrdup(msg);
    f->line = line > 0 ? line : 1;
    f->col = col;
    f->error = error;
    if (!f->file || !f->msg) {
        free(f->file);
        free(f->msg);
        L->oom = 1;
        return;
    }
    L->n++;
}

static void add_file(lint *L, int error, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_file(lint *L, int error, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    addv(L, error, file, line, 0, fmt, ap);
    va_end(ap);
}

/* At a node: a key/value at its key, an array element or a [[table]] at
 * its own position. */
static void add_at(lint *L, int error, const tc_node *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_at(lint *L, int error, const tc_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int kl = at->key_line > 0;
    addv(L, error, at->source, kl ? at->key_line : at->line, kl ? at->key_column : at->column, fmt, ap);
    va_end(ap);
}

/* At a value's own position (a string inside an array, a tree text). */
static void add_val(lint *L, int error, const tc_node *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_val(lint *L, int error, const tc_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    addv(L, error, at->source, at->line, at->column, fmt, ap);
    va_end(ap);
}

/* An nx_err whose message starts "file:line:col: " becomes a finding at
 * that place; otherwise it is placed at `at`. */
static void add_err(lint *L, const nx_err *e, const tc_node *at)
{
    const char *src = at->source ? at->source : "";
    size_t sl = strlen(src);
    const char *m = e->msg;
    if (sl && strncmp(m, src, sl) == 0 && m[sl] == ':') {
        int line = 0, col = 0, used = 0;
        if (sscanf(m + sl + 1, "%d:%d: %n", &line, &col, &used) == 2 && used > 0) {
            add_file(L, 1, src, line, "%s", m + sl + 1 + used);
            L->v[L->n - 1].col = col;
            return;
        }
        if (m[sl + 1] == ' ')
            m += sl + 2;
    }
    add_at(L, 1, at, "%s", m);
}

static int is_skipped(const lint *L, const tc_node *t)
{
    for (size_t i = 0; i < L->nskip; i++)
        if (L->skip[i] == t)
            return 1;
    return 0;
}

static void skip(lint *L, const tc_node *t)
{
    if (is_skipped(L, t))
        return;
    const tc_node **s = realloc((void *)L->skip, (L->nskip + 1) * sizeof *s);
    if (!s) {
        L->oom = 1;
        return;
    }
    s[L->nskip++] = t;
    L->skip = s;
}

/* 1 the first time (node, name) is seen. */
static int first_time(lint *L, const void *node, const char *name)
{
    for (size_t i = 0; i < L->nseen; i++)
        if (L->seen[i].node == node && strcmp(L->seen[i].name, name) == 0)
            return 0;
    seen_key *s = realloc(L->seen, (L->nseen + 1) * sizeof *s);
    if (!s) {
        L->oom = 1;
        return 0;
    }
    L->seen = s;
    s[L->nseen].node = node;
    snprintf(s[L->nseen].name, sizeof s[L->nseen].name, "%s", name);
    L->nseen++;
    return 1;
}

/* ---- helpers ---------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

static const char *suggest_ks(const reg_keyspec *ks, const char *key)
{
    for (; ks->key; ks++)
        if (edit_distance(ks->key, key) <= 2)
            return ks->key;
    return NULL;
}

static const char *suggest_list(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (edit_distance(*keys, key) <= 2)
            return *keys;
    return NULL;
}

static void unknown_keys(lint *L, const tc_node *t, const reg_keyspec *ks, const char *where)
{
    for (size_t i = 0; t && i < t->nitems; i++) {
        const tc_node *n = t->items[i];
        if (reg_ks_has(ks, n->key))
            continue;
        const char *s = suggest_ks(ks, n->key);
        if (s)
            add_at(L, 1, n, "unknown key '%s' in %s (did you mean '%s'?)", n->key, where, s);
        else
            add_at(L, 1, n, "unknown key '%s' in %s", n->key, where);
    }
}

/* Unknown keys of a numerics table (and its atom table); 1 if any. */
static int unknown_point_keys(lint *L, const tc_node *t, const char *where)
{
    int bad = 0;
    for (size_t i = 0; i < t->nitems; i++) {
        const tc_node *n = t->items[i];
        int known = 0;
        for (const char *const *k = reg_point_keys; *k; k++)
            known |= strcmp(*k, n->key) == 0;
        if (!known) {
            const char *s = suggest_list(reg_point_keys, n->key);
            add_at(L, 1, n, "unknown key '%s' in numerics point %s%s%s%s", n->key, where, s ? " (did you mean '" : "",
                   s ? s : "", s ? "'?)" : "");
            bad = 1;
        }
    }
    const tc_node *a = tc_get(t, "atom");
    if (a && a->kind == TC_TABLE)
        for (size_t i = 0; i < a->nitems; i++) {
            const tc_node *n = a->items[i];
            int known = 0;
            for (const char *const *k = reg_atom_keys; *k; k++)
                known |= strcmp(*k, n->key) == 0;
            if (!known) {
                const char *s = suggest_list(reg_atom_keys, n->key);
                add_at(L, 1, n, "unknown key '%s' in atom of numerics point %s%s%s%s", n->key, where,
                       s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
                bad = 1;
            }
        }
    return bad;
}

static int known_format(const char *s)
{
    return nx_fmt_from_name(s) >= 0 || !strcmp(s, "int8") || !strcmp(s, "int4") || !strcmp(s, "uint4") ||
           !strcmp(s, "uint8") || !strcmp(s, "int32");
}

static const char *class_list(const reg_registry *r, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < r->ncls && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", r->cls[i].name);
    return buf;
}

static int arr_has(const tc_node *a, const char *s)
{
    for (size_t i = 0; a && i < a->nitems; i++)
        if (a->items[i]->kind == TC_STRING && strcmp(a->items[i]->str, s) == 0)
            return 1;
    return 0;
}

static void put_arr(char *buf, size_t cap, const tc_node *a)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; a && i < a->nitems && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", a->items[i]->str);
}

/* ---- DEVICES.toml ----------------------------------------------------- */

static void lint_devices(lint *L)
{
    const reg_registry *r = L->r;
    if (!r->dev)
        return;
    unknown_keys(L, r->dev, reg_ks_dev_root, "DEVICES.toml");
    const tc_node *ds = tc_get(r->dev, "device");
    char buf[512];
    for (size_t i = 0; ds && i < ds->nitems; i++) {
        const tc_node *d = ds->items[i];
        unknown_keys(L, d, reg_ks_device, "[[device]]");
        const tc_node *sku = tc_get(d, "sku"), *c = tc_get(d, "class");
        if (!sku)
            add_at(L, 1, d, "[[device]] has no key 'sku'");
        if (!c)
            add_at(L, 1, d, "[[device]] has no key 'class'");
        else if (reg_class_find(r, c->str) < 0)
            add_at(L, 1, c, "device '%s': class '%s' does not exist (classes: %s)", sku ? sku->str : "?", c->str,
                   class_list(r, buf, sizeof buf));
        for (size_t j = 0; sku && j < i; j++) {
            const tc_node *o = tc_get(ds->items[j], "sku");
            if (o && strcmp(o->str, sku->str) == 0) {
                add_at(L, 1, sku, "device sku '%s' is listed twice (first at line %d)", sku->str,
                       o->key_line > 0 ? o->key_line : o->line);
                break;
            }
        }
    }
}

/* ---- HARDWARE.toml and the class chain --------------------------------- */

static void lint_hw(lint *L, size_t ci)
{
    const reg_registry *r = L->r;
    const reg_class *c = &r->cls[ci];
    char buf[512];
    if (!c->hw) {
        add_file(L, 1, c->kf_path, 1, "class '%s' has a KERNEL_FAMILIES.toml but no HARDWARE.toml (expected %s)",
                 c->name, c->hw_path);
        return;
    }
    unknown_keys(L, c->hw, reg_ks_hw_root, "HARDWARE.toml");
    const tc_node *k = tc_get(c->hw, "class");
    if (!k)
        add_file(L, 1, c->hw_path, 1, "HARDWARE.toml has no key 'class' (it should say class = \"%s\")", c->name);
    else if (strcmp(k->str, c->name) != 0)
        add_at(L, 1, k, "class = \"%s\", but the directory is '%s'", k->str, c->name);
    if (c->parent_node && c->parent < 0)
        add_at(L, 1, c->parent_node, "parent '%s' does not exist (classes: %s)", c->parent_node->str,
               class_list(r, buf, sizeof buf));
    const tc_node *ref = tc_get(c->hw, "reference");
    if (ref && ref->kind == TC_STRING && reg_class_find(r, ref->str) < 0)
        add_at(L, 1, ref, "reference '%s' does not exist (classes: %s)", ref->str, class_list(r, buf, sizeof buf));
    else if (ref && ref->kind == TC_STRING && strcmp(ref->str, c->name) == 0)
        add_at(L, 1, ref, "reference = \"%s\": a class is not its own reference (leave the key out)", ref->str);
    if (c->parent_node && c->parent == (int)ci)
        add_at(L, 1, c->parent_node, "parent cycle: class '%s' is its own parent", c->name);
    const tc_node *atoms = tc_get(c->hw, "atoms");
    for (size_t i = 0; atoms && i < atoms->nitems; i++)
        if (!nx_atom_preset_find(atoms->items[i]->str))
            add_val(L, 1, atoms->items[i], "unknown atom '%s' in atoms (see `parity atoms`)", atoms->items[i]->str);
}

static void lint_cycles(lint *L)
{
    const reg_registry *r = L->r;
    for (size_t ci = 0; ci < r->ncls; ci++) {
        int p = r->cls[ci].parent;
        if (p == (int)ci)
            continue; /* reported by lint_hw */
        char path[1024];
        size_t off = (size_t)snprintf(path, sizeof path, "%s", r->cls[ci].name);
        for (size_t steps = 0; p >= 0 && steps <= r->ncls; steps++) {
            if (off < sizeof path)
                off += (size_t)snprintf(path + off, sizeof path - off, " -> %s", r->cls[p].name);
            if (p == (int)ci) {
                add_at(L, 1, r->cls[ci].parent_node, "parent cycle: %s", path);
                break;
            }
            p = r->cls[p].parent;
        }
    }
}

/* ---- KERNEL_FAMILIES.toml, one file ------------------------------------ */

static const char *const kinds[] = {"runtime", "compile", "policy", "numerics", NULL};
static const char *const hows[] = {"instantiation", "copy", "branch", NULL};
static const char *const units[] = {"tensor_core", "cuda_core", "memory", NULL};

static int in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (strcmp(*l, s) == 0)
            return 1;
    return 0;
}

static double num(const tc_node *n)
{
    return n->kind == TC_INT ? (double)n->i : n->f;
}

static void lint_numerics_table(lint *L, const tc_node *t, const char *fid, const char *pid)
{
    char where[256];
    snprintf(where, sizeof where, "%s.%s.%s", fid, pid, t->key);
    if (unknown_point_keys(L, t, where))
        skip(L, t);
    const tc_node *a = tc_get(t, "atom");
    const tc_node *name = a && a->kind == TC_STRING ? a : a && a->kind == TC_TABLE ? tc_get(a, "preset") : NULL;
    if (name && name->kind == TC_STRING && !strpbrk(name->str, "{}") && !nx_atom_preset_find(name->str)) {
        add_at(L, 1, name, "unknown atom '%s' in numerics %s (see `parity atoms`)", name->str, where);
        skip(L, t);
    }
}

static void lint_point_file(lint *L, const tc_node *pn, const char *fid)
{
    const char *pid = tc_get(pn, "id")->str;
    char where[256];
    snprintf(where, sizeof where, "[[family.point]] '%s'", pid);
    unknown_keys(L, pn, reg_ks_point, where);
    const tc_node *how = tc_get(pn, "how");
    if (how && !in_list(hows, how->str))
        add_at(L, 1, how, "point '%s': how = \"%s\" (expected instantiation, copy or branch)", pid, how->str);
    const tc_node *nu = tc_get(pn, "numerics");
    for (size_t i = 0; nu && i < nu->nitems; i++)
        lint_numerics_table(L, nu->items[i], fid, pid);
    const tc_node *el = tc_get(pn, "elementwise");
    for (size_t i = 0; el && i < el->nitems; i++) {
        const tc_node *e = el->items[i];
        if (e->kind == TC_STRING) {
            if (strcmp(e->str, "cr") != 0)
                add_at(L, 1, e,
                       "elementwise '%s' = \"%s\": expected \"cr\" or { approx = \"NAME\", ulp = N }", e->key, e->str);
            continue;
        }
        snprintf(where, sizeof where, "elementwise '%s'", e->key);
        unknown_keys(L, e, reg_ks_elem, where);
        const tc_node *a = tc_get(e, "approx"), *u = tc_get(e, "ulp");
        if (!a)
            add_at(L, 1, e, "elementwise '%s': an approximation needs approx = \"NAME\"", e->key);
        if (!u)
            add_at(L, 1, e, "elementwise '%s': an approximation needs its bound ulp = N", e->key);
        else if (!(num(u) >= 0))
            add_at(L, 1, u, "elementwise '%s': ulp must be >= 0", e->key);
    }
    const tc_node *tol = tc_get(pn, "tolerance");
    if (tol) {
        unknown_keys(L, tol, reg_ks_tolerance, "tolerance");
        int any = 0;
        for (size_t i = 0; i < tol->nitems; i++)
            if (reg_ks_has(reg_ks_tolerance, tol->items[i]->key)) {
                any = 1;
                if (!(num(tol->items[i]) >= 0))
                    add_at(L, 1, tol->items[i], "tolerance %s must be >= 0", tol->items[i]->key);
            }
        if (!any)
            add_at(L, 1, tol, "tolerance of point '%s' declares nothing (ulp = N, or rtol/atol)", pid);
    }
}

/* 1 if the manifest of class mc is on class c's chain. */
static int on_chain(const reg_registry *r, size_t c, size_t mc)
{
    int p = (int)c;
    for (size_t steps = 0; p >= 0 && steps <= r->ncls; steps++) {
        if (p == (int)mc)
            return 1;
        p = r->cls[p].parent;
    }
    return 0;
}

static void lint_evidence(lint *L, const tc_node *e, size_t mc, const char *fid)
{
    const reg_registry *r = L->r;
    char buf[512];
    unknown_keys(L, e, reg_ks_evidence, "[[family.evidence]]");
    const tc_node *c = tc_get(e, "class"), *p = tc_get(e, "point"), *m = tc_get(e, "measurement"),
                  *rows = tc_get(e, "rows");
    if (!c)
        add_at(L, 1, e, "[[family.evidence]] has no key 'class' (the class that measured it)");
    if (!p)
        add_at(L, 1, e, "[[family.evidence]] has no key 'point'");
    if (!m)
        add_at(L, 1, e, "[[family.evidence]] has no key 'measurement'");
    for (size_t i = 0; rows && i < rows->nitems; i++)
        if (rows->items[i]->i < 1)
            add_val(L, 1, rows->items[i], "evidence rows must be positive, found %lld", rows->items[i]->i);
    if (!c)
        return;
    int ci = reg_class_find(r, c->str);
    if (ci < 0) {
        add_at(L, 1, c, "evidence names class '%s', which does not exist (classes: %s)", c->str,
               class_list(r, buf, sizeof buf));
        return;
    }
    if (!on_chain(r, (size_t)ci, mc)) {
        add_at(L, 1, c, "evidence for class '%s' is in the manifest of class '%s', which '%s' does not inherit", c->str,
               r->cls[mc].name, c->str);
        return;
    }
    if (!p)
        return;
    reg_view v;
    nx_err err;
    if (reg_view_build(r, (size_t)ci, 1, &v, &err)) {
        L->oom = 1;
        return;
    }
    const reg_vfamily *f = reg_vfamily_find(&v, fid);
    if (f && !reg_vpoint_find(f, p->str)) {
        char pts[512];
        size_t off = 0;
        pts[0] = 0;
        for (size_t i = 0; i < f->npoints && off < sizeof pts; i++)
            off += (size_t)snprintf(pts + off, sizeof pts - off, "%s%s", i ? ", " : "", f->points[i].id);
        add_at(L, 1, p, "evidence names point '%s', which family '%s' does not have at class '%s' (points: %s)",
               p->str, fid, c->str, pts);
    }
    reg_view_free(&v);
}

static void lint_rows(lint *L, const tc_node *rows)
{
    if (rows->kind == TC_INT) {
        if (rows->i < 1)
            add_at(L, 1, rows, "rows must be >= 1, found %lld", rows->i);
        return;
    }
    if (rows->nitems != 2) {
        add_at(L, 1, rows, "rows must be N or [MIN, MAX] (the rows one launch covers), found %zu values",
               rows->nitems);
        return;
    }
    long long lo = rows->items[0]->i, hi = rows->items[1]->i;
    if (lo < 1 || hi < lo)
        add_at(L, 1, rows, "rows = [%lld, %lld]: need 1 <= MIN <= MAX", lo, hi);
}

/* Tables of an array of tables by their "id" (or "name"), for duplicate
 * checks in n log n: sorted by id, then by position. */
typedef struct id_ref {
    const char *id;
    size_t i;
} id_ref;

static int cmp_id_ref(const void *a, const void *b)
{
    const id_ref *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : x->i < y->i ? -1 : x->i > y->i;
}

/* Calls dup(L, arr, i, first, ctx) for every table arr->items[i] whose
 * `key` equals that of an earlier one (first: the earliest). */
typedef void (*dup_fn)(lint *, const tc_node *, size_t, size_t, const void *);
static void find_dups(lint *L, const tc_node *arr, const char *key, dup_fn dup, const void *ctx)
{
    size_t n = arr ? arr->nitems : 0;
    if (n < 2)
        return;
    id_ref *v = malloc(n * sizeof *v);
    if (!v) {
        L->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (id_ref){tc_get(arr->items[i], key)->str, i};
    qsort(v, n, sizeof *v, cmp_id_ref);
    for (size_t i = 1, first = 0; i < n; i++) {
        if (strcmp(v[i].id, v[first].id) != 0)
            first = i;
        else
            dup(L, arr, v[i].i, v[first].i, ctx);
    }
    free(v);
}

static void dup_family(lint *L, const tc_node *fams, size_t j, size_t first, const void *ctx)
{
    (void)ctx;
    const tc_node *id = tc_get(fams->items[j], "id");
    add_at(L, 1, id, "family '%s' is declared twice in this file (first at line %d)", id->str, fams->items[first]->line);
}

static void dup_point(lint *L, const tc_node *pts, size_t j, size_t first, const void *ctx)
{
    const tc_node *pid = tc_get(pts->items[j], "id");
    add_at(L, 1, pid, "point '%s' is declared twice in family '%s' (first at line %d)", pid->str, (const char *)ctx,
           pts->items[first]->line);
}

static void lint_kf_file(lint *L, size_t ci)
{
    const reg_class *c = &L->r->cls[ci];
    if (!c->kf)
        return;
    unknown_keys(L, c->kf, reg_ks_kf_root, "KERNEL_FAMILIES.toml");
    const tc_node *fams = tc_get(c->kf, "family");
    char where[256];
    for (size_t i = 0; fams && i < fams->nitems; i++) {
        const tc_node *fn = fams->items[i];
        const tc_node *id = tc_get(fn, "id");
        const char *fid = id->str;
        if (i == 0)
            find_dups(L, fams, "id", dup_family, NULL);
        snprintf(where, sizeof where, "[[family]] '%s'", fid);
        unknown_keys(L, fn, reg_ks_family, where);
        const tc_node *cu = tc_get(fn, "compute");
        if (cu) {
            unknown_keys(L, cu, reg_ks_compute, "compute");
            const tc_node *u = tc_get(cu, "unit"), *a = tc_get(cu, "atom");
            if (!u)
                add_at(L, 1, cu, "compute has no key 'unit' (tensor_core, cuda_core or memory)");
            else if (!in_list(units, u->str))
                add_at(L, 1, u, "compute unit '%s' (expected tensor_core, cuda_core or memory)", u->str);
            else if (!strcmp(u->str, "tensor_core") && !a)
                add_at(L, 1, cu, "compute unit tensor_core needs its atom (compute.atom = \"PRESET\")");
            if (a && !nx_atom_preset_find(a->str))
                add_at(L, 1, a, "unknown atom '%s' in compute (see `parity atoms`)", a->str);
        }
        const tc_node *fm = tc_get(fn, "formats");
        for (size_t j = 0; fm && j < fm->nitems; j++)
            if (!known_format(fm->items[j]->str))
                add_val(L, 1, fm->items[j], "unknown format '%s' in formats", fm->items[j]->str);
        const tc_node *rows = tc_get(fn, "rows");
        if (rows)
            lint_rows(L, rows);
        const tc_node *ks = tc_get(fn, "kernels");
        for (size_t j = 0; ks && j < ks->nitems; j++)
            for (size_t k = 0; k < j; k++)
                if (strcmp(ks->items[j]->str, ks->items[k]->str) == 0) {
                    add_val(L, 1, ks->items[j], "kernel '%s' is listed twice in family '%s'", ks->items[j]->str, fid);
                    break;
                }
        const tc_node *ps = tc_get(fn, "param");
        for (size_t j = 0; ps && j < ps->nitems; j++) {
            const tc_node *pn = ps->items[j];
            const char *name = tc_get(pn, "name")->str;
            snprintf(where, sizeof where, "[[family.param]] '%s'", name);
            unknown_keys(L, pn, reg_ks_param, where);
            const tc_node *k = tc_get(pn, "kind");
            if (k && !in_list(kinds, k->str))
                add_at(L, 1, k, "param '%s': kind = \"%s\" (expected runtime, compile, policy or numerics)", name, k->str);
            for (size_t q = 0; q < j; q++)
                if (strcmp(tc_get(ps->items[q], "name")->str, name) == 0) {
                    add_at(L, 1, tc_get(pn, "name"), "param '%s' is declared twice in family '%s' (first at line %d)",
                           name, fid, ps->items[q]->line);
                    break;
                }
        }
        const tc_node *pts = tc_get(fn, "point");
        for (size_t j = 0; pts && j < pts->nitems; j++)
            lint_point_file(L, pts->items[j], fid);
        find_dups(L, pts, "id", dup_point, fid);
        const tc_node *ev = tc_get(fn, "evidence");
        for (size_t j = 0; ev && j < ev->nitems; j++)
            lint_evidence(L, ev->items[j], ci, fid);
    }
}

/* ---- per-class views -------------------------------------------------- */

typedef struct tmpl_ctx {
    lint *L;
    const reg_registry *r;
    const reg_view *v;
    const reg_vfamily *f;
    const reg_vpoint *p;
    const reg_env *env;
    const tc_node *at; /* the string holding the template */
    const char *red;   /* the reduction */
    int bad;
} tmpl_ctx;

static nx_status tmpl_check(const char *name, void *vctx, nx_err *err)
{
    (void)err;
    tmpl_ctx *c = vctx;
    const reg_vparam *pa = reg_vparam_find(c->f, name);
    int dim = reg_is_shape_dim(c->f, name);
    if (!pa && !dim) {
        if (first_time(c->L, c->at, name))
            add_val(c->L, 1, c->at,
                    "template {%s} in numerics '%s' of %s.%s names no param of family '%s' (declare it in "
                    "[[family.param]] or in the family's shape)",
                    name, c->red, c->f->id, c->p->id, c->f->id);
        c->bad = 1;
        return NX_OK;
    }
    if (pa && pa->kind && pa->kind->kind == TC_STRING && strcmp(pa->kind->str, "runtime") == 0) {
        if (first_time(c->L, c->at, name))
            add_val(c->L, 1, c->at,
                    "runtime param '%s' is used in numerics '%s' of %s.%s (key '%s'): a numerics point may not depend "
                    "on a launch-time value; make it a compile or numerics param",
                    name, c->red, c->f->id, c->p->id, c->at->key ? c->at->key : "?");
        c->bad = 1;
        return NX_OK;
    }
    if (!dim && !reg_env_get(c->env, name)) {
        if (first_time(c->L, c->at, name))
            add_val(c->L, 1, c->at,
                    "template {%s} in numerics '%s' of %s.%s has no value at class '%s' (not in the point's params, "
                    "the family default or the class defaults)",
                    name, c->red, c->f->id, c->p->id, c->r->cls[c->v->cls].name);
        c->bad = 1;
    }
    return NX_OK;
}

static void walk_templates(tmpl_ctx *c, const tc_node *n)
{
    if (n->kind == TC_STRING && strpbrk(n->str, "{}")) {
        nx_err e;
        c->at = n;
        if (reg_tmpl_scan(n->str, tmpl_check, c, &e)) {
            add_val(c->L, 1, n, "key '%s': %s in \"%s\"", n->key ? n->key : "?", e.msg, n->str);
            c->bad = 1;
        }
    }
    for (size_t i = 0; i < n->nitems; i++)
        walk_templates(c, n->items[i]);
}

static void chain_groups(lint *L, const nx_tree *t, const nx_atom *a, const tc_node *at, const char *where)
{
    if (!t)
        return;
    if (t->kind == NX_T_CHAIN && a->present && a->group > 0 && t->count != a->group)
        add_at(L, 0, at, "%s: chain(%ld), but atom '%s' adds groups of %d", where, t->count, a->preset, a->group);
    chain_groups(L, t->t, a, at, where);
    chain_groups(L, t->c, a, at, where);
}

static int realised(const reg_view *v, const char *atom)
{
    for (size_t i = 0; i < v->natoms; i++)
        if (strcmp(v->atoms[i]->str, atom) == 0)
            return 1;
    return 0;
}

static void lint_point_view(lint *L, const reg_view *v, const reg_vfamily *f, const reg_vpoint *p)
{
    const reg_registry *r = L->r;
    const char *cname = r->cls[v->cls].name;
    const tc_node *decl = p->decls[p->ndecls - 1];
    const tc_node *reds = f->f[RV_F_REDUCTIONS], *elems = f->f[RV_F_ELEMENTWISE], *kernels = f->f[RV_F_KERNELS];
    char buf[512];
    if (reds && reds->nitems > 0 && p->numerics.n == 0)
        add_at(L, 1, decl, "point '%s' of family '%s' has no numerics (give [family.point.numerics.<reduction>] for %s)",
               p->id, f->id, (put_arr(buf, sizeof buf, reds), buf));
    else if (p->numerics.n == 0 && p->elem.n == 0)
        add_at(L, 1, decl,
               "point '%s' of family '%s' has no numerics (no [family.point.numerics.<reduction>] table%s)", p->id,
               f->id, reds ? " and no [family.point.elementwise]" : "");
    for (size_t i = 0; reds && i < p->numerics.n; i++)
        if (!arr_has(reds, p->numerics.v[i].key))
            add_at(L, 1, p->numerics.v[i].n, "numerics '%s': family '%s' has no reduction '%s' (its reductions: %s)",
                   p->numerics.v[i].key, f->id, p->numerics.v[i].key,
                   (put_arr(buf, sizeof buf, reds), reds->nitems ? buf : "none"));
    for (size_t i = 0; elems && i < p->elem.n; i++)
        if (!arr_has(elems, p->elem.v[i].key))
            add_at(L, 1, p->elem.v[i].n, "elementwise '%s': family '%s' declares no such function (its elementwise: %s)",
                   p->elem.v[i].key, f->id, (put_arr(buf, sizeof buf, elems), elems->nitems ? buf : "none"));
    if (p->how && strcmp(p->how->str, "copy") == 0 && !p->reason)
        add_at(L, 1, p->how, "point '%s' is a copy without a reason (add reason = \"why it is not an instantiation\")",
               p->id);
    if (p->kernel && kernels && !arr_has(kernels, p->kernel->str))
        add_at(L, 1, p->kernel, "point '%s': kernel '%s' is not one of family '%s''s kernels (%s)", p->id,
               p->kernel->str, f->id, (put_arr(buf, sizeof buf, kernels), buf));
    else if (p->kernel && !kernels)
        add_at(L, 1, p->kernel, "point '%s' names kernel '%s', but family '%s' lists no kernels", p->id, p->kernel->str,
               f->id);
    for (size_t i = 0; i < p->params.n; i++)
        if (!reg_vparam_find(f, p->params.v[i].key))
            add_at(L, 1, p->params.v[i].n, "param '%s' of point '%s' is not declared by family '%s' ([[family.param]])",
                   p->params.v[i].key, p->id, f->id);
    /* negative_control names Tier 1 checks (docs/registry.md): an unknown
     * name would make a control that no check expects to fail */
    for (size_t i = 0; i < p->params.n; i++) {
        const tc_node *nv = p->params.v[i].n;
        if (strcmp(p->params.v[i].key, "negative_control") != 0)
            continue;
        if (!nv || nv->kind != TC_STRING) {
            add_at(L, 1, nv, "point '%s': negative_control must be a string of Tier 1 checks (determinism, "
                   "eager_graphed, new_legacy, rows, comma-separated)", p->id);
            continue;
        }
        static const char *const checks[] = {"determinism", "eager_graphed", "new_legacy", "rows"};
        const char *q = nv->str;
        while (*q) {
            size_t l = strcspn(q, ",");
            const char *w = q;
            size_t wl = l;
            while (wl && *w == ' ')
                w++, wl--;
            while (wl && w[wl - 1] == ' ')
                wl--;
            int ok = 0;
            for (size_t c = 0; c < sizeof checks / sizeof *checks && !ok; c++)
                ok = wl == strlen(checks[c]) && !strncmp(w, checks[c], wl);
            if (!ok)
                add_at(L, 1, nv, "point '%s': negative_control names '%.*s', no Tier 1 check (determinism, "
                       "eager_graphed, new_legacy, rows)", p->id, (int)(wl < 64 ? wl : 64), w);
            q += l + (q[l] == ',');
        }
        if (!*nv->str)
            add_at(L, 1, nv, "point '%s': negative_control is empty (the Tier 1 checks it is built to fail)", p->id);
    }

    reg_env env;
    nx_err err;
    if (reg_env_build(v, f, p, &env, &err)) {
        L->oom = 1;
        return;
    }
    for (size_t i = 0; i < p->numerics.n; i++) {
        const tc_node *t = p->numerics.v[i].n;
        tmpl_ctx tc = {L, r, v, f, p, &env, NULL, p->numerics.v[i].key, 0};
        walk_templates(&tc, t);
        if (tc.bad || is_skipped(L, t))
            continue;
        nx_point pt;
        if (reg_point_from_table(t, &env, "1", &pt, &err)) {
            add_err(L, &err, t);
            continue;
        }
        char where[256];
        snprintf(where, sizeof where, "numerics '%s' of %s.%s", p->numerics.v[i].key, f->id, p->id);
        chain_groups(L, pt.tree, &pt.atom, t, where);
        if (pt.atom.present && pt.atom.preset[0] && !realised(v, pt.atom.preset))
            add_at(L, 0, t, "%s uses atom '%s', which class '%s' does not realise (HARDWARE.toml atoms)", where,
                   pt.atom.preset, cname);
        nx_point_free(&pt);
    }
    reg_env_free(&env);
}

static void lint_view(lint *L, const reg_view *v)
{
    typedef struct { const char *kernel, *fam; } owner;
    owner *own = NULL;
    size_t nown = 0;
    const char *cname = L->r->cls[v->cls].name;
    for (size_t i = 0; i < v->nfams; i++) {
        const reg_vfamily *f = &v->fams[i];
        for (size_t j = 0; j < f->nparams; j++)
            if (!f->params[j].kind)
                add_at(L, 1, f->params[j].decl, "param '%s' of family '%s' has no kind (runtime, compile, policy or numerics)",
                       f->params[j].name, f->id);
        const tc_node *cu = f->f[RV_F_COMPUTE];
        const tc_node *ca = cu ? tc_get(cu, "atom") : NULL;
        if (ca && nx_atom_preset_find(ca->str) && !realised(v, ca->str))
            add_at(L, 0, ca, "family '%s' computes with atom '%s', which class '%s' does not realise (HARDWARE.toml atoms)",
                   f->id, ca->str, cname);
        const tc_node *ks = f->f[RV_F_KERNELS];
        for (size_t j = 0; ks && j < ks->nitems; j++) {
            const char *k = ks->items[j]->str;
            const char *other = NULL;
            for (size_t q = 0; q < nown; q++)
                if (strcmp(own[q].kernel, k) == 0 && strcmp(own[q].fam, f->id) != 0)
                    other = own[q].fam;
            if (other) {
                add_val(L, 1, ks->items[j], "kernel '%s' is listed in two families, '%s' and '%s'", k, other, f->id);
                continue;
            }
            owner *no = realloc(own, (nown + 1) * sizeof *no);
            if (!no) {
                L->oom = 1;
                break;
            }
            own = no;
            own[nown++] = (owner){k, f->id};
        }
        for (size_t j = 0; j < f->npoints; j++)
            lint_point_view(L, v, f, &f->points[j]);
    }
    free(own);
}

/* ---- report ----------------------------------------------------------- */

static int cmp_finding(const void *a, const void *b)
{
    const finding *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c)
        return c;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    if (x->error != y->error)
        return x->error ? -1 : 1;
    return strcmp(x->msg, y->msg);
}

size_t reg_lint(const reg_registry *r, char **report)
{
    lint L = {0};
    L.r = r;
    lint_devices(&L);
    for (size_t c = 0; c < r->ncls; c++) {
        lint_hw(&L, c);
        lint_kf_file(&L, c);
    }
    lint_cycles(&L);
    for (size_t c = 0; c < r->ncls; c++) {
        reg_view v;
        nx_err err;
        if (reg_view_build(r, c, 1, &v, &err)) {
            L.oom = 1;
            continue;
        }
        lint_view(&L, &v);
        reg_view_free(&v);
    }
    if (L.n)
        qsort(L.v, L.n, sizeof *L.v, cmp_finding);
    nx_sbuf b = {0};
    size_t errors = 0;
    for (size_t i = 0; i < L.n; i++) {
        if (i > 0 && cmp_finding(&L.v[i - 1], &L.v[i]) == 0)
            continue;
        finding *f = &L.v[i];
        if (f->col > 0)
            nx_sbuf_printf(&b, "%s:%d:%d: %s: %s\n", f->file, f->line, f->col, f->error ? "error" : "warning", f->msg);
        else
            nx_sbuf_printf(&b, "%s:%d: %s: %s\n", f->file, f->line, f->error ? "error" : "warning", f->msg);
        errors += (size_t)f->error;
    }
    if (L.oom) {
        nx_sbuf_printf(&b, "%s: error: out of memory while linting: the findings are incomplete\n", r->dir);
        errors++;
    }
    for (size_t i = 0; i < L.n; i++) {
        free(L.v[i].file);
        free(L.v[i].msg);
    }
    free(L.v);
    free((void *)L.skip);
    free(L.seen);
    if (report) {
        if (!b.s && !b.oom)
            nx_sbuf_printf(&b, "%s", "");
        *report = nx_sbuf_take(&b);
    } else {
        free(nx_sbuf_take(&b));
    }
    return errors;
}
