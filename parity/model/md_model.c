/* md_model.c: the decode loop of `parity model` (docs/model.md): a dense
 * decoder's step from STEP.toml, each op lowered by the class's rules to a
 * family point, two runs in lockstep (the class backend, and the exact
 * reference of the same points as the control), their op outputs and
 * logits compared bit for bit, their transcripts compared. */
#include "md_model.h"

#include <math.h>
#include <omp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "campaign.h"
#include "device.h"
#include "lkb.h"
#include "md_int.h"
#include "nx_limits.h"
#include "nx_philox.h"
#include "refimpl.h"
#include "safetensors.h"
#include "transcript.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *md_scale_name(md_scale s)
{
    return s == MD_SCALE_TINY ? "tiny" : s == MD_SCALE_SMALL ? "small" : "full";
}

int md_scale_from_name(const char *n)
{
    if (!strcmp(n, "tiny"))
        return MD_SCALE_TINY;
    if (!strcmp(n, "small"))
        return MD_SCALE_SMALL;
    if (!strcmp(n, "full"))
        return MD_SCALE_FULL;
    return -1;
}

static const char *const role_names[MD_NROLES] = {"embedding", "attention norm", "qkv projection", "rope",
                                                  "attention", "o projection", "mlp norm", "gate/up projection",
                                                  "activation", "down projection", "final norm", "lm head",
                                                  "greedy argmax"};

const char *md_role_name(int role)
{
    return role >= 0 && role < MD_NROLES ? role_names[role] : "?";
}

/* ---- bf16 (the activations, weights and caches of the loop) ------------ */

float md_bf16_to_f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t md_f_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return 0x7fc0; /* the canonical NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Ordinal distance of two bf16 patterns (both finite). */
static double bf16_ulps(uint16_t a, uint16_t b)
{
    long ia = (a & 0x8000) ? -(long)(a & 0x7fff) : (long)(a & 0x7fff);
    long ib = (b & 0x8000) ? -(long)(b & 0x7fff) : (long)(b & 0x7fff);
    return fabs((double)(ia - ib));
}

/* ---- the step, mapped onto a dense decoder's roles ---------------------- */

static long long dim_of(const char *shape, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = shape; p && *p;) {
        if (!strncmp(p, name, n) && p[n] == '=')
            return atoll(p + n + 1);
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return -1;
}

/* Roles by position: per layer the norms, gemms and novel op in order; per
 * step the novel ops, the norm and the gemm. */
static nx_status map_roles(const lkb_report *rep, int *role_of, nx_err *err)
{
    static const int layer_norm[] = {MD_R_ATTN_NORM, MD_R_MLP_NORM};
    static const int layer_gemm[] = {MD_R_QKV, MD_R_O, MD_R_GATE_UP, MD_R_DOWN};
    static const int step_novel[] = {MD_R_EMBED, MD_R_SAMPLE};
    int nn = 0, ng = 0, nr = 0, na = 0, ns = 0, sn = 0, snorm = 0, sg = 0, seen[MD_NROLES] = {0};
    const lkb_step *s = &rep->step;
    for (size_t i = 0; i < s->nops; i++) {
        const lkb_op *op = &s->ops[i];
        const char *f = op->family ? op->family : "";
        int role = -1;
        if (op->per_layer) {
            if (!strcmp(f, "rmsnorm") && nn < 2)
                role = layer_norm[nn++];
            else if (!strcmp(f, "gemm") && ng < 4)
                role = layer_gemm[ng++];
            else if (!*f && nr < 1)
                role = MD_R_ROPE, nr++;
            else if (!strcmp(f, "paged_decode_attention") && na < 1)
                role = MD_R_ATTN, na++;
            else if (!strcmp(f, "silu_and_mul") && ns < 1)
                role = MD_R_ACT, ns++;
        } else {
            if (!*f && sn < 2)
                role = step_novel[sn++];
            else if (!strcmp(f, "rmsnorm") && snorm < 1)
                role = MD_R_FINAL_NORM, snorm++;
            else if (!strcmp(f, "gemm") && sg < 1)
                role = MD_R_LM_HEAD, sg++;
        }
        if (role < 0 || op->count != 1)
            return nx_err_set(err, NX_EINVAL,
                              "%s: op '%s' (%s, %s%s): the decode loop runs dense decoders (per layer: rmsnorm, "
                              "gemm, rope, paged_decode_attention, gemm, rmsnorm, gemm, silu_and_mul, gemm; per "
                              "step: embedding, rmsnorm, gemm, sampling; one launch each; docs/model.md)",
                              op->where, op->id, *f ? f : "no family", op->per_layer ? "per layer" : "per step",
                              op->count != 1 ? ", count > 1" : "");
        role_of[i] = role;
        seen[role] = 1;
    }
    for (int r = 0; r < MD_NROLES; r++)
        if (!seen[r])
            return nx_err_set(err, NX_EINVAL, "%s: the step has no %s op: the decode loop runs dense decoders "
                              "(docs/model.md)", s->path, role_names[r]);
    return NX_OK;
}

static nx_status scale_dims(const lkb_report *rep, const int *role_of, md_scale sc, md_dims *d, nx_err *err)
{
    const lkb_step *s = &rep->step;
    const char *sh[MD_NROLES] = {0};
    for (size_t i = 0; i < s->nops; i++)
        sh[role_of[i]] = rep->cov[0].ops[i].shape;
    memset(d, 0, sizeof *d);
    d->full_layers = s->layers;
    d->full_hidden = dim_of(sh[MD_R_ATTN_NORM], "H");
    d->full_hq = dim_of(sh[MD_R_ATTN], "HQ");
    d->full_hkv = dim_of(sh[MD_R_ATTN], "HKV");
    d->full_d = dim_of(sh[MD_R_ATTN], "D");
    d->page = dim_of(sh[MD_R_ATTN], "P");
    d->full_mlp = dim_of(sh[MD_R_ACT], "H");
    d->full_vocab = dim_of(sh[MD_R_LM_HEAD], "N");
    if (d->full_hidden < 1 || d->full_hq < 1 || d->full_hkv < 1 || d->full_d < 1 || d->page < 1 ||
        d->full_mlp < 1 || d->full_vocab < 1)
        return nx_err_set(err, NX_EINVAL, "%s: the step's shapes do not give hidden (H of the attention norm), HQ, "
                          "HKV, D, P (attention), the MLP width (H of the activation) and the vocabulary (N of "
                          "the lm head)", s->path);
    /* each dimension at most MD_DIM_MAX, as a names map's, before any
     * product of them (a STEP.toml value may be 2^62) */
    {
        const char *dn[] = {"layers", "hidden (H)", "HQ", "HKV", "D", "P", "the MLP width", "the vocabulary"};
        const long long dv[] = {d->full_layers, d->full_hidden, d->full_hq, d->full_hkv, d->full_d, d->page,
                                d->full_mlp, d->full_vocab};
        for (int i = 0; i < 8; i++)
            if (dv[i] > MD_DIM_MAX)
                return nx_err_set(err, NX_EINVAL, "%s: the step's %s is %lld, more than the decode loop's limit of "
                                  "2^31 (2147483648) for a dimension", s->path, dn[i], dv[i]);
    }
    long long qkv_n = dim_of(sh[MD_R_QKV], "N"), gu_n = dim_of(sh[MD_R_GATE_UP], "N");
    /* (HQ + 2 HKV) D of dimensions up to 2^31 is below 2^64 */
    uint64_t qkv_want = nx_limits_mul_sat((uint64_t)(d->full_hq + 2 * d->full_hkv), (uint64_t)d->full_d);
    if (qkv_n < 0 || (uint64_t)qkv_n != qkv_want || gu_n != 2 * d->full_mlp || d->full_hq % d->full_hkv)
        return nx_err_set(err, NX_EINVAL, "%s: the qkv projection's N (%lld) must be (HQ + 2*HKV)*D = %llu and the "
                          "gate/up projection's N (%lld) twice the activation's H (%lld), HQ a multiple of HKV",
                          s->path, qkv_n, (unsigned long long)qkv_want, gu_n, d->full_mlp);
    /* tiny: hidden/16 (4096 -> 256), heads/4, head dim/4, MLP/16, 2 layers,
     * vocabulary at most 4096; small: /4, /2, /2, /4, 4 layers, 16384 */
    long long hdiv = 1, qdiv = 1, ddiv = 1, mdiv = 1, lmax = s->layers, vmax = d->full_vocab;
    if (sc == MD_SCALE_TINY)
        hdiv = 16, qdiv = 4, ddiv = 4, mdiv = 16, lmax = 2, vmax = 4096;
    else if (sc == MD_SCALE_SMALL)
        hdiv = 4, qdiv = 2, ddiv = 2, mdiv = 4, lmax = 4, vmax = 16384;
    d->layers = s->layers < lmax ? s->layers : lmax;
    d->hidden = d->full_hidden / hdiv;
    d->hq = d->full_hq / qdiv;
    d->hkv = d->full_hkv / qdiv ? d->full_hkv / qdiv : 1;
    d->d = d->full_d / ddiv;
    d->mlp = d->full_mlp / mdiv;
    d->vocab = d->full_vocab < vmax ? d->full_vocab : vmax;
    if (d->hidden < 1 || d->hq < 1 || d->d < 2 || d->d % 2 || d->mlp < 1 || d->hq % d->hkv ||
        d->full_hidden % hdiv || d->full_mlp % mdiv)
        return nx_err_set(err, NX_EINVAL, "%s: the step's dimensions (hidden %lld, HQ %lld, HKV %lld, D %lld, MLP "
                          "%lld) do not divide down to scale %s", s->path, d->full_hidden, d->full_hq, d->full_hkv,
                          d->full_d, d->full_mlp, md_scale_name(sc));
    return NX_OK;
}

