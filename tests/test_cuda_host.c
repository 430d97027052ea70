/* test_cuda_host.c: the CUDA backend without a GPU (devices/cuda,
 * docs/cuda.md): launch configuration (grids, blocks, split sizes and
 * workspaces, independent of the batch size), the check of declared points
 * against the kernels' claims, every claim parsed and expanded at sample
 * shapes, input validation, the correctly rounded exp and rsqrt of
 * cr_math.h against MPFR, and the skip: available() says why not, run()
 * fails cleanly.
 *
 * PARITY_EXHAUSTIVE=1 (the `long` test test_cuda_host_exhaustive) checks
 * exp and rsqrt on every binary32 input instead of a sample. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>
#include <mpfr.h>

#include "cr_math.h"
#include "cuda_backend.h"
#include "cuda_plan.h"
#include "point_toml.h"
#include "nx_program.h"
#include "refimpl.h"
#include "registry.h"
#include "testutil.h"

/* ---- building specs by hand ---------------------------------------------- */

static void spec_init(fam_spec *s, const char *family, const char *cls)
{
    memset(s, 0, sizeof *s);
    s->family = strdup(family);
    s->point = strdup("test");
    s->class_name = strdup(cls);
}

static void param(fam_spec *s, const char *k, const char *v)
{
    nx_err e = {0};
    if (fam_spec_set_param(s, k, v, &e) != NX_OK)
        fail_msg("param %s: %s", k, e.msg);
}

static void red(fam_spec *s, const char *name, const char *toml)
{
    nx_point pt;
    nx_err e = {0};
    if (pt_from_text(toml, name, &pt, &e) != NX_OK)
        fail_msg("point %s: %s", toml, e.msg);
    char *tree = nx_tree_print(pt.tree);
    if (fam_spec_add_reduction(s, name, &pt, tree, &e) != NX_OK)
        fail_msg("reduction %s: %s", name, e.msg);
    free(tree);
}

static cu_plan plan_ok(const fam_spec *s)
{
    cu_plan p;
    nx_err e = {0};
    if (cu_plan_make(s, NULL, NULL, &p, &e) != NX_OK)
        fail_msg("cu_plan_make: %s", e.msg);
    return p;
}

static void plan_fails(const fam_spec *s, const char *kernel, nx_status code, const char *needle)
{
    cu_plan p;
    nx_err e = {0};
    nx_status st = cu_plan_make(s, kernel, NULL, &p, &e);
    cu_plan_free(&p);
    if (st != code)
        fail_msg("kernel %s: expected %s, got %s: %s", kernel ? kernel : "(default)", nx_status_name(code), nx_status_name(st), e.msg);
    if (needle && !strstr(e.msg, needle))
        fail_msg("message lacks '%s': %s", needle, e.msg);
}

#define GEMM_K(tree) "{ acc = \"fp32\", tree = \"" tree "\", atom = { preset = \"sm80.mma.bf16\" }, out = \"fp32\" }"

static void gemm_spec(fam_spec *s, const char *cls, long M, long N, long K, const char *ktoml)
{
    char v[32];
    spec_init(s, "gemm", cls);
    snprintf(v, sizeof v, "%ld", M);
    param(s, "M", v);
    snprintf(v, sizeof v, "%ld", N);
    param(s, "N", v);
    snprintf(v, sizeof v, "%ld", K);
    param(s, "K", v);
    red(s, "k", ktoml);
}

/* ---- launch configuration ----------------------------------------------------- */

static void test_gemm_plan(void **state)
{
    (void)state;
    fam_spec s;
    gemm_spec(&s, "sm80", 16, 4096, 4096, GEMM_K("split(4, chain(8), seq, align=32)"));
    cu_plan p = plan_ok(&s);
    const cu_gemm_cfg *c = &p.u.gemm;
    assert_string_equal(p.kernel->id, "cuda_gemm_mma");
    assert_int_equal(c->has_split, 1);
    assert_int_equal(c->S, 4);
    assert_int_equal(c->slice, 1024);
    assert_int_equal(c->main.grid[0], 4096 / CU_GEMM_TILE_N);
    assert_int_equal(c->main.grid[1], 1);
    assert_int_equal(c->main.grid[2], 4);
    assert_int_equal(c->main.block[0], 128);
    assert_int_equal(c->ws_bytes, (size_t)4 * 16 * 4096 * 4);
    assert_int_equal(c->combine.grid[0], 16 * 4096 / 256);
    assert_int_equal(c->in, CU_BF16);
    assert_int_equal(c->y_out.fmt, CU_BF16); /* param out defaults to bf16 */
    assert_int_equal(c->has_beta, 0);
    assert_true(c->alpha == 1.0f);
    cu_plan_free(&p);
    fam_spec_free(&s);

    /* c = ceil(1000 / 3) = 334, up to the align 32: 352; partial tiles */
    gemm_spec(&s, "sm89", 33, 130, 1000, GEMM_K("split(3, chain(8), seq, align=32)"));
    param(&s, "beta", "0.5");
    param(&s, "bias", "true");
    param(&s, "out", "fp16");
    p = plan_ok(&s);
    c = &p.u.gemm;
    assert_int_equal(c->slice, 352);
    assert_int_equal(c->main.grid[0], 2);
    assert_int_equal(c->main.grid[1], 3);
    assert_int_equal(c->main.grid[2], 3);
    assert_int_equal(c->has_beta, 1);
    assert_int_equal(c->has_bias, 1);
    assert_int_equal(c->c_fmt, CU_FP16);
    assert_true(c->beta == 0.5f);
    cu_plan_free(&p);
    fam_spec_free(&s);

    /* no split: the chain over all of K, no workspace (the mma.sync kernel
     * on Hopper: one 16-term step with wgmma's atom) */
    gemm_spec(&s, "sm90", 1, 8, 64,
              "{ acc = \"fp32\", tree = \"chain(16)\", atom = { frac_bits = 25, term_round = \"rz\", round = \"rz\", "
              "acc = \"fp32\" }, out = \"fp32\" }");
    s.kernel = strdup("cuda_gemm_mma");
    p = plan_ok(&s);
    assert_string_equal(p.kernel->id, "cuda_gemm_mma");
    assert_int_equal(p.u.gemm.has_split, 0);
    assert_int_equal(p.u.gemm.slice, 64);
    assert_int_equal(p.u.gemm.main.grid[2], 1);
    assert_int_equal(p.u.gemm.ws_bytes, 0);
    assert_int_equal(cu_plan_workspace(&p), 0);
    cu_plan_free(&p);
    fam_spec_free(&s);
}

