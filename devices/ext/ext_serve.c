/* ext_serve.c: a served backend (docs/backends.md): `/bin/sh -c CMD` in
 * the class's folder and a process group of its own, started on the first
 * request and again after it died; requests and answers are JSON lines
 * over a socket pair on its stdin and stdout, every request under a
 * deadline; tensors travel as safetensors files in a private folder.  A
 * backend that hangs, dies, answers garbage or another id is killed with
 * its process group and the request is an error naming what it did. */
#include "ext_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "safetensors.h"


typedef struct serve_impl {
    char *cmd, *dir, *label;
    double timeout_s, override_s;
    pid_t pid;            /* 0: not running */
    int fd;               /* our end of the socket pair */
    char *rbuf;           /* bytes read past the last line */
    size_t rlen;
    long next_id;
    int hello_done;       /* the running process answered hello */
    int broken;           /* it could not be started or did not answer hello */
    char why[1024];       /* the reason of broken */
    char name[128];
    char tmpdir[512];     /* the folder of the tensor files, made on the first run */
    unsigned long seq;
    char pending[1024];   /* a failure of `supports`, said by the next run */
    dev_backend be;
} serve_impl;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double timeout_of(const serve_impl *im)
{
    return im->override_s > 0 ? im->override_s : im->timeout_s > 0 ? im->timeout_s : EXT_TIMEOUT_DEFAULT_S;
}

/* The way the process ended, in words ("exited with status 3"). */
static void ended(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, cap, "ended");
}

/* Kills the process group and reaps the process; what it did, when it had
 * already ended on its own, goes into how (else "" ). */
static void stop(serve_impl *im, double grace, char *how, size_t cap)
{
    if (how && cap)
        how[0] = 0;
    if (im->fd >= 0) {
        close(im->fd);
        im->fd = -1;
    }
    if (im->pid > 0) {
        int status = 0;
        pid_t r = 0;
        double until = now_s() + grace;
        while ((r = waitpid(im->pid, &status, WNOHANG)) == 0 && now_s() < until) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (r == im->pid) {
            if (how)
                ended(status, how, cap);
            kill(-im->pid, SIGKILL); /* what it left behind in its group */
        } else {
            kill(-im->pid, SIGKILL);
            kill(im->pid, SIGKILL);
            while (waitpid(im->pid, &status, 0) < 0 && errno == EINTR)
                ;
        }
    }
    im->pid = 0;
    im->rlen = 0;
    im->hello_done = 0;
}

static nx_status fail(serve_impl *im, nx_err *err, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nx_err_set(err, NX_EDEVICE, "%s: %s", im->label, msg);
}

