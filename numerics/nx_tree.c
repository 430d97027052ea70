/* nx_tree.c: recursive-descent parser and canonical printer of the tree
 * language (docs/numerics.md §4, third edition §4.1).  Nesting is bounded by
 * NX_TREE_MAX_DEPTH, so no input can exhaust the stack. */
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
    int depth; /* nesting of trees, bounded: the parser recurses */
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

/* A decimal integer of at least `min` (0: an index of `order` or `expr`; 1:
 * a count or size), at most NX_TREE_INT_MAX. */
static long integer_from(parser *ps, const char *what, long min)
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
    /* INT and IDX are decimal digits (docs/numerics.md §4, Grammar): a run
     * of digits that goes on as a word (0x4, 1e3, 4.0, 8u) is not one, and
     * is named whole rather than read as its leading digits */
    if (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.') {
        const char *e = ps->p;
        while (isalnum((unsigned char)*e) || *e == '_' || *e == '.')
            e++;
        int len = (int)(e - start) > 40 ? 40 : (int)(e - start);
        fail(ps, start, "%s: '%.*s%s' is not an integer (the tree language's integers are decimal digits)", what,
             len, start, e - start > 40 ? "..." : "");
        return 0;
    }
    if (v < min) {
        fail(ps, start, "%s must be at least %ld", what, min);
        return 0;
    }
    return v;
}

static long integer(parser *ps, const char *what)
{
    return integer_from(ps, what, 1);
}

static long index_int(parser *ps, const char *what)
{
    return integer_from(ps, what, 0);
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
    t->fma = -1;
    t->product = -2;
    t->rounding = -1;
    t->store = -1;
    t->opt = k == NX_T_TILE ? 0 : 1;
    return t;
}

/* Appends v to t->list. */
static void push(parser *ps, nx_tree *t, long v)
{
    if (ps->failed)
        return;
    if ((t->nlist & (t->nlist + 1)) == 0 || t->nlist == 0) { /* 0, 1, 3, 7, ...: grow */
        size_t cap = t->nlist ? (t->nlist + 1) * 2 : 4;
        long *l = realloc(t->list, cap * sizeof *l);
        if (!l) {
            nx_err_set(ps->err, NX_ENOMEM, "out of memory");
            ps->failed = 1;
            return;
        }
        t->list = l;
    }
    t->list[t->nlist++] = v;
}

/* Parses ", key=INT" options: `key` is "align", "block" or "halve". */
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
    char after[32], what[32];
    snprintf(after, sizeof after, "after '%s'", key);
    snprintf(what, sizeof what, "%s", key[0] == 'a' ? "the alignment" : key[0] == 'b' ? "the block size"
                                                                                        : "the halving multiple");
    if (!expect(ps, '=', after))
        return;
    t->opt = integer(ps, what);
}

/* '[' INT {',' INT} ']' into t->list, each >= 1 (sizes) or >= 0 (a permutation). */
static void int_list(parser *ps, nx_tree *t, int allow_zero, const char *what)
{
    if (!expect(ps, '[', allow_zero ? "to open the permutation" : "to open the list of sizes"))
        return;
    do {
        long v = allow_zero ? index_int(ps, what) : integer(ps, what);
        push(ps, t, v);
        skip_ws(ps);
    } while (!ps->failed && *ps->p == ',' && ps->p++);
    if (!ps->failed)
        expect(ps, ']', allow_zero ? "to close the permutation" : "to close the list of sizes");
}

/* A bracketing (expr's, or a fold's over registers): INT | '(' brk '+' brk
 * ')', appended to t->list in postfix.  `what` names an index in messages. */
