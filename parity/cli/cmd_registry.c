/* cmd_registry.c: `parity registry lint|list|show|compare`: the family
 * registry (docs/registry.md) checked, listed, resolved and compared. */
#include "cli.h"
#include "lkb.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char registry_usage[] =
    "usage: parity registry lint [DIR]\n"
    "       parity registry list [--class C] [DIR]\n"
    "       parity registry show FAMILY.POINT --class C [--shape K=4096,...] [DIR]\n"
    "       parity registry compare A B [--shape K=4096,...] [DIR]\n"
    "\n"
    "The family registry (docs/registry.md): DIR/DEVICES.toml,\n"
    "DIR/<class>/HARDWARE.toml and DIR/<class>/common/KERNEL_FAMILIES.toml.\n"
    "DIR is the last positional argument or --kernels DIR (default: kernels).\n"
    "\n"
    "  lint     check every rule; each finding is file:line:col: error|warning: ...\n"
    "  list     the family points each class sees, with the file:line of each\n"
    "           declaration (the later ones override the earlier)\n"
    "  show     one point resolved for a class: every field and where it came\n"
    "           from, the filled trees, the evidence at the class, the hash\n"
    "  compare  two points A and B, each CLASS:FAMILY.POINT, at one shape\n"
    "\n"
    "Run `parity registry <sub> --help` for one subcommand.\n"
    "\n"
    "exit status: 0 success (lint: no error; compare: bit parity expected),\n"
    "1 compare: bits may differ, 2 bad input or lint errors, 3 out of memory.\n";

static const char lint_usage[] =
    "usage: parity registry lint [DIR | --kernels DIR]\n"
    "\n"
    "Loads every manifest under DIR (default: kernels) and checks the rules of\n"
    "docs/registry.md: unknown keys, points without numerics, kernels in two\n"
    "families, runtime params in templates, template params without a value,\n"
    "trees that do not parse, unknown atoms, copies without a reason, parent\n"
    "cycles and missing parents, DEVICES classes that do not exist, evidence\n"
    "naming an unknown point, and more.  Prints one line per finding,\n"
    "  FILE:LINE:COL: error: MESSAGE     (or warning:)\n"
    "and, when there is no error, \"DIR: clean (N classes, M families, P points)\".\n"
    "\n"
    "exit status: 0 no error (warnings allowed), 2 at least one error or a\n"
    "registry that does not load (unparsable TOML, a key of the wrong type),\n"
    "3 out of memory.\n";

static const char list_usage[] =
    "usage: parity registry list [--class C] [DIR | --kernels DIR]\n"
    "\n"
    "For each class (or only C): its chain and the FAMILY.POINT ids it sees,\n"
    "each with the file:line of its declaration and of every override.\n"
    "\n"
    "exit status: 0 success, 2 bad input (unknown class, registry that does not\n"
    "load or resolve), 3 out of memory.\n";

static const char show_usage[] =
    "usage: parity registry show FAMILY.POINT --class C [--shape K=4096,...] [DIR | --kernels DIR]\n"
    "\n"
    "Resolves FAMILY.POINT for class C along its parent chain and prints every\n"
    "field with the file:line it came from: the family's fields, how/reason/\n"
    "kernel, each param with its kind and source (point, family default, class\n"
    "default, shape), each reduction's template, filled tree and canonical\n"
    "numerics point, the elementwise functions, the tolerance, the evidence\n"
    "measured on C, and the hash (equal hashes: equal bits).\n"
    "\n"
    "  --class C        the class to resolve for (required)\n"
    "  --shape DIMS     the shape, NAME=INT,... (fills {K} etc. in templates)\n"
    "\n"
    "exit status: 0 success, 2 bad input (unknown class or point, a template\n"
    "without a value, a tree that does not parse), 3 out of memory.\n";

