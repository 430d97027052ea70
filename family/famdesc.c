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

/* The boundaries of a family over rows of H elements (rmsnorm, silu):
 * one element, lane tails, 256/512/1024/4096 + a few, batch 1 and odd. */
#define ROWS_H_SPACE                                                                                         \
    {{"H = 1, batch 1", "T=1,H=1", "", NULL},                                                                \
     {"H = 64 - 1 (8 lanes + 7), odd batch", "T=3,H=63", "", NULL},                                          \
     {"H = 256 + 2, batch 1", "T=1,H=258", "", NULL},                                                        \
     {"H = 512 + 5", "T=5,H=517", "", NULL},                                                                 \
     {"H = 1024 + 3 (a row of 1000+)", "T=3,H=1027", "", NULL},                                              \
     {"H = 1024 + 6", "T=2,H=1030", "", NULL},                                                               \
     {"H = 4096 + 4, batch 1", "T=1,H=4100", "", NULL}}

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
     .final_is_sum = 1,
     .space = {{"batch 1, N = 8 + 1, K = 256 + 1", "M=1,N=9,K=257", "", NULL},
               {"odd batch, N = 8 + 2, K = 64 + 1", "M=3,N=10,K=65", "", NULL},
               {"N = 8 + 3, K = 128 + 1", "M=2,N=11,K=129", "", NULL},
               {"N = 8 + 4, K = 512 - 1", "M=5,N=12,K=511", "", NULL},
               {"N = 8 + 6, K = 1024 + 1", "M=3,N=14,K=1025", "", NULL},
               {"batch 1, N = 8 + 7, K = 2048 + 1 (above any block)", "M=1,N=15,K=2049", "", NULL},
               {"N = 8 + 5, K = 256 - 1", "M=2,N=13,K=255", "", NULL}},
     .zero_rows = "b=0",
     .store = {"M=32,N=2,K=1", "a", "b=1,bias=0", 0},
     .gaps = ""},
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
     .neighbours = {{"scale_apply", "per_element,per_group"}},
     /* K must be a multiple of the group: K around a power of two by a group */
     .space = {{"batch 1, N = 8 + 1, K = 256 + 8 (group 8)", "B=1,N=9,K=264,group=8", "", NULL},
               {"N = 8 + 7, K = 1024 + 1 (41 groups of 25)", "B=3,N=15,K=1025,group=25", "", NULL},
               {"N = 8 + 3, K = 2048 + 8 (group 8)", "B=2,N=11,K=2056,group=8", "", NULL},
               {"zero points, unpacked, K = 128 - 1 (group 127)", "B=3,N=13,K=127,group=127,zero_points=true", "",
                NULL},
               {"zero points, packed nibbles, odd row lengths (K = 255, 17 groups of 15)",
                "B=5,N=10,K=255,group=15,zero_points=true,packed=true", "", NULL},
               {"zero points 0 and 15 only, packed", "B=2,N=12,K=128,group=16,zero_points=true,packed=true",
                "zeros=0:15:0:0:15", NULL},
               {"batch 9 (one row past a block of 8), packed weights", "B=9,N=7,K=96,group=32,packed=true", "",
                NULL}},
     .special_shape = "B=3,N=13,K=160,group=32,zero_points=true,packed=true",
     .zero_rows = "scales=0",
     .gaps = "no fp32 inputs (x and scales are fp16 by the family's definition)"},
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
     .final_is_sum = 1,
     .space = {{"one token, top-1, H = 256 + 1, N = 8 + 1", "T=1,E=3,H=257,N=9,topk=1", "", NULL},
               {"odd tokens, H = 1024 + 1, N = 8 + 7", "T=3,E=4,H=1025,N=15,topk=2", "", NULL},
               {"top-k = E (every expert), H = 128 + 1", "T=6,E=8,H=129,N=10,topk=8", "", NULL},
               {"H = 64 - 1, N = 8 + 3, one expert", "T=4,E=1,H=63,N=11,topk=1", "", NULL}},
     .special_shape = "T=5,E=4,H=37,N=11,topk=3",
     .zero_rows = "w=0,topk_weights=0",
     .dup_ids = "topk_ids",
     .store = {"T=32,E=3,H=1,N=8,topk=1", "x", "w=1,topk_weights=1", 0},
     .gaps = "8 or more tokens routed to one expert past the shapes above: the expert GEMMs take every token alike"},
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
     .neighbours = {{"split", "/2,*2"}},
     .space = {{"GQA ratio 4, contexts 1, P-1, P, P+1, 2P-1, 2P, 2P+1, 4P (page boundaries)",
                "B=8,HQ=4,HKV=1,D=16,P=16,NP=8,MAXP=4", "context_lens=1:15:16:17:31:32:33:64", NULL},
               {"GQA ratio 8, D = 8, batch 1, a context of 3 pages", "B=1,HQ=8,HKV=1,D=8,P=8,NP=4,MAXP=4",
                "context_lens=24", NULL},
               {"GQA ratio 1, D = 64 + 1, odd batch", "B=3,HQ=2,HKV=2,D=65,P=8,NP=6,MAXP=3", "", NULL},
               {"contexts around the splits: 511, 512, 513, 528 (one page past a split), 1024, 1040",
                "B=6,HQ=1,HKV=1,D=8,P=16,NP=66,MAXP=66", "context_lens=511:512:513:528:1024:1040", NULL},
               {"one page per split (split = P), contexts on and off page boundaries",
                "B=4,HQ=2,HKV=1,D=8,P=16,NP=8,MAXP=8,split=16", "context_lens=16:17:48:128", "split"}},
     .special_shape = "B=3,HQ=4,HKV=1,D=13,P=8,NP=12,MAXP=4",
     .zero_rows = "v_cache=0",
     .store = {"B=4,HQ=2,HKV=1,D=32,P=8,NP=4,MAXP=1", "v_cache", "context_lens=1", 0},
     .gaps = "contexts of 4096 and 32 query heads (8b-layer) are not run at small: every split and page boundary "
             "they cross is reached at the contexts above"},
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
     .final_is_sum = 0,
     .space = ROWS_H_SPACE,
     .special_shape = "T=5,H=45",
     .zero_rows = "weight=0",
     .store = {"T=2,H=32", "weight", "x=64,residual=0", 0},
     .gaps = ""},
    {.family = "silu_and_mul",
     .defaults = "in=bf16,out=@in",
     .batch_dim = "T",
     .small = "T=4,H=96",
     .layer = "T=16,H=14336",
     .out_dims = {"T", "H"},
     .out_units = {{"token", "tokens"}, {"column", "columns"}},
     .variants = {{"T=5,H=97", "in=fp32,out=fp32", "", "out=fp16"}},
     .space = {{"H = 1, batch 1", "T=1,H=1", "", NULL},
               {"H = 64 - 1, odd batch", "T=3,H=63", "", NULL},
               {"H = 1024 + 6", "T=2,H=1030", "", NULL},
               {"H = 4096 + 4, batch 1", "T=1,H=4100", "", NULL}},
     .special_shape = "T=3,H=45",
     .store = {"T=2,H=32", "x", "", 32.0},
     .gaps = "no reduction: the shapes only change the loop bounds"},
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
     .final_is_sum = 0,
     .space = ROWS_H_SPACE,
     .special_shape = "T=5,H=45",
     .exp_tensor = "x",
     .gaps = "the outputs lie in [0, 1]: no input makes them the format's large edges or exact ties; the "
             "small edges come from exp's underflow (the spread inputs)"},
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
