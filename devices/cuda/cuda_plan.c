/* cuda_plan.c: the kernels of the CUDA backend, the numerics point each one
 * realises (the claims: the same table as devices/cuda/POINTS.md), the
 * check of a declared family point against them, and the launch
 * configuration of a run.  No CUDA here: tests/test_cuda_host.c runs all of
 * it without a GPU. */
#include "cuda_plan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cr_math.h"
#include "nx_program.h"
#include "point_toml.h"
#include "refimpl.h"

/* ---- kernels ----------------------------------------------------------- */

/* In table order the first kernel whose claims match a point serves it: on
 * sm90 wgmma and mma.sync realise the same chain(16) points (measured), and
 * Hopper's own instruction is tried first. */
static const cu_kernel kernels[] = {
    {"cuda_gemm_wgmma", "gemm", CU_GEMM, "in", "bf16 fp16",
     "wgmma.mma_async m64n8k16 bf16/fp16 -> fp32 (sm90, sm_90a build), warpgroup tile 64x32, K in order, split-K"},
    {"cuda_gemm_mma", "gemm", CU_GEMM, "in", "bf16 fp16",
     "mma.sync m16n8k16 bf16/fp16 -> fp32, warp tile 16x32, K in order, split-K through a workspace"},
    {"cuda_gemm_mma_fp8", "gemm", CU_GEMM, "in", "e4m3 e5m2",
     "mma.sync m16n8k32 e4m3/e5m2 -> fp32 (sm89, sm90), warp tile 16x32, K in order, split-K"},
    {"cuda_gemv_w4a16_dequant", "gemv_w4a16", CU_GEMV_W4A16, "scale_apply", "per_element",
     "warp per output, 16-byte loads, lanes strided over blocks of 8, shuffle-down halving, split-K"},
    {"cuda_gemv_w4a16_grouped", "gemv_w4a16", CU_GEMV_W4A16, "scale_apply", "per_group",
     "warp per output, a lane per group (fma chain), fp32 scale, lanes strided over groups, halving, split-K"},
    {"cuda_rmsnorm", "rmsnorm", CU_RMSNORM, NULL, NULL,
     "one row per CTA of L threads, strided fma chains, shared-memory or warp-then-seq halving, rsqrt cr or approx"},
    {"cuda_paged_attention", "paged_decode_attention", CU_ATTN, NULL, NULL,
     "CTA per (sequence, head, split), fixed split size, fixed-order log-sum-exp combine, exp cr or approx"},
};

/* A policy param's value when the spec does not give it. */
static const char *policy_default(const char *param)
{
    return !strcmp(param, "in") ? "bf16" : !strcmp(param, "scale_apply") ? "per_element" : "";
}

