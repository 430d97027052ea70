/* html.c: the HTML writer of reports people look at (html.h,
 * docs/reports.md). */
#include "html.h"

#include "nx_format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(html_doc *d, const char *s, size_t n)
{
    if (d->oom)
        return;
    if (d->n + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 4096;
        while (cap < d->n + n + 1)
            cap *= 2;
        char *q = realloc(d->s, cap);
        if (!q) {
            d->oom = 1;
            return;
        }
        d->s = q;
        d->cap = cap;
    }
    memcpy(d->s + d->n, s, n);
    d->n += n;
    d->s[d->n] = 0;
}

void html_raw(html_doc *d, const char *markup)
{
    put(d, markup, strlen(markup));
}

void html_rawf(html_doc *d, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    if ((size_t)w < sizeof small) {
        put(d, small, (size_t)w);
        return;
    }
    char *big = malloc((size_t)w + 1);
    if (!big) {
        d->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)w + 1, fmt, ap);
    va_end(ap);
    put(d, big, (size_t)w);
    free(big);
}

void html_esc(html_doc *d, const char *text)
{
    if (!text)
        return;
    const char *run = text;
    for (const char *p = text; *p; p++) {
        const char *rep = NULL;
        switch (*p) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: break;
        }
        /* Control characters other than tab and newline are not text. */
        if (!rep && (unsigned char)*p < 0x20 && *p != '\t' && *p != '\n')
            rep = "&#xfffd;";
        if (rep) {
            put(d, run, (size_t)(p - run));
            put(d, rep, strlen(rep));
            run = p + 1;
        }
    }
    put(d, run, strlen(run));
}

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}\n"
    "table{border-collapse:collapse;margin:0.6em 0}\n"
    "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top;font-size:0.9em}\n"
    "th{background:#e8e8f0}td.num{text-align:right;font-family:monospace}\n"
    "tr.pass td.v{background:#d8f0d8}tr.fail td.v{background:#f6c8c8;font-weight:bold}\n"
    "tr.skip td.v{background:#eee}tr.error td.v{background:#f6e0a8}\n"
    "td.reason{max-width:48em;font-size:0.85em}\n"
    "figure{margin:0.8em 0}figcaption{font-size:0.85em;color:#444;font-family:monospace;word-break:break-all}\n"
    "svg text{font-family:sans-serif}\n";

