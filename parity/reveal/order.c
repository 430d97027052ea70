/* order.c: the summation tree of a black-box kernel from pair probes
 * (docs/reveal.md "The order").
 *
 * A probe row puts +M at term r, -M at term j, a small exact filler f at
 * the terms of a set S and zeros elsewhere (every value a power of two, so
 * exact in every format and under `in`).  Wherever a partial sum holding
 * +-M meets fillers, the fillers are swallowed (M/f is far beyond the
 * accumulator's precision); where +M and -M meet, they cancel exactly; the
 * fillers outside that subtree are added exactly.  So y/f counts the terms
 * of S outside the subtree where r and j meet.
 *
 * From one term r of a set H against every other j of H, the counts give
 * r's ancestors and, for each, the terms that join there (a group, one
 * subtree, or several where several meet in one fused operation).  Each
 * group is then revealed the same way, all groups of a round in one batch
 * of probes; small sets are probed pair by pair and rebuilt by merging.  A
 * witness term (one known to lie under the group's parent but outside the
 * group) tells "meets inside the group" from "meets above it". */
#include "reveal.h"

#include "fit.h"
#include "nx_select.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAIRS_MAX 32 /* sets this small are probed pair by pair */

/* --- the tree ------------------------------------------------------------ */

void rv_tree_free(rv_tree *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->node[i].ch);
    free(t->node);
    memset(t, 0, sizeof *t);
}

/* A deep copy of src into *dst; 0, or -1 out of memory (*dst empty). */
static int tree_copy(rv_tree *dst, const rv_tree *src)
{
    memset(dst, 0, sizeof *dst);
    if (!src->count)
        return 0;
    if (!(dst->node = calloc(src->count, sizeof *dst->node)))
        return -1;
    dst->cap = src->count;
    for (size_t i = 0; i < src->count; i++) {
        dst->node[i] = src->node[i];
        dst->node[i].ch = NULL;
        dst->count = i + 1;
        if (src->node[i].nch) {
            if (!(dst->node[i].ch = malloc((size_t)src->node[i].nch * sizeof *dst->node[i].ch))) {
                rv_tree_free(dst);
                return -1;
            }
            memcpy(dst->node[i].ch, src->node[i].ch, (size_t)src->node[i].nch * sizeof *dst->node[i].ch);
        }
    }
    dst->root = src->root;
    return 0;
}

static int node_new(rv_tree *t, int leaf)
{
    if (t->count == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        rv_node *nn = realloc(t->node, nc * sizeof *nn);
        if (!nn)
            return -1;
        t->node = nn;
        t->cap = nc;
    }
    rv_node *n = &t->node[t->count];
    memset(n, 0, sizeof *n);
    n->leaf = leaf;
    n->size = leaf >= 0 ? 1 : 0;
    return (int)t->count++;
}

static int node_add(rv_tree *t, int parent, int child)
{
    rv_node *p = &t->node[parent];
    int *nc = realloc(p->ch, (size_t)(p->nch + 1) * sizeof *nc);
    if (!nc)
        return -1;
    p->ch = nc;
    p->ch[p->nch++] = child;
    return 0;
}

static int min_leaf(const rv_tree *t, int i)
{
    const rv_node *n = &t->node[i];
    if (n->leaf >= 0)
        return n->leaf;
    int m = 1 << 30;
    for (int k = 0; k < n->nch; k++) {
        int v = min_leaf(t, n->ch[k]);
        if (v < m)
            m = v;
    }
    return m;
}

static int size_of(rv_tree *t, int i)
{
    rv_node *n = &t->node[i];
    if (n->leaf >= 0)
        return n->size = 1;
    int s = 0;
    for (int k = 0; k < n->nch; k++)
        s += size_of(t, n->ch[k]);
    return n->size = s;
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *s, const char *x)
{
    size_t l = strlen(x);
    if (!s->p && s->cap == (size_t)-1)
        return;
    if (s->len + l + 1 > s->cap) {
        size_t nc = (s->len + l + 1) * 2;
        char *np = realloc(s->p, nc);
        if (!np) {
            free(s->p);
            s->p = NULL;
            s->cap = (size_t)-1;
            return;
        }
        s->p = np;
        s->cap = nc;
    }
    memcpy(s->p + s->len, x, l + 1);
    s->len += l;
}

static void text_of(const rv_tree *t, int i, sbuf *s)
{
    const rv_node *n = &t->node[i];
    char b[16];
    if (n->leaf >= 0) {
        snprintf(b, sizeof b, "%d", n->leaf);
        sb_put(s, b);
        return;
    }
    /* children by their least term, for a stable reading */
    int *o = malloc((size_t)n->nch * sizeof *o), *m = malloc((size_t)n->nch * sizeof *m);
    if (!o || !m) {
        free(o);
        free(m);
        return;
    }
    for (int k = 0; k < n->nch; k++) {
        o[k] = n->ch[k];
        m[k] = min_leaf(t, o[k]);
    }
    for (int a = 1; a < n->nch; a++)
        for (int b2 = a; b2 > 0 && m[b2 - 1] > m[b2]; b2--) {
            int x = o[b2], y = m[b2];
            o[b2] = o[b2 - 1];
            m[b2] = m[b2 - 1];
            o[b2 - 1] = x;
            m[b2 - 1] = y;
        }
    sb_put(s, n->nch > 2 ? "[" : "(");
    for (int k = 0; k < n->nch; k++) {
        if (k)
            sb_put(s, "+");
        text_of(t, o[k], s);
    }
    sb_put(s, n->nch > 2 ? "]" : ")");
    free(o);
    free(m);
}

char *rv_tree_text(const rv_tree *t)
{
    sbuf s = {0};
    if (t->count && t->root >= 0)
        text_of(t, t->root, &s);
    return s.p;
}

/* --- probe values per input format ---------------------------------------- */

typedef struct cfg {
    double aM, bM, af, bf; /* +M = aM*bM, f = af*bf */
    int sign;              /* of the fillers */
    long cap;              /* fillers per probe at most */
    int modbits;           /* toward zero: counts are y/f mod 2^modbits */
} cfg;

static int cfg_for(nx_fmt in, int which, cfg *c)
{
    memset(c, 0, sizeof *c);
    switch (in) {
    case NX_FP32:
    case NX_BF16:
        if (which == 0)
            *c = (cfg){ldexp(1, 40), ldexp(1, 40), ldexp(1, -10), ldexp(1, -10), 1, 0, 0};
        else if (which == 1) /* an fp16 accumulator or output */
            *c = (cfg){ldexp(1, 12), 1, ldexp(1, -12), ldexp(1, -12), 1, 0, 0};
        else
            return -1;
        return 0;
    case NX_FP16:
        if (which == 0)
            *c = (cfg){ldexp(1, 15), ldexp(1, 15), ldexp(1, -12), ldexp(1, -12), 1, 0, 0};
        else if (which == 1)
            *c = (cfg){ldexp(1, 12), 1, ldexp(1, -12), ldexp(1, -12), 1, 0, 0};
        else
            return -1;
        return 0;
    case NX_FP64:
        if (which == 0) /* an fp64 accumulator */
            *c = (cfg){ldexp(1, 200), 1, ldexp(1, -20), 1, 1, 0, 0};
        else if (which == 1) /* fp64 inputs into an fp32 one */
            *c = (cfg){ldexp(1, 40), ldexp(1, 40), ldexp(1, -10), ldexp(1, -10), 1, 0, 0};
        else
            return -1;
        return 0;
    default:
        return -1;
    }
}

/* Calibration: f alone gives f, +M and -M cancel, +M alone survives, and
 * the precision to which counts of fillers stay exact. */
static nx_status calibrate(rv_kernel *k, size_t n, cfg *c, int *ok, int *pbits, int *rows_differ, nx_err *err)
{
    enum { MMAX = 60, SAME = 37 };
    size_t rows = 3 + MMAX + SAME;
    double *a = calloc(rows * n, sizeof *a), *b = malloc(rows * n * sizeof *b), *y = calloc(rows, sizeof *y);
    nx_status st = NX_OK;
    *ok = 0;
    if (!a || !b || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < rows * n; i++)
        b[i] = 1;
    double f = c->af * c->bf, M = c->aM * c->bM;
    a[0] = c->af, b[0] = c->bf;
    a[n] = c->aM, b[n] = c->bM, a[n + 1] = -c->aM, b[n + 1] = c->bM;
    a[2 * n] = c->aM, b[2 * n] = c->bM;
    const nx_format_info *fi = nx_format(k->in_fmt);
    int mmax = 0;
    for (int m = 1; m <= MMAX; m++) {
        double am = ldexp(c->af, m);
        if (am >= fi->max_finite / 2)
            break;
        double *r = a + (size_t)(2 + m) * n, *rb = b + (size_t)(2 + m) * n;
        r[0] = am, rb[0] = c->bf, r[1] = c->af, rb[1] = c->bf;
        mmax = m;
    }
    /* SAME copies of one row of mixed values (exact in every input
     * format): a kernel whose result depends on the row's index (row
     * classes) gives different results */
    for (size_t r = 3 + MMAX; r < rows; r++)
        for (size_t i = 0; i < n; i++) {
            int pm = fi->p - 1 < 30 ? fi->p - 1 : 30; /* every mantissa bit of the format */
            double m = 1 + ldexp((double)((i * 2654435761u + 12345u) & ((1u << pm) - 1)), -pm);
            a[r * n + i] = ldexp(m, (int)(i * 13 % 25) - 12) * (i % 3 == 1 ? -1 : 1);
            b[r * n + i] = k->shared_b ? 1 : 1 + (double)(i % 5) / 8; /* one b: ones */
        }
    if ((st = rv_call(k, rows, n, a, b, y, err)))
        goto out;
    *rows_differ = 0;
    for (size_t r = 4 + MMAX; r < rows; r++)
        if (memcmp(&y[r], &y[3 + MMAX], sizeof *y))
            *rows_differ = 1;
    if (y[0] != f || y[1] != 0 || y[2] != M)
        goto out;
    int p = 0;
    for (int m = 1; m <= mmax; m++) {
        if (y[2 + m] != ldexp(f, m) + f) {
            p = m;
            break;
        }
    }
    if (p == 0)
        p = mmax + 1;
    *pbits = p;
    *ok = 1;
out:
    free(a);
    free(b);
    free(y);
    return st;
}

