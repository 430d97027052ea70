/* ext_dlopen.c: a backend library (parity_backend.h) behind dev_backend,
 * loaded into parity (in_process = true), and `parity backend host LIB`,
 * which serves a library over the protocol of docs/backends.md in a child
 * process: the default, so that a crash or a hang of the library is one
 * point's error. */
#include "ext_backend.h"
#include "parity_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"


typedef struct lib_impl {
    void *handle;
    const parity_backend *pb;
    char path[1024], label[512];
    int broken;
    char why[1024];
    dev_backend be;
} lib_impl;

/* ---- the library ---------------------------------------------------- */

/* Loads path and checks its table; the reason in why on failure. */
static const parity_backend *load(const char *path, void **handle, char *why, size_t len)
{
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, len, "dlopen: %s", e ? e : path);
        return NULL;
    }
    parity_backend_entry entry;
    void *sym = dlsym(h, PARITY_BACKEND_SYMBOL);
    memcpy(&entry, &sym, sizeof entry);
    const parity_backend *pb = sym ? entry() : NULL;
    const char *bad = !sym ? "exports no symbol " PARITY_BACKEND_SYMBOL
                      : !pb ? PARITY_BACKEND_SYMBOL "() returned NULL"
                      : pb->abi != PARITY_BACKEND_ABI ? "speaks another ABI version"
                      : !pb->supports || !pb->run ? "has no supports or run function"
                      : NULL;
    if (bad) {
        snprintf(why, len, "%s: %s (parity's ABI is %d)", path, bad, PARITY_BACKEND_ABI);
        dlclose(h);
        return NULL;
    }
    *handle = h;
    return pb;
}

/* ---- a point and tensors for the library ------------------------------- */

typedef struct lib_point {
    parity_point p;
    parity_kv *params, *reds;
} lib_point;

static void point_free(lib_point *lp)
{
    free(lp->params);
    free(lp->reds);
}

static nx_status point_of_spec(const fam_spec *s, lib_point *lp, nx_err *err)
{
    memset(lp, 0, sizeof *lp);
    lp->params = calloc(s->nparams + 1, sizeof *lp->params);
    lp->reds = calloc(s->nreds + 1, sizeof *lp->reds);
    if (!lp->params || !lp->reds) {
        point_free(lp);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->nparams; i++)
        lp->params[i] = (parity_kv){s->params[i].name, s->params[i].value ? s->params[i].value : ""};
    for (size_t i = 0; i < s->nreds; i++)
        lp->reds[i] = (parity_kv){s->reds[i].name, s->reds[i].tree_text ? s->reds[i].tree_text : ""};
    lp->p = (parity_point){s->family ? s->family : "", s->point ? s->point : "", s->class_name ? s->class_name : "",
                           s->kernel, s->hash ? s->hash : "", lp->params, s->nparams, lp->reds, s->nreds};
    return NX_OK;
}

/* The point of a request (its strings stay owned by the JSON). */
static int point_of_json(json_t *j, lib_point *lp, char *why, size_t len)
{
    memset(lp, 0, sizeof *lp);
    if (!json_is_object(j)) {
        snprintf(why, len, "request: \"point\" is not an object");
        return -1;
    }
    json_t *params = json_object_get(j, "params"), *reds = json_object_get(j, "reductions");
    if ((params && !json_is_object(params)) || (reds && !json_is_object(reds))) {
        snprintf(why, len, "request: point.params and point.reductions must be objects");
        return -1;
    }
    size_t np = json_object_size(params), nr = json_object_size(reds);
    lp->params = calloc(np + 1, sizeof *lp->params);
    lp->reds = calloc(nr + 1, sizeof *lp->reds);
    if (!lp->params || !lp->reds) {
        point_free(lp);
        snprintf(why, len, "out of memory");
        return -1;
    }
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach(params, k, v) {
        if (!json_is_string(v)) {
            point_free(lp);
            snprintf(why, len, "request: point.params.%s is not a string", k);
            return -1;
        }
        lp->params[i++] = (parity_kv){k, json_string_value(v)};
    }
    i = 0;
    json_object_foreach(reds, k, v) {
        if (!json_is_string(v)) {
            point_free(lp);
            snprintf(why, len, "request: point.reductions.%s is not a string", k);
            return -1;
        }
        lp->reds[i++] = (parity_kv){k, json_string_value(v)};
    }
    const char *fam = json_string_value(json_object_get(j, "family"));
    if (!fam) {
        point_free(lp);
        snprintf(why, len, "request: point.family is not a string");
        return -1;
    }
    const char *pt = json_string_value(json_object_get(j, "point")), *cls = json_string_value(json_object_get(j, "class"));
    const char *ker = json_string_value(json_object_get(j, "kernel")), *h = json_string_value(json_object_get(j, "hash"));
    lp->p = (parity_point){fam, pt ? pt : "", cls ? cls : "", ker, h ? h : "", lp->params, np, lp->reds, nr};
    return 0;
}

