/* test_timing.c: the gate's timing decision (parity/campaign/timing.h) as
 * statistics, on a machine this test loads on purpose.
 *
 * The confidence rank is checked against binomial tails worked outside the
 * code (exact integer binomials).  Then, with two CPU-burning processes
 * started by the test on the machine: the same kernel against itself must
 * pass 20 comparisons out of 20 (the stated false-alarm rate is 0.1%, so a
 * single false alarm in 20 would already be a 2% event), and the same
 * kernel made 30% slower (a backend that runs the cpu kernel, then spins
 * for 0.3 of the time it took) must be flagged 20 out of 20. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "refimpl.h"
#include "registry.h"
#include "timing.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Binomial tails worked by hand (exact integers over 2^n):
 * n = 31: sum_{j<=6} C(31, j) = 1 + 31 + 465 + 4495 + 31465 + 169911 +
 * 736281 = 942649, / 2^31 = 4.4e-4 <= 0.001; adding C(31, 7) = 2629575
 * gives 3572224 / 2^31 = 1.66e-3 > 0.001: k = 7.
 * n = 11: 2^-11 = 4.88e-4, so alpha 5e-4 gives k = 1 and 4e-4 gives 0.
 * n = 21: sum_{j<=4} C(21, j) = 1 + 21 + 210 + 1330 + 5985 = 7547, / 2^21
 * = 3.6e-3 <= 0.01; adding C(21, 5) = 20349 gives 0.0133 > 0.01: k = 5. */
static void test_rank(void **state)
{
    (void)state;
    assert_int_equal(tm_median_bound_rank(31, 0.001), 7);
    assert_int_equal(tm_median_bound_rank(11, 0.0005), 1);
    assert_int_equal(tm_median_bound_rank(11, 0.0004), 0);
    assert_int_equal(tm_median_bound_rank(21, 0.01), 5);
}

/* ---- a kernel made slower ------------------------------------------------ */

static double SLOWDOWN;

static nx_status slow_run(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out, const dev_opts *opts, nx_err *err)
{
    (void)self;
    double t0 = now_s();
    nx_status st = dev_run(dev_cpu_backend(), spec, in, out, opts, err);
    double until = now_s() + SLOWDOWN * (now_s() - t0);
    while (now_s() < until)
        ;
    return st;
}

static pid_t BURNERS[2];

static void burners_start(void)
{
    for (int i = 0; i < 2; i++) {
        BURNERS[i] = fork();
        if (BURNERS[i] == 0) {
            volatile unsigned long x = 0;
            for (;;)
                x++;
        }
    }
}

static void burners_stop(void)
{
    for (int i = 0; i < 2; i++)
        if (BURNERS[i] > 0) {
            kill(BURNERS[i], SIGKILL);
            waitpid(BURNERS[i], NULL, 0);
        }
}

static void test_loaded_machine(void **state)
{
    (void)state;
    reg_registry *reg;
    nx_err e = {0};
    assert_int_equal(reg_load(PARITY_KERNELS_DIR, &reg, &e), NX_OK);
    fam_spec s = {0};
    assert_int_equal(reg_resolve(reg, "cpu", "gemm.splitk", "M=4,N=24,K=200", &s, &e), NX_OK);
    st_file in;
    st_init(&in);
    ref_gen_opts go = {1, NX_DIST_NORMAL, 0, 1};
    assert_int_equal(ref_generate(&s, &go, &in, &e), NX_OK);
    dev_backend slow = *dev_cpu_backend();
    slow.run = slow_run;
    tm_opts o;
    tm_opts_default(&o);
    burners_start();
    int same_flagged = 0, slow_flagged = 0;
    double worst_same = 0, least_slow = 1e9;
    for (int i = 0; i < 20; i++) {
        tm_result r;
        SLOWDOWN = 0;
        assert_int_equal(tm_compare(dev_cpu_backend(), &s, &in, &slow, &s, &in, &o, &r, &e), NX_OK);
        same_flagged += r.slower;
        worst_same = r.lo > worst_same ? r.lo : worst_same;
        SLOWDOWN = 0.3;
        assert_int_equal(tm_compare(dev_cpu_backend(), &s, &in, &slow, &s, &in, &o, &r, &e), NX_OK);
        slow_flagged += r.slower;
        least_slow = r.lo < least_slow ? r.lo : least_slow;
        if (i == 0)
            print_message("30%% slower, loaded: %s\n", r.text);
    }
    burners_stop();
    print_message("loaded by 2 busy processes: alike flagged %d / 20 (highest lower bound %.3f); 30%% slower flagged "
                  "%d / 20 (least lower bound %.3f)\n",
                  same_flagged, worst_same, slow_flagged, least_slow);
    assert_int_equal(same_flagged, 0);
    assert_int_equal(slow_flagged, 20);
    st_free(&in);
    fam_spec_free(&s);
    reg_free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rank), cmocka_unit_test(test_loaded_machine)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    burners_stop();
    return rc;
}