void html_begin(html_doc *d, const char *title)
{
    memset(d, 0, sizeof *d);
    html_raw(d, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>");
    html_esc(d, title);
    html_raw(d, "</title>\n<style>\n");
    html_raw(d, style);
    html_raw(d, "</style>\n</head>\n<body>\n<h1>");
    html_esc(d, title);
    html_raw(d, "</h1>\n");
}

char *html_end(html_doc *d)
{
    html_raw(d, "</body>\n</html>\n");
    if (d->oom) {
        html_free(d);
        return NULL;
    }
    char *s = d->s;
    memset(d, 0, sizeof *d);
    return s;
}

void html_free(html_doc *d)
{
    free(d->s);
    memset(d, 0, sizeof *d);
}

void html_heading(html_doc *d, int level, const char *text)
{
    level = level < 1 ? 1 : level > 4 ? 4 : level;
    html_rawf(d, "<h%d>", level);
    html_esc(d, text);
    html_rawf(d, "</h%d>\n", level);
}

void html_para(html_doc *d, const char *text)
{
    html_raw(d, "<p>");
    html_esc(d, text);
    html_raw(d, "</p>\n");
}

void html_facts(html_doc *d, const char *const (*kv)[2], size_t n)
{
    html_raw(d, "<table class=\"facts\">\n");
    for (size_t i = 0; i < n; i++) {
        html_raw(d, "<tr><th>");
        html_esc(d, kv[i][0]);
        html_raw(d, "</th><td>");
        html_esc(d, kv[i][1]);
        html_raw(d, "</td></tr>\n");
    }
    html_raw(d, "</table>\n");
}

/* --- the verdict table ------------------------------------------------------ */

static const char *row_class(const char *verdict)
{
    if (!verdict)
        return "skip";
    if (!strncmp(verdict, "pass", 4) || !strncmp(verdict, "ok", 2))
        return "pass";
    if (!strncmp(verdict, "fail", 4) || !strncmp(verdict, "FAIL", 4))
        return "fail";
    if (!strncmp(verdict, "error", 5))
        return "error";
    return "skip";
}

void html_verdict_table(html_doc *d, const html_verdict_row *rows, size_t n)
{
    html_raw(d, "<table class=\"verdict\">\n<tr><th>point / trace</th><th>tier</th><th>verdict</th>"
                "<th>mismatches</th><th>max ulp</th><th>reason</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        const html_verdict_row *r = &rows[i];
        html_rawf(d, "<tr class=\"%s\"><td>", row_class(r->verdict));
        html_esc(d, r->what);
        html_raw(d, "</td><td>");
        html_esc(d, r->tier);
        html_raw(d, "</td><td class=\"v\">");
        html_esc(d, r->verdict);
        html_raw(d, "</td><td class=\"num\">");
        if (r->mismatches < 0)
            html_raw(d, "-");
        else if (r->n >= 0)
            html_rawf(d, "%lld / %lld", r->mismatches, r->n);
        else
            html_rawf(d, "%lld", r->mismatches);
        html_raw(d, "</td><td class=\"num\">");
        if (r->max_ulp < 0)
            html_raw(d, "-");
        else
            html_rawf(d, "%lld", r->max_ulp);
        html_raw(d, "</td><td class=\"reason\">");
        html_esc(d, r->reason);
        html_raw(d, "</td></tr>\n");
    }
    html_raw(d, "</table>\n");
}

/* --- the ulp histogram ------------------------------------------------------ */

void html_histogram_svg(html_doc *d, const char *title, const char *const *labels, const size_t *counts, int nb)
{
    const int bw = 56, gap = 8, left = 56, top = 36, H = 160, bottom = 44;
    int W = left + nb * (bw + gap) + 16;
    size_t max = 0, total = 0;
    for (int k = 0; k < nb; k++) {
        total += counts[k];
        if (counts[k] > max)
            max = counts[k];
    }
    double lmax = log10(1.0 + (double)max);
    html_raw(d, "<figure class=\"hist\">\n");
    html_rawf(d, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "role=\"img\">\n<title>",
              W, top + H + bottom, W, top + H + bottom);
    html_esc(d, title);
    html_raw(d, "</title>\n");
    html_rawf(d, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", W, top + H + bottom);
    /* Decades on the log axis: 1, 10, 100, ... up to max. */
    for (double dec = 1; dec <= (double)max * 1.0001 && lmax > 0; dec *= 10) {
        double y = top + H - log10(1.0 + dec) / lmax * H;
        html_rawf(d, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, W - 8, y);
        html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.0f</text>\n", left - 4,
                  y + 3, dec);
    }
    html_rawf(d, "<text x=\"12\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 12 %d)\" "
                 "text-anchor=\"middle\">elements (log)</text>\n",
              top + H / 2, top + H / 2);
    for (int k = 0; k < nb; k++) {
        int x = left + gap / 2 + k * (bw + gap);
        double h = lmax > 0 ? log10(1.0 + (double)counts[k]) / lmax * H : 0;
        /* Bucket 0 (identical) in grey-green, the others in red. */
        const char *fill = k == 0 ? "#7aa97a" : "#c0392b";
        html_rawf(d, "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\">", x,
                  top + H - h, bw, h, fill);
        html_raw(d, "<title>");
        html_esc(d, labels[k]);
        html_rawf(d, " ulp: %zu elements</title></rect>\n", counts[k]);
        html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%zu</text>\n",
                  x + bw / 2, top + H - h - 3, counts[k]);
        html_rawf(d, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">", x + bw / 2,
                  top + H + 14);
        html_esc(d, labels[k]);
        html_raw(d, "</text>\n");
    }
    html_rawf(d, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", left, top + H, W - 8, top + H);
    html_rawf(d, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">ulp distance (%zu elements)</text>\n",
              left + (W - left) / 2, top + H + 34, total);
    html_rawf(d, "<text x=\"%d\" y=\"16\" font-size=\"12\" font-weight=\"bold\">", left);
    html_esc(d, title);
    html_raw(d, "</text>\n</svg>\n</figure>\n");
}

/* --- the heat map ----------------------------------------------------------- */

int html_heat_init(html_heat *h, int64_t rows, int64_t cols)
{
    memset(h, 0, sizeof *h);
    if (rows < 1)
        rows = 1;
    if (cols < 1)
        cols = 1;
    h->rows = rows;
    h->cols = cols;
    h->rbin = (rows + HTML_HEAT_MAX - 1) / HTML_HEAT_MAX;
    h->cbin = (cols + HTML_HEAT_MAX - 1) / HTML_HEAT_MAX;
    h->gr = (int)((rows + h->rbin - 1) / h->rbin);
    h->gc = (int)((cols + h->cbin - 1) / h->cbin);
    h->cnt = calloc((size_t)h->gr * (size_t)h->gc, sizeof *h->cnt);
    return h->cnt ? 0 : -1;
}

void html_heat_add(html_heat *h, int64_t r, int64_t c)
{
    if (!h->cnt || r < 0 || c < 0 || r >= h->rows || c >= h->cols)
        return;
    uint32_t *p = &h->cnt[(size_t)(r / h->rbin) * (size_t)h->gc + (size_t)(c / h->cbin)];
    if (*p < UINT32_MAX)
        (*p)++;
    h->total++;
}

void html_heat_free(html_heat *h)
{
    free(h->cnt);
    memset(h, 0, sizeof *h);
}

int html_heat_from_tensors(html_heat *h, const st_tensor *a, const st_tensor *b)
{
    memset(h, 0, sizeof *h);
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->nelem != b->nelem)
        return -1;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k])
            return -1;
    int64_t cols = a->ndim >= 1 ? a->shape[a->ndim - 1] : 1;
    if (cols < 1)
        cols = 1;
    int64_t rows = (int64_t)(a->nelem / (uint64_t)cols);
    if (html_heat_init(h, rows, cols))
        return -1;
    for (uint64_t i = 0; i < a->nelem; i++)
        if (st_get_bits(a, a->data, (size_t)i) != st_get_bits(b, b->data, (size_t)i))
            html_heat_add(h, (int64_t)(i / (uint64_t)cols), (int64_t)(i % (uint64_t)cols));
    return 0;
}

