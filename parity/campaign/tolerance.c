/* tolerance.c: Tier 2's policy where bits cannot be required (tolerance.h,
 * docs/tolerance.md). */
#include "tolerance.h"
#include "campaign.h"
#include "refimpl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void t2_policy_free(t2_policy *p)
{
    free(p->exact);
    free(p->bound);
    p->exact = p->bound = NULL;
}

static const char *id_of(const fam_spec *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%s", s->family ? s->family : "?", s->point ? s->point : "?");
    return buf;
}

nx_status t2_policy_choose(const fam_spec *dev, const fam_spec *ref, const st_file *in, nx_fmt fmt, size_t n,
                           const uint64_t *ref_bits, const size_t *src, int threads, t2_policy *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    char a[160], b[160];
    id_of(dev, a, sizeof a);
    id_of(ref, b, sizeof b);
    if (dev->tol.has_ulp || dev->tol.has_rtol) {
        snprintf(out->why, sizeof out->why, "the declared tolerance of %s", a);
        return cmp_options_from_tolerance(&dev->tol, &out->opt, err);
    }
    /* the bound from both points' trees */
    char reason[512] = "";
    double *bp = NULL, *bq = NULL;
    size_t np = 0, nq = 0;
    nx_status st = NX_OK;
    if (ref_bound_same_function(dev, ref, reason, sizeof reason)) {
        nx_err e1 = {0};
        st = ref_bound(dev, in, 0, threads, &bp, &np, reason, sizeof reason, &e1);
        if (st == NX_OK)
            st = ref_bound(ref, in, 1, threads, &bq, &nq, reason, sizeof reason, &e1);
        if (st != NX_OK && st != NX_EUNSUPPORTED) {
            free(bp);
            free(bq);
            *err = e1;
            return st;
        }
    } else {
        st = NX_EUNSUPPORTED;
    }
    if (st == NX_OK && np == nq) {
        out->exact = malloc((n ? n : 1) * sizeof *out->exact);
        out->bound = malloc((n ? n : 1) * sizeof *out->bound);
        if (!out->exact || !out->bound) {
            free(bp);
            free(bq);
            t2_policy_free(out);
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        }
        double worst = 0;
        size_t worst_i = 0;
        for (size_t i = 0; i < n && st == NX_OK; i++) {
            size_t k = src ? src[i] : i;
            if (k >= np) {
                snprintf(reason, sizeof reason, "element %zu of the output has no bound (the bound covers %zu)", k, np);
                st = NX_EUNSUPPORTED;
                break;
            }
            out->exact[i] = nx_decode(fmt, ref_bits[i], NULL);
            /* the sum rounded up: a relative 2^-52 over binary64's rounding */
            out->bound[i] = (bp[k] + bq[k]) * (1 + 0x1p-52);
            if (out->bound[i] > worst) {
                worst = out->bound[i];
                worst_i = i;
            }
        }
        if (st == NX_OK) {
            cmp_options_init(&out->opt, CMP_BOUND);
            out->opt.bound_vs_ref = 1;
            out->derived = 1;
            snprintf(out->why, sizeof out->why,
                     "derived bound from the trees of %s and %s: |y_device - y_reference| <= bound_device + "
                     "bound_reference per element, each the point's error against the exact value "
                     "(docs/tolerance.md); largest %.3g at flat index %zu",
                     a, b, worst, worst_i);
        }
    } else if (st == NX_OK) {
        snprintf(reason, sizeof reason, "the two bounds cover %zu and %zu elements", np, nq);
        st = NX_EUNSUPPORTED;
    }
    free(bp);
    free(bq);
    if (out->derived)
        return NX_OK;
    t2_policy_free(out);
    char d[256];
    camp_default_tolerance(fmt, &out->opt, d, sizeof d);
    cmp_options o = out->opt;
    snprintf(out->why, sizeof out->why,
             "no declared tolerance and no derivable bound (%s): torch.testing default for %s, rtol %g, atol %g, "
             "a last resort",
             reason, nx_format(fmt)->name, o.rtol, o.atol);
    return NX_OK;
}