/* ---- weights ------------------------------------------------------------ */

/* count elements of tensor `name`: mean + std * z, z element i of
 * Philox's `normal` (nx_philox_normal: nx_philox_fill at fp64 gives the
 * same doubles, drawn 32 blocks at a time over the threads), rounded to
 * fp32 and then to bf16 (rne). */
static uint16_t *gen_bf16(uint64_t seed, const char *name, size_t count, double mean, double std)
{
    enum { CHUNK = 1 << 20 };
    uint16_t *w = malloc((count ? count : 1) * sizeof *w);
    double *z = malloc((count < CHUNK ? (count ? count : 1) : CHUNK) * sizeof *z);
    if (!w || !z) {
        free(w), free(z);
        return NULL;
    }
    uint32_t id = nx_philox_tensor_id(name);
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_NORMAL);
    for (size_t at = 0; at < count; at += CHUNK) {
        size_t n = count - at < CHUNK ? count - at : CHUNK;
        if (nx_philox_fill(seed, id, &d, NX_FP64, at, n, z, 0, NULL)) {
            free(w), free(z);
            return NULL;
        }
        for (size_t i = 0; i < n; i++)
            w[at + i] = md_f_to_bf16((float)(mean + std * z[i]));
    }
    free(z);
    return w;
}

void md_weights_free(md_weights *w, long long layers)
{
    if (w->l)
        for (long long i = 0; i < layers; i++) {
            md_layer_w *x = &w->l[i];
            free(x->attn_norm), free(x->wqkv), free(x->wo), free(x->mlp_norm), free(x->wgu), free(x->wdown);
        }
    free(w->l), free(w->embed), free(w->final_norm), free(w->lm_head);
    memset(w, 0, sizeof *w);
}

static nx_status weights_make(const md_dims *d, uint64_t seed, md_weights *w, nx_err *err)
{
    memset(w, 0, sizeof *w);
    size_t H = (size_t)d->hidden, Q = (size_t)((d->hq + 2 * d->hkv) * d->d), A = (size_t)(d->hq * d->d),
           M = (size_t)d->mlp, V = (size_t)d->vocab;
    /* the sizes were checked by md_sizes_check before anything was allocated */
    if (!(w->l = calloc((size_t)d->layers, sizeof *w->l)))
        return nx_err_set(err, NX_ENOMEM, "model weights: out of memory");
    int ok = 1;
    char n[64];
    for (long long i = 0; i < d->layers && ok; i++) {
        md_layer_w *x = &w->l[i];
        /* linear weights N(0, 1/K): activations keep their scale */
        snprintf(n, sizeof n, "layers.%lld.attn_norm", i);
        ok &= !!(x->attn_norm = gen_bf16(seed, n, H, 1.0, 0.1));
        snprintf(n, sizeof n, "layers.%lld.wqkv", i);
        ok &= !!(x->wqkv = gen_bf16(seed, n, Q * H, 0.0, 1.0 / sqrt((double)H)));
        snprintf(n, sizeof n, "layers.%lld.wo", i);
        ok &= !!(x->wo = gen_bf16(seed, n, H * A, 0.0, 1.0 / sqrt((double)A)));
        snprintf(n, sizeof n, "layers.%lld.mlp_norm", i);
        ok &= !!(x->mlp_norm = gen_bf16(seed, n, H, 1.0, 0.1));
        snprintf(n, sizeof n, "layers.%lld.wgu", i);
        ok &= !!(x->wgu = gen_bf16(seed, n, 2 * M * H, 0.0, 1.0 / sqrt((double)H)));
        snprintf(n, sizeof n, "layers.%lld.wdown", i);
        ok &= !!(x->wdown = gen_bf16(seed, n, H * M, 0.0, 1.0 / sqrt((double)M)));
    }
    if (ok)
        ok &= !!(w->embed = gen_bf16(seed, "embed", V * H, 0.0, 1.0));
    if (ok)
        ok &= !!(w->final_norm = gen_bf16(seed, "final_norm", H, 1.0, 0.1));
    if (ok)
        ok &= !!(w->lm_head = gen_bf16(seed, "lm_head", V * H, 0.0, 1.0 / sqrt((double)H)));
    if (!ok) {
        md_weights_free(w, d->layers);
        return nx_err_set(err, NX_ENOMEM, "model weights: out of memory");
    }
    return NX_OK;
}

/* ---- one run of the loop (a lane): its activations and KV cache ------- */

/* Prompts decoded as one batch, at most (the CLI's bound on --prompts). */
#define MD_MAX_BATCH 4096

typedef struct md_lane {
    uint16_t *h, *x, *qkv, *q, *attn, *o, *gu, *act, *down, *logits; /* B rows each */
    uint16_t **kc, **vc; /* per layer [NP, P, HKV, D] */
    int residual_pending; /* down's output not yet added into h */
} md_lane;

static void lane_free(md_lane *l, long long layers)
{
    free(l->h), free(l->x), free(l->qkv), free(l->q), free(l->attn), free(l->o), free(l->gu), free(l->act), free(l->down),
        free(l->logits);
    for (long long i = 0; l->kc && i < layers; i++)
        free(l->kc[i]);
    for (long long i = 0; l->vc && i < layers; i++)
        free(l->vc[i]);
    free(l->kc), free(l->vc);
    memset(l, 0, sizeof *l);
}

/* Activations of B rows (one per prompt of the batch), the KV cache of the
 * whole pool. */
static int lane_make(md_lane *l, const md_dims *d, long long np, size_t B)
{
    memset(l, 0, sizeof *l);
    size_t H = B * (size_t)d->hidden, Q = B * (size_t)((d->hq + 2 * d->hkv) * d->d), A = B * (size_t)(d->hq * d->d),
           M = B * (size_t)d->mlp, V = B * (size_t)d->vocab, C = (size_t)(np * d->page * d->hkv * d->d);
    l->h = calloc(H, 2), l->x = calloc(H, 2), l->qkv = calloc(Q, 2), l->q = calloc(A, 2), l->attn = calloc(A, 2),
    l->o = calloc(H, 2),
    l->gu = calloc(2 * M, 2), l->act = calloc(M, 2), l->down = calloc(H, 2), l->logits = calloc(V, 2);
    l->kc = calloc((size_t)d->layers, sizeof *l->kc), l->vc = calloc((size_t)d->layers, sizeof *l->vc);
    int ok = l->h && l->x && l->qkv && l->q && l->attn && l->o && l->gu && l->act && l->down && l->logits && l->kc && l->vc;
    for (long long i = 0; ok && i < d->layers; i++)
        ok = (l->kc[i] = calloc(C, 2)) && (l->vc[i] = calloc(C, 2));
    return ok;
}

/* ---- family ops: inputs borrowed, run on the backend or the reference --- */

typedef struct md_buf {
    const char *name;
    const void *data;
    st_dtype dtype;
    uint64_t nelem;
} md_buf;

typedef struct md_ctx {
    const md_opts *o;
    const dev_backend *be, *be2; /* the class's backend; class D's for --against, else NULL */
    md_result *res;
    fam_spec dspec[MD_NROLES], cspec[MD_NROLES]; /* device and control specs; control = declared */
    fam_spec pspec;                              /* the planted point (device), when any */
    int have_pspec;
    ref_tensor_desc *pdesc;                      /* the planted point's inputs */
    size_t npdesc;
    ref_tensor_desc *desc[2][MD_NROLES]; /* the inputs of each lane's spec */
    size_t ndesc[2][MD_NROLES];
    int cur_prompt, cur_pos, cur_layer;
    int group0, nb;  /* the batch's first prompt and its rows */
} md_ctx;

/* Builds the st_file of the op's inputs for the point spec (the one the
 * lane runs: declared, planted or the control's), each tensor borrowing
 * the loop's buffer (nothing copied), checked against the point's input
 * descriptions desc; a message names that point. */
