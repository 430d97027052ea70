/* ext_gemm.c: an out-of-tree backend library written against
 * devices/ext/parity_backend.h alone (no other header of parity), as a
 * vendor would write one: gemm at point `seq` (one fmaf chain over K per
 * output, fp32 accumulator, the fp32 epilogue of docs/families.md, the
 * output rounded to nearest even).  Kernels ext_gemm_seq and its legacy
 * ext_gemm_seq_legacy (the same point, column by column).
 *
 * EXT_GEMM_PLANT plants a port bug for the tests that must see it fail:
 * "reverse" sums K from the end, "nofma" rounds each product, "legacy"
 * breaks only the legacy kernel (the last term dropped), "flaky" sums K
 * from the end on every second call (a kernel whose runs differ).
 * EXT_GEMM_NONDET=1 declares the kernels nondeterministic on purpose.
 * Kernel ext_gemm_seq_slow is ext_gemm_seq computed twice where M * N * K
 * is at least 2^20 (a model's shapes), once below (the small preset): the
 * same bits, slower only at a real shape, for the gate's timing test (its
 * legacy twin ext_gemm_seq_slow_legacy is ext_gemm_seq_legacy). */
#include "parity_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float from_bits(const parity_tensor *t, size_t i)
{
    if (!strcmp(t->dtype, "F32")) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)t->data + 2 * i, 2);
    if (!strcmp(t->dtype, "BF16")) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static void to_bits(const char *dtype, void *data, size_t i, float f)
{
    if (!strcmp(dtype, "F32")) {
        memcpy((char *)data + 4 * i, &f, 4);
        return;
    }
    uint16_t h;
    if (!strcmp(dtype, "BF16")) {
        uint32_t u;
        memcpy(&u, &f, 4);
        if (isnan(f))
            h = (uint16_t)((u >> 16) | 0x40);
        else
            h = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    } else {
        _Float16 x = (_Float16)f;
        memcpy(&h, &x, 2);
    }
    memcpy((char *)data + 2 * i, &h, 2);
}

static const char *dtype_of(const char *fmt)
{
    return !fmt ? NULL : !strcmp(fmt, "bf16") ? "BF16" : !strcmp(fmt, "fp16") ? "F16" : !strcmp(fmt, "fp32") ? "F32" : NULL;
}

static int is_kernel(const char *k)
{
    return k && (!strcmp(k, "ext_gemm_seq") || !strcmp(k, "ext_gemm_seq_legacy") || !strcmp(k, "ext_gemm_seq_slow") ||
                 !strcmp(k, "ext_gemm_seq_slow_legacy"));
}

static int supports(const parity_point *p, const char *kernel)
{
    const char *k = kernel ? kernel : p->kernel;
    if (strcmp(p->family, "gemm") || !is_kernel(k))
        return 0;
    const char *in = parity_param(p, "in"), *out = parity_param(p, "out");
    return dtype_of(in ? in : "bf16") && dtype_of(out ? out : "bf16");
}

static int check_params(const parity_point *p, const char *kernel, char *why, size_t len)
{
    (void)kernel;
    for (size_t i = 0; i < p->nreductions; i++)
        if (!strcmp(p->reductions[i].key, "k") && strcmp(p->reductions[i].value, "seq")) {
            snprintf(why, len, "reduction k = '%s': this kernel reduces seq only", p->reductions[i].value);
            return 1;
        }
    return 0;
}

static long dim(const parity_point *p, const char *name)
{
    const char *v = parity_param(p, name);
    return v ? strtol(v, NULL, 10) : -1;
}

static int run(parity_run *r)
{
    const parity_point *p = r->point;
    long M = dim(p, "M"), N = dim(p, "N"), K = dim(p, "K");
    const parity_tensor *a = parity_input(r, "a"), *b = parity_input(r, "b"), *c = parity_input(r, "c"),
                        *bias = parity_input(r, "bias");
    const char *out = parity_param(p, "out"), *od = dtype_of(out ? out : "bf16");
    const char *as = parity_param(p, "alpha"), *bs = parity_param(p, "beta"), *bb = parity_param(p, "bias");
    float alpha = as ? strtof(as, NULL) : 1.0f, beta = bs ? strtof(bs, NULL) : 0.0f;
    int use_bias = bb && !strcmp(bb, "true");
    if (M < 1 || N < 1 || K < 1 || !a || !b || !od || (beta != 0 && !c) || (use_bias && !bias)) {
        snprintf(r->error, sizeof r->error, "gemm: bad shape or missing input (M=%ld N=%ld K=%ld)", M, N, K);
        return 1;
    }
    if ((long)a->shape[0] != M || (long)a->shape[1] != K || (long)b->shape[0] != N || (long)b->shape[1] != K) {
        snprintf(r->error, sizeof r->error, "gemm: a or b is not [M, K] / [N, K]");
        return 1;
    }
    int64_t shape[2] = {M, N};
    void *y = r->output(r, "y", od, 2, shape);
    if (!y)
        return 1;
    const char *plant = getenv("EXT_GEMM_PLANT");
    int legacy = r->kernel && strstr(r->kernel, "_legacy") != NULL;
    static unsigned calls;
    calls++;
    int reverse = plant && (!strcmp(plant, "reverse") || (!strcmp(plant, "flaky") && calls % 2 == 0)), nofma = plant && !strcmp(plant, "nofma");
    long kend = legacy && plant && !strcmp(plant, "legacy") ? K - 1 : K;
    const char *kk = r->kernel ? r->kernel : p->kernel;
    int twice = kk && !strcmp(kk, "ext_gemm_seq_slow") && M * N * K >= (1L << 20);
    for (int pass = 0; pass <= twice; pass++)
    for (long jj = 0; jj < M * N; jj++) {
        /* legacy: column by column; new: row by row (the same bits) */
        long i = legacy ? jj % M : jj / N, j = legacy ? jj / M : jj % N;
        float acc = 0.0f;
        for (long t = 0; t < kend; t++) {
            long k = reverse ? K - 1 - t : t;
            float x = from_bits(a, (size_t)(i * K + k)), w = from_bits(b, (size_t)(j * K + k));
            acc = nofma ? acc + x * w : fmaf(x, w, acc);
        }
        float v = alpha * acc;
        if (beta != 0)
            v = v + beta * from_bits(c, (size_t)(i * N + j));
        if (use_bias)
            v = v + from_bits(bias, (size_t)j);
        to_bits(od, y, (size_t)(i * N + j), v);
    }
    return 0;
}

static int describe(char *json, size_t len)
{
    int n = snprintf(json, len, "{\"sku\": \"ext-gemm\", \"library\": \"ext_gemm 1.0\", \"plant\": \"%s\"}",
                     getenv("EXT_GEMM_PLANT") ? getenv("EXT_GEMM_PLANT") : "none");
    return n < 0 || (size_t)n >= len;
}

static int nondeterministic(const parity_point *p, const char *kernel)
{
    (void)p;
    (void)kernel;
    const char *v = getenv("EXT_GEMM_NONDET");
    return v && !strcmp(v, "1");
}

static const parity_backend TABLE = {PARITY_BACKEND_ABI, "ext-gemm", 0, NULL, describe, supports, check_params,
                                     nondeterministic, run};

const parity_backend *parity_backend_v1(void)
{
    return &TABLE;
}
