/* bench_mpfr.c: the cost of the MPFR engine against the loops it stands for.
 *
 * The point is the default one (fp32 accumulator, rne, fma, exact products,
 * seq): a dot product whose every step is exactly fmaf.  Three ways of doing
 * the same rows are timed in the same run, interleaved, K times each, and
 * the median wall clock (CLOCK_MONOTONIC) is reported per term:
 *
 *   engine     nx_mpfr_reduce over the expanded program;
 *   mpfr-loop  a bare loop: s = 0 (24 bits); per term mpfr_set_flt(a),
 *              mpfr_set_flt(b), mpfr_fma(s, a, b, s, RNDN); mpfr_get_flt(s);
 *   plain      float s = 0; s = fmaf(a, b, s).
 *
 * Every result of every repetition is compared bit for bit with an fmaf
 * reference computed once up front (and so, transitively, with each other);
 * a difference is reported and the exit status is 1.  The inputs are fp32
 * values from a fixed seed, with exponents in [-24, 24], random signs and a
 * few zeros, so no product or partial sum leaves fp32's normal range (every
 * nonzero partial sum is a multiple of 2^-94): a 24-bit MPFR number with
 * MPFR's exponent range then rounds exactly as fp32 does.
 *
 *   bench_mpfr [--threads N] [--rows R] [--n N] [--reps K] [--json]
 *              [--only engine|mpfr-loop|plain]
 *
 * Exit status: 0 ok, 1 a mismatch or an engine failure, 2 a usage error. */
#include "nx_engine.h"
#include "nx_point.h"
#include "nx_program.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { M_ENGINE, M_MPFR, M_PLAIN, M_COUNT };

static const char *const method_name[M_COUNT] = {"engine", "mpfr-loop", "plain"};
static const char *const method_desc[M_COUNT] = {
    "engine (nx_mpfr_reduce)", "bare mpfr_fma loop", "plain fmaf loop"};

typedef struct bench {
    size_t rows, n;
    int threads;
    const float *af, *bf; /* rows * n, row-major */
    const double *ad, *bd; /* the same values, exact doubles */
    const nx_program *prog;
} bench;

static void usage(FILE *f)
{
    fputs("usage: bench_mpfr [options]\n"
          "  Times the MPFR engine (nx_mpfr_reduce) on an fp32 rne fma seq dot product\n"
          "  against a bare mpfr_fma loop and a plain fmaf loop doing the same work,\n"
          "  and checks that all three agree bit for bit.\n"
          "options:\n"
          "  --threads N   OpenMP threads for every method (default 1)\n"
          "  --rows R      rows (default 256)\n"
          "  --n N         terms per row (default 4096)\n"
          "  --reps K      repetitions of each measurement, interleaved; the median\n"
          "                is reported (default 7)\n"
          "  --only M      run only method M: engine, mpfr-loop or plain (for\n"
          "                instruction counting, e.g. under callgrind)\n"
          "  --json        print JSON instead of a table\n"
          "  --help        this text\n"
          "exit status: 0 ok, 1 a result mismatch or an engine failure, 2 usage\n",
          f);
}

