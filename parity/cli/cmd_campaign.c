/* cmd_campaign.c: `parity campaign`, the main job: every family point of a
 * class, resolved from the registry, run on the class backend and checked
 * at Tier 1 and Tier 2 against the exact reference. */
#define _DEFAULT_SOURCE 1 /* realpath */
#include "cli.h"
#include "ext_backend.h"
#include "famdesc.h"
#include "cli_html.h"
#include "campaign.h"
#include "ledger.h"
#include "lkb.h"
#include "model_shapes.h"
#include "shard.h"
#include "refimpl.h"
#include "report.h"
#include "verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The --traces folder's lock file, DIR/.parity.lock; "" when too long. */
static void traces_lock_path(const char *dir, char *buf, size_t len)
{
    if (snprintf(buf, len, "%s/%s", dir, CLI_LOCK_NAME) >= (int)len)
        buf[0] = 0;
}

/* Takes back what the run made of its --traces folder (the lock file, and
 * the folder itself, then empty) when it ends as bad input before writing a
 * trace: bad input writes nothing. */
static void unmake_traces(const char *dir, int made_dir, int made_lock)
{
    char lock[4096];
    traces_lock_path(dir, lock, sizeof lock);
    if (made_lock && lock[0])
        unlink(lock);
    if (made_dir)
        rmdir(dir);
}

