/* tmpdir.h: a scratch directory per test group (under $TMPDIR or /tmp),
 * removed with everything in it at the end.  Header-only; the including
 * file defines _XOPEN_SOURCE 700 (for nftw) before any include. */
#ifndef PARITY_TMPDIR_H
#define PARITY_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
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

#endif
