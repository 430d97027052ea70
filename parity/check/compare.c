/* compare.c: Tier 2 element comparison (compare.h): pattern validation,
 * ordinal ulp distances, the exact tolerance predicate, the statistics
 * torch.testing users expect, and the text and JSON renderers. */
#include "compare.h"

#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_sbuf.h"
#include "report_json.h"

static const char *const policy_names[CMP_NPOLICIES] = {
    "bitwise", "tolerance", "ulp", "ulp_or_tolerance", "bound"};

static const char *const bucket_names[CMP_HIST_NBUCKETS] = {
    "0", "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", ">64", "non-finite"};

const char *cmp_policy_name(cmp_policy p)
{
    return (unsigned)p < CMP_NPOLICIES ? policy_names[p] : "?";
}

int cmp_policy_from_name(const char *name)
{
    for (int i = 0; i < CMP_NPOLICIES; i++)
        if (strcmp(policy_names[i], name) == 0)
            return i;
    return -1;
}

const char *cmp_hist_bucket_name(int bucket)
{
    return bucket >= 0 && bucket < CMP_HIST_NBUCKETS ? bucket_names[bucket] : "?";
}

void cmp_options_init(cmp_options *o, cmp_policy p)
{
    memset(o, 0, sizeof *o);
    o->policy = p;
    o->equal_nan = 1;
}

nx_status cmp_options_from_tolerance(const fam_tolerance *t, cmp_options *o, nx_err *err)
{
    if (t->has_ulp && t->has_rtol)
        cmp_options_init(o, CMP_ULP_OR_TOLERANCE);
    else if (t->has_ulp)
        cmp_options_init(o, CMP_ULP);
    else if (t->has_rtol)
        cmp_options_init(o, CMP_TOLERANCE);
    else
        return nx_err_set(err, NX_EINVAL, "the tolerance declares neither ulp nor rtol/atol");
    if (t->has_ulp)
        o->max_ulp = t->ulp;
    if (t->has_rtol) {
        o->rtol = t->rtol;
        o->atol = t->atol;
    }
    return NX_OK;
}

/* ---- patterns ------------------------------------------------------------- */

typedef struct pat {
    int nan, inf, zero, neg;
    uint64_t mag; /* ordinal magnitude: consecutive values differ by 1 */
} pat;

/* Low mantissa bits of the fp32 layout that tf32 and e8m13 leave zero. */
static int dropped_bits(const nx_format_info *fi)
{
    return fi->man_bits - (fi->p - 1);
}

/* Classifies pattern b of format f; 0 when it is not a value of f. */
static int classify(nx_fmt f, uint64_t b, pat *p)
{
    const nx_format_info *fi = nx_format(f);
    int w = fi->storage_bits;
    memset(p, 0, sizeof *p);
    if (w < 64 && (b >> w) != 0)
        return 0;
    int drop = dropped_bits(fi);
    uint64_t mmask = (1ull << fi->man_bits) - 1;
    if (drop > 0 && (b & ((1ull << drop) - 1)) != 0)
        return 0;
    if (!fi->is_signed) { /* e8m0: E = 0..254, 0xFF NaN */
        p->nan = b == fi->canonical_nan;
        p->mag = b;
        return 1;
    }
    uint64_t sign = 1ull << (w - 1);
    uint64_t abs = b & (sign - 1);
    uint64_t emask = ((1ull << fi->exp_bits) - 1) << fi->man_bits;
    p->neg = (b & sign) != 0;
    if (fi->nan == NX_NAN_IEEE && (abs & emask) == emask) {
        p->nan = (abs & mmask) != 0;
        p->inf = !p->nan;
    } else if (fi->nan == NX_NAN_ALLONES && abs == (emask | mmask)) {
        p->nan = 1;
    }
    p->mag = abs >> drop;
    p->zero = !p->nan && p->mag == 0;
    return 1;
}

