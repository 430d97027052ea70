/* registry.h: the family registry (docs/registry.md): kernels/<class>/
 * common/KERNEL_FAMILIES.toml, kernels/<class>/HARDWARE.toml and
 * kernels/DEVICES.toml, loaded, resolved along class chains, linted. */
#ifndef PARITY_REGISTRY_H
#define PARITY_REGISTRY_H

#include <stdio.h>

#include "famspec.h"

typedef struct reg_registry reg_registry;

/* Loads every manifest under dir.  Structural errors (unparsable TOML,
 * wrong types) fail the load; semantic problems are for reg_lint. */
nx_status reg_load(const char *dir, reg_registry **out, nx_err *err);
void reg_free(reg_registry *r);

/* Runs every lint rule; each finding is one line "file:line: message" in
 * *report (malloc'd; "" when clean).  Returns the number of errors. */
size_t reg_lint(const reg_registry *r, char **report);

/* Resolves "FAMILY.POINT" for a class along its parent chain, fills the
 * templates from the params and the shape ("K=4096,N=14336"; NULL or ""
 * when the point needs no shape), and returns the spec. */
nx_status reg_resolve(const reg_registry *r, const char *class_name, const char *family_point,
                      const char *shape, fam_spec *out, nx_err *err);

/* The longest family or point id (ids name trace files: docs/limits.md). */
#define RG_ID_MAX 64

/* Classes known to the registry and the family points visible from one. */
size_t reg_class_count(const reg_registry *r);
const char *reg_class_name(const reg_registry *r, size_t i);
/* The ids "FAMILY.POINT" visible from class_name, in manifest order;
 * *ids is malloc'd (free each string and the array). */
nx_status reg_list_points(const reg_registry *r, const char *class_name, char ***ids, size_t *count,
                          nx_err *err);

/* Additions for the CLI (`parity registry list|show|compare`) and tests. */

/* The parent named in the class's HARDWARE.toml, or NULL. */
const char *reg_class_parent(const reg_registry *r, const char *class_name);
/* The class whose bits the class is held to (HARDWARE.toml `reference`,
 * docs/ledger.md "Parity against a target"), or NULL when it names none. */
const char *reg_class_reference(const reg_registry *r, const char *class_name);

/* The backend a class's HARDWARE.toml names, or its nearest ancestor's
 * (docs/backends.md): 1 and *out, or 0 when none on the chain does. */
typedef struct reg_backend {
    const char *builtin;      /* backend = "cpu" / "cuda", else NULL */
    const char *serve;        /* backend = { serve = "CMD" } */
    const char *dlopen;       /* backend = { dlopen = "LIB" } */
    double timeout_s;         /* 0: the default */
    int in_process;
    const char *cls;          /* the class whose file names it */
    char dir[1024];           /* that class's folder */
} reg_backend;
int reg_class_backend(const reg_registry *r, const char *class_name, reg_backend *out);

/* Distinct classes, family ids and FAMILY.POINT ids over every class. */
void reg_counts(const reg_registry *r, size_t *classes, size_t *families, size_t *points);

/* Where a point visible from class_name is declared: "file:line" of every
 * [[family.point]] table with its id along the chain, base first (the
 * later ones override).  *srcs is malloc'd like reg_list_points's ids. */
nx_status reg_point_sources(const reg_registry *r, const char *class_name, const char *family_point, char ***srcs,
                            size_t *count, nx_err *err);

/* reg_list_points and reg_point_sources of every point at once, from one
 * view of the registry (linear in its size): srcs[i] is ids[i]'s
 * declarations joined as "file:line, overridden file:line, ...".  Free
 * each string of both arrays and the arrays. */
nx_status reg_list_sources(const reg_registry *r, const char *class_name, char ***ids, char ***srcs, size_t *count,
                           nx_err *err);

/* The [[family.evidence]] entries that count for the point at class_name:
 * only those whose class is class_name itself.  One line of text each
 * ("rows [...], measurement M (file:line)"); malloc'd like the ids above. */
nx_status reg_evidence(const reg_registry *r, const char *class_name, const char *family_point, char ***items,
                       size_t *count, nx_err *err);

/* The resolved point as text: every field with the file:line it came from,
 * the filled trees, the evidence at the class, the hash.  *text malloc'd. */
nx_status reg_show(const reg_registry *r, const char *class_name, const char *family_point, const char *shape,
                   char **text, nx_err *err);

/* Compares two resolved points ("CLASS:FAMILY.POINT" each) at one shape.
 * *parity = 1 when bit parity is expected (equal hashes, no `atomic`);
 * otherwise *text lists what differs per reduction and the tolerance that
 * then applies.  *text malloc'd. */
nx_status reg_compare(const reg_registry *r, const char *a, const char *b, const char *shape, char **text,
                      int *parity, nx_err *err);

/* What the LKB report reads (registry_lkb.c, docs/lkb.md). */

/* The registry's directory, as given to reg_load. */
const char *reg_dir(const reg_registry *r);

/* Every point visible from class_name (and one entry with id and point
 * NULL for a family without points): its kind (`how`, default
 * "instantiation"), reason, kernel, atom bundle (the nearest declaration
 * naming one), the family's compute unit, and where its nearest
 * declaration is (file:line).  NULL fields are absent. */
typedef struct reg_point_meta {
    char *id, *family, *point, *how, *reason, *kernel, *bundle, *unit, *where;
} reg_point_meta;
nx_status reg_point_metas(const reg_registry *r, const char *class_name, reg_point_meta **out, size_t *count,
                          nx_err *err);
void reg_point_metas_free(reg_point_meta *m, size_t n);

/* Every [[family.evidence]] row of every manifest, in file order. */
typedef struct reg_evidence_row {
    char *family, *class_name, *point, *measurement; /* NULL when absent */
    char *manifest_class;                            /* the class whose manifest holds it */
    char *where;                                     /* file:line */
    long *rows;
    size_t nrows;
} reg_evidence_row;
nx_status reg_evidence_rows(const reg_registry *r, reg_evidence_row **out, size_t *count, nx_err *err);
void reg_evidence_rows_free(reg_evidence_row *e, size_t n);

/* Every [[bundle]] (an atom bundle: MMA instruction, operand copies,
 * schedule, accumulator location, the classes that realise it) of every
 * manifest.  problems: "file:line: what" lines (unknown or missing keys),
 * or NULL/"" when none. */
#define RG_BUNDLE_NFIELDS 5
extern const char *const reg_bundle_fields[RG_BUNDLE_NFIELDS]; /* mma, operands, schedule, accumulator, description */
typedef struct reg_bundle {
    char *id;
    char *field[RG_BUNDLE_NFIELDS];
    char **classes;
    size_t nclasses;
    char *where, *problems;
} reg_bundle;
nx_status reg_bundles(const reg_registry *r, reg_bundle **out, size_t *count, nx_err *err);
void reg_bundles_free(reg_bundle *b, size_t n);

/* HARDWARE.toml [rates] (memory_gbs, tensor_tflops, vector_tflops), the
 * nearest class of the chain that sets key: 1 and *value (where: its
 * file:line), 0 when none does, -1 when it is not a number. */
extern const char *const reg_rate_keys[];
int reg_class_rate(const reg_registry *r, const char *class_name, const char *key, double *value, char *where,
                   size_t len);
/* "file:line: what" lines for bad [rates] keys or values ("" when none). */
char *reg_rates_problems(const reg_registry *r);

#endif
