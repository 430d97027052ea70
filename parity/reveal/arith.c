/* arith.c: the arithmetic of a kernel whose order is known, and the
 * confirmation of the whole point (docs/reveal.md "The arithmetic").
 *
 * With the tree fixed, the candidates are the tree crossed with the
 * accumulator format, the mode, fused or separate multiply-add and the
 * product rounding (a `chain`: the atom's frac_bits, term_round, round,
 * acc and alignment rule instead).  Probe rows target what tells them
 * apart: terms over three exponent spreads (narrow: ties and the last bits
 * of products, where fma and the mode show; middling; wide: cancellation
 * and the accumulator's precision and range).  parity_fit searches the
 * space for the points that reproduce every row bit for bit (row classes
 * when rows differ) and verifies the winner with MPFR; fresh random rows,
 * never seen by the search, give the confidence. */
#include "reveal.h"

#include "fit.h"
#include "nx_engine.h"
#include "nx_program.h"
#include "nx_rowclass.h"
#include "point_toml.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rv_result_free(rv_result *r)
{
    rv_tree_free(&r->tree);
    free(r->tree_text);
    free(r->point);
    for (size_t i = 0; i < r->nclass; i++) {
        free(r->class_select[i]);
        free(r->class_tree[i]);
        if (r->class_rt)
            rv_tree_free(&r->class_rt[i]);
    }
    free(r->class_rt);
    free(r->class_select);
    free(r->class_tree);
    free(r->row_class);
    free(r->induce_alone);
    free(r->induce_other);
    free(r->induce_why);
    memset(r, 0, sizeof *r);
}

static uint64_t next64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A random member of f with exponent in [-spread, spread] (clamped to f's
 * normal range), every mantissa bit random. */
static double rand_member(nx_fmt f, int spread, uint64_t *s)
{
    const nx_format_info *fi = nx_format(f);
    int emax = (int)floor(log2(fi->max_finite)) - 1;
    int lo = -spread < fi->emin ? fi->emin : -spread, hi = spread > emax ? emax : spread;
    uint64_t r = next64(s);
    int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
    int p = fi->p > 53 ? 53 : fi->p;
    uint64_t m = (next64(s) >> (64 - p)) | (1ULL << (p - 1));
    double v = ldexp((double)m, e - p + 1);
    return (r >> 40) & 1 ? -v : v;
}

static void rand_rows(nx_fmt f, size_t rows, size_t n, uint64_t seed, double *a, double *b)
{
    static const int spreads[] = {2, 8, 24};
    uint64_t s = seed;
    for (size_t r = 0; r < rows; r++) {
        int sp = spreads[r % 3];
        for (size_t i = 0; i < n; i++) {
            a[r * n + i] = rand_member(f, sp, &s);
            b[r * n + i] = rand_member(f, sp / 2, &s);
        }
    }
}

/* Rows that tell a fused multiply-add from a separate one even through a
 * narrow out conversion: -(1 + 2^(1-k)) at term i and (1 + 2^-k)^2 at term
 * j, zeros elsewhere; where j follows i in one running sum, fused gives
 * 2^-2k and separate gives 0 (docs/numerics.md §4.2's worked values, k =
 * 12 for fp32).  Pairs at distances 1, 2, 4, ... from both ends and from
 * the start, both ways round.  Returns the rows written (at most max). */
static size_t fma_rows(nx_fmt in, size_t n, size_t max, double *a, double *b)
{
    int k = in == NX_FP32 ? 12 : in == NX_FP64 ? 27 : 0;
    size_t r = 0;
    if (!k)
        return 0;
    for (size_t d = 1; d < n && r + 6 <= max; d *= 2) {
        size_t at[3][2] = {{0, d}, {n - 1 - d, n - 1}, {d - 1, d}};
        for (int q = 0; q < 3; q++)
            for (int sw = 0; sw < 2; sw++) {
                size_t i = at[q][sw], j = at[q][1 - sw];
                double *ra = a + r * n, *rb = b + r * n;
                for (size_t x = 0; x < n; x++)
                    ra[x] = 0, rb[x] = 1;
                ra[i] = -(1 + ldexp(1, 1 - k));
                ra[j] = 1 + ldexp(1, -k);
                rb[j] = 1 + ldexp(1, -k);
                r++;
            }
    }
    return r;
}

/* Rows of two nonzero terms, order-free: +-1 at term 0 and x at term n-1,
 * x = 2^-e and 3 * 2^-(e+1) for e around the precisions of fp16, bf16,
 * fp32 and fp64, both signs: ties and non-ties at each accumulator's last
 * place, which pin its format and its rounding mode (and the out
 * conversion's).  Values the input format cannot hold are left out. */
static size_t pin_rows(nx_fmt in, size_t n, size_t max, double *a, double *b)
{
    static const int es[] = {8, 9, 11, 12, 24, 25, 53, 54};
    size_t r = 0;
    for (size_t q = 0; q < sizeof es / sizeof *es; q++)
        for (int k = 0; k < 2; k++)
            for (int sg = 0; sg < 4 && r < max; sg++) {
                double x = k ? ldexp(3, -es[q] - 1) : ldexp(1, -es[q]);
                double one = sg & 1 ? -1 : 1;
                x = sg & 2 ? -x : x;
                if (!nx_is_member(in, x))
                    continue;
                double *ra = a + r * n, *rb = b + r * n;
                for (size_t i = 0; i < n; i++)
                    ra[i] = 0, rb[i] = 1;
                ra[0] = one;
                ra[n - 1] = x;
                r++;
            }
    return r;
}

static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#include <stdarg.h>
static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return -1;
        if (*buf && *len + (size_t)k < *cap) {
            *len += (size_t)k;
            return 0;
        }
        size_t nc = (*cap + (size_t)k + 1) * 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
}

/* The space of arithmetic settings over tree T (docs/reveal.md). */
/* The tail settings tried: a scalar tail in double (from exact or from
 * fp32 products), in float, or without fma (ISO C with no contraction
 * beside a vector body with FMA). */
static const char *const tail_settings[] = {"acc=fp64", "acc=fp64, product=fp32", "acc=fp32", "fma=false"};
#define NTAILSET (sizeof tail_settings / sizeof *tail_settings)

/* With the point's acc fp64: the body in fp32, the tail and the body +
 * tail in double (OpenBLAS's sdot: "the two added in double"). */
static const char *const body32_tails[] = {"", "[product=fp32]", "[fma=false]"};
#define NBODY32 (sizeof body32_tails / sizeof *body32_tails)
/* The settings tried on one part of a stride, split, tile or lanes node
 * (its lanes or blocks, its combine): a part in double beside fp32 ones (a
 * combine of float lanes in double), in float beside double ones, or
 * without fma. */
static const char *const part_settings[] = {"acc=fp64", "acc=fp32", "fma=false"};
#define NPARTSET (sizeof part_settings / sizeof *part_settings)
#define NPARTS 2 /* tree arguments of one node: stride(P, X, Y), tile(B, X, Y), ... */
#define NVARIANTS (1 + 2 * NTAILSET + NBODY32 + NPARTS * NPARTSET)

/* The tree arguments of the node the tree text starts with, past order(…)
 * and reverse(…) wrappers, when it is stride, split, tile or lanes: where
 * each of its arguments that is a tree with no settings of its own (not a
 * count, a list, `carry` or `halve=A`) ends, into e[].  The count. */
static size_t node_parts(const char *tree, size_t e[NPARTS])
{
    size_t at = 0;
    for (;;) {
        if (!strncmp(tree + at, "reverse(", 8))
            at += 8;
        else if (!strncmp(tree + at, "order(", 6)) {
            /* past the list: order([i, …], T) */
            int depth = 0;
            size_t i = at + 6;
            for (; tree[i]; i++) {
                if (tree[i] == '[')
                    depth++;
                else if (tree[i] == ']' && --depth == 0)
                    break;
            }
            if (!tree[i] || tree[i + 1] != ',')
                return 0;
            at = i + 2;
            while (tree[at] == ' ')
                at++;
        } else
            break;
    }
    static const char *const nodes[] = {"stride(", "split(", "tile(", "lanes("};
    size_t open = 0;
    for (size_t q = 0; q < sizeof nodes / sizeof *nodes && !open; q++)
        if (!strncmp(tree + at, nodes[q], strlen(nodes[q])))
            open = at + strlen(nodes[q]);
    if (!open)
        return 0;
    size_t np = 0, pos = open, arg = 0, b, z;
    int last = 0;
    while (!last && fit_next_arg(tree, &pos, &b, &z, &last)) {
        int is_tree = arg > 0 && tree[b] >= 'a' && tree[b] <= 'z';
        if (is_tree && z - b == 5 && !strncmp(tree + b, "carry", 5))
            is_tree = 0;
        for (size_t q = b; q < z && is_tree; q++)
            if (tree[q] == '=' || tree[q] == '@' || tree[q] == '[')
                is_tree = 0;
        if (is_tree && np < NPARTS)
            e[np++] = z;
        arg++;
    }
    return np;
}

/* The body(B, X, T[, carry]) that starts at tree[at]: X lies between the
 * commas at *x0 and *x1, T spans [*t0, *t1); 0, or -1 when tree[at]
 * starts no such body. */
static int body_tail(const char *tree, size_t at, size_t *x0, size_t *x1, size_t *t0, size_t *t1)
{
    if (strncmp(tree + at, "body(", 5))
        return -1;
    size_t comma[3], nc = 0, end = 0;
    int depth = 0;
    for (size_t i = at + 5; tree[i] && !end; i++) {
        char c = tree[i];
        if (c == '(' || c == '[')
            depth++;
        else if ((c == ')' || c == ']') && depth > 0)
            depth--;
        else if (c == ')' && depth == 0)
            end = i;
        else if (c == ',' && depth == 0 && nc < 3)
            comma[nc++] = i;
    }
    if (nc < 2 || !end)
        return -1;
    *x0 = comma[0];
    *x1 = comma[1];
    *t0 = comma[1] + 1;
    *t1 = nc > 2 ? comma[2] : end;
    while (tree[*t0] == ' ')
        (*t0)++;
    return 0;
}

/* The tree and, for body(B, X, T[, carry]) whose parts carry no settings
 * of their own, T with each of tail_settings, and X@fp32 with T as each of
 * body32_tails (per-part arithmetic: a vector body with a scalar tail in
 * another format); each malloc'd into v[].  The count, 0 when out of
 * memory. */
/* The tree with each of the nset settings set[] on the subtree that ends
 * at tree[at] (`T` becomes `T[setting]`), into v[*nv ...]; 0, or -1 out of
 * memory. */
static int add_settings(const char *tree, size_t at, const char *const *set, size_t nset, char **v, size_t *nv)
{
    for (size_t f = 0; f < nset; f++) {
        size_t l = strlen(tree) + strlen(set[f]) + 4;
        if (!(v[*nv] = malloc(l)))
            return -1;
        snprintf(v[(*nv)++], l, "%.*s[%s]%s", (int)at, tree, set[f], tree + at);
    }
    return 0;
}

