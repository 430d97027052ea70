/* cmd_gen.c: `parity gen`: the inputs of a family point at a shape, from
 * the registry and the counter-based generator (docs/families.md, "Inputs"),
 * written atomically with what made them in __metadata__. */
#include "cli.h"
#include "registry.h"
#include "refimpl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char gen_usage[] =
    "usage: parity gen FAMILY.POINT --shape DIMS --seed S -o OUT.safetensors\n"
    "                  [--class C] [--dist normal|uniform|int|adversarial] [--specials]\n"
    "                  [--kernels DIR] [--threads N]\n"
    "\n"
    "Generates every input tensor of FAMILY.POINT (docs/families.md) at the shape\n"
    "DIMS (\"M=16,N=4096,K=4096\"), resolved for class C in the registry DIR.\n"
    "Each element is a pure function of (seed, tensor name, index): Philox4x32-10,\n"
    "so every class, CPU or GPU, regenerates the same bits.  OUT's __metadata__\n"
    "holds family, point, class, shape, seed, dist, generator and spec_hash.\n"
    "\n"
    "example:\n"
    "  parity gen gemv_w4a16.per_group --shape N=14336,K=4096 --seed 1 -o in.safetensors\n"
    "\n"
    "options:\n"
    "  --shape DIMS   the family's shape dimensions (required unless it has none)\n"
    "  --seed S       a 64-bit seed, decimal or 0x hex (required)\n"
    "  -o, --out FILE the output (required); written to a temporary file and\n"
    "                 renamed, so a failure leaves an existing file untouched\n"
    "  --class C      the class whose view of the registry is used (default cpu)\n"
    "  --dist D       normal (default), uniform [-1, 1), int (integers small enough\n"
    "                 that every reduction is exact in any order), adversarial\n"
    "                 (cancellation pairs, 2^-40..2^40, subnormals, signed zeros)\n"
    "  --specials     adversarial only: also +inf, -inf and NaN\n"
    "  --kernels DIR  the registry (default: kernels)\n"
    "  --threads N    generation threads (default: all cores); never changes a bit\n"
    "\n"
    "exit status: 0 success; 2 bad usage, registry, point or shape (OUT is not\n"
    "written); 3 internal error or out of memory.\n";

/* A 64-bit unsigned integer, decimal or 0x hex; -1 when malformed. */
static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int cmd_gen(int argc, char **argv)
{
    const char *fp = NULL, *shape = NULL, *seed_s = NULL, *outp = NULL, *cls = "cpu", *dist_s = "normal";
    const char *kdir = "kernels", *threads_s = NULL;
    int specials = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(gen_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--specials")) {
            specials = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--shape", &shape, &bad) || cli_opt(argc, argv, &i, "--seed", &seed_s, &bad) ||
            cli_opt(argc, argv, &i, "-o", &outp, &bad) || cli_opt(argc, argv, &i, "--out", &outp, &bad) ||
            cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--dist", &dist_s, &bad) ||
            cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad))
            continue;
        if (argv[i][0] == '-' || fp) {
            cli_error("gen", "unexpected argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        fp = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (!fp || !seed_s || !outp) {
        cli_error("gen", "needs FAMILY.POINT, --seed and -o (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--out", outp}};
    if (cli_check_outputs("gen", outs, 1, NULL, 0))
        return EXIT_INPUT;
    if (cli_check_outside("gen", outs, 1, "--kernels", kdir))
        return EXIT_INPUT;
    ref_gen_opts o = {0, NX_DIST_NORMAL, specials, 0};
    if (parse_u64(seed_s, &o.seed)) {
        cli_error("gen", "--seed: '%s' is not an unsigned 64-bit integer", seed_s);
        return EXIT_INPUT;
    }
    int d = nx_dist_from_name(dist_s);
    if (d < 0) {
        cli_error("gen", "--dist: unknown distribution '%s' (expected normal, uniform, int or adversarial)", dist_s);
        return EXIT_INPUT;
    }
    o.dist = (nx_dist)d;
    if (specials && o.dist != NX_DIST_ADVERSARIAL) {
        cli_error("gen", "--specials goes with --dist adversarial");
        return EXIT_INPUT;
    }
    if (threads_s && (o.threads = (int)cli_long("gen", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;

    nx_err err = {0};
    reg_registry *reg = NULL;
    fam_spec spec;
    memset(&spec, 0, sizeof spec);
    st_file out;
    st_init(&out);
    nx_status st;
    char seed_txt[32];
    snprintf(seed_txt, sizeof seed_txt, "%llu", (unsigned long long)o.seed);
    if ((st = reg_load(kdir, &reg, &err)) || (st = reg_resolve(reg, cls, fp, shape, &spec, &err)) ||
        (st = ref_generate(&spec, &o, &out, &err)))
        goto done;
    if ((st = st_add_meta(&out, "family", spec.family, &err)) ||
        (st = st_add_meta(&out, "point", spec.point, &err)) || (st = st_add_meta(&out, "class", cls, &err)) ||
        (st = st_add_meta(&out, "shape", shape ? shape : "", &err)) ||
        (st = st_add_meta(&out, "seed", seed_txt, &err)) ||
        (st = st_add_meta(&out, "dist", nx_dist_name(o.dist), &err)) ||
        (specials && (st = st_add_meta(&out, "specials", "true", &err))) ||
        (st = st_add_meta(&out, "generator", "philox4x32-10", &err)) ||
        (spec.hash && (st = st_add_meta(&out, "spec_hash", spec.hash, &err))))
        goto done;
    st = st_write_atomic(outp, &out, &err);
done:
    st_free(&out);
    fam_spec_free(&spec);
    reg_free(reg);
    return st ? cli_fail("gen", &err) : EXIT_PASS;
}
