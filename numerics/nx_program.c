/* nx_program.c: expansion of a tree for a length n (docs/numerics.md §4) into
 * single-assignment operations, its canonical hash, and its printed
 * bracketing. */
#include "nx_program.h"
#include "nx_limits.h"
#include "nx_sbuf.h"
#include "nx_sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cx {
    nx_program *p;
    const nx_point *pt;
    size_t cap, gcap;
    nx_err *err;
    int failed;
    size_t max_ops; /* nx_limits_get()->max_ops */
} cx;

static void ops_refused(cx *c)
{
    nx_err_set(c->err, NX_EINVAL,
               "key 'tree': the tree expands to more than %zu operations at n = %zu (raise the limit with --max-ops)",
               c->max_ops, c->p->n);
    c->failed = 1;
}

static int32_t emit(cx *c, nx_opkind k, nx_fmt f, nx_mode m, int32_t x, int32_t y)
{
    if (c->failed)
        return -1;
    nx_program *p = c->p;
    if (p->nops >= c->max_ops) {
        ops_refused(c);
        c->failed = 1;
        return -1;
    }
    if (p->nops == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        nx_op *ops = realloc(p->ops, cap * sizeof *ops);
        if (!ops) {
            nx_err_set(c->err, NX_ENOMEM, "out of memory expanding the tree");
            c->failed = 1;
            return -1;
        }
        p->ops = ops;
        c->cap = cap;
    }
    nx_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)k;
    op->fmt = (uint8_t)f;
    op->mode = (uint8_t)m;
    op->pfmt = 0xff;
    op->x = x;
    op->y = y;
    return -(int32_t)(p->nops++) - 1;
}

/* The settings in force at a node (§3 keys, overridden per subtree by
 * `@FMT` and `[k=v, ...]`, §4.1): the format F, the mode R, fma, product. */
typedef struct cs {
    nx_fmt F;
    nx_mode R;
    int fma;
    int product; /* nx_fmt or -1: exact */
} cs;

/* The format a product term's value rounds to, when the op uses value(t). */
static void set_pfmt(cx *c, int32_t op, int32_t src, cs S)
{
    if (c->failed || !c->p->dot || !NX_SRC_IS_TERM(src))
        return;
    c->p->ops[NX_SRC_OP(op)].pfmt = (uint8_t)(S.product >= 0 ? S.product : (int)S.F);
}

static int32_t leaf(cx *c, int32_t src, cs S)
{
    int32_t r = emit(c, NX_OP_LEAF, S.F, S.R, src, 0);
    set_pfmt(c, r, src, S);
    return r;
}

static int32_t add(cx *c, int32_t x, int32_t y, cs S)
{
    int32_t r = emit(c, NX_OP_ADD, S.F, S.R, x, y);
    if (c->failed)
        return r;
    if (c->p->dot && NX_SRC_IS_TERM(y) && S.fma && S.product < 0)
        c->p->ops[NX_SRC_OP(r)].fma = 1;
    else
        set_pfmt(c, r, y, S);
    return r;
}

/* round(x + y), never fused (expr's `+`, the combine of computed values). */
static int32_t add_plain(cx *c, int32_t x, int32_t y, cs S)
{
    cs T = S;
    T.fma = 0;
    return add(c, x, y, T);
}

static int32_t zero(cx *c, cs S)
{
    return emit(c, NX_OP_ZERO, S.F, S.R, 0, 0);
}

static int32_t *alloc_src(cx *c, size_t n)
{
    int32_t *s = malloc((n ? n : 1) * sizeof *s);
    if (!s && !c->failed) {
        nx_err_set(c->err, NX_ENOMEM, "out of memory expanding the tree");
        c->failed = 1;
    }
    return s;
}

/* No start value: the tree is reduced from scratch. */
#define NO_START INT32_MIN

static int32_t compile(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S, int32_t s0);

/* Whether a tree itself takes a start value (docs/numerics.md §4.1): seq and
 * chain start from it, reverse and order pass it on, split/tile/stride/body
 * pass it to a seq combinator (body: also to carry).  Every other tree T is
 * reduced from scratch and gets round(T + s0).  (`@FMT` and `[...]` are the
 * node's own settings, applied first.) */
