/* fuzz_registry.c: the registry loader (parity/registry/, docs/registry.md)
 * on a fuzzed registry held in one input: sections that start with a line
 * "#@@ PATH" (PATH relative to the registry folder, e.g. DEVICES.toml,
 * cpu/HARDWARE.toml, cpu/common/KERNEL_FAMILIES.toml) are written to a
 * scratch folder, which is loaded and linted; the points of up to 3 classes
 * are listed, and the first FZ_MAX_POINTS of each resolved, shown, and
 * compared with the same point of the first class.  The LKB's rules and
 * report run too (MEASUREMENTS.toml, FUSIONS.toml, KERNEL.toml, STEP.toml
 * under models/: lkb_lint, and lkb_compute of each class with and without
 * the first model), so the LKB files are fuzzed through the same input. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz_util.h"

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>

#include "famspec.h"
#include "nx_limits.h"
#include "lkb.h"
#include "registry.h"

#define FZ_MAX_INPUT (1 << 15)
#define FZ_MAX_FILES 8
#define FZ_MAX_POINTS 6

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* A section's path: letters, digits, '_', '-', '.', at most 4 parts, no
 * part that starts with '.'. */
static int good_path(const char *s, size_t len)
{
    if (len == 0 || len > 64)
        return 0;
    int parts = 1;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '/') {
            if (++parts > 4 || i + 1 == len)
                return 0;
            continue;
        }
        if ((i == 0 || s[i - 1] == '/') && (ch == '.' || ch == '/'))
            return 0;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-' || ch == '.'))
            return 0;
    }
    return 1;
}

static int mkparents(char *path)
{
    for (char *q = strchr(path + 1, '/'); q; q = strchr(q + 1, '/')) {
        *q = 0;
        int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
        *q = '/';
        if (bad)
            return -1;
    }
    return 0;
}

/* Writes the sections under dir; the number of files written. */
static int write_sections(const char *dir, const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *end = s + size;
    int files = 0;
    while (s < end && files < FZ_MAX_FILES) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *line_end = nl ? nl : end;
        if (line_end - s < 5 || memcmp(s, "#@@ ", 4) != 0) { /* text before the first header: skipped */
            s = nl ? nl + 1 : end;
            continue;
        }
        const char *name = s + 4;
        size_t nlen = (size_t)(line_end - name);
        const char *body = nl ? nl + 1 : end, *next = body;
        while (next < end) {
            if ((next == body || next[-1] == '\n') && end - next >= 4 && !memcmp(next, "#@@ ", 4))
                break;
            next++;
        }
        if (good_path(name, nlen)) {
            char path[1024];
            int k = snprintf(path, sizeof path, "%s/%.*s", dir, (int)nlen, name);
            if (k > 0 && (size_t)k < sizeof path && mkparents(path) == 0 &&
                fz_write(path, (const uint8_t *)body, (size_t)(next - body)) == 0)
                files++;
        }
        s = next;
    }
    return files;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    static int limited;
    if (!limited) {
        nx_limits l = *nx_limits_get();
        l.max_ops = 1u << 14;
        l.max_bytes = 64u << 20;
        l.max_terms = 1u << 20;
        l.max_work = 1u << 20;
        nx_limits_set(&l);
        limited = 1;
    }
    const char *dir = fz_scratch("registry");
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (mkdir(dir, 0755) != 0)
        abort();
    write_sections(dir, data, size);
    reg_registry *r = NULL;
    nx_err err = {0};
    if (reg_load(dir, &r, &err) == NX_OK) {
        char *report = NULL;
        (void)reg_lint(r, &report);
        free(report);
        report = NULL;
        (void)lkb_lint(r, &report);
        free(report);
        for (size_t ci = 0; ci < reg_class_count(r) && ci < 3; ci++)
            for (int withm = 0; withm < 2; withm++) {
                lkb_opts lo = {withm ? "m" : NULL, NULL, NULL};
                lkb_report rep;
                nx_err le = {0};
                if (lkb_compute(r, reg_class_name(r, ci), &lo, &rep, &le) == NX_OK)
                    lkb_report_free(&rep);
            }
        size_t nc = reg_class_count(r);
        for (size_t ci = 0; ci < nc && ci < 3; ci++) {
            const char *cls = reg_class_name(r, ci);
            (void)reg_class_parent(r, cls);
            char **ids = NULL;
            size_t nid = 0;
            if (reg_list_points(r, cls, &ids, &nid, &err) != NX_OK)
                continue;
            if (getenv("PARITY_FUZZ_VERBOSE"))
                fprintf(stderr, "class %s: %zu points\n", cls, nid);
            for (size_t i = 0; i < nid; i++) {
                if (i < FZ_MAX_POINTS) {
                    fam_spec spec;
                    nx_err e2 = {0};
                    if (reg_resolve(r, cls, ids[i], NULL, &spec, &e2) == NX_OK)
                        fam_spec_free(&spec);
                    char *text = NULL;
                    if (reg_show(r, cls, ids[i], NULL, &text, &e2) == NX_OK)
                        free(text);
                    char a[256], b[256];
                    snprintf(a, sizeof a, "%s:%s", reg_class_name(r, 0), ids[i]);
                    snprintf(b, sizeof b, "%s:%s", cls, ids[i]);
                    int parity = 0;
                    text = NULL;
                    if (reg_compare(r, a, b, NULL, &text, &parity, &e2) == NX_OK)
                        free(text);
                }
                free(ids[i]);
            }
            free(ids);
        }
        reg_free(r);
    } else if (getenv("PARITY_FUZZ_VERBOSE")) {
        fprintf(stderr, "registry refused: %s\n", err.msg);
    }
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
