/* gate.c: the promotion gate (gate.h, docs/ledger.md). */
#include "gate.h"
#include "famdesc.h"
#include "ledger_int.h"

#include <errno.h>
#include <glob.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nx_sbuf.h"
#include "refimpl.h"
#include "timing.h"
#include "verdict.h"

__attribute__((format(printf, 2, 3)))
static void note(gate_item *it, const char *fmt, ...)
{
    char line[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t old = it->notes ? strlen(it->notes) : 0, add = strlen(line);
    char *p = realloc(it->notes, old + add + 2);
    if (!p)
        return;
    memcpy(p + old, line, add);
    p[old + add] = '\n';
    p[old + add + 1] = 0;
    it->notes = p;
}

/* No list: every item; else the comma-separated list's membership test. */
static int in_list(const char *list, const char *item)
{
    return !list || vd_in_list(list, item);
}

static void family_of(const char *id, char *buf, size_t len)
{
    snprintf(buf, len, "%s", id);
    char *dot = strchr(buf, '.');
    if (dot)
        *dot = 0;
}

static int has(char **ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return 1;
    return 0;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static nx_status make_dir(const char *path, nx_err *err)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return nx_err_set(err, NX_EIO, "cannot create '%s': %s", path, strerror(errno));
    return NX_OK;
}

static void remove_tree(const char *dir)
{
    char pat[4096];
    const char *sub[] = {"before", "after"};
    for (int s = 0; s < 2; s++) {
        /* a name cut to fit would remove another folder's files: none */
        if (snprintf(pat, sizeof pat, "%s/%s/*", dir, sub[s]) >= (int)sizeof pat)
            return;
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++)
                unlink(g.gl_pathv[i]);
            globfree(&g);
        }
        if (snprintf(pat, sizeof pat, "%s/%s", dir, sub[s]) < (int)sizeof pat)
            rmdir(pat);
    }
    rmdir(dir);
}

static const char *mark(const camp_check *c)
{
    return c->verdict == CV_PASS ? (c->negative ? "ok(neg)" : "ok") : c->verdict == CV_FAIL ? "FAIL" : "skip";
}

/* Compares the outputs of every trace of the point on both sides. */
static void compare_outputs(const char *dir_a, const char *dir_b, const char *cls, const char *id, gate_item *it,
                            int *differ)
{
    char pat[4608];
    snprintf(pat, sizeof pat, "%s/%s.%s.*.safetensors", dir_a, cls, id);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0) {
        note(it, "no traces to compare");
        *differ = 1;
        return;
    }
    size_t la = strlen(dir_a);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *name = g.gl_pathv[i] + la + 1;
        char pb[4608], tag[256];
        snprintf(pb, sizeof pb, "%s/%s", dir_b, name);
        /* CLASS.ID.TAG.safetensors */
        snprintf(tag, sizeof tag, "%s", name + strlen(cls) + 1 + strlen(id) + 1);
        char *dot = strrchr(tag, '.');
        if (dot)
            *dot = 0;
        st_file a, b;
        st_init(&a);
        st_init(&b);
        nx_err e1, e2;
        if (st_read(g.gl_pathv[i], &a, &e1) != NX_OK) {
            note(it, "outputs: cannot read the before run's trace %s: %s", tag, e1.msg);
            *differ = 1;
        } else if (st_read(pb, &b, &e2) != NX_OK) {
            note(it, "outputs: run %s: not run after the change", tag);
            *differ = 1;
        } else {
            vd_diff d;
            camp_diff_runs(&a, NULL, 0, &b, NULL, 0, &d);
            if (!d.same) {
                char txt[512];
                vd_diff_text(&d, txt, sizeof txt);
                note(it, "outputs not byte-identical: run %s: %s", tag, txt);
                *differ = 1;
            }
        }
        st_free(&a);
        st_free(&b);
    }
    globfree(&g);
}

static void tol_of(const reg_registry *reg, const char *cls, const char *id, const char *shape, char *buf,
                   size_t len)
{
    fam_spec s = {0};
    nx_err e;
    buf[0] = 0;
    if (reg_resolve(reg, cls, id, shape, &s, &e) == NX_OK)
        ledger_tolerance_text(&s.tol, buf, len);
    else
        snprintf(buf, len, "?");
    fam_spec_free(&s);
}

