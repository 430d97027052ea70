/* safetensors.h: a strict reader and an atomic writer of safetensors files.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of
 * JSON (tensor name -> {dtype, shape, data_offsets}, plus an optional
 * "__metadata__" map of string to string), then the data section.  Traces are
 * the evidence of a parity verdict, so the reader accepts only files that
 * follow the format exactly: no unknown keys, no duplicate keys, sizes that
 * match shape x dtype, and tensor byte ranges that tile the data section with
 * no gap, no overlap and nothing left over.  Every error names the file and
 * the tensor, key or byte offset at fault.
 *
 * Element bits are handled raw (st_get_bits / st_put_bits): what a pattern
 * means as a number is the business of numerics/, not of the container. */
#ifndef ST_SAFETENSORS_H
#define ST_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"

/* The format's own limit on the JSON header (huggingface/safetensors
 * MAX_HEADER_SIZE). */
#define ST_MAX_HEADER_BYTES 100000000u
/* Enough for every tensor the harness traces; a deeper tensor is refused with
 * NX_EUNSUPPORTED rather than truncated. */
#define ST_MAX_NDIM 8

typedef enum st_dtype {
    ST_F64,
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_F8_E5M2,
    ST_F8_E4M3,
    ST_F6_E3M2,
    ST_F6_E2M3,
    ST_F4,
    ST_F8_E8M0,
    ST_BOOL,
    ST_U8,
    ST_I8,
    ST_U16,
    ST_I16,
    ST_U32,
    ST_I32,
    ST_U64,
    ST_I64,
    ST_DTYPE_COUNT
} st_dtype;

typedef struct st_tensor {
    char *name;                     /* owned by the st_file */
    st_dtype dtype;
    int ndim;                       /* 0 is a scalar (one element) */
    int64_t shape[ST_MAX_NDIM];
    uint64_t nelem;                 /* product of shape */
    uint64_t offset;                /* first byte, relative to the data section */
    uint64_t nbytes;                /* nelem * bits / 8, exactly */
    uint8_t *data;                  /* this tensor's nbytes bytes */
    bool owns_data;                 /* data was allocated by st_add_tensor */
} st_tensor;

typedef struct st_meta {
    char *key;                      /* owned by the st_file */
    char *value;
} st_meta;

/* A zeroed st_file (or one set up by st_init) is an empty, valid file. */
typedef struct st_file {
    st_tensor *tensors;             /* read: ordered by data offset; built: insertion order */
    size_t ntensors;
    size_t tensors_cap;
    st_meta *meta;                  /* "__metadata__" entries, in file/insertion order */
    size_t nmeta;
    size_t meta_cap;
    uint8_t *buf;                   /* read: the whole file; tensors' data point into it */
    size_t buf_len;
    bool buf_mapped;                /* buf is a private mapping of the file (st_free unmaps it) */
} st_file;

/* --- dtypes ------------------------------------------------------------- */

/* "F32", "F8_E4M3", ...; "?" for a value outside the enum. */
const char *st_dtype_name(st_dtype dt);
/* Exact, case-sensitive match of a safetensors dtype name. */
bool st_dtype_from_name(const char *name, st_dtype *out);
/* Bits per element: 4 (F4), 6 (F6_*), 8, 16, 32, 64; 0 outside the enum. */
unsigned st_dtype_bits(st_dtype dt);

/* --- files ---------------------------------------------------------------- */

void st_init(st_file *f);
/* Frees everything f owns and leaves it empty (st_init state). */
void st_free(st_file *f);

/* Reads and validates the file at path into *out (which it initialises; on
 * failure *out is left empty).  See safetensors.c for the checks. */
nx_status st_read(const char *path, st_file *out, nx_err *err);

/* The whole regular file at path in a malloc'd buffer (*len bytes; the
 * caller frees *out).  Errors name the file (and the byte where a short read
 * stopped).  Shared with the .npy reader. */
nx_status st_read_bytes(const char *path, uint8_t **out, size_t *len,
                        nx_err *err);

/* NULL when no tensor has that name. */
const st_tensor *st_find(const st_file *f, const char *name);
/* The value of a "__metadata__" key, or NULL. */
const char *st_get_meta(const st_file *f, const char *key);

/* Adds a tensor with a zeroed data buffer of the exact size and, when
 * out is not NULL, hands back a pointer to it (valid until the next
 * st_add_tensor or st_free) so the caller can fill t->data.  Rejects an
 * empty, duplicate or "__metadata__" name, ndim outside 0..ST_MAX_NDIM,
 * negative extents, overflow, and a sub-byte tensor whose bit count is
 * not a whole number of bytes. */