static uint64_t ord_distance(const pat *a, const pat *b)
{
    if (a->neg == b->neg || a->mag == 0 || b->mag == 0) /* same side of zero */
        return a->mag > b->mag ? a->mag - b->mag : b->mag - a->mag;
    return a->mag + b->mag; /* < 2^64: magnitudes are below 2^63 */
}

int cmp_ulp_distance(nx_fmt f, uint64_t a, uint64_t b, uint64_t *dist)
{
    pat pa, pb;
    if ((unsigned)f >= NX_NFORMATS || !classify(f, a, &pa) || !classify(f, b, &pb) || pa.nan ||
        pb.nan)
        return 0;
    *dist = ord_distance(&pa, &pb);
    return 1;
}

static int bucket_of(uint64_t d)
{
    if (d <= 2)
        return (int)d;
    if (d <= 4)
        return CMP_HIST_3_4;
    if (d <= 8)
        return CMP_HIST_5_8;
    if (d <= 16)
        return CMP_HIST_9_16;
    if (d <= 32)
        return CMP_HIST_17_32;
    if (d <= 64)
        return CMP_HIST_33_64;
    return CMP_HIST_OVER_64;
}

/* ---- the exact tolerance predicate ----------------------------------------- */

/* |got - ref| <= atol + rtol*|ref| in exact arithmetic.  A difference of two
 * doubles spans at most 2^1024 .. 2^-1074 (2100 bits); rtol*|ref| + atol
 * spans 2^2048 .. 2^-2148 (4200 bits): at these precisions MPFR is exact. */
