/* test_inputs.c - bad input (clear errors naming file and line) and the
 * checks of a submission against the rules of the task. */
#include "te_test.h"

#define GOLD_HEADER "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"
#define GOLD_ROW1 "1,_, , ,很好,0,2,整体,正面\n"

static void fails(te_input kind, const char *text, te_status code, const char *message)
{
    te_eval *ev = te_eval_new(NULL);
    te_error err = {TE_OK, ""};
    load_fails(ev, kind, "in.csv", text, strlen(text), code, &err);
    assert_string_equal(err.message, message);
    te_eval_free(ev);
}

static void test_missing_file(void **state)
{
    (void)state;
    te_eval *ev = te_eval_new(NULL);
    te_error err = {TE_OK, ""};
    assert_int_equal(te_eval_load_file(ev, TE_INPUT_GOLD, "/nonexistent/gold.csv", &err),
                     TE_ERR_IO);
    assert_string_equal(err.message, "/nonexistent/gold.csv: cannot open: No such file or directory");
    assert_int_equal(te_eval_load_file(ev, TE_INPUT_PREDICTIONS, "/", &err), TE_ERR_IO);
    assert_string_equal(err.message, "/: cannot read: Is a directory");
    assert_int_equal(te_eval_load_file(ev, TE_INPUT_GOLD, NULL, &err), TE_ERR_ARG);
    assert_int_equal(te_eval_load_file(NULL, TE_INPUT_GOLD, "x", &err), TE_ERR_ARG);
    assert_int_equal(te_eval_load_buffer(ev, (te_input)7, "x", "1", 1, &err), TE_ERR_ARG);
    /* Without an error struct the status is still right. */
    assert_int_equal(te_eval_load_file(ev, TE_INPUT_GOLD, "/nonexistent/gold.csv", NULL), TE_ERR_IO);
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_GOLD, NULL, "", 0, NULL), TE_ERR_FORMAT);
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_GOLD, NULL, "\"", 1, NULL), TE_ERR_FORMAT);
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_GOLD, NULL, "\xFF", 1, NULL), TE_ERR_FORMAT);
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_GOLD, NULL, NULL, 0, &err), TE_ERR_FORMAT);
    assert_string_equal(err.message, "<memory>: empty file");
    te_eval_free(ev);
}

static void test_field_count(void **state)
{
    (void)state;
    fails(TE_INPUT_PREDICTIONS, "1,_,好,整体,正面\n2,_,好,整体\n", TE_ERR_FORMAT,
          "in.csv:2: 4 fields, expected 5 for predictions (id,AspectTerm,OpinionTerm,Category,Polarity)");
    fails(TE_INPUT_PREDICTIONS, "1,_,好,整体,正面\n\n\n2,_,好,整体,正面,x\n", TE_ERR_FORMAT,
          "in.csv:4: 6 fields, expected 5 for predictions (id,AspectTerm,OpinionTerm,Category,Polarity)");
    /* A review holding a comma must be quoted; unquoted it splits into 3 fields. */
    fails(TE_INPUT_REVIEWS, "id,Reviews\n1,好\n2,好,用\n", TE_ERR_FORMAT,
          "in.csv:3: 3 fields, expected 2 for reviews (id,Reviews)");
    fails(TE_INPUT_GOLD, GOLD_HEADER "1,_, , ,很好,0,2,整体\n", TE_ERR_FORMAT,
          "in.csv:2: 8 fields, expected 9 for gold labels "
          "(id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities)");
}