static int takes_start(const nx_tree *t)
{
    switch (t->kind) {
    case NX_T_SEQ: case NX_T_CHAIN: case NX_T_REVERSE: case NX_T_ORDER:
        return 1;
    case NX_T_SPLIT: case NX_T_TILE: case NX_T_STRIDE: case NX_T_LANES:
        return t->carry || t->c->kind == NX_T_SEQ;
    case NX_T_BODY: case NX_T_HEAD:
        return t->carry || !t->c || t->c->kind == NX_T_SEQ;
    default:
        return 0;
    }
}

/* The tiles of `tile`: their lengths into len[] (malloc'd), their count
 * returned. */
static size_t tile_lengths(cx *c, const nx_tree *t, size_t n, size_t **len)
{
    size_t cap = 16, k = 0, pos = 0;
    size_t *l = malloc(cap * sizeof *l);
    if (!l) {
        nx_err_set(c->err, NX_ENOMEM, "out of memory expanding the tree");
        c->failed = 1;
        return 0;
    }
#define PUSH(v)                                                                                  \
    do {                                                                                         \
        if (k == cap) {                                                                          \
            size_t *nl = realloc(l, (cap *= 2) * sizeof *l);                                     \
            if (!nl) {                                                                           \
                free(l);                                                                         \
                nx_err_set(c->err, NX_ENOMEM, "out of memory expanding the tree");               \
                c->failed = 1;                                                                   \
                return 0;                                                                        \
            }                                                                                    \
            l = nl;                                                                              \
        }                                                                                        \
        l[k++] = (v);                                                                            \
        pos += (v);                                                                              \
    } while (0)
    if (t->list) {
        /* the listed sizes in order (cut at n), then one tile of what is left */
        for (size_t i = 0; i < t->nlist && pos < n; i++) {
            size_t b = (size_t)t->list[i];
            PUSH(b < n - pos ? b : n - pos);
        }
        if (pos < n)
            PUSH(n - pos);
    } else if (t->opt > 0) {
        /* halve=A: P while at least 2P remain; then two near-halves, the
         * first ceil(r/2) rounded up to a multiple of A, or one tile */
        size_t P = (size_t)t->count, A = (size_t)t->opt;
        while (n - pos >= 2 * P)
            PUSH(P);
        size_t r = n - pos;
        if (r > P) {
            size_t h = (r + 1) / 2;
            h = (h + A - 1) / A * A;
            if (h > r)
                h = r;
            PUSH(h);
            if (n - pos > 0)
                PUSH(n - pos);
        } else if (r > 0) {
            PUSH(r);
        }
    } else {
        size_t P = (size_t)t->count;
        while (pos < n)
            PUSH(n - pos < P ? n - pos : P);
    }
#undef PUSH
    *len = l;
    return k;
}

/* expr(B) over src[0..n): indices >= n are absent. */
static int32_t compile_expr(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S)
{
    if (n > (size_t)t->k) {
        nx_err_set(c->err, NX_EINVAL,
                   "key 'tree': expr(...) orders %ld terms but is given %zu (use it inside tile(%ld, expr(...), C))",
                   t->k, n, t->k);
        c->failed = 1;
        return -1;
    }
    int32_t *st = alloc_src(c, t->nlist);
    if (!st)
        return -1;
    const int32_t ABSENT = INT32_MIN + 1;
    size_t sp = 0;
    for (size_t i = 0; i < t->nlist && !c->failed; i++) {
        long v = t->list[i];
        if (v != NX_EXPR_ADD) {
            st[sp++] = (size_t)v < n ? leaf(c, src[v], S) : ABSENT;
            continue;
        }
        int32_t y = st[--sp], x = st[--sp];
        st[sp++] = x == ABSENT ? y : y == ABSENT ? x : add_plain(c, x, y, S);
    }
    int32_t r = sp == 1 ? st[0] : -1;
    free(st);
    if (r == ABSENT) /* n = 0 */
        r = zero(c, S);
    return r;
}

