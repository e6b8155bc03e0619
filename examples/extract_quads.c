/* extract_quads.c - extract (aspect, opinion, category, polarity) quadruples
 * from one review with a schema, and print them from the C structs and as a
 * Tianchi submission row. Built against the installed library:
 *
 *   cc extract_quads.c $(pkg-config --cflags --libs pocketdec) -o extract_quads
 *   ./extract_quads MODEL SCHEMA.yaml "review text"
 */
#include <pocketdec.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL SCHEMA.yaml TEXT\n", argv[0]);
        return 2;
    }
    pd_error err;
    pd_model *model = pd_model_load(argv[1], NULL, &err);
    pd_schema *schema = model ? pd_schema_load(argv[2], &err) : NULL;
    /* the extractor is immutable: one per model and schema, shared by every context */
    pd_extractor *ex = schema ? pd_extractor_new(model, schema, &err) : NULL;
    pd_context *ctx = ex ? pd_context_new(model, NULL, &err) : NULL;
    pd_extraction *x = NULL;
    char *row = NULL;
    int rc = 1;
    if (!ctx || pd_extract(ctx, ex, argv[3], strlen(argv[3]), NULL, &x, &err) ||
        pd_extraction_format(schema, x, "1", PD_FORMAT_TIANCHI, &row, NULL, &err)) {
        fprintf(stderr, "extract_quads: %s\n", err.message);
    } else {
        for (int32_t r = 0; r < x->n_records; r++) {
            for (int32_t f = 0; f < x->n_fields; f++)
                printf("%s%s=%s", f ? " " : "", pd_schema_field_name(schema, f), x->records[r].values[f]);
            printf("\n");
        }
        printf("%d records, %d tokens\n%s", x->n_records, x->n_tokens, row);
        rc = 0;
    }
    pd_free(row);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_extractor_free(ex);
    pd_schema_free(schema);
    pd_model_free(model);
    return rc;
}
