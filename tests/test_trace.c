/* test_trace.c: the trace format (traces/trace.h), the capture API
 * (traces/capture.h) and the committed sample traces.
 *
 * Files with missing or malformed metadata are crafted here byte by byte
 * (the writer refuses to produce them), next to a valid control that
 * differs only in the fault; each rejection checks the code and that the
 * message names the file and the key (and the column, for the grammars).
 * The samples' outputs are checked against a GEMM computed here from their
 * own inputs. */
#define _XOPEN_SOURCE 700

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmpdir.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "nx_format.h"
#include "trace.h"

#define PATH_CAP 600

/* From traces/samples/make_samples.c (built in with SAMPLES_NO_MAIN). */
nx_status samples_write(const char *dir, nx_err *err);

static char g_dir[256];

static void tpath(char out[PATH_CAP], const char *name)
{
    tu_path(out, PATH_CAP, g_dir, name);
}


/* ---- helpers ------------------------------------------------------------ */

static void check_msg(const nx_err *e, const char *needle)
{
    if (!strstr(e->msg, needle))
        fail_msg("message lacks \"%s\": %s", needle, e->msg);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Appends s to the JSON text b as a JSON string (quotes and backslashes
 * escaped; the test values hold no control characters). */
static void json_str(char *b, size_t cap, const char *s)
{
    size_t n = strlen(b);
    b[n++] = '"';
    for (; *s && n + 3 < cap; s++) {
        if (*s == '"' || *s == '\\')
            b[n++] = '\\';
        b[n++] = *s;
    }
    b[n++] = '"';
    b[n] = 0;
    if (n + 2 >= cap)
        fail_msg("json_str: buffer too small");
}

/* The metadata of a valid trace, as key/value pairs.  Tests copy it and
 * drop or change one entry. */
typedef struct kv {
    const char *k, *v;
} kv;

static const kv base_meta[] = {
    {"parity.trace", "1"},
    {"family", "gemm"},
    {"point", "bf16_seq"},
    {"class", "cpu"},
    {"kernel", "cpu.gemm.bf16.v1"},
    {"device", "{\"sku\":\"test\",\"sm_count\":4}"},
    {"shape", "M=2,N=2,K=4"},
    {"params", "alpha=1,out=bf16"},
    {"seed", "7"},
    {"dist", "normal"},
    {"mode", "eager"},
    {"run", "0"},
    {"batch", "rows=0..1"},
    {"created", "2026-01-01T00:00:00Z"},
    {"producer", "test_trace"},
};
#define NBASE (sizeof base_meta / sizeof base_meta[0])

/* Writes a safetensors file by hand: the metadata pairs (skip: a key left
 * out; NULL for none; over/val: a key whose value is replaced), an output
 * "y" BF16 [2, 2] and, when with_input, an input "in.a" U8 [2]. */
static void craft_trace_ex(char path[PATH_CAP], const char *name,
                           const kv *meta, size_t nmeta, const char *skip,
                           const char *over, const char *val,
                           const char *tensors_json, size_t ndata)
{
    char hdr[8192] = "{\"__metadata__\":{";
    bool first = true;
    for (size_t i = 0; i < nmeta; i++) {
        if (skip && strcmp(meta[i].k, skip) == 0)
            continue;
        const char *v = over && strcmp(meta[i].k, over) == 0 ? val : meta[i].v;
        if (!first)
            strcat(hdr, ",");
        first = false;
        json_str(hdr, sizeof hdr, meta[i].k);
        strcat(hdr, ":");
        json_str(hdr, sizeof hdr, v);
    }
    /* A key not in the list (an extension, an unknown key) is added. */
    if (over) {
        bool found = false;
        for (size_t i = 0; i < nmeta; i++)
            found = found || strcmp(meta[i].k, over) == 0;
        if (!found) {
            strcat(hdr, ",");
            json_str(hdr, sizeof hdr, over);
            strcat(hdr, ":");
            json_str(hdr, sizeof hdr, val);
        }
    }
    strcat(hdr, "}");
    strcat(hdr, tensors_json);
    strcat(hdr, "}");
    tpath(path, name);
    size_t hl = strlen(hdr);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (int k = 0; k < 8; k++)
        fputc((int)(((uint64_t)hl >> (8 * k)) & 0xff), fp);
    fwrite(hdr, 1, hl, fp);
    for (size_t i = 0; i < ndata; i++)
        fputc((int)(i * 37 & 0xff), fp);
    fclose(fp);
}

static const char y_only[] =
    ",\"y\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}";
static const char y_and_in[] =
    ",\"y\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}"
    ",\"in.a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]}";

static void craft_trace(char path[PATH_CAP], const char *name,
                        const char *skip, const char *over, const char *val)
{
    craft_trace_ex(path, name, base_meta, NBASE, skip, over, val, y_only, 8);
}

static void check_reject(const char *path, nx_status code, ...)
{
    trace t;
    nx_err e = {0};
    nx_status rc = trace_read(path, &t, &e);
    if (rc != code)
        fail_msg("%s: trace_read gave %d (%s), want %d; message: %s", path,
                 (int)rc, nx_status_name(rc), (int)code, e.msg);
    if (!strstr(e.msg, path))
        fail_msg("message does not name the file %s: %s", path, e.msg);
    assert_null(t.family);
    assert_int_equal(t.file.ntensors, 0);
    va_list ap;
    va_start(ap, code);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL)
        if (!strstr(e.msg, needle))
            fail_msg("message lacks \"%s\": %s", needle, e.msg);
    va_end(ap);
}

static void check_accept(const char *path)
{
    trace t;
    nx_err e = {0};
    if (trace_read(path, &t, &e) != NX_OK)
        fail_msg("%s: rejected a valid trace: %s", path, e.msg);
    trace_free(&t);
}

static int group_setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(g_dir, sizeof g_dir, "test_trace");
}

static int group_teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(g_dir);
}

/* ---- round trip --------------------------------------------------------- */

/* An st_file with output y (BF16 [2, 3]), output z (F32 [2]) and input
 * in.x (F8_E4M3 [2, 4]), filled with known bytes. */
static void build_tensors(st_file *f)
{
    st_init(f);
    nx_err e;
    st_tensor *t;
    int64_t ys[2] = {2, 3}, zs[1] = {2}, xs[2] = {2, 4};
    assert_int_equal(st_add_tensor(f, "y", ST_BF16, 2, ys, &t, &e), NX_OK);
    for (size_t i = 0; i < t->nbytes; i++)
        t->data[i] = (uint8_t)(0x10 + i);
    assert_int_equal(st_add_tensor(f, "z", ST_F32, 1, zs, &t, &e), NX_OK);
    for (size_t i = 0; i < t->nbytes; i++)
        t->data[i] = (uint8_t)(0x80 + i);
    assert_int_equal(st_add_tensor(f, "in.x", ST_F8_E4M3, 2, xs, &t, &e),
                     NX_OK);
    for (size_t i = 0; i < t->nbytes; i++)
        t->data[i] = (uint8_t)(0xc0 + i);
}

static trace_info full_info(void)
{
    trace_info in = {
        .family = "gemm",
        .point = "splitk4",
        .class_name = "sm90",
        .kernel = "gemm_splitk4_v2",
        .device = "{\"sku\":\"NVIDIA H100\",\"driver\":\"560.35\","
                  "\"sm_count\":132,\"nvcc\":\"13.0\",\"host\":\"node7\","
                  "\"cpu\":\"x\",\"threads\":8,\"ecc\":true}",
        .shape = "M=2,N=3,K=4",
        .params = "alpha=1,out=bf16",
        .has_seed = true,
        .seed = 18446744073709551615ull,
        .dist = "normal",
        .mode = TRACE_GRAPHED,
        .run = 3,
        .batch = "perm=1,0",
        .created = "2026-03-04T05:06:07.123Z",
        .producer = "unit test",
    };
    return in;
}

