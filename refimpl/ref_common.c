/* ref_common.c: what every family shares: dispatch on the family name,
 * params, input descriptions and their validation, the job with its
 * per-thread scratch and program cache, reductions over gathered rows,
 * input decoding and output encoding, the spec's metadata. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "ref_internal.h"
#include "fam_int4.h"
#include "nx_limits.h"
#include "nx_simd.h"
#include "rows.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const ref_family *const families[] = {
    &ref_family_gemm,    &ref_family_gemv_w4a16, &ref_family_moe_grouped_gemm, &ref_family_paged_decode_attention,
    &ref_family_rmsnorm, &ref_family_silu_and_mul, &ref_family_softmax,
};
#define NFAMILIES (sizeof families / sizeof families[0])

size_t ref_family_count(void)
{
    return NFAMILIES;
}

const char *ref_family_name(size_t i)
{
    return i < NFAMILIES ? families[i]->name : NULL;
}

static nx_status find_family(const fam_spec *s, const ref_family **out, nx_err *err)
{
    for (size_t i = 0; i < NFAMILIES; i++) {
        if (s->family && strcmp(s->family, families[i]->name) == 0) {
            *out = families[i];
            return NX_OK;
        }
    }
    char known[512];
    size_t k = 0;
    for (size_t i = 0; i < NFAMILIES && k < sizeof known; i++)
        k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", families[i]->name);
    return nx_err_set(err, NX_EINVAL, "family '%s' has no reference implementation (known: %s)",
                      s->family ? s->family : "(none)", known);
}

/* --- engines ------------------------------------------------------------------ */

int ref_engine_available(nx_engine_kind e)
{
    return e == NX_ENGINE_MPFR || e == NX_ENGINE_FAST;
}

nx_engine_kind ref_engine_default(void)
{
    return ref_engine_available(NX_ENGINE_FAST) ? NX_ENGINE_FAST : NX_ENGINE_MPFR;
}

/* --- params ------------------------------------------------------------------- */

nx_status ref_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err)
{
    return fam_get_dim(s, name, def, out, err);
}

nx_status ref_param_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err)
{
    return fam_get_bool(s, name, def, out, err);
}

nx_status ref_param_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err)
{
    nx_status st = fam_get_fmt(s, name, def, out, err);
    if (st || !fam_param_get(s, name))
        return st;
    nx_fmt f = *out;
    if (rows_fmt_of_dtype(rows_dtype_of_fmt(f)) != (int)f || !nx_format(f)->is_signed)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s': a tensor format needs a signed safetensors dtype "
                          "of its own (tf32, e8m13 and e8m0 have none)",
                          fam_spec_family(s), fam_spec_point(s), name, fam_param_get(s, name));
    return NX_OK;
}

nx_status ref_need_red(const fam_spec *s, const char *name, const fam_reduction **out, nx_err *err)
{
    *out = fam_reduction_get(s, name);
    if (!*out)
        return nx_err_set(err, NX_EINVAL, "%s.%s: the point declares no numerics for reduction '%s'", fam_spec_family(s),
                          fam_spec_point(s), name);
    return NX_OK;
}

static int tree_min_p(const nx_tree *t, int p)
{
    if (!t)
        return p;
    if (t->fmt >= 0 && nx_format((nx_fmt)t->fmt)->p < p)
        p = nx_format((nx_fmt)t->fmt)->p;
    return tree_min_p(t->c, tree_min_p(t->t, p));
}

int ref_point_exact_bits(const nx_point *pt)
{
    int p = nx_format(pt->acc)->p;
    p = tree_min_p(pt->tree, p);
    if (pt->product >= 0 && nx_format((nx_fmt)pt->product)->p < p)
        p = nx_format((nx_fmt)pt->product)->p;
    if (pt->in >= 0 && nx_format((nx_fmt)pt->in)->p < p)
        p = nx_format((nx_fmt)pt->in)->p;
    if (pt->atom.present) {
        if (pt->atom.acc >= 0 && nx_format((nx_fmt)pt->atom.acc)->p < p)
            p = nx_format((nx_fmt)pt->atom.acc)->p;
        if (pt->atom.frac_bits >= 0 && pt->atom.frac_bits + 1 < p)
            p = pt->atom.frac_bits + 1;
    }
    return p;
}