static nx_status start(serve_impl *im, nx_err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(im, err, "socketpair: %s", strerror(errno));
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return fail(im, err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* its own process group keeps the terminal's signals from it: it
         * dies with parity instead, killed or crashed as parity may be */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* parity died before the line above */
            _exit(127);
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        if (chdir(im->dir) != 0) {
            fprintf(stderr, "parity: %s: cannot enter %s: %s\n", im->label, im->dir, strerror(errno));
            _exit(127);
        }
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", im->cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here: the child may not have run yet when we kill the group */
    close(sv[1]);
    im->fd = sv[0];
    im->pid = pid;
    im->rlen = 0;
    return NX_OK;
}

/* Sends all of buf before the deadline (MSG_NOSIGNAL: a dead reader is an
 * error here, not a SIGPIPE). */
static int send_all(int fd, const char *buf, size_t n, double deadline)
{
    while (n) {
        double left = deadline - now_s();
        if (left <= 0)
            return -2;
        struct pollfd p = {fd, POLLOUT, 0};
        int r = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One line into *line (malloc'd, NUL-terminated, without its \n).
 * 0: a line; -1: EOF or an error; -2: the deadline; -3: longer than
 * EXT_LINE_MAX. */
static int read_line(serve_impl *im, char **line, size_t *len, double deadline)
{
    *line = NULL;
    *len = 0;
    for (;;) {
        char *nl = im->rlen ? memchr(im->rbuf, '\n', im->rlen) : NULL;
        if (nl) {
            size_t k = (size_t)(nl - im->rbuf);
            char *l = malloc(k + 1);
            if (!l)
                return -1;
            memcpy(l, im->rbuf, k);
            l[k] = 0;
            memmove(im->rbuf, nl + 1, im->rlen - k - 1);
            im->rlen -= k + 1;
            *line = l;
            *len = k;
            return 0;
        }
        if (im->rlen >= EXT_LINE_MAX)
            return -3;
        double left = deadline - now_s();
        if (left <= 0)
            return -2;
        struct pollfd p = {im->fd, POLLIN, 0};
        int r = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        ssize_t n = read(im->fd, im->rbuf + im->rlen, EXT_LINE_MAX + 1 - im->rlen);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return -1;
        im->rlen += (size_t)n;
    }
}

/* A short, printable excerpt of what the backend wrote. */
static void excerpt(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 4 < cap && k < 80; s++)
        out[k++] = (*s >= 32 && *s < 127) ? *s : '?';
    if (*s && k + 4 < cap) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = 0;
}

static nx_status hello(serve_impl *im, nx_err *err);

/* Sends req (id and op added) and returns the answer (ok true) in *ans.
 * A protocol failure kills the backend; ok false is NX_EINVAL with the
 * backend's own error text. */
static nx_status request(serve_impl *im, const char *op, json_t *req, json_t **ans, nx_err *err)
{
    *ans = NULL;
    nx_status st;
    if (!im->pid && (st = start(im, err)))
        return st;
    if (!im->hello_done && strcmp(op, "hello") != 0 && (st = hello(im, err)))
        return st;
    long id = ++im->next_id;
    json_object_set_new(req, "id", json_integer(id));
    json_object_set_new(req, "op", json_string(op));
    char *txt = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!txt)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    size_t n = strlen(txt);
    double t = timeout_of(im), deadline = now_s() + t;
    txt[n] = '\n'; /* json_dumps' NUL replaced: the line sent is n + 1 bytes */
    int w = send_all(im->fd, txt, n + 1, deadline);
    free(txt);
    char how[128], *line = NULL;
    size_t len = 0;
    if (w == 0) {
        int r = read_line(im, &line, &len, deadline);
        if (r == 0) {
            json_error_t je;
            /* by length: a NUL byte inside the line is not the line's end */
            json_t *a = json_loadb(line, len, 0, &je);
            char ex[100];
            excerpt(line, ex, sizeof ex);
            free(line);
            json_t *jid = json_is_object(a) ? json_object_get(a, "id") : NULL;
            json_t *ok = json_is_object(a) ? json_object_get(a, "ok") : NULL;
            if (!json_is_object(a)) {
                json_decref(a);
                stop(im, 0, NULL, 0);
                return fail(im, err, "answered %s with a line that is not a JSON object ('%s'); killed", op, ex);
            }
            if (!json_is_integer(jid) || json_integer_value(jid) != id) {
                int had = json_is_integer(jid);
                json_decref(a);
                stop(im, 0, NULL, 0);
                return fail(im, err, "answered %s (request id %ld) with %s ('%s'); killed", op, id,
                            had ? "another id" : "no integer \"id\"", ex);
            }
            if (!json_is_boolean(ok)) {
                json_decref(a);
                stop(im, 0, NULL, 0);
                return fail(im, err, "answered %s without a boolean \"ok\" ('%s'); killed", op, ex);
            }
            if (!json_is_true(ok)) {
                const char *e = json_string_value(json_object_get(a, "error"));
                nx_err_set(err, NX_EINVAL, "%s: %s: %s", im->label, op, e ? e : "failed (no error text)");
                /* one line: what the backend wrote may hold control characters */
                for (char *c = err ? err->msg : NULL; c && *c; c++)
                    if ((unsigned char)*c < 32)
                        *c = ' ';
                json_decref(a);
                return NX_EINVAL;
            }
            *ans = a;
            return NX_OK;
        }
        if (r == -2) {
            stop(im, 0, NULL, 0);
            return fail(im, err, "no answer within %g s to %s (--backend-timeout); killed with its process group", t,
                        op);
        }
        if (r == -3) {
            stop(im, 0, NULL, 0);
            return fail(im, err, "answered %s with a line over %u bytes; killed", op, EXT_LINE_MAX);
        }
    } else if (w == -2) {
        stop(im, 0, NULL, 0);
        return fail(im, err, "did not take the %s request within %g s (--backend-timeout); killed", op, t);
    }
    /* EOF, or a write to a closed socket: the process is gone or going */
    stop(im, 2.0, how, sizeof how);
    return fail(im, err, "the backend %s during %s%s", *how ? how : "closed its stdout", op,
                *how ? "" : " (killed)");
}

static nx_status hello(serve_impl *im, nx_err *err)
{
    json_t *req = json_pack("{s:i}", "parity_backend", EXT_PROTOCOL), *a;
    nx_status st = request(im, "hello", req, &a, err);
    json_decref(req);
    if (st)
        return st;
    json_t *abi = json_object_get(a, "abi"), *name = json_object_get(a, "name"), *thr = json_object_get(a, "threaded");
    if (!json_is_integer(abi) || json_integer_value(abi) != EXT_PROTOCOL) {
        int had = json_is_integer(abi); /* read before the answer is freed */
        long long v = had ? (long long)json_integer_value(abi) : 0;
        json_decref(a);
        stop(im, 0, NULL, 0);
        if (had)
            return fail(im, err, "hello: speaks protocol %lld, parity speaks %d", v, EXT_PROTOCOL);
        return fail(im, err, "hello: no integer \"abi\" in its answer (parity speaks protocol %d)", EXT_PROTOCOL);
    }
    if (json_is_string(name) && *json_string_value(name))
        ext_put(im->name, sizeof im->name, json_string_value(name));
    im->be.threaded = json_is_true(thr);
    im->hello_done = 1;
    json_decref(a);
    return NX_OK;
}

/* ---- the dev_backend functions ----------------------------------------- */

static serve_impl *IM(const dev_backend *b)
{
    return (serve_impl *)b->impl;
}

static int sv_available(const dev_backend *self, char *why, size_t len)
{
    serve_impl *im = IM(self);
    nx_err e = {0};
    json_t *req = json_object(), *a = NULL;
    nx_status st = request(im, "available", req, &a, &e);
    json_decref(req);
    if (st) {
        im->broken = 1;
        ext_put(im->why, sizeof im->why, e.msg);
        if (why && len)
            ext_put(why, len, e.msg);
        return 0;
    }
    im->broken = 0;
    int yes = json_is_true(json_object_get(a, "available"));
    if (!yes && why && len) {
        const char *w = json_string_value(json_object_get(a, "why"));
        ext_put(why, len, w ? w : "the backend says it is not available (no reason given)");
    } else if (why && len)
        why[0] = 0;
    json_decref(a);
    return yes;
}

static nx_status sv_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    serve_impl *im = IM(self);
    json_t *req = json_object(), *a = NULL;
    nx_status st = request(im, "describe", req, &a, err);
    json_decref(req);
    if (st)
        return st;
    json_t *d = json_object_get(a, "device");
    json_t *o = json_is_object(d) ? json_deep_copy(d) : json_object();
    if (!json_object_get(o, "backend"))
        json_object_set_new(o, "backend", json_string(im->name[0] ? im->name : "serve"));
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    json_decref(a);
    if (!txt)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    size_t n = strlen(txt);
    if (n + 1 > len)
        st = nx_err_set(err, NX_EINVAL, "%s: describe: the description needs %zu bytes, the buffer has %zu", im->label,
                        n + 1, len);
    else
        memcpy(json, txt, n + 1);
    free(txt);
    return st;
}

static json_t *point_req(const fam_spec *spec, const char *kernel)
{
    json_t *req = json_object();
    json_object_set_new(req, "point", ext_point_json(spec));
    json_object_set_new(req, "kernel", kernel ? json_string(kernel) : spec->kernel ? json_string(spec->kernel)
                                                                                   : json_null());
    return req;
}

/* supports and nondeterministic are one request; a failure of it says
 * "supported", so that the run which follows fails with the reason: a
 * backend that cannot answer is never a skip. */
static int ask_supports(serve_impl *im, const fam_spec *spec, const char *kernel, int *nondet)
{
    json_t *req = point_req(spec, kernel), *a = NULL;
    nx_err e = {0};
    nx_status st = request(im, "supports", req, &a, &e);
    json_decref(req);
    if (st) {
        ext_put(im->pending, sizeof im->pending, e.msg);
        *nondet = 0;
        return 1;
    }
    int yes = json_is_true(json_object_get(a, "supports"));
    *nondet = json_is_true(json_object_get(a, "nondeterministic"));
    json_decref(a);
    return yes;
}

static int sv_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    int nd;
    return ask_supports(IM(self), spec, kernel, &nd);
}

