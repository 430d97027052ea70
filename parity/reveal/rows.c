/* rows.c: row selectors that hold at every batch size R (docs/reveal.md
 * "Row classes", "Selectors over R").
 *
 * The row-index probes see one batch of R0 rows; a class's rows there fit
 * many selectors (12 leading rows of 255 are `r < 12`, but also
 * `r < R % 16 - R % 4` or `r < R % 27`).  Each class's candidates are
 * the selectors of a few shapes (a prefix, a suffix, a range) whose bounds
 * are functions of R from a small family, true exactly at the class's rows
 * at R0.  Then a batch size R1 is chosen where the candidates disagree
 * most, a few probe rows that tell every class from every other are sent
 * at R1 (replicated at every row index), each row index is given the class
 * whose answers it repeats, and the candidates that miss a row are
 * dropped; again, up to RV_ROWS_MAX_R batch sizes, until the candidates of
 * every class agree at every R up to R0.  The simplest survivor names the
 * class. */
#include "reveal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bound: a function of R. */
enum { B_CONST, B_MOD, B_FLOOR, B_BACK, B_DIFF };

typedef struct bound {
    int kind;
    long c;    /* B_CONST: c; B_BACK: R - c */
    long a, b; /* B_MOD: R % a; B_FLOOR: R - R % a; B_DIFF: R % a - R % b */
} bound;

static long bound_at(const bound *f, long R)
{
    switch (f->kind) {
    case B_CONST: return f->c;
    case B_MOD: return R % f->a;
    case B_FLOOR: return R - R % f->a;
    case B_BACK: return R - f->c;
    default: return R % f->a - R % f->b;
    }
}

static int bound_text(const bound *f, char *buf, size_t size)
{
    switch (f->kind) {
    case B_CONST: return snprintf(buf, size, "%ld", f->c);
    case B_MOD: return snprintf(buf, size, "R %% %ld", f->a);
    case B_FLOOR: return snprintf(buf, size, "R - R %% %ld", f->a);
    case B_BACK: return snprintf(buf, size, "R - %ld", f->c);
    default: return snprintf(buf, size, "R %% %ld - R %% %ld", f->a, f->b);
    }
}

#define A_MAX 64 /* the largest modulus tried */

/* Every bound worth 'want' at R0, simplest first, into out (at most cap). */
static size_t bounds_at(long want, long R0, bound *out, size_t cap)
{
    size_t k = 0;
#define PUT(...)                                                                                                   \
    do {                                                                                                           \
        bound f_ = {__VA_ARGS__};                                                                                  \
        if (k < cap && bound_at(&f_, R0) == want)                                                                  \
            out[k++] = f_;                                                                                         \
    } while (0)
    PUT(B_CONST, want, 0, 0);
    for (long a = 2; a <= A_MAX; a++)
        PUT(B_MOD, 0, a, 0);
    for (long a = 2; a <= A_MAX; a++)
        PUT(B_FLOOR, 0, a, 0);
    if (want > 0)
        PUT(B_BACK, R0 - want, 0, 0);
    for (long a = 4; a <= A_MAX; a++)
        for (long b = 2; b < a; b++)
            if (a % b == 0)
                PUT(B_DIFF, 0, a, b);
#undef PUT
    return k;
}

/* A candidate selector: rows r with lo(R) <= r < hi(R) (has_lo / has_hi:
 * whether each side is bounded). */
typedef struct cand {
    bound lo, hi;
    int has_lo, has_hi;
} cand;

static long clip(long x, long R)
{
    return x < 0 ? 0 : x > R ? R : x;
}

/* The rows of c at R as [from, to) (empty: from == to == 0). */
static void cand_rows(const cand *c, long R, long *from, long *to)
{
    long f = c->has_lo ? clip(bound_at(&c->lo, R), R) : 0;
    long t = c->has_hi ? clip(bound_at(&c->hi, R), R) : R;
    if (f >= t)
        f = t = 0;
    *from = f;
    *to = t;
}

static char *cand_text(const cand *c)
{
    char lo[64] = "", hi[64] = "", buf[160];
    if (c->has_lo)
        bound_text(&c->lo, lo, sizeof lo);
    if (c->has_hi)
        bound_text(&c->hi, hi, sizeof hi);
    if (c->has_lo && c->has_hi)
        snprintf(buf, sizeof buf, "r >= %s && r < %s", lo, hi);
    else if (c->has_lo)
        snprintf(buf, sizeof buf, "r >= %s", lo);
    else
        snprintf(buf, sizeof buf, "r < %s", hi);
    return strdup(buf);
}

