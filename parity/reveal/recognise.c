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

#include <pthread.h>
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

/* Visits every node of t once, children before parents, by an explicit
 * stack: a running sum of 65,536 terms is that deep, too deep for
 * recursion.  visit(t, i, ctx) returns 0, or -1 to stop (returned). */
static int post_order(const rv_tree *t, int (*visit)(const rv_tree *, int, void *), void *ctx)
{
    int *stk = malloc((t->count ? t->count : 1) * sizeof *stk);
    char *done = calloc(t->count ? t->count : 1, 1);
    int rc = 0;
    if (!stk || !done)
        rc = -1;
    for (size_t i0 = 0; i0 < t->count && !rc; i0++) {
        if (done[i0])
            continue;
        size_t sp = 0;
        stk[sp++] = (int)i0;
        while (sp && !rc) {
            int i = stk[sp - 1];
            const rv_node *nd = &t->node[i];
            if (done[i]) {
                sp--;
                continue;
            }
            int ready = 1;
            for (int k = 0; k < nd->nch; k++)
                if (!done[nd->ch[k]]) {
                    stk[sp++] = nd->ch[k]; /* each node is pushed once per parent: sp < count */
                    ready = 0;
                }
            if (!ready)
                continue;
            rc = visit(t, i, ctx);
            done[i] = 1;
            sp--;
        }
    }
    free(stk);
    free(done);
    return rc;
}

static int hash_one(const rv_tree *t, int i, void *ctx)
{
    uint64_t *h = ctx, buf[8];
    const rv_node *nd = &t->node[i];
    if (nd->leaf >= 0) {
        h[i] = leaf_hash(nd->leaf);
        return 0;
    }
    uint64_t *x = nd->nch <= 8 ? buf : malloc((size_t)nd->nch * sizeof *x);
    if (!x)
        return -1;
    for (int k = 0; k < nd->nch; k++)
        x[k] = h[nd->ch[k]];
    h[i] = combine(x, nd->nch);
    if (x != buf)
        free(x);
    return 0;
}

/* Every node's hash into h, each computed once. */
static int hash_all(const rv_tree *t, uint64_t *h)
{
    return post_order(t, hash_one, h);
}

/* The hash of node i's subtree (0: out of memory), by hash_all: no
 * recursion, however deep the tree. */
static uint64_t tree_hash(const rv_tree *t, int i)
{
    uint64_t *h = calloc(t->count ? t->count : 1, sizeof *h), r = 0;
    if (h && !hash_all(t, h))
        r = h[i];
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

/* Candidate hashes already computed, by (text, n), for the whole process:
 * an expansion is the costly step, a candidate's hash at n never changes,
 * and reveal names trees over mostly the same candidates again and again
 * (every class, every length, the one-, two- and three-row paths).  A
 * text longer than HC_TEXT_MAX (an order or lanes read off one tree, long
 * at large n and tried once) is not kept; the table is emptied when it
 * reaches HC_MAX entries or HC_MAX_BYTES of text, so it stays under about
 * 40 MB.  It is guarded for the library's callers on several threads. */
typedef struct hc_ent {
    uint64_t key;
    size_t n;
    char *text;
    uint64_t val;
} hc_ent;

static struct {
    hc_ent *e;
    size_t cap, count, bytes;
} hc;
static pthread_mutex_t hc_lock = PTHREAD_MUTEX_INITIALIZER;
#define HC_MAX ((size_t)1 << 18)
#define HC_MAX_BYTES ((size_t)24 << 20)
#define HC_TEXT_MAX 512

static uint64_t text_key(const char *t)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 0x100000001b3ULL;
    return h;
}

/* The slot of (k, n, text) in the table (locked, with room): the entry
 * itself, or the empty slot it would take. */
static hc_ent *hc_slot(uint64_t k, const char *text, size_t n)
{
    size_t j = k & (hc.cap - 1);
    for (; hc.e[j].text; j = (j + 1) & (hc.cap - 1))
        if (hc.e[j].key == k && hc.e[j].n == n && !strcmp(hc.e[j].text, text))
            break;
    return &hc.e[j];
}

/* Room for one more entry (locked): 0 when the table cannot grow. */
static int hc_room(void)
{
    if (hc.count >= HC_MAX || hc.bytes >= HC_MAX_BYTES) {
        for (size_t i = 0; i < hc.cap; i++)
            free(hc.e[i].text);
        memset(hc.e, 0, hc.cap * sizeof *hc.e);
        hc.count = hc.bytes = 0;
    }
    if (hc.cap && hc.count * 2 < hc.cap)
        return 1;
    size_t nc = hc.cap ? 2 * hc.cap : 4096;
    hc_ent *ne = calloc(nc, sizeof *ne);
    if (!ne)
        return 0;
    for (size_t i = 0; i < hc.cap; i++)
        if (hc.e[i].text) {
            size_t j = hc.e[i].key & (nc - 1);
            while (ne[j].text)
                j = (j + 1) & (nc - 1);
            ne[j] = hc.e[i];
        }
    free(hc.e);
    hc.e = ne;
    hc.cap = nc;
    return 1;
}

/* cand_hash(text, n), through the table (an entry that cannot be stored
 * is computed again next time). */
static uint64_t cached_hash(const char *text, size_t n)
{
    uint64_t k = text_key(text) ^ mix(n);
    pthread_mutex_lock(&hc_lock);
    if (hc.cap) {
        hc_ent *e = hc_slot(k, text, n);
        if (e->text) {
            uint64_t v = e->val;
            pthread_mutex_unlock(&hc_lock);
            return v;
        }
    }
    pthread_mutex_unlock(&hc_lock);
    uint64_t v = cand_hash(text, n);
    size_t len = strlen(text);
    char *t = len <= HC_TEXT_MAX ? strdup(text) : NULL;
    if (!t)
        return v;
    pthread_mutex_lock(&hc_lock);
    if (hc_room()) {
        hc_ent *e = hc_slot(k, text, n);
        if (!e->text) {
            *e = (hc_ent){k, n, t, v};
            hc.count++;
            hc.bytes += len + 1;
            t = NULL;
        }
    }
    pthread_mutex_unlock(&hc_lock);
    free(t);
    return v;
}

