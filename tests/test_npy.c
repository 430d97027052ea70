/* test_npy.c: the .npy reader (traces/npy.h).
 *
 * Every file is crafted here byte by byte: the magic, the version, the
 * header length field and the header text written out as numpy's format
 * description says (dict, space padding, '\n', data aligned to 64), next to
 * a valid control; each rejection checks the code, that the message names
 * the file, and the byte offset computed here from where the fault was
 * put. */
#define _XOPEN_SOURCE 700

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmpdir.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

#define PATH_CAP 600
#define FILE_CAP 4096

static char g_dir[256];

static void tpath(char out[PATH_CAP], const char *name)
{
    tu_path(out, PATH_CAP, g_dir, name);
}


/* ---- helpers ------------------------------------------------------------ */

/* Where the header text begins: after magic (6), version (2) and the
 * length field (2 bytes in 1.0, 4 in 2.0 and 3.0). */
static size_t hdr_start(int major)
{
    return major == 1 ? 10 : 12;
}

/* The file: magic, major.minor, the length field holding hl_field, the
 * header bytes, the data.  Returns the size. */
static size_t build_raw(uint8_t out[FILE_CAP], int major, int minor,
                        uint64_t hl_field, const char *hdr, size_t hdr_len,
                        const uint8_t *data, size_t ndata)
{
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    size_t n = 0;
    memcpy(out, magic, 6);
    n = 6;
    out[n++] = (uint8_t)major;
    out[n++] = (uint8_t)minor;
    size_t lb = major == 1 ? 2 : 4;
    for (size_t k = 0; k < lb; k++)
        out[n++] = (uint8_t)(hl_field >> (8 * k));
    assert_true(n + hdr_len + ndata <= FILE_CAP);
    memcpy(out + n, hdr, hdr_len);
    n += hdr_len;
    if (ndata)
        memcpy(out + n, data, ndata);
    return n + ndata;
}

/* The header as numpy writes it: the dict, spaces, '\n', so that the data
 * begins at a multiple of 64.  Returns its length. */
static size_t std_header(char out[FILE_CAP], int major, const char *dict)
{
    size_t pre = hdr_start(major), n = strlen(dict);
    size_t pad = (64 - (pre + n + 1) % 64) % 64;
    memcpy(out, dict, n);
    memset(out + n, ' ', pad);
    out[n + pad] = '\n';
    return n + pad + 1;
}

/* Writes a standard file named name; returns the data offset. */
static size_t write_npy(char path[PATH_CAP], const char *name, int major,
                        const char *dict, const uint8_t *data, size_t ndata)
{
    char hdr[FILE_CAP];
    uint8_t file[FILE_CAP];
    size_t hl = std_header(hdr, major, dict);
    size_t n = build_raw(file, major, 0, hl, hdr, hl, data, ndata);
    tpath(path, name);
    tu_write_bytes(path, file, n);
    return hdr_start(major) + hl;
}

/* The dict numpy writes for descr and shape. */
static const char *dict_of(char buf[256], const char *descr,
                           const char *shape)
{
    snprintf(buf, 256, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
             descr, shape);
    return buf;
}

/* npy_read must fail with code; the message must name the file and hold
 * every needle (NULL-terminated). */
static void check_reject(const char *path, const char *hint, nx_status code,
                         ...)
{
    npy_array a;
    nx_err e = {0};
    nx_status rc = npy_read(path, hint, &a, &e);
    if (rc != code)
        fail_msg("%s: npy_read gave %d (%s), want %d; message: %s", path,
                 (int)rc, nx_status_name(rc), (int)code, e.msg);
    if (!strstr(e.msg, path))
        fail_msg("message does not name the file %s: %s", path, e.msg);
    assert_null(a.buf);
    assert_null(a.t.name);
    va_list ap;
    va_start(ap, code);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL)
        if (!strstr(e.msg, needle))
            fail_msg("message lacks \"%s\": %s", needle, e.msg);
    va_end(ap);
}

static void read_ok(const char *path, const char *hint, npy_array *a)
{
    nx_err e = {0};
    if (npy_read(path, hint, a, &e) != NX_OK)
        fail_msg("%s: rejected a valid file: %s", path, e.msg);
}

