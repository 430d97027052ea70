/* nx_engine_fast.c: the fast engine.  It runs the same expanded program
 * (nx_program) as the MPFR engine, op by op in the same order, and gives
 * the same bits; only the way one rounded operation is done differs.
 *
 * How one operation is done:
 *  - fp32 rne with float operands: float add, or fmaf (the declared step is
 *    one rounding of the exact a·b + s to binary32, which is what IEEE fma
 *    computes, subnormals, overflow and signed zeros included);
 *  - fp64 rne: double add / fma, for the same reason;
 *  - anything else: r = RN64(x + y) in hardware; when r's bits below the
 *    format's precision are neither 0 nor exactly half, no grid point or
 *    midpoint of the format lies between r and the exact value, so rounding
 *    r with an integer mask (CPFloat-style) is rounding the exact value.
 *    Otherwise (and near underflow, overflow, NaN, inf, zero) TwoSum gives
 *    the exact value as hi + lo and nx_round_fast rounds it.  A product of
 *    two non-fp64 values is exact in binary64, so a fused step is that add;
 *    with an fp64 operand the exact a·b + c is TwoProd plus an exact
 *    three-term sum, rounded once;
 *  - atoms (§5): exact products, the largest exponent E, every addend cut
 *    to a multiple of 2^(E-F) and summed in an int64 (F + 1 + log2(N + 1) <
 *    62), one final rounding; without frac_bits the addends are summed
 *    exactly in nx_exact's superaccumulator.
 * Anything it cannot do exactly marks the row, and the row is recomputed by
 * nx_mpfr_row_eval: never a guess.
 *
 * Speed: rows are evaluated B = 8 at a time, operation by operation, so
 * every step of a declared chain has 8 independent chains next to it (no
 * reassociation: each row keeps its order); consecutive steps
 * s = step(s, t_i) of a chain run as one tight loop (a "run") with the
 * accumulator in registers, the generic ones on two 4-lane vectors whose
 * lanes are rows; independent runs over jumping term lists (stride lanes)
 * advance together; atoms are vectorised along their group; operation
 * results live in slots reused once consumed.  The block evaluator is
 * compiled twice, once for AVX2 + FMA (chosen at run time on x86-64), so
 * fmaf/fma are single instructions there and library calls elsewhere: the
 * same bits either way.  docs/engines.md has the whole argument. */
#include "nx_engine.h"
#include "nx_exact.h"
#include "nx_mp.h"
#include "nx_round_fast.h"
#include "nx_simd.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define FX_B 8
#define SIGNB 0x8000000000000000ull
#define ABSM 0x7fffffffffffffffull
#define INFB 0x7ff0000000000000ull

/* ---------------------------------------------------------------------- */
/* One rounding. */

typedef struct fx_fmt {
    nx_rfmt rf;
    uint64_t mask, half; /* binary64 significand bits below the format's precision */
    uint64_t eb_fast;    /* smallest biased binary64 exponent for the bit trick; 0x800: never */
} fx_fmt;

static void fx_fmt_init(fx_fmt *F, nx_fmt f)
{
    nx_rfmt_init(&F->rf, f);
    int sh = 53 - F->rf.p;
    if (sh >= 1 && F->rf.is_signed && F->rf.has_zero) {
        F->mask = (1ull << sh) - 1;
        F->half = 1ull << (sh - 1);
        F->eb_fast = (uint64_t)(F->rf.emin + 1023);
    } else {
        F->mask = F->half = 0;
        F->eb_fast = 0x800;
    }
}

static inline uint64_t bits(double x) { return nx_rf_bits(x); }
static inline double dbl(uint64_t u) { return nx_rf_from_bits(u); }

/* The mask rounding of |x| (bits a, sign from u) in mode m. */
static inline uint64_t mask_round(uint64_t a, uint64_t u, const fx_fmt *F, nx_mode m, int exact)
{
    switch (m) {
    case NX_RNE:
        /* exact x: a tie looks at the last kept bit; an inexact r is never a tie */
        return exact ? (a + F->half - 1 + ((a >> __builtin_ctzll(F->half << 1)) & 1)) & ~F->mask
                     : (a + F->half) & ~F->mask;
    case NX_RNA: return (a + F->half) & ~F->mask;
    case NX_RZ: return a & ~F->mask;
    case NX_RU: return (u >> 63) ? a & ~F->mask : (a + F->mask) & ~F->mask;
    default: return (u >> 63) ? (a + F->mask) & ~F->mask : a & ~F->mask;
    }
}

/* round(x) for an exact double x. */
static inline double fround(double x, const fx_fmt *F, nx_mode m, int saturate)
{
    uint64_t u = bits(x), a = u & ABSM, eb = a >> 52;
    if (eb >= F->eb_fast && eb < 0x7ff) {
        uint64_t ra = mask_round(a, u, F, m, 1);
        if (ra <= F->rf.maxbits)
            return dbl(ra | (u & SIGNB));
    }
    return nx_rf_round(x, &F->rf, m, saturate);
}

/* IEEE result of an addition involving a NaN or an infinity (nx_mp.c). */
static double special_add(double x, double y, const fx_fmt *F)
{
    double s = x + y;
    if (isnan(s))
        return NAN;
    return nx_round_inf(s < 0, F->rf.fmt, 0);
}

/* round(x + y), the general way: TwoSum and integer rounding. */
static double gadd_slow(double x, double y, const fx_fmt *F, nx_mode m)
{
    if (!isfinite(x) || !isfinite(y))
        return special_add(x, y, F);
    double s = x + y;
    if (!isfinite(s)) /* |x + y| >= max double + ulp/2: beyond every format */
        return nx_round_overflow(signbit(s) != 0, F->rf.fmt, m, 0);
    if (s == 0) {
        /* exact zero: IEEE's sign rule, which the hardware applied for rne */
        if (m == NX_RD && !(bits(x) == 0 && bits(y) == 0))
            s = -0.0;
        return nx_rf_round(s, &F->rf, m, 0);
    }
    double bb = s - x;
    double e = (x - (s - bb)) + (y - bb);
    return nx_rf_round_dd(s, e, &F->rf, m, 0);
}

/* round(x + y) to a format of fewer than 53 bits, or any format.  When
 * r's dropped bits are 0 or exactly half, r alone cannot tell: TwoSum says
 * whether r is exact (then the mask rounding of r, ties included, is the
 * answer) or not (the slow path). */
static inline double gadd(double x, double y, const fx_fmt *F, nx_mode m)
{
    double r = x + y;
    uint64_t u = bits(r), a = u & ABSM, eb = a >> 52, low = a & F->mask;
    if (eb >= F->eb_fast && eb < 0x7ff) {
        int exact = 0;
        if (low == 0 || low == F->half) {
            double bb = r - x;
            if ((x - (r - bb)) + (y - bb) != 0)
                return gadd_slow(x, y, F, m);
            exact = 1;
        }
        uint64_t ra = mask_round(a, u, F, m, exact);
        if (ra <= F->rf.maxbits)
            return dbl(ra | (u & SIGNB));
    }
    return gadd_slow(x, y, F, m);
}

/* Exact TwoProd of finite nonzero a, b; 0 if it cannot be exact (underflow
 * of the error term, or overflow). */
static inline int two_prod(double a, double b, double *p, double *e)
{
    *p = a * b;
    double ap = fabs(*p);
    if (!(ap >= 0x1p-968 && ap <= 0x1p+1020))
        return 0;
    *e = fma(a, b, -*p);
    return 1;
}

/* The exact a·b + c (c may be 0) in the superaccumulator, rounded once:
 * the way out for fp64 operands whose TwoProd would underflow or overflow.
 * Its zero rule is IEEE's for x + y, as nx_mp_add's. */
static double xacc_fma(nx_xacc *x, double a, double b, double c, const fx_fmt *F, nx_mode m)
{
    nx_xacc_init(x);
    nx_xacc_add_prod(x, a, b);
    nx_xacc_add(x, c);
    return nx_xacc_round(x, F->rf.fmt, m, 0);
}

/* round(a·b) with one rounding, fp64 operands allowed. */
static double gmul(double a, double b, const fx_fmt *F, nx_mode m, int prod_exact, nx_xacc *x)
{
    if (prod_exact || !isfinite(a) || !isfinite(b) || a == 0 || b == 0)
        return fround(a * b, F, m, 0); /* exact, or IEEE's special product */
    if (F->rf.fmt == NX_FP64 && m == NX_RNE)
        return a * b;
    double p, e;
    if (!two_prod(a, b, &p, &e))
        return xacc_fma(x, a, b, 0.0, F, m); /* a nonzero product: the 0 changes nothing */
    return nx_rf_round_dd(p, e, &F->rf, m, 0);
}

static inline void two_sum(double x, double y, double *s, double *e)
{
    *s = x + y;
    double bb = *s - x;
    *e = (x - (*s - bb)) + (y - bb);
}

static inline int lg_or_min(double x)
{
    return x == 0 ? -100000 : nx_rf_lg(x);
}

/* round(a·b + c) with one rounding where a·b may not be exact in binary64
 * (an fp64 operand): TwoProd, then the exact three-term sum p + e + c
 * normalised into hi + mid + lo and rounded once. */
static double gfma3(double a, double b, double c, const fx_fmt *F, nx_mode m, nx_xacc *x)
{
    if (!isfinite(a) || !isfinite(b))
        return special_add(a * b, c, F);
    if (!isfinite(c))
        return special_add(c, 0.0, F);
    if (a == 0 || b == 0)
        return gadd(a * b, c, F, m); /* an exact signed zero product */
    if (F->rf.fmt == NX_FP64 && m == NX_RNE)
        return fma(a, b, c);
    double p, e;
    if (!two_prod(a, b, &p, &e) || !(fabs(c) <= 0x1p+1020))
        return xacc_fma(x, a, b, c, F, m);
    double s, t, u, w, s2, u2, u3, w2;
    two_sum(p, c, &s, &t);
    two_sum(t, e, &u, &w);
    two_sum(s, u, &s2, &u2);
    two_sum(u2, w, &u3, &w2);
    if (s2 == 0 && u3 == 0 && w2 == 0) /* p + e = -c: a cancellation */
        return nx_rf_round(m == NX_RD ? -0.0 : 0.0, &F->rf, m, 0);
    /* the normalisation nx_rf_round_ddd needs; checked, never assumed */
    if (s2 == 0 || (u3 != 0 && lg_or_min(u3) > nx_rf_lg(s2) - 51) ||
        (w2 != 0 && (u3 == 0 || lg_or_min(w2) > lg_or_min(u3) - 53)))
        return xacc_fma(x, a, b, c, F, m);
    return nx_rf_round_ddd(s2, u3, w2, &F->rf, m, 0);
}

/* ---------------------------------------------------------------------- */
/* The plan: the program's operations grouped into steps, with slots. */