#define GEMV_K(tree) "{ acc = \"fp32\", tree = \"" tree "\", out = \"fp16\" }"

static void gemv_spec(fam_spec *s, long B, const char *policy, const char *ktoml)
{
    char v[32];
    spec_init(s, "gemv_w4a16", "sm80");
    snprintf(v, sizeof v, "%ld", B);
    param(s, "B", v);
    param(s, "N", "14336");
    param(s, "K", "4096");
    param(s, "group", "128");
    param(s, "scale_apply", policy);
    red(s, "k", ktoml);
    if (!strcmp(policy, "per_group"))
        red(s, "group", "{ acc = \"fp32\", tree = \"seq\" }");
}

static void test_gemv_plan(void **state)
{
    (void)state;
    fam_spec s;
    gemv_spec(&s, 1, "per_element", GEMV_K("split(2, stride(32, seq, halving, block=8), seq)"));
    cu_plan p = plan_ok(&s);
    const cu_gemv_cfg *c = &p.u.gemv;
    assert_string_equal(p.kernel->id, "cuda_gemv_w4a16_dequant");
    assert_int_equal(c->per_group, 0);
    assert_int_equal(c->V, 8);
    assert_int_equal(c->S, 2);
    assert_int_equal(c->slice, 2048);
    assert_int_equal(c->main.grid[0], 14336 / 4);
    assert_int_equal(c->main.grid[1], 1);
    assert_int_equal(c->main.grid[2], 2);
    assert_int_equal(c->main.block[0], 128);
    assert_int_equal(c->ws_bytes, (size_t)2 * 14336 * 4);
    assert_int_equal(c->y_out.fmt, CU_FP16);
    cu_plan_free(&p);
    fam_spec_free(&s);

    gemv_spec(&s, 3, "per_group", GEMV_K("stride(32, seq, halving)"));
    p = plan_ok(&s);
    c = &p.u.gemv;
    assert_string_equal(p.kernel->id, "cuda_gemv_w4a16_grouped");
    assert_int_equal(c->per_group, 1);
    assert_int_equal(c->has_split, 0);
    assert_int_equal(c->slice, 4096 / 128); /* groups */
    assert_int_equal(c->main.grid[1], 3);
    assert_int_equal(c->group_out.fmt, CU_FP32);
    assert_int_equal(c->ws_bytes, 0);
    cu_plan_free(&p);
    fam_spec_free(&s);

    /* the policy's kernel: the dequant kernel cannot run per_group */
    gemv_spec(&s, 1, "per_group", GEMV_K("stride(32, seq, halving)"));
    plan_fails(&s, "cuda_gemv_w4a16_dequant", NX_EUNSUPPORTED, "per_group");
    fam_spec_free(&s);
}

