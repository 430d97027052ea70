/* cli.c: what the subcommands of the `parity` CLI share (cli.h): option
 * scanning, error printing, exit statuses of an nx_err. */
#define _DEFAULT_SOURCE 1 /* realpath */
#include "cli.h"

#include "device.h"
#include "fit.h"
#include "lkb.h"
#include "nx_philox.h"
#include "refimpl.h"
#include "nx_limits.h"
#include "registry.h"
#include "safetensors.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_flag(char **argv, int i, const char *name)
{
    return strcmp(argv[i], name) == 0;
}

int cli_opt(int argc, char **argv, int *i, const char *name, const char **val, int *bad)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "parity: option %s needs a value\n", name);
        *bad = 1;
        return 1;
    }
    *val = argv[++*i];
    return 1;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "parity %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(const char *cmd, const nx_err *e)
{
    cli_error(cmd, "%s", e->msg);
    switch (e->code) {
    case NX_EINVAL: case NX_EIO: case NX_EUNSUPPORTED: return EXIT_INPUT;
    default: return EXIT_INTERNAL;
    }
}

long cli_long(const char *cmd, const char *opt, const char *val, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not an integer in [%ld, %ld]", opt, val, lo, hi);
        return -1;
    }
    return v;
}

/* What names one file: an existing file by device and inode (so another
 * path, a symbolic link to it or a hard link is the same file); a file yet
 * to be created by its directory's device and inode and its name. */
typedef struct file_id {
    int known, exists;
    dev_t dev;
    ino_t ino;
    const char *name;
} file_id;

static file_id identify(const char *path)
{
    file_id id = {0};
    struct stat st;
    if (stat(path, &st) == 0) {
        id.known = id.exists = 1;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        return id;
    }
    const char *slash = strrchr(path, '/');
    id.name = slash ? slash + 1 : path;
    char *dir = slash ? (slash == path ? strdup("/") : strndup(path, (size_t)(slash - path))) : strdup(".");
    if (dir && stat(dir, &st) == 0) {
        id.known = 1;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
    }
    free(dir);
    return id;
}

static int same_file(const file_id *a, const file_id *b)
{
    if (!a->known || !b->known || a->exists != b->exists || a->dev != b->dev || a->ino != b->ino)
        return 0;
    return a->exists || strcmp(a->name, b->name) == 0;
}

int cli_dir_exists(const char *path)
{
    return identify(path).known;
}

/* Whether o is one of the side files SQLite keeps beside y (y-wal, y-shm,
 * y-journal): an output there is lost or, worse, read as the ledger's
 * journal.  *suffix the one it is. */
static int sqlite_side(const file_id *o, const char *y, const char **suffix)
{
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    size_t yl = strlen(y);
    for (size_t k = 0; k < sizeof sides / sizeof *sides; k++) {
        char *p = malloc(yl + 9);
        if (!p)
            return 0;
        memcpy(p, y, yl);
        strcpy(p + yl, sides[k]);
        file_id f = identify(p);
        int same = same_file(o, &f);
        free(p);
        if (same) {
            *suffix = sides[k];
            return 1;
        }
    }
    return 0;
}

int cli_check_outputs(const char *cmd, const cli_file *outs, size_t nouts, const cli_file *ins, size_t nins)
{
    for (size_t i = 0; i < nouts; i++) {
        if (!outs[i].path)
            continue;
        nx_err err = {0};
        if (st_output_check(outs[i].path, &err)) {
            cli_error(cmd, "%s %s", outs[i].opt, err.msg);
            return EXIT_INPUT;
        }
        file_id o = identify(outs[i].path);
        if (!o.known) { /* said now, not after the work that would fill it */
            cli_error(cmd, "%s %s: its directory does not exist (nothing written)", outs[i].opt, outs[i].path);
            return EXIT_INPUT;
        }
        for (size_t j = 0; j < nins; j++) {
            if (!ins[j].path)
                continue;
            file_id in = identify(ins[j].path);
            const char *side;
            if (in.exists && same_file(&o, &in)) {
                cli_error(cmd, "%s %s is the same file as %s %s: it would overwrite its own input (nothing written)",
                          outs[i].opt, outs[i].path, ins[j].opt, ins[j].path);
                return EXIT_INPUT;
            }
            if (sqlite_side(&o, ins[j].path, &side)) {
                cli_error(cmd, "%s %s is the file SQLite keeps beside %s %s (its '%s' file): it would be lost or read "
                          "as the ledger's own (nothing written)", outs[i].opt, outs[i].path, ins[j].opt, ins[j].path,
                          side);
                return EXIT_INPUT;
            }
        }
        for (size_t j = 0; j < nouts; j++) {
            const char *side;
            if (j != i && outs[j].path && sqlite_side(&o, outs[j].path, &side)) {
                cli_error(cmd, "%s %s is the file SQLite keeps beside %s %s (its '%s' file): it would be lost or read "
                          "as the ledger's own (nothing written)", outs[i].opt, outs[i].path, outs[j].opt,
                          outs[j].path, side);
                return EXIT_INPUT;
            }
        }
        for (size_t j = 0; j < i; j++) {
            if (!outs[j].path)
                continue;
            file_id p = identify(outs[j].path);
            if (same_file(&o, &p)) {
                cli_error(cmd, "%s %s and %s %s are the same file: one would replace the other (nothing written)",
                          outs[j].opt, outs[j].path, outs[i].opt, outs[i].path);
                return EXIT_INPUT;
            }
        }
    }
    return 0;
}