enum { O_SLOT, O_VAL, O_PROD };          /* operand: an op result, a value term, a product term */
enum { S_ZERO, S_LEAF, S_ADD, S_FMA, S_RUN, S_ATOM, S_GROUP, S_START };
enum { A_F32, A_F64, A_GEN, A_ID };      /* how the rounding is done */

typedef struct fx_step {
    uint8_t kind, cls, mode, fmt, pfmt, xk, yk, fused; /* fused: a run of fma steps */
    int32_t x, y;     /* slot or term index per xk, yk */
    int32_t dst;      /* result slot */
    int32_t n;        /* run: steps; atom: group size */
    int32_t toff;     /* run: offset in tidx, or -1 when the terms are y, y+1, ... */
    int32_t op;       /* the program operation (the last one of a run) */
    int32_t inter8;   /* S_GROUP of 8 runs whose term j of run r is inter8 - 1 + 8j + r
                         (stride(8, seq, ...) lanes), else 0 */
} fx_step;

typedef struct fx_plan {
    const nx_program *p;
    fx_fmt fmt[NX_NFORMATS];
    int dot, prod_exact, narrow_a, in_round;
    nx_fmt vfmt_a;   /* format the value terms are members of */
    nx_fmt ofmt_a, ofmt_b; /* the operands' formats as an atom aligns them (§5 step 2) */
    int align_ops;   /* atoms align products by their operands' exponents */
    fx_step *steps;
    size_t nsteps;
    int32_t *tidx;   /* run term lists */
    size_t ntidx;
    int32_t *gsrc;   /* atom sources: term (>= 0) or slot -(s+1) */
    int nslots, maxg, result_slot;
    int atom_fixed;  /* atoms fit the int64 fixed point */
    fx_step *gruns;  /* the runs of S_GROUP steps */
    int maxgroup;    /* the largest group */
    nx_fmt c_fmt;    /* format the start values are members of */
} fx_plan;

static void plan_free(fx_plan *pl)
{
    free(pl->gruns);
    free(pl->steps);
    free(pl->tidx);
    free(pl->gsrc);
}

/* Format an operand's value is a member of. */
static nx_fmt opnd_fmt(const fx_plan *pl, int kind, int32_t src, int pfmt)
{
    if (kind == O_SLOT) {
        const nx_op *op = &pl->p->ops[NX_SRC_OP(src)];
        /* the start value: a member of c's format (fp32 c keeps the fmaf path) */
        if (op->kind == NX_OP_START)
            return pl->c_fmt;
        /* +0 (an empty slice, lane or padding) is a member of its format
         * only where the format has a zero: e8m0's leaf(+0) is NaN
         * (docs/numerics.md §7 items 2 and 8), not the identity */
        if (op->kind == NX_OP_ZERO && !nx_format((nx_fmt)op->fmt)->has_zero)
            return NX_FP64;
        return (nx_fmt)op->fmt;
    }
    if (kind == O_VAL)
        return pl->vfmt_a;
    return (nx_fmt)pfmt;
}

static int is_float_fmt(nx_fmt f) { return f != NX_FP64; }

/* Runs the vectorised or fmaf kernels take, over term lists that jump (a
 * contiguous run streams well alone; eight of them side by side would
 * stream 128 rows of memory at once). */
static int groupable(const fx_plan *pl, const fx_step *st)
{
    if (st->kind != S_RUN || st->toff < 0)
        return 0;
    if (st->cls == A_F32 && st->fused)
        return 1;
    return st->cls == A_GEN && pl->fmt[st->fmt].eb_fast < 0x800 && (st->fused || st->yk == O_VAL);
}

/* Independent chains side by side: a sequence ZERO z_1, RUN r_1, ZERO z_2,
 * RUN r_2, ... where r_i starts from z_i's +0 and leaves its result in the
 * same slot (stride lanes) becomes the ZEROs and one S_GROUP
 * step that advances all its runs together, term j of every run before
 * term j + 1 of any.  Each run keeps its order and reads nothing another
 * writes; the group walks memory in order, as the plain loop does. */
static nx_status group_runs(fx_plan *pl)
{
    size_t ns = pl->nsteps, w = 0, ng = 0;
    fx_step *out = malloc((ns ? ns : 1) * sizeof *out);
    pl->gruns = malloc((ns ? ns : 1) * sizeof *pl->gruns);
    if (!out || !pl->gruns) {
        free(out);
        return NX_ENOMEM;
    }
    for (size_t i = 0; i < ns;) {
        const fx_step *z = &pl->steps[i];
        size_t cnt = 0, j = i;
        while (j + 1 < ns) {
            const fx_step *zz = &pl->steps[j], *rr = &pl->steps[j + 1];
            if (zz->kind != S_ZERO || !groupable(pl, rr) || rr->xk != O_SLOT || rr->x != zz->dst ||
                rr->dst != rr->x)
                break;
            if (cnt > 0) {
                const fx_step *r0 = &pl->steps[i + 1];
                if (rr->cls != r0->cls || rr->fused != r0->fused || rr->yk != r0->yk || rr->fmt != r0->fmt ||
                    rr->mode != r0->mode || rr->pfmt != r0->pfmt || rr->n != r0->n)
                    break;
            }
            cnt++;
            j += 2;
        }
        if (cnt < 2) {
            out[w++] = *z;
            i++;
            continue;
        }
        fx_step g = pl->steps[i + 1];
        g.kind = S_GROUP;
        g.y = (int32_t)ng;
        g.n = (int32_t)cnt;
        g.inter8 = 0;
        if (cnt == 8) { /* the 8 lanes of a stride(8) tree: runs side by side, term by term */
            const fx_step *r0 = &pl->steps[i + 1];
            int ok = r0->toff >= 0;
            int32_t T0 = ok ? pl->tidx[r0->toff] : 0;
            for (size_t r = 0; ok && r < 8; r++) {
                const fx_step *rr = &pl->steps[i + 2 * r + 1];
                ok = rr->toff >= 0 && rr->n == r0->n;
                for (int32_t j = 0; ok && j < rr->n; j++)
                    ok = pl->tidx[rr->toff + j] == T0 + 8 * j + (int32_t)r;
            }
            if (ok && T0 < INT32_MAX)
                g.inter8 = T0 + 1;
        }
        for (size_t k = 0; k < cnt; k++) {
            out[w++] = pl->steps[i + 2 * k];
            pl->gruns[ng++] = pl->steps[i + 2 * k + 1];
        }
        out[w++] = g;
        if ((int)cnt > pl->maxgroup)
            pl->maxgroup = (int)cnt;
        i = j;
    }
    free(pl->steps);
    pl->steps = out;
    pl->nsteps = w;
    return NX_OK;
}

