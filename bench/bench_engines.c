/* bench_engines.c: the fast and MPFR engines against a plain loop, one run.
 *
 * Cases: three configurations x four trees, n terms per row over R rows:
 *   fp32  fp32 inputs, { acc = "fp32" } (rne, fma)
 *   bf16  bf16 inputs, { acc = "bf16" } (rne, fma)
 *   fp8   e4m3 inputs, { acc = "e8m13", rounding = "rz", out = "fp32" }
 * trees seq, split(8, seq, pairwise), stride(32, seq, halving, block=8) and
 * chain(16) with an atom (fp32: frac_bits 25, rz, fp32 = the wgmma bf16
 * parameters; bf16: frac_bits 25, rz, bf16; fp8: frac_bits 13, rz, e8m13).
 *
 * Methods, timed interleaved, K repetitions each, median reported:
 *   plain  a C loop over float arrays in the tree's order with native fp32
 *          arithmetic: fmaf chains, float adds for the combinators, and for
 *          chain(16) a double sum of each group's 16 products rounded to
 *          float (what one writes by hand).  For the fp32 configuration it
 *          computes exactly the point (checked: plain == fast, every row);
 *          for bf16/fp8 it is the native cost the emulation is held to.
 *   fast   nx_fast_reduce on the rows (exact doubles, as parity reduce has).
 *   mpfr   nx_mpfr_reduce on the first M rows only (--mpfr-rows, default
 *          16), scaled per term: the MPFR engine is ~50-100x slower.
 *   exact  the exact value of every row (nx_exact superaccumulator), rounded
 *          to the out format.
 * fmaf is a single instruction wherever the CPU has FMA: the plain loops and
 * the fast engine are both compiled for it (the same run-time dispatch), so
 * neither pays a library call the other does not.
 *
 * Checks (a failure is exit 1): fast == MPFR bit for bit on the rows both
 * computed; plain == fast on every row of the fp32 seq/split/stride cases;
 * the exact engine against MPFR's exact sum on the MPFR rows.
 *
 * Then (all cases, --only fast or none): the vector path (nx_simd.h) on
 * fp32 and bf16 rows as stored against the scalar block engine on decoded
 * rows, seq and split, each at 1 and 2 threads, with the ratios; the four
 * results are checked equal on every row.
 *
 * Also: the exact dot product of fp32 inputs (float arrays) against an
 * ordered double loop s += (double)a[i]*b[i] over the same rows.
 *
 *   bench_engines [--threads N] [--rows R] [--n N] [--reps K] [--mpfr-rows M]
 *                 [--case CONFIG/TREE] [--only plain|fast|mpfr|exact] [--json]
 *
 * For instruction counts: valgrind --tool=callgrind
 * --toggle-collect='method_*' bench_engines --case fp32/seq --only fast
 * counts only inside the timed method.  Exit: 0 ok, 1 mismatch, 2 usage. */
#include "nx_engine.h"
#include "nx_exact.h"
#include "nx_point.h"
#include "nx_program.h"
#include "nx_round_fast.h"
#include "nx_simd.h"

#include <errno.h>
#include <math.h>
#include <mpfr.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { M_PLAIN, M_FAST, M_MPFR, M_EXACT, M_COUNT };
static const char *const method_name[M_COUNT] = {"plain", "fast", "mpfr", "exact"};

enum { T_SEQ, T_SPLIT, T_STRIDE, T_CHAIN, T_COUNT };
static const char *const tree_name[T_COUNT] = {"seq", "split", "stride", "chain"};
static const char *const tree_text[T_COUNT] = {"seq", "split(8, seq, pairwise)",
                                               "stride(32, seq, halving, block=8)", "chain(16)"};

