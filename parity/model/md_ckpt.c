/* md_ckpt.c: a model's weights from (and to) a safetensors checkpoint
 * (docs/model.md "Checkpoints"): tensor names from a small TOML map, the
 * Hugging Face Llama names by default; q, k and v (and gate and up)
 * stacked into the rows the fused gemms read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_int.h"
#include "nx_limits.h"
#include "safetensors.h"
#include "tomlc.h"

static const char *const name_keys[MD_NNAMES] = {"embed", "final_norm", "lm_head", "attn_norm", "wq", "wk", "wv",
                                                 "wo", "mlp_norm", "w_gate", "w_up", "w_down"};
static const char *const name_defaults[MD_NNAMES] = {
    "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
    "model.layers.{L}.input_layernorm.weight", "model.layers.{L}.self_attn.q_proj.weight",
    "model.layers.{L}.self_attn.k_proj.weight", "model.layers.{L}.self_attn.v_proj.weight",
    "model.layers.{L}.self_attn.o_proj.weight", "model.layers.{L}.post_attention_layernorm.weight",
    "model.layers.{L}.mlp.gate_proj.weight", "model.layers.{L}.mlp.up_proj.weight",
    "model.layers.{L}.mlp.down_proj.weight"};

void md_names_free(md_names *n)
{
    for (int i = 0; i < MD_NNAMES; i++)
        free(n->name[i]);
    memset(n, 0, sizeof *n);
}

nx_status md_names_load(const char *path, md_names *n, md_dims *d, nx_err *err)
{
    memset(n, 0, sizeof *n);
    for (int i = 0; i < MD_NNAMES; i++)
        if (!(n->name[i] = strdup(name_defaults[i]))) {
            md_names_free(n);
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        }
    if (!path)
        return NX_OK;
    tc_node *root = NULL;
    nx_status st = tc_parse_file(path, &root, err);
    if (st) {
        md_names_free(n);
        return st;
    }
    static const char *const top[] = {"names", "dims", "rope_base", NULL};
    static const char *const dk[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "mlp", "vocab", NULL};
    long long *dv[] = {&d->layers, &d->hidden, &d->hq, &d->hkv, &d->d, &d->mlp, &d->vocab};
    const tc_node *t;
    st = tc_check_keys(root, top, err);
    if (!st && (t = tc_get(root, "rope_base"))) {
        if (t->kind == TC_INT || t->kind == TC_FLOAT)
            n->rope_base = t->kind == TC_INT ? (double)t->i : t->f;
        if (!(n->rope_base > 1) || n->rope_base > 1e12)
            st = tc_errf(err, NX_EINVAL, t, "rope_base must be a number in (1, 1e12]");
    }
    if (!st && (t = tc_get(root, "names"))) {
        static const char *const nk[MD_NNAMES + 1] = {"embed", "final_norm", "lm_head", "attn_norm", "wq", "wk",
                                                      "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down", NULL};
        if (!(st = tc_check_kind(t, TC_TABLE, err)) && !(st = tc_check_keys(t, nk, err)))
            for (int i = 0; i < MD_NNAMES && !st; i++) {
                const tc_node *v = tc_get(t, name_keys[i]);
                if (!v)
                    continue;
                if (v->kind != TC_STRING || !v->str[0])
                    st = tc_errf(err, NX_EINVAL, v, "names.%s must be a non-empty string", name_keys[i]);
                else if (i >= MD_N_ATTN_NORM && !strstr(v->str, "{L}"))
                    st = tc_errf(err, NX_EINVAL, v, "names.%s is per layer: it must hold {L}", name_keys[i]);
                else {
                    free(n->name[i]);
                    if (!(n->name[i] = strdup(v->str)))
                        st = nx_err_set(err, NX_ENOMEM, "out of memory");
                }
            }
    }
    if (!st && (t = tc_get(root, "dims"))) {
        if (!(st = tc_check_kind(t, TC_TABLE, err)) && !(st = tc_check_keys(t, dk, err)))
            for (int i = 0; dk[i] && !st; i++) {
                const tc_node *v = tc_get(t, dk[i]);
                if (!v)
                    continue;
                if (v->kind != TC_INT || v->i < 1 || v->i > MD_DIM_MAX)
                    st = tc_errf(err, NX_EINVAL, v, "dims.%s must be an integer in [1, 2^31]", dk[i]);
                else
                    *dv[i] = v->i;
            }
        if (!st && (d->hq % d->hkv || d->d % 2))
            st = tc_errf(err, NX_EINVAL, t, "dims: heads (%lld) must be a multiple of kv_heads (%lld) and "
                         "head_dim (%lld) even", d->hq, d->hkv, d->d);
    }
    tc_free(root);
    if (st)
        md_names_free(n);
    return st;
}

static void layer_name(const char *pat, long long l, char *out, size_t len)
{
    const char *p = strstr(pat, "{L}");
    if (!p) {
        snprintf(out, len, "%s", pat);
        return;
    }
    snprintf(out, len, "%.*s%lld%s", (int)(p - pat), pat, l, p + 3);
}

/* Converts tensor `name` of f ([rows, cols], or [cols] when rows is 0)
 * into dst as bf16. */
