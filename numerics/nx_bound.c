/* nx_bound.c: exact value, observed error and a-priori error bound of a
 * point's result (see nx_bound.h; the derivation is in docs/engines.md).
 *
 * Per operation o of the program, in program order:
 *   A_o  the exact sum of |t_i| over the terms below o (a_i·b_i as given),
 *   E_o  a bound on |v_o - x_o|, v_o the computed value, x_o the exact sum
 *        of the terms below o,
 * so |v_o| <= A_o + E_o =: V_o.  A rounding to format f in mode m of a
 * value of magnitude at most S adds r(f, m, S) = u·S + eta (+inf when S
 * exceeds max finite); an operation adds its operands' E and its own r.
 * Terms: the `in` rounding a' = a + da gives |a'b' - ab| <= |a'|·db + |b|·da;
 * a product rounded to `product` adds r(product); a value that is already a
 * member of the target format is not rounded again. */
#include "nx_bound.h"
#include "nx_exact.h"
#include "nx_round_fast.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

struct nx_bound {
    double *E, *A;        /* per operation */
    double *tA, *tE, *tV; /* per term: |a·b|, |a'b' - ab|, |a'b'| */
    double *tW;           /* per term: a bound on 2^e, e the exponent an atom aligns it by */
    int atomic_combine;   /* `atomic` only as a combinator: see nx_bound_atomic_combinator */
    nx_xacc x;
};

nx_bound *nx_bound_new(const nx_program *p)
{
    nx_bound *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    size_t no = p->nops ? p->nops : 1, n = p->n ? p->n : 1;
    b->E = malloc(no * sizeof *b->E);
    b->A = malloc(no * sizeof *b->A);
    b->tA = malloc(n * sizeof *b->tA);
    b->tE = malloc(n * sizeof *b->tE);
    b->tV = malloc(n * sizeof *b->tV);
    b->tW = malloc(n * sizeof *b->tW);
    if (!b->E || !b->A || !b->tA || !b->tE || !b->tV || !b->tW) {
        nx_bound_free(b);
        return NULL;
    }
    return b;
}

void nx_bound_atomic_combinator(nx_bound *b, int on)
{
    b->atomic_combine = on != 0;
}

void nx_bound_free(nx_bound *b)
{
    if (!b)
        return;
    free(b->E);
    free(b->A);
    free(b->tA);
    free(b->tE);
    free(b->tV);
    free(b->tW);
    free(b);
}

static int nearest(nx_mode m) { return m == NX_RNE || m == NX_RNA; }

/* The error of one rounding to f in mode m of a value of magnitude <= S. */
static double rerr(nx_fmt f, nx_mode m, double S)
{
    const nx_format_info *fi = nx_format(f);
    if (!fi->is_signed || !fi->has_zero)
        return INFINITY; /* e8m0: a zero or a negative value becomes NaN */
    if (S == 0)
        return 0; /* an exact zero rounds to itself */
    if (!(S <= fi->max_finite))
        return INFINITY; /* may overflow (or S is already unbounded) */
    double u = ldexp(1.0, (nearest(m) ? 0 : 1) - fi->p);
    double eta = ldexp(1.0, fi->emin - fi->p + (nearest(m) ? 0 : 1));
    return u * S + eta;
}

/* In-rounding of one input: the rounded value and |a' - a|. */
static double in_round(const nx_program *p, double a, double *da)
{
    if (p->in < 0 || p->in == NX_FP64) {
        *da = 0;
        return a;
    }
    double r = nx_round_fast(a, (nx_fmt)p->in, p->in_rounding, 0);
    *da = isfinite(r) ? fabs(r - a) : INFINITY; /* exact: same sign, within a factor 2, or 0 */
    return r;
}

double nx_bound_rounding(nx_fmt f, nx_mode m, double S)
{
    return rerr(f, m, S);
}