static size_t tree_variants(const char *tree, char *v[NVARIANTS])
{
    if (!(v[0] = strdup(tree)))
        return 0;
    size_t nv = 1, x0, c1, t0, t1;
    if (body_tail(tree, 0, &x0, &c1, &t0, &t1)) {
        /* a stride, split, tile or lanes node: each part with each of
         * part_settings */
        size_t pe[NPARTS], np = node_parts(tree, pe);
        for (size_t q = 0; q < np; q++)
            if (add_settings(tree, pe[q], part_settings, NPARTSET, v, &nv))
                goto oom;
        return nv;
    }
    if (memchr(tree + t0, '[', t1 - t0))
        return 1;
    if (add_settings(tree, t1, tail_settings, NTAILSET, v, &nv))
        goto oom;
    /* nested bodies (blocks of 8, then of 4, then single terms carried):
     * the settings on the innermost tail alone */
    size_t u0 = t0, u1 = t1, y0, y1, w0, w1;
    while (!body_tail(tree, u0, &y0, &y1, &w0, &w1)) {
        u0 = w0;
        u1 = w1;
    }
    if (u0 != t0 && add_settings(tree, u1, tail_settings, NTAILSET, v, &nv))
        goto oom;
    if (memchr(tree + x0, '@', c1 - x0) || memchr(tree + x0, '[', c1 - x0))
        return nv;
    for (size_t f = 0; f < NBODY32; f++) {
        size_t l = strlen(tree) + 32;
        if (!(v[nv] = malloc(l)))
            goto oom;
        snprintf(v[nv++], l, "%.*s@fp32%.*s%s%s", (int)c1, tree, (int)(t1 - c1), tree + c1, body32_tails[f],
                 tree + t1);
    }
    return nv;
oom:
    for (size_t q = 0; q < nv; q++)
        free(v[q]);
    return 0;
}

static char *space_text(const char *tree, nx_fmt in)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    int bad = 0;
    if (strstr(tree, "chain(")) {
        static const char *const acc[] = {"fp32", "e8m13", "fp16"};
        static const char *const rnd[] = {"rz", "rne"};
        static const char *const al[] = {"operands", "values"};
        /* fp32 inputs may reach the tensor core as tf32 (truncated or
         * rounded): the atom rows first with each */
        static const char *const ins[] = {"", "in = \"tf32\", in_rounding = \"rz\", ",
                                          "in = \"tf32\", in_rounding = \"rne\", "};
        for (int iv = 0; iv < (in == NX_FP32 ? 3 : 1) && !bad; iv++)
            for (int fb = 24; fb >= 10 && !bad; fb--)
                for (int a = 0; a < 3; a++)
                    for (int r = 0; r < 2; r++)
                        for (int g = 0; g < 2; g++)
                            bad |= appendf(&s, &len, &cap,
                                           "{ tree = \"%s\", %satom = { frac_bits = %d, term_round = \"rz\", round = \"%s\", "
                                           "acc = \"%s\", align = \"%s\" } }\n",
                                           tree, ins[iv], fb, rnd[r], acc[a], al[g]);
        for (int fb = 24; fb >= 10 && !bad; fb--)
            for (int a = 0; a < 3; a++)
                for (int r = 0; r < 2; r++)
                    for (int tr = 1; tr < 2; tr++)
                        for (int g = 0; g < 2; g++)
                            bad |= appendf(&s, &len, &cap,
                                           "{ tree = \"%s\", atom = { frac_bits = %d, term_round = \"%s\", round = \"%s\", "
                                           "acc = \"%s\", align = \"%s\" } }\n",
                                           tree, fb, rnd[tr], rnd[r], acc[a], al[g]);
        for (int fb = 25; fb <= 32 && !bad; fb++)
            for (int r = 0; r < 2; r++)
                for (int g = 0; g < 2; g++)
                    bad |= appendf(&s, &len, &cap,
                                   "{ tree = \"%s\", atom = { frac_bits = %d, round = \"%s\", acc = \"fp32\", align = \"%s\" } }\n",
                                   tree, fb, rnd[r], al[g]);
        bad |= appendf(&s, &len, &cap, "{ tree = \"%s\", atom = {} }\n", tree);
        return bad ? (free(s), NULL) : s;
    }
    static const char *const acc[] = {"fp32", "fp64", "bf16", "fp16"};
    static const char *const rnd[] = {"rne", "rz", "ru", "rd", "rna"};
    static const char *const prod[] = {"exact", "fp32", "bf16", "fp16"};
    char *var[NVARIANTS] = {NULL};
    size_t nvar = tree_variants(tree, var);
    if (!nvar)
        return NULL;
    for (size_t v = 0; v < nvar && !bad; v++)
        for (int a = 0; a < 4 && !bad; a++)
            for (int r = 0; r < 5; r++)
                for (int f = 1; f >= 0; f--)
                    for (int p = 0; p < 4; p++) {
                        /* a named product turns the fused step off: fma =
                         * true with one is fma = false with it; and
                         * rounding a product to acc is what the unfused
                         * step does anyway */
                        if (p && (f || !strcmp(prod[p], acc[a])))
                            continue;
                        bad |= appendf(&s, &len, &cap,
                                       "{ tree = \"%s\", acc = \"%s\", rounding = \"%s\", fma = %s, product = \"%s\" }\n",
                                       var[v], acc[a], rnd[r], f ? "true" : "false", prod[p]);
                    }
    for (size_t v = 0; v < nvar; v++)
        free(var[v]);
    if (in == NX_FP32)
        for (int f = 1; f >= 0 && !bad; f--)
            bad |= appendf(&s, &len, &cap, "{ tree = \"%s\", in = \"tf32\", in_rounding = \"%s\", fma = %s }\n", tree,
                           "rne", f ? "true" : "false"),
                bad |= appendf(&s, &len, &cap, "{ tree = \"%s\", in = \"tf32\", in_rounding = \"rz\", fma = %s }\n", tree,
                               f ? "true" : "false");
    return bad ? (free(s), NULL) : s;
}

/* Evaluates point text over rows (row classes included) with the fast
 * engine. */
static nx_status eval_point(const char *text, nx_fmt in, size_t rows, size_t n, const double *a, const double *b,
                            double *y, nx_err *err)
{
    nx_point pt;
    nx_status st = pt_from_text(text, "revealed point", &pt, err);
    if (st)
        return st;
    /* one program per row class, not per row; a point with a grid (reveal
     * --grid) holds at M * N rows: batches of that many, one after another */
    size_t per = rows;
    if (pt.grid_m > 0 && pt.grid_n > 0 && rows % (size_t)(pt.grid_m * pt.grid_n) == 0)
        per = (size_t)(pt.grid_m * pt.grid_n);
    /* a small batch on one thread: waking the others costs more than its
     * terms (the per-part probes evaluate hundreds of them) */
    int threads = per * n < ((size_t)1 << 16) ? 1 : 0;
    for (size_t r0 = 0; r0 < rows && !st; r0 += per) {
        nx_rows all = {per, in, a + r0 * n, in, b + r0 * n, NX_FP64, NULL};
        st = nx_point_reduce(&pt, &all, n, 1, NX_ENGINE_FAST, threads, y + r0, err);
    }
    nx_point_free(&pt);
    return st;
}

static int same_bits(double x, double y)
{
    return (x == y && signbit(x) == signbit(y)) || (isnan(x) && isnan(y));
}

static void search_rows(const rv_kernel *k, size_t rows, size_t n, uint64_t seed, double *a, double *b);

/* The rows of one class at one length, gathered over calls. */
typedef struct class_rows {
    size_t m, cap;
    double *a, *b, *y;
    size_t *r;      /* each row's index in its batch */
} class_rows;

#define RV_CLASS_MIN_ROWS 32  /* rows of each class per length, where calls allow */
#define RV_CLASS_MAX_CALLS 64 /* calls per length at most for them */
#define RV_CLASS_MIN_CALLS 8  /* and at least: each row index seen 8 times */

static void class_rows_free(class_rows *c, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(c[i].a);
        free(c[i].b);
        free(c[i].y);
        free(c[i].r);
    }
}

/* Random rows of length n through k, batches of R = res->probe_rows rows,
 * sorted into the classes of res->row_class: calls enough for
 * RV_CLASS_MIN_ROWS rows of the smallest class (at least
 * RV_CLASS_MIN_CALLS, at most RV_CLASS_MAX_CALLS), each class keeping
 * at most R rows or RV_CLASS_MIN_CALLS rows of each of its row indices.  Each call
 * after the first rotates the batch, so that the targeted rows of
 * search_rows reach other row indices.  cr[nclass]. */
static nx_status gather_classes(rv_kernel *k, const rv_result *res, size_t n, uint64_t seed, class_rows *cr,
                                nx_err *err)
{
    size_t R = res->probe_rows, nc = res->nclass, least = R;
    size_t *cnt = calloc(nc, sizeof *cnt);
    double *A = malloc(R * n * sizeof *A), *B = malloc(R * n * sizeof *B), *Y = malloc(R * sizeof *Y),
           *TA = malloc(R * n * sizeof *TA), *TB = malloc(R * n * sizeof *TB);
    nx_status st = NX_OK;
    if (!cnt || !A || !B || !Y || !TA || !TB) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t r = 0; r < R; r++)
        cnt[res->row_class[r]]++;
    for (size_t c = 0; c < nc; c++)
        if (cnt[c] && cnt[c] < least)
            least = cnt[c];
    size_t calls = (RV_CLASS_MIN_ROWS + least - 1) / least;
    if (calls < RV_CLASS_MIN_CALLS)
        calls = RV_CLASS_MIN_CALLS;
    if (calls > RV_CLASS_MAX_CALLS)
        calls = RV_CLASS_MAX_CALLS;
    for (size_t c = 0; c < nc && !st; c++) {
        /* every row index of the class RV_CLASS_MIN_CALLS times at least:
         * a row whose arithmetic is not the others' (split_class0) shows
         * on some of its rows, not on one */
        size_t keep = R > RV_CLASS_MIN_CALLS * cnt[c] ? R : RV_CLASS_MIN_CALLS * cnt[c];
        size_t cap = cnt[c] * calls < keep ? cnt[c] * calls : keep;
        cr[c].cap = cap;
        cr[c].m = 0;
        if (!cap)
            continue;
        if (!(cr[c].a = malloc(cap * n * sizeof *cr[c].a)) || !(cr[c].b = malloc(cap * n * sizeof *cr[c].b)) ||
            !(cr[c].y = malloc(cap * sizeof *cr[c].y)) || !(cr[c].r = malloc(cap * sizeof *cr[c].r)))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t j = 0; j < calls && !st; j++) {
        search_rows(k, R, n, seed + j * 0x9e3779b97f4a7c15ULL, TA, TB);
        /* a grid kernel's batch is one gemm (grid_search_rows): turned by
         * whole grid rows it stays one */
        size_t rot = k->grid_m && k->grid_n ? (j * 37) % k->grid_m * k->grid_n : (j * 37) % R;
        for (size_t r = 0; r < R; r++) {
            memcpy(A + ((r + rot) % R) * n, TA + r * n, n * sizeof *A);
            memcpy(B + ((r + rot) % R) * n, TB + r * n, n * sizeof *B);
        }
        if ((st = rv_call(k, R, n, A, B, Y, err)))
            break;
        for (size_t r = 0; r < R; r++) {
            class_rows *c = &cr[res->row_class[r]];
            if (c->m == c->cap)
                continue;
            memcpy(c->a + c->m * n, A + r * n, n * sizeof *A);
            memcpy(c->b + c->m * n, B + r * n, n * sizeof *B);
            c->y[c->m] = Y[r];
            c->r[c->m++] = r;
        }
    }
