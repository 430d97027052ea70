/* cmd_ttbp.c: `parity ttbp`, time to bit parity of a class (or of a model
 * on a class) from the campaign ledger (parity/ledger/ttbp.h). */
#include "safetensors.h"
#include "cli.h"
#include "ledger.h"
#include "lkb.h"
#include "registry.h"
#include "report.h"
#include "ttbp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ttbp_usage[] =
    "usage: parity ttbp --class C [--model M [--kernels DIR] [--all-points] [--any-shapes]]\n"
    "                   [--reference R] [--ledger FILE] [--json FILE|-]\n"
    "       parity ttbp --model M --zero-day [--class C] [--kernels DIR] [--all-points]\n"
    "                   [--any-shapes] [--ledger FILE] [--json FILE|-]\n"
    "\n"
    "Time to bit parity, read from the campaign ledger (docs/ledger.md): over\n"
    "the complete campaigns of class C (with --model, only those run with\n"
    "--model M), in order of their start, for every point they recorded:\n"
    "  - when it first reached bit parity: no Tier 1 check failed and its bits\n"
    "    equal its reference class's at the same point, shape and inputs (the\n"
    "    recorded digests of both runs' outputs, or campaign --against R); a\n"
    "    class with no parent and no reference is held to the exact reference of\n"
    "    its own points.  Where the points differ by declaration (another\n"
    "    numerics hash) and it passes its own Tier 2, it is at declared parity,\n"
    "    reported apart: TTBP counts bit parity only.  A hash change of a point\n"
    "    is listed with its run, and parity under the old hash no longer counts;\n"
    "  - its TTBP: that campaign's start minus the start of the first campaign;\n"
    "  - whether it has held since: every later campaign where it was not at\n"
    "    parity is listed with the run that broke it and the run that restored it.\n"
    "Overall TTBP is when the last of the points reached parity.  Incomplete\n"
    "runs (a campaign killed or still running) are ignored, and counted.\n"
    "\n"
    "Which points count: never a negative control (it is built to fail).  With\n"
    "--model M, only M's hot points: the points class C's lowering rules send\n"
    "the ops of M's step to at C = 1, 16 and 128 (the registry's\n"
    "models/M/STEP.toml and FUSIONS.toml, as `parity lkb` lowers them), and M's\n"
    "model-level point (parity model --ledger); --all-points counts every point\n"
    "the campaigns recorded.\n"
    "\n"
    "options:\n"
    "  --class C      the hardware class (required)\n"
    "  --model M      only campaigns run with --model M: the TTBP of that model\n"
    "  --kernels DIR  the registry whose step and rules give M's hot points\n"
    "                 (default kernels)\n"
    "  --all-points   every recorded point counts, not only M's hot points\n"
    "  --any-shapes   with --model, records at every shape count (default: only\n"
    "                 campaigns at --shapes model:M and M's own decode)\n"
    "  --reference R  hold the class to class R's bits (default: its HARDWARE.toml\n"
    "                 reference, else per point the nearest ancestor that ran it)\n"
    "  --zero-day     M's zero-day readiness on every class with a campaign of M\n"
    "                 (or on --class C): whether M reached bit parity there with\n"
    "                 no class work since its first campaign (no residual entry\n"
    "                 and no point the first campaign did not have), and when\n"
    "  --ledger FILE  the ledger (default out/ledger.sqlite)\n"
    "  --json FILE    also write the report as JSON (- : JSON on stdout, no table)\n"
    "\n"
    "exit status (--zero-day: 0 ready on every class, 1 not): 0 every point\n"
    "reached parity and is at parity in its latest\n"
    "campaign; 1 some point has not reached parity, or is not at parity in its\n"
    "latest campaign; 2 usage or input error (no ledger, not a ledger, no\n"
    "complete campaign of the class or model).\n";

/* The hot points of model's step on class cls: every point the class's
 * rules lower an op to at C = 1, 16, 128 (lkb_compute), and the model's
 * own point "model.M".  *hot malloc'd. */
