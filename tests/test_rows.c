/* test_rows.c: rows_decode's fast paths (fp32, bf16, fp16, fp8 tables)
 * give the values nx_decode gives, for every 8- and 16-bit pattern and a
 * sweep of fp32 patterns; the element order is kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"
#include "testutil.h"

static void check_all(st_dtype dt, nx_fmt f, size_t npat, uint64_t step)
{
    st_file file;
    st_init(&file);
    nx_err err;
    st_tensor *t;
    int64_t shape[1] = {(int64_t)npat};
    assert_int_equal(st_add_tensor(&file, "x", dt, 1, shape, &t, &err), NX_OK);
    for (size_t i = 0; i < npat; i++)
        st_put_bits(t, t->data, i, (uint64_t)i * step);
    double *v = malloc(npat * sizeof *v);
    assert_int_equal(rows_decode(t, v, &err), NX_OK);
    for (size_t i = 0; i < npat; i++) {
        double want = nx_decode(f, (uint64_t)i * step, NULL);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "%s pattern 0x%llx", nx_format(f)->name, (unsigned long long)(i * step));
        assert_double_bits_eq_ctx(v[i], want, ctx);
    }
    free(v);
    st_free(&file);
}

static void test_sixteen_bit(void **state)
{
    (void)state;
    check_all(ST_BF16, NX_BF16, 65536, 1);
    check_all(ST_F16, NX_FP16, 65536, 1);
}

static void test_eight_bit(void **state)
{
    (void)state;
    check_all(ST_F8_E4M3, NX_E4M3, 256, 1);
    check_all(ST_F8_E5M2, NX_E5M2, 256, 1);
    check_all(ST_F8_E8M0, NX_E8M0, 256, 1);
    check_all(ST_F4, NX_E2M1, 16, 1);
}

static void test_fp32_sweep(void **state)
{
    (void)state;
    /* 2^20 patterns spread over the whole space (every exponent, both signs) */
    check_all(ST_F32, NX_FP32, 1u << 20, 4093);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sixteen_bit), cmocka_unit_test(test_eight_bit),
                                       cmocka_unit_test(test_fp32_sweep)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
