/* fuzz_trace.c: the trace reader (traces/trace.c over safetensors) on any
 * bytes: a trace it accepts has its outputs, inputs, shape and params
 * looked up. */
#include "fuzz_util.h"

#include "trace.h"

#define FZ_MAX_INPUT (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const char *path = fz_scratch("trace");
    if (fz_write(path, data, size))
        abort();
    trace t;
    nx_err err = {0};
    if (trace_read(path, &t, &err) == NX_OK) {
        for (size_t i = 0; i < t.file.ntensors; i++) {
            const st_tensor *x = &t.file.tensors[i];
            (void)(trace_tensor_is_input(x) ? trace_input(&t, x->name) : trace_output(&t, x->name));
        }
        for (size_t i = 0; i < t.nshape; i++) {
            int64_t v;
            if (!trace_shape_dim(&t, t.shape[i].name, &v))
                abort(); /* a dimension read must be found by its name */
        }
        for (size_t i = 0; i < t.nparams; i++)
            if (!trace_param_get(&t, t.params[i].name))
                abort();
        (void)trace_mode_name(t.mode);
        trace_free(&t);
    }
    unlink(path);
    return 0;
}
