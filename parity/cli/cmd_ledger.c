/* cmd_ledger.c: `parity ledger merge|runs`: shard ledgers merged into one,
 * and the runs of a ledger listed (parity/ledger/, docs/ledger.md). */
#include "cli.h"
#include "ledger.h"
#include "shard.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ledger_usage[] =
    "usage: parity ledger merge --out OUT IN...\n"
    "       parity ledger runs [--ledger FILE] [--class C]\n"
    "\n"
    "merge: adds every complete run of the ledgers IN (e.g. the ledgers of the\n"
    "shards of one campaign, `parity campaign --shard i/N`) to OUT, created when\n"
    "missing, each with its points, checks and traces.  A run already in OUT\n"
    "(the same run id, its uuid) is skipped, so merging again changes nothing;\n"
    "incomplete runs are not merged, and are counted.\n"
    "\n"
    "runs: one line per run: id, start, class, model, shapes, shard, points,\n"
    "failed, exit status, source (campaign, or check: traces recorded by\n"
    "`parity check --ledger`), complete or not (default ledger out/ledger.sqlite).\n"
    "\n"
    "exit status: 0 done; 2 usage or input error (a missing or foreign ledger,\n"
    "a newer schema).\n";

static int merge(int argc, char **argv)
{
    const char *out = NULL;
    int bad = 0;
    char **ins = calloc((size_t)argc, sizeof *ins);
    size_t nin = 0;
    if (!ins)
        return EXIT_INTERNAL;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(ledger_usage, stdout);
            free(ins);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--out", &out, &bad))
            continue;
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("ledger merge", "unknown argument '%s' (see --help)", argv[i]);
            free(ins);
            return EXIT_INPUT;
        }
        ins[nin++] = argv[i];
    }
    if (bad || !out || !nin) {
        if (!bad)
            cli_error("ledger merge", "needs --out OUT and at least one input ledger (see --help)");
        free(ins);
        return EXIT_INPUT;
    }
    cli_file *fins = calloc(nin, sizeof *fins);
    for (size_t k = 0; fins && k < nin; k++)
        fins[k] = (cli_file){"IN", ins[k]};
    const cli_file outs[] = {{"--out", cli_dir_exists(out) ? out : NULL}}; /* made with its directory */
    int oom = !fins, alias = oom || cli_check_outputs("ledger merge", outs, 1, fins, nin);
    free(fins);
    if (alias) {
        free(ins);
        return oom ? EXIT_INTERNAL : EXIT_INPUT;
    }
    nx_err err = {0};
    ledger_merge_stats ms;
    nx_status st = ledger_merge(out, ins, nin, &ms, &err);
    free(ins);
    if (st)
        return cli_fail("ledger merge", &err);
    printf("merged into %s: %zu run(s) added (%zu point(s)), %zu already present, %zu incomplete not merged;"
           " %zu measurement(s) added, %zu already present\n",
           out, ms.runs_added, ms.points_added, ms.runs_present, ms.runs_incomplete, ms.measurements_added,
           ms.measurements_present);
    return EXIT_PASS;
}

static int runs(int argc, char **argv)
{
    const char *path = "out/ledger.sqlite", *cls = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(ledger_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--ledger", &path, &bad) || cli_opt(argc, argv, &i, "--class", &cls, &bad))
            continue;
        cli_error("ledger runs", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    nx_err err = {0};
    sqlite3 *db;
    if (ledger_open_read(path, &db, &err) != NX_OK)
        return cli_fail("ledger runs", &err);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, started_utc, class, ifnull(model, '-'), shapes, ifnull(shard, '-'),"
                           " ifnull(points, 0), ifnull(points_failed, 0), ifnull(exit_status, -1), complete,"
                           " ifnull(source, 'campaign') FROM run WHERE ?1 IS NULL OR class = ?1 ORDER BY started_s, id",
                           -1, &s, NULL) != SQLITE_OK) {
        cli_error("ledger runs", "ledger %s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return EXIT_INPUT;
    }
    if (cls)
        sqlite3_bind_text(s, 1, cls, -1, SQLITE_STATIC);
    printf("%5s %-20s %-12s %-16s %-9s %-7s %6s %6s %4s %-8s %s\n", "run", "started", "class", "model", "shapes",
           "shard", "points", "failed", "exit", "source", "state");
    while (sqlite3_step(s) == SQLITE_ROW) {
        int complete = sqlite3_column_int(s, 9);
        char ex[8] = "-";
        if (complete)
            snprintf(ex, sizeof ex, "%d", sqlite3_column_int(s, 8));
        printf("%5lld %-20s %-12s %-16s %-9s %-7s %6d %6d %4s %-8s %s\n", (long long)sqlite3_column_int64(s, 0),
               (const char *)sqlite3_column_text(s, 1), (const char *)sqlite3_column_text(s, 2),
               (const char *)sqlite3_column_text(s, 3), (const char *)sqlite3_column_text(s, 4),
               (const char *)sqlite3_column_text(s, 5), sqlite3_column_int(s, 6), sqlite3_column_int(s, 7), ex,
               (const char *)sqlite3_column_text(s, 10), complete ? "complete" : "incomplete");
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return EXIT_PASS;
}

int cmd_ledger(int argc, char **argv)
{
    if (argc < 2) {
        fputs(ledger_usage, stderr);
        return EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(ledger_usage, stdout);
        return EXIT_PASS;
    }
    if (!strcmp(argv[1], "merge"))
        return merge(argc - 1, argv + 1);
    if (!strcmp(argv[1], "runs"))
        return runs(argc - 1, argv + 1);
    cli_error("ledger", "unknown subcommand '%s' (expected merge or runs; see --help)", argv[1]);
    return EXIT_INPUT;
}
