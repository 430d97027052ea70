/* cpu_format.c: the cpu backend's own format conversions.  Narrow formats
 * are read into float exactly (every bf16, fp16, e4m3 and e5m2 value is an
 * fp32 value) and results are rounded from float to bf16 / fp16 in rne with
 * integer bit manipulation, the way a kernel's epilogue does it.  NaN
 * results are the canonical quiet NaN with sign 0 (docs/numerics.md §2). */
#include "cpu_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

float cpu_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t raw_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

uint32_t cpu_f32_bits(float f)
{
    return isnan(f) ? 0x7fc00000u : raw_bits(f);
}

int cpu_fmt_readable(nx_fmt f)
{
    return f == NX_FP32 || f == NX_FP16 || f == NX_BF16 || f == NX_E4M3 || f == NX_E5M2;
}

int cpu_fmt_writable(nx_fmt f)
{
    return f == NX_FP32 || f == NX_FP16 || f == NX_BF16;
}

/* --- narrow to float: exact ---------------------------------------------------- */

float cpu_bf16_to_f32(uint16_t b)
{
    return cpu_bits_f32((uint32_t)b << 16);
}

/* A format with e exponent bits, m mantissa bits and bias `bias` whose
 * pattern (without sign) is `mag`: value = 2^(E - bias) * (1 + M / 2^m), or
 * 2^(1 - bias) * M / 2^m when E = 0.  Exact in float (ldexpf of a small
 * integer). */
static float small_value(uint32_t mag, int mbits, int bias)
{
    uint32_t E = mag >> mbits, M = mag & ((1u << mbits) - 1);
    if (E == 0)
        return ldexpf((float)M, 1 - bias - mbits);
    return ldexpf((float)(M | (1u << mbits)), (int)E - bias - mbits);
}

float cpu_fp16_to_f32(uint16_t h)
{
    float s = (h & 0x8000u) ? -1.0f : 1.0f;
    uint32_t mag = h & 0x7fffu;
    if (mag >= 0x7c00u)
        return mag == 0x7c00u ? s * INFINITY : NAN;
    return s * small_value(mag, 10, 15);
}

float cpu_e4m3_to_f32(uint8_t b)
{
    float s = (b & 0x80u) ? -1.0f : 1.0f;
    uint32_t mag = b & 0x7fu;
    if (mag == 0x7fu) /* S.1111.111: the only NaN; no inf */
        return NAN;
    return s * small_value(mag, 3, 7);
}

float cpu_e5m2_to_f32(uint8_t b)
{
    float s = (b & 0x80u) ? -1.0f : 1.0f;
    uint32_t mag = b & 0x7fu;
    if (mag >= 0x7cu)
        return mag == 0x7cu ? s * INFINITY : NAN;
    return s * small_value(mag, 2, 15);
}

/* --- float to narrow: rne by bit manipulation ------------------------------------ */

uint16_t cpu_f32_to_bf16(float f, int saturate)
{
    uint32_t u = raw_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0u;
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) == 0x7f800000u) /* an infinite input */
        return saturate ? (uint16_t)(sign | 0x7f7fu) : (uint16_t)(sign | 0x7f80u);
    /* The bf16 grid is fp32's with the low 16 bits cut, subnormals included:
     * add half an ulp minus one, plus the kept lsb (ties to even), and cut.
     * A carry out of the mantissa steps the exponent, up to inf. */
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    if ((r & 0x7fffu) == 0x7f80u && saturate)
        r = (r & 0x8000u) | 0x7f7fu;
    return (uint16_t)r;
}

uint16_t cpu_f32_to_fp16(float f, int saturate)
{
    uint32_t u = raw_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0x7e00u;
    /* |f| >= 65520 = 65504 + half an ulp (a tie to the odd 65504, so up):
     * overflow, and inf itself */
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | (saturate ? 0x7bffu : 0x7c00u));
    uint32_t e = a >> 23;
    if (e < 113) { /* below 2^-14: fp16 subnormal, quantum 2^-24 */
        if (e < 102) /* below 2^-25: at most half the smallest subnormal, not a tie -> 0 */
            return sign;
        uint32_t m = (a & 0x7fffffu) | 0x800000u; /* |f| = m * 2^(e - 150) */
        uint32_t shift = 126 - e;                 /* |f| / 2^-24 = m / 2^shift, 14 <= shift <= 24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u)))
            r++; /* may reach 0x400, the smallest normal: the right pattern */
        return (uint16_t)(sign | r);
    }
    uint32_t m = a & 0x7fffffu;
    uint32_t r = ((e - 112) << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
        r++; /* a carry steps the exponent; 0x7c00 is excluded by the test above */
    return (uint16_t)(sign | r);
}

uint32_t cpu_encode(float v, nx_fmt f, int saturate)
{
    switch (f) {
    case NX_BF16: return cpu_f32_to_bf16(v, saturate);
    case NX_FP16: return cpu_f32_to_fp16(v, saturate);
    default: {
        uint32_t u = cpu_f32_bits(v);
        if (saturate && (u & 0x7fffffffu) == 0x7f800000u)
            u = (u & 0x80000000u) | 0x7f7fffffu;
        return u;
    }
    }
}

