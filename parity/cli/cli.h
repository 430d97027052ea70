/* cli.h: what the subcommands of the `parity` CLI share: exit statuses,
 * option scanning, error printing (cli.c), and the entry point of each
 * command (cmd_*.c) that main.c dispatches to.  Only parity/cli/ includes
 * it. */
#ifndef PARITY_CLI_H
#define PARITY_CLI_H

#include <stddef.h>

#include "nx_error.h"

/* Exit statuses (documented in `parity --help`). */
enum {
    EXIT_PASS = 0,      /* success; every check passed */
    EXIT_PARITY = 1,    /* a parity check failed */
    EXIT_INPUT = 2,     /* usage error or bad input (point, tree, file, shape) */
    EXIT_INTERNAL = 3   /* an engine disagreed with another, or out of memory */
};

/* Option scanning: `--name value` and `--name=value`.  Returns 1 and sets
 * *val when argv[*i] is option `name`; advances *i past its value.  A
 * missing value is reported and *bad set. */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **val, int *bad);
int cli_flag(char **argv, int i, const char *name);

/* Prints "parity <cmd>: <message>" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints an nx_err and returns the exit status for its code. */
int cli_fail(const char *cmd, const nx_err *e);

/* Takes the global options --max-bytes N, --max-terms N, --max-ops N and
 * --max-work N (K, M, G, T suffixes: powers of 1024) out of argv, wherever they stand,
 * and sets the process's limits on sizes from inputs (nx_limits.h,
 * docs/limits.md).  Returns 0, or EXIT_INPUT after printing why. */
int cli_limits_args(int *argc, char **argv);

/* Parses a positive integer option value; reports and returns -1 if bad. */
long cli_long(const char *cmd, const char *opt, const char *val, long lo, long hi);

/* Files a command is about to write, checked before it writes any: an
 * output may not be a symbolic link or a special file (a device, a FIFO,
 * a directory), must be in a directory that exists, may not be one of the
 * inputs (also through another path, a symbolic link or a hard link:
 * st_dev and st_ino), and no two outputs may be the same file.  Entries
 * with path NULL (an option not given) are skipped.  Prints why and
 * returns EXIT_INPUT, or returns 0.  (A ledger, made with its directory,
 * is given only where cli_dir_exists says that exists.) */
typedef struct cli_file {
    const char *opt;  /* "--out", for messages */
    const char *path;
} cli_file;
int cli_check_outputs(const char *cmd, const cli_file *outs, size_t nouts, const cli_file *ins, size_t nins);
/* Whether the directory that holds (or would hold) PATH exists. */
int cli_dir_exists(const char *path);

/* Refuses (exit 2, nothing written) a registry that `parity registry lint`
 * refuses: every lint rule, the LKB's included.  Prints "CMD: OPT DIR fails
 * lint: N error(s); the first: FILE:LINE:COL: error: ..." and returns
 * EXIT_INPUT; with allow (--allow-lint-errors) prints a warning on stderr,
 * writes the same sentence (without the refusal) into said (when not NULL),
 * and returns 0.  0 for a clean registry, said "" . */
struct reg_registry;
int cli_refuse_lint(const char *cmd, const char *opt, const char *dir, const struct reg_registry *r, int allow,
                    char *said, size_t len);

/* The run options campaign and gate share, each text NULL when not given:
 * --repeats (2 ... 1000), --threads (1 ... 4096), --seed (an unsigned
 * integer), --dist (by name; required), --engine (one built into this
 * binary), into the fields their options structs hold.  0, or EXIT_INPUT
 * with the message said as `cmd`. */
typedef struct cli_run_vals {
    int *repeats, *threads, *dist, *engine;
    unsigned long long *seed;
} cli_run_vals;
int cli_run_opts(const char *cmd, const char *repeats, const char *threads, const char *seed, const char *dist,
                 const char *engine, cli_run_vals v);

/* A --space SPEC (a file when one of that name exists, else the text
 * itself; docs/fit.md "--space") added to *space; a space with no
 * candidates is an error. */
struct fit_space;
struct fit_ctx;
nx_status cli_load_space(const char *spec, const struct fit_ctx *ctx, struct fit_space *space, nx_err *err);

/* Refuses (exit 2, nothing written) an output that would land inside the
 * directory DIR that the command reads as a whole (the registry of
 * --kernels): its TOML files are inputs, and a file written among them
 * would be one, or replace one.  Outputs that do not resolve are left to
 * cli_check_outputs.  Returns 0 or EXIT_INPUT after printing why. */
int cli_check_outside(const char *cmd, const cli_file *outs, size_t nouts, const char *opt, const char *dir);

/* A run-level advisory lock on a folder that a run writes (campaign
 * --traces, docs/limits.md): flock(LOCK_EX | LOCK_NB) on DIR/.parity.lock,
 * which then holds the holder's pid.  Does not wait: when another process
 * holds it, prints "OPT DIR is being written by another run (pid N, ...)"
 * and returns -EXIT_INPUT.  Returns the descriptor, kept open (the lock
 * ends when the process does), or -EXIT_INPUT / -EXIT_INTERNAL after
 * printing why. */
#define CLI_LOCK_NAME ".parity.lock"
int cli_lock_dir(const char *cmd, const char *opt, const char *dir);
/* The same, the reason in err instead of printed. */
int cli_lock_dir_err(const char *opt, const char *dir, nx_err *err);

int cmd_reduce(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_atoms(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_registry(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_ref(int argc, char **argv);
int cmd_campaign(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_transcript(int argc, char **argv);
int cmd_tier3(int argc, char **argv);
/* The campaign ledger's readers and the gate (parity/ledger/): cmd_ttbp.c,
 * cmd_gate.c, cmd_ledger.c. */
int cmd_ttbp(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
/* `parity diff A B`: two outputs element by element (cmd_diff.c, parity/diff/). */
int cmd_diff(int argc, char **argv);
/* `parity check --numerics P --in IN --out Y` (cmd_check_numerics.c). */
int cmd_check_numerics(int argc, char **argv);
/* `parity fit`: a point that reproduces given outputs (cmd_fit.c, parity/fit/). */
int cmd_fit(int argc, char **argv);

/* `parity explain A [B]`: a parity diff as the points each side realises
 * (cmd_explain.c, parity/explain/). */
int cmd_explain(int argc, char **argv);
/* `parity reveal`: a black-box kernel probed for its point (cmd_reveal.c,
 * parity/reveal/). */
int cmd_reveal(int argc, char **argv);
/* `parity lkb` and `parity bench`: the LKB report and its microbenchmarks
 * (cmd_lkb.c, cmd_bench.c, parity/lkb/). */
int cmd_lkb(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `parity model`: a model's decode step against the exact reference
 * (cmd_model.c, parity/model/). */
int cmd_model(int argc, char **argv);
/* `parity backend info|host`: out-of-tree backends (cmd_backend.c, devices/ext). */
int cmd_backend(int argc, char **argv);

#endif
