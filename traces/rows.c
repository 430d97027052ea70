/* rows.c: dtype ↔ format mapping, decode and encode of tensors. */
#include "rows.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int rows_fmt_of_dtype(st_dtype dt)
{
    switch (dt) {
    case ST_F64: return NX_FP64;
    case ST_F32: return NX_FP32;
    case ST_F16: return NX_FP16;
    case ST_BF16: return NX_BF16;
    case ST_F8_E5M2: return NX_E5M2;
    case ST_F8_E4M3: return NX_E4M3;
    case ST_F6_E3M2: return NX_E3M2;
    case ST_F6_E2M3: return NX_E2M3;
    case ST_F4: return NX_E2M1;
    case ST_F8_E8M0: return NX_E8M0;
    default: return -1;
    }
}

st_dtype rows_dtype_of_fmt(nx_fmt f)
{
    st_dtype dt = ST_F32;
    st_dtype_from_name(nx_format(f)->st_dtype, &dt);
    return dt;
}

/* Exact values of every pattern of the byte formats with at most 2^16
 * patterns, built once (pthread_once: decoding runs on many threads). */
static double tab_fp16[65536], tab_e4m3[256], tab_e5m2[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;
/* An fp16 pattern's value built from its fields (nx_decode takes an ldexp
 * per pattern: 65,536 of them were a third of a small `ref`'s run); the
 * infinities and NaNs as nx_decode gives them. */
static double fp16_value(uint32_t b)
{
    uint32_t e = (b >> 10) & 31, m = b & 1023;
    if (e == 31)
        return nx_decode(NX_FP16, b, NULL);
    double v;
    if (e == 0) {
        v = (double)m * 0x1p-24; /* exact */
    } else {
        uint64_t u = (uint64_t)(e - 15 + 1023) << 52 | (uint64_t)m << 42;
        memcpy(&v, &u, sizeof v);
    }
    return b & 0x8000 ? -v : v;
}

static void tab_init(void)
{
    for (uint32_t b = 0; b < 65536; b++)
        tab_fp16[b] = fp16_value(b);
    for (size_t b = 0; b < 256; b++) {
        tab_e4m3[b] = nx_decode(NX_E4M3, b, NULL);
        tab_e5m2[b] = nx_decode(NX_E5M2, b, NULL);
    }
}

nx_status rows_decode(const st_tensor *t, double *out, nx_err *err)
{
    return rows_decode_range(t, 0, (size_t)t->nelem, out, err);
}

/* Elements [first, first + n) of t (format f) into out, on this thread.
 * Fast paths for the byte-aligned formats models use (little-endian
 * storage, as safetensors specifies): the same exact values as nx_decode,
 * which the generic path and the tests use. */
static void decode_span(int f, const st_tensor *t, size_t first, size_t n, double *out)
{
    const uint8_t *d = t->data;
    if (f == NX_FP32) {
        d += 4 * first;
        for (size_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, d + 4 * i, 4);
            out[i] = (double)v; /* exact; NaN stays NaN */
        }
    } else if (f == NX_BF16) {
        d += 2 * first;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)d[2 * i] << 16 | (uint32_t)d[2 * i + 1] << 24;
            float v;
            memcpy(&v, &u, 4);
            out[i] = (double)v; /* bf16 is the top half of fp32: exact */
        }
    } else if (f == NX_FP64) {
        memcpy(out, d + 8 * first, n * sizeof *out);
    } else if (f == NX_FP16 || f == NX_E4M3 || f == NX_E5M2) {
        pthread_once(&tab_once, tab_init);
        if (f != NX_FP16) {
            const double *tab = f == NX_E4M3 ? tab_e4m3 : tab_e5m2;
            d += first;
            for (size_t i = 0; i < n; i++)
                out[i] = tab[d[i]];
        } else {
            d += 2 * first;
            for (size_t i = 0; i < n; i++)
                out[i] = tab_fp16[(size_t)d[2 * i] | (size_t)d[2 * i + 1] << 8];
        }
    } else {
        for (size_t i = 0; i < n; i++)
            out[i] = nx_decode((nx_fmt)f, st_get_bits(t, d, first + i), NULL);
    }
}

