/* cmd_check.c: `parity check TRACE...`: device runs recorded as traces,
 * checked anywhere (no device needed): Tier 2 of every trace against the
 * exact reference of its point (or of --reference), Tier 1 across traces of
 * one point (determinism, eager vs graphed, new vs legacy, row invariance). */
#include "safetensors.h"
#include "cli.h"
#include "pa_core.h"
#include "cli_html.h"
#include "famdesc.h"
#include "html.h"
#include "ledger.h"
#include "lkb.h"
#include "refimpl.h"
#include "report.h"
#include "trace_check.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char check_usage[] =
    "usage: parity check TRACE... [--kernels DIR] [--reference FAMILY.POINT]\n"
    "                    [--reference-class C] [--engine fast|mpfr] [--json FILE]\n"
    "                    [--html FILE] [--ledger FILE --class C [--model M]]\n"
    "\n"
    "Checks traces (docs/traces.md) written by `parity campaign --traces`, by the\n"
    "CUDA backend or by a kernel's host code through the capture API.\n"
    "\n"
    "Tier 2, per trace: the reference of the trace's point (resolved in the\n"
    "registry for the trace's class and shape) is evaluated on the trace's inputs\n"
    "(its in.* tensors, or the seed that regenerates them) and compared with its\n"
    "outputs, row by row through the trace's batch layout.  Bit for bit when the\n"
    "trace's point and the reference point have the same numerics hash; else\n"
    "within the trace point's declared tolerance, else within the bound derived\n"
    "from both points' trees (docs/tolerance.md), else (the last resort, said as\n"
    "such) torch.testing's default for the output format; with what differs.\n"
    "Tier 1, across traces of one point, class and shape: runs that differ only in\n"
    "run index (determinism), in mode (eager vs graphed), in kernel (new vs\n"
    "legacy) or in batch layout (row invariance) must agree bit for bit on every\n"
    "logical row they share.  A trace that says it is a negative control\n"
    "(metadata negative_control, expected_fail) is judged as the campaign judged\n"
    "its run: by its declared tolerance at Tier 2, and the Tier 1 checks it is\n"
    "built to fail must differ: \"ok (negative control failed as expected)\".\n"
    "Cross-class parity, across traces of one point and shape on two classes\n"
    "with the same inputs: where the registry says the two points are the same\n"
    "(equal hashes, no atomic), bit for bit: \"bit parity between A and B at F.P:\n"
    "yes\", or where the bits first differ and how many; where the points differ,\n"
    "what `registry compare` says differs (a declared difference, not a failure).\n"
    "\n"
    "options:\n"
    "  --kernels DIR        the registry (default: kernels)\n"
    "  --reference F.P      check against this point instead of the trace's own\n"
    "  --reference-class C  the class of --reference (default: the trace's)\n"
    "  --engine E           reference engine (default: fast when built, else mpfr)\n"
    "  --json FILE          write the verdicts as JSON\n"
    "  --html FILE          write a report to look at: the verdict table and each\n"
    "                       trace's ulp histogram (docs/reports.md)\n"
    "  --ledger FILE        record the check as a run of class --class C in the\n"
    "                       campaign ledger (SQLite, docs/ledger.md), marked as from\n"
    "                       traces (source check, shapes traces): one point per\n"
    "                       FAMILY.POINT of the traces, with the verdicts, hash,\n"
    "                       kernel and shape a campaign would record, the traces'\n"
    "                       device, and the time of the check (PARITY_LEDGER_CLOCK\n"
    "                       sets it, as for campaign), in one transaction; so\n"
    "                       `parity ttbp --class C` counts it.  A failing check\n"
    "                       (exit 1) is recorded; an input error (exit 2) records\n"
    "                       nothing.  Needs --class C\n"
    "  --class C            with --ledger: the class recorded; C must be in the\n"
    "                       registry and every trace's class must be C (else exit\n"
    "                       2, naming the trace and both classes).  A trace whose\n"
    "                       numerics hash differs from C's point at the campaign\n"
    "                       shapes is recorded with its own hash, said on stderr\n"
    "  --model M            with --ledger: the model label of the run (`parity\n"
    "                       ttbp --model M`)\n"
    "\n"
    "A kernel's output saved as .npy (v1-v3; <f2 <f4 <f8, ml_dtypes names such as\n"
    "bfloat16 or float8_e4m3fn, or raw <u2 |u1 <V2 with --dtype) is checked as a\n"
    "trace built from options instead of metadata:\n"
    "  --npy FILE --point F.P --class C --shape S --seed N [--dist D]\n"
    "  [--dtype bf16|fp16|e4m3|...] [--name y] [--mode eager|graphed]\n"
    "  [--kernel K] [--batch rows=0..15]\n"
    "\n"
    "Any kernel's output, without a registry, against a numerics point's exact\n"
    "reference on `parity reduce`'s input (see `parity check --numerics --help`):\n"
    "  --numerics P --in IN.safetensors --out Y.safetensors|Y.npy\n"
    "\n"
    "exit status: 0 every check passed (a negative control failing as it must,\n"
    "and a declared cross-class difference, are passes); 1 a parity check failed\n"
    "(Tier 2, Tier 1, or bit parity between classes where it is expected); 2 usage or input\n"
    "error: a malformed or mismatched trace (unknown family or point, wrong\n"
    "shape or dtype, missing metadata), named with its file and field.\n";

