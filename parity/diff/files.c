/* files.c: the two sides of a diff as files (diff.h): traces, plain
 * safetensors and .npy arrays; which tensors are compared, in which order,
 * and the first that diverges. */
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diff_source_init(diff_source *s)
{
    memset(s, 0, sizeof *s);
    trace_init(&s->tr);
    st_init(&s->st);
    npy_init(&s->npy);
}

void diff_source_free(diff_source *s)
{
    trace_free(&s->tr);
    st_free(&s->st);
    npy_free(&s->npy);
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

nx_status diff_source_open(const char *path, const char *hint, diff_source *s, nx_err *err)
{
    diff_source_init(s);
    s->path = path;
    if (ends_with(path, ".npy")) {
        s->kind = DIFF_NPY;
        return npy_read(path, hint, &s->npy, err);
    }
    if (hint)
        return nx_err_set(err, NX_EINVAL, "%s: --dtype applies to a .npy file; a safetensors file names its dtypes",
                          path);
    nx_status st = st_read(path, &s->st, err);
    if (st)
        return st;
    if (st_get_meta(&s->st, "parity.trace")) {
        /* a trace: validated as one (the file moves into s->tr) */
        s->kind = DIFF_TRACE;
        st_file f = s->st;
        st_init(&s->st);
        return trace_from_st(path, &f, &s->tr, err);
    }
    s->kind = DIFF_SAFETENSORS;
    return NX_OK;
}

static const st_file *file_of(const diff_source *s)
{
    return s->kind == DIFF_TRACE ? &s->tr.file : &s->st;
}

/* The tensors of s to compare, in file order, into list (cap entries). */
static size_t default_tensors(const diff_source *s, const st_tensor **list, size_t cap)
{
    if (s->kind == DIFF_NPY) {
        list[0] = &s->npy.t;
        return 1;
    }
    const st_file *f = file_of(s);
    size_t n = 0;
    for (size_t i = 0; i < f->ntensors && n < cap; i++)
        if (s->kind != DIFF_TRACE || !trace_tensor_is_input(&f->tensors[i]))
            list[n++] = &f->tensors[i];
    return n;
}

static const char *what(const diff_source *s)
{
    return s->kind == DIFF_TRACE ? "outputs" : "tensors";
}

static void names_text(const st_tensor **l, size_t n, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && k + 8 < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s'%s'", i ? ", " : "", l[i]->name);
}

void diff_files_result_free(diff_files_result *r)
{
    if (!r)
        return;
    free(r->names);
    free(r->mismatched);
    free(r->n);
    diff_result_free(&r->detail);
    memset(r, 0, sizeof *r);
}

static const char *label(const diff_source *s, const st_tensor *t)
{
    return s->kind == DIFF_NPY ? "the array" : t->name;
}

typedef struct lrow {
    int64_t logical;
    size_t index;
} lrow;

static int lrow_cmp(const void *x, const void *y)
{
    const lrow *p = x, *q = y;
    return p->logical < q->logical ? -1 : p->logical > q->logical;
}

/* When two traces computed the same logical rows in other batch orders
 * (rows=0..3 and perm=3,2,1,0), B's tensor with its batch rows put in A's
 * order, in *copy (data malloc'd into *buf).  0: not aligned (why in
 * note). */
static int align_rows(const diff_source *a, const diff_source *b, const st_tensor *ta, const st_tensor *tb,
                      st_tensor *copy, uint8_t **buf, char *note, size_t cap)
{
    const trace *x = &a->tr, *y = &b->tr;
    snprintf(note, cap, "the batches differ (%.80s vs %.80s): batch rows are compared by position", x->batch,
             y->batch);
    if (ta->ndim < 1 || x->nrows != y->nrows || (size_t)ta->shape[0] != x->nrows || !x->nrows)
        return 0;
    uint64_t rowbits = ta->nelem / x->nrows * st_dtype_bits(ta->dtype);
    if (rowbits % 8)
        return 0;
    size_t rowbytes = (size_t)(rowbits / 8), n = x->nrows;
    lrow *lb = malloc(n * sizeof *lb);
    *buf = malloc(tb->nbytes ? (size_t)tb->nbytes : 1);
    if (!lb || !*buf) {
        free(lb);
        free(*buf);
        *buf = NULL;
        return 0;
    }
    for (size_t j = 0; j < n; j++)
        lb[j] = (lrow){y->rows[j], j};
    qsort(lb, n, sizeof *lb, lrow_cmp);
    for (size_t i = 0; i < n; i++) {
        lrow key = {x->rows[i], 0};
        const lrow *m = bsearch(&key, lb, n, sizeof *lb, lrow_cmp);
        if (!m) {
            snprintf(note, cap, "the batches hold other logical rows (%.80s vs %.80s): batch rows are compared by "
                     "position", x->batch, y->batch);
            free(lb);
            free(*buf);
            *buf = NULL;
            return 0;
        }
        memcpy(*buf + i * rowbytes, tb->data + m->index * rowbytes, rowbytes);
    }
    free(lb);
    *copy = *tb;
    copy->data = *buf;
    copy->owns_data = false;
    snprintf(note, cap, "the batches differ (%.80s vs %.80s): B's rows are taken in A's order of logical rows, "
             "rows are A's batch rows", x->batch, y->batch);
    return 1;
}

nx_status diff_files(diff_source *a, diff_source *b, const char *tensor, size_t max_list,
                     diff_files_result *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_diverging = SIZE_MAX;
    size_t cap = 1;
    if (a->kind != DIFF_NPY && file_of(a)->ntensors > cap)
        cap = file_of(a)->ntensors;
    if (b->kind != DIFF_NPY && file_of(b)->ntensors > cap)
        cap = file_of(b)->ntensors;
    const st_tensor **la = calloc(cap, sizeof *la), **lb = calloc(cap, sizeof *lb);
    nx_status st = NX_OK;
    size_t na = 0, nb = 0;
    if (!la || !lb) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if (tensor) {
        /* one tensor, by name, of each side that holds several */
        diff_source *s[2] = {a, b};
        const st_tensor **l[2] = {la, lb};
        size_t *n[2] = {&na, &nb};
        for (int k = 0; k < 2; k++) {
            if (s[k]->kind == DIFF_NPY) {
                l[k][0] = &s[k]->npy.t;
                *n[k] = 1;
                continue;
            }
            const st_tensor *t = st_find(file_of(s[k]), tensor);
            if (!t) {
                const st_tensor *all[64];
                size_t m = 0;
                for (size_t i = 0; i < file_of(s[k])->ntensors && m < 64; i++)
                    all[m++] = &file_of(s[k])->tensors[i];
                char names[512];
                names_text(all, m, names, sizeof names);
                st = nx_err_set(err, NX_EINVAL, "%s: no tensor '%s' (it holds %s)", s[k]->path, tensor, names);
                goto done;
            }
            l[k][0] = t;
            *n[k] = 1;
        }
    } else {
        na = default_tensors(a, la, cap);
        nb = default_tensors(b, lb, cap);
        /* a single array against a file of one output/tensor */
        if ((a->kind == DIFF_NPY && nb != 1) || (b->kind == DIFF_NPY && na != 1)) {
            const diff_source *s = a->kind == DIFF_NPY ? b : a;
            char names[512];
            names_text(a->kind == DIFF_NPY ? lb : la, a->kind == DIFF_NPY ? nb : na, names, sizeof names);
            st = nx_err_set(err, NX_EINVAL, "%s holds %zu %s (%s) and %s one array: name the tensor with --tensor",
                            s->path, a->kind == DIFF_NPY ? nb : na, what(s), names,
                            a->kind == DIFF_NPY ? a->path : b->path);
            goto done;
        }
        int by_name = a->kind != DIFF_NPY && b->kind != DIFF_NPY;
        int same = na == nb;
        for (size_t i = 0; same && by_name && i < na; i++)
            same = strcmp(la[i]->name, lb[i]->name) == 0;
        if (!same || !na) {
            char n1[512], n2[512];
            names_text(la, na, n1, sizeof n1);
            names_text(lb, nb, n2, sizeof n2);
            st = nx_err_set(err, NX_EINVAL, "%s has %s %s; %s has %s %s: not the same tensors in the same order "
                            "(name one with --tensor)", a->path, what(a), na ? n1 : "none", b->path, what(b),
                            nb ? n2 : "none");
            goto done;
        }
    }
    /* shapes and dtypes, all before any comparison */
    for (size_t i = 0; i < na; i++) {
        char sa[160], sb[160];
        diff_shape_text(la[i]->ndim, la[i]->shape, sa, sizeof sa);
        diff_shape_text(lb[i]->ndim, lb[i]->shape, sb, sizeof sb);
        if (strcmp(sa, sb) != 0) {
            st = nx_err_set(err, NX_EINVAL, "shapes differ: %s: tensor '%s' has shape %s; %s: tensor '%s' has shape %s",
                            a->path, label(a, la[i]), sa, b->path, label(b, lb[i]), sb);
            goto done;
        }
        if (la[i]->dtype != lb[i]->dtype) {
            st = nx_err_set(err, NX_EINVAL,
                            "dtypes differ: %s: tensor '%s' is %s %s; %s: tensor '%s' is %s %s (diff compares "
                            "outputs of one format)", a->path, label(a, la[i]), st_dtype_name(la[i]->dtype), sa,
                            b->path, label(b, lb[i]), st_dtype_name(lb[i]->dtype), sb);
            goto done;
        }
    }
    out->ntensors = na;
    out->names = calloc(na, sizeof *out->names);
    out->mismatched = calloc(na, sizeof *out->mismatched);
    out->n = calloc(na, sizeof *out->n);
    if (!out->names || !out->mismatched || !out->n) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    diff_context ctx = {a->kind == DIFF_TRACE ? &a->tr : NULL, b->kind == DIFF_TRACE ? &b->tr : NULL, max_list};
    for (size_t i = 0; i < na; i++) {
        if (strcmp(la[i]->name, lb[i]->name) == 0 || a->kind == DIFF_NPY || b->kind == DIFF_NPY)
            snprintf(out->names[i], sizeof out->names[i], "%s", a->kind == DIFF_NPY ? lb[i]->name : la[i]->name);
        else
            snprintf(out->names[i], sizeof out->names[i], "%.70s vs %.70s", la[i]->name, lb[i]->name);
        diff_result r;
        st_tensor copy;
        uint8_t *buf = NULL;
        char note[512] = "";
        const st_tensor *tbi = lb[i];
        if (a->kind == DIFF_TRACE && b->kind == DIFF_TRACE && strcmp(a->tr.batch, b->tr.batch) != 0 &&
            align_rows(a, b, la[i], lb[i], &copy, &buf, note, sizeof note))
            tbi = &copy;
        st = diff_tensors(la[i], tbi, &ctx, &r, err);
        free(buf);
        if (!st)
            snprintf(r.note, sizeof r.note, "%s", note);
        if (st) {
            nx_err_prefix(err, "%s vs %s: tensor '%s'", a->path, b->path, out->names[i]);
            goto done;
        }
        out->mismatched[i] = r.mismatched;
        out->n[i] = r.n;
        int take = !out->detail_valid || (r.mismatched && out->first_diverging == SIZE_MAX);
        if (r.mismatched && out->first_diverging == SIZE_MAX)
            out->first_diverging = i;
        if (take) {
            if (out->detail_valid)
                diff_result_free(&out->detail);
            out->detail = r;
            out->detail_valid = 1;
            snprintf(out->detail.name_a, sizeof out->detail.name_a, "%s", out->names[i]);
        } else {
            diff_result_free(&r);
        }
    }
done:
    free(la);
    free(lb);
    if (st)
        diff_files_result_free(out);
    return st;
}