static void test_round_trip(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "rt.safetensors");
    st_file f;
    build_tensors(&f);
    assert_int_equal(st_add_meta(&f, "x.note", "kept", NULL), NX_OK);
    trace_info in = full_info();
    nx_err e = {0};
    if (trace_write(p, &in, &f, &e) != NX_OK)
        fail_msg("trace_write: %s", e.msg);

    trace t;
    if (trace_read(p, &t, &e) != NX_OK)
        fail_msg("trace_read: %s", e.msg);
    assert_string_equal(t.path, p);
    assert_int_equal(t.version, 1);
    assert_string_equal(t.family, "gemm");
    assert_string_equal(t.point, "splitk4");
    assert_string_equal(t.class_name, "sm90");
    assert_string_equal(t.kernel, "gemm_splitk4_v2");
    assert_string_equal(t.device.json, in.device);
    assert_string_equal(t.device.sku, "NVIDIA H100");
    assert_string_equal(t.device.driver, "560.35");
    assert_string_equal(t.device.nvcc, "13.0");
    assert_string_equal(t.device.host, "node7");
    assert_string_equal(t.device.cpu, "x");
    assert_int_equal(t.device.sm_count, 132);
    assert_int_equal(t.device.threads, 8);
    assert_int_equal(t.nshape, 3);
    assert_string_equal(t.shape[0].name, "M");
    assert_int_equal(t.shape[0].value, 2);
    assert_string_equal(t.shape[2].name, "K");
    assert_int_equal(t.shape[2].value, 4);
    int64_t v;
    assert_true(trace_shape_dim(&t, "N", &v));
    assert_int_equal(v, 3);
    assert_false(trace_shape_dim(&t, "T", &v));
    assert_int_equal(t.nparams, 2);
    assert_string_equal(trace_param_get(&t, "out"), "bf16");
    assert_null(trace_param_get(&t, "M"));
    assert_true(t.has_seed);
    assert_true(t.seed == 18446744073709551615ull);
    assert_string_equal(t.dist, "normal");
    assert_int_equal(t.mode, TRACE_GRAPHED);
    assert_true(t.run == 3);
    assert_int_equal(t.batch_kind, TRACE_BATCH_PERM);
    assert_int_equal(t.nrows, 2);
    assert_int_equal(t.rows[0], 1);
    assert_int_equal(t.rows[1], 0);
    assert_string_equal(t.batch, "perm=1,0");
    assert_string_equal(t.created, "2026-03-04T05:06:07.123Z");
    assert_string_equal(t.producer, "unit test");
    assert_string_equal(st_get_meta(&t.file, "x.note"), "kept");
    assert_int_equal(t.noutputs, 2);
    assert_int_equal(t.ninputs, 1);

    const st_tensor *y = trace_output(&t, "y");
    assert_non_null(y);
    assert_int_equal(y->dtype, ST_BF16);
    for (size_t i = 0; i < y->nbytes; i++)
        assert_int_equal(y->data[i], 0x10 + i);
    const st_tensor *x = trace_input(&t, "x");
    assert_non_null(x);
    assert_int_equal(x->dtype, ST_F8_E4M3);
    assert_int_equal(x->nbytes, 8);
    for (size_t i = 0; i < x->nbytes; i++)
        assert_int_equal(x->data[i], 0xc0 + i);
    assert_true(trace_tensor_is_input(x));
    assert_false(trace_tensor_is_input(y));
    assert_null(trace_output(&t, "in.x")); /* inputs are not outputs */
    assert_null(trace_output(&t, "x"));
    assert_null(trace_input(&t, "y"));
    assert_non_null(trace_output(&t, "z"));
    trace_free(&t);
    trace_free(&t); /* freeing twice is harmless */
    st_free(&f);
}

/* The exact bytes of a minimal trace: the metadata keys in the documented
 * order, then the tensors, the header padded to 8 bytes. */
static void test_written_bytes(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "bytes.safetensors");
    st_file f;
    st_init(&f);
    st_tensor *t;
    int64_t s1[1] = {1};
    assert_int_equal(st_add_tensor(&f, "y", ST_U8, 1, s1, &t, NULL), NX_OK);
    t->data[0] = 0xab;
    trace_info in = {
        .family = "f", .point = "p", .class_name = "c", .kernel = "k",
        .shape = "T=1", .has_seed = true, .seed = 5, .dist = "d",
        .mode = TRACE_EAGER, .run = 0, .batch = "rows=0",
        .created = "2026-01-01T00:00:00Z",
    };
    nx_err e = {0};
    if (trace_write(p, &in, &f, &e) != NX_OK)
        fail_msg("%s", e.msg);
    st_free(&f);
    const char *hdr =
        "{\"__metadata__\":{\"parity.trace\":\"1\",\"family\":\"f\","
        "\"point\":\"p\",\"class\":\"c\",\"kernel\":\"k\",\"device\":\"{}\","
        "\"shape\":\"T=1\",\"seed\":\"5\",\"dist\":\"d\",\"mode\":\"eager\","
        "\"run\":\"0\",\"batch\":\"rows=0\",\"created\":"
        "\"2026-01-01T00:00:00Z\"},\"y\":{\"dtype\":\"U8\",\"shape\":[1],"
        "\"data_offsets\":[0,1]}}";
    size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
    size_t n;
    uint8_t *b = tu_slurp(p, &n);
    assert_int_equal(n, 8 + padded + 1);
    for (int k = 0; k < 8; k++)
        assert_int_equal(b[k], ((uint64_t)padded >> (8 * k)) & 0xff);
    if (memcmp(b + 8, hdr, hl) != 0)
        fail_msg("header differs: %.*s", (int)hl, (const char *)b + 8);
    for (size_t i = hl; i < padded; i++)
        assert_int_equal(b[8 + i], ' ');
    assert_int_equal(b[n - 1], 0xab);
    free(b);
}

/* ---- required keys ------------------------------------------------------- */

static void test_missing_required_keys(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft_trace(p, "control.safetensors", NULL, NULL, NULL);
    check_accept(p);
    static const char *const required[] = {
        "parity.trace", "family", "point", "class", "kernel", "device",
        "shape", "mode", "run", "batch", "created",
    };
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        char name[64], needle[64];
        snprintf(name, sizeof name, "missing_%s.safetensors", required[i]);
        snprintf(needle, sizeof needle, "key '%s' is missing", required[i]);
        craft_trace(p, name, required[i], NULL, NULL);
        check_reject(p, NX_EINVAL, needle, NULL);
    }
    /* The optional keys may go. */
    craft_trace(p, "no_params.safetensors", "params", NULL, NULL);
    check_accept(p);
    craft_trace(p, "no_producer.safetensors", "producer", NULL, NULL);
    check_accept(p);
    /* seed and dist go together. */
    craft_trace(p, "no_dist.safetensors", "dist", NULL, NULL);
    check_reject(p, NX_EINVAL, "key 'dist' is missing", "with 'seed'", NULL);
    craft_trace(p, "no_seed.safetensors", "seed", NULL, NULL);
    check_reject(p, NX_EINVAL, "key 'seed' is missing", NULL);
    /* Without a seed the inputs must be there. */
    kv noseed[NBASE];
    size_t k = 0;
    for (size_t i = 0; i < NBASE; i++)
        if (strcmp(base_meta[i].k, "seed") && strcmp(base_meta[i].k, "dist"))
            noseed[k++] = base_meta[i];
    craft_trace_ex(p, "inputs_only.safetensors", noseed, k, NULL, NULL, NULL,
                   y_and_in, 10);
    check_accept(p);
    craft_trace_ex(p, "neither.safetensors", noseed, k, NULL, NULL, NULL,
                   y_only, 8);
    check_reject(p, NX_EINVAL, "neither input tensors", "'seed'", NULL);
    /* No metadata at all: not a trace. */
    tpath(p, "plain.safetensors");
    {
        const char *h = "{\"y\":{\"dtype\":\"U8\",\"shape\":[1],"
                        "\"data_offsets\":[0,1]}}";
        FILE *fp = fopen(p, "wb");
        uint64_t hl = strlen(h);
        for (int b = 0; b < 8; b++)
            fputc((int)((hl >> (8 * b)) & 0xff), fp);
        fputs(h, fp);
        fputc(0, fp);
        fclose(fp);
    }
    check_reject(p, NX_EINVAL, "not a parity trace", "'parity.trace'", NULL);
}