static nx_status inputs_of(const md_ctx *c, int role, const fam_spec *spec, const ref_tensor_desc *desc,
                           size_t ndesc, const md_buf *bufs, size_t nb, st_file *in, nx_err *err)
{
    st_init(in);
    const md_op *op = &c->res->ops[role];
    for (size_t i = 0; i < ndesc; i++) {
        const ref_tensor_desc *ds = &desc[i];
        const md_buf *b = NULL;
        for (size_t k = 0; k < nb; k++)
            if (!strcmp(bufs[k].name, ds->name))
                b = &bufs[k];
        uint64_t ne = 1;
        for (int k = 0; k < ds->ndim; k++)
            ne *= (uint64_t)ds->shape[k];
        if (!b || b->dtype != ds->dtype || b->nelem != ne)
            return nx_err_set(err, NX_EINVAL,
                              "op '%s' (%s): point %s.%s expects input '%s' %s %s = %llu elements; the decode loop %s",
                              op->id, role_names[role], spec->family, spec->point, ds->name, st_dtype_name(ds->dtype), ds->dims,
                              (unsigned long long)ne,
                              !b ? "has no such tensor (docs/model.md: the tensors it holds)"
                                 : "holds it in another dtype or size (bf16 activations and weights)");
        st_tensor *t = NULL;
        nx_status st = st_add_tensor(in, ds->name, ds->dtype, ds->ndim, ds->shape, &t, err);
        if (st)
            return st;
        free(t->data);
        t->data = (uint8_t *)b->data;
        t->owns_data = false;
    }
    return NX_OK;
}

/* Copies output `name` of out, given by point spec, into dst (n bf16
 * elements); a message names that point. */
static nx_status take_out(const md_op *op, const fam_spec *spec, const st_file *out, const char *name, uint16_t *dst,
                          size_t n, nx_err *err)
{
    const st_tensor *t = st_find(out, name);
    if (!t || t->dtype != ST_BF16 || t->nelem != n)
        return nx_err_set(err, NX_EINVAL, "op '%s': point %s.%s gives output '%s' %s%s of %llu elements; the decode "
                          "loop holds bf16 activations of %zu", op->id, spec->family, spec->point, name,
                          t ? st_dtype_name(t->dtype) : "(absent)", "", t ? (unsigned long long)t->nelem : 0ULL, n);
    memcpy(dst, t->data, n * 2);
    return NX_OK;
}

/* The op's outputs of the two lanes differ: the first time, note where. */
static void fill_diff(md_ctx *c, md_first_diff *f, int role, const uint16_t *a, const uint16_t *b, size_t n)
{
    f->found = 1;
    f->prompt = c->cur_prompt;
    f->pos = c->cur_pos;
    f->generated = c->cur_pos >= c->o->prompt_len - 1;
    snprintf(f->op, sizeof f->op, "%s", c->res->ops[role].id);
    f->role = role;
    f->layer = role >= MD_R_ATTN_NORM && role <= MD_R_DOWN ? c->cur_layer : -1;
    f->outside = !*c->res->ops[role].family;
    f->declared = !c->res->ops[role].same;
    f->n = n;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            f->mismatched++;
            double u = bf16_ulps(a[i], b[i]);
            if (u > f->max_ulp)
                f->max_ulp = u;
        }
}

/* The op's outputs of the two lanes differ: the first time overall, and
 * the first time in this prompt, note where. */
static void note_diff(md_ctx *c, int role, const uint16_t *a, const uint16_t *b, size_t n)
{
    md_first_diff *f = &c->res->first, *fp = &c->res->pr[c->cur_prompt].first;
    if ((f->found && fp->found) || !memcmp(a, b, n * 2))
        return;
    if (!f->found)
        fill_diff(c, f, role, a, b, n);
    if (!fp->found)
        fill_diff(c, fp, role, a, b, n);
}

/* Runs a family op on both lanes: outs[k] of each lane receive output k
 * (names onames[k], sizes osz[k]); the control's outputs are compared
 * with the device's. */
static nx_status run_family(md_ctx *c, int role, const md_buf *dbufs, const md_buf *cbufs, size_t nb,
                            const char *const *onames, uint16_t *const *douts, uint16_t *const *couts,
                            const size_t *osz, size_t nouts, nx_err *err)
{
    const md_op *op = &c->res->ops[role];
    st_file in, out;
    const fam_spec *ds = &c->dspec[role];
    const ref_tensor_desc *dd = c->desc[0][role];
    size_t ndd = c->ndesc[0][role];
    int planted = c->have_pspec && op->plant[0] && (op->plant_layer < 0 || op->plant_layer == c->cur_layer);
    if (planted)
        ds = &c->pspec, dd = c->pdesc, ndd = c->npdesc;
    nx_status st = inputs_of(c, role, ds, dd, ndd, dbufs, nb, &in, err);
    if (!st) {
        dev_opts d = {DEV_GRAPHED, c->o->threads, NULL};
        st_init(&out);
        double t0 = now();
        st = dev_run(c->be, ds, &in, &out, &d, err);
        c->res->t_device += now() - t0;
        c->res->dev_calls++;
        for (size_t k = 0; k < nouts && !st; k++)
            st = take_out(op, ds, &out, onames[k], douts[k], osz[k], err);
        st_free(&out);
    }
    st_free(&in);
    if (st) {
        nx_err_prefix(err, "op '%s' (%s.%s%s) on the device", op->id, ds->family, ds->point,
                      planted ? ", planted with --plant" : "");
        return st;
    }
    if ((st = inputs_of(c, role, &c->cspec[role], c->desc[1][role], c->ndesc[1][role], cbufs, nb, &in, err)))
        return st;
    st_init(&out);
    double t0 = now();
    if (c->be2) {
        dev_opts d = {DEV_GRAPHED, c->o->threads, NULL};
        st = dev_run(c->be2, &c->cspec[role], &in, &out, &d, err);
    } else {
        ref_opts ro = {c->o->threads, (nx_engine_kind)c->o->engine};
        st = ref_run_opts(&c->cspec[role], &in, &out, &ro, err);
    }
    c->res->t_ref += now() - t0;
    c->res->ref_calls++;
    for (size_t k = 0; k < nouts && !st; k++)
        st = take_out(op, &c->cspec[role], &out, onames[k], couts[k], osz[k], err);
    st_free(&out);
    st_free(&in);
    if (st) {
        if (c->be2)
            nx_err_prefix(err, "op '%s' (%s) on class %s", op->id, c->cspec[role].point, c->o->against);
        else
            nx_err_prefix(err, "op '%s' (%s) in the reference", op->id, op->point);
        return st;
    }
    /* row b of each output is prompt group0 + b's */
    for (size_t k = 0; k < nouts; k++) {
        size_t row = osz[k] / (size_t)c->nb;
        for (int b = 0; b < c->nb; b++) {
            c->cur_prompt = c->group0 + b;
            note_diff(c, role, douts[k] + (size_t)b * row, couts[k] + (size_t)b * row, row);
        }
    }
    c->cur_prompt = c->group0;
    return NX_OK;
}

/* ---- ops outside the families (written once, the same for both lanes) -- */

/* h += down (one fp32 addition of two bf16 values, then bf16 rne: double
 * rounding through fp32 is innocuous for an 8-bit target). */
static void residual_add(uint16_t *h, const uint16_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h[i] = md_f_to_bf16(md_bf16_to_f(h[i]) + md_bf16_to_f(v[i]));
}

/* Rotary embedding (the half-split layout) of nh heads of dim d at
 * position pos: cos and sin of pos * base^(-2i/d) from nx_philox_sincospi
 * (a fixed sequence of binary64 operations, no libm), rounded to fp32; each
 * output one fp32 expression x0*c - x1*s (two products, one difference,
 * each rounded), then bf16. */
static void rope(uint16_t *v, long long nh, long long d, long long pos, const double *inv_freq)
{
    long long half = d / 2;
    for (long long i = 0; i < half; i++) {
        double t = (double)pos * inv_freq[i] / 3.14159265358979323846; /* angle / pi, reduced mod 2 */
        t = fmod(t, 2.0);
        double s, co;
        nx_philox_sincospi((uint64_t)(t * 4503599627370496.0), &s, &co);
        float cf = (float)co, sf = (float)s;
        for (long long h = 0; h < nh; h++) {
            uint16_t *x = v + h * d;
            float x0 = md_bf16_to_f(x[i]), x1 = md_bf16_to_f(x[i + half]);
            float a = x0 * cf, b = x1 * sf, e = x1 * cf, g = x0 * sf;
            x[i] = md_f_to_bf16(a - b);
            x[i + half] = md_f_to_bf16(e + g);
        }
    }
}

/* Greedy argmax over the logits: the largest value, the lowest index among
 * equals; NaN never wins. */
static int argmax_bf16(const uint16_t *l, size_t n)
{
    int best = 0;
    float bv = -INFINITY;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        float v = md_bf16_to_f(l[i]);
        if (v != v)
            continue;
        if (!any || v > bv)
            bv = v, best = (int)i, any = 1;
    }
    return best;
}

/* log softmax of the bf16 logits at token t, in binary64. */
static double logprob(const uint16_t *l, size_t n, int t)
{
    double m = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = md_bf16_to_f(l[i]);
        if (v > m)
            m = v;
    }
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += exp((double)md_bf16_to_f(l[i]) - m);
    return (double)md_bf16_to_f(l[t]) - m - log(s);
}

static void top5(const uint16_t *l, size_t n, int *idx)
{
    float v[5];
    for (int k = 0; k < 5; k++)
        idx[k] = -1, v[k] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        float x = md_bf16_to_f(l[i]);
        if (x != x)
            continue;
        for (int k = 0; k < 5; k++)
            if (idx[k] < 0 || x > v[k]) {
                for (int j = 4; j > k; j--)
                    v[j] = v[j - 1], idx[j] = idx[j - 1];
                v[k] = x, idx[k] = (int)i;
                break;
            }
    }
}

