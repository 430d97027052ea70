/* cuda_trace.c: traces of the CUDA backend's runs through the C capture
 * API (traces/capture.h), with the device metadata `parity check` shows:
 * sku, sm_count, driver, nvcc, host (set by the API), cc, runtime. */
#include "cuda_backend.h"

#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "cuda_plan.h"

static void put_param(parity_capture *cap, const fam_spec *spec, const char *dims)
{
    for (size_t i = 0; i < spec->nparams; i++) {
        const fam_param *p = &spec->params[i];
        char key[72];
        snprintf(key, sizeof key, ",%s,", p->name);
        if (strstr(dims, key))
            continue; /* a dimension: in the shape */
        if (strpbrk(p->value, ",= \t\n") || !p->value[0])
            continue; /* not expressible in the params grammar */
        parity_capture_param(cap, p->name, p->value);
    }
}

nx_status dev_cuda_write_trace(const char *path, const fam_spec *spec, const st_file *out, const dev_opts *opts,
                               const dev_cuda_trace *t, nx_err *err)
{
    if (!path || !spec || !spec->family || !out || !t)
        return nx_err_set(err, NX_EINVAL, "cuda trace: a path, a spec, outputs and the run's details are needed");
    dev_cuda_info info;
    dev_cuda_info_get(&info);
    if (!info.available)
        return nx_err_set(err, NX_EUNSUPPORTED, "cuda trace: %s", info.reason);
    const char *kid = opts && opts->kernel ? opts->kernel : spec->kernel;
    cu_plan plan;
    nx_status st = cu_plan_make(spec, kid, spec->class_name, &plan, err);
    if (st)
        return st;
    /* the kernel id the point names (a registry's name served by ours, see
     * cu_plan_make), else ours; x.cuda.kernel says which code ran */
    char kernel[128];
    snprintf(kernel, sizeof kernel, "%s", plan.alias_of[0] ? plan.alias_of : plan.kernel->id);
    const char *bdim = cu_family_batch_dim(plan.kernel->fam);
    const char *dims = cu_family_dims(plan.kernel->fam), *plan_id = plan.kernel->id;
    cu_plan_free(&plan);
    parity_capture *cap = parity_capture_begin(path, spec->family, t->point ? t->point : spec->point,
                                               spec->class_name, kernel);
    parity_capture_device(cap, "sku", info.sku);
    parity_capture_device_int(cap, "sm_count", info.sm_count);
    parity_capture_device(cap, "driver", info.driver);
    parity_capture_device(cap, "nvcc", info.nvcc);
    parity_capture_device(cap, "runtime", info.runtime);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", info.cc_major, info.cc_minor);
    parity_capture_device(cap, "cc", cc);
    /* the shape: the family's dimensions, in its order */
    char list[128];
    snprintf(list, sizeof list, "%s", dims + 1);
    long rows = 1;
    for (char *save = NULL, *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
        long v = 0;
        const char *txt = fam_param_get(spec, d);
        if (!txt) {
            if (strcmp(d, "B") == 0 && strcmp(spec->family, "gemv_w4a16") == 0)
                v = 1; /* gemv's B defaults to 1 */
            else
                continue;
        } else if (fam_param_long(spec, d, &v, err)) {
            parity_capture_abort(cap);
            return err ? err->code : NX_EINVAL;
        }
        parity_capture_dim(cap, d, v);
        if (strcmp(d, bdim) == 0)
            rows = v;
    }
    put_param(cap, spec, dims);
    if (t->has_seed)
        parity_capture_seed(cap, t->seed, t->dist ? t->dist : "normal");
    if (t->inputs)
        for (size_t i = 0; i < t->inputs->ntensors; i++) {
            const st_tensor *x = &t->inputs->tensors[i];
            parity_capture_input(cap, x->name, st_dtype_name(x->dtype), x->ndim, x->shape, x->data);
        }
    parity_capture_mode(cap, opts && opts->mode == DEV_GRAPHED ? "graphed" : "eager");
    parity_capture_run(cap, t->run);
    if (t->batch)
        parity_capture_batch(cap, t->batch);
    else
        parity_capture_batch_rows(cap, 0, rows);
    if (t->created)
        parity_capture_created(cap, t->created);
    /* what run() recorded: the kernel and the numerics point it realised */
    for (size_t i = 0; i < out->nmeta; i++)
        if (strncmp(out->meta[i].key, "x.", 2) == 0)
            parity_capture_meta(cap, out->meta[i].key, out->meta[i].value);
    if (!st_get_meta(out, "x.cuda.kernel"))
        parity_capture_meta(cap, "x.cuda.kernel", plan_id);
    for (size_t i = 0; i < out->ntensors; i++) {
        const st_tensor *y = &out->tensors[i];
        parity_capture_output(cap, y->name, st_dtype_name(y->dtype), y->ndim, y->shape, y->data);
    }
    return parity_capture_end(cap, err);
}
