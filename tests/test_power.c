/* test_power.c: the power checks (parity/campaign/power.c, docs/power.md).
 *
 * Every sample point of class cpu at the small preset passes and leaves no
 * neighbouring point undistinguished.  Then planted bugs: the kernel runs
 * one point while the point handed to the check declares another (a
 * backend wrapper gives the kernel its true tree, param or rounding back
 * before every run), so the check must fail and say which reduction, and
 * where the probes can tell, what the kernel reduces instead.  The
 * expected sentences are written here, not taken from the module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "campaign.h"
#include "famdesc.h"
#include "device.h"
#include "power.h"
#include "registry.h"

static reg_registry *REG;

static int setup(void **state)
{
    (void)state;
    nx_err e = {0};
    if (reg_load(PARITY_KERNELS_DIR, &REG, &e) != NX_OK) {
        print_error("reg_load %s: %s\n", PARITY_KERNELS_DIR, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reg_free(REG);
    return 0;
}

static void resolve(const char *id, fam_spec *s)
{
    char fam[64];
    snprintf(fam, sizeof fam, "%s", id);
    *strchr(fam, '.') = 0;
    nx_err e = {0};
    memset(s, 0, sizeof *s);
    if (reg_resolve(REG, "cpu", id, fam_preset_shape("small", fam), s, &e) != NX_OK)
        fail_msg("reg_resolve %s: %s", id, e.msg);
}

/* --- the truth the kernel runs (the planted bug) ------------------------------------------ */

static struct {
    const char *red, *tree; /* the kernel's tree for reduction red */
    int restore_outr;       /* the kernel rounds red's out in rne */
    int restore_acc;        /* the kernel accumulates red in fp32 */
    const char *param, *value;
    int legacy_only;        /* only the legacy kernel runs the truth */
} TRUTH;

static nx_status to_truth(const fam_spec *s, fam_spec *o, nx_err *err)
{
    nx_status st = pw_spec_copy(s, o, err);
    for (size_t i = 0; i < o->nreds && !st; i++) {
        if (!TRUTH.red || strcmp(o->reds[i].name, TRUTH.red))
            continue;
        nx_point *p = &o->reds[i].point;
        if (TRUTH.tree)
            st = nx_point_set_tree(p, TRUTH.tree, TRUTH.red, err);
        if (TRUTH.restore_outr)
            p->out_rounding = NX_RNE;
        if (TRUTH.restore_acc)
            p->acc = NX_FP32;
    }
    if (!st && TRUTH.param)
        st = fam_spec_set_param(o, TRUTH.param, TRUTH.value, err);
    if (st)
        fam_spec_free(o);
    return st;
}

static int planted_available(const dev_backend *self, char *why, size_t len)
{
    (void)self;
    return dev_available(dev_cpu_backend(), why, len);
}

static nx_status planted_describe(const dev_backend *self, char *json, size_t len, nx_err *err)
{
    (void)self;
    return dev_describe(dev_cpu_backend(), json, len, err);
}

static int planted_supports(const dev_backend *self, const fam_spec *spec, const char *kernel)
{
    (void)self;
    if (TRUTH.legacy_only)
        return dev_supports(dev_cpu_backend(), spec, kernel);
    fam_spec t;
    if (to_truth(spec, &t, NULL) != NX_OK)
        return 0;
    int ok = dev_supports(dev_cpu_backend(), &t, kernel);
    fam_spec_free(&t);
    return ok;
}

static nx_status planted_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out, const dev_opts *opts, nx_err *err)
{
    (void)self;
    if (TRUTH.legacy_only && !(opts && opts->kernel && strstr(opts->kernel, "_legacy")))
        return dev_run(dev_cpu_backend(), spec, in, out, opts, err);
    fam_spec t;
    nx_status st = to_truth(spec, &t, err);
    if (st)
        return st;
    st = dev_run(dev_cpu_backend(), &t, in, out, opts, err);
    fam_spec_free(&t);
    return st;
}

static const dev_backend PLANTED = {.name = "planted", .available = planted_available, .describe = planted_describe,
                                    .supports = planted_supports, .run = planted_run};

