/* nx_select.c: row-class selectors (docs/numerics.md §4.3), parsed into a
 * postfix program by precedence climbing and evaluated with 64-bit
 * integers.  Nesting is bounded, so no selector can exhaust the stack. */
#include "nx_select.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_NUM, OP_VAR, OP_NOT, OP_NEG, OP_BIN };
enum { B_OR, B_AND, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_ADD, B_SUB, B_MUL, B_DIV, B_MOD };

typedef struct sel_op {
    int kind, arg; /* OP_VAR: the variable; OP_BIN: the operator */
    long long num;
    int col;       /* column, for division by zero */
} sel_op;

struct nx_select {
    sel_op *ops;
    size_t n, cap;
    int uses_grid;
};

typedef struct sp {
    const char *text, *p, *name;
    nx_select *s;
    nx_err *err;
    int failed, depth;
} sp;

/* n, the reduction length (fourth edition), is last so that the indices of
 * the first six stay those of the grid test below */
static const char *const vars[] = {"r", "R", "i", "j", "M", "N", "n"};

__attribute__((format(printf, 3, 4))) static void fail(sp *ps, const char *at, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nx_err_set(ps->err, NX_EINVAL, "%s: column %d: %s", ps->name, (int)(at - ps->text) + 1, msg);
}

static void push(sp *ps, int kind, int arg, long long num, const char *at)
{
    if (ps->failed)
        return;
    nx_select *s = ps->s;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        sel_op *o = realloc(s->ops, cap * sizeof *o);
        if (!o) {
            ps->failed = 1;
            nx_err_set(ps->err, NX_ENOMEM, "out of memory");
            return;
        }
        s->ops = o;
        s->cap = cap;
    }
    s->ops[s->n++] = (sel_op){kind, arg, num, (int)(at - ps->text) + 1};
}

