/* cuda_stub.c: dev_cuda_backend() in a build without CUDA (no nvcc found,
 * or -DPARITY_CUDA=OFF): never available, says why, runs nothing. */
#include "cuda_backend.h"

#include <stdio.h>
#include <string.h>

#define STUB_REASON "built without CUDA (configure with nvcc on PATH and -DPARITY_CUDA=ON)"

void dev_cuda_info_get(dev_cuda_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->reason, sizeof info->reason, "%s", STUB_REASON);
    snprintf(info->driver, sizeof info->driver, "none");
    snprintf(info->runtime, sizeof info->runtime, "none");
    snprintf(info->nvcc, sizeof info->nvcc, "none");
}

static int stub_available(const dev_backend *self, char *why, size_t whylen)
{
    (void)self;
    if (why && whylen)
        snprintf(why, whylen, "%s", STUB_REASON);
    return 0;
}

static nx_status stub_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    (void)self;
    int n = snprintf(json, len, "{\"backend\": \"cuda\", \"available\": false, \"reason\": \"%s\"}", STUB_REASON);
    if (n < 0 || (size_t)n >= len)
        return nx_err_set(err, NX_EINVAL, "cuda: describe needs %d bytes, got %zu", n + 1, len);
    return NX_OK;
}

static int stub_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    (void)self;
    (void)spec;
    (void)kernel;
    return 0;
}

static nx_status stub_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out, const dev_opts *opts, nx_err *err)
{
    (void)self;
    (void)spec;
    (void)in;
    (void)out;
    (void)opts;
    return nx_err_set(err, NX_EUNSUPPORTED, "skipped: %s", STUB_REASON);
}

static const dev_backend stub_backend = {"cuda", stub_available, stub_describe, stub_supports, stub_run, NULL, 0, NULL, NULL};

const dev_backend *dev_cuda_backend(void)
{
    return &stub_backend;
}
