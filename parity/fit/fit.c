/* fit.c: the search of `parity fit` (docs/fit.md "The search"). */
#include "fit.h"
#include "nx_limits.h"
#include "nx_select.h"
#include "point_toml.h"

#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FITS_ALL SIZE_MAX
#define INVALID (SIZE_MAX - 1)

void fit_result_free(fit_result *r)
{
    free(r->point);
    memset(r, 0, sizeof *r);
}

/* Every row of every pair, numbered: global row g is row row_of[g] of
 * pair pair_of[g]. */
typedef struct rowmap {
    size_t total;
    uint32_t *pair_of;
    size_t *row_of;
} rowmap;

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* One candidate's point and its programs (one per pair, built on demand). */
typedef struct cand_eval {
    nx_point pt;
    int have_pt;
    nx_program **prog;
    size_t npairs;
    int bad;  /* the point does not expand at some pair's n, or is over --max-work */
    int over; /* ... because a pair's rows x its operations are more than --max-work */
} cand_eval;

static int ce_open(cand_eval *ce, const fit_space *s, size_t i, size_t npairs)
{
    nx_err e = {0};
    memset(ce, 0, sizeof *ce);
    ce->npairs = npairs;
    ce->prog = calloc(npairs, sizeof *ce->prog);
    if (!ce->prog)
        return -1;
    if (fit_cand_point(s, i, &ce->pt, &e)) {
        ce->bad = 1;
        return 0;
    }
    ce->have_pt = 1;
    return 0;
}

static void ce_close(cand_eval *ce)
{
    for (size_t p = 0; p < ce->npairs && ce->prog; p++)
        nx_program_free(ce->prog[p]);
    free(ce->prog);
    if (ce->have_pt)
        nx_point_free(&ce->pt);
    memset(ce, 0, sizeof *ce);
}

/* 1: row r of pair p reproduced; 0: it differs; -1: the candidate cannot
 * be evaluated there. */
static int ce_row(cand_eval *ce, const fit_pair *pairs, size_t p, size_t r, nx_engine_kind eng)
{
    if (ce->bad)
        return -1;
    const fit_pair *pr = &pairs[p];
    nx_err e = {0};
    if (!ce->prog[p]) {
        if (nx_program_build_ex(&ce->pt, pr->n, pr->dot, pr->in.c != NULL, &ce->prog[p], &e) != NX_OK) {
            ce->bad = 1;
            return -1;
        }
        /* the evaluations of this candidate over the pair's rows, as one
         * `reduce` of them would count them (docs/limits.md) */
        uint64_t work;
        if (__builtin_mul_overflow((uint64_t)pr->in.rows, (uint64_t)ce->prog[p]->nops, &work) ||
            work > nx_limits_get()->max_work) {
            ce->bad = ce->over = 1;
            return -1;
        }
    }
    nx_rows one = pr->in;
    one.rows = 1;
    one.a = pr->in.a + r * pr->n;
    one.b = pr->in.b ? pr->in.b + r * pr->n : NULL;
    one.c = pr->in.c ? pr->in.c + r : NULL;
    double y;
    nx_status st = eng == NX_ENGINE_MPFR ? nx_mpfr_reduce(ce->prog[p], &one, &y, 1, &e)
                                         : nx_fast_reduce(ce->prog[p], &one, &y, 1, &e);
    if (st)
        return -1;
    return same_bits(y, pr->y[r]);
}

/* The row classes tried when no single candidate fits (docs/fit.md):
 * leading rows r < k and remainder rows r >= R - R % k. */
typedef struct selector {
    int kind; /* 0: r < k; 1: r >= R - R % k */
    int k;
} selector;

static int sel_true(const selector *s, size_t r, size_t R)
{
    return s->kind == 0 ? r < (size_t)s->k : r >= R - R % (size_t)s->k;
}

static void sel_text(const selector *s, char *buf, size_t cap)
{
    if (s->kind == 0)
        snprintf(buf, cap, "r < %d", s->k);
    else
        snprintf(buf, cap, "r >= R - R %% %d", s->k);
}

typedef struct search {
    const fit_pair *pairs;
    size_t npairs;
    const fit_space *space;
    const fit_opts *o;
    size_t ncand;
    rowmap rm;
    size_t *killer;  /* per candidate: the global row it failed on, FITS_ALL or INVALID */
    size_t *passed;  /* rows reproduced before the first mismatch */
    size_t row_evals;
    int threads;
} search;

/* The first candidate (in space order) that reproduces every row of the
 * subset mask[g] != 0; SIZE_MAX when none does. */
static size_t first_fitting(search *S, const unsigned char *mask)
{
    size_t *rows = malloc(S->rm.total * sizeof *rows), nr = 0;
    if (!rows)
        return SIZE_MAX;
    for (size_t g = 0; g < S->rm.total; g++)
        if (mask[g])
            rows[nr++] = g;
    size_t best = SIZE_MAX, evals = 0;
    const size_t block = 256;
    for (size_t b0 = 0; b0 < S->ncand && best == SIZE_MAX; b0 += block) {
        size_t b1 = b0 + block < S->ncand ? b0 + block : S->ncand;
#pragma omp parallel for schedule(dynamic, 1) num_threads(S->threads) reduction(+ : evals)
        for (size_t c = b0; c < b1; c++) {
            size_t k = S->killer[c];
            if (k == INVALID || (k != FITS_ALL && mask[k]))
                continue;
            size_t cur;
#pragma omp atomic read
            cur = best;
            if (c > cur)
                continue;
            cand_eval ce;
            if (ce_open(&ce, S->space, c, S->npairs) != 0)
                continue;
            int ok = 1;
            for (size_t i = 0; i < nr && ok; i++) {
                evals++;
                ok = ce_row(&ce, S->pairs, S->rm.pair_of[rows[i]], S->rm.row_of[rows[i]], S->o->engine) == 1;
            }
            ce_close(&ce);
            if (ok) {
#pragma omp critical(fit_best)
                if (c < best)
                    best = c;
            }
        }
    }
    S->row_evals += evals;
    free(rows);
    return best;
}

/* The candidate's canonical text without its braces (for a class). */
static char *inner_text(const fit_space *s, size_t c)
{
    char *t = fit_cand_text(s, c);
    if (!t)
        return NULL;
    size_t n = strlen(t);
    if (n >= 4 && t[0] == '{' && t[n - 1] == '}') {
        memmove(t, t + 1, n - 2);
        t[n - 2] = 0;
    }
    return t;
}

/* The point of candidate base with one class: rows matching sel take
 * candidate pick; on an M x N grid when M > 0.  malloc'd, NULL when out of
 * memory. */
static char *class_point_text(const fit_space *sp, size_t base, size_t pick, const char *sel, long M, long N)
{
    char *b = fit_cand_text(sp, base), *inner = inner_text(sp, pick), *out = NULL;
    if (b && inner) {
        size_t bl = strlen(b);
        if (bl >= 2)
            b[bl - 1] = 0; /* drop the closing brace */
        char grid[64] = "";
        if (M > 0)
            snprintf(grid, sizeof grid, ", grid = [%ld, %ld]", M, N);
        size_t cap = bl + strlen(grid) + strlen(inner) + strlen(sel) + 64;
        if ((out = malloc(cap)))
            snprintf(out, cap, "%s%s, rows = [{ select = \"%s\",%s}] }", b, grid, sel, inner);
    }
    free(b);
    free(inner);
    return out;
}

/* Verifies text on every row of every pair with MPFR; returns the number
 * of differing rows, or -1 when it cannot be evaluated. */
static long verify(const search *S, const char *text, nx_err *err)
{
    nx_point pt;
    if (pt_from_text(text, "fitted point", &pt, err))
        return -1;
    long bad = 0;
    for (size_t p = 0; p < S->npairs && bad >= 0; p++) {
        const fit_pair *pr = &S->pairs[p];
        double *y = malloc((pr->in.rows ? pr->in.rows : 1) * sizeof *y);
        if (!y || nx_point_reduce(&pt, &pr->in, pr->n, pr->dot, NX_ENGINE_MPFR, S->threads, y, err)) {
            free(y);
            bad = -1;
            break;
        }
        for (size_t r = 0; r < pr->in.rows; r++)
            bad += !same_bits(y[r], pr->y[r]);
        free(y);
    }
    nx_point_free(&pt);
    return bad;
}

/* The selector of the rows r whose residue r % P is in in[0 .. P): a
 * range at the top or the bottom, one residue, or residues joined. */
static void residue_text(const unsigned char *in, int P, char *buf, size_t cap)
{
    int lo = -1, hi = -1, n = 0;
    for (int c = 0; c < P; c++)
        if (in[c]) {
            if (lo < 0)
                lo = c;
            hi = c;
            n++;
        }
    if (n == 1)
        snprintf(buf, cap, "r %% %d == %d", P, lo);
    else if (n == hi - lo + 1 && hi == P - 1)
        snprintf(buf, cap, "r %% %d >= %d", P, lo);
    else if (n == hi - lo + 1 && lo == 0)
        snprintf(buf, cap, "r %% %d < %d", P, hi + 1);
    else if (n == hi - lo + 1)
        snprintf(buf, cap, "r %% %d >= %d && r %% %d < %d", P, lo, P, hi + 1);
    else {
        size_t len = 0;
        buf[0] = 0;
        for (int c = 0; c < P && len + 24 < cap; c++)
            if (in[c])
                len += (size_t)snprintf(buf + len, cap - len, "%sr %% %d == %d", len ? " || " : "", P, c);
    }
}

