/* test_safetensors.c: the safetensors reader, writer and element access.
 *
 * Expected bytes are written out by hand (never taken from the code under
 * test); every malformed file is crafted byte by byte in a temporary
 * directory, next to a valid control that differs only in the fault, and
 * each rejection checks the code and that the message names the file and
 * the tensor, key or byte offset at fault. */
#define _XOPEN_SOURCE 700

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors.h"

#define PATH_CAP 600

static char g_dir[256];

static void tpath(char out[PATH_CAP], const char *name)
{
    tu_path(out, PATH_CAP, g_dir, name);
}


/* ---- helpers ------------------------------------------------------------ */

/* A file whose length field says hlen, followed by hdr and ndata bytes of
 * data (data, or zeros when data is NULL). */
static void craft_raw(char path[PATH_CAP], const char *name, uint64_t hlen,
                      const char *hdr, const uint8_t *data, size_t ndata)
{
    tpath(path, name);
    size_t hl = strlen(hdr);
    size_t n = 8 + hl + ndata;
    uint8_t *b = calloc(n, 1);
    assert_non_null(b);
    for (int k = 0; k < 8; k++)
        b[k] = (uint8_t)(hlen >> (8 * k));
    memcpy(b + 8, hdr, hl);
    if (data)
        memcpy(b + 8 + hl, data, ndata);
    tu_write_bytes(path, b, n);
    free(b);
}

static void craft(char path[PATH_CAP], const char *name, const char *hdr,
                  size_t ndata)
{
    craft_raw(path, name, strlen(hdr), hdr, NULL, ndata);
}

/* st_read must fail with code; the message must name the file and contain
 * every needle (NULL-terminated list). */
static void check_reject(const char *path, nx_status code, ...)
{
    st_file f;
    nx_err e = {0};
    nx_status rc = st_read(path, &f, &e);
    if (rc != code)
        fail_msg("%s: st_read gave %d (%s), want %d; message: %s", path,
                 (int)rc, nx_status_name(rc), (int)code, e.msg);
    if (!strstr(e.msg, path))
        fail_msg("message does not name the file %s: %s", path, e.msg);
    assert_int_equal(f.ntensors, 0);
    assert_null(f.buf);
    va_list ap;
    va_start(ap, code);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL)
        if (!strstr(e.msg, needle))
            fail_msg("message lacks \"%s\": %s", needle, e.msg);
    va_end(ap);
}

static void check_accept(const char *path, size_t ntensors)
{
    st_file f;
    nx_err e = {0};
    nx_status rc = st_read(path, &f, &e);
    if (rc != NX_OK)
        fail_msg("%s: st_read rejected a valid file: %s", path, e.msg);
    assert_int_equal(f.ntensors, ntensors);
    st_free(&f);
}

static void check_msg(const nx_err *e, const char *needle)
{
    if (!strstr(e->msg, needle))
        fail_msg("message lacks \"%s\": %s", needle, e->msg);
}

static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".tmp."))
            n++;
    closedir(d);
    return n;
}

static int group_setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(g_dir, sizeof g_dir, "test_safetensors");
}

static int group_teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(g_dir);
}

/* ---- dtypes ------------------------------------------------------------- */

static void test_dtype_table(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unsigned bits;
    } want[] = {
        {"F64", 64}, {"F32", 32}, {"F16", 16}, {"BF16", 16},
        {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F6_E3M2", 6}, {"F6_E2M3", 6},
        {"F4", 4}, {"F8_E8M0", 8}, {"BOOL", 8}, {"U8", 8}, {"I8", 8},
        {"U16", 16}, {"I16", 16}, {"U32", 32}, {"I32", 32}, {"U64", 64},
        {"I64", 64},
    };
    assert_int_equal(sizeof want / sizeof want[0], ST_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        st_dtype dt;
        if (!st_dtype_from_name(want[i].name, &dt))
            fail_msg("dtype %s not recognised", want[i].name);
        assert_string_equal(st_dtype_name(dt), want[i].name);
        if (st_dtype_bits(dt) != want[i].bits)
            fail_msg("%s: %u bits, want %u", want[i].name, st_dtype_bits(dt),
                     want[i].bits);
    }
    st_dtype dt;
    assert_false(st_dtype_from_name("f32", &dt)); /* names are exact */
    assert_false(st_dtype_from_name("C64", &dt));
    assert_false(st_dtype_from_name("", &dt));
    assert_string_equal(st_dtype_name(ST_DTYPE_COUNT), "?");
    assert_int_equal(st_dtype_bits(ST_DTYPE_COUNT), 0);
}

/* ---- round trip of every dtype ------------------------------------------ */

typedef struct rt_case {
    const char *name;
    st_dtype dt;
    int ndim;
    int64_t shape[2];
    size_t nelem;
    uint64_t vals[4];   /* raw bit patterns */
    uint8_t bytes[16];  /* the same, as stored, by hand */
    size_t nbytes;
} rt_case;