long ref_int_bound(double factor, int bits, nx_fmt fmt)
{
    double lim = ldexp(1.0, bits);
    long r = (long)floor(sqrt(lim / (factor > 1 ? factor : 1)));
    while (r > 1 && (double)r * (double)r * factor >= lim)
        r--;
    const nx_format_info *fi = nx_format(fmt);
    double cap = ldexp(1.0, fi->p < 30 ? fi->p : 30);
    if (cap > fi->max_finite)
        cap = floor(fi->max_finite);
    if ((double)r > cap)
        r = (long)cap;
    return r < 1 ? 1 : r;
}

/* --- input descriptions ---------------------------------------------------------- */

static ref_tensor_desc *add_desc(ref_desc_list *l, const char *name, const char *dims, int ndim,
                                 const int64_t *shape)
{
    if (l->st)
        return NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        ref_tensor_desc *t = realloc(l->t, cap * sizeof *t);
        if (!t) {
            l->st = NX_ENOMEM;
            return NULL;
        }
        l->t = t;
        l->cap = cap;
    }
    ref_tensor_desc *d = &l->t[l->n++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        d->shape[i] = shape[i];
    /* "N,K" -> "[N, K]" */
    size_t k = 0;
    d->dims[k++] = '[';
    for (const char *p = dims; *p && k + 3 < sizeof d->dims; p++) {
        d->dims[k++] = *p;
        if (*p == ',')
            d->dims[k++] = ' ';
    }
    d->dims[k++] = ']';
    d->dims[k] = 0;
    d->fmt = -1;
    return d;
}

ref_tensor_desc *ref_add_float(ref_desc_list *l, const char *name, nx_fmt f, const char *dims, int ndim,
                               const int64_t *shape, long int_max)
{
    ref_tensor_desc *d = add_desc(l, name, dims, ndim, shape);
    if (!d)
        return NULL;
    d->kind = REF_FLOAT;
    d->fmt = (int)f;
    d->dtype = rows_dtype_of_fmt(f);
    d->int_max = int_max;
    return d;
}

ref_tensor_desc *ref_add_ints(ref_desc_list *l, const char *name, st_dtype dt, const char *dims, int ndim,
                              const int64_t *shape, ref_kind kind, long lo, long hi)
{
    ref_tensor_desc *d = add_desc(l, name, dims, ndim, shape);
    if (!d)
        return NULL;
    d->kind = kind;
    d->dtype = dt;
    d->lo = lo;
    d->hi = hi;
    return d;
}

ref_tensor_desc *ref_add_u4(ref_desc_list *l, const char *name, const char *dims, int ndim, const int64_t *shape,
                            int packed)
{
    int64_t st[REF_MAX_NDIM] = {0};
    for (int i = 0; i < ndim && i < REF_MAX_NDIM; i++)
        st[i] = shape[i];
    if (ndim > 0 && ndim <= REF_MAX_NDIM)
        st[ndim - 1] = (int64_t)fam_u4_bytes((size_t)shape[ndim - 1], packed);
    ref_tensor_desc *d = ref_add_ints(l, name, ST_U8, dims, ndim, st, REF_INTS, 0, 15);
    if (d) {
        d->packed4 = packed;
        d->row = ndim > 0 ? (long)shape[ndim - 1] : 1;
    }
    return d;
}

nx_status ref_inputs(const fam_spec *spec, ref_tensor_desc **descs, size_t *count, nx_err *err)
{
    *descs = NULL;
    *count = 0;
    const ref_family *f = NULL;
    nx_status st = find_family(spec, &f, err);
    if (st)
        return st;
    ref_desc_list l = {0};
    st = f->inputs(spec, &l, err);
    if (!st && l.st)
        st = nx_err_set(err, l.st, "out of memory describing the inputs");
    if (st) {
        free(l.t);
        return st;
    }
    *descs = l.t;
    *count = l.n;
    return NX_OK;
}

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
}

