/* registry.c: loading the family registry (docs/registry.md), the merged
 * view of a class along its parent chain, template filling and resolution
 * of a family point into a fam_spec with its canonical hash. */
#include "registry_int.h"

#include "nx_sha256.h"
#include "point_toml.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- schema ----------------------------------------------------------- */

const reg_keyspec reg_ks_dev_root[] = {{"device", KS_ATAB}, {NULL, 0}};
const reg_keyspec reg_ks_device[] = {{"sku", KS_STR}, {"class", KS_STR}, {"name", KS_STR}, {NULL, 0}};
const reg_keyspec reg_ks_hw_root[] = {{"class", KS_STR},      {"parent", KS_STR}, {"description", KS_STR},
                                    {"defaults", KS_TABLE}, {"atoms", KS_ASTR}, {"rates", KS_TABLE},
                                    {"backend", KS_STR | KS_TABLE}, {"reference", KS_STR}, {NULL, 0}};
/* HARDWARE.toml's backend = { serve = "CMD" } or { dlopen = "LIB" } (docs/backends.md) */
static const reg_keyspec ks_backend[] = {{"serve", KS_STR}, {"dlopen", KS_STR}, {"timeout", KS_NUM},
                                         {"in_process", KS_BOOL}, {NULL, 0}};
/* [rates] and [[bundle]] are the LKB report's (docs/lkb.md; their keys are checked by reg_lkb_lint) */
const reg_keyspec reg_ks_kf_root[] = {{"family", KS_ATAB}, {"bundle", KS_ATAB}, {NULL, 0}};
const reg_keyspec reg_ks_family[] = {
    {"id", KS_STR},          {"description", KS_STR}, {"ops", KS_ASTR},        {"formats", KS_ASTR},
    {"rows", KS_INT | KS_AINT}, {"compute", KS_TABLE}, {"kernels", KS_ASTR},   {"pipeline", KS_STR},
    {"shape", KS_ASTR},      {"reductions", KS_ASTR}, {"elementwise", KS_ASTR}, {"param", KS_ATAB},
    {"point", KS_ATAB},      {"evidence", KS_ATAB},   {NULL, 0}};
const reg_keyspec reg_ks_compute[] = {{"unit", KS_STR}, {"atom", KS_STR}, {NULL, 0}};
const reg_keyspec reg_ks_param[] = {
    {"name", KS_STR}, {"kind", KS_STR}, {"default", KS_SCALAR}, {"description", KS_STR}, {NULL, 0}};
const reg_keyspec reg_ks_point[] = {{"id", KS_STR},         {"description", KS_STR}, {"how", KS_STR},
                                  {"reason", KS_STR},     {"kernel", KS_STR},      {"params", KS_TABLE},
                                  {"numerics", KS_TABLE}, {"elementwise", KS_TABLE}, {"tolerance", KS_TABLE},
                                  {"bundle", KS_STR},     {NULL, 0}};
const reg_keyspec reg_ks_tolerance[] = {{"ulp", KS_NUM}, {"rtol", KS_NUM}, {"atol", KS_NUM}, {NULL, 0}};
const reg_keyspec reg_ks_elem[] = {{"approx", KS_STR}, {"ulp", KS_NUM}, {NULL, 0}};
const reg_keyspec reg_ks_evidence[] = {
    {"class", KS_STR}, {"point", KS_STR}, {"rows", KS_AINT}, {"measurement", KS_STR}, {NULL, 0}};

const char *const reg_point_keys[] = {"acc", "rounding", "in", "in_rounding", "fma", "product",
                                     "tree", "atom", "out", "out_rounding", "saturate", NULL};
const char *const reg_atom_keys[] = {"preset", "frac_bits", "term_round", "round", "acc", NULL};

const char *const reg_vfamily_field_names[RV_NFF] = {"description", "ops",     "formats",    "rows",
                                                   "compute",     "kernels", "pipeline",   "shape",
                                                   "reductions",  "elementwise"};

int reg_ks_has(const reg_keyspec *ks, const char *key)
{
    for (; ks->key; ks++)
        if (strcmp(ks->key, key) == 0)
            return 1;
    return 0;
}

static unsigned ks_kinds(const reg_keyspec *ks, const char *key)
{
    for (; ks->key; ks++)
        if (strcmp(ks->key, key) == 0)
            return ks->kinds;
    return 0;
}

/* ---- small helpers ---------------------------------------------------- */

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static char *path_join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *p = malloc(na + nb + 2);
    if (!p)
        return NULL;
    memcpy(p, a, na);
    p[na] = '/';
    memcpy(p + na + 1, b, nb + 1);
    return p;
}

/* Whether path names anything: a FIFO or a directory where a registry file
 * belongs is then refused by its reader (tc_parse_file), naming it, not
 * taken for an absent file. */
static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static nx_status oom(nx_err *err)
{
    return nx_err_set(err, NX_ENOMEM, "out of memory");
}

void reg_put_loc(nx_sbuf *b, const tc_node *n)
{
    if (!n) {
        nx_sbuf_printf(b, "-");
        return;
    }
    int line = n->key_line > 0 ? n->key_line : n->line;
    nx_sbuf_printf(b, "%s:%d", n->source ? n->source : "?", line > 0 ? line : 1);
}

/* ---- structural checks at load ---------------------------------------- */

static const char *kinds_text(unsigned k)
{
    switch (k) {
    case KS_STR: return "a string";
    case KS_INT: return "an integer";
    case KS_BOOL: return "a boolean";
    case KS_TABLE: return "a table";
    case KS_NUM: return "a number";
    case KS_ASTR: return "an array of strings";
    case KS_AINT: return "an array of integers";
    case KS_ATAB: return "an array of tables";
    case KS_INT | KS_AINT: return "an integer or an array of integers";
    case KS_SCALAR: return "a string, integer, float or boolean";
    default: return "of another kind";
    }
}

static nx_status check_value(const tc_node *n, const char *key, unsigned kinds, nx_err *err)
{
    unsigned have = 0;
    switch (n->kind) {
    case TC_STRING: have = KS_STR; break;
    case TC_INT: have = KS_INT; break;
    case TC_FLOAT: have = KS_FLOAT; break;
    case TC_BOOL: have = KS_BOOL; break;
    case TC_TABLE: have = KS_TABLE; break;
    case TC_ARRAY: {
        unsigned elem = kinds & KS_ASTR ? KS_STR : kinds & KS_AINT ? KS_INT : kinds & KS_ATAB ? KS_TABLE : 0;
        if (!elem)
            break;
        tc_kind want = elem == KS_STR ? TC_STRING : elem == KS_INT ? TC_INT : TC_TABLE;
        for (size_t i = 0; i < n->nitems; i++)
            if (n->items[i]->kind != want)
                return tc_errf(err, NX_EINVAL, n->items[i], "key '%s' must be %s, found an element of kind %s",
                               key, kinds_text(kinds), tc_kind_name(n->items[i]->kind));
        return NX_OK;
    }
    default: break;
    }
    if (have & kinds)
        return NX_OK;
    return tc_errf(err, NX_EINVAL, n, "key '%s' must be %s, found %s", key, kinds_text(kinds),
                   tc_kind_name(n->kind));
}

/* Checks the kinds of the keys ks knows; other keys are lint's business. */
static nx_status check_table(const tc_node *t, const reg_keyspec *ks, nx_err *err)
{
    for (size_t i = 0; i < t->nitems; i++) {
        unsigned k = ks_kinds(ks, t->items[i]->key);
        nx_status st;
        if (k && (st = check_value(t->items[i], t->items[i]->key, k, err)))
            return st;
    }
    return NX_OK;
}

static nx_status check_scalars(const tc_node *t, nx_err *err)
{
    for (size_t i = 0; i < t->nitems; i++) {
        nx_status st = check_value(t->items[i], t->items[i]->key, KS_SCALAR, err);
        if (st)
            return st;
    }
    return NX_OK;
}

/* Family and point ids name files (the campaign's traces are
 * DIR/CLASS.FAMILY.POINT.TAG.safetensors) and are joined as FAMILY.POINT:
 * letters, digits, '_', '-' (a point id also '.', never ".."), starting
 * with a letter, digit or '_', at most RG_ID_MAX characters.  Anything
 * else ("x/../../escaped", "-rf", "a.b" as a family) is refused at load. */
static nx_status check_id(const tc_node *n, const char *what, int dots, nx_err *err)
{
    const char *s = n->str;
    size_t len = strlen(s);
    const char *allowed = dots ? "letters, digits, '_', '-' and '.'" : "letters, digits, '_' and '-'";
    if (len == 0)
        return tc_errf(err, NX_EINVAL, n, "%s is empty", what);
    if (len > RG_ID_MAX)
        return tc_errf(err, NX_EINVAL, n, "%s is %zu characters long (at most %d)", what, len, RG_ID_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 (i > 0 && (c == '-' || (dots && c == '.')));
        if (!ok)
            return tc_errf(err, NX_EINVAL, n, "%s '%s': character %zu ('%c') is not allowed (%s%s)", what, s, i + 1,
                           c >= 0x20 && c < 0x7f ? c : '?', allowed, i == 0 ? "; it must start with a letter, digit or '_'" : "");
    }
    if (strstr(s, ".."))
        return tc_errf(err, NX_EINVAL, n, "%s '%s' contains \"..\"", what, s);
    return NX_OK;
}

