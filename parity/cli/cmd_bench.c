/* cmd_bench.c: `parity bench`, microbenchmarks of a family point on a
 * class backend (parity/lkb/bench.h, docs/lkb.md): one measurement record
 * per row count, added to the registry's MEASUREMENTS.toml and the ledger. */
#include "bench.h"
#include "famdesc.h"
#include "cli.h"
#include "ledger.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char bench_usage[] =
    "usage: parity bench --class C --point FAMILY.POINT --rows R [R ...] [--kernels DIR]\n"
    "                    [--shapes 8b-layer|small | --shape K=V,...] [--warmup N] [--repeats N]\n"
    "                    [--threads N] [--baseline-class D] [--seed S] [--ledger FILE | --no-ledger]\n"
    "                    [--no-record]\n"
    "\n"
    "Times the point's kernel on class C's backend at each row count R (the\n"
    "preset's shape with its batch dimension set to R): --warmup runs, then\n"
    "--repeats timed runs, each followed by one run of the baseline (the point's\n"
    "legacy kernel, or with --baseline-class D the point as class D runs it);\n"
    "the median, the fastest and slowest run, and the noise band (slowest -\n"
    "fastest).  The kernel beat its baseline beyond the noise band when its\n"
    "slowest run is faster than the baseline's fastest.  Energy per run comes\n"
    "from Linux powercap (RAPL) on the cpu backend and NVML on the cuda backend,\n"
    "else it is \"not measured: no energy counter readable here\".\n"
    "\n"
    "Each row count gives one record, CLASS.FAMILY.POINT.rR.YYYYMMDDTHHMMSSZ,\n"
    "appended to DIR/<class>/MEASUREMENTS.toml (the ids evidence rows name) and\n"
    "to the ledger's measurement table; its (class, point, rows) joins the\n"
    "family's evidence envelope (`parity lkb`).\n"
    "\n"
    "options:\n"
    "  --class C            the class (required); its chain picks the backend\n"
    "  --point F.P          the family point (required)\n"
    "  --rows R [R ...]     row counts (required), each >= 1\n"
    "  --kernels DIR        the registry (default kernels)\n"
    "  --shapes P           shape preset: 8b-layer (default) or small\n"
    "  --shape K=V,...      a whole shape instead (one --rows value, recorded as given)\n"
    "  --warmup N           untimed runs first (default 1)\n"
    "  --repeats N          timed runs (default 5, at least 2)\n"
    "  --threads N          backend threads (default 0: all)\n"
    "  --baseline-class D   the baseline is class D's run of the point\n"
    "  --seed S             input seed (default 1)\n"
    "  --ledger FILE        the ledger (default out/ledger.sqlite); --no-ledger: none\n"
    "  --no-record          print only: no MEASUREMENTS.toml record, no ledger row\n"
    "\n"
    "exit status: 0 measured (and recorded); 2 usage or input error (nothing\n"
    "written); 3 internal error.\n";

