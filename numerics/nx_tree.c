/* nx_tree.c: recursive-descent parser and canonical printer of the tree
 * language (NUMERICS.md §4). */
#include "nx_tree.h"
#include "nx_sbuf.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *text;
    const char *p;
    const char *name;
    nx_err *err;
    int failed;
} parser;

static void position(const parser *ps, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *q = ps->text; q < at; q++) {
        if (*q == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

__attribute__((format(printf, 3, 4)))
static void fail(parser *ps, const char *at, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = 1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    position(ps, at, &line, &col);
    nx_err_set(ps->err, NX_EINVAL, "%s:%d:%d: %s", ps->name, line, col, msg);
}

static void skip_ws(parser *ps)
{
    while (*ps->p && isspace((unsigned char)*ps->p))
        ps->p++;
}

/* Describes what is at the cursor for messages: "'x'" or "the end". */
static const char *found(const parser *ps, char *buf, size_t n)
{
    if (!*ps->p)
        return "the end of the tree";
    snprintf(buf, n, "'%c'", *ps->p);
    return buf;
}

static int expect(parser *ps, char c, const char *what)
{
    skip_ws(ps);
    if (*ps->p == c) {
        ps->p++;
        return 1;
    }
    char b[8];
    fail(ps, ps->p, "expected '%c' %s, found %s", c, what, found(ps, b, sizeof b));
    return 0;
}

static size_t ident(parser *ps)
{
    size_t n = 0;
    while (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_')
        n++;
    return n;
}

static long integer(parser *ps, const char *what)
{
    skip_ws(ps);
    const char *start = ps->p;
    char b[8];
    if (!isdigit((unsigned char)*ps->p)) {
        fail(ps, ps->p, "expected an integer (%s), found %s", what, found(ps, b, sizeof b));
        return 0;
    }
    long v = 0;
    while (isdigit((unsigned char)*ps->p)) {
        v = v * 10 + (*ps->p - '0');
        ps->p++;
        if (v > NX_TREE_INT_MAX) {
            fail(ps, start, "%s is too large (at most %ld)", what, NX_TREE_INT_MAX);
            return 0;
        }
    }
    if (v < 1) {
        fail(ps, start, "%s must be at least 1", what);
        return 0;
    }
    return v;
}

static nx_tree *tree(parser *ps);

static nx_tree *node(parser *ps, nx_tree_kind k)
{
    nx_tree *t = calloc(1, sizeof *t);
    if (!t) {
        if (!ps->failed)
            nx_err_set(ps->err, NX_ENOMEM, "out of memory");
        ps->failed = 1;
        return NULL;
    }
    t->kind = k;
    t->fmt = -1;
    t->opt = 1;
    return t;
}

/* Parses ", key=INT" options: `key` is "align" or "block". */
static void option(parser *ps, nx_tree *t, const char *key, const char *ctx)
{
    skip_ws(ps);
    if (*ps->p != ',')
        return;
    ps->p++;
    skip_ws(ps);
    size_t n = ident(ps);
    if (n != strlen(key) || strncmp(ps->p, key, n) != 0) {
        char b[8];
        if (n)
            fail(ps, ps->p, "unknown option '%.*s' of %s (expected '%s=')", (int)n, ps->p, ctx, key);
        else
            fail(ps, ps->p, "expected '%s=' after ',' in %s, found %s", key, ctx, found(ps, b, sizeof b));
        return;
    }
    ps->p += n;
    if (!expect(ps, '=', key[0] == 'a' ? "after 'align'" : "after 'block'"))
        return;
    t->opt = integer(ps, key[0] == 'a' ? "the alignment" : "the block size");
}

static nx_tree *composite(parser *ps, nx_tree_kind k, const char *kw)
{
    nx_tree *t = node(ps, k);
    if (!t)
        return NULL;
    char ctx[32];
    snprintf(ctx, sizeof ctx, "'%s('", kw);
    if (!expect(ps, '(', k == NX_T_REVERSE ? "after 'reverse'" : k == NX_T_CHAIN ? "after 'chain'" :
                k == NX_T_SPLIT ? "after 'split'" : k == NX_T_TILE ? "after 'tile'" : "after 'stride'"))
        goto out;
    if (k == NX_T_REVERSE) {
        t->t = tree(ps);
    } else if (k == NX_T_CHAIN) {
        t->count = integer(ps, "the group size");
    } else {
        const char *what = k == NX_T_SPLIT ? "the split count" : k == NX_T_TILE ? "the tile size"
                                                                                 : "the lane count";
        t->count = integer(ps, what);
        char after[64];
        snprintf(after, sizeof after, "after %s", what);
        if (ps->failed || !expect(ps, ',', after))
            goto out;
        t->t = tree(ps);
        if (ps->failed || !expect(ps, ',', k == NX_T_SPLIT ? "after the tree of the slices" :
                                  k == NX_T_TILE ? "after the tree of the tiles" : "after the tree of the lanes"))
            goto out;
        t->c = tree(ps);
        if (!ps->failed && k == NX_T_SPLIT)
            option(ps, t, "align", ctx);
        else if (!ps->failed && k == NX_T_STRIDE)
            option(ps, t, "block", ctx);
    }
    if (!ps->failed) {
        char what[48];
        snprintf(what, sizeof what, "to close %s", ctx);
        expect(ps, ')', what);
    }
out:
    return t;
}

static nx_tree *tree(parser *ps)
{
    if (ps->failed)
        return NULL;
    skip_ws(ps);
    const char *start = ps->p;
    size_t n = ident(ps);
    char b[8];
    if (n == 0) {
        fail(ps, ps->p, "expected a tree (seq, pairwise, halving, atomic, chain, reverse, split, tile, stride), found %s",
             found(ps, b, sizeof b));
        return NULL;
    }
    static const struct { const char *kw; nx_tree_kind k; int args; } kws[] = {
        {"seq", NX_T_SEQ, 0}, {"pairwise", NX_T_PAIRWISE, 0}, {"halving", NX_T_HALVING, 0},
        {"atomic", NX_T_ATOMIC, 0}, {"chain", NX_T_CHAIN, 1}, {"reverse", NX_T_REVERSE, 1},
        {"split", NX_T_SPLIT, 1}, {"tile", NX_T_TILE, 1}, {"stride", NX_T_STRIDE, 1},
    };
    nx_tree *t = NULL;
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++) {
        if (strlen(kws[i].kw) == n && strncmp(kws[i].kw, start, n) == 0) {
            ps->p += n;
            t = kws[i].args ? composite(ps, kws[i].k, kws[i].kw) : node(ps, kws[i].k);
            break;
        }
    }
    if (!t && !ps->failed) {
        fail(ps, start, "unknown tree '%.*s' (expected seq, pairwise, halving, atomic, chain, reverse, split, tile, stride)",
             (int)n, start);
        return NULL;
    }
    if (ps->failed)
        return t;
    skip_ws(ps);
    if (*ps->p == '@') {
        ps->p++;
        skip_ws(ps);
        const char *fs = ps->p;
        size_t fn = ident(ps);
        char fname[32] = "";
        if (fn > 0 && fn < sizeof fname)
            memcpy(fname, fs, fn);
        int f = fn ? nx_fmt_from_name(fname) : -1;
        if (f < 0) {
            if (fn)
                fail(ps, fs, "unknown format '%.*s' after '@'", (int)fn, fs);
            else
                fail(ps, fs, "expected a format name after '@', found %s", found(ps, b, sizeof b));
            return t;
        }
        ps->p += fn;
        t->fmt = f;
    }
    return t;
}

nx_status nx_tree_parse(const char *text, const char *name, nx_tree **out, nx_err *err)
{
    parser ps = {text, text, name ? name : "tree", err, 0};
    nx_tree *t = tree(&ps);
    if (!ps.failed) {
        skip_ws(&ps);
        if (*ps.p)
            fail(&ps, ps.p, "unexpected '%c' after the end of the tree", *ps.p);
    }
    if (ps.failed) {
        nx_tree_free(t);
        *out = NULL;
        return err ? err->code : NX_EINVAL;
    }
    *out = t;
    return NX_OK;
}

void nx_tree_free(nx_tree *t)
{
    if (!t)
        return;
    nx_tree_free(t->t);
    nx_tree_free(t->c);
    free(t);
}

static void print_rec(nx_sbuf *b, const nx_tree *t)
{
    static const char *const names[] = {"seq", "pairwise", "halving", "atomic", "chain",
                                        "reverse", "split", "tile", "stride"};
    switch (t->kind) {
    case NX_T_SEQ: case NX_T_PAIRWISE: case NX_T_HALVING: case NX_T_ATOMIC:
        nx_sbuf_printf(b, "%s", names[t->kind]);
        break;
    case NX_T_CHAIN:
        nx_sbuf_printf(b, "chain(%ld)", t->count);
        break;
    case NX_T_REVERSE:
        nx_sbuf_printf(b, "reverse(");
        print_rec(b, t->t);
        nx_sbuf_printf(b, ")");
        break;
    default:
        nx_sbuf_printf(b, "%s(%ld, ", names[t->kind], t->count);
        print_rec(b, t->t);
        nx_sbuf_printf(b, ", ");
        print_rec(b, t->c);
        if (t->opt != 1)
            nx_sbuf_printf(b, ", %s=%ld", t->kind == NX_T_SPLIT ? "align" : "block", t->opt);
        nx_sbuf_printf(b, ")");
        break;
    }
    if (t->fmt >= 0)
        nx_sbuf_printf(b, "@%s", nx_format((nx_fmt)t->fmt)->name);
}

char *nx_tree_print(const nx_tree *t)
{
    nx_sbuf b = {0};
    print_rec(&b, t);
    return nx_sbuf_take(&b);
}

int nx_tree_uses(const nx_tree *t, nx_tree_kind k)
{
    if (!t)
        return 0;
    return t->kind == k || nx_tree_uses(t->t, k) || nx_tree_uses(t->c, k);
}
