/* trace.c: reading, validating and writing traces (docs/traces.md).
 *
 * One validator (parse_trace) serves the reader and the writer: trace_write
 * builds the metadata, runs it over what it is about to write, and only
 * then touches the disk.  The metadata keys are checked in a fixed order
 * (the order of docs/traces.md), so a file missing several keys is always
 * reported by the first of them. */
#define _POSIX_C_SOURCE 200809L

#include "trace.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define META "__metadata__"

/* ---- small helpers -------------------------------------------------------- */

/* s in quotes for a message, cut to about 60 characters. */
#define CLIP_CAP 112
static const char *clip(char buf[CLIP_CAP], const char *s)
{
    size_t n = strlen(s);
    if (n <= 60)
        snprintf(buf, CLIP_CAP, "'%s'", s);
    else
        snprintf(buf, CLIP_CAP, "'%.57s...' (%zu characters)", s, n);
    return buf;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha_(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

typedef enum { UINT_OK, UINT_NONE, UINT_LEADING_ZERO, UINT_TOO_BIG } uint_rc;

/* A decimal integer without sign or leading zeros ("0" itself is fine),
 * at most max, starting at s[*pos]; *pos moves past it. */
static uint_rc parse_uint(const char *s, size_t *pos, uint64_t max,
                          uint64_t *out)
{
    size_t p = *pos;
    if (!is_digit(s[p]))
        return UINT_NONE;
    if (s[p] == '0' && is_digit(s[p + 1]))
        return UINT_LEADING_ZERO;
    uint64_t v = 0;
    for (; is_digit(s[p]); p++) {
        unsigned d = (unsigned)(s[p] - '0');
        if (v > (max - d) / 10)
            return UINT_TOO_BIG;
        v = v * 10 + d;
    }
    *pos = p;
    *out = v;
    return UINT_OK;
}

/* The message for a failed parse_uint at column col of s. */
static nx_status uint_error(nx_err *err, uint_rc rc, const char *s, size_t col,
                            uint64_t max)
{
    char q[CLIP_CAP];
    if (rc == UINT_LEADING_ZERO)
        return nx_err_set(err, NX_EINVAL, "%s: column %zu: a number has a "
                          "leading zero", clip(q, s), col);
    if (rc == UINT_TOO_BIG)
        return nx_err_set(err, NX_EINVAL, "%s: column %zu: the number is "
                          "larger than %llu", clip(q, s), col,
                          (unsigned long long)max);
    return nx_err_set(err, NX_EINVAL, "%s: column %zu: expected a "
                      "non-negative decimal integer", clip(q, s), col);
}

/* A whole string that is one decimal integer <= max. */
static bool whole_uint(const char *s, uint64_t max, uint64_t *out)
{
    size_t p = 0;
    return parse_uint(s, &p, max, out) == UINT_OK && s[p] == 0;
}

bool trace_is_name(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!(is_alpha_(c) || is_digit(c) || c == '-'))
            return false;
    }
    return n >= 1 && n <= 128;
}

bool trace_is_tensor_name(const char *s)
{
    if (!is_alpha_(s[0]))
        return false;
    size_t n = 1;
    for (; s[n]; n++)
        if (!(is_alpha_(s[n]) || is_digit(s[n])))
            return false;
    return n <= 128;
}

bool trace_is_token(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e)
            return false;
    return n >= 1 && n <= 256;
}

/* A dimension or param name at s[*pos]: [A-Za-z_][A-Za-z0-9_]{0,127}. */
static bool scan_ident(const char *s, size_t *pos)
{
    size_t p = *pos;
    if (!is_alpha_(s[p]))
        return false;
    while (is_alpha_(s[p]) || is_digit(s[p]))
        p++;
    if (p - *pos > 128)
        return false;
    *pos = p;
    return true;
}

/* ---- shape and params -------------------------------------------------------- */

static void free_dims(trace_dim *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(d[i].name);
    free(d);
}

static void free_params(trace_param *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].value);
    }
    free(p);
}