static void bracketing(parser *ps, nx_tree *t, int depth, const char *what)
{
    skip_ws(ps);
    if (depth > NX_TREE_MAX_DEPTH) {
        fail(ps, ps->p, "the bracketing is nested deeper than %d levels", NX_TREE_MAX_DEPTH);
        return;
    }
    if (*ps->p == '(') {
        ps->p++;
        bracketing(ps, t, depth + 1, what);
        if (ps->failed || !expect(ps, '+', "between the two sides of a bracket"))
            return;
        bracketing(ps, t, depth + 1, what);
        if (ps->failed || !expect(ps, ')', "to close the bracket"))
            return;
        push(ps, t, NX_EXPR_ADD);
        return;
    }
    push(ps, t, index_int(ps, what));
}

/* Checks that values[0..n) (skipping NX_EXPR_ADD) are 0 ... k-1, each once. */
static void check_perm(parser *ps, const char *at, const nx_tree *t, long *k, const char *what)
{
    size_t m = 0;
    for (size_t i = 0; i < t->nlist; i++)
        m += t->list[i] != NX_EXPR_ADD;
    unsigned char *seen = calloc(m ? m : 1, 1);
    if (!seen) {
        nx_err_set(ps->err, NX_ENOMEM, "out of memory");
        ps->failed = 1;
        return;
    }
    for (size_t i = 0; i < t->nlist && !ps->failed; i++) {
        long v = t->list[i];
        if (v == NX_EXPR_ADD)
            continue;
        if (v >= (long)m)
            fail(ps, at, "%s has %zu indices, so each must be below %zu; found %ld", what, m, m, v);
        else if (seen[v])
            fail(ps, at, "%s uses index %ld twice", what, v);
        else
            seen[v] = 1;
    }
    free(seen);
    *k = (long)m;
}

/* fold(V, [b0, ...]) after 'fold': the registers of V lanes among the w
 * live ones, each used by exactly one bracket; returns the new width. */
static long fold_stage(parser *ps, nx_tree *t, const char *at, long w)
{
    long V = integer(ps, "the register width");
    if (ps->failed)
        return 0;
    if (w % V != 0) {
        fail(ps, at, "fold(%ld, ...): the %ld live lanes are not a whole number of registers of %ld lanes", V, w, V);
        return 0;
    }
    if (!expect(ps, ',', "after the register width") || !expect(ps, '[', "to open the list of brackets"))
        return 0;
    long R = w / V, k = 0;
    push(ps, t, NX_LANES_FOLD);
    push(ps, t, V);
    size_t kpos = t->nlist;
    push(ps, t, 0);
    size_t first = t->nlist;
    do {
        const char *bat = (skip_ws(ps), ps->p);
        size_t from = t->nlist;
        bracketing(ps, t, 0, "a register index");
        for (size_t i = from; i < t->nlist && !ps->failed; i++)
            if (t->list[i] != NX_EXPR_ADD && t->list[i] >= R)
                fail(ps, bat, "fold(%ld, ...) over %ld live lanes has %ld register%s (0 ... %ld); found %ld", V, w, R,
                     R == 1 ? "" : "s", R - 1, t->list[i]);
        push(ps, t, NX_LANES_END);
        k++;
        skip_ws(ps);
    } while (!ps->failed && *ps->p == ',' && ps->p++);
    if (ps->failed || !expect(ps, ']', "to close the list of brackets"))
        return 0;
    /* every register exactly once: count the indices first (bounded by the
     * text), so that a huge W costs nothing here */
    long m = 0;
    for (size_t i = first; i < t->nlist; i++)
        m += t->list[i] >= 0;
    if (m != R) {
        fail(ps, at, "fold(%ld, ...) over %ld live lanes has %ld register%s, and its brackets name %ld: every register "
             "must be used exactly once", V, w, R, R == 1 ? "" : "s", m);
        return 0;
    }
    unsigned char *seen = calloc((size_t)R, 1);
    if (!seen) {
        if (!ps->failed)
            nx_err_set(ps->err, NX_ENOMEM, "out of memory");
        ps->failed = 1;
        return 0;
    }
    for (size_t i = first; i < t->nlist && !ps->failed; i++) {
        long v = t->list[i];
        if (v < 0)
            continue;
        if (seen[v])
            fail(ps, at, "fold(%ld, ...) uses register %ld twice (every register must be used exactly once)", V, v);
        seen[v] = 1;
    }
    free(seen);
    if (ps->failed)
        return 0;
    t->list[kpos] = k;
    return k * V;
}