/* The operations' errors in program order; returns the result's E (before
 * the out conversion).  vcap > 0: every add and every rounding of an
 * operation's value counts with a magnitude of at least vcap and no add is
 * taken as exact: a bound that holds in any order of the additions (the
 * `atomic` combinator), valid when A + E of the result is at most vcap.
 * With atomic_combine, only the adds of two computed values (a
 * combinator's steps) and the roundings of computed values count so: the
 * adds of a term run in their declared order inside the parts. */
static double ops_pass(nx_bound *b, const nx_program *p, nx_fmt vfmt, int prod_exact, double c, double vcap)
{
    for (size_t o = 0; o < p->nops; o++) {
        const nx_op *op = &p->ops[o];
        nx_fmt f = (nx_fmt)op->fmt;
        nx_mode m = (nx_mode)op->mode;
        double E = 0, A = 0;
        switch (op->kind) {
        case NX_OP_ZERO:
            break;
        case NX_OP_START: /* the start value c enters exactly */
            A = fabs(c);
            break;
        case NX_OP_LEAF:
            if (!NX_SRC_IS_TERM(op->x)) {
                int s = NX_SRC_OP(op->x);
                A = b->A[s];
                double S = A + b->E[s];
                if (vcap > S)
                    S = vcap;
                E = b->E[s] + (p->ops[s].fmt == f || f == NX_FP64 ? 0 : rerr(f, m, S));
            } else if (!p->dot) {
                A = b->tA[op->x];
                E = b->tE[op->x] + (vfmt == f || f == NX_FP64 ? 0 : rerr(f, m, b->tV[op->x]));
            } else {
                nx_fmt pf = (nx_fmt)op->pfmt;
                double e1 = pf == NX_FP64 && prod_exact ? 0 : rerr(pf, m, b->tV[op->x]);
                A = b->tA[op->x];
                E = b->tE[op->x] + e1 + (pf == f ? 0 : rerr(f, m, b->tV[op->x] + e1));
            }
            break;
        case NX_OP_ADD: {
            int32_t src[2] = {op->x, op->y};
            double V = 0;
            int zero_k = -1; /* an operand known to be exactly zero */
            for (int k = 0; k < 2; k++) {
                int32_t s = src[k];
                if (!NX_SRC_IS_TERM(s)) {
                    A += b->A[NX_SRC_OP(s)];
                    E += b->E[NX_SRC_OP(s)];
                    V += b->A[NX_SRC_OP(s)] + b->E[NX_SRC_OP(s)];
                    if (b->A[NX_SRC_OP(s)] == 0 && b->E[NX_SRC_OP(s)] == 0)
                        zero_k = k;
                } else {
                    /* a value term, an exact product (fma) or a product rounded to pfmt */
                    double e1 = 0;
                    if (p->dot && !op->fma) {
                        nx_fmt pf = (nx_fmt)op->pfmt;
                        e1 = pf == NX_FP64 && prod_exact ? 0 : rerr(pf, m, b->tV[s]);
                    }
                    A += b->tA[s];
                    E += b->tE[s] + e1;
                    V += b->tV[s] + e1;
                }
            }
            /* x + 0 with x already a member of f is exact */
            int32_t other = zero_k < 0 ? 0 : src[1 - zero_k];
            if (vcap > 0 && (!b->atomic_combine || (!NX_SRC_IS_TERM(op->x) && !NX_SRC_IS_TERM(op->y))))
                E += rerr(f, m, V > vcap ? V : vcap);
            else if (!(zero_k >= 0 && !NX_SRC_IS_TERM(other) && p->ops[NX_SRC_OP(other)].fmt == f))
                E += rerr(f, m, V);
            break;
        }
        default: { /* NX_OP_ATOM */
            double V = 0, Vmax = 0;
            for (int32_t g = -1; g < op->gn; g++) {
                int32_t s = g < 0 ? op->x : p->gsrc[op->y + g];
                double a_, e_, v_;
                if (!NX_SRC_IS_TERM(s)) {
                    a_ = b->A[NX_SRC_OP(s)];
                    e_ = b->E[NX_SRC_OP(s)];
                    v_ = a_ + e_;
                } else {
                    a_ = b->tA[s];
                    e_ = b->tE[s];
                    v_ = b->tV[s];
                }
                double w_ = NX_SRC_IS_TERM(s) && g >= 0 ? b->tW[s] : v_;
                A += a_;
                E += e_;
                V += v_;
                if (!(w_ <= Vmax))
                    Vmax = w_;
            }
            int F = p->atom_frac_bits;
            if (F >= 0) {
                /* each addend cut to a multiple of 2^(E-F), 2^E <= Vmax: a
                 * value's magnitude, or a product's alignment weight */
                double cut = (double)(op->gn + 1) * ldexp(Vmax, -F) * (nearest(p->atom_term_round) ? 0.5 : 1);
                E += cut;
                V += cut;
            }
            E += rerr(f, m, V);
            break;
        }
        }
        b->A[o] = A;
        b->E[o] = E;
    }
    return b->E[NX_SRC_OP(p->result)];
}

