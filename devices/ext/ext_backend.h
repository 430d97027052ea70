/* ext_backend.h: out-of-tree class backends behind device.h
 * (docs/backends.md): a served process speaking JSON lines on its stdin
 * and stdout (ext_serve.c), and a shared library implementing
 * parity_backend.h (ext_dlopen.c), in a child process of parity or in
 * process.  A class's HARDWARE.toml names one; the campaign, gate, model,
 * lkb and bench reach it through camp_class_backend like the built-ins. */
#ifndef PARITY_EXT_BACKEND_H
#define PARITY_EXT_BACKEND_H

#include <jansson.h>

#include "device.h"

#define EXT_PROTOCOL 1
#define EXT_TIMEOUT_DEFAULT_S 120.0
#define EXT_LINE_MAX (1u << 20) /* the longest protocol line, either way */

typedef enum ext_kind { EXT_SERVE, EXT_DLOPEN } ext_kind;

/* What a HARDWARE.toml's backend key says (parity/registry). */
typedef struct ext_spec {
    ext_kind kind;
    const char *target;  /* serve: the command; dlopen: the library as written */
    const char *dir;     /* the folder of the class that names it */
    const char *cls;     /* that class */
    double timeout_s;    /* 0: EXT_TIMEOUT_DEFAULT_S */
    int in_process;      /* dlopen: load into parity itself */
} ext_spec;

/* The backend for s, made once per (kind, target, folder) and kept until
 * exit (a served process started on its first request).  Errors: out of
 * memory only; a backend that cannot start says so in available(). */
nx_status ext_open(const ext_spec *s, const dev_backend **out, nx_err *err);

/* A timeout for every request of every out-of-tree backend, overriding the
 * classes' own (the command line's --backend-timeout); <= 0 clears it. */
void ext_set_timeout(double seconds);

/* 1 when b is an out-of-tree backend that could not be started, loaded or
 * understood (its reason in why): an error, not a device that is absent. */
int ext_broken(const dev_backend *b, char *why, size_t len);

/* Ends every served process and unloads nothing (atexit does it too). */
void ext_close_all(void);

/* ---- shared by the two kinds ------------------------------------------- */

/* src into dst[len], cut to fit (messages: the cut is harmless). */
void ext_put(char *dst, size_t len, const char *src);

/* The resolved point as docs/backends.md's JSON object. */
json_t *ext_point_json(const fam_spec *s);

/* The library path that `target` names for a class folder `dir`: with a
 * slash, relative to dir; a bare name, next to the running executable when
 * present there, else the name itself (the dynamic loader's search). */
char *ext_lib_path(const char *target, const char *dir);

/* `parity backend host LIB.so`: serves a library over the protocol on
 * stdin/stdout until EOF or bye.  Returns the exit status. */
int ext_host_main(const char *lib);

/* The served backend for a command (the library host uses it too). */
nx_status ext_serve_new(const char *cmd, const char *dir, const char *label, double timeout_s, dev_backend **out,
                        nx_err *err);
nx_status ext_dlopen_new(const char *path, const char *label, dev_backend **out, nx_err *err);
void ext_serve_close(dev_backend *b);
int ext_serve_broken(const dev_backend *b, char *why, size_t len);
int ext_dlopen_broken(const dev_backend *b, char *why, size_t len);
void ext_serve_set_timeout(dev_backend *b, double s);

#endif
