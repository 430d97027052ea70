/* test_sha256.c: SHA-256 (numerics/nx_sha256.h) against known answers.
 *
 * The digests of "", "abc" and the 448-bit message are the examples of
 * FIPS 180-4 (NIST's published values); those of runs of 'a' at the padding
 * boundaries (55, 56, 63, 64, 119, 120 bytes: one or two final blocks) and
 * of 1000 bytes were computed with coreutils' sha256sum, an independent
 * implementation.  Each message is also fed in pieces of every size from 1
 * to 70 bytes: the digest may not depend on how updates are cut. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nx_sha256.h"

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void digest_in_pieces(const char *msg, size_t len, size_t piece, char out[65])
{
    nx_sha256 s;
    nx_sha256_init(&s);
    for (size_t at = 0; at < len; at += piece)
        nx_sha256_update(&s, msg + at, len - at < piece ? len - at : piece);
    uint8_t d[32];
    nx_sha256_final(&s, d);
    hex(d, out);
}

static void check(const char *msg, size_t len, const char *want)
{
    char got[65];
    digest_in_pieces(msg, len, len ? len : 1, got);
    assert_string_equal(got, want);
    for (size_t piece = 1; piece <= 70; piece++) {
        digest_in_pieces(msg, len, piece, got);
        if (strcmp(got, want) != 0)
            fail_msg("%zu bytes fed %zu at a time: %s, want %s", len, piece, got, want);
    }
}

static void test_fips_examples(void **state)
{
    (void)state;
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    static char a[1000];
    memset(a, 'a', sizeof a);
    static const struct {
        size_t len;
        const char *want;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(a, cases[i].len, cases[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_examples),
        cmocka_unit_test(test_padding_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
