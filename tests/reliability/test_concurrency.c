/* test_concurrency.c - one model shared by four threads, each with its own
 * context, running generation, a decision, an extraction and a plain
 * evaluation at the same time, several times over: every result is bitwise
 * the one of the serial run. CI also runs it under ThreadSanitizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"

static const pd_model *model;
static const pd_head *head;
static const pd_schema *schema;
static const pd_extractor *extractor;

enum { JOB_GENERATE, JOB_DECIDE, JOB_EXTRACT, JOB_LOGITS, N_JOBS };
#define REPEATS 3

typedef struct {
    int kind;
    char *text;      /* generated text or formatted records */
    float values[64]; /* probabilities or the first logits */
    int ok;
} result;

static void run_job(int kind, result *r)
{
    pd_error err;
    memset(r, 0, sizeof *r);
    r->kind = kind;
    if (kind == JOB_DECIDE) {
        pd_decider *d = pd_decider_new(model, head, NULL, &err);
        static const char *const cands[3] = {"12", "3", "45"};
        pd_decision *dec = NULL;
        if (d && pd_decide(d, "1, 2; 3!", "?", cands, 3, &dec, &err) == PD_OK) {
            memcpy(r->values, dec->probs, 3 * sizeof(float));
            r->ok = 1;
        }
        pd_decision_free(dec);
        pd_decider_free(d);
        return;
    }
    pd_context_params cp = {256, 1, 32, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(model, &cp, &err);
    if (!ctx) return;
    if (kind == JOB_GENERATE) {
        pd_generate_params gp = {{0.9f, 10, 0.9f, 42}, 12, 1};
        r->ok = pd_generate(ctx, "hello 123", &gp, NULL, NULL, &r->text, &err) == PD_OK;
    } else if (kind == JOB_EXTRACT) {
        static const char review[] = "很好，超值，很好用";
        pd_extract_params xp = pd_extract_default_params();
        xp.max_tokens = 24;
        pd_extraction *x = NULL;
        r->ok = pd_extract(ctx, extractor, review, sizeof review - 1, &xp, &x, &err) == PD_OK &&
                pd_extraction_format(schema, x, "1", PD_FORMAT_TIANCHI, &r->text, NULL, &err) == PD_OK;
        pd_extraction_free(x);
    } else {
        int32_t ids[5] = {5, 17, 33, 2, 9};
        if (pd_eval_tokens(ctx, ids, 5, &err) == PD_OK) {
            memcpy(r->values, pd_context_logits(ctx, 0), sizeof r->values);
            r->ok = 1;
        }
    }
    pd_context_free(ctx);
}

static result serial[N_JOBS];

static void *worker(void *p)
{
    int kind = (int)(intptr_t)p;
    for (int rep = 0; rep < REPEATS; rep++) {
        result r;
        run_job(kind, &r);
        int same = r.ok && memcmp(r.values, serial[kind].values, sizeof r.values) == 0 &&
                   ((!r.text && !serial[kind].text) || (r.text && serial[kind].text && !strcmp(r.text, serial[kind].text)));
        pd_free(r.text);
        if (!same) return (void *)1;
    }
    return NULL;
}

static void test_four_jobs_at_once(void **state)
{
    (void)state;
    for (int k = 0; k < N_JOBS; k++) {
        run_job(k, &serial[k]);
        if (!serial[k].ok) fail_msg("serial job %d failed", k);
    }
    pthread_t th[N_JOBS];
    for (int k = 0; k < N_JOBS; k++) assert_int_equal(pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k), 0);
    for (int k = 0; k < N_JOBS; k++) {
        void *bad = NULL;
        pthread_join(th[k], &bad);
        if (bad) fail_msg("job %d differs from the serial run", k);
    }
    for (int k = 0; k < N_JOBS; k++) pd_free(serial[k].text);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_concurrency MODEL HEAD_DIR SCHEMA\n");
        return 2;
    }
    pd_error err;
    pd_model *m = pd_model_load(argv[1], NULL, &err);
    pd_head *h = m ? pd_head_load(argv[2], m, &err) : NULL;
    pd_schema *s = h ? pd_schema_load(argv[3], &err) : NULL;
    pd_extractor *x = s ? pd_extractor_new(m, s, &err) : NULL;
    if (!x) {
        fprintf(stderr, "test_concurrency: %s\n", err.message);
        return 1;
    }
    model = m;
    head = h;
    schema = s;
    extractor = x;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_four_jobs_at_once)};
    int rc = cmocka_run_group_tests_name("concurrency", tests, NULL, NULL);
    pd_extractor_free(x);
    pd_schema_free(s);
    pd_head_free(h);
    pd_model_free(m);
    return rc;
}
