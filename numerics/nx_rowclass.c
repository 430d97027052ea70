/* nx_rowclass.c: points with row classes (docs/numerics.md §4.3): each row
 * is reduced by its class's point, one expanded program per class, run by
 * an engine over that class's rows gathered together. */
#include "nx_rowclass.h"
#include "nx_sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The class index of every row: 0 the point itself, k + 1 class k. */
static nx_status classify(const nx_point *pt, size_t R, size_t n, int *cls, nx_err *err)
{
    for (size_t r = 0; r < R; r++) {
        const nx_point *p;
        nx_status st = nx_point_for_row(pt, r, R, n, &p, err);
        if (st)
            return st;
        cls[r] = 0;
        for (size_t k = 0; k < pt->nclasses; k++)
            if (p == pt->classes[k].pt)
                cls[r] = (int)k + 1;
    }
    return NX_OK;
}

static const nx_point *class_point(const nx_point *pt, int k)
{
    return k == 0 ? pt : pt->classes[k - 1].pt;
}

nx_status nx_point_reduce(const nx_point *pt, const nx_rows *in, size_t n, int dot, nx_engine_kind engine,
                          int threads, double *y, nx_err *err)
{
    size_t R = in->rows;
    int *cls = malloc((R ? R : 1) * sizeof *cls);
    size_t *idx = malloc((R ? R : 1) * sizeof *idx);
    size_t cells = R * n;
    if (cells == 0)
        cells = 1;
    double *a = malloc(cells * sizeof *a);
    double *b = dot ? malloc(cells * sizeof *b) : NULL;
    double *c = in->c ? malloc((R ? R : 1) * sizeof *c) : NULL;
    double *ys = malloc((R ? R : 1) * sizeof *ys);
    nx_status st = NX_OK;
    if (!cls || !idx || !a || (dot && !b) || (in->c && !c) || !ys) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory gathering the rows of the row classes");
        goto out;
    }
    if ((st = classify(pt, R, n, cls, err)))
        goto out;
    for (int k = 0; k <= (int)pt->nclasses && !st; k++) {
        size_t m = 0;
        for (size_t r = 0; r < R; r++) {
            if (cls[r] != k)
                continue;
            memcpy(a + m * n, in->a + r * n, n * sizeof *a);
            if (dot)
                memcpy(b + m * n, in->b + r * n, n * sizeof *b);
            if (c)
                c[m] = in->c[r];
            idx[m++] = r;
        }
        if (m == 0)
            continue;
        nx_program *p;
        if ((st = nx_program_build_ex(class_point(pt, k), n, dot, in->c != NULL, &p, err))) {
            if (k > 0)
                nx_err_prefix(err, "row class %d (\"%s\")", k - 1, pt->classes[k - 1].select);
            break;
        }
        nx_rows sub = *in;
        sub.rows = m;
        sub.a = a;
        sub.b = dot ? b : NULL;
        sub.c = c;
        st = engine == NX_ENGINE_MPFR ? nx_mpfr_reduce(p, &sub, ys, threads, err)
                                      : nx_fast_reduce(p, &sub, ys, threads, err);
        nx_program_free(p);
        for (size_t i = 0; i < m && !st; i++)
            y[idx[i]] = ys[i];
    }
out:
    free(cls);
    free(idx);
    free(a);
    free(b);
    free(c);
    free(ys);
    return st;
}

nx_status nx_point_hash(const nx_point *pt, size_t n, int dot, int start, char hex[65], nx_err *err)
{
    nx_sha256 h;
    nx_sha256_init(&h);
    char buf[96];
    int l = snprintf(buf, sizeof buf, "parity-rows-v1 classes=%zu grid=%ldx%ld", pt->nclasses, pt->grid_m,
                     pt->grid_n);
    nx_sha256_update(&h, buf, (size_t)l);
    for (int k = 0; k <= (int)pt->nclasses; k++) {
        nx_program *p;
        char ph[65];
        nx_status st = nx_program_build_ex(class_point(pt, k), n, dot, start, &p, err);
        if (!st)
            st = nx_program_hash(p, ph, err);
        nx_program_free(p);
        if (st)
            return st;
        if (k > 0)
            nx_sha256_update(&h, pt->classes[k - 1].select, strlen(pt->classes[k - 1].select) + 1);
        nx_sha256_update(&h, ph, 64);
    }
    uint8_t d[32];
    nx_sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return NX_OK;
}
