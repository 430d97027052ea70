/* power.c: the power checks of one family point (power.h, docs/power.md):
 * variant runs and order probes through the class backend, each against
 * the exact reference of the same variant, and the neighbouring points the
 * inputs tell apart from the declared one.
 *
 * What varies per family is data (the tables below): the awkward shapes,
 * the params that make inputs and outputs fp32, the tensor that carries
 * the order probes and the tensors filled with ones around it. */
#include "power.h"
#include "famdesc.h"

#include "nx_program.h"
#include "nx_round_fast.h"
#include "rows.h"
#include "nx_sbuf.h"
#include "refimpl.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- the families as data ---------------------------------------------------------- */

/* What the checks know of each family (its shapes, probes, value
 * reductions, final reduction, param neighbours) is its descriptor's:
 * family/famdesc.h. */

/* The largest point (input elements) whose own shape is also run in fp32. */
#define OWN_SHAPE_MAX_ELEMS (1u << 17)

/* Lengths at which two trees are compared for equivalence: every length up
 * to 64 and the lengths the presets and the variants reduce over. */
static const size_t equiv_lengths[] = {96, 97, 100, 101, 128, 131, 160, 163, 180, 200, 203, 256, 384, 512, 1024, 1536, 4096};

/* --- small helpers -------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pw_opts_default(pw_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->threads = 1; /* the power runs are small: threads only wait on each other */
    o->threads_also = 3;
    o->threads_more[0] = 2;
    o->threads_more[1] = 4;
    o->threads_more[2] = 8;
    o->threads_more[3] = 0;
    o->engine = (int)ref_engine_default();
    o->neighbours = 1;
}

void pw_result_free(pw_result *r)
{
    if (!r)
        return;
    free(r->neigh);
    r->neigh = NULL;
    r->nneigh = 0;
}

static const char *fam_of(const fam_spec *s)
{
    return s->family ? s->family : "?";
}

/* A deep copy of s (reductions without row classes: no family point uses them). */
nx_status pw_spec_copy(const fam_spec *s, fam_spec *o, nx_err *err)
{
    memset(o, 0, sizeof *o);
    nx_status st = NX_OK;
#define DUP(f)                                                                                                         \
    if (s->f && !(o->f = strdup(s->f)))                                                                                \
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    DUP(family)
    DUP(point)
    DUP(class_name)
    DUP(kernel)
    DUP(hash)
#undef DUP
    for (size_t i = 0; i < s->nparams && !st; i++)
        st = fam_spec_set_param(o, s->params[i].name, s->params[i].value, err);
    for (size_t i = 0; i < s->nreds && !st; i++) {
        nx_point p;
        if ((st = nx_point_copy_base(&s->reds[i].point, &p, err)))
            break;
        st = fam_spec_add_reduction(o, s->reds[i].name, &p, s->reds[i].tree_text, err);
    }
    for (size_t i = 0; i < s->nelems && !st; i++)
        st = fam_spec_add_elem(o, s->elems[i].name, s->elems[i].impl, s->elems[i].approx, s->elems[i].ulp, err);
    o->tol = s->tol;
    if (st)
        fam_spec_free(o);
    return st;
}

/* "K=203,N=29" into params. */
static nx_status set_params(fam_spec *s, const char *list, nx_err *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = 0;
        nx_status st = fam_spec_set_param(s, tok, eq + 1, err);
        if (st)
            return st;
    }
    return NX_OK;
}

/* Every reduction's result kept in fp32 (where it had another out). */
static void reds_out_fp32(fam_spec *s)
{
    for (size_t i = 0; i < s->nreds; i++) {
        nx_point *p = &s->reds[i].point;
        if (nx_point_out(p) != NX_FP32) {
            if (p->out_rounding < 0)
                p->out_rounding = (int)nx_point_out_rounding(p);
            p->out = NX_FP32;
        }
    }
}

/* Output elements whose bits differ between two runs' outputs (every
 * tensor of a; a tensor missing or shaped otherwise in b counts whole). */
static size_t mismatches(const st_file *a, const st_file *b, char *first, size_t flen)
{
    size_t n = 0;
    if (first && flen)
        first[0] = 0;
    for (size_t t = 0; t < a->ntensors; t++) {
        const st_tensor *x = &a->tensors[t], *y = st_find(b, x->name);
        if (!y || y->dtype != x->dtype || y->nelem != x->nelem) {
            n += (size_t)x->nelem;
            if (first && flen && !first[0])
                snprintf(first, flen, "output '%s' missing or shaped otherwise", x->name);
            continue;
        }
        if (memcmp(x->data, y->data, (size_t)x->nbytes) == 0)
            continue;
        int f = rows_fmt_of_dtype(x->dtype);
        for (uint64_t i = 0; i < x->nelem; i++) {
            uint64_t u = st_get_bits(x, x->data, (size_t)i), v = st_get_bits(y, y->data, (size_t)i);
            if (u == v)
                continue;
            /* every NaN pattern of a format is equal (docs/numerics.md §2.4) */
            if (f >= 0 && isnan(nx_decode((nx_fmt)f, u, NULL)) && isnan(nx_decode((nx_fmt)f, v, NULL)))
                continue;
            if (first && flen && !first[0])
                snprintf(first, flen, "first %s[%llu]: kernel 0x%llx, reference 0x%llx", x->name,
                         (unsigned long long)i, (unsigned long long)u, (unsigned long long)v);
            n++;
        }
    }
    return n;
}

static size_t out_elems(const st_file *a)
{
    size_t n = 0;
    for (size_t t = 0; t < a->ntensors; t++)
        n += (size_t)a->tensors[t].nelem;
    return n;
}

/* --- the power inputs ------------------------------------------------------------------ */

typedef struct pw_case {
    char label[160];  /* "fp32, adversarial, M=5,N=29,K=203" */
    fam_spec spec;    /* the variant the kernel ran */
    st_file in, ref;  /* its inputs and the reference's outputs */
    int probe;        /* order probe rows */
    int prio;         /* the order the neighbours try the cases in: fp32 and normal first, probes last;
                         7: the input-space model's cases, which the neighbours do not use */
    int allthreads;   /* 2: also run at every count of pw_opts.threads_more */
    int model;        /* a case of the input-space model (space_cases) */
} pw_case;

static void case_free(pw_case *c)
{
    fam_spec_free(&c->spec);
    st_free(&c->in);
    st_free(&c->ref);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Pairs (i, j), i < j < n: every distance up to 9 and around each power of
 * two and each fraction n/2 .. n/8 (slice and lane boundaries), at the
 * start, the middle and the end; then random pairs.  At most cap. */
static size_t probe_pairs(size_t n, uint64_t seed, size_t *pi, size_t *pj, size_t cap)
{
    size_t k = 0;
    if (n < 2)
        return 0;
    size_t d[96], nd = 0;
    for (size_t x = 1; x <= 9; x++)
        d[nd++] = x;
    for (size_t p = 16; p < n && nd + 3 < 60; p *= 2)
        d[nd++] = p - 1, d[nd++] = p, d[nd++] = p + 1;
    for (size_t q = 2; q <= 8 && nd + 2 < 96; q++)
        d[nd++] = n / q, d[nd++] = n / q + 1;
    for (size_t a = 0; a < nd; a++) {
        if (d[a] == 0 || d[a] >= n)
            continue;
        size_t starts[4] = {0, 1, (n - d[a]) / 2, n - 1 - d[a]};
        for (int s = 0; s < 4; s++) {
            size_t i = starts[s], j = i + d[a];
            if (j >= n)
                continue;
            int dup = 0;
            for (size_t b = 0; b < k && !dup; b++)
                dup = pi[b] == i && pj[b] == j;
            if (!dup && k < cap)
                pi[k] = i, pj[k++] = j;
        }
    }
    uint64_t s = seed ^ 0x70726f6265ULL;
    for (int r = 0; r < 48 && k < cap; r++) {
        size_t i = (size_t)(splitmix(&s) % n), j = (size_t)(splitmix(&s) % n);
        if (i == j)
            continue;
        if (i > j) {
            size_t x = i;
            i = j;
            j = x;
        }
        pi[k] = i;
        pj[k++] = j;
    }
    return k;
}

/* Writes value v into every element of a float tensor, or integer iv into
 * every value of an integer tensor (packed int4: padding nibbles stay 0). */
static nx_status fill_tensor(st_tensor *t, const ref_tensor_desc *d, double v, nx_err *err)
{
    if (d->kind == REF_FLOAT) {
        uint64_t bits;
        nx_status st = nx_encode((nx_fmt)d->fmt, v, &bits, err);
        if (st)
            return st;
        for (uint64_t i = 0; i < t->nelem; i++)
            st_put_bits(t, t->data, (size_t)i, bits);
        return NX_OK;
    }
    long iv = (long)v;
    if (iv < d->lo || iv > d->hi)
        return nx_err_set(err, NX_EINVAL, "power: probe value %ld outside [%ld, %ld] of tensor '%s'", iv, d->lo, d->hi,
                          d->name);
    if (!d->packed4) {
        for (uint64_t i = 0; i < t->nelem; i++)
            st_put_bits(t, t->data, (size_t)i, (uint64_t)iv);
        return NX_OK;
    }
    size_t rb = (size_t)t->shape[t->ndim - 1], rows = rb ? (size_t)(t->nbytes / rb) : 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < (size_t)d->row; c++) {
            uint8_t *b = t->data + r * rb + c / 2;
            *b = (uint8_t)(c % 2 ? (*b & 0x0f) | (uint8_t)(iv << 4) : (*b & 0xf0) | (uint8_t)iv);
        }
    return NX_OK;
}

/* Filler and M for a pattern in format f: M a power of two far enough
 * above the fillers' sum (n of them) that a filler added to it is lost in
 * an fp32 accumulator; both exact in f. */
static void probe_values(nx_fmt f, size_t n, double *filler, double *big)
{
    int lg = 0;
    while (((size_t)1 << lg) < n)
        lg++;
    int want = 24 + lg + 2; /* fp32 precision, the count, a margin */
    const nx_format_info *fi = nx_format(f);
    double maxf = fi->max_finite;
    double m = ldexp(1.0, want);
    if (m <= maxf) {
        *filler = 1.0;
        *big = m;
        return;
    }
    double pm = ldexp(1.0, (int)floor(log2(maxf)));
    *filler = nx_fmt_min_normal(f);
    *big = pm;
}

/* --- running one case -------------------------------------------------------------------- */

typedef struct pw_ctx {
    const dev_backend *be;
    const fam_spec *spec;
    const pw_opts *o;
    pw_result *res;
    pw_case *cases;
    size_t ncases, cap;
    const char *kernel; /* the kernel the runs use: NULL, the point's; or its legacy kernel */
    int threads;        /* the kernel's threads in diagnose: the count at which it failed */
} pw_ctx;

static nx_status add_case(pw_ctx *c, pw_case **out, nx_err *err)
{
    if (c->ncases == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        pw_case *p = realloc(c->cases, cap * sizeof *p);
        if (!p)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        c->cases = p;
        c->cap = cap;
    }
    *out = &c->cases[c->ncases];
    memset(*out, 0, sizeof **out);
    st_init(&(*out)->in);
    st_init(&(*out)->ref);
    return NX_OK;
}

/* A new case of x: a copy of spec, counted, tried by the neighbours at
 * priority prio. */
static nx_status case_of(pw_ctx *x, const fam_spec *spec, int prio, pw_case **c, nx_err *err)
{
    nx_status st = add_case(x, c, err);
    if (!st && !(st = pw_spec_copy(spec, &(*c)->spec, err))) {
        x->ncases++;
        (*c)->prio = prio;
    }
    return st;
}