/* Number of comma-separated items (one more than the commas). */
static size_t count_items(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

static bool is_value_char(char c)
{
    return (unsigned char)c >= 0x21 && (unsigned char)c <= 0x7e && c != ',' &&
           c != '=';
}

/* NAME=VALUE,NAME=VALUE... with distinct names: the shape (what =
 * "dimension", values uints <= INT64_MAX) and the params (what = "param",
 * values 1..256 characters of is_value_char).  s is not empty. */
static nx_status parse_kv(const char *s, const char *what, bool numeric,
                          trace_param **out, size_t *n, nx_err *err)
{
    char q[CLIP_CAP];
    size_t cap = count_items(s);
    trace_param *d = calloc(cap, sizeof *d);
    if (!d)
        return nx_err_set(err, NX_ENOMEM, "%ss: out of memory", what);
    size_t cnt = 0, p = 0;
    nx_status rc = NX_OK;
    for (;;) {
        size_t start = p;
        if (!scan_ident(s, &p)) {
            rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: expected a %s "
                            "name ([A-Za-z_][A-Za-z0-9_]*, at most 128 "
                            "characters)", clip(q, s), start + 1, what);
            goto fail;
        }
        size_t nlen = p - start;
        for (size_t i = 0; i < cnt; i++)
            if (strlen(d[i].name) == nlen &&
                memcmp(d[i].name, s + start, nlen) == 0) {
                rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: %s '%s' "
                                "appears twice", clip(q, s), start + 1, what,
                                d[i].name);
                goto fail;
            }
        if (s[p] != '=') {
            rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: expected '=' "
                            "after the %s name", clip(q, s), p + 1, what);
            goto fail;
        }
        size_t vstart = ++p;
        if (numeric) {
            uint64_t v;
            uint_rc u = parse_uint(s, &p, (uint64_t)INT64_MAX, &v);
            if (u != UINT_OK) {
                rc = uint_error(err, u, s, vstart + 1, (uint64_t)INT64_MAX);
                goto fail;
            }
        } else {
            while (is_value_char(s[p]))
                p++;
            if (p == vstart || p - vstart > 256) {
                rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: expected a "
                                "value of 1 to 256 printable characters other "
                                "than ',' '=' and space", clip(q, s),
                                vstart + 1);
                goto fail;
            }
        }
        d[cnt].name = strndup(s + start, nlen);
        d[cnt].value = strndup(s + vstart, p - vstart);
        cnt++;
        if (!d[cnt - 1].name || !d[cnt - 1].value) {
            rc = nx_err_set(err, NX_ENOMEM, "%ss: out of memory", what);
            goto fail;
        }
        if (s[p] == 0)
            break;
        if (s[p] != ',') {
            rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: expected ',' or "
                            "the end after a %s", clip(q, s), p + 1, what);
            goto fail;
        }
        p++;
    }
    *out = d;
    *n = cnt;
    return NX_OK;
fail:
    free_params(d, cnt);
    return rc;
}

nx_status trace_parse_shape(const char *s, trace_dim **dims, size_t *n,
                            nx_err *err)
{
    *dims = NULL;
    *n = 0;
    if (!*s)
        return nx_err_set(err, NX_EINVAL, "'': a shape needs at least one "
                          "dimension (NAME=VALUE)");
    trace_param *kv;
    size_t cnt;
    nx_status rc = parse_kv(s, "dimension", true, &kv, &cnt, err);
    if (rc)
        return rc;
    trace_dim *d = calloc(cnt, sizeof *d);
    if (!d) {
        free_params(kv, cnt);
        return nx_err_set(err, NX_ENOMEM, "dimensions: out of memory");
    }
    for (size_t i = 0; i < cnt; i++) {
        d[i].name = kv[i].name;  /* moved */
        d[i].value = (int64_t)strtoll(kv[i].value, NULL, 10); /* checked */
        free(kv[i].value);
    }
    free(kv);
    *dims = d;
    *n = cnt;
    return NX_OK;
}

nx_status trace_parse_params(const char *s, trace_param **params, size_t *n,
                             nx_err *err)
{
    *params = NULL;
    *n = 0;
    return *s ? parse_kv(s, "param", false, params, n, err) : NX_OK;
}

/* ---- batch ---------------------------------------------------------------- */

/* Row indices stay below 2^62 so that range arithmetic cannot overflow. */
#define ROW_MAX ((uint64_t)1 << 62)

typedef struct row_at {
    int64_t row;
    size_t col;   /* column of the item that produced it, 1-based */
} row_at;

static int by_row(const void *a, const void *b)
{
    const row_at *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->col < y->col ? -1 : x->col > y->col;
}

/* One pass over the items after the "=": checks the syntax, counts the
 * rows, and fills out[] (with the item's column) when it is not NULL. */
static nx_status scan_batch(const char *s, size_t p, bool perm, row_at *out,
                            size_t *count, nx_err *err)
{
    char q[CLIP_CAP];
    size_t cnt = 0;
    if (s[p] == 0)
        return nx_err_set(err, NX_EINVAL, "%s: column %zu: no rows after "
                          "'='", clip(q, s), p + 1);
    for (;;) {
        size_t col = p + 1;
        uint64_t a, b;
        uint_rc u = parse_uint(s, &p, ROW_MAX - 1, &a);
        if (u != UINT_OK)
            return uint_error(err, u, s, col, ROW_MAX - 1);
        b = a;
        if (s[p] == '.') {
            if (s[p + 1] != '.')
                return nx_err_set(err, NX_EINVAL, "%s: column %zu: expected "
                                  "'..' in a range", clip(q, s), p + 1);
            p += 2;
            size_t bcol = p + 1;
            u = parse_uint(s, &p, ROW_MAX - 1, &b);
            if (u != UINT_OK)
                return uint_error(err, u, s, bcol, ROW_MAX - 1);
            if (b < a && !perm)
                return nx_err_set(err, NX_EINVAL, "%s: column %zu: range "
                                  "%llu..%llu descends; rows= lists rows in "
                                  "increasing order (a permuted batch is "
                                  "perm=)", clip(q, s), col,
                                  (unsigned long long)a,
                                  (unsigned long long)b);
        }
        uint64_t len = (b >= a ? b - a : a - b) + 1;
        if (len > TRACE_MAX_BATCH_ROWS - cnt)
            return nx_err_set(err, NX_EINVAL, "%s: column %zu: the batch "
                              "expands to more than %u rows", clip(q, s), col,
                              TRACE_MAX_BATCH_ROWS);
        if (out)
            for (uint64_t k = 0; k < len; k++) {
                uint64_t r = b >= a ? a + k : a - k;
                out[cnt + k].row = (int64_t)r;
                out[cnt + k].col = col;
            }
        cnt += (size_t)len;
        if (s[p] == 0)
            break;
        if (s[p] != ',')
            return nx_err_set(err, NX_EINVAL, "%s: column %zu: expected ',' "
                              "'..' or the end after a row", clip(q, s),
                              p + 1);
        p++;
    }
    *count = cnt;
    return NX_OK;
}