/* 1 when every element of an integer tensor lies in [lo, hi]: a branch-free
 * pass over U8 data (the int4 weights of gemv_w4a16 are one byte each) that
 * the compiler vectorises, blocks of 64 KiB across threads; other dtypes
 * element by element.  0 sends check_inputs to the serial scan that names
 * the first element outside. */
static int ints_in_range(const st_tensor *t, long lo, long hi)
{
    if (t->dtype != ST_U8) {
        for (size_t e = 0; e < t->nelem; e++) {
            long v = ref_int_at(t, e);
            if (v < lo || v > hi)
                return 0;
        }
        return 1;
    }
    if (hi < 0 || lo > 255)
        return t->nelem == 0;
    uint8_t l = (uint8_t)(lo < 0 ? 0 : lo), h = (uint8_t)(hi > 255 ? 255 : hi);
    const uint8_t *q = t->data;
    size_t n = t->nelem, blk = (size_t)1 << 16, nb = (n + blk - 1) / blk;
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (nb > 4)
    for (size_t b = 0; b < nb; b++) {
        size_t e0 = b * blk, e1 = e0 + blk < n ? e0 + blk : n;
        uint8_t out = 0;
#pragma omp simd reduction(| : out)
        for (size_t e = e0; e < e1; e++)
            out |= (uint8_t)((q[e] < l) | (q[e] > h));
        bad |= out;
    }
    return !bad;
}

/* A packed 4-bit tensor (family/fam_int4.h): every nibble is a value in
 * [0, 15], so what can be wrong is a padding nibble (rows of odd length)
 * that is not 0.  The message names the byte, its row and the nibble. */
static nx_status check_packed4(const fam_spec *s, const st_tensor *t, const ref_tensor_desc *d, nx_err *err)
{
    size_t n = (size_t)d->row, rb = fam_u4_bytes(n, 1), rows = rb ? t->nelem / rb : 0;
    if (!(n & 1))
        return NX_OK;
    for (size_t r = 0; r < rows; r++) {
        uint8_t b = t->data[r * rb + rb - 1];
        if (b >> 4)
            return nx_err_set(err, NX_EINVAL,
                              "%s.%s: input tensor '%s': byte %zu (the last of row %zu) has %u in its high nibble, "
                              "the padding after value %zu of the row, which must be 0 (two int4 per byte, low "
                              "nibble first)",
                              fam_spec_family(s), fam_spec_point(s), d->name, r * rb + rb - 1, r, (unsigned)(b >> 4), n - 1);
    }
    return NX_OK;
}

/* Names, dtypes, shapes and integer ranges of the inputs against descs. */
static nx_status check_inputs(const fam_spec *s, const st_file *in, const ref_tensor_desc *d, size_t nd,
                              nx_err *err)
{
    for (size_t i = 0; i < in->ntensors; i++) {
        size_t k = 0;
        while (k < nd && strcmp(d[k].name, in->tensors[i].name) != 0)
            k++;
        if (k == nd)
            return nx_err_set(err, NX_EINVAL, "%s.%s: unexpected input tensor '%s'", fam_spec_family(s), fam_spec_point(s),
                              in->tensors[i].name);
    }
    for (size_t k = 0; k < nd; k++) {
        char want[96], got[96];
        shape_text(want, sizeof want, d[k].ndim, d[k].shape);
        const st_tensor *t = st_find(in, d[k].name);
        if (!t)
            return nx_err_set(err, NX_EINVAL, "%s.%s: missing input tensor '%s' (expected %s %s = %s)", fam_spec_family(s),
                              fam_spec_point(s), d[k].name, st_dtype_name(d[k].dtype), d[k].dims, want);
        if (t->dtype != d[k].dtype)
            return nx_err_set(err, NX_EINVAL, "%s.%s: input tensor '%s' has dtype %s; expected %s %s = %s",
                              fam_spec_family(s), fam_spec_point(s), d[k].name, st_dtype_name(t->dtype), st_dtype_name(d[k].dtype),
                              d[k].dims, want);
        int same = t->ndim == d[k].ndim;
        for (int q = 0; same && q < t->ndim; q++)
            same = t->shape[q] == d[k].shape[q];
        if (!same) {
            shape_text(got, sizeof got, t->ndim, t->shape);
            return nx_err_set(err, NX_EINVAL, "%s.%s: input tensor '%s' has shape %s; expected %s = %s", fam_spec_family(s),
                              fam_spec_point(s), d[k].name, got, d[k].dims, want);
        }
        if (d[k].kind == REF_FLOAT)
            continue;
        if (d[k].packed4) { /* ref_add_u4: the range is every nibble's */
            nx_status st = check_packed4(s, t, &d[k], err);
            if (st)
                return st;
            continue;
        }
        if (ints_in_range(t, d[k].lo, d[k].hi))
            continue;
        for (size_t e = 0; e < t->nelem; e++) { /* find the first element outside, for the message */
            long v = ref_int_at(t, e);
            if (v < d[k].lo || v > d[k].hi)
                return nx_err_set(err, NX_EINVAL, "%s.%s: input tensor '%s': element %zu is %ld, outside [%ld, %ld]",
                                  fam_spec_family(s), fam_spec_point(s), d[k].name, e, v, d[k].lo, d[k].hi);
        }
    }
    return NX_OK;
}