static void test_rms_attn_plan(void **state)
{
    (void)state;
    fam_spec s;
    spec_init(&s, "rmsnorm", "sm90");
    param(&s, "T", "7");
    param(&s, "H", "4096");
    param(&s, "residual", "true");
    red(&s, "sumsq", "{ acc = \"fp32\", tree = \"stride(256, seq, halving, block=8)\" }");
    cu_plan p = plan_ok(&s);
    assert_int_equal(p.u.rms.L, 256);
    assert_int_equal(p.u.rms.V, 8);
    assert_int_equal(p.u.rms.main.grid[0], 7);
    assert_int_equal(p.u.rms.main.block[0], 256);
    assert_int_equal(p.u.rms.residual, 1);
    assert_true(p.u.rms.eps == 1e-6f);
    cu_plan_free(&p);
    fam_spec_free(&s);
    /* L must be a power of two the CTA can hold */
    spec_init(&s, "rmsnorm", "sm90");
    param(&s, "T", "7");
    param(&s, "H", "4096");
    red(&s, "sumsq", "{ acc = \"fp32\", tree = \"stride(96, seq, halving)\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "power of two");
    fam_spec_free(&s);

    spec_init(&s, "paged_decode_attention", "sm80");
    param(&s, "B", "2");
    param(&s, "HQ", "32");
    param(&s, "HKV", "8");
    param(&s, "D", "128");
    param(&s, "P", "16");
    param(&s, "NP", "64");
    param(&s, "MAXP", "32");
    param(&s, "split", "128");
    red(&s, "qk", "{ tree = \"seq\" }");
    red(&s, "softmax_sum", "{ tree = \"stride(128, seq, halving)\" }");
    red(&s, "pv", "{ tree = \"seq\", out = \"bf16\" }");
    red(&s, "combine", "{ tree = \"seq\" }");
    p = plan_ok(&s);
    const cu_attn_cfg *a = &p.u.attn;
    assert_int_equal(a->nsplit_max, 32 * 16 / 128);
    assert_int_equal(a->main.grid[0], 4);
    assert_int_equal(a->main.grid[1], 32);
    assert_int_equal(a->main.grid[2], 2);
    assert_int_equal(a->main.block[0], CU_ATTN_THREADS);
    assert_int_equal(a->combine.grid[0], 32);
    assert_int_equal(a->combine.grid[1], 2);
    assert_int_equal(a->combine.smem, 4 * sizeof(float));
    assert_int_equal(a->prob_bytes, (size_t)2 * 32 * 512 * 4);
    assert_int_equal(a->part_bytes, (size_t)2 * 32 * 4 * 130 * 4);
    assert_int_equal(a->pv_out.fmt, CU_BF16);
    assert_int_equal(a->y_out.fmt, CU_BF16);
    /* fp32(1/sqrt(128)) = 2^-3.5 correctly rounded */
    assert_true(a->scale == (float)(1.0 / sqrt(128.0)));
    assert_int_equal(p.nreds, 4);
    cu_plan_free(&p);
    fam_spec_free(&s);
}

/* The batch size never changes a split, a slice or a per-row launch shape:
 * only the batch axis of the grid grows (row invariance). */
static void test_batch_independent(void **state)
{
    (void)state;
    long Bs[] = {1, 2, 5, 16};
    long slice0 = -1, S0 = -1;
    for (size_t i = 0; i < 4; i++) {
        fam_spec s;
        gemv_spec(&s, Bs[i], "per_element", GEMV_K("split(4, stride(32, seq, halving, block=8), seq)"));
        cu_plan p = plan_ok(&s);
        if (i == 0) {
            slice0 = p.u.gemv.slice;
            S0 = p.u.gemv.S;
        }
        assert_int_equal(p.u.gemv.slice, slice0);
        assert_int_equal(p.u.gemv.S, S0);
        assert_int_equal(p.u.gemv.main.grid[0], 14336 / 4);
        assert_int_equal(p.u.gemv.main.grid[1], Bs[i]);
        cu_plan_free(&p);
        fam_spec_free(&s);

        gemm_spec(&s, "sm80", Bs[i], 4096, 4096, GEMM_K("split(4, chain(8), seq, align=32)"));
        p = plan_ok(&s);
        assert_int_equal(p.u.gemm.slice, 1024);
        assert_int_equal(p.u.gemm.S, 4);
        assert_int_equal(p.u.gemm.main.grid[0], 4096 / CU_GEMM_TILE_N);
        cu_plan_free(&p);
        fam_spec_free(&s);
    }
}

/* ---- declared vs realised ------------------------------------------------------- */

static void test_mismatch(void **state)
{
    (void)state;
    fam_spec s;
    /* a tree the kernel does not run */
    gemm_spec(&s, "sm80", 4, 8, 64, "{ acc = \"fp32\", tree = \"seq\", out = \"fp32\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "split({S}, chain(8), seq)");
    fam_spec_free(&s);
    /* Hopper's wgmma point on Ada: there is only mma.sync, chain(8) */
    gemm_spec(&s, "sm89", 4, 8, 64,
              "{ acc = \"fp32\", tree = \"chain(16)\", atom = { preset = \"sm90.wgmma.bf16\" }, out = \"fp32\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "chain(8)");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "kernels tried: cuda_gemm_wgmma cuda_gemm_mma");
    fam_spec_free(&s);
    /* the tree matches, the atom's frac_bits do not (Hopper's k16 step has
     * 25, measured) */
    gemm_spec(&s, "sm90", 4, 8, 64,
              "{ acc = \"fp32\", tree = \"chain(16)\", atom = { frac_bits = 24, term_round = \"rz\", round = \"rz\", "
              "acc = \"fp32\" }, out = \"fp32\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "frac_bits = 25");
    fam_spec_free(&s);
    /* Ampere's point on Hopper: mma.sync there is one 16-term step, not
     * two 8-term ones; no kernel realises chain(8) on sm90 */
    gemm_spec(&s, "sm90", 4, 8, 64,
              "{ acc = \"fp32\", tree = \"chain(8)\", atom = \"sm80.mma.bf16\", out = \"fp32\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "chain(16)");
    fam_spec_free(&s);
    /* no fma: the kernel fuses */
    gemv_spec(&s, 1, "per_element", "{ acc = \"fp32\", fma = false, tree = \"stride(32, seq, halving, block=8)\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "fma = true");
    fam_spec_free(&s);
    /* an accumulator the kernel does not use */
    gemv_spec(&s, 1, "per_element", "{ acc = \"fp16\", tree = \"stride(32, seq, halving, block=8)\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "acc = \"fp32\"");
    fam_spec_free(&s);
    /* an output rounding the kernels cannot apply */
    gemv_spec(&s, 1, "per_element",
              "{ acc = \"fp32\", tree = \"stride(32, seq, halving, block=8)\", out = \"fp16\", out_rounding = "
              "\"rna\" }");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "rna");
    fam_spec_free(&s);
    /* an exp approximation the kernel does not have (cr or ex2.approx.ftz.f32) */
    spec_init(&s, "paged_decode_attention", "sm89");
    const char *dims[][2] = {{"B", "1"}, {"HQ", "4"}, {"HKV", "2"}, {"D", "16"}, {"P", "4"}, {"NP", "8"},
                             {"MAXP", "4"}};
    for (size_t i = 0; i < 7; i++)
        param(&s, dims[i][0], dims[i][1]);
    red(&s, "qk", "{ tree = \"seq\" }");
    red(&s, "softmax_sum", "{ tree = \"stride(128, seq, halving)\" }");
    red(&s, "pv", "{ tree = \"seq\" }");
    assert_int_equal(fam_spec_add_elem(&s, "exp", FAM_ELEM_APPROX, "expf_poly3", 8, NULL), NX_OK);
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "expf_poly3");
    fam_spec_free(&s);
    /* kernels and classes the backend does not have */
    gemm_spec(&s, "sm80", 4, 8, 64, GEMM_K("chain(8)"));
    plan_fails(&s, "cuda_rmsnorm", NX_EINVAL, "rmsnorm");
    plan_fails(&s, NULL, NX_OK, NULL);
    /* a legacy id to compare against is never served by the same kernel */
    s.kernel = strdup("gemm_bf16_tc_128x128x32");
    plan_fails(&s, "gemm_bf16_tc_legacy", NX_EUNSUPPORTED, "gemm_bf16_tc_legacy");
    fam_spec_free(&s);
    /* fp8 mma exists from sm89 on */
    gemm_spec(&s, "sm80", 4, 8, 64, "{ acc = \"fp32\", tree = \"chain(16)\", atom = \"sm89.mma.fp8\", out = \"fp32\" }");
    param(&s, "in", "e4m3");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "realises nothing");
    fam_spec_free(&s);
    gemm_spec(&s, "cpu", 4, 8, 64, GEMM_K("chain(8)"));
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "sm80, sm89 and sm90");
    fam_spec_free(&s);
    spec_init(&s, "silu_and_mul", "sm80");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "no kernel");
    fam_spec_free(&s);
}

/* A point written differently but with the same expansion is accepted:
 * fma = false on a sum of values changes nothing. */
static void test_equal_hash_accepted(void **state)
{
    (void)state;
    fam_spec s;
    gemv_spec(&s, 1, "per_group", "{ acc = \"fp32\", fma = false, tree = \"stride(32, seq, halving)\", out = \"fp16\" }");
    cu_plan p = plan_ok(&s);
    assert_int_equal(p.u.gemv.per_group, 1);
    cu_plan_free(&p);
    fam_spec_free(&s);
}

/* A registry's own kernel name is served by the family's kernel when the
 * declared numerics are what that kernel does, and only then. */
static void test_alias(void **state)
{
    (void)state;
    fam_spec s;
    gemm_spec(&s, "sm89", 4, 8, 64, GEMM_K("split(4, chain(8), seq, align=32)"));
    s.kernel = strdup("gemm_bf16_tc_splitk");
    cu_plan p;
    nx_err e = {0};
    assert_int_equal(cu_plan_make(&s, NULL, NULL, &p, &e), NX_OK);
    assert_string_equal(p.kernel->id, "cuda_gemm_mma");
    assert_string_equal(p.alias_of, "gemm_bf16_tc_splitk");
    cu_plan_free(&p);
    assert_int_equal(cu_plan_make(&s, "gemm_bf16_tc_splitk", NULL, &p, &e), NX_OK);
    cu_plan_free(&p);
    fam_spec_free(&s);
    /* Hopper's wgmma split-K point is served by the wgmma kernel, the tc point
     * (chain(8)) on the same class by mma.sync: the numerics choose */
    gemm_spec(&s, "sm90", 100, 70, 1000,
              "{ acc = \"fp32\", tree = \"split(4, chain(16), seq, align=64)\", atom = \"sm90.wgmma.bf16\", "
              "out = \"fp32\" }");
    s.kernel = strdup("gemm_bf16_wgmma_splitk");
    assert_int_equal(cu_plan_make(&s, NULL, NULL, &p, &e), NX_OK);
    assert_string_equal(p.kernel->id, "cuda_gemm_wgmma");
    assert_string_equal(p.alias_of, "gemm_bf16_wgmma_splitk");
    assert_int_equal(p.u.gemm.wgmma, 1);
    assert_int_equal(p.u.gemm.slice, 256); /* ceil(1000 / 4) = 250, up to 64 */
    assert_int_equal(p.u.gemm.main.grid[0], 3); /* ceil(70 / 32) */
    assert_int_equal(p.u.gemm.main.grid[1], 2); /* ceil(100 / 64) */
    assert_int_equal(p.u.gemm.main.grid[2], 4);
    assert_int_equal(p.u.gemm.main.block[0], 128);
    cu_plan_free(&p);
    fam_spec_free(&s);
    /* the tc point on Hopper (chain(16), wgmma's atom: measured for
     * mma.sync) is served by wgmma, the first kernel that realises it; the
     * mma.sync kernel, asked for by its id, realises it too */
    gemm_spec(&s, "sm90", 100, 70, 1000,
              "{ acc = \"fp32\", tree = \"chain(16)\", atom = \"sm90.wgmma.bf16\", out = \"fp32\" }");
    s.kernel = strdup("gemm_bf16_tc_128x128x32");
    assert_int_equal(cu_plan_make(&s, NULL, NULL, &p, &e), NX_OK);
    assert_string_equal(p.kernel->id, "cuda_gemm_wgmma");
    cu_plan_free(&p);
    free(s.kernel);
    s.kernel = strdup("cuda_gemm_mma");
    assert_int_equal(cu_plan_make(&s, NULL, NULL, &p, &e), NX_OK);
    assert_string_equal(p.kernel->id, "cuda_gemm_mma");
    assert_int_equal(p.u.gemm.wgmma, 0);
    cu_plan_free(&p);
    /* a wgmma atom with mma's group is neither kernel */
    fam_spec_free(&s);
    gemm_spec(&s, "sm90", 4, 8, 64,
              "{ acc = \"fp32\", tree = \"chain(8)\", atom = { frac_bits = 25, term_round = \"rz\", round = \"rz\", "
              "acc = \"fp32\" }, out = \"fp32\" }");
    s.kernel = strdup("some_registry_gemm");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "kernel 'some_registry_gemm'");
    fam_spec_free(&s);
}

