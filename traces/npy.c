/* npy.c: the strict .npy reader of npy.h.
 *
 * The format (numpy/lib/format.py, "NEP 1"): the magic "\x93NUMPY", one
 * byte each of major and minor version, the header length HL (2 bytes
 * little-endian in 1.0; 4 bytes in 2.0 and 3.0), HL bytes of header, then
 * the data.  The header is the repr of a Python dict with exactly the keys
 * 'descr', 'fortran_order' and 'shape', padded with spaces and ended by
 * '\n'.  3.0 differs from 2.0 only in allowing UTF-8 in the header (for
 * structured field names, which are not accepted here anyway).
 *
 * What the reader checks, each failure naming the byte offset: the magic;
 * the version (1.0, 2.0, 3.0); that the header fits in the file and ends
 * with '\n' after only spaces; the dict's grammar (string keys and values
 * in ' or ", True/False, tuples of decimal integers with the trailing comma
 * Python needs for one element, an optional trailing comma in the dict,
 * spaces between tokens), each key once and no other key; fortran_order
 * False; a descr of npy.h's table; at most ST_MAX_NDIM dimensions; the
 * element count and byte size without overflow; and that the data is
 * exactly as long as the rest of the file. */
#define _POSIX_C_SOURCE 200809L

#include "npy.h"

#include <errno.h>

#include <unistd.h>

#include <sys/stat.h>

#include <fcntl.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct descr_info {
    const char *descr;
    st_dtype dt;
    unsigned bytes;
    bool raw;      /* bits of another format may be meant: a hint may say so */
    bool need_hint;/* void: the bits mean nothing without a hint */
} descr_info;

static const descr_info descrs[] = {
    {"<f2", ST_F16, 2, false, false},
    {"<f4", ST_F32, 4, false, false},
    {"<f8", ST_F64, 8, false, false},
    {"bfloat16", ST_BF16, 2, false, false},
    {"float8_e4m3fn", ST_F8_E4M3, 1, false, false},
    {"float8_e5m2", ST_F8_E5M2, 1, false, false},
    {"float8_e8m0fnu", ST_F8_E8M0, 1, false, false},
    {"|i1", ST_I8, 1, false, false},
    {"<i2", ST_I16, 2, false, false},
    {"<i4", ST_I32, 4, false, false},
    {"<i8", ST_I64, 8, false, false},
    {"|u1", ST_U8, 1, true, false},
    {"<u2", ST_U16, 2, true, false},
    {"<u4", ST_U32, 4, false, false},
    {"<u8", ST_U64, 8, false, false},
    {"|b1", ST_BOOL, 1, false, false},
    {"|V1", ST_U8, 1, true, true},
    {"<V2", ST_U16, 2, true, true},
    {"|V2", ST_U16, 2, true, true},
};

/* ml_dtypes names this reader knows and refuses, with the reason. */
static const struct {
    const char *descr, *why;
} refused[] = {
    {"float8_e4m3fnuz", "its bias and NaN differ from docs/numerics.md e4m3"},
    {"float8_e5m2fnuz", "its bias and NaN differ from docs/numerics.md e5m2"},
    {"float8_e4m3b11fnuz", "it is not a format of docs/numerics.md"},
    {"float8_e4m3", "it has infinities, unlike docs/numerics.md e4m3 (float8_e4m3fn)"},
    {"float8_e3m4", "it is not a format of docs/numerics.md"},
    {"float4_e2m1fn", ".npy stores it one element per byte, safetensors F4 "
                      "packs two"},
    {"float6_e2m3fn", ".npy stores it one element per byte, safetensors F6 "
                      "packs them"},
    {"float6_e3m2fn", ".npy stores it one element per byte, safetensors F6 "
                      "packs them"},
};

void npy_init(npy_array *a)
{
    memset(a, 0, sizeof *a);
}

void npy_free(npy_array *a)
{
    if (!a)
        return;
    free(a->t.name);
    free(a->buf);
    npy_init(a);
}

/* ---- the header's Python literal ------------------------------------------- */

typedef struct hdr {
    const char *who;
    const uint8_t *s;   /* the header's bytes */
    size_t n;           /* how many of them to parse (the '\n' excluded) */
    size_t p;           /* position */
    uint64_t base;      /* file offset of s[0] */
    nx_err *err;
} hdr;

#define AT(h) ((unsigned long long)((h)->base + (h)->p))

