/* nx_error.c: filling and prefixing nx_err values; opening input files. */
#include "nx_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    case NX_EDEVICE: return "device error";
    }
    return "unknown error";
}

int nx_open_input(const char *path, nx_err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        nx_err_set(e, NX_EIO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int er = errno;
        close(fd);
        nx_err_set(e, NX_EIO, "%s: cannot stat: %s", path, strerror(er));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        nx_err_set(e, NX_EIO, "%s: not a regular file (%s); nothing read from it", path,
                   S_ISDIR(sb.st_mode)                           ? "a directory"
                   : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                   : S_ISFIFO(sb.st_mode)                        ? "a FIFO"
                   : S_ISSOCK(sb.st_mode)                        ? "a socket"
                                                                 : "a special file");
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int er = errno;
        close(fd);
        nx_err_set(e, NX_EIO, "%s: cannot clear O_NONBLOCK: %s", path, strerror(er));
        return -1;
    }
    return fd;
}

void *nx_fopen_input(const char *path, nx_err *e)
{
    int fd = nx_open_input(path, e);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        nx_err_set(e, NX_EIO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

nx_status nx_check_input(const char *path, nx_err *e)
{
    nx_err local = {0};
    int fd = nx_open_input(path, e ? e : &local);
    if (fd < 0)
        return e ? e->code : local.code;
    close(fd);
    return NX_OK;
}
