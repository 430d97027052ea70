/* transcript.h: the model-level Tier 2 check (DESIGN.md "Parity tiers"):
 * the greedy-decoding transcript match rate of a candidate against a
 * control, from two JSONL files of token ids.
 *
 * Each line of a file is one prompt's transcript, either
 *     [1, 2, 3]                              (matched by line number), or
 *     {"prompt": "p0" | 17, "tokens": [1, 2, 3]}  (matched by prompt id).
 * Parsing is strict: one JSON value per line (a final newline is allowed,
 * "\r\n" too; an empty line is an error), integer tokens only, no key other
 * than "prompt" and "tokens", no duplicate keys or prompt ids, and every line
 * of both files either has a prompt id or none has.  A string id and an
 * integer id never match each other ("1" is not 1).  Every error names
 * file:line (and the column for JSON syntax).  A file with no transcript at
 * all is an error too.
 *
 * Per prompt: identical or not, the first divergence (position, control
 * token, candidate token; a transcript that ended is said so), lengths.  A
 * prompt of the control absent from the candidate is "missing", one of the
 * candidate absent from the control "extra"; both count as not identical.
 * Overall: prompts identical / prompts (of both files together), and token
 * agreement: the tokens before each prompt's first divergence over the
 * longer transcript's length, summed over prompts (a missing or extra
 * prompt adds its length to the total only). */
#ifndef PARITY_TRANSCRIPT_H
#define PARITY_TRANSCRIPT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"

typedef enum tscript_status {
    TSCRIPT_IDENTICAL,
    TSCRIPT_DIVERGED,
    TSCRIPT_MISSING, /* in the control, not in the candidate */
    TSCRIPT_EXTRA    /* in the candidate, not in the control */
} tscript_status;

typedef enum tscript_id_kind {
    TSCRIPT_ID_LINE,   /* no ids: matched by line number */
    TSCRIPT_ID_STRING,
    TSCRIPT_ID_INT
} tscript_id_kind;

typedef struct tscript_prompt {
    tscript_id_kind id_kind;
    char *id;               /* the string id, the integer id in decimal, or
                               the line number in decimal */
    tscript_status status;
    size_t control_line;    /* 1-based; 0 when absent from that file */
    size_t candidate_line;
    size_t control_len, candidate_len;
    /* Tokens equal before the first divergence: its position when the
     * transcripts differ (DIVERGED), their common length when identical,
     * 0 for MISSING / EXTRA. */
    size_t agreed;
    /* The tokens at the first divergence (DIVERGED); has_* is 0 where that
     * transcript had already ended. */
    int has_control_token, has_candidate_token;
    int64_t control_token, candidate_token;
} tscript_prompt;

typedef struct tscript_result {
    char *control_name, *candidate_name;
    tscript_id_kind matched_by;  /* TSCRIPT_ID_LINE, or by id */
    tscript_prompt *prompts;     /* the control's order, then the extras in
                                    the candidate's order */
    size_t nprompts;
    size_t identical, diverged, missing, extra;
    uint64_t agreed_tokens, total_tokens;
} tscript_result;

/* Reads and compares two JSONL files.  NX_EIO when a file cannot be read,
 * NX_EINVAL for a malformed one (the message starts with "path:line:"). */
nx_status tscript_compare_files(const char *control_path, const char *candidate_path,
                                tscript_result *out, nx_err *err);
/* The same on text already in memory; the names are used in messages. */
nx_status tscript_compare_text(const char *control_name, const char *control, size_t control_len,
                               const char *candidate_name, const char *candidate,
                               size_t candidate_len, tscript_result *out, nx_err *err);
void tscript_result_free(tscript_result *r);

/* identical / nprompts. */
double tscript_match_rate(const tscript_result *r);
/* agreed_tokens / total_tokens; 1 when there are no tokens at all. */
double tscript_token_agreement(const tscript_result *r);
/* The pass condition of a bit-parity run: every prompt identical. */
int tscript_all_identical(const tscript_result *r);

const char *tscript_status_name(tscript_status s); /* "identical", "diverged", ... */

/*   Transcripts: a.jsonl (control) vs b.jsonl (candidate), matched by prompt id
 *   Prompts identical: 7 / 10 (70.0%)
 *   Token agreement up to the first divergence: 812 / 1000 (81.2%)
 *   prompt "p3": diverged at token 0: control 17, candidate 42 (lengths 12, 12; lines 3, 3)
 *   ...one line per prompt that is not identical.  malloc'd; NULL when out of
 * memory. */
char *tscript_result_text(const tscript_result *r);
/* Everything, every prompt included.  New reference; NULL when out of memory. */
json_t *tscript_result_json(const tscript_result *r);

#endif
