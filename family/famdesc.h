/* famdesc.h: what the harness knows about each kernel family beyond its
 * registry entry, as one C descriptor per family (famdesc.c): the dimension
 * that indexes independent rows (the batch), the campaign's preset shapes,
 * the output's axes as the diff names them, the params that define the
 * family's mathematical value, and what the power checks need (their
 * shapes, order probes and where rounding happens) and its params'
 * defaults.  The family's tensors and its reduction rows are its reference
 * file's (refimpl/<family>.c).
 * Adding a family adds one descriptor here. */
#ifndef PARITY_FAMDESC_H
#define PARITY_FAMDESC_H

#include <stddef.h>

#define FAM_MAX_VARIANTS 2
#define FAM_MAX_REDS 2

/* A shape the power checks run besides the preset's: reduction lengths that
 * are not multiples of the lane width; `fp32` the params that make inputs
 * and output fp32, `fills` tensors held at values, `fp16` the params for an
 * fp16 output ("" none). */
typedef struct fam_variant {
    const char *shape, *fp32, *fills, *fp16;
} fam_variant;

/* FPRev-style order probes of reduction `red` through `tensor`, [rows, len]
 * (docs/power.md): the tensors of `fills` hold the given values so that
 * every term is the pattern's element times one; `shape` is set besides. */
typedef struct fam_probe {
    const char *red, *tensor, *rows, *len, *fills, *shape;
} fam_probe;

/* A reduction whose terms are values, not products (fma cannot matter),
 * always (param NULL) or when param = value. */
typedef struct fam_value_red {
    const char *red, *param, *value;
} fam_value_red;

/* A reduction whose products are exact in its fp32 accumulator, and why. */
typedef struct fam_exact_product {
    const char *red, *why;
} fam_exact_product;

/* A param a port plausibly gets wrong and the values to try ("*2", "/2":
 * of the declared value). */
typedef struct fam_neighbour {
    const char *param, *values;
} fam_neighbour;

/* The input-space model (docs/power.md, "The input-space model"): a shape
 * at the boundaries where a real kernel changes path, and what it reaches.
 * `fills` holds tensors at values, a list "a:b:c" cycling over the
 * elements ("context_lens=1:15:16"); `only` a param the point must set to a
 * nonzero value for the shape to apply ("split"), or NULL. */
#define FAM_MAX_SPACE 8
typedef struct fam_space {
    const char *what, *shape, *fills, *only;
} fam_space;

/* A shape where the output equals the values of one input tensor, so that
 * the output conversion sees every edge of the output format: rows of
 * `tensor` hold the edge values; `fills` the other tensors; gate > 0: the
 * tensor's rows are [gate | up], the gate half held at `gate`, the up half
 * the values divided by it (silu(g) = g exactly there). */
typedef struct fam_store {
    const char *shape, *tensor, *fills;
    double gate;
} fam_store;

typedef struct fam_desc {
    const char *family;
    const char *batch_dim;             /* "M", "B", "T" */
    const char *small, *layer;         /* shapes of the presets "small" and "8b-layer" */
    const char *out_dims[3];           /* the main output's axes by dimension */
    const char *out_units[3][2];       /* their names: unit, units */
    const char *value_params[4];       /* params that define the mathematical value */
    /* The defaults of the family's params, "NAME=VALUE,...": what refimpl,
     * the campaign and every backend read for an absent param (famspec.h's
     * readers); "NAME=@OTHER": the value of param OTHER (out=@in: the
     * output in the input's format). */
    const char *defaults;
    fam_variant variants[FAM_MAX_VARIANTS];
    fam_probe probe;                   /* red NULL: none */
    fam_value_red value_reds[FAM_MAX_REDS];
    fam_exact_product exact_products[FAM_MAX_REDS];
    const char *final_red;             /* the reduction whose out_rounding rounds the output */
    int final_is_sum;                  /* 1: the output is that reduction's result itself */
    fam_neighbour neighbours[FAM_MAX_REDS];
    /* The input-space model beyond the variants: */
    fam_space space[FAM_MAX_SPACE];   /* boundary shapes (fp32 where the family takes it, normal inputs) */
    const char *special_shape;         /* the per-tensor special-value cases' shape (NULL: the first variant's) */
    const char *zero_rows;             /* "b=0,...": every third row of the tensor held at the value (zero
                                          weights) among inputs with inf and NaN, one case per tensor */
    const char *exp_tensor;            /* a tensor whose values go through exp, spread over [m - 110, m] */
    const char *dup_ids;               /* an id tensor whose rows get a repeated id (top-k) */
    fam_store store;                   /* tensor NULL: no shape makes the output one tensor's values */
    const char *gaps;                  /* what the model names that this family's cases cannot reach */
} fam_desc;

/* The descriptor of family, or NULL for a family this table does not know. */
const fam_desc *fam_desc_of(const char *family);
/* The i-th descriptor, NULL past the end. */
const fam_desc *fam_desc_at(size_t i);

/* The default of param name of family (its descriptor's `defaults`) into
 * buf, "@OTHER" for another param's value; NULL when it has none. */
const char *fam_desc_default(const char *family, const char *name, char *buf, size_t n);

/* The dimension that indexes independent rows of a family ("M", "B",
 * "T"), or NULL for a family this table does not know. */
const char *fam_batch_dim(const char *family);

/* The shape of family in preset ("small", "8b-layer"): "M=4,N=24,K=200";
 * NULL when the preset or the family is unknown. */
const char *fam_preset_shape(const char *preset, const char *family);
/* 1 when some family has a shape in preset. */
int fam_preset_known(const char *preset);

#endif
