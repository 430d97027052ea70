/* transcript.c: strict JSONL transcript parsing, matching prompts by id or
 * line, first divergences and match rates (transcript.h). */
#include "transcript.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_limits.h"
#include "nx_sbuf.h"
#include "report_json.h"

/* One line of a file. */
typedef struct tline {
    tscript_id_kind kind;
    char *id;         /* NULL for TSCRIPT_ID_LINE */
    size_t line;
    int64_t *toks;
    size_t n;
} tline;

typedef struct tfile {
    const char *name;
    tline *lines;
    size_t n, cap;
} tfile;

static void tfile_free(tfile *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->lines[i].id);
        free(f->lines[i].toks);
    }
    free(f->lines);
    memset(f, 0, sizeof *f);
}

static nx_status parse_tokens(const char *name, size_t line, const json_t *a, tline *out, nx_err *err)
{
    size_t n = json_array_size(a);
    out->toks = malloc((n ? n : 1) * sizeof *out->toks);
    if (!out->toks)
        return nx_err_set(err, NX_ENOMEM, "%s:%zu: out of memory", name, line);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(a, i);
        if (!json_is_integer(t))
            return nx_err_set(err, NX_EINVAL, "%s:%zu: token %zu is %s, not an integer", name, line, i,
                              rj_kind(t));
        out->toks[i] = (int64_t)json_integer_value(t);
    }
    out->n = n;
    return NX_OK;
}

static nx_status parse_object(const char *name, size_t line, json_t *o, tline *out, nx_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "prompt") != 0 && strcmp(key, "tokens") != 0)
            return nx_err_set(err, NX_EINVAL,
                              "%s:%zu: unknown key \"%s\" (a transcript has \"prompt\" and \"tokens\")",
                              name, line, key);
    }
    const json_t *toks = json_object_get(o, "tokens");
    if (!toks)
        return nx_err_set(err, NX_EINVAL, "%s:%zu: the object has no \"tokens\"", name, line);
    if (!json_is_array(toks))
        return nx_err_set(err, NX_EINVAL, "%s:%zu: \"tokens\" is %s, not an array", name, line,
                          rj_kind(toks));
    const json_t *p = json_object_get(o, "prompt");
    if (!p) {
        out->kind = TSCRIPT_ID_LINE;
    } else if (json_is_string(p)) {
        out->kind = TSCRIPT_ID_STRING;
        out->id = strdup(json_string_value(p));
    } else if (json_is_integer(p)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(p));
        out->kind = TSCRIPT_ID_INT;
        out->id = strdup(buf);
    } else {
        return nx_err_set(err, NX_EINVAL, "%s:%zu: \"prompt\" is %s, not a string or an integer", name,
                          line, rj_kind(p));
    }
    if (p && !out->id)
        return nx_err_set(err, NX_ENOMEM, "%s:%zu: out of memory", name, line);
    return parse_tokens(name, line, toks, out, err);
}

static nx_status parse_line(const char *name, size_t line, const char *s, size_t len, tline *out,
                            nx_err *err)
{
    memset(out, 0, sizeof *out);
    out->line = line;
    if (len == 0)
        return nx_err_set(err, NX_EINVAL, "%s:%zu: empty line (one transcript per line)", name, line);
    json_error_t je;
    json_t *v = json_loadb(s, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!v)
        return nx_err_set(err, NX_EINVAL, "%s:%zu:%d: %s", name, line, je.column, je.text);
    nx_status st;
    if (json_is_array(v)) {
        out->kind = TSCRIPT_ID_LINE;
        st = parse_tokens(name, line, v, out, err);
    } else if (json_is_object(v)) {
        st = parse_object(name, line, v, out, err);
    } else {
        st = nx_err_set(err, NX_EINVAL, "%s:%zu: the line is %s, not an array of token ids or an object",
                        name, line, rj_kind(v));
    }
    json_decref(v);
    return st;
}

