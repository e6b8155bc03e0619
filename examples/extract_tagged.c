/* extract_tagged.c - extract (aspect, opinion, category, polarity) records
 * from one review in a single forward pass with a tagger head (extraction by
 * decisions: tags, links and labels, no generation), and print them, the
 * spans the head found, and the Tianchi submission row.
 *
 * Built against the installed library and run from the repository root, on
 * the bundled default (models/tianchi: base, LoRA adapter, tagger head).
 * pkg-config must find pocketdec.pc: for a prefix of your own, export
 * PKG_CONFIG_PATH=PREFIX/lib/x86_64-linux-gnu/pkgconfig (the libdir meson
 * chose). The rpath lets the program find libpocketdec.so.0 there; without
 * it, export LD_LIBRARY_PATH="$(pkg-config --variable=libdir pocketdec)".
 *
 *   $ cc examples/extract_tagged.c $(pkg-config --cflags --libs pocketdec) \
 *       -Wl,-rpath,"$(pkg-config --variable=libdir pocketdec)" -o extract_tagged
 *   $ ./extract_tagged models/tianchi schemas/tianchi-makeup.yaml "物流很快，第二天就到了，包装也很好"
 *
 * (the same as --adapter models/tianchi/adapter --head models/tianchi/head models/tianchi/base)
 *
 * prints the spans and the records (物流,很快,物流,正面 among them).
 * Usage: extract_tagged [--adapter DIR] [--head DIR] MODEL SCHEMA.yaml TEXT
 * (MODEL a bundle folder such as models/tianchi brings its adapter and head)
 */
#include "example_model.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    example_model m;
    int k = example_options(argc, argv, &m);
    if (k < 0 || argc - k != 3) {
        fprintf(stderr, "usage: %s [--adapter DIR] [--head DIR] MODEL SCHEMA.yaml TEXT\n", argv[0]);
        return 2;
    }
    const char *text = argv[k + 2];
    pd_error err;
    pd_schema *schema = example_load(&m, argv[k], &err) ? NULL : pd_schema_load(argv[k + 1], &err);
    if (schema && !m.head) {
        fprintf(stderr, "extract_tagged: %s has no head/: name a tagger head with --head DIR\n", argv[k]);
        pd_schema_free(schema);
        example_free(&m);
        return 2;
    }
    /* bound once, immutable: share it between contexts and threads */
    pd_tag_extractor *tx = schema ? pd_tag_extractor_new(m.model, schema, m.head, &err) : NULL;
    pd_context *ctx = tx ? pd_context_new(m.model, NULL, &err) : NULL;
    pd_extraction *x = NULL;
    pd_tag_trace *trace = NULL;
    char *row = NULL;
    int rc = 1;
    if (!ctx || pd_tag_extract_trace(ctx, tx, text, strlen(text), &x, &trace, &err) ||
        pd_extraction_format(schema, x, "1", PD_FORMAT_TIANCHI, &row, NULL, &err)) {
        fprintf(stderr, "extract_tagged: %s\n", err.message);
    } else {
        for (int32_t s = 0; s < trace->n_spans; s++)
            printf("span %s \"%s\" (tokens %d-%d of the read copy, probability %.3f)\n", trace->spans[s].name,
                   trace->spans[s].text, trace->spans[s].first, trace->spans[s].last, trace->spans[s].probability);
        for (int32_t r = 0; r < x->n_records; r++) {
            for (int32_t f = 0; f < x->n_fields; f++)
                printf("%s%s=%s", f ? " " : "", pd_schema_field_name(schema, f), x->records[r].values[f]);
            printf("\n");
        }
        printf("%d records, %d prompt tokens, %d forward pass\n%s", x->n_records, x->stats.n_prompt_tokens,
               trace->forward_passes, row);
        rc = 0;
    }
    pd_free(row);
    pd_tag_trace_free(trace);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    pd_schema_free(schema);
    example_free(&m);
    return rc;
}
