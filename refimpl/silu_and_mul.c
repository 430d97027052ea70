/* silu_and_mul.c: y = silu(gate) * up (docs/families.md, silu_and_mul).
 * x [T, 2H]: gate = x[:, :H], up = x[:, H:]; silu(g) = g / (1 + exp(-g))
 * correctly rounded to fp32; y = fp32(silu(g) * u) rounded to param `out`
 * (rne).  No reduction. */
#include "ref_internal.h"

#include <stdlib.h>

typedef struct silu_p {
    long T, H;
    nx_fmt in, out;
} silu_p;

static nx_status params(const fam_spec *s, silu_p *p, nx_err *err)
{
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &p->T, err)) || (st = ref_dim(s, "H", -1, &p->H, err)) ||
        (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &p->in, err)) || (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &p->out, err)))
        return st;
    if (p->H > (1L << 29))
        return nx_err_set(err, NX_EINVAL, "%s.%s: H = %ld is too large", s->family, s->point ? s->point : "?", p->H);
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    silu_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    ref_add_float(l, "x", p.in, "T,2H", 2, (int64_t[]){p.T, 2 * p.H}, ref_int_bound(1, 6, p.in));
    return NX_OK;
}

static nx_status run(ref_job *j, nx_err *err)
{
    silu_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t T = (size_t)p.T, H = (size_t)p.H;
    double *x = NULL, *y = ref_alloc(T * H);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = ref_decode(j, "x", &x, err)))
        goto done;
    nx_status est = NX_OK;
#pragma omp parallel for num_threads(ref_threads_for(j, T * H * 64)) schedule(static)
    for (size_t i = 0; i < T * H; i++) {
        ref_math *m = ref_job_math(j);
        size_t t = i / H, h = i % H;
        nx_err e1 = {0};
        double g = ref_f32_silu(m, x[t * 2 * H + h], &e1);
        if (e1.code) {
#pragma omp critical
            {
                est = e1.code;
                *err = e1;
            }
        }
        y[i] = ref_round(m, ref_f32_mul(m, g, x[t * 2 * H + H + h]), p.out, NX_RNE, 0);
    }
    if (!(st = est))
        st = ref_emit(j, "y", p.out, 2, (int64_t[]){p.T, p.H}, y, err);
done:
    free(x);
    free(y);
    return st;
}

const ref_family ref_family_silu_and_mul = {"silu_and_mul", inputs, run, NULL};