/* The fp8 kernel: on Ada two 16-term atoms per m16n8k32 mma, on Hopper one
 * 32-term atom; e8m13 accumulation. */
static void test_fp8_plan(void **state)
{
    (void)state;
    fam_spec s;
    gemm_spec(&s, "sm89", 16, 256, 4096, "{ acc = \"fp32\", tree = \"chain(16)\", atom = \"sm89.mma.fp8\", out = \"fp32\" }");
    param(&s, "in", "e4m3");
    cu_plan p = plan_ok(&s);
    assert_string_equal(p.kernel->id, "cuda_gemm_mma_fp8");
    assert_int_equal(p.u.gemm.in, CU_E4M3);
    assert_int_equal(p.u.gemm.has_split, 0);
    cu_plan_free(&p);
    /* the 16-bit kernel does not take e4m3 */
    plan_fails(&s, "cuda_gemm_mma", NX_EUNSUPPORTED, "takes bf16 fp16");
    fam_spec_free(&s);
    /* Ada's k32 is two halves: a 32-term chain is not what sm89 realises */
    gemm_spec(&s, "sm89", 16, 256, 4096, "{ acc = \"fp32\", tree = \"chain(32)\", atom = \"sm89.mma.fp8\", out = \"fp32\" }");
    param(&s, "in", "e4m3");
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "realises chain(16)");
    fam_spec_free(&s);
    /* sm90 (mma.sync fp8, not wgmma): one 32-term atom, wgmma's parameters */
    gemm_spec(&s, "sm90", 16, 256, 4096,
              "{ acc = \"fp32\", tree = \"split(2, chain(32), seq)\", atom = \"sm90.wgmma.fp8\", out = \"fp32\" }");
    param(&s, "in", "e5m2");
    p = plan_ok(&s);
    assert_int_equal(p.u.gemm.in, CU_E5M2);
    assert_int_equal(p.u.gemm.S, 2);
    cu_plan_free(&p);
    fam_spec_free(&s);
}

/* The trees a vLLM-style registry declares (kernels/sm80): thread groups
 * for q.k, warps then warp order, pages of positions per warp, approximate
 * exp and rsqrt. */
