/* famdesc.c: each family's batch dimension and preset shapes (famdesc.h),
 * data, not branches. */
#include "famdesc.h"

#include <stddef.h>
#include <string.h>

/* Which dimension holds independent rows. */
static const struct { const char *family, *dim; } batch_dims[] = {
    {"gemm", "M"}, {"gemv_w4a16", "B"}, {"moe_grouped_gemm", "T"},
    {"paged_decode_attention", "B"}, {"rmsnorm", "T"}, {"silu_and_mul", "T"},
};

const char *fam_batch_dim(const char *family)
{
    for (size_t i = 0; family && i < sizeof batch_dims / sizeof batch_dims[0]; i++)
        if (strcmp(batch_dims[i].family, family) == 0)
            return batch_dims[i].dim;
    return NULL;
}

/* Shape presets.  8b-layer: one decoder layer of an 8B-class model (hidden
 * 4096, intermediate 14336, 32 query / 8 KV heads of dim 128, context 4096),
 * batch 16 (attention: 4 sequences of up to 4096 positions; MoE: an
 * 8-expert slice with N = 2048 so that it runs in seconds on a CPU). */
static const struct { const char *preset, *family, *shape; } presets[] = {
    {"small", "gemm", "M=4,N=24,K=200"},
    {"small", "gemv_w4a16", "B=3,N=20,K=512"},
    {"small", "moe_grouped_gemm", "T=5,E=4,H=96,N=16,topk=2"},
    {"small", "paged_decode_attention", "B=3,HQ=4,HKV=2,D=16,P=8,NP=12,MAXP=4"},
    {"small", "rmsnorm", "T=4,H=160"},
    {"small", "silu_and_mul", "T=4,H=96"},
    {"8b-layer", "gemm", "M=16,N=4096,K=4096"},
    {"8b-layer", "gemv_w4a16", "B=1,N=14336,K=4096"},
    {"8b-layer", "moe_grouped_gemm", "T=16,E=8,H=4096,N=2048,topk=2"},
    {"8b-layer", "paged_decode_attention", "B=4,HQ=32,HKV=8,D=128,P=16,NP=1024,MAXP=256"},
    {"8b-layer", "rmsnorm", "T=16,H=4096"},
    {"8b-layer", "silu_and_mul", "T=16,H=14336"},
};

const char *fam_preset_shape(const char *preset, const char *family)
{
    for (size_t i = 0; preset && family && i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].preset, preset) == 0 && strcmp(presets[i].family, family) == 0)
            return presets[i].shape;
    return NULL;
}

int fam_preset_known(const char *preset)
{
    for (size_t i = 0; preset && i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].preset, preset) == 0)
            return 1;
    return 0;
}