/* ---- malformed values ---------------------------------------------------- */

typedef struct bad_case {
    const char *key, *value;
    nx_status code;
    const char *needle;
} bad_case;

static void test_malformed_values(void **state)
{
    (void)state;
    static const bad_case bad[] = {
        {"parity.trace", "2", NX_EUNSUPPORTED, "version 2 is not supported"},
        {"parity.trace", "999", NX_EUNSUPPORTED, "version 999"},
        {"parity.trace", "1.0", NX_EINVAL, "'1.0'"},
        {"parity.trace", "01", NX_EINVAL, "'01'"},
        {"parity.trace", "", NX_EINVAL, "''"},
        {"family", "gemm.x", NX_EINVAL, "'gemm.x'"},
        {"family", "", NX_EINVAL, "key 'family'"},
        {"point", "a b", NX_EINVAL, "key 'point'"},
        {"class", "sm/90", NX_EINVAL, "key 'class'"},
        {"kernel", "my kernel", NX_EINVAL, "key 'kernel'"},
        {"kernel", "", NX_EINVAL, "key 'kernel'"},
        {"device", "[]", NX_EINVAL, "not a JSON object"},
        {"device", "{", NX_EINVAL, "not JSON"},
        {"device", "{\"sm_count\":\"132\"}", NX_EINVAL, "'sm_count' must be"},
        {"device", "{\"sm_count\":-1}", NX_EINVAL, "'sm_count' must be"},
        {"device", "{\"sku\":5}", NX_EINVAL, "'sku' must be a string"},
        {"device", "{\"extra\":[1]}", NX_EINVAL, "'extra' must be"},
        {"device", "{\"extra\":1.5}", NX_EINVAL, "'extra' must be"},
        {"device", "{\"a\":1,\"a\":2}", NX_EINVAL, "not JSON"},
        {"device", "{} x", NX_EINVAL, "not JSON"},
        {"shape", "", NX_EINVAL, "at least one dimension"},
        {"shape", "M=", NX_EINVAL, "column 3"},
        {"shape", "M=01", NX_EINVAL, "leading zero"},
        {"shape", "M=1,M=2", NX_EINVAL, "column 5: dimension 'M' appears twice"},
        {"shape", "M=1,", NX_EINVAL, "column 5"},
        {"shape", "M=-1", NX_EINVAL, "column 3"},
        {"shape", "M 1", NX_EINVAL, "column 2: expected '='"},
        {"shape", "1M=1", NX_EINVAL, "column 1"},
        {"shape", "M=1;N=2", NX_EINVAL, "column 4"},
        {"shape", "M=9223372036854775808", NX_EINVAL, "larger than"},
        {"params", "a", NX_EINVAL, "column 2"},
        {"params", "a=", NX_EINVAL, "column 3"},
        {"params", "a=1,a=2", NX_EINVAL, "param 'a' appears twice"},
        {"params", "a=b c", NX_EINVAL, "column 4"},
        {"params", "M=3", NX_EINVAL, "'M' is a shape dimension"},
        {"seed", "-1", NX_EINVAL, "key 'seed'"},
        {"seed", "18446744073709551616", NX_EINVAL, "key 'seed'"},
        {"seed", "0x10", NX_EINVAL, "key 'seed'"},
        {"dist", "two words", NX_EINVAL, "key 'dist'"},
        {"mode", "Eager", NX_EINVAL, "'eager' or 'graphed'"},
        {"mode", "fast", NX_EINVAL, "'fast'"},
        {"run", "-1", NX_EINVAL, "key 'run'"},
        {"run", "1.5", NX_EINVAL, "key 'run'"},
        {"run", "", NX_EINVAL, "key 'run'"},
        {"batch", "rows=2..1", NX_EINVAL, "descends"},
        {"batch", "0..1", NX_EINVAL, "'rows=' or 'perm='"},
        {"created", "2026-01-01 00:00:00Z", NX_EINVAL, "column 11"},
        {"created", "2026-02-29T00:00:00Z", NX_EINVAL, "day 29"},
        {"created", "2026-13-01T00:00:00Z", NX_EINVAL, "month 13"},
        {"created", "2026-01-01T24:00:00Z", NX_EINVAL, "hour 24"},
        {"created", "2026-01-01T00:60:00Z", NX_EINVAL, "minute 60"},
        {"created", "2026-01-01T00:00:61Z", NX_EINVAL, "second 61"},
        {"created", "2026-01-01T00:00:00+01:00", NX_EINVAL, "UTC"},
        {"created", "2026-01-01T00:00:00", NX_EINVAL, "column 20"},
        {"created", "2026-01-01T00:00:00.Z", NX_EINVAL, "fraction"},
        {"created", "2026-01-01T00:00:00.1234567890Z", NX_EINVAL, "fraction"},
        {"created", "2026-01-01t00:00:00z", NX_EINVAL, "column 11"},
        {"producer", "", NX_EINVAL, "key 'producer'"},
        {"foo", "bar", NX_EINVAL, "unknown __metadata__ key 'foo'"},
        {"x.", "bar", NX_EINVAL, "unknown __metadata__ key 'x.'"},
        {"parity.traces", "1", NX_EINVAL, "'parity.traces'"},
    };
    char p[PATH_CAP];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[64], key[64];
        snprintf(name, sizeof name, "bad_%zu.safetensors", i);
        craft_trace(p, name, NULL, bad[i].key, bad[i].value);
        snprintf(key, sizeof key, "'%s'", bad[i].key);
        trace t;
        nx_err e = {0};
        nx_status rc = trace_read(p, &t, &e);
        if (rc != bad[i].code || !strstr(e.msg, p) ||
            !strstr(e.msg, key) || !strstr(e.msg, bad[i].needle))
            fail_msg("case %zu (%s = '%s'): got %d, message: %s (want code "
                     "%d naming the file, %s and \"%s\")", i, bad[i].key,
                     bad[i].value, (int)rc, e.msg, (int)bad[i].code, key,
                     bad[i].needle);
    }
    /* Valid edge values, each in the same setting. */
    static const kv good[] = {
        {"created", "2024-02-29T23:59:60Z"}, /* leap day, leap second */
        {"created", "2026-12-31T00:00:00.123456789Z"},
        {"seed", "18446744073709551615"},
        {"seed", "0"},
        {"run", "0"},
        {"mode", "graphed"},
        {"params", ""},
        {"shape", "M=2,N=2,K=4,_x9=0"},
        {"device", "{}"},
        {"device", "{\"ecc\":false,\"mig\":\"1g\",\"n\":3}"},
        {"x.note", "anything, even with spaces"},
        {"kernel", "ns::gemm<128,64>/v2"},
        {"family", "gemv_w4a16-B"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "good_%zu.safetensors", i);
        craft_trace(p, name, NULL, good[i].k, good[i].v);
        check_accept(p);
    }
}

/* ---- batch grammar --------------------------------------------------------- */

static void expect_rows(const char *s, trace_batch_kind kind, size_t n,
                        const int64_t *want)
{
    trace_batch_kind k;
    int64_t *rows;
    size_t got;
    nx_err e = {0};
    if (trace_parse_batch(s, &k, &rows, &got, &e) != NX_OK)
        fail_msg("'%s' rejected: %s", s, e.msg);
    assert_int_equal(k, kind);
    if (got != n)
        fail_msg("'%s': %zu rows, want %zu", s, got, n);
    for (size_t i = 0; i < n; i++)
        if (rows[i] != want[i])
            fail_msg("'%s': row %zu is %lld, want %lld", s, i,
                     (long long)rows[i], (long long)want[i]);
    free(rows);
}

