/* recognise.c: a revealed tree named in the point language.
 *
 * Two trees have the same bracketing when their unordered shapes agree
 * (an addition is commutative, bit for bit).  Each tree is reduced to one
 * 64-bit hash: a term hashes its index, a node the sorted hashes of its
 * children; +0 operands (halving's padding, an empty slice, the +0 a seq
 * starts from) are left out and a node of one operand is that operand.  A
 * candidate is expanded by the project's own expansion (nx_program_build)
 * and hashed the same way.  Candidates come from the families of docs/
 * numerics.md §4 with their parameters drawn from the structure (powers of
 * two up to n, the lane counts and block sizes of real kernels); when none
 * matches, a binary tree is written as `expr(...)`. */
#include "reveal.h"

#include "nx_program.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t combine(uint64_t *h, int k)
{
    if (k == 0)
        return 0;
    if (k == 1)
        return h[0];
    if (k == 2) {
        if (h[0] > h[1]) {
            uint64_t x = h[0];
            h[0] = h[1];
            h[1] = x;
        }
    } else
        qsort(h, (size_t)k, sizeof *h, cmp_u64);
    uint64_t r = mix(0x5eedULL + (uint64_t)k);
    for (int i = 0; i < k; i++)
        r = mix(r ^ h[i]);
    return r ? r : 1;
}

static uint64_t leaf_hash(int t)
{
    uint64_t r = mix(0x1eafULL ^ ((uint64_t)t << 8));
    return r ? r : 1;
}

static uint64_t tree_hash(const rv_tree *t, int i)
{
    const rv_node *n = &t->node[i];
    if (n->leaf >= 0)
        return leaf_hash(n->leaf);
    uint64_t *h = malloc((size_t)n->nch * sizeof *h);
    if (!h)
        return 0;
    for (int k = 0; k < n->nch; k++)
        h[k] = tree_hash(t, n->ch[k]);
    uint64_t r = combine(h, n->nch);
    free(h);
    return r;
}

static uint64_t src_hash(const uint64_t *oph, int32_t s)
{
    if (NX_SRC_IS_TERM(s))
        return leaf_hash(s);
    return oph[NX_SRC_OP(s)];
}

static uint64_t program_hash(const nx_program *p)
{
    uint64_t *oph = calloc(p->nops ? p->nops : 1, sizeof *oph);
    if (!oph)
        return 0;
    uint64_t buf[64], *h = buf;
    size_t hcap = 64;
    for (size_t i = 0; i < p->nops; i++) {
        const nx_op *op = &p->ops[i];
        int k = 0;
        switch (op->kind) {
        case NX_OP_ZERO:
        case NX_OP_START:
            oph[i] = 0;
            break;
        case NX_OP_LEAF:
            oph[i] = src_hash(oph, op->x);
            break;
        case NX_OP_ADD:
            if ((h[k] = src_hash(oph, op->x)))
                k++;
            if ((h[k] = src_hash(oph, op->y)))
                k++;
            oph[i] = combine(h, k);
            break;
        case NX_OP_ATOM:
            if ((size_t)op->gn + 1 > hcap) {
                uint64_t *nh = malloc(((size_t)op->gn + 1) * sizeof *nh);
                if (!nh) {
                    if (h != buf)
                        free(h);
                    free(oph);
                    return 0;
                }
                if (h != buf)
                    free(h);
                h = nh;
                hcap = (size_t)op->gn + 1;
            }
            if ((h[k] = src_hash(oph, op->x)))
                k++;
            for (int g = 0; g < op->gn; g++)
                if ((h[k] = src_hash(oph, p->gsrc[op->y + g])))
                    k++;
            oph[i] = combine(h, k);
            break;
        default:
            oph[i] = 0;
        }
    }
    uint64_t r = src_hash(oph, p->result);
    if (h != buf)
        free(h);
    free(oph);
    return r;
}

