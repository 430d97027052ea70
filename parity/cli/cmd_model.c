/* cmd_model.c: `parity model`, model-level parity (parity/model/,
 * docs/model.md): a model's decode step run on a class's backend against
 * the exact reference of the same points; options, the call, printing. */
#include "safetensors.h"
#include "campaign.h"
#include "cli.h"
#include "md_model.h"
#include "refimpl.h"
#include "report.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char model_usage[] =
    "usage: parity model --class C --model M [--scale tiny|small|full] [--prompts P]\n"
    "                    [--batch B] [--prompt-len L] [--tokens T] [--seed S] [--threads N]\n"
    "                    [--engine fast|mpfr] [--kernels DIR] [--against D]\n"
    "                    [--plant OP[@LAYER]=FAMILY.POINT]\n"
    "                    [--rtol R --atol A] [--json FILE|-] [--html FILE] [--metrics FILE]\n"
    "                    [--ledger FILE] [--weights FILE.safetensors] [--names MAP.toml]\n"
    "                    [--save-weights FILE.safetensors]\n"
    "\n"
    "Runs model M's decode step (DIR/models/M/STEP.toml) greedily for T tokens from\n"
    "P prompts of L tokens, decoded B at a time as one batch, every op lowered by\n"
    "class C's FUSIONS.toml rules at C = B rows to a family point and run by C's\n"
    "backend, in\n"
    "lockstep with a control that computes every family op by the exact reference\n"
    "of the same point.  Embedding, rope, the KV cache append, residual adds the\n"
    "lowering does not fuse and the greedy argmax are outside the families: one\n"
    "implementation serves both runs.  Weights are drawn from Philox (seeded) at\n"
    "the scale given (docs/model.md).  Reported: the logits of every generated\n"
    "step compared bit for bit (max ulp and abs error where they differ), the op\n"
    "and layer whose output first differed in bits, the transcripts (match rate,\n"
    "first divergence per prompt), metrics (mean log-probability of the control's\n"
    "tokens, top-5 agreement) and the cost of the device and of the reference per\n"
    "token.\n"
    "\n"
    "options:\n"
    "  --class C        the class (required)\n"
    "  --model M        the model (required): a dense decoder's STEP.toml\n"
    "  --scale S        tiny (default: 2 layers, hidden/16, heads/4, MLP/16,\n"
    "                   vocabulary <= 4096), small (4 layers, /4, /2, /4, <= 16384),\n"
    "                   full (the manifest's dimensions)\n"
    "  --prompts P      prompts (default 4)\n"
    "  --batch B        prompts decoded together, one row each of every op (default:\n"
    "                   all P; B divides P; 1: one prompt at a time, at C1)\n"
    "  --prompt-len L   tokens per prompt, drawn from Philox (default 8)\n"
    "  --tokens T       tokens generated per prompt (default 32)\n"
    "  --seed S         weights, prompts and page order (default 1)\n"
    "  --threads N      threads of the backend and the reference (default 1: the ops\n"
    "                   of one token are too small to share; a team costs more)\n"
    "  --engine E       the reference's engine (default: the fastest built in)\n"
    "  --kernels DIR    the registry (default kernels)\n"
    "  --weights FILE   the weights from a safetensors checkpoint (BF16, F16 or F32)\n"
    "                   instead of Philox\n"
    "  --names MAP      a TOML map: [names] each weight's tensor name ({L} the layer;\n"
    "                   default: the Hugging Face Llama names), [dims] the model's\n"
    "                   dimensions (default: the scale's), rope_base (docs/model.md)\n"
    "  --save-weights FILE  write the run's weights as a checkpoint under those names\n"
    "  --against D      the control is class D's backend with D's own lowering\n"
    "                   instead of the exact reference: bits where every op runs the\n"
    "                   same point on both, else the logits within the lm head's\n"
    "                   declared tolerance (torch.testing's bf16 default as the last\n"
    "                   resort) and the transcripts' match rate\n"
    "  --rtol R --atol A  the logits' tolerance where the points differ (default: the\n"
    "                   lm head point's declared one)\n"
    "  --plant OP[@LAYER]=FAMILY.POINT\n"
    "                   a planted kernel bug: the device runs FAMILY.POINT for op OP\n"
    "                   (at LAYER only, 0-based) while the control evaluates the\n"
    "                   declared point (the power test, docs/model.md)\n"
    "  --json FILE      also write the report as JSON (- : JSON on stdout, no text)\n"
    "  --html FILE      also write an HTML page: the transcripts side by side\n"
    "  --metrics FILE   also write the metrics (`parity tier3 FILE BARS` reads them)\n"
    "  --ledger FILE    record the run in the campaign ledger (docs/ledger.md): one\n"
    "                   point model.M whose Tier 2 is this verdict, so that\n"
    "                   `parity ttbp --class C --model M` says when M reached parity\n"
    "\n"
    "Tier 3: where the registry declares bars for the model\n"
    "(DIR/models/M/TIER3.json, the format of `parity tier3`), the metrics are\n"
    "checked against them; a missed bar fails the run.\n"
    "\n"
    "A class (or D) whose device cannot run here (no GPU) is a skip, said as such,\n"
    "with exit 0 and nothing written.\n"
    "\n"
    "exit status: 0 model parity (every op, logits step and transcript bit-identical;\n"
    "with --against a class running other points: the logits within the tolerance)\n"
    "and every declared Tier 3 bar met;\n"
    "1 a parity check failed; 2 usage or input error; 3 internal error.\n";