nx_status rows_decode_range(const st_tensor *t, size_t first, size_t n, double *out, nx_err *err)
{
    int f = rows_fmt_of_dtype(t->dtype);
    if (f < 0)
        return nx_err_set(err, NX_EINVAL, "tensor '%s': dtype %s is not a number format of docs/numerics.md §1",
                          t->name, st_dtype_name(t->dtype));
    if (first > t->nelem || n > t->nelem - first)
        return nx_err_set(err, NX_EINVAL, "tensor '%s': elements %zu..%zu are past its %llu", t->name, first,
                          first + n, (unsigned long long)t->nelem);
    /* Large ranges in chunks across the threads; a row (a gather's, often
     * inside a parallel region already) on this thread, without entering
     * the OpenMP runtime: a nested region of one thread per decoded row
     * was a tenth of the paged attention reference, in futex calls. */
    const size_t chunk = (size_t)1 << 14;
    if (n <= ((size_t)1 << 16) || omp_in_parallel()) {
        decode_span(f, t, first, n, out);
        return NX_OK;
    }
    size_t nc = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nc; c++) {
        size_t lo = c * chunk, cnt = n - lo < chunk ? n - lo : chunk;
        decode_span(f, t, first + lo, cnt, out + lo);
    }
    return NX_OK;
}

/* The pattern of v in fp32, bf16 or fp16 when v is a member (a float that
 * the format holds exactly): what nx_encode gives, without its ldexp and
 * floor.  0 for anything else (NaN, non-members, other formats): the caller
 * then asks nx_encode, which also words the error. */
static inline int encode_fast(nx_fmt f, double v, uint64_t *bits)
{
    if (v != v)
        return 0;
    float x = (float)v;
    if ((double)x != v)
        return 0;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    switch (f) {
    case NX_FP32:
        *bits = u;
        return 1;
    case NX_BF16: /* bf16 is fp32's top half: a member has a zero bottom half */
        if (u & 0xffffu)
            return 0;
        *bits = u >> 16;
        return 1;
    case NX_FP16: {
        uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
        if (a == 0) { /* ±0 */
            *bits = sign;
            return 1;
        }
        if (a == 0x7f800000u) { /* ±inf */
            *bits = sign | 0x7c00u;
            return 1;
        }
        int e = (int)(a >> 23) - 127; /* a float's own subnormals are far below fp16's */
        if (e > 15 || e < -24)
            return 0;
        if (e >= -14) { /* fp16 normal: 10 fraction bits, the low 13 zero */
            if (a & 0x1fffu)
                return 0;
            *bits = sign | (uint32_t)(e + 15) << 10 | (a >> 13 & 0x3ffu);
            return 1;
        }
        /* fp16 subnormal: |x| = m 2^-24, m < 1024 an integer */
        uint32_t mant = (a & 0x7fffffu) | 0x800000u; /* |x| = mant 2^(e-23) */
        int sh = -24 - (e - 23);                     /* m = mant >> sh, 14 <= sh <= 23 */
        if (mant & ((1u << sh) - 1))
            return 0;
        *bits = sign | mant >> sh;
        return 1;
    }
    default:
        return 0;
    }
}

nx_status rows_encode(nx_fmt f, const double *v, size_t count, st_tensor *t, uint8_t *data, nx_err *err)
{
    return rows_encode_at(f, v, count, 0, t, data, err);
}

nx_status rows_encode_at(nx_fmt f, const double *v, size_t count, size_t base, st_tensor *t, uint8_t *data,
                         nx_err *err)
{
    unsigned w = st_dtype_bits(t->dtype);
    int fast = (f == NX_FP32 && w == 32) || ((f == NX_BF16 || f == NX_FP16) && w == 16);
    for (size_t i = 0; i < count; i++) {
        uint64_t bits;
        if (fast && encode_fast(f, v[i], &bits)) { /* little-endian storage, as st_put_bits writes it */
            uint8_t b[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)};
            if (w == 32)
                memcpy(data + 4 * i, b, 4); /* constant sizes: one store each */
            else
                memcpy(data + 2 * i, b, 2);
            continue;
        }
        /* a NaN (its canonical pattern), another format, or a value to refuse */
        nx_err e;
        if (nx_encode(f, v[i], &bits, &e) != NX_OK)
            return nx_err_set(err, NX_EINVAL, "element %zu of '%s': %s", base + i, t->name, e.msg);
        st_put_bits(t, data, i, bits);
    }
    return NX_OK;
}
