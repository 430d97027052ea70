/* md_report.c: the report of `parity model` (docs/model.md) as text, JSON
 * and one self-contained HTML page (the transcripts side by side, the
 * first divergence marked). */
#include "md_model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "nx_sbuf.h"

static double per_token(const md_result *r, double t)
{
    return r->steps ? t / (double)r->steps : 0;
}

static void first_text(const md_result *r, char *s, size_t n)
{
    const md_first_diff *f = &r->first;
    if (!f->found) {
        snprintf(s, n, "none: every op's output was bit-identical");
        return;
    }
    char layer[32] = "per step";
    if (f->layer >= 0)
        snprintf(layer, sizeof layer, "layer %d", f->layer);
    snprintf(s, n, "op '%s' (%s, %s), prompt %d at position %d (%s): %zu of %zu elements differ, max %.0f ulp%s",
             f->op, md_role_name(f->role), layer, f->prompt, f->pos, f->generated ? "a generated token's step" :
             "a prompt token", f->mismatched, f->n, f->max_ulp,
             !r->against[0] ? "" : f->declared ? " (a declared difference: the classes run different points there)"
                                               : " (not declared: both classes run the same point there)");
}

char *md_text(const md_result *r)
{
    nx_sbuf b = {0};
    const md_dims *d = &r->dims;
    nx_sbuf_printf(&b, "Model %s on class %s, scale %s: %lld layers (of %lld), hidden %lld (of %lld), %lld query / "
                   "%lld KV heads of %lld (of %lld / %lld of %lld), MLP %lld (of %lld), vocabulary %lld (of %lld), "
                   "KV pages of %lld\n",
                   r->model, r->class_name, md_scale_name(r->scale), d->layers, d->full_layers, d->hidden,
                   d->full_hidden, d->hq, d->hkv, d->d, d->full_hq, d->full_hkv, d->full_d, d->mlp, d->full_mlp,
                   d->vocab, d->full_vocab, d->page);
    nx_sbuf_printf(&b, "Weights: Philox seed %llu (docs/model.md); %d prompts x %d tokens, then %d generated "
                   "greedily, %d prompt%s per batch (every op at C%d); ",
                   (unsigned long long)r->seed, r->prompts, r->prompt_len, r->tokens, r->batch,
                   r->batch == 1 ? "" : "s", r->batch);
    if (r->against[0])
        nx_sbuf_printf(&b, "control: class %s's backend with its own lowering\n", r->against);
    else
        nx_sbuf_printf(&b, "control: the exact reference (%s engine) of the same points\n", r->engine);
    nx_sbuf_printf(&b, "\nOps (lowered at C%d by the class's FUSIONS.toml):\n", r->batch);
    for (int i = 0; i < MD_NROLES; i++) {
        const md_op *op = &r->ops[i];
        if (op->family[0]) {
            nx_sbuf_printf(&b, "  %-12s %-20s %-32s %s", op->id, md_role_name(i), op->point, op->shape);
            if (r->against[0])
                nx_sbuf_printf(&b, "  %s: %s (%s)", r->against, op->point2,
                               op->same ? "the same point" : "another point: a declared difference");
            if (op->fused_residual)
                nx_sbuf_printf(&b, " (residual add fused)");
            if (op->plant[0]) {
                if (op->plant_layer >= 0)
                    nx_sbuf_printf(&b, "  PLANTED: the device runs %s at layer %d", op->plant, op->plant_layer);
                else
                    nx_sbuf_printf(&b, "  PLANTED: the device runs %s", op->plant);
            }
            nx_sbuf_printf(&b, "\n");
        } else {
            nx_sbuf_printf(&b, "  %-12s %-20s %-32s %s\n", op->id, md_role_name(i), "outside the families",
                           op->shape);
        }
    }
    nx_sbuf_printf(&b, "  Also outside the families: the KV cache append (a page taken from the pool when a position "
                   "starts one) and residual adds the lowering does not fuse\n");
    nx_sbuf_printf(&b, "\nLogits: %lld of %lld generated steps bit-identical", r->logits_equal, r->logits_steps);
    if (r->logits_equal != r->logits_steps)
        nx_sbuf_printf(&b, "; max %.0f ulp (bf16), max abs error %.6g", r->max_ulp, r->max_abs);
    nx_sbuf_printf(&b, " (steps up to each prompt's first divergence)\n");
    if (!r->all_same)
        nx_sbuf_printf(&b, "Logits within rtol %g, atol %g (%s): %lld of %lld steps\n", r->rtol, r->atol, r->tol_why,
                       r->logits_within, r->logits_steps);
    char ft[512];
    first_text(r, ft, sizeof ft);
    nx_sbuf_printf(&b, "First difference in bits: %s\n", ft);
    nx_sbuf_printf(&b, "Transcripts: %d / %d prompts identical (%.1f%%); token agreement up to the first divergence "
                   "%lld / %lld (%.1f%%)\n",
                   r->prompts_identical, r->prompts, r->prompts ? 100.0 * r->prompts_identical / r->prompts : 0,
                   r->tokens_agreed, r->tokens_total,
                   r->tokens_total ? 100.0 * (double)r->tokens_agreed / (double)r->tokens_total : 100.0);
    for (int p = 0; p < r->prompts; p++) {
        const md_prompt_res *pr = &r->pr[p];
        if (pr->diverged)
            nx_sbuf_printf(&b, "  prompt %d: diverged at token %d: control %d, device %d", p, pr->agreed,
                           pr->ctl_tok, pr->dev_tok);
        else
            nx_sbuf_printf(&b, "  prompt %d: identical (%d tokens)", p, pr->ntok);
        if (pr->first_logit_step >= 0)
            nx_sbuf_printf(&b, "; logits first differed at token %d, max %.0f ulp", pr->first_logit_step,
                           pr->max_ulp);
        if (pr->first.found) {
            if (pr->first.layer >= 0)
                nx_sbuf_printf(&b, "; first op to differ: %s at layer %d, position %d", pr->first.op,
                               pr->first.layer, pr->first.pos);
            else
                nx_sbuf_printf(&b, "; first op to differ: %s, position %d", pr->first.op, pr->first.pos);
        }
        nx_sbuf_printf(&b, "\n");
    }
    nx_sbuf_printf(&b, "Metrics: mean log-probability of the control's tokens: device %.6f, control %.6f; top-5 "
                   "agreement %.4f\n",
                   r->mean_logprob_dev, r->mean_logprob_ctl, r->topk_agreement);
    if (r->has_tier3) {
        char *t = tier3_result_text(&r->tier3);
        if (t)
            nx_sbuf_printf(&b, "%s", t);
        free(t);
    } else {
        nx_sbuf_printf(&b, "Tier 3: no bars declared (models/%s/TIER3.json)\n", r->model);
    }
    char who[96];
    if (r->against[0])
        snprintf(who, sizeof who, "class %s", r->against);
    else
        snprintf(who, sizeof who, "exact reference");
    nx_sbuf_printf(&b, "Cost: %lld forward steps per run; device %.3f s (%.3f ms per token, %lld calls), %s "
                   "%.3f s (%.3f ms per token, %lld calls), outside the families %.3f s, weights %.3f s, "
                   "total %.3f s\n",
                   r->steps, r->t_device, 1e3 * per_token(r, r->t_device), r->dev_calls, who, r->t_ref,
                   1e3 * per_token(r, r->t_ref), r->ref_calls, r->t_outside, r->t_weights, r->t_total);
    if (r->all_same)
        nx_sbuf_printf(&b, "Model parity: %s\n",
                       r->pass ? "yes (every logits step and every transcript bit-identical to the control)"
                       : r->against[0] ? "NO (the bits differ from the other class's run of the same points)"
                                       : "NO (the device's bits differ from the exact reference of its declared points)");
    else
        nx_sbuf_printf(&b, "Model parity: bit parity not expected (the classes run different points); declared "
                       "parity: %s: logits within the tolerance: %s; transcripts %d / %d identical (bar: %s): %s\n",
                       r->pass ? "yes" : "NO", r->logits_ok ? "yes" : "NO", r->prompts_identical, r->prompts,
                       r->match_bar_from, r->match_ok ? "yes" : "NO");
    return nx_sbuf_take(&b);
}