/* The colour of a cell with count c out of the grid's largest cmax >= 1:
 * log-scaled from pale yellow (1) to dark red (cmax). */
static void heat_colour(uint32_t c, uint32_t cmax, char out[8])
{
    double t = cmax > 1 ? log((double)c) / log((double)cmax) : 1.0;
    int r = (int)lround(253 + t * (140 - 253));
    int g = (int)lround(219 + t * (0 - 219));
    int b = (int)lround(110 + t * (26 - 110));
    snprintf(out, 8, "#%02x%02x%02x", r & 255, g & 255, b & 255);
}

void html_heat_svg(html_doc *d, const html_heat *h, const char *title, const char *row_unit, const char *col_unit)
{
    if (!h->cnt)
        return;
    const int left = 64, top = 28, legend = 64;
    /* Cells of at least 2 px, the map at most 640 x 512 px. */
    double cw = 640.0 / h->gc, ch = 512.0 / h->gr;
    if (cw > 24)
        cw = 24;
    if (ch > 24)
        ch = 24;
    if (cw < 2)
        cw = 2;
    if (ch < 2)
        ch = 2;
    double mw = cw * h->gc, mh = ch * h->gr;
    int W = left + (int)ceil(mw) + 24, Hh = top + (int)ceil(mh) + 36 + legend;
    uint32_t cmax = 0;
    for (size_t i = 0; i < (size_t)h->gr * (size_t)h->gc; i++)
        if (h->cnt[i] > cmax)
            cmax = h->cnt[i];
    if (W < 420)
        W = 420;
    html_raw(d, "<figure class=\"heat\">\n");
    html_rawf(d, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "role=\"img\">\n<title>",
              W, Hh, W, Hh);
    html_esc(d, title);
    html_raw(d, "</title>\n");
    html_rawf(d, "<text x=\"%d\" y=\"16\" font-size=\"12\" font-weight=\"bold\">", left);
    html_esc(d, title);
    html_raw(d, "</text>\n");
    html_rawf(d, "<rect class=\"bg\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"#e4efe4\" "
                 "stroke=\"#888\"/>\n",
              left, top, mw, mh);
    for (int r = 0; r < h->gr; r++)
        for (int c = 0; c < h->gc; c++) {
            uint32_t v = h->cnt[(size_t)r * (size_t)h->gc + (size_t)c];
            if (!v)
                continue;
            char col[8];
            heat_colour(v, cmax, col);
            int64_t r0 = r * h->rbin, c0 = c * h->cbin;
            int64_t r1 = r0 + h->rbin - 1 < h->rows ? r0 + h->rbin - 1 : h->rows - 1;
            int64_t c1 = c0 + h->cbin - 1 < h->cols ? c0 + h->cbin - 1 : h->cols - 1;
            html_rawf(d, "<rect class=\"cell\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
                         "<title>%s %lld-%lld, %s %lld-%lld: %u</title></rect>\n",
                      left + c * cw, top + r * ch, cw, ch, col, row_unit, (long long)r0, (long long)r1, col_unit,
                      (long long)c0, (long long)c1, v);
        }
    /* Axes: the first and last index of each. */
    html_rawf(d, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">0</text>\n", left - 4, top + 9);
    html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%lld</text>\n", left - 4, top + mh,
              (long long)(h->rows - 1));
    html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\">0</text>\n", left, top + mh + 12);
    html_rawf(d, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%lld</text>\n", left + mw,
              top + mh + 12, (long long)(h->cols - 1));
    html_rawf(d, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s (%lld)</text>\n",
              left + mw / 2, top + mh + 26, col_unit, (long long)h->cols);
    html_rawf(d, "<text x=\"14\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
                 "%s (%lld)</text>\n",
              top + mh / 2, top + mh / 2, row_unit, (long long)h->rows);
    /* Legend: no mismatch, then the ramp from 1 to the largest count. */
    double ly = top + mh + 40;
    html_rawf(d, "<g class=\"legend\"><rect x=\"%d\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"#e4efe4\" "
                 "stroke=\"#888\"/><text x=\"%d\" y=\"%.1f\" font-size=\"10\">no mismatch</text>\n",
              left, ly, left + 18, ly + 11);
    int steps = 6;
    for (int k = 0; k < steps; k++) {
        uint32_t v = cmax <= 1 ? 1 : (uint32_t)lround(exp(log((double)cmax) * k / (steps - 1)));
        char col[8];
        heat_colour(v ? v : 1, cmax ? cmax : 1, col);
        html_rawf(d, "<rect x=\"%d\" y=\"%.1f\" width=\"18\" height=\"14\" fill=\"%s\"/>\n", left + 100 + k * 18, ly,
                  col);
    }
    html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">1</text>\n", left + 109,
              ly + 26);
    html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%u</text>\n",
              left + 100 + (steps - 1) * 18 + 9, ly + 26, cmax);
    html_rawf(d, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\">mismatches per cell (log); a cell is %lld %s x %lld %s; "
                 "%zu in all</text></g>\n",
              left + 100 + steps * 18 + 8, ly + 11, (long long)h->rbin, row_unit, (long long)h->cbin, col_unit,
              h->total);
    html_raw(d, "</svg>\n</figure>\n");
}

