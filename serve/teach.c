/* teach.c - annotation in the playground (teach.h): the reviews of --teach
 * asked one at a time, most useful first, each answer a line of the labels
 * file in train/dataset.py's JSONL format ({"id", "text", "records"}, spans
 * as character offsets, end exclusive; "records": [] for nothing to label),
 * with the model's records beside it ("model") and how it was answered
 * ("answer": accepted, corrected or nothing). The file is a pd_output synced
 * at every commit, so an answer is on disk before it is answered OK, and a
 * restart reads it back (a torn last line cut) and asks the next review no
 * line holds. A skip is not written: the review is not asked again until
 * the server restarts, and nothing trains on it. Undo takes back the last
 * answer or skip (pd_output_rewind). One mutex over all of it: a person
 * labels one review at a time, and two tabs see one queue (an answer for a
 * review already answered is 409, nothing written). */
#include "teach.h"

#include "jobs.h"
#include "teach_changes.h"
#include "teach_check.h"
#include "tianchi_eval.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

enum { OPEN = 0, LABELLED = 1, SKIPPED = 2 };

typedef struct id_entry {
    const char *id;
    size_t i;
} id_entry;

typedef struct action { /* the undo stack: the labels file's lines, then this session's skips */
    size_t review;      /* its review; SIZE_MAX for a line of a review not in --teach */
    bool skip;
    int64_t end;        /* a line: the file's length after it */
} action;

struct teach {
    pthread_mutex_t mu;
    const pd_schema *schema;
    const serve_teach_config *cfg;
    pd_pipeline_params pp;  /* the ranker's pipeline: one review at a time */
    struct generation *gen; /* the model it ranks and proposes with (a reference; reload.c moves it) */
    pd_ranker *ranker;      /* over gen's model */
    pd_output *out;
    int lock;               /* the labels file, flock'ed: one server a labels file */
    size_t n;
    size_t *order;          /* the reviews, most useful first */
    struct id_entry *by_id; /* the reviews sorted by id (bsearch) */
    unsigned char *state;   /* OPEN, LABELLED or SKIPPED a review */
    json_t **lines;         /* a labelled review's line (for the F1, and undo's "previous") */
    json_t *other_lines;    /* lines of reviews not in --teach: still scored */
    action *stack;
    size_t n_stack, cap_stack;
    size_t labelled, skipped;
    int64_t bytes;          /* the labels file's length */
    size_t shown;           /* the review the model's records below are of (SIZE_MAX: none) */
    json_t *shown_records, *shown_conf;
    size_t undone;          /* the review an undo gave back (SIZE_MAX: none), and its answer */
    json_t *undone_records;
    json_t *now;            /* the current model's records of a labelled text (text -> records), for changes */
};

static const char *const op_paths[N_TEACH_OPS] = {"/v1/teach/next",   "/v1/teach/progress", "/v1/teach/changes",
                                                  "/v1/teach/answer", "/v1/teach/skip",     "/v1/teach/undo"};

/* msg (size bytes) set from fmt; returns rc (an HTTP status, or 1). */
static int say(char *msg, size_t size, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int say(char *msg, size_t size, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return rc;
}
#define bad(msg, status, ...) say(msg, SERVE_MESSAGE_SIZE, status, __VA_ARGS__)

int serve_teach_op(const char *url)
{
    for (int k = 0; k < N_TEACH_OPS; k++)
        if (strcmp(url, op_paths[k]) == 0) return k;
    return -1;
}

bool serve_teach_wants_post(int op)
{
    return op == TEACH_ANSWER || op == TEACH_SKIP || op == TEACH_UNDO;
}

/* ------------------------------------------------------------ reviews and ids */

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const id_entry *)a)->id, ((const id_entry *)b)->id);
}

/* The review of id (its text form), or SIZE_MAX. */
static size_t find(const teach *t, const char *id)
{
    id_entry key = {id, 0};
    const id_entry *e = t->n ? bsearch(&key, t->by_id, t->n, sizeof key, cmp_id) : NULL;
    return e ? e->i : SIZE_MAX;
}