/* Row classes with structure (docs/fit.md "Row classes"): the rows the
 * best single candidate (most rows before its first mismatch) gets wrong,
 * read as residues r % P, P = 2 ... 64 (a micro-tile's edge rows, every
 * P-th output): the smallest P whose residues of those rows, taken whole,
 * one candidate fits, with the rest fitted by another.  Returns 1 and
 * sets *text, 0 when none does, -1 on OOM. */
static int fit_residues(search *S, char **text, size_t *nclasses)
{
    size_t T = S->rm.total, best = SIZE_MAX;
    for (size_t c = 0; c < S->ncand; c++)
        if (S->killer[c] != INVALID && (best == SIZE_MAX || S->passed[c] > S->passed[best]))
            best = c;
    if (best == SIZE_MAX || T < 2)
        return 0;
    unsigned char *fails = malloc(T), *cls = malloc(T), *rest = malloc(T);
    int found = 0;
    if (!fails || !cls || !rest) {
        found = -1;
        goto out;
    }
    cand_eval ce;
    if (ce_open(&ce, S->space, best, S->npairs) != 0) {
        found = -1;
        goto out;
    }
    size_t nfail = 0;
    for (size_t g = 0; g < T; g++) {
        fails[g] = ce_row(&ce, S->pairs, S->rm.pair_of[g], S->rm.row_of[g], S->o->engine) != 1;
        nfail += fails[g];
    }
    ce_close(&ce);
    S->row_evals += T;
    if (nfail == 0 || nfail == T)
        goto out;
    for (int P = 2; P <= 64 && !found; P++) {
        unsigned char in[64] = {0};
        int nin = 0;
        for (size_t g = 0; g < T; g++)
            if (fails[g] && !in[S->rm.row_of[g] % (size_t)P]) {
                in[S->rm.row_of[g] % (size_t)P] = 1;
                nin++;
            }
        if (nin == P)
            continue;
        for (size_t g = 0; g < T; g++) {
            cls[g] = in[S->rm.row_of[g] % (size_t)P];
            rest[g] = !cls[g];
        }
        size_t pick = first_fitting(S, cls);
        if (pick == SIZE_MAX)
            continue;
        size_t base = first_fitting(S, rest);
        if (base == SIZE_MAX)
            continue;
        char sel[1024];
        residue_text(in, P, sel, sizeof sel);
        char *out = class_point_text(S->space, base, pick, sel, 0, 0);
        if (!out) {
            found = -1;
            break;
        }
        *text = out;
        *nclasses = 1;
        found = 1;
    }
out:
    free(fails);
    free(cls);
    free(rest);
    return found;
}

/* Row classes: partitions by one or two selectors, fewest classes first.
 * Returns 1 and sets *text when one fits, 0 when none does, -1 on OOM. */
static int fit_classes(search *S, char **text, size_t *nclasses)
{
    selector one[7] = {{1, 2}, {1, 4}, {1, 8}, {0, 1}, {0, 2}, {0, 4}, {0, 8}};
    selector parts[64][2];
    int nsel[64];
    size_t np = 0;
    for (int i = 0; i < 7; i++) {
        parts[np][0] = one[i];
        nsel[np++] = 1;
    }
    for (int a = 3; a < 7; a++) /* leading rows, then remainder rows, then the middle */
        for (int b = 0; b < 3; b++) {
            parts[np][0] = one[a];
            parts[np][1] = one[b];
            nsel[np++] = 2;
        }
    /* nested remainders: the rows of a 1-row kernel after those of a 2-row
     * one after a 4-row micro-tile (r >= R - R % 2 first, then R % 4) */
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++) {
            parts[np][0] = one[a];
            parts[np][1] = one[b];
            nsel[np++] = 2;
        }
    size_t T = S->rm.total;
    unsigned char *mask = malloc(T ? T : 1);
    if (!mask)
        return -1;
    int found = 0;
    for (size_t q = 0; q < np && !found; q++) {
        size_t pick[3];
        int ok = 1;
        for (int cls = 0; cls <= nsel[q] && ok; cls++) { /* cls == nsel: the rest */
            size_t cnt = 0;
            for (size_t g = 0; g < T; g++) {
                size_t r = S->rm.row_of[g], R = S->pairs[S->rm.pair_of[g]].in.rows;
                int first = nsel[q];
                for (int s = 0; s < nsel[q]; s++)
                    if (sel_true(&parts[q][s], r, R)) {
                        first = s;
                        break;
                    }
                mask[g] = first == cls;
                cnt += mask[g];
            }
            if (!cnt) { /* an empty class: the partition is a smaller one */
                ok = 0;
                break;
            }
            pick[cls] = first_fitting(S, mask);
            ok = pick[cls] != SIZE_MAX;
        }
        if (!ok)
            continue;
        char *base = fit_cand_text(S->space, pick[nsel[q]]);
        if (!base) {
            free(mask);
            return -1;
        }
        size_t bl = strlen(base);
        if (bl >= 2)
            base[bl - 1] = 0; /* drop the closing brace */
        size_t cap = bl + 64;
        char *out = malloc(cap);
        if (!out) {
            free(base);
            free(mask);
            return -1;
        }
        size_t len = (size_t)snprintf(out, cap, "%s, rows = [", base);
        free(base);
        for (int s = 0; s < nsel[q]; s++) {
            char sel[64];
            sel_text(&parts[q][s], sel, sizeof sel);
            char *in = inner_text(S->space, pick[s]);
            if (!in) {
                free(out);
                free(mask);
                return -1;
            }
            size_t need = len + strlen(in) + 128;
            char *no = realloc(out, need);
            if (!no) {
                free(in);
                free(out);
                free(mask);
                return -1;
            }
            out = no;
            len += (size_t)snprintf(out + len, need - len, "%s{ select = \"%s\",%s}", s ? ", " : "", sel, in);
            free(in);
        }
        char *no = realloc(out, len + 8);
        if (!no) {
            free(out);
            free(mask);
            return -1;
        }
        out = no;
        snprintf(out + len, 8, "] }");
        *text = out;
        *nclasses = (size_t)nsel[q];
        found = 1;
    }
    free(mask);
    return found;
}

static double now(void)
{
    return omp_get_wtime();
}

/* Row classes over a grid (docs/fit.md "Row classes over a grid"): the
 * rows of every pair are an M x N grid, row r = i * N + j.  A selector is
 * a set A of grid rows i and a set B of grid columns j, S = {(i, j): i in
 * A or j in B}; either may be empty (a class of one axis), not both.  The
 * sets of one axis, each taken once (the first spelling that gives it):
 * `X >= L - L % P` (the edge of a P-wide tile) for P = 2 ... 32, then `X %
 * P >= k` (the last P - k of every P) for P = 2 ... 32, k = 1 ... P - 1,
 * with X, L = i, M or j, N; a set that is empty or the whole axis is none.
 * No selector holds (0, 0), so the point's own tree always fits row 0 of
 * every pair. */
#define GRID_PMAX 32
#define GRID_TOP 8      /* candidates whose every row is evaluated */
#define GRID_SAMPLE 128 /* rows that rank the candidates that fit row 0 */
#define GRID_RANKED 512 /* at most this many candidates are ranked */
#define GRID_TRIES 8    /* partitions tried, each one or two first_fitting */

typedef struct axsel {
    unsigned char *in; /* L bytes: the axis values the set holds */
    size_t cnt;
    uint64_t hash; /* of in[], to find a set already listed */
    int kind, P, k; /* kind 0: X >= L - L % P; 1: X % P >= k; 2, 3: their
                     * complements; 4: X < P; 5: X >= P */
} axsel;

typedef struct axis {
    axsel *s;
    size_t count;
} axis;

static void axis_free(axis *ax)
{
    for (size_t k = 0; k < ax->count; k++)
        free(ax->s[k].in);
    free(ax->s);
    memset(ax, 0, sizeof *ax);
}

