/* space.c: the candidate spaces of `parity fit` (docs/fit.md): the default
 * grammar, the --space text, and a candidate as a point. */
#include "fit.h"
#include "nx_sbuf.h"
#include "point_toml.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fit_space_init(fit_space *s, nx_fmt out)
{
    memset(s, 0, sizeof *s);
    s->out = out;
}

void fit_space_free(fit_space *s)
{
    for (size_t i = 0; i < s->count; i++) {
        free(s->c[i].tree);
        free(s->c[i].toml);
    }
    free(s->c);
    memset(s, 0, sizeof *s);
}

/* The bounds on a space's expansion (fit.h: fit_space_set_limits lowers
 * them, as the fuzz target does). */
static size_t max_lines = FIT_SPACE_MAX_LINES;
static size_t max_cands = FIT_SPACE_MAX_CANDIDATES;

void fit_space_set_limits(size_t lines, size_t cands)
{
    max_lines = lines ? lines : FIT_SPACE_MAX_LINES;
    max_cands = cands ? cands : FIT_SPACE_MAX_CANDIDATES;
}

static nx_status push(fit_space *s, const fit_cand *c, nx_err *err)
{
    if (s->count >= max_cands) /* fit_space_parse names the line */
        return nx_err_set(err, NX_EINVAL, "the space holds more than %zu candidates (docs/limits.md)", max_cands);
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        fit_cand *nc = realloc(s->c, cap * sizeof *nc);
        if (!nc)
            return nx_err_set(err, NX_ENOMEM, "out of memory for %zu candidates", cap);
        s->c = nc;
        s->cap = cap;
    }
    fit_cand *d = &s->c[s->count];
    *d = *c;
    d->tree = c->tree ? strdup(c->tree) : NULL;
    d->toml = c->toml ? strdup(c->toml) : NULL;
    if ((c->tree && !d->tree) || (c->toml && !d->toml)) {
        free(d->tree);
        free(d->toml);
        return nx_err_set(err, NX_ENOMEM, "out of memory for candidates");
    }
    s->count++;
    return NX_OK;
}

nx_status fit_space_add_point(fit_space *s, const char *toml, nx_err *err)
{
    fit_cand c = {.toml = (char *)toml, .acc = -1, .fma = -1, .product = -1, .atom_preset = -1, .atom_frac = -1,
                  .atom_round = -1};
    return push(s, &c, err);
}

/* The settings a tree is crossed with (docs/fit.md): accumulator formats
 * relevant to the out format, fma on/off and a product rounded to the
 * narrower format, for dot products. */
typedef struct setting {
    int acc, fma, product;
} setting;

static int fmt_p(int f)
{
    return nx_format((nx_fmt)f)->p;
}

static size_t settings_of(const fit_ctx *ctx, setting *out)
{
    int accs[2];
    size_t na = 0, k = 0;
    if (ctx->out == NX_FP64) {
        accs[na++] = NX_FP64;
        accs[na++] = NX_FP32;
    } else if (ctx->out == NX_FP32) {
        accs[na++] = NX_FP32;
        accs[na++] = NX_FP64;
    } else {
        accs[na++] = NX_FP32;
        accs[na++] = (int)ctx->out;
    }
    for (size_t i = 0; i < na; i++) {
        int acc = accs[i];
        if (!ctx->dot) {
            out[k++] = (setting){acc, 1, -1};
            continue;
        }
        out[k++] = (setting){acc, 1, -1};
        out[k++] = (setting){acc, 0, -1};
        for (size_t j = 0; j < na; j++) /* products rounded to a narrower accumulator format */
            if (fmt_p(accs[j]) < fmt_p(acc))
                out[k++] = (setting){acc, 0, accs[j]};
    }
    return k;
}

typedef struct strlist {
    char **v;
    size_t n, cap;
    int oom;
    int over; /* expand(): more lines than max_lines (FIT_SPACE_MAX_LINES) */
} strlist;

