/* timing.h: is a kernel slower after a change?  A decision made by
 * statistics, not by one run time per side (docs/ledger.md, "The timing
 * check").  The kernels of both sides run in one process, alternately
 * (before-after, then after-before, ...), after a warm-up; each sample is
 * the fastest of a calibrated number of runs (a preempted run is only ever
 * slower); the ratio after/before of every pair is
 * taken, and the median ratio gets a distribution-free confidence interval
 * from order statistics (the sign test: no assumption on the noise but
 * that the pairs are exchangeable, which the interleaving provides).
 * "Slower" means the interval's lower end is above 1 + slack: when the
 * kernels are alike (true median ratio <= 1 + slack), that happens with
 * probability at most alpha, the stated false-alarm rate, however loaded
 * the machine is.  On a loaded machine the interval widens: where it
 * straddles 1 + slack, more pairs are taken (TM_STAGES looks, each at
 * alpha / TM_STAGES), so that load costs time, not the verdict. */
#ifndef PARITY_TIMING_H
#define PARITY_TIMING_H

#include "device.h"
#include "famspec.h"
#include "safetensors.h"

typedef struct tm_opts {
    int pairs;           /* interleaved pairs (>= 11; default TM_PAIRS) */
    int warmup;          /* untimed runs of each side first (default 3) */
    double min_sample_s; /* a sample repeats the kernel until it lasts about this long (default 2e-4 s) */
    double slack;        /* slower: the median ratio's lower bound above 1 + slack (default 0.10) */
    double alpha;        /* the false-alarm rate of one comparison (default 0.001) */
    int threads;         /* the kernels' threads while timed (default 1: DEV_EAGER) */
} tm_opts;

#define TM_PAIRS 31
/* Looks at 31, 63, 127 and 255 pairs (with the default), each at level
 * alpha / TM_STAGES: more pairs only where the interval straddles
 * 1 + slack. */
#define TM_STAGES 4
#define TM_SLACK 0.10
#define TM_ALPHA 0.001

void tm_opts_default(tm_opts *o);

typedef struct tm_result {
    int pairs, reps;         /* pairs sampled; kernel runs per sample (its fastest is the sample) */
    double before_s, after_s;/* the median over the samples of each side, seconds per run */
    double ratio;            /* the median of the pairs' after/before */
    double lo, hi;           /* its confidence interval, each end at level 1 - alpha */
    double alpha, slack;
    int slower;              /* lo > 1 + slack */
    char text[320];          /* "ratio 1.31 [1.22, 1.40] (31 interleaved pairs of 12 runs, ...)" */
} tm_result;

/* Times point sa on backend ba with inputs in_a against sb on bb with in_b,
 * interleaved.  Errors only when a kernel fails to run. */
nx_status tm_compare(const dev_backend *ba, const fam_spec *sa, const st_file *in_a, const dev_backend *bb,
                     const fam_spec *sb, const st_file *in_b, const tm_opts *o, tm_result *r, nx_err *err);

/* The order statistic k (1-based) whose value is a lower confidence bound
 * of level 1 - alpha for the median of n samples: the largest k with
 * P(Binomial(n, 1/2) <= k - 1) <= alpha; 0 when even k = 1 fails (n too
 * small).  The upper bound is the (n + 1 - k)-th. */
int tm_median_bound_rank(int n, double alpha);

#endif