/* The global options --max-bytes, --max-terms, --max-ops and --max-work
 * (docs/limits.md),
 * taken out of argv wherever they stand, parsed once and handed to the
 * readers through nx_limits_set. */
int cli_limits_args(int *argc, char **argv)
{
    static const char *const names[] = {"--max-bytes", "--max-terms", "--max-ops", "--max-work"};
    nx_limits l = *nx_limits_get();
    uint64_t *slot[] = {&l.max_bytes, &l.max_terms, &l.max_ops, &l.max_work};
    int w = 1;
    for (int i = 1; i < *argc; i++) {
        int k = -1;
        const char *val = NULL;
        for (int j = 0; j < 4 && k < 0; j++) {
            size_t n = strlen(names[j]);
            if (strncmp(argv[i], names[j], n) == 0 && (argv[i][n] == 0 || argv[i][n] == '='))
                k = j, val = argv[i][n] == '=' ? argv[i] + n + 1 : NULL;
        }
        if (k < 0) {
            argv[w++] = argv[i];
            continue;
        }
        if (!val) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "parity: option %s needs a value\n", names[k]);
                return EXIT_INPUT;
            }
            val = argv[++i];
        }
        if (nx_limits_parse_size(val, slot[k]) != 0) {
            fprintf(stderr, "parity: %s: '%s' is not a size (a positive integer, optionally with K, M, G or T: "
                            "powers of 1024; at most 2^62)\n", names[k], val);
            return EXIT_INPUT;
        }
    }
    argv[w] = NULL;
    *argc = w;
    nx_limits_set(&l);
    return 0;
}

int cli_check_outside(const char *cmd, const cli_file *outs, size_t nouts, const char *opt, const char *dir)
{
    char *d = realpath(dir, NULL);
    if (!d)
        return 0; /* a registry that does not resolve is refused by its loader */
    size_t dl = strlen(d);
    int rc = 0;
    for (size_t i = 0; i < nouts && !rc; i++) {
        if (!outs[i].path)
            continue;
        /* the output's directory, resolved, with its own name after it */
        char *copy = strdup(outs[i].path);
        if (!copy) {
            rc = EXIT_INTERNAL;
            break;
        }
        char *slash = strrchr(copy, '/');
        const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
        if (slash && slash != copy)
            *slash = 0;
        char *p = realpath(parent, NULL);
        if (p) {
            size_t pl = strlen(p);
            int inside = pl >= dl && strncmp(p, d, dl) == 0 && (p[dl] == 0 || p[dl] == '/' || dl == 1);
            if (inside) {
                cli_error(cmd, "%s %s is inside %s %s, which this command reads (nothing written)", outs[i].opt,
                          outs[i].path, opt, dir);
                rc = EXIT_INPUT;
            }
            free(p);
        }
        free(copy);
    }
    free(d);
    return rc;
}

int cli_lock_dir_err(const char *opt, const char *dir, nx_err *err)
{
    size_t len = strlen(dir) + sizeof "/" CLI_LOCK_NAME;
    char *path = malloc(len);
    if (!path) {
        nx_err_set(err, NX_ENOMEM, "out of memory");
        return -EXIT_INTERNAL;
    }
    snprintf(path, len, "%s/" CLI_LOCK_NAME, dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        nx_err_set(err, NX_EIO, "%s: cannot open the lock file %s: %s", opt, path, strerror(errno));
        free(path);
        return -EXIT_INPUT;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t r = e == EWOULDBLOCK ? pread(fd, pid, sizeof pid - 1, 0) : -1;
        pid[r > 0 ? r : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        if (e == EWOULDBLOCK)
            nx_err_set(err, NX_EINVAL,
                       "%s %s is being written by another run (pid %s, holding %s); nothing written: wait for it "
                       "or give another folder",
                       opt, dir, *pid ? pid : "unknown", path);
        else
            nx_err_set(err, NX_EIO, "%s: cannot lock %s: %s", opt, path, strerror(e));
        close(fd);
        free(path);
        return -EXIT_INPUT;
    }
    char pid[32];
    int l = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)l, 0) != l) {
        nx_err_set(err, NX_EIO, "%s: cannot write the lock file %s: %s", opt, path, strerror(errno));
        close(fd);
        free(path);
        return -EXIT_INPUT;
    }
    free(path);
    return fd;
}

int cli_lock_dir(const char *cmd, const char *opt, const char *dir)
{
    nx_err err = {0};
    int fd = cli_lock_dir_err(opt, dir, &err);
    if (fd < 0)
        cli_error(cmd, "%s", err.msg);
    return fd;
}