/* A JSON id (string or integer) as text into buf; NULL when it is neither. */
static const char *id_text(const json_t *v, char buf[32])
{
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    return NULL;
}

/* A review's id as the labels file writes it: an integer when it is one in
 * canonical decimal (Tianchi's ids), else the string. */
static json_t *id_json(const char *id)
{
    size_t n = strlen(id);
    bool digits = n > 0 && n <= 18 && (id[0] != '0' || n == 1);
    for (size_t i = 0; digits && i < n; i++) digits = id[i] >= '0' && id[i] <= '9';
    return digits ? json_integer(strtoll(id, NULL, 10)) : json_string(id);
}

/* ------------------------------------------------------------ the model's records */

/* x's records in the labels file's form (every field; a span as {text,
 * start, end} or null), and their confidences beside. */
static json_t *records_json(const teach *t, const char *text, size_t len, const pd_extraction *x, json_t *conf)
{
    json_t *recs = json_array();
    for (int32_t r = 0; recs && r < x->n_records; r++) {
        const pd_record *rec = &x->records[r];
        json_t *o = json_object();
        for (int32_t f = 0; o && f < x->n_fields; f++) {
            const char *name = pd_schema_field_name(t->schema, f), *v = rec->values[f];
            json_t *val;
            if (pd_schema_field_kind(t->schema, f) != PD_FIELD_SPAN) val = json_string(v);
            else if (!strcmp(v, "_") || !rec->start || rec->start[f] < 0) val = json_null();
            else val = serve_span_json(text, len, (size_t)rec->start[f], (size_t)rec->end[f]);
            if (!val || json_object_set_new(o, name, val)) o = (json_decref(o), NULL);
        }
        if (!o || json_array_append_new(recs, o)) recs = (json_decref(recs), NULL);
        if (recs && conf) json_array_append_new(conf, json_real(rec->confidence));
    }
    return recs;
}

/* The model's records of review i (kept for the answer that follows). */
static int model_records(teach *t, size_t i, char *msg)
{
    if (t->shown == i) return 0;
    pd_extraction *x = NULL;
    pd_error err;
    double score;
    json_decref(t->shown_records);
    json_decref(t->shown_conf);
    t->shown = SIZE_MAX;
    t->shown_records = NULL;
    t->shown_conf = json_array();
    if (pd_ranker_score(t->ranker, t->cfg->ids[i], t->cfg->texts[i], t->cfg->lens[i], &score, &x, &err)) {
        return bad(msg, err.code == PD_ERR_NOMEM || err.code == PD_ERR_INTERNAL ? 500 : 422, "review %.40s: %.200s",
                   t->cfg->ids[i], err.message);
    }
    t->shown_records = t->shown_conf ? records_json(t, t->cfg->texts[i], t->cfg->lens[i], x, t->shown_conf) : NULL;
    pd_extraction_free(x);
    if (!t->shown_records) {
        return bad(msg, 500, "out of memory");
    }
    t->shown = i;
    return 0;
}

/* ------------------------------------------------------------ progress */

/* field k of the Tianchi quadruple a schema field maps to: its first two
 * span fields are aspect and opinion, its first two enum fields category
 * and polarity. False when the schema does not fit (a pattern field, more). */
static bool quad_fields(const pd_schema *sc, int32_t map[4])
{
    int32_t spans = 0, enums = 0;
    for (int k = 0; k < 4; k++) map[k] = -1;
    for (int32_t f = 0; f < pd_schema_n_fields(sc); f++) {
        pd_field_kind kind = pd_schema_field_kind(sc, f);
        if (kind == PD_FIELD_SPAN && spans < 2) map[spans++] = f;
        else if (kind == PD_FIELD_ENUM && enums < 2) map[2 + enums++] = f;
        else return false;
    }
    return true;
}

static const char *quad_value(const pd_schema *sc, const json_t *rec, int32_t f)
{
    if (f < 0) return "_";
    const json_t *v = json_object_get(rec, pd_schema_field_name(sc, f));
    if (json_is_object(v)) v = json_object_get(v, "text");
    return json_is_string(v) ? json_string_value(v) : "_";
}

