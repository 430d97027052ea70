/* explain.h: `parity explain A [B]` (docs/explain.md): why two family
 * traces (or a trace and the exact reference of its point) differ in bits.
 * The diff of their outputs, then, for each side, the numerics point it
 * realises: its declared point when that reproduces its rows bit for bit,
 * else the point `fit` finds on the rows of the family's reduction (the
 * layout is the family's, refimpl's ref_output_rows), and the difference
 * between the two realised points in `registry compare`'s words ("split
 * count: 4 vs 8").  The inputs are the traces' own or those their seed
 * regenerates.  The library computes; the CLI prints ex_result.text. */
#ifndef PARITY_EXPLAIN_H
#define PARITY_EXPLAIN_H

#include <stddef.h>

#include <jansson.h>

#include "nx_error.h"
#include "registry.h"

typedef struct ex_opts {
    size_t max_rows;      /* rows of the reduction fitted per side (0: 4096);
                             more are sampled evenly, and the text says so */
    int threads;          /* <= 0: OpenMP's default */
    int progress;         /* fit's progress lines on stderr */
} ex_opts;

typedef enum ex_outcome {
    EX_SAME = 0,          /* the two sides agree in every bit: nothing to explain */
    EX_EXPLAINED = 1,     /* they differ and the realised points differ (named) */
    EX_UNEXPLAINED = 2    /* they differ and no difference between points was
                             found (no point fits a side, the family has no
                             row layout, or the rows cannot tell the points apart) */
} ex_outcome;

typedef struct ex_result {
    ex_outcome outcome;
    size_t mismatched, compared;  /* output elements whose bits differ / compared */
    size_t differences;           /* lines of the point difference */
    char *text;                   /* the report, malloc'd */
    json_t *json;                 /* the same as one object (docs/explain.md), owned */
} ex_result;

void ex_result_free(ex_result *r);

/* Explains trace a against trace b, or against the exact reference of a's
 * point when b is NULL.  Errors: unreadable or invalid traces, traces of
 * different families or shapes, a point the registry does not resolve. */
nx_status ex_explain(const reg_registry *reg, const char *a, const char *b, const ex_opts *o, ex_result *r,
                     nx_err *err);

#endif