/* '[' stage {',' stage} ']' of lanes(W, ...): loop(B), loop(B, U),
 * peel(B, M), fold(V, [...]), rest(L); the live width w is tracked so that
 * a stage that needs more lanes than there are is malformed here, not at
 * some n. */
static void lanes_stages(parser *ps, nx_tree *t)
{
    if (!expect(ps, '[', "to open the list of stages"))
        return;
    long w = t->count;
    const char *rest_at = NULL;
    do {
        skip_ws(ps);
        const char *at = ps->p;
        size_t n = ident(ps);
        int kind = n == 4 && !strncmp(at, "loop", 4) ? 1 : n == 4 && !strncmp(at, "peel", 4) ? 2
                 : n == 4 && !strncmp(at, "fold", 4) ? 3 : n == 4 && !strncmp(at, "rest", 4) ? 4 : 0;
        if (!kind) {
            char b[8];
            if (n)
                fail(ps, at, "unknown stage '%.*s' of lanes (expected loop, peel, fold, rest)", (int)n, at);
            else
                fail(ps, at, "expected a stage of lanes (loop, peel, fold, rest), found %s", found(ps, b, sizeof b));
            return;
        }
        if (rest_at) {
            fail(ps, at, "a stage after rest(...): rest takes every term left, so it is the last stage");
            return;
        }
        ps->p += n;
        static const char *const after[] = {"", "after 'loop'", "after 'peel'", "after 'fold'", "after 'rest'"};
        if (!expect(ps, '(', after[kind]))
            return;
        if (kind == 3) {
            w = fold_stage(ps, t, at, w);
        } else if (kind == 4) {
            long L = index_int(ps, "the lane");
            if (!ps->failed && L >= w)
                fail(ps, at, "rest(%ld) names lane %ld, but lanes 0 ... %ld are live here", L, L, w - 1);
            push(ps, t, NX_LANES_REST);
            push(ps, t, L);
            rest_at = at;
        } else {
            long B = integer(ps, "the block size"), M = 0;
            int unrolled = 0;
            if (!ps->failed && kind == 2 && expect(ps, ',', "after the block size"))
                M = integer(ps, "the modulus");
            skip_ws(ps);
            if (!ps->failed && kind == 1 && *ps->p == ',') {
                /* loop(B, U): while U terms remain, U / B blocks of B */
                ps->p++;
                M = integer(ps, "the terms a round takes");
                if (!ps->failed && (M < B || M % B))
                    fail(ps, at, "loop(%ld, %ld): the terms a round takes must be a multiple of the block size %ld", B,
                         M, B);
                unrolled = M > B;
            }
            if (!ps->failed && B > w)
                fail(ps, at, "%s(%ld%s) needs %ld lanes, but %ld are live here", kind == 1 ? "loop" : "peel", B,
                     kind == 1 && !unrolled ? "" : ", ...", B, w);
            push(ps, t, kind == 1 ? (unrolled ? NX_LANES_LOOPU : NX_LANES_LOOP) : NX_LANES_PEEL);
            push(ps, t, B);
            if (kind == 2 || unrolled)
                push(ps, t, M);
        }
        if (ps->failed || !expect(ps, ')', "to close the stage"))
            return;
        t->k++;
        skip_ws(ps);
    } while (*ps->p == ',' && ps->p++);
    expect(ps, ']', "to close the list of stages");
}

