/* capture.c: the capture API of capture.h over trace_write.
 *
 * Every setter checks its argument at once with the trace format's own
 * grammar functions (trace.h), so an error names the call that caused it;
 * parity_capture_end then runs the full trace validation again through
 * trace_write before anything reaches the disk. */
#define _POSIX_C_SOURCE 200809L

#include "capture.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

struct parity_capture {
    char *path, *family, *point, *class_name, *kernel;
    json_t *device;        /* an object */
    char *shape, *params;  /* NULL until set */
    bool has_seed;
    uint64_t seed;
    char *dist;
    trace_mode mode;
    uint64_t run;
    char *batch, *created;
    st_file file;          /* the tensors, and "x." metadata */
    nx_err first;          /* the first error; code NX_OK while there is none */
};

/* Keeps e as the sticky error if it is the first, and returns its code. */
static nx_status keep(parity_capture *cap, const nx_err *e)
{
    if (cap->first.code == NX_OK)
        cap->first = *e;
    return e->code;
}

/* Sets and keeps an error in one step. */
#define CAP_FAIL(cap, e, code, ...) \
    (nx_err_set(&(e), (code), __VA_ARGS__), keep((cap), &(e)))

static nx_status null_cap(void)
{
    return NX_ENOMEM; /* begin ran out of memory; end says so */
}

/* Replaces *slot with a copy of v. */
static nx_status set_copy(parity_capture *cap, const char *call, char **slot,
                          const char *v)
{
    nx_err e;
    char *c = strdup(v);
    if (!c)
        return CAP_FAIL(cap, e, NX_ENOMEM, "%s: out of memory", call);
    free(*slot);
    *slot = c;
    return NX_OK;
}

/* "prefix,NAME=VALUE" (or "NAME=VALUE" when prefix is NULL), malloc'd. */
static char *append_kv(const char *prefix, const char *name, const char *value)
{
    size_t n = (prefix ? strlen(prefix) + 1 : 0) + strlen(name) + 1 +
               strlen(value) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s=%s", prefix ? prefix : "", prefix ? "," : "",
                 name, value);
    return s;
}

parity_capture *parity_capture_begin(const char *path, const char *family,
                                     const char *point, const char *class_name,
                                     const char *kernel)
{
    parity_capture *cap = calloc(1, sizeof *cap);
    if (!cap)
        return NULL;
    st_init(&cap->file);
    cap->mode = TRACE_EAGER;
    cap->device = json_object();
    if (!cap->device) {
        free(cap);
        return NULL;
    }
    nx_err e;
    const char *call = "parity_capture_begin";
    const struct {
        const char *what, *v;
        char **slot;
    } args[] = {
        {"path", path, &cap->path},
        {"family", family, &cap->family},
        {"point", point, &cap->point},
        {"class", class_name, &cap->class_name},
        {"kernel", kernel, &cap->kernel},
    };
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        if (!args[i].v) {
            CAP_FAIL(cap, e, NX_EINVAL, "%s: %s is NULL", call, args[i].what);
            continue;
        }
        if (i >= 1 && i <= 3 && !trace_is_name(args[i].v))
            CAP_FAIL(cap, e, NX_EINVAL, "%s: %s '%s' is not 1 to 128 "
                     "characters from [A-Za-z0-9_-]", call, args[i].what,
                     args[i].v);
        if (i == 4 && !trace_is_token(args[i].v))
            CAP_FAIL(cap, e, NX_EINVAL, "%s: kernel '%s' is not 1 to 256 "
                     "printable ASCII characters without spaces", call,
                     args[i].v);
        if (i == 0 && !*args[i].v)
            CAP_FAIL(cap, e, NX_EINVAL, "%s: path is empty", call);
        set_copy(cap, call, args[i].slot, args[i].v);
    }
    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = 0;
        parity_capture_device(cap, "host", host);
    }
    return cap;
}