out:
    free(cnt);
    free(A);
    free(B);
    free(Y);
    free(TA);
    free(TB);
    return st;
}

/* The space of arithmetic settings over a tree (space_text) as a fit
 * space, each line a whole point; sp is initialised (free it) whatever
 * the outcome. */
static nx_status tree_space(const char *tree, const rv_kernel *k, fit_space *sp, nx_err *err)
{
    char *space = space_text(tree, k->in_fmt);
    fit_space_init(sp, (nx_fmt)k->out_fmt);
    if (!space)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = NX_OK;
    for (char *line = space, *nl; *line && !st; line = nl + 1) {
        nl = strchr(line, '\n');
        *nl = 0;
        if (sp->count == sp->cap) {
            size_t nc = sp->cap ? 2 * sp->cap : 256;
            fit_cand *ncd = realloc(sp->c, nc * sizeof *ncd);
            if (!ncd) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                break;
            }
            sp->c = ncd;
            sp->cap = nc;
        }
        fit_cand fc = {.toml = strdup(line), .acc = -1, .fma = -1, .product = -1, .atom_preset = -1,
                       .atom_frac = -1, .atom_round = -1};
        if (!fc.toml)
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        else
            sp->c[sp->count++] = fc;
    }
    free(space);
    return st;
}

/* Class 0 fits no point of its space: the rows the closest candidate
 * misses (at any length) are an arithmetic class of their own, where one
 * selector names exactly them among the R rows of a batch (the last row,
 * a residue; rows whose order the probes could not tell apart, whose
 * arithmetic differs, as a remainder kernel's).  It is added to res (same
 * tree as class 0); 1 when added. */
/* The rows of class 0 whose answers to one random row, sent at every
 * index of a batch, are not the class's most common answer, marked in
 * cls (RV_APART_ROWS rows, one call each): rows of one path answer one
 * row alike, so only rows whose arithmetic differs are marked, where the
 * closest point of the space (one arithmetic for the whole tree) may miss
 * scattered rows too.  The count marked; 0 on any failure. */
#define RV_APART_ROWS 4
static int cmp_bits(const void *x, const void *y)
{
    uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
    return (p > q) - (p < q);
}

static size_t apart_rows(rv_kernel *k, const rv_result *res, size_t n, uint64_t seed, int *cls)
{
    size_t R = res->probe_rows, marked = 0;
    double *a = malloc(R * n * sizeof *a), *b = malloc(R * n * sizeof *b), *y = malloc(R * sizeof *y);
    uint64_t *bits = malloc(R * sizeof *bits);
    if (!a || !b || !y || !bits)
        goto out;
    for (int t = 0; t < RV_APART_ROWS; t++) {
        rand_rows(k->in_fmt, 1, n, seed + 0x61706172ULL * (uint64_t)(t + 1), a, b);
        for (size_t r = 1; r < R; r++) {
            memcpy(a + r * n, a, n * sizeof *a);
            memcpy(b + r * n, b, n * sizeof *b);
        }
        nx_err e = {0};
        if (rv_call(k, R, n, a, b, y, &e)) {
            marked = 0;
            goto out;
        }
        /* the class's most common answer: its bit patterns sorted, the
         * longest run (R log R, where --rows may be 2^20) */
        size_t m = 0, run = 0, bestrun = 0;
        uint64_t most = 0;
        for (size_t r = 0; r < R; r++)
            if (res->row_class[r] == 0)
                memcpy(&bits[m++], &y[r], sizeof *bits);
        qsort(bits, m, sizeof *bits, cmp_bits);
        for (size_t i = 0; i < m; i++) {
            run = i && bits[i] == bits[i - 1] ? run + 1 : 1;
            if (run > bestrun)
                bestrun = run, most = bits[i];
        }
        for (size_t r = 0; r < R && m; r++) {
            uint64_t x;
            memcpy(&x, &y[r], sizeof x);
            if (res->row_class[r] == 0 && x != most && !cls[r])
                cls[r] = 1, marked++;
        }
    }
out:
    free(a);
    free(b);
    free(y);
    free(bits);
    return marked;
}

static int split_class0(rv_kernel *k, rv_result *res, const fit_space *sp, const fit_result *fr,
                        class_rows *const *cr, const size_t *lens, size_t nl)
{
    size_t R = res->probe_rows, marked = 0, in0 = 0;
    for (size_t r = 0; r < R; r++)
        in0 += res->row_class[r] == 0;
    /* the point of most rows: fitted on the first call's rows (one row of
     * each index, where a few odd rows may agree by chance), else the
     * closest of that fit or of the whole one (the search's order of rows
     * decides which candidates the closest are chosen from) */
    fit_pair pair[RV_INDUCE_MAX];
    size_t np = 0;
    for (size_t l = 0; l < nl; l++)
        if (cr[l][0].m)
            pair[np++] = (fit_pair){{cr[l][0].m < in0 ? cr[l][0].m : in0, k->in_fmt, cr[l][0].a, k->in_fmt,
                                     cr[l][0].b, NX_FP64, NULL},
                                    lens[l], 1, cr[l][0].y, 0, 0};
    fit_result f1;
    memset(&f1, 0, sizeof f1);
    fit_opts fo = {0, 0, 0, NX_ENGINE_FAST, 0, 0, 0};
    nx_err e1 = {0};
    char *text = NULL;
    if (np && fit_run(pair, np, sp, &fo, &f1, &e1) == NX_OK) {
        if (f1.found && f1.point)
            text = strdup(f1.point);
        else if (f1.nnear)
            text = fit_cand_text(sp, f1.near[0].cand);
    }
    fit_result_free(&f1);
    if (!text && fr->nnear)
        text = fit_cand_text(sp, fr->near[0].cand);
    int *cls = calloc(R, sizeof *cls);
    double *z = NULL;
    int added = 0;
    if (!cls || !text)
        goto out;
    /* first the rows that answer a random row otherwise than the class's
     * most; where none do, those the closest point misses */
    int apart = 0;
    if ((marked = apart_rows(k, res, lens[0], 0x73706c6974ULL + lens[0], cls)) && 2 * marked <= in0) {
        char *s0 = k->grid_m && k->grid_n ? NULL : rv_row_selector(cls, R, 1);
        if (s0) {
            free(s0);
            apart = 1;
        } else {
            memset(cls, 0, R * sizeof *cls);
            marked = 0;
        }
    } else {
        memset(cls, 0, R * sizeof *cls);
        marked = 0;
    }
    for (size_t l = 0; l < nl && !apart; l++) {
        const class_rows *c = &cr[l][0];
        free(z);
        nx_err e = {0};
        if (!(z = malloc((c->m ? c->m : 1) * sizeof *z)) ||
            eval_point(text, k->in_fmt, c->m, lens[l], c->a, c->b, z, &e))
            goto out;
        for (size_t i = 0; i < c->m; i++)
            if (!same_bits(z[i], c->y[i]) && !cls[c->r[i]])
                cls[c->r[i]] = 1, marked++;
    }
    if (!marked || 2 * marked > in0)
        goto out;
    char *sel = NULL;
    if (k->grid_m && k->grid_n) {
        /* on a grid: its cells among those no class listed before it takes */
        unsigned char *want = malloc(R), *claimed = malloc(R);
        if (want && claimed) {
            for (size_t r = 0; r < R; r++) {
                want[r] = cls[r] != 0;
                claimed[r] = res->row_class[r] != 0;
            }
            sel = fit_grid_select(want, claimed, (long)k->grid_m, (long)k->grid_n);
        }
        free(want);
        free(claimed);
    }
    if (!sel && !(sel = rv_row_selector(cls, R, 1)))
        goto out;
    char *tree = strdup(res->class_tree[0]);
    if (!tree) {
        free(sel);
        goto out;
    }
    size_t c = res->nclass++;
    res->class_select[c] = sel;
    res->class_tree[c] = tree;
    res->arith_classes++;
    for (size_t r = 0; r < R; r++)
        if (cls[r])
            res->row_class[r] = (int)c;
    added = 1;
out:
    free(z);
    free(cls);
    free(text);
    return added;
}

static char *per_part(const rv_kernel *k, const char *tree, const fit_pair *pairs, size_t np, int verbose,
                      size_t *evals);
/* Where per_part_probed's rows go: as they are, or a batch of the
 * probe_rows rows with them at the class's row indices (part_call). */
typedef struct part_caller {
    const rv_result *res;
    int cls; /* -1: the rows as they are (rv_call) */
} part_caller;
static nx_status per_part_point(rv_kernel *k, rv_result *res, int cls, const char *tree, const fit_pair *pairs,
                                size_t np, int verbose, char **out, nx_err *err);

/* Row classes from the order (res->row_class, over the rows of the probe
 * batch): each class's rows fitted on their own with its tree's space, on
 * rows of every length of lens[0 .. nl) (gather_classes: calls enough for
 * RV_CLASS_MIN_ROWS rows of the smallest class), and the point put
 * together, the class of most rows as the point itself and each other
 * class under its selector (docs/numerics.md section 4.3).  Where class 0
 * fits no point, split_class0 may add an arithmetic class, once. */
static nx_status fit_classes(rv_kernel *k, rv_result *res, const size_t *lens, size_t nl, uint64_t seed, int verbose,
                             fit_result *out, nx_err *err)
{
    nx_status st = NX_OK;
    class_rows *cr[RV_INDUCE_MAX] = {NULL};
    char *text = NULL;
    size_t len = 0, cap = 0;
    int bad = 0, split = 0;
    memset(out, 0, sizeof *out);
again:
    for (size_t l = 0; l < nl && !st; l++) {
        if (!(cr[l] = calloc(res->nclass, sizeof *cr[l])))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        else
            st = gather_classes(k, res, lens[l], seed ^ (0x636c617373ULL * (l + 1)), cr[l], err);
    }
    for (size_t c = 0; c < res->nclass && !st; c++) {
        fit_space sp;
        fit_result fr;
        memset(&fr, 0, sizeof fr);
        if ((st = tree_space(res->class_tree[c], k, &sp, err))) {
            fit_space_free(&sp);
            break;
        }
        fit_pair pair[RV_INDUCE_MAX];
        size_t np = 0;
        for (size_t l = 0; l < nl; l++)
            if (cr[l][c].m)
                pair[np++] = (fit_pair){{cr[l][c].m, k->in_fmt, cr[l][c].a, k->in_fmt, cr[l][c].b, NX_FP64, NULL},
                                        lens[l], 1, cr[l][c].y, 0, 0};
        fit_opts fo = {0, 0, verbose, NX_ENGINE_FAST, 0, 1, 0};
        st = fit_run(pair, np, &sp, &fo, &fr, err);
        if (!st && !(fr.found && fr.point && fr.point[0] == '{')) {
            /* no point of the space: each part in a setting of its own,
             * read from probes at the class's rows, else searched */
            char *pp = NULL;
            st = per_part_point(k, res, (int)c, res->class_tree[c], pair, np, verbose, &pp, err);
            if (pp) {
                free(fr.point);
                fr.point = pp;
                fr.found = 1;
            }
        }
        if (!st && !(fr.found && fr.point && fr.point[0] == '{') && c == 0 && !split &&
            split_class0(k, res, &sp, &fr, cr, lens, nl)) {
            /* again with the new class, its rows gathered */
            split = 1;
            fit_result_free(&fr);
            fit_space_free(&sp);
            for (size_t l = 0; l < nl; l++) {
                if (cr[l])
                    class_rows_free(cr[l], res->nclass - 1);
                free(cr[l]);
                cr[l] = NULL;
            }
            free(text);
            text = NULL;
            len = cap = 0;
            memset(out, 0, sizeof *out);
            goto again;
        }
        fit_space_free(&sp);
        if (!st && fr.found && fr.point && fr.point[0] == '{') {
            const char *body = fr.point + 1;
            while (*body == ' ')
                body++;
            size_t bl = strlen(body);
            while (bl && (body[bl - 1] == ' ' || body[bl - 1] == '}'))
                bl--;
            if (c == 0 && k->grid_m && k->grid_n)
                bad |= appendf(&text, &len, &cap, "{ %.*s, grid = [%zu, %zu]", (int)bl, body, k->grid_m, k->grid_n);
            else if (c == 0)
                bad |= appendf(&text, &len, &cap, "{ %.*s", (int)bl, body);
            else
                bad |= appendf(&text, &len, &cap, "%s{ select = \"%s\", %.*s }", c == 1 ? ", rows = [" : ", ",
                               res->class_select[c], (int)bl, body);
            out->nfit += fr.nfit > 0 ? fr.nfit - 1 : 0;
        } else if (!st) {
            if (verbose)
                fprintf(stderr, "reveal: no point of the space fits the rows of class %zu (tree %s)\n", c,
                        res->class_tree[c]);
            fit_result_free(&fr);
            goto out;
        }
        fit_result_free(&fr);
    }
    if (st)
        goto out;
    bad |= appendf(&text, &len, &cap, "%s }", res->nclass > 1 ? "]" : "");
    if (bad) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    out->found = 1;
    out->point = text;
    out->nfit++;
    text = NULL;
out:
    for (size_t l = 0; l < nl; l++) {
        if (cr[l])
            class_rows_free(cr[l], res->nclass);
        free(cr[l]);
    }
    free(text);
    return st;
}