static nx_status parse_file(const char *name, const char *text, size_t len, tfile *f, nx_err *err)
{
    memset(f, 0, sizeof *f);
    f->name = name;
    size_t pos = 0, line = 0;
    nx_status st = NX_OK;
    while (pos < len && st == NX_OK) {
        line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t l = end - pos;
        if (l > 0 && text[pos + l - 1] == '\r')
            l--;
        if (f->n == f->cap) {
            size_t cap = f->cap ? 2 * f->cap : 64;
            tline *nv = realloc(f->lines, cap * sizeof *nv);
            if (!nv) {
                st = nx_err_set(err, NX_ENOMEM, "%s:%zu: out of memory", name, line);
                break;
            }
            f->lines = nv;
            f->cap = cap;
        }
        st = parse_line(name, line, text + pos, l, &f->lines[f->n], err);
        f->n++; /* parse_line leaves what it allocated there to be freed */
        if (st == NX_OK && f->n > 1 && (f->lines[f->n - 1].kind == TSCRIPT_ID_LINE) !=
                                           (f->lines[0].kind == TSCRIPT_ID_LINE))
            st = nx_err_set(err, NX_EINVAL, "%s:%zu: %s prompt id but line %zu %s", name, line,
                            f->lines[0].kind == TSCRIPT_ID_LINE ? "this line has a" : "this line has no",
                            f->lines[0].line, f->lines[0].kind == TSCRIPT_ID_LINE ? "has none" : "has one");
        pos = nl ? end + 1 : len;
    }
    if (st == NX_OK && f->n == 0)
        st = nx_err_set(err, NX_EINVAL, "%s: no transcript in the file", name);
    if (st != NX_OK)
        tfile_free(f);
    return st;
}

/* ---- matching ---------------------------------------------------------------------- */

static int key_cmp(const tline *a, const tline *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->id, b->id);
}

static int ptr_cmp(const void *x, const void *y)
{
    const tline *a = *(const tline *const *)x, *b = *(const tline *const *)y;
    int c = key_cmp(a, b);
    if (c)
        return c;
    return a->line < b->line ? -1 : a->line > b->line;
}

/* The file's lines sorted by id; a repeated id is an error. */
static nx_status sort_ids(const tfile *f, tline ***out, nx_err *err)
{
    tline **v = malloc(f->n * sizeof *v);
    if (!v)
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", f->name);
    for (size_t i = 0; i < f->n; i++)
        v[i] = &f->lines[i];
    qsort(v, f->n, sizeof *v, ptr_cmp);
    for (size_t i = 1; i < f->n; i++)
        if (key_cmp(v[i - 1], v[i]) == 0) {
            nx_status st = nx_err_set(err, NX_EINVAL, "%s:%zu: prompt %s%s%s repeats line %zu", f->name,
                                      v[i]->line, v[i]->kind == TSCRIPT_ID_STRING ? "\"" : "", v[i]->id,
                                      v[i]->kind == TSCRIPT_ID_STRING ? "\"" : "", v[i - 1]->line);
            free(v);
            return st;
        }
    *out = v;
    return NX_OK;
}