static void short_hash(const char *h, char *buf)
{
    if (!*h)
        h = "none";
    size_t n = strlen(h) < 12 ? strlen(h) : 12;
    memcpy(buf, h, n);
    buf[n] = 0;
}

/* The point's kernels of both sides timed alternately (timing.h), each on
 * its own inputs; 1 when after is slower.  A kernel that cannot be timed
 * is said. */
static int time_point(const gate_opts *o, const reg_registry *ra, const reg_registry *rb, const char *id,
                      const char *shape, double alpha, gate_item *it)
{
    char why[256] = "";
    const char *bs = o->bench_shape ? o->bench_shape(o->bench_ctx, id, why, sizeof why) : NULL;
    if (bs)
        shape = bs;
    else if (!*why)
        snprintf(why, sizeof why, "the %s preset's shape", o->preset);
    snprintf(it->bench_shape, sizeof it->bench_shape, "%s", shape ? shape : "");
    snprintf(it->bench_why, sizeof it->bench_why, "%s", why);
    fam_spec sa = {0}, sb = {0};
    st_file ia, ib;
    st_init(&ia);
    st_init(&ib);
    nx_err e = {0};
    ref_gen_opts go = {o->seed, (nx_dist)o->dist, 0, o->threads};
    int slower = 0;
    tm_opts to;
    tm_opts_default(&to);
    to.slack = o->slack;
    to.alpha = alpha;
    if (o->pairs > 0)
        to.pairs = o->pairs;
    tm_result tr;
    const dev_backend *bb = o->backend_after ? o->backend_after : o->backend;
    if (reg_resolve(ra, o->class_name, id, shape, &sa, &e) || reg_resolve(rb, o->class_name, id, shape, &sb, &e) ||
        ref_generate(&sa, &go, &ia, &e) || ref_generate(&sb, &go, &ib, &e) ||
        tm_compare(o->backend, &sa, &ia, bb, &sb, &ib, &to, &tr, &e)) {
        note(it, "run time: not compared: %s", e.msg);
    } else {
        it->timed = 1;
        it->t_before = tr.before_s;
        it->t_after = tr.after_s;
        it->ratio = tr.ratio;
        it->lo = tr.lo;
        it->hi = tr.hi;
        it->pairs = tr.pairs;
        it->reps = tr.reps;
        if ((slower = tr.slower))
            note(it, "slower: %s; timed at %s (%s)", tr.text, it->bench_shape, it->bench_why);
        else
            note(it, "time: %s; timed at %s (%s)", tr.text, it->bench_shape, it->bench_why);
    }
    st_free(&ia);
    st_free(&ib);
    fam_spec_free(&sa);
    fam_spec_free(&sb);
    return slower;
}

