/* fuzz_engines.c: the differential target.  The fuzz bytes pick a random
 * numerics point (tests/randpoint.c's generator, seeded by the first 8
 * bytes, third-edition forms (lanes too) and atoms included, optionally with an `e8m0`
 * accumulator, product or output, formats the generator leaves out) and
 * the rows' raw bit patterns (the rest of the bytes, as fp32, fp64, bf16
 * or the case's own input format: NaN, infinities, subnormals and exact
 * cancellations all reachable).  The MPFR engine (the truth), the fast
 * engine and the fast engine's vector path on rows as stored must give the
 * same bits; any difference aborts with the case printed.
 *
 * Input layout: seed[8] flags[1] rows[1] then patterns, row by row: a[n]
 * (and b[n] for a dot), each in its format's storage width, then c. */
#include "fuzz_util.h"

#include <math.h>

#include "nx_engine.h"
#include "nx_limits.h"
#include "nx_simd.h"
#include "point_toml.h"
#include "randpoint.h"

#define FZ_MAX_ROWS 4

static int store_bytes(nx_fmt f)
{
    unsigned b = nx_format(f)->storage_bits;
    return b <= 8 ? 1 : (int)(b / 8);
}

/* The next pattern of format f from the bytes, or the generator's when
 * they ran out. */
static uint64_t take(const uint8_t **p, const uint8_t *end, nx_fmt f, const char *fname, const uint64_t *prev,
                     size_t nprev)
{
    int w = store_bytes(f);
    if (end - *p < w)
        return rp_gen_bits(fname, prev, nprev, 0);
    uint64_t v = 0;
    for (int i = 0; i < w; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += w;
    unsigned sb = nx_format(f)->storage_bits;
    return sb >= 64 ? v : v & ((1ull << sb) - 1);
}

/* Replaces (or adds) key = "e8m0" in the inline table text. */
static void set_key(char *toml, size_t cap, const char *key)
{
    char pat[32], buf[2048];
    snprintf(pat, sizeof pat, "%s = \"", key);
    char *k = strstr(toml, pat);
    if (k && (k == toml + 2 || k[-2] == ',')) {
        char *v = k + strlen(pat), *q = strchr(v, '"');
        if (!q)
            return;
        snprintf(buf, sizeof buf, "%.*se8m0%s", (int)(v - toml), toml, q);
    } else {
        snprintf(buf, sizeof buf, "{ %s = \"e8m0\", %s", key, toml + 2);
    }
    snprintf(toml, cap, "%s", buf);
}

static void report(const char *what, const rp_case *c, const char *toml, size_t rows, size_t n, const double *a,
                   const double *b, const double *cv, size_t r, double ym, double yf)
{
    fprintf(stderr, "ENGINES DISAGREE (%s): point %s\n  %s n=%zu a:%s%s%s rows=%zu\n", what, toml,
            c->dot ? "dot" : "sum", n, c->in_fmt, c->dot ? " b:" : "", c->dot ? c->b_fmt : "", rows);
    fprintf(stderr, "  row %zu: mpfr %a, fast %a\n", r, ym, yf);
    if (cv)
        fprintf(stderr, "  c: %a (%s)\n", cv[r], c->c_fmt);
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "  t%zu: a=%a", i, a[r * n + i]);
        if (b)
            fprintf(stderr, " b=%a", b[r * n + i]);
        fputc('\n', stderr);
    }
}