/* A split or stride of k parts emits at least one operation per part:
 * refused before the k-element arrays are allocated when that alone is
 * over the operation limit (split(1073741824, seq, seq) at n = 4 asked for
 * 4 GiB and ran out of memory instead of being bad input). */
static int too_many_parts(cx *c, size_t k)
{
    if (k < c->max_ops - c->p->nops)
        return 0;
    ops_refused(c);
    return 1;
}

/* lanes(W, [stages], C) (§4.2): W lanes from +0; loop and peel stages add
 * the next terms into lanes 0, 1, ... with the step of the settings in force;
 * a fold combines registers lane by lane (never fused); terms left after the
 * stages go in blocks of the live width; C reduces the live lanes. */
static int32_t compile_lanes(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S, int32_t s0)
{
    size_t w = (size_t)t->count, pos = 0;
    if (too_many_parts(c, w))
        return -1;
    int32_t *v = alloc_src(c, w);
    if (!v)
        return -1;
    for (size_t l = 0; l < w && !c->failed; l++)
        v[l] = zero(c, S);
    size_t i = 0;
    while (i < t->nlist && !c->failed) {
        long op = t->list[i];
        if (op == NX_LANES_LOOPU) {
            /* while U terms remain, U / B blocks of B to lanes 0 ... B-1 */
            size_t B = (size_t)t->list[i + 1], U = (size_t)t->list[i + 2];
            i += 3;
            while (n - pos >= U && !c->failed)
                for (size_t u = 0; u < U; u += B, pos += B)
                    for (size_t l = 0; l < B; l++)
                        v[l] = add(c, v[l], src[pos + l], S);
            continue;
        }
        if (op == NX_LANES_REST) {
            /* every term left, one at a time, to lane L */
            size_t L = (size_t)t->list[i + 1];
            i += 2;
            while (pos < n && !c->failed)
                v[L] = add(c, v[L], src[pos++], S);
            continue;
        }
        if (op == NX_LANES_LOOP || op == NX_LANES_PEEL) {
            size_t B = (size_t)t->list[i + 1];
            int once = op == NX_LANES_PEEL;
            if (once) {
                size_t M = (size_t)t->list[i + 2];
                i += 3;
                if ((n - pos) % M < B)
                    continue;
            } else {
                i += 2;
            }
            while (n - pos >= B && !c->failed) {
                for (size_t l = 0; l < B; l++)
                    v[l] = add(c, v[l], src[pos + l], S);
                pos += B;
                if (once)
                    break;
            }
            continue;
        }
        /* fold: register q is lanes qV ... qV+V-1; bracket b gives the new
         * register b, lane by lane */
        size_t V = (size_t)t->list[i + 1], k = (size_t)t->list[i + 2];
        i += 3;
        int32_t *nv = alloc_src(c, k * V), *st = alloc_src(c, t->nlist);
        if (!nv || !st) {
            free(nv);
            free(st);
            free(v);
            return -1;
        }
        for (size_t b = 0; b < k; b++) {
            size_t e = i;
            while (t->list[e] != NX_LANES_END)
                e++;
            for (size_t j = 0; j < V && !c->failed; j++) {
                size_t sp = 0;
                for (size_t q = i; q < e; q++) {
                    if (t->list[q] == NX_EXPR_ADD) {
                        int32_t y = st[--sp], x = st[--sp];
                        st[sp++] = add_plain(c, x, y, S);
                    } else {
                        st[sp++] = v[(size_t)t->list[q] * V + j];
                    }
                }
                nv[b * V + j] = st[0];
            }
            i = e + 1;
        }
        free(st);
        free(v);
        v = nv;
        w = k * V;
    }
    /* what the stages left: blocks of the live width, the last one shorter */
    while (pos < n && !c->failed) {
        size_t b = n - pos < w ? n - pos : w;
        for (size_t l = 0; l < b; l++)
            v[l] = add(c, v[l], src[pos + l], S);
        pos += b;
    }
    int32_t r = compile(c, t->c, v, w, S, s0);
    free(v);
    return r;
}

