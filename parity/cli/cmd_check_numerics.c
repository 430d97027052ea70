/* cmd_check_numerics.c: `parity check --numerics P --in IN --out Y`: any
 * kernel's output y (a safetensors tensor or a .npy array, one value per
 * row) checked against the exact reference of the numerics point P on the
 * rows of IN, without a registry.  IN is what `parity reduce` reads
 * (rows_check_inputs); the reference is the engines' result (fast, or
 * MPFR); the comparison and its report are Tier 2's (compare.h): bit for
 * bit, or, for a point whose tree uses `atomic` (no defined order), within
 * the tree's bound of the exact value (nx_bound, every order covered). */
#include "safetensors.h"
#include "cli.h"
#include "pa_core.h"
#include "rows_input.h"
#include "compare.h"
#include "html.h"
#include "nx_bound.h"
#include "nx_engine.h"
#include "npy.h"
#include "point_toml.h"
#include "report.h"
#include "rows.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: parity check --numerics POINT --in IN.safetensors --out Y.safetensors|Y.npy\n"
    "                    [--name y] [--dtype bf16|fp16|...] [--engine fast|mpfr]\n"
    "                    [--threads N] [--json FILE] [--html FILE]\n"
    "\n"
    "Checks any kernel's output against the exact reference of a numerics point,\n"
    "without a registry: IN as for `parity reduce` (tensor 'a' [rows, n] and, for a\n"
    "dot product, 'b' of the same shape), Y the kernel's results, one per row:\n"
    "tensor 'y' (or --name) of shape [rows] in a safetensors file, or a .npy array\n"
    "(--dtype names the format of raw bytes, as for --npy).  Its dtype must be the\n"
    "point's `out` format.  Tier 2: bit for bit against the reference; a point\n"
    "whose tree uses `atomic` has no defined order and is checked within the bound\n"
    "its tree gives against the exact value, in any order (docs/tolerance.md).\n"
    "Mismatches are named by row.  --html FILE writes a report to look at: the\n"
    "verdict, the ulp histogram, a heat map of the rows that differ and the\n"
    "point's tree drawn as a tree (docs/reports.md).\n"
    "\n"
    "exit status: 0 pass; 1 the output differs (parity failure); 2 bad point,\n"
    "file, tensor, dtype or shape, named with the file and tensor.\n";

typedef struct cn_job {
    nx_point pt;
    int have_pt;
    st_file in, yf;
    npy_array ny;
    pa_check_out c;
} cn_job;