static tline *find_id(tline **sorted, size_t n, const tline *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(sorted[mid], key);
        if (c == 0)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static nx_status set_id(tscript_prompt *p, const tline *l, nx_err *err)
{
    char buf[32];
    p->id_kind = l->kind;
    if (l->kind == TSCRIPT_ID_LINE)
        snprintf(buf, sizeof buf, "%zu", l->line);
    p->id = strdup(l->kind == TSCRIPT_ID_LINE ? buf : l->id);
    if (!p->id)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    return NX_OK;
}

static void diff_pair(tscript_prompt *p, const tline *c, const tline *d)
{
    size_t n = c->n < d->n ? c->n : d->n, k = 0;
    while (k < n && c->toks[k] == d->toks[k])
        k++;
    p->control_line = c->line;
    p->candidate_line = d->line;
    p->control_len = c->n;
    p->candidate_len = d->n;
    p->agreed = k;
    if (k == c->n && k == d->n) {
        p->status = TSCRIPT_IDENTICAL;
        return;
    }
    p->status = TSCRIPT_DIVERGED;
    if ((p->has_control_token = k < c->n))
        p->control_token = c->toks[k];
    if ((p->has_candidate_token = k < d->n))
        p->candidate_token = d->toks[k];
}

static void tally(tscript_result *r, const tscript_prompt *p)
{
    switch (p->status) {
    case TSCRIPT_IDENTICAL: r->identical++; break;
    case TSCRIPT_DIVERGED: r->diverged++; break;
    case TSCRIPT_MISSING: r->missing++; break;
    case TSCRIPT_EXTRA: r->extra++; break;
    }
    r->agreed_tokens += p->agreed;
    r->total_tokens += p->control_len > p->candidate_len ? p->control_len : p->candidate_len;
}

static nx_status match(const tfile *c, const tfile *d, tscript_result *r, nx_err *err)
{
    int by_id = c->lines[0].kind != TSCRIPT_ID_LINE;
    if (by_id != (d->lines[0].kind != TSCRIPT_ID_LINE))
        return nx_err_set(err, NX_EINVAL, "%s %s prompt ids but %s %s: both or neither must",
                          c->name, by_id ? "has" : "has no", d->name, by_id ? "has none" : "has them");
    r->matched_by = by_id ? TSCRIPT_ID_STRING : TSCRIPT_ID_LINE;
    r->prompts = calloc(c->n + d->n, sizeof *r->prompts);
    if (!r->prompts)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    tline **cs = NULL, **ds = NULL;
    unsigned char *used = calloc(d->n, 1);
    nx_status st = used ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
    if (st == NX_OK && by_id && ((st = sort_ids(c, &cs, err)) || (st = sort_ids(d, &ds, err))))
        goto done;
    for (size_t i = 0; st == NX_OK && i < c->n; i++) {
        const tline *cl = &c->lines[i];
        const tline *dl = by_id ? find_id(ds, d->n, cl) : (i < d->n ? &d->lines[i] : NULL);
        tscript_prompt *p = &r->prompts[r->nprompts++];
        if ((st = set_id(p, cl, err)))
            break;
        if (dl) {
            used[dl - d->lines] = 1;
            diff_pair(p, cl, dl);
        } else {
            p->status = TSCRIPT_MISSING;
            p->control_line = cl->line;
            p->control_len = cl->n;
        }
        tally(r, p);
    }
    for (size_t j = 0; st == NX_OK && j < d->n; j++) {
        if (used[j])
            continue;
        tscript_prompt *p = &r->prompts[r->nprompts++];
        if ((st = set_id(p, &d->lines[j], err)))
            break;
        p->status = TSCRIPT_EXTRA;
        p->candidate_line = d->lines[j].line;
        p->candidate_len = d->lines[j].n;
        tally(r, p);
    }
done:
    free(cs);
    free(ds);
    free(used);
    return st;
}

nx_status tscript_compare_text(const char *control_name, const char *control, size_t control_len,
                               const char *candidate_name, const char *candidate,
                               size_t candidate_len, tscript_result *out, nx_err *err)
{
    memset(out, 0, sizeof *out);
    tfile c, d;
    nx_status st = parse_file(control_name, control, control_len, &c, err);
    if (st)
        return st;
    if ((st = parse_file(candidate_name, candidate, candidate_len, &d, err))) {
        tfile_free(&c);
        return st;
    }
    out->control_name = strdup(control_name);
    out->candidate_name = strdup(candidate_name);
    if (!out->control_name || !out->candidate_name)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    else
        st = match(&c, &d, out, err);
    tfile_free(&c);
    tfile_free(&d);
    if (st)
        tscript_result_free(out);
    return st;
}

static nx_status slurp(const char *path, char **buf, size_t *len, nx_err *err)
{
    /* the text, 40 bytes a line and 8 a token id (docs/limits.md) */
    nx_status lst = nx_limits_file(path, 32, "lines of token ids", err);
    if (lst)
        return lst;
    nx_err local;
    FILE *fp = nx_fopen_input(path, err ? err : &local); /* a FIFO: refused, not waited on */
    if (!fp)
        return err ? err->code : local.code;
    nx_sbuf b = {0};
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, fp)) > 0)
        nx_sbuf_put(&b, chunk, k);
    int bad = ferror(fp);
    fclose(fp);
    size_t n = b.n;
    char *s = nx_sbuf_take(&b);
    if (bad) {
        free(s);
        return nx_err_set(err, NX_EIO, "%s: read error", path);
    }
    if (!s)
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
    *buf = s;
    *len = n;
    return NX_OK;
}