static nx_status check_point(const tc_node *p, nx_err *err)
{
    nx_status st;
    const tc_node *id;
    if ((st = tc_want(p, "id", TC_STRING, &id, err)) || (st = check_id(id, "point id", 1, err)) ||
        (st = check_table(p, reg_ks_point, err)))
        return st;
    const tc_node *n;
    if ((n = tc_get(p, "params")) && (st = check_scalars(n, err)))
        return st;
    if ((n = tc_get(p, "numerics")))
        for (size_t i = 0; i < n->nitems; i++)
            if ((st = check_value(n->items[i], n->items[i]->key, KS_TABLE, err)))
                return st;
    if ((n = tc_get(p, "elementwise")))
        for (size_t i = 0; i < n->nitems; i++) {
            const tc_node *e = n->items[i];
            if (e->kind == TC_TABLE) {
                if ((st = check_table(e, reg_ks_elem, err)))
                    return st;
            } else if (e->kind != TC_STRING) {
                return tc_errf(err, NX_EINVAL, e,
                               "key '%s' must be \"cr\" or a table { approx = \"...\", ulp = N }, found %s",
                               e->key, tc_kind_name(e->kind));
            }
        }
    if ((n = tc_get(p, "tolerance")) && (st = check_table(n, reg_ks_tolerance, err)))
        return st;
    return NX_OK;
}

static nx_status check_kf(const tc_node *root, nx_err *err)
{
    nx_status st = check_table(root, reg_ks_kf_root, err);
    if (st)
        return st;
    const tc_node *fams = tc_get(root, "family");
    for (size_t i = 0; fams && i < fams->nitems; i++) {
        const tc_node *f = fams->items[i], *n;
        if ((st = tc_want(f, "id", TC_STRING, &n, err)) || (st = check_id(n, "family id", 0, err)) ||
            (st = check_table(f, reg_ks_family, err)))
            return st;
        if ((n = tc_get(f, "compute")) && (st = check_table(n, reg_ks_compute, err)))
            return st;
        const tc_node *ps = tc_get(f, "param");
        for (size_t j = 0; ps && j < ps->nitems; j++)
            if ((st = tc_want(ps->items[j], "name", TC_STRING, &n, err)) ||
                (st = check_table(ps->items[j], reg_ks_param, err)))
                return st;
        const tc_node *pts = tc_get(f, "point");
        for (size_t j = 0; pts && j < pts->nitems; j++)
            if ((st = check_point(pts->items[j], err)))
                return st;
        const tc_node *ev = tc_get(f, "evidence");
        for (size_t j = 0; ev && j < ev->nitems; j++)
            if ((st = check_table(ev->items[j], reg_ks_evidence, err)))
                return st;
    }
    return NX_OK;
}

/* backend: "cpu" or "cuda", or a table with one of serve and dlopen (a
 * non-empty string), timeout in (0, 86400] and in_process (dlopen only). */
static nx_status check_backend(const tc_node *b, nx_err *err)
{
    if (b->kind == TC_STRING) {
        if (strcmp(b->str, "cpu") && strcmp(b->str, "cuda"))
            return tc_errf(err, NX_EINVAL, b,
                           "backend = \"%s\": a built-in backend is \"cpu\" or \"cuda\"; an out-of-tree one is "
                           "{ serve = \"CMD\" } or { dlopen = \"LIB.so\" } (docs/backends.md)", b->str);
        return NX_OK;
    }
    nx_status st = check_table(b, ks_backend, err);
    if (st)
        return st;
    for (size_t i = 0; i < b->nitems; i++)
        if (!reg_ks_has(ks_backend, b->items[i]->key))
            return tc_errf(err, NX_EINVAL, b->items[i],
                           "backend: unknown key '%s' (serve, dlopen, timeout, in_process)", b->items[i]->key);
    const tc_node *sv = tc_get(b, "serve"), *dl = tc_get(b, "dlopen"), *t = tc_get(b, "timeout"),
                  *ip = tc_get(b, "in_process");
    if (!sv == !dl)
        return tc_errf(err, NX_EINVAL, b, "backend: exactly one of serve and dlopen (found %s)",
                       sv ? "both" : "neither");
    const tc_node *w = sv ? sv : dl;
    if (!*w->str)
        return tc_errf(err, NX_EINVAL, w, "backend.%s is empty", w->key);
    if (t) {
        double v = t->kind == TC_INT ? (double)t->i : t->f;
        if (!(v > 0 && v <= 86400))
            return tc_errf(err, NX_EINVAL, t, "backend.timeout = %g: seconds in (0, 86400]", v);
    }
    if (ip && !dl)
        return tc_errf(err, NX_EINVAL, ip, "backend.in_process is for a dlopen backend");
    return NX_OK;
}

static nx_status check_hw(const tc_node *root, nx_err *err)
{
    nx_status st = check_table(root, reg_ks_hw_root, err);
    const tc_node *d = tc_get(root, "defaults"), *b = tc_get(root, "backend");
    if (!st && d)
        st = check_scalars(d, err);
    if (!st && b)
        st = check_backend(b, err);
    return st;
}

static nx_status check_dev(const tc_node *root, nx_err *err)
{
    nx_status st = check_table(root, reg_ks_dev_root, err);
    const tc_node *ds = tc_get(root, "device");
    for (size_t i = 0; !st && ds && i < ds->nitems; i++)
        st = check_table(ds->items[i], reg_ks_device, err);
    return st;
}

/* ---- load ------------------------------------------------------------- */

/* r->cls is in strcmp order (reg_load adds the class folders sorted): a
 * binary search, so that parent walks over thousands of classes stay
 * cheap. */
int reg_class_find(const reg_registry *r, const char *name)
{
    size_t lo = 0, hi = r->ncls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->cls[mid].name, name);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void reg_free(reg_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncls; i++) {
        free(r->cls[i].name);
        free(r->cls[i].hw_path);
        free(r->cls[i].kf_path);
        tc_free(r->cls[i].hw);
        tc_free(r->cls[i].kf);
    }
    free(r->cls);
    free(r->dir);
    free(r->dev_path);
    tc_free(r->dev);
    free(r);
}

static nx_status load_file(const char *path, nx_status (*check)(const tc_node *, nx_err *), tc_node **out,
                           nx_err *err)
{
    *out = NULL;
    if (!file_exists(path))
        return NX_OK;
    nx_status st = tc_parse_file(path, out, err);
    if (!st && (st = check(*out, err))) {
        tc_free(*out);
        *out = NULL;
    }
    return st;
}

nx_status reg_load(const char *dir, reg_registry **out, nx_err *err)
{
    *out = NULL;
    reg_registry *r = calloc(1, sizeof *r);
    if (!r)
        return oom(err);
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    r->dir = malloc(dl + 1);
    if (!r->dir) {
        reg_free(r);
        return oom(err);
    }
    memcpy(r->dir, dir, dl);
    r->dir[dl] = 0;

    DIR *d = opendir(r->dir);
    if (!d) {
        nx_status st = nx_err_set(err, NX_EIO, "%s: cannot open the registry directory: %s", r->dir, strerror(errno));
        reg_free(r);
        return st;
    }
    char **names = NULL;
    size_t nnames = 0;
    nx_status st = NX_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *p = path_join(r->dir, de->d_name);
        struct stat sb;
        int isdir = p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
        free(p);
        if (!isdir)
            continue;
        char **nn = realloc(names, (nnames + 1) * sizeof *nn);
        if (!nn || !(nn[nnames] = xstrdup(de->d_name))) {
            if (nn)
                names = nn;
            st = oom(err);
            break;
        }
        names = nn;
        nnames++;
    }
    closedir(d);
    if (!st && nnames)
        qsort(names, nnames, sizeof *names, cmp_str); /* reg_class_find's binary search relies on it */
    for (size_t i = 0; !st && i < nnames; i++) {
        char *cdir = path_join(r->dir, names[i]);
        char *hw = cdir ? path_join(cdir, "HARDWARE.toml") : NULL;
        char *kf = cdir ? path_join(cdir, "common/KERNEL_FAMILIES.toml") : NULL;
        free(cdir);
        if (!hw || !kf) {
            free(hw);
            free(kf);
            st = oom(err);
            break;
        }
        if (!file_exists(hw) && !file_exists(kf)) {
            free(hw);
            free(kf);
            continue;
        }
        reg_class *c = realloc(r->cls, (r->ncls + 1) * sizeof *c);
        if (!c) {
            free(hw);
            free(kf);
            st = oom(err);
            break;
        }
        r->cls = c;
        c = &r->cls[r->ncls++];
        memset(c, 0, sizeof *c);
        c->name = names[i];
        names[i] = NULL;
        c->hw_path = hw;
        c->kf_path = kf;
        c->parent = -1;
        if ((st = load_file(hw, check_hw, &c->hw, err)) || (st = load_file(kf, check_kf, &c->kf, err)))
            break;
    }
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    if (!st && r->ncls == 0)
        st = nx_err_set(err, NX_EINVAL,
                        "%s: no classes (expected %s/<class>/HARDWARE.toml or %s/<class>/common/KERNEL_FAMILIES.toml)",
                        r->dir, r->dir, r->dir);
    if (!st) {
        r->dev_path = path_join(r->dir, "DEVICES.toml");
        if (!r->dev_path)
            st = oom(err);
        else
            st = load_file(r->dev_path, check_dev, &r->dev, err);
    }
    for (size_t i = 0; !st && i < r->ncls; i++) {
        const tc_node *p = r->cls[i].hw ? tc_get(r->cls[i].hw, "parent") : NULL;
        r->cls[i].parent_node = p;
        r->cls[i].parent = p ? reg_class_find(r, p->str) : -1;
    }
    if (st) {
        reg_free(r);
        return st;
    }
    *out = r;
    return NX_OK;
}

