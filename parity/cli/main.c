/* main.c: the `parity` command: dispatch to one file per subcommand. */
#include "cli.h"
#include "parity_gitrev.h"
#include "ext_backend.h"

#include <stdlib.h>

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: parity <command> [options]\n"
    "\n"
    "A bit-parity and numerics verification harness for accelerator kernels.\n"
    "\n"
    "commands:\n"
    "  campaign   the main job: every family point of a class, run and checked at\n"
    "             Tier 1 and Tier 2 against the exact reference\n"
    "  check      check traces of device runs (Tier 1 across them, Tier 2 each)\n"
    "  transcript greedy-decoding transcript match rate of two JSONL files\n"
    "  tier3      a metrics file against its accuracy bars\n"
    "  reduce     evaluate a numerics point over the rows of a safetensors file\n"
    "  tree       show a reduction tree's explicit bracketing and its hash\n"
    "  atoms      list the tensor-core atom presets\n"
    "  inspect    print the metadata, tensors and values of a safetensors file\n"
    "  registry   lint, list, show and compare the family registry (kernels/)\n"
    "  gen        generate the inputs of a family point (seeded, identical on every class)\n"
    "  ref        evaluate the exact reference of a family point on an input file\n"
    "  ttbp       time to bit parity of a class or model, from the campaign ledger\n"
    "  gate       the promotion gate: a registry before and after a change, campaign\n"
    "             against campaign: byte-identical outputs, unchanged gates\n"
    "  ledger     merge shard ledgers into one; list a ledger's runs\n"
    "  diff       two outputs (traces, safetensors, .npy) element by element: how\n"
    "             many differ, by how many ulps, where, and the pattern they form\n"
    "  fit        search a space of numerics points for one that reproduces given\n"
    "             outputs bit for bit\n"
    "  reveal     probe a black-box kernel (a command, a served loop or a C function)\n"
    "             for its order and arithmetic; print the point it realises\n"
    "  lkb        LKB coverage of a model's step, the evidence envelope, the LKB\n"
    "             residual and its single-class bucket, TTPV, for a class\n"
    "  bench      time a family point's kernel against its baseline; a measurement record\n"
    "  backend    a class's out-of-tree backend: who it is, whether it runs here\n"
    "             (docs/backends.md)\n"
    "  model      a model's decode step on a class, each op lowered to a family point,\n"
    "             against the exact reference: logits, first differing op, transcripts\n"
    "\n"
    "Run `parity <command> --help` for the options of a command.\n"
    "\n"
    "global options (any command, anywhere on the line; docs/limits.md):\n"
    "  --max-bytes N  memory for what one input asks for: decoded values,\n"
    "                 results, outputs (default 8G; K, M, G, T: powers of 1024)\n"
    "  --max-terms N  rows x terms of one reduction input, a zero extent counted\n"
    "                 as 1 (default 2G = 2^31)\n"
    "  --max-ops N    operations of a tree expanded at one length n, and n itself\n"
    "                 (default 8M = 2^23, 16 bytes each)\n"
    "  --max-work N   rows x operations of the expanded point: the evaluations of\n"
    "                 one reduction (default 4G = 2^32)\n"
    "  Exceeding one is bad input (exit 2) naming the file, tensor, shape and limit.\n"
    "  --backend-timeout S  seconds an out-of-tree backend may take over one\n"
    "                 request (overrides its class's timeout; docs/backends.md);\n"
    "                 --timeout S says the same to every command but reveal\n"
    "\n"
    "exit status:\n"
    "  0  success (every check passed)\n"
    "  1  a parity check failed\n"
    "  2  usage error or bad input: a malformed point, tree, file or shape\n"
    "  3  internal error: engines disagreed, or out of memory\n";

/* --backend-timeout S, wherever it stands: taken out of argv; so is
 * --timeout S for every command but reveal (whose --timeout is its own
 * kernel's, docs/reveal.md). */
static int backend_timeout_arg(int *argc, char **argv)
{
    int alias = *argc > 1 && strcmp(argv[1], "reveal") != 0;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        int take = 0;
        if (!strcmp(argv[i], "--backend-timeout") || (alias && !strcmp(argv[i], "--timeout"))) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "parity: %s needs a value (seconds)\n", argv[i]);
                return 1;
            }
            v = argv[i + 1];
            take = 2;
        } else if (!strncmp(argv[i], "--backend-timeout=", 18)) {
            v = argv[i] + 18;
            take = 1;
        } else if (alias && !strncmp(argv[i], "--timeout=", 10)) {
            v = argv[i] + 10;
            take = 1;
        } else
            continue;
        char *end;
        double s = strtod(v, &end);
        if (end == v || *end || !(s > 0 && s <= 86400)) {
            fprintf(stderr, "parity: --backend-timeout '%s': seconds in (0, 86400] expected\n", v);
            return 1;
        }
        ext_set_timeout(s);
        for (int k = i; k + take < *argc + 1; k++)
            argv[k] = argv[k + take];
        *argc -= take;
        i--;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_INPUT;
    }
    if (cli_limits_args(&argc, argv) || backend_timeout_arg(&argc, argv))
        return EXIT_INPUT;
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return EXIT_PASS;
    }
    if (!strcmp(cmd, "--version")) {
        printf("parity %s (git %s)\n", PARITY_VERSION, PARITY_GIT_REVISION);
        return EXIT_PASS;
    }
    if (!strcmp(cmd, "reduce"))
        return cmd_reduce(argc - 1, argv + 1);
    if (!strcmp(cmd, "tree"))
        return cmd_tree(argc - 1, argv + 1);
    if (!strcmp(cmd, "atoms"))
        return cmd_atoms(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect"))
        return cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "campaign"))
        return cmd_campaign(argc - 1, argv + 1);
    if (!strcmp(cmd, "check"))
        return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "transcript"))
        return cmd_transcript(argc - 1, argv + 1);
    if (!strcmp(cmd, "tier3"))
        return cmd_tier3(argc - 1, argv + 1);
    if (!strcmp(cmd, "registry"))
        return cmd_registry(argc - 1, argv + 1);
    if (!strcmp(cmd, "gen"))
        return cmd_gen(argc - 1, argv + 1);
    if (!strcmp(cmd, "ref"))
        return cmd_ref(argc - 1, argv + 1);
    if (!strcmp(cmd, "ttbp"))
        return cmd_ttbp(argc - 1, argv + 1);
    if (!strcmp(cmd, "gate"))
        return cmd_gate(argc - 1, argv + 1);
    if (!strcmp(cmd, "ledger"))
        return cmd_ledger(argc - 1, argv + 1);
    if (!strcmp(cmd, "diff"))
        return cmd_diff(argc - 1, argv + 1);
    if (!strcmp(cmd, "fit"))
        return cmd_fit(argc - 1, argv + 1);
    if (!strcmp(cmd, "explain"))
        return cmd_explain(argc - 1, argv + 1);
    if (!strcmp(cmd, "reveal"))
        return cmd_reveal(argc - 1, argv + 1);
    if (!strcmp(cmd, "lkb"))
        return cmd_lkb(argc - 1, argv + 1);
    if (!strcmp(cmd, "model"))
        return cmd_model(argc - 1, argv + 1);
    if (!strcmp(cmd, "backend"))
        return cmd_backend(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return cmd_bench(argc - 1, argv + 1);
    fprintf(stderr, "parity: unknown command '%s'\n\n%s", cmd, usage);
    return EXIT_INPUT;
}
