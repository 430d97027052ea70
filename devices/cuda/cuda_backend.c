/* cuda_backend.c: dev_cuda_backend(), the CUDA class backend of device.h
 * (docs/cuda.md): available (a GPU and a driver, else "no GPU" with CUDA's
 * reason), describe (SKU, SM count, compute capability, driver, runtime and
 * nvcc versions), supports (a kernel whose realised numerics point is the
 * declared one, cuda_plan.c), and run: inputs validated on the host,
 * copied to the device, the family's kernels launched eagerly or captured
 * into a CUDA graph and replayed, outputs copied back.  C17 over the CUDA
 * runtime API; the kernels are in the .cu files. */
#include "cuda_backend.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_plan.h"

#ifndef PARITY_NVCC_VERSION
#define PARITY_NVCC_VERSION "unknown"
#endif

static void version_text(char *buf, size_t len, int v)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void dev_cuda_info_get(dev_cuda_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->nvcc, sizeof info->nvcc, "%s", PARITY_NVCC_VERSION);
    version_text(info->runtime, sizeof info->runtime, CUDART_VERSION);
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
        version_text(info->driver, sizeof info->driver, v);
    else
        snprintf(info->driver, sizeof info->driver, "none");
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        snprintf(info->reason, sizeof info->reason, "no GPU (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device is visible");
        cudaGetLastError(); /* clear it: a missing GPU is not an error of the next call */
        return;
    }
    struct cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "no GPU (device 0: %s)", cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    info->available = 1;
    snprintf(info->sku, sizeof info->sku, "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    const char *cls = cu_class_of_cc(p.major, p.minor);
    snprintf(info->class_name, sizeof info->class_name, "%s", cls ? cls : "");
    info->memory_bytes = (long long)p.totalGlobalMem;
}

static int cuda_available(const dev_backend *self, char *why, size_t whylen)
{
    (void)self;
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    if (!info.available && why && whylen)
        snprintf(why, whylen, "%s", info.reason);
    return info.available;
}

/* JSON string contents: the SKU and the reason are plain text, but escape
 * anyway. */
static void json_str(char *dst, size_t cap, const char *s)
{
    size_t k = 0;
    for (; *s && k + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            dst[k++] = '\\';
            dst[k++] = (char)c;
        } else if (c < 0x20) {
            k += (size_t)snprintf(dst + k, cap - k, "\\u%04x", c);
        } else {
            dst[k++] = (char)c;
        }
    }
    dst[k] = 0;
}

static nx_status cuda_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    (void)self;
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    char sku[512], reason[512], hn[256] = "", host[512];
    json_str(sku, sizeof sku, info.sku);
    json_str(reason, sizeof reason, info.reason);
    if (gethostname(hn, sizeof hn - 1) != 0)
        snprintf(hn, sizeof hn, "unknown");
    json_str(host, sizeof host, hn);
    int n;
    if (!info.available)
        n = snprintf(json, len,
                     "{\"backend\": \"cuda\", \"available\": false, \"reason\": \"%s\", \"host\": \"%s\", "
                     "\"driver\": \"%s\", \"runtime\": \"%s\", \"nvcc\": \"%s\"}",
                     reason, host, info.driver, info.runtime, info.nvcc);
    else
        n = snprintf(json, len,
                     "{\"backend\": \"cuda\", \"available\": true, \"sku\": \"%s\", \"sm_count\": %d, "
                     "\"cc\": \"%d.%d\", \"class\": \"%s\", \"host\": \"%s\", \"driver\": \"%s\", "
                     "\"runtime\": \"%s\", \"nvcc\": \"%s\", \"memory_bytes\": %lld}",
                     sku, info.sm_count, info.cc_major, info.cc_minor, info.class_name, host, info.driver,
                     info.runtime, info.nvcc, info.memory_bytes);
    if (n < 0 || (size_t)n >= len)
        return nx_err_set(err, NX_EINVAL, "cuda: describe needs %d bytes, got %zu", n + 1, len);
    return NX_OK;
}

