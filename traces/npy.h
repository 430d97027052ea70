/* npy.h: a strict reader of NumPy .npy files (format versions 1.0, 2.0,
 * 3.0), for outputs saved with np.save instead of as a trace.
 *
 * The array comes back as an st_tensor (dtype, shape, little-endian data),
 * so a checker treats .npy and safetensors outputs alike.  Accepted dtypes
 * (the header's 'descr'):
 *   '<f2' '<f4' '<f8'                        F16 F32 F64
 *   'bfloat16' 'float8_e4m3fn' 'float8_e5m2' BF16 F8_E4M3 F8_E5M2
 *   'float8_e8m0fnu'                         F8_E8M0   (ml_dtypes names)
 *   '|i1' '<i2' '<i4' '<i8' '<u4' '<u8' '|b1' I8 I16 I32 I64 U32 U64 BOOL
 *   '|u1' '<u2'   U8 U16, or with a dtype hint the 8- or 16-bit format the
 *                 raw bits hold ("e4m3", "bf16", ...)
 *   '<V2' '|V2' '|V1'  raw bits (what np.save writes for an ml_dtypes
 *                 array): a dtype hint is required
 * A hint given with any other descr must name the dtype the descr already
 * is.  'fortran_order' must be False.  Every error names the file and the
 * byte offset at fault. */
#ifndef TRACE_NPY_H
#define TRACE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"
#include "safetensors.h"

typedef struct npy_array {
    /* name: the file name without directory and ".npy" ("y" for
     * "out/y.npy"), owned; data points into buf (owns_data is false). */
    st_tensor t;
    int major, minor;          /* the format version */
    uint64_t data_offset;      /* where the data begins in the file */
    uint8_t *buf;              /* the whole file (npy_read), or NULL */
    size_t buf_len;
} npy_array;

void npy_init(npy_array *a);
void npy_free(npy_array *a);

/* Reads and validates path.  hint is NULL or a dtype name as
 * trace_dtype_from_name takes ("bf16", "e4m3", "BF16").  *out is
 * initialised here and left empty on failure. */
nx_status npy_read(const char *path, const char *hint, npy_array *out,
                   nx_err *err);

/* The same over bytes already in memory; who names them in messages and
 * gives the tensor its name.  out->t.data points into buf (borrowed: buf
 * must outlive out), out->buf stays NULL. */
nx_status npy_parse(const char *who, const uint8_t *buf, size_t len,
                    const char *hint, npy_array *out, nx_err *err);

#endif