static void test_registry_style(void **state)
{
    (void)state;
    fam_spec s;
    spec_init(&s, "paged_decode_attention", "sm80");
    const char *dims[][2] = {{"B", "4"}, {"HQ", "32"}, {"HKV", "8"}, {"D", "128"}, {"P", "16"}, {"NP", "1024"},
                             {"MAXP", "256"}};
    for (size_t i = 0; i < 7; i++)
        param(&s, dims[i][0], dims[i][1]);
    param(&s, "split", "512");
    red(&s, "qk", "{ acc = \"fp32\", tree = \"stride(2, seq, halving, block=8)\" }");
    red(&s, "softmax_sum", "{ acc = \"fp32\", tree = \"stride(128, seq, tile(32, halving, seq))\" }");
    red(&s, "pv", "{ acc = \"fp32\", tree = \"stride(4, seq, seq, block=16)\", out = \"bf16\" }");
    red(&s, "combine", "{ acc = \"fp32\", tree = \"seq\" }");
    assert_int_equal(fam_spec_add_elem(&s, "exp", FAM_ELEM_APPROX, "ex2.approx.ftz.f32", 2, NULL), NX_OK);
    cu_plan p = plan_ok(&s);
    const cu_attn_cfg *a = &p.u.attn;
    assert_int_equal(a->qk_tg, 2);
    assert_int_equal(a->qk_v, 8);
    assert_int_equal(a->ssum_mode, 2);
    assert_int_equal(a->pv_q, 16);
    assert_int_equal(a->exp_approx, 1);
    assert_int_equal(a->nsplit_max, 256 * 16 / 512);
    assert_int_equal(a->main.smem, 4 * 128 * sizeof(float));
    cu_plan_free(&p);
    fam_spec_free(&s);

    spec_init(&s, "rmsnorm", "sm90");
    param(&s, "T", "16");
    param(&s, "H", "4096");
    red(&s, "sumsq", "{ acc = \"fp32\", tree = \"stride(1024, seq, tile(32, halving, seq), block=8)\" }");
    assert_int_equal(fam_spec_add_elem(&s, "rsqrt", FAM_ELEM_APPROX, "rsqrt.approx.f32", 2, NULL), NX_OK);
    p = plan_ok(&s);
    assert_int_equal(p.u.rms.L, 1024);
    assert_int_equal(p.u.rms.V, 8);
    assert_int_equal(p.u.rms.tile_combine, 1);
    assert_int_equal(p.u.rms.rsqrt_approx, 1);
    cu_plan_free(&p);
    fam_spec_free(&s);
    /* an approximation the kernel does not have */
    spec_init(&s, "rmsnorm", "sm90");
    param(&s, "T", "16");
    param(&s, "H", "4096");
    red(&s, "sumsq", "{ acc = \"fp32\", tree = \"stride(1024, seq, halving)\" }");
    assert_int_equal(fam_spec_add_elem(&s, "rsqrt", FAM_ELEM_APPROX, "rsqrt_fast", 4, NULL), NX_OK);
    plan_fails(&s, NULL, NX_EUNSUPPORTED, "rsqrt_fast");
    fam_spec_free(&s);
}

/* The sample registry (kernels/): which CUDA points this backend serves at
 * the campaign's small shapes, and why not (POINTS.md, "Reconciliation").
 * Informational, except that gemm.tc, the gemv points and the fused
 * rmsnorm's tree must be served where declared as they are now. */
static void test_registry_matrix(void **state)
{
    (void)state;
    static const char *const shapes[][2] = {
        {"gemm", "M=4,N=24,K=200"},
        {"gemv_w4a16", "B=3,N=20,K=512"},
        {"moe_grouped_gemm", "T=5,E=4,H=96,N=16,topk=2"},
        {"paged_decode_attention", "B=3,HQ=4,HKV=2,D=16,P=8,NP=12,MAXP=4"},
        {"rmsnorm", "T=4,H=160"},
        {"silu_and_mul", "T=4,H=96"},
    };
    reg_registry *reg = NULL;
    nx_err e = {0};
    if (reg_load(PARITY_SOURCE_DIR "/kernels", &reg, &e) != NX_OK) {
        print_message("kernels/ does not load (%s): skipped\n", e.msg);
        skip();
    }
    const char *classes[] = {"sm80", "sm89", "sm90"};
    size_t served = 0, total = 0;
    for (size_t c = 0; c < 3; c++) {
        char **ids = NULL;
        size_t n = 0;
        if (reg_list_points(reg, classes[c], &ids, &n, &e) != NX_OK)
            continue;
        for (size_t i = 0; i < n; i++) {
            const char *shape = NULL;
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
                if (!strncmp(ids[i], shapes[k][0], strlen(shapes[k][0])) && ids[i][strlen(shapes[k][0])] == '.')
                    shape = shapes[k][1];
            fam_spec s;
            memset(&s, 0, sizeof s);
            nx_err re = {0};
            if (reg_resolve(reg, classes[c], ids[i], shape, &s, &re) != NX_OK) {
                print_message("  %s %-40s does not resolve: %s\n", classes[c], ids[i], re.msg);
                free(ids[i]);
                continue;
            }
            cu_plan p;
            nx_err pe = {0};
            nx_status st = cu_plan_make(&s, NULL, NULL, &p, &pe);
            total++;
            served += st == NX_OK;
            print_message("  %s %-34s %s%s%s\n", classes[c], ids[i], st == NX_OK ? "served by " : "not served: ",
                          st == NX_OK ? p.kernel->id : pe.msg, "");
            int must = !strcmp(ids[i], "gemm.tc") || !strcmp(ids[i], "gemv_w4a16.per_element") ||
                       !strcmp(ids[i], "gemv_w4a16.per_group");
            if (must && st != NX_OK)
                fail_msg("%s %s must be served: %s", classes[c], ids[i], pe.msg);
            cu_plan_free(&p);
            fam_spec_free(&s);
            free(ids[i]);
        }
        free(ids);
    }
    print_message("  %zu of %zu CUDA points served\n", served, total);
    reg_free(reg);
}

static void test_tree_match(void **state)
{
    (void)state;
    char b[8][32];
    size_t n = 0;
    assert_true(cu_tree_match("split({S}, chain(8), seq, align={A})", "split(4, chain(8), seq, align=32)", b, 8, &n));
    assert_int_equal(n, 2);
    assert_string_equal(b[0], "S=4");
    assert_string_equal(b[1], "A=32");
    assert_false(cu_tree_match("split({S}, chain(8), seq)", "split(4, chain(16), seq)", b, 8, &n));
    assert_false(cu_tree_match("split({S}, chain(8), seq)", "split(4, chain(8), seq, align=32)", b, 8, &n));
    assert_false(cu_tree_match("chain(8)", "chain(8)@fp16", b, 8, &n));
    assert_false(cu_tree_match("split({S}, chain(8), seq)", "split(, chain(8), seq)", b, 8, &n));
    assert_false(cu_tree_match("split({S}, chain(8), seq)", "split(04, chain(8), seq)", b, 8, &n));
    assert_true(cu_tree_match("stride({L}, seq, halving, block={V})", "stride(256, seq, halving, block=8)", b, 8, &n));
    assert_string_equal(b[0], "L=256");
    assert_string_equal(b[1], "V=8");
    /* one variable twice must bind one value */
    assert_false(cu_tree_match("split({S}, stride({S}, seq, seq), seq)", "split(4, stride(8, seq, seq), seq)", b, 8,
                               &n));
}