/* body's and head's parts without carry: the first a terms by X, the rest
 * by Y, each from scratch; t's combinator (default seq) reduces the values
 * of the parts that are not empty, the first first, from s0. */
static int32_t compile_two(cx *c, const nx_tree *t, const nx_tree *X, const nx_tree *Y, const int32_t *src,
                           size_t a, size_t n, cs S, int32_t s0)
{
    int32_t parts[2];
    size_t np = 0;
    if (a > 0)
        parts[np++] = compile(c, X, src, a, S, NO_START);
    if (a < n)
        parts[np++] = compile(c, Y, src + a, n - a, S, NO_START);
    static const nx_tree seq_c = {.kind = NX_T_SEQ, .fmt = -1, .fma = -1, .product = -2, .rounding = -1,
                                  .store = -1};
    return compile(c, t->c ? t->c : &seq_c, parts, np, S, s0);
}

static int32_t compile_node(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S, int32_t s0);

/* The settings in force inside t: S with t's own (`@FMT`, `[...]`). */
static cs node_settings(const nx_tree *t, cs S)
{
    if (t->fmt >= 0)
        S.F = (nx_fmt)t->fmt;
    if (t->rounding >= 0)
        S.R = (nx_mode)t->rounding;
    if (t->fma >= 0)
        S.fma = t->fma;
    if (t->product != -2)
        S.product = t->product;
    return S;
}

/* s0: the source of the start value, or NO_START.  A node with `store`
 * (seventh edition) has its result rounded to that format in the node's
 * mode after everything it computes, its start value included: one more
 * LEAF over the result, left out where it cannot change the value (the
 * result already of that format, or the format binary64). */
static int32_t compile(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S, int32_t s0)
{
    int32_t r = compile_node(c, t, src, n, S, s0);
    if (t->store < 0 || c->failed)
        return r;
    cs X = node_settings(t, S);
    if (NX_SRC_IS_TERM(r))
        r = leaf(c, r, X);
    if (c->failed || t->store == NX_FP64 || c->p->ops[NX_SRC_OP(r)].fmt == t->store)
        return r;
    return emit(c, NX_OP_LEAF, (nx_fmt)t->store, X.R, r, 0);
}

