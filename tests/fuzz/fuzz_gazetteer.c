/* fuzz_gazetteer.c - a tagger head's gazetteer file from arbitrary bytes: the
 * input up to its first NUL byte is gazetteer.tsv, the rest a text to match
 * (not necessarily UTF-8: matching must stay in bounds whatever it gets). */
#include "fuzz_util.h"
#include "heads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_write_pair("gazetteer", "gazetteer.tsv", "unused", data, size);
    static char *spans[] = {"aspect", "opinion"};
    pdi_tagger t = {.prompt = "{marked}{text}", .n_spans = 2, .spans = spans};
    pd_head h = {.source = (char *)dir, .tagger = &t};
    json_t *root = json_loads("{\"gazetteer\": {\"file\": \"gazetteer.tsv\", \"marks\": "
                              "{\"aspect\": [\"<a>\", \"</a>\"], \"opinion\": [\"<o>\", \"</o>\"]}}}",
                              0, NULL);
    pd_error err;
    if (root && pdi_gazetteer_parse(&h, root, "head.json", &err) == PD_OK) {
        const uint8_t *nul = memchr(data, 0, size);
        const char *text = nul ? (const char *)nul + 1 : "很好用的包装";
        size_t len = nul ? size - (size_t)(nul - data) - 1 : strlen(text);
        pdi_gaz_match *m = NULL;
        int32_t n = 0;
        if (pdi_gazetteer_match(t.gazetteer, ~0u, text, len, &m, &n, &err) == PD_OK)
            for (int32_t i = 1; i < n; i++)
                if (m[i].start < m[i - 1].end || m[i].end > len) abort(); /* in order, no overlap, in bounds */
        free(m);
    }
    pdi_gazetteer_free(t.gazetteer);
    json_decref(root);
    return 0;
}
