/* teach_check.c - an answer of the annotation page checked (teach_check.h):
 * every field of the schema in every record, labels from its closed sets,
 * spans inside the text with the text they name, no two spans of one field
 * overlapping without being the same (train/dataset.py would drop the later
 * record). Fuzzed by tests/fuzz/fuzz_teach_answer.c. */
#include "teach_check.h"

#include "teach_changes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int bad(char *msg, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int bad(char *msg, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, SERVE_MESSAGE_SIZE, fmt, ap);
    va_end(ap);
    return status;
}

json_t *serve_span_json(const char *text, size_t len, size_t start, size_t end)
{
    size_t a = serve_utf8_byte_of(text, len, start), b = serve_utf8_byte_of(text, len, end);
    return json_pack("{s:s%,s:I,s:I}", "text", text + a, b - a, "start", (json_int_t)start, "end", (json_int_t)end);
}

/* One answered record checked against the schema and the text, into the
 * labels file's form (spans' text taken from the review). */
static int check_record(const pd_schema *sc, const char *text, size_t len, const json_t *rec, size_t r, json_t **out,
                        char *msg)
{
    size_t chars = serve_utf8_chars(text, len);
    if (!json_is_object(rec)) return bad(msg, 400, "records[%zu] must be an object", r);
    json_t *o = json_object();
    for (int32_t f = 0; o && f < pd_schema_n_fields(sc); f++) {
        const char *name = pd_schema_field_name(sc, f);
        const json_t *v = json_object_get(rec, name);
        json_t *val = NULL;
        int st = 0;
        if (!v) st = bad(msg, 400, "records[%zu] has no \"%s\"", r, name);
        else if (pd_schema_field_kind(sc, f) == PD_FIELD_ENUM) {
            for (int32_t k = 0; json_is_string(v) && k < pd_schema_field_n_values(sc, f); k++)
                if (!strcmp(json_string_value(v), pd_schema_field_value(sc, f, k))) val = json_string(json_string_value(v));
            if (!val) st = bad(msg, 400, "records[%zu].%s: %s is not one of the schema's values", r, name,
                               json_is_string(v) ? json_string_value(v) : "a non-string");
        } else if (pd_schema_field_kind(sc, f) == PD_FIELD_PATTERN) {
            if (json_is_string(v)) val = json_string(json_string_value(v));
            else st = bad(msg, 400, "records[%zu].%s must be a string", r, name);
        } else if (json_is_null(v)) {
            if (pd_schema_field_empty(sc, f)) val = json_null();
            else st = bad(msg, 400, "records[%zu].%s: the schema does not allow `_` here", r, name);
        } else {
            const json_t *s = json_object_get(v, "start"), *e = json_object_get(v, "end"), *tx = json_object_get(v, "text");
            json_int_t a = json_integer_value(s), b = json_integer_value(e);
            if (!json_is_integer(s) || !json_is_integer(e))
                st = bad(msg, 400, "records[%zu].%s must be null or {\"start\", \"end\"} (character offsets)", r, name);
            else if (a < 0 || b <= a || (size_t)b > chars)
                st = bad(msg, 400, "records[%zu].%s: [%lld, %lld) is not a span of the review's %zu characters", r,
                         name, (long long)a, (long long)b, chars);
            else if (!(val = serve_span_json(text, len, (size_t)a, (size_t)b)))
                st = 500;
            else if (tx && (!json_is_string(tx) || strcmp(json_string_value(tx), json_string_value(json_object_get(val, "text")))))
                st = bad(msg, 400, "records[%zu].%s: the text is not the review's characters [%lld, %lld)", r, name,
                         (long long)a, (long long)b);
        }
        if (st || !val) json_decref(val); /* not taken by o */
        if (st || !val || json_object_set_new(o, name, val)) {
            json_decref(o);
            return st ? st : 500;
        }
    }
    *out = o;
    return o ? 0 : 500;
}

/* Two spans of one field that share a character without being the same
 * (train/dataset.py would drop the later record). */
static int overlapping(const pd_schema *sc, const json_t *recs, char *msg)
{
    for (size_t a = 0; a < json_array_size(recs); a++)
        for (size_t b = 0; b < a; b++)
            for (int32_t f = 0; f < pd_schema_n_fields(sc); f++) {
                const char *name = pd_schema_field_name(sc, f);
                const json_t *x = json_object_get(json_array_get(recs, a), name),
                             *y = json_object_get(json_array_get(recs, b), name);
                if (!json_is_object(x) || !json_is_object(y)) continue;
                json_int_t xs = json_integer_value(json_object_get(x, "start")), xe = json_integer_value(json_object_get(x, "end")),
                           ys = json_integer_value(json_object_get(y, "start")), ye = json_integer_value(json_object_get(y, "end"));
                if (xs < ye && ys < xe && (xs != ys || xe != ye))
                    return bad(msg, 400, "records[%zu].%s overlaps records[%zu].%s without being the same span", a,
                               name, b, name);
            }
    return 0;
}


int serve_teach_check(const pd_schema *sc, const char *text, size_t len, const json_t *given, json_t **out, char *msg)
{
    *out = NULL;
    if (!json_is_array(given)) return bad(msg, 400, "\"records\" (a list, [] for nothing to label) is required");
    json_t *recs = json_array();
    int st = recs ? 0 : bad(msg, 500, "out of memory");
    for (size_t r = 0; !st && r < json_array_size(given); r++) {
        json_t *rec = NULL;
        if (!(st = check_record(sc, text, len, json_array_get(given, r), r, &rec, msg)) &&
            json_array_append_new(recs, rec))
            st = bad(msg, 500, "out of memory");
    }
    if (!st) st = overlapping(sc, recs, msg);
    if (st) json_decref(recs);
    else *out = recs;
    return st;
}