static int32_t compile_node(cx *c, const nx_tree *t, const int32_t *src, size_t n, cs S, int32_t s0)
{
    if (c->failed)
        return -1;
    S = node_settings(t, S);
    if (s0 != NO_START && !takes_start(t)) {
        /* round(T + s0): one addition in the current format and mode (the
         * node's store, if any, after it) */
        int32_t r = compile_node(c, t, src, n, S, NO_START);
        return add_plain(c, r, s0, S);
    }
    switch (t->kind) {
    case NX_T_ATOMIC:
        c->p->nondeterministic = 1;
        /* evaluated in seq order: one admissible order */
        __attribute__((fallthrough));
    case NX_T_SEQ: {
        int32_t s = s0 != NO_START ? s0 : zero(c, S);
        for (size_t i = 0; i < n && !c->failed; i++)
            s = add(c, s, src[i], S);
        return s;
    }
    case NX_T_PAIRWISE: {
        if (n == 0)
            return zero(c, S);
        if (n == 1)
            return leaf(c, src[0], S);
        size_t h = (n + 1) / 2;
        /* the halves are this node's own recursion: not stored apart */
        int32_t a = compile_node(c, t, src, h, S, NO_START);
        int32_t b = compile_node(c, t, src + h, n - h, S, NO_START);
        return add(c, a, b, S);
    }
    case NX_T_HALVING: {
        size_t w = 1;
        while (w < n)
            w <<= 1;
        int32_t *v = alloc_src(c, w);
        if (!v)
            return -1;
        for (size_t j = 0; j < w; j++)
            v[j] = j < n ? leaf(c, src[j], S) : zero(c, S);
        for (size_t o = w / 2; o >= 1; o /= 2)
            for (size_t j = 0; j < o; j++)
                v[j] = add(c, v[j], v[j + o], S);
        int32_t r = v[0];
        free(v);
        return r;
    }
    case NX_T_REVERSE: case NX_T_ORDER: {
        int32_t *rv = alloc_src(c, n);
        if (!rv)
            return -1;
        if (t->kind == NX_T_REVERSE) {
            for (size_t i = 0; i < n; i++)
                rv[i] = src[n - 1 - i];
        } else {
            /* full blocks of k in the listed order; a last partial block as it is */
            size_t k = (size_t)t->count, full = n / k * k;
            for (size_t b = 0; b < full; b += k)
                for (size_t j = 0; j < k; j++)
                    rv[b + j] = src[b + (size_t)t->list[j]];
            for (size_t i = full; i < n; i++)
                rv[i] = src[i];
        }
        int32_t r = compile(c, t->t, rv, n, S, s0);
        free(rv);
        return r;
    }
    case NX_T_EXPR:
        return compile_expr(c, t, src, n, S);
    case NX_T_LANES:
        return compile_lanes(c, t, src, n, S, s0);
    case NX_T_BODY: {
        size_t L = (size_t)t->count, m = n - n % L;
        if (t->carry) {
            /* T from scratch; the tail continues from its value (a start
             * value enters first, as a seq combinator's would) */
            int32_t v = s0;
            if (m > 0) {
                int32_t h = compile(c, t->t, src, m, S, NO_START);
                v = v == NO_START ? h : add_plain(c, v, h, S);
            }
            if (m < n)
                return compile(c, t->u, src + m, n - m, S, v);
            return v == NO_START ? compile(c, t->t, src, 0, S, NO_START) : v;
        }
        return compile_two(c, t, t->t, t->u, src, m, n, S, s0);
    }
    case NX_T_HEAD: {
        /* eighth edition: the first n mod L terms by U, the rest by T */
        size_t L = (size_t)t->count, h = n % L;
        if (t->carry) {
            /* U from the start value, if any; T continues from its value */
            int32_t v = s0;
            if (h > 0)
                v = compile(c, t->u, src, h, S, v);
            if (h < n)
                return compile(c, t->t, src + h, n - h, S, v);
            return v == NO_START ? compile(c, t->t, src, 0, S, NO_START) : v;
        }
        return compile_two(c, t, t->u, t->t, src, h, n, S, s0);
    }
    case NX_T_SPLIT: case NX_T_TILE: {
        size_t nparts, slen = 0, *lens = NULL;
        if (t->kind == NX_T_SPLIT) {
            nparts = (size_t)t->count;
            if (too_many_parts(c, nparts))
                return -1;
            slen = (n + nparts - 1) / nparts;
            size_t A = (size_t)t->opt;
            slen = (slen + A - 1) / A * A;
        } else {
            nparts = tile_lengths(c, t, n, &lens);
            if (c->failed)
                return -1;
        }
        if (t->carry) {
            /* each tile reduced by T from the running value (the start
             * value, if any, for the first; from scratch without one) */
            int32_t v = s0;
            size_t at = 0;
            for (size_t k = 0; k < nparts && !c->failed; k++) {
                v = compile(c, t->t, src + at, lens[k], S, v);
                at += lens[k];
            }
            free(lens);
            if (c->failed)
                return -1;
            return v == NO_START ? compile(c, t->t, src, 0, S, NO_START) : v;
        }
        int32_t *parts = alloc_src(c, nparts);
        if (!parts) {
            free(lens);
            return -1;
        }
        size_t lo = 0;
        for (size_t k = 0; k < nparts && !c->failed; k++) {
            size_t hi;
            if (t->kind == NX_T_SPLIT) {
                lo = k * slen;
                if (slen && lo / slen != k)
                    lo = n; /* overflowed: past the end */
                hi = lo + slen;
                if (hi > n || hi < lo)
                    hi = n;
            } else {
                hi = lo + lens[k];
            }
            parts[k] = lo >= n ? zero(c, S) : compile(c, t->t, src + lo, hi - lo, S, NO_START);
            lo = hi;
        }
        int32_t r = compile(c, t->c, parts, nparts, S, s0);
        free(parts);
        free(lens);
        return r;
    }
    case NX_T_STRIDE: {
        size_t L = (size_t)t->count, V = (size_t)t->opt;
        if (too_many_parts(c, L))
            return -1;
        int32_t *parts = alloc_src(c, L);
        int32_t *lane = alloc_src(c, n);
        if (!parts || !lane) {
            free(parts);
            free(lane);
            return -1;
        }
        size_t nblocks = (n + V - 1) / V;
        for (size_t l = 0; l < L && !c->failed; l++) {
            size_t m = 0;
            for (size_t b = l; b < nblocks; b += L)
                for (size_t i = b * V; i < (b + 1) * V && i < n; i++)
                    lane[m++] = src[i];
            parts[l] = m == 0 ? zero(c, S) : compile(c, t->t, lane, m, S, NO_START);
        }
        int32_t r = compile(c, t->c, parts, L, S, s0);
        free(parts);
        free(lane);
        return r;
    }
    case NX_T_CHAIN: {
        const nx_atom *a = &c->pt->atom;
        nx_fmt af = a->acc >= 0 ? (nx_fmt)a->acc : S.F;
        nx_mode am = a->round >= 0 ? (nx_mode)a->round : S.R;
        size_t N = (size_t)t->count;
        /* from s0: it is the accumulator addend of the first atom */
        int32_t s = s0 != NO_START ? s0 : zero(c, S);
        for (size_t g = 0; g < n && !c->failed; g += N) {
            size_t gn = n - g < N ? n - g : N;
            nx_program *p = c->p;
            if (p->ngsrc + gn > c->gcap) {
                size_t cap = (c->gcap + gn) * 2;
                int32_t *gs = realloc(p->gsrc, cap * sizeof *gs);
                if (!gs) {
                    nx_err_set(c->err, NX_ENOMEM, "out of memory expanding the tree");
                    c->failed = 1;
                    return -1;
                }
                p->gsrc = gs;
                c->gcap = cap;
            }
            memcpy(p->gsrc + p->ngsrc, src + g, gn * sizeof *src);
            s = emit(c, NX_OP_ATOM, af, am, s, (int32_t)p->ngsrc);
            if (!c->failed)
                p->ops[NX_SRC_OP(s)].gn = (int32_t)gn;
            p->ngsrc += gn;
        }
        return s;
    }
    }
    return -1;
}