static void sl_add(strlist *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sl_add(strlist *l, const char *fmt, ...)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            l->oom = 1;
            return;
        }
        l->v = nv;
        l->cap = cap;
    }
    /* sized exactly: a space line (a long expr(...) bracketing, a --space
     * line with many settings) is never cut */
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len < 0 ? NULL : malloc((size_t)len + 1);
    if (s)
        vsnprintf(s, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    if (!s)
        l->oom = 1;
    else
        l->v[l->n++] = s;
}

static void sl_free(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* The default trees (docs/fit.md "The default space").  fma: the point's
 * own setting; with dot, subtrees that flip it are generated too. */
static void default_trees(strlist *l, int fma, int dot)
{
    static const char *const leaf[] = {"seq", "pairwise", "halving"};
    static const char *const comb[] = {"seq", "pairwise", "halving"};
    static const int p2[] = {2, 4, 8, 16, 32, 64, 128, 256};
    char flip[32];
    snprintf(flip, sizeof flip, "seq[fma=%s]", fma ? "false" : "true");
    const char *seqs[2] = {"seq", flip};
    int nseq = dot ? 2 : 1;
    /* depth 1 */
    sl_add(l, "seq");
    sl_add(l, "pairwise");
    sl_add(l, "halving");
    sl_add(l, "reverse(seq)");
    for (int a = 0; a < 8; a++)
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 3; c++) {
                sl_add(l, "split(%d, %s, %s)", p2[a], leaf[t], comb[c]);
                sl_add(l, "tile(%d, %s, %s)", p2[a], leaf[t], comb[c]);
                for (int v = 1; v <= 8; v *= 2) {
                    if (v == 1)
                        sl_add(l, "stride(%d, %s, %s)", p2[a], leaf[t], comb[c]);
                    else
                        sl_add(l, "stride(%d, %s, %s, block=%d)", p2[a], leaf[t], comb[c], v);
                }
            }
    /* depth 2: split-K or K tiles over a strided loop */
    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 8; a++)
            for (int c = 0; c < 3; c++)
                for (int c2 = 0; c2 < 2; c2++) {
                    sl_add(l, "split(%d, stride(%d, seq, %s), %s)", p2[s], p2[a], comb[c], comb[c2]);
                    sl_add(l, "split(%d, stride(%d, seq, %s, block=4), %s)", p2[s], p2[a], comb[c], comb[c2]);
                }
    for (int pp = 1; pp < 8; pp++)
        for (int a = 0; a < pp; a++)
            for (int c = 0; c < 3; c++)
                for (int c2 = 0; c2 < 2; c2++)
                    sl_add(l, "tile(%d, stride(%d, seq, %s), %s)", p2[pp], p2[a], comb[c], comb[c2]);
    /* depth 3, bounded: split-K over K tiles over a strided loop */
    for (int s = 0; s < 2; s++)
        for (int pp = 6; pp < 8; pp++)
            for (int a = 2; a < 5; a++)
                for (int c = 1; c < 3; c++)
                    sl_add(l, "split(%d, tile(%d, stride(%d, seq, %s), seq), seq)", p2[s], p2[pp], p2[a], comb[c]);
    /* K blocking of a level-3 BLAS: blocks of P while 2P terms remain, the
     * rest halved to a multiple of A (OpenBLAS's GEMM_Q and unroll) */
    static const int kq[] = {192, 256, 320, 384, 512};
    for (int q = 0; q < 5; q++)
        for (int al = 1; al <= 16; al *= 2)
            for (int c = 0; c < 2; c++)
                sl_add(l, "tile(%d, seq, %s, halve=%d)", kq[q], comb[c], al);
    /* body and tail: a vector loop of L and its remainder */
    for (int a = 0; a < 8; a++) {
        strlist bodies = {0};
        for (int t = 0; t < 3; t++)
            sl_add(&bodies, "%s", leaf[t]);
        for (int b = 0; b <= a; b++)
            for (int q = 0; q < nseq; q++)
                for (int c = 0; c < 3; c++)
                    sl_add(&bodies, "stride(%d, %s, %s)", p2[b], seqs[q], comb[c]);
        if (bodies.oom) {
            l->oom = 1;
            sl_free(&bodies);
            return;
        }
        for (size_t t = 0; t < bodies.n; t++) {
            for (int u = 0; u < nseq + 1; u++) {
                const char *tail = u < nseq ? seqs[u] : "pairwise";
                sl_add(l, "body(%d, %s, %s)", p2[a], bodies.v[t], tail);
                sl_add(l, "body(%d, %s, %s, carry)", p2[a], bodies.v[t], tail);
            }
        }
        sl_free(&bodies);
    }
    /* eighth edition: the clean-up loop first, n mod L terms by a running
     * sum before L lanes, added to them or carried into their combine */
    for (int a = 1; a < 6; a++)
        for (int c = 0; c < 3; c++) {
            sl_add(l, "head(%d, seq, stride(%d, seq, %s))", p2[a], p2[a], comb[c]);
            sl_add(l, "head(%d, seq, stride(%d, seq, %s), carry)", p2[a], p2[a], comb[c]);
        }
}