/* "byte N" for messages. */
static const char *at(char buf[32], size_t off)
{
    snprintf(buf, 32, "byte %zu:", off);
    return buf;
}

static int group_setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(g_dir, sizeof g_dir, "test_npy");
}

static int group_teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(g_dir);
}

/* 1.0, -2.0, 0.5, -0.0, 0x1p-149, inf as fp32 little-endian bytes. */
static const uint8_t f32_data[24] = {
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f,
    0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x7f,
};

/* ---- versions ----------------------------------------------------------- */

static void test_versions(void **state)
{
    (void)state;
    static const uint32_t want[6] = {0x3f800000, 0xc0000000, 0x3f000000,
                                     0x80000000, 0x00000001, 0x7f800000};
    for (int major = 1; major <= 3; major++) {
        char p[PATH_CAP], name[32], d[256];
        snprintf(name, sizeof name, "v%d.npy", major);
        size_t off = write_npy(p, name, major, dict_of(d, "<f4", "(2, 3)"),
                               f32_data, sizeof f32_data);
        assert_int_equal(off % 64, 0); /* numpy's alignment */
        npy_array a;
        read_ok(p, NULL, &a);
        assert_int_equal(a.major, major);
        assert_int_equal(a.minor, 0);
        assert_int_equal(a.data_offset, off);
        assert_string_equal(a.t.name, major == 1 ? "v1" : major == 2 ? "v2"
                                                                     : "v3");
        assert_int_equal(a.t.dtype, ST_F32);
        assert_int_equal(a.t.ndim, 2);
        assert_int_equal(a.t.shape[0], 2);
        assert_int_equal(a.t.shape[1], 3);
        assert_int_equal(a.t.nelem, 6);
        assert_int_equal(a.t.nbytes, 24);
        assert_false(a.t.owns_data);
        assert_ptr_equal(a.t.data, a.buf + off);
        assert_int_equal(a.buf_len, off + 24);
        for (size_t i = 0; i < 6; i++)
            assert_int_equal(st_get_bits(&a.t, a.t.data, i), want[i]);
        npy_free(&a);
        npy_free(&a);
    }
    /* A longer header: 2.0 with a 4-byte length above 65535. */
    {
        char dict[70000], d[256];
        dict_of(d, "<f4", "(2, 3)");
        size_t n = strlen(d);
        memcpy(dict, d, n);
        memset(dict + n, ' ', 66000);
        dict[n + 66000] = '\n';
        size_t hl = n + 66001;
        uint8_t *file = malloc(12 + hl + 24);
        assert_non_null(file);
        memcpy(file, "\x93NUMPY\x02\x00", 8);
        for (int k = 0; k < 4; k++)
            file[8 + k] = (uint8_t)(hl >> (8 * k));
        memcpy(file + 12, dict, hl);
        memcpy(file + 12 + hl, f32_data, 24);
        npy_array a;
        nx_err e;
        if (npy_parse("mem/big.npy", file, 12 + hl + 24, NULL, &a, &e))
            fail_msg("%s", e.msg);
        assert_int_equal(a.data_offset, 12 + hl);
        assert_string_equal(a.t.name, "big");
        assert_null(a.buf); /* borrowed */
        assert_ptr_equal(a.t.data, file + 12 + hl);
        npy_free(&a);
        free(file);
    }
    /* Double quotes, no trailing comma, keys in another order, no space. */
    char p[PATH_CAP];
    write_npy(p, "dq.npy", 1,
              "{\"shape\":(6,),\"descr\":\"<f4\",\"fortran_order\":False}",
              f32_data, 24);
    npy_array a;
    read_ok(p, NULL, &a);
    assert_int_equal(a.t.ndim, 1);
    assert_int_equal(a.t.shape[0], 6);
    npy_free(&a);
    /* A name without .npy keeps its whole base name. */
    write_npy(p, "raw_output", 1, "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (6,)}", f32_data, 24);
    read_ok(p, NULL, &a);
    assert_string_equal(a.t.name, "raw_output");
    npy_free(&a);
}

/* ---- dtypes --------------------------------------------------------------- */

typedef struct dt_case {
    const char *descr, *hint;
    st_dtype want;
    unsigned bytes;
} dt_case;

