/* ledger.c: the campaign ledger (ledger.h, docs/ledger.md): opening and
 * migrating the SQLite file, recording a campaign's run and points, the
 * clock and the git state of the registry and of the kernels. */
#include "ledger.h"
#include "ledger_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nx_sbuf.h"
#include "nx_sha256.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "unknown"
#endif

/* --- schema ----------------------------------------------------------------------- */

/* migrations[v] brings a ledger from user_version v to v + 1.  Never edit
 * a migration that has shipped: append one. */
static const char *const migrations[LEDGER_SCHEMA_VERSION] = {
    /* 0 -> 1: runs, points, checks, traces */
    "CREATE TABLE schema_migration (version INTEGER PRIMARY KEY, applied_utc TEXT NOT NULL);"
    "CREATE TABLE run ("
    "  id INTEGER PRIMARY KEY,"
    "  uuid TEXT NOT NULL UNIQUE,"
    "  started_utc TEXT NOT NULL, started_s INTEGER NOT NULL,"
    "  ended_utc TEXT, ended_s INTEGER,"
    "  complete INTEGER NOT NULL DEFAULT 0,"
    "  exit_status INTEGER,"
    "  class TEXT NOT NULL, model TEXT, shapes TEXT NOT NULL, seed TEXT NOT NULL,"
    "  dist TEXT, engine TEXT, backend TEXT, repeats INTEGER, threads INTEGER,"
    "  harness_version TEXT NOT NULL,"
    "  registry_dir TEXT, registry_commit TEXT, registry_dirty INTEGER,"
    "  kernels_dir TEXT, kernels_commit TEXT, kernels_dirty INTEGER,"
    "  host TEXT, pid INTEGER, traces_dir TEXT, against TEXT, shard TEXT,"
    "  points INTEGER, points_failed INTEGER, exit_lines TEXT);"
    "CREATE INDEX run_class ON run(class, started_s);"
    "CREATE INDEX run_model ON run(model, started_s);"
    "CREATE TABLE point ("
    "  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  id TEXT NOT NULL, family TEXT NOT NULL, point TEXT NOT NULL,"
    "  shape TEXT, hash TEXT, kernel TEXT, legacy_kernel TEXT,"
    "  error TEXT,"
    "  tier1 TEXT NOT NULL, tier2 TEXT NOT NULL, tier2_basis TEXT, declared_tolerance TEXT,"
    "  bit_exact INTEGER, max_ulp INTEGER, bits_differ INTEGER,"
    "  t_gen REAL, t_run REAL, t_ref REAL, t_cmp REAL,"
    "  PRIMARY KEY (run_id, id));"
    "CREATE TABLE check_result ("
    "  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,"
    "  point_id TEXT NOT NULL, name TEXT NOT NULL,"
    "  verdict TEXT NOT NULL, negative INTEGER NOT NULL, detail TEXT,"
    "  PRIMARY KEY (run_id, point_id, name));"
    "CREATE TABLE trace ("
    "  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,"
    "  point_id TEXT NOT NULL, path TEXT NOT NULL,"
    "  PRIMARY KEY (run_id, path));",
    /* 1 -> 2: the LKB report's fields of a run (NULL in older runs) and
     * the microbenchmark records of `parity bench` (docs/lkb.md) */
    "ALTER TABLE run ADD COLUMN residual_count INTEGER;"
    "ALTER TABLE run ADD COLUMN residual_loc INTEGER;"
    "ALTER TABLE run ADD COLUMN residual_copy_points INTEGER;"
    "ALTER TABLE run ADD COLUMN residual_single_class INTEGER;"
    "ALTER TABLE run ADD COLUMN coverage_c1 REAL;"
    "ALTER TABLE run ADD COLUMN coverage_c16 REAL;"
    "ALTER TABLE run ADD COLUMN coverage_c128 REAL;"
    "ALTER TABLE run ADD COLUMN coverage_c1_measured REAL;"
    "ALTER TABLE run ADD COLUMN coverage_c16_measured REAL;"
    "ALTER TABLE run ADD COLUMN coverage_c128_measured REAL;"
    "CREATE TABLE measurement ("
    "  id TEXT PRIMARY KEY, class TEXT NOT NULL, point TEXT NOT NULL, rows INTEGER NOT NULL, shape TEXT,"
    "  backend TEXT, kernel TEXT, started_utc TEXT NOT NULL, started_s INTEGER NOT NULL,"
    "  warmup INTEGER, repeats INTEGER, median_s REAL, min_s REAL, max_s REAL, noise_band_s REAL,"
    "  baseline TEXT, baseline_median_s REAL, baseline_min_s REAL, baseline_max_s REAL,"
    "  energy_j REAL, energy_min_j REAL, energy_max_j REAL,"
    "  baseline_energy_j REAL, baseline_energy_min_j REAL, baseline_energy_max_j REAL, energy_source TEXT,"
    "  host TEXT, registry_commit TEXT);"
    "CREATE INDEX measurement_point ON measurement(class, point, started_s);",
    /* 2 -> 3: the residual's entries of a run (JSON), from which the exit
     * line tells a promotion from a numerics change */
    "ALTER TABLE run ADD COLUMN residual_entries TEXT;",
    /* 3 -> 4: what made the run (NULL: a campaign; "check": traces checked
     * by `parity check --ledger`) and the device description of its runs */
    "ALTER TABLE run ADD COLUMN source TEXT;"
    "ALTER TABLE run ADD COLUMN device TEXT;",
    /* 4 -> 5: parity against a target and zero-day from the registry
     * (docs/ledger.md): a digest of each point's outputs and of its inputs,
     * the class's chain, its declared reference, a digest of every file of
     * the classes along the chain */
    "ALTER TABLE point ADD COLUMN out_digest TEXT;"
    "ALTER TABLE point ADD COLUMN in_digest TEXT;"
    "ALTER TABLE run ADD COLUMN chain TEXT;"
    "ALTER TABLE run ADD COLUMN reference TEXT;"
    "ALTER TABLE run ADD COLUMN class_files TEXT;",
};

struct ledger {
    sqlite3 *db;
    char *path;
    int64_t run_id;
    int seq;
    ledger_lkb lkb;      /* the LKB report's fields (ledger_set_lkb), or lkb.set = 0 */
    time_t real_start;   /* the real clock at the start: traces older than it are another run's */
};

