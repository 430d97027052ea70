/* cmd_ref.c: `parity ref`: the exact reference outputs of a family point on
 * an input file (refimpl/), written atomically with the spec's hash and
 * every reduction's tree in __metadata__. */
#include "cli.h"
#include "pa_core.h"
#include "registry.h"
#include "refimpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char ref_usage[] =
    "usage: parity ref FAMILY.POINT --in IN.safetensors -o OUT.safetensors\n"
    "                  [--class C] [--shape DIMS] [--engine mpfr|fast] [--kernels DIR]\n"
    "                  [--threads N] [--time]\n"
    "\n"
    "Evaluates FAMILY.POINT (docs/families.md), resolved for class C in the\n"
    "registry DIR, exactly on the input tensors of IN (as `parity gen` writes\n"
    "them; names, dtypes, shapes and integer ranges are checked).  Every\n"
    "reduction runs the point's declared tree; elementwise functions are\n"
    "correctly rounded (a declared approximation is evaluated as cr, and the\n"
    "metadata says so).  OUT holds y (and residual_out for rmsnorm with a\n"
    "residual); its __metadata__ holds family, point, class, shape, engine,\n"
    "spec_hash, reduction.<name> (the filled tree), numerics.<name> (the\n"
    "canonical point), elementwise.<name>, and the inputs' seed and dist.\n"
    "\n"
    "example:\n"
    "  parity ref gemm.splitk --in in.safetensors -o ref.safetensors\n"
    "\n"
    "options:\n"
    "  --in FILE      the inputs (required)\n"
    "  -o, --out FILE the output (required); written to a temporary file and\n"
    "                 renamed, so a failure leaves an existing file untouched\n"
    "  --class C      the class (default: IN's metadata 'class', else cpu)\n"
    "  --shape DIMS   the shape (default: IN's metadata 'shape')\n"
    "  --engine E     mpfr (the truth) or fast (the same bits; when built in);\n"
    "                 default: the fastest built in\n"
    "  --kernels DIR  the registry (default: kernels)\n"
    "  --threads N    threads (default: all cores); never changes a bit\n"
    "  --time         print the evaluation time to stderr\n"
    "\n"
    "exit status: 0 success; 2 bad usage, registry, point, shape or input file\n"
    "(OUT is not written); 3 internal error or out of memory.\n";

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cmd_ref(int argc, char **argv)
{
    const char *fp = NULL, *inp = NULL, *outp = NULL, *cls = NULL, *shape = NULL, *engine_s = NULL;
    const char *kdir = "kernels", *threads_s = NULL;
    int bad = 0, timing = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(ref_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--time")) {
            timing = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--in", &inp, &bad) || cli_opt(argc, argv, &i, "-o", &outp, &bad) ||
            cli_opt(argc, argv, &i, "--out", &outp, &bad) || cli_opt(argc, argv, &i, "--class", &cls, &bad) ||
            cli_opt(argc, argv, &i, "--shape", &shape, &bad) || cli_opt(argc, argv, &i, "--engine", &engine_s, &bad) ||
            cli_opt(argc, argv, &i, "--kernels", &kdir, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad))
            continue;
        if (argv[i][0] == '-' || fp) {
            cli_error("ref", "unexpected argument '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        fp = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (!fp || !inp || !outp) {
        cli_error("ref", "needs FAMILY.POINT, --in and -o (see --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--out", outp}}, ins[] = {{"--in", inp}};
    if (cli_check_outputs("ref", outs, 1, ins, 1))
        return EXIT_INPUT;
    if (cli_check_outside("ref", outs, 1, "--kernels", kdir))
        return EXIT_INPUT;
    ref_opts o = {0, ref_engine_default()};
    if (engine_s) {
        int e = nx_engine_from_name(engine_s, 0);
        if (e < 0) {
            cli_error("ref", "--engine: unknown engine '%s' (expected mpfr or fast)", engine_s);
            return EXIT_INPUT;
        }
        if (!ref_engine_available((nx_engine_kind)e)) {
            cli_error("ref", "--engine: the %s engine is not built into this binary", engine_s);
            return EXIT_INPUT;
        }
        o.engine = (nx_engine_kind)e;
    }
    if (threads_s && (o.threads = (int)cli_long("ref", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;

    nx_err err = {0};
    reg_registry *reg = NULL;
    fam_spec spec;
    memset(&spec, 0, sizeof spec);
    st_file in, out;
    st_init(&in);
    st_init(&out);
    nx_status st;
    if ((st = st_read(inp, &in, &err)))
        goto done;
    double t0 = now();
    if ((st = pa_reference(kdir, fp, &cls, &shape, &in, inp, &o, &reg, &spec, &out, &err)))
        goto done;
    for (size_t i = 0; i < spec.nreds; i++)
        if (nx_tree_uses(spec.reds[i].point.tree, NX_T_ATOMIC))
            fprintf(stderr, "parity ref: note: reduction '%s' uses 'atomic', whose order is undefined; it is "
                            "evaluated in seq order, one admissible order, not a bit-exact reference\n",
                    spec.reds[i].name);
    if (timing)
        fprintf(stderr, "parity ref: %s.%s evaluated in %.3f s (engine %s)\n", spec.family, spec.point, now() - t0,
                nx_engine_name(o.engine));
    const char *seed = st_get_meta(&in, "seed"), *dist = st_get_meta(&in, "dist");
    if ((st = st_add_meta(&out, "family", spec.family, &err)) ||
        (st = st_add_meta(&out, "point", spec.point, &err)) || (st = st_add_meta(&out, "class", cls, &err)) ||
        (st = st_add_meta(&out, "shape", shape ? shape : "", &err)) ||
        (st = st_add_meta(&out, "engine", nx_engine_name(o.engine), &err)) ||
        (st = ref_spec_meta(&spec, &out, &err)) || (seed && (st = st_add_meta(&out, "seed", seed, &err))) ||
        (dist && (st = st_add_meta(&out, "dist", dist, &err))))
        goto done;
    st = st_write_atomic(outp, &out, &err);
done:
    st_free(&in);
    st_free(&out);
    fam_spec_free(&spec);
    reg_free(reg);
    return st ? cli_fail("ref", &err) : EXIT_PASS;
}