typedef struct sink {
    st_file *out;
    nx_err err;
    int refused;
} sink;

static void *add_output(parity_run *r, const char *name, const char *dtype, int ndim, const int64_t *shape)
{
    sink *s = r->host;
    st_dtype dt;
    st_tensor *t;
    if (!name || !dtype || !st_dtype_from_name(dtype, &dt)) {
        nx_err_set(&s->err, NX_EINVAL, "output '%s': dtype '%s' is not a safetensors dtype", name ? name : "(null)",
                   dtype ? dtype : "(null)");
        s->refused = 1;
        return NULL;
    }
    if (ndim < 0 || ndim > ST_MAX_NDIM || (ndim && !shape)) {
        nx_err_set(&s->err, NX_EINVAL, "output '%s': ndim %d outside 0..%d", name, ndim, ST_MAX_NDIM);
        s->refused = 1;
        return NULL;
    }
    if (st_add_tensor(s->out, name, dt, ndim, shape, &t, &s->err)) {
        s->refused = 1;
        return NULL;
    }
    return t->nbytes ? t->data : (void *)t; /* a non-NULL pointer for an empty tensor */
}

/* Runs the library's kernel on in's tensors into out. */
static int lib_call(const parity_backend *pb, const parity_point *p, const char *kernel, int graphed, int threads,
                    const st_file *in, st_file *out, char *why, size_t len)
{
    parity_tensor *ts = calloc(in->ntensors + 1, sizeof *ts);
    if (!ts) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < in->ntensors; i++) {
        const st_tensor *t = &in->tensors[i];
        ts[i].name = t->name;
        ts[i].dtype = st_dtype_name(t->dtype);
        ts[i].ndim = t->ndim;
        for (int d = 0; d < t->ndim && d < PARITY_BACKEND_MAX_NDIM; d++)
            ts[i].shape[d] = t->shape[d];
        ts[i].data = t->data;
        ts[i].nbytes = (size_t)t->nbytes;
    }
    sink s = {out, {0}, 0};
    parity_run r;
    memset(&r, 0, sizeof r);
    r.abi = PARITY_BACKEND_ABI;
    r.point = p;
    r.kernel = kernel ? kernel : p->kernel;
    r.graphed = graphed;
    r.threads = threads;
    r.inputs = ts;
    r.ninputs = in->ntensors;
    r.output = add_output;
    r.host = &s;
    int rc = pb->run(&r);
    free(ts);
    r.error[sizeof r.error - 1] = 0;
    if (rc != 0) {
        ext_put(why, len, r.error[0] ? r.error : "the kernel failed (no message)");
        return -1;
    }
    if (s.refused) {
        ext_put(why, len, s.err.msg);
        return -1;
    }
    return 0;
}

/* ---- in process ------------------------------------------------------- */

static lib_impl *LI(const dev_backend *b)
{
    return (lib_impl *)b->impl;
}

static const parity_backend *ensure(lib_impl *li)
{
    if (!li->pb && !li->broken) {
        li->pb = load(li->path, &li->handle, li->why, sizeof li->why);
        li->broken = !li->pb;
        if (li->pb) {
            li->be.threaded = li->pb->threaded;
            if (li->pb->name && *li->pb->name)
                li->be.name = li->pb->name;
        }
    }
    return li->pb;
}

static int dl_available(const dev_backend *self, char *why, size_t len)
{
    lib_impl *li = LI(self);
    const parity_backend *pb = ensure(li);
    if (!pb) {
        snprintf(why, len, "%s: %s", li->label, li->why);
        return 0;
    }
    if (!pb->available)
        return (why && len ? why[0] = 0 : 0), 1;
    char w[512] = "";
    int ok = pb->available(w, sizeof w) != 0;
    w[sizeof w - 1] = 0;
    if (why && len)
        ext_put(why, len, ok ? "" : w[0] ? w : "the backend says it is not available (no reason given)");
    return ok;
}

static nx_status dl_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    lib_impl *li = LI(self);
    const parity_backend *pb = ensure(li);
    if (!pb)
        return nx_err_set(err, NX_EDEVICE, "%s: %s", li->label, li->why);
    char buf[8192] = "{}";
    if (pb->describe && pb->describe(buf, sizeof buf) != 0)
        return nx_err_set(err, NX_EDEVICE, "%s: describe failed", li->label);
    buf[sizeof buf - 1] = 0;
    json_t *o = json_loads(buf, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return nx_err_set(err, NX_EDEVICE, "%s: describe: not a JSON object", li->label);
    }
    if (!json_object_get(o, "backend"))
        json_object_set_new(o, "backend", json_string(self->name));
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    nx_status st = NX_OK;
    if (!txt)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if (strlen(txt) + 1 > len)
        st = nx_err_set(err, NX_EINVAL, "%s: describe: the description needs %zu bytes, the buffer has %zu", li->label,
                        strlen(txt) + 1, len);
    else
        memcpy(json, txt, strlen(txt) + 1);
    free(txt);
    return st;
}

