/* verdict.c: the one judge (verdict.h): the verdict and the words for
 * Tier 1, Tier 2 and cross-class evidence, and the Tier 2 policy. */
#include "verdict.h"

#include <stdio.h>
#include <string.h>

void vd_default_tolerance(nx_fmt f, cmp_options *o, char *what, size_t len)
{
    cmp_options_init(o, CMP_TOLERANCE);
    switch (f) {
    case NX_FP64: o->rtol = 1e-7; o->atol = 1e-7; break;
    case NX_FP32: case NX_TF32: case NX_E8M13: o->rtol = 1.3e-6; o->atol = 1e-5; break;
    case NX_FP16: o->rtol = 1e-3; o->atol = 1e-5; break;
    case NX_BF16: o->rtol = 1.6e-2; o->atol = 1e-5; break;
    default: o->rtol = 1e-1; o->atol = 1e-5; break;
    }
    snprintf(what, len, "no tolerance is declared: torch.testing's default for %s applies (rtol %g, atol %g)",
             nx_format(f)->name, o->rtol, o->atol);
}

int vd_in_list(const char *list, const char *check)
{
    if (!list || !check || !*check)
        return 0;
    size_t n = strlen(check);
    for (const char *p = list; (p = strstr(p, check)) != NULL; p += n)
        if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[n] == 0 || p[n] == ',' || p[n] == ' '))
            return 1;
    return 0;
}

void vd_diff_text(const vd_diff *d, char *buf, size_t len)
{
    if (d->same)
        snprintf(buf, len, "no bit differs (%zu logical rows, %zu elements)", d->rows, d->compared);
    else
        snprintf(buf, len, "output '%s': %zu / %zu elements differ, first at %s", d->output, d->differ, d->compared,
                 d->first_at);
}

/* The policy in words: "rtol 0.0001, atol 0.001". */
static void policy_words(const cmp_options *o, char *buf, size_t len)
{
    switch (o->policy) {
    case CMP_TOLERANCE: snprintf(buf, len, "tolerance rtol %g, atol %g", o->rtol, o->atol); break;
    case CMP_ULP: snprintf(buf, len, "at most %g ulp", o->max_ulp); break;
    case CMP_ULP_OR_TOLERANCE:
        snprintf(buf, len, "at most %g ulp, or rtol %g, atol %g", o->max_ulp, o->rtol, o->atol);
        break;
    case CMP_BOUND: snprintf(buf, len, "the bound derived from the tree"); break;
    default: snprintf(buf, len, "bit for bit"); break;
    }
}

static int tier1(const vd_evidence *e, char *text, size_t len)
{
    char where[512];
    vd_diff_text(e->diff, where, sizeof where);
    int same = e->diff->same;
    if (e->negative && !same)
        snprintf(text, len, "%s: %s: the bits differ, as this kernel is built to make them: %s", VD_OK_NEGATIVE,
                 e->what, where);
    else if (e->negative)
        snprintf(text, len, "%s: %s: identical bit for bit, but this kernel is built to make them differ: the "
                 "check cannot tell it apart", VD_FAIL_NEGATIVE, e->what);
    else if (same)
        snprintf(text, len, "%s: %s: identical bit for bit", VD_OK, e->what);
    else
        snprintf(text, len, "%s: %s: the bits differ: %s", VD_FAIL, e->what, where);
    return e->negative ? !same : same;
}

static int tier2(const vd_evidence *e, char *text, size_t len)
{
    const cmp_result *r = e->cmp;
    const char *out = e->output ? e->output : "?";
    const char *at = e->first_at && *e->first_at ? e->first_at : "?";
    const char *why = e->why ? e->why : "";
    int pass = r->mismatched == 0;
    if (r->opt.policy == CMP_BITWISE) {
        if (pass)
            snprintf(text, len, "%s: bit-exact: 0 / %zu elements of '%s' differ", VD_OK, r->n, out);
        else
            snprintf(text, len, "%s: not bit-exact: %zu / %zu elements of '%s' differ, first at %s", VD_FAIL,
                     r->mismatched, r->n, out, at);
        return pass;
    }
    char pol[160];
    policy_words(&r->opt, pol, sizeof pol);
    if (r->bits_differ == 0)
        snprintf(text, len, "%s: bit-exact: 0 / %zu elements of '%s' differ (judged by %s: %s)", VD_OK, r->n, out,
                 pol, why);
    else if (pass)
        snprintf(text, len, "%s: within the tolerance, not bit-exact: %zu / %zu elements of '%s' differ in their "
                 "bits, none outside %s, max ulp %llu (%s)", VD_OK, r->bits_differ, r->n, out, pol,
                 (unsigned long long)r->max_ulp, why);
    else
        snprintf(text, len, "%s: outside the tolerance: %zu / %zu elements of '%s' outside %s, first at %s; %zu "
                 "differ in their bits, max ulp %llu (%s)", VD_FAIL, r->mismatched, r->n, out, pol, at,
                 r->bits_differ, (unsigned long long)r->max_ulp, why);
    return pass;
}

static int parity(const vd_evidence *e, char *text, size_t len)
{
    char head[256], where[512];
    snprintf(head, sizeof head, "bit parity between %s and %s at %s", e->class_a, e->class_b, e->point);
    if (e->inputs_differ) {
        snprintf(text, len, "skipped: %s: not compared: the runs saw other inputs (%s)", head, e->inputs_differ);
        return -1;
    }
    vd_diff_text(e->diff, where, sizeof where);
    if (!e->parity_expected) {
        snprintf(text, len, "%s: %s: not expected: %s; %s", VD_OK_DECLARED, head,
                 e->declared && *e->declared ? e->declared : "the points' numerics hashes differ",
                 e->diff->same ? "the bits agree nevertheless" : "the bits differ");
        size_t l = strlen(text);
        snprintf(text + l, len - l, ": %s", where);
        return 1;
    }
    if (e->diff->same)
        snprintf(text, len, "%s: %s: yes (%zu logical rows, %zu elements)", VD_OK, head, e->diff->rows,
                 e->diff->compared);
    else
        snprintf(text, len, "%s: %s: no: %s", VD_FAIL, head, where);
    return e->diff->same;
}

int vd_judge(const vd_evidence *e, char *text, size_t len)
{
    switch (e->kind) {
    case VD_TIER1: return tier1(e, text, len);
    case VD_TIER2: return tier2(e, text, len);
    case VD_PARITY: return parity(e, text, len);
    }
    snprintf(text, len, "%s: unknown evidence", VD_FAIL);
    return 0;
}