static nx_status plan_build(fx_plan *pl, const nx_program *p, const nx_rows *in, nx_err *err)
{
    memset(pl, 0, sizeof *pl);
    pl->p = p;
    pl->c_fmt = in->c ? in->c_fmt : NX_FP64;
    for (int f = 0; f < NX_NFORMATS; f++)
        fx_fmt_init(&pl->fmt[f], (nx_fmt)f);
    pl->dot = p->dot;
    /* values stay members of their storage format through an fp64 `in` */
    pl->in_round = p->in >= 0 && p->in != NX_FP64;
    pl->narrow_a = pl->in_round || in->a_fmt != NX_FP64;
    int narrow_b = !p->dot || pl->in_round || in->b_fmt != NX_FP64;
    pl->prod_exact = pl->narrow_a && narrow_b;
    pl->vfmt_a = pl->in_round ? (nx_fmt)p->in : in->a_fmt;
    /* §5 step 2: a subnormal operand counts at the emin of the `in` format
     * when the point has one (fp64 included), else of its tensor's */
    pl->ofmt_a = p->in >= 0 ? (nx_fmt)p->in : in->a_fmt;
    pl->ofmt_b = p->in >= 0 ? (nx_fmt)p->in : (p->dot ? in->b_fmt : in->a_fmt);
    pl->align_ops = p->dot && p->atom_align == NX_ALIGN_OPERANDS;

    size_t nops = p->nops;
    int32_t *uses = calloc(nops ? nops : 1, sizeof *uses);
    int32_t *last = malloc((nops ? nops : 1) * sizeof *last);   /* last consuming step */
    int32_t *slot = malloc((nops ? nops : 1) * sizeof *slot);
    pl->steps = malloc((nops ? nops : 1) * sizeof *pl->steps);
    pl->tidx = malloc((nops ? nops : 1) * sizeof *pl->tidx);
    pl->gsrc = malloc((p->ngsrc ? p->ngsrc : 1) * sizeof *pl->gsrc);
    int32_t *freel = malloc((nops + 1) * sizeof *freel);
    if (!uses || !last || !slot || !pl->steps || !pl->tidx || !pl->gsrc || !freel) {
        free(uses);
        free(last);
        free(slot);
        free(freel);
        plan_free(pl);
        return nx_err_set(err, NX_ENOMEM, "out of memory planning the fast engine");
    }
    for (size_t i = 0; i < nops; i++) {
        const nx_op *op = &p->ops[i];
        if (op->kind == NX_OP_ZERO || op->kind == NX_OP_START)
            continue;
        if (!NX_SRC_IS_TERM(op->x))
            uses[NX_SRC_OP(op->x)]++;
        if (op->kind == NX_OP_ADD && !NX_SRC_IS_TERM(op->y))
            uses[NX_SRC_OP(op->y)]++;
        if (op->kind == NX_OP_ATOM) {
            for (int32_t g = 0; g < op->gn; g++)
                if (!NX_SRC_IS_TERM(p->gsrc[op->y + g]))
                    uses[NX_SRC_OP(p->gsrc[op->y + g])]++;
            if (op->gn > pl->maxg)
                pl->maxg = op->gn;
        }
    }
    uses[NX_SRC_OP(p->result)]++;

    /* Steps. */
    size_t ns = 0;
    for (size_t i = 0; i < nops; i++) {
        const nx_op *op = &p->ops[i];
        fx_step st;
        memset(&st, 0, sizeof st);
        st.mode = op->mode;
        st.fmt = op->fmt;
        st.pfmt = op->pfmt;
        st.op = (int32_t)i;
        st.toff = -1;
        nx_fmt f = (nx_fmt)op->fmt;
        int rne = op->mode == NX_RNE;
        switch (op->kind) {
        case NX_OP_ZERO:
            st.kind = S_ZERO;
            break;
        case NX_OP_START:
            st.kind = S_START;
            break;
        case NX_OP_LEAF: {
            st.kind = S_LEAF;
            st.xk = NX_SRC_IS_TERM(op->x) ? (p->dot ? O_PROD : O_VAL) : O_SLOT;
            st.x = op->x;
            nx_fmt vf = opnd_fmt(pl, st.xk, op->x, op->pfmt);
            st.cls = (st.xk != O_PROD && (vf == f || f == NX_FP64)) ? A_ID : A_GEN;
            break;
        }
        case NX_OP_ADD: {
            st.xk = NX_SRC_IS_TERM(op->x) ? (p->dot ? O_PROD : O_VAL) : O_SLOT;
            st.x = op->x;
            st.y = op->y;
            if (op->fma) {
                st.kind = S_FMA;
                st.yk = O_PROD;
                int cf = is_float_fmt(opnd_fmt(pl, st.xk, op->x, op->pfmt));
                st.cls = f == NX_FP64 && rne ? A_F64
                       : f == NX_FP32 && rne && pl->prod_exact && cf && st.xk == O_SLOT ? A_F32
                                                                                        : A_GEN;
            } else {
                st.kind = S_ADD;
                st.yk = NX_SRC_IS_TERM(op->y) ? (p->dot ? O_PROD : O_VAL) : O_SLOT;
                int xf = is_float_fmt(opnd_fmt(pl, st.xk, op->x, op->pfmt));
                int yf = is_float_fmt(opnd_fmt(pl, st.yk, op->y, op->pfmt));
                if (st.xk == O_VAL && !pl->narrow_a)
                    xf = 0;
                if (st.yk == O_VAL && !pl->narrow_a)
                    yf = 0;
                st.cls = f == NX_FP64 && rne ? A_F64 : f == NX_FP32 && rne && xf && yf ? A_F32 : A_GEN;
            }
            /* A run: this op continues the previous op's chain. */
            if (ns > 0 && NX_SRC_IS_TERM(op->y) && st.xk == O_SLOT && NX_SRC_OP(op->x) == (int32_t)i - 1 &&
                uses[i - 1] == 1) {
                fx_step *pv = &pl->steps[ns - 1];
                int same = pv->fmt == st.fmt && pv->mode == st.mode && pv->pfmt == st.pfmt;
                int runnable = st.kind == S_ADD || pl->prod_exact || st.cls == A_F64;
                if (pv->kind == S_RUN && pv->op == (int32_t)i - 1 && same && pv->cls == st.cls &&
                    pv->fused == (st.kind == S_FMA) && pv->yk == st.yk) {
                    /* extend the run */
                    pl->tidx[pv->toff + pv->n] = op->y;
                    pv->n++;
                    pl->ntidx++;
                    pv->op = (int32_t)i;
                    continue;
                }
                if ((pv->kind == S_ADD || pv->kind == S_FMA) && pv->op == (int32_t)i - 1 && same &&
                    pv->cls == st.cls && pv->kind == st.kind && pv->yk == st.yk && runnable &&
                    NX_SRC_IS_TERM(pv->y) && pv->xk == O_SLOT) {
                    /* turn the previous step into a run of two */
                    pv->fused = pv->kind == S_FMA;
                    pv->kind = S_RUN;
                    pv->toff = (int32_t)pl->ntidx;
                    pl->tidx[pl->ntidx++] = pv->y;
                    pl->tidx[pl->ntidx++] = op->y;
                    pv->n = 2;
                    pv->op = (int32_t)i;
                    continue;
                }
            }
            break;
        }
        default: /* NX_OP_ATOM */
            st.kind = S_ATOM;
            st.xk = NX_SRC_IS_TERM(op->x) ? (p->dot ? O_PROD : O_VAL) : O_SLOT;
            st.x = op->x;
            st.y = op->y;
            st.n = op->gn;
            break;
        }
        pl->steps[ns++] = st;
    }
    pl->nsteps = ns;

    /* Slots: an op's result lives from its step to its last consumer's. */
    for (size_t i = 0; i < nops; i++)
        last[i] = -1;
    for (size_t k = 0; k < ns; k++) {
        fx_step *st = &pl->steps[k];
        const nx_op *op0;
        if (st->kind == S_RUN) {
            /* the run reads its start value: the x of its first op */
            int32_t first = st->op - st->n + 1;
            op0 = &p->ops[first];
            last[NX_SRC_OP(op0->x)] = (int32_t)k;
            continue;
        }
        const nx_op *op = &p->ops[st->op];
        if (op->kind == NX_OP_ZERO || op->kind == NX_OP_START)
            continue;
        if (!NX_SRC_IS_TERM(op->x))
            last[NX_SRC_OP(op->x)] = (int32_t)k;
        if (op->kind == NX_OP_ADD && !NX_SRC_IS_TERM(op->y))
            last[NX_SRC_OP(op->y)] = (int32_t)k;
        if (op->kind == NX_OP_ATOM)
            for (int32_t g = 0; g < op->gn; g++)
                if (!NX_SRC_IS_TERM(p->gsrc[op->y + g]))
                    last[NX_SRC_OP(p->gsrc[op->y + g])] = (int32_t)k;
    }
    last[NX_SRC_OP(p->result)] = (int32_t)ns; /* read after the last step */
    int nfree = 0, nslots = 0;
    /* Per step: free the slots whose last reader is this step, then allocate
     * the result's slot (a step reads all its operands before it writes). */
    int32_t *dying = malloc((ns + 1) * sizeof *dying); /* head of a list per step */
    int32_t *next = malloc((nops ? nops : 1) * sizeof *next);
    if (!dying || !next) {
        free(dying);
        free(next);
        free(uses);
        free(last);
        free(slot);
        free(freel);
        plan_free(pl);
        return nx_err_set(err, NX_ENOMEM, "out of memory planning the fast engine");
    }
    for (size_t k = 0; k <= ns; k++)
        dying[k] = -1;
    for (size_t i = 0; i < nops; i++)
        if (last[i] >= 0) {
            next[i] = dying[last[i]];
            dying[last[i]] = (int32_t)i;
        }
    for (size_t k = 0; k < ns; k++) {
        fx_step *st = &pl->steps[k];
        for (int32_t i = dying[k]; i >= 0; i = next[i])
            freel[nfree++] = slot[i];
        int32_t s = nfree ? freel[--nfree] : nslots++;
        slot[st->op] = s;
        st->dst = s;
    }
    /* Operands to slots. */
    for (size_t k = 0; k < ns; k++) {
        fx_step *st = &pl->steps[k];
        const nx_op *op = &p->ops[st->kind == S_RUN ? st->op - st->n + 1 : st->op];
        if (st->kind == S_ZERO || st->kind == S_START)
            continue; /* no operands */
        if (st->xk == O_SLOT)
            st->x = slot[NX_SRC_OP(op->x)];
        if (st->kind == S_ADD && st->yk == O_SLOT)
            st->y = slot[NX_SRC_OP(op->y)];
        if (st->kind == S_ATOM) {
            st->y = op->y;
            for (int32_t g = 0; g < op->gn; g++) {
                int32_t s = p->gsrc[op->y + g];
                pl->gsrc[op->y + g] = NX_SRC_IS_TERM(s) ? s : -slot[NX_SRC_OP(s)] - 1;
            }
        }
        if (st->kind == S_RUN) {
            /* contiguous term lists need no index loads */
            int contig = 1;
            for (int32_t j = 1; j < st->n && contig; j++)
                contig = pl->tidx[st->toff + j] == pl->tidx[st->toff] + j;
            st->y = pl->tidx[st->toff];
            if (contig)
                st->toff = -1;
        }
    }
    pl->result_slot = slot[NX_SRC_OP(p->result)];
    pl->nslots = nslots ? nslots : 1;
    /* (maxg + 1) cut addends of at most 2^(F+2) units each (a product's
     * significand lies in [1, 4) against its operands' exponent sum) must
     * stay below 2^62 in an int64 */
    int F = p->atom_frac_bits, lgn = 0;
    while ((1ll << lgn) < (long long)pl->maxg + 1)
        lgn++;
    pl->atom_fixed = F >= 0 && F + 2 + lgn <= 60;
    /* atoms the vectorised kernel takes: fused = 1 */
    for (size_t k = 0; k < ns; k++) {
        fx_step *st = &pl->steps[k];
        if (st->kind != S_ATOM || !pl->atom_fixed || F > 50 || st->xk != O_SLOT ||
            !(p->dot ? pl->prod_exact : pl->narrow_a))
            continue;
        int ok = 1;
        for (int32_t g = 0; g < st->n && ok; g++)
            ok = pl->gsrc[st->y + g] == pl->gsrc[st->y] + g && pl->gsrc[st->y] >= 0;
        st->fused = (uint8_t)ok;
    }
    free(dying);
    free(next);
    free(uses);
    free(last);
    free(slot);
    free(freel);
    if (group_runs(pl) != NX_OK) {
        plan_free(pl);
        return nx_err_set(err, NX_ENOMEM, "out of memory planning the fast engine");
    }
    return NX_OK;
}

/* ---------------------------------------------------------------------- */
/* Evaluation of a block of rows. */

typedef struct fx_blk {
    const double *A[FX_B], *Bv[FX_B]; /* row k's inputs (after `in` rounding) */
    int nb;
    double *vals;                     /* slot s, row k: vals[s * FX_B + k] */
    int bail[FX_B];                   /* row k must be redone by MPFR */
    double cv[FX_B];                  /* row k's start value (programs with start) */
    double *ahi, *alo;                /* atom addends: (ahi + alo)·2^asc */
    int *asc;
    double *gacc;                     /* a group's accumulators: run r, row k at r * FX_B + k */
    nx_xacc *xacc;
    int avx2;                         /* the AVX2+FMA clone runs: run_fmaf8_avx2 may be called */
} fx_blk;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FX_AVX2_RUN 1
/* Doubles off .. off + 3 of the 8 rows P[0 .. 7], converted to float and
 * transposed (two 4 x 4): o[i] holds element off + i of rows 0-7. */
__attribute__((target("avx2,fma"))) static inline void tr8x4_avx2(const double *const *P, size_t off, __m256 *o)
{
    __m128 r0 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[0] + off)), r1 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[1] + off));
    __m128 r2 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[2] + off)), r3 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[3] + off));
    __m128 r4 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[4] + off)), r5 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[5] + off));
    __m128 r6 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[6] + off)), r7 = _mm256_cvtpd_ps(_mm256_loadu_pd(P[7] + off));
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _MM_TRANSPOSE4_PS(r4, r5, r6, r7);
    o[0] = _mm256_set_m128(r4, r0);
    o[1] = _mm256_set_m128(r5, r1);
    o[2] = _mm256_set_m128(r6, r2);
    o[3] = _mm256_set_m128(r7, r3);
}

/* A fused fp32 run (RUN_LOOP with ST_FMAF) of a whole block, FX_B = 8 rows,
 * over the contiguous terms t0 .. t0 + n - 1: lane k of one register is
 * row k's accumulator.  Four terms of each row are loaded as consecutive
 * doubles, converted to float (exact: the operands are float members, as
 * ST_FMAF assumes) and transposed, so that one fused multiply-add advances
 * the 8 rows by one term, in the run's order; the same operations as the
 * scalar loop, lane by lane, without its 16 scalar loads per term.  x: the
 * accumulators' slot (8 doubles), dst: the result slot. */