/* Sub-byte packing, bit by bit (element i at stream bits [i*w, (i+1)*w),
 * stream bit b = bit b%8 of byte b/8, low bits first):
 *   F6_E3M2 01 3F 00 2A: byte0 = 000001 | (3F&3)<<6 = 0xC1,
 *     byte1 = 3F>>2 | (00&F)<<4 = 0x0F, byte2 = 00>>4 | 2A<<2 = 0xA8.
 *   F6_E2M3 15 2A 3F 01: byte0 = 0x15 | (2A&3)<<6 = 0x95,
 *     byte1 = 2A>>2 | (3F&F)<<4 = 0xFA, byte2 = 3F>>4 | 01<<2 = 0x07.
 *   F4 1 2 F 8: byte0 = 1 | 2<<4 = 0x21, byte1 = F | 8<<4 = 0x8F. */
static const rt_case rt_cases[] = {
    {"f64", ST_F64, 1, {2}, 2, {0x3FF0000000000000u, 0xC000000000000001u},
     {0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x01, 0, 0, 0, 0, 0, 0, 0xC0}, 16},
    {"f32", ST_F32, 1, {2}, 2, {0x3F800000u, 0x7FC00000u},
     {0, 0, 0x80, 0x3F, 0, 0, 0xC0, 0x7F}, 8},
    {"f16", ST_F16, 1, {2}, 2, {0x3C00, 0x7E00}, {0x00, 0x3C, 0x00, 0x7E}, 4},
    {"bf16", ST_BF16, 1, {2}, 2, {0x3F80, 0x7FC0}, {0x80, 0x3F, 0xC0, 0x7F}, 4},
    {"e5m2", ST_F8_E5M2, 1, {2}, 2, {0x3C, 0x7E}, {0x3C, 0x7E}, 2},
    {"e4m3", ST_F8_E4M3, 1, {2}, 2, {0x38, 0x7F}, {0x38, 0x7F}, 2},
    {"e3m2", ST_F6_E3M2, 2, {1, 4}, 4, {0x01, 0x3F, 0x00, 0x2A},
     {0xC1, 0x0F, 0xA8}, 3},
    {"e2m3", ST_F6_E2M3, 1, {4}, 4, {0x15, 0x2A, 0x3F, 0x01},
     {0x95, 0xFA, 0x07}, 3},
    {"e2m1", ST_F4, 2, {2, 2}, 4, {0x1, 0x2, 0xF, 0x8}, {0x21, 0x8F}, 2},
    {"e8m0", ST_F8_E8M0, 1, {2}, 2, {0x7F, 0xFF}, {0x7F, 0xFF}, 2},
    {"bool", ST_BOOL, 1, {2}, 2, {1, 0}, {0x01, 0x00}, 2},
    {"u8", ST_U8, 1, {2}, 2, {0xAB, 0x01}, {0xAB, 0x01}, 2},
    {"i8", ST_I8, 1, {2}, 2, {0xFF, 0x80}, {0xFF, 0x80}, 2},
    {"u16", ST_U16, 1, {2}, 2, {0xBEEF, 0x0102}, {0xEF, 0xBE, 0x02, 0x01}, 4},
    {"i16", ST_I16, 1, {2}, 2, {0xFFFE, 0x8000}, {0xFE, 0xFF, 0x00, 0x80}, 4},
    {"u32", ST_U32, 1, {2}, 2, {0xDEADBEEFu, 0x00000001u},
     {0xEF, 0xBE, 0xAD, 0xDE, 0x01, 0, 0, 0}, 8},
    {"i32", ST_I32, 1, {2}, 2, {0x80000000u, 0xFFFFFFFFu},
     {0, 0, 0, 0x80, 0xFF, 0xFF, 0xFF, 0xFF}, 8},
    {"u64", ST_U64, 1, {2}, 2, {0x0123456789ABCDEFu, 0x8000000000000000u},
     {0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, 0, 0, 0, 0, 0, 0, 0,
      0x80}, 16},
    {"i64", ST_I64, 1, {2}, 2, {0xFFFFFFFFFFFFFFFEu, 1},
     {0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0, 0, 0, 0, 0},
     16},
};
#define N_RT (sizeof rt_cases / sizeof rt_cases[0])

static void dump_mismatch(const char *what, const uint8_t *got,
                          const uint8_t *want, size_t n)
{
    char g[64] = "", w[64] = "";
    for (size_t k = 0; k < n && k < 16; k++) {
        snprintf(g + strlen(g), sizeof g - strlen(g), "%02x ", got[k]);
        snprintf(w + strlen(w), sizeof w - strlen(w), "%02x ", want[k]);
    }
    fail_msg("%s: bytes %sdiffer from hand-written %s", what, g, w);
}

/* Decoding hand-written bytes, independently of st_put_bits. */
static void test_get_bits_hand_bytes(void **state)
{
    (void)state;
    bool seen[ST_DTYPE_COUNT] = {false};
    for (size_t c = 0; c < N_RT; c++) {
        const rt_case *rc = &rt_cases[c];
        seen[rc->dt] = true;
        st_tensor t = {0};
        t.dtype = rc->dt;
        for (size_t i = 0; i < rc->nelem; i++) {
            uint64_t got = st_get_bits(&t, rc->bytes, i);
            if (got != rc->vals[i])
                fail_msg("%s element %zu: got 0x%llx, want 0x%llx", rc->name,
                         i, (unsigned long long)got,
                         (unsigned long long)rc->vals[i]);
        }
    }
    for (int d = 0; d < ST_DTYPE_COUNT; d++)
        if (!seen[d])
            fail_msg("no round-trip case for dtype %s", st_dtype_name(d));
}