static int same(nx_fmt out, double x, double y)
{
    uint64_t bx = 0, by = 0;
    nx_err e = {0};
    int ex = nx_encode(out, x, &bx, &e) == NX_OK, ey = nx_encode(out, y, &by, &e) == NX_OK;
    if (ex != ey)
        return 0;
    if (ex)
        return bx == by;
    return (isnan(x) && isnan(y)) || (x == y && signbit(x) == signbit(y));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 10 || size > 4096)
        return 0;
    static int limited;
    if (!limited) {
        nx_limits l = *nx_limits_get();
        l.max_ops = 1u << 14;
        nx_limits_set(&l);
        limited = 1;
    }
    uint64_t seed = 0;
    for (int i = 0; i < 8; i++)
        seed |= (uint64_t)data[i] << (8 * i);
    uint8_t flags = data[8];
    size_t rows = 1 + data[9] % FZ_MAX_ROWS;
    const uint8_t *p = data + 10, *end = data + size;

    rp_edition = flags & 1 ? 4 : 2;
    rp_rare = (flags >> 1) & 1;
    rp_seed(seed);
    rp_case c;
    rp_case_make(&c);
    switch ((flags >> 2) & 7) { /* formats the generator does not pick */
    case 1: set_key(c.toml, sizeof c.toml, "acc"); break;
    case 2: set_key(c.toml, sizeof c.toml, "out"); break;
    case 3: set_key(c.toml, sizeof c.toml, "product"); break;
    case 4: set_key(c.toml, sizeof c.toml, "acc"); set_key(c.toml, sizeof c.toml, "out"); break;
    default: break;
    }
    switch ((flags >> 5) & 3) { /* the bytes as raw patterns of a wide format */
    case 1: c.in_fmt = c.b_fmt = "fp32"; break;
    case 2: c.in_fmt = c.b_fmt = "fp64"; break;
    case 3: c.in_fmt = c.b_fmt = "bf16"; break;
    default: break;
    }
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(c.toml, "point", &pt, &err) != NX_OK) {
        if (getenv("PARITY_FUZZ_VERBOSE"))
            fprintf(stderr, "refused: %s\n", err.msg);
        return 0;
    }
    if (getenv("PARITY_FUZZ_VERBOSE"))
        fprintf(stderr, "point: %s (n=%zu, %s)\n", c.toml, c.n, c.in_fmt);
    nx_program *prog = NULL;
    if (nx_program_build_ex(&pt, c.n, c.dot, c.has_c, &prog, &err) != NX_OK) {
        nx_point_free(&pt);
        return 0;
    }
    size_t n = c.n;
    nx_fmt fa = (nx_fmt)nx_fmt_from_name(c.in_fmt), fb = (nx_fmt)nx_fmt_from_name(c.b_fmt);
    nx_fmt fc = c.has_c ? (nx_fmt)nx_fmt_from_name(c.c_fmt) : NX_FP64;
    size_t cnt = rows * n + 1;
    double *a = calloc(cnt, sizeof *a), *b = calloc(cnt, sizeof *b), *cv = calloc(rows, sizeof *cv);
    uint64_t *ap = calloc(cnt, sizeof *ap), *bp = calloc(cnt, sizeof *bp);
    double *ym = calloc(rows, sizeof *ym), *yf = calloc(rows, sizeof *yf), *yr = calloc(rows, sizeof *yr);
    if (!a || !b || !cv || !ap || !bp || !ym || !yf || !yr)
        abort();
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < n; i++) {
            ap[r * n + i] = take(&p, end, fa, c.in_fmt, ap + r * n, i);
            a[r * n + i] = nx_decode(fa, ap[r * n + i], NULL);
            if (c.dot) {
                bp[r * n + i] = take(&p, end, fb, c.b_fmt, bp + r * n, i);
                b[r * n + i] = nx_decode(fb, bp[r * n + i], NULL);
            }
        }
        if (c.has_c)
            cv[r] = nx_decode(fc, r == 0 && p >= end ? c.c : take(&p, end, fc, c.c_fmt, NULL, 0), NULL);
    }
    nx_rows in = {.rows = rows, .a_fmt = fa, .a = a, .b_fmt = fb, .b = c.dot ? b : NULL, .c_fmt = fc,
                  .c = c.has_c ? cv : NULL};
    if (nx_mpfr_reduce(prog, &in, ym, 1, &err) != NX_OK || nx_fast_reduce(prog, &in, yf, 1, &err) != NX_OK) {
        fprintf(stderr, "an engine refused a point it was built for: %s\n  point %s\n", err.msg, c.toml);
        abort();
    }
    for (size_t r = 0; r < rows; r++)
        if (!same(prog->out, ym[r], yf[r])) {
            report("fast", &c, c.toml, rows, n, a, c.dot ? b : NULL, c.has_c ? cv : NULL, r, ym[r], yf[r]);
            abort();
        }

    /* The vector path on the rows as stored (where the point takes it). */
    int done = 0;
    float *a32 = NULL, *b32 = NULL;
    uint16_t *a16 = NULL, *b16 = NULL;
    nx_simd_rows sr = {.rows = rows};
    sr.a = (nx_simd_src){.p = a, .store = NX_ST_F64, .fmt = fa, .stride = n};
    sr.b = (nx_simd_src){.p = c.dot ? b : NULL, .store = NX_ST_F64, .fmt = fb, .stride = n};
    sr.c = (nx_simd_src){.p = c.has_c ? cv : NULL, .store = NX_ST_F64, .fmt = fc, .stride = 1};
    if (fa == fb && (fa == NX_FP32 || fa == NX_BF16 || fa == NX_FP16)) {
        if (fa == NX_FP32) {
            a32 = calloc(cnt, sizeof *a32);
            b32 = calloc(cnt, sizeof *b32);
            if (!a32 || !b32)
                abort();
            for (size_t i = 0; i < rows * n; i++) {
                uint32_t u = (uint32_t)ap[i], v = (uint32_t)bp[i];
                memcpy(&a32[i], &u, 4);
                memcpy(&b32[i], &v, 4);
            }
            sr.a.p = a32;
            sr.b.p = c.dot ? b32 : NULL;
            sr.a.store = sr.b.store = NX_ST_F32;
        } else {
            a16 = calloc(cnt, sizeof *a16);
            b16 = calloc(cnt, sizeof *b16);
            if (!a16 || !b16)
                abort();
            for (size_t i = 0; i < rows * n; i++) {
                a16[i] = (uint16_t)ap[i];
                b16[i] = (uint16_t)bp[i];
            }
            sr.a.p = a16;
            sr.b.p = c.dot ? b16 : NULL;
            sr.a.store = sr.b.store = fa == NX_BF16 ? NX_ST_BF16 : NX_ST_F16;
        }
    }
    if (nx_fast_reduce_raw(prog, &sr, yr, 1, &done, &err) != NX_OK) {
        fprintf(stderr, "the vector path refused: %s\n  point %s\n", err.msg, c.toml);
        abort();
    }
    for (size_t r = 0; done && r < rows; r++)
        if (!same(prog->out, ym[r], yr[r])) {
            report("vector path", &c, c.toml, rows, n, a, c.dot ? b : NULL, c.has_c ? cv : NULL, r, ym[r], yr[r]);
            abort();
        }

    free(a32);
    free(b32);
    free(a16);
    free(b16);
    free(a);
    free(b);
    free(cv);
    free(ap);
    free(bp);
    free(ym);
    free(yf);
    free(yr);
    nx_program_free(prog);
    nx_point_free(&pt);
    return 0;
}