/* Fills t when the list names it. */
static nx_status fill_named(st_tensor *t, const ref_tensor_desc *d, const char *fills, nx_err *err)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", fills);
    nx_status st = NX_OK;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq && (size_t)(eq - tok) == strlen(d->name) && strncmp(tok, d->name, (size_t)(eq - tok)) == 0)
            st = fill_tensor(t, d, strtod(eq + 1, NULL), err);
    }
    return st;
}

/* Lays order probes into c->in (already generated for c->spec). */
static nx_status lay_probes(pw_case *c, const fam_probe *pb, size_t nrows, const size_t *pi, const size_t *pj, size_t n,
                            int tie_p, nx_err *err)
{
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    nx_status st = ref_inputs(&c->spec, &d, &nd, err);
    if (st)
        return st;
    char fills[128];
    snprintf(fills, sizeof fills, "%s", pb->fills);
    for (size_t k = 0; k < nd && !st; k++) {
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        if (!t)
            continue;
        if (strcmp(d[k].name, pb->tensor) == 0) {
            if (tie_p > 0) { /* row r sums to 2^p + 1 + 2r: halfway between two p-bit numbers */
                for (size_t r = 0; r < nrows && !st; r++) {
                    size_t target = ((size_t)1 << tie_p) + 1 + 2 * r, q = target / n, rem = target % n;
                    uint64_t lo, hi;
                    if ((st = nx_encode((nx_fmt)d[k].fmt, (double)q, &lo, err)) ||
                        (st = nx_encode((nx_fmt)d[k].fmt, (double)(q + 1), &hi, err)))
                        break;
                    for (size_t i = 0; i < n; i++)
                        st_put_bits(t, t->data, r * n + i, i < rem ? hi : lo);
                }
                continue;
            }
            double f, m;
            probe_values((nx_fmt)d[k].fmt, n, &f, &m);
            uint64_t bf, bp, bm;
            if ((st = nx_encode((nx_fmt)d[k].fmt, f, &bf, err)) || (st = nx_encode((nx_fmt)d[k].fmt, m, &bp, err)) ||
                (st = nx_encode((nx_fmt)d[k].fmt, -m, &bm, err)))
                break;
            for (size_t r = 0; r < nrows; r++)
                for (size_t i = 0; i < n; i++)
                    st_put_bits(t, t->data, r * n + i, i == pi[r] ? bp : i == pj[r] ? bm : bf);
            continue;
        }
        st = fill_named(t, &d[k], fills, err);
    }
    free(d);
    return st;
}

/* The fills ("w=1,topk_weights=1") of every input tensor of c. */
static nx_status apply_fills(pw_case *c, const char *fills, nx_err *err)
{
    if (!fills || !*fills)
        return NX_OK;
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    nx_status st = ref_inputs(&c->spec, &d, &nd, err);
    for (size_t k = 0; k < nd && !st; k++) {
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        if (t)
            st = fill_named(t, &d[k], fills, err);
    }
    free(d);
    return st;
}

/* Runs the kernel and the reference on case c; *nmis the mismatching
 * output elements (0: the same bits).  *dev keeps the kernel's outputs. */
static nx_status run_case(pw_ctx *x, pw_case *c, st_file *dev, size_t *nmis, char *first, size_t flen, nx_err *err)
{
    dev_opts d = {DEV_GRAPHED, x->o->threads, x->kernel};
    ref_opts ro = {x->o->threads, (nx_engine_kind)x->o->engine};
    nx_status st = dev_run(x->be, &c->spec, &c->in, dev, &d, err);
    if (!st)
        st = ref_run_opts(&c->spec, &c->in, &c->ref, &ro, err);
    if (st)
        return st;
    x->res->runs++;
    *nmis = mismatches(dev, &c->ref, first, flen);
    return NX_OK;
}

/* --- neighbours -------------------------------------------------------------------------------- */

typedef enum nb_kind { NB_TREE, NB_FMA, NB_ACC, NB_OUTR, NB_PARAM } nb_kind;

typedef struct nb_def {
    nb_kind kind;
    char red[32];
    char text[160]; /* NB_TREE: the tree; NB_PARAM: the param's value */
    char param[32];
    int value;      /* NB_ACC: nx_fmt; NB_OUTR: nx_mode; NB_FMA: 0/1 */
} nb_def;

typedef struct nb_list {
    nb_def *v;
    size_t n, cap;
} nb_list;

static int nb_push(nb_list *l, const nb_def *d)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].kind == d->kind && !strcmp(l->v[i].red, d->red) && !strcmp(l->v[i].text, d->text) &&
            !strcmp(l->v[i].param, d->param) && l->v[i].value == d->value)
            return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        nb_def *p = realloc(l->v, cap * sizeof *p);
        if (!p)
            return -1;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = *d;
    return 0;
}

static void nb_name(const fam_spec *s, const nb_def *d, char *buf, size_t len)
{
    const fam_reduction *r = d->red[0] ? fam_reduction_get(s, d->red) : NULL;
    switch (d->kind) {
    case NB_TREE: snprintf(buf, len, "%s = %s", d->red, d->text); break;
    case NB_FMA: snprintf(buf, len, "%s: fma = %s", d->red, d->value ? "true" : "false"); break;
    case NB_ACC: snprintf(buf, len, "%s: acc = %s", d->red, nx_format((nx_fmt)d->value)->name); break;
    case NB_OUTR:
        snprintf(buf, len, "%s: out_rounding = %s (out %s)", d->red, nx_mode_name((nx_mode)d->value),
                 r ? nx_format(nx_point_out(&r->point))->name : "?");
        break;
    case NB_PARAM: snprintf(buf, len, "%s = %s", d->param, d->text); break;
    }
}

/* The canonical text of tree text t, or NULL when it does not parse. */
static char *canon_tree(const char *t)
{
    nx_tree *tr = NULL;
    if (nx_tree_parse(t, "neighbour", &tr, NULL) != NX_OK)
        return NULL;
    char *s = nx_tree_print(tr);
    nx_tree_free(tr);
    return s;
}

static void push_tree(nb_list *l, const char *red, const char *declared, const char *cand)
{
    char *c = canon_tree(cand);
    if (c && strstr(c, "reverse(reverse(")) { /* the tree itself, spelt twice reversed */
        free(c);
        return;
    }
    if (c && strcmp(c, declared) != 0 && strlen(c) < sizeof l->v[0].text) {
        nb_def d = {.kind = NB_TREE};
        snprintf(d.red, sizeof d.red, "%s", red);
        snprintf(d.text, sizeof d.text, "%s", c);
        nb_push(l, &d);
    }
    free(c);
}

/* Tree neighbours of a declared tree text: every integer +-1, halved,
 * doubled and 1; every combinator among seq, pairwise, halving replaced by the
 * others or reversed; the whole tree reversed, split in two, and a plain
 * seq strided over 8 lanes. */
static void tree_neighbours(nb_list *l, const char *red, const char *t)
{
    static const char *const words[] = {"seq", "pairwise", "halving"};
    size_t n = strlen(t);
    char cand[512];
    for (size_t i = 0; i < n;) {
        size_t j = i;
        if (isdigit((unsigned char)t[i])) {
            while (j < n && isdigit((unsigned char)t[j]))
                j++;
            long v = strtol(t + i, NULL, 10);
            /* 1: a split or lane count that follows something else (the
             * thread count of one thread, a batch) */
            long alt[5] = {v - 1, v + 1, v % 2 == 0 ? v / 2 : 0, 2 * v, v > 2 ? 1 : 0};
            for (int a = 0; a < 5; a++) {
                if (alt[a] < 1)
                    continue;
                snprintf(cand, sizeof cand, "%.*s%ld%s", (int)i, t, alt[a], t + j);
                push_tree(l, red, t, cand);
            }
            i = j;
            continue;
        }
        if (isalpha((unsigned char)t[i])) {
            while (j < n && (isalnum((unsigned char)t[j]) || t[j] == '_'))
                j++;
            for (size_t w = 0; w < 3; w++) {
                if (j - i != strlen(words[w]) || strncmp(t + i, words[w], j - i) != 0)
                    continue;
                for (size_t o = 0; o < 3; o++)
                    if (o != w) {
                        snprintf(cand, sizeof cand, "%.*s%s%s", (int)i, t, words[o], t + j);
                        push_tree(l, red, t, cand);
                    }
                snprintf(cand, sizeof cand, "%.*sreverse(%s)%s", (int)i, t, words[w], t + j);
                push_tree(l, red, t, cand);
            }
            i = j;
            continue;
        }
        i++;
    }
    snprintf(cand, sizeof cand, "reverse(%s)", t);
    push_tree(l, red, t, cand);
    /* every reverse(X) undone */
    for (const char *r = strstr(t, "reverse("); r; r = strstr(r + 1, "reverse(")) {
        const char *in = r + 8, *e = in;
        int depth = 1;
        while (*e && depth) {
            depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
            if (depth)
                e++;
        }
        if (!*e)
            break;
        snprintf(cand, sizeof cand, "%.*s%.*s%s", (int)(r - t), t, (int)(e - in), in, e + 1);
        push_tree(l, red, t, cand);
    }
    if (strncmp(t, "split(", 6) != 0) {
        snprintf(cand, sizeof cand, "split(2, %s, seq)", t);
        push_tree(l, red, t, cand);
    }
    if (!strcmp(t, "seq")) {
        push_tree(l, red, t, "stride(8, seq, pairwise)");
        push_tree(l, red, t, "stride(4, seq, pairwise)");
    }
}

static int is_value_red(const fam_spec *s, const char *red)
{
    const fam_desc *fd = fam_desc_of(fam_of(s));
    for (size_t i = 0; fd && i < FAM_MAX_REDS && fd->value_reds[i].red; i++) {
        const fam_value_red *v = &fd->value_reds[i];
        if (strcmp(v->red, red))
            continue;
        if (!v->param)
            return 1;
        const char *pv = fam_param_get(s, v->param);
        if (pv && !strcmp(pv, v->value))
            return 1;
    }
    return 0;
}

/* 1: red rounds the final output; 2: and the output is its sum. */
static int is_final_red(const fam_spec *s, const char *red)
{
    const fam_desc *fd = fam_desc_of(fam_of(s));
    if (fd && fd->final_red && !strcmp(fd->final_red, red))
        return 1 + fd->final_is_sum;
    return 0;
}

