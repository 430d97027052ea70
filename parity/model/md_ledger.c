/* md_ledger.c: a model run in the campaign ledger (docs/model.md, docs/
 * ledger.md), through the ledger's own recording calls: a run of the class
 * labelled with the model (shapes "model:SCALE") holding one point,
 * model.<M>, whose Tier 2 is the model-level verdict, so that
 * `parity ttbp --class C --model M` gives when M's decode reached parity
 * on the class. */
#include "md_model.h"

#include <stdio.h>
#include <string.h>

#include "campaign.h"
#include "ledger.h"
#include "lkb.h"
#include "nx_sha256.h"

nx_status md_record(const char *path, const reg_registry *r, const md_opts *o, const md_result *res, int exit_status,
                    char **exit_lines, nx_err *err)
{
    *exit_lines = NULL;
    camp_result c;
    memset(&c, 0, sizeof c);
    if (strlen(res->class_name) >= sizeof c.class_name || strlen(res->against) >= sizeof c.against)
        return nx_err_set(err, NX_EINVAL, "--ledger: class names longer than %zu bytes are not recorded",
                          sizeof c.class_name - 1);
    char shapes[32];
    snprintf(shapes, sizeof shapes, "model:%s", md_scale_name(res->scale));
    const dev_backend *be = camp_class_backend(r, res->class_name);
    ledger_run_info li = {.class_name = res->class_name,
                          .model = res->model,
                          .shapes = shapes,
                          .seed = o->seed,
                          .dist = "normal",
                          .engine = res->engine,
                          .backend = be ? be->name : "none",
                          .repeats = 1,
                          .threads = o->threads,
                          .registry_dir = reg_dir(r),
                          .against = res->against[0] ? res->against : NULL,
                          .reg = r};
    ledger *lg = NULL;
    /* source "model": what ttbp counts for model.M (docs/ledger.md) */
    ledger_run_from from = {.source = "model"};
    nx_status st = ledger_start_from(path, &li, &from, &lg, err);
    if (st)
        return st;
    snprintf(c.id, sizeof c.id, "model.%s", res->model);
    memcpy(c.class_name, res->class_name, strlen(res->class_name) + 1);
    snprintf(c.shape, sizeof c.shape, "scale=%s,prompts=%d,prompt_len=%d,tokens=%d", md_scale_name(res->scale),
             res->prompts, res->prompt_len, res->tokens);
    /* the hash: every family op's point hash in step order (a changed
     * lowering or point is a changed model point) */
    nx_sha256 h;
    nx_sha256_init(&h);
    for (int i = 0; i < MD_NROLES; i++)
        if (res->ops[i].family[0])
            nx_sha256_update(&h, res->ops[i].hash, strlen(res->ops[i].hash) + 1);
    uint8_t dg[32];
    nx_sha256_final(&h, dg);
    for (int i = 0; i < 32; i++)
        snprintf(c.hash + 2 * i, 3, "%02x", dg[i]);
    for (int k = 0; k < CK_COUNT; k++) {
        c.checks[k].verdict = CV_SKIP;
        snprintf(c.checks[k].detail, sizeof c.checks[k].detail, "skipped: a model-level record (parity model)");
    }
    c.checks[CK_TIER2].verdict = res->pass ? CV_PASS : CV_FAIL;
    snprintf(c.checks[CK_TIER2].detail, sizeof c.checks[CK_TIER2].detail,
             "model %s: %lld of %lld logits steps bit-identical, %d of %d transcripts identical%s", res->model,
             res->logits_equal, res->logits_steps, res->prompts_identical, res->prompts,
             res->first.found ? ", first difference at op " : "");
    if (res->first.found) {
        size_t n = strlen(c.checks[CK_TIER2].detail);
        snprintf(c.checks[CK_TIER2].detail + n, sizeof c.checks[CK_TIER2].detail - n, "%s (layer %d)",
                 res->first.op, res->first.layer);
    }
    /* bits where every op runs the control's point; else the tolerance */
    c.t2.opt.policy = res->all_same ? CMP_BITWISE : CMP_TOLERANCE;
    c.bit_exact = res->pass && res->logits_equal == res->logits_steps && !res->first.found;
    c.t2.max_ulp = (uint64_t)res->max_ulp;
    c.t2.bits_differ = (size_t)(res->logits_steps - res->logits_equal);
    c.t_run = res->t_device, c.t_ref = res->t_ref;
    memcpy(c.against, res->against, strlen(res->against) + 1);
    if ((st = ledger_point(lg, NULL, &c, err))) {
        ledger_close(lg);
        return st;
    }
    ledger_lkb f;
    lkb_ledger_fields(r, res->class_name, res->model, &f);
    ledger_set_lkb(lg, &f);
    return ledger_finish(lg, exit_status, exit_lines, err);
}