static int word_in(const char *word, const char *list)
{
    size_t n = strlen(word);
    for (const char *p = list; n && (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return 1;
    return 0;
}

size_t cu_kernel_count(void)
{
    return sizeof kernels / sizeof kernels[0];
}

const cu_kernel *cu_kernel_at(size_t i)
{
    return i < cu_kernel_count() ? &kernels[i] : NULL;
}

const cu_kernel *cu_kernel_find(const char *id)
{
    for (size_t i = 0; id && i < cu_kernel_count(); i++)
        if (strcmp(kernels[i].id, id) == 0)
            return &kernels[i];
    return NULL;
}

/* ---- claims (POINTS.md) ------------------------------------------------- */

#define ALL_CLASSES "sm80 sm89 sm90"
/* A reduction whose out conversion the kernel applies as declared. */
#define OUTS "out = \"{out}\", out_rounding = \"{out_rounding}\", saturate = {saturate} }"
#define FP32_FMA "{ acc = \"fp32\", rounding = \"rne\", fma = true, product = \"exact\", "
/* sm90.wgmma.bf16 and sm90.wgmma.f16 (docs/numerics.md §5, published) */
#define WGMMA_ATOM "{ frac_bits = 25, term_round = \"rz\", round = \"rz\", acc = \"fp32\" }"

static const cu_claim claims[] = {
    /* gemm: the mma.sync K loop (k16 = two 8-term atoms on sm80 and sm89),
     * split-K combined in slice order */
    {"cuda_gemm_mma", "sm80 sm89", "k",
     FP32_FMA "tree = \"chain(8)\", atom = {atom}, out = \"fp32\", out_rounding = \"{out_rounding}\", "
              "saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma", "sm80 sm89", "k",
     FP32_FMA "tree = \"split({S}, chain(8), seq)\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma", "sm80 sm89", "k",
     FP32_FMA "tree = \"split({S}, chain(8), seq, align={A})\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    /* the same loop on Hopper: k16 is ONE 16-term step with wgmma's atom
     * (measured on an H200, POINTS.md) */
    {"cuda_gemm_mma", "sm90", "k",
     FP32_FMA "tree = \"chain(16)\", atom = {atom}, out = \"fp32\", out_rounding = \"{out_rounding}\", "
              "saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq)\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq, align={A})\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    /* gemm on Hopper's wgmma: one 16-term atom per m64n8k16 (sm90.wgmma.bf16 / .f16) */
    {"cuda_gemm_wgmma", "sm90", "k",
     FP32_FMA "tree = \"chain(16)\", atom = " WGMMA_ATOM ", out = \"fp32\", out_rounding = \"{out_rounding}\", "
              "saturate = {saturate} }",
     NULL},
    {"cuda_gemm_wgmma", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq)\", atom = " WGMMA_ATOM ", out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    {"cuda_gemm_wgmma", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq, align={A})\", atom = " WGMMA_ATOM ", out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    /* gemm fp8 on Ada: m16n8k32 runs as two 16-term atoms (sm89.mma.fp8) */
    {"cuda_gemm_mma_fp8", "sm89", "k",
     FP32_FMA "tree = \"chain(16)\", atom = {atom}, out = \"fp32\", out_rounding = \"{out_rounding}\", "
              "saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma_fp8", "sm89", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq)\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma_fp8", "sm89", "k",
     FP32_FMA "tree = \"split({S}, chain(16), seq, align={A})\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    /* gemm fp8 on Hopper's mma.sync: one 32-term atom per m16n8k32 (assumed
     * like its wgmma until measured, POINTS.md) */
    {"cuda_gemm_mma_fp8", "sm90", "k",
     FP32_FMA "tree = \"chain(32)\", atom = {atom}, out = \"fp32\", out_rounding = \"{out_rounding}\", "
              "saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma_fp8", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(32), seq)\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    {"cuda_gemm_mma_fp8", "sm90", "k",
     FP32_FMA "tree = \"split({S}, chain(32), seq, align={A})\", atom = {atom}, out = \"fp32\", "
              "out_rounding = \"{out_rounding}\", saturate = {saturate} }",
     NULL},
    /* gemv_w4a16 per_element: lanes strided over blocks of V (8: one 16-byte load) terms */
    {"cuda_gemv_w4a16_dequant", ALL_CLASSES, "k", FP32_FMA "tree = \"stride(32, seq, halving, block={V})\", " OUTS,
     NULL},
    {"cuda_gemv_w4a16_dequant", ALL_CLASSES, "k",
     FP32_FMA "tree = \"split({S}, stride(32, seq, halving, block={V}), seq)\", " OUTS, NULL},
    {"cuda_gemv_w4a16_dequant", ALL_CLASSES, "k",
     FP32_FMA "tree = \"split({S}, stride(32, seq, halving, block={V}), seq, align={A})\", " OUTS, NULL},
    /* gemv_w4a16 per_group: a lane per group, lanes strided over groups */
    {"cuda_gemv_w4a16_grouped", ALL_CLASSES, "group", FP32_FMA "tree = \"seq\", " OUTS, NULL},
    {"cuda_gemv_w4a16_grouped", ALL_CLASSES, "k", FP32_FMA "tree = \"stride(32, seq, halving)\", " OUTS, NULL},
    {"cuda_gemv_w4a16_grouped", ALL_CLASSES, "k", FP32_FMA "tree = \"split({S}, stride(32, seq, halving), seq)\", " OUTS,
     NULL},
    {"cuda_gemv_w4a16_grouped", ALL_CLASSES, "k",
     FP32_FMA "tree = \"split({S}, stride(32, seq, halving), seq, align={A})\", " OUTS, NULL},
    /* rmsnorm: L threads strided over blocks of V; lanes by halving (L a power
     * of two) or by warps then in warp order (L a multiple of 32) */
    {"cuda_rmsnorm", ALL_CLASSES, "sumsq", FP32_FMA "tree = \"stride({L}, seq, halving, block={V})\", " OUTS, NULL},
    {"cuda_rmsnorm", ALL_CLASSES, "sumsq", FP32_FMA "tree = \"stride({L}, seq, halving)\", " OUTS, NULL},
    {"cuda_rmsnorm", ALL_CLASSES, "sumsq",
     FP32_FMA "tree = \"stride({L}, seq, tile(32, halving, seq), block={V})\", " OUTS, NULL},
    {"cuda_rmsnorm", ALL_CLASSES, "sumsq", FP32_FMA "tree = \"stride({L}, seq, tile(32, halving, seq))\", " OUTS,
     NULL},
    /* paged_decode_attention (CTA of 128 threads = 4 warps) */
    {"cuda_paged_attention", ALL_CLASSES, "qk", FP32_FMA "tree = \"seq\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "qk", FP32_FMA "tree = \"stride({TG}, seq, halving, block={V})\", " OUTS,
     NULL},
    {"cuda_paged_attention", ALL_CLASSES, "qk", FP32_FMA "tree = \"stride({TG}, seq, halving)\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "softmax_sum", FP32_FMA "tree = \"seq\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "softmax_sum", FP32_FMA "tree = \"stride(128, seq, halving)\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "softmax_sum",
     FP32_FMA "tree = \"stride(128, seq, tile(32, halving, seq))\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "pv", FP32_FMA "tree = \"seq\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "pv", FP32_FMA "tree = \"stride(4, seq, seq, block={Q})\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "pv", FP32_FMA "tree = \"stride(4, seq, seq)\", " OUTS, NULL},
    {"cuda_paged_attention", ALL_CLASSES, "combine", FP32_FMA "tree = \"seq\", " OUTS, "split > 0"},
};

size_t cu_claim_count(void)
{
    return sizeof claims / sizeof claims[0];
}

const cu_claim *cu_claim_at(size_t i)
{
    return i < cu_claim_count() ? &claims[i] : NULL;
}

int cu_claim_has_class(const cu_claim *c, const char *class_name)
{
    return word_in(class_name, c->classes);
}

/* The mma.sync atom per class and input format.  sm90 runs mma.sync
 * m16n8k16 as one 16-term step with wgmma's atom (measured on an H200,
 * POINTS.md); its fp8 row is still assumed. */
const char *cu_claim_atom(const char *class_name, const char *in_fmt)
{
    static const struct {
        const char *cls, *in, *atom;
    } atoms[] = {
        {"sm80", "bf16", "{ preset = \"sm80.mma.bf16\" }"},
        {"sm80", "fp16", "{ preset = \"sm80.mma.f16\" }"},
        {"sm89", "bf16", "{ preset = \"sm89.mma.bf16\" }"},
        {"sm89", "fp16", "{ preset = \"sm89.mma.f16\" }"},
        {"sm89", "e4m3", "{ preset = \"sm89.mma.fp8\" }"},
        {"sm89", "e5m2", "{ preset = \"sm89.mma.fp8\" }"},
        {"sm90", "bf16", WGMMA_ATOM},
        {"sm90", "fp16", WGMMA_ATOM},
        {"sm90", "e4m3", "{ frac_bits = 13, term_round = \"rz\", round = \"rz\", acc = \"e8m13\" }"},
        {"sm90", "e5m2", "{ frac_bits = 13, term_round = \"rz\", round = \"rz\", acc = \"e8m13\" }"},
    };
    for (size_t i = 0; i < sizeof atoms / sizeof atoms[0]; i++)
        if (class_name && in_fmt && !strcmp(atoms[i].cls, class_name) && !strcmp(atoms[i].in, in_fmt))
            return atoms[i].atom;
    return NULL;
}

const char *cu_class_of_cc(int major, int minor)
{
    if (major == 8 && minor == 0)
        return "sm80";
    if (major == 8 && minor == 9)
        return "sm89";
    if (major == 9 && minor == 0)
        return "sm90";
    return NULL;
}

char *cu_claim_fill(const char *tmpl, const char *const *vars, size_t nvars, nx_err *err)
{
    size_t cap = strlen(tmpl) + 1, len = 0;
    for (size_t i = 0; i < nvars; i++)
        cap += strlen(vars[i]) * 4;
    char *out = malloc(cap);
    if (!out) {
        nx_err_set(err, NX_ENOMEM, "out of memory");
        return NULL;
    }
    for (const char *p = tmpl; *p;) {
        if (*p != '{' || !p[1] || !strchr("SAVLTQoas", p[1]) || !strchr(p, '}')) {
            out[len++] = *p++;
            continue;
        }
        const char *e = strchr(p, '}');
        size_t nl = (size_t)(e - p - 1);
        const char *val = NULL;
        for (size_t i = 0; i < nvars && !val; i++)
            if (strncmp(vars[i], p + 1, nl) == 0 && vars[i][nl] == '=')
                val = vars[i] + nl + 1;
        if (!val) {
            /* not a template variable ({ preset = ...} is TOML): copy it */
            int ident = nl > 0;
            for (size_t i = 0; i < nl; i++)
                if (!(p[1 + i] == '_' || (p[1 + i] >= 'a' && p[1 + i] <= 'z') || (p[1 + i] >= 'A' && p[1 + i] <= 'Z')))
                    ident = 0;
            if (ident) {
                nx_err_set(err, NX_EINVAL, "claim template variable {%.*s} has no value", (int)nl, p + 1);
                free(out);
                return NULL;
            }
            out[len++] = *p++;
            continue;
        }
        size_t vl = strlen(val);
        if (len + vl + (strlen(e + 1)) + 1 > cap) {
            cap = len + vl + strlen(e + 1) + 64;
            char *n = realloc(out, cap);
            if (!n) {
                free(out);
                nx_err_set(err, NX_ENOMEM, "out of memory");
                return NULL;
            }
            out = n;
        }
        memcpy(out + len, val, vl);
        len += vl;
        p = e + 1;
    }
    out[len] = 0;
    return out;
}

int cu_tree_match(const char *tmpl, const char *tree, char binds[][32], size_t maxb, size_t *nb)
{
    size_t n = 0;
    const char *t = tmpl, *s = tree;
    while (*t) {
        if (*t == '{') {
            const char *e = strchr(t, '}');
            if (!e || (size_t)(e - t - 1) > 8 || !isdigit((unsigned char)*s))
                return 0;
            char name[12];
            snprintf(name, sizeof name, "%.*s", (int)(e - t - 1), t + 1);
            const char *d = s;
            while (isdigit((unsigned char)*s))
                s++;
            if (s - d > 9 || (s - d > 1 && *d == '0'))
                return 0;
            char cand[32];
            snprintf(cand, sizeof cand, "%s=%.*s", name, (int)(s - d), d);
            size_t k = 0;
            size_t nl = strlen(name);
            while (k < n && !(strncmp(binds[k], name, nl) == 0 && binds[k][nl] == '='))
                k++;
            if (k < n) {
                if (strcmp(binds[k], cand) != 0)
                    return 0; /* the same variable twice with two values */
            } else {
                if (n == maxb)
                    return 0;
                memcpy(binds[n++], cand, sizeof cand);
            }
            t = e + 1;
            continue;
        }
        if (*t != *s)
            return 0;
        t++;
        s++;
    }
    if (*s)
        return 0;
    *nb = n;
    return 1;
}

/* ---- reading the spec ------------------------------------------------------ */

static int cu_dtype_of_fmt(int f)
{
    switch (f) {
    case NX_FP32: return CU_FP32;
    case NX_FP16: return CU_FP16;
    case NX_BF16: return CU_BF16;
    default: return -1;
    }
}

static int cu_mode_of(int m)
{
    switch (m) {
    case NX_RNE: return CU_RNE;
    case NX_RZ: return CU_RZ;
    case NX_RU: return CU_RU;
    case NX_RD: return CU_RD;
    default: return -1;
    }
}

/* A format param among those the kernels take. */
static nx_status get_fmt(const fam_spec *s, const char *name, int def, const int *allowed, int *out, nx_err *err)
{
    nx_fmt f0;
    nx_status st = fam_get_fmt(s, name, (nx_fmt)def, &f0, err);
    if (st)
        return st;
    int f = (int)f0;
    for (const int *a = allowed; *a >= 0; a++)
        if (*a == f) {
            *out = f;
            return NX_OK;
        }
    char list[96] = "";
    for (const int *a = allowed; *a >= 0; a++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", a == allowed ? "" : " ",
                 nx_format((nx_fmt)*a)->name);
    return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: param '%s' = '%s': the CUDA kernels take %s", fam_spec_family(s),
                      fam_spec_point(s), name, nx_format((nx_fmt)f)->name, list);
}

/* A conversion to fmt with the rounding and saturation of point pt. */
static nx_status cvt_of(const fam_spec *s, const char *what, int fmt, const nx_point *pt, cu_cvt *c, nx_err *err)
{
    int d = cu_dtype_of_fmt(fmt), m = cu_mode_of(nx_point_out_rounding(pt));
    if (d < 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: %s format %s: the CUDA kernels write fp32, fp16 or bf16",
                          fam_spec_family(s), fam_spec_point(s), what, nx_format((nx_fmt)fmt)->name);
    if (m < 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: %s rounding %s: the CUDA kernels round rne, rz, ru or rd",
                          fam_spec_family(s), fam_spec_point(s), what, nx_mode_name(nx_point_out_rounding(pt)));
    c->fmt = d;
    c->mode = m;
    c->saturate = pt->saturate != 0;
    return NX_OK;
}

static long ceil_div(long a, long b)
{
    return (a + b - 1) / b;
}

static long bind_value(char binds[][32], size_t nb, const char *name, long def)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < nb; i++)
        if (strncmp(binds[i], name, nl) == 0 && binds[i][nl] == '=')
            return strtol(binds[i] + nl + 1, NULL, 10);
    return def;
}