static const char campaign_usage[] =
    "usage: parity campaign --class C [--kernels DIR] [--families F1,F2,...]\n"
    "                       [--shapes small|8b-layer] [--json FILE] [--junit FILE]\n"
    "                       [--traces DIR] [--repeats N] [--threads N] [--seed S]\n"
    "                       [--dist normal|uniform|int|adversarial] [--engine fast|mpfr]\n"
    "                       [--against D [--against-traces DIR]] [--quiet]\n"
    "                       [--model M] [--ledger FILE | --no-ledger] [--kernel-src DIR]\n"
    "                       [--shard i/N] [--html FILE] [--allow-lint-errors] [--no-power]\n"
    "\n"
    "Runs every family point visible from class C in the registry (default\n"
    "kernels/) on the class's backend and checks it:\n"
    "  Tier 1, bit for bit on the device: determinism over --repeats runs, eager\n"
    "  vs graphed (cpu: one thread vs --threads), the new vs the legacy kernel of\n"
    "  a point, and row invariance (the last row alone, the batch reversed, the\n"
    "  first half of the batch).  Negative controls (points whose param\n"
    "  negative_control names a check) must fail that check.\n"
    "  Tier 2 against the exact reference of the point (refimpl/ over numerics/):\n"
    "  bit-exact where the device runs the reference's numerics point, else within\n"
    "  the point's declared tolerance, else within the bound derived from its\n"
    "  tree (docs/tolerance.md), else torch.testing's default as the last resort;\n"
    "  each said as such.\n"
    "  Power (docs/power.md): each point that is no negative control also runs\n"
    "  on inputs chosen to expose its reductions (awkward shapes, fp32 where the\n"
    "  kernel takes it, several splits, order probes), each run against the\n"
    "  exact reference of the same variant: a kernel that realises another\n"
    "  point fails Tier 2, naming the reduction and the point it realises; the\n"
    "  neighbouring points the inputs could not tell apart are named.  --no-power\n"
    "  leaves them out.\n"
    "\n"
    "  Cross-class parity (--against D): each point's graphed run on C against\n"
    "  class D's at the same point, on the same inputs: where the registry says\n"
    "  the two points are the same (equal hashes, no atomic), bit for bit: \"bit\n"
    "  parity between C and D at F.P: yes\", or where the bits differ (a failure);\n"
    "  where the points differ, what `registry compare` says differs (a declared\n"
    "  difference, not a failure).\n"
    "\n"
    "The run is recorded in the campaign ledger (--ledger, docs/ledger.md), and\n"
    "the campaign ends with two lines: the points promoted into the LKB since\n"
    "the class's previous recorded campaign (new, or with another hash), and\n"
    "the LKB residual delta against that campaign (`parity lkb`, docs/lkb.md; with\n"
    "--model M and kernels/models/M/STEP.toml, the step's coverage is recorded too).\n"
    "\n"
    "Inputs are generated from --seed (counter-based Philox: identical on every\n"
    "class).  Shape presets: small (seconds) and 8b-layer (one decoder layer of an\n"
    "8B-class model: hidden 4096, intermediate 14336, 32/8 heads of dim 128,\n"
    "context 4096, batch 16).\n"
    "\n"
    "A registry that `parity registry lint` refuses is refused (exit 2, naming\n"
    "its first error); --allow-lint-errors runs it anyway and says so.\n"
    "\n"
    "options:\n"
    "  --class C        the hardware class (required): cpu, sm80, sm89, sm90, ...\n"
    "  --kernels DIR    the registry (default: kernels)\n"
    "  --families LIST  only these families (comma-separated)\n"
    "  --shapes P       shape preset (default: small)\n"
    "  --json FILE      write the full report as JSON\n"
    "  --junit FILE     write one JUnit testcase per point and check\n"
    "  --html FILE      write a report to look at: the verdict table, each\n"
    "                   point's Tier 2 ulp histogram, and a heat map of the\n"
    "                   elements whose bits differ from the reference\n"
    "                   (docs/reports.md)\n"
    "  --traces DIR     write a trace (safetensors) of every run into DIR\n"
    "  --repeats N      runs compared for determinism (default 3)\n"
    "  --threads N      threads of graphed runs and of the reference (default: all)\n"
    "  --seed S         input seed (default 1)\n"
    "  --dist D         input distribution (default normal)\n"
    "  --engine E       reference engine (default: fast when built, else mpfr)\n"
    "  --against D      also compare every point with class D's run of it\n"
    "  --against-traces DIR  D's runs are its traces D.FAMILY.POINT.graphed-0\n"
    "                   in DIR (as --traces writes them); without it D's\n"
    "                   backend runs here\n"
    "  --quiet          no progress lines\n"
    "  --model M        a label for the model the campaign is for (a checkpoint\n"
    "                   name): recorded in the ledger, `parity ttbp --model M`\n"
    "  --ledger FILE    the campaign ledger (SQLite, docs/ledger.md) this run is\n"
    "                   recorded in (default out/ledger.sqlite); the run is\n"
    "                   recorded incomplete at the start and completed at the end\n"
    "  --no-ledger      record nothing\n"
    "  --kernel-src DIR where the kernels' sources are, for the git commit and\n"
    "                   dirty flag the ledger records (default: the backend's\n"
    "                   sources in this harness's tree)\n"
    "  --shard i/N      run only shard i of N: the points dealt to N shards,\n"
    "                   largest expected cost (shape size) first, each to the\n"
    "                   least loaded; the same split in every process.  Merge\n"
    "                   the shards' ledgers with `parity ledger merge`\n"
    "\n"
    "  --timeout S      (or --backend-timeout S) seconds an out-of-tree backend\n"
    "                   (docs/backends.md) may take over one request, instead of\n"
    "                   its class's timeout (default 120); past it the backend is\n"
    "                   killed and that point is a backend error\n"
    "\n"
    "exit status: 0 every check passed (a negative control failing as it must,\n"
    "and a declared cross-class difference, are passes); 1 a parity check failed\n"
    "(a Tier 1 or Tier 2 check, or bit parity with --against where it is\n"
    "expected); 2 usage or input error (a bad registry, class, option or\n"
    "--against trace, a ledger that cannot be opened or written); 3 an\n"
    "out-of-tree backend (docs/backends.md) failed at a point (it hung past\n"
    "--backend-timeout, died, broke the protocol or its kernel failed), or\n"
    "could not be started: that point is an error, every other point is run;\n"
    "a backend that cannot run here (no GPU, no OpenCL platform) is a skip,\n"
    "said as such, with exit 0.\n";

/* No list: every item; else the comma-separated list's membership test. */
static int in_list(const char *list, const char *item)
{
    return !list || vd_in_list(list, item);
}

