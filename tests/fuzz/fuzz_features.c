/* fuzz_features.c - a tagger head's sparse features from arbitrary bytes: the
 * input up to its first NUL byte is memory.tsv, up to the second lexicon.tsv,
 * up to a third the text (not necessarily UTF-8), the rest polarity.tsv (a
 * fixed table when there is no third NUL). What loads (a fixed head.json
 * whose templates use every atom, zero tables) sums the features of every
 * character, of links between spans cut from the text, and of records. */
#include "fuzz_util.h"
#include "heads.h"

static const char HEAD[] =
    "{\"type\": \"tagger\", \"prompt\": \"{text}\", \"spans\": [\"aspect\", \"opinion\"],"
    " \"link\": {\"from\": \"opinion\", \"to\": \"aspect\", \"head_dim\": 4},"
    " \"label_fields\": [\"category\", \"polarity\"], \"labels\": [[\"物流\", \"正面\"], [\"包装\", \"负面\"]],"
    " \"no_record\": true,"
    " \"features\": {\"hash\": {\"function\": \"fnv1a64\", \"seed\": 3}, \"lexicon\": \"lexicon.tsv\","
    " \"memory\": \"memory.tsv\", \"polarity\": \"polarity.tsv\","
    " \"tag\": {\"buckets\": 13, \"templates\": [\"bias\", \"c[-4] c[4] kind[-1] kind[1]\","
    " \"lex.aspect[-2] lex.opinion[0] lex.aspect[3]\", \"pol[-4] polpos[0] negated[4] pol[2]\"]},"
    " \"link\": {\"buckets\": 11, \"templates\": [\"none from to dir\", \"dist gap break between\","
    " \"clause count memory\"]},"
    " \"label\": {\"buckets\": 7, \"templates\": [\"text.aspect chars.opinion pair empty\","
    " \"bigrams.aspect left[4] right[1] memory\", \"clause left[1] right[4]\", \"bigrams.opinion\","
    " \"polsum.opinion polmin.aspect clausemax negation\", \"degree clausesum polmax.opinion clausemin\"]}}}";
static const char POLARITY[] = "不\tnegation\n很\tdegree\n好\t0.8\n很好\t2\n差\t-1.5\n不好\t-3\n快\t1\n";

/* Zero tables of the head's shapes: tag [13, 5], link [11, 1], label [7, 3]. */
static const char TABLES[] = "{\"features.tag\": {\"dtype\": \"F32\", \"shape\": [13, 5], \"data_offsets\": [0, 260]},"
                             " \"features.link\": {\"dtype\": \"F32\", \"shape\": [11, 1], \"data_offsets\": [260, 304]},"
                             " \"features.label\": {\"dtype\": \"F32\", \"shape\": [7, 3], \"data_offsets\": [304, 388]}}";

static char tables_path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    uint8_t file[8 + sizeof TABLES + 8 + 388] = {0};
    uint64_t n = sizeof TABLES - 1;
    n += (8 - n % 8) % 8;
    memcpy(file, &n, 8);
    memset(file + 8, ' ', n);
    memcpy(file + 8, TABLES, sizeof TABLES - 1);
    snprintf(tables_path, sizeof tables_path, "%s", fuzz_write_file("-features.safetensors", file, 8 + n + 388));
    return 0;
}

/* Sum everything over the text: each character, each `from` span against
 * every `to` span, each record. Spans: characters cut into runs of 1-3,
 * alternately `to` and `from`. */
static void sum_all(const pdi_feat_text *x)
{
    double out[5];
    pdi_feat_span to[64], from[64];
    int32_t n_to = 0, n_from = 0;
    for (int32_t c = 0; c < x->n; c++) pdi_features_tag(x, c, out);
    for (int32_t c = 0, k = 0; c < x->n && n_to < 64 && n_from < 64; k++) {
        int32_t len = 1 + k % 3, end = c + len < x->n ? c + len : x->n;
        if (k % 2) from[n_from++] = (pdi_feat_span){c, end};
        else to[n_to++] = (pdi_feat_span){c, end};
        c = end + k % 2;
    }
    double scores[65];
    for (int32_t o = 0; o < n_from; o++) {
        pdi_features_link(x, from[o], to, n_to, scores);
        pdi_feat_span rec[2] = {o < n_to ? to[o] : (pdi_feat_span){-1, -1}, from[o]};
        pdi_features_label(x, rec, out);
    }
    for (int32_t a = 0; a < n_to; a++) {
        pdi_feat_span rec[2] = {to[a], {-1, -1}};
        pdi_features_label(x, rec, out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t first = nul ? (size_t)(nul - data) + 1 : size;
    const char *dir = fuzz_write_pair("features", "memory.tsv", "lexicon.tsv", data, size);
    const uint8_t *rest = data + first, *nul2 = memchr(rest, 0, size - first);
    const char *text = nul2 ? (const char *)nul2 + 1 : "包装很好用，物流快！不好";
    size_t len = nul2 ? size - (size_t)((const uint8_t *)text - data) : strlen(text);
    const uint8_t *nul3 = nul2 ? memchr(nul2 + 1, 0, len) : NULL;
    if (nul2) fuzz_write_part(dir, "lexicon.tsv", rest, (size_t)(nul2 - rest)); /* between the first two NULs */
    if (nul3) {
        fuzz_write_part(dir, "polarity.tsv", nul3 + 1, size - (size_t)(nul3 + 1 - data));
        len = (size_t)(nul3 - (const uint8_t *)text);
    } else
        fuzz_write_part(dir, "polarity.tsv", (const uint8_t *)POLARITY, sizeof POLARITY - 1);
    pd_head h = {.source = (char *)dir, .type = PD_HEAD_TAGGER, .hidden = 4};
    json_t *root = json_loads(HEAD, 0, NULL);
    pd_error err;
    pdi_tensor_store st;
    pdi_store_init(&st);
    if (root && pdi_tagger_parse(&h, root, "head.json", &err) == PD_OK &&
        pdi_safetensors_add(&st, tables_path, &err) == PD_OK && pdi_features_tensors(&h, &st, tables_path, &err) == PD_OK) {
        pdi_feat_text x;
        if (pdi_feat_text_init(&x, h.tagger->features, text, len, &err) == PD_OK) {
            sum_all(&x);
            pdi_feat_text_free(&x);
        }
    }
    pdi_store_free(&st);
    pdi_tagger_free(h.tagger);
    json_decref(root);
    return 0;
}
