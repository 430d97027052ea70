/* bench.c: microbenchmarks of a family point on a class backend (`parity
 * bench`, docs/lkb.md): warm-up, repeats alternating with the baseline's,
 * median and spread, energy from the counters the machine has, and the
 * record written to the registry's MEASUREMENTS.toml and the ledger. */
#include "bench.h"
#include "famdesc.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "campaign.h"
#include "ledger.h"
#include "nx_sbuf.h"
#include "refimpl.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- energy counters ------------------------------------------------------ */

/* Linux powercap (RAPL): the package domains intel-rapl:N (N without a
 * sub-domain), summed; microjoules, wrapping at max_energy_range_uj. */
typedef struct rapl {
    int n;
    char path[8][300];
    double range[8];
} rapl;

static int read_ull(const char *path, unsigned long long *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%llu", v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

/* PARITY_POWERCAP names another directory laid out as /sys/class/powercap
 * (the tests' stand-in for a machine with readable RAPL counters). */
static const char *powercap_root(void)
{
    const char *e = getenv("PARITY_POWERCAP");
    return e && *e ? e : "/sys/class/powercap";
}

static void rapl_open(rapl *r)
{
    memset(r, 0, sizeof *r);
    const char *root = powercap_root();
    DIR *d = opendir(root);
    struct dirent *de;
    while (d && (de = readdir(d)) && r->n < 8) {
        unsigned a, b;
        char tail;
        if (sscanf(de->d_name, "intel-rapl:%u%c", &a, &tail) != 1 || sscanf(de->d_name, "intel-rapl:%u:%u", &a, &b) == 2)
            continue;
        unsigned long long v, range = 0;
        char p[300];
        if (snprintf(p, sizeof p, "%s/%s/energy_uj", root, de->d_name) >= (int)sizeof p)
            continue;
        if (read_ull(p, &v) != 0)
            continue; /* not readable (root only on most systems) */
        char q[320];
        snprintf(q, sizeof q, "%s/%s/max_energy_range_uj", root, de->d_name);
        read_ull(q, &range);
        snprintf(r->path[r->n], sizeof r->path[0], "%s", p);
        r->range[r->n++] = (double)range;
    }
    if (d)
        closedir(d);
}

static int rapl_read(const rapl *r, double *uj)
{
    double s = 0;
    for (int i = 0; i < r->n; i++) {
        unsigned long long v;
        if (read_ull(r->path[i], &v) != 0)
            return -1;
        s += (double)v;
        uj[i] = (double)v;
    }
    return 0;
}

/* NVML through dlopen (no build dependency): total energy of device 0 in mJ. */
typedef struct nvml {
    void *lib;
    void *dev;
    int (*energy)(void *, unsigned long long *);
} nvml;

static int nvml_open(nvml *n)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return -1;
    int (*init)(void) = (int (*)(void))dlsym(n->lib, "nvmlInit_v2");
    int (*get)(unsigned, void **) = (int (*)(unsigned, void **))dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    n->energy = (int (*)(void *, unsigned long long *))dlsym(n->lib, "nvmlDeviceGetTotalEnergyConsumption");
    unsigned long long v;
    if (!init || !get || !n->energy || init() != 0 || get(0, &n->dev) != 0 || n->energy(n->dev, &v) != 0) {
        dlclose(n->lib);
        memset(n, 0, sizeof *n);
        return -1;
    }
    return 0;
}

typedef struct meter {
    int kind; /* 0 none, 1 rapl, 2 nvml */
    rapl r;
    nvml n;
    char source[200];
} meter;

static void meter_open(meter *m, const char *backend)
{
    memset(m, 0, sizeof *m);
    if (strcmp(backend, "cuda") == 0) {
        if (nvml_open(&m->n) == 0) {
            m->kind = 2;
            snprintf(m->source, sizeof m->source, "nvml: device 0 total energy");
            return;
        }
    } else {
        rapl_open(&m->r);
        if (m->r.n) {
            m->kind = 1;
            snprintf(m->source, sizeof m->source, "rapl: %d package domain(s) of %s", m->r.n, powercap_root());
            return;
        }
    }
    snprintf(m->source, sizeof m->source, "not measured: no energy counter readable here");
}

/* Joules now (arbitrary origin); raw values for wraparound in raw. */
static int meter_read(meter *m, double *raw)
{
    if (m->kind == 1)
        return rapl_read(&m->r, raw);
    if (m->kind == 2) {
        unsigned long long mj;
        if (m->n.energy(m->n.dev, &mj) != 0)
            return -1;
        raw[0] = (double)mj * 1e-3;
        return 0;
    }
    return -1;
}

static double meter_delta(const meter *m, const double *a, const double *b)
{
    if (m->kind == 2)
        return b[0] - a[0];
    double j = 0;
    for (int i = 0; i < m->r.n; i++) {
        double d = b[i] - a[i];
        if (d < 0)
            d += m->r.range[i];
        j += d * 1e-6;
    }
    return j;
}