static nx_status enumerate(const fam_spec *s, nb_list *l, nx_err *err)
{
    for (size_t r = 0; r < s->nreds; r++) {
        const fam_reduction *fr = &s->reds[r];
        /* attention's combine runs only with split > 0 */
        if (!strcmp(fam_of(s), "paged_decode_attention") && !strcmp(fr->name, "combine")) {
            const char *sp = fam_param_get(s, "split");
            if (!sp || !strcmp(sp, "0"))
                continue;
        }
        char *t = nx_tree_print(fr->point.tree);
        if (!t)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        tree_neighbours(l, fr->name, t);
        free(t);
        const nx_point *p = &fr->point;
        nb_def d = {.kind = NB_FMA};
        snprintf(d.red, sizeof d.red, "%s", fr->name);
        d.value = !p->fma;
        nb_push(l, &d);
        static const nx_fmt accs[] = {NX_FP32, NX_FP64, NX_FP16, NX_BF16};
        for (size_t a = 0; a < 4; a++)
            if ((nx_fmt)p->acc != accs[a]) {
                nb_def e = {.kind = NB_ACC, .value = (int)accs[a]};
                snprintf(e.red, sizeof e.red, "%s", fr->name);
                nb_push(l, &e);
            }
        int own = nx_point_out(p) != (nx_fmt)p->acc, fin = is_final_red(s, fr->name);
        if (own || fin) {
            /* ties away (rna) differs from rne only on exact ties: the tie
             * rows make them where the output is a sum, nothing makes them
             * after attention's division or rmsnorm's scaling (docs/power.md) */
            static const nx_mode modes[] = {NX_RNE, NX_RZ, NX_RNA};
            for (size_t m = 0; m < 3; m++)
                if (nx_point_out_rounding(p) != modes[m] && (modes[m] != NX_RNA || own || fin == 2)) {
                    nb_def e = {.kind = NB_OUTR, .value = (int)modes[m]};
                    snprintf(e.red, sizeof e.red, "%s", fr->name);
                    nb_push(l, &e);
                }
        }
    }
    const fam_desc *fd = fam_desc_of(fam_of(s));
    for (size_t i = 0; fd && i < FAM_MAX_REDS && fd->neighbours[i].param; i++) {
        const fam_neighbour *pn = &fd->neighbours[i];
        const char *cur = fam_param_get(s, pn->param);
        char buf[128];
        snprintf(buf, sizeof buf, "%s", pn->values);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            nb_def d = {.kind = NB_PARAM};
            snprintf(d.param, sizeof d.param, "%s", pn->param);
            if (tok[0] == '*' || tok[0] == '/') {
                long v = cur ? strtol(cur, NULL, 10) : 0;
                long f = strtol(tok + 1, NULL, 10);
                if (v <= 0 || f <= 0)
                    continue;
                snprintf(d.text, sizeof d.text, "%ld", tok[0] == '*' ? v * f : v / f);
            } else {
                snprintf(d.text, sizeof d.text, "%s", tok);
            }
            if (cur && !strcmp(cur, d.text))
                continue;
            nb_push(l, &d);
        }
    }
    return NX_OK;
}

/* The neighbour applied to a clone of s (a variant of the declared point). */
static nx_status nb_apply(const fam_spec *s, const nb_def *d, fam_spec *o, nx_err *err)
{
    nx_status st = pw_spec_copy(s, o, err);
    if (st)
        return st;
    fam_reduction *r = NULL;
    for (size_t i = 0; i < o->nreds; i++)
        if (!strcmp(o->reds[i].name, d->red))
            r = &o->reds[i];
    if (d->kind != NB_PARAM && !r) {
        fam_spec_free(o);
        return nx_err_set(err, NX_EINVAL, "power: no reduction '%s'", d->red);
    }
    switch (d->kind) {
    case NB_TREE: st = nx_point_set_tree(&r->point, d->text, d->red, err); break;
    case NB_FMA: r->point.fma = d->value; break;
    case NB_ACC:
        r->point.out = (int)nx_point_out(&r->point);
        r->point.out_rounding = (int)nx_point_out_rounding(&r->point);
        r->point.acc = (nx_fmt)d->value;
        break;
    case NB_OUTR: r->point.out_rounding = d->value; break;
    case NB_PARAM:
        st = fam_spec_set_param(o, d->param, d->text, err);
        if (!st && !strcmp(d->param, "scale_apply") && !strcmp(d->text, "per_group") && !fam_reduction_get(o, "group")) {
            nx_point p;
            if (!(st = nx_point_init(&p, err)))
                st = fam_spec_add_reduction(o, "group", &p, "seq", err);
        }
        break;
    }
    if (!st && r)
        st = nx_point_validate(&r->point, err);
    if (st)
        fam_spec_free(o);
    return st;
}

/* An expansion ("((+0+t0)+t4)+(...)", nx_program_expansion) with the two
 * operands of every addition sorted: two trees whose canonical forms agree
 * add the same values pairwise, and an IEEE addition (a fused step too) is
 * commutative bit for bit.  *p advances; NULL when out of memory. */
static char *canon_operand(const char **p);

static char *canon_pair(char *a, char *b)
{
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    if (strcmp(a, b) > 0) {
        char *t = a;
        a = b;
        b = t;
    }
    size_t n = strlen(a) + strlen(b) + 4;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "(%s+%s)", a, b);
    free(a);
    free(b);
    return s;
}

static char *canon_operand(const char **p)
{
    const char *s = *p;
    if (*s == '(') {
        *p = s + 1;
        char *a = canon_operand(p);
        if (a && **p == ')') { /* "(+0)": one operand in parentheses */
            (*p)++;
            return a;
        }
        if (**p == '+')
            (*p)++;
        char *b = canon_operand(p);
        if (**p == ')')
            (*p)++;
        return canon_pair(a, b);
    }
    size_t n = 0;
    if (*s == '[') { /* an atom: kept as printed */
        int depth = 0;
        do {
            depth += s[n] == '[' ? 1 : s[n] == ']' ? -1 : 0;
            n++;
        } while (s[n] && depth > 0);
    } else {
        if (*s == '+')
            n++; /* the start value +0 */
        while (s[n] && s[n] != '+' && s[n] != ')')
            n++;
    }
    *p = s + n;
    return strndup(s, n);
}

static char *canon_expansion(const char *e)
{
    const char *p = e;
    char *a = canon_operand(&p);
    while (a && *p == '+') {
        p++;
        a = canon_pair(a, canon_operand(&p));
    }
    return a;
}

/* 1 when the neighbour's tree has the declared tree's bracketing (up to
 * commuted operands) at every length of equiv_lengths and 1 .. 64. */
static int same_programs(const nx_point *a, const nx_point *b)
{
    for (size_t k = 0; k < 64 + sizeof equiv_lengths / sizeof equiv_lengths[0]; k++) {
        size_t n = k < 64 ? k + 1 : equiv_lengths[k - 64];
        nx_program *pa = NULL, *pb = NULL;
        char *ea = NULL, *eb = NULL, *ca = NULL, *cb = NULL;
        int same = nx_program_build(a, n, 1, &pa, NULL) == NX_OK && nx_program_build(b, n, 1, &pb, NULL) == NX_OK &&
                   (ea = nx_program_expansion(pa)) && (eb = nx_program_expansion(pb)) &&
                   (ca = canon_expansion(ea)) && (cb = canon_expansion(eb)) && strcmp(ca, cb) == 0;
        nx_program_free(pa);
        nx_program_free(pb);
        free(ea);
        free(eb);
        free(ca);
        free(cb);
        if (!same)
            return 0;
    }
    return 1;
}

/* Why an undistinguished neighbour is equivalent, or 0. */
static int equivalent(const fam_spec *s, const nb_def *d, char *why, size_t len)
{
    const fam_reduction *r = d->red[0] ? fam_reduction_get(s, d->red) : NULL;
    if (d->kind == NB_FMA && r && is_value_red(s, d->red)) {
        snprintf(why, len, "its terms are values, not products: fma has no effect");
        return 1;
    }
    const fam_desc *fd = fam_desc_of(fam_of(s));
    for (size_t i = 0; fd && d->kind == NB_FMA && r && i < FAM_MAX_REDS && fd->exact_products[i].red; i++)
        if (!strcmp(fd->exact_products[i].red, d->red) && r->point.acc == NX_FP32 && r->point.product < 0 &&
            r->point.in < 0) {
            snprintf(why, len, "%s", fd->exact_products[i].why);
            return 1;
        }
    if (d->kind == NB_TREE && r) {
        nx_point p;
        if (nx_point_copy_base(&r->point, &p, NULL) != NX_OK)
            return 0;
        int same = nx_point_set_tree(&p, d->text, d->red, NULL) == NX_OK && same_programs(&r->point, &p);
        nx_point_free(&p);
        if (same) {
            snprintf(why, len, "the same bracketing up to the order of each addition's operands (commutative, bit for bit) "
                 "at every length 1-64 and every length the power checks reduce over");
            return 1;
        }
    }
    return 0;
}

/* --- the check ----------------------------------------------------------------------------------- */

static int uses_atomic(const fam_spec *s)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (s->reds[i].point.tree && nx_tree_uses(s->reds[i].point.tree, NX_T_ATOMIC))
            return 1;
    return 0;
}