size_t reg_class_count(const reg_registry *r)
{
    return r->ncls;
}

const char *reg_class_name(const reg_registry *r, size_t i)
{
    return i < r->ncls ? r->cls[i].name : NULL;
}

const char *reg_class_parent(const reg_registry *r, const char *class_name)
{
    int c = reg_class_find(r, class_name);
    if (c < 0 || !r->cls[c].parent_node)
        return NULL;
    return r->cls[c].parent_node->str;
}

const char *reg_class_reference(const reg_registry *r, const char *class_name)
{
    int c = reg_class_find(r, class_name);
    const tc_node *n = c >= 0 && r->cls[c].hw ? tc_get(r->cls[c].hw, "reference") : NULL;
    return n ? n->str : NULL;
}

int reg_class_backend(const reg_registry *r, const char *class_name, reg_backend *out)
{
    memset(out, 0, sizeof *out);
    int c = reg_class_find(r, class_name);
    for (size_t depth = 0; c >= 0 && depth <= r->ncls; depth++) {
        const tc_node *b = r->cls[c].hw ? tc_get(r->cls[c].hw, "backend") : NULL;
        if (b) {
            out->cls = r->cls[c].name;
            snprintf(out->dir, sizeof out->dir, "%s", r->cls[c].hw_path);
            char *slash = strrchr(out->dir, '/');
            if (slash)
                *slash = 0;
            else
                snprintf(out->dir, sizeof out->dir, ".");
            if (b->kind == TC_STRING) {
                out->builtin = b->str;
                return 1;
            }
            const tc_node *n;
            out->serve = (n = tc_get(b, "serve")) ? n->str : NULL;
            out->dlopen = (n = tc_get(b, "dlopen")) ? n->str : NULL;
            if ((n = tc_get(b, "timeout")))
                out->timeout_s = n->kind == TC_INT ? (double)n->i : n->f;
            out->in_process = (n = tc_get(b, "in_process")) ? n->b : 0;
            return 1;
        }
        c = r->cls[c].parent;
    }
    return 0;
}

/* ---- views ------------------------------------------------------------ */

const tc_node *reg_kvs_get(const reg_kvs *k, const char *key)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->v[i].key, key) == 0)
            return k->v[i].n;
    return NULL;
}

static nx_status kvs_set(reg_kvs *k, const char *key, const tc_node *n, nx_err *err)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->v[i].key, key) == 0) {
            k->v[i].n = n;
            return NX_OK;
        }
    reg_kv *v = realloc(k->v, (k->n + 1) * sizeof *v);
    if (!v)
        return oom(err);
    k->v = v;
    v[k->n].key = key;
    v[k->n].n = n;
    k->n++;
    return NX_OK;
}

/* Every key of table t into k (later values replace earlier ones). */
static nx_status kvs_merge(reg_kvs *k, const tc_node *t, nx_err *err)
{
    for (size_t i = 0; t && i < t->nitems; i++) {
        nx_status st = kvs_set(k, t->items[i]->key, t->items[i], err);
        if (st)
            return st;
    }
    return NX_OK;
}

static nx_status push_node(const tc_node ***arr, size_t *n, const tc_node *x, nx_err *err)
{
    const tc_node **a = realloc((void *)*arr, (*n + 1) * sizeof *a);
    if (!a)
        return oom(err);
    a[*n] = x;
    *arr = a;
    (*n)++;
    return NX_OK;
}

reg_vfamily *reg_vfamily_find(const reg_view *v, const char *id)
{
    for (size_t i = 0; i < v->nfams; i++)
        if (strcmp(v->fams[i].id, id) == 0)
            return &v->fams[i];
    return NULL;
}

reg_vpoint *reg_vpoint_find(const reg_vfamily *f, const char *id)
{
    for (size_t i = 0; i < f->npoints; i++)
        if (strcmp(f->points[i].id, id) == 0)
            return &f->points[i];
    return NULL;
}

reg_vparam *reg_vparam_find(const reg_vfamily *f, const char *name)
{
    for (size_t i = 0; i < f->nparams; i++)
        if (strcmp(f->params[i].name, name) == 0)
            return &f->params[i];
    return NULL;
}

int reg_is_shape_dim(const reg_vfamily *f, const char *name)
{
    const tc_node *s = f->f[RV_F_SHAPE];
    for (size_t i = 0; s && i < s->nitems; i++)
        if (s->items[i]->kind == TC_STRING && strcmp(s->items[i]->str, name) == 0)
            return 1;
    return 0;
}

/* Building a view looks every family and point id up once per declaration:
 * by hash, not by a walk over the ids seen so far (which made a view of P
 * points cost P^2, and `registry list` P^3).  A family's entry has key
 * RV_MAP_FAMILY and its index as value; a point's has its family's index
 * as key and its own index in the family as value. */
#define RV_MAP_FAMILY ((size_t)-1)
typedef struct reg_vmap_entry {
    const char *id; /* NULL: empty */
    size_t key, val;
} reg_vmap_entry;
typedef struct reg_vmap {
    reg_vmap_entry *e;
    size_t cap, n; /* cap: a power of two, kept at least twice n */
} reg_vmap;

static size_t map_hash(const char *id, size_t key)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)key * 0x9e3779b97f4a7c15ull;
    for (const unsigned char *q = (const unsigned char *)id; *q; q++)
        h = (h ^ *q) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

/* The entry of (key, id), or the empty slot where it goes. */
static reg_vmap_entry *map_slot(const reg_vmap *m, const char *id, size_t key)
{
    for (size_t i = map_hash(id, key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        reg_vmap_entry *e = &m->e[i];
        if (!e->id || (e->key == key && strcmp(e->id, id) == 0))
            return e;
    }
}

static nx_status map_put(reg_vmap *m, const char *id, size_t key, size_t val, nx_err *err)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        reg_vmap_entry *e = calloc(cap, sizeof *e);
        if (!e)
            return oom(err);
        reg_vmap old = *m;
        m->e = e;
        m->cap = cap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.e[i].id)
                *map_slot(m, old.e[i].id, old.e[i].key) = old.e[i];
        free(old.e);
    }
    reg_vmap_entry *e = map_slot(m, id, key);
    if (!e->id)
        m->n++;
    *e = (reg_vmap_entry){id, key, val};
    return NX_OK;
}

static const reg_vmap_entry *map_get(const reg_vmap *m, const char *id, size_t key)
{
    if (!m->cap)
        return NULL;
    const reg_vmap_entry *e = map_slot(m, id, key);
    return e->id ? e : NULL;
}

/* Room for one more element in an array of n that grows by doubling. */
static int grow(void **arr, size_t n, size_t size)
{
    if (n & (n - 1)) /* not 0 or a power of two: there is room */
        return 1;
    size_t cap = n ? 2 * n : 1;
    void *a = realloc(*arr, cap * size);
    if (!a)
        return 0;
    *arr = a;
    return 1;
}

static nx_status apply_point(reg_vfamily *f, size_t fi, reg_vmap *m, const tc_node *pn, nx_err *err)
{
    const char *id = tc_get(pn, "id")->str;
    const reg_vmap_entry *me = map_get(m, id, fi);
    reg_vpoint *p = me ? &f->points[me->val] : NULL;
    if (!p) {
        if (!grow((void **)&f->points, f->npoints, sizeof *f->points))
            return oom(err);
        nx_status st = map_put(m, id, fi, f->npoints, err);
        if (st)
            return st;
        p = &f->points[f->npoints++];
        memset(p, 0, sizeof *p);
        p->id = id;
    }
    nx_status st = push_node(&p->decls, &p->ndecls, pn, err);
    if (st)
        return st;
    const tc_node *n;
    if ((n = tc_get(pn, "how")))
        p->how = n;
    if ((n = tc_get(pn, "reason")))
        p->reason = n;
    if ((n = tc_get(pn, "kernel")))
        p->kernel = n;
    if ((n = tc_get(pn, "description")))
        p->desc = n;
    if ((n = tc_get(pn, "tolerance")))
        p->tolerance = n;
    if ((st = kvs_merge(&p->params, tc_get(pn, "params"), err)) ||
        (st = kvs_merge(&p->numerics, tc_get(pn, "numerics"), err)) ||
        (st = kvs_merge(&p->elem, tc_get(pn, "elementwise"), err)))
        return st;
    return NX_OK;
}