nx_status trace_parse_batch(const char *s, trace_batch_kind *kind,
                            int64_t **rows, size_t *nrows, nx_err *err)
{
    char q[CLIP_CAP];
    *rows = NULL;
    *nrows = 0;
    bool perm;
    if (strncmp(s, "rows=", 5) == 0)
        perm = false;
    else if (strncmp(s, "perm=", 5) == 0)
        perm = true;
    else
        return nx_err_set(err, NX_EINVAL, "%s: column 1: expected 'rows=' or "
                          "'perm='", clip(q, s));
    size_t cnt;
    nx_status rc = scan_batch(s, 5, perm, NULL, &cnt, err);
    if (rc)
        return rc;
    row_at *at = malloc(cnt * sizeof *at);
    int64_t *r = malloc(cnt * sizeof *r);
    if (!at || !r) {
        free(at);
        free(r);
        return nx_err_set(err, NX_ENOMEM, "batch: out of memory");
    }
    scan_batch(s, 5, perm, at, &cnt, NULL);
    for (size_t i = 0; i < cnt; i++)
        r[i] = at[i].row;
    if (!perm) {
        for (size_t i = 1; i < cnt; i++)
            if (at[i].row <= at[i - 1].row) {
                rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: row %lld "
                                "does not come after row %lld; rows= lists "
                                "distinct rows in increasing order",
                                clip(q, s), at[i].col, (long long)at[i].row,
                                (long long)at[i - 1].row);
                goto out;
            }
    } else {
        /* The usual perm= is dense (a permutation of 0..n-1): one bit per
         * row finds the second occurrence in one pass.  Sparse rows are
         * sorted by row then column instead, so a duplicate sits next to
         * its first occurrence; either way the later column is reported. */
        int64_t max = 0;
        for (size_t i = 0; i < cnt; i++)
            max = at[i].row > max ? at[i].row : max;
        uint8_t *seen = (uint64_t)max < 8 * (uint64_t)cnt + 1024
                            ? calloc((size_t)max / 8 + 1, 1) : NULL;
        size_t dup = cnt;
        if (seen) {
            for (size_t i = 0; i < cnt && dup == cnt; i++) {
                size_t r = (size_t)at[i].row;
                if (seen[r / 8] & (1u << (r % 8)))
                    dup = i;
                seen[r / 8] |= (uint8_t)(1u << (r % 8));
            }
            free(seen);
        } else {
            qsort(at, cnt, sizeof *at, by_row);
            for (size_t i = 1; i < cnt && dup == cnt; i++)
                if (at[i].row == at[i - 1].row)
                    dup = i;
        }
        if (dup < cnt) {
            rc = nx_err_set(err, NX_EINVAL, "%s: column %zu: row %lld appears "
                            "twice", clip(q, s), at[dup].col,
                            (long long)at[dup].row);
            goto out;
        }
    }
out:
    free(at);
    if (rc) {
        free(r);
        return rc;
    }
    *kind = perm ? TRACE_BATCH_PERM : TRACE_BATCH_ROWS;
    *rows = r;
    *nrows = cnt;
    return NX_OK;
}

/* ---- created --------------------------------------------------------------- */

static int digits_at(const char *s, size_t p, size_t n, int *out)
{
    int v = 0;
    for (size_t k = 0; k < n; k++) {
        if (!is_digit(s[p + k]))
            return 0;
        v = v * 10 + (s[p + k] - '0');
    }
    *out = v;
    return 1;
}