static void test_put_bits_keeps_neighbours(void **state)
{
    (void)state;
    st_tensor t6 = {0};
    t6.dtype = ST_F6_E2M3;
    uint8_t b6[3] = {0xFF, 0xFF, 0xFF};
    st_put_bits(&t6, b6, 1, 0); /* stream bits 6..11 */
    const uint8_t w6[3] = {0x3F, 0xF0, 0xFF};
    if (memcmp(b6, w6, 3))
        dump_mismatch("F6 put element 1 = 0", b6, w6, 3);
    st_put_bits(&t6, b6, 3, 0x00); /* stream bits 18..23 */
    const uint8_t w6b[3] = {0x3F, 0xF0, 0x03};
    if (memcmp(b6, w6b, 3))
        dump_mismatch("F6 put element 3 = 0", b6, w6b, 3);

    st_tensor t4 = {0};
    t4.dtype = ST_F4;
    uint8_t b4[1] = {0xFF};
    st_put_bits(&t4, b4, 0, 0x5);
    assert_int_equal(b4[0], 0xF5);
    st_put_bits(&t4, b4, 1, 0x0);
    assert_int_equal(b4[0], 0x05);
    st_put_bits(&t4, b4, 1, 0xFF); /* wider than 4 bits: only the low 4 */
    assert_int_equal(b4[0], 0xF5);

    st_tensor t16 = {0};
    t16.dtype = ST_BF16;
    uint8_t b16[4] = {0xAA, 0xAA, 0xAA, 0xAA};
    st_put_bits(&t16, b16, 1, 0x12345); /* low 16 bits only */
    const uint8_t w16[4] = {0xAA, 0xAA, 0x45, 0x23};
    if (memcmp(b16, w16, 4))
        dump_mismatch("BF16 put element 1", b16, w16, 4);
}

static void test_round_trip_every_dtype(void **state)
{
    (void)state;
    char path[PATH_CAP];
    tpath(path, "all.safetensors");
    st_file f;
    st_init(&f);
    nx_err e = {0};
    for (size_t c = 0; c < N_RT; c++) {
        const rt_case *rc = &rt_cases[c];
        st_tensor *t;
        if (st_add_tensor(&f, rc->name, rc->dt, rc->ndim, rc->shape, &t, &e))
            fail_msg("add %s: %s", rc->name, e.msg);
        assert_int_equal(t->nbytes, rc->nbytes);
        assert_int_equal(t->nelem, rc->nelem);
        for (size_t i = 0; i < rc->nelem; i++)
            st_put_bits(t, t->data, i, rc->vals[i]);
        if (memcmp(t->data, rc->bytes, rc->nbytes))
            dump_mismatch(rc->name, t->data, rc->bytes, rc->nbytes);
    }
    assert_int_equal(st_add_meta(&f, "producer", "test", &e), NX_OK);
    assert_int_equal(st_add_meta(&f, "seed", "42", &e), NX_OK);
    if (st_write_atomic(path, &f, &e))
        fail_msg("write: %s", e.msg);
    st_free(&f);

    /* The data section on disk: the hand-written bytes, in insertion order. */
    size_t n;
    uint8_t *raw = tu_slurp(path, &n);
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++)
        hlen |= (uint64_t)raw[k] << (8 * k);
    assert_int_equal(hlen % 8, 0);
    size_t pos = 8 + (size_t)hlen, total = 0;
    for (size_t c = 0; c < N_RT; c++)
        total += rt_cases[c].nbytes;
    assert_int_equal(n, pos + total);
    for (size_t c = 0; c < N_RT; c++) {
        if (memcmp(raw + pos, rt_cases[c].bytes, rt_cases[c].nbytes))
            dump_mismatch(rt_cases[c].name, raw + pos, rt_cases[c].bytes,
                          rt_cases[c].nbytes);
        pos += rt_cases[c].nbytes;
    }
    free(raw);

    st_file g;
    if (st_read(path, &g, &e))
        fail_msg("read back: %s", e.msg);
    assert_int_equal(g.ntensors, N_RT);
    for (size_t c = 0; c < N_RT; c++) {
        const rt_case *rc = &rt_cases[c];
        const st_tensor *t = st_find(&g, rc->name);
        if (!t)
            fail_msg("tensor %s missing after read", rc->name);
        assert_int_equal(t->dtype, rc->dt);
        assert_int_equal(t->ndim, rc->ndim);
        for (int d = 0; d < rc->ndim; d++)
            assert_int_equal(t->shape[d], rc->shape[d]);
        assert_int_equal(t->nbytes, rc->nbytes);
        if (memcmp(t->data, rc->bytes, rc->nbytes))
            dump_mismatch(rc->name, t->data, rc->bytes, rc->nbytes);
        for (size_t i = 0; i < rc->nelem; i++)
            if (st_get_bits(t, t->data, i) != rc->vals[i])
                fail_msg("%s element %zu differs after read", rc->name, i);
    }
    /* Read tensors come ordered by offset, which here is insertion order. */
    for (size_t c = 0; c < N_RT; c++)
        assert_string_equal(g.tensors[c].name, rt_cases[c].name);
    assert_int_equal(g.nmeta, 2);
    assert_string_equal(g.meta[0].key, "producer");
    assert_string_equal(g.meta[1].key, "seed");
    assert_string_equal(st_get_meta(&g, "seed"), "42");
    assert_null(st_get_meta(&g, "absent"));
    assert_null(st_find(&g, "absent"));
    st_free(&g);
    assert_int_equal(g.ntensors, 0);
    assert_null(g.buf);
}

