/* cmd_tree.c: `parity tree show` (the explicit bracketing of a tree at a
 * length n, its canonical form and hash) and `parity atoms`. */
#include "cli.h"
#include "nx_program.h"
#include "point_toml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char tree_usage[] =
    "usage: parity tree show TREE --n N [--numerics POINT] [--dot] [--verbose]\n"
    "\n"
    "Prints the explicit bracketing of TREE (docs/numerics.md §4) for N terms, e.g.\n"
    "  parity tree show halving --n 8\n"
    "  ((t0+t4)+(t2+t6))+((t1+t5)+(t3+t7))\n"
    "\n"
    "Terms print as tK, the zero that starts a sequential sum as +0, and one\n"
    "fused multi-term addition (an atom, chain(N)) as [s+t0+t1+...].\n"
    "\n"
    "options:\n"
    "  --n N            number of terms (required; at most 1048576)\n"
    "  --numerics P     an inline TOML numerics point for formats, modes and the\n"
    "                   atom; its tree is replaced by TREE\n"
    "  --dot            terms are products a*b (default: values)\n"
    "  --verbose        also print the canonical tree, the point and its hash\n"
    "\n"
    "exit status: 0 success, 2 bad tree, point or option.\n";

int cmd_tree(int argc, char **argv)
{
    if (argc < 2 || cli_flag(argv, 1, "--help") || cli_flag(argv, 1, "-h")) {
        fputs(tree_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INPUT : EXIT_PASS;
    }
    if (strcmp(argv[1], "show") != 0) {
        cli_error("tree", "unknown subcommand '%s' (expected show)", argv[1]);
        return EXIT_INPUT;
    }
    const char *tree = NULL, *nval = NULL, *numerics = NULL;
    int dot = 0, verbose = 0, bad = 0;
    for (int i = 2; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(tree_usage, stdout);
            return EXIT_PASS;
        } else if (cli_opt(argc, argv, &i, "--n", &nval, &bad) ||
                   cli_opt(argc, argv, &i, "--numerics", &numerics, &bad)) {
        } else if (cli_flag(argv, i, "--dot")) {
            dot = 1;
        } else if (cli_flag(argv, i, "--verbose") || cli_flag(argv, i, "-v")) {
            verbose = 1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            cli_error("tree", "unknown option '%s'", argv[i]);
            return EXIT_INPUT;
        } else if (!tree) {
            tree = argv[i];
        } else {
            cli_error("tree", "unexpected argument '%s' (one tree at a time)", argv[i]);
            return EXIT_INPUT;
        }
    }
    if (bad)
        return EXIT_INPUT;
    if (!tree || !nval) {
        cli_error("tree", "show needs a TREE and --n N (see --help)");
        return EXIT_INPUT;
    }
    long n = cli_long("tree", "--n", nval, 0, 1L << 20);
    if (n < 0)
        return EXIT_INPUT;
    nx_err err = {0};
    nx_point pt;
    nx_status st = numerics ? pt_from_text(numerics, "--numerics", &pt, &err) : nx_point_init(&pt, &err);
    if (st)
        return cli_fail("tree", &err);
    if ((st = nx_point_set_tree(&pt, tree, "tree", &err))) {
        nx_point_free(&pt);
        return cli_fail("tree", &err);
    }
    if (nx_tree_uses(pt.tree, NX_T_CHAIN) && !pt.atom.present) {
        /* Showing a bracketing needs no atom parameters: use exact addends. */
        pt.atom.present = 1;
    }
    nx_program *prog;
    if ((st = nx_program_build(&pt, (size_t)n, dot, &prog, &err))) {
        nx_point_free(&pt);
        return cli_fail("tree", &err);
    }
    char *ex = nx_program_expansion(prog);
    char hash[65];
    st = nx_program_hash(prog, hash, &err);
    int rc = EXIT_PASS;
    if (!ex || st) {
        cli_error("tree", "out of memory");
        rc = EXIT_INTERNAL;
    } else {
        if (verbose) {
            char *canon = nx_tree_print(pt.tree);
            char *ptxt = nx_point_print(&pt);
            printf("tree: %s\npoint: %s\nn: %ld\nterms: %s\nhash: %s\n", canon ? canon : "?",
                   ptxt ? ptxt : "?", n, dot ? "products" : "values", hash);
            if (prog->nondeterministic)
                printf("note: the tree uses 'atomic': its order is undefined, shown in seq order\n");
            free(canon);
            free(ptxt);
        }
        puts(ex);
    }
    free(ex);
    nx_program_free(prog);
    nx_point_free(&pt);
    return rc;
}

int cmd_atoms(int argc, char **argv)
{
    if (argc > 1 && (cli_flag(argv, 1, "--help") || cli_flag(argv, 1, "-h"))) {
        puts("usage: parity atoms\n\nLists the tensor-core atom presets (docs/numerics.md §5): name, group N of\n"
             "chain(N), frac_bits, term rounding, final rounding, accumulator format.\n"
             "Refer to one in a point as atom = \"NAME\".  Every preset aligns its addends\n"
             "by the operands' exponent sum (align = \"operands\", the rule measured on NVIDIA\n"
             "tensor cores); atom = { preset = \"NAME\", align = \"values\" } gives the\n"
             "first edition's rule.\n\nexit status: 0.");
        return EXIT_PASS;
    }
    if (argc > 1) {
        cli_error("atoms", "unexpected argument '%s'", argv[1]);
        return EXIT_INPUT;
    }
    printf("%-18s %5s %9s %10s %6s %6s  %s\n", "name", "N", "frac_bits", "term_round", "round", "acc", "hardware");
    for (size_t i = 0; nx_atom_preset_at(i); i++) {
        const nx_atom_preset *p = nx_atom_preset_at(i);
        printf("%-18s %5d %9d %10s %6s %6s  %s\n", p->name, p->group, p->frac_bits, nx_mode_name(p->term_round),
               nx_mode_name(p->round), nx_format(p->acc)->name, p->what);
    }
    return EXIT_PASS;
}
