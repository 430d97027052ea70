/* ocl_backend.c: libparity_opencl.so, the opencl class's backend
 * (docs/opencl.md): parity_backend.h's table over OpenCL kernels written
 * in OpenCL C (ocl_*.cl, embedded by the build, compiled at run time by
 * the ICD's compiler on the first platform that has a device).
 *
 * The host side converts the inputs to fp32 (exact: bf16 by a shift, fp16
 * from its fields), launches the kernels of the point, and hands back the
 * outputs the kernels rounded to the point's `out` format.  Every kernel
 * realises one tree, fixed by its params; supports() compares the point's
 * filled trees with that text, check_params() refuses the params a kernel
 * cannot take, naming them.  Results never depend on a thread count
 * (threaded = 0): each output's reduction runs in one work-item, or in one
 * work-group in a declared order.
 *
 * PARITY_OPENCL_PLANT plants a bug for the harness to catch (docs/opencl.md):
 * `contract` builds the gemm program without `#pragma OPENCL FP_CONTRACT
 * OFF` (PoCL then fuses a*b + c), `split` runs split-K over twice the
 * declared split count. */
#include <CL/cl.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_sources.h"
#include "parity_backend.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_VEC 64 /* OCL_MAX_VEC of ocl_gemm.cl */

/* ---- the kernels ------------------------------------------------------------------- */

typedef enum kid {
    K_GEMM_SEQ,
    K_GEMM_SEQ_NOFMA,
    K_GEMM_SPLITK,
    K_GEMM_SPLITK_LEGACY,
    K_GEMM_WG,
    K_RMSNORM,
    K_FUSED_ADD_RMSNORM,
    K_SOFTMAX,
    K_COUNT
} kid;

static const struct {
    const char *id, *family, *reduction;
} KERNELS[K_COUNT] = {
    {"ocl_gemm_seq", "gemm", "k"},
    {"ocl_gemm_seq_nofma", "gemm", "k"},
    {"ocl_gemm_splitk", "gemm", "k"},
    {"ocl_gemm_splitk_legacy", "gemm", "k"},
    {"ocl_gemm_wg", "gemm", "k"},
    {"ocl_rmsnorm", "rmsnorm", "sumsq"},
    {"ocl_fused_add_rmsnorm", "rmsnorm", "sumsq"},
    {"ocl_softmax", "softmax", "sum"},
};

#define BUILD_OPTS "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
#define PLANT_OPTS " -DPARITY_OCL_CONTRACT"

/* ---- the device ------------------------------------------------------------------------ */

static struct {
    int tried, ok;
    char why[512];
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    cl_program gemm, norm; /* norm: NULL without cl_khr_fp64 (norm_why says so) */
    char norm_why[256], plant_why[256];
    size_t max_wg;
    int plant_contract, plant_split;
    char gemm_opts[128], norm_opts[128];
} S;

