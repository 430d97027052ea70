/* cli_html.h: the --html pages of `parity check` and `parity campaign`
 * (cli_html.c, docs/reports.md).  Only parity/cli/ includes it. */
#ifndef PARITY_CLI_HTML_H
#define PARITY_CLI_HTML_H

#include <jansson.h>
#include <stddef.h>

#include "campaign.h"
#include "nx_error.h"
#include "reveal.h"

struct html_heat;
/* The page of `parity check TRACE...` from the object its --json writes:
 * the verdict table (Tier 2 per trace, Tier 1 pairs, cross-class parity),
 * each trace's ulp histogram and, for a trace with bits that differ from
 * its reference, heats[i]: where they are (heats[i] may be NULL).  Written
 * atomically to path. */
nx_status cli_html_check(const char *path, const json_t *root, const struct html_heat *const *heats, size_t nheats,
                         nx_err *err);
/* The page of `parity campaign`: a row per point and check (Tier 2 with its
 * mismatches and largest ulp distance), each point's Tier 2 histogram, and
 * the heat map of each point whose Tier 2 output differs from the reference
 * in some bit (from camp_result.t2_diff; a point whose mismatches the
 * campaign's budget could not keep is said as such). */
#define CLI_HTML_HEAT_BUDGET ((size_t)64 << 20) /* mismatching elements kept over a campaign */
nx_status cli_html_campaign(const char *path, const camp_result *r, size_t n, const char *title, nx_err *err);
/* The page of `parity reveal`: the verdict (confirmation rows that
 * differ), the probes and calls, the confidence, and the revealed tree
 * drawn as a tree: the revealed point's program at n (dot products), else
 * the recognised tree's, else the bracketing as text.  kernel names the
 * kernel (--exec CMD, ...); rc is the command's exit status. */
nx_status cli_html_reveal(const char *path, const char *kernel, const rv_result *res, size_t calls, size_t probes,
                          int rc, nx_err *err);

#endif