static nx_status apply_family(reg_view *v, reg_vmap *m, const tc_node *fn, nx_err *err)
{
    const char *id = tc_get(fn, "id")->str;
    const reg_vmap_entry *me = map_get(m, id, RV_MAP_FAMILY);
    size_t fi = me ? me->val : v->nfams;
    reg_vfamily *f = me ? &v->fams[fi] : NULL;
    if (!f) {
        if (!grow((void **)&v->fams, v->nfams, sizeof *v->fams))
            return oom(err);
        nx_status st = map_put(m, id, RV_MAP_FAMILY, fi, err);
        if (st)
            return st;
        f = &v->fams[v->nfams++];
        memset(f, 0, sizeof *f);
        f->id = id;
    }
    nx_status st = push_node(&f->decls, &f->ndecls, fn, err);
    if (st)
        return st;
    for (int i = 0; i < RV_NFF; i++) {
        const tc_node *n = tc_get(fn, reg_vfamily_field_names[i]);
        if (n)
            f->f[i] = n;
    }
    const tc_node *ps = tc_get(fn, "param");
    for (size_t i = 0; ps && i < ps->nitems; i++) {
        const tc_node *pn = ps->items[i];
        const char *name = tc_get(pn, "name")->str;
        reg_vparam *p = reg_vparam_find(f, name);
        if (!p) {
            reg_vparam *np = realloc(f->params, (f->nparams + 1) * sizeof *np);
            if (!np)
                return oom(err);
            f->params = np;
            p = &np[f->nparams++];
            memset(p, 0, sizeof *p);
            p->name = name;
        }
        p->decl = pn;
        const tc_node *n;
        if ((n = tc_get(pn, "kind")))
            p->kind = n;
        if ((n = tc_get(pn, "default")))
            p->def = n;
        if ((n = tc_get(pn, "description")))
            p->desc = n;
    }
    const tc_node *pts = tc_get(fn, "point");
    for (size_t i = 0; pts && i < pts->nitems; i++)
        if ((st = apply_point(f, fi, m, pts->items[i], err)))
            return st;
    const tc_node *ev = tc_get(fn, "evidence");
    for (size_t i = 0; ev && i < ev->nitems; i++)
        if ((st = push_node(&f->evidence, &f->nevidence, ev->items[i], err)))
            return st;
    return NX_OK;
}

void reg_view_free(reg_view *v)
{
    for (size_t i = 0; i < v->nfams; i++) {
        reg_vfamily *f = &v->fams[i];
        for (size_t j = 0; j < f->npoints; j++) {
            reg_vpoint *p = &f->points[j];
            free((void *)p->decls);
            free(p->params.v);
            free(p->numerics.v);
            free(p->elem.v);
        }
        free(f->points);
        free(f->params);
        free((void *)f->decls);
        free((void *)f->evidence);
    }
    free(v->fams);
    free(v->chain);
    free(v->defaults.v);
    free((void *)v->atoms);
    memset(v, 0, sizeof *v);
}

nx_status reg_view_build(const reg_registry *r, size_t cls, int lenient, reg_view *v, nx_err *err)
{
    reg_vmap m = {0};
    memset(v, 0, sizeof *v);
    v->cls = cls;
    v->chain = malloc((r->ncls + 1) * sizeof *v->chain);
    /* the classes on the chain so far: a cycle is found in one step per
     * class, not by a scan of the chain (a chain of 3,000 classes was
     * cubic over a lint) */
    unsigned char *on = calloc(r->ncls + 1, 1);
    if (!v->chain || !on) {
        free(on);
        free(v->chain);
        v->chain = NULL;
        return oom(err);
    }
    size_t c = cls;
    nx_status st = NX_OK;
    for (;;) {
        v->chain[v->nchain++] = c;
        on[c] = 1;
        const reg_class *k = &r->cls[c];
        if (k->parent_node && k->parent < 0) {
            if (!lenient) {
                st = tc_errf(err, NX_EINVAL, k->parent_node, "class '%s': parent '%s' does not exist", k->name,
                             k->parent_node->str);
                goto fail;
            }
            v->broken = 1;
            break;
        }
        if (k->parent < 0)
            break;
        if (on[k->parent]) {
            if (!lenient) {
                st = tc_errf(err, NX_EINVAL, k->parent_node, "class '%s': its parent chain is a cycle", r->cls[cls].name);
                goto fail;
            }
            v->broken = 1;
            break;
        }
        c = (size_t)k->parent;
    }
    for (size_t i = v->nchain; i-- > 0;) {
        const reg_class *k = &r->cls[v->chain[i]];
        if (k->hw) {
            if ((st = kvs_merge(&v->defaults, tc_get(k->hw, "defaults"), err)))
                goto fail;
            const tc_node *a = tc_get(k->hw, "atoms");
            for (size_t j = 0; a && j < a->nitems; j++)
                if ((st = push_node(&v->atoms, &v->natoms, a->items[j], err)))
                    goto fail;
        }
        const tc_node *fams = k->kf ? tc_get(k->kf, "family") : NULL;
        for (size_t j = 0; fams && j < fams->nitems; j++)
            if ((st = apply_family(v, &m, fams->items[j], err)))
                goto fail;
    }
    free(m.e);
    free(on);
    return NX_OK;
fail:
    free(m.e);
    free(on);
    reg_view_free(v);
    return st;
}

/* ---- values and templates --------------------------------------------- */

char *reg_scalar_text(const tc_node *n)
{
    char buf[64];
    switch (n->kind) {
    case TC_STRING: return xstrdup(n->str);
    case TC_INT: snprintf(buf, sizeof buf, "%lld", n->i); return xstrdup(buf);
    case TC_BOOL: return xstrdup(n->b ? "true" : "false");
    case TC_FLOAT:
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, n->f);
            if (strtod(buf, NULL) == n->f)
                break;
        }
        return xstrdup(buf);
    default: return xstrdup(n->str ? n->str : "");
    }
}

void reg_env_free(reg_env *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].value);
        free(e->v[i].own);
    }
    free(e->v);
    memset(e, 0, sizeof *e);
}

const reg_env_val *reg_env_get(const reg_env *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].name, name) == 0)
            return &e->v[i];
    return NULL;
}

static nx_status env_set(reg_env *e, const char *name, char *value, const tc_node *origin, const char *source,
                         nx_err *err)
{
    if (!value)
        return oom(err);
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].name, name) == 0) {
            free(e->v[i].value);
            e->v[i].value = value;
            e->v[i].origin = origin;
            e->v[i].source = source;
            return NX_OK;
        }
    reg_env_val *v = realloc(e->v, (e->n + 1) * sizeof *v);
    if (!v) {
        free(value);
        return oom(err);
    }
    e->v = v;
    v[e->n].name = name;
    v[e->n].own = NULL;
    v[e->n].value = value;
    v[e->n].origin = origin;
    v[e->n].source = source;
    e->n++;
    return NX_OK;
}

nx_status reg_env_build(const reg_view *v, const reg_vfamily *f, const reg_vpoint *p, reg_env *env, nx_err *err)
{
    memset(env, 0, sizeof *env);
    nx_status st = NX_OK;
    for (size_t i = 0; !st && i < f->nparams; i++) {
        const reg_vparam *pa = &f->params[i];
        const tc_node *n;
        if ((n = reg_kvs_get(&p->params, pa->name)))
            st = env_set(env, pa->name, reg_scalar_text(n), n, "point", err);
        else if (pa->def)
            st = env_set(env, pa->name, reg_scalar_text(pa->def), pa->def, "family default", err);
        else if ((n = reg_kvs_get(&v->defaults, pa->name)))
            st = env_set(env, pa->name, reg_scalar_text(n), n, "class default", err);
    }
    for (size_t i = 0; !st && i < p->params.n; i++)
        if (!reg_vparam_find(f, p->params.v[i].key))
            st = env_set(env, p->params.v[i].key, reg_scalar_text(p->params.v[i].n), p->params.v[i].n, "point", err);
    if (st)
        reg_env_free(env);
    return st;
}

static int name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* p points at '{': returns the length of a well-formed {name} (name only)
 * and sets *end just past '}'; 0 when malformed. */
static size_t tmpl_name(const char *p, const char **end)
{
    const char *q = p + 1;
    if (!name_start(*q))
        return 0;
    while (name_char(*q))
        q++;
    if (*q != '}')
        return 0;
    *end = q + 1;
    return (size_t)(q - p - 1);
}

