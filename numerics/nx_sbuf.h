/* nx_sbuf.h: a growable string buffer; an allocation failure is sticky
 * (oom) so callers check once at the end. */
#ifndef NX_SBUF_H
#define NX_SBUF_H

#include <stddef.h>

typedef struct nx_sbuf {
    char *s;
    size_t n, cap;
    int oom;
} nx_sbuf;

void nx_sbuf_printf(nx_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nx_sbuf_put(nx_sbuf *b, const char *s, size_t n);
/* Returns the string (owned by the caller) or NULL after an allocation failure. */
char *nx_sbuf_take(nx_sbuf *b);

#endif