nx_status ref_check_inputs(const fam_spec *spec, const st_file *in, nx_err *err)
{
    ref_tensor_desc *d;
    size_t nd;
    nx_status st = ref_inputs(spec, &d, &nd, err);
    if (st)
        return st;
    st = check_inputs(spec, in, d, nd, err);
    free(d);
    return st;
}

/* --- the job ---------------------------------------------------------------------- */

ref_math *ref_job_math(ref_job *j)
{
    return &j->maths[omp_get_thread_num()];
}

void ref_job_forget_rows(ref_job *j)
{
    for (int t = 0; t < j->nthreads; t++)
        j->maths[t].cache_key = SIZE_MAX;
}

nx_status ref_program(ref_job *j, const fam_reduction *r, size_t n, int dot, const nx_program **out, nx_err *err)
{
    for (size_t i = 0; i < j->nprogs; i++) {
        if (j->progs[i].red == r && j->progs[i].n == n && j->progs[i].dot == dot) {
            *out = j->progs[i].p;
            return NX_OK;
        }
    }
    if (j->nprogs == j->progs_cap) {
        size_t cap = j->progs_cap ? 2 * j->progs_cap : 8;
        ref_prog *p = realloc(j->progs, cap * sizeof *p);
        if (!p)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        j->progs = p;
        j->progs_cap = cap;
    }
    nx_program *p;
    nx_status st = nx_program_build(&r->point, n, dot, &p, err);
    if (st) {
        nx_err_prefix(err, "%s.%s: reduction '%s' (tree %s) at n = %zu", fam_spec_family(j->spec), fam_spec_point(j->spec), r->name,
                      r->tree_text, n);
        return st;
    }
    j->progs[j->nprogs++] = (ref_prog){r, n, dot, p};
    *out = p;
    return NX_OK;
}

#define REF_HUGE_BYTES ((size_t)2 << 20)

/* The largest array ref_alloc refused as over --max-bytes (0: none), for
 * ref_run_opts to turn the NULL the family saw into bad input. */
static uint64_t refused_count;

double *ref_alloc(size_t count)
{
    uint64_t bytes;
    if (!nx_limits_mul(count, sizeof(double), &bytes) || bytes > nx_limits_get()->max_bytes) {
        uint64_t was = __atomic_load_n(&refused_count, __ATOMIC_RELAXED);
        while (count > was && !__atomic_compare_exchange_n(&refused_count, &was, count, 0, __ATOMIC_RELAXED,
                                                           __ATOMIC_RELAXED))
            ;
        return NULL;
    }
    size_t size = (count ? count : 1) * sizeof(double);
    if (size < REF_HUGE_BYTES)
        return malloc(size);
    /* large arrays on 2 MiB boundaries, backed by huge pages where the
     * kernel has them: a 64 MiB array faults 32 times instead of 16384 */
    size_t round = (size + REF_HUGE_BYTES - 1) & ~(REF_HUGE_BYTES - 1);
    void *p = aligned_alloc(REF_HUGE_BYTES, round);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, round, MADV_HUGEPAGE); /* advice only: a kernel without it keeps small pages */