static nx_status tmpl_malformed(const char *s, const char *p, nx_err *err)
{
    if (*p == '}')
        return nx_err_set(err, NX_EINVAL, "'}' at offset %zu closes no template", (size_t)(p - s));
    return nx_err_set(err, NX_EINVAL, "malformed template at offset %zu: '{' must open {name}", (size_t)(p - s));
}

nx_status reg_tmpl_scan(const char *s, reg_tmpl_cb cb, void *ctx, nx_err *err)
{
    for (const char *p = s; *p;) {
        if (*p == '}')
            return tmpl_malformed(s, p, err);
        if (*p != '{') {
            p++;
            continue;
        }
        const char *end;
        size_t len = tmpl_name(p, &end);
        char name[128];
        if (!len)
            return tmpl_malformed(s, p, err);
        if (len >= sizeof name)
            return nx_err_set(err, NX_EINVAL, "template name at offset %zu is too long", (size_t)(p - s));
        memcpy(name, p + 1, len);
        name[len] = 0;
        nx_status st = cb(name, ctx, err);
        if (st)
            return st;
        p = end;
    }
    return NX_OK;
}

static void copy_free(tc_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nitems; i++)
        copy_free(n->items[i]);
    free(n->items);
    free(n->key);
    free(n->str);
    free(n);
}

/* The text s of string node at with every {name} replaced; *out malloc'd. */
static nx_status fill_text(const tc_node *at, const char *s, const reg_env *env, const char *placeholder, char **out,
                           nx_err *err)
{
    nx_sbuf b = {0};
    const char *key = at->key ? at->key : "?";
    for (const char *p = s; *p;) {
        if (*p != '{' && *p != '}') {
            nx_sbuf_put(&b, p, 1);
            p++;
            continue;
        }
        const char *end;
        size_t len = *p == '{' ? tmpl_name(p, &end) : 0;
        char name[128];
        if (!len || len >= sizeof name) {
            nx_err e;
            tmpl_malformed(s, p, &e);
            free(nx_sbuf_take(&b));
            return tc_errf(err, NX_EINVAL, at, "key '%s': %s in \"%s\"", key, e.msg, s);
        }
        memcpy(name, p + 1, len);
        name[len] = 0;
        const reg_env_val *v = reg_env_get(env, name);
        if (!v && !placeholder) {
            free(nx_sbuf_take(&b));
            return tc_errf(err, NX_EINVAL, at,
                           "key '%s': template {%s} has no value (a dimension is given with --shape %s=N; a param "
                           "in the point's params, a family default or the class defaults)",
                           key, name, name);
        }
        nx_sbuf_printf(&b, "%s", v ? v->value : placeholder);
        p = end;
    }
    if (!b.s && !b.oom)
        nx_sbuf_printf(&b, "%s", "");
    *out = nx_sbuf_take(&b);
    return *out ? NX_OK : oom(err);
}

static tc_node *copy_fill(const tc_node *n, const reg_env *env, const char *placeholder, nx_status *st, nx_err *err)
{
    tc_node *c = calloc(1, sizeof *c);
    if (!c) {
        *st = oom(err);
        return NULL;
    }
    *c = *n;
    c->items = NULL;
    c->nitems = 0;
    c->key = NULL;
    c->str = NULL;
    if ((n->key && !(c->key = xstrdup(n->key)))) {
        *st = oom(err);
        copy_free(c);
        return NULL;
    }
    if (n->kind == TC_STRING || n->kind == TC_DATETIME) {
        if (n->kind == TC_STRING && strpbrk(n->str, "{}")) {
            if ((*st = fill_text(n, n->str, env, placeholder, &c->str, err))) {
                copy_free(c);
                return NULL;
            }
        } else if (!(c->str = xstrdup(n->str))) {
            *st = oom(err);
            copy_free(c);
            return NULL;
        }
    }
    if (n->nitems) {
        c->items = calloc(n->nitems, sizeof *c->items);
        if (!c->items) {
            *st = oom(err);
            copy_free(c);
            return NULL;
        }
        for (size_t i = 0; i < n->nitems; i++) {
            c->items[i] = copy_fill(n->items[i], env, placeholder, st, err);
            if (!c->items[i]) {
                copy_free(c);
                return NULL;
            }
            c->nitems++;
        }
    }
    return c;
}

nx_status reg_point_from_table(const tc_node *table, const reg_env *env, const char *placeholder, nx_point *pt,
                              nx_err *err)
{
    nx_status st = NX_OK;
    tc_node *c = copy_fill(table, env, placeholder, &st, err);
    if (!c)
        return st;
    st = pt_from_toml(c, pt, err);
    if (!st && (pt->nclasses || pt->grid_m)) {
        /* the families' references and backends evaluate one point per
         * reduction: refused rather than silently ignored */
        st = tc_errf(err, NX_EINVAL, table,
                     "numerics '%s': row classes ('rows', 'grid') are accepted by `parity reduce` only; a family "
                     "point cannot use them yet",
                     table->key ? table->key : "?");
        nx_point_free(pt);
    }
    const tc_node *tree0 = tc_get(table, "tree"), *tree1 = tc_get(c, "tree");
    if (st && err && tree0 && tree1 && tree0->kind == TC_STRING && strcmp(tree0->str, tree1->str) != 0 &&
        strstr(err->msg, "key 'tree'")) {
        /* Columns of a tree error count in the filled text: show it. */
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (in the filled tree \"%s\")", tree1->str);
    }
    if (st && err && table->source) {
        /* pt_from_toml's cross-field messages name only the file: add the
         * table's line so every message has file:line. */
        size_t sl = strlen(table->source);
        if (strncmp(err->msg, table->source, sl) == 0 && err->msg[sl] == ':' && err->msg[sl + 1] == ' ') {
            char rest[NX_ERR_MSG_MAX];
            snprintf(rest, sizeof rest, "%s", err->msg + sl + 2);
            tc_errf(err, st, table, "numerics '%s': %s", table->key ? table->key : "?", rest);
        }
    }
    copy_free(c);
    return st;
}

/* ---- resolution ------------------------------------------------------- */

int reg_kind_hashed(const reg_vfamily *f, const char *name)
{
    const reg_vparam *p = reg_vparam_find(f, name);
    if (!p || !p->kind || p->kind->kind != TC_STRING)
        return 1;
    return strcmp(p->kind->str, "runtime") != 0 && strcmp(p->kind->str, "compile") != 0;
}

void reg_resolved_free(reg_resolved *res)
{
    fam_spec_free(&res->spec);
    reg_env_free(&res->env);
    reg_view_free(&res->view);
    free(res->canon);
    memset(res, 0, sizeof *res);
}

static void list_names(nx_sbuf *b, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nx_sbuf_printf(b, "%s%s", i ? ", " : "", names[i]);
}

static nx_status parse_shape(const reg_vfamily *f, const char *shape, reg_env *env, nx_err *err)
{
    if (!shape || !*shape)
        return NX_OK;
    char *copy = xstrdup(shape);
    if (!copy)
        return oom(err);
    nx_status st = NX_OK;
    char *save = NULL;
    char **seen = NULL;
    size_t nseen = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            st = nx_err_set(err, NX_EINVAL, "--shape: '%s' is not NAME=INTEGER", tok);
            break;
        }
        *eq = 0;
        const char *val = eq + 1;
        int ok = name_start(tok[0]);
        for (const char *q = tok; *q; q++)
            ok &= name_char(*q);
        char *end;
        errno = 0;
        long long x = strtoll(val, &end, 10);
        if (!ok || errno || end == val || *end || x < 0) {
            st = nx_err_set(err, NX_EINVAL, "--shape: '%s=%s' is not NAME=INTEGER (a non-negative integer)", tok, val);
            break;
        }
        if (f->f[RV_F_SHAPE] && !reg_is_shape_dim(f, tok)) {
            nx_sbuf b = {0};
            const tc_node *s = f->f[RV_F_SHAPE];
            for (size_t i = 0; i < s->nitems; i++)
                nx_sbuf_printf(&b, "%s%s", i ? ", " : "", s->items[i]->str);
            char *dims = nx_sbuf_take(&b);
            st = nx_err_set(err, NX_EINVAL, "--shape: family '%s' has no dimension '%s' (its shape: %s)", f->id, tok,
                            dims ? dims : "?");
            free(dims);
            break;
        }
        for (size_t i = 0; i < nseen; i++)
            if (strcmp(seen[i], tok) == 0)
                st = nx_err_set(err, NX_EINVAL, "--shape: dimension '%s' is given twice", tok);
        if (st)
            break;
        char **ns = realloc(seen, (nseen + 1) * sizeof *ns);
        if (!ns) {
            st = oom(err);
            break;
        }
        seen = ns;
        seen[nseen++] = tok;
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", x);
        /* The name must outlive the copy of the text: the family's own
         * string when the dimension is declared, else an owned copy. */
        const char *name = NULL;
        const tc_node *s = f->f[RV_F_SHAPE];
        for (size_t i = 0; s && i < s->nitems; i++)
            if (strcmp(s->items[i]->str, tok) == 0)
                name = s->items[i]->str;
        if (!name) {
            const reg_env_val *existing = reg_env_get(env, tok);
            if (existing) {
                name = existing->name;
            } else {
                if ((st = env_set(env, tok, xstrdup(buf), NULL, "shape", err)))
                    break;
                reg_env_val *last = &env->v[env->n - 1];
                if (!(last->own = xstrdup(tok))) {
                    st = oom(err);
                    break;
                }
                last->name = last->own;
                continue;
            }
        }
        st = env_set(env, name, xstrdup(buf), NULL, "shape", err);
    }
    free(seen);
    free(copy);
    return st;
}

