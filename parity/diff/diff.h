/* diff.h: investigating a parity diff (docs/diff.md): two outputs of the
 * same shape and dtype, element by element, bit for bit, and where they
 * differ.
 *
 * diff_tensors compares two tensors and says how many elements differ, how
 * far apart they are in ulps of the output's own format (a histogram), the
 * first and the worst differing element with both bit patterns, the largest
 * absolute and relative error (B against A), and where the differences sit:
 * per axis (rows, columns, heads, ...) which indices differ and whether
 * they form a pattern (diff_pattern_find), and, where a trace's metadata and
 * inputs name them, which KV heads, pages or experts the differing rows
 * share.
 *
 * diff_open / diff_files work on files: traces, plain safetensors and .npy,
 * one tensor or every tensor in order (the first diverging one named).
 *
 * The library never prints: diff_*_text and diff_*_json render. */
#ifndef PARITY_DIFF_H
#define PARITY_DIFF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "npy.h"
#include "nx_error.h"
#include "safetensors.h"
#include "trace.h"

/* Buckets of the ulp histogram: every element in exactly one, so the
 * buckets sum to N.  Identical elements are in DIFF_H_0 (as are -0 vs +0,
 * whose bits differ at distance 0); a differing pair with a NaN or an
 * infinity on either side is in DIFF_H_NONFINITE. */
enum {
    DIFF_H_0, DIFF_H_1, DIFF_H_2_3, DIFF_H_4_15, DIFF_H_16_255, DIFF_H_256_UP, DIFF_H_NONFINITE,
    DIFF_H_NBUCKETS
};

/* "0", "1", "2-3", "4-15", "16-255", ">=256", "nan/inf". */
const char *diff_bucket_name(int bucket);
/* The bucket of a finite pair at ulp distance d. */
int diff_bucket_of(uint64_t d);

/* What the indices along one axis that hold a difference have in common.
 * Index i of an axis of extent L "differs" when some element with that
 * index differs.  Fields are 0 when the pattern does not hold. */
typedef struct diff_pattern {
    int64_t extent;        /* L */
    size_t ndiff;          /* differing indices */
    int64_t lo, hi;        /* the first and the last differing index */
    int contiguous;        /* the differing indices are exactly lo..hi */
    /* stride >= 2: every differing index is offset mod stride (stride the
     * gcd of their distances, ndiff >= 2); complete: it is every such
     * index of 0..L-1 ("every 4th row from row 1"). */
    int64_t stride, offset;
    int stride_complete;
    /* Power-of-two tiles T (4 <= T < L), the largest that holds:
     * tile_start: every differing i is i mod T == 0, some i > 0;
     * tile_end:   every differing i is i mod T == T-1 (or L-1, the end of a
     *             partial tile), some i < L-1;
     * tile_edges: every differing i is at a tile's start or end, both
     *             kinds present. */
    int64_t tile_start, tile_end, tile_edges;
    /* Bit k set: the differing indices are exactly the partial last tile
     * when L is tiled by 2^k (L mod 2^k != 0, the last L mod 2^k). */
    uint64_t remainder_tiles;
    /* The largest power of two B, 2 <= B < L, such that the differing
     * indices are a union of whole aligned blocks [jB, min(jB+B, L)), at
     * least one, not all. */
    int64_t block;
} diff_pattern;

/* hit[i] != 0: index i differs (0 <= i < L). */
void diff_pattern_find(const uint8_t *hit, int64_t L, diff_pattern *p);
/* The pattern in words ("every 4th row from row 1", "the last row"), "; "
 * between facts; unit and units name one index and several ("row",
 * "rows").  "" when nothing differs.  Like snprintf. */
size_t diff_pattern_text(const diff_pattern *p, const char *unit, const char *units, char *buf, size_t cap);
/* The pattern as a JSON object (new reference, NULL out of memory). */
json_t *diff_pattern_json(const diff_pattern *p);

/* One axis of the compared shape. */
typedef struct diff_axis {
    char unit[24], units[24]; /* "row", "rows"; "column", "columns"; "head", "heads"; "index 2" */
    char dim[32];             /* the trace's shape dimension ("M", "HQ"), "" unknown */
    int64_t extent;
    size_t *count;            /* differing elements per index [extent] */
    diff_pattern pat;
} diff_axis;

/* Entities the differing rows share that the output's axes do not show:
 * the KV heads query heads read, the pages sequences read (in.block_table),
 * the experts tokens are routed to (in.topk_ids). */
