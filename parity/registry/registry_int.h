/* registry_int.h: what registry.c, registry_lint.c and registry_compare.c
 * share and nothing else includes: the loaded files, the merged view of one
 * class along its chain (which TOML node each field came from), template
 * filling and the internal resolution with the origin of every value. */
#ifndef PARITY_REGISTRY_INT_H
#define PARITY_REGISTRY_INT_H

#include "nx_sbuf.h"
#include "registry.h"
#include "tomlc.h"

/* ---- the loaded files ------------------------------------------------- */

typedef struct reg_class {
    char *name;                 /* the directory name */
    char *hw_path;              /* DIR/<class>/HARDWARE.toml */
    tc_node *hw;                /* NULL when the file is absent */
    char *kf_path;              /* DIR/<class>/common/KERNEL_FAMILIES.toml */
    tc_node *kf;                /* NULL when the file is absent */
    int parent;                 /* index of the parent class, -1: none or not found */
    const tc_node *parent_node; /* HARDWARE.toml's 'parent' value, NULL when absent */
} reg_class;

struct reg_registry {
    char *dir;
    reg_class *cls;
    size_t ncls;
    char *dev_path;             /* DIR/DEVICES.toml */
    tc_node *dev;               /* NULL when absent */
};

int reg_class_find(const reg_registry *r, const char *name);

/* ---- schema: the keys each table may hold ----------------------------- */

enum {
    KS_STR = 1u, KS_INT = 2u, KS_FLOAT = 4u, KS_BOOL = 8u, KS_TABLE = 16u,
    KS_ASTR = 32u, KS_AINT = 64u, KS_ATAB = 128u,
    KS_NUM = KS_INT | KS_FLOAT,
    KS_SCALAR = KS_STR | KS_INT | KS_FLOAT | KS_BOOL
};

typedef struct reg_keyspec {
    const char *key;
    unsigned kinds;
} reg_keyspec;

/* NULL-key terminated */
extern const reg_keyspec reg_ks_dev_root[], reg_ks_device[], reg_ks_hw_root[], reg_ks_kf_root[], reg_ks_family[],
    reg_ks_compute[], reg_ks_param[], reg_ks_point[], reg_ks_tolerance[], reg_ks_elem[], reg_ks_evidence[];
/* The keys of a numerics point table and its atom table (docs/numerics.md §3). */
extern const char *const reg_point_keys[], *const reg_atom_keys[];

int reg_ks_has(const reg_keyspec *ks, const char *key);

/* ---- the view of one class: manifests merged along its chain ----------- */

typedef struct reg_kv {
    const char *key;
    const tc_node *n; /* the value; its position is where it came from */
} reg_kv;

typedef struct reg_kvs {
    reg_kv *v;
    size_t n;
} reg_kvs;

const tc_node *reg_kvs_get(const reg_kvs *k, const char *key);

typedef struct reg_vparam {
    const char *name;
    const tc_node *decl; /* the nearest [[family.param]] table */
    const tc_node *kind, *def, *desc;
} reg_vparam;

typedef struct reg_vpoint {
    const char *id;
    const tc_node **decls; /* every [[family.point]] table with this id, base first */
    size_t ndecls;
    const tc_node *how, *reason, *kernel, *desc, *tolerance;
    reg_kvs params, numerics, elem;
} reg_vpoint;

enum {
    RV_F_DESC, RV_F_OPS, RV_F_FORMATS, RV_F_ROWS, RV_F_COMPUTE, RV_F_KERNELS, RV_F_PIPELINE,
    RV_F_SHAPE, RV_F_REDUCTIONS, RV_F_ELEMENTWISE, RV_NFF
};
extern const char *const reg_vfamily_field_names[RV_NFF];

typedef struct reg_vfamily {
    const char *id;
    const tc_node **decls; /* every [[family]] table with this id, base first */
    size_t ndecls;
    const tc_node *f[RV_NFF];
    reg_vparam *params;
    size_t nparams;
    reg_vpoint *points;
    size_t npoints;
    const tc_node **evidence; /* every [[family.evidence]] along the chain */
    size_t nevidence;
} reg_vfamily;

typedef struct reg_view {
    size_t cls;
    size_t *chain; /* cls first, then its parent, ... */
    size_t nchain;
    reg_vfamily *fams;
    size_t nfams;
    reg_kvs defaults;       /* class [defaults], nearest class wins */
    const tc_node **atoms; /* atom names the chain realises */
    size_t natoms;
    int broken;            /* lenient build cut the chain (missing parent, cycle) */
} reg_view;

/* Builds the view of class cls.  Not lenient: a missing parent or a cycle
 * is an error; lenient: the chain stops there and v->broken is set. */
nx_status reg_view_build(const reg_registry *r, size_t cls, int lenient, reg_view *v, nx_err *err);
void reg_view_free(reg_view *v);
reg_vfamily *reg_vfamily_find(const reg_view *v, const char *id);
reg_vpoint *reg_vpoint_find(const reg_vfamily *f, const char *id);
reg_vparam *reg_vparam_find(const reg_vfamily *f, const char *name);
/* 1 if name is one of the family's declared shape dimensions. */
int reg_is_shape_dim(const reg_vfamily *f, const char *name);

/* ---- parameter values and templates ----------------------------------- */

typedef struct reg_env_val {
    const char *name;      /* points into the registry, or at own */
    char *own;             /* a name only --shape gave, owned */
    char *value;           /* owned */
    const tc_node *origin; /* where the value was written; NULL for --shape */
    const char *source;    /* "point", "family default", "class default", "shape" */
} reg_env_val;

typedef struct reg_env {
    reg_env_val *v;
    size_t n;
} reg_env;

void reg_env_free(reg_env *e);
const reg_env_val *reg_env_get(const reg_env *e, const char *name);
/* The values of the family's params at point p for the view's class:
 * point > family default > class default; then undeclared point params. */
nx_status reg_env_build(const reg_view *v, const reg_vfamily *f, const reg_vpoint *p, reg_env *env, nx_err *err);

/* A scalar node as a param value: strings as they are, integers in
 * decimal, booleans true/false, floats in the shortest text that reads
 * back to the same double.  malloc'd; NULL when out of memory. */
char *reg_scalar_text(const tc_node *n);

/* Calls cb for every {name} in s; returns NX_EINVAL (message set, without a
 * position) if a brace does not open a well-formed {name}. */
typedef nx_status (*reg_tmpl_cb)(const char *name, void *ctx, nx_err *err);
nx_status reg_tmpl_scan(const char *s, reg_tmpl_cb cb, void *ctx, nx_err *err);

/* Reads a numerics point from a registry table after filling its
 * templates from env; a name without a value takes placeholder (NULL: an
 * error at the string).  Errors carry file:line:col. */
nx_status reg_point_from_table(const tc_node *table, const reg_env *env, const char *placeholder, nx_point *pt,
                              nx_err *err);

/* ---- resolution with origins ------------------------------------------ */

typedef struct reg_resolved {
    fam_spec spec;
    reg_env env;
    reg_view view;
    const reg_vfamily *fam;
    const reg_vpoint *pt;
    char *canon; /* the canonical text whose SHA-256 is spec.hash */
} reg_resolved;

nx_status reg_resolve_spec(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                     reg_resolved *res, nx_err *err);
void reg_resolved_free(reg_resolved *res);

/* 1 if a param of this kind enters the hash (numerics, policy, undeclared). */
int reg_kind_hashed(const reg_vfamily *f, const char *name);

/* "file:line" of a node (the key's line for a key/value). */
void reg_put_loc(nx_sbuf *b, const tc_node *n);

#endif