/* The hash of a candidate tree text at n, or 0 when it does not expand. */
static uint64_t cand_hash(const char *text, size_t n)
{
    nx_point pt;
    nx_err e;
    uint64_t r = 0;
    if (nx_point_init(&pt, &e))
        return 0;
    if (!nx_point_set_tree(&pt, text, "candidate", &e)) {
        if (strstr(text, "chain(")) {
            pt.atom.present = 1;
            pt.atom.frac_bits = -1;
            pt.atom.term_round = NX_RZ;
            pt.atom.round = -1;
            pt.atom.acc = -1;
        }
        nx_program *p = NULL;
        if (!nx_program_build(&pt, n, 1, &p, &e)) {
            r = program_hash(p);
            nx_program_free(p);
        }
    }
    nx_point_free(&pt);
    return r;
}

/* The lengths a candidate must hold at: its expansion at each n[i] has
 * the bracketing whose hash is want[i]. */
typedef struct search {
    size_t m;
    size_t n[RV_INDUCE_MAX];
    uint64_t want[RV_INDUCE_MAX];
    char *found;
    size_t tried;
} search;

static int try1(search *s, const char *text)
{
    if (s->found)
        return 1;
    s->tried++;
    for (size_t i = 0; i < s->m; i++)
        if (cand_hash(text, s->n[i]) != s->want[i])
            return 0;
    s->found = strdup(text);
    return 1;
}

/* expr(...) for a binary tree; NULL when a node has more than two children
 * or the terms are not 0 ... n-1. */
static int expr_of(const rv_tree *t, int i, char **p, size_t *len, size_t *cap)
{
    const rv_node *nd = &t->node[i];
    char b[16];
    if (nd->leaf < 0 && nd->nch != 2)
        return -1;
    if (nd->leaf >= 0) {
        snprintf(b, sizeof b, "%d", nd->leaf);
        size_t l = strlen(b);
        if (*len + l + 1 > *cap) {
            *cap = (*len + l + 1) * 2;
            char *q = realloc(*p, *cap);
            if (!q)
                return -1;
            *p = q;
        }
        memcpy(*p + *len, b, l + 1);
        *len += l;
        return 0;
    }
    const char *parts[3] = {"(", " + ", ")"};
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(parts[k]);
        if (*len + l + 1 > *cap) {
            *cap = (*len + l + 1) * 2 + 64;
            char *q = realloc(*p, *cap);
            if (!q)
                return -1;
            *p = q;
        }
        memcpy(*p + *len, parts[k], l + 1);
        *len += l;
        if (k < 2 && expr_of(t, nd->ch[k], p, len, cap))
            return -1;
    }
    return 0;
}

/* A running sum (every inner node holds a leaf, but the lowest) whose
 * terms come in a fixed permutation of each block of k: "order([...], seq)";
 * NULL otherwise. */
static char *order_of(const rv_tree *t, size_t n)
{
    int *seqv = malloc(n * sizeof *seqv);
    if (!seqv)
        return NULL;
    size_t m = n;
    int i = t->root;
    while (m > 0) {
        const rv_node *nd = &t->node[i];
        if (nd->leaf >= 0) {
            seqv[--m] = nd->leaf;
            break;
        }
        if (nd->nch != 2)
            break;
        int l0 = t->node[nd->ch[0]].leaf, l1 = t->node[nd->ch[1]].leaf;
        if (l0 >= 0 && l1 >= 0 && m == 2) {
            /* the first two terms: either order is the same addition */
            seqv[1] = l0 > l1 ? l0 : l1;
            seqv[0] = l0 > l1 ? l1 : l0;
            m = 0;
            break;
        }
        if (l1 >= 0) {
            seqv[--m] = l1;
            i = nd->ch[0];
        } else if (l0 >= 0) {
            seqv[--m] = l0;
            i = nd->ch[1];
        } else
            break;
    }
    char *out = NULL;
    uint64_t want = m == 0 ? tree_hash(t, t->root) : 0;
    /* the first pair of a running sum is unordered: both readings */
    for (int sw = 0; sw < 2 && m == 0 && !out; sw++) {
        if (sw) {
            int x = seqv[0];
            seqv[0] = seqv[1];
            seqv[1] = x;
        }
        for (size_t k = 2; k <= 16 && k <= n && !out; k++) {
            size_t full = n / k * k;
            int ok = 1;
            for (size_t x = 0; x < full && ok; x++)
                ok = (size_t)seqv[x] / k == x / k && seqv[x] % (int)k == seqv[x % k];
            for (size_t x = full; x < n && ok; x++)
                ok = (size_t)seqv[x] == x;
            if (!ok)
                continue;
            char b[256];
            size_t l = (size_t)snprintf(b, sizeof b, "order([");
            for (size_t x = 0; x < k; x++)
                l += (size_t)snprintf(b + l, sizeof b - l, "%s%d", x ? ", " : "", seqv[x]);
            snprintf(b + l, sizeof b - l, "], seq)");
            if (cand_hash(b, n) == want)
                out = strdup(b);
        }
    }
    free(seqv);
    return out;
}

