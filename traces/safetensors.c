/* safetensors.c: strict safetensors reading, atomic writing, raw element
 * access.
 *
 * What the reader checks, in order (each failure names the file and the
 * tensor, key or byte offset):
 *   - the file holds at least the 8-byte little-endian header length N;
 *   - N <= 100,000,000 (the format's limit) and 8 + N <= file size;
 *   - the header begins with '{', is JSON with no duplicate key (jansson,
 *     JSON_REJECT_DUPLICATES), is an object, and only spaces (0x20) follow
 *     the object inside the N bytes (the spec's padding);
 *   - "__metadata__", if present, maps strings to strings (kept, in order);
 *   - every other entry is an object with exactly "dtype", "shape" and
 *     "data_offsets"; the dtype is known; the shape is at most ST_MAX_NDIM
 *     non-negative integers; elements x bits is computed with overflow checks
 *     and must be a whole number of bytes; data_offsets are two non-negative
 *     integers, begin <= end, end - begin equal to that byte count, and end
 *     inside the data section;
 *   - sorted by begin, the tensors' byte ranges tile the data section exactly:
 *     no overlap, no gap, and the last one ends where the file ends.
 *
 * Sub-byte dtypes (F4, F6_E3M2, F6_E2M3).  What the reference implementation
 * does, from huggingface/safetensors safetensors/src/tensor.rs (v0.6.0, PR
 * #611 "Adding support for MXFP4,6"): Dtype::bitsize() gives F4 = 4,
 * F6_E2M3 = F6_E3M2 = 6, every other dtype 8..64; Metadata::validate()
 * computes nbits = nelements * bitsize with checked multiplication, fails
 * with MisalignedSlice when nbits % 8 != 0, and requires end - begin ==
 * nbits / 8.  We do the same.  The crate treats the data as opaque bytes and
 * does not prescribe the order of elements inside a byte (PR #611: the OCP MX
 * spec leaves the layout open and "safetensors doesn't make a choice").  The
 * producers it interoperates with pack F4 two to a byte with the first
 * element in the low nibble (PyTorch float4_e2m1fn_x2, which safetensors
 * maps to "F4"; pack_uint4 in pytorch test/test_matmul_cuda.py and torchao:
 * `uint8_data[1::2] << 4 | uint8_data[::2]`).  We therefore use one rule for
 * every sub-byte dtype: the data is a little-endian bit stream, element i
 * occupies stream bits [i*bits, (i+1)*bits), stream bit b is bit b % 8 (LSB
 * = 0) of byte b / 8, and an element's low bits come first.  For F4 this is
 * exactly the PyTorch layout; for F6 (which crosses byte boundaries) no
 * producer convention was found, so it is this project's choice, by the
 * same rule. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise, MADV_* */

#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    unsigned bits;
} dtype_info[ST_DTYPE_COUNT] = {
    [ST_F64] = {"F64", 64},
    [ST_F32] = {"F32", 32},
    [ST_F16] = {"F16", 16},
    [ST_BF16] = {"BF16", 16},
    [ST_F8_E5M2] = {"F8_E5M2", 8},
    [ST_F8_E4M3] = {"F8_E4M3", 8},
    [ST_F6_E3M2] = {"F6_E3M2", 6},
    [ST_F6_E2M3] = {"F6_E2M3", 6},
    [ST_F4] = {"F4", 4},
    [ST_F8_E8M0] = {"F8_E8M0", 8},
    [ST_BOOL] = {"BOOL", 8},
    [ST_U8] = {"U8", 8},
    [ST_I8] = {"I8", 8},
    [ST_U16] = {"U16", 16},
    [ST_I16] = {"I16", 16},
    [ST_U32] = {"U32", 32},
    [ST_I32] = {"I32", 32},
    [ST_U64] = {"U64", 64},
    [ST_I64] = {"I64", 64},
};

#define META_KEY "__metadata__"

const char *st_dtype_name(st_dtype dt)
{
    if ((unsigned)dt >= ST_DTYPE_COUNT)
        return "?";
    return dtype_info[dt].name;
}

bool st_dtype_from_name(const char *name, st_dtype *out)
{
    if (!name)
        return false;
    for (int i = 0; i < ST_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_info[i].name) == 0) {
            if (out)
                *out = (st_dtype)i;
            return true;
        }
    }
    return false;
}

unsigned st_dtype_bits(st_dtype dt)
{
    if ((unsigned)dt >= ST_DTYPE_COUNT)
        return 0;
    return dtype_info[dt].bits;
}

void st_init(st_file *f)
{
    memset(f, 0, sizeof *f);
}