/* ---- timing --------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The preset's shape of the family with its batch dimension set to rows. */
static nx_status bench_shape(const char *preset, const char *family, long long rows, char *out, size_t len, nx_err *err)
{
    const char *s = fam_preset_shape(preset, family), *dim = fam_batch_dim(family);
    if (!s || !dim)
        return nx_err_set(err, NX_EINVAL, "--shapes %s: no shape of family %s in the preset", preset, family);
    nx_sbuf b = {0};
    const char *p = s;
    int first = 1;
    while (*p) {
        const char *comma = strchr(p, ','), *eq = strchr(p, '=');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        size_t kn = eq && eq < p + n ? (size_t)(eq - p) : n;
        if (kn == strlen(dim) && strncmp(p, dim, kn) == 0)
            nx_sbuf_printf(&b, "%s%s=%lld", first ? "" : ",", dim, rows);
        else
            nx_sbuf_printf(&b, "%s%.*s", first ? "" : ",", (int)n, p);
        first = 0;
        p += n + (comma != NULL);
    }
    char *t = nx_sbuf_take(&b);
    if (!t)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    snprintf(out, len, "%s", t);
    free(t);
    return NX_OK;
}

nx_status lkb_bench(const reg_registry *r, const char *cls, const char *point, long long rows, const lkb_bench_opts *o,
                    lkb_record *rec, nx_err *err)
{
    memset(rec, 0, sizeof *rec);
    char family[128], shape[512];
    snprintf(family, sizeof family, "%s", point);
    family[strcspn(family, ".")] = 0;
    nx_status st;
    if (o->shape)
        snprintf(shape, sizeof shape, "%s", o->shape);
    else if ((st = bench_shape(o->preset ? o->preset : "8b-layer", family, rows, shape, sizeof shape, err)))
        return st;
    fam_spec spec = {0}, bspec = {0};
    st_file in, out;
    st_init(&in);
    st_init(&out);
    double *t = NULL, *bt = NULL, *e = NULL, *be = NULL;
    if ((st = reg_resolve(r, cls, point, shape, &spec, err)))
        goto done;
    const dev_backend *be_ = o->backend;
    if (!spec.kernel || !dev_supports(be_, &spec, spec.kernel)) {
        st = nx_err_set(err, NX_EINVAL, "%s at class %s: the %s backend has no kernel '%s'", point, cls, be_->name,
                        spec.kernel ? spec.kernel : "(none named)");
        goto done;
    }
    /* the baseline: another class's run of the point, else the legacy kernel */
    char legacy[160] = "", baseline[256] = "";
    const fam_spec *bsp = NULL;
    const char *bkernel = NULL;
    if (o->baseline_class) {
        if ((st = reg_resolve(r, o->baseline_class, point, shape, &bspec, err)))
            goto done;
        if (!bspec.kernel || !dev_supports(be_, &bspec, bspec.kernel)) {
            st = nx_err_set(err, NX_EINVAL, "--baseline-class %s: the %s backend has no kernel of %s there",
                            o->baseline_class, be_->name, point);
            goto done;
        }
        bsp = &bspec;
        bkernel = bspec.kernel;
        snprintf(baseline, sizeof baseline, "class %s (kernel %s)", o->baseline_class, bspec.kernel);
    } else {
        const char *leg = fam_param_get(&spec, "legacy_kernel");
        if (leg)
            snprintf(legacy, sizeof legacy, "%s", leg);
        else
            snprintf(legacy, sizeof legacy, "%s_legacy", spec.kernel);
        if (dev_supports(be_, &spec, legacy)) {
            bsp = &spec;
            bkernel = legacy;
            snprintf(baseline, sizeof baseline, "legacy kernel %s", legacy);
        }
    }
    ref_gen_opts go = {o->seed, NX_DIST_NORMAL, 0, o->threads};
    if ((st = ref_generate(&spec, &go, &in, err)))
        goto done;
    int n = o->repeats;
    t = calloc((size_t)n, sizeof *t), bt = calloc((size_t)n, sizeof *bt);
    e = calloc((size_t)n, sizeof *e), be = calloc((size_t)n, sizeof *be);
    if (!t || !bt || !e || !be) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    meter m;
    meter_open(&m, be_->name);
    dev_opts dk = {DEV_GRAPHED, o->threads, spec.kernel}, db = {DEV_GRAPHED, o->threads, bkernel};
    for (int w = 0; w < o->warmup && !st; w++) {
        st_free(&out);
        st = dev_run(be_, &spec, &in, &out, &dk, err);
        if (!st && bsp) {
            st_free(&out);
            st = dev_run(be_, bsp, &in, &out, &db, err);
        }
    }
    int energy_ok = m.kind != 0;
    for (int i = 0; i < n && !st; i++) {
        /* the kernel and its baseline alternate, so that a drift of the
         * machine (clock, load) falls on both */
        for (int side = 0; side < (bsp ? 2 : 1) && !st; side++) {
            double r0[8], r1[8];
            st_free(&out);
            int e0 = energy_ok ? meter_read(&m, r0) : -1;
            double t0 = now_s();
            st = dev_run(be_, side ? bsp : &spec, &in, &out, side ? &db : &dk, err);
            double t1 = now_s();
            int e1 = energy_ok ? meter_read(&m, r1) : -1;
            if (e0 || e1)
                energy_ok = 0;
            (side ? bt : t)[i] = t1 - t0;
            if (energy_ok)
                (side ? be : e)[i] = meter_delta(&m, r0, r1);
        }
    }
    if (m.kind == 2)
        dlclose(m.n.lib);
    if (st)
        goto done;
    int64_t now;
    ledger_now(&now, NULL);
    char utc[32], host[256] = "", id[256];
    ledger_format_utc(now, utc, sizeof utc);
    gethostname(host, sizeof host - 1);
    char compact[32];
    snprintf(compact, sizeof compact, "%.4s%.2s%.2sT%.2s%.2s%.2sZ", utc, utc + 5, utc + 8, utc + 11, utc + 14,
             utc + 17);
    snprintf(id, sizeof id, "%s.%s.r%lld.%s", cls, point, rows, compact);
    rec->id = strdup(id);
    rec->class_name = strdup(cls);
    rec->point = strdup(point);
    rec->shape = strdup(shape);
    rec->backend = strdup(be_->name);
    rec->kernel = strdup(spec.kernel);
    rec->utc = strdup(utc);
    rec->host = strdup(host);
    rec->utc_s = now;
    rec->rows = rows;
    rec->warmup = o->warmup;
    rec->repeats = n;
    double lo = t[0], hi = t[0];
    for (int i = 1; i < n; i++)
        lo = t[i] < lo ? t[i] : lo, hi = t[i] > hi ? t[i] : hi;
    rec->median_s = median(t, n);
    rec->min_s = lo, rec->max_s = hi, rec->band_s = hi - lo;
    if (bsp) {
        rec->has_baseline = 1;
        rec->baseline = strdup(baseline);
        double blo = bt[0], bhi = bt[0];
        for (int i = 1; i < n; i++)
            blo = bt[i] < blo ? bt[i] : blo, bhi = bt[i] > bhi ? bt[i] : bhi;
        rec->b_median_s = median(bt, n);
        rec->b_min_s = blo, rec->b_max_s = bhi;
    }
    rec->energy_source = strdup(energy_ok ? m.source : "not measured: no energy counter readable here");
    if (energy_ok) {
        rec->has_energy = 1;
        rec->e_j = median(e, n), rec->e_min_j = e[0], rec->e_max_j = e[n - 1]; /* sorted by median() */
        if (bsp) {
            rec->has_b_energy = 1;
            rec->be_j = median(be, n), rec->be_min_j = be[0], rec->be_max_j = be[n - 1];
        }
    }
    if (!rec->id || !rec->class_name || !rec->point || !rec->shape || !rec->backend || !rec->kernel || !rec->utc ||
        !rec->host || !rec->energy_source || (bsp && !rec->baseline))
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    free(t), free(bt), free(e), free(be);
    st_free(&in);
    st_free(&out);
    fam_spec_free(&spec);
    fam_spec_free(&bspec);
    return st;
}

