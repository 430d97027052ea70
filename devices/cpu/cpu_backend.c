/* cpu_backend.c: dev_cpu_backend(), the embedded OpenMP backend
 * (docs/cpu-backend.md): the kernel table, choosing and checking a kernel
 * for a point, validating the inputs against ref_inputs, the thread count
 * of a mode, describe(), and the param and numerics checks the family
 * files share. */
#include "cpu_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <mpfr.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refimpl.h"

const cpu_kernel *const cpu_kernels[] = {
    &cpu_k_gemm_seq,      &cpu_k_gemm_splitk,     &cpu_k_gemm_splitk_legacy, &cpu_k_gemm_splitk_threads,
    &cpu_k_gemm_batch_split, &cpu_k_gemm_atomic_split, &cpu_k_gemm_reversed, &cpu_k_gemm_reversed_legacy,
    &cpu_k_gemv_dequant,  &cpu_k_gemv_grouped,       &cpu_k_moe_grouped,
    &cpu_k_moe_grouped_vec, &cpu_k_attn,           &cpu_k_attn_split,         &cpu_k_rmsnorm,
    &cpu_k_rmsnorm_legacy, &cpu_k_fused_add_rmsnorm, &cpu_k_silu,             &cpu_k_silu_libm,
    &cpu_k_softmax,       &cpu_k_softmax_libm,
};
const size_t cpu_nkernels = sizeof cpu_kernels / sizeof cpu_kernels[0];

/* --- params ------------------------------------------------------------------------ */

/* famspec.h's readers, said as the cpu backend's ("cpu: FAMILY.POINT: ..."). */
static nx_status said(nx_status st, nx_err *err)
{
    if (st)
        nx_err_prefix(err, "cpu");
    return st;
}

nx_status cpu_long(const fam_spec *s, const char *name, long def, long *out, nx_err *err)
{
    return said(fam_get_long(s, name, def, out, err), err);
}

nx_status cpu_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err)
{
    return said(fam_get_dim(s, name, def, out, err), err);
}

nx_status cpu_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err)
{
    return said(fam_get_bool(s, name, def, out, err), err);
}

nx_status cpu_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err)
{
    return said(fam_get_fmt(s, name, def, out, err), err);
}

nx_status cpu_f32(const fam_spec *s, const char *name, const char *def, float *out, nx_err *err)
{
    return said(fam_get_f32(s, name, def, out, err), err);
}

nx_status cpu_vec(const fam_spec *s, long *vec, nx_err *err)
{
    nx_status st = cpu_long(s, "vec", 8, vec, err);
    if (!st && (*vec < 1 || *vec > CPU_MAX_VEC))
        st = nx_err_set(err, NX_EUNSUPPORTED, "cpu: %s: vec = %ld outside [1, %d]", fam_spec_family(s), *vec,
                        CPU_MAX_VEC);
    return st;
}

nx_status cpu_io_fmts(const fam_spec *s, nx_fmt in, int in_written, nx_fmt out, nx_err *err)
{
    if ((in_written ? cpu_fmt_writable(in) : cpu_fmt_readable(in)) && cpu_fmt_writable(out))
        return NX_OK;
    return nx_err_set(err, NX_EUNSUPPORTED, "cpu: %s: in = %s, out = %s not handled (reads %s, writes fp32, fp16, bf16)",
                      fam_spec_family(s), nx_format(in)->name, nx_format(out)->name,
                      in_written ? "fp32, fp16, bf16" : "fp32, fp16, bf16, e4m3, e5m2");
}

/* --- numerics checks ---------------------------------------------------------------- */

nx_fmt cpu_red_out(const fam_reduction *r)
{
    return nx_point_out(&r->point);
}

