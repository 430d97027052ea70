/* cmd_reduce.c: `parity reduce`, NUMERICS.md §6: evaluates a numerics point
 * over the rows of IN and writes tensor y to OUT (atomically: a failure
 * leaves OUT as it was). */
#include "cli.h"
#include "nx_engine.h"
#include "point_toml.h"
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char reduce_usage[] =
    "usage: parity reduce --numerics POINT --in IN.safetensors --out OUT.safetensors\n"
    "                     [--engine mpfr] [--threads N]\n"
    "\n"
    "Evaluates the numerics point POINT (an inline TOML table, NUMERICS.md §3)\n"
    "over every row of IN: tensor 'a' of shape [rows, n] and, for a dot product,\n"
    "tensor 'b' of the same shape, in any dtype of NUMERICS.md §1.  Row r's terms\n"
    "are a[r,i]*b[r,i] (or a[r,i]).  OUT receives tensor 'y' of shape [rows] in the\n"
    "point's `out` format (tf32 and e8m13 are stored as F32), with the canonical\n"
    "point and its hash in __metadata__.\n"
    "\n"
    "example:\n"
    "  parity reduce --numerics '{ acc = \"fp32\", tree = \"split(4, seq, pairwise)\" }' \\\n"
    "                --in in.safetensors --out y.safetensors\n"
    "\n"
    "options:\n"
    "  --numerics P   the numerics point (required)\n"
    "  --in FILE      input safetensors (required)\n"
    "  --out FILE     output safetensors (required); written to a temporary file\n"
    "                 and renamed, so a failure leaves an existing file untouched\n"
    "  --engine E     mpfr (the exact reference; the default)\n"
    "  --threads N    rows evaluated in parallel (default: all cores)\n"
    "\n"
    "exit status: 0 success; 2 bad point, file or shape (OUT is not written);\n"
    "3 internal error.\n";

typedef struct reduce_job {
    nx_point pt;
    int have_pt;
    st_file in, out;
    double *a, *b, *y;
    nx_program *prog;
} reduce_job;

static void job_free(reduce_job *j)
{
    if (j->have_pt)
        nx_point_free(&j->pt);
    st_free(&j->in);
    st_free(&j->out);
    free(j->a);
    free(j->b);
    free(j->y);
    nx_program_free(j->prog);
}

/* Checks IN's tensors: 'a' [rows, n], optional 'b' of the same shape, nothing else. */
static nx_status check_inputs(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                              nx_err *err)
{
    *a = st_find(f, "a");
    *b = st_find(f, "b");
    for (size_t i = 0; i < f->ntensors; i++) {
        const char *nm = f->tensors[i].name;
        if (strcmp(nm, "a") != 0 && strcmp(nm, "b") != 0)
            return nx_err_set(err, NX_EINVAL, "%s: unexpected tensor '%s' (expected 'a' and, for a dot product, 'b')",
                              path, nm);
    }
    if (!*a)
        return nx_err_set(err, NX_EINVAL, "%s: no tensor 'a' (expected 'a' of shape [rows, n])", path);
    const st_tensor *ts[2] = {*a, *b};
    for (int k = 0; k < 2; k++) {
        const st_tensor *t = ts[k];
        if (!t)
            continue;
        if (t->ndim != 2)
            return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' has %d dimensions; expected 2 ([rows, n])", path,
                              t->name, t->ndim);
        if (rows_fmt_of_dtype(t->dtype) < 0)
            return nx_err_set(err, NX_EINVAL, "%s: tensor '%s': dtype %s is not a number format of NUMERICS.md §1",
                              path, t->name, st_dtype_name(t->dtype));
    }
    if (*b && ((*b)->shape[0] != (*a)->shape[0] || (*b)->shape[1] != (*a)->shape[1]))
        return nx_err_set(err, NX_EINVAL, "%s: tensor 'b' has shape [%lld, %lld] but 'a' has [%lld, %lld]", path,
                          (long long)(*b)->shape[0], (long long)(*b)->shape[1], (long long)(*a)->shape[0],
                          (long long)(*a)->shape[1]);
    return NX_OK;
}

static double *alloc_vals(size_t count)
{
    return malloc((count ? count : 1) * sizeof(double));
}