/* The tree text of a claim's point template. */
static int claim_tree(const char *point, char *buf, size_t cap)
{
    const char *t = strstr(point, "tree = \"");
    if (!t)
        return 0;
    t += 8;
    const char *e = strchr(t, '"');
    if (!e || (size_t)(e - t) >= cap)
        return 0;
    memcpy(buf, t, (size_t)(e - t));
    buf[e - t] = 0;
    return 1;
}

/* Equal bits: equal canonical texts, or equal expanded programs at the
 * lengths the run uses (ns, or sample lengths when they vary per row). */
static nx_status same_point(const nx_point *a, const nx_point *b, int dot, const long *ns, size_t nn, int *same,
                            nx_err *err)
{
    char *ta = nx_point_print(a), *tb = nx_point_print(b);
    if (!ta || !tb) {
        free(ta);
        free(tb);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    *same = strcmp(ta, tb) == 0;
    free(ta);
    free(tb);
    for (size_t i = 0; !*same && i < nn; i++) {
        nx_program *pa = NULL, *pb = NULL;
        char ha[65], hb[65];
        nx_status st = nx_program_build(a, (size_t)ns[i], dot, &pa, err);
        if (!st)
            st = nx_program_build(b, (size_t)ns[i], dot, &pb, err);
        if (!st)
            st = nx_program_hash(pa, ha, err);
        if (!st)
            st = nx_program_hash(pb, hb, err);
        nx_program_free(pa);
        nx_program_free(pb);
        if (st)
            return st;
        if (strcmp(ha, hb) != 0)
            return NX_OK; /* *same stays 0 */
        if (i + 1 == nn)
            *same = 1;
    }
    return NX_OK;
}

/* Lengths at which a reduction of varying length (softmax_sum, pv,
 * combine) is compared when the texts differ. */
static const long sample_ns[] = {1, 2, 3, 7, 8, 9, 31, 32, 33, 127, 128, 129, 255, 256, 257, 1000, 4096};

typedef struct red_req {
    const char *name;
    int dot;
    long n;            /* its length, or 0 when it varies per row */
    const char *in;    /* input format name for {atom}, or NULL */
} red_req;

/* Matches the declared reduction r against the kernel's claims on the
 * class: fills binds and the realised point text. */
static nx_status match_reduction(const fam_spec *s, const cu_kernel *k, const char *cls, const red_req *rq,
                                 char binds[][32], size_t *nb, char **realised, char *tmpl, size_t tlen,
                                 nx_err *err)
{
    const fam_reduction *r = fam_reduction_get(s, rq->name);
    if (!r)
        return nx_err_set(err, NX_EINVAL, "%s.%s: the point declares no reduction '%s' (kernel %s needs it)",
                          fam_spec_family(s), fam_spec_point(s), rq->name, k->id);
    char *decl = nx_point_print(&r->point), *dtree = nx_tree_print(r->point.tree);
    char alts[1024] = "";
    char *best = NULL;
    nx_status st = NX_OK;
    int found = 0;
    if (!decl || !dtree) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < cu_claim_count() && !found && !st; i++) {
        const cu_claim *c = &claims[i];
        if (strcmp(c->kernel, k->id) || strcmp(c->reduction, rq->name) || !cu_claim_has_class(c, cls))
            continue;
        char tt[256];
        if (!claim_tree(c->point, tt, sizeof tt))
            continue;
        size_t al = strlen(alts);
        snprintf(alts + al, sizeof alts - al, "%s%s", al ? " | " : "", tt);
        size_t n = 0;
        if (!cu_tree_match(tt, dtree, binds, 8, &n))
            continue;
        /* the declared point's own out conversion, the class's atom */
        char vo[48], vr[48], vs[48], va[160];
        const char *vars[12];
        size_t nv = 0;
        for (size_t j = 0; j < n; j++)
            vars[nv++] = binds[j];
        snprintf(vo, sizeof vo, "out=%s", nx_format(nx_point_out(&r->point))->name);
        snprintf(vr, sizeof vr, "out_rounding=%s", nx_mode_name(nx_point_out_rounding(&r->point)));
        snprintf(vs, sizeof vs, "saturate=%s", r->point.saturate ? "true" : "false");
        vars[nv++] = vo;
        vars[nv++] = vr;
        vars[nv++] = vs;
        const char *atom = cu_claim_atom(cls, rq->in);
        if (strstr(c->point, "{atom}")) {
            if (!atom) {
                st = nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: kernel %s has no atom for class %s and input %s",
                                fam_spec_family(s), fam_spec_point(s), k->id, cls, rq->in ? rq->in : "?");
                break;
            }
            snprintf(va, sizeof va, "atom=%s", atom);
            vars[nv++] = va;
        }
        char *text = cu_claim_fill(c->point, vars, nv, err);
        if (!text) {
            st = err ? err->code : NX_EINVAL;
            break;
        }
        nx_point pt;
        if ((st = pt_from_text(text, "claim", &pt, err))) {
            nx_err_prefix(err, "kernel %s, reduction %s: claim %s", k->id, rq->name, text);
            free(text);
            break;
        }
        free(text);
        int same = 0;
        long one = rq->n;
        st = rq->n > 0 ? same_point(&pt, &r->point, rq->dot, &one, 1, &same, err)
                       : same_point(&pt, &r->point, rq->dot, sample_ns, sizeof sample_ns / sizeof sample_ns[0],
                                    &same, err);
        free(best);
        best = nx_point_print(&pt);
        nx_point_free(&pt);
        if (!st && same) {
            found = 1;
            *nb = n;
            if (tmpl)
                snprintf(tmpl, tlen, "%s", tt);
        }
    }
    if (!st && !found) {
        if (best)
            st = nx_err_set(err, NX_EUNSUPPORTED,
                            "%s.%s: reduction '%s' declares %s; kernel %s on %s realises %s (docs/cuda.md, "
                            "devices/cuda/POINTS.md)",
                            fam_spec_family(s), fam_spec_point(s), rq->name, decl, k->id, cls, best);
        else
            st = nx_err_set(err, NX_EUNSUPPORTED,
                            "%s.%s: reduction '%s' declares tree '%s'; kernel %s on %s realises %s "
                            "(devices/cuda/POINTS.md)",
                            fam_spec_family(s), fam_spec_point(s), rq->name, dtree, k->id, cls, alts[0] ? alts : "nothing");
    }
    if (!st) {
        *realised = best;
        best = NULL;
    }
