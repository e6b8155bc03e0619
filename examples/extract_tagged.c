/* extract_tagged.c - extract (aspect, opinion, category, polarity) records
 * from one review in a single forward pass with a tagger head (extraction by
 * decisions: tags, links and labels, no generation), and print them, the
 * spans the head found, and the Tianchi submission row. Built against the
 * installed library:
 *
 *   cc extract_tagged.c $(pkg-config --cflags --libs pocketdec) -o extract_tagged
 *   ./extract_tagged MODEL SCHEMA.yaml HEAD_DIR "review text"
 */
#include <pocketdec.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL SCHEMA.yaml HEAD_DIR TEXT\n", argv[0]);
        return 2;
    }
    pd_error err;
    pd_model *model = pd_model_load(argv[1], NULL, &err);
    pd_schema *schema = model ? pd_schema_load(argv[2], &err) : NULL;
    pd_head *head = schema ? pd_head_load(argv[3], model, &err) : NULL;
    /* bound once, immutable: share it between contexts and threads */
    pd_tag_extractor *tx = head ? pd_tag_extractor_new(model, schema, head, &err) : NULL;
    pd_context *ctx = tx ? pd_context_new(model, NULL, &err) : NULL;
    pd_extraction *x = NULL;
    pd_tag_trace *trace = NULL;
    char *row = NULL;
    int rc = 1;
    if (!ctx || pd_tag_extract_trace(ctx, tx, argv[4], strlen(argv[4]), &x, &trace, &err) ||
        pd_extraction_format(schema, x, "1", PD_FORMAT_TIANCHI, &row, NULL, &err)) {
        fprintf(stderr, "extract_tagged: %s\n", err.message);
    } else {
        for (int32_t s = 0; s < trace->n_spans; s++)
            printf("span %s \"%s\" (tokens %d-%d of the read copy)\n", trace->spans[s].name, trace->spans[s].text,
                   trace->spans[s].first, trace->spans[s].last);
        for (int32_t r = 0; r < x->n_records; r++) {
            for (int32_t f = 0; f < x->n_fields; f++)
                printf("%s%s=%s", f ? " " : "", pd_schema_field_name(schema, f), x->records[r].values[f]);
            printf("\n");
        }
        printf("%d records, %d prompt tokens, %d forward pass\n%s", x->n_records, x->n_prompt_tokens,
               trace->forward_passes, row);
        rc = 0;
    }
    pd_free(row);
    pd_tag_trace_free(trace);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    pd_head_free(head);
    pd_schema_free(schema);
    pd_model_free(model);
    return rc;
}
