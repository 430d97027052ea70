/* ledger_int.h: what the files of parity/ledger/ share and nothing else
 * includes. */
#ifndef PARITY_LEDGER_INT_H
#define PARITY_LEDGER_INT_H

#include <sqlite3.h>

#include "ledger.h"

/* Sets err to "ledger PATH: WHAT: <sqlite's message>" (NX_EIO). */
nx_status ledger_sql_error(sqlite3 *db, const char *path, const char *what, nx_err *err);
/* A declared tolerance as text ("ulp 2", "rtol 0.0001, atol 0.001"); ""
 * when none is declared. */
void ledger_tolerance_text(const fam_tolerance *t, char *buf, size_t len);
/* Runs argv (execvp) with stdout captured into buf (NUL-terminated,
 * truncated to len; NULL/0: discarded) and stderr discarded; returns the
 * exit status, or -1 when it could not run or was killed. */
int ledger_run_cmd(char *const argv[], char *buf, size_t len);

#endif
