/* fuzz_head.c - a head directory from arbitrary bytes: the input up to its
 * first NUL byte is head.json, the rest head.safetensors; what loads decides
 * once on a small model (a tagger head: is bound to the Tianchi schema of
 * PD_FUZZ_HEAD_SCHEMA when set, and extracts from one text). The directory
 * also holds the files a tagger head's sparse features may name (their
 * contents are fuzz_features.c's to vary). */
#include "fuzz_util.h"
#include "pd_internal.h"
#include "pocketdec.h"

static pd_model *model;
static pd_schema *schema;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pd_error err;
    const char *path = getenv("PD_FUZZ_HEAD_MODEL");
    model = path ? pd_model_load(path, NULL, &err) : NULL;
    if (!model) {
        fprintf(stderr, "fuzz_head: set PD_FUZZ_HEAD_MODEL to a model with the marker tokens\n");
        abort();
    }
    const char *sp = getenv("PD_FUZZ_HEAD_SCHEMA");
    if (sp && !(schema = pd_schema_load(sp, &err))) {
        fprintf(stderr, "fuzz_head: %s\n", err.message);
        abort();
    }
    return 0;
}

/* Bind a tagger head and extract once (a Chinese text: spans inside characters). */
static void tag_once(const pd_head *h)
{
    pd_error err;
    pd_tag_extractor *tx = schema ? pd_tag_extractor_new(model, schema, h, &err) : NULL;
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 64;
    pd_context *ctx = tx ? pd_context_new(model, &cp, &err) : NULL;
    pd_extraction *x = NULL;
    pd_tag_trace *tr = NULL;
    static const char text[] = "很好，超值 12";
    if (ctx && pd_tag_extract_trace(ctx, tx, text, sizeof text - 1, &x, &tr, &err) == PD_OK) {
        pd_extraction_free(x);
        pd_tag_trace_free(tr);
    }
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
}

/* lexicon.tsv, memory.tsv for a head with the one span field opinion and
 * the Tianchi labels; lexicon-pair.tsv, memory-pair.tsv for aspect and
 * opinion without labels. */
static void write_side_files(const char *dir)
{
    static const char *const files[][2] = {
        {"lexicon.tsv", "# field<TAB>term\nopinion\t很好\nopinion\t好\n"},
        {"memory.tsv", "很好\t物流\t正面\n超值\t价格\t正面\n"},
        {"lexicon-pair.tsv", "aspect\t包装\naspect\t物流\nopinion\t很好\nopinion\t好\n"},
        {"memory-pair.tsv", "物流\t很快\n_\t很好\n包装\t_\n"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "wb");
        if (!f || fputs(files[i][1], f) < 0) abort();
        fclose(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool side_files;
    const char *dir = fuzz_write_pair("head", "head.json", "head.safetensors", data, size);
    if (!side_files) write_side_files(dir);
    side_files = true;
    pd_error err;
    pd_head *h = pd_head_load(dir, model, &err);
    if (h && pd_head_get_type(h) == PD_HEAD_TAGGER) {
        tag_once(h);
        pd_head_free(h);
    } else if (h) {
        pd_decider_params p = pd_decider_default_params();
        p.n_ctx = 64;
        pd_decider *d = pd_decider_new(model, h, &p, &err);
        static const char *const cands[2] = {"ab", "c"};
        pd_decision *dec = NULL;
        int32_t n_labels = 0;
        bool classifier = pd_head_get_type(h) == PD_HEAD_CLASSIFIER;
        if (classifier) pd_head_labels(h, &n_labels);
        if (d && pd_decide(d, "text", "q", classifier ? NULL : cands, classifier ? 0 : 2, &dec, &err) == PD_OK)
            pd_decision_free(dec);
        pd_decider_free(d);
        pd_head_free(h);
    }
    return 0;
}