static int axis_add(axis *ax, long L, int kind, int P, int k)
{
    unsigned char *in = malloc((size_t)L);
    if (!in)
        return -1;
    size_t cnt = 0;
    uint64_t h = 1469598103934665603ull;
    for (long x = 0; x < L; x++) {
        int v;
        if (kind >= 4) /* 4: X < P, 5: X >= P (P a line index) */
            v = kind == 4 ? x < P : x >= P;
        else {
            v = kind % 2 == 0 ? x >= L - L % P : x % P >= k;
            v = kind >= 2 ? !v : v;
        }
        in[x] = (unsigned char)v;
        cnt += in[x];
        h = (h ^ in[x]) * 1099511628211ull;
    }
    if (cnt == 0 || cnt == (size_t)L) {
        free(in);
        return 0;
    }
    for (size_t q = 0; q < ax->count; q++)
        if (ax->s[q].hash == h && ax->s[q].cnt == cnt && memcmp(ax->s[q].in, in, (size_t)L) == 0) {
            free(in);
            return 0;
        }
    axsel *ns = realloc(ax->s, (ax->count + 1) * sizeof *ns);
    if (!ns) {
        free(in);
        return -1;
    }
    ax->s = ns;
    ax->s[ax->count++] = (axsel){in, cnt, h, kind, P, k};
    return 0;
}

/* The sets of one axis in list order; with `with_not` also their
 * complements after them (kind 2: X < L - L % P, kind 3: X % P < k), then
 * the first or last lines by number (kind 4: X < c, kind 5: X >= c), for
 * runs of at most GRID_PMAX * 2 lines at either end and their
 * complements. */
static int axis_build_ext(axis *ax, long L, int with_not)
{
    memset(ax, 0, sizeof *ax);
    for (int neg = 0; neg <= with_not; neg++) {
        for (int P = 2; P <= GRID_PMAX; P++)
            if (axis_add(ax, L, 2 * neg, P, 0))
                return -1;
        for (int P = 2; P <= GRID_PMAX; P++)
            for (int k = 1; k < P; k++)
                if (axis_add(ax, L, 2 * neg + 1, P, k))
                    return -1;
    }
    if (with_not)
        for (int kind = 4; kind <= 5; kind++)
            for (long c = 1; c < L; c++)
                if ((c <= 2 * GRID_PMAX || c >= L - 2 * GRID_PMAX) && c <= INT_MAX && axis_add(ax, L, kind, (int)c, 0))
                    return -1;
    return 0;
}

static int axis_build(axis *ax, long L)
{
    return axis_build_ext(ax, L, 0);
}

static void axsel_text(const axsel *s, long len, char x, char L, char *buf, size_t cap)
{
    switch (s->kind) {
    case 0:
        snprintf(buf, cap, "%c >= %c - %c %% %d", x, L, L, s->P);
        break;
    case 1:
        snprintf(buf, cap, "%c %% %d >= %d", x, s->P, s->k);
        break;
    case 2:
        snprintf(buf, cap, "%c < %c - %c %% %d", x, L, L, s->P);
        break;
    case 4: /* the first P lines, or all but the last len - P */
        if (s->P <= 2 * GRID_PMAX)
            snprintf(buf, cap, "%c < %d", x, s->P);
        else
            snprintf(buf, cap, "%c < %c - %ld", x, L, len - s->P);
        break;
    case 5: /* the last len - P lines, or all but the first P */
        if (len - s->P <= 2 * GRID_PMAX)
            snprintf(buf, cap, "%c >= %c - %ld", x, L, len - s->P);
        else
            snprintf(buf, cap, "%c >= %d", x, s->P);
        break;
    default:
        snprintf(buf, cap, "%c %% %d < %d", x, s->P, s->k);
        break;
    }
}

/* A selector of the grid families above that names one class of cells:
 * true at every cell with want[], false at every cell with neither want[]
 * nor claimed[] (cells of classes listed before it: first true wins).
 * Rows alone, columns alone, then `A || B` (an edge row or an edge
 * column), then `A && B` (a corner); each axis's sets in list order. */
static int sel_ok(const unsigned char *want, const unsigned char *claimed, long M, long N, const axsel *A,
                  const axsel *B, int both)
{
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            size_t c = (size_t)(i * N + j);
            int ia = A ? A->in[i] : 0, jb = B ? B->in[j] : 0;
            int s = both ? ia && jb : ia || jb;
            if (want[c] ? !s : s && !claimed[c])
                return 0;
        }
    return 1;
}

/* For each set of one axis (L values x, each a line of K cells, cell x *
 * sx + y * sy): ok[0] whether every line it holds lies in the class or the
 * claimed cells whole (it may stand in `A || B`), ok[1] whether it holds
 * every line the class has a cell in (it may stand in `A && B`). */
static void axis_fit(const axis *ax, const unsigned char *want, const unsigned char *claimed, long L, long K,
                     long sx, long sy, unsigned char *ok[2])
{
    for (size_t a = 0; a < ax->count; a++) {
        int whole = 1, covers = 1;
        for (long x = 0; x < L; x++) {
            int full = 1, any = 0;
            for (long y = 0; y < K; y++) {
                size_t c = (size_t)(x * sx + y * sy);
                full &= want[c] || claimed[c];
                any |= want[c];
            }
            if (ax->s[a].in[x] && !full)
                whole = 0;
            if (!ax->s[a].in[x] && any)
                covers = 0;
        }
        ok[0][a] = (unsigned char)whole;
        ok[1][a] = (unsigned char)covers;
    }
}

/* Two rectangles (docs/fit.md "Two rectangles"): S = (A1 && B1) || (A2
 * && B2), each A a set of grid rows, each B a set of grid columns, from the
 * families above and their complements (`i < M - M % P`, `i % P < k`), or
 * the whole axis (the rectangle is then a set of one axis).  A rectangle
 * may be used only where every cell of it is wanted or claimed; the first
 * rectangle holds the first wanted cell (row-major), the second the first
 * one the first leaves.  Sets as bit sets of 64-bit words. */
typedef uint64_t bword;

static int bs_has(const bword *s, long x)
{
    return (int)(s[x >> 6] >> (x & 63) & 1);
}

static int bs_sub(const bword *a, const bword *b, size_t w) /* a within b */
{
    for (size_t q = 0; q < w; q++)
        if (a[q] & ~b[q])
            return 0;
    return 1;
}

typedef struct rsets {
    long L;
    size_t w, n; /* words per set, sets (index 0: the whole axis) */
    bword *bits; /* n * w */
    const axis *ax;
} rsets;

static int rsets_build(rsets *rs, const axis *ax, long L)
{
    rs->L = L;
    rs->w = (size_t)(L + 63) / 64;
    rs->n = ax->count + 1;
    rs->ax = ax;
    rs->bits = calloc(rs->n * rs->w, sizeof *rs->bits);
    if (!rs->bits)
        return -1;
    for (long x = 0; x < L; x++)
        rs->bits[x >> 6] |= (bword)1 << (x & 63);
    for (size_t a = 0; a < ax->count; a++)
        for (long x = 0; x < L; x++)
            if (ax->s[a].in[x])
                rs->bits[(a + 1) * rs->w + (size_t)(x >> 6)] |= (bword)1 << (x & 63);
    return 0;
}

/* one rectangle's text: "A", "B" or "A && B" (in parentheses when `paren`) */
static void rect_text(const rsets *ri, const rsets *rj, size_t a, size_t b, int paren, char *buf, size_t cap)
{
    char ta[64] = "", tb[64] = "";
    if (a)
        axsel_text(&ri->ax->s[a - 1], ri->L, 'i', 'M', ta, sizeof ta);
    if (b)
        axsel_text(&rj->ax->s[b - 1], rj->L, 'j', 'N', tb, sizeof tb);
    if (a && b)
        snprintf(buf, cap, "%s%s && %s%s", paren ? "(" : "", ta, tb, paren ? ")" : "");
    else
        snprintf(buf, cap, "%s", a ? ta : tb);
}

/* a set's weight in the choice among selectors that fit: its P (the
 * whole axis 0), one more for a remainder set (`X % P >= k`, `X % P < k`) */
static long set_score(const rsets *rs, size_t a)
{
    if (a == 0)
        return 0;
    const axsel *x = &rs->ax->s[a - 1];
    if (x->kind >= 4) /* lines by number: after every tile size */
        return GRID_PMAX + 1;
    return x->P + (x->kind & 1);
}

#define RECT_BUDGET 200000000ull /* word operations before giving up */