static void compare_point(const gate_opts *o, const reg_registry *ra, const reg_registry *rb, const char *id,
                          double alpha, camp_cache *ca, camp_cache *cb, const char *dir_a, const char *dir_b,
                          gate_item *it)
{
    char fam[128];
    family_of(id, fam, sizeof fam);
    const char *shape = fam_preset_shape(o->preset, fam);
    camp_opts co = {0};
    co.backend = o->backend;
    co.repeats = o->repeats;
    co.threads = o->threads;
    co.seed = o->seed;
    co.dist = o->dist;
    co.engine = o->engine;
    /* the power checks on both sides (docs/power.md): a changed kernel that
     * realises another point fails the after side's Tier 2 even where the
     * default inputs give the same bits */
    co.power = 1;
    camp_result a = {0}, b = {0};
    nx_err e;
    co.traces = dir_a;
    co.cache = ca;
    camp_run_point(ra, o->class_name, id, shape, &co, &a, &e);
    co.traces = dir_b;
    co.cache = cb;
    if (o->backend_after)
        co.backend = o->backend_after;
    camp_run_point(rb, o->class_name, id, shape, &co, &b, &e);
    int fail = 0;
    if (a.error || b.error) {
        if (a.error)
            note(it, "before: input error: %s", a.errmsg);
        if (b.error)
            note(it, "after: input error: %s", b.errmsg);
        it->kind = a.error && b.error ? GATE_ERROR : GATE_FAIL;
        goto out;
    }
    /* a point that declares an atomic order gives other bits at every run:
     * its outputs and its bit-exactness are not compared */
    char who[256], *txt = NULL;
    int parity = 1, nondet;
    snprintf(who, sizeof who, "%s:%s", o->class_name, id);
    nondet = reg_compare(rb, who, who, shape, &txt, &parity, &e) == NX_OK && !parity;
    free(txt);
    /* the gates */
    if (strcmp(a.hash, b.hash) != 0) {
        char ha[16], hb[16];
        short_hash(a.hash, ha);
        short_hash(b.hash, hb);
        note(it, "gate changed: point hash %s -> %s", ha, hb);
        fail = 1;
    }
    snprintf(it->hash, sizeof it->hash, "%s", b.hash);
    snprintf(it->kernel_before, sizeof it->kernel_before, "%s", a.kernel);
    snprintf(it->kernel_after, sizeof it->kernel_after, "%s", b.kernel);
    for (int c = CK_DETERMINISM; c <= CK_TIER2; c++) {
        const camp_check *x = &a.checks[c], *y = &b.checks[c];
        char what[64];
        if (c == CK_TIER2)
            snprintf(what, sizeof what, "tier2");
        else
            snprintf(what, sizeof what, "tier1 %s", camp_check_name(c));
        if (x->verdict == CV_SKIP && y->verdict == CV_PASS && x->negative == y->negative) {
            /* a check the change made possible: gained, not a change that fails */
            note(it, "gained: %s: skip -> %s (after: %s)", what, mark(y), y->detail);
            it->gained++;
        } else if (x->verdict != y->verdict || x->negative != y->negative) {
            note(it, "gate changed: %s: %s -> %s (after: %s)", what, mark(x), mark(y), y->detail);
            fail = 1;
        }
    }
    if (a.checks[CK_TIER2].verdict == CV_PASS && b.checks[CK_TIER2].verdict == CV_PASS) {
        if (a.bit_exact != b.bit_exact && !nondet) {
            note(it, "gate changed: tier2: %s -> %s", a.bit_exact ? "bit-exact" : "not bit-exact",
                 b.bit_exact ? "bit-exact" : "not bit-exact");
            fail = 1;
        }
        if (a.t2.opt.policy != b.t2.opt.policy) {
            note(it, "gate changed: tier2 judged %s -> %s", a.t2.opt.policy == CMP_BITWISE ? "bit for bit" : "by a tolerance",
                 b.t2.opt.policy == CMP_BITWISE ? "bit for bit" : "by a tolerance");
            fail = 1;
        }
    }
    char ta[256], tb[256];
    tol_of(ra, o->class_name, id, shape, ta, sizeof ta);
    tol_of(rb, o->class_name, id, shape, tb, sizeof tb);
    if (strcmp(ta, tb) != 0) {
        note(it, "gate changed: declared tolerance %s -> %s", *ta ? ta : "none", *tb ? tb : "none");
        fail = 1;
    }
    /* outputs, unless the point declares a nondeterministic order */
    if (nondet) {
        note(it, "outputs not compared: the point declares a nondeterministic (atomic) order");
    } else {
        int differ = 0;
        it->outputs_compared = 1;
        compare_outputs(dir_a, dir_b, o->class_name, id, it, &differ);
        fail |= differ;
    }
    /* kernels: said, not failed */
    if (strcmp(a.kernel, b.kernel) != 0 || strcmp(a.legacy, b.legacy) != 0) {
        it->kernel_changed = 1;
        if (strcmp(a.kernel, b.kernel) != 0)
            note(it, "kernel changed: %s -> %s%s", *a.kernel ? a.kernel : "none", *b.kernel ? b.kernel : "none",
                 fail ? "" : " (outputs byte-identical, gates unchanged)");
        if (strcmp(a.legacy, b.legacy) != 0)
            note(it, "legacy kernel changed: %s -> %s", *a.legacy ? a.legacy : "none", *b.legacy ? b.legacy : "none");
    }
    if (o->bench && !a.error && !b.error)
        fail |= time_point(o, ra, rb, id, shape, alpha, it);
    it->kind = fail ? GATE_FAIL : GATE_SAME;
out:
    camp_result_free(&a);
    camp_result_free(&b);
}