/* The wgmma kernel's code exists only in an sm_90a build. */
static nx_status wgmma_check(const cu_plan *p, int on_device, nx_err *err)
{
    if (p->kernel->fam != CU_GEMM || !p->u.gemm.wgmma)
        return NX_OK;
#ifndef PARITY_CUDA_WGMMA
    (void)on_device;
    return nx_err_set(err, NX_EUNSUPPORTED,
                      "cuda: kernel %s needs sm_90a code: build with PARITY_CUDA_ARCHITECTURES listing 90a-real",
                      p->kernel->id);
#else
    if (on_device && !cu_wgmma_built())
        return nx_err_set(err, NX_EUNSUPPORTED, "cuda: kernel %s: this GPU does not run the sm_90a code of the build",
                          p->kernel->id);
    return NX_OK;
#endif
}

static int cuda_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    (void)self;
    cu_plan p;
    nx_status st = cu_plan_make(spec, kernel, spec ? spec->class_name : NULL, &p, NULL);
    if (!st)
        st = wgmma_check(&p, 0, NULL);
    cu_plan_free(&p);
    return st == NX_OK;
}

/* ---- run -------------------------------------------------------------------- */

typedef struct dbuf {
    const char *name;
    void *ptr;
} dbuf;

typedef struct run_ctx {
    dbuf in[8];
    size_t nin;
    void *out[2];
    size_t out_bytes[2];
    void *ws[2];
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
} run_ctx;

static nx_status cuda_fail(nx_err *err, const char *what, cudaError_t e)
{
    nx_status code = e == cudaErrorMemoryAllocation ? NX_ENOMEM
                     : e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion ? NX_EUNSUPPORTED
                                                                                                      : NX_EIO;
    nx_status r = nx_err_set(err, code, "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    cudaGetLastError();
    return r;
}

static const void *dev_in(const run_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->nin; i++)
        if (strcmp(c->in[i].name, name) == 0)
            return c->in[i].ptr;
    return NULL;
}

static void ctx_free(run_ctx *c)
{
    if (c->exec)
        cudaGraphExecDestroy(c->exec);
    if (c->graph)
        cudaGraphDestroy(c->graph);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    for (size_t i = 0; i < c->nin; i++)
        cudaFree(c->in[i].ptr);
    for (size_t i = 0; i < 2; i++) {
        cudaFree(c->out[i]);
        cudaFree(c->ws[i]);
    }
    memset(c, 0, sizeof *c);
}

static size_t dtype_size(int cu)
{
    return cu == CU_FP32 ? 4 : 2;
}

static st_dtype st_of(int cu)
{
    return cu == CU_FP32 ? ST_F32 : cu == CU_FP16 ? ST_F16 : ST_BF16;
}

/* Enqueues the plan's kernels on the stream. */
static cudaError_t launch(const cu_plan *p, run_ctx *c)
{
    switch (p->kernel->fam) {
    case CU_GEMM: {
        cu_gemm_args a = {dev_in(c, "a"), dev_in(c, "b"), dev_in(c, "c"), dev_in(c, "bias"), c->out[0], c->ws[0]};
        return (cudaError_t)cu_gemm_launch(&p->u.gemm, &a, c->stream);
    }
    case CU_GEMV_W4A16: {
        cu_gemv_args a = {dev_in(c, "x"), dev_in(c, "qweight"), dev_in(c, "scales"), dev_in(c, "zeros"), c->out[0],
                          c->ws[0]};
        return (cudaError_t)cu_gemv_launch(&p->u.gemv, &a, c->stream);
    }
    case CU_RMSNORM: {
        cu_rms_args a = {dev_in(c, "x"), dev_in(c, "weight"), dev_in(c, "residual"), c->out[0], c->out[1]};
        return (cudaError_t)cu_rms_launch(&p->u.rms, &a, c->stream);
    }
    case CU_ATTN: {
        cu_attn_args a = {dev_in(c, "q"), dev_in(c, "k_cache"), dev_in(c, "v_cache"), dev_in(c, "block_table"),
                          dev_in(c, "context_lens"), c->out[0], c->ws[0], c->ws[1]};
        return (cudaError_t)cu_attn_launch(&p->u.attn, &a, c->stream);
    }
    }
    return cudaErrorInvalidValue;
}