nx_status nx_program_build(const nx_point *pt, size_t n, int dot, nx_program **out, nx_err *err)
{
    return nx_program_build_ex(pt, n, dot, 0, out, err);
}

nx_status nx_program_build_ex(const nx_point *pt, size_t n, int dot, int start, nx_program **out,
                              nx_err *err)
{
    *out = NULL;
    nx_status st = nx_point_validate(pt, err);
    if (st)
        return st;
    if (n > (size_t)INT32_MAX)
        return nx_err_set(err, NX_EINVAL, "n = %zu terms is too many (at most %d)", n, INT32_MAX);
    nx_program *p = calloc(1, sizeof *p);
    if (!p)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    p->n = n;
    p->start = start != 0;
    p->dot = dot;
    p->in = pt->in;
    p->in_rounding = pt->in_rounding;
    p->out = nx_point_out(pt);
    p->out_rounding = nx_point_out_rounding(pt);
    p->saturate = pt->saturate;
    p->atom_frac_bits = pt->atom.present ? pt->atom.frac_bits : -1;
    p->atom_term_round = pt->atom.term_round;
    p->atom_align = (nx_align)pt->atom.align;
    cx c = {p, pt, 0, 0, err, 0, (size_t)nx_limits_get()->max_ops};
    /* every term is at least one operation or atom source: refused before
     * the n-element arrays are allocated */
    if (n > c.max_ops) {
        nx_program_free(p);
        return nx_err_set(err, NX_EINVAL,
                          "n = %zu terms is more than the limit of %zu operations (raise it with --max-ops)", n,
                          c.max_ops);
    }
    /* most trees take about 2n operations (a leaf and an add per term):
     * reserved at once, not grown from 64 by copies */
    size_t want = 2 * n + 8 < c.max_ops ? 2 * n + 8 : c.max_ops;
    if ((p->ops = malloc(want * sizeof *p->ops)))
        c.cap = want;
    int32_t *src = alloc_src(&c, n);
    if (src) {
        for (size_t i = 0; i < n; i++)
            src[i] = (int32_t)i;
        /* the start value is operation 0 when there is one */
        int32_t s0 = start ? emit(&c, NX_OP_START, NX_FP64, NX_RNE, 0, 0) : NO_START;
        cs S = {pt->acc, pt->rounding, pt->fma, pt->product};
        p->result = compile(&c, pt->tree, src, n, S, s0);
        free(src);
    }
    if (c.failed) {
        nx_program_free(p);
        return err ? err->code : NX_EINVAL;
    }
    *out = p;
    return NX_OK;
}