nx_status gate_run(const gate_opts *o, gate_report *r, nx_err *err)
{
    memset(r, 0, sizeof *r);
    reg_registry *ra = NULL, *rb = NULL;
    char **ia = NULL, **ib = NULL;
    size_t na = 0, nb = 0;
    nx_status st;
    char tmp[4096] = "", da[4200], db[4200];
    camp_cache ca = {0}, cb = {0};
    st_init(&ca.in);
    st_init(&cb.in);
    if ((st = reg_load(o->before, &ra, err))) {
        nx_err_prefix(err, "--before %s", o->before);
        goto out;
    }
    if ((st = reg_load(o->after, &rb, err))) {
        nx_err_prefix(err, "--after %s", o->after);
        goto out;
    }
    if ((st = reg_list_points(ra, o->class_name, &ia, &na, err))) {
        nx_err_prefix(err, "--before %s", o->before);
        goto out;
    }
    if ((st = reg_list_points(rb, o->class_name, &ib, &nb, err))) {
        nx_err_prefix(err, "--after %s", o->after);
        goto out;
    }
    /* a filter that selects nothing is bad input: said before any folder
     * is made */
    int any = !o->families;
    for (size_t i = 0; i < na + nb && !any; i++) {
        char f0[128];
        family_of(i < na ? ia[i] : ib[i - na], f0, sizeof f0);
        any = in_list(o->families, f0);
    }
    if (!any) {
        st = nx_err_set(err, NX_EINVAL, "--families: no point of class %s belongs to '%s'", o->class_name,
                        o->families);
        goto out;
    }
    if (o->traces) {
        snprintf(tmp, sizeof tmp, "%s", o->traces);
        if ((st = make_dir(tmp, err)) || (o->lock_traces && (st = o->lock_traces(tmp, err))))
            goto out;
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/parity-gate-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            st = nx_err_set(err, NX_EIO, "cannot create a temporary directory %s: %s", tmp, strerror(errno));
            tmp[0] = 0;
            goto out;
        }
    }
    snprintf(da, sizeof da, "%s/before", tmp);
    snprintf(db, sizeof db, "%s/after", tmp);
    if ((st = make_dir(da, err)) || (st = make_dir(db, err)))
        goto out;
    r->items = calloc(na + nb + 1, sizeof *r->items);
    if (!r->items) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    size_t todo = 0, done = 0;
    char fam[128];
    for (size_t i = 0; i < nb; i++) {
        family_of(ib[i], fam, sizeof fam);
        todo += in_list(o->families, fam) && has(ia, na, ib[i]);
    }
    /* the points after the change, in its order; then the removed ones */
    for (size_t i = 0; i < nb; i++) {
        family_of(ib[i], fam, sizeof fam);
        if (!in_list(o->families, fam))
            continue;
        gate_item *it = &r->items[r->n++];
        snprintf(it->id, sizeof it->id, "%s", ib[i]);
        if (!has(ia, na, ib[i])) {
            it->kind = GATE_NEW;
            r->added++;
            continue;
        }
        if (o->stop && *o->stop) {
            st = nx_err_set(err, NX_EINVAL, "interrupted by a signal after %zu of %zu point(s); nothing kept", done,
                            todo);
            goto out;
        }
        if (o->progress)
            o->progress(o->ctx, ++done, todo, ib[i]);
        /* the gate's false-alarm rate shared by its compared points (Bonferroni) */
        compare_point(o, ra, rb, ib[i], o->alpha / (double)(todo ? todo : 1), &ca, &cb, da, db, it);
        r->compared++;
        r->failed += it->kind == GATE_FAIL;
        r->errors += it->kind == GATE_ERROR;
        r->kernel_changed += it->kernel_changed;
        r->gained += it->gained != 0;
    }
    for (size_t i = 0; i < na; i++) {
        family_of(ia[i], fam, sizeof fam);
        if (!in_list(o->families, fam) || has(ib, nb, ia[i]))
            continue;
        gate_item *it = &r->items[r->n++];
        snprintf(it->id, sizeof it->id, "%s", ia[i]);
        it->kind = GATE_REMOVED;
        r->removed++;
    }