/* The lengths a candidate must hold at: its expansion at each n[i] has
 * the bracketing whose hash is want[i]. */
typedef struct search {
    size_t m;
    size_t n[RV_INDUCE_MAX];
    uint64_t want[RV_INDUCE_MAX];
    char *found;
    size_t tried;
    char *const *excl; /* names already found: passed over */
    size_t nexcl;
} search;

static int try1(search *s, const char *text)
{
    if (s->found)
        return 1;
    for (size_t i = 0; i < s->nexcl; i++)
        if (!strcmp(s->excl[i], text))
            return 0;
    s->tried++;
    for (size_t i = 0; i < s->m; i++)
        if (cached_hash(text, s->n[i]) != s->want[i])
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

/* ---- lanes read off a bracketing ----
 * A vector kernel whose registers outlive a loop (docs/numerics.md §4.2,
 * `lanes`) leaves its structure in the bracketing: every lane is a running
 * sum, a fold adds lanes of several registers, the combine adds the last
 * lanes.  The reader simulates the stages over hashes (a lane's value is
 * the hash of its bracketing, built with the same combine as tree_hash)
 * and keeps a stage only where every lane it leaves is a subtree of the
 * revealed tree: the loop width from the distances between a running
 * sum's consecutive terms, a peeled head before the first loop, each fold's
 * brackets read off the nodes that add whole lanes, and the combine read
 * off the nodes above the last lanes.  Every form it builds is a
 * candidate like any other: try1 expands it at every length. */
#define LR_MAXW 256
#define LR_DEPTH 4

typedef struct lr_hn {
    uint64_t h;
    int node;
} lr_hn;

typedef struct lr_ctx {
    const rv_tree *t;
    size_t m;           /* the lanes hold terms 0 .. m-1 */
    int top;            /* the node whose terms are exactly 0 .. m-1 */
    uint64_t *h;        /* per node */
    int *parent;        /* per node; -1 at the root */
    lr_hn *byh;         /* nodes sorted by hash */
    signed char *pure;  /* per node, scratch of fold reading */
    search *s;
    int B, tail, carry; /* the body(B, ..., tails_all[tail][, carry]) around, B = 0: none */
    size_t tried;       /* lanes forms expanded (bounded) */
} lr_ctx;

static int cmp_hn(const void *a, const void *b)
{
    uint64_t x = ((const lr_hn *)a)->h, y = ((const lr_hn *)b)->h;
    return x < y ? -1 : x > y;
}

/* The node with hash h, or -1. */
static int lr_node(const lr_ctx *c, uint64_t h)
{
    lr_hn key = {h, 0};
    const lr_hn *f = bsearch(&key, c->byh, c->t->count, sizeof *c->byh, cmp_hn);
    return f ? f->node : -1;
}

static uint64_t lr_add(uint64_t a, uint64_t b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    uint64_t x[2] = {a, b};
    return combine(x, 2);
}

/* Appends text to a stage list; 0, or -1 when it does not fit. */
static int lr_cat(char *b, size_t cap, const char *fmt, int x, int y)
{
    size_t l = strlen(b);
    int k = snprintf(b + l, cap - l, fmt, x, y);
    return k < 0 || l + (size_t)k >= cap ? -1 : 0;
}

/* The combine over lanes v[0 .. w) read below node i: a node that is lane
 * l is "l", any other must be a binary node. */
static int lr_comb(const lr_ctx *c, int i, const uint64_t *v, int w, char *b, size_t cap, size_t *len)
{
    const rv_node *nd = &c->t->node[i];
    for (int l = 0; l < w; l++)
        if (v[l] == c->h[i]) {
            int k = snprintf(b + *len, cap - *len, "%d", l);
            if (k < 0 || *len + (size_t)k >= cap)
                return -1;
            *len += (size_t)k;
            return 0;
        }
    if (nd->leaf >= 0 || nd->nch != 2 || *len + 8 >= cap)
        return -1;
    b[(*len)++] = '(';
    if (lr_comb(c, nd->ch[0], v, w, b, cap, len))
        return -1;
    memcpy(b + *len, " + ", 3);
    *len += 3;
    if (lr_comb(c, nd->ch[1], v, w, b, cap, len) || *len + 2 >= cap)
        return -1;
    b[(*len)++] = ')';
    b[*len] = 0;
    return 0;
}

/* One candidate: lanes(W, [stages], comb), in the body around if any. */
static void lr_try(lr_ctx *c, int W, const char *stages, const char *comb)
{
    size_t cap = strlen(stages) + strlen(comb) + 256;
    char *x = malloc(cap);
    if (!x)
        return;
    c->tried++;
    if (c->B)
        snprintf(x, cap, "body(%d, lanes(%d, [%s], %s), %s%s)", c->B, W, stages, comb, tails_all[c->tail],
                 c->carry ? ", carry" : "");
    else
        snprintf(x, cap, "lanes(%d, [%s], %s)", W, stages, comb);
    try1(c->s, x);
    free(x);
}

/* Lanes v[0 .. w) after the stages so far, p terms taken: the last stage
 * (the rest in blocks of w, then the combine), or a fold read off the
 * tree, then another loop. */
static void lr_stage(lr_ctx *c, int W, int w, const uint64_t *v, size_t p, char *stages, size_t cap, int depth)
{
    if (c->s->found || c->tried > 4096)
        return;
    uint64_t f[LR_MAXW];
    memcpy(f, v, (size_t)w * sizeof *f);
    for (size_t q = p; q < c->m; q++)
        f[(q - p) % (size_t)w] = lr_add(f[(q - p) % (size_t)w], leaf_hash((int)q));
    int all = 1, ok = 1;
    for (int l = 0; l < w && ok; l++) {
        if (!f[l])
            all = 0;
        else if (lr_node(c, f[l]) < 0)
            ok = 0;
    }
    /* folded to one lane with terms still to come: a tail carried into the
     * body's value, which body(B, ..., carry) names (and can give its own
     * arithmetic) */
    if (ok && w == 1 && depth > 0 && p < c->m)
        ok = 0;
    if (ok) {
        static const char *const named[] = {"seq", "pairwise", "halving"};
        for (size_t k = 0; k < 3 && !c->s->found; k++)
            lr_try(c, W, stages, named[k]);
        size_t bcap = (size_t)w * 24 + 64, len = 5;
        char *b = malloc(bcap);
        if (b && all && !c->s->found) {
            memcpy(b, "expr(", 6);
            if (!lr_comb(c, c->top, f, w, b, bcap - 2, &len)) {
                memcpy(b + len, ")", 2);
                lr_try(c, W, stages, b);
            }
        }
        free(b);
    }
    if (depth >= LR_DEPTH || c->s->found)
        return;
    /* a fold: every lane is a subtree; the nodes made only of whole lanes
     * (pure) are the fold's brackets, the greatest of them its new lanes */
    int node[LR_MAXW];
    for (int l = 0; l < w; l++)
        if (!v[l] || (node[l] = lr_node(c, v[l])) < 0)
            return;
    const rv_tree *t = c->t;
    memset(c->pure, 0, t->count);
    for (int l = 0; l < w; l++)
        c->pure[node[l]] = 1;
    /* a node is pure when both its children are (bottom up: repeat) */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int l = 0; l < w; l++)
            for (int x = c->parent[node[l]]; x >= 0 && !c->pure[x]; x = c->parent[x]) {
                const rv_node *nd = &t->node[x];
                if (nd->nch != 2 || !c->pure[nd->ch[0]] || !c->pure[nd->ch[1]])
                    break;
                c->pure[x] = 1;
                changed = 1;
            }
    }
    int top[LR_MAXW];
    for (int l = 0; l < w; l++) {
        int x = node[l];
        while (c->parent[x] >= 0 && c->pure[c->parent[x]])
            x = c->parent[x];
        top[l] = x;
    }
    if (top[0] == node[0] && w > 1) {
        int lone = 1;
        for (int l = 1; l < w && lone; l++)
            lone = top[l] == node[l];
        if (lone)
            return; /* nothing folds */
    }
    /* the register width V: the greatest divisor of w below w such that
     * every bracket adds lanes of one index j within their registers, and
     * every j sees the same brackets */
    for (int V = w / 2; V >= 1; V--) {
        if (w % V)
            continue;
        int R = w / V, good = 1;
        for (int l = 0; l < w && good; l++)
            for (int l2 = 0; l2 < w && good; l2++)
                if (top[l] == top[l2] && l % V != l2 % V)
                    good = 0;
        if (!good)
            continue;
        /* the brackets of j = 0, ordered by their least register */
        int br[LR_MAXW], nb = 0;
        for (int q = 0; q < R; q++) {
            int seen = 0;
            for (int k = 0; k < nb && !seen; k++)
                seen = br[k] == top[q * V];
            if (!seen)
                br[nb++] = top[q * V];
        }
        /* lane j of register q must sit in the same bracket as lane 0 of q */
        for (int j = 1; j < V && good; j++)
            for (int q = 0; q < R && good; q++)
                for (int q2 = 0; q2 < R && good; q2++)
                    if ((top[q * V] == top[q2 * V]) != (top[q * V + j] == top[q2 * V + j]))
                        good = 0;
        if (!good || nb * V > LR_MAXW)
            continue;
        uint64_t nv[LR_MAXW];
        size_t l0 = strlen(stages);
        if (lr_cat(stages, cap, l0 ? ", fold(%d, [" : "fold(%d, [", V, 0))
            return;
        for (int k = 0; k < nb && good; k++) {
            /* the bracket over registers: lr_comb over register lane 0 */
            uint64_t regs[LR_MAXW];
            for (int q = 0; q < R; q++)
                regs[q] = v[q * V];
            size_t bl = strlen(stages);
            if (k && lr_cat(stages, cap, ", ", 0, 0))
                good = 0;
            bl = strlen(stages);
            if (good && lr_comb(c, br[k], regs, R, stages, cap - 2, &bl))
                good = 0;
            /* new lane k*V + j: the bracket that holds lane j of its registers */
            for (int j = 0; j < V && good; j++) {
                int q0 = -1;
                for (int q = 0; q < R && q0 < 0; q++)
                    if (top[q * V] == br[k])
                        q0 = q;
                nv[k * V + j] = c->h[top[q0 * V + j]];
            }
        }
        if (good && !lr_cat(stages, cap, "])", 0, 0)) {
            int nw = nb * V;
            size_t np = p;
            size_t l1 = strlen(stages);
            if (nw == 1)
                good = 0; /* a fold to one lane is the combine (an expr),
                           * and terms after it a carried tail, as above */
            else if (c->m - p >= (size_t)nw) {
                np = p + (c->m - p) / (size_t)nw * (size_t)nw;
                for (size_t q = p; q < np; q++)
                    nv[(q - p) % (size_t)nw] = lr_add(nv[(q - p) % (size_t)nw], leaf_hash((int)q));
                if (lr_cat(stages, cap, ", loop(%d)", nw, 0))
                    good = 0;
            }
            if (good)
                lr_stage(c, W, nw, nv, np, stages, cap, depth + 1);
            stages[l1] = 0;
        }
        stages[l0] = 0;
        return; /* the greatest V only */
    }
}

