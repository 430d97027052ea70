/* test_transcript.c: transcript match rates (parity/check/transcript.h).
 *
 * Transcripts are written inline; the expected divergences, lengths and
 * counts are worked out by hand from them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript.h"

static nx_status cmp_text(const char *c, const char *d, tscript_result *r, nx_err *e)
{
    return tscript_compare_text("c.jsonl", c, strlen(c), "d.jsonl", d, strlen(d), r, e);
}

static void ok_text(const char *c, const char *d, tscript_result *r)
{
    nx_err e = {0};
    nx_status st = cmp_text(c, d, r, &e);
    if (st != NX_OK)
        print_error("%s\n", e.msg);
    assert_int_equal(st, NX_OK);
}

static void bad_text(const char *c, const char *d, const char *want)
{
    tscript_result r;
    nx_err e = {0};
    assert_int_equal(cmp_text(c, d, &r, &e), NX_EINVAL);
    if (strcmp(e.msg, want) != 0) {
        print_error("got  \"%s\"\nwant \"%s\"\n", e.msg, want);
        fail();
    }
    assert_int_equal(r.nprompts, 0); /* nothing left to free */
}

static void test_by_line(void **state)
{
    (void)state;
    tscript_result r;
    ok_text("[1, 2, 3]\n[4, 5, 6]\n[7, 8]\n[9]\n", "[1, 2, 3]\n[4, 9, 6]\n[7, 8, 10]\n[9]\n", &r);
    assert_int_equal(r.matched_by, TSCRIPT_ID_LINE);
    assert_int_equal(r.nprompts, 4);
    assert_int_equal(r.identical, 2);
    assert_int_equal(r.diverged, 2);
    assert_int_equal(r.prompts[0].status, TSCRIPT_IDENTICAL);
    assert_int_equal(r.prompts[0].agreed, 3);
    /* in the middle */
    const tscript_prompt *p = &r.prompts[1];
    assert_int_equal(p->status, TSCRIPT_DIVERGED);
    assert_int_equal(p->agreed, 1);
    assert_true(p->has_control_token && p->has_candidate_token);
    assert_int_equal(p->control_token, 5);
    assert_int_equal(p->candidate_token, 9);
    /* a longer candidate: the control has ended at the divergence */
    p = &r.prompts[2];
    assert_int_equal(p->status, TSCRIPT_DIVERGED);
    assert_int_equal(p->agreed, 2);
    assert_int_equal(p->control_len, 2);
    assert_int_equal(p->candidate_len, 3);
    assert_false(p->has_control_token);
    assert_true(p->has_candidate_token);
    assert_int_equal(p->candidate_token, 10);
    assert_string_equal(p->id, "3");
    assert_int_equal(p->control_line, 3);
    /* 3 + 1 + 2 + 1 agreed over 3 + 3 + 3 + 1 */
    assert_int_equal(r.agreed_tokens, 7);
    assert_int_equal(r.total_tokens, 10);
    assert_true(tscript_match_rate(&r) == 0.5);
    assert_true(tscript_token_agreement(&r) == 0.7);
    assert_false(tscript_all_identical(&r));

    char *text = tscript_result_text(&r);
    assert_non_null(text);
    assert_string_equal(text,
                        "Transcripts: c.jsonl (control) vs d.jsonl (candidate), matched by line number\n"
                        "Prompts identical: 2 / 4 (50.0%)\n"
                        "Token agreement up to the first divergence: 7 / 10 (70.0%)\n"
                        "line 2: diverged at token 1: control 5, candidate 9 (lengths 3, 3; lines 2, 2)\n"
                        "line 3: diverged at token 2: control (ended), candidate 10 (lengths 2, 3; lines "
                        "3, 3)\n");
    free(text);
    tscript_result_free(&r);
}