/* --ledger, before any trace is checked: class C is in the registry, the
 * clock (PARITY_LEDGER_CLOCK) parses, and an existing ledger is one this
 * build can write (a newer schema, another program's database: exit 2 now,
 * nothing computed).  *started: the time of the check's start. */
static int ledger_ready(const reg_registry *reg, const char *kdir, const char *cls, const char *path, int64_t *started)
{
    int known = 0;
    for (size_t i = 0; i < reg_class_count(reg); i++)
        known |= strcmp(reg_class_name(reg, i), cls) == 0;
    if (!known) {
        cli_error("check", "--class: class '%s' is not in the registry %s", cls, kdir);
        return EXIT_INPUT;
    }
    nx_err err = {0};
    if (ledger_now(started, &err) != NX_OK)
        return cli_fail("check", &err);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        sqlite3 *db = NULL;
        if (ledger_open_read(path, &db, &err) != NX_OK)
            return cli_fail("check", &err);
        sqlite3_close(db);
    }
    return EXIT_PASS;
}

/* The device descriptions of the traces: the one they share, else a JSON
 * array of the distinct ones in the order they first appear (malloc'd). */
static char *traces_device(const tc_trace *cs, size_t n)
{
    json_t *all = json_array();
    size_t distinct = 0;
    const char *first = n ? cs[0].t.device.json : "{}";
    for (size_t i = 0; all && i < n; i++) {
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(cs[k].t.device.json, cs[i].t.device.json) == 0;
        if (seen)
            continue;
        distinct++;
        json_t *d = json_loads(cs[i].t.device.json, 0, NULL);
        json_array_append_new(all, d ? d : json_string(cs[i].t.device.json));
    }
    char *text = distinct <= 1 ? strdup(first ? first : "{}") : json_dumps(all, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(all);
    return text;
}

/* A point whose hash (resolved for the trace's shape) is not the hash of
 * class C's point at any campaign shape preset is recorded with the
 * trace's own hash, and said. */
static void say_hash(const reg_registry *reg, const char *cls, const camp_result *r, const char *trace)
{
    static const char *const presets[] = {"small", "8b-layer"};
    char fam[128], cur[80] = "";
    snprintf(fam, sizeof fam, "%s", r->id);
    char *dot = strchr(fam, '.');
    if (dot)
        *dot = 0;
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
        const char *shape = fam_preset_shape(presets[k], fam);
        fam_spec spec;
        memset(&spec, 0, sizeof spec);
        nx_err e;
        if (shape && reg_resolve(reg, cls, r->id, shape, &spec, &e) == NX_OK && spec.hash) {
            int same = strcmp(spec.hash, r->hash) == 0;
            if (!*cur)
                snprintf(cur, sizeof cur, "%.12s at --shapes %s", spec.hash, presets[k]);
            fam_spec_free(&spec);
            if (same)
                return;
        } else {
            fam_spec_free(&spec);
        }
    }
    if (*cur)
        fprintf(stderr, "parity check: %s: %s: numerics hash %.12s at its shape %s is not class %s's point in the "
                "registry (%s): recorded with the trace's own hash\n", trace, r->id, r->hash, r->shape, cls, cur);
}