nx_status trace_check_created(const char *s, nx_err *err)
{
    char q[CLIP_CAP];
    /* YYYY-MM-DDTHH:MM:SS[.fraction]Z */
    static const char tmpl[] = "dddd-dd-ddTdd:dd:dd";
    for (size_t p = 0; p < sizeof tmpl - 1; p++) {
        bool ok = tmpl[p] == 'd' ? is_digit(s[p]) : s[p] == tmpl[p];
        if (!ok)
            return nx_err_set(err, NX_EINVAL, "%s: column %zu: expected %s "
                              "(RFC 3339 UTC: YYYY-MM-DDTHH:MM:SSZ, optional "
                              "fraction of a second)", clip(q, s), p + 1,
                              tmpl[p] == 'd' ? "a digit" :
                              tmpl[p] == '-' ? "'-'" :
                              tmpl[p] == 'T' ? "'T'" : "':'");
    }
    size_t p = sizeof tmpl - 1;
    if (s[p] == '.') {
        size_t f = ++p;
        while (is_digit(s[p]))
            p++;
        if (p == f || p - f > 9)
            return nx_err_set(err, NX_EINVAL, "%s: column %zu: a fraction of "
                              "a second has 1 to 9 digits", clip(q, s), f + 1);
    }
    if (s[p] != 'Z' || s[p + 1] != 0)
        return nx_err_set(err, NX_EINVAL, "%s: column %zu: expected 'Z' and "
                          "the end (the time must be UTC)", clip(q, s), p + 1);
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
    digits_at(s, 0, 4, &y);
    digits_at(s, 5, 2, &mo);
    digits_at(s, 8, 2, &d);
    digits_at(s, 11, 2, &h);
    digits_at(s, 14, 2, &mi);
    digits_at(s, 17, 2, &se);
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12)
        return nx_err_set(err, NX_EINVAL, "%s: column 6: month %d is not 1 to "
                          "12", clip(q, s), mo);
    int dmax = mdays[mo - 1] - (mo == 2 && !leap);
    if (d < 1 || d > dmax)
        return nx_err_set(err, NX_EINVAL, "%s: column 9: day %d is not 1 to "
                          "%d", clip(q, s), d, dmax);
    if (h > 23)
        return nx_err_set(err, NX_EINVAL, "%s: column 12: hour %d is not 0 "
                          "to 23", clip(q, s), h);
    if (mi > 59)
        return nx_err_set(err, NX_EINVAL, "%s: column 15: minute %d is not 0 "
                          "to 59", clip(q, s), mi);
    if (se > 60) /* 60: a leap second */
        return nx_err_set(err, NX_EINVAL, "%s: column 18: second %d is not 0 "
                          "to 60", clip(q, s), se);
    return NX_OK;
}

/* ---- device ------------------------------------------------------------------ */

char trace_device_member_kind(const char *key)
{
    static const struct {
        const char *key;
        char kind;
    } known[] = {
        {"sku", 's'}, {"driver", 's'}, {"nvcc", 's'}, {"host", 's'},
        {"cpu", 's'}, {"sm_count", 'i'}, {"threads", 'i'},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(key, known[i].key) == 0)
            return known[i].kind;
    return 0;
}

static void free_device(trace_device *d)
{
    free(d->json);
    free(d->sku);
    free(d->driver);
    free(d->nvcc);
    free(d->host);
    free(d->cpu);
    memset(d, 0, sizeof *d);
    d->sm_count = d->threads = -1;
}

/* Errors are prefixed by the caller ("FILE: __metadata__ key 'device'"). */
static nx_status parse_device(const char *s, trace_device *d, nx_err *err)
{
    char q[CLIP_CAP];
    json_error_t je;
    json_t *root = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return nx_err_set(err, NX_EINVAL, "%s: column %d: not JSON: %s",
                          clip(q, s), je.column, je.text);
    nx_status rc = NX_OK;
    if (!json_is_object(root)) {
        rc = nx_err_set(err, NX_EINVAL, "%s: not a JSON object", clip(q, s));
        goto out;
    }
    d->json = strdup(s);
    if (!d->json) {
        rc = nx_err_set(err, NX_ENOMEM, "device: out of memory");
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        char kind = trace_device_member_kind(key);
        if (kind == 's' && !json_is_string(v)) {
            rc = nx_err_set(err, NX_EINVAL, "member '%s' must be a string",
                            key);
            goto out;
        }
        if (kind == 'i' && (!json_is_integer(v) || json_integer_value(v) < 0)) {
            rc = nx_err_set(err, NX_EINVAL, "member '%s' must be a "
                            "non-negative integer", key);
            goto out;
        }
        if (!kind && !json_is_string(v) && !json_is_integer(v) &&
            !json_is_boolean(v)) {
            rc = nx_err_set(err, NX_EINVAL, "member '%s' must be a string, an "
                            "integer or a boolean", key);
            goto out;
        }
        char **slot = strcmp(key, "sku") == 0      ? &d->sku
                      : strcmp(key, "driver") == 0 ? &d->driver
                      : strcmp(key, "nvcc") == 0   ? &d->nvcc
                      : strcmp(key, "host") == 0   ? &d->host
                      : strcmp(key, "cpu") == 0    ? &d->cpu
                                                   : NULL;
        if (slot && !(*slot = strdup(json_string_value(v)))) {
            rc = nx_err_set(err, NX_ENOMEM, "device: out of memory");
            goto out;
        }
        if (strcmp(key, "sm_count") == 0)
            d->sm_count = (int64_t)json_integer_value(v);
        if (strcmp(key, "threads") == 0)
            d->threads = (int64_t)json_integer_value(v);
    }
out:
    json_decref(root);
    return rc;
}

/* ---- the validator ------------------------------------------------------------- */

void trace_init(trace *t)
{
    memset(t, 0, sizeof *t);
    st_init(&t->file);
    t->device.sm_count = t->device.threads = -1;
}

/* Frees what parse_trace allocated, not the file. */
static void free_parsed(trace *t)
{
    free_device(&t->device);
    free_dims(t->shape, t->nshape);
    free_params(t->params, t->nparams);
    free(t->rows);
    t->shape = NULL;
    t->params = NULL;
    t->rows = NULL;
    t->nshape = t->nparams = t->nrows = 0;
}

void trace_free(trace *t)
{
    if (!t)
        return;
    free_parsed(t);
    st_free(&t->file);
    free(t->path);
    trace_init(t);
}

