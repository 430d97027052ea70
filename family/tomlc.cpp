/* tomlc.cpp: the C-ABI shim over toml++ declared in tomlc.h.
 *
 * The only C++ in the project.  Every entry point catches every exception
 * (toml::parse_error, std::bad_alloc, anything else) and turns it into an
 * nx_status; the C tree is malloc'd so that it outlives the toml++ objects,
 * which are destroyed before each call returns. */
#include "tomlc.h"

#include <sys/stat.h>

/* toml++'s own invariants, checked inside its parser: TOML_ASSERT is
 * assert() unless NDEBUG, and TOML_ASSERT_ASSUME an assert, or with NDEBUG
 * under clang __builtin_assume.  Malformed text reaches two of them in
 * toml++ 3.3.0 (`rows = [}`: parse_value's "not a value terminator"; a
 * table header whose key starts with neither a bare-key character nor a
 * quote: parse_key's), found by fuzz_point and fuzz_registry in a build
 * without NDEBUG: such a build (the sanitizer suite's Debug) aborted where
 * a release build reports the parse error that follows.  Both are compiled
 * out here, in every build: an input error is an error, never an abort,
 * and never an assumption the optimiser may act on.  preprocessor.h is
 * included once (#pragma once), so the definitions below are the ones
 * toml.h sees. */
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/impl/preprocessor.h>
#undef TOML_ASSERT_ASSUME
#define TOML_ASSERT_ASSUME(expr) static_assert(true)

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

/* Where the ASCII text given to toml++ (see prescan) has more columns
 * than the user's: from column outcol of line on, cum columns more. */
struct colshift {
    long line, outcol, cum;
};

/* The wrapper `v = ` of tc_parse_inline_table shifts columns of line 1;
 * shifts maps toml++'s columns back to the user's where prescan wrote an
 * escape for a character. */
struct ctx {
    const char *source;
    int shift;
    std::vector<colshift> shifts;
};

int clamp_index(toml::source_index v)
{
    return v > static_cast<toml::source_index>(INT_MAX) ? INT_MAX : static_cast<int>(v);
}

void to_user_pos(const ctx &c, const toml::source_position &p, int *line, int *col)
{
    *line = clamp_index(p.line);
    *col = clamp_index(p.column);
    /* the last shift of this line at or before the column */
    size_t lo = 0, hi = c.shifts.size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const colshift &e = c.shifts[mid];
        if (e.line < *line || (e.line == *line && e.outcol <= *col))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && c.shifts[lo - 1].line == *line)
        *col = static_cast<int>(*col - c.shifts[lo - 1].cum < 1 ? 1 : *col - c.shifts[lo - 1].cum);
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

/* What toml++ is given is checked first, by a small scanner that knows
 * TOML's strings and comments:
 *
 * - toml++ 3.3.0 (Debian 12) asks "is this whitespace?" of a character
 *   where TOML expects whitespace, and for non-ASCII characters (U+00A1 ...
 *   U+0499, U+FEF7, ...) that question can reach TOML_UNREACHABLE
 *   (__builtin_unreachable: undefined behaviour; fixed upstream after
 *   3.3.0).  So toml++ is only ever given ASCII text, whatever the input:
 *   outside strings and comments TOML 1.0 allows ASCII only (bare keys,
 *   numbers, booleans, dates, whitespace), so a non-ASCII character there
 *   is refused with its line and column; inside a basic string each one is
 *   written as its \uXXXX (\UXXXXXXXX) escape, a literal string holding
 *   one is rewritten as the basic string of the same value, and in a
 *   comment each becomes '?'.  Where this scanner and toml++ would read a
 *   malformed text differently, toml++ still sees ASCII only: it reports a
 *   syntax error, never reaches the defect.  toml++'s columns are mapped
 *   back to the user's (ctx::shifts).  After a backslash (an escape, or the
 *   first character after a line-ending backslash) a non-ASCII character is
 *   refused (write it as \uXXXX).  Invalid UTF-8 in a string or comment is
 *   refused, naming the byte.
 * - Nesting (table headers, dotted keys, arrays and inline tables together)
 *   is bounded by TC_MAX_NESTING: toml++ bounds arrays and inline tables
 *   but not dotted keys, and a key 20,000 components long overflowed the
 *   stack.  Every walk over the C tree is then bounded too. */
struct scan_pos {
    long line = 1, col = 1;
};

[[noreturn]] void scan_fail(const ctx &c, const scan_pos &at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
[[noreturn]] void scan_fail(const ctx &c, const scan_pos &at, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* at is in the user's text (only the wrapper's shift applies) */
    int line = at.line > INT_MAX ? INT_MAX : static_cast<int>(at.line);
    int col = at.col > INT_MAX ? INT_MAX : static_cast<int>(at.col);
    if (line == 1 && c.shift > 0)
        col = col - c.shift < 1 ? 1 : col - c.shift;
    fail(NX_EINVAL, "%s:%d:%d: %s", c.source, line, col, msg);
}