/* Rows rounded up to whole grids of a grid kernel (at least one). */
static size_t grid_round(const rv_kernel *k, size_t rows)
{
    const size_t MN = k->grid_m * k->grid_n;
    return MN ? (rows + MN - 1) / MN * MN : rows;
}

/* The search rows of a grid kernel (--grid M,N), each batch of M * N one
 * gemm, so that it goes as one call: the kernel's cell (i, j) is A's row
 * i against B's column j, so a call holds at most D = min(M, N) rows of
 * their own a and b.  Batch q's cells (x, x), x < D, hold targeted rows
 * (of the nt at the front, taken in turn from an offset drawn from seed,
 * so that the calls of a class's gathering go through all of them), the
 * other cells A's and B's random rows against each other: grid row x (and
 * column x) past D a random row of the batch.  Without this the targeted
 * and random rows were packed about D to a call (1000 calls where 16 do
 * at 36 x 40).  With nt = 0, fresh random rows as whole gemms (as_calls).
 * Rows past the last whole batch are left. */
static void grid_search_rows(const rv_kernel *k, size_t rows, size_t n, size_t nt, uint64_t seed, double *a,
                             double *b)
{
    const size_t M = k->grid_m, N = k->grid_n, MN = M * N, D = M < N ? M : N;
    if (!MN || rows < MN)
        return;
    double *ta = malloc((nt ? nt : 1) * n * sizeof *ta), *tb = malloc((nt ? nt : 1) * n * sizeof *tb);
    double *A = malloc(M * n * sizeof *A), *B = malloc(N * n * sizeof *B);
    if (!ta || !tb || !A || !B) {
        /* left as they are: packed, more calls, the same rows */
        free(ta);
        free(tb);
        free(A);
        free(B);
        return;
    }
    memcpy(ta, a, nt * n * sizeof *ta);
    memcpy(tb, b, nt * n * sizeof *tb);
    size_t off = nt ? (size_t)(seed >> 11) % nt : 0;
    for (size_t c = 0, q = 0; c + MN <= rows; c += MN, q++) {
        /* random rows of this batch: those past the targeted ones */
        size_t r0 = c < nt ? (nt < c + MN ? nt - c : 0) : 0, nr = MN - r0;
        for (size_t x = 0; x < M || x < N; x++) {
            const double *sa, *sb;
            if (x < D && nt) {
                size_t t = (off + q * D + x) % nt;
                sa = ta + t * n;
                sb = tb + t * n;
            } else {
                size_t r = c + r0 + x % nr;
                sa = a + r * n;
                sb = b + r * n;
            }
            if (x < M)
                memcpy(A + x * n, sa, n * sizeof *A);
            if (x < N)
                memcpy(B + x * n, x < D && nt ? sb : b + (c + r0 + (x + M) % nr) * n, n * sizeof *B);
        }
        for (size_t r = 0; r < MN; r++) {
            memcpy(a + (c + r) * n, A + (r / N) * n, n * sizeof *a);
            memcpy(b + (c + r) * n, B + (r % N) * n, n * sizeof *b);
        }
    }
    free(ta);
    free(tb);
    free(A);
    free(B);
}

/* A kernel that takes one b for every row of a call (--shared-b): row 0's
 * b for every row. */
static void shared_b(const rv_kernel *k, size_t rows, size_t n, double *b)
{
    if (k->shared_b)
        for (size_t r = 1; r < rows; r++)
            memcpy(b + r * n, b, n * sizeof *b);
}

/* Fresh random rows drawn as the kernel's calls take them: one b for all
 * (--shared-b), or whole gemms (--grid), so that each batch is one call. */
static void as_calls(const rv_kernel *k, size_t rows, size_t n, double *a, double *b)
{
    shared_b(k, rows, n, b);
    grid_search_rows(k, rows, n, 0, 0, a, b);
}

/* The rows the arithmetic is fitted on: a quarter that tell fma apart, a
 * quarter of pinned pairs, the rest random (from seed).  A kernel with one
 * b per call gets random rows alone, with row 0's b: the targeted rows
 * each need a b of their own. */
static void search_rows(const rv_kernel *k, size_t rows, size_t n, uint64_t seed, double *a, double *b)
{
    nx_fmt f = k->in_fmt;
    size_t nt = 0;
    if (!k->shared_b) {
        nt = fma_rows(f, n, rows / 4, a, b);
        nt += pin_rows(f, n, rows / 4, a + nt * n, b + nt * n);
    }
    rand_rows(f, rows - nt, n, seed, a + nt * n, b + nt * n);
    shared_b(k, rows, n, b);
    grid_search_rows(k, rows, n, nt, seed, a, b);
}

/* Several points of the space fit the search rows: points that differ on
 * rare rows (a body + tail added in fp32 or in double, which differ where
 * double rounding does).  More fresh rows, at the length with the longer
 * remainder of the two probed, decide among the winner and the next
 * RV_DISAMBIG_MAX that fit: the first (space order) that reproduces all of
 * them is kept.  Where none does, the winner stays (the confirmation then
 * says so). */
#define RV_DISAMBIG_ROWS 4000
#define RV_SPARSE_ROWS 8192
#define RV_SPARSE_KEEP 1024

/* One term of a sparse row (part_pool) where rounding decides: a signed
 * power of two (or 1.5 or 1.75 times one) near 1, near 2^-24, near 2^-48
 * or just below 2^-53, a member of the input format, so that a sum in fp32
 * and one in fp64, an fma and a separate product, or a sum in fp64 rounded
 * to fp32 and one rounded once round apart on some rows (1 + 2^-24 +
 * 2^-48 is above fp32's midpoint, 1 + 2^-24 a tie, 1 + 2^-24 + 2^-54 a
 * tie again once rounded to fp64).  b is 1 or a value of the same kind.
 * a in v, b in w; 0 where 8 draws gave no pair the format holds. */
static int sparse_term(nx_fmt f, uint64_t *s, double *v, double *w)
{
    static const int exps[] = {0, 1, -1, -12, -23, -24, -25, -26, -36, -47, -48, -49, -50, -54, -55};
    static const double mants[] = {1.0, 1.5, 1.75};
    for (int tries = 0; tries < 8; tries++) {
        uint64_t x = next64(s);
        double vv = ldexp(mants[x % 3], exps[(x >> 8) % (sizeof exps / sizeof *exps)]);
        if ((x >> 20) & 1)
            vv = -vv;
        double ww = (x >> 21) % 4 == 0 ? ldexp(mants[(x >> 24) % 3], exps[(x >> 28) % 4]) : 1.0;
        if (nx_is_member(f, vv) && nx_is_member(f, ww)) {
            *v = vv;
            *w = ww;
            return 1;
        }
    }
    return 0;
}

static void part_pool(nx_fmt f, int shared, size_t rows, size_t n, uint64_t seed, double *a, double *b);

/* Rows of three terms where one rounding more or less decides: c near 1,
 * h a half unit in the last place of 1 in a format (bf16, fp16, fp32) and
 * t far below it (the rest of a sum the next format up keeps or drops), at
 * random places, each of h and t three times in four among the last 1
 * to 64 terms (where a tail or a peel runs in its own arithmetic); signs at
 * random, b 1.  c + h is a tie in that format; c + h + t one only where t
 * was lost on the way (a sum rounded twice, once in an fp64 tail, then to
 * fp32, against one rounded once). */
static void tie_rows(nx_fmt f, size_t rows, size_t n, uint64_t seed, double *a, double *b)
{
    static const int hs[] = {-8, -11, -24}, ts[] = {-25, -30, -54, -60, -13, -9};
    static const double cs[] = {1.0, 1.5, -1.0, 2.0};
    uint64_t s = seed;
    for (size_t r = 0; r < rows; r++) {
        double *ra = a + r * n, *rb = b + r * n;
        for (size_t i = 0; i < n; i++)
            ra[i] = 0, rb[i] = 1;
        uint64_t x = next64(&s);
        double c = cs[x % 4], h = ldexp(1, hs[(x >> 4) % 3]) * ((x >> 8) & 1 ? -1 : 1),
               t = ldexp(1, ts[(x >> 12) % 6]) * ((x >> 16) & 1 ? -1 : 1);
        if (c == 1.5 || c == 2.0)
            h *= 2; /* the half unit of 1.5 and 2 */
        size_t tail = (size_t)1 << ((x >> 20) % 7), i = next64(&s) % n, j, l;
        if (tail > n)
            tail = n;
        j = (x >> 24) % 4 ? n - 1 - next64(&s) % tail : next64(&s) % n;
        l = (x >> 26) % 4 ? n - 1 - next64(&s) % tail : next64(&s) % n;
        if (i == j || i == l || j == l || !nx_is_member(f, c) || !nx_is_member(f, h) || !nx_is_member(f, t))
            continue;
        ra[i] = c;
        ra[j] = h;
        ra[l] = t;
    }
}

/* Evaluates each candidate text on the rows: z[c * rows + r]; a candidate
 * that cannot be evaluated gets NaN everywhere (it never matches). */
static nx_status eval_all(char **cands, size_t nc, nx_fmt in, size_t rows, size_t n, const double *a,
                          const double *b, double *z)
{
    for (size_t c = 0; c < nc; c++) {
        nx_err pe = {0};
        if (eval_point(cands[c], in, rows, n, a, b, z + c * rows, &pe)) {
            if (pe.code == NX_ENOMEM)
                return NX_ENOMEM;
            for (size_t r = 0; r < rows; r++)
                z[c * rows + r] = NAN;
        }
    }
    return NX_OK;
}