__attribute__((target("avx2,fma"))) static void run_fmaf8_avx2(const double *const *A, const double *const *Bv,
                                                                int32_t t0, int32_t n, const double *x, double *dst)
{
    __m256 acc = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(x + 4)), _mm256_cvtpd_ps(_mm256_loadu_pd(x)));
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
        __m256 u[4], v[4]; /* u[i], v[i]: term t0 + j + i of rows 0-7 */
        tr8x4_avx2(A, (size_t)(t0 + j), u);
        tr8x4_avx2(Bv, (size_t)(t0 + j), v);
        acc = _mm256_fmadd_ps(u[0], v[0], acc); /* written out: -O2 keeps a loop here in memory */
        acc = _mm256_fmadd_ps(u[1], v[1], acc);
        acc = _mm256_fmadd_ps(u[2], v[2], acc);
        acc = _mm256_fmadd_ps(u[3], v[3], acc);
    }
    float s[8];
    _mm256_storeu_ps(s, acc);
    for (; j < n; j++)
        for (int k = 0; k < 8; k++)
            s[k] = fmaf((float)A[k][t0 + j], (float)Bv[k][t0 + j], s[k]);
    for (int k = 0; k < 8; k++)
        dst[k] = (double)s[k];
}

/* The 8 lanes of a stride(8) tree over a full block: term j of lane r is
 * T0 + 8j + r, so the 8 doubles of a row at T0 + 8j are term j of every
 * lane.  Converted and transposed (two 4 x 4 per half), they give lane r's
 * operands across the 8 rows in one register: 8 independent chains, one
 * vfmadd231ps each per step, each lane and row in its order.  acc: lane r,
 * row k at acc[r * 8 + k], read and written. */
__attribute__((target("avx2,fma"))) static void group_fmaf8_avx2(const double *const *A, const double *const *Bv,
                                                                  int32_t T0, int32_t n, double *acc)
{
    /* written out, lanes 0-3 then 4-7: 8 accumulators and 8 operands fill
     * the 16 registers; as loops over arrays, -O2 kept them in memory */
#define FX_LD(r) _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(acc + (r) * 8 + 4)), \
                                 _mm256_cvtpd_ps(_mm256_loadu_pd(acc + (r) * 8)))
    __m256 s0 = FX_LD(0), s1 = FX_LD(1), s2 = FX_LD(2), s3 = FX_LD(3), s4 = FX_LD(4), s5 = FX_LD(5),
           s6 = FX_LD(6), s7 = FX_LD(7);
#undef FX_LD
    for (int32_t j = 0; j < n; j++) {
        const size_t t = (size_t)(T0 + 8 * j);
        __m256 x[4], y[4]; /* x[r], y[r]: lane r's (then lane 4 + r's) operands of rows 0-7 */
        tr8x4_avx2(A, t, x);
        tr8x4_avx2(Bv, t, y);
        s0 = _mm256_fmadd_ps(x[0], y[0], s0);
        s1 = _mm256_fmadd_ps(x[1], y[1], s1);
        s2 = _mm256_fmadd_ps(x[2], y[2], s2);
        s3 = _mm256_fmadd_ps(x[3], y[3], s3);
        tr8x4_avx2(A, t + 4, x);
        tr8x4_avx2(Bv, t + 4, y);
        s4 = _mm256_fmadd_ps(x[0], y[0], s4);
        s5 = _mm256_fmadd_ps(x[1], y[1], s5);
        s6 = _mm256_fmadd_ps(x[2], y[2], s6);
        s7 = _mm256_fmadd_ps(x[3], y[3], s7);
    }
    const __m256 s[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
    for (int r = 0; r < 8; r++) {
        float v[8];
        _mm256_storeu_ps(v, s[r]);
        for (int k = 0; k < 8; k++)
            acc[r * 8 + k] = (double)v[k];
    }
}
#endif

/* value(t) of an operand for row k (products rounded to pfmt in mode m). */
static inline double opnd(const fx_plan *pl, fx_blk *b, int kind, int32_t v, int k, int pfmt,
                          nx_mode m)
{
    if (kind == O_SLOT)
        return b->vals[(size_t)v * FX_B + (size_t)k];
    if (kind == O_VAL)
        return b->A[k][v];
    return gmul(b->A[k][v], b->Bv[k][v], &pl->fmt[pfmt], m, pl->prod_exact, b->xacc);
}

static inline double do_add(const fx_plan *pl, int cls, double x, double y, const fx_fmt *F,
                            nx_mode m)
{
    (void)pl;
    switch (cls) {
    case A_F32: return (double)((float)x + (float)y);
    case A_F64: return x + y;
    default: return gadd(x, y, F, m);
    }
}

static inline double do_fma(const fx_plan *pl, int cls, double a, double b, double c,
                            const fx_fmt *F, nx_mode m, nx_xacc *x)
{
    switch (cls) {
    case A_F32: return (double)fmaf((float)a, (float)b, (float)c);
    case A_F64: return fma(a, b, c);
    default:
        if (pl->prod_exact)
            return gadd(a * b, c, F, m);
        return gfma3(a, b, c, F, m, x);
    }
}

/* A term list that jumps (stride trees) defeats the hardware prefetcher:
 * fetch the lines a few steps ahead for every row of the block. */
static inline void prefetch_rows(const fx_blk *b, int32_t t)
{
    for (int k = 0; k < FX_B; k++) {
        __builtin_prefetch(b->A[k] + t);
        __builtin_prefetch(b->Bv[k] + t);
    }
}

/* A run of `n` chain steps over row k's terms, for every row of the block.
 * STEP(s, t) is one step; the accumulator stays in registers. */
#define RUN_LOOP(TYPE, LOAD, STORE, STEP)                                                         \
    do {                                                                                           \
        TYPE s_[FX_B];                                                                             \
        for (int k = 0; k < FX_B; k++)                                                             \
            s_[k] = (TYPE)(k < nb ? LOAD(k) : 0);                                                  \
        if (nb == FX_B) {                                                                          \
            for (int32_t j = 0; j < n; j++) {                                                      \
                int32_t t = idx ? idx[j] : t0 + j;                                                 \
                if (idx && (j & 7) == 0 && j + 16 < n)                                             \
                    prefetch_rows(b, idx[j + 16]);                                                 \
                for (int k = 0; k < FX_B; k++)                                                     \
                    s_[k] = STEP(s_[k], t, k);                                                     \
            }                                                                                      \
        } else {                                                                                   \
            for (int32_t j = 0; j < n; j++) {                                                      \
                int32_t t = idx ? idx[j] : t0 + j;                                                 \
                for (int k = 0; k < nb; k++)                                                       \
                    s_[k] = STEP(s_[k], t, k);                                                     \
            }                                                                                      \
        }                                                                                          \
        for (int k = 0; k < nb; k++)                                                               \
            STORE(k, s_[k]);                                                                       \
    } while (0)

#define LOAD_X(k) vals[(size_t)st->x * FX_B + (size_t)(k)]
#define STORE_D(k, v) vals[(size_t)st->dst * FX_B + (size_t)(k)] = (double)(v)
#define ST_FMAF(s, t, k) fmaf((float)A[k][t], (float)Bv[k][t], (s))
#define ST_FMA64(s, t, k) fma(A[k][t], Bv[k][t], (s))
#define ST_ADDF_VAL(s, t, k) ((s) + (float)A[k][t])
#define ST_ADD64_VAL(s, t, k) ((s) + A[k][t])
#define ST_ADD64_PROD(s, t, k) ((s) + A[k][t] * Bv[k][t])
/* prod_exact: a·b is exact in binary64, so (float)(a·b) is its one rne
 * rounding to fp32 (IEEE conversion: gradual underflow, overflow to inf) */
#define ST_ADDF_PROD(s, t, k) ((s) + (float)(A[k][t] * Bv[k][t]))
#define ST_GFMA(s, t, k) gadd(A[k][t] * Bv[k][t], (s), F, MODE)
#define ST_GADD_VAL(s, t, k) gadd((s), A[k][t], F, MODE)

/* ---------------------------------------------------------------------- */
/* Vectorised across the block's rows: lanes are rows, so each row keeps its
 * own order (GCC vector extensions; AVX2 in the FMA clone). */

typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

/* Every function taking or returning a vector is always inlined, so vectors
 * never cross a call between the generic and the AVX2 clone (an ABI
 * mismatch, even at -O0). */
#pragma GCC diagnostic ignored "-Wpsabi"