static nx_status hot_points(const char *kdir, const char *cls, const char *model, char ***hot, size_t *n, char *scope,
                            size_t len, nx_err *err)
{
    reg_registry *reg = NULL;
    nx_status st = reg_load(kdir, &reg, err);
    if (st)
        return st;
    lkb_opts o = {model, NULL, NULL};
    lkb_report rep;
    if ((st = lkb_compute(reg, cls, &o, &rep, err))) {
        reg_free(reg);
        return st;
    }
    char **v = calloc(3 * (rep.step.nops + 1) + 1, sizeof *v);
    size_t k = 0;
    if (!v)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (int c = 0; v && c < 3; c++)
        for (size_t i = 0; i < rep.cov[c].nops; i++) {
            const char *pt = rep.cov[c].ops[i].point;
            int seen = !*pt;
            for (size_t q = 0; q < k && !seen; q++)
                seen = strcmp(v[q], pt) == 0;
            if (!seen)
                v[k++] = strdup(pt);
        }
    size_t nfam = k;
    if (v) {
        char mp[200];
        snprintf(mp, sizeof mp, "model.%s", model);
        v[k++] = strdup(mp);
    }
    snprintf(scope, len, "the hot points of %s's step on class %s (its ops lowered at C = 1, 16, 128: %zu "
             "family point(s)) and model.%s", model, cls, nfam, model);
    lkb_report_free(&rep);
    reg_free(reg);
    *hot = v;
    *n = k;
    return st;
}

/* `--zero-day`: the model's readiness on each class (or on cls). */
static int zero_day_report(const char *path, const char *cls, const char *model, const char *kdir, int all_points,
                           const char *json, const ttbp_opts *to)
{
    const cli_file outs[] = {{"--json", json && strcmp(json, "-") != 0 ? json : NULL}}, ins[] = {{"--ledger", path}};
    if (cli_check_outputs("ttbp", outs, 1, ins, 1) || cli_check_outside("ttbp", outs, 1, "--kernels", kdir))
        return EXIT_INPUT;
    nx_err err = {0};
    char **classes = NULL;
    size_t nc = 0;
    if (cls) {
        classes = malloc(sizeof *classes);
        if (!classes || !(classes[0] = strdup(cls)))
            return EXIT_INTERNAL;
        nc = 1;
    } else if (ttbp_model_classes(path, model, &classes, &nc, &err) != NX_OK) {
        return cli_fail("ttbp", &err);
    }
    if (!nc) {
        free(classes);
        cli_error("ttbp", "ledger %s: no complete campaign of model '%s' (campaign --model M records one)", path, model);
        return EXIT_INPUT;
    }
    int rc = EXIT_PASS, to_stdout = json && json[0] == '-' && !json[1];
    size_t ready = 0;
    json_t *root = json_object(), *jc = json_array();
    if (!to_stdout)
        printf("zero-day readiness of model %s (ledger %s): bit parity on a class with no class work since the "
               "model's first campaign there\n", model, path);
    for (size_t k = 0; k < nc && rc != EXIT_INPUT; k++) {
        char **hot = NULL, scope[256] = "";
        size_t nhot = 0;
        ttbp_report r;
        ttbp_zero_day z;
        if (!all_points && hot_points(kdir, classes[k], model, &hot, &nhot, scope, sizeof scope, &err) != NX_OK) {
            nx_err_prefix(&err, "--model %s on class %s (--all-points counts every point)", model, classes[k]);
            rc = cli_fail("ttbp", &err);
            break;
        }
        nx_status st = ttbp_compute_opts(path, classes[k], model, (const char *const *)hot, nhot,
                                         *scope ? scope : NULL, to, &r, &err);
        for (size_t i = 0; i < nhot; i++)
            free(hot[i]);
        free(hot);
        if (!st && (st = ttbp_zero_day_of(path, &r, &z, &err)))
            ttbp_free(&r);
        if (st) {
            rc = cli_fail("ttbp", &err);
            break;
        }
        char t[32], d[48];
        ledger_format_utc(z.at, t, sizeof t);
        ledger_format_duration(z.ttbp_s, d, sizeof d);
        if (!to_stdout) {
            if (z.ready)
                printf("  %-12s ready: bit parity by run %lld at %s (TTBP %s, %zu point(s)), no class work since the "
                       "first campaign\n", classes[k], (long long)z.run, t, d, r.npts);
            else if (z.reached)
                printf("  %-12s not zero-day: bit parity by run %lld at %s (TTBP %s), after class work: %s\n",
                       classes[k], (long long)z.run, t, d, z.change);
            else
                printf("  %-12s not reached: %zu of %zu point(s) reached bit parity%s%s\n", classes[k], r.reached,
                       r.npts, *z.change ? "; class work meanwhile: " : "", z.change);
        }
        ready += z.ready != 0;
        json_t *o = json_object();
        json_object_set_new(o, "class", json_string(classes[k]));
        json_object_set_new(o, "ready", json_boolean(z.ready));
        json_object_set_new(o, "reached", json_boolean(z.reached));
        json_object_set_new(o, "run", z.reached ? json_integer(z.run) : json_null());
        json_object_set_new(o, "ttbp_s", z.reached ? json_integer(z.ttbp_s) : json_null());
        json_object_set_new(o, "class_work", json_string(z.change));
        json_object_set_new(o, "points", json_integer((json_int_t)r.npts));
        json_array_append_new(jc, o);
        ttbp_free(&r);
    }
    if (rc == EXIT_PASS) {
        if (!to_stdout)
            printf("zero-day ready on %zu of %zu class(es)\n", ready, nc);
        rc = ready == nc ? EXIT_PASS : EXIT_PARITY;
        json_object_set_new(root, "model", json_string(model));
        json_object_set_new(root, "classes", jc);
        jc = NULL;
        json_object_set_new(root, "ready_everywhere", json_boolean(ready == nc));
        char *j = json ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (json && !j) {
            rc = EXIT_INTERNAL;
        } else if (j && to_stdout) {
            fputs(j, stdout);
        } else if (j) {
            nx_err werr = {0};
            if (st_write_text_atomic(json, j, &werr) != NX_OK)
                rc = cli_fail("ttbp", &werr);
        }
        free(j);
    }
    json_decref(jc);
    json_decref(root);
    for (size_t k = 0; k < nc; k++)
        free(classes[k]);
    free(classes);
    return rc;
}

