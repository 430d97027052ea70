/* lkb_data.c: the files the LKB report reads (docs/lkb.md): integer
 * expressions, the step manifest STEP.toml, the microbenchmark records
 * MEASUREMENTS.toml. */
#include "lkb.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nx_sbuf.h"
#include "tomlc.h"

char *lkb_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- expressions ------------------------------------------------------- */

typedef struct ev {
    const char *s, *p, *expr;
    const char *const *names;
    const long long *values;
    size_t n;
    nx_err *err;
    nx_status st;
} ev;

static long long ev_fail(ev *e, const char *what)
{
    if (!e->st)
        e->st = nx_err_set(e->err, NX_EINVAL, "expression '%s': %s at character %zu", e->expr, what,
                           (size_t)(e->p - e->s) + 1);
    return 0;
}

static void ev_ws(ev *e)
{
    while (*e->p == ' ' || *e->p == '\t')
        e->p++;
}

static long long ev_sum(ev *e, int depth);

static long long ev_atom(ev *e, int depth)
{
    ev_ws(e);
    if (depth > 32)
        return ev_fail(e, "nested too deeply");
    if (*e->p == '(') {
        e->p++;
        long long v = ev_sum(e, depth + 1);
        ev_ws(e);
        if (*e->p != ')')
            return ev_fail(e, "')' expected");
        e->p++;
        return v;
    }
    if (*e->p == '-') {
        e->p++;
        return -ev_atom(e, depth + 1);
    }
    if (*e->p >= '0' && *e->p <= '9') {
        errno = 0;
        char *end;
        long long v = strtoll(e->p, &end, 10);
        if (errno || v > (1LL << 62))
            return ev_fail(e, "integer too large");
        e->p = end;
        return v;
    }
    const char *q = e->p;
    while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' || (q > e->p && *q >= '0' && *q <= '9'))
        q++;
    if (q == e->p)
        return ev_fail(e, *e->p ? "a number, a name or '(' expected" : "unexpected end");
    /* min(a, b) and max(a, b): the experts a batch touches, min(E, topk*T) */
    if (q - e->p == 3 && (!strncmp(e->p, "min", 3) || !strncmp(e->p, "max", 3)) && *q == '(') {
        int is_min = e->p[1] == 'i';
        e->p = q + 1;
        long long a = ev_sum(e, depth + 1);
        ev_ws(e);
        if (*e->p != ',')
            return ev_fail(e, "',' expected");
        e->p++;
        long long b = ev_sum(e, depth + 1);
        ev_ws(e);
        if (*e->p != ')')
            return ev_fail(e, "')' expected");
        e->p++;
        return is_min ? (a < b ? a : b) : (a > b ? a : b);
    }
    for (size_t i = 0; i < e->n; i++)
        if (strlen(e->names[i]) == (size_t)(q - e->p) && strncmp(e->names[i], e->p, (size_t)(q - e->p)) == 0) {
            e->p = q;
            return e->values[i];
        }
    char msg[128];
    snprintf(msg, sizeof msg, "unknown name '%.*s'", (int)(q - e->p > 40 ? 40 : q - e->p), e->p);
    return ev_fail(e, msg);
}

static long long ev_prod(ev *e, int depth)
{
    long long v = ev_atom(e, depth);
    for (;;) {
        ev_ws(e);
        char op = *e->p;
        if (op != '*' && op != '/')
            return v;
        e->p++;
        long long w = ev_atom(e, depth);
        if (e->st)
            return 0;
        if (op == '*') {
            if (w && (v > (1LL << 62) / (w < 0 ? -w : w) || v < -(1LL << 62) / (w < 0 ? -w : w)))
                return ev_fail(e, "product too large");
            v *= w;
        } else {
            if (w == 0 || v % w)
                return ev_fail(e, w ? "inexact division" : "division by zero");
            v /= w;
        }
    }
}

static long long ev_sum(ev *e, int depth)
{
    long long v = ev_prod(e, depth);
    for (;;) {
        ev_ws(e);
        char op = *e->p;
        if (op != '+' && op != '-')
            return v;
        e->p++;
        long long w = ev_prod(e, depth);
        v = op == '+' ? v + w : v - w;
    }
}