/* Read, append and rename, under an exclusive lock on a file beside
 * MEASUREMENTS.toml (the file itself is replaced by the rename, so it
 * cannot carry the lock): concurrent `parity bench` runs on one registry
 * queue, and none loses another's records. */
static nx_status append_locked(const char *kernels_dir, const char *cls, const char *path, lkb_record *recs, size_t n,
                               nx_err *err);

nx_status lkb_records_append(const char *kernels_dir, const char *cls, lkb_record *recs, size_t n, nx_err *err)
{
    char path[4096], lock[4200];
    snprintf(path, sizeof path, "%s/%s/MEASUREMENTS.toml", kernels_dir, cls);
    snprintf(lock, sizeof lock, "%s/%s/.MEASUREMENTS.toml.lock", kernels_dir, cls);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0)
        return nx_err_set(err, NX_EIO, "%s: cannot open the lock of MEASUREMENTS.toml: %s", lock, strerror(errno));
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return nx_err_set(err, NX_EIO, "%s: cannot lock: %s", lock, strerror(e));
        }
    nx_status st = append_locked(kernels_dir, cls, path, recs, n, err);
    close(fd); /* the lock ends with the descriptor */
    return st;
}

static nx_status append_locked(const char *kernels_dir, const char *cls, const char *path, lkb_record *recs, size_t n,
                               nx_err *err)
{
    /* the ids must be new: a second record in the same second gets a suffix */
    lkb_records old = {0};
    nx_status st = lkb_records_load(kernels_dir, cls, &old, err);
    if (st) {
        lkb_records_free(&old); /* the whole records read before the bad one */
        nx_err_prefix(err, "reading the records before adding to them");
        return st;
    }
    nx_sbuf b = {0};
    struct stat sb;
    char *prev = NULL;
    if (stat(path, &sb) == 0) {
        FILE *f = nx_fopen_input(path, err); /* a FIFO: refused, not waited on */
        if (!f) {
            lkb_records_free(&old);
            return err ? err->code : NX_EIO;
        }
        char buf[4096];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, f)) > 0)
            nx_sbuf_put(&b, buf, k);
        fclose(f);
    } else {
        nx_sbuf_printf(&b, "# MEASUREMENTS.toml: the microbenchmark records of class %s, written by `parity bench`\n"
                       "# (docs/lkb.md).  Evidence rows of the manifests name these ids.\n", cls);
    }
    for (size_t i = 0; i < n; i++) {
        for (int suffix = 2;; suffix++) {
            int clash = 0;
            for (size_t k = 0; k < old.n && !clash; k++)
                clash = strcmp(old.r[k].id, recs[i].id) == 0;
            for (size_t k = 0; k < i && !clash; k++)
                clash = strcmp(recs[k].id, recs[i].id) == 0;
            if (!clash)
                break;
            char *base = prev ? prev : strdup(recs[i].id);
            prev = base;
            nx_sbuf s = {0};
            nx_sbuf_printf(&s, "%s-%d", base, suffix);
            free(recs[i].id);
            recs[i].id = nx_sbuf_take(&s);
        }
        free(prev);
        prev = NULL;
        char *t = lkb_record_toml(&recs[i]);
        nx_sbuf_printf(&b, "%s", t ? t : "");
        free(t);
    }
    lkb_records_free(&old);
    char *text = nx_sbuf_take(&b);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    st = st_write_text_atomic(path, text, err);
    free(text);
    return st;
}