/* --- the tree --------------------------------------------------------------- */

#define TREE_SHOW 12 /* children of a multi-way node drawn; the rest summarised */

typedef struct tree_ctx {
    const nx_program *p;
    int32_t *lo, *hi;   /* per op: the first and last term below it (-1: none) */
    int64_t *nterms;    /* per op: terms below it */
    int maxd;
    double x;           /* the next leaf's x */
    html_doc edges, nodes;
} tree_ctx;

/* The children of source s (an op); returns how many, *gs points at them
 * for an atom group, else fills two[]. */
static int kids(const nx_program *p, int32_t s, const int32_t **gs, int32_t two[2])
{
    if (NX_SRC_IS_TERM(s))
        return 0;
    const nx_op *o = &p->ops[NX_SRC_OP(s)];
    if (o->kind == NX_OP_ADD) {
        two[0] = o->x;
        two[1] = o->y;
        *gs = two;
        return 2;
    }
    if (o->kind == NX_OP_ATOM) {
        /* atom(value(x), group): the running value and the group. */
        *gs = p->gsrc + o->y;
        return o->gn;
    }
    return 0;
}

static int64_t src_terms(const tree_ctx *t, int32_t s, int32_t *lo, int32_t *hi)
{
    if (NX_SRC_IS_TERM(s)) {
        *lo = *hi = s;
        return 1;
    }
    int32_t k = NX_SRC_OP(s);
    *lo = t->lo[k];
    *hi = t->hi[k];
    return t->nterms[k];
}