/* The exact bytes: deterministic key order, contiguous offsets in insertion
 * order, space padding to a multiple of 8. */
static void test_write_exact_bytes(void **state)
{
    (void)state;
    char path[PATH_CAP];
    tpath(path, "exact.safetensors");
    st_file f;
    st_init(&f);
    nx_err e = {0};
    st_tensor *t;
    int64_t s2[] = {2}, s3[] = {3};
    assert_int_equal(st_add_meta(&f, "k", "v", &e), NX_OK);
    assert_int_equal(st_add_tensor(&f, "b", ST_F32, 1, s2, &t, &e), NX_OK);
    t->data[0] = 0x11;
    t->data[7] = 0x88;
    assert_int_equal(st_add_tensor(&f, "a", ST_U8, 1, s3, &t, &e), NX_OK);
    t->data[2] = 0x33;
    assert_int_equal(st_write_atomic(path, &f, &e), NX_OK);

    static const char hdr[] =
        "{\"__metadata__\":{\"k\":\"v\"},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}";
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    uint8_t want[256] = {0};
    want[0] = (uint8_t)padded;
    memcpy(want + 8, hdr, hl);
    memset(want + 8 + hl, ' ', padded - hl);
    uint8_t *d = want + 8 + padded;
    d[0] = 0x11;
    d[7] = 0x88;
    d[10] = 0x33;
    size_t wn = 8 + padded + 11;

    size_t n;
    uint8_t *raw = tu_slurp(path, &n);
    assert_int_equal(n, wn);
    if (memcmp(raw, want, wn))
        fail_msg("file bytes differ from the hand-written layout; header "
                 "written: %.*s", (int)padded, (const char *)raw + 8);
    free(raw);

    /* Writing again gives the same bytes. */
    char path2[PATH_CAP];
    tpath(path2, "exact2.safetensors");
    assert_int_equal(st_write_atomic(path2, &f, &e), NX_OK);
    raw = tu_slurp(path2, &n);
    assert_int_equal(n, wn);
    assert_memory_equal(raw, want, wn);
    free(raw);
    /* The scratch writer (no temporary, no fsync) writes the same bytes,
     * over a longer file too (truncated, not overwritten in place). */
    char path3[PATH_CAP];
    tpath(path3, "exact3.safetensors");
    FILE *lf = fopen(path3, "wb");
    assert_non_null(lf);
    for (int i = 0; i < 4096; i++)
        fputc('x', lf);
    fclose(lf);
    assert_int_equal(st_write_scratch(path3, &f, &e), NX_OK);
    raw = tu_slurp(path3, &n);
    assert_int_equal(n, wn);
    assert_memory_equal(raw, want, wn);
    free(raw);
    /* and names the path where it cannot write */
    char bad[PATH_CAP + 32];
    snprintf(bad, sizeof bad, "%s/no-such-dir/x.safetensors", g_dir);
    assert_int_equal(st_write_scratch(bad, &f, &e), NX_EIO);
    assert_non_null(strstr(e.msg, "no-such-dir/x.safetensors"));
    st_free(&f);
}