static nx_status take(const st_file *f, const char *path, const char *name, int64_t rows, int64_t cols, uint16_t *dst,
                      nx_err *err)
{
    const st_tensor *t = st_find(f, name);
    if (!t)
        return nx_err_set(err, NX_EINVAL, "%s: no tensor '%s' (docs/model.md: the names map)", path, name);
    int ok = rows ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == cols;
    if (!ok) {
        if (rows)
            return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' must be [%lld, %lld] for the model's dims",
                              path, name, (long long)rows, (long long)cols);
        return nx_err_set(err, NX_EINVAL, "%s: tensor '%s' must be [%lld] for the model's dims", path, name,
                          (long long)cols);
    }
    for (uint64_t i = 0; i < t->nelem; i++) {
        uint64_t b = st_get_bits(t, t->data, i);
        if (t->dtype == ST_BF16) {
            dst[i] = (uint16_t)b;
        } else if (t->dtype == ST_F32) {
            uint32_t u = (uint32_t)b;
            float x;
            memcpy(&x, &u, 4);
            dst[i] = md_f_to_bf16(x);
        } else if (t->dtype == ST_F16) {
            /* fp16 -> fp32 exactly, then bf16 rne */
            uint32_t s = (uint32_t)(b >> 15) & 1, e = (uint32_t)(b >> 10) & 31, m = (uint32_t)b & 1023;
            float x;
            if (e == 31)
                x = m ? __builtin_nanf("") : __builtin_inff();
            else
                x = e ? ((float)(1024 + m) * (float)(1u << e)) / (float)(1u << 25) : (float)m / (float)(1u << 24);
            dst[i] = md_f_to_bf16(s ? -x : x);
        } else {
            return nx_err_set(err, NX_EUNSUPPORTED, "%s: tensor '%s' is %s; the model reads BF16, F16 or F32", path,
                              name, st_dtype_name(t->dtype));
        }
    }
    return NX_OK;
}