static const char compare_usage[] =
    "usage: parity registry compare A B [--shape K=4096,...] [DIR | --kernels DIR]\n"
    "\n"
    "A and B are CLASS:FAMILY.POINT, e.g. sm80:gemm.splitk sm90:gemm.splitk.\n"
    "Both are resolved at the same shape.  Prints \"bit parity expected\" when\n"
    "their hashes are equal (and no tree uses `atomic`); otherwise lists what\n"
    "differs per reduction (split count 4 vs 8, atom frac_bits 24 vs 25, acc,\n"
    "rounding, tree text, ...), elementwise functions and the params that\n"
    "change bits, then the tolerance that applies: the declared one (the looser\n"
    "of the two when both declare one) or, when neither does, the bound derived\n"
    "from the tree.\n"
    "\n"
    "exit status: 0 bit parity expected, 1 bits may differ, 2 bad input,\n"
    "3 out of memory.\n";

typedef struct reg_args {
    const char *dir, *cls, *shape;
    const char *pos[4];
    int npos;
} reg_args;

/* Scans the options common to the subcommands.  Returns -1 to go on, or an
 * exit status (after --help or a usage error). */
static int scan(int argc, char **argv, const char *sub, const char *usage, int want_class, int want_shape,
                int maxpos, reg_args *a)
{
    memset(a, 0, sizeof *a);
    const char *kernels = NULL;
    int bad = 0;
    for (int i = 2; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        } else if (cli_opt(argc, argv, &i, "--kernels", &kernels, &bad)) {
        } else if (want_class && cli_opt(argc, argv, &i, "--class", &a->cls, &bad)) {
        } else if (want_shape && cli_opt(argc, argv, &i, "--shape", &a->shape, &bad)) {
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            cli_error("registry", "%s: unknown option '%s' (see --help)", sub, argv[i]);
            return EXIT_INPUT;
        } else if (a->npos < maxpos + 1) {
            a->pos[a->npos++] = argv[i];
        } else {
            cli_error("registry", "%s: unexpected argument '%s' (see --help)", sub, argv[i]);
            return EXIT_INPUT;
        }
    }
    if (bad)
        return EXIT_INPUT;
    /* One positional beyond the subcommand's own is DIR. */
    if (a->npos == maxpos + 1) {
        if (kernels) {
            cli_error("registry", "%s: DIR given twice ('%s' and --kernels %s)", sub, a->pos[maxpos], kernels);
            return EXIT_INPUT;
        }
        a->dir = a->pos[--a->npos];
    } else {
        a->dir = kernels ? kernels : "kernels";
    }
    return -1;
}

static int load(const char *sub, const char *dir, reg_registry **r)
{
    nx_err err = {0};
    if (reg_load(dir, r, &err)) {
        char what[64];
        snprintf(what, sizeof what, "registry %s", sub);
        return cli_fail(what, &err);
    }
    return -1;
}

