/* famspec.c: building, querying and freeing resolved family points. */
#include "famspec.h"
#include "famdesc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void fam_spec_free(fam_spec *s)
{
    if (!s)
        return;
    free(s->family);
    free(s->point);
    free(s->class_name);
    free(s->kernel);
    free(s->hash);
    for (size_t i = 0; i < s->nparams; i++) {
        free(s->params[i].name);
        free(s->params[i].value);
    }
    free(s->params);
    for (size_t i = 0; i < s->nreds; i++) {
        free(s->reds[i].name);
        free(s->reds[i].tree_text);
        nx_point_free(&s->reds[i].point);
    }
    free(s->reds);
    for (size_t i = 0; i < s->nelems; i++) {
        free(s->elems[i].name);
        free(s->elems[i].approx);
    }
    free(s->elems);
    memset(s, 0, sizeof *s);
}

const char *fam_param_get(const fam_spec *s, const char *name)
{
    for (size_t i = 0; i < s->nparams; i++)
        if (strcmp(s->params[i].name, name) == 0)
            return s->params[i].value;
    return NULL;
}

nx_status fam_param_long(const fam_spec *s, const char *name, long *out, nx_err *err)
{
    const char *v = fam_param_get(s, name);
    if (!v)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' has no value (give it in the point or --shape)",
                          s->family ? s->family : "?", s->point ? s->point : "?", name);
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not an integer", s->family ? s->family : "?",
                          s->point ? s->point : "?", name, v);
    *out = x;
    return NX_OK;
}

nx_status fam_param_double(const fam_spec *s, const char *name, double *out, nx_err *err)
{
    const char *v = fam_param_get(s, name);
    if (!v)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' has no value", s->family ? s->family : "?",
                          s->point ? s->point : "?", name);
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not a finite number",
                          s->family ? s->family : "?", s->point ? s->point : "?", name, v);
    *out = x;
    return NX_OK;
}

const fam_reduction *fam_reduction_get(const fam_spec *s, const char *name)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (strcmp(s->reds[i].name, name) == 0)
            return &s->reds[i];
    return NULL;
}

const fam_elem *fam_elem_get(const fam_spec *s, const char *name)
{
    for (size_t i = 0; i < s->nelems; i++)
        if (strcmp(s->elems[i].name, name) == 0)
            return &s->elems[i];
    return NULL;
}