nx_status tscript_compare_files(const char *control_path, const char *candidate_path,
                                tscript_result *out, nx_err *err)
{
    char *c = NULL, *d = NULL;
    size_t cn = 0, dn = 0;
    memset(out, 0, sizeof *out);
    nx_status st = slurp(control_path, &c, &cn, err);
    if (st == NX_OK && (st = slurp(candidate_path, &d, &dn, err)) == NX_OK)
        st = tscript_compare_text(control_path, c, cn, candidate_path, d, dn, out, err);
    free(c);
    free(d);
    return st;
}

void tscript_result_free(tscript_result *r)
{
    for (size_t i = 0; i < r->nprompts; i++)
        free(r->prompts[i].id);
    free(r->prompts);
    free(r->control_name);
    free(r->candidate_name);
    memset(r, 0, sizeof *r);
}

double tscript_match_rate(const tscript_result *r)
{
    return r->nprompts ? (double)r->identical / (double)r->nprompts : 0.0;
}

double tscript_token_agreement(const tscript_result *r)
{
    return r->total_tokens ? (double)r->agreed_tokens / (double)r->total_tokens : 1.0;
}

int tscript_all_identical(const tscript_result *r)
{
    return r->nprompts > 0 && r->identical == r->nprompts;
}

const char *tscript_status_name(tscript_status s)
{
    switch (s) {
    case TSCRIPT_IDENTICAL: return "identical";
    case TSCRIPT_DIVERGED: return "diverged";
    case TSCRIPT_MISSING: return "missing";
    case TSCRIPT_EXTRA: return "extra";
    }
    return "?";
}

/* ---- rendering ------------------------------------------------------------------ */

static void put_prompt_name(nx_sbuf *b, const tscript_prompt *p)
{
    if (p->id_kind == TSCRIPT_ID_STRING)
        nx_sbuf_printf(b, "prompt \"%s\"", p->id);
    else if (p->id_kind == TSCRIPT_ID_INT)
        nx_sbuf_printf(b, "prompt %s", p->id);
    else
        nx_sbuf_printf(b, "line %s", p->id);
}

static void put_token(nx_sbuf *b, int has, int64_t t)
{
    if (has)
        nx_sbuf_printf(b, "%" PRId64, t);
    else
        nx_sbuf_printf(b, "(ended)");
}

char *tscript_result_text(const tscript_result *r)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "Transcripts: %s (control) vs %s (candidate), matched by %s\n", r->control_name,
                   r->candidate_name, r->matched_by == TSCRIPT_ID_LINE ? "line number" : "prompt id");
    nx_sbuf_printf(&b, "Prompts identical: %zu / %zu (%.1f%%)\n", r->identical, r->nprompts,
                   100.0 * tscript_match_rate(r));
    nx_sbuf_printf(&b, "Token agreement up to the first divergence: %" PRIu64 " / %" PRIu64 " (%.1f%%)\n",
                   r->agreed_tokens, r->total_tokens, 100.0 * tscript_token_agreement(r));
    if (r->missing || r->extra)
        nx_sbuf_printf(&b, "Missing from the candidate: %zu; not in the control: %zu\n", r->missing,
                       r->extra);
    for (size_t i = 0; i < r->nprompts; i++) {
        const tscript_prompt *p = &r->prompts[i];
        if (p->status == TSCRIPT_IDENTICAL)
            continue;
        put_prompt_name(&b, p);
        switch (p->status) {
        case TSCRIPT_DIVERGED:
            nx_sbuf_printf(&b, ": diverged at token %zu: control ", p->agreed);
            put_token(&b, p->has_control_token, p->control_token);
            nx_sbuf_printf(&b, ", candidate ");
            put_token(&b, p->has_candidate_token, p->candidate_token);
            nx_sbuf_printf(&b, " (lengths %zu, %zu; lines %zu, %zu)\n", p->control_len, p->candidate_len,
                           p->control_line, p->candidate_line);
            break;
        case TSCRIPT_MISSING:
            nx_sbuf_printf(&b, ": missing from %s (control line %zu, %zu tokens)\n", r->candidate_name,
                           p->control_line, p->control_len);
            break;
        case TSCRIPT_EXTRA:
            nx_sbuf_printf(&b, ": not in %s (candidate line %zu, %zu tokens)\n", r->control_name,
                           p->candidate_line, p->candidate_len);
            break;
        default:
            break;
        }
    }
    return nx_sbuf_take(&b);
}