nx_status cpu_check_red(const fam_spec *s, const cpu_kernel *k, const char *name, const char *tree, int fp32_out,
                        const fam_reduction **out, nx_err *err)
{
    const fam_reduction *r = fam_reduction_get(s, name);
    if (out)
        *out = r;
    if (!r)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: %s.%s declares no numerics for reduction '%s' (kernel %s "
                          "realises %s = %s)", fam_spec_family(s), fam_spec_point(s), name, k->id, name, tree);
    const nx_point *p = &r->point;
    char *txt = nx_tree_print(p->tree);
    if (!txt)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    int same = strcmp(txt, tree) == 0;
    nx_status st = NX_OK;
    if (!same)
        st = nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s realises %s = %s; %s.%s declares %s", k->id, name, tree,
                        fam_spec_family(s), fam_spec_point(s), txt);
    free(txt);
    if (st)
        return st;
    const char *what = NULL;
    if (p->acc != NX_FP32)
        what = "acc (the kernel accumulates in fp32)";
    else if (p->rounding != NX_RNE)
        what = "rounding (the kernel rounds in rne)";
    else if (p->in >= 0)
        what = "in (the kernel does not round its inputs)";
    else if (!p->fma)
        what = "fma (the kernel fuses each product into the accumulator)";
    else if (p->product >= 0)
        what = "product (the kernel keeps products exact inside fmaf)";
    else if (p->atom.present)
        what = "atom (the cpu has no matrix unit)";
    else if (fp32_out && nx_point_out(p) != NX_FP32)
        what = "out (the kernel keeps this result in fp32)";
    else if (!cpu_fmt_writable(nx_point_out(p)))
        what = "out (the kernel stores fp32, fp16 or bf16)";
    else if (nx_point_out(p) != NX_FP32 && nx_point_out_rounding(p) != NX_RNE)
        what = "out_rounding (the kernel rounds its stores in rne)";
    if (what)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s cannot realise %s.%s reduction '%s': %s", k->id,
                          fam_spec_family(s), fam_spec_point(s), name, what);
    return NX_OK;
}

nx_status cpu_check_elem(const fam_spec *s, const cpu_kernel *k, const char *name, const char *approx, nx_err *err)
{
    const fam_elem *e = fam_elem_get(s, name);
    int cr = !e || e->impl == FAM_ELEM_CR;
    if (!approx && !cr)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "cpu: kernel %s computes %s correctly rounded; %s.%s declares the approximation %s", k->id,
                          name, fam_spec_family(s), fam_spec_point(s), e->approx ? e->approx : "?");
    if (approx && (cr || !e->approx || strcmp(e->approx, approx) != 0))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s computes %s as %s; %s.%s declares %s", k->id, name,
                          approx, fam_spec_family(s), fam_spec_point(s), cr ? "cr" : e->approx);
    return NX_OK;
}

float cpu_pairwise(const float *v, size_t n)
{
    if (n == 0)
        return 0.0f;
    if (n == 1)
        return v[0];
    size_t h = (n + 1) / 2;
    return cpu_pairwise(v, h) + cpu_pairwise(v + h, n - h);
}

/* --- choosing a kernel --------------------------------------------------------------- */

static const cpu_kernel *kernel_by_id(const char *id)
{
    for (size_t i = 0; i < cpu_nkernels; i++)
        if (strcmp(cpu_kernels[i]->id, id) == 0)
            return cpu_kernels[i];
    return NULL;
}

/* The kernel that runs spec: `id`, else the point's kernel, else the first
 * kernel of the family that realises the point; checked against the point. */
static nx_status pick(const fam_spec *s, const char *id, const cpu_kernel **out, nx_err *err)
{
    *out = NULL;
    if (!s || !s->family)
        return nx_err_set(err, NX_EINVAL, "cpu: a spec without a family");
    if (!id)
        id = s->kernel;
    if (!id) {
        for (size_t i = 0; i < cpu_nkernels; i++) {
            const cpu_kernel *k = cpu_kernels[i];
            if (strcmp(k->family, s->family) == 0 && k->check(s, k, NULL) == NX_OK) {
                *out = k;
                return NX_OK;
            }
        }
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: no kernel of family '%s' realises point %s.%s", s->family,
                          s->family, fam_spec_point(s));
    }
    const cpu_kernel *k = kernel_by_id(id);
    if (!k)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: no kernel '%s' in the cpu backend (point %s.%s)", id,
                          s->family, fam_spec_point(s));
    if (strcmp(k->family, s->family) != 0)
        return nx_err_set(err, NX_EINVAL, "cpu: kernel '%s' belongs to family '%s', not '%s'", id, k->family,
                          s->family);
    nx_status st = k->check(s, k, err);
    if (st)
        return st;
    *out = k;
    return NX_OK;
}

/* --- inputs ------------------------------------------------------------------------ */

/* Every input tensor named, typed and shaped as ref_inputs describes it and
 * every integer in its range (the kernels index with them): refimpl's own
 * check (one vectorised pass over U8 tensors), then the float formats this
 * backend reads. */
static nx_status check_inputs(const fam_spec *s, const st_file *in, nx_err *err)
{
    nx_status st = ref_check_inputs(s, in, err);
    if (st) {
        nx_err_prefix(err, "cpu");
        return st;
    }
    ref_tensor_desc *d;
    size_t nd;
    if ((st = ref_inputs(s, &d, &nd, err))) {
        nx_err_prefix(err, "cpu");
        return st;
    }
    for (size_t k = 0; k < nd && !st; k++)
        if (d[k].kind == REF_FLOAT && !cpu_fmt_readable((nx_fmt)d[k].fmt))
            st = nx_err_set(err, NX_EUNSUPPORTED, "cpu: %s.%s: input tensor '%s': the cpu backend does not read %s",
                            fam_spec_family(s), fam_spec_point(s), d[k].name, nx_format((nx_fmt)d[k].fmt)->name);
    free(d);
    return st;
}

