/* report_json.h: two small jansson helpers shared by the report builders
 * (compare.c, transcript.c, tier3.c).  Header-only. */
#ifndef PARITY_REPORT_JSON_H
#define PARITY_REPORT_JSON_H

#include <jansson.h>

/* "an object", "a string", ...: for messages about a value of the wrong type. */
static inline const char *rj_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Sets o[key] = v, taking the reference (v may be NULL after a failed
 * allocation); a failure clears *ok, so a builder checks once at the end. */
static inline void rj_set(json_t *o, const char *key, json_t *v, int *ok)
{
    if (!v || json_object_set_new(o, key, v) != 0)
        *ok = 0;
}

/* Returns o, or NULL (and frees o) when a set failed. */
static inline json_t *rj_done(json_t *o, int ok)
{
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

#endif
