/* tier3.h: the accuracy bar (DESIGN.md "Parity tiers", Tier 3): a metrics
 * file against the bars a point or model declares.
 *
 *   metrics: {"accuracy": 0.71, "perplexity": 9.2, ...}   name -> number
 *   bars:    {"accuracy": 0.7,                      a number is a minimum
 *             "perplexity": {"max": 8.5},
 *             "f1": {"min": 0.5, "max": 1}}
 *
 * A metric passes when it is present, >= its min and <= its max (equal to
 * the bar passes).  A metric the bars name but the metrics file lacks fails,
 * and is named.  Metrics without a bar are counted as unchecked and
 * otherwise ignored.  Parsing is strict: both files are JSON objects without
 * duplicate keys; a metric is a number; a bar is a number or an object with
 * "min" and/or "max" numbers and nothing else, min <= max; at least one bar.
 * Errors name the file and the key. */
#ifndef PARITY_TIER3_H
#define PARITY_TIER3_H

#include <jansson.h>
#include <stddef.h>

#include "nx_error.h"

typedef struct tier3_item {
    char *name;
    int has_min, has_max;
    double min, max;   /* the bar */
    int present;       /* the metrics file has it */
    double value;      /* when present */
    int pass;
} tier3_item;

typedef struct tier3_result {
    char *metrics_name, *bars_name;
    tier3_item *items; /* in the bars' order */
    size_t n;
    size_t passed, failed, missing; /* missing metrics are failed too */
    size_t unchecked;               /* metrics without a bar */
} tier3_result;

/* Reads both files.  NX_EIO when one cannot be opened, NX_EINVAL for
 * malformed JSON ("path:line:column: ...") or content ("path: key \"x\": ..."). */
nx_status tier3_check_files(const char *metrics_path, const char *bars_path, tier3_result *out,
                            nx_err *err);
/* The same on parsed JSON; the names are used in messages. */
nx_status tier3_check_json(const char *metrics_name, const json_t *metrics, const char *bars_name,
                           const json_t *bars, tier3_result *out, nx_err *err);
/* Every bar met. */
int tier3_pass(const tier3_result *r);

/* A metric as JSON: a number, or "nan", "inf", "-inf" where it is not
 * finite (JSON has none), which the metrics readers above take back: a
 * NaN metric is present and fails every bar, never "missing". */
json_t *tier3_number_json(double v);
void tier3_result_free(tier3_result *r);

/*   Tier 3: metrics.json against bars.json: 1 / 3 bars met
 *   pass accuracy: 0.71 (min 0.7)
 *   FAIL perplexity: 9.2 (max 8.5)
 *   FAIL f1: missing from metrics.json (min 0.5, max 1.0)
 * malloc'd; NULL when out of memory. */
char *tier3_result_text(const tier3_result *r);
/* New reference; NULL when out of memory. */
json_t *tier3_result_json(const tier3_result *r);

#endif