static void skip_spaces(hdr *h)
{
    while (h->p < h->n && h->s[h->p] == ' ')
        h->p++;
}

/* What is at the position, for messages. */
static const char *seen(const hdr *h, char buf[24])
{
    if (h->p >= h->n)
        return "the end of the header";
    uint8_t c = h->s[h->p];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 24, "'%c'", c);
    else
        snprintf(buf, 24, "byte 0x%02x", c);
    return buf;
}

static nx_status expected(hdr *h, const char *what)
{
    char b[24];
    return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: expected %s in the "
                      ".npy header, found %s", h->who, AT(h), what,
                      seen(h, b));
}

/* A string literal in ' or " of printable ASCII without escapes, into
 * out[cap]. */
static nx_status parse_string(hdr *h, char *out, size_t cap)
{
    if (h->p >= h->n || (h->s[h->p] != '\'' && h->s[h->p] != '"'))
        return expected(h, "a string");
    uint8_t q = h->s[h->p];
    size_t open = h->p++;
    const uint8_t *close = memchr(h->s + h->p, q, h->n - h->p);
    if (!close)
        return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: the string "
                          "begun here is not closed before the header ends "
                          "at byte %llu", h->who,
                          (unsigned long long)(h->base + open),
                          (unsigned long long)(h->base + h->n));
    size_t end = (size_t)(close - h->s), k = 0;
    for (; h->p < end; h->p++) {
        uint8_t c = h->s[h->p];
        if (c < 0x20 || c > 0x7e || c == '\\')
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: byte 0x%02x "
                              "in a string (only printable ASCII without "
                              "escapes is accepted)", h->who, AT(h), c);
        if (k + 1 >= cap)
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: string "
                              "longer than %zu characters", h->who,
                              (unsigned long long)(h->base + open + 1),
                              cap - 1);
        out[k++] = (char)c;
    }
    out[k] = 0;
    h->p = end + 1;
    return NX_OK;
}

static bool match_word(hdr *h, const char *w)
{
    size_t n = strlen(w);
    if (h->n - h->p < n || memcmp(h->s + h->p, w, n) != 0)
        return false;
    /* "Falsey" is not False. */
    if (h->p + n < h->n) {
        uint8_t c = h->s[h->p + n];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '_')
            return false;
    }
    h->p += n;
    return true;
}

/* (), (N,), (N, M), (N, M,): Python tuples of non-negative integers. */
static nx_status parse_shape(hdr *h, int *ndim, int64_t *shape)
{
    if (h->p >= h->n || h->s[h->p] != '(')
        return expected(h, "a tuple such as (3, 4) for 'shape'");
    h->p++;
    int nd = 0;
    bool comma = false;  /* a comma followed the last element */
    for (;;) {
        skip_spaces(h);
        if (h->p < h->n && h->s[h->p] == ')') {
            if (nd == 1 && !comma)
                return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: (N) is "
                                  "a number, not a tuple: a one-dimensional "
                                  "shape is written (N,)", h->who, AT(h));
            h->p++;
            break;
        }
        if (nd > 0 && !comma)
            return expected(h, "',' or ')' in 'shape'");
        if (h->p >= h->n || h->s[h->p] < '0' || h->s[h->p] > '9')
            return expected(h, "a non-negative integer in 'shape'");
        size_t start = h->p;
        if (h->s[h->p] == '0' && h->p + 1 < h->n && h->s[h->p + 1] >= '0' &&
            h->s[h->p + 1] <= '9')
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: an integer "
                              "with a leading zero in 'shape'", h->who, AT(h));
        uint64_t v = 0;
        while (h->p < h->n && h->s[h->p] >= '0' && h->s[h->p] <= '9') {
            unsigned d = (unsigned)(h->s[h->p] - '0');
            if (v > ((uint64_t)INT64_MAX - d) / 10)
                return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: "
                                  "dimension %d of 'shape' is larger than "
                                  "2^63-1", h->who,
                                  (unsigned long long)(h->base + start), nd);
            v = v * 10 + d;
            h->p++;
        }
        if (nd == ST_MAX_NDIM)
            return nx_err_set(h->err, NX_EUNSUPPORTED, "%s: byte %llu: "
                              "'shape' has more than %d dimensions", h->who,
                              (unsigned long long)(h->base + start),
                              ST_MAX_NDIM);
        shape[nd++] = (int64_t)v;
        skip_spaces(h);
        comma = h->p < h->n && h->s[h->p] == ',';
        if (comma)
            h->p++;
    }
    *ndim = nd;
    return NX_OK;
}