static void test_by_id(void **state)
{
    (void)state;
    tscript_result r;
    /* a shorter candidate diverging at 0, reordered prompts, one missing
     * ("b"), one extra ("e"), an integer id that a string id does not match */
    ok_text("{\"prompt\": \"a\", \"tokens\": [5, 1, 2]}\n"
            "{\"prompt\": \"b\", \"tokens\": [1]}\n"
            "{\"tokens\": [3, 4], \"prompt\": \"c\"}\n"
            "{\"prompt\": 7, \"tokens\": []}\r\n",
            "{\"prompt\": \"c\", \"tokens\": [3]}\n"
            "{\"prompt\": 7, \"tokens\": []}\n"
            "{\"prompt\": \"a\", \"tokens\": [6, 1]}\n"
            "{\"prompt\": \"e\", \"tokens\": [8, 8]}\n",
            &r);
    assert_int_equal(r.matched_by, TSCRIPT_ID_STRING);
    assert_int_equal(r.nprompts, 5);
    const tscript_prompt *a = &r.prompts[0], *b = &r.prompts[1], *c = &r.prompts[2], *s = &r.prompts[3],
                         *e = &r.prompts[4];
    assert_string_equal(a->id, "a");
    assert_int_equal(a->status, TSCRIPT_DIVERGED);
    assert_int_equal(a->agreed, 0); /* divergence at 0 */
    assert_int_equal(a->control_token, 5);
    assert_int_equal(a->candidate_token, 6);
    assert_int_equal(a->control_line, 1);
    assert_int_equal(a->candidate_line, 3);
    assert_int_equal(b->status, TSCRIPT_MISSING);
    assert_int_equal(b->candidate_line, 0);
    assert_int_equal(c->status, TSCRIPT_DIVERGED);
    assert_int_equal(c->agreed, 1);
    assert_true(c->has_control_token);
    assert_false(c->has_candidate_token); /* the candidate ended */
    assert_int_equal(c->control_token, 4);
    assert_int_equal(s->id_kind, TSCRIPT_ID_INT);
    assert_string_equal(s->id, "7");
    assert_int_equal(s->status, TSCRIPT_IDENTICAL); /* two empty transcripts */
    assert_string_equal(e->id, "e");
    assert_int_equal(e->status, TSCRIPT_EXTRA);
    assert_int_equal(e->candidate_line, 4);
    assert_int_equal(r.identical, 1);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.extra, 1);
    /* agreed 0 + 0 + 1 + 0 + 0; total 3 + 1 + 2 + 0 + 2 */
    assert_int_equal(r.agreed_tokens, 1);
    assert_int_equal(r.total_tokens, 8);

    char *text = tscript_result_text(&r);
    assert_non_null(text);
    assert_string_equal(
        text, "Transcripts: c.jsonl (control) vs d.jsonl (candidate), matched by prompt id\n"
              "Prompts identical: 1 / 5 (20.0%)\n"
              "Token agreement up to the first divergence: 1 / 8 (12.5%)\n"
              "Missing from the candidate: 1; not in the control: 1\n"
              "prompt \"a\": diverged at token 0: control 5, candidate 6 (lengths 3, 2; lines 1, 3)\n"
              "prompt \"b\": missing from d.jsonl (control line 2, 1 tokens)\n"
              "prompt \"c\": diverged at token 1: control 4, candidate (ended) (lengths 2, 1; lines 3, 1)\n"
              "prompt \"e\": not in c.jsonl (candidate line 4, 2 tokens)\n");
    free(text);

    json_t *j = tscript_result_json(&r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "matched_by")), "prompt");
    assert_int_equal(json_integer_value(json_object_get(j, "prompts_identical")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "prompts_total")), 5);
    assert_true(json_real_value(json_object_get(j, "match_rate")) == 0.2);
    json_t *ps = json_object_get(j, "prompts");
    assert_int_equal(json_array_size(ps), 5);
    json_t *d0 = json_object_get(json_array_get(ps, 0), "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(d0, "position")), 0);
    assert_int_equal(json_integer_value(json_object_get(d0, "control_token")), 5);
    assert_int_equal(json_integer_value(json_object_get(d0, "candidate_token")), 6);
    json_t *d2 = json_object_get(json_array_get(ps, 2), "first_divergence");
    assert_true(json_is_null(json_object_get(d2, "candidate_token")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ps, 3), "prompt")), 7);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 1), "status")), "missing");
    json_decref(j);
    tscript_result_free(&r);

    /* "1" and 1 are different prompts */
    ok_text("{\"prompt\": 1, \"tokens\": [1]}\n", "{\"prompt\": \"1\", \"tokens\": [1]}\n", &r);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.extra, 1);
    assert_int_equal(r.identical, 0);
    tscript_result_free(&r);
}

