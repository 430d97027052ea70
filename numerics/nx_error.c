/* nx_error.c: filling and prefixing nx_err values. */
#include "nx_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

nx_status nx_err_set(nx_err *e, nx_status code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void nx_err_prefix(nx_err *e, const char *fmt, ...)
{
    if (!e)
        return;
    char head[NX_ERR_MSG_MAX];
    char old[NX_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Both parts are cut to fit: the message stays a string, never overflows. */
    size_t hn = strnlen(head, sizeof e->msg - 3);
    memcpy(e->msg, head, hn);
    memcpy(e->msg + hn, ": ", 2);
    size_t room = sizeof e->msg - hn - 3;
    size_t on = strnlen(old, room);
    memcpy(e->msg + hn + 2, old, on);
    e->msg[hn + 2 + on] = 0;
}

const char *nx_status_name(nx_status s)
{
    switch (s) {
    case NX_OK: return "ok";
    case NX_EINVAL: return "invalid input";
    case NX_EIO: return "i/o error";
    case NX_ENOMEM: return "out of memory";
    case NX_EUNSUPPORTED: return "unsupported";
    case NX_EINTERNAL: return "internal error";
    }
    return "unknown error";
}