nx_status parity_capture_device(parity_capture *cap, const char *key,
                                const char *value)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_device";
    if (!key || !value)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key or value is NULL", call);
    if (trace_device_member_kind(key) == 'i')
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: device member '%s' is an "
                        "integer (use parity_capture_device_int)", call, key);
    json_t *s = json_string(value);
    if (!s)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key '%s': value is not valid "
                        "UTF-8", call, key);
    if (json_object_set_new(cap->device, key, s))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key '%s' is not valid UTF-8",
                        call, key);
    return NX_OK;
}

nx_status parity_capture_device_int(parity_capture *cap, const char *key,
                                    long long value)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_device_int";
    if (!key)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key is NULL", call);
    if (trace_device_member_kind(key) == 's')
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: device member '%s' is a "
                        "string (use parity_capture_device)", call, key);
    if (trace_device_member_kind(key) == 'i' && value < 0)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: device member '%s' is %lld; "
                        "it must not be negative", call, key, value);
    if (json_object_set_new(cap->device, key, json_integer(value)))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key '%s' is not valid UTF-8",
                        call, key);
    return NX_OK;
}

/* Checks a whole shape string and stores it. */
static nx_status take_shape(parity_capture *cap, const char *call, char *s)
{
    nx_err e;
    trace_dim *d;
    size_t n;
    if (trace_parse_shape(s, &d, &n, &e)) {
        free(s);
        nx_err_prefix(&e, "%s: shape", call);
        return keep(cap, &e);
    }
    for (size_t i = 0; i < n; i++)
        free(d[i].name);
    free(d);
    free(cap->shape);
    cap->shape = s;
    return NX_OK;
}

nx_status parity_capture_shape(parity_capture *cap, const char *shape)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_shape";
    if (!shape)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: shape is NULL", call);
    char *s = strdup(shape);
    if (!s)
        return CAP_FAIL(cap, e, NX_ENOMEM, "%s: out of memory", call);
    return take_shape(cap, call, s);
}

nx_status parity_capture_dim(parity_capture *cap, const char *name,
                             long long value)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_dim";
    if (!name || !trace_is_tensor_name(name))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: dimension name '%s' is not "
                        "[A-Za-z_][A-Za-z0-9_]*", call, name ? name : "(null)");
    if (value < 0)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: dimension %s is %lld, "
                        "negative", call, name, value);
    char v[24];
    snprintf(v, sizeof v, "%lld", value);
    char *s = append_kv(cap->shape, name, v);
    if (!s)
        return CAP_FAIL(cap, e, NX_ENOMEM, "%s: out of memory", call);
    return take_shape(cap, call, s);
}

static nx_status take_params(parity_capture *cap, const char *call, char *s)
{
    nx_err e;
    trace_param *p;
    size_t n;
    if (trace_parse_params(s, &p, &n, &e)) {
        free(s);
        nx_err_prefix(&e, "%s: params", call);
        return keep(cap, &e);
    }
    for (size_t i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].value);
    }
    free(p);
    free(cap->params);
    cap->params = s;
    return NX_OK;
}

nx_status parity_capture_params(parity_capture *cap, const char *params)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_params";
    if (!params)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: params is NULL", call);
    char *s = strdup(params);
    if (!s)
        return CAP_FAIL(cap, e, NX_ENOMEM, "%s: out of memory", call);
    return take_params(cap, call, s);
}

nx_status parity_capture_param(parity_capture *cap, const char *name,
                               const char *value)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_param";
    if (!name || !value)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: name or value is NULL", call);
    char *s = append_kv(cap->params && *cap->params ? cap->params : NULL, name,
                        value);
    if (!s)
        return CAP_FAIL(cap, e, NX_ENOMEM, "%s: out of memory", call);
    return take_params(cap, call, s);
}

nx_status parity_capture_seed(parity_capture *cap, unsigned long long seed,
                              const char *dist)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_seed";
    if (!dist || !trace_is_token(dist))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: dist '%s' is not 1 to 256 "
                        "printable ASCII characters without spaces", call,
                        dist ? dist : "(null)");
    nx_status rc = set_copy(cap, call, &cap->dist, dist);
    if (rc)
        return rc;
    cap->has_seed = true;
    cap->seed = seed;
    return NX_OK;
}