static int sv_nondeterministic(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    int nd;
    return ask_supports(IM(self), spec, kernel, &nd) && nd;
}

static nx_status sv_check_params(const dev_backend *self, const fam_spec *spec, const char *kernel, nx_err *err)
{
    serve_impl *im = IM(self);
    json_t *req = point_req(spec, kernel), *a = NULL;
    nx_status st = request(im, "check_params", req, &a, err);
    json_decref(req);
    json_decref(a);
    return st;
}

static nx_status make_tmpdir(serve_impl *im, nx_err *err)
{
    if (im->tmpdir[0])
        return NX_OK;
    const char *base = getenv("TMPDIR");
    struct stat sb;
    if (!base || !*base)
        base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(im->tmpdir, sizeof im->tmpdir, "%s/parity-backend-XXXXXX", base);
    if (!mkdtemp(im->tmpdir)) {
        int e = errno;
        im->tmpdir[0] = 0;
        return nx_err_set(err, NX_EIO, "%s: cannot make a folder for the tensor files under %s: %s", im->label, base,
                          strerror(e));
    }
    st_cleanup_track(im->tmpdir); /* removed with its files if a signal ends parity */
    return NX_OK;
}

static nx_status sv_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out,
                        const dev_opts *opts, nx_err *err)
{
    serve_impl *im = IM(self);
    if (im->pending[0]) {
        nx_status st = nx_err_set(err, NX_EDEVICE, "%s", im->pending);
        im->pending[0] = 0;
        return st;
    }
    nx_status st = make_tmpdir(im, err);
    if (st)
        return st;
    char pin[600], pout[600];
    unsigned long k = ++im->seq;
    snprintf(pin, sizeof pin, "%s/in-%lu.safetensors", im->tmpdir, k);
    snprintf(pout, sizeof pout, "%s/out-%lu.safetensors", im->tmpdir, k);
    if ((st = st_write_scratch(pin, in, err))) {
        unlink(pin);
        return st;
    }
    const char *kernel = opts && opts->kernel ? opts->kernel : spec->kernel;
    json_t *req = point_req(spec, kernel), *a = NULL;
    json_object_set_new(req, "mode", json_string(opts && opts->mode == DEV_GRAPHED ? "graphed" : "eager"));
    json_object_set_new(req, "threads", json_integer(opts ? opts->threads : 0));
    json_object_set_new(req, "in", json_string(pin));
    json_object_set_new(req, "out", json_string(pout));
    st = request(im, "run", req, &a, err);
    json_decref(req);
    json_decref(a);
    unlink(pin);
    if (st) {
        unlink(pout);
        if (err)
            err->code = NX_EDEVICE; /* ok: false from run: the kernel failed */
        st = NX_EDEVICE;
        nx_err_prefix(err, "%s.%s: kernel %s", fam_spec_family(spec), fam_spec_point(spec), kernel ? kernel : "?");
        return st;
    }
    st_file got;
    st_init(&got);
    nx_err e2 = {0};
    st = st_read(pout, &got, &e2);
    unlink(pout);
    if (st)
        return nx_err_set(err, NX_EDEVICE, "%s: %s.%s: kernel %s answered ok, but its output file is not usable: %s",
                          im->label, fam_spec_family(spec), fam_spec_point(spec), kernel ? kernel : "?", e2.msg);
    if (got.ntensors == 0)
        st = nx_err_set(err, NX_EDEVICE, "%s: %s.%s: kernel %s: its output file holds no tensor (expected y)", im->label,
                        fam_spec_family(spec), fam_spec_point(spec), kernel ? kernel : "?");
    for (size_t i = 0; !st && i < got.ntensors; i++) {
        const st_tensor *t = &got.tensors[i];
        st_tensor *o;
        if (in && st_find(in, t->name))
            continue; /* an input echoed back is not an output */
        if (!(st = st_add_tensor(out, t->name, t->dtype, t->ndim, t->shape, &o, err)) && t->nbytes)
            memcpy(o->data, t->data, t->nbytes);
    }
    st_free(&got);
    return st;
}

