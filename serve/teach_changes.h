/* teach_changes.h - what a new model changed on the reviews labelled so
 * far (GET /v1/teach/changes; teach.c feeds it, docs/serve.md "Teach it").
 * Records are compared whole: every field, a span by its character offsets
 * (the labels file's form), so a record is "right" when the person's answer
 * holds it. Not installed. */
#ifndef PD_SERVE_TEACH_CHANGES_H
#define PD_SERVE_TEACH_CHANGES_H

#include "pocketdec.h"

#include <jansson.h>
#include <stddef.h>

typedef struct teach_changes teach_changes;

/* Characters (code points) of UTF-8 text; the byte offset of character c. */
size_t serve_utf8_chars(const char *s, size_t len);
size_t serve_utf8_byte_of(const char *s, size_t len, size_t c);

/* An empty comparison over schema's fields (NULL when out of memory). */
teach_changes *serve_changes_new(const pd_schema *schema);
void serve_changes_free(teach_changes *c);

/* One labelled review of text (len bytes), where (file and line) saying
 * where it came from in an error: gold, the person's answer
 * ("records"); before, the model's records when it was labelled ("model");
 * after, the current model's. A record that is not of the labels file's
 * form over text (a field missing, a value outside the schema, a span off
 * the text or whose text is not the review's) makes the review an error
 * entry, named by where, and leaves the counts as they were. 0, or 1 when
 * out of memory. */
int serve_changes_add(teach_changes *c, const json_t *id, const char *where, const char *text, size_t len,
                      const json_t *gold, const json_t *before, const json_t *after);
/* A review that cannot be compared (why), listed with the errors. */
int serve_changes_error(teach_changes *c, const json_t *id, const char *why);

/* The document: {"reviews": compared, "errors": [...], "exact": {before,
 * after} (answers matched whole), "matched"/"predicted": {before, after},
 * "gold", "fixed" (answer records found now, not before), "broken" (found
 * before, not now), "added"/"removed"/"unchanged" (records), "changed"
 * (reviews with any), "items": [{id, text, answer, exact_before,
 * exact_after, fixed, broken, records: [{..., "change", "right"}]}] }; NULL
 * when out of memory. */
json_t *serve_changes_json(const teach_changes *c);

#endif
