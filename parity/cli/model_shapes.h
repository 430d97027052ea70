/* model_shapes.h: the shapes that matter to a model (docs/ledger.md,
 * "Parity at the shapes that matter"): each op of the model's step that a
 * class's rules lower to a family point, at its real shape at C = 1, 16
 * and 128, capped where the exact reference's cost forbids (a declared cap,
 * said with its reason).  `parity campaign --shapes model:M` runs them;
 * `parity gate` times each point at its C = 1 shape. */
#ifndef PARITY_CLI_MODEL_SHAPES_H
#define PARITY_CLI_MODEL_SHAPES_H

#include <stddef.h>

#include "registry.h"

/* The flops one campaign shape may cost (the op's flops expression at the
 * shape): over it, the dimensions that index independent outputs are
 * halved (gemm N, gemv N, moe N, attention heads) until it fits, then the
 * batch. */
#define CLI_MODEL_FLOPS (1LL << 22)

typedef struct cli_mshape {
    char point[160];   /* FAMILY.POINT */
    char shape[256];   /* the shape run */
    char real[256];    /* the op's real shape */
    char said[512];    /* "qkv_proj at C=16: M=16,N=6144,K=4096, capped N 6144 -> 16 (...)" */
    long long c;
    int capped;
} cli_mshape;

/* The distinct (point, shape) pairs of model's step on class cls, in step
 * order at C = 1, then 16, then 128; *out malloc'd.  An error when the
 * registry has no models/M/STEP.toml. */
nx_status cli_model_shapes(const reg_registry *reg, const char *cls, const char *model, cli_mshape **out, size_t *n,
                           nx_err *err);

#endif
