/* cmd_gate.c: `parity gate`, the promotion rule as a command: the registry
 * before and after a change, campaign against campaign (parity/ledger/gate.h). */
#define _DEFAULT_SOURCE 1 /* sigaction */
#include "safetensors.h"
#include "cli.h"
#include "famdesc.h"
#include "gate.h"
#include "ledger.h"
#include "lkb.h"
#include "model_shapes.h"
#include "refimpl.h"
#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char gate_usage[] =
    "usage: parity gate --before A --after B [--class C] [--shapes small|8b-layer]\n"
    "                   [--families F1,F2,...] [--seed S] [--dist D] [--engine E]\n"
    "                   [--repeats N] [--threads N] [--traces DIR] [--json FILE]\n"
    "                   [--no-bench] [--slack R] [--false-alarm P] [--pairs N]\n"
    "                   [--quiet] [--allow-lint-errors]\n"
    "                   [--registry-path P] [--bench-shapes model:M|preset]\n"
    "\n"
    "The promotion rule as a command.  A and B are two registry directories (the\n"
    "registry before a change and after it), or two git revisions of the\n"
    "repository at the current directory (its --registry-path, default kernels,\n"
    "exported with git archive).  Both sides' campaigns of class C\n"
    "run here, with the same seed and shapes, for every point that exists on\n"
    "both, and each such point must be unchanged:\n"
    "  - its outputs byte-identical (every run the campaign traces: graphed,\n"
    "    eager, legacy, row variants; inputs aside), unless the point declares a\n"
    "    nondeterministic (atomic) order, which is said;\n"
    "  - its gates unchanged: each Tier 1 check's and Tier 2's verdict, Tier 2\n"
    "    bit-exactness, the declared tolerance, the point hash;\n"
    "  - its kernel not slower: both sides' kernels timed alternately here (one\n"
    "    thread, N interleaved pairs after a warm-up); slower when the lower\n"
    "    confidence bound of the median time ratio after/before exceeds 1 + R,\n"
    "    which two alike kernels do with probability at most P over the whole\n"
    "    gate, however loaded the machine (docs/ledger.md).\n"
    "A kernel id that changed with byte-identical outputs and unchanged gates\n"
    "passes and is said (\"kernel changed: X -> Y\").  Points only in B are listed\n"
    "as new and not compared; points only in A are listed as removed and fail.\n"
    "\n"
    "options:\n"
    "  --before A, --after B  the two registries: directories or git revisions\n"
    "                   (required)\n"
    "  --registry-path P  the registry's path inside the repository, for git\n"
    "                   revisions (default kernels)\n"
    "  --class C        gate this class only (it must exist on both sides); without\n"
    "                   it, every class the change touches: each class of either\n"
    "                   registry whose resolved view of a point (numerics hash,\n"
    "                   kernel, params, tolerance) differs or that gained or lost a\n"
    "                   point, named with why.  A touched class whose backend\n"
    "                   cannot run here is not gated: it fails on what fails\n"
    "                   without running (a numerics hash changed, a point\n"
    "                   removed), else it is not verified and the gate exits 1\n"
    "  --shapes P       shape preset (default small)\n"
    "  --families LIST  only these families\n"
    "  --seed S, --dist D, --engine E, --repeats N, --threads N  as for campaign\n"
    "  --traces DIR     keep both sides' traces in DIR/before and DIR/after\n"
    "                   (default: a temporary directory, removed)\n"
    "  --json FILE      also write the result as JSON\n"
    "  --no-bench       do not compare run times\n"
    "  --slack R        a slowdown smaller than this fraction is not one (default 0.10)\n"
    "  --false-alarm P  the gate's false-alarm rate, shared by its points\n"
    "                   (default 0.01)\n"
    "  --pairs N        interleaved timing pairs per point, 11 ... 1001 (default 31)\n"
    "  --bench-shapes S where each point's kernels are timed: model:M, the shape\n"
    "                   M's step gives the point at C = 1 (capped as campaign\n"
    "                   --shapes model:M caps it), else the preset's; preset: the\n"
    "                   --shapes preset's (default model:llama3-8b when the\n"
    "                   registry has its step, else preset)\n"
    "  --quiet          no progress lines\n"
    "  --allow-lint-errors  gate registries that `parity registry lint` refuses\n"
    "                   (without it: exit 2 naming the first error; nothing written)\n"
    "\n"
    "exit status: 0 the gate passes; 1 it fails (a point not byte-identical, a\n"
    "gate changed, a point removed, a point slower beyond the band, or, without\n"
    "--class, a touched class that could not be gated here); 2 usage or\n"
    "input error (a registry that does not load, a class unknown on a side, a\n"
    "point that is an input error on both sides).\n";