typedef struct diff_group {
    char unit[16], units[16]; /* "page", "pages" */
    char users[24];           /* what uses an entity: "sequences", "tokens", "query heads" */
    char source[96];          /* how the mapping was found ("in.block_table, in.context_lens") */
    char note[192];           /* why a group is not available, "" when it is */
    size_t nitems;            /* entities 0..nitems-1 */
    size_t *ndiff, *ntotal;   /* per entity: differing users / users */
} diff_group;

typedef struct diff_elem {
    size_t index;             /* flat, row-major */
    uint64_t a_bits, b_bits;
    double a, b;              /* decoded (NaN when the dtype is not a format) */
    int has_ulp;
    uint64_t ulp;
} diff_elem;

#define DIFF_MAX_GROUPS 3

typedef struct diff_result {
    char name_a[160], name_b[160]; /* the tensors compared */
    st_dtype dtype;
    int fmt;                  /* nx_fmt of dtype, -1: no ulps (integers) */
    int ndim;
    int64_t shape[ST_MAX_NDIM];
    size_t n, mismatched;     /* N and M: elements whose bits differ */
    size_t hist[DIFF_H_NBUCKETS];
    size_t zero_sign;         /* -0 vs +0 */
    size_t nan_mismatch, inf_mismatch;
    diff_elem first, worst;   /* valid when mismatched > 0 */
    /* Over finite pairs: max |b - a| and max |b - a| / |a| (inf when a = 0
     * and b != 0), with the first index where each is reached. */
    int has_err;
    double max_abs, max_rel;
    size_t max_abs_index, max_rel_index;
    diff_elem *list;          /* the first max_list differing elements */
    size_t nlist, max_list;
    int naxes;
    diff_axis axes[ST_MAX_NDIM];
    int ngroups;
    diff_group groups[DIFF_MAX_GROUPS];
    char note[512];           /* e.g. the two traces' batches differ */
} diff_result;

/* Context a trace gives: axis names and the inputs that name pages and
 * experts.  Either or both NULL. */
typedef struct diff_context {
    const trace *ta, *tb;
    size_t max_list;          /* elements listed (default 10 when 0) */
} diff_context;

void diff_result_free(diff_result *r);

/* Compares b against a.  Both must have the same dtype and shape (else
 * NX_EINVAL naming both shapes or dtypes; the caller prefixes the files).
 * A pattern that is not a value of the dtype's format (a tf32 stored with
 * low bits set) is still compared by its bits. */
nx_status diff_tensors(const st_tensor *a, const st_tensor *b, const diff_context *ctx, diff_result *out,
                       nx_err *err);

/* "[4, 24]" into buf (like snprintf). */
size_t diff_shape_text(int ndim, const int64_t *shape, char *buf, size_t cap);

/* --- files ------------------------------------------------------------------ */

/* One side of a diff: a trace, a plain safetensors file or a .npy array. */
typedef struct diff_source {
    const char *path;
    int kind;                 /* DIFF_TRACE, DIFF_SAFETENSORS, DIFF_NPY */
    trace tr;
    st_file st;
    npy_array npy;
} diff_source;

enum { DIFF_TRACE, DIFF_SAFETENSORS, DIFF_NPY };

void diff_source_init(diff_source *s);
void diff_source_free(diff_source *s);
/* Reads path: ".npy" as an array (hint: its dtype, as npy_read takes),
 * else safetensors, read as a trace when it carries "parity.trace". */
nx_status diff_source_open(const char *path, const char *hint, diff_source *s, nx_err *err);

/* The whole diff of two files. */
typedef struct diff_files_result {
    size_t ntensors;          /* tensors compared, in order */
    char (*names)[160];       /* "y" (or "y" vs "out"), per tensor */
    size_t *mismatched, *n;
    size_t first_diverging;   /* index into the above, SIZE_MAX when none */
    diff_result detail;       /* the first diverging tensor's (else the first tensor's) */
    int detail_valid;
} diff_files_result;

void diff_files_result_free(diff_files_result *r);

/* Compares tensor `tensor` of each file (NULL: a trace's outputs, a plain
 * file's every tensor, in order; a .npy's array; a single tensor against a
 * .npy).  Errors (NX_EINVAL) name the file and tensor: a tensor missing,
 * different tensor lists, shapes or dtypes that differ (both named). */
nx_status diff_files(diff_source *a, diff_source *b, const char *tensor, size_t max_list,
                     diff_files_result *out, nx_err *err);

/* Renderers.  Text: one fact a line, '\n'-terminated, malloc'd (NULL out of
 * memory).  JSON: a new reference. */
char *diff_files_text(const diff_source *a, const diff_source *b, const diff_files_result *r);
json_t *diff_files_json(const diff_source *a, const diff_source *b, const diff_files_result *r);

#endif