typedef struct keyed {
    const char *key;
    const void *p;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    return strcmp(((const keyed *)a)->key, ((const keyed *)b)->key);
}

static char *hex_sha256(const char *text)
{
    nx_sha256 s;
    uint8_t d[32];
    nx_sha256_init(&s);
    nx_sha256_update(&s, text, strlen(text));
    nx_sha256_final(&s, d);
    char *h = malloc(65);
    if (!h)
        return NULL;
    for (int i = 0; i < 32; i++)
        snprintf(h + 2 * i, 3, "%02x", d[i]);
    return h;
}

/* The canonical text of the spec: the family id, reductions in name order (nx_point_print
 * after filling), then the elementwise functions that are not cr, then the
 * values of the params that can change bits (numerics, policy, undeclared).
 * cr is the default of every elementwise function, so it is left out. */
static char *canonical_text(const reg_resolved *res)
{
    const fam_spec *s = &res->spec;
    nx_sbuf b = {0};
    size_t n = s->nreds + s->nelems + res->env.n;
    keyed *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return NULL;
    /* Points of different families never have equal bits to compare. */
    nx_sbuf_printf(&b, "family %s\n", s->family);
    for (size_t i = 0; i < s->nreds; i++)
        tmp[i] = (keyed){s->reds[i].name, &s->reds[i]};
    qsort(tmp, s->nreds, sizeof *tmp, cmp_keyed);
    for (size_t i = 0; i < s->nreds; i++) {
        const fam_reduction *r = tmp[i].p;
        char *p = nx_point_print(&r->point);
        nx_sbuf_printf(&b, "reduction %s %s\n", r->name, p ? p : "?");
        if (!p)
            b.oom = 1;
        free(p);
    }
    for (size_t i = 0; i < s->nelems; i++)
        tmp[i] = (keyed){s->elems[i].name, &s->elems[i]};
    qsort(tmp, s->nelems, sizeof *tmp, cmp_keyed);
    for (size_t i = 0; i < s->nelems; i++) {
        const fam_elem *e = tmp[i].p;
        if (e->impl == FAM_ELEM_APPROX)
            nx_sbuf_printf(&b, "elementwise %s approx %s ulp %.17g\n", e->name, e->approx ? e->approx : "", e->ulp);
    }
    size_t np = 0;
    for (size_t i = 0; i < res->env.n; i++) {
        const reg_env_val *v = &res->env.v[i];
        if (strcmp(v->source, "shape") != 0 && reg_kind_hashed(res->fam, v->name))
            tmp[np++] = (keyed){v->name, v};
    }
    qsort(tmp, np, sizeof *tmp, cmp_keyed);
    for (size_t i = 0; i < np; i++) {
        const reg_env_val *v = tmp[i].p;
        nx_sbuf_printf(&b, "param %s %s\n", v->name, v->value);
    }
    free(tmp);
    if (!b.s && !b.oom)
        nx_sbuf_printf(&b, "%s", "");
    return nx_sbuf_take(&b);
}

static nx_status split_fp(const char *family_point, char **fam, const char **pt, nx_err *err)
{
    const char *dot = strchr(family_point, '.');
    if (!dot || dot == family_point || !dot[1])
        return nx_err_set(err, NX_EINVAL, "'%s' is not FAMILY.POINT", family_point);
    *fam = malloc((size_t)(dot - family_point) + 1);
    if (!*fam)
        return oom(err);
    memcpy(*fam, family_point, (size_t)(dot - family_point));
    (*fam)[dot - family_point] = 0;
    *pt = dot + 1;
    return NX_OK;
}

static nx_status unknown_class(const reg_registry *r, const char *name, nx_err *err)
{
    nx_sbuf b = {0};
    for (size_t i = 0; i < r->ncls; i++)
        nx_sbuf_printf(&b, "%s%s", i ? ", " : "", r->cls[i].name);
    char *l = nx_sbuf_take(&b);
    nx_status st = nx_err_set(err, NX_EINVAL, "%s: unknown class '%s' (classes: %s)", r->dir, name, l ? l : "?");
    free(l);
    return st;
}

/* Finds family and point in a built view, with messages that list what
 * exists. */
static nx_status find_fp(const reg_registry *r, const reg_view *v, const char *family_point, reg_vfamily **fo,
                         reg_vpoint **po, nx_err *err)
{
    char *fam;
    const char *pid = NULL;
    nx_status st = split_fp(family_point, &fam, &pid, err);
    if (st)
        return st;
    const char *cname = r->cls[v->cls].name;
    reg_vfamily *f = reg_vfamily_find(v, fam);
    if (!f) {
        const char **names = malloc((v->nfams + 1) * sizeof *names);
        nx_sbuf b = {0};
        if (names) {
            for (size_t i = 0; i < v->nfams; i++)
                names[i] = v->fams[i].id;
            list_names(&b, names, v->nfams);
        }
        free(names);
        char *l = nx_sbuf_take(&b);
        st = nx_err_set(err, NX_EINVAL, "class '%s' has no family '%s' (families: %s)", cname, fam,
                        l ? l : "none");
        free(l);
        free(fam);
        return st;
    }
    reg_vpoint *p = reg_vpoint_find(f, pid);
    if (!p) {
        nx_sbuf b = {0};
        for (size_t i = 0; i < f->npoints; i++)
            nx_sbuf_printf(&b, "%s%s", i ? ", " : "", f->points[i].id);
        char *l = nx_sbuf_take(&b);
        st = nx_err_set(err, NX_EINVAL, "family '%s' has no point '%s' at class '%s' (points: %s)", fam, pid, cname,
                        l ? l : "none");
        free(l);
        free(fam);
        return st;
    }
    free(fam);
    *fo = f;
    *po = p;
    return NX_OK;
}

static nx_status number_of(const tc_node *n, double *out)
{
    if (n->kind == TC_INT)
        *out = (double)n->i;
    else if (n->kind == TC_FLOAT)
        *out = n->f;
    else
        return NX_EINVAL;
    return NX_OK;
}

nx_status reg_resolve_spec(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                     reg_resolved *res, nx_err *err)
{
    memset(res, 0, sizeof *res);
    int c = reg_class_find(r, class_name);
    if (c < 0)
        return unknown_class(r, class_name, err);
    nx_status st = reg_view_build(r, (size_t)c, 0, &res->view, err);
    if (st)
        return st;
    reg_vfamily *f;
    reg_vpoint *p;
    if ((st = find_fp(r, &res->view, family_point, &f, &p, err)))
        goto fail;
    res->fam = f;
    res->pt = p;
    if ((st = reg_env_build(&res->view, f, p, &res->env, err)) || (st = parse_shape(f, shape, &res->env, err)))
        goto fail;
    fam_spec *s = &res->spec;
    s->family = xstrdup(f->id);
    s->point = xstrdup(p->id);
    s->class_name = xstrdup(class_name);
    if (p->kernel)
        s->kernel = xstrdup(p->kernel->str);
    if (!s->family || !s->point || !s->class_name || (p->kernel && !s->kernel)) {
        st = oom(err);
        goto fail;
    }
    for (size_t i = 0; i < res->env.n; i++)
        if ((st = fam_spec_set_param(s, res->env.v[i].name, res->env.v[i].value, err)))
            goto fail;
    if (p->numerics.n == 0 && p->elem.n == 0) {
        st = tc_errf(err, NX_EINVAL, p->decls[p->ndecls - 1], "%s.%s has no numerics (no [family.point.numerics.<reduction>])",
                     f->id, p->id);
        goto fail;
    }
    for (size_t i = 0; i < p->numerics.n; i++) {
        const tc_node *t = p->numerics.v[i].n;
        nx_point pt;
        if ((st = reg_point_from_table(t, &res->env, NULL, &pt, err))) {
            /* Say which dimension to give when a shape template is empty. */
            goto fail;
        }
        char *tree = nx_tree_print(pt.tree);
        if (!tree) {
            nx_point_free(&pt);
            st = oom(err);
            goto fail;
        }
        st = fam_spec_add_reduction(s, p->numerics.v[i].key, &pt, tree, err);
        free(tree);
        if (st)
            goto fail;
    }
    for (size_t i = 0; i < p->elem.n; i++) {
        const tc_node *e = p->elem.v[i].n;
        if (e->kind == TC_STRING) {
            if (strcmp(e->str, "cr") != 0) {
                st = tc_errf(err, NX_EINVAL, e,
                             "elementwise '%s' = \"%s\": expected \"cr\" or { approx = \"...\", ulp = N }", e->key,
                             e->str);
                goto fail;
            }
            st = fam_spec_add_elem(s, e->key, FAM_ELEM_CR, NULL, 0, err);
        } else {
            const tc_node *a = tc_get(e, "approx"), *u = tc_get(e, "ulp");
            double ulp = 0;
            if (!a || !u || number_of(u, &ulp) || !(ulp >= 0)) {
                st = tc_errf(err, NX_EINVAL, e, "elementwise '%s': an approximation needs approx = \"NAME\" and ulp >= 0",
                             e->key);
                goto fail;
            }
            st = fam_spec_add_elem(s, e->key, FAM_ELEM_APPROX, a->str, ulp, err);
        }
        if (st)
            goto fail;
    }
    if (p->tolerance) {
        const tc_node *u = tc_get(p->tolerance, "ulp"), *rt = tc_get(p->tolerance, "rtol"),
                      *at = tc_get(p->tolerance, "atol");
        if (u) {
            s->tol.has_ulp = 1;
            number_of(u, &s->tol.ulp);
        }
        if (rt || at) {
            s->tol.has_rtol = 1;
            if (rt)
                number_of(rt, &s->tol.rtol);
            if (at)
                number_of(at, &s->tol.atol);
        }
    }
    res->canon = canonical_text(res);
    if (!res->canon || !(s->hash = hex_sha256(res->canon))) {
        st = oom(err);
        goto fail;
    }
    return NX_OK;
fail:
    reg_resolved_free(res);
    return st;
}

