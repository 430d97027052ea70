/* rows.h: between safetensors tensors and the engines' rows of exact
 * values: dtype ↔ format, decoding with validation, encoding results. */
#ifndef PARITY_ROWS_H
#define PARITY_ROWS_H

#include "nx_format.h"
#include "safetensors.h"

/* The docs/numerics.md format a dtype carries; -1 if it carries none of §1. */
int rows_fmt_of_dtype(st_dtype dt);
/* The dtype a format is stored as (tf32, e8m13: F32). */
st_dtype rows_dtype_of_fmt(nx_fmt f);

/* Decodes every element of t into out[nelem]. */
nx_status rows_decode(const st_tensor *t, double *out, nx_err *err);
/* Decodes elements first .. first + n - 1 (row-major) into out[n]: a block
 * of rows at a time, with a buffer the caller reuses.  Thread-safe. */
nx_status rows_decode_range(const st_tensor *t, size_t first, size_t n, double *out, nx_err *err);

/* Encodes values (members of f) into tensor t of f's dtype.  A value with
 * no encoding is an error naming its index. */
nx_status rows_encode(nx_fmt f, const double *v, size_t count, st_tensor *t, uint8_t *data, nx_err *err);
/* The same for elements base ... base + count - 1 of t, data pointing at
 * element base (a whole byte: base * bits a multiple of 8); an error names
 * the element's index in t. */
nx_status rows_encode_at(nx_fmt f, const double *v, size_t count, size_t base, st_tensor *t, uint8_t *data,
                         nx_err *err);

#endif
