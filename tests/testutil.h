/* testutil.h: small shared helpers for the cmocka tests.
 *
 * cmocka's assert_double_equal is fuzzy and prints %f, so it cannot tell
 * 0x1p-24 from 0 or -0 from +0: these helpers compare bit patterns and print
 * the values with %a next to the patterns.  Header-only; include after
 * <cmocka.h>. */
#ifndef PARITY_TESTUTIL_H
#define PARITY_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t tu_dbits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static inline double tu_bdouble(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* 1 if got and want are the same double bit for bit, or both NaN: results of
 * the engines are values, and docs/numerics.md §2 treats every NaN as equal unless
 * payloads are compared (patterns are compared with tu_bits_eq). */
static inline int tu_same_double(double got, double want)
{
    if (isnan(got) && isnan(want))
        return 1;
    return tu_dbits(got) == tu_dbits(want);
}

/* Prints one mismatch of doubles (ctx says which case) without failing. */
static inline void tu_print_double_mismatch(const char *ctx, double got, double want)
{
    print_error("%s%sgot %a (0x%016llx), want %a (0x%016llx)\n", ctx ? ctx : "",
                ctx && *ctx ? ": " : "", got, (unsigned long long)tu_dbits(got), want,
                (unsigned long long)tu_dbits(want));
}

static inline void tu_assert_double_bits_eq(double got, double want, const char *ctx,
                                            const char *file, int line)
{
    if (tu_same_double(got, want))
        return;
    tu_print_double_mismatch(ctx, got, want);
    _fail(file, line);
}

static inline void tu_assert_bits_eq(const char *fmt_name, uint64_t got, uint64_t want,
                                     const char *ctx, const char *file, int line)
{
    if (got == want)
        return;
    print_error("%s%s%s: got pattern 0x%llx, want 0x%llx\n", ctx ? ctx : "",
                ctx && *ctx ? ": " : "", fmt_name, (unsigned long long)got,
                (unsigned long long)want);
    _fail(file, line);
}

/* Bit patterns of format fmt_name (a string, for the message). */
#define assert_bits_eq(fmt_name, got, want) \
    tu_assert_bits_eq((fmt_name), (uint64_t)(got), (uint64_t)(want), "", __FILE__, __LINE__)
#define assert_bits_eq_ctx(fmt_name, got, want, ctx) \
    tu_assert_bits_eq((fmt_name), (uint64_t)(got), (uint64_t)(want), (ctx), __FILE__, __LINE__)

/* Doubles, bit for bit (-0 != +0); any NaN equals any NaN. */
#define assert_double_bits_eq(got, want) \
    tu_assert_double_bits_eq((got), (want), "", __FILE__, __LINE__)
#define assert_double_bits_eq_ctx(got, want, ctx) \
    tu_assert_double_bits_eq((got), (want), (ctx), __FILE__, __LINE__)

/* The seed of a random test: PARITY_SEED if set, else def.  Tests echo it
 * in every failure message so a failure can be replayed. */
static inline uint64_t tu_seed(uint64_t def)
{
    const char *s = getenv("PARITY_SEED");
    if (s && *s)
        return strtoull(s, NULL, 0);
    return def;
}

/* splitmix64: a small, fixed, portable generator (same stream everywhere). */
static inline uint64_t tu_rand64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (inclusive), for small ranges. */
static inline int tu_rand_range(uint64_t *state, int lo, int hi)
{
    return lo + (int)(tu_rand64(state) % (uint64_t)(hi - lo + 1));
}

#endif