enum { C_FP32, C_BF16, C_FP8, C_COUNT };
static const char *const cfg_name[C_COUNT] = {"fp32", "bf16", "fp8"};
static const nx_fmt cfg_in[C_COUNT] = {NX_FP32, NX_BF16, NX_E4M3};
static const char *const cfg_point[C_COUNT] = {
    "acc = \"fp32\"",
    "acc = \"bf16\"",
    "acc = \"e8m13\", rounding = \"rz\", out = \"fp32\"",
};
static const char *const cfg_atom[C_COUNT] = {
    "{ frac_bits = 25, term_round = \"rz\", round = \"rz\", acc = \"fp32\" }",
    "{ frac_bits = 25, term_round = \"rz\", round = \"rz\" }",
    "{ frac_bits = 13, term_round = \"rz\", round = \"rz\", acc = \"e8m13\" }",
};

typedef struct opts {
    long rows, n, reps, mpfr_rows, threads;
    int json, only, cfg, tree; /* -1: all */
} opts;

static void usage(FILE *f)
{
    fputs("usage: bench_engines [options]\n"
          "  Times a plain loop, the fast engine, the MPFR engine and the exact engine\n"
          "  on three configurations (fp32, bf16, fp8 atom) x four trees (seq, split,\n"
          "  stride, chain), checks fast == MPFR bit for bit, and prints ns per term.\n"
          "options:\n"
          "  --threads N     OpenMP threads for every method (default 1: per core)\n"
          "  --rows R        rows (default 1024)\n"
          "  --n N           terms per row (default 4096)\n"
          "  --reps K        repetitions, interleaved; the median is reported (default 5)\n"
          "  --mpfr-rows M   rows the MPFR engine evaluates, scaled per term (default 16)\n"
          "  --case C/T      only configuration C (fp32, bf16, fp8) and tree T (seq,\n"
          "                  split, stride, chain); C or T may be *\n"
          "  --only M        only method M: plain, fast, mpfr or exact\n"
          "  --json          JSON instead of a table\n"
          "  --help          this text\n"
          "exit status: 0 ok, 1 a result mismatch or an engine failure, 2 usage\n",
          f);
}

static int parse_count(const char *opt, const char *s, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < 1 || v > max) {
        fprintf(stderr, "bench_engines: %s needs an integer in [1, %ld]\n", opt, max);
        return -1;
    }
    *out = v;
    return 0;
}