nx_status fam_spec_set_param(fam_spec *s, const char *name, const char *value, nx_err *err)
{
    for (size_t i = 0; i < s->nparams; i++) {
        if (strcmp(s->params[i].name, name) == 0) {
            char *v = dup(value);
            if (!v)
                return nx_err_set(err, NX_ENOMEM, "out of memory");
            free(s->params[i].value);
            s->params[i].value = v;
            return NX_OK;
        }
    }
    fam_param *p = realloc(s->params, (s->nparams + 1) * sizeof *p);
    if (!p)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    s->params = p;
    p[s->nparams].name = dup(name);
    p[s->nparams].value = dup(value);
    if (!p[s->nparams].name || !p[s->nparams].value) {
        free(p[s->nparams].name);
        free(p[s->nparams].value);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    s->nparams++;
    return NX_OK;
}

nx_status fam_spec_add_reduction(fam_spec *s, const char *name, nx_point *pt, const char *tree_text, nx_err *err)
{
    fam_reduction *r = realloc(s->reds, (s->nreds + 1) * sizeof *r);
    if (!r) {
        nx_point_free(pt);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    s->reds = r;
    r[s->nreds].name = dup(name);
    r[s->nreds].tree_text = dup(tree_text ? tree_text : "");
    r[s->nreds].point = *pt;
    memset(pt, 0, sizeof *pt);
    s->nreds++;
    if (!r[s->nreds - 1].name || !r[s->nreds - 1].tree_text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    return NX_OK;
}

nx_status fam_spec_add_elem(fam_spec *s, const char *name, fam_elem_impl impl, const char *approx, double ulp,
                            nx_err *err)
{
    fam_elem *e = realloc(s->elems, (s->nelems + 1) * sizeof *e);
    if (!e)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    s->elems = e;
    e[s->nelems].name = dup(name);
    e[s->nelems].impl = impl;
    e[s->nelems].approx = approx ? dup(approx) : NULL;
    e[s->nelems].ulp = ulp;
    s->nelems++;
    if (!e[s->nelems - 1].name)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    return NX_OK;
}

/* ---- typed readers ------------------------------------------------------ */

const char *fam_spec_family(const fam_spec *s)
{
    return s && s->family ? s->family : "?";
}

const char *fam_spec_point(const fam_spec *s)
{
    return s && s->point ? s->point : "?";
}

/* The param's text: its value, else the family's default (famdesc.h; an
 * "@OTHER" default is param OTHER's text), else NULL. */
static const char *text_of(const fam_spec *s, const char *name, char *buf, size_t n, int depth)
{
    const char *v = fam_param_get(s, name);
    if (v)
        return v;
    const char *d = fam_desc_default(s->family, name, buf, n);
    if (d && d[0] == '@') {
        char other[64];
        snprintf(other, sizeof other, "%s", d + 1);
        return depth < 4 ? text_of(s, other, buf, n, depth + 1) : NULL;
    }
    return d;
}

const char *fam_param_text(const fam_spec *s, const char *name, char *buf, size_t n)
{
    return text_of(s, name, buf, n, 0);
}

/* An absent param with no default anywhere. */
static nx_status no_value(const fam_spec *s, const char *name, nx_err *err)
{
    return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' has no value and the family no default (give it in the point)",
                      fam_spec_family(s), fam_spec_point(s), name);
}

nx_status fam_get_long(const fam_spec *s, const char *name, long def, long *out, nx_err *err)
{
    char buf[64];
    const char *v = text_of(s, name, buf, sizeof buf, 0);
    if (!v) {
        if (def == FAM_DEFAULT_LONG)
            return no_value(s, name, err);
        *out = def;
        return NX_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not an integer", fam_spec_family(s),
                          fam_spec_point(s), name, v);
    *out = x;
    return NX_OK;
}

nx_status fam_get_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err)
{
    char buf[64];
    if (!text_of(s, name, buf, sizeof buf, 0)) {
        if (def < 0)
            return nx_err_set(err, NX_EINVAL, "%s.%s: dimension '%s' has no value (give it with --shape %s=...)",
                              fam_spec_family(s), fam_spec_point(s), name, name);
        *out = def;
        return NX_OK;
    }
    nx_status st = fam_get_long(s, name, FAM_DEFAULT_LONG, out, err);
    if (st)
        return st;
    if (*out < 1 || *out > (1L << 30))
        return nx_err_set(err, NX_EINVAL, "%s.%s: dimension %s = %ld is outside [1, 2^30]", fam_spec_family(s),
                          fam_spec_point(s), name, *out);
    return NX_OK;
}

nx_status fam_get_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err)
{
    char buf[64];
    const char *v = text_of(s, name, buf, sizeof buf, 0);
    if (!v) {
        if (def == FAM_DEFAULT_BOOL)
            return no_value(s, name, err);
        *out = def;
    } else if (!strcmp(v, "true")) {
        *out = 1;
    } else if (!strcmp(v, "false")) {
        *out = 0;
    } else {
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not true or false", fam_spec_family(s),
                          fam_spec_point(s), name, v);
    }
    return NX_OK;
}

nx_status fam_get_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err)
{
    char buf[64];
    const char *v = text_of(s, name, buf, sizeof buf, 0);
    if (!v) {
        if ((int)def < 0)
            return no_value(s, name, err);
        *out = def;
        return NX_OK;
    }
    int f = nx_fmt_from_name(v);
    if (f < 0)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not a format of docs/numerics.md §1",
                          fam_spec_family(s), fam_spec_point(s), name, v);
    *out = (nx_fmt)f;
    return NX_OK;
}

nx_status fam_get_f32(const fam_spec *s, const char *name, const char *def, float *out, nx_err *err)
{
    char buf[64];
    const char *v = text_of(s, name, buf, sizeof buf, 0);
    if (!v)
        v = def;
    if (!v)
        return no_value(s, name, err);
    char *end;
    errno = 0;
    float x = strtof(v, &end); /* glibc: correctly rounded (rne), hex floats too */
    if (end == v || *end || !isfinite(x))
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not a finite fp32 number", fam_spec_family(s),
                          fam_spec_point(s), name, v);
    *out = x;
    return NX_OK;
}