/* 1 and *text: a selector of one or two rectangles; 0: none; -1: OOM. */
static int rects_find(const unsigned char *want, const unsigned char *claimed, long M, long N, const rsets *ri,
                      const rsets *rj, char **text)
{
    const size_t wi = ri->w, wj = rj->w, na = ri->n, nb = rj->n;
    bword *Ur = calloc((size_t)M * wj, sizeof *Ur), *Wr = calloc((size_t)M * wj, sizeof *Wr);
    bword *UA = calloc(na * wj, sizeof *UA);
    bword *rowsR = calloc(wi, sizeof *rowsR), *colsR = calloc(wj, sizeof *colsR);
    unsigned char *valid = calloc(na * nb, 1);
    int found = -1;
    if (!Ur || !Wr || !UA || !rowsR || !colsR || !valid)
        goto out;
    found = 0;
    long i0 = -1, j0 = -1;
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            size_t c = (size_t)(i * N + j);
            if (want[c] || claimed[c])
                Ur[(size_t)i * wj + (size_t)(j >> 6)] |= (bword)1 << (j & 63);
            if (want[c]) {
                Wr[(size_t)i * wj + (size_t)(j >> 6)] |= (bword)1 << (j & 63);
                if (i0 < 0)
                    i0 = i, j0 = j;
            }
        }
    if (i0 < 0)
        goto out;
    /* UA[a]: the columns every row of A allows; (a, b) valid: B within it,
     * and not dominated by a wider B of the same A */
    unsigned long long ops = 0;
    for (size_t a = 0; a < na && ops < RECT_BUDGET; a++) {
        bword *u = UA + a * wj;
        memset(u, 0xff, wj * sizeof *u);
        for (long i = 0; i < M; i++)
            if (bs_has(ri->bits + a * wi, i))
                for (size_t q = 0; q < wj; q++)
                    u[q] &= Ur[(size_t)i * wj + q];
        for (size_t b = 0; b < nb; b++)
            valid[a * nb + b] = (unsigned char)(!(a == 0 && b == 0) && bs_sub(rj->bits + b * wj, u, wj));
        ops += (unsigned long long)(M + (long)nb) * wj;
        for (size_t b = 0; b < nb; b++) {
            if (!valid[a * nb + b])
                continue;
            ops += nb * wj;
            for (size_t b2 = 0; b2 < nb && valid[a * nb + b]; b2++)
                if (b2 != b && valid[a * nb + b2] && bs_sub(rj->bits + b * wj, rj->bits + b2 * wj, wj) &&
                    !bs_sub(rj->bits + b2 * wj, rj->bits + b * wj, wj))
                    valid[a * nb + b] = 0;
        }
    }
    if (ops >= RECT_BUDGET)
        goto out; /* too large a grid to search: none */
    /* one rectangle first, then two; of those that fit, the least score
     * (the sum of the sets' P, +1 for a remainder set; the first in list
     * order on a tie) */
    long best = LONG_MAX;
    size_t bx[4] = {0, 0, 0, 0};
    for (int two = 0; two <= 1 && best == LONG_MAX; two++)
        for (size_t a1 = 0; a1 < na && ops < RECT_BUDGET; a1++) {
            if (!bs_has(ri->bits + a1 * wi, i0))
                continue;
            for (size_t b1 = 0; b1 < nb && ops < RECT_BUDGET; b1++) {
                if (!valid[a1 * nb + b1] || !bs_has(rj->bits + b1 * wj, j0))
                    continue;
                long s1 = set_score(ri, a1) + set_score(rj, b1);
                if (s1 >= best)
                    continue;
                const bword *B1 = rj->bits + b1 * wj;
                int empty = 1;
                memset(rowsR, 0, wi * sizeof *rowsR);
                memset(colsR, 0, wj * sizeof *colsR);
                for (long i = 0; i < M; i++) {
                    int in1 = bs_has(ri->bits + a1 * wi, i), any = 0;
                    for (size_t q = 0; q < wj; q++) {
                        bword r = Wr[(size_t)i * wj + q] & ~(in1 ? B1[q] : 0);
                        colsR[q] |= r;
                        any |= r != 0;
                    }
                    if (any) {
                        rowsR[i >> 6] |= (bword)1 << (i & 63);
                        empty = 0;
                    }
                }
                ops += (unsigned long long)M * wj;
                if (empty != !two) /* pass 1: one rectangle only; pass 2: two */
                    continue;
                if (empty) {
                    best = s1;
                    bx[0] = a1, bx[1] = b1;
                    continue;
                }
                for (size_t a2 = 0; a2 < na; a2++) {
                    long sa = s1 + set_score(ri, a2);
                    if (sa >= best)
                        continue;
                    ops += wi;
                    if (!bs_sub(rowsR, ri->bits + a2 * wi, wi))
                        continue;
                    for (size_t b2 = 0; b2 < nb; b2++) {
                        long sb = sa + set_score(rj, b2);
                        if (sb >= best || !valid[a2 * nb + b2])
                            continue;
                        ops += wj;
                        if (!bs_sub(colsR, rj->bits + b2 * wj, wj))
                            continue;
                        best = sb;
                        bx[0] = a1, bx[1] = b1, bx[2] = a2, bx[3] = b2;
                    }
                }
            }
        }
    if (best != LONG_MAX) {
        char t1[160], t2[160] = "", t[330];
        int two = bx[2] || bx[3];
        rect_text(ri, rj, bx[0], bx[1], two, t1, sizeof t1);
        if (two)
            rect_text(ri, rj, bx[2], bx[3], 1, t2, sizeof t2);
        snprintf(t, sizeof t, "%s%s%s", t1, two ? " || " : "", t2);
        found = (*text = strdup(t)) ? 1 : -1;
    }
out:
    free(Ur);
    free(Wr);
    free(UA);
    free(rowsR);
    free(colsR);
    free(valid);
    return found;
}

/* One or two rectangles that name the class; else the complement of one
 * or two that name the other cells: `!(...)`, true where the rectangles
 * are false, so they must hold every cell neither wanted nor claimed and
 * no wanted one (claimed cells that are not wanted may go either way). */
static char *rects_select(const unsigned char *want, const unsigned char *claimed, long M, long N)
{
    axis ai, aj;
    rsets ri = {0}, rj = {0};
    char *text = NULL;
    size_t cells = (size_t)(M * N);
    unsigned char *w2 = malloc(cells), *c2 = malloc(cells);
    if (!w2 || !c2 || axis_build_ext(&ai, M, 1)) {
        free(w2);
        free(c2);
        axis_free(&ai);
        return NULL;
    }
    if (axis_build_ext(&aj, N, 1) || rsets_build(&ri, &ai, M) || rsets_build(&rj, &aj, N))
        goto out;
    if (rects_find(want, claimed, M, N, &ri, &rj, &text) != 0)
        goto out;
    for (size_t c = 0; c < cells; c++) {
        w2[c] = !want[c] && !claimed[c];
        c2[c] = claimed[c] && !want[c];
    }
    char *inner = NULL;
    if (rects_find(w2, c2, M, N, &ri, &rj, &inner) == 1) {
        size_t len = strlen(inner) + 4;
        text = malloc(len);
        if (text)
            snprintf(text, len, "!(%s)", inner);
        free(inner);
    }
out:
    free(ri.bits);
    free(rj.bits);
    free(w2);
    free(c2);
    axis_free(&ai);
    axis_free(&aj);
    return text;
}

char *fit_grid_select(const unsigned char *want, const unsigned char *claimed, long M, long N)
{
    axis ai, aj;
    char buf[160], ta[64], tb[64];
    int found = 0;
    if (M <= 0 || N <= 0)
        return NULL;
    if (axis_build(&ai, M)) {
        axis_free(&ai);
        return NULL;
    }
    if (axis_build(&aj, N)) {
        axis_free(&ai);
        axis_free(&aj);
        return NULL;
    }
    for (size_t a = 0; a < ai.count && !found; a++)
        if (sel_ok(want, claimed, M, N, &ai.s[a], NULL, 0)) {
            axsel_text(&ai.s[a], M, 'i', 'M', buf, sizeof buf);
            found = 1;
        }
    for (size_t b = 0; b < aj.count && !found; b++)
        if (sel_ok(want, claimed, M, N, NULL, &aj.s[b], 0)) {
            axsel_text(&aj.s[b], N, 'j', 'N', buf, sizeof buf);
            found = 1;
        }
    /* which sets can take part: in `A || B` every row of A lies in the
     * class (or the claimed cells) whole; in `A && B` A holds every row
     * the class has a cell in (the same for B, columns) */
    unsigned char *okA[2] = {calloc(ai.count + 1, 1), calloc(ai.count + 1, 1)};
    unsigned char *okB[2] = {calloc(aj.count + 1, 1), calloc(aj.count + 1, 1)};
    if (!okA[0] || !okA[1] || !okB[0] || !okB[1])
        found = -1;
    if (found == 0) {
        axis_fit(&ai, want, claimed, M, N, N, 1, okA);
        axis_fit(&aj, want, claimed, N, M, 1, N, okB);
    }
    for (int both = 0; both <= 1 && !found; both++)
        for (size_t a = 0; a < ai.count && !found; a++)
            for (size_t b = 0; b < aj.count && !found; b++)
                if (okA[both][a] && okB[both][b] && sel_ok(want, claimed, M, N, &ai.s[a], &aj.s[b], both)) {
                    axsel_text(&ai.s[a], M, 'i', 'M', ta, sizeof ta);
                    axsel_text(&aj.s[b], N, 'j', 'N', tb, sizeof tb);
                    snprintf(buf, sizeof buf, "%s %s %s", ta, both ? "&&" : "||", tb);
                    found = 1;
                }
    for (int q = 0; q < 2; q++) {
        free(okA[q]);
        free(okB[q]);
    }
    axis_free(&ai);
    axis_free(&aj);
    if (found == 0)
        return rects_select(want, claimed, M, N);
    return found == 1 ? strdup(buf) : NULL;
}

/* A partition tried: selector (a, b) (-1: no set on that axis) and how
 * well the rows one candidate gets wrong fill it. */