nx_status parity_capture_mode(parity_capture *cap, const char *mode)
{
    if (!cap)
        return null_cap();
    nx_err e;
    if (mode && strcmp(mode, "eager") == 0)
        cap->mode = TRACE_EAGER;
    else if (mode && strcmp(mode, "graphed") == 0)
        cap->mode = TRACE_GRAPHED;
    else
        return CAP_FAIL(cap, e, NX_EINVAL, "parity_capture_mode: mode '%s' is "
                        "not 'eager' or 'graphed'", mode ? mode : "(null)");
    return NX_OK;
}

nx_status parity_capture_run(parity_capture *cap, unsigned long long run)
{
    if (!cap)
        return null_cap();
    cap->run = run;
    return NX_OK;
}

nx_status parity_capture_batch(parity_capture *cap, const char *batch)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_batch";
    if (!batch)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: batch is NULL", call);
    trace_batch_kind kind;
    int64_t *rows;
    size_t n;
    if (trace_parse_batch(batch, &kind, &rows, &n, &e)) {
        nx_err_prefix(&e, "%s: batch", call);
        return keep(cap, &e);
    }
    free(rows);
    return set_copy(cap, call, &cap->batch, batch);
}

nx_status parity_capture_batch_rows(parity_capture *cap, long long first,
                                    long long count)
{
    if (!cap)
        return null_cap();
    nx_err e;
    if (first < 0 || count < 1 || count - 1 > LLONG_MAX - first)
        return CAP_FAIL(cap, e, NX_EINVAL, "parity_capture_batch_rows: first "
                        "%lld, count %lld: need first >= 0 and count >= 1",
                        first, count);
    char b[64];
    if (count == 1)
        snprintf(b, sizeof b, "rows=%lld", first);
    else
        snprintf(b, sizeof b, "rows=%lld..%lld", first, first + count - 1);
    return parity_capture_batch(cap, b);
}

nx_status parity_capture_created(parity_capture *cap, const char *rfc3339)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_created";
    if (!rfc3339)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: time is NULL", call);
    if (trace_check_created(rfc3339, &e)) {
        nx_err_prefix(&e, "%s", call);
        return keep(cap, &e);
    }
    return set_copy(cap, call, &cap->created, rfc3339);
}

nx_status parity_capture_meta(parity_capture *cap, const char *key,
                              const char *value)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_meta";
    size_t xl = strlen(TRACE_EXT_PREFIX);
    if (!key || !value)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key or value is NULL", call);
    if (strncmp(key, TRACE_EXT_PREFIX, xl) != 0 || !key[xl])
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: key '%s' does not start with "
                        "'" TRACE_EXT_PREFIX "' (the trace format's own keys "
                        "have their own calls)", call, key);
    if (st_add_meta(&cap->file, key, value, &e)) {
        nx_err_prefix(&e, "%s", call);
        return keep(cap, &e);
    }
    return NX_OK;
}

static nx_status add_tensor(parity_capture *cap, const char *call,
                            const char *full, const char *dtype, int ndim,
                            const int64_t *shape, const void *host_ptr)
{
    nx_err e;
    st_dtype dt;
    if (!trace_dtype_from_name(dtype, &dt))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: tensor '%s': unknown dtype "
                        "'%s' (a safetensors name such as BF16 or a format "
                        "name such as bf16)", call, full,
                        dtype ? dtype : "(null)");
    if (ndim > 0 && !shape)
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: tensor '%s': shape is NULL",
                        call, full);
    st_tensor *t;
    if (st_add_tensor(&cap->file, full, dt, ndim, shape, &t, &e)) {
        nx_err_prefix(&e, "%s", call);
        return keep(cap, &e);
    }
    if (t->nbytes && !host_ptr) {
        /* The tensor just added is the last one: take it back. */
        free(t->name);
        free(t->data);
        cap->file.ntensors--;
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: tensor '%s': host_ptr is NULL",
                        call, full);
    }
    if (t->nbytes)
        memcpy(t->data, host_ptr, (size_t)t->nbytes);
    return NX_OK;
}