nx_status st_add_tensor(st_file *f, const char *name, st_dtype dtype, int ndim,
                        const int64_t *shape, st_tensor **out, nx_err *err);
/* Adds a "__metadata__" entry; a key already present is an error. */
nx_status st_add_meta(st_file *f, const char *key, const char *value,
                      nx_err *err);

/* Output files, for every writer of this project.
 *
 * st_output_check: an existing path that is a symbolic link, a device, a
 * FIFO or a directory is refused (NX_EINVAL): a rename would silently
 * replace the link or node with a regular file.
 *
 * st_tmp_create: after st_output_check, a temporary file beside path,
 * DIR/.BASE.PID.tmp.XXXXXX (BASE: the first 40 bytes of path's name, so a
 * 255-byte name still has a legal temporary name), with the mode of the
 * file it will replace or 0666 less the umask; returns its descriptor and
 * *tmp (malloc'd), or -1 and err.  Until committed or discarded it is
 * removed if the process gets SIGINT, SIGTERM, SIGHUP or SIGQUIT (handlers
 * are installed only where the disposition is still the default), and
 * temporaries of path left by a process that no longer exists (SIGKILL)
 * are removed on the next st_tmp_create for the same name.
 * st_tmp_commit: renames *tmp over path (re-checking path first); on
 * failure removes it.  st_tmp_discard: removes it.  Both free *tmp. */
nx_status st_output_check(const char *path, nx_err *err);
int st_tmp_create(const char *path, char **tmp, nx_err *err);
nx_status st_tmp_commit(char **tmp, const char *path, nx_err *err);
void st_tmp_discard(char **tmp);

/* Writes f to path atomically: a temporary file in the same directory
 * (st_tmp_create), fsync, then rename over path.  On any failure the temporary is
 * removed and whatever was at path is left as it was.  The header lists
 * "__metadata__" first (if any), then the tensors in f's order, each as
 * {"dtype", "shape", "data_offsets"}; data offsets are contiguous in that
 * order; the header is padded with spaces to a multiple of 8 bytes. */
nx_status st_write_atomic(const char *path, const st_file *f, nx_err *err);
/* The same bytes written straight to path (created 0600 or truncated; a
 * link at path is refused), no temporary, no fsync: for a file nobody keeps, in a private directory
 * (parity reveal's probe files, one per kernel call, read by the kernel
 * and removed; a crash loses nothing of the user's).  On failure path may
 * hold part of the file. */
nx_status st_write_scratch(const char *path, const st_file *f, nx_err *err);
/* path (a file, or an empty folder: files are removed first) is removed
 * if SIGINT, SIGTERM, SIGHUP or SIGQUIT ends the process, as the
 * temporaries of the atomic writers are (where the program has set no
 * handler of its own); path must stay valid until st_cleanup_untrack.
 * At most 32 paths are tracked at once, temporaries included; past that a
 * path is not removed on a signal. */
void st_cleanup_track(char *path);
void st_cleanup_untrack(char *path);

/* The one writer of text outputs (reports, JSON, TOML records).
 * st_text_stage: writes text (len bytes) to a new temporary beside path
 * (st_tmp_create), all of it, retrying a write interrupted by a signal,
 * then fsync and close; *tmp is for st_tmp_commit or st_tmp_discard (on
 * failure it is already removed and the error names path and the step).
 * st_write_text_atomic: st_text_stage then st_tmp_commit: path is replaced
 * whole, or left as it was. */
nx_status st_text_stage(const char *path, const char *text, size_t len, char **tmp, nx_err *err);
nx_status st_write_text_atomic(const char *path, const char *text, nx_err *err);

/* --- elements ------------------------------------------------------------- */

/* The raw bit pattern of element i (row-major), right-aligned.  Multi-byte
 * elements are little-endian; sub-byte elements are packed LSB-first (see
 * safetensors.c).  data is t->data; i must be < t->nelem. */
uint64_t st_get_bits(const st_tensor *t, const uint8_t *data, size_t i);
/* Stores the low st_dtype_bits(t->dtype) bits of bits as element i, leaving
 * the neighbouring elements' bits alone. */
void st_put_bits(const st_tensor *t, uint8_t *data, size_t i, uint64_t bits);

#endif
