/* parity_api.h: the C ABI of libparity.so (SONAME libparity.so.1), for
 * other languages (the Python package in python/, docs/python.md) and for
 * C programs that want the harness in process.  Plain C types only; no
 * other header of parity is needed.
 *
 * Every function runs the code the `parity` command runs: parity_reduce is
 * `parity reduce`, parity_check_numerics `parity check --numerics`,
 * parity_fit `parity fit`, parity_reveal `parity reveal --dlopen`,
 * parity_reference `parity ref`, parity_check_point `parity check TRACE`
 * on a trace held in memory, parity_diff `parity diff`, and the
 * parity_capture_* functions of traces/capture.h (exported here too) write
 * the traces `parity check` reads.
 *
 * Status codes are the CLI's exit statuses: PARITY_OK, PARITY_FAIL (a
 * parity check failed: bits differ, nothing fits), PARITY_EINPUT (bad
 * input: the message names the argument, tensor, key or row),
 * PARITY_EINTERNAL (the engines disagreed, or memory ran out).  Strings
 * handed back (char **) are malloc'd: free them with parity_free.
 *
 * Tensors are borrowed, never copied: data points at the caller's
 * elements, little-endian, row-major and contiguous (the layout of a
 * safetensors tensor).  dtype is a safetensors name ("F32", "BF16",
 * "F8_E4M3") or a docs/numerics.md format name ("fp32", "bf16", "e4m3").
 * The functions may be called from several threads at once; parity_reveal
 * runs one reveal at a time (a second call waits for the first).
 * parity_fit tunes glibc's malloc for the process (mallopt, docs/fit.md
 * "Speed"), as `parity fit` does. */
#ifndef PARITY_API_H
#define PARITY_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Incremented when a signature or a struct of this header changes. */
#define PARITY_API_VERSION 1

enum { PARITY_OK = 0, PARITY_FAIL = 1, PARITY_EINPUT = 2, PARITY_EINTERNAL = 3 };

typedef struct parity_error {
    int code;             /* one of the statuses above */
    char msg[1024];       /* what is wrong and where; "" on success */
} parity_error;

typedef struct parity_tensor {
    const void *data;     /* the caller's elements */
    const char *dtype;
    int ndim;             /* at most 8 */
    const int64_t *shape;
} parity_tensor;

/* PARITY_API_VERSION of the library loaded, and the project's version. */
int parity_api_version(void);
const char *parity_version(void);
void parity_free(void *p);

/* A numerics point (inline TOML, docs/numerics.md §3): its canonical text
 * (*canonical, may be NULL) and the dtype `parity reduce` writes y in for
 * rows rows (out_dtype, 16 bytes; NULL: not asked). */
int parity_point_parse(const char *point, size_t rows, char **canonical, char *out_dtype, parity_error *err);

/* `parity reduce`: point over the rows of a [rows, n] (b: the second
 * operands of a dot product, or NULL; c [rows]: start values, or NULL).
 * y receives rows elements of out_dtype (parity_point_parse's); y_bytes
 * is its size.  engine: "auto" (NULL), "fast" or "mpfr"; threads <= 0:
 * every core; check: the rows auto re-evaluates with MPFR (0: 32). */
int parity_reduce(const char *point, const parity_tensor *a, const parity_tensor *b, const parity_tensor *c,
                  const char *engine, int threads, size_t check, void *y, size_t y_bytes, parity_error *err);

/* `parity check --numerics`: y (one value per row, the point's out dtype)
 * against point's reference on a (and b).  name names y in the verdict
 * (the CLI's Y path); *verdict (may be NULL) receives the verdict text
 * `parity check` prints.  PARITY_OK: bit for bit (or within the bound of
 * an `atomic` tree); PARITY_FAIL: rows differ. */
int parity_check_numerics(const char *point, const parity_tensor *a, const parity_tensor *b, const parity_tensor *y,
                          const char *name, const char *engine, int threads, char **verdict, parity_error *err);

/* `parity fit`: npairs IN/Y pairs (a[i], b[i] or b NULL / b[i].data NULL,
 * y[i] [rows]); space: `--space` text, NULL for the default space.
 * *point: the fitted point's canonical inline TOML (PARITY_OK), or NULL;
 * *report (may be NULL): the lines the CLI prints (the closest candidates
 * when nothing fits: PARITY_FAIL). */
int parity_fit(size_t npairs, const parity_tensor *a, const parity_tensor *b, const parity_tensor *y,
               const char *space, int threads, char **point, char **report, parity_error *err);

/* The probe record of parity/reveal/parity_probe.h (ABI 1). */
typedef struct parity_api_probe {
    int abi;
    const char *dtype;
    size_t rows, n;
    const void *a, *b;
    void *y;
    const char *y_dtype;
} parity_api_probe;
typedef int (*parity_api_probe_fn)(parity_api_probe *p);

typedef struct parity_reveal_info {
    size_t calls, probes;               /* kernel calls and rows, in all */
    size_t order_calls, order_probes;
    size_t arith_calls, arith_probes;
    size_t confirm_rows, confirm_ok;
    size_t alternatives;
} parity_reveal_info;