void st_free(st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->ntensors; i++) {
        free(f->tensors[i].name);
        if (f->tensors[i].owns_data)
            free(f->tensors[i].data);
    }
    free(f->tensors);
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    if (f->buf_mapped)
        munmap(f->buf, f->buf_len);
    else
        free(f->buf);
    st_init(f);
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    /* Linear: traces hold tens to hundreds of tensors, looked up rarely. */
    for (size_t i = 0; i < f->ntensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

const char *st_get_meta(const st_file *f, const char *key)
{
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

/* ---- shared helpers ---------------------------------------------------- */

static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

/* "[4, 8]" for messages; truncated with "..." if it does not fit. */
static const char *shape_str(char *buf, size_t cap, int ndim,
                             const int64_t *shape)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "",
                              (long long)shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    else if (cap >= 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}

/* Element count and byte size of a shape in a dtype, refusing overflow and
 * sub-byte tensors that end inside a byte (the reference's MisalignedSlice).
 * who is the message prefix ("file: tensor 'a'"). */
static nx_status tensor_size(const char *who, st_dtype dt, int ndim,
                             const int64_t *shape, uint64_t *nelem,
                             uint64_t *nbytes, nx_err *err)
{
    char sh[160];
    uint64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return nx_err_set(err, NX_EINVAL, "%s: shape[%d] is %lld, negative",
                              who, d, (long long)shape[d]);
        if (!mul_u64(n, (uint64_t)shape[d], &n))
            return nx_err_set(err, NX_EINVAL,
                              "%s: element count of shape %s overflows 64 bits",
                              who, shape_str(sh, sizeof sh, ndim, shape));
    }
    uint64_t bits;
    if (!mul_u64(n, st_dtype_bits(dt), &bits))
        return nx_err_set(err, NX_EINVAL,
                          "%s: bit count of shape %s of %s overflows 64 bits",
                          who, shape_str(sh, sizeof sh, ndim, shape),
                          st_dtype_name(dt));
    if (bits % 8 != 0)
        return nx_err_set(err, NX_EINVAL,
                          "%s: shape %s of %s is %llu bits, not a whole number "
                          "of bytes",
                          who, shape_str(sh, sizeof sh, ndim, shape),
                          st_dtype_name(dt), (unsigned long long)bits);
    *nelem = n;
    *nbytes = bits / 8;
    return NX_OK;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "real number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "value";
}

/* ---- reading ------------------------------------------------------------ */

static nx_status read_whole(const char *path, uint8_t **out, size_t *len,
                            nx_err *err)
{
    nx_err local;
    int fd = nx_open_input(path, err ? err : &local); /* a FIFO or device: refused, never waited on */
    if (fd < 0)
        return err ? err->code : local.code;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return nx_err_set(err, NX_EIO, "%s: cannot stat: %s", path,
                          strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return nx_err_set(err, NX_EIO, "%s: not a regular file", path);
    }
    if ((uintmax_t)st.st_size > SIZE_MAX - 1) {
        close(fd);
        return nx_err_set(err, NX_ENOMEM, "%s: %lld bytes do not fit in memory",
                          path, (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return nx_err_set(err, NX_ENOMEM, "%s: cannot allocate %zu bytes",
                          path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            free(buf);
            if (r == 0)
                return nx_err_set(err, NX_EIO,
                                  "%s: file ended at byte %zu while reading "
                                  "%zu bytes (changed while reading?)",
                                  path, got, size);
            return nx_err_set(err, NX_EIO, "%s: read failed at byte %zu: %s",
                              path, got, strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *len = size;
    return NX_OK;
}

static nx_status parse_meta(const char *path, json_t *m, st_file *f,
                            nx_err *err)
{
    if (!json_is_object(m))
        return nx_err_set(err, NX_EINVAL,
                          "%s: key '" META_KEY "' is a JSON %s; it must be an "
                          "object of string to string",
                          path, json_kind(m));
    size_t n = json_object_size(m);
    f->meta = calloc(n ? n : 1, sizeof *f->meta);
    if (!f->meta)
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
    f->meta_cap = n;
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!json_is_string(v))
            return nx_err_set(err, NX_EINVAL,
                              "%s: " META_KEY " key '%s' has a %s value; only "
                              "strings are allowed",
                              path, key, json_kind(v));
        st_meta *e = &f->meta[f->nmeta];
        e->key = strdup(key);
        e->value = strdup(json_string_value(v));
        f->nmeta++;
        if (!e->key || !e->value)
            return nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
    }
    return NX_OK;
}

/* A non-negative JSON integer, or an error naming what it is instead. */
static nx_status get_count(const char *who, const char *what, json_t *v,
                           int64_t *out, nx_err *err)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return nx_err_set(err, NX_EINVAL, "%s: %s is %lld, negative", who,
                              what, (long long)x);
        *out = (int64_t)x;
        return NX_OK;
    }
    if (json_is_real(v))
        return nx_err_set(err, NX_EINVAL,
                          "%s: %s is %g, not a non-negative integer", who, what,
                          json_real_value(v));
    return nx_err_set(err, NX_EINVAL,
                      "%s: %s is a %s, not a non-negative integer", who, what,
                      json_kind(v));
}

static nx_status parse_tensor(const char *path, const char *name, json_t *e,
                              uint8_t *data, uint64_t data_len, st_tensor *t,
                              nx_err *err)
{
    char who[NX_ERR_MSG_MAX / 2];
    snprintf(who, sizeof who, "%s: tensor '%s'", path, name);
    if (!json_is_object(e))
        return nx_err_set(err, NX_EINVAL, "%s: entry is a JSON %s, not an "
                          "object", who, json_kind(e));
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return nx_err_set(err, NX_EINVAL,
                              "%s: unknown key '%s' (allowed: dtype, shape, "
                              "data_offsets)", who, key);
    }
    json_t *jd = json_object_get(e, "dtype");
    json_t *js = json_object_get(e, "shape");
    json_t *jo = json_object_get(e, "data_offsets");
    const char *missing = !jd ? "dtype" : !js ? "shape" : !jo ? "data_offsets"
                                                               : NULL;
    if (missing)
        return nx_err_set(err, NX_EINVAL, "%s: missing key '%s'", who, missing);

    if (!json_is_string(jd))
        return nx_err_set(err, NX_EINVAL, "%s: key 'dtype' is a %s, not a "
                          "string", who, json_kind(jd));
    if (!st_dtype_from_name(json_string_value(jd), &t->dtype))
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: unknown dtype '%s'", who,
                          json_string_value(jd));

    if (!json_is_array(js))
        return nx_err_set(err, NX_EINVAL, "%s: key 'shape' is a %s, not an "
                          "array", who, json_kind(js));
    size_t nd = json_array_size(js);
    if (nd > ST_MAX_NDIM)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s: shape has %zu dimensions, more than the %d "
                          "supported", who, nd, ST_MAX_NDIM);
    t->ndim = (int)nd;
    for (size_t d = 0; d < nd; d++) {
        char what[32];
        snprintf(what, sizeof what, "shape[%zu]", d);
        nx_status rc = get_count(who, what, json_array_get(js, d),
                                 &t->shape[d], err);
        if (rc)
            return rc;
    }
    nx_status rc = tensor_size(who, t->dtype, t->ndim, t->shape, &t->nelem,
                               &t->nbytes, err);
    if (rc)
        return rc;

    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return nx_err_set(err, NX_EINVAL,
                          "%s: key 'data_offsets' must be an array of two "
                          "integers [begin, end]", who);
    int64_t b, en;
    if ((rc = get_count(who, "data_offsets[0]", json_array_get(jo, 0), &b,
                        err)) ||
        (rc = get_count(who, "data_offsets[1]", json_array_get(jo, 1), &en,
                        err)))
        return rc;
    if (en < b)
        return nx_err_set(err, NX_EINVAL,
                          "%s: data_offsets [%lld, %lld] end before they begin",
                          who, (long long)b, (long long)en);
    uint64_t have = (uint64_t)en - (uint64_t)b;
    if (have != t->nbytes) {
        char sh[160];
        return nx_err_set(err, NX_EINVAL,
                          "%s: data_offsets [%lld, %lld] give %llu bytes but "
                          "shape %s of %s needs %llu",
                          who, (long long)b, (long long)en,
                          (unsigned long long)have,
                          shape_str(sh, sizeof sh, t->ndim, t->shape),
                          st_dtype_name(t->dtype),
                          (unsigned long long)t->nbytes);
    }
    if ((uint64_t)en > data_len)
        return nx_err_set(err, NX_EINVAL,
                          "%s: data_offsets [%lld, %lld] run past the end of "
                          "the data section, which has %llu bytes",
                          who, (long long)b, (long long)en,
                          (unsigned long long)data_len);
    t->offset = (uint64_t)b;
    t->data = data + b;
    return NX_OK;
}