/* The order in which keys are checked and documented. */
static const char *const standard_keys[] = {
    "parity.trace", "family", "point", "class", "kernel", "device", "shape",
    "params", "seed", "dist", "mode", "run", "batch", "created", "producer",
    "negative_control", "expected_fail",
};

static const char *const tier1_checks[] = {"determinism", "eager_graphed", "new_legacy", "rows"};

bool trace_is_tier1_check(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof tier1_checks / sizeof *tier1_checks; i++)
        if (strlen(tier1_checks[i]) == len && strncmp(s, tier1_checks[i], len) == 0)
            return true;
    return false;
}

/* "negative_control" and "expected_fail": both or neither (a "false"
 * control without expected_fail is allowed); expected_fail is a
 * comma-separated list of Tier 1 check names, each once. */
static nx_status parse_negative(const char *who, const st_file *f, trace *t,
                                nx_err *err)
{
    char q[CLIP_CAP];
    const char *nc = st_get_meta(f, "negative_control");
    const char *ef = st_get_meta(f, "expected_fail");
    if (nc && strcmp(nc, "true") != 0 && strcmp(nc, "false") != 0)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key "
                          "'negative_control' is %s; expected 'true' or "
                          "'false'", who, clip(q, nc));
    t->negative_control = nc && strcmp(nc, "true") == 0;
    if (t->negative_control && !ef)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'expected_fail'"
                          " is missing (required with negative_control = "
                          "true: which Tier 1 checks the kernel is built to "
                          "fail)", who);
    if (ef && !t->negative_control)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'expected_fail'"
                          " without negative_control = true", who);
    if (!ef)
        return NX_OK;
    const char *p = ef;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!trace_is_tier1_check(p, l))
            return nx_err_set(err, NX_EINVAL, "%s: " META " key "
                              "'expected_fail': %s: column %zu: '%.*s' is not"
                              " a Tier 1 check (determinism, eager_graphed, "
                              "new_legacy, rows)", who, clip(q, ef),
                              (size_t)(p - ef) + 1, (int)(l > 64 ? 64 : l), p);
        for (const char *r = ef; r < p;) {
            const char *re = strchr(r, ',');
            if ((size_t)(re - r) == l && strncmp(r, p, l) == 0)
                return nx_err_set(err, NX_EINVAL, "%s: " META " key "
                                  "'expected_fail': %s: column %zu: '%.*s' "
                                  "appears twice", who, clip(q, ef),
                                  (size_t)(p - ef) + 1, (int)l, p);
            r = re + 1;
        }
        if (!e)
            break;
        p = e + 1;
    }
    t->expected_fail = ef;
    return NX_OK;
}

/* Required key k of f, or an error naming it. */
static nx_status need(const char *who, const st_file *f, const char *k,
                      const char **out, nx_err *err)
{
    *out = st_get_meta(f, k);
    if (!*out)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key '%s' is missing "
                          "(required by the trace format)", who, k);
    return NX_OK;
}

/* Prefixes a grammar error with the file and key. */
static nx_status bad_key(const char *who, const char *k, nx_status rc,
                         nx_err *err)
{
    nx_err_prefix(err, "%s: " META " key '%s'", who, k);
    return rc;
}

static nx_status check_name_key(const char *who, const st_file *f,
                                const char *k, const char **out, nx_err *err)
{
    char q[CLIP_CAP];
    nx_status rc = need(who, f, k, out, err);
    if (rc)
        return rc;
    if (!trace_is_name(*out))
        return nx_err_set(err, NX_EINVAL, "%s: " META " key '%s' is %s; "
                          "expected 1 to 128 characters from [A-Za-z0-9_-]",
                          who, k, clip(q, *out));
    return NX_OK;
}