nx_status md_ckpt_load(const char *path, const md_names *n, const md_dims *d, md_weights *w, nx_err *err)
{
    memset(w, 0, sizeof *w);
    st_file f;
    nx_status st = st_read(path, &f, err);
    if (st)
        return st;
    int64_t H = d->hidden, A = d->hq * d->d, KV = d->hkv * d->d, M = d->mlp, V = d->vocab;
    size_t Q = (size_t)(A + 2 * KV);
    if (!(w->l = calloc((size_t)d->layers, sizeof *w->l)) || !(w->embed = malloc((size_t)(V * H) * 2)) ||
        !(w->lm_head = malloc((size_t)(V * H) * 2)) || !(w->final_norm = malloc((size_t)H * 2)))
        st = nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
    if (!st)
        st = take(&f, path, n->name[MD_N_EMBED], V, H, w->embed, err);
    if (!st)
        st = take(&f, path, n->name[MD_N_LM_HEAD], V, H, w->lm_head, err);
    if (!st)
        st = take(&f, path, n->name[MD_N_FINAL_NORM], 0, H, w->final_norm, err);
    char nm[512];
    for (long long l = 0; l < d->layers && !st; l++) {
        md_layer_w *x = &w->l[l];
        if (!(x->attn_norm = malloc((size_t)H * 2)) || !(x->mlp_norm = malloc((size_t)H * 2)) ||
            !(x->wqkv = malloc(Q * (size_t)H * 2)) || !(x->wo = malloc((size_t)(H * A) * 2)) ||
            !(x->wgu = malloc((size_t)(2 * M * H) * 2)) || !(x->wdown = malloc((size_t)(H * M) * 2))) {
            st = nx_err_set(err, NX_ENOMEM, "%s: out of memory", path);
            break;
        }
        struct {
            int k;
            int64_t rows, cols;
            uint16_t *dst;
        } parts[] = {{MD_N_ATTN_NORM, 0, H, x->attn_norm},
                     {MD_N_WQ, A, H, x->wqkv},
                     {MD_N_WK, KV, H, x->wqkv + A * H},
                     {MD_N_WV, KV, H, x->wqkv + (A + KV) * H},
                     {MD_N_WO, H, A, x->wo},
                     {MD_N_MLP_NORM, 0, H, x->mlp_norm},
                     {MD_N_WGATE, M, H, x->wgu},
                     {MD_N_WUP, M, H, x->wgu + M * H},
                     {MD_N_WDOWN, H, M, x->wdown}};
        for (size_t i = 0; i < sizeof parts / sizeof parts[0] && !st; i++) {
            layer_name(n->name[parts[i].k], l, nm, sizeof nm);
            st = take(&f, path, nm, parts[i].rows, parts[i].cols, parts[i].dst, err);
        }
    }
    st_free(&f);
    if (st)
        md_weights_free(w, d->layers);
    return st;
}

/* Adds tensor name ([rows, cols] or [cols]) borrowing src. */
static nx_status put(st_file *f, const char *name, int64_t rows, int64_t cols, const uint16_t *src, nx_err *err)
{
    int64_t shape[2] = {rows, cols};
    st_tensor *t = NULL;
    nx_status st = rows ? st_add_tensor(f, name, ST_BF16, 2, shape, &t, err)
                        : st_add_tensor(f, name, ST_BF16, 1, shape + 1, &t, err);
    if (st)
        return st;
    free(t->data);
    t->data = (uint8_t *)src;
    t->owns_data = false;
    return NX_OK;
}

nx_status md_ckpt_save(const char *path, const md_names *n, const md_dims *d, const md_weights *w, nx_err *err)
{
    st_file f;
    st_init(&f);
    int64_t H = d->hidden, A = d->hq * d->d, KV = d->hkv * d->d, M = d->mlp, V = d->vocab;
    nx_status st = put(&f, n->name[MD_N_EMBED], V, H, w->embed, err);
    if (!st)
        st = put(&f, n->name[MD_N_FINAL_NORM], 0, H, w->final_norm, err);
    if (!st)
        st = put(&f, n->name[MD_N_LM_HEAD], V, H, w->lm_head, err);
    char nm[512];
    for (long long l = 0; l < d->layers && !st; l++) {
        const md_layer_w *x = &w->l[l];
        struct {
            int k;
            int64_t rows, cols;
            const uint16_t *src;
        } parts[] = {{MD_N_ATTN_NORM, 0, H, x->attn_norm},
                     {MD_N_WQ, A, H, x->wqkv},
                     {MD_N_WK, KV, H, x->wqkv + A * H},
                     {MD_N_WV, KV, H, x->wqkv + (A + KV) * H},
                     {MD_N_WO, H, A, x->wo},
                     {MD_N_MLP_NORM, 0, H, x->mlp_norm},
                     {MD_N_WGATE, M, H, x->wgu},
                     {MD_N_WUP, M, H, x->wgu + M * H},
                     {MD_N_WDOWN, H, M, x->wdown}};
        for (size_t i = 0; i < sizeof parts / sizeof parts[0] && !st; i++) {
            layer_name(n->name[parts[i].k], l, nm, sizeof nm);
            st = put(&f, nm, parts[i].rows, parts[i].cols, parts[i].src, err);
        }
    }
    if (!st)
        st = st_add_meta(&f, "format", "pt", err);
    if (!st)
        st = st_write_atomic(path, &f, err);
    st_free(&f);
    return st;
}