#endif
    return p;
}

/* The inputs at the point's shape, decoded (8 bytes per element) beside
 * their encoding, against --max-bytes (docs/limits.md): before gen or ref
 * allocates anything for them. */
nx_status ref_limit_inputs(const fam_spec *s, const ref_tensor_desc *d, size_t nd, nx_err *err)
{
    uint64_t total = 0;
    for (size_t k = 0; k < nd; k++) {
        uint64_t ne = 1, b;
        int ok = 1;
        for (int q = 0; q < d[k].ndim && ok; q++)
            ok = nx_limits_mul(ne, (uint64_t)d[k].shape[q], &ne);
        ok = ok && nx_limits_mul(ne, 8 + (st_dtype_bits(d[k].dtype) + 7) / 8, &b) &&
             !__builtin_add_overflow(total, b, &total);
        if (!ok)
            return nx_err_set(err, NX_EINVAL, "%s.%s: the size of the inputs overflows 64 bits at tensor '%s' = %s",
                              fam_spec_family(s), fam_spec_point(s), d[k].name, d[k].dims);
    }
    char what[256];
    size_t l = (size_t)snprintf(what, sizeof what, "%s.%s: the inputs", fam_spec_family(s), fam_spec_point(s));
    for (size_t k = 0; k < nd && l < sizeof what; k++) {
        char sh[96];
        shape_text(sh, sizeof sh, d[k].ndim, d[k].shape);
        l += (size_t)snprintf(what + l, sizeof what - l, "%s %s %s", k ? "," : "", d[k].name, sh);
    }
    if (l < sizeof what)
        snprintf(what + l, sizeof what - l, " (decoded, 8 bytes per element, and encoded)");
    return nx_limits_bytes(total, what, err);
}

nx_status ref_reduce_flat(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                          const double *a, nx_fmt bfmt, const double *b, double *y, nx_err *err)
{
    const nx_program *p;
    nx_status st = ref_program(j, r, n, dot, &p, err);
    if (st || rows == 0)
        return st;
    nx_rows in = {.rows = rows, .a_fmt = afmt, .a = a, .b_fmt = bfmt, .b = dot ? b : NULL};
    st = j->reduce(p, &in, y, ref_threads_for(j, rows * (n ? n : 1)), err);
    if (st)
        nx_err_prefix(err, "reduction '%s'", r->name);
    return st;
}

static nx_status reduce_rows(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                             nx_fmt bfmt, ref_arow_fn arow, ref_gather_fn g, const void *ctx, double *y, nx_err *err);

nx_status ref_reduce_rows(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                          nx_fmt bfmt, ref_gather_fn g, const void *ctx, double *y, nx_err *err)
{
    return reduce_rows(j, r, n, dot, rows, afmt, bfmt, NULL, g, ctx, y, err);
}

nx_status ref_reduce_rows_a(ref_job *j, const fam_reduction *r, size_t n, size_t rows, nx_fmt afmt, nx_fmt bfmt,
                            ref_arow_fn arow, ref_gather_fn g, const void *ctx, double *y, nx_err *err)
{
    return reduce_rows(j, r, n, 1, rows, afmt, bfmt, arow, g, ctx, y, err);
}

/* arow (may be NULL): row r's a lies at arow(ctx, r) and g fills only b;
 * the fast engine reads it there (nx_fast_run_rows), another engine from a
 * copy in the block's buffer. */