static int close_exact(double got, double ref, double rtol, double atol)
{
    mpfr_t d, t;
    mpfr_init2(d, 2200);
    mpfr_init2(t, 4400);
    mpfr_set_d(d, got, MPFR_RNDN);
    mpfr_sub_d(d, d, ref, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    mpfr_set_d(t, fabs(ref), MPFR_RNDN);
    mpfr_mul_d(t, t, rtol, MPFR_RNDN);
    mpfr_add_d(t, t, atol, MPFR_RNDN);
    int le = mpfr_lessequal_p(d, t);
    mpfr_clear(d);
    mpfr_clear(t);
    return le;
}

int cmp_close(double got, double ref, double rtol, double atol)
{
    if (got == ref)
        return 1;
    /* The binary64 evaluation is within a few units of 2^-53 of the truth:
     * decide here when the margin is wider than that, else exactly. */
    double d = fabs(got - ref);
    double t = atol + rtol * fabs(ref);
    if (isfinite(d) && isfinite(t)) {
        if (t >= 0x1p-960) {
            if (d <= t * (1 - 0x1p-50))
                return 1;
            if (d >= t * (1 + 0x1p-50))
                return 0;
        } else if (d >= 0x1p-900) {
            return 0;
        }
    }
    return close_exact(got, ref, rtol, atol);
}

/* ---- the comparison ------------------------------------------------------------- */

static nx_status check_options(const cmp_options *o, nx_err *err)
{
    if ((unsigned)o->policy >= CMP_NPOLICIES)
        return nx_err_set(err, NX_EINVAL, "unknown comparison policy %d", (int)o->policy);
    if (o->policy == CMP_TOLERANCE || o->policy == CMP_ULP_OR_TOLERANCE) {
        if (!(o->rtol >= 0) || !isfinite(o->rtol))
            return nx_err_set(err, NX_EINVAL, "rtol must be finite and >= 0, not %g", o->rtol);
        if (!(o->atol >= 0) || !isfinite(o->atol))
            return nx_err_set(err, NX_EINVAL, "atol must be finite and >= 0, not %g", o->atol);
    }
    if ((o->policy == CMP_ULP || o->policy == CMP_ULP_OR_TOLERANCE) && !(o->max_ulp >= 0))
        return nx_err_set(err, NX_EINVAL, "the ulp tolerance must be >= 0, not %g", o->max_ulp);
    return NX_OK;
}

static nx_status check_input(const cmp_input *in, const cmp_options *o, nx_err *err)
{
    if ((unsigned)in->fmt >= NX_NFORMATS)
        return nx_err_set(err, NX_EINVAL, "unknown format %d", (int)in->fmt);
    if (in->n > 0 && (!in->got || !in->ref))
        return nx_err_set(err, NX_EINVAL, "the device and the reference patterns are both required");
    if (o->policy == CMP_BOUND && in->n > 0 && (!in->exact || !in->bound))
        return nx_err_set(err, NX_EINVAL, "the bound policy needs the exact values and the bounds");
    if (in->ndim < 0 || in->ndim > CMP_MAX_NDIM)
        return nx_err_set(err, NX_EINVAL, "a shape of %d dimensions (0 to %d allowed)", in->ndim,
                          CMP_MAX_NDIM);
    if (in->ndim > 0 && !in->shape)
        return nx_err_set(err, NX_EINVAL, "a shape of %d dimensions without its extents", in->ndim);
    if (in->ndim == 0 && in->shape && in->n != 1)
        return nx_err_set(err, NX_EINVAL, "a scalar shape holds 1 element, not %zu", in->n);
    uint64_t prod = 1;
    for (int k = 0; k < in->ndim; k++) {
        if (in->shape[k] < 0)
            return nx_err_set(err, NX_EINVAL, "shape extent %d is negative (%lld)", k,
                              (long long)in->shape[k]);
        if (in->shape[k] > 0 && prod > UINT64_MAX / (uint64_t)in->shape[k])
            return nx_err_set(err, NX_EINVAL, "the shape's element count overflows");
        prod *= (uint64_t)in->shape[k];
    }
    if (in->ndim > 0 && prod != in->n)
        return nx_err_set(err, NX_EINVAL, "the shape holds %llu elements, but %zu were given",
                          (unsigned long long)prod, in->n);
    return NX_OK;
}

/* NaN/inf pairs under the policy's rules (at least one side is special). */
static int specials_equal(const cmp_options *o, uint64_t g, uint64_t r, const pat *pg, const pat *pr)
{
    if (pg->nan && pr->nan) {
        if (o->policy != CMP_BITWISE && !o->equal_nan)
            return 0;
        return !o->nan_payload || g == r;
    }
    if (pg->nan || pr->nan)
        return 0;
    return g == r; /* an infinity has one pattern per sign */
}

static int ulp_within(uint64_t dist, double max_ulp)
{
    if (max_ulp >= 0x1p64)
        return 1;
    return dist <= (uint64_t)floor(max_ulp);
}

/* got against the exact value under a per-element bound (CMP_BOUND); counts
 * the specials of the pair it decides on. */
static int bound_ok(const cmp_options *o, const pat *pg, double gv, double e, double b, int *nan_pair,
                    int *inf_pair)
{
    *nan_pair = pg->nan || isnan(e);
    *inf_pair = !*nan_pair && (pg->inf || isinf(e));
    if (*nan_pair)
        return pg->nan && isnan(e) && o->equal_nan;
    if (*inf_pair)
        return gv == e;
    return cmp_close(gv, e, 0, b);
}

typedef struct maxloc {
    double v;
    size_t i;
} maxloc;

static void maxloc_put(maxloc *m, double v, size_t i)
{
    if (m->i == CMP_NO_INDEX || v > m->v) {
        m->v = v;
        m->i = i;
    }
}

static const char *side_name(int side)
{
    return side ? "reference" : "device";
}

nx_status cmp_compare(const cmp_input *in, const cmp_options *opt, cmp_result *out, nx_err *err)
{
    nx_status st;
    if ((st = check_options(opt, err)) || (st = check_input(in, opt, err)))
        return st;
    memset(out, 0, sizeof *out);
    out->opt = *opt;
    out->fmt = in->fmt;
    out->n = in->n;
    if (in->shape) {
        out->ndim = in->ndim;
        memcpy(out->shape, in->shape, (size_t)in->ndim * sizeof *in->shape);
    } else {
        out->ndim = 1;
        out->shape[0] = (int64_t)in->n;
    }
    out->first_mismatch = CMP_NO_INDEX;
    out->max_ulp_index = CMP_NO_INDEX;
    out->has_exact = in->exact != NULL;
    const nx_fmt f = in->fmt;
    const cmp_policy pol = opt->policy;
    maxloc abs_all = {0, CMP_NO_INDEX}, rel_all = {0, CMP_NO_INDEX};
    maxloc abs_mis = {0, CMP_NO_INDEX}, rel_mis = {0, CMP_NO_INDEX};
    maxloc err_got = {0, CMP_NO_INDEX}, err_ref = {0, CMP_NO_INDEX}, ratio = {0, CMP_NO_INDEX};

    for (size_t i = 0; i < in->n; i++) {
        uint64_t g = in->got[i], r = in->ref[i];
        pat pg, pr;
        for (int side = 0; side < 2; side++)
            if (!classify(f, side ? r : g, side ? &pr : &pg))
                return nx_err_set(err, NX_EINVAL,
                                  "element %zu of the %s: pattern 0x%llx is not a value of %s", i,
                                  side_name(side), (unsigned long long)(side ? r : g),
                                  nx_format(f)->name);
        if (pol == CMP_BOUND && !(in->bound[i] >= 0))
            return nx_err_set(err, NX_EINVAL, "element %zu: the bound %g is not >= 0", i, in->bound[i]);
        double gv = nx_decode(f, g, NULL), rv = nx_decode(f, r, NULL);
        int special = pg.nan || pr.nan || pg.inf || pr.inf;
        if (g != r)
            out->bits_differ++;
        if (pg.zero && pr.zero && pg.neg != pr.neg)
            out->zero_sign_diff++;

        /* got against ref: distance and histogram, under any policy */
        uint64_t dist = 0;
        int sp_eq = 0;
        if (special) {
            sp_eq = specials_equal(opt, g, r, &pg, &pr);
            out->hist[sp_eq ? CMP_HIST_0 : CMP_HIST_NONFINITE]++;
        } else {
            dist = ord_distance(&pg, &pr);
            out->hist[bucket_of(dist)]++;
            if (out->max_ulp_index == CMP_NO_INDEX || dist > out->max_ulp) {
                out->max_ulp = dist;
                out->max_ulp_index = i;
            }
        }

        /* the verdict */
        int ok, nan_pair = pg.nan || pr.nan, inf_pair = !nan_pair && (pg.inf || pr.inf);
        switch (pol) {
        case CMP_BITWISE:
            ok = (pg.nan && pr.nan) ? sp_eq : g == r;
            break;
        case CMP_BOUND:
            ok = bound_ok(opt, &pg, gv, in->exact[i], in->bound[i], &nan_pair, &inf_pair);
            break;
        default:
            if (special) {
                ok = sp_eq;
            } else {
                int by_tol = pol != CMP_ULP && cmp_close(gv, rv, opt->rtol, opt->atol);
                int by_ulp = pol != CMP_TOLERANCE && ulp_within(dist, opt->max_ulp);
                ok = by_tol || by_ulp;
            }
            break;
        }

        double ad = 0;
        if (!special) {
            ad = fabs(gv - rv);
            double rd = ad == 0 ? 0 : ad / fabs(rv); /* |ref| = 0: inf */
            maxloc_put(&abs_all, ad, i);
            maxloc_put(&rel_all, rd, i);
            if (!ok) {
                maxloc_put(&abs_mis, ad, i);
                maxloc_put(&rel_mis, rd, i);
            }
        }
        if (!ok) {
            if (out->mismatched++ == 0)
                out->first_mismatch = i;
            out->nan_mismatch += nan_pair != 0;
            out->inf_mismatch += inf_pair != 0;
        }
        if (in->exact && isfinite(in->exact[i])) {
            double e = in->exact[i];
            if (isfinite(gv))
                maxloc_put(&err_got, fabs(gv - e), i);
            if (isfinite(rv))
                maxloc_put(&err_ref, fabs(rv - e), i);
            if (pol == CMP_BOUND && isfinite(gv)) {
                double b = in->bound[i], ge = fabs(gv - e);
                maxloc_put(&ratio, ge == 0 ? 0 : ge / b, i);
            }
        }
    }
    out->diffs_over_mismatched = out->mismatched > 0;
    const maxloc *ab = out->mismatched ? &abs_mis : &abs_all;
    const maxloc *re = out->mismatched ? &rel_mis : &rel_all;
    out->max_abs = ab->v;
    out->max_abs_index = ab->i;
    out->max_rel = re->v;
    out->max_rel_index = re->i;
    out->max_err_exact = err_got.v;
    out->max_err_exact_index = err_got.i;
    out->ref_max_err_exact = err_ref.v;
    out->ref_max_err_exact_index = err_ref.i;
    out->max_bound_ratio = ratio.v;
    out->max_bound_ratio_index = ratio.i;
    return NX_OK;
}

/* ---- indices ---------------------------------------------------------------------- */

size_t cmp_format_index(char *buf, size_t cap, size_t i, int ndim, const int64_t *shape,
                        cmp_index_style style)
{
    nx_sbuf b = {0};
    int64_t idx[CMP_MAX_NDIM];
    int ok = ndim >= 0 && ndim <= CMP_MAX_NDIM && (ndim == 0 || shape);
    uint64_t rest = i;
    for (int k = ndim - 1; ok && k >= 0; k--) {
        if (shape[k] <= 0) {
            ok = 0;
            break;
        }
        idx[k] = (int64_t)(rest % (uint64_t)shape[k]);
        rest /= (uint64_t)shape[k];
    }
    if (ok && rest != 0)
        ok = 0;
    if (ndim == 0 && i != 0)
        ok = 0;
    if (!ok) {
        nx_sbuf_put(&b, "?", 1);
    } else {
        nx_sbuf_put(&b, style == CMP_INDEX_TUPLE ? "(" : "[", 1);
        for (int k = 0; k < ndim; k++)
            nx_sbuf_printf(&b, "%s%lld", k ? ", " : "", (long long)idx[k]);
        if (style == CMP_INDEX_TUPLE && ndim == 1)
            nx_sbuf_put(&b, ",", 1);
        nx_sbuf_put(&b, style == CMP_INDEX_TUPLE ? ")" : "]", 1);
    }
    size_t need = b.n;
    if (cap > 0) {
        size_t k = b.s ? (need < cap ? need : cap - 1) : 0;
        if (k)
            memcpy(buf, b.s, k);
        buf[k] = 0;
    }
    free(b.s);
    return need;
}

/* ---- rendering ------------------------------------------------------------------ */

void cmp_num_text(char *buf, size_t cap, double v)
{
    if (cap == 0)
        return;
    if (isnan(v)) {
        snprintf(buf, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", cap - strlen(buf) - 1);
}

/* An ulp tolerance as the whole number of ulps it allows. */
static void ulp_text(char *buf, size_t cap, double max_ulp)
{
    if (max_ulp < 0x1p64)
        snprintf(buf, cap, "%.0f", floor(max_ulp));
    else
        snprintf(buf, cap, "%g", max_ulp); /* every distance passes */
}

static void put_index(nx_sbuf *b, const cmp_result *r, size_t i)
{
    char buf[256];
    cmp_format_index(buf, sizeof buf, i, r->ndim, r->shape, CMP_INDEX_TUPLE);
    nx_sbuf_printf(b, "%s", buf);
}

/* "Greatest absolute difference: 0.0625 at index (1, 17)": torch.testing
 * drops the word and the index for a single element. */
static void put_greatest(nx_sbuf *b, const cmp_result *r, const char *what, const char *What, double v,
                         size_t i)
{
    char num[64];
    if (i == CMP_NO_INDEX) {
        nx_sbuf_printf(b, "Greatest %s difference: none (no pair of finite values)", what);
        return;
    }
    cmp_num_text(num, sizeof num, v);
    if (r->n == 1) {
        nx_sbuf_printf(b, "%s difference: %s", What, num);
        return;
    }
    nx_sbuf_printf(b, "Greatest %s difference: %s at index ", what, num);
    put_index(b, r, i);
}

static int uses_tol(const cmp_result *r)
{
    return r->opt.policy == CMP_TOLERANCE || r->opt.policy == CMP_ULP_OR_TOLERANCE;
}

static int uses_ulp(const cmp_result *r)
{
    return r->opt.policy == CMP_ULP || r->opt.policy == CMP_ULP_OR_TOLERANCE;
}

static void put_policy(nx_sbuf *b, const cmp_result *r)
{
    const cmp_options *o = &r->opt;
    char x[64], y[64];
    nx_sbuf_printf(b, "Policy: %s, %s: ", cmp_policy_name(o->policy), nx_format(r->fmt)->name);
    switch (o->policy) {
    case CMP_BITWISE:
        nx_sbuf_printf(b, "bit-exact, the bits must be equal; -0 and +0 differ; %s\n",
                       o->nan_payload ? "NaNs must have equal payloads"
                                      : "every NaN equals every NaN");
        return;
    case CMP_TOLERANCE:
    case CMP_ULP_OR_TOLERANCE:
        cmp_num_text(x, sizeof x, o->atol);
        cmp_num_text(y, sizeof y, o->rtol);
        nx_sbuf_printf(b, "|got - ref| <= %s + %s*|ref| (equal to the bound passes)", x, y);
        if (o->policy == CMP_TOLERANCE)
            break;
        ulp_text(x, sizeof x, o->max_ulp);
        nx_sbuf_printf(b, ", or at most %s ulp apart", x);
        break;
    case CMP_ULP:
        ulp_text(x, sizeof x, o->max_ulp);
        nx_sbuf_printf(b, "at most %s ulp apart", x);
        break;
    case CMP_BOUND:
        if (o->bound_vs_ref)
            nx_sbuf_printf(b, "|got - ref| <= bound per element (the bound derived from both points' trees)");
        else
            nx_sbuf_printf(b, "|got - exact| <= bound per element (exact rounded to binary64)");
        break;
    default:
        break;
    }
    nx_sbuf_printf(b, "; %s; an infinity must match exactly; -0 equals +0\n",
                   !o->equal_nan ? "NaN never matches"
                   : o->nan_payload ? "NaN equals NaN with the same payload"
                                    : "NaN equals NaN");
}

char *cmp_result_text(const cmp_result *r)
{
    nx_sbuf b = {0};
    char x[64];
    double pct = r->n ? (double)r->mismatched / (double)r->n * 100.0 : 0.0;
    nx_sbuf_printf(&b, "Mismatched elements: %zu / %zu (%.1f%%)\n", r->mismatched, r->n, pct);

    put_greatest(&b, r, "absolute", "Absolute", r->max_abs, r->max_abs_index);
    if (uses_tol(r) && r->max_abs_index != CMP_NO_INDEX) {
        cmp_num_text(x, sizeof x, r->opt.atol);
        nx_sbuf_printf(&b, " (up to %s allowed)", x);
    }
    nx_sbuf_put(&b, "\n", 1);
    put_greatest(&b, r, "relative", "Relative", r->max_rel, r->max_rel_index);
    if (uses_tol(r) && r->max_rel_index != CMP_NO_INDEX) {
        cmp_num_text(x, sizeof x, r->opt.rtol);
        nx_sbuf_printf(&b, " (up to %s allowed)", x);
    }
    nx_sbuf_put(&b, "\n", 1);

    if (r->max_ulp_index == CMP_NO_INDEX) {
        nx_sbuf_printf(&b, "Max ulp: none (no pair of finite values)\n");
    } else {
        nx_sbuf_printf(&b, "Max ulp: %llu at index ", (unsigned long long)r->max_ulp);
        put_index(&b, r, r->max_ulp_index);
        if (r->opt.policy == CMP_BITWISE) {
            nx_sbuf_printf(&b, " (bit-exact: 0 allowed)");
        } else if (uses_ulp(r)) {
            ulp_text(x, sizeof x, r->opt.max_ulp);
            nx_sbuf_printf(&b, " (up to %s allowed)", x);
        }
        nx_sbuf_put(&b, "\n", 1);
    }
    nx_sbuf_printf(&b, "Ulp histogram:");
    for (int k = 0; k < CMP_HIST_NBUCKETS; k++)
        nx_sbuf_printf(&b, "%s %s: %zu", k ? "," : "", bucket_names[k], r->hist[k]);
    nx_sbuf_put(&b, "\n", 1);

    if (r->bits_differ == 0)
        nx_sbuf_printf(&b, "Bit-exact: all %zu elements have the reference's bits\n", r->n);
    else
        nx_sbuf_printf(&b, "Not bit-exact: %zu / %zu elements differ in their bits\n", r->bits_differ,
                       r->n);
    nx_sbuf_printf(&b, "Specials: NaN mismatches %zu, inf mismatches %zu, -0/+0 pairs %zu (%s)\n",
                   r->nan_mismatch, r->inf_mismatch, r->zero_sign_diff,
                   r->opt.policy == CMP_BITWISE ? "mismatches in bitwise mode" : "equal in this mode");

    if (r->has_exact && !r->opt.bound_vs_ref) {
        nx_sbuf_printf(&b, "Greatest error against the exact value: ");
        if (r->max_err_exact_index == CMP_NO_INDEX) {
            nx_sbuf_printf(&b, "none");
        } else {
            cmp_num_text(x, sizeof x, r->max_err_exact);
            nx_sbuf_printf(&b, "%s at index ", x);
            put_index(&b, r, r->max_err_exact_index);
        }
        nx_sbuf_printf(&b, " (reference: ");
        if (r->ref_max_err_exact_index == CMP_NO_INDEX) {
            nx_sbuf_printf(&b, "none)\n");
        } else {
            cmp_num_text(x, sizeof x, r->ref_max_err_exact);
            nx_sbuf_printf(&b, "%s at index ", x);
            put_index(&b, r, r->ref_max_err_exact_index);
            nx_sbuf_printf(&b, ")\n");
        }
    }
    if (r->opt.policy == CMP_BOUND) {
        if (r->max_bound_ratio_index == CMP_NO_INDEX) {
            nx_sbuf_printf(&b, "Greatest use of the bound: none (no pair of finite values)\n");
        } else {
            cmp_num_text(x, sizeof x, r->max_bound_ratio);
            nx_sbuf_printf(&b, "Greatest use of the bound: %s of it at index ", x);
            put_index(&b, r, r->max_bound_ratio_index);
            nx_sbuf_printf(&b, " (up to 1 allowed)\n");
        }
    }
    if (r->first_mismatch != CMP_NO_INDEX) {
        nx_sbuf_printf(&b, "First mismatch at index ");
        put_index(&b, r, r->first_mismatch);
        nx_sbuf_put(&b, "\n", 1);
    }
    put_policy(&b, r);
    return nx_sbuf_take(&b);
}

/* ---- JSON ------------------------------------------------------------------------ */

static json_t *jnum(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v < 0 ? "-inf" : "inf");
    return json_real(v);
}

static json_t *jcount(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX) /* json_int_t is long long */
        return json_integer((json_int_t)v);
    return json_real((double)v);
}

static json_t *jindex(const cmp_result *r, size_t i)
{
    int64_t rest = (int64_t)i;
    json_t *a = json_array();
    if (!a)
        return NULL;
    int64_t idx[CMP_MAX_NDIM];
    for (int k = r->ndim - 1; k >= 0; k--) {
        idx[k] = r->shape[k] > 0 ? rest % r->shape[k] : 0;
        rest = r->shape[k] > 0 ? rest / r->shape[k] : 0;
    }
    for (int k = 0; k < r->ndim; k++)
        if (json_array_append_new(a, json_integer(idx[k])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* {"value": v, "flat": i, "index": [...]}, or null without an index. */
static json_t *jloc(const cmp_result *r, json_t *value, size_t i)
{
    if (i == CMP_NO_INDEX) {
        json_decref(value);
        return json_null();
    }
    json_t *o = json_object();
    int ok = o != NULL;
    if (o) {
        if (value)
            rj_set(o, "value", value, &ok);
        rj_set(o, "flat", jcount(i), &ok);
        rj_set(o, "index", jindex(r, i), &ok);
    } else {
        json_decref(value);
    }
    return rj_done(o, ok);
}

json_t *cmp_result_json(const cmp_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int ok = 1;
    const cmp_options *p = &r->opt;
    rj_set(o, "policy", json_string(cmp_policy_name(p->policy)), &ok);
    rj_set(o, "format", json_string(nx_format(r->fmt)->name), &ok);
    json_t *shape = json_array();
    for (int k = 0; shape && k < r->ndim; k++)
        if (json_array_append_new(shape, json_integer(r->shape[k])) != 0)
            ok = 0;
    rj_set(o, "shape", shape, &ok);
    rj_set(o, "n", jcount(r->n), &ok);
    rj_set(o, "mismatched", jcount(r->mismatched), &ok);
    rj_set(o, "pass", json_boolean(r->mismatched == 0), &ok);
    rj_set(o, "bits_differ", jcount(r->bits_differ), &ok);
    rj_set(o, "bit_exact", json_boolean(r->bits_differ == 0), &ok);
    rj_set(o, "first_mismatch", jloc(r, NULL, r->first_mismatch), &ok);
    if (uses_tol(r)) {
        rj_set(o, "rtol", jnum(p->rtol), &ok);
        rj_set(o, "atol", jnum(p->atol), &ok);
    }
    if (uses_ulp(r))
        rj_set(o, "ulp_allowed", jnum(floor(p->max_ulp)), &ok);
    rj_set(o, "equal_nan", json_boolean(p->policy == CMP_BITWISE || p->equal_nan), &ok);
    rj_set(o, "nan_payload", json_boolean(p->nan_payload), &ok);
    rj_set(o, "signed_zero", json_string(p->policy == CMP_BITWISE ? "mismatch" : "equal"), &ok);
    rj_set(o, "diffs_over", json_string(r->diffs_over_mismatched ? "mismatched" : "all"), &ok);
    rj_set(o, "max_abs_diff", jloc(r, jnum(r->max_abs), r->max_abs_index), &ok);
    rj_set(o, "max_rel_diff", jloc(r, jnum(r->max_rel), r->max_rel_index), &ok);
    rj_set(o, "max_ulp", jloc(r, jcount(r->max_ulp), r->max_ulp_index), &ok);
    json_t *h = json_object();
    for (int k = 0; h && k < CMP_HIST_NBUCKETS; k++)
        rj_set(h, bucket_names[k], jcount(r->hist[k]), &ok);
    rj_set(o, "ulp_histogram", h, &ok);
    rj_set(o, "nan_mismatch", jcount(r->nan_mismatch), &ok);
    rj_set(o, "inf_mismatch", jcount(r->inf_mismatch), &ok);
    rj_set(o, "zero_sign_diff", jcount(r->zero_sign_diff), &ok);
    if (p->policy == CMP_BOUND)
        rj_set(o, "bound_against", json_string(p->bound_vs_ref ? "reference" : "exact"), &ok);
    if (r->has_exact && !p->bound_vs_ref) {
        rj_set(o, "max_err_exact", jloc(r, jnum(r->max_err_exact), r->max_err_exact_index), &ok);
        rj_set(o, "ref_max_err_exact", jloc(r, jnum(r->ref_max_err_exact), r->ref_max_err_exact_index),
             &ok);
    }
    if (p->policy == CMP_BOUND)
        rj_set(o, "max_bound_ratio", jloc(r, jnum(r->max_bound_ratio), r->max_bound_ratio_index), &ok);
    return rj_done(o, ok);
}