static inline __attribute__((always_inline)) v4d v4d_load(const double *p)
{
    v4d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) v4l v4_bits(v4d x)
{
    v4l u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline __attribute__((always_inline)) v4d v4_dbl(v4l u)
{
    v4d x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline __attribute__((always_inline)) v4l v4l_splat(int64_t x) { return (v4l){x, x, x, x}; }

/* p[0..3] hold 4 consecutive terms of 4 rows; afterwards p[j] holds term j
 * of the 4 rows. */
/* __builtin_shufflevector is GCC >= 12 and clang; older GCC has
 * __builtin_shuffle with an index vector. */
#if defined(__clang__) || __GNUC__ >= 12
#define SHUF2(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define SHUF2(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4l){i, j, k, l})
#endif

static inline __attribute__((always_inline)) void transpose4(v4d *p)
{
    v4d t0 = SHUF2(p[0], p[1], 0, 4, 2, 6);
    v4d t1 = SHUF2(p[0], p[1], 1, 5, 3, 7);
    v4d t2 = SHUF2(p[2], p[3], 0, 4, 2, 6);
    v4d t3 = SHUF2(p[2], p[3], 1, 5, 3, 7);
    p[0] = SHUF2(t0, t2, 0, 1, 4, 5);
    p[1] = SHUF2(t1, t3, 0, 1, 4, 5);
    p[2] = SHUF2(t0, t2, 2, 3, 6, 7);
    p[3] = SHUF2(t1, t3, 2, 3, 6, 7);
}

typedef uint64_t v4u __attribute__((vector_size(32)));

/* A format's constants as vectors, built once per run. */
typedef struct vconst {
    v4l absm, mask, notmask, half, ebf, inf, maxb, one;
    int sh;
} vconst;

static inline __attribute__((always_inline)) void vconst_init(vconst *C, const fx_fmt *F)
{
    C->absm = v4l_splat((int64_t)ABSM);
    C->mask = v4l_splat((int64_t)F->mask);
    C->notmask = ~C->mask;
    C->half = v4l_splat((int64_t)F->half);
    C->ebf = v4l_splat((int64_t)F->eb_fast);
    C->inf = v4l_splat(0x7ff);
    C->maxb = v4l_splat((int64_t)F->rf.maxbits);
    C->one = v4l_splat(1);
    C->sh = __builtin_ctzll(F->half) + 1;
}

/* gadd on 4 lanes.  TwoSum's error e tells which lanes are exact; the
 * mask rounding is the answer wherever r's dropped bits decide (inexact r
 * with dropped bits neither 0 nor half, or exact r: rne's formula with the
 * last kept bit rounds ties to even and is plain rounding elsewhere).
 * *fail marks the other lanes (and those near underflow or overflow): the
 * caller redoes them with the scalar gadd. */
static inline __attribute__((always_inline)) v4d vgadd(v4d s, v4d q, const vconst *C, nx_mode M, v4l *fail)
{
    v4d r = s + q;
    v4d bb = r - s;
    v4d e = (s - (r - bb)) + (q - bb);
    v4l u = v4_bits(r), a = u & C->absm;
    v4l eb = (v4l)((v4u)a >> 52), low = a & C->mask;
    v4l zero = C->one - C->one;
    v4l f = (eb < C->ebf) | (eb >= C->inf) | (((low == zero) | (low == C->half)) & (e != 0));
    /* unsigned: a lane of infinity or NaN (failed above, its result
     * unused) would overflow a signed addition */
    v4u au = (v4u)a, ru;
    switch (M) {
    case NX_RNE: ru = au + (v4u)C->half - (v4u)C->one + ((au >> C->sh) & (v4u)C->one); break;
    case NX_RNA: ru = au + (v4u)C->half; break;
    case NX_RZ: ru = au; break;
    case NX_RU: ru = au + (v4u)(C->mask & ~(u < zero)); break;
    default: ru = au + (v4u)(C->mask & (u < zero)); break;
    }
    v4l ra = (v4l)ru & C->notmask;
    *fail = f | (ra > C->maxb);
    return v4_dbl(ra | (u & ~C->absm));
}

static inline __attribute__((always_inline)) int v4_any(v4l f)
{
    v4l g = f | SHUF2(f, f, 2, 3, 0, 1);
    g |= SHUF2(g, g, 1, 0, 3, 2);
    return g[0] != 0;
}

/* Four generic chain steps of one run for the block's 8 rows (two vectors
 * of 4 lanes): terms t..t+3 (ix NULL) or ix[0..3]. */
static inline __attribute__((always_inline)) void gen4(const double *const *A, const double *const *Bv, int dot,
                                                      const int32_t *ix, int32_t t, v4d *ps0, v4d *ps1,
                                                      const vconst *C, const fx_fmt *F, nx_mode M)
{
    v4d q0[4], q1[4], s0 = *ps0, s1 = *ps1;
    if (ix)
        t = ix[0];
    if (!ix || (ix[1] == t + 1 && ix[2] == t + 2 && ix[3] == t + 3)) {
        for (int k = 0; k < 4; k++) {
            q0[k] = v4d_load(A[k] + t);
            q1[k] = v4d_load(A[k + 4] + t);
            if (dot) {
                q0[k] *= v4d_load(Bv[k] + t);
                q1[k] *= v4d_load(Bv[k + 4] + t);
            }
        }
        transpose4(q0);
        transpose4(q1);
    } else {
        for (int jj = 0; jj < 4; jj++) {
            int32_t tt = ix[jj];
            for (int k = 0; k < 4; k++) {
                q0[jj][k] = dot ? A[k][tt] * Bv[k][tt] : A[k][tt];
                q1[jj][k] = dot ? A[k + 4][tt] * Bv[k + 4][tt] : A[k + 4][tt];
            }
        }
    }
    for (int jj = 0; jj < 4; jj++) {
        v4l f0, f1;
        v4d r0 = vgadd(s0, q0[jj], C, M, &f0), r1 = vgadd(s1, q1[jj], C, M, &f1);
        if (__builtin_expect(v4_any(f0 | f1), 0)) {
            for (int l = 0; l < 4; l++) {
                if (f0[l])
                    r0[l] = gadd(s0[l], q0[jj][l], F, M);
                if (f1[l])
                    r1[l] = gadd(s1[l], q1[jj][l], F, M);
            }
        }
        s0 = r0;
        s1 = r1;
    }
    *ps0 = s0;
    *ps1 = s1;
}

/* One generic chain step for the 8 rows, scalar. */
static inline __attribute__((always_inline)) void gen1(const double *const *A, const double *const *Bv, int dot,
                                                      int32_t t, v4d *s0, v4d *s1, const fx_fmt *F, nx_mode M)
{
    for (int k = 0; k < 4; k++) {
        (*s0)[k] = gadd((*s0)[k], dot ? A[k][t] * Bv[k][t] : A[k][t], F, M);
        (*s1)[k] = gadd((*s1)[k], dot ? A[k + 4][t] * Bv[k + 4][t] : A[k + 4][t], F, M);
    }
}

/* A run of generic chain steps (gadd of an exact product or of a value),
 * all 8 rows at once, 4 terms at a time. */
static inline __attribute__((always_inline)) void run_gen_vec_m(const fx_plan *pl, fx_blk *b, const fx_step *st,
                                                               nx_mode M)
{
    const fx_fmt *F = &pl->fmt[st->fmt];
    vconst C;
    vconst_init(&C, F);
    const int32_t n = st->n, t0 = st->y;
    const int32_t *idx = st->toff >= 0 ? pl->tidx + st->toff : NULL;
    const int dot = st->fused;
    double *vals = b->vals;
    const double *A[FX_B], *Bv[FX_B];
    for (int k = 0; k < FX_B; k++) {
        A[k] = b->A[k];
        Bv[k] = b->Bv[k];
    }
    v4d s0 = v4d_load(vals + (size_t)st->x * FX_B), s1 = v4d_load(vals + (size_t)st->x * FX_B + 4);
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
        if (idx && (j & 7) == 0 && j + 16 < n)
            prefetch_rows(b, idx[j + 16]);
        gen4(A, Bv, dot, idx ? idx + j : NULL, t0 + j, &s0, &s1, &C, F, M);
    }
    for (; j < n; j++)
        gen1(A, Bv, dot, idx ? idx[j] : t0 + j, &s0, &s1, F, M);
    for (int k = 0; k < b->nb; k++)
        vals[(size_t)st->dst * FX_B + (size_t)k] = k < 4 ? s0[k] : s1[k - 4];
}

/* A group of generic runs (group_runs), advanced together 4 terms at a
 * time; each run's accumulators live in b->gacc between its chunks. */
static inline __attribute__((always_inline)) void group_gen_m(const fx_plan *pl, fx_blk *b, const fx_step *g,
                                                             nx_mode M)
{
    const fx_step *runs = pl->gruns + g->y;
    const int R = g->n;
    const fx_fmt *F = &pl->fmt[g->fmt];
    vconst C;
    vconst_init(&C, F);
    const int32_t n = runs[0].n;
    const int dot = g->fused;
    double *acc = b->gacc;
    const double *A[FX_B], *Bv[FX_B];
    for (int k = 0; k < FX_B; k++) {
        A[k] = b->A[k];
        Bv[k] = b->Bv[k];
    }
    for (int r = 0; r < R; r++)
        memcpy(acc + (size_t)r * FX_B, b->vals + (size_t)runs[r].x * FX_B, FX_B * sizeof *acc);
    int32_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int r = 0; r < R; r++) {
            const int32_t *idx = runs[r].toff >= 0 ? pl->tidx + runs[r].toff : NULL;
            v4d s0 = v4d_load(acc + (size_t)r * FX_B), s1 = v4d_load(acc + (size_t)r * FX_B + 4);
            gen4(A, Bv, dot, idx ? idx + j : NULL, runs[r].y + j, &s0, &s1, &C, F, M);
            memcpy(acc + (size_t)r * FX_B, &s0, sizeof s0);
            memcpy(acc + (size_t)r * FX_B + 4, &s1, sizeof s1);
        }
    for (; j < n; j++)
        for (int r = 0; r < R; r++) {
            const int32_t *idx = runs[r].toff >= 0 ? pl->tidx + runs[r].toff : NULL;
            v4d s0 = v4d_load(acc + (size_t)r * FX_B), s1 = v4d_load(acc + (size_t)r * FX_B + 4);
            gen1(A, Bv, dot, idx ? idx[j] : runs[r].y + j, &s0, &s1, F, M);
            memcpy(acc + (size_t)r * FX_B, &s0, sizeof s0);
            memcpy(acc + (size_t)r * FX_B + 4, &s1, sizeof s1);
        }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < b->nb; k++)
            b->vals[(size_t)runs[r].dst * FX_B + (size_t)k] = acc[(size_t)r * FX_B + (size_t)k];
}

/* A group of fp32 rne fmaf runs, 8 terms of each run at a time. */
static inline __attribute__((always_inline)) void group_fmaf(const fx_plan *pl, fx_blk *b, const fx_step *g)
{
    const fx_step *runs = pl->gruns + g->y;
    const int R = g->n;
    const int32_t n = runs[0].n;
    double *acc = b->gacc;
    const double *A[FX_B], *Bv[FX_B];
    for (int k = 0; k < FX_B; k++) {
        A[k] = b->A[k];
        Bv[k] = b->Bv[k];
    }
    for (int r = 0; r < R; r++)
        memcpy(acc + (size_t)r * FX_B, b->vals + (size_t)runs[r].x * FX_B, FX_B * sizeof *acc);
#ifdef FX_AVX2_RUN
    if (g->inter8 && b->avx2 && b->nb == FX_B) {
        group_fmaf8_avx2(A, Bv, g->inter8 - 1, n, acc);
        for (int r = 0; r < R; r++)
            memcpy(b->vals + (size_t)runs[r].dst * FX_B, acc + (size_t)r * FX_B, FX_B * sizeof *acc);
        return;
    }
#endif
    for (int32_t j0 = 0; j0 < n; j0 += 8) {
        int32_t jn = n - j0 < 8 ? n - j0 : 8;
        for (int r = 0; r < R; r++) {
            const int32_t *idx = runs[r].toff >= 0 ? pl->tidx + runs[r].toff + j0 : NULL;
            int32_t t0 = runs[r].y + j0;
            float s[FX_B];
            for (int k = 0; k < FX_B; k++)
                s[k] = (float)acc[(size_t)r * FX_B + (size_t)k];
            for (int32_t jj = 0; jj < jn; jj++) {
                int32_t t = idx ? idx[jj] : t0 + jj;
                for (int k = 0; k < FX_B; k++)
                    s[k] = fmaf((float)A[k][t], (float)Bv[k][t], s[k]);
            }
            for (int k = 0; k < FX_B; k++)
                acc[(size_t)r * FX_B + (size_t)k] = s[k];
        }
    }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < b->nb; k++)
            b->vals[(size_t)runs[r].dst * FX_B + (size_t)k] = acc[(size_t)r * FX_B + (size_t)k];
}