/* Every claim, filled at sample values, parses and expands. */
static void test_claims_parse_and_expand(void **state)
{
    (void)state;
    const char *classes[] = {"sm80", "sm89", "sm90"};
    const char *outs[] = {"fp32", "fp16", "bf16"};
    const size_t ns[] = {1, 7, 128, 4096};
    size_t checked = 0;
    for (size_t i = 0; i < cu_claim_count(); i++) {
        const cu_claim *c = cu_claim_at(i);
        assert_non_null(cu_kernel_find(c->kernel));
        for (size_t ci = 0; ci < 3; ci++) {
            if (!cu_claim_has_class(c, classes[ci]))
                continue;
            const cu_kernel *k = cu_kernel_find(c->kernel);
            const char *fp8[] = {"e4m3", "e5m2"}, *b16[] = {"bf16", "fp16"};
            const char **ins = k->policies && strstr(k->policies, "e4m3") ? fp8 : b16;
            for (size_t ii = 0; ii < 2; ii++)
                for (size_t oi = 0; oi < 3; oi++) {
                    char atom[160];
                    const char *a = cu_claim_atom(classes[ci], ins[ii]);
                    assert_non_null(a);
                    snprintf(atom, sizeof atom, "atom=%s", a);
                    char out[32];
                    snprintf(out, sizeof out, "out=%s", outs[oi]);
                    const char *vars[] = {"S=4",  "A=32", "V=8", "L=256", "TG=2", "Q=16", out, "out_rounding=rne",
                                          "saturate=false", atom};
                    nx_err e = {0};
                    char *text = cu_claim_fill(c->point, vars, 10, &e);
                    if (!text)
                        fail_msg("%s/%s: %s", c->kernel, c->reduction, e.msg);
                    nx_point pt;
                    if (pt_from_text(text, "claim", &pt, &e) != NX_OK)
                        fail_msg("%s/%s: %s: %s", c->kernel, c->reduction, text, e.msg);
                    if (nx_point_validate(&pt, &e) != NX_OK)
                        fail_msg("%s/%s: %s: %s", c->kernel, c->reduction, text, e.msg);
                    for (size_t k = 0; k < 4; k++)
                        for (int dot = 0; dot < 2; dot++) {
                            nx_program *prog = NULL;
                            if (nx_program_build(&pt, ns[k], dot, &prog, &e) != NX_OK)
                                fail_msg("%s/%s at n = %zu: %s", c->kernel, c->reduction, ns[k], e.msg);
                            char hex[65];
                            assert_int_equal(nx_program_hash(prog, hex, &e), NX_OK);
                            nx_program_free(prog);
                            checked++;
                        }
                    nx_point_free(&pt);
                    free(text);
                }
        }
    }
    assert_true(checked > 100);
    /* a template variable without a value is an error, not a silent gap */
    nx_err e = {0};
    assert_null(cu_claim_fill("{ tree = \"split({S}, seq, seq)\" }", NULL, 0, &e));
    assert_non_null(strstr(e.msg, "{S}"));
}

/* devices/cuda/POINTS.md lists every claim verbatim and every class atom. */
static void test_points_md(void **state)
{
    (void)state;
    FILE *f = fopen(PARITY_SOURCE_DIR "/devices/cuda/POINTS.md", "rb");
    assert_non_null(f);
    static char text[1 << 18];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    for (size_t i = 0; i < cu_claim_count(); i++) {
        const cu_claim *c = cu_claim_at(i);
        if (!strstr(text, c->point))
            fail_msg("POINTS.md lacks the claim of %s/%s: %s", c->kernel, c->reduction, c->point);
        char head[96];
        snprintf(head, sizeof head, "### `%s`", c->kernel);
        if (!strstr(text, head))
            fail_msg("POINTS.md has no section %s", head);
    }
    const char *cls[] = {"sm80", "sm89", "sm90"}, *ins[] = {"bf16", "e4m3"};
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < 2; i++) {
            const char *a = cu_claim_atom(cls[c], ins[i]);
            if (a && !strstr(text, a))
                fail_msg("POINTS.md lacks the %s %s atom %s", cls[c], ins[i], a);
        }
}

/* The sm80/sm89 atom is the published one (docs/numerics.md §5 via the presets);
 * sm90's mma.sync row is wgmma's (measured on an H200). */
static void test_claim_atoms(void **state)
{
    (void)state;
    const nx_atom_preset *p = nx_atom_preset_find("sm80.mma.bf16");
    assert_non_null(p);
    assert_int_equal(p->group, 8);
    assert_int_equal(p->frac_bits, 24);
    assert_non_null(strstr(cu_claim_atom("sm89", "fp16"), "sm89.mma.f16"));
    assert_non_null(strstr(cu_claim_atom("sm90", "bf16"), "frac_bits = 25"));
    assert_null(cu_claim_atom("sm100", "bf16"));
    assert_null(cu_class_of_cc(8, 6));
    assert_string_equal(cu_class_of_cc(9, 0), "sm90");
    assert_string_equal(cu_class_of_cc(8, 9), "sm89");
}

/* ---- inputs ----------------------------------------------------------------------- */

static void attn_spec(fam_spec *s)
{
    spec_init(s, "paged_decode_attention", "sm90");
    const char *dims[][2] = {{"B", "2"}, {"HQ", "4"}, {"HKV", "2"}, {"D", "16"}, {"P", "4"}, {"NP", "8"},
                             {"MAXP", "4"}};
    for (size_t i = 0; i < 7; i++)
        param(s, dims[i][0], dims[i][1]);
    param(s, "split", "4");
    red(s, "qk", "{ tree = \"seq\" }");
    red(s, "softmax_sum", "{ tree = \"stride(128, seq, halving)\" }");
    red(s, "pv", "{ tree = \"seq\", out = \"bf16\" }");
    red(s, "combine", "{ tree = \"seq\" }");
}