int cmd_ttbp(int argc, char **argv)
{
    const char *cls = NULL, *model = NULL, *path = "out/ledger.sqlite", *json = NULL, *kdir = "kernels",
               *reference = NULL;
    int bad = 0, all_points = 0, zero_day = 0, any_shapes = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--zero-day")) {
            zero_day = 1;
            continue;
        }
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(ttbp_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--all-points")) {
            all_points = 1;
            continue;
        }
        if (cli_flag(argv, i, "--any-shapes")) {
            any_shapes = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--reference", &reference, &bad))
            continue;
        if (cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) ||
            cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--ledger", &path, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad))
            continue;
        cli_error("ttbp", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    char mshapes[160] = "";
    if (model)
        snprintf(mshapes, sizeof mshapes, "model:%s", model);
    /* with --model M, only records at M's shapes count (--all-points: a
     * model without a step has none; --any-shapes: every shape) */
    ttbp_opts to = {reference, model && !any_shapes && !all_points ? mshapes : NULL};
    if (zero_day) {
        if (!model) {
            cli_error("ttbp", "--zero-day needs --model M (see --help)");
            return EXIT_INPUT;
        }
        return zero_day_report(path, cls, model, kdir, all_points, json, &to);
    }
    if (!cls) {
        cli_error("ttbp", "needs --class C (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--json", json && strcmp(json, "-") != 0 ? json : NULL}}, ins[] = {{"--ledger", path}};
    if (cli_check_outputs("ttbp", outs, 1, ins, 1) || cli_check_outside("ttbp", outs, 1, "--kernels", kdir))
        return EXIT_INPUT;
    nx_err err = {0};
    ttbp_report r;
    char **hot = NULL, scope[256] = "";
    size_t nhot = 0;
    if (model && !all_points && hot_points(kdir, cls, model, &hot, &nhot, scope, sizeof scope, &err) != NX_OK) {
        nx_err_prefix(&err, "--model %s (--all-points counts every point without the step)", model);
        return cli_fail("ttbp", &err);
    }
    nx_status tst =
        ttbp_compute_opts(path, cls, model, (const char *const *)hot, nhot, *scope ? scope : NULL, &to, &r, &err);
    for (size_t i = 0; i < nhot; i++)
        free(hot[i]);
    free(hot);
    if (tst != NX_OK)
        return cli_fail("ttbp", &err);
    int rc = ttbp_ok(&r) ? EXIT_PASS : EXIT_PARITY;
    int to_stdout = json && json[0] == '-' && !json[1];
    if (!to_stdout) {
        char *t = ttbp_text(&r);
        if (!t) {
            cli_error("ttbp", "out of memory");
            ttbp_free(&r);
            return EXIT_INTERNAL;
        }
        fputs(t, stdout);
        free(t);
    }
    if (json) {
        char *j = ttbp_json(&r);
        if (!j) {
            cli_error("ttbp", "out of memory");
            rc = EXIT_INTERNAL;
        } else if (to_stdout) {
            fputs(j, stdout);
        } else {
            nx_err werr = {0};
            if (st_write_text_atomic(json, j, &werr) != NX_OK)
                rc = cli_fail("ttbp", &werr);
        }
        free(j);
    }
    ttbp_free(&r);
    return rc;
}