static json_t *jtoken(int has, int64_t t)
{
    return has ? json_integer((json_int_t)t) : json_null();
}

static json_t *prompt_json(const tscript_prompt *p)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int ok = 1;
    if (p->id_kind == TSCRIPT_ID_STRING)
        rj_set(o, "prompt", json_string(p->id), &ok);
    else if (p->id_kind == TSCRIPT_ID_INT)
        rj_set(o, "prompt", json_integer(strtoll(p->id, NULL, 10)), &ok);
    rj_set(o, "status", json_string(tscript_status_name(p->status)), &ok);
    rj_set(o, "control_line", p->control_line ? json_integer((json_int_t)p->control_line) : json_null(),
         &ok);
    rj_set(o, "candidate_line",
         p->candidate_line ? json_integer((json_int_t)p->candidate_line) : json_null(), &ok);
    rj_set(o, "control_len", json_integer((json_int_t)p->control_len), &ok);
    rj_set(o, "candidate_len", json_integer((json_int_t)p->candidate_len), &ok);
    rj_set(o, "agreed", json_integer((json_int_t)p->agreed), &ok);
    if (p->status == TSCRIPT_DIVERGED) {
        json_t *d = json_object();
        if (d) {
            rj_set(d, "position", json_integer((json_int_t)p->agreed), &ok);
            rj_set(d, "control_token", jtoken(p->has_control_token, p->control_token), &ok);
            rj_set(d, "candidate_token", jtoken(p->has_candidate_token, p->candidate_token), &ok);
        }
        rj_set(o, "first_divergence", d, &ok);
    } else {
        rj_set(o, "first_divergence", json_null(), &ok);
    }
    return rj_done(o, ok);
}

json_t *tscript_result_json(const tscript_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int ok = 1;
    rj_set(o, "control", json_string(r->control_name), &ok);
    rj_set(o, "candidate", json_string(r->candidate_name), &ok);
    rj_set(o, "matched_by", json_string(r->matched_by == TSCRIPT_ID_LINE ? "line" : "prompt"), &ok);
    rj_set(o, "prompts_total", json_integer((json_int_t)r->nprompts), &ok);
    rj_set(o, "prompts_identical", json_integer((json_int_t)r->identical), &ok);
    rj_set(o, "prompts_diverged", json_integer((json_int_t)r->diverged), &ok);
    rj_set(o, "prompts_missing", json_integer((json_int_t)r->missing), &ok);
    rj_set(o, "prompts_extra", json_integer((json_int_t)r->extra), &ok);
    rj_set(o, "match_rate", json_real(tscript_match_rate(r)), &ok);
    rj_set(o, "tokens_agreed", json_integer((json_int_t)r->agreed_tokens), &ok);
    rj_set(o, "tokens_total", json_integer((json_int_t)r->total_tokens), &ok);
    rj_set(o, "token_agreement", json_real(tscript_token_agreement(r)), &ok);
    rj_set(o, "pass", json_boolean(tscript_all_identical(r)), &ok);
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->nprompts; i++)
        if (json_array_append_new(a, prompt_json(&r->prompts[i])) != 0)
            ok = 0;
    rj_set(o, "prompts", a, &ok);
    return rj_done(o, ok);
}
