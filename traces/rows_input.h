/* rows_input.h: the inputs of a reduction over rows, checked (rows_input.c):
 * IN of `parity reduce`, `parity fit` and `parity check --numerics`. */
#ifndef PARITY_ROWS_INPUT_H
#define PARITY_ROWS_INPUT_H

#include "nx_program.h"
#include "safetensors.h"

/* IN holds 'a' [rows, n] and optionally 'b' of the same shape, nothing
 * else; the message names path and the tensor.  Counted for a caller that
 * decodes every element. */
nx_status rows_check_inputs(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                            nx_err *err);
/* The same, also accepting the accumulator input 'c' of shape [rows] (*c =
 * NULL when IN has none); a wrong shape or dtype names 'c' and its shape. */
nx_status rows_check_inputs_c(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                              const st_tensor **c, nx_err *err);

/* whole: 1 when every element of a and b is decoded at once (0: streamed a
 * block of rows at a time); with ROWS_WHOLE_REPORT also the report of
 * every row: an upper bound of its text and JSON objects per row (the
 * exact value's hex and decimal, the result, ulps and bound; the hex grows
 * with the terms' exponent span, up to about 1100 digits for fp64
 * products). */
#define ROWS_WHOLE_REPORT 2
#define ROWS_REPORT_ROW_BYTES 4096
/* rows_check_inputs_c with the cost counted as `whole` says (c NULL: no
 * 'c' accepted). */
nx_status rows_check_inputs_as(const char *path, const st_file *f, const st_tensor **a, const st_tensor **b,
                               const st_tensor **c, int whole, nx_err *err);
/* 'a' [rows, n] (dot: 'b' too) against the limits on sizes from inputs
 * (nx_limits.h): rows x n terms, n against the operation limit, 64 bytes
 * per row and, when whole, 8 per element. */
nx_status rows_check_limits(const char *path, const st_tensor *a, int dot, int whole, nx_err *err);
/* rows x the operations of p (the point expanded at n) against --max-work:
 * the work of evaluating every row (reduce, check --numerics). */
nx_status rows_check_work(const char *path, const st_tensor *a, const nx_program *p, nx_err *err);

#endif
