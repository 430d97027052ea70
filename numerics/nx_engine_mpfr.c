/* nx_engine_mpfr.c: the MPFR engine, the reference every other engine must
 * equal bit for bit.  Each operation of the expanded program is one call
 * into nx_mp (exact operands, one correct rounding); atoms are computed
 * with exact MPFR sums.  Rows run in parallel under OpenMP, each thread with
 * its own scratch. */
#include "nx_engine.h"
#include "nx_mp.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

struct nx_mpfr_row {
    nx_mp mp;
    double *av, *bv;    /* the row's inputs after `in` rounding */
    double *vals;       /* one value per operation */
    mpfr_t *add;        /* atom addends */
    size_t nadd;
    mpfr_t sum, cut;
};

static size_t max_group(const nx_program *p)
{
    size_t g = 0;
    for (size_t i = 0; i < p->nops; i++)
        if (p->ops[i].kind == NX_OP_ATOM && (size_t)p->ops[i].gn > g)
            g = (size_t)p->ops[i].gn;
    return g;
}

nx_mpfr_row *nx_mpfr_row_new(const nx_program *p)
{
    nx_mpfr_row *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t n = p->n ? p->n : 1;
    r->av = malloc(n * sizeof *r->av);
    r->bv = malloc(n * sizeof *r->bv);
    r->vals = malloc((p->nops ? p->nops : 1) * sizeof *r->vals);
    r->nadd = max_group(p) + 1;
    r->add = malloc(r->nadd * sizeof *r->add);
    if (!r->av || !r->bv || !r->vals || !r->add) {
        free(r->av);
        free(r->bv);
        free(r->vals);
        free(r->add);
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < r->nadd; i++)
        mpfr_init2(r->add[i], 106);
    mpfr_init2(r->sum, 4600);
    mpfr_init2(r->cut, 64);
    nx_mp_init(&r->mp);
    return r;
}

void nx_mpfr_row_free(nx_mpfr_row *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nadd; i++)
        mpfr_clear(r->add[i]);
    mpfr_clear(r->sum);
    mpfr_clear(r->cut);
    nx_mp_clear(&r->mp);
    free(r->av);
    free(r->bv);
    free(r->vals);
    free(r->add);
    free(r);
}

/* value(t) of a term or the value of an operation, with product terms
 * rounded to pfmt (a product that reaches here is never fused). */
static double value_of(nx_mpfr_row *r, const nx_program *p, int32_t s, uint8_t pfmt, nx_mode m,
                       int dblp)
{
    if (!NX_SRC_IS_TERM(s))
        return r->vals[NX_SRC_OP(s)];
    if (!p->dot)
        return r->av[s];
    return nx_mp_mul(&r->mp, r->av[s], r->bv[s], (nx_fmt)pfmt, m, dblp);
}

/* Sets an atom addend: exact product, value, or operation result. */
static void set_addend(nx_mpfr_row *r, const nx_program *p, mpfr_ptr x, int32_t s)
{
    if (!NX_SRC_IS_TERM(s)) {
        mpfr_set_prec(x, 53);
        mpfr_set_d(x, r->vals[NX_SRC_OP(s)], MPFR_RNDN);
    } else if (!p->dot) {
        mpfr_set_prec(x, 53);
        mpfr_set_d(x, r->av[s], MPFR_RNDN);
    } else {
        /* the row's scratch, not a fresh allocation per term */
        mpfr_set_prec(r->mp.t1, 53);
        mpfr_set_prec(r->mp.t2, 53);
        mpfr_set_d(r->mp.t1, r->av[s], MPFR_RNDN);
        mpfr_set_d(r->mp.t2, r->bv[s], MPFR_RNDN);
        mpfr_set_prec(x, 106);
        mpfr_mul(x, r->mp.t1, r->mp.t2, MPFR_RNDN); /* exact: 53 + 53 bits */
    }
}