static nx_tree *composite(parser *ps, nx_tree_kind k, const char *kw)
{
    nx_tree *t = node(ps, k);
    if (!t)
        return NULL;
    char ctx[32], after_kw[32];
    snprintf(ctx, sizeof ctx, "'%s('", kw);
    snprintf(after_kw, sizeof after_kw, "after '%s'", kw);
    if (!expect(ps, '(', after_kw))
        goto out;
    if (k == NX_T_REVERSE) {
        t->t = tree(ps);
    } else if (k == NX_T_CHAIN) {
        t->count = integer(ps, "the group size");
    } else if (k == NX_T_ORDER) {
        const char *at = (skip_ws(ps), ps->p);
        int_list(ps, t, 1, "a position");
        long kk;
        if (!ps->failed)
            check_perm(ps, at, t, &kk, "the order");
        if (ps->failed || !expect(ps, ',', "after the order"))
            goto out;
        t->count = kk;
        t->t = tree(ps);
    } else if (k == NX_T_LANES) {
        t->count = integer(ps, "the lane count");
        if (ps->failed || !expect(ps, ',', "after the lane count"))
            goto out;
        lanes_stages(ps, t);
        if (ps->failed || !expect(ps, ',', "after the list of stages"))
            goto out;
        t->c = tree(ps);
    } else if (k == NX_T_EXPR) {
        const char *at = (skip_ws(ps), ps->p);
        bracketing(ps, t, 0, "a term index");
        if (!ps->failed)
            check_perm(ps, at, t, &t->k, "the bracketing");
    } else {
        const char *what = k == NX_T_SPLIT ? "the split count" : k == NX_T_TILE ? "the tile size"
                           : k == NX_T_BODY ? "the body multiple" : k == NX_T_HEAD ? "the head modulus"
                           : "the lane count";
        skip_ws(ps);
        if (k == NX_T_TILE && *ps->p == '[')
            int_list(ps, t, 0, "a tile size");
        else
            t->count = integer(ps, what);
        char after[64];
        snprintf(after, sizeof after, "after %s", t->list ? "the list of sizes" : what);
        if (ps->failed || !expect(ps, ',', after))
            goto out;
        if (k == NX_T_HEAD)
            t->u = tree(ps); /* the head comes first in the text, as in the sum */
        else
            t->t = tree(ps);
        if (ps->failed || !expect(ps, ',', k == NX_T_SPLIT ? "after the tree of the slices" :
                                  k == NX_T_TILE ? "after the tree of the tiles" :
                                  k == NX_T_BODY ? "after the tree of the body" :
                                  k == NX_T_HEAD ? "after the tree of the head" : "after the tree of the lanes"))
            goto out;
        if (k == NX_T_BODY || k == NX_T_HEAD) {
            if (k == NX_T_HEAD)
                t->t = tree(ps);
            else
                t->u = tree(ps);
            skip_ws(ps);
            if (!ps->failed && *ps->p == ',') {
                ps->p++;
                skip_ws(ps);
                size_t n = ident(ps);
                if (n == 5 && strncmp(ps->p, "carry", 5) == 0) {
                    ps->p += 5;
                    t->carry = 1;
                } else {
                    t->c = tree(ps);
                }
            }
        } else {
            skip_ws(ps);
            size_t n = k == NX_T_TILE && !ps->failed ? ident(ps) : 0;
            if (n == 5 && strncmp(ps->p, "carry", 5) == 0) {
                /* fifth edition: each tile reduced from the running value */
                ps->p += 5;
                t->carry = 1;
            } else {
                t->c = tree(ps);
            }
        }
        if (!ps->failed && k == NX_T_SPLIT)
            option(ps, t, "align", ctx);
        else if (!ps->failed && k == NX_T_STRIDE)
            option(ps, t, "block", ctx);
        else if (!ps->failed && k == NX_T_TILE && !t->list)
            option(ps, t, "halve", ctx);
    }
    if (!ps->failed) {
        char what[48];
        snprintf(what, sizeof what, "to close %s", ctx);
        expect(ps, ')', what);
    }
out:
    return t;
}