static nx_status reduce_rows(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                             nx_fmt bfmt, ref_arow_fn arow, ref_gather_fn g, const void *ctx, double *y, nx_err *err)
{
    const nx_program *p;
    nx_status st = ref_program(j, r, n, dot, &p, err);
    if (st || rows == 0)
        return st;
    /* Blocks of about REF_BLOCK_VALUES terms (at least 8 rows), each
     * gathered by one thread into its own buffers (reused: they stay in its
     * cache and fault once) and reduced there by one single-threaded engine
     * call.  Rows are independent and each row's order is fixed by the
     * program, so the partition of rows among threads and blocks changes no
     * bit (tests/cli_ref_threads.sh). */
    size_t per = n ? REF_BLOCK_VALUES / n : rows;
    if (per < 8)
        per = 8;
    if (per > rows)
        per = rows;
    size_t nblocks = (rows + per - 1) / per;
    /* the fast engine's plan of the program, built once for every block
     * (it was built per block: a tenth of the 8B references' time).  A
     * forced vector path (PARITY_SIMD) goes through nx_fast_reduce as before. */
    nx_fast *fx = NULL;
    if (j->reduce == nx_fast_reduce && !nx_simd_forced()) {
        fx = nx_fast_new(p, afmt, bfmt, 0, NX_FP64, err);
        if (!fx) {
            nx_err_prefix(err, "reduction '%s'", r->name);
            return err ? err->code : NX_ENOMEM;
        }
    }
    int nt = j->nthreads;
    if ((size_t)nt > nblocks)
        nt = (int)nblocks;
    nx_status first_st = NX_OK;
    size_t first_bad = SIZE_MAX;
    nx_err first_err = {0};
#pragma omp parallel num_threads(nt)
    {
        double *a = arow && fx ? NULL : ref_alloc(per * n), *b = dot ? ref_alloc(per * n) : NULL;
        const double **ap = arow && fx ? malloc(per * sizeof *ap) : NULL;
        nx_err e = {0};
        int oom = (arow && fx ? !ap : !a) || (dot && !b);
#pragma omp for schedule(static)
        for (size_t blk = 0; blk < nblocks; blk++) {
            size_t first = blk * per, cnt = rows - first < per ? rows - first : per;
            nx_status s = NX_OK;
            if (oom)
                s = nx_err_set(&e, NX_ENOMEM, "out of memory gathering %zu rows of %zu terms", per, n);
            else {
                ref_math *m = ref_job_math(j);
                for (size_t k = 0; k < cnt; k++) {
                    if (!arow)
                        g(ctx, first + k, a + k * n, dot ? b + k * n : NULL, m);
                    else if (ap) {
                        ap[k] = arow(ctx, first + k);
                        g(ctx, first + k, NULL, b + k * n, m);
                    } else {
                        memcpy(a + k * n, arow(ctx, first + k), n * sizeof *a);
                        g(ctx, first + k, NULL, b + k * n, m);
                    }
                }
                nx_rows in = {.rows = cnt, .a_fmt = afmt, .a = a, .b_fmt = bfmt, .b = b};
                s = ap ? nx_fast_run_rows(fx, &in, ap, y + first, 1, NULL, &e)
                    : fx ? nx_fast_run(fx, &in, y + first, 1, NULL, &e)
                         : j->reduce(p, &in, y + first, 1, &e);
            }
            if (s) {
#pragma omp critical(ref_reduce_rows_err)
                if (first < first_bad) { /* the error of the first failing block, whatever the threads */
                    first_bad = first;
                    first_st = s;
                    first_err = e;
                }
            }
        }
        free(a);
        free(b);
        free(ap);
    }
    nx_fast_free(fx);
    st = first_st;
    if (st) {
        *err = first_err;
        nx_err_prefix(err, "reduction '%s'", r->name);
    }
    return st;
}

const st_tensor *ref_tensor(ref_job *j, const char *name)
{
    return st_find(j->in, name);
}

nx_status ref_decode(ref_job *j, const char *name, double **out, nx_err *err)
{
    const st_tensor *t = st_find(j->in, name);
    *out = NULL;
    if (!t)
        return nx_err_set(err, NX_EINTERNAL, "input tensor '%s' vanished after validation", name);
    double *v = ref_alloc(t->nelem);
    if (!v)
        return nx_err_set(err, NX_ENOMEM, "out of memory decoding '%s'", name);
    nx_status st = rows_decode(t, v, err);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    return NX_OK;
}

