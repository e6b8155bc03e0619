/* cmd_tokenize.c - `pocketdec tokenize`: JSON lines of text to ids, or
 * (--decode) of ids to text, with a tokenizer.json. */
#include "cli.h"
#include "pd_jsonl.h"

#include <stdlib.h>

/* One line's value: a string to encode, or (decode) an array of ids. */
static int tokenize_value(const pd_tokenizer *tok, pd_jsonl *r, const json_t *in, bool decode)
{
    pd_error err;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!decode) {
        if (!json_is_string(in)) {
            pd_jsonl_bad(r, "expected a JSON string");
            return cli_jsonl_fail(r);
        }
        if (pd_tokenizer_encode(tok, json_string_value(in), json_string_length(in), &ids, &n, &err))
            return cli_failf("%s:%ld: %s", r->name, r->line, err.message);
        cli_print_ids(stdout, ids, n);
        pd_free(ids);
        return 0;
    }
    if (!pd_jsonl_ids(r, in, &ids, &n)) return cli_jsonl_fail(r);
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (pd_tokenizer_decode(tok, ids, n, &text, &len, &err)) {
        rc = cli_failf("%s:%ld: %s", r->name, r->line, err.message);
    } else {
        cli_print_json_string(stdout, text, len);
        fputc('\n', stdout);
        pd_free(text);
    }
    free(ids);
    return rc;
}

int cmd_tokenize(cli_args *a)
{
    const char *path = cli_opt(a, "--tokenizer");
    bool decode = cli_flag(a, "--decode");
    if (!path) return cli_usage(a, "--tokenizer FILE is required");
    pd_error err;
    pd_tokenizer *tok = pd_tokenizer_load(path, &err);
    if (!tok) return cli_fail(&err);
    pd_jsonl r;
    pd_jsonl_init(&r, stdin, "stdin");
    json_t *in = NULL;
    pd_jsonl_status st;
    int rc = 0;
    while (rc == 0 && (st = pd_jsonl_next(&r, &in)) != PD_JSONL_END) {
        rc = st == PD_JSONL_OK ? tokenize_value(tok, &r, in, decode) : cli_jsonl_fail(&r);
        json_decref(in);
    }
    pd_jsonl_free(&r);
    pd_tokenizer_free(tok);
    return rc;
}