/* The exponent addend i counts with in the alignment (§5 step 2): a product
 * term under `align = "operands"` counts with e_a + e_b; every other addend
 * (s, a value, a product under "values") with floor(log2 |x|). */
static mpfr_exp_t addend_exp(const nx_mpfr_row *r, const nx_program *p, int32_t s, mpfr_srcptr x,
                             nx_fmt fa, nx_fmt fb)
{
    if (p->dot && NX_SRC_IS_TERM(s) && p->atom_align == NX_ALIGN_OPERANDS)
        return (mpfr_exp_t)nx_fmt_exp(r->av[s], fa) + (mpfr_exp_t)nx_fmt_exp(r->bv[s], fb);
    return mpfr_get_exp(x) - 1;
}

/* §5 */
static double atom(nx_mpfr_row *r, const nx_program *p, const nx_op *op, nx_fmt fa, nx_fmt fb)
{
    size_t k = (size_t)op->gn + 1;
    set_addend(r, p, r->add[0], op->x);
    for (size_t g = 0; g < (size_t)op->gn; g++)
        set_addend(r, p, r->add[g + 1], p->gsrc[op->y + (int32_t)g]);
    int nan = 0, pinf = 0, ninf = 0, all_negzero = 1;
    mpfr_exp_t E = 0, lo = 0;
    int any = 0;
    for (size_t i = 0; i < k; i++) {
        mpfr_srcptr x = r->add[i];
        if (mpfr_nan_p(x))
            nan = 1;
        else if (mpfr_inf_p(x))
            *(mpfr_signbit(x) ? &ninf : &pinf) = 1;
        if (!(mpfr_zero_p(x) && mpfr_signbit(x)))
            all_negzero = 0;
        if (mpfr_regular_p(x)) {
            /* add[0] is s, the accumulator: never a product */
            mpfr_exp_t e = i ? addend_exp(r, p, p->gsrc[op->y + (int32_t)i - 1], x, fa, fb)
                             : mpfr_get_exp(x) - 1;
            mpfr_exp_t l = mpfr_get_exp(x) - (mpfr_exp_t)mpfr_min_prec(x);
            if (!any || e > E)
                E = e;
            if (!any || l < lo)
                lo = l;
            any = 1;
        }
    }
    nx_fmt acc = (nx_fmt)op->fmt;
    if (nan || (pinf && ninf))
        return NAN;
    if (pinf || ninf)
        return nx_round_inf(ninf, acc, 0);
    if (!any)
        return nx_mp_round_d(&r->mp, all_negzero ? -0.0 : 0.0, acc, (nx_mode)op->mode, 0);
    int F = p->atom_frac_bits;
    /* cut addends are multiples of 2^(E-F) below 2^(E+2) (a product's
     * significand lies in [1, 4)): F + 2 bits each, plus carries */
    mpfr_prec_t prec = F >= 0 ? (mpfr_prec_t)F + 72 : (mpfr_prec_t)(E + 1 - lo) + 72;
    mpfr_set_prec(r->sum, prec);
    mpfr_set_zero(r->sum, 1);
    for (size_t i = 0; i < k; i++) {
        mpfr_srcptr x = r->add[i];
        if (!mpfr_regular_p(x))
            continue;
        if (F >= 0) {
            nx_mp_round_quantum(r->cut, x, E - F, p->atom_term_round);
            mpfr_add(r->sum, r->sum, r->cut, MPFR_RNDN); /* exact at this precision */
        } else {
            mpfr_add(r->sum, r->sum, x, MPFR_RNDN);
        }
    }
    if (mpfr_zero_p(r->sum))
        return nx_mp_round_d(&r->mp, all_negzero ? -0.0 : 0.0, acc, (nx_mode)op->mode, 0);
    return nx_mp_round(&r->mp, r->sum, acc, (nx_mode)op->mode, 0);
}

double nx_mpfr_row_eval(nx_mpfr_row *r, const nx_program *p, nx_fmt a_fmt, const double *a,
                        nx_fmt b_fmt, const double *b)
{
    return nx_mpfr_row_eval_c(r, p, a_fmt, a, b_fmt, b, 0.0);
}

