/* shard.c: shards of a campaign and merging their ledgers (shard.h). */
#include "shard.h"
#include "famdesc.h"
#include "campaign.h"
#include "ledger_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

nx_status shard_parse(const char *spec, int *index, int *count, nx_err *err)
{
    int i, n, len = 0;
    if (!spec || sscanf(spec, "%d/%d%n", &i, &n, &len) != 2 || spec[len] || !isdigit((unsigned char)spec[0]) ||
        n < 1 || n > 65536 || i < 1 || i > n)
        return nx_err_set(err, NX_EINVAL, "--shard: '%s' is not i/N with 1 <= i <= N", spec ? spec : "");
    *index = i;
    *count = n;
    return NX_OK;
}

double shard_cost(const char *preset, const char *id)
{
    char fam[128];
    snprintf(fam, sizeof fam, "%s", id);
    char *dot = strchr(fam, '.');
    if (dot)
        *dot = 0;
    const char *shape = fam_preset_shape(preset, fam);
    double c = 1;
    for (const char *p = shape; p && *p;) {
        const char *eq = strchr(p, '=');
        if (!eq)
            break;
        c *= strtod(eq + 1, NULL) > 0 ? strtod(eq + 1, NULL) : 1;
        const char *comma = strchr(eq, ',');
        p = comma ? comma + 1 : eq + strlen(eq);
    }
    return c;
}

typedef struct shard_item {
    size_t k;
    double cost;
    const char *id;
} shard_item;

static int by_cost(const void *a, const void *b)
{
    const shard_item *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return strcmp(x->id, y->id);
}