nx_status ledger_sql_error(sqlite3 *db, const char *path, const char *what, nx_err *err)
{
    return nx_err_set(err, NX_EIO, "ledger %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
}

static nx_status exec(sqlite3 *db, const char *path, const char *sql, nx_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        nx_status st = nx_err_set(err, NX_EIO, "ledger %s: %s", path, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return st;
    }
    return NX_OK;
}

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* mkdir of path's parent directory (one level) when it is missing. */
static void make_parent(const char *path)
{
    char *d = strdup(path);
    if (!d)
        return;
    char *slash = strrchr(d, '/');
    if (slash && slash != d) {
        *slash = 0;
        struct stat sb;
        if (stat(d, &sb) != 0)
            mkdir(d, 0777);
    }
    free(d);
}

/* An existing ledger must be a regular file (SQLite would open a FIFO
 * blocking): "ledger PATH: No such file or directory", "ledger PATH:
 * cannot open: not a regular file (a FIFO) ...". */
static nx_status check_file(const char *path, nx_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return nx_err_set(err, NX_EIO, "ledger %s: %s", path, strerror(errno));
    nx_err e = {0};
    if (nx_check_input(path, &e) == NX_OK)
        return NX_OK;
    size_t pl = strlen(path);
    const char *why = strncmp(e.msg, path, pl) == 0 && e.msg[pl] == ':' ? e.msg + pl + 2 : e.msg;
    return nx_err_set(err, e.code, "ledger %s: cannot open: %s", path, why);
}

/* Brings db from its user_version to LEDGER_SCHEMA_VERSION in one
 * transaction. */
static nx_status migrate(sqlite3 *db, const char *path, nx_err *err)
{
    nx_status st;
    if ((st = exec(db, path, "BEGIN IMMEDIATE", err)))
        return st;
    int v = user_version(db); /* another process may have migrated meanwhile */
    int64_t now;
    ledger_now(&now, NULL);
    char ts[32];
    ledger_format_utc(now, ts, sizeof ts);
    for (; v < LEDGER_SCHEMA_VERSION && !st; v++) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO schema_migration(version, applied_utc) VALUES (%d, '%s'); PRAGMA user_version=%d",
                 v + 1, ts, v + 1);
        if ((st = exec(db, path, migrations[v], err)) == NX_OK)
            st = exec(db, path, sql, err);
    }
    if (st) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        nx_err_prefix(err, "migrating the schema");
        return st;
    }
    return exec(db, path, "COMMIT", err);
}

nx_status ledger_open_db(const char *path, int create, sqlite3 **out, nx_err *err)
{
    *out = NULL;
    struct stat sb;
    if (!create && stat(path, &sb) != 0)
        return nx_err_set(err, NX_EIO, "ledger %s: %s", path, strerror(errno));
    nx_status cst;
    if (stat(path, &sb) == 0 && (cst = check_file(path, err))) /* a FIFO: refused, not waited on */
        return cst;
    if (create)
        make_parent(path);
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        nx_status st = ledger_sql_error(db, path, "cannot open", err);
        sqlite3_close(db);
        return st;
    }
    sqlite3_busy_timeout(db, LEDGER_BUSY_MS);
    nx_status st;
    {
        /* version 0 is a new, empty file; one that holds tables is another
         * program's database: refused before anything (WAL mode, the
         * migrations) is written to it.  The version and the objects are
         * read in one statement, one snapshot: read apart, a concurrent
         * first open that migrated in between made a new ledger look like
         * another program's database. */
        sqlite3_stmt *s = NULL;
        int nobj = 0, ver = -1, got = 0;
        if (sqlite3_prepare_v2(db, "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version",
                               -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW) {
            ver = sqlite3_column_int(s, 0);
            nobj = sqlite3_column_int(s, 1);
            got = 1;
        }
        sqlite3_finalize(s);
        if (ver == 0 && nobj > 0) {
            st = nx_err_set(err, NX_EINVAL, "ledger %s: not a parity ledger (an SQLite database of schema version 0 "
                            "holding %d other objects)", path, nobj);
            goto fail;
        }
        /* a version this parity cannot write is refused here too, before
         * the switch to WAL: a run that does nothing changes no file */
        if (got && (ver < 0 || ver > LEDGER_SCHEMA_VERSION)) {
            st = ver < 0 ? nx_err_set(err, NX_EINVAL, "ledger %s: not a parity ledger (an SQLite database of schema "
                                      "version %d; a parity ledger's is 1 ... %d)", path, ver, LEDGER_SCHEMA_VERSION)
                         : nx_err_set(err, NX_EINVAL, "ledger %s: schema version %d is newer than this parity's (%d)",
                                      path, ver, LEDGER_SCHEMA_VERSION);
            goto fail;
        }
    }
    /* WAL: readers never block the writer; a concurrent first open may
     * find the file locked while the other switches the journal mode */
    for (int tries = 0;; tries++) {
        sqlite3_stmt *s = NULL;
        int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(s);
        const char *mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
        int wal = mode && strcmp(mode, "wal") == 0;
        sqlite3_finalize(s);
        if (wal)
            break;
        if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && tries < LEDGER_BUSY_MS / 10) {
            nanosleep(&(struct timespec){0, 10000000}, NULL);
            continue;
        }
        if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
            st = nx_err_set(err, NX_EINVAL, "ledger %s: not an SQLite database", path);
        else
            st = ledger_sql_error(db, path, "cannot switch to WAL mode", err);
        goto fail;
    }
    if ((st = exec(db, path, "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL", err)))
        goto fail;
    int v = user_version(db);
    if (v < 0) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: not an SQLite database", path);
        goto fail;
    }
    if (v > LEDGER_SCHEMA_VERSION) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: schema version %d is newer than this parity's (%d)", path, v,
                        LEDGER_SCHEMA_VERSION);
        goto fail;
    }
    if (v < LEDGER_SCHEMA_VERSION && (st = migrate(db, path, err)))
        goto fail;
    *out = db;
    return NX_OK;
fail:
    sqlite3_close(db);
    return st;
}