static nx_status parse_trace(const char *who, const st_file *f, trace *t,
                             nx_err *err)
{
    char q[CLIP_CAP];
    nx_status rc;
    const char *v;
    if (!st_get_meta(f, "parity.trace"))
        return nx_err_set(err, NX_EINVAL, "%s: not a parity trace: " META
                          " key 'parity.trace' is missing (required by the "
                          "trace format)", who);
    v = st_get_meta(f, "parity.trace");
    uint64_t ver;
    if (!whole_uint(v, 1000000, &ver))
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'parity.trace' is "
                          "%s; expected a format version number such as "
                          "\"%d\"", who, clip(q, v), TRACE_FORMAT_VERSION);
    if (ver != TRACE_FORMAT_VERSION)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: " META " key "
                          "'parity.trace': trace format version %llu is not "
                          "supported (this reader knows version %d)", who,
                          (unsigned long long)ver, TRACE_FORMAT_VERSION);
    t->version = (int)ver;

    if ((rc = check_name_key(who, f, "family", &t->family, err)) ||
        (rc = check_name_key(who, f, "point", &t->point, err)) ||
        (rc = check_name_key(who, f, "class", &t->class_name, err)) ||
        (rc = need(who, f, "kernel", &t->kernel, err)))
        return rc;
    if (!trace_is_token(t->kernel))
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'kernel' is %s; "
                          "expected 1 to 256 printable ASCII characters "
                          "without spaces", who, clip(q, t->kernel));

    if ((rc = need(who, f, "device", &v, err)))
        return rc;
    if ((rc = parse_device(v, &t->device, err)))
        return bad_key(who, "device", rc, err);

    if ((rc = need(who, f, "shape", &v, err)))
        return rc;
    if ((rc = trace_parse_shape(v, &t->shape, &t->nshape, err)))
        return bad_key(who, "shape", rc, err);

    v = st_get_meta(f, "params");
    if (v) {
        if ((rc = trace_parse_params(v, &t->params, &t->nparams, err)))
            return bad_key(who, "params", rc, err);
        for (size_t i = 0; i < t->nparams; i++)
            if (trace_shape_dim(t, t->params[i].name, NULL))
                return nx_err_set(err, NX_EINVAL, "%s: " META " key 'params':"
                                  " '%s' is a shape dimension; it belongs in "
                                  "'shape' only", who, t->params[i].name);
    }

    const char *seed = st_get_meta(f, "seed");
    const char *dist = st_get_meta(f, "dist");
    if (seed && !dist)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'dist' is missing "
                          "(required with 'seed': the seed alone does not say "
                          "what it generates)", who);
    if (dist && !seed)
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'seed' is missing "
                          "(required with 'dist')", who);
    if (seed) {
        if (!whole_uint(seed, UINT64_MAX, &t->seed))
            return nx_err_set(err, NX_EINVAL, "%s: " META " key 'seed' is %s; "
                              "expected a decimal integer 0 to 2^64-1 without "
                              "leading zeros", who, clip(q, seed));
        if (!trace_is_token(dist))
            return nx_err_set(err, NX_EINVAL, "%s: " META " key 'dist' is %s; "
                              "expected 1 to 256 printable ASCII characters "
                              "without spaces", who, clip(q, dist));
        t->has_seed = true;
        t->dist = dist;
    }

    if ((rc = need(who, f, "mode", &v, err)))
        return rc;
    if (strcmp(v, "eager") == 0)
        t->mode = TRACE_EAGER;
    else if (strcmp(v, "graphed") == 0)
        t->mode = TRACE_GRAPHED;
    else
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'mode' is %s; "
                          "expected 'eager' or 'graphed'", who, clip(q, v));

    if ((rc = need(who, f, "run", &v, err)))
        return rc;
    if (!whole_uint(v, UINT64_MAX, &t->run))
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'run' is %s; "
                          "expected a run index (a decimal integer without "
                          "leading zeros)", who, clip(q, v));

    if ((rc = need(who, f, "batch", &t->batch, err)))
        return rc;
    if ((rc = trace_parse_batch(t->batch, &t->batch_kind, &t->rows, &t->nrows,
                                err)))
        return bad_key(who, "batch", rc, err);

    if ((rc = need(who, f, "created", &t->created, err)))
        return rc;
    if ((rc = trace_check_created(t->created, err)))
        return bad_key(who, "created", rc, err);

    t->producer = st_get_meta(f, "producer");
    if (t->producer && (!*t->producer || strlen(t->producer) > 256))
        return nx_err_set(err, NX_EINVAL, "%s: " META " key 'producer' must "
                          "be 1 to 256 characters", who);
    if ((rc = parse_negative(who, f, t, err)))
        return rc;

    for (size_t i = 0; i < f->nmeta; i++) {
        const char *k = f->meta[i].key;
        bool known = false;
        for (size_t j = 0; j < sizeof standard_keys / sizeof *standard_keys;
             j++)
            known = known || strcmp(k, standard_keys[j]) == 0;
        size_t xl = strlen(TRACE_EXT_PREFIX);
        if (!known && !(strncmp(k, TRACE_EXT_PREFIX, xl) == 0 && k[xl]))
            return nx_err_set(err, NX_EINVAL, "%s: unknown " META " key %s "
                              "(extension keys start with '" TRACE_EXT_PREFIX
                              "')", who, clip(q, k));
    }

    size_t pl = strlen(TRACE_INPUT_PREFIX);
    t->noutputs = t->ninputs = 0;
    for (size_t i = 0; i < f->ntensors; i++) {
        const char *n = f->tensors[i].name;
        bool in = strncmp(n, TRACE_INPUT_PREFIX, pl) == 0;
        if (!trace_is_tensor_name(in ? n + pl : n))
            return nx_err_set(err, NX_EINVAL, "%s: tensor %s: a trace's "
                              "tensors are outputs named [A-Za-z_][A-Za-z0-9_]*"
                              " or inputs named '" TRACE_INPUT_PREFIX "' and "
                              "such a name", who, clip(q, n));
        if (in)
            t->ninputs++;
        else
            t->noutputs++;
    }
    if (t->noutputs == 0)
        return nx_err_set(err, NX_EINVAL, "%s: the trace holds no output "
                          "tensor", who);
    if (t->ninputs == 0 && !t->has_seed)
        return nx_err_set(err, NX_EINVAL, "%s: neither input tensors ('"
                          TRACE_INPUT_PREFIX "' names) nor " META " key "
                          "'seed': the run's inputs cannot be reproduced", who);
    return NX_OK;
}

nx_status trace_from_st(const char *who, st_file *f, trace *out, nx_err *err)
{
    trace_init(out);
    nx_status rc = parse_trace(who, f, out, err);
    if (rc == NX_OK && !(out->path = strdup(who)))
        rc = nx_err_set(err, NX_ENOMEM, "%s: out of memory", who);
    if (rc) {
        free_parsed(out);
        st_free(f);
        trace_init(out);
        return rc;
    }
    out->file = *f;
    st_init(f);
    return NX_OK;
}

