/* md_model.h: model-level parity (docs/model.md): a dense decoder's decode
 * step run from the registry.  The step is the model's STEP.toml
 * (parity/lkb/); each op is lowered by the class's FUSIONS.toml rules to a
 * family point (as `parity lkb` lowers it at C1), resolved at the op's
 * shape and run by the class backend; the control runs the same loop with
 * every family op computed by the exact reference of the same point
 * (ref_run_opts).  Ops no family implements (embedding, rope, the KV cache
 * append, residual adds the lowering does not fuse, greedy argmax) are
 * written once here and reported as outside the families.  Weights come
 * from the counter-based Philox generator at a scale the machine holds.
 *
 * Per step the logits are compared bit for bit; per prompt the transcripts
 * (match rate, first divergence), and the op and layer where the two runs
 * first differed in bits.  The library never prints. */
#ifndef PARITY_MODEL_H
#define PARITY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "nx_error.h"
#include "registry.h"
#include "tier3.h"

typedef enum md_scale { MD_SCALE_TINY, MD_SCALE_SMALL, MD_SCALE_FULL } md_scale;
const char *md_scale_name(md_scale s);
int md_scale_from_name(const char *name); /* -1 when unknown */

/* The roles of a dense decoder's step, in execution order within a layer
 * (MD_R_ATTN_NORM ... MD_R_DOWN) and per step (the others). */
enum {
    MD_R_EMBED, MD_R_ATTN_NORM, MD_R_QKV, MD_R_ROPE, MD_R_ATTN, MD_R_O, MD_R_MLP_NORM, MD_R_GATE_UP, MD_R_ACT,
    MD_R_DOWN, MD_R_FINAL_NORM, MD_R_LM_HEAD, MD_R_SAMPLE, MD_NROLES
};

/* One op of the step as the loop runs it. */
typedef struct md_op {
    int role;                 /* MD_R_* */
    char id[64];              /* the manifest's op id */
    char family[64];          /* "" for an op outside the families */
    char point[160];          /* FAMILY.POINT the lowering names, "" outside */
    char rule_where[160];     /* the FUSIONS.toml rule (file:line) */
    char shape[256];          /* the shape it is resolved at (the scaled model's) */
    char hash[72];            /* the resolved point's hash */
    int fused_residual;       /* a norm whose point takes the residual (rmsnorm residual = true) */
    char plant[160];          /* the device runs this point instead (--plant), else "" */
    char point2[160];         /* --against D: D's point for the op */
    char hash2[72];           /* the control's point's hash */
    int same;                 /* the control runs the same point (equal hashes): bits expected */
    int plant_layer;          /* -1: every layer */
} md_op;

typedef struct md_dims {
    long long layers, hidden, hq, hkv, d, mlp, vocab, page;
    long long full_layers, full_hidden, full_hq, full_hkv, full_d, full_mlp, full_vocab;
} md_dims;

typedef struct md_opts {
    const char *model;
    md_scale scale;
    int prompts;        /* P, >= 1 */
    int prompt_len;     /* tokens of each prompt, >= 1 */
    int tokens;         /* T tokens generated per prompt, >= 1 */
    int batch;          /* prompts decoded together as one batch (0: all P);
                           it divides P, and every op is lowered at C = batch */
    uint64_t seed;
    int threads;        /* backend and reference threads (0: OpenMP's default) */
    int engine;         /* nx_engine_kind of the control */
    /* "OP[@LAYER]=FAMILY.POINT": the device runs that point for the op (at
     * that layer) while the control evaluates the declared one: a planted
     * kernel bug (the power test), NULL: none. */
    const char *plant;
    /* a class whose backend runs the control with its own lowering,
     * instead of the exact reference; NULL: the reference */
    const char *against;
    /* the logits' tolerance where the points differ, given by the user
     * (over the declared one) when has_tol */
    int has_tol;
    double rtol, atol;
    /* weights from a safetensors checkpoint (NULL: Philox), its names and
     * dims from a TOML map (NULL: the defaults, docs/model.md), and a file
     * to write the run's weights to as a checkpoint (NULL: none) */
    const char *weights, *names, *save_weights;
} md_opts;