/* Leaves drawn below s at depth (a collapsed subtree and an ellipsis count
 * as one), counted only until they pass cap (the result is then > cap):
 * the work stays O(cap x depth) however wide the atom groups are. */
static int64_t visible(const tree_ctx *t, int32_t s, int depth, int64_t cap)
{
    const int32_t *g;
    int32_t two[2];
    int nk = kids(t->p, s, &g, two);
    const nx_op *o = NX_SRC_IS_TERM(s) ? NULL : &t->p->ops[NX_SRC_OP(s)];
    int extra = o && o->kind == NX_OP_ATOM ? 1 : 0;
    if (nk + extra == 0 || depth >= t->maxd)
        return 1;
    int64_t v = 0;
    if (extra)
        v += visible(t, o->x, depth + 1, cap);
    if (nk > TREE_SHOW) {
        for (int i = 0; i < TREE_SHOW / 2 && v <= cap; i++)
            v += visible(t, g[i], depth + 1, cap - v);
        v += 1;
        for (int i = nk - TREE_SHOW / 2 + 1; i < nk && v <= cap; i++)
            v += visible(t, g[i], depth + 1, cap - v);
    } else {
        for (int i = 0; i < nk && v <= cap; i++)
            v += visible(t, g[i], depth + 1, cap - v);
    }
    return v;
}

#define TREE_DX 46.0
#define TREE_DY 58.0
#define TREE_TOP 24.0

static void terms_text(int64_t n, int32_t lo, int32_t hi, char *buf, size_t cap)
{
    if (n <= 0)
        snprintf(buf, cap, "no term");
    else if (n == 1)
        snprintf(buf, cap, "t%d", (int)lo);
    else
        snprintf(buf, cap, "%lld terms t%d..t%d", (long long)n, (int)lo, (int)hi);
}

static void draw_box(tree_ctx *t, double x, double y, const char *label, const char *tip, const char *fill)
{
    double w = 10 + 6.2 * (double)strlen(label);
    if (w < 26)
        w = 26;
    html_rawf(&t->nodes, "<g class=\"node\"><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\" "
                         "rx=\"4\" fill=\"%s\" stroke=\"#555\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                         "text-anchor=\"middle\">%s</text></g>\n",
              tip, x - w / 2, y - 10, w, fill, x, y + 4, label);
}

static double place(tree_ctx *t, int32_t s, int depth);

/* Draws s at depth; returns its x.  Children first (so a node sits above
 * the middle of its children), then the edges to them. */