static void test_batch_grammar(void **state)
{
    (void)state;
    int64_t r16[16], rev[16];
    for (int i = 0; i < 16; i++) {
        r16[i] = i;
        rev[i] = 15 - i;
    }
    expect_rows("rows=0..15", TRACE_BATCH_ROWS, 16, r16);
    expect_rows("rows=0", TRACE_BATCH_ROWS, 1, r16);
    expect_rows("rows=5", TRACE_BATCH_ROWS, 1, (int64_t[]){5});
    expect_rows("rows=5..5", TRACE_BATCH_ROWS, 1, (int64_t[]){5});
    expect_rows("rows=0..1,4,8..9", TRACE_BATCH_ROWS, 5,
                (int64_t[]){0, 1, 4, 8, 9});
    expect_rows("perm=3,1,0,2", TRACE_BATCH_PERM, 4, (int64_t[]){3, 1, 0, 2});
    expect_rows("perm=15..0", TRACE_BATCH_PERM, 16, rev);
    expect_rows("perm=2..3,0..1", TRACE_BATCH_PERM, 4, (int64_t[]){2, 3, 0, 1});
    expect_rows("perm=0,1", TRACE_BATCH_PERM, 2, r16);
    expect_rows("rows=4611686018427387903", TRACE_BATCH_ROWS, 1,
                (int64_t[]){4611686018427387903ll});

    static const struct {
        const char *s, *needle;
    } bad[] = {
        {"", "column 1: expected 'rows=' or 'perm='"},
        {"row=1", "column 1"},
        {"ROWS=1", "column 1"},
        {"rows=", "column 6: no rows"},
        {"rows=1,", "column 8"},
        {"rows=,1", "column 6"},
        {"rows= 1", "column 6"},
        {"rows=1 ", "column 7"},
        {"rows=3..1", "column 6: range 3..1 descends"},
        {"rows=1,1", "column 8: row 1 does not come after row 1"},
        {"rows=2,1", "column 8: row 1 does not come after row 2"},
        {"rows=0..3,2..5", "column 11: row 2 does not come after row 3"},
        {"perm=1,2,1", "column 10: row 1 appears twice"},
        {"perm=0..3,2", "column 11: row 2 appears twice"},
        {"perm=4611686018427387903,5,4611686018427387903",
         "column 28: row 4611686018427387903 appears twice"},
        {"perm=9,100000,3,9", "column 17: row 9 appears twice"},
        {"rows=0...3", "column 9"},
        {"rows=0.3", "column 7: expected '..'"},
        {"rows=01", "column 6: a number has a leading zero"},
        {"rows=1..", "column 9"},
        {"rows=a", "column 6"},
        {"rows=-1", "column 6"},
        {"rows=1;2", "column 7"},
        {"perm=0..1048576", "more than 1048576 rows"},
        {"rows=0..1048575,1048576", "more than 1048576 rows"},
        {"rows=4611686018427387904", "larger than"},
        {"rows=99999999999999999999", "larger than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        trace_batch_kind k;
        int64_t *rows = (int64_t *)&k; /* must come back NULL */
        size_t n = 99;
        nx_err e = {0};
        if (trace_parse_batch(bad[i].s, &k, &rows, &n, &e) != NX_EINVAL)
            fail_msg("'%s' accepted", bad[i].s);
        if (!strstr(e.msg, bad[i].needle))
            fail_msg("'%s': message lacks \"%s\": %s", bad[i].s, bad[i].needle,
                     e.msg);
        assert_null(rows);
        assert_int_equal(n, 0);
    }
    /* The limit itself is fine. */
    trace_batch_kind k;
    int64_t *rows;
    size_t n;
    assert_int_equal(trace_parse_batch("perm=1048575..0", &k, &rows, &n,
                                       NULL), NX_OK);
    assert_int_equal(n, TRACE_MAX_BATCH_ROWS);
    assert_int_equal(rows[0], 1048575);
    assert_int_equal(rows[n - 1], 0);
    free(rows);
    /* Through a file, the message names the file and the key. */
    char p[PATH_CAP];
    craft_trace(p, "batch_dup.safetensors", NULL, "batch", "perm=3,1,3");
    check_reject(p, NX_EINVAL, "key 'batch'", "column 10", "row 3 appears twice",
                 NULL);
}

/* ---- tensors ------------------------------------------------------------ */

static void test_tensor_names(void **state)
{
    (void)state;
    char p[PATH_CAP];
    static const struct {
        const char *json, *needle;
        size_t ndata;
    } bad[] = {
        {",\"in.a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}",
         "no output tensor", 2},
        {",\"y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"in.\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}",
         "tensor 'in.'", 2},
        {",\"out.y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}",
         "tensor 'out.y'", 1},
        {",\"1y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}",
         "tensor '1y'", 1},
        {",\"in.in.a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}",
         "tensor 'in.in.a'", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "tensors_%zu.safetensors", i);
        craft_trace_ex(p, name, base_meta, NBASE, NULL, NULL, NULL,
                       bad[i].json, bad[i].ndata);
        check_reject(p, NX_EINVAL, bad[i].needle, NULL);
    }
    craft_trace_ex(p, "tensors_ok.safetensors", base_meta, NBASE, NULL, NULL,
                   NULL, y_and_in, 10);
    check_accept(p);
}

/* ---- the container's own faults still come through ----------------------- */

static void test_container_errors(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "absent.safetensors");
    check_reject(p, NX_EIO, "cannot open", NULL);
    craft_trace_ex(p, "short.safetensors", base_meta, NBASE, NULL, NULL, NULL,
                   y_only, 7);
    check_reject(p, NX_EINVAL, NULL);
}

/* ---- expectations ----------------------------------------------------------- */

static void test_expectations(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "expect.safetensors");
    st_file f;
    build_tensors(&f);
    trace_info in = full_info();
    in.batch = "rows=0..1";
    nx_err e = {0};
    assert_int_equal(trace_write(p, &in, &f, &e), NX_OK);
    st_free(&f);
    trace t;
    assert_int_equal(trace_read(p, &t, &e), NX_OK);

    trace_expect ok = {"gemm", "splitk4", "sm90", "gemm_splitk4_v2",
                       "K=4,M=2,N=3", "M"};
    if (trace_check(&t, &ok, &e) != NX_OK)
        fail_msg("%s", e.msg);
    trace_expect none = {0};
    assert_int_equal(trace_check(&t, &none, &e), NX_OK);

    static const struct {
        trace_expect want;
        const char *needle;
    } bad[] = {
        {{.family = "rmsnorm"}, "family is 'gemm', expected 'rmsnorm'"},
        {{.point = "seq"}, "point is 'splitk4', expected 'seq'"},
        {{.class_name = "sm100"}, "class is 'sm90', expected 'sm100'"},
        {{.kernel = "v1"}, "kernel is 'gemm_splitk4_v2', expected 'v1'"},
        {{.shape = "M=2,N=3,K=8"}, "shape: K is 4, expected 8"},
        {{.shape = "M=2,N=3,K=4,B=1"}, "shape: dimension 'B' is missing "
                                       "(expected B=1)"},
        {{.shape = "M=2,N=3"}, "shape: dimension 'K' is not expected"},
        {{.batch_dim = "N"}, "batch: 'rows=0..1' has 2 rows but the shape "
                             "says N=3"},
        {{.batch_dim = "T"}, "no dimension 'T'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        if (trace_check(&t, &bad[i].want, &e) != NX_EINVAL)
            fail_msg("case %zu passed", i);
        check_msg(&e, p);
        check_msg(&e, bad[i].needle);
    }
    trace_expect malformed = {.shape = "M=2,,"};
    assert_int_equal(trace_check(&t, &malformed, &e), NX_EINVAL);
    check_msg(&e, "the expected shape");

    int64_t ys[2] = {2, 3}, wrong[2] = {3, 2}, xs[2] = {2, 4};
    assert_int_equal(trace_check_tensor(&t, "y", ST_BF16, 2, ys, &e), NX_OK);
    assert_int_equal(trace_check_tensor(&t, "y", ST_BF16, 0, NULL, &e), NX_OK);
    assert_int_equal(trace_check_tensor(&t, "in.x", ST_F8_E4M3, 2, xs, &e),
                     NX_OK);
    assert_int_equal(trace_check_tensor(&t, "y", ST_F32, 2, ys, &e), NX_EINVAL);
    check_msg(&e, "output tensor 'y': dtype is BF16, expected F32");
    assert_int_equal(trace_check_tensor(&t, "y", ST_BF16, 2, wrong, &e),
                     NX_EINVAL);
    check_msg(&e, "output tensor 'y': shape is [2, 3], expected [3, 2]");
    assert_int_equal(trace_check_tensor(&t, "y", ST_BF16, 1, ys, &e),
                     NX_EINVAL);
    check_msg(&e, "expected [2]");
    assert_int_equal(trace_check_tensor(&t, "w", ST_BF16, 2, ys, &e),
                     NX_EINVAL);
    check_msg(&e, "output tensor 'w' is missing (the trace holds: ");
    check_msg(&e, "in.x");
    assert_int_equal(trace_check_tensor(&t, "in.q", ST_BF16, 2, ys, &e),
                     NX_EINVAL);
    check_msg(&e, "input tensor 'in.q' is missing");
    check_msg(&e, p);
    trace_free(&t);
}