long ref_int_at(const st_tensor *t, size_t i)
{
    uint64_t b = st_get_bits(t, t->data, i);
    switch (t->dtype) {
    case ST_I8: return (long)(int8_t)b;
    case ST_I16: return (long)(int16_t)b;
    case ST_I32: return (long)(int32_t)b;
    case ST_I64: return (long)(int64_t)b;
    default: return (long)b;
    }
}

nx_status ref_emit(ref_job *j, const char *name, nx_fmt f, int ndim, const int64_t *shape, const double *v,
                   nx_err *err)
{
    st_tensor *t;
    nx_status st = st_add_tensor(j->out, name, rows_dtype_of_fmt(f), ndim, shape, &t, err);
    if (st)
        return st;
    st = rows_encode(f, v, t->nelem, t, t->data, err);
    if (st)
        nx_err_prefix(err, "%s.%s: output '%s' in %s", fam_spec_family(j->spec), fam_spec_point(j->spec), name, nx_format(f)->name);
    return st;
}

/* --- running ------------------------------------------------------------------------ */

nx_status ref_run_opts(const fam_spec *spec, const st_file *in, st_file *out, const ref_opts *opts, nx_err *err)
{
    const ref_family *f = NULL;
    nx_status st = find_family(spec, &f, err);
    if (st)
        return st;
    if (!ref_engine_available(opts->engine))
        return nx_err_set(err, NX_EUNSUPPORTED, "engine '%s' is not built into this binary",
                          nx_engine_name(opts->engine));
    ref_tensor_desc *d;
    size_t nd;
    if ((st = ref_inputs(spec, &d, &nd, err)))
        return st;
    if (!(st = ref_limit_inputs(spec, d, nd, err)))
        st = check_inputs(spec, in, d, nd, err);
    free(d);
    if (st)
        return st;
    ref_job j;
    memset(&j, 0, sizeof j);
    j.spec = spec;
    j.in = in;
    j.out = out;
    j.nthreads = opts->threads > 0 ? opts->threads : omp_get_max_threads();
    j.reduce = opts->engine == NX_ENGINE_FAST ? nx_fast_reduce : nx_mpfr_reduce;
    j.maths = malloc((size_t)j.nthreads * sizeof *j.maths);
    if (!j.maths)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    for (int i = 0; i < j.nthreads; i++)
        ref_math_init(&j.maths[i]);
    __atomic_store_n(&refused_count, 0, __ATOMIC_RELAXED);
    st = f->run(&j, err);
    uint64_t refused = __atomic_load_n(&refused_count, __ATOMIC_RELAXED);
    if (st == NX_ENOMEM && refused)
        st = nx_err_set(err, NX_EINVAL,
                        "%s.%s: at this shape an array of %llu values (8 bytes each) is more than the limit of %llu "
                        "bytes (raise it with --max-bytes)",
                        fam_spec_family(spec), fam_spec_point(spec), (unsigned long long)refused,
                        (unsigned long long)nx_limits_get()->max_bytes);
    for (int i = 0; i < j.nthreads; i++)
        ref_math_clear(&j.maths[i]);
    free(j.maths);
    for (size_t i = 0; i < j.nprogs; i++)
        nx_program_free(j.progs[i].p);
    free(j.progs);
    return st;
}

nx_status ref_run(const fam_spec *spec, const st_file *in, st_file *out, int threads, nx_err *err)
{
    ref_opts o = {threads, ref_engine_default()};
    return ref_run_opts(spec, in, out, &o, err);
}

