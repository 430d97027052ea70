/* power_campaign.c: the power checks (parity/campaign/power.h) over every
 * point a class sees at a shape preset, as the campaign runs them at the
 * end of each point's Tier 2.  scripts/mutate --kernels runs it next to
 * `parity campaign` until the campaign calls the checks itself.
 *
 *   power_campaign KERNELS_DIR CLASS PRESET [-v] [--seed S] [--threads T] [--threads-more 2,4,8]
 *
 * Prints one line per point ("ok", "FAIL", "skip" and the detail), with -v
 * every neighbour; exit 1 when a point fails, 2 on bad arguments or an
 * input error. */
#include "campaign.h"
#include "famdesc.h"
#include "power.h"
#include "refimpl.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: power_campaign KERNELS_DIR CLASS PRESET [-v] [--seed S] [--threads T] [--threads-more 2,4,8]\n");
        return 2;
    }
    int verbose = 0;
    pw_opts o;
    pw_opts_default(&o);
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads-more") && i + 1 < argc) { /* "4,8"; "0": none */
            const char *p = argv[++i];
            for (int q = 0; q < PW_MAX_THREADS_MORE; q++) {
                o.threads_more[q] = (int)strtol(p, (char **)&p, 10);
                if (*p == ',')
                    p++;
                else {
                    if (q + 1 < PW_MAX_THREADS_MORE)
                        o.threads_more[q + 1] = 0;
                    break;
                }
            }
        }
        else {
            fprintf(stderr, "power_campaign: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    nx_err e = {0};
    reg_registry *reg = NULL;
    if (reg_load(argv[1], &reg, &e) != NX_OK) {
        fprintf(stderr, "power_campaign: %s\n", e.msg);
        return 2;
    }
    char **ids = NULL;
    size_t n = 0;
    if (reg_list_points(reg, argv[2], &ids, &n, &e) != NX_OK) {
        fprintf(stderr, "power_campaign: %s\n", e.msg);
        reg_free(reg);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failed = 0, errors = 0;
    size_t dist = 0, equiv = 0, unseen = 0;
    for (size_t i = 0; i < n; i++) {
        char fam[128];
        snprintf(fam, sizeof fam, "%s", ids[i]);
        char *dot = strchr(fam, '.');
        if (dot)
            *dot = 0;
        const char *shape = fam_preset_shape(argv[3], fam);
        fam_spec s;
        memset(&s, 0, sizeof s);
        if (reg_resolve(reg, argv[2], ids[i], shape, &s, &e) != NX_OK) {
            printf("error %s: %s\n", ids[i], e.msg);
            errors++;
            continue;
        }
        pw_result r;
        if (pw_check_point(dev_cpu_backend(), &s, &o, &r, &e) != NX_OK) {
            printf("error %s: %s\n", ids[i], e.msg);
            errors++;
        } else {
            printf("%-5s %s [%.3f s]\n", r.verdict == PW_PASS ? "ok" : r.verdict == PW_FAIL ? "FAIL" : "skip", r.detail,
                   r.seconds);
            failed |= r.verdict == PW_FAIL;
            dist += r.ndist;
            equiv += r.nequiv;
            unseen += r.nunseen;
            if (verbose && r.space[0])
                printf("        input space: %s\n", r.space);
            if (verbose && r.nneigh) {
                char *t = pw_neighbours_text(&r);
                for (char *p = t, *q; p && *p; p = q) {
                    q = strchr(p, '\n');
                    if (q)
                        *q++ = 0;
                    printf("        %s\n", p);
                    if (!q)
                        break;
                }
                free(t);
            }
        }
        pw_result_free(&r);
        fam_spec_free(&s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("power: %zu point(s), %s; neighbours %zu distinguished, %zu equivalent, %zu not distinguished; %.2f s\n", n,
           failed ? "FAILED" : "passed", dist, equiv, unseen,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    reg_free(reg);
    return errors ? 2 : failed ? 1 : 0;
}