static int parse_count(const char *opt, const char *s, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < 1 || v > max) {
        fprintf(stderr, "bench_mpfr: %s needs an integer in [1, %ld]%s%s%s\n", opt, max,
                s ? ", not '" : "", s ? s : "", s ? "'" : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* splitmix64: a fixed, portable sequence. */
static uint64_t next_u64(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A random fp32 value: 1/64 of them are signed zeros, the rest normal with
 * a random 24-bit significand, exponent in [-24, 24] and sign. */
static float random_f32(uint64_t *st)
{
    uint64_t r = next_u64(st);
    uint32_t sign = (uint32_t)(r & 1) << 31;
    if (((r >> 1) & 63) == 0) {
        uint32_t bits = sign;
        float z;
        memcpy(&z, &bits, sizeof z);
        return z;
    }
    uint32_t exp = (uint32_t)(127 - 24 + (int)((r >> 7) % 49));
    uint32_t man = (uint32_t)(r >> 32) & 0x7fffffu;
    uint32_t bits = sign | exp << 23 | man;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The three methods.  noinline so that a profile shows each one whole. */

__attribute__((noinline)) static int run_engine(const bench *b, double *y, nx_err *err)
{
    nx_rows in = {.rows = b->rows, .a_fmt = NX_FP32, .a = b->ad, .b_fmt = NX_FP32, .b = b->bd};
    return nx_mpfr_reduce(b->prog, &in, y, b->threads, err) == NX_OK ? 0 : -1;
}

__attribute__((noinline)) static void run_mpfr_loop(const bench *b, double *y)
{
    size_t rows = b->rows, n = b->n;
#pragma omp parallel num_threads(b->threads) if (rows > 1)
    {
        mpfr_t s, x, w;
        mpfr_inits2(24, s, x, w, (mpfr_ptr)0);
#pragma omp for schedule(dynamic, 1)
        for (size_t row = 0; row < rows; row++) {
            const float *a = b->af + row * n, *c = b->bf + row * n;
            mpfr_set_zero(s, 1);
            for (size_t i = 0; i < n; i++) {
                mpfr_set_flt(x, a[i], MPFR_RNDN);
                mpfr_set_flt(w, c[i], MPFR_RNDN);
                mpfr_fma(s, x, w, s, MPFR_RNDN);
            }
            y[row] = (double)mpfr_get_flt(s, MPFR_RNDN);
        }
        mpfr_clears(s, x, w, (mpfr_ptr)0);
    }
}

__attribute__((noinline)) static void run_plain(const bench *b, double *y)
{
    size_t rows = b->rows, n = b->n;
#pragma omp parallel for num_threads(b->threads) schedule(dynamic, 1) if (rows > 1)
    for (size_t row = 0; row < rows; row++) {
        const float *a = b->af + row * n, *c = b->bf + row * n;
        float s = 0.0f;
        for (size_t i = 0; i < n; i++)
            s = fmaf(a[i], c[i], s);
        y[row] = (double)s;
    }
}

static int same_bits(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Compares y with the reference; reports the first difference. */
static int check(const char *what, const double *y, const double *ref, size_t rows, int rep)
{
    for (size_t row = 0; row < rows; row++) {
        if (!same_bits(y[row], ref[row])) {
            fprintf(stderr,
                    "bench_mpfr: MISMATCH: %s differs from fmaf at row %zu (repetition %d): "
                    "%a (%.9g) vs %a (%.9g)\n",
                    what, row, rep + 1, y[row], y[row], ref[row], ref[row]);
            return -1;
        }
    }
    return 0;
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

static double median(double *v, int k)
{
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

int main(int argc, char **argv)
{
    long rows = 256, n = 4096, reps = 7, threads = 1;
    int json = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--threads")) {
            if (parse_count(a, v, 4096, &threads))
                return 2;
            i++;
        } else if (!strcmp(a, "--rows")) {
            if (parse_count(a, v, 1L << 24, &rows))
                return 2;
            i++;
        } else if (!strcmp(a, "--n")) {
            if (parse_count(a, v, 1L << 24, &n))
                return 2;
            i++;
        } else if (!strcmp(a, "--reps")) {
            if (parse_count(a, v, 100000, &reps))
                return 2;
            i++;
        } else if (!strcmp(a, "--only")) {
            only = -2;
            for (int m = 0; m < M_COUNT; m++)
                if (v && !strcmp(v, method_name[m]))
                    only = m;
            if (only < 0) {
                fprintf(stderr, "bench_mpfr: --only needs engine, mpfr-loop or plain%s%s%s\n",
                        v ? ", not '" : "", v ? v : "", v ? "'" : "");
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "bench_mpfr: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    size_t total = (size_t)rows * (size_t)n;
    if (total > ((size_t)1 << 28)) {
        fprintf(stderr, "bench_mpfr: rows * n = %zu terms is more than 2^28\n", total);
        return 2;
    }

    /* Inputs: fp32 values and their exact doubles. */
    float *af = malloc(total * sizeof *af), *bf = malloc(total * sizeof *bf);
    double *ad = malloc(total * sizeof *ad), *bd = malloc(total * sizeof *bd);
    double *ref = malloc((size_t)rows * sizeof *ref);
    double *y[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        y[m] = malloc((size_t)rows * sizeof *y[m]);
    double *times[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        times[m] = malloc((size_t)reps * sizeof *times[m]);
    if (!af || !bf || !ad || !bd || !ref || !y[0] || !y[1] || !y[2] || !times[0] || !times[1] ||
        !times[2]) {
        fprintf(stderr, "bench_mpfr: out of memory for %zu terms\n", total);
        return 1;
    }
    uint64_t seed = 0x5eed0f32u;
    for (size_t i = 0; i < total; i++) {
        af[i] = random_f32(&seed);
        bf[i] = random_f32(&seed);
        ad[i] = (double)af[i];
        bd[i] = (double)bf[i];
    }

    /* The default point: fp32 acc, rne, fma, exact products, seq. */
    nx_err err = {0};
    nx_point pt;
    nx_program *prog = NULL;
    if (nx_point_init(&pt, &err) != NX_OK ||
        nx_program_build(&pt, (size_t)n, 1, &prog, &err) != NX_OK) {
        fprintf(stderr, "bench_mpfr: cannot build the program: %s\n", err.msg);
        return 1;
    }
    bench b = {.rows = (size_t)rows, .n = (size_t)n, .threads = (int)threads,
               .af = af, .bf = bf, .ad = ad, .bd = bd, .prog = prog};

    /* The reference, untimed. */
    run_plain(&b, ref);

    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
        for (int m = 0; m < M_COUNT && ok; m++) {
            if (only >= 0 && m != only)
                continue;
            memset(y[m], 0xff, (size_t)rows * sizeof *y[m]);
            double t0 = now_ns();
            if (m == M_ENGINE) {
                if (run_engine(&b, y[m], &err)) {
                    fprintf(stderr, "bench_mpfr: nx_mpfr_reduce failed: %s\n", err.msg);
                    return 1;
                }
            } else if (m == M_MPFR) {
                run_mpfr_loop(&b, y[m]);
            } else {
                run_plain(&b, y[m]);
            }
            times[m][r] = now_ns() - t0;
            if (check(method_name[m], y[m], ref, (size_t)rows, r))
                ok = 0;
        }
        /* Direct comparison, on top of the transitive one through ref. */
        if (ok && only < 0)
            for (size_t row = 0; row < (size_t)rows; row++)
                if (!same_bits(y[M_ENGINE][row], y[M_MPFR][row]) ||
                    !same_bits(y[M_ENGINE][row], y[M_PLAIN][row])) {
                    fprintf(stderr, "bench_mpfr: MISMATCH at row %zu: engine %a, mpfr loop %a, fmaf %a\n",
                            row, y[M_ENGINE][row], y[M_MPFR][row], y[M_PLAIN][row]);
                    ok = 0;
                    break;
                }
    }
    if (!ok) {
        fprintf(stderr, "bench_mpfr: FAILED: the engine is not bit-identical to fmaf\n");
        return 1;
    }

    double med[M_COUNT], per_term[M_COUNT];
    int have[M_COUNT];
    for (int m = 0; m < M_COUNT; m++) {
        have[m] = only < 0 || only == m;
        med[m] = have[m] ? median(times[m], (int)reps) : 0;
        per_term[m] = med[m] / (double)total;
    }
    int ratios = only < 0;
    double r_mpfr = ratios ? med[M_ENGINE] / med[M_MPFR] : 0;
    double r_plain = ratios ? med[M_ENGINE] / med[M_PLAIN] : 0;

    if (json) {
        printf("{\"bench\": \"mpfr\", \"point\": \"fp32 rne fma seq dot\", \"mpfr\": \"%s\", "
               "\"rows\": %ld, \"n\": %ld, \"threads\": %ld, \"reps\": %ld, \"seed\": %u,\n"
               " \"ns_per_term\": {",
               mpfr_get_version(), rows, n, threads, reps, 0x5eed0f32u);
        const char *sep = "";
        for (int m = 0; m < M_COUNT; m++)
            if (have[m]) {
                printf("%s\"%s\": %.4f", sep, method_name[m], per_term[m]);
                sep = ", ";
            }
        printf("},\n \"median_ms\": {");
        sep = "";
        for (int m = 0; m < M_COUNT; m++)
            if (have[m]) {
                printf("%s\"%s\": %.4f", sep, method_name[m], med[m] / 1e6);
                sep = ", ";
            }
        printf("},\n");
        if (ratios)
            printf(" \"ratio\": {\"engine/mpfr-loop\": %.4f, \"engine/plain\": %.4f},\n", r_mpfr,
                   r_plain);
        printf(" \"bit_identical\": true}\n");
    } else {
        printf("bench_mpfr: fp32 rne fma seq dot product, MPFR %s\n", mpfr_get_version());
        printf("rows %ld, n %ld (%zu terms), threads %ld, median of %ld interleaved repetitions\n\n",
               rows, n, total, threads, reps);
        printf("%-26s %12s %12s\n", "method", "ns/term", "median ms");
        for (int m = 0; m < M_COUNT; m++)
            if (have[m])
                printf("%-26s %12.3f %12.3f\n", method_desc[m], per_term[m], med[m] / 1e6);
        if (ratios) {
            printf("\n%-26s %11.2fx\n", "engine / mpfr loop", r_mpfr);
            printf("%-26s %11.2fx\n", "engine / plain loop", r_plain);
            printf("\ncheck: engine == mpfr loop == fmaf loop, bit for bit (%ld rows x %ld reps)\n",
                   rows, reps);
        } else {
            printf("\ncheck: %s == fmaf reference, bit for bit (%ld rows x %ld reps)\n",
                   method_name[only], rows, reps);
        }
    }

    nx_program_free(prog);
    nx_point_free(&pt);
    for (int m = 0; m < M_COUNT; m++) {
        free(y[m]);
        free(times[m]);
    }
    free(af);
    free(bf);
    free(ad);
    free(bd);
    free(ref);
    mpfr_free_cache();
    return 0;
}