typedef struct parsed {
    char descr[72];
    uint64_t descr_at;
    int ndim;
    int64_t shape[ST_MAX_NDIM];
} parsed;

static nx_status parse_dict(hdr *h, parsed *out)
{
    nx_status rc;
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    bool have[3] = {false, false, false};
    skip_spaces(h);
    if (h->p >= h->n || h->s[h->p] != '{')
        return expected(h, "'{' (the header is a Python dict)");
    h->p++;
    for (;;) {
        skip_spaces(h);
        if (h->p < h->n && h->s[h->p] == '}') {
            h->p++;
            break;
        }
        uint64_t key_at = AT(h);
        char key[72];
        if ((rc = parse_string(h, key, sizeof key)))
            return rc;
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(key, keys[i]) == 0)
                k = i;
        if (k < 0)
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: unknown key "
                              "'%s' in the .npy header (allowed: 'descr', "
                              "'fortran_order', 'shape')", h->who,
                              (unsigned long long)key_at, key);
        if (have[k])
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: key '%s' "
                              "appears twice in the .npy header", h->who,
                              (unsigned long long)key_at, key);
        have[k] = true;
        skip_spaces(h);
        if (h->p >= h->n || h->s[h->p] != ':')
            return expected(h, "':' after a key");
        h->p++;
        skip_spaces(h);
        if (k == 0) {
            out->descr_at = AT(h);
            if (h->p < h->n && h->s[h->p] == '[')
                return nx_err_set(h->err, NX_EUNSUPPORTED, "%s: byte %llu: "
                                  "'descr' is a list: structured dtypes are "
                                  "not supported", h->who, AT(h));
            if ((rc = parse_string(h, out->descr, sizeof out->descr)))
                return rc;
        } else if (k == 1) {
            uint64_t at = AT(h);
            if (match_word(h, "True"))
                return nx_err_set(h->err, NX_EUNSUPPORTED, "%s: byte %llu: "
                                  "'fortran_order' is True: only C order "
                                  "(row-major) arrays are read; save with "
                                  "np.ascontiguousarray", h->who,
                                  (unsigned long long)at);
            if (!match_word(h, "False"))
                return expected(h, "True or False for 'fortran_order'");
        } else if ((rc = parse_shape(h, &out->ndim, out->shape))) {
            return rc;
        }
        skip_spaces(h);
        if (h->p < h->n && h->s[h->p] == ',') {
            h->p++;
            continue;
        }
        if (h->p < h->n && h->s[h->p] == '}') {
            h->p++;
            break;
        }
        return expected(h, "',' or '}' after a value");
    }
    for (int i = 0; i < 3; i++)
        if (!have[i])
            return nx_err_set(h->err, NX_EINVAL, "%s: byte %llu: the .npy "
                              "header has no key '%s'", h->who, AT(h) - 1,
                              keys[i]);
    skip_spaces(h);
    if (h->p < h->n)
        return expected(h, "only space padding after the dict");
    return NX_OK;
}

/* ---- dtype -------------------------------------------------------------------- */