static int by_offset(const void *pa, const void *pb)
{
    const st_tensor *a = pa, *b = pb;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    if (a->nbytes != b->nbytes)
        return a->nbytes < b->nbytes ? -1 : 1;
    return strcmp(a->name, b->name); /* names are unique: a total order */
}

/* The tensors, sorted by begin, must cover [0, data_len) exactly once. */
static nx_status check_tiling(const char *path, const st_file *f,
                              uint64_t data_start, uint64_t data_len,
                              nx_err *err)
{
    uint64_t pos = 0;
    const st_tensor *prev = NULL;
    for (size_t i = 0; i < f->ntensors; i++) {
        const st_tensor *t = &f->tensors[i];
        uint64_t end = t->offset + t->nbytes;
        if (t->offset < pos)
            return nx_err_set(err, NX_EINVAL,
                              "%s: tensor '%s': data_offsets [%llu, %llu] "
                              "overlap tensor '%s' [%llu, %llu]",
                              path, t->name, (unsigned long long)t->offset,
                              (unsigned long long)end, prev->name,
                              (unsigned long long)prev->offset,
                              (unsigned long long)pos);
        if (t->offset > pos)
            return nx_err_set(err, NX_EINVAL,
                              "%s: gap in the data section: bytes [%llu, %llu) "
                              "(file bytes %llu..%llu) belong to no tensor; "
                              "tensor '%s' begins at %llu",
                              path, (unsigned long long)pos,
                              (unsigned long long)t->offset,
                              (unsigned long long)(data_start + pos),
                              (unsigned long long)(data_start + t->offset - 1),
                              t->name, (unsigned long long)t->offset);
        pos = end;
        prev = t;
    }
    if (pos != data_len)
        return nx_err_set(err, NX_EINVAL,
                          "%s: data section has %llu bytes but the tensors "
                          "cover only %llu; bytes [%llu, %llu) (file bytes "
                          "%llu..%llu) belong to no tensor",
                          path, (unsigned long long)data_len,
                          (unsigned long long)pos, (unsigned long long)pos,
                          (unsigned long long)data_len,
                          (unsigned long long)(data_start + pos),
                          (unsigned long long)(data_start + data_len - 1));
    return NX_OK;
}