static int dl_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    const parity_backend *pb = ensure(LI(self));
    lib_point lp;
    if (!pb || point_of_spec(spec, &lp, NULL))
        return pb ? 0 : 1; /* an unloadable library is never a skip: the run says why */
    int yes = pb->supports(&lp.p, kernel ? kernel : spec->kernel) != 0;
    point_free(&lp);
    return yes;
}

static int dl_nondeterministic(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    const parity_backend *pb = ensure(LI(self));
    lib_point lp;
    if (!pb || !pb->nondeterministic || point_of_spec(spec, &lp, NULL))
        return 0;
    int yes = pb->nondeterministic(&lp.p, kernel ? kernel : spec->kernel) != 0;
    point_free(&lp);
    return yes;
}

static nx_status dl_check_params(const dev_backend *self, const fam_spec *spec, const char *kernel, nx_err *err)
{
    lib_impl *li = LI(self);
    const parity_backend *pb = ensure(li);
    if (!pb)
        return nx_err_set(err, NX_EDEVICE, "%s: %s", li->label, li->why);
    if (!pb->check_params)
        return NX_OK;
    lib_point lp;
    nx_status st = point_of_spec(spec, &lp, err);
    if (st)
        return st;
    char why[512] = "";
    if (pb->check_params(&lp.p, kernel ? kernel : spec->kernel, why, sizeof why) != 0) {
        why[sizeof why - 1] = 0;
        st = nx_err_set(err, NX_EINVAL, "%s: check_params: %s", li->label, why[0] ? why : "refused (no reason given)");
    }
    point_free(&lp);
    return st;
}

static nx_status dl_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out,
                        const dev_opts *opts, nx_err *err)
{
    lib_impl *li = LI(self);
    const parity_backend *pb = ensure(li);
    if (!pb)
        return nx_err_set(err, NX_EDEVICE, "%s: %s", li->label, li->why);
    lib_point lp;
    nx_status st = point_of_spec(spec, &lp, err);
    if (st)
        return st;
    char why[600];
    const char *k = opts && opts->kernel ? opts->kernel : spec->kernel;
    if (lib_call(pb, &lp.p, k, opts && opts->mode == DEV_GRAPHED, opts ? opts->threads : 0, in, out, why, sizeof why))
        st = nx_err_set(err, NX_EDEVICE, "%s: %s.%s: kernel %s: %s", li->label, fam_spec_family(spec),
                        fam_spec_point(spec), k ? k : "?", why);
    point_free(&lp);
    return st;
}

nx_status ext_dlopen_new(const char *path, const char *label, dev_backend **out, nx_err *err)
{
    lib_impl *li = calloc(1, sizeof *li);
    if (!li)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    ext_put(li->path, sizeof li->path, path);
    ext_put(li->label, sizeof li->label, label);
    li->be = (dev_backend){"dlopen", dl_available, dl_describe, dl_supports, dl_run, dl_check_params, 0,
                           dl_nondeterministic, li};
    *out = &li->be;
    return NX_OK;
}

int ext_dlopen_broken(const dev_backend *b, char *why, size_t len)
{
    lib_impl *li = LI(b);
    ensure(li);
    if (li->broken && why && len)
        snprintf(why, len, "%s: %s", li->label, li->why);
    return li->broken;
}

/* ---- `parity backend host LIB` ------------------------------------------ */

static FILE *PROTO; /* the protocol's stream: the host's own stdout */

