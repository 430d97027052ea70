/* html.h: reports people look at (docs/reports.md).  One self-contained
 * HTML file: an inline style sheet, inline SVG, no script and nothing
 * fetched from a network.
 *
 * A document is built in memory (html_begin ... html_end) and written by
 * the command through its atomic output helper, so that a run that ends
 * as bad input writes nothing.  Every string that comes from input (ids,
 * file names, messages, tensor names) goes through html_esc, which
 * escapes & < > " ' so that no input can open a tag or leave an
 * attribute.
 *
 * The pieces:
 *   html_verdict_table  rows of point/trace, tier, verdict, mismatches,
 *                       max ulp, reason
 *   html_histogram_svg  an ulp histogram: one bar per bucket, the height
 *                       log-scaled (log10(1 + count)), the count on the bar
 *   html_heat_*         a heat map of mismatches over (row, column),
 *                       binned to at most HTML_HEAT_MAX x HTML_HEAT_MAX cells
 *   html_tree_svg       an expanded numerics program drawn as a tree
 *
 * The library never prints. */
#ifndef PARITY_HTML_H
#define PARITY_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "nx_program.h"
#include "safetensors.h"

typedef struct html_doc {
    char *s;
    size_t n, cap;
    int oom;
} html_doc;

/* Starts a document: doctype, head with title (escaped) and the style
 * sheet, an <h1> with the title. */
void html_begin(html_doc *d, const char *title);
/* Closes the document; returns the text (owned by the caller) or NULL
 * after an allocation failure.  d is empty afterwards. */
char *html_end(html_doc *d);
void html_free(html_doc *d);

/* Raw markup (never input). */
void html_raw(html_doc *d, const char *markup);
void html_rawf(html_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text from input, escaped. */
void html_esc(html_doc *d, const char *text);
/* <hN>text</hN>, <p>text</p>, text escaped. */
void html_heading(html_doc *d, int level, const char *text);
void html_para(html_doc *d, const char *text);
/* A two-column table of facts (key, value), both escaped. */
void html_facts(html_doc *d, const char *const (*kv)[2], size_t n);

/* One row of the verdict table.  mismatches and max_ulp < 0: not known
 * ("-"). */
typedef struct html_verdict_row {
    const char *what;     /* point or trace */
    const char *tier;     /* "Tier 2", "determinism", ... */
    const char *verdict;  /* "pass", "fail", "skip", "error" */
    long long mismatches;
    long long n;          /* elements compared, < 0 unknown */
    long long max_ulp;
    const char *reason;
} html_verdict_row;

void html_verdict_table(html_doc *d, const html_verdict_row *rows, size_t n);

/* An ulp histogram: labels[k] and counts[k] for k < nb, titled (escaped). */
void html_histogram_svg(html_doc *d, const char *title, const char *const *labels, const size_t *counts,
                        int nb);

/* The heat map's grid: rows x cols of the output (leading axes flattened
 * into rows, the last axis the columns; a 1-D output is one row), binned
 * so that each cell covers rbin x cbin elements. */
#define HTML_HEAT_MAX 128
typedef struct html_heat {
    int64_t rows, cols;
    int64_t rbin, cbin;
    int gr, gc;
    uint32_t *cnt;        /* [gr * gc] mismatches per cell */
    size_t total;
} html_heat;

int html_heat_init(html_heat *h, int64_t rows, int64_t cols); /* 0, or -1 out of memory */
void html_heat_add(html_heat *h, int64_t r, int64_t c);
void html_heat_free(html_heat *h);
/* The grid of elements whose bits differ between a and b (same dtype and
 * shape; else returns -1 and leaves h empty). */
int html_heat_from_tensors(html_heat *h, const st_tensor *a, const st_tensor *b);
/* The heat map as SVG with its legend; title is escaped; row_unit and
 * col_unit name the axes ("rows", "columns") and are the caller's literals,
 * written as they are (never input). */
void html_heat_svg(html_doc *d, const html_heat *h, const char *title, const char *row_unit,
                   const char *col_unit);

/* An expanded program drawn as a tree: additions as nodes (F: a fused
 * multiply-add), atom groups as multi-way nodes, terms as leaves.  At most
 * max_depth levels are drawn (0 or more than 10: 10), fewer where more than
 * 64 leaves would be drawn (down to 2 levels); deeper subtrees are
 * collapsed into one triangle each that says how many terms it holds and
 * which.  caption (escaped) is drawn under it, usually the point's
 * canonical string. */
void html_tree_svg(html_doc *d, const nx_program *p, const char *caption, int max_depth);

#endif