void nx_program_free(nx_program *p)
{
    if (!p)
        return;
    free(p->ops);
    free(p->gsrc);
    free(p);
}

/* Feeds a source to the hash: a term by index, an operation by its digest. */
static void hash_src(nx_sha256 *h, const uint8_t (*dig)[32], int32_t s)
{
    if (NX_SRC_IS_TERM(s)) {
        uint8_t b[5] = {'T', (uint8_t)s, (uint8_t)(s >> 8), (uint8_t)(s >> 16), (uint8_t)(s >> 24)};
        nx_sha256_update(h, b, sizeof b);
    } else {
        nx_sha256_update(h, "O", 1);
        nx_sha256_update(h, dig[NX_SRC_OP(s)], 32);
    }
}

nx_status nx_program_hash(const nx_program *p, char hex[65], nx_err *err)
{
    uint8_t (*dig)[32] = malloc((p->nops ? p->nops : 1) * sizeof *dig);
    if (!dig)
        return nx_err_set(err, NX_ENOMEM, "out of memory hashing the point");
    int has_atom = 0;
    for (size_t i = 0; i < p->nops; i++) {
        const nx_op *op = &p->ops[i];
        nx_sha256 h;
        nx_sha256_init(&h);
        uint8_t head[5] = {op->kind, op->fmt, op->mode, op->pfmt, op->fma};
        if (op->kind == NX_OP_ZERO)
            head[2] = 0; /* +0 does not depend on the mode */
        nx_sha256_update(&h, head, sizeof head);
        if (op->kind != NX_OP_ZERO && op->kind != NX_OP_START)
            hash_src(&h, (const uint8_t (*)[32])dig, op->x);
        if (op->kind == NX_OP_ADD)
            hash_src(&h, (const uint8_t (*)[32])dig, op->y);
        if (op->kind == NX_OP_ATOM) {
            has_atom = 1;
            for (int32_t g = 0; g < op->gn; g++)
                hash_src(&h, (const uint8_t (*)[32])dig, p->gsrc[op->y + g]);
        }
        nx_sha256_final(&h, dig[i]);
    }
    nx_sha256 h;
    nx_sha256_init(&h);
    char globals[160];
    int gl = snprintf(globals, sizeof globals, "parity-point-v1 dot=%d n=%zu in=%d/%d out=%d/%d sat=%d",
                      p->dot, p->n, p->in, p->in >= 0 ? (int)p->in_rounding : 0, (int)p->out,
                      (int)p->out_rounding, p->saturate);
    nx_sha256_update(&h, globals, (size_t)gl);
    if (has_atom) {
        /* the alignment matters only where addends are cut and some are
         * products: elsewhere both rules give the same bits, and hash alike */
        int cut = p->atom_frac_bits >= 0;
        gl = snprintf(globals, sizeof globals, " atom=%d/%d/%s", p->atom_frac_bits,
                      cut ? (int)p->atom_term_round : 0,
                      cut && p->dot ? nx_align_name(p->atom_align) : "-");
        nx_sha256_update(&h, globals, (size_t)gl);
    }
    hash_src(&h, (const uint8_t (*)[32])dig, p->result);
    uint8_t d[32];
    nx_sha256_final(&h, d);
    free(dig);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return NX_OK;
}

