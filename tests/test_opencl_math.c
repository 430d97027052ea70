/* test_opencl_math.c CL_DIR [STRIDE [fast-only]]: the opencl class's correctly
 * rounded exp and rsqrt (devices/opencl/ocl_math.cl), built here by the
 * ICD with the backend's options and run over fp32 arguments, against
 * MPFR.  exp: every STRIDE-th fp32 argument in [-104, 0] (the softmax's
 * range; default stride 61, about 1.8e7 arguments; 1 is all 1.1e9 of
 * them) and every 997th in (0, 89], with the edges; rsqrt: every 4099th
 * positive fp32 number with the specials.  The expected value is the C
 * library's binary64 function rounded to fp32 where both ends of its
 * interval y(1 +- 2^-44) round alike (far beyond glibc's documented
 * error), else MPFR's correctly rounded value; the cases MPFR decided are
 * counted: they are the ones the kernel's double-double path serves.
 * Then the same exp arguments again with the double-double path forced
 * for every one of them (OCL_EXP_FORCE_DD), so that the rare path is held
 * to MPFR on millions of arguments, not on the few that need it.
 * Exit 77 (said on stdout) without an OpenCL platform or device, or
 * without cl_khr_fp64. */
#include <CL/cl.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *WRAP = "__kernel void t_exp(__global const float *x, __global uint *y)\n"
                          "{ size_t i = get_global_id(0); y[i] = as_uint(ocl_exp_cr(x[i])); }\n"
                          "__kernel void t_rsqrt(__global const float *x, __global uint *y)\n"
                          "{ size_t i = get_global_id(0); y[i] = as_uint(ocl_rsqrt_cr(x[i])); }\n";

static char *slurp(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static unsigned long mpfr_cases;

/* MPFR's fp32 rounding of f(x): 24 bits, the fp32 exponent range, subnormals. */
static float mpfr_f32(float x, int rsqrt)
{
    mpfr_cases++;
    mpfr_t a, y;
    mpfr_init2(a, 24);
    mpfr_init2(y, 24);
    mpfr_set_flt(a, x, MPFR_RNDN);
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    int t = rsqrt ? mpfr_rec_sqrt(y, a, MPFR_RNDN) : mpfr_exp(y, a, MPFR_RNDN);
    t = mpfr_subnormalize(y, t, MPFR_RNDN);
    float r = mpfr_get_flt(y, MPFR_RNDN);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    mpfr_clears(a, y, (mpfr_ptr)0);
    return r;
}

static float expect(float x, int rsqrt)
{
    if (isnan(x))
        return NAN;
    double y = rsqrt ? 1.0 / sqrt((double)x) : exp((double)x);
    if (isinf(y) || y == 0)
        return (float)y;
    double d = fabs(y) * 0x1p-44;
    float lo = (float)(y - d), hi = (float)(y + d);
    if (fbits(lo) == fbits(hi))
        return lo;
    return mpfr_f32(x, rsqrt);
}

static int sweep(cl_kernel kexp, cl_kernel krs, uint32_t stride, int force);

static cl_context ctx;
static cl_command_queue q;
static cl_device_id dev;

static int run_chunk(cl_kernel k, const float *x, uint32_t *y, size_t n)
{
    cl_int e;
    cl_mem dx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, (void *)x, &e);
    cl_mem dy = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, n * 4, NULL, &e);
    if (!dx || !dy)
        return 1;
    clSetKernelArg(k, 0, sizeof dx, &dx);
    clSetKernelArg(k, 1, sizeof dy, &dy);
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clEnqueueReadBuffer(q, dy, CL_TRUE, 0, n * 4, y, 0, NULL, NULL);
    clReleaseMemObject(dx);
    clReleaseMemObject(dy);
    return e != CL_SUCCESS;
}

#define CHUNK (1u << 22)
static float xs[CHUNK];
static uint32_t ys[CHUNK];
static unsigned long checked, bad;

