/* trace.h: the trace format (docs/traces.md): a safetensors file holding a
 * run's outputs, its inputs ("in." tensors) or the seed that generates them,
 * and "__metadata__" saying which family point, class, device, shape, mode,
 * run and batch layout produced it.
 *
 * trace_read validates a file completely (every required key present and
 * well formed, tensor names, the batch grammar) before handing it back;
 * trace_write runs the same validation on what it is about to write, so a
 * trace this library writes is always one it reads back.  Errors name the
 * file and the key, tensor or column at fault. */
#ifndef TRACE_TRACE_H
#define TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"
#include "safetensors.h"

/* The value of "parity.trace" this library writes and the only one it
 * reads. */
#define TRACE_FORMAT_VERSION 1
/* A batch expands to at most this many rows (16 sequences of 65536 tokens):
 * a guard against "rows=0..99999999999" allocating gigabytes. */
#define TRACE_MAX_BATCH_ROWS (1u << 20)
/* Prefix of input tensors ("in.a") and of extension metadata keys
 * ("x.note"). */
#define TRACE_INPUT_PREFIX "in."
#define TRACE_EXT_PREFIX "x."

typedef enum trace_mode { TRACE_EAGER, TRACE_GRAPHED } trace_mode;

typedef enum trace_batch_kind {
    TRACE_BATCH_ROWS,  /* "rows=": logical rows in increasing order */
    TRACE_BATCH_PERM   /* "perm=": distinct logical rows in any order */
} trace_batch_kind;

typedef struct trace_dim {
    char *name;        /* "M" */
    int64_t value;     /* 16 */
} trace_dim;

typedef struct trace_param {
    char *name;
    char *value;       /* as written: "1", "bf16", "1e-06" */
} trace_param;

typedef struct trace_device {
    char *json;        /* the "device" value as written */
    /* Known members, NULL / -1 when absent. */
    char *sku, *driver, *nvcc, *host, *cpu;
    int64_t sm_count, threads;
} trace_device;

/* A parsed trace.  String members without their own comment point into
 * file.meta and live as long as the trace. */
typedef struct trace {
    char *path;              /* the file read or written, for messages */
    st_file file;            /* the container: tensors and raw metadata */
    int version;             /* TRACE_FORMAT_VERSION */
    const char *family, *point, *class_name, *kernel;
    trace_device device;
    trace_dim *shape;        /* in the order written */
    size_t nshape;
    trace_param *params;     /* empty when "params" is absent or "" */
    size_t nparams;
    bool has_seed;
    uint64_t seed;
    const char *dist;        /* NULL without a seed */
    trace_mode mode;
    uint64_t run;
    trace_batch_kind batch_kind;
    int64_t *rows;           /* batch row i holds logical row rows[i] */
    size_t nrows;
    const char *batch;       /* the batch string as written */
    const char *created;     /* RFC 3339 UTC */
    const char *producer;    /* NULL when absent */
    /* A negative control: the run's kernel is built to fail the Tier 1
     * checks named in expected_fail ("eager_graphed", comma-separated).
     * false / NULL when the keys are absent (every trace written before
     * they existed). */
    bool negative_control;
    const char *expected_fail;
    size_t noutputs, ninputs;
} trace;

/* What a writer says about a run.  Strings are borrowed. */
typedef struct trace_info {
    const char *family, *point, *class_name, *kernel;
    const char *device;      /* a JSON object; NULL writes "{}" */
    const char *shape;       /* "M=16,N=4096,K=4096" */
    const char *params;      /* NULL: the key is not written */
    bool has_seed;
    uint64_t seed;
    const char *dist;        /* required with a seed */
    trace_mode mode;
    uint64_t run;
    const char *batch;       /* "rows=0..15", "perm=3,1,0,2" */
    const char *created;     /* NULL: the current time, to the second */
    const char *producer;    /* NULL: the key is not written */
    bool negative_control;   /* false: neither key is written */
    const char *expected_fail; /* required with negative_control */
} trace_info;

/* What a caller expects of a trace; a NULL member is not checked. */
typedef struct trace_expect {
    const char *family, *point, *class_name, *kernel;
    const char *shape;       /* the same dimensions with the same values */
    const char *batch_dim;   /* the shape dimension the batch's row count
                                must equal ("M", "T", "B") */
} trace_expect;