/* ---- writer ------------------------------------------------------------------ */

static void test_write_rejects(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "wr.safetensors");
    st_file f;
    build_tensors(&f);
    nx_err e;

    static const char *const nulls[] = {"family", "point", "class", "kernel",
                                        "shape", "batch", "dist"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) {
        trace_info in = full_info();
        const char *k = nulls[i];
        if (!strcmp(k, "family")) in.family = NULL;
        if (!strcmp(k, "point")) in.point = NULL;
        if (!strcmp(k, "class")) in.class_name = NULL;
        if (!strcmp(k, "kernel")) in.kernel = NULL;
        if (!strcmp(k, "shape")) in.shape = NULL;
        if (!strcmp(k, "batch")) in.batch = NULL;
        if (!strcmp(k, "dist")) in.dist = NULL;
        char needle[64];
        snprintf(needle, sizeof needle, "key '%s' is missing", k);
        e.msg[0] = 0;
        assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
        check_msg(&e, p);
        check_msg(&e, needle);
        assert_false(exists(p));
    }
    trace_info in = full_info();
    in.batch = "perm=1,1";
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "key 'batch'");
    check_msg(&e, "row 1 appears twice");
    in = full_info();
    in.mode = (trace_mode)7;
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "key 'mode'");
    in = full_info();
    in.device = "{\"sm_count\":1.5}";
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "key 'device'");
    assert_false(exists(p));

    /* Only extension keys may come with the tensors. */
    in = full_info();
    assert_int_equal(st_add_meta(&f, "family", "other", NULL), NX_OK);
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "'family' given with the tensors");
    assert_false(exists(p));
    st_free(&f);

    /* A file of outputs that are inputs only, or no tensors at all. */
    st_init(&f);
    int64_t one[1] = {1};
    assert_int_equal(st_add_tensor(&f, "in.a", ST_U8, 1, one, NULL, NULL),
                     NX_OK);
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "no output tensor");
    st_free(&f);
    assert_false(exists(p));

    /* created NULL: the current time, which reads back. */
    build_tensors(&f);
    in = full_info();
    in.created = NULL;
    assert_int_equal(trace_write(p, &in, &f, &e), NX_OK);
    st_free(&f);
    trace t;
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_int_equal(strlen(t.created), 20);
    char year[8];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(year, sizeof year, "%Y", &tm);
    assert_memory_equal(t.created, year, 4);
    trace_free(&t);
}

/* negative_control / expected_fail: a negative control says which Tier 1
 * checks its kernel is built to fail; traces without the keys read as
 * before. */
static void test_negative_control_keys(void **state)
{
    (void)state;
    char p[PATH_CAP];
    trace t;
    nx_err e = {0};
    /* an old trace: neither key, not a control */
    craft_trace(p, "nc_old.safetensors", NULL, NULL, NULL);
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_false(t.negative_control);
    assert_null(t.expected_fail);
    trace_free(&t);

    /* written and read back */
    tpath(p, "nc_rt.safetensors");
    st_file f;
    build_tensors(&f);
    trace_info in = full_info();
    in.negative_control = true;
    in.expected_fail = "eager_graphed,rows";
    if (trace_write(p, &in, &f, &e) != NX_OK)
        fail_msg("trace_write: %s", e.msg);
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_true(t.negative_control);
    assert_string_equal(t.expected_fail, "eager_graphed,rows");
    assert_string_equal(st_get_meta(&t.file, "negative_control"), "true");
    trace_free(&t);
    /* not a control: neither key is written, whatever expected_fail says */
    in.negative_control = false;
    assert_int_equal(trace_write(p, &in, &f, &e), NX_OK);
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_null(st_get_meta(&t.file, "negative_control"));
    assert_null(st_get_meta(&t.file, "expected_fail"));
    trace_free(&t);
    /* a control that does not say what it fails is refused by the writer */
    in.negative_control = true;
    in.expected_fail = NULL;
    assert_int_equal(trace_write(p, &in, &f, &e), NX_EINVAL);
    check_msg(&e, "'expected_fail' is missing");
    st_free(&f);

    /* crafted files */
    kv meta[NBASE + 2];
    memcpy(meta, base_meta, sizeof base_meta);
    meta[NBASE] = (kv){"negative_control", "true"};
    meta[NBASE + 1] = (kv){"expected_fail", "determinism"};
    craft_trace_ex(p, "nc_ok.safetensors", meta, NBASE + 2, NULL, NULL, NULL, y_only, 8);
    check_accept(p);
    craft_trace_ex(p, "nc_yes.safetensors", meta, NBASE + 2, NULL, "negative_control", "yes", y_only, 8);
    check_reject(p, NX_EINVAL, "'negative_control'", "'yes'", NULL);
    craft_trace_ex(p, "nc_noexp.safetensors", meta, NBASE + 2, "expected_fail", NULL, NULL, y_only, 8);
    check_reject(p, NX_EINVAL, "'expected_fail' is missing", NULL);
    craft_trace_ex(p, "nc_false.safetensors", meta, NBASE + 2, NULL, "negative_control", "false", y_only, 8);
    check_reject(p, NX_EINVAL, "'expected_fail' without negative_control", NULL);
    craft_trace_ex(p, "nc_bogus.safetensors", meta, NBASE + 2, NULL, "expected_fail", "rows,tier2", y_only, 8);
    check_reject(p, NX_EINVAL, "column 6", "'tier2' is not a Tier 1 check", NULL);
    craft_trace_ex(p, "nc_twice.safetensors", meta, NBASE + 2, NULL, "expected_fail", "rows,rows", y_only, 8);
    check_reject(p, NX_EINVAL, "column 6", "'rows' appears twice", NULL);
    craft_trace_ex(p, "nc_space.safetensors", meta, NBASE + 2, NULL, "expected_fail", "rows, determinism", y_only, 8);
    check_reject(p, NX_EINVAL, "' determinism' is not a Tier 1 check", NULL);
}

static void test_from_st(void **state)
{
    (void)state;
    char p[PATH_CAP];
    craft_trace(p, "from_st.safetensors", NULL, NULL, NULL);
    st_file f;
    nx_err e;
    assert_int_equal(st_read(p, &f, &e), NX_OK);
    trace t;
    assert_int_equal(trace_from_st("in-memory run 3", &f, &t, &e), NX_OK);
    assert_int_equal(f.ntensors, 0); /* moved */
    assert_string_equal(t.path, "in-memory run 3");
    assert_string_equal(t.family, "gemm");
    trace_free(&t);

    craft_trace(p, "from_st_bad.safetensors", "mode", NULL, NULL);
    assert_int_equal(st_read(p, &f, &e), NX_OK);
    assert_int_equal(trace_from_st("run 4", &f, &t, &e), NX_EINVAL);
    check_msg(&e, "run 4: __metadata__ key 'mode' is missing");
    assert_int_equal(f.ntensors, 0); /* freed */
    assert_null(f.buf);
}