/* "U+039A", or "byte 0xNN" where s[i] does not start valid UTF-8. */
std::string describe_cp(std::string_view s, size_t i)
{
    unsigned char b = static_cast<unsigned char>(s[i]);
    int n = b >= 0xF0 && b < 0xF8 ? 3 : b >= 0xE0 ? 2 : b >= 0xC2 && b < 0xE0 ? 1 : -1;
    if (b >= 0xF8)
        n = -1;
    unsigned long cp = n == 3 ? b & 0x07u : n == 2 ? b & 0x0Fu : b & 0x1Fu;
    for (int k = 1; n > 0 && k <= n; k++) {
        unsigned char cb = i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
        if ((cb & 0xC0u) != 0x80u) {
            n = -1;
            break;
        }
        cp = cp << 6 | (cb & 0x3Fu);
    }
    char buf[32];
    if (n < 0)
        snprintf(buf, sizeof buf, "byte 0x%02X (not UTF-8)", b);
    else
        snprintf(buf, sizeof buf, "U+%04lX", cp);
    return buf;
}

/* The code point at s[i] and its length in bytes, or a length of 0 where
 * s[i] does not start valid UTF-8 (overlong forms, surrogates and values
 * past U+10FFFF included). */
size_t utf8_at(std::string_view s, size_t i, unsigned long *cp)
{
    unsigned char b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : b >= 0xC2 && b < 0xE0 ? 2 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xF0 && b < 0xF5 ? 4 : 0;
    if (n == 0 || i + n > s.size())
        return 0;
    unsigned long v = n == 1 ? b : n == 2 ? b & 0x1Fu : n == 3 ? b & 0x0Fu : b & 0x07u;
    for (size_t k = 1; k < n; k++) {
        unsigned char cb = static_cast<unsigned char>(s[i + k]);
        if ((cb & 0xC0u) != 0x80u)
            return 0;
        v = v << 6 | (cb & 0x3Fu);
    }
    static const unsigned long least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* Checks s (see above) and writes the ASCII text toml++ is given to out,
 * the column shifts its escapes make to c.shifts. */
void prescan(ctx &c, std::string_view s, std::string &out)
{
    enum { NORMAL, COMMENT, BASIC, LITERAL, ML_BASIC, ML_LITERAL } mode = NORMAL;
    scan_pos pos;
    size_t i = 0;
    long ocol = 1, cum = 0; /* out's column, and how many more than pos.col on this line */
    bool conv = false;      /* the literal string being read is written as a basic one */
    out.clear();
    out.reserve(s.size() + 16);
    /* moves past s[i], copying it */
    auto step = [&]() {
        unsigned char b = static_cast<unsigned char>(s[i]);
        if (b == '\n') {
            pos.line++;
            pos.col = 1;
            ocol = 1;
            cum = 0;
        } else {
            if ((b & 0xC0u) != 0x80u)
                pos.col++;
            ocol++;
        }
        out.push_back(static_cast<char>(b));
        i++;
    };
    /* moves past the character at s[i] (n bytes, one column), writing text instead */
    auto replace = [&](size_t n, const char *text) {
        size_t len = strlen(text);
        out.append(text, len);
        ocol += static_cast<long>(len);
        pos.col++;
        i += n;
        if (len != 1) {
            cum += static_cast<long>(len) - 1;
            c.shifts.push_back({pos.line, ocol, cum});
        }
    };
    /* the non-ASCII character at s[i]: its length, or a refusal naming the byte */
    auto non_ascii = [&](unsigned long *cp) {
        size_t n = utf8_at(s, i, cp);
        if (n == 0)
            scan_fail(c, pos, "invalid UTF-8 in a string or comment: %s", describe_cp(s, i).c_str());
        return n;
    };
    /* the character at s[i] as an escape of a basic string */
    auto escape = [&]() {
        unsigned long cp;
        size_t n = non_ascii(&cp);
        char e[16];
        snprintf(e, sizeof e, cp > 0xFFFF ? "\\U%08lX" : "\\u%04lX", cp);
        replace(n, e);
    };
    auto quotes = [&](char q) { /* the run of q at i, at most 3 counted */
        size_t n = 0;
        while (n < 3 && i + n < s.size() && s[i + n] == q)
            n++;
        return n;
    };
    /* nesting: the open arrays / inline tables with the depth to go back to */
    std::vector<std::pair<char, int>> open;
    int depth = 0;      /* of the keys of the current table, or the elements of the current array */
    int vdepth = 0;     /* of the value about to start */
    bool in_key = true; /* reading a key: at the start of a line (top level), after '{' or ',' in a table */
    int comps = 0;      /* components of that key so far */
    int header = 0;     /* 1: in a [table] header, 2: in an [[array.of.tables]] header */
    scan_pos mark;      /* where the key or header began */
    auto check = [&](int d, const scan_pos &at) {
        if (d > TC_MAX_NESTING)
            scan_fail(c, at, "nested deeper than %d levels (tables, dotted keys, arrays and inline tables "
                             "together)", TC_MAX_NESTING);
    };
    auto key_char = [&]() {
        if ((in_key || header) && comps == 0) {
            comps = 1;
            if (!header)
                mark = pos;
        }
    };
    while (i < s.size()) {
        unsigned char b = static_cast<unsigned char>(s[i]);
        switch (mode) {
        case COMMENT:
            if (b == '\n') {
                mode = NORMAL; /* the newline is NORMAL's */
            } else if (b >= 0x80) {
                unsigned long cp;
                replace(non_ascii(&cp), "?");
            } else {
                step();
            }
            continue;
        case BASIC:
        case LITERAL:
            if (b == '\n') {
                mode = NORMAL; /* unterminated: toml++ says so */
                continue;
            }
            if (b == '\\' && mode == BASIC && i + 1 < s.size() && s[i + 1] != '\n') {
                step();
                if (static_cast<unsigned char>(s[i]) >= 0x80)
                    scan_fail(c, pos, "%s after '\\' in a string (not an escape; write it as \\uXXXX)",
                              describe_cp(s, i).c_str());
                step();
                continue;
            }
            if (b == (mode == BASIC ? '"' : '\'')) {
                mode = NORMAL;
                if (conv) {
                    replace(1, "\"");
                    continue;
                }
            } else if (b >= 0x80) {
                escape();
                continue;
            } else if (conv && (b == '\\' || b == '"')) {
                replace(1, b == '"' ? "\\\"" : "\\\\");
                continue;
            }
            step();
            continue;
        case ML_LITERAL:
        case ML_BASIC: {
            char q = mode == ML_BASIC ? '"' : '\'';
            if (b == static_cast<unsigned char>(q) && quotes(q) == 3) {
                /* the delimiter is the last three of up to five quotes */
                size_t run = 0;
                while (run < 5 && i + run < s.size() && s[i + run] == q)
                    run++;
                for (size_t k = 0; k < run; k++) {
                    if (conv && k + 3 >= run)
                        replace(1, "\""); /* the delimiter, as a basic string's */
                    else
                        step(); /* a quote of the content: ' is ordinary in a basic string */
                }
                mode = NORMAL;
                continue;
            }
            if (b >= 0x80) {
                escape();
                continue;
            }
            if (conv && (b == '\\' || b == '"')) {
                replace(1, b == '"' ? "\\\"" : "\\\\");
                continue;
            }
            if (b == '\\' && mode == ML_BASIC) {
                step();
                if (i >= s.size())
                    continue;
                unsigned char e = static_cast<unsigned char>(s[i]);
                if (e >= 0x80)
                    scan_fail(c, pos, "%s after '\\' in a multi-line string (not an escape; write it as \\uXXXX)",
                              describe_cp(s, i).c_str());
                if (e == ' ' || e == '\t' || e == '\r' || e == '\n') {
                    /* a line-ending backslash: the whitespace and newlines after it are trimmed */
                    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
                        step();
                    if (i < s.size() && static_cast<unsigned char>(s[i]) >= 0x80)
                        scan_fail(c, pos,
                                  "%s first after a line-ending backslash in a multi-line string is not "
                                  "supported (write it as \\uXXXX)",
                                  describe_cp(s, i).c_str());
                    continue;
                }
                step(); /* the escaped character */
                continue;
            }
            step();
            continue;
        }
        case NORMAL:
            break;
        }
        if (b >= 0x80)
            scan_fail(c, pos, "unexpected %s outside a string or comment (TOML allows only ASCII there)",
                      describe_cp(s, i).c_str());
        switch (b) {
        case '#':
            mode = COMMENT;
            step();
            continue;
        case '"':
        case '\'':
            /* A string starts only after whitespace, '=', ',', '[', '{' or
             * a key's '.'.  A quote anywhere else (glued to a number, a
             * bare key, a control character) is no string start to toml++
             * (it stops at the token before and asks "is this whitespace?"
             * of what follows: `s = 3'\u00FD` reached TOML_UNREACHABLE),
             * so the scanner may not read a string there either: refused. */
            if (i > 0) {
                unsigned char pb = static_cast<unsigned char>(s[i - 1]);
                if (!(pb == ' ' || pb == '\t' || pb == '\n' || pb == '\r' || pb == '=' || pb == ',' || pb == '[' ||
                      pb == '{' || (pb == '.' && (in_key || header)))) {
                    char what[16];
                    snprintf(what, sizeof what, pb >= 0x20 && pb < 0x7f ? "'%c'" : "byte 0x%02X", pb);
                    scan_fail(c, pos, "a quote right after %s (a string starts after whitespace, '=', ',', '[', "
                                      "'{' or a key's '.')", what);
                }
            }
            key_char();
            {
                bool ml = quotes(static_cast<char>(b)) == 3;
                mode = b == '"' ? (ml ? ML_BASIC : BASIC) : (ml ? ML_LITERAL : LITERAL);
                conv = false;
                if (b == '\'') {
                    /* a literal string holding a non-ASCII character is
                     * written as a basic string (escapes are a basic
                     * string's only); where it ends is found as below */
                    size_t j = i + (ml ? 3 : 1);
                    for (; j < s.size(); j++) {
                        unsigned char x = static_cast<unsigned char>(s[j]);
                        if (x >= 0x80) {
                            conv = true;
                            break;
                        }
                        if (ml ? x == '\'' && j + 2 < s.size() && s[j + 1] == '\'' && s[j + 2] == '\''
                               : x == '\'' || x == '\n')
                            break;
                    }
                }
                for (int k = 0; k < (ml ? 3 : 1); k++) {
                    if (conv)
                        replace(1, "\"");
                    else
                        step();
                }
            }
            continue;
        case '\n':
            if (open.empty()) {
                in_key = true;
                comps = 0;
                header = 0;
            }
            break;
        case ' ': case '\t': case '\r':
            break;
        case '.':
            if ((in_key || header) && comps > 0)
                comps++;
            break;
        case '=':
            if (in_key) {
                vdepth = depth + (comps > 0 ? comps : 1);
                check(vdepth, mark);
                in_key = false;
            }
            break;
        case '[':
            if (open.empty() && in_key && comps == 0 && !header) {
                header = i + 1 < s.size() && s[i + 1] == '[' ? 2 : 1;
                mark = pos;
                if (header == 2)
                    step();
            } else if (!in_key && !header) {
                open.emplace_back('[', depth);
                depth = vdepth + 1;
                vdepth = depth;
                check(depth, pos);
            }
            break;
        case '{':
            if (!in_key && !header) {
                open.emplace_back('{', depth);
                depth = vdepth;
                in_key = true;
                comps = 0;
            }
            break;
        case ']':
            if (header) {
                depth = comps + (header == 2 ? 1 : 0);
                check(depth, mark);
                header = 0;
                in_key = false; /* the rest of the line: a comment or nothing */
                comps = 0;
                if (i + 1 < s.size() && s[i + 1] == ']')
                    step();
                break;
            }
            __attribute__((fallthrough));
        case '}':
            if (!open.empty()) {
                depth = open.back().second;
                open.pop_back();
                in_key = false;
                vdepth = depth;
            }
            break;
        case ',':
            if (!open.empty() && open.back().first == '{') {
                in_key = true;
                comps = 0;
            } else {
                vdepth = depth;
            }
            break;
        default:
            key_char();
            break;
        }
        step();
    }
}

/* Parses text (wrapped by tc_parse_inline_table when shift > 0) into *root.
 * The single place where exceptions are caught. */
nx_status parse_text(std::string_view text, const char *name, int shift, tc_node **root, nx_err *err)
{
    tc_node *tree = nullptr;
    try {
        ctx c{name, shift, {}};
        std::string ascii;
        prescan(c, text, ascii);
        toml::table doc;
        try {
            doc = toml::parse(std::string_view(ascii), std::string_view(name));
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
        nx_err local{};
        /* a FIFO or device is refused before it is read (or waited on) */
        FILE *f = static_cast<FILE *>(nx_fopen_input(path, err ? err : &local));
        if (!f)
            return err ? err->code : local.code;
        /* a size cap before reading: a registry file is kilobytes, and a
         * huge one would be read whole before its first error */
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && (uint64_t)sb.st_size > TC_FILE_MAX) {
            fclose(f);
            return nx_err_set(err, NX_EINVAL, "%s: %llu bytes: a TOML file may hold at most %u MiB (docs/limits.md)",
                              path, (unsigned long long)sb.st_size, (unsigned)(TC_FILE_MAX >> 20));
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
            if (text.size() > TC_FILE_MAX) {
                fclose(f);
                return nx_err_set(err, NX_EINVAL, "%s: more than %u MiB: a TOML file may hold at most that "
                                  "(docs/limits.md)", path, (unsigned)(TC_FILE_MAX >> 20));
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