/* --- the rounds ------------------------------------------------------------ */

typedef struct req {
    int *H;      /* sorted terms */
    int h;
    int parent;  /* node the revealed trees join */
    int witness; /* a term under parent outside H, or -1 (the top) */
    int peel;    /* 1: probe from the largest term */
    int r;       /* row mode: the representative; -1: pair mode */
    size_t p0, np; /* its probes */
} req;

typedef struct probe {
    int req, r, j;
    int sbeg, send; /* S = H[sbeg..send) less r, j */
    int wit;        /* the witness is in S */
} probe;

typedef struct state {
    rv_kernel *k;
    size_t n;
    cfg c;
    rv_tree *t;
    req *q;
    size_t nq, capq;
    probe *pr;
    size_t npr, cappr;
    double *cnt;
    int bad;     /* an inconsistent count or size */
    char why[200];
} state;

static int push_req(state *s, const int *H, int h, int parent, int witness, int peel)
{
    if (s->nq == s->capq) {
        size_t nc = s->capq ? 2 * s->capq : 64;
        req *nq = realloc(s->q, nc * sizeof *nq);
        if (!nq)
            return -1;
        s->q = nq;
        s->capq = nc;
    }
    req *r = &s->q[s->nq];
    memset(r, 0, sizeof *r);
    r->H = malloc((size_t)(h > 0 ? h : 1) * sizeof *r->H);
    if (!r->H)
        return -1;
    memcpy(r->H, H, (size_t)h * sizeof *H);
    r->h = h;
    r->parent = parent;
    r->witness = witness;
    r->peel = peel;
    r->r = -1;
    s->nq++;
    return 0;
}

static int push_probe(state *s, int rq, int r, int j)
{
    req *R = &s->q[rq];
    long chunk = s->c.cap - 1 > 0 ? s->c.cap - 1 : 1;
    for (int b = 0; b == 0 || b < R->h; b += (int)chunk) {
        if (s->npr == s->cappr) {
            size_t nc = s->cappr ? 2 * s->cappr : 1024;
            probe *np = realloc(s->pr, nc * sizeof *np);
            if (!np)
                return -1;
            s->pr = np;
            s->cappr = nc;
        }
        int e = b + (int)chunk < R->h ? b + (int)chunk : R->h;
        s->pr[s->npr++] = (probe){rq, r, j, b, e, b == 0 && R->witness >= 0};
    }
    return 0;
}

static void fill_row(const state *s, const probe *p, double *a, double *b)
{
    const req *R = &s->q[p->req];
    size_t n = s->n;
    for (size_t i = 0; i < n; i++)
        a[i] = 0, b[i] = 1;
    double fa = s->c.sign * s->c.af;
    for (int i = p->sbeg; i < p->send; i++) {
        int t = R->H[i];
        if (t != p->r && t != p->j)
            a[t] = fa, b[t] = s->c.bf;
    }
    if (p->wit)
        a[R->witness] = fa, b[R->witness] = s->c.bf;
    a[p->r] = s->c.aM, b[p->r] = s->c.bM;
    a[p->j] = -s->c.aM, b[p->j] = s->c.bM;
}

static int set_bad(state *s, const char *fmt, int x, int y)
{
    if (!s->bad) {
        s->bad = 1;
        snprintf(s->why, sizeof s->why, fmt, x, y);
    }
    return 0;
}

/* Row mode: r against every other term of H. */
static int finish_row(state *s, size_t rq, const double *cnt)
{
    req R = s->q[rq]; /* a copy: push_req may move s->q */
    int hw = R.h + (R.witness >= 0);
    int *sz = malloc((size_t)R.h * sizeof *sz), *G = malloc((size_t)R.h * sizeof *G);
    if (!sz || !G) {
        free(sz);
        free(G);
        return -1;
    }
    int ns = 0;
    for (size_t i = 0; i < R.np; i++) {
        const probe *p = &s->pr[R.p0 + i];
        if (i == 0 || p->j != s->pr[R.p0 + i - 1].j)
            sz[ns++] = 0;
        sz[ns - 1] += (int)cnt[i];
    }
    /* sz now holds counts per j, in H order less r: turn them into sizes */
    int *js = malloc((size_t)R.h * sizeof *js);
    if (!js) {
        free(sz);
        free(G);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < R.h; i++)
        if (R.H[i] != R.r)
            js[m++] = R.H[i];
    for (int i = 0; i < m; i++) {
        sz[i] = hw - sz[i];
        if (sz[i] < 2 || sz[i] > hw)
            set_bad(s, "a pair count out of range (term %d, size %d)", js[i], sz[i]);
    }
    int prev = node_new(s->t, R.r), cum = 1, rc = 0;
    if (prev < 0)
        rc = -1;
    int above = R.witness >= 0 ? hw : hw + 1;
    for (int sv = 2; sv < above && !rc && !s->bad; sv++) {
        int g = 0;
        for (int i = 0; i < m; i++)
            if (sz[i] == sv)
                G[g++] = js[i];
        if (!g)
            continue;
        cum += g;
        if (cum != sv) {
            set_bad(s, "sizes do not add up below term %d (size %d)", R.r, sv);
            break;
        }
        int a = node_new(s->t, -1);
        /* a leaf's sibling that took all but r: a chain seen from its far
         * end (reverse(seq)); probe it from the other end */
        int flip = s->t->node[prev].leaf >= 0 && R.r == R.H[0];
        if (a < 0 || node_add(s->t, a, prev) || push_req(s, G, g, a, R.r, flip)) {
            rc = -1;
            break;
        }
        prev = a;
    }
    if (!rc && !s->bad) {
        int g = 0;
        for (int i = 0; i < m; i++)
            if (sz[i] == above)
                G[g++] = js[i];
        if (node_add(s->t, R.parent, prev) ||
            (g && push_req(s, G, g, R.parent, R.r, s->t->node[prev].leaf >= 0 && R.r == R.H[0])))
            rc = -1;
    }
    free(sz);
    free(G);
    free(js);
    return rc;
}

static int uf_find(int *uf, int x)
{
    while (uf[x] != x)
        x = uf[x] = uf[uf[x]];
    return x;
}

/* Pair mode: every pair of H; clusters merged in order of the size where
 * they meet. */
static int finish_pairs(state *s, size_t rq, const double *cnt)
{
    req R = s->q[rq];
    int h = R.h, hw = h + (R.witness >= 0);
    int np = h * (h - 1) / 2;
    int *sz = calloc((size_t)np, sizeof *sz), *pa = malloc((size_t)np * sizeof *pa), *pb = malloc((size_t)np * sizeof *pb);
    int *uf = malloc((size_t)h * sizeof *uf), *usz = malloc((size_t)h * sizeof *usz), *node = malloc((size_t)h * sizeof *node);
    int *at = malloc((size_t)h * sizeof *at);
    int **kids = calloc((size_t)h, sizeof *kids), *nk = calloc((size_t)h, sizeof *nk);
    int rc = 0;
    if (!sz || !pa || !pb || !uf || !usz || !node || !at || !kids || !nk) {
        rc = -1;
        goto out;
    }
    int e = -1;
    for (size_t i = 0; i < R.np; i++) {
        const probe *p = &s->pr[R.p0 + i];
        if (i == 0 || p->j != s->pr[R.p0 + i - 1].j || p->r != s->pr[R.p0 + i - 1].r) {
            e++;
            pa[e] = p->r;
            pb[e] = p->j;
        }
        sz[e] += (int)cnt[i];
    }
    for (int i = 0; i < np; i++) {
        sz[i] = hw - sz[i];
        if (sz[i] < 2 || sz[i] > hw)
            set_bad(s, "a pair count out of range (term %d, size %d)", pa[i], sz[i]);
    }
    for (int i = 0; i < h && !rc; i++) {
        uf[i] = i;
        usz[i] = 1;
        at[i] = 0;
        if ((node[i] = node_new(s->t, R.H[i])) < 0)
            rc = -1;
    }
    int top = R.witness >= 0 ? h : hw;
    for (int sv = 2; sv <= top && !rc && !s->bad; sv++) {
        int any = 0;
        for (int i = 0; i < np; i++) {
            if (sz[i] != sv)
                continue;
            int ia = 0, ib = 0;
            while (R.H[ia] != pa[i])
                ia++;
            while (R.H[ib] != pb[i])
                ib++;
            int ra = uf_find(uf, ia), rb = uf_find(uf, ib);
            if (ra == rb) {
                if (at[ra] != sv)
                    set_bad(s, "terms %d and %d meet twice", pa[i], pb[i]);
                continue;
            }
            any = 1;
            /* the merged cluster's pending children */
            int *list = malloc((size_t)h * sizeof *list), l = 0;
            if (!list) {
                rc = -1;
                break;
            }
            int rr[2] = {ra, rb};
            for (int q = 0; q < 2; q++) {
                if (at[rr[q]] == sv) {
                    memcpy(list + l, kids[rr[q]], (size_t)nk[rr[q]] * sizeof *list);
                    l += nk[rr[q]];
                } else
                    list[l++] = node[rr[q]];
                free(kids[rr[q]]);
                kids[rr[q]] = NULL;
                nk[rr[q]] = 0;
            }
            uf[rb] = ra;
            usz[ra] += usz[rb];
            at[ra] = sv;
            kids[ra] = list;
            nk[ra] = l;
        }
        if (!any)
            continue;
        for (int i = 0; i < h && !rc; i++) {
            if (uf[i] != i || at[i] != sv || !kids[i])
                continue;
            if (usz[i] != sv)
                set_bad(s, "a node of %d terms met at size %d", usz[i], sv);
            int a = node_new(s->t, -1);
            if (a < 0) {
                rc = -1;
                break;
            }
            for (int q = 0; q < nk[i] && !rc; q++)
                rc = node_add(s->t, a, kids[i][q]);
            free(kids[i]);
            kids[i] = NULL;
            nk[i] = 0;
            node[i] = a;
        }
    }
    for (int i = 0; i < h && !rc && !s->bad; i++)
        if (uf[i] == i)
            rc = node_add(s->t, R.parent, node[i]);
out:
    if (kids)
        for (int i = 0; i < h; i++)
            free(kids[i]);
    free(kids);
    free(nk);
    free(sz);
    free(pa);
    free(pb);
    free(uf);
    free(usz);
    free(node);
    free(at);
    return rc;
}

