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

typedef struct rg_class {
    char *name;                 /* the directory name */
    char *hw_path;              /* DIR/<class>/HARDWARE.toml */
    tc_node *hw;                /* NULL when the file is absent */
    char *kf_path;              /* DIR/<class>/common/KERNEL_FAMILIES.toml */
    tc_node *kf;                /* NULL when the file is absent */
    int parent;                 /* index of the parent class, -1: none or not found */
    const tc_node *parent_node; /* HARDWARE.toml's 'parent' value, NULL when absent */
} rg_class;

struct reg_registry {
    char *dir;
    rg_class *cls;
    size_t ncls;
    char *dev_path;             /* DIR/DEVICES.toml */
    tc_node *dev;               /* NULL when absent */
};

int rg_class_find(const reg_registry *r, const char *name);

/* ---- schema: the keys each table may hold ----------------------------- */

enum {
    KS_STR = 1u, KS_INT = 2u, KS_FLOAT = 4u, KS_BOOL = 8u, KS_TABLE = 16u,
    KS_ASTR = 32u, KS_AINT = 64u, KS_ATAB = 128u,
    KS_NUM = KS_INT | KS_FLOAT,
    KS_SCALAR = KS_STR | KS_INT | KS_FLOAT | KS_BOOL
};

typedef struct rg_keyspec {
    const char *key;
    unsigned kinds;
} rg_keyspec;

/* NULL-key terminated */
extern const rg_keyspec rg_ks_dev_root[], rg_ks_device[], rg_ks_hw_root[], rg_ks_kf_root[], rg_ks_family[],
    rg_ks_compute[], rg_ks_param[], rg_ks_point[], rg_ks_tolerance[], rg_ks_elem[], rg_ks_evidence[];
/* The keys of a numerics point table and its atom table (docs/numerics.md §3). */
extern const char *const rg_point_keys[], *const rg_atom_keys[];

int rg_ks_has(const rg_keyspec *ks, const char *key);

/* ---- the view of one class: manifests merged along its chain ----------- */

typedef struct rv_kv {
    const char *key;
    const tc_node *n; /* the value; its position is where it came from */
} rv_kv;

typedef struct rv_kvs {
    rv_kv *v;
    size_t n;
} rv_kvs;

const tc_node *rv_kvs_get(const rv_kvs *k, const char *key);

typedef struct rv_param {
    const char *name;
    const tc_node *decl; /* the nearest [[family.param]] table */
    const tc_node *kind, *def, *desc;
} rv_param;

typedef struct rv_point {
    const char *id;
    const tc_node **decls; /* every [[family.point]] table with this id, base first */
    size_t ndecls;
    const tc_node *how, *reason, *kernel, *desc, *tolerance;
    rv_kvs params, numerics, elem;
} rv_point;

enum {
    RV_F_DESC, RV_F_OPS, RV_F_FORMATS, RV_F_ROWS, RV_F_COMPUTE, RV_F_KERNELS, RV_F_PIPELINE,
    RV_F_SHAPE, RV_F_REDUCTIONS, RV_F_ELEMENTWISE, RV_NFF
};
extern const char *const rv_family_field_names[RV_NFF];

typedef struct rv_family {
    const char *id;
    const tc_node **decls; /* every [[family]] table with this id, base first */
    size_t ndecls;
    const tc_node *f[RV_NFF];
    rv_param *params;
    size_t nparams;
    rv_point *points;
    size_t npoints;
    const tc_node **evidence; /* every [[family.evidence]] along the chain */
    size_t nevidence;
} rv_family;

typedef struct rv_view {
    size_t cls;
    size_t *chain; /* cls first, then its parent, ... */
    size_t nchain;
    rv_family *fams;
    size_t nfams;
    rv_kvs defaults;       /* class [defaults], nearest class wins */
    const tc_node **atoms; /* atom names the chain realises */
    size_t natoms;
    int broken;            /* lenient build cut the chain (missing parent, cycle) */
} rv_view;

/* Builds the view of class cls.  Not lenient: a missing parent or a cycle
 * is an error; lenient: the chain stops there and v->broken is set. */
nx_status rv_build(const reg_registry *r, size_t cls, int lenient, rv_view *v, nx_err *err);
void rv_free(rv_view *v);
rv_family *rv_family_find(const rv_view *v, const char *id);
rv_point *rv_point_find(const rv_family *f, const char *id);
rv_param *rv_param_find(const rv_family *f, const char *name);
/* 1 if name is one of the family's declared shape dimensions. */
int rv_is_shape_dim(const rv_family *f, const char *name);

/* ---- parameter values and templates ----------------------------------- */

typedef struct rs_val {
    const char *name;      /* points into the registry, or at own */
    char *own;             /* a name only --shape gave, owned */
    char *value;           /* owned */
    const tc_node *origin; /* where the value was written; NULL for --shape */
    const char *source;    /* "point", "family default", "class default", "shape" */
} rs_val;

typedef struct rs_env {
    rs_val *v;
    size_t n;
} rs_env;

void rs_env_free(rs_env *e);
const rs_val *rs_env_get(const rs_env *e, const char *name);
/* The values of the family's params at point p for the view's class:
 * point > family default > class default; then undeclared point params. */
nx_status rs_env_build(const rv_view *v, const rv_family *f, const rv_point *p, rs_env *env, nx_err *err);

/* A scalar node as a param value: strings as they are, integers in
 * decimal, booleans true/false, floats in the shortest text that reads
 * back to the same double.  malloc'd; NULL when out of memory. */
char *rg_scalar_text(const tc_node *n);

/* Calls cb for every {name} in s; returns NX_EINVAL (message set, without a
 * position) if a brace does not open a well-formed {name}. */
typedef nx_status (*rg_tmpl_cb)(const char *name, void *ctx, nx_err *err);
nx_status rg_tmpl_scan(const char *s, rg_tmpl_cb cb, void *ctx, nx_err *err);

/* Reads a numerics point from a registry table after filling its
 * templates from env; a name without a value takes placeholder (NULL: an
 * error at the string).  Errors carry file:line:col. */
nx_status rg_point_from_table(const tc_node *table, const rs_env *env, const char *placeholder, nx_point *pt,
                              nx_err *err);

/* ---- resolution with origins ------------------------------------------ */

typedef struct rs_result {
    fam_spec spec;
    rs_env env;
    rv_view view;
    const rv_family *fam;
    const rv_point *pt;
    char *canon; /* the canonical text whose SHA-256 is spec.hash */
} rs_result;

nx_status rs_resolve(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                     rs_result *res, nx_err *err);
void rs_free(rs_result *res);

/* 1 if a param of this kind enters the hash (numerics, policy, undeclared). */
int rs_kind_hashed(const rv_family *f, const char *name);

/* "file:line" of a node (the key's line for a key/value). */
void rg_put_loc(nx_sbuf *b, const tc_node *n);

#endif