/* Per node: its least and greatest term, and the residue mod L all its
 * terms share (-1: mixed). */
typedef struct span {
    int lo, hi, res;
} span;

static span span_of(const rv_tree *t, int i, int L, span *sp)
{
    const rv_node *nd = &t->node[i];
    span r;
    if (nd->leaf >= 0)
        r = (span){nd->leaf, nd->leaf, nd->leaf % L};
    else {
        r = (span){1 << 30, -1, -2};
        for (int k = 0; k < nd->nch; k++) {
            span c = span_of(t, nd->ch[k], L, sp);
            if (c.lo < r.lo)
                r.lo = c.lo;
            if (c.hi > r.hi)
                r.hi = c.hi;
            r.res = r.res == -2 ? c.res : r.res == c.res ? r.res : -1;
        }
    }
    sp[i] = r;
    return r;
}

/* The combine of L lanes as an expr over lane indices: below node i, a
 * node whose terms are all of lane l and all of that lane's terms in
 * [0, m) is the lane l. */
static int lanes_expr(const rv_tree *t, int i, int L, size_t m, const span *sp, char *b, size_t cap, size_t *len)
{
    const rv_node *nd = &t->node[i];
    const span *x = &sp[i];
    if (x->res >= 0) {
        size_t want = x->res < (int)m ? (m - 1 - (size_t)x->res) / (size_t)L + 1 : 0;
        if ((size_t)nd->size != want || x->lo != x->res)
            return -1;
        int k = snprintf(b + *len, cap - *len, "%d", x->res);
        if (k < 0 || *len + (size_t)k >= cap)
            return -1;
        *len += (size_t)k;
        return 0;
    }
    if (nd->nch != 2 || *len + 8 >= cap)
        return -1;
    b[(*len)++] = '(';
    if (lanes_expr(t, nd->ch[0], L, m, sp, b, cap, len))
        return -1;
    memcpy(b + *len, " + ", 3);
    *len += 3;
    if (lanes_expr(t, nd->ch[1], L, m, sp, b, cap, len) || *len + 2 >= cap)
        return -1;
    b[(*len)++] = ')';
    b[*len] = 0;
    return 0;
}

/* stride(L, seq, expr(C)) and body(B, stride(L, seq, expr(C)), T[, carry])
 * with C the lanes' combine read off the tree: a strided loop whose lane
 * partials are combined in an order no family names (a hand-written
 * reduction), the lanes kept as running sums (so that fma applies). */
/* The tails of a vector body: a scalar loop, a reduction of the remainder,
 * or the remainder in chunks of a narrower vector (BLIS's generic sdot:
 * pairs, then one term, each added to the body's running sum). */
static const char *const tails_all[] = {"seq",
                                        "pairwise",
                                        "halving",
                                        "reverse(seq)",
                                        "tile(2, seq, seq)",
                                        "tile(4, seq, seq)",
                                        "tile(4, pairwise, seq)",
                                        "tile(8, pairwise, seq)"};
#define NTAILS (sizeof tails_all / sizeof *tails_all)