int cmd_model(int argc, char **argv)
{
    const char *cls = NULL, *model = NULL, *dir = "kernels", *json = NULL, *html = NULL, *scale = "tiny",
               *prompts = NULL, *batch = NULL, *plen = NULL, *tokens = NULL, *seed = NULL, *threads = NULL, *engine = NULL,
               *plant = NULL, *against = NULL, *rtol = NULL, *atol = NULL, *metrics = NULL,
               *ledger = NULL, *weights = NULL, *names = NULL, *save_weights = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(model_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--model", &model, &bad) ||
            cli_opt(argc, argv, &i, "--kernels", &dir, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad) || cli_opt(argc, argv, &i, "--scale", &scale, &bad) ||
            cli_opt(argc, argv, &i, "--prompts", &prompts, &bad) ||
            cli_opt(argc, argv, &i, "--prompt-len", &plen, &bad) ||
            cli_opt(argc, argv, &i, "--tokens", &tokens, &bad) || cli_opt(argc, argv, &i, "--batch", &batch, &bad) || cli_opt(argc, argv, &i, "--seed", &seed, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads, &bad) ||
            cli_opt(argc, argv, &i, "--engine", &engine, &bad) || cli_opt(argc, argv, &i, "--plant", &plant, &bad) ||
            cli_opt(argc, argv, &i, "--against", &against, &bad) || cli_opt(argc, argv, &i, "--rtol", &rtol, &bad) ||
            cli_opt(argc, argv, &i, "--atol", &atol, &bad) || cli_opt(argc, argv, &i, "--metrics", &metrics, &bad) ||
            cli_opt(argc, argv, &i, "--ledger", &ledger, &bad) || cli_opt(argc, argv, &i, "--weights", &weights, &bad) ||
            cli_opt(argc, argv, &i, "--names", &names, &bad) ||
            cli_opt(argc, argv, &i, "--save-weights", &save_weights, &bad))
            continue;
        cli_error("model", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls || !model) {
        cli_error("model", "needs --class C and --model M (see --help)");
        return EXIT_INPUT;
    }
    md_opts o = {0};
    o.model = model;
    o.prompts = 4, o.prompt_len = 8, o.tokens = 32, o.seed = 1, o.threads = 1;
    o.engine = (int)ref_engine_default();
    o.plant = plant;
    o.against = against;
    o.weights = weights, o.names = names, o.save_weights = save_weights;
    if (!!rtol != !!atol) {
        cli_error("model", "--rtol and --atol go together");
        return EXIT_INPUT;
    }
    if (rtol) {
        const char *txt[2] = {rtol, atol}, *name[2] = {"--rtol", "--atol"};
        double *val[2] = {&o.rtol, &o.atol};
        for (int k = 0; k < 2; k++) {
            char *end;
            *val[k] = strtod(txt[k], &end);
            /* any finite number >= 0: |a - b| <= atol + rtol |b| stays a comparison */
            if (!*txt[k] || *end || !(*val[k] >= 0) || !isfinite(*val[k])) {
                cli_error("model", "%s '%s': expected a finite number >= 0", name[k], txt[k]);
                return EXIT_INPUT;
            }
        }
        o.has_tol = 1;
    }
    int sc = md_scale_from_name(scale);
    if (sc < 0) {
        cli_error("model", "--scale '%s': expected tiny, small or full", scale);
        return EXIT_INPUT;
    }
    o.scale = (md_scale)sc;
    long v;
    if (prompts && (v = cli_long("model", "--prompts", prompts, 1, 4096)) < 0)
        return EXIT_INPUT;
    if (prompts)
        o.prompts = (int)v;
    if (plen && (v = cli_long("model", "--prompt-len", plen, 1, 1 << 20)) < 0)
        return EXIT_INPUT;
    if (plen)
        o.prompt_len = (int)v;
    if (batch && (v = cli_long("model", "--batch", batch, 1, 4096)) < 0)
        return EXIT_INPUT;
    if (batch)
        o.batch = (int)v;
    if (tokens && (v = cli_long("model", "--tokens", tokens, 1, 1 << 20)) < 0)
        return EXIT_INPUT;
    if (tokens)
        o.tokens = (int)v;
    if (threads && (v = cli_long("model", "--threads", threads, 1, 4096)) < 0)
        return EXIT_INPUT;
    if (threads)
        o.threads = (int)v;
    if (seed) {
        /* decimal digits only (strtoull skips blanks, takes a sign and
         * saturates at 2^64 - 1 with ERANGE), at most 2^63 - 1: the seed is
         * written to the JSON report and the ledger as a signed 64-bit
         * integer, where a larger one would read back negative */
        char *end;
        errno = 0;
        unsigned long long s = strtoull(seed, &end, 10);
        if (!isdigit((unsigned char)seed[0]) || *end || end == seed) {
            cli_error("model", "--seed '%s': expected an unsigned integer", seed);
            return EXIT_INPUT;
        }
        if (errno == ERANGE || s > (unsigned long long)INT64_MAX) {
            cli_error("model", "--seed '%s': expected an unsigned integer at most 9223372036854775807 (2^63 - 1: "
                      "the report and the ledger hold it as a signed 64-bit integer)", seed);
            return EXIT_INPUT;
        }
        o.seed = s;
    }
    if (engine) {
        int e = nx_engine_from_name(engine, 0);
        if (e < 0 || !ref_engine_available((nx_engine_kind)e)) {
            cli_error("model", "--engine '%s': expected fast or mpfr (one built into this binary)", engine);
            return EXIT_INPUT;
        }
        o.engine = e;
    }
    const cli_file outs[] = {{"--json", json && strcmp(json, "-") != 0 ? json : NULL},
                             {"--html", html},
                             {"--metrics", metrics},
                             {"--save-weights", save_weights}};
    const cli_file ins[] = {{"--ledger", ledger}, {"--weights", weights}, {"--names", names}};
    if (cli_check_outputs("model", outs, 4, ins, 3) || cli_check_outside("model", outs, 4, "--kernels", dir))
        return EXIT_INPUT;
    nx_err err = {0};
    reg_registry *r = NULL;
    if (reg_load(dir, &r, &err) != NX_OK)
        return cli_fail("model", &err);
    /* a class whose device cannot run here is a skip, as in a campaign */
    const char *const sides[2] = {cls, against};
    for (int k = 0; k < 2; k++) {
        const dev_backend *be = sides[k] ? camp_class_backend(r, sides[k]) : NULL;
        char why[256] = "";
        if (be && !dev_available(be, why, sizeof why)) {
            printf("parity model: class %s: skipped: %s (backend %s)\n", sides[k], why, be->name);
            reg_free(r);
            return EXIT_PASS;
        }
    }
    md_result res;
    nx_status st = md_run(r, cls, &o, &res, &err);
    if (st != NX_OK) {
        reg_free(r);
        return cli_fail("model", &err);
    }
    int rc = res.pass && (!res.has_tier3 || tier3_pass(&res.tier3)) ? EXIT_PASS : EXIT_PARITY,
        to_stdout = json && !strcmp(json, "-");
    char *t = to_stdout ? NULL : md_text(&res), *j = json ? md_json(&res) : NULL, *h = html ? md_html(&res) : NULL,
         *mt = NULL;
    if (metrics) {
        json_t *m = md_metrics_json(&res);
        char *s = m ? json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(m);
        if (s && (mt = malloc(strlen(s) + 2)))
            sprintf(mt, "%s\n", s);
        free(s);
    }
    /* every output file is staged (--save-weights by md_run), the ledger
     * recorded, and only then are the files committed: a run that ends in
     * an error (a ledger that is refused, a file that cannot be written)
     * leaves no output behind */
    const char *paths[4] = {j && !to_stdout ? json : NULL, h ? html : NULL, mt ? metrics : NULL, save_weights};
    const char *texts[3] = {j, h, mt};
    char *tmps[4] = {NULL, NULL, NULL, res.weights_tmp};
    res.weights_tmp = NULL;
    char *lines = NULL;
    if ((!to_stdout && !t) || (json && !j) || (html && !h) || (metrics && !mt)) {
        cli_error("model", "out of memory");
        rc = EXIT_INTERNAL;
    }
    for (int k = 0; k < 3 && rc != EXIT_INTERNAL && rc != EXIT_INPUT; k++)
        if (paths[k] && st_text_stage(paths[k], texts[k], strlen(texts[k]), &tmps[k], &err) != NX_OK)
            rc = cli_fail("model", &err);
    if (ledger && rc != EXIT_INTERNAL && rc != EXIT_INPUT && md_record(ledger, r, &o, &res, rc, &lines, &err) != NX_OK)
        rc = cli_fail("model", &err);
    for (int k = 0; k < 4; k++) {
        if (!tmps[k])
            continue;
        if (rc == EXIT_INTERNAL || rc == EXIT_INPUT)
            st_tmp_discard(&tmps[k]);
        else if (st_tmp_commit(&tmps[k], paths[k], &err) != NX_OK)
            rc = cli_fail("model", &err);
    }
    if (rc != EXIT_INTERNAL && rc != EXIT_INPUT) {
        if (t)
            fputs(t, stdout);
        if (j && to_stdout)
            fputs(j, stdout);
        if (lines && !to_stdout)
            fputs(lines, stdout);
    }
    free(lines);
    free(t), free(j), free(h), free(mt);
    md_result_free(&res);
    reg_free(r);
    return rc;
}
