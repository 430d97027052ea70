/* cuda_plan.h: the host-side logic of the CUDA backend that needs no GPU:
 * the kernels and the numerics point each one realises (the claims, the
 * same table as devices/cuda/POINTS.md), the check that a family point
 * declares exactly what a kernel does, and the launch configuration (grid,
 * block, split sizes, workspace sizes) of a run.  Pure C17; the CUDA
 * runtime is only in cuda_backend.c. */
#ifndef PARITY_CUDA_PLAN_H
#define PARITY_CUDA_PLAN_H

#include <stddef.h>

#include "cuda_kernels.h"
#include "famspec.h"
#include "safetensors.h"

typedef enum cu_family { CU_GEMM, CU_GEMV_W4A16, CU_RMSNORM, CU_ATTN } cu_family;

/* A kernel of the backend. */
typedef struct cu_kernel {
    const char *id;       /* "cuda_gemm_mma" */
    const char *family;   /* "gemm" */
    cu_family fam;
    const char *policy_param; /* the param that picks the kernel in its family ("in", "scale_apply"), or NULL */
    const char *policies;     /* the values of it this kernel takes, space-separated */
    const char *what;     /* one line for listings */
} cu_kernel;

size_t cu_kernel_count(void);
const cu_kernel *cu_kernel_at(size_t i);
const cu_kernel *cu_kernel_find(const char *id);

/* One claimed numerics point: kernel `kernel` on the classes listed
 * (space-separated) realises, for reduction `reduction`, `point` (inline
 * TOML).  Templates: {S} {A} {V} {L} are integers read off the declared
 * tree (the tree of `point` is matched against the declared tree's
 * canonical text); {out} {out_rounding} {saturate} are the declared
 * point's own (the kernel applies any of fp32/fp16/bf16 with rne/rz/ru/rd);
 * {atom} is the class's atom for the input format (cu_claim_atom).
 * A reduction may have several rows: the alternatives of its tree. */
typedef struct cu_claim {
    const char *kernel;
    const char *classes;
    const char *reduction;
    const char *point;
    const char *when;     /* when the reduction runs, for POINTS.md ("split > 0"), or NULL */
} cu_claim;

size_t cu_claim_count(void);
const cu_claim *cu_claim_at(size_t i);

/* The atom text {atom} stands for on class_name with input format in_fmt
 * ("bf16" or "fp16"), e.g. `{ preset = "sm80.mma.bf16" }`; NULL when the
 * class has none. */
const char *cu_claim_atom(const char *class_name, const char *in_fmt);

/* Fills a claim's point template: vars are "NAME=VALUE" strings (S=4,
 * out=fp16, atom={...}).  Returns a malloc'd text, or NULL with *err set
 * (a template variable without a value, out of memory). */
char *cu_claim_fill(const char *tmpl, const char *const *vars, size_t nvars, nx_err *err);

/* Matches a claim's tree template (e.g. "split({S}, chain(8), seq)")
 * against a canonical tree text; on success returns 1 and writes up to
 * maxb bindings "NAME=INT" into binds (each at most 32 bytes). */
int cu_tree_match(const char *tmpl, const char *tree, char binds[][32], size_t maxb, size_t *nb);

/* A classes list contains class_name. */
int cu_claim_has_class(const cu_claim *c, const char *class_name);

/* The class of a CUDA device by compute capability ("sm80", "sm89",
 * "sm90"), or NULL for one this backend has no kernels for. */
const char *cu_class_of_cc(int major, int minor);

/* Everything a run needs, computed from the spec. */
typedef struct cu_plan {
    const cu_kernel *kernel;
    char class_name[16];
    char alias_of[128];       /* the kernel id asked for when it is not one of ours (see cu_plan_make), or "" */
    union {
        cu_gemv_cfg gemv;
        cu_gemm_cfg gemm;
        cu_rms_cfg rms;
        cu_attn_cfg attn;
    } u;
    /* the realised point of every reduction the run uses, canonical text,
     * for messages and traces */
    char *realised[4];
    const char *red_names[4];
    size_t nreds;
} cu_plan;

void cu_plan_free(cu_plan *p);

/* Chooses the kernel: kernel_id, else spec->kernel, else the family's
 * kernel for its policy param.  An id that is not one of this backend's
 * (a registry's own kernel name) is served by the family's kernel for the
 * policy, recorded in alias_of: the numerics check below still decides.
 * Then checks that every reduction the run uses is
 * declared exactly as the kernel realises it on class_name (else
 * NX_EUNSUPPORTED naming the reduction, the declared and the realised
 * point), that the elementwise functions are the ones it evaluates (exp,
 * rsqrt: cr), reads the params and the shape, and computes the launch
 * configuration.  Bad params are NX_EINVAL. */
nx_status cu_plan_make(const fam_spec *spec, const char *kernel_id, const char *class_name, cu_plan *p,
                       nx_err *err);

/* Bytes of device memory the plan's workspaces take. */
size_t cu_plan_workspace(const cu_plan *p);

/* The family's shape dimensions as ",M,N,K," (docs/families.md order) and
 * the one that counts rows for batch variants ("M", "B", "T"). */
const char *cu_family_dims(cu_family f);
const char *cu_family_batch_dim(cu_family f);

/* Checks the input tensors against the family's description
 * (refimpl's ref_inputs: names, dtypes, shapes and integer ranges), so no
 * kernel reads out of bounds: a page index or a context length outside its
 * range is an input error, never a device fault. */
nx_status cu_check_inputs(const fam_spec *spec, const st_file *in, nx_err *err);

#endif