out:
    camp_cache_free(&ca);
    camp_cache_free(&cb);
    if (*tmp && !o->traces)
        remove_tree(tmp);
    free_ids(ia, na);
    free_ids(ib, nb);
    reg_free(ra);
    reg_free(rb);
    if (st)
        gate_free(r);
    return st;
}

void gate_free(gate_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].notes);
    free(r->items);
    memset(r, 0, sizeof *r);
}

nx_status gate_side(const char *arg, const char *registry_path, char **dir, char **tmp, nx_err *err)
{
    *dir = *tmp = NULL;
    struct stat sb;
    if (stat(arg, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return nx_err_set(err, NX_EINVAL, "'%s' is not a directory", arg);
        if (!(*dir = strdup(arg)))
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        return NX_OK;
    }
    char rev[512], out[256];
    snprintf(rev, sizeof rev, "%s^{commit}", arg);
    char *verify[] = {"git", "rev-parse", "--verify", "-q", rev, NULL};
    if (arg[0] == '-' || ledger_run_cmd(verify, out, sizeof out) != 0)
        return nx_err_set(err, NX_EINVAL, "'%s' is neither a directory nor a git revision of the repository here", arg);
    out[strcspn(out, "\r\n")] = 0;
    const char *t = getenv("TMPDIR");
    char tdir[4096];
    snprintf(tdir, sizeof tdir, "%s/parity-gate-rev-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tdir))
        return nx_err_set(err, NX_EIO, "cannot create a temporary directory %s: %s", tdir, strerror(errno));
    char tar[4200], path[8192];
    snprintf(tar, sizeof tar, "%s/rev.tar", tdir);
    char *archive[] = {"git", "archive", "--format=tar", "-o", tar, out, "--", (char *)registry_path, NULL};
    char *untar[] = {"tar", "-xf", tar, "-C", tdir, NULL};
    if (ledger_run_cmd(archive, NULL, 0) != 0 || ledger_run_cmd(untar, NULL, 0) != 0) {
        gate_side_free(NULL, strdup(tdir));
        return nx_err_set(err, NX_EINVAL, "git revision %s (%.12s) has no '%s' to export", arg, out, registry_path);
    }
    unlink(tar);
    snprintf(path, sizeof path, "%s/%s", tdir, registry_path);
    *dir = strdup(path);
    *tmp = strdup(tdir);
    if (!*dir || !*tmp) {
        gate_side_free(*dir, *tmp);
        *dir = *tmp = NULL;
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    return NX_OK;
}

void gate_side_free(char *dir, char *tmp)
{
    if (tmp && *tmp) {
        char *rm[] = {"rm", "-rf", "--", tmp, NULL};
        ledger_run_cmd(rm, NULL, 0);
    }
    free(dir);
    free(tmp);
}

static const char *kind_name(gate_kind k)
{
    switch (k) {
    case GATE_SAME: return "pass";
    case GATE_FAIL: return "FAIL";
    case GATE_NEW: return "new";
    case GATE_REMOVED: return "REMOVED";
    default: return "input error";
    }
}

char *gate_text(const gate_opts *o, const gate_report *r)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "parity gate: class %s, before %s, after %s, shapes %s, seed %llu\n", o->class_name, o->before,
                   o->after, o->preset, o->seed);
    for (size_t i = 0; i < r->n; i++) {
        const gate_item *it = &r->items[i];
        const char *what = it->kind == GATE_SAME ? (it->kernel_changed && it->gained ? "pass (kernel changed, check gained)"
                                                    : it->kernel_changed ? "pass (kernel changed)"
                                                    : it->gained ? "pass (check gained)" : "pass")
                           : it->kind == GATE_NEW ? "new (not compared)"
                           : it->kind == GATE_REMOVED ? "REMOVED (an existing point the change dropped)"
                                                       : kind_name(it->kind);
        nx_sbuf_printf(&b, "%-40s %s\n", it->id, what);
        for (const char *p = it->notes; p && *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            nx_sbuf_printf(&b, "    %.*s\n", len, p);
            p = e ? e + 1 : p + len;
        }
    }
    nx_sbuf_printf(&b, "\n%zu point(s) compared: %zu passed, %zu failed, %zu input error(s); %zu new, %zu removed; "
                       "kernel changed at %zu; checks gained at %zu\n",
                   r->compared, r->compared - r->failed - r->errors, r->failed, r->errors, r->added, r->removed,
                   r->kernel_changed, r->gained);
    if (o->bench)
        nx_sbuf_printf(&b, "microbenchmarks: each compared point's kernels of both sides timed alternately in this "
                           "process (%d pairs, 1 thread, at each point's representative shape, said per point); slower when the median time ratio's lower confidence bound "
                           "exceeds %.2f; false-alarm rate at most %.2g%% for the whole gate (%.2g%% per point)\n",
                   o->pairs > 0 ? o->pairs : TM_PAIRS, 1 + o->slack, 100 * o->alpha,
                   100 * o->alpha / (double)(r->compared ? r->compared : 1));
    else
        nx_sbuf_printf(&b, "microbenchmarks: not compared (--no-bench)\n");
    int pass = !r->failed && !r->removed && !r->errors;
    nx_sbuf_printf(&b, "gate: %s\n", pass ? "PASS" : "FAIL");
    return nx_sbuf_take(&b);
}

char *gate_json(const gate_opts *o, const gate_report *r)
{
    json_t *root = json_object(), *pts = json_array();
    json_object_set_new(root, "class", json_string(o->class_name));
    json_object_set_new(root, "before", json_string(o->before));
    json_object_set_new(root, "after", json_string(o->after));
    json_object_set_new(root, "shapes", json_string(o->preset));
    json_object_set_new(root, "seed", json_integer((json_int_t)o->seed));
    for (size_t i = 0; i < r->n; i++) {
        const gate_item *it = &r->items[i];
        json_t *p = json_object(), *notes = json_array();
        json_object_set_new(p, "id", json_string(it->id));
        json_object_set_new(p, "result", json_string(it->kind == GATE_SAME ? "pass" : it->kind == GATE_FAIL ? "fail"
                                                     : it->kind == GATE_NEW ? "new" : it->kind == GATE_REMOVED
                                                     ? "removed" : "error"));
        json_object_set_new(p, "kernel_changed", json_boolean(it->kernel_changed));
        json_object_set_new(p, "checks_gained", json_integer(it->gained));
        if (it->kind == GATE_SAME || it->kind == GATE_FAIL) {
            json_object_set_new(p, "outputs_compared", json_boolean(it->outputs_compared));
            if (it->timed) {
                json_object_set_new(p, "run_s_before", json_real(it->t_before));
                json_object_set_new(p, "run_s_after", json_real(it->t_after));
                json_object_set_new(p, "time_ratio", json_real(it->ratio));
                json_object_set_new(p, "time_ratio_lo", json_real(it->lo));
                json_object_set_new(p, "time_ratio_hi", json_real(it->hi));
                json_object_set_new(p, "time_pairs", json_integer(it->pairs));
                json_object_set_new(p, "time_runs_per_sample", json_integer(it->reps));
                json_object_set_new(p, "time_shape", json_string(it->bench_shape));
                json_object_set_new(p, "time_shape_why", json_string(it->bench_why));
            }
        }
        for (const char *q = it->notes; q && *q;) {
            const char *e = strchr(q, '\n');
            size_t len = e ? (size_t)(e - q) : strlen(q);
            json_array_append_new(notes, json_stringn(q, len));
            q = e ? e + 1 : q + len;
        }
        json_object_set_new(p, "notes", notes);
        json_array_append_new(pts, p);
    }
    json_object_set_new(root, "points", pts);
    json_object_set_new(root, "compared", json_integer((json_int_t)r->compared));
    json_object_set_new(root, "failed", json_integer((json_int_t)r->failed));
    json_object_set_new(root, "new", json_integer((json_int_t)r->added));
    json_object_set_new(root, "removed", json_integer((json_int_t)r->removed));
    json_object_set_new(root, "kernel_changed", json_integer((json_int_t)r->kernel_changed));
    json_t *nm = json_object();
    json_object_set_new(nm, "compared", json_boolean(o->bench));
    json_object_set_new(nm, "method", json_string("interleaved pairs, sign-test interval of the median time ratio"));
    json_object_set_new(nm, "pairs", json_integer(o->pairs > 0 ? o->pairs : TM_PAIRS));
    json_object_set_new(nm, "slack", json_real(o->slack));
    json_object_set_new(nm, "false_alarm_rate", json_real(o->alpha));
    json_object_set_new(root, "noise_model", nm);
    json_object_set_new(root, "pass", json_boolean(!r->failed && !r->removed && !r->errors));
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return s;
}

/* ---- the classes a change touches ------------------------------------- */

/* What differs between two resolved views of one point, said into b;
 * returns 1 when something does. */
static int view_diff(const fam_spec *a, const fam_spec *b, nx_sbuf *t)
{
    int n = 0;
#define SAID(...) (nx_sbuf_printf(t, "%s", n++ ? ", " : ""), nx_sbuf_printf(t, __VA_ARGS__))
    if (strcmp(a->hash ? a->hash : "", b->hash ? b->hash : "") != 0)
        SAID("numerics hash %.12s -> %.12s", a->hash ? a->hash : "none", b->hash ? b->hash : "none");
    if (strcmp(a->kernel ? a->kernel : "", b->kernel ? b->kernel : "") != 0)
        SAID("kernel %s -> %s", a->kernel ? a->kernel : "none", b->kernel ? b->kernel : "none");
    for (int side = 0; side < 2; side++) {
        const fam_spec *x = side ? b : a, *y = side ? a : b;
        for (size_t i = 0; i < x->nparams; i++) {
            const char *vx = x->params[i].value, *vy = fam_param_get(y, x->params[i].name);
            if (side == 0 && (!vy || strcmp(vx, vy) != 0))
                SAID("param %s %s -> %s", x->params[i].name, vx, vy ? vy : "(unset)");
            else if (side == 1 && !vy)
                SAID("param %s (unset) -> %s", x->params[i].name, vx);
        }
    }
    char ta[256], tb[256];
    ledger_tolerance_text(&a->tol, ta, sizeof ta);
    ledger_tolerance_text(&b->tol, tb, sizeof tb);
    if (strcmp(ta, tb) != 0)
        SAID("declared tolerance %s -> %s", *ta ? ta : "none", *tb ? tb : "none");
#undef SAID
    return n > 0;
}

void gate_touched_free(gate_touch *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].why);
        free(t[i].fails);
    }
    free(t);
}