nx_status lkb_eval(const char *expr, const char *const *names, const long long *values, size_t n, long long *out,
                   nx_err *err)
{
    ev e = {expr, expr, expr, names, values, n, err, NX_OK};
    long long v = ev_sum(&e, 0);
    ev_ws(&e);
    if (!e.st && *e.p)
        ev_fail(&e, "unexpected character");
    if (!e.st)
        *out = v;
    return e.st;
}

/* ---- the step manifest ------------------------------------------------- */

static char *loc(const tc_node *n)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s:%d", n && n->source ? n->source : "?", n ? (n->key_line > 0 ? n->key_line : n->line) : 0);
    return nx_sbuf_take(&b);
}

void lkb_step_free(lkb_step *s)
{
    for (size_t i = 0; i < s->nops; i++) {
        lkb_op *o = &s->ops[i];
        free(o->id), free(o->family), free(o->shape), free(o->flops), free(o->bytes), free(o->where);
    }
    free(s->ops), free(s->model), free(s->path), free(s->description);
    memset(s, 0, sizeof *s);
}

static nx_status want_str(const tc_node *t, const char *key, int required, char **out, nx_err *err)
{
    const tc_node *v = tc_get(t, key);
    *out = NULL;
    if (!v)
        return required ? tc_errf(err, NX_EINVAL, t, "missing key '%s'", key) : NX_OK;
    if (v->kind != TC_STRING)
        return tc_errf(err, NX_EINVAL, v, "key '%s' must be a string, found %s", key, tc_kind_name(v->kind));
    return (*out = strdup(v->str)) ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
}

static nx_status keys_ok(const tc_node *t, const char *const *allowed, const char *what, nx_err *err)
{
    for (size_t i = 0; i < t->nitems; i++) {
        int ok = 0;
        for (const char *const *k = allowed; *k && !ok; k++)
            ok = strcmp(*k, t->items[i]->key) == 0;
        if (!ok)
            return tc_errf(err, NX_EINVAL, t->items[i], "unknown key '%s' in %s", t->items[i]->key, what);
    }
    return NX_OK;
}

nx_status lkb_op_eval(const lkb_op *op, long long c, char *shape, size_t len, long long *flops, long long *bytes,
                      nx_err *err)
{
    const char *names[17] = {"C"};
    long long vals[17] = {c};
    char *own[16] = {0};
    size_t n = 1;
    nx_sbuf b = {0};
    nx_status st = NX_OK;
    const char *p = op->shape;
    while (*p && !st) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        if (!eq || (comma && comma < eq) || n == 17) {
            st = nx_err_set(err, NX_EINVAL, "%s: op '%s': shape '%s' is not NAME=EXPR,... (at most 16 dimensions)",
                            op->where, op->id, op->shape);
            break;
        }
        own[n - 1] = strndup(p, (size_t)(eq - p));
        char *expr = comma ? strndup(eq + 1, (size_t)(comma - eq - 1)) : strdup(eq + 1);
        if (!own[n - 1] || !expr) {
            free(expr);
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        long long v;
        if ((st = lkb_eval(expr, names, vals, n, &v, err)))
            nx_err_prefix(err, "%s: op '%s': shape", op->where, op->id);
        else if (v < 1)
            st = nx_err_set(err, NX_EINVAL, "%s: op '%s': shape dimension %s = %lld at C = %lld (must be >= 1)",
                            op->where, op->id, own[n - 1], v, c);
        free(expr);
        if (st)
            break;
        names[n] = own[n - 1];
        vals[n++] = v;
        nx_sbuf_printf(&b, "%s%s=%lld", n > 2 ? "," : "", own[n - 2], v);
        p = comma ? comma + 1 : p + strlen(p);
    }
    if (!st && (st = lkb_eval(op->flops, names, vals, n, flops, err)))
        nx_err_prefix(err, "%s: op '%s': flops", op->where, op->id);
    if (!st && (st = lkb_eval(op->bytes, names, vals, n, bytes, err)))
        nx_err_prefix(err, "%s: op '%s': bytes", op->where, op->id);
    /* counts of work and traffic: never negative, and at most 2^62 so that
     * sums over a step's ops stay in 64 bits */
    const long long lim = 1LL << 62;
    if (!st && (*flops < 0 || *flops > lim))
        st = nx_err_set(err, NX_EINVAL, "%s: op '%s': flops = %lld at C = %lld (must be 0 ... 2^62)", op->where,
                        op->id, *flops, c);
    if (!st && (*bytes < 0 || *bytes > lim))
        st = nx_err_set(err, NX_EINVAL, "%s: op '%s': bytes = %lld at C = %lld (must be 0 ... 2^62)", op->where,
                        op->id, *bytes, c);
    char *text = nx_sbuf_take(&b);
    if (!st)
        snprintf(shape, len, "%s", text ? text : "");
    free(text);
    for (size_t i = 0; i < 16; i++)
        free(own[i]);
    return st;
}