/* '[' k=v {',' k=v} ']': the subtree's settings (§4.1). */
static void settings(parser *ps, nx_tree *t)
{
    ps->p++; /* '[' */
    do {
        skip_ws(ps);
        const char *ks = ps->p;
        size_t kn = ident(ps);
        char b[8];
        if (!kn) {
            fail(ps, ps->p, "expected a setting (acc, fma, product, rounding, store), found %s", found(ps, b, sizeof b));
            return;
        }
        ps->p += kn;
        if (!expect(ps, '=', "after the setting's name"))
            return;
        skip_ws(ps);
        const char *vs = ps->p;
        size_t vn = ident(ps);
        char v[32] = "";
        if (vn && vn < sizeof v)
            memcpy(v, vs, vn);
        if (!vn) {
            fail(ps, vs, "expected a value for '%.*s', found %s", (int)kn, ks, found(ps, b, sizeof b));
            return;
        }
        ps->p += vn;
#define KEY(name) (kn == strlen(name) && strncmp(ks, name, kn) == 0)
        int *slot = KEY("acc") ? &t->fmt : KEY("fma") ? &t->fma : KEY("product") ? &t->product
                  : KEY("rounding") ? &t->rounding : KEY("store") ? &t->store : NULL;
        if (!slot) {
            fail(ps, ks, "unknown setting '%.*s' (expected acc, fma, product, rounding, store)", (int)kn, ks);
            return;
        }
        if (*slot != (slot == &t->product ? -2 : -1)) {
            fail(ps, ks, "setting '%.*s' given twice%s", (int)kn, ks,
                 slot == &t->fmt ? " (an '@FMT' suffix sets acc)" : "");
            return;
        }
        int val = -1;
        if (KEY("fma")) {
            val = !strcmp(v, "true") ? 1 : !strcmp(v, "false") ? 0 : -1;
            if (val < 0)
                fail(ps, vs, "fma must be true or false, found '%s'", v);
        } else if (KEY("rounding")) {
            val = nx_mode_from_name(v);
            if (val < 0)
                fail(ps, vs, "unknown rounding mode '%s' (expected rne, rna, rz, ru, rd)", v);
        } else if (KEY("product") && !strcmp(v, "exact")) {
            val = -1;
        } else if (KEY("store") && !strcmp(v, "exact")) {
            fail(ps, vs, "store must be a format (a result kept exact is no store: leave the setting out)");
        } else {
            val = nx_fmt_from_name(v);
            if (val < 0)
                fail(ps, vs, "unknown format '%s' for '%.*s'", v, (int)kn, ks);
        }
#undef KEY
        if (ps->failed)
            return;
        *slot = val;
        skip_ws(ps);
    } while (*ps->p == ',' && ps->p++);
    expect(ps, ']', "to close the settings");
}

static nx_tree *tree_at(parser *ps)
{
    skip_ws(ps);
    const char *start = ps->p;
    size_t n = ident(ps);
    char b[8];
    if (n == 0) {
        fail(ps, ps->p, "expected a tree (seq, pairwise, halving, atomic, chain, reverse, split, tile, stride, "
             "body, head, order, expr, lanes), found %s", found(ps, b, sizeof b));
        return NULL;
    }
    static const struct { const char *kw; nx_tree_kind k; int args; } kws[] = {
        {"seq", NX_T_SEQ, 0}, {"pairwise", NX_T_PAIRWISE, 0}, {"halving", NX_T_HALVING, 0},
        {"atomic", NX_T_ATOMIC, 0}, {"chain", NX_T_CHAIN, 1}, {"reverse", NX_T_REVERSE, 1},
        {"split", NX_T_SPLIT, 1}, {"tile", NX_T_TILE, 1}, {"stride", NX_T_STRIDE, 1},
        {"body", NX_T_BODY, 1}, {"order", NX_T_ORDER, 1}, {"expr", NX_T_EXPR, 1},
        {"lanes", NX_T_LANES, 1}, {"head", NX_T_HEAD, 1},
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
        if (n == 5 && strncmp(start, "carry", 5) == 0)
            fail(ps, start, "'carry' is allowed only as the last argument of body(...) or head(...) or as tile's "
                 "combinator");
        else
            fail(ps, start, "unknown tree '%.*s' (expected seq, pairwise, halving, atomic, chain, reverse, split, "
                 "tile, stride, body, head, order, expr, lanes)", (int)n, start);
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
        skip_ws(ps);
    }
    if (*ps->p == '[')
        settings(ps, t);
    return t;
}