static int same_set(const int *a, const int *b)
{
    for (int i = 0; i < 5; i++) {
        int f = 0;
        for (int k = 0; k < 5; k++)
            f |= a[i] == b[k];
        if (!f)
            return 0;
    }
    return 1;
}

/* ---- the forward step of one token of one prompt, both lanes ------------- */

typedef struct md_seq {
    int32_t *block_table; /* [MAXP] */
    int32_t ctx_len;
} md_seq;

typedef struct md_model {
    md_dims d;
    md_weights w;
    long long np, maxp;
    double *inv_freq;
    int32_t *page_order; /* the pool's pages in the order they are handed out */
    long long next_page;
} md_model;

/* h <- h + pending down output, or (fused) left to the norm. */
static nx_status norm_op(md_ctx *c, md_model *m, md_lane *L[2], int role, const uint16_t *weight, nx_err *err)
{
    const md_op *op = &c->res->ops[role];
    size_t Hw = (size_t)m->d.hidden, H = Hw * (size_t)c->nb; /* the weight's, the batch's */
    uint16_t *pend[2] = {role == MD_R_MLP_NORM ? L[0]->o : L[0]->down, role == MD_R_MLP_NORM ? L[1]->o : L[1]->down};
    int pending = role == MD_R_MLP_NORM || L[0]->residual_pending;
    if (op->fused_residual) {
        /* x = the pending output (zeros when none), residual = h: y and the new h */
        if (!pending) {
            memset(L[0]->down, 0, H * 2), memset(L[1]->down, 0, H * 2);
            pend[0] = L[0]->down, pend[1] = L[1]->down;
        }
        md_buf db[] = {{"x", pend[0], ST_BF16, H}, {"weight", weight, ST_BF16, Hw}, {"residual", L[0]->h, ST_BF16, H}};
        md_buf cb[] = {{"x", pend[1], ST_BF16, H}, {"weight", weight, ST_BF16, Hw}, {"residual", L[1]->h, ST_BF16, H}};
        /* residual_out goes to a scratch copy first: h is an input */
        uint16_t *nh0 = malloc(H * 2), *nh1 = malloc(H * 2);
        if (!nh0 || !nh1) {
            free(nh0), free(nh1);
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        }
        static const char *const on[] = {"y", "residual_out"};
        uint16_t *const d_o[] = {L[0]->x, nh0}, *const c_o[] = {L[1]->x, nh1};
        const size_t osz[] = {H, H};
        nx_status st = run_family(c, role, db, cb, 3, on, d_o, c_o, osz, 2, err);
        if (!st)
            memcpy(L[0]->h, nh0, H * 2), memcpy(L[1]->h, nh1, H * 2);
        free(nh0), free(nh1);
        L[0]->residual_pending = L[1]->residual_pending = 0;
        return st;
    }
    if (pending) {
        double t0 = now();
        residual_add(L[0]->h, pend[0], H);
        residual_add(L[1]->h, pend[1], H);
        c->res->t_outside += now() - t0;
        L[0]->residual_pending = L[1]->residual_pending = 0;
    }
    md_buf db[] = {{"x", L[0]->h, ST_BF16, H}, {"weight", weight, ST_BF16, Hw}};
    md_buf cb[] = {{"x", L[1]->h, ST_BF16, H}, {"weight", weight, ST_BF16, Hw}};
    static const char *const on[] = {"y"};
    uint16_t *const d_o[] = {L[0]->x}, *const c_o[] = {L[1]->x};
    const size_t osz[] = {H};
    return run_family(c, role, db, cb, 2, on, d_o, c_o, osz, 1, err);
}

static nx_status gemm_op(md_ctx *c, md_lane *L[2], int role, uint16_t *a0, uint16_t *a1, size_t K,
                         const uint16_t *b, size_t N, uint16_t *y0, uint16_t *y1, nx_err *err)
{
    size_t B = (size_t)c->nb;
    md_buf db[] = {{"a", a0, ST_BF16, B * K}, {"b", b, ST_BF16, N * K}};
    md_buf cb[] = {{"a", a1, ST_BF16, B * K}, {"b", b, ST_BF16, N * K}};
    static const char *const on[] = {"y"};
    uint16_t *const d_o[] = {y0}, *const c_o[] = {y1};
    const size_t osz[] = {B * N};
    (void)L;
    return run_family(c, role, db, cb, 2, on, d_o, c_o, osz, 1, err);
}

/* One token of each of the batch's nb prompts (sq[0 .. nb-1]) at position
 * pos through both lanes, as one batch of nb rows; tok0/tok1 the lanes'
 * tokens; with_logits: also the final norm and the lm head. */
static nx_status forward(md_ctx *c, md_model *m, md_lane *L[2], md_seq *sq, int32_t *block_table,
                         const int *tok0, const int *tok1, long long pos, int with_logits, nx_err *err)
{
    const md_dims *d = &m->d;
    size_t H = (size_t)d->hidden, D = (size_t)d->d, HQ = (size_t)d->hq, HKV = (size_t)d->hkv,
           Q = (HQ + 2 * HKV) * D, A = HQ * D, M = (size_t)d->mlp, V = (size_t)d->vocab, B = (size_t)c->nb,
           MAXP = (size_t)m->maxp;
    nx_status st = NX_OK;
    double t0 = now();
    int32_t clen[MD_MAX_BATCH];
    for (size_t b = 0; b < B; b++) {
        /* embedding: a row of the table, copied */
        memcpy(L[0]->h + b * H, m->w.embed + (size_t)tok0[b] * H, H * 2);
        memcpy(L[1]->h + b * H, m->w.embed + (size_t)tok1[b] * H, H * 2);
        /* each sequence's KV cache grows by a page when pos starts one */
        if (pos % d->page == 0)
            sq[b].block_table[pos / d->page] = m->page_order[m->next_page++];
        sq[b].ctx_len = (int32_t)(pos + 1);
        clen[b] = sq[b].ctx_len;
    }
    L[0]->residual_pending = L[1]->residual_pending = 0;
    c->res->t_outside += now() - t0;
    for (long long l = 0; l < d->layers && !st; l++) {
        c->cur_layer = (int)l;
        const md_layer_w *w = &m->w.l[l];
        if ((st = norm_op(c, m, L, MD_R_ATTN_NORM, w->attn_norm, err)))
            break;
        if ((st = gemm_op(c, L, MD_R_QKV, L[0]->x, L[1]->x, H, w->wqkv, Q, L[0]->qkv, L[1]->qkv, err)))
            break;
        t0 = now();
        for (size_t b = 0; b < B; b++) {
            size_t page = (size_t)sq[b].block_table[pos / d->page], slot = (size_t)(pos % d->page);
            for (int k = 0; k < 2; k++) {
                uint16_t *qkv = L[k]->qkv + b * Q;
                rope(qkv, d->hq + d->hkv, d->d, pos, m->inv_freq); /* q heads, then k heads */
                /* append k and v at (page, slot) */
                size_t at = ((page * (size_t)d->page + slot) * HKV) * D;
                memcpy(L[k]->kc[l] + at, qkv + A, HKV * D * 2);
                memcpy(L[k]->vc[l] + at, qkv + A + HKV * D, HKV * D * 2);
                /* the query heads of row b, contiguous for attention's q [B, HQ, D] */
                memcpy(L[k]->q + b * A, qkv, A * 2);
            }
        }
        c->res->t_outside += now() - t0;
        uint64_t csz = (uint64_t)(m->np * d->page) * HKV * D;
        md_buf db[] = {{"q", L[0]->q, ST_BF16, B * A},         {"k_cache", L[0]->kc[l], ST_BF16, csz},
                       {"v_cache", L[0]->vc[l], ST_BF16, csz}, {"block_table", block_table, ST_I32, B * MAXP},
                       {"context_lens", clen, ST_I32, B}};
        md_buf cb[] = {{"q", L[1]->q, ST_BF16, B * A},         {"k_cache", L[1]->kc[l], ST_BF16, csz},
                       {"v_cache", L[1]->vc[l], ST_BF16, csz}, {"block_table", block_table, ST_I32, B * MAXP},
                       {"context_lens", clen, ST_I32, B}};
        static const char *const on[] = {"y"};
        uint16_t *const d_o[] = {L[0]->attn}, *const c_o[] = {L[1]->attn};
        const size_t osz[] = {B * A};
        if ((st = run_family(c, MD_R_ATTN, db, cb, 5, on, d_o, c_o, osz, 1, err)))
            break;
        if ((st = gemm_op(c, L, MD_R_O, L[0]->attn, L[1]->attn, A, w->wo, H, L[0]->o, L[1]->o, err)))
            break;
        if ((st = norm_op(c, m, L, MD_R_MLP_NORM, w->mlp_norm, err)))
            break;
        if ((st = gemm_op(c, L, MD_R_GATE_UP, L[0]->x, L[1]->x, H, w->wgu, 2 * M, L[0]->gu, L[1]->gu, err)))
            break;
        md_buf da[] = {{"x", L[0]->gu, ST_BF16, B * 2 * M}}, ca[] = {{"x", L[1]->gu, ST_BF16, B * 2 * M}};
        uint16_t *const d_a[] = {L[0]->act}, *const c_a[] = {L[1]->act};
        const size_t asz[] = {B * M};
        if ((st = run_family(c, MD_R_ACT, da, ca, 1, on, d_a, c_a, asz, 1, err)))
            break;
        if ((st = gemm_op(c, L, MD_R_DOWN, L[0]->act, L[1]->act, M, w->wdown, H, L[0]->down, L[1]->down, err)))
            break;
        L[0]->residual_pending = L[1]->residual_pending = 1;
    }
    c->cur_layer = -1;
    if (st || !with_logits)
        return st;
    if ((st = norm_op(c, m, L, MD_R_FINAL_NORM, m->w.final_norm, err)))
        return st;
    (void)V;
    return gemm_op(c, L, MD_R_LM_HEAD, L[0]->x, L[1]->x, H, m->w.lm_head, V, L[0]->logits, L[1]->logits, err);
}

