/* fuzz_jsonl.c - the CLI's JSON-lines reader on arbitrary bytes, with every
 * type check the commands make (tokenize, score --jsonl, extract): nothing
 * accepted holds invalid UTF-8 or a NUL, every refusal says why, and the
 * line count matches the input's lines. */
#include "pd_jsonl.h"
#include "pd_internal.h"

#include <stdlib.h>
#include <string.h>

static void check_text(const char *s, size_t len)
{
    if (!s) return;
    if (strlen(s) != len) abort(); /* a NUL inside an accepted string */
    if (pdi_utf8_check(s, len) != len) abort();
}

/* Every check a command makes on a line's value; a refusal must say why. */
static void check_value(pd_jsonl *r, const json_t *v)
{
    const char *s = NULL, **list = NULL;
    size_t len = 0, n = 0;
    int32_t *ids = NULL;
    char buf[24];
    r->what[0] = '\0';
    if (json_is_string(v)) check_text(json_string_value(v), json_string_length(v));
    if (pd_jsonl_ids(r, v, &ids, &n)) free(ids);
    else if (!r->what[0]) abort();
    r->what[0] = '\0';
    if (!pd_jsonl_object(r, v)) {
        if (!r->what[0]) abort();
        return;
    }
    static const char *const keys[] = {"text", "question", "id"};
    for (int k = 0; k < 3; k++) {
        r->what[0] = '\0';
        if (pd_jsonl_string(r, v, keys[k], k == 0, &s, &len)) check_text(s, len);
        else if (!r->what[0]) abort();
    }
    r->what[0] = '\0';
    if (pd_jsonl_strings(r, v, "candidates", false, 8, &list, &n)) {
        for (size_t i = 0; i < n; i++) check_text(list[i], strlen(list[i]));
        free(list);
    } else if (!r->what[0]) {
        abort();
    }
    r->what[0] = '\0';
    if (pd_jsonl_id(r, v, "id", buf, &s)) check_text(s, strlen(s));
    else if (!r->what[0]) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    pd_jsonl r;
    pd_jsonl_init(&r, f, "fuzz.jsonl");
    /* a small line limit for some inputs, so over-long lines are exercised */
    if (size % 3 == 0) r.max_line = 1 + size % 97;
    long last = 0;
    json_t *v = NULL;
    pd_jsonl_status st;
    while ((st = pd_jsonl_next(&r, &v)) != PD_JSONL_END) {
        if (st == PD_JSONL_FAIL) break;
        if (r.line <= last) abort(); /* each value comes from a later line */
        last = r.line;
        if (st == PD_JSONL_BAD && !r.what[0]) abort();
        if (st == PD_JSONL_OK) check_value(&r, v);
        json_decref(v);
        r.what[0] = '\0';
    }
    if (st == PD_JSONL_END) {
        long lines = 0;
        for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
        lines += data[size - 1] != '\n';
        if (r.line != lines) abort();
    }
    pd_jsonl_free(&r);
    fclose(f);
    return 0;
}