static nx_status disambiguate(rv_kernel *k, const rv_opts *o, rv_result *res, const fit_space *sp, fit_result *fr,
                              uint64_t seed, nx_err *err)
{
    size_t n = o->n;
    if (res->induce == RV_INDUCE_HOLDS || res->induce == RV_INDUCE_RENAMED)
        n = res->induce_n; /* 3 or 7 mod 8: a remainder of 3 or more for every power-of-two width */
    size_t rows = o->disambig_rows ? o->disambig_rows : RV_DISAMBIG_ROWS, cap = ((size_t)1 << 22) / n;
    if (rows > cap)
        rows = cap ? cap : 1;
    double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b), *y = malloc(rows * sizeof *y),
           *z = malloc(rows * sizeof *z);
    nx_status st = NX_OK;
    char *keep = NULL;
    size_t held = 0;
    if (!a || !b || !y || !z) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* the candidates: the winner, then the next that fit (space order) */
    size_t nc = fr->nalt + 1;
    char *cands[FIT_MAX_ALT + 1] = {NULL};
    int alive[FIT_MAX_ALT + 1];
    for (size_t i = 0; i < nc; i++) {
        cands[i] = i == 0 ? strdup(fr->point) : fit_cand_text(sp, fr->alt[i - 1]);
        alive[i] = 1;
        if (!cands[i]) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto free_cands;
        }
    }
    /* 1: sparse rows on which the candidates disagree, asked of the kernel */
    size_t srows = RV_SPARSE_ROWS, scap = ((size_t)1 << 22) / n;
    if (srows > scap)
        srows = scap ? scap : 1;
    double *sa = malloc(srows * n * sizeof *sa), *sb = malloc(srows * n * sizeof *sb),
           *sz = malloc(nc * srows * sizeof *sz);
    size_t *pick = malloc(srows * sizeof *pick), npick = 0;
    if (!sa || !sb || !sz || !pick)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    if (!st) {
        part_pool(k->in_fmt, k->shared_b, srows / 2, n, seed ^ 0x737061727365ULL, sa, sb);
        tie_rows(k->in_fmt, srows - srows / 2, n, seed ^ 0x746965ULL, sa + srows / 2 * n, sb + srows / 2 * n);
        shared_b(k, srows, n, sb);
        if (eval_all(cands, nc, k->in_fmt, srows, n, sa, sb, sz))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t r = 0; r < srows && !st && npick < RV_SPARSE_KEEP && npick < rows; r++) {
        int differ = 0;
        for (size_t c = 1; c < nc && !differ; c++)
            differ = !same_bits(sz[r], sz[c * srows + r]);
        if (differ) {
            memcpy(a + npick * n, sa + r * n, n * sizeof *a);
            memcpy(b + npick * n, sb + r * n, n * sizeof *b);
            pick[npick++] = r;
        }
    }
    if (!st && npick) {
        if (!(st = rv_call(k, npick, n, a, b, y, err)))
            for (size_t c = 0; c < nc; c++)
                for (size_t q = 0; q < npick && alive[c]; q++)
                    alive[c] = same_bits(y[q], sz[c * srows + pick[q]]);
    }
    free(sa);
    free(sb);
    free(sz);
    free(pick);
    res->disambig_sparse = npick;
    if (st)
        goto free_cands;
    /* 2: fresh random rows */
    rand_rows(k->in_fmt, rows, n, seed ^ 0x6469736dULL, a, b);
    as_calls(k, rows, n, a, b);
    if ((st = rv_call(k, rows, n, a, b, y, err)))
        goto free_cands;
    for (size_t i = 0; i < nc; i++) {
        int ok = alive[i];
        if (ok) {
            nx_err pe = {0};
            ok = eval_point(cands[i], k->in_fmt, rows, n, a, b, z, &pe) == NX_OK;
            for (size_t r = 0; r < rows && ok; r++)
                ok = same_bits(y[r], z[r]);
        }
        if (o->verbose)
            fprintf(stderr, "reveal: %zu sparse and %zu random rows at n = %zu: %s %s\n", npick, rows, n,
                    ok ? "holds" : "fails", cands[i]);
        if (ok && !keep) {
            keep = cands[i];
            cands[i] = NULL;
        }
        held += ok;
    }
free_cands:
    for (size_t i = 0; i < nc; i++)
        free(cands[i]);
    if (st)
        goto out;
    res->disambig_rows = rows;
    res->disambig_n = n;
    res->disambig_tried = fr->nalt + 1;
    res->disambig_held = held;
    if (keep) {
        nx_point pt;
        if (pt_from_text(keep, "revealed point", &pt, err) == NX_OK) {
            char *canon = nx_point_print(&pt);
            nx_point_free(&pt);
            if (canon) {
                free(fr->point);
                fr->point = canon;
            }
        } else
            memset(err, 0, sizeof *err);
    }
out:
    free(keep);
    free(a);
    free(b);
    free(y);
    free(z);
    return st;
}

/* --- per-part arithmetic: every part in a setting of its own ------------- */

#define RV_PARTS_MAX FIT_PARTS_MAX

/* The settings a part is tried in (beside inheriting its parent's). */
static const char *const part_options[] = {"acc=fp64", "acc=fp32", "fma=false", "fma=true", "acc=fp64, fma=false",
                                           "acc=fp32, fma=false", "acc=fp64, product=fp32", "acc=fp64, fma=true"};
#define NPARTOPT ((int)(sizeof part_options / sizeof *part_options))
/* The point's own settings the parts start from. */
static const char *const root_options[] = {"acc = \"fp32\", fma = true", "acc = \"fp32\", fma = false",
                                           "acc = \"fp64\", fma = true", "acc = \"fp64\", fma = false"};
#define NROOTOPT ((int)(sizeof root_options / sizeof *root_options))
#define RV_PART_ROUNDS 3

/* The point: tree with part q in part_options[choice[q]] (-1: none),
 * under root settings r.  Malloc'd. */
static char *part_text(const char *tree, const size_t *ends, size_t np, const int *choice, int r)
{
    char *br[RV_PARTS_MAX];
    for (size_t q = 0; q < np; q++)
        br[q] = choice[q] >= 0 ? (char *)part_options[choice[q]] : NULL;
    char *t = fit_with_settings(tree, ends, np, br);
    if (!t)
        return NULL;
    size_t cap = strlen(t) + 64;
    char *out = malloc(cap);
    if (out)
        snprintf(out, cap, "{ tree = \"%s\", %s }", t, root_options[r]);
    free(t);
    return out;
}

/* How many rows of the pairs the point text reproduces (-1: it does not
 * evaluate). */
static long part_score(const char *text, const rv_kernel *k, const fit_pair *pairs, size_t np, double *z)
{
    long ok = 0;
    for (size_t p = 0; p < np; p++) {
        nx_err e = {0};
        if (eval_point(text, k->in_fmt, pairs[p].in.rows, pairs[p].n, pairs[p].in.a, pairs[p].in.b, z, &e))
            return -1;
        for (size_t r = 0; r < pairs[p].in.rows; r++)
            ok += same_bits(z[r], pairs[p].y[r]);
    }
    return ok;
}

/* No point of the space fits: each part of the tree in a setting of its
 * own (docs/reveal.md "Per-part arithmetic").  From each of the point's
 * own settings, one part at a time takes the option that reproduces the
 * most rows of the pairs (the first of equals, inheriting before any), for
 * RV_PART_ROUNDS rounds or until every row is reproduced.  The point
 * (malloc'd) where one is, else NULL; *evals counts the points evaluated. */
static char *per_part(const rv_kernel *k, const char *tree, const fit_pair *pairs, size_t np, int verbose,
                      size_t *evals)
{
    size_t begins[RV_PARTS_MAX], ends[RV_PARTS_MAX], nparts = 0, total = 0, maxrows = 1;
    *evals = 0;
    if (strstr(tree, "chain(") || strstr(tree, "expr(") || strchr(tree, '[') || strchr(tree, '@'))
        return NULL;
    fit_tree_args(tree, 0, strlen(tree), begins, ends, &nparts, RV_PARTS_MAX);
    if (!nparts)
        return NULL;
    for (size_t p = 0; p < np; p++) {
        total += pairs[p].in.rows;
        if (pairs[p].in.rows > maxrows)
            maxrows = pairs[p].in.rows;
    }
    double *z = malloc(maxrows * sizeof *z);
    char *found = NULL;
    if (!z)
        return NULL;
    for (int r = 0; r < NROOTOPT && !found; r++) {
        int choice[RV_PARTS_MAX];
        for (size_t q = 0; q < nparts; q++)
            choice[q] = -1;
        char *cur = part_text(tree, ends, nparts, choice, r);
        long best = cur ? part_score(cur, k, pairs, np, z) : -1;
        (*evals)++;
        for (int round = 0; round < RV_PART_ROUNDS && cur && best < (long)total; round++) {
            int moved = 0;
            for (size_t q = 0; q < nparts && best < (long)total; q++) {
                int keep = choice[q];
                for (int c = -1; c < NPARTOPT; c++) {
                    if (c == keep)
                        continue;
                    choice[q] = c;
                    char *t = part_text(tree, ends, nparts, choice, r);
                    long sc = t ? part_score(t, k, pairs, np, z) : -1;
                    (*evals)++;
                    if (sc > best) {
                        best = sc;
                        free(cur);
                        cur = t;
                        keep = c;
                        moved = 1;
                    } else
                        free(t);
                }
                choice[q] = keep;
            }
            if (!moved)
                break;
        }
        if (verbose && cur)
            fprintf(stderr, "reveal: per-part arithmetic from %s: %ld of %zu rows: %s\n", root_options[r], best, total,
                    cur);
        if (cur && best == (long)total)
            found = cur;
        else
            free(cur);
    }
    free(z);
    if (!found)
        return NULL;
    /* canonical */
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(found, "revealed point", &pt, &e) == NX_OK) {
        char *canon = nx_point_print(&pt);
        nx_point_free(&pt);
        if (canon) {
            free(found);
            found = canon;
        }
    }
    return found;
}

/* --- per-part arithmetic from targeted probes ---------------------------- */

/* A part's setting, in full: every part of a design point carries one, so
 * that a part's setting reaches its own operations alone (a child's own
 * overrides it).  The first of equals is preferred: the common ones first. */