nx_status trace_read(const char *path, trace *out, nx_err *err)
{
    trace_init(out);
    st_file f;
    nx_status rc = st_read(path, &f, err);
    if (rc)
        return rc;
    return trace_from_st(path, &f, out, err);
}

/* ---- writing ------------------------------------------------------------------ */

nx_status trace_write(const char *path, const trace_info *info,
                      const st_file *tensors, nx_err *err)
{
    for (size_t i = 0; i < tensors->nmeta; i++) {
        const char *k = tensors->meta[i].key;
        size_t xl = strlen(TRACE_EXT_PREFIX);
        if (strncmp(k, TRACE_EXT_PREFIX, xl) != 0 || !k[xl])
            return nx_err_set(err, NX_EINVAL, "%s: " META " key '%s' given "
                              "with the tensors: only extension keys ('"
                              TRACE_EXT_PREFIX "...') may be; trace_write "
                              "writes the others from trace_info", path, k);
    }
    char now[32], seed[24], run[24], ver[8];
    const char *created = info->created;
    if (!created) {
        time_t tt = time(NULL);
        struct tm tm;
        if (tt == (time_t)-1 || !gmtime_r(&tt, &tm) ||
            strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
            return nx_err_set(err, NX_EIO, "%s: cannot read the clock for "
                              "'created'", path);
        created = now;
    }
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)info->seed);
    snprintf(run, sizeof run, "%llu", (unsigned long long)info->run);
    snprintf(ver, sizeof ver, "%d", TRACE_FORMAT_VERSION);
    /* NULL values are keys not written; the validator then names a missing
     * required one. */
    const struct {
        const char *key, *value;
    } kv[] = {
        {"parity.trace", ver},
        {"family", info->family},
        {"point", info->point},
        {"class", info->class_name},
        {"kernel", info->kernel},
        {"device", info->device ? info->device : "{}"},
        {"shape", info->shape},
        {"params", info->params},
        {"seed", info->has_seed ? seed : NULL},
        {"dist", info->has_seed ? info->dist : NULL},
        {"mode", trace_mode_name(info->mode)},
        {"run", run},
        {"batch", info->batch},
        {"created", created},
        {"producer", info->producer},
        {"negative_control", info->negative_control ? "true" : NULL},
        {"expected_fail", info->negative_control ? info->expected_fail : NULL},
    };
    st_file m;
    st_init(&m);
    nx_status rc = NX_OK;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !rc; i++)
        if (kv[i].value)
            rc = st_add_meta(&m, kv[i].key, kv[i].value, err);
    for (size_t i = 0; i < tensors->nmeta && !rc; i++)
        rc = st_add_meta(&m, tensors->meta[i].key, tensors->meta[i].value,
                         err);
    if (rc) {
        nx_err_prefix(err, "%s", path);
        st_free(&m);
        return rc;
    }
    /* A shallow view: the caller's tensors with our metadata.  Never freed
     * as a whole; m owns the metadata. */
    st_file view = *tensors;
    view.meta = m.meta;
    view.nmeta = m.nmeta;
    view.meta_cap = m.meta_cap;
    trace t;
    trace_init(&t);
    rc = parse_trace(path, &view, &t, err);
    free_parsed(&t);
    if (rc == NX_OK)
        rc = st_write_atomic(path, &view, err);
    st_free(&m);
    return rc;
}

/* ---- access -------------------------------------------------------------- */

bool trace_tensor_is_input(const st_tensor *tensor)
{
    return strncmp(tensor->name, TRACE_INPUT_PREFIX,
                   strlen(TRACE_INPUT_PREFIX)) == 0;
}

const st_tensor *trace_output(const trace *t, const char *name)
{
    if (strncmp(name, TRACE_INPUT_PREFIX, strlen(TRACE_INPUT_PREFIX)) == 0)
        return NULL;
    return st_find(&t->file, name);
}

const st_tensor *trace_input(const trace *t, const char *name)
{
    char full[160];
    if (snprintf(full, sizeof full, TRACE_INPUT_PREFIX "%s", name) >=
        (int)sizeof full)
        return NULL;
    return st_find(&t->file, full);
}

bool trace_shape_dim(const trace *t, const char *name, int64_t *value)
{
    for (size_t i = 0; i < t->nshape; i++)
        if (strcmp(t->shape[i].name, name) == 0) {
            if (value)
                *value = t->shape[i].value;
            return true;
        }
    return false;
}

