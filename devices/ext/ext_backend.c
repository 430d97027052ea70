/* ext_backend.c: the table of out-of-tree backends opened in this process
 * (one per kind, target and class folder, kept until exit), the point as
 * the protocol's JSON, and where a library named by a class is found. */
#include "ext_backend.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ext_entry {
    ext_kind kind;
    int in_process;
    char *target, *dir;
    dev_backend *be;
} ext_entry;

static ext_entry *TABLE;
static size_t NTABLE;
static double TIMEOUT_OVERRIDE;
static int AT_EXIT;

void ext_put(char *dst, size_t len, const char *src)
{
    if (!dst || !len)
        return;
    size_t n = strlen(src);
    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

void ext_set_timeout(double seconds)
{
    TIMEOUT_OVERRIDE = seconds > 0 ? seconds : 0;
    for (size_t i = 0; i < NTABLE; i++)
        if (TABLE[i].kind == EXT_SERVE || !TABLE[i].in_process)
            ext_serve_set_timeout(TABLE[i].be, TIMEOUT_OVERRIDE);
}

void ext_close_all(void)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (TABLE[i].kind == EXT_SERVE || !TABLE[i].in_process)
            ext_serve_close(TABLE[i].be);
}

static void at_exit(void)
{
    ext_close_all();
}

char *ext_lib_path(const char *target, const char *dir)
{
    char buf[PATH_MAX];
    if (strchr(target, '/')) {
        if (target[0] == '/' || !dir)
            return strdup(target);
        size_t len = strlen(dir) + strlen(target) + 2;
        char *p = malloc(len);
        if (p)
            snprintf(p, len, "%s/%s", dir, target);
        return p;
    }
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        char *slash = strrchr(buf, '/');
        if (slash && (size_t)(slash - buf) + 1 + strlen(target) < sizeof buf) {
            strcpy(slash + 1, target);
            if (access(buf, R_OK) == 0)
                return strdup(buf);
        }
    }
    return strdup(target);
}

/* A word quoted for /bin/sh. */
static void sh_quote(char *out, size_t cap, const char *s)
{
    size_t k = 0;
    if (k + 1 < cap)
        out[k++] = '\'';
    for (; *s && k + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else
            out[k++] = *s;
    }
    if (k + 1 < cap)
        out[k++] = '\'';
    out[k] = 0;
}

nx_status ext_open(const ext_spec *s, const dev_backend **out, nx_err *err)
{
    *out = NULL;
    const char *dir = s->dir ? s->dir : ".";
    int inproc = s->kind == EXT_DLOPEN && s->in_process;
    for (size_t i = 0; i < NTABLE; i++)
        if (TABLE[i].kind == s->kind && TABLE[i].in_process == inproc && strcmp(TABLE[i].target, s->target) == 0 &&
            strcmp(TABLE[i].dir, dir) == 0) {
            *out = TABLE[i].be;
            return NX_OK;
        }
    ext_entry *t = realloc(TABLE, (NTABLE + 1) * sizeof *t);
    if (!t)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    TABLE = t;
    ext_entry *e = &TABLE[NTABLE];
    memset(e, 0, sizeof *e);
    e->kind = s->kind;
    e->in_process = inproc;
    e->target = strdup(s->target);
    e->dir = strdup(dir);
    char label[512];
    nx_status st = NX_OK;
    if (!e->target || !e->dir) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    } else if (s->kind == EXT_SERVE) {
        snprintf(label, sizeof label, "class %.64s: backend serve '%.400s'", s->cls ? s->cls : "?", s->target);
        st = ext_serve_new(s->target, dir, label, s->timeout_s, &e->be, err);
    } else {
        char *lib = ext_lib_path(s->target, dir);
        snprintf(label, sizeof label, "class %.64s: backend dlopen '%.400s'", s->cls ? s->cls : "?", s->target);
        if (!lib) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        } else if (inproc) {
            st = ext_dlopen_new(lib, label, &e->be, err);
        } else {
            /* the library in a child: this executable hosts it
             * (`parity backend host LIB`) over the served protocol */
            char exe[PATH_MAX], qe[2 * PATH_MAX + 8], ql[2 * PATH_MAX + 8];
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            sh_quote(qe, sizeof qe, n > 0 ? exe : "parity");
            sh_quote(ql, sizeof ql, lib);
            size_t len = strlen(qe) + strlen(ql) + 32;
            char *cmd = malloc(len);
            if (!cmd) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
            } else {
                snprintf(cmd, len, "exec %s backend host %s", qe, ql);
                st = ext_serve_new(cmd, dir, label, s->timeout_s, &e->be, err);
                free(cmd);
            }
        }
        free(lib);
    }
    if (st) {
        free(e->target);
        free(e->dir);
        return st;
    }
    NTABLE++;
    if (TIMEOUT_OVERRIDE > 0 && (e->kind == EXT_SERVE || !e->in_process))
        ext_serve_set_timeout(e->be, TIMEOUT_OVERRIDE);
    if (!AT_EXIT) {
        atexit(at_exit);
        AT_EXIT = 1;
    }
    *out = e->be;
    return NX_OK;
}

int ext_broken(const dev_backend *b, char *why, size_t len)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (TABLE[i].be == b)
            return TABLE[i].kind == EXT_DLOPEN && TABLE[i].in_process ? ext_dlopen_broken(b, why, len)
                                                                      : ext_serve_broken(b, why, len);
    return 0;
}

json_t *ext_point_json(const fam_spec *s)
{
    json_t *params = json_object(), *reds = json_object();
    for (size_t i = 0; params && i < s->nparams; i++)
        json_object_set_new(params, s->params[i].name, json_string(s->params[i].value ? s->params[i].value : ""));
    json_t *nums = json_object();
    for (size_t i = 0; reds && i < s->nreds; i++) {
        json_object_set_new(reds, s->reds[i].name, json_string(s->reds[i].tree_text ? s->reds[i].tree_text : ""));
        /* the whole point of the reduction (acc, fma, out, rounding, ...):
         * the campaign's power variants change more than the tree */
        char *txt = nx_point_print(&s->reds[i].point);
        if (txt && nums)
            json_object_set_new(nums, s->reds[i].name, json_string(txt));
        free(txt);
    }
    json_t *o = json_object();
    if (!o || !params || !reds || !nums) {
        json_decref(o);
        json_decref(params);
        json_decref(reds);
        json_decref(nums);
        return NULL;
    }
    json_object_set_new(o, "family", json_string(s->family ? s->family : ""));
    json_object_set_new(o, "point", json_string(s->point ? s->point : ""));
    json_object_set_new(o, "class", json_string(s->class_name ? s->class_name : ""));
    json_object_set_new(o, "kernel", s->kernel ? json_string(s->kernel) : json_null());
    json_object_set_new(o, "hash", json_string(s->hash ? s->hash : ""));
    json_object_set_new(o, "params", params);
    json_object_set_new(o, "reductions", reds);
    json_object_set_new(o, "numerics", nums);
    return o;
}