nx_status reg_resolve(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                      fam_spec *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    reg_resolved res;
    nx_status st = reg_resolve_spec(r, class_name, family_point, shape, &res, err);
    if (st)
        return st;
    *out = res.spec;
    memset(&res.spec, 0, sizeof res.spec);
    reg_resolved_free(&res);
    return NX_OK;
}

/* ---- listing ---------------------------------------------------------- */

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static nx_status push_str(char ***v, size_t *n, char *s, nx_err *err)
{
    if (!s)
        return oom(err);
    char **a = realloc(*v, (*n + 1) * sizeof *a);
    if (!a) {
        free(s);
        return oom(err);
    }
    a[*n] = s;
    *v = a;
    (*n)++;
    return NX_OK;
}

/* The view of the registry from class_name (its chain resolved); *c is the
 * class's index.  The caller frees the view with reg_view_free. */
static nx_status class_view(const reg_registry *r, const char *class_name, int *c, reg_view *v, nx_err *err)
{
    *c = reg_class_find(r, class_name);
    if (*c < 0)
        return unknown_class(r, class_name, err);
    return reg_view_build(r, (size_t)*c, 0, v, err);
}

nx_status reg_list_points(const reg_registry *r, const char *class_name, char ***ids, size_t *count, nx_err *err)
{
    *ids = NULL;
    *count = 0;
    int c;
    reg_view v;
    nx_status st = class_view(r, class_name, &c, &v, err);
    if (st)
        return st;
    char **out = NULL;
    size_t n = 0;
    for (size_t i = 0; !st && i < v.nfams; i++)
        for (size_t j = 0; !st && j < v.fams[i].npoints; j++) {
            nx_sbuf b = {0};
            nx_sbuf_printf(&b, "%s.%s", v.fams[i].id, v.fams[i].points[j].id);
            st = push_str(&out, &n, nx_sbuf_take(&b), err);
        }
    reg_view_free(&v);
    if (st) {
        free_strs(out, n);
        return st;
    }
    *ids = out;
    *count = n;
    return NX_OK;
}

nx_status reg_list_sources(const reg_registry *r, const char *class_name, char ***ids, char ***srcs, size_t *count,
                           nx_err *err)
{
    *ids = NULL;
    *srcs = NULL;
    *count = 0;
    int c;
    reg_view v;
    nx_status st = class_view(r, class_name, &c, &v, err);
    if (st)
        return st;
    size_t total = 0;
    for (size_t i = 0; i < v.nfams; i++)
        total += v.fams[i].npoints;
    char **oi = calloc(total ? total : 1, sizeof *oi), **os = calloc(total ? total : 1, sizeof *os);
    size_t n = 0;
    if (!oi || !os)
        st = oom(err);
    for (size_t i = 0; !st && i < v.nfams; i++)
        for (size_t j = 0; !st && j < v.fams[i].npoints; j++) {
            const reg_vpoint *p = &v.fams[i].points[j];
            nx_sbuf a = {0}, b = {0};
            nx_sbuf_printf(&a, "%s.%s", v.fams[i].id, p->id);
            for (size_t k = 0; k < p->ndecls; k++) {
                if (k)
                    nx_sbuf_printf(&b, ", overridden ");
                reg_put_loc(&b, p->decls[k]);
            }
            if (!p->ndecls)
                nx_sbuf_put(&b, "", 0);
            oi[n] = nx_sbuf_take(&a);
            os[n] = nx_sbuf_take(&b);
            n++;
            if (!oi[n - 1] || !os[n - 1])
                st = oom(err);
        }
    reg_view_free(&v);
    if (st) {
        for (size_t i = 0; oi && os && i < n; i++) {
            free(oi[i]);
            free(os[i]);
        }
        free(oi);
        free(os);
        return st;
    }
    *ids = oi;
    *srcs = os;
    *count = n;
    return NX_OK;
}

nx_status reg_point_sources(const reg_registry *r, const char *class_name, const char *family_point, char ***srcs,
                            size_t *count, nx_err *err)
{
    *srcs = NULL;
    *count = 0;
    int c;
    reg_view v;
    nx_status st = class_view(r, class_name, &c, &v, err);
    if (st)
        return st;
    reg_vfamily *f;
    reg_vpoint *p;
    char **out = NULL;
    size_t n = 0;
    if (!(st = find_fp(r, &v, family_point, &f, &p, err)))
        for (size_t i = 0; !st && i < p->ndecls; i++) {
            nx_sbuf b = {0};
            reg_put_loc(&b, p->decls[i]);
            st = push_str(&out, &n, nx_sbuf_take(&b), err);
        }
    reg_view_free(&v);
    if (st) {
        free_strs(out, n);
        return st;
    }
    *srcs = out;
    *count = n;
    return NX_OK;
}

static void put_int_array(nx_sbuf *b, const tc_node *a)
{
    nx_sbuf_printf(b, "[");
    for (size_t i = 0; a && i < a->nitems; i++)
        nx_sbuf_printf(b, "%s%lld", i ? ", " : "", a->items[i]->i);
    nx_sbuf_printf(b, "]");
}

/* The evidence entries of a point that count at class c (their class is c). */
static nx_status evidence_lines(const reg_registry *r, const reg_vfamily *f, const reg_vpoint *p, size_t c, char ***items,
                                size_t *count, nx_err *err)
{
    nx_status st = NX_OK;
    for (size_t i = 0; !st && i < f->nevidence; i++) {
        const tc_node *e = f->evidence[i];
        const tc_node *ec = tc_get(e, "class"), *ep = tc_get(e, "point"), *rows = tc_get(e, "rows"),
                      *m = tc_get(e, "measurement");
        if (!ec || !ep || strcmp(ec->str, r->cls[c].name) != 0 || strcmp(ep->str, p->id) != 0)
            continue;
        nx_sbuf b = {0};
        nx_sbuf_printf(&b, "rows ");
        put_int_array(&b, rows);
        nx_sbuf_printf(&b, ", measurement %s (", m ? m->str : "-");
        reg_put_loc(&b, e);
        nx_sbuf_printf(&b, ")");
        st = push_str(items, count, nx_sbuf_take(&b), err);
    }
    return st;
}

nx_status reg_evidence(const reg_registry *r, const char *class_name, const char *family_point, char ***items,
                       size_t *count, nx_err *err)
{
    *items = NULL;
    *count = 0;
    int c;
    reg_view v;
    nx_status st = class_view(r, class_name, &c, &v, err);
    if (st)
        return st;
    reg_vfamily *f;
    reg_vpoint *p;
    if (!(st = find_fp(r, &v, family_point, &f, &p, err)))
        st = evidence_lines(r, f, p, (size_t)c, items, count, err);
    reg_view_free(&v);
    if (st) {
        free_strs(*items, *count);
        *items = NULL;
        *count = 0;
    }
    return st;
}