static void test_every_dtype(void **state)
{
    (void)state;
    static const dt_case cases[] = {
        {"<f2", NULL, ST_F16, 2},
        {"<f4", NULL, ST_F32, 4},
        {"<f8", NULL, ST_F64, 8},
        {"bfloat16", NULL, ST_BF16, 2},
        {"float8_e4m3fn", NULL, ST_F8_E4M3, 1},
        {"float8_e5m2", NULL, ST_F8_E5M2, 1},
        {"float8_e8m0fnu", NULL, ST_F8_E8M0, 1},
        {"|i1", NULL, ST_I8, 1},
        {"<i2", NULL, ST_I16, 2},
        {"<i4", NULL, ST_I32, 4},
        {"<i8", NULL, ST_I64, 8},
        {"|u1", NULL, ST_U8, 1},
        {"<u2", NULL, ST_U16, 2},
        {"<u4", NULL, ST_U32, 4},
        {"<u8", NULL, ST_U64, 8},
        {"|b1", NULL, ST_BOOL, 1},
        /* raw bits with a hint */
        {"<u2", "bf16", ST_BF16, 2},
        {"<u2", "fp16", ST_F16, 2},
        {"<u2", "BF16", ST_BF16, 2},
        {"<u2", "U16", ST_U16, 2},
        {"|u1", "e4m3", ST_F8_E4M3, 1},
        {"|u1", "e5m2", ST_F8_E5M2, 1},
        {"|u1", "F8_E8M0", ST_F8_E8M0, 1},
        {"<V2", "bf16", ST_BF16, 2},
        {"|V2", "fp16", ST_F16, 2},
        {"|V1", "e4m3", ST_F8_E4M3, 1},
        /* a hint that agrees */
        {"<f4", "fp32", ST_F32, 4},
        {"<f4", "tf32", ST_F32, 4},
        {"<f2", "F16", ST_F16, 2},
        {"bfloat16", "bf16", ST_BF16, 2},
        {"float8_e4m3fn", "e4m3", ST_F8_E4M3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const dt_case *c = &cases[i];
        uint8_t data[3 * 8];
        for (size_t k = 0; k < sizeof data; k++)
            data[k] = (uint8_t)(0x11 * (k + 1) + i);
        char p[PATH_CAP], name[32], d[256];
        snprintf(name, sizeof name, "dt%zu.npy", i);
        write_npy(p, name, 1, dict_of(d, c->descr, "(3,)"), data,
                  3 * c->bytes);
        npy_array a;
        nx_err e = {0};
        if (npy_read(p, c->hint, &a, &e) != NX_OK)
            fail_msg("descr %s hint %s: %s", c->descr,
                     c->hint ? c->hint : "-", e.msg);
        if (a.t.dtype != c->want)
            fail_msg("descr %s hint %s: %s, want %s", c->descr,
                     c->hint ? c->hint : "-", st_dtype_name(a.t.dtype),
                     st_dtype_name(c->want));
        assert_int_equal(a.t.nelem, 3);
        assert_int_equal(a.t.nbytes, 3 * c->bytes);
        for (size_t k = 0; k < 3; k++) {
            uint64_t want = 0;
            for (unsigned b = 0; b < c->bytes; b++)
                want |= (uint64_t)data[k * c->bytes + b] << (8 * b);
            assert_int_equal(st_get_bits(&a.t, a.t.data, k), want);
        }
        npy_free(&a);
    }
}

static void test_hint_errors(void **state)
{
    (void)state;
    uint8_t data[16] = {0};
    char p[PATH_CAP], d[256], b[32];
    /* The descr value's quote is at this offset in a std file. */
    size_t descr_at = hdr_start(1) + strlen("{'descr': ");
    static const struct {
        const char *descr, *hint;
        nx_status code;
        const char *needle;
        bool names_offset;
    } bad[] = {
        {"<V2", NULL, NX_EINVAL, "a dtype hint", true},
        {"|V1", NULL, NX_EINVAL, "a dtype hint", true},
        {"|u1", "bf16", NX_EINVAL, "8-bit elements but the dtype hint 'bf16' "
                                   "is BF16, 16 bits", true},
        {"<u2", "e4m3", NX_EINVAL, "16-bit elements", true},
        {"<V2", "fp32", NX_EINVAL, "16-bit elements", true},
        {"<f4", "bf16", NX_EINVAL, "descr '<f4' is F32 but the dtype hint "
                                   "'bf16' says BF16", true},
        {"bfloat16", "fp16", NX_EINVAL, "says F16", true},
        {"<i4", "U32", NX_EINVAL, "says U32", true},
        {"<f4", "float", NX_EINVAL, "dtype hint 'float' is not a dtype",
         false},
        {"|u1", "e2m1", NX_EUNSUPPORTED, "packed sub-byte", false},
        {"|u1", "F6_E3M2", NX_EUNSUPPORTED, "packed sub-byte", false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "hint%zu.npy", i);
        unsigned isz = bad[i].descr[2] == '2' ? 2 : bad[i].descr[2] == '4' ? 4
                       : strcmp(bad[i].descr, "bfloat16") == 0 ? 2 : 1;
        write_npy(p, name, 1, dict_of(d, bad[i].descr, "(2,)"), data, 2 * isz);
        if (bad[i].names_offset)
            check_reject(p, bad[i].hint, bad[i].code, bad[i].needle,
                         at(b, descr_at), NULL);
        else
            check_reject(p, bad[i].hint, bad[i].code, bad[i].needle, NULL);
    }
}

static void test_unsupported_descr(void **state)
{
    (void)state;
    uint8_t data[64] = {0};
    char p[PATH_CAP], d[256], b[32];
    size_t descr_at = hdr_start(1) + strlen("{'descr': ");
    static const struct {
        const char *descr, *needle;
    } bad[] = {
        {">f4", "big-endian"},
        {">u2", "big-endian"},
        {"=f4", "native byte order"},
        {"<c8", "descr '<c8' is not supported"},
        {"|O", "descr '|O' is not supported"},
        {"<f16", "not supported"},
        {"<u1", "not supported"},
        {"f4", "not supported"},
        {"float8_e4m3fnuz", "bias and NaN differ"},
        {"float8_e5m2fnuz", "bias and NaN differ"},
        {"float8_e4m3", "infinities"},
        {"float8_e4m3b11fnuz", "not a format of docs/numerics.md"},
        {"float8_e3m4", "not a format of docs/numerics.md"},
        {"float4_e2m1fn", "one element per byte"},
        {"float6_e3m2fn", "one element per byte"},
        {"float6_e2m3fn", "one element per byte"},
        {"Bfloat16", "not supported"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "unsup%zu.npy", i);
        write_npy(p, name, 1, dict_of(d, bad[i].descr, "(2,)"), data, 8);
        check_reject(p, NULL, NX_EUNSUPPORTED, bad[i].needle, at(b, descr_at),
                     NULL);
    }
    /* A structured dtype: the descr is a list. */
    write_npy(p, "struct.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': "
              "False, 'shape': (2,), }", data, 8);
    check_reject(p, NULL, NX_EUNSUPPORTED, "structured", at(b, descr_at), NULL);
}

/* ---- layout --------------------------------------------------------------- */

static void test_fortran_order(void **state)
{
    (void)state;
    char p[PATH_CAP], b[32];
    const char *dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, "
                       "3), }";
    write_npy(p, "fortran.npy", 1, dict, f32_data, 24);
    size_t off = hdr_start(1) + (size_t)(strstr(dict, "True") - dict);
    check_reject(p, NULL, NX_EUNSUPPORTED, "'fortran_order' is True",
                 at(b, off), NULL);
    /* Also in 2.0 and 3.0 (a 4-byte length shifts the offset by 2). */
    write_npy(p, "fortran3.npy", 3, dict, f32_data, 24);
    off = hdr_start(3) + (size_t)(strstr(dict, "True") - dict);
    check_reject(p, NULL, NX_EUNSUPPORTED, at(b, off), NULL);
}

static void test_data_size(void **state)
{
    (void)state;
    char p[PATH_CAP], d[256], b[32];
    /* One byte short: named by where the file ends and where data began. */
    size_t off = write_npy(p, "short.npy", 1, dict_of(d, "<f4", "(2, 3)"),
                           f32_data, 23);
    char from[32];
    snprintf(from, sizeof from, "from byte %zu", off);
    check_reject(p, NULL, NX_EINVAL, "data truncated", at(b, off + 23), from,
                 "1 bytes short", NULL);
    /* Half the data gone, in 2.0. */
    off = write_npy(p, "short2.npy", 2, dict_of(d, "<f4", "(2, 3)"), f32_data,
                    12);
    check_reject(p, NULL, NX_EINVAL, "data truncated", at(b, off + 12),
                 "need 24 bytes", "12 bytes short", NULL);
    /* No data at all. */
    off = write_npy(p, "nodata.npy", 1, dict_of(d, "<f2", "(1,)"), NULL, 0);
    check_reject(p, NULL, NX_EINVAL, "data truncated", at(b, off), NULL);
    /* One byte too many. */
    uint8_t more[25];
    memcpy(more, f32_data, 24);
    more[24] = 0;
    off = write_npy(p, "long.npy", 1, dict_of(d, "<f4", "(2, 3)"), more, 25);
    check_reject(p, NULL, NX_EINVAL, at(b, off + 24), "1 bytes follow", NULL);
    /* Scalars and empty arrays. */
    write_npy(p, "scalar.npy", 1, dict_of(d, "<f4", "()"), f32_data, 4);
    npy_array a;
    read_ok(p, NULL, &a);
    assert_int_equal(a.t.ndim, 0);
    assert_int_equal(a.t.nelem, 1);
    assert_int_equal(st_get_bits(&a.t, a.t.data, 0), 0x3f800000);
    npy_free(&a);
    write_npy(p, "empty.npy", 1, dict_of(d, "<f4", "(0, 5)"), NULL, 0);
    read_ok(p, NULL, &a);
    assert_int_equal(a.t.ndim, 2);
    assert_int_equal(a.t.shape[1], 5);
    assert_int_equal(a.t.nelem, 0);
    assert_int_equal(a.t.nbytes, 0);
    npy_free(&a);
    /* Sizes that overflow 64 bits are errors, not wrapped small sizes. */
    write_npy(p, "ovf_count.npy", 1,
              dict_of(d, "|u1", "(4294967296, 4294967296, 2)"), NULL, 0);
    check_reject(p, NULL, NX_EINVAL, "element count", "overflows", at(b, 10),
                 NULL);
    write_npy(p, "ovf_bytes.npy", 1,
              dict_of(d, "<f8", "(2305843009213693952,)"), NULL, 0);
    check_reject(p, NULL, NX_EINVAL, "byte size", "overflows", NULL);
    /* Large but representable: truncated, with the exact need. */
    write_npy(p, "huge.npy", 1, dict_of(d, "<f8", "(1000000000000,)"), NULL,
              0);
    check_reject(p, NULL, NX_EINVAL, "need 8000000000000 bytes", NULL);
}

/* ---- preamble ------------------------------------------------------------------ */

static void test_preamble(void **state)
{
    (void)state;
    char p[PATH_CAP], b[32], hdr[FILE_CAP], d[256];
    uint8_t file[FILE_CAP];
    size_t hl = std_header(hdr, 1, dict_of(d, "<f4", "(2, 3)"));
    size_t n = build_raw(file, 1, 0, hl, hdr, hl, f32_data, 24);

    tpath(p, "control.npy");
    tu_write_bytes(p, file, n);
    npy_array a;
    read_ok(p, NULL, &a);
    npy_free(&a);

    tpath(p, "tiny.npy");
    tu_write_bytes(p, file, 5);
    check_reject(p, NULL, NX_EINVAL, at(b, 5), "magic and version", NULL);
    tpath(p, "empty.npy");
    tu_write_bytes(p, file, 0);
    check_reject(p, NULL, NX_EINVAL, at(b, 0), NULL);
    tpath(p, "nolen.npy");
    tu_write_bytes(p, file, 9);
    check_reject(p, NULL, NX_EINVAL, at(b, 9), "2-byte header length", NULL);

    uint8_t bad[FILE_CAP];
    memcpy(bad, file, n);
    bad[1] = 'n';
    tpath(p, "magic.npy");
    tu_write_bytes(p, bad, n);
    check_reject(p, NULL, NX_EINVAL, at(b, 0), "not a .npy file", NULL);

    static const uint8_t versions[][2] = {{4, 0}, {0, 0}, {1, 1}, {2, 1}};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        memcpy(bad, file, n);
        bad[6] = versions[i][0];
        bad[7] = versions[i][1];
        char name[32], v[16];
        snprintf(name, sizeof name, "version%zu.npy", i);
        snprintf(v, sizeof v, "%d.%d", versions[i][0], versions[i][1]);
        tpath(p, name);
        tu_write_bytes(p, bad, n);
        check_reject(p, NULL, NX_EUNSUPPORTED, at(b, 6), v, NULL);
    }

    /* 2.0 cut inside its 4-byte length. */
    size_t n2 = build_raw(file, 2, 0, hl, hdr, hl, f32_data, 24);
    tpath(p, "nolen2.npy");
    tu_write_bytes(p, file, 11);
    check_reject(p, NULL, NX_EINVAL, at(b, 11), "4-byte header length", NULL);
    (void)n2;
}