static nx_status parse_file(const char *path, st_file *f, nx_err *err)
{
    const uint8_t *buf = f->buf;
    size_t len = f->buf_len;
    if (len < 8)
        return nx_err_set(err, NX_EINVAL,
                          "%s: file is %zu bytes, too short for the 8-byte "
                          "header length", path, len);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++)
        n |= (uint64_t)buf[k] << (8 * k);
    if (n > ST_MAX_HEADER_BYTES)
        return nx_err_set(err, NX_EINVAL,
                          "%s: header length %llu (byte 0) exceeds the "
                          "format's limit of %u bytes",
                          path, (unsigned long long)n, ST_MAX_HEADER_BYTES);
    if (n > len - 8)
        return nx_err_set(err, NX_EINVAL,
                          "%s: header length %llu (byte 0) runs past the end "
                          "of the file: %zu bytes, so at most %zu are left "
                          "after byte 8",
                          path, (unsigned long long)n, len, len - 8);
    const char *hdr = (const char *)buf + 8;
    if (n == 0 || hdr[0] != '{')
        return nx_err_set(err, NX_EINVAL,
                          "%s: header at byte 8 is not a JSON object (it must "
                          "begin with '{')", path);

    json_error_t je;
    json_t *root = json_loadb(hdr, (size_t)n,
                              JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK,
                              &je);
    if (!root)
        return nx_err_set(err, NX_EINVAL,
                          "%s: header is invalid JSON at byte %llu (line %d, "
                          "column %d): %s",
                          path, 8ull + (unsigned long long)je.position,
                          je.line, je.column, je.text);
    nx_status rc = NX_OK;
    /* With JSON_DISABLE_EOF_CHECK, je.position is the length of the object;
     * what follows must be the spec's space padding and nothing else. */
    for (uint64_t k = (uint64_t)je.position; k < n; k++) {
        if (hdr[k] != ' ') {
            rc = nx_err_set(err, NX_EINVAL,
                            "%s: header byte %llu after the JSON object is "
                            "0x%02x; only space padding (0x20) may follow it",
                            path, 8ull + (unsigned long long)k,
                            (unsigned)(unsigned char)hdr[k]);
            goto out;
        }
    }
    if (!json_is_object(root)) {
        rc = nx_err_set(err, NX_EINVAL, "%s: header is a JSON %s, not an "
                        "object", path, json_kind(root));
        goto out;
    }

    uint64_t data_start = 8 + n;
    uint64_t data_len = len - data_start;
    uint8_t *data = f->buf + data_start;
    size_t count = json_object_size(root);
    f->tensors = calloc(count ? count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        rc = nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    f->tensors_cap = count;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, META_KEY) == 0) {
            if ((rc = parse_meta(path, v, f, err)))
                goto out;
            continue;
        }
        st_tensor *t = &f->tensors[f->ntensors];
        t->name = strdup(key);
        if (!t->name) {
            rc = nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        f->ntensors++;
        if ((rc = parse_tensor(path, key, v, data, data_len, t, err)))
            goto out;
    }
    qsort(f->tensors, f->ntensors, sizeof *f->tensors, by_offset);
    rc = check_tiling(path, f, data_start, data_len, err);
out:
    json_decref(root);
    return rc;
}

nx_status st_read_bytes(const char *path, uint8_t **out, size_t *len,
                        nx_err *err)
{
    return read_whole(path, out, len, err);
}

/* A file of at least this many bytes is mapped (MAP_PRIVATE: a caller that
 * writes into a tensor gets its own copy of that page), not copied by
 * read(2); where mmap fails (a file system without it) read_whole reads it.
 * Once the header is accepted (never before: a file with a bad header is
 * not read whole), the page tables are filled in one pass with
 * MADV_POPULATE_READ: the pages of the page cache are mapped as they are,
 * read-only until written.
 * (MAP_POPULATE on a private writable mapping breaks copy-on-write for
 * every page: it copied the whole file, and faulted once per page, which
 * was two thirds of `parity reduce`'s time on a 256 MiB input.)  Kernels
 * older than 5.14 lack it and fault the pages in as they are read. */
#define ST_MAP_MIN ((size_t)1 << 20)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static int map_whole(const char *path, st_file *out)
{
    int fd = nx_open_input(path, NULL); /* not a regular file: read_whole says so */
    if (fd < 0)
        return 0;
    struct stat sb;
    void *p = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size >= ST_MAP_MIN &&
        (uintmax_t)sb.st_size <= SIZE_MAX - 1)
        p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    out->buf = p;
    out->buf_len = (size_t)sb.st_size;
    out->buf_mapped = true;
    return 1;
}

nx_status st_read(const char *path, st_file *out, nx_err *err)
{
    st_init(out);
    nx_status rc = map_whole(path, out) ? NX_OK : read_whole(path, &out->buf, &out->buf_len, err);
    if (rc)
        return rc;
    /* the header first: a file it refuses is never read whole (a 20 GB
     * file with a bad 8-byte prefix used to be populated before the check) */
    rc = parse_file(path, out, err);
    if (rc) {
        st_free(out);
        return rc;
    }
    if (out->buf_mapped && madvise(out->buf, out->buf_len, MADV_POPULATE_READ) != 0)
        (void)madvise(out->buf, out->buf_len, MADV_WILLNEED);
    return NX_OK;
}

/* ---- building ----------------------------------------------------------- */

