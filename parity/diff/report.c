/* report.c: a diff as text and as one JSON object (diff.h); the JSON holds
 * the same facts as the text. */
#include "diff.h"
#include "compare.h"
#include "nx_format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *s, const char *fmt, ...)
{
    if (s->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    if (!s->p || s->len + (size_t)w + 1 > s->cap) {
        size_t cap = (s->cap ? s->cap : 1024);
        while (cap < s->len + (size_t)w + 1)
            cap *= 2;
        char *q = realloc(s->p, cap);
        if (!q) {
            s->oom = 1;
            return;
        }
        s->p = q;
        s->cap = cap;
        va_start(ap, fmt);
        vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
    }
    s->len += (size_t)w;
}

static const char *kind_name(int kind)
{
    return kind == DIFF_TRACE ? "trace" : kind == DIFF_NPY ? "npy" : "safetensors";
}

static void bits_text(const diff_result *r, uint64_t bits, char *buf, size_t cap)
{
    int digits = (int)((st_dtype_bits(r->dtype) + 3) / 4);
    snprintf(buf, cap, "0x%0*llx", digits, (unsigned long long)bits);
}

static void value_text(const diff_result *r, double v, uint64_t bits, char *buf, size_t cap)
{
    if (r->fmt < 0)
        snprintf(buf, cap, "%lld", (long long)bits);
    else if (isnan(v))
        snprintf(buf, cap, "nan");
    else if (isinf(v))
        snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    else
        snprintf(buf, cap, "%a", v);
}

static void index_text(const diff_result *r, size_t i, char *buf, size_t cap)
{
    cmp_format_index(buf, cap, i, r->ndim, r->shape, CMP_INDEX_BRACKETS);
}

static void elem_text(sbuf *s, const diff_result *r, const diff_elem *e)
{
    char ix[160], ha[24], hb[24], va[48], vb[48];
    index_text(r, e->index, ix, sizeof ix);
    bits_text(r, e->a_bits, ha, sizeof ha);
    bits_text(r, e->b_bits, hb, sizeof hb);
    value_text(r, e->a, e->a_bits, va, sizeof va);
    value_text(r, e->b, e->b_bits, vb, sizeof vb);
    sb_add(s, "%s (flat %zu): A %s (%s), B %s (%s)", ix, e->index, ha, va, hb, vb);
    if (e->has_ulp)
        sb_add(s, ", %llu ulp", (unsigned long long)e->ulp);
    else if (r->fmt >= 0)
        sb_add(s, ", nan/inf");
}

/* Indices of an axis that differ, as ranges "0..3, 8, 12..15", at most max
 * ranges. */
static void ranges_text(sbuf *s, const diff_axis *x, size_t max)
{
    size_t nr = 0, left = 0;
    for (int64_t i = 0; i < x->extent; i++) {
        if (!x->count[i])
            continue;
        int64_t j = i;
        while (j + 1 < x->extent && x->count[j + 1])
            j++;
        if (nr < max) {
            if (j == i)
                sb_add(s, "%s%lld", nr ? ", " : "", (long long)i);
            else
                sb_add(s, "%s%lld..%lld", nr ? ", " : "", (long long)i, (long long)j);
        } else {
            left += (size_t)(j - i + 1);
        }
        nr++;
        i = j;
    }
    if (left)
        sb_add(s, ", ... (%zu more)", left);
}

static void num_text(double v, char *buf, size_t cap)
{
    cmp_num_text(buf, cap, v);
}

char *diff_files_text(const diff_source *a, const diff_source *b, const diff_files_result *fr)
{
    sbuf s = {0};
    const diff_result *r = &fr->detail;
    sb_add(&s, "A: %s (%s)\nB: %s (%s)\n", a->path, kind_name(a->kind), b->path, kind_name(b->kind));
    if (fr->ntensors > 1) {
        sb_add(&s, "tensors, in order:");
        for (size_t i = 0; i < fr->ntensors; i++)
            sb_add(&s, "%s '%s' %s (%zu / %zu)", i ? "," : "", fr->names[i], fr->mismatched[i] ? "differs" : "identical",
                   fr->mismatched[i], fr->n[i]);
        sb_add(&s, "\n");
        if (fr->first_diverging != SIZE_MAX)
            sb_add(&s, "first diverging tensor: '%s' (%zu of %zu)\n", fr->names[fr->first_diverging],
                   fr->first_diverging + 1, fr->ntensors);
    }
    char shp[160];
    diff_shape_text(r->ndim, r->shape, shp, sizeof shp);
    double pct = r->n ? 100.0 * (double)r->mismatched / (double)r->n : 0;
    sb_add(&s, "tensor '%s' %s %s: %zu / %zu elements differ (%.3g%%)\n", r->name_a, st_dtype_name(r->dtype), shp,
           r->mismatched, r->n, pct);
    if (r->note[0])
        sb_add(&s, "note: %s\n", r->note);
    if (!r->mismatched) {
        sb_add(&s, "identical: every bit equal\n");
        return s.oom ? (free(s.p), NULL) : s.p;
    }
    if (r->fmt >= 0) {
        sb_add(&s, "ulp histogram (%s):", nx_format((nx_fmt)r->fmt)->name);
        for (int k = 0; k < DIFF_H_NBUCKETS; k++)
            sb_add(&s, "%s %s: %zu", k ? "," : "", diff_bucket_name(k), r->hist[k]);
        sb_add(&s, "\n");
        if (r->zero_sign || r->nan_mismatch || r->inf_mismatch)
            sb_add(&s, "specials: %zu -0 vs +0, %zu with a NaN, %zu with an infinity\n", r->zero_sign, r->nan_mismatch,
                   r->inf_mismatch);
    } else {
        sb_add(&s, "ulp histogram: none (%s is not a floating-point format); bits compared\n",
               st_dtype_name(r->dtype));
    }
    sb_add(&s, "first: ");
    elem_text(&s, r, &r->first);
    sb_add(&s, "\nworst: ");
    elem_text(&s, r, &r->worst);
    sb_add(&s, "\n");
    if (r->has_err) {
        char v1[40], v2[40], i1[160], i2[160];
        num_text(r->max_abs, v1, sizeof v1);
        num_text(r->max_rel, v2, sizeof v2);
        index_text(r, r->max_abs_index, i1, sizeof i1);
        index_text(r, r->max_rel_index, i2, sizeof i2);
        sb_add(&s, "max abs error: %s at %s; max rel error: %s at %s (|B - A|, |B - A| / |A|, finite pairs)\n", v1, i1,
               v2, i2);
    }
    for (int d = 0; d < r->naxes; d++) {
        const diff_axis *x = &r->axes[d];
        char pat[1024];
        diff_pattern_text(&x->pat, x->unit, x->units, pat, sizeof pat);
        sb_add(&s, "%s", x->units);
        if (x->dim[0])
            sb_add(&s, " (%s)", x->dim);
        sb_add(&s, ": %zu of %lld differ: ", x->pat.ndiff, (long long)x->extent);
        ranges_text(&s, x, r->max_list);
        sb_add(&s, "%s%s\n", pat[0] ? " -- " : "", pat);
    }
    for (int g = 0; g < r->ngroups; g++) {
        const diff_group *gr = &r->groups[g];
        if (gr->note[0]) {
            sb_add(&s, "%s: %s\n", gr->units, gr->note);
            continue;
        }
        size_t touched = 0, all = 0;
        for (size_t i = 0; i < gr->nitems; i++) {
            touched += gr->ndiff[i] > 0;
            all += gr->ndiff[i] > 0 && gr->ndiff[i] == gr->ntotal[i];
        }
        sb_add(&s, "%s (%s): %zu of %zu touched by a difference", gr->units, gr->source, touched, gr->nitems);
        size_t listed = 0;
        for (size_t i = 0; i < gr->nitems; i++) {
            if (!gr->ndiff[i])
                continue;
            if (listed++ >= r->max_list) {
                sb_add(&s, ", ...");
                break;
            }
            sb_add(&s, "%s %zu (%zu of %zu %s differ)", listed == 1 ? ":" : ",", i, gr->ndiff[i], gr->ntotal[i],
                   gr->users);
        }
        sb_add(&s, "\n");
        if (all && all < touched)
            sb_add(&s, "%s all of whose %s differ: %zu\n", gr->units, gr->users, all);
    }
    sb_add(&s, "differing elements (first %zu of %zu):\n", r->nlist, r->mismatched);
    for (size_t i = 0; i < r->nlist; i++) {
        sb_add(&s, "  ");
        elem_text(&s, r, &r->list[i]);
        sb_add(&s, "\n");
    }
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    return s.p;
}

/* --- JSON -------------------------------------------------------------------------- */

static json_t *jnum(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *jindex(const diff_result *r, size_t i)
{
    json_t *a = json_array();
    size_t rem = i;
    int64_t idx[ST_MAX_NDIM];
    for (int d = r->ndim - 1; d >= 0; d--) {
        idx[d] = r->shape[d] ? (int64_t)(rem % (size_t)r->shape[d]) : 0;
        rem = r->shape[d] ? rem / (size_t)r->shape[d] : 0;
    }
    for (int d = 0; d < r->ndim; d++)
        json_array_append_new(a, json_integer(idx[d]));
    return a;
}

static json_t *jside(const diff_result *r, uint64_t bits, double v)
{
    char h[24], t[48];
    bits_text(r, bits, h, sizeof h);
    value_text(r, v, bits, t, sizeof t);
    return json_pack("{s:s, s:s}", "bits", h, "value", t);
}

static json_t *jelem(const diff_result *r, const diff_elem *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "index", jindex(r, e->index));
    json_object_set_new(o, "flat_index", json_integer((json_int_t)e->index));
    json_object_set_new(o, "a", jside(r, e->a_bits, e->a));
    json_object_set_new(o, "b", jside(r, e->b_bits, e->b));
    json_object_set_new(o, "ulp", e->has_ulp ? json_integer((json_int_t)e->ulp) : json_null());
    return o;
}

json_t *diff_files_json(const diff_source *a, const diff_source *b, const diff_files_result *fr)
{
    const diff_result *r = &fr->detail;
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "a", json_pack("{s:s, s:s}", "path", a->path, "kind", kind_name(a->kind)));
    json_object_set_new(o, "b", json_pack("{s:s, s:s}", "path", b->path, "kind", kind_name(b->kind)));
    json_object_set_new(o, "identical", json_boolean(fr->first_diverging == SIZE_MAX));
    json_t *ts = json_array();
    for (size_t i = 0; i < fr->ntensors; i++)
        json_array_append_new(ts, json_pack("{s:s, s:I, s:I}", "name", fr->names[i], "mismatched",
                                            (json_int_t)fr->mismatched[i], "n", (json_int_t)fr->n[i]));
    json_object_set_new(o, "tensors", ts);
    json_object_set_new(o, "first_diverging",
                        fr->first_diverging == SIZE_MAX ? json_null() : json_string(fr->names[fr->first_diverging]));
    json_object_set_new(o, "tensor", json_string(r->name_a));
    json_object_set_new(o, "dtype", json_string(st_dtype_name(r->dtype)));
    json_object_set_new(o, "format", r->fmt >= 0 ? json_string(nx_format((nx_fmt)r->fmt)->name) : json_null());
    json_t *sh = json_array();
    for (int d = 0; d < r->ndim; d++)
        json_array_append_new(sh, json_integer(r->shape[d]));
    json_object_set_new(o, "shape", sh);
    json_object_set_new(o, "mismatched", json_integer((json_int_t)r->mismatched));
    json_object_set_new(o, "n", json_integer((json_int_t)r->n));
    if (r->fmt >= 0) {
        json_t *h = json_object();
        for (int k = 0; k < DIFF_H_NBUCKETS; k++)
            json_object_set_new(h, diff_bucket_name(k), json_integer((json_int_t)r->hist[k]));
        json_object_set_new(o, "ulp_histogram", h);
    } else {
        json_object_set_new(o, "ulp_histogram", json_null());
    }
    json_object_set_new(o, "zero_sign", json_integer((json_int_t)r->zero_sign));
    json_object_set_new(o, "nan_mismatch", json_integer((json_int_t)r->nan_mismatch));
    json_object_set_new(o, "inf_mismatch", json_integer((json_int_t)r->inf_mismatch));
    if (r->mismatched) {
        json_object_set_new(o, "first", jelem(r, &r->first));
        json_object_set_new(o, "worst", jelem(r, &r->worst));
    } else {
        json_object_set_new(o, "first", json_null());
        json_object_set_new(o, "worst", json_null());
    }
    if (r->has_err) {
        json_object_set_new(o, "max_abs", json_pack("{s:o, s:o}", "value", jnum(r->max_abs), "index",
                                                    jindex(r, r->max_abs_index)));
        json_object_set_new(o, "max_rel", json_pack("{s:o, s:o}", "value", jnum(r->max_rel), "index",
                                                    jindex(r, r->max_rel_index)));
    }
    json_t *ax = json_array();
    for (int d = 0; d < r->naxes; d++) {
        const diff_axis *x = &r->axes[d];
        json_t *jx = json_object();
        json_object_set_new(jx, "axis", json_integer(d));
        json_object_set_new(jx, "units", json_string(x->units));
        json_object_set_new(jx, "dim", x->dim[0] ? json_string(x->dim) : json_null());
        json_object_set_new(jx, "extent", json_integer(x->extent));
        json_t *idx = json_array();
        for (int64_t i = 0; i < x->extent; i++)
            if (x->count[i])
                json_array_append_new(idx, json_pack("[I, I]", (json_int_t)i, (json_int_t)x->count[i]));
        json_object_set_new(jx, "differing", idx);
        json_object_set_new(jx, "pattern", diff_pattern_json(&x->pat));
        char pat[1024];
        diff_pattern_text(&x->pat, x->unit, x->units, pat, sizeof pat);
        json_object_set_new(jx, "pattern_text", json_string(pat));
        json_array_append_new(ax, jx);
    }
    json_object_set_new(o, "axes", ax);
    json_t *gs = json_array();
    for (int g = 0; g < r->ngroups; g++) {
        const diff_group *gr = &r->groups[g];
        json_t *jg = json_object();
        json_object_set_new(jg, "units", json_string(gr->units));
        json_object_set_new(jg, "users", json_string(gr->users));
        if (gr->note[0]) {
            json_object_set_new(jg, "note", json_string(gr->note));
        } else {
            json_object_set_new(jg, "source", json_string(gr->source));
            json_t *it = json_array();
            for (size_t i = 0; i < gr->nitems; i++)
                if (gr->ndiff[i])
                    json_array_append_new(it, json_pack("{s:I, s:I, s:I}", "id", (json_int_t)i, "differing",
                                                        (json_int_t)gr->ndiff[i], "users", (json_int_t)gr->ntotal[i]));
            json_object_set_new(jg, "touched", it);
        }
        json_array_append_new(gs, jg);
    }
    json_object_set_new(o, "groups", gs);
    json_t *el = json_array();
    for (size_t i = 0; i < r->nlist; i++)
        json_array_append_new(el, jelem(r, &r->list[i]));
    json_object_set_new(o, "elements", el);
    json_object_set_new(o, "note", r->note[0] ? json_string(r->note) : json_null());
    return o;
}
