/* explain.c: `parity explain` (explain.h, docs/explain.md). */
#include "explain.h"

#include "diff.h"
#include "fit.h"
#include "nx_rowclass.h"
#include "nx_sbuf.h"
#include "point_toml.h"
#include "refimpl.h"
#include "trace_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_DEFAULT_ROWS 4096

/* One side of the explanation: a trace, or the reference of a trace's point. */
typedef struct side {
    char label[16];         /* "A", "B" */
    tc_trace c;
    int is_ref;             /* the exact reference of A's point (no trace of its own) */
    st_file in;             /* the side's inputs */
    int have_in;
    const int64_t *rows;    /* y's row i is logical row rows[i]; NULL: in batch order */
    ref_out_rows rr;        /* the reduction's rows (sampled) */
    int have_rr;
    char why_no_rows[1024];  /* why there are none */
    const fam_reduction *red;
    char *declared;         /* the declared point with y's format as its out (TOML) */
    size_t declared_bad;    /* rows the declared point does not reproduce */
    char *real;             /* the point the side realises (TOML), or NULL: none found */
    size_t nfit;            /* candidates of the space that fit every row */
    char *nearest_note;     /* how `real` was chosen among several */
    char fit_note[512];
} side;

static void side_init(side *s, const char *label)
{
    memset(s, 0, sizeof *s);
    snprintf(s->label, sizeof s->label, "%s", label);
    tc_trace_init(&s->c);
    st_init(&s->in);
}

static void side_free(side *s)
{
    tc_trace_free(&s->c);
    st_free(&s->in);
    if (s->have_rr)
        ref_out_rows_free(&s->rr);
    free(s->declared);
    free(s->real);
    free(s->nearest_note);
}