static const dev_backend *backend_for(const char *dir, const char *cls, nx_err *err)
{
    reg_registry *reg;
    if (reg_load(dir, &reg, err) != NX_OK)
        return NULL;
    const dev_backend *b = camp_class_backend(reg, cls);
    reg_free(reg);
    if (!b)
        nx_err_set(err, NX_EINVAL, "class '%s' has no backend in this build (known: cpu, and sm* classes through cuda)",
                   cls);
    return b;
}

/* SIGINT, SIGTERM, SIGHUP: the gate stops at the next point, removes its
 * temporary folders, and the process then dies of the signal it got. */
static volatile int stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

static void progress(void *ctx, size_t i, size_t n, const char *id)
{
    (void)ctx;
    fprintf(stderr, "[%zu/%zu] %s\n", i, n, id);
}

/* The timing shapes of one class: the model's C = 1 shape of each point. */
typedef struct bench_ctx {
    const char *model, *cls;
    cli_mshape *ms;
    size_t n;
    char why[300];  /* why there are none */
} bench_ctx;

static const char *bench_shape(void *vctx, const char *id, char *why, size_t len)
{
    bench_ctx *c = vctx;
    for (size_t k = 0; k < c->n; k++)
        if (!strcmp(c->ms[k].point, id)) {
            snprintf(why, len, "%s", c->ms[k].said);
            return c->ms[k].shape;
        }
    if (*c->why)
        snprintf(why, len, "%s", c->why);
    else
        snprintf(why, len, "no op of %s's step lowers to it on class %s: the preset's shape", c->model, c->cls);
    return NULL;
}

/* "Promoted into the LKB: ..." and "LKB residual delta: ..." of the gate:
 * the class's LKB residual before and after the change (docs/lkb.md).  A
 * residual entry gone after the change is a promotion when every point it
 * served passed the gate (outputs byte-identical, gates and hash unchanged)
 * and it had two users (rule 1). */
