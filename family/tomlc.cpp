/* tomlc.cpp: the C-ABI shim over toml++ declared in tomlc.h.
 *
 * The only C++ in the project.  Every entry point catches every exception
 * (toml::parse_error, std::bad_alloc, anything else) and turns it into an
 * nx_status; the C tree is malloc'd so that it outlives the toml++ objects,
 * which are destroyed before each call returns. */
#include "tomlc.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

/* A failure found while copying the tree; a fixed buffer so that raising
 * and catching it allocates nothing. */
struct tc_fail {
    nx_status code;
    char msg[NX_ERR_MSG_MAX];
};

[[noreturn]] __attribute__((format(printf, 2, 3))) void fail(nx_status code, const char *fmt, ...)
{
    tc_fail f;
    f.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.msg, sizeof f.msg, fmt, ap);
    va_end(ap);
    throw f;
}

/* The wrapper `v = ` of tc_parse_inline_table shifts columns of line 1. */
struct ctx {
    const char *source;
    int shift;
};

int clamp_index(toml::source_index v)
{
    return v > static_cast<toml::source_index>(INT_MAX) ? INT_MAX : static_cast<int>(v);
}

void to_user_pos(const ctx &c, const toml::source_position &p, int *line, int *col)
{
    *line = clamp_index(p.line);
    *col = clamp_index(p.column);
    if (*line == 1 && *col > 0 && c.shift > 0)
        *col = *col - c.shift < 1 ? 1 : *col - c.shift;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        throw std::bad_alloc();
    return p;
}

/* A C copy of s; U+0000 cannot live in a C string, so it is refused rather
 * than silently cutting the string short. */
char *dup_text(const ctx &c, std::string_view s, int line, int col, const char *what)
{
    if (s.find('\0') != std::string_view::npos)
        fail(NX_EINVAL, "%s:%d:%d: %s contains U+0000, which is not supported", c.source, line, col,
             what);
    char *p = static_cast<char *>(xcalloc(s.size() + 1, 1));
    memcpy(p, s.data(), s.size());
    return p;
}

template <typename T> char *print_value(const ctx &c, const T &v, int line, int col)
{
    std::ostringstream os;
    os << v;
    return dup_text(c, os.str(), line, col, "date-time");
}

/* Fills *out (already linked into the tree, so a throw leaves a tree that
 * tc_free can release) from n. */
void convert(const ctx &c, const toml::node &n, tc_node *out, bool in_inline)
{
    out->source = c.source;
    to_user_pos(c, n.source().begin, &out->line, &out->column);
    switch (n.type()) {
    case toml::node_type::table: {
        const toml::table &t = *n.as_table();
        out->kind = TC_TABLE;
        out->inline_table = in_inline || t.is_inline();
        /* toml++ orders a table by key; the document order is the order of
         * the keys' first appearance (a table opened implicitly by [a.b] and
         * later by [a] keeps the position of its key in [a.b]). */
        std::vector<std::pair<const toml::key *, const toml::node *>> kv;
        kv.reserve(t.size());
        for (auto &&[k, v] : t)
            kv.emplace_back(&k, &v);
        std::stable_sort(kv.begin(), kv.end(), [](const auto &a, const auto &b) {
            const toml::source_position ka = a.first->source().begin, kb = b.first->source().begin;
            if (ka.line != kb.line)
                return ka.line < kb.line;
            if (ka.column != kb.column)
                return ka.column < kb.column;
            const toml::source_position va = a.second->source().begin, vb = b.second->source().begin;
            return va.line != vb.line ? va.line < vb.line : va.column < vb.column;
        });
        out->items = static_cast<tc_node **>(xcalloc(kv.size(), sizeof *out->items));
        out->nitems = kv.size();
        for (size_t i = 0; i < kv.size(); i++) {
            tc_node *child = static_cast<tc_node *>(xcalloc(1, sizeof *child));
            out->items[i] = child;
            child->source = c.source;
            to_user_pos(c, kv[i].first->source().begin, &child->key_line, &child->key_column);
            child->key = dup_text(c, kv[i].first->str(), child->key_line, child->key_column, "key");
            convert(c, *kv[i].second, child, out->inline_table != 0);
        }
        return;
    }
    case toml::node_type::array: {
        const toml::array &a = *n.as_array();
        out->kind = TC_ARRAY;
        out->items = static_cast<tc_node **>(xcalloc(a.size(), sizeof *out->items));
        out->nitems = a.size();
        for (size_t i = 0; i < a.size(); i++) {
            tc_node *child = static_cast<tc_node *>(xcalloc(1, sizeof *child));
            out->items[i] = child;
            convert(c, a[i], child, in_inline);
        }
        return;
    }
    case toml::node_type::string:
        out->kind = TC_STRING;
        out->str = dup_text(c, n.as_string()->get(), out->line, out->column, "string");
        return;
    case toml::node_type::integer:
        out->kind = TC_INT;
        out->i = n.as_integer()->get();
        return;
    case toml::node_type::floating_point:
        out->kind = TC_FLOAT;
        out->f = n.as_floating_point()->get();
        return;
    case toml::node_type::boolean:
        out->kind = TC_BOOL;
        out->b = n.as_boolean()->get() ? 1 : 0;
        return;
    case toml::node_type::date:
        out->kind = TC_DATETIME;
        out->str = print_value(c, n.as_date()->get(), out->line, out->column);
        return;
    case toml::node_type::time:
        out->kind = TC_DATETIME;
        out->str = print_value(c, n.as_time()->get(), out->line, out->column);
        return;
    case toml::node_type::date_time:
        out->kind = TC_DATETIME;
        out->str = print_value(c, n.as_date_time()->get(), out->line, out->column);
        return;
    case toml::node_type::none:
        break;
    }
    fail(NX_EINTERNAL, "%s:%d:%d: toml++ returned a node of no known type", c.source, out->line,
         out->column);
}