static void sfmt(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sfmt(char *dst, size_t len, const char *fmt, ...)
{
    if (!dst || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, len, fmt, ap);
    va_end(ap);
}

static cl_program build(const char *const *srcs, cl_uint n, const char *opts, char *why, size_t len)
{
    cl_int e;
    cl_program p = clCreateProgramWithSource(S.ctx, n, (const char **)srcs, NULL, &e);
    if (e != CL_SUCCESS) {
        sfmt(why, len, "opencl: clCreateProgramWithSource failed (%d)", (int)e);
        return NULL;
    }
    e = clBuildProgram(p, 1, &S.device, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[384] = "";
        clGetProgramBuildInfo(p, S.device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        log[sizeof log - 1] = 0;
        for (char *c = log; *c; c++)
            if (*c == '\n')
                *c = ' ';
        sfmt(why, len, "opencl: building the kernels (%s) failed (%d): %s", opts, (int)e, log);
        clReleaseProgram(p);
        return NULL;
    }
    return p;
}

static int dev_has_ext(const char *ext)
{
    size_t n = 0;
    if (clGetDeviceInfo(S.device, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || !n)
        return 0;
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(S.device, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
        s[n] = 0;
        size_t k = strlen(ext);
        for (const char *c = s; (c = strstr(c, ext)); c += k)
            if ((c == s || c[-1] == ' ') && (c[k] == ' ' || c[k] == 0))
                found = 1;
    }
    free(s);
    return found;
}

/* Once: the first platform with a device, its context, queue and programs. */
static int init(void)
{
    if (S.tried)
        return S.ok;
    S.tried = 1;
    const char *plant = getenv("PARITY_OPENCL_PLANT");
    if (plant && *plant) {
        if (!strcmp(plant, "contract"))
            S.plant_contract = 1;
        else if (!strcmp(plant, "split"))
            S.plant_split = 1;
        else /* every run's error, never an absent device (a class skipped) */
            sfmt(S.plant_why, sizeof S.plant_why, "PARITY_OPENCL_PLANT = '%s': not a plant (contract, split)", plant);
    }
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        sfmt(S.why, sizeof S.why, "no OpenCL platform found (clGetPlatformIDs: %d, %u platforms)", (int)e, np);
        return 0;
    }
    cl_platform_id pl[16];
    if (np > 16)
        np = 16;
    if (clGetPlatformIDs(np, pl, NULL) != CL_SUCCESS) {
        sfmt(S.why, sizeof S.why, "no OpenCL platform found (clGetPlatformIDs failed)");
        return 0;
    }
    cl_uint i;
    for (i = 0; i < np; i++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(pl[i], CL_DEVICE_TYPE_ALL, 1, &S.device, &nd) == CL_SUCCESS && nd > 0)
            break;
    }
    if (i == np) {
        sfmt(S.why, sizeof S.why, "no OpenCL device on %u platform(s)", np);
        return 0;
    }
    S.platform = pl[i];
    S.ctx = clCreateContext(NULL, 1, &S.device, NULL, NULL, &e);
    if (!S.ctx) {
        sfmt(S.why, sizeof S.why, "opencl: clCreateContext failed (%d)", (int)e);
        return 0;
    }
    S.q = clCreateCommandQueue(S.ctx, S.device, 0, &e);
    if (!S.q) {
        sfmt(S.why, sizeof S.why, "opencl: clCreateCommandQueue failed (%d)", (int)e);
        return 0;
    }
    clGetDeviceInfo(S.device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof S.max_wg, &S.max_wg, NULL);
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(S.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    if (!(fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) || !(fp & CL_FP_DENORM) || !(fp & CL_FP_FMA)) {
        sfmt(S.why, sizeof S.why, "opencl: the device's fp32 lacks %s (CL_DEVICE_SINGLE_FP_CONFIG)",
             !(fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "correctly rounded divide and sqrt"
             : !(fp & CL_FP_DENORM)                        ? "denormals"
                                                           : "IEEE fma");
        return 0;
    }
    sfmt(S.gemm_opts, sizeof S.gemm_opts, "%s%s", BUILD_OPTS, S.plant_contract ? PLANT_OPTS : "");
    sfmt(S.norm_opts, sizeof S.norm_opts, "%s", BUILD_OPTS);
    const char *gsrc[] = {ocl_round_src, ocl_gemm_src};
    if (!(S.gemm = build(gsrc, 2, S.gemm_opts, S.why, sizeof S.why)))
        return 0;
    if (dev_has_ext("cl_khr_fp64")) {
        const char *nsrc[] = {ocl_round_src, ocl_math_src, ocl_norm_src};
        if (!(S.norm = build(nsrc, 3, S.norm_opts, S.why, sizeof S.why)))
            return 0;
    } else
        sfmt(S.norm_why, sizeof S.norm_why, "opencl: rmsnorm and softmax need cl_khr_fp64 (their cr rsqrt, exp)");
    S.ok = 1;
    return 1;
}

static int b_available(char *why, size_t len)
{
    if (init())
        return 1;
    sfmt(why, len, "%s", S.why);
    return 0;
}

/* ---- describe ------------------------------------------------------------------------ */

static void jstr(char *dst, size_t len, size_t *at, const char *key, const char *val)
{
    if (*at >= len)
        return;
    size_t k = *at;
    k += (size_t)snprintf(dst + k, k < len ? len - k : 0, "%s\"%s\": \"", k > 1 ? ", " : "", key);
    for (const unsigned char *c = (const unsigned char *)val; *c && k + 8 < len; c++) {
        if (*c == '"' || *c == '\\')
            k += (size_t)snprintf(dst + k, len - k, "\\%c", *c);
        else if (*c < 0x20)
            k += (size_t)snprintf(dst + k, len - k, "\\u%04x", *c);
        else
            dst[k++] = (char)*c;
    }
    if (k + 1 < len)
        dst[k++] = '"';
    if (k < len)
        dst[k] = 0;
    *at = k;
}

static void info_str(int dev, cl_uint what, char *out, size_t len)
{
    out[0] = 0;
    cl_int e = dev ? clGetDeviceInfo(S.device, what, len - 1, out, NULL)
                   : clGetPlatformInfo(S.platform, what, len - 1, out, NULL);
    if (e != CL_SUCCESS)
        snprintf(out, len, "unknown");
    out[len - 1] = 0;
}

static int b_describe(char *json, size_t len)
{
    if (!json || len < 64)
        return 1;
    if (!init()) {
        snprintf(json, len, "{\"backend\": \"opencl\", \"available\": false}");
        return 0;
    }
    char pname[256], pver[256], dname[256], dver[256], drv[256], cver[256], buf[512];
    info_str(0, CL_PLATFORM_NAME, pname, sizeof pname);
    info_str(0, CL_PLATFORM_VERSION, pver, sizeof pver);
    info_str(1, CL_DEVICE_NAME, dname, sizeof dname);
    info_str(1, CL_DEVICE_VERSION, dver, sizeof dver);
    info_str(1, CL_DRIVER_VERSION, drv, sizeof drv);
    info_str(1, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    size_t at = 1;
    json[0] = '{';
    json[1] = 0;
    jstr(json, len, &at, "backend", "opencl");
    jstr(json, len, &at, "sku", dname);
    jstr(json, len, &at, "platform", pname);
    jstr(json, len, &at, "platform_version", pver);
    jstr(json, len, &at, "device", dname);
    jstr(json, len, &at, "device_version", dver);
    jstr(json, len, &at, "driver", drv);
    jstr(json, len, &at, "opencl_c", cver);
    jstr(json, len, &at, "build_options_gemm", S.gemm_opts);
    jstr(json, len, &at, "build_options_norm", S.norm ? S.norm_opts : "(not built: no cl_khr_fp64)");
    jstr(json, len, &at, "fp_contract", S.plant_contract ? "ON (planted: the pragma left out)" : "OFF (pragma)");
    snprintf(buf, sizeof buf, "%s", S.plant_contract ? "contract" : S.plant_split ? "split" : "none");
    jstr(json, len, &at, "plant", buf);
    buf[0] = 0;
    for (int k = 0; k < K_COUNT; k++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", k ? "," : "", KERNELS[k].id);
    jstr(json, len, &at, "kernels", buf);
    if (at + 2 >= len)
        return 1;
    json[at++] = '}';
    json[at] = 0;
    return 0;
}

/* ---- params ---------------------------------------------------------------------------- */

typedef enum fmt { F_FP32 = 0, F_BF16 = 1, F_FP16 = 2 } fmt; /* OCL_FP32 ... of ocl_round.cl */

static const char *fmt_dtype(fmt f)
{
    return f == F_FP32 ? "F32" : f == F_BF16 ? "BF16" : "F16";
}

static int get_fmt(const parity_point *p, const char *key, const char *dflt, fmt *f, char *why, size_t len)
{
    const char *v = parity_param(p, key);
    if (!v)
        v = dflt;
    if (!strcmp(v, "fp32"))
        *f = F_FP32;
    else if (!strcmp(v, "bf16"))
        *f = F_BF16;
    else if (!strcmp(v, "fp16"))
        *f = F_FP16;
    else {
        sfmt(why, len, "param '%s' = '%s': the opencl kernels take fp32, bf16, fp16", key, v);
        return 1;
    }
    return 0;
}

/* An integer param in [lo, hi]; dflt < 0: required. */
static int get_long(const parity_point *p, const char *key, long dflt, long lo, long hi, long *out, char *why,
                    size_t len)
{
    const char *v = parity_param(p, key);
    if (!v) {
        if (dflt < 0) {
            sfmt(why, len, "param '%s' missing", key);
            return 1;
        }
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        sfmt(why, len, "param '%s' = '%s': not an integer in [%ld, %ld]", key, v, lo, hi);
        return 1;
    }
    *out = x;
    return 0;
}

static int get_f32(const parity_point *p, const char *key, const char *dflt, float *out, char *why, size_t len)
{
    const char *v = parity_param(p, key);
    if (!v)
        v = dflt;
    char *end;
    errno = 0;
    float x = strtof(v, &end); /* glibc: correctly rounded, hex floats too */
    if (end == v || *end || (errno && errno != ERANGE)) {
        sfmt(why, len, "param '%s' = '%s': not a number", key, v);
        return 1;
    }
    *out = x;
    return 0;
}

static int get_bool(const parity_point *p, const char *key, int dflt, int *out, char *why, size_t len)
{
    const char *v = parity_param(p, key);
    if (!v)
        *out = dflt;
    else if (!strcmp(v, "true"))
        *out = 1;
    else if (!strcmp(v, "false"))
        *out = 0;
    else {
        sfmt(why, len, "param '%s' = '%s': not true or false", key, v);
        return 1;
    }
    return 0;
}

static int pow2(long v)
{
    return v >= 1 && (v & (v - 1)) == 0;
}

typedef struct args {
    kid k;
    long M, N, K, T, H, split, vec, wg;
    fmt in, out;
    float alpha, beta, eps;
    int bias, residual;
} args;

static const char *reduction_tree(const parity_point *p, const char *name)
{
    for (size_t i = 0; i < p->nreductions; i++)
        if (!strcmp(p->reductions[i].key, name))
            return p->reductions[i].value;
    return NULL;
}

static int find_kernel(const parity_point *p, const char *kernel, kid *k, char *why, size_t len)
{
    const char *id = kernel ? kernel : p->kernel;
    if (!id) {
        sfmt(why, len, "opencl: %s.%s names no kernel", p->family, p->point);
        return 1;
    }
    for (int i = 0; i < K_COUNT; i++)
        if (!strcmp(KERNELS[i].id, id)) {
            if (strcmp(KERNELS[i].family, p->family)) {
                sfmt(why, len, "opencl: kernel %s is a %s kernel, the point is %s.%s", id, KERNELS[i].family,
                     p->family, p->point);
                return 1;
            }
            *k = (kid)i;
            return 0;
        }
    sfmt(why, len, "opencl: no kernel %s", id);
    return 1;
}

/* The params of the point for kernel k, checked; shape params only when
 * `shape` is set (supports and check_params see the point's own). */
static int parse(const parity_point *p, kid k, args *a, int shape, char *why, size_t len)
{
    memset(a, 0, sizeof *a);
    a->k = k;
    const char *fam = KERNELS[k].family;
    const long DMAX = 0xffffffffL;
    if (get_long(p, "vec", 8, 1, 1L << 30, &a->vec, why, len))
        return 1;
    if (!strcmp(fam, "gemm")) {
        if (get_fmt(p, "in", "bf16", &a->in, why, len) || get_fmt(p, "out", "bf16", &a->out, why, len) ||
            get_long(p, "split_k", 1, 1, 1L << 20, &a->split, why, len) ||
            get_long(p, "wg", 32, 1, 1L << 30, &a->wg, why, len) || get_f32(p, "alpha", "1", &a->alpha, why, len) ||
            get_f32(p, "beta", "0", &a->beta, why, len) || get_bool(p, "bias", 0, &a->bias, why, len))
            return 1;
        if (shape && (get_long(p, "M", -1, 0, DMAX, &a->M, why, len) || get_long(p, "N", -1, 0, DMAX, &a->N, why, len) ||
                      get_long(p, "K", -1, 0, DMAX, &a->K, why, len)))
            return 1;
        if ((k == K_GEMM_SPLITK || k == K_GEMM_SPLITK_LEGACY) && (!pow2(a->vec) || a->vec > MAX_VEC)) {
            sfmt(why, len, "param 'vec' = %ld: kernel %s takes a power of two up to %d", a->vec, KERNELS[k].id,
                 MAX_VEC);
            return 1;
        }
        if (k == K_GEMM_WG && (!pow2(a->wg) || (size_t)a->wg > S.max_wg)) {
            sfmt(why, len, "param 'wg' = %ld: kernel %s takes a power of two up to the device's work-group size %zu",
                 a->wg, KERNELS[k].id, S.max_wg);
            return 1;
        }
        return 0;
    }
    if (!pow2(a->vec) || a->vec > MAX_VEC || (size_t)a->vec > S.max_wg) {
        sfmt(why, len, "param 'vec' = %ld: kernel %s takes a power of two up to %d (one work-item a lane)", a->vec,
             KERNELS[k].id, MAX_VEC);
        return 1;
    }
    if (get_fmt(p, "in", "bf16", &a->in, why, len))
        return 1;
    const char *in_name = a->in == F_FP32 ? "fp32" : a->in == F_BF16 ? "bf16" : "fp16";
    if (get_fmt(p, "out", in_name, &a->out, why, len))
        return 1;
    if (shape && (get_long(p, "T", -1, 0, DMAX, &a->T, why, len) || get_long(p, "H", -1, 0, 1L << 24, &a->H, why, len)))
        return 1;
    if (!strcmp(fam, "rmsnorm")) {
        if (get_f32(p, "eps", "1e-6", &a->eps, why, len) || get_bool(p, "residual", 0, &a->residual, why, len))
            return 1;
        if (!(a->eps >= 0)) {
            sfmt(why, len, "param 'eps' = %g: must be >= 0", (double)a->eps);
            return 1;
        }
        int want = k == K_FUSED_ADD_RMSNORM;
        if (a->residual != want) {
            sfmt(why, len, "param 'residual' = %s: kernel %s runs residual = %s", a->residual ? "true" : "false",
                 KERNELS[k].id, want ? "true" : "false");
            return 1;
        }
    }
    if (!S.norm && S.ok) {
        sfmt(why, len, "%s", S.norm_why);
        return 1;
    }
    return 0;
}

/* The tree kernel k realises for these params (docs/numerics.md's
 * canonical spelling). */
static void kernel_tree(const args *a, char *t, size_t len)
{
    switch (a->k) {
    case K_GEMM_SEQ:
    case K_GEMM_SEQ_NOFMA:
        snprintf(t, len, "seq");
        break;
    case K_GEMM_SPLITK:
    case K_GEMM_SPLITK_LEGACY:
        snprintf(t, len, "split(%ld, stride(%ld, seq, pairwise), seq)", a->split, a->vec);
        break;
    case K_GEMM_WG:
        snprintf(t, len, "stride(%ld, seq, halving)", a->wg);
        break;
    default:
        snprintf(t, len, "stride(%ld, seq, pairwise)", a->vec);
        break;
    }
}

static int check_tree(const parity_point *p, const args *a, char *why, size_t len)
{
    char want[128];
    kernel_tree(a, want, sizeof want);
    const char *red = KERNELS[a->k].reduction, *have = reduction_tree(p, red);
    if (!have || strcmp(have, want)) {
        sfmt(why, len, "opencl: kernel %s realises %s: %s; %s.%s declares %s", KERNELS[a->k].id, red, want, p->family,
             p->point, have ? have : "none");
        return 1;
    }
    return 0;
}

static int b_supports(const parity_point *p, const char *kernel)
{
    char why[256];
    kid k;
    args a;
    if (!init() || find_kernel(p, kernel, &k, why, sizeof why))
        return 0;
    if (strcmp(KERNELS[k].family, "gemm") && !S.norm)
        return 0;
    /* a param the kernel refuses is check_params' answer, with its name */
    if (parse(p, k, &a, 0, why, sizeof why))
        return 1;
    return !check_tree(p, &a, why, sizeof why);
}

static int b_check_params(const parity_point *p, const char *kernel, char *why, size_t len)
{
    kid k;
    args a;
    if (!init()) {
        sfmt(why, len, "%s", S.why);
        return 1;
    }
    if (S.plant_why[0]) {
        sfmt(why, len, "%s", S.plant_why);
        return 1;
    }
    if (find_kernel(p, kernel, &k, why, len) || parse(p, k, &a, 1, why, len) || check_tree(p, &a, why, len))
        return 1;
    return 0;
}

/* ---- inputs and outputs ---------------------------------------------------------------- */

static int seterr(parity_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seterr(parity_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    return 1;
}

/* The input `name`: present, of dtype f, shape [d0(, d1)]. */
static const parity_tensor *input(parity_run *r, const char *name, fmt f, int ndim, long d0, long d1)
{
    const parity_tensor *t = parity_input(r, name);
    size_t esz = f == F_FP32 ? 4 : 2;
    if (!t) {
        seterr(r, "opencl: input '%s' missing", name);
        return NULL;
    }
    int ok = !strcmp(t->dtype, fmt_dtype(f)) && t->ndim == ndim && t->shape[0] == d0 && (ndim < 2 || t->shape[1] == d1);
    if (ok && t->nbytes != (size_t)d0 * (size_t)(ndim < 2 ? 1 : d1) * esz)
        ok = 0;
    if (ok && t->nbytes && !t->data)
        ok = 0;
    if (!ok) {
        if (ndim == 2)
            seterr(r, "opencl: input '%s': want %s [%ld, %ld], have %s of %d dims (%zu bytes)", name, fmt_dtype(f), d0,
                   d1, t->dtype, t->ndim, t->nbytes);
        else
            seterr(r, "opencl: input '%s': want %s [%ld], have %s of %d dims (%zu bytes)", name, fmt_dtype(f), d0,
                   t->dtype, t->ndim, t->nbytes);
        return NULL;
    }
    return t;
}

static float bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float fp16_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0) { /* zero or subnormal: m 2^-24, exact */
        float f = (float)m * 0x1p-24f;
        memcpy(&u, &f, sizeof u);
        u |= sign;
    } else if (e == 31)
        u = sign | 0x7f800000u | (m << 13);
    else
        u = sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The tensor's elements as fp32 (exact), in a new buffer of at least one element. */
static float *decode(const parity_tensor *t, fmt f, size_t n)
{
    float *o = malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return NULL;
    const uint16_t *h = t->data;
    if (f == F_FP32)
        memcpy(o, t->data, n * sizeof *o);
    else if (f == F_BF16)
        for (size_t i = 0; i < n; i++)
            o[i] = bf16_value(h[i]);
    else
        for (size_t i = 0; i < n; i++)
            o[i] = fp16_value(h[i]);
    return o;
}

/* ---- launching ------------------------------------------------------------------------- */

#define NBUF 12
typedef struct launch {
    cl_mem buf[NBUF];
    int nbuf;
    cl_kernel kern[3];
    int nkern;
    parity_run *r;
} launch;

static void launch_free(launch *L)
{
    for (int i = 0; i < L->nbuf; i++)
        if (L->buf[i])
            clReleaseMemObject(L->buf[i]);
    for (int i = 0; i < L->nkern; i++)
        if (L->kern[i])
            clReleaseKernel(L->kern[i]);
}

/* A device buffer of n bytes (at least 4), filled from src when given. */
static cl_mem dbuf(launch *L, size_t n, const void *src)
{
    cl_int e = CL_SUCCESS;
    if (L->nbuf >= NBUF)
        return NULL;
    cl_mem m = n && src ? clCreateBuffer(S.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, (void *)src, &e)
                        : clCreateBuffer(S.ctx, CL_MEM_READ_WRITE, n ? n : 4, NULL, &e);
    if (!m) {
        seterr(L->r, "opencl: clCreateBuffer(%zu bytes) failed (%d)", n, (int)e);
        return NULL;
    }
    L->buf[L->nbuf++] = m;
    return m;
}

static cl_kernel kern(launch *L, cl_program p, const char *name)
{
    cl_int e;
    cl_kernel k = clCreateKernel(p, name, &e);
    if (!k) {
        seterr(L->r, "opencl: clCreateKernel(%s) failed (%d)", name, (int)e);
        return NULL;
    }
    L->kern[L->nkern++] = k;
    return k;
}

/* Arguments by a list of (size, pointer) pairs, ended by size 0. */
static int set_args(launch *L, cl_kernel k, const char *name, ...)
{
    va_list ap;
    va_start(ap, name);
    cl_uint i = 0;
    for (;;) {
        size_t sz = va_arg(ap, size_t);
        if (!sz)
            break;
        const void *ptr = va_arg(ap, const void *);
        cl_int e = clSetKernelArg(k, i, sz, ptr);
        if (e != CL_SUCCESS) {
            va_end(ap);
            return seterr(L->r, "opencl: %s: argument %u: clSetKernelArg failed (%d)", name, i, (int)e);
        }
        i++;
    }
    va_end(ap);
    return 0;
}

static int enqueue(launch *L, cl_kernel k, const char *name, cl_uint dims, const size_t *global, const size_t *local)
{
    for (cl_uint d = 0; d < dims; d++)
        if (!global[d])
            return 0; /* nothing to do */
    cl_int e = clEnqueueNDRangeKernel(S.q, k, dims, NULL, global, local, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return seterr(L->r, "opencl: launching %s failed (%d)", name, (int)e);
    return 0;
}

static int read_out(launch *L, cl_mem m, void *dst, size_t n)
{
    if (!n)
        return 0;
    cl_int e = clEnqueueReadBuffer(S.q, m, CL_TRUE, 0, n, dst, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return seterr(L->r, "opencl: reading the output failed (%d)", (int)e);
    return 0;
}

#define A(x) sizeof(x), (const void *)&(x)

static int run_gemm(parity_run *r, const args *a)
{
    size_t M = (size_t)a->M, N = (size_t)a->N, K = (size_t)a->K, MN = M * N;
    if (M * K > 0xffffffffu || N * K > 0xffffffffu || MN > 0xffffffffu)
        return seterr(r, "opencl: gemm: M = %zu, N = %zu, K = %zu: an operand over 2^32 elements", M, N, K);
    const parity_tensor *ta = input(r, "a", a->in, 2, a->M, a->K), *tb = ta ? input(r, "b", a->in, 2, a->N, a->K) : NULL;
    const parity_tensor *tc = NULL, *tbias = NULL;
    if (!tb)
        return 1;
    int use_c = a->beta != 0;
    if (use_c && !(tc = input(r, "c", a->out, 2, a->M, a->N)))
        return 1;
    if (a->bias && !(tbias = input(r, "bias", F_FP32, 1, a->N, 0)))
        return 1;
    int64_t shape[2] = {a->M, a->N};
    void *y = r->output(r, "y", fmt_dtype(a->out), 2, shape);
    if (!y)
        return seterr(r, "opencl: output 'y' %s [%zu, %zu] refused", fmt_dtype(a->out), M, N);
    if (!MN)
        return 0;
    launch L = {.r = r};
    float *ha = decode(ta, a->in, M * K), *hb = decode(tb, a->in, N * K);
    float *hc = tc ? decode(tc, a->out, MN) : NULL, *hbias = tbias ? decode(tbias, F_FP32, N) : NULL;
    int rc = 1;
    if (!ha || !hb || (tc && !hc) || (tbias && !hbias)) {
        seterr(r, "opencl: out of memory");
        goto done;
    }
    cl_uint uM = (cl_uint)M, uN = (cl_uint)N, uK = (cl_uint)K, uMN = (cl_uint)MN;
    cl_uint S_ = (cl_uint)a->split * (S.plant_split ? 2u : 1u), V = (cl_uint)a->vec;
    cl_mem da = dbuf(&L, M * K * 4, ha), db = da ? dbuf(&L, N * K * 4, hb) : NULL, dacc = db ? dbuf(&L, MN * 4, NULL) : NULL;
    if (!dacc)
        goto done;
    size_t g2[2] = {N, M};
    cl_kernel k;
    switch (a->k) {
    case K_GEMM_SEQ:
    case K_GEMM_SEQ_NOFMA: {
        const char *name = a->k == K_GEMM_SEQ ? "gemm_seq" : "gemm_seq_nofma";
        if (!(k = kern(&L, S.gemm, name)) || set_args(&L, k, name, A(uM), A(uN), A(uK), A(da), A(db), A(dacc), (size_t)0) ||
            enqueue(&L, k, name, 2, g2, NULL))
            goto done;
        break;
    }
    case K_GEMM_SPLITK: {
        if ((size_t)S_ * MN > 0xffffffffu) {
            seterr(r, "opencl: gemm: split_k x M x N over 2^32 partials");
            goto done;
        }
        cl_mem dpart = dbuf(&L, (size_t)S_ * MN * 4, NULL);
        size_t g3[3] = {N, M, S_}, g1[1] = {MN};
        cl_kernel k2;
        if (!dpart || !(k = kern(&L, S.gemm, "gemm_split_part")) ||
            set_args(&L, k, "gemm_split_part", A(uM), A(uN), A(uK), A(S_), A(V), A(da), A(db), A(dpart), (size_t)0) ||
            enqueue(&L, k, "gemm_split_part", 3, g3, NULL) || !(k2 = kern(&L, S.gemm, "gemm_split_sum")) ||
            set_args(&L, k2, "gemm_split_sum", A(uMN), A(S_), A(dpart), A(dacc), (size_t)0) ||
            enqueue(&L, k2, "gemm_split_sum", 1, g1, NULL))
            goto done;
        break;
    }
    case K_GEMM_SPLITK_LEGACY:
        if (!(k = kern(&L, S.gemm, "gemm_split_legacy")) ||
            set_args(&L, k, "gemm_split_legacy", A(uM), A(uN), A(uK), A(S_), A(V), A(da), A(db), A(dacc), (size_t)0) ||
            enqueue(&L, k, "gemm_split_legacy", 2, g2, NULL))
            goto done;
        break;
    case K_GEMM_WG: {
        size_t W = (size_t)a->wg, gw[2] = {N * W, M}, lw[2] = {W, 1}, kwg = 0;
        if (!(k = kern(&L, S.gemm, "gemm_wg")))
            goto done;
        clGetKernelWorkGroupInfo(k, S.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL);
        if (kwg && W > kwg) {
            seterr(r, "param 'wg' = %zu: over the kernel's work-group size %zu on this device", W, kwg);
            goto done;
        }
        if (set_args(&L, k, "gemm_wg", A(uM), A(uN), A(uK), A(da), A(db), A(dacc), W * sizeof(float), (const void *)NULL,
                     (size_t)0) ||
            enqueue(&L, k, "gemm_wg", 2, gw, lw))
            goto done;
        break;
    }
    default:
        seterr(r, "opencl: not a gemm kernel");
        goto done;
    }
    cl_mem dc = dbuf(&L, hc ? MN * 4 : 0, hc), dbias = dc ? dbuf(&L, hbias ? N * 4 : 0, hbias) : NULL;
    size_t ysz = MN * (a->out == F_FP32 ? 4 : 2);
    cl_mem dy = dbias ? dbuf(&L, ysz, NULL) : NULL, dummy = dy ? dbuf(&L, 4, NULL) : NULL;
    if (!dummy)
        goto done;
    cl_uint uc = (cl_uint)use_c, ub = (cl_uint)a->bias, of = (cl_uint)a->out;
    cl_mem y32 = a->out == F_FP32 ? dy : dummy, y16 = a->out == F_FP32 ? dummy : dy;
    size_t g1[1] = {MN};
    if (!(k = kern(&L, S.gemm, "gemm_epilogue")) ||
        set_args(&L, k, "gemm_epilogue", A(uM), A(uN), A(dacc), A(a->alpha), A(a->beta), A(uc), A(dc), A(ub), A(dbias),
                 A(of), A(y32), A(y16), (size_t)0) ||
        enqueue(&L, k, "gemm_epilogue", 1, g1, NULL) || read_out(&L, dy, y, ysz))
        goto done;
    rc = 0;
done:
    launch_free(&L);
    free(ha);
    free(hb);
    free(hc);
    free(hbias);
    return rc;
}

static int run_rows(parity_run *r, const args *a)
{
    size_t T = (size_t)a->T, H = (size_t)a->H, TH = T * H, V = (size_t)a->vec;
    int rms = a->k != K_SOFTMAX, res = a->k == K_FUSED_ADD_RMSNORM;
    if (TH > 0xffffffffu)
        return seterr(r, "opencl: T x H = %zu x %zu: over 2^32 elements", T, H);
    const parity_tensor *tx = input(r, "x", a->in, 2, a->T, a->H), *tw = NULL, *tr = NULL;
    if (!tx || (rms && !(tw = input(r, "weight", a->in, 1, a->H, 0))) || (res && !(tr = input(r, "residual", a->in, 2, a->T, a->H))))
        return 1;
    int64_t shape[2] = {a->T, a->H};
    void *y = r->output(r, "y", fmt_dtype(a->out), 2, shape), *ro = NULL;
    if (!y)
        return seterr(r, "opencl: output 'y' %s [%zu, %zu] refused", fmt_dtype(a->out), T, H);
    if (res && !(ro = r->output(r, "residual_out", fmt_dtype(a->in), 2, shape)))
        return seterr(r, "opencl: output 'residual_out' %s [%zu, %zu] refused", fmt_dtype(a->in), T, H);
    if (!TH)
        return 0;
    launch L = {.r = r};
    float *hx = decode(tx, a->in, TH), *hw = tw ? decode(tw, a->in, H) : NULL, *hr = tr ? decode(tr, a->in, TH) : NULL;
    int rc = 1;
    if (!hx || (tw && !hw) || (tr && !hr)) {
        seterr(r, "opencl: out of memory");
        goto done;
    }
    size_t ysz = TH * (a->out == F_FP32 ? 4 : 2), rsz = res ? TH * (a->in == F_FP32 ? 4 : 2) : 0;
    cl_mem dx = dbuf(&L, TH * 4, hx), dscr = dx ? dbuf(&L, TH * 4, NULL) : NULL, dy = dscr ? dbuf(&L, ysz, NULL) : NULL;
    cl_mem dummy = dy ? dbuf(&L, 4, NULL) : NULL;
    if (!dummy)
        goto done;
    cl_uint uT = (cl_uint)T, uH = (cl_uint)H, of = (cl_uint)a->out, inf = (cl_uint)a->in, ur = (cl_uint)res;
    cl_mem y32 = a->out == F_FP32 ? dy : dummy, y16 = a->out == F_FP32 ? dummy : dy;
    size_t g[1] = {T * V}, l[1] = {V};
    cl_kernel k;
    if (rms) {
        cl_mem dw = dbuf(&L, H * 4, hw), dres = dw ? dbuf(&L, hr ? TH * 4 : 0, hr) : NULL;
        cl_mem dro = dres ? dbuf(&L, rsz, NULL) : NULL;
        if (!dro)
            goto done;
        cl_mem r32 = a->in == F_FP32 ? dro : dummy, r16 = a->in == F_FP32 ? dummy : dro;
        if (!(k = kern(&L, S.norm, "rmsnorm")) ||
            set_args(&L, k, "rmsnorm", A(uT), A(uH), A(a->eps), A(ur), A(inf), A(dx), A(dres), A(dw), A(dscr), A(of),
                     A(y32), A(y16), A(r32), A(r16), V * sizeof(float), (const void *)NULL, (size_t)0) ||
            enqueue(&L, k, "rmsnorm", 1, g, l) || read_out(&L, dy, y, ysz) || (res && read_out(&L, dro, ro, rsz)))
            goto done;
    } else if (!(k = kern(&L, S.norm, "softmax")) ||
               set_args(&L, k, "softmax", A(uT), A(uH), A(dx), A(dscr), A(of), A(y32), A(y16), V * sizeof(float),
                        (const void *)NULL, (size_t)0) ||
               enqueue(&L, k, "softmax", 1, g, l) || read_out(&L, dy, y, ysz))
        goto done;
    rc = 0;
done:
    launch_free(&L);
    free(hx);
    free(hw);
    free(hr);
    return rc;
}

static int b_run(parity_run *r)
{
    if (!r || !r->point)
        return 1;
    r->error[0] = 0;
    if (!init())
        return seterr(r, "%s", S.why);
    if (S.plant_why[0])
        return seterr(r, "%s", S.plant_why);
    const parity_point *p = r->point;
    kid k;
    args a;
    if (find_kernel(p, r->kernel, &k, r->error, sizeof r->error) || parse(p, k, &a, 1, r->error, sizeof r->error) ||
        check_tree(p, &a, r->error, sizeof r->error))
        return 1;
    int rc = !strcmp(KERNELS[k].family, "gemm") ? run_gemm(r, &a) : run_rows(r, &a);
    if (!rc) {
        cl_int e = clFinish(S.q);
        if (e != CL_SUCCESS)
            return seterr(r, "opencl: clFinish failed (%d)", (int)e);
    }
    return rc;
}

static const parity_backend BACKEND = {
    .abi = PARITY_BACKEND_ABI,
    .name = "opencl",
    .threaded = 0,
    .available = b_available,
    .describe = b_describe,
    .supports = b_supports,
    .check_params = b_check_params,
    .nondeterministic = NULL,
    .run = b_run,
};

EXPORT const parity_backend *parity_backend_v1(void)
{
    return &BACKEND;
}
