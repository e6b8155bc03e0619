/* fuzz_tokenizer_json.c - any bytes as tokenizer.json; what loads must encode and decode. */
#include "fuzz_util.h"
#include "pd_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("-tokenizer.json", data, size);
    pd_error err;
    pd_tokenizer *tok = pd_tokenizer_load(path, &err);
    if (!tok) return 0;
    static const char text[] = "Hello, 世界 <|im_end|> don't 123\n";
    int32_t *ids = NULL;
    size_t n = 0;
    if (pd_tokenizer_encode(tok, text, sizeof text - 1, &ids, &n, &err) == PD_OK) {
        char *back = NULL;
        size_t len = 0;
        if (pd_tokenizer_decode(tok, ids, n, &back, &len, &err) == PD_OK) pd_free(back);
        pd_free(ids);
    }
    pd_tokenizer_free(tok);
    return 0;
}
