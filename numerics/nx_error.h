/* nx_error.h: the error value every library function hands back.
 *
 * The library never prints and never exits.  A failing call returns a
 * nonzero nx_status and, when the caller passed an nx_err, fills it with a
 * message that says what is wrong and where (file, line, column, key, byte
 * offset).  Only the CLI turns these into text and exit statuses. */
#ifndef NX_ERROR_H
#define NX_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nx_status {
    NX_OK = 0,
    NX_EINVAL = 1,    /* malformed input: a point, a tree, a file, a shape */
    NX_EIO = 2,       /* the operating system refused a read or a write */
    NX_ENOMEM = 3,    /* an allocation failed */
    NX_EUNSUPPORTED = 4, /* well-formed but not supported (e.g. a dtype) */
    NX_EINTERNAL = 5, /* an engine disagreed with itself: a bug, reported loudly */
    NX_EDEVICE = 6    /* a device backend failed: it hung, died, broke its protocol,
                         its kernel failed, or its output is not the family's */
} nx_status;

#define NX_ERR_MSG_MAX 1024

typedef struct nx_err {
    nx_status code;
    char msg[NX_ERR_MSG_MAX];
} nx_err;

/* Sets *e (if e is not NULL) and returns code, so callers can write
 * `return nx_err_set(e, NX_EINVAL, "...", ...);`. */
nx_status nx_err_set(nx_err *e, nx_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in *e with "prefix: " (for context such as a
 * file name).  Keeps the code. */
void nx_err_prefix(nx_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

const char *nx_status_name(nx_status s);

/* Input files, for every reader of the project (docs/limits.md, Files).
 * A FIFO, a device or a directory given where a file is read is refused,
 * naming the path and what it is, before any read: opened with O_NONBLOCK
 * (a FIFO with no writer does not block the open), fstat'ed, and only a
 * regular file is kept, with O_NONBLOCK cleared again.
 * nx_open_input: the descriptor (O_RDONLY | O_CLOEXEC), or -1 with *e
 *   (NX_EIO, both when it cannot be opened and when it is not a regular file).
 * nx_fopen_input: the same as a FILE * ("rb"), or NULL with *e.
 * nx_check_input: the check alone, for a path handed to a library that
 *   opens it itself (SQLite, jansson); NX_OK or the error above. */
int nx_open_input(const char *path, nx_err *e);
void *nx_fopen_input(const char *path, nx_err *e); /* FILE *: stdio.h is not needed to include this header */
nx_status nx_check_input(const char *path, nx_err *e);

#ifdef __cplusplus
}
#endif

#endif
