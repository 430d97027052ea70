/* tmpdir.h: a scratch directory per test group (under $TMPDIR or /tmp),
 * removed with everything in it at the end, and the file helpers the
 * file-format tests share.  Header-only; include after <cmocka.h>; the
 * including file defines _XOPEN_SOURCE 700 (for nftw) before any include. */
#ifndef PARITY_TMPDIR_H
#define PARITY_TMPDIR_H

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int tu_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Creates "<base>/<name>.XXXXXX" into dir; 0 on success. */
static inline int tu_tmpdir_make(char *dir, size_t len, const char *name)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, len, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
    return mkdtemp(dir) ? 0 : -1;
}

static inline int tu_tmpdir_remove(const char *dir)
{
    return nftw(dir, tu_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir/name into out (cap bytes); fails the test if it does not fit. */
static inline void tu_path(char *out, size_t cap, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
        fail_msg("path too long: %s/%s", dir, name);
}

static inline void tu_write_bytes(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        fail_msg("cannot create %s: %s", path, strerror(errno));
    if (n && fwrite(p, 1, n, fp) != n)
        fail_msg("cannot write %s", path);
    fclose(fp);
}

/* The whole file in a malloc'd buffer (one spare byte at the end). */
static inline uint8_t *tu_slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    assert_non_null(b);
    if (fread(b, 1, (size_t)sz, fp) != (size_t)sz)
        fail_msg("cannot read %s", path);
    fclose(fp);
    *n = (size_t)sz;
    return b;
}

#endif
