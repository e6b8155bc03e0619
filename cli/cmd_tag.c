/* cmd_tag.c - `pocketdec tag`: what a tagger head sees and decides for one
 * text in its one forward pass (tokens, emissions, tags, spans, link scores,
 * label logits, records), as one JSON object. */
#include "cli.h"

#include <string.h>

static void print_ints(const int32_t *v, int32_t n)
{
    putchar('[');
    for (int32_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", v[i]);
    putchar(']');
}

static void print_string(const char *s)
{
    cli_print_json_string(stdout, s, strlen(s));
}

static void print_trace(const pd_tag_trace *tr, const pd_schema *schema, const pd_extraction *x)
{
    printf("{\"tokens\":");
    print_ints(tr->tokens, tr->n_tokens);
    printf(",\"read_start\":%d,\"tags\":[", tr->read_start);
    for (int32_t i = 0; i < tr->n_read; i++) {
        if (i) putchar(',');
        print_string(tr->tag_names[tr->tags[i]]);
    }
    printf("],\"emissions\":[");
    for (int32_t i = 0; i < tr->n_read; i++) {
        if (i) putchar(',');
        cli_print_floats(stdout, tr->emissions + (size_t)i * (size_t)tr->n_tags, tr->n_tags);
    }
    printf("],\"spans\":[");
    for (int32_t s = 0; s < tr->n_spans; s++) {
        printf(s ? ",{\"field\":" : "{\"field\":");
        print_string(tr->spans[s].name);
        printf(",\"text\":");
        print_string(tr->spans[s].text);
        printf(",\"first\":%d,\"last\":%d,\"probability\":%.9g}", tr->spans[s].first, tr->spans[s].last,
               tr->spans[s].probability);
    }
    printf("],\"links\":[");
    for (int32_t l = 0; l < tr->n_links; l++) {
        printf(l ? ",{\"from\":%d,\"scores\":" : "{\"from\":%d,\"scores\":", tr->links[l].from);
        cli_print_floats(stdout, tr->links[l].scores, tr->links[l].n_scores);
        printf(",\"choice\":%d}", tr->links[l].choice);
    }
    printf("],\"labels\":[");
    for (int32_t r = 0; r < tr->n_label_rows; r++) {
        printf(r ? ",{\"logits\":" : "{\"logits\":");
        cli_print_floats(stdout, tr->label_logits + (size_t)r * (size_t)tr->n_labels, tr->n_labels);
        putchar('}');
    }
    printf("],\"candidates\":[");
    for (int32_t r = 0; r < tr->n_candidates; r++) {
        const pd_tag_candidate *c = &tr->candidates[r];
        printf("%s{\"spans\":[%d,%d],\"label\":%d,\"confidence\":%.9g,\"fate\":\"%s\"}", r ? "," : "", c->spans[0],
               c->spans[1], c->label, (double)c->confidence, pd_tag_fate_name(c->fate));
    }
    printf("],\"records\":[");
    for (int32_t r = 0; r < x->n_records; r++) {
        printf(r ? ",{" : "{");
        for (int32_t f = 0; f < x->n_fields; f++) {
            if (f) putchar(',');
            print_string(pd_schema_field_name(schema, f));
            putchar(':');
            print_string(x->records[r].values[f]);
        }
        putchar('}');
    }
    printf("],\"confidences\":[");
    for (int32_t r = 0; r < x->n_records; r++) printf(r ? ",%.9g" : "%.9g", (double)x->records[r].confidence);
    printf("],\"forward_passes\":%d}\n", tr->forward_passes);
}

int cmd_tag(cli_args *a)
{
    const char *head_dir, *schema_path = cli_opt(a, "--schema"), *text = cli_opt(a, "--text");
    int32_t threads, ctx_len;
    if (!schema_path || !text) return cli_usage(a, "--schema FILE and --text T are required");
    if (cli_threads_opt(a, &threads) || cli_int_opt(a, "--ctx", 0, 0, 1 << 20, &ctx_len)) return 2;
    pd_error err;
    pd_schema *schema = pd_schema_load(schema_path, &err);
    if (!schema) return cli_fail(&err);
    cli_model m;
    int rc = cli_model_open(a, &m, true);
    const pd_head *head = m.head;
    head_dir = m.head_dir;
    if (rc == 0 && !head) rc = cli_usage(a, "--head DIR is required (or --model a bundle folder with a head/)");
    pd_tag_extractor *tx = NULL;
    pd_context *ctx = NULL;
    pd_extraction *x = NULL;
    pd_tag_trace *tr = NULL;
    pd_context_params cp = pd_context_default_params();
    cp.n_threads = threads;
    cp.n_ctx = ctx_len;
    if (rc == 0 && pd_head_get_type(head) != PD_HEAD_TAGGER)
        rc = cli_failf("%s: not a tagger head: tag runs one (head.json type \"tagger\"); a pointer or classifier "
                       "head scores candidates (pocketdec score)", head_dir);
    if (rc == 0 && (!(tx = pd_tag_extractor_new(m.model, schema, head, &err)) ||
                    !(ctx = pd_context_new(m.model, &cp, &err)) ||
                    pd_tag_extract_trace(ctx, tx, text, strlen(text), &x, &tr, &err)))
        rc = cli_fail(&err);
    if (rc == 0) print_trace(tr, schema, x);
    pd_tag_trace_free(tr);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    cli_model_close(&m);
    pd_schema_free(schema);
    return rc;
}
