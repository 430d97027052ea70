/* fit.c: the search of `parity fit` (docs/fit.md "The search"). */
#include "fit.h"
#include "nx_limits.h"
#include "point_toml.h"

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
        char *b = fit_cand_text(S->space, base), *inner = inner_text(S->space, pick);
        if (!b || !inner) {
            free(b);
            free(inner);
            found = -1;
            break;
        }
        size_t bl = strlen(b);
        if (bl >= 2)
            b[bl - 1] = 0; /* drop the closing brace */
        size_t cap = bl + strlen(inner) + strlen(sel) + 64;
        char *out = malloc(cap);
        if (out)
            snprintf(out, cap, "%s, rows = [{ select = \"%s\",%s}] }", b, sel, inner);
        free(b);
        free(inner);
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

nx_status fit_run(const fit_pair *pairs, size_t npairs, const fit_space *space, const fit_opts *o, fit_result *res,
                  nx_err *err)
{
    memset(res, 0, sizeof *res);
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
    } else if (o->classes && T > 1) {
        if (o->progress)
            fprintf(stderr, "parity fit: no single point fits every row; fitting row classes\n");
        int f = fit_classes(&S, &text, &res->nclasses);
        if (f == 0)
            f = fit_residues(&S, &text, &res->nclasses);
        if (f < 0) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory fitting row classes");
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
        size_t cand[24], nc = 0;
        for (size_t c = 0; c < S.ncand; c++) {
            if (S.killer[c] == INVALID)
                continue;
            size_t pos = nc;
            while (pos > 0 && S.passed[cand[pos - 1]] < S.passed[c])
                pos--;
            if (pos >= 24)
                continue;
            if (nc < 24)
                nc++;
            memmove(cand + pos + 1, cand + pos, (nc - 1 - pos) * sizeof *cand);
            cand[pos] = c;
        }
        fit_near nr[24];
#pragma omp parallel for schedule(dynamic, 1) num_threads(S.threads)
        for (size_t i = 0; i < nc; i++) {
            cand_eval ce;
            nr[i].cand = cand[i];
            nr[i].mismatches = T;
            if (ce_open(&ce, space, cand[i], npairs) != 0)
                continue;
            size_t bad = 0;
            for (size_t x = 0; x < T; x++)
                bad += ce_row(&ce, pairs, S.rm.pair_of[x], S.rm.row_of[x], o->engine) != 1;
            ce_close(&ce);
            nr[i].mismatches = bad;
        }
        for (size_t i = 1; i < nc; i++) /* by mismatches, then space order */
            for (size_t j = i; j > 0 && (nr[j].mismatches < nr[j - 1].mismatches ||
                                         (nr[j].mismatches == nr[j - 1].mismatches && nr[j].cand < nr[j - 1].cand));
                 j--) {
                fit_near t = nr[j];
                nr[j] = nr[j - 1];
                nr[j - 1] = t;
            }
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
