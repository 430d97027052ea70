/* rows.c: dtype ↔ format mapping, decode and encode of tensors. */
#include "rows.h"

#include <string.h>

int rows_fmt_of_dtype(st_dtype dt)
{
    switch (dt) {
    case ST_F64: return NX_FP64;
    case ST_F32: return NX_FP32;
    case ST_F16: return NX_FP16;
    case ST_BF16: return NX_BF16;
    case ST_F8_E5M2: return NX_E5M2;
    case ST_F8_E4M3: return NX_E4M3;
    case ST_F6_E3M2: return NX_E3M2;
    case ST_F6_E2M3: return NX_E2M3;
    case ST_F4: return NX_E2M1;
    case ST_F8_E8M0: return NX_E8M0;
    default: return -1;
    }
}

st_dtype rows_dtype_of_fmt(nx_fmt f)
{
    st_dtype dt = ST_F32;
    st_dtype_from_name(nx_format(f)->st_dtype, &dt);
    return dt;
}

nx_status rows_decode(const st_tensor *t, double *out, nx_err *err)
{
    int f = rows_fmt_of_dtype(t->dtype);
    if (f < 0)
        return nx_err_set(err, NX_EINVAL, "tensor '%s': dtype %s is not a number format of NUMERICS.md §1",
                          t->name, st_dtype_name(t->dtype));
    for (size_t i = 0; i < t->nelem; i++)
        out[i] = nx_decode((nx_fmt)f, st_get_bits(t, t->data, i), NULL);
    return NX_OK;
}

nx_status rows_encode(nx_fmt f, const double *v, size_t count, st_tensor *t, uint8_t *data, nx_err *err)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t bits;
        nx_err e;
        if (nx_encode(f, v[i], &bits, &e) != NX_OK)
            return nx_err_set(err, NX_EINVAL, "element %zu of '%s': %s", i, t->name, e.msg);
        st_put_bits(t, data, i, bits);
    }
    return NX_OK;
}