nx_status shard_select(char *const *ids, size_t n, const char *preset, int index, int count, unsigned char *keep,
                       nx_err *err)
{
    shard_item *it = calloc(n ? n : 1, sizeof *it);
    double *load = calloc((size_t)count, sizeof *load);
    if (!it || !load) {
        free(it);
        free(load);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (keep[k])
            it[m++] = (shard_item){k, shard_cost(preset, ids[k]), ids[k]};
    qsort(it, m, sizeof *it, by_cost);
    for (size_t j = 0; j < m; j++) {
        int best = 0;
        for (int s = 1; s < count; s++)
            if (load[s] < load[best])
                best = s;
        load[best] += it[j].cost;
        keep[it[j].k] = best == index - 1;
    }
    free(it);
    free(load);
    return NX_OK;
}

/* --- merge ------------------------------------------------------------------------ */

#define RUN_COLS                                                                                                      \
    "uuid, started_utc, started_s, ended_utc, ended_s, complete, exit_status, class, model, shapes, seed, dist,"     \
    " engine, backend, repeats, threads, harness_version, registry_dir, registry_commit, registry_dirty,"            \
    " kernels_dir, kernels_commit, kernels_dirty, host, pid, traces_dir, against, shard, points, points_failed,"     \
    " exit_lines, residual_count, residual_loc, residual_copy_points, residual_single_class, coverage_c1,"         \
    " coverage_c16, coverage_c128, coverage_c1_measured, coverage_c16_measured, coverage_c128_measured, source, device,"  \
    " chain, reference, class_files"
#define POINT_COLS                                                                                                    \
    "seq, id, family, point, shape, hash, kernel, legacy_kernel, error, tier1, tier2, tier2_basis,"                  \
    " declared_tolerance, bit_exact, max_ulp, bits_differ, t_gen, t_run, t_ref, t_cmp, out_digest, in_digest"
#define CHECK_COLS "point_id, name, verdict, negative, detail"
#define TRACE_COLS "point_id, path"

static nx_status exec1(sqlite3 *db, const char *path, const char *sql, nx_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        nx_status st = nx_err_set(err, NX_EIO, "ledger %s: %s", path, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return st;
    }
    return NX_OK;
}

static nx_status merge_one(sqlite3 *db, const char *out, const char *in, ledger_merge_stats *ms, nx_err *err)
{
    /* the input read only (an older one migrated in a copy in memory), and
     * copied into a database in memory attached as src: nothing is written
     * to it, and a read-only input merges */
    sqlite3 *src;
    nx_status st = ledger_open_read(in, &src, err);
    if (st)
        return st;
    sqlite3_stmt *s = NULL, *ins = NULL;
    int rc;
    if ((st = exec1(db, out, "ATTACH DATABASE ':memory:' AS src", err))) {
        sqlite3_close(src);
        return st;
    }
    sqlite3_backup *bk = sqlite3_backup_init(db, "src", src, "main");
    rc = bk ? sqlite3_backup_step(bk, -1) : SQLITE_ERROR;
    if (!bk || sqlite3_backup_finish(bk) != SQLITE_OK || rc != SQLITE_DONE) {
        st = ledger_sql_error(db, in, "cannot copy the input", err);
        sqlite3_close(src);
        goto detach;
    }
    sqlite3_close(src);
    if ((st = exec1(db, out, "BEGIN IMMEDIATE", err)))
        goto detach;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM src.run WHERE complete = 0", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        ms->runs_incomplete += (size_t)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (sqlite3_prepare_v2(db,
                           "SELECT r.id, EXISTS (SELECT 1 FROM main.run m WHERE m.uuid = r.uuid) FROM src.run r"
                           " WHERE r.complete = 1 ORDER BY r.started_s, r.id",
                           -1, &s, NULL) != SQLITE_OK) {
        st = ledger_sql_error(db, in, "reading runs", err);
        goto rollback;
    }
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        sqlite3_int64 old = sqlite3_column_int64(s, 0);
        if (sqlite3_column_int(s, 1)) {
            ms->runs_present++;
            continue;
        }
        static const char *const copy[] = {
            "INSERT INTO main.run(" RUN_COLS ") SELECT " RUN_COLS " FROM src.run WHERE id = ?1",
            "INSERT INTO main.point(run_id, " POINT_COLS ") SELECT ?2, " POINT_COLS " FROM src.point WHERE run_id = ?1",
            "INSERT INTO main.check_result(run_id, " CHECK_COLS ") SELECT ?2, " CHECK_COLS
            " FROM src.check_result WHERE run_id = ?1",
            "INSERT INTO main.trace(run_id, " TRACE_COLS ") SELECT ?2, " TRACE_COLS " FROM src.trace WHERE run_id = ?1",
        };
        sqlite3_int64 new_id = 0;
        for (int c = 0; c < 4; c++) {
            if (sqlite3_prepare_v2(db, copy[c], -1, &ins, NULL) != SQLITE_OK) {
                st = ledger_sql_error(db, out, "copying a run", err);
                break;
            }
            sqlite3_bind_int64(ins, 1, old);
            if (c)
                sqlite3_bind_int64(ins, 2, new_id);
            rc = sqlite3_step(ins);
            sqlite3_finalize(ins);
            if (rc != SQLITE_DONE) {
                st = ledger_sql_error(db, out, "copying a run", err);
                break;
            }
            if (c == 0)
                new_id = sqlite3_last_insert_rowid(db);
            if (c == 1)
                ms->points_added += (size_t)sqlite3_changes(db);
        }
        if (st)
            break;
        ms->runs_added++;
    }
    sqlite3_finalize(s);
    if (!st && rc != SQLITE_DONE)
        st = ledger_sql_error(db, in, "reading runs", err);
    if (st)
        goto rollback;
    /* the microbenchmark records: by id, the first copy kept */
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM src.measurement r"
                           " WHERE EXISTS (SELECT 1 FROM main.measurement m WHERE m.id = r.id)",
                           -1, &s, NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_finalize(s);
        st = ledger_sql_error(db, in, "reading measurements", err);
        goto rollback;
    }
    ms->measurements_present += (size_t)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if ((st = exec1(db, out, "INSERT OR IGNORE INTO main.measurement SELECT * FROM src.measurement", err)))
        goto rollback;
    ms->measurements_added += (size_t)sqlite3_changes(db);
    st = exec1(db, out, "COMMIT", err);
    if (!st)
        goto detach;
rollback:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
detach:
    sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
    return st;
}

nx_status ledger_merge(const char *out, char *const *ins, size_t nin, ledger_merge_stats *ms, nx_err *err)
{
    memset(ms, 0, sizeof *ms);
    struct stat sa, sb;
    for (size_t k = 0; k < nin; k++) {
        if (stat(ins[k], &sa) != 0)
            return nx_err_set(err, NX_EIO, "ledger %s: %s", ins[k], strerror(errno));
        if (stat(out, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
            return nx_err_set(err, NX_EINVAL, "ledger %s: is the output itself", ins[k]);
    }
    /* every input is opened, and so checked, before OUT is: a foreign or
     * newer ledger among them is said before OUT is created */
    nx_status st;
    for (size_t k = 0; k < nin; k++) {
        sqlite3 *src;
        if ((st = ledger_open_read(ins[k], &src, err)))
            return st;
        sqlite3_close(src);
    }
    int made = stat(out, &sb) != 0;
    sqlite3 *db;
    if ((st = ledger_open_db(out, 1, &db, err)))
        return st;
    for (size_t k = 0; k < nin && !st; k++)
        st = merge_one(db, out, ins[k], ms, err);
    sqlite3_close(db);
    if (st && made) /* an OUT this merge created and could not fill goes */
        unlink(out);
    return st;
}