/* Resolves id, changes the declared point as `declare` says (the kernel
 * keeps TRUTH), runs the check; it must fail naming `red` and containing
 * `want` (NULL: only the reduction). */
static void expect_fail(const char *id, void (*declare)(fam_spec *), const char *red, const char *want)
{
    fam_spec s;
    resolve(id, &s);
    memset(&TRUTH, 0, sizeof TRUTH);
    declare(&s);
    pw_opts o;
    pw_opts_default(&o);
    o.threads = 2;
    pw_result r;
    nx_err e = {0};
    if (pw_check_point(&PLANTED, &s, &o, &r, &e) != NX_OK)
        fail_msg("%s: pw_check_point: %s", id, e.msg);
    if (r.verdict != PW_FAIL)
        fail_msg("%s: a planted point passed the power checks: %s", id, r.detail);
    if (strncmp(r.detail, id, strlen(id)) != 0)
        fail_msg("%s: the sentence does not start with the point: %s", id, r.detail);
    if (strcmp(r.suspect, red) != 0)
        fail_msg("%s: suspect '%s', want '%s': %s", id, r.suspect, red, r.detail);
    if (want && !strstr(r.detail, want))
        fail_msg("%s: the sentence lacks \"%s\": %s", id, want, r.detail);
    pw_result_free(&r);
    fam_spec_free(&s);
    memset(&TRUTH, 0, sizeof TRUTH);
}

static void set_tree(fam_spec *s, const char *red, const char *tree)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (!strcmp(s->reds[i].name, red)) {
            nx_err e = {0};
            if (nx_point_set_tree(&s->reds[i].point, tree, red, &e) != NX_OK)
                fail_msg("tree %s: %s", tree, e.msg);
            free(s->reds[i].tree_text);
            s->reds[i].tree_text = strdup(tree);
            return;
        }
    fail_msg("no reduction %s", red);
}

/* --- the sample points pass ----------------------------------------------------------------- */

static void test_sample_points_pass(void **state)
{
    (void)state;
    char **ids = NULL;
    size_t n = 0;
    nx_err e = {0};
    assert_int_equal(reg_list_points(REG, "cpu", &ids, &n, &e), NX_OK);
    assert_true(n >= 16);
    size_t passed = 0, probed = 0;
    for (size_t i = 0; i < n; i++) {
        fam_spec s;
        resolve(ids[i], &s);
        pw_opts o;
        pw_opts_default(&o);
        pw_result r;
        if (pw_check_point(dev_cpu_backend(), &s, &o, &r, &e) != NX_OK)
            fail_msg("%s: %s", ids[i], e.msg);
        int neg = fam_param_get(&s, "negative_control") != NULL;
        int approx = !strcmp(ids[i], "silu_and_mul.libm") || !strcmp(ids[i], "softmax.libm");
        if (neg || approx) {
            if (r.verdict != PW_SKIP)
                fail_msg("%s: want a skip (negative control or approximation): %s", ids[i], r.detail);
        } else {
            if (r.verdict != PW_PASS)
                fail_msg("%s: %s", ids[i], r.detail);
            if (r.nunseen)
                fail_msg("%s: %zu neighbouring points not distinguished: %s", ids[i], r.nunseen, r.detail);
            if (s.nreds && !r.ndist)
                fail_msg("%s: no neighbour distinguished: %s", ids[i], r.detail);
            /* the input-space model: boundary shapes and special values ran,
             * and the account says so, with the thread counts */
            if (!strstr(r.space, "shapes:") || !strstr(r.space, "special values") || !strstr(r.detail, "input space:"))
                fail_msg("%s: no input-space account: %s | %s", ids[i], r.space, r.detail);
            if (!strstr(r.detail, "threads 1, 3, 2, 4, 8"))
                fail_msg("%s: the thread counts are not said: %s", ids[i], r.detail);
            if (strstr(r.space, "not taken by the kernel"))
                fail_msg("%s: a case of the model the kernel does not take: %s", ids[i], r.space);
            passed++;
            probed += r.probe_rows > 0;
        }
        pw_result_free(&r);
        fam_spec_free(&s);
        free(ids[i]);
    }
    free(ids);
    assert_int_equal(passed, 12); /* softmax.plain with them */
    assert_int_equal(probed, 6); /* gemm (2), gemv (2), moe (2) carry order probes */
}