static double place(tree_ctx *t, int32_t s, int depth)
{
    double y = TREE_TOP + depth * TREE_DY;
    char label[64], tip[160];
    if (NX_SRC_IS_TERM(s)) {
        double x = t->x;
        t->x += TREE_DX;
        snprintf(label, sizeof label, "t%d", (int)s);
        snprintf(tip, sizeof tip, "term %d%s", (int)s, t->p->dot ? " (a product a*b)" : "");
        draw_box(t, x, y, label, tip, "#dbe8f6");
        return x;
    }
    const nx_op *o = &t->p->ops[NX_SRC_OP(s)];
    const char *fname = nx_format((nx_fmt)o->fmt) ? nx_format((nx_fmt)o->fmt)->name : "?";
    int32_t lo, hi;
    int64_t nt = src_terms(t, s, &lo, &hi);
    char terms[64];
    terms_text(nt, lo, hi, terms, sizeof terms);
    if (o->kind == NX_OP_ZERO || o->kind == NX_OP_START || o->kind == NX_OP_LEAF) {
        double x = t->x;
        t->x += TREE_DX;
        if (o->kind == NX_OP_ZERO) {
            snprintf(label, sizeof label, "+0");
            snprintf(tip, sizeof tip, "+0 (an empty part)");
        } else if (o->kind == NX_OP_START) {
            snprintf(label, sizeof label, "c");
            snprintf(tip, sizeof tip, "the row's start value c[r]");
        } else {
            snprintf(label, sizeof label, "t%d", (int)o->x);
            snprintf(tip, sizeof tip, "term %d rounded to %s %s", (int)o->x, fname, nx_mode_name((nx_mode)o->mode));
        }
        draw_box(t, x, y, label, tip, "#dbe8f6");
        return x;
    }
    if (depth >= t->maxd) {
        double x = t->x;
        t->x += TREE_DX;
        snprintf(tip, sizeof tip, "a subtree of %s, not drawn", terms);
        snprintf(label, sizeof label, "%lld", (long long)nt);
        html_rawf(&t->nodes, "<g class=\"collapsed\"><title>%s</title><polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
                             "fill=\"#eee\" stroke=\"#777\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                             "text-anchor=\"middle\">%s</text></g>\n",
                  tip, x, y - 10, x - 18, y + 14, x + 18, y + 14, x, y + 10, label);
        return x;
    }
    const int32_t *g;
    int32_t two[2];
    int nk = kids(t->p, s, &g, two);
    double xs[TREE_SHOW + 2];
    int nx = 0;
    double py = y;
    /* The edges need the node's x, known only once the children are
     * placed: place them, then draw the edges from the middle. */
    html_doc saved = t->edges;
    memset(&t->edges, 0, sizeof t->edges);
    int32_t shown[TREE_SHOW + 2];
    int nshown = 0, ellipsis_at = -1, hidden = 0;
    if (o->kind == NX_OP_ATOM)
        shown[nshown++] = o->x;
    if (nk > TREE_SHOW) {
        for (int i = 0; i < TREE_SHOW / 2; i++)
            shown[nshown++] = g[i];
        ellipsis_at = nshown;
        hidden = nk - TREE_SHOW + 1;
        for (int i = nk - TREE_SHOW / 2 + 1; i < nk; i++)
            shown[nshown++] = g[i];
    } else {
        for (int i = 0; i < nk; i++)
            shown[nshown++] = g[i];
    }
    for (int i = 0; i <= nshown; i++) {
        if (i == ellipsis_at) {
            double x = t->x;
            t->x += TREE_DX;
            snprintf(tip, sizeof tip, "%d more sources of this group", hidden);
            snprintf(label, sizeof label, "+%d", hidden);
            draw_box(t, x, TREE_TOP + (depth + 1) * TREE_DY, label, tip, "#f4f4f4");
            xs[nx++] = x;
        }
        if (i < nshown)
            xs[nx++] = place(t, shown[i], depth + 1);
    }
    double x = nx ? (xs[0] + xs[nx - 1]) / 2 : t->x;
    html_doc inner = t->edges;
    t->edges = saved;
    for (int i = 0; i < nx; i++)
        html_rawf(&t->edges, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\"/>\n", x, py + 10,
                  xs[i], TREE_TOP + (depth + 1) * TREE_DY - 10);
    if (inner.s)
        html_raw(&t->edges, inner.s);
    if (inner.oom)
        t->edges.oom = 1;
    html_free(&inner);
    if (o->kind == NX_OP_ADD) {
        snprintf(label, sizeof label, "%s", o->fma ? "fma" : "+");
        snprintf(tip, sizeof tip, "%s in %s %s over %s", o->fma ? "fused multiply-add" : "addition", fname,
                 nx_mode_name((nx_mode)o->mode), terms);
        draw_box(t, x, y, label, tip, o->fma ? "#f6e3c8" : "#fff");
    } else {
        snprintf(label, sizeof label, "atom %d", nk);
        snprintf(tip, sizeof tip, "fused group of %d sources in %s %s over %s", nk, fname,
                 nx_mode_name((nx_mode)o->mode), terms);
        draw_box(t, x, y, label, tip, "#e5d8f2");
    }
    return x;
}