/* Two answers differ in their bits (-0 from +0, a NaN from itself not). */
static int differ(double x, double y)
{
    return memcmp(&x, &y, sizeof x) != 0;
}

#define NB_MAX 512    /* bounds of one value at R0 */
#define NC_MAX 4096   /* candidates of one class */

typedef struct klass {
    cand *c;
    size_t n;
} klass;

/* The candidates of the rows [lo, hi] of R0 (contiguous). */
static int class_cands(long lo, long hi, long R0, klass *out)
{
    bound *bl = malloc(NB_MAX * sizeof *bl), *bh = malloc(NB_MAX * sizeof *bh);
    out->c = malloc(NC_MAX * sizeof *out->c);
    out->n = 0;
    if (!bl || !bh || !out->c) {
        free(bl);
        free(bh);
        return -1;
    }
    size_t nl = lo > 0 ? bounds_at(lo, R0, bl, NB_MAX) : 0;
    size_t nh = hi + 1 < R0 ? bounds_at(hi + 1, R0, bh, NB_MAX) : 0;
    if (lo == 0 && hi + 1 < R0) /* a prefix */
        for (size_t j = 0; j < nh && out->n < NC_MAX; j++)
            out->c[out->n++] = (cand){.hi = bh[j], .has_hi = 1};
    else if (hi + 1 == R0 && lo > 0) /* a suffix */
        for (size_t i = 0; i < nl && out->n < NC_MAX; i++)
            out->c[out->n++] = (cand){.lo = bl[i], .has_lo = 1};
    else
        for (size_t i = 0; i < nl; i++)
            for (size_t j = 0; j < nh && out->n < NC_MAX; j++)
                out->c[out->n++] = (cand){.lo = bl[i], .hi = bh[j], .has_lo = 1, .has_hi = 1};
    free(bl);
    free(bh);
    return 0;
}

