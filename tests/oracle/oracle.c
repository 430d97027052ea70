/* oracle.c: the exact test oracle.  See oracle.h.
 *
 * Values are `oval`: a kind (finite, inf, NaN), a sign flag and an exact
 * rational.  Every rounding goes through oround(), every sum through oadd(),
 * every product through omul().  Nothing here uses floating point. */
#include "oracle.h"

#include <stdarg.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Formats (docs/numerics.md section 1, section 7 items 1, 2)            */
/* ------------------------------------------------------------------ */

enum { NK_NONE, NK_IEEE, NK_E4M3, NK_E8M0 };

typedef struct fmt_t {
    const char *name;
    int width;        /* storage bits */
    int ebits, mbits; /* bit layout: exponent field, mantissa field */
    int p;            /* precision incl. hidden bit */
    int bias;
    int emin;         /* smallest normal exponent (quantum below it: 2^(emin-p+1)) */
    int emax;         /* exponent of max finite */
    uint64_t mmax;    /* max finite = mmax * 2^(emax - p + 1) */
    int has_inf;
    int nan_kind;
    int is_unsigned;
    uint64_t qnan;    /* canonical NaN (when nan_kind != NK_NONE) */
} fmt_t;

static const fmt_t FORMATS[] = {
    /* name    w   e   m   p   bias  emin  emax  mmax               inf nan       uns qnan */
    {"fp64",  64, 11, 52, 53, 1023, -1022, 1023, (1ULL << 53) - 1,  1, NK_IEEE, 0, 0x7ff8000000000000ULL},
    {"fp32",  32,  8, 23, 24,  127,  -126,  127, (1ULL << 24) - 1,  1, NK_IEEE, 0, 0x7fc00000ULL},
    {"tf32",  32,  8, 23, 11,  127,  -126,  127, (1ULL << 11) - 1,  1, NK_IEEE, 0, 0x7fc00000ULL},
    {"fp16",  16,  5, 10, 11,   15,   -14,   15, (1ULL << 11) - 1,  1, NK_IEEE, 0, 0x7e00ULL},
    {"bf16",  16,  8,  7,  8,  127,  -126,  127, (1ULL << 8) - 1,   1, NK_IEEE, 0, 0x7fc0ULL},
    {"e5m2",   8,  5,  2,  3,   15,   -14,   15, 7,                 1, NK_IEEE, 0, 0x7eULL},
    {"e4m3",   8,  4,  3,  4,    7,    -6,    8, 14,                0, NK_E4M3, 0, 0x7fULL},
    {"e3m2",   6,  3,  2,  3,    3,    -2,    4, 7,                 0, NK_NONE, 0, 0},
    {"e2m3",   6,  2,  3,  4,    1,     0,    2, 15,                0, NK_NONE, 0, 0},
    {"e2m1",   4,  2,  1,  2,    1,     0,    2, 3,                 0, NK_NONE, 0, 0},
    /* e8m0: p = 1, values 2^-127 .. 2^127, quantum 2^-127 below 2^-127 */
    {"e8m0",   8,  8,  0,  1,  127,  -127,  127, 1,                 0, NK_E8M0, 1, 0xffULL},
    {"e8m13", 32,  8, 23, 14,  127,  -126,  127, (1ULL << 14) - 1,  1, NK_IEEE, 0, 0x7fc00000ULL},
};

static const fmt_t *find_fmt(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        if (strcmp(FORMATS[i].name, name) == 0)
            return &FORMATS[i];
    return NULL;
}

enum { M_RNE, M_RNA, M_RZ, M_RU, M_RD };