static void test_identical(void **state)
{
    (void)state;
    tscript_result r;
    ok_text("[1, 2]\n[3]", "[1,2]\n[3]\n", &r); /* a missing final newline is fine */
    assert_true(tscript_all_identical(&r));
    assert_true(tscript_match_rate(&r) == 1.0);
    assert_true(tscript_token_agreement(&r) == 1.0);
    json_t *j = tscript_result_json(&r);
    assert_true(json_is_true(json_object_get(j, "pass")));
    json_decref(j);
    tscript_result_free(&r);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *ok = "[1]\n";
    bad_text("[1]\n[1, 2.5]\n", ok, "c.jsonl:2: token 1 is a real number, not an integer");
    bad_text(ok, "[1]\n[1, 2\n", "d.jsonl:2:5: ']' expected near end of file");
    bad_text("[1]\n\n[2]\n", ok, "c.jsonl:2: empty line (one transcript per line)");
    bad_text("{\"prompt\": \"a\", \"tokens\": [1], \"text\": \"hi\"}\n", ok,
             "c.jsonl:1: unknown key \"text\" (a transcript has \"prompt\" and \"tokens\")");
    bad_text("{\"prompt\": \"a\"}\n", ok, "c.jsonl:1: the object has no \"tokens\"");
    bad_text("{\"prompt\": \"a\", \"tokens\": 3}\n", ok, "c.jsonl:1: \"tokens\" is an integer, not an array");
    bad_text("{\"prompt\": 1.5, \"tokens\": []}\n", ok,
             "c.jsonl:1: \"prompt\" is a real number, not a string or an integer");
    bad_text("\"hello\"\n", ok, "c.jsonl:1: the line is a string, not an array of token ids or an object");
    bad_text("{\"prompt\": \"a\", \"tokens\": [1]}\n[2]\n", ok,
             "c.jsonl:2: this line has no prompt id but line 1 has one");
    bad_text("[2]\n{\"prompt\": \"a\", \"tokens\": [1]}\n", ok,
             "c.jsonl:2: this line has a prompt id but line 1 has none");
    bad_text("{\"prompt\": \"a\", \"tokens\": [1]}\n{\"prompt\": \"b\", \"tokens\": [1]}\n"
             "{\"prompt\": \"a\", \"tokens\": [2]}\n",
             "{\"prompt\": \"a\", \"tokens\": [1]}\n", "c.jsonl:3: prompt \"a\" repeats line 1");
    bad_text("{\"prompt\": \"a\", \"tokens\": [1]}\n", ok,
             "c.jsonl has prompt ids but d.jsonl has none: both or neither must");
    bad_text("", ok, "c.jsonl: no transcript in the file");
    bad_text("{\"tokens\": [1], \"tokens\": [2]}\n", ok,
             "c.jsonl:1:24: duplicate object key near '\"tokens\"'");
    bad_text("[1] [2]\n", ok, "c.jsonl:1:5: end of file expected near '['");
}

static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_transcript_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char c[128], d[128];
    snprintf(c, sizeof c, "%s/control.jsonl", dir);
    snprintf(d, sizeof d, "%s/candidate.jsonl", dir);
    FILE *f = fopen(c, "w");
    fputs("[1, 2, 3]\n[4]\n", f);
    fclose(f);
    f = fopen(d, "w");
    fputs("[1, 2, 4]\n[4]\n", f);
    fclose(f);
    tscript_result r;
    nx_err e = {0};
    assert_int_equal(tscript_compare_files(c, d, &r, &e), NX_OK);
    assert_int_equal(r.identical, 1);
    assert_int_equal(r.prompts[0].agreed, 2);
    assert_string_equal(r.control_name, c);
    tscript_result_free(&r);

    f = fopen(d, "w");
    fputs("[1, 2, 4]\n[4, x]\n", f);
    fclose(f);
    assert_int_equal(tscript_compare_files(c, d, &r, &e), NX_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "%s:2:", d);
    assert_true(strncmp(e.msg, want, strlen(want)) == 0);

    char missing[160];
    snprintf(missing, sizeof missing, "%s/nope.jsonl", dir);
    assert_int_equal(tscript_compare_files(c, missing, &r, &e), NX_EIO);
    assert_non_null(strstr(e.msg, missing));

    unlink(c);
    unlink(d);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_line),
        cmocka_unit_test(test_by_id),
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
