/* ledger.h: the campaign ledger (docs/ledger.md): one SQLite file in WAL
 * mode that every `parity campaign` appends a run to, and that `parity
 * ttbp`, `parity gate` and `parity ledger merge` read.
 *
 * A campaign makes three calls: ledger_start (opens the file, migrates its
 * schema, inserts the run marked incomplete and commits at once, so a
 * campaign killed later leaves a valid ledger with an incomplete run),
 * ledger_point per point (staged in the connection's temporary tables, no
 * lock on the file), ledger_finish (the points, their checks and traces and
 * the completed run in one transaction).  Concurrent campaigns on one file
 * wait for each other's short transactions (busy timeout), never fail. */
#ifndef PARITY_LEDGER_H
#define PARITY_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "campaign.h"
#include "registry.h"

/* The schema version this build writes (PRAGMA user_version). */
#define LEDGER_SCHEMA_VERSION 5
/* The busy timeout of every connection, milliseconds. */
#define LEDGER_BUSY_MS 60000

typedef struct ledger ledger;

typedef struct ledger_run_info {
    const char *class_name;
    const char *model;        /* --model label, or NULL */
    const char *shapes;       /* preset name */
    unsigned long long seed;
    const char *dist, *engine, *backend;
    int repeats, threads;
    const char *registry_dir; /* --kernels */
    const char *kernel_src;   /* the kernels' source directory, or NULL: the backend's own sources */
    const char *traces_dir;   /* --traces, or NULL */
    const char *against;      /* --against, or NULL */
    const char *shard;        /* "i/N", or NULL */
    /* The registry (NULL: loaded from registry_dir): the class's chain, its
     * declared reference and a digest of every file of the classes along
     * the chain are recorded with the run (version 5: run.chain,
     * run.reference, run.class_files), for ttbp and zero-day. */
    const reg_registry *reg;
} ledger_run_info;

/* A run that is no campaign (ledger_start_from). */
typedef struct ledger_run_from {
    /* What made the run: "check" for traces checked by `parity check
     * --ledger` (a campaign's is NULL, read as "campaign"). */
    const char *source;
    const char *device;       /* the device description (JSON), or NULL */
    int64_t started_s;        /* the start (ledger_now's seconds), or 0: now */
    /* 1: the run is inserted in the same transaction as its points
     * (ledger_finish), so nothing reaches the file unless the run is
     * finished; 0: inserted incomplete and committed at once. */
    int atomic;
} ledger_run_from;

/* Opens (creating it and its parent directory when missing) and migrates
 * the ledger at path, and inserts the run, marked incomplete. */
nx_status ledger_start(const char *path, const ledger_run_info *info, ledger **out, nx_err *err);
/* ledger_start for a run that is no campaign; from NULL: ledger_start. */
nx_status ledger_start_from(const char *path, const ledger_run_info *info, const ledger_run_from *from, ledger **out,
                            nx_err *err);
/* Stages one point's result (reg resolves the point's declared tolerance;
 * NULL: not recorded). */
nx_status ledger_point(ledger *lg, const reg_registry *reg, const camp_result *res, nx_err *err);
/* Writes the staged points and completes the run with the campaign's exit
 * status and its exit lines, which *exit_lines receives (malloc'd; NULL
 * on error) for the campaign to print:
 *   Promoted into the LKB: FAMILY / POINT / kernel K / numerics point H (new|was H0), ...
 *   LKB residual delta: ... (ledger_set_lkb's fields against the class's last campaign)
 * A point is promoted when its hash differs from the one the last earlier
 * complete campaign of the class that recorded it had, or none did ("none"
 * when none is; the first campaign of a class promotes nothing).  Closes
 * lg in every case. */
nx_status ledger_finish(ledger *lg, int exit_status, char **exit_lines, nx_err *err);
/* The LKB report's fields of the run (docs/lkb.md), written by
 * ledger_finish, which also compares them with the last earlier complete
 * run of the class that has them in its "LKB residual delta" line.
 * Coverage shares are fractions of the step (0..1), -1 when not computed
 * (no step manifest).  Without a call (set = 0) the fields stay NULL and
 * the line says "not measured (why)". */
typedef struct ledger_lkb {
    int set;
    long long count, loc, copy_points, single_class;
    double coverage[3], measured[3]; /* at C = 1, 16, 128 */
    char why[200];                   /* set = 0: why there is no report */
    /* The residual's entries as a JSON array of {kind, what, lines, kernel,
     * users, users_text} (lkb_ledger_fields), malloc'd or NULL; the ledger
     * takes it over in ledger_set_lkb (freed when the ledger closes): the
     * exit line's promotions compare it with the previous run's. */
    char *residual_json;
} ledger_lkb;
void ledger_set_lkb(ledger *lg, const ledger_lkb *f);
/* Stages one trace file of a point (the traces `parity check --ledger`
 * checked; a campaign's are found in its traces_dir by ledger_point). */
nx_status ledger_trace(ledger *lg, const char *point_id, const char *path, nx_err *err);
/* Closes without completing (the run stays incomplete; with atomic, the
 * run is rolled back and nothing of it is in the file). */
void ledger_close(ledger *lg);
int64_t ledger_run_id(const ledger *lg);

/* Opens an existing ledger for reading or writing (migrating it when it is
 * older), for the commands that query it. *db is an sqlite3 handle. */
struct sqlite3;
nx_status ledger_open_db(const char *path, int create, struct sqlite3 **db, nx_err *err);
/* Opens an existing ledger for reading only (`ledger runs`, `ttbp`, the
 * inputs of `ledger merge`, `lkb --ledger`): SQLITE_OPEN_READONLY, never
 * created, never written.  A path that is not a regular file, an empty
 * file, a file that is not SQLite, another program's database and a newer
 * schema are input errors (NX_EINVAL) naming the path.  A ledger of an
 * older schema is copied into memory and migrated there: *db is then that
 * copy, and the file is left as it was. */
nx_status ledger_open_read(const char *path, struct sqlite3 **db, nx_err *err);

/* The clock of the ledger: seconds since the epoch, UTC.  The environment
 * variable PARITY_LEDGER_CLOCK ("2026-01-31T12:00:00Z" or seconds since the
 * epoch) sets the time at the first call of the process; the clock then
 * advances with the real one.  For tests and replays. */
nx_status ledger_now(int64_t *secs, nx_err *err);
/* "2026-01-31T12:00:00Z" <-> seconds since the epoch. */
void ledger_format_utc(int64_t secs, char *buf, size_t len);
int ledger_parse_utc(const char *s, int64_t *secs);
/* "3d 04:05:06" for a duration in seconds. */
void ledger_format_duration(int64_t secs, char *buf, size_t len);

/* The git commit of dir and whether dir's part of the work tree differs
 * from it: commit "" and *dirty -1 when dir is not in git (or git is
 * missing). */
void ledger_git_state(const char *dir, char *commit, size_t len, int *dirty);

/* Tier 1 summary of a result: "pass", "fail", "skip" (every check skipped)
 * or "error" (an input error). */
const char *ledger_tier1(const camp_result *res);
/* The basis of a passing Tier 2: "bits", "declared" (the declared
 * tolerance), "derived" (the bound from the trees), "default" (the last
 * resort), or NULL when Tier 2 did not pass. tol: the declared tolerance
 * of the point, or NULL. */
const char *ledger_tier2_basis(const camp_result *res, const fam_tolerance *tol);

#endif
