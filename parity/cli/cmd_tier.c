/* cmd_tier.c: `parity transcript` (Tier 2 at the model level: greedy
 * transcript match rate) and `parity tier3` (a metrics file against its
 * bars). */
#include "safetensors.h"
#include "cli.h"
#include "report.h"
#include "tier3.h"
#include "transcript.h"

#include <stdio.h>
#include <stdlib.h>

static const char transcript_usage[] =
    "usage: parity transcript CONTROL.jsonl CANDIDATE.jsonl [--json FILE] [--min-rate R]\n"
    "\n"
    "Compares two files of greedy-decoding transcripts, one prompt per line: a\n"
    "JSON array of token ids, or {\"prompt\": ID, \"tokens\": [...]}.  Prompts are\n"
    "matched by id when given, else by line.  Prints per prompt whether it is\n"
    "identical and its first divergence (position, control token, candidate\n"
    "token), then the match rate (identical prompts / prompts) and the token\n"
    "agreement up to the first divergences.\n"
    "\n"
    "  --min-rate R   fail (exit 1) when the match rate is below R (default 1)\n"
    "  --json FILE    write the result as JSON\n"
    "\n"
    "exit status: 0 at or above the rate, 1 below, 2 a malformed file (named\n"
    "with its line).\n";

static int write_json(const char *cmd, const char *path, json_t *j)
{
    nx_err err = {0};
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text) {
        cli_error(cmd, "out of memory");
        return EXIT_INTERNAL;
    }
    nx_status st = st_write_text_atomic(path, text, &err);
    free(text);
    return st ? cli_fail(cmd, &err) : EXIT_PASS;
}

int cmd_transcript(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *json = NULL, *rate_s = NULL;
    int nf = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(transcript_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--json", &json, &bad) || cli_opt(argc, argv, &i, "--min-rate", &rate_s, &bad))
            continue;
        if (argv[i][0] == '-' || nf == 2) {
            cli_error("transcript", "unexpected argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        files[nf++] = argv[i];
    }
    if (bad || nf != 2) {
        if (!bad)
            cli_error("transcript", "needs CONTROL and CANDIDATE files (see --help)");
        return EXIT_INPUT;
    }
    const cli_file touts[] = {{"--json", json}}, tins[] = {{"CONTROL", files[0]}, {"CANDIDATE", files[1]}};
    if (cli_check_outputs("transcript", touts, 1, tins, 2))
        return EXIT_INPUT;
    double min_rate = 1.0;
    if (rate_s) {
        char *end;
        min_rate = strtod(rate_s, &end);
        if (end == rate_s || *end || !(min_rate >= 0 && min_rate <= 1)) {
            cli_error("transcript", "--min-rate: '%s' is not a number in [0, 1]", rate_s);
            return EXIT_INPUT;
        }
    }
    tscript_result r;
    nx_err err = {0};
    if (tscript_compare_files(files[0], files[1], &r, &err) != NX_OK)
        return cli_fail("transcript", &err);
    char *text = tscript_result_text(&r);
    if (text)
        fputs(text, stdout);
    free(text);
    double rate = tscript_match_rate(&r);
    int rc = rate >= min_rate ? EXIT_PASS : EXIT_PARITY;
    if (json) {
        int jrc = write_json("transcript", json, tscript_result_json(&r));
        if (jrc)
            rc = jrc;
    }
    tscript_result_free(&r);
    return rc;
}

static const char tier3_usage[] =
    "usage: parity tier3 METRICS.json BARS.json [--json FILE]\n"
    "\n"
    "Tier 3, the accuracy bar: METRICS maps metric names to numbers (or the\n"
    "strings \"nan\", \"inf\", \"-inf\": a value JSON cannot write, which fails\n"
    "every bar); BARS maps names to {\"min\": x} and/or {\"max\": x} (a bare\n"
    "number is a min).  Every barred metric must be present and within its bar.\n"
    "\n"
    "exit status: 0 every bar met, 1 a bar missed or a metric missing, 2 a\n"
    "malformed file (named with its key).\n";

int cmd_tier3(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *json = NULL;
    int nf = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(tier3_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--json", &json, &bad))
            continue;
        if (argv[i][0] == '-' || nf == 2) {
            cli_error("tier3", "unexpected argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        files[nf++] = argv[i];
    }
    if (bad || nf != 2) {
        if (!bad)
            cli_error("tier3", "needs METRICS and BARS files (see --help)");
        return EXIT_INPUT;
    }
    const cli_file touts[] = {{"--json", json}}, tins[] = {{"METRICS", files[0]}, {"BARS", files[1]}};
    if (cli_check_outputs("tier3", touts, 1, tins, 2))
        return EXIT_INPUT;
    tier3_result r;
    nx_err err = {0};
    if (tier3_check_files(files[0], files[1], &r, &err) != NX_OK)
        return cli_fail("tier3", &err);
    char *text = tier3_result_text(&r);
    if (text)
        fputs(text, stdout);
    free(text);
    int rc = tier3_pass(&r) ? EXIT_PASS : EXIT_PARITY;
    if (json) {
        int jrc = write_json("tier3", json, tier3_result_json(&r));
        if (jrc)
            rc = jrc;
    }
    tier3_result_free(&r);
    return rc;
}
