/* nx_sbuf.c: growable string buffer. */
#include "nx_sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(nx_sbuf *b, size_t extra)
{
    if (b->oom)
        return 0;
    if (b->n + extra + 1 <= b->cap)
        return 1;
    size_t cap = (b->cap + extra + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return 0;
    }
    b->s = s;
    b->cap = cap;
    return 1;
}

void nx_sbuf_put(nx_sbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void nx_sbuf_printf(nx_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || !reserve(b, (size_t)k))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

char *nx_sbuf_take(nx_sbuf *b)
{
    if (b->oom) {
        free(b->s);
        b->s = NULL;
        return NULL;
    }
    if (!b->s)
        reserve(b, 0), b->s ? (void)(b->s[0] = 0) : (void)0;
    char *s = b->s;
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}