/* ---- dtype names ---------------------------------------------------------- */

static void test_dtype_names(void **state)
{
    (void)state;
    /* Every docs/numerics.md format name gives the dtype nx_format stores it
     * as. */
    for (int f = 0; f < NX_NFORMATS; f++) {
        const nx_format_info *fi = nx_format((nx_fmt)f);
        st_dtype a, b;
        if (!trace_dtype_from_name(fi->name, &a))
            fail_msg("format %s not accepted", fi->name);
        assert_true(st_dtype_from_name(fi->st_dtype, &b));
        if (a != b)
            fail_msg("%s: %s, nx_format says %s", fi->name, st_dtype_name(a),
                     fi->st_dtype);
    }
    for (int d = 0; d < ST_DTYPE_COUNT; d++) {
        st_dtype a;
        assert_true(trace_dtype_from_name(st_dtype_name((st_dtype)d), &a));
        assert_int_equal(a, d);
    }
    st_dtype a;
    assert_false(trace_dtype_from_name("BF", &a));
    assert_false(trace_dtype_from_name("Bf16", &a));
    assert_false(trace_dtype_from_name("", &a));
    assert_false(trace_dtype_from_name(NULL, &a));
}

/* ---- capture API ----------------------------------------------------------- */

static void test_capture_end_to_end(void **state)
{
    (void)state;
    char p[PATH_CAP];
    tpath(p, "cap.safetensors");
    uint16_t y[6] = {0x3f80, 0x4000, 0x4040, 0xbf80, 0x0000, 0x8000};
    float a[4] = {1.0f, -2.5f, 0.0f, 3.0f};
    int64_t ys[2] = {2, 3}, as[1] = {4};

    parity_capture *cap = parity_capture_begin(p, "rmsnorm", "seq", "sm90",
                                               "rms_v3");
    assert_non_null(cap);
    assert_int_equal(parity_capture_device(cap, "sku", "NVIDIA H200"), NX_OK);
    assert_int_equal(parity_capture_device(cap, "driver", "570.1"), NX_OK);
    assert_int_equal(parity_capture_device_int(cap, "sm_count", 132), NX_OK);
    assert_int_equal(parity_capture_device(cap, "host", "h1"), NX_OK);
    assert_int_equal(parity_capture_dim(cap, "T", 2), NX_OK);
    assert_int_equal(parity_capture_dim(cap, "H", 3), NX_OK);
    assert_int_equal(parity_capture_param(cap, "eps", "1e-06"), NX_OK);
    assert_int_equal(parity_capture_param(cap, "residual", "false"), NX_OK);
    assert_int_equal(parity_capture_mode(cap, "graphed"), NX_OK);
    assert_int_equal(parity_capture_run(cap, 9), NX_OK);
    assert_int_equal(parity_capture_batch(cap, "perm=1,0"), NX_OK);
    assert_int_equal(parity_capture_created(cap, "2026-05-06T07:08:09Z"),
                     NX_OK);
    assert_int_equal(parity_capture_meta(cap, "x.git", "abc123"), NX_OK);
    assert_int_equal(parity_capture_output(cap, "y", "BF16", 2, ys, y), NX_OK);
    assert_int_equal(parity_capture_input(cap, "a", "fp32", 1, as, a), NX_OK);
    /* Data is copied at the call. */
    y[0] = 0xffff;
    a[0] = 99.0f;
    nx_err e = {0};
    if (parity_capture_end(cap, &e) != NX_OK)
        fail_msg("%s", e.msg);

    trace t;
    if (trace_read(p, &t, &e) != NX_OK)
        fail_msg("%s", e.msg);
    assert_string_equal(t.family, "rmsnorm");
    assert_string_equal(t.point, "seq");
    assert_string_equal(t.class_name, "sm90");
    assert_string_equal(t.kernel, "rms_v3");
    assert_string_equal(t.device.sku, "NVIDIA H200");
    assert_string_equal(t.device.driver, "570.1");
    assert_string_equal(t.device.host, "h1");
    assert_int_equal(t.device.sm_count, 132);
    assert_string_equal(st_get_meta(&t.file, "shape"), "T=2,H=3");
    assert_string_equal(st_get_meta(&t.file, "params"),
                        "eps=1e-06,residual=false");
    assert_false(t.has_seed);
    assert_int_equal(t.mode, TRACE_GRAPHED);
    assert_true(t.run == 9);
    assert_string_equal(t.batch, "perm=1,0");
    assert_string_equal(t.created, "2026-05-06T07:08:09Z");
    assert_string_equal(t.producer, "parity_capture");
    assert_string_equal(st_get_meta(&t.file, "x.git"), "abc123");
    const st_tensor *ty = trace_output(&t, "y");
    assert_non_null(ty);
    assert_int_equal(ty->dtype, ST_BF16);
    assert_int_equal(st_get_bits(ty, ty->data, 0), 0x3f80);
    assert_int_equal(st_get_bits(ty, ty->data, 5), 0x8000);
    const st_tensor *ta = trace_input(&t, "a");
    assert_non_null(ta);
    assert_int_equal(ta->dtype, ST_F32);
    assert_int_equal(st_get_bits(ta, ta->data, 0), 0x3f800000);
    assert_int_equal(st_get_bits(ta, ta->data, 1), 0xc0200000);
    trace_free(&t);

    /* Defaults: host from the machine, eager, run 0; seed instead of
     * inputs; batch_rows; shape replaced by a later call. */
    tpath(p, "cap_defaults.safetensors");
    cap = parity_capture_begin(p, "gemm", "p", "cpu", "k");
    parity_capture_dim(cap, "Q", 1);
    parity_capture_shape(cap, "M=3,N=1,K=1");
    parity_capture_seed(cap, 123, "uniform");
    parity_capture_batch_rows(cap, 4, 3);
    parity_capture_output(cap, "y", "e4m3", 2, (int64_t[]){3, 1},
                          (uint8_t[]){1, 2, 3});
    assert_int_equal(parity_capture_end(cap, &e), NX_OK);
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_int_equal(t.mode, TRACE_EAGER);
    assert_true(t.run == 0);
    assert_string_equal(t.batch, "rows=4..6");
    assert_string_equal(st_get_meta(&t.file, "shape"), "M=3,N=1,K=1");
    assert_true(t.has_seed);
    assert_true(t.seed == 123);
    assert_string_equal(t.dist, "uniform");
    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = 0;
        assert_non_null(t.device.host);
        assert_string_equal(t.device.host, host);
    }
    trace_free(&t);
    trace_expect want = {.family = "gemm", .shape = "M=3,N=1,K=1",
                         .batch_dim = "M"};
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_int_equal(trace_check(&t, &want, &e), NX_OK);
    trace_free(&t);

    tpath(p, "cap_one_row.safetensors");
    cap = parity_capture_begin(p, "gemm", "p", "cpu", "k");
    parity_capture_shape(cap, "M=1");
    parity_capture_seed(cap, 0, "normal");
    parity_capture_batch_rows(cap, 7, 1);
    parity_capture_output(cap, "y", "U8", 0, NULL, (uint8_t[]){5});
    assert_int_equal(parity_capture_end(cap, &e), NX_OK);
    assert_int_equal(trace_read(p, &t, &e), NX_OK);
    assert_string_equal(t.batch, "rows=7");
    assert_int_equal(trace_output(&t, "y")->ndim, 0);
    trace_free(&t);
}

/* A capture with one bad call: the call fails, the error is kept, and
 * parity_capture_end writes nothing and names that call. */