static void flush(cl_kernel k, size_t n, int rsqrt, const char *name)
{
    if (!n)
        return;
    if (run_chunk(k, xs, ys, n)) {
        printf("FAIL: %s: the kernel did not run\n", name);
        bad++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float w = expect(xs[i], rsqrt);
        uint32_t want = isnan(w) ? 0x7fc00000u : fbits(w), got = ys[i];
        if (isnan(w) && isnan(bitsf(got)))
            got = want;
        checked++;
        if (got != want && bad++ < 10)
            printf("FAIL: %s(%a) = 0x%08x, want 0x%08x\n", name, (double)xs[i], got, want);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_opencl_math CL_DIR [STRIDE]\n");
        return 2;
    }
    uint32_t stride = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 61;
    if (!stride)
        stride = 1;
    cl_platform_id pl[8];
    cl_uint np = 0, i;
    if (clGetPlatformIDs(8, pl, &np) != CL_SUCCESS || !np) {
        printf("SKIP: no OpenCL platform found\n");
        return 77;
    }
    for (i = 0; i < np; i++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(pl[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) == CL_SUCCESS && nd)
            break;
    }
    if (i == np) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    char ext[8192] = "";
    clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
    if (!strstr(ext, "cl_khr_fp64")) {
        printf("SKIP: the device has no cl_khr_fp64\n");
        return 77;
    }
    cl_int e;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    q = clCreateCommandQueue(ctx, dev, 0, &e);
    char *round = slurp(argv[1], "ocl_round.cl"), *math = slurp(argv[1], "ocl_math.cl");
    if (!round || !math) {
        printf("FAIL: cannot read ocl_round.cl / ocl_math.cl in %s\n", argv[1]);
        return 1;
    }
    const char *srcs[4] = {"#pragma OPENCL FP_CONTRACT OFF\n", round, math, WRAP};
    int rc = 0;
    int passes = argc > 3 && !strcmp(argv[3], "fast-only") ? 1 : 2; /* [STRIDE [fast-only]] */
    for (int force = 0; force < passes; force++) {
        cl_program p = clCreateProgramWithSource(ctx, 4, srcs, NULL, &e);
        /* the backend's own options (devices/opencl/ocl_backend.c, BUILD_OPTS) */
        const char *opts = force ? "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DOCL_EXP_FORCE_DD"
                                 : "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";
        if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
            char log[8192] = "";
            clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            printf("FAIL: build: %s\n", log);
            return 1;
        }
        cl_kernel kexp = clCreateKernel(p, "t_exp", &e), krs = clCreateKernel(p, "t_rsqrt", &e);
        rc |= sweep(kexp, krs, stride, force);
        clReleaseKernel(kexp);
        clReleaseKernel(krs);
        clReleaseProgram(p);
    }
    return rc;
}

static int sweep(cl_kernel kexp, cl_kernel krs, uint32_t stride, int force)
{
    checked = bad = mpfr_cases = 0;
    size_t n = 0;
    /* exp: the edges and specials, then [-104, 0] by stride, then (0, 89] */
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 89.0f, 88.72283f, 0x1.62e43p+6f, 0x1.62e42ep+6f,
                           -104.0f, -103.97f, -87.33655f, -0x1.9fe368p+6f, -0x1.9d1da0p+6f, 0x1p-149f, -0x1p-149f,
                           0x1p-24f, -0x1p-25f, 1.0f, -1.0f};
    for (size_t j = 0; j < sizeof edges / sizeof edges[0]; j++)
        xs[n++] = edges[j];
    for (uint64_t u = 0x80000000u; u <= 0xc2d00000u; u += stride) { /* -0 ... -104 */
        xs[n++] = bitsf((uint32_t)u);
        if (n == CHUNK)
            flush(kexp, n, 0, "exp_cr"), n = 0;
    }
    for (uint64_t u = 1; u <= 0x42b20000u; u += 997) { /* (0, 89] */
        xs[n++] = bitsf((uint32_t)u);
        if (n == CHUNK)
            flush(kexp, n, 0, "exp_cr"), n = 0;
    }
    flush(kexp, n, 0, "exp_cr");
    if (force) {
        printf("exp_cr, the double-double path forced: %lu arguments (stride %u), %lu decided by MPFR\n", checked,
               stride, mpfr_cases);
        printf("%s: %lu mismatch(es)\n", bad ? "FAIL" : "ok", bad);
        return bad ? 1 : 0;
    }
    unsigned long exp_checked = checked, exp_mpfr = mpfr_cases;
    n = 0;
    const float redges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -1.0f, 0x1p-149f, 0x1p-126f, 0x1.fffffep+127f,
                            1.0f, 4.0f, 2.0f, 0x1.000002p0f, 0x1.fffffep-1f, 1e-6f, 0x1.0c6f7ap-20f};
    for (size_t j = 0; j < sizeof redges / sizeof redges[0]; j++)
        xs[n++] = redges[j];
    for (uint64_t u = 1; u < 0x7f800000u; u += 4099) {
        xs[n++] = bitsf((uint32_t)u);
        if (n == CHUNK)
            flush(krs, n, 1, "rsqrt_cr"), n = 0;
    }
    flush(krs, n, 1, "rsqrt_cr");
    printf("exp_cr: %lu arguments (stride %u), %lu decided by MPFR; rsqrt_cr: %lu arguments, %lu by MPFR\n",
           exp_checked, stride, exp_mpfr, checked - exp_checked, mpfr_cases - exp_mpfr);
    printf("%s: %lu mismatch(es)\n", bad ? "FAIL" : "ok", bad);
    return bad ? 1 : 0;
}