/* Where the two runs first differed in bits. */
typedef struct md_first_diff {
    int found;
    int prompt;             /* 0-based */
    int pos;                /* the token position in the sequence (prompt tokens first) */
    int generated;          /* 1 when pos is a generated token's step */
    char op[64];            /* the op whose output differed first */
    int role;
    int layer;              /* -1: a per-step op */
    int outside;            /* an op outside the families (never with equal inputs) */
    int declared;           /* the two runs' points for the op differ (a declared difference) */
    size_t mismatched, n;   /* elements of its output */
    double max_ulp;
} md_first_diff;

typedef struct md_prompt_res {
    int64_t *prompt;         /* prompt_len tokens */
    int64_t *dev, *ctl;      /* the generated tokens of each run */
    int ntok;
    int agreed;              /* tokens before the first divergence */
    int diverged;
    int dev_tok, ctl_tok;    /* at the divergence */
    int logits_steps;        /* generated steps whose logits were compared (up to the divergence) */
    int logits_equal;        /* of those, bit-equal */
    int logits_within;       /* of those, within the tolerance */
    int first_logit_step;    /* first generated step with logits differing in bits, -1 none */
    double max_ulp, max_abs; /* over the compared steps */
    double logprob_dev, logprob_ctl; /* sum over steps of log p(control token) under each run's logits */
    int topk_agree, topk_steps;      /* steps whose top-5 sets were equal */
    md_first_diff first;     /* the first op whose bits differed in this prompt */
} md_prompt_res;

typedef struct md_result {
    char model[64], class_name[64];
    md_scale scale;
    md_dims dims;
    md_op ops[MD_NROLES];
    int prompts, prompt_len, tokens;
    int batch;               /* prompts decoded as one batch: the ops run at C = batch rows */
    uint64_t seed;
    char engine[16];
    char against[64];        /* the control's class (--against), "" : the exact reference */
    int all_same;            /* every family op runs the control's point: bit parity expected */
    double rtol, atol;       /* the logits' tolerance where points differ */
    char tol_why[200];
    md_prompt_res *pr;
    md_first_diff first;
    /* overall */
    int prompts_identical;
    /* declared parity (the points differ): the logits within the tolerance
     * and the transcript match rate at its bar (TIER3.json's match_rate
     * min, else every transcript identical) */
    int logits_ok, match_ok;
    double match_bar;
    char match_bar_from[96];
    long long tokens_agreed, tokens_total;
    long long logits_steps, logits_equal, logits_within;
    double max_ulp, max_abs;
    double mean_logprob_dev, mean_logprob_ctl; /* per generated token, over the control's transcript steps compared */
    double topk_agreement;
    /* costs */
    double t_weights, t_device, t_ref, t_outside, t_total;
    long long steps;         /* forward steps per run (prompt and generated tokens of every prompt) */
    long long dev_calls, ref_calls;
    int pass;                /* every logits step and every transcript bit-identical */
    /* Tier 3: the model's declared bars (DIR/models/<model>/TIER3.json) */
    int has_tier3;
    char tier3_bars[1200];   /* the bars file, "" when the model declares none */
    tier3_result tier3;
    /* --save-weights: the checkpoint written to this temporary beside its
     * path, for the caller to commit (st_tmp_commit) with its other
     * outputs once the run is good; md_result_free discards it */
    char *weights_tmp;
} md_result;

/* Runs the model on class cls of the loaded registry r. */
nx_status md_run(const reg_registry *r, const char *cls, const md_opts *o, md_result *res, nx_err *err);
void md_result_free(md_result *res);

/* The report: text, JSON (malloc'd; NULL when out of memory), HTML. */
char *md_text(const md_result *res);
char *md_json(const md_result *res);
char *md_html(const md_result *res);

const char *md_role_name(int role);

/* Tier 3 (md_tier3.c): the metrics the loop computes, as `parity tier3`
 * reads them (a new reference), and their check against the bars the
 * model declares in DIR/models/<model>/TIER3.json (none: has_tier3 = 0).
 * A malformed bars file is NX_EINVAL naming it. */
json_t *md_metrics_json(const md_result *res);
nx_status md_tier3(const char *kernels_dir, md_result *res, nx_err *err);

/* Records the run in the campaign ledger at path (md_ledger.c): a run of
 * the class labelled with the model, one point model.<M> whose Tier 2 is
 * the model-level verdict (basis bits where every op runs the control's
 * point), so that `parity ttbp --class C --model M` reads it.
 * *exit_lines: the ledger's closing lines (malloc'd). */
nx_status md_record(const char *path, const reg_registry *r, const md_opts *o, const md_result *res, int exit_status,
                    char **exit_lines, nx_err *err);

#endif