done:
    free(best);
    free(decl);
    free(dtree);
    return st;
}

/* The declared elementwise function `name`: 0 correctly rounded (also when
 * not declared: the reference's default), 1 the one approximation the kernel
 * also has (`approx`); anything else is not what the kernel evaluates. */
static nx_status elem_mode(const fam_spec *s, const cu_kernel *k, const char *name, const char *approx, int *mode,
                           nx_err *err)
{
    const fam_elem *e = fam_elem_get(s, name);
    *mode = 0;
    if (!e || e->impl == FAM_ELEM_CR)
        return NX_OK;
    if (e->approx && !strcmp(e->approx, approx)) {
        *mode = 1;
        return NX_OK;
    }
    return nx_err_set(err, NX_EUNSUPPORTED,
                      "%s.%s: elementwise '%s' is declared as %s; kernel %s evaluates it correctly rounded (cr) or "
                      "as %s",
                      fam_spec_family(s), fam_spec_point(s), name, e->approx ? e->approx : "an approximation", k->id, approx);
}

void cu_plan_free(cu_plan *p)
{
    for (size_t i = 0; i < 4; i++)
        free(p->realised[i]);
    memset(p, 0, sizeof *p);
}

size_t cu_plan_workspace(const cu_plan *p)
{
    if (!p->kernel)
        return 0;
    switch (p->kernel->fam) {
    case CU_GEMM: return p->u.gemm.ws_bytes;
    case CU_GEMV_W4A16: return p->u.gemv.ws_bytes;
    case CU_RMSNORM: return 0;
    case CU_ATTN: return p->u.attn.prob_bytes + p->u.attn.part_bytes;
    }
    return 0;
}

