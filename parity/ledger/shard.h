/* shard.h: scale-out (docs/ledger.md): a campaign's points split into N
 * shards, deterministically and balanced by expected cost, so that N
 * processes (a Slurm job array, a Kubernetes Indexed Job) each run one and
 * their ledgers merge (ledger_merge) into what one process would record. */
#ifndef PARITY_SHARD_H
#define PARITY_SHARD_H

#include <stddef.h>

#include "nx_error.h"

/* Parses "i/N" (1 <= i <= N <= 65536). */
nx_status shard_parse(const char *spec, int *index, int *count, nx_err *err);

/* The expected cost of a point of family at the preset's shape: the product
 * of the shape's dimensions (1 without a shape). */
double shard_cost(const char *preset, const char *family_point);

/* keep[k] = 1 on entry marks the candidate points (ids[k], FAMILY.POINT);
 * on return only those of shard index (1-based) of count stay 1.  The
 * candidates are dealt largest expected cost first (ties: by id) each to
 * the shard with the least cost so far (ties: the lowest index): the same
 * split in every process, whatever order the ids come in. */
nx_status shard_select(char *const *ids, size_t n, const char *preset, int index, int count, unsigned char *keep,
                       nx_err *err);

typedef struct ledger_merge_stats {
    size_t runs_added, runs_present, runs_incomplete, points_added;
    size_t measurements_added, measurements_present; /* `parity bench` records, by id */
} ledger_merge_stats;

/* Adds the complete runs of every ledger ins[k] to out (created when
 * missing), each with its points, checks and traces; a run already in out
 * (the same uuid) is skipped, so merging again changes nothing.
 * Incomplete runs are not merged (counted).  The microbenchmark records
 * (table measurement) are added by id: a record whose id out already holds
 * is skipped (counted), so merging again changes nothing.  One
 * transaction per input. */
nx_status ledger_merge(const char *out, char *const *ins, size_t nin, ledger_merge_stats *st, nx_err *err);

#endif