static void lanes_form(const rv_tree *t, size_t n, search *s)
{
    const char *const *tails = tails_all;
    span *sp = malloc(t->count * sizeof *sp);
    size_t cap = 1 << 16;
    char *b = malloc(cap), *cand = malloc(cap + 256);
    if (!sp || !b || !cand)
        goto done;
    for (int L = 2; L <= 64 && (size_t)L < n && !s->found; L *= 2) {
        for (int B = L; B <= 64 * L && !s->found; B *= 2) {
            size_t m = n - n % (size_t)B;
            if (m < (size_t)L)
                break;
            span_of(t, t->root, L, sp);
            /* the body's node: terms exactly [0, m) */
            int body = -1;
            for (size_t i = 0; i < t->count && body < 0; i++)
                if (sp[i].lo == 0 && sp[i].hi == (int)m - 1 && (size_t)t->node[i].size == m)
                    body = (int)i;
            size_t len = 0;
            if (body < 0 || lanes_expr(t, body, L, m, sp, b, cap, &len))
                continue;
            if (m == n) {
                snprintf(cand, cap + 256, "stride(%d, seq, expr(%s))", L, b);
                try1(s, cand); /* held at every length, this one included */
                break; /* no tail: larger B give the same */
            }
            for (size_t tl = 0; tl < NTAILS && !s->found; tl++)
                for (int carry = 0; carry < 2 && !s->found; carry++) {
                    snprintf(cand, cap + 256, "body(%d, stride(%d, seq, expr(%s)), %s%s)", B, L, b, tails[tl],
                             carry ? ", carry" : "");
                    try1(s, cand);
                }
        }
    }
done:
    free(sp);
    free(b);
    free(cand);
}

int rv_tree_is(const rv_tree *t, const char *text, size_t n)
{
    if (!t->count || t->root < 0)
        return 0;
    uint64_t h = cand_hash(text, n);
    return h && h == tree_hash(t, t->root);
}

char *rv_recognise(const rv_tree *t, size_t n)
{
    return rv_recognise_hinted(t, n, NULL, 0);
}

char *rv_recognise_hinted(const rv_tree *t, size_t n, char *const *hints, size_t nhints)
{
    return rv_recognise_lengths(&t, &n, 1, hints, nhints);
}