typedef struct gtry {
    size_t slack; /* rows of S the candidate gets right anyway */
    int sides;    /* 1 or 2 */
    long a, b;
} gtry;

static int gtry_before(const gtry *x, const gtry *y)
{
    if (x->slack != y->slack)
        return x->slack < y->slack;
    if (x->sides != y->sides)
        return x->sides < y->sides;
    /* singles: the rows' (a >= 0) before the columns'; then in list order */
    long xa = x->a < 0 ? LONG_MAX : x->a, ya = y->a < 0 ? LONG_MAX : y->a;
    if (xa != ya)
        return xa < ya;
    return x->b < y->b;
}

/* Keeps the GRID_TRIES best partitions, one entry per (a, b). */
static void gtry_offer(gtry *best, size_t *nb, gtry t)
{
    for (size_t q = 0; q < *nb; q++)
        if (best[q].a == t.a && best[q].b == t.b) {
            if (!gtry_before(&t, &best[q]))
                return;
            memmove(best + q, best + q + 1, (*nb - q - 1) * sizeof *best);
            (*nb)--;
            break;
        }
    size_t pos = *nb;
    while (pos > 0 && gtry_before(&t, &best[pos - 1]))
        pos--;
    if (pos >= GRID_TRIES)
        return;
    if (*nb < GRID_TRIES)
        (*nb)++;
    memmove(best + pos + 1, best + pos, (*nb - 1 - pos) * sizeof *best);
    best[pos] = t;
}

/* f[g] = whether candidate c gets global row g wrong (1 where it cannot
 * be evaluated); a pair's rows in one call (row 0 builds the program).
 * Returns the rows evaluated. */
static size_t cand_wrong(search *S, size_t c, unsigned char *f)
{
    size_t evals = 0;
    cand_eval ce;
    memset(f, 1, S->rm.total);
    if (ce_open(&ce, S->space, c, S->npairs) != 0)
        return 0;
    for (size_t p = 0, g0 = 0; p < S->npairs; g0 += S->pairs[p].in.rows, p++) {
        const fit_pair *pr = &S->pairs[p];
        double *y = malloc(pr->in.rows * sizeof *y);
        nx_err e = {0};
        evals += pr->in.rows;
        if (y && ce_row(&ce, S->pairs, p, 0, S->o->engine) >= 0 &&
            (S->o->engine == NX_ENGINE_MPFR ? nx_mpfr_reduce(ce.prog[p], &pr->in, y, pr->in.rows, &e)
                                            : nx_fast_reduce(ce.prog[p], &pr->in, y, pr->in.rows, &e)) == NX_OK)
            for (size_t r = 0; r < pr->in.rows; r++)
                f[g0 + r] = !same_bits(y[r], pr->y[r]);
        free(y);
    }
    ce_close(&ce);
    return evals;
}

/* mask[g] = whether selector text holds global row g's cell (M x N). */
static int sel_mask(const search *S, const char *text, long M, long N, unsigned char *mask)
{
    nx_select *sel = NULL;
    nx_err e = {0};
    if (nx_select_parse(text, "select", &sel, &e) != NX_OK)
        return -1;
    for (size_t g = 0; g < S->rm.total; g++) {
        int t = 0;
        if (nx_select_eval(sel, (long long)S->rm.row_of[g], (long long)(M * N), M, N, 0, &t, &e) != NX_OK) {
            nx_select_free(sel);
            return -1;
        }
        mask[g] = (unsigned char)t;
    }
    nx_select_free(sel);
    return 0;
}

/* Returns 1 and sets *text when a partition fits, 0 when none does, -1 on
 * OOM. */