void html_tree_svg(html_doc *d, const nx_program *p, const char *caption, int max_depth)
{
    if (!p || !p->nops) {
        html_para(d, "(no tree)");
        return;
    }
    tree_ctx t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.lo = malloc(p->nops * sizeof *t.lo);
    t.hi = malloc(p->nops * sizeof *t.hi);
    t.nterms = malloc(p->nops * sizeof *t.nterms);
    if (!t.lo || !t.hi || !t.nterms) {
        d->oom = 1;
        goto out;
    }
    /* Operations are in single-assignment order: children come first. */
    for (size_t k = 0; k < p->nops; k++) {
        const nx_op *o = &p->ops[k];
        int32_t lo = -1, hi = -1;
        int64_t n = 0;
        int32_t srcs[2];
        const int32_t *g = srcs;
        int ns = 0;
        if (o->kind == NX_OP_LEAF) {
            lo = hi = o->x;
            n = 1;
        } else if (o->kind == NX_OP_ADD) {
            srcs[0] = o->x;
            srcs[1] = o->y;
            ns = 2;
        } else if (o->kind == NX_OP_ATOM) {
            srcs[0] = o->x;
            ns = 1;
        }
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < ns; i++) {
                int32_t a, b;
                int64_t m = src_terms(&t, g[i], &a, &b);
                if (m > 0) {
                    lo = lo < 0 || a < lo ? a : lo;
                    hi = b > hi ? b : hi;
                    n += m;
                }
            }
            if (o->kind != NX_OP_ATOM || pass)
                break;
            g = p->gsrc + o->y;
            ns = o->gn;
        }
        t.lo[k] = lo;
        t.hi[k] = hi;
        t.nterms[k] = n;
    }
    t.maxd = max_depth > 0 && max_depth < 10 ? max_depth : 10;
    while (t.maxd > 2 && visible(&t, p->result, 0, 64) > 64)
            t.maxd--;
    /* At depth 2 at most (TREE_SHOW + 2)^2 leaves. */
    int64_t leaves = visible(&t, p->result, 0, INT64_MAX / 2);
    int W = (int)(leaves * TREE_DX) + 40, H = (int)(TREE_TOP + (t.maxd + 1) * TREE_DY);
    if (W < 320)
        W = 320;
    t.x = 20 + TREE_DX / 2;
    place(&t, p->result, 0);
    html_raw(d, "<figure class=\"tree\">\n");
    html_rawf(d, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "role=\"img\">\n<title>the order of the additions</title>\n",
              W, H, W, H);
    if (t.edges.s)
        html_raw(d, t.edges.s);
    if (t.nodes.s)
        html_raw(d, t.nodes.s);
    if (t.edges.oom || t.nodes.oom)
        d->oom = 1;
    html_raw(d, "</svg>\n<figcaption>");
    html_esc(d, caption);
    html_rawf(d, " (n = %zu; ", p->n);
    html_rawf(d, "%d level%s of operations drawn, deeper subtrees as triangles with their term count)</figcaption>\n</figure>\n",
              t.maxd, t.maxd == 1 ? "" : "s");
out:
    html_free(&t.edges);
    html_free(&t.nodes);
    free(t.lo);
    free(t.hi);
    free(t.nterms);
}
