/* bench.h: `parity bench` (docs/lkb.md): times a family point's kernel on
 * a class backend against its baseline and makes a measurement record
 * (lkb.h's lkb_record) for the registry's MEASUREMENTS.toml and the
 * ledger's `measurement` table. */
#ifndef PARITY_LKB_BENCH_H
#define PARITY_LKB_BENCH_H

#include "device.h"
#include "lkb.h"

typedef struct lkb_bench_opts {
    const dev_backend *backend;
    const char *preset;         /* shape preset ("8b-layer", "small"); its batch dimension is set to rows */
    const char *shape;          /* or a whole shape, NULL: the preset's */
    int warmup, repeats, threads;
    const char *baseline_class; /* NULL: the point's legacy kernel (none: no baseline) */
    unsigned long long seed;
} lkb_bench_opts;

/* Warm-up runs, then `repeats` timed runs of the kernel, each followed by
 * one of the baseline; the median, the extremes and the noise band (max -
 * min); energy per run where a counter is readable (RAPL packages on the
 * cpu backend, NVML device 0 on the cuda backend).  rec is filled (its id
 * CLASS.FAMILY.POINT.rROWS.YYYYMMDDTHHMMSSZ, time from the ledger clock);
 * free with lkb_records_free on a one-record lkb_records. */
nx_status lkb_bench(const reg_registry *r, const char *class_name, const char *point, long long rows,
                    const lkb_bench_opts *o, lkb_record *rec, nx_err *err);

/* Appends records to DIR/<class>/MEASUREMENTS.toml (created when absent),
 * written whole to a temporary beside it and renamed; an id already there
 * gets a suffix -2, -3, ... (recs[i].id is updated). */
nx_status lkb_records_append(const char *kernels_dir, const char *class_name, lkb_record *recs, size_t n,
                             nx_err *err);

/* Adds the record to the ledger's `measurement` table. */
nx_status lkb_record_ledger(const char *ledger_path, const lkb_record *r, const char *registry_commit, nx_err *err);

#endif