static inline __attribute__((always_inline)) void group_step(const fx_plan *pl, fx_blk *b, const fx_step *g)
{
    if (g->cls == A_F32) {
        group_fmaf(pl, b, g);
        return;
    }
    switch ((nx_mode)g->mode) {
    case NX_RNE: group_gen_m(pl, b, g, NX_RNE); break;
    case NX_RNA: group_gen_m(pl, b, g, NX_RNA); break;
    case NX_RZ: group_gen_m(pl, b, g, NX_RZ); break;
    case NX_RU: group_gen_m(pl, b, g, NX_RU); break;
    default: group_gen_m(pl, b, g, NX_RD); break;
    }
}

static inline __attribute__((always_inline)) void run_gen_vec(const fx_plan *pl, fx_blk *b, const fx_step *st)
{
    switch ((nx_mode)st->mode) {
    case NX_RNE: run_gen_vec_m(pl, b, st, NX_RNE); break;
    case NX_RNA: run_gen_vec_m(pl, b, st, NX_RNA); break;
    case NX_RZ: run_gen_vec_m(pl, b, st, NX_RZ); break;
    case NX_RU: run_gen_vec_m(pl, b, st, NX_RU); break;
    default: run_gen_vec_m(pl, b, st, NX_RD); break;
    }
}

static inline __attribute__((always_inline)) void run_step(const fx_plan *pl, fx_blk *b,
                                                          const fx_step *st)
{
    const int nb = b->nb;
    const int32_t n = st->n, t0 = st->y;
    const int32_t *idx = st->toff >= 0 ? pl->tidx + st->toff : NULL;
    const double *const *A = b->A;
    const double *const *Bv = b->Bv;
    double *vals = b->vals;
    const fx_fmt *F = &pl->fmt[st->fmt];
    nx_mode m = (nx_mode)st->mode;
    if (st->fused) {
        if (st->cls == A_F32) {
#ifdef FX_AVX2_RUN
            if (b->avx2 && !idx && nb == FX_B) {
                run_fmaf8_avx2(A, Bv, t0, n, vals + (size_t)st->x * FX_B, vals + (size_t)st->dst * FX_B);
                return;
            }
#endif
            RUN_LOOP(float, LOAD_X, STORE_D, ST_FMAF);
            return;
        }
        if (st->cls == A_F64) {
            RUN_LOOP(double, LOAD_X, STORE_D, ST_FMA64);
            return;
        }
        /* prod_exact: a fused step is round(a·b + s) with a·b exact */
        if (F->eb_fast < 0x800) {
            run_gen_vec(pl, b, st);
            return;
        }
        switch (m) {
#define MODE NX_RNE
        case NX_RNE: RUN_LOOP(double, LOAD_X, STORE_D, ST_GFMA); return;
#undef MODE
#define MODE NX_RNA
        case NX_RNA: RUN_LOOP(double, LOAD_X, STORE_D, ST_GFMA); return;
#undef MODE
#define MODE NX_RZ
        case NX_RZ: RUN_LOOP(double, LOAD_X, STORE_D, ST_GFMA); return;
#undef MODE
#define MODE NX_RU
        case NX_RU: RUN_LOOP(double, LOAD_X, STORE_D, ST_GFMA); return;
#undef MODE
#define MODE NX_RD
        default: RUN_LOOP(double, LOAD_X, STORE_D, ST_GFMA); return;
#undef MODE
        }
    }
    if (st->yk == O_VAL) {
        if (st->cls == A_F32) {
            RUN_LOOP(float, LOAD_X, STORE_D, ST_ADDF_VAL);
            return;
        }
        if (st->cls == A_F64) {
            RUN_LOOP(double, LOAD_X, STORE_D, ST_ADD64_VAL);
            return;
        }
        if (F->eb_fast < 0x800) {
            run_gen_vec(pl, b, st);
            return;
        }
        switch (m) {
#define MODE NX_RNE
        case NX_RNE: RUN_LOOP(double, LOAD_X, STORE_D, ST_GADD_VAL); return;
#undef MODE
#define MODE NX_RNA
        case NX_RNA: RUN_LOOP(double, LOAD_X, STORE_D, ST_GADD_VAL); return;
#undef MODE
#define MODE NX_RZ
        case NX_RZ: RUN_LOOP(double, LOAD_X, STORE_D, ST_GADD_VAL); return;
#undef MODE
#define MODE NX_RU
        case NX_RU: RUN_LOOP(double, LOAD_X, STORE_D, ST_GADD_VAL); return;
#undef MODE
#define MODE NX_RD
        default: RUN_LOOP(double, LOAD_X, STORE_D, ST_GADD_VAL); return;
#undef MODE
        }
    }
    /* product terms rounded to pfmt, then added */
    if (st->cls == A_F64 && st->pfmt == NX_FP64) {
        RUN_LOOP(double, LOAD_X, STORE_D, ST_ADD64_PROD);
        return;
    }
    if (st->cls == A_F32 && st->pfmt == NX_FP32 && pl->prod_exact) {
        RUN_LOOP(float, LOAD_X, STORE_D, ST_ADDF_PROD);
        return;
    }
    for (int k = 0; k < nb; k++) {
        double s = vals[(size_t)st->x * FX_B + (size_t)k];
        for (int32_t j = 0; j < n; j++) {
            int32_t t = idx ? idx[j] : t0 + j;
            double v = opnd(pl, b, O_PROD, t, k, st->pfmt, m);
            s = do_add(pl, st->cls, s, v, F, m);
        }
        vals[(size_t)st->dst * FX_B + (size_t)k] = s;
    }
}

/* Cuts |x| = M·2^k at 2^q in mode m (the value's sign neg); R < 2^62. */
static inline uint64_t cut_mag(uint64_t a, int neg, int q, nx_mode m)
{
    int ex = (int)(a >> 52);
    uint64_t M = ex ? (a & ((1ull << 52) - 1)) | (1ull << 52) : a;
    int k = ex ? ex - 1075 : -1074;
    int s = q - k;
    if (s <= 0)
        return M << -s;
    uint64_t R;
    int rbit, st;
    if (s < 64) {
        uint64_t half = 1ull << (s - 1);
        R = M >> s;
        rbit = (M & half) != 0;
        st = (M & (half - 1)) != 0;
    } else {
        R = 0;
        rbit = 0;
        st = 1;
    }
    switch (m) {
    case NX_RZ: return R;
    case NX_RNE: return R + (uint64_t)(rbit && (st || (R & 1)));
    case NX_RNA: return R + (uint64_t)rbit;
    case NX_RU: return R + (uint64_t)(!neg && (rbit || st));
    default: return R + (uint64_t)(neg && (rbit || st));
    }
}

/* One atom (§5) for row k. */
static double atom_row(const fx_plan *pl, fx_blk *b, const fx_step *st, int k)
{
    const nx_program *p = pl->p;
    const fx_fmt *F = &pl->fmt[st->fmt];
    nx_mode m = (nx_mode)st->mode;
    int gn = st->n, cnt = gn + 1;
    double *hi = b->ahi, *lo = b->alo;
    int *sc = b->asc;
    int dd = 0;     /* some addend is a double-double (an fp64 product) */
    int scaled = 0; /* some addend is (hi + lo)·2^sc, sc != 0 */
    memset(sc, 0, (size_t)(gn + 1) * sizeof *sc);
    hi[0] = opnd(pl, b, st->xk, st->x, k, NX_FP64, NX_RNE);
    lo[0] = 0;
    if (st->xk == O_PROD && !pl->prod_exact) {
        b->bail[k] = 1; /* an atom's accumulator is never a term in the programs built */
        return 0;
    }
    for (int g = 0; g < gn; g++) {
        int32_t s = pl->gsrc[st->y + g];
        double h, l = 0;
        if (s < 0) {
            h = b->vals[(size_t)(-s - 1) * FX_B + (size_t)k];
        } else if (!p->dot) {
            h = b->A[k][s];
        } else {
            double av = b->A[k][s], bv = b->Bv[k][s];
            h = av * bv;
            if (!pl->prod_exact && isfinite(av) && isfinite(bv) && av != 0 && bv != 0) {
                if (!two_prod(av, bv, &h, &l)) {
                    /* beyond TwoProd's range: (ma·mb)·2^(ea+eb), ma·mb split exactly */
                    int ea, eb;
                    double ma = frexp(av, &ea), mb = frexp(bv, &eb);
                    h = ma * mb;
                    l = fma(ma, mb, -h);
                    sc[g + 1] = ea + eb;
                    scaled = 1;
                }
                dd = 1;
            }
        }
        hi[g + 1] = h;
        lo[g + 1] = l;
    }
    /* specials, zero signs, the largest exponent */
    int nan = 0, pinf = 0, ninf = 0, allneg0 = 1, any = 0, E = 0;
    for (int i = 0; i < cnt; i++) {
        uint64_t u = bits(hi[i]), a = u & ABSM;
        if (u != SIGNB)
            allneg0 = 0;
        if (a >= INFB) {
            if (a > INFB)
                nan = 1;
            else if (u >> 63)
                ninf = 1;
            else
                pinf = 1;
            continue;
        }
        if (a == 0)
            continue;
        int e;
        int32_t src = i ? pl->gsrc[st->y + i - 1] : -1;
        if (pl->align_ops && src >= 0) /* a product: its operands' exponent sum */
            e = nx_fmt_exp(b->A[k][src], pl->ofmt_a) + nx_fmt_exp(b->Bv[k][src], pl->ofmt_b);
        else
            e = dd ? nx_rf_lg_dd(hi[i], lo[i]) + sc[i] : (a >> 52) ? (int)(a >> 52) - 1023 : nx_rf_lg(hi[i]);
        if (!any || e > E)
            E = e;
        any = 1;
    }
    if (nan || (pinf && ninf))
        return NAN;
    if (pinf || ninf)
        return nx_round_inf(ninf, F->rf.fmt, 0);
    if (!any)
        return nx_rf_round(allneg0 ? -0.0 : 0.0, &F->rf, m, 0);
    int Fb = p->atom_frac_bits;
    nx_mode tr = p->atom_term_round;
    if (pl->atom_fixed) {
        int q = E - Fb;
        int64_t sum = 0;
        for (int i = 0; i < cnt; i++) {
            uint64_t u = bits(hi[i]), a = u & ABSM;
            if (a == 0)
                continue;
            if (dd) {
                sum += nx_rf_cut(hi[i], lo[i], q - sc[i], tr);
                continue;
            }
            uint64_t R = cut_mag(a, (int)(u >> 63), q, tr);
            sum += (u >> 63) ? -(int64_t)R : (int64_t)R;
        }
        if (sum == 0)
            return nx_rf_round(allneg0 ? -0.0 : 0.0, &F->rf, m, 0);
        return nx_rf_round_scaled(sum < 0, sum < 0 ? (uint64_t)-sum : (uint64_t)sum, q, 0, &F->rf, m, 0);
    }
    if (Fb >= 0) {
        /* frac_bits too wide for 64 bits: rare, MPFR does it */
        b->bail[k] = 1;
        return 0;
    }
    /* no frac_bits: the exact sum */
    nx_xacc *x = b->xacc;
    nx_xacc_init(x);
    for (int i = 0; i < cnt; i++) {
        if (scaled && sc[i]) {
            nx_xacc_add_scaled(x, hi[i], sc[i]);
            if (lo[i] != 0)
                nx_xacc_add_scaled(x, lo[i], sc[i]);
            continue;
        }
        nx_xacc_add(x, hi[i]);
        if (lo[i] != 0)
            nx_xacc_add(x, lo[i]);
    }
    if (nx_xacc_sign(x) == 0)
        return nx_rf_round(allneg0 ? -0.0 : 0.0, &F->rf, m, 0);
    return nx_xacc_round(x, F->rf.fmt, m, 0);
}