/* The bound from start value c (ignored without NX_OP_START); *sum_abs as
 * for nx_bound_apriori_sum, |c| included. */
static double apriori(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a, nx_fmt b_fmt,
                      const double *bv, double c, double *sum_abs)
{
    size_t n = p->n;
    nx_fmt vfmt = p->in >= 0 && p->in != NX_FP64 ? (nx_fmt)p->in : a_fmt;
    int prod_exact = p->in >= 0 && p->in != NX_FP64 ? 1 : a_fmt != NX_FP64 && (!p->dot || b_fmt != NX_FP64);
    nx_fmt ofa = p->in >= 0 ? (nx_fmt)p->in : a_fmt, ofb = p->in >= 0 ? (nx_fmt)p->in : b_fmt;
    for (size_t i = 0; i < n; i++) {
        double da, db = 0;
        double ai = in_round(p, a[i], &da);
        if (!p->dot) {
            b->tA[i] = fabs(a[i]);
            b->tV[i] = fabs(ai);
            b->tW[i] = fabs(ai);
            b->tE[i] = da;
            continue;
        }
        double bi = in_round(p, bv[i], &db);
        b->tA[i] = fabs(a[i] * bv[i]);
        b->tV[i] = fabs(ai * bi);
        b->tE[i] = fabs(ai) * db + fabs(bv[i]) * da;
        /* §5 step 2, "operands": 2^(e_a + e_b) <= max(|a'|, 2^emin_a)·max(|b'|,
         * 2^emin_b), which exceeds |a'b'| where an operand is subnormal */
        b->tW[i] = p->atom_align == NX_ALIGN_OPERANDS
                       ? fmax(fabs(ai), nx_fmt_min_normal(ofa)) * fmax(fabs(bi), nx_fmt_min_normal(ofb))
                       : b->tV[i];
    }
    double E = ops_pass(b, p, vfmt, prod_exact, c, 0);
    int r = NX_SRC_OP(p->result);
    if (p->nondeterministic && isfinite(E)) {
        /* `atomic`: a bound for every order of its additions, the
         * magnitude cap raised until it covers the result's */
        double vcap = b->A[r] + E;
        for (int k = 0; k < 64; k++) {
            E = ops_pass(b, p, vfmt, prod_exact, c, vcap);
            if (!isfinite(E) || b->A[r] + E <= vcap)
                break;
            vcap = 2 * (b->A[r] + E);
            if (k == 63)
                E = INFINITY;
        }
    }
    nx_fmt rf = (nx_fmt)p->ops[r].fmt;
    if (rf != p->out && p->out != NX_FP64)
        E += rerr(p->out, p->out_rounding, b->A[r] + E);
    else if (p->saturate && p->out == rf && !(b->A[r] + E <= nx_format(p->out)->max_finite))
        E = INFINITY; /* a saturated infinity */
    /* the binary64 arithmetic above rounds to nearest: a relative error of
     * at most (operations along any path)·2^-53, far below this margin */
    double gamma = ldexp((double)(16 * (p->nops + 2 * p->n) + 64), -53);
    E *= 1 + 2 * gamma;
    if (sum_abs)
        *sum_abs = b->A[r] * (1 + 2 * gamma);
    return isnan(E) ? INFINITY : E;
}

