/* cpu_silu_and_mul.c: y = silu(gate) * up (docs/families.md, silu_and_mul;
 * docs/cpu-backend.md).  No reduction.
 *
 *   cpu_silu_and_mul       silu correctly rounded to fp32 (cpu_silu_cr)
 *   cpu_silu_and_mul_libm  silu = g / (1 + expf(-g)) in float with the C
 *                          library's expf: the declared approximation
 *                          `libm_expf_div` (2 ulp), never bit-exact against cr;
 *                          below g = -80, g e^g (silu_libm)
 *
 * x [T, 2H]: gate = x[:, :H], up = x[:, H:]; y = fp32(silu(g) * u) rounded
 * to param `out` (rne).  OpenMP runs over tokens. */
#include "cpu_internal.h"

#include <math.h>
#include <stdlib.h>

/* The declared approximation `libm_expf_div`: g / (1 + expf(-g)), within 2
 * ulp of silu where expf(-g) is finite.  Below g = -88.72 expf(-g) overflows
 * and the quotient is -0, while silu(g) = g e^g / (1 + e^g) is still a normal
 * number down to g = -92 (1.2e-37 at -89.5) and a subnormal down to -108.7:
 * up to 2^25 ulps lost, and times an up of 2^40 an output of 2^-82.  There
 * (from -80, where e^g < 2^-115 makes 1 + e^g = 1 far below an ulp) g e^g is
 * formed in binary64, exact to exp's error, and rounded once: within an ulp.
 * Below -128 |g e^g| < 2^-150 rounds to -0, as silu(-inf) = -0. */
static inline float silu_libm(float g)
{
    if (!(g < -80.0f)) /* NaN too */
        return g / (1.0f + expf(-g));
    if (g < -128.0f)
        return -0.0f;
    return (float)((double)g * exp((double)g));
}

typedef struct silu_args {
    long T, H;
    nx_fmt in, out;
} silu_args;

static nx_status numerics(const fam_spec *s, silu_args *a, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &a->in, err)) || (st = cpu_fmt(s, "out", FAM_DEFAULT_FMT, &a->out, err)))
        return st;
    return cpu_io_fmts(s, a->in, 0, a->out, err);
}

static nx_status check(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    silu_args a;
    nx_status st = numerics(s, &a, err);
    if (st)
        return st;
    return cpu_check_elem(s, k, "silu", k == &cpu_k_silu_libm ? "libm_expf_div" : NULL, err);
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    silu_args a;
    nx_status st;
    if ((st = numerics(s, &a, err)) || (st = cpu_dim(s, "T", -1, &a.T, err)) || (st = cpu_dim(s, "H", -1, &a.H, err)))
        return st;
    size_t T = (size_t)a.T, H = (size_t)a.H;
    int libm = r->kernel == &cpu_k_silu_libm;
    float *x = NULL, *y = malloc(T * H * sizeof *y);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = cpu_decode(st_find(r->in, "x"), r->threads, &x, err)))
        goto done;
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (size_t t = 0; t < T; t++) {
        const float *gr = x + t * 2 * H, *ur = gr + H;
        for (size_t i = 0; i < H; i++) {
            float g = gr[i];
            float sg = libm ? silu_libm(g) : cpu_silu_cr(g);
            y[t * H + i] = sg * ur[i];
        }
    }
    st = cpu_emit(r->out, "y", a.out, 0, 2, (int64_t[]){a.T, a.H}, y, r->threads, err);
done:
    free(x);
    free(y);
    return st;
}

const cpu_kernel cpu_k_silu = {"cpu_silu_and_mul", "silu_and_mul", "silu cr", check, run};
const cpu_kernel cpu_k_silu_libm = {"cpu_silu_and_mul_libm", "silu_and_mul",
                                    "silu = g / (1 + expf(-g)), libm expf (approximation libm_expf_div); g e^g below -80",
                                    check, run};