static void ws(sp *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static void expr(sp *ps, int minprec);

static void primary(sp *ps)
{
    ws(ps);
    const char *at = ps->p;
    if (++ps->depth > 256) {
        fail(ps, at, "the selector is nested deeper than 256 levels");
        return;
    }
    if (*ps->p == '(') {
        ps->p++;
        expr(ps, 0);
        ws(ps);
        /* after a failure inside, the cursor may be at the end: never
         * step past the terminator */
        if (!ps->failed) {
            if (*ps->p != ')')
                fail(ps, ps->p, "expected ')'");
            else
                ps->p++;
        }
    } else if (*ps->p == '!' && ps->p[1] != '=') {
        ps->p++;
        primary(ps);
        push(ps, OP_NOT, 0, 0, at);
    } else if (isdigit((unsigned char)*ps->p)) {
        long long v = 0;
        while (isdigit((unsigned char)*ps->p)) {
            v = v * 10 + (*ps->p++ - '0');
            if (v > (1LL << 40)) {
                fail(ps, at, "the number is too large (at most 2^40)");
                return;
            }
        }
        push(ps, OP_NUM, 0, v, at);
    } else if (isalpha((unsigned char)*ps->p)) {
        size_t n = 0;
        while (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_')
            n++;
        int v = -1;
        for (int k = 0; k < 7; k++)
            if (strlen(vars[k]) == n && strncmp(vars[k], ps->p, n) == 0)
                v = k;
        if (v < 0) {
            fail(ps, at, "unknown name '%.*s' (expected r, R, n, i, j, M, N or a number)", (int)n, ps->p);
            return;
        }
        if (v >= 2 && v <= 5)
            ps->s->uses_grid = 1;
        ps->p += n;
        push(ps, OP_VAR, v, 0, at);
    } else {
        fail(ps, at, *ps->p ? "expected a number, a name or '('" : "expected a number, a name or '(' at the end");
    }
    ps->depth--;
}

/* The binary operator at the cursor, its precedence and length; -1 if none. */
static int binop(const char *p, int *prec, int *len)
{
    static const struct { const char *s; int op, prec; } t[] = {
        {"||", B_OR, 1}, {"&&", B_AND, 2}, {"==", B_EQ, 3}, {"!=", B_NE, 3}, {"<=", B_LE, 4}, {">=", B_GE, 4},
        {"<", B_LT, 4},  {">", B_GT, 4},   {"+", B_ADD, 5}, {"-", B_SUB, 5}, {"*", B_MUL, 6}, {"/", B_DIV, 6},
        {"%", B_MOD, 6},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        if (strncmp(p, t[k].s, strlen(t[k].s)) == 0) {
            *prec = t[k].prec;
            *len = (int)strlen(t[k].s);
            return t[k].op;
        }
    return -1;
}

static void expr(sp *ps, int minprec)
{
    primary(ps);
    for (;;) {
        if (ps->failed)
            return;
        ws(ps);
        int prec, len, op = binop(ps->p, &prec, &len);
        if (op < 0 || prec <= minprec)
            return;
        const char *at = ps->p;
        ps->p += len;
        expr(ps, prec); /* left associative */
        push(ps, OP_BIN, op, 0, at);
    }
}

nx_status nx_select_parse(const char *text, const char *name, nx_select **out, nx_err *err)
{
    *out = NULL;
    nx_select *s = calloc(1, sizeof *s);
    if (!s)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    sp ps = {text, text, name ? name : "select", s, err, 0, 0};
    expr(&ps, 0);
    ws(&ps);
    if (!ps.failed && *ps.p)
        fail(&ps, ps.p, "unexpected '%c' after the selector", *ps.p);
    if (ps.failed) {
        nx_select_free(s);
        return err ? err->code : NX_EINVAL;
    }
    *out = s;
    return NX_OK;
}

void nx_select_free(nx_select *s)
{
    if (!s)
        return;
    free(s->ops);
    free(s);
}

int nx_select_uses_grid(const nx_select *s)
{
    return s->uses_grid;
}

/* An operand on the evaluation stack; poisoned: it divided by zero.  && and
 * || do not look at a side they do not need (as in C), so a poison there
 * is harmless; a poisoned result is the error. */
typedef struct sval {
    long long v;
    int poison; /* 0, or the column of the division by zero */
} sval;

nx_status nx_select_eval(const nx_select *s, long long r, long long R, long long M, long long N, long long n,
                         int *out, nx_err *err)
{
    sval stack[512], *st = stack;
    sval *heap = NULL;
    if (s->n > 512) {
        heap = malloc(s->n * sizeof *heap);
        if (!heap)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        st = heap;
    }
    long long v[7] = {r, R, N > 0 ? r / N : 0, N > 0 ? r % N : 0, M, N, n};
    size_t sp = 0;
    for (size_t k = 0; k < s->n; k++) {
        const sel_op *o = &s->ops[k];
        switch (o->kind) {
        case OP_NUM: st[sp++] = (sval){o->num, 0}; break;
        case OP_VAR: st[sp++] = (sval){v[o->arg], 0}; break;
        case OP_NOT: st[sp - 1].v = !st[sp - 1].v; break;
        case OP_NEG: st[sp - 1].v = -st[sp - 1].v; break;
        default: {
            sval b = st[--sp], a = st[--sp], c = {0, 0};
            if (o->arg == B_AND) {
                c = a.poison ? a : !a.v ? (sval){0, 0} : b.poison ? b : (sval){b.v != 0, 0};
            } else if (o->arg == B_OR) {
                c = a.poison ? a : a.v ? (sval){1, 0} : b.poison ? b : (sval){b.v != 0, 0};
            } else if (a.poison || b.poison) {
                c = a.poison ? a : b;
            } else {
                long long x = a.v, y = b.v;
                switch (o->arg) {
                case B_EQ: c.v = x == y; break;
                case B_NE: c.v = x != y; break;
                case B_LT: c.v = x < y; break;
                case B_LE: c.v = x <= y; break;
                case B_GT: c.v = x > y; break;
                case B_GE: c.v = x >= y; break;
                case B_ADD: c.v = x + y; break;
                case B_SUB: c.v = x - y; break;
                case B_MUL: c.v = x * y; break;
                default:
                    if (y == 0) {
                        c.poison = o->col;
                        break;
                    }
                    /* floor division and its remainder (the same as C's for
                     * non-negative operands, the contract's case) */
                    c.v = x / y;
                    if ((x % y != 0) && ((x < 0) != (y < 0)))
                        c.v--;
                    if (o->arg == B_MOD)
                        c.v = x - c.v * y;
                    break;
                }
            }
            st[sp++] = c;
        }
        }
    }
    sval res = sp == 1 ? st[0] : (sval){0, 0};
    free(heap);
    if (res.poison)
        return nx_err_set(err, NX_EINVAL, "column %d: division by zero at row %lld", res.poison, r);
    *out = res.v != 0;
    return NX_OK;
}
