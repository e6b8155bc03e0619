/* next_token.c - the smallest pocketdec program: load a model, evaluate a
 * prompt, print the most likely next token.
 *
 * Built against the installed library and run from the repository root, on
 * the bundled default's base (models/tianchi/base, trained on the makeup
 * reviews). pkg-config must find pocketdec.pc: for a prefix of your own,
 * export PKG_CONFIG_PATH=PREFIX/lib/x86_64-linux-gnu/pkgconfig (the libdir
 * meson chose). The rpath lets the program find libpocketdec.so.0 there;
 * without it, export LD_LIBRARY_PATH="$(pkg-config --variable=libdir pocketdec)".
 *
 *   $ cc examples/next_token.c $(pkg-config --cflags --libs pocketdec) \
 *       -Wl,-rpath,"$(pkg-config --variable=libdir pocketdec)" -o next_token
 *   $ ./next_token models/tianchi/base "物流很"
 *
 * prints the id and the text of the most likely next token.
 */
#include <pocketdec.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL TEXT\n", argv[0]);
        return 2;
    }
    pd_error err;
    pd_model *model = pd_model_load(argv[1], NULL, &err);
    if (!model) {
        fprintf(stderr, "next_token: %s\n", err.message);
        return 1;
    }
    const pd_tokenizer *tok = pd_model_tokenizer(model);
    pd_context *ctx = tok ? pd_context_new(model, NULL, &err) : NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = 1;
    if (!tok) {
        fprintf(stderr, "next_token: %s has no tokenizer\n", argv[1]);
    } else if (!ctx || pd_tokenizer_encode(tok, argv[2], strlen(argv[2]), &ids, &n, &err) ||
               pd_eval_tokens(ctx, ids, (int32_t)n, &err)) {
        fprintf(stderr, "next_token: %s\n", err.message);
    } else {
        const pd_config *cfg = pd_model_config(model);
        int32_t best = pd_sample(pd_context_logits(ctx, 0), cfg->vocab, NULL, NULL, NULL);
        size_t len = 0;
        const char *piece = pd_tokenizer_token_bytes(tok, best, &len);
        printf("%d\t%.*s\n", best, (int)len, piece ? piece : "");
        rc = 0;
    }
    pd_free(ids);
    pd_context_free(ctx);
    pd_model_free(model);
    return rc;
}