/* Candidate loop widths: the distances between consecutive terms of a
 * running sum, the most frequent first. */
static int lr_widths(const rv_tree *t, size_t n, int *out, int max)
{
    int *cnt = calloc(n + 1, sizeof *cnt);
    if (!cnt)
        return 0;
    for (size_t i = 0; i < t->count; i++) {
        const rv_node *nd = &t->node[i];
        if (nd->leaf >= 0 || nd->nch != 2)
            continue;
        for (int s = 0; s < 2; s++) {
            const rv_node *a = &t->node[nd->ch[s]], *x = &t->node[nd->ch[1 - s]];
            if (a->leaf < 0 || x->leaf >= 0 || x->nch != 2)
                continue;
            for (int u = 0; u < 2; u++) {
                int v = t->node[x->ch[u]].leaf;
                if (v >= 0 && a->leaf > v && a->leaf - v <= LR_MAXW)
                    cnt[a->leaf - v]++;
            }
        }
    }
    int k = 0;
    for (; k < max; k++) {
        int best = 0;
        for (size_t d = 2; d <= n; d++)
            if (cnt[d] > (best ? cnt[best] : 1))
                best = (int)d;
        if (!best)
            break;
        out[k] = best;
        cnt[best] = 0;
    }
    free(cnt);
    return k;
}