static void dim1(cu_dim *d, unsigned gx, unsigned gy, unsigned gz, unsigned bx)
{
    d->grid[0] = gx;
    d->grid[1] = gy;
    d->grid[2] = gz;
    d->block[0] = bx;
    d->block[1] = d->block[2] = 1;
    d->smem = 0;
}

#define GRID_X_MAX 2147483647L
#define GRID_YZ_MAX 65535L

static nx_status grid_check(const fam_spec *s, long x, long y, long z, nx_err *err)
{
    if (x > GRID_X_MAX || y > GRID_YZ_MAX || z > GRID_YZ_MAX)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: the launch grid %ld x %ld x %ld exceeds CUDA's limits",
                          fam_spec_family(s), fam_spec_point(s), x, y, z);
    return NX_OK;
}

static nx_status record(cu_plan *p, const char *name, char *realised)
{
    p->red_names[p->nreds] = name;
    p->realised[p->nreds++] = realised;
    return NX_OK;
}

static nx_status plan_gemm(const fam_spec *s, cu_plan *p, nx_err *err)
{
    cu_gemm_cfg *c = &p->u.gemm;
    static const int ins[] = {NX_FP16, NX_BF16, NX_E4M3, NX_E5M2, -1}, outs[] = {NX_FP32, NX_FP16, NX_BF16, -1};
    int in = 0, out = 0, bias = 0;
    float alpha = 1, beta = 0;
    nx_status st;
    if ((st = fam_get_dim(s, "M", -1, &c->M, err)) || (st = fam_get_dim(s, "N", -1, &c->N, err)) ||
        (st = fam_get_dim(s, "K", -1, &c->K, err)) || (st = get_fmt(s, "in", FAM_DEFAULT_FMT, ins, &in, err)) ||
        (st = get_fmt(s, "out", FAM_DEFAULT_FMT, outs, &out, err)) || (st = fam_get_f32(s, "alpha", FAM_DEFAULT_STR, &alpha, err)) ||
        (st = fam_get_f32(s, "beta", FAM_DEFAULT_STR, &beta, err)) || (st = fam_get_bool(s, "bias", FAM_DEFAULT_BOOL, &bias, err)))
        return st;
    const char *inname = nx_format((nx_fmt)in)->name;
    if (!word_in(inname, p->kernel->policies))
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: in = %s, but kernel %s takes %s", fam_spec_family(s), fam_spec_point(s),
                          inname, p->kernel->id, p->kernel->policies);
    char binds[8][32];
    size_t nb = 0;
    char *real = NULL;
    red_req rq = {"k", 1, c->K, inname};
    if ((st = match_reduction(s, p->kernel, p->class_name, &rq, binds, &nb, &real, NULL, 0, err)))
        return st;
    record(p, "k", real);
    const fam_reduction *k = fam_reduction_get(s, "k");
    if (nx_point_out(&k->point) != NX_FP32)
        return nx_err_set(err, NX_EINVAL, "%s.%s: reduction 'k' has out = %s; gemm needs fp32", fam_spec_family(s),
                          fam_spec_point(s), nx_format(nx_point_out(&k->point))->name);
    c->in = in == NX_E4M3 ? CU_E4M3 : in == NX_E5M2 ? CU_E5M2 : cu_dtype_of_fmt(in);
    c->alpha = alpha;
    c->beta = beta;
    c->has_beta = beta != 0;
    c->has_bias = bias;
    c->c_fmt = cu_dtype_of_fmt(out);
    if ((st = cvt_of(s, "k out", NX_FP32, &k->point, &c->k_out, err)) ||
        (st = cvt_of(s, "output", out, &k->point, &c->y_out, err)))
        return st;
    long S = bind_value(binds, nb, "S", 0), A = bind_value(binds, nb, "A", 1);
    c->has_split = S > 0;
    c->S = S > 0 ? S : 1;
    if (c->S > GRID_YZ_MAX || A < 1)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: split %ld / align %ld is outside the kernel's range",
                          fam_spec_family(s), fam_spec_point(s), c->S, A);
    c->slice = c->has_split ? ceil_div(ceil_div(c->K, c->S), A) * A : c->K;
    c->wgmma = strcmp(p->kernel->id, "cuda_gemm_wgmma") == 0;
    long gx = c->wgmma ? ceil_div(c->N, CU_WGMMA_TILE_N) : ceil_div(c->N, CU_GEMM_TILE_N);
    long gy = c->wgmma ? ceil_div(c->M, CU_WGMMA_TILE_M) : ceil_div(c->M, CU_GEMM_TILE_M);
    if ((st = grid_check(s, gx, gy, c->S, err)))
        return st;
    dim1(&c->main, (unsigned)gx, (unsigned)gy, (unsigned)c->S, CU_GEMM_WARPS * 32); /* 4 warps: one warpgroup */
    long cells = c->M * c->N;
    dim1(&c->combine, (unsigned)ceil_div(cells, 256), 1, 1, 256);
    c->ws_bytes = c->has_split ? (size_t)c->S * (size_t)cells * sizeof(float) : 0;
    if (c->has_split && ceil_div(cells, 256) > GRID_X_MAX)
        return grid_check(s, ceil_div(cells, 256), 1, 1, err);
    return NX_OK;
}