/* The outputs of the plan: names, formats, shapes. */
typedef struct out_desc {
    const char *name;
    int fmt;
    int ndim;
    int64_t shape[3];
} out_desc;

static size_t outputs_of(const cu_plan *p, out_desc *o)
{
    switch (p->kernel->fam) {
    case CU_GEMM:
        o[0] = (out_desc){"y", p->u.gemm.y_out.fmt, 2, {p->u.gemm.M, p->u.gemm.N, 0}};
        return 1;
    case CU_GEMV_W4A16:
        o[0] = (out_desc){"y", p->u.gemv.y_out.fmt, 2, {p->u.gemv.B, p->u.gemv.N, 0}};
        return 1;
    case CU_RMSNORM:
        o[0] = (out_desc){"y", p->u.rms.y_out.fmt, 2, {p->u.rms.T, p->u.rms.H, 0}};
        o[1] = (out_desc){"residual_out", p->u.rms.in, 2, {p->u.rms.T, p->u.rms.H, 0}};
        return p->u.rms.residual ? 2 : 1;
    case CU_ATTN:
        o[0] = (out_desc){"y", p->u.attn.y_out.fmt, 3, {p->u.attn.B, p->u.attn.HQ, p->u.attn.D}};
        return 1;
    }
    return 0;
}