nx_status ext_serve_new(const char *cmd, const char *dir, const char *label, double timeout_s, dev_backend **out,
                        nx_err *err)
{
    *out = NULL;
    serve_impl *im = calloc(1, sizeof *im);
    if (!im || !(im->cmd = strdup(cmd)) || !(im->dir = strdup(dir)) || !(im->label = strdup(label)) ||
        !(im->rbuf = malloc(EXT_LINE_MAX + 1))) {
        if (im) {
            free(im->cmd);
            free(im->dir);
            free(im->label);
            free(im);
        }
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    im->fd = -1;
    im->timeout_s = timeout_s;
    im->be = (dev_backend){"serve", sv_available, sv_describe, sv_supports, sv_run, sv_check_params, 0,
                           sv_nondeterministic, im};
    ext_put(im->name, sizeof im->name, strncmp(cmd, "exec ", 5) == 0 && strstr(cmd, " backend host ") ? "dlopen" : "serve");
    im->be.name = im->name; /* the backend's own name once it said hello */
    *out = &im->be;
    return NX_OK;
}

void ext_serve_set_timeout(dev_backend *b, double s)
{
    IM(b)->override_s = s;
}

int ext_serve_broken(const dev_backend *b, char *why, size_t len)
{
    serve_impl *im = IM(b);
    if (im->broken && why && len)
        ext_put(why, len, im->why);
    return im->broken;
}

void ext_serve_close(dev_backend *b)
{
    serve_impl *im = IM(b);
    if (im->pid > 0 && im->fd >= 0 && im->hello_done) {
        const char bye[] = "{\"op\":\"bye\"}\n";
        send_all(im->fd, bye, sizeof bye - 1, now_s() + 0.5);
        shutdown(im->fd, SHUT_WR);
    }
    if (im->pid > 0) {
        double g = timeout_of(im);
        stop(im, g < 5 ? g : 5, NULL, 0);
    }
    if (im->tmpdir[0]) {
        st_cleanup_untrack(im->tmpdir);
        rmdir(im->tmpdir); /* each run removed its files */
        im->tmpdir[0] = 0;
    }
}