double nx_bound_apriori_sum(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a, nx_fmt b_fmt,
                            const double *bv, double *sum_abs)
{
    return apriori(b, p, a_fmt, a, b_fmt, bv, 0.0, sum_abs);
}

double nx_bound_apriori_c(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                          nx_fmt b_fmt, const double *bv, double c)
{
    return apriori(b, p, a_fmt, a, b_fmt, bv, c, NULL);
}

double nx_bound_apriori(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                        nx_fmt b_fmt, const double *bv)
{
    return apriori(b, p, a_fmt, a, b_fmt, bv, 0.0, NULL);
}

void nx_bound_eval(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                   nx_fmt b_fmt, const double *bv, double y, nx_bound_row *out, mpfr_ptr exact)
{
    nx_bound_eval_c(b, p, a_fmt, a, b_fmt, bv, 0.0, y, out, exact);
}

void nx_bound_eval_c(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                     nx_fmt b_fmt, const double *bv, double c, double y, nx_bound_row *out,
                     mpfr_ptr exact)
{
    nx_xacc *x = &b->x;
    nx_xacc_init(x);
    if (p->dot)
        nx_xacc_add_dot(x, a, bv, p->n, a_fmt != NX_FP64 && b_fmt != NX_FP64);
    else
        nx_xacc_add_sum(x, a, p->n);
    if (p->start) /* D = A·B + C: the exact value includes c (docs/numerics.md §6) */
        nx_xacc_add(x, c);
    if (exact)
        nx_xacc_get_mpfr(x, exact);
    out->exact = nx_xacc_round(x, NX_FP64, NX_RNE, 0);
    const nx_format_info *fo = nx_format(p->out);
    int sx = nx_xacc_sign(x);
    /* the out format's quantum at the exact value */
    int lg = fo->emin;
    if (sx != 0 && sx != 2) {
        double xz = nx_xacc_round(x, NX_FP64, NX_RZ, 0);
        lg = isinf(xz) ? 1024 : nx_rf_lg(xz);
        if (lg < fo->emin)
            lg = fo->emin;
    }
    int q = lg - fo->p + 1;
    out->ulp = q > 1023 ? INFINITY : nx_rf_pow2(q);
    if (sx == 2) {
        /* a NaN or infinite input: the exact value is not a number */
        int same = (isnan(y) && isnan(out->exact)) || y == out->exact;
        out->error = same ? 0 : INFINITY;
    } else if (!isfinite(y)) {
        out->error = INFINITY;
    } else {
        nx_xacc_add(x, -y);
        int sd = nx_xacc_sign(x);
        double d = nx_xacc_round(x, NX_FP64, sd >= 0 ? NX_RU : NX_RD, 0); /* away from 0 */
        out->error = fabs(d);
    }
    out->error_ulps = out->error / out->ulp;
    out->bound = nx_bound_apriori_c(b, p, a_fmt, a, b_fmt, bv, c);
    out->bound_ulps = out->bound / out->ulp;
}

nx_status nx_bound_rows(const nx_program *p, const nx_rows *in, const double *y,
                        nx_bound_row *out, int threads, nx_err *err)
{
    int failed = 0;
    size_t n = p->n;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (in->rows > 1)
    {
        nx_bound *b = nx_bound_new(p);
        if (!b) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t r = 0; r < in->rows; r++) {
            if (!b)
                continue;
            nx_bound_eval_c(b, p, in->a_fmt, in->a + r * n, in->b_fmt, in->b ? in->b + r * n : NULL,
                            nx_rows_start(in, r), y[r], &out[r], NULL);
        }
        nx_bound_free(b);
    }
    if (failed)
        return nx_err_set(err, NX_ENOMEM, "out of memory for the error bounds' scratch");
    return NX_OK;
}
