/* test_ledger.c: the ledger's clock and time formats, the gate's
 * band, and the shard split (parity/ledger/).  Expected values are worked
 * out by hand: 2026-01-01T00:00:00Z is 20454 days (56 years, 14 of them
 * leap) after the epoch; the small preset's shapes (campaign.c) give the
 * shard costs gemm 4*24*200 = 19200, gemv_w4a16 3*20*512 = 30720,
 * paged_decode_attention 3*4*2*16*8*12*4 = 147456, rmsnorm 4*160 = 640,
 * silu_and_mul 4*96 = 384. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "ledger.h"
#include "shard.h"

static void test_parse_utc(void **state)
{
    (void)state;
    int64_t t;
    assert_int_equal(ledger_parse_utc("1970-01-01T00:00:00Z", &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(ledger_parse_utc("2026-01-01T00:00:00Z", &t), 0);
    assert_int_equal(t, 20454LL * 86400);
    assert_int_equal(ledger_parse_utc("2026-01-02T06:00:00Z", &t), 0);
    assert_int_equal(t, 20454LL * 86400 + 108000);
    /* a leap day: 2024-01-01 is 19723 days after the epoch, then 31 + 28 */
    assert_int_equal(ledger_parse_utc("2024-02-29T12:00:00Z", &t), 0);
    assert_int_equal(t, (19723LL + 59) * 86400 + 43200);
    assert_int_equal(ledger_parse_utc("2026-03-01", &t), 0);
    assert_int_equal(t, (20454LL + 31 + 28) * 86400);
    assert_int_equal(ledger_parse_utc("2026-13-01T00:00:00Z", &t), -1);
    assert_int_equal(ledger_parse_utc("2026-01-01T00:00:00", &t), -1);
    assert_int_equal(ledger_parse_utc("yesterday", &t), -1);
    assert_int_equal(ledger_parse_utc("2026-01-01T00:00:00Zx", &t), -1);
}

static void test_format(void **state)
{
    (void)state;
    char b[48];
    ledger_format_utc(20454LL * 86400 + 108000 + 61, b, sizeof b);
    assert_string_equal(b, "2026-01-02T06:01:01Z");
    ledger_format_duration(108000, b, sizeof b);
    assert_string_equal(b, "1d 06:00:00");
    ledger_format_duration(59, b, sizeof b);
    assert_string_equal(b, "00:00:59");
    ledger_format_duration(0, b, sizeof b);
    assert_string_equal(b, "00:00:00");
    ledger_format_duration(3 * 86400 + 3661, b, sizeof b);
    assert_string_equal(b, "3d 01:01:01");
}

static void test_shard(void **state)
{
    (void)state;
    nx_err e;
    int i, n;
    assert_int_equal(shard_parse("2/3", &i, &n, &e), NX_OK);
    assert_int_equal(i, 2);
    assert_int_equal(n, 3);
    const char *bad[] = {"0/3", "4/3", "1/0", "a/b", "1/3x", "-1/3", "", "1"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        assert_int_not_equal(shard_parse(bad[k], &i, &n, &e), NX_OK);
    assert_true(shard_cost("small", "gemm.splitk") == 19200.0);
    assert_true(shard_cost("small", "paged_decode_attention.x") == 147456.0);
    assert_true(shard_cost("small", "nosuch.x") == 1.0);

    /* two shards: attention (147456) alone, everything else (70144) in the
     * other; the same split whatever the order of the ids */
    char *ids[] = {"rmsnorm.a", "gemm.a", "gemm.b", "paged_decode_attention.a", "gemv_w4a16.a", "silu_and_mul.a"};
    char *rev[] = {"silu_and_mul.a", "gemv_w4a16.a", "paged_decode_attention.a", "gemm.b", "gemm.a", "rmsnorm.a"};
    const unsigned char want1[] = {0, 0, 0, 1, 0, 0}, want2[] = {1, 1, 1, 0, 1, 1};
    unsigned char k1[6], k2[6], r1[6];
    memset(k1, 1, 6);
    memset(k2, 1, 6);
    memset(r1, 1, 6);
    assert_int_equal(shard_select(ids, 6, "small", 1, 2, k1, &e), NX_OK);
    assert_int_equal(shard_select(ids, 6, "small", 2, 2, k2, &e), NX_OK);
    assert_int_equal(shard_select(rev, 6, "small", 1, 2, r1, &e), NX_OK);
    assert_memory_equal(k1, want1, 6);
    assert_memory_equal(k2, want2, 6);
    for (int k = 0; k < 6; k++)
        assert_int_equal(r1[k], want1[5 - k]);
    /* a point not a candidate (another family) stays out of every shard */
    unsigned char c[6] = {1, 1, 1, 0, 1, 1};
    assert_int_equal(shard_select(ids, 6, "small", 1, 2, c, &e), NX_OK);
    assert_int_equal(c[3], 0);
    /* without attention: gemv (30720) to shard 1; gemm.a and gemm.b to
     * shard 2 (19200, then 38400); rmsnorm to shard 1 (31360 < 38400), and
     * silu too (31744) */
    const unsigned char want_c[] = {1, 0, 0, 0, 1, 1};
    assert_memory_equal(c, want_c, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_utc),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_shard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