static nx_status add_trees(fit_space *s, const fit_ctx *ctx, const setting *st, size_t nst, const char *const *trees,
                           size_t ntrees, nx_err *err)
{
    for (size_t k = 0; k < nst; k++)
        for (size_t t = 0; t < ntrees; t++) {
            fit_cand c = {.tree = (char *)trees[t],
                          .acc = (signed char)st[k].acc,
                          .fma = (signed char)st[k].fma,
                          .product = (signed char)st[k].product,
                          .atom_preset = -1,
                          .atom_frac = -1,
                          .atom_round = -1};
            (void)ctx;
            nx_status e = push(s, &c, err);
            if (e)
                return e;
        }
    return NX_OK;
}

static nx_status add_atoms(fit_space *s, nx_err *err)
{
    char tree[32];
    for (size_t i = 0; nx_atom_preset_at(i); i++) {
        snprintf(tree, sizeof tree, "chain(%d)", nx_atom_preset_at(i)->group);
        fit_cand c = {.tree = tree, .acc = NX_FP32, .fma = 1, .product = -1, .atom_preset = (signed char)i,
                      .atom_frac = -1, .atom_round = -1};
        nx_status e = push(s, &c, err);
        if (e)
            return e;
    }
    static const int groups[] = {4, 8, 16, 32}, fracs[] = {13, 23, 24, 25, 26, 30};
    static const nx_mode rounds[] = {NX_RZ, NX_RNE};
    for (int g = 0; g < 4; g++)
        for (int f = 0; f < 6; f++)
            for (int r = 0; r < 2; r++) {
                snprintf(tree, sizeof tree, "chain(%d)", groups[g]);
                fit_cand c = {.tree = tree, .acc = NX_FP32, .fma = 1, .product = -1, .atom_preset = -1,
                              .atom_frac = (short)fracs[f], .atom_round = (signed char)rounds[r]};
                nx_status e = push(s, &c, err);
                if (e)
                    return e;
            }
    return NX_OK;
}

nx_status fit_space_default(fit_space *s, const fit_ctx *ctx, int atoms, nx_err *err)
{
    setting st[16];
    size_t nst = settings_of(ctx, st);
    for (size_t k = 0; k < nst; k++) {
        strlist l = {0};
        default_trees(&l, st[k].fma, ctx->dot);
        nx_status e = l.oom ? nx_err_set(err, NX_ENOMEM, "out of memory generating the default space")
                            : add_trees(s, ctx, &st[k], 1, (const char *const *)l.v, l.n, err);
        sl_free(&l);
        if (e)
            return e;
    }
    if (atoms || fmt_p(ctx->in_fmt) <= 11)
        return add_atoms(s, err);
    return NX_OK;
}