static int find_mode(const char *name)
{
    static const char *const names[] = {"rne", "rna", "rz", "ru", "rd"};
    if (!name)
        return -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Exact values                                                        */
/* ------------------------------------------------------------------ */

enum { V_FIN, V_INF, V_NAN };

typedef struct oval {
    int kind;
    int neg;  /* sign: of a zero, of an inf; for a nonzero finite, q < 0 */
    mpq_t q;  /* the value when finite, else 0 */
} oval;

static void ov_init(oval *x) { mpq_init(x->q); x->kind = V_FIN; x->neg = 0; }
static void ov_clear(oval *x) { mpq_clear(x->q); }
static void ov_set(oval *d, const oval *s)
{
    if (d == s)
        return;
    d->kind = s->kind;
    d->neg = s->neg;
    mpq_set(d->q, s->q);
}
static void ov_zero(oval *x, int neg) { x->kind = V_FIN; x->neg = neg; mpq_set_ui(x->q, 0, 1); }
static void ov_nan(oval *x) { x->kind = V_NAN; x->neg = 0; mpq_set_ui(x->q, 0, 1); }
static void ov_inf(oval *x, int neg) { x->kind = V_INF; x->neg = neg; mpq_set_ui(x->q, 0, 1); }
/* finite value from a rational; a zero gets the sign zneg */
static void ov_fin(oval *x, const mpq_t v, int zneg)
{
    x->kind = V_FIN;
    mpq_set(x->q, v);
    x->neg = mpq_sgn(v) < 0 ? 1 : (mpq_sgn(v) > 0 ? 0 : zneg);
}
static int ov_is_zero(const oval *x) { return x->kind == V_FIN && mpq_sgn(x->q) == 0; }

/* r = 2^k exactly */
static void q_pow2(mpq_t r, long k)
{
    mpq_set_ui(r, 1, 1);
    if (k >= 0)
        mpq_mul_2exp(r, r, (mp_bitcnt_t)k);
    else
        mpq_div_2exp(r, r, (mp_bitcnt_t)(-k));
}

/* r = v * 2^k exactly (r may alias v) */
static void q_scale2(mpq_t r, const mpq_t v, long k)
{
    if (k >= 0)
        mpq_mul_2exp(r, v, (mp_bitcnt_t)k);
    else
        mpq_div_2exp(r, v, (mp_bitcnt_t)(-k));
}

/* floor(log2 |v|) for v != 0 */
static long q_floor_log2(const mpq_t v)
{
    mpq_t a, t;
    mpq_init(a);
    mpq_init(t);
    mpq_abs(a, v);
    long k = (long)mpz_sizeinbase(mpq_numref(a), 2) - (long)mpz_sizeinbase(mpq_denref(a), 2);
    /* |v| lies in (2^(k-1), 2^(k+1)): floor(log2|v|) is k or k-1 */
    q_pow2(t, k);
    if (mpq_cmp(a, t) < 0)
        k--;
    mpq_clear(a);
    mpq_clear(t);
    return k;
}

/* out = t rounded to an integer with mode (signed directions for ru/rd,
 * ties for rne to the even integer, for rna away from zero). */
static void q_round_int(int mode, const mpq_t t, mpz_t out)
{
    mpz_t fl;
    mpq_t rem, half;
    mpz_init(fl);
    mpq_init(rem);
    mpq_init(half);
    mpz_fdiv_q(fl, mpq_numref(t), mpq_denref(t)); /* floor */
    mpq_set_z(rem, fl);
    mpq_sub(rem, t, rem);                        /* rem in [0, 1) */
    int inexact = mpq_sgn(rem) != 0;
    int pos = mpq_sgn(t) > 0;
    mpq_set_ui(half, 1, 2);
    int c = mpq_cmp(rem, half);
    int up = 0; /* 1: take floor + 1 */
    switch (mode) {
    case M_RZ: up = inexact && !pos; break;      /* toward zero: ceil for negatives */
    case M_RU: up = inexact; break;
    case M_RD: up = 0; break;
    case M_RNE:
        if (c > 0)
            up = 1;
        else if (c == 0)
            up = mpz_odd_p(fl) ? 1 : 0;           /* the even one of fl, fl+1 */
        break;
    case M_RNA:
        if (c > 0)
            up = 1;
        else if (c == 0)
            up = pos ? 1 : 0;                     /* away from zero */
        break;
    }
    if (up)
        mpz_add_ui(fl, fl, 1);
    mpz_set(out, fl);
    mpz_clear(fl);
    mpq_clear(rem);
    mpq_clear(half);
}

static void fmt_max(const fmt_t *f, mpq_t r)
{
    mpz_t m;
    mpz_init(m);
    mpz_set_ui(m, 0);
    mpz_import(m, 1, 1, sizeof(uint64_t), 0, 0, &f->mmax);
    mpq_set_z(r, m);
    q_scale2(r, r, (long)f->emax - f->p + 1);
    mpz_clear(m);
}

/* Rounds x to format f (section 2, interpretations 2, 3).  Returns 0, or 1
 * when x is NaN and f has no NaN encoding. */
static int oround(const fmt_t *f, int mode, int sat, const oval *x, oval *r)
{
    if (x->kind == V_NAN) {
        /* NaN flows on as a NaN value even through formats without one; only
         * the final encoding of a NaN there is an error (interpretations 4). */
        ov_nan(r);
        return 0;
    }
    mpq_t mx;
    mpq_init(mx);
    fmt_max(f, mx);
    if (x->kind == V_INF) {
        int neg = x->neg;
        if (f->has_inf && !sat)
            ov_inf(r, neg);
        else if (sat || f->nan_kind == NK_NONE) { /* interpretations 3 */
            if (neg)
                mpq_neg(mx, mx);
            ov_fin(r, mx, neg);
        } else
            ov_nan(r);
    } else if (mpq_sgn(x->q) == 0) {
        ov_zero(r, x->neg);
    } else {
        int neg = mpq_sgn(x->q) < 0;
        long e = q_floor_log2(x->q);
        long qe = (e > f->emin ? e : f->emin) - f->p + 1;
        mpq_t t;
        mpz_t M;
        mpq_init(t);
        mpz_init(M);
        q_scale2(t, x->q, -qe);   /* signed x / 2^qe */
        q_round_int(mode, t, M);  /* signed integer multiple of the quantum */
        mpq_set_z(t, M);
        q_scale2(t, t, qe);       /* rounded value, unbounded exponent range */
        mpq_t a;
        mpq_init(a);
        mpq_abs(a, t);
        if (mpq_cmp(a, mx) > 0) { /* overflow */
            int to_max = sat || mode == M_RZ || (mode == M_RU && neg) || (mode == M_RD && !neg);
            if (to_max || (!f->has_inf && f->nan_kind == NK_NONE)) {
                if (neg)
                    mpq_neg(mx, mx);
                ov_fin(r, mx, neg);
            } else if (f->has_inf)
                ov_inf(r, neg);
            else
                ov_nan(r);
        } else {
            ov_fin(r, t, neg); /* a nonzero value that rounds to zero keeps its sign */
        }
        mpq_clear(a);
        mpq_clear(t);
        mpz_clear(M);
    }
    mpq_clear(mx);
    /* e8m0 has no zero and no negatives: those results are NaN */
    if (f->is_unsigned && r->kind == V_FIN && (mpq_sgn(r->q) == 0 || r->neg))
        ov_nan(r);
    return 0;
}

/* Exact sum with the zero-sign rules of section 2. r may alias x or y. */
static void oadd(int mode, const oval *x, const oval *y, oval *r)
{
    if (x->kind == V_NAN || y->kind == V_NAN) {
        ov_nan(r);
        return;
    }
    if (x->kind == V_INF && y->kind == V_INF) {
        if (x->neg == y->neg)
            ov_inf(r, x->neg);
        else
            ov_nan(r);
        return;
    }
    if (x->kind == V_INF) {
        ov_inf(r, x->neg);
        return;
    }
    if (y->kind == V_INF) {
        ov_inf(r, y->neg);
        return;
    }
    int zneg;
    if (ov_is_zero(x) && ov_is_zero(y) && x->neg == y->neg)
        zneg = x->neg;          /* (+0)+(+0) = +0, (-0)+(-0) = -0 */
    else
        zneg = mode == M_RD;    /* any other exact zero: +0, -0 in rd */
    mpq_t s;
    mpq_init(s);
    mpq_add(s, x->q, y->q);
    ov_fin(r, s, zneg);
    mpq_clear(s);
}

/* Exact product; a zero product's sign is sign(x) xor sign(y). */
static void omul(const oval *x, const oval *y, oval *r)
{
    if (x->kind == V_NAN || y->kind == V_NAN) {
        ov_nan(r);
        return;
    }
    int neg = x->neg ^ y->neg;
    if (x->kind == V_INF || y->kind == V_INF) {
        if (ov_is_zero(x) || ov_is_zero(y))
            ov_nan(r);          /* 0 * inf */
        else
            ov_inf(r, neg);
        return;
    }
    mpq_t p;
    mpq_init(p);
    mpq_mul(p, x->q, y->q);
    ov_fin(r, p, neg);
    mpq_clear(p);
}

/* ------------------------------------------------------------------ */
/* Encoding and decoding                                               */
/* ------------------------------------------------------------------ */

static uint64_t z_to_u64(const mpz_t z)
{
    uint64_t v = 0;
    size_t cnt = 0;
    if (mpz_sgn(z) == 0 || mpz_sizeinbase(z, 2) > 64)
        return 0; /* callers flag such values as not encodable */
    mpz_export(&v, &cnt, -1, sizeof v, 0, 0, z);
    return v;
}

/* Bits of a value already representable in f.  Returns nonzero when it is
 * not (a NaN in a format without NaN, or an internal inconsistency). */
static int oencode(const fmt_t *f, const oval *x, uint64_t *bits)
{
    uint64_t sign = f->is_unsigned ? 0 : (1ULL << (f->width - 1));
    uint64_t emask = (1ULL << f->ebits) - 1;
    if (x->kind == V_NAN) {
        if (f->nan_kind == NK_NONE)
            return 1;
        *bits = f->qnan;
        return 0;
    }
    if (x->kind == V_INF) {
        if (!f->has_inf)
            return 2;
        *bits = (x->neg ? sign : 0) | (emask << f->mbits);
        return 0;
    }
    if (mpq_sgn(x->q) == 0) {
        if (f->is_unsigned)
            return 2;
        *bits = x->neg ? sign : 0;
        return 0;
    }
    int neg = mpq_sgn(x->q) < 0;
    if (neg && f->is_unsigned)
        return 2;
    mpq_t a;
    mpq_init(a);
    mpq_abs(a, x->q);
    long e = q_floor_log2(a);
    int rc = 0;
    if (f->nan_kind == NK_E8M0) {
        mpq_t t;
        mpq_init(t);
        q_pow2(t, e);
        if (mpq_equal(t, a) == 0 || e < -127 || e > 127)
            rc = 3;
        else
            *bits = (uint64_t)(e + 127);
        mpq_clear(t);
        mpq_clear(a);
        return rc;
    }
    uint64_t code, mant;
    if (e >= f->emin) {
        code = (uint64_t)(e + f->bias);
        q_scale2(a, a, (long)f->mbits - e);         /* 2^mbits + mantissa */
        if (mpz_cmp_ui(mpq_denref(a), 1) != 0)
            rc = 3;
        mant = z_to_u64(mpq_numref(a)) - (1ULL << f->mbits);
    } else {
        code = 0;
        q_scale2(a, a, (long)f->mbits - f->emin);   /* subnormal mantissa */
        if (mpz_cmp_ui(mpq_denref(a), 1) != 0)
            rc = 3;
        mant = z_to_u64(mpq_numref(a));
    }
    if (code >= (1ULL << f->ebits) || mant >= (1ULL << f->mbits))
        rc = 3;
    if ((mant & ((1ULL << (f->mbits - (f->p - 1))) - 1)) != 0)
        rc = 3;
    mpq_clear(a);
    if (rc == 0)
        *bits = (neg ? sign : 0) | (code << f->mbits) | mant;
    return rc;
}

/* Returns 0 finite, 1 +inf, -1 -inf, 2 NaN, 3 not a pattern of f */
static int odecode(const fmt_t *f, uint64_t bits, oval *x)
{
    if (f->width < 64 && bits >> f->width)
        return 3;
    if (f->nan_kind == NK_E8M0) {
        if (bits == 0xff) {
            ov_nan(x);
            return 2;
        }
        mpq_t t;
        mpq_init(t);
        q_pow2(t, (long)bits - 127);
        ov_fin(x, t, 0);
        mpq_clear(t);
        return 0;
    }
    uint64_t emask = (1ULL << f->ebits) - 1;
    uint64_t mmask = (1ULL << f->mbits) - 1;
    int neg = (int)((bits >> (f->width - 1)) & 1);
    uint64_t code = (bits >> f->mbits) & emask;
    uint64_t mant = bits & mmask;
    if (f->nan_kind == NK_IEEE && code == emask) {
        if (mant == 0) {
            ov_inf(x, neg);
            return neg ? -1 : 1;
        }
        ov_nan(x);
        return 2;
    }
    if (f->nan_kind == NK_E4M3 && code == emask && mant == mmask) {
        ov_nan(x);
        return 2;
    }
    if ((mant & ((1ULL << (f->mbits - (f->p - 1))) - 1)) != 0)
        return 3; /* tf32 / e8m13 with nonzero low bits */
    mpz_t m;
    mpq_t t;
    mpz_init(m);
    mpq_init(t);
    mpz_import(m, 1, 1, sizeof mant, 0, 0, &mant);
    if (code == 0) {
        mpq_set_z(t, m);
        q_scale2(t, t, (long)f->emin - f->mbits);
    } else {
        mpz_setbit(m, (mp_bitcnt_t)f->mbits);
        mpq_set_z(t, m);
        q_scale2(t, t, (long)code - f->bias - f->mbits);
    }
    if (neg)
        mpq_neg(t, t);
    ov_fin(x, t, neg);
    mpz_clear(m);
    mpq_clear(t);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Tree language (section 4; third edition, docs/numerics.md §4.2)    */
/* ------------------------------------------------------------------ */

enum {
    T_SEQ, T_PAIRWISE, T_HALVING, T_ATOMIC, T_CHAIN, T_REVERSE, T_SPLIT, T_TILE, T_STRIDE,
    T_BODY,     /* body(L, T, U[, C | carry]) */
    T_TILELIST, /* tile([b0, ...], T, C) */
    T_ORDER,    /* order([p0, ...], T) */
    T_EXPR,     /* expr(B) */
    T_LANES,    /* lanes(W, [stage, ...], C) */
    T_HEAD      /* head(L, U, T[, C | carry]) (eighth edition) */
};

/* a bracketing of expr(B): a leaf index, or (l + r) */
typedef struct enode {
    long idx;              /* -1 for a '+' node */
    struct enode *l, *r;
} enode;

/* a stage of lanes(W, [...], C): loop(B), loop(B, U), peel(B, M),
 * fold(V, [brk, ...]), rest(L) (the sixth edition's U and rest) */
enum { LS_LOOP, LS_PEEL, LS_FOLD, LS_REST };

typedef struct lstage {
    int kind;
    long b;            /* loop, peel: the block width B; fold: the register width V; rest: the lane L */
    long m;            /* peel: the modulus M; loop: the terms a round takes U (B when not given) */
    enode **brk;       /* fold: one bracketing over registers per new register */
    size_t nbrk;
} lstage;

typedef struct tnode {
    int kind;
    long n;            /* chain N, split S, tile P, stride L, body L, head L */
    long opt;          /* split align A, stride block V (default 1); tile halve A (0 = none) */
    struct tnode *t;   /* inner tree (reverse, split, tile, stride, body's T, order); head's T */
    struct tnode *u;   /* body's U (the tail); head's U (the head) */
    struct tnode *c;   /* combinator (split, tile, stride, body; NULL in a body: seq) */
    int carry;         /* body(..., carry); tile(..., T, carry) */
    long *list;        /* tile sizes, order permutation */
    size_t nlist;
    enode *e;          /* expr's bracketing */
    size_t k;          /* expr's number of indices */
    lstage *stages;    /* lanes' stages (n is W) */
    size_t nstages;
    /* subtree settings, X@FMT and X[k=v, ...]; each NULL / -1 = inherit */
    const fmt_t *fmt;  /* acc */
    int fma;           /* -1, 0, 1 */
    int set_prod;      /* 1: product given (prod NULL = exact) */
    const fmt_t *prod;
    int mode;          /* -1 or M_* */
    const fmt_t *store; /* [store=FMT] (seventh edition): this node's result rounded to it; NULL: none */
} tnode;

static void efree(enode *e)
{
    if (!e)
        return;
    efree(e->l);
    efree(e->r);
    free(e);
}

static void tfree(tnode *t)
{
    if (!t)
        return;
    tfree(t->t);
    tfree(t->u);
    tfree(t->c);
    efree(t->e);
    free(t->list);
    for (size_t i = 0; i < t->nstages; i++) {
        for (size_t j = 0; j < t->stages[i].nbrk; j++)
            efree(t->stages[i].brk[j]);
        free(t->stages[i].brk);
    }
    free(t->stages);
    free(t);
}

typedef struct parser {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void perr(parser *P, const char *fmt, ...)
{
    if (P->failed)
        return;
    P->failed = 1;
    if (P->err && P->errlen) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(P->err, P->errlen, "tree \"%s\": %s at offset %zu", P->s, msg, P->pos);
    }
}

static void skip_ws(parser *P)
{
    while (P->s[P->pos] == ' ' || P->s[P->pos] == '\t' || P->s[P->pos] == '\n' || P->s[P->pos] == '\r')
        P->pos++;
}

static int is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* reads an identifier into buf; returns 0 on failure */
static int read_ident(parser *P, char *buf, size_t len)
{
    skip_ws(P);
    size_t i = 0;
    while (is_ident_char(P->s[P->pos])) {
        if (i + 1 >= len) {
            perr(P, "name too long");
            return 0;
        }
        buf[i++] = P->s[P->pos++];
    }
    buf[i] = 0;
    if (i == 0) {
        perr(P, "expected a name");
        return 0;
    }
    return 1;
}

static int expect(parser *P, char c)
{
    skip_ws(P);
    if (P->s[P->pos] != c) {
        perr(P, "expected '%c'", c);
        return 0;
    }
    P->pos++;
    return 1;
}

/* a decimal integer >= lo (lo is 1 for sizes, 0 for indices), < 2^31 */
static int read_int_min(parser *P, long *v, long lo)
{
    skip_ws(P);
    long x = 0;
    size_t start = P->pos;
    while (P->s[P->pos] >= '0' && P->s[P->pos] <= '9') {
        x = x * 10 + (P->s[P->pos] - '0');
        if (x > 2147483647L) {
            perr(P, "integer too large");
            return 0;
        }
        P->pos++;
    }
    if (P->pos == start) {
        perr(P, "expected an integer");
        return 0;
    }
    if (x < lo) {
        P->pos = start;
        perr(P, "integer must be at least %ld", lo);
        return 0;
    }
    *v = x;
    return 1;
}

/* a positive decimal integer (>= 1, < 2^31) */
static int read_int(parser *P, long *v)
{
    return read_int_min(P, v, 1);
}

/* '[' INT { ',' INT } ']' into a new array; every element >= lo */
static int read_list(parser *P, long lo, long **list, size_t *len)
{
    size_t cap = 4, m = 0;
    long *v = malloc(cap * sizeof *v);
    if (!v) {
        perr(P, "out of memory");
        return 0;
    }
    if (!expect(P, '['))
        goto fail;
    for (;;) {
        if (m == cap) {
            long *w = realloc(v, 2 * cap * sizeof *v);
            if (!w) {
                perr(P, "out of memory");
                goto fail;
            }
            v = w;
            cap *= 2;
        }
        if (!read_int_min(P, &v[m], lo))
            goto fail;
        m++;
        skip_ws(P);
        if (P->s[P->pos] == ',') {
            P->pos++;
            continue;
        }
        if (!expect(P, ']'))
            goto fail;
        break;
    }
    *list = v;
    *len = m;
    return 1;
fail:
    free(v);
    return 0;
}

/* 1 when the next token is the identifier `word` (not a prefix of a longer
 * name); does not consume it */
static int peek_word(parser *P, const char *word)
{
    skip_ws(P);
    size_t l = strlen(word);
    return strncmp(P->s + P->pos, word, l) == 0 && !is_ident_char(P->s[P->pos + l]);
}

static tnode *parse_tree(parser *P, int depth);

/* ',' KEY '=' INT, when the next token is ',' and key != NULL; 1 if absent */
static int parse_keyed_int(parser *P, const char *key, long *v)
{
    skip_ws(P);
    if (!key || P->s[P->pos] != ',')
        return 1;
    P->pos++;
    char name[32];
    size_t at = P->pos;
    if (!read_ident(P, name, sizeof name))
        return 0;
    if (strcmp(name, key) != 0) {
        P->pos = at;
        perr(P, "expected '%s='", key);
        return 0;
    }
    return expect(P, '=') && read_int(P, v);
}

/* '(' INT ',' tree ',' tree [ ',' KEY '=' INT ] ')'; key NULL: no option */
static int parse_three(parser *P, tnode *n, const char *key, int depth)
{
    if (!expect(P, '(') || !read_int(P, &n->n) || !expect(P, ','))
        return 0;
    if (!(n->t = parse_tree(P, depth + 1)) || !expect(P, ','))
        return 0;
    if (!(n->c = parse_tree(P, depth + 1)))
        return 0;
    return parse_keyed_int(P, key, &n->opt) && expect(P, ')');
}

/* tile '(' ( INT | '[' INT {',' INT} ']' ) ',' tree ',' tree [ ',' 'halve=' INT ] ')'.
 * halve= goes with a single size only (docs/numerics.md §4 grammar). */
static int parse_tile(parser *P, tnode *n, int depth)
{
    if (!expect(P, '('))
        return 0;
    skip_ws(P);
    if (P->s[P->pos] == '[') {
        n->kind = T_TILELIST;
        if (!read_list(P, 1, &n->list, &n->nlist))
            return 0;
    } else if (!read_int(P, &n->n))
        return 0;
    if (!expect(P, ',') || !(n->t = parse_tree(P, depth + 1)) || !expect(P, ','))
        return 0;
    if (peek_word(P, "carry")) { /* fifth edition: each tile from the running value */
        P->pos += strlen("carry");
        n->carry = 1;
    } else if (!(n->c = parse_tree(P, depth + 1)))
        return 0;
    n->opt = 0;
    skip_ws(P);
    if (P->s[P->pos] == ',') {
        if (n->kind == T_TILELIST) {
            perr(P, "a tile list takes no further argument");
            return 0;
        }
        if (!parse_keyed_int(P, "halve", &n->opt))
            return 0;
    }
    return expect(P, ')');
}

/* body '(' L ',' T ',' U [',' (C | 'carry')] ')' and head '(' L ',' U ','
 * T [...] ')': the two trees into *first and *second as written (a head's
 * U, the head, is written first, as it reduces the first terms) */
static int parse_two(parser *P, tnode *n, int depth, tnode **first, tnode **second)
{
    if (!expect(P, '(') || !read_int(P, &n->n) || !expect(P, ','))
        return 0;
    if (!(*first = parse_tree(P, depth + 1)) || !expect(P, ','))
        return 0;
    if (!(*second = parse_tree(P, depth + 1)))
        return 0;
    skip_ws(P);
    if (P->s[P->pos] == ',') {
        P->pos++;
        if (peek_word(P, "carry")) {
            P->pos += strlen("carry");
            n->carry = 1;
        } else if (!(n->c = parse_tree(P, depth + 1)))
            return 0;
    }
    return expect(P, ')');
}

/* order '(' '[' IDX {',' IDX} ']' ',' tree ')'; the list a permutation of 0..k-1 */
static int parse_order(parser *P, tnode *n, int depth)
{
    if (!expect(P, '('))
        return 0;
    size_t at = P->pos;
    if (!read_list(P, 0, &n->list, &n->nlist))
        return 0;
    char *seen = calloc(n->nlist, 1);
    if (!seen) {
        perr(P, "out of memory");
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < n->nlist && ok; i++) {
        long v = n->list[i];
        if (v >= (long)n->nlist || seen[v]) {
            P->pos = at;
            perr(P, "order list is not a permutation of 0 ... %zu", n->nlist - 1);
            ok = 0;
        } else
            seen[v] = 1;
    }
    free(seen);
    return ok && expect(P, ',') && (n->t = parse_tree(P, depth + 1)) != NULL && expect(P, ')');
}

/* brk := IDX | '(' brk '+' brk ')'; *count gets the number of leaves */
static enode *parse_brk(parser *P, int depth, size_t *count)
{
    if (depth > 256) {
        perr(P, "expr nested too deeply");
        return NULL;
    }
    enode *e = calloc(1, sizeof *e);
    if (!e) {
        perr(P, "out of memory");
        return NULL;
    }
    skip_ws(P);
    if (P->s[P->pos] == '(') {
        P->pos++;
        e->idx = -1;
        if (!(e->l = parse_brk(P, depth + 1, count)) || !expect(P, '+') ||
            !(e->r = parse_brk(P, depth + 1, count)) || !expect(P, ')')) {
            efree(e);
            return NULL;
        }
        return e;
    }
    if (!read_int_min(P, &e->idx, 0)) {
        efree(e);
        return NULL;
    }
    (*count)++;
    return e;
}

static void brk_mark(const enode *e, char *seen, size_t k, int *ok)
{
    if (e->idx < 0) {
        brk_mark(e->l, seen, k, ok);
        brk_mark(e->r, seen, k, ok);
    } else if ((size_t)e->idx >= k || seen[e->idx])
        *ok = 0;
    else
        seen[e->idx] = 1;
}

/* expr '(' brk ')'; the indices are 0 ... k-1, each once */
static int parse_expr(parser *P, tnode *n, int depth)
{
    if (!expect(P, '('))
        return 0;
    size_t at = P->pos;
    if (!(n->e = parse_brk(P, depth + 1, &n->k)))
        return 0;
    char *seen = calloc(n->k, 1);
    if (!seen) {
        perr(P, "out of memory");
        return 0;
    }
    int ok = 1;
    brk_mark(n->e, seen, n->k, &ok);
    free(seen);
    if (!ok) {
        P->pos = at;
        perr(P, "expr indices are not 0 ... %zu, each once", n->k - 1);
        return 0;
    }
    return expect(P, ')');
}

/* fold '(' INT ',' '[' brk { ',' brk } ']' ')' over the w live lanes: V
 * divides w; the brackets use each register 0 ... w/V - 1 exactly once.
 * The new live width (k brackets of V lanes) goes to *w. */
static int parse_fold(parser *P, lstage *st, long *w, int depth)
{
    if (!expect(P, '('))
        return 0;
    size_t at = P->pos;
    if (!read_int(P, &st->b))
        return 0;
    if (*w % st->b != 0) {
        P->pos = at;
        perr(P, "fold(%ld, ...): V does not divide the %ld live lanes", st->b, *w);
        return 0;
    }
    size_t R = (size_t)(*w / st->b), cap = 0;
    if (!expect(P, ',') || !expect(P, '['))
        return 0;
    skip_ws(P);
    at = P->pos;
    for (;;) {
        if (st->nbrk == cap) {
            size_t nc = cap ? 2 * cap : 4;
            enode **nb = realloc(st->brk, nc * sizeof *nb);
            if (!nb) {
                perr(P, "out of memory");
                return 0;
            }
            st->brk = nb;
            cap = nc;
        }
        size_t leaves = 0;
        if (!(st->brk[st->nbrk] = parse_brk(P, depth + 1, &leaves)))
            return 0;
        st->nbrk++;
        skip_ws(P);
        if (P->s[P->pos] == ',') {
            P->pos++;
            continue;
        }
        if (!expect(P, ']'))
            return 0;
        break;
    }
    char *seen = calloc(R, 1);
    if (!seen) {
        perr(P, "out of memory");
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < st->nbrk; i++)
        brk_mark(st->brk[i], seen, R, &ok);
    for (size_t q = 0; q < R && ok; q++)
        ok = seen[q];
    free(seen);
    if (!ok) {
        P->pos = at;
        perr(P, "fold brackets do not use each of the registers 0 ... %zu exactly once", R - 1);
        return 0;
    }
    *w = (long)st->nbrk * st->b;
    return expect(P, ')');
}

/* Whether a stage before the one being read (the last of n's) is rest. */
static int k_rest_seen(const tnode *n)
{
    for (size_t k = 0; k + 1 < n->nstages; k++)
        if (n->stages[k].kind == LS_REST)
            return 1;
    return 0;
}

/* lanes '(' INT ',' '[' stage { ',' stage } ']' ',' tree ')' (docs/numerics.md
 * §4.2).  The live width is known stage by stage: it starts at W, a fold
 * makes it k·V; a loop or peel wider than it is malformed. */
static int parse_lanes(parser *P, tnode *n, int depth)
{
    if (!expect(P, '(') || !read_int(P, &n->n) || !expect(P, ',') || !expect(P, '['))
        return 0;
    long w = n->n;
    size_t cap = 0;
    for (;;) {
        if (n->nstages == cap) {
            size_t nc = cap ? 2 * cap : 4;
            lstage *ns = realloc(n->stages, nc * sizeof *ns);
            if (!ns) {
                perr(P, "out of memory");
                return 0;
            }
            n->stages = ns;
            cap = nc;
        }
        lstage *st = &n->stages[n->nstages];
        memset(st, 0, sizeof *st);
        n->nstages++;
        char name[32];
        skip_ws(P);
        size_t at = P->pos;
        if (!read_ident(P, name, sizeof name))
            return 0;
        if (k_rest_seen(n)) {
            P->pos = at;
            perr(P, "rest(...) must be the last stage of lanes");
            return 0;
        }
        if (!strcmp(name, "loop") || !strcmp(name, "peel")) {
            st->kind = name[0] == 'l' ? LS_LOOP : LS_PEEL;
            if (!expect(P, '('))
                return 0;
            size_t bat = P->pos;
            if (!read_int(P, &st->b))
                return 0;
            if (st->b > w) {
                P->pos = bat;
                perr(P, "%s(%ld) is wider than the %ld live lanes", name, st->b, w);
                return 0;
            }
            if (st->kind == LS_PEEL && (!expect(P, ',') || !read_int(P, &st->m)))
                return 0;
            if (st->kind == LS_LOOP) {
                /* loop(B, U): U a multiple of B, at least B */
                st->m = st->b;
                skip_ws(P);
                if (P->s[P->pos] == ',') {
                    P->pos++;
                    size_t uat = P->pos;
                    if (!read_int(P, &st->m))
                        return 0;
                    if (st->m < st->b || st->m % st->b != 0) {
                        P->pos = uat;
                        perr(P, "loop(%ld, %ld): U is not a multiple of B", st->b, st->m);
                        return 0;
                    }
                }
            }
            if (!expect(P, ')'))
                return 0;
        } else if (!strcmp(name, "rest")) {
            /* rest(L): L a lane index live here */
            st->kind = LS_REST;
            if (!expect(P, '('))
                return 0;
            skip_ws(P);
            size_t lat = P->pos;
            long L = 0;
            if (!isdigit((unsigned char)P->s[P->pos])) {
                perr(P, "rest needs a lane index");
                return 0;
            }
            while (isdigit((unsigned char)P->s[P->pos]) && L <= w)
                L = L * 10 + (P->s[P->pos++] - '0');
            if (L >= w) {
                P->pos = lat;
                perr(P, "rest(%ld): only lanes 0 ... %ld are live", L, w - 1);
                return 0;
            }
            st->b = L;
            if (!expect(P, ')'))
                return 0;
        } else if (!strcmp(name, "fold")) {
            st->kind = LS_FOLD;
            if (!parse_fold(P, st, &w, depth))
                return 0;
        } else {
            P->pos = at;
            perr(P, "unknown lanes stage '%s' (loop, peel, fold or rest)", name);
            return 0;
        }
        skip_ws(P);
        if (P->s[P->pos] == ',') {
            P->pos++;
            continue;
        }
        if (!expect(P, ']'))
            return 0;
        break;
    }
    return expect(P, ',') && (n->c = parse_tree(P, depth + 1)) != NULL && expect(P, ')');
}

/* '[' opt { ',' opt } ']': subtree settings (docs/numerics.md §4.2).  A setting given
 * twice, acc given also through '@', or an unknown one is malformed. */
static int parse_settings(parser *P, tnode *n, int acc_by_at)
{
    if (!expect(P, '['))
        return 0;
    int have_acc = acc_by_at, have_fma = 0, have_prod = 0, have_mode = 0, have_store = 0;
    for (;;) {
        char key[32], val[32];
        size_t at;
        skip_ws(P);
        at = P->pos;
        if (!read_ident(P, key, sizeof key))
            return 0;
        int *have = !strcmp(key, "acc") ? &have_acc : !strcmp(key, "fma") ? &have_fma
                  : !strcmp(key, "product") ? &have_prod : !strcmp(key, "rounding") ? &have_mode
                  : !strcmp(key, "store") ? &have_store : NULL;
        if (!have) {
            P->pos = at;
            perr(P, "unknown setting '%s'", key);
            return 0;
        }
        if (*have) {
            P->pos = at;
            perr(P, "setting '%s' given twice", key);
            return 0;
        }
        *have = 1;
        if (!expect(P, '='))
            return 0;
        skip_ws(P);
        at = P->pos;
        if (!read_ident(P, val, sizeof val))
            return 0;
        if (have == &have_acc) {
            if (!(n->fmt = find_fmt(val))) {
                P->pos = at;
                perr(P, "unknown format '%s'", val);
                return 0;
            }
        } else if (have == &have_fma) {
            if (!strcmp(val, "true"))
                n->fma = 1;
            else if (!strcmp(val, "false"))
                n->fma = 0;
            else {
                P->pos = at;
                perr(P, "fma must be true or false, not '%s'", val);
                return 0;
            }
        } else if (have == &have_store) {
            if (!(n->store = find_fmt(val))) {
                P->pos = at;
                perr(P, "store: not a format: '%s'", val);
                return 0;
            }
        } else if (have == &have_prod) {
            n->set_prod = 1;
            if (strcmp(val, "exact") != 0 && !(n->prod = find_fmt(val))) {
                P->pos = at;
                perr(P, "unknown product format '%s'", val);
                return 0;
            }
        } else {
            if ((n->mode = find_mode(val)) < 0) {
                P->pos = at;
                perr(P, "unknown rounding mode '%s'", val);
                return 0;
            }
        }
        skip_ws(P);
        if (P->s[P->pos] == ',') {
            P->pos++;
            continue;
        }
        return expect(P, ']');
    }
}

static tnode *parse_tree(parser *P, int depth)
{
    if (depth > 200) {
        perr(P, "tree nested too deeply");
        return NULL;
    }
    char name[32];
    skip_ws(P);
    size_t at = P->pos;
    if (!read_ident(P, name, sizeof name))
        return NULL;
    tnode *n = calloc(1, sizeof *n);
    if (!n) {
        perr(P, "out of memory");
        return NULL;
    }
    n->opt = 1;
    n->fma = -1;
    n->mode = -1;
    int ok = 1;
    if (strcmp(name, "seq") == 0)
        n->kind = T_SEQ;
    else if (strcmp(name, "pairwise") == 0)
        n->kind = T_PAIRWISE;
    else if (strcmp(name, "halving") == 0)
        n->kind = T_HALVING;
    else if (strcmp(name, "atomic") == 0)
        n->kind = T_ATOMIC;
    else if (strcmp(name, "chain") == 0) {
        n->kind = T_CHAIN;
        ok = expect(P, '(') && read_int(P, &n->n) && expect(P, ')');
    } else if (strcmp(name, "reverse") == 0) {
        n->kind = T_REVERSE;
        ok = expect(P, '(') && (n->t = parse_tree(P, depth + 1)) != NULL && expect(P, ')');
    } else if (strcmp(name, "split") == 0) {
        n->kind = T_SPLIT;
        ok = parse_three(P, n, "align", depth);
    } else if (strcmp(name, "tile") == 0) {
        n->kind = T_TILE;
        ok = parse_tile(P, n, depth);
    } else if (strcmp(name, "stride") == 0) {
        n->kind = T_STRIDE;
        ok = parse_three(P, n, "block", depth);
    } else if (strcmp(name, "body") == 0) {
        n->kind = T_BODY;
        ok = parse_two(P, n, depth, &n->t, &n->u);
    } else if (strcmp(name, "head") == 0) {
        n->kind = T_HEAD;
        ok = parse_two(P, n, depth, &n->u, &n->t);
    } else if (strcmp(name, "order") == 0) {
        n->kind = T_ORDER;
        ok = parse_order(P, n, depth);
    } else if (strcmp(name, "expr") == 0) {
        n->kind = T_EXPR;
        ok = parse_expr(P, n, depth);
    } else if (strcmp(name, "lanes") == 0) {
        n->kind = T_LANES;
        ok = parse_lanes(P, n, depth);
    } else if (strcmp(name, "carry") == 0) {
        P->pos = at;
        perr(P, "'carry' is allowed only as the last argument of body or head");
        ok = 0;
    } else {
        P->pos = at;
        perr(P, "unknown tree '%s'", name);
        ok = 0;
    }
    if (ok) {
        skip_ws(P);
        if (P->s[P->pos] == '@') {
            P->pos++;
            char fname[32];
            skip_ws(P);
            size_t fat = P->pos;
            ok = read_ident(P, fname, sizeof fname);
            if (ok && !(n->fmt = find_fmt(fname))) {
                P->pos = fat;
                perr(P, "unknown format '%s'", fname);
                ok = 0;
            }
        }
    }
    if (ok) {
        skip_ws(P);
        if (P->s[P->pos] == '[')
            ok = parse_settings(P, n, n->fmt != NULL);
    }
    if (!ok) {
        tfree(n);
        return NULL;
    }
    return n;
}

static tnode *parse_text(const char *s, char *err, size_t errlen)
{
    parser P = {s, 0, err, errlen, 0};
    tnode *t = parse_tree(&P, 0);
    if (t) {
        skip_ws(&P);
        if (P.s[P.pos] != 0) {
            perr(&P, "unexpected text after the tree");
            tfree(t);
            t = NULL;
        }
    }
    return t;
}

/* ------------------------------------------------------------------ */
/* Tree language (section 4) and atom (section 5): evaluation          */
/* ------------------------------------------------------------------ */

typedef struct term {
    int is_prod;
    oval a, b;   /* a product a*b, or the value a */
} term;

/* Point-wide settings and the atom. */
typedef struct ctx {
    int has_atom;
    int frac_bits;         /* -1: none */
    int term_round;
    int atom_round;        /* -1: the current mode R */
    const fmt_t *atom_acc; /* NULL: the current format */
    int align_values;      /* 1: every addend aligns by its value (first edition) */
    const fmt_t *opa, *opb; /* the formats a product's operands are members of */
    char *err;
    size_t errlen;
} ctx;

/* The settings in force at a node (docs/numerics.md §4.2 `X[k=v, ...]`): the current
 * format F, the mode R, fma and product.  The point gives them at the root;
 * X@FMT and X[...] change them for everything inside X. */
typedef struct cur {
    const fmt_t *F;
    int mode;
    int fma;
    const fmt_t *prod;     /* NULL: products exact */
} cur;

static int cerr(ctx *C, const char *fmt, ...)
{
    if (C->err && C->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(C->err, C->errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static int round_or_err(ctx *C, const fmt_t *f, int mode, const oval *x, oval *r, const char *what)
{
    if (oround(f, mode, 0, x, r))
        return cerr(C, "NaN %s has no encoding in format %s", what, f->name);
    return 0;
}

/* value(t): a value as it is; a product rounded to `product`, else to F */
static int tvalue(ctx *C, const cur *S, const term *t, oval *v)
{
    if (!t->is_prod) {
        ov_set(v, &t->a);
        return 0;
    }
    oval p;
    ov_init(&p);
    omul(&t->a, &t->b, &p);
    int rc = round_or_err(C, S->prod ? S->prod : S->F, S->mode, &p, v, "product");
    ov_clear(&p);
    return rc;
}

/* leaf(t) = round(value(t)) */
static int leaf(ctx *C, const cur *S, const term *t, oval *r)
{
    oval v;
    ov_init(&v);
    int rc = tvalue(C, S, t, &v);
    if (!rc)
        rc = round_or_err(C, S->F, S->mode, &v, r, "leaf");
    ov_clear(&v);
    return rc;
}

/* r = round(x + y) in F, mode R */
static int radd(ctx *C, const cur *S, const oval *x, const oval *y, oval *r)
{
    oval s;
    ov_init(&s);
    oadd(S->mode, x, y, &s);
    int rc = round_or_err(C, S->F, S->mode, &s, r, "sum");
    ov_clear(&s);
    return rc;
}

/* step(s, t); r may alias s */
static int step(ctx *C, const cur *S, const oval *s, const term *t, oval *r)
{
    oval v, sum;
    ov_init(&v);
    ov_init(&sum);
    int rc = 0;
    if (S->fma && !S->prod && t->is_prod) {
        omul(&t->a, &t->b, &v);            /* exact product, one rounding */
        oadd(S->mode, &v, s, &sum);
        rc = round_or_err(C, S->F, S->mode, &sum, r, "fma");
    } else {
        rc = tvalue(C, S, t, &v);
        if (!rc)
            rc = radd(C, S, s, &v, r);
    }
    ov_clear(&v);
    ov_clear(&sum);
    return rc;
}

/* atom(s, group) of section 5, result in the atom's acc (default F), with
 * the atom's round (default the current mode R) */
static int atom(ctx *C, const cur *S, const oval *s, const term *const *g, size_t m, oval *r)
{
    const fmt_t *acc = C->atom_acc ? C->atom_acc : S->F;
    int round_mode = C->atom_round >= 0 ? C->atom_round : S->mode;
    size_t na = m + 1;
    oval *ad = malloc(na * sizeof *ad);
    if (!ad)
        return cerr(C, "out of memory");
    for (size_t i = 0; i < na; i++)
        ov_init(&ad[i]);
    ov_set(&ad[0], s);
    for (size_t i = 0; i < m; i++) {
        if (g[i]->is_prod)
            omul(&g[i]->a, &g[i]->b, &ad[i + 1]); /* exact, whatever `product` says */
        else
            ov_set(&ad[i + 1], &g[i]->a);
    }
    int any_nan = 0, pinf = 0, ninf = 0, all_negzero = 1, any_nonzero = 0;
    for (size_t i = 0; i < na; i++) {
        if (ad[i].kind == V_NAN)
            any_nan = 1;
        else if (ad[i].kind == V_INF) {
            if (ad[i].neg)
                ninf = 1;
            else
                pinf = 1;
        }
        else if (mpq_sgn(ad[i].q) != 0)
            any_nonzero = 1;
        if (!(ov_is_zero(&ad[i]) && ad[i].neg))
            all_negzero = 0;
    }
    int rc = 0;
    oval sum;
    ov_init(&sum);
    if (any_nan || (pinf && ninf)) {
        ov_nan(&sum);
    } else if (pinf || ninf) {
        ov_inf(&sum, ninf);
    } else if (!any_nonzero) {
        ov_zero(&sum, all_negzero);
    } else {
        long E = 0;
        int have = 0;
        for (size_t i = 0; i < na; i++) {
            if (mpq_sgn(ad[i].q) == 0)
                continue;
            long e = q_floor_log2(ad[i].q);
            if (i > 0 && g[i - 1]->is_prod && !C->align_values) {
                /* section 5 step 2: e_a + e_b, a subnormal operand at emin */
                long ea = q_floor_log2(g[i - 1]->a.q), eb = q_floor_log2(g[i - 1]->b.q);
                if (ea < C->opa->emin)
                    ea = C->opa->emin;
                if (eb < C->opb->emin)
                    eb = C->opb->emin;
                e = ea + eb;
            }
            if (!have || e > E)
                E = e;
            have = 1;
        }
        mpq_t acc_q, t;
        mpz_t z;
        mpq_init(acc_q);
        mpq_init(t);
        mpz_init(z);
        for (size_t i = 0; i < na; i++) {
            if (C->frac_bits >= 0) {
                long qe = E - C->frac_bits;          /* cut to a multiple of 2^(E-F) */
                q_scale2(t, ad[i].q, -qe);
                q_round_int(C->term_round, t, z);
                mpq_set_z(t, z);
                q_scale2(t, t, qe);
            } else {
                mpq_set(t, ad[i].q);
            }
            mpq_add(acc_q, acc_q, t);                /* exact sum */
        }
        ov_fin(&sum, acc_q, 0);                      /* a zero sum is +0 here */
        mpq_clear(acc_q);
        mpq_clear(t);
        mpz_clear(z);
    }
    rc = round_or_err(C, acc, round_mode, &sum, r, "atom result");
    ov_clear(&sum);
    for (size_t i = 0; i < na; i++)
        ov_clear(&ad[i]);
    free(ad);
    return rc;
}

static int eval(ctx *C, const tnode *node, const cur *S, const term *const *ts, size_t n,
                const oval *s0, oval *out);

/* reduces already computed values vs[0..k) by the combinator node, from the
 * start value s0 (NULL: none) */
static int combine(ctx *C, const tnode *node, const cur *S, const oval *vs, size_t k,
                   const oval *s0, oval *out)
{
    term *tm = calloc(k ? k : 1, sizeof *tm);
    const term **pt = calloc(k ? k : 1, sizeof *pt);
    if (!tm || !pt) {
        free(tm);
        free(pt);
        return cerr(C, "out of memory");
    }
    for (size_t i = 0; i < k; i++) {
        ov_init(&tm[i].a);
        ov_init(&tm[i].b);
        tm[i].is_prod = 0;
        ov_set(&tm[i].a, &vs[i]);
        pt[i] = &tm[i];
    }
    int rc = eval(C, node, S, pt, k, s0, out);
    for (size_t i = 0; i < k; i++) {
        ov_clear(&tm[i].a);
        ov_clear(&tm[i].b);
    }
    free(tm);
    free(pt);
    return rc;
}

static oval *ov_array(size_t k)
{
    oval *v = malloc((k ? k : 1) * sizeof *v);
    if (v)
        for (size_t i = 0; i < k; i++)
            ov_init(&v[i]);
    return v;
}

static void ov_array_free(oval *v, size_t k)
{
    if (!v)
        return;
    for (size_t i = 0; i < k; i++)
        ov_clear(&v[i]);
    free(v);
}

/* out = round(v + s0) with the settings S: a tree that does not start from
 * s0 meets it in one addition ("Reducing from a start value s0", 4.1) */
static int plus_start(ctx *C, const cur *S, const oval *v, const oval *s0, oval *out)
{
    if (!s0) {
        ov_set(out, v);
        return 0;
    }
    return radd(C, S, v, s0, out);
}

/* The partials of split/tile/stride/body reduced by the combinator comb
 * (NULL: a plain seq, body's default): a seq combinator starts from s0, any
 * other combinator gives round(comb + s0) with the settings S of the node
 * that owns the combinator (the combinator's own settings apply inside it). */
static int combine_from(ctx *C, const tnode *comb, const cur *S, const oval *vs, size_t k,
                        const oval *s0, oval *out)
{
    static const tnode plain_seq = {.kind = T_SEQ, .opt = 1, .fma = -1, .mode = -1};
    if (!comb)
        comb = &plain_seq;
    if (!s0 || comb->kind == T_SEQ)
        return combine(C, comb, S, vs, k, s0, out);
    oval v;
    ov_init(&v);
    int rc = combine(C, comb, S, vs, k, NULL, &v);
    if (!rc)
        rc = plus_start(C, S, &v, s0, out);
    ov_clear(&v);
    return rc;
}

/* Reduces the runs ts[lo[i] .. lo[i] + len[i]) (i < k) each by T from
 * scratch, then their partials by the combinator from s0: the common part of
 * tile, tile lists and tile(..., halve=A). */
static int reduce_tiles(ctx *C, const tnode *node, const cur *S, const term *const *ts,
                        const size_t *lo, const size_t *len, size_t k, const oval *s0, oval *out)
{
    if (node->carry) {
        /* tile(..., T, carry): v = s0 (none: from scratch); each tile in
         * order reduced by T from v into v; no tiles: s0, else T over
         * nothing */
        oval v, w;
        ov_init(&v);
        ov_init(&w);
        int have = s0 != NULL, rc = 0;
        if (have)
            ov_set(&v, s0);
        for (size_t i = 0; i < k && !rc; i++) {
            rc = eval(C, node->t, S, ts + lo[i], len[i], have ? &v : NULL, &w);
            ov_set(&v, &w);
            have = 1;
        }
        if (!rc) {
            if (have)
                ov_set(out, &v);
            else
                rc = eval(C, node->t, S, ts, 0, NULL, out);
        }
        ov_clear(&v);
        ov_clear(&w);
        return rc;
    }
    oval *part = ov_array(k);
    if (!part)
        return cerr(C, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++)
        rc = eval(C, node->t, S, ts + lo[i], len[i], NULL, &part[i]);
    if (!rc)
        rc = combine_from(C, node->c, S, part, k, s0, out);
    ov_array_free(part, k);
    return rc;
}

static int eval_pairwise(ctx *C, const cur *S, const term *const *ts, size_t n, oval *out)
{
    if (n == 0) {
        ov_zero(out, 0);
        return 0;
    }
    if (n == 1)
        return leaf(C, S, ts[0], out);
    size_t h = (n + 1) / 2;
    oval x, y;
    ov_init(&x);
    ov_init(&y);
    int rc = eval_pairwise(C, S, ts, h, &x);
    if (!rc)
        rc = eval_pairwise(C, S, ts + h, n - h, &y);
    if (!rc)
        rc = radd(C, S, &x, &y, out);
    ov_clear(&x);
    ov_clear(&y);
    return rc;
}

/* expr(B) over ts[0..n): *present = 0 when every index under e is >= n
 * (absent); a '+' with one absent side is the other side's value as it is */
static int eval_brk(ctx *C, const cur *S, const enode *e, const term *const *ts, size_t n,
                    oval *out, int *present)
{
    if (e->idx >= 0) {
        *present = (size_t)e->idx < n;
        return *present ? leaf(C, S, ts[e->idx], out) : 0;
    }
    oval x, y;
    int px = 0, py = 0;
    ov_init(&x);
    ov_init(&y);
    int rc = eval_brk(C, S, e->l, ts, n, &x, &px);
    if (!rc)
        rc = eval_brk(C, S, e->r, ts, n, &y, &py);
    if (!rc) {
        *present = px || py;
        if (px && py)
            rc = radd(C, S, &x, &y, out);   /* round(x + y), never fused */
        else if (px)
            ov_set(out, &x);
        else if (py)
            ov_set(out, &y);
    }
    ov_clear(&x);
    ov_clear(&y);
    return rc;
}

/* A fold bracketing over registers of V lanes, at lane j of each: a lone
 * index q is lane qV + j's value as it is; (x + y) is round(x + y), never
 * fused. */
static int eval_fold_brk(ctx *C, const cur *S, const enode *e, const oval *v, size_t V, size_t j,
                         oval *out)
{
    if (e->idx >= 0) {
        ov_set(out, &v[(size_t)e->idx * V + j]);
        return 0;
    }
    oval x, y;
    ov_init(&x);
    ov_init(&y);
    int rc = eval_fold_brk(C, S, e->l, v, V, j, &x);
    if (!rc)
        rc = eval_fold_brk(C, S, e->r, v, V, j, &y);
    if (!rc)
        rc = radd(C, S, &x, &y, out);
    ov_clear(&x);
    ov_clear(&y);
    return rc;
}

/* lanes(W, [stages], C) (docs/numerics.md §4.2): lanes v_0 ... v_{w-1},
 * w = W at first, each +0; p counts the terms taken.  loop(B): while at
 * least B terms remain, v_i = step(v_i, t_{p+i}) for i < B, p += B.
 * peel(B, M): the same once, if (n - p) mod M >= B.  fold(V, [b_0 ...
 * b_{k-1}]): new lane bV + j is bracketing b_b over the registers (lane j
 * of each), then w = kV.  loop(B, U) (sixth edition): while at least U
 * remain, U terms, term q of the round to lane q mod B.  rest(L) (sixth
 * edition, last): every term left to lane L.  Terms left over go in blocks
 * of w to lanes 0, 1, ... by step.  C reduces v_0 ... v_{w-1} in order; from s0 as a
 * stride's combinator does (a seq C starts from s0, any other C gives
 * round(C + s0)). */
static int eval_lanes(ctx *C, const tnode *node, const cur *S, const term *const *ts, size_t n,
                      const oval *s0, oval *out)
{
    size_t W = (size_t)node->n, w = W, p = 0;
    oval *v = ov_array(W), *nv = ov_array(W);   /* a fold never widens the lanes */
    if (!v || !nv) {
        ov_array_free(v, W);
        ov_array_free(nv, W);
        return cerr(C, "out of memory");
    }
    for (size_t i = 0; i < W; i++)
        ov_zero(&v[i], 0);
    int rc = 0;
    for (size_t k = 0; k < node->nstages && !rc; k++) {
        const lstage *st = &node->stages[k];
        size_t B = (size_t)st->b;
        if (st->kind == LS_LOOP) {
            /* rounds of U terms (U = B for loop(B)), each U / B blocks of B */
            size_t U = (size_t)st->m;
            for (; n - p >= U && !rc;)
                for (size_t q = 0; q < U && !rc; q++, p++)
                    rc = step(C, S, &v[q % B], ts[p], &v[q % B]);
        } else if (st->kind == LS_REST) {
            for (; p < n && !rc; p++)
                rc = step(C, S, &v[B], ts[p], &v[B]);
        } else if (st->kind == LS_PEEL) {
            if ((n - p) % (size_t)st->m >= B) {
                for (size_t i = 0; i < B && !rc; i++)
                    rc = step(C, S, &v[i], ts[p + i], &v[i]);
                p += B;
            }
        } else {
            size_t V = B;
            for (size_t b = 0; b < st->nbrk && !rc; b++)
                for (size_t j = 0; j < V && !rc; j++)
                    rc = eval_fold_brk(C, S, st->brk[b], v, V, j, &nv[b * V + j]);
            w = st->nbrk * V;
            for (size_t i = 0; i < w && !rc; i++)
                ov_set(&v[i], &nv[i]);
        }
    }
    /* the terms left over: blocks of w, the last one shorter */
    for (size_t i = 0; p + i < n && !rc; i++)
        rc = step(C, S, &v[i % w], ts[p + i], &v[i % w]);
    if (!rc)
        rc = combine_from(C, node->c, S, v, w, s0, out);
    ov_array_free(v, W);
    ov_array_free(nv, W);
    return rc;
}

/* Reduces ts[0..n) by node from the start value s0 (NULL: from scratch),
 * with the settings S of the enclosing node.  Section 4.1: seq and chain
 * start with s = s0; reverse and order pass s0 to their tree on the
 * reordered terms; split/tile/stride/body/lanes pass it to a seq combinator
 * (the parts are always from scratch); body(..., carry) starts with
 * round(s0 + T's value) and continues the tail from it; @FMT and [...]
 * only change the settings; every other tree T gives round(T + s0). */
/* body and head without carry: the first a terms by X, the rest by Y,
 * each from scratch; the node's combinator (default seq) over the values
 * of the parts that are not empty, the first first, from s0 */
static int two_parts(ctx *C, const tnode *node, const tnode *X, const tnode *Y, const cur *S,
                     const term *const *ts, size_t a, size_t n, const oval *s0, oval *out)
{
    oval part[2];
    size_t k = 0;
    int rc = 0;
    ov_init(&part[0]);
    ov_init(&part[1]);
    if (a > 0)
        rc = eval(C, X, S, ts, a, NULL, &part[k++]);
    if (!rc && n > a)
        rc = eval(C, Y, S, ts + a, n - a, NULL, &part[k++]);
    if (!rc)
        rc = combine_from(C, node->c, S, part, k, s0, out);
    ov_clear(&part[0]);
    ov_clear(&part[1]);
    return rc;
}

static int eval_node(ctx *C, const tnode *node, const cur *outer, const term *const *ts, size_t n,
                     const oval *s0, oval *out);

/* eval_node, then [store=FMT] (seventh edition): the node's result,
 * whatever it holds (its start value too), rounded once to FMT in the
 * node's own mode. */
static int eval(ctx *C, const tnode *node, const cur *outer, const term *const *ts, size_t n,
                const oval *s0, oval *out)
{
    int rc = eval_node(C, node, outer, ts, n, s0, out);
    if (rc || !node->store)
        return rc;
    oval v;
    ov_init(&v);
    ov_set(&v, out);
    rc = round_or_err(C, node->store, node->mode >= 0 ? node->mode : outer->mode, &v, out, "stored result");
    ov_clear(&v);
    return rc;
}

static int eval_node(ctx *C, const tnode *node, const cur *outer, const term *const *ts, size_t n,
                     const oval *s0, oval *out)
{
    cur Sv = *outer;  /* X@FMT, X[k=v, ...]: the node's own settings */
    if (node->fmt)
        Sv.F = node->fmt;
    if (node->fma >= 0)
        Sv.fma = node->fma;
    if (node->set_prod)
        Sv.prod = node->prod;
    if (node->mode >= 0)
        Sv.mode = node->mode;
    const cur *S = &Sv;
    int rc = 0;
    switch (node->kind) {
    case T_SEQ: {
        oval s;
        ov_init(&s);
        if (s0)
            ov_set(&s, s0);  /* s = s0, exact */
        else
            ov_zero(&s, 0);
        for (size_t i = 0; i < n && !rc; i++)
            rc = step(C, S, &s, ts[i], &s);
        if (!rc)
            ov_set(out, &s);
        ov_clear(&s);
        return rc;
    }
    case T_ATOMIC: { /* atomic: evaluated in seq order (interpretation 7), from +0 */
        oval s;
        ov_init(&s);
        ov_zero(&s, 0);
        for (size_t i = 0; i < n && !rc; i++)
            rc = step(C, S, &s, ts[i], &s);
        if (!rc)
            rc = plus_start(C, S, &s, s0, out);
        ov_clear(&s);
        return rc;
    }
    case T_PAIRWISE: {
        oval v;
        ov_init(&v);
        rc = eval_pairwise(C, S, ts, n, &v);
        if (!rc)
            rc = plus_start(C, S, &v, s0, out);
        ov_clear(&v);
        return rc;
    }
    case T_HALVING: {
        if (n == 0) {
            oval z;
            ov_init(&z);
            ov_zero(&z, 0);
            rc = plus_start(C, S, &z, s0, out);
            ov_clear(&z);
            return rc;
        }
        size_t w = 1;
        while (w < n)
            w *= 2;
        oval *v = ov_array(w);
        if (!v)
            return cerr(C, "out of memory");
        for (size_t j = 0; j < w && !rc; j++) {
            if (j < n)
                rc = leaf(C, S, ts[j], &v[j]);
            else
                ov_zero(&v[j], 0);
        }
        for (size_t o = w / 2; o >= 1 && !rc; o /= 2)
            for (size_t j = 0; j < o && !rc; j++)
                rc = radd(C, S, &v[j], &v[j + o], &v[j]);
        if (!rc)
            rc = plus_start(C, S, &v[0], s0, out);
        ov_array_free(v, w);
        return rc;
    }
    case T_REVERSE: {
        const term **r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return cerr(C, "out of memory");
        for (size_t i = 0; i < n; i++)
            r[i] = ts[n - 1 - i];
        rc = eval(C, node->t, S, r, n, s0, out);  /* T from s0 on the reversed terms */
        free(r);
        return rc;
    }
    case T_ORDER: {
        /* blocks of k; a full block in the listed order, a last partial one as it is */
        size_t k = node->nlist;
        const term **r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return cerr(C, "out of memory");
        for (size_t b = 0; b < n; b += k)
            for (size_t j = 0; j < k && b + j < n; j++)
                r[b + j] = b + k <= n ? ts[b + (size_t)node->list[j]] : ts[b + j];
        rc = eval(C, node->t, S, r, n, s0, out);  /* T from s0 on the permuted terms */
        free(r);
        return rc;
    }
    case T_SPLIT: {
        size_t Sn = (size_t)node->n, A = (size_t)node->opt;
        size_t c = (n + Sn - 1) / Sn;
        c = (c + A - 1) / A * A;                 /* up to a multiple of A */
        oval *part = ov_array(Sn);
        if (!part)
            return cerr(C, "out of memory");
        for (size_t k = 0; k < Sn && !rc; k++) {
            size_t lo = k * c < n ? k * c : n;   /* k*c cannot overflow: c <= n + A, S < 2^31 */
            size_t hi = (k + 1) * c < n ? (k + 1) * c : n;
            if (hi <= lo)
                ov_zero(&part[k], 0);            /* an empty slice gives +0 */
            else
                rc = eval(C, node->t, S, ts + lo, hi - lo, NULL, &part[k]);
        }
        if (!rc)
            rc = combine_from(C, node->c, S, part, Sn, s0, out);
        ov_array_free(part, Sn);
        return rc;
    }
    case T_TILE:
    case T_TILELIST: {
        /* the tiles as (start, length) runs; at most n + 1 + the list's length */
        size_t cap = n + 2 + node->nlist, k = 0, pos = 0;
        size_t *lo = malloc(cap * sizeof *lo), *len = malloc(cap * sizeof *len);
        if (!lo || !len) {
            free(lo);
            free(len);
            return cerr(C, "out of memory");
        }
        if (node->kind == T_TILELIST) {
            /* the listed sizes, in order, cut at n; the terms past their sum: one more */
            for (size_t i = 0; i < node->nlist && pos < n; i++) {
                size_t b = (size_t)node->list[i];
                lo[k] = pos;
                len[k] = b < n - pos ? b : n - pos;
                pos += len[k++];
            }
            if (pos < n) {
                lo[k] = pos;
                len[k++] = n - pos;
            }
        } else if (node->opt == 0) {
            /* tile(P, T, C): tiles of P, the last one shorter */
            size_t P = (size_t)node->n;
            for (; pos < n; pos += P) {
                lo[k] = pos;
                len[k++] = P < n - pos ? P : n - pos;
            }
        } else {
            /* tile(P, T, C, halve=A): P while at least 2P remain; then r > P:
             * ceil(r/2) up to a multiple of A (at most r) and the rest;
             * 0 < r <= P: one tile of r.  A tile of no terms does not exist. */
            size_t P = (size_t)node->n, A = (size_t)node->opt;
            for (; n - pos >= 2 * P; pos += P) {
                lo[k] = pos;
                len[k++] = P;
            }
            size_t r = n - pos;
            if (r > P) {
                size_t h = (r + 1) / 2;
                h = (h + A - 1) / A * A;
                if (h > r)
                    h = r;
                lo[k] = pos;
                len[k++] = h;
                if (r - h > 0) {
                    lo[k] = pos + h;
                    len[k++] = r - h;
                }
            } else if (r > 0) {
                lo[k] = pos;
                len[k++] = r;
            }
        }
        rc = reduce_tiles(C, node, S, ts, lo, len, k, s0, out);
        free(lo);
        free(len);
        return rc;
    }
    case T_STRIDE: {
        size_t L = (size_t)node->n, V = (size_t)node->opt;
        oval *part = ov_array(L);
        const term **lane = malloc((n ? n : 1) * sizeof *lane);
        if (!part || !lane) {
            ov_array_free(part, L);
            free(lane);
            return cerr(C, "out of memory");
        }
        for (size_t l = 0; l < L && !rc; l++) {
            size_t m = 0;
            /* block b = terms [b*V, (b+1)*V); block b goes to lane b mod L */
            for (size_t i = 0; i < n; i++)
                if ((i / V) % L == l)
                    lane[m++] = ts[i];
            if (m == 0)
                ov_zero(&part[l], 0);            /* a lane with no terms gives +0 */
            else
                rc = eval(C, node->t, S, lane, m, NULL, &part[l]);
        }
        if (!rc)
            rc = combine_from(C, node->c, S, part, L, s0, out);
        ov_array_free(part, L);
        free(lane);
        return rc;
    }
    case T_BODY: {
        /* m = n - (n mod L): the body ts[0..m) by T, the tail ts[m..n) by U */
        size_t L = (size_t)node->n, m = n - n % L;
        if (node->carry) {
            /* v = T's value (round(s0 + T's value) from s0; s0 itself when the
             * body is empty); U reduces the tail from v, or from scratch when
             * there is no v; an empty tail gives v */
            oval v;
            ov_init(&v);
            int have_v = 0;
            if (m > 0) {
                rc = eval(C, node->t, S, ts, m, NULL, &v);
                if (!rc && s0)
                    rc = radd(C, S, s0, &v, &v);
                have_v = 1;
            } else if (s0) {
                ov_set(&v, s0);
                have_v = 1;
            }
            if (!rc) {
                if (m == n && have_v)
                    ov_set(out, &v);
                else
                    rc = eval(C, node->u, S, ts + m, n - m, have_v ? &v : NULL, out);
            }
            ov_clear(&v);
            return rc;
        }
        return two_parts(C, node, node->t, node->u, S, ts, m, n, s0, out);
    }
    case T_HEAD: {
        /* h = n mod L: the head ts[0..h) by U, then the rest ts[h..n) by T */
        size_t L = (size_t)node->n, h = n % L;
        if (node->carry) {
            /* U reduces the head from s0 (from scratch without one); T
             * reduces the rest from U's value (s0 when the head is empty; from
             * scratch when there is neither); an empty rest gives that value */
            oval v;
            ov_init(&v);
            int have_v = 0;
            if (h > 0) {
                rc = eval(C, node->u, S, ts, h, s0, &v);
                have_v = 1;
            } else if (s0) {
                ov_set(&v, s0);
                have_v = 1;
            }
            if (!rc) {
                if (h == n && have_v)
                    ov_set(out, &v);
                else
                    rc = eval(C, node->t, S, ts + h, n - h, have_v ? &v : NULL, out);
            }
            ov_clear(&v);
            return rc;
        }
        return two_parts(C, node, node->u, node->t, S, ts, h, n, s0, out); /* the head first */
    }
    case T_EXPR: {
        if (n > node->k)
            return cerr(C, "expr over %zu indices given %zu terms (use it inside tile(%zu, ...))",
                        node->k, n, node->k);
        oval v;
        int present = 0;
        ov_init(&v);
        rc = eval_brk(C, S, node->e, ts, n, &v, &present);
        if (!rc && !present)
            ov_zero(&v, 0);                      /* every index absent: +0 */
        if (!rc)
            rc = plus_start(C, S, &v, s0, out);
        ov_clear(&v);
        return rc;
    }
    case T_LANES:
        return eval_lanes(C, node, S, ts, n, s0, out);
    case T_CHAIN: {
        if (!C->has_atom)
            return cerr(C, "chain(%ld) needs an atom in the point", node->n);
        size_t N = (size_t)node->n;
        oval s;
        ov_init(&s);
        if (s0)
            ov_set(&s, s0);  /* the first atom's accumulator addend */
        else
            ov_zero(&s, 0);
        for (size_t lo = 0; lo < n && !rc; lo += N) {
            size_t m = n - lo < N ? n - lo : N;
            rc = atom(C, S, &s, ts + lo, m, &s);
        }
        if (!rc)
            ov_set(out, &s);
        ov_clear(&s);
        return rc;
    }
    }
    return cerr(C, "internal: unknown tree node");
}

/* ------------------------------------------------------------------ */
/* Public API                                                          */
/* ------------------------------------------------------------------ */

static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

int orc_round_bits(const char *fmt, const char *mode, int saturate,
                   const mpq_t exact_value, int sign_if_zero, uint64_t *out_bits)
{
    const fmt_t *f = find_fmt(fmt);
    int m = find_mode(mode);
    if (!f || m < 0)
        return 1;
    oval x, r;
    ov_init(&x);
    ov_init(&r);
    ov_fin(&x, exact_value, sign_if_zero < 0);
    int rc = oround(f, m, saturate != 0, &x, &r);
    if (!rc)
        rc = oencode(f, &r, out_bits) ? 2 : 0;
    ov_clear(&x);
    ov_clear(&r);
    return rc;
}

int orc_decode(const char *fmt, uint64_t bits, mpq_t value, int *neg_zero)
{
    const fmt_t *f = find_fmt(fmt);
    if (neg_zero)
        *neg_zero = 0;
    mpq_set_ui(value, 0, 1);
    if (!f)
        return 3;
    oval x;
    ov_init(&x);
    int rc = odecode(f, bits, &x);
    if (rc != 3) {
        mpq_set(value, x.q);
        if (neg_zero && ov_is_zero(&x) && x.neg)
            *neg_zero = 1;
    }
    ov_clear(&x);
    return rc;
}

/* resolves an optional name; *out stays at dflt when name is NULL */
static int opt_fmt(const char *name, const fmt_t *dflt, const fmt_t **out, const char *key,
                   char *err, size_t errlen)
{
    *out = dflt;
    if (!name)
        return 0;
    if (!(*out = find_fmt(name)))
        return set_err(err, errlen, "%s: unknown format '%s'", key, name);
    return 0;
}

static int opt_mode(const char *name, int dflt, int *out, const char *key, char *err, size_t errlen)
{
    *out = dflt;
    if (!name)
        return 0;
    if ((*out = find_mode(name)) < 0)
        return set_err(err, errlen, "%s: unknown rounding mode '%s'", key, name);
    return 0;
}

int orc_reduce(const orc_point *p, const char *in_fmt, const char *b_fmt,
               const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
               uint64_t *out_bits, char *err, size_t errlen)
{
    return orc_reduce_c(p, in_fmt, b_fmt, a_bits, b_bits, n, NULL, NULL, out_bits, err, errlen);
}

int orc_reduce_c(const orc_point *p, const char *in_fmt, const char *b_fmt,
                 const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
                 const char *c_fmt, const uint64_t *c_bits,
                 uint64_t *out_bits, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!p || !out_bits)
        return set_err(err, errlen, "missing point or output");
    if (n > 0 && (!a_bits))
        return set_err(err, errlen, "missing inputs");

    const fmt_t *acc, *in, *out, *fa, *fb, *prod = NULL, *atom_acc = NULL;
    int mode, in_mode, out_mode, term_round = M_RZ, atom_round;
    if (opt_fmt(p->acc, find_fmt("fp32"), &acc, "acc", err, errlen) ||
        opt_mode(p->rounding, M_RNE, &mode, "rounding", err, errlen) ||
        opt_fmt(p->in, NULL, &in, "in", err, errlen) ||
        opt_mode(p->in_rounding, M_RNE, &in_mode, "in_rounding", err, errlen) ||
        opt_fmt(p->out, acc, &out, "out", err, errlen) ||
        opt_mode(p->out_rounding, mode, &out_mode, "out_rounding", err, errlen))
        return 1;
    if (p->product && strcmp(p->product, "exact") != 0 &&
        opt_fmt(p->product, NULL, &prod, "product", err, errlen))
        return 1;
    if (p->fma != 0 && p->fma != 1)
        return set_err(err, errlen, "fma: must be 0 or 1, got %d", p->fma);
    if (p->saturate != 0 && p->saturate != 1)
        return set_err(err, errlen, "saturate: must be 0 or 1, got %d", p->saturate);
    atom_round = -1;  /* the current mode R, which a subtree may set */
    if (p->has_atom) {
        if (p->atom_frac_bits < -1)
            return set_err(err, errlen, "atom.frac_bits: must be >= 0 (or -1 for none), got %d",
                           p->atom_frac_bits);
        if (opt_mode(p->atom_term_round, M_RZ, &term_round, "atom.term_round", err, errlen) ||
            opt_mode(p->atom_round, -1, &atom_round, "atom.round", err, errlen) ||
            opt_fmt(p->atom_acc, NULL, &atom_acc, "atom.acc", err, errlen))
            return 1;
    }
    if (!(fa = find_fmt(in_fmt)))
        return set_err(err, errlen, "input format: unknown format '%s'", in_fmt ? in_fmt : "(null)");
    if (opt_fmt(b_fmt, fa, &fb, "b format", err, errlen))
        return 1;

    int align_values = 0;
    if (p->has_atom && p->atom_align) {
        if (strcmp(p->atom_align, "values") == 0)
            align_values = 1;
        else if (strcmp(p->atom_align, "operands") != 0)
            return set_err(err, errlen, "atom.align: unknown rule '%s'", p->atom_align);
    }

    tnode *root = parse_text(p->tree ? p->tree : "seq", err, errlen);
    if (!root)
        return 1;
    ctx C = {p->has_atom, p->has_atom ? p->atom_frac_bits : -1, term_round, atom_round, atom_acc,
             align_values, in ? in : fa, in ? in : fb, err, errlen};
    cur S0 = {acc, mode, p->fma, prod};

    term *tm = calloc(n ? n : 1, sizeof *tm);
    const term **pt = calloc(n ? n : 1, sizeof *pt);
    int rc = 0;
    if (!tm || !pt) {
        free(tm);
        free(pt);
        tfree(root);
        return set_err(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        ov_init(&tm[i].a);
        ov_init(&tm[i].b);
        pt[i] = &tm[i];
    }
    for (size_t i = 0; i < n && !rc; i++) {
        tm[i].is_prod = b_bits != NULL;
        if (odecode(fa, a_bits[i], &tm[i].a) == 3)
            rc = set_err(err, errlen, "a[%zu] = 0x%llx is not a %s pattern", i,
                         (unsigned long long)a_bits[i], fa->name);
        else if (b_bits && odecode(fb, b_bits[i], &tm[i].b) == 3)
            rc = set_err(err, errlen, "b[%zu] = 0x%llx is not a %s pattern", i,
                         (unsigned long long)b_bits[i], fb->name);
        else if (in) {
            if (oround(in, in_mode, 0, &tm[i].a, &tm[i].a) ||
                (b_bits && oround(in, in_mode, 0, &tm[i].b, &tm[i].b)))
                rc = set_err(err, errlen, "input %zu: NaN has no encoding in format %s", i, in->name);
        }
    }
    /* the start value c (section 6): decoded exactly, never rounded to `in` */
    oval cv;
    ov_init(&cv);
    const fmt_t *fc = NULL;
    if (!rc && c_bits) {
        if (!(fc = find_fmt(c_fmt)))
            rc = set_err(err, errlen, "c format: unknown format '%s'", c_fmt ? c_fmt : "(null)");
        else if (odecode(fc, *c_bits, &cv) == 3)
            rc = set_err(err, errlen, "c = 0x%llx is not a %s pattern", (unsigned long long)*c_bits, fc->name);
    }
    oval res, fin;
    ov_init(&res);
    ov_init(&fin);
    if (!rc)
        rc = eval(&C, root, &S0, pt, n, c_bits ? &cv : NULL, &res);
    if (!rc && oround(out, out_mode, p->saturate, &res, &fin))
        rc = set_err(err, errlen, "result is NaN, which has no encoding in format %s", out->name);
    if (!rc && oencode(out, &fin, out_bits))
        rc = set_err(err, errlen, "internal: result not encodable in %s", out->name);
    ov_clear(&res);
    ov_clear(&fin);
    ov_clear(&cv);
    for (size_t i = 0; i < n; i++) {
        ov_clear(&tm[i].a);
        ov_clear(&tm[i].b);
    }
    free(tm);
    free(pt);
    tfree(root);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Row classes (docs/numerics.md §4.3)                                 */
/* ------------------------------------------------------------------ */

/* The selector language, by recursive descent.  `live` is 0 on a side that
 * && / || do not evaluate (and in a syntax check): it is parsed, but
 * nothing on it is computed, so a division by zero there is no error. */
typedef struct sel {
    const char *s;
    size_t pos;
    int64_t r, R, M, N;
    int has_grid;
    int64_t n; /* the reduction length; -1: not known (n is then an unknown name) */
    char *err;
    size_t errlen;
    int failed;
} sel;

static void sel_err(sel *X, const char *fmt, ...)
{
    if (X->failed)
        return;
    X->failed = 1;
    if (X->err && X->errlen) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(X->err, X->errlen, "select \"%s\": %s at column %zu", X->s, msg, X->pos + 1);
    }
}

static void sel_ws(sel *X)
{
    while (X->s[X->pos] == ' ' || X->s[X->pos] == '\t' || X->s[X->pos] == '\n' || X->s[X->pos] == '\r')
        X->pos++;
}

/* consumes the operator op when it comes next (and is not the start of a
 * longer one listed in `unless`, e.g. '<' in "<=") */
static int sel_op(sel *X, const char *op, const char *unless)
{
    sel_ws(X);
    size_t l = strlen(op);
    if (strncmp(X->s + X->pos, op, l) != 0)
        return 0;
    if (unless && X->s[X->pos + l] && strchr(unless, X->s[X->pos + l]))
        return 0;
    X->pos += l;
    return 1;
}

static int64_t sel_or(sel *X, int live);

static int64_t sel_primary(sel *X, int live)
{
    sel_ws(X);
    char ch = X->s[X->pos];
    if (ch == '(') {
        X->pos++;
        int64_t v = sel_or(X, live);
        sel_ws(X);
        if (X->s[X->pos] != ')')
            sel_err(X, "expected ')'");
        else
            X->pos++;
        return v;
    }
    if (ch >= '0' && ch <= '9') {
        int64_t v = 0;
        while (X->s[X->pos] >= '0' && X->s[X->pos] <= '9') {
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, X->s[X->pos] - '0', &v)) {
                sel_err(X, "integer too large");
                return 0;
            }
            X->pos++;
        }
        return v;
    }
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
        size_t at = X->pos, l = 0;
        while (is_ident_char(X->s[X->pos]))
            X->pos++, l++;
        const char *w = X->s + at;
        if (l == 1 && w[0] == 'r')
            return X->r;
        if (l == 1 && w[0] == 'R')
            return X->R;
        if (l == 1 && w[0] == 'n' && X->n >= 0)
            return X->n;
        if (l == 1 && X->has_grid) {
            switch (w[0]) {
            case 'M': return X->M;
            case 'N': return X->N;
            case 'i': return X->r / X->N;
            case 'j': return X->r % X->N;
            }
        }
        X->pos = at;
        sel_err(X, "unknown name '%.*s'%s", (int)l, w,
                !X->has_grid && l == 1 && strchr("ijMN", w[0]) ? " (the point has no grid)" : "");
        return 0;
    }
    sel_err(X, ch ? "expected a number, a name or '('" : "unexpected end");
    return 0;
}

static int64_t sel_unary(sel *X, int live)
{
    if (sel_op(X, "!", "="))
        return !sel_unary(X, live);
    return sel_primary(X, live);
}

static int64_t sel_mul(sel *X, int live)
{
    int64_t v = sel_unary(X, live);
    for (;;) {
        char op;
        if (sel_op(X, "*", NULL))
            op = '*';
        else if (sel_op(X, "/", NULL))
            op = '/';
        else if (sel_op(X, "%", NULL))
            op = '%';
        else
            return v;
        size_t at = X->pos;
        int64_t w = sel_unary(X, live);
        if (X->failed || !live)
            continue;
        if (op == '*') {
            if (__builtin_mul_overflow(v, w, &v)) {
                X->pos = at;
                sel_err(X, "integer overflow");
            }
            continue;
        }
        if (w == 0) {
            X->pos = at;
            sel_err(X, "division by zero");
            continue;
        }
        if (v == INT64_MIN && w == -1) {
            X->pos = at;
            sel_err(X, "integer overflow");
            continue;
        }
        int64_t q = v / w;                       /* floor division: */
        if (v % w != 0 && ((v < 0) != (w < 0)))  /* C truncates toward zero */
            q--;
        v = op == '/' ? q : v - q * w;
    }
}

static int64_t sel_add(sel *X, int live)
{
    int64_t v = sel_mul(X, live);
    for (;;) {
        int plus;
        if (sel_op(X, "+", NULL))
            plus = 1;
        else if (sel_op(X, "-", NULL))
            plus = 0;
        else
            return v;
        size_t at = X->pos;
        int64_t w = sel_mul(X, live);
        if (!X->failed && live &&
            (plus ? __builtin_add_overflow(v, w, &v) : __builtin_sub_overflow(v, w, &v))) {
            X->pos = at;
            sel_err(X, "integer overflow");
        }
    }
}

static int64_t sel_rel(sel *X, int live)
{
    int64_t v = sel_add(X, live);
    for (;;) {
        if (sel_op(X, "<=", NULL))
            v = v <= sel_add(X, live);
        else if (sel_op(X, ">=", NULL))
            v = v >= sel_add(X, live);
        else if (sel_op(X, "<", NULL))
            v = v < sel_add(X, live);
        else if (sel_op(X, ">", NULL))
            v = v > sel_add(X, live);
        else
            return v;
    }
}

static int64_t sel_eq(sel *X, int live)
{
    int64_t v = sel_rel(X, live);
    for (;;) {
        if (sel_op(X, "==", NULL))
            v = v == sel_rel(X, live);
        else if (sel_op(X, "!=", NULL))
            v = v != sel_rel(X, live);
        else
            return v;
    }
}

static int64_t sel_and(sel *X, int live)
{
    int64_t v = sel_eq(X, live);
    while (sel_op(X, "&&", NULL)) {
        int64_t w = sel_eq(X, live && v != 0);
        v = v != 0 && w != 0;
    }
    return v;
}

static int64_t sel_or(sel *X, int live)
{
    int64_t v = sel_and(X, live);
    while (sel_op(X, "||", NULL)) {
        int64_t w = sel_and(X, live && v == 0);
        v = v != 0 || w != 0;
    }
    return v;
}

/* live = 0: a syntax check only (no row, nothing computed) */
static int sel_run(const char *select, int64_t r, int64_t R, int64_t n, const int64_t grid[2], int live,
                   int64_t *value, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!select)
        return set_err(err, errlen, "select: missing");
    sel X = {select, 0, r, R, grid ? grid[0] : 0, grid ? grid[1] : 0, grid != NULL, n, err, errlen, 0};
    if (grid && live && X.N < 1)
        return set_err(err, errlen, "grid: N must be at least 1");
    int64_t v = sel_or(&X, live);
    sel_ws(&X);
    if (!X.failed && X.s[X.pos] != 0)
        sel_err(&X, "unexpected text");
    if (X.failed)
        return 1;
    if (value)
        *value = v;
    return 0;
}

int orc_select_eval(const char *select, int64_t r, int64_t R, const int64_t grid[2],
                    int64_t *value, char *err, size_t errlen)
{
    return sel_run(select, r, R, -1, grid, 1, value, err, errlen);
}

int orc_select_eval_n(const char *select, int64_t r, int64_t R, int64_t n, const int64_t grid[2],
                      int64_t *value, char *err, size_t errlen)
{
    return sel_run(select, r, R, n, grid, 1, value, err, errlen);
}

int orc_row_class(const orc_rowclass *classes, size_t nclasses, const int64_t grid[2],
                  size_t R, size_t r, size_t n, long *which, char *err, size_t errlen)
{
    *which = -1;
    for (size_t k = 0; k < nclasses; k++) {
        int64_t v = 0;
        char msg[384] = "";
        if (sel_run(classes[k].select, (int64_t)r, (int64_t)R, (int64_t)n, grid, 1, &v, msg, sizeof msg))
            return set_err(err, errlen, "rows[%zu] (row %zu): %s", k, r, msg);
        if (v != 0) {
            *which = (long)k;
            return 0;
        }
    }
    return 0;
}

/* the point p with the keys of class c applied over it */
static orc_point class_point(const orc_point *p, const orc_rowclass *c)
{
    orc_point q = *p;
    const orc_point *k = &c->keys;
    if (c->set & ORC_K_ACC) q.acc = k->acc;
    if (c->set & ORC_K_ROUNDING) q.rounding = k->rounding;
    if (c->set & ORC_K_IN) q.in = k->in;
    if (c->set & ORC_K_IN_ROUNDING) q.in_rounding = k->in_rounding;
    if (c->set & ORC_K_FMA) q.fma = k->fma;
    if (c->set & ORC_K_PRODUCT) q.product = k->product;
    if (c->set & ORC_K_TREE) q.tree = k->tree;
    if (c->set & ORC_K_ATOM) {
        q.has_atom = k->has_atom;
        q.atom_frac_bits = k->atom_frac_bits;
        q.atom_term_round = k->atom_term_round;
        q.atom_round = k->atom_round;
        q.atom_acc = k->atom_acc;
        q.atom_align = k->atom_align;
    }
    if (c->set & ORC_K_OUT) q.out = k->out;
    if (c->set & ORC_K_OUT_ROUNDING) q.out_rounding = k->out_rounding;
    if (c->set & ORC_K_SATURATE) q.saturate = k->saturate;
    return q;
}

/* the name of the format `out` resolves to */
static const char *out_name(const orc_point *p)
{
    return p->out ? p->out : p->acc ? p->acc : "fp32";
}

int orc_reduce_rows(const orc_point *p, const orc_rowclass *classes, size_t nclasses,
                    const int64_t grid[2], size_t R,
                    const char *in_fmt, const char *b_fmt,
                    const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
                    const char *c_fmt, const uint64_t *c_bits,
                    uint64_t *out_bits, char *err, size_t errlen)
{
    char msg[512];
    uint64_t dummy;
    if (err && errlen)
        err[0] = 0;
    if (!p || (nclasses && !classes) || (R && !out_bits))
        return set_err(err, errlen, "missing point, classes or output");
    if (R && n && !a_bits)
        return set_err(err, errlen, "missing inputs");
    if (grid && (grid[0] < 1 || grid[1] < 1 || grid[0] > INT64_MAX / grid[1] ||
                 (uint64_t)(grid[0] * grid[1]) != (uint64_t)R))
        return set_err(err, errlen, "grid: [%lld, %lld] does not lay out %zu rows",
                       (long long)grid[0], (long long)grid[1], R);
    /* the point, and every class whether a row selects it or not */
    if (orc_reduce_c(p, in_fmt, b_fmt, NULL, NULL, 0, NULL, NULL, &dummy, msg, sizeof msg))
        return set_err(err, errlen, "%s", msg);
    for (size_t k = 0; k < nclasses; k++) {
        const orc_rowclass *c = &classes[k];
        if (c->set & (ORC_K_ROWS | ORC_K_GRID))
            return set_err(err, errlen, "rows[%zu]: a class may not hold %s", k,
                           c->set & ORC_K_ROWS ? "rows" : "grid");
        if (sel_run(c->select, 0, (int64_t)R, (int64_t)n, grid, 0, NULL, msg, sizeof msg))
            return set_err(err, errlen, "rows[%zu]: %s", k, msg);
        orc_point q = class_point(p, c);
        if (strcmp(out_name(&q), out_name(p)) != 0)
            return set_err(err, errlen, "rows[%zu]: out is %s, the point's is %s (one output tensor)",
                           k, out_name(&q), out_name(p));
        if (orc_reduce_c(&q, in_fmt, b_fmt, NULL, NULL, 0, NULL, NULL, &dummy, msg, sizeof msg))
            return set_err(err, errlen, "rows[%zu]: %s", k, msg);
    }
    for (size_t r = 0; r < R; r++) {
        long which;
        if (orc_row_class(classes, nclasses, grid, R, r, n, &which, err, errlen))
            return 1;
        orc_point q = which >= 0 ? class_point(p, &classes[which]) : *p;
        if (orc_reduce_c(&q, in_fmt, b_fmt, a_bits ? a_bits + r * n : NULL, b_bits ? b_bits + r * n : NULL,
                         n, c_fmt, c_bits ? c_bits + r : NULL, &out_bits[r], msg, sizeof msg))
            return which >= 0 ? set_err(err, errlen, "row %zu (rows[%ld]): %s", r, which, msg)
                              : set_err(err, errlen, "row %zu: %s", r, msg);
    }
    return 0;
}