static nx_status resolve_dtype(const char *who, const parsed *ps,
                               const char *hint, st_dtype *dt, unsigned *bytes,
                               nx_err *err)
{
    unsigned long long at = (unsigned long long)ps->descr_at;
    const char *d = ps->descr;
    const descr_info *di = NULL;
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (strcmp(d, descrs[i].descr) == 0)
            di = &descrs[i];
    if (!di) {
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (strcmp(d, refused[i].descr) == 0)
                return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte %llu: descr "
                                  "'%s' is not supported: %s", who, at, d,
                                  refused[i].why);
        if (d[0] == '>')
            return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte %llu: descr "
                              "'%s' is big-endian; only little-endian data is "
                              "read", who, at, d);
        if (d[0] == '=')
            return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte %llu: descr "
                              "'%s' is in the writer's native byte order, "
                              "which the file does not record", who, at, d);
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte %llu: descr '%s' is "
                          "not supported (see npy.h for the accepted ones)",
                          who, at, d);
    }
    *dt = di->dt;
    *bytes = di->bytes;
    if (!hint) {
        if (di->need_hint)
            return nx_err_set(err, NX_EINVAL, "%s: byte %llu: descr '%s' is "
                              "raw bytes: a dtype hint (bf16, e4m3, ...) must "
                              "say what they hold", who, at, d);
        return NX_OK;
    }
    st_dtype h;
    if (!trace_dtype_from_name(hint, &h))
        return nx_err_set(err, NX_EINVAL, "%s: dtype hint '%s' is not a dtype "
                          "(a format such as bf16 or a safetensors name such "
                          "as BF16)", who, hint);
    unsigned hbits = st_dtype_bits(h);
    if (hbits % 8 != 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: dtype hint '%s' is %s, a "
                          "packed sub-byte dtype; .npy holds one element per "
                          "byte", who, hint, st_dtype_name(h));
    if (di->raw) {
        if (hbits != 8 * di->bytes)
            return nx_err_set(err, NX_EINVAL, "%s: byte %llu: descr '%s' "
                              "holds %u-bit elements but the dtype hint '%s' "
                              "is %s, %u bits", who, at, d, 8 * di->bytes,
                              hint, st_dtype_name(h), hbits);
        *dt = h;
        return NX_OK;
    }
    if (h != di->dt)
        return nx_err_set(err, NX_EINVAL, "%s: byte %llu: descr '%s' is %s "
                          "but the dtype hint '%s' says %s", who, at, d,
                          st_dtype_name(di->dt), hint, st_dtype_name(h));
    return NX_OK;
}

/* ---- the file --------------------------------------------------------------- */

/* "y" for "dir/y.npy". */
static char *stem(const char *who)
{
    const char *b = strrchr(who, '/');
    b = b ? b + 1 : who;
    size_t n = strlen(b);
    if (n > 4 && strcmp(b + n - 4, ".npy") == 0)
        n -= 4;
    return strndup(b, n);
}

/* npy_parse over the first blen bytes of a file of len bytes: with blen <
 * len only the header is read (its data is not there; out is not filled),
 * so that a bad header is said without reading the whole file. */
static nx_status parse_impl(const char *who, const uint8_t *buf, size_t blen, size_t len, const char *hint,
                            npy_array *out, nx_err *err)
{
    npy_init(out);
    if (len < 8)
        return nx_err_set(err, NX_EINVAL, "%s: byte %zu: the file ends inside "
                          "the 8 bytes of magic and version", who, len);
    if (memcmp(buf, magic, sizeof magic) != 0)
        return nx_err_set(err, NX_EINVAL, "%s: byte 0: not a .npy file (the "
                          "magic \\x93NUMPY is missing)", who);
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte 6: .npy format "
                          "version %d.%d is not supported (1.0, 2.0 and 3.0 "
                          "are)", who, major, minor);
    size_t lbytes = major == 1 ? 2 : 4;
    if (len < 8 + lbytes)
        return nx_err_set(err, NX_EINVAL, "%s: byte %zu: the file ends inside "
                          "the %zu-byte header length", who, len, lbytes);
    uint64_t hl = 0;
    for (size_t k = 0; k < lbytes; k++)
        hl |= (uint64_t)buf[8 + k] << (8 * k);
    uint64_t h0 = 8 + lbytes;
    if (blen < len && hl > blen - h0 && hl <= len - h0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: byte 8: a .npy header of %llu bytes: more than the %zu this "
                          "reader takes", who, (unsigned long long)hl, blen - (size_t)h0);
    if (hl > len - h0)
        return nx_err_set(err, NX_EINVAL, "%s: byte 8: header length %llu runs "
                          "past the end of the file (the header would end at "
                          "byte %llu; the file has %zu bytes)", who,
                          (unsigned long long)hl,
                          (unsigned long long)(h0 + hl), len);
    if (hl == 0 || buf[h0 + hl - 1] != '\n')
        return nx_err_set(err, NX_EINVAL, "%s: byte %llu: the .npy header "
                          "does not end with '\\n'", who,
                          (unsigned long long)(hl ? h0 + hl - 1 : h0));
    hdr h = {who, buf + h0, (size_t)hl - 1, 0, h0, err};
    parsed ps;
    memset(&ps, 0, sizeof ps);
    nx_status rc = parse_dict(&h, &ps);
    if (rc)
        return rc;
    st_dtype dt = ST_U8;
    unsigned isz = 1;
    if ((rc = resolve_dtype(who, &ps, hint, &dt, &isz, err)))
        return rc;

    uint64_t nelem = 1, nbytes;
    for (int d = 0; d < ps.ndim; d++) {
        uint64_t e = (uint64_t)ps.shape[d];
        if (e != 0 && nelem > UINT64_MAX / e)
            return nx_err_set(err, NX_EINVAL, "%s: byte %llu: the element "
                              "count of 'shape' overflows 64 bits", who,
                              (unsigned long long)h0);
        nelem *= e;
    }
    if (nelem > UINT64_MAX / isz)
        return nx_err_set(err, NX_EINVAL, "%s: byte %llu: the byte size of "
                          "'shape' overflows 64 bits", who,
                          (unsigned long long)h0);
    nbytes = nelem * isz;
    uint64_t start = h0 + hl, avail = len - start;
    if (nbytes > avail)
        return nx_err_set(err, NX_EINVAL, "%s: byte %zu: data truncated: %llu "
                          "elements of %s need %llu bytes from byte %llu, but "
                          "the file ends at byte %zu, %llu bytes short", who,
                          len, (unsigned long long)nelem, ps.descr,
                          (unsigned long long)nbytes,
                          (unsigned long long)start, len,
                          (unsigned long long)(nbytes - avail));
    if (nbytes < avail)
        return nx_err_set(err, NX_EINVAL, "%s: byte %llu: %llu bytes follow "
                          "the end of the data (%llu bytes from byte %llu)",
                          who, (unsigned long long)(start + nbytes),
                          (unsigned long long)(avail - nbytes),
                          (unsigned long long)nbytes,
                          (unsigned long long)start);
    if (blen < len)
        return NX_OK; /* the header alone: it holds */

    out->t.name = stem(who);
    if (!out->t.name)
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", who);
    out->t.dtype = dt;
    out->t.ndim = ps.ndim;
    memcpy(out->t.shape, ps.shape, sizeof ps.shape);
    out->t.nelem = nelem;
    out->t.offset = 0;
    out->t.nbytes = nbytes;
    out->t.data = (uint8_t *)(uintptr_t)(buf + start);
    out->t.owns_data = false;
    out->major = major;
    out->minor = minor;
    out->data_offset = start;
    return NX_OK;
}