/* Neighbours the check must name as equivalent, with their reason. */
static void test_equivalent_neighbours(void **state)
{
    (void)state;
    fam_spec s;
    resolve("gemv_w4a16.per_element", &s);
    pw_opts o;
    pw_opts_default(&o);
    pw_result r;
    nx_err e = {0};
    assert_int_equal(pw_check_point(dev_cpu_backend(), &s, &o, &r, &e), NX_OK);
    int fma = 0, rev = 0;
    for (size_t k = 0; k < r.nneigh; k++) {
        if (!strcmp(r.neigh[k].what, "k: fma = false")) {
            assert_int_equal(r.neigh[k].seen, PW_EQUIVALENT);
            assert_non_null(strstr(r.neigh[k].why, "exact in fp32"));
            fma = 1;
        }
        if (!strcmp(r.neigh[k].what, "k = stride(8, seq, reverse(pairwise))")) {
            assert_int_equal(r.neigh[k].seen, PW_EQUIVALENT);
            rev = 1;
        }
        if (!strcmp(r.neigh[k].what, "k = stride(4, seq, pairwise)"))
            assert_int_equal(r.neigh[k].seen, PW_DISTINGUISHED);
    }
    assert_true(fma && rev);
    pw_result_free(&r);
    fam_spec_free(&s);
}

/* --- planted bugs ------------------------------------------------------------------------------ */

static void declare_split2(fam_spec *s)
{
    set_tree(s, "k", "split(2, stride(8, seq, pairwise), seq)");
    TRUTH.red = "k";
    TRUTH.tree = "split(4, stride(8, seq, pairwise), seq)";
}

/* The kernel splits K in 4 where the point declares 2 (the example). */
static void test_planted_split_count(void **state)
{
    (void)state;
    expect_fail("gemm.splitk", declare_split2, "k",
                "k: the kernel reduces split(4, stride(8, seq, pairwise), seq), the point declares split(2, stride(8, "
                "seq, pairwise), seq)");
}

static void declare_reversed_slices(fam_spec *s)
{
    set_tree(s, "k", "split(4, stride(8, seq, pairwise), reverse(seq))");
    TRUTH.red = "k";
    TRUTH.tree = "split(4, stride(8, seq, pairwise), seq)";
}

static void test_planted_combine_order(void **state)
{
    (void)state;
    expect_fail("gemm.splitk", declare_reversed_slices, "k",
                "the kernel reduces split(4, stride(8, seq, pairwise), seq)");
}

static void declare_lanes16(fam_spec *s)
{
    set_tree(s, "sumsq", "stride(16, seq, pairwise)");
    TRUTH.red = "sumsq";
    TRUTH.tree = "stride(8, seq, pairwise)";
}

static void test_planted_lane_width(void **state)
{
    (void)state;
    expect_fail("rmsnorm.plain", declare_lanes16, "sumsq", "the kernel reduces stride(8, seq, pairwise)");
}

static void declare_truncation(fam_spec *s)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (!strcmp(s->reds[i].name, "k"))
            s->reds[i].point.out_rounding = NX_RZ;
    TRUTH.red = "k";
    TRUTH.restore_outr = 1;
}

/* The point declares truncation of y, the kernel rounds to nearest. */
static void test_planted_out_rounding(void **state)
{
    (void)state;
    expect_fail("moe_grouped_gemm.seq", declare_truncation, "k", "out_rounding");
}

static void declare_split_combine_reversed(fam_spec *s)
{
    set_tree(s, "combine", "reverse(seq)");
    TRUTH.red = "combine";
    TRUTH.tree = "seq";
}

/* Attention's split partials: the small preset's context never reaches a
 * second split, so only the power variants can see this. */
static void test_planted_attention_combine(void **state)
{
    (void)state;
    expect_fail("paged_decode_attention.split512", declare_split_combine_reversed, "combine",
                "combine: the kernel reduces seq, the point declares reverse(seq)");
}

