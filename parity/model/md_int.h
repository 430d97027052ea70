/* md_int.h: what the files of parity/model/ share. */
#ifndef PARITY_MD_INT_H
#define PARITY_MD_INT_H

#include <stdint.h>

#include "md_model.h"

/* The largest model dimension (layers, hidden, heads, KV heads, head dim,
 * MLP, vocabulary, page) from a STEP.toml or a names map: products of
 * three stay below 2^64, and every size is checked before it is used. */
#define MD_DIM_MAX (1LL << 31)

float md_bf16_to_f(uint16_t b);
uint16_t md_f_to_bf16(float f);

/* The model's bf16 weights, row-major: wqkv [(HQ + 2 HKV) D, H] (the q,
 * k, v rows in that order), wo [H, HQ D], wgu [2 MLP, H] (gate rows, then
 * up rows), wdown [H, MLP], embed and lm_head [V, H], norms [H]. */
typedef struct md_layer_w {
    uint16_t *attn_norm, *wqkv, *wo, *mlp_norm, *wgu, *wdown;
} md_layer_w;

typedef struct md_weights {
    md_layer_w *l;
    uint16_t *embed, *final_norm, *lm_head;
} md_weights;

void md_weights_free(md_weights *w, long long layers);

/* A checkpoint's names (md_ckpt.c, docs/model.md "Checkpoints"): each
 * weight's tensor name, "{L}" standing for the layer index; the dims it
 * declares ([dims], each optional); rope_base (0: the default). */
enum {
    MD_N_EMBED, MD_N_FINAL_NORM, MD_N_LM_HEAD, MD_N_ATTN_NORM, MD_N_WQ, MD_N_WK, MD_N_WV, MD_N_WO, MD_N_MLP_NORM,
    MD_N_WGATE, MD_N_WUP, MD_N_WDOWN, MD_NNAMES
};
typedef struct md_names {
    char *name[MD_NNAMES];
    double rope_base;
} md_names;

/* Reads the TOML map at path: [names] over the defaults (the Hugging Face
 * Llama names), [dims] over *d, rope_base.  Unknown keys are errors. */
nx_status md_names_load(const char *path, md_names *n, md_dims *d, nx_err *err);
void md_names_free(md_names *n);
/* The weights of a checkpoint (BF16, F16 or F32 tensors; the others are
 * errors naming the tensor), shapes checked against d. */
nx_status md_ckpt_load(const char *path, const md_names *n, const md_dims *d, md_weights *w, nx_err *err);
/* Writes the weights as a checkpoint under the names (BF16). */
nx_status md_ckpt_save(const char *path, const md_names *n, const md_dims *d, const md_weights *w, nx_err *err);

#endif