int cmd_bench(int argc, char **argv)
{
    const char *cls = NULL, *point = NULL, *dir = "kernels", *preset = "8b-layer", *shape = NULL, *ledger =
        "out/ledger.sqlite", *bclass = NULL, *v = NULL;
    long long rows[64];
    size_t nrows = 0;
    long warmup = 1, repeats = 5, threads = 0, seed = 1;
    int bad = 0, no_ledger = 0, no_record = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(bench_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--no-ledger")) {
            no_ledger = 1;
            continue;
        }
        if (cli_flag(argv, i, "--no-record")) {
            no_record = 1;
            continue;
        }
        if (cli_flag(argv, i, "--rows")) {
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                long r = cli_long("bench", "--rows", argv[++i], 1, 1L << 30);
                if (r < 0)
                    return EXIT_INPUT;
                if (nrows == 64) {
                    cli_error("bench", "--rows: at most 64 row counts");
                    return EXIT_INPUT;
                }
                rows[nrows++] = r;
            }
            continue;
        }
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--point", &point, &bad) ||
            cli_opt(argc, argv, &i, "--kernels", &dir, &bad) || cli_opt(argc, argv, &i, "--shapes", &preset, &bad) ||
            cli_opt(argc, argv, &i, "--shape", &shape, &bad) || cli_opt(argc, argv, &i, "--ledger", &ledger, &bad) ||
            cli_opt(argc, argv, &i, "--baseline-class", &bclass, &bad))
            continue;
        if (cli_opt(argc, argv, &i, "--warmup", &v, &bad)) {
            if (bad || (warmup = cli_long("bench", "--warmup", v, 0, 1000)) < 0)
                return EXIT_INPUT;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--repeats", &v, &bad)) {
            if (bad || (repeats = cli_long("bench", "--repeats", v, 2, 100000)) < 0)
                return EXIT_INPUT;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--threads", &v, &bad)) {
            if (bad || (threads = cli_long("bench", "--threads", v, 0, 4096)) < 0)
                return EXIT_INPUT;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--seed", &v, &bad)) {
            if (bad || (seed = cli_long("bench", "--seed", v, 0, 0x7fffffffL)) < 0)
                return EXIT_INPUT;
            continue;
        }
        cli_error("bench", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls || !point || !nrows) {
        cli_error("bench", "needs --class C, --point FAMILY.POINT and --rows R (see --help)");
        return EXIT_INPUT;
    }
    if (shape && nrows != 1) {
        cli_error("bench", "--shape gives one whole shape: give one --rows value with it");
        return EXIT_INPUT;
    }
    if (!fam_preset_known(preset)) {
        cli_error("bench", "--shapes: unknown preset '%s' (expected 8b-layer or small)", preset);
        return EXIT_INPUT;
    }
    nx_err err = {0};
    reg_registry *r = NULL;
    if (reg_load(dir, &r, &err) != NX_OK)
        return cli_fail("bench", &err);
    int rc = EXIT_PASS;
    const dev_backend *be = camp_class_backend(r, cls);
    char why[256] = "";
    if (!be) {
        cli_error("bench", "--class %s: no backend runs this class (its chain reaches neither cpu nor an sm* class)",
                  cls);
        reg_free(r);
        return EXIT_INPUT;
    }
    if (!dev_available(be, why, sizeof why)) {
        cli_error("bench", "--class %s: the %s backend cannot run here: %s", cls, be->name, why);
        reg_free(r);
        return EXIT_INPUT;
    }
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s/%s/MEASUREMENTS.toml", dir, cls);
    const cli_file outs[] = {{"MEASUREMENTS.toml", no_record ? NULL : mpath},
                             {"--ledger", no_record || no_ledger || !cli_dir_exists(ledger) ? NULL : ledger}};
    if (cli_check_outputs("bench", outs, 2, NULL, 0) || cli_check_outside("bench", outs + 1, 1, "--kernels", dir)) {
        reg_free(r);
        return EXIT_INPUT;
    }
    /* an existing ledger is opened (and so checked) before the runs, not
     * found foreign after MEASUREMENTS.toml has been appended to */
    struct stat lsb;
    if (!no_record && !no_ledger && stat(ledger, &lsb) == 0) {
        sqlite3 *db;
        if (ledger_open_db(ledger, 0, &db, &err) != NX_OK) {
            reg_free(r);
            return cli_fail("bench", &err);
        }
        sqlite3_close(db);
    }
    /* the records it will add to are read (and so checked) before the
     * kernel is timed, not found bad after the measurement */
    if (!no_record) {
        lkb_records old = {0};
        nx_status rs = lkb_records_load(dir, cls, &old, &err);
        lkb_records_free(&old);
        if (rs) {
            reg_free(r);
            return cli_fail("bench", &err);
        }
    }
    lkb_bench_opts o = {be, preset, shape, (int)warmup, (int)repeats, (int)threads, bclass, (unsigned long long)seed};
    lkb_records recs = {0};
    if (!(recs.r = calloc(nrows, sizeof *recs.r))) {
        reg_free(r);
        cli_error("bench", "out of memory");
        return EXIT_INTERNAL;
    }
    /* a point the class cannot see is said before any progress line */
    {
        char **ids;
        size_t nid, found = 0;
        if (reg_list_points(r, cls, &ids, &nid, &err) != NX_OK) {
            free(recs.r);
            reg_free(r);
            return cli_fail("bench", &err);
        }
        for (size_t i = 0; i < nid; i++) {
            found |= strcmp(ids[i], point) == 0;
            free(ids[i]);
        }
        free(ids);
        if (!found) {
            /* the registry's own words (the points the family has there) */
            fam_spec spec;
            if (reg_resolve(r, cls, point, NULL, &spec, &err) == NX_OK) {
                fam_spec_free(&spec);
                nx_err_set(&err, NX_EINVAL, "class '%s' has no point '%s' (parity registry list --class %s)", cls,
                           point, cls);
            }
            free(recs.r);
            reg_free(r);
            return cli_fail("bench", &err);
        }
    }
    for (size_t i = 0; i < nrows && rc == EXIT_PASS; i++) {
        fprintf(stderr, "bench: %s %s rows %lld ...\n", cls, point, rows[i]);
        nx_status st = lkb_bench(r, cls, point, rows[i], &o, &recs.r[recs.n], &err);
        recs.n++; /* a failed record holds nothing or what lkb_records_free frees */
        if (st != NX_OK)
            rc = cli_fail("bench", &err);
    }
    if (rc == EXIT_PASS && !no_record && lkb_records_append(dir, cls, recs.r, recs.n, &err) != NX_OK)
        rc = cli_fail("bench", &err);
    char commit[64] = "";
    int dirty;
    if (rc == EXIT_PASS && !no_record && !no_ledger) {
        ledger_git_state(dir, commit, sizeof commit, &dirty);
        for (size_t i = 0; i < recs.n && rc == EXIT_PASS; i++)
            if (lkb_record_ledger(ledger, &recs.r[i], commit, &err) != NX_OK)
                rc = cli_fail("bench", &err);
    }
    for (size_t i = 0; i < recs.n && rc == EXIT_PASS; i++) {
        const lkb_record *x = &recs.r[i];
        printf("%s %s rows %lld (%s): median %.6g s, fastest %.6g s, slowest %.6g s, noise band %.6g s over %d runs\n",
               cls, point, x->rows, x->shape, x->median_s, x->min_s, x->max_s, x->band_s, x->repeats);
        if (x->has_baseline)
            printf("  baseline %s: median %.6g s, fastest %.6g s, slowest %.6g s: %s\n", x->baseline, x->b_median_s,
                   x->b_min_s, x->b_max_s,
                   lkb_record_beats_speed(x) ? "faster beyond the noise band"
                   : x->b_max_s < x->min_s  ? "slower beyond the noise band"
                                            : "within the noise band");
        else
            printf("  baseline: none (no legacy kernel of the point on this backend; --baseline-class D names one)\n");
        if (x->has_energy)
            printf("  energy (%s): median %.6g J per run%s\n", x->energy_source, x->e_j,
                   x->has_b_energy ? (lkb_record_beats_energy(x) ? ", below the baseline's beyond the noise band"
                                                                 : ", not below the baseline's beyond the noise band")
                                   : "");
        else
            printf("  energy: %s\n", x->energy_source);
        if (no_record)
            printf("  not recorded (--no-record)\n");
        else
            printf("  record %s (%s%s%s)\n", x->id, mpath, no_ledger ? "" : ", ledger ", no_ledger ? "" : ledger);
    }
    lkb_records_free(&recs);
    reg_free(r);
    return rc;
}