void free_node(tc_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nitems; i++)
        free_node(n->items[i]);
    free(n->items);
    free(n->key);
    free(n->str);
    free(n);
}

/* The root carries the source name in the same allocation, so every node can
 * point at it and tc_free needs no special case. */
tc_node *new_root(const char *name)
{
    size_t len = strlen(name);
    tc_node *r = static_cast<tc_node *>(xcalloc(1, sizeof *r + len + 1));
    char *src = reinterpret_cast<char *>(r + 1);
    memcpy(src, name, len + 1);
    r->source = src;
    return r;
}

/* Parses text (wrapped by tc_parse_inline_table when shift > 0) into *root.
 * The single place where exceptions are caught. */
nx_status parse_text(std::string_view text, const char *name, int shift, tc_node **root, nx_err *err)
{
    tc_node *tree = nullptr;
    try {
        ctx c{name, shift};
        toml::table doc;
        try {
            doc = toml::parse(text, std::string_view(name));
        } catch (const toml::parse_error &e) {
            int line, col;
            to_user_pos(c, e.source().begin, &line, &col);
            std::string_view d = e.description();
            return nx_err_set(err, NX_EINVAL, "%s:%d:%d: %.*s", name, line, col,
                              static_cast<int>(std::min<size_t>(d.size(), INT_MAX)), d.data());
        }
        tree = new_root(name);
        if (shift == 0) {
            convert(c, doc, tree, false);
            tree->line = tree->column = 0; /* a document has no position of its own */
        } else {
            const toml::node *v = doc.get("v");
            if (!v)
                fail(NX_EINTERNAL, "%s: the wrapped inline table lost its key", name);
            for (auto &&[k, other] : doc) {
                if (k.str() == "v")
                    continue;
                int line, col;
                to_user_pos(c, k.source().begin, &line, &col);
                fail(NX_EINVAL, "%s:%d:%d: unexpected key '%s' after the inline table", name, line,
                     col, std::string(k.str()).c_str());
            }
            if (!v->is_table()) {
                int line, col;
                to_user_pos(c, v->source().begin, &line, &col);
                fail(NX_EINVAL, "%s:%d:%d: expected an inline table { ... }, found %s", name, line,
                     col, v->is_array() ? "an array" : "a single value");
            }
            convert(c, *v, tree, true);
        }
        *root = tree;
        return NX_OK;
    } catch (const tc_fail &f) {
        free_node(tree);
        return nx_err_set(err, f.code, "%s", f.msg);
    } catch (const std::bad_alloc &) {
        free_node(tree);
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory while reading TOML", name);
    } catch (const std::exception &e) {
        free_node(tree);
        return nx_err_set(err, NX_EINTERNAL, "%s: toml++ failed: %s", name, e.what());
    } catch (...) {
        free_node(tree);
        return nx_err_set(err, NX_EINTERNAL, "%s: toml++ failed with an unknown exception", name);
    }
}

const char *article(tc_kind k)
{
    return k == TC_INT || k == TC_ARRAY ? "an" : "a";
}

const char *src_of(const tc_node *n)
{
    return n->source ? n->source : "<toml>";
}

} // namespace

extern "C" {

nx_status tc_parse_string(const char *text, const char *name, tc_node **root, nx_err *err)
{
    if (!root)
        return nx_err_set(err, NX_EINVAL, "tc_parse_string: root is NULL");
    *root = nullptr;
    if (!name)
        name = "<string>";
    if (!text)
        return nx_err_set(err, NX_EINVAL, "%s: no text to parse", name);
    return parse_text(std::string_view(text), name, 0, root, err);
}

nx_status tc_parse_file(const char *path, tc_node **root, nx_err *err)
{
    if (!root)
        return nx_err_set(err, NX_EINVAL, "tc_parse_file: root is NULL");
    *root = nullptr;
    if (!path)
        return nx_err_set(err, NX_EINVAL, "tc_parse_file: path is NULL");
    try {
        std::string text;
        FILE *f = fopen(path, "rb");
        if (!f) {
            int e = errno;
            return nx_err_set(err, NX_EIO, "%s: cannot open: %s", path,
                              std::generic_category().message(e).c_str());
        }
        char buf[1 << 16];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
            try {
                text.append(buf, got);
            } catch (...) {
                fclose(f);
                throw;
            }
        }
        int bad = ferror(f), e = errno;
        fclose(f);
        if (bad)
            return nx_err_set(err, NX_EIO, "%s: cannot read: %s", path,
                              std::generic_category().message(e).c_str());
        return parse_text(text, path, 0, root, err);
    } catch (const std::bad_alloc &) {
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory while reading", path);
    } catch (...) {
        return nx_err_set(err, NX_EINTERNAL, "%s: unexpected C++ exception while reading", path);
    }
}