nx_status lkb_step_load(const char *kernels_dir, const char *model, lkb_step *s, nx_err *err)
{
    memset(s, 0, sizeof *s);
    for (const char *q = model; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_' ||
              *q == '-' || (*q == '.' && q > model)))
            return nx_err_set(err, NX_EINVAL, "--model '%s': a model name is letters, digits, '_', '-', '.'", model);
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s/models/%s/STEP.toml", kernels_dir, model);
    s->path = nx_sbuf_take(&b);
    s->model = strdup(model);
    tc_node *root = NULL;
    nx_status st;
    if (!s->path || !s->model)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    else
        st = tc_parse_file(s->path, &root, err);
    if (st) { /* a file that does not parse: path and model were leaked here */
        lkb_step_free(s);
        return st;
    }
    static const char *const top[] = {"model", "description", "layers", "op", NULL};
    static const char *const opk[] = {"id", "family", "per", "count", "shape", "flops", "bytes", NULL};
    const tc_node *layers = tc_get(root, "layers"), *ops = tc_get(root, "op"), *m = tc_get(root, "model");
    char *desc = NULL;
    if ((st = keys_ok(root, top, "STEP.toml", err)) || (st = want_str(root, "description", 0, &desc, err)))
        goto out;
    s->description = desc;
    if (m && (m->kind != TC_STRING || strcmp(m->str, model) != 0)) {
        st = tc_errf(err, NX_EINVAL, m, "model must be \"%s\" (the directory's name)", model);
        goto out;
    }
    if (!layers || layers->kind != TC_INT || layers->i < 1) {
        st = tc_errf(err, NX_EINVAL, layers ? layers : root, "'layers' must be an integer >= 1");
        goto out;
    }
    s->layers = layers->i;
    if (!ops || ops->kind != TC_ARRAY || !ops->nitems) {
        st = tc_errf(err, NX_EINVAL, ops ? ops : root, "a step needs [[op]] tables");
        goto out;
    }
    if (!(s->ops = calloc(ops->nitems, sizeof *s->ops))) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ops->nitems && !st; i++) {
        const tc_node *t = ops->items[i];
        lkb_op *o = &s->ops[s->nops++];
        o->count = 1;
        o->per_layer = 1;
        char *per = NULL;
        if ((st = keys_ok(t, opk, "[[op]]", err)) || (st = want_str(t, "id", 1, &o->id, err)) ||
            (st = want_str(t, "family", 0, &o->family, err)) || (st = want_str(t, "shape", 1, &o->shape, err)) ||
            (st = want_str(t, "flops", 1, &o->flops, err)) || (st = want_str(t, "bytes", 1, &o->bytes, err)) ||
            (st = want_str(t, "per", 0, &per, err)))
            break;
        o->where = loc(t);
        if (!*o->id)
            st = tc_errf(err, NX_EINVAL, tc_get(t, "id"), "an op's 'id' must not be empty");
        if (!st && per && strcmp(per, "layer") && strcmp(per, "step"))
            st = tc_errf(err, NX_EINVAL, tc_get(t, "per"), "'per' must be \"layer\" or \"step\"");
        o->per_layer = !per || strcmp(per, "layer") == 0;
        free(per);
        const tc_node *cn = tc_get(t, "count");
        if (!st && cn && (cn->kind != TC_INT || cn->i < 1))
            st = tc_errf(err, NX_EINVAL, cn, "'count' must be an integer >= 1");
        if (cn && !st)
            o->count = cn->i;
        for (size_t j = 0; j + 1 < s->nops && !st; j++)
            if (strcmp(s->ops[j].id, o->id) == 0)
                st = tc_errf(err, NX_EINVAL, tc_get(t, "id"), "op '%s' declared twice (first at %s)", o->id,
                             s->ops[j].where);
        /* every expression must evaluate at the three batch sizes */
        char shp[256];
        long long f, by;
        for (long long c = 1; c <= 128 && !st; c *= 2)
            st = lkb_op_eval(o, c, shp, sizeof shp, &f, &by, err);
    }