nx_status ref_spec_meta(const fam_spec *spec, st_file *out, nx_err *err)
{
    nx_status st = NX_OK;
    char key[96];
    if (spec->hash && (st = st_add_meta(out, "spec_hash", spec->hash, err)))
        return st;
    for (size_t i = 0; i < spec->nreds && !st; i++) {
        const fam_reduction *r = &spec->reds[i];
        char *txt = nx_tree_print(r->point.tree);
        snprintf(key, sizeof key, "reduction.%s", r->name);
        st = st_add_meta(out, key, txt ? txt : r->tree_text, err);
        free(txt);
        if (st)
            break;
        char *pt = nx_point_print(&r->point);
        snprintf(key, sizeof key, "numerics.%s", r->name);
        st = pt ? st_add_meta(out, key, pt, err) : nx_err_set(err, NX_ENOMEM, "out of memory");
        free(pt);
        if (!st && nx_tree_uses(r->point.tree, NX_T_ATOMIC)) {
            snprintf(key, sizeof key, "nondeterministic.%s", r->name);
            st = st_add_meta(out, key,
                             "the tree uses 'atomic' (no defined order): evaluated in seq order, one admissible "
                             "order, not a bit-exact reference",
                             err);
        }
    }
    for (size_t i = 0; i < spec->nelems && !st; i++) {
        const fam_elem *e = &spec->elems[i];
        char val[256];
        if (e->impl == FAM_ELEM_CR)
            snprintf(val, sizeof val, "cr");
        else
            snprintf(val, sizeof val,
                     "%s (%g ulp): evaluated as cr; the approximation cannot be reproduced bit for bit, a device "
                     "running it is compared with the tolerance",
                     e->approx ? e->approx : "approx", e->ulp);
        snprintf(key, sizeof key, "elementwise.%s", e->name);
        st = st_add_meta(out, key, val, err);
    }
    return st;
}

/* --- an output as the rows of its reduction --------------------------------------- */

void ref_out_rows_free(ref_out_rows *r)
{
    free(r->a);
    free(r->b);
    free(r->y);
    memset(r, 0, sizeof *r);
}

nx_status ref_out_rows_dot(const fam_spec *s, const char *red, const double *a, long M, const double *b, size_t N,
                           size_t K, nx_fmt fa, nx_fmt fb, nx_fmt fy, const st_tensor *y, const int64_t *rows,
                           size_t max_rows, ref_out_rows *o, nx_err *err)
{
    if (y->ndim != 2 || (size_t)y->shape[1] != N)
        return nx_err_set(err, NX_EINVAL, "%s.%s: output 'y' is not [rows, N = %zu]", s->family,
                          s->point ? s->point : "?", N);
    size_t R = (size_t)y->shape[0], total = R * N, keep = max_rows && max_rows < total ? max_rows : total;
    nx_status st = nx_limits_terms(keep, K, "the output's reduction rows", err);
    if (st)
        return st;
    double *yall = ref_alloc(total);
    o->a = ref_alloc(keep * K);
    o->b = ref_alloc(keep * K);
    o->y = ref_alloc(keep);
    if (!yall || !o->a || !o->b || !o->y) {
        free(yall);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    if ((st = rows_decode(y, yall, err))) {
        free(yall);
        return st;
    }
    for (size_t t = 0; t < keep; t++) {
        size_t e = keep == total ? t : (size_t)((double)t * (double)total / (double)keep), i = e / N, n = e % N;
        int64_t m = rows ? rows[i] : (int64_t)i;
        if (m < 0 || m >= M) {
            free(yall);
            return nx_err_set(err, NX_EINVAL, "%s: output row %zu is logical row %lld, beyond the %ld rows", s->family,
                              i, (long long)m, M);
        }
        memcpy(o->a + t * K, a + (size_t)m * K, K * sizeof *a);
        memcpy(o->b + t * K, b + n * K, K * sizeof *b);
        o->y[t] = yall[e];
    }
    free(yall);
    snprintf(o->reduction, sizeof o->reduction, "%s", red);
    o->rows = keep;
    o->total = total;
    o->n = K;
    o->a_fmt = fa;
    o->b_fmt = fb;
    o->y_fmt = fy;
    return NX_OK;
}

nx_status ref_output_rows(const fam_spec *spec, const st_file *in, const st_tensor *y, const int64_t *rows,
                          size_t max_rows, ref_out_rows *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    const ref_family *f = NULL;
    nx_status st = find_family(spec, &f, err);
    if (st)
        return st;
    if (!f->out_rows)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "family '%s' has no layout of its output as the rows of one reduction (gemm has)", f->name);
    if ((st = ref_check_inputs(spec, in, err)))
        return st;
    if ((st = f->out_rows(spec, in, y, rows, max_rows, out, err)))
        ref_out_rows_free(out);
    return st;
}