void ex_result_free(ex_result *r)
{
    free(r->text);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* The side's inputs: the trace's in.* tensors (in batch order) or those its
 * seed regenerates (logical rows; y's rows map through the batch). */
static nx_status side_inputs(side *s, nx_err *err)
{
    const trace *t = &s->c.t;
    for (size_t i = 0; i < t->file.ntensors; i++) {
        const st_tensor *x = &t->file.tensors[i];
        if (!trace_tensor_is_input(x))
            continue;
        st_tensor *o;
        nx_status st = st_add_tensor(&s->in, x->name + strlen(TRACE_INPUT_PREFIX), x->dtype, x->ndim, x->shape, &o, err);
        if (st)
            return st;
        memcpy(o->data, x->data, (size_t)x->nbytes);
        s->have_in = 1;
    }
    if (s->have_in) {
        s->rows = NULL; /* tc_check_trace set the spec's batch to the trace's rows */
        return NX_OK;
    }
    int d = nx_dist_from_name(t->dist);
    if (!t->has_seed || d < 0)
        return nx_err_set(err, NX_EINVAL, "%s: neither inputs nor a seed that regenerates them", t->path);
    ref_gen_opts go = {t->seed, (nx_dist)d, 0, 0};
    nx_status st = ref_generate(&s->c.spec, &go, &s->in, err);
    if (st)
        return st;
    s->have_in = 1;
    s->rows = t->rows;
    return NX_OK;
}

/* The point p with out = f (its classes' too), as canonical TOML. */
static char *with_out(const nx_point *p, nx_fmt f, nx_err *err)
{
    char *text = nx_point_print(p);
    if (!text) {
        nx_err_set(err, NX_ENOMEM, "out of memory");
        return NULL;
    }
    nx_point q;
    if (pt_from_text(text, "declared point", &q, err)) {
        free(text);
        return NULL;
    }
    free(text);
    q.out = (int)f;
    for (size_t i = 0; i < q.nclasses; i++)
        q.classes[i].pt->out = (int)f;
    text = nx_point_print(&q);
    nx_point_free(&q);
    if (!text)
        nx_err_set(err, NX_ENOMEM, "out of memory");
    return text;
}

/* Rows of the point (TOML) that do not give y's bits. */
static nx_status count_bad(const side *s, const char *toml, const ex_opts *o, size_t *bad, nx_err *err)
{
    nx_point p;
    nx_status st = pt_from_text(toml, "point", &p, err);
    if (st)
        return st;
    double *y = malloc((s->rr.rows ? s->rr.rows : 1) * sizeof *y);
    if (!y) {
        nx_point_free(&p);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    nx_rows in = {s->rr.rows, s->rr.a_fmt, s->rr.a, s->rr.b_fmt, s->rr.b, NX_FP64, NULL};
    st = nx_point_reduce(&p, &in, s->rr.n, s->rr.b != NULL, NX_ENGINE_FAST, o->threads, y, err);
    *bad = 0;
    for (size_t r = 0; !st && r < s->rr.rows; r++)
        if (memcmp(&y[r], &s->rr.y[r], sizeof y[r]) != 0 && !(isnan(y[r]) && isnan(s->rr.y[r])))
            (*bad)++;
    free(y);
    nx_point_free(&p);
    return st;
}

/* Lines of difference between two points given as TOML (SIZE_MAX when one
 * does not parse). */
static size_t point_distance(const char *x, const char *y, nx_sbuf *text)
{
    nx_point px, py;
    nx_err e = {0};
    if (pt_from_text(x, "a", &px, &e))
        return SIZE_MAX;
    if (pt_from_text(y, "b", &py, &e)) {
        nx_point_free(&px);
        return SIZE_MAX;
    }
    nx_sbuf tmp = {0};
    size_t nd = 0;
    nx_point_diff(text ? text : &tmp, &nd, &px, &py);
    free(nx_sbuf_take(&tmp));
    /* a tree of another kind is farther than the same kind with another
     * count (split(1, X) is X, but "split count 2 vs 1" says more) */
    if (!text)
        nd = 2 * nd + (px.tree->kind != py.tree->kind);
    nx_point_free(&px);
    nx_point_free(&py);
    return nd;
}

/* The rows of the side's reduction, its declared point, and the point it
 * realises: the declared one when it reproduces every row, else the fitting
 * candidate nearest to it.  `other` (may be NULL): the other side's
 * declared point, tried second. */
static nx_status realise(side *s, const char *other, const ex_opts *o, nx_err *err)
{
    nx_status st;
    nx_err e = {0};
    const st_tensor *y = trace_output(&s->c.t, "y");
    if (!y)
        return nx_err_set(err, NX_EINVAL, "%s: no output tensor 'y'", s->c.t.path);
    if ((st = ref_output_rows(&s->c.spec, &s->in, y, s->rows, o->max_rows ? o->max_rows : EX_DEFAULT_ROWS, &s->rr,
                              &e))) {
        if (st != NX_EUNSUPPORTED) {
            *err = e;
            return st;
        }
        snprintf(s->why_no_rows, sizeof s->why_no_rows, "%s", e.msg);
        return NX_OK;
    }
    s->have_rr = 1;
    for (size_t i = 0; i < s->c.spec.nreds; i++)
        if (!strcmp(s->c.spec.reds[i].name, s->rr.reduction))
            s->red = &s->c.spec.reds[i];
    if (!s->red)
        return nx_err_set(err, NX_EINTERNAL, "%s: reduction '%s' not in the point", s->c.id, s->rr.reduction);
    if (!(s->declared = with_out(&s->red->point, s->rr.y_fmt, err)))
        return err->code ? err->code : NX_ENOMEM;
    if ((st = count_bad(s, s->declared, o, &s->declared_bad, err)))
        return st;

    /* the search: the declared point first, the other side's second, then
     * the default space */
    fit_space sp;
    fit_space_init(&sp, s->rr.y_fmt);
    fit_ctx ctx = {s->rr.y_fmt, s->rr.a_fmt, s->rr.b != NULL};
    fit_result fr;
    memset(&fr, 0, sizeof fr);
    if ((st = fit_space_add_point(&sp, s->declared, err)) ||
        (other && strcmp(other, s->declared) && (st = fit_space_add_point(&sp, other, err))) ||
        (st = fit_space_default(&sp, &ctx, 0, err)))
        goto out;
    fit_pair pair = {{s->rr.rows, s->rr.a_fmt, s->rr.a, s->rr.b_fmt, s->rr.b, NX_FP64, NULL}, s->rr.n,
                     s->rr.b != NULL, s->rr.y, 0, 0}; /* no grid: one point, no classes */
    /* one point per side: row classes fitted on a few rows explain anything */
    fit_opts fo = {o->threads, 0, o->progress, NX_ENGINE_FAST, 0, 1, 0};
    if ((st = fit_run(&pair, 1, &sp, &fo, &fr, err)))
        goto out;
    s->nfit = fr.nfit;
    if (!fr.found) {
        if (fr.nnear) {
            char *t = fit_cand_text(&sp, fr.near[0].cand);
            snprintf(s->fit_note, sizeof s->fit_note, "no point of the space reproduces every row (closest: %s, %zu rows differ)",
                     t ? t : "?", fr.near[0].mismatches);
            free(t);
        } else {
            snprintf(s->fit_note, sizeof s->fit_note, "no point of the space reproduces every row");
        }
        goto out;
    }
    if (s->declared_bad == 0) {
        s->real = strdup(s->declared);
    } else {
        /* the winner and the other fitting candidates: the one nearest to
         * the declared point names the port's slip most simply */
        size_t best = SIZE_MAX;
        char *pick = NULL;
        size_t nc = 0;
        for (size_t i = 0; i <= fr.nalt; i++) {
            char *canon = NULL;
            if (i == 0) {
                canon = strdup(fr.point);
            } else {
                nx_point p;
                nx_err pe = {0};
                if (fit_cand_point(&sp, fr.alt[i - 1], &p, &pe) == NX_OK) {
                    canon = nx_point_print(&p);
                    nx_point_free(&p);
                }
            }
            if (!canon)
                continue;
            nc++;
            size_t d = point_distance(s->declared, canon, NULL);
            if (d < best) {
                best = d;
                free(pick);
                pick = canon;
            } else {
                free(canon);
            }
        }
        s->real = pick;
        if (nc > 1) {
            char note[160];
            snprintf(note, sizeof note, "the nearest to the declared point of %zu that fit", nc);
            s->nearest_note = strdup(note);
        }
    }
out:
    fit_result_free(&fr);
    fit_space_free(&sp);
    return st;
}

/* What a side is, in one line. */
static void put_side_head(nx_sbuf *b, const side *s)
{
    const trace *t = &s->c.t;
    if (s->is_ref) {
        nx_sbuf_printf(b, "%s: the exact reference of %s on class %s\n", s->label, s->c.id, t->class_name);
        return;
    }
    nx_sbuf_printf(b, "%s: %s (class %s, %s, kernel %s, %s, batch %s)\n", s->label, t->path, t->class_name, s->c.id,
                   t->kernel, trace_mode_name(t->mode), t->batch);
}

static void put_realised(nx_sbuf *b, const side *s)
{
    if (!s->have_rr) {
        nx_sbuf_printf(b, "  realised point: not found: %s\n", s->why_no_rows);
        return;
    }
    char sampled[96] = "";
    if (s->rr.rows < s->rr.total)
        snprintf(sampled, sizeof sampled, " (%zu of %zu, evenly spaced)", s->rr.rows, s->rr.total);
    nx_sbuf_printf(b, "  reduction '%s': %zu rows%s of %zu terms, output %s\n", s->rr.reduction, s->rr.rows, sampled,
                   s->rr.n, nx_format(s->rr.y_fmt)->name);
    nx_sbuf_printf(b, "  declared: %s\n", s->declared);
    if (s->declared_bad == 0)
        nx_sbuf_printf(b, "  the declared point reproduces every row\n");
    else
        nx_sbuf_printf(b, "  the declared point does not reproduce %zu of %zu rows\n", s->declared_bad, s->rr.rows);
    if (s->real && s->declared_bad)
        nx_sbuf_printf(b, "  realised: %s%s%s%s\n", s->real, s->nearest_note ? " (" : "",
                       s->nearest_note ? s->nearest_note : "", s->nearest_note ? ")" : "");
    else if (!s->real)
        nx_sbuf_printf(b, "  realised: not found: %s\n", s->fit_note);
    if (s->nfit > 1)
        nx_sbuf_printf(b, "  %zu points of the space fit these rows: the inputs cannot tell them apart\n", s->nfit);
}

static json_t *jstr(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* One side as JSON: what it is, the reduction's rows, the declared and the
 * realised point. */
static json_t *side_json(const side *s)
{
    const trace *t = &s->c.t;
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(s->label));
    json_object_set_new(o, "trace", s->is_ref ? json_null() : json_string(t->path));
    json_object_set_new(o, "class", json_string(t->class_name));
    json_object_set_new(o, "point", json_string(s->c.id));
    json_object_set_new(o, "kernel", s->is_ref ? json_null() : json_string(t->kernel));
    json_object_set_new(o, "batch", s->is_ref ? json_null() : json_string(t->batch));
    if (s->is_ref)
        return o;
    if (!s->have_rr) {
        json_object_set_new(o, "no_rows", json_string(s->why_no_rows));
        return o;
    }
    json_object_set_new(o, "reduction", json_string(s->rr.reduction));
    json_object_set_new(o, "rows", json_integer((json_int_t)s->rr.rows));
    json_object_set_new(o, "rows_total", json_integer((json_int_t)s->rr.total));
    json_object_set_new(o, "terms", json_integer((json_int_t)s->rr.n));
    json_object_set_new(o, "out", json_string(nx_format(s->rr.y_fmt)->name));
    json_object_set_new(o, "declared", jstr(s->declared));
    json_object_set_new(o, "declared_mismatched_rows", json_integer((json_int_t)s->declared_bad));
    json_object_set_new(o, "realised", jstr(s->real));
    json_object_set_new(o, "points_fitting", json_integer((json_int_t)s->nfit));
    if (!s->real)
        json_object_set_new(o, "not_found", json_string(s->fit_note));
    return o;
}

/* Two traces are one run's two sides only where they computed the same
 * problem: the same shape, and where both regenerate their inputs from a
 * seed, the same seed and distribution.  Otherwise their outputs differ
 * for reasons no point names (and agree where the inputs hide a
 * difference): an input error naming what differs, never "same". */
static nx_status same_inputs(const char *a, const trace *ta, const char *b, const trace *tb, nx_err *err)
{
    int shape_same = ta->nshape == tb->nshape;
    for (size_t i = 0; shape_same && i < ta->nshape; i++)
        shape_same = !strcmp(ta->shape[i].name, tb->shape[i].name) && ta->shape[i].value == tb->shape[i].value;
    if (!shape_same) {
        nx_sbuf sa = {0}, sb = {0};
        for (size_t i = 0; i < ta->nshape; i++)
            nx_sbuf_printf(&sa, "%s%s=%lld", i ? "," : "", ta->shape[i].name, (long long)ta->shape[i].value);
        for (size_t i = 0; i < tb->nshape; i++)
            nx_sbuf_printf(&sb, "%s%s=%lld", i ? "," : "", tb->shape[i].name, (long long)tb->shape[i].value);
        char *x = nx_sbuf_take(&sa), *y = nx_sbuf_take(&sb);
        nx_status st = nx_err_set(err, NX_EINVAL, "%s has shape %s, %s has shape %s: different problems, nothing to "
                                  "compare", a, x ? x : "?", b, y ? y : "?");
        free(x), free(y);
        return st;
    }
    if (ta->has_seed && tb->has_seed && ta->seed != tb->seed)
        return nx_err_set(err, NX_EINVAL, "%s has seed %llu, %s has seed %llu: different inputs, nothing to compare",
                          a, (unsigned long long)ta->seed, b, (unsigned long long)tb->seed);
    if (ta->has_seed && tb->has_seed && strcmp(ta->dist ? ta->dist : "", tb->dist ? tb->dist : ""))
        return nx_err_set(err, NX_EINVAL, "%s has inputs of distribution %s, %s of %s: different inputs, nothing to "
                          "compare", a, ta->dist ? ta->dist : "?", b, tb->dist ? tb->dist : "?");
    return NX_OK;
}

static nx_status open_side(const reg_registry *reg, const char *path, side *s, nx_err *err)
{
    nx_status st = trace_read(path, &s->c.t, err);
    if (st)
        return st;
    if ((st = tc_check_trace(reg, NULL, NULL, ref_engine_default(), &s->c, err)))
        return st;
    return side_inputs(s, err);
}

nx_status ex_explain(const reg_registry *reg, const char *a, const char *b, const ex_opts *o, ex_result *r,
                     nx_err *err)
{
    memset(r, 0, sizeof *r);
    side A, B;
    side_init(&A, "A");
    side_init(&B, "B");
    nx_sbuf out = {0};
    char *diff_text = NULL; /* the difference's lines, for the JSON */
    nx_status st;
    if ((st = open_side(reg, a, &A, err)))
        goto done;
    if (b) {
        if ((st = open_side(reg, b, &B, err)))
            goto done;
        if (strcmp(A.c.t.family, B.c.t.family) != 0) {
            st = nx_err_set(err, NX_EINVAL, "%s is of family %s, %s of family %s: nothing to compare", a,
                            A.c.t.family, b, B.c.t.family);
            goto done;
        }
        if ((st = same_inputs(a, &A.c.t, b, &B.c.t, err)))
            goto done;
    }

    /* the diff */
    nx_sbuf_printf(&out, "parity explain: %s %s %s\n", a, b ? "vs" : "vs the reference of its point,", b ? b : A.c.id);
    put_side_head(&out, &A);
    if (b) {
        put_side_head(&out, &B);
        const st_tensor *ya = trace_output(&A.c.t, "y"), *yb = trace_output(&B.c.t, "y");
        int same_rows = A.c.t.nrows == B.c.t.nrows &&
                        !memcmp(A.c.t.rows, B.c.t.rows, A.c.t.nrows * sizeof *A.c.t.rows);
        diff_result dr;
        memset(&dr, 0, sizeof dr);
        nx_err de = {0};
        if (ya && yb && same_rows && diff_tensors(ya, yb, NULL, &dr, &de) == NX_OK) {
            r->mismatched = dr.mismatched;
            r->compared = dr.n;
            if (dr.mismatched)
                nx_sbuf_printf(&out, "diff: %zu of %zu elements of 'y' differ in bits (first at element %zu: 0x%llx vs 0x%llx)\n",
                               dr.mismatched, dr.n, dr.first.index, (unsigned long long)dr.first.a_bits,
                               (unsigned long long)dr.first.b_bits);
            else
                nx_sbuf_printf(&out, "diff: all %zu elements of 'y' agree in bits\n", dr.n);
            diff_result_free(&dr);
        } else {
            /* different batches: each side against the reference of its point */
            r->mismatched = A.c.r.ndiff + B.c.r.ndiff;
            r->compared = ya && yb ? (size_t)(ya->nelem + yb->nelem) : 0;
            if (!same_rows)
                nx_sbuf_printf(&out, "diff: the traces' batches differ (%s; %s): each is compared with its reference\n",
                               A.c.t.batch, B.c.t.batch);
            else
                nx_sbuf_printf(&out, "diff: the outputs cannot be compared element by element (%s): each is compared "
                                     "with its reference\n",
                               de.code ? de.msg : "an output 'y' is missing");
            nx_sbuf_printf(&out, "  A: %zu elements differ from the reference; B: %zu\n", A.c.r.ndiff, B.c.r.ndiff);
        }
    } else {
        B.is_ref = 1;
        snprintf(B.label, sizeof B.label, "reference");
        const st_tensor *ya = trace_output(&A.c.t, "y");
        r->mismatched = A.c.r.ndiff;
        r->compared = ya ? (size_t)ya->nelem : 0;
        if (A.c.r.ndiff)
            nx_sbuf_printf(&out, "diff: %zu of %zu elements of 'y' differ from the reference in bits\n", A.c.r.ndiff,
                           r->compared);
        else
            nx_sbuf_printf(&out, "diff: all %zu elements of 'y' agree with the reference in bits\n", r->compared);
    }
    if (r->mismatched == 0) {
        nx_sbuf_printf(&out, "nothing to explain: the outputs agree in every bit\n");
        r->outcome = EX_SAME;
        goto done;
    }

    /* the points each side realises */
    nx_err e = {0};
    if ((st = realise(&A, NULL, o, err)))
        goto done;
    if (b && (st = realise(&B, A.declared, o, err)))
        goto done;
    (void)e;
    nx_sbuf_printf(&out, "A realises:\n");
    put_realised(&out, &A);
    if (b) {
        nx_sbuf_printf(&out, "B realises:\n");
        put_realised(&out, &B);
    }

    /* the difference */
    const char *pa = A.real, *pb = b ? B.real : A.declared;
    const char *la = "A", *lb = b ? "B" : "the declared point";
    if (!b) {
        /* declared vs realised reads better in that order */
        pa = A.declared;
        pb = A.real;
        la = "declared";
        lb = "realised";
    }
    r->outcome = EX_UNEXPLAINED;
    if (pa && pb) {
        nx_sbuf d = {0};
        size_t nd = point_distance(pa, pb, &d);
        char *dt = nx_sbuf_take(&d);
        if (nd && nd != SIZE_MAX) {
            nx_sbuf_printf(&out, "difference (%s vs %s), reduction '%s':\n%s", la, lb, A.rr.reduction, dt ? dt : "");
            r->differences = nd;
            r->outcome = EX_EXPLAINED;
            diff_text = dt ? strdup(dt) : NULL;
        } else {
            nx_sbuf_printf(&out, "difference: none found: both sides realise the same point of reduction '%s' on "
                                 "these rows; the bits differ elsewhere (another reduction, an elementwise step or the "
                                 "epilogue)\n",
                           A.rr.reduction);
        }
        free(dt);
    } else {
        nx_sbuf_printf(&out, "difference: not named: a side's realised point was not found\n");
    }
done:
    r->text = nx_sbuf_take(&out);
    if (!st && !r->text)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    if (!st) {
        static const char *const outcomes[] = {"same", "explained", "unexplained"};
        json_t *j = json_object(), *sides = json_array();
        json_object_set_new(j, "a", json_string(a));
        json_object_set_new(j, "b", b ? json_string(b) : json_null());
        json_object_set_new(j, "family", json_string(A.c.t.family));
        json_object_set_new(j, "outcome", json_string(outcomes[r->outcome]));
        json_object_set_new(j, "mismatched", json_integer((json_int_t)r->mismatched));
        json_object_set_new(j, "compared", json_integer((json_int_t)r->compared));
        json_array_append_new(sides, side_json(&A));
        if (b)
            json_array_append_new(sides, side_json(&B));
        json_object_set_new(j, "sides", sides);
        json_t *lines = json_array();
        for (const char *p = diff_text; p && *p;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            while (n && *p == ' ')
                p++, n--;
            json_array_append_new(lines, json_stringn(p, n));
            p += n + (nl != NULL);
        }
        json_object_set_new(j, "difference", lines);
        r->json = j;
    }
    free(diff_text);
    side_free(&A);
    side_free(&B);
    return st;
}