typedef struct part_set {
    const char *acc;
    int fma;
    const char *rnd;
    const char *prod;
    const char *store; /* NULL: none (the seventh edition's store=FMT; never the root's) */
} part_set;
static const part_set part_sets[] = {
    {"fp32", 1, "rne", "exact", NULL}, {"fp32", 0, "rne", "exact", NULL}, {"fp64", 1, "rne", "exact", NULL},
    {"fp64", 0, "rne", "exact", NULL}, {"fp64", 0, "rne", "fp32", NULL},  {"fp32", 1, "rz", "exact", NULL},
    {"fp32", 0, "rz", "exact", NULL},  {"fp64", 1, "rz", "exact", NULL},  {"fp64", 0, "rz", "exact", NULL},
    {"fp32", 1, "ru", "exact", NULL},  {"fp32", 0, "ru", "exact", NULL},  {"fp32", 1, "rd", "exact", NULL},
    {"fp32", 0, "rd", "exact", NULL},  {"fp32", 0, "rne", "bf16", NULL},  {"bf16", 1, "rne", "exact", NULL},
    {"bf16", 0, "rne", "exact", NULL}, {"fp16", 1, "rne", "exact", NULL}, {"fp16", 0, "rne", "exact", NULL},
    /* a double part kept in a float (`float s = (float)d`) */
    {"fp64", 1, "rne", "exact", "fp32"}, {"fp64", 0, "rne", "exact", "fp32"},
};
#define NPSET ((int)(sizeof part_sets / sizeof *part_sets))
/* A row isolates a part when the part's setting changes its result and
 * the other parts' do not: tried with the part in each of iso_probe and
 * the others all in each of iso_base. */
static const int iso_probe[] = {0, 1, 2, 5, 9};
static const int iso_base[] = {0, 3, 6, 9, 11};
#define NISOP 5
#define NISOB 5
#define RV_PART_POOL_MAX 1024
#define RV_PART_POOL_MIN 16
#define RV_PART_POOL_TERMS ((size_t)1 << 20)
#define RV_PART_PAIR 8                            /* rows a part and length where each probe setting */
#define RV_PART_ROWS (RV_PART_PAIR * (NISOP - 1)) /* moves the first's result: at most (and as many negated) */

/* The parent of part q: the innermost part around it (parts are listed
 * outermost first), else np, the root. */
static size_t part_parent(const size_t *begins, const size_t *ends, size_t np, size_t q)
{
    size_t par = np;
    for (size_t p = 0; p < q; p++)
        if (begins[p] <= begins[q] && ends[q] <= ends[p] && ends[p] - begins[p] > ends[q] - begins[q])
            par = p;
    return par;
}

/* The point: tree with part q in part_sets[set[q]], the root in
 * part_sets[set[np]], out the kernel's.  minimal = 0: every part's setting
 * written in full (a design point: a part's setting reaches its own
 * additions alone); 1: only the keys that differ from its parent's (the
 * enclosing part, else the root), and a store wherever there is one (it
 * is not inherited).  Malloc'd. */
static char *set_text(const char *tree, const size_t *begins, const size_t *ends, size_t np, const int *set,
                      nx_fmt out, int minimal)
{
    char kv[RV_PARTS_MAX][160], *br[RV_PARTS_MAX];
    for (size_t q = 0; q < np; q++) {
        const part_set *s = &part_sets[set[q]],
                       *ps = minimal ? &part_sets[set[part_parent(begins, ends, np, q)]] : NULL;
        size_t kl = 0, cap = sizeof kv[q];
        char *k = kv[q];
        k[0] = 0;
        if (!ps || strcmp(s->acc, ps->acc))
            kl += (size_t)snprintf(k + kl, cap - kl, "%sacc=%s", kl ? ", " : "", s->acc);
        if (!ps || s->fma != ps->fma)
            kl += (size_t)snprintf(k + kl, cap - kl, "%sfma=%s", kl ? ", " : "", s->fma ? "true" : "false");
        if (!ps || strcmp(s->prod, ps->prod))
            kl += (size_t)snprintf(k + kl, cap - kl, "%sproduct=%s", kl ? ", " : "", s->prod);
        if (!ps || strcmp(s->rnd, ps->rnd))
            kl += (size_t)snprintf(k + kl, cap - kl, "%srounding=%s", kl ? ", " : "", s->rnd);
        if (s->store)
            kl += (size_t)snprintf(k + kl, cap - kl, "%sstore=%s", kl ? ", " : "", s->store);
        br[q] = k;
    }
    char *t = fit_with_settings(tree, ends, np, br);
    if (!t)
        return NULL;
    size_t cap = strlen(t) + 192;
    char *o = malloc(cap);
    const part_set *r = &part_sets[set[np]];
    if (o)
        snprintf(o, cap,
                 "{ tree = \"%s\", acc = \"%s\", fma = %s, rounding = \"%s\", product = \"%s\", out = \"%s\", "
                 "out_rounding = \"rne\" }",
                 t, r->acc, r->fma ? "true" : "false", r->rnd, r->prod, nx_format(out)->name);
    free(t);
    return o;
}

/* The rows to the kernel: with a class, batches of the probe_rows rows
 * with the rows at the class's row indices, zeros elsewhere. */

static nx_status part_call(rv_kernel *k, const part_caller *pc, size_t m, size_t n, const double *a,
                           const double *b, double *y, nx_err *err)
{
    if (pc->cls < 0)
        return rv_call(k, m, n, a, b, y, err);
    size_t R = pc->res->probe_rows;
    double *A = malloc(R * n * sizeof *A), *B = malloc(R * n * sizeof *B), *Y = malloc(R * sizeof *Y);
    nx_status st = NX_OK;
    if (!A || !B || !Y)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t done = 0; done < m && !st;) {
        for (size_t i = 0; i < R * n; i++)
            A[i] = 0, B[i] = 1;
        size_t put = done;
        for (size_t r = 0; r < R && put < m; r++)
            if (pc->res->row_class[r] == pc->cls) {
                memcpy(A + r * n, a + put * n, n * sizeof *A);
                memcpy(B + r * n, b + put * n, n * sizeof *B);
                put++;
            }
        if (put == done)
            break; /* no row of the class */
        if ((st = rv_call(k, R, n, A, B, Y, err)))
            break;
        for (size_t r = 0; r < R && done < put; r++)
            if (pc->res->row_class[r] == pc->cls)
                y[done++] = Y[r];
    }
    free(A);
    free(B);
    free(Y);
    return st;
}

/* The pool the probe rows are chosen from: sparse_rows' terms (2 to 4 of
 * them, where an fp32 and an fp64 sum, a fused and a separate step, or two
 * rounding modes round apart) at places of five kinds, by row: anywhere;
 * within 16 of each other; in one lane of a stride 2 to 64 apart; in the
 * last 1, 2, 4, ..., 64 terms; in the first 1, 2, 4, ..., 64.  A third
 * of the terms are products of more bits than the format holds.  b is 1
 * for a kernel with one b for all rows (and no such products). */
static void part_pool(nx_fmt f, int shared, size_t rows, size_t n, uint64_t seed, double *a, double *b)
{
    uint64_t s = seed;
    for (size_t r = 0; r < rows; r++) {
        double *ra = a + r * n, *rb = b + r * n;
        for (size_t i = 0; i < n; i++)
            ra[i] = 0, rb[i] = 1;
        int k = 2 + (int)(next64(&s) % 3), mode = (int)(r % 5);
        size_t anchor = next64(&s) % n, span = (size_t)1 << (next64(&s) % 7), stride = (size_t)2 << (next64(&s) % 6);
        if (span > n)
            span = n;
        size_t lane = anchor % stride, per = (n - lane + stride - 1) / stride;
        for (int q = 0; q < k; q++) {
            size_t x = (size_t)next64(&s), i;
            switch (mode) {
            case 0: i = x % n; break;
            case 1: i = (anchor + x % 16) % n; break;
            case 2: i = lane + stride * (x % per); break;
            /* the last or first span terms, distinct while k <= span */
            case 3: i = n - span + ((size_t)q + x % 2) % span; break;
            default: i = ((size_t)q + x % 2) % span; break;
            }
            double v, w;
            if (!shared && x % 3 == 0) {
                /* a product of more bits than the format holds: (1 +
                 * 2^-j)(1 + 2^-j'), j and j' about half the precision,
                 * where a fused step, a separate one and a product
                 * rounded to another format part */
                int p = nx_format(f)->p, j = p / 2 - 1 + (int)((x >> 8) % 3), j2 = p / 2 - 1 + (int)((x >> 12) % 3);
                static const int es[] = {0, -12, -24, 1};
                v = ldexp(1 + ldexp(1, -j), es[(x >> 16) % 4]);
                v = (x >> 20) & 1 ? -v : v;
                w = 1 + ldexp(1, -j2);
                if (nx_is_member(f, v) && nx_is_member(f, w)) {
                    ra[i] = v;
                    rb[i] = w;
                }
            } else if (sparse_term(f, &s, &v, &w)) {
                ra[i] = v;
                rb[i] = shared ? 1.0 : w;
            }
        }
    }
}

/* Evaluates the design point with every part in base setting o and part q
 * (nparts: the root) in x, over rows; NaN where it cannot be evaluated. */
static void design_eval(const char *tree, const size_t *begins, const size_t *ends, size_t nparts, size_t q, int x,
                        int o, nx_fmt in, nx_fmt out, size_t rows, size_t n, const double *a, const double *b, double *z,
                        size_t *evals)
{
    int set[RV_PARTS_MAX + 1];
    for (size_t p = 0; p <= nparts; p++)
        set[p] = o;
    set[q] = x;
    char *t = set_text(tree, begins, ends, nparts, set, out, 0);
    nx_err e = {0};
    (*evals)++;
    if (!t || eval_point(t, in, rows, n, a, b, z, &e))
        for (size_t r = 0; r < rows; r++)
            z[r] = NAN;
    free(t);
}

/* The keys in which part settings x and y differ. */
static int set_keys(int x, int y)
{
    const part_set *a = &part_sets[x], *b = &part_sets[y];
    return !!strcmp(a->acc, b->acc) + (a->fma != b->fma) + !!strcmp(a->rnd, b->rnd) + !!strcmp(a->prod, b->prod) +
           (a->store != NULL);
}

/* Given the root's setting in set[nparts], each part's, outermost first:
 * its parent's where its rows allow that (or none isolates it), else the
 * allowed one that differs from the parent's in the fewest keys (the
 * first of equals).  The keys to write in all, or -1 where a part allows
 * none. */
static int part_assign(const size_t *begins, const size_t *ends, size_t nparts, unsigned char (*cons)[NPSET],
                       const unsigned char *seen, int *set)
{
    int keys = 0;
    for (size_t q = 0; q < nparts; q++) {
        int pv = set[part_parent(begins, ends, nparts, q)], x = pv;
        if (seen[q] && !cons[q][pv]) {
            x = -1;
            for (int c = 0; c < NPSET; c++)
                if (cons[q][c] && (x < 0 || set_keys(c, pv) < set_keys(x, pv)))
                    x = c;
        }
        if (x < 0)
            return -1;
        set[q] = x;
        keys += set_keys(x, pv);
    }
    return keys;
}

/* No point of the space fits: each part's setting read from probes of its
 * own (docs/reveal.md "Per-part arithmetic").  At each length of the
 * pairs, a pool of sparse rows (part_pool) is evaluated with each part in
 * turn in the iso_probe settings and every other part in each of the
 * iso_base settings: a row on which the others' settings give one result
 * for every probe setting, and which the part's setting moves, isolates
 * the part (only its own additions round there).  Up to RV_PART_ROWS such
 * rows a part go to the kernel (pc: as they are, or at a class's row
 * indices), and the part allows the settings of part_sets that give the
 * kernel's result on every one of them where the others' settings agree.
 * The root and the parts then take settings by part_assign; where the
 * point misses rows of the pairs, the parts move among their allowed
 * settings by the count of those rows (*settled counts the parts that
 * moved).  *out is the point (malloc'd), or
 * NULL where a part allows none or rows stay missed (per_part's search is
 * tried next); an error is the kernel's. */
