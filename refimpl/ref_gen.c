/* ref_gen.c: the inputs of a family point, generated from ref_inputs with
 * Philox4x32-10 (numerics/nx_philox.h).  Every element is a pure function of
 * (seed, tensor name, index); integer tensors use the draws below, float
 * tensors the chosen distribution (under `int`, with the family's bound
 * that keeps every reduction exact). */
#include "ref_internal.h"
#include "fam_int4.h"
#include "rows.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* REF_INTS: element i is lo + below(B(i, 0).w0, hi - lo + 1).  Blocks of
 * 4096 elements across threads, each a pure function of its indices, so
 * the bytes do not depend on the thread count. */
static void gen_ints(const ref_tensor_desc *d, uint64_t seed, uint32_t id, st_tensor *t, int threads)
{
    uint32_t span = (uint32_t)(d->hi - d->lo + 1);
    const size_t blk = 4096;
    size_t nb = (t->nelem + blk - 1) / blk;
    int u8 = t->dtype == ST_U8 && d->lo >= 0 && d->hi <= 255;
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) schedule(static) if (nb > 1 && st_dtype_bits(t->dtype) >= 8)
    for (size_t b = 0; b < nb; b++) {
        uint32_t w0[4096];
        size_t i0 = b * blk, cnt = t->nelem - i0 < blk ? t->nelem - i0 : blk;
        nx_philox_w0_run(seed, id, i0, 0, cnt, w0);
        if (u8) {
            uint8_t *q = (uint8_t *)t->data + i0;
#pragma omp simd
            for (size_t k = 0; k < cnt; k++)
                q[k] = (uint8_t)(d->lo + (long)(((uint64_t)w0[k] * span) >> 32)); /* nx_philox_below, inlined */
        } else {
            for (size_t k = 0; k < cnt; k++)
                st_put_bits(t, t->data, i0 + k, (uint64_t)(d->lo + (long)nx_philox_below(w0[k], span)));
        }
    }
}

/* REF_INTS packed two per byte (ref_add_u4, family/fam_int4.h): the values
 * are those of the unpacked tensor (value c of row r is logical element
 * r * row + c), so both layouts hold the same numbers.  Threads take whole
 * rows (no two share a byte); the padding nibble of an odd row is 0. */
static void gen_u4_packed(const ref_tensor_desc *d, uint64_t seed, uint32_t id, st_tensor *t, int threads)
{
    uint32_t span = (uint32_t)(d->hi - d->lo + 1);
    size_t row = (size_t)d->row, rb = fam_u4_bytes(row, 1), rows = rb ? t->nelem / rb : 0;
    const size_t blk = 4096; /* even: every block starts on a byte */
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) schedule(static) if (rows > 1)
    for (size_t r = 0; r < rows; r++) {
        uint32_t w0[4096];
        uint8_t *q = (uint8_t *)t->data + r * rb;
        for (size_t c0 = 0; c0 < row; c0 += blk) {
            size_t cnt = row - c0 < blk ? row - c0 : blk;
            nx_philox_w0_run(seed, id, r * row + c0, 0, cnt, w0);
            uint8_t *o = q + c0 / 2, base = (uint8_t)d->lo;
            size_t pairs = cnt / 2;
#pragma omp simd
            for (size_t k = 0; k < pairs; k++) /* nx_philox_below, inlined */
                o[k] = (uint8_t)((uint8_t)(base + (((uint64_t)w0[2 * k] * span) >> 32)) |
                                 (uint8_t)(base + (((uint64_t)w0[2 * k + 1] * span) >> 32)) << 4);
            if (cnt & 1) /* the row's last value; the padding nibble is 0 */
                o[pairs] = (uint8_t)(base + (((uint64_t)w0[cnt - 1] * span) >> 32));
        }
    }
}

/* REF_DISTINCT: row r (the last dimension, width k) is the first k entries
 * of a Fisher-Yates shuffle of lo..hi whose j-th swap partner is
 * j + below(B(r, j).w0, span - j). */
