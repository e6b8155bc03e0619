/* cmd_tag.c - `pocketdec tag`: what a tagger head sees and decides for one
 * text in its one forward pass (tokens, emissions, tags, spans, link scores,
 * label logits, records), as one JSON object; with --html, the same pass as
 * a page a person reads (pd_tag_explain drawn by web/why.js). */
#include "cli.h"
#include "why_page.h"

#include <errno.h>
#include <stdlib.h>
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

/* The pass explained (pd_tag_explain) as the page of web/, into path. */
static int write_html(pd_context *ctx, const pd_tag_extractor *tx, const char *text, const char *path)
{
    pd_error err;
    char *json = NULL;
    size_t json_len = 0, page_len = 0;
    if (pd_tag_explain(ctx, tx, text, strlen(text), &json, &json_len, &err)) return cli_fail(&err);
    char *page = pdw_why_page(json, json_len, &page_len);
    pd_free(json);
    if (!page) return cli_failf("out of memory writing the page");
    FILE *f = fopen(path, "wb");
    int rc = !f ? cli_failf("%s: cannot write: %s", path, strerror(errno)) : 0;
    if (f && fwrite(page, 1, page_len, f) != page_len) rc = cli_failf("%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) && !rc) rc = cli_failf("%s: cannot write: %s", path, strerror(errno));
    free(page);
    if (!rc) printf("%s\n", path);
    return rc;
}

int cmd_tag(cli_args *a)
{
    const char *head_dir, *schema_path = cli_opt(a, "--schema"), *text = cli_opt(a, "--text");
    const char *html = cli_opt(a, "--html"); /* the page instead of the trace */
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
                    !(ctx = pd_context_new(m.model, &cp, &err))))
        rc = cli_fail(&err);
    if (rc == 0 && html) rc = write_html(ctx, tx, text, html);
    else if (rc == 0 && pd_tag_extract_trace(ctx, tx, text, strlen(text), &x, &tr, &err)) rc = cli_fail(&err);
    else if (rc == 0) print_trace(tr, schema, x);
    pd_tag_trace_free(tr);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    cli_model_close(&m);
    pd_schema_free(schema);
    return rc;
}