static bool add_quads(te_eval *ev, const pd_schema *sc, const int32_t map[4], te_input kind, long id, const json_t *recs)
{
    size_t k;
    const json_t *rec;
    te_error e;
    json_array_foreach(recs, k, rec) {
        te_quad q = {id, quad_value(sc, rec, map[0]), quad_value(sc, rec, map[1]), quad_value(sc, rec, map[2]),
                     quad_value(sc, rec, map[3])};
        if (te_eval_add_quad(ev, kind, &q, &e)) return false;
    }
    return true;
}

/* The model's F1 on the labels so far by the Tianchi metric (libtianchieval):
 * each line's "model" records against its "records". Null when the schema
 * does not map onto the quadruple or no line is labelled. */
static json_t *labels_f1(const teach *t)
{
    int32_t map[4];
    if (!quad_fields(t->schema, map) || t->n_stack == 0) return json_null();
    te_error e;
    te_eval *ev = te_eval_new(&e);
    bool ok = ev != NULL;
    long id = 0;
    size_t other = 0;
    for (size_t k = 0; ok && k < t->n_stack; k++) {
        if (t->stack[k].skip) continue;
        const json_t *line = t->stack[k].review == SIZE_MAX ? json_array_get(t->other_lines, other++)
                                                            : t->lines[t->stack[k].review];
        id++;
        ok = add_quads(ev, t->schema, map, TE_INPUT_GOLD, id, json_object_get(line, "records")) &&
             add_quads(ev, t->schema, map, TE_INPUT_PREDICTIONS, id, json_object_get(line, "model"));
    }
    te_result *res = ok && id ? te_eval_score(ev, &e) : NULL;
    json_t *o = json_null();
    if (res) {
        te_score s = te_result_overall(res);
        o = json_pack("{s:f,s:f,s:f,s:I,s:I,s:I,s:I}", "f1", s.f1, "precision", s.precision, "recall", s.recall,
                      "matched", (json_int_t)s.matched, "predicted", (json_int_t)s.predicted, "gold",
                      (json_int_t)s.gold, "reviews", (json_int_t)id);
    }
    te_result_free(res);
    te_eval_free(ev);
    return o ? o : json_null();
}

static json_t *fields_json(const pd_schema *sc)
{
    json_t *a = json_array();
    for (int32_t f = 0; a && f < pd_schema_n_fields(sc); f++) {
        pd_field_kind kind = pd_schema_field_kind(sc, f);
        json_t *vals = json_array();
        for (int32_t k = 0; vals && k < pd_schema_field_n_values(sc, f); k++)
            json_array_append_new(vals, json_string(pd_schema_field_value(sc, f, k)));
        json_array_append_new(a, json_pack("{s:s,s:s,s:b,s:o*}", "name", pd_schema_field_name(sc, f), "kind",
                                           kind == PD_FIELD_SPAN ? "span" : kind == PD_FIELD_ENUM ? "enum" : "pattern",
                                           "empty", pd_schema_field_empty(sc, f), "values", vals));
    }
    return a;
}

static json_t *progress_json(const teach *t)
{
    size_t left = t->n - t->labelled - t->skipped;
    return json_pack("{s:I,s:I,s:I,s:I,s:s,s:s,s:o,s:o,s:I}", "labelled", (json_int_t)t->labelled, "left",
                     (json_int_t)left, "skipped", (json_int_t)t->skipped, "total", (json_int_t)t->n, "order",
                     pd_rank_order_name(t->cfg->order), "labels", t->cfg->labels, "model_on_labels", labels_f1(t),
                     "fields", fields_json(t->schema), "generation", (json_int_t)t->gen->id);
}

/* ------------------------------------------------------------ the stack */

static bool push(teach *t, action a)
{
    if (t->n_stack == t->cap_stack) {
        size_t cap = t->cap_stack ? 2 * t->cap_stack : 64;
        action *s = realloc(t->stack, cap * sizeof *s);
        if (!s) return false;
        t->stack = s;
        t->cap_stack = cap;
    }
    t->stack[t->n_stack++] = a;
    return true;
}

