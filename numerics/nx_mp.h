/* nx_mp.h: MPFR primitives of the reference engine.
 *
 * Each primitive takes exact operands (doubles that are members of their
 * formats, or MPFR numbers) and returns the result correctly rounded to a
 * format of docs/numerics.md §1 in a mode of §2, with the format's exponent range,
 * gradual underflow, overflow and signed-zero rules.  The scratch state is
 * per thread (nx_mp), so the primitives are thread-safe. */
#ifndef NX_MP_H
#define NX_MP_H

#include <mpfr.h>

#include "nx_format.h"

typedef struct nx_mp {
    mpfr_t r, t1, t2, t3, big;
} nx_mp;

void nx_mp_init(nx_mp *mp);
void nx_mp_clear(nx_mp *mp);

/* Rounds the exact nonzero finite x to a multiple of 2^q in mode m, into r
 * (r's precision is set here; r must not alias x).  A zero result keeps the
 * sign of x.  This is the one rounding step everything else uses. */
void nx_mp_round_quantum(mpfr_ptr r, mpfr_srcptr x, mpfr_exp_t q, nx_mode m);

/* Rounds the exact value x to format f in mode m.  saturate: overflow gives
 * ±max finite.  Returns the result as a double (exact). */
double nx_mp_round(nx_mp *mp, mpfr_srcptr x, nx_fmt f, nx_mode m, int saturate);

/* Rounding of a double (exact value) to a format. */
double nx_mp_round_d(nx_mp *mp, double x, nx_fmt f, nx_mode m, int saturate);

/* The value an infinity takes in format f (see docs/interpretations.md). */
double nx_round_inf(int negative, nx_fmt f, int saturate);

/* The value of an overflow of sign `negative` in mode m (§2). */
double nx_round_overflow(int negative, nx_fmt f, nx_mode m, int saturate);

/* round(x + y), round(a*b + c), round(a*b) with one rounding, to f in mode m.
 * dbl_product: a*b is exact in binary64 (true unless an operand is fp64). */
double nx_mp_add(nx_mp *mp, double x, double y, nx_fmt f, nx_mode m);
double nx_mp_fma(nx_mp *mp, double a, double b, double c, nx_fmt f, nx_mode m,
                 int dbl_product);
double nx_mp_mul(nx_mp *mp, double a, double b, nx_fmt f, nx_mode m, int dbl_product);

/* MPFR rounding direction used for mode m (rna is handled separately). */
mpfr_rnd_t nx_mp_rnd(nx_mode m);

#endif