static void test_header_beyond_file(void **state)
{
    (void)state;
    char p[PATH_CAP], b[32], hdr[FILE_CAP], d[256];
    uint8_t file[FILE_CAP];
    size_t hl = std_header(hdr, 1, dict_of(d, "<f4", "(2, 3)"));
    /* The length field says 1000; the file has 10 + 54 + 24 bytes. */
    size_t n = build_raw(file, 1, 0, 1000, hdr, hl, f32_data, 24);
    tpath(p, "hl1000.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, at(b, 8), "header length 1000",
                 "end at byte 1010", NULL);
    /* 2.0, the largest length. */
    n = build_raw(file, 2, 0, 0xffffffffu, hdr, hl, f32_data, 24);
    tpath(p, "hlmax.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, at(b, 8), "header length 4294967295",
                 NULL);
    /* Exactly to the end of the file: the data is then missing. */
    n = build_raw(file, 1, 0, hl + 24, hdr, hl, f32_data, 24);
    tpath(p, "hlall.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, NULL);
    /* One byte short of the real header: it no longer ends in '\n'. */
    n = build_raw(file, 1, 0, hl - 1, hdr, hl, f32_data, 24);
    tpath(p, "hlshort.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, at(b, 10 + hl - 2), "'\\n'", NULL);
    /* Length zero. */
    n = build_raw(file, 1, 0, 0, "", 0, NULL, 0);
    tpath(p, "hlzero.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, at(b, 10), "'\\n'", NULL);
}

/* ---- header grammar --------------------------------------------------------- */

typedef struct grammar_case {
    const char *dict;    /* the header's text before the padding */
    const char *marker;  /* the error's offset is where this is in dict */
    nx_status code;
    const char *needle;
    size_t shift;        /* ... plus this */
} grammar_case;

static void test_header_grammar(void **state)
{
    (void)state;
    static const grammar_case bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}",
         "'extra'", NX_EINVAL, "unknown key 'extra'", 0},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': "
         "(6,)}", "'descr': '<f4', 'f", NX_EINVAL, "key 'descr' appears twice", 0},
        {"{'descr': '<f4', 'fortran_order': False}", "}", NX_EINVAL,
         "no key 'shape'", 0},
        {"{'fortran_order': False, 'shape': (6,)}", "}", NX_EINVAL,
         "no key 'descr'", 0},
        {"{}", "}", NX_EINVAL, "no key 'descr'", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", ")}",
         NX_EINVAL, "(N) is a number", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}", "06",
         NX_EINVAL, "leading zero", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "3)",
         NX_EINVAL, "',' or ')'", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", ",)",
         NX_EINVAL, "a non-negative integer", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,,)}", ",)",
         NX_EINVAL, "a non-negative integer", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", "[6]",
         NX_EINVAL, "a tuple", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", "-6",
         NX_EINVAL, "a non-negative integer", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,) x}", "x}",
         NX_EINVAL, "',' or '}'", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}x", "x",
         NX_EINVAL, "only space padding", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} }", "} }",
         NX_EINVAL, "only space padding", 2},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", "fortran",
         NX_EINVAL, "',' or '}' after a value", 0},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (6,)}", "Falsey",
         NX_EINVAL, "True or False", 0},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", "0,",
         NX_EINVAL, "True or False", 0},
        {"{'descr': '<f4', 'fortran_order': false, 'shape': (6,)}", "false",
         NX_EINVAL, "True or False", 0},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (6,)}", "'<f4'",
         NX_EINVAL, "':'", 0},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (6,)}", "descr",
         NX_EINVAL, "a string", 0},
        {"['descr', '<f4']", "[", NX_EINVAL, "'{'", 0},
        {"{'descr': \"<f4', 'fortran_order': False, 'shape': (6,)}", "\"",
         NX_EINVAL, "is not closed", 0},
        {"{'descr': '<\\f4', 'fortran_order': False, 'shape': (6,)}", "\\",
         NX_EINVAL, "byte 0x5c in a string", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, "
         "1, 1, 1, 6)}", "6)", NX_EUNSUPPORTED, "more than 8 dimensions", 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': "
         "(9223372036854775808,)}", "9223", NX_EINVAL, "larger than 2^63-1", 0},
        {"{'descr': '<f4', 'fortran_order': False,\t'shape': (6,)}", "\t",
         NX_EINVAL, "byte 0x09", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int major = 1; major <= 3; major += 2) {
            char p[PATH_CAP], name[32], b[32];
            snprintf(name, sizeof name, "gram%zu_v%d.npy", i, major);
            write_npy(p, name, major, bad[i].dict, f32_data, 24);
            const char *m = strstr(bad[i].dict, bad[i].marker);
            assert_non_null(m);
            size_t off = hdr_start(major) + (size_t)(m - bad[i].dict) +
                         bad[i].shift;
            check_reject(p, NULL, bad[i].code, bad[i].needle, at(b, off),
                         NULL);
        }
    }
    /* A non-ASCII byte inside a string (3.0 allows UTF-8, but no descr has
     * any). */
    char p[PATH_CAP], b[32];
    const char *dict = "{'descr': '<f\xc3\xa9', 'fortran_order': False, "
                       "'shape': (6,)}";
    write_npy(p, "utf8.npy", 3, dict, f32_data, 24);
    check_reject(p, NULL, NX_EINVAL, "byte 0xc3",
                 at(b, hdr_start(3) + (size_t)(strchr(dict, '\xc3') - dict)),
                 NULL);
    /* A header whose last byte is not '\n'. */
    char hdr[FILE_CAP], d[256];
    uint8_t file[FILE_CAP];
    size_t hl = std_header(hdr, 1, dict_of(d, "<f4", "(6,)"));
    hdr[hl - 1] = ' ';
    size_t n = build_raw(file, 1, 0, hl, hdr, hl, f32_data, 24);
    tpath(p, "nonl.npy");
    tu_write_bytes(p, file, n);
    check_reject(p, NULL, NX_EINVAL, "does not end with '\\n'",
                 at(b, 10 + hl - 1), NULL);
    /* Valid spellings: spaces around every token, a one-element tuple with
     * a trailing comma and spaces, trailing commas. */
    static const char *const good[] = {
        "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 6 , ) , }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }",
        "  {'descr': '<f4', 'fortran_order': False, 'shape': (6,)}  ",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "good%zu.npy", i);
        write_npy(p, name, 1, good[i], f32_data, 24);
        npy_array a;
        read_ok(p, NULL, &a);
        assert_int_equal(a.t.nelem, 6);
        npy_free(&a);
    }
}

static void test_not_a_file(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "absent.npy");
    check_reject(p, NULL, NX_EIO, "cannot open", NULL);
    tpath(p, "adir.npy");
    assert_int_equal(mkdir(p, 0755), 0);
    check_reject(p, NULL, NX_EIO, "not a regular file", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_hint_errors),
        cmocka_unit_test(test_unsupported_descr),
        cmocka_unit_test(test_fortran_order),
        cmocka_unit_test(test_data_size),
        cmocka_unit_test(test_preamble),
        cmocka_unit_test(test_header_beyond_file),
        cmocka_unit_test(test_header_grammar),
        cmocka_unit_test(test_not_a_file),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
