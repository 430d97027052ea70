/* ref_gen.c: the inputs of a family point, generated from ref_inputs with
 * Philox4x32-10 (numerics/nx_philox.h).  Every element is a pure function of
 * (seed, tensor name, index); integer tensors use the draws below, float
 * tensors the chosen distribution (under `int`, with the family's bound
 * that keeps every reduction exact). */
#include "ref_internal.h"
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

/* Encodes v (t->nelem values, already in format f) into t->data over
 * threads, 4096 elements a chunk: a multiple of 8, so every chunk starts on
 * a byte boundary at any dtype width and no two threads share a byte.  Each
 * element's bits depend only on its value.  On a value the format cannot
 * hold the serial pass runs again, for the first such element's index. */
static nx_status encode_threads(nx_fmt f, const double *v, st_tensor *t, int threads, nx_err *err)
{
    const size_t chunk = 4096;
    size_t nc = (t->nelem + chunk - 1) / chunk;
    unsigned bits = st_dtype_bits(t->dtype);
    int bad = 0;
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) schedule(static) if (nc > 1) reduction(| : bad)
    for (size_t c = 0; c < nc; c++) {
        size_t lo = c * chunk, n = t->nelem - lo < chunk ? t->nelem - lo : chunk;
        nx_err e;
        if (rows_encode(f, v + lo, n, t, t->data + lo / 8 * bits, &e) != NX_OK)
            bad = 1;
    }
    return bad ? rows_encode(f, v, t->nelem, t, t->data, err) : NX_OK;
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
        double *v = ref_alloc(t->nelem);
        if (!v) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory for tensor '%s'", d[i].name);
            break;
        }
        st = nx_philox_fill(o->seed, id, &ds, (nx_fmt)d[i].fmt, 0, t->nelem, v, o->threads, err);
        if (!st)
            st = encode_threads((nx_fmt)d[i].fmt, v, t, o->threads, err);
        if (st)
            nx_err_prefix(err, "tensor '%s'", d[i].name);
        free(v);
    }
    free(d);
    return st;
}