char *rv_recognise_lengths(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints,
                           size_t nhints)
{
    if (m < 1 || m > RV_INDUCE_MAX)
        return NULL;
    search s = {.m = m};
    size_t n = 0; /* the values below are drawn up to the largest length */
    for (size_t i = 0; i < m; i++) {
        if (!trees[i]->count || trees[i]->root < 0)
            return NULL;
        s.n[i] = ns[i];
        s.want[i] = tree_hash(trees[i], trees[i]->root);
        if (ns[i] > n)
            n = ns[i];
    }
    const rv_tree *t = trees[0];
    for (size_t h = 0; h < nhints; h++)
        if (try1(&s, hints[h]))
            return s.found;
    static const char *const base[] = {"seq", "pairwise", "halving", "reverse(seq)"};
    static const char *const comb[] = {"seq", "pairwise", "halving"};
    char buf[256];
    size_t nb = sizeof base / sizeof *base, nc = sizeof comb / sizeof *comb;
    size_t vals[32], nv = 0;
    for (size_t v = 2; v < n && nv < 24; v *= 2)
        vals[nv++] = v;
    static const size_t odd[] = {3, 5, 6, 7, 12, 24, 48, 96, 320};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++)
        if (odd[i] < n)
            vals[nv++] = odd[i];
    static const int groups[] = {2, 4, 8, 16, 32, 64};
    static const int blocks[] = {1, 2, 4, 8, 16};

    for (size_t i = 0; i < nb; i++)
        if (try1(&s, base[i]))
            return s.found;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        snprintf(buf, sizeof buf, "chain(%d)", groups[g]);
        if (try1(&s, buf))
            return s.found;
    }
    /* one level: stride, split, tile over a base tree or a chain */
    for (size_t v = 0; v < nv; v++)
        for (size_t i = 0; i < nb + 6; i++) {
            char inner[32];
            if (i < nb)
                snprintf(inner, sizeof inner, "%s", base[i]);
            else
                snprintf(inner, sizeof inner, "chain(%d)", groups[i - nb]);
            for (size_t c = 0; c < nc; c++) {
                snprintf(buf, sizeof buf, "split(%zu, %s, %s)", vals[v], inner, comb[c]);
                if (try1(&s, buf))
                    return s.found;
                snprintf(buf, sizeof buf, "tile(%zu, %s, %s)", vals[v], inner, comb[c]);
                if (try1(&s, buf))
                    return s.found;
                for (size_t bl = 0; bl < sizeof blocks / sizeof *blocks; bl++) {
                    if (blocks[bl] == 1)
                        snprintf(buf, sizeof buf, "stride(%zu, %s, %s)", vals[v], inner, comb[c]);
                    else
                        snprintf(buf, sizeof buf, "stride(%zu, %s, %s, block=%d)", vals[v], inner, comb[c], blocks[bl]);
                    if (try1(&s, buf))
                        return s.found;
                }
            }
        }
    /* two levels: split or tile of a strided loop; a vector body with a
     * scalar tail */
    size_t np2 = 0;
    while (np2 < nv && vals[np2] == (size_t)2 << np2)
        np2++;
    for (size_t v = 0; v < np2; v++)
        for (size_t l = 0; l < np2 && vals[l] <= 64; l++)
            for (size_t c1 = 0; c1 < nc; c1++)
                for (size_t bl = 0; bl < 4; bl++) {
                    char inner[96];
                    if (blocks[bl] == 1)
                        snprintf(inner, sizeof inner, "stride(%zu, seq, %s)", vals[l], comb[c1]);
                    else
                        snprintf(inner, sizeof inner, "stride(%zu, seq, %s, block=%d)", vals[l], comb[c1], blocks[bl]);
                    for (size_t c2 = 0; c2 < nc; c2++) {
                        if (vals[v] <= 64) {
                            snprintf(buf, sizeof buf, "split(%zu, %s, %s)", vals[v], inner, comb[c2]);
                            if (try1(&s, buf))
                                return s.found;
                        }
                        snprintf(buf, sizeof buf, "tile(%zu, %s, %s)", vals[v], inner, comb[c2]);
                        if (try1(&s, buf))
                            return s.found;
                    }
                    if (v == 0) {
                        for (size_t tl = 0; tl < NTAILS; tl++) {
                            size_t L = vals[l] * (size_t)blocks[bl];
                            snprintf(buf, sizeof buf, "body(%zu, %s, %s)", L, inner, tails_all[tl]);
                            if (try1(&s, buf))
                                return s.found;
                            snprintf(buf, sizeof buf, "body(%zu, %s, %s, carry)", L, inner, tails_all[tl]);
                            if (try1(&s, buf))
                                return s.found;
                        }
                    }
                }
    /* K blocking with a halved remainder (a level-3 BLAS) */
    for (size_t v = 0; v < nv; v++)
        for (int al = 1; al <= 16; al *= 2)
            for (size_t c = 0; c < nc; c++) {
                snprintf(buf, sizeof buf, "tile(%zu, seq, %s, halve=%d)", vals[v], comb[c], al);
                if (try1(&s, buf))
                    return s.found;
            }
    /* read off each length's tree, held at every length: a running sum over
     * permuted blocks, order([...], seq); lanes combined by hand */
    for (size_t i = 0; i < m; i++) {
        char *perm = order_of(trees[i], ns[i]);
        if (perm) {
            int hit = try1(&s, perm);
            free(perm);
            if (hit)
                return s.found;
        }
    }
    for (size_t i = 0; i < m && !s.found; i++)
        lanes_form(trees[i], ns[i], &s);
    if (s.found)
        return s.found;
    /* a binary tree the families above do not name: its bracketing, which
     * names one length only */
    if (m > 1)
        return NULL;
    size_t len = 5, cap = 64;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    memcpy(p, "expr(", 6);
    if (expr_of(t, t->root, &p, &len, &cap)) {
        free(p);
        return NULL;
    }
    char *q = realloc(p, len + 2);
    if (!q) {
        free(p);
        return NULL;
    }
    memcpy(q + len, ")", 2);
    /* n must be covered: expr takes exactly the terms 0 ... n-1 */
    return q;
}
