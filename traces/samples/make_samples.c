/* make_samples.c: writes the sample traces of traces/samples/ through the
 * capture API, as a user's host code would (docs/traces.md).
 *
 *   trace_samples DIR
 *
 * The GEMM samples hold small integers: every product and partial sum is
 * exact in fp32 and every result exact in bf16, so y is the true result
 * under every numerics point (any reduction tree gives the same bits).
 * Their times and host are fixed, so a rerun gives the same bytes
 * (test_trace checks the committed files against a fresh run).  Built with
 * SAMPLES_NO_MAIN, the file provides samples_write to the tests. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"

#define SM 4   /* rows of the sample problem */
#define SN 16
#define SK 32

/* Logical row m of a and row n of b: integers in -2..2. */
static int a_val(int m, int k) { return (m * 7 + k * 3) % 5 - 2; }
static int b_val(int n, int k) { return (n * 3 + k * 2 + 1) % 5 - 2; }

/* bf16 of an integer of magnitude <= 256 (8 significant bits: exact):
 * the high half of its fp32 pattern. */
static uint16_t bf16_of_int(int v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

/* e4m3 of -2..2 (bias 7: 1.0 = 0x38, 2.0 = 0x40; sign in bit 7). */
static uint8_t e4m3_of_small(int v)
{
    static const uint8_t mag[3] = {0x00, 0x38, 0x40};
    return (uint8_t)(mag[v < 0 ? -v : v] | (v < 0 ? 0x80 : 0));
}

static int dot(int m, int n)
{
    int s = 0;
    for (int k = 0; k < SK; k++)
        s += a_val(m, k) * b_val(n, k);
    return s;
}

/* The GEMM y = a . b^T over the logical rows rows[0..nr), in that order. */
static nx_status gemm_sample(const char *path, const char *point,
                             const char *kernel, int e4m3, const int *rows,
                             int nr, const char *batch, const char *mode,
                             unsigned run, nx_err *err)
{
    parity_capture *cap = parity_capture_begin(path, "gemm", point, "cpu",
                                               kernel);
    parity_capture_device(cap, "host", "sample");
    parity_capture_device(cap, "sku", "sample-device");
    parity_capture_device(cap, "cpu", "any");
    parity_capture_device_int(cap, "threads", 1);
    parity_capture_dim(cap, "M", nr);
    parity_capture_dim(cap, "N", SN);
    parity_capture_dim(cap, "K", SK);
    parity_capture_param(cap, "alpha", "1");
    parity_capture_param(cap, "beta", "0");
    parity_capture_param(cap, "bias", "false");
    parity_capture_param(cap, "in", e4m3 ? "e4m3" : "bf16");
    parity_capture_param(cap, "out", "bf16");
    parity_capture_mode(cap, mode);
    parity_capture_run(cap, run);
    parity_capture_batch(cap, batch);
    parity_capture_created(cap, "2026-01-01T00:00:00Z");

    uint16_t a16[SM * SK], b16[SN * SK], y[SM * SN];
    uint8_t a8[SM * SK], b8[SN * SK];
    for (int i = 0; i < nr; i++)
        for (int k = 0; k < SK; k++) {
            a16[i * SK + k] = bf16_of_int(a_val(rows[i], k));
            a8[i * SK + k] = e4m3_of_small(a_val(rows[i], k));
        }
    for (int n = 0; n < SN; n++)
        for (int k = 0; k < SK; k++) {
            b16[n * SK + k] = bf16_of_int(b_val(n, k));
            b8[n * SK + k] = e4m3_of_small(b_val(n, k));
        }
    for (int i = 0; i < nr; i++)
        for (int n = 0; n < SN; n++)
            y[i * SN + n] = bf16_of_int(dot(rows[i], n));
    int64_t ash[2] = {nr, SK}, bsh[2] = {SN, SK}, ysh[2] = {nr, SN};
    const char *dt = e4m3 ? "e4m3" : "bf16";
    parity_capture_input(cap, "a", dt, 2, ash, e4m3 ? (const void *)a8 : a16);
    parity_capture_input(cap, "b", dt, 2, bsh, e4m3 ? (const void *)b8 : b16);
    parity_capture_output(cap, "y", "bf16", 2, ysh, y);
    return parity_capture_end(cap, err);
}

/* An rmsnorm run recorded by its seed alone.  The input generator is the
 * campaign's, not this program's: the outputs are zeros, a sample of the
 * format and not of a run, and x.note says so. */
static nx_status seed_sample(const char *path, nx_err *err)
{
    parity_capture *cap = parity_capture_begin(path, "rmsnorm", "sumsq_seq",
                                               "cpu", "sample.format_only");
    parity_capture_device(cap, "host", "sample");
    parity_capture_device(cap, "sku", "sample-device");
    parity_capture_shape(cap, "T=2,H=8");
    parity_capture_params(cap, "eps=1e-06,residual=false");
    parity_capture_seed(cap, 42, "normal");
    parity_capture_mode(cap, "eager");
    parity_capture_run(cap, 0);
    parity_capture_batch_rows(cap, 0, 2);
    parity_capture_created(cap, "2026-01-01T00:00:00Z");
    parity_capture_meta(cap, "x.note", "format sample: y is zeros, not the "
                        "output of a run on the inputs of seed 42");
    uint16_t y[2 * 8] = {0};
    int64_t ysh[2] = {2, 8};
    parity_capture_output(cap, "y", "BF16", 2, ysh, y);
    return parity_capture_end(cap, err);
}

nx_status samples_write(const char *dir, nx_err *err);

nx_status samples_write(const char *dir, nx_err *err)
{
    char p[1024];
    nx_status rc;
    static const int all[SM] = {0, 1, 2, 3};
    static const int perm[SM] = {3, 1, 0, 2};
    static const int row2[1] = {2};
#define SAMPLE_PATH(name) \
    (snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p ? p : "")
    if ((rc = gemm_sample(SAMPLE_PATH("gemm_bf16_rows_eager.safetensors"),
                          "bf16_seq", "cpu.gemm.bf16.v1", 0, all, SM,
                          "rows=0..3", "eager", 0, err)) ||
        (rc = gemm_sample(SAMPLE_PATH("gemm_bf16_perm_graphed.safetensors"),
                          "bf16_seq", "cpu.gemm.bf16.v1", 0, perm, SM,
                          "perm=3,1,0,2", "graphed", 1, err)) ||
        (rc = gemm_sample(SAMPLE_PATH("gemm_e4m3_row2.safetensors"),
                          "e4m3_seq", "cpu.gemm.e4m3.v1", 1, row2, 1, "rows=2",
                          "eager", 0, err)) ||
        (rc = seed_sample(SAMPLE_PATH("rmsnorm_seed_only.safetensors"), err)))
        return rc;
#undef SAMPLE_PATH
    return NX_OK;
}

#ifndef SAMPLES_NO_MAIN
int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trace_samples DIR\n");
        return 2;
    }
    nx_err err;
    if (samples_write(argv[1], &err) != NX_OK) {
        fprintf(stderr, "trace_samples: %s\n", err.msg);
        return 1;
    }
    return 0;
}
#endif