static void free_reqs(state *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        free(s->q[i].H);
}

/* One attempt with one configuration; s->bad when the counts are not
 * those of a tree. */
static nx_status run_rounds(state *s, int verbose, nx_err *err)
{
    size_t n = s->n;
    int *all = malloc(n * sizeof *all);
    if (!all)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        all[i] = (int)i;
    int holder = node_new(s->t, -1);
    nx_status st = NX_OK;
    if (holder < 0 || push_req(s, all, (int)n, holder, -1, 0)) {
        free(all);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    free(all);
    size_t head = 0, round = 0;
    size_t batch = n ? ((size_t)1 << 24) / n : 1;
    if (!batch)
        batch = 1;
    double *a = malloc(batch * n * sizeof *a), *b = malloc(batch * n * sizeof *b), *y = malloc(batch * sizeof *y);
    if (!a || !b || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    while (head < s->nq && !s->bad) {
        size_t end = s->nq;
        s->npr = 0;
        round++;
        for (size_t i = head; i < end; i++) {
            req *R = &s->q[i];
            if (R->h == 1) {
                int l = node_new(s->t, R->H[0]);
                if (l < 0 || node_add(s->t, R->parent, l)) {
                    st = nx_err_set(err, NX_ENOMEM, "out of memory");
                    goto out;
                }
                R->np = 0;
                continue;
            }
            R->p0 = s->npr;
            int fail = 0;
            if (R->h <= PAIRS_MAX) {
                R->r = -1;
                for (int x = 0; x < R->h && !fail; x++)
                    for (int z = x + 1; z < R->h && !fail; z++)
                        fail = push_probe(s, (int)i, R->H[x], R->H[z]);
            } else {
                R->r = R->peel ? R->H[R->h - 1] : R->H[0];
                for (int x = 0; x < R->h && !fail; x++)
                    if (R->H[x] != R->r)
                        fail = push_probe(s, (int)i, R->r, R->H[x]);
            }
            if (fail) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                goto out;
            }
            R = &s->q[i];
            R->np = s->npr - R->p0;
        }
        free(s->cnt);
        s->cnt = malloc((s->npr ? s->npr : 1) * sizeof *s->cnt);
        if (!s->cnt) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        double f = s->c.sign * s->c.af * s->c.bf;
        for (size_t p0 = 0; p0 < s->npr; p0 += batch) {
            size_t m = s->npr - p0 < batch ? s->npr - p0 : batch;
            for (size_t i = 0; i < m; i++)
                fill_row(s, &s->pr[p0 + i], a + i * n, b + i * n);
            if ((st = rv_call(s->k, m, n, a, b, y, err)))
                goto out;
            for (size_t i = 0; i < m; i++) {
                double c = y[i] / f;
                if (s->c.modbits && c >= 0)
                    c = fmod(c, ldexp(1, s->c.modbits));
                if (!(c >= 0) || c != floor(c) || c > (double)n) {
                    set_bad(s, "a probe gave %d fillers (probe %d), not a count", (int)(c > 1e9 ? -1 : c), (int)(p0 + i));
                    c = 0;
                }
                s->cnt[p0 + i] = c;
            }
        }
        if (verbose)
            fprintf(stderr, "reveal: order round %zu: %zu sets, %zu probes\n", round, end - head, s->npr);
        for (size_t i = head; i < end && !s->bad; i++) {
            if (s->q[i].h < 2)
                continue;
            int rc = s->q[i].r >= 0 ? finish_row(s, i, s->cnt + s->q[i].p0) : finish_pairs(s, i, s->cnt + s->q[i].p0);
            if (rc) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
                goto out;
            }
        }
        free_reqs(s, head, end);
        head = end;
    }
    if (!s->bad) {
        rv_node *hn = &s->t->node[holder];
        if (hn->nch != 1)
            set_bad(s, "the probes found %d separate trees (first term %d)", hn->nch, 0);
        else
            s->t->root = hn->ch[0];
    }
out:
    free_reqs(s, head, s->nq);
    s->nq = 0;
    free(a);
    free(b);
    free(y);
    return st;
}

static nx_status order_once(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err)
{
    size_t n = o->n;
    if (n < 2)
        return nx_err_set(err, NX_EINVAL, "--n: the order needs at least 2 terms");
    size_t calls0 = k->calls, probes0 = k->probes;
    nx_status st = NX_OK;
    char last[200] = "no probe configuration suits the kernel's formats";
    for (int which = 0; which < 3; which++) {
        cfg c;
        if (cfg_for(k->in_fmt, which, &c))
            break;
        int ok, p, differ = 0;
        if ((st = calibrate(k, n, &c, &ok, &p, &differ, err)))
            return st;
        if (differ) {
            /* rows that differ by their index mix orders within a call:
             * rv_reveal_order then probes every row index */
            res->rows_differ = 1;
            res->order_calls = k->calls - calls0;
            res->order_probes = k->probes - probes0;
            return nx_err_set(err, NX_EUNSUPPORTED, "one row gives different results at different row indices");
        }
        if (!ok)
            continue;
        long cap = p >= 21 ? 1L << 20 : 1L << (p - 1);
        c.cap = cap < 2 ? 2 : cap;
        /* rne, rna, rd: positive fillers vanish into +M and -M alike; ru:
         * negative ones do.  rz moves -M + f toward zero by one ulp u of M
         * each time fillers join it: with M = 1.5 * 2^(p-1) * u and
         * u = 2^b f > n f, y = c u + (count) f holds the count in its low
         * b bits while c u + n f stays exact (2b < p). */
        int b = 1;
        while (((size_t)1 << b) <= n)
            b++;
        for (int sign = 1; sign >= -3; sign -= 2) {
            if (sign == -3) {
                if (2 * b >= p)
                    break;
                c.sign = 1;
                c.modbits = b;
                c.aM = ldexp(1.5, p - 1 + b) * c.af * c.bf;
                c.bM = 1;
                if (c.aM >= nx_format(k->in_fmt)->max_finite)
                    break;
                c.cap = ((long)1 << b) - 1 < c.cap ? ((long)1 << b) - 1 : c.cap;
            } else
                c.sign = sign;
            rv_tree t = {0};
            t.root = -1;
            state s = {.k = k, .n = n, .c = c, .t = &t};
            st = run_rounds(&s, o->verbose, err);
            free(s.q);
            free(s.pr);
            free(s.cnt);
            if (st) {
                rv_tree_free(&t);
                return st;
            }
            if (!s.bad) {
                size_of(&t, t.root);
                rv_tree_free(&res->tree);
                res->tree = t;
                res->n = n;
                res->filler_sign = c.modbits ? 0 : sign;
                res->count_bits = p;
                res->order_calls = k->calls - calls0;
                res->order_probes = k->probes - probes0;
                res->in_fmt = k->in_fmt;
                res->out_fmt = k->out_fmt;
                free(res->tree_text);
                res->tree_text = rv_recognise_hinted(&res->tree, n, o->hints, o->nhints);
                return NX_OK;
            }
            snprintf(last, sizeof last, "%s", s.why);
            if (o->verbose)
                fprintf(stderr, "reveal: fillers of sign %+d: %s\n", sign, s.why);
            rv_tree_free(&t);
        }
    }
    res->order_calls = k->calls - calls0;
    res->order_probes = k->probes - probes0;
    return nx_err_set(err, NX_EUNSUPPORTED,
                      "the probes do not reveal a summation tree (%s): %s", last,
                      res->rows_differ ? "the kernel reduces rows at different indices differently (row classes), "
                                         "and the probes of a call mix rows"
                                       : "the kernel may accumulate exactly in its fused adder, round toward zero "
                                         "at a large n, or depend on values beyond their sum");
}

/* --- row classes -----------------------------------------------------------
 *
 * A kernel may reduce row r of R in an order that depends on r (docs/
 * numerics.md section 4.3).  Each probe is then sent alone, replicated at
 * every row index of a batch of R rows, and the order is revealed once per
 * row index from the answers at that index (rowview).  The answers are kept
 * by probe, so a probe that several row indices ask for costs one call. */

typedef struct rv_memo {
    uint64_t h, h2; /* two independent hashes of the probe's a and b */
    double *y;      /* the answers at every row index, [R] */
    double *in;     /* the probe's a then b ([2 n]) where its answers differ
                     * across row indices (the first RV_ROWS_MAX_PROBES of
                     * them: rows.c tells classes apart by them); else NULL */
} rv_memo;

typedef struct rowview {
    rv_kernel *k;
    size_t R, ri, n;   /* n: the terms a row of a, b holds (grown to the longest call) */
    rv_memo *m;
    size_t count, cap;
    size_t *tab, tcap; /* open addressing: index + 1 into m, 0 empty */
    double *a, *b;     /* [R n] */
    size_t kept;       /* memo entries with their inputs */
} rowview;