static nx_status plan_gemv(const fam_spec *s, cu_plan *p, nx_err *err)
{
    cu_gemv_cfg *c = &p->u.gemv;
    nx_status st;
    if ((st = fam_get_dim(s, "B", -1, &c->B, err)) || (st = fam_get_dim(s, "N", -1, &c->N, err)) ||
        (st = fam_get_dim(s, "K", -1, &c->K, err)) || (st = fam_get_dim(s, "group", -1, &c->G, err)) ||
        (st = fam_get_bool(s, "zero_points", FAM_DEFAULT_BOOL, &c->zero_points, err)) || (st = fam_get_bool(s, "packed", FAM_DEFAULT_BOOL, &c->packed, err)))
        return st;
    if (c->K % c->G)
        return nx_err_set(err, NX_EINVAL, "%s.%s: group = %ld does not divide K = %ld", fam_spec_family(s), fam_spec_point(s), c->G,
                          c->K);
    const char *sa = fam_param_get(s, "scale_apply");
    if (sa && strcmp(sa, "per_element") && strcmp(sa, "per_group"))
        return nx_err_set(err, NX_EINVAL, "%s.%s: param 'scale_apply' = '%s' is not per_element or per_group",
                          fam_spec_family(s), fam_spec_point(s), sa);
    c->per_group = sa && !strcmp(sa, "per_group");
    if (!word_in(c->per_group ? "per_group" : "per_element", p->kernel->policies))
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: scale_apply = %s, but kernel %s implements %s", fam_spec_family(s),
                          fam_spec_point(s), c->per_group ? "per_group" : "per_element", p->kernel->id,
                          p->kernel->policies);
    long ng = c->K / c->G, n = c->per_group ? ng : c->K;
    char binds[8][32], gb[8][32];
    size_t nb = 0, ngb = 0;
    char *real = NULL;
    if (c->per_group) {
        red_req rg = {"group", 1, c->G, NULL};
        if ((st = match_reduction(s, p->kernel, p->class_name, &rg, gb, &ngb, &real, NULL, 0, err)))
            return st;
        record(p, "group", real);
        const fam_reduction *g = fam_reduction_get(s, "group");
        if ((st = cvt_of(s, "group out", nx_point_out(&g->point), &g->point, &c->group_out, err)))
            return st;
    }
    red_req rk = {"k", !c->per_group, n, NULL};
    if ((st = match_reduction(s, p->kernel, p->class_name, &rk, binds, &nb, &real, NULL, 0, err)))
        return st;
    record(p, "k", real);
    const fam_reduction *k = fam_reduction_get(s, "k");
    if ((st = cvt_of(s, "k out", nx_point_out(&k->point), &k->point, &c->y_out, err)))
        return st;
    long S = bind_value(binds, nb, "S", 0), A = bind_value(binds, nb, "A", 1);
    c->V = (int)bind_value(binds, nb, "V", 1);
    if (c->V < 1 || c->V > 1024 || A < 1 || S > GRID_YZ_MAX)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: block %d / split %ld / align %ld is outside the kernel's range",
                          fam_spec_family(s), fam_spec_point(s), c->V, S, A);
    c->has_split = S > 0;
    c->S = S > 0 ? S : 1;
    c->slice = c->has_split ? ceil_div(ceil_div(n, c->S), A) * A : n;
    long gx = ceil_div(c->N, 4);
    if ((st = grid_check(s, gx, c->B, c->S, err)))
        return st;
    dim1(&c->main, (unsigned)gx, (unsigned)c->B, (unsigned)c->S, 128);
    dim1(&c->combine, (unsigned)ceil_div(c->B * c->N, 256), 1, 1, 256);
    c->ws_bytes = c->has_split ? (size_t)c->S * (size_t)c->B * (size_t)c->N * sizeof(float) : 0;
    return NX_OK;
}

static nx_status plan_rms(const fam_spec *s, cu_plan *p, nx_err *err)
{
    cu_rms_cfg *c = &p->u.rms;
    static const int ins[] = {NX_FP16, NX_BF16, NX_FP32, -1};
    int in, out;
    nx_status st;
    if ((st = fam_get_dim(s, "T", -1, &c->T, err)) || (st = fam_get_dim(s, "H", -1, &c->H, err)) ||
        (st = get_fmt(s, "in", FAM_DEFAULT_FMT, ins, &in, err)) || (st = get_fmt(s, "out", FAM_DEFAULT_FMT, ins, &out, err)) ||
        (st = fam_get_f32(s, "eps", FAM_DEFAULT_STR, &c->eps, err)) || (st = fam_get_bool(s, "residual", FAM_DEFAULT_BOOL, &c->residual, err)) ||
        (st = elem_mode(s, p->kernel, "rsqrt", "rsqrt.approx.f32", &c->rsqrt_approx, err)))
        return st;
    char binds[8][32], tmpl[256];
    size_t nb = 0;
    char *real = NULL;
    red_req rq = {"sumsq", 1, c->H, NULL};
    if ((st = match_reduction(s, p->kernel, p->class_name, &rq, binds, &nb, &real, tmpl, sizeof tmpl, err)))
        return st;
    record(p, "sumsq", real);
    const fam_reduction *r = fam_reduction_get(s, "sumsq");
    long L = bind_value(binds, nb, "L", 0), V = bind_value(binds, nb, "V", 1);
    c->tile_combine = strstr(tmpl, "tile(32") != NULL;
    int okL = c->tile_combine ? L >= 32 && L <= 1024 && L % 32 == 0 : L >= 32 && L <= 1024 && !(L & (L - 1));
    if (!okL || V < 1 || V > (1L << 20))
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s.%s: sumsq stride(%ld, ..., block=%ld): kernel %s takes 32 to 1024 threads (a power of "
                          "two for halving, a multiple of 32 for tile(32, halving, seq))",
                          fam_spec_family(s), fam_spec_point(s), L, V, p->kernel->id);
    c->in = cu_dtype_of_fmt(in);
    c->L = (int)L;
    c->V = (int)V;
    if ((st = cvt_of(s, "sumsq out", nx_point_out(&r->point), &r->point, &c->ss_out, err)) ||
        (st = cvt_of(s, "output", out, &r->point, &c->y_out, err)))
        return st;
    if ((st = grid_check(s, c->T, 1, 1, err)))
        return st;
    dim1(&c->main, (unsigned)c->T, 1, 1, (unsigned)L);
    return NX_OK;
}

