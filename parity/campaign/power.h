/* power.h: the power checks of one family point (docs/power.md).
 *
 * A bit-exact Tier 2 verdict is only as good as the inputs that produced
 * it: a bf16 or fp16 output rounds most reduction-order differences away,
 * shapes that are multiples of the lane width never run a lane tail, and a
 * context shorter than one split never runs the split combine.  For every
 * reduction a point declares, the power checks
 *
 *   1. run the class backend on variants of the point that keep its trees
 *      but make them observable (awkward shapes, fp32 inputs and outputs
 *      where the kernel takes them, contexts of several splits, normal and
 *      adversarial inputs) and on FPRev-style order probes (+M and -M among
 *      small fillers, powers of two exact in the input format) laid into
 *      the family's own tensors; each run is compared bit for bit with the
 *      exact reference of the same variant.  A mismatch fails the point and
 *      says which neighbouring point (below) the kernel's bits match, or
 *      come closest to.
 *   2. enumerate the neighbouring points a port plausibly realises instead
 *      (split count and lane width +-, combine orders, slices reversed,
 *      fma, accumulator, output rounding, scale placement, split length)
 *      and say for each whether the inputs above distinguish it from the
 *      declared point (the reference of both on the same inputs gives other
 *      bits), whether it is equivalent (with the reason), or whether it
 *      was not distinguished (a warning).
 *
 * The library never prints; the result carries the verdict and sentences. */
#ifndef PARITY_POWER_H
#define PARITY_POWER_H

#include <stddef.h>

#include "device.h"
#include "famspec.h"
#include "nx_error.h"

typedef enum pw_verdict {
    PW_PASS, /* every run equals its reference bit for bit */
    PW_FAIL, /* a run differs: the kernel does not realise the declared point */
    PW_SKIP  /* not applicable (detail says why) */
} pw_verdict;

typedef enum pw_seen {
    PW_DISTINGUISHED, /* some power input gives other output bits */
    PW_EQUIVALENT,    /* the same bits on every input, for the stated reason */
    PW_UNSEEN         /* the same bits on every input tried, no proof: a warning */
} pw_seen;

#define PW_MAX_THREADS_MORE 6

typedef struct pw_opts {
    unsigned long long seed; /* the campaign's seed; the power inputs derive from it */
    int threads;             /* kernel (graphed) and reference threads, 0 = all; default 1 */
    int threads_also;        /* the kernel once more at this many threads, on every case
                                whose first run matched (a split that follows the thread
                                count); 0 or = threads: not; default 3 */
    int threads_more[PW_MAX_THREADS_MORE]; /* and at these (0 ends the list) on the cases that run
                                at every count (the cheap fp32 ones and the input-space
                                model's shapes and values); default 2, 4, 8 */
    int engine;              /* nx_engine_kind */
    int neighbours;          /* 1: also report the neighbours (part 2); 0: runs only */
} pw_opts;

/* Defaults: seed 1, one thread (the runs are small; more threads only
 * wait on each other, badly so on a busy machine) and the kernel again at
 * 3 (a count no declared split has, whatever the machine's cores), the
 * fastest engine, neighbours on. */
void pw_opts_default(pw_opts *o);

typedef struct pw_neighbour {
    char red[32];       /* the reduction it changes, or "" for a param */
    char what[256];     /* "k = split(2, stride(8, seq, pairwise), seq)", "fma = false", ... */
    pw_seen seen;
    char why[200];      /* which input distinguished it, or the equivalence */
} pw_neighbour;

typedef struct pw_result {
    pw_verdict verdict;
    char detail[1536];  /* one paragraph: the point, what was run, and the verdict
                           (short enough to sit inside a campaign check's detail) */
    char suspect[32];   /* on failure: the reduction (or elementwise step) named */
    size_t runs;        /* kernel runs (each also evaluated by the reference) */
    size_t probe_rows;  /* order probe rows among them */
    size_t ndist, nequiv, nunseen;
    pw_neighbour *neigh; /* malloc'd, nneigh entries */
    size_t nneigh;
    double seconds;
    char space[2048];   /* the input-space model: which parts the cases covered, which not (docs/power.md) */
} pw_result;

void pw_result_free(pw_result *r);

/* Runs the power checks of the resolved point `spec` on backend `be`.
 * NX_OK with *res filled (PW_SKIP when the point cannot be probed: a
 * negative control, an `atomic` tree, a declared approximation, a kernel
 * the backend lacks); an error only for what stops the checks themselves
 * (memory, a spec the reference refuses). */
nx_status pw_check_point(const dev_backend *be, const fam_spec *spec, const pw_opts *o, pw_result *res,
                         nx_err *err);

/* A deep copy of a resolved spec (row classes left out: no family point
 * uses them); free with fam_spec_free. */
nx_status pw_spec_copy(const fam_spec *s, fam_spec *out, nx_err *err);

/* Two points of one family that differ by declaration (a of backend ba,
 * b of backend bb) run on the inputs that show such a difference where the
 * declared formats hide it: the family's fp32 variants (every reduction
 * kept in fp32), at the point's shape and at the variants' awkward shapes,
 * the same inputs on both sides.  *shown is 1 at the first whose outputs
 * differ, said in `said` ("at fp32, M=5,N=29,K=203: 42 of 145 elements of
 * 'y' differ"); 0 with what was tried.  A variant a backend lacks is
 * passed over; an error only for memory or a refused spec. */
nx_status pw_cross_show(const dev_backend *ba, const fam_spec *a, const dev_backend *bb, const fam_spec *b,
                        unsigned long long seed, int threads, int *shown, char *said, size_t len, nx_err *err);

/* One line per neighbour: "distinguished k = split(2, ...) by fp32 normal
 * M=5,N=29,K=203" (malloc'd). */
char *pw_neighbours_text(const pw_result *r);

#endif