__attribute__((format(printf, 2, 3))) static void say(pw_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

/* Builds the cases of spec: for each awkward shape, the declared formats and
 * fp32, each under normal and adversarial inputs; then the order probes at
 * the declared and the awkward length. */
static nx_status special_cases(pw_ctx *x, const fam_spec *spec, const fam_desc *fd, nx_err *err);
static nx_status space_cases(pw_ctx *x, const fam_spec *spec, const fam_desc *fd, nx_err *err);

static nx_status build_cases(pw_ctx *x, const fam_spec *spec, nx_err *err)
{
    const char *fam = fam_of(spec);
    /* int inputs make every sum exact, so outputs land on rounding ties */
    static const nx_dist dists[3] = {NX_DIST_NORMAL, NX_DIST_ADVERSARIAL, NX_DIST_INT};
    nx_status st = NX_OK;
    /* first the point's own shape in fp32: cheap at a small shape, and it
     * tells most neighbours apart before the larger variants are needed;
     * left out at large shapes (8b-layer), where each neighbour would cost
     * a full reference run */
    uint64_t elems = 0;
    ref_tensor_desc *dd = NULL;
    size_t ndd = 0;
    if (ref_inputs(spec, &dd, &ndd, NULL) == NX_OK)
        for (size_t k = 0; k < ndd; k++) {
            uint64_t e = 1;
            for (int a = 0; a < dd[k].ndim; a++)
                e *= (uint64_t)dd[k].shape[a];
            elems += e;
        }
    free(dd);
    const fam_desc *fd = fam_desc_of(fam);
    const fam_variant *variants = fd ? fd->variants : NULL;
    size_t nvar = 0;
    while (fd && nvar < FAM_MAX_VARIANTS && variants[nvar].shape)
        nvar++;
    for (size_t v = 0; v < nvar && !st && elems <= OWN_SHAPE_MAX_ELEMS; v++) {
        pw_case *c = NULL;
        if ((st = add_case(x, &c, err)) || (st = pw_spec_copy(spec, &c->spec, err)))
            break;
        x->ncases++;
        if ((st = set_params(&c->spec, variants[v].fp32, err)))
            break;
        reds_out_fp32(&c->spec);
        snprintf(c->label, sizeof c->label, "fp32, normal inputs, the point's shape");
        c->prio = 0;
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        st = ref_generate(&c->spec, &go, &c->in, err);
        break;
    }
    for (size_t v = 0; v < nvar && !st; v++) {
        for (int fp32 = 0; fp32 < 2 && !st; fp32++)
            for (int di = 0; di < 3 - fp32 && !st; di++) {
                pw_case *c = NULL;
                if ((st = add_case(x, &c, err)) || (st = pw_spec_copy(spec, &c->spec, err)))
                    break;
                x->ncases++;
                if ((st = set_params(&c->spec, variants[v].shape, err)))
                    break;
                if (fp32) {
                    if ((st = set_params(&c->spec, variants[v].fp32, err)))
                        break;
                    reds_out_fp32(&c->spec);
                }
                snprintf(c->label, sizeof c->label, "%s, %s inputs, %s", fp32 ? "fp32" : "declared formats",
                         nx_dist_name(dists[di]), variants[v].shape);
                c->prio = 1 + (fp32 ? 0 : 1) + 2 * di;
                /* the cheap fp32 case at every count; 2 threads (which spin
                 * on a busy machine of 2 cores) on it alone */
                c->allthreads = v == 0 && (c->prio == 1 || (c->prio == 2 && !*variants[v].fp32)) ? 2 : 0;
                ref_gen_opts go = {x->o->seed, dists[di], 0, x->o->threads};
                if (!(st = ref_generate(&c->spec, &go, &c->in, err)))
                    st = apply_fills(c, variants[v].fills, err);
            }
    }
    /* fp16 outputs under adversarial inputs: the fp16 store's subnormal and
     * tie paths, which no bf16 point reaches */
    for (size_t v = 0; v < nvar && !st; v++) {
        if (!*variants[v].fp16)
            continue;
        pw_case *c = NULL;
        if ((st = add_case(x, &c, err)) || (st = pw_spec_copy(spec, &c->spec, err)))
            break;
        x->ncases++;
        if ((st = set_params(&c->spec, variants[v].shape, err)) || (st = set_params(&c->spec, variants[v].fp16, err)))
            break;
        snprintf(c->label, sizeof c->label, "fp16 outputs, adversarial inputs, %s", variants[v].shape);
        c->prio = 5;
        ref_gen_opts go = {x->o->seed, NX_DIST_ADVERSARIAL, 0, x->o->threads};
        if (!(st = ref_generate(&c->spec, &go, &c->in, err)))
            st = apply_fills(c, variants[v].fills, err);
    }
    for (size_t p = 0; p < (fd && fd->probe.red ? 1u : 0u) && !st; p++) {
        const fam_probe *pb = &fd->probe;
        if (!fam_reduction_get(spec, pb->red))
            continue;
        long lens[2] = {0, 0};
        if (fam_param_long(spec, pb->len, &lens[0], NULL) != NX_OK)
            continue;
        for (size_t v = 0; v < nvar; v++) {
            fam_spec tmp;
            if (pw_spec_copy(spec, &tmp, NULL) == NX_OK) {
                if (set_params(&tmp, variants[v].shape, NULL) == NX_OK && fam_param_long(&tmp, pb->len, &lens[1], NULL) == NX_OK &&
                    lens[1] == lens[0])
                    lens[1] = 0;
                fam_spec_free(&tmp);
            }
            break;
        }
        for (int li = 0; li < 2 && !st; li++) {
            size_t n = (size_t)lens[li];
            if (n < 2)
                continue;
            size_t cap = 512, *pi = malloc(cap * sizeof *pi), *pj = malloc(cap * sizeof *pj);
            if (!pi || !pj) {
                free(pi);
                free(pj);
                return nx_err_set(err, NX_ENOMEM, "out of memory");
            }
            size_t np = probe_pairs(n, x->o->seed, pi, pj, cap);
            pw_case *c = NULL;
            char rows[32], len[48];
            snprintf(rows, sizeof rows, "%s=%zu", pb->rows, np);
            snprintf(len, sizeof len, "%s=%zu", pb->len, n);
            if (!(st = add_case(x, &c, err)) && !(st = pw_spec_copy(spec, &c->spec, err))) {
                x->ncases++;
                c->probe = 1;
                c->prio = 6;
                if (li == 1)
                    for (size_t v = 0; v < nvar && !st; v++) {
                        st = set_params(&c->spec, variants[v].shape, err);
                        break;
                    }
                if (!st && !(st = set_params(&c->spec, pb->shape, err)) && !(st = set_params(&c->spec, rows, err)) &&
                    !(st = set_params(&c->spec, len, err))) {
                    if (fam_param_get(&c->spec, "out") || !strcmp(fam, "gemm"))
                        st = fam_spec_set_param(&c->spec, "out", "fp32", err);
                    reds_out_fp32(&c->spec);
                }
                snprintf(c->label, sizeof c->label, "order probes of %s (%zu rows of %zu terms: +M and -M among fillers)",
                         pb->red, np, n);
                ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
                if (!st && !(st = ref_generate(&c->spec, &go, &c->in, err)))
                    st = lay_probes(c, pb, np, pi, pj, n, 0, err);
                x->res->probe_rows += np;
            }
            free(pi);
            free(pj);
        }
        /* tie rows at the declared length and output formats */
        int tp = 0;
        const char *of = fam_param_get(spec, "out");
        if (of && nx_fmt_from_name(of) >= 0)
            tp = nx_format((nx_fmt)nx_fmt_from_name(of))->p;
        for (size_t r = 0; r < spec->nreds; r++) {
            int q = nx_format(nx_point_out(&spec->reds[r].point))->p;
            tp = tp == 0 || q < tp ? q : tp;
        }
        pw_case *c = NULL;
        char rows[32];
        snprintf(rows, sizeof rows, "%s=16", pb->rows);
        if (st || tp <= 0 || tp > 20 || lens[0] < 1 || (st = add_case(x, &c, err)) || (st = pw_spec_copy(spec, &c->spec, err)))
            break;
        x->ncases++;
        c->probe = 1;
        c->prio = 6;
        snprintf(c->label, sizeof c->label, "rounding-tie rows of %s (16 rows whose sums lie halfway between two "
                 "%d-bit numbers)", pb->red, tp);
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        if (!(st = set_params(&c->spec, pb->shape, err)) && !(st = set_params(&c->spec, rows, err)) &&
            !(st = ref_generate(&c->spec, &go, &c->in, err)))
            st = lay_probes(c, pb, 16, NULL, NULL, (size_t)lens[0], tp, err);
    }
    if (!st)
        st = special_cases(x, spec, fd, err);
    if (!st)
        st = space_cases(x, spec, fd, err);
    return st;
}

/* --- signed zeros, infinities, NaN and the output format's edges ------------------ */

/* The float input tensors of c: every one's sign cleared (all >= 0), then
 * tensor `neg` (its index in d) all -0.  tiny: every float tensor holds
 * its format's least positive value instead, `neg` the negative of it, so
 * that every product is negative and below the accumulator's least
 * subnormal: a sum of them is -0 (docs/numerics.md §2.3), a sum from +0 of
 * those -0 partials +0. */
static nx_status lay_zeros(pw_case *c, const ref_tensor_desc *d, size_t nd, size_t neg, int tiny, nx_err *err)
{
    for (size_t k = 0; k < nd; k++) {
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        if (!t || d[k].kind != REF_FLOAT || d[k].fmt < 0)
            continue;
        const nx_format_info *fi = nx_format((nx_fmt)d[k].fmt);
        if (!fi->is_signed)
            continue;
        uint64_t sign = 1ull << (fi->storage_bits - 1), mz;
        nx_status st = nx_encode((nx_fmt)d[k].fmt, -0.0, &mz, err);
        if (st)
            return st;
        if (tiny)
            mz = 1; /* the least positive subnormal's pattern */
        for (uint64_t i = 0; i < t->nelem; i++)
            st_put_bits(t, t->data, (size_t)i,
                        k == neg ? mz | (tiny ? sign : 0) : tiny ? mz : st_get_bits(t, t->data, (size_t)i) & ~sign);
    }
    return NX_OK;
}

/* Every NaN among c's inputs made one of four: quiet or signalling (the
 * least payload), each of either sign, in turn. */
static void nan_payloads(pw_case *c)
{
    for (size_t k = 0; k < c->in.ntensors; k++) {
        st_tensor *t = &c->in.tensors[k];
        int f = rows_fmt_of_dtype(t->dtype);
        if (f < 0 || nx_format((nx_fmt)f)->nan != NX_NAN_IEEE)
            continue;
        const nx_format_info *fi = nx_format((nx_fmt)f);
        uint64_t sign = 1ull << (fi->storage_bits - 1), expo = ((1ull << fi->exp_bits) - 1) << fi->man_bits,
                 man = (1ull << fi->man_bits) - 1;
        const uint64_t pats[4] = {expo | man, sign | expo | man, expo | 1, sign | expo | 1};
        size_t j = 0;
        for (uint64_t i = 0; i < t->nelem; i++)
            if (isnan(nx_decode((nx_fmt)f, st_get_bits(t, t->data, (size_t)i), NULL)))
                st_put_bits(t, t->data, (size_t)i, pats[j++ % 4]);
    }
}

/* Splits v into at most max terms of format f, largest first, each v's
 * leading bits cut to f's precision (so the terms are disjoint pieces of
 * v and their sums in any order exact in fp32 when v spans few bits).
 * Returns the count, 0 when v cannot be so written. */
static size_t split_terms(double v, nx_fmt f, double *out, size_t max)
{
    const nx_format_info *fi = nx_format(f);
    size_t n = 0;
    double rem = v;
    while (rem != 0 && n < max) {
        double a = fabs(rem), t;
        if (a > fi->max_finite) {
            t = fi->max_finite;
        } else {
            int e = ilogb(a);
            if (e < fi->emin)
                e = fi->emin;
            double q = ldexp(1.0, e - fi->p + 1);
            t = floor(a / q) * q;
        }
        uint64_t b;
        if (t == 0 || nx_encode(f, copysign(t, rem), &b, NULL) != NX_OK)
            return 0;
        out[n++] = copysign(t, rem);
        rem -= copysign(t, rem);
    }
    return rem == 0 ? n : 0;
}

#define EDGE_ROWS 16
#define EDGE_TERMS 6

/* Rows of the probe tensor whose sums land on the edges of output format
 * `of`: its largest finite value, values that round to it or overflow
 * (ties included), ties below the least subnormal, and rows of -0 terms, an
 * infinity, infinities of both signs and a NaN.  Terms in input format
 * `inf_`: row r's first cnt[r] terms are rows[r], the others fill[r] (+0;
 * -0 in the row of -0 terms).  Returns the rows laid out of EDGE_ROWS. */
static size_t edge_rows(nx_fmt of, nx_fmt inf_, size_t n, double rows[EDGE_ROWS][EDGE_TERMS], size_t cnt[EDGE_ROWS],
                        double fill[EDGE_ROWS])
{
    const nx_format_info *fo = nx_format(of), *fi = nx_format(inf_);
    double mx = fo->max_finite, ulp = ldexp(1.0, ilogb(mx) - fo->p + 1), ms = ldexp(1.0, fo->emin - fo->p + 1);
    const double targets[] = {mx, mx + ulp / 4, mx + ulp / 2, -(mx + ulp / 2), mx + ulp, ms / 2, 3 * ms / 2, -ms / 2,
                              nx_fmt_min_normal(of) - ms / 2};
    size_t r = 0, maxt = n < EDGE_TERMS ? n : EDGE_TERMS;
    for (size_t k = 0; k < EDGE_ROWS; k++)
        fill[k] = 0.0;
    for (size_t k = 0; k < sizeof targets / sizeof *targets && r < EDGE_ROWS; k++)
        if ((cnt[r] = split_terms(targets[k], inf_, rows[r], maxt)) > 0)
            r++;
    /* the specials: all -0 (the sum starts from +0), inf, inf - inf, NaN */
    double sp[4][2] = {{-0.0, -0.0}, {INFINITY, 0}, {INFINITY, -INFINITY}, {NAN, 0}};
    size_t spn[4] = {2, 1, 2, 1};
    for (size_t k = 0; k < 4 && r < EDGE_ROWS && n >= 2; k++) {
        if ((k == 1 || k == 2) && !fi->has_inf)
            continue;
        if (k == 3 && fi->nan == NX_NAN_NONE)
            continue;
        cnt[r] = spn[k];
        rows[r][0] = sp[k][0];
        rows[r][1] = sp[k][1];
        fill[r] = k == 0 ? -0.0 : 0.0;
        r++;
    }
    return r;
}

/* Lays edge rows (edge_rows) into the probe tensor of c; the other
 * tensors of the probe's fills as they say. */
static nx_status lay_edges(pw_case *c, const fam_probe *pb, size_t nrows, size_t n, double rows[EDGE_ROWS][EDGE_TERMS],
                           const size_t cnt[EDGE_ROWS], const double fill[EDGE_ROWS], nx_err *err)
{
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    nx_status st = ref_inputs(&c->spec, &d, &nd, err);
    for (size_t k = 0; k < nd && !st; k++) {
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        if (!t)
            continue;
        if (strcmp(d[k].name, pb->tensor) != 0) {
            st = fill_named(t, &d[k], pb->fills, err);
            continue;
        }
        for (size_t r = 0; r < nrows && !st; r++) {
            for (size_t i = 0; i < n && !st; i++) {
                double v = i < cnt[r] ? rows[r][i] : fill[r];
                uint64_t b;
                if (!(st = nx_encode((nx_fmt)d[k].fmt, v, &b, err)))
                    st_put_bits(t, t->data, r * n + i, b);
            }
        }
    }
    free(d);
    return st;
}

/* The special-value cases of a point (docs/power.md): signed zeros through
 * each float input, inf and NaN among adversarial inputs, and, where the
 * output is the probed sum itself, rows on the output format's edges. */
static nx_status special_cases(pw_ctx *x, const fam_spec *spec, const fam_desc *fd, nx_err *err)
{
    const fam_variant *v0 = fd && fd->variants[0].shape ? &fd->variants[0] : NULL;
    nx_status st = NX_OK;
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    fam_spec base;
    if ((st = pw_spec_copy(spec, &base, err)))
        return st;
    if (v0 && (st = set_params(&base, v0->shape, err))) {
        fam_spec_free(&base);
        return st;
    }
    if ((st = ref_inputs(&base, &d, &nd, err))) {
        fam_spec_free(&base);
        return st;
    }
    for (size_t k = 0; k < nd && !st; k++)
        for (int tiny = 0; tiny < 2 && !st; tiny++) {
            if (d[k].kind != REF_FLOAT || d[k].fmt < 0 || !nx_format((nx_fmt)d[k].fmt)->is_signed)
                continue;
            pw_case *c = NULL;
            if ((st = case_of(x, &base, 5, &c, err)))
                break;
            snprintf(c->label, sizeof c->label,
                     tiny ? "underflow to -0 (every float input its least positive value, '%s' negative), %s"
                          : "signed zeros (every '%s' -0, the other inputs >= 0), %s",
                     d[k].name, v0 ? v0->shape : "the point's shape");
            ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
            if (!(st = ref_generate(&c->spec, &go, &c->in, err)) && !(st = apply_fills(c, v0 ? v0->fills : NULL, err)))
                st = lay_zeros(c, d, nd, k, tiny, err);
        }
    free(d);
    /* inf and NaN among adversarial inputs, the NaNs of every sign and
     * payload (a store must write some NaN for each); in the declared
     * formats, and with fp32 inputs into the declared output format, where
     * a NaN's low payload bits meet the output's rounding */
    const char *dout = fam_param_get(spec, "out");
    for (int f32 = 0; f32 < 2 && !st; f32++) {
        if (f32 && (!v0 || !*v0->fp32 || !dout || nx_fmt_from_name(dout) < 0))
            continue;
        pw_case *c = NULL;
        if ((st = case_of(x, &base, 5, &c, err)))
            break;
        if (f32 && ((st = set_params(&c->spec, v0->fp32, err)) || (st = fam_spec_set_param(&c->spec, "out", dout, err))))
            break;
        snprintf(c->label, sizeof c->label, "adversarial inputs with inf and NaN%s, %s",
                 f32 ? " in fp32" : "", v0 ? v0->shape : "the point's shape");
        ref_gen_opts go = {x->o->seed, NX_DIST_ADVERSARIAL, 1, x->o->threads};
        if (!(st = ref_generate(&c->spec, &go, &c->in, err)) && !(st = apply_fills(c, v0 ? v0->fills : NULL, err)))
            nan_payloads(c);
    }
    fam_spec_free(&base);
    /* the output format's edges, in the declared output format and in fp16 */
    const fam_probe *pb = fd ? &fd->probe : NULL;
    if (st || !pb || !pb->red || !fd->final_is_sum || !fd->final_red || strcmp(fd->final_red, pb->red) != 0 ||
        !fam_reduction_get(spec, pb->red))
        return st;
    long len = 0;
    if (fam_param_long(spec, pb->len, &len, NULL) != NX_OK || len < 2)
        return st;
    for (int f16 = 0; f16 < 2 && !st; f16++) {
        if (f16 && (!v0 || !*v0->fp16))
            continue;
        pw_case *c = NULL;
        if ((st = case_of(x, spec, 6, &c, err)))
            break;
        c->probe = 1;
        char rows[32];
        snprintf(rows, sizeof rows, "%s=%d", pb->rows, EDGE_ROWS);
        if ((f16 && (st = set_params(&c->spec, v0->fp16, err))) || (st = set_params(&c->spec, pb->shape, err)) ||
            (st = set_params(&c->spec, rows, err)))
            break;
        const char *ofn = fam_param_get(&c->spec, "out");
        int of = ofn ? nx_fmt_from_name(ofn) : -1;
        ref_tensor_desc *dd = NULL;
        size_t ndd = 0;
        int inf_ = -1;
        if (of >= 0 && ref_inputs(&c->spec, &dd, &ndd, NULL) == NX_OK)
            for (size_t k = 0; k < ndd; k++)
                if (strcmp(dd[k].name, pb->tensor) == 0)
                    inf_ = dd[k].fmt;
        free(dd);
        double terms[EDGE_ROWS][EDGE_TERMS], fill[EDGE_ROWS];
        size_t cnt[EDGE_ROWS] = {0}, nr = 0;
        /* only a narrow output: fp32's edges are the accumulator's own */
        if (of >= 0 && inf_ >= 0 && nx_format((nx_fmt)of)->p < 24)
            nr = edge_rows((nx_fmt)of, (nx_fmt)inf_, (size_t)len, terms, cnt, fill);
        if (!nr) {
            case_free(c);
            x->ncases--;
            continue;
        }
        snprintf(c->label, sizeof c->label, "edges of %s outputs (%d rows of %ld terms: the largest finite value, "
                 "overflow ties, subnormal ties, -0, inf, NaN)", ofn, EDGE_ROWS, len);
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        if (!(st = ref_generate(&c->spec, &go, &c->in, err)))
            st = lay_edges(c, pb, nr, (size_t)len, terms, cnt, fill, err);
    }
    return st;
}

/* --- the input-space model (docs/power.md, "The input-space model") -------------- */

/* Appends to the model's account of a point: what its cases covered. */
__attribute__((format(printf, 2, 3))) static void model_say(pw_result *r, const char *fmt, ...)
{
    size_t k = strlen(r->space);
    if (k + 1 >= sizeof r->space)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->space + k, sizeof r->space - k, fmt, ap);
    va_end(ap);
}