double nx_mpfr_row_eval_c(nx_mpfr_row *r, const nx_program *p, nx_fmt a_fmt, const double *a,
                          nx_fmt b_fmt, const double *b, double c)
{
    size_t n = p->n;
    nx_fmt fa = a_fmt, fb = b_fmt;
    if (p->in >= 0) {
        fa = fb = (nx_fmt)p->in;
        for (size_t i = 0; i < n; i++) {
            r->av[i] = nx_mp_round_d(&r->mp, a[i], (nx_fmt)p->in, p->in_rounding, 0);
            if (p->dot)
                r->bv[i] = nx_mp_round_d(&r->mp, b[i], (nx_fmt)p->in, p->in_rounding, 0);
        }
    } else {
        memcpy(r->av, a, n * sizeof *a);
        if (p->dot)
            memcpy(r->bv, b, n * sizeof *b);
    }
    /* products of two non-fp64 members are exact in binary64 */
    int dblp = fa != NX_FP64 && (!p->dot || fb != NX_FP64);
    for (size_t i = 0; i < p->nops; i++) {
        const nx_op *op = &p->ops[i];
        nx_fmt f = (nx_fmt)op->fmt;
        nx_mode m = (nx_mode)op->mode;
        double v;
        switch (op->kind) {
        case NX_OP_ZERO:
            v = 0.0;
            break;
        case NX_OP_START:
            v = c; /* exact: never rounded to `in` or to F (docs/numerics.md §4.1) */
            break;
        case NX_OP_LEAF:
            if (NX_SRC_IS_TERM(op->x) && p->dot && op->pfmt == op->fmt)
                v = nx_mp_mul(&r->mp, r->av[op->x], r->bv[op->x], f, m, dblp);
            else
                v = nx_mp_round_d(&r->mp, value_of(r, p, op->x, op->pfmt, m, dblp), f, m, 0);
            break;
        case NX_OP_ADD:
            if (op->fma)
                v = nx_mp_fma(&r->mp, r->av[op->y], r->bv[op->y], r->vals[NX_SRC_OP(op->x)], f, m, dblp);
            else
                v = nx_mp_add(&r->mp, value_of(r, p, op->x, op->pfmt, m, dblp),
                              value_of(r, p, op->y, op->pfmt, m, dblp), f, m);
            break;
        default:
            v = atom(r, p, op, fa, fb);
            break;
        }
        r->vals[i] = v;
    }
    return nx_mp_round_d(&r->mp, r->vals[NX_SRC_OP(p->result)], p->out, p->out_rounding, p->saturate);
}

nx_status nx_mpfr_reduce(const nx_program *p, const nx_rows *in, double *y, int threads, nx_err *err)
{
    if (p->start && !in->c)
        return nx_err_set(err, NX_EINVAL, "the point is reduced from a start value, but the rows have no c");
    int failed = 0;
    size_t n = p->n;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (in->rows > 1)
    {
        nx_mpfr_row *r = nx_mpfr_row_new(p);
        if (!r) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t row = 0; row < in->rows; row++) {
            if (!r)
                continue;
            y[row] = nx_mpfr_row_eval_c(r, p, in->a_fmt, in->a + row * n, in->b_fmt,
                                        in->b ? in->b + row * n : NULL, nx_rows_start(in, row));
        }
        nx_mpfr_row_free(r);
        mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    if (failed)
        return nx_err_set(err, NX_ENOMEM, "out of memory for the MPFR engine's scratch");
    return NX_OK;
}

static const char *const engine_names[] = {"mpfr", "fast", "auto"};

const char *nx_engine_name(nx_engine_kind e)
{
    return (unsigned)e < 3 ? engine_names[e] : "?";
}

int nx_engine_from_name(const char *name, int allow_auto)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, engine_names[i]) == 0)
            return i == NX_ENGINE_AUTO && !allow_auto ? -1 : i;
    return -1;
}