static nx_status cuda_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out, const dev_opts *opts, nx_err *err)
{
    (void)self;
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    if (!info.available)
        return nx_err_set(err, NX_EUNSUPPORTED, "skipped: %s", info.reason);
    if (!spec || !in || !out)
        return nx_err_set(err, NX_EINVAL, "cuda: run needs a spec, inputs and an output file");
    if (!info.class_name[0])
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "cuda: %s has compute capability %d.%d; the kernels are built for sm80, sm89 and sm90",
                          info.sku, info.cc_major, info.cc_minor);
    if (spec->class_name && strcmp(spec->class_name, info.class_name) != 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "cuda: the point is resolved for class %s but %s is class %s",
                          spec->class_name, info.sku, info.class_name);
    cu_plan plan;
    nx_status st = cu_plan_make(spec, opts ? opts->kernel : NULL, info.class_name, &plan, err);
    if (st)
        return st;
    if ((st = wgmma_check(&plan, 1, err)) || (st = cu_check_inputs(spec, in, err))) {
        cu_plan_free(&plan);
        return st;
    }
    run_ctx c;
    memset(&c, 0, sizeof c);
    cudaError_t e;
    out_desc od[2];
    size_t nout = outputs_of(&plan, od);
    if ((e = cudaSetDevice(0)) != cudaSuccess) {
        st = cuda_fail(err, "cudaSetDevice", e);
        goto done;
    }
    if ((e = cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        st = cuda_fail(err, "cudaStreamCreate", e);
        goto done;
    }
    for (size_t i = 0; i < in->ntensors && c.nin < sizeof c.in / sizeof c.in[0]; i++) {
        const st_tensor *t = &in->tensors[i];
        dbuf *d = &c.in[c.nin++];
        d->name = t->name;
        if ((e = cudaMalloc(&d->ptr, t->nbytes ? t->nbytes : 1)) != cudaSuccess ||
            (t->nbytes && (e = cudaMemcpy(d->ptr, t->data, t->nbytes, cudaMemcpyHostToDevice)) != cudaSuccess)) {
            st = cuda_fail(err, t->name, e);
            goto done;
        }
    }
    for (size_t i = 0; i < nout; i++) {
        size_t n = dtype_size(od[i].fmt);
        for (int d = 0; d < od[i].ndim; d++)
            n *= (size_t)od[i].shape[d];
        c.out_bytes[i] = n;
        /* all ones (a NaN in every format): an element a kernel forgot shows */
        if ((e = cudaMalloc(&c.out[i], n)) != cudaSuccess || (e = cudaMemset(c.out[i], 0xff, n)) != cudaSuccess) {
            st = cuda_fail(err, "output", e);
            goto done;
        }
    }
    size_t ws0 = 0, ws1 = 0;
    switch (plan.kernel->fam) {
    case CU_GEMM: ws0 = plan.u.gemm.ws_bytes; break;
    case CU_GEMV_W4A16: ws0 = plan.u.gemv.ws_bytes; break;
    case CU_RMSNORM: break;
    case CU_ATTN:
        ws0 = plan.u.attn.prob_bytes;
        ws1 = plan.u.attn.part_bytes;
        break;
    }
    if ((ws0 && (e = cudaMalloc(&c.ws[0], ws0)) != cudaSuccess) ||
        (ws1 && (e = cudaMalloc(&c.ws[1], ws1)) != cudaSuccess)) {
        st = cuda_fail(err, "workspace", e);
        goto done;
    }
    if (opts && opts->mode == DEV_GRAPHED) {
        /* captured once, replayed twice: the second replay's outputs are returned */
        if ((e = cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal)) != cudaSuccess) {
            st = cuda_fail(err, "cudaStreamBeginCapture", e);
            goto done;
        }
        cudaError_t le = launch(&plan, &c);
        e = cudaStreamEndCapture(c.stream, &c.graph);
        if (le != cudaSuccess || e != cudaSuccess) {
            st = cuda_fail(err, "graph capture", le != cudaSuccess ? le : e);
            goto done;
        }
        if ((e = cudaGraphInstantiate(&c.exec, c.graph, 0)) != cudaSuccess) {
            st = cuda_fail(err, "cudaGraphInstantiate", e);
            goto done;
        }
        for (int r = 0; r < 2; r++)
            if ((e = cudaGraphLaunch(c.exec, c.stream)) != cudaSuccess) {
                st = cuda_fail(err, "cudaGraphLaunch", e);
                goto done;
            }
    } else if ((e = launch(&plan, &c)) != cudaSuccess) {
        st = cuda_fail(err, "kernel launch", e);
        goto done;
    }
    if ((e = cudaStreamSynchronize(c.stream)) != cudaSuccess) {
        st = cuda_fail(err, "kernel", e);
        goto done;
    }
    /* copied back first, added to `out` only when every copy worked */
    void *host[2] = {NULL, NULL};
    for (size_t i = 0; i < nout && !st; i++) {
        if (!(host[i] = malloc(c.out_bytes[i])))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        else if ((e = cudaMemcpy(host[i], c.out[i], c.out_bytes[i], cudaMemcpyDeviceToHost)) != cudaSuccess)
            st = cuda_fail(err, "copy back", e);
    }
    for (size_t i = 0; i < nout && !st; i++) {
        st_tensor *t = NULL;
        if ((st = st_add_tensor(out, od[i].name, st_of(od[i].fmt), od[i].ndim, od[i].shape, &t, err)))
            break;
        if (t->nbytes != c.out_bytes[i])
            st = nx_err_set(err, NX_EINTERNAL, "cuda: output %s: %zu bytes on the device, %llu expected",
                            od[i].name, c.out_bytes[i], (unsigned long long)t->nbytes);
        else
            memcpy(t->data, host[i], c.out_bytes[i]);
    }
    free(host[0]);
    free(host[1]);
    if (st)
        goto done;
    /* which kernel ran and the point it realised, for traces ("x." keys) */
    if (!st_get_meta(out, "x.cuda.kernel"))
        st_add_meta(out, "x.cuda.kernel", plan.kernel->id, NULL);
    if (plan.alias_of[0] && !st_get_meta(out, "x.cuda.serves"))
        st_add_meta(out, "x.cuda.serves", plan.alias_of, NULL);
    for (size_t i = 0; i < plan.nreds; i++) {
        char key[64];
        snprintf(key, sizeof key, "x.cuda.numerics.%s", plan.red_names[i]);
        if (plan.realised[i] && !st_get_meta(out, key))
            st_add_meta(out, key, plan.realised[i], NULL);
    }
done:
    ctx_free(&c);
    cu_plan_free(&plan);
    return st;
}

static const dev_backend cuda_backend = {"cuda", cuda_available, cuda_describe, cuda_supports, cuda_run, NULL, 0, NULL, NULL};

const dev_backend *dev_cuda_backend(void)
{
    return &cuda_backend;
}