char *md_json(const md_result *r)
{
    json_t *j = json_object(), *dims = json_object(), *ops = json_array(), *pr = json_array(), *f = json_object(),
           *cost = json_object();
    const md_dims *d = &r->dims;
    json_object_set_new(j, "model", json_string(r->model));
    json_object_set_new(j, "class", json_string(r->class_name));
    json_object_set_new(j, "scale", json_string(md_scale_name(r->scale)));
#define DIM(k, v) json_object_set_new(dims, k, json_integer(v))
    DIM("layers", d->layers), DIM("hidden", d->hidden), DIM("heads", d->hq), DIM("kv_heads", d->hkv),
        DIM("head_dim", d->d), DIM("mlp", d->mlp), DIM("vocab", d->vocab), DIM("page", d->page);
    DIM("full_layers", d->full_layers), DIM("full_hidden", d->full_hidden), DIM("full_heads", d->full_hq),
        DIM("full_kv_heads", d->full_hkv), DIM("full_head_dim", d->full_d), DIM("full_mlp", d->full_mlp),
        DIM("full_vocab", d->full_vocab);
#undef DIM
    json_object_set_new(j, "dims", dims);
    json_object_set_new(j, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(j, "prompts", json_integer(r->prompts));
    json_object_set_new(j, "prompt_len", json_integer(r->prompt_len));
    json_object_set_new(j, "batch", json_integer(r->batch));
    json_object_set_new(j, "tokens", json_integer(r->tokens));
    json_object_set_new(j, "engine", json_string(r->engine));
    json_object_set_new(j, "control", json_string(r->against[0] ? r->against : "reference"));
    json_object_set_new(j, "bit_parity_expected", json_boolean(r->all_same));
    if (!r->all_same) {
        json_t *t = json_object();
        json_object_set_new(t, "rtol", json_real(r->rtol));
        json_object_set_new(t, "atol", json_real(r->atol));
        json_object_set_new(t, "why", json_string(r->tol_why));
        json_object_set_new(j, "logits_tolerance", t);
        json_object_set_new(j, "logits_within", json_integer(r->logits_within));
    }
    for (int i = 0; i < MD_NROLES; i++) {
        const md_op *op = &r->ops[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(op->id));
        json_object_set_new(o, "role", json_string(md_role_name(i)));
        json_object_set_new(o, "outside_families", json_boolean(!op->family[0]));
        json_object_set_new(o, "shape", json_string(op->shape));
        if (op->family[0]) {
            json_object_set_new(o, "point", json_string(op->point));
            json_object_set_new(o, "rule", json_string(op->rule_where));
            json_object_set_new(o, "hash", json_string(op->hash));
            json_object_set_new(o, "fused_residual", json_boolean(op->fused_residual));
            if (r->against[0]) {
                json_object_set_new(o, "control_point", json_string(op->point2));
                json_object_set_new(o, "control_hash", json_string(op->hash2));
            }
            json_object_set_new(o, "same_point", json_boolean(op->same));
            if (op->plant[0]) {
                json_object_set_new(o, "planted", json_string(op->plant));
                json_object_set_new(o, "planted_layer", op->plant_layer >= 0 ? json_integer(op->plant_layer)
                                                                             : json_null());
            }
        }
        json_array_append_new(ops, o);
    }
    json_object_set_new(j, "ops", ops);
    json_object_set_new(f, "found", json_boolean(r->first.found));
    if (r->first.found) {
        json_object_set_new(f, "op", json_string(r->first.op));
        json_object_set_new(f, "role", json_string(md_role_name(r->first.role)));
        json_object_set_new(f, "layer", r->first.layer >= 0 ? json_integer(r->first.layer) : json_null());
        json_object_set_new(f, "prompt", json_integer(r->first.prompt));
        json_object_set_new(f, "position", json_integer(r->first.pos));
        json_object_set_new(f, "mismatched", json_integer((json_int_t)r->first.mismatched));
        json_object_set_new(f, "elements", json_integer((json_int_t)r->first.n));
        json_object_set_new(f, "max_ulp", json_real(r->first.max_ulp));
        json_object_set_new(f, "declared", json_boolean(r->first.declared));
    }
    json_object_set_new(j, "first_difference", f);
    for (int p = 0; p < r->prompts; p++) {
        const md_prompt_res *x = &r->pr[p];
        json_t *o = json_object(), *pt = json_array(), *dv = json_array(), *ct = json_array();
        for (int t = 0; t < r->prompt_len; t++)
            json_array_append_new(pt, json_integer(x->prompt[t]));
        for (int t = 0; t < x->ntok; t++)
            json_array_append_new(dv, json_integer(x->dev[t])), json_array_append_new(ct, json_integer(x->ctl[t]));
        json_object_set_new(o, "prompt", pt);
        json_object_set_new(o, "device", dv);
        json_object_set_new(o, "control", ct);
        json_object_set_new(o, "identical", json_boolean(!x->diverged));
        json_object_set_new(o, "agreed", json_integer(x->agreed));
        if (x->diverged) {
            json_object_set_new(o, "first_divergence", json_integer(x->agreed));
            json_object_set_new(o, "device_token", json_integer(x->dev_tok));
            json_object_set_new(o, "control_token", json_integer(x->ctl_tok));
        }
        json_object_set_new(o, "logits_steps", json_integer(x->logits_steps));
        json_object_set_new(o, "logits_equal", json_integer(x->logits_equal));
        json_object_set_new(o, "first_logits_difference",
                            x->first_logit_step >= 0 ? json_integer(x->first_logit_step) : json_null());
        json_object_set_new(o, "max_ulp", json_real(x->max_ulp));
        json_object_set_new(o, "max_abs", json_real(x->max_abs));
        if (x->first.found) {
            json_t *f = json_object();
            json_object_set_new(f, "op", json_string(x->first.op));
            json_object_set_new(f, "layer", x->first.layer >= 0 ? json_integer(x->first.layer) : json_null());
            json_object_set_new(f, "position", json_integer(x->first.pos));
            json_object_set_new(f, "mismatched", json_integer((json_int_t)x->first.mismatched));
            json_object_set_new(o, "first_difference", f);
        } else {
            json_object_set_new(o, "first_difference", json_null());
        }
        json_array_append_new(pr, o);
    }
    json_object_set_new(j, "per_prompt", pr);
    json_object_set_new(j, "prompts_identical", json_integer(r->prompts_identical));
    json_object_set_new(j, "match_rate", json_real(r->prompts ? (double)r->prompts_identical / r->prompts : 0));
    if (!r->all_same) { /* declared parity's two parts (docs/model.md) */
        json_object_set_new(j, "logits_within_tolerance", json_boolean(r->logits_ok));
        json_object_set_new(j, "match_rate_bar", json_real(r->match_bar));
        json_object_set_new(j, "match_rate_ok", json_boolean(r->match_ok));
    }
    json_object_set_new(j, "tokens_agreed", json_integer(r->tokens_agreed));
    json_object_set_new(j, "tokens_total", json_integer(r->tokens_total));
    json_object_set_new(j, "logits_steps", json_integer(r->logits_steps));
    json_object_set_new(j, "logits_equal", json_integer(r->logits_equal));
    json_object_set_new(j, "max_ulp", json_real(r->max_ulp));
    json_object_set_new(j, "max_abs", json_real(r->max_abs));
    json_object_set_new(j, "metrics", md_metrics_json(r));
    if (r->has_tier3) {
        json_t *t3 = tier3_result_json(&r->tier3);
        json_object_set_new(j, "tier3", t3 ? t3 : json_null());
        json_object_set_new(j, "tier3_bars", json_string(r->tier3_bars));
    }
    json_object_set_new(cost, "steps", json_integer(r->steps));
    json_object_set_new(cost, "device_s", json_real(r->t_device));
    json_object_set_new(cost, r->against[0] ? "control_s" : "reference_s", json_real(r->t_ref));
    json_object_set_new(cost, r->against[0] ? "control_s_per_token" : "reference_s_per_token",
                        json_real(per_token(r, r->t_ref)));
    json_object_set_new(cost, "device_s_per_token", json_real(per_token(r, r->t_device)));
    json_object_set_new(cost, "outside_s", json_real(r->t_outside));
    json_object_set_new(cost, "weights_s", json_real(r->t_weights));
    json_object_set_new(cost, "total_s", json_real(r->t_total));
    json_object_set_new(cost, "device_calls", json_integer(r->dev_calls));
    json_object_set_new(cost, r->against[0] ? "control_calls" : "reference_calls", json_integer(r->ref_calls));
    json_object_set_new(j, "cost", cost);
    json_object_set_new(j, "pass", json_boolean(r->pass));
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return NULL;
    }
    t[n] = '\n', t[n + 1] = 0;
    return t;
}

