/* nx_format.c: the format table of docs/numerics.md §1 and bit-pattern decode
 * and encode.  All arithmetic here is exact: ldexp/frexp on doubles whose
 * significands fit in 53 bits. */
#include "nx_format.h"

#include <math.h>
#include <string.h>

/* name, storage, exp, man, p, bias, emin, inf, nan, signed, zero, max finite,
 * canonical NaN, safetensors dtype */
static const nx_format_info formats[NX_NFORMATS] = {
    [NX_FP64] = {"fp64", 64, 11, 52, 53, 1023, -1022, 1, NX_NAN_IEEE, 1, 1,
                 0x1.fffffffffffffp+1023, 0x7ff8000000000000ull, "F64"},
    [NX_FP32] = {"fp32", 32, 8, 23, 24, 127, -126, 1, NX_NAN_IEEE, 1, 1,
                 0x1.fffffep+127, 0x7fc00000u, "F32"},
    [NX_TF32] = {"tf32", 32, 8, 23, 11, 127, -126, 1, NX_NAN_IEEE, 1, 1,
                 0x1.ffcp+127, 0x7fc00000u, "F32"},
    [NX_FP16] = {"fp16", 16, 5, 10, 11, 15, -14, 1, NX_NAN_IEEE, 1, 1,
                 65504.0, 0x7e00u, "F16"},
    [NX_BF16] = {"bf16", 16, 8, 7, 8, 127, -126, 1, NX_NAN_IEEE, 1, 1,
                 0x1.fep+127, 0x7fc0u, "BF16"},
    [NX_E5M2] = {"e5m2", 8, 5, 2, 3, 15, -14, 1, NX_NAN_IEEE, 1, 1,
                 57344.0, 0x7eu, "F8_E5M2"},
    [NX_E4M3] = {"e4m3", 8, 4, 3, 4, 7, -6, 0, NX_NAN_ALLONES, 1, 1,
                 448.0, 0x7fu, "F8_E4M3"},
    [NX_E3M2] = {"e3m2", 6, 3, 2, 3, 3, -2, 0, NX_NAN_NONE, 1, 1,
                 28.0, 0, "F6_E3M2"},
    [NX_E2M3] = {"e2m3", 6, 2, 3, 4, 1, 0, 0, NX_NAN_NONE, 1, 1,
                 7.5, 0, "F6_E2M3"},
    [NX_E2M1] = {"e2m1", 4, 2, 1, 2, 1, 0, 0, NX_NAN_NONE, 1, 1,
                 6.0, 0, "F4"},
    [NX_E8M0] = {"e8m0", 8, 8, 0, 1, 127, -127, 0, NX_NAN_ALLONES, 0, 0,
                 0x1p+127, 0xffu, "F8_E8M0"},
    [NX_E8M13] = {"e8m13", 32, 8, 23, 14, 127, -126, 1, NX_NAN_IEEE, 1, 1,
                  0x1.fff8p+127, 0x7fc00000u, "F32"},
};

static const char *const mode_names[NX_NMODES] = {"rne", "rna", "rz", "ru", "rd"};

const nx_format_info *nx_format(nx_fmt f)
{
    return (unsigned)f < NX_NFORMATS ? &formats[f] : NULL;
}

int nx_fmt_from_name(const char *name)
{
    for (int i = 0; i < NX_NFORMATS; i++)
        if (strcmp(formats[i].name, name) == 0)
            return i;
    return -1;
}

int nx_mode_from_name(const char *name)
{
    for (int i = 0; i < NX_NMODES; i++)
        if (strcmp(mode_names[i], name) == 0)
            return i;
    return -1;
}

const char *nx_mode_name(nx_mode m)
{
    return (unsigned)m < NX_NMODES ? mode_names[m] : "?";
}

double nx_fmt_min_normal(nx_fmt f)
{
    return ldexp(1.0, formats[f].emin);
}

/* Low mantissa bits that must be zero in the fp32 layout (tf32, e8m13). */
static int dropped_bits(const nx_format_info *fi)
{
    return fi->man_bits - (fi->p - 1);
}

