/* famdesc.c: one descriptor per kernel family (famdesc.h), data, not
 * branches.
 *
 * Presets.  small: seconds in all.  8b-layer: one decoder layer of an
 * 8B-class model (hidden 4096, intermediate 14336, 32 query / 8 KV heads of
 * dim 128, context 4096), batch 16 (attention: 4 sequences of up to 4096
 * positions; MoE: an 8-expert slice with N = 2048 so that it runs in
 * seconds on a CPU).
 *
 * Power variants: reduction lengths that are not multiples of the lane
 * width (8), attention contexts that span several 512-position splits. */
#include "famdesc.h"

#include <string.h>

static const fam_desc descs[] = {
    {.family = "gemm",
     .defaults = "in=bf16,out=bf16,alpha=1,beta=0,bias=false",
     .batch_dim = "M",
     .small = "M=4,N=24,K=200",
     .layer = "M=16,N=4096,K=4096",
     .out_dims = {"M", "N"},
     .out_units = {{"row", "rows"}, {"column", "columns"}},
     .value_params = {"alpha", "beta", "bias"},
     .variants = {{"M=5,N=29,K=203", "in=fp32,out=fp32", "", "out=fp16"}},
     .probe = {"k", "a", "M", "K", "b=1,bias=0", "N=5"},
     .final_red = "k",
     .final_is_sum = 1},
    {.family = "gemv_w4a16",
     .defaults = "B=1,zero_points=false,packed=false",
     .batch_dim = "B",
     .small = "B=3,N=20,K=512",
     .layer = "B=1,N=14336,K=4096",
     .out_dims = {"B", "N"},
     .out_units = {{"row", "rows"}, {"column", "columns"}},
     .value_params = {"group", "zero_points"},
     .variants = {{"B=3,N=21,K=180,group=36", "", "", ""}, {"B=2,N=19,K=384", "", "", ""}},
     .probe = {"k", "x", "B", "K", "qweight=9,zeros=8,scales=1", "N=3"},
     .value_reds = {{"k", "scale_apply", "per_group"}},
     .exact_products = {{"k", "fp16 x fp16 products (22 bits) are exact in fp32: fma has no effect"},
                        {"group", "fp16 x int4 products (15 bits) are exact in fp32: fma has no effect"}},
     .final_red = "k",
     .final_is_sum = 1,
     .neighbours = {{"scale_apply", "per_element,per_group"}}},
    {.family = "moe_grouped_gemm",
     .defaults = "in=bf16",
     .batch_dim = "T",
     .small = "T=5,E=4,H=96,N=16,topk=2",
     .layer = "T=16,E=8,H=4096,N=2048,topk=2",
     .out_dims = {"T", "N"},
     .out_units = {{"token", "tokens"}, {"column", "columns"}},
     .variants = {{"T=7,E=5,H=101,N=13,topk=3", "in=fp32", "", ""}},
     .probe = {"k", "x", "T", "H", "w=1,topk_weights=1", "N=9"},
     .final_red = "combine",
     .final_is_sum = 1},
    {.family = "paged_decode_attention",
     .defaults = "in=bf16,out=@in",
     .batch_dim = "B",
     .small = "B=3,HQ=4,HKV=2,D=16,P=8,NP=12,MAXP=4",
     .layer = "B=4,HQ=32,HKV=8,D=128,P=16,NP=1024,MAXP=256",
     .out_dims = {"B", "HQ", "D"},
     .out_units = {{"sequence", "sequences"}, {"head", "heads"}, {"column", "columns"}},
     .value_params = {"scale"},
     /* every context 1100 positions: three splits of a 512 split, the last short */
     .variants = {{"B=2,HQ=2,HKV=1,D=13,P=16,NP=72,MAXP=72", "in=fp32,out=fp32", "context_lens=1100", "out=fp16"}},
     .value_reds = {{"softmax_sum", NULL, NULL}},
     .final_red = "pv",
     .final_is_sum = 0,
     .neighbours = {{"split", "/2,*2"}}},
    {.family = "rmsnorm",
     .defaults = "in=bf16,out=@in,eps=1e-6,residual=false",
     .batch_dim = "T",
     .small = "T=4,H=160",
     .layer = "T=16,H=4096",
     .out_dims = {"T", "H"},
     .out_units = {{"token", "tokens"}, {"column", "columns"}},
     .value_params = {"eps", "residual"},
     .variants = {{"T=32,H=163", "in=fp32,out=fp32", "", "out=fp16"}},
     .final_red = "sumsq",
     .final_is_sum = 0},
    {.family = "silu_and_mul",
     .defaults = "in=bf16,out=@in",
     .batch_dim = "T",
     .small = "T=4,H=96",
     .layer = "T=16,H=14336",
     .out_dims = {"T", "H"},
     .out_units = {{"token", "tokens"}, {"column", "columns"}},
     .variants = {{"T=5,H=97", "in=fp32,out=fp32", "", "out=fp16"}}},
    {.family = "softmax",
     .defaults = "in=bf16,out=@in",
     .batch_dim = "T",
     .small = "T=4,H=131",
     .layer = "T=32,H=4096",
     .out_dims = {"T", "H"},
     .out_units = {{"row", "rows"}, {"column", "columns"}},
     .variants = {{"T=5,H=163", "in=fp32,out=fp32", "", "out=fp16"}},
     /* the terms are exp's results: no +-M pair survives exp, so no order probes */
     .value_reds = {{"sum", NULL, NULL}},
     .final_red = "sum",
     .final_is_sum = 0},
};
#define NDESCS (sizeof descs / sizeof descs[0])

const fam_desc *fam_desc_of(const char *family)
{
    for (size_t i = 0; family && i < NDESCS; i++)
        if (strcmp(descs[i].family, family) == 0)
            return &descs[i];
    return NULL;
}

const fam_desc *fam_desc_at(size_t i)
{
    return i < NDESCS ? &descs[i] : NULL;
}

const char *fam_desc_default(const char *family, const char *name, char *buf, size_t n)
{
    const fam_desc *d = fam_desc_of(family);
    size_t ln = name ? strlen(name) : 0;
    for (const char *p = d ? d->defaults : NULL; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > ln && !strncmp(p, name, ln) && p[ln] == '=') {
            size_t vl = len - ln - 1;
            if (vl + 1 > n)
                return NULL;
            memcpy(buf, p + ln + 1, vl);
            buf[vl] = 0;
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

const char *fam_batch_dim(const char *family)
{
    const fam_desc *d = fam_desc_of(family);
    return d ? d->batch_dim : NULL;
}

static const char *preset_of(const fam_desc *d, const char *preset)
{
    if (!strcmp(preset, "small"))
        return d->small;
    if (!strcmp(preset, "8b-layer"))
        return d->layer;
    return NULL;
}

const char *fam_preset_shape(const char *preset, const char *family)
{
    const fam_desc *d = fam_desc_of(family);
    return d && preset ? preset_of(d, preset) : NULL;
}

int fam_preset_known(const char *preset)
{
    for (size_t i = 0; preset && i < NDESCS; i++)
        if (preset_of(&descs[i], preset))
            return 1;
    return 0;
}