typedef enum {
    BAD_BEGIN_FAMILY, BAD_BEGIN_KERNEL, BAD_BEGIN_NULL, BAD_SHAPE, BAD_DIM,
    BAD_DIM_DUP, BAD_PARAMS, BAD_PARAM, BAD_SEED, BAD_MODE, BAD_BATCH,
    BAD_ROWS, BAD_CREATED, BAD_META, BAD_META_DUP, BAD_DEVICE_TYPE,
    BAD_DEVICE_INT_TYPE, BAD_DEVICE_NEG, BAD_OUTPUT_NAME, BAD_OUTPUT_DTYPE,
    BAD_OUTPUT_DUP, BAD_OUTPUT_NULL, BAD_OUTPUT_NDIM, BAD_INPUT_NAME,
    NO_SHAPE, NO_BATCH, NO_SEED_NO_INPUT, NO_OUTPUT, BAD_COUNT
} cap_fault;

static void test_capture_errors(void **state)
{
    (void)state;
    static const char *const needles[BAD_COUNT] = {
        [BAD_BEGIN_FAMILY] = "parity_capture_begin: family 'ge mm'",
        [BAD_BEGIN_KERNEL] = "parity_capture_begin: kernel",
        [BAD_BEGIN_NULL] = "parity_capture_begin: point is NULL",
        [BAD_SHAPE] = "parity_capture_shape: shape: 'M=1,,'",
        [BAD_DIM] = "parity_capture_dim: dimension M is -1",
        [BAD_DIM_DUP] = "dimension 'M' appears twice",
        [BAD_PARAMS] = "parity_capture_params: params",
        [BAD_PARAM] = "parity_capture_param: params",
        [BAD_SEED] = "parity_capture_seed: dist",
        [BAD_MODE] = "parity_capture_mode: mode 'lazy'",
        [BAD_BATCH] = "parity_capture_batch: batch: 'rows=1,0'",
        [BAD_ROWS] = "parity_capture_batch_rows",
        [BAD_CREATED] = "parity_capture_created",
        [BAD_META] = "parity_capture_meta: key 'note'",
        [BAD_META_DUP] = "'x.a' already exists",
        [BAD_DEVICE_TYPE] = "device member 'sm_count' is an integer",
        [BAD_DEVICE_INT_TYPE] = "device member 'sku' is a string",
        [BAD_DEVICE_NEG] = "'threads' is -2",
        [BAD_OUTPUT_NAME] = "parity_capture_output: output name 'in.y'",
        [BAD_OUTPUT_DTYPE] = "unknown dtype 'float'",
        [BAD_OUTPUT_DUP] = "tensor 'y' already exists",
        [BAD_OUTPUT_NULL] = "tensor 'y': host_ptr is NULL",
        [BAD_OUTPUT_NDIM] = "outside 0..8",
        [BAD_INPUT_NAME] = "parity_capture_input: input name 'a.b'",
        [NO_SHAPE] = "no shape",
        [NO_BATCH] = "no batch",
        [NO_SEED_NO_INPUT] = "neither parity_capture_seed nor",
        [NO_OUTPUT] = "no output tensor",
    };
    char p[PATH_CAP];
    tpath(p, "cap_err.safetensors");
    /* An existing file must survive every failed capture. */
    FILE *fp = fopen(p, "wb");
    fputs("old", fp);
    fclose(fp);
    uint8_t data[4] = {1, 2, 3, 4};
    int64_t s2[1] = {2}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int f = 0; f < BAD_COUNT; f++) {
        parity_capture *cap = parity_capture_begin(
            p, f == BAD_BEGIN_FAMILY ? "ge mm" : "gemm",
            f == BAD_BEGIN_NULL ? NULL : "pt", "cpu",
            f == BAD_BEGIN_KERNEL ? "has space" : "k");
        assert_non_null(cap);
        nx_status rc = NX_OK;
        if (f != NO_SHAPE)
            parity_capture_shape(cap, "M=2");
        if (f != NO_BATCH)
            parity_capture_batch(cap, "rows=0..1");
        if (f != NO_SEED_NO_INPUT)
            parity_capture_seed(cap, 1, "normal");
        if (f != NO_OUTPUT)
            parity_capture_output(cap, "y", "U8", 1, s2, data);
        switch ((cap_fault)f) {
        case BAD_SHAPE: rc = parity_capture_shape(cap, "M=1,,"); break;
        case BAD_DIM: rc = parity_capture_dim(cap, "M", -1); break;
        case BAD_DIM_DUP: rc = parity_capture_dim(cap, "M", 2); break;
        case BAD_PARAMS: rc = parity_capture_params(cap, "a=1,a=2"); break;
        case BAD_PARAM: rc = parity_capture_param(cap, "a", "b c"); break;
        case BAD_SEED: rc = parity_capture_seed(cap, 1, ""); break;
        case BAD_MODE: rc = parity_capture_mode(cap, "lazy"); break;
        case BAD_BATCH: rc = parity_capture_batch(cap, "rows=1,0"); break;
        case BAD_ROWS: rc = parity_capture_batch_rows(cap, -1, 2); break;
        case BAD_CREATED:
            rc = parity_capture_created(cap, "yesterday");
            break;
        case BAD_META: rc = parity_capture_meta(cap, "note", "v"); break;
        case BAD_META_DUP:
            parity_capture_meta(cap, "x.a", "1");
            rc = parity_capture_meta(cap, "x.a", "2");
            break;
        case BAD_DEVICE_TYPE:
            rc = parity_capture_device(cap, "sm_count", "132");
            break;
        case BAD_DEVICE_INT_TYPE:
            rc = parity_capture_device_int(cap, "sku", 1);
            break;
        case BAD_DEVICE_NEG:
            rc = parity_capture_device_int(cap, "threads", -2);
            break;
        case BAD_OUTPUT_NAME:
            rc = parity_capture_output(cap, "in.y", "U8", 1, s2, data);
            break;
        case BAD_OUTPUT_DTYPE:
            rc = parity_capture_output(cap, "z", "float", 1, s2, data);
            break;
        case BAD_OUTPUT_DUP:
            rc = parity_capture_output(cap, "y", "U8", 1, s2, data);
            break;
        case BAD_OUTPUT_NULL:
            /* y is not yet there in this case: no output was added. */
            rc = NX_OK;
            break;
        case BAD_OUTPUT_NDIM:
            rc = parity_capture_output(cap, "z", "U8", 9, s9, data);
            break;
        case BAD_INPUT_NAME:
            rc = parity_capture_input(cap, "a.b", "U8", 1, s2, data);
            break;
        default:
            break;
        }
        if (f == BAD_OUTPUT_NULL) {
            parity_capture_abort(cap);
            cap = parity_capture_begin(p, "gemm", "pt", "cpu", "k");
            parity_capture_shape(cap, "M=2");
            parity_capture_batch(cap, "rows=0..1");
            parity_capture_seed(cap, 1, "normal");
            rc = parity_capture_output(cap, "y", "U8", 1, s2, NULL);
            /* The tensor was taken back: a good call may follow. */
            assert_int_equal(parity_capture_output(cap, "y", "U8", 1, s2,
                                                   data), NX_OK);
        }
        bool at_call = f != BAD_BEGIN_FAMILY && f != BAD_BEGIN_KERNEL &&
                       f != BAD_BEGIN_NULL && f != NO_SHAPE && f != NO_BATCH &&
                       f != NO_SEED_NO_INPUT && f != NO_OUTPUT;
        if (at_call && rc == NX_OK)
            fail_msg("fault %d: the call succeeded", f);
        nx_err e = {0};
        nx_status end = parity_capture_end(cap, &e);
        if (end == NX_OK)
            fail_msg("fault %d: parity_capture_end succeeded", f);
        if (!strstr(e.msg, p) || !strstr(e.msg, needles[f]))
            fail_msg("fault %d: message lacks the file or \"%s\": %s", f,
                     needles[f], e.msg);
        size_t n;
        uint8_t *b = tu_slurp(p, &n);
        assert_int_equal(n, 3);
        assert_memory_equal(b, "old", 3);
        free(b);
    }
    /* A later good call does not clear the first error. */
    parity_capture *cap = parity_capture_begin(p, "gemm", "pt", "cpu", "k");
    assert_int_equal(parity_capture_mode(cap, "lazy"), NX_EINVAL);
    assert_int_equal(parity_capture_mode(cap, "eager"), NX_OK);
    assert_int_equal(parity_capture_shape(cap, "M=2"), NX_OK);
    /* Nor does a later error replace it. */
    assert_int_equal(parity_capture_batch(cap, "rows=1,0"), NX_EINVAL);
    assert_int_equal(parity_capture_batch(cap, "rows=0..1"), NX_OK);
    assert_int_equal(parity_capture_seed(cap, 1, "normal"), NX_OK);
    assert_int_equal(parity_capture_output(cap, "y", "U8", 1, s2, data), NX_OK);
    nx_err e;
    assert_int_equal(parity_capture_end(cap, &e), NX_EINVAL);
    check_msg(&e, "mode 'lazy'");
    if (strstr(e.msg, "parity_capture_batch"))
        fail_msg("the second error replaced the first: %s", e.msg);
    /* NULL everywhere: what a failed begin hands on. */
    assert_int_equal(parity_capture_shape(NULL, "M=1"), NX_ENOMEM);
    assert_int_equal(parity_capture_output(NULL, "y", "U8", 1, s2, data),
                     NX_ENOMEM);
    assert_int_equal(parity_capture_end(NULL, &e), NX_ENOMEM);
    check_msg(&e, "no trace written");
    parity_capture_abort(NULL);
    assert_int_equal(parity_capture_end(NULL, NULL), NX_ENOMEM);
    /* A directory that does not exist: the write's error comes back. */
    char q[PATH_CAP];
    tpath(q, "no/such/dir/t.safetensors");
    cap = parity_capture_begin(q, "gemm", "pt", "cpu", "k");
    parity_capture_shape(cap, "M=2");
    parity_capture_batch(cap, "rows=0..1");
    parity_capture_seed(cap, 1, "normal");
    parity_capture_output(cap, "y", "U8", 1, s2, data);
    assert_int_equal(parity_capture_end(cap, &e), NX_EIO);
    check_msg(&e, q);
}