static int fit_grid(search *S, char **text, size_t *nclasses)
{
    const long M = S->pairs[0].grid_m, N = S->pairs[0].grid_n;
    const size_t T = S->rm.total, cells = (size_t)(M * N), np = S->npairs;
    double t0 = now();
    size_t evals0 = S->row_evals;
    axis ai = {0}, aj = {0};
    unsigned char *fcell = NULL, *mask = NULL, *jset = NULL, *rowf = NULL;
    size_t *ranked = NULL, *score = NULL, *samp = NULL;
    int found = 0;
    if (axis_build(&ai, M) || axis_build(&aj, N) || !(fcell = malloc(cells)) || !(mask = malloc(T)) ||
        !(jset = malloc((size_t)N)) || !(rowf = malloc((size_t)M)) || !(ranked = malloc(GRID_RANKED * sizeof *ranked)) ||
        !(score = malloc(GRID_RANKED * sizeof *score)) || !(samp = malloc(GRID_SAMPLE * sizeof *samp))) {
        found = -1;
        goto out;
    }
    /* 1. The candidates that fit row 0 of every pair (the only ones that
     * can be the point's own tree), at most GRID_RANKED in space order,
     * ranked by the rows they fit of a sample: all rows, or GRID_SAMPLE
     * taken with a stride coprime to T (so that they do not alias with N). */
    size_t ns = T < GRID_SAMPLE ? T : GRID_SAMPLE, step = 1;
    if (ns < T) {
        step = (size_t)(0.618 * (double)T);
        while (step > 1) {
            size_t x = T, y = step;
            while (y) {
                size_t t = x % y;
                x = y;
                y = t;
            }
            if (x == 1)
                break;
            step--;
        }
    }
    for (size_t s = 0; s < ns; s++)
        samp[s] = ns < T ? (s * step) % T : s;
    size_t nr = 0, evals = 0;
    size_t *first = malloc(np * sizeof *first);
    if (!first) {
        found = -1;
        goto out;
    }
    for (size_t p = 0, base = 0; p < np; base += S->pairs[p].in.rows, p++)
        first[p] = base;
    for (size_t b0 = 0; b0 < S->ncand && nr < GRID_RANKED; b0 += GRID_RANKED) {
        size_t b1 = b0 + GRID_RANKED < S->ncand ? b0 + GRID_RANKED : S->ncand;
        unsigned char *ok = calloc(b1 - b0, 1);
        size_t *sc = calloc(b1 - b0, sizeof *sc);
        if (!ok || !sc) {
            free(ok);
            free(sc);
            free(first);
            found = -1;
            goto out;
        }
#pragma omp parallel for schedule(dynamic, 1) num_threads(S->threads) reduction(+ : evals)
        for (size_t c = b0; c < b1; c++) {
            size_t k = S->killer[c];
            if (k == INVALID || k == FITS_ALL)
                continue;
            int row0 = 0;
            for (size_t p = 0; p < np; p++)
                row0 |= k == first[p];
            if (row0)
                continue;
            cand_eval ce;
            if (ce_open(&ce, S->space, c, np) != 0)
                continue;
            int fits = 1;
            for (size_t p = 0; p < np && fits; p++) {
                evals++;
                fits = ce_row(&ce, S->pairs, p, 0, S->o->engine) == 1;
            }
            size_t cnt = 0;
            for (size_t s = 0; s < ns && fits; s++) {
                evals++;
                cnt += ce_row(&ce, S->pairs, S->rm.pair_of[samp[s]], S->rm.row_of[samp[s]], S->o->engine) == 1;
            }
            ce_close(&ce);
            ok[c - b0] = (unsigned char)fits;
            sc[c - b0] = cnt;
        }
        for (size_t c = b0; c < b1 && nr < GRID_RANKED; c++)
            if (ok[c - b0]) {
                ranked[nr] = c;
                score[nr++] = sc[c - b0];
            }
        free(ok);
        free(sc);
    }
    free(first);
    S->row_evals += evals;
    /* the GRID_TOP best: most sample rows, then space order */
    size_t top[GRID_TOP], nt = 0;
    unsigned char *taken = calloc(nr ? nr : 1, 1);
    if (!taken) {
        found = -1;
        goto out;
    }
    for (nt = 0; nt < GRID_TOP && nt < nr; nt++) {
        size_t bx = SIZE_MAX;
        for (size_t x = 0; x < nr; x++)
            if (!taken[x] && (bx == SIZE_MAX || score[x] > score[bx]))
                bx = x;
        taken[bx] = 1;
        top[nt] = ranked[bx];
    }
    free(taken);
    /* 2. Every row of those: the cells they get wrong (in any pair), and
     * the partitions whose class holds all of them, by slack */
    unsigned char *fm = malloc((nt ? nt : 1) * T);
    if (!fm) {
        found = -1;
        goto out;
    }
    evals = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(S->threads) reduction(+ : evals)
    for (size_t t = 0; t < nt; t++)
        evals += cand_wrong(S, top[t], fm + t * T);
    S->row_evals += evals;
    gtry best[GRID_TRIES];
    size_t nb = 0;
    for (size_t t = 0; t < nt; t++) {
        size_t totalF = 0;
        memset(fcell, 0, cells);
        memset(rowf, 0, (size_t)M);
        for (size_t g = 0; g < T; g++)
            if (fm[t * T + g]) {
                fcell[S->rm.row_of[g]] = 1;
                rowf[S->rm.row_of[g] / (size_t)N] = 1;
                totalF++;
            }
        if (totalF == 0)
            continue; /* fits every row: not a class candidate (cannot happen here) */
        for (long a = -1; a < (long)ai.count; a++) {
            /* the columns of the wrong cells outside A's rows */
            memset(jset, 0, (size_t)N);
            size_t nj = 0;
            for (long i = 0; i < M; i++) {
                if (!rowf[i] || (a >= 0 && ai.s[a].in[i]))
                    continue;
                for (long j = 0; j < N; j++)
                    if (fcell[i * N + j] && !jset[j]) {
                        jset[j] = 1;
                        nj++;
                    }
            }
            size_t na = a >= 0 ? ai.s[a].cnt : 0;
            if (a >= 0 && nj == 0) { /* rows alone */
                size_t rows_s = np * na * (size_t)N;
                gtry g = {rows_s - totalF, 1, a, -1};
                if (3 * g.slack <= totalF)
                    gtry_offer(best, &nb, g);
            }
            for (long b = 0; b < (long)aj.count; b++) {
                const unsigned char *bin = aj.s[b].in;
                int sub = 1;
                for (long j = 0; j < N && sub; j++)
                    sub = !jset[j] || bin[j];
                if (!sub)
                    continue;
                size_t nbj = aj.s[b].cnt;
                size_t rows_s = np * (na * (size_t)N + nbj * (size_t)M - na * nbj);
                gtry g = {rows_s - totalF, a >= 0 ? 2 : 1, a, b};
                if (3 * g.slack <= totalF) /* wrong on 3/4 of the class or more */
                    gtry_offer(best, &nb, g);
            }
        }
    }
    /* 3. The partitions in that order: per class the first candidate (space
     * order) that fits all of its rows */
    size_t tried = 0;
    for (size_t q = 0; q < nb && !found; q++) {
        const gtry *g = &best[q];
        for (size_t x = 0; x < T; x++) {
            long r = (long)S->rm.row_of[x], i = r / N, j = r % N;
            mask[x] = (g->a >= 0 && ai.s[g->a].in[i]) || (g->b >= 0 && aj.s[g->b].in[j]);
        }
        tried++;
        size_t pick = first_fitting(S, mask);
        if (pick == SIZE_MAX)
            continue;
        for (size_t x = 0; x < T; x++)
            mask[x] = !mask[x];
        size_t base = first_fitting(S, mask);
        if (base == SIZE_MAX)
            continue;
        char sa[48] = "", sb[48] = "", sel[128];
        if (g->a >= 0)
            axsel_text(&ai.s[g->a], M, 'i', 'M', sa, sizeof sa);
        if (g->b >= 0)
            axsel_text(&aj.s[g->b], N, 'j', 'N', sb, sizeof sb);
        snprintf(sel, sizeof sel, "%s%s%s", sa, sa[0] && sb[0] ? " || " : "", sb);
        char *o = class_point_text(S->space, base, pick, sel, M, N);
        if (!o) {
            found = -1;
            break;
        }
        *text = o;
        *nclasses = 1;
        found = 1;
    }
    /* 4. None of those: two rectangles (docs/fit.md "Two rectangles").  For
     * each of the best candidates A (the same wrong cells tried once): the
     * class's candidate B, the first that fits every row of the cells A
     * gets wrong (in any pair); the selector holds every cell A gets wrong
     * and only cells where B is right too, so that a cell A is right on by
     * chance does not break the class */
    unsigned char *bcell = calloc(cells, 1), *seen = malloc((nt ? nt : 1) * cells), *bw = malloc(T);
    if (!bcell || !seen || !bw)
        found = found ? found : -1;
    for (size_t t = 0; t < nt && !found; t++) {
        memset(fcell, 0, cells);
        for (size_t g = 0; g < T; g++)
            if (fm[t * T + g])
                fcell[S->rm.row_of[g]] = 1;
        int dup = 0;
        for (size_t u = 0; u < t && !dup; u++)
            dup = memcmp(seen + u * cells, fcell, cells) == 0;
        memcpy(seen + t * cells, fcell, cells);
        if (dup)
            continue;
        for (size_t x = 0; x < T; x++)
            mask[x] = fcell[S->rm.row_of[x]];
        size_t pickB = first_fitting(S, mask);
        if (pickB == SIZE_MAX)
            continue;
        S->row_evals += cand_wrong(S, pickB, bw);
        /* bcell: the cells where A and B are both right (either may go there) */
        memset(bcell, 1, cells);
        for (size_t g = 0; g < T; g++)
            if (bw[g] || fcell[S->rm.row_of[g]])
                bcell[S->rm.row_of[g]] = 0;
        char *sel = rects_select(fcell, bcell, M, N);
        if (!sel)
            continue;
        tried++;
        size_t pick = SIZE_MAX, base = SIZE_MAX;
        if (sel_mask(S, sel, M, N, mask) == 0 && (pick = first_fitting(S, mask)) != SIZE_MAX) {
            for (size_t x = 0; x < T; x++)
                mask[x] = !mask[x];
            base = first_fitting(S, mask);
        }
        if (base != SIZE_MAX) {
            char *o = class_point_text(S->space, base, pick, sel, M, N);
            if (!o)
                found = -1;
            else {
                *text = o;
                *nclasses = 1;
                found = 1;
            }
        }
        free(sel);
    }
    free(bcell);
    free(bw);
    free(seen);
    free(fm);
    if (S->o->progress)
        fprintf(stderr,
                "parity fit: grid classes (%ld x %ld): %zu candidates ranked, %zu partitions tried, %zu row "
                "evaluations, %.2f s%s\n",
                M, N, nr, tried, S->row_evals - evals0, now() - t0, found > 0 ? "" : ": none fits");
out:
    axis_free(&ai);
    axis_free(&aj);
    free(fcell);
    free(mask);
    free(jset);
    free(rowf);
    free(ranked);
    free(score);
    free(samp);
    return found;
}

/* Per-part arithmetic (docs/fit.md "Per-part arithmetic"): no point of the
 * space fits.  Two sets of points, searched as a space of their own:
 * (a) the closest candidates (of the FIT_PART_POOL that went furthest in
 * pass 1, the fewest wrong rows over every row) give up to FIT_PART_TREES
 * distinct trees with parts; each part of each in turn takes one of
 * part_opts, the rest the candidate's own settings; (b) every `body` of
 * the space with its tail in the other accumulator (fp64 under fp32, fp32
 * under anything else), which (a) misses where many trees tie (under an
 * fp64 accumulator most do).  (c), fit_parts_bodies, comes after the
 * row classes.  1 and *text: a point fits; 0: none; -1: out of memory. */
#define FIT_PART_POOL 64
#define FIT_PART_TREES 8
static const char *const part_opts[] = {"acc=fp64",          "acc=fp32",          "fma=false",
                                        "fma=true",          "acc=fp64, fma=false", "acc=fp32, fma=false",
                                        "acc=fp64, product=fp32", "acc=fp64, fma=true"};

/* The point text base (a candidate's canonical text) with its tree's part
 * `part` in setting `set`, added to the space; -1 out of memory, 0 else (a
 * point that does not parse is left out). */
static int add_part_point(fit_space *mini, const char *base, const char *tb, const char *te, const char *tree,
                          const size_t *ends, size_t nparts, size_t part, const char *set)
{
    char *br[FIT_PARTS_MAX] = {NULL};
    br[part] = (char *)set;
    char *nt = fit_with_settings(tree, ends, nparts, br);
    size_t cap = nt ? strlen(base) + strlen(nt) + 1 : 0;
    char *pt = nt ? malloc(cap) : NULL;
    if (!pt) {
        free(nt);
        return -1;
    }
    snprintf(pt, cap, "%.*s%s%s", (int)(tb - base), base, nt, te);
    nx_err pe = {0};
    int r = fit_space_add_point(mini, pt, &pe) == NX_ENOMEM ? -1 : 0;
    free(pt);
    free(nt);
    return r;
}

/* A candidate's text and its tree's span within it (`tree = "…"`); the
 * tree malloc'd apart.  0, or -1 (out of memory or no tree). */
static int cand_tree(const fit_space *space, size_t c, char **base, char **tb, char **te, char **tree)
{
    *base = fit_cand_text(space, c);
    *tb = *base ? strstr(*base, "tree = \"") : NULL;
    *te = *tb ? strchr(*tb + 8, '"') : NULL;
    if (!*te) {
        free(*base);
        return -1;
    }
    *tb += 8;
    *tree = strndup(*tb, (size_t)(*te - *tb));
    if (!*tree) {
        free(*base);
        return -1;
    }
    return 0;
}

/* The closest candidates: of the k that went furthest in pass 1 (space
 * order among equals), each counted over every row, by mismatching rows,
 * then space order, into out[] (k of them at most); their count. */