static nx_status per_part_probed(rv_kernel *k, const part_caller *pc, const char *tree, const fit_pair *pairs,
                                 size_t npairs, int verbose, char **out, size_t *sent, size_t *settled, size_t *evals,
                                 nx_err *err)
{
    size_t ends[RV_PARTS_MAX], begins[RV_PARTS_MAX], nparts = 0;
    *out = NULL;
    if (strstr(tree, "chain(") || strstr(tree, "expr(") || strchr(tree, '[') || strchr(tree, '@'))
        return NX_OK;
    fit_tree_args(tree, 0, strlen(tree), begins, ends, &nparts, RV_PARTS_MAX);
    nx_fmt in = k->in_fmt, of = k->out_fmt >= 0 ? (nx_fmt)k->out_fmt : NX_FP32;
    /* cons[q][x]: part q (nparts: the root) agrees with setting x on every
     * probe row of its own; seen[q]: it had some */
    unsigned char cons[RV_PARTS_MAX + 1][NPSET], seen[RV_PARTS_MAX + 1] = {0};
    memset(cons, 1, sizeof cons);
    nx_status st = NX_OK;
    size_t lens[RV_INDUCE_MAX], nl = 0;
    for (size_t p = 0; p < npairs && nl < RV_INDUCE_MAX; p++) {
        size_t l = 0;
        while (l < nl && lens[l] != pairs[p].n)
            l++;
        if (l == nl)
            lens[nl++] = pairs[p].n;
    }
    for (size_t l = 0; l < nl && !st; l++) {
        /* at most RV_PART_POOL_TERMS terms a pool (8 MiB an array) */
        size_t n = lens[l], m = RV_PART_POOL_TERMS / n;
        m = m < RV_PART_POOL_MIN ? RV_PART_POOL_MIN : m > RV_PART_POOL_MAX ? RV_PART_POOL_MAX : m;
        size_t nq = nparts + 1, dmax = 2 * nq * RV_PART_ROWS;
        double *a = malloc(m * n * sizeof *a), *b = malloc(m * n * sizeof *b), *z = malloc(NISOP * NISOB * m * sizeof *z),
               *da = malloc(dmax * n * sizeof *da), *db = malloc(dmax * n * sizeof *db), *dy = malloc(dmax * sizeof *dy),
               *pz = malloc(NISOB * 2 * RV_PART_ROWS * sizeof *pz), *ca = malloc(m * n * sizeof *ca),
               *cb = malloc(m * n * sizeof *cb);
        size_t off[RV_PARTS_MAX + 2], nd = 0;
        if (!a || !b || !z || !da || !db || !dy || !pz || !ca || !cb) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto next;
        }
        part_pool(in, k->shared_b, m, n, 0x7061727473ULL + n, a, b);
        for (size_t q = 0; q < nq; q++) {
            off[q] = nd;
            /* the rows whose result the others' settings leave alone with
             * the part in the first probe setting, then the other probe
             * settings on those alone */
            for (int oi = 0; oi < NISOB; oi++)
                design_eval(tree, begins, ends, nparts, q, iso_probe[0], iso_base[oi], in, of, m, n, a, b, z + (size_t)oi * m,
                            evals);
            size_t cm = 0;
            for (size_t r = 0; r < m; r++) {
                int iso = !isnan(z[r]);
                for (int oi = 1; oi < NISOB && iso; oi++)
                    iso &= same_bits(z[r], z[(size_t)oi * m + r]);
                if (iso) {
                    memcpy(ca + cm * n, a + r * n, n * sizeof *a);
                    memcpy(cb + cm * n, b + r * n, n * sizeof *b);
                    z[cm++] = z[r];
                }
            }
            if (!cm)
                continue;
            for (int xi = 1; xi < NISOP; xi++)
                for (int oi = 0; oi < NISOB; oi++)
                    design_eval(tree, begins, ends, nparts, q, iso_probe[xi], iso_base[oi], in, of, cm, n, ca, cb,
                                z + (size_t)(xi * NISOB + oi) * cm, evals);
            int took[NISOP] = {0};
            for (size_t r = 0; r < cm && nd - off[q] < 2 * RV_PART_ROWS; r++) {
                int iso = 1, want = 0;
                for (int xi = 1; xi < NISOP && iso; xi++) {
                    double v0 = z[(size_t)(xi * NISOB) * cm + r];
                    for (int oi = 1; oi < NISOB; oi++)
                        iso &= same_bits(v0, z[(size_t)(xi * NISOB + oi) * cm + r]);
                    iso &= !isnan(v0);
                }
                /* a row for each setting whose result differs from the
                 * first's, RV_PART_PAIR each */
                for (int xi = 1; xi < NISOP && iso; xi++)
                    if (!same_bits(z[(size_t)(xi * NISOB) * cm + r], z[r]) && took[xi] < RV_PART_PAIR)
                        want = 1;
                for (int xi = 1; xi < NISOP && iso && want; xi++)
                    took[xi] += !same_bits(z[(size_t)(xi * NISOB) * cm + r], z[r]);
                if (iso && want) {
                    /* the row and its negation: only the part's own
                     * additions round on both (exactness has no sign), and
                     * a directed mode parts from its mirror only on one
                     * sign (upward and toward zero agree below zero) */
                    for (int neg = 0; neg < 2; neg++, nd++) {
                        memcpy(db + nd * n, cb + r * n, n * sizeof *b);
                        for (size_t i = 0; i < n; i++)
                            da[nd * n + i] = neg ? -ca[r * n + i] : ca[r * n + i];
                    }
                }
            }
        }
        off[nq] = nd;
        if (!nd)
            goto next;
        if ((st = part_call(k, pc, nd, n, da, db, dy, err)))
            goto next;
        *sent += nd;
        for (size_t q = 0; q < nq; q++) {
            size_t c = off[q + 1] - off[q];
            if (!c)
                continue;
            seen[q] = 1;
            for (int x = 0; x < NPSET; x++) {
                if (!cons[q][x])
                    continue;
                /* the rows it may be read on give the kernel's result in
                 * the first base too: fewer than half of them there, and
                 * it is out without the other bases */
                design_eval(tree, begins, ends, nparts, q, x, iso_base[0], in, of, c, n, da + off[q] * n,
                            db + off[q] * n, pz, evals);
                size_t hit = 0;
                for (size_t r = 0; r < c; r++)
                    hit += same_bits(pz[r], dy[off[q] + r]);
                if (2 * hit < c) {
                    cons[q][x] = 0;
                    continue;
                }
                for (int oi = 1; oi < NISOB; oi++)
                    design_eval(tree, begins, ends, nparts, q, x, iso_base[oi], in, of, c, n, da + off[q] * n,
                                db + off[q] * n, pz + (size_t)oi * c, evals);
                size_t agree = 0, bad = 0;
                for (size_t r = 0; r < c; r++) {
                    int same = 1;
                    for (int oi = 1; oi < NISOB; oi++)
                        same &= same_bits(pz[r], pz[(size_t)oi * c + r]);
                    if (!same)
                        continue;
                    agree++;
                    bad += !same_bits(pz[r], dy[off[q] + r]);
                }
                if (bad || 2 * agree < c)
                    cons[q][x] = 0;
            }
        }
    next:
        free(a);
        free(b);
        free(z);
        free(da);
        free(db);
        free(dy);
        free(pz);
        free(ca);
        free(cb);
    }
    if (st)
        return st;
    if (verbose)
        for (size_t q = 0; q <= nparts; q++) {
            fprintf(stderr, "reveal: per-part probes: %s%.*s:", q == nparts ? "the root" : "part ",
                    q == nparts ? 0 : (int)(ends[q] - begins[q]), q == nparts ? "" : tree + begins[q]);
            if (!seen[q])
                fprintf(stderr, " no row isolates it");
            for (int x = 0; x < NPSET && seen[q]; x++)
                if (cons[q][x])
                    fprintf(stderr, " %s%s%s%s%s%s%s%s", part_sets[x].acc, part_sets[x].fma ? "" : ",nofma",
                            strcmp(part_sets[x].rnd, "rne") ? "," : "", strcmp(part_sets[x].rnd, "rne") ? part_sets[x].rnd : "",
                            strcmp(part_sets[x].prod, "exact") ? ",product=" : "",
                            strcmp(part_sets[x].prod, "exact") ? part_sets[x].prod : "",
                            part_sets[x].store ? ",store=" : "", part_sets[x].store ? part_sets[x].store : "");
            fprintf(stderr, "\n");
        }
    /* the root: of the settings its own rows allow (all where none
     * isolates it), the one that leaves the fewest keys to write; then
     * each part, outermost first, its parent's where its rows allow that,
     * else the allowed one that differs from it in the fewest keys */
    int set[RV_PARTS_MAX + 1], best = -1, bestk = INT_MAX;
    for (int x = 0; x < NPSET; x++) {
        if ((seen[nparts] && !cons[nparts][x]) || part_sets[x].store)
            continue;
        int trial[RV_PARTS_MAX + 1];
        trial[nparts] = x;
        int keys = part_assign(begins, ends, nparts, cons, seen, trial);
        if (keys >= 0 && keys < bestk)
            best = x, bestk = keys;
    }
    if (best < 0) {
        if (verbose)
            fprintf(stderr, "reveal: per-part probes: no setting gives the probe rows of %s\n",
                    seen[nparts] ? "the root" : "some part");
        return NX_OK;
    }
    set[nparts] = best;
    part_assign(begins, ends, nparts, cons, seen, set);
    /* every row of the pairs; where some are missed, a part's value may
     * round in its parent's additions (a body's value entering an fp32
     * combine), which rows that only the part rounds cannot show: one
     * part at a time, root first, takes the setting of those its rows
     * allow (all where none isolates it) that reproduces the most rows,
     * for RV_PART_ROUNDS rounds */
    long ok = 0, total = 0;
    size_t maxrows = 1;
    for (size_t p = 0; p < npairs; p++) {
        maxrows = pairs[p].in.rows > maxrows ? pairs[p].in.rows : maxrows;
        total += (long)pairs[p].in.rows;
    }
    double *z = malloc(maxrows * sizeof *z);
    char *text = set_text(tree, begins, ends, nparts, set, of, 1);
    if (!z || !text) {
        free(z);
        free(text);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    ok = part_score(text, k, pairs, npairs, z);
    (*evals)++;
    int first[RV_PARTS_MAX + 1];
    memcpy(first, set, sizeof first);
    if (verbose)
        fprintf(stderr, "reveal: per-part probes: %s reproduces %ld of %ld search rows\n", text, ok, total);
    for (int round = 0; round < RV_PART_ROUNDS && ok != total; round++) {
        int moved = 0;
        for (size_t qq = 0; qq <= nparts && ok != total; qq++) {
            size_t q = qq == 0 ? nparts : qq - 1;
            int keep = set[q];
            for (int x = 0; x < NPSET && ok != total; x++) {
                if (x == keep || (seen[q] && !cons[q][x]) || (q == nparts && part_sets[x].store))
                    continue;
                set[q] = x;
                char *t = set_text(tree, begins, ends, nparts, set, of, 1);
                long sc = t ? part_score(t, k, pairs, npairs, z) : -1;
                (*evals)++;
                if (sc > ok) {
                    ok = sc;
                    free(text);
                    text = t;
                    keep = x;
                    moved = 1;
                } else
                    free(t);
                set[q] = keep;
            }
        }
        if (verbose && moved)
            fprintf(stderr, "reveal: per-part probes: %s reproduces %ld of %ld search rows\n", text, ok, total);
        if (!moved)
            break;
    }
    free(z);
    if (ok != total) {
        free(text);
        return NX_OK;
    }
    for (size_t q = 0; q <= nparts; q++)
        *settled += set[q] != first[q];
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(text, "revealed point", &pt, &e) == NX_OK) {
        char *canon = nx_point_print(&pt);
        nx_point_free(&pt);
        if (canon) {
            free(text);
            text = canon;
        }
    }
    *out = text;
    return NX_OK;
}