static nx_tree *tree(parser *ps)
{
    if (ps->failed)
        return NULL;
    if (++ps->depth > NX_TREE_MAX_DEPTH) {
        skip_ws(ps);
        fail(ps, ps->p, "the tree is nested deeper than %d levels", NX_TREE_MAX_DEPTH);
        return NULL;
    }
    nx_tree *t = tree_at(ps);
    ps->depth--;
    return t;
}

nx_status nx_tree_parse(const char *text, const char *name, nx_tree **out, nx_err *err)
{
    parser ps = {text, text, name ? name : "tree", err, 0, 0};
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
    nx_tree_free(t->u);
    free(t->list);
    free(t);
}

/* A postfix bracketing list[0..n) back to "(x + y)" form. */
static void print_brackets(nx_sbuf *b, const long *list, size_t n)
{
    /* postfix back to brackets: a stack of strings */
    char **st = malloc((n ? n : 1) * sizeof *st);
    size_t sp = 0;
    if (!st)
        return;
    for (size_t i = 0; i < n; i++) {
        nx_sbuf e = {0};
        if (list[i] == NX_EXPR_ADD && sp >= 2) {
            nx_sbuf_printf(&e, "(%s + %s)", st[sp - 2], st[sp - 1]);
            free(st[sp - 2]);
            free(st[sp - 1]);
            sp -= 2;
        } else {
            nx_sbuf_printf(&e, "%ld", list[i]);
        }
        st[sp++] = nx_sbuf_take(&e);
    }
    if (sp == 1 && st[0])
        nx_sbuf_printf(b, "%s", st[0]);
    for (size_t i = 0; i < sp; i++)
        free(st[i]);
    free(st);
}

static void print_expr(nx_sbuf *b, const nx_tree *t)
{
    print_brackets(b, t->list, t->nlist);
}

/* lanes' stages: "loop(8), fold(8, [(0 + 1)]), peel(4, 8)". */
static void print_stages(nx_sbuf *b, const nx_tree *t)
{
    size_t i = 0;
    const char *sep = "";
    while (i < t->nlist) {
        long op = t->list[i];
        nx_sbuf_printf(b, "%s", sep);
        sep = ", ";
        if (op == NX_LANES_LOOP) {
            nx_sbuf_printf(b, "loop(%ld)", t->list[i + 1]);
            i += 2;
        } else if (op == NX_LANES_LOOPU) {
            nx_sbuf_printf(b, "loop(%ld, %ld)", t->list[i + 1], t->list[i + 2]);
            i += 3;
        } else if (op == NX_LANES_REST) {
            nx_sbuf_printf(b, "rest(%ld)", t->list[i + 1]);
            i += 2;
        } else if (op == NX_LANES_PEEL) {
            nx_sbuf_printf(b, "peel(%ld, %ld)", t->list[i + 1], t->list[i + 2]);
            i += 3;
        } else {
            long k = t->list[i + 2];
            nx_sbuf_printf(b, "fold(%ld, [", t->list[i + 1]);
            i += 3;
            for (long q = 0; q < k; q++) {
                size_t e = i;
                while (t->list[e] != NX_LANES_END)
                    e++;
                nx_sbuf_printf(b, "%s", q ? ", " : "");
                print_brackets(b, t->list + i, e - i);
                i = e + 1;
            }
            nx_sbuf_printf(b, "])");
        }
    }
}