/* The checked traces as a run of class C in the ledger at path (docs/
 * ledger.md "Traces checked into the ledger"): one transaction, the run
 * included, so an error leaves the file as it was (a ledger this call
 * created is removed).  Returns EXIT_PASS or the exit status of an error. */
static int ledger_record(const reg_registry *reg, const char *kdir, const char *cls, const char *model,
                         const char *path, int engine, const tc_trace *cs, size_t n, const tc_pair *pairs,
                         size_t npairs, int64_t started, int exit_status)
{
    nx_err err = {0};
    camp_result *res = NULL;
    size_t *mains = NULL, nres = 0;
    struct stat sb;
    int existed = stat(path, &sb) == 0;
    if (tc_points(cs, n, pairs, npairs, &res, &mains, &nres, &err) != NX_OK)
        return cli_fail("check", &err);
    for (size_t k = 0; k < nres; k++)
        say_hash(reg, cls, &res[k], cs[mains[k]].t.path);
    /* the traces' seed and distribution when they share them */
    int same_seed = n > 0 && cs[0].t.has_seed;
    for (size_t i = 1; i < n && same_seed; i++)
        same_seed = cs[i].t.has_seed && cs[i].t.seed == cs[0].t.seed && !strcmp(cs[i].t.dist, cs[0].t.dist);
    char *dev = traces_device(cs, n);
    ledger_run_info li = {.class_name = cls,
                          .model = model,
                          .shapes = "traces",
                          .seed = same_seed ? cs[0].t.seed : 0,
                          .dist = same_seed ? cs[0].t.dist : NULL,
                          .engine = nx_engine_name((nx_engine_kind)engine),
                          .registry_dir = kdir};
    ledger_run_from from = {.source = "check", .device = dev, .started_s = started, .atomic = 1};
    ledger *lg = NULL;
    int rc = EXIT_PASS;
    char *exit_lines = NULL;
    nx_status st = ledger_start_from(path, &li, &from, &lg, &err);
    int64_t run = ledger_run_id(lg);
    for (size_t k = 0; k < nres && !st; k++)
        st = ledger_point(lg, reg, &res[k], &err);
    for (size_t i = 0; i < n && !st; i++)
        st = ledger_trace(lg, cs[i].id, cs[i].t.path, &err);
    if (!st) {
        ledger_lkb lf;
        lkb_ledger_fields(reg, cls, model, &lf);
        ledger_set_lkb(lg, &lf);
        st = ledger_finish(lg, exit_status, &exit_lines, &err); /* closes lg */
        lg = NULL;
    }
    ledger_close(lg); /* an unfinished run: rolled back */
    if (st) {
        rc = cli_fail("check", &err);
        if (rc == EXIT_PARITY || rc == EXIT_PASS)
            rc = EXIT_INPUT;
        if (!existed) { /* bad input writes nothing: not even an empty ledger */
            char side[4200];
            unlink(path);
            snprintf(side, sizeof side, "%s-wal", path);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", path);
            unlink(side);
        }
    } else {
        printf("recorded in the ledger %s: run %lld of class %s (source check), %zu point(s), exit status %d\n", path,
               (long long)run, cls, nres, exit_status);
        fputs(exit_lines ? exit_lines : "", stdout);
    }
    free(exit_lines);
    free(dev);
    free(res);
    free(mains);
    return rc;
}