nx_status ledger_open_read(const char *path, sqlite3 **out, nx_err *err)
{
    *out = NULL;
    nx_status st = check_file(path, err); /* a FIFO is refused, not waited on */
    if (st)
        return st;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, path, "cannot open", err);
        sqlite3_close(db);
        return st;
    }
    sqlite3_busy_timeout(db, LEDGER_BUSY_MS);
    sqlite3_stmt *s = NULL;
    int nobj = 0, ver = 0, rc, got = 0;
    if ((rc = sqlite3_prepare_v2(db, "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version",
                                 -1, &s, NULL)) == SQLITE_OK &&
        (rc = sqlite3_step(s)) == SQLITE_ROW) {
        ver = sqlite3_column_int(s, 0);
        nobj = sqlite3_column_int(s, 1);
        got = 1;
    }
    sqlite3_finalize(s);
    /* whether the version was read is kept apart from its value: any
     * 32-bit user_version can be stored, a negative one too, and it is
     * then a version no parity wrote, not a failed read (whose SQLite
     * message was "not an error") */
    if (!got) {
        if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
            st = nx_err_set(err, NX_EINVAL, "ledger %s: not an SQLite database (nothing read)", path);
        else
            st = ledger_sql_error(db, path, "cannot read", err);
    } else if (ver < 0) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: not a parity ledger (an SQLite database of schema version %d; "
                        "a parity ledger's is 1 ... %d)", path, ver, LEDGER_SCHEMA_VERSION);
    } else if (ver == 0 && nobj == 0) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: an empty database, not a parity ledger (a campaign with "
                        "--ledger creates one)", path);
    } else if (ver == 0) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: not a parity ledger (an SQLite database of schema version 0 "
                        "holding %d other objects)", path, nobj);
    } else if (ver > LEDGER_SCHEMA_VERSION) {
        st = nx_err_set(err, NX_EINVAL, "ledger %s: schema version %d is newer than this parity's (%d)", path, ver,
                        LEDGER_SCHEMA_VERSION);
    }
    if (st)
        goto fail;
    if (ver < LEDGER_SCHEMA_VERSION) { /* migrated in a copy in memory, never in the file */
        sqlite3 *mem = NULL;
        if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
            st = ledger_sql_error(mem, path, "cannot open a copy in memory", err);
            sqlite3_close(mem);
            goto fail;
        }
        sqlite3_backup *bk = sqlite3_backup_init(mem, "main", db, "main");
        rc = bk ? sqlite3_backup_step(bk, -1) : SQLITE_ERROR;
        if (!bk)
            st = ledger_sql_error(mem, path, "copying an older ledger into memory", err);
        else if (sqlite3_backup_finish(bk) != SQLITE_OK || rc != SQLITE_DONE)
            st = ledger_sql_error(mem, path, "copying an older ledger into memory", err);
        if (!st)
            st = migrate(mem, path, err);
        sqlite3_close(db);
        db = mem;
        if (st)
            goto fail;
    }
    *out = db;
    return NX_OK;
fail:
    sqlite3_close(db);
    return st;
}

/* --- the clock -------------------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int ledger_parse_utc(const char *s, int64_t *secs)
{
    int y, mo, d, h = 0, mi = 0, se = 0, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) == 6 && s[n] == 0) {
    } else if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && s[n] == 0) {
        h = mi = se = 0;
    } else {
        return -1;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
        return -1;
    *secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

void ledger_format_utc(int64_t secs, char *buf, size_t len)
{
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, len, "?");
        return;
    }
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void ledger_format_duration(int64_t s, char *buf, size_t len)
{
    const char *sign = s < 0 ? "-" : "";
    if (s < 0)
        s = -s;
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, x = s % 60;
    if (d)
        snprintf(buf, len, "%s%lldd %02lld:%02lld:%02lld", sign, (long long)d, (long long)h, (long long)m,
                 (long long)x);
    else
        snprintf(buf, len, "%s%02lld:%02lld:%02lld", sign, (long long)h, (long long)m, (long long)x);
}

nx_status ledger_now(int64_t *secs, nx_err *err)
{
    static int init;
    static int64_t base;
    static struct timespec mono0;
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    if (!init) {
        const char *env = getenv("PARITY_LEDGER_CLOCK");
        if (env && *env) {
            char *end;
            errno = 0;
            long long v = strtoll(env, &end, 10);
            int64_t t;
            if (!errno && end != env && !*end && v >= 0)
                base = v;
            else if (ledger_parse_utc(env, &t) == 0)
                base = t;
            else
                return nx_err_set(err, NX_EINVAL,
                                  "PARITY_LEDGER_CLOCK: '%s' is neither YYYY-MM-DDTHH:MM:SSZ nor seconds since the "
                                  "epoch", env);
        } else {
            base = (int64_t)time(NULL);
        }
        mono0 = mono;
        init = 1;
    }
    *secs = base + (int64_t)(mono.tv_sec - mono0.tv_sec) - (mono.tv_nsec < mono0.tv_nsec);
    return NX_OK;
}

/* --- git -------------------------------------------------------------------------- */

int ledger_run_cmd(char *const argv[], char *buf, size_t len)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(fd[1], 1);
        if (devnull >= 0)
            dup2(devnull, 2);
        close(fd[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    char tmp[512];
    ssize_t r;
    while ((r = read(fd[0], tmp, sizeof tmp)) > 0 || (r < 0 && errno == EINTR))
        for (ssize_t i = 0; i < r; i++)
            if (n + 1 < len)
                buf[n++] = tmp[i];
    if (len)
        buf[n] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ledger_git_state(const char *dir, char *commit, size_t len, int *dirty)
{
    commit[0] = 0;
    *dirty = -1;
    struct stat sb;
    if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return;
    char out[8192];
    char *head[] = {"git", "-C", (char *)dir, "rev-parse", "--verify", "-q", "HEAD", NULL};
    if (ledger_run_cmd(head, out, sizeof out) != 0)
        return;
    out[strcspn(out, "\r\n")] = 0;
    if (!*out)
        return;
    snprintf(commit, len, "%s", out);
    char *st[] = {"git", "-C", (char *)dir, "status", "--porcelain", "--", ".", NULL};
    if (ledger_run_cmd(st, out, sizeof out) == 0)
        *dirty = out[0] != 0;
}

/* --- verdicts --------------------------------------------------------------------- */

const char *ledger_tier1(const camp_result *res)
{
    if (res->error)
        return "error";
    int any = 0;
    for (int c = CK_DETERMINISM; c <= CK_ROWS; c++) {
        if (res->checks[c].verdict == CV_FAIL)
            return "fail";
        any |= res->checks[c].verdict == CV_PASS;
    }
    return any ? "pass" : "skip";
}

static const char *verdict_name(camp_verdict v)
{
    return v == CV_PASS ? "pass" : v == CV_FAIL ? "fail" : "skip";
}

const char *ledger_tier2_basis(const camp_result *res, const fam_tolerance *tol)
{
    if (res->error || res->checks[CK_TIER2].verdict != CV_PASS)
        return NULL;
    if (res->t2.opt.policy == CMP_BITWISE)
        return "bits";
    if (tol && (tol->has_ulp || tol->has_rtol))
        return "declared";
    if (res->t2.opt.policy == CMP_BOUND)
        return "derived";
    return "default";
}

void ledger_tolerance_text(const fam_tolerance *t, char *buf, size_t len)
{
    buf[0] = 0;
    if (!t)
        return;
    size_t k = 0;
    if (t->has_ulp)
        k += (size_t)snprintf(buf, len, "ulp %.17g", t->ulp);
    if (t->has_rtol && k < len)
        snprintf(buf + k, len - k, "%srtol %.17g, atol %.17g", k ? ", " : "", t->rtol, t->atol);
}

/* --- the class's files ------------------------------------------------------------ */

/* Adds "REL": sha256 of every regular file under dir (hidden names and
 * __pycache__ left out) to obj; rel is dir's path in the registry. */
static void digest_dir(const char *dir, const char *rel, json_t *obj, int depth)
{
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "__pycache__"))
            continue;
        char path[4096], r2[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
            snprintf(r2, sizeof r2, "%s/%s", rel, e->d_name) >= (int)sizeof r2)
            continue;
        struct stat sb;
        if (stat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            digest_dir(path, r2, obj, depth + 1);
            continue;
        }
        if (!S_ISREG(sb.st_mode))
            continue;
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        nx_sha256 h;
        nx_sha256_init(&h);
        unsigned char buf[8192];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            nx_sha256_update(&h, buf, n);
        fclose(f);
        uint8_t dg[32];
        char hex[65];
        nx_sha256_final(&h, dg);
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", dg[i]);
        json_object_set_new(obj, r2, json_string(hex));
    }
    closedir(d);
}