static nx_status plan_attn(const fam_spec *s, cu_plan *p, nx_err *err)
{
    cu_attn_cfg *c = &p->u.attn;
    static const int ins[] = {NX_FP16, NX_BF16, NX_FP32, -1};
    int in, out;
    nx_status st;
    if ((st = fam_get_dim(s, "B", -1, &c->B, err)) || (st = fam_get_dim(s, "HQ", -1, &c->HQ, err)) ||
        (st = fam_get_dim(s, "HKV", -1, &c->HKV, err)) || (st = fam_get_dim(s, "D", -1, &c->D, err)) ||
        (st = fam_get_dim(s, "P", -1, &c->P, err)) || (st = fam_get_dim(s, "NP", -1, &c->NP, err)) ||
        (st = fam_get_dim(s, "MAXP", -1, &c->MAXP, err)) || (st = get_fmt(s, "in", FAM_DEFAULT_FMT, ins, &in, err)) ||
        (st = get_fmt(s, "out", FAM_DEFAULT_FMT, ins, &out, err)) ||
        (st = elem_mode(s, p->kernel, "exp", "ex2.approx.ftz.f32", &c->exp_approx, err)))
        return st;
    if (c->HQ % c->HKV)
        return nx_err_set(err, NX_EINVAL, "%s.%s: HQ = %ld is not a multiple of HKV = %ld", fam_spec_family(s), fam_spec_point(s),
                          c->HQ, c->HKV);
    if (c->MAXP * c->P > (1L << 30))
        return nx_err_set(err, NX_EINVAL, "%s.%s: MAXP * P = %ld positions is too many", fam_spec_family(s), fam_spec_point(s),
                          c->MAXP * c->P);
    c->split = 0;
    if (fam_param_get(s, "split") && (st = fam_param_long(s, "split", &c->split, err)))
        return st;
    if (c->split < 0)
        return nx_err_set(err, NX_EINVAL, "%s.%s: split = %ld is negative", fam_spec_family(s), fam_spec_point(s), c->split);
    if (fam_param_get(s, "scale")) {
        if ((st = fam_get_f32(s, "scale", NULL, &c->scale, err)))
            return st;
    } else {
        c->scale = crm_rsqrtf((float)c->D); /* fp32(1/sqrt(D)), correctly rounded */
    }
    const char *inname = nx_format((nx_fmt)in)->name;
    red_req rqs[4] = {{"qk", 1, c->D, inname}, {"softmax_sum", 0, 0, NULL}, {"pv", 1, 0, NULL},
                      {"combine", 1, 0, NULL}};
    char tmpl[4][256];
    long tg = 1, qv = 1, q = 0;
    size_t nr = c->split > 0 ? 4 : 3;
    for (size_t i = 0; i < nr; i++) {
        char binds[8][32];
        size_t nb = 0;
        char *real = NULL;
        if ((st = match_reduction(s, p->kernel, p->class_name, &rqs[i], binds, &nb, &real, tmpl[i], sizeof tmpl[i],
                                  err)))
            return st;
        record(p, rqs[i].name, real);
        if (i == 0) {
            tg = bind_value(binds, nb, "TG", 1);
            qv = bind_value(binds, nb, "V", 1);
        }
        if (i == 2)
            q = strstr(tmpl[2], "stride(4") ? bind_value(binds, nb, "Q", 1) : 0;
    }
    if (tg < 1 || tg > 32 || (tg & (tg - 1)) || qv < 1 || qv > (1L << 20) || q < 0 || q > (1L << 30))
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s.%s: qk stride(%ld, ..., block=%ld): kernel %s takes 1 to 32 threads per position (a "
                          "power of two)",
                          fam_spec_family(s), fam_spec_point(s), tg, qv, p->kernel->id);
    c->qk_tg = (int)tg;
    c->qk_v = qv;
    c->pv_q = q;
    c->ssum_mode = strstr(tmpl[1], "tile(32") ? 2 : strstr(tmpl[1], "halving") ? 1 : 0;
    const fam_reduction *qk = fam_reduction_get(s, "qk"), *ss = fam_reduction_get(s, "softmax_sum"),
                        *pv = fam_reduction_get(s, "pv"), *cb = fam_reduction_get(s, "combine");
    c->in = cu_dtype_of_fmt(in);
    if ((st = cvt_of(s, "qk out", nx_point_out(&qk->point), &qk->point, &c->qk_out, err)) ||
        (st = cvt_of(s, "softmax_sum out", nx_point_out(&ss->point), &ss->point, &c->ssum_out, err)) ||
        (st = cvt_of(s, "pv out", nx_point_out(&pv->point), &pv->point, &c->pv_out, err)) ||
        (st = cvt_of(s, "output", out, &pv->point, &c->y_out, err)))
        return st;
    if (c->split > 0 && (st = cvt_of(s, "combine out", nx_point_out(&cb->point), &cb->point, &c->comb_out, err)))
        return st;
    long maxpos = c->MAXP * c->P;
    c->nsplit_max = c->split > 0 ? ceil_div(maxpos, c->split) : 1;
    if ((st = grid_check(s, c->nsplit_max, c->HQ, c->B, err)))
        return st;
    dim1(&c->main, (unsigned)c->nsplit_max, (unsigned)c->HQ, (unsigned)c->B, CU_ATTN_THREADS);
    if (c->pv_q > 0) {
        c->main.smem = (size_t)(CU_ATTN_THREADS / 32) * (size_t)c->D * sizeof(float);
        if (c->main.smem > 48 * 1024)
            return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: D = %ld: pv = stride(4, ...) keeps 4 x D partials in "
                              "48 KiB of shared memory",
                              fam_spec_family(s), fam_spec_point(s), c->D);
    }
    c->prob_bytes = (size_t)c->B * (size_t)c->HQ * (size_t)maxpos * sizeof(float);
    c->part_bytes = 0;
    if (c->split > 0) {
        if (c->nsplit_max * (long)sizeof(float) > 48 * 1024)
            return nx_err_set(err, NX_EUNSUPPORTED,
                              "%s.%s: %ld splits of %ld positions: the combine keeps at most %d split weights",
                              fam_spec_family(s), fam_spec_point(s), c->nsplit_max, c->split, 48 * 1024 / (int)sizeof(float));
        dim1(&c->combine, (unsigned)c->HQ, (unsigned)c->B, 1, CU_ATTN_THREADS);
        c->combine.smem = (size_t)c->nsplit_max * sizeof(float);
        c->part_bytes = (size_t)c->B * (size_t)c->HQ * (size_t)c->nsplit_max * (size_t)(c->D + 2) * sizeof(float);
    }
    return NX_OK;
}