double nx_decode(nx_fmt f, uint64_t bits, int *valid)
{
    const nx_format_info *fi = &formats[f];
    if (valid)
        *valid = 1;
    if (f == NX_FP64) {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    if (f == NX_E8M0) {
        bits &= 0xff;
        return bits == 0xff ? NAN : ldexp(1.0, (int)bits - 127);
    }
    uint64_t mmask = (1ull << fi->man_bits) - 1;
    uint64_t emask = (1ull << fi->exp_bits) - 1;
    int neg = (int)((bits >> (fi->storage_bits - 1)) & 1);
    uint64_t e = (bits >> fi->man_bits) & emask;
    uint64_t m = bits & mmask;
    if (valid && (m & ((1ull << dropped_bits(fi)) - 1)) != 0)
        *valid = 0;
    double v;
    if (fi->nan == NX_NAN_IEEE && e == emask) {
        v = m == 0 ? INFINITY : NAN;
        if (isnan(v))
            return NAN;
    } else if (fi->nan == NX_NAN_ALLONES && e == emask && m == mmask) {
        return NAN;
    } else if (e == 0) {
        v = ldexp((double)m, fi->emin - fi->man_bits);
    } else {
        v = ldexp((double)(m | (1ull << fi->man_bits)), (int)e - fi->bias - fi->man_bits);
    }
    return neg ? -v : v;
}

/* Splits a finite nonzero member into (exponent field, mantissa field);
 * returns 0 if v is not representable. */
static int fields_of(const nx_format_info *fi, double av, uint64_t *efield, uint64_t *mfield)
{
    int x;
    frexp(av, &x);
    int lg = x - 1; /* floor(log2 av) */
    double m;
    uint64_t e;
    if (lg >= fi->emin) {
        e = (uint64_t)(lg + fi->bias);
        m = ldexp(av, fi->man_bits - lg) - ldexp(1.0, fi->man_bits);
    } else {
        e = 0;
        m = ldexp(av, fi->man_bits - fi->emin);
    }
    if (m != floor(m) || m < 0 || m >= ldexp(1.0, fi->man_bits))
        return 0;
    if (e >= (1ull << fi->exp_bits))
        return 0;
    uint64_t mi = (uint64_t)m;
    if ((mi & ((1ull << dropped_bits(fi)) - 1)) != 0)
        return 0;
    *efield = e;
    *mfield = mi;
    return 1;
}

nx_status nx_encode(nx_fmt f, double v, uint64_t *bits, nx_err *err)
{
    const nx_format_info *fi = &formats[f];
    if (isnan(v)) {
        if (fi->nan == NX_NAN_NONE)
            return nx_err_set(err, NX_EINVAL, "NaN has no encoding in %s", fi->name);
        *bits = fi->canonical_nan;
        return NX_OK;
    }
    if (f == NX_FP64) {
        memcpy(bits, &v, sizeof v);
        return NX_OK;
    }
    uint64_t sign = signbit(v) ? 1ull << (fi->storage_bits - 1) : 0;
    double av = fabs(v);
    if (f == NX_E8M0) {
        int x;
        double fr = frexp(av, &x);
        if (v <= 0 || isinf(v) || fr != 0.5 || x - 1 < -127 || x - 1 > 127)
            return nx_err_set(err, NX_EINVAL, "%a is not a value of e8m0", v);
        *bits = (uint64_t)(x - 1 + 127);
        return NX_OK;
    }
    if (isinf(v)) {
        if (!fi->has_inf)
            return nx_err_set(err, NX_EINVAL, "infinity has no encoding in %s", fi->name);
        *bits = sign | (((1ull << fi->exp_bits) - 1) << fi->man_bits);
        return NX_OK;
    }
    if (av == 0) {
        *bits = sign;
        return NX_OK;
    }
    uint64_t e, m;
    if (av > fi->max_finite || !fields_of(fi, av, &e, &m))
        return nx_err_set(err, NX_EINVAL, "%a is not a value of %s", v, fi->name);
    *bits = sign | (e << fi->man_bits) | m;
    return NX_OK;
}

int nx_is_member(nx_fmt f, double v)
{
    uint64_t b;
    if (isnan(v))
        return formats[f].nan != NX_NAN_NONE;
    return nx_encode(f, v, &b, NULL) == NX_OK;
}

int nx_fmt_exp(double x, nx_fmt f)
{
    int e = ilogb(x);
    int emin = nx_format(f)->emin;
    return e > emin ? e : emin;
}