static void job_free(cn_job *j)
{
    if (j->have_pt)
        nx_point_free(&j->pt);
    st_free(&j->in);
    st_free(&j->yf);
    npy_free(&j->ny);
    pa_check_out_free(&j->c);
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* --html FILE: the verdict, the ulp histogram, where the rows differ (rows
 * wrapped into lines of up to 64) and the point's tree (docs/reports.md). */
static nx_status numerics_html(const char *path, const cn_job *j, const char *outp, size_t rows, const cmp_result *res,
                               const char *why, nx_err *err)
{
    html_doc d;
    char title[512];
    snprintf(title, sizeof title, "parity check --numerics: %s", outp);
    html_begin(&d, title);
    char *pt = nx_point_print(&j->pt);
    const char *const facts[][2] = {{"output", outp}, {"numerics", pt ? pt : "?"}};
    html_facts(&d, facts, 2);
    html_heading(&d, 2, "Verdict");
    html_verdict_row row = {outp, "Tier 2", res->mismatched ? "fail" : "pass", (long long)res->mismatched,
                            (long long)res->n, res->max_ulp_index == CMP_NO_INDEX ? -1 : (long long)res->max_ulp, why};
    html_verdict_table(&d, &row, 1);
    html_heading(&d, 2, "ulp histogram");
    const char *labels[CMP_HIST_NBUCKETS];
    for (int b = 0; b < CMP_HIST_NBUCKETS; b++)
        labels[b] = cmp_hist_bucket_name(b);
    html_histogram_svg(&d, "the output against the reference", labels, res->hist, CMP_HIST_NBUCKETS);
    html_heading(&d, 2, "Rows whose bits differ from the reference");
    int64_t w = rows < 64 ? (int64_t)(rows ? rows : 1) : 64;
    html_heat h;
    if (html_heat_init(&h, ((int64_t)rows + w - 1) / w, w) == 0) {
        for (size_t r = 0; r < rows; r++)
            if (j->c.gb[r] != j->c.rb[r])
                html_heat_add(&h, (int64_t)r / w, (int64_t)r % w);
        char rl[64], cl[64];
        snprintf(rl, sizeof rl, "row / %lld", (long long)w);
        snprintf(cl, sizeof cl, "row %% %lld", (long long)w);
        html_heat_svg(&d, &h, "rows, wrapped into lines", rl, cl);
        html_heat_free(&h);
    } else {
        d.oom = 1;
    }
    html_heading(&d, 2, "The point's tree");
    html_tree_svg(&d, j->c.prog, pt ? pt : "?", 0);
    free(pt);
    char *text = html_end(&d);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = st_write_text_atomic(path, text, err);
    free(text);
    return st;
}

int cmd_check_numerics(int argc, char **argv)
{
    const char *numerics = NULL, *inp = NULL, *outp = NULL, *name = NULL, *dtype = NULL, *engine = "fast",
               *threads_s = NULL, *json = NULL, *html = NULL;
    int bad = 0;
    for (int i = 1; i < argc; i++)
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--numerics", &numerics, &bad) || cli_opt(argc, argv, &i, "--in", &inp, &bad) ||
            cli_opt(argc, argv, &i, "--out", &outp, &bad) || cli_opt(argc, argv, &i, "--name", &name, &bad) ||
            cli_opt(argc, argv, &i, "--dtype", &dtype, &bad) || cli_opt(argc, argv, &i, "--engine", &engine, &bad) ||
            cli_opt(argc, argv, &i, "--threads", &threads_s, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad))
            continue;
        cli_error("check", "--numerics: unknown argument '%s' (see --numerics --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!numerics || !inp || !outp) {
        cli_error("check", "--numerics needs --in and --out (see --numerics --help)");
        return EXIT_INPUT;
    }
    const cli_file outs[] = {{"--json", json}, {"--html", html}}, ins[] = {{"--in", inp}, {"--out", outp}};
    if (cli_check_outputs("check", outs, 2, ins, 2))
        return EXIT_INPUT;
    int eng = nx_engine_from_name(engine, 0), mpfr = eng == NX_ENGINE_MPFR;
    if (eng < 0) {
        cli_error("check", "--engine: unknown engine '%s' (expected fast or mpfr)", engine);
        return EXIT_INPUT;
    }
    int threads = 0;
    if (threads_s && (threads = (int)cli_long("check", "--threads", threads_s, 1, 4096)) < 0)
        return EXIT_INPUT;
    if (!name)
        name = "y";

    cn_job j;
    memset(&j, 0, sizeof j);
    st_init(&j.in);
    st_init(&j.yf);
    npy_init(&j.ny);
    nx_err err = {0};
    nx_status st;
    const st_tensor *ty;
    /* the point and IN, as `parity reduce` reads them */
    if ((st = pt_from_text(numerics, "--numerics", &j.pt, &err)))
        goto fail;
    j.have_pt = 1;
    if ((st = st_read(inp, &j.in, &err)) || (st = pa_check_prepare(&j.pt, inp, &j.in, &j.c, &err)))
        goto fail;
    size_t rows = j.c.rows;
    /* the kernel's output */
    if (ends_with(outp, ".npy")) {
        if ((st = npy_read(outp, dtype, &j.ny, &err)))
            goto fail;
        ty = &j.ny.t;
    } else {
        if (dtype) {
            st = nx_err_set(&err, NX_EINVAL, "--dtype applies to a .npy output; %s is a safetensors file", outp);
            goto fail;
        }
        if ((st = st_read(outp, &j.yf, &err)))
            goto fail;
        if (!(ty = st_find(&j.yf, name))) {
            st = nx_err_set(&err, NX_EINVAL, "%s: no tensor '%s' (expected the kernel's results, shape [%zu])", outp, name,
                            rows);
            goto fail;
        }
    }
    const char *tname = ty == &j.ny.t ? "the array" : name;
    if ((st = pa_check_numerics(inp, &j.in, outp, tname, ty, mpfr, threads, &j.c, &err)))
        goto fail;
    const cmp_result res = j.c.res;
    const char *why = j.c.why;
    char *verdict = pa_check_text(&j.c, outp);
    if (!verdict) {
        st = nx_err_set(&err, NX_ENOMEM, "out of memory");
        goto fail;
    }
    fputs(verdict, stdout);
    free(verdict);
    int rc = res.mismatched ? EXIT_PARITY : EXIT_PASS;
    if (json) {
        json_t *o = json_object();
        char *pt = nx_point_print(&j.pt);
        json_object_set_new(o, "output", json_string(outp));
        json_object_set_new(o, "numerics", json_string(pt ? pt : numerics));
        json_object_set_new(o, "verdict", json_string(res.mismatched ? "fail" : "pass"));
        json_object_set_new(o, "detail", json_string(why));
        json_object_set_new(o, "compare", cmp_result_json(&res));
        free(pt);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (!s || st_write_text_atomic(json, s, &err) != NX_OK)
            rc = s ? cli_fail("check", &err) : EXIT_INTERNAL;
        free(s);
    }
    if (html && rc != EXIT_INTERNAL && numerics_html(html, &j, outp, rows, &res, why, &err) != NX_OK)
        rc = cli_fail("check", &err);
    job_free(&j);
    return rc;
fail:
    job_free(&j);
    return cli_fail("check", &err);
}