/* --- lifetime, reading, writing ---------------------------------------- */

void trace_init(trace *t);
void trace_free(trace *t);

/* Reads path and validates it as a trace into *out (initialised here; left
 * empty on failure).  Malformed or missing metadata is NX_EINVAL naming the
 * file and key; a format version other than TRACE_FORMAT_VERSION is
 * NX_EUNSUPPORTED. */
nx_status trace_read(const char *path, trace *out, nx_err *err);

/* Validates an st_file already in memory as a trace.  *f moves into
 * out->file on success and is freed on failure (either way the caller no
 * longer owns it).  who names the trace in messages. */
nx_status trace_from_st(const char *who, st_file *f, trace *out, nx_err *err);

/* Writes tensors (outputs by name, inputs as "in.NAME") with the metadata
 * of info to path, atomically (st_write_atomic).  tensors may carry
 * extension metadata ("x." keys) and nothing else; they are written after
 * the standard keys.  Everything is validated as trace_read would before
 * the file is touched. */
nx_status trace_write(const char *path, const trace_info *info,
                      const st_file *tensors, nx_err *err);

/* --- access --------------------------------------------------------------- */

/* The output tensor name ("y"), or the input tensor "in." name ("a" finds
 * "in.a"); NULL when absent. */
const st_tensor *trace_output(const trace *t, const char *name);
const st_tensor *trace_input(const trace *t, const char *name);
bool trace_tensor_is_input(const st_tensor *tensor);
/* A shape dimension's value; false when the shape has no such dimension. */
bool trace_shape_dim(const trace *t, const char *name, int64_t *value);
/* A param's value, or NULL. */
const char *trace_param_get(const trace *t, const char *name);
const char *trace_mode_name(trace_mode m);

/* --- expectations ----------------------------------------------------------- */

/* Checks family, point, class, kernel, shape and batch row count against
 * want.  The error names the file and the field: "t.safetensors: shape: K
 * is 4096, expected 2048". */
nx_status trace_check(const trace *t, const trace_expect *want, nx_err *err);
/* Checks that tensor name (an output, or "in.NAME") exists with dtype and,
 * when shape is not NULL, with ndim dimensions equal to shape. */
nx_status trace_check_tensor(const trace *t, const char *name, st_dtype dtype,
                             int ndim, const int64_t *shape, nx_err *err);

/* --- the grammars, for writers that want to check early ------------------- */

/* Each returns NX_EINVAL with a message naming the column at fault (no file
 * name: callers prefix it). */
nx_status trace_parse_shape(const char *s, trace_dim **dims, size_t *n,
                            nx_err *err);
nx_status trace_parse_params(const char *s, trace_param **params, size_t *n,
                             nx_err *err);
nx_status trace_parse_batch(const char *s, trace_batch_kind *kind,
                            int64_t **rows, size_t *nrows, nx_err *err);
nx_status trace_check_created(const char *s, nx_err *err);
/* A family, point or class name: [A-Za-z0-9_-]{1,128}. */
bool trace_is_name(const char *s);
/* A tensor name without its prefix: [A-Za-z_][A-Za-z0-9_]{0,127}. */
bool trace_is_tensor_name(const char *s);
/* The Tier 1 checks a negative control may be built to fail, the values
 * of "expected_fail": "determinism", "eager_graphed", "new_legacy", "rows". */
bool trace_is_tier1_check(const char *s, size_t len);
/* A kernel id or dist: 1..256 printable ASCII characters, no space. */
bool trace_is_token(const char *s);
/* The type a known "device" member must have: 's' string, 'i' non-negative
 * integer, 0 for a member this format does not name (allowed: string,
 * integer or boolean). */
char trace_device_member_kind(const char *key);

/* A dtype by its safetensors name ("BF16", "F8_E4M3") or the docs/numerics.md
 * name of the format it stores ("bf16", "e4m3", "fp32"; "tf32" and "e8m13"
 * give F32).  Used by the capture API and for .npy dtype hints. */
bool trace_dtype_from_name(const char *name, st_dtype *out);

#endif