nx_status npy_parse(const char *who, const uint8_t *buf, size_t len,
                    const char *hint, npy_array *out, nx_err *err)
{
    return parse_impl(who, buf, len, len, hint, out, err);
}

/* The header of a file checked before the whole file is read: a bad one
 * is said at once, not after gigabytes.  Only the header's own bytes are
 * read for it (the 8 + 2 or 4 bytes of magic, version and length, then the
 * length), at most NPY_HEAD_MAX. */
#define NPY_HEAD_MAX ((size_t)1 << 20)

static size_t read_upto(int fd, uint8_t *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            break;
    }
    return got;
}

nx_status npy_read(const char *path, const char *hint, npy_array *out,
                   nx_err *err)
{
    npy_init(out);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    uint8_t pre[12];
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && read_upto(fd, pre, sizeof pre) == sizeof pre &&
        !memcmp(pre, magic, sizeof magic) && pre[6] >= 1 && pre[6] <= 3) {
        size_t h0 = pre[6] == 1 ? 10 : 12;
        uint64_t hl = pre[8] | (uint64_t)pre[9] << 8 | (pre[6] == 1 ? 0 : (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24);
        size_t want = h0 + (hl < NPY_HEAD_MAX ? (size_t)hl : NPY_HEAD_MAX);
        uint8_t *head = (uint64_t)sb.st_size > want ? malloc(want) : NULL;
        if (head) { /* smaller files are read whole at once below */
            memcpy(head, pre, sizeof pre);
            size_t got = sizeof pre + read_upto(fd, head + sizeof pre, want - sizeof pre);
            nx_status hr = got == want ? parse_impl(path, head, got, (size_t)sb.st_size, hint, out, err) : NX_OK;
            free(head);
            npy_init(out);
            if (hr) {
                close(fd);
                return hr;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    uint8_t *buf;
    size_t size;
    nx_status rc = st_read_bytes(path, &buf, &size, err);
    if (rc)
        return rc;
    rc = npy_parse(path, buf, size, hint, out, err);
    if (rc) {
        free(buf);
        return rc;
    }
    out->buf = buf;
    out->buf_len = size;
    return NX_OK;
}
