/* cmd_backend.c: `parity backend`: a class's out-of-tree backend asked
 * who it is (info), and a backend library served over the protocol of
 * docs/backends.md (host: how parity runs a dlopen backend in a child). */
#include "cli.h"
#include "campaign.h"
#include "ext_backend.h"
#include "registry.h"
#include "famdesc.h"

#include <stdio.h>
#include <string.h>

static const char backend_usage[] =
    "usage: parity backend info --class C [--kernels DIR] [--point F.P]\n"
    "       parity backend host LIB.so\n"
    "\n"
    "info: starts class C's backend (docs/backends.md) and prints what it\n"
    "says: its name, whether it is available (and why not), its device\n"
    "description, whether threads matter; with --point F.P, whether it has\n"
    "a kernel for that point of C (and the point's legacy kernel) and\n"
    "whether it declares it nondeterministic.\n"
    "\n"
    "host: serves the backend library LIB.so (devices/ext/parity_backend.h)\n"
    "over the served protocol on stdin and stdout, until EOF or bye: how\n"
    "parity runs a dlopen backend in a child process of its own.\n"
    "\n"
    "exit status: 0 the backend answered (and is available); 1 it is not\n"
    "available; 2 usage error or bad input (no such class); 3 the backend\n"
    "could not be started or did not speak the protocol.\n";

static int info(int argc, char **argv)
{
    const char *cls = NULL, *kdir = "kernels", *point = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(backend_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) ||
            cli_opt(argc, argv, &i, "--point", &point, &bad))
            continue;
        if (!bad) {
            cli_error("backend", "unknown argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
    }
    if (bad)
        return EXIT_INPUT;
    if (!cls) {
        cli_error("backend", "info needs --class C (see --help)");
        return EXIT_INPUT;
    }
    nx_err err = {0};
    reg_registry *reg;
    if (reg_load(kdir, &reg, &err) != NX_OK)
        return cli_fail("backend", &err);
    int known = 0;
    for (size_t i = 0; i < reg_class_count(reg); i++)
        known |= strcmp(reg_class_name(reg, i), cls) == 0;
    if (!known) {
        cli_error("backend", "class '%s' is not in the registry %s", cls, kdir);
        reg_free(reg);
        return EXIT_INPUT;
    }
    reg_backend rb;
    int named = reg_class_backend(reg, cls, &rb);
    const dev_backend *be = camp_class_backend(reg, cls);
    if (!be) {
        cli_error("backend", "class '%s' has no backend (its chain names none and reaches neither cpu nor an sm class)",
                  cls);
        reg_free(reg);
        return EXIT_INPUT;
    }
    char why[1024] = "", dev[8192] = "";
    int avail = dev_available(be, why, sizeof why);
    printf("class %s: backend %s", cls, be->name);
    if (named && !rb.builtin)
        printf(" (%s = \"%s\" in %s/HARDWARE.toml)", rb.serve ? "serve" : "dlopen", rb.serve ? rb.serve : rb.dlopen,
               rb.dir);
    printf("\n");
    if (ext_broken(be, why, sizeof why)) {
        printf("  broken: %s\n", why);
        reg_free(reg);
        return EXIT_INTERNAL;
    }
    printf("  available: %s%s%s\n", avail ? "yes" : "no", avail ? "" : ": ", avail ? "" : why);
    int rc = avail ? EXIT_PASS : EXIT_PARITY;
    if (avail) {
        if (dev_describe(be, dev, sizeof dev, &err) == NX_OK)
            printf("  device: %s\n", dev);
        else {
            printf("  device: (describe failed: %s)\n", err.msg);
            rc = EXIT_INTERNAL;
        }
        printf("  threads matter: %s\n", be->threaded ? "yes (the campaign reruns at other thread counts)" : "no");
    }
    if (avail && point) {
        fam_spec spec;
        memset(&spec, 0, sizeof spec);
        char fam[128];
        snprintf(fam, sizeof fam, "%.*s", (int)strcspn(point, "."), point);
        if (reg_resolve(reg, cls, point, fam_preset_shape("small", fam), &spec, &err) != NX_OK) {
            rc = cli_fail("backend", &err);
        } else {
            char legacy[300];
            snprintf(legacy, sizeof legacy, "%s_legacy", spec.kernel ? spec.kernel : "");
            int has = dev_supports(be, &spec, spec.kernel);
            printf("  %s: kernel %s: %s%s\n", point, spec.kernel ? spec.kernel : "(none)", has ? "yes" : "no",
                   has && dev_nondeterministic(be, &spec, spec.kernel) ? " (nondeterministic on purpose)" : "");
            if (spec.kernel)
                printf("  %s: legacy kernel %s: %s\n", point, legacy, dev_supports(be, &spec, legacy) ? "yes" : "no");
            nx_err e2 = {0};
            if (has && dev_check_params(be, &spec, spec.kernel, &e2) != NX_OK)
                printf("  %s: refuses the point's params: %s\n", point, e2.msg);
        }
        fam_spec_free(&spec);
    }
    ext_close_all();
    reg_free(reg);
    return rc;
}

int cmd_backend(int argc, char **argv)
{
    if (argc < 2 || cli_flag(argv, 1, "--help") || cli_flag(argv, 1, "-h")) {
        fputs(backend_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INPUT : EXIT_PASS;
    }
    if (!strcmp(argv[1], "info"))
        return info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "host")) {
        if (argc == 3 && (cli_flag(argv, 2, "--help") || cli_flag(argv, 2, "-h"))) {
            fputs(backend_usage, stdout);
            return EXIT_PASS;
        }
        if (argc != 3) {
            cli_error("backend", "host needs exactly one library: parity backend host LIB.so (see --help)");
            return EXIT_INPUT;
        }
        return ext_host_main(argv[2]);
    }
    cli_error("backend", "unknown subcommand '%s' (info or host; see --help)", argv[1]);
    return EXIT_INPUT;
}