char *md_html(const md_result *r)
{
    html_doc d;
    char title[256], buf[512];
    snprintf(title, sizeof title, "parity model: %s on %s (%s)", r->model, r->class_name, md_scale_name(r->scale));
    html_begin(&d, title);
    char v1[64], v2[64], v3[128], v4[128];
    snprintf(v1, sizeof v1, "%lld / %lld", r->logits_equal, r->logits_steps);
    snprintf(v2, sizeof v2, "%d / %d", r->prompts_identical, r->prompts);
    first_text(r, buf, sizeof buf);
    snprintf(v3, sizeof v3, "%.3f ms per token (%lld steps)", r->steps ? 1e3 * r->t_ref / (double)r->steps : 0,
             r->steps);
    snprintf(v4, sizeof v4, "%s", r->pass ? (r->all_same ? "yes" : "declared parity (other points)")
                                  : r->all_same ? "NO"
                                  : !r->logits_ok ? "NO: logits outside the tolerance (other points)"
                                                  : "NO: transcript match rate under its bar (other points)");
    char ctl[96];
    snprintf(ctl, sizeof ctl, "%s", r->against[0] ? r->against : "the exact reference of the same points");
    const char *const facts[][2] = {{"model parity", v4},
                                    {"control", ctl},
                                    {"logits steps bit-identical", v1},
                                    {"prompts identical", v2},
                                    {"first difference in bits", buf},
                                    {r->against[0] ? "control cost" : "exact reference cost", v3}};
    html_facts(&d, facts, sizeof facts / sizeof facts[0]);
    html_heading(&d, 2, "Ops");
    html_raw(&d, "<table><tr><th>op</th><th>role</th><th>point</th><th>shape</th></tr>\n");
    for (int i = 0; i < MD_NROLES; i++) {
        const md_op *op = &r->ops[i];
        html_raw(&d, "<tr><td>");
        html_esc(&d, op->id);
        html_raw(&d, "</td><td>");
        html_esc(&d, md_role_name(i));
        html_raw(&d, "</td><td>");
        html_esc(&d, op->family[0] ? op->point : "outside the families");
        if (op->plant[0]) {
            html_raw(&d, " <b>planted: ");
            html_esc(&d, op->plant);
            html_raw(&d, "</b>");
        }
        html_raw(&d, "</td><td>");
        html_esc(&d, op->shape);
        html_raw(&d, "</td></tr>\n");
    }
    html_raw(&d, "</table>\n");
    html_heading(&d, 2, "Transcripts (control | device; the first divergence marked)");
    for (int p = 0; p < r->prompts; p++) {
        const md_prompt_res *x = &r->pr[p];
        html_rawf(&d, "<h3>prompt %d: %s", p, x->diverged ? "diverged" : "identical");
        if (x->first.found) {
            html_raw(&d, "; first op to differ: ");
            html_esc(&d, x->first.op);
            if (x->first.layer >= 0)
                html_rawf(&d, " at layer %d", x->first.layer);
            html_rawf(&d, ", position %d", x->first.pos);
        }
        html_raw(&d, "</h3>\n<table><tr><th>token</th><th>control</th><th>device</th></tr>\n");
        for (int t = 0; t < x->ntok; t++) {
            int mark = x->diverged && t == x->agreed, after = x->diverged && t > x->agreed;
            html_rawf(&d, "<tr%s><td>%d</td><td>%lld</td><td>%s%lld%s</td></tr>\n",
                      mark ? " style=\"background:#f6c6c6;font-weight:bold\"" : after ? " style=\"color:#888\"" : "",
                      t, (long long)x->ctl[t], mark ? "&#9654; " : "", (long long)x->dev[t],
                      mark ? " (first divergence)" : "");
        }
        html_raw(&d, "</table>\n");
    }
    return html_end(&d);
}