static void print_list(nx_sbuf *b, const nx_tree *t)
{
    nx_sbuf_printf(b, "[");
    for (size_t i = 0; i < t->nlist; i++)
        nx_sbuf_printf(b, "%s%ld", i ? ", " : "", t->list[i]);
    nx_sbuf_printf(b, "]");
}

static void print_rec(nx_sbuf *b, const nx_tree *t)
{
    static const char *const names[] = {"seq", "pairwise", "halving", "atomic", "chain", "reverse",
                                        "split", "tile", "stride", "body", "order", "expr", "lanes", "head"};
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
    case NX_T_ORDER:
        nx_sbuf_printf(b, "order(");
        print_list(b, t);
        nx_sbuf_printf(b, ", ");
        print_rec(b, t->t);
        nx_sbuf_printf(b, ")");
        break;
    case NX_T_EXPR:
        nx_sbuf_printf(b, "expr(");
        print_expr(b, t);
        nx_sbuf_printf(b, ")");
        break;
    case NX_T_LANES:
        nx_sbuf_printf(b, "lanes(%ld, [", t->count);
        print_stages(b, t);
        nx_sbuf_printf(b, "], ");
        print_rec(b, t->c);
        nx_sbuf_printf(b, ")");
        break;
    case NX_T_BODY: case NX_T_HEAD:
        nx_sbuf_printf(b, "%s(%ld, ", names[t->kind], t->count);
        print_rec(b, t->kind == NX_T_HEAD ? t->u : t->t);
        nx_sbuf_printf(b, ", ");
        print_rec(b, t->kind == NX_T_HEAD ? t->t : t->u);
        if (t->carry) {
            nx_sbuf_printf(b, ", carry");
        } else if (t->c && !(t->c->kind == NX_T_SEQ && t->c->fmt < 0 && t->c->fma < 0 && t->c->product == -2 &&
                             t->c->rounding < 0 && t->c->store < 0)) {
            nx_sbuf_printf(b, ", ");
            print_rec(b, t->c);
        }
        nx_sbuf_printf(b, ")");
        break;
    default:
        if (t->kind == NX_T_TILE && t->list) {
            nx_sbuf_printf(b, "tile(");
            print_list(b, t);
            nx_sbuf_printf(b, ", ");
        } else {
            nx_sbuf_printf(b, "%s(%ld, ", names[t->kind], t->count);
        }
        print_rec(b, t->t);
        nx_sbuf_printf(b, ", ");
        if (t->carry)
            nx_sbuf_printf(b, "carry");
        else
            print_rec(b, t->c);
        if (t->kind == NX_T_TILE ? t->opt > 0 : t->opt != 1)
            nx_sbuf_printf(b, ", %s=%ld",
                           t->kind == NX_T_SPLIT ? "align" : t->kind == NX_T_TILE ? "halve" : "block", t->opt);
        nx_sbuf_printf(b, ")");
        break;
    }
    if (t->fmt >= 0)
        nx_sbuf_printf(b, "@%s", nx_format((nx_fmt)t->fmt)->name);
    if (t->fma >= 0 || t->product != -2 || t->rounding >= 0 || t->store >= 0) {
        const char *sep = "[";
        if (t->fma >= 0) {
            nx_sbuf_printf(b, "%sfma=%s", sep, t->fma ? "true" : "false");
            sep = ", ";
        }
        if (t->product != -2) {
            nx_sbuf_printf(b, "%sproduct=%s", sep, t->product < 0 ? "exact" : nx_format((nx_fmt)t->product)->name);
            sep = ", ";
        }
        if (t->rounding >= 0) {
            nx_sbuf_printf(b, "%srounding=%s", sep, nx_mode_name((nx_mode)t->rounding));
            sep = ", ";
        }
        if (t->store >= 0)
            nx_sbuf_printf(b, "%sstore=%s", sep, nx_format((nx_fmt)t->store)->name);
        nx_sbuf_printf(b, "]");
    }
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
    return t->kind == k || nx_tree_uses(t->t, k) || nx_tree_uses(t->c, k) || nx_tree_uses(t->u, k);
}