/* The class's chain (JSON array, the class first), its declared reference
 * and the digests of the files of every class on the chain (JSON object,
 * keys sorted); NULLs when the registry is unknown. */
static void class_record(const ledger_run_info *info, char **chain, char **reference, char **files)
{
    *chain = *reference = *files = NULL;
    reg_registry *own = NULL;
    const reg_registry *reg = info->reg;
    nx_err e;
    if (!reg && (!info->registry_dir || reg_load(info->registry_dir, &own, &e) != NX_OK))
        return;
    if (!reg)
        reg = own;
    json_t *ch = json_array(), *fl = json_object();
    const char *c = info->class_name;
    for (size_t depth = 0; c && depth < 64; depth++) {
        int seen = 0;
        size_t i;
        json_t *x;
        json_array_foreach(ch, i, x) seen |= !strcmp(json_string_value(x), c);
        if (seen)
            break;
        json_array_append_new(ch, json_string(c));
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", reg_dir(reg), c);
        digest_dir(dir, c, fl, 0);
        c = reg_class_parent(reg, c);
    }
    const char *ref = reg_class_reference(reg, info->class_name);
    if (ref)
        *reference = strdup(ref);
    *chain = json_dumps(ch, JSON_COMPACT);
    *files = json_dumps(fl, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(ch);
    json_decref(fl);
    reg_free(own);
}

/* --- recording a campaign --------------------------------------------------------- */

static void random_uuid(char *buf, size_t len)
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY);
    int ok = fd >= 0 && read(fd, b, sizeof b) == (ssize_t)sizeof b;
    if (fd >= 0)
        close(fd);
    if (!ok) { /* no /dev/urandom: time, pid and address bits */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
                     (uint64_t)(uintptr_t)&ts;
        for (int i = 0; i < 16; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[i] = (unsigned char)x;
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static void bind_tri(sqlite3_stmt *s, int i, int v)
{
    if (v < 0)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int(s, i, v);
}

nx_status ledger_start(const char *path, const ledger_run_info *info, ledger **out, nx_err *err)
{
    return ledger_start_from(path, info, NULL, out, err);
}

nx_status ledger_start_from(const char *path, const ledger_run_info *info, const ledger_run_from *from, ledger **out,
                            nx_err *err)
{
    *out = NULL;
    const ledger_run_from none = {0}, *fr = from ? from : &none;
    int64_t now;
    nx_status st = ledger_now(&now, err);
    if (st)
        return st;
    if (fr->started_s > 0)
        now = fr->started_s;
    ledger *lg = calloc(1, sizeof *lg);
    if (!lg || !(lg->path = strdup(path))) {
        free(lg);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    if ((st = ledger_open_db(path, 1, &lg->db, err))) {
        free(lg->path);
        free(lg);
        return st;
    }
    /* staging: the points of this run, written to the file at the end */
    if ((st = exec(lg->db, path,
                   "CREATE TEMP TABLE stage_point AS SELECT * FROM main.point WHERE 0;"
                   "CREATE TEMP TABLE stage_check AS SELECT * FROM main.check_result WHERE 0;"
                   "CREATE TEMP TABLE stage_trace AS SELECT * FROM main.trace WHERE 0;",
                   err)))
        goto fail;

    char reg_commit[64], ker_commit[64], ts[32], uuid[40], seed[32], host[256] = "";
    int reg_dirty, ker_dirty;
    ledger_git_state(info->registry_dir, reg_commit, sizeof reg_commit, &reg_dirty);
    char ksrc[4096] = "";
    if (info->kernel_src)
        snprintf(ksrc, sizeof ksrc, "%s", info->kernel_src);
#ifdef PARITY_SOURCE_DIR
    else if (info->backend)
        snprintf(ksrc, sizeof ksrc, "%s/devices/%s", PARITY_SOURCE_DIR, info->backend);
    struct stat sb;
    if (!info->kernel_src && (stat(ksrc, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        ksrc[0] = 0;
#endif
    ledger_git_state(*ksrc ? ksrc : NULL, ker_commit, sizeof ker_commit, &ker_dirty);
    gethostname(host, sizeof host - 1);
    ledger_format_utc(now, ts, sizeof ts);
    random_uuid(uuid, sizeof uuid);
    snprintf(seed, sizeof seed, "%llu", info->seed);

    sqlite3_stmt *s = NULL;
    const char *sql =
        "INSERT INTO run(uuid, started_utc, started_s, class, model, shapes, seed, dist, engine, backend, repeats,"
        " threads, harness_version, registry_dir, registry_commit, registry_dirty, kernels_dir, kernels_commit,"
        " kernels_dirty, host, pid, traces_dir, against, shard, source, device, chain, reference, class_files)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(lg->db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(lg->db, path, "preparing the run", err);
        goto fail;
    }
    char *chain = NULL, *reference = NULL, *files = NULL;
    class_record(info, &chain, &reference, &files);
    int i = 1;
    bind_text(s, i++, uuid);
    bind_text(s, i++, ts);
    sqlite3_bind_int64(s, i++, now);
    bind_text(s, i++, info->class_name);
    bind_text(s, i++, info->model);
    bind_text(s, i++, info->shapes);
    bind_text(s, i++, seed);
    bind_text(s, i++, info->dist);
    bind_text(s, i++, info->engine);
    bind_text(s, i++, info->backend);
    sqlite3_bind_int(s, i++, info->repeats);
    sqlite3_bind_int(s, i++, info->threads);
    bind_text(s, i++, "parity " PARITY_VERSION);
    bind_text(s, i++, info->registry_dir);
    bind_text(s, i++, reg_commit);
    bind_tri(s, i++, reg_dirty);
    bind_text(s, i++, ksrc);
    bind_text(s, i++, ker_commit);
    bind_tri(s, i++, ker_dirty);
    bind_text(s, i++, host);
    sqlite3_bind_int64(s, i++, (sqlite3_int64)getpid());
    bind_text(s, i++, info->traces_dir);
    bind_text(s, i++, info->against);
    bind_text(s, i++, info->shard);
    bind_text(s, i++, fr->source);
    bind_text(s, i++, fr->device);
    bind_text(s, i++, chain);
    bind_text(s, i++, reference);
    bind_text(s, i++, files);
    free(chain);
    free(reference);
    free(files);
    /* a single INSERT is its own transaction: committed now, so the run is
     * in the file (incomplete) whatever happens to this process later;
     * atomic: the transaction stays open until ledger_finish commits it */
    if (fr->atomic && (st = exec(lg->db, path, "BEGIN IMMEDIATE", err))) {
        sqlite3_finalize(s);
        goto fail;
    }
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        st = ledger_sql_error(lg->db, path, "recording the run", err);
        goto fail;
    }
    lg->run_id = sqlite3_last_insert_rowid(lg->db);
    lg->real_start = time(NULL);
    *out = lg;
    return NX_OK;
fail:
    ledger_close(lg);
    return st;
}

int64_t ledger_run_id(const ledger *lg)
{
    return lg ? lg->run_id : 0;
}

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE;
}

/* A point already staged in this run, run again at another shape: its
 * record holds both (shape "S1; S2", the worse verdicts, the weaker Tier 2
 * basis, the digests of both runs' digests, the times added).  NX_EIO on
 * an SQL error. */
static nx_status merge_point(ledger *lg, const camp_result *res, const char *basis)
{
    const char *t1 = ledger_tier1(res), *t2 = res->error ? "error" : verdict_name(res->checks[CK_TIER2].verdict);
    int t2run = !res->error && res->checks[CK_TIER2].verdict != CV_SKIP;
    const char *sql =
        "UPDATE temp.stage_point SET shape = coalesce(shape, '') || '; ' || coalesce(?3, ''),"
        " error = coalesce(error, ?4),"
        " tier1 = CASE WHEN 'error' IN (tier1, ?5) THEN 'error' WHEN 'fail' IN (tier1, ?5) THEN 'fail'"
        "   WHEN 'pass' IN (tier1, ?5) THEN 'pass' ELSE 'skip' END,"
        " tier2_basis = CASE WHEN tier2 <> 'pass' OR ?6 <> 'pass' THEN NULL"
        "   WHEN 'default' IN (tier2_basis, ?7) THEN 'default' WHEN 'derived' IN (tier2_basis, ?7) THEN 'derived'"
        "   WHEN 'declared' IN (tier2_basis, ?7) THEN 'declared' ELSE tier2_basis END,"
        " tier2 = CASE WHEN 'error' IN (tier2, ?6) THEN 'error' WHEN 'fail' IN (tier2, ?6) THEN 'fail'"
        "   WHEN 'skip' IN (tier2, ?6) THEN 'skip' ELSE 'pass' END,"
        " bit_exact = CASE WHEN ?8 IS NULL OR bit_exact IS NULL THEN NULL ELSE min(bit_exact, ?8) END,"
        " max_ulp = max(coalesce(max_ulp, 0), coalesce(?9, 0)), bits_differ = coalesce(bits_differ, 0) + coalesce(?10, 0),"
        " t_gen = t_gen + ?11, t_run = t_run + ?12, t_ref = t_ref + ?13, t_cmp = t_cmp + ?14,"
        " out_digest = CASE WHEN out_digest IS NULL OR ?15 IS NULL THEN NULL ELSE out_digest || '+' || ?15 END,"
        " in_digest = CASE WHEN in_digest IS NULL OR ?16 IS NULL THEN NULL ELSE in_digest || '+' || ?16 END"
        " WHERE run_id = ?1 AND id = ?2";
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(lg->db, sql, -1, &s, NULL) != SQLITE_OK)
        return NX_EIO;
    sqlite3_bind_int64(s, 1, lg->run_id);
    bind_text(s, 2, res->id);
    bind_text(s, 3, res->shape);
    bind_text(s, 4, res->error ? res->errmsg : NULL);
    bind_text(s, 5, t1);
    bind_text(s, 6, t2);
    bind_text(s, 7, basis);
    if (t2run) {
        sqlite3_bind_int(s, 8, res->bit_exact ? 1 : 0);
        sqlite3_bind_int64(s, 9, res->t2.max_ulp > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)res->t2.max_ulp);
        sqlite3_bind_int64(s, 10, (sqlite3_int64)res->t2.bits_differ);
    }
    sqlite3_bind_double(s, 11, res->t_gen);
    sqlite3_bind_double(s, 12, res->t_run);
    sqlite3_bind_double(s, 13, res->t_ref);
    sqlite3_bind_double(s, 14, res->t_cmp);
    bind_text(s, 15, res->error ? NULL : res->out_digest);
    bind_text(s, 16, res->error ? NULL : res->in_digest);
    if (!step_done(s))
        return NX_EIO;
    for (int c = 0; c < CK_COUNT && !res->error; c++) {
        if (c == CK_PARITY && !*res->against)
            continue;
        const char *v = verdict_name(res->checks[c].verdict);
        if (sqlite3_prepare_v2(lg->db,
                               "UPDATE temp.stage_check SET"
                               " detail = CASE WHEN ?4 = 'fail' AND verdict <> 'fail' THEN ?6"
                               "   WHEN ?4 = 'pass' AND verdict = 'skip' THEN ?6 ELSE detail END,"
                               " verdict = CASE WHEN 'fail' IN (verdict, ?4) THEN 'fail'"
                               "   WHEN 'pass' IN (verdict, ?4) THEN 'pass' ELSE 'skip' END,"
                               " negative = max(negative, ?5) WHERE run_id = ?1 AND point_id = ?2 AND name = ?3",
                               -1, &s, NULL) != SQLITE_OK)
            return NX_EIO;
        sqlite3_bind_int64(s, 1, lg->run_id);
        bind_text(s, 2, res->id);
        bind_text(s, 3, camp_check_name(c));
        bind_text(s, 4, v);
        sqlite3_bind_int(s, 5, res->checks[c].negative ? 1 : 0);
        bind_text(s, 6, res->checks[c].detail);
        if (!step_done(s))
            return NX_EIO;
    }
    return NX_OK;
}

nx_status ledger_point(ledger *lg, const reg_registry *reg, const camp_result *res, nx_err *err)
{
    if (!lg)
        return NX_OK;
    char fam[128], tol[256] = "";
    snprintf(fam, sizeof fam, "%s", res->id);
    char *dot = strchr(fam, '.');
    const char *pt = dot ? dot + 1 : "";
    if (dot)
        *dot = 0;
    fam_spec spec = {0};
    const fam_tolerance *tp = NULL;
    nx_err rerr;
    if (reg && !res->error && reg_resolve(reg, res->class_name, res->id, res->shape, &spec, &rerr) == NX_OK) {
        tp = &spec.tol;
        ledger_tolerance_text(tp, tol, sizeof tol);
    }
    const char *basis = ledger_tier2_basis(res, tp);
    sqlite3_stmt *s = NULL;
    nx_status st = NX_OK;
    /* a point run at several shapes in one campaign (--shapes model:M) is
     * one record holding every shape */
    int again = 0;
    if (sqlite3_prepare_v2(lg->db, "SELECT 1 FROM temp.stage_point WHERE run_id = ?1 AND id = ?2", -1, &s, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(s, 1, lg->run_id);
        bind_text(s, 2, res->id);
        again = sqlite3_step(s) == SQLITE_ROW;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (again) {
        if (merge_point(lg, res, basis) != NX_OK) {
            st = ledger_sql_error(lg->db, lg->path, "staging a point", err);
            goto out;
        }
        goto traces;
    }
    const char *sql = "INSERT INTO temp.stage_point(run_id, seq, id, family, point, shape, hash, kernel,"
                      " legacy_kernel, error, tier1, tier2, tier2_basis, declared_tolerance, bit_exact, max_ulp,"
                      " bits_differ, t_gen, t_run, t_ref, t_cmp, out_digest, in_digest)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(lg->db, sql, -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(lg->db, lg->path, "staging a point", err);
        goto out;
    }
    int i = 1;
    int t2run = !res->error && res->checks[CK_TIER2].verdict != CV_SKIP;
    sqlite3_bind_int64(s, i++, lg->run_id);
    sqlite3_bind_int(s, i++, lg->seq++);
    bind_text(s, i++, res->id);
    bind_text(s, i++, fam);
    sqlite3_bind_text(s, i++, pt, -1, SQLITE_TRANSIENT);
    bind_text(s, i++, res->shape);
    bind_text(s, i++, res->hash);
    bind_text(s, i++, res->kernel);
    bind_text(s, i++, res->legacy);
    bind_text(s, i++, res->error ? res->errmsg : NULL);
    bind_text(s, i++, ledger_tier1(res));
    bind_text(s, i++, res->error ? "error" : verdict_name(res->checks[CK_TIER2].verdict));
    bind_text(s, i++, basis);
    bind_text(s, i++, tol);
    if (t2run) {
        sqlite3_bind_int(s, i++, res->bit_exact ? 1 : 0);
        sqlite3_bind_int64(s, i++, res->t2.max_ulp > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)res->t2.max_ulp);
        sqlite3_bind_int64(s, i++, (sqlite3_int64)res->t2.bits_differ);
    } else {
        sqlite3_bind_null(s, i++);
        sqlite3_bind_null(s, i++);
        sqlite3_bind_null(s, i++);
    }
    sqlite3_bind_double(s, i++, res->t_gen);
    sqlite3_bind_double(s, i++, res->t_run);
    sqlite3_bind_double(s, i++, res->t_ref);
    sqlite3_bind_double(s, i++, res->t_cmp);
    bind_text(s, i++, res->error ? NULL : res->out_digest);
    bind_text(s, i++, res->error ? NULL : res->in_digest);
    if (!step_done(s)) {
        st = ledger_sql_error(lg->db, lg->path, "staging a point", err);
        goto out;
    }
    for (int c = 0; c < CK_COUNT && !res->error; c++) {
        if (c == CK_PARITY && !*res->against)
            continue;
        if (sqlite3_prepare_v2(lg->db,
                               "INSERT INTO temp.stage_check(run_id, point_id, name, verdict, negative, detail)"
                               " VALUES (?,?,?,?,?,?)",
                               -1, &s, NULL) != SQLITE_OK) {
            st = ledger_sql_error(lg->db, lg->path, "staging a check", err);
            goto out;
        }
        sqlite3_bind_int64(s, 1, lg->run_id);
        bind_text(s, 2, res->id);
        bind_text(s, 3, camp_check_name(c));
        bind_text(s, 4, verdict_name(res->checks[c].verdict));
        sqlite3_bind_int(s, 5, res->checks[c].negative ? 1 : 0);
        bind_text(s, 6, res->checks[c].detail);
        if (!step_done(s)) {
            st = ledger_sql_error(lg->db, lg->path, "staging a check", err);
            goto out;
        }
    }
traces:;
    /* the trace files the campaign wrote for this point */
    sqlite3_stmt *q = NULL;
    const char *tdir = NULL;
    if (sqlite3_prepare_v2(lg->db, "SELECT traces_dir FROM main.run WHERE id = ?", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, lg->run_id);
        if (sqlite3_step(q) == SQLITE_ROW)
            tdir = (const char *)sqlite3_column_text(q, 0);
    }
    if (tdir && !res->error) {
        char pat[4096];
        snprintf(pat, sizeof pat, "%s/%s.%s.*.safetensors", tdir, res->class_name, res->id);
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc && !st; k++) {
                struct stat sb;
                /* a trace left in the directory by an earlier campaign is not this run's */
                if (stat(g.gl_pathv[k], &sb) != 0 || sb.st_mtime + 1 < lg->real_start)
                    continue;
                if (sqlite3_prepare_v2(lg->db, "INSERT OR IGNORE INTO temp.stage_trace(run_id, point_id, path)"
                                       " VALUES (?,?,?)", -1, &s, NULL) != SQLITE_OK ||
                    (sqlite3_bind_int64(s, 1, lg->run_id), bind_text(s, 2, res->id),
                     bind_text(s, 3, g.gl_pathv[k]), !step_done(s)))
                    st = ledger_sql_error(lg->db, lg->path, "staging a trace", err);
            }
            globfree(&g);
        }
    }
    sqlite3_finalize(q);
