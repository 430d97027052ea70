/* rows_input.c: the rows a reduction reads from a safetensors file
 * (docs/numerics.md §6): 'a' [rows, n], optional 'b' and 'c', checked for
 * shape and dtype and against the limits on sizes from inputs
 * (docs/limits.md) before anything is allocated for them.  `parity
 * reduce`, `parity fit` and `parity check --numerics` read their inputs
 * through these checks. */
#include "rows_input.h"
#include "nx_limits.h"
#include "rows.h"

#include <stdio.h>
#include <string.h>

/* A tensor's shape as text, "[2, 3]". */
static const char *shape_text(const st_tensor *t, char *buf, size_t cap)
{
    size_t l = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->ndim && l < cap; d++)
        l += (size_t)snprintf(buf + l, cap - l, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (l < cap)
        snprintf(buf + l, cap - l, "]");
    return buf;
}

/* Checks IN's tensors: 'a' [rows, n], optional 'b' of the same shape, nothing else
 * (also `parity check --numerics`, cmd_check_numerics.c). */
nx_status rows_check_inputs(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                              nx_err *err)
{
    return rows_check_inputs_c(path, f, a, b, NULL, err);
}

/* The same; c != NULL also accepts the accumulator input 'c' of shape [rows]
 * (docs/numerics.md §6), *c = NULL when IN has none.  The limits are
 * counted for a caller that decodes every element (fit, check --numerics). */
nx_status rows_check_inputs_c(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                                const st_tensor **c, nx_err *err)
{
    return rows_check_inputs_as(path, f, a, b, c, 1, err);
}

nx_status rows_check_inputs_as(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                               const st_tensor **c, int whole, nx_err *err)
{
    *a = st_find(f, "a");
    *b = st_find(f, "b");
    if (c)
        *c = st_find(f, "c");
    for (size_t i = 0; i < f->ntensors; i++) {
        const char *nm = f->tensors[i].name;
        if (strcmp(nm, "a") != 0 && strcmp(nm, "b") != 0 && !(c && strcmp(nm, "c") == 0))
            return nx_err_set(err, NX_EINVAL, "%s: unexpected tensor '%s' (expected 'a' and, for a dot product, 'b'%s)",
                              path, nm, c ? "; optionally 'c' of shape [rows]" : "");
    }
    if (!*a)
        return nx_err_set(err, NX_EINVAL, "%s: no tensor 'a' (expected 'a' of shape [rows, n])", path);
    const st_tensor *ts[2] = {*a, *b};
    for (int k = 0; k < 2; k++) {
        const st_tensor *t = ts[k];
        if (!t)
            continue;
        if (t->ndim != 2)
            return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' has %d dimensions; expected 2 ([rows, n])", path,
                              t->name, t->ndim);
        if (rows_fmt_of_dtype(t->dtype) < 0)
            return nx_err_set(err, NX_EINVAL, "%s: tensor '%s': dtype %s is not a number format of docs/numerics.md §1",
                              path, t->name, st_dtype_name(t->dtype));
    }
    if (*b && ((*b)->shape[0] != (*a)->shape[0] || (*b)->shape[1] != (*a)->shape[1]))
        return nx_err_set(err, NX_EINVAL, "%s: tensor 'b' has shape [%lld, %lld] but 'a' has [%lld, %lld]", path,
                          (long long)(*b)->shape[0], (long long)(*b)->shape[1], (long long)(*a)->shape[0],
                          (long long)(*a)->shape[1]);
    if (c && *c) {
        const st_tensor *t = *c;
        char sh[96];
        if (t->ndim != 1 || t->shape[0] != (*a)->shape[0])
            return nx_err_set(err, NX_EINVAL,
                              "%s: tensor 'c' has shape %s; expected [%lld] (one start value per row of 'a')", path,
                              shape_text(t, sh, sizeof sh), (long long)(*a)->shape[0]);
        if (rows_fmt_of_dtype(t->dtype) < 0)
            return nx_err_set(err, NX_EINVAL,
                              "%s: tensor 'c' (shape %s): dtype %s is not a number format of docs/numerics.md §1", path,
                              shape_text(t, sh, sizeof sh), st_dtype_name(t->dtype));
    }
    return rows_check_limits(path, *a, *b != NULL, whole, err);
}

/* What 'a' [rows, n] (and 'b') ask for, against the limits of
 * docs/limits.md, before anything is allocated for them: rows x n terms
 * (--max-terms), n itself against the operations of an expanded tree
 * (--max-ops: the point is expanded at n even for zero rows, its hash
 * names the shape), and 64 bytes per row (c, the results, their encoding,
 * check's reference and bounds) plus, when whole, 8 per decoded element
 * of a and b, and with ROWS_WHOLE_REPORT set in whole the report's text
 * and its JSON objects, ROWS_REPORT_ROW_BYTES per row (--max-bytes).  A zero extent costs nothing beyond that:
 * [0, n] is an empty result, [rows, 0] rows of +0. */
nx_status rows_check_limits(const char *path, const st_tensor *a, int dot, int whole, nx_err *err)
{
    char what[256], sh[96];
    uint64_t rows = (uint64_t)a->shape[0], n = (uint64_t)a->shape[1], vals, bytes;
    snprintf(what, sizeof what, "%s: tensor 'a' of shape %s", path, shape_text(a, sh, sizeof sh));
    nx_status st = nx_limits_terms(rows, n, what, err);
    char what_b[320];
    snprintf(what_b, sizeof what_b, "%s%s", what, whole & ROWS_WHOLE_REPORT ? " with its --report" : "");
    if (st)
        return st;
    if (n > nx_limits_get()->max_ops)
        return nx_err_set(err, NX_EINVAL,
                          "%s: n = %llu terms per row is more than the limit of %llu operations of an expanded tree "
                          "(raise it with --max-ops)",
                          what, (unsigned long long)n, (unsigned long long)nx_limits_get()->max_ops);
    uint64_t text = 0;
    if (!nx_limits_mul(whole ? a->nelem : 0, dot ? 2 : 1, &vals) || !nx_limits_mul(rows, 8, &bytes) ||
        __builtin_add_overflow(vals, bytes, &vals) ||
        ((whole & ROWS_WHOLE_REPORT) && !nx_limits_mul(rows, ROWS_REPORT_ROW_BYTES / 8, &text)) ||
        __builtin_add_overflow(vals, text, &vals))
        return nx_err_set(err, NX_EINVAL, "%s: its size overflows 64 bits", what_b);
    return nx_limits_elems(vals, 8, what_b, err);
}

/* The work of evaluating every row: rows x the operations of the expanded
 * point, against --max-work, once the point is expanded at n (a tree of
 * 2^23 operations at n = 1 over 2^26 rows holds little and runs for days). */
nx_status rows_check_work(const char *path, const st_tensor *a, const nx_program *p, nx_err *err)
{
    uint64_t rows = (uint64_t)a->shape[0], w;
    if (nx_limits_mul(rows, p->nops, &w) && w <= nx_limits_get()->max_work)
        return NX_OK;
    char sh[96];
    return nx_err_set(err, NX_EINVAL,
                      "%s: tensor 'a' of shape %s: %llu rows x %zu operations of the point expanded at n = %zu is "
                      "more than the limit of %llu (raise it with --max-work)",
                      path, shape_text(a, sh, sizeof sh), (unsigned long long)rows, p->nops, p->n,
                      (unsigned long long)nx_limits_get()->max_work);
}

