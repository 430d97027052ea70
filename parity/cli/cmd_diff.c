/* cmd_diff.c: `parity diff A B`: two outputs (traces, safetensors, .npy)
 * element by element, and where they differ (parity/diff/, docs/diff.md). */
#include "safetensors.h"
#include "cli.h"
#include "diff.h"
#include "html.h"
#include "report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: parity diff A B [--tensor NAME] [--json] [--max-list K] [--dtype-a T] [--dtype-b T]\n"
    "                 [--html FILE]\n"
    "\n"
    "Compares two outputs bit for bit: traces, safetensors files or .npy arrays,\n"
    "in any pairing.  By default a trace's outputs, a safetensors file's every\n"
    "tensor and a .npy's array, in file order (the first diverging one is named\n"
    "and analysed); --tensor NAME picks one tensor of each file that holds several.\n"
    "Says how many elements differ, an ulp histogram in the output's format, the\n"
    "first and the worst element (index, both bit patterns in hex and %a), the\n"
    "largest absolute and relative error of B against A, which rows, columns and\n"
    "heads differ and the pattern they form (every k-th, the last, a tile edge,\n"
    "the partial last tile, whole blocks), and the KV heads, pages and experts\n"
    "the differing rows share where a trace names them (docs/diff.md).\n"
    "\n"
    "  --tensor NAME  the tensor to compare (a trace's input as in.NAME)\n"
    "  --json         print one JSON object instead of the text\n"
    "  --html FILE    also write a report to look at: the tensors' table, the ulp\n"
    "                 histogram and a heat map of the differing elements over\n"
    "                 (row, column) (docs/reports.md); not written on exit 2\n"
    "  --max-list K   elements and index ranges listed (default 10)\n"
    "  --dtype-a T, --dtype-b T  the format of a .npy's raw bytes (bf16, e4m3, ...)\n"
    "\n"
    "exit status: 0 identical; 1 some bit differs; 2 usage error, a file that\n"
    "cannot be read, a missing tensor, shapes or dtypes that differ (both named).\n";

/* The tensor of side s that diff_files compared as its k-th (files.c:
 * --tensor's, else a trace's k-th output, a file's k-th tensor, the .npy's
 * array). */
static const st_tensor *compared(const diff_source *s, const char *tensor, size_t k)
{
    if (s->kind == DIFF_NPY)
        return &s->npy.t;
    const st_file *f = s->kind == DIFF_TRACE ? &s->tr.file : &s->st;
    if (tensor)
        return st_find(f, tensor);
    for (size_t i = 0; i < f->ntensors; i++)
        if (s->kind != DIFF_TRACE || !trace_tensor_is_input(&f->tensors[i]))
            if (k-- == 0)
                return &f->tensors[i];
    return NULL;
}

/* --html FILE: the table of tensors, the detail's ulp histogram and a heat
 * map of its differing elements (docs/reports.md). */