nx_status st_add_tensor(st_file *f, const char *name, st_dtype dtype, int ndim,
                        const int64_t *shape, st_tensor **out, nx_err *err)
{
    if (!name || !*name)
        return nx_err_set(err, NX_EINVAL, "tensor name is empty");
    if (strcmp(name, META_KEY) == 0)
        return nx_err_set(err, NX_EINVAL,
                          "tensor name '" META_KEY "' is reserved");
    if (st_find(f, name))
        return nx_err_set(err, NX_EINVAL, "tensor '%s' already exists", name);
    if ((unsigned)dtype >= ST_DTYPE_COUNT)
        return nx_err_set(err, NX_EINVAL, "tensor '%s': dtype %d is not an "
                          "st_dtype", name, (int)dtype);
    if (ndim < 0 || ndim > ST_MAX_NDIM)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "tensor '%s': %d dimensions, outside 0..%d", name,
                          ndim, ST_MAX_NDIM);
    char who[NX_ERR_MSG_MAX / 2];
    snprintf(who, sizeof who, "tensor '%s'", name);
    st_tensor t = {0};
    t.dtype = dtype;
    t.ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t.shape[d] = shape[d];
    nx_status rc = tensor_size(who, dtype, ndim, t.shape, &t.nelem, &t.nbytes,
                               err);
    if (rc)
        return rc;
    if (t.nbytes > SIZE_MAX - 1 || t.nbytes > (uint64_t)INT64_MAX)
        return nx_err_set(err, NX_ENOMEM, "%s: %llu bytes do not fit in memory",
                          who, (unsigned long long)t.nbytes);
    if (f->ntensors == f->tensors_cap) {
        size_t cap = f->tensors_cap ? 2 * f->tensors_cap : 8;
        st_tensor *p = realloc(f->tensors, cap * sizeof *p);
        if (!p)
            return nx_err_set(err, NX_ENOMEM, "%s: out of memory", who);
        f->tensors = p;
        f->tensors_cap = cap;
    }
    t.name = strdup(name);
    t.data = calloc(t.nbytes ? (size_t)t.nbytes : 1, 1);
    if (!t.name || !t.data) {
        free(t.name);
        free(t.data);
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", who);
    }
    t.owns_data = true;
    /* The offset is fixed at write time (insertion order); 0 until then. */
    f->tensors[f->ntensors] = t;
    if (out)
        *out = &f->tensors[f->ntensors];
    f->ntensors++;
    return NX_OK;
}

nx_status st_add_meta(st_file *f, const char *key, const char *value,
                      nx_err *err)
{
    if (!key || !value)
        return nx_err_set(err, NX_EINVAL, "metadata key or value is NULL");
    if (st_get_meta(f, key))
        return nx_err_set(err, NX_EINVAL, "metadata key '%s' already exists",
                          key);
    if (f->nmeta == f->meta_cap) {
        size_t cap = f->meta_cap ? 2 * f->meta_cap : 8;
        st_meta *p = realloc(f->meta, cap * sizeof *p);
        if (!p)
            return nx_err_set(err, NX_ENOMEM, "metadata '%s': out of memory",
                              key);
        f->meta = p;
        f->meta_cap = cap;
    }
    st_meta m = {strdup(key), strdup(value)};
    if (!m.key || !m.value) {
        free(m.key);
        free(m.value);
        return nx_err_set(err, NX_ENOMEM, "metadata '%s': out of memory", key);
    }
    f->meta[f->nmeta++] = m;
    return NX_OK;
}

/* ---- writing ------------------------------------------------------------ */

/* The compact JSON header, keys in a fixed order: "__metadata__" first, then
 * the tensors in f's order, each {"dtype", "shape", "data_offsets"}.  jansson
 * keeps insertion order when dumping (no JSON_SORT_KEYS). */
