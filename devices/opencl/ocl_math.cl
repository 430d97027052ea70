/* ocl_math.cl: exp and rsqrt of an fp32 argument correctly rounded to fp32
 * (rne), as the points declare them (`cr`), in binary64 (cl_khr_fp64).
 * No contraction (the program's pragma); every fused step is an fma().
 *
 * rsqrt_cr: y = 1/sqrt(x) in binary64 is within a few 2^-53 of the exact
 * value, so f = fp32(y) is the correctly rounded result or one of its two
 * neighbours.  The midpoint m between f and a neighbour is a 25-bit
 * number, so m*m is exact in binary64 (50 bits), and the sign of
 * fma(m*m, x, -1), one rounding of the exact m^2 x - 1, is the sign of
 * m^2 x - 1 itself: 1/sqrt(x) > m exactly when it is negative.  Testing
 * both midpoints decides every argument exactly (a tie cannot occur: m^2 x
 * = 1 needs m = 2^j and x = 2^-2j, where y is exact).
 *
 * exp_cr: the fast path is the device's binary64 exp (OpenCL: within 3
 * ulp, PoCL's is SLEEF's, within 1), accepted when both ends of y(1 +-
 * 2^-44) round to the same fp32 number (rounding is monotonic, so the
 * exact value does too; subnormal results round onto the subnormal grid
 * in the conversion).  Otherwise (the exact value within 2^-44 relative of
 * an fp32 rounding boundary, about one argument in 2^19) exp_dd evaluates
 * e^x in double-double (Cody-Waite reduction by ln 2 in three parts, a
 * Taylor polynomial of degree 24 on |r| <= 0.347; relative error below
 * 2^-96) and dd_round decides exactly which side of the nearest midpoint
 * that value lies.  It would be wrong only for an argument whose e^x lies
 * within 2^-96 relative of a midpoint; tests/test_opencl_backend.c holds
 * it against the C library's binary64 exp over every fp32 argument in
 * [-104, 0] whose e^x it decides, and against MPFR where that does not. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

static float ocl_rsqrt_cr(float x)
{
    if (isnan(x) || x < 0.0f)
        return NAN;
    if (x == 0.0f)
        return copysign(INFINITY, x);
    if (isinf(x))
        return 0.0f;
    double xd = (double)x;
    float f = (float)(1.0 / sqrt(xd)); /* in [2^-64, 2^75]: f and its neighbours are normal */
    for (int pass = 0; pass < 2; pass++) {
        uint u = as_uint(f);
        double fd = (double)f;
        double mu = (fd + (double)as_float(u + 1u)) * 0.5; /* exact */
        if (fma(mu * mu, xd, -1.0) < 0.0) {
            f = as_float(u + 1u);
            continue;
        }
        double md = (fd + (double)as_float(u - 1u)) * 0.5;
        if (fma(md * md, xd, -1.0) > 0.0) {
            f = as_float(u - 1u);
            continue;
        }
        break;
    }
    return f;
}

/* --- double-double arithmetic (hi, lo): |lo| <= ulp(hi)/2 -------------------------- */

static double2 two_sum(double a, double b)
{
    double s = a + b, bb = s - a;
    return (double2)(s, (a - (s - bb)) + (b - bb));
}

static double2 fast_two_sum(double a, double b) /* |a| >= |b| */
{
    double s = a + b;
    return (double2)(s, b - (s - a));
}

static double2 dd_add(double2 x, double2 y)
{
    double2 s = two_sum(x.x, y.x);
    return fast_two_sum(s.x, s.y + (x.y + y.y));
}

static double2 dd_mul(double2 x, double2 y)
{
    double p = x.x * y.x, e = fma(x.x, y.x, -p); /* p + e = x.x y.x exactly */
    e = e + (x.x * y.y + x.y * y.x);
    return fast_two_sum(p, e);
}

static double2 dd_div_d(double2 x, double d)
{
    double q = x.x / d;
    double p = q * d, e = fma(q, d, -p);
    double r = (((x.x - p) - e) + x.y) / d;
    return fast_two_sum(q, r);
}

/* e^x for x in [-104, 89], as (hi, lo). */
static double2 exp_dd(float x)
{
    const double L1 = 0x1.62e42fefa3900p-1;  /* ln 2 to 45 bits: k L1 is exact for |k| < 2^8 */
    const double L2 = 0x1.de6af278ece60p-46;
    const double L3 = 0x1.f97b57a079a19p-103; /* L1 + L2 + L3 = ln 2 within 2^-157 */
    double xd = (double)x, kd = rint(xd * 0x1.71547652b82fep+0);
    double r1 = xd - kd * L1; /* exact: both multiples of 2^-45, |r1| < 1 */
    double p = kd * L2, pe = fma(kd, L2, -p);
    double2 r = two_sum(r1, -p);
    r = fast_two_sum(r.x, r.y - pe - kd * L3);
    /* Horner on the Taylor series: t = 1 + r t / n for n = 24, ..., 1 */
    double2 t = (double2)(1.0, 0.0), one = (double2)(1.0, 0.0);
    for (int n = 24; n >= 1; n--)
        t = dd_add(one, dd_div_d(dd_mul(r, t), (double)n));
    int k = (int)kd;
    return (double2)(ldexp(t.x, k), ldexp(t.y, k)); /* exact: 2^k t is a normal double */
}

/* The fp32 rounding (rne) of the positive value h + l, exactly. */
static float dd_round(double h, double l)
{
    float f = (float)h;
    if (isinf(f))
        f = as_float(0x7f7fffffu);
    uint u = as_uint(f);
    double fd = (double)f;
    double up = u == 0x7f7fffffu ? 0x1p128 : (double)as_float(u + 1u);
    double c = (h - (fd + up) * 0.5) + l; /* its sign is that of h + l - midpoint */
    if (c > 0.0 || (c == 0.0 && (u & 1u)))
        return u == 0x7f7fffffu ? INFINITY : as_float(u + 1u);
    if (u > 0u) {
        double dn = (double)as_float(u - 1u);
        c = (h - (fd + dn) * 0.5) + l;
        if (c < 0.0 || (c == 0.0 && (u & 1u)))
            return as_float(u - 1u);
    }
    return f;
}

static float ocl_exp_cr(float x)
{
    if (isnan(x))
        return x;
    if (x == 0.0f)
        return 1.0f;
    if (x > 89.0f)
        return INFINITY; /* e^89 > 2^128 (also x = +inf) */
    if (x < -104.0f)
        return 0.0f; /* e^-104 < 2^-150, half the least subnormal (also -inf) */
    double y = exp((double)x), d = fabs(y) * 0x1p-44;
    float lo = (float)(y - d), hi = (float)(y + d);
#ifndef OCL_EXP_FORCE_DD /* tests/test_opencl_math.c: the double-double path for every argument */
    if (as_uint(lo) == as_uint(hi))
        return lo;
#endif
    double2 v = exp_dd(x);
    return dd_round(v.x, v.y);
}