static void rowview_free(rowview *v)
{
    for (size_t i = 0; i < v->count; i++) {
        free(v->m[i].y);
        free(v->m[i].in);
    }
    free(v->m);
    free(v->tab);
    free(v->a);
    free(v->b);
}

static uint64_t row_hash(const double *a, const double *b, size_t n, uint64_t h, uint64_t mul)
{
    for (size_t i = 0; i < 2 * n; i++) {
        uint64_t x;
        memcpy(&x, i < n ? &a[i] : &b[i - n], sizeof x);
        h = (h ^ x ^ (uint64_t)i) * mul;
        h ^= h >> 29;
    }
    return h;
}

static int memo_grow(rowview *v)
{
    size_t nc = v->tcap ? 2 * v->tcap : 4096;
    size_t *nt = calloc(nc, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t i = 0; i < v->count; i++) {
        size_t p = (size_t)v->m[i].h & (nc - 1);
        while (nt[p])
            p = (p + 1) & (nc - 1);
        nt[p] = i + 1;
    }
    free(v->tab);
    v->tab = nt;
    v->tcap = nc;
    return 0;
}

/* The memo entry of a probe row (index + 1; 0: none), its two hashes into
 * *h, *h2: 128 bits of hash stand for the row (the rows themselves, 2 n
 * doubles per probe, would not fit at large n). */
static size_t memo_find(const rowview *v, const double *ar, const double *br, size_t n, uint64_t *h, uint64_t *h2)
{
    *h = row_hash(ar, br, n, 0xcbf29ce484222325ULL, 0x100000001b3ULL);
    *h2 = row_hash(ar, br, n, 0x9e3779b97f4a7c15ULL, 0xff51afd7ed558ccdULL | 1);
    size_t p = v->tcap ? (size_t)*h & (v->tcap - 1) : 0;
    while (v->tcap && v->tab[p]) {
        const rv_memo *e = &v->m[v->tab[p] - 1];
        if (e->h == *h && e->h2 == *h2)
            return v->tab[p];
        p = (p + 1) & (v->tcap - 1);
    }
    return 0;
}

static nx_status rowview_eval(rv_kernel *kk, size_t rows, size_t n, const double *a, const double *b, double *y,
                              int *out_fmt, nx_err *err)
{
    rowview *v = kk->impl;
    for (size_t r = 0; r < rows; r++) {
        const double *ar = a + r * n, *br = b + r * n;
        uint64_t h, h2;
        size_t hit = memo_find(v, ar, br, n, &h, &h2), p;
        if (!hit) {
            if (2 * (v->count + 1) > v->tcap && memo_grow(v))
                return nx_err_set(err, NX_ENOMEM, "out of memory");
            if (v->count == v->cap) {
                size_t nc = v->cap ? 2 * v->cap : 1024;
                rv_memo *nm = realloc(v->m, nc * sizeof *nm);
                if (!nm)
                    return nx_err_set(err, NX_ENOMEM, "out of memory");
                v->m = nm;
                v->cap = nc;
            }
            if (n > v->n) { /* a longer length than any before: room for R rows of it */
                double *na = realloc(v->a, v->R * n * sizeof *na);
                if (na)
                    v->a = na;
                double *nb = na ? realloc(v->b, v->R * n * sizeof *nb) : NULL;
                if (!na || !nb)
                    return nx_err_set(err, NX_ENOMEM, "out of memory");
                v->b = nb;
                v->n = n;
            }
            rv_memo e = {h, h2, malloc(v->R * sizeof(double)), NULL};
            if (!e.y)
                return nx_err_set(err, NX_ENOMEM, "out of memory");
            for (size_t q = 0; q < v->R; q++) {
                memcpy(v->a + q * n, ar, n * sizeof *ar);
                memcpy(v->b + q * n, br, n * sizeof *br);
            }
            nx_status st = rv_call(v->k, v->R, n, v->a, v->b, e.y, err);
            if (st) {
                free(e.y);
                return st;
            }
            size_t q = 1;
            while (q < v->R && !memcmp(&e.y[q], &e.y[0], sizeof(double)))
                q++;
            if (q < v->R && v->kept < RV_ROWS_MAX_PROBES && (e.in = malloc(2 * n * sizeof *e.in))) {
                memcpy(e.in, ar, n * sizeof *ar);
                memcpy(e.in + n, br, n * sizeof *br);
                v->kept++;
            }
            v->m[v->count++] = e;
            p = (size_t)h & (v->tcap - 1);
            while (v->tab[p])
                p = (p + 1) & (v->tcap - 1);
            v->tab[p] = hit = v->count;
        }
        y[r] = v->m[hit - 1].y[v->ri];
    }
    *out_fmt = v->k->out_fmt;
    return NX_OK;
}

/* A packed view of the kernel for the rows of one class: row indices
 * that gave one class's answers to every probe sent so far reduce alike,
 * so one call of R rows carries as many distinct probes as the class has
 * rows (row rows[j] holds probe j; the other row indices repeat the first
 * probe of the call), where the rowview sends each probe alone at every
 * index.  A probe the rowview already sent is answered from its memo.
 * Not for a grid (its cells share a and b by row and column). */
typedef struct packview {
    rowview *v;          /* the memo (answers at v->R, read at v->ri), and the kernel */
    const size_t *rows;  /* the class's row indices at R, [nrows], ascending */
    size_t nrows, R;     /* R: the rows of a call (v->R, or fewer where the class's path shows there) */
    double *a, *b, *y;   /* [R n], [R n], [R] */
    size_t n;
} packview;

