/* fuzz_util.h: what the fuzz targets share: a scratch file (or folder) per
 * process for the readers that take a path, and the size caps.
 *
 * Every target is one LLVMFuzzerTestOneInput; the same file links against
 * libFuzzer (PARITY_FUZZ=ON, fuzz/CMakeLists.txt) or against replay.c, which
 * runs the corpus files through it in the default test suite. */
#ifndef PARITY_FUZZ_UTIL_H
#define PARITY_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A path private to this process under $TMPDIR (or /tmp), `tag` telling the
 * targets' files apart; the same path on every call. */
static inline const char *fz_scratch(const char *tag)
{
    static char path[512];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/parity-fuzz-%s-%ld", dir && *dir ? dir : "/tmp", tag, (long)getpid());
    }
    return path;
}

/* Writes size bytes to path (replacing it); 0 on success. */
static inline int fz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = size && fwrite(data, 1, size, f) != size;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* data as a NUL-terminated string (malloc'd; at most cap bytes of it). */
static inline char *fz_str(const uint8_t *data, size_t size, size_t cap)
{
    if (size > cap)
        size = cap;
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#endif