/* Every element of float or integer tensor t (descriptor d) from a list
 * "a:b:c" cycling over the elements (packed int4: over the values). */
static nx_status fill_list(st_tensor *t, const ref_tensor_desc *d, const char *list, nx_err *err)
{
    double v[64];
    size_t n = 0;
    for (const char *p = list; *p && n < 64;) {
        char *e;
        v[n++] = strtod(p, &e);
        if (e == p)
            break;
        p = *e == ':' ? e + 1 : e;
        if (!*e || *e != ':')
            break;
    }
    if (n <= 1)
        return fill_tensor(t, d, n ? v[0] : 0.0, err);
    if (d->kind == REF_FLOAT) {
        uint64_t b[64];
        for (size_t i = 0; i < n; i++) {
            nx_status st = nx_encode((nx_fmt)d->fmt, v[i], &b[i], err);
            if (st)
                return st;
        }
        for (uint64_t i = 0; i < t->nelem; i++)
            st_put_bits(t, t->data, (size_t)i, b[i % n]);
        return NX_OK;
    }
    for (size_t i = 0; i < n; i++)
        if ((long)v[i] < d->lo || (long)v[i] > d->hi)
            return nx_err_set(err, NX_EINVAL, "power: value %ld outside [%ld, %ld] of tensor '%s'", (long)v[i], d->lo,
                              d->hi, d->name);
    if (!d->packed4) {
        for (uint64_t i = 0; i < t->nelem; i++)
            st_put_bits(t, t->data, (size_t)i, (uint64_t)(long)v[i % n]);
        return NX_OK;
    }
    size_t rb = (size_t)t->shape[t->ndim - 1], rows = rb ? (size_t)(t->nbytes / rb) : 0, k = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < (size_t)d->row; c++, k++) {
            uint8_t *b = t->data + r * rb + c / 2, iv = (uint8_t)(long)v[k % n];
            *b = (uint8_t)(c % 2 ? (*b & 0x0f) | (uint8_t)(iv << 4) : (*b & 0xf0) | iv);
        }
    return NX_OK;
}

/* The fills "t=a:b,u=1" of every input tensor of c, lists cycling. */
static nx_status apply_list_fills(pw_case *c, const char *fills, nx_err *err)
{
    if (!fills || !*fills)
        return NX_OK;
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    nx_status st = ref_inputs(&c->spec, &d, &nd, err);
    char buf[256];
    for (size_t k = 0; k < nd && !st; k++) {
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        if (!t)
            continue;
        snprintf(buf, sizeof buf, "%s", fills);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(tok, '=');
            if (eq && (size_t)(eq - tok) == strlen(d[k].name) && !strncmp(tok, d[k].name, (size_t)(eq - tok)))
                st = fill_list(t, &d[k], eq + 1, err);
        }
    }
    free(d);
    return st;
}

/* Row r (of the last dimension; a 1-D tensor: element r) of tensor t held
 * at value v. */
static nx_status set_row(st_tensor *t, const ref_tensor_desc *d, size_t r, double v, nx_err *err)
{
    if (d->kind == REF_FLOAT) {
        uint64_t b;
        nx_status st = nx_encode((nx_fmt)d->fmt, v, &b, err);
        if (st)
            return st;
        size_t row = t->ndim > 1 ? (size_t)t->shape[t->ndim - 1] : 1;
        for (size_t i = r * row; i < (r + 1) * row && i < t->nelem; i++)
            st_put_bits(t, t->data, i, b);
        return NX_OK;
    }
    if (d->packed4) {
        size_t rb = (size_t)t->shape[t->ndim - 1];
        for (size_t c = 0; c < (size_t)d->row; c++) {
            uint8_t *b = t->data + r * rb + c / 2, iv = (uint8_t)(long)v;
            *b = (uint8_t)(c % 2 ? (*b & 0x0f) | (uint8_t)(iv << 4) : (*b & 0xf0) | iv);
        }
        return NX_OK;
    }
    size_t row = t->ndim > 1 ? (size_t)t->shape[t->ndim - 1] : 1;
    for (size_t i = r * row; i < (r + 1) * row && i < t->nelem; i++)
        st_put_bits(t, t->data, i, (uint64_t)(long)v);
    return NX_OK;
}

static size_t rows_of(const st_tensor *t)
{
    if (t->ndim <= 1)
        return (size_t)t->nelem;
    size_t row = (size_t)t->shape[t->ndim - 1];
    return row ? (size_t)(t->nbytes / (row * (st_dtype_bits(t->dtype) >= 8 ? st_dtype_bits(t->dtype) / 8 : 1))) : 0;
}

/* The point's output format as declared: param `out` (its default
 * resolved, "@in" the input's), else the final reduction's own out. */
static int declared_out(const fam_spec *s, const fam_desc *fd)
{
    const char *o = fam_param_get(s, "out");
    char buf[32];
    if (!o)
        o = fam_desc_default(fam_of(s), "out", buf, sizeof buf);
    if (o && o[0] == '@') {
        const char *other = fam_param_get(s, o + 1);
        char b2[32];
        o = other ? other : fam_desc_default(fam_of(s), o + 1, b2, sizeof b2);
        if (o && o[0] != '@')
            return nx_fmt_from_name(o);
        return -1;
    }
    if (o)
        return nx_fmt_from_name(o);
    const fam_reduction *r = fd && fd->final_red ? fam_reduction_get(s, fd->final_red) : NULL;
    return r ? (int)nx_point_out(&r->point) : -1;
}