static int cmp_span(const void *x, const void *y)
{
    const long *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* How many distinct row sets the candidates of k give at R (span: scratch
 * of 2 k->n longs). */
static size_t distinct_at(const klass *k, long R, long *span)
{
    for (size_t i = 0; i < k->n; i++)
        cand_rows(&k->c[i], R, &span[2 * i], &span[2 * i + 1]);
    qsort(span, k->n, 2 * sizeof *span, cmp_span);
    size_t d = k->n > 0;
    for (size_t i = 1; i < k->n; i++)
        d += cmp_span(&span[2 * i - 2], &span[2 * i]) != 0;
    return d;
}

/* The batch sizes tried for a probe: the RV_ROWS_WINDOW below R0 (every
 * bound's modulus is at most 64, so candidates that differ somewhere
 * differ there), at any --rows in the same time. */
#define RV_ROWS_WINDOW 4096

nx_status rv_rows_induce(rv_kernel *k, size_t n, size_t R0, const rv_rowprobe *pr, size_t npr, const int *cls,
                         const size_t *rep, size_t ncls, char **sel, size_t *probed, size_t *nprobed, nx_err *err)
{
    *nprobed = 0;
    nx_status st = NX_OK;
    klass *kc = calloc(ncls, sizeof *kc);
    size_t *use = malloc((npr ? npr : 1) * sizeof *use), nuse = 0;
    int *cl1 = malloc(R0 * sizeof *cl1);
    double *a = malloc(R0 * n * sizeof *a), *b = malloc(R0 * n * sizeof *b);
    double *ys = NULL;
    char *tried = calloc(R0 + 1, 1);
    long *span = malloc(2 * NC_MAX * sizeof *span);
    if (!kc || !use || !cl1 || !a || !b || !tried || !span) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* the candidates: a class of one contiguous run of rows */
    size_t todo = 0;
    for (size_t c = 0; c < ncls; c++) {
        if (!sel[c])
            continue;
        long lo = -1, hi = -1, cnt = 0;
        for (size_t r = 0; r < R0; r++)
            if (cls[r] == (int)c) {
                if (lo < 0)
                    lo = (long)r;
                hi = (long)r;
                cnt++;
            }
        if (cnt == 0 || cnt != hi - lo + 1 || (lo == 0 && hi + 1 == (long)R0))
            continue;
        if (class_cands(lo, hi, (long)R0, &kc[c])) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        todo += kc[c].n > 1;
    }
    if (!todo)
        goto out;
    /* probe rows that tell every class from every other: greedily, the one
     * that parts the most pairs not yet parted */
    {
        size_t np = ncls * ncls;
        char *parted = calloc(np, 1);
        if (!parted) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        for (;;) {
            size_t best = npr, bestn = 0;
            for (size_t i = 0; i < npr; i++) {
                size_t m = 0;
                for (size_t c = 0; c < ncls; c++)
                    for (size_t d = c + 1; d < ncls; d++)
                        m += !parted[c * ncls + d] && differ(pr[i].y[rep[c]], pr[i].y[rep[d]]);
                if (m > bestn) {
                    bestn = m;
                    best = i;
                }
            }
            if (best == npr)
                break;
            use[nuse++] = best;
            for (size_t c = 0; c < ncls; c++)
                for (size_t d = c + 1; d < ncls; d++)
                    if (differ(pr[best].y[rep[c]], pr[best].y[rep[d]]))
                        parted[c * ncls + d] = 1;
        }
        int all = 1;
        for (size_t c = 0; c < ncls; c++)
            for (size_t d = c + 1; d < ncls; d++)
                all &= parted[c * ncls + d];
        free(parted);
        if (!all || !nuse) /* the kept probes cannot tell the classes apart */
            goto out;
    }
    if (!(ys = malloc(nuse * R0 * sizeof *ys))) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    tried[R0] = 1;
    while (*nprobed < RV_ROWS_MAX_R) {
        /* the batch size where the candidates disagree most */
        size_t R1 = 0, bestd = 0, Rlo = R0 > RV_ROWS_WINDOW ? R0 - RV_ROWS_WINDOW : 1;
        for (size_t R = R0; R-- > Rlo;) {
            if (tried[R])
                continue;
            size_t d = 0;
            for (size_t c = 0; c < ncls; c++)
                if (kc[c].n > 1)
                    d += distinct_at(&kc[c], (long)R, span) - 1;
            if (d > bestd) {
                bestd = d;
                R1 = R;
            }
        }
        if (!R1)
            break;
        tried[R1] = 1;
        for (size_t u = 0; u < nuse && !st; u++) {
            const rv_rowprobe *p = &pr[use[u]];
            for (size_t r = 0; r < R1; r++) {
                memcpy(a + r * n, p->a, n * sizeof *a);
                memcpy(b + r * n, p->b, n * sizeof *b);
            }
            st = rv_call(k, R1, n, a, b, ys + u * R1, err);
        }
        if (st)
            goto out;
        probed[(*nprobed)++] = R1;
        /* each row index's class: the one whose answers it repeats */
        int known = 1;
        for (size_t r = 0; r < R1 && known; r++) {
            cl1[r] = -1;
            for (size_t c = 0; c < ncls && cl1[r] < 0; c++) {
                size_t u = 0;
                while (u < nuse && !memcmp(&ys[u * R1 + r], &pr[use[u]].y[rep[c]], sizeof(double)))
                    u++;
                if (u == nuse)
                    cl1[r] = (int)c;
            }
            known = cl1[r] >= 0;
        }
        if (!known) /* a path not seen at R0: this R tells nothing */
            continue;
        for (size_t c = 0; c < ncls; c++) {
            size_t w = 0;
            for (size_t i = 0; i < kc[c].n; i++) {
                long f, t;
                cand_rows(&kc[c].c[i], (long)R1, &f, &t);
                int ok = 1;
                for (size_t r = 0; r < R1 && ok; r++)
                    ok = (cl1[r] == (int)c) == ((long)r >= f && (long)r < t);
                if (ok)
                    kc[c].c[w++] = kc[c].c[i];
            }
            kc[c].n = w;
        }
    }
    /* the simplest survivor names the class; none: its selector at R0 stays
     * (the class moved in a way no candidate follows) */
    for (size_t c = 0; c < ncls; c++)
        if (kc[c].n && *nprobed) {
            char *t = cand_text(&kc[c].c[0]);
            if (!t) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                goto out;
            }
            free(sel[c]);
            sel[c] = t;
        }
out:
    for (size_t c = 0; kc && c < ncls; c++)
        free(kc[c].c);
    free(kc);
    free(use);
    free(cl1);
    free(a);
    free(b);
    free(ys);
    free(tried);
    free(span);
    return st;
}