static void lanes_read(const rv_tree *t, size_t n, search *s)
{
    lr_ctx c = {.t = t, .s = s};
    span *sp = malloc(t->count * sizeof *sp);
    c.h = malloc(t->count * sizeof *c.h);
    c.parent = malloc(t->count * sizeof *c.parent);
    c.byh = malloc(t->count * sizeof *c.byh);
    c.pure = malloc(t->count);
    size_t cap = 1 << 15;
    char *stages = malloc(cap);
    int Ws[4];
    int nW = lr_widths(t, n, Ws, 4);
    if (!sp || !c.h || !c.parent || !c.byh || !c.pure || !stages || !nW)
        goto done;
    for (size_t i = 0; i < t->count; i++) {
        c.parent[i] = -1;
        c.h[i] = 0;
    }
    if (hash_all(t, c.h))
        goto done;
    for (size_t i = 0; i < t->count; i++) {
        c.byh[i] = (lr_hn){c.h[i], (int)i};
        for (int k = 0; k < t->node[i].nch; k++)
            c.parent[t->node[i].ch[k]] = (int)i;
    }
    qsort(c.byh, t->count, sizeof *c.byh, cmp_hn);
    span_of(t, t->root, 1, sp);
    /* the body: the first n - n % B terms under a tail, then all n terms
     * (a tail named as such can take arithmetic of its own; lanes that
     * fold to one and take the rest one by one are the same bracketing) */
    static const int Bs[] = {2, 4, 8, 16, 32, 64, 1};
    for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs && !s->found; bi++) {
        int B = Bs[bi];
        size_t m = n - n % (size_t)B;
        if (B > 1 && m == n)
            continue;
        c.m = m;
        c.top = -1;
        for (size_t i = 0; i < t->count && c.top < 0; i++)
            if (sp[i].lo == 0 && sp[i].hi == (int)m - 1 && (size_t)t->node[i].size == m)
                c.top = (int)i;
        if (c.top < 0 || m < 2)
            continue;
        for (int tl = 0; tl < (B > 1 ? (int)NTAILS : 1) && !s->found; tl++)
            for (int carry = 0; carry < (B > 1 ? 2 : 1) && !s->found; carry++) {
                c.B = B > 1 ? B : 0;
                c.tail = tl;
                c.carry = carry;
                c.tried = 0;
                for (int wi = 0; wi < nW && !s->found; wi++) {
                    int W = Ws[wi];
                    /* a peeled head of P terms into lanes 0 .. P-1 when
                     * m mod W >= P (P = 0: none) */
                    for (int P = 0; P < W && !s->found; P = P ? P * 2 : 1) {
                        if (P && (int)(m % (size_t)W) < P)
                            break;
                        uint64_t v[LR_MAXW] = {0};
                        size_t p = 0;
                        stages[0] = 0;
                        if (P) {
                            for (; p < (size_t)P; p++)
                                v[p] = leaf_hash((int)p);
                            lr_cat(stages, cap, "peel(%d, %d), ", P, W);
                        }
                        size_t np = p + (m - p) / (size_t)W * (size_t)W;
                        for (size_t q = p; q < np; q++)
                            v[(q - p) % (size_t)W] = lr_add(v[(q - p) % (size_t)W], leaf_hash((int)q));
                        lr_cat(stages, cap, "loop(%d)", W, 0);
                        lr_stage(&c, W, W, v, np, stages, cap, 0);
                    }
                }
            }
    }
done:
    free(sp);
    free(c.h);
    free(c.parent);
    free(c.byh);
    free(c.pure);
    free(stages);
}