static void test_bad_ids(void **state)
{
    (void)state;
    fails(TE_INPUT_PREDICTIONS, "1,_,好,整体,正面\nabc,_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:2: id \"abc\" is not a non-negative integer");
    fails(TE_INPUT_PREDICTIONS, "-3,_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: id \"-3\" is not a non-negative integer");
    fails(TE_INPUT_PREDICTIONS, "1.5,_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: id \"1.5\" is not a non-negative integer");
    fails(TE_INPUT_PREDICTIONS, ",_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: id \"\" is not a non-negative integer");
    fails(TE_INPUT_PREDICTIONS, "99999999999999999999999,_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: id \"99999999999999999999999\" is too large");
    fails(TE_INPUT_GOLD, GOLD_HEADER "x1,_, , ,很好,0,2,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:2: id \"x1\" is not a non-negative integer");
    fails(TE_INPUT_REVIEWS, "id,Reviews\n1,a\n1 2,b\n", TE_ERR_FORMAT,
          "in.csv:3: id \"1 2\" is not a non-negative integer");
    /* A long bad value is cut in the message. */
    fails(TE_INPUT_PREDICTIONS,
          "好好好好好好好好好好好好好好好好好好好好,_,好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: id \"好好好好好好好好好好好好好...\" is not a non-negative integer");
    /* Blanks around an id are allowed. */
    te_eval *ev = eval_of(GOLD_HEADER " 1 ,_, , ,很好,0,2,整体,正面\n", "\"1 \",_,很好,整体,正面\n", NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_bad_offsets(void **state)
{
    (void)state;
    fails(TE_INPUT_GOLD, GOLD_HEADER "1,味道,0,x,_, , ,气味,中性\n", TE_ERR_FORMAT,
          "in.csv:2: A_end \"x\" is not a non-negative integer");
    fails(TE_INPUT_GOLD, GOLD_HEADER "1,_, , ,好,-1,1,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:2: O_start \"-1\" is not a non-negative integer");
}

static void test_empty_files(void **state)
{
    (void)state;
    fails(TE_INPUT_PREDICTIONS, "", TE_ERR_FORMAT, "in.csv: empty file");
    fails(TE_INPUT_GOLD, "", TE_ERR_FORMAT, "in.csv: empty file");
    fails(TE_INPUT_REVIEWS, "", TE_ERR_FORMAT, "in.csv: empty file");
    fails(TE_INPUT_PREDICTIONS, "\n\r\n\n", TE_ERR_FORMAT, "in.csv: empty file");
    fails(TE_INPUT_PREDICTIONS, "\xEF\xBB\xBF", TE_ERR_FORMAT, "in.csv: empty file");
    fails(TE_INPUT_GOLD, GOLD_HEADER, TE_ERR_FORMAT, "in.csv: no data rows after the header");
    fails(TE_INPUT_REVIEWS, "id,Reviews\r\n", TE_ERR_FORMAT, "in.csv: no data rows after the header");
    fails(TE_INPUT_PREDICTIONS, "id,AspectTerm,OpinionTerm,Category,Polarity\n", TE_ERR_FORMAT,
          "in.csv: no data rows after the header");
    /* An empty file on disk, through the file loader. */
    char path[64];
    write_temp(path, "", 0);
    te_eval *ev = te_eval_new(NULL);
    te_error err;
    assert_int_equal(te_eval_load_file(ev, TE_INPUT_PREDICTIONS, path, &err), TE_ERR_FORMAT);
    assert_contains(err.message, path);
    assert_contains(err.message, ": empty file");
    te_eval_free(ev);
    unlink(path);
}

/* A file of one kind given where another is expected. */
static void test_wrong_kind(void **state)
{
    (void)state;
    fails(TE_INPUT_PREDICTIONS, GOLD_HEADER GOLD_ROW1, TE_ERR_FORMAT,
          "in.csv:1: header with 9 fields: this looks like a gold labels file "
          "(id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities), but "
          "predictions are expected (no header, 5 fields: id,AspectTerm,OpinionTerm,Category,Polarity)");
    fails(TE_INPUT_GOLD, "1,_,很好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: 5 fields: this looks like a predictions file "
          "(id,AspectTerm,OpinionTerm,Category,Polarity), but gold labels are expected (a header, "
          "then 9 fields: id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities)");
    fails(TE_INPUT_PREDICTIONS, "id,Reviews\n1,很好\n", TE_ERR_FORMAT,
          "in.csv:1: header with 2 fields: this looks like a reviews file (id,Reviews), but "
          "predictions are expected (no header, 5 fields: id,AspectTerm,OpinionTerm,Category,Polarity)");
    fails(TE_INPUT_GOLD, "id,Reviews\n1,很好\n", TE_ERR_FORMAT,
          "in.csv:1: header with 2 fields: this looks like a reviews file (id,Reviews), but gold "
          "labels are expected (a header, then 9 fields: "
          "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities)");
    fails(TE_INPUT_REVIEWS, GOLD_HEADER GOLD_ROW1, TE_ERR_FORMAT,
          "in.csv:1: header with 9 fields: this looks like a gold labels file "
          "(id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities), but "
          "reviews are expected (a header, then 2 fields: id,Reviews)");
    /* Gold rows without their header, given as predictions. */
    fails(TE_INPUT_PREDICTIONS, GOLD_ROW1, TE_ERR_FORMAT,
          "in.csv:1: 9 fields: this looks like a gold labels file "
          "(id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities), but "
          "predictions are expected (no header, 5 fields: id,AspectTerm,OpinionTerm,Category,Polarity)");
    /* Gold without a header is read. */
    te_eval *ev = eval_of(GOLD_ROW1, "1,_,很好,整体,正面\n", NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_encoding_errors(void **state)
{
    (void)state;
    fails(TE_INPUT_PREDICTIONS, "1,_,很好,整体,正面\n2,_,\xE5\xBE,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:2: invalid UTF-8 (byte 0xE5 at byte 5 of the line); the files must be UTF-8");
    /* GBK text, a common mistake with Chinese files. */
    fails(TE_INPUT_REVIEWS, "id,Reviews\n1,\xBA\xC3\n", TE_ERR_FORMAT,
          "in.csv:2: invalid UTF-8 (byte 0xBA at byte 3 of the line); the files must be UTF-8");
    fails(TE_INPUT_PREDICTIONS, "1,_,\"很好,整体,正面\n", TE_ERR_FORMAT,
          "in.csv:1: a quoted field opened here is never closed");
    te_eval *ev = te_eval_new(NULL);
    te_error err;
    load_fails(ev, TE_INPUT_PREDICTIONS, "in.csv", "1,_,a\0b,c,d\n", 12, TE_ERR_FORMAT, &err);
    assert_string_equal(err.message, "in.csv:1: NUL byte: not a text file");
    te_eval_free(ev);
}

static void test_duplicate_review(void **state)
{
    (void)state;
    fails(TE_INPUT_REVIEWS, "id,Reviews\n1,a\n2,b\n1,c\n", TE_ERR_FORMAT,
          "in.csv:4: review id 1 appears twice (first at in.csv:2)");
    /* Across two files. */
    te_eval *ev = eval_of(NULL, NULL, "id,Reviews\n1,a\n2,b\n");
    te_error err;
    load_fails(ev, TE_INPUT_REVIEWS, "more.csv", "id,Reviews\n3,c\n2,d\n", 19, TE_ERR_FORMAT, &err);
    assert_string_equal(err.message, "more.csv:3: review id 2 appears twice (first at reviews.csv:3)");
    /* The failed file left nothing behind; id 3 is free again. */
    load_ok(ev, TE_INPUT_REVIEWS, "again.csv", "id,Reviews\n3,c\n");
    te_result *res = score_ok(ev);
    assert_int_equal(te_result_input(res, TE_INPUT_REVIEWS).rows, 3);
    te_result_free(res);
    te_eval_free(ev);
}

/* A load that fails halfway keeps none of its rows. */
static void test_failed_load_rolls_back(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER GOLD_ROW1, "1,_,很好,整体,正面\n", NULL);
    te_error err;
    const char bad[] = "2,_,好,整体,正面\n3,_,好,整体,正面\n4,_,好\n";
    load_fails(ev, TE_INPUT_PREDICTIONS, "bad.csv", bad, strlen(bad), TE_ERR_FORMAT, &err);
    assert_contains(err.message, "bad.csv:3: 3 fields");
    const char bad_gold[] = "\xEF\xBB\xBF" GOLD_HEADER "2,_, , ,好,0,1,整体,正面\nx\n";
    load_fails(ev, TE_INPUT_GOLD, "bad_gold.csv", bad_gold, strlen(bad_gold), TE_ERR_FORMAT, &err);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    assert_string_equal(te_result_input(res, TE_INPUT_PREDICTIONS).file, "pred.csv");
    assert_int_equal(te_result_n_issues(res), 0); /* the BOM note went too */
    te_result_free(res);
    te_eval_free(ev);
}

/* Many rows and a long review: nothing is of fixed size. */
static void test_oversize(void **state)
{
    (void)state;
    size_t rows = 60000, review_len = 2 * 1024 * 1024;
    size_t cap = rows * 40 + 64;
    char *pred = malloc(cap), *gold = malloc(cap + 128), *reviews = malloc(review_len + 64);
    size_t np = 0, ng = (size_t)sprintf(gold, "%s", GOLD_HEADER);
    for (size_t i = 0; i < rows; i++) {
        np += (size_t)sprintf(pred + np, "%zu,_,好%zu,整体,正面\n", i / 3, i % 3);
        if (i % 2 == 0)
            ng += (size_t)sprintf(gold + ng, "%zu,_, , ,好%zu,0,2,整体,正面\n", i / 3, i % 3);
    }
    size_t nr = (size_t)sprintf(reviews, "id,Reviews\n0,\"");
    for (size_t i = 0; i < review_len; i++)
        reviews[nr++] = i % 3 == 2 ? 'a' : '"'; /* ""a""a...: quotes doubled inside */
    nr += (size_t)sprintf(reviews + nr, "好0\"\n");
    te_eval *ev = te_eval_new(NULL);
    te_error err;
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_GOLD, "g", gold, ng, &err), TE_OK);
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_PREDICTIONS, "p", pred, np, &err), TE_OK);
    te_result *res = score_ok(ev);
    /* Every even row is gold: S = G = 30000, P = 60000. */
    check_score(te_result_overall(res), 30000, 60000, 30000);
    te_result_free(res);
    /* With the long review (quotes inside a quoted field, doubled). */
    assert_int_equal(te_eval_load_buffer(ev, TE_INPUT_REVIEWS, "r", reviews, nr, &err), TE_OK);
    res = score_ok(ev);
    te_span_counts sp = te_result_spans(res);
    assert_int_equal(sp.no_review, 60000 - 3);
    assert_int_equal(sp.opinion_outside, 2); /* 好1 and 好2 of id 0 */
    te_result_free(res);
    te_eval_free(ev);
    free(pred);
    free(gold);
    free(reviews);
}