/* The family's kernels for the spec's policy param (in, scale_apply), in
 * table order; *n of them into out. */
static void candidates(const fam_spec *s, const cu_kernel **out, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < cu_kernel_count(); i++) {
        const cu_kernel *k = &kernels[i];
        if (strcmp(k->family, s->family))
            continue;
        if (k->policy_param) {
            const char *v = fam_param_get(s, k->policy_param);
            if (!word_in(v ? v : policy_default(k->policy_param), k->policies))
                continue;
        }
        out[(*n)++] = k;
    }
}

static nx_status plan_family(const fam_spec *spec, cu_plan *p, nx_err *err)
{
    switch (p->kernel->fam) {
    case CU_GEMM: return plan_gemm(spec, p, err);
    case CU_GEMV_W4A16: return plan_gemv(spec, p, err);
    case CU_RMSNORM: return plan_rms(spec, p, err);
    case CU_ATTN: return plan_attn(spec, p, err);
    }
    return nx_err_set(err, NX_EINTERNAL, "cuda: kernel %s of no family", p->kernel->id);
}

/* Whether kernel k claims any reduction on class cls. */
static int has_class_claims(const cu_kernel *k, const char *cls)
{
    for (size_t i = 0; i < cu_claim_count(); i++)
        if (!strcmp(claims[i].kernel, k->id) && cu_claim_has_class(&claims[i], cls))
            return 1;
    return 0;
}

/* Clears a failed attempt but keeps the kernel and the alias for messages. */
static void plan_reset(cu_plan *p)
{
    const cu_kernel *k = p->kernel;
    char alias[128], cls[16];
    memcpy(alias, p->alias_of, sizeof alias);
    memcpy(cls, p->class_name, sizeof cls);
    cu_plan_free(p);
    p->kernel = k;
    memcpy(p->alias_of, alias, sizeof alias);
    memcpy(p->class_name, cls, sizeof cls);
}

nx_status cu_plan_make(const fam_spec *spec, const char *kernel_id, const char *class_name, cu_plan *p,
                       nx_err *err)
{
    memset(p, 0, sizeof *p);
    if (!spec || !spec->family)
        return nx_err_set(err, NX_EINVAL, "cuda: no family point given");
    const char *cls = class_name ? class_name : spec->class_name;
    if (!cls || (strcmp(cls, "sm80") && strcmp(cls, "sm89") && strcmp(cls, "sm90")))
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: class '%s': the CUDA backend has kernels for sm80, sm89 and "
                          "sm90",
                          fam_spec_family(spec), fam_spec_point(spec), cls ? cls : "(none)");
    snprintf(p->class_name, sizeof p->class_name, "%s", cls);
    const char *kid = kernel_id ? kernel_id : spec->kernel;
    p->kernel = kid ? cu_kernel_find(kid) : NULL;
    if (p->kernel && strcmp(p->kernel->family, spec->family))
        return nx_err_set(err, NX_EINVAL, "%s.%s: kernel '%s' belongs to family %s", fam_spec_family(spec), fam_spec_point(spec),
                          kid, p->kernel->family);
    /* Only the point's own kernel name is served by alias: another unknown id
     * (a legacy kernel to compare against) must not run the same code and
     * make "new vs legacy" pass for nothing. */
    if (!p->kernel && kid && kernel_id && spec->kernel && strcmp(kernel_id, spec->kernel) != 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: kernel '%s' is not one of the CUDA backend's "
                          "(devices/cuda/POINTS.md)",
                          fam_spec_family(spec), fam_spec_point(spec), kid);
    if (p->kernel) {
        nx_status st = plan_family(spec, p, err);
        if (st)
            plan_reset(p);
        return st;
    }
    /* none asked for, or a registry's own name: the family's kernels for the
     * policy, in table order; the first whose claims match the declared
     * numerics serves it */
    if (kid)
        snprintf(p->alias_of, sizeof p->alias_of, "%s", kid);
    const cu_kernel *cand[8];
    size_t nc = 0;
    candidates(spec, cand, &nc);
    if (nc == 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s.%s: the CUDA backend has no kernel for family '%s'%s%s%s",
                          fam_spec_family(spec), fam_spec_point(spec), spec->family, kid ? " (asked for kernel '" : "",
                          kid ? kid : "", kid ? "')" : "");
    nx_err first = {0};
    nx_status st0 = NX_OK;
    int first_has_claims = 0;
    for (size_t i = 0; i < nc; i++) {
        nx_err e = {0};
        p->kernel = cand[i];
        nx_status st = plan_family(spec, p, &e);
        if (st == NX_OK)
            return NX_OK;
        plan_reset(p);
        if (st != NX_EUNSUPPORTED) { /* bad input: the same for every kernel */
            if (err)
                *err = e;
            return st;
        }
        /* the message of the first kernel that has claims on the class
         * (one without any realises nothing there: say what the others do) */
        if (i == 0 || (!first_has_claims && has_class_claims(cand[i], cls))) {
            first = e;
            st0 = st;
            first_has_claims = has_class_claims(cand[i], cls);
        }
    }
    p->kernel = cand[0];
    if (err) {
        *err = first;
        if (nc > 1) {
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l, " (kernels tried:");
            for (size_t i = 0; i < nc; i++) {
                l = strlen(err->msg);
                snprintf(err->msg + l, sizeof err->msg - l, " %s", cand[i]->id);
            }
            l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l, ")");
        }
        if (kid)
            nx_err_prefix(err, "kernel '%s'", kid);
    }
    return st0;
}

const char *cu_family_dims(cu_family f)
{
    switch (f) {
    case CU_GEMM: return ",M,N,K,";
    case CU_GEMV_W4A16: return ",B,N,K,";
    case CU_RMSNORM: return ",T,H,";
    case CU_ATTN: return ",B,HQ,HKV,D,P,NP,MAXP,";
    }
    return ",";
}

const char *cu_family_batch_dim(cu_family f)
{
    switch (f) {
    case CU_GEMM: return "M";
    case CU_GEMV_W4A16: return "B";
    case CU_RMSNORM: return "T";
    case CU_ATTN: return "B";
    }
    return "";
}

nx_status cu_check_inputs(const fam_spec *s, const st_file *in, nx_err *err)
{
    return ref_check_inputs(s, in, err); /* names, dtypes, shapes, integer ranges, packed int4 padding */
}
