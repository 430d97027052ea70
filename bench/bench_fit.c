/* bench_fit.c: `parity fit`'s search (parity/fit/) on the goal case:
 * the default space (fp32 dot products, out fp32: about 1.2·10^4
 * candidates) over R rows of n terms (default 64 x 4096), the outputs made
 * by a hidden point of the space.
 *
 * Methods, in the same run:
 *   fast   the search as `parity fit` runs it (fast engine, early exit,
 *          discriminating rows first) over every candidate; candidates per
 *          second, and the wall time including the MPFR verification;
 *   mpfr   the same search with the MPFR engine over every k-th candidate
 *          (--mpfr-every, default 40), and the fast search over the very
 *          same sub-space: the ratio is of those two runs.
 *
 * Checks (exit 1): the fast search finds the hidden point (its result
 * reproduces every row, verified with MPFR); both engines find the same
 * winner on the sub-space when it holds one, and the same fitting count.
 *
 *   bench_fit [--threads N] [--rows R] [--n N] [--mpfr-every K] [--json]
 *
 * Exit: 0 ok, 1 a check failed, 2 usage. */
#include "fit.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An fp32 value in (-2, 2), with a spread of exponents. */
static double rand_f32(void)
{
    uint64_t r = next();
    float m = (float)((double)(r >> 40) / (double)(1u << 24)); /* [0, 1) with 24 bits */
    int e = (int)((r >> 8) & 7);
    float v = (1.0f + m) / (float)(1 << e);
    return (double)((r & 1) ? -v : v);
}

static long arg_long(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    return (*end || v < lo || v > hi) ? -1 : v;
}