static nx_status packview_eval(rv_kernel *kk, size_t rows, size_t n, const double *a, const double *b, double *y,
                               int *out_fmt, nx_err *err)
{
    packview *pv = kk->impl;
    rowview *v = pv->v;
    size_t R = pv->R;
    if (n > pv->n) {
        double *na = realloc(pv->a, R * n * sizeof *na);
        if (na)
            pv->a = na;
        double *nb = na ? realloc(pv->b, R * n * sizeof *nb) : NULL;
        if (!na || !nb)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        pv->b = nb;
        pv->n = n;
    }
    if (!pv->y && !(pv->y = malloc(R * sizeof *pv->y)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    size_t *todo = malloc((rows ? rows : 1) * sizeof *todo), nt = 0;
    if (!todo)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t r = 0; r < rows; r++) {
        uint64_t h, h2;
        size_t hit = memo_find(v, a + r * n, b + r * n, n, &h, &h2);
        if (hit)
            y[r] = v->m[hit - 1].y[v->ri];
        else
            todo[nt++] = r;
    }
    /* calls of up to nrows probes; a kernel with one b a call takes in one
     * call only probes of the first one's b, or, where the first one's
     * products are exact, any whose products are (sent as (a b, 1)) */
    nx_status st = NX_OK;
    size_t *pick = malloc((pv->nrows ? pv->nrows : 1) * sizeof *pick);
    unsigned char *ex = calloc(rows ? rows : 1, 1); /* [row]: its products exact */
    if (!pick || !ex) {
        free(pick);
        free(ex);
        free(todo);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t t = 0; t < nt && v->k->shared_b; t++)
        ex[todo[t]] = rv_inexact_product(v->k->in_fmt, a + todo[t] * n, b + todo[t] * n, n) == n;
    while (nt && !st) {
        size_t m = 0, keep = 0;
        const double *b0 = b + todo[0] * n;
        int free0 = ex[todo[0]];
        for (size_t t = 0; t < nt; t++)
            if (m < pv->nrows && (!v->k->shared_b || (free0 && ex[todo[t]]) ||
                                  (!free0 && !ex[todo[t]] && !memcmp(b + todo[t] * n, b0, n * sizeof *b))))
                pick[m++] = todo[t];
            else
                todo[keep++] = todo[t];
        nt = keep;
        /* exact products go as (a b, 1), as rv_call would send them */
        for (size_t j = 0; j < m; j++) {
            double *ra = pv->a + pv->rows[j] * n, *rb = pv->b + pv->rows[j] * n;
            const double *sa = a + pick[j] * n, *sb = b + pick[j] * n;
            if (free0)
                rv_as_products(sa, sb, n, ra, rb);
            else {
                memcpy(ra, sa, n * sizeof *a);
                memcpy(rb, sb, n * sizeof *b);
            }
        }
        const double *fa = pv->a + pv->rows[0] * n, *fb = pv->b + pv->rows[0] * n;
        for (size_t q = 0, j = 0; q < R; q++) {
            if (j < m && pv->rows[j] == q) { /* rows[] ascends */
                j++;
                continue;
            }
            memcpy(pv->a + q * n, fa, n * sizeof *a);
            memcpy(pv->b + q * n, fb, n * sizeof *b);
        }
        if (!(st = rv_call(v->k, R, n, pv->a, pv->b, pv->y, err)))
            for (size_t j = 0; j < m; j++)
                y[pick[j]] = pv->y[pv->rows[j]];
    }
    free(pick);
    free(ex);
    free(todo);
    *out_fmt = v->k->out_fmt;
    return st;
}

/* Mixed row v of n terms, exact in every input format (mantissas of up to
 * 30 bits, exponents -12 ... 12, both signs), into a; b 1 + (i + v) % 5 /
 * 8 where varied_b, else 1 (a fused and a separate step then agree). */
static void mixed_row(nx_fmt in, size_t n, unsigned v, int varied_b, double *a, double *b)
{
    const nx_format_info *fi = nx_format(in);
    int pm = fi->p - 1 < 30 ? fi->p - 1 : 30;
    for (size_t i = 0; i < n; i++) {
        double m = 1 + ldexp((double)((i * 2654435761u + 12345u + v * 977u) & ((1u << pm) - 1)), -pm);
        a[i] = ldexp(m, (int)((i * (13 + 4 * v) + 7 * v) % 25) - 12) * ((i + v) % 3 == 1 ? -1 : 1);
        b[i] = varied_b ? 1 + (double)((i + v) % 5) / 8 : 1;
    }
}

/* One mixed row (exact in every input format) at every index of a batch
 * of R rows: 1 when the answers differ. */
static nx_status rows_differ_check(rv_kernel *k, size_t n, size_t R, int *differ, nx_err *err)
{
    double *a = malloc(R * n * sizeof *a), *b = malloc(R * n * sizeof *b), *y = malloc(R * sizeof *y);
    nx_status st = NX_OK;
    *differ = 0;
    if (!a || !b || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* eight rows: two orders of a few hundred terms may round to the same
     * fp32 sum on one row (4 lanes against 8 lanes with a peel of 4: the
     * same on all of three rows at 2 lengths of 55 from 40 to 418, n = 199
     * one of them; on all of eight at none) */
    for (unsigned v = 0; v < 8 && !*differ; v++) {
        mixed_row(k->in_fmt, n, v, !k->shared_b, a, b);
        for (size_t r = 1; r < R; r++) {
            memcpy(a + r * n, a, n * sizeof *a);
            memcpy(b + r * n, b, n * sizeof *b);
        }
        if ((st = rv_call(k, R, n, a, b, y, err)))
            goto out;
        for (size_t r = 1; r < R; r++)
            if (memcmp(&y[r], &y[0], sizeof *y))
                *differ = 1;
    }
out:
    free(a);
    free(b);
    free(y);
    return st;
}

/* Grid selectors (k->grid_m x k->grid_n, docs/reveal.md "Grid classes")
 * for the classes other than top, into sel[] in the order ord[] they are
 * listed in (first true wins): each names its cells among those no class
 * before it took (fit_grid_select).  The smaller classes first, else the
 * larger first where that names more of them (the corner of an edge row
 * and an edge column goes with either).  A class none names keeps NULL.
 * -1: out of memory. */
static int grid_selectors(const rv_kernel *k, const int *cls, const size_t *cnt, size_t ncls, size_t top,
                          char **sel, size_t *ord)
{
    const size_t M = k->grid_m, N = k->grid_n, MN = M * N;
    unsigned char *want = malloc(MN), *claimed = malloc(MN);
    size_t *o2 = malloc(ncls * sizeof *o2), m = 0, best = 0;
    char **s2 = calloc(ncls, sizeof *s2);
    int rc = 0;
    if (!want || !claimed || !o2 || !s2) {
        rc = -1;
        goto out;
    }
    for (size_t c = 0; c < ncls; c++)
        if (c != top)
            o2[m++] = c;
    for (int pass = 0; pass < 2; pass++) {
        /* insertion sort by count: ascending, then descending */
        for (size_t x = 1; x < m; x++)
            for (size_t y = x; y > 0; y--) {
                size_t p = o2[y - 1], q = o2[y];
                int swap = pass == 0 ? cnt[q] < cnt[p] : cnt[q] > cnt[p];
                if (!swap)
                    break;
                o2[y - 1] = q;
                o2[y] = p;
            }
        memset(claimed, 0, MN);
        size_t named = 0;
        for (size_t x = 0; x < m; x++) {
            for (size_t c = 0; c < MN; c++)
                want[c] = cls[c] == (int)o2[x];
            s2[x] = fit_grid_select(want, claimed, (long)M, (long)N);
            named += s2[x] != NULL;
            for (size_t c = 0; c < MN; c++)
                claimed[c] |= want[c];
        }
        if (pass == 0 || named > best) {
            for (size_t x = 0; x < m; x++) {
                free(sel[x]);
                sel[x] = s2[x];
                ord[x] = o2[x];
            }
            best = named;
        } else
            for (size_t x = 0; x < m; x++)
                free(s2[x]);
        memset(s2, 0, ncls * sizeof *s2);
        if (best == m)
            break;
    }
out:
    free(want);
    free(claimed);
    free(o2);
    free(s2);
    return rc;
}

/* Whether the selector text holds at row r of R, by the project's own
 * parser and evaluator (-1: it does not parse). */
static int sel_true(const char *text, size_t r, size_t R, size_t M, size_t N)
{
    nx_select *sl = NULL;
    nx_err e = {0};
    int v = -1;
    if (nx_select_parse(text, "select", &sl, &e) == NX_OK && nx_select_eval(sl, (long long)r, (long long)R, (long long)M, (long long)N, 0, &v, &e))
        v = -1;
    nx_select_free(sl);
    return v;
}

/* A selector of docs/numerics.md section 4.3 true exactly at the rows of
 * class c among R (malloc'd), or NULL. */
char *rv_row_selector(const int *cls, size_t R, int c)
{
    char buf[96];
    size_t lo = R, hi = 0, cnt = 0;
    for (size_t r = 0; r < R; r++)
        if (cls[r] == c) {
            if (r < lo)
                lo = r;
            hi = r;
            cnt++;
        }
    if (!cnt)
        return NULL;
    int contiguous = cnt == hi - lo + 1;
    if (contiguous && lo == 0) {
        snprintf(buf, sizeof buf, "r < %zu", hi + 1);
        return strdup(buf);
    }
    if (contiguous && hi == R - 1)
        for (size_t m = 2; m <= 64; m++)
            if (R % m == cnt) {
                snprintf(buf, sizeof buf, "r >= R - R %% %zu", m);
                return strdup(buf);
            }
    for (size_t m = 2; m <= 16 && m <= R; m++)
        for (size_t j = 0; j < m; j++) {
            int ok = 1;
            for (size_t r = 0; r < R && ok; r++)
                ok = (cls[r] == c) == (r % m == j);
            if (ok) {
                snprintf(buf, sizeof buf, "r %% %zu == %zu", m, j);
                return strdup(buf);
            }
        }
    /* the first rows of the remainder: a kernel that takes the R mod m last
     * rows m2 at a time, then the rest one by one (OpenBLAS sgemv T: 4, 2,
     * 1 outputs), the m2-row block being the class */
    if (contiguous)
        for (size_t m = 2; m <= 64; m++)
            for (size_t m2 = 2; m2 < m; m2++)
                if (m % m2 == 0 && lo == R - R % m && hi + 1 == R - R % m2) {
                    snprintf(buf, sizeof buf, "r >= R - R %% %zu && r < R - R %% %zu", m, m2);
                    return strdup(buf);
                }
    if (contiguous) {
        snprintf(buf, sizeof buf, "r >= %zu && r < %zu", lo, hi + 1);
        return strdup(buf);
    }
    return NULL;
}

/* Rows that part the row indices by order before any is revealed: RV_PART
 * mixed rows (exact in every input format, b = 1 so that a fused and a
 * separate step agree and the arithmetic apart stays with its order),
 * each sent at every index through the rowview (kept in its memo).  Two
 * orders of a few hundred terms round alike on about one such row in four
 * (see rows_differ_check); on all sixteen, about once in 4^16. */
#define RV_PART 16
static void part_rows(nx_fmt in, size_t n, double *a, double *b)
{
    for (unsigned v = 0; v < RV_PART; v++)
        mixed_row(in, n, v + 8, 0, a + v * n, b + v * n);
}

/* Smaller batches a class may be probed at: a class of few rows of R (the
 * remainder rows of a tile, a few leading rows) costs R rows a call for as
 * many probes as it has rows; at a batch of R' rows where some rows answer
 * the part rows as the class did at R (the same path: the same answers to
 * all sixteen), a call costs R' rows.  Tried where a class holds under an
 * eighth of R; a batch size the kernel takes another path at (OpenBLAS
 * sgemv N at 3 rows) answers otherwise and is not used. */
static const size_t small_R[] = {1, 2, 3, 5, 7, 9, 11, 13, 15, 17, 19, 23, 31, 33, 63};
#define RV_NSMALL (sizeof small_R / sizeof *small_R)

typedef struct part_at {
    double *y; /* [RV_PART][R'] the part rows' answers at each index; NULL: not sent yet */
    int failed;
} part_at;

/* The part rows at R' (each at every index of R' rows), into pa->y. */
static nx_status part_send(rv_kernel *k, size_t Rs, size_t n, const double *pa_, const double *pb_, part_at *pa,
                           nx_err *err)
{
    double *a = malloc(Rs * n * sizeof *a), *b = malloc(Rs * n * sizeof *b);
    pa->y = malloc(RV_PART * Rs * sizeof *pa->y);
    nx_status st = NX_OK;
    if (!a || !b || !pa->y)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t p = 0; p < RV_PART && !st; p++) {
        for (size_t q = 0; q < Rs; q++) {
            memcpy(a + q * n, pa_ + p * n, n * sizeof *a);
            memcpy(b + q * n, pb_ + p * n, n * sizeof *b);
        }
        st = rv_call(k, Rs, n, a, b, pa->y + p * Rs, err);
    }
    free(a);
    free(b);
    return st;
}

static nx_status order_by_row(rv_kernel *k, const rv_opts *o, size_t R, rv_result *res, nx_err *err)
{
    size_t n = o->n;
    rowview v = {.k = k, .R = R, .n = n};
    rv_kernel vk = {.eval = rowview_eval, .impl = &v, .in_fmt = k->in_fmt, .out_fmt = k->out_fmt};
    int *cls = malloc(R * sizeof *cls);
    size_t *cnt = calloc(R, sizeof *cnt), *rep = calloc(R, sizeof *rep);
    char **br = calloc(R, sizeof *br); /* the bracketing of each class */
    rv_result *cr = calloc(R, sizeof *cr);
    char **osel = NULL;      /* [ncls]: each class's selector */
    size_t *ord = NULL;      /* the classes in the order they are listed */
    char **gsel = NULL;      /* grid selectors, in that order */
    const int grid = k->grid_m && k->grid_n;
    rv_rowprobe *pr = NULL;  /* the kept probe rows */
    size_t ncls = 0;
    size_t calls0 = k->calls, probes0 = k->probes;
    nx_status st = NX_OK;
    size_t npart = 0;                              /* the part rows' memo entries (the first) */
    double *pa_ = NULL, *pb_ = NULL, pyy[RV_PART]; /* the part rows */
    part_at at[RV_NSMALL];                         /* their answers at the smaller batches */
    memset(at, 0, sizeof at);
    v.a = malloc(R * n * sizeof *v.a);
    v.b = malloc(R * n * sizeof *v.b);
    if (!cls || !cnt || !rep || !br || !cr || !v.a || !v.b) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    if (!grid && R > 1) {
        int of;
        if (!(pa_ = malloc(RV_PART * n * sizeof *pa_)) || !(pb_ = malloc(RV_PART * n * sizeof *pb_))) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        part_rows(k->in_fmt, n, pa_, pb_);
        if ((st = vk.eval(&vk, RV_PART, n, pa_, pb_, pyy, &of, err)))
            goto out;
        npart = v.count; /* the memo's first entries */
    }
    for (size_t ri = 0; ri < R; ri++) {
        /* the reveal is a function of the answers: a row index that gave
         * a class's first row index the same answer to every probe sent so
         * far would reveal the same tree by the same probes */
        size_t same = ncls;
        for (size_t c = 0; c < ncls && same == ncls; c++) {
            size_t i = 0;
            while (i < v.count && !memcmp(&v.m[i].y[ri], &v.m[i].y[rep[c]], sizeof(double)))
                i++;
            if (i == v.count)
                same = c;
        }
        if (same < ncls) {
            cls[ri] = (int)same;
            cnt[same]++;
            continue;
        }
        v.ri = ri;
        rv_result t = {0};
        /* the rows that answer as ri did to every probe so far (part_rows'
         * rows and every probe sent at every index): a class of two rows
         * or more is revealed packed, its rows each holding a probe of
         * their own; where that reveals no tree, once more a probe at a
         * time, at every index */
        size_t *srow = NULL, ns = 0;
        if (!grid && R > 1 && (srow = malloc(R * sizeof *srow))) {
            for (size_t r = ri; r < R; r++) {
                size_t i = 0;
                while (i < v.count && !memcmp(&v.m[i].y[r], &v.m[i].y[ri], sizeof(double)))
                    i++;
                if (i == v.count)
                    srow[ns++] = r;
            }
        }
        st = NX_EUNSUPPORTED;
        /* a smaller batch where the class's path shows on more rows for its
         * size (small_R) */
        size_t bestR = R, *brow = srow, nb = ns, cand[2][64];
        int cb = 0;
        if (ns && npart == RV_PART && ns * 8 < R && !k->exact_rows) {
            nx_status fatal = NX_OK;
            for (size_t q = 0; q < RV_NSMALL && small_R[q] < R && !fatal; q++) {
                size_t Rs = small_R[q], m = 0;
                if (at[q].failed)
                    continue;
                if (!at[q].y) {
                    nx_status s2 = part_send(k, Rs, n, pa_, pb_, &at[q], err);
                    if (s2 == NX_ENOMEM || (s2 && k->killed)) {
                        fatal = s2;
                        break;
                    }
                    if (s2) { /* the kernel declines R' rows: not used */
                        memset(err, 0, sizeof *err);
                        at[q].failed = 1;
                        continue;
                    }
                }
                for (size_t r = 0; r < Rs; r++) {
                    size_t p = 0;
                    while (p < RV_PART && !memcmp(&at[q].y[p * Rs + r], &v.m[p].y[ri], sizeof(double)))
                        p++;
                    if (p == RV_PART)
                        cand[cb][m++] = r;
                }
                if (m && Rs * nb < bestR * m) { /* fewer rows a probe */
                    bestR = Rs;
                    brow = cand[cb];
                    nb = m;
                    cb ^= 1;
                }
            }
            if (fatal) {
                st = fatal;
                free(srow);
                goto out;
            }
        }
        if (bestR < R || ns >= 2) {
            packview pv = {.v = &v, .rows = brow, .nrows = nb, .R = bestR};
            rv_kernel pk = {.eval = packview_eval, .impl = &pv, .in_fmt = k->in_fmt, .out_fmt = k->out_fmt};
            st = order_once(&pk, o, &t, err);
            free(pv.a);
            free(pv.b);
            free(pv.y);
            if (st && st != NX_ENOMEM && !k->killed) {
                if (o->verbose)
                    fprintf(stderr, "reveal: row %zu's class of %zu rows, packed: %s; again a probe at a time\n", ri,
                            ns, err->msg);
                rv_result_free(&t);
                memset(&t, 0, sizeof t);
                memset(err, 0, sizeof *err);
                st = NX_EUNSUPPORTED;
            } else if (!st && o->verbose)
                fprintf(stderr, "reveal: row %zu's class revealed packed, a probe on each of its %zu rows of %zu a call\n",
                        ri, nb, bestR);
        }
        free(srow);
        if (st == NX_EUNSUPPORTED)
            st = order_once(&vk, o, &t, err);
        if (st) {
            rv_result_free(&t);
            if (st == NX_EUNSUPPORTED) {
                char m[sizeof err->msg];
                snprintf(m, sizeof m, "%s", err->msg);
                st = nx_err_set(err, NX_EUNSUPPORTED, "row %zu of %zu: %s", ri, R, m);
            }
            goto out;
        }
        char *b = rv_tree_text(&t.tree);
        if (!b) {
            rv_result_free(&t);
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        size_t c = 0;
        while (c < ncls && strcmp(br[c], b))
            c++;
        if (c == ncls) {
            rep[ncls] = ri;
            br[ncls] = b;
            cr[ncls++] = t;
        } else {
            free(b);
            rv_result_free(&t);
        }
        cls[ri] = (int)c;
        cnt[c]++;
    }
    /* the class of most rows is the point's own */
    size_t top = 0;
    for (size_t c = 1; c < ncls; c++)
        if (cnt[c] > cnt[top])
            top = c;
    rv_tree_free(&res->tree);
    free(res->tree_text);
    res->tree = cr[top].tree;
    memset(&cr[top].tree, 0, sizeof cr[top].tree);
    res->tree_text = cr[top].tree_text;
    cr[top].tree_text = NULL;
    res->n = n;
    res->filler_sign = cr[top].filler_sign;
    res->count_bits = cr[top].count_bits;
    res->in_fmt = k->in_fmt;
    res->out_fmt = k->out_fmt;
    res->rows_differ = ncls > 1;
    res->probe_rows = R;
    /* a class no one selector holds (leading rows and remainder rows in
     * one order) is given one selector per run of consecutive rows */
    res->class_select = calloc(ncls + R, sizeof *res->class_select);
    res->class_tree = calloc(ncls + R, sizeof *res->class_tree);
    res->class_rt = calloc(ncls + R, sizeof *res->class_rt);
    int *one = malloc(R * sizeof *one);
    if (!res->class_select || !res->class_tree || !res->class_rt || !one) {
        free(one);
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    res->nclass = 1;
    res->class_tree[0] = res->tree_text ? strdup(res->tree_text) : NULL;
    /* each class's selector at R, then held at other batch sizes */
    osel = calloc(ncls, sizeof *osel);
    pr = calloc(v.kept + 1, sizeof *pr);
    if (!osel || !pr) {
        free(one);
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* the order the classes are listed in (first true wins): class by
     * class, or on a grid the order its selectors need */
    ord = malloc((ncls ? ncls : 1) * sizeof *ord);
    gsel = calloc(ncls ? ncls : 1, sizeof *gsel);
    if (!ord || !gsel) {
        free(one);
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    size_t nord = ncls;
    for (size_t c = 0; c < ncls; c++)
        ord[c] = c;
    if (grid) {
        if (grid_selectors(k, cls, cnt, ncls, top, gsel, ord)) {
            free(one);
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto out;
        }
        nord = ncls - 1;
        for (size_t x = 0; x < nord; x++) {
            if (cr[ord[x]].tree_text)
                osel[ord[x]] = gsel[x];
            else
                free(gsel[x]);
            gsel[x] = NULL;
        }
    } else
        for (size_t c = 0; c < ncls; c++)
            if (c != top && cr[c].tree_text)
                osel[c] = rv_row_selector(cls, R, (int)c);
    size_t npr = 0;
    for (size_t i = 0; i < v.count; i++)
        if (v.m[i].in)
            pr[npr++] = (rv_rowprobe){v.m[i].in, v.m[i].in + n, v.m[i].y};
    size_t rc0 = k->calls, rp0 = k->probes;
    if (ncls > 1 && !grid) /* a grid holds at its one R = M * N */
        st = rv_rows_induce(k, n, R, pr, npr, cls, rep, ncls, osel, res->rows_R, &res->rows_nR, err);
    calls0 += k->calls - rc0; /* counted as the row probes' own, below */
    probes0 += k->probes - rp0;
    res->rows_calls = k->calls - rc0;
    res->rows_probes = k->probes - rp0;
    for (size_t q = 0; q < nord && !st; q++) {
        size_t c = ord[q];
        if (c == top)
            continue;
        if (!cr[c].tree_text) {
            size_t r0 = 0;
            while (cls[r0] != (int)c)
                r0++;
            st = nx_err_set(err, NX_EUNSUPPORTED, "row %zu of %zu reduces in an order no tree of the language names: %s",
                            r0, R, br[c]);
            break;
        }
        char *sel = osel[c];
        osel[c] = NULL;
        if (sel) {
            res->class_select[res->nclass] = sel;
            if (tree_copy(&res->class_rt[res->nclass], &cr[c].tree))
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
            res->class_tree[res->nclass++] = strdup(cr[c].tree_text);
            continue;
        }
        for (size_t r = 0; r < R && !st; r++) {
            if (cls[r] != (int)c || (r > 0 && cls[r - 1] == (int)c))
                continue;
            for (size_t q = 0; q < R; q++)
                one[q] = q >= r && cls[q] == (int)c && (q == r || one[q - 1] == (int)c) ? (int)c : -1;
            res->class_select[res->nclass] = rv_row_selector(one, R, (int)c);
            if (tree_copy(&res->class_rt[res->nclass], &cr[c].tree))
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
            res->class_tree[res->nclass++] = strdup(cr[c].tree_text);
        }
    }
    free(one);
    /* each row index's class, in the order of the selectors (first true wins) */
    if (!st && !(res->row_class = malloc(R * sizeof *res->row_class)))
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t r = 0; r < R && !st; r++) {
        res->row_class[r] = 0;
        for (size_t c = 1; c < res->nclass; c++)
            if (sel_true(res->class_select[c], r, R, k->grid_m, k->grid_n) == 1) {
                res->row_class[r] = (int)c;
                break;
            }
        if (strcmp(res->class_tree[res->row_class[r]], cr[cls[r]].tree_text ? cr[cls[r]].tree_text : res->tree_text))
            st = nx_err_set(err, NX_EINTERNAL, "row %zu: its selector names another class than its probes", r);
    }
    for (size_t c = 0; c < res->nclass && !st; c++)
        if (!res->class_tree[c] || (c && !res->class_select[c]))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
out:
    free(pa_);
    free(pb_);
    for (size_t q = 0; q < RV_NSMALL; q++)
        free(at[q].y);
    res->order_calls = k->calls - calls0;
    res->order_probes = k->probes - probes0;
    for (size_t c = 0; c < ncls; c++) {
        free(br[c]);
        rv_result_free(&cr[c]);
    }
    rowview_free(&v);
    free(cls);
    free(cnt);
    free(rep);
    free(br);
    free(cr);
    for (size_t c = 0; osel && c < ncls; c++)
        free(osel[c]);
    free(osel);
    for (size_t c = 0; gsel && c < ncls; c++)
        free(gsel[c]);
    free(gsel);
    free(ord);
    free(pr);
    return st;
}

size_t rv_induction_length(size_t n)
{
    /* 7 mod 8 where n mod 8 < 4, else 3 mod 8: one of the two lengths
     * runs a peel of 4 (a loop of 8 whose remainder of 4 or more goes
     * through 4 lanes first) */
    size_t want = n % 8 < 4 ? 7 : 3, m = n + 1;
    while (m % 8 != want)
        m++;
    if (m > RV_MAX_N)
        for (m = n - 1; m % 8 != want; m--)
            ;
    return m;
}

/* The third length of induction for a name with folded lanes: the least
 * length past n and n2 that leaves W - 5 terms after the lanes' first loop
 * of W (W a multiple of 8 from 16 on: 3 modulo 8 as well), so that every
 * narrower loop between the folds runs; 0 for any other name. */
static size_t lanes_length(const char *name, size_t n, size_t n2)
{
    const char *l = name ? strstr(name, "lanes(") : NULL;
    if (!l || !strstr(l, "fold("))
        return 0;
    size_t W = strtoul(l + 6, NULL, 10);
    if (W < 16 || W % 8)
        return 0;
    size_t m = (n > n2 ? n : n2) + 1;
    while (m % W != W - 5)
        m++;
    return m <= RV_MAX_N ? m : 0;
}

/* Several names may hold at every length probed so far (tile(512, seq,
 * seq, halve=8) and tile(320, seq, seq, halve=8) both cut 517 and 523 into
 * two halves).  The others are looked for; where there are any, the order
 * is probed at the first length of a short list (n/4 + 3, n/2 + 3,
 * 3n/2 + 1, 2n + 3) at which their bracketings differ, and the first name
 * (search order) that holds there too is kept: moved to alt[0].  alt
 * holds the nall names rv_recognise_names found. */
static nx_status separate(rv_kernel *k, const rv_opts *o, rv_result *res, const size_t *ns, size_t m, char **alt,
                         size_t nall, nx_err *err)
{
    size_t live = nall, n = o->n, probed[RV_SEPARATE_ROUNDS];
    size_t np = 0;
    nx_status st = NX_OK;
    /* rounds: each probes one length where the names still alive differ
     * and keeps those that hold there (in search order), until one is
     * left (loop(2, 4) and loop(2, 8) agree at every length 3 mod 8; a
     * second length 7 mod 8 parts them, a third loop(2, 16)) */
    for (int round = 0; round < RV_SEPARATE_ROUNDS && live >= 2 && !st; round++) {
        /* the cheapest first (the probes cost about n^1.8), none past 2n +
         * 3: names that agree on every length up to there are left to the
         * confirmation at other lengths; then n/2 + 4 ... n/2 + 66, every
         * remainder of a loop up to 64 terms a round */
        size_t L = 0;
        for (size_t i = 0; i < 4 + 63 && !L; i++) {
            const size_t fixed[] = {n / 4 + 3, n / 2 + 3, n + n / 2 + 1, 2 * n + 3};
            size_t x = i < 4 ? fixed[i] : n / 2 + 3 + (i - 3);
            int seen = x < 2 || x > RV_MAX_N;
            for (size_t j = 0; j < m && !seen; j++)
                seen = ns[j] == x;
            for (size_t j = 0; j < np && !seen; j++)
                seen = probed[j] == x;
            if (seen)
                continue;
            uint64_t h0 = rv_text_hash(alt[0], x);
            for (size_t a = 1; a < live && !L; a++)
                if (rv_text_hash(alt[a], x) != h0)
                    L = x;
        }
        if (!L)
            break;
        probed[np++] = L;
        rv_opts o2 = *o;
        o2.n = L;
        o2.no_induce = 1;
        rv_result r = {0};
        size_t calls0 = k->calls, probes0 = k->probes;
        st = order_once(k, &o2, &r, err);
        res->induce_calls += k->calls - calls0;
        res->induce_probes += k->probes - probes0;
        if (!round) {
            res->separate_n = L;
            res->separate_names = live;
        }
        res->separate_n_last = L;
        res->separate_rounds = np;
        if (st && st != NX_ENOMEM && !k->killed) {
            memset(err, 0, sizeof *err); /* no tree there: the first name stays */
            st = NX_OK;
            rv_result_free(&r);
            break;
        } else if (st && st != NX_ENOMEM) {
            nx_err_prefix(err, "the order at n = %zu (telling %zu names apart)", L, live);
        } else if (!st) {
            /* those that hold at L to the front, in order */
            size_t kept = 0;
            for (size_t a = 0; a < live; a++)
                if (rv_tree_is(&r.tree, alt[a], L)) {
                    char *x = alt[kept];
                    alt[kept++] = alt[a];
                    alt[a] = x;
                }
            res->separate_kept = kept > 0;
            if (kept)
                live = kept;
            else
                live = 0; /* none holds: the first stays, no further round */
        }
        rv_result_free(&r);
    }
    return st;
}

/* The order again at the induction length (at every row index when
 * by_row), into *r2, its probes and calls counted in res->induce_*.
 * *done = 1 where induction ends there: no tree (or a kernel that declines
 * that length: an error exit, a point that does not expand there), the
 * order named at n alone and the reason kept (RV_INDUCE_NO_TREE, NX_OK);
 * or a kernel killed for hanging or a wrong answer, which has failed as
 * it would at n (the error, prefixed). */
static nx_status order_again(rv_kernel *k, const rv_opts *o, rv_result *res, int by_row, rv_result *r2, int *done,
                             nx_err *err)
{
    size_t n2 = rv_induction_length(o->n);
    rv_opts o2 = *o;
    o2.n = n2;
    o2.no_induce = 1;
    o2.probe_rows = res->probe_rows;
    size_t calls0 = k->calls, probes0 = k->probes;
    nx_status st = by_row ? rv_reveal_order(k, &o2, r2, err) : order_once(k, &o2, r2, err);
    res->induce_n = n2;
    res->induce_calls = k->calls - calls0;
    res->induce_probes = k->probes - probes0;
    *done = st != NX_OK;
    if (st && st != NX_ENOMEM && !k->killed) {
        res->induce = RV_INDUCE_NO_TREE;
        res->induce_why = strdup(err->msg);
        memset(err, 0, sizeof *err);
        return res->induce_why ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    if (st)
        nx_err_prefix(err, "the order again at n = %zu (induction)", n2);
    return st;
}

/* Induction for a kernel with row classes: the order is probed again at
 * every row index at rv_induction_length(n); where the rows fall into the
 * same classes there (the same selectors), each class is named by the
 * first tree text that has its bracketings at both lengths.  A class with
 * no such name keeps its name at n (res->induce_classes_alone counts
 * them); other classes there: RV_INDUCE_NO_TREE, said why. */
/* separate() for class c of a kernel with row classes: the order probed
 * at one row index of the class (a rowview of R = res->probe_rows rows), so
 * that names that agree at n and its induction length are told apart as
 * for a kernel without classes (names[0] becomes the kept one). */
static nx_status separate_class(rv_kernel *k, const rv_opts *o, rv_result *res, size_t c, const size_t *ns,
                                char **names, size_t nn, nx_err *err)
{
    size_t R = res->probe_rows, ri = 0;
    while (ri < R && res->row_class[ri] != (int)c)
        ri++;
    if (nn < 2 || ri == R)
        return NX_OK;
    rowview v = {.k = k, .R = R, .ri = ri}; /* its rows grow to the lengths probed */
    rv_kernel vk = {.eval = rowview_eval, .impl = &v, .in_fmt = k->in_fmt, .out_fmt = k->out_fmt};
    nx_status st = separate(&vk, o, res, ns, 2, names, nn, err);
    rowview_free(&v);
    return st;
}

static nx_status induce_classes(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err)
{
    if (!res->class_rt || !res->tree_text)
        return NX_OK;
    for (size_t c = 0; c < res->nclass; c++)
        if (!res->class_tree[c])
            return NX_OK;
    size_t n2 = rv_induction_length(o->n);
    rv_result r2 = {0};
    int done;
    nx_status st = order_again(k, o, res, 1, &r2, &done, err);
    res->induce_classes = 1;
    if (done) {
        rv_result_free(&r2);
        return st;
    }
    /* the same classes: the same rows of the R probed in each, whatever
     * their selectors (at n2 a row whose arithmetic moves with R may leave
     * the selector over R undecided, `r < 254` where n held `r < R - R %
     * 2`); map[c] is class c's index at n2 */
    size_t R = res->probe_rows;
    int same = r2.nclass == res->nclass && r2.class_rt && r2.row_class && res->row_class && r2.probe_rows == R;
    size_t *map = malloc((res->nclass + 1) * sizeof *map);
    int *back = malloc((res->nclass + 1) * sizeof *back);
    if (!map || !back) {
        free(map);
        free(back);
        rv_result_free(&r2);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t c = 0; same && c < res->nclass; c++) {
        map[c] = SIZE_MAX;
        back[c] = -1;
    }
    for (size_t r = 0; r < R && same; r++) {
        size_t c = (size_t)res->row_class[r], c2 = (size_t)r2.row_class[r];
        if (map[c] == SIZE_MAX && back[c2] < 0) {
            map[c] = c2;
            back[c2] = (int)c;
        }
        same = map[c] == c2 && back[c2] == (int)c;
    }
    for (size_t c = 0; c < res->nclass && same; c++)
        same = map[c] != SIZE_MAX;
    if (!same) {
        char why[512];
        size_t wl = (size_t)snprintf(why, sizeof why, "the rows fall into %zu class(es) there", r2.nclass);
        for (size_t c = 1; c < r2.nclass && wl < sizeof why - 64; c++)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s select = \"%s\"", c == 1 ? ":" : ",",
                                   r2.class_select[c] ? r2.class_select[c] : "?");
        snprintf(why + (wl < sizeof why ? wl : sizeof why - 1), sizeof why - (wl < sizeof why ? wl : sizeof why - 1),
                 ", not the %zu of n = %zu", res->nclass, o->n);
        res->induce = RV_INDUCE_NO_TREE;
        res->induce_why = strdup(why);
        rv_result_free(&r2);
        free(map);
        free(back);
        return res->induce_why ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    free(back);
    int renamed = 0;
    for (size_t c = 0; c < res->nclass && !st; c++) {
        const rv_tree *ts[2] = {c ? &res->class_rt[c] : &res->tree, map[c] ? &r2.class_rt[map[c]] : &r2.tree};
        size_t ns[2] = {o->n, n2};
        char *names[RV_ALT_MAX + 1];
        size_t nn = rv_recognise_names(ts, ns, 2, o->hints, o->nhints, names, RV_ALT_MAX + 1);
        if (nn > 1)
            st = separate_class(k, o, res, c, ns, names, nn, err);
        for (size_t i = 1; i < nn; i++)
            free(names[i]);
        if (st) {
            if (nn)
                free(names[0]);
            break;
        }
        if (!nn) {
            res->induce_classes_alone++;
            continue;
        }
        if (strcmp(names[0], res->class_tree[c])) {
            renamed = 1;
            free(res->class_tree[c]);
            res->class_tree[c] = names[0];
            if (!c) {
                free(res->induce_alone);
                res->induce_alone = res->tree_text;
                if (!(res->tree_text = strdup(names[0])))
                    st = nx_err_set(err, NX_ENOMEM, "out of memory");
            }
        } else
            free(names[0]);
    }
    res->induce = res->induce_classes_alone ? RV_INDUCE_ONE_LENGTH : renamed ? RV_INDUCE_RENAMED : RV_INDUCE_HOLDS;
    rv_result_free(&r2);
    free(map);
    return st;
}

/* Induction: the order at n is one bracketing, and several names of the
 * language may expand to it there (split(4, pairwise, seq) and tile(8,
 * pairwise, seq) at n = 32) while only one is the kernel's loop.  The
 * order is revealed again at rv_induction_length(n) and named by the
 * first tree text of the recogniser's search that has both bracketings. */
static nx_status induce(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err)
{
    if (res->nclass > 1)
        return induce_classes(k, o, res, err);
    if (!res->tree_text || res->rows_differ)
        return NX_OK; /* RV_INDUCE_NOT_RUN */
    size_t n2 = rv_induction_length(o->n);
    rv_opts o2 = *o;
    rv_result r2 = {0};
    size_t calls0 = k->calls, probes0 = k->probes;
    int done;
    nx_status st = order_again(k, o, res, 0, &r2, &done, err);
    if (!done) {
        const rv_tree *ts[3] = {&res->tree, &r2.tree, NULL};
        size_t ns[3] = {o->n, n2, 0}, m = 2;
        rv_result r3 = {0};
        size_t n3 = lanes_length(res->tree_text, o->n, n2);
        if (!n3 && r2.tree_text)
            n3 = lanes_length(r2.tree_text, o->n, n2);
        if (n3) {
            /* folded lanes: loops that run only on a long enough remainder
             * (after a fold, before the next) show at a third length */
            o2.n = n3;
            st = order_once(k, &o2, &r3, err);
            res->induce_calls = k->calls - calls0;
            res->induce_probes = k->probes - probes0;
            if (st == NX_ENOMEM || (st && k->killed)) {
                rv_result_free(&r3);
                rv_result_free(&r2);
                if (st != NX_ENOMEM)
                    nx_err_prefix(err, "the order again at n = %zu (induction)", n3);
                return st;
            }
            if (!st) {
                res->induce_n3 = n3;
                ts[2] = &r3.tree;
                ns[2] = n3;
                m = 3;
            }
            memset(err, 0, sizeof *err);
            st = NX_OK;
        }
        char *names[RV_ALT_MAX + 1];
        size_t nn = rv_recognise_names(ts, ns, m, o->hints, o->nhints, names, RV_ALT_MAX + 1);
        st = separate(k, o, res, ns, m, names, nn, err);
        char *name = nn ? names[0] : NULL; /* separate puts the kept name first */
        for (size_t i = 1; i < nn; i++)
            free(names[i]);
        if (st) {
            free(name);
            rv_result_free(&r3);
            rv_result_free(&r2);
            return st;
        }
        rv_result_free(&r3);
        if (name && !strcmp(name, res->tree_text)) {
            res->induce = RV_INDUCE_HOLDS;
            free(name);
        } else {
            res->induce = name ? RV_INDUCE_RENAMED : RV_INDUCE_ONE_LENGTH;
            res->induce_alone = res->tree_text;
            res->tree_text = name ? name : strdup(res->induce_alone);
            res->induce_other = r2.tree_text;
            r2.tree_text = NULL;
            if (!res->tree_text)
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
        }
    }
    rv_result_free(&r2);
    return st;
}

nx_status rv_size_switch(rv_kernel *k, const rv_opts *o, size_t n_lo, const char *tree_lo, size_t n_hi,
                         const char *tree_hi, size_t *T, size_t *reveals, nx_err *err)
{
    *T = 0;
    *reveals = 0;
    if (n_hi <= n_lo)
        return nx_err_set(err, NX_EINVAL, "size classes: %zu is not above %zu", n_hi, n_lo);
    size_t lo = n_lo, hi = n_hi;
    rv_opts o2 = *o;
    o2.no_induce = 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        rv_result r = {0};
        o2.n = mid;
        nx_status st = order_once(k, &o2, &r, err);
        (*reveals)++;
        if (st == NX_ENOMEM) {
            rv_result_free(&r);
            return st;
        }
        int is_lo = !st && rv_tree_is(&r.tree, tree_lo, mid), is_hi = !st && rv_tree_is(&r.tree, tree_hi, mid);
        rv_result_free(&r);
        if (st)
            memset(err, 0, sizeof *err);
        if (is_lo && !is_hi)
            lo = mid;
        else if (is_hi && !is_lo)
            hi = mid;
        else
            return NX_OK; /* neither (or both): no single switch */
    }
    *T = hi;
    return NX_OK;
}

nx_status rv_reveal_order(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err)
{
    size_t R = o->probe_rows ? o->probe_rows : o->fit_rows ? o->fit_rows : RV_DEFAULT_ROWS;
    if (o->n < 2)
        return nx_err_set(err, NX_EINVAL, "--n: the order needs at least 2 terms");
    int differ = 0;
    size_t calls0 = k->calls, probes0 = k->probes;
    nx_status st = R >= 2 ? rows_differ_check(k, o->n, R, &differ, err) : NX_OK;
    if (st)
        return st;
    if (differ) {
        if (o->verbose)
            fprintf(stderr, "reveal: one row gives different results at different row indices of %zu rows: "
                            "probing every row index\n", R);
        st = order_by_row(k, o, R, res, err);
    } else {
        st = order_once(k, o, res, err);
        if (st == NX_EUNSUPPORTED && R >= 2) {
            /* no tree from the mixed rows of a call: perhaps row classes
             * the check rows did not show */
            if (o->verbose)
                fprintf(stderr, "reveal: %s: probing every row index of %zu rows\n", err->msg, R);
            rv_tree_free(&res->tree);
            st = order_by_row(k, o, R, res, err);
        }
    }
    res->probe_rows = R;
    res->order_calls = k->calls - calls0;
    res->order_probes = k->probes - probes0;
    if (!st && !o->no_induce)
        st = induce(k, o, res, err);
    return st;
}