/* ---- what a run holds and does, checked before anything is made --------- */

/* The run's memory (against --max-bytes) and work (against --max-work)
 * from its dims and options, every product and sum saturated
 * (nx_limits_mul_sat): a size past 64 bits is refused like one past the
 * limit, never wrapped.  Called before any weight, cache or activation is
 * allocated and before any shape is written (docs/limits.md, "parity
 * model").  Sets m->maxp and m->np. */
/* What one family op call costs at least, in multiply-adds: about 17 us
 * of dispatch, inputs and comparison on the development host, the time of
 * some 10^4 multiply-adds of the reference. */
#define MD_CALL_WORK 8192u

static nx_status sizes_check(const md_opts *o, const md_dims *d, int B, md_model *m, nx_err *err)
{
#define MUL nx_limits_mul_sat
#define ADD nx_limits_add_sat
    const uint64_t L = (uint64_t)d->layers, H = (uint64_t)d->hidden, HQ = (uint64_t)d->hq, HKV = (uint64_t)d->hkv,
                   D = (uint64_t)d->d, M = (uint64_t)d->mlp, V = (uint64_t)d->vocab, P = (uint64_t)d->page,
                   NPR = (uint64_t)o->prompts, PL = (uint64_t)o->prompt_len, T = (uint64_t)o->tokens;
    const uint64_t Q = MUL(ADD(HQ, MUL(2, HKV)), D), A = MUL(HQ, D), KV = MUL(HKV, D);
    const uint64_t ctx = PL + T, maxp = (ctx + P - 1) / P, np = MUL(maxp, NPR);
    /* the bf16 weights: per layer two norms, qkv, o, gate/up and down; the
     * embedding and the lm head [V, H], the final norm */
    const uint64_t per_layer = ADD(ADD(MUL(2, H), MUL(Q, H)), ADD(MUL(H, A), MUL(MUL(3, M), H)));
    const uint64_t wts = ADD(MUL(per_layer, L), ADD(H, MUL(MUL(2, V), H)));
    /* one layer's K (or V) cache: the pool's pages of P slots of HKV heads of D */
    const uint64_t cache = MUL(MUL(np, P), KV);
    /* a run's activations per row: h, x, o, down; qkv; q, attention; gate/up, act; logits */
    const uint64_t row = ADD(ADD(MUL(4, H), Q), ADD(ADD(MUL(2, A), MUL(3, M)), V));
    /* the largest input of one op: a weight matrix, or a layer's K and V caches */
    uint64_t big = MUL(2, cache);
    const uint64_t mats[] = {MUL(Q, H), MUL(H, A), MUL(MUL(2, M), H), MUL(V, H)};
    for (int i = 0; i < 4; i++)
        big = mats[i] > big ? mats[i] : big;
    const uint64_t b_w = MUL(2, wts);
    const uint64_t b_kv = MUL(MUL(8, L), cache); /* two runs x K and V x bf16 */
    /* both runs' rows (bf16) and the fused norms' scratch; the reference's
     * working arrays, 8 bytes per element of the largest op's inputs and
     * outputs; the page order, block tables, tokens and transcripts */
    const uint64_t b_rows = ADD(MUL(MUL(4, (uint64_t)B), row), MUL(MUL(4, (uint64_t)B), H));
    const uint64_t b_ref = MUL(8, ADD(big, MUL((uint64_t)B, row)));
    const uint64_t b_loop = ADD(ADD(MUL(4, np), MUL(MUL(4, NPR), maxp)),
                                MUL(NPR, ADD(MUL(8, ADD(PL, MUL(2, T))), MUL(2, ADD(MUL(12, T), 8)))));
    const uint64_t b_act = ADD(b_rows, b_loop);
    const uint64_t bytes = ADD(ADD(b_w, b_kv), ADD(b_act, b_ref));
    /* the work: per forward step of one row, each layer's gemms (qkv, o,
     * gate/up, down) and attention's two products over at most the whole
     * context, then the lm head; each of a step's 9 L + 2 family op calls
     * at least MD_CALL_WORK (a call's own cost: 2^20 layers of width 2 were
     * hours of calls, not of arithmetic); both runs, every prompt's steps */
    const uint64_t steps = MUL(NPR, ctx - 1);
    const uint64_t per_layer_work = ADD(ADD(ADD(MUL(Q, H), MUL(A, H)), ADD(MUL(MUL(3, M), H), MUL(MUL(2, A), ctx))),
                                        MUL(9, MD_CALL_WORK));
    const uint64_t per_step = ADD(MUL(L, per_layer_work), ADD(MUL(V, H), MUL(2, MD_CALL_WORK)));
    const uint64_t work = MUL(MUL(2, steps), per_step);
#undef MUL
#undef ADD
    char what[640];
    snprintf(what, sizeof what,
             "model %s at scale %s (layers %llu, hidden %llu, heads %llu, kv_heads %llu, head_dim %llu, mlp %llu, "
             "vocab %llu; %llu prompts of %llu + %llu tokens, a KV pool of %llu pages of %llu)",
             o->model, md_scale_name(o->scale), (unsigned long long)L, (unsigned long long)H,
             (unsigned long long)HQ, (unsigned long long)HKV, (unsigned long long)D, (unsigned long long)M,
             (unsigned long long)V, (unsigned long long)NPR, (unsigned long long)PL, (unsigned long long)T,
             (unsigned long long)np, (unsigned long long)P);
    const uint64_t lim = nx_limits_get()->max_bytes;
    if (bytes > lim) {
        char part[4][32];
        const uint64_t pv[4] = {b_w, b_kv, b_act, b_ref};
        for (int i = 0; i < 4; i++) {
            if (pv[i] == UINT64_MAX)
                snprintf(part[i], sizeof part[i], "more than 2^64");
            else
                snprintf(part[i], sizeof part[i], "%llu", (unsigned long long)pv[i]);
        }
        char tot[32];
        if (bytes == UINT64_MAX)
            snprintf(tot, sizeof tot, "more than 2^64");
        else
            snprintf(tot, sizeof tot, "%llu", (unsigned long long)bytes);
        return nx_err_set(err, NX_EINVAL,
                          "%s: needs %s bytes (weights %s, the KV cache %s, activations and tokens %s, the "
                          "reference's arrays %s), more than the limit of %llu (raise it with --max-bytes)",
                          what, tot, part[0], part[1], part[2], part[3], (unsigned long long)lim);
    }
    if (np > INT32_MAX)
        return nx_err_set(err, NX_EINVAL, "%s: the KV pool of %llu pages is more than 2^31 - 1 (block tables hold "
                          "int32 page numbers)", what, (unsigned long long)np);
    char wwhat[900];
    snprintf(wwhat, sizeof wwhat, "%s: 2 runs x %llu forward steps x %llu multiply-adds a step (the gemms and "
             "attention of every layer, the lm head, at least 8192 a call of an op)", what, (unsigned long long)steps,
             (unsigned long long)per_step);
    /* a model run's multiply-adds against 64 x --max-work: the limit counts
     * one reduction's evaluations, a run is thousands of them; so the
     * default small run (2.2e10, about 40 s) runs and 2^20 tokens do not */
    uint64_t cap = nx_limits_mul_sat(nx_limits_get()->max_work, 64);
    if (work > cap)
        return nx_err_set(err, NX_EINVAL, "%s: %llu, more than the limit of %llu (64 x --max-work; raise it with "
                          "--max-work)", wwhat, (unsigned long long)work, (unsigned long long)cap);
    m->maxp = (long long)maxp, m->np = (long long)np;
    return NX_OK;
}

/* ---- lowering, resolution, the run -------------------------------------- */