float cpu_round_to(float v, nx_fmt f, int saturate)
{
    switch (f) {
    case NX_BF16: return cpu_bf16_to_f32(cpu_f32_to_bf16(v, saturate));
    case NX_FP16: return cpu_fp16_to_f32(cpu_f32_to_fp16(v, saturate));
    default: return saturate && isinf(v) ? copysignf(0x1.fffffep127f, v) : v;
    }
}

/* --- tensors ------------------------------------------------------------------- */

/* fp16 -> float for every pattern, built once: cpu_fp16_to_f32 is an ldexpf
 * per element, and the gemv kernels decode their fp16 activations and
 * scales on every run. */
static float fp16_tab[65536];
static pthread_once_t fp16_once = PTHREAD_ONCE_INIT;

static void fp16_tab_init(void)
{
    for (uint32_t u = 0; u < 65536; u++)
        fp16_tab[u] = cpu_fp16_to_f32((uint16_t)u);
}

void cpu_decode_range(const st_tensor *t, size_t first, size_t count, float *dst)
{
    const uint8_t *d = t->data;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the storage's little-endian patterns as they are: one copy, one
     * shift, one table lookup per element */
    switch (t->dtype) {
    case ST_F32:
        memcpy(dst, d + 4 * first, 4 * count);
        return;
    case ST_BF16:
        for (size_t i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, d + 2 * (first + i), 2);
            uint32_t u = (uint32_t)h << 16;
            memcpy(dst + i, &u, 4);
        }
        return;
    case ST_F16:
        pthread_once(&fp16_once, fp16_tab_init);
        for (size_t i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, d + 2 * (first + i), 2);
            dst[i] = fp16_tab[h];
        }
        return;
    default:
        break;
    }
#endif
    switch (t->dtype) {
    case ST_F32:
        for (size_t i = first; i < first + count; i++)
            *dst++ = cpu_bits_f32((uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 | (uint32_t)d[4 * i + 2] << 16 |
                                  (uint32_t)d[4 * i + 3] << 24);
        break;
    case ST_BF16:
        for (size_t i = first; i < first + count; i++)
            *dst++ = cpu_bf16_to_f32((uint16_t)(d[2 * i] | (d[2 * i + 1] << 8)));
        break;
    case ST_F16:
        for (size_t i = first; i < first + count; i++)
            *dst++ = cpu_fp16_to_f32((uint16_t)(d[2 * i] | (d[2 * i + 1] << 8)));
        break;
    case ST_F8_E4M3:
        for (size_t i = first; i < first + count; i++)
            *dst++ = cpu_e4m3_to_f32(d[i]);
        break;
    case ST_F8_E5M2:
        for (size_t i = first; i < first + count; i++)
            *dst++ = cpu_e5m2_to_f32(d[i]);
        break;
    default: /* refused by check_inputs (cpu_fmt_readable) */
        for (size_t i = 0; i < count; i++)
            *dst++ = NAN;
        break;
    }
}

nx_status cpu_decode(const st_tensor *t, int threads, float **out, nx_err *err)
{
    size_t n = (size_t)t->nelem;
    *out = NULL;
    if (t->dtype != ST_F32 && t->dtype != ST_BF16 && t->dtype != ST_F16 && t->dtype != ST_F8_E4M3 &&
        t->dtype != ST_F8_E5M2)
        return nx_err_set(err, NX_EUNSUPPORTED, "input tensor '%s': the cpu backend does not read dtype %s", t->name,
                          st_dtype_name(t->dtype));
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return nx_err_set(err, NX_ENOMEM, "out of memory decoding '%s' (%zu elements)", t->name, n);
    size_t chunk = 1u << 16, nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t c = 0; c < nchunks; c++) {
        size_t lo = c * chunk, cnt = n - lo < chunk ? n - lo : chunk;
        cpu_decode_range(t, lo, cnt, v + lo);
    }
    *out = v;
    return NX_OK;
}

nx_status cpu_emit(st_file *out, const char *name, nx_fmt f, int saturate, int ndim, const int64_t *shape,
                   const float *v, int threads, nx_err *err)
{
    st_dtype dt = f == NX_FP32 ? ST_F32 : f == NX_FP16 ? ST_F16 : f == NX_BF16 ? ST_BF16 : ST_DTYPE_COUNT;
    if (dt == ST_DTYPE_COUNT)
        return nx_err_set(err, NX_EUNSUPPORTED, "output '%s': the cpu backend does not write format %s", name,
                          nx_format(f)->name);
    st_tensor *t;
    nx_status st = st_add_tensor(out, name, dt, ndim, shape, &t, err);
    if (st)
        return st;
    size_t n = (size_t)t->nelem;
    uint8_t *d = t->data;
    if (dt == ST_F32) { /* safetensors is little-endian */
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; i++) {
            uint32_t u = cpu_encode(v[i], f, saturate);
            for (int k = 0; k < 4; k++)
                d[4 * i + (size_t)k] = (uint8_t)(u >> (8 * k));
        }
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; i++) {
            uint32_t u = cpu_encode(v[i], f, saturate);
            d[2 * i] = (uint8_t)(u & 0xffu);
            d[2 * i + 1] = (uint8_t)(u >> 8);
        }
    }
    return NX_OK;
}