int cmd_check(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* any output against a numerics point, no registry */
        if (!strcmp(argv[i], "--numerics") || !strncmp(argv[i], "--numerics=", 11))
            return cmd_check_numerics(argc, argv);
    tc_npy_opts no = {0};
    const char *kdir = "kernels", *refp = NULL, *refc = NULL, *eng_s = NULL, *json = NULL, *html = NULL;
    const char *ledger_path = NULL, *model = NULL;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    size_t np = 0;
    int bad = 0;
    if (!paths)
        return EXIT_INTERNAL;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(check_usage, stdout);
            free(paths);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) || cli_opt(argc, argv, &i, "--reference", &refp, &bad) ||
            cli_opt(argc, argv, &i, "--reference-class", &refc, &bad) || cli_opt(argc, argv, &i, "--engine", &eng_s, &bad) ||
            cli_opt(argc, argv, &i, "--json", &json, &bad) || cli_opt(argc, argv, &i, "--npy", &no.path, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad) ||
            cli_opt(argc, argv, &i, "--ledger", &ledger_path, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--point", &no.point, &bad) || cli_opt(argc, argv, &i, "--class", &no.cls, &bad) ||
            cli_opt(argc, argv, &i, "--shape", &no.shape, &bad) || cli_opt(argc, argv, &i, "--seed", &no.seed, &bad) ||
            cli_opt(argc, argv, &i, "--dist", &no.dist, &bad) || cli_opt(argc, argv, &i, "--dtype", &no.dtype, &bad) ||
            cli_opt(argc, argv, &i, "--name", &no.name, &bad) || cli_opt(argc, argv, &i, "--mode", &no.mode, &bad) ||
            cli_opt(argc, argv, &i, "--kernel", &no.kernel, &bad) || cli_opt(argc, argv, &i, "--batch", &no.batch, &bad))
            continue;
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            cli_error("check", "unknown option '%s' (see --help)", argv[i]);
            free(paths);
            return EXIT_INPUT;
        }
        paths[np++] = argv[i];
    }
    if (no.path)
        paths[np++] = no.path;
    if (bad || np == 0) {
        if (!bad)
            cli_error("check", "needs at least one TRACE (see --help)");
        free(paths);
        return EXIT_INPUT;
    }
    /* --ledger records class --class C: each needs the other */
    const char *cls = ledger_path ? no.cls : NULL, *usage = NULL;
    if (ledger_path && !no.cls)
        usage = "--ledger FILE needs --class C, the class the run is recorded for (see --help)";
    else if (no.cls && !ledger_path && !no.path)
        usage = "--class C is the class --ledger FILE records (or of an --npy output); give --ledger (see --help)";
    else if (model && !ledger_path)
        usage = "--model M labels the run --ledger FILE records; give --ledger (see --help)";
    else if (ledger_path && refp)
        usage = "--ledger records each trace against its own point; --reference checks against another: not both";
    if (usage) {
        cli_error("check", "%s", usage);
        free(paths);
        return EXIT_INPUT;
    }
    int want_out = json || html || ledger_path;
    cli_file *ins = want_out ? calloc(np, sizeof *ins) : NULL;
    for (size_t k = 0; ins && k < np; k++)
        ins[k] = (cli_file){"TRACE", paths[k]};
    const cli_file outs[] = {{"--json", json}, {"--html", html},
                             {"--ledger", ledger_path && cli_dir_exists(ledger_path) ? ledger_path : NULL}};
    int alias = want_out && (!ins || cli_check_outputs("check", outs, 3, ins, np) ||
                             cli_check_outside("check", outs, 3, "--kernels", kdir));
    free(ins);
    if (alias) {
        free(paths);
        return EXIT_INPUT;
    }
    int engine = (int)ref_engine_default();
    if (eng_s) {
        engine = nx_engine_from_name(eng_s, 0);
        if (engine < 0 || !ref_engine_available((nx_engine_kind)engine)) {
            cli_error("check", "--engine: '%s' is not an engine built into this binary", eng_s);
            free(paths);
            return EXIT_INPUT;
        }
    }
    nx_err err = {0};
    reg_registry *reg = NULL;
    tc_trace *cs = calloc(np, sizeof *cs);
    int rc = EXIT_PASS;
    if (!cs) {
        free(paths);
        return EXIT_INTERNAL;
    }
    if (reg_load(kdir, &reg, &err) != NX_OK) {
        rc = cli_fail("check", &err);
        goto done;
    }
    int64_t started = 0;
    if (ledger_path && (rc = ledger_ready(reg, kdir, cls, ledger_path, &started)) != EXIT_PASS)
        goto done;
    /* every trace is read and checked before any verdict: bad input first */
    for (size_t i = 0; i < np; i++) {
        tc_trace_init(&cs[i]);
        nx_status rs = no.path && paths[i] == no.path ? tc_npy_trace(&no, &cs[i].t, &err) : trace_read(paths[i], &cs[i].t, &err);
        trace_expect want = {.class_name = cls}; /* --ledger records class C's traces only */
        if (rs == NX_OK && cls && (rs = trace_check(&cs[i].t, &want, &err)) != NX_OK)
            snprintf(err.msg + strlen(err.msg), sizeof err.msg - strlen(err.msg),
                     " (--class %s: the ledger records class %s's runs only)", cls, cls);
        if (rs != NX_OK || tc_check_trace(reg, refp, refc, engine, &cs[i], &err) != NX_OK) {
            if (no.path && paths[i] == no.path)
                tc_npy_name_option(&err);
            rc = cli_fail("check", &err);
            np = i + 1;
            goto done;
        }
    }
    size_t failed = 0, t1 = 0;
    json_t *jroot = json_object(), *jt = json_array(), *jp = json_array();
    printf("%-46s %-8s %-10s %s\n", "trace", "mode", "tier2", "detail");
    for (size_t i = 0; i < np; i++) {
        tc_trace *c = &cs[i];
        char *line = pa_trace_text(c);
        fputs(line ? line : "out of memory\n", stdout);
        free(line);
        if (c->t2.verdict == CV_FAIL)
            failed++;
        json_t *o = json_object();
        json_object_set_new(o, "trace", json_string(c->t.path));
        json_object_set_new(o, "point", json_string(c->id));
        json_object_set_new(o, "class", json_string(c->t.class_name));
        json_object_set_new(o, "verdict", json_string(c->t2.verdict == CV_PASS ? "pass" : "fail"));
        json_object_set_new(o, "bit_exact", json_boolean(c->r.bit_exact));
        json_object_set_new(o, "detail", json_string(c->t2.detail));
        json_object_set_new(o, "compare", cmp_result_json(&c->r.cmp));
        json_array_append_new(jt, o);
    }
    /* Tier 1 across traces of one point, class and shape */
    tc_pair *pairs = NULL;
    size_t npairs = 0;
    if (tc_tier1(cs, np, &pairs, &npairs, &err) != NX_OK)
        rc = cli_fail("check", &err);
    for (size_t k = 0; k < npairs; k++) {
        const tc_pair *p = &pairs[k];
        const char *name = camp_check_name(p->check), *a = cs[p->a].t.path, *b = cs[p->b].t.path;
        t1++;
        printf("tier1 %-13s %s vs %s: %s\n", name, a, b, p->detail);
        if (!p->pass)
            failed++;
        json_t *o = json_object();
        json_object_set_new(o, "check", json_string(name));
        json_object_set_new(o, "a", json_string(a));
        json_object_set_new(o, "b", json_string(b));
        json_object_set_new(o, "verdict", json_string(p->pass ? "pass" : "fail"));
        json_object_set_new(o, "negative_control", json_boolean(p->negative));
        json_object_set_new(o, "shared_rows", json_integer((json_int_t)p->shared_rows));
        json_object_set_new(o, "detail", json_string(p->detail));
        json_array_append_new(jp, o);
    }
    /* Cross-class parity: traces of one point and shape on two classes */
    json_t *jx = json_array();
    tc_cross *xs = NULL;
    size_t nx = 0;
    if (rc == EXIT_PASS && tc_cross_class(reg, cs, np, &xs, &nx, &err) != NX_OK)
        rc = cli_fail("check", &err);
    for (size_t k = 0; k < nx; k++) {
        const tc_cross *x = &xs[k];
        const char *a = cs[x->a].t.path, *b = cs[x->b].t.path;
        printf("parity %s vs %s: %s\n", a, b, x->x.detail);
        if (x->x.verdict == CV_FAIL)
            failed++;
        json_t *o = json_object();
        json_object_set_new(o, "point", json_string(cs[x->a].id));
        json_object_set_new(o, "a", json_string(a));
        json_object_set_new(o, "b", json_string(b));
        json_object_set_new(o, "verdict", json_string(x->x.verdict == CV_PASS ? "pass"
                                                      : x->x.verdict == CV_FAIL ? "fail" : "skip"));
        json_object_set_new(o, "detail", json_string(x->x.detail));
        json_array_append_new(jx, o);
    }
    free(xs);
    json_object_set_new(jroot, "parity", jx);
    if (nx)
        printf("%zu cross-class comparison(s)\n", nx);
    printf("%zu trace(s), %zu tier-1 comparison(s): %s\n", np, t1, failed ? "FAILED" : "all passed");
    json_object_set_new(jroot, "traces", jt);
    json_object_set_new(jroot, "tier1", jp);
    json_object_set_new(jroot, "failed", json_integer((json_int_t)failed));
    if (json && rc == EXIT_PASS) {
        char *text = json_dumps(jroot, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text || st_write_text_atomic(json, text, &err) != NX_OK)
            rc = text ? cli_fail("check", &err) : EXIT_INTERNAL;
        free(text);
    }
    if (html && rc == EXIT_PASS) {
        /* each trace's mismatches over its own (row, column) layout */
        html_heat *hs = calloc(np, sizeof *hs);
        const html_heat **heats = calloc(np, sizeof *heats);
        for (size_t i = 0; hs && heats && i < np; i++) {
            const tc_trace *c = &cs[i];
            int64_t cols = c->r.cols > 0 ? c->r.cols : 1;
            if (html_heat_init(&hs[i], (int64_t)c->r.cmp.n / cols, cols) == 0)
                for (size_t k = 0; k < c->r.ndiff; k++)
                    html_heat_add(&hs[i], (int64_t)(c->r.diff[k] / (uint64_t)cols), (int64_t)(c->r.diff[k] % (uint64_t)cols));
            heats[i] = &hs[i];
        }
        if (!hs || !heats)
            rc = EXIT_INTERNAL;
        else if (cli_html_check(html, jroot, heats, np, &err) != NX_OK)
            rc = cli_fail("check", &err);
        for (size_t i = 0; hs && i < np; i++)
            html_heat_free(&hs[i]);
        free(hs);
        free(heats);
    }
    json_decref(jroot);
    if (rc == EXIT_PASS && failed)
        rc = EXIT_PARITY;
    /* a verdict (0 or 1) is recorded; an input error records nothing */
    if (ledger_path && (rc == EXIT_PASS || rc == EXIT_PARITY)) {
        int lr = ledger_record(reg, kdir, cls, model, ledger_path, engine, cs, np, pairs, npairs, started, rc);
        if (lr != EXIT_PASS)
            rc = lr;
    }
    free(pairs);
done:
    for (size_t i = 0; i < np; i++)
        tc_trace_free(&cs[i]);
    free(cs);
    free(paths);
    reg_free(reg);
    return rc;
}