/* The printer walks the operations with an explicit stack, not recursion:
 * a seq of n terms is a chain n operations deep (n up to 2^20 from the CLI,
 * 2^27 operations from any point), which would exhaust the C stack.  An
 * item is 8 bytes and a chain of additions costs two per level (the ")"
 * and the right operand; the left one is printed at once), so the stack
 * stays below the program's own size. */
enum { P_SRC, P_CLOSE_PAREN, P_CLOSE_BRACKET };
typedef struct pitem {
    int32_t s;        /* P_SRC: the source */
    uint8_t what;     /* P_SRC, or a closing text */
    uint8_t top, left;
    uint8_t plus;     /* P_SRC: "+" before it */
} pitem;

typedef struct pstack {
    pitem *v;
    size_t n, cap;
    int failed;
} pstack;

static void ppush(pstack *st, pitem it)
{
    if (st->failed)
        return;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        pitem *v = realloc(st->v, cap * sizeof *v);
        if (!v) {
            st->failed = 1;
            return;
        }
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = it;
}

/* left: the source is the left operand, where "+0" reads unambiguously;
 * elsewhere the zero prints as "(+0)". */
static int print_src(nx_sbuf *b, const nx_program *p, int32_t root)
{
    pstack st = {0};
    ppush(&st, (pitem){root, P_SRC, 1, 1, 0});
    while (st.n > 0 && !st.failed) {
        pitem it = st.v[--st.n];
        if (it.what == P_CLOSE_PAREN) {
            nx_sbuf_put(b, ")", 1);
            continue;
        }
        if (it.what == P_CLOSE_BRACKET) {
            nx_sbuf_put(b, "]", 1);
            continue;
        }
        if (it.plus)
            nx_sbuf_put(b, "+", 1);
        /* the left operand of an addition is printed in this same pass */
        for (;;) {
            int32_t s = it.s;
            /* a leaf prints its source in its place */
            while (!NX_SRC_IS_TERM(s) && p->ops[NX_SRC_OP(s)].kind == NX_OP_LEAF)
                s = p->ops[NX_SRC_OP(s)].x;
            if (NX_SRC_IS_TERM(s)) {
                nx_sbuf_printf(b, "t%d", s);
                break;
            }
            const nx_op *op = &p->ops[NX_SRC_OP(s)];
            if (op->kind == NX_OP_ZERO) {
                if (it.left || it.top)
                    nx_sbuf_put(b, "+0", 2);
                else
                    nx_sbuf_put(b, "(+0)", 4);
                break;
            }
            if (op->kind == NX_OP_START) {
                nx_sbuf_put(b, "c", 1);
                break;
            }
            if (op->kind == NX_OP_ADD) {
                if (!it.top) {
                    nx_sbuf_put(b, "(", 1);
                    ppush(&st, (pitem){0, P_CLOSE_PAREN, 0, 0, 0});
                }
                ppush(&st, (pitem){op->y, P_SRC, 0, 0, 1});
            } else { /* NX_OP_ATOM */
                nx_sbuf_put(b, "[", 1);
                ppush(&st, (pitem){0, P_CLOSE_BRACKET, 0, 0, 0});
                for (int32_t g = op->gn - 1; g >= 0; g--)
                    ppush(&st, (pitem){p->gsrc[op->y + g], P_SRC, 0, 0, 1});
            }
            it = (pitem){op->x, P_SRC, 0, 1, 0};
        }
    }
    int ok = !st.failed;
    free(st.v);
    return ok;
}

char *nx_program_expansion(const nx_program *p)
{
    nx_sbuf b = {0};
    if (!print_src(&b, p, p->result)) {
        free(nx_sbuf_take(&b));
        return NULL;
    }
    return nx_sbuf_take(&b);
}
