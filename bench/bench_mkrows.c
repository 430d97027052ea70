/* bench_mkrows.c: a `parity reduce` input of a given size, for the
 * benchmarks and the byte-identity checks of reduce (scripts/bench).
 *
 *   bench_mkrows --dtype F32|BF16|F16|F64 --rows R --n N [--seed S] [--values]
 *                [--specials] [--start DTYPE] -o OUT.safetensors
 *
 * Tensors 'a' and (unless --values) 'b' of shape [R, N], optionally 'c' of
 * shape [R] (--start), in the dtype given.  Element bits come from a 64-bit
 * xorshift* stream per tensor: mostly values of magnitude 2^-8..2^8 of
 * either sign; --specials mixes in, one element in 64, subnormals, signed
 * zeros, exact negatives of the previous element, +-inf and NaNs with
 * payloads.  Exit: 0 ok, 2 usage, 3 write failure. */
#include "safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

/* The bits of one element of `bits` width (16, 32, 64), as an IEEE binary
 * format with `mant` stored significand bits. */
static uint64_t element(uint64_t *s, unsigned bits, unsigned mant, int specials, uint64_t prev)
{
    unsigned ebits = bits - 1 - mant;
    uint64_t bias = (1ull << (ebits - 1)) - 1, r = next(s), sign = (r >> 63) << (bits - 1);
    uint64_t m = (r >> 8) & ((1ull << mant) - 1);
    if (specials && (r & 63) == 0) {
        switch ((r >> 6) & 7) {
        case 0: return sign | (m ? m : 1);                              /* subnormal */
        case 1: return sign;                                            /* signed zero */
        case 2: return prev ^ (1ull << (bits - 1));                     /* cancels prev */
        case 3: return sign | (((1ull << ebits) - 1) << mant);          /* +-inf */
        case 4: return sign | (((1ull << ebits) - 1) << mant) | (m | 1ull << (mant - 1)); /* qNaN */
        case 5: return sign | (1ull << mant) | m;                       /* smallest normal binade */
        default: break;
        }
    }
    uint64_t e = bias - 8 + ((r >> 1) & 15); /* 2^-8 .. 2^7 */
    return sign | e << mant | m;
}

int main(int argc, char **argv)
{
    const char *dt = "F32", *out = NULL, *start = NULL;
    long long rows = 0, n = 0;
    uint64_t seed = 1;
    int values = 0, specials = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--values"))
            values = 1;
        else if (!strcmp(a, "--specials"))
            specials = 1;
        else if (v && !strcmp(a, "--dtype"))
            dt = v, i++;
        else if (v && !strcmp(a, "--start"))
            start = v, i++;
        else if (v && !strcmp(a, "--rows"))
            rows = atoll(v), i++;
        else if (v && !strcmp(a, "--n"))
            n = atoll(v), i++;
        else if (v && !strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 0), i++;
        else if (v && (!strcmp(a, "-o") || !strcmp(a, "--out")))
            out = v, i++;
        else {
            fprintf(stderr, "bench_mkrows: unknown or incomplete argument '%s'\n", a);
            return 2;
        }
    }
    st_dtype d, dc = ST_F32;
    if (!out || rows < 0 || n < 0 || !st_dtype_from_name(dt, &d) || (start && !st_dtype_from_name(start, &dc))) {
        fprintf(stderr, "usage: bench_mkrows --dtype F32|BF16|F16|F64 --rows R --n N [--seed S] [--values] "
                        "[--specials] [--start DTYPE] -o OUT.safetensors\n");
        return 2;
    }
    st_file f;
    st_init(&f);
    nx_err err = {0};
    int64_t shape[2] = {rows, n};
    const char *names[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++) {
        if ((k == 1 && values) || (k == 2 && !start))
            continue;
        st_dtype tdt = k == 2 ? dc : d;
        unsigned bits = st_dtype_bits(tdt), mant;
        switch (tdt) {
        case ST_F64: mant = 52; break;
        case ST_F32: mant = 23; break;
        case ST_F16: mant = 10; break;
        case ST_BF16: mant = 7; break;
        default:
            fprintf(stderr, "bench_mkrows: dtype %s: only F64, F32, F16, BF16\n", st_dtype_name(tdt));
            return 2;
        }
        st_tensor *t;
        if (st_add_tensor(&f, names[k], tdt, k == 2 ? 1 : 2, shape, &t, &err)) {
            fprintf(stderr, "bench_mkrows: %s\n", err.msg);
            return 2;
        }
        uint64_t s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1, prev = 0;
        size_t bytes = bits / 8;
        for (uint64_t i = 0; i < t->nelem; i++) {
            uint64_t e = element(&s, bits, mant, specials, prev);
            memcpy(t->data + i * bytes, &e, bytes); /* little-endian host */
            prev = e;
        }
    }
    if (st_write_atomic(out, &f, &err)) {
        fprintf(stderr, "bench_mkrows: %s\n", err.msg);
        st_free(&f);
        return 3;
    }
    st_free(&f);
    return 0;
}