/* --- the backend ------------------------------------------------------------------- */

static int cpu_available(const dev_backend *self, char *why, size_t whylen)
{
    (void)self;
    if (why && whylen)
        why[0] = 0;
    return 1;
}

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Model", 5) != 0)
            continue;
        char *c = strchr(line, ':');
        if (!c)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        c[strcspn(c, "\n")] = 0;
        if (*c) {
            snprintf(buf, cap, "%s", c);
            break;
        }
    }
    fclose(f);
}

static nx_status cpu_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    (void)self;
    char host[256] = "unknown", model[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = 0;
    cpu_model(model, sizeof model);
#if defined(__clang__)
    const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *compiler = "gcc " __VERSION__;
#else
    const char *compiler = "unknown";
#endif
    json_t *kernels = json_array();
    for (size_t i = 0; i < cpu_nkernels; i++)
        json_array_append_new(kernels, json_string(cpu_kernels[i]->id));
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:o}", "backend", "cpu", "sku", "cpu", "host", host,
                          "cpu_model", model, "threads", omp_get_max_threads(), "compiler", compiler, "openmp",
                          (int)_OPENMP, "kernels", kernels);
    if (!o)
        return nx_err_set(err, NX_ENOMEM, "cpu: describe: out of memory");
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt)
        return nx_err_set(err, NX_ENOMEM, "cpu: describe: out of memory");
    size_t n = strlen(txt);
    nx_status st = NX_OK;
    if (n + 1 > len)
        st = nx_err_set(err, NX_EINVAL, "cpu: describe: the description needs %zu bytes, the buffer has %zu", n + 1,
                        len);
    else
        memcpy(json, txt, n + 1);
    free(txt);
    return st;
}

static int cpu_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    (void)self;
    const cpu_kernel *k;
    return pick(spec, kernel, &k, NULL) == NX_OK;
}

static nx_status cpu_run_point(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out, const dev_opts *opts,
                               nx_err *err)
{
    (void)self;
    dev_opts def = {DEV_EAGER, 0, NULL};
    if (!opts)
        opts = &def;
    if (opts->mode != DEV_EAGER && opts->mode != DEV_GRAPHED)
        return nx_err_set(err, NX_EINVAL, "cpu: unknown mode %d", (int)opts->mode);
    const cpu_kernel *k;
    nx_status st = pick(spec, opts->kernel, &k, err);
    if (st || (st = check_inputs(spec, in, err)))
        return st;
    cpu_run r = {spec, in, out, 1, k};
    /* graphed: every thread OpenMP gives, and at least a team of two, so
     * that eager (one thread) and graphed differ in their thread count
     * wherever the campaign runs (OMP_NUM_THREADS=1 included) */
    if (opts->mode == DEV_GRAPHED)
        r.threads = opts->threads > 0 ? opts->threads : omp_get_max_threads() > 1 ? omp_get_max_threads() : 2;
    st = k->run(&r, err);
    if (st)
        nx_err_prefix(err, "cpu: kernel %s", k->id);
    /* the correctly rounded exp, rsqrt and silu (cpu_math.c) fall back to
     * MPFR, which leaves per-thread constant caches in the team's threads:
     * where that ran, they are freed there, as the reference's engines free
     * theirs (a team of a new size brings new threads, whose caches were
     * otherwise left at exit) */
    if (cpu_mpfr_take_used()) {
        if (r.threads > 1) {
#pragma omp parallel num_threads(r.threads)
            mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
        }
        mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    return st;
}

static nx_status cpu_check_params(const dev_backend *self, const fam_spec *spec, const char *kernel, nx_err *err)
{
    (void)self;
    const cpu_kernel *k = spec && spec->family ? kernel_by_id(kernel ? kernel : spec->kernel ? spec->kernel : "") : NULL;
    if (!k || strcmp(k->family, spec->family) != 0)
        return NX_OK;
    return k->check(spec, k, err);
}

static const dev_backend cpu_backend = {"cpu", cpu_available, cpu_describe, cpu_supports, cpu_run_point,
                                        cpu_check_params, 1, NULL, NULL};

const dev_backend *dev_cpu_backend(void)
{
    return &cpu_backend;
}