/* The common atom, vectorised along its group: every source a term, the
 * group contiguous, products exact binary64 numbers (or narrow values),
 * the cut fitting the int64 (plan: vec_atom).  Each addend |x| = M·2^(e-1075)
 * is cut at 2^(E-F) by one variable shift of M by (E + 1023) + 52 - F - e,
 * with the round bit and the sticky bits for modes other than rz. */
static inline __attribute__((always_inline)) int64_t vcut_sum(const double *buf, int cnt, int64_t sh0, nx_mode tr)
{
    const v4l frac = v4l_splat((int64_t)((1ull << 52) - 1)), hid = v4l_splat((int64_t)(1ull << 52)),
              e7ff = v4l_splat(0x7ff), one = v4l_splat(1), c63 = v4l_splat(63), vsh0 = v4l_splat(sh0);
    v4l zero = one - one, vsum = zero;
    int g = 0;
    for (; g + 4 <= cnt; g += 4) {
        v4l u = v4_bits(v4d_load(buf + g));
        v4l e = (v4l)((v4u)u >> 52) & e7ff;
        v4l M = (u & frac) | (hid & (e != zero));
        v4l sh = vsh0 - e;
        v4l big = sh > c63;
        sh = (c63 & big) | (sh & ~big); /* M < 2^53: a shift by 63 leaves 0 */
        v4l R = (v4l)((v4u)M >> (v4u)sh);
        v4l neg = u < zero;
        if (tr != NX_RZ) {
            v4l sh1 = sh - one;
            v4l rbit = (v4l)((v4u)M >> (v4u)sh1) & one;
            v4l st = (M & (v4l)(((v4u)one << (v4u)sh1) - (v4u)one)) != zero; /* -1 or 0 */
            v4l inc;
            switch (tr) {
            case NX_RNE: inc = rbit & ((st & one) | (R & one)); break;
            case NX_RNA: inc = rbit; break;
            case NX_RU: inc = (rbit | (st & one)) & ~neg; break;
            default: inc = (rbit | (st & one)) & neg; break;
            }
            R += inc;
        }
        vsum += (R ^ neg) - neg;
    }
    int64_t sum = vsum[0] + vsum[1] + vsum[2] + vsum[3];
    for (; g < cnt; g++) {
        uint64_t u = bits(buf[g]);
        int e = (int)((u >> 52) & 0x7ff);
        uint64_t M = (u & ((1ull << 52) - 1)) | (e ? 1ull << 52 : 0);
        int64_t sh = sh0 - e;
        if (sh > 63)
            sh = 63;
        uint64_t R = M >> sh;
        int neg = (int)(u >> 63);
        if (tr != NX_RZ) {
            int rbit = (int)((M >> (sh - 1)) & 1), st = (M & ((1ull << (sh - 1)) - 1)) != 0;
            switch (tr) {
            case NX_RNE: R += (uint64_t)(rbit && (st || (R & 1))); break;
            case NX_RNA: R += (uint64_t)rbit; break;
            case NX_RU: R += (uint64_t)(!neg && (rbit || st)); break;
            default: R += (uint64_t)(neg && (rbit || st)); break;
            }
        }
        sum += neg ? -(int64_t)R : (int64_t)R;
    }
    return sum;
}

static inline __attribute__((always_inline)) void atom_vec(const fx_plan *pl, fx_blk *b, const fx_step *st)
{
    const nx_program *p = pl->p;
    const fx_fmt *F = &pl->fmt[st->fmt];
    nx_mode m = (nx_mode)st->mode, tr = p->atom_term_round;
    int gn = st->n, Fb = p->atom_frac_bits, dot = p->dot;
    int32_t t0 = pl->gsrc[st->y];
    double *buf = b->ahi; /* maxg + 1 (+ 3 spare) addends */
    const v4l e7ff = v4l_splat(0x7ff);
    /* §5 step 2 under "operands": a nonzero product counts with the biased
     * max(e_a, emin_a) + max(e_b, emin_b); the operands here are normal
     * binary64 numbers (no fp64 tensor takes this path) or zeros */
    const int ops = pl->align_ops;
    const int64_t ca = (int64_t)nx_format(pl->ofmt_a)->emin + 1023, cb = (int64_t)nx_format(pl->ofmt_b)->emin + 1023;
    const v4l vca = v4l_splat(ca), vcb = v4l_splat(cb), vbias = v4l_splat(1023);
    for (int k = 0; k < b->nb; k++) {
        const double *ar = b->A[k] + t0, *br = b->Bv[k] + t0;
        buf[0] = b->vals[(size_t)st->x * FX_B + (size_t)k];
        v4l vmax = e7ff - e7ff, vopn = vmax;
        int g = 0;
        for (; g + 4 <= gn; g += 4) {
            v4d va = v4d_load(ar + g), pr = va;
            if (dot) {
                v4d vb = v4d_load(br + g);
                pr *= vb;
                if (ops) {
                    v4l ea = (v4l)((v4u)v4_bits(va) >> 52) & e7ff, eb = (v4l)((v4u)v4_bits(vb) >> 52) & e7ff;
                    v4l lta = ea < vca, ltb = eb < vcb;
                    ea = (vca & lta) | (ea & ~lta);
                    eb = (vcb & ltb) | (eb & ~ltb);
                    v4l nz = ((v4l)((v4u)v4_bits(pr) << 1)) != (vbias - vbias); /* the product is not ±0 */
                    v4l es = (ea + eb - vbias) & nz;
                    v4l gto = es > vopn;
                    vopn = (es & gto) | (vopn & ~gto);
                }
            }
            memcpy(buf + 1 + g, &pr, sizeof pr);
            v4l e = (v4l)((v4u)v4_bits(pr) >> 52) & e7ff;
            v4l gt = e > vmax;
            vmax = (e & gt) | (vmax & ~gt);
        }
        int64_t emax = vmax[0] > vmax[1] ? vmax[0] : vmax[1];
        emax = vmax[2] > emax ? vmax[2] : emax;
        emax = vmax[3] > emax ? vmax[3] : emax;
        int64_t eopn = vopn[0] > vopn[1] ? vopn[0] : vopn[1];
        eopn = vopn[2] > eopn ? vopn[2] : eopn;
        eopn = vopn[3] > eopn ? vopn[3] : eopn;
        for (; g < gn; g++) {
            double pr = dot ? ar[g] * br[g] : ar[g];
            buf[1 + g] = pr;
            int64_t e = (int64_t)((bits(pr) >> 52) & 0x7ff);
            emax = e > emax ? e : emax;
            if (ops && (bits(pr) << 1) != 0) {
                int64_t ea = (int64_t)((bits(ar[g]) >> 52) & 0x7ff), eb = (int64_t)((bits(br[g]) >> 52) & 0x7ff);
                int64_t eo = (ea > ca ? ea : ca) + (eb > cb ? eb : cb) - 1023;
                eopn = eo > eopn ? eo : eopn;
            }
        }
        int64_t es = (int64_t)((bits(buf[0]) >> 52) & 0x7ff);
        emax = es > emax ? es : emax;
        if (emax == 0x7ff || emax == 0) {
            /* NaN, inf or only zeros: the general atom */
            b->vals[(size_t)st->dst * FX_B + (size_t)k] = atom_row(pl, b, st, k);
            continue;
        }
        if (ops) /* the alignment exponent: products by operands, s by value */
            emax = es > eopn ? es : eopn;
        int64_t sum;
        int64_t sh0 = emax + 52 - Fb;
        switch (tr) {
        case NX_RZ: sum = vcut_sum(buf, gn + 1, sh0, NX_RZ); break;
        case NX_RNE: sum = vcut_sum(buf, gn + 1, sh0, NX_RNE); break;
        case NX_RNA: sum = vcut_sum(buf, gn + 1, sh0, NX_RNA); break;
        case NX_RU: sum = vcut_sum(buf, gn + 1, sh0, NX_RU); break;
        default: sum = vcut_sum(buf, gn + 1, sh0, NX_RD); break;
        }
        double v;
        int q = (int)emax - 1023 - Fb;
        if (sum == 0) {
            int allneg0 = 1;
            for (int i = 0; i <= gn; i++)
                allneg0 &= bits(buf[i]) == SIGNB;
            v = nx_rf_round(allneg0 ? -0.0 : 0.0, &F->rf, m, 0);
        } else {
            v = nx_rf_round_scaled(sum < 0, sum < 0 ? (uint64_t)-sum : (uint64_t)sum, q, 0, &F->rf, m, 0);
        }
        b->vals[(size_t)st->dst * FX_B + (size_t)k] = v;
    }
}

static inline __attribute__((always_inline)) void exec_block(const fx_plan *pl, fx_blk *b)
{
    const int nb = b->nb;
    double *vals = b->vals;
    for (size_t si = 0; si < pl->nsteps; si++) {
        const fx_step *st = &pl->steps[si];
        const fx_fmt *F = &pl->fmt[st->fmt];
        nx_mode m = (nx_mode)st->mode;
        double *dst = vals + (size_t)st->dst * FX_B;
        switch (st->kind) {
        case S_ZERO:
            for (int k = 0; k < FX_B; k++)
                dst[k] = 0.0;
            break;
        case S_START: /* exact, as it is (docs/numerics.md §4.1) */
            for (int k = 0; k < FX_B; k++)
                dst[k] = b->cv[k];
            break;
        case S_LEAF:
            for (int k = 0; k < nb; k++) {
                double v = opnd(pl, b, st->xk, st->x, k, st->pfmt, m);
                dst[k] = st->cls == A_ID ? v : fround(v, F, m, 0);
            }
            break;
        case S_ADD:
            for (int k = 0; k < nb; k++) {
                double x = opnd(pl, b, st->xk, st->x, k, st->pfmt, m);
                double y = opnd(pl, b, st->yk, st->y, k, st->pfmt, m);
                dst[k] = do_add(pl, st->cls, x, y, F, m);
            }
            break;
        case S_FMA:
            for (int k = 0; k < nb; k++) {
                double c = opnd(pl, b, st->xk, st->x, k, st->pfmt, m);
                dst[k] = do_fma(pl, st->cls, b->A[k][st->y], b->Bv[k][st->y], c, F, m, b->xacc);
            }
            break;
        case S_RUN:
            run_step(pl, b, st);
            break;
        case S_GROUP:
            group_step(pl, b, st);
            break;
        default:
            if (st->fused) { /* the plan's vec_atom */
                atom_vec(pl, b, st);
                break;
            }
            for (int k = 0; k < nb; k++) {
                double v = atom_row(pl, b, st, k);
                dst[k] = v; /* written after the row's reads: slots may be shared */
            }
            break;
        }
    }
}

