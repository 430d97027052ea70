/* test_rows_encode.c: rows_encode (traces/rows.c), whose fp32, bf16 and fp16
 * tensors take a fast path, held to nx_encode (numerics/nx_format.c, the
 * ldexp-and-floor encoding that test_format checks against §1 by hand):
 * every bf16 and fp16 pattern, chosen and random fp32 patterns, the
 * non-members around each format's edges (refused with the element's index),
 * NaN (the canonical pattern). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_format.h"
#include "rows.h"
#include "safetensors.h"
#include "testutil.h"

/* Encodes v[0..n) into a 1-D tensor of dtype dt through rows_encode, and
 * each element alone through nx_encode; they must agree on every pattern,
 * and on which element is refused first. */
static void agree(st_dtype dt, nx_fmt f, const double *v, size_t n)
{
    st_file file;
    st_init(&file);
    st_tensor *t;
    nx_err err = {0};
    int64_t shape[1] = {(int64_t)n};
    assert_int_equal(st_add_tensor(&file, "x", dt, 1, shape, &t, &err), NX_OK);
    nx_status st = rows_encode(f, v, n, t, t->data, &err);
    size_t first_bad = n;
    for (size_t i = 0; i < n && first_bad == n; i++) {
        uint64_t want;
        if (nx_encode(f, v[i], &want, NULL) != NX_OK) {
            first_bad = i;
            break;
        }
        uint64_t got = st_get_bits(t, t->data, i);
        if (got != want) {
            print_error("%s: element %zu = %a: rows_encode 0x%llx, nx_encode 0x%llx\n", nx_format(f)->name, i, v[i],
                        (unsigned long long)got, (unsigned long long)want);
            fail();
        }
    }
    if (first_bad < n) {
        assert_int_equal(st, NX_EINVAL);
        char want[64];
        snprintf(want, sizeof want, "element %zu of 'x': ", first_bad);
        if (strncmp(err.msg, want, strlen(want)) != 0) {
            print_error("%s: refused with \"%s\", want the prefix \"%s\"\n", nx_format(f)->name, err.msg, want);
            fail();
        }
    } else {
        assert_int_equal(st, NX_OK);
    }
    st_free(&file);
}

/* Every pattern of a 16-bit format, decoded and encoded again. */
static void all16(st_dtype dt, nx_fmt f)
{
    double *v = malloc(65536 * sizeof *v);
    assert_non_null(v);
    for (uint32_t b = 0; b < 65536; b++)
        v[b] = nx_decode(f, b, NULL);
    agree(dt, f, v, 65536);
    free(v);
}

static void test_every_16bit_pattern(void **state)
{
    (void)state;
    all16(ST_BF16, NX_BF16);
    all16(ST_F16, NX_FP16);
}

static void test_fp32_patterns(void **state)
{
    (void)state;
    enum { N = 1 << 20 };
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < N; i++) {
        uint32_t u = (uint32_t)tu_rand64(&rng);
        if (i % 4 == 1)
            u &= 0x807fffffu; /* zeros and subnormals */
        else if (i % 4 == 2)
            u |= 0x7f000000u; /* near the top */
        if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
            u &= 0xff800000u; /* NaNs below, on their own */
        float x;
        memcpy(&x, &u, 4);
        v[i] = x;
    }
    agree(ST_F32, NX_FP32, v, N);
    free(v);
}

/* Values that are not members, each refused at its own index after members
 * encoded by the fast path. */
static void refused(st_dtype dt, nx_fmt f, double bad)
{
    double v[5] = {1.0, -0.0, 0x1p-3, bad, 2.0};
    agree(dt, f, v, 5);
}

static void test_non_members(void **state)
{
    (void)state;
    /* fp16: 65520 (above the max 65504), 2^-25 (half the least subnormal),
     * 3·2^-25, 1 + 2^-11, 2^16, a subnormal with a bit below 2^-24 */
    const double h[] = {65520, 0x1p-25, 0x3p-25, 1 + 0x1p-11, 0x1p16, 0x1.8p-24, 0x1p-30};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        refused(ST_F16, NX_FP16, h[i]);
    /* bf16: 1 + 2^-8, the fp32 max, 2^-134 */
    const double b[] = {1 + 0x1p-8, 0x1.fffffep127, 0x1p-134, 0x1.0002p0};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        refused(ST_BF16, NX_BF16, b[i]);
    /* fp32: doubles that are not floats */
    const double s[] = {1 + 0x1p-30, 0x1p-150, 0x1p128, 0.1};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        refused(ST_F32, NX_FP32, s[i]);
    /* members at the edges are encoded */
    const double ok16[] = {65504, -65504, 0x1p-24, -0x1p-24, 0x1.ff8p-15, 0x1p-14, INFINITY, -INFINITY, NAN};
    agree(ST_F16, NX_FP16, ok16, sizeof ok16 / sizeof ok16[0]);
    const double okb[] = {0x1.fep127, 0x1p-133, -0x1p-126, INFINITY, NAN, -0.0};
    agree(ST_BF16, NX_BF16, okb, sizeof okb / sizeof okb[0]);
    const double ok32[] = {0x1.fffffep127, 0x1p-149, -0x1p-126, INFINITY, -INFINITY, NAN, -0.0};
    agree(ST_F32, NX_FP32, ok32, sizeof ok32 / sizeof ok32[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_16bit_pattern),
        cmocka_unit_test(test_fp32_patterns),
        cmocka_unit_test(test_non_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