static void answer(json_t *id, int ok, const char *error, json_t *extra)
{
    json_t *a = extra ? extra : json_object();
    json_object_set(a, "id", id ? id : json_null());
    json_object_set_new(a, "ok", json_boolean(ok));
    if (!ok)
        json_object_set_new(a, "error", json_string(error && *error ? error : "failed"));
    char *txt = json_dumps(a, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(a);
    if (txt) {
        fputs(txt, PROTO);
        fputc('\n', PROTO);
        fflush(PROTO);
        free(txt);
    }
}

static void host_run(const parity_backend *pb, json_t *req, json_t *id, const parity_point *p, const char *kernel)
{
    const char *in = json_string_value(json_object_get(req, "in")), *outp = json_string_value(json_object_get(req, "out"));
    const char *mode = json_string_value(json_object_get(req, "mode"));
    json_t *thr = json_object_get(req, "threads");
    if (!in || !outp || !mode || (strcmp(mode, "eager") && strcmp(mode, "graphed")) || (thr && !json_is_integer(thr))) {
        answer(id, 0, "run: needs in, out (strings), mode (eager or graphed) and threads (an integer)", NULL);
        return;
    }
    st_file fin, fout;
    st_init(&fout);
    nx_err e = {0};
    if (st_read(in, &fin, &e)) {
        answer(id, 0, e.msg, NULL);
        return;
    }
    char why[700];
    if (lib_call(pb, p, kernel, strcmp(mode, "graphed") == 0, thr ? (int)json_integer_value(thr) : 0, &fin, &fout,
                 why, sizeof why))
        answer(id, 0, why, NULL);
    else if (st_write_scratch(outp, &fout, &e))
        answer(id, 0, e.msg, NULL);
    else
        answer(id, 1, NULL, NULL);
    st_free(&fin);
    st_free(&fout);
}

int ext_host_main(const char *lib)
{
    /* stdout is the protocol's: what the library prints goes to stderr */
    int proto = dup(1);
    FILE *po = proto >= 0 ? fdopen(proto, "w") : NULL;
    if (!po || dup2(2, 1) < 0) {
        fprintf(stderr, "parity backend host: cannot set up stdout: %s\n", strerror(errno));
        return 3;
    }
    PROTO = po;
    void *h = NULL;
    char why[1024] = "";
    const parity_backend *pb = load(lib, &h, why, sizeof why);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_t *req = json_loads(line, 0, NULL);
        json_t *id = json_is_object(req) ? json_object_get(req, "id") : NULL;
        const char *op = json_is_object(req) ? json_string_value(json_object_get(req, "op")) : NULL;
        if (!op) {
            answer(id, 0, "not a request: a JSON object with \"op\" expected", NULL);
            json_decref(req);
            continue;
        }
        if (!strcmp(op, "bye")) {
            json_decref(req);
            break;
        }
        if (!strcmp(op, "hello") && !pb) {
            answer(id, 0, why, NULL); /* a library that does not load: the backend is broken */
        } else if (!strcmp(op, "hello")) {
            answer(id, 1, NULL,
                   json_pack("{s:i, s:s, s:b}", "abi", EXT_PROTOCOL, "name", pb && pb->name ? pb->name : "dlopen",
                             "threaded", pb ? pb->threaded != 0 : 0));
        } else if (!pb) {
            if (!strcmp(op, "available"))
                answer(id, 1, NULL, json_pack("{s:b, s:s}", "available", 0, "why", why));
            else
                answer(id, 0, why, NULL);
        } else if (!strcmp(op, "available")) {
            char w[512] = "";
            int ok = !pb->available || pb->available(w, sizeof w) != 0;
            w[sizeof w - 1] = 0;
            answer(id, 1, NULL, ok ? json_pack("{s:b}", "available", 1) : json_pack("{s:b, s:s}", "available", 0, "why", w));
        } else if (!strcmp(op, "describe")) {
            char buf[8192] = "{}";
            if (pb->describe && pb->describe(buf, sizeof buf) != 0)
                answer(id, 0, "describe failed", NULL);
            else {
                buf[sizeof buf - 1] = 0;
                json_t *d = json_loads(buf, 0, NULL);
                if (!json_is_object(d)) {
                    json_decref(d);
                    answer(id, 0, "describe: not a JSON object", NULL);
                } else
                    answer(id, 1, NULL, json_pack("{s:o}", "device", d));
            }
        } else {
            lib_point lp;
            char w[512];
            if (point_of_json(json_object_get(req, "point"), &lp, w, sizeof w)) {
                answer(id, 0, w, NULL);
                json_decref(req);
                continue;
            }
            json_t *kj = json_object_get(req, "kernel");
            const char *kernel = json_is_string(kj) ? json_string_value(kj) : lp.p.kernel;
            if (!strcmp(op, "supports")) {
                int yes = pb->supports(&lp.p, kernel) != 0;
                int nd = yes && pb->nondeterministic && pb->nondeterministic(&lp.p, kernel) != 0;
                answer(id, 1, NULL, json_pack("{s:b, s:b}", "supports", yes, "nondeterministic", nd));
            } else if (!strcmp(op, "check_params")) {
                w[0] = 0;
                if (pb->check_params && pb->check_params(&lp.p, kernel, w, sizeof w) != 0) {
                    w[sizeof w - 1] = 0;
                    answer(id, 0, w[0] ? w : "refused (no reason given)", NULL);
                } else
                    answer(id, 1, NULL, NULL);
            } else if (!strcmp(op, "run")) {
                host_run(pb, req, id, &lp.p, kernel);
            } else {
                snprintf(w, sizeof w, "unknown op '%s'", op);
                answer(id, 0, w, NULL);
            }
            point_free(&lp);
        }
        json_decref(req);
    }
    free(line);
    fflush(stdout);
    fclose(po);
    PROTO = NULL;
    return rc;
}