static void test_inputs(void **state)
{
    (void)state;
    fam_spec s;
    attn_spec(&s);
    st_file in;
    st_init(&in);
    ref_gen_opts o = {.seed = 7, .dist = NX_DIST_NORMAL, .specials = 0, .threads = 1};
    nx_err e = {0};
    if (ref_generate(&s, &o, &in, &e) != NX_OK)
        fail_msg("ref_generate: %s", e.msg);
    assert_int_equal(cu_check_inputs(&s, &in, &e), NX_OK);
    /* a page index past the cache: an input error, never a device fault */
    st_tensor *bt = (st_tensor *)st_find(&in, "block_table");
    assert_non_null(bt);
    st_put_bits(bt, bt->data, 3, 8);
    assert_int_equal(cu_check_inputs(&s, &in, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "block_table"));
    st_put_bits(bt, bt->data, 3, 0);
    st_tensor *cl = (st_tensor *)st_find(&in, "context_lens");
    st_put_bits(cl, cl->data, 1, 17); /* > MAXP * P = 16 */
    assert_int_equal(cu_check_inputs(&s, &in, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "context_lens"));
    st_free(&in);
    /* a missing tensor */
    st_init(&in);
    assert_int_equal(cu_check_inputs(&s, &in, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "missing"));
    st_free(&in);
    fam_spec_free(&s);
}

/* ---- the skip ------------------------------------------------------------------------ */

static void test_skip_without_gpu(void **state)
{
    (void)state;
    const dev_backend *b = dev_cuda_backend();
    assert_non_null(b);
    assert_string_equal(b->name, "cuda");
    char why[256] = "";
    if (dev_available(b, why, sizeof why)) {
        print_message("a GPU is present (%s): the no-GPU checks are skipped\n", why);
        skip();
    }
    assert_true(strstr(why, "no GPU") || strstr(why, "built without CUDA"));
    char json[1024];
    nx_err e = {0};
    assert_int_equal(dev_describe(b, json, sizeof json, &e), NX_OK);
    assert_non_null(strstr(json, "\"available\": false"));
    assert_int_equal(dev_describe(b, json, 8, &e), NX_EINVAL); /* too small: an error, no overflow */
    /* run fails cleanly, saying it is a skip */
    fam_spec s;
    attn_spec(&s);
    st_file in, out;
    st_init(&in);
    st_init(&out);
    dev_opts o = {DEV_EAGER, 0, NULL};
    assert_int_equal(dev_run(b, &s, &in, &out, &o, &e), NX_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "skipped:"));
    assert_int_equal(out.ntensors, 0);
    o.mode = DEV_GRAPHED;
    assert_int_equal(dev_run(b, &s, &in, &out, &o, &e), NX_EUNSUPPORTED);
    assert_int_equal(dev_run(b, NULL, NULL, NULL, NULL, NULL), NX_EUNSUPPORTED);
#ifdef PARITY_CUDA_BUILT
    assert_int_equal(dev_supports(b, &s, NULL), 1); /* the kernels exist, a GPU does not */
#else
    assert_int_equal(dev_supports(b, &s, NULL), 0);
#endif
    dev_cuda_trace t = {0};
    assert_int_equal(dev_cuda_write_trace("/tmp/never.safetensors", &s, &out, &o, &t, &e), NX_EUNSUPPORTED);
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    assert_int_equal(info.available, 0);
    assert_true(info.reason[0] != 0);
    fam_spec_free(&s);
}

/* ---- correctly rounded exp and rsqrt ---------------------------------------------- */

/* exp(x) correctly rounded to binary32 by MPFR (the oracle). */
static float mp_expf(float x)
{
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_t a, r;
    mpfr_init2(a, 24);
    mpfr_init2(r, 24);
    mpfr_set_flt(a, x, MPFR_RNDN);
    int t = mpfr_exp(r, a, MPFR_RNDN);
    t = mpfr_subnormalize(r, t, MPFR_RNDN);
    float y = mpfr_get_flt(r, MPFR_RNDN);
    mpfr_clear(a);
    mpfr_clear(r);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return y;
}

static float mp_rsqrtf(float x)
{
    mpfr_t a, r;
    mpfr_init2(a, 24);
    mpfr_init2(r, 24);
    mpfr_set_flt(a, x, MPFR_RNDN);
    mpfr_rec_sqrt(r, a, MPFR_RNDN); /* in [2^-64, 2^75]: normal */
    float y = mpfr_get_flt(r, MPFR_RNDN);
    mpfr_clear(a);
    mpfr_clear(r);
    return y;
}

static void check_f32(const char *fn, float x, float got, float want)
{
    if (crm_f2u(got) == crm_f2u(want) || (isnan(got) && isnan(want)))
        return;
    fail_msg("%s(%a) (0x%08x): got %a (0x%08x), want %a (0x%08x)", fn, x, crm_f2u(x), got, crm_f2u(got), want,
             crm_f2u(want));
}

static void test_cr_tables(void **state)
{
    (void)state;
    mpfr_t a, b;
    mpfr_inits2(200, a, b, (mpfr_ptr)0);
    for (int j = 0; j < 64; j++) {
        mpfr_set_si(a, j, MPFR_RNDN);
        mpfr_div_ui(a, a, 64, MPFR_RNDN);
        mpfr_ui_pow(b, 2, a, MPFR_RNDN);
        assert_true(crm_exp2_host[j] == mpfr_get_d(b, MPFR_RNDN));
    }
    mpfr_const_log2(a, MPFR_RNDN);
    mpfr_ui_div(b, 64, a, MPFR_RNDN);
    assert_true(CRM_INV_LN2_64 == mpfr_get_d(b, MPFR_RNDN));
    mpfr_div_ui(b, a, 64, MPFR_RNDN);
    assert_true(CRM_LN2_64_HI == mpfr_get_d(b, MPFR_RNDN));
    mpfr_sub_d(b, b, CRM_LN2_64_HI, MPFR_RNDN);
    assert_true(CRM_LN2_64_LO == mpfr_get_d(b, MPFR_RNDN));
    mpfr_clears(a, b, (mpfr_ptr)0);
    for (size_t i = 0; i < CRM_NEXC; i++)
        check_f32("exp (exception table)", crm_u2f(crm_exp_exc_host[i].x), crm_u2f(crm_exp_exc_host[i].y),
                  mp_expf(crm_u2f(crm_exp_exc_host[i].x)));
}