/* `parity reveal`: the kernel fn, called with batches of probe rows in
 * dtype ("F32", "BF16", "F16", "F64"), n terms per row.  space: `--space`
 * text (hints), or NULL; seed 0: the CLI's default.  *point: the revealed
 * point (PARITY_OK), or NULL (PARITY_FAIL: the order or the arithmetic
 * was not found); *order (may be NULL): the revealed order's tree text. */
int parity_reveal(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                  char **point, char **order, parity_reveal_info *info, parity_error *err);
/* The same with flags (ABI 1.1): PARITY_REVEAL_SHARED_B, the kernel takes
 * one b for all the rows of a call (`parity reveal --shared-b`: every
 * call's rows share row 0's b; F32, BF16 or F64).  Unknown bits are an
 * input error. */
#define PARITY_REVEAL_SHARED_B 1u
int parity_reveal2(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                   unsigned flags, char **point, char **order, parity_reveal_info *info, parity_error *err);
/* The same for a gemm (ABI 1.2; `parity reveal --grid M,N`, docs/reveal.md
 * "Grid classes"): grid_m x grid_n > 1 makes every call of fn one M x N
 * output, p->rows = M * N, row i * N + j holding A's row i as a and B's
 * column j as b (fn reads A from rows i * N, B from rows j); row classes
 * are named over i and j and the point holds grid = [M, N].  PARITY_GRID
 * is not set: fn knows its grid.  grid_m = grid_n = 0: parity_reveal2.
 * Not with PARITY_REVEAL_SHARED_B. */
int parity_reveal3(parity_api_probe_fn fn, size_t n, const char *dtype, const char *space, unsigned long long seed,
                   unsigned flags, size_t grid_m, size_t grid_n, char **point, char **order, parity_reveal_info *info,
                   parity_error *err);
/* The same over several lengths (ABI 1.3; `parity reveal --n N1,N2,...`):
 * each of lens[0 .. nlens) revealed (1 ... 16 lengths, each 2 ... 65536,
 * none twice), then one point that holds at all of them (a size class
 * where two orders switch by length), confirmed at two lengths not probed
 * (lens[0] + 1 and a prime near lens[0] / 2); PARITY_FAIL where the
 * lengths' points cannot be joined or the point fails there. */
int parity_reveal4(parity_api_probe_fn fn, const size_t *lens, size_t nlens, const char *dtype, const char *space,
                   unsigned long long seed, unsigned flags, size_t grid_m, size_t grid_n, char **point, char **order,
                   parity_reveal_info *info, parity_error *err);

/* Tensors a function hands back (the reference's outputs), owned by the
 * library until parity_outputs_free. */
typedef struct parity_outputs parity_outputs;
size_t parity_outputs_count(const parity_outputs *o);
/* Tensor i: its name, dtype (safetensors name), shape and bytes. */
int parity_outputs_tensor(const parity_outputs *o, size_t i, const char **name, const char **dtype, int *ndim,
                          const int64_t **shape, const void **data, size_t *nbytes);
void parity_outputs_free(parity_outputs *o);

/* `parity ref`: family point fp ("gemm.splitk") of class cls (NULL:
 * "cpu") at shape ("M=16,N=64,K=256"), from the registry in kernels (NULL:
 * "kernels"), evaluated on the ninputs tensors inputs named names ("a",
 * "b", ... as `parity gen` writes them).  engine: "fast", "mpfr" or NULL
 * (the default). */
int parity_reference(const char *kernels, const char *fp, const char *cls, const char *shape, size_t ninputs,
                     const char *const *names, const parity_tensor *inputs, const char *engine, int threads,
                     parity_outputs **out, parity_error *err);

/* `parity check TRACE` of a kernel's outputs (noutputs tensors named
 * out_names) on those inputs, as a trace of family point fp, class cls,
 * shape and kernel id `kernel` (NULL: "python") that batch rows 0 .. R-1
 * of the family's batch dimension: its Tier 2 against the point's exact
 * reference, by the campaign's judge.  name names the trace in the
 * verdict.  PARITY_OK: pass; PARITY_FAIL: the judge failed it; *verdict
 * (may be NULL): the line `parity check` prints, and its report. */
int parity_check_point(const char *kernels, const char *fp, const char *cls, const char *shape, size_t ninputs,
                       const char *const *in_names, const parity_tensor *inputs, size_t noutputs,
                       const char *const *out_names, const parity_tensor *outputs, const char *kernel,
                       const char *name, const char *engine, char **verdict, parity_error *err);

/* `parity diff`: two outputs of one dtype and shape, element by element:
 * mismatched elements, the ulp histogram, the first and worst element with
 * both patterns, which rows and columns differ and their pattern.  *text
 * (may be NULL): the report `parity diff` prints (name_a, name_b name the
 * two; max_list 0: 10).  PARITY_OK: the same bits; PARITY_FAIL: they
 * differ. */
int parity_diff(const parity_tensor *a, const parity_tensor *b, const char *name_a, const char *name_b,
                size_t max_list, char **text, parity_error *err);

#ifdef __cplusplus
}
#endif

#endif
