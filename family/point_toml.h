/* point_toml.h: reading a numerics point (docs/numerics.md §3) from TOML, either
 * a table of the registry or the inline table the CLI receives. */
#ifndef POINT_TOML_H
#define POINT_TOML_H

#include "nx_point.h"
#include "tomlc.h"

/* Fills *pt (which the caller has not initialised) from a TOML table; every
 * error names the key and its line:column.  On failure *pt holds nothing to
 * free. */
nx_status pt_from_toml(const tc_node *table, nx_point *pt, nx_err *err);

/* The same from inline-table text such as `{ acc = "fp32", tree = "seq" }`;
 * name prefixes messages (e.g. "--numerics"). */
nx_status pt_from_text(const char *text, const char *name, nx_point *pt, nx_err *err);

#endif