/* --- the --space text --------------------------------------------------- */

typedef struct letlist {
    char name[32];
    strlist vals;
} letlist;

/* The list NAME names: the latest definition, so a later `let` of the same
 * name replaces an earlier one from its line on. */
static const letlist *find_let(const letlist *lets, size_t nlets, const char *name, size_t len)
{
    for (size_t i = nlets; i-- > 0;)
        if (strlen(lets[i].name) == len && strncmp(lets[i].name, name, len) == 0)
            return &lets[i];
    return NULL;
}

/* The {NAME} at p (p[0] == '{'), if it is one: its name's length, else 0. */
static size_t brace_name(const char *p)
{
    if (p[0] != '{' || !(isalpha((unsigned char)p[1]) || p[1] == '_'))
        return 0;
    const char *q = p + 1;
    while (isalnum((unsigned char)*q) || *q == '_')
        q++;
    return *q == '}' ? (size_t)(q - p - 1) : 0;
}

typedef struct slot {
    size_t at, len; /* the {NAME} in the line: offset, length with the braces */
    const letlist *L;
} slot;

/* Expands line into out: every {NAME} naming a list is replaced by each of
 * its values, each occurrence on its own (every combination, the last
 * occurrence varying fastest).  Text a value brings in is not scanned again:
 * a list's values were expanded where the list was defined, from the lists
 * above it, so no list reaches itself and the count is the product of the
 * lists' sizes, checked against max_lines (out->over) before one line is
 * built.  A {NAME} naming no list stays as written. */