int cli_run_opts(const char *cmd, const char *repeats, const char *threads, const char *seed, const char *dist,
                 const char *engine, cli_run_vals o)
{
    long v;
    if (repeats) {
        if ((v = cli_long(cmd, "--repeats", repeats, 2, 1000)) < 0)
            return EXIT_INPUT;
        *o.repeats = (int)v;
    }
    if (threads) {
        if ((v = cli_long(cmd, "--threads", threads, 1, 4096)) < 0)
            return EXIT_INPUT;
        *o.threads = (int)v;
    }
    if (seed) {
        char *end;
        errno = 0;
        *o.seed = strtoull(seed, &end, 0);
        /* strtoull would take "-1" as 2^64 - 1, and skip leading blanks */
        if (errno || end == seed || *end || !isdigit((unsigned char)seed[0])) {
            cli_error(cmd, "--seed: '%s' is not an unsigned integer", seed);
            return EXIT_INPUT;
        }
    }
    if ((*o.dist = nx_dist_from_name(dist)) < 0) {
        cli_error(cmd, "--dist: unknown distribution '%s' (expected normal, uniform, int, adversarial)", dist);
        return EXIT_INPUT;
    }
    if (engine) {
        int e = nx_engine_from_name(engine, 0);
        if (e < 0 || !ref_engine_available((nx_engine_kind)e)) {
            cli_error(cmd, "--engine: '%s' is not an engine built into this binary", engine);
            return EXIT_INPUT;
        }
        *o.engine = e;
    }
    return 0;
}

/* The whole of a regular file, NUL-terminated (malloc'd), or NULL. */
#define CLI_SPACE_FILE_MAX ((uint64_t)1 << 20)

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0, r;
    char *buf = malloc(cap);
    while (buf && (r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (buf && bad) {
        free(buf);
        return NULL;
    }
    if (buf)
        buf[len] = 0;
    return buf;
}

nx_status cli_load_space(const char *spec, const struct fit_ctx *ctx, struct fit_space *space, nx_err *err)
{
    struct stat sb;
    const char *name = "--space";
    char *text = NULL;
    if (stat(spec, &sb) == 0 && !S_ISREG(sb.st_mode))
        return nx_err_set(err, NX_EINVAL, "--space %s: not a regular file (a FIFO, a directory or a device)", spec);
    if (stat(spec, &sb) == 0 && (uint64_t)sb.st_size > CLI_SPACE_FILE_MAX)
        return nx_err_set(err, NX_EINVAL, "--space %s: %llu bytes: a space file may hold at most 1 MiB "
                          "(docs/limits.md)", spec, (unsigned long long)sb.st_size);
    if (stat(spec, &sb) == 0 && S_ISREG(sb.st_mode)) {
        if (!(text = read_text(spec)))
            return nx_err_set(err, NX_EIO, "--space: cannot read %s", spec);
        name = spec;
    }
    nx_status st = fit_space_parse(space, ctx, text ? text : spec, name, err);
    free(text);
    if (!st && !space->count)
        st = nx_err_set(err, NX_EINVAL, "--space: no candidates");
    return st;
}

int cli_refuse_lint(const char *cmd, const char *opt, const char *dir, const reg_registry *r, int allow, char *said,
                    size_t len)
{
    if (said && len)
        said[0] = 0;
    char *a = NULL, *b = NULL;
    size_t errors = reg_lint(r, &a) + lkb_lint(r, &b);
    if (!errors) {
        free(a);
        free(b);
        return 0;
    }
    /* the first finding that is an error, not a warning */
    char first[1024] = "";
    const char *texts[2] = {a, b};
    for (int k = 0; k < 2 && !*first; k++)
        for (const char *p = texts[k]; p && *p && !*first;) {
            const char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            const char *m = strstr(p, ": error: ");
            if (m && (size_t)(m - p) < l)
                snprintf(first, sizeof first, "%.*s", (int)l, p);
            p = e ? e + 1 : p + l;
        }
    /* a finding without ": error: " (a file that could not be read):
     * its first line, rather than nothing */
    for (int k = 0; k < 2 && !*first; k++)
        for (const char *p = texts[k]; p && *p && !*first;) {
            const char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l && !strstr(p, ": warning: "))
                snprintf(first, sizeof first, "%.*s", (int)l, p);
            p = e ? e + 1 : p + l;
        }
    free(a);
    free(b);
    char text[1400];
    snprintf(text, sizeof text, "%s%s%s fails lint: %zu error%s; the first: %s", opt ? opt : "", opt ? " " : "", dir,
             errors, errors == 1 ? "" : "s", *first ? first : "(see `parity registry lint`)");
    if (!allow) {
        cli_error(cmd, "%s (run `parity registry lint %s`; --allow-lint-errors runs anyway)", text, dir);
        return EXIT_INPUT;
    }
    fprintf(stderr, "parity %s: warning: %s; running anyway (--allow-lint-errors)\n", cmd, text);
    if (said && len)
        snprintf(said, len, "%s; run anyway (--allow-lint-errors)", text);
    return 0;
}