nx_status parity_capture_output(parity_capture *cap, const char *name,
                                const char *dtype, int ndim,
                                const int64_t *shape, const void *host_ptr)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_output";
    if (!name || !trace_is_tensor_name(name))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: output name '%s' is not "
                        "[A-Za-z_][A-Za-z0-9_]*", call, name ? name : "(null)");
    return add_tensor(cap, call, name, dtype, ndim, shape, host_ptr);
}

nx_status parity_capture_input(parity_capture *cap, const char *name,
                               const char *dtype, int ndim,
                               const int64_t *shape, const void *host_ptr)
{
    if (!cap)
        return null_cap();
    nx_err e;
    const char *call = "parity_capture_input";
    if (!name || !trace_is_tensor_name(name))
        return CAP_FAIL(cap, e, NX_EINVAL, "%s: input name '%s' is not "
                        "[A-Za-z_][A-Za-z0-9_]* (the '" TRACE_INPUT_PREFIX
                        "' prefix is added)", call, name ? name : "(null)");
    char full[160];
    snprintf(full, sizeof full, TRACE_INPUT_PREFIX "%s", name);
    return add_tensor(cap, call, full, dtype, ndim, shape, host_ptr);
}

void parity_capture_abort(parity_capture *cap)
{
    if (!cap)
        return;
    free(cap->path);
    free(cap->family);
    free(cap->point);
    free(cap->class_name);
    free(cap->kernel);
    json_decref(cap->device);
    free(cap->shape);
    free(cap->params);
    free(cap->dist);
    free(cap->batch);
    free(cap->created);
    st_free(&cap->file);
    free(cap);
}

nx_status parity_capture_end(parity_capture *cap, nx_err *err)
{
    if (!cap)
        return nx_err_set(err, NX_ENOMEM, "parity_capture_begin ran out of "
                          "memory: no trace written");
    const char *path = cap->path ? cap->path : "(no path)";
    nx_status rc;
    if (cap->first.code != NX_OK) {
        rc = nx_err_set(err, cap->first.code, "%s: not written: %s", path,
                        cap->first.msg);
        goto out;
    }
    const char *missing = !cap->shape ? "shape (parity_capture_shape or "
                                        "parity_capture_dim)"
                          : !cap->batch ? "batch (parity_capture_batch or "
                                          "parity_capture_batch_rows)"
                                        : NULL;
    if (missing) {
        rc = nx_err_set(err, NX_EINVAL, "%s: not written: no %s was set",
                        path, missing);
        goto out;
    }
    bool any_input = false;
    for (size_t i = 0; i < cap->file.ntensors; i++)
        any_input = any_input || trace_tensor_is_input(&cap->file.tensors[i]);
    if (!cap->has_seed && !any_input) {
        rc = nx_err_set(err, NX_EINVAL, "%s: not written: neither "
                        "parity_capture_seed nor parity_capture_input was "
                        "called, so the run's inputs cannot be reproduced",
                        path);
        goto out;
    }
    char *device = json_dumps(cap->device, JSON_COMPACT);
    if (!device) {
        rc = nx_err_set(err, NX_ENOMEM, "%s: not written: cannot encode the "
                        "device", path);
        goto out;
    }
    trace_info info = {
        .family = cap->family,
        .point = cap->point,
        .class_name = cap->class_name,
        .kernel = cap->kernel,
        .device = device,
        .shape = cap->shape,
        .params = cap->params,
        .has_seed = cap->has_seed,
        .seed = cap->seed,
        .dist = cap->dist,
        .mode = cap->mode,
        .run = cap->run,
        .batch = cap->batch,
        .created = cap->created,
        .producer = "parity_capture",
    };
    rc = trace_write(path, &info, &cap->file, err);
    free(device);
out:
    parity_capture_abort(cap);
    return rc;
}