static void expand(const char *line, const letlist *lets, size_t nlets, strlist *out)
{
    size_t len = strlen(line), ns = 0, count = 1;
    slot *sl = NULL;
    for (size_t i = 0; i < len; i++) {
        size_t nl = brace_name(line + i);
        const letlist *L = nl ? find_let(lets, nlets, line + i + 1, nl) : NULL;
        if (!L)
            continue;
        if (L->vals.n > max_lines / count) { /* count * n > max_lines, without overflow */
            out->over = 1;
            free(sl);
            return;
        }
        count *= L->vals.n;
        slot *n2 = realloc(sl, (ns + 1) * sizeof *sl);
        if (!n2) {
            out->oom = 1;
            free(sl);
            return;
        }
        sl = n2;
        sl[ns++] = (slot){i, nl + 2, L};
        i += nl + 1;
    }
    if (out->n + count > max_lines) {
        out->over = 1;
        free(sl);
        return;
    }
    size_t *ix = calloc(ns + 1, sizeof *ix);
    char *buf = NULL;
    size_t cap = 0;
    if (!ix)
        out->oom = 1;
    for (size_t k = 0; k < count && !out->oom; k++) {
        size_t need = len + 1;
        for (size_t j = 0; j < ns; j++)
            need += strlen(sl[j].L->vals.v[ix[j]]);
        if (need > cap) {
            char *nb = realloc(buf, need);
            if (!nb) {
                out->oom = 1;
                break;
            }
            buf = nb;
            cap = need;
        }
        size_t at = 0, w = 0;
        for (size_t j = 0; j < ns; j++) {
            const char *v = sl[j].L->vals.v[ix[j]];
            memcpy(buf + w, line + at, sl[j].at - at);
            w += sl[j].at - at;
            memcpy(buf + w, v, strlen(v));
            w += strlen(v);
            at = sl[j].at + sl[j].len;
        }
        memcpy(buf + w, line + at, len - at + 1);
        sl_add(out, "%s", buf);
        for (size_t j = ns; j-- > 0;) { /* the next combination */
            if (++ix[j] < sl[j].L->vals.n)
                break;
            ix[j] = 0;
        }
    }
    free(buf);
    free(ix);
    free(sl);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

nx_status fit_space_parse(fit_space *s, const fit_ctx *ctx, const char *text, const char *name, nx_err *err)
{
    char *buf = strdup(text);
    letlist *lets = NULL;
    size_t nlets = 0;
    nx_status e = NX_OK;
    if (!buf)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    setting st[16];
    size_t nst = settings_of(ctx, st);
    int lineno = 0;
    char *save = NULL, *save2 = NULL, *item = NULL;
    /* lines (a comment runs to the end of its line), then ';'-separated items */
    for (char *phys = strtok_r(buf, "\n", &save); phys && !e; phys = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *h = strchr(phys, '#');
        if (h)
            *h = 0;
        for (item = strtok_r(phys, ";", &save2); item && !e; item = strtok_r(NULL, ";", &save2)) {
            char *line = trim(item);
            if (!*line)
                continue;
            if (strncmp(line, "let ", 4) == 0) {
                char *eq = strchr(line, '=');
                char *nm = trim(line + 4);
                if (!eq) {
                    e = nx_err_set(err, NX_EINVAL, "%s: line %d: 'let' needs NAME = v1, v2, ...", name, lineno);
                    break;
                }
                *eq = 0;
                nm = trim(nm);
                size_t nl = strlen(nm);
                int okname = nl > 0 && nl < 32 && (isalpha((unsigned char)nm[0]) || nm[0] == '_');
                for (size_t i = 0; i < nl && okname; i++)
                    okname = isalnum((unsigned char)nm[i]) || nm[i] == '_';
                if (!okname) {
                    e = nx_err_set(err, NX_EINVAL, "%s: line %d: '%s' is not a list name (letters, digits, _)", name,
                                   lineno, nm);
                    break;
                }
                letlist *nlst = realloc(lets, (nlets + 1) * sizeof *lets);
                if (!nlst) {
                    e = nx_err_set(err, NX_ENOMEM, "out of memory");
                    break;
                }
                lets = nlst;
                memset(&lets[nlets], 0, sizeof lets[nlets]);
                snprintf(lets[nlets].name, sizeof lets[nlets].name, "%s", nm);
                /* values separated by commas outside brackets */
                char *v = eq + 1;
                int dep = 0;
                char *startv = v;
                for (char *p = v;; p++) {
                    if (*p == '(' || *p == '[' || *p == '{')
                        dep++;
                    else if (*p == ')' || *p == ']' || *p == '}')
                        dep--;
                    if ((*p == ',' && dep == 0) || !*p) {
                        int end = !*p;
                        *p = 0;
                        char *t = trim(startv);
                        /* a value is expanded here, from the lists above;
                         * its own name with none above can only be a mistake */
                        for (const char *b = t; *t && !e && *b; b++) {
                            size_t bl = brace_name(b);
                            if (bl == nl && strncmp(b + 1, nm, nl) == 0 && !find_let(lets, nlets, nm, nl))
                                e = nx_err_set(err, NX_EINVAL,
                                               "%s: line %d: list '%s' names itself ({%s}), and no list '%s' is "
                                               "defined above it", name, lineno, nm, nm, nm);
                        }
                        if (*t && !e)
                            expand(t, lets, nlets, &lets[nlets].vals);
                        if (end || e || lets[nlets].vals.over || lets[nlets].vals.oom)
                            break;
                        startv = p + 1;
                    }
                }
                nlets++;
                if (e)
                    break;
                if (lets[nlets - 1].vals.oom)
                    e = nx_err_set(err, NX_ENOMEM, "out of memory");
                else if (lets[nlets - 1].vals.over)
                    e = nx_err_set(err, NX_EINVAL, "%s: line %d: list '%s' expands to more than %zu values "
                                   "(docs/limits.md); narrow the lists it names", name, lineno, nm, max_lines);
                else if (!lets[nlets - 1].vals.n)
                    e = nx_err_set(err, NX_EINVAL, "%s: line %d: list '%s' has no values", name, lineno, nm);
                continue;
            }
            strlist ex = {0};
            expand(line, lets, nlets, &ex);
            if (ex.over) {
                sl_free(&ex);
                e = nx_err_set(err, NX_EINVAL, "%s: line %d: its {NAME} lists expand to more than %zu candidates "
                               "(docs/limits.md); narrow the lists or split the line", name, lineno, max_lines);
                break;
            }
            if (ex.oom) {
                sl_free(&ex);
                e = nx_err_set(err, NX_ENOMEM, "out of memory expanding line %d", lineno);
                break;
            }
            for (size_t i = 0; i < ex.n && !e; i++) {
                const char *x = ex.v[i];
                if (strcmp(x, "default") == 0) {
                    e = fit_space_default(s, ctx, 0, err);
                } else if (strcmp(x, "atoms") == 0) {
                    e = add_atoms(s, err);
                } else if (x[0] == '{') {
                    nx_point pt;
                    nx_err pe = {0};
                    if (pt_from_text(x, "point", &pt, &pe)) {
                        e = nx_err_set(err, NX_EINVAL, "%s: line %d: %s", name, lineno, pe.msg);
                        break;
                    }
                    nx_point_free(&pt);
                    fit_cand c = {.toml = (char *)x, .acc = -1, .fma = -1, .product = -1, .atom_preset = -1,
                                  .atom_frac = -1, .atom_round = -1};
                    e = push(s, &c, err);
                } else {
                    nx_point pt;
                    nx_err pe = {0};
                    if (nx_point_init(&pt, &pe) == NX_OK) {
                        nx_status te = nx_point_set_tree(&pt, x, "tree", &pe);
                        nx_point_free(&pt);
                        if (te) {
                            e = nx_err_set(err, NX_EINVAL, "%s: line %d: %s", name, lineno, pe.msg);
                            break;
                        }
                    }
                    e = add_trees(s, ctx, st, nst, &x, 1, err);
                }
            }
            sl_free(&ex);
            if (e == NX_EINVAL && s->count >= max_cands)
                e = nx_err_set(err, NX_EINVAL, "%s: line %d: the space holds more than %zu candidates "
                               "(docs/limits.md); split it", name, lineno, max_cands);
        }
    }
    for (size_t i = 0; i < nlets; i++)
        sl_free(&lets[i].vals);
    free(lets);
    free(buf);
    return e;
}

nx_status fit_cand_point(const fit_space *s, size_t i, nx_point *pt, nx_err *err)
{
    const fit_cand *c = &s->c[i];
    nx_status e;
    if (c->toml) {
        if ((e = pt_from_text(c->toml, "candidate", pt, err)))
            return e;
        if (pt->out < 0 && pt->acc != s->out)
            pt->out = (int)s->out;
        return NX_OK;
    }
    if ((e = nx_point_init(pt, err)))
        return e;
    pt->acc = (nx_fmt)c->acc;
    pt->fma = c->fma;
    pt->product = c->product;
    pt->out = (int)s->out;
    if (c->atom_preset >= 0)
        nx_atom_from_preset(&pt->atom, nx_atom_preset_at((size_t)c->atom_preset));
    else if (c->atom_frac >= 0) {
        memset(&pt->atom, 0, sizeof pt->atom);
        pt->atom.present = 1;
        pt->atom.frac_bits = c->atom_frac;
        pt->atom.term_round = NX_RZ;
        pt->atom.round = c->atom_round;
        pt->atom.acc = -1;
        pt->atom.align = NX_ALIGN_OPERANDS;
    }
    if ((e = nx_point_set_tree(pt, c->tree, "tree", err)) || (e = nx_point_validate(pt, err))) {
        nx_point_free(pt);
        return e;
    }
    return NX_OK;
}

char *fit_cand_text(const fit_space *s, size_t i)
{
    nx_point pt;
    nx_err e = {0};
    if (fit_cand_point(s, i, &pt, &e))
        return NULL;
    char *t = nx_point_print(&pt);
    nx_point_free(&pt);
    return t;
}