out:
    fam_spec_free(&spec);
    return st;
}

void ledger_set_lkb(ledger *lg, const ledger_lkb *f)
{
    if (lg && f) {
        free(lg->lkb.residual_json);
        lg->lkb = *f;
    } else if (f) {
        free(f->residual_json);
    }
}

/* "LKB residual delta: ..." (docs/lkb.md): this run's residual against
 * the last earlier complete run of the class that recorded one. */
static nx_status residual_delta(ledger *lg, nx_sbuf *b, nx_err *err)
{
    const ledger_lkb *k = &lg->lkb;
    if (!k->set) {
        nx_sbuf_printf(b, "\nLKB residual delta: not measured (%s)\n", *k->why ? k->why : "no LKB report");
        return NX_OK;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(lg->db,
                           "SELECT r.id, r.residual_count, r.residual_loc, r.residual_copy_points,"
                           " r.residual_single_class FROM main.run r, main.run me WHERE me.id = ?1"
                           " AND r.class = me.class AND r.complete = 1 AND r.id <> me.id"
                           " AND r.residual_count IS NOT NULL ORDER BY r.started_s DESC, r.id DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return ledger_sql_error(lg->db, lg->path, "reading the previous residual", err);
    sqlite3_bind_int64(s, 1, lg->run_id);
    int rc = sqlite3_step(s);
    nx_sbuf_printf(b, "\nLKB residual delta: ");
    if (rc == SQLITE_ROW) {
        long long c0 = sqlite3_column_int64(s, 1), l0 = sqlite3_column_int64(s, 2), p0 = sqlite3_column_int64(s, 3),
                  s0 = sqlite3_column_int64(s, 4);
        nx_sbuf_printf(b, "%+lld entries, %+lld lines, %+lld copy points, %+lld single-class (since run %lld: ",
                       k->count - c0, k->loc - l0, k->copy_points - p0, k->single_class - s0,
                       (long long)sqlite3_column_int64(s, 0));
    } else if (rc == SQLITE_DONE) {
        nx_sbuf_printf(b, "none to compare (the first recorded residual of the class: ");
    } else {
        sqlite3_finalize(s);
        return ledger_sql_error(lg->db, lg->path, "reading the previous residual", err);
    }
    sqlite3_finalize(s);
    nx_sbuf_printf(b, "now %lld entries, %lld lines, %lld copy points, %lld single-class)\n", k->count, k->loc,
                   k->copy_points, k->single_class);
    return NX_OK;
}

/* A point of a run: its hash and kernel ("" when none). */
typedef struct run_pt {
    char *id, *hash, *kernel;
} run_pt;

static void run_pts_free(run_pt *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].id), free(v[i].hash), free(v[i].kernel);
    free(v);
}