/* The changes of one class, into *why; their count. */
static size_t class_changes(const reg_registry *ra, const reg_registry *rb, const char *cls, const char *preset,
                            const char *families, char **why, char **fails)
{
    char **ia = NULL, **ib = NULL;
    size_t na = 0, nb = 0, n = 0;
    nx_err e;
    int has_a = reg_list_points(ra, cls, &ia, &na, &e) == NX_OK, has_b = reg_list_points(rb, cls, &ib, &nb, &e) == NX_OK;
    nx_sbuf t = {0}, f = {0};
    size_t nf = 0;
    if (!has_a || !has_b) {
        nx_sbuf_printf(&t, "the class exists only %s the change", has_a ? "before" : "after");
        n = 1;
        if (has_a)
            nx_sbuf_printf(&f, "%sthe class was removed", nf++ ? "; " : "");
    }
    for (size_t i = 0; has_a && has_b && i < nb; i++) {
        char fam[128];
        family_of(ib[i], fam, sizeof fam);
        if (!in_list(families, fam))
            continue;
        if (!has(ia, na, ib[i])) {
            nx_sbuf_printf(&t, "%s%s: new", n++ ? "; " : "", ib[i]);
            continue;
        }
        const char *shape = fam_preset_shape(preset, fam);
        fam_spec sa = {0}, sb = {0};
        int oka = reg_resolve(ra, cls, ib[i], shape, &sa, &e) == NX_OK, okb = reg_resolve(rb, cls, ib[i], shape, &sb, &e) == NX_OK;
        if (oka != okb) {
            nx_sbuf_printf(&t, "%s%s: resolves %s the change only", n++ ? "; " : "", ib[i], oka ? "before" : "after");
            if (oka)
                nx_sbuf_printf(&f, "%s%s: no longer resolves", nf++ ? "; " : "", ib[i]);
        } else if (oka) {
            if (strcmp(sa.hash ? sa.hash : "", sb.hash ? sb.hash : "") != 0)
                nx_sbuf_printf(&f, "%s%s: numerics hash %.12s -> %.12s", nf++ ? "; " : "", ib[i],
                               sa.hash ? sa.hash : "none", sb.hash ? sb.hash : "none");
            nx_sbuf d = {0};
            if (view_diff(&sa, &sb, &d)) {
                char *dt = nx_sbuf_take(&d);
                nx_sbuf_printf(&t, "%s%s: %s", n++ ? "; " : "", ib[i], dt ? dt : "changed");
                free(dt);
            } else {
                free(nx_sbuf_take(&d));
            }
        }
        fam_spec_free(&sa);
        fam_spec_free(&sb);
    }
    for (size_t i = 0; has_a && has_b && i < na; i++) {
        char fam[128];
        family_of(ia[i], fam, sizeof fam);
        if (in_list(families, fam) && !has(ib, nb, ia[i])) {
            nx_sbuf_printf(&t, "%s%s: removed", n++ ? "; " : "", ia[i]);
            nx_sbuf_printf(&f, "%s%s: removed", nf++ ? "; " : "", ia[i]);
        }
    }
    free_ids(ia, na);
    free_ids(ib, nb);
    *why = nx_sbuf_take(&t);
    char *ft = nx_sbuf_take(&f);
    if (!nf) {
        free(ft);
        ft = NULL;
    }
    *fails = ft;
    return n;
}

