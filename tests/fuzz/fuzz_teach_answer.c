/* fuzz_teach_answer.c - an answer of the annotation page (serve/teach_check.c,
 * POST /v1/teach/answer's "records") on arbitrary bytes: the first line is the
 * review's text (skipped unless valid UTF-8 without a NUL, as the review files
 * are read), the rest the answer's JSON. It is taken or refused with 400 and a
 * message; what is taken holds every field of the schema, labels from its
 * sets, spans inside the text naming its characters, no two spans of a field
 * overlapping unless the same, and is a record /v1/teach/changes reads: the
 * answer compared with itself is matched whole, nothing added or removed. The
 * schema: $PD_FUZZ_HEAD_SCHEMA (scripts/fuzz.sh: schemas/tianchi-makeup.yaml). */
#include "pd_internal.h"
#include "teach_changes.h"
#include "teach_check.h"

#include <stdlib.h>
#include <string.h>

static pd_schema *schema;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *path = getenv("PD_FUZZ_HEAD_SCHEMA");
    pd_error err;
    if (!path || !(schema = pd_schema_load(path, &err))) abort();
    return 0;
}

static void check_taken(const char *text, size_t len, const json_t *recs)
{
    size_t chars = serve_utf8_chars(text, len), k;
    const json_t *rec;
    json_array_foreach(recs, k, rec) {
        for (int32_t f = 0; f < pd_schema_n_fields(schema); f++) {
            const json_t *v = json_object_get(rec, pd_schema_field_name(schema, f));
            if (!v) abort();
            if (pd_schema_field_kind(schema, f) == PD_FIELD_ENUM) {
                bool known = false;
                for (int32_t n = 0; json_is_string(v) && n < pd_schema_field_n_values(schema, f); n++)
                    known |= strcmp(json_string_value(v), pd_schema_field_value(schema, f, n)) == 0;
                if (!known) abort();
            } else if (pd_schema_field_kind(schema, f) == PD_FIELD_SPAN && !json_is_null(v)) {
                json_int_t a = json_integer_value(json_object_get(v, "start")),
                           b = json_integer_value(json_object_get(v, "end"));
                const json_t *t = json_object_get(v, "text");
                if (a < 0 || b <= a || (size_t)b > chars || !json_is_string(t)) abort();
                size_t x = serve_utf8_byte_of(text, len, (size_t)a), y = serve_utf8_byte_of(text, len, (size_t)b);
                if (json_string_length(t) != y - x || memcmp(json_string_value(t), text + x, y - x)) abort();
            }
        }
    }
    teach_changes *c = serve_changes_new(schema);
    json_t *id = json_integer(1);
    if (!c || !id || serve_changes_add(c, id, "fuzz", text, len, recs, recs, recs)) abort();
    json_t *doc = serve_changes_json(c);
    if (!doc || json_array_size(json_object_get(doc, "errors")) != 0 ||
        json_integer_value(json_object_get(doc, "changed")) != 0 ||
        json_integer_value(json_object_get(doc, "unchanged")) != (json_int_t)json_array_size(recs) ||
        json_integer_value(json_object_get(json_object_get(doc, "exact"), "after")) != 1)
        abort();
    json_decref(doc);
    json_decref(id);
    serve_changes_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - (const char *)data) : size;
    char *text = malloc(len + 1);
    if (!text) return 0;
    memcpy(text, data, len);
    text[len] = 0;
    if (strlen(text) != len || pdi_utf8_check(text, len) != len) {
        free(text);
        return 0;
    }
    const char *body = nl ? nl + 1 : "";
    size_t body_len = nl ? size - len - 1 : 0;
    json_error_t je;
    json_t *root = json_loadb(body, body_len, 0, &je);
    const json_t *given = json_is_object(root) ? json_object_get(root, "records") : root;
    char msg[SERVE_MESSAGE_SIZE] = "";
    json_t *out = NULL;
    int st = serve_teach_check(schema, text, len, given, &out, msg);
    if (st == 0) {
        if (!json_is_array(out) || json_array_size(out) != json_array_size(given)) abort();
        check_taken(text, len, out);
    } else if (st != 400 || !msg[0] || out) {
        abort();
    }
    json_decref(out);
    json_decref(root);
    free(text);
    return 0;
}
