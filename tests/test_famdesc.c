/* test_famdesc.c: each family's descriptor (family/famdesc.h) against the
 * rest of the project: every family the reference implements has one and
 * every descriptor a reference; every point of the sample registry's
 * classes resolves at both presets, its inputs are described there, and the
 * batch and output dimensions are dimensions of the preset's shape; the
 * power variants and probes name params and tensors the family has.  A
 * family added in one place and forgotten in another fails here. */
#include "famdesc.h"
#include "famspec.h"
#include "refimpl.h"
#include "registry.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* 1 when "A=1,B=2" names dimension dim. */
static int shape_has(const char *shape, const char *dim)
{
    size_t n = strlen(dim);
    for (const char *p = shape; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, dim, n) && p[n] == '=')
            return 1;
    return 0;
}

static void test_reference_and_descriptor_agree(void **state)
{
    (void)state;
    size_t nd = 0;
    while (fam_desc_at(nd))
        nd++;
    assert_int_equal(nd, ref_family_count());
    for (size_t i = 0; i < ref_family_count(); i++) {
        const fam_desc *d = fam_desc_of(ref_family_name(i));
        if (!d)
            fail_msg("family %s has a reference but no descriptor", ref_family_name(i));
        assert_non_null(d->batch_dim);
        assert_non_null(d->small);
        assert_non_null(d->layer);
        assert_true(shape_has(d->small, d->batch_dim));
        assert_true(shape_has(d->layer, d->batch_dim));
        for (int k = 0; k < 3 && d->out_dims[k]; k++) {
            assert_true(shape_has(d->small, d->out_dims[k]));
            assert_non_null(d->out_units[k][0]);
            assert_non_null(d->out_units[k][1]);
        }
    }
    assert_null(fam_desc_of("no_such_family"));
    assert_null(fam_preset_shape("tiny", "gemm"));
    assert_false(fam_preset_known("tiny"));
    assert_true(fam_preset_known("8b-layer"));
}

/* Every point of every sample class resolves at both presets, and the
 * inputs the reference describes there exist. */
static void test_sample_points_resolve_at_presets(void **state)
{
    (void)state;
    reg_registry *reg = NULL;
    nx_err err = {0};
    if (reg_load(PARITY_KERNELS_DIR, &reg, &err))
        fail_msg("%s", err.msg);
    static const char *const presets[] = {"small", "8b-layer"};
    size_t checked = 0, nc = reg_class_count(reg);
    assert_true(nc >= 4);
    for (size_t c = 0; c < nc; c++) {
        const char *cls = reg_class_name(reg, c);
        char **ids = NULL;
        size_t n = 0;
        if (reg_list_points(reg, cls, &ids, &n, &err))
            fail_msg("%s: %s", cls, err.msg);
        for (size_t i = 0; i < n; i++) {
            char fam[64];
            snprintf(fam, sizeof fam, "%s", ids[i]);
            char *dot = strchr(fam, '.');
            if (dot)
                *dot = 0;
            if (!fam_desc_of(fam))
                fail_msg("%s: family %s has no descriptor", ids[i], fam);
            for (size_t p = 0; p < 2; p++) {
                fam_spec s;
                memset(&s, 0, sizeof s);
                const char *shape = fam_preset_shape(presets[p], fam);
                assert_non_null(shape);
                if (reg_resolve(reg, cls, ids[i], shape, &s, &err))
                    fail_msg("%s:%s at %s: %s", cls, ids[i], shape, err.msg);
                ref_tensor_desc *d = NULL;
                size_t nt = 0;
                if (ref_inputs(&s, &d, &nt, &err))
                    fail_msg("%s:%s at %s: inputs: %s", cls, ids[i], shape, err.msg);
                assert_true(nt > 0);
                /* the probe's tensor is an input of the family */
                const fam_desc *fd = fam_desc_of(fam);
                if (fd->probe.red && fam_reduction_get(&s, fd->probe.red)) {
                    int found = 0;
                    for (size_t k = 0; k < nt; k++)
                        found |= !strcmp(d[k].name, fd->probe.tensor);
                    if (!found)
                        fail_msg("%s: probe tensor '%s' is not an input", fam, fd->probe.tensor);
                    assert_true(shape_has(shape, fd->probe.rows));
                    assert_true(shape_has(shape, fd->probe.len));
                }
                if (fd->final_red)
                    assert_non_null(fam_reduction_get(&s, fd->final_red));
                free(d);
                fam_spec_free(&s);
                checked++;
            }
            free(ids[i]);
        }
        free(ids);
    }
    assert_true(checked >= 40);
    reg_free(reg);
}

/* The defaults are the descriptor's, read through famspec's readers: an
 * absent param takes them, "@in" follows the input's format, a present one
 * wins, and a param with no default and no value is an error. */
static void test_defaults(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(fam_desc_default("rmsnorm", "eps", buf, sizeof buf), "1e-6");
    assert_string_equal(fam_desc_default("rmsnorm", "out", buf, sizeof buf), "@in");
    assert_null(fam_desc_default("rmsnorm", "e", buf, sizeof buf)); /* a prefix of eps is not eps */
    assert_null(fam_desc_default("gemm", "vec", buf, sizeof buf));  /* a backend's, not the family's */
    assert_null(fam_desc_default("nosuch", "in", buf, sizeof buf));

    fam_spec s;
    memset(&s, 0, sizeof s);
    s.family = strdup("rmsnorm");
    s.point = strdup("t");
    nx_fmt f;
    float eps;
    int res;
    nx_err err = {0};
    assert_int_equal(fam_get_fmt(&s, "out", FAM_DEFAULT_FMT, &f, &err), NX_OK);
    assert_int_equal(f, NX_BF16); /* out = @in, in = bf16 */
    assert_int_equal(fam_spec_set_param(&s, "in", "fp16", &err), NX_OK);
    assert_int_equal(fam_get_fmt(&s, "out", FAM_DEFAULT_FMT, &f, &err), NX_OK);
    assert_int_equal(f, NX_FP16); /* follows the given input format */
    assert_int_equal(fam_spec_set_param(&s, "out", "fp32", &err), NX_OK);
    assert_int_equal(fam_get_fmt(&s, "out", FAM_DEFAULT_FMT, &f, &err), NX_OK);
    assert_int_equal(f, NX_FP32);
    assert_int_equal(fam_get_f32(&s, "eps", FAM_DEFAULT_STR, &eps, &err), NX_OK);
    assert_true(eps == 0x1.0c6f7ap-20f); /* 1e-6 rounded to fp32 */
    assert_int_equal(fam_get_bool(&s, "residual", FAM_DEFAULT_BOOL, &res, &err), NX_OK);
    assert_int_equal(res, 0);
    assert_int_equal(fam_get_bool(&s, "fused", FAM_DEFAULT_BOOL, &res, &err), NX_EINVAL);
    assert_non_null(strstr(err.msg, "param 'fused' has no value"));
    fam_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_and_descriptor_agree),
        cmocka_unit_test(test_sample_points_resolve_at_presets),
        cmocka_unit_test(test_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