int main(int argc, char **argv)
{
    long threads = 2, rows = 64, n = 4096, every = 40;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        long *dst = NULL;
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[i], "--threads"))
            dst = &threads;
        else if (!strcmp(argv[i], "--rows"))
            dst = &rows;
        else if (!strcmp(argv[i], "--n"))
            dst = &n;
        else if (!strcmp(argv[i], "--mpfr-every"))
            dst = &every;
        if (!dst || i + 1 >= argc || (*dst = arg_long(argv[++i], 1, 1L << 24)) < 0) {
            fprintf(stderr, "usage: bench_fit [--threads N] [--rows R] [--n N] [--mpfr-every K] [--json]\n");
            return 2;
        }
    }
    size_t R = (size_t)rows, N = (size_t)n;
    double *a = malloc(R * N * sizeof *a), *b = malloc(R * N * sizeof *b), *y = malloc(R * sizeof *y);
    if (!a || !b || !y)
        return 2;
    for (size_t i = 0; i < R * N; i++) {
        a[i] = rand_f32();
        b[i] = rand_f32();
    }
    fit_pair pr = {.in = {.rows = R, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32, .b = b, .c_fmt = NX_FP64},
                   .n = N,
                   .dot = 1,
                   .y = y};
    fit_ctx ctx = {.out = NX_FP32, .in_fmt = NX_FP32, .dot = 1};
    fit_space space;
    fit_space_init(&space, NX_FP32);
    nx_err err = {0};
    if (fit_space_default(&space, &ctx, 0, &err)) {
        fprintf(stderr, "bench_fit: %s\n", err.msg);
        return 2;
    }
    /* the hidden point: a body/tail with a strided body, late in the space */
    const char *hidden = "body(16, stride(16, seq, halving), seq[fma=false], carry)";
    size_t hid = SIZE_MAX;
    for (size_t i = 0; i < space.count; i++)
        if (space.c[i].tree && !strcmp(space.c[i].tree, hidden) && space.c[i].acc == NX_FP32 && space.c[i].fma == 1) {
            hid = i;
            break;
        }
    nx_point pt;
    nx_program *prog = NULL;
    if (hid == SIZE_MAX || fit_cand_point(&space, hid, &pt, &err) || nx_program_build(&pt, N, 1, &prog, &err) ||
        nx_mpfr_reduce(prog, &pr.in, y, (int)threads, &err)) {
        fprintf(stderr, "bench_fit: the hidden point: %s\n", hid == SIZE_MAX ? "not in the space" : err.msg);
        return 2;
    }
    nx_program_free(prog);
    nx_point_free(&pt);
    int fail = 0;

    /* fast, the whole space */
    fit_opts o = {.threads = (int)threads, .engine = NX_ENGINE_FAST, .classes = 1, .verify = 1};
    fit_result full;
    double t0 = omp_get_wtime();
    if (fit_run(&pr, 1, &space, &o, &full, &err)) {
        fprintf(stderr, "bench_fit: %s\n", err.msg);
        return 1;
    }
    double wall = omp_get_wtime() - t0;
    if (!full.found) {
        fprintf(stderr, "bench_fit: FAIL: the fast search did not find the hidden point\n");
        fail = 1;
    }

    /* the same candidates, both engines: every k-th candidate, the hidden one included */
    fit_space sub;
    fit_space_init(&sub, NX_FP32);
    sub.c = malloc((space.count / (size_t)every + 2) * sizeof *sub.c);
    if (!sub.c)
        return 2;
    for (size_t i = 0; i < space.count; i++)
        if (i % (size_t)every == 0 || i == hid)
            sub.c[sub.count++] = space.c[i]; /* shared strings: sub is not freed with fit_space_free */
    fit_result rf, rm;
    fit_opts om = o;
    om.engine = NX_ENGINE_MPFR;
    om.verify = 0;
    o.verify = 0;
    double f0 = omp_get_wtime();
    nx_status s1 = fit_run(&pr, 1, &sub, &o, &rf, &err);
    double f1 = omp_get_wtime();
    nx_status s2 = s1 ? s1 : fit_run(&pr, 1, &sub, &om, &rm, &err);
    double f2 = omp_get_wtime();
    if (s1 || s2) {
        fprintf(stderr, "bench_fit: %s\n", err.msg);
        return 1;
    }
    if (rf.nfit != rm.nfit || (rf.point && rm.point && strcmp(rf.point, rm.point)) || !rf.point != !rm.point) {
        fprintf(stderr, "bench_fit: FAIL: fast and MPFR searches disagree (%zu vs %zu fitting)\n", rf.nfit, rm.nfit);
        fail = 1;
    }
    double tf = f1 - f0, tm = f2 - f1;
    if (json)
        printf("{\"rows\": %zu, \"n\": %zu, \"threads\": %ld, \"candidates\": %zu, \"seconds\": %.3f, "
               "\"wall_seconds\": %.3f, \"candidates_per_second\": %.1f, \"row_evaluations\": %zu, "
               "\"sub_candidates\": %zu, \"sub_fast_seconds\": %.3f, \"sub_mpfr_seconds\": %.3f, "
               "\"mpfr_over_fast\": %.2f, \"found\": %s}\n",
               R, N, threads, full.evaluated, full.seconds, wall, full.cands_per_s, full.row_evals, sub.count, tf, tm,
               tf > 0 ? tm / tf : 0, full.found ? "true" : "false");
    else {
        printf("bench_fit: default space, fp32 dot products, %zu rows x %zu terms, %ld threads\n", R, N, threads);
        printf("  fast search: %zu candidates in %.2f s = %.0f candidates/s (%zu row evaluations); "
               "%.2f s with the MPFR verification of the winner\n",
               full.evaluated, full.seconds, full.cands_per_s, full.row_evals, wall);
        printf("  found: %s\n", full.point ? full.point : "(nothing)");
        printf("  same %zu candidates: fast %.3f s (%.0f/s), MPFR %.3f s (%.0f/s): MPFR/fast = %.1fx\n", sub.count, tf,
               (double)sub.count / tf, tm, (double)sub.count / tm, tm / tf);
    }
    fit_result_free(&full);
    fit_result_free(&rf);
    fit_result_free(&rm);
    free(sub.c);
    fit_space_free(&space);
    free(a);
    free(b);
    free(y);
    return fail;
}