static void promotion_lines(const char *dir_a, const char *dir_b, const char *cls, const gate_report *r, json_t *jo)
{
    reg_registry *ra = NULL, *rb = NULL;
    nx_err e;
    if (reg_load(dir_a, &ra, &e) != NX_OK || reg_load(dir_b, &rb, &e) != NX_OK) {
        reg_free(ra);
        return;
    }
    ledger_lkb fa, fb;
    lkb_ledger_fields(ra, cls, NULL, &fa);
    lkb_ledger_fields(rb, cls, NULL, &fb);
    json_t *pa = fa.residual_json ? json_loads(fa.residual_json, 0, NULL) : NULL,
           *pb = fb.residual_json ? json_loads(fb.residual_json, 0, NULL) : NULL;
    char line[4096] = "", notp[2048] = "";
    int n = 0, nn = 0;
    size_t i;
    json_t *x;
    json_array_foreach(pa, i, x) {
        const char *kind = json_string_value(json_object_get(x, "kind")), *what = json_string_value(json_object_get(x, "what")),
                   *kernel = json_string_value(json_object_get(x, "kernel")),
                   *users = json_string_value(json_object_get(x, "users_text"));
        int nusers = (int)json_integer_value(json_object_get(x, "users")), gone = 1;
        size_t j;
        json_t *y;
        json_array_foreach(pb, j, y) {
            const char *k2 = json_string_value(json_object_get(y, "kind")), *w2 = json_string_value(json_object_get(y, "what"));
            if (kind && what && k2 && w2 && !strcmp(kind, k2) && !strcmp(what, w2))
                gone = 0;
        }
        if (!kind || !what || !gone)
            continue;
        for (size_t k = 0; k < r->n; k++) {
            const gate_item *it = &r->items[k];
            int served = !strcmp(kind, "source") ? kernel && *kernel && !strcmp(it->kernel_before, kernel)
                                                 : !strcmp(it->id, what);
            if (!served)
                continue;
            size_t l = strlen(line), m = strlen(notp);
            if (it->kind != GATE_SAME)
                snprintf(notp + m, sizeof notp - m, "%s%s %s removed, but %s %s", nn++ ? "; " : "", kind, what, it->id,
                         it->kind == GATE_REMOVED ? "is gone" : "did not pass the gate");
            else if (nusers < 2)
                snprintf(notp + m, sizeof notp - m, "%s%s %s removed for %s, which has %d user (%s): rule 1 needs two",
                         nn++ ? "; " : "", kind, what, it->id, nusers, users && *users ? users : "none derived");
            else {
                const char *dot = strchr(it->id, '.');
                snprintf(line + l, sizeof line - l, "%s%.*s / %s / kernel %s / numerics point %.12s / users %s / "
                         "residual removed: %s %s", n++ ? ", " : "", dot ? (int)(dot - it->id) : (int)strlen(it->id),
                         it->id, dot ? dot + 1 : "?", *it->kernel_after ? it->kernel_after : "none", it->hash,
                         users ? users : "?", kind, what);
            }
        }
    }
    printf("Promoted into the LKB: %s%s%s%s\n", n ? line : "no promotion", nn ? " (not promotions: " : "", notp,
           nn ? ")" : "");
    if (fa.set && fb.set)
        printf("LKB residual delta: %+lld entries, %+lld lines, %+lld copy points, %+lld single-class (before: %lld "
               "entries, %lld lines, %lld copy points, %lld single-class; after: %lld, %lld, %lld, %lld)\n",
               fb.count - fa.count, fb.loc - fa.loc, fb.copy_points - fa.copy_points, fb.single_class - fa.single_class,
               fa.count, fa.loc, fa.copy_points, fa.single_class, fb.count, fb.loc, fb.copy_points, fb.single_class);
    else
        printf("LKB residual delta: not measured (%s)\n", !fa.set ? fa.why : fb.why);
    json_object_set_new(jo, "promoted", json_string(n ? line : "no promotion"));
    json_object_set_new(jo, "not_promotions", json_string(notp));
    if (fa.set && fb.set)
        json_object_set_new(jo, "residual_delta", json_pack("{s:I,s:I,s:I,s:I}", "entries", (json_int_t)(fb.count - fa.count),
                                                            "lines", (json_int_t)(fb.loc - fa.loc), "copy_points",
                                                            (json_int_t)(fb.copy_points - fa.copy_points), "single_class",
                                                            (json_int_t)(fb.single_class - fa.single_class)));
    json_decref(pa);
    json_decref(pb);
    free(fa.residual_json);
    free(fb.residual_json);
    reg_free(ra);
    reg_free(rb);
}

static int parse_double(const char *opt, const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= 0) || d > 1e9) {
        cli_error("gate", "%s: '%s' is not a number in [0, 1e9]", opt, v);
        return -1;
    }
    *out = d;
    return 0;
}


/* one run at a time writes a traces folder (docs/limits.md); the lock ends
 * with the process */
static nx_status lock_traces(const char *dir, nx_err *err)
{
    return cli_lock_dir_err("--traces", dir, err) < 0 ? (err->code ? err->code : NX_EINVAL) : NX_OK;
}

/* A touched class this machine cannot gate: said with why it was touched
 * and why it cannot run.  The changes that fail without running (a
 * numerics hash changed, a point removed) still fail it; otherwise it is
 * not verified, and the gate cannot pass. */
static void ungated(json_t *jskip, const gate_touch *t, const char *cant, int *any_fail, size_t *unverified)
{
    if (t->fails) {
        printf("class %s: not gated here: %s; FAIL without running: %s\n", t->class_name, cant, t->fails);
        *any_fail = 1;
    } else {
        printf("class %s: not gated here: %s; not verified\n", t->class_name, cant);
        ++*unverified;
    }
    json_array_append_new(jskip, json_pack("{s:s,s:s,s:s,s:s?}", "class", t->class_name, "why", t->why ? t->why : "",
                                           "cannot_run", cant, "fails", t->fails));
}

