/* tomlc.h: a TOML document as a plain C tree.
 *
 * The registry files (KERNEL_FAMILIES.toml, HARDWARE.toml, DEVICES.toml) and
 * the CLI's inline-table arguments are parsed by toml++ (strict TOML 1.0)
 * behind tomlc.cpp, copied into the tree below, and the toml++ objects are
 * freed before the call returns.  This header is plain C17; no C++ exception
 * ever crosses it.  Errors follow nx_error.h: an nx_status is returned and the
 * nx_err (if given) says "name:line:column: what is wrong". */
#ifndef TOMLC_H
#define TOMLC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inside the C linkage block: nx_error.h has no __cplusplus guard of its
 * own, and tomlc.cpp must call the C nx_err_set. */
#include "nx_error.h"

/* The deepest nesting a document may have: table header components, dotted
 * key components, arrays and inline tables, counted together (the registry
 * needs fewer than 10).  Deeper is NX_EINVAL naming the line and column. */
#define TC_MAX_NESTING 128

typedef enum { TC_TABLE, TC_ARRAY, TC_STRING, TC_INT, TC_FLOAT, TC_BOOL, TC_DATETIME } tc_kind;

typedef struct tc_node tc_node;
struct tc_node {
    tc_kind kind;
    /* Source position of the value, 1-based; 0 if unknown (the document
     * root).  Columns count Unicode code points, as toml++ does.  A table
     * opened by a [header] sits at its header; an array of tables ([[x]])
     * and each of its elements at their [[x]] headers. */
    int line, column;
    int key_line, key_column;    /* position of its key within the parent table, if any */
    char *key;                   /* key in the parent table, NULL for array elements / root */
    /* TC_TABLE / TC_ARRAY: children in document order (a table's keys in
     * the order they first appear in the document). */
    tc_node **items; size_t nitems;
    /* TC_STRING: the string (strings holding U+0000 are rejected at parse
     * time).  TC_DATETIME: its TOML text as toml++ prints it, one of
     * 1979-05-27T07:32:00.5-07:00 (offset date-time, Z for +00:00),
     * 1979-05-27T07:32:00 (local date-time), 1979-05-27 (local date),
     * 07:32:00.5 (local time); 'T' separator, fraction without trailing
     * zeros. */
    char *str;
    long long i; double f; int b;  /* TC_INT, TC_FLOAT, TC_BOOL (0 or 1) */
    int inline_table;            /* table written inline { ... }, or nested inside one */
    const char *source;          /* name used in messages; shared, owned by the tree */
};

/* Parses the file at path (its name in messages is the path).  On success
 * *root is a TC_TABLE to release with tc_free; on failure *root is NULL and
 * the status is NX_EIO (the file cannot be read), NX_EINVAL (not valid TOML,
 * including duplicate keys and tables), or NX_ENOMEM. */
/* The largest TOML file read (16 MiB): larger is an input error naming it,
 * said before it is read. */
#define TC_FILE_MAX ((uint64_t)16 << 20)
nx_status tc_parse_file(const char *path, tc_node **root, nx_err *err);

/* Parses a whole document held in text; name (NULL: "<string>") is used in
 * messages. */
nx_status tc_parse_string(const char *text, const char *name, tc_node **root, nx_err *err);

/* Parses a bare inline table, the form the CLI receives on its command line:
 *   { acc = "fp32", tree = "split(4, seq, seq)", atom = { frac_bits = 25 } }
 * It is parsed as the document `v = <text>`; *root is the table itself (key
 * NULL, inline_table 1).  Positions on the first line, in the tree and in
 * error messages, are columns of text, not of the wrapper.  Anything else
 * than one inline table (a bare value, keys after it on later lines) is
 * NX_EINVAL. */
nx_status tc_parse_inline_table(const char *text, const char *name, tc_node **root, nx_err *err);

/* Frees a tree returned by tc_parse_*; NULL is fine.  Only roots: a subtree
 * shares its source name with the root. */
void tc_free(tc_node *root);

/* The value of key in table; NULL if absent or table is not a TC_TABLE. */
const tc_node *tc_get(const tc_node *table, const char *key);

/* "table", "array", "string", "integer", "float", "boolean", "datetime". */
const char *tc_kind_name(tc_kind k);

/* Helpers for the code that walks the tree; they set messages such as
 *   kernels/cpu/common/KERNEL_FAMILIES.toml:12:7: key 'acc' must be a string, found integer
 * Kinds are strict: an integer is not a float. */

/* NX_OK if n is of kind k; otherwise NX_EINVAL, "key 'x' must be ..." (or
 * "value must be ..." for an array element) at n's position. */
nx_status tc_check_kind(const tc_node *n, tc_kind k, nx_err *err);

/* A required key: *out = its value if present and of kind k (NX_OK);
 * otherwise *out = NULL and NX_EINVAL, "table 't' is missing key 'x'" at the
 * table's position, or the tc_check_kind message at the value's. */
nx_status tc_want(const tc_node *table, const char *key, tc_kind k, const tc_node **out, nx_err *err);

/* NX_OK if every key of table is in allowed (NULL-terminated); otherwise
 * NX_EINVAL, "unknown key 'x'" at the first stray key, so typos are not
 * silently ignored. */
nx_status tc_check_keys(const tc_node *table, const char *const *allowed, nx_err *err);

/* Sets *err to "source:line:column: <fmt...>" for node at ("source: ..."
 * when its position is unknown, just the message when at is NULL) and
 * returns code. */
nx_status tc_errf(nx_err *err, nx_status code, const tc_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif

#endif