/* ------------------------------------------------------------ the operations */

static int op_next(teach *t, json_t **out, char *msg)
{
    size_t i = SIZE_MAX;
    if (t->undone != SIZE_MAX && t->state[t->undone] == OPEN) i = t->undone;
    for (size_t k = 0; i == SIZE_MAX && k < t->n; k++)
        if (t->state[t->order[k]] == OPEN) i = t->order[k];
    json_t *review = json_null();
    if (i != SIZE_MAX) {
        int st = model_records(t, i, msg);
        if (st) return st;
        review = json_pack("{s:s,s:s,s:O,s:O}", "id", t->cfg->ids[i], "text", t->cfg->texts[i], "records",
                           t->shown_records, "confidences", t->shown_conf);
        if (review && i == t->undone && t->undone_records)
            json_object_set(review, "previous", t->undone_records);
    }
    *out = json_pack("{s:o*,s:o*}", "review", review, "progress", progress_json(t));
    return 0;
}

/* The review a body names: its index into *i, or the status to answer. */
static int body_review(teach *t, const json_t *root, size_t *i, char *msg)
{
    char buf[32];
    const char *id = id_text(json_object_get(root, "id"), buf);
    if (!id) return bad(msg, 400, "\"id\" (a string or an integer) is required");
    if ((*i = find(t, id)) == SIZE_MAX) return bad(msg, 400, "no review of id %s in %s", id, t->cfg->reviews_name);
    if (t->state[*i] == LABELLED)
        return bad(msg, 409, "review %s is answered already (in another tab?): reload to see the next one", id);
    return 0;
}

/* The line's bytes committed (fsync'ed) and the review marked labelled. */
static int commit_line(teach *t, size_t i, json_t *line, char *msg)
{
    char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    size_t n = text ? strlen(text) : 0;
    char *bytes = text ? realloc(text, n + 2) : NULL, state[48];
    if (!bytes) {
        free(text);
        return bad(msg, 500, "out of memory");
    }
    bytes[n] = '\n';
    bytes[n + 1] = 0;
    if (!push(t, (action){i, false, t->bytes + (int64_t)n + 1})) {
        free(bytes);
        return bad(msg, 500, "out of memory");
    }
    snprintf(state, sizeof state, "lines=%zu", t->labelled + json_array_size(t->other_lines) + 1);
    pd_error err;
    if (pd_output_commit(t->out, bytes, n + 1, state, &err)) {
        t->n_stack--;
        free(bytes);
        return bad(msg, 500, "%s", err.message);
    }
    free(bytes);
    t->bytes += (int64_t)n + 1;
    t->state[i] = LABELLED;
    t->lines[i] = json_incref(line);
    t->labelled++;
    if (t->undone == i) t->undone = SIZE_MAX;
    return 0;
}

