/* nx_program.c: expansion of a tree for a length n (NUMERICS.md §4) into
 * single-assignment operations, its canonical hash, and its printed
 * bracketing. */
#include "nx_program.h"
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
} cx;

static int32_t emit(cx *c, nx_opkind k, nx_fmt f, nx_mode m, int32_t x, int32_t y)
{
    if (c->failed)
        return -1;
    nx_program *p = c->p;
    if (p->nops >= NX_PROGRAM_MAX_OPS) {
        nx_err_set(c->err, NX_EINVAL, "key 'tree': the tree expands to more than %zu operations at n = %zu",
                   NX_PROGRAM_MAX_OPS, p->n);
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

/* The format a product term's value rounds to, when the op uses value(t). */
static void set_pfmt(cx *c, int32_t op, int32_t src, nx_fmt F)
{
    if (c->failed || !c->p->dot || !NX_SRC_IS_TERM(src))
        return;
    c->p->ops[NX_SRC_OP(op)].pfmt = (uint8_t)(c->pt->product >= 0 ? c->pt->product : (int)F);
}

static int32_t leaf(cx *c, int32_t src, nx_fmt F)
{
    int32_t r = emit(c, NX_OP_LEAF, F, c->pt->rounding, src, 0);
    set_pfmt(c, r, src, F);
    return r;
}

static int32_t add(cx *c, int32_t x, int32_t y, nx_fmt F)
{
    int32_t r = emit(c, NX_OP_ADD, F, c->pt->rounding, x, y);
    if (c->failed)
        return r;
    if (c->p->dot && NX_SRC_IS_TERM(y) && c->pt->fma && c->pt->product < 0)
        c->p->ops[NX_SRC_OP(r)].fma = 1;
    else
        set_pfmt(c, r, y, F);
    return r;
}

static int32_t zero(cx *c, nx_fmt F)
{
    return emit(c, NX_OP_ZERO, F, c->pt->rounding, 0, 0);
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

static int32_t compile(cx *c, const nx_tree *t, const int32_t *src, size_t n, nx_fmt F, int32_t s0);

/* Reduces `count` partials, each a slice [lo_k, hi_k) of src, by T; then C
 * (from s0 when C takes it: the caller decided, docs/numerics.md §4.1). */
static int32_t reduce_parts(cx *c, const nx_tree *t, int32_t *parts, size_t count, nx_fmt F,
                            int32_t s0)
{
    int32_t r = compile(c, t->c, parts, count, F, s0);
    return r;
}

/* Whether a tree itself takes a start value (docs/numerics.md §4.1): seq and
 * chain start from it, reverse passes it on, split/tile/stride pass it to a
 * seq combinator.  Every other tree T is reduced from scratch and gets
 * round(T + s0).  (`@FMT` is the node's own format, applied first.) */
static int takes_start(const nx_tree *t)
{
    switch (t->kind) {
    case NX_T_SEQ: case NX_T_CHAIN: case NX_T_REVERSE:
        return 1;
    case NX_T_SPLIT: case NX_T_TILE: case NX_T_STRIDE:
        return t->c->kind == NX_T_SEQ;
    default:
        return 0;
    }
}

/* s0: the source of the start value, or NO_START. */
static int32_t compile(cx *c, const nx_tree *t, const int32_t *src, size_t n, nx_fmt F, int32_t s0)
{
    if (c->failed)
        return -1;
    if (t->fmt >= 0)
        F = (nx_fmt)t->fmt;
    if (s0 != NO_START && !takes_start(t)) {
        /* round(T + s0): one addition in the current format and mode */
        int32_t r = compile(c, t, src, n, F, NO_START);
        return add(c, r, s0, F);
    }
    switch (t->kind) {
    case NX_T_ATOMIC:
        c->p->nondeterministic = 1;
        /* evaluated in seq order: one admissible order */
        __attribute__((fallthrough));
    case NX_T_SEQ: {
        int32_t s = s0 != NO_START ? s0 : zero(c, F);
        for (size_t i = 0; i < n && !c->failed; i++)
            s = add(c, s, src[i], F);
        return s;
    }
    case NX_T_PAIRWISE: {
        if (n == 0)
            return zero(c, F);
        if (n == 1)
            return leaf(c, src[0], F);
        size_t h = (n + 1) / 2;
        int32_t a = compile(c, t, src, h, F, NO_START);
        int32_t b = compile(c, t, src + h, n - h, F, NO_START);
        return add(c, a, b, F);
    }
    case NX_T_HALVING: {
        size_t w = 1;
        while (w < n)
            w <<= 1;
        int32_t *v = alloc_src(c, w);
        if (!v)
            return -1;
        for (size_t j = 0; j < w; j++)
            v[j] = j < n ? leaf(c, src[j], F) : zero(c, F);
        for (size_t o = w / 2; o >= 1; o /= 2)
            for (size_t j = 0; j < o; j++)
                v[j] = add(c, v[j], v[j + o], F);
        int32_t r = v[0];
        free(v);
        return r;
    }
    case NX_T_REVERSE: {
        int32_t *rv = alloc_src(c, n);
        if (!rv)
            return -1;
        for (size_t i = 0; i < n; i++)
            rv[i] = src[n - 1 - i];
        int32_t r = compile(c, t->t, rv, n, F, s0);
        free(rv);
        return r;
    }
    case NX_T_SPLIT: case NX_T_TILE: {
        size_t S, len;
        if (t->kind == NX_T_SPLIT) {
            S = (size_t)t->count;
            len = (n + S - 1) / S;
            size_t A = (size_t)t->opt;
            len = (len + A - 1) / A * A;
        } else {
            len = (size_t)t->count;
            S = (n + len - 1) / len;
        }
        int32_t *parts = alloc_src(c, S);
        if (!parts)
            return -1;
        for (size_t k = 0; k < S && !c->failed; k++) {
            size_t lo = k * len, hi = lo + len;
            if (len && lo / len != k)
                lo = n; /* overflowed: past the end */
            if (hi > n || hi < lo)
                hi = n;
            parts[k] = lo >= n ? zero(c, F) : compile(c, t->t, src + lo, hi - lo, F, NO_START);
        }
        int32_t r = reduce_parts(c, t, parts, S, F, s0);
        free(parts);
        return r;
    }
    case NX_T_STRIDE: {
        size_t L = (size_t)t->count, V = (size_t)t->opt;
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
            parts[l] = m == 0 ? zero(c, F) : compile(c, t->t, lane, m, F, NO_START);
        }
        int32_t r = reduce_parts(c, t, parts, L, F, s0);
        free(parts);
        free(lane);
        return r;
    }
    case NX_T_CHAIN: {
        const nx_atom *a = &c->pt->atom;
        nx_fmt af = a->acc >= 0 ? (nx_fmt)a->acc : F;
        nx_mode am = a->round >= 0 ? (nx_mode)a->round : c->pt->rounding;
        size_t N = (size_t)t->count;
        /* from s0: it is the accumulator addend of the first atom */
        int32_t s = s0 != NO_START ? s0 : zero(c, F);
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
    cx c = {p, pt, 0, 0, err, 0};
    int32_t *src = alloc_src(&c, n);
    if (src) {
        for (size_t i = 0; i < n; i++)
            src[i] = (int32_t)i;
        /* the start value is operation 0 when there is one */
        int32_t s0 = start ? emit(&c, NX_OP_START, NX_FP64, NX_RNE, 0, 0) : NO_START;
        p->result = compile(&c, pt->tree, src, n, pt->acc, s0);
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

/* left: the source is the left operand, where "+0" reads unambiguously;
 * elsewhere the zero prints as "(+0)". */
static void print_src(nx_sbuf *b, const nx_program *p, int32_t s, int top, int left)
{
    if (NX_SRC_IS_TERM(s)) {
        nx_sbuf_printf(b, "t%d", s);
        return;
    }
    const nx_op *op = &p->ops[NX_SRC_OP(s)];
    switch (op->kind) {
    case NX_OP_ZERO:
        if (left || top)
            nx_sbuf_put(b, "+0", 2);
        else
            nx_sbuf_put(b, "(+0)", 4);
        break;
    case NX_OP_LEAF:
        print_src(b, p, op->x, top, left);
        break;
    case NX_OP_ADD:
        if (!top)
            nx_sbuf_put(b, "(", 1);
        print_src(b, p, op->x, 0, 1);
        nx_sbuf_put(b, "+", 1);
        print_src(b, p, op->y, 0, 0);
        if (!top)
            nx_sbuf_put(b, ")", 1);
        break;
    case NX_OP_START:
        nx_sbuf_put(b, "c", 1);
        break;
    case NX_OP_ATOM:
        nx_sbuf_put(b, "[", 1);
        print_src(b, p, op->x, 0, 1);
        for (int32_t g = 0; g < op->gn; g++) {
            nx_sbuf_put(b, "+", 1);
            print_src(b, p, p->gsrc[op->y + g], 0, 0);
        }
        nx_sbuf_put(b, "]", 1);
        break;
    }
}

char *nx_program_expansion(const nx_program *p)
{
    nx_sbuf b = {0};
    print_src(&b, p, p->result, 1, 1);
    return nx_sbuf_take(&b);
}