static void shape_of(const md_dims *d, long long np, long long maxp, long long B, int role, char *s, size_t n)
{
    long long H = d->hidden, Q = (d->hq + 2 * d->hkv) * d->d, A = d->hq * d->d;
    switch (role) {
    case MD_R_ATTN_NORM: case MD_R_MLP_NORM: case MD_R_FINAL_NORM: snprintf(s, n, "T=%lld,H=%lld", B, H); break;
    case MD_R_QKV: snprintf(s, n, "M=%lld,N=%lld,K=%lld", B, Q, H); break;
    case MD_R_O: snprintf(s, n, "M=%lld,N=%lld,K=%lld", B, H, A); break;
    case MD_R_GATE_UP: snprintf(s, n, "M=%lld,N=%lld,K=%lld", B, 2 * d->mlp, H); break;
    case MD_R_DOWN: snprintf(s, n, "M=%lld,N=%lld,K=%lld", B, H, d->mlp); break;
    case MD_R_LM_HEAD: snprintf(s, n, "M=%lld,N=%lld,K=%lld", B, d->vocab, H); break;
    case MD_R_ACT: snprintf(s, n, "T=%lld,H=%lld", B, d->mlp); break;
    case MD_R_ATTN:
        snprintf(s, n, "B=%lld,HQ=%lld,HKV=%lld,D=%lld,P=%lld,NP=%lld,MAXP=%lld", B, d->hq, d->hkv, d->d, d->page, np, maxp);
        break;
    case MD_R_EMBED: snprintf(s, n, "T=%lld,H=%lld", B, H); break;
    case MD_R_ROPE: snprintf(s, n, "T=%lld,HQ=%lld,HKV=%lld,D=%lld", B, d->hq, d->hkv, d->d); break;
    case MD_R_SAMPLE: snprintf(s, n, "T=%lld,V=%lld", B, d->vocab); break;
    default: s[0] = 0;
    }
}

static nx_status parse_plant(const char *p, md_result *res, int *role_out, int *layer, char *point, size_t plen,
                             nx_err *err)
{
    const char *eq = strchr(p, '=');
    if (!eq || eq == p || !eq[1])
        return nx_err_set(err, NX_EINVAL, "--plant '%s': expected OP[@LAYER]=FAMILY.POINT", p);
    char op[64];
    size_t n = (size_t)(eq - p);
    const char *at = memchr(p, '@', n);
    size_t on = at ? (size_t)(at - p) : n;
    if (on >= sizeof op)
        return nx_err_set(err, NX_EINVAL, "--plant '%s': op name too long", p);
    memcpy(op, p, on);
    op[on] = 0;
    *layer = -1;
    if (at) {
        /* the layer is decimal digits and nothing else: strtol would skip
         * blanks, take a sign and read "" as 0 (`@=`, `@ 0`, `@+0`, `@-0`
         * were layer 0) */
        const char *q = at + 1;
        while (q < eq && *q >= '0' && *q <= '9')
            q++;
        if (q == at + 1 || q != eq)
            return nx_err_set(err, NX_EINVAL, "--plant '%s': the layer '%.*s' is not a layer number (decimal digits, "
                              "0 ... %lld)", p, (int)(eq - at - 1), at + 1, res->dims.layers - 1);
        char *end;
        errno = 0;
        long v = strtol(at + 1, &end, 10);
        if (errno == ERANGE || end != eq || v < 0 || v >= res->dims.layers)
            return nx_err_set(err, NX_EINVAL, "--plant '%s': layer must be 0 ... %lld", p, res->dims.layers - 1);
        *layer = (int)v;
    }
    snprintf(point, plen, "%s", eq + 1);
    for (int r = 0; r < MD_NROLES; r++)
        if (!strcmp(res->ops[r].id, op)) {
            if (!res->ops[r].family[0])
                return nx_err_set(err, NX_EINVAL, "--plant '%s': op '%s' is outside the families", p, op);
            size_t fl = strlen(res->ops[r].family);
            if (strncmp(point, res->ops[r].family, fl) || point[fl] != '.')
                return nx_err_set(err, NX_EINVAL, "--plant '%s': op '%s' is served by family %s", p, op,
                                  res->ops[r].family);
            if (at && !(r >= MD_R_ATTN_NORM && r <= MD_R_DOWN))
                return nx_err_set(err, NX_EINVAL, "--plant '%s': op '%s' runs once per step (no layer)", p, op);
            *role_out = r;
            return NX_OK;
        }
    return nx_err_set(err, NX_EINVAL, "--plant '%s': the step has no op '%s'", p, op);
}

void md_result_free(md_result *res)
{
    if (res->weights_tmp)
        st_tmp_discard(&res->weights_tmp);
    if (res->has_tier3)
        tier3_result_free(&res->tier3);
    if (res->pr)
        for (int i = 0; i < res->prompts; i++)
            free(res->pr[i].prompt), free(res->pr[i].dev), free(res->pr[i].ctl);
    free(res->pr);
    memset(res, 0, sizeof *res);
}