out:
    tc_free(root);
    if (st)
        lkb_step_free(s);
    return st;
}

/* ---- microbenchmark records -------------------------------------------- */

static void record_free(lkb_record *r)
{
    free(r->id), free(r->class_name), free(r->point), free(r->shape), free(r->backend), free(r->kernel);
    free(r->utc), free(r->host), free(r->where), free(r->baseline), free(r->energy_source);
}

void lkb_records_free(lkb_records *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        record_free(&rs->r[i]);
    free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}

static int get_num(const tc_node *t, const char *key, double *v)
{
    const tc_node *n = tc_get(t, key);
    if (!n)
        return 0;
    if (n->kind == TC_INT)
        *v = (double)n->i;
    else if (n->kind == TC_FLOAT)
        *v = n->f;
    else
        return -1;
    return 1;
}

static int ledger_utc(const char *s, int64_t *secs);

nx_status lkb_records_load(const char *kernels_dir, const char *class_name, lkb_records *out, nx_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/MEASUREMENTS.toml", kernels_dir, class_name);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return NX_OK;
    tc_node *root = NULL;
    nx_status st = tc_parse_file(path, &root, err);
    if (st)
        return st;
    static const char *const top[] = {"measurement", NULL};
    static const char *const strs[] = {"id", "point", "shape", "backend", "kernel", "utc", "host", "baseline",
                                       "energy", NULL};
    static const char *const nums[] = {"rows", "warmup", "repeats", "median_s", "min_s", "max_s", "noise_band_s",
                                       "baseline_median_s", "baseline_min_s", "baseline_max_s", "energy_j",
                                       "energy_min_j", "energy_max_j", "baseline_energy_j", "baseline_energy_min_j",
                                       "baseline_energy_max_j", NULL};
    const char *all[64];
    size_t na = 0;
    for (const char *const *k = strs; *k; k++)
        all[na++] = *k;
    for (const char *const *k = nums; *k; k++)
        all[na++] = *k;
    all[na] = NULL;
    const tc_node *ms = tc_get(root, "measurement");
    lkb_record *partial = NULL;
    if ((st = keys_ok(root, top, "MEASUREMENTS.toml", err)))
        goto out;
    if (ms && ms->kind != TC_ARRAY) {
        st = tc_errf(err, NX_EINVAL, ms, "'measurement' must be an array of tables ([[measurement]])");
        goto out;
    }
    for (size_t i = 0; ms && i < ms->nitems && !st; i++) {
        const tc_node *t = ms->items[i];
        if (t->kind != TC_TABLE) {
            st = tc_errf(err, NX_EINVAL, t, "[[measurement]] must be a table");
            break;
        }
        lkb_record *g = realloc(out->r, (out->n + 1) * sizeof *g);
        if (!g) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        out->r = g;
        lkb_record *r = &out->r[out->n++];
        memset(r, 0, sizeof *r);
        partial = r;
        r->where = loc(t);
        r->class_name = strdup(class_name);
        if ((st = keys_ok(t, all, "[[measurement]]", err)) || (st = want_str(t, "id", 1, &r->id, err)) ||
            (st = want_str(t, "point", 1, &r->point, err)) || (st = want_str(t, "shape", 0, &r->shape, err)) ||
            (st = want_str(t, "backend", 0, &r->backend, err)) || (st = want_str(t, "kernel", 0, &r->kernel, err)) ||
            (st = want_str(t, "utc", 1, &r->utc, err)) || (st = want_str(t, "host", 0, &r->host, err)) ||
            (st = want_str(t, "baseline", 0, &r->baseline, err)) ||
            (st = want_str(t, "energy", 0, &r->energy_source, err)))
            break;
        if (ledger_utc(r->utc, &r->utc_s) != 0) {
            st = tc_errf(err, NX_EINVAL, tc_get(t, "utc"), "'utc' must be YYYY-MM-DDTHH:MM:SSZ");
            break;
        }
        double v[16] = {0};
        int have[16] = {0};
        for (size_t k = 0; nums[k] && !st; k++) {
            /* bounded, so that sums and rates over records stay finite: a
             * time at most 10^6 s (11.6 days), an energy at most 10^12 J */
            size_t kl = strlen(nums[k]);
            double hi = kl > 2 && !strcmp(nums[k] + kl - 2, "_s") ? 1e6 : strstr(nums[k], "energy") ? 1e12 : HUGE_VAL;
            if ((have[k] = get_num(t, nums[k], &v[k])) < 0 || (have[k] && !(v[k] >= 0 && v[k] < HUGE_VAL)))
                st = tc_errf(err, NX_EINVAL, tc_get(t, nums[k]), "'%s' must be a finite number >= 0", nums[k]);
            else if (have[k] && v[k] > hi)
                st = tc_errf(err, NX_EINVAL, tc_get(t, nums[k]), "'%s' must be at most %g (%s)", nums[k], hi,
                             hi == 1e6 ? "seconds: 11.6 days" : "joules");
        }
        for (size_t k = 0; k < 3 && !st; k++) /* rows, warmup, repeats: counts, cast to integers */
            if (have[k] && v[k] > 2147483647.0)
                st = tc_errf(err, NX_EINVAL, tc_get(t, nums[k]), "'%s' must be at most 2147483647", nums[k]);
            else if (have[k] && v[k] != floor(v[k]))
                st = tc_errf(err, NX_EINVAL, tc_get(t, nums[k]), "'%s' must be a whole number, not %g", nums[k], v[k]);
        if (!st && have[2] && v[2] < 1)
            st = tc_errf(err, NX_EINVAL, tc_get(t, "repeats"), "'repeats' must be at least 1 (the timed runs)");
        if (!st && !*r->id)
            st = tc_errf(err, NX_EINVAL, tc_get(t, "id"), "'id' must not be empty");
        if (!st && !*r->point)
            st = tc_errf(err, NX_EINVAL, tc_get(t, "point"), "'point' must not be empty");
        if (!st && have[3] && have[4] && have[5] && !(v[4] <= v[3] && v[3] <= v[5]))
            st = tc_errf(err, NX_EINVAL, tc_get(t, "median_s"), "[[measurement]] '%s': min_s <= median_s <= max_s "
                         "must hold (%g, %g, %g)", r->id, v[4], v[3], v[5]);
        if (st)
            break;
        if (!have[0] || v[0] < 1 || !have[3] || !have[4] || !have[5]) {
            st = tc_errf(err, NX_EINVAL, t, "[[measurement]] '%s' needs rows (>= 1), median_s, min_s and max_s",
                         r->id);
            break;
        }
        r->rows = (long long)v[0];
        r->warmup = (int)v[1], r->repeats = (int)v[2];
        r->median_s = v[3], r->min_s = v[4], r->max_s = v[5];
        r->band_s = have[6] ? v[6] : r->max_s - r->min_s;
        if ((r->has_baseline = have[7] && have[8] && have[9]))
            r->b_median_s = v[7], r->b_min_s = v[8], r->b_max_s = v[9];
        if ((r->has_energy = have[10] && have[11] && have[12]))
            r->e_j = v[10], r->e_min_j = v[11], r->e_max_j = v[12];
        if ((r->has_b_energy = have[13] && have[14] && have[15]))
            r->be_j = v[13], r->be_min_j = v[14], r->be_max_j = v[15];
        for (size_t j = 0; j + 1 < out->n; j++)
            if (strcmp(out->r[j].id, r->id) == 0) {
                st = tc_errf(err, NX_EINVAL, tc_get(t, "id"), "measurement id '%s' recorded twice (first at %s)",
                             r->id, out->r[j].where);
                break;
            }
        if (!st)
            partial = NULL;
    }
    if (partial) { /* a record left half read (no id, a key of the wrong type): callers see whole ones only */
        record_free(partial);
        out->n--;
    }
out:
    tc_free(root);
    return st;
}

