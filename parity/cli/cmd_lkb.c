/* cmd_lkb.c: `parity lkb`, the LKB report of a class (parity/lkb/,
 * docs/lkb.md): coverage of a model's step, the evidence envelope, the
 * residual, the single-class bucket, TTPV, parameterization yield. */
#include "safetensors.h"
#include "cli.h"
#include "gate.h"
#include "lkb.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char lkb_usage[] =
    "usage: parity lkb --class C [--model M] [--kernels DIR] [--json FILE|-] [--ledger FILE]\n"
    "                  [--before DIR|REV [--registry-path P]] [--lint] [--allow-lint-errors]\n"
    "\n"
    "The LKB report of class C (docs/lkb.md):\n"
    "  - with --model M, LKB coverage of M's decode step (DIR/models/M/STEP.toml) at\n"
    "    C1, C16 and C128: each op lowered by the class's rules\n"
    "    (DIR/<class>/common/FUSIONS.toml, along the chain) to a family point, and\n"
    "    \"Shared X% (measured on this class), shared-unmeasured Y%, parameterisation\n"
    "    Z%, policy variant W%, novel V% of the step\", weighted by measured time\n"
    "    where a record exists, else by the roofline model of HARDWARE.toml [rates];\n"
    "  - the evidence envelope: per family, the points and rows with a record\n"
    "    (DIR/<class>/MEASUREMENTS.toml, `parity bench`);\n"
    "  - the LKB residual: the class's own sources (DIR/<class>/common/) and\n"
    "    per-model sources (DIR/<class>/<model>/), count and lines; KERNEL.toml\n"
    "    [shadow] entries; how = \"copy\" points; each with why and its measurement;\n"
    "  - the single-class bucket (points on a [[bundle]] only C realises) and the\n"
    "    promotion candidates (a residual entry with a second user);\n"
    "  - TTPV-speed and TTPV-energy per measured point: the first record at which\n"
    "    its kernel beat its baseline beyond the noise band, since the class's\n"
    "    first campaign in the ledger (else its first record);\n"
    "  - with --before, parameterization yield from an earlier registry to this one:\n"
    "    residual lines deleted, families and points promoted.\n"
    "\n"
    "options:\n"
    "  --class C      the class (required)\n"
    "  --model M      the model whose step is covered (none: no coverage)\n"
    "  --kernels DIR  the registry (default kernels)\n"
    "  --json FILE    also write the report as JSON (- : JSON on stdout, no text)\n"
    "  --ledger FILE  the campaign ledger for TTPV's t0 (default out/ledger.sqlite;\n"
    "                 read only, and only when it exists)\n"
    "  --before DIR|REV  an earlier registry: a directory, or a git revision of the\n"
    "                 repository at the current directory whose --registry-path P\n"
    "                 (default kernels) is exported with git archive\n"
    "  --lint         only the LKB lint rules (also part of `parity registry lint`)\n"
    "  --allow-lint-errors  report on a registry that `parity registry lint`\n"
    "                 refuses (without it: exit 2, naming the first error)\n"
    "\n"
    "exit status: 0 the report was made (lint: clean); 2 usage or input error\n"
    "(lint: an error, such as a silent residual entry); 3 out of memory.\n";

int cmd_lkb(int argc, char **argv)
{
    const char *cls = NULL, *model = NULL, *dir = "kernels", *json = NULL, *ledger = "out/ledger.sqlite",
               *before = NULL, *reg_path = "kernels";
    int bad = 0, lint = 0, allow_lint = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(lkb_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--allow-lint-errors")) {
            allow_lint = 1;
            continue;
        }
        if (cli_flag(argv, i, "--lint")) {
            lint = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--kernels", &dir, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad) ||
            cli_opt(argc, argv, &i, "--ledger", &ledger, &bad) || cli_opt(argc, argv, &i, "--before", &before, &bad) ||
            cli_opt(argc, argv, &i, "--registry-path", &reg_path, &bad))
            continue;
        cli_error("lkb", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls && !lint) {
        cli_error("lkb", "needs --class C (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--json", json && strcmp(json, "-") != 0 ? json : NULL}},
                   ins[] = {{"--ledger", ledger}};
    if (cli_check_outputs("lkb", outs, 1, ins, 1) || cli_check_outside("lkb", outs, 1, "--kernels", dir) ||
        (before && cli_check_outside("lkb", outs, 1, "--before", before)))
        return EXIT_INPUT;
    nx_err err = {0};
    reg_registry *r = NULL;
    if (reg_load(dir, &r, &err) != NX_OK)
        return cli_fail("lkb", &err);
    if (!lint && cli_refuse_lint("lkb", "--kernels", dir, r, allow_lint, NULL, 0)) {
        reg_free(r);
        return EXIT_INPUT;
    }
    if (lint) {
        char *rep = NULL;
        size_t errors = lkb_lint(r, &rep);
        reg_free(r);
        if (!rep) {
            cli_error("lkb", "out of memory");
            return EXIT_INTERNAL;
        }
        fputs(rep, stdout);
        free(rep);
        printf("%s: LKB lint: %zu error%s\n", dir, errors, errors == 1 ? "" : "s");
        return errors ? EXIT_INPUT : EXIT_PASS;
    }
    char *bdir = NULL, *btmp = NULL;
    if (before && gate_side(before, reg_path, &bdir, &btmp, &err) != NX_OK) {
        reg_free(r);
        nx_err_prefix(&err, "--before");
        return cli_fail("lkb", &err);
    }
    lkb_opts o = {model, ledger, bdir};
    lkb_report rep;
    nx_status st = lkb_compute(r, cls, &o, &rep, &err);
    if (st == NX_OK && before) /* the revision as given, not its temporary export */
        snprintf(rep.yield.before, sizeof rep.yield.before, "%s%s", before, btmp ? " (git revision)" : "");
    if (before)
        gate_side_free(bdir, btmp);
    reg_free(r);
    if (st != NX_OK)
        return cli_fail("lkb", &err);
    int rc = EXIT_PASS, to_stdout = json && !strcmp(json, "-");
    if (!to_stdout) {
        char *t = lkb_text(&rep);
        if (!t)
            rc = EXIT_INTERNAL;
        else
            fputs(t, stdout);
        free(t);
    }
    if (json && rc == EXIT_PASS) {
        char *j = lkb_json(&rep);
        if (!j) {
            rc = EXIT_INTERNAL;
        } else if (to_stdout) {
            fputs(j, stdout);
        } else if (st_write_text_atomic(json, j, &err) != NX_OK) {
            rc = cli_fail("lkb", &err);
        }
        free(j);
    }
    if (rc == EXIT_INTERNAL)
        cli_error("lkb", "out of memory");
    lkb_report_free(&rep);
    return rc;
}
