/* cmd_ttbp.c: `parity ttbp`, time to bit parity of a class (or of a model
 * on a class) from the campaign ledger (parity/ledger/ttbp.h). */
#include "cli.h"
#include "ledger.h"
#include "report.h"
#include "ttbp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ttbp_usage[] =
    "usage: parity ttbp --class C [--model M] [--ledger FILE] [--json FILE|-]\n"
    "\n"
    "Time to bit parity, read from the campaign ledger (docs/ledger.md): over\n"
    "the complete campaigns of class C (with --model, only those run with\n"
    "--model M), in order of their start, for every point they recorded:\n"
    "  - when it first reached parity: no Tier 1 check failed and Tier 2 was\n"
    "    bit-exact (\"bits\"), or within the point's declared tolerance where the\n"
    "    device runs another, declared point (\"declared tolerance\", said as such);\n"
    "  - its TTBP: that campaign's start minus the start of the first campaign;\n"
    "  - whether it has held since: every later campaign where it was not at\n"
    "    parity is listed with the run that broke it and the run that restored it.\n"
    "Overall TTBP is when the last of the points reached parity.  Incomplete\n"
    "runs (a campaign killed or still running) are ignored, and counted.\n"
    "\n"
    "options:\n"
    "  --class C      the hardware class (required)\n"
    "  --model M      only campaigns run with --model M: the TTBP of that model\n"
    "  --ledger FILE  the ledger (default out/ledger.sqlite)\n"
    "  --json FILE    also write the report as JSON (- : JSON on stdout, no table)\n"
    "\n"
    "exit status: 0 every point reached parity and is at parity in its latest\n"
    "campaign; 1 some point has not reached parity, or is not at parity in its\n"
    "latest campaign; 2 usage or input error (no ledger, not a ledger, no\n"
    "complete campaign of the class or model).\n";

int cmd_ttbp(int argc, char **argv)
{
    const char *cls = NULL, *model = NULL, *path = "out/ledger.sqlite", *json = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(ttbp_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--ledger", &path, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad))
            continue;
        cli_error("ttbp", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls) {
        cli_error("ttbp", "needs --class C (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--json", json && strcmp(json, "-") != 0 ? json : NULL}}, ins[] = {{"--ledger", path}};
    if (cli_check_outputs("ttbp", outs, 1, ins, 1))
        return EXIT_INPUT;
    nx_err err = {0};
    ttbp_report r;
    if (ttbp_compute(path, cls, model, &r, &err) != NX_OK)
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
            if (report_write_atomic(json, j, &werr) != NX_OK)
                rc = cli_fail("ttbp", &werr);
        }
        free(j);
    }
    ttbp_free(&r);
    return rc;
}