/* ------------------------------------------------------------------ checks */

static const char reviews3[] = "id,Reviews\n1,很好\n2,物流快\n3,一般\n";

static void test_checks_clean(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER GOLD_ROW1 "2,物流,0,2,快,2,3,物流,正面\n",
                          "1,_,很好,整体,正面\n2,物流,快,物流,正面\n3,_,_,_,_\n", reviews3);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 2, 2, 2);
    assert_int_equal(te_result_n_issues(res), 0);
    assert_int_equal(te_result_n_violations(res), 0);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_checks_ids(void **state)
{
    (void)state;
    /* Id 2 missing, id 7 unknown, id 1 after id 3. */
    te_eval *ev = eval_of(GOLD_HEADER GOLD_ROW1,
                          "3,_,_,_,_\n1,_,很好,整体,正面\n7,_,好,整体,正面\n7,_,好,整体,正面\n",
                          reviews3);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 3, 1);
    assert_int_equal(te_result_n_violations(res), 3);
    const te_issue *is = issue_of(res, TE_ISSUE_ORDER);
    assert_int_equal(is->rule, 1);
    assert_int_equal(is->line, 2);
    assert_int_equal(is->id, 1);
    assert_string_equal(is->file, "pred.csv");
    assert_string_equal(is->message, "id 1 comes after id 3: ids must be in order");
    is = issue_of(res, TE_ISSUE_UNKNOWN_ID);
    assert_int_equal(is->line, 3); /* reported once, at its first row */
    assert_int_equal(count_issues(res, TE_ISSUE_UNKNOWN_ID), 1);
    assert_string_equal(is->message, "id 7 is not an id of the reviews");
    is = issue_of(res, TE_ISSUE_MISSING_ID);
    assert_int_equal(is->id, 2);
    assert_int_equal(is->line, 0);
    assert_string_equal(is->message, "id 2 of the reviews is missing: every review needs a row "
                                     "(2,_,_,_,_ when it has no quadruple)");
    /* Issues come in the documented order: rows first, then missing ids. */
    assert_int_equal(te_result_issue(res, 0)->kind, TE_ISSUE_ORDER);
    assert_int_equal(te_result_issue(res, 1)->kind, TE_ISSUE_UNKNOWN_ID);
    assert_int_equal(te_result_issue(res, 2)->kind, TE_ISSUE_MISSING_ID);
    te_result_free(res);
    te_eval_free(ev);

    /* Without reviews, gold ids are the ones expected, and no id is unknown. */
    ev = eval_of(GOLD_HEADER GOLD_ROW1 "4,_, , ,好,0,1,整体,正面\n", "1,_,很好,整体,正面\n9,_,好,整体,正面\n",
                 NULL);
    res = score_ok(ev);
    assert_int_equal(te_result_n_violations(res), 1);
    is = issue_of(res, TE_ISSUE_MISSING_ID);
    assert_int_equal(is->id, 4);
    assert_string_equal(is->message, "id 4 of the gold labels is missing: every review needs a row "
                                     "(4,_,_,_,_ when it has no quadruple)");
    te_result_free(res);
    te_eval_free(ev);
}

