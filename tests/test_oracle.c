/* test_oracle.c: the MPFR engine against the independent exact-rational
 * oracle (tests/oracle), bit for bit, on random points and inputs: every
 * format, tree construct (the third edition's too), mode, atom;
 * cancellation, subnormals, zeros, NaN and inf.  Points go through the TOML reader, as `parity reduce` does.
 *
 * PARITY_SEED overrides the seed; PARITY_CASES the number of cases (the
 * 'long' CTest label runs many more).  A failure prints everything needed
 * to replay it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_engine.h"

/* Messages are cut at the buffers' size, which is fine for a test report. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include "oracle/oracle.h"
#include "point_toml.h"
#include "randpoint.h"

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* engine_fast: the fast engine instead of MPFR, held to the oracle
 * directly (not only through MPFR). */
static void run_cases_on(long count, uint64_t seed, int engine_fast)
{
    rp_seed(seed);
    long fails = 0, compared = 0, both_err = 0, with_c = 0;
    for (long idx = 0; idx < count && fails < 5; idx++) {
        rp_case c;
        rp_case_make(&c);
        uint64_t obits = 0;
        char oerr[512] = "";
        int orc = orc_reduce_c(&c.op, c.in_fmt, c.dot ? c.b_fmt : NULL, c.a, c.dot ? c.b : NULL, c.n,
                               c.c_fmt, c.has_c ? &c.c : NULL, &obits, oerr, sizeof oerr);

        nx_err err = {0};
        nx_point pt;
        char why[1024];
        if (pt_from_text(c.toml, "point", &pt, &err)) {
            snprintf(why, sizeof why, "the engine rejected the point: %s", err.msg);
            rp_case_dump(&c, seed, idx, why);
            fails++;
            continue;
        }
        nx_program *prog;
        if (nx_program_build_ex(&pt, c.n, c.dot, c.has_c, &prog, &err)) {
            snprintf(why, sizeof why, "the engine could not expand the point: %s", err.msg);
            rp_case_dump(&c, seed, idx, why);
            fails++;
            nx_point_free(&pt);
            continue;
        }
        double a[64], b[64], y;
        nx_fmt fa = (nx_fmt)nx_fmt_from_name(c.in_fmt), fb = (nx_fmt)nx_fmt_from_name(c.b_fmt);
        for (size_t i = 0; i < c.n; i++) {
            a[i] = nx_decode(fa, c.a[i], NULL);
            b[i] = nx_decode(fb, c.b[i], NULL);
        }
        nx_fmt fc = c.has_c ? (nx_fmt)nx_fmt_from_name(c.c_fmt) : NX_FP64;
        double cv = c.has_c ? nx_decode(fc, c.c, NULL) : 0.0;
        nx_rows rows = {.rows = 1, .a_fmt = fa, .a = a, .b_fmt = fb, .b = c.dot ? b : NULL,
                        .c_fmt = fc, .c = c.has_c ? &cv : NULL};
        if (engine_fast)
            assert_int_equal(nx_fast_reduce(prog, &rows, &y, 1, &err), NX_OK);
        else
            assert_int_equal(nx_mpfr_reduce(prog, &rows, &y, 1, &err), NX_OK);
        uint64_t ebits = 0;
        int erc = nx_encode(prog->out, y, &ebits, &err) != NX_OK;
        if (orc && erc) {
            both_err++;
        } else if (orc || erc) {
            snprintf(why, sizeof why, "oracle %s, engine %s", orc ? oerr : "ok", erc ? err.msg : "ok");
            rp_case_dump(&c, seed, idx, why);
            fails++;
        } else if (obits != ebits) {
            snprintf(why, sizeof why, "oracle 0x%llx, engine 0x%llx (%a)", (unsigned long long)obits,
                     (unsigned long long)ebits, y);
            rp_case_dump(&c, seed, idx, why);
            fails++;
        } else {
            compared++;
            with_c += c.has_c;
        }
        nx_program_free(prog);
        nx_point_free(&pt);
    }
    fprintf(stderr,
            "oracle vs %s (edition %d%s): seed %llu, %ld cases bit-identical (%ld of them from a start value c), "
            "%ld rejected by both, %ld mismatches\n",
            engine_fast ? "fast" : "mpfr", rp_edition, rp_rare ? ", rare paths" : "", (unsigned long long)seed,
            compared, with_c, both_err, fails);
    assert_int_equal(fails, 0);
    assert_true(with_c > compared / 5); /* c is drawn for about a third of the cases */
    assert_true(compared > count * 9 / 10);
}

static void run_cases(long count, uint64_t seed)
{
    run_cases_on(count, seed, 0);
}

static void test_random_points(void **state)
{
    (void)state;
    run_cases(env_long("PARITY_CASES", 20000), (uint64_t)env_long("PARITY_SEED", 20261202));
}

/* The third edition's forms and subtree settings (docs/numerics.md §4.2),
 * lanes included (rp_edition 4), tiles carried (rp_edition 5) and stored
 * results (rp_edition 7, the seventh edition's `store`) and heads
 * (rp_edition 8, the eighth edition), in the trees,
 * against the MPFR engine and, with half the terms from the rare
 * paths, the fast engine. */
static void test_random_points_edition4(void **state)
{
    (void)state;
    rp_edition = 8;
    run_cases(env_long("PARITY_CASES", 20000), (uint64_t)env_long("PARITY_SEED", 20261206));
    rp_rare = 1;
    run_cases_on(env_long("PARITY_CASES", 20000), (uint64_t)env_long("PARITY_SEED", 20261207), 1);
    rp_rare = 0;
    rp_edition = 2;
}

/* The fast engine against the oracle directly, on its own seed, with half
 * the terms from the rare paths (exact cancellation under every mode, fp64
 * FMA included; subnormal rows). */
static void test_fast_rare_paths(void **state)
{
    (void)state;
    rp_rare = 1;
    run_cases_on(env_long("PARITY_CASES", 20000), (uint64_t)env_long("PARITY_SEED", 20261205), 1);
    rp_rare = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_points), cmocka_unit_test(test_fast_rare_paths),
                                       cmocka_unit_test(test_random_points_edition4)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