static uint64_t next_u64(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Roughly normal values (sum of four uniforms), rounded to the input format. */
static double gauss(uint64_t *st)
{
    double s = 0;
    for (int k = 0; k < 4; k++)
        s += (double)(next_u64(st) >> 11) * 0x1p-53;
    return (s - 2) * 1.7;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* Plain loops. */

typedef struct plain_job {
    const float *a, *b;
    size_t rows, n;
    int threads, tree;
    double *y;
} plain_job;

static inline __attribute__((always_inline)) float plain_row(const float *a, const float *b, size_t n, int tree)
{
    switch (tree) {
    case T_SEQ: {
        float s = 0.0f;
        for (size_t i = 0; i < n; i++)
            s = fmaf(a[i], b[i], s);
        return s;
    }
    case T_SPLIT: {
        float p[8];
        size_t c = (n + 7) / 8;
        for (size_t k = 0; k < 8; k++) {
            float s = 0.0f;
            size_t lo = k * c, hi = lo + c < n ? lo + c : n;
            for (size_t i = lo; i < hi; i++)
                s = fmaf(a[i], b[i], s);
            p[k] = s;
        }
        return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    case T_STRIDE: {
        float lane[32] = {0};
        for (size_t i = 0; i < n; i += 8) {
            size_t l = (i / 8) % 32, hi = i + 8 < n ? i + 8 : n;
            float s = lane[l];
            for (size_t k = i; k < hi; k++)
                s = fmaf(a[k], b[k], s);
            lane[l] = s;
        }
        for (size_t o = 16; o >= 1; o /= 2)
            for (size_t j = 0; j < o; j++)
                lane[j] = lane[j] + lane[j + o];
        return lane[0];
    }
    default: {
        float s = 0.0f;
        for (size_t g = 0; g < n; g += 16) {
            double acc = s;
            size_t hi = g + 16 < n ? g + 16 : n;
            for (size_t i = g; i < hi; i++)
                acc += (double)a[i] * (double)b[i];
            s = (float)acc;
        }
        return s;
    }
    }
}

/* One row per call: the OpenMP region stays outside the clones (an outlined
 * parallel region would not inherit the FMA target). */
static float plain_row_generic(const float *a, const float *b, size_t n, int tree)
{
    return plain_row(a, b, n, tree);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("fma"))) static float plain_row_fma(const float *a, const float *b, size_t n, int tree)
{
    return plain_row(a, b, n, tree);
}
#endif

__attribute__((noinline)) static void method_plain(const plain_job *j)
{
    float (*row)(const float *, const float *, size_t, int) = plain_row_generic;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("fma"))
        row = plain_row_fma;
#endif
#pragma omp parallel for num_threads(j->threads) schedule(dynamic, 4) if (j->rows > 1)
    for (size_t r = 0; r < j->rows; r++)
        j->y[r] = (double)row(j->a + r * j->n, j->b + r * j->n, j->n, j->tree);
}

__attribute__((noinline)) static int method_fast(const nx_program *p, const nx_rows *in, double *y, int threads,
                                                 size_t *redone)
{
    nx_err err = {0};
    if (nx_fast_reduce_ex(p, in, y, threads, redone, &err) != NX_OK) {
        fprintf(stderr, "bench_engines: nx_fast_reduce: %s\n", err.msg);
        return -1;
    }
    return 0;
}

__attribute__((noinline)) static int method_mpfr(const nx_program *p, const nx_rows *in, double *y, int threads)
{
    nx_err err = {0};
    if (nx_mpfr_reduce(p, in, y, threads, &err) != NX_OK) {
        fprintf(stderr, "bench_engines: nx_mpfr_reduce: %s\n", err.msg);
        return -1;
    }
    return 0;
}

__attribute__((noinline)) static void method_exact(const nx_rows *in, size_t n, nx_fmt out, double *y, int threads)
{
    int exact_products = in->a_fmt != NX_FP64 && in->b_fmt != NX_FP64;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) if (in->rows > 1)
    for (size_t r = 0; r < in->rows; r++)
        y[r] = nx_exact_dot(in->a + r * n, in->b + r * n, n, exact_products, out, NX_RNE);
}

__attribute__((noinline)) static void method_exact_f32(const float *a, const float *b, size_t rows, size_t n,
                                                       double *y, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) if (rows > 1)
    for (size_t r = 0; r < rows; r++) {
        nx_xacc x;
        nx_xacc_init(&x);
        nx_xacc_add_dot_f32(&x, a + r * n, b + r * n, n);
        y[r] = nx_xacc_round(&x, NX_FP64, NX_RNE, 0);
    }
}

__attribute__((noinline)) static void method_double_loop(const float *a, const float *b, size_t rows, size_t n,
                                                         double *y, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) if (rows > 1)
    for (size_t r = 0; r < rows; r++) {
        const float *ar = a + r * n, *br = b + r * n;
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (double)ar[i] * (double)br[i];
        y[r] = s;
    }
}

/* ---------------------------------------------------------------------- */

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

static int same_pattern(nx_fmt f, double x, double y)
{
    uint64_t bx, by;
    int ex = nx_encode(f, x, &bx, NULL) == NX_OK, ey = nx_encode(f, y, &by, NULL) == NX_OK;
    if (ex != ey)
        return 0;
    return ex ? bx == by : isnan(x) && isnan(y);
}

typedef struct result {
    int cfg, tree;
    double ns[M_COUNT]; /* per term; < 0: not run */
    size_t redone;
} result;

/* ---------------------------------------------------------------------- */
/* The vector path (nx_simd.h) on rows as stored, against the scalar block
 * engine on decoded rows, at 1 and 2 threads: fp32 and bf16 inputs,
 * { acc = "fp32" }, trees seq and split (stride trees, whose terms jump,
 * are left to the scalar engine).
 * Every result is checked equal to the scalar engine's.  Returns 0, or 1
 * on a mismatch or failure. */