static void test_checks_labels_and_terms(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER GOLD_ROW1,
                          "1,_,很好,外观,正面\n1,_,很好,整体,好评\n1,,很好,整体,正面\n1,_,,整体,正面\n"
                          "1,_,_,_,_\n",
                          NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 0, 4, 1);
    const te_issue *is = issue_of(res, TE_ISSUE_CATEGORY);
    assert_int_equal(is->line, 1);
    assert_string_equal(is->message, "category \"外观\" is not in the set (包装 成分 尺寸 服务 功效 "
                                     "价格 气味 使用体验 物流 新鲜度 真伪 整体 其他)");
    is = issue_of(res, TE_ISSUE_POLARITY);
    assert_int_equal(is->line, 2);
    assert_string_equal(is->message, "polarity \"好评\" is not in the set (正面 中性 负面)");
    assert_int_equal(count_issues(res, TE_ISSUE_EMPTY_TERM), 2);
    assert_string_equal(issue_of(res, TE_ISSUE_EMPTY_TERM)->message,
                        "empty aspect; write _ for an implicit one");
    is = issue_of(res, TE_ISSUE_PLACEHOLDER_MIXED);
    assert_int_equal(is->rule, 0);
    assert_int_equal(is->line, 5);
    assert_int_equal(te_result_n_violations(res), 4);
    assert_int_equal(te_result_n_issues(res), 5);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_checks_bom_and_header(void **state)
{
    (void)state;
    /* A BOM breaks the rules in a submission; in gold or reviews it is a note. */
    te_eval *ev = eval_of("\xEF\xBB\xBF" GOLD_HEADER GOLD_ROW1,
                          "\xEF\xBB\xBF" "1,_,很好,整体,正面\n",
                          "\xEF\xBB\xBF" "id,Reviews\n1,很好\n");
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1); /* read all the same */
    assert_int_equal(count_issues(res, TE_ISSUE_BOM), 3);
    assert_int_equal(te_result_n_violations(res), 1);
    for (size_t i = 0; i < 3; i++) {
        const te_issue *is = te_result_issue(res, i);
        assert_int_equal(is->rule, strcmp(is->file, "pred.csv") == 0);
        assert_int_equal(is->line, 1);
    }
    te_result_free(res);
    te_eval_free(ev);

    /* A header row in a submission: a rule broken, the row skipped. */
    ev = eval_of(GOLD_HEADER GOLD_ROW1,
                 "id,AspectTerm,OpinionTerm,Category,Polarity\n1,_,很好,整体,正面\n", NULL);
    res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    const te_issue *is = issue_of(res, TE_ISSUE_HEADER);
    assert_int_equal(is->rule, 1);
    assert_int_equal(is->line, 1);
    assert_int_equal(te_result_n_violations(res), 1);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_checks_gold(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER
                          "1,_, , ,很好,0,2,整体,正面\n"      /* fine */
                          "2,物流,0,2,快,3,4,物流,正面\n"     /* 快 is at 2..3, not 3..4 */
                          "2,包装,9,11,快,2,3,包装,正面\n"    /* aspect offsets past the end */
                          "3,_, , ,好,0,1,外观,正面\n"        /* label outside the set */
                          "8,_, , ,好,0,1,整体,正面\n",       /* no review */
                          "1,_,很好,整体,正面\n2,物流,快,物流,正面\n3,_,好,外观,正面\n"
                          "8,_,好,整体,正面\n",
                          "id,Reviews\n1,很好\n2,物流快\n3,好\n");
    te_result *res = score_ok(ev);
    assert_int_equal(count_issues(res, TE_ISSUE_GOLD_SPAN), 2);
    const te_issue *is = issue_of(res, TE_ISSUE_GOLD_SPAN);
    assert_int_equal(is->rule, 0);
    assert_int_equal(is->line, 3);
    assert_string_equal(is->message, "gold opinion \"快\" is not at characters 3..4 of review 2");
    is = issue_of(res, TE_ISSUE_GOLD_LABEL);
    assert_int_equal(is->line, 5);
    is = issue_of(res, TE_ISSUE_GOLD_ID_UNKNOWN);
    assert_int_equal(is->id, 8);
    assert_string_equal(is->message, "gold id 8 has no review");
    /* The submission breaks two rules: 外观, and id 8 unknown. */
    assert_int_equal(te_result_n_violations(res), 2);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_spans(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER GOLD_ROW1,
                          "1,_,很好,整体,正面\n1,包装,很好,包装,正面\n1,_,超好,整体,正面\n"
                          "1,盒子,差,包装,负面\n5,_,好,整体,正面\n",
                          "id,Reviews\n1,很好\n");
    te_result *res = score_ok(ev);
    te_span_counts sp = te_result_spans(res);
    assert_int_equal(sp.available, 1);
    assert_int_equal(sp.aspect_outside, 2);  /* 包装, 盒子 */
    assert_int_equal(sp.opinion_outside, 2); /* 超好, 差 */
    assert_int_equal(sp.either_outside, 3);
    assert_int_equal(sp.no_review, 1);       /* id 5 */
    const te_mismatch *m = te_result_mismatch(res, 0);
    assert_int_equal(m->kind, TE_FALSE_POSITIVE);
    assert_int_equal(m->aspect_outside, 1);
    assert_int_equal(m->opinion_outside, 0);
    assert_string_equal(m->review, "很好");
    te_result_free(res);
    te_eval_free(ev);

    ev = eval_of(GOLD_HEADER GOLD_ROW1, "1,x,y,整体,正面\n", NULL);
    res = score_ok(ev);
    sp = te_result_spans(res);
    assert_int_equal(sp.available, 0);
    assert_int_equal(sp.either_outside, 0);
    te_result_free(res);
    te_eval_free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_field_count),
        cmocka_unit_test(test_bad_ids),
        cmocka_unit_test(test_bad_offsets),
        cmocka_unit_test(test_empty_files),
        cmocka_unit_test(test_wrong_kind),
        cmocka_unit_test(test_encoding_errors),
        cmocka_unit_test(test_duplicate_review),
        cmocka_unit_test(test_failed_load_rolls_back),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_checks_clean),
        cmocka_unit_test(test_checks_ids),
        cmocka_unit_test(test_checks_labels_and_terms),
        cmocka_unit_test(test_checks_bom_and_header),
        cmocka_unit_test(test_checks_gold),
        cmocka_unit_test(test_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