static size_t closest(search *S, size_t k, fit_near *out)
{
    size_t *cand = malloc((k ? k : 1) * sizeof *cand), nc = 0;
    if (!cand)
        return 0;
    for (size_t c = 0; c < S->ncand; c++) {
        if (S->killer[c] == INVALID)
            continue;
        size_t pos = nc;
        while (pos > 0 && S->passed[cand[pos - 1]] < S->passed[c])
            pos--;
        if (pos >= k)
            continue;
        if (nc < k)
            nc++;
        memmove(cand + pos + 1, cand + pos, (nc - 1 - pos) * sizeof *cand);
        cand[pos] = c;
    }
    const size_t T = S->rm.total;
    size_t evals = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(S->threads) reduction(+ : evals)
    for (size_t i = 0; i < nc; i++) {
        cand_eval ce;
        out[i].cand = cand[i];
        out[i].mismatches = T;
        if (ce_open(&ce, S->space, cand[i], S->npairs) != 0)
            continue;
        size_t bad = 0;
        for (size_t x = 0; x < T; x++)
            bad += ce_row(&ce, S->pairs, S->rm.pair_of[x], S->rm.row_of[x], S->o->engine) != 1;
        evals += T;
        ce_close(&ce);
        out[i].mismatches = bad;
    }
    S->row_evals += evals;
    free(cand);
    for (size_t i = 1; i < nc; i++) /* by mismatches, then space order */
        for (size_t j = i; j > 0 && (out[j].mismatches < out[j - 1].mismatches ||
                                     (out[j].mismatches == out[j - 1].mismatches && out[j].cand < out[j - 1].cand));
             j--) {
            fit_near t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return nc;
}

nx_status fit_run(const fit_pair *pairs, size_t npairs, const fit_space *space, const fit_opts *o, fit_result *res,
                  nx_err *err);

/* The points of mini searched on the pairs (no classes, no per-part step,
 * no verification: the caller's result is verified).  1 and *text, 0, -1. */
static int run_mini(search *S, const fit_space *mini, const fit_pair *pairs, size_t npairs, const fit_opts *o,
                    char **text, nx_err *err)
{
    if (!mini->count)
        return 0;
    fit_opts o2 = {o->threads, 0, 0, o->engine, 0, 0, 0};
    fit_result r2;
    int found = 0;
    nx_status st = fit_run(pairs, npairs, mini, &o2, &r2, err);
    S->row_evals += r2.row_evals;
    if (st == NX_ENOMEM)
        found = -1;
    else if (st == NX_OK && r2.found && r2.point) {
        *text = strdup(r2.point);
        found = *text ? 1 : -1;
    }
    fit_result_free(&r2);
    return found;
}

/* Each part of tree (of a candidate's text base) in each of part_opts,
 * added to mini; -1 out of memory. */
static int add_every_part(fit_space *mini, const char *base, const char *tb, const char *te, const char *tree)
{
    size_t begins[FIT_PARTS_MAX], ends[FIT_PARTS_MAX], nparts = 0;
    int r = 0;
    fit_tree_args(tree, 0, strlen(tree), begins, ends, &nparts, FIT_PARTS_MAX);
    for (size_t part = 0; part < nparts && r >= 0; part++)
        for (size_t k = 0; k < sizeof part_opts / sizeof *part_opts && r >= 0; k++)
            r = add_part_point(mini, base, tb, te, tree, ends, nparts, part, part_opts[k]);
    return r;
}

/* found (0, or -1 when building mini ran out of memory), then the search
 * of mini, which is freed; the progress line says what was searched. */
static int finish_mini(search *S, fit_space *mini, int found, const fit_pair *pairs, size_t npairs,
                       const fit_opts *o, char **text, nx_err *err, double t0, const char *what)
{
    size_t cands = mini->count;
    if (found == 0)
        found = run_mini(S, mini, pairs, npairs, o, text, err);
    fit_space_free(mini);
    if (o->progress)
        fprintf(stderr, "parity fit: per-part arithmetic: %zu candidates (%s), %.2f s%s\n", cands, what, now() - t0,
                found > 0 ? "" : ": none fits");
    return found;
}

static int fit_parts(search *S, const fit_space *space, const fit_pair *pairs, size_t npairs, const fit_opts *o,
                     char **text, nx_err *err)
{
    double t0 = now();
    fit_near pool[FIT_PART_POOL];
    size_t np = closest(S, FIT_PART_POOL, pool);
    fit_space mini;
    fit_space_init(&mini, space->out);
    int found = 0;
    size_t trees = 0;
    char *seen[FIT_PART_TREES] = {NULL};
    /* (a) the closest trees, each part in each setting */
    for (size_t q = 0; q < np && trees < FIT_PART_TREES && found >= 0; q++) {
        char *base, *tb, *te, *tree;
        if (cand_tree(space, pool[q].cand, &base, &tb, &te, &tree)) {
            found = -1;
            break;
        }
        size_t begins[FIT_PARTS_MAX], ends[FIT_PARTS_MAX], nparts = 0;
        int dup = strstr(tree, "chain(") || strstr(tree, "expr(");
        if (!dup)
            fit_tree_args(tree, 0, strlen(tree), begins, ends, &nparts, FIT_PARTS_MAX);
        for (size_t u = 0; u < trees && !dup; u++)
            dup = strcmp(seen[u], tree) == 0;
        if (dup || !nparts) {
            free(tree);
            free(base);
            continue;
        }
        seen[trees++] = tree;
        found = add_every_part(&mini, base, tb, te, tree);
        free(base);
    }
    for (size_t u = 0; u < trees; u++)
        free(seen[u]);
    /* (b) every body's tail in the other accumulator */
    for (size_t c = 0; c < S->ncand && found >= 0; c++) { /* the space as --max cut it */
        const char *ct = space->c[c].tree;
        if (!ct || strncmp(ct, "body(", 5) || strpbrk(ct, "[@"))
            continue;
        char *base, *tb, *te, *tree;
        if (cand_tree(space, c, &base, &tb, &te, &tree)) {
            found = -1;
            break;
        }
        size_t begins[FIT_PARTS_MAX], ends[FIT_PARTS_MAX], nparts = 0, tail = SIZE_MAX;
        fit_tree_args(tree, 0, strlen(tree), begins, ends, &nparts, FIT_PARTS_MAX);
        /* the tail: the last part that lies in no other */
        for (size_t q = 0; q < nparts; q++) {
            int inner = 0;
            for (size_t u = 0; u < nparts && !inner; u++)
                inner = u != q && begins[u] <= begins[q] && ends[q] <= ends[u];
            if (!inner)
                tail = q;
        }
        if (tail != SIZE_MAX)
            found = add_part_point(&mini, base, tb, te, tree, ends, nparts, tail,
                                   strstr(base, "acc = \"fp32\"") ? "acc=fp64" : "acc=fp32");
        free(tree);
        free(base);
    }
    char what[96];
    snprintf(what, sizeof what, "one part of %zu closest trees, or a body's tail, in a setting of its own", trees);
    return finish_mini(S, &mini, found, pairs, npairs, o, text, err, t0, what);
}

/* (c), after the row classes: every body of the space, its own settings
 * kept (a tail's fma, say), with each part in each of part_opts: a part
 * beside one the space already sets, or a body's lanes in another format.
 * About 140,000 points for fp32 dot products, 2 s. */
static int fit_parts_bodies(search *S, const fit_space *space, const fit_pair *pairs, size_t npairs,
                            const fit_opts *o, char **text, nx_err *err)
{
    double t0 = now();
    fit_space mini;
    fit_space_init(&mini, space->out);
    int found = 0;
    for (size_t c = 0; c < S->ncand && found >= 0; c++) { /* the space as --max cut it */
        const char *ct = space->c[c].tree;
        if (!ct || strncmp(ct, "body(", 5) || strchr(ct, '@') || space->c[c].product >= 0)
            continue;
        char *base, *tb, *te, *tree;
        if (cand_tree(space, c, &base, &tb, &te, &tree)) {
            found = -1;
            break;
        }
        found = add_every_part(&mini, base, tb, te, tree);
        free(tree);
        free(base);
    }
    return finish_mini(S, &mini, found, pairs, npairs, o, text, err, t0,
                       "every body, each part in a setting of its own");
}

nx_status fit_run(const fit_pair *pairs, size_t npairs, const fit_space *space, const fit_opts *o, fit_result *res,
                  nx_err *err)
{
    memset(res, 0, sizeof *res);
    /* no rows, no evidence: every candidate "fits" an empty pair, and the
     * first of the space would be printed as the kernel's point */
    if (npairs == 0)
        return nx_err_set(err, NX_EINVAL, "no pairs of inputs and outputs to fit");
    for (size_t p = 0; p < npairs; p++)
        if (pairs[p].in.rows == 0)
            return nx_err_set(err, NX_EINVAL,
                              "pair %zu has no rows (shape [0, %zu]): a fit needs rows whose outputs tell the "
                              "candidates apart", p + 1, pairs[p].n);
    /* a grid: the same one for every pair (the fitted point holds one), M x N = its rows */
    for (size_t p = 0; p < npairs; p++) {
        const fit_pair *pp = &pairs[p];
        if (pp->grid_m != pairs[0].grid_m || pp->grid_n != pairs[0].grid_n)
            return nx_err_set(err, NX_EINVAL, "pair %zu: grid [%ld, %ld], but pair 1 has [%ld, %ld] (one grid for all)",
                              p + 1, pp->grid_m, pp->grid_n, pairs[0].grid_m, pairs[0].grid_n);
        if ((pp->grid_m || pp->grid_n) &&
            (pp->grid_m <= 0 || pp->grid_n <= 0 || pp->grid_m > (long)pp->in.rows ||
             (size_t)pp->grid_m * (size_t)pp->grid_n != pp->in.rows))
            return nx_err_set(err, NX_EINVAL, "pair %zu: grid [%ld, %ld] does not lay out its %zu rows", p + 1,
                              pp->grid_m, pp->grid_n, pp->in.rows);
    }
    /* Every candidate builds and frees programs and engine scratch of a few
     * hundred KiB; with glibc's defaults each free returns them to the
     * kernel (trim, munmap) and the next allocation faults them in again,
     * which cost three quarters of the time at n = 4096.  Keep them. */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    search S;
    memset(&S, 0, sizeof S);
    S.pairs = pairs;
    S.npairs = npairs;
    S.space = space;
    S.o = o;
    S.threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    S.ncand = o->max && o->max < space->count ? o->max : space->count;
    for (size_t p = 0; p < npairs; p++)
        S.rm.total += pairs[p].in.rows;
    size_t T = S.rm.total;
    res->total_rows = T;
    S.rm.pair_of = malloc((T ? T : 1) * sizeof *S.rm.pair_of);
    S.rm.row_of = malloc((T ? T : 1) * sizeof *S.rm.row_of);
    S.killer = malloc((S.ncand ? S.ncand : 1) * sizeof *S.killer);
    S.passed = calloc(S.ncand ? S.ncand : 1, sizeof *S.passed);
    size_t *order0 = malloc((T ? T : 1) * sizeof *order0);
    nx_status st = NX_OK;
    if (!S.rm.pair_of || !S.rm.row_of || !S.killer || !S.passed || !order0) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory for %zu candidates over %zu rows", S.ncand, T);
        goto done;
    }
    size_t g = 0;
    for (size_t p = 0; p < npairs; p++)
        for (size_t r = 0; r < pairs[p].in.rows; r++, g++) {
            S.rm.pair_of[g] = (uint32_t)p;
            S.rm.row_of[g] = r;
        }
    /* the first probes: the first row of each pair, then its last, then its
     * middle, then every other row */
    {
        unsigned char *used = calloc(T ? T : 1, 1);
        if (!used) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        size_t k = 0, base = 0;
        size_t *bases = malloc((npairs ? npairs : 1) * sizeof *bases);
        if (!bases) {
            free(used);
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        for (size_t p = 0; p < npairs; p++) {
            bases[p] = base;
            base += pairs[p].in.rows;
        }
        for (int pass = 0; pass < 3; pass++)
            for (size_t p = 0; p < npairs; p++) {
                size_t R = pairs[p].in.rows;
                if (!R)
                    continue;
                size_t r = pass == 0 ? 0 : pass == 1 ? R - 1 : R / 2;
                if (!used[bases[p] + r]) {
                    used[bases[p] + r] = 1;
                    order0[k++] = bases[p] + r;
                }
            }
        for (size_t x = 0; x < T; x++)
            if (!used[x])
                order0[k++] = x;
        free(used);
        free(bases);
    }

    /* pass 1: every candidate, each stopping at its first mismatching row;
     * per thread, a row that kills a candidate moves to the front */
    double t0 = now(), last = t0;
    size_t done_c = 0, best_passed = 0, best_c = SIZE_MAX, evals = 0, over_work = 0;
    int oom = 0;
#pragma omp parallel num_threads(S.threads) reduction(+ : evals)
    {
        size_t *order = malloc((T ? T : 1) * sizeof *order);
        if (!order) {
#pragma omp atomic write
            oom = 1;
        } else
            memcpy(order, order0, T * sizeof *order);
#pragma omp for schedule(dynamic, 4)
        for (size_t c = 0; c < S.ncand; c++) {
            if (!order)
                continue;
            cand_eval ce;
            if (ce_open(&ce, space, c, npairs) != 0) {
#pragma omp atomic write
                oom = 1;
                continue;
            }
            size_t i, kill = FITS_ALL;
            for (i = 0; i < T; i++) {
                size_t gg = order[i];
                evals++;
                int m = ce_row(&ce, pairs, S.rm.pair_of[gg], S.rm.row_of[gg], o->engine);
                if (m < 0) {
                    kill = INVALID;
                    break;
                }
                if (!m) {
                    kill = gg;
                    memmove(order + 1, order, i * sizeof *order);
                    order[0] = gg;
                    break;
                }
            }
            if (ce.over) {
#pragma omp atomic update
                over_work++;
            }
            ce_close(&ce);
            S.killer[c] = kill;
            S.passed[c] = kill == INVALID ? 0 : i;
            if (kill != INVALID && i > best_passed) {
#pragma omp critical(fit_progress)
                if (i > best_passed || (i == best_passed && c < best_c)) {
                    best_passed = i;
                    best_c = c;
                }
            }
            size_t dc;
#pragma omp atomic capture
            dc = ++done_c;
            if (o->progress && omp_get_thread_num() == 0 && now() - last >= 1.0) {
                last = now();
                size_t bc;
                size_t bp;
#pragma omp critical(fit_progress)
                {
                    bc = best_c;
                    bp = best_passed;
                }
                char *bt = bc != SIZE_MAX ? fit_cand_text(space, bc) : NULL;
                fprintf(stderr, "parity fit: %zu/%zu candidates, %.0f/s; best so far %zu/%zu rows: %s\n", dc,
                        S.ncand, (double)dc / (last - t0), bp, T, bt ? bt : "-");
                free(bt);
            }
        }
        free(order);
    }
    S.row_evals += evals;
    res->evaluated = S.ncand;
    res->over_work = over_work;
    res->seconds = now() - t0;
    res->cands_per_s = res->seconds > 0 ? (double)S.ncand / res->seconds : 0;
    if (oom) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory evaluating candidates");
        goto done;
    }
    size_t win = SIZE_MAX;
    for (size_t c = 0; c < S.ncand; c++)
        if (S.killer[c] == FITS_ALL) {
            res->nfit++;
            if (win == SIZE_MAX)
                win = c;
            else if (res->nalt < FIT_MAX_ALT)
                res->alt[res->nalt++] = c;
        }
    if (o->progress)
        fprintf(stderr, "parity fit: %zu candidates in %.2f s (%.0f/s), %zu fit every row on their own\n", S.ncand,
                res->seconds, res->cands_per_s, res->nfit);
    char *text = NULL;
    if (win != SIZE_MAX) {
        text = fit_cand_text(space, win);
        if (!text) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
    } else {
        /* per-part arithmetic of the closest trees, the row classes, then
         * per-part arithmetic of every body (docs/fit.md "The search") */
        int f = o->parts ? fit_parts(&S, space, pairs, npairs, o, &text, err) : 0;
        if (f == 0 && o->classes && T > 1) {
            if (o->progress)
                fprintf(stderr, "parity fit: no single point fits every row; fitting row classes\n");
            if (pairs[0].grid_m > 0)
                f = fit_grid(&S, &text, &res->nclasses);
            if (f == 0)
                f = fit_classes(&S, &text, &res->nclasses);
            if (f == 0)
                f = fit_residues(&S, &text, &res->nclasses);
        }
        if (f == 0 && o->parts && (f = fit_parts_bodies(&S, space, pairs, npairs, o, &text, err)) > 0)
            res->nclasses = 0;
        res->per_part = f > 0 && res->nclasses == 0 && o->parts;
        if (f < 0) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory fitting per-part arithmetic or row classes");
            goto done;
        }
    }
    if (text) {
        /* canonical text, and the proof: every row with MPFR */
        nx_point pt;
        if ((st = pt_from_text(text, "fitted point", &pt, err))) {
            free(text);
            nx_err_prefix(err, "internal");
            st = NX_EINTERNAL;
            goto done;
        }
        res->point = nx_point_print(&pt);
        nx_point_free(&pt);
        free(text);
        if (!res->point) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        if (o->verify) {
            long bad = verify(&S, res->point, err);
            if (bad != 0) {
                st = bad < 0 ? NX_EINTERNAL
                             : nx_err_set(err, NX_EINTERNAL,
                                          "the fitted point differs from MPFR on %ld rows: the fast engine and MPFR "
                                          "disagree (a bug): %s",
                                          bad, res->point);
                goto done;
            }
        }
        res->found = 1;
    } else {
        /* the closest: the 24 that went furthest, counted over every row */
        fit_near nr[24];
        size_t nc = closest(&S, 24, nr);
        res->nnear = nc < 8 ? nc : 8;
        memcpy(res->near, nr, res->nnear * sizeof *nr);
    }
done:
    res->row_evals = S.row_evals;
    free(order0);
    free(S.rm.pair_of);
    free(S.rm.row_of);
    free(S.killer);
    free(S.passed);
    return st;
}