static void exec_block_plain(const fx_plan *pl, fx_blk *b)
{
    exec_block(pl, b);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define FX_FMA_CLONE 1
__attribute__((target("avx2,fma"))) static void exec_block_fma(const fx_plan *pl, fx_blk *b)
{
    exec_block(pl, b);
}
#endif

/* ---------------------------------------------------------------------- */

typedef struct fx_scratch {
    double *vals, *ain, *bin, *ahi, *alo, *gacc;
    int *asc;
    nx_xacc xacc;
    nx_mpfr_row *mrow;
} fx_scratch;

static void scratch_free(fx_scratch *s)
{
    free(s->vals);
    free(s->ain);
    free(s->bin);
    free(s->ahi);
    free(s->alo);
    free(s->asc);
    free(s->gacc);
    nx_mpfr_row_free(s->mrow);
}

static int scratch_init(fx_scratch *s, const fx_plan *pl)
{
    memset(s, 0, sizeof *s);
    size_t n = pl->p->n ? pl->p->n : 1;
    s->vals = malloc((size_t)pl->nslots * FX_B * sizeof *s->vals);
    s->ahi = malloc((size_t)(pl->maxg + 4) * sizeof *s->ahi);
    s->alo = malloc((size_t)(pl->maxg + 1) * sizeof *s->alo);
    s->asc = malloc((size_t)(pl->maxg + 1) * sizeof *s->asc);
    s->gacc = malloc((size_t)(pl->maxgroup + 1) * FX_B * sizeof *s->gacc);
    if (pl->in_round) {
        s->ain = malloc(FX_B * n * sizeof *s->ain);
        s->bin = pl->dot ? malloc(FX_B * n * sizeof *s->bin) : NULL;
    }
    if (!s->vals || !s->ahi || !s->alo || !s->asc || !s->gacc || (pl->in_round && (!s->ain || (pl->dot && !s->bin)))) {
        scratch_free(s);
        return -1;
    }
    return 0;
}

/* The vector path (nx_simd.c) where the point is native IEEE arithmetic:
 * the results, then the `out` conversion.  1: done; 0: not taken. */
static int simd_path(const nx_program *p, const nx_simd_rows *in, double *y, int threads, nx_status *st,
                     nx_err *err)
{
    nx_simd_isa isa = nx_simd_isa_now();
    if (isa == NX_SIMD_OFF || !nx_simd_eligible(p, in->a.fmt, p->dot ? in->b.fmt : in->a.fmt,
                                                p->start ? in->c.fmt : NX_FP32))
        return 0;
    int rc = nx_simd_reduce(p, in, y, threads, isa);
    if (rc > 0)
        return 0;
    if (rc < 0) {
        *st = nx_err_set(err, NX_ENOMEM, "out of memory for the fast engine's vector path");
        return 1;
    }
    fx_fmt fo;
    fx_fmt_init(&fo, p->out);
    for (size_t r = 0; r < in->rows; r++)
        y[r] = fround(y[r], &fo, p->out_rounding, p->saturate);
    *st = NX_OK;
    return 1;
}

nx_status nx_fast_reduce_raw(const nx_program *p, const nx_simd_rows *in, double *y, int threads, int *done,
                             nx_err *err)
{
    nx_status st = NX_OK;
    *done = 0;
    if (p->start && !in->c.p)
        return nx_err_set(err, NX_EINVAL, "the point is reduced from a start value, but the rows have no c");
    *done = simd_path(p, in, y, threads, &st, err);
    return st;
}

struct nx_fast {
    fx_plan pl;
};

nx_fast *nx_fast_new(const nx_program *p, nx_fmt a_fmt, nx_fmt b_fmt, int has_c, nx_fmt c_fmt, nx_err *err)
{
    nx_fast *f = malloc(sizeof *f);
    if (!f) {
        nx_err_set(err, NX_ENOMEM, "out of memory planning the fast engine");
        return NULL;
    }
    static const double one = 1.0;
    nx_rows in = {.rows = 0, .a_fmt = a_fmt, .a = &one, .b_fmt = b_fmt, .b = p->dot ? &one : NULL,
                  .c_fmt = c_fmt, .c = has_c ? &one : NULL};
    if (plan_build(&f->pl, p, &in, err)) {
        free(f);
        return NULL;
    }
    return f;
}

void nx_fast_free(nx_fast *f)
{
    if (!f)
        return;
    plan_free(&f->pl);
    free(f);
}

/* The scalar block path over the rows, on a built plan. */
static nx_status fast_run(const fx_plan *plp, const nx_rows *in, const double *const *arows, double *y,
                         int threads, size_t *mpfr_rows, nx_err *err);

nx_status nx_fast_run(const nx_fast *f, const nx_rows *in, double *y, int threads, size_t *mpfr_rows, nx_err *err)
{
    return nx_fast_run_rows(f, in, NULL, y, threads, mpfr_rows, err);
}

nx_status nx_fast_run_rows(const nx_fast *f, const nx_rows *in, const double *const *a_rows, double *y, int threads,
                           size_t *mpfr_rows, nx_err *err)
{
    const nx_program *p = f->pl.p;
    if (p->start && !in->c)
        return nx_err_set(err, NX_EINVAL, "the point is reduced from a start value, but the rows have no c");
    return fast_run(&f->pl, in, a_rows, y, threads, mpfr_rows, err);
}

nx_status nx_fast_reduce_ex(const nx_program *p, const nx_rows *in, double *y, int threads,
                            size_t *mpfr_rows, nx_err *err)
{
    if (p->start && !in->c)
        return nx_err_set(err, NX_EINVAL, "the point is reduced from a start value, but the rows have no c");
    if (nx_simd_forced()) {
        nx_simd_rows sr = {.rows = in->rows,
                           .a = {in->a, NX_ST_F64, in->a_fmt, p->n},
                           .b = {in->b, NX_ST_F64, in->b_fmt, p->n},
                           .c = {in->c, NX_ST_F64, in->c_fmt, 1}};
        nx_status st;
        if (simd_path(p, &sr, y, threads, &st, err)) {
            if (mpfr_rows)
                *mpfr_rows = 0;
            return st;
        }
    }
    fx_plan pl;
    nx_status st = plan_build(&pl, p, in, err);
    if (st)
        return st;
    st = fast_run(&pl, in, NULL, y, threads, mpfr_rows, err);
    plan_free(&pl);
    return st;
}

static nx_status fast_run(const fx_plan *plp, const nx_rows *in, const double *const *arows, double *y,
                         int threads, size_t *mpfr_rows, nx_err *err)
{
    const fx_plan pl = *plp;
    const nx_program *p = pl.p;
    size_t n = p->n, rows = in->rows;
    size_t nblocks = (rows + FX_B - 1) / FX_B;
    int failed = 0;
    size_t redone = 0;
    void (*exec)(const fx_plan *, fx_blk *) = exec_block_plain;
#ifdef FX_FMA_CLONE
    if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"))
        exec = exec_block_fma;
#endif
    const fx_fmt *fin = pl.in_round ? &pl.fmt[p->in] : NULL;
    const fx_fmt *fout = &pl.fmt[p->out];
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (nblocks > 1) \
    reduction(+ : redone)
    {
        fx_scratch sc;
        int ok = scratch_init(&sc, &pl) == 0;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t blk = 0; blk < nblocks; blk++) {
            if (!ok)
                continue;
            fx_blk b;
            memset(&b, 0, sizeof b);
            size_t r0 = blk * FX_B;
            b.nb = (int)(rows - r0 < FX_B ? rows - r0 : FX_B);
            b.vals = sc.vals;
            b.ahi = sc.ahi;
            b.alo = sc.alo;
            b.asc = sc.asc;
            b.gacc = sc.gacc;
            b.xacc = &sc.xacc;
            b.avx2 = exec != exec_block_plain;
            for (int k = 0; k < FX_B; k++) {
                size_t r = r0 + (size_t)(k < b.nb ? k : 0);
                const double *ar = arows ? arows[r] : in->a + r * n, *br = in->b ? in->b + r * n : ar;
                if (fin && k < b.nb) {
                    double *ai = sc.ain + (size_t)k * n, *bi = p->dot ? sc.bin + (size_t)k * n : NULL;
                    for (size_t i = 0; i < n; i++)
                        ai[i] = fround(ar[i], fin, p->in_rounding, 0);
                    if (bi)
                        for (size_t i = 0; i < n; i++)
                            bi[i] = fround(br[i], fin, p->in_rounding, 0);
                    ar = ai;
                    br = bi ? bi : ai;
                }
                b.A[k] = ar;
                b.Bv[k] = br;
                b.cv[k] = nx_rows_start(in, r);
            }
            exec(&pl, &b);
            for (int k = 0; k < b.nb; k++) {
                size_t r = r0 + (size_t)k;
                if (b.bail[k]) {
                    if (!sc.mrow && !(sc.mrow = nx_mpfr_row_new(p))) {
#pragma omp atomic write
                        failed = 1;
                        continue;
                    }
                    y[r] = nx_mpfr_row_eval_c(sc.mrow, p, in->a_fmt, arows ? arows[r] : in->a + r * n, in->b_fmt,
                                              in->b ? in->b + r * n : NULL, nx_rows_start(in, r));
                    redone++;
                    continue;
                }
                double v = sc.vals[(size_t)pl.result_slot * FX_B + (size_t)k];
                y[r] = fround(v, fout, p->out_rounding, p->saturate);
            }
        }
        if (sc.mrow)
            mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
        if (ok)
            scratch_free(&sc);
    }
    if (mpfr_rows)
        *mpfr_rows = redone;
    if (failed)
        return nx_err_set(err, NX_ENOMEM, "out of memory for the fast engine's scratch");
    return NX_OK;
}

nx_status nx_fast_reduce(const nx_program *p, const nx_rows *in, double *y, int threads,
                         nx_err *err)
{
    return nx_fast_reduce_ex(p, in, y, threads, NULL, err);
}