/* ---- samples -------------------------------------------------------------- */

static const char *const sample_names[] = {
    "gemm_bf16_rows_eager.safetensors",
    "gemm_bf16_perm_graphed.safetensors",
    "gemm_e4m3_row2.safetensors",
    "rmsnorm_seed_only.safetensors",
};

/* A fresh run of the sample program gives the committed bytes. */
static void test_samples_reproduce(void **state)
{
    (void)state;
    char d[PATH_CAP];
    tpath(d, "samples");
    assert_int_equal(mkdir(d, 0755), 0);
    nx_err e;
    if (samples_write(d, &e) != NX_OK)
        fail_msg("%s", e.msg);
    for (size_t i = 0; i < sizeof sample_names / sizeof *sample_names; i++) {
        char fresh[2 * PATH_CAP], kept[PATH_CAP];
        snprintf(fresh, sizeof fresh, "%s/%s", d, sample_names[i]);
        snprintf(kept, sizeof kept, "%s/traces/samples/%s", PARITY_SOURCE_DIR,
                 sample_names[i]);
        size_t n1, n2;
        uint8_t *a = tu_slurp(fresh, &n1), *b = tu_slurp(kept, &n2);
        if (n1 != n2 || memcmp(a, b, n1) != 0)
            fail_msg("%s differs from a fresh run of trace_samples (rerun "
                     "`trace_samples traces/samples` and commit)", kept);
        free(a);
        free(b);
    }
}

/* bf16 pattern -> its value (exact: the high half of an fp32 pattern). */
static double bf16_val(uint64_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* e4m3 of the sample's values, decoded here from the bit fields. */
static double e4m3_val(uint64_t bits)
{
    int s = (int)(bits >> 7) & 1, ex = (int)(bits >> 3) & 15,
        m = (int)bits & 7;
    double v = ex ? (1 + m / 8.0) * ldexp(1, ex - 7) : m / 8.0 * ldexp(1, -6);
    return s ? -v : v;
}

static double elem(const st_tensor *t, size_t i)
{
    uint64_t b = st_get_bits(t, t->data, i);
    return t->dtype == ST_BF16 ? bf16_val(b) : e4m3_val(b);
}

/* Each committed GEMM sample's y is a . b^T of its own inputs, and its rows
 * are the logical rows the batch names (compared with the full-batch
 * sample). */
static void test_samples_valid(void **state)
{
    (void)state;
    trace full;
    char p[PATH_CAP];
    nx_err e;
    snprintf(p, sizeof p, "%s/traces/samples/%s", PARITY_SOURCE_DIR,
             sample_names[0]);
    if (trace_read(p, &full, &e) != NX_OK)
        fail_msg("%s", e.msg);
    for (size_t s = 0; s < sizeof sample_names / sizeof *sample_names; s++) {
        snprintf(p, sizeof p, "%s/traces/samples/%s", PARITY_SOURCE_DIR,
                 sample_names[s]);
        trace t;
        if (trace_read(p, &t, &e) != NX_OK)
            fail_msg("%s", e.msg);
        if (strcmp(t.family, "gemm") != 0) {
            assert_true(t.has_seed);
            assert_int_equal(t.ninputs, 0);
            assert_non_null(st_get_meta(&t.file, "x.note"));
            trace_free(&t);
            continue;
        }
        int64_t M, N, K;
        assert_true(trace_shape_dim(&t, "M", &M));
        assert_true(trace_shape_dim(&t, "N", &N));
        assert_true(trace_shape_dim(&t, "K", &K));
        trace_expect want = {.family = "gemm", .batch_dim = "M"};
        assert_int_equal(trace_check(&t, &want, &e), NX_OK);
        const st_tensor *a = trace_input(&t, "a"), *b = trace_input(&t, "b"),
                        *y = trace_output(&t, "y"),
                        *fa = trace_input(&full, "a"),
                        *fy = trace_output(&full, "y");
        int64_t as[2] = {M, K}, bs[2] = {N, K}, ysh[2] = {M, N};
        st_dtype in_dt = strcmp(trace_param_get(&t, "in"), "e4m3") == 0
                             ? ST_F8_E4M3 : ST_BF16;
        assert_int_equal(trace_check_tensor(&t, "in.a", in_dt, 2, as, &e),
                         NX_OK);
        assert_int_equal(trace_check_tensor(&t, "in.b", in_dt, 2, bs, &e),
                         NX_OK);
        assert_int_equal(trace_check_tensor(&t, "y", ST_BF16, 2, ysh, &e),
                         NX_OK);
        for (int64_t i = 0; i < M; i++) {
            int64_t row = t.rows[i];
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += elem(a, (size_t)(i * K + k)) *
                           elem(b, (size_t)(n * K + k));
                double got = elem(y, (size_t)(i * N + n));
                if (got != acc)
                    fail_msg("%s: y[%lld,%lld] = %a, a.b^T = %a", p,
                             (long long)i, (long long)n, got, acc);
                /* The same logical row in the full batch. */
                if (got != elem(fy, (size_t)(row * N + n)))
                    fail_msg("%s: batch row %lld is not logical row %lld", p,
                             (long long)i, (long long)row);
            }
            for (int64_t k = 0; k < K; k++)
                if (elem(a, (size_t)(i * K + k)) !=
                    elem(fa, (size_t)(row * K + k)))
                    fail_msg("%s: input row %lld is not logical row %lld", p,
                             (long long)i, (long long)row);
        }
        trace_free(&t);
    }
    trace_free(&full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_written_bytes),
        cmocka_unit_test(test_missing_required_keys),
        cmocka_unit_test(test_malformed_values),
        cmocka_unit_test(test_batch_grammar),
        cmocka_unit_test(test_tensor_names),
        cmocka_unit_test(test_container_errors),
        cmocka_unit_test(test_expectations),
        cmocka_unit_test(test_write_rejects),
        cmocka_unit_test(test_negative_control_keys),
        cmocka_unit_test(test_from_st),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_capture_end_to_end),
        cmocka_unit_test(test_capture_errors),
        cmocka_unit_test(test_samples_reproduce),
        cmocka_unit_test(test_samples_valid),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