__attribute__((noinline)) static int method_vec(const nx_program *p, const nx_simd_rows *sr, double *y, int threads)
{
    nx_err err = {0};
    int done = 0;
    return nx_fast_reduce_raw(p, sr, y, threads, &done, &err) != NX_OK || !done;
}

__attribute__((noinline)) static int method_scalar(const nx_fast *f, const nx_rows *in, double *y, int threads)
{
    nx_err err = {0};
    return nx_fast_run(f, in, y, threads, NULL, &err) != NX_OK;
}

static int vector_section(const opts *o, size_t rows, size_t n)
{
    size_t total = rows * n;
    float *af = malloc(total * sizeof *af), *bf = malloc(total * sizeof *bf);
    uint16_t *ah = malloc(total * sizeof *ah), *bh = malloc(total * sizeof *bh);
    double *ad = malloc(total * sizeof *ad), *bd = malloc(total * sizeof *bd), *y[5];
    for (int k = 0; k < 5; k++)
        y[k] = malloc(rows * sizeof(double));
    double *t = malloc((size_t)o->reps * sizeof *t);
    if (!af || !bf || !ah || !bh || !ad || !bd || !y[0] || !y[1] || !y[2] || !y[3] || !y[4] || !t) {
        fprintf(stderr, "bench_engines: out of memory for %zu terms\n", total);
        return 1;
    }
    int bad = 0;
    printf("\nvector path (%s) on rows as stored vs the scalar block engine on decoded rows, ns per term\n",
           nx_simd_isa_name(nx_simd_isa_now()));
    printf("%-7s %-34s %8s %8s %8s %8s %10s %10s %10s\n", "input", "tree", "vec x1", "vec x2", "scal x1", "scal x2",
           "scal/vec", "vec x1/x2", "scal x1/x2");
    for (int c = 0; c < 2 && !bad; c++) {
        nx_fmt f = c ? NX_BF16 : NX_FP32;
        uint64_t seed = 0x5eedbe0c;
        for (size_t i = 0; i < total; i++) {
            ad[i] = nx_round_fast(gauss(&seed), f, NX_RNE, 1);
            bd[i] = nx_round_fast(gauss(&seed), f, NX_RNE, 1);
            af[i] = (float)ad[i];
            bf[i] = (float)bd[i];
            uint32_t u;
            memcpy(&u, &af[i], 4);
            ah[i] = (uint16_t)(u >> 16); /* exact: a bf16 value's low half is 0 */
            memcpy(&u, &bf[i], 4);
            bh[i] = (uint16_t)(u >> 16);
        }
        nx_rows in = {.rows = rows, .a_fmt = f, .a = ad, .b_fmt = f, .b = bd};
        nx_simd_rows sr = {.rows = rows,
                           .a = {c ? (const void *)ah : af, c ? NX_ST_BF16 : NX_ST_F32, f, n},
                           .b = {c ? (const void *)bh : bf, c ? NX_ST_BF16 : NX_ST_F32, f, n}};
        for (int tr = 0; tr < T_STRIDE && !bad; tr++) { /* stride trees: the scalar engine (nx_simd.h) */
            nx_err err = {0};
            nx_point pt;
            nx_program *prog = NULL;
            if (nx_point_init(&pt, &err) != NX_OK || nx_point_set_tree(&pt, tree_text[tr], "tree", &err) != NX_OK ||
                nx_program_build(&pt, n, 1, &prog, &err) != NX_OK) {
                fprintf(stderr, "bench_engines: %s\n", err.msg);
                return 1;
            }
            nx_point_free(&pt);
            nx_fast *fs = nx_fast_new(prog, f, f, 0, NX_FP64, &err);
            if (!fs) {
                fprintf(stderr, "bench_engines: %s\n", err.msg);
                return 1;
            }
            double ns[4];
            for (int m = 0; m < 4; m++) {
                int th = m % 2 ? 2 : 1;
                for (long r = 0; r < o->reps; r++) {
                    double t0 = now_ns();
                    int fail = m < 2 ? method_vec(prog, &sr, y[m], th) : method_scalar(fs, &in, y[m], th);
                    t[r] = now_ns() - t0;
                    if (fail) {
                        fprintf(stderr, "bench_engines: the %s path failed on %s\n", m < 2 ? "vector" : "scalar",
                                tree_text[tr]);
                        return 1;
                    }
                }
                ns[m] = median(t, (int)o->reps) / (double)total;
            }
            for (int m = 0; m < 3; m++)
                for (size_t r = 0; r < rows; r++)
                    if (memcmp(&y[m][r], &y[3][r], sizeof(double)) != 0 && !(isnan(y[m][r]) && isnan(y[3][r]))) {
                        if (bad++ < 5)
                            fprintf(stderr, "MISMATCH vector section %s/%s method %d row %zu: %a vs %a\n",
                                    c ? "bf16" : "fp32", tree_text[tr], m, r, y[m][r], y[3][r]);
                    }
            printf("%-7s %-34s %8.3f %8.3f %8.3f %8.3f %9.2fx %9.2fx %9.2fx\n", c ? "bf16" : "fp32", tree_text[tr],
                   ns[0], ns[1], ns[2], ns[3], ns[2] / ns[0], ns[0] / ns[1], ns[2] / ns[3]);
            nx_fast_free(fs);
            nx_program_free(prog);
        }
    }
    if (!bad)
        printf("check: vector x1, vector x2, scalar x1 and scalar x2 give the same bits on every row\n");
    free(af);
    free(bf);
    free(ah);
    free(bh);
    free(ad);
    free(bd);
    for (int k = 0; k < 5; k++)
        free(y[k]);
    free(t);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    opts o = {1024, 4096, 5, 16, 1, 0, -1, -1, -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--threads")) {
            if (parse_count(a, v, 4096, &o.threads))
                return 2;
            i++;
        } else if (!strcmp(a, "--rows")) {
            if (parse_count(a, v, 1L << 24, &o.rows))
                return 2;
            i++;
        } else if (!strcmp(a, "--n")) {
            if (parse_count(a, v, 1L << 24, &o.n))
                return 2;
            i++;
        } else if (!strcmp(a, "--reps")) {
            if (parse_count(a, v, 100000, &o.reps))
                return 2;
            i++;
        } else if (!strcmp(a, "--mpfr-rows")) {
            if (parse_count(a, v, 1L << 24, &o.mpfr_rows))
                return 2;
            i++;
        } else if (!strcmp(a, "--only")) {
            o.only = -2;
            for (int m = 0; m < M_COUNT; m++)
                if (v && !strcmp(v, method_name[m]))
                    o.only = m;
            if (o.only < 0) {
                fprintf(stderr, "bench_engines: --only needs plain, fast, mpfr or exact\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--case")) {
            const char *slash = v ? strchr(v, '/') : NULL;
            int okc = 0, okt = 0;
            if (slash) {
                size_t cl = (size_t)(slash - v);
                okc = cl == 1 && v[0] == '*';
                for (int c = 0; c < C_COUNT; c++)
                    if (strlen(cfg_name[c]) == cl && !strncmp(v, cfg_name[c], cl))
                        o.cfg = c, okc = 1;
                okt = !strcmp(slash + 1, "*");
                for (int t = 0; t < T_COUNT; t++)
                    if (!strcmp(slash + 1, tree_name[t]))
                        o.tree = t, okt = 1;
            }
            if (!okc || !okt) {
                fprintf(stderr, "bench_engines: --case needs CONFIG/TREE, e.g. fp32/seq or bf16/*\n");
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "bench_engines: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    size_t rows = (size_t)o.rows, n = (size_t)o.n, total = rows * n;
    size_t mrows = (size_t)o.mpfr_rows < rows ? (size_t)o.mpfr_rows : rows;
    if (total > ((size_t)1 << 28)) {
        fprintf(stderr, "bench_engines: rows * n = %zu terms is more than 2^28\n", total);
        return 2;
    }
    int threads = (int)o.threads;
    float *af = malloc(total * sizeof *af), *bf = malloc(total * sizeof *bf);
    double *ad = malloc(total * sizeof *ad), *bd = malloc(total * sizeof *bd);
    double *y[M_COUNT], *times[M_COUNT];
    for (int m = 0; m < M_COUNT; m++) {
        y[m] = malloc(rows * sizeof *y[m]);
        times[m] = malloc((size_t)o.reps * sizeof *times[m]);
    }
    if (!af || !bf || !ad || !bd || !y[0] || !y[1] || !y[2] || !y[3] || !times[0] || !times[1] || !times[2] ||
        !times[3]) {
        fprintf(stderr, "bench_engines: out of memory for %zu terms\n", total);
        return 1;
    }
    result res[C_COUNT * T_COUNT];
    size_t nres = 0;
    int ok = 1;
    for (int c = 0; c < C_COUNT && ok; c++) {
        if (o.cfg >= 0 && c != o.cfg)
            continue;
        uint64_t seed = 0x5eedbe0c + (uint64_t)c;
        for (size_t i = 0; i < total; i++) {
            ad[i] = nx_round_fast(gauss(&seed), cfg_in[c], NX_RNE, 1);
            bd[i] = nx_round_fast(gauss(&seed), cfg_in[c], NX_RNE, 1);
            af[i] = (float)ad[i];
            bf[i] = (float)bd[i];
        }
        nx_rows in = {.rows = rows, .a_fmt = cfg_in[c], .a = ad, .b_fmt = cfg_in[c], .b = bd};
        nx_rows min = {.rows = mrows, .a_fmt = cfg_in[c], .a = ad, .b_fmt = cfg_in[c], .b = bd};
        for (int t = 0; t < T_COUNT && ok; t++) {
            if (o.tree >= 0 && t != o.tree)
                continue;
            char text[512];
            if (t == T_CHAIN)
                snprintf(text, sizeof text, "{ %s, tree = \"%s\", atom = %s }", cfg_point[c], tree_text[t], cfg_atom[c]);
            else
                snprintf(text, sizeof text, "{ %s, tree = \"%s\" }", cfg_point[c], tree_text[t]);
            /* the point, parsed the way the CLI does (numerics only: no TOML here) */
            nx_err err = {0};
            nx_point pt;
            nx_program *prog = NULL;
            if (nx_point_init(&pt, &err) != NX_OK || nx_point_set_tree(&pt, tree_text[t], "tree", &err) != NX_OK) {
                fprintf(stderr, "bench_engines: %s\n", err.msg);
                return 1;
            }
            if (c == C_BF16)
                pt.acc = NX_BF16;
            if (c == C_FP8) {
                pt.acc = NX_E8M13;
                pt.rounding = NX_RZ;
                pt.out = NX_FP32;
            }
            if (t == T_CHAIN) {
                pt.atom.present = 1;
                pt.atom.frac_bits = c == C_FP8 ? 13 : 25;
                pt.atom.term_round = NX_RZ;
                pt.atom.round = NX_RZ;
                pt.atom.acc = c == C_FP32 ? NX_FP32 : c == C_FP8 ? NX_E8M13 : -1;
            }
            if (nx_program_build(&pt, n, 1, &prog, &err) != NX_OK) {
                fprintf(stderr, "bench_engines: %s: %s\n", text, err.msg);
                return 1;
            }
            plain_job pj = {af, bf, rows, n, threads, t, y[M_PLAIN]};
            result *R = &res[nres++];
            R->cfg = c;
            R->tree = t;
            R->redone = 0;
            for (int rep = 0; rep < o.reps && ok; rep++) {
                for (int m = 0; m < M_COUNT && ok; m++) {
                    if (o.only >= 0 && m != o.only)
                        continue;
                    double t0 = now_ns();
                    switch (m) {
                    case M_PLAIN: method_plain(&pj); break;
                    case M_FAST: ok = method_fast(prog, &in, y[m], threads, &R->redone) == 0; break;
                    case M_MPFR: ok = method_mpfr(prog, &min, y[m], threads) == 0; break;
                    default: method_exact(&in, n, prog->out, y[m], threads); break;
                    }
                    times[m][rep] = now_ns() - t0;
                }
            }
            for (int m = 0; m < M_COUNT; m++) {
                int have = o.only < 0 || o.only == m;
                size_t terms = m == M_MPFR ? mrows * n : total;
                R->ns[m] = have ? median(times[m], (int)o.reps) / (double)terms : -1;
            }
            /* checks */
            if (ok && o.only < 0) {
                for (size_t r = 0; r < mrows; r++)
                    if (!same_pattern(prog->out, y[M_FAST][r], y[M_MPFR][r])) {
                        fprintf(stderr, "bench_engines: MISMATCH %s/%s row %zu: fast %a, mpfr %a\n", cfg_name[c],
                                tree_name[t], r, y[M_FAST][r], y[M_MPFR][r]);
                        ok = 0;
                        break;
                    }
                if (c == C_FP32 && t != T_CHAIN)
                    for (size_t r = 0; r < rows && ok; r++)
                        if (!same_pattern(NX_FP32, y[M_FAST][r], y[M_PLAIN][r])) {
                            fprintf(stderr, "bench_engines: MISMATCH %s/%s row %zu: fast %a, plain %a\n",
                                    cfg_name[c], tree_name[t], r, y[M_FAST][r], y[M_PLAIN][r]);
                            ok = 0;
                        }
                /* the exact engine against MPFR's exact sum on a few rows */
                mpfr_t s, p;
                mpfr_inits2(4400, s, p, (mpfr_ptr)0);
                for (size_t r = 0; r < mrows && ok; r++) {
                    mpfr_set_zero(s, 1);
                    for (size_t i = 0; i < n; i++) {
                        mpfr_set_d(p, ad[r * n + i], MPFR_RNDN);
                        mpfr_mul_d(p, p, bd[r * n + i], MPFR_RNDN);
                        mpfr_add(s, s, p, MPFR_RNDN); /* exact at 4400 bits */
                    }
                    double want = mpfr_get_d(s, MPFR_RNDN);
                    double got = nx_exact_dot(ad + r * n, bd + r * n, n, 1, NX_FP64, NX_RNE);
                    if (memcmp(&want, &got, sizeof got) != 0) {
                        fprintf(stderr, "bench_engines: MISMATCH exact engine row %zu: %a vs MPFR %a\n", r, got, want);
                        ok = 0;
                    }
                }
                mpfr_clears(s, p, (mpfr_ptr)0);
            }
            nx_program_free(prog);
            nx_point_free(&pt);
        }
    }
    /* The exact fp32 dot against an ordered double loop (float arrays). */
    double xd_ns = -1, dl_ns = -1;
    if (ok && o.only < 0 && o.cfg < 0 && o.tree < 0) {
        uint64_t seed = 0x5eedbe0c;
        for (size_t i = 0; i < total; i++) {
            af[i] = (float)gauss(&seed);
            bf[i] = (float)gauss(&seed);
        }
        for (int rep = 0; rep < o.reps; rep++) {
            double t0 = now_ns();
            method_exact_f32(af, bf, rows, n, y[M_EXACT], threads);
            double t1 = now_ns();
            method_double_loop(af, bf, rows, n, y[M_PLAIN], threads);
            times[M_EXACT][rep] = t1 - t0;
            times[M_PLAIN][rep] = now_ns() - t1;
        }
        xd_ns = median(times[M_EXACT], (int)o.reps) / (double)total;
        dl_ns = median(times[M_PLAIN], (int)o.reps) / (double)total;
    }
    if (!ok) {
        fprintf(stderr, "bench_engines: FAILED\n");
        return 1;
    }

    if (o.json) {
        printf("{\"bench\": \"engines\", \"rows\": %ld, \"n\": %ld, \"threads\": %ld, \"reps\": %ld, "
               "\"mpfr_rows\": %zu,\n \"cases\": [",
               o.rows, o.n, o.threads, o.reps, mrows);
        for (size_t k = 0; k < nres; k++) {
            const result *R = &res[k];
            printf("%s\n  {\"config\": \"%s\", \"tree\": \"%s\", \"ns_per_term\": {", k ? "," : "", cfg_name[R->cfg],
                   tree_text[R->tree]);
            const char *sep = "";
            for (int m = 0; m < M_COUNT; m++)
                if (R->ns[m] >= 0) {
                    printf("%s\"%s\": %.4f", sep, method_name[m], R->ns[m]);
                    sep = ", ";
                }
            printf("}");
            if (o.only < 0)
                printf(", \"ratio\": {\"fast/plain\": %.3f, \"mpfr/fast\": %.1f, \"exact/plain\": %.3f}, "
                       "\"fast_rows_via_mpfr\": %zu, \"bit_identical\": true",
                       R->ns[M_FAST] / R->ns[M_PLAIN], R->ns[M_MPFR] / R->ns[M_FAST],
                       R->ns[M_EXACT] / R->ns[M_PLAIN], R->redone);
            printf("}");
        }
        printf("]");
        if (xd_ns >= 0)
            printf(",\n \"exact_dot_fp32\": {\"ns_per_term\": %.4f, \"terms_per_s\": %.4g, \"double_loop_ns_per_term\": "
                   "%.4f, \"ratio\": %.3f}",
                   xd_ns, 1e9 / xd_ns, dl_ns, xd_ns / dl_ns);
        printf("}\n");
    } else {
        printf("bench_engines: n = %ld terms per row, %ld rows, %ld thread(s), median of %ld interleaved "
               "repetitions\n",
               o.n, o.rows, o.threads, o.reps);
        printf("ns per term; mpfr timed on the first %zu rows and scaled per term; plain = a C loop of the same\n"
               "order in native fp32 (chain: a double sum per group); fast == mpfr checked bit for bit\n\n",
               mrows);
        printf("%-7s %-34s %8s %8s %8s %8s %10s %10s %11s\n", "config", "tree", "plain", "fast", "mpfr", "exact",
               "fast/plain", "mpfr/fast", "exact/plain");
        for (size_t k = 0; k < nres; k++) {
            const result *R = &res[k];
            printf("%-7s %-34s", cfg_name[R->cfg], tree_text[R->tree]);
            for (int m = 0; m < M_COUNT; m++) {
                if (R->ns[m] >= 0)
                    printf(" %8.3f", R->ns[m]);
                else
                    printf(" %8s", "-");
            }
            if (o.only < 0)
                printf(" %9.2fx %9.1fx %10.2fx", R->ns[M_FAST] / R->ns[M_PLAIN], R->ns[M_MPFR] / R->ns[M_FAST],
                       R->ns[M_EXACT] / R->ns[M_PLAIN]);
            if (R->redone)
                printf("  (%zu rows via MPFR)", R->redone);
            printf("\n");
        }
        if (xd_ns >= 0)
            printf("\nexact dot of fp32 inputs: %.3f ns/term (%.3g terms/s per thread); ordered double loop "
                   "%.3f ns/term; ratio %.2f\n",
                   xd_ns, 1e9 / xd_ns, dl_ns, xd_ns / dl_ns);
        if (o.only < 0)
            printf("\ncheck: fast == mpfr on %zu rows per case; plain == fast on every row of fp32 "
                   "seq/split/stride; exact == MPFR's exact sum\n",
                   mrows);
        if ((o.only < 0 || o.only == M_FAST) && o.cfg < 0 && o.tree < 0 && vector_section(&o, rows, (size_t)o.n))
            return 1;
    }
    for (int m = 0; m < M_COUNT; m++) {
        free(y[m]);
        free(times[m]);
    }
    free(af);
    free(bf);
    free(ad);
    free(bd);
    mpfr_free_cache();
    return 0;
}
