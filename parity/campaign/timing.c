/* timing.c: interleaved timing of two kernels and the sign-test decision
 * (timing.h). */
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tm_opts_default(tm_opts *o)
{
    o->pairs = TM_PAIRS;
    o->warmup = 3;
    o->min_sample_s = 2e-4;
    o->slack = TM_SLACK;
    o->alpha = TM_ALPHA;
    o->threads = 1;
}

int tm_median_bound_rank(int n, double alpha)
{
    /* P(X <= j) for X ~ Binomial(n, 1/2), accumulated in log space */
    int k = 0;
    double cdf = 0, lchoose = 0; /* log C(n, 0) */
    for (int j = 0; j < n; j++) {
        cdf += exp(lchoose - n * log(2.0));
        if (cdf > alpha)
            break;
        k = j + 1; /* P(X <= k - 1) <= alpha */
        lchoose += log((double)(n - j)) - log((double)(j + 1));
    }
    return k;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* reps runs of the kernel, each timed; *secs is the fastest.  A run that
 * the scheduler interrupted is slower, never faster, so the least of a
 * few short runs is what the kernel costs, while a sum or a mean would
 * carry every preemption of a loaded machine into the sample. */
static nx_status sample(const dev_backend *be, const fam_spec *s, const st_file *in, const dev_opts *d, int reps,
                        double *secs, nx_err *err)
{
    double best = INFINITY;
    for (int i = 0; i < reps; i++) {
        st_file out;
        st_init(&out);
        double t0 = now_s();
        nx_status st = dev_run(be, s, in, &out, d, err);
        double t = now_s() - t0;
        st_free(&out);
        if (st)
            return st;
        best = fmin(best, t);
    }
    *secs = best;
    return NX_OK;
}

nx_status tm_compare(const dev_backend *ba, const fam_spec *sa, const st_file *in_a, const dev_backend *bb,
                     const fam_spec *sb, const st_file *in_b, const tm_opts *o, tm_result *r, nx_err *err)
{
    tm_opts def;
    if (!o) {
        tm_opts_default(&def);
        o = &def;
    }
    memset(r, 0, sizeof *r);
    int n = o->pairs < 11 ? 11 : o->pairs;
    dev_opts d = {o->threads == 1 ? DEV_EAGER : DEV_GRAPHED, o->threads, NULL};
    nx_status st = NX_OK;
    double t = 0, ta = 0, tb = 0;
    for (int i = 0; i < (o->warmup > 0 ? o->warmup : 1) && !st; i++) {
        if (!(st = sample(ba, sa, in_a, &d, 1, &t, err)))
            ta = i ? fmin(ta, t) : t;
        if (!st && !(st = sample(bb, sb, in_b, &d, 1, &t, err)))
            tb = i ? fmin(tb, t) : t;
    }
    if (st)
        return st;
    /* one count of runs per sample for both sides, from the faster one */
    double one = fmax(fmin(ta, tb), 1e-9);
    int reps = (int)fmin(fmax(ceil(o->min_sample_s / one), 1), 100000);
    /* Sequential: TM_STAGES looks at growing counts of pairs (n, 2n + 1,
     * ...), each at level alpha / TM_STAGES, so that the false-alarm rate
     * over all the looks is still at most alpha (Bonferroni).  A look stops
     * when the interval is above 1 + slack (slower) or at or below it (not
     * slower beyond doubt); only an interval that straddles it on a noisy
     * machine asks for more pairs. */
    int nmax = n;
    for (int g = 1; g < TM_STAGES; g++)
        nmax = 2 * nmax + 1;
    double *ra = malloc((size_t)nmax * sizeof *ra), *rb = malloc((size_t)nmax * sizeof *rb),
           *q = malloc((size_t)nmax * sizeof *q), *sa_ = malloc((size_t)nmax * sizeof *sa_),
           *sb_ = malloc((size_t)nmax * sizeof *sb_);
    if (!ra || !rb || !q || !sa_ || !sb_) {
        free(ra), free(rb), free(q), free(sa_), free(sb_);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    double a_look = o->alpha / TM_STAGES;
    int have = 0, looks = 0, reps0 = reps;
    for (int want = n; !st; want = 2 * want + 1) {
        /* a later look's samples are the fastest of twice as many runs as the look before:
         * less of the load in each (every pair stays symmetric when the
         * kernels are alike, whatever its count of runs) */
        reps = (int)fmin((double)reps0 * (double)(1 << looks), 100000);
        for (int i = have; i < want && !st; i++) {
            /* alternate which side goes first: a drift in the machine's
             * speed within a pair favours neither */
            if (i % 2 == 0) {
                if (!(st = sample(ba, sa, in_a, &d, reps, &ra[i], err)))
                    st = sample(bb, sb, in_b, &d, reps, &rb[i], err);
            } else {
                if (!(st = sample(bb, sb, in_b, &d, reps, &rb[i], err)))
                    st = sample(ba, sa, in_a, &d, reps, &ra[i], err);
            }
            q[i] = rb[i] / fmax(ra[i], 1e-12);
        }
        if (st)
            break;
        have = want;
        looks++;
        memcpy(sa_, ra, (size_t)have * sizeof *sa_);
        memcpy(sb_, rb, (size_t)have * sizeof *sb_);
        double *qs = malloc((size_t)have * sizeof *qs);
        if (!qs) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            break;
        }
        memcpy(qs, q, (size_t)have * sizeof *qs);
        qsort(qs, (size_t)have, sizeof *qs, cmp_double);
        qsort(sa_, (size_t)have, sizeof *sa_, cmp_double);
        qsort(sb_, (size_t)have, sizeof *sb_, cmp_double);
        int k = tm_median_bound_rank(have, a_look), m = have;
        r->pairs = m;
        r->reps = reps;
        r->alpha = o->alpha;
        r->slack = o->slack;
        r->before_s = m % 2 ? sa_[m / 2] : 0.5 * (sa_[m / 2 - 1] + sa_[m / 2]);
        r->after_s = m % 2 ? sb_[m / 2] : 0.5 * (sb_[m / 2 - 1] + sb_[m / 2]);
        r->ratio = m % 2 ? qs[m / 2] : 0.5 * (qs[m / 2 - 1] + qs[m / 2]);
        r->lo = k ? qs[k - 1] : 0;
        r->hi = k ? qs[m - k] : INFINITY;
        free(qs);
        r->slower = k && r->lo > 1 + o->slack;
        if (r->slower || r->hi <= 1 + o->slack || looks == TM_STAGES)
            break;
    }
    if (!st)
        snprintf(r->text, sizeof r->text,
                 "time ratio after/before %.3f [%.3f, %.3f] (%d interleaved pairs in %d look%s, each side the fastest "
                 "of %d run%s, %d thread%s; %.4g s -> %.4g s per run; slower means the interval's lower end above "
                 "%.2f, a false alarm at most %.2g%% of the time)",
                 r->ratio, r->lo, r->hi, r->pairs, looks, looks == 1 ? "" : "s", reps, reps == 1 ? "" : "s",
                 o->threads, o->threads == 1 ? "" : "s", r->before_s, r->after_s, 1 + o->slack, 100 * o->alpha);
    free(sa_), free(sb_);
    free(ra), free(rb), free(q);
    return st;
}
