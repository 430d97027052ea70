/* nx_limits.c: the process-wide limits on sizes taken from inputs
 * (nx_limits.h, docs/limits.md). */
#include "nx_limits.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static nx_limits cur = {NX_LIMITS_DEFAULT_BYTES, NX_LIMITS_DEFAULT_TERMS, NX_LIMITS_DEFAULT_OPS,
                        NX_LIMITS_DEFAULT_WORK};

const nx_limits *nx_limits_get(void)
{
    return &cur;
}

void nx_limits_set(const nx_limits *l)
{
    cur = *l;
}

int nx_limits_mul(uint64_t a, uint64_t b, uint64_t *out)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p))
        return 0;
    *out = p;
    return 1;
}

uint64_t nx_limits_mul_sat(uint64_t a, uint64_t b)
{
    uint64_t p;
    return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

uint64_t nx_limits_add_sat(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

nx_status nx_limits_work(uint64_t work, const char *what, nx_err *err)
{
    if (work <= cur.max_work)
        return NX_OK;
    if (work == UINT64_MAX)
        return nx_err_set(err, NX_EINVAL, "%s: more than 2^64, more than the limit of %llu (raise it with --max-work)",
                          what, (unsigned long long)cur.max_work);
    return nx_err_set(err, NX_EINVAL, "%s: %llu, more than the limit of %llu (raise it with --max-work)", what,
                      (unsigned long long)work, (unsigned long long)cur.max_work);
}

nx_status nx_limits_bytes(uint64_t bytes, const char *what, nx_err *err)
{
    if (bytes <= cur.max_bytes)
        return NX_OK;
    return nx_err_set(err, NX_EINVAL, "%s: needs %llu bytes, more than the limit of %llu (raise it with --max-bytes)",
                      what, (unsigned long long)bytes, (unsigned long long)cur.max_bytes);
}

nx_status nx_limits_elems(uint64_t count, uint64_t size, const char *what, nx_err *err)
{
    uint64_t b;
    if (!nx_limits_mul(count, size, &b))
        return nx_err_set(err, NX_EINVAL, "%s: %llu elements of %llu bytes overflow 64 bits", what,
                          (unsigned long long)count, (unsigned long long)size);
    return nx_limits_bytes(b, what, err);
}

nx_status nx_limits_terms(uint64_t rows, uint64_t n, const char *what, nx_err *err)
{
    uint64_t t;
    if (!nx_limits_mul(rows ? rows : 1, n ? n : 1, &t))
        return nx_err_set(err, NX_EINVAL, "%s: %llu rows of %llu terms overflow 64 bits", what,
                          (unsigned long long)rows, (unsigned long long)n);
    if (t <= cur.max_terms)
        return NX_OK;
    return nx_err_set(err, NX_EINVAL,
                      "%s: %llu rows x %llu terms (a zero extent counts as 1) is more than the limit of %llu terms "
                      "(raise it with --max-terms)",
                      what, (unsigned long long)rows, (unsigned long long)n, (unsigned long long)cur.max_terms);
}

nx_status nx_limits_file(const char *path, uint64_t per_byte, const char *why, nx_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return NX_OK;
    char what[512];
    snprintf(what, sizeof what, "%s: a file of %llu bytes, read whole (%s, up to %llu bytes of memory per byte)", path,
             (unsigned long long)st.st_size, why, (unsigned long long)per_byte);
    return nx_limits_elems((uint64_t)st.st_size, per_byte, what, err);
}

int nx_limits_parse_size(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (*end || v == 0 || v > (UINT64_C(1) << 62) >> shift)
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