static nx_status build_header(const char *path, const st_file *f, char **out,
                              nx_err *err)
{
    nx_status rc = NX_OK;
    json_t *root = json_object();
    if (!root)
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
    if (f->nmeta) {
        json_t *m = json_object();
        if (!m || json_object_set_new(root, META_KEY, m)) {
            rc = nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        for (size_t i = 0; i < f->nmeta; i++) {
            const st_meta *e = &f->meta[i];
            if (json_object_get(m, e->key)) {
                rc = nx_err_set(err, NX_EINVAL,
                                "%s: metadata key '%s' appears twice", path,
                                e->key);
                goto out;
            }
            json_t *s = json_string(e->value);
            if (!s || json_object_set_new(m, e->key, s)) {
                rc = nx_err_set(err, NX_EINVAL,
                                "%s: metadata key '%s': key or value is not "
                                "valid UTF-8", path, e->key);
                goto out;
            }
        }
    }
    uint64_t off = 0;
    for (size_t i = 0; i < f->ntensors; i++) {
        const st_tensor *t = &f->tensors[i];
        char who[NX_ERR_MSG_MAX / 2];
        snprintf(who, sizeof who, "%s: tensor '%s'", path, t->name);
        if (strcmp(t->name, META_KEY) == 0 || json_object_get(root, t->name)) {
            rc = nx_err_set(err, NX_EINVAL, "%s: name is reserved or appears "
                            "twice", who);
            goto out;
        }
        if ((unsigned)t->dtype >= ST_DTYPE_COUNT || t->ndim < 0 ||
            t->ndim > ST_MAX_NDIM) {
            rc = nx_err_set(err, NX_EINVAL, "%s: dtype or ndim out of range",
                            who);
            goto out;
        }
        /* The struct is public: recheck that nbytes still matches. */
        uint64_t nelem, nbytes;
        if ((rc = tensor_size(who, t->dtype, t->ndim, t->shape, &nelem,
                              &nbytes, err)))
            goto out;
        if (nbytes != t->nbytes || (nbytes && !t->data)) {
            rc = nx_err_set(err, NX_EINVAL,
                            "%s: holds %llu bytes but its shape and dtype need "
                            "%llu", who, (unsigned long long)t->nbytes,
                            (unsigned long long)nbytes);
            goto out;
        }
        if (nbytes > (uint64_t)INT64_MAX - off) {
            rc = nx_err_set(err, NX_EINVAL, "%s: data offsets overflow", who);
            goto out;
        }
        json_t *e = json_object();
        json_t *shp = json_array();
        json_t *offs = json_array();
        bool ok = e && shp && offs;
        for (int d = 0; ok && d < t->ndim; d++)
            ok = json_array_append_new(shp, json_integer(t->shape[d])) == 0;
        ok = ok &&
             json_array_append_new(offs, json_integer((json_int_t)off)) == 0 &&
             json_array_append_new(offs,
                                   json_integer((json_int_t)(off + nbytes))) ==
                 0 &&
             json_object_set_new(e, "dtype",
                                 json_string(st_dtype_name(t->dtype))) == 0 &&
             json_object_set(e, "shape", shp) == 0 &&
             json_object_set(e, "data_offsets", offs) == 0;
        json_decref(shp);
        json_decref(offs);
        if (!ok) {
            json_decref(e);
            rc = nx_err_set(err, NX_ENOMEM, "%s: out of memory", who);
            goto out;
        }
        if (json_object_set_new(root, t->name, e)) {
            rc = nx_err_set(err, NX_EINVAL, "%s: name is not valid UTF-8", who);
            goto out;
        }
        off += nbytes;
    }
    *out = json_dumps(root, JSON_COMPACT);
    if (!*out) {
        rc = nx_err_set(err, NX_ENOMEM, "%s: cannot encode the header", path);
        goto out;
    }
out:
    json_decref(root);
    return rc;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory entry of the rename must reach the disk too; some file
 * systems refuse fsync on a directory, so this is best effort. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1)
                      : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* ---- output files ------------------------------------------------------ */

/* Temporary files being written, removed by the signal handler.  Slots are
 * claimed with a compare-and-swap so registration needs no lock. */
#define ST_TMP_SLOTS 32
static char *volatile tmp_slots[ST_TMP_SLOTS];
static volatile sig_atomic_t handlers_installed;

static void on_signal(int sig)
{
    /* files first, then the folders they were in (st_cleanup_track) */
    for (int i = 0; i < ST_TMP_SLOTS; i++) {
        char *p = tmp_slots[i];
        if (p)
            unlink(p); /* async-signal-safe */
    }
    for (int i = 0; i < ST_TMP_SLOTS; i++) {
        char *p = tmp_slots[i];
        if (p)
            rmdir(p); /* async-signal-safe; fails on a file, already gone */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    if (handlers_installed)
        return;
    handlers_installed = 1;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* only where nobody else has set a disposition (a host program
         * using libparity_traces keeps its own) */
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
            sigaddset(&sa.sa_mask, sigs[k]);
        sigaction(sigs[i], &sa, NULL);
    }
}

static void tmp_register(char *tmp)
{
    install_handlers();
    for (int i = 0; i < ST_TMP_SLOTS; i++)
        if (__sync_bool_compare_and_swap(&tmp_slots[i], NULL, tmp))
            return;
    /* all slots busy: still written and renamed, only not cleaned on a signal */
}

static void tmp_unregister(char *tmp)
{
    for (int i = 0; i < ST_TMP_SLOTS; i++)
        if (__sync_bool_compare_and_swap(&tmp_slots[i], tmp, NULL))
            return;
}

void st_cleanup_track(char *path)
{
    tmp_register(path);
}

void st_cleanup_untrack(char *path)
{
    tmp_unregister(path);
}

/* The directory part of path ("." when none) and where its last component
 * starts. */
static char *dir_of(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

#define ST_TMP_BASE 40 /* bytes of the output's name kept in its temporary's */

/* Removes temporaries of path left by a process that no longer exists
 * (killed with SIGKILL, or a power cut): ".BASE.PID.tmp.XXXXXX". */
static void clean_stale(const char *dir, const char *base, size_t blen)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (len < blen + 14 || n[0] != '.' || strncmp(n + 1, base, blen) != 0 || n[1 + blen] != '.')
            continue;
        char *end;
        errno = 0;
        long pid = strtol(n + blen + 2, &end, 10);
        if (errno || pid <= 0 || strncmp(end, ".tmp.", 5) != 0 || (size_t)(end - n) + 11 != len)
            continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        size_t dl = strlen(dir);
        char *full = malloc(dl + len + 2);
        if (full) {
            memcpy(full, dir, dl);
            full[dl] = '/';
            memcpy(full + dl + 1, n, len + 1);
            unlink(full);
            free(full);
        }
    }
    closedir(d);
}