/* "YYYY-MM-DDTHH:MM:SSZ" -> seconds since the epoch (the ledger's form). */
static int ledger_utc(const char *s, int64_t *secs)
{
    int y, mo, d, h, mi, se, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || s[n] || mo < 1 || mo > 12 ||
        d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
        return -1;
    long long yy = y - (mo <= 2);
    long long era = yy / 400, yoe = yy - era * 400;
    long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    *secs = days * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

const lkb_record *lkb_record_find(const lkb_records *rs, const char *class_name, const char *point, long long rows,
                                  const char *shape)
{
    const lkb_record *best = NULL;
    for (size_t i = 0; i < rs->n; i++) {
        const lkb_record *r = &rs->r[i];
        if (strcmp(r->class_name, class_name) || strcmp(r->point, point) || r->rows != rows)
            continue;
        if (shape && (!r->shape || strcmp(r->shape, shape)))
            continue;
        if (!best || r->utc_s >= best->utc_s)
            best = r;
    }
    return best;
}

int lkb_record_beats_speed(const lkb_record *r)
{
    return r->has_baseline && r->max_s < r->b_min_s;
}

int lkb_record_beats_energy(const lkb_record *r)
{
    return r->has_energy && r->has_b_energy && r->e_max_j < r->be_min_j;
}

/* %.17g keeps every bit of a double; TOML needs a '.' or exponent in a float */
static void put_float(nx_sbuf *b, const char *key, double v)
{
    char t[40];
    snprintf(t, sizeof t, "%.17g", v);
    if (!strpbrk(t, ".eEn"))
        strcat(t, ".0");
    nx_sbuf_printf(b, "%s = %s\n", key, t);
}

static void put_str(nx_sbuf *b, const char *key, const char *v)
{
    if (!v)
        return;
    nx_sbuf_printf(b, "%s = \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            nx_sbuf_printf(b, "\\%c", *p);
        else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            nx_sbuf_printf(b, "?");
        else
            nx_sbuf_printf(b, "%c", *p);
    }
    nx_sbuf_printf(b, "\"\n");
}

char *lkb_record_toml(const lkb_record *r)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "\n[[measurement]]\n");
    put_str(&b, "id", r->id);
    put_str(&b, "point", r->point);
    nx_sbuf_printf(&b, "rows = %lld\n", r->rows);
    put_str(&b, "shape", r->shape);
    put_str(&b, "backend", r->backend);
    put_str(&b, "kernel", r->kernel);
    put_str(&b, "utc", r->utc);
    put_str(&b, "host", r->host);
    nx_sbuf_printf(&b, "warmup = %d\nrepeats = %d\n", r->warmup, r->repeats);
    put_float(&b, "median_s", r->median_s);
    put_float(&b, "min_s", r->min_s);
    put_float(&b, "max_s", r->max_s);
    put_float(&b, "noise_band_s", r->band_s);
    if (r->has_baseline) {
        put_str(&b, "baseline", r->baseline);
        put_float(&b, "baseline_median_s", r->b_median_s);
        put_float(&b, "baseline_min_s", r->b_min_s);
        put_float(&b, "baseline_max_s", r->b_max_s);
    }
    put_str(&b, "energy", r->energy_source);
    if (r->has_energy) {
        put_float(&b, "energy_j", r->e_j);
        put_float(&b, "energy_min_j", r->e_min_j);
        put_float(&b, "energy_max_j", r->e_max_j);
    }
    if (r->has_b_energy) {
        put_float(&b, "baseline_energy_j", r->be_j);
        put_float(&b, "baseline_energy_min_j", r->be_min_j);
        put_float(&b, "baseline_energy_max_j", r->be_max_j);
    }
    return nx_sbuf_take(&b);
}