static json_t *now_json(void)
{
    char buf[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

static int op_answer(teach *t, const json_t *root, json_t **out, char *msg)
{
    size_t i;
    int st = body_review(t, root, &i, msg);
    json_t *recs = NULL;
    if (!st) st = serve_teach_check(t->schema, t->cfg->texts[i], t->cfg->lens[i], json_object_get(root, "records"),
                                    &recs, msg);
    if (!st) st = model_records(t, i, msg);
    if (st) {
        json_decref(recs);
        return st;
    }
    const char *how = json_array_size(recs) == 0 ? "nothing" : json_equal(recs, t->shown_records) ? "accepted" : "corrected";
    json_t *line = json_pack("{s:o,s:s,s:o,s:s,s:O,s:o}", "id", id_json(t->cfg->ids[i]), "text", t->cfg->texts[i],
                             "records", recs, "answer", how, "model", t->shown_records, "time", now_json());
    st = line ? commit_line(t, i, line, msg) : bad(msg, 500, "out of memory");
    json_decref(line);
    if (!st) *out = json_pack("{s:s,s:s,s:o*}", "id", t->cfg->ids[i], "answer", how, "progress", progress_json(t));
    return st;
}

static int op_skip(teach *t, const json_t *root, json_t **out, char *msg)
{
    size_t i;
    int st = body_review(t, root, &i, msg);
    if (st) return st;
    if (t->state[i] == SKIPPED) return bad(msg, 409, "review %s is skipped already", t->cfg->ids[i]);
    if (!push(t, (action){i, true, t->bytes})) return bad(msg, 500, "out of memory");
    t->state[i] = SKIPPED;
    t->skipped++;
    if (t->undone == i) t->undone = SIZE_MAX;
    *out = json_pack("{s:s,s:s,s:o*}", "id", t->cfg->ids[i], "answer", "skipped", "progress", progress_json(t));
    return 0;
}

static int op_undo(teach *t, json_t **out, char *msg)
{
    if (t->n_stack == 0) return bad(msg, 409, "nothing to undo");
    action a = t->stack[t->n_stack - 1];
    if (!a.skip) {
        int64_t to = t->n_stack > 1 ? t->stack[t->n_stack - 2].end : 0;
        char state[48];
        snprintf(state, sizeof state, "lines=%zu", t->labelled + json_array_size(t->other_lines) - 1);
        pd_error err;
        if (pd_output_rewind(t->out, to, state, &err)) return bad(msg, 500, "%s", err.message);
        t->bytes = to;
    }
    t->n_stack--;
    json_decref(t->undone_records);
    t->undone_records = NULL;
    t->undone = a.review;
    if (a.review == SIZE_MAX) { /* a line of another review file */
        json_array_remove(t->other_lines, json_array_size(t->other_lines) - 1);
    } else if (a.skip) {
        t->skipped--;
    } else {
        t->undone_records = json_incref(json_object_get(t->lines[a.review], "records"));
        json_decref(t->lines[a.review]);
        t->lines[a.review] = NULL;
        t->labelled--;
    }
    if (a.review != SIZE_MAX) t->state[a.review] = OPEN;
    *out = json_pack("{s:s?,s:s,s:o*}", "id", a.review == SIZE_MAX ? NULL : t->cfg->ids[a.review], "undone",
                     a.skip ? "skipped" : "answer", "progress", progress_json(t));
    return 0;
}

/* ranker's records of text in the labels file's form, or NULL with err. */
static json_t *ranker_records(const teach *t, pd_ranker *ranker, const char *id, const char *text, size_t len,
                              pd_error *err)
{
    pd_extraction *x = NULL;
    double score;
    if (pd_ranker_score(ranker, id, text, len, &score, &x, err)) return NULL;
    json_t *recs = records_json(t, text, len, x, NULL);
    pd_extraction_free(x);
    if (!recs) err->code = PD_ERR_NOMEM;
    return recs;
}

/* The current model's records of text (cached until a reload), or NULL
 * with the status to answer. */
static json_t *now_records(teach *t, const char *id, const char *text, size_t len, int *st, char *msg)
{
    json_t *recs = json_object_get(t->now, text);
    if (recs) return recs;
    pd_error err;
    if (!(recs = ranker_records(t, t->ranker, id, text, len, &err)) && err.code != PD_ERR_NOMEM) {
        *st = bad(msg, err.code == PD_ERR_INTERNAL ? 500 : 422, "review %.40s: %.200s", id, err.message);
        return NULL;
    }
    if (!recs || json_object_set_new(t->now, text, recs)) {
        *st = bad(msg, 500, "out of memory");
        return NULL;
    }
    return recs;
}

/* GET /v1/teach/changes: every labelled line, its "model" records against
 * the current model's, judged by its "records" (teach_changes.c). A line
 * that cannot be compared (its text is not its review's any more, a record
 * not of the schema) is listed with the errors. */
static int op_changes(teach *t, json_t **out, char *msg)
{
    teach_changes *c = serve_changes_new(t->schema);
    if (!c) return bad(msg, 500, "out of memory");
    int st = 0;
    size_t other = 0, no = 0;
    for (size_t k = 0; !st && k < t->n_stack; k++) {
        if (t->stack[k].skip) continue;
        size_t i = t->stack[k].review;
        const json_t *line = i == SIZE_MAX ? json_array_get(t->other_lines, other++) : t->lines[i];
        const json_t *id = json_object_get(line, "id"), *text = json_object_get(line, "text");
        char buf[32], where[200], why[SERVE_MESSAGE_SIZE + 210] = "";
        const char *id_s = id_text(id, buf);
        snprintf(where, sizeof where, "%.150s, line %zu", t->cfg->labels, ++no);
        int model_st = 0;
        json_t *now = NULL;
        if (!json_is_string(text)) {
            snprintf(why, sizeof why, "%s: no \"text\"", where);
        } else if (i != SIZE_MAX && (json_string_length(text) != t->cfg->lens[i] ||
                                     memcmp(json_string_value(text), t->cfg->texts[i], t->cfg->lens[i]) != 0)) {
            snprintf(why, sizeof why, "%s: its text is not review %.40s's text in %.100s", where, id_s,
                     t->cfg->reviews_name);
        } else if (!(now = now_records(t, id_s, json_string_value(text), json_string_length(text), &model_st, msg)) &&
                   model_st == 422) {
            snprintf(why, sizeof why, "%s: %s", where, msg); /* the model cannot read it: this review alone */
        }
        if (now) st = serve_changes_add(c, id, where, json_string_value(text), json_string_length(text),
                                        json_object_get(line, "records"), json_object_get(line, "model"), now);
        else st = model_st && model_st != 422 ? model_st : serve_changes_error(c, id, why);
        if (st == 1) st = bad(msg, 500, "out of memory");
    }
    json_t *o = st ? NULL : serve_changes_json(c);
    serve_changes_free(c);
    if (o && json_object_set_new(o, "generation", json_integer(t->gen->id))) o = (json_decref(o), NULL);
    *out = o;
    return st;
}

int serve_teach_handle(teach *t, int op, const char *body, size_t len, char **out)
{
    char msg[SERVE_MESSAGE_SIZE];
    json_t *root = NULL, *ans = NULL;
    int st = 0;
    if (serve_teach_wants_post(op) && op != TEACH_UNDO) {
        json_error_t e;
        root = len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &e) : NULL;
        if (!len) st = bad(msg, 400, "the body is empty: a JSON object is expected");
        else if (!json_is_object(root)) st = bad(msg, 400, "the body is not a JSON object (%s)", root ? "another value" : e.text);
    }
    pthread_mutex_lock(&t->mu);
    if (!st) switch (op) {
        case TEACH_NEXT: st = op_next(t, &ans, msg); break;
        case TEACH_PROGRESS: st = (ans = progress_json(t)) ? 0 : bad(msg, 500, "out of memory"); break;
        case TEACH_CHANGES: st = op_changes(t, &ans, msg); break;
        case TEACH_ANSWER: st = op_answer(t, root, &ans, msg); break;
        case TEACH_SKIP: st = op_skip(t, root, &ans, msg); break;
        default: st = op_undo(t, &ans, msg); break;
        }
    pthread_mutex_unlock(&t->mu);
    json_decref(root);
    if (!st && !ans) st = bad(msg, 500, "out of memory");
    *out = st ? serve_error_body(msg) : serve_dump(ans);
    return st ? st : 200;
}

/* ------------------------------------------------------------ opening */

/* The labels file's lines back into t: each a JSON object with an id; the
 * reviews of --teach among them marked labelled. */
static int read_back(teach *t, char *msg, size_t msg_size)
{
    FILE *f = fopen(t->cfg->labels, "rb");
    if (!f) return say(msg, msg_size, 1, "%s: cannot read: %s", t->cfg->labels, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long no = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
        no++;
        json_error_t e;
        json_t *v = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &e);
        char buf[32];
        const char *id = v ? id_text(json_object_get(v, "id"), buf) : NULL;
        size_t i = id ? find(t, id) : SIZE_MAX;
        t->bytes += n;
        if (!json_is_object(v) || !id || !json_is_array(json_object_get(v, "records")))
            rc = say(msg, msg_size, 1, "%s:%ld: not a line of labels ({\"id\", \"text\", \"records\"}): %s",
                          t->cfg->labels, no, v ? "a key is missing" : e.text);
        else if (i != SIZE_MAX && t->state[i] == LABELLED)
            rc = say(msg, msg_size, 1, "%s:%ld: review %s is labelled twice", t->cfg->labels, no, id);
        else if (!push(t, (action){i, false, t->bytes}))
            rc = say(msg, msg_size, 1, "out of memory");
        else if (i == SIZE_MAX)
            json_array_append(t->other_lines, v);
        else {
            t->state[i] = LABELLED;
            t->lines[i] = json_incref(v);
            t->labelled++;
        }
        json_decref(v);
    }
    if (rc == 0 && ferror(f)) rc = say(msg, msg_size, 1, "%s: cannot read: %s", t->cfg->labels, strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

/* The reviews open in state, scored by ranker and ordered most useful first
 * into order (the others after them, never asked). */
static int rank_reviews(const teach *t, pd_ranker *ranker, const unsigned char *state, size_t *order, char *msg,
                        size_t msg_size)
{
    double *scores = malloc(t->n * sizeof *scores);
    if (!scores) return say(msg, msg_size, 1, "out of memory");
    pd_error err;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        scores[i] = -1;
        if (state[i] == OPEN &&
            pd_ranker_score(ranker, t->cfg->ids[i], t->cfg->texts[i], t->cfg->lens[i], &scores[i], NULL, &err))
            rc = say(msg, msg_size, 1, "%s: review %s: %s", t->cfg->reviews_name, t->cfg->ids[i], err.message);
    }
    if (rc == 0 && pd_rank_sort(scores, t->n, order, &err)) rc = say(msg, msg_size, 1, "%s", err.message);
    free(scores);
    return rc;
}

int serve_teach_follow(teach *t, generation *g, generation **old, char *msg, size_t msg_size)
{
    pd_error err;
    size_t *order = malloc(t->n * sizeof *order + 1);
    unsigned char *state = malloc(t->n + 1);
    pd_ranker *ranker = order && state ? pd_ranker_new(g->model, t->schema, g->head, t->cfg->order, t->cfg->seed,
                                                       &t->pp, &err)
                                       : NULL;
    int rc = !order || !state ? say(msg, msg_size, 1, "out of memory")
             : !ranker        ? say(msg, msg_size, 1, "the review queue cannot be ranked by the new bundle: %s",
                                    err.message)
                              : 0;
    json_t *texts = json_array(), *now = json_object();
    if (rc == 0 && (!texts || !now)) rc = say(msg, msg_size, 1, "out of memory");
    if (rc == 0) { /* ranked outside the mutex: the page is answered by the old model meanwhile */
        pthread_mutex_lock(&t->mu);
        memcpy(state, t->state, t->n);
        for (size_t k = 0; k < t->n; k++)
            if (t->lines[k]) json_array_append(texts, json_object_get(t->lines[k], "text"));
        for (size_t k = 0; k < json_array_size(t->other_lines); k++)
            json_array_append(texts, json_object_get(json_array_get(t->other_lines, k), "text"));
        pthread_mutex_unlock(&t->mu);
        rc = rank_reviews(t, ranker, state, order, msg, msg_size);
    }
    /* and the labelled reviews' records by it, for /v1/teach/changes (one that fails is tried there again) */
    for (size_t k = 0; rc == 0 && k < json_array_size(texts); k++) {
        const json_t *text = json_array_get(texts, k);
        json_t *recs = ranker_records(t, ranker, "", json_string_value(text), json_string_length(text), &err);
        if (recs) json_object_set_new(now, json_string_value(text), recs);
    }
    json_decref(texts);
    if (rc) {
        json_decref(now);
        pd_ranker_free(ranker);
        free(order);
        free(state);
        return rc;
    }
    pthread_mutex_lock(&t->mu); /* after the request being answered, on the old model */
    pd_ranker *was = t->ranker;
    size_t *was_order = t->order;
    *old = t->gen;
    t->gen = g;
    t->ranker = ranker;
    t->order = order;
    t->shown = SIZE_MAX; /* the next review's records are the new model's */
    json_t *was_now = t->now;
    t->now = now;
    pthread_mutex_unlock(&t->mu);
    pd_ranker_free(was);
    json_decref(was_now);
    free(was_order);
    free(state);
    return 0;
}

teach *serve_teach_open(generation *g, const pd_schema *schema, const serve_config *cfg, char *msg, size_t msg_size)
{
    const serve_teach_config *tc = cfg->teach;
    teach *t = calloc(1, sizeof *t);
    if (!t) {
        say(msg, msg_size, 1, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->lock = -1;
    t->schema = schema;
    t->cfg = tc;
    t->gen = g;
    t->n = tc->n;
    t->shown = t->undone = SIZE_MAX;
    t->order = malloc(t->n * sizeof *t->order);
    t->by_id = malloc(t->n * sizeof *t->by_id);
    t->state = calloc(t->n, 1);
    t->lines = calloc(t->n, sizeof *t->lines);
    t->other_lines = json_array();
    t->now = json_object();
    if (!t->order || !t->by_id || !t->state || !t->lines || !t->other_lines || !t->now) {
        snprintf(msg, msg_size, "out of memory");
        serve_teach_free(t);
        return NULL;
    }
    for (size_t i = 0; i < t->n; i++) t->by_id[i] = (id_entry){tc->ids[i], i};
    qsort(t->by_id, t->n, sizeof *t->by_id, cmp_id);
    t->pp = cfg->pipeline;
    t->pp.parallel = 1; /* one review at a time: one context */
    pd_error err;
    char *state = NULL;
    pd_output_params op = pd_output_default_params();
    op.resume = 1;
    op.sync_seconds = 0; /* every answer durable before it is answered OK */
    int rc = 0;
    if ((t->lock = open(tc->labels, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        rc = say(msg, msg_size, 1, "%s: cannot open: %s", tc->labels, strerror(errno));
    else if (flock(t->lock, LOCK_EX | LOCK_NB) != 0)
        rc = say(msg, msg_size, 1, "%s: %s", tc->labels,
                 errno == EWOULDBLOCK ? "another pocketdec serve --teach is writing these labels" : strerror(errno));
    if (rc == 0 && (!(t->ranker = pd_ranker_new(g->model, schema, g->head, tc->order, tc->seed, &t->pp, &err)) ||
                    !(t->out = pd_output_open(tc->labels, "labels: pocketdec serve --teach (train/dataset.py JSONL)\n",
                                              &op, &state, &err))))
        rc = say(msg, msg_size, 1, "%s", err.message);
    pd_free(state);
    if (rc == 0) rc = read_back(t, msg, msg_size);
    if (rc == 0) {
        fprintf(stderr, "pocketdec serve: --teach: %zu reviews, %zu labelled in %s; ordering the rest by %s\n", t->n,
                t->labelled, tc->labels, pd_rank_order_name(tc->order));
        fflush(stderr);
        rc = rank_reviews(t, t->ranker, t->state, t->order, msg, msg_size);
    }
    if (rc) {
        serve_teach_free(t);
        return NULL;
    }
    return t;
}

void serve_teach_free(teach *t)
{
    if (!t) return;
    pd_ranker_free(t->ranker);
    pd_output_free(t->out); /* every commit is synced already */
    if (t->lock >= 0) close(t->lock);
    for (size_t i = 0; t->lines && i < t->n; i++) json_decref(t->lines[i]);
    json_decref(t->other_lines);
    json_decref(t->shown_records);
    json_decref(t->shown_conf);
    json_decref(t->undone_records);
    json_decref(t->now);
    free(t->lines);
    free(t->order);
    free(t->by_id);
    free(t->state);
    free(t->stack);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