static void declare_split256(fam_spec *s)
{
    nx_err e = {0};
    assert_int_equal(fam_spec_set_param(s, "split", "256", &e), NX_OK);
    TRUTH.param = "split";
    TRUTH.value = "512";
}

static void test_planted_split_length(void **state)
{
    (void)state;
    expect_fail("paged_decode_attention.split512", declare_split256, "split", "split = 512");
}

static void declare_acc64(fam_spec *s)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (!strcmp(s->reds[i].name, "k")) {
            nx_point *p = &s->reds[i].point;
            p->out = (int)nx_point_out(p);
            p->acc = NX_FP64;
        }
    TRUTH.red = "k";
    TRUTH.restore_acc = 1;
}

/* The point declares an fp64 accumulator, the kernel's is fp32. */
static void test_planted_accumulator(void **state)
{
    (void)state;
    expect_fail("gemv_w4a16.per_element", declare_acc64, "k", "acc = fp32");
}

static void declare_seq_for_vec(fam_spec *s)
{
    set_tree(s, "k", "seq");
    TRUTH.red = "k";
    TRUTH.tree = "stride(8, seq, pairwise)";
}

static void test_planted_moe_lanes(void **state)
{
    (void)state;
    expect_fail("moe_grouped_gemm.vec", declare_seq_for_vec, "k", "k: the kernel reduces stride(8, seq, pairwise)");
}

static void legacy_split2(fam_spec *s)
{
    (void)s;
    TRUTH.legacy_only = 1;
    TRUTH.red = "k";
    TRUTH.tree = "split(2, stride(8, seq, pairwise), seq)";
    TRUTH.param = "split_k";
    TRUTH.value = "2";
}

/* The legacy kernel of a point must give the same bits as the new one:
 * here it splits in 2 where the point (and the new kernel) split in 4. */
static void test_planted_legacy(void **state)
{
    (void)state;
    expect_fail("gemm.splitk", legacy_split2, "k",
                "the legacy kernel does not realise the declared point");
    fam_spec s;
    resolve("gemm.splitk", &s);
    memset(&TRUTH, 0, sizeof TRUTH);
    legacy_split2(&s);
    pw_opts o;
    pw_opts_default(&o);
    pw_result r;
    nx_err e = {0};
    assert_int_equal(pw_check_point(&PLANTED, &s, &o, &r, &e), NX_OK);
    assert_non_null(strstr(r.detail, "k: the kernel reduces split(2, stride(8, seq, pairwise), seq), the point declares "
                                     "split(4, stride(8, seq, pairwise), seq)"));
    pw_result_free(&r);
    fam_spec_free(&s);
    memset(&TRUTH, 0, sizeof TRUTH);
}

/* With the truth restored to the declared point the wrapper is the cpu
 * backend: the same points pass through it (the planted tests fail for
 * the bug, not for the wrapper). */
static void identity(fam_spec *s)
{
    (void)s;
}

static void test_wrapper_passes(void **state)
{
    (void)state;
    fam_spec s;
    resolve("gemm.splitk", &s);
    identity(&s);
    pw_opts o;
    pw_opts_default(&o);
    o.neighbours = 0;
    pw_result r;
    nx_err e = {0};
    assert_int_equal(pw_check_point(&PLANTED, &s, &o, &r, &e), NX_OK);
    if (r.verdict != PW_PASS)
        fail_msg("%s", r.detail);
    assert_true(r.runs >= 6);
    assert_true(r.probe_rows >= 300);
    pw_result_free(&r);
    fam_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_points_pass),  cmocka_unit_test(test_equivalent_neighbours),
        cmocka_unit_test(test_wrapper_passes),      cmocka_unit_test(test_planted_split_count),
        cmocka_unit_test(test_planted_combine_order), cmocka_unit_test(test_planted_lane_width),
        cmocka_unit_test(test_planted_out_rounding), cmocka_unit_test(test_planted_attention_combine),
        cmocka_unit_test(test_planted_split_length), cmocka_unit_test(test_planted_accumulator),
        cmocka_unit_test(test_planted_moe_lanes),   cmocka_unit_test(test_planted_legacy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