static void bind_opt(sqlite3_stmt *s, int i, int have, double v)
{
    if (have)
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

nx_status lkb_record_ledger(const char *path, const lkb_record *r, const char *registry_commit, nx_err *err)
{
    sqlite3 *db;
    nx_status st = ledger_open_db(path, 1, &db, err);
    if (st)
        return st;
    sqlite3_stmt *s = NULL;
    const char *sql =
        "INSERT INTO measurement(id, class, point, rows, shape, backend, kernel, started_utc, started_s, warmup,"
        " repeats, median_s, min_s, max_s, noise_band_s, baseline, baseline_median_s, baseline_min_s, baseline_max_s,"
        " energy_j, energy_min_j, energy_max_j, baseline_energy_j, baseline_energy_min_j, baseline_energy_max_j,"
        " energy_source, host, registry_commit) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = nx_err_set(err, NX_EIO, "ledger %s: recording the measurement: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return st;
    }
    int i = 1;
    sqlite3_bind_text(s, i++, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->class_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->point, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, r->rows);
    sqlite3_bind_text(s, i++, r->shape, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->kernel, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->utc, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, r->utc_s);
    sqlite3_bind_int(s, i++, r->warmup);
    sqlite3_bind_int(s, i++, r->repeats);
    sqlite3_bind_double(s, i++, r->median_s);
    sqlite3_bind_double(s, i++, r->min_s);
    sqlite3_bind_double(s, i++, r->max_s);
    sqlite3_bind_double(s, i++, r->band_s);
    if (r->baseline)
        sqlite3_bind_text(s, i++, r->baseline, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i++);
    bind_opt(s, i++, r->has_baseline, r->b_median_s);
    bind_opt(s, i++, r->has_baseline, r->b_min_s);
    bind_opt(s, i++, r->has_baseline, r->b_max_s);
    bind_opt(s, i++, r->has_energy, r->e_j);
    bind_opt(s, i++, r->has_energy, r->e_min_j);
    bind_opt(s, i++, r->has_energy, r->e_max_j);
    bind_opt(s, i++, r->has_b_energy, r->be_j);
    bind_opt(s, i++, r->has_b_energy, r->be_min_j);
    bind_opt(s, i++, r->has_b_energy, r->be_max_j);
    sqlite3_bind_text(s, i++, r->energy_source, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, i++, r->host, -1, SQLITE_STATIC);
    if (registry_commit && *registry_commit)
        sqlite3_bind_text(s, i++, registry_commit, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i++);
    if (sqlite3_step(s) != SQLITE_DONE)
        st = nx_err_set(err, NX_EIO, "ledger %s: recording the measurement: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return st;
}
