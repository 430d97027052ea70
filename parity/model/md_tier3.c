/* md_tier3.c: Tier 3 of `parity model` (docs/model.md): the metrics the
 * loop computes, against the bars the model declares in the registry
 * (DIR/models/<model>/TIER3.json, the format `parity tier3` reads). */
#include "md_model.h"
#include "nx_limits.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

json_t *md_metrics_json(const md_result *r)
{
    json_t *m = json_object();
    if (!m)
        return NULL;
    double gap = r->mean_logprob_ctl - r->mean_logprob_dev;
    json_object_set_new(m, "mean_logprob", tier3_number_json(r->mean_logprob_dev));
    json_object_set_new(m, "control_mean_logprob", tier3_number_json(r->mean_logprob_ctl));
    json_object_set_new(m, "logprob_gap", tier3_number_json(gap < 0 ? -gap : gap));
    json_object_set_new(m, "top5_agreement", tier3_number_json(r->topk_agreement));
    json_object_set_new(m, "match_rate", tier3_number_json(r->prompts ? (double)r->prompts_identical / r->prompts : 0));
    json_object_set_new(m, "token_agreement",
                        json_real(r->tokens_total ? (double)r->tokens_agreed / (double)r->tokens_total : 1));
    json_object_set_new(m, "logits_bit_identical",
                        json_real(r->logits_steps ? (double)r->logits_equal / (double)r->logits_steps : 1));
    return m;
}

nx_status md_tier3(const char *kernels_dir, md_result *r, nx_err *err)
{
    snprintf(r->tier3_bars, sizeof r->tier3_bars, "%s/models/%s/TIER3.json", kernels_dir, r->model);
    struct stat sb;
    if (stat(r->tier3_bars, &sb) != 0) {
        r->tier3_bars[0] = 0; /* no bar declared */
        return NX_OK;
    }
    /* bounded, and a regular file: a FIFO is refused, never waited on */
    nx_status st0 = nx_limits_file(r->tier3_bars, 64, "a JSON tree", err);
    if (st0)
        return st0;
    FILE *f = nx_fopen_input(r->tier3_bars, err);
    if (!f)
        return err && err->code ? err->code : NX_EIO;
    json_error_t je;
    json_t *bars = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!bars)
        return nx_err_set(err, NX_EINVAL, "%s:%d:%d: %s", r->tier3_bars, je.line, je.column, je.text);
    json_t *m = md_metrics_json(r);
    nx_status st = m ? tier3_check_json("the model's metrics", m, r->tier3_bars, bars, &r->tier3, err)
                     : nx_err_set(err, NX_ENOMEM, "out of memory");
    json_decref(m);
    json_decref(bars);
    if (!st)
        r->has_tier3 = 1;
    return st;
}