static const run_pt *run_pt_find(const run_pt *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0)
            return &v[i];
    return NULL;
}

static char *dup0(const unsigned char *s)
{
    return strdup(s ? (const char *)s : "");
}

/* The points of a query's rows (id, hash, kernel). */
static nx_status read_pts(ledger *lg, sqlite3_stmt *s, run_pt **out, size_t *n, nx_err *err)
{
    *out = NULL;
    *n = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        run_pt *g = realloc(*out, (*n + 1) * sizeof *g);
        if (!g)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        *out = g;
        run_pt *x = &g[(*n)++];
        x->id = dup0(sqlite3_column_text(s, 0));
        x->hash = dup0(sqlite3_column_text(s, 1));
        x->kernel = dup0(sqlite3_column_text(s, 2));
        if (!x->id || !x->hash || !x->kernel)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    return rc == SQLITE_DONE ? NX_OK : ledger_sql_error(lg->db, lg->path, "reading the previous campaign", err);
}

/* Whether the residual array a holds an entry of kind and what. */
static int res_has(json_t *a, const char *kind, const char *what)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        const char *k = json_string_value(json_object_get(e, "kind")), *w = json_string_value(json_object_get(e, "what"));
        if (k && w && !strcmp(k, kind) && !strcmp(w, what))
            return 1;
    }
    return 0;
}