nx_status gate_touched(const char *before, const char *after, const char *preset, const char *families,
                       gate_touch **out, size_t *n, nx_err *err)
{
    *out = NULL;
    *n = 0;
    reg_registry *ra = NULL, *rb = NULL;
    nx_status st;
    if ((st = reg_load(before, &ra, err))) {
        nx_err_prefix(err, "--before %s", before);
        return st;
    }
    if ((st = reg_load(after, &rb, err))) {
        nx_err_prefix(err, "--after %s", after);
        reg_free(ra);
        return st;
    }
    size_t ca = reg_class_count(ra), cb = reg_class_count(rb);
    gate_touch *t = calloc(ca + cb + 1, sizeof *t);
    if (!t)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t i = 0; t && i < cb + ca; i++) {
        const char *cls = i < cb ? reg_class_name(rb, i) : reg_class_name(ra, i - cb);
        if (i >= cb) { /* a class only before the change */
            int seen = 0;
            for (size_t k = 0; k < cb && !seen; k++)
                seen = strcmp(reg_class_name(rb, k), cls) == 0;
            if (seen)
                continue;
        }
        char *why = NULL, *fails = NULL;
        size_t c = class_changes(ra, rb, cls, preset, families, &why, &fails);
        if (!c) {
            free(why);
            free(fails);
            continue;
        }
        gate_touch *g = &t[(*n)++];
        snprintf(g->class_name, sizeof g->class_name, "%s", cls);
        g->why = why;
        g->fails = fails;
        g->changes = c;
    }
    reg_free(ra);
    reg_free(rb);
    if (st) {
        gate_touched_free(t, *n);
        *n = 0;
        return st;
    }
    *out = t;
    return NX_OK;
}