static nx_status gen_distinct(const ref_tensor_desc *d, uint64_t seed, uint32_t id, st_tensor *t, nx_err *err)
{
    size_t k = (size_t)d->shape[d->ndim - 1], rows = k ? t->nelem / k : 0;
    size_t span = (size_t)(d->hi - d->lo + 1);
    if (k > span)
        return nx_err_set(err, NX_EINVAL, "tensor '%s': %zu distinct values per row from [%ld, %ld] is impossible",
                          d->name, k, d->lo, d->hi);
    long *perm = malloc(span * sizeof *perm);
    if (!perm)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    uint32_t w[4];
    for (size_t r = 0; r < rows; r++) {
        for (size_t v = 0; v < span; v++)
            perm[v] = d->lo + (long)v;
        for (size_t j = 0; j < k; j++) {
            nx_philox_block(seed, id, r, (uint32_t)j, w);
            size_t s = j + nx_philox_below(w[0], (uint32_t)(span - j));
            long tmp = perm[j];
            perm[j] = perm[s];
            perm[s] = tmp;
            st_put_bits(t, t->data, r * k + j, (uint64_t)perm[j]);
        }
    }
    free(perm);
    return NX_OK;
}

/* Draws a float tensor and encodes it, 8192 elements a chunk per thread in a
 * buffer of its own: no array of t->nelem doubles (faulted in and zeroed by
 * the kernel, written once, read once: a fifth of the 8B campaign's input
 * generation).  A chunk is a multiple of 8 elements, so it starts on a byte
 * at any dtype width and no two threads share a byte; every element is a
 * pure function of (seed, tensor, index), so the bytes do not depend on the
 * chunking or the threads.  The error reported is the first failing
 * chunk's, with the element's index in the tensor. */
static nx_status fill_encode(const nx_dist_spec *ds, uint64_t seed, uint32_t id, nx_fmt f, st_tensor *t, int threads,
                             nx_err *err)
{
    const size_t chunk = 8192;
    size_t nc = (t->nelem + chunk - 1) / chunk;
    unsigned bits = st_dtype_bits(t->dtype);
    size_t first_bad = SIZE_MAX;
    nx_err bad_err = {0};
    nx_status bad_st = NX_OK;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (nc > 1)
    {
        double *v = malloc(chunk * sizeof *v);
#pragma omp for schedule(static)
        for (size_t c = 0; c < nc; c++) {
            size_t lo = c * chunk, n = t->nelem - lo < chunk ? t->nelem - lo : chunk;
            nx_err e = {0};
            nx_status st = !v ? nx_err_set(&e, NX_ENOMEM, "out of memory for tensor '%s'", t->name)
                              : nx_philox_fill(seed, id, ds, f, lo, n, v, 1, &e);
            if (!st)
                st = rows_encode_at(f, v, n, lo, t, t->data + lo / 8 * bits, &e);
            if (st) {
#pragma omp critical(fill_encode_err)
                if (lo < first_bad) {
                    first_bad = lo;
                    bad_st = st;
                    bad_err = e;
                }
            }
        }
        free(v);
    }
    if (bad_st && err)
        *err = bad_err;
    return bad_st;
}

nx_status ref_generate(const fam_spec *spec, const ref_gen_opts *o, st_file *out, nx_err *err)
{
    ref_tensor_desc *d;
    size_t nd;
    nx_status st = ref_inputs(spec, &d, &nd, err);
    if (st)
        return st;
    if ((st = ref_limit_inputs(spec, d, nd, err))) {
        free(d);
        return st;
    }
    for (size_t i = 0; i < nd && !st; i++) {
        st_tensor *t;
        if ((st = st_add_tensor(out, d[i].name, d[i].dtype, d[i].ndim, d[i].shape, &t, err)))
            break;
        uint32_t id = nx_philox_tensor_id(d[i].name);
        if (d[i].kind == REF_INTS && d[i].packed4) {
            gen_u4_packed(&d[i], o->seed, id, t, o->threads);
            continue;
        }
        if (d[i].kind == REF_INTS) {
            gen_ints(&d[i], o->seed, id, t, o->threads);
            continue;
        }
        if (d[i].kind == REF_DISTINCT) {
            st = gen_distinct(&d[i], o->seed, id, t, err);
            continue;
        }
        nx_dist_spec ds;
        nx_dist_spec_init(&ds, o->dist);
        ds.specials = o->specials;
        ds.int_max = d[i].int_max;
        st = fill_encode(&ds, o->seed, id, (nx_fmt)d[i].fmt, t, o->threads, err);
        if (st)
            nx_err_prefix(err, "tensor '%s'", d[i].name);
    }
    free(d);
    return st;
}