/* The values of the output format `of`'s edges that fp32 holds exactly:
 * its largest finite value, a quarter, half (the overflow tie) and one ulp
 * above it, both signs; its least subnormal, half of it (a tie to 0), 1.5
 * and 2.5 of it (ties to even), the least normal and just below it; ties
 * at 1 and 3/2; +-0, +-inf and NaN of four patterns. */
static size_t edge_values(nx_fmt of, float *v, size_t cap)
{
    const nx_format_info *fo = nx_format(of);
    double mx = fo->max_finite, ulp = ldexp(1.0, ilogb(mx) - fo->p + 1), ms = ldexp(1.0, fo->emin - fo->p + 1);
    double mn = nx_fmt_min_normal(of), h = ldexp(1.0, -fo->p);
    const double t[] = {mx, mx + ulp / 4, mx + ulp / 2, -(mx + ulp / 2), mx + ulp, -mx, ms, ms / 2, -ms / 2,
                        1.5 * ms, 2.5 * ms, 3 * ms / 4, mn, mn - ms / 2, -(mn - ms), 1 + h, 1 + 3 * h, -(1 + h),
                        1.5 + 2 * h, 0.0, -0.0, INFINITY, -INFINITY};
    size_t n = 0;
    for (size_t i = 0; i < sizeof t / sizeof *t && n < cap; i++) {
        float f = (float)t[i];
        if ((double)f == t[i] || isinf(t[i]))
            v[n++] = f;
    }
    const uint32_t nans[4] = {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0xff800001u};
    for (size_t i = 0; i < 4 && n < cap; i++) {
        float f;
        memcpy(&f, &nans[i], sizeof f);
        v[n++] = f;
    }
    return n;
}

/* A case of the model: spec with `params` set over it (fp32: the first
 * variant's fp32 params and every reduction's result in fp32). */
static nx_status model_case(pw_ctx *x, const fam_spec *spec, const fam_desc *fd, const char *shape, int fp32,
                            nx_dist dist, int specials, pw_case **out, nx_err *err)
{
    pw_case *c = NULL;
    nx_status st = case_of(x, spec, 7, &c, err);
    if (st)
        return st;
    *out = c;
    if (fp32 && fd->variants[0].shape && *fd->variants[0].fp32) {
        if ((st = set_params(&c->spec, fd->variants[0].fp32, err)))
            return st;
        reds_out_fp32(&c->spec);
    }
    if (shape && (st = set_params(&c->spec, shape, err)))
        return st;
    ref_gen_opts go = {x->o->seed, dist, specials, x->o->threads};
    return ref_generate(&c->spec, &go, &c->in, err);
}

/* The cases of the family's input-space model beyond the variants:
 * boundary shapes, special values per input tensor, zero weights among
 * inf and NaN, exp's underflow, repeated ids, and the output format's
 * edges through every point's own output (a shared store's bug shows at
 * every point it touches). */