int cmd_reduce(int argc, char **argv)
{
    const char *numerics = NULL, *inp = NULL, *outp = NULL, *engine = "mpfr", *threads_s = NULL;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(reduce_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_opt(argc, argv, &i, "--numerics", &numerics, &bad) || cli_opt(argc, argv, &i, "--in", &inp, &bad) ||
            cli_opt(argc, argv, &i, "--out", &outp, &bad) || cli_opt(argc, argv, &i, "--engine", &engine, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad))
            continue;
        cli_error("reduce", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!numerics || !inp || !outp) {
        cli_error("reduce", "needs --numerics, --in and --out (see --help)");
        return EXIT_INPUT;
    }
    if (strcmp(engine, "mpfr") != 0) {
        cli_error("reduce", "--engine: unknown engine '%s' (expected mpfr)", engine);
        return EXIT_INPUT;
    }
    int threads = 0;
    if (threads_s && (threads = (int)cli_long("reduce", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;

    reduce_job j;
    memset(&j, 0, sizeof j);
    st_init(&j.in);
    st_init(&j.out);
    nx_err err = {0};
    nx_status st;
    int rc = EXIT_PASS;
    const st_tensor *ta, *tb;
    if ((st = pt_from_text(numerics, "--numerics", &j.pt, &err)))
        goto fail;
    j.have_pt = 1;
    if ((st = st_read(inp, &j.in, &err)) || (st = check_inputs(inp, &j.in, &ta, &tb, &err)))
        goto fail;
    size_t rows = (size_t)ta->shape[0], n = (size_t)ta->shape[1];
    if ((st = nx_program_build(&j.pt, n, tb != NULL, &j.prog, &err))) {
        nx_err_prefix(&err, "--numerics");
        goto fail;
    }
    if (j.prog->nondeterministic)
        fprintf(stderr, "parity reduce: note: the tree uses 'atomic', whose order is undefined; the result is "
                        "its seq order, one admissible order, not a bit-exact reference\n");
    j.a = alloc_vals(ta->nelem);
    j.b = tb ? alloc_vals(tb->nelem) : NULL;
    j.y = alloc_vals(rows);
    if (!j.a || (tb && !j.b) || !j.y) {
        st = nx_err_set(&err, NX_ENOMEM, "out of memory for %zu x %zu values", rows, n);
        goto fail;
    }
    if ((st = rows_decode(ta, j.a, &err)) || (tb && (st = rows_decode(tb, j.b, &err)))) {
        nx_err_prefix(&err, "%s", inp);
        goto fail;
    }
    nx_rows in = {rows, (nx_fmt)rows_fmt_of_dtype(ta->dtype), j.a,
                  tb ? (nx_fmt)rows_fmt_of_dtype(tb->dtype) : NX_FP64, j.b};
    if ((st = nx_mpfr_reduce(j.prog, &in, j.y, threads, &err)))
        goto fail;

    nx_fmt of = j.prog->out;
    int64_t shape[1] = {(int64_t)rows};
    st_tensor *ty;
    char hash[65], *ptxt = nx_point_print(&j.pt);
    if ((st = st_add_tensor(&j.out, "y", rows_dtype_of_fmt(of), 1, shape, &ty, &err)) ||
        (st = rows_encode(of, j.y, rows, ty, ty->data, &err))) {
        free(ptxt);
        if (st == NX_EINVAL)
            nx_err_prefix(&err, "cannot write the result (the element index is the row)");
        goto fail;
    }
    if ((st = nx_program_hash(j.prog, hash, &err)) || (st = st_add_meta(&j.out, "numerics", ptxt ? ptxt : "", &err)) ||
        (st = st_add_meta(&j.out, "numerics_hash", hash, &err)) ||
        (st = st_add_meta(&j.out, "out_format", nx_format(of)->name, &err)) ||
        (st = st_add_meta(&j.out, "engine", engine, &err))) {
        free(ptxt);
        goto fail;
    }
    free(ptxt);
    if ((st = st_write_atomic(outp, &j.out, &err)))
        goto fail;
    job_free(&j);
    return rc;
fail:
    job_free(&j);
    return cli_fail("reduce", &err);
}