static nx_status transcripts(md_result *res, nx_err *err)
{
    /* the match rate and agreement as `parity transcript` computes them */
    size_t cap = (size_t)res->prompts * ((size_t)res->tokens * 12 + 8) + 16;
    char *a = malloc(cap), *b = malloc(cap);
    if (!a || !b) {
        free(a), free(b);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t na = 0, nb = 0;
    for (int p = 0; p < res->prompts; p++) {
        na += (size_t)snprintf(a + na, cap - na, "[");
        nb += (size_t)snprintf(b + nb, cap - nb, "[");
        for (int t = 0; t < res->tokens; t++) {
            na += (size_t)snprintf(a + na, cap - na, "%s%lld", t ? "," : "", (long long)res->pr[p].ctl[t]);
            nb += (size_t)snprintf(b + nb, cap - nb, "%s%lld", t ? "," : "", (long long)res->pr[p].dev[t]);
        }
        na += (size_t)snprintf(a + na, cap - na, "]\n");
        nb += (size_t)snprintf(b + nb, cap - nb, "]\n");
    }
    tscript_result tr;
    nx_status st = tscript_compare_text("control", a, na, "device", b, nb, &tr, err);
    free(a), free(b);
    if (st)
        return st;
    res->prompts_identical = (int)tr.identical;
    res->tokens_agreed = (long long)tr.agreed_tokens;
    res->tokens_total = (long long)tr.total_tokens;
    tscript_result_free(&tr);
    return NX_OK;
}

nx_status md_run(const reg_registry *r, const char *cls, const md_opts *o, md_result *res, nx_err *err)
{
    memset(res, 0, sizeof *res);
    double tstart = now();
    snprintf(res->model, sizeof res->model, "%s", o->model);
    snprintf(res->class_name, sizeof res->class_name, "%s", cls);
    snprintf(res->engine, sizeof res->engine, "%s", nx_engine_name((nx_engine_kind)o->engine));
    res->scale = o->scale, res->prompts = o->prompts, res->prompt_len = o->prompt_len, res->tokens = o->tokens;
    res->seed = o->seed;
    if (o->prompts < 1 || o->prompt_len < 1 || o->tokens < 1)
        return nx_err_set(err, NX_EINVAL, "prompts, prompt length and tokens must be >= 1");
    int B = o->batch ? o->batch : o->prompts;
    if (B < 1 || B > MD_MAX_BATCH || o->prompts % B)
        return nx_err_set(err, NX_EINVAL, "batch %d: it must divide the %d prompts (and be at most %d)", B,
                          o->prompts, MD_MAX_BATCH);
    res->batch = B;
    md_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o, c.res = res, c.cur_layer = -1;
    md_model m;
    memset(&m, 0, sizeof m);
    md_lane L0, L1;
    memset(&L0, 0, sizeof L0), memset(&L1, 0, sizeof L1);
    md_seq *seqs = NULL;
    int32_t *block_tables = NULL; /* [P, MAXP]: batch g's rows are contiguous */
    md_names names; /* before any goto out: freed there */
    memset(&names, 0, sizeof names);
    int *role_of = NULL;
    lkb_report rep, rep2;
    memset(&rep, 0, sizeof rep), memset(&rep2, 0, sizeof rep2);
    nx_status st = NX_OK;
    char why[256] = "";
    if (!(c.be = camp_class_backend(r, cls)))
        return nx_err_set(err, NX_EINVAL, "class '%s' has no backend (its chain reaches neither cpu nor an sm class)",
                          cls);
    if (!dev_available(c.be, why, sizeof why))
        return nx_err_set(err, NX_EUNSUPPORTED, "class '%s': backend %s is not available here: %s", cls, c.be->name,
                          why);
    /* the lowering at C1, as `parity lkb` makes it */
    lkb_opts lo = {o->model, NULL, NULL};
    if ((st = lkb_compute(r, cls, &lo, &rep, err)))
        return st;
    if (!(role_of = calloc(rep.step.nops ? rep.step.nops : 1, sizeof *role_of))) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = map_roles(&rep, role_of, err)) || (st = scale_dims(&rep, role_of, o->scale, &res->dims, err)))
        goto out;
    if ((st = md_names_load(o->names, &names, &res->dims, err)))
        goto out;
    m.d = res->dims;
    if ((st = sizes_check(o, &m.d, B, &m, err)))
        goto out;
    for (size_t i = 0; i < rep.step.nops; i++) {
        const lkb_op_at *oa = &rep.cov[0].ops[i];
        md_op *op = &res->ops[role_of[i]];
        op->role = role_of[i];
        op->plant_layer = -1;
        /* the step's names are carried whole or not at all: an id cut to
         * the buffer named another op in every report (and two ids that
         * share 63 characters one op) */
        {
            const char *fam = oa->op->family ? oa->op->family : "";
            const char *what = strlen(oa->op->id) >= sizeof op->id ? "id"
                               : strlen(fam) >= sizeof op->family ? "family"
                               : strlen(oa->point) >= sizeof op->point ? "point"
                                                                       : NULL;
            if (what) {
                const char *v = what[0] == 'i' ? oa->op->id : what[0] == 'f' ? fam : oa->point;
                size_t cap = what[0] == 'i' ? sizeof op->id : what[0] == 'f' ? sizeof op->family : sizeof op->point;
                st = nx_err_set(err, NX_EINVAL, "%s: op %s '%.40s...' is %zu characters; the model loop takes at most %zu",
                                oa->op->where ? oa->op->where : "STEP.toml", what, v, strlen(v), cap - 1);
                goto out;
            }
        }
        snprintf(op->id, sizeof op->id, "%s", oa->op->id);
        snprintf(op->family, sizeof op->family, "%s", oa->op->family ? oa->op->family : "");
        snprintf(op->point, sizeof op->point, "%s", oa->point);
        snprintf(op->rule_where, sizeof op->rule_where, "%s", oa->rule_where);
        /* every op runs at C = the batch's rows: lowered there */
        if (B != 1 && (st = lkb_lower(r, cls, oa->op, B, op->point, sizeof op->point, op->rule_where,
                                      sizeof op->rule_where, err)))
            goto out;
        shape_of(&m.d, m.np, m.maxp, B, op->role, op->shape, sizeof op->shape);
        if (op->family[0] && !op->point[0]) {
            st = nx_err_set(err, NX_EINVAL, "class %s: no rule of its FUSIONS.toml lowers op '%s' (%s) at C%d: the "
                            "decode loop cannot run it%s", cls, op->id, op->family, B,
                            B > 1 ? " (--batch: fewer prompts at once)" : "");
            goto out;
        }
    }
    /* --against D: D's own lowering of the same step, run by D's backend */
    if (o->against) {
        snprintf(res->against, sizeof res->against, "%s", o->against);
        if (!(c.be2 = camp_class_backend(r, o->against))) {
            st = nx_err_set(err, NX_EINVAL, "--against '%s': no backend (its chain reaches neither cpu nor an sm "
                            "class)", o->against);
            goto out;
        }
        if (!dev_available(c.be2, why, sizeof why)) {
            st = nx_err_set(err, NX_EUNSUPPORTED, "--against '%s': backend %s is not available here: %s", o->against,
                            c.be2->name, why);
            goto out;
        }
        if ((st = lkb_compute(r, o->against, &lo, &rep2, err))) {
            nx_err_prefix(err, "--against %s", o->against);
            goto out;
        }
        for (size_t i = 0; i < rep.step.nops; i++) {
            md_op *op = &res->ops[role_of[i]];
            snprintf(op->point2, sizeof op->point2, "%s", rep2.cov[0].ops[i].point);
            char w2[160];
            if (B != 1 && (st = lkb_lower(r, o->against, rep2.cov[0].ops[i].op, B, op->point2, sizeof op->point2, w2,
                                          sizeof w2, err)))
                goto out;
            if (op->family[0] && !op->point2[0]) {
                st = nx_err_set(err, NX_EINVAL, "--against %s: no rule of its FUSIONS.toml lowers op '%s' (%s) at "
                                "C%d", o->against, op->id, op->family, B);
                goto out;
            }
        }
    }
    /* resolve each family op at its shape; the control evaluates the same
     * spec (or, with --against, D's point for the op) */
    res->all_same = 1;
    for (int role = 0; role < MD_NROLES && !st; role++) {
        md_op *op = &res->ops[role];
        if (!op->family[0])
            continue;
        const char *ccls = o->against ? o->against : cls, *cpoint = o->against ? op->point2 : op->point;
        if ((st = reg_resolve(r, cls, op->point, op->shape, &c.dspec[role], err)) ||
            (st = ref_inputs(&c.dspec[role], &c.desc[0][role], &c.ndesc[0][role], err))) {
            nx_err_prefix(err, "op '%s' lowered to %s at %s", op->id, op->point, op->shape);
            break;
        }
        if ((st = reg_resolve(r, ccls, cpoint, op->shape, &c.cspec[role], err)) ||
            (st = ref_inputs(&c.cspec[role], &c.desc[1][role], &c.ndesc[1][role], err))) {
            nx_err_prefix(err, "op '%s' lowered by class %s to %s at %s", op->id, ccls, cpoint, op->shape);
            break;
        }
        snprintf(op->hash, sizeof op->hash, "%s", c.dspec[role].hash ? c.dspec[role].hash : "");
        snprintf(op->hash2, sizeof op->hash2, "%s", c.cspec[role].hash ? c.cspec[role].hash : "");
        op->same = !strcmp(op->hash, op->hash2) && op->hash[0];
        res->all_same &= op->same;
        const char *rv = fam_param_get(&c.dspec[role], "residual"), *rv2 = fam_param_get(&c.cspec[role], "residual");
        op->fused_residual = rv && !strcmp(rv, "true");
        if (op->fused_residual != (rv2 && !strcmp(rv2, "true"))) {
            st = nx_err_set(err, NX_EUNSUPPORTED, "op '%s': class %s lowers it to %s and class %s to %s: one fuses "
                            "the residual add and the other does not, which the lockstep loop does not pair",
                            op->id, cls, op->point, ccls, cpoint);
            break;
        }
        if (!dev_supports(c.be, &c.dspec[role], NULL) || (c.be2 && !dev_supports(c.be2, &c.cspec[role], NULL))) {
            st = nx_err_set(err, NX_EUNSUPPORTED, "op '%s': backend %s has no kernel for %s",
                            op->id, dev_supports(c.be, &c.dspec[role], NULL) ? c.be2->name : c.be->name,
                            dev_supports(c.be, &c.dspec[role], NULL) ? cpoint : op->point);
            break;
        }
    }
    if (st)
        goto out;
    /* the logits' tolerance where the points differ: the lm head's declared
     * one (the class's, else D's), else torch.testing's bf16 default */
    {
        const fam_tolerance *t = &c.dspec[MD_R_LM_HEAD].tol, *t2 = &c.cspec[MD_R_LM_HEAD].tol;
        if (o->has_tol) {
            res->rtol = o->rtol, res->atol = o->atol;
            snprintf(res->tol_why, sizeof res->tol_why, "given with --rtol/--atol");
        } else if (t->has_rtol || (t2->has_rtol && (t = t2))) {
            res->rtol = t->rtol, res->atol = t->atol;
            snprintf(res->tol_why, sizeof res->tol_why, "declared by the lm head's point %s",
                     t == t2 ? res->ops[MD_R_LM_HEAD].point2 : res->ops[MD_R_LM_HEAD].point);
        } else {
            res->rtol = 1.6e-2, res->atol = 1e-5;
            snprintf(res->tol_why, sizeof res->tol_why,
                     "torch.testing's bf16 default, the last resort: no tolerance declared, none derived across a "
                     "whole model");
        }
    }
    if (o->plant) {
        int prole = -1, player = -1;
        char ppoint[160];
        if ((st = parse_plant(o->plant, res, &prole, &player, ppoint, sizeof ppoint, err)))
            goto out;
        if ((st = reg_resolve(r, cls, ppoint, res->ops[prole].shape, &c.pspec, err))) {
            nx_err_prefix(err, "--plant");
            goto out;
        }
        c.have_pspec = 1;
        if ((st = ref_inputs(&c.pspec, &c.pdesc, &c.npdesc, err))) {
            nx_err_prefix(err, "--plant %s", ppoint);
            goto out;
        }
        snprintf(res->ops[prole].plant, sizeof res->ops[prole].plant, "%s", ppoint);
        res->ops[prole].plant_layer = player;
    }
    double tw = now();
    if (o->weights ? (st = md_ckpt_load(o->weights, &names, &m.d, &m.w, err))
                   : (st = weights_make(&m.d, o->seed, &m.w, err)))
        goto out;
    /* --save-weights is staged beside its path and committed by the caller
     * with the run's other outputs, once the whole run is good (a run that
     * fails on TIER3.json, a --plant or the ledger leaves nothing) */
    if (o->save_weights) {
        int fd = st_tmp_create(o->save_weights, &res->weights_tmp, err);
        if (fd < 0) {
            st = err && err->code ? err->code : NX_EINVAL;
            goto out;
        }
        close(fd);
        if ((st = md_ckpt_save(res->weights_tmp, &names, &m.d, &m.w, err))) {
            nx_err_prefix(err, "--save-weights %s", o->save_weights);
            goto out;
        }
    }
    res->t_weights = now() - tw;
    if (!(m.inv_freq = calloc((size_t)m.d.d / 2, sizeof *m.inv_freq)) ||
        !(m.page_order = calloc((size_t)m.np, sizeof *m.page_order)) ||
        !(seqs = calloc((size_t)o->prompts, sizeof *seqs)) ||
        !(block_tables = calloc((size_t)o->prompts * (size_t)m.maxp, sizeof *block_tables)) ||
        !lane_make(&L0, &m.d, m.np, (size_t)B) || !lane_make(&L1, &m.d, m.np, (size_t)B) ||
        !(res->pr = calloc((size_t)o->prompts, sizeof *res->pr))) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    /* rope frequencies: base 500000 (Llama 3), in binary64 */
    for (long long i = 0; i < m.d.d / 2; i++)
        m.inv_freq[i] = pow(names.rope_base > 0 ? names.rope_base : 500000.0, -2.0 * (double)i / (double)m.d.d);
    /* the page pool handed out in a shuffled order (Fisher-Yates over Philox) */
    {
        uint32_t id = nx_philox_tensor_id("kv_pages");
        for (long long i = 0; i < m.np; i++)
            m.page_order[i] = (int32_t)i;
        for (long long i = m.np - 1; i > 0; i--) {
            uint32_t b[4];
            nx_philox_block(o->seed, id, (uint64_t)i, 0, b);
            long long j = nx_philox_below(b[0], (uint32_t)(i + 1));
            int32_t t = m.page_order[i];
            m.page_order[i] = m.page_order[j], m.page_order[j] = t;
        }
    }
    uint32_t pid = nx_philox_tensor_id("prompts");
    for (int p = 0; p < o->prompts && !st; p++) {
        md_prompt_res *pr = &res->pr[p];
        pr->ntok = o->tokens;
        pr->first_logit_step = -1;
        seqs[p].block_table = block_tables + (size_t)p * (size_t)m.maxp;
        if (!(pr->prompt = calloc((size_t)o->prompt_len, sizeof *pr->prompt)) ||
            !(pr->dev = calloc((size_t)o->tokens, sizeof *pr->dev)) ||
            !(pr->ctl = calloc((size_t)o->tokens, sizeof *pr->ctl)))
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
        for (int t = 0; t < o->prompt_len && !st; t++) {
            uint32_t b[4];
            nx_philox_block(o->seed, pid, (uint64_t)p * (uint64_t)o->prompt_len + (uint64_t)t, 0, b);
            pr->prompt[t] = nx_philox_below(b[0], (uint32_t)m.d.vocab);
        }
    }
    if (st)
        goto out;
    md_lane *L[2] = {&L0, &L1};
    long long npos = o->prompt_len + o->tokens - 1; /* the last generated token is not fed back */
    double lp_dev = 0, lp_ctl = 0;
    long long lp_n = 0, topk_eq = 0;
    for (long long pos = 0; pos < npos && !st; pos++) {
        for (int g0 = 0; g0 < o->prompts && !st; g0 += B) {
            /* the batch of prompts g0 .. g0 + B - 1 through one forward step */
            int tk0[MD_MAX_BATCH], tk1[MD_MAX_BATCH];
            for (int b = 0; b < B; b++) {
                const md_prompt_res *pb = &res->pr[g0 + b];
                tk0[b] = (int)(pos < o->prompt_len ? pb->prompt[pos] : pb->dev[pos - o->prompt_len]);
                tk1[b] = (int)(pos < o->prompt_len ? pb->prompt[pos] : pb->ctl[pos - o->prompt_len]);
            }
            c.group0 = g0, c.nb = B, c.cur_prompt = g0, c.cur_pos = (int)pos;
            int g = (int)(pos - (o->prompt_len - 1)); /* the generated token this step predicts, when >= 0 */
            if ((st = forward(&c, &m, L, &seqs[g0], block_tables + (size_t)g0 * (size_t)m.maxp, tk0, tk1, pos, g >= 0,
                              err)))
                break;
            for (int p = g0; p < g0 + B; p++) {
                md_prompt_res *pr = &res->pr[p];
                const uint16_t *lg0 = L0.logits + (size_t)(p - g0) * (size_t)m.d.vocab,
                               *lg1 = L1.logits + (size_t)(p - g0) * (size_t)m.d.vocab;
                res->steps++;
                if (g < 0)
                    continue;
                double ta = now();
                pr->dev[g] = argmax_bf16(lg0, (size_t)m.d.vocab);
                pr->ctl[g] = argmax_bf16(lg1, (size_t)m.d.vocab);
                res->t_outside += now() - ta;
                if (pr->diverged)
                    continue; /* the contexts differ from here: logits are not comparable */
                pr->logits_steps++;
                size_t mis = 0;
                for (long long i = 0; i < m.d.vocab; i++)
                    if (lg0[i] != lg1[i]) {
                        mis++;
                        double u = bf16_ulps(lg0[i], lg1[i]);
                        double a = fabs((double)md_bf16_to_f(lg0[i]) - (double)md_bf16_to_f(lg1[i]));
                        if (u > pr->max_ulp)
                            pr->max_ulp = u;
                        if (a > pr->max_abs)
                            pr->max_abs = a;
                    }
                int within = 1;
                for (long long i = 0; i < m.d.vocab && mis; i++) {
                    double a = md_bf16_to_f(lg0[i]), b = md_bf16_to_f(lg1[i]);
                    if (!(fabs(a - b) <= res->atol + res->rtol * fabs(b)) && !(a != a && b != b) && a != b)
                        within = 0;
                }
                pr->logits_within += within;
                if (!mis)
                    pr->logits_equal++;
                else if (pr->first_logit_step < 0)
                    pr->first_logit_step = g;
                int ct = (int)pr->ctl[g];
                pr->logprob_dev += logprob(lg0, (size_t)m.d.vocab, ct);
                pr->logprob_ctl += logprob(lg1, (size_t)m.d.vocab, ct);
                int k0[5], k1[5];
                top5(lg0, (size_t)m.d.vocab, k0);
                top5(lg1, (size_t)m.d.vocab, k1);
                pr->topk_steps++;
                pr->topk_agree += same_set(k0, k1);
                if (pr->dev[g] != pr->ctl[g]) {
                    pr->diverged = 1;
                    pr->agreed = g;
                    pr->dev_tok = (int)pr->dev[g], pr->ctl_tok = (int)pr->ctl[g];
                } else {
                    pr->agreed = g + 1;
                }
            }
        }
    }
    if (st)
        goto out;
    int all_eq = 1;
    for (int p = 0; p < o->prompts; p++) {
        md_prompt_res *pr = &res->pr[p];
        res->logits_steps += pr->logits_steps;
        res->logits_equal += pr->logits_equal;
        res->logits_within += pr->logits_within;
        if (pr->max_ulp > res->max_ulp)
            res->max_ulp = pr->max_ulp;
        if (pr->max_abs > res->max_abs)
            res->max_abs = pr->max_abs;
        lp_dev += pr->logprob_dev, lp_ctl += pr->logprob_ctl, lp_n += pr->topk_steps, topk_eq += pr->topk_agree;
        all_eq &= !pr->diverged;
    }
    res->mean_logprob_dev = lp_n ? lp_dev / (double)lp_n : 0;
    res->mean_logprob_ctl = lp_n ? lp_ctl / (double)lp_n : 0;
    res->topk_agreement = lp_n ? (double)topk_eq / (double)lp_n : 1;
    if ((st = transcripts(res, err)) || (st = md_tier3(reg_dir(r), res, err)))
        goto out;
    /* the same points: bits; declared differences: declared parity, the
     * logits within the tolerance and the transcript match rate at its bar */
    res->logits_ok = res->logits_within == res->logits_steps;
    res->match_bar = 1.0;
    snprintf(res->match_bar_from, sizeof res->match_bar_from, "every transcript identical");
    for (size_t i = 0; res->has_tier3 && i < res->tier3.n; i++)
        if (res->tier3.items[i].name && strcmp(res->tier3.items[i].name, "match_rate") == 0 &&
            res->tier3.items[i].has_min) {
            res->match_bar = res->tier3.items[i].min;
            snprintf(res->match_bar_from, sizeof res->match_bar_from, "TIER3.json's match_rate >= %g", res->match_bar);
        }
    double rate = res->prompts ? (double)res->prompts_identical / res->prompts : 1;
    res->match_ok = rate >= res->match_bar;
    if (res->all_same)
        res->pass = all_eq && res->logits_equal == res->logits_steps && !res->first.found;
    else
        res->pass = res->logits_ok && res->match_ok;
out:
    res->t_total = now() - tstart;
    for (int i = 0; i < MD_NROLES; i++) {
        fam_spec_free(&c.dspec[i]), fam_spec_free(&c.cspec[i]);
        free(c.desc[0][i]), free(c.desc[1][i]);
    }
    if (c.have_pspec)
        fam_spec_free(&c.pspec);
    free(c.pdesc);
    free(seqs);
    free(block_tables);
    lane_free(&L0, m.d.layers), lane_free(&L1, m.d.layers);
    md_weights_free(&m.w, m.d.layers);
    free(m.inv_freq), free(m.page_order);
    free(role_of);
    md_names_free(&names);
    lkb_report_free(&rep);
    lkb_report_free(&rep2);
    if (st)
        md_result_free(res);
    return st;
}