static void test_empty_and_zero_size(void **state)
{
    (void)state;
    char path[PATH_CAP];
    tpath(path, "empty.safetensors");
    st_file f;
    st_init(&f);
    nx_err e = {0};
    assert_int_equal(st_write_atomic(path, &f, &e), NX_OK);
    size_t n;
    uint8_t *raw = tu_slurp(path, &n);
    static const uint8_t want[16] = {8, 0, 0, 0, 0, 0, 0, 0,
                                     '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
    assert_int_equal(n, 16);
    assert_memory_equal(raw, want, 16);
    free(raw);
    check_accept(path, 0);

    /* A zero-size tensor, a scalar, and a zero-size tensor at the end. */
    tpath(path, "zero.safetensors");
    int64_t z[] = {0, 3}, one[] = {1};
    st_tensor *t;
    assert_int_equal(st_add_tensor(&f, "z", ST_F32, 2, z, &t, &e), NX_OK);
    assert_int_equal(t->nbytes, 0);
    assert_int_equal(st_add_tensor(&f, "s", ST_F64, 0, NULL, &t, &e), NX_OK);
    assert_int_equal(t->nelem, 1);
    assert_int_equal(t->nbytes, 8);
    st_put_bits(t, t->data, 0, 0x4000000000000000u);
    assert_int_equal(st_add_tensor(&f, "q", ST_F4, 1, one, &t, &e),
                     NX_EINVAL); /* 4 bits: not a whole byte */
    check_msg(&e, "4 bits");
    assert_int_equal(st_add_tensor(&f, "end", ST_I8, 1, z, &t, &e), NX_OK);
    assert_int_equal(st_write_atomic(path, &f, &e), NX_OK);
    st_free(&f);
    st_file g;
    if (st_read(path, &g, &e))
        fail_msg("read: %s", e.msg);
    assert_int_equal(g.ntensors, 3);
    const st_tensor *s = st_find(&g, "s");
    assert_non_null(s);
    assert_int_equal(s->ndim, 0);
    assert_int_equal(st_get_bits(s, s->data, 0), 0x4000000000000000u);
    assert_int_equal(st_find(&g, "z")->nbytes, 0);
    st_free(&g);
}

static void test_add_rejections(void **state)
{
    (void)state;
    st_file f;
    st_init(&f);
    nx_err e = {0};
    int64_t s2[] = {2}, neg[] = {2, -1};
    int64_t big[] = {INT64_MAX, INT64_MAX};
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(st_add_tensor(&f, "a", ST_F32, 1, s2, NULL, &e), NX_OK);
    assert_int_equal(st_add_tensor(&f, "a", ST_F32, 1, s2, NULL, &e),
                     NX_EINVAL);
    check_msg(&e, "'a' already exists");
    assert_int_equal(st_add_tensor(&f, "__metadata__", ST_F32, 1, s2, NULL,
                                   &e), NX_EINVAL);
    assert_int_equal(st_add_tensor(&f, "", ST_F32, 1, s2, NULL, &e),
                     NX_EINVAL);
    assert_int_equal(st_add_tensor(&f, "n", ST_F32, 2, neg, NULL, &e),
                     NX_EINVAL);
    check_msg(&e, "shape[1] is -1");
    assert_int_equal(st_add_tensor(&f, "o", ST_F32, 2, big, NULL, &e),
                     NX_EINVAL);
    check_msg(&e, "overflows");
    assert_int_equal(st_add_tensor(&f, "d", ST_F32, 9, nine, NULL, &e),
                     NX_EUNSUPPORTED);
    assert_int_equal(st_add_meta(&f, "k", "v", &e), NX_OK);
    assert_int_equal(st_add_meta(&f, "k", "w", &e), NX_EINVAL);
    check_msg(&e, "'k' already exists");
    assert_int_equal(f.ntensors, 1);
    assert_int_equal(f.nmeta, 1);
    st_free(&f);
}

/* ---- reading: the valid controls ---------------------------------------- */

#define T_A "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static void test_read_valid_controls(void **state)
{
    (void)state;
    char p[PATH_CAP];
    nx_err e = {0};
    craft(p, "ok.st", "{" T_A "}", 8);
    check_accept(p, 1);
    craft(p, "ok_pad.st", "{" T_A "}      ", 8); /* the spec's padding */
    check_accept(p, 1);
    craft(p, "ok_empty.st", "{}", 0);
    check_accept(p, 0);
    craft(p, "ok_meta.st",
          "{\"__metadata__\":{\"z\":\"1\",\"a\":\"2\"}," T_A "}", 8);
    check_accept(p, 1);

    /* Header order differs from offset order; read sorts by offset, and a
     * zero-size tensor between two others is fine. */
    uint8_t data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const char *h =
        "{\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]},"
        "\"z\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[8,8]},"
        "\"b\":{\"dtype\":\"U16\",\"shape\":[4],\"data_offsets\":[0,8]}}";
    craft_raw(p, "ok_order.st", strlen(h), h, data, 12);
    st_file f;
    if (st_read(p, &f, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(f.ntensors, 3);
    assert_string_equal(f.tensors[0].name, "b");
    assert_string_equal(f.tensors[1].name, "z");
    assert_string_equal(f.tensors[2].name, "c");
    const st_tensor *b = st_find(&f, "b"), *c = st_find(&f, "c");
    assert_int_equal(st_get_bits(b, b->data, 1), 0x0403);
    assert_int_equal(st_get_bits(c, c->data, 3), 12);
    st_free(&f);

    /* Metadata keeps the file's order (z before a). */
    tpath(p, "ok_meta.st");
    if (st_read(p, &f, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(f.nmeta, 2);
    assert_string_equal(f.meta[0].key, "z");
    assert_string_equal(f.meta[1].key, "a");
    assert_string_equal(f.meta[1].value, "2");
    st_free(&f);

    /* A hand-packed F4 and F6 file read from disk. */
    uint8_t sub[5] = {0x21, 0x8F, 0x95, 0xFA, 0x07};
    const char *hs =
        "{\"q\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[0,2]},"
        "\"r\":{\"dtype\":\"F6_E2M3\",\"shape\":[2,2],\"data_offsets\":[2,5]}}";
    craft_raw(p, "ok_sub.st", strlen(hs), hs, sub, 5);
    if (st_read(p, &f, &e))
        fail_msg("%s", e.msg);
    const st_tensor *q = st_find(&f, "q"), *r = st_find(&f, "r");
    static const uint64_t qv[4] = {0x1, 0x2, 0xF, 0x8};
    static const uint64_t rv[4] = {0x15, 0x2A, 0x3F, 0x01};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(st_get_bits(q, q->data, i), qv[i]);
        assert_int_equal(st_get_bits(r, r->data, i), rv[i]);
    }
    st_free(&f);
}

/* ---- reading: rejections ------------------------------------------------ */

static void test_reject_truncated(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "short.st");
    tu_write_bytes(p, "\x10\0\0\0\0", 5);
    check_reject(p, NX_EINVAL, "5 bytes", "8-byte header length", NULL);
    tpath(p, "zero_bytes.st");
    tu_write_bytes(p, "", 0);
    check_reject(p, NX_EINVAL, "0 bytes", NULL);

    /* Header cut short: the length says 56, 40 bytes follow. */
    craft_raw(p, "cut.st", 56, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"dat",
              NULL, 4);
    check_reject(p, NX_EINVAL, "header length 56", "byte 0",
                 "past the end of the file", NULL);
}

static void test_reject_header_length(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft_raw(p, "huge_len.st", 0x8000000000000000u, "{}", NULL, 0);
    check_reject(p, NX_EINVAL, "header length 9223372036854775808",
                 "limit of 100000000", NULL);
    craft_raw(p, "over_limit.st", 100000001u, "{}", NULL, 0);
    check_reject(p, NX_EINVAL, "header length 100000001",
                 "limit of 100000000", NULL);
    /* At the limit the length is allowed, but the file is too short. */
    craft_raw(p, "at_limit.st", 100000000u, "{}", NULL, 0);
    check_reject(p, NX_EINVAL, "header length 100000000",
                 "past the end of the file", NULL);
    /* Length past the file by one byte. */
    craft_raw(p, "one_over.st", strlen("{" T_A "}") + 9, "{" T_A "}", NULL, 8);
    check_reject(p, NX_EINVAL, "past the end of the file", NULL);
}

static void test_reject_bad_json(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft(p, "badjson.st", "{\"a\":{\"dtype\":\"F32\",}}", 8);
    check_reject(p, NX_EINVAL, "invalid JSON at byte", "line 1", NULL);
    craft(p, "array.st", "[1,2]", 0);
    check_reject(p, NX_EINVAL, "not a JSON object", "byte 8", NULL);
    craft(p, "leading_space.st", " {}", 0);
    check_reject(p, NX_EINVAL, "not a JSON object", NULL);
    /* Padding must be spaces: a newline after the object is refused and the
     * message gives its file offset (8 + length of the object). */
    char hdr[256], off[32];
    snprintf(hdr, sizeof hdr, "{" T_A "}\n");
    snprintf(off, sizeof off, "byte %zu", 8 + strlen(hdr) - 1);
    craft(p, "newline_pad.st", hdr, 8);
    check_reject(p, NX_EINVAL, off, "0x0a", NULL);
    craft(p, "junk_pad.st", "{" T_A "}  x", 8);
    check_reject(p, NX_EINVAL, "0x78", NULL);
    craft(p, "not_utf8.st", "{\"\xff\":1}", 0);
    check_reject(p, NX_EINVAL, "invalid JSON", NULL);
}

static void test_reject_duplicates(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft(p, "dup.st",
          "{" T_A ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[8,16]}}", 16);
    check_reject(p, NX_EINVAL, "duplicate", "'\"a\"'", NULL);
    craft(p, "dup_inner.st",
          "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "duplicate", "dtype", NULL);
    craft(p, "dup_meta.st",
          "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}," T_A "}", 8);
    check_reject(p, NX_EINVAL, "duplicate", "k", NULL);
}

static void test_reject_entry_keys(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft(p, "dtype.st",
          "{\"a\":{\"dtype\":\"F12\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EUNSUPPORTED, "tensor 'a'", "unknown dtype 'F12'",
                 NULL);
    craft(p, "dtype_case.st",
          "{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EUNSUPPORTED, "unknown dtype 'f32'", NULL);
    craft(p, "dtype_num.st",
          "{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "key 'dtype'", NULL);
    craft(p, "unknown_key.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],"
          "\"foo\":1}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "unknown key 'foo'", NULL);
    craft(p, "missing_key.st",
          "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "missing key 'shape'", NULL);
    craft(p, "entry_int.st", "{\"a\":5}", 0);
    check_reject(p, NX_EINVAL, "tensor 'a'", "integer, not an object", NULL);
}

static void test_reject_shape(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft(p, "neg.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}",
          8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "shape[1] is -1", NULL);
    craft(p, "real.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}",
          8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "shape[0] is 2.5", NULL);
    craft(p, "str.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}",
          8);
    check_reject(p, NX_EINVAL, "shape[0] is a string", NULL);
    craft(p, "shape_obj.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "key 'shape'", NULL);
    craft(p, "ndim9.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
          "\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EUNSUPPORTED, "tensor 'a'", "9 dimensions", NULL);
    craft(p, "count_overflow.st",
          "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],"
          "\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "element count", "overflows",
                 NULL);
    craft(p, "bits_overflow.st",
          "{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
          "\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "bit count", "overflows", NULL);
}

static void test_reject_sizes_and_offsets(void **state)
{
    (void)state;
    char p[PATH_CAP];
    /* The example from the brief, word for word after the path. */
    craft(p, "in.safetensors",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,64]}}",
          64);
    check_reject(p, NX_EINVAL,
                 ": tensor 'a': data_offsets [0, 64] give 64 bytes but shape "
                 "[4, 8] of F32 needs 128", NULL);
    craft(p, "f4_odd.st",
          "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2);
    check_reject(p, NX_EINVAL, "tensor 'a'", "shape [3] of F4 is 12 bits",
                 "whole number of bytes", NULL);
    craft(p, "f6_odd.st",
          "{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[3],\"data_offsets\":[0,3]}}",
          3);
    check_reject(p, NX_EINVAL, "18 bits", NULL);
    craft(p, "f6_size.st",
          "{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[0,4]}}",
          4);
    check_reject(p, NX_EINVAL, "give 4 bytes", "needs 3", NULL);
    craft(p, "backwards.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "[8, 0] end before", NULL);
    craft(p, "one_offset.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "'data_offsets'", NULL);
    craft(p, "neg_offset.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}",
          8);
    check_reject(p, NX_EINVAL, "data_offsets[0] is -8", NULL);
    craft(p, "oob.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
          8);
    check_reject(p, NX_EINVAL, "tensor 'a'", "[8, 16]",
                 "past the end of the data section, which has 8 bytes", NULL);
    craft(p, "overlap.st",
          "{" T_A ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[4,12]}}", 12);
    check_reject(p, NX_EINVAL, "tensor 'b'", "[4, 12]",
                 "overlap tensor 'a' [0, 8]", NULL);
    craft(p, "same_range.st",
          "{" T_A ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[0,8]}}", 8);
    check_reject(p, NX_EINVAL, "overlap", NULL);
    craft(p, "gap.st",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
          12);
    check_reject(p, NX_EINVAL, "gap", "[4, 8)", "tensor 'b' begins at 8",
                 NULL);
    craft(p, "gap_first.st",
          "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
    check_reject(p, NX_EINVAL, "gap", "[0, 4)", NULL);
    craft(p, "uncovered.st", "{" T_A "}", 12);
    check_reject(p, NX_EINVAL, "has 12 bytes", "cover only 8", "[8, 12)",
                 NULL);
    craft(p, "uncovered_empty.st", "{}", 1);
    check_reject(p, NX_EINVAL, "cover only 0", NULL);
}

static void test_reject_metadata(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft(p, "meta_int.st", "{\"__metadata__\":{\"k\":1}," T_A "}", 8);
    check_reject(p, NX_EINVAL, "__metadata__ key 'k'", "integer value", NULL);
    craft(p, "meta_null.st", "{\"__metadata__\":{\"ok\":\"x\",\"n\":null}}", 0);
    check_reject(p, NX_EINVAL, "key 'n'", "null value", NULL);
    craft(p, "meta_str.st", "{\"__metadata__\":\"x\"}", 0);
    check_reject(p, NX_EINVAL, "'__metadata__'", "string", NULL);
}

static void test_reject_not_a_file(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "does_not_exist.st");
    check_reject(p, NX_EIO, "cannot open", NULL);
    check_reject(g_dir, NX_EIO, "not a regular file", NULL);
}

/* ---- atomic writing ----------------------------------------------------- */

/* A small valid file at path, its bytes returned for later comparison. */
static uint8_t *make_existing(const char *path, size_t *n)
{
    st_file f;
    st_init(&f);
    nx_err e = {0};
    int64_t s[] = {3};
    st_tensor *t;
    assert_int_equal(st_add_tensor(&f, "old", ST_U8, 1, s, &t, &e), NX_OK);
    t->data[0] = 0x0D;
    t->data[2] = 0xD0;
    assert_int_equal(st_write_atomic(path, &f, &e), NX_OK);
    st_free(&f);
    return tu_slurp(path, n);
}

static void build_big(st_file *f, size_t nbytes)
{
    st_init(f);
    nx_err e = {0};
    int64_t s[] = {(int64_t)nbytes};
    st_tensor *t;
    assert_int_equal(st_add_tensor(f, "new", ST_U8, 1, s, &t, &e), NX_OK);
    memset(t->data, 0x5A, nbytes);
}

static void check_unchanged(const char *path, const uint8_t *old, size_t n)
{
    size_t m;
    uint8_t *now = tu_slurp(path, &m);
    assert_int_equal(m, n);
    assert_memory_equal(now, old, n);
    free(now);
    check_accept(path, 1);
}

static void test_write_replaces_and_keeps_mode(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "replace.st");
    size_t n;
    free(make_existing(p, &n));
    assert_int_equal(chmod(p, 0600), 0);
    st_file f;
    build_big(&f, 100);
    nx_err e = {0};
    assert_int_equal(st_write_atomic(p, &f, &e), NX_OK);
    st_free(&f);
    st_file g;
    assert_int_equal(st_read(p, &g, &e), NX_OK);
    assert_non_null(st_find(&g, "new"));
    assert_null(st_find(&g, "old"));
    st_free(&g);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_tmp(g_dir), 0);
}

static void test_write_missing_dir(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "no_such_dir/x.safetensors");
    st_file f;
    build_big(&f, 16);
    nx_err e = {0};
    assert_int_equal(st_write_atomic(p, &f, &e), NX_EIO);
    check_msg(&e, p);
    check_msg(&e, "temporary file");
    st_free(&f);
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0);
}

/* path is a directory: refused before anything is written (a rename
 * would fail, or replace an empty one).  No temporary is left and the
 * directory is as it was. */
static void test_write_rename_fails(void **state)
{
    (void)state;
    char p[PATH_CAP], inner[PATH_CAP];
    tpath(p, "isdir.safetensors");
    assert_int_equal(mkdir(p, 0755), 0);
    tpath(inner, "isdir.safetensors/keep");
    tu_write_bytes(inner, "keep", 4);
    st_file f;
    build_big(&f, 16);
    nx_err e = {0};
    assert_int_equal(st_write_atomic(p, &f, &e), NX_EINVAL);
    check_msg(&e, "is not a regular file (a directory)");
    check_msg(&e, p);
    st_free(&f);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    size_t n;
    uint8_t *b = tu_slurp(inner, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(b, "keep", 4);
    free(b);
    assert_int_equal(count_tmp(g_dir), 0);
}

/* A write that fails half way (the file-size limit; works even as root):
 * the existing file keeps its bytes and no temporary is left. */
static void test_write_fails_midway(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "keep.safetensors");
    size_t n;
    uint8_t *old = make_existing(p, &n);
    st_file f;
    build_big(&f, 1 << 20);

    struct rlimit saved, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = 64 * 1024;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG, not a signal */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    nx_err e = {0};
    nx_status rc = st_write_atomic(p, &f, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, prev);
    st_free(&f);

    if (rc != NX_EIO)
        fail_msg("write past the size limit gave %d: %s", (int)rc, e.msg);
    check_msg(&e, "writing temporary file");
    check_msg(&e, "byte");
    check_unchanged(p, old, n);
    assert_int_equal(count_tmp(g_dir), 0);
    free(old);
}

static void test_write_readonly_dir(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root writes into 0555 directories */
    char d[PATH_CAP], p[PATH_CAP];
    tpath(d, "ro");
    assert_int_equal(mkdir(d, 0755), 0);
    tpath(p, "ro/x.safetensors");
    size_t n;
    uint8_t *old = make_existing(p, &n);
    assert_int_equal(chmod(d, 0555), 0);
    st_file f;
    build_big(&f, 16);
    nx_err e = {0};
    nx_status rc = st_write_atomic(p, &f, &e);
    chmod(d, 0755);
    st_free(&f);
    assert_int_equal(rc, NX_EIO);
    check_unchanged(p, old, n);
    assert_int_equal(count_tmp(d), 0);
    free(old);
}

/* An inconsistent st_file is refused before anything touches the disk. */
static void test_write_invalid_file(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "inconsistent.safetensors");
    size_t n;
    uint8_t *old = make_existing(p, &n);
    st_file f;
    build_big(&f, 16);
    f.tensors[0].nbytes = 15; /* tampered */
    nx_err e = {0};
    assert_int_equal(st_write_atomic(p, &f, &e), NX_EINVAL);
    check_msg(&e, "tensor 'new'");
    check_msg(&e, "15 bytes");
    f.tensors[0].nbytes = 16;
    assert_int_equal(st_add_meta(&f, "bad", "\xff", &e), NX_OK);
    assert_int_equal(st_write_atomic(p, &f, &e), NX_EINVAL);
    check_msg(&e, "'bad'");
    st_free(&f);
    check_unchanged(p, old, n);
    assert_int_equal(count_tmp(g_dir), 0);
    free(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_get_bits_hand_bytes),
        cmocka_unit_test(test_put_bits_keeps_neighbours),
        cmocka_unit_test(test_round_trip_every_dtype),
        cmocka_unit_test(test_write_exact_bytes),
        cmocka_unit_test(test_empty_and_zero_size),
        cmocka_unit_test(test_add_rejections),
        cmocka_unit_test(test_read_valid_controls),
        cmocka_unit_test(test_reject_truncated),
        cmocka_unit_test(test_reject_header_length),
        cmocka_unit_test(test_reject_bad_json),
        cmocka_unit_test(test_reject_duplicates),
        cmocka_unit_test(test_reject_entry_keys),
        cmocka_unit_test(test_reject_shape),
        cmocka_unit_test(test_reject_sizes_and_offsets),
        cmocka_unit_test(test_reject_metadata),
        cmocka_unit_test(test_reject_not_a_file),
        cmocka_unit_test(test_write_replaces_and_keeps_mode),
        cmocka_unit_test(test_write_missing_dir),
        cmocka_unit_test(test_write_rename_fails),
        cmocka_unit_test(test_write_fails_midway),
        cmocka_unit_test(test_write_readonly_dir),
        cmocka_unit_test(test_write_invalid_file),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