static nx_status diff_html(const char *path, const diff_source *s, const char *tensor, const diff_files_result *r,
                           nx_err *err)
{
    const diff_result *dr = &r->detail;
    html_doc d;
    char title[512];
    snprintf(title, sizeof title, "parity diff %s %s", s[0].path, s[1].path);
    html_begin(&d, title);
    char shape[160], elems[64], mism[64], abs_e[48] = "-", rel_e[48] = "-";
    diff_shape_text(dr->ndim, dr->shape, shape, sizeof shape);
    snprintf(elems, sizeof elems, "%zu", dr->n);
    snprintf(mism, sizeof mism, "%zu", dr->mismatched);
    if (dr->has_err) {
        snprintf(abs_e, sizeof abs_e, "%a", dr->max_abs);
        snprintf(rel_e, sizeof rel_e, "%a", dr->max_rel);
    }
    const char *const facts[][2] = {{"A", s[0].path}, {"B", s[1].path}, {"tensor analysed", dr->name_a},
                                    {"dtype", st_dtype_name(dr->dtype)}, {"shape", shape}, {"elements", elems},
                                    {"elements whose bits differ", mism}, {"max |B - A|", abs_e},
                                    {"max |B - A| / |A|", rel_e}, {"note", dr->note}};
    html_facts(&d, facts, dr->note[0] ? 10 : 9);
    html_heading(&d, 2, "Tensors");
    html_verdict_row *rows = calloc(r->ntensors ? r->ntensors : 1, sizeof *rows);
    char (*why)[1024] = calloc(r->ntensors ? r->ntensors : 1, sizeof *why);
    if (!rows || !why) {
        free(rows);
        free(why);
        html_free(&d);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t detail_k = r->first_diverging == SIZE_MAX ? 0 : r->first_diverging;
    for (size_t k = 0; k < r->ntensors; k++) {
        rows[k].what = r->names[k];
        rows[k].tier = "bits";
        rows[k].verdict = r->mismatched[k] ? "fail: bits differ" : "pass: identical";
        rows[k].mismatches = (long long)r->mismatched[k];
        rows[k].n = (long long)r->n[k];
        rows[k].max_ulp = k == detail_k && dr->mismatched && dr->worst.has_ulp ? (long long)dr->worst.ulp : -1;
        rows[k].reason = why[k];
        if (k == detail_k && dr->mismatched) {
            size_t at = 0;
            for (int a = 0; a < dr->naxes && at + 8 < sizeof why[k]; a++) {
                char t[512];
                diff_pattern_text(&dr->axes[a].pat, dr->axes[a].unit, dr->axes[a].units, t, sizeof t);
                if (t[0])
                    at += (size_t)snprintf(why[k] + at, sizeof why[k] - at, "%s%s: %s", at ? "; " : "",
                                           dr->axes[a].units, t);
            }
        } else if (r->mismatched[k]) {
            snprintf(why[k], sizeof why[k], "not analysed: the first diverging tensor is");
        }
    }
    html_verdict_table(&d, rows, r->ntensors);
    free(rows);
    free(why);
    html_heading(&d, 2, "ulp histogram");
    if (dr->fmt >= 0) {
        const char *labels[DIFF_H_NBUCKETS];
        for (int b = 0; b < DIFF_H_NBUCKETS; b++)
            labels[b] = diff_bucket_name(b);
        html_histogram_svg(&d, dr->name_a, labels, dr->hist, DIFF_H_NBUCKETS);
    } else {
        html_para(&d, "(an integer dtype: no ulps)");
    }
    html_heading(&d, 2, "Where the elements differ");
    const st_tensor *ta = compared(&s[0], tensor, detail_k), *tb = compared(&s[1], tensor, detail_k);
    html_heat h;
    if (ta && tb && html_heat_from_tensors(&h, ta, tb) == 0) {
        if (dr->note[0])
            html_para(&d, "rows as each file stores them (the batches differ: see the note above)");
        html_heat_svg(&d, &h, dr->name_a, dr->ndim >= 2 ? "rows" : "row", "columns");
        html_heat_free(&h);
    } else {
        html_para(&d, "(no heat map: the tensors could not be read back)");
    }
    char *text = html_end(&d);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = st_write_text_atomic(path, text, err);
    free(text);
    return st;
}

int cmd_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *html = NULL, *tensor = NULL, *maxs = NULL, *hint[2] = {NULL, NULL};
    int json = 0, bad = 0, np = 0;
    for (int i = 1; i < argc; i++)
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(usage, stdout);
            return EXIT_PASS;
        }
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt(argc, argv, &i, "--tensor", &tensor, &bad) || cli_opt(argc, argv, &i, "--max-list", &maxs, &bad) ||
            cli_opt(argc, argv, &i, "--html", &html, &bad) ||
            cli_opt(argc, argv, &i, "--dtype-a", &hint[0], &bad) || cli_opt(argc, argv, &i, "--dtype-b", &hint[1], &bad))
            continue;
        if (cli_flag(argv, i, "--json")) {
            json = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("diff", "unknown option '%s' (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        if (np == 2) {
            cli_error("diff", "more than two files ('%s'); diff compares A with B (see --help)", argv[i]);
            return EXIT_INPUT;
        }
        paths[np++] = argv[i];
    }
    if (bad)
        return EXIT_INPUT;
    if (np != 2) {
        cli_error("diff", "needs two files, A and B (see --help)");
        return EXIT_INPUT;
    }
    long max_list = 10;
    if (maxs && (max_list = cli_long("diff", "--max-list", maxs, 1, 1000000)) < 0)
        return EXIT_INPUT;

    if (html) {
        const cli_file outs[] = {{"--html", html}}, ins[] = {{"A", paths[0]}, {"B", paths[1]}};
        if (cli_check_outputs("diff", outs, 1, ins, 2))
            return EXIT_INPUT;
    }

    diff_source s[2];
    diff_source_init(&s[0]);
    diff_source_init(&s[1]);
    diff_files_result r;
    memset(&r, 0, sizeof r);
    nx_err err = {0};
    int rc = EXIT_INPUT;
    for (int k = 0; k < 2; k++) {
        diff_source_free(&s[k]);
        if (diff_source_open(paths[k], hint[k], &s[k], &err) != NX_OK) {
            rc = cli_fail("diff", &err);
            goto out;
        }
    }
    if (diff_files(&s[0], &s[1], tensor, (size_t)max_list, &r, &err) != NX_OK) {
        rc = cli_fail("diff", &err);
        goto out;
    }
    if (json) {
        json_t *o = diff_files_json(&s[0], &s[1], &r);
        char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        if (!text) {
            cli_error("diff", "out of memory");
            rc = EXIT_INTERNAL;
            goto out;
        }
        puts(text);
        free(text);
    } else {
        char *text = diff_files_text(&s[0], &s[1], &r);
        if (!text) {
            cli_error("diff", "out of memory");
            rc = EXIT_INTERNAL;
            goto out;
        }
        fputs(text, stdout);
        free(text);
    }
    rc = r.first_diverging == SIZE_MAX ? EXIT_PASS : EXIT_PARITY;
    if (html && diff_html(html, s, tensor, &r, &err) != NX_OK)
        rc = cli_fail("diff", &err);
out:
    diff_files_result_free(&r);
    diff_source_free(&s[0]);
    diff_source_free(&s[1]);
    return rc;
}
