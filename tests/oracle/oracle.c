/* oracle.c: the exact test oracle.  See oracle.h.
 *
 * Values are `oval`: a kind (finite, inf, NaN), a sign flag and an exact
 * rational.  Every rounding goes through oround(), every sum through oadd(),
 * every product through omul().  Nothing here uses floating point. */
#include "oracle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Formats (NUMERICS.md section 1, interpretations 1 and 2)            */
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
/* Tree language (section 4): parser                                   */
/* ------------------------------------------------------------------ */

enum { T_SEQ, T_PAIRWISE, T_HALVING, T_ATOMIC, T_CHAIN, T_REVERSE, T_SPLIT, T_TILE, T_STRIDE };

typedef struct tnode {
    int kind;
    long n;            /* chain N, split S, tile T0, stride L */
    long opt;          /* split align A, stride block V (default 1) */
    struct tnode *t;   /* inner tree (reverse, split, tile, stride) */
    struct tnode *c;   /* combinator (split, tile, stride) */
    const fmt_t *fmt;  /* X@FMT, NULL = inherit */
} tnode;

static void tfree(tnode *t)
{
    if (!t)
        return;
    tfree(t->t);
    tfree(t->c);
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

/* a positive decimal integer (>= 1, < 2^31) */
static int read_int(parser *P, long *v)
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
    if (x < 1) {
        P->pos = start;
        perr(P, "integer must be at least 1");
        return 0;
    }
    *v = x;
    return 1;
}

static tnode *parse_tree(parser *P, int depth);

/* '(' INT ',' tree ',' tree [ ',' KEY '=' INT ] ')'; key NULL: no option */
static int parse_three(parser *P, tnode *n, const char *key, int depth)
{
    if (!expect(P, '(') || !read_int(P, &n->n) || !expect(P, ','))
        return 0;
    if (!(n->t = parse_tree(P, depth + 1)) || !expect(P, ','))
        return 0;
    if (!(n->c = parse_tree(P, depth + 1)))
        return 0;
    skip_ws(P);
    if (key && P->s[P->pos] == ',') {
        P->pos++;
        char name[32];
        if (!read_ident(P, name, sizeof name))
            return 0;
        if (strcmp(name, key) != 0) {
            perr(P, "expected '%s='", key);
            return 0;
        }
        if (!expect(P, '=') || !read_int(P, &n->opt))
            return 0;
    }
    return expect(P, ')');
}