nx_status tc_parse_inline_table(const char *text, const char *name, tc_node **root, nx_err *err)
{
    static const char wrapper[] = "v = ";
    if (!root)
        return nx_err_set(err, NX_EINVAL, "tc_parse_inline_table: root is NULL");
    *root = nullptr;
    if (!name)
        name = "<string>";
    if (!text)
        return nx_err_set(err, NX_EINVAL, "%s: no text to parse", name);
    /* Say plainly what is expected rather than letting `v = acc = 1` fail
     * with a message about the wrapper. */
    size_t i = strspn(text, " \t");
    if (text[i] == '\0')
        return nx_err_set(err, NX_EINVAL, "%s: expected an inline table { ... }, found nothing", name);
    if (text[i] != '{')
        return nx_err_set(err, NX_EINVAL, "%s:1:%zu: expected an inline table starting with '{'", name,
                          i + 1);
    try {
        std::string wrapped(wrapper);
        wrapped += text;
        return parse_text(wrapped, name, static_cast<int>(sizeof wrapper - 1), root, err);
    } catch (...) {
        return nx_err_set(err, NX_ENOMEM, "%s: out of memory while reading", name);
    }
}

void tc_free(tc_node *root)
{
    free_node(root);
}

const tc_node *tc_get(const tc_node *table, const char *key)
{
    if (!table || table->kind != TC_TABLE || !key)
        return nullptr;
    for (size_t i = 0; i < table->nitems; i++)
        if (table->items[i] && table->items[i]->key && strcmp(table->items[i]->key, key) == 0)
            return table->items[i];
    return nullptr;
}

const char *tc_kind_name(tc_kind k)
{
    switch (k) {
    case TC_TABLE: return "table";
    case TC_ARRAY: return "array";
    case TC_STRING: return "string";
    case TC_INT: return "integer";
    case TC_FLOAT: return "float";
    case TC_BOOL: return "boolean";
    case TC_DATETIME: return "datetime";
    }
    return "unknown kind";
}

nx_status tc_errf(nx_err *err, nx_status code, const tc_node *at, const char *fmt, ...)
{
    char msg[NX_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!at)
        return nx_err_set(err, code, "%s", msg);
    if (at->line <= 0)
        return nx_err_set(err, code, "%s: %s", src_of(at), msg);
    return nx_err_set(err, code, "%s:%d:%d: %s", src_of(at), at->line, at->column, msg);
}

nx_status tc_check_kind(const tc_node *n, tc_kind k, nx_err *err)
{
    if (!n)
        return nx_err_set(err, NX_EINVAL, "tc_check_kind: no value");
    if (n->kind == k)
        return NX_OK;
    if (n->key)
        return tc_errf(err, NX_EINVAL, n, "key '%s' must be %s %s, found %s", n->key, article(k), tc_kind_name(k),
                       tc_kind_name(n->kind));
    return tc_errf(err, NX_EINVAL, n, "value must be %s %s, found %s", article(k), tc_kind_name(k),
                   tc_kind_name(n->kind));
}

nx_status tc_want(const tc_node *table, const char *key, tc_kind k, const tc_node **out, nx_err *err)
{
    if (out)
        *out = nullptr;
    if (!table || !key || !out)
        return nx_err_set(err, NX_EINVAL, "tc_want: NULL argument");
    if (table->kind != TC_TABLE)
        return tc_check_kind(table, TC_TABLE, err);
    const tc_node *n = tc_get(table, key);
    if (!n) {
        if (table->key)
            return tc_errf(err, NX_EINVAL, table, "table '%s' is missing key '%s'", table->key, key);
        return tc_errf(err, NX_EINVAL, table, "table is missing key '%s'", key);
    }
    nx_status s = tc_check_kind(n, k, err);
    if (s == NX_OK)
        *out = n;
    return s;
}

nx_status tc_check_keys(const tc_node *table, const char *const *allowed, nx_err *err)
{
    if (!table || !allowed)
        return nx_err_set(err, NX_EINVAL, "tc_check_keys: NULL argument");
    if (table->kind != TC_TABLE)
        return tc_check_kind(table, TC_TABLE, err);
    for (size_t i = 0; i < table->nitems; i++) {
        const tc_node *n = table->items[i];
        const char *const *a = allowed;
        while (*a && strcmp(*a, n->key) != 0)
            a++;
        if (*a)
            continue;
        if (n->key_line <= 0)
            return nx_err_set(err, NX_EINVAL, "%s: unknown key '%s'", src_of(n), n->key);
        return nx_err_set(err, NX_EINVAL, "%s:%d:%d: unknown key '%s'", src_of(n), n->key_line,
                          n->key_column, n->key);
    }
    return NX_OK;
}

} // extern "C"