static int fail_sub(const char *sub, const nx_err *e)
{
    char what[64];
    snprintf(what, sizeof what, "registry %s", sub);
    return cli_fail(what, e);
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int do_lint(int argc, char **argv)
{
    reg_args a;
    int rc = scan(argc, argv, "lint", lint_usage, 0, 0, 0, &a);
    if (rc >= 0)
        return rc;
    reg_registry *r;
    if ((rc = load("lint", a.dir, &r)) >= 0)
        return rc;
    char *report = NULL, *lkb = NULL;
    size_t errors = reg_lint(r, &report);
    /* the LKB rules (docs/lkb.md): records behind evidence, silent residual, bundles */
    errors += lkb_lint(r, &lkb);
    if (report && lkb) {
        char *both = malloc(strlen(report) + strlen(lkb) + 1);
        if (both)
            strcat(strcpy(both, report), lkb);
        free(report);
        report = both;
    }
    free(lkb);
    if (!report) {
        reg_free(r);
        cli_error("registry lint", "out of memory");
        return EXIT_INTERNAL;
    }
    fputs(report, stdout);
    if (errors == 0) {
        size_t nc, nf, np;
        reg_counts(r, &nc, &nf, &np);
        printf("%s: clean (%zu class%s, %zu famil%s, %zu point%s)\n", a.dir, nc, nc == 1 ? "" : "es", nf,
               nf == 1 ? "y" : "ies", np, np == 1 ? "" : "s");
    } else {
        printf("%s: %zu error%s\n", a.dir, errors, errors == 1 ? "" : "s");
    }
    free(report);
    reg_free(r);
    return errors ? EXIT_INPUT : EXIT_PASS;
}

static int list_class(const reg_registry *r, const char *cls)
{
    nx_err err = {0};
    char **ids;
    size_t n;
    char **srcs;
    /* the class is checked before anything is printed */
    if (reg_list_sources(r, cls, &ids, &srcs, &n, &err))
        return fail_sub("list", &err);
    printf("class %s (chain: %s", cls, cls);
    const char *c = cls;
    for (size_t steps = 0; steps <= reg_class_count(r) && (c = reg_class_parent(r, c)); steps++)
        printf(" <- %s", c);
    printf(")\n");
    if (n == 0)
        printf("  (no family points)\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-36s %s\n", ids[i], srcs[i]);
    free_strs(srcs, n);
    free_strs(ids, n);
    return EXIT_PASS;
}

static int do_list(int argc, char **argv)
{
    reg_args a;
    int rc = scan(argc, argv, "list", list_usage, 1, 0, 0, &a);
    if (rc >= 0)
        return rc;
    reg_registry *r;
    if ((rc = load("list", a.dir, &r)) >= 0)
        return rc;
    rc = EXIT_PASS;
    if (a.cls) {
        rc = list_class(r, a.cls);
    } else {
        for (size_t i = 0; i < reg_class_count(r); i++) {
            int one = list_class(r, reg_class_name(r, i));
            if (one > rc)
                rc = one;
        }
    }
    reg_free(r);
    return rc;
}

static int do_show(int argc, char **argv)
{
    reg_args a;
    int rc = scan(argc, argv, "show", show_usage, 1, 1, 1, &a);
    if (rc >= 0)
        return rc;
    if (a.npos != 1 || !a.cls) {
        cli_error("registry", "show needs FAMILY.POINT and --class C (see --help)");
        return EXIT_INPUT;
    }
    reg_registry *r;
    if ((rc = load("show", a.dir, &r)) >= 0)
        return rc;
    nx_err err = {0};
    char *text;
    if (reg_show(r, a.cls, a.pos[0], a.shape, &text, &err)) {
        reg_free(r);
        return fail_sub("show", &err);
    }
    fputs(text, stdout);
    free(text);
    reg_free(r);
    return EXIT_PASS;
}

static int do_compare(int argc, char **argv)
{
    reg_args a;
    int rc = scan(argc, argv, "compare", compare_usage, 0, 1, 2, &a);
    if (rc >= 0)
        return rc;
    if (a.npos != 2) {
        cli_error("registry", "compare needs two points A B, each CLASS:FAMILY.POINT (see --help)");
        return EXIT_INPUT;
    }
    reg_registry *r;
    if ((rc = load("compare", a.dir, &r)) >= 0)
        return rc;
    nx_err err = {0};
    char *text;
    int parity = 0;
    if (reg_compare(r, a.pos[0], a.pos[1], a.shape, &text, &parity, &err)) {
        reg_free(r);
        return fail_sub("compare", &err);
    }
    fputs(text, stdout);
    free(text);
    reg_free(r);
    return parity ? EXIT_PASS : EXIT_PARITY;
}

int cmd_registry(int argc, char **argv)
{
    if (argc < 2 || cli_flag(argv, 1, "--help") || cli_flag(argv, 1, "-h")) {
        fputs(registry_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INPUT : EXIT_PASS;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "lint"))
        return do_lint(argc, argv);
    if (!strcmp(sub, "list"))
        return do_list(argc, argv);
    if (!strcmp(sub, "show"))
        return do_show(argc, argv);
    if (!strcmp(sub, "compare"))
        return do_compare(argc, argv);
    cli_error("registry", "unknown subcommand '%s' (expected lint, list, show or compare)", sub);
    return EXIT_INPUT;
}
