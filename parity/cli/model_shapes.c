/* model_shapes.c: the shapes that matter to a model (model_shapes.h). */
#include "model_shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "famdesc.h"
#include "lkb.h"

/* The dimensions of a family that index independent outputs, halved
 * first (together, keeping their ratio) where a shape costs too much: the
 * reduction lengths (K, H, D, the context) are never cut. */
static const char *const free_dims[][3] = {
    {"gemm", "N", NULL},        {"gemv_w4a16", "N", NULL}, {"moe_grouped_gemm", "N", NULL},
    {"paged_decode_attention", "HQ", "HKV"},
};

static long long dim_get(const char *shape, const char *d)
{
    size_t l = strlen(d);
    for (const char *p = shape; *p;) {
        if (!strncmp(p, d, l) && p[l] == '=')
            return atoll(p + l + 1);
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    return -1;
}

static void dim_set(char *shape, size_t len, const char *d, long long v)
{
    char out[256] = "";
    size_t l = strlen(d);
    for (const char *p = shape; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t o = strlen(out);
        if (!strncmp(p, d, l) && p[l] == '=')
            snprintf(out + o, sizeof out - o, "%s%s=%lld", o ? "," : "", d, v);
        else
            snprintf(out + o, sizeof out - o, "%s%.*s", o ? "," : "", (int)n, p);
        if (!e)
            break;
        p = e + 1;
    }
    snprintf(shape, len, "%s", out);
}

nx_status cli_model_shapes(const reg_registry *reg, const char *cls, const char *model, cli_mshape **out, size_t *n,
                           nx_err *err)
{
    *out = NULL;
    *n = 0;
    lkb_opts o = {model, NULL, NULL};
    lkb_report rep;
    nx_status st = lkb_compute(reg, cls, &o, &rep, err);
    if (st)
        return st;
    if (!rep.has_step) {
        lkb_report_free(&rep);
        return nx_err_set(err, NX_EINVAL, "model '%s' has no step manifest (%s/models/%s/STEP.toml)", model,
                          reg_dir(reg), model);
    }
    size_t cap = 3 * rep.step.nops + 1;
    cli_mshape *v = calloc(cap, sizeof *v);
    if (!v) {
        lkb_report_free(&rep);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (int c = 0; c < 3; c++)
        for (size_t i = 0; i < rep.cov[c].nops; i++) {
            const lkb_op_at *a = &rep.cov[c].ops[i];
            if (!*a->point)
                continue;
            char shape[256], fam[160];
            long long flops = 0, bytes = 0;
            nx_err e;
            if (lkb_op_eval(a->op, rep.cov[c].c, shape, sizeof shape, &flops, &bytes, &e) != NX_OK)
                continue;
            snprintf(fam, sizeof fam, "%s", a->point);
            char *dot = strchr(fam, '.');
            if (dot)
                *dot = 0;
            cli_mshape m = {0};
            snprintf(m.point, sizeof m.point, "%s", a->point);
            snprintf(m.real, sizeof m.real, "%s", shape);
            m.c = rep.cov[c].c;
            char cut[256] = "";
            const char *const *fd = NULL;
            for (size_t k = 0; k < sizeof free_dims / sizeof free_dims[0]; k++)
                if (!strcmp(free_dims[k][0], fam))
                    fd = &free_dims[k][1];
            const char *bd = fam_batch_dim(fam);
            /* halve the free dimensions, then the batch, until it fits */
            for (int stage = 0; stage < 2 && flops > CLI_MODEL_FLOPS; stage++) {
                const char *d0 = stage == 0 ? (fd ? fd[0] : NULL) : bd, *d1 = stage == 0 && fd ? fd[1] : NULL;
                long long v0 = d0 ? dim_get(shape, d0) : -1, v1 = d1 ? dim_get(shape, d1) : -1, w0 = v0, w1 = v1;
                if (v0 <= 1 || (d1 && v1 <= 1))
                    continue;
                while (flops > CLI_MODEL_FLOPS && w0 > 1 && (!d1 || w1 > 1)) {
                    w0 /= 2;
                    flops /= 2;
                    if (d1)
                        w1 /= 2;
                }
                dim_set(shape, sizeof shape, d0, w0);
                size_t l = strlen(cut);
                snprintf(cut + l, sizeof cut - l, "%s%s %lld -> %lld", l ? ", " : "", d0, v0, w0);
                if (d1) {
                    dim_set(shape, sizeof shape, d1, w1);
                    l = strlen(cut);
                    snprintf(cut + l, sizeof cut - l, ", %s %lld -> %lld", d1, v1, w1);
                }
            }
            snprintf(m.shape, sizeof m.shape, "%s", shape);
            m.capped = *cut != 0;
            if (m.capped)
                snprintf(m.said, sizeof m.said, "%.63s at C=%lld: %.120s, capped %.120s (the exact reference's cost: the op's "
                         "flops over %lld; reduction lengths kept)", a->op->id, m.c, m.real, cut, CLI_MODEL_FLOPS);
            else
                snprintf(m.said, sizeof m.said, "%s at C=%lld: %s", a->op->id, m.c, m.real);
            int seen = 0;
            for (size_t k = 0; k < *n && !seen; k++)
                seen = !strcmp(v[k].point, m.point) && !strcmp(v[k].shape, m.shape);
            if (!seen && *n < cap)
                v[(*n)++] = m;
        }
    lkb_report_free(&rep);
    *out = v;
    return NX_OK;
}