void reg_counts(const reg_registry *r, size_t *classes, size_t *families, size_t *points)
{
    /* Families: distinct ids over every class's view.  Points: distinct
     * base declarations (a point overridden down a chain is one point; two
     * chains declaring the same id are two). */
    char **fams = NULL;
    const tc_node **pts = NULL;
    size_t nf = 0, np = 0;
    nx_err e;
    for (size_t c = 0; c < r->ncls; c++) {
        reg_view v;
        if (reg_view_build(r, c, 1, &v, &e))
            continue;
        for (size_t i = 0; i < v.nfams; i++) {
            int seen = 0;
            for (size_t k = 0; k < nf; k++)
                seen |= strcmp(fams[k], v.fams[i].id) == 0;
            if (!seen)
                push_str(&fams, &nf, xstrdup(v.fams[i].id), &e);
            for (size_t j = 0; j < v.fams[i].npoints; j++) {
                const tc_node *d = v.fams[i].points[j].decls[0];
                seen = 0;
                for (size_t k = 0; k < np; k++)
                    seen |= pts[k] == d;
                if (!seen)
                    push_node(&pts, &np, d, &e);
            }
        }
        reg_view_free(&v);
    }
    *classes = r->ncls;
    *families = nf;
    *points = np;
    free_strs(fams, nf);
    free((void *)pts);
}

/* ---- show ------------------------------------------------------------- */

static void put_chain(nx_sbuf *b, const reg_registry *r, const reg_view *v)
{
    for (size_t i = 0; i < v->nchain; i++)
        nx_sbuf_printf(b, "%s%s", i ? " <- " : "", r->cls[v->chain[i]].name);
}

static void put_value(nx_sbuf *b, const tc_node *n)
{
    if (!n) {
        nx_sbuf_printf(b, "-");
        return;
    }
    switch (n->kind) {
    case TC_STRING: nx_sbuf_printf(b, "\"%s\"", n->str); break;
    case TC_ARRAY:
        nx_sbuf_printf(b, "[");
        for (size_t i = 0; i < n->nitems; i++) {
            nx_sbuf_printf(b, "%s", i ? ", " : "");
            put_value(b, n->items[i]);
        }
        nx_sbuf_printf(b, "]");
        break;
    case TC_TABLE:
        nx_sbuf_printf(b, "{ ");
        for (size_t i = 0; i < n->nitems; i++) {
            nx_sbuf_printf(b, "%s%s = ", i ? ", " : "", n->items[i]->key);
            put_value(b, n->items[i]);
        }
        nx_sbuf_printf(b, " }");
        break;
    default: {
        char *t = reg_scalar_text(n);
        nx_sbuf_printf(b, "%s", t ? t : "?");
        free(t);
    }
    }
}

static void put_field(nx_sbuf *b, const char *name, const tc_node *n)
{
    nx_sbuf_printf(b, "  %-12s ", name);
    put_value(b, n);
    nx_sbuf_printf(b, "   ");
    reg_put_loc(b, n);
    nx_sbuf_printf(b, "\n");
}

static void put_tolerance(nx_sbuf *b, const fam_tolerance *t)
{
    int any = 0;
    if (t->has_ulp) {
        nx_sbuf_printf(b, "ulp = %g", t->ulp);
        any = 1;
    }
    if (t->has_rtol) {
        nx_sbuf_printf(b, "%srtol = %g, atol = %g", any ? ", " : "", t->rtol, t->atol);
        any = 1;
    }
    if (!any)
        nx_sbuf_printf(b, "none");
}

nx_status reg_show(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                   char **text, nx_err *err)
{
    *text = NULL;
    reg_resolved res;
    nx_status st = reg_resolve_spec(r, class_name, family_point, shape, &res, err);
    if (st)
        return st;
    const reg_vfamily *f = res.fam;
    const reg_vpoint *p = res.pt;
    const fam_spec *s = &res.spec;
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s.%s at class %s (chain: ", f->id, p->id, class_name);
    put_chain(&b, r, &res.view);
    nx_sbuf_printf(&b, ")\n");

    nx_sbuf_printf(&b, "family %s   declared", f->id);
    for (size_t i = 0; i < f->ndecls; i++) {
        nx_sbuf_printf(&b, "%s", i ? ", overridden " : " ");
        reg_put_loc(&b, f->decls[i]);
    }
    nx_sbuf_printf(&b, "\n");
    for (int i = 0; i < RV_NFF; i++)
        if (f->f[i])
            put_field(&b, reg_vfamily_field_names[i], f->f[i]);

    nx_sbuf_printf(&b, "point %s   declared", p->id);
    for (size_t i = 0; i < p->ndecls; i++) {
        nx_sbuf_printf(&b, "%s", i ? ", overridden " : " ");
        reg_put_loc(&b, p->decls[i]);
    }
    nx_sbuf_printf(&b, "\n");
    if (p->desc)
        put_field(&b, "description", p->desc);
    if (p->how)
        put_field(&b, "how", p->how);
    else
        nx_sbuf_printf(&b, "  %-12s \"instantiation\"   (default)\n", "how");
    if (p->reason)
        put_field(&b, "reason", p->reason);
    if (p->kernel)
        put_field(&b, "kernel", p->kernel);

    nx_sbuf_printf(&b, "params:\n");
    if (res.env.n == 0)
        nx_sbuf_printf(&b, "  (none)\n");
    for (size_t i = 0; i < res.env.n; i++) {
        const reg_env_val *v = &res.env.v[i];
        const reg_vparam *pa = reg_vparam_find(f, v->name);
        const char *kind = pa && pa->kind ? pa->kind->str : strcmp(v->source, "shape") == 0 ? "dim" : "undeclared";
        nx_sbuf_printf(&b, "  %-12s = %-14s %-9s %-15s ", v->name, v->value, kind, v->source);
        if (v->origin)
            reg_put_loc(&b, v->origin);
        else
            nx_sbuf_printf(&b, "--shape");
        nx_sbuf_printf(&b, "\n");
    }

    for (size_t i = 0; i < s->nreds; i++) {
        const fam_reduction *red = &s->reds[i];
        const tc_node *t = reg_kvs_get(&p->numerics, red->name);
        nx_sbuf_printf(&b, "numerics.%s   ", red->name);
        reg_put_loc(&b, t);
        nx_sbuf_printf(&b, "\n");
        const tc_node *tr = t ? tc_get(t, "tree") : NULL;
        if (tr && tr->kind == TC_STRING)
            nx_sbuf_printf(&b, "  template     %s\n", tr->str);
        nx_sbuf_printf(&b, "  tree         %s\n", red->tree_text);
        char *pp = nx_point_print(&red->point);
        nx_sbuf_printf(&b, "  point        %s\n", pp ? pp : "?");
        free(pp);
        const nx_atom *a = &red->point.atom;
        if (a->present) {
            nx_sbuf_printf(&b, "  atom         %s%sfrac_bits %d, term_round %s, round %s, acc %s", a->preset,
                           a->preset[0] ? ": " : "", a->frac_bits, nx_mode_name(a->term_round),
                           a->round >= 0 ? nx_mode_name((nx_mode)a->round) : "(point's rounding)",
                           a->acc >= 0 ? nx_format((nx_fmt)a->acc)->name : "(current format)");
            if (a->group)
                nx_sbuf_printf(&b, ", group %d", a->group);
            nx_sbuf_printf(&b, "\n");
        }
        if (nx_tree_uses(red->point.tree, NX_T_ATOMIC))
            nx_sbuf_printf(&b, "  note         the tree uses 'atomic': its order is undefined, no bit parity\n");
    }

    nx_sbuf_printf(&b, "elementwise:");
    if (s->nelems == 0)
        nx_sbuf_printf(&b, " none declared (every function is cr)\n");
    else
        nx_sbuf_printf(&b, "\n");
    for (size_t i = 0; i < s->nelems; i++) {
        const fam_elem *e = &s->elems[i];
        if (e->impl == FAM_ELEM_CR)
            nx_sbuf_printf(&b, "  %-12s cr   ", e->name);
        else
            nx_sbuf_printf(&b, "  %-12s approx %s, %g ulp   ", e->name, e->approx, e->ulp);
        reg_put_loc(&b, reg_kvs_get(&p->elem, e->name));
        nx_sbuf_printf(&b, "\n");
    }

    nx_sbuf_printf(&b, "tolerance:   ");
    put_tolerance(&b, &s->tol);
    if (p->tolerance) {
        nx_sbuf_printf(&b, "   ");
        reg_put_loc(&b, p->tolerance);
    } else {
        nx_sbuf_printf(&b, " declared (the bound derived from the tree applies)");
    }
    nx_sbuf_printf(&b, "\n");

    char **ev = NULL;
    size_t nev = 0;
    if ((st = evidence_lines(r, f, p, res.view.cls, &ev, &nev, err))) {
        free(nx_sbuf_take(&b));
        reg_resolved_free(&res);
        return st;
    }
    nx_sbuf_printf(&b, "evidence at %s: %zu\n", class_name, nev);
    for (size_t i = 0; i < nev; i++)
        nx_sbuf_printf(&b, "  %s\n", ev[i]);
    free_strs(ev, nev);
    nx_sbuf_printf(&b, "kernel:      %s\n", s->kernel ? s->kernel : "(none named)");
    nx_sbuf_printf(&b, "hash:        %s\n", s->hash);
    reg_resolved_free(&res);
    *text = nx_sbuf_take(&b);
    return *text ? NX_OK : oom(err);
}
