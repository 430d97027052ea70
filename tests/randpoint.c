/* randpoint.c: random numerics points and inputs (see randpoint.h).  Moved
 * out of test_oracle.c unchanged, so the oracle comparison draws the same
 * cases from the same seeds as before. */
#include "randpoint.h"
#include "nx_format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Generated trees are at most three levels deep, far below the buffers. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

static uint64_t rng_state;
static uint64_t rng_c_state; /* the start values' stream */

void rp_seed(uint64_t seed)
{
    rng_state = seed;
    rng_c_state = seed ^ 0x6a09e667f3bcc909ull;
}

uint64_t rp_rand(void)
{
    /* splitmix64: small, good enough, reproducible */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int rp_below(int n) { return (int)(rp_rand() % (uint64_t)n); }

static const char *const fmts[] = {"fp64", "fp32", "tf32", "fp16", "bf16", "e5m2", "e4m3",
                                   "e3m2", "e2m3", "e2m1", "e8m0", "e8m13"};
/* Formats as inputs: every format with a storage of its own (tf32/e8m13 come
 * through `in`). */
static const char *const in_fmts[] = {"fp64", "fp32", "fp16", "bf16", "e5m2", "e4m3",
                                      "e3m2", "e2m3", "e2m1", "e8m0"};
/* Accumulator formats: signed, with zero. */
static const char *const acc_fmts[] = {"fp64", "fp32", "tf32", "fp16", "bf16", "e8m13",
                                       "e5m2", "e4m3", "e3m2", "e2m3", "e2m1"};
static const char *const modes[] = {"rne", "rna", "rz", "ru", "rd"};

#define PICK(a) (a[rp_below((int)(sizeof a / sizeof a[0]))])

/* Accumulators mostly wide (interesting bits), sometimes narrow. */
static const char *pick_acc(void)
{
    int r = rp_below(10);
    if (r < 4) return "fp32";
    if (r < 6) return "bf16";
    if (r < 7) return "fp16";
    return PICK(acc_fmts);
}

int rp_edition = 2;

static void gen_tree(char *buf, size_t cap, int depth, int has_atom);

/* A random bracketing of the indices perm[0..k) into buf. */
static void gen_brk(char *buf, size_t cap, const int *perm, int k)
{
    if (k == 1) {
        snprintf(buf, cap, "%d", perm[0]);
        return;
    }
    int h = 1 + rp_below(k - 1);
    char x[256], y[256];
    gen_brk(x, sizeof x, perm, h);
    gen_brk(y, sizeof y, perm + h, k - h);
    snprintf(buf, cap, "(%s + %s)", x, y);
}

static void shuffle(int *perm, int k)
{
    for (int i = 0; i < k; i++)
        perm[i] = i;
    for (int i = k - 1; i > 0; i--) {
        int j = rp_below(i + 1), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

/* lanes(W, [stage, ...], C) (docs/numerics.md §4.2): W in 1 ... 8, one to
 * four stages of loop (with U, sixth edition), peel and fold, each valid
 * at the width live when it runs, one time in four a last rest(L), and a
 * random combinator. */
static void gen_lanes(char *buf, size_t cap, int depth, int has_atom)
{
    char st[400] = "", c[512], lb[1024];
    int W = 1 + rp_below(8), w = W, k = 1 + rp_below(4);
    size_t l = 0;
    for (int s = 0; s < k; s++) {
        const char *sep = s ? ", " : "";
        int r = rp_below(3);
        if (r == 0) { /* loop(B): mostly as wide as the lanes; loop(B, U) (sixth edition) one time in three */
            int B = rp_below(3) ? w : 1 + rp_below(w);
            if (rp_below(3))
                l += (size_t)snprintf(st + l, sizeof st - l, "%sloop(%d)", sep, B);
            else
                l += (size_t)snprintf(st + l, sizeof st - l, "%sloop(%d, %d)", sep, B, B * (1 + rp_below(4)));
        } else if (r == 1) { /* peel(B, M): M > B can fire, M <= B never does */
            int B = 1 + rp_below(w);
            int M = rp_below(6) ? B + 1 + rp_below(8) : 1 + rp_below(B);
            l += (size_t)snprintf(st + l, sizeof st - l, "%speel(%d, %d)", sep, B, M);
        } else { /* fold(V, [...]): V divides w; the R = w/V registers, shuffled, in 1 ... R brackets */
            int divs[8], nd = 0;
            for (int v = 1; v <= w; v++)
                if (w % v == 0)
                    divs[nd++] = v;
            int V = divs[rp_below(nd)], R = w / V, nb = 1 + rp_below(R), perm[8], cut[9];
            shuffle(perm, R);
            /* nb groups of consecutive positions of perm, each non-empty */
            cut[0] = 0;
            cut[nb] = R;
            for (int g = 1; g < nb; g++)
                cut[g] = g; /* then moved right at random, keeping them increasing */
            for (int g = nb - 1; g >= 1; g--) {
                int hi = cut[g + 1] - 1;
                cut[g] += rp_below(hi - cut[g] + 1);
            }
            l += (size_t)snprintf(st + l, sizeof st - l, "%sfold(%d, [", sep, V);
            for (int g = 0; g < nb; g++) {
                char br[128];
                gen_brk(br, sizeof br, perm + cut[g], cut[g + 1] - cut[g]);
                l += (size_t)snprintf(st + l, sizeof st - l, "%s%s", g ? ", " : "", br);
            }
            l += (size_t)snprintf(st + l, sizeof st - l, "])");
            w = nb * V;
        }
    }
    if (!rp_below(4)) /* rest(L), the last stage (sixth edition) */
        l += (size_t)snprintf(st + l, sizeof st - l, ", rest(%d)", rp_below(w));
    gen_tree(c, sizeof c, depth + 1, has_atom);
    snprintf(lb, sizeof lb, "lanes(%d, [%s], %s)", W, st, c);
    if (strlen(lb) >= cap) /* a long combinator would not fit: seq */
        snprintf(lb, sizeof lb, "lanes(%d, [%s], seq)", W, st);
    snprintf(buf, cap, "%s", lb);
}

/* The third edition's forms (docs/numerics.md §4.1); from edition 4 also
 * lanes (two draws in seven); from edition 8 head as often as body. */
static void gen_tree3(char *buf, size_t cap, int depth, int has_atom)
{
    char t[512], u[512], c[512], b[300];
    int perm[8];
    switch (rp_below(rp_edition >= 4 ? 7 : 5)) {
    case 0:
        gen_tree(t, sizeof t, depth + 1, has_atom);
        gen_tree(u, sizeof u, depth + 1, has_atom);
    {
        /* eighth edition: the remainder first, head(L, U, T, ...) */
        const char *kw = rp_edition >= 8 && rp_below(2) ? "head" : "body";
        switch (rp_below(3)) {
        case 0: snprintf(buf, cap, "%s(%d, %s, %s)", kw, 1 + rp_below(8), t, u); break;
        case 1: snprintf(buf, cap, "%s(%d, %s, %s, carry)", kw, 1 + rp_below(8), t, u); break;
        default:
            gen_tree(c, sizeof c, depth + 1, has_atom);
            snprintf(buf, cap, "%s(%d, %s, %s, %s)", kw, 1 + rp_below(8), t, u, c);
            break;
        }
        break;
    }
    case 1: {
        gen_tree(t, sizeof t, depth + 1, has_atom);
        gen_tree(c, sizeof c, depth + 1, has_atom);
        int m = 1 + rp_below(3), l = 0;
        char sizes[64];
        for (int i = 0; i < m; i++)
            l += snprintf(sizes + l, sizeof sizes - (size_t)l, "%s%d", i ? ", " : "", 1 + rp_below(6));
        /* fifth edition: each tile from the running value */
        snprintf(buf, cap, "tile([%s], %s, %s)", sizes, t, rp_edition >= 5 && rp_below(3) == 0 ? "carry" : c);
        break;
    }
    case 2:
        gen_tree(t, sizeof t, depth + 1, has_atom);
        gen_tree(c, sizeof c, depth + 1, has_atom);
        if (rp_edition >= 5 && rp_below(3) == 0)
            snprintf(buf, cap, "tile(%d, %s, carry%s)", 1 + rp_below(6), t, rp_below(2) ? ", halve=2" : "");
        else
            snprintf(buf, cap, "tile(%d, %s, %s, halve=%d)", 1 + rp_below(6), t, c, 1 + rp_below(4));
        break;
    case 3: {
        int k = 2 + rp_below(3), l = 0;
        shuffle(perm, k);
        char ord[64];
        for (int i = 0; i < k; i++)
            l += snprintf(ord + l, sizeof ord - (size_t)l, "%s%d", i ? ", " : "", perm[i]);
        gen_tree(t, sizeof t, depth + 1, has_atom);
        snprintf(buf, cap, "order([%s], %s)", ord, t);
        break;
    }
    case 4: {
        int k = 1 + rp_below(5);
        shuffle(perm, k);
        gen_brk(b, sizeof b, perm, k);
        gen_tree(c, sizeof c, depth + 1, has_atom);
        snprintf(buf, cap, "tile(%d, expr(%s), %s)", k, b, c);
        break;
    }
    default:
        gen_lanes(buf, cap, depth, has_atom);
        break;
    }
}

static void gen_tree(char *buf, size_t cap, int depth, int has_atom)
{
    if (rp_edition >= 3 && depth <= 2 && rp_below(3) == 0) {
        gen_tree3(buf, cap, depth, has_atom);
    } else {
        int k = rp_below(depth > 2 ? 4 : 10);
        char t[512], c[512];
        switch (k) {
        case 0: snprintf(buf, cap, rp_below(12) ? "seq" : "atomic"); break;
        case 1: snprintf(buf, cap, "pairwise"); break;
        case 2: snprintf(buf, cap, "halving"); break;
        case 3:
            if (has_atom) snprintf(buf, cap, "chain(%d)", 1 + rp_below(9));
            else snprintf(buf, cap, "seq");
            break;
        case 4: gen_tree(t, sizeof t, depth + 1, has_atom); snprintf(buf, cap, "reverse(%s)", t); break;
        case 5: case 6:
            gen_tree(t, sizeof t, depth + 1, has_atom);
            gen_tree(c, sizeof c, depth + 1, has_atom);
            if (rp_below(3) == 0) snprintf(buf, cap, "split(%d, %s, %s, align=%d)", 1 + rp_below(6), t, c, 1 + rp_below(5));
            else snprintf(buf, cap, "split(%d,%s,%s)", 1 + rp_below(6), t, c);
            break;
        case 7:
            gen_tree(t, sizeof t, depth + 1, has_atom);
            gen_tree(c, sizeof c, depth + 1, has_atom);
            snprintf(buf, cap, "tile(%d, %s, %s)", 1 + rp_below(7), t, c);
            break;
        default:
            gen_tree(t, sizeof t, depth + 1, has_atom);
            gen_tree(c, sizeof c, depth + 1, has_atom);
            if (rp_below(2)) snprintf(buf, cap, "stride(%d, %s, %s, block=%d)", 1 + rp_below(5), t, c, 1 + rp_below(4));
            else snprintf(buf, cap, "stride(%d, %s, %s)", 1 + rp_below(5), t, c);
            break;
        }
    }
    if (rp_below(8) == 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "@%s", pick_acc());
    }
    if (rp_edition >= 3 && rp_below(6) == 0) {
        /* subtree settings: one to three of fma, product, rounding */
        static const char *const prods[] = {"exact", "fp32", "bf16", "fp16", "tf32"};
        char set[96] = "";
        int l = 0, which = 1 + rp_below(7);
        if (which & 1)
            l += snprintf(set + l, sizeof set - (size_t)l, "%sfma=%s", l ? ", " : "", rp_below(2) ? "true" : "false");
        if (which & 2)
            l += snprintf(set + l, sizeof set - (size_t)l, "%sproduct=%s", l ? ", " : "", PICK(prods));
        if (which & 4)
            l += snprintf(set + l, sizeof set - (size_t)l, "%srounding=%s", l ? ", " : "", PICK(modes));
        size_t bl = strlen(buf);
        snprintf(buf + bl, cap - bl, "[%s]", set);
    }
    if (rp_edition >= 7 && rp_below(6) == 0) {
        /* seventh edition: the subtree's result stored in a format (with
         * the settings above in one list where there are some) */
        size_t bl = strlen(buf);
        if (bl && buf[bl - 1] == ']')
            snprintf(buf + bl - 1, cap - bl + 1, ", store=%s]", pick_acc());
        else
            snprintf(buf + bl, cap - bl, "[store=%s]", pick_acc());
    }
}

static int storage_bits(const char *f)
{
    if (!strcmp(f, "fp64")) return 64;
    if (!strcmp(f, "fp32")) return 32;
    if (!strcmp(f, "fp16") || !strcmp(f, "bf16")) return 16;
    if (!strcmp(f, "e3m2") || !strcmp(f, "e2m3")) return 6;
    if (!strcmp(f, "e2m1")) return 4;
    return 8;
}

/* A random pattern: uniform bits, or a value near a common scale (so sums
 * cancel and carry), a signed zero, or the negation of an earlier term. */
int rp_rare = 0;

/* The rare paths on purpose: short mantissas (products and sums exact, so
 * running sums cancel to exact zeros), exact negations, subnormal-only
 * values, in every format with 16 bits or more. */
static int gen_rare(const char *f, const uint64_t *prev, size_t nprev, int scale_exp, uint64_t *out)
{
    nx_fmt fmt = (nx_fmt)nx_fmt_from_name(f);
    const nx_format_info *fi = nx_format(fmt);
    int sb = storage_bits(f);
    if (sb < 16)
        return 0;
    int r = rp_below(8);
    if (r == 0 && nprev) {
        *out = prev[rp_below((int)nprev)] ^ (1ull << (sb - 1));
        return 1;
    }
    double v;
    if (r == 1) { /* a subnormal of the format: k quanta */
        v = ldexp((double)(1 + rp_below(7)), fi->emin - fi->p + 1);
    } else {
        int e = scale_exp + rp_below(4) - 2;
        if (e < fi->emin)
            e = fi->emin;
        if (e > fi->emin + 2 * fi->bias - 2)
            e = fi->emin + 2 * fi->bias - 2;
        v = ldexp((double)(8 + rp_below(8)) / 8.0, e); /* 1, 1.125, ..., 1.875 */
    }
    if (rp_below(2))
        v = -v;
    nx_err err;
    return nx_encode(fmt, v, out, &err) == NX_OK;
}

uint64_t rp_gen_bits(const char *f, const uint64_t *prev, size_t nprev, int scale_exp)
{
    uint64_t rb;
    if (rp_rare && rp_below(2) && gen_rare(f, prev, nprev, scale_exp, &rb))
        return rb;
    int sb = storage_bits(f);
    uint64_t mask = sb == 64 ? ~0ull : (1ull << sb) - 1;
    int r = rp_below(16);
    if (r == 0)
        return rp_below(2) ? (1ull << (sb - 1)) : 0; /* ±0 */
    if (r <= 2 && nprev)
        return prev[rp_below((int)nprev)] ^ (1ull << (sb - 1)); /* exact cancellation */
    if (sb >= 32 && r <= 12) {
        /* a value near 2^scale_exp, random mantissa; occasionally subnormal */
        double v = ldexp(1.0 + (double)(rp_rand() >> 11) * 0x1p-53, scale_exp + rp_below(6) - 3);
        if (rp_below(20) == 0)
            v = ldexp((double)(rp_rand() >> 40), sb == 64 ? -1074 : -149);
        if (rp_below(2))
            v = -v;
        if (sb == 64) {
            uint64_t b;
            memcpy(&b, &v, 8);
            return b;
        }
        float fv = (float)v; /* rounding here only picks the input; it is exact afterwards */
        uint32_t b;
        memcpy(&b, &fv, 4);
        return b;
    }
    uint64_t b = rp_rand() & mask;
    if (sb >= 32 && rp_below(4)) { /* avoid too many NaN/inf for wide formats */
        int eb = sb == 64 ? 11 : 8, mb = sb == 64 ? 52 : 23;
        uint64_t e = (b >> mb) & ((1ull << eb) - 1);
        if (e == (1ull << eb) - 1)
            b &= ~(1ull << mb);
    }
    return b;
}

uint64_t rp_gen_c_bits(const char *f, int scale_exp)
{
    /* the generator of the terms, run on the c stream */
    uint64_t main_state = rng_state;
    rng_state = rng_c_state;
    uint64_t bits = rp_gen_bits(f, NULL, 0, scale_exp);
    rng_c_state = rng_state;
    rng_state = main_state;
    return bits;
}

/* Whether the case has c, c's format and c's scale, from the c stream. */
static void gen_c(rp_case *c, int scale)
{
    uint64_t main_state = rng_state;
    rng_state = rng_c_state;
    c->has_c = rp_below(3) == 0;
    int r = rp_below(8);
    c->c_fmt = r < 3 ? c->in_fmt : r < 4 ? c->b_fmt : r < 5 ? "fp64" : PICK(in_fmts);
    c->c_scale = scale + rp_below(12) - 6;
    rng_c_state = rng_state;
    rng_state = main_state;
    c->c = c->has_c ? rp_gen_c_bits(c->c_fmt, c->c_scale) : 0;
}

void rp_case_make(rp_case *c)
{
    memset(c, 0, sizeof *c);
    orc_point *p = &c->op;
    p->acc = pick_acc();
    p->rounding = rp_below(2) ? "rne" : PICK(modes);
    p->fma = rp_below(4) != 0;
    p->atom_frac_bits = -1;
    if (rp_below(6) == 0) { p->in = PICK(fmts); if (!strcmp(p->in, "e8m0")) p->in = "tf32"; p->in_rounding = PICK(modes); }
    if (rp_below(6) == 0) p->product = PICK(acc_fmts);
    p->has_atom = rp_below(3) == 0;
    if (p->has_atom) {
        p->atom_frac_bits = rp_below(4) ? rp_below(30) : -1;
        if (rp_below(3) == 0) p->atom_term_round = PICK(modes);
        if (rp_below(3) == 0) p->atom_round = PICK(modes);
        if (rp_below(3) == 0) p->atom_acc = rp_below(2) ? "e8m13" : pick_acc();
        int al = rp_below(3); /* absent (the default, "operands"), "operands", "values" */
        p->atom_align = al == 0 ? NULL : al == 1 ? "operands" : "values";
    }
    if (rp_below(3) == 0) p->out = rp_below(4) ? pick_acc() : PICK(fmts);
    if (rp_below(4) == 0) p->out_rounding = PICK(modes);
    p->saturate = rp_below(5) == 0;
    gen_tree(c->tree, sizeof c->tree, 0, p->has_atom);
    if (p->has_atom && rp_below(2)) /* make chains common when there is an atom */
        snprintf(c->tree, sizeof c->tree, rp_below(2) ? "chain(%d)" : "split(%d, chain(4), seq)", 1 + rp_below(8));
    p->tree = c->tree;

    char *s = c->toml;
    size_t cap = sizeof c->toml, l = 0;
    l += (size_t)snprintf(s + l, cap - l, "{ acc = \"%s\", rounding = \"%s\", fma = %s, tree = \"%s\"", p->acc,
                          p->rounding, p->fma ? "true" : "false", p->tree);
    if (p->in)
        l += (size_t)snprintf(s + l, cap - l, ", in = \"%s\", in_rounding = \"%s\"", p->in, p->in_rounding);
    if (p->product)
        l += (size_t)snprintf(s + l, cap - l, ", product = \"%s\"", p->product);
    if (p->has_atom) {
        l += (size_t)snprintf(s + l, cap - l, ", atom = { term_round = \"%s\"",
                              p->atom_term_round ? p->atom_term_round : "rz");
        if (p->atom_frac_bits >= 0)
            l += (size_t)snprintf(s + l, cap - l, ", frac_bits = %d", p->atom_frac_bits);
        if (p->atom_round)
            l += (size_t)snprintf(s + l, cap - l, ", round = \"%s\"", p->atom_round);
        if (p->atom_acc)
            l += (size_t)snprintf(s + l, cap - l, ", acc = \"%s\"", p->atom_acc);
        if (p->atom_align)
            l += (size_t)snprintf(s + l, cap - l, ", align = \"%s\"", p->atom_align);
        l += (size_t)snprintf(s + l, cap - l, " }");
    }
    if (p->out)
        l += (size_t)snprintf(s + l, cap - l, ", out = \"%s\"", p->out);
    if (p->out_rounding)
        l += (size_t)snprintf(s + l, cap - l, ", out_rounding = \"%s\"", p->out_rounding);
    snprintf(s + l, cap - l, ", saturate = %s }", p->saturate ? "true" : "false");

    c->dot = rp_below(3) != 0;
    c->in_fmt = PICK(in_fmts);
    c->b_fmt = rp_below(4) == 0 ? PICK(in_fmts) : c->in_fmt;
    c->n = (size_t)rp_below(rp_below(5) == 0 ? 64 : 20);
    int scale = rp_below(40) - 20;
    for (size_t i = 0; i < c->n; i++) {
        c->a[i] = rp_gen_bits(c->in_fmt, c->a, i, scale);
        c->b[i] = rp_gen_bits(c->b_fmt, c->b, i, rp_below(10) - 5);
    }
    gen_c(c, scale);
}

void rp_case_dump(const rp_case *c, uint64_t seed, long idx, const char *why)
{
    fprintf(stderr, "MISMATCH (seed %llu, case %ld): %s\n  point: %s\n  %s n=%zu a:%s%s%s\n", (unsigned long long)seed,
            idx, why, c->toml, c->dot ? "dot" : "sum", c->n, c->in_fmt, c->dot ? " b:" : "",
            c->dot ? c->b_fmt : "");
    if (c->has_c)
        fprintf(stderr, "  c: %s 0x%llx\n", c->c_fmt, (unsigned long long)c->c);
    for (size_t i = 0; i < c->n; i++) {
        fprintf(stderr, "  t%zu: a=0x%llx", i, (unsigned long long)c->a[i]);
        if (c->dot)
            fprintf(stderr, " b=0x%llx", (unsigned long long)c->b[i]);
        fputc('\n', stderr);
    }
}