/* No point of the space fits the rows of class cls (-1: all rows): each
 * part's setting read from its own probe rows (per_part_probed), else the
 * search over the pairs (per_part); res counts both and says which gave
 * the point.  *out is the point (malloc'd) or NULL. */
static nx_status per_part_point(rv_kernel *k, rv_result *res, int cls, const char *tree, const fit_pair *pairs,
                                size_t np, int verbose, char **out, nx_err *err)
{
    part_caller pc = {res, cls};
    size_t ev = 0;
    nx_status st = per_part_probed(k, &pc, tree, pairs, np, verbose, out, &res->part_probes, &res->part_settled,
                                   &res->part_evals, err);
    if (st)
        return st;
    if (*out)
        res->per_part |= RV_PER_PART_PROBED;
    else if ((*out = per_part(k, tree, pairs, np, verbose, &ev)))
        res->per_part |= RV_PER_PART_SEARCHED;
    res->part_evals += ev;
    return NX_OK;
}

nx_status rv_reveal_arith(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err)
{
    size_t n = o->n, rows = o->fit_rows ? o->fit_rows : RV_DEFAULT_ROWS,
           crows = grid_round(k, o->confirm_rows ? o->confirm_rows : 1000);
    if (!res->tree_text)
        return nx_err_set(err, NX_EUNSUPPORTED, "the order was not recognised: no tree to fit the arithmetic to");
    size_t calls0 = k->calls, probes0 = k->probes;
    size_t mx = rows > crows ? rows : crows;
    double *a = malloc(mx * n * sizeof *a), *b = malloc(mx * n * sizeof *b), *y = malloc(mx * sizeof *y),
           *z = malloc(mx * sizeof *z), *a2 = NULL, *b2 = NULL, *y2 = NULL;
    fit_space sp;
    fit_result fr;
    memset(&fr, 0, sizeof fr);
    nx_status st = NX_OK;
    int have_space = 0;
    if (!a || !b || !y || !z) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t seed = o->seed ? o->seed : 0x7265766561ULL;
    res->out_fmt = k->out_fmt;
    if (res->nclass > 1) {
        /* each class on rows of its own (fit_classes gathers them) */
        if (rows != res->probe_rows) {
            st = nx_err_set(err, NX_EINVAL, "--rows: the arithmetic of row classes is fitted on batches of the %zu "
                                            "rows the order was probed at, not %zu", res->probe_rows, rows);
            goto out;
        }
        /* at the induction length too, where every class is named there */
        size_t lens[2] = {n, res->induce_n}, nl = 1;
        if (res->induce == RV_INDUCE_HOLDS || res->induce == RV_INDUCE_RENAMED)
            nl = 2;
        if ((st = fit_classes(k, res, lens, nl, seed, o->verbose, &fr, err)))
            goto out;
    } else {
        /* each line of the space a whole point (fit_space_parse's list
         * expansion would cut a long expr(...) tree) */
        have_space = 1;
        if ((st = tree_space(res->tree_text, k, &sp, err)))
            goto out;
        search_rows(k, rows, n, seed, a, b);
        if ((st = rv_call(k, rows, n, a, b, y, err)))
            goto out;
        /* where induction named the order at two lengths, the arithmetic
         * is fitted on rows of both: a part that is empty at n (a tail
         * when n is a multiple of the body) is seen at the other */
        size_t np = 1;
        fit_pair pair[2] = {{{rows, k->in_fmt, a, k->in_fmt, b, NX_FP64, NULL}, n, 1, y, 0, 0}};
        if (res->induce == RV_INDUCE_HOLDS || res->induce == RV_INDUCE_RENAMED) {
            size_t n2 = res->induce_n;
            if (!(a2 = malloc(rows * n2 * sizeof *a2)) || !(b2 = malloc(rows * n2 * sizeof *b2)) ||
                !(y2 = malloc(rows * sizeof *y2))) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                goto out;
            }
            search_rows(k, rows, n2, seed ^ 0x696e647563ULL, a2, b2);
            if ((st = rv_call(k, rows, n2, a2, b2, y2, err)))
                goto out;
            pair[1] = (fit_pair){{rows, k->in_fmt, a2, k->in_fmt, b2, NX_FP64, NULL}, n2, 1, y2, 0, 0};
            np = 2;
        }
        fit_opts fo = {0, 0, o->verbose, NX_ENGINE_FAST, 1, 1, 0};
        if ((st = fit_run(pair, np, &sp, &fo, &fr, err)))
            goto out;
        if (!fr.found || !fr.point) {
            /* no point of the space: each part in a setting of its own,
             * read from probes of its own, else searched */
            char *pp = NULL;
            if ((st = per_part_point(k, res, -1, res->tree_text, pair, np, o->verbose, &pp, err)))
                goto out;
            if (pp) {
                free(fr.point);
                fr.point = pp;
                fr.found = 1;
                fr.nfit = 1;
                fr.nalt = 0;
            }
        }
    }
    if (fr.found && fr.point && fr.nalt > 0 && res->nclass <= 1 &&
        (st = disambiguate(k, o, res, &sp, &fr, seed, err)))
        goto out;
    res->arith_calls = k->calls - calls0;
    res->arith_probes = k->probes - probes0;
    if (!fr.found || !fr.point)
        goto out;
    res->alternatives = fr.nfit > 0 ? fr.nfit - 1 : 0;
    /* confirmation on fresh rows */
    rand_rows(k->in_fmt, crows, n, seed ^ 0xc0ffee1234ULL, a, b);
    as_calls(k, crows, n, a, b);
    if ((st = rv_call(k, crows, n, a, b, y, err)) || (st = eval_point(fr.point, k->in_fmt, crows, n, a, b, z, err)))
        goto out;
    size_t okc = 0;
    for (size_t r = 0; r < crows; r++)
        okc += same_bits(y[r], z[r]);
    res->confirm_rows = crows;
    res->confirm_ok = okc;
    free(res->point);
    res->point = strdup(fr.point);
    if (!res->point)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
out:
    if (have_space)
        fit_space_free(&sp);
    fit_result_free(&fr);
    free(a);
    free(b);
    free(y);
    free(z);
    free(a2);
    free(b2);
    free(y2);
    return st;
}

static int is_prime(size_t x)
{
    if (x < 2)
        return 0;
    for (size_t d = 2; d * d <= x; d++)
        if (x % d == 0)
            return 0;
    return 1;
}

void rv_confirm_lengths(size_t n, size_t out[2])
{
    size_t ind = rv_induction_length(n);
    out[0] = n < RV_MAX_N ? n + 1 : n - 1;
    if (out[0] == ind)
        out[0]++;
    size_t p = n / 2;
    while (p >= 2 && (!is_prime(p) || p == n || p == out[0] || p == ind))
        p--;
    if (p < 2) /* n < 4: no prime at most n / 2; the first past the others */
        for (p = n + 2; !is_prime(p) || p == out[0] || p == ind; p++)
            ;
    out[1] = p;
}

/* The point held at n on crows fresh random rows (drawn from seed and
 * salt), sent `batch` rows a call and each batch evaluated as a batch of
 * its size (so selectors over R see the kernel's R). */
static nx_status confirm(rv_kernel *k, const char *point, size_t n, size_t crows, size_t batch, uint64_t salt,
                         unsigned long long seed, size_t *ok, char *why, size_t whylen, nx_err *err)
{
    *ok = 0;
    if (why && whylen)
        why[0] = 0;
    if (k->grid_m && k->grid_n) /* whole grids, each evaluated as one */
        batch = k->grid_m * k->grid_n;
    double *a = malloc(crows * n * sizeof *a), *b = malloc(crows * n * sizeof *b), *y = malloc(crows * sizeof *y),
           *z = malloc(crows * sizeof *z);
    nx_status st = NX_OK;
    nx_point pt;
    int parsed = 0;
    if (!a || !b || !y || !z) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* rows never seen by the search at n, and different at each length */
    rand_rows(k->in_fmt, crows, n, (seed ? seed : 0x7265766561ULL) ^ salt ^ (uint64_t)n * 0x9e37ULL, a, b);
    as_calls(k, crows, n, a, b);
    nx_err pe = {0};
    if (pt_from_text(point, "revealed point", &pt, &pe)) {
        if (why && whylen)
            snprintf(why, whylen, "%s", pe.msg);
        goto out;
    }
    parsed = 1;
    for (size_t r = 0; r < crows; r += batch) {
        size_t m = crows - r < batch ? crows - r : batch;
        if ((st = rv_call(k, m, n, a + r * n, b + r * n, y + r, err)))
            goto out;
        /* evaluated as a batch of m rows: selectors over R see the kernel's */
        nx_rows in = {m, k->in_fmt, a + r * n, k->in_fmt, b + r * n, NX_FP64, NULL};
        if (nx_point_reduce(&pt, &in, n, 1, NX_ENGINE_FAST, 0, z + r, &pe)) {
            if (why && whylen)
                snprintf(why, whylen, "%s", pe.msg);
            goto out;
        }
    }
    for (size_t r = 0; r < crows; r++)
        *ok += same_bits(y[r], z[r]);
out:
    if (parsed)
        nx_point_free(&pt);
    free(a);
    free(b);
    free(y);
    free(z);
    return st;
}

nx_status rv_confirm_at(rv_kernel *k, const char *point, size_t n, size_t crows, unsigned long long seed,
                        size_t *rows, size_t *ok, char *why, size_t whylen, nx_err *err)
{
    /* the same budget as one call of the order's rounds */
    size_t cap = ((size_t)1 << 24) / n;
    if (crows > cap)
        crows = cap ? cap : 1;
    crows = grid_round(k, crows); /* a grid call is within the cap (--grid checks M * N * n) */
    if (crows > cap && k->grid_m * k->grid_n <= cap)
        crows = cap / (k->grid_m * k->grid_n) * (k->grid_m * k->grid_n);
    *rows = crows;
    return confirm(k, point, n, crows, crows, 0x6c656e677468ULL, seed, ok, why, whylen, err);
}

nx_status rv_confirm_rows_a_call(rv_kernel *k, const char *point, size_t n, size_t crows, size_t R,
                                 unsigned long long seed, size_t *ok, char *why, size_t whylen, nx_err *err)
{
    return confirm(k, point, n, crows, R, 0x726f77730000ULL + R, seed, ok, why, whylen, err);
}

nx_status rv_confirm_one_row(rv_kernel *k, const char *point, size_t n, size_t crows, unsigned long long seed,
                             size_t *ok, char *why, size_t whylen, nx_err *err)
{
    return confirm(k, point, n, crows, 1, 0x6f6e65726f77ULL, seed, ok, why, whylen, err);
}
