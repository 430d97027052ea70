/* pa_core.h: what `parity reduce` and `parity check --numerics` compute,
 * on tensors already in memory, shared by the CLI (cmd_reduce.c,
 * cmd_check_numerics.c) and the shared library's C ABI (parity_api.c), so
 * that Python and the command line run the same code.  Files, reports and
 * printing stay with the callers. */
#ifndef PARITY_PA_CORE_H
#define PARITY_PA_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "fit.h"
#include "refimpl.h"
#include "registry.h"
#include "reveal.h"
#include "trace_check.h"
#include "nx_engine.h"
#include "nx_point.h"
#include "nx_program.h"
#include "safetensors.h"


/* A row where the fast engine and MPFR disagree (--engine auto). */
typedef struct pa_disagree {
    size_t row;
    uint64_t fast, mpfr;
    double vf, vm;
} pa_disagree;

typedef struct pa_reduce_out {
    nx_program *prog;       /* the point expanded at n (owned) */
    size_t rows, n;
    int dot, has_c;
    double *y;              /* [rows] results, values of prog->out (owned) */
    nx_rows in;             /* with whole: every row decoded (a, b, c owned) */
    size_t ndisagree;       /* rows the MPFR re-evaluation found differing */
    size_t nchecked;        /* rows re-evaluated by MPFR */
    pa_disagree disagree[10];
} pa_reduce_out;

void pa_reduce_out_free(pa_reduce_out *o);

/* Evaluates point pt over the rows of in ('a' [rows, n], optional 'b' and
 * 'c', as docs/numerics.md §6 says; messages name inp).  whole: decode
 * every row into o->in (a report reads them); else rows stream.  auto
 * re-evaluates `check` sample rows (every row for row classes) with MPFR:
 * a difference is NX_EINTERNAL with o->disagree holding up to ten of them
 * (o->y then holds the fast engine's results).  Sizes are held to the
 * limits (docs/limits.md) before anything is allocated. */
nx_status pa_reduce(const nx_point *pt, const char *inp, const st_file *in, nx_engine_kind engine, size_t check,
                    int threads, int whole, pa_reduce_out *o, nx_err *err);

/* The dtype y is stored in: out's, or F32 when rows of a sub-byte dtype do
 * not fill whole bytes (*widened = 1). */
st_dtype pa_y_dtype(nx_fmt out, size_t rows, int *widened);

/* y's elements as `parity reduce` writes them: ty of pa_y_dtype's dtype
 * and shape [rows]; a widened result must still be a value of `out`. */
nx_status pa_y_encode(const pa_reduce_out *o, st_tensor *ty, uint8_t *data, nx_err *err);

/* `parity check --numerics`: a kernel's output ty (one value per row) of
 * outp (tname: the tensor's name in messages) against point pt's reference
 * on the rows of in (messages name inp). */
typedef struct pa_check_out {
    nx_program *prog;       /* owned: the point's own program (class 0) */
    const nx_point *pt;     /* the point (not owned; alive until pa_check_numerics returns): with row
                               classes (§4.3) its reference is nx_point_reduce's, class by class */
    size_t rows, n;
    cmp_options opt;
    cmp_result res;
    char why[512];
    uint64_t *gb, *rb;      /* [rows] the output's and the reference's patterns (owned) */
    nx_fmt yfmt;            /* the format of the patterns */
} pa_check_out;

void pa_check_out_free(pa_check_out *o);
/* First the point and IN (o->rows, o->n, o->prog), then the output. */
nx_status pa_check_prepare(const nx_point *pt, const char *inp, const st_file *in, pa_check_out *o, nx_err *err);
nx_status pa_check_numerics(const char *inp, const st_file *in, const char *outp, const char *tname,
                            const st_tensor *ty, int mpfr, int threads, pa_check_out *o, nx_err *err);
/* The verdict as `parity check --numerics` prints it: the line, then,
 * when rows differ, the comparison's report and the first and worst
 * mismatching rows with both bit patterns, indented (malloc'd). */
char *pa_check_text(const pa_check_out *o, const char *outp);

/* `parity fit`: one IN/Y pair as fit_pair (rows decoded into *v); ta, tb,
 * tc as rows_check_inputs_c gives them; tn names y in messages ("tensor
 * 'y'"); *yfmt receives y's format. */
typedef struct pa_fit_vals {
    double *a, *b, *c, *y;
} pa_fit_vals;
void pa_fit_vals_free(pa_fit_vals *v);
nx_status pa_fit_pair(const char *inp, const st_tensor *ta, const st_tensor *tb, const st_tensor *tc, const char *yp,
                      const char *tn, const st_tensor *ty, pa_fit_vals *v, fit_pair *fp, nx_fmt *yfmt, nx_err *err);
/* Pair p (p > 0) against pair 0: one out format (f is p's, yfmt 0's), all
 * dot products or all sums. */
nx_status pa_fit_pairs_agree(const fit_pair *fp, size_t p, nx_fmt f, nx_fmt yfmt, const char *inp, const char *yp,
                             const char *in0, const char *y0, nx_err *err);

/* `parity reveal --space`: the trees of the space's candidates, each once,
 * in space order, as o->hints (tried first as spellings of the revealed
 * order); pa_free_hints frees them. */
nx_status pa_reveal_hints(const fit_space *sp, rv_opts *o, nx_err *err);
void pa_free_hints(rv_opts *o);

/* `parity ref`: family point fp's exact reference on the inputs in (named
 * inp in messages) into *out.  *cls and *shape default to in's metadata
 * (class: "cpu"); *reg and *spec are the caller's to free. */
nx_status pa_reference(const char *kdir, const char *fp, const char **cls, const char **shape, const st_file *in,
                       const char *inp, const ref_opts *o, reg_registry **reg, fam_spec *spec, st_file *out,
                       nx_err *err);
/* A checked trace's Tier 2 line as `parity check` prints it, and the
 * comparison's report indented when it failed (malloc'd). */
char *pa_trace_text(const tc_trace *c);

#endif