/* The FAMILY of a FAMILY.POINT id, into buf. */
static const char *family_of(const char *id, char *buf, size_t len)
{
    snprintf(buf, len, "%s", id);
    char *dot = strchr(buf, '.');
    if (dot)
        *dot = 0;
    return buf;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_campaign(int argc, char **argv)
{
    const char *cls = NULL, *kdir = "kernels", *fams = NULL, *preset = "small", *json = NULL, *junit = NULL,
               *html = NULL, *traces = NULL, *rep_s = NULL, *thr_s = NULL, *seed_s = NULL, *dist_s = "normal", *eng_s = NULL,
               *against = NULL, *against_tr = NULL, *ledger_path = "out/ledger.sqlite", *model = NULL,
               *kernel_src = NULL, *shard_s = NULL;
    int bad = 0, quiet = 0, no_ledger = 0, allow_lint = 0, no_power = 0;
    unsigned char *in_shard = NULL;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(campaign_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--quiet") || cli_flag(argv, i, "-q")) {
            quiet = 1;
            continue;
        }
        if (cli_flag(argv, i, "--allow-lint-errors")) {
            allow_lint = 1;
            continue;
        }
        if (cli_flag(argv, i, "--no-power")) {
            no_power = 1;
            continue;
        }
        if (cli_flag(argv, i, "--no-ledger")) {
            no_ledger = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--ledger", &ledger_path, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--kernel-src", &kernel_src, &bad) ||
            cli_opt(argc, argv, &i, "--shard", &shard_s, &bad))
            continue;
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) ||
            cli_opt(argc, argv, &i, "--families", &fams, &bad) || cli_opt(argc, argv, &i, "--shapes", &preset, &bad) ||
            cli_opt(argc, argv, &i, "--json", &json, &bad) || cli_opt(argc, argv, &i, "--junit", &junit, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad) ||
            cli_opt(argc, argv, &i, "--traces", &traces, &bad) || cli_opt(argc, argv, &i, "--repeats", &rep_s, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &thr_s, &bad) || cli_opt(argc, argv, &i, "--seed", &seed_s, &bad) ||
            cli_opt(argc, argv, &i, "--dist", &dist_s, &bad) || cli_opt(argc, argv, &i, "--engine", &eng_s, &bad) ||
            cli_opt(argc, argv, &i, "--against", &against, &bad) ||
            cli_opt(argc, argv, &i, "--against-traces", &against_tr, &bad))
            continue;
        cli_error("campaign", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls) {
        cli_error("campaign", "needs --class C (see --help)");
        return EXIT_INPUT;
    }
    const char *mmodel = !strncmp(preset, "model:", 6) ? preset + 6 : NULL;
    if (!mmodel && !fam_preset_known(preset)) {
        cli_error("campaign", "--shapes: unknown preset '%s' (expected small, 8b-layer or model:M)", preset);
        return EXIT_INPUT;
    }
    if (mmodel && !model)
        model = mmodel; /* a campaign at a model's shapes is that model's */
    /* One output-path policy: no report over another, over the ledger it
     * appends to, or inside the registry it reads; --traces never over the
     * reference traces of --against-traces. */
    const cli_file outs[] = {{"--json", json}, {"--junit", junit}, {"--html", html},
                             {"--ledger", !no_ledger && cli_dir_exists(ledger_path) ? ledger_path : NULL}};
    if (cli_check_outputs("campaign", outs, 4, NULL, 0) || cli_check_outside("campaign", outs, 4, "--kernels", kdir))
        return EXIT_INPUT;
    /* the reports are no trace: not among those it writes, nor among the
     * reference traces it reads */
    if ((traces && cli_check_outside("campaign", outs, 3, "--traces", traces)) ||
        (against && against_tr && cli_check_outside("campaign", outs, 3, "--against-traces", against_tr)))
        return EXIT_INPUT;
    if (traces && against_tr) {
        char *a = realpath(traces, NULL), *b = realpath(against_tr, NULL);
        int same = a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
        if (same) {
            cli_error("campaign", "--traces %s is the folder of --against-traces %s: this campaign's traces would "
                      "replace the reference traces it compares with (nothing written)", traces, against_tr);
            return EXIT_INPUT;
        }
    }
    camp_opts o = {0};
    camp_cache cache = {0};
    st_init(&cache.in);
    o.cache = &cache;
    o.power = !no_power;
    o.repeats = 3;
    o.seed = 1;
    o.engine = (int)ref_engine_default();
    if (cli_run_opts("campaign", rep_s, thr_s, seed_s, dist_s, eng_s,
                     (cli_run_vals){&o.repeats, &o.threads, &o.dist, &o.engine, &o.seed}))
        return EXIT_INPUT;

    nx_err err = {0};
    reg_registry *reg;
    if (reg_load(kdir, &reg, &err) != NX_OK)
        return cli_fail("campaign", &err);
    char lint_said[1600];
    if (cli_refuse_lint("campaign", "--kernels", kdir, reg, allow_lint, lint_said, sizeof lint_said)) {
        reg_free(reg);
        return EXIT_INPUT;
    }
    char **ids = NULL;
    size_t nids = 0;
    if (reg_list_points(reg, cls, &ids, &nids, &err) != NX_OK) {
        reg_free(reg);
        return cli_fail("campaign", &err);
    }
    /* --shapes model:M: each point M's step lowers to on the class, at
     * every shape its ops have at C = 1, 16, 128 (capped where the
     * reference's cost forbids, said) */
    cli_mshape *ms = NULL;
    size_t nms = 0;
    if (mmodel && cli_model_shapes(reg, cls, mmodel, &ms, &nms, &err) != NX_OK) {
        nx_err_prefix(&err, "--shapes %s", preset);
        for (size_t i = 0; i < nids; i++)
            free(ids[i]);
        free(ids);
        reg_free(reg);
        return cli_fail("campaign", &err);
    }
    o.backend = camp_class_backend(reg, cls);
    char why[256] = "";
    int rc = EXIT_PASS;
    if (shard_s) {
        int si, sn;
        char fam[128];
        if (shard_parse(shard_s, &si, &sn, &err) != NX_OK || !(in_shard = calloc(nids ? nids : 1, 1))) {
            rc = in_shard || err.code ? cli_fail("campaign", &err) : EXIT_INTERNAL;
            goto done;
        }
        for (size_t i = 0; i < nids; i++)
            in_shard[i] = (unsigned char)in_list(fams, family_of(ids[i], fam, sizeof fam));
        if (shard_select(ids, nids, mmodel ? "8b-layer" : preset, si, sn, in_shard, &err) != NX_OK) {
            rc = cli_fail("campaign", &err);
            goto done;
        }
    }
    if (against_tr && !against) {
        cli_error("campaign", "--against-traces needs --against D (see --help)");
        rc = EXIT_INPUT;
        goto done;
    }
    if (against) {
        size_t nc = reg_class_count(reg);
        int known = 0;
        for (size_t i = 0; i < nc; i++)
            known |= strcmp(reg_class_name(reg, i), against) == 0;
        if (!known) {
            cli_error("campaign", "--against: class '%s' is not in the registry %s", against, kdir);
            rc = EXIT_INPUT;
            goto done;
        }
        struct stat sb;
        if (against_tr && (stat(against_tr, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
            cli_error("campaign", "--against-traces: '%s' is not a directory", against_tr);
            rc = EXIT_INPUT;
            goto done;
        }
        o.against = against;
        o.against_traces = against_tr;
        if (!against_tr) {
            char w2[256] = "";
            o.against_backend = camp_class_backend(reg, against);
            if (!o.against_backend || !dev_available(o.against_backend, w2, sizeof w2)) {
                cli_error("campaign", "--against %s: its backend cannot run here (%s); give its traces with "
                          "--against-traces DIR", against, o.against_backend ? w2 : "no backend in this build");
                rc = EXIT_INPUT;
                goto done;
            }
        }
    }
    if (!o.backend) {
        cli_error("campaign", "class '%s' has no backend in this build (known: cpu, and sm* classes through cuda)", cls);
        rc = EXIT_INPUT;
        goto done;
    }
    if (!dev_available(o.backend, why, sizeof why) && ext_broken(o.backend, why, sizeof why)) {
        /* a backend that cannot start or speak the protocol is an error, not
         * a device that is absent */
        cli_error("campaign", "class %s: the backend could not be started: %s", cls, why);
        rc = EXIT_INTERNAL;
        goto done;
    }
    if (!dev_available(o.backend, why, sizeof why)) {
        printf("parity campaign: class %s: skipped: %s (backend %s)\n", cls, why, o.backend->name);
        if (json || junit) {
            report_meta m = {cls, o.backend->name, NULL, preset, o.seed, dist_s, nx_engine_name((nx_engine_kind)o.engine),
                             o.repeats, o.threads, 0, against};
            if ((json && report_json(json, NULL, 0, &m, &err)) || (junit && report_junit(junit, NULL, 0, &m, &err)))
                rc = cli_fail("campaign", &err);
        }
        if (html) {
            char title[sizeof why + 128];
            snprintf(title, sizeof title, "parity campaign: class %.64s skipped: %s", cls, why);
            if (cli_html_campaign(html, NULL, 0, title, &err) != NX_OK)
                rc = cli_fail("campaign", &err);
        }
        goto done;
    }

    /* a filter that selects nothing is bad input: said before the traces
     * folder is created or the ledger records a run */
    size_t todo = 0, in_fams = 0;
    for (size_t i = 0; i < nids; i++) {
        char fam[128];
        int f = in_list(fams, family_of(ids[i], fam, sizeof fam));
        in_fams += f;
        size_t runs = 1;
        if (mmodel) {
            runs = 0;
            for (size_t k = 0; k < nms; k++)
                runs += !strcmp(ms[k].point, ids[i]);
        }
        todo += f && (!in_shard || in_shard[i]) ? runs : 0;
    }
    if (fams && todo == 0) {
        if (in_fams)
            cli_error("campaign", "--families: none of the %zu points of class %s in '%s' is dealt to --shard %s", in_fams,
                      cls, fams, shard_s);
        else
            cli_error("campaign", "--families: no point of class %s belongs to '%s'", cls, fams);
        rc = EXIT_INPUT;
        goto done;
    }

    /* created only now that the registry, the class and the backend are
     * known good: a campaign refused as bad input creates nothing */
    int made_traces = 0, made_lock = 0;
    if (traces) {
        if (mkdir(traces, 0777) == 0) {
            made_traces = 1;
        } else if (errno != EEXIST) {
            cli_error("campaign", "--traces: cannot create '%s': %s", traces, strerror(errno));
            rc = EXIT_INPUT;
            goto done;
        }
        /* one run at a time writes a traces folder: a second one fails
         * (exit 2) naming the holder's pid; the lock ends with the process */
        char lock[4096];
        traces_lock_path(traces, lock, sizeof lock);
        made_lock = lock[0] && access(lock, F_OK) != 0;
        int lk = cli_lock_dir("campaign", "--traces", traces);
        if (lk < 0) {
            unmake_traces(traces, made_traces, 0);
            rc = -lk;
            goto done;
        }
        o.traces = traces;
    }
    if (mmodel) {
        printf("shapes of model %s on class %s: %zu (point, shape) pair(s) from its step at C = 1, 16, 128\n", mmodel,
               cls, nms);
        for (size_t k = 0; k < nms; k++)
            printf("  %-28s %-36s %s\n", ms[k].point, ms[k].shape, ms[k].said);
    }
    camp_result *res = calloc(nids + nms + 1, sizeof *res);
    if (!res) {
        cli_error("campaign", "out of memory");
        rc = EXIT_INTERNAL;
        goto done;
    }
    size_t n = 0;
    ledger *lg = NULL;
    if (!no_ledger) {
        ledger_run_info li = {cls, model, preset, o.seed, dist_s, nx_engine_name((nx_engine_kind)o.engine),
                              o.backend->name, o.repeats, o.threads, kdir, kernel_src, traces, against, shard_s,
                              reg};
        if (ledger_start(ledger_path, &li, &lg, &err) != NX_OK) {
            if (traces) /* a ledger that cannot be opened is bad input */
                unmake_traces(traces, made_traces, made_lock);
            free(res);
            rc = cli_fail("campaign", &err);
            goto done;
        }
    }
    size_t diff_budget = CLI_HTML_HEAT_BUDGET; /* the --html page's heat maps */
    if (html)
        o.diff_budget = &diff_budget;
    double t0 = wall();
    int input_error = 0, backend_error = 0;
    for (size_t i = 0, k = 0; i < nids; k = 0, i++)
    for (;;) {
        char fam[128];
        if (!in_list(fams, family_of(ids[i], fam, sizeof fam)) || (in_shard && !in_shard[i]))
            break;
        const char *shape = mmodel ? NULL : fam_preset_shape(preset, fam);
        if (mmodel) { /* the next of this point's model shapes */
            while (k < nms && strcmp(ms[k].point, ids[i]) != 0)
                k++;
            if (k >= nms)
                break;
            shape = ms[k++].shape;
        }
        if (!quiet) {
            fprintf(stderr, "[%zu/%zu] %s %s ...", n + 1, todo, ids[i], shape ? shape : "");
            fflush(stderr);
        }
        double ts = wall();
        nx_err perr = {0};
        camp_run_point(reg, cls, ids[i], shape, &o, &res[n], &perr);
        if (ledger_point(lg, reg, &res[n], &err) != NX_OK) {
            cli_fail("campaign", &err);
            ledger_close(lg); /* the run stays incomplete; the exit status says so */
            lg = NULL;
            input_error = 1;
        }
        if (res[n].error)
            input_error = 1;
        backend_error |= res[n].backend_error;
        if (!quiet)
            fprintf(stderr, " %s (%.2f s)\n",
                    res[n].backend_error ? "backend error" : res[n].error ? "input error"
                    : camp_result_failed(&res[n]) ? "FAIL" : "ok", wall() - ts);
        n++;
        if (!mmodel)
            break;
    }
    char dev[1024] = "{}";
    if (dev_describe(o.backend, dev, sizeof dev, &err) != NX_OK)
        snprintf(dev, sizeof dev, "{}");
    report_meta m = {cls, o.backend->name, dev, preset, o.seed, dist_s, nx_engine_name((nx_engine_kind)o.engine),
                     o.repeats, o.threads, wall() - t0, against};
    report_table(stdout, res, n, &m);
    /* bad input is an input error, never a parity verdict; a campaign that
     * ends in one (exit 2) replaces no --json or --junit of an earlier run */
    if (rc == EXIT_PASS && input_error)
        rc = backend_error ? EXIT_INTERNAL : EXIT_INPUT;
    if (fams && n == 0) {
        cli_error("campaign", "--families: no point of class %s belongs to '%s'", cls, fams);
        rc = EXIT_INPUT;
    }
    if (rc != EXIT_INPUT && json && report_json(json, res, n, &m, &err) != NX_OK)
        rc = cli_fail("campaign", &err);
    if (rc != EXIT_INPUT && junit && report_junit(junit, res, n, &m, &err) != NX_OK)
        rc = cli_fail("campaign", &err);
    if (rc != EXIT_INPUT && html) {
        char title[160];
        snprintf(title, sizeof title, "parity campaign: class %s, shapes %s, seed %llu", cls, preset, o.seed);
        if (cli_html_campaign(html, res, n, title, &err) != NX_OK)
            rc = cli_fail("campaign", &err);
    }
    for (size_t i = 0; i < n && rc == EXIT_PASS; i++)
        if (camp_result_failed(&res[i]))
            rc = EXIT_PARITY;
    if (lg) { /* the LKB report's ledger fields and the residual delta line (docs/lkb.md) */
        ledger_lkb lf;
        lkb_ledger_fields(reg, cls, model, &lf);
        ledger_set_lkb(lg, &lf);
    }
    char *exit_lines = NULL;
    if (lg && ledger_finish(lg, rc, &exit_lines, &err) != NX_OK && cli_fail("campaign", &err) && rc == EXIT_PASS)
        rc = EXIT_INPUT;
    fputs(exit_lines ? exit_lines : no_ledger ? "Promoted into the LKB: not known (--no-ledger)\nLKB residual delta: "
                                                "not known (--no-ledger)\n" : "", stdout);
    if (*lint_said)
        printf("Registry lint: %s\n", lint_said);
    free(exit_lines);
    for (size_t i = 0; i < n; i++)
        camp_result_free(&res[i]);
    free(res);
done:
    free(ms);
    free(in_shard);
    camp_cache_free(&cache);
    for (size_t i = 0; i < nids; i++)
        free(ids[i]);
    free(ids);
    reg_free(reg);
    return rc;
}