int rv_tree_is(const rv_tree *t, const char *text, size_t n)
{
    if (!t->count || t->root < 0)
        return 0;
    uint64_t h = cached_hash(text, n);
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

static char *recognise(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints, size_t nhints,
                       char *const *excl, size_t nexcl);

char *rv_recognise_lengths(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints,
                           size_t nhints)
{
    return recognise(trees, ns, m, hints, nhints, NULL, 0);
}

size_t rv_recognise_names(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints, size_t nhints,
                          char **out, size_t max)
{
    size_t k = 0;
    while (k < max && k < RV_ALT_MAX + 1) {
        char *x = recognise(trees, ns, m, hints, nhints, out, k);
        if (!x)
            break;
        out[k++] = x;
    }
    return k;
}

uint64_t rv_text_hash(const char *text, size_t n)
{
    return cached_hash(text, n);
}

/* The trees with no parameter the recogniser tries first, and the
 * combinators of its composites. */
static const char *const base_trees[] = {"seq", "pairwise", "halving", "reverse(seq)"};
static const char *const comb_trees[] = {"seq", "pairwise", "halving"};
#define NBASE (sizeof base_trees / sizeof *base_trees)
#define NCOMB (sizeof comb_trees / sizeof *comb_trees)

/* --- carried blocks -------------------------------------------------------
 * A kernel that runs its columns in blocks of B1, then at most a few blocks
 * of B2 (dividing B1), ..., then the last columns one by one, each carried
 * into the running value (OpenBLAS sgemv N: 8, then 4, then 1).  Its tree
 * is a spine: the running value plus the next block, each block a subtree
 * of consecutive terms.  Read top down, the blocks' sizes never shrink;
 * bottom up they form levels B1 > B2 > ... of equal sizes, the first block
 * (term 0 on) of size B1.  Each level's first block is recognised on its
 * own at its length (a block always has exactly B terms, so any name of its
 * bracketing is right), and the levels are nested innermost first:
 *   body(B1, tile(B1, X1, seq), body(B2, tile(B2, X2, seq), seq, carry), carry)
 * the last level `seq` when it is single terms. */

static _Thread_local int in_block; /* recognising a block: no carried form inside */

typedef struct span_ctx {
    int *lo, *hi;
} span_ctx;

static int span_one(const rv_tree *t, int i, void *ctx)
{
    span_ctx *c = ctx;
    const rv_node *nd = &t->node[i];
    if (nd->leaf >= 0) {
        c->lo[i] = c->hi[i] = nd->leaf;
        return 0;
    }
    c->lo[i] = INT32_MAX;
    c->hi[i] = -1;
    for (int k = 0; k < nd->nch; k++) {
        if (c->lo[nd->ch[k]] < c->lo[i])
            c->lo[i] = c->lo[nd->ch[k]];
        if (c->hi[nd->ch[k]] > c->hi[i])
            c->hi[i] = c->hi[nd->ch[k]];
    }
    return 0;
}

/* Each node's least and greatest term into lo[], hi[]. */
static int spans(const rv_tree *t, int *lo, int *hi)
{
    span_ctx c = {lo, hi};
    return post_order(t, span_one, &c);
}

/* Node r's subtree as a tree of its own, its terms renumbered from 0
 * (less its least term, off); 0, or -1 out of memory. */
static int subtree(const rv_tree *t, int r, int off, rv_tree *out)
{
    memset(out, 0, sizeof *out);
    size_t cnt = (size_t)t->node[r].size * 2 + 1;
    int *map = malloc(t->count * sizeof *map), *stk = malloc(cnt * sizeof *stk);
    out->node = calloc(cnt, sizeof *out->node);
    if (!map || !stk || !out->node) {
        free(map);
        free(stk);
        free(out->node);
        out->node = NULL;
        return -1;
    }
    out->cap = cnt;
    /* preorder: a node's id before its children's, children filled after */
    size_t sp = 0;
    stk[sp++] = r;
    while (sp) {
        int i = stk[--sp];
        if (out->count == out->cap) /* not a tree: more nodes than 2 size - 1 */
            goto fail;
        map[i] = (int)out->count;
        rv_node *d = &out->node[out->count++];
        const rv_node *nd = &t->node[i];
        d->leaf = nd->leaf >= 0 ? nd->leaf - off : -1;
        d->size = nd->size;
        d->nch = nd->nch;
        if (nd->nch && !(d->ch = malloc((size_t)nd->nch * sizeof *d->ch)))
            goto fail;
        for (int k = 0; k < nd->nch; k++) {
            if (sp == cnt)
                goto fail;
            stk[sp++] = nd->ch[k];
        }
    }
    /* a second pass maps each copied node's children to their new ids */
    sp = 0;
    stk[sp++] = r;
    while (sp) {
        int i = stk[--sp];
        const rv_node *nd = &t->node[i];
        for (int k = 0; k < nd->nch; k++) {
            out->node[map[i]].ch[k] = map[nd->ch[k]];
            stk[sp++] = nd->ch[k];
        }
    }
    out->root = 0;
    free(map);
    free(stk);
    return 0;
fail:
    free(map);
    free(stk);
    rv_tree_free(out);
    return -1;
}

#define CB_MAX_LEVELS 4

#define CB_MAX_B 64 /* the widest block named: a vector kernel's registers */

typedef struct levels {
    size_t n;                 /* how many */
    size_t B[CB_MAX_LEVELS];  /* block sizes, widest first */
    char *X[CB_MAX_LEVELS];   /* each level's block named (NULL for single terms) */
} levels;

static void levels_free(levels *L)
{
    for (size_t l = 0; l < L->n; l++)
        free(L->X[l]);
    memset(L, 0, sizeof *L);
}

/* The levels of t's spine into *L (L->n = 0: t is no spine of blocks). */
static void carried_levels(const rv_tree *t, size_t n, levels *L)
{
    memset(L, 0, sizeof *L);
    if (in_block || n < 3 || !t->count)
        return;
    int *lo = malloc(t->count * sizeof *lo), *hi = malloc(t->count * sizeof *hi);
    size_t *sz = malloc(n * sizeof *sz);
    int *blk = malloc(n * sizeof *blk);
    size_t nbk = 0;
    if (!lo || !hi || !sz || !blk || spans(t, lo, hi))
        goto out;
    /* the spine, top down: (running value) + (block) */
    int i = t->root;
    size_t maxb = 0;
    for (;;) {
        const rv_node *nd = &t->node[i];
        if (nd->leaf >= 0 || nd->nch != 2)
            goto out;
        int a = nd->ch[0], b = nd->ch[1];
        int top = hi[b] == hi[i] ? b : a, rest = top == b ? a : b;
        if (lo[top] != hi[rest] + 1 || lo[rest] != lo[i])
            goto out;
        size_t bs = (size_t)(hi[top] - lo[top] + 1);
        size_t here = (size_t)(hi[i] - lo[i] + 1);
        if (bs < maxb) {
            /* a smaller block below a larger one: this node is the first
             * block (its own spine goes on: a running sum) */
            if (here % maxb || i == t->root)
                goto out;
            sz[nbk] = here;
            blk[nbk++] = i;
            break;
        }
        maxb = bs;
        sz[nbk] = bs;
        blk[nbk++] = top;
        size_t rem = (size_t)(hi[rest] - lo[rest] + 1);
        if (rem == maxb) { /* the first block */
            sz[nbk] = rem;
            blk[nbk++] = rest;
            break;
        }
        if (rem < maxb)
            goto out;
        i = rest;
    }
    /* the levels, bottom up (the spine's end first) */
    size_t B[CB_MAX_LEVELS], first[CB_MAX_LEVELS], nl = 0;
    for (size_t j = nbk; j-- > 0;) {
        if (nl && sz[j] == B[nl - 1])
            continue;
        if (nl == CB_MAX_LEVELS || (nl && B[nl - 1] % sz[j]))
            goto out;
        B[nl] = sz[j];
        first[nl++] = (size_t)blk[j];
    }
    /* each level's block, named at its length */
    char *X[CB_MAX_LEVELS] = {0};
    int ok = nl > 0 && B[0] <= CB_MAX_B;
    for (size_t l = 0; l < nl && ok; l++) {
        if (B[l] == 1)
            continue;
        rv_tree sub;
        int r = (int)first[l];
        if (subtree(t, r, lo[r], &sub)) {
            ok = 0;
            break;
        }
        const rv_tree *st = &sub;
        size_t bl = B[l];
        /* lanes first (stride(w, seq, C): each lane a chain of FMAs, the
         * form a vector block's registers take), then any name: `halving`
         * has the bracketing of stride(2, seq, seq) at 4 terms, not its
         * FMAs, which the arithmetic would then never find */
        uint64_t want = tree_hash(&sub, sub.root);
        char lt[96];
        for (size_t w = 2; w < bl && !X[l] && want; w *= 2)
            for (size_t c = 0; c < NCOMB && !X[l]; c++) {
                snprintf(lt, sizeof lt, "stride(%zu, seq, %s)", w, comb_trees[c]);
                if (cached_hash(lt, bl) == want)
                    X[l] = strdup(lt);
            }
        in_block = 1;
        if (!X[l])
            X[l] = recognise(&st, &bl, 1, NULL, 0, NULL, 0);
        in_block = 0;
        rv_tree_free(&sub);
        ok = X[l] != NULL;
    }
    if (ok) {
        L->n = nl;
        memcpy(L->B, B, nl * sizeof *B);
        memcpy(L->X, X, nl * sizeof *X);
    } else
        for (size_t l = 0; l < nl; l++)
            free(X[l]);
out:
    free(lo);
    free(hi);
    free(sz);
    free(blk);
}

/* The candidate of levels L, innermost first: the last level (single
 * terms: seq; else tiles of its blocks), then each level's body around it
 * with the rest carried. */
static void carried_try(search *s, const levels *L)
{
    char *inner = NULL;
    int ok = 1;
    for (size_t l = L->n; ok && l-- > 0;) {
        size_t len = (inner ? strlen(inner) : 0) + (L->X[l] ? strlen(L->X[l]) : 0) + 96;
        char *txt = malloc(len);
        if (!txt)
            ok = 0;
        else if (l == L->n - 1 && L->B[l] == 1)
            snprintf(txt, len, "seq");
        else if (l == L->n - 1)
            snprintf(txt, len, "tile(%zu, %s, seq)", L->B[l], L->X[l]);
        else
            snprintf(txt, len, "body(%zu, tile(%zu, %s, seq), %s, carry)", L->B[l], L->B[l], L->X[l], inner);
        free(inner);
        inner = txt;
    }
    if (ok && inner)
        try1(s, inner);
    free(inner);
}

/* Carried blocks at every length: each length's levels alone, then all
 * levels together (a length shows only the levels its remainder reaches:
 * 300 = 37 x 8 + 4 shows the block of 4, 307 the single terms; 8, 4, 1
 * holds at both). */
static void carried_form(const rv_tree *const *trees, const size_t *ns, size_t m, search *s)
{
    levels L[RV_INDUCE_MAX], U = {0};
    for (size_t i = 0; i < m; i++) {
        carried_levels(trees[i], ns[i], &L[i]);
        if (L[i].n >= 2 && !s->found)
            carried_try(s, &L[i]);
    }
    /* the union, widest first, each size once, each dividing the one before */
    int ok = 1;
    for (size_t i = 0; i < m && ok; i++)
        for (size_t l = 0; l < L[i].n && ok; l++) {
            size_t j = 0;
            while (j < U.n && U.B[j] > L[i].B[l])
                j++;
            if (j < U.n && U.B[j] == L[i].B[l])
                continue;
            if (U.n == CB_MAX_LEVELS) {
                ok = 0;
                break;
            }
            memmove(&U.B[j + 1], &U.B[j], (U.n - j) * sizeof *U.B);
            memmove(&U.X[j + 1], &U.X[j], (U.n - j) * sizeof *U.X);
            U.B[j] = L[i].B[l];
            U.X[j] = L[i].X[l]; /* borrowed */
            U.n++;
        }
    for (size_t l = 1; l < U.n && ok; l++)
        ok = U.B[l - 1] % U.B[l] == 0;
    int more = 0;
    for (size_t i = 0; i < m; i++)
        more |= U.n > L[i].n;
    if (ok && more && U.n >= 2 && !s->found)
        carried_try(s, &U);
    for (size_t i = 0; i < m; i++)
        levels_free(&L[i]);
}

/* --- carried parts ----------------------------------------------------------
 * A kernel that adds each block of B terms to the running value as a few
 * parts, in an order of its own (BLIS's generic sgemv N: per 8 columns,
 * (4 + 5), then ((0 + 1) + (2 + 3)), then (6 + 7)), then the last terms
 * one by one.  Its tree is a spine whose running value holds term 0 and
 * whose parts are consecutive runs of terms.  The single terms at the top
 * are the tail; the parts below them, taken until they cover a run ending
 * at the tail, are the last block: in the order they were added they give
 * the permutation and the part sizes, and one tree T must name every part
 * at its length.  The candidate is the fifth edition's
 *   body(B, order([...], tile(B, tile([sizes], T, seq), carry)), seq, carry)
 * (order left out when the parts come in order). */
/* The candidate of the block of B terms from bmin made of the k parts
 * part[0..k) (the top part first), tried. */
static void parts_try(const rv_tree *t, search *s, const int *part, size_t k, size_t bmin, size_t B, const int *lo,
                      const int *hi)
{
    /* in the order added (bottom up): the permutation and the sizes */
    size_t perm[CB_MAX_B], sizes[CB_MAX_B], w = 0;
    int ident = 1, same = 1;
    for (size_t x = 0; x < k; x++) {
        int p = part[k - 1 - x];
        sizes[x] = (size_t)t->node[p].size;
        same &= sizes[x] == sizes[0];
        for (int v = lo[p]; v <= hi[p]; v++) {
            perm[w] = (size_t)(v - (int)bmin);
            ident &= perm[w] == w;
            w++;
        }
    }
    /* one tree for every part, at each part's length */
    const char *T = NULL;
    for (size_t c = 0; c < NBASE && !T; c++) {
        int ok = 1;
        for (size_t x = 0; x < k && ok; x++) {
            int p = part[k - 1 - x];
            rv_tree sub;
            if (subtree(t, p, lo[p], &sub)) {
                ok = 0;
                break;
            }
            ok = cached_hash(base_trees[c], sizes[x]) == tree_hash(&sub, sub.root);
            rv_tree_free(&sub);
        }
        if (ok)
            T = base_trees[c];
    }
    if (!T)
        return;
    size_t cap = 64 + 24 * (B + k), at = 0;
    char *txt = malloc(cap);
    if (!txt)
        return;
    at += (size_t)snprintf(txt + at, cap - at, "body(%zu, ", B);
    if (!ident) {
        at += (size_t)snprintf(txt + at, cap - at, "order([");
        for (size_t x = 0; x < B; x++)
            at += (size_t)snprintf(txt + at, cap - at, "%s%zu", x ? ", " : "", perm[x]);
        at += (size_t)snprintf(txt + at, cap - at, "], ");
    }
    at += (size_t)snprintf(txt + at, cap - at, "tile(%zu, ", B);
    if (k == 1)
        at += (size_t)snprintf(txt + at, cap - at, "%s", T);
    else if (same)
        at += (size_t)snprintf(txt + at, cap - at, "tile(%zu, %s, seq)", sizes[0], T);
    else {
        at += (size_t)snprintf(txt + at, cap - at, "tile([");
        for (size_t x = 0; x < k; x++)
            at += (size_t)snprintf(txt + at, cap - at, "%s%zu", x ? ", " : "", sizes[x]);
        at += (size_t)snprintf(txt + at, cap - at, "], %s, seq)", T);
    }
    snprintf(txt + at, cap - at, ", carry)%s, seq, carry)", ident ? "" : ")");
    try1(s, txt);
    free(txt);
}

static void parts_form(const rv_tree *t, size_t n, search *s)
{
    if (in_block || n < 4 || !t->count)
        return;
    int *lo = malloc(t->count * sizeof *lo), *hi = malloc(t->count * sizeof *hi);
    int *part = malloc(n * sizeof *part);
    size_t np = 0;
    if (!lo || !hi || !part || spans(t, lo, hi) || lo[t->root] != 0)
        goto out;
    /* the spine: the child holding term 0 runs on, the other is a part */
    for (int i = t->root; t->node[i].leaf < 0;) {
        const rv_node *nd = &t->node[i];
        if (nd->nch != 2)
            goto out;
        int a = nd->ch[0], b = nd->ch[1];
        int run = lo[a] == 0 ? a : b, p = run == a ? b : a;
        if (lo[run] != 0 || hi[p] - lo[p] + 1 != t->node[p].size)
            goto out;
        part[np++] = p;
        i = run;
    }
    /* the tail: single terms n-1, n-2, ... at the top */
    size_t q = 0;
    while (q < np && t->node[part[q]].size == 1 && lo[part[q]] == (int)(n - 1 - q))
        q++;
    size_t m = n - q;
    /* the last block: parts until they cover [m - B, m); each such run
     * whose B divides m is tried (the first may be too short: 5 of BLIS's
     * 1, 2, 3, 2 parts cover a run too) */
    int bmin = (int)m, cnt = 0;
    for (size_t j = q; j < np && j < q + CB_MAX_B && !s->found; j++) {
        if (lo[part[j]] < bmin)
            bmin = lo[part[j]];
        cnt += t->node[part[j]].size;
        size_t B = m - (size_t)bmin;
        if (j > q && cnt == (int)B && B <= CB_MAX_B && m % B == 0)
            parts_try(t, s, part + q, j - q + 1, (size_t)bmin, B, lo, hi);
    }
out:
    free(lo);
    free(hi);
    free(part);
}

/* The trees a head's rest is tried with when it continues from the head
 * (`carry`), L the head's modulus: the loops of real kernels that run a
 * clean-up loop first, a running sum, blocks of L (tile(L, X, seq)) or L
 * lanes (stride(L, seq, C)). */
static const char *const head_rests[] = {"seq", "pairwise", "reverse(seq)", "tile(%zu, seq, seq)",
                                         "tile(%zu, pairwise, seq)", "tile(%zu, halving, seq)",
                                         "tile(%zu, reverse(seq), seq)", "stride(%zu, seq, seq)",
                                         "stride(%zu, seq, pairwise)", "stride(%zu, seq, halving)"};
#define HEAD_MAX 64 /* the widest clean-up loop read */
static _Thread_local int in_head; /* naming a head's rest: no head inside */

/* head(L, U, T[, carry]) (eighth edition): a clean-up loop over the first
 * n mod L terms, run before the loop over the rest.  Read from the first
 * length's tree: a node spanning [0, h) whose sibling starts at h is a
 * head of h terms, U the base tree with its bracketing.  Where the two are
 * the root's children, T is the name of the root's other child (the rest
 * from scratch); else the rest continues from the head and T is one of
 * head_rests.  L is each modulus up to HEAD_MAX that leaves h; every
 * candidate is held at every length, so a wrong L or T is dropped there. */
static void head_form(const rv_tree *t, size_t n, search *s)
{
    if (in_head || in_block || n < 3 || !t->count)
        return;
    int *lo = malloc(t->count * sizeof *lo), *hi = malloc(t->count * sizeof *hi);
    if (!lo || !hi || spans(t, lo, hi) || lo[t->root] != 0)
        goto out;
    for (size_t p = 0; p < t->count && !s->found; p++) {
        const rv_node *nd = &t->node[p];
        if (nd->leaf >= 0 || nd->nch != 2)
            continue;
        int a = nd->ch[0], b = nd->ch[1];
        int x = lo[a] == 0 ? a : lo[b] == 0 ? b : -1, y = x == a ? b : a;
        if (x < 0)
            continue;
        size_t h = (size_t)hi[x] + 1;
        if (h >= n || h >= HEAD_MAX || lo[y] != (int)h || hi[x] - lo[x] + 1 != t->node[x].size)
            continue;
        const char *U = NULL;
        rv_tree sub;
        if (!subtree(t, x, 0, &sub)) {
            uint64_t want = tree_hash(&sub, sub.root);
            for (size_t c = 0; c < NBASE && !U; c++)
                if (cached_hash(base_trees[c], h) == want)
                    U = base_trees[c];
            rv_tree_free(&sub);
        }
        if (!U)
            continue;
        char *T = NULL; /* the rest from scratch: the root's other child named */
        if ((int)p == t->root && hi[y] == (int)n - 1 && t->node[y].size == (int)(n - h) && !subtree(t, y, (int)h, &sub)) {
            size_t rn = n - h;
            in_head = 1;
            T = recognise(&(const rv_tree *){&sub}, &rn, 1, NULL, 0, NULL, 0);
            in_head = 0;
            rv_tree_free(&sub);
        }
        char buf[512];
        for (size_t L = h + 1; L <= HEAD_MAX && !s->found; L++) {
            if ((n - h) % L)
                continue;
            if (T && strlen(T) < 400) {
                snprintf(buf, sizeof buf, "head(%zu, %s, %s)", L, U, T);
                if (try1(s, buf))
                    break;
            }
            for (size_t r = 0; r < sizeof head_rests / sizeof *head_rests; r++) {
                char rest[64];
                snprintf(rest, sizeof rest, head_rests[r], L);
                snprintf(buf, sizeof buf, "head(%zu, %s, %s, carry)", L, U, rest);
                if (try1(s, buf))
                    break;
            }
        }
        free(T);
    }
out:
    free(lo);
    free(hi);
}

static char *recognise(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints, size_t nhints,
                       char *const *excl, size_t nexcl)
{
    if (m < 1 || m > RV_INDUCE_MAX)
        return NULL;
    search s = {.m = m, .excl = excl, .nexcl = nexcl};
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
    const char *const *base = base_trees, *const *comb = comb_trees;
    char buf[256];
    size_t nb = NBASE, nc = NCOMB;
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
    /* an unrolled loop over W lanes, U terms a round, and every term left
     * to lane 0 (sixth edition; a scalar remainder loop on the first
     * accumulator: OpenBLAS's sgemm kernels).  Without rest(0) the terms
     * left go on in blocks of W: that is stride(W, seq, C), tried above. */
    static const int lane_w[] = {2, 4, 8, 16};
    for (size_t w = 0; w < sizeof lane_w / sizeof *lane_w; w++)
        for (int U = 2 * lane_w[w]; U <= 64 && (size_t)U < n; U *= 2)
            for (size_t c = 0; c < (lane_w[w] == 2 ? 1 : nc); c++) { /* two lanes: one combine */
                snprintf(buf, sizeof buf, "lanes(%d, [loop(%d, %d), rest(0)], %s)", lane_w[w], lane_w[w], U, comb[c]);
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
    for (size_t i = 0; i < m && !s.found; i++)
        lanes_read(trees[i], ns[i], &s);
    if (!s.found)
        carried_form(trees, ns, m, &s);
    for (size_t i = 0; i < m && !s.found; i++)
        parts_form(trees[i], ns[i], &s);
    if (!s.found)
        for (size_t i = 0; i < m && !s.found; i++)
            head_form(trees[i], ns[i], &s);
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