static nx_status space_cases(pw_ctx *x, const fam_spec *spec, const fam_desc *fd, nx_err *err)
{
    if (!fd)
        return NX_OK;
    pw_result *r = x->res;
    nx_status st = NX_OK;
    int has32 = fd->variants[0].shape && *fd->variants[0].fp32;
    size_t nshape = 0;
    model_say(r, "shapes:");
    for (size_t i = 0; i < FAM_MAX_SPACE && fd->space[i].shape && !st; i++) {
        const fam_space *sp = &fd->space[i];
        if (sp->only) {
            const char *v = fam_param_get(spec, sp->only);
            if (!v || !strcmp(v, "0")) {
                model_say(r, " [%s: not this point (%s = 0)]", sp->what, sp->only);
                continue;
            }
        }
        pw_case *c = NULL;
        if ((st = model_case(x, spec, fd, sp->shape, 1, NX_DIST_NORMAL, 0, &c, err)) ||
            (st = apply_list_fills(c, sp->fills, err)))
            break;
        snprintf(c->label, sizeof c->label, "input space: %s (%s)%s", sp->what, sp->shape, has32 ? ", fp32" : "");
        model_say(r, "%s %s", nshape++ ? ";" : "", sp->what);
        c->model = 1;
    }
    /* special values, one float input tensor at a time */
    fam_spec base;
    if ((st = pw_spec_copy(spec, &base, err)))
        return st;
    const char *ss = fd->special_shape ? fd->special_shape : fd->variants[0].shape;
    if (ss && (st = set_params(&base, ss, err))) {
        fam_spec_free(&base);
        return st;
    }
    if (has32 && !(st = set_params(&base, fd->variants[0].fp32, err)))
        reds_out_fp32(&base);
    ref_tensor_desc *d = NULL;
    size_t nd = 0;
    if (!st)
        st = ref_inputs(&base, &d, &nd, err);
    model_say(r, ". special values (%s%s):", has32 ? "fp32, " : "", ss ? ss : "the point's shape");
    for (size_t k = 0; k < nd && !st; k++) {
        if (d[k].kind != REF_FLOAT || d[k].fmt < 0)
            continue;
        const nx_format_info *fi = nx_format((nx_fmt)d[k].fmt);
        if (!fi->is_signed)
            continue;
        model_say(r, " %s: subnormals, values near the least normal and near sqrt(max) (squares under/overflow);",
                  d[k].name);
        for (int kind = 0; kind < 3 && !st; kind++) {
            pw_case *c = NULL;
            if ((st = case_of(x, &base, 7, &c, err)))
                break;
            c->model = 1;
            ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
            if ((st = ref_generate(&c->spec, &go, &c->in, err)))
                break;
            st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
            if (!t)
                continue;
            double mn = nx_fmt_min_normal((nx_fmt)d[k].fmt);
            double big = ldexp(1.0, (int)ceil(log2(fi->max_finite) / 2) + 2);
            uint64_t sgn = 1ull << (fi->storage_bits - 1);
            for (uint64_t i = 0; i < t->nelem && !st; i++) {
                double v = nx_decode((nx_fmt)d[k].fmt, st_get_bits(t, t->data, (size_t)i), NULL);
                uint64_t b;
                if (kind == 0) { /* every other element a subnormal, k * the least, either sign */
                    if (i % 2)
                        continue;
                    uint64_t m = 1 + (i * 2654435761u) % ((1ull << fi->man_bits) - 1);
                    b = m | (i % 4 ? sgn : 0);
                } else {
                    double w = nx_round_fast(kind == 1 ? v * mn * 8 : v * big, (nx_fmt)d[k].fmt, NX_RNE, 0);
                    if ((st = nx_encode((nx_fmt)d[k].fmt, w, &b, err)))
                        break;
                }
                st_put_bits(t, t->data, (size_t)i, b);
            }
            snprintf(c->label, sizeof c->label, "input space: '%s' %s, %s", d[k].name,
                     kind == 0 ? "half subnormals (DAZ)" : kind == 1 ? "scaled to the least normal (products and squares underflow)"
                                                               : "scaled to 4 sqrt(max) (squares overflow)",
                     ss ? ss : "the point's shape");
        }
    }
    /* zero weights among inf and NaN activations */
    char zb[128];
    snprintf(zb, sizeof zb, "%s", fd->zero_rows ? fd->zero_rows : "");
    for (char *save = NULL, *tok = strtok_r(zb, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = 0;
        const ref_tensor_desc *zd = NULL;
        for (size_t k = 0; k < nd; k++)
            if (!strcmp(d[k].name, tok))
                zd = &d[k];
        if (!zd)
            continue;
        pw_case *c = NULL;
        if ((st = case_of(x, &base, 7, &c, err)))
            break;
        c->model = 1;
        ref_gen_opts go = {x->o->seed, NX_DIST_ADVERSARIAL, 1, x->o->threads};
        if ((st = ref_generate(&c->spec, &go, &c->in, err)))
            break;
        st_tensor *t = (st_tensor *)st_find(&c->in, tok);
        size_t nr = t ? rows_of(t) : 0;
        for (size_t rr = 1; rr < nr && !st; rr += 3)
            st = set_row(t, zd, rr, strtod(eq + 1, NULL), err);
        snprintf(c->label, sizeof c->label, "input space: every third row of '%s' %s among inf and NaN inputs, %s", tok,
                 eq + 1, ss ? ss : "the point's shape");
        model_say(r, " zero rows of %s among inf/NaN;", tok);
    }
    /* repeated ids in a row of the id tensor (top-k) */
    for (size_t k = 0; fd->dup_ids && k < nd && !st; k++) {
        if (strcmp(d[k].name, fd->dup_ids) || d[k].ndim < 2 || d[k].shape[d[k].ndim - 1] < 2)
            continue;
        pw_case *c = NULL;
        if ((st = case_of(x, &base, 7, &c, err)))
            break;
        c->model = 1;
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        if ((st = ref_generate(&c->spec, &go, &c->in, err)))
            break;
        st_tensor *t = (st_tensor *)st_find(&c->in, d[k].name);
        size_t w = (size_t)d[k].shape[d[k].ndim - 1];
        for (size_t rr = 0; t && rr < t->nelem / w; rr++) /* slot 1 = slot 0; every slot in odd rows */
            for (size_t j = 1; j < (rr % 2 ? w : 2); j++)
                st_put_bits(t, t->data, rr * w + j, st_get_bits(t, t->data, rr * w));
        snprintf(c->label, sizeof c->label, "input space: repeated ids in '%s' (slot 1 = slot 0; odd rows one id "
                 "throughout), %s", d[k].name, ss ? ss : "the point's shape");
        model_say(r, " repeated ids in %s;", d[k].name);
    }
    free(d);
    /* exp's underflow: a row spread over [m - 110, m], into fp32 and the declared output */
    for (int dout = 0; fd->exp_tensor && dout < 2 && !st; dout++) {
        pw_case *c = NULL;
        int of = declared_out(spec, fd);
        if (dout && of < 0)
            continue;
        if ((st = case_of(x, &base, 7, &c, err)))
            break;
        c->model = 1;
        if (dout && (st = fam_spec_set_param(&c->spec, "out", nx_format((nx_fmt)of)->name, err)))
            break;
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        ref_tensor_desc *dd = NULL;
        size_t ndd = 0;
        if ((st = ref_generate(&c->spec, &go, &c->in, err)) || (st = ref_inputs(&c->spec, &dd, &ndd, err)))
            break;
        for (size_t k = 0; k < ndd && !st; k++) {
            st_tensor *t = (st_tensor *)st_find(&c->in, dd[k].name);
            if (!t || strcmp(dd[k].name, fd->exp_tensor) || dd[k].kind != REF_FLOAT)
                continue;
            size_t w = (size_t)t->shape[t->ndim - 1];
            for (uint64_t i = 0; i < t->nelem && !st; i++) {
                uint64_t b, h = (i * 0x9e3779b97f4a7c15ull) >> 40;
                double v = i % w == 0 ? 0.0 : nx_round_fast(-110.0 * (double)h / (double)(1ull << 24),
                                                            (nx_fmt)dd[k].fmt, NX_RNE, 0);
                if (!(st = nx_encode((nx_fmt)dd[k].fmt, v, &b, err)))
                    st_put_bits(t, t->data, (size_t)i, b);
            }
        }
        free(dd);
        snprintf(c->label, sizeof c->label, "input space: '%s' spread over [m - 110, m] (exp underflows to "
                 "subnormals and 0), %s outputs", fd->exp_tensor, dout ? nx_format((nx_fmt)of)->name : "fp32");
        if (!dout)
            model_say(r, " %s spread so that exp underflows;", fd->exp_tensor);
    }
    fam_spec_free(&base);
    /* the output format's edges through the point's own output */
    int of = declared_out(spec, fd);
    for (int f16 = 0; fd->store.tensor && f16 < 2 && !st; f16++) {
        int fo = f16 ? NX_FP16 : of;
        if (fo < 0 || nx_format((nx_fmt)fo)->p >= 24 || (f16 && (!*fd->variants[0].fp16 || of == NX_FP16)))
            continue;
        pw_case *c = NULL;
        if ((st = case_of(x, spec, 7, &c, err)))
            break;
        c->model = 1;
        /* inputs fp32 (where the family takes them), the output as declared */
        if (has32 && (st = set_params(&c->spec, fd->variants[0].fp32, err)))
            break;
        char ob[32];
        if ((fam_param_get(&c->spec, "out") || fam_desc_default(fam_of(spec), "out", ob, sizeof ob)) &&
            (st = fam_spec_set_param(&c->spec, "out", nx_format((nx_fmt)fo)->name, err)))
            break;
        if ((st = set_params(&c->spec, fd->store.shape, err)))
            break;
        ref_gen_opts go = {x->o->seed, NX_DIST_NORMAL, 0, x->o->threads};
        if ((st = ref_generate(&c->spec, &go, &c->in, err)) || (st = apply_list_fills(c, fd->store.fills, err)))
            break;
        float ev[40];
        size_t ne = edge_values((nx_fmt)fo, ev, 40);
        st_tensor *t = (st_tensor *)st_find(&c->in, fd->store.tensor);
        if (!t || t->dtype != ST_F32) {
            case_free(c);
            x->ncases--;
            continue;
        }
        size_t w = (size_t)t->shape[t->ndim - 1], half = fd->store.gate > 0 ? w / 2 : 0;
        for (uint64_t i = 0, k = 0; i < t->nelem; i++) {
            float v;
            if (half && i % w < half) {
                v = (float)fd->store.gate;
            } else {
                v = ev[k++ % ne];
                if (half)
                    v = v / (float)fd->store.gate; /* exact: a power of two, no value below 2^-149 * 32 */
            }
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            st_put_bits(t, t->data, (size_t)i, u);
        }
        snprintf(c->label, sizeof c->label, "input space: the output equal to '%s' (%s): %zu edges of %s outputs "
                 "(overflow, ties, subnormals, +-0, inf, NaN)", fd->store.tensor, fd->store.shape, ne,
                 nx_format((nx_fmt)fo)->name);
        model_say(r, "%s output edges of %s through '%s'", f16 ? "," : " ", nx_format((nx_fmt)fo)->name,
                  fd->store.tensor);
    }
    if (!fd->store.tensor)
        model_say(r, " output edges: %s", fd->final_is_sum ? "by the edge rows" : "no shape gives them");
    if (fd->gaps && *fd->gaps)
        model_say(r, ". not reached: %s", fd->gaps);
    return st;
}

/* On a mismatch: the neighbour whose reference comes closest to the
 * kernel's bits on the failing case. */
static void diagnose(pw_ctx *x, size_t fc, const st_file *fdev, const nb_list *l, char *buf,
                     size_t len)
{
    size_t best = (size_t)-1, bi = 0, also[3], nalso = 0;
    ref_opts ro = {x->o->threads, (nx_engine_kind)x->o->engine};
    dev_opts dop = {DEV_GRAPHED, x->threads, x->kernel};
    /* the failing case, the order probes and the two fp32 cases: a
     * neighbour counts its mismatches against the kernel over all of them */
    size_t use[16], nu = 0;
    use[nu++] = fc;
    for (size_t i = 0; i < x->ncases && nu < 16; i++)
        if (i != fc && (x->cases[i].probe || x->cases[i].prio == 1 || x->cases[i].prio == 3) &&
            dev_supports(x->be, &x->cases[i].spec, x->cases[i].spec.kernel))
            use[nu++] = i;
    st_file devs[16];
    int ran[16] = {0};
    for (size_t u = 0; u < nu; u++) {
        st_init(&devs[u]);
        ran[u] = u == 0 || dev_run(x->be, &x->cases[use[u]].spec, &x->cases[use[u]].in, &devs[u], &dop, NULL) == NX_OK;
    }
    /* the declared point's own count over the same inputs: a neighbour is
     * named only when it comes closer (one proved equivalent never does) */
    size_t base = 0, base_u[16] = {0};
    for (size_t u = 0; u < nu; u++) {
        if (!ran[u])
            continue;
        const pw_case *c = &x->cases[use[u]];
        if (c->ref.ntensors) {
            base_u[u] = mismatches(u ? &devs[u] : fdev, &c->ref, NULL, 0);
        } else {
            st_file o;
            st_init(&o);
            if (ref_run_opts(&c->spec, &c->in, &o, &ro, NULL) == NX_OK)
                base_u[u] = mismatches(u ? &devs[u] : fdev, &o, NULL, 0);
            st_free(&o);
        }
        base += base_u[u];
    }
    best = base;
    for (size_t i = 0; i < l->n; i++) {
        size_t m = 0;
        int ok = 1;
        for (size_t u = 0; u < nu && ok && (m < best || (best == 0 && m == 0)); u++) {
            if (!ran[u])
                continue;
            const pw_case *c = &x->cases[use[u]];
            fam_spec ns;
            /* where it does not apply, it counts as the declared point */
            if (nb_apply(&c->spec, &l->v[i], &ns, NULL) != NX_OK) {
                ok = u > 0;
                m += base_u[u];
                continue;
            }
            st_file o;
            st_init(&o);
            if (ref_run_opts(&ns, &c->in, &o, &ro, NULL) == NX_OK)
                m += mismatches(u ? &devs[u] : fdev, &o, NULL, 0);
            else
                ok = u > 0, m += base_u[u];
            st_free(&o);
            fam_spec_free(&ns);
        }
        if (ok && m == 0 && best == 0 && nalso < 3)
            also[nalso++] = i; /* another exact match: said too */
        else if (ok && m < best)
            best = m, bi = i;
    }
    for (size_t u = 1; u < nu; u++)
        st_free(&devs[u]);
    st_free(&devs[0]);
    pw_result *r = x->res;
    buf[0] = 0;
    if (best == base) {
        if (!l->n && x->spec->nelems)
            snprintf(r->suspect, sizeof r->suspect, "%s", x->spec->elems[0].name);
        else if (x->spec->nreds == 1)
            snprintf(r->suspect, sizeof r->suspect, "%s", x->spec->reds[0].name);
        snprintf(buf, len, "no neighbouring point comes closer to the kernel's bits than the declared one%s%s",
                 r->suspect[0] ? "; the point's only " : "",
                 r->suspect[0] ? (x->spec->nreds == 1 ? "reduction is " : "step is ") : "");
        if (r->suspect[0]) {
            size_t k = strlen(buf);
            snprintf(buf + k, len - k, "%s", r->suspect);
        }
        if (x->spec->nreds) { /* the reduction's order may be right and a step around it wrong */
            size_t k = strlen(buf);
            snprintf(buf + k, len - k, "; the difference may as well lie in the steps around the reduction%s "
                     "(scales, epilogue, the output's conversion)", x->spec->nreds > 1 ? "s" : "");
        }
        return;
    }
    const nb_def *d = &l->v[bi];
    char nm[256];
    nb_name(x->spec, d, nm, sizeof nm);
    snprintf(r->suspect, sizeof r->suspect, "%s", d->red[0] ? d->red : d->param);
    const fam_reduction *fr = d->red[0] ? fam_reduction_get(x->spec, d->red) : NULL;
    char declared[200] = "";
    if (d->kind == NB_TREE && fr)
        snprintf(declared, sizeof declared, "%s", fr->tree_text ? fr->tree_text : "?");
    if (best == 0) {
        if (d->kind == NB_TREE)
            snprintf(buf, len, "%s: the kernel reduces %s, the point declares %s", d->red, d->text, declared);
        else
            snprintf(buf, len, "the kernel's bits match the neighbour %s, not the declared point", nm);
        for (size_t a = 0; a < nalso; a++) {
            char an[256];
            nb_name(x->spec, &l->v[also[a]], an, sizeof an);
            size_t k = strlen(buf);
            snprintf(buf + k, len - k, "%s%s", a ? ", " : " (these inputs give the same bits for ", an);
            if (a + 1 == nalso) {
                k = strlen(buf);
                snprintf(buf + k, len - k, ")");
            }
        }
    } else {
        char reds[160] = "";
        for (size_t r2 = 0; r2 < x->spec->nreds; r2++) {
            size_t k = strlen(reds);
            snprintf(reds + k, sizeof reds - k, "%s%s", r2 ? ", " : "", x->spec->reds[r2].name);
        }
        int w = snprintf(buf, len,
                         "no neighbouring point of %s gives the kernel's bits; the closest is %s (%zu elements still "
                         "differ over the failing input, the order probes and the fp32 inputs)%s%s",
                         reds, nm, best, *declared ? "; the point declares " : "", declared);
        if (w >= (int)len && len > 4)
            memcpy(buf + len - 4, "...", 4); /* cut: said so */
    }
}

nx_status pw_check_point(const dev_backend *be, const fam_spec *spec, const pw_opts *o, pw_result *res, nx_err *err)
{
    pw_opts def;
    if (!o) {
        pw_opts_default(&def);
        o = &def;
    }
    memset(res, 0, sizeof *res);
    double t0 = now();
    char id[160];
    snprintf(id, sizeof id, "%s.%s", fam_of(spec), spec->point ? spec->point : "?");
    res->verdict = PW_SKIP;
    const char *neg = fam_param_get(spec, "negative_control");
    if (neg) {
        say(res, "%s: skipped: a negative control realises another point by design (%s); Tier 1 judges it", id, neg);
        return NX_OK;
    }
    if (uses_atomic(spec)) {
        say(res, "%s: skipped: an `atomic` tree has no bit-exact reference", id);
        return NX_OK;
    }
    for (size_t i = 0; i < spec->nelems; i++)
        if (spec->elems[i].impl != FAM_ELEM_CR) {
            say(res, "%s: skipped: %s is the declared approximation %s, never bit-exact against the reference; "
                "Tier 2 holds it to its tolerance", id, spec->elems[i].name,
                spec->elems[i].approx ? spec->elems[i].approx : "?");
            return NX_OK;
        }
    if (!dev_supports(be, spec, spec->kernel)) {
        say(res, "%s: skipped: the %s backend has no kernel '%s'", id, be->name, spec->kernel ? spec->kernel : "(none)");
        return NX_OK;
    }

    pw_ctx x = {be, spec, o, res, NULL, 0, 0, NULL, o->threads};
    /* the point's legacy kernel (docs/cpu-backend.md: the kernel id followed
     * by "_legacy") realises the same point: it must match the same bits */
    char legacy[160] = "";
    const char *lk = fam_param_get(spec, "legacy_kernel");
    if (lk)
        snprintf(legacy, sizeof legacy, "%s", lk);
    else if (spec->kernel)
        snprintf(legacy, sizeof legacy, "%s_legacy", spec->kernel);
    if (*legacy && !dev_supports(be, spec, legacy))
        legacy[0] = 0;
    nb_list l = {0};
    nx_status st = build_cases(&x, spec, err);
    if (!st)
        st = enumerate(spec, &l, err);
    size_t used = 0, unsupported = 0, nmodel = 0;
    int nuns = 0;
    res->verdict = PW_PASS;
    for (size_t i = 0; i < x.ncases && !st; i++) {
        pw_case *c = &x.cases[i];
        if (!dev_supports(be, &c->spec, c->spec.kernel)) {
            unsupported++;
            if (c->model)
                model_say(res, "%s[not taken by the kernel: %.100s]", nuns++ ? "; " : ". ", c->label + 13);
            continue;
        }
        nmodel += c->model;
        st_file dev;
        st_init(&dev);
        size_t nmis = 0;
        char first[200];
        st = run_case(&x, c, &dev, &nmis, first, sizeof first, err);
        if (!st && !nmis && *legacy && dev_supports(be, &c->spec, legacy)) {
            st_free(&dev);
            st_init(&dev);
            dev_opts d = {DEV_GRAPHED, o->threads, legacy};
            if (!(st = dev_run(be, &c->spec, &c->in, &dev, &d, err))) {
                res->runs++;
                nmis = mismatches(&dev, &c->ref, first, sizeof first);
                if (nmis)
                    x.kernel = legacy;
            }
        }
        /* the same kernel at another thread count: its point may not follow
         * the threads (a split by the team size is right at one thread) */
        int at = 0;
        /* the cases of the catalogue at threads_also; the cheap fp32 case
         * at every count of threads_more too; the input-space model's
         * cases at the largest count of threads_more up to 4 instead (one
         * team larger than any declared split, so each costs two runs) */
        int tcounts[1 + PW_MAX_THREADS_MORE], ntc = 0, model_t = 0;
        for (int q = 0; q < PW_MAX_THREADS_MORE && o->threads_more[q] > 0; q++)
            if (o->threads_more[q] <= 4 && o->threads_more[q] > model_t)
                model_t = o->threads_more[q];
        if (c->model && model_t && model_t != o->threads)
            tcounts[ntc++] = model_t;
        else if (!c->model && o->threads_also > 0 && o->threads_also != o->threads)
            tcounts[ntc++] = o->threads_also;
        for (int q = 0; c->allthreads == 2 && q < PW_MAX_THREADS_MORE && o->threads_more[q] > 0; q++)
            if (o->threads_more[q] != o->threads && o->threads_more[q] != o->threads_also)
                tcounts[ntc++] = o->threads_more[q];
        for (int q = 0; !st && !nmis && be->threaded && q < ntc; q++) {
            /* the legacy kernel at the catalogue's count (threads_also) only */
            for (int lg = 0; lg < (*legacy && q == 0 && !c->model ? 2 : 1) && !st && !nmis; lg++) {
                const char *kid = lg ? legacy : NULL;
                if (kid && !dev_supports(be, &c->spec, kid))
                    continue;
                st_free(&dev);
                st_init(&dev);
                dev_opts d = {DEV_GRAPHED, tcounts[q], kid};
                if (!(st = dev_run(be, &c->spec, &c->in, &dev, &d, err))) {
                    res->runs++;
                    if ((nmis = mismatches(&dev, &c->ref, first, sizeof first))) {
                        x.kernel = kid;
                        at = tcounts[q];
                    }
                }
            }
        }
        if (!st && nmis) {
            char why[700];
            int th = o->threads;
            x.threads = at ? at : th;
            diagnose(&x, i, &dev, &l, why, sizeof why);
            res->verdict = PW_FAIL;
            char ath[64] = "";
            if (at)
                snprintf(ath, sizeof ath, " at %d threads (at %d it matches)", at, th);
            say(res, "%s: the %skernel does not realise the declared point%s: on %s, %zu of %zu output elements differ "
                "from the reference (%s); %s", id, x.kernel ? "legacy " : "", ath, c->label, nmis, out_elems(&c->ref),
                first, why);
        }
        st_free(&dev);
        if (res->verdict == PW_FAIL)
            break;
        used++;
    }
    /* part 2: which neighbours the inputs tell apart */
    if (!st && res->verdict == PW_PASS && o->neighbours) {
        res->neigh = calloc(l.n ? l.n : 1, sizeof *res->neigh);
        if (!res->neigh)
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        ref_opts ro = {o->threads, (nx_engine_kind)o->engine};
        size_t *order = malloc((x.ncases ? x.ncases : 1) * sizeof *order), no = 0;
        for (int p = 0; order && p <= 6; p++)
            for (size_t i = 0; i < x.ncases; i++)
                if (x.cases[i].prio == p)
                    order[no++] = i;
        if (!order && !st)
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        for (size_t k = 0; k < l.n && !st; k++) {
            pw_neighbour *nb = &res->neigh[res->nneigh];
            memset(nb, 0, sizeof *nb);
            snprintf(nb->red, sizeof nb->red, "%s", l.v[k].red);
            nb_name(spec, &l.v[k], nb->what, sizeof nb->what);
            int applicable = 0, seen = 0;
            if (l.v[k].kind == NB_FMA && equivalent(spec, &l.v[k], nb->why, sizeof nb->why)) {
                nb->seen = PW_EQUIVALENT;
                res->nequiv++;
                res->nneigh++;
                continue;
            }
            for (size_t ii = 0; ii < no && !seen; ii++) {
                pw_case *c = &x.cases[order[ii]];
                if (!c->ref.ntensors)
                    continue;
                fam_spec ns;
                if (nb_apply(&c->spec, &l.v[k], &ns, NULL) != NX_OK)
                    continue;
                st_file out;
                st_init(&out);
                if (ref_run_opts(&ns, &c->in, &out, &ro, NULL) == NX_OK) {
                    applicable = 1;
                    if (mismatches(&out, &c->ref, NULL, 0)) {
                        seen = 1;
                        snprintf(nb->why, sizeof nb->why, "by %s", c->label);
                    }
                }
                st_free(&out);
                fam_spec_free(&ns);
            }
            if (!applicable)
                continue;
            if (seen) {
                nb->seen = PW_DISTINGUISHED;
                res->ndist++;
            } else if (equivalent(spec, &l.v[k], nb->why, sizeof nb->why)) {
                nb->seen = PW_EQUIVALENT;
                res->nequiv++;
            } else {
                nb->seen = PW_UNSEEN;
                snprintf(nb->why, sizeof nb->why, "the same bits on every power input");
                res->nunseen++;
            }
            res->nneigh++;
        }
        free(order);
    }
    if (!st && res->verdict == PW_PASS) {
        nx_sbuf b = {0};
        nx_sbuf_printf(&b, "%s: %zu power runs (%zu order probe rows) equal the reference bit for bit", id, res->runs,
                       res->probe_rows);
        nx_sbuf_printf(&b, "; input space: %zu cases (boundary shapes, special values per tensor, output edges), "
                       "threads 1, %d", nmodel, o->threads_also);
        for (int q = 0; q < PW_MAX_THREADS_MORE && o->threads_more[q] > 0; q++)
            nx_sbuf_printf(&b, ", %d", o->threads_more[q]);
        if (!be->threaded)
            nx_sbuf_printf(&b, " (the backend's runs do not follow a thread count: one run each)");
        if (unsupported)
            nx_sbuf_printf(&b, " (%zu variants the kernel does not take were left out)", unsupported);
        if (o->neighbours) {
            nx_sbuf_printf(&b, "; neighbouring points: %zu distinguished, %zu equivalent, %zu not distinguished",
                           res->ndist, res->nequiv, res->nunseen);
            size_t shown = 0;
            for (size_t k = 0; k < res->nneigh; k++)
                if (res->neigh[k].seen == PW_UNSEEN && shown++ < 6)
                    nx_sbuf_printf(&b, "%s%s", shown == 1 ? " (" : ", ", res->neigh[k].what);
            if (shown)
                nx_sbuf_printf(&b, "%s)", shown > 6 ? ", ..." : "");
        }
        char *s = nx_sbuf_take(&b);
        say(res, "%s", s ? s : id);
        free(s);
        if (used == 0) {
            res->verdict = PW_SKIP;
            say(res, "%s: skipped: the kernel takes none of the power variants", id);
        }
    }
    for (size_t i = 0; i < x.ncases; i++)
        case_free(&x.cases[i]);
    free(x.cases);
    free(l.v);
    res->seconds = now() - t0;
    return st;
}

char *pw_neighbours_text(const pw_result *r)
{
    static const char *const names[] = {"distinguished", "equivalent", "NOT distinguished"};
    nx_sbuf b = {0};
    for (size_t k = 0; k < r->nneigh; k++)
        nx_sbuf_printf(&b, "%s %s: %s\n", names[r->neigh[k].seen], r->neigh[k].what, r->neigh[k].why);
    char *s = nx_sbuf_take(&b);
    return s ? s : strdup("");
}

/* ---- a declared cross-class difference, shown -------------------------- */

/* Elements of the main output y that differ bit for bit; -1 when the two
 * files' y are not comparable (absent, another dtype or size). */
static long long y_differs(const st_file *a, const st_file *b, size_t *n)
{
    const st_tensor *x = st_find(a, "y"), *y = st_find(b, "y");
    *n = 0;
    if (!x || !y || x->dtype != y->dtype || x->nelem != y->nelem)
        return -1;
    long long d = 0;
    for (uint64_t i = 0; i < x->nelem; i++)
        d += st_get_bits(x, x->data, (size_t)i) != st_get_bits(y, y->data, (size_t)i);
    *n = (size_t)x->nelem;
    return d;
}

nx_status pw_cross_show(const dev_backend *ba, const fam_spec *a, const dev_backend *bb, const fam_spec *b,
                        unsigned long long seed, int threads, int *shown, char *said, size_t len, nx_err *err)
{
    *shown = 0;
    snprintf(said, len, "no variant to try");
    const fam_desc *fd = fam_desc_of(a->family);
    if (!fd)
        return NX_OK;
    size_t nvar = 0, k = 0;
    while (nvar < FAM_MAX_VARIANTS && fd->variants[nvar].shape)
        nvar++;
    char tried[600] = "";
    nx_status st = NX_OK;
    /* the point's own shape first, then each variant's awkward one */
    for (size_t v = 0; v <= nvar && !st && !*shown; v++) {
        const fam_variant *fv = &fd->variants[v ? v - 1 : 0];
        if (!nvar || !*fv->fp32)
            continue;
        fam_spec sa, sb;
        memset(&sa, 0, sizeof sa);
        memset(&sb, 0, sizeof sb);
        st_file in, ya, yb;
        st_init(&in);
        st_init(&ya);
        st_init(&yb);
        char where[160], shape[96] = "the point's shape";
        if (v)
            snprintf(shape, sizeof shape, "%s", fv->shape);
        snprintf(where, sizeof where, "fp32 (%s), %s", fv->fp32, shape);
        if (!(st = pw_spec_copy(a, &sa, err)) && !(st = pw_spec_copy(b, &sb, err)) &&
            !(st = set_params(&sa, v ? fv->shape : "", err)) && !(st = set_params(&sb, v ? fv->shape : "", err)) &&
            !(st = set_params(&sa, fv->fp32, err)) && !(st = set_params(&sb, fv->fp32, err))) {
            reds_out_fp32(&sa);
            reds_out_fp32(&sb);
            ref_gen_opts go = {seed, NX_DIST_NORMAL, 0, threads};
            dev_opts d = {DEV_GRAPHED, threads, NULL};
            nx_err e2 = {0};
            if (dev_supports(ba, &sa, sa.kernel) && dev_supports(bb, &sb, sb.kernel) &&
                ref_generate(&sa, &go, &in, &e2) == NX_OK && dev_run(ba, &sa, &in, &ya, &d, &e2) == NX_OK &&
                dev_run(bb, &sb, &in, &yb, &d, &e2) == NX_OK) {
                size_t n;
                long long diff = y_differs(&ya, &yb, &n);
                if (diff > 0) {
                    *shown = 1;
                    snprintf(said, len, "the declared difference shows at %s: %lld of %zu elements of 'y' differ",
                             where, diff, n);
                } else if (k + 8 < sizeof tried) {
                    k += (size_t)snprintf(tried + k, sizeof tried - k, "%s%s", k ? "; " : "", where);
                }
            }
        }
        st_free(&in);
        st_free(&ya);
        st_free(&yb);
        fam_spec_free(&sa);
        fam_spec_free(&sb);
    }
    if (!st && !*shown)
        snprintf(said, len, "%s%s", *tried ? "not shown either at " : "no fp32 variant runs on both backends",
                 tried);
    return st;
}