static tnode *parse_tree(parser *P, int depth)
{
    if (depth > 200) {
        perr(P, "tree nested too deeply");
        return NULL;
    }
    char name[32];
    if (!read_ident(P, name, sizeof name))
        return NULL;
    tnode *n = calloc(1, sizeof *n);
    if (!n) {
        perr(P, "out of memory");
        return NULL;
    }
    n->opt = 1;
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
        ok = parse_three(P, n, NULL, depth);
    } else if (strcmp(name, "stride") == 0) {
        n->kind = T_STRIDE;
        ok = parse_three(P, n, "block", depth);
    } else {
        P->pos -= strlen(name);
        perr(P, "unknown tree '%s'", name);
        ok = 0;
    }
    if (ok) {
        skip_ws(P);
        if (P->s[P->pos] == '@') {
            P->pos++;
            char fname[32];
            ok = read_ident(P, fname, sizeof fname);
            if (ok && !(n->fmt = find_fmt(fname))) {
                P->pos -= strlen(fname);
                perr(P, "unknown format '%s'", fname);
                ok = 0;
            }
        }
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

typedef struct ctx {
    int mode;              /* R: the point's rounding */
    int fma;
    const fmt_t *prod;     /* NULL: products exact */
    int has_atom;
    int frac_bits;         /* -1: none */
    int term_round;
    int atom_round;
    const fmt_t *atom_acc; /* NULL: the current format */
    int align_values;      /* 1: every addend aligns by its value (first edition) */
    const fmt_t *opa, *opb; /* the formats a product's operands are members of */
    char *err;
    size_t errlen;
} ctx;

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
static int tvalue(ctx *C, const fmt_t *F, const term *t, oval *v)
{
    if (!t->is_prod) {
        ov_set(v, &t->a);
        return 0;
    }
    oval p;
    ov_init(&p);
    omul(&t->a, &t->b, &p);
    int rc = round_or_err(C, C->prod ? C->prod : F, C->mode, &p, v, "product");
    ov_clear(&p);
    return rc;
}

/* leaf(t) = round(value(t)) */
static int leaf(ctx *C, const fmt_t *F, const term *t, oval *r)
{
    oval v;
    ov_init(&v);
    int rc = tvalue(C, F, t, &v);
    if (!rc)
        rc = round_or_err(C, F, C->mode, &v, r, "leaf");
    ov_clear(&v);
    return rc;
}

/* r = round(x + y) in F */
static int radd(ctx *C, const fmt_t *F, const oval *x, const oval *y, oval *r)
{
    oval s;
    ov_init(&s);
    oadd(C->mode, x, y, &s);
    int rc = round_or_err(C, F, C->mode, &s, r, "sum");
    ov_clear(&s);
    return rc;
}

/* step(s, t); r may alias s */
static int step(ctx *C, const fmt_t *F, const oval *s, const term *t, oval *r)
{
    oval v, sum;
    ov_init(&v);
    ov_init(&sum);
    int rc = 0;
    if (C->fma && !C->prod && t->is_prod) {
        omul(&t->a, &t->b, &v);            /* exact product, one rounding */
        oadd(C->mode, &v, s, &sum);
        rc = round_or_err(C, F, C->mode, &sum, r, "fma");
    } else {
        rc = tvalue(C, F, t, &v);
        if (!rc)
            rc = radd(C, F, s, &v, r);
    }
    ov_clear(&v);
    ov_clear(&sum);
    return rc;
}

/* atom(s, group) of section 5, result in the atom's acc (default F) */
static int atom(ctx *C, const fmt_t *F, const oval *s, const term *const *g, size_t m, oval *r)
{
    const fmt_t *acc = C->atom_acc ? C->atom_acc : F;
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
    rc = round_or_err(C, acc, C->atom_round, &sum, r, "atom result");
    ov_clear(&sum);
    for (size_t i = 0; i < na; i++)
        ov_clear(&ad[i]);
    free(ad);
    return rc;
}

static int eval(ctx *C, const tnode *node, const fmt_t *F, const term *const *ts, size_t n,
                const oval *s0, oval *out);

/* reduces already computed values vs[0..k) by the combinator node, from the
 * start value s0 (NULL: none) */
static int combine(ctx *C, const tnode *node, const fmt_t *F, const oval *vs, size_t k,
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
    int rc = eval(C, node, F, pt, k, s0, out);
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

/* The partials of split/tile/stride reduced by the combinator: a seq
 * combinator starts from s0, any other combinator C gives round(C + s0),
 * in the split's format F (a combinator's own @FMT applies inside it). */
static int combine_from(ctx *C, const tnode *comb, const fmt_t *F, const oval *vs, size_t k,
                        const oval *s0, oval *out)
{
    if (!s0 || comb->kind == T_SEQ)
        return combine(C, comb, F, vs, k, s0, out);
    oval v;
    ov_init(&v);
    int rc = combine(C, comb, F, vs, k, NULL, &v);
    if (!rc)
        rc = radd(C, F, &v, s0, out);
    ov_clear(&v);
    return rc;
}

static int eval_pairwise(ctx *C, const fmt_t *F, const term *const *ts, size_t n, oval *out)
{
    if (n == 0) {
        ov_zero(out, 0);
        return 0;
    }
    if (n == 1)
        return leaf(C, F, ts[0], out);
    size_t h = (n + 1) / 2;
    oval x, y;
    ov_init(&x);
    ov_init(&y);
    int rc = eval_pairwise(C, F, ts, h, &x);
    if (!rc)
        rc = eval_pairwise(C, F, ts + h, n - h, &y);
    if (!rc)
        rc = radd(C, F, &x, &y, out);
    ov_clear(&x);
    ov_clear(&y);
    return rc;
}

/* out = round(v + s0) in F: a tree that does not start from s0 meets it in
 * one addition ("Reducing from a start value s0", section 4.1) */
static int plus_start(ctx *C, const fmt_t *F, const oval *v, const oval *s0, oval *out)
{
    if (!s0) {
        ov_set(out, v);
        return 0;
    }
    return radd(C, F, v, s0, out);
}

/* Reduces ts[0..n) by node from the start value s0 (NULL: from scratch).
 * Section 4.1: seq and chain start with s = s0; reverse passes s0 to its
 * tree; split/tile/stride pass it to a seq combinator (the parts are
 * always from scratch); @FMT only changes F; every other tree T gives
 * round(T + s0). */
static int eval(ctx *C, const tnode *node, const fmt_t *F, const term *const *ts, size_t n,
                const oval *s0, oval *out)
{
    if (node->fmt)
        F = node->fmt;  /* X@FMT: X's additions in FMT */
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
            rc = step(C, F, &s, ts[i], &s);
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
            rc = step(C, F, &s, ts[i], &s);
        if (!rc)
            rc = plus_start(C, F, &s, s0, out);
        ov_clear(&s);
        return rc;
    }
    case T_PAIRWISE: {
        oval v;
        ov_init(&v);
        rc = eval_pairwise(C, F, ts, n, &v);
        if (!rc)
            rc = plus_start(C, F, &v, s0, out);
        ov_clear(&v);
        return rc;
    }
    case T_HALVING: {
        if (n == 0) {
            oval z;
            ov_init(&z);
            ov_zero(&z, 0);
            rc = plus_start(C, F, &z, s0, out);
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
                rc = leaf(C, F, ts[j], &v[j]);
            else
                ov_zero(&v[j], 0);
        }
        for (size_t o = w / 2; o >= 1 && !rc; o /= 2)
            for (size_t j = 0; j < o && !rc; j++)
                rc = radd(C, F, &v[j], &v[j + o], &v[j]);
        if (!rc)
            rc = plus_start(C, F, &v[0], s0, out);
        ov_array_free(v, w);
        return rc;
    }
    case T_REVERSE: {
        const term **r = malloc((n ? n : 1) * sizeof *r);
        if (!r)
            return cerr(C, "out of memory");
        for (size_t i = 0; i < n; i++)
            r[i] = ts[n - 1 - i];
        rc = eval(C, node->t, F, r, n, s0, out);  /* T from s0 on the reversed terms */
        free(r);
        return rc;
    }
    case T_SPLIT: {
        size_t S = (size_t)node->n, A = (size_t)node->opt;
        size_t c = (n + S - 1) / S;
        c = (c + A - 1) / A * A;                 /* up to a multiple of A */
        oval *part = ov_array(S);
        if (!part)
            return cerr(C, "out of memory");
        for (size_t k = 0; k < S && !rc; k++) {
            size_t lo = k * c < n ? k * c : n;   /* k*c cannot overflow: c <= n + A, S < 2^31 */
            size_t hi = (k + 1) * c < n ? (k + 1) * c : n;
            if (hi <= lo)
                ov_zero(&part[k], 0);            /* an empty slice gives +0 */
            else
                rc = eval(C, node->t, F, ts + lo, hi - lo, NULL, &part[k]);
        }
        if (!rc)
            rc = combine_from(C, node->c, F, part, S, s0, out);
        ov_array_free(part, S);
        return rc;
    }
    case T_TILE: {
        size_t T0 = (size_t)node->n;
        size_t k = (n + T0 - 1) / T0;
        oval *part = ov_array(k);
        if (!part)
            return cerr(C, "out of memory");
        for (size_t i = 0; i < k && !rc; i++) {
            size_t lo = i * T0, hi = lo + T0 < n ? lo + T0 : n;
            rc = eval(C, node->t, F, ts + lo, hi - lo, NULL, &part[i]);
        }
        if (!rc)
            rc = combine_from(C, node->c, F, part, k, s0, out);
        ov_array_free(part, k);
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
                rc = eval(C, node->t, F, lane, m, NULL, &part[l]);
        }
        if (!rc)
            rc = combine_from(C, node->c, F, part, L, s0, out);
        ov_array_free(part, L);
        free(lane);
        return rc;
    }
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
            rc = atom(C, F, &s, ts + lo, m, &s);
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
    atom_round = mode;
    if (p->has_atom) {
        if (p->atom_frac_bits < -1)
            return set_err(err, errlen, "atom.frac_bits: must be >= 0 (or -1 for none), got %d",
                           p->atom_frac_bits);
        if (opt_mode(p->atom_term_round, M_RZ, &term_round, "atom.term_round", err, errlen) ||
            opt_mode(p->atom_round, mode, &atom_round, "atom.round", err, errlen) ||
            opt_fmt(p->atom_acc, NULL, &atom_acc, "atom.acc", err, errlen))
            return 1;
    }
    if (!(fa = find_fmt(in_fmt)))
        return set_err(err, errlen, "input format: unknown format '%s'", in_fmt ? in_fmt : "(null)");
    if (opt_fmt(b_fmt, fa, &fb, "b format", err, errlen))
        return 1;

    tnode *root = parse_text(p->tree ? p->tree : "seq", err, errlen);
    if (!root)
        return 1;

    int align_values = 0;
    if (p->has_atom && p->atom_align) {
        if (strcmp(p->atom_align, "values") == 0)
            align_values = 1;
        else if (strcmp(p->atom_align, "operands") != 0)
            return set_err(err, errlen, "atom.align: unknown rule '%s'", p->atom_align);
    }
    ctx C = {mode, p->fma, prod, p->has_atom, p->has_atom ? p->atom_frac_bits : -1,
             term_round, atom_round, atom_acc, align_values, in ? in : fa, in ? in : fb, err, errlen};

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
        rc = eval(&C, root, acc, pt, n, c_bits ? &cv : NULL, &res);
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