const char *trace_param_get(const trace *t, const char *name)
{
    for (size_t i = 0; i < t->nparams; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return t->params[i].value;
    return NULL;
}

const char *trace_mode_name(trace_mode m)
{
    return m == TRACE_GRAPHED ? "graphed" : m == TRACE_EAGER ? "eager" : "?";
}

/* ---- expectations ---------------------------------------------------------- */

static nx_status check_str(const char *who, const char *field, const char *got,
                           const char *want, nx_err *err)
{
    if (want && strcmp(got, want) != 0)
        return nx_err_set(err, NX_EINVAL, "%s: %s is '%s', expected '%s'", who,
                          field, got, want);
    return NX_OK;
}

static const char *dims_str(char *buf, size_t cap, int ndim,
                            const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "",
                              (long long)shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

nx_status trace_check(const trace *t, const trace_expect *want, nx_err *err)
{
    const char *who = t->path ? t->path : "trace";
    nx_status rc;
    if ((rc = check_str(who, "family", t->family, want->family, err)) ||
        (rc = check_str(who, "point", t->point, want->point, err)) ||
        (rc = check_str(who, "class", t->class_name, want->class_name, err)) ||
        (rc = check_str(who, "kernel", t->kernel, want->kernel, err)))
        return rc;
    if (want->shape) {
        trace_dim *d;
        size_t n;
        if ((rc = trace_parse_shape(want->shape, &d, &n, err))) {
            nx_err_prefix(err, "the expected shape");
            return rc;
        }
        for (size_t i = 0; i < n && !rc; i++) {
            int64_t got;
            if (!trace_shape_dim(t, d[i].name, &got))
                rc = nx_err_set(err, NX_EINVAL, "%s: shape: dimension '%s' is "
                                "missing (expected %s=%lld)", who, d[i].name,
                                d[i].name, (long long)d[i].value);
            else if (got != d[i].value)
                rc = nx_err_set(err, NX_EINVAL, "%s: shape: %s is %lld, "
                                "expected %lld", who, d[i].name,
                                (long long)got, (long long)d[i].value);
        }
        for (size_t i = 0; i < t->nshape && !rc; i++) {
            bool found = false;
            for (size_t j = 0; j < n; j++)
                found = found || strcmp(d[j].name, t->shape[i].name) == 0;
            if (!found)
                rc = nx_err_set(err, NX_EINVAL, "%s: shape: dimension '%s' is "
                                "not expected (expected shape '%s')", who,
                                t->shape[i].name, want->shape);
        }
        free_dims(d, n);
        if (rc)
            return rc;
    }
    if (want->batch_dim) {
        int64_t v;
        if (!trace_shape_dim(t, want->batch_dim, &v))
            return nx_err_set(err, NX_EINVAL, "%s: batch: the shape has no "
                              "dimension '%s' to count the batch's rows "
                              "against", who, want->batch_dim);
        if ((uint64_t)v != t->nrows)
            return nx_err_set(err, NX_EINVAL, "%s: batch: '%s' has %zu rows "
                              "but the shape says %s=%lld", who, t->batch,
                              t->nrows, want->batch_dim, (long long)v);
    }
    return NX_OK;
}

nx_status trace_check_tensor(const trace *t, const char *name, st_dtype dtype,
                             int ndim, const int64_t *shape, nx_err *err)
{
    const char *who = t->path ? t->path : "trace";
    const char *kind = strncmp(name, TRACE_INPUT_PREFIX,
                               strlen(TRACE_INPUT_PREFIX)) == 0 ? "input"
                                                                : "output";
    const st_tensor *x = st_find(&t->file, name);
    if (!x) {
        char have[256];
        size_t n = 0;
        have[0] = 0;
        for (size_t i = 0; i < t->file.ntensors && n < sizeof have; i++)
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%s",
                                  i ? ", " : "", t->file.tensors[i].name);
        return nx_err_set(err, NX_EINVAL, "%s: %s tensor '%s' is missing (the "
                          "trace holds: %s)", who, kind, name, have);
    }
    if (x->dtype != dtype)
        return nx_err_set(err, NX_EINVAL, "%s: %s tensor '%s': dtype is %s, "
                          "expected %s", who, kind, name,
                          st_dtype_name(x->dtype), st_dtype_name(dtype));
    if (shape) {
        bool same = x->ndim == ndim;
        for (int d = 0; same && d < ndim; d++)
            same = x->shape[d] == shape[d];
        if (!same) {
            char a[160], b[160];
            return nx_err_set(err, NX_EINVAL, "%s: %s tensor '%s': shape is "
                              "%s, expected %s", who, kind, name,
                              dims_str(a, sizeof a, x->ndim, x->shape),
                              dims_str(b, sizeof b,
                                       ndim < 0 ? 0 : ndim > ST_MAX_NDIM
                                                          ? ST_MAX_NDIM
                                                          : ndim,
                                       shape));
        }
    }
    return NX_OK;
}

/* ---- dtype names ------------------------------------------------------------ */

bool trace_dtype_from_name(const char *name, st_dtype *out)
{
    if (!name)
        return false;
    if (st_dtype_from_name(name, out))
        return true;
    /* docs/numerics.md §1 names -> the dtype each is stored as (the table of
     * nx_format's st_dtype column; test_trace checks they agree). */
    static const struct {
        const char *name;
        st_dtype dt;
    } fmts[] = {
        {"fp64", ST_F64}, {"fp32", ST_F32}, {"tf32", ST_F32},
        {"e8m13", ST_F32}, {"fp16", ST_F16}, {"bf16", ST_BF16},
        {"e5m2", ST_F8_E5M2}, {"e4m3", ST_F8_E4M3}, {"e3m2", ST_F6_E3M2},
        {"e2m3", ST_F6_E2M3}, {"e2m1", ST_F4}, {"e8m0", ST_F8_E8M0},
    };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        if (strcmp(name, fmts[i].name) == 0) {
            if (out)
                *out = fmts[i].dt;
            return true;
        }
    return false;
}
