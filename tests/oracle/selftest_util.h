/* selftest_util.h: the checks shared by the oracle's hand-worked self-tests
 * (oracle_selftest.c, oracle_selftest3.c): each expected bit pattern is a
 * literal worked out by hand; these helpers run the oracle and count. */
#ifndef PARITY_ORACLE_SELFTEST_UTIL_H
#define PARITY_ORACLE_SELFTEST_UTIL_H

#include "oracle.h"

#include <stdio.h>
#include <string.h>

static int failures, checks;


static inline orc_point pt(const char *tree)
{
    orc_point p;
    memset(&p, 0, sizeof p);
    p.fma = 1;
    p.atom_frac_bits = -1;
    p.tree = tree;
    return p;
}

static inline void expect_bits(const char *what, int rc, const char *err, uint64_t got, uint64_t want)
{
    checks++;
    if (rc != 0) {
        failures++;
        printf("FAIL %s: error %d: %s\n", what, rc, err);
    } else if (got != want) {
        failures++;
        printf("FAIL %s: got 0x%llx, want 0x%llx\n", what, (unsigned long long)got,
               (unsigned long long)want);
    }
}

static inline void sum(const char *what, const orc_point *p, const char *fmt, const uint64_t *x, size_t n,
                uint64_t want)
{
    char err[512] = "";
    uint64_t got = 0;
    int rc = orc_reduce(p, fmt, NULL, x, NULL, n, &got, err, sizeof err);
    expect_bits(what, rc, err, got, want);
}

static inline void dot(const char *what, const orc_point *p, const char *fmt, const uint64_t *a,
                const uint64_t *b, size_t n, uint64_t want)
{
    char err[512] = "";
    uint64_t got = 0;
    int rc = orc_reduce(p, fmt, NULL, a, b, n, &got, err, sizeof err);
    expect_bits(what, rc, err, got, want);
}

static inline void sum_c(const char *what, const orc_point *p, const char *fmt, const uint64_t *x, size_t n,
                  const char *c_fmt, uint64_t c, uint64_t want)
{
    char err[512] = "";
    uint64_t got = 0;
    int rc = orc_reduce_c(p, fmt, NULL, x, NULL, n, c_fmt, &c, &got, err, sizeof err);
    expect_bits(what, rc, err, got, want);
}

static inline void dot_c(const char *what, const orc_point *p, const char *fmt, const uint64_t *a,
                  const uint64_t *b, size_t n, const char *c_fmt, uint64_t c, uint64_t want)
{
    char err[512] = "";
    uint64_t got = 0;
    int rc = orc_reduce_c(p, fmt, NULL, a, b, n, c_fmt, &c, &got, err, sizeof err);
    expect_bits(what, rc, err, got, want);
}

static inline void sum_fails(const char *what, const orc_point *p, const char *fmt, const uint64_t *x,
                      size_t n)
{
    char err[512] = "";
    uint64_t got = 0;
    checks++;
    int rc = orc_reduce(p, fmt, NULL, x, NULL, n, &got, err, sizeof err);
    if (rc == 0) {
        failures++;
        printf("FAIL %s: expected an error, got 0x%llx\n", what, (unsigned long long)got);
    } else if (err[0] == 0) {
        failures++;
        printf("FAIL %s: error without a message\n", what);
    }
}

#endif