static void test_cr_specials(void **state)
{
    (void)state;
    const float inf = crm_u2f(0x7f800000u);
    assert_true(crm_f2u(crm_expf(0.0f)) == 0x3f800000u);
    assert_true(crm_f2u(crm_expf(-0.0f)) == 0x3f800000u);
    assert_true(crm_f2u(crm_expf(-inf)) == 0u);
    assert_true(crm_f2u(crm_expf(inf)) == 0x7f800000u);
    assert_true(crm_f2u(crm_expf(crm_u2f(0x7fc00001u))) == 0x7fc00000u);
    check_f32("exp", 88.72284f, crm_expf(88.72284f), mp_expf(88.72284f));
    check_f32("exp", -103.97208f, crm_expf(-103.97208f), mp_expf(-103.97208f));
    check_f32("exp", -87.33655f, crm_expf(-87.33655f), mp_expf(-87.33655f));
    assert_true(crm_f2u(crm_rsqrtf(0.0f)) == 0x7f800000u);
    assert_true(crm_f2u(crm_rsqrtf(-0.0f)) == 0xff800000u);
    assert_true(crm_f2u(crm_rsqrtf(inf)) == 0u);
    assert_true(isnan(crm_rsqrtf(-1.0f)));
    assert_true(crm_f2u(crm_rsqrtf(crm_u2f(0x7fc00000u))) == 0x7fc00000u);
    assert_true(crm_rsqrtf(4.0f) == 0.5f);
    check_f32("rsqrt", crm_u2f(1), crm_rsqrtf(crm_u2f(1)), mp_rsqrtf(crm_u2f(1))); /* 2^74.5 */
}

/* Every binary32 input (PARITY_EXHAUSTIVE=1) or a sample spread over all
 * binades (every 1021st pattern) against the MPFR oracle.  In the full
 * sweep exp checks against long double first and asks MPFR only within
 * 2^-58 of a midpoint; rsqrt checks its midpoint conditions exactly. */
typedef unsigned __int128 u128;

/* sign of x * m^2 - 1 with exact integers (x binary32, m a 25-bit midpoint) */
static int xm2_cmp(float x, double m)
{
    int ex, em;
    double fx = frexp((double)x, &ex), fm = frexp(m, &em);
    uint64_t X = (uint64_t)ldexp(fx, 24), Mm = (uint64_t)ldexp(fm, 26);
    u128 P = (u128)X * Mm * Mm; /* < 2^76; x m^2 = P 2^e */
    int e = ex - 24 + 2 * (em - 26);
    if (e >= 0)
        return 1;
    if (-e >= 100)
        return -1;
    u128 one = (u128)1 << (-e);
    return P > one ? 1 : P < one ? -1 : 0;
}

static float ld_expf(float x, long *nmp)
{
    long double y = expl((long double)x);
    float f = (float)y;
    uint32_t u = crm_f2u(f);
    if (f != 0 && !isinf(f)) {
        long double lo = ((long double)f + (long double)crm_u2f(u - 1)) / 2;
        long double hi = ((long double)f + (long double)crm_u2f(u + 1)) / 2;
        long double m = fabsl(y - lo) < fabsl(y - hi) ? lo : hi;
        if (y > lo && y < hi && fabsl(y - m) > ldexpl(fabsl(y), -58))
            return f;
    }
    (*nmp)++;
    return mp_expf(x);
}

static void test_cr_sweep(void **state)
{
    (void)state;
    const char *ex = getenv("PARITY_EXHAUSTIVE");
    int full = ex && *ex && strcmp(ex, "0") != 0;
    uint64_t step = full ? 1 : 1021;
    long bad_exp = 0, bad_rsqrt = 0, nmp = 0, n = 0;
    /* rsqrt over every positive finite input */
#pragma omp parallel for schedule(dynamic, 65536) reduction(+ : bad_rsqrt, n)
    for (uint64_t i = 1; i < 0x7f800000u; i += step) {
        float x = crm_u2f((uint32_t)i), y = crm_rsqrtf(x);
        uint32_t u = crm_f2u(y);
        double mhi = ((double)y + (double)crm_u2f(u + 1)) / 2, mlo = ((double)y + (double)crm_u2f(u - 1)) / 2;
        n++;
        if (!(xm2_cmp(x, mhi) > 0 && xm2_cmp(x, mlo) < 0)) {
            bad_rsqrt++;
#pragma omp critical
            print_error("rsqrt(%a): %a is not correctly rounded\n", x, y);
        }
    }
    /* exp over [-104, 89]: below and above, +0 and +inf (checked in specials) */
#pragma omp parallel for schedule(dynamic, 65536) reduction(+ : bad_exp, nmp, n)
    for (uint64_t i = 0; i < ((uint64_t)1 << 32); i += step) {
        float x = crm_u2f((uint32_t)i);
        if (isnan(x) || x > 89.0f || x < -104.0f)
            continue;
        float got = crm_expf(x), want = full ? ld_expf(x, &nmp) : mp_expf(x);
        n++;
        if (crm_f2u(got) != crm_f2u(want)) {
            bad_exp++;
#pragma omp critical
            print_error("    {0x%08xu, 0x%08xu}, /* exp(%a): got %a, want %a */\n", (uint32_t)i, crm_f2u(want), x,
                        got, want);
        }
    }
    print_message("%s: %ld inputs, %ld exp and %ld rsqrt misrounded (%ld exp cases asked MPFR)\n",
                  full ? "every binary32 input" : "every 1021st input", n, bad_exp, bad_rsqrt, nmp);
    assert_int_equal(bad_exp, 0);
    assert_int_equal(bad_rsqrt, 0);
    /* the sample also against MPFR's rec_sqrt, an independent oracle */
    for (uint64_t i = 1; !full && i < 0x7f800000u; i += 65537) {
        float x = crm_u2f((uint32_t)i);
        check_f32("rsqrt", x, crm_rsqrtf(x), mp_rsqrtf(x));
    }
}

int main(void)
{
    const char *ex = getenv("PARITY_EXHAUSTIVE");
    if (ex && *ex && strcmp(ex, "0") != 0) {
        const struct CMUnitTest only[] = {cmocka_unit_test(test_cr_sweep)};
        return cmocka_run_group_tests(only, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_plan),
        cmocka_unit_test(test_gemv_plan),
        cmocka_unit_test(test_rms_attn_plan),
        cmocka_unit_test(test_batch_independent),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_equal_hash_accepted),
        cmocka_unit_test(test_alias),
        cmocka_unit_test(test_fp8_plan),
        cmocka_unit_test(test_registry_style),
        cmocka_unit_test(test_registry_matrix),
        cmocka_unit_test(test_tree_match),
        cmocka_unit_test(test_claims_parse_and_expand),
        cmocka_unit_test(test_claim_atoms),
        cmocka_unit_test(test_points_md),
        cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_skip_without_gpu),
        cmocka_unit_test(test_cr_tables),
        cmocka_unit_test(test_cr_specials),
        cmocka_unit_test(test_cr_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