int cmd_gate(int argc, char **argv)
{
    const char *before = NULL, *after = NULL, *cls = NULL, *preset = "small", *fams = NULL, *seed_s = NULL,
               *dist_s = "normal", *eng_s = NULL, *rep_s = NULL, *thr_s = NULL, *traces = NULL, *json = NULL,
               *rel_s = NULL, *abs_s = NULL, *pairs_s = NULL, *reg_path = "kernels", *bench_s = NULL;
    int bad = 0, quiet = 0, no_bench = 0, allow_lint = 0;
    char lint_before[1600] = "", lint_after[1600] = "";
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_flag(argv, i, "--help") || cli_flag(argv, i, "-h")) {
            fputs(gate_usage, stdout);
            return EXIT_PASS;
        }
        if (cli_flag(argv, i, "--quiet") || cli_flag(argv, i, "-q")) {
            quiet = 1;
            continue;
        }
        if (cli_flag(argv, i, "--allow-lint-errors")) {
            allow_lint = 1;
            continue;
        }
        if (cli_flag(argv, i, "--no-bench")) {
            no_bench = 1;
            continue;
        }
        if (cli_opt(argc, argv, &i, "--before", &before, &bad) || cli_opt(argc, argv, &i, "--after", &after, &bad) ||
            cli_opt(argc, argv, &i, "--class", &cls, &bad) || cli_opt(argc, argv, &i, "--shapes", &preset, &bad) ||
            cli_opt(argc, argv, &i, "--families", &fams, &bad) || cli_opt(argc, argv, &i, "--seed", &seed_s, &bad) ||
            cli_opt(argc, argv, &i, "--dist", &dist_s, &bad) || cli_opt(argc, argv, &i, "--engine", &eng_s, &bad) ||
            cli_opt(argc, argv, &i, "--repeats", &rep_s, &bad) || cli_opt(argc, argv, &i, "--threads", &thr_s, &bad) ||
            cli_opt(argc, argv, &i, "--traces", &traces, &bad) || cli_opt(argc, argv, &i, "--json", &json, &bad) ||
            cli_opt(argc, argv, &i, "--slack", &rel_s, &bad) || cli_opt(argc, argv, &i, "--false-alarm", &abs_s, &bad) ||
            cli_opt(argc, argv, &i, "--pairs", &pairs_s, &bad) ||
            cli_opt(argc, argv, &i, "--registry-path", &reg_path, &bad) ||
            cli_opt(argc, argv, &i, "--bench-shapes", &bench_s, &bad))
            continue;
        cli_error("gate", "unknown argument '%s' (see --help)", argv[i]);
        return EXIT_INPUT;
    }
    if (bad)
        return EXIT_INPUT;
    if (!before || !after) {
        cli_error("gate", "needs --before A --after B (see --help)");
        return EXIT_INPUT;
    }
    if (!fam_preset_known(preset)) {
        cli_error("gate", "--shapes: unknown preset '%s' (expected small or 8b-layer)", preset);
        return EXIT_INPUT;
    }
    /* --json is checked before both campaigns run, not found bad after */
    const cli_file outs[] = {{"--json", json}};
    if (cli_check_outputs("gate", outs, 1, NULL, 0) || cli_check_outside("gate", outs, 1, "--before", before) ||
        cli_check_outside("gate", outs, 1, "--after", after) ||
        (traces && cli_check_outside("gate", outs, 1, "--traces", traces)))
        return EXIT_INPUT;
    gate_opts o = {0};
    o.before = before;
    o.after = after;
    o.class_name = cls;
    o.preset = preset;
    o.families = fams;
    o.seed = 1;
    o.repeats = 3;
    o.engine = (int)ref_engine_default();
    o.traces = traces;
    o.lock_traces = lock_traces;
    o.bench = !no_bench;
    o.slack = GATE_SLACK;
    o.alpha = GATE_ALPHA;
    o.stop = &stop_signal;
    catch_signals();
    if (!quiet)
        o.progress = progress;
    if (cli_run_opts("gate", rep_s, thr_s, seed_s, dist_s, eng_s,
                     (cli_run_vals){&o.repeats, &o.threads, &o.dist, &o.engine, &o.seed}))
        return EXIT_INPUT;
    if ((rel_s && parse_double("--slack", rel_s, &o.slack)) || (abs_s && parse_double("--false-alarm", abs_s, &o.alpha)))
        return EXIT_INPUT;
    if (abs_s && !(o.alpha > 0 && o.alpha < 1)) {
        cli_error("gate", "--false-alarm: '%s' is not a probability in (0, 1)", abs_s);
        return EXIT_INPUT;
    }
    if (pairs_s && (o.pairs = (int)cli_long("gate", "--pairs", pairs_s, 11, 1001)) < 0)
        return EXIT_INPUT;
    if (bench_s && strcmp(bench_s, "preset") != 0 && (strncmp(bench_s, "model:", 6) != 0 || !bench_s[6])) {
        cli_error("gate", "--bench-shapes: '%s' is neither model:M nor preset", bench_s);
        return EXIT_INPUT;
    }
    nx_err err = {0};
    char *dir_a = NULL, *tmp_a = NULL, *dir_b = NULL, *tmp_b = NULL;
    int rc = EXIT_PASS;
    if (gate_side(before, reg_path, &dir_a, &tmp_a, &err) != NX_OK) {
        nx_err_prefix(&err, "--before");
        rc = cli_fail("gate", &err);
        goto out;
    }
    if (gate_side(after, reg_path, &dir_b, &tmp_b, &err) != NX_OK) {
        nx_err_prefix(&err, "--after");
        rc = cli_fail("gate", &err);
        goto out;
    }
    o.before = dir_a;
    o.after = dir_b;
    /* a side that `registry lint` refuses is refused, named as given */
    for (int k = 0; k < 2; k++) {
        reg_registry *lr = NULL;
        const char *d = k ? dir_b : dir_a, *opt = k ? "--after" : "--before", *as = k ? after : before;
        if (reg_load(d, &lr, &err) != NX_OK) {
            nx_err_prefix(&err, "%s", opt);
            rc = cli_fail("gate", &err);
            goto out;
        }
        int refused = cli_refuse_lint("gate", opt, as, lr, allow_lint, k ? lint_after : lint_before,
                                      sizeof lint_before);
        reg_free(lr);
        if (refused) {
            rc = EXIT_INPUT;
            goto out;
        }
    }
    /* the classes to gate: --class, or every class the change touches */
    gate_touch *touched = NULL;
    size_t ntouched = 0;
    if (!cls) {
        if (gate_touched(dir_a, dir_b, preset, fams, &touched, &ntouched, &err) != NX_OK) {
            rc = cli_fail("gate", &err);
            goto out;
        }
        printf("classes the change touches: %zu\n", ntouched);
        for (size_t k = 0; k < ntouched; k++)
            printf("  %s: %s\n", touched[k].class_name, touched[k].why);
    }
    json_t *jall = json_object(), *jcls = json_array(), *jskip = json_array();
    int any_fail = 0, any_input = 0;
    size_t any_unverified = 0;
    for (size_t k = 0; k < (cls ? 1 : ntouched); k++) {
        const char *c = cls ? cls : touched[k].class_name;
        o.class_name = c;
        o.before = dir_a;
        o.after = dir_b;
        /* each side's own backend: an out-of-tree class's kernels are its
         * registry's (docs/backends.md); a built-in is the same on both */
        nx_err eb = {0};
        o.backend_after = backend_for(dir_b, c, &eb);
        if (!(o.backend = backend_for(dir_a, c, &err)) && !(o.backend = o.backend_after))
            err = eb;
        if (!o.backend) {
            if (cls) {
                rc = cli_fail("gate", &err);
                goto done;
            }
            ungated(jskip, &touched[k], err.msg, &any_fail, &any_unverified);
            continue;
        }
        char why[256] = "";
        if (!dev_available(o.backend, why, sizeof why)) {
            if (cls) {
                cli_error("gate", "class %s: its backend %s cannot run here (%s)", c, o.backend->name, why);
                rc = EXIT_INPUT;
                goto done;
            }
            char cant[400];
            snprintf(cant, sizeof cant, "its backend %s cannot run here (%s)", o.backend->name, why);
            ungated(jskip, &touched[k], cant, &any_fail, &any_unverified);
            continue;
        }
        /* the timing shapes: the model's hot shape of each point */
        bench_ctx bc = {0};
        bc.cls = c;
        bc.model = bench_s && !strncmp(bench_s, "model:", 6) ? bench_s + 6 : bench_s ? NULL : "llama3-8b";
        o.bench_shape = NULL;
        if (bc.model && !no_bench) {
            reg_registry *br = NULL;
            nx_err be = {0};
            if (reg_load(dir_b, &br, &be) != NX_OK || cli_model_shapes(br, c, bc.model, &bc.ms, &bc.n, &be) != NX_OK)
                snprintf(bc.why, sizeof bc.why, "%.200s: the preset's shape", be.msg);
            reg_free(br);
            /* the C = 1 shapes first: the list is in C order */
            o.bench_shape = bench_shape;
            o.bench_ctx = &bc;
        }
        gate_report r;
        nx_status gst = gate_run(&o, &r, &err);
        free(bc.ms);
        if (gst != NX_OK) {
            rc = cli_fail("gate", &err);
            goto done;
        }
        o.lock_traces = NULL; /* the traces folder is locked once, by the first class */
        if (tmp_a || tmp_b) {
            /* name the revisions, not the temporary directories */
            o.before = before;
            o.after = after;
        }
        any_input |= r.errors != 0;
        any_fail |= r.failed || r.removed;
        if (fams && r.n == 0 && cls) {
            cli_error("gate", "--families: no point of class %s belongs to '%s'", c, fams);
            any_input = 1;
        }
        if (!cls)
            printf("\n");
        char *t = gate_text(&o, &r);
        /* the gate's own verdict line last: the promotion lines before it */
        char *gl = t ? strstr(t, "\ngate: ") : NULL;
        if (gl)
            *++gl = 0;
        if (t)
            fputs(t, stdout);
        char *j = gate_json(&o, &r);
        json_t *jo = j ? json_loads(j, 0, NULL) : NULL;
        free(j);
        if (!jo) {
            free(t);
            gate_free(&r);
            cli_error("gate", "out of memory");
            rc = EXIT_INTERNAL;
            goto done;
        }
        promotion_lines(dir_a, dir_b, c, &r, jo);
        if (gl) {
            *gl = 'g';
            fputs(gl, stdout);
        }
        free(t);
        if (cls) {
            json_object_update(jall, jo);
            json_decref(jo);
        } else {
            json_object_set_new(jo, "why", json_string(touched[k].why));
            json_array_append_new(jcls, jo);
        }
        gate_free(&r);
    }
    rc = any_input ? EXIT_INPUT : any_fail || any_unverified ? EXIT_PARITY : EXIT_PASS;
    if (!cls) {
        if (any_input || any_fail || !any_unverified)
            printf("\ngate over %zu touched class(es): %s\n", ntouched,
                   any_input ? "input error" : any_fail ? "FAIL" : "PASS");
        else /* nothing failed, but not every touched class was gated */
            printf("\ngate over %zu touched class(es): NOT VERIFIED: %zu could not be gated here "
                   "(gate them where their backend runs; --class narrows the gate)\n",
                   ntouched, any_unverified);
        json_object_set_new(jall, "classes", jcls);
        json_object_set_new(jall, "not_gated", jskip);
        json_object_set_new(jall, "verified", json_boolean(!any_unverified));
        json_object_set_new(jall, "pass", json_boolean(!any_fail && !any_input && !any_unverified));
        jcls = jskip = NULL;
    }
    if (*lint_before)
        printf("registry lint: %s\n", lint_before);
    if (*lint_after)
        printf("registry lint: %s\n", lint_after);
    /* a gate that ends as bad input (exit 2) writes nothing */
    if (json && rc != EXIT_INPUT) {
        char *j = json_dumps(jall, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        nx_err werr = {0};
        if (!j) {
            cli_error("gate", "out of memory");
            rc = EXIT_INTERNAL;
        } else if (st_write_text_atomic(json, j, &werr) != NX_OK) {
            rc = cli_fail("gate", &werr);
        }
        free(j);
    }
done:
    json_decref(jall);
    json_decref(jcls);
    json_decref(jskip);
    gate_touched_free(touched, ntouched);
out:
    gate_side_free(dir_a, tmp_a);
    gate_side_free(dir_b, tmp_b);
    if (stop_signal) { /* cleaned up: now die of the signal, as the caller expects */
        signal(stop_signal, SIG_DFL);
        raise(stop_signal);
    }
    return rc;
}
