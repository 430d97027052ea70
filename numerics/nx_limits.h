/* nx_limits.h: what one command may spend on sizes that come from its
 * inputs (docs/limits.md).  Rows, terms per row, element counts and output
 * sizes read from a file are checked here before anything is allocated for
 * them; exceeding a limit is bad input (NX_EINVAL), never an allocation
 * that fails or a run that takes the machine.
 *
 * The limits are process-wide: the CLI sets them once from its global
 * options --max-bytes, --max-terms, --max-ops and --max-work (parity/cli/cli.c,
 * cli_limits_args) before a command runs; a library user that sets nothing
 * gets the defaults. */
#ifndef NX_LIMITS_H
#define NX_LIMITS_H

#include <stdint.h>

#include "nx_error.h"

typedef struct nx_limits {
    uint64_t max_bytes; /* memory for what one input asks for (decoded values, results, outputs) */
    uint64_t max_terms; /* rows x terms of one reduction input; a zero extent counts as 1 */
    uint64_t max_ops;   /* operations of a tree expanded at one n (nx_program.h) */
    uint64_t max_work;  /* rows x operations of the expanded point: one reduction's evaluations */
} nx_limits;

#define NX_LIMITS_DEFAULT_BYTES ((uint64_t)8 << 30)  /* 8 GiB */
#define NX_LIMITS_DEFAULT_TERMS ((uint64_t)1 << 31)
#define NX_LIMITS_DEFAULT_OPS ((uint64_t)1 << 23)    /* 16 bytes each: 128 MiB */
#define NX_LIMITS_DEFAULT_WORK ((uint64_t)1 << 32)

/* The limits in force (the defaults until nx_limits_set). */
const nx_limits *nx_limits_get(void);
void nx_limits_set(const nx_limits *l);

/* a * b, or 0 with *out untouched when it overflows 64 bits. */
int nx_limits_mul(uint64_t a, uint64_t b, uint64_t *out);
/* a * b and a + b saturated at UINT64_MAX: a size that overflows 64 bits
 * stays more than every limit (each at most 2^62), so a chain of products
 * and sums over sizes taken from inputs is checked once, at its end. */
uint64_t nx_limits_mul_sat(uint64_t a, uint64_t b);
uint64_t nx_limits_add_sat(uint64_t a, uint64_t b);

/* NX_EINVAL unless bytes <= max_bytes.  what names the input, e.g.
 * "in.safetensors: tensor 'a' of shape [2147483648, 0]"; the message adds
 * the size, the limit and the option that raises it. */
nx_status nx_limits_bytes(uint64_t bytes, const char *what, nx_err *err);
/* count elements of size bytes each: the product (refused when it
 * overflows 64 bits) against max_bytes. */
nx_status nx_limits_elems(uint64_t count, uint64_t size, const char *what, nx_err *err);
/* max(rows, 1) * max(n, 1) against max_terms (refused when it overflows). */
nx_status nx_limits_terms(uint64_t rows, uint64_t n, const char *what, nx_err *err);

/* NX_EINVAL unless work <= max_work.  what names the input and how the
 * work is counted; the message adds the count, the limit and the option
 * that raises it (a count of UINT64_MAX is said to overflow 64 bits). */
nx_status nx_limits_work(uint64_t work, const char *what, nx_err *err);

/* A file read whole and parsed in memory: its size times per_byte (what
 * parsing costs per byte of text at worst) against max_bytes, before it
 * is read.  A file that cannot be stat'ed passes (its reader reports it). */
nx_status nx_limits_file(const char *path, uint64_t per_byte, const char *why, nx_err *err);

/* Parses a size: decimal digits with an optional K, M, G or T suffix
 * (powers of 1024).  0 and a value over 2^62 are refused; returns 0 on
 * success, -1 on bad text. */
int nx_limits_parse_size(const char *text, uint64_t *out);

#endif