/* The process's umask without changing it (umask(2) can only be read by
 * setting it, which would race with other threads creating files): Linux
 * says it in /proc/self/status; elsewhere it is set and restored. */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned u;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &u) == 1) {
                fclose(f);
                return (mode_t)(u & 0777);
            }
        fclose(f);
    }
    mode_t u = umask(022);
    umask(u);
    return u;
}

nx_status st_output_check(const char *path, nx_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return NX_OK; /* absent (or unreadable: creating the temporary says why) */
    if (S_ISLNK(st.st_mode))
        return nx_err_set(err, NX_EINVAL,
                          "%s: is a symbolic link; give the path it points to (an output is replaced by rename, "
                          "which would replace the link, not its target)", path);
    if (!S_ISREG(st.st_mode))
        return nx_err_set(err, NX_EINVAL, "%s: is not a regular file (%s); outputs are regular files", path,
                          S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                                                                   ? "a device" : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                                   : "a special file");
    return NX_OK;
}

int st_tmp_create(const char *path, char **tmp_out, nx_err *err)
{
    *tmp_out = NULL;
    if (st_output_check(path, err))
        return -1;
    const char *base;
    char *dir = dir_of(path, &base);
    if (!dir) {
        nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
        return -1;
    }
    size_t blen = strlen(base);
    if (blen > ST_TMP_BASE)
        blen = ST_TMP_BASE;
    clean_stale(dir, base, blen);
    /* dir/.BASE.PID.tmp.XXXXXX: at most 40 + 31 bytes of name, so any
     * legal output name has a legal temporary name */
    size_t dl = strlen(dir), cap = dl + blen + 64;
    char *tmp = malloc(cap);
    if (!tmp) {
        free(dir);
        nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, cap, "%s/.%.*s.%ld.tmp.XXXXXX", dir, (int)blen, base, (long)getpid());
    free(dir);
    /* registered before it exists (mkstemp fills in the name in place),
     * so a signal between here and the rename never leaves it behind */
    tmp_register(tmp);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        nx_err_set(err, NX_EIO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        tmp_unregister(tmp);
        free(tmp);
        return -1;
    }
    /* mkstemp makes the file 0600: keep the mode of the file we replace,
     * or give a new one 0666 less the umask, as open(2) would */
    struct stat st;
    mode_t mode;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        mode = st.st_mode & 07777;
    } else {
        mode = 0666 & ~current_umask();
    }
    if (fchmod(fd, mode) != 0) {
        nx_err_set(err, NX_EIO, "%s: cannot set the mode of temporary file %s: %s", path, tmp, strerror(errno));
        close(fd);
        st_tmp_discard(&tmp);
        return -1;
    }
    *tmp_out = tmp;
    return fd;
}

nx_status st_tmp_commit(char **tmp, const char *path, nx_err *err)
{
    nx_status rc = st_output_check(path, err); /* it may have become a link meanwhile */
    if (!rc && rename(*tmp, path) != 0)
        rc = nx_err_set(err, NX_EIO, "%s: cannot rename %s into place: %s (left %s as it was)", path, *tmp,
                        strerror(errno), path);
    if (rc) {
        st_tmp_discard(tmp);
        return rc;
    }
    sync_parent_dir(path);
    tmp_unregister(*tmp);
    free(*tmp);
    *tmp = NULL;
    return NX_OK;
}

void st_tmp_discard(char **tmp)
{
    if (!*tmp)
        return;
    unlink(*tmp);
    tmp_unregister(*tmp);
    free(*tmp);
    *tmp = NULL;
}

/* st_write_atomic (durable) and st_write_scratch (not): the one encoder. */
static nx_status write_file(const char *path, const st_file *f, int durable, nx_err *err)
{
    char *json = NULL;
    nx_status rc = build_header(path, f, &json, err);
    if (rc)
        return rc;
    size_t jlen = strlen(json);
    size_t hlen = (jlen + 7) / 8 * 8;
    if (hlen > ST_MAX_HEADER_BYTES) {
        free(json);
        return nx_err_set(err, NX_EINVAL,
                          "%s: header would be %zu bytes, over the format's "
                          "limit of %u", path, hlen, ST_MAX_HEADER_BYTES);
    }

    /* Same directory as path, so the rename cannot cross file systems. */
    char *tmp = NULL;
    int fd;
    if (durable)
        fd = st_tmp_create(path, &tmp, err);
    else if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
        nx_err_set(err, NX_EIO, "%s: %s", path, strerror(errno));
    if (fd < 0) {
        free(json);
        return err ? err->code : NX_EIO;
    }

    uint64_t at = 0; /* file offset reached, for messages */
    const char *step = "write";
    uint8_t len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (uint8_t)((uint64_t)hlen >> (8 * k));
    if (write_all(fd, len8, 8) != 0)
        goto fail;
    at = 8;
    if (write_all(fd, json, jlen) != 0)
        goto fail;
    at += jlen;
    static const char spaces[8] = "        ";
    if (write_all(fd, spaces, hlen - jlen) != 0)
        goto fail;
    at += hlen - jlen;
    for (size_t i = 0; i < f->ntensors; i++) {
        const st_tensor *t = &f->tensors[i];
        if (t->nbytes && write_all(fd, t->data, (size_t)t->nbytes) != 0)
            goto fail;
        at += t->nbytes;
    }
    step = "fsync";
    if (durable && fsync(fd) != 0)
        goto fail;
    step = "close";
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0)
        goto fail;
    free(json);
    return durable ? st_tmp_commit(&tmp, path, err) : NX_OK;

fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (!durable) {
        free(json);
        return nx_err_set(err, NX_EIO, "%s: %s failed at or after byte %llu: %s", path, step,
                          (unsigned long long)at, strerror(e));
    }
    if (strcmp(step, "write") == 0)
        rc = nx_err_set(err, NX_EIO,
                        "%s: writing temporary file %s failed at or after byte "
                        "%llu: %s (left %s as it was)",
                        path, tmp, (unsigned long long)at, strerror(e), path);
    else
        rc = nx_err_set(err, NX_EIO, "%s: %s of temporary file %s failed: %s "
                        "(left %s as it was)", path, step, tmp, strerror(e),
                        path);
    st_tmp_discard(&tmp);
    free(json);
    return rc;
}

nx_status st_write_atomic(const char *path, const st_file *f, nx_err *err)
{
    return write_file(path, f, 1, err);
}

nx_status st_write_scratch(const char *path, const st_file *f, nx_err *err)
{
    return write_file(path, f, 0, err);
}

/* ---- elements ----------------------------------------------------------- */

uint64_t st_get_bits(const st_tensor *t, const uint8_t *data, size_t i)
{
    unsigned bits = st_dtype_bits(t->dtype);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the file's byte order is the host's: one load (the campaign's
     * bit-for-bit comparisons call this once per element) */
    switch (bits) {
    case 8: return data[i];
    case 16: {
        uint16_t v;
        memcpy(&v, data + 2 * i, 2);
        return v;
    }
    case 32: {
        uint32_t v;
        memcpy(&v, data + 4 * i, 4);
        return v;
    }
    case 64: {
        uint64_t v;
        memcpy(&v, data + 8 * i, 8);
        return v;
    }
    }
#endif
    if (bits % 8 == 0) {
        size_t nb = bits / 8;
        const uint8_t *p = data + i * nb;
        uint64_t v = 0;
        for (size_t k = 0; k < nb; k++)
            v |= (uint64_t)p[k] << (8 * k);
        return v;
    }
    /* Sub-byte: LSB-first bit stream (see the file comment).  An element of
     * at most 8 bits spans at most two bytes; the second is read only when
     * the element reaches into it, so the last element never reads past
     * the tensor. */
    uint64_t bit = (uint64_t)i * bits;
    size_t byte = (size_t)(bit / 8);
    unsigned sh = (unsigned)(bit % 8);
    unsigned v = (unsigned)data[byte] >> sh;
    if (sh + bits > 8)
        v |= (unsigned)data[byte + 1] << (8 - sh);
    return v & ((1u << bits) - 1);
}

void st_put_bits(const st_tensor *t, uint8_t *data, size_t i, uint64_t value)
{
    unsigned bits = st_dtype_bits(t->dtype);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    switch (bits) {
    case 8: data[i] = (uint8_t)value; return;
    case 16: {
        uint16_t v = (uint16_t)value;
        memcpy(data + 2 * i, &v, 2);
        return;
    }
    case 32: {
        uint32_t v = (uint32_t)value;
        memcpy(data + 4 * i, &v, 4);
        return;
    }
    case 64: memcpy(data + 8 * i, &value, 8); return;
    }
#endif
    if (bits % 8 == 0) {
        size_t nb = bits / 8;
        uint8_t *p = data + i * nb;
        for (size_t k = 0; k < nb; k++)
            p[k] = (uint8_t)(value >> (8 * k));
        return;
    }
    unsigned mask = (1u << bits) - 1;
    unsigned v = (unsigned)value & mask;
    uint64_t bit = (uint64_t)i * bits;
    size_t byte = (size_t)(bit / 8);
    unsigned sh = (unsigned)(bit % 8);
    data[byte] = (uint8_t)((data[byte] & ~(mask << sh)) | (v << sh));
    if (sh + bits > 8) {
        unsigned hi = (1u << (sh + bits - 8)) - 1;
        data[byte + 1] =
            (uint8_t)((data[byte + 1] & ~hi) | (v >> (8 - sh)));
    }
}

nx_status st_text_stage(const char *path, const char *text, size_t len, char **tmp, nx_err *err)
{
    *tmp = NULL;
    int fd = st_tmp_create(path, tmp, err); /* short name, mode 0666 & ~umask, removed on signals */
    if (fd < 0)
        return err ? err->code : NX_EIO;
    const char *what = "write";
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            goto fail;
        }
        off += (size_t)w;
    }
    what = "fsync";
    if (fsync(fd) != 0)
        goto fail;
    what = "close";
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    return NX_OK;
fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    nx_status st = nx_err_set(err, NX_EIO, "%s: %s of temporary file %s failed: %s", path, what, *tmp, strerror(e));
    st_tmp_discard(tmp);
    return st;
}

nx_status st_write_text_atomic(const char *path, const char *text, nx_err *err)
{
    char *tmp;
    nx_status st = st_text_stage(path, text, strlen(text), &tmp, err);
    return st ? st : st_tmp_commit(&tmp, path, err);
}