/* The exit lines (docs/ledger.md "The campaign's exit lines").  A
 * promotion is a residual entry of the previous complete run of the class
 * (a copy point, a class source, a shadow) that is gone, while the point
 * it served runs on with the same numerics hash: a copy point's own id, a
 * shadow's point, the points whose kernel was the source's KERNEL.toml id.
 * Rule 1: an entry with fewer than two users is said, not promoted.  A
 * point whose hash changed is a numerics change, never a promotion. */
static nx_status promotions(ledger *lg, char **out, nx_err *err)
{
    *out = NULL;
    nx_sbuf b = {0};
    sqlite3_stmt *s = NULL;
    nx_status st = NX_OK, st2;
    run_pt *now = NULL, *was = NULL;
    size_t nnow = 0, nwas = 0;
    json_t *rprev = NULL, *rnow = NULL;
    char cls[64] = "";
    int64_t prev = 0;
    int prev_has_res = 0;
    /* the previous complete run of the class */
    if (sqlite3_prepare_v2(lg->db,
                           "SELECT r.id, r.residual_entries, me.class FROM main.run me LEFT JOIN main.run r"
                           " ON r.class = me.class AND r.complete = 1 AND r.id <> me.id WHERE me.id = ?1"
                           " ORDER BY r.started_s DESC, r.id DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return ledger_sql_error(lg->db, lg->path, "reading the previous campaign", err);
    sqlite3_bind_int64(s, 1, lg->run_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        prev = sqlite3_column_type(s, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 0);
        snprintf(cls, sizeof cls, "%s", (const char *)sqlite3_column_text(s, 2));
        if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
            rprev = json_loads((const char *)sqlite3_column_text(s, 1), 0, NULL);
            prev_has_res = json_is_array(rprev);
        }
    }
    sqlite3_finalize(s);
    s = NULL;
    if (!prev) {
        nx_sbuf_printf(&b, "Promoted into the LKB: none (the first recorded campaign of class %s)", cls);
        goto residual;
    }
    /* this run's points, and the previous run's */
    if (sqlite3_prepare_v2(lg->db, "SELECT id, hash, kernel FROM temp.stage_point WHERE error IS NULL ORDER BY seq", -1,
                           &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(lg->db, lg->path, "reading the run's points", err);
        goto out;
    }
    st = read_pts(lg, s, &now, &nnow, err);
    sqlite3_finalize(s);
    s = NULL;
    if (st)
        goto out;
    if (sqlite3_prepare_v2(lg->db, "SELECT id, hash, kernel FROM main.point WHERE run_id = ?1 AND error IS NULL", -1, &s,
                           NULL) != SQLITE_OK) {
        st = ledger_sql_error(lg->db, lg->path, "reading the previous campaign", err);
        goto out;
    }
    sqlite3_bind_int64(s, 1, prev);
    st = read_pts(lg, s, &was, &nwas, err);
    sqlite3_finalize(s);
    s = NULL;
    if (st)
        goto out;
    rnow = lg->lkb.residual_json ? json_loads(lg->lkb.residual_json, 0, NULL) : NULL;
    int n = 0;
    nx_sbuf notp = {0};
    nx_sbuf_printf(&notp, "%s", "");
    int nnot = 0;
    if (!prev_has_res || !json_is_array(rnow)) {
        nx_sbuf_printf(&b, "Promoted into the LKB: not known (%s recorded no residual entries)",
                       !prev_has_res ? "the previous campaign of the class" : "this campaign");
    } else {
        size_t i;
        json_t *e;
        json_array_foreach(rprev, i, e) {
            const char *kind = json_string_value(json_object_get(e, "kind")),
                       *what = json_string_value(json_object_get(e, "what")),
                       *kernel = json_string_value(json_object_get(e, "kernel")),
                       *users = json_string_value(json_object_get(e, "users_text"));
            long long lines = json_integer_value(json_object_get(e, "lines"));
            int nusers = (int)json_integer_value(json_object_get(e, "users"));
            if (!kind || !what || res_has(rnow, kind, what))
                continue;
            /* the points the entry served in the previous run */
            for (size_t k = 0; k < nwas; k++) {
                const run_pt *p = &was[k];
                int served = !strcmp(kind, "source") ? kernel && *kernel && !strcmp(p->kernel, kernel)
                                                     : !strcmp(p->id, what);
                if (!served)
                    continue;
                const run_pt *q = run_pt_find(now, nnow, p->id);
                char removed[600];
                if (!strcmp(kind, "source"))
                    snprintf(removed, sizeof removed, "source %s (%lld lines)", what, lines);
                else
                    snprintf(removed, sizeof removed, "%s %s", kind, what);
                if (!q || strcmp(q->hash, p->hash) != 0) {
                    nx_sbuf_printf(&notp, "%s%s removed, but %s %s", nnot++ ? "; " : "", removed, p->id,
                                   q ? "runs another numerics point" : "is gone");
                } else if (nusers < 2) {
                    nx_sbuf_printf(&notp, "%s%s removed for %s, which has %d user (%s): rule 1 needs two",
                                   nnot++ ? "; " : "", removed, p->id, nusers, users && *users ? users : "none derived");
                } else {
                    const char *dot = strchr(p->id, '.');
                    nx_sbuf_printf(&b, "%s%.*s / %s / kernel %s / numerics point %.12s / users %s / residual removed: %s",
                                   n++ ? ", " : "Promoted into the LKB: ", dot ? (int)(dot - p->id) : (int)strlen(p->id),
                                   p->id, dot ? dot + 1 : "?", *q->kernel ? q->kernel : "none", q->hash,
                                   users ? users : "?", removed);
                }
            }
        }
        if (!n)
            nx_sbuf_printf(&b, "Promoted into the LKB: none");
        if (nnot)
            nx_sbuf_printf(&b, " (not promotions: %s)", notp.s ? notp.s : "");
    }
    free(nx_sbuf_take(&notp));
    /* numerics changes: said as what they are */
    int nc = 0;
    for (size_t k = 0; k < nnow; k++) {
        const run_pt *p = run_pt_find(was, nwas, now[k].id);
        if (p && strcmp(p->hash, now[k].hash) != 0)
            nx_sbuf_printf(&b, "%s%s (numerics point %.12s, was %.12s)", nc++ ? ", " : "\nNumerics changed at: ",
                           now[k].id, *now[k].hash ? now[k].hash : "none", *p->hash ? p->hash : "none");
    }
residual:
    if ((st2 = residual_delta(lg, &b, err)) && !st)
        st = st2;
out:
    json_decref(rprev);
    json_decref(rnow);
    run_pts_free(now, nnow);
    run_pts_free(was, nwas);
    char *text = nx_sbuf_take(&b);
    if (st || !text) {
        free(text);
        return st ? st : nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    *out = text;
    return NX_OK;
}

nx_status ledger_finish(ledger *lg, int exit_status, char **exit_lines_out, nx_err *err)
{
    char *exit_lines = NULL;
    if (exit_lines_out)
        *exit_lines_out = NULL;
    if (!lg)
        return NX_OK;
    int64_t now;
    ledger_now(&now, NULL);
    char ts[32];
    ledger_format_utc(now, ts, sizeof ts);
    /* an atomic run's transaction is open since ledger_start */
    nx_status st = sqlite3_get_autocommit(lg->db) ? exec(lg->db, lg->path, "BEGIN IMMEDIATE", err) : NX_OK;
    if (st)
        goto out;
    if ((st = promotions(lg, &exit_lines, err)))
        goto rollback;
    if ((st = exec(lg->db, lg->path,
                   "INSERT INTO main.point SELECT * FROM temp.stage_point;"
                   "INSERT INTO main.check_result SELECT * FROM temp.stage_check;"
                   "INSERT INTO main.trace SELECT * FROM temp.stage_trace;",
                   err)))
        goto rollback;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(lg->db,
                           "UPDATE main.run SET complete = 1, ended_utc = ?, ended_s = ?, exit_status = ?,"
                           " exit_lines = ?, residual_count = ?6, residual_loc = ?7, residual_copy_points = ?8,"
                           " residual_entries = ?16,"
                           " residual_single_class = ?9, coverage_c1 = ?10, coverage_c16 = ?11, coverage_c128 = ?12,"
                           " coverage_c1_measured = ?13, coverage_c16_measured = ?14, coverage_c128_measured = ?15,"
                           " points = (SELECT count(*) FROM temp.stage_point),"
                           " points_failed = (SELECT count(*) FROM temp.stage_point"
                           "   WHERE tier1 IN ('fail', 'error') OR tier2 IN ('fail', 'error'))"
                           " WHERE id = ?5",
                           -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(lg->db, lg->path, "completing the run", err);
        goto rollback;
    }
    bind_text(s, 1, ts);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int(s, 3, exit_status);
    bind_text(s, 4, exit_lines);
    sqlite3_bind_int64(s, 5, lg->run_id);
    if (lg->lkb.set) {
        sqlite3_bind_int64(s, 6, lg->lkb.count);
        sqlite3_bind_int64(s, 7, lg->lkb.loc);
        sqlite3_bind_int64(s, 8, lg->lkb.copy_points);
        sqlite3_bind_int64(s, 9, lg->lkb.single_class);
        if (lg->lkb.residual_json)
            sqlite3_bind_text(s, 16, lg->lkb.residual_json, -1, SQLITE_TRANSIENT);
        for (int k = 0; k < 3; k++) { /* a coverage without a step manifest stays NULL */
            if (lg->lkb.coverage[k] >= 0)
                sqlite3_bind_double(s, 10 + k, lg->lkb.coverage[k]);
            if (lg->lkb.measured[k] >= 0)
                sqlite3_bind_double(s, 13 + k, lg->lkb.measured[k]);
        }
    }
    if (!step_done(s)) {
        st = ledger_sql_error(lg->db, lg->path, "completing the run", err);
        goto rollback;
    }
    st = exec(lg->db, lg->path, "COMMIT", err);
    if (!st)
        goto out;
rollback:
    sqlite3_exec(lg->db, "ROLLBACK", NULL, NULL, NULL);
out:
    ledger_close(lg);
    if (!st && exit_lines_out)
        *exit_lines_out = exit_lines;
    else
        free(exit_lines);
    return st;
}

nx_status ledger_trace(ledger *lg, const char *point_id, const char *path, nx_err *err)
{
    if (!lg)
        return NX_OK;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(lg->db, "INSERT OR IGNORE INTO temp.stage_trace(run_id, point_id, path) VALUES (?,?,?)", -1,
                           &s, NULL) != SQLITE_OK)
        return ledger_sql_error(lg->db, lg->path, "staging a trace", err);
    sqlite3_bind_int64(s, 1, lg->run_id);
    bind_text(s, 2, point_id);
    bind_text(s, 3, path);
    return step_done(s) ? NX_OK : ledger_sql_error(lg->db, lg->path, "staging a trace", err);
}

void ledger_close(ledger *lg)
{
    if (!lg)
        return;
    if (lg->db && !sqlite3_get_autocommit(lg->db)) /* an atomic run not finished: nothing of it is kept */
        sqlite3_exec(lg->db, "ROLLBACK", NULL, NULL, NULL);
    free(lg->lkb.residual_json);
    sqlite3_close(lg->db);
    free(lg->path);
    free(lg);
}
