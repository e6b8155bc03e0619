/* request.c - request bodies parsed and checked, answers built (request.h). */
#include "request.h"
#include "pocketdec_summary.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse(char msg[SERVE_MESSAGE_SIZE], int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, SERVE_MESSAGE_SIZE, fmt, ap);
    va_end(ap);
    return status;
}

/* The body as a JSON object whose keys are all in `allowed`; 0 or 400. */
static int load_object(const char *body, size_t len, const char *const *allowed, json_t **out,
                       char msg[SERVE_MESSAGE_SIZE])
{
    *out = NULL;
    if (len == 0) return refuse(msg, 400, "the body is empty: send a JSON object");
    size_t bad = pd_utf8_valid_prefix(body, len);
    if (bad < len) return refuse(msg, 400, "the body is not valid UTF-8 (byte %zu)", bad);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return refuse(msg, 400, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return refuse(msg, 400, "the body must be a JSON object");
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++) known = strcmp(*a, key) == 0;
        if (!known) {
            char shown[64];
            snprintf(shown, sizeof shown, "%s", key);
            int st = refuse(msg, 400, "unknown field \"%s\"", shown);
            json_decref(root);
            return st;
        }
    }
    *out = root;
    return 0;
}

/* The strings of array v (field `name`) into *list (malloc'ed; NULL when
 * empty), their lengths into *lens when lens is not NULL; 0, 400 or 413. */
static int string_array(const json_t *v, const char *name, size_t max, const char *limit_opt, const char ***list,
                        size_t **lens, size_t *n, char msg[SERVE_MESSAGE_SIZE])
{
    *list = NULL;
    if (lens) *lens = NULL;
    *n = 0;
    if (!json_is_array(v)) return refuse(msg, 400, "\"%s\" must be an array of strings", name);
    size_t count = json_array_size(v);
    if (count > max)
        return refuse(msg, 413, "\"%s\" holds %zu items; at most %zu are taken in one request%s", name, count, max,
                      limit_opt);
    if (count == 0) return 0;
    *list = calloc(count, sizeof **list);
    if (lens) *lens = calloc(count, sizeof **lens);
    if (!*list || (lens && !*lens)) {
        free(*list);
        if (lens) free(*lens);
        *list = NULL;
        if (lens) *lens = NULL;
        return refuse(msg, 500, "out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) {
            free(*list);
            *list = NULL;
            if (lens) {
                free(*lens);
                *lens = NULL;
            }
            return refuse(msg, 400, "\"%s\"[%zu] must be a string", name, i);
        }
        (*list)[i] = json_string_value(s);
        if (lens) (*lens)[i] = json_string_length(s);
    }
    *n = count;
    return 0;
}

/* JSON members s[0..n) ("rating":"5",...) as the object they make once
 * braced, or NULL (*je says why) for what is not members or holds a key twice. */
static json_t *members_object(const char *s, size_t n, json_error_t *je)
{
    char *braced = malloc(n + 2);
    if (!braced) {
        snprintf(je->text, sizeof je->text, "out of memory");
        return NULL;
    }
    braced[0] = '{';
    memcpy(braced + 1, s, n);
    braced[n + 1] = '}';
    json_t *o = json_loadb(braced, n + 2, JSON_REJECT_DUPLICATES, je);
    free(braced);
    return o;
}

/* "extras"[i]: a row's other columns as JSON members ("rating":"5",...),
 * checked (an object once braced, no key twice, none the line holds already)
 * and written back compact in their order into *out; NULL for null or "". */
static int extra_members(const json_t *v, size_t i, char **out, char msg[SERVE_MESSAGE_SIZE])
{
    *out = NULL;
    if (json_is_null(v)) return 0;
    if (!json_is_string(v)) return refuse(msg, 400, "\"extras\"[%zu] must be a string (JSON members) or null", i);
    size_t n = json_string_length(v);
    if (n == 0) return 0;
    json_error_t je;
    json_t *o = members_object(json_string_value(v), n, &je);
    int st = !o ? refuse(msg, 400, "\"extras\"[%zu] is not JSON members (\"column\":\"value\",...): %s", i, je.text)
             : json_object_get(o, "id") || json_object_get(o, "records")
                 ? refuse(msg, 400, "\"extras\"[%zu] has a column \"id\" or \"records\", which the line holds already", i)
                 : 0;
    bool empty = st == 0 && json_object_size(o) == 0;
    char *t = st == 0 && !empty ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (st || empty) return st;
    if (!t) return refuse(msg, 500, "out of memory");
    size_t tl = strlen(t);
    memmove(t, t + 1, tl - 2); /* without the braces */
    t[tl - 2] = 0;
    *out = t;
    return 0;
}

/* "extras": one entry a text, with "ids". */
static int extras_list(const json_t *extras, serve_extract_req *req, char msg[SERVE_MESSAGE_SIZE])
{
    if (!req->ids) return refuse(msg, 400, "\"extras\" goes with \"ids\" (the lines it is carried into)");
    if (!json_is_array(extras) || json_array_size(extras) != req->n)
        return refuse(msg, 400, "\"extras\" must be an array of %zu entries, one a text", req->n);
    if (!(req->extras = calloc(req->n, sizeof *req->extras))) return refuse(msg, 500, "out of memory");
    int st = 0;
    for (size_t i = 0; st == 0 && i < req->n; i++) st = extra_members(json_array_get(extras, i), i, &req->extras[i], msg);
    return st;
}

int serve_parse_extract(const char *body, size_t len, size_t max_texts, serve_extract_req *req, char msg[SERVE_MESSAGE_SIZE])
{
    static const char *const allowed[] = {"text", "texts", "ids", "extras", NULL};
    memset(req, 0, sizeof *req);
    json_t *root;
    int st = load_object(body, len, allowed, &root, msg);
    if (st) return st;
    json_t *text = json_object_get(root, "text"), *texts = json_object_get(root, "texts");
    if (text && texts) st = refuse(msg, 400, "give \"text\" or \"texts\", not both");
    else if (!text && !texts) st = refuse(msg, 400, "missing field \"text\" (a string) or \"texts\" (an array of strings)");
    else if (text && !json_is_string(text)) st = refuse(msg, 400, "\"text\" must be a string");
    if (st) {
        json_decref(root);
        return st;
    }
    req->root = root;
    if (text) {
        req->texts = malloc(sizeof *req->texts);
        req->lens = malloc(sizeof *req->lens);
        if (!req->texts || !req->lens) st = refuse(msg, 500, "out of memory");
        else {
            req->texts[0] = json_string_value(text);
            req->lens[0] = json_string_length(text);
            req->n = 1;
        }
    } else {
        req->many = true;
        st = string_array(texts, "texts", max_texts, " (--max-texts)", &req->texts, &req->lens, &req->n, msg);
        if (st == 0 && req->n == 0) st = refuse(msg, 400, "\"texts\" is empty: give at least one string");
    }
    const json_t *ids = json_object_get(root, "ids");
    if (st == 0 && ids) {
        if (!req->many) st = refuse(msg, 400, "\"ids\" goes with \"texts\", not with \"text\"");
        else if (!json_is_array(ids) || json_array_size(ids) != req->n)
            st = refuse(msg, 400, "\"ids\" must be an array of %zu ids, one a text", req->n);
        for (size_t i = 0; st == 0 && i < req->n; i++) {
            const json_t *id = json_array_get(ids, i);
            if (!json_is_string(id) && !json_is_integer(id))
                st = refuse(msg, 400, "\"ids\"[%zu] must be a string or an integer", i);
            else if (json_is_string(id) && strlen(json_string_value(id)) != json_string_length(id))
                st = refuse(msg, 400, "\"ids\"[%zu] holds \\u0000", i);
        }
        req->ids = ids;
    }
    const json_t *extras = json_object_get(root, "extras");
    if (st == 0 && extras) st = extras_list(extras, req, msg);
    if (st) serve_extract_req_free(req);
    return st;
}

void serve_extract_req_free(serve_extract_req *req)
{
    for (size_t i = 0; req->extras && i < req->n; i++) free(req->extras[i]);
    free(req->extras);
    free(req->texts);
    free(req->lens);
    json_decref(req->root);
    memset(req, 0, sizeof *req);
}

/* A body of the fields `allowed` with a string "text" into req (its root and
 * text); 0 or 400. */
static int text_body(const char *body, size_t len, const char *const *allowed, serve_score_req *req,
                     char msg[SERVE_MESSAGE_SIZE])
{
    memset(req, 0, sizeof *req);
    int st = load_object(body, len, allowed, &req->root, msg);
    if (st) return st;
    json_t *text = json_object_get(req->root, "text");
    if (!text) st = refuse(msg, 400, "missing field \"text\" (a string)");
    else if (!json_is_string(text)) st = refuse(msg, 400, "\"text\" must be a string");
    else req->text = json_string_value(text);
    if (st) serve_score_req_free(req);
    return st;
}

int serve_parse_why(const char *body, size_t len, serve_score_req *req, char msg[SERVE_MESSAGE_SIZE])
{
    static const char *const allowed[] = {"text", NULL};
    return text_body(body, len, allowed, req, msg);
}

int serve_parse_score(const char *body, size_t len, size_t max_cands, serve_score_req *req, char msg[SERVE_MESSAGE_SIZE])
{
    static const char *const allowed[] = {"text", "question", "candidates", NULL};
    int st = text_body(body, len, allowed, req, msg);
    if (st) return st;
    json_t *root = req->root, *q = json_object_get(root, "question"), *cands = json_object_get(root, "candidates");
    if (q && !json_is_string(q)) st = refuse(msg, 400, "\"question\" must be a string");
    if (st) {
        serve_score_req_free(req);
        return st;
    }
    req->question = q ? json_string_value(q) : "";
    if (cands) st = string_array(cands, "candidates", max_cands, "", &req->cands, NULL, &req->n, msg);
    if (st) serve_score_req_free(req);
    return st;
}

void serve_score_req_free(serve_score_req *req)
{
    free(req->cands);
    json_decref(req->root);
    memset(req, 0, sizeof *req);
}

int serve_parse_reload(const char *body, size_t len, char **path, char msg[SERVE_MESSAGE_SIZE])
{
    static const char *const allowed[] = {"model", NULL};
    *path = NULL;
    if (len == 0) return 0; /* the path the server was started with */
    json_t *root;
    int st = load_object(body, len, allowed, &root, msg);
    if (st) return st;
    const json_t *model = json_object_get(root, "model");
    if (model && (!json_is_string(model) || json_string_length(model) == 0))
        st = refuse(msg, 400, "\"model\" must be a bundle's folder: a non-empty string");
    else if (model && strlen(json_string_value(model)) != json_string_length(model))
        st = refuse(msg, 400, "\"model\" holds \\u0000");
    else if (model && !(*path = strdup(json_string_value(model))))
        st = refuse(msg, 500, "out of memory");
    json_decref(root);
    return st;
}

int serve_parse_summarize(const char *body, size_t len, json_t **root, const json_t **reviews,
                          char msg[SERVE_MESSAGE_SIZE])
{
    static const char *const allowed[] = {"reviews", NULL};
    int st = load_object(body, len, allowed, root, msg);
    if (st) return st;
    *reviews = json_object_get(*root, "reviews");
    if (json_is_array(*reviews)) return 0;
    json_decref(*root);
    *root = NULL;
    return refuse(msg, 400, "\"reviews\" must be an array of {\"id\", \"text\", \"records\"}");
}

bool serve_auth_ok(const char *header, const char *key)
{
    static const char prefix[] = "Bearer ";
    size_t np = sizeof prefix - 1, nk = strlen(key), nh = header ? strlen(header) : 0;
    unsigned diff = nh != np + nk;
    /* every byte of the prefix and the key is looked at, whatever differs */
    for (size_t i = 0; i < np + nk; i++) {
        unsigned char want = (unsigned char)(i < np ? prefix[i] : key[i - np]);
        unsigned char got = (unsigned char)(i < nh ? header[i] : 0);
        diff |= (unsigned)(want ^ got);
    }
    return diff == 0;
}

char *serve_error_body(const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    if (!o) o = json_pack("{s:s}", "error", "the message is not valid UTF-8");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

/* ------------------------------------------------------------ /v1/summarize */

/* A record's field: a string, or NULL when absent. */
static bool field(const json_t *r, const char *key, const char **out)
{
    const json_t *v = json_object_get(r, key);
    *out = json_string_value(v);
    return !v || json_is_string(v);
}

/* A span [start, end) of spans[key] (code points), -1 -1 when absent. */
static bool span(const json_t *r, const char *key, long *start, long *end)
{
    const json_t *s = json_object_get(json_object_get(r, "spans"), key);
    *start = *end = -1;
    if (!s) return true;
    if (!json_is_array(s) || json_array_size(s) != 2 || !json_is_integer(json_array_get(s, 0)) ||
        !json_is_integer(json_array_get(s, 1)))
        return false;
    *start = (long)json_integer_value(json_array_get(s, 0));
    *end = (long)json_integer_value(json_array_get(s, 1));
    return *start >= 0 && *end >= *start;
}

/* Review i's records into recs (room for all); 0 or 400 with msg. */
static int review_records(const json_t *records, size_t i, pds_record *recs, char msg[SERVE_MESSAGE_SIZE])
{
    const json_t *r;
    size_t k;
    json_array_foreach(records, k, r) {
        pds_record *p = &recs[k];
        if (!json_is_object(r) || !field(r, "aspect", &p->aspect) || !field(r, "opinion", &p->opinion) ||
            !field(r, "category", &p->category) || !field(r, "polarity", &p->polarity) || !p->polarity)
            return refuse(msg, 400, "reviews[%zu].records[%zu]: a record has string fields, \"polarity\" among them",
                          i, k);
        if (!span(r, "aspect", &p->a_start, &p->a_end) || !span(r, "opinion", &p->o_start, &p->o_end))
            return refuse(msg, 400, "reviews[%zu].records[%zu]: \"spans\" are [start, end] in characters", i, k);
    }
    return 0;
}

int serve_summarize(const json_t *reviews, const pds_calibration *cal, const char *cal_name, char **out,
                    char msg[SERVE_MESSAGE_SIZE])
{
    pds_params p = pds_default_params();
    p.listed = -1; /* a click on a cell shows all of its reviews */
    pds_summary *s = pds_summary_new(&p);
    pds_record *recs = NULL;
    pds_error err;
    int st = s ? 0 : refuse(msg, 500, "out of memory");
    *out = NULL;
    const json_t *v;
    size_t i;
    json_array_foreach(reviews, i, v) {
        if (st) break;
        const json_t *id = json_object_get(v, "id"), *text = json_object_get(v, "text");
        const json_t *records = json_object_get(v, "records");
        char num[32];
        if (json_is_integer(id)) snprintf(num, sizeof num, "%lld", (long long)json_integer_value(id));
        if (!json_is_object(v) || !(json_is_string(id) || json_is_integer(id)) || (text && !json_is_string(text)) ||
            !json_is_array(records)) {
            st = refuse(msg, 400, "reviews[%zu] must be {\"id\": string or integer, \"text\": string, \"records\": [...]}",
                        i);
            break;
        }
        size_t n = json_array_size(records);
        pds_record *more = realloc(recs, (n ? n : 1) * sizeof *recs);
        if (!more) {
            st = refuse(msg, 500, "out of memory");
            break;
        }
        recs = more;
        if ((st = review_records(records, i, recs, msg))) break;
        if (cal)
            for (size_t k = 0; k < n; k++)
                if (!pds_calibration_knows(cal, false, recs[k].polarity)) {
                    st = refuse(msg, 400, "reviews[%zu].records[%zu]: polarity '%s' is not among the labels of the "
                                "calibration %s (rates measured for another schema?)", i, k, recs[k].polarity,
                                cal_name ? cal_name : "");
                    break;
                }
        if (!st && pds_summary_add(s, json_is_string(id) ? json_string_value(id) : num, json_string_value(text), recs,
                                   n, &err))
            st = refuse(msg, 500, "%s", err.message);
    }
    json_t *j = st ? NULL : pds_summary_json(s, cal);
    if (!st && (!j || !(*out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER)))) st = refuse(msg, 500, "out of memory");
    json_decref(j);
    free(recs);
    pds_summary_free(s);
    return st ? st : 200;
}

/* An option of the query: NULL when absent or empty. */
static const char *given(const char *v)
{
    return v && *v ? v : NULL;
}

/* One row of the reader as {"id","text","line","extra","extra_json"}. */
static json_t *review_json(const pd_review *w)
{
    json_error_t je;
    json_t *extra = w->extra ? members_object(w->extra, strlen(w->extra), &je) : json_object();
    return json_pack("{s:s, s:s%, s:I, s:o*, s:s*}", "id", w->id, "text", w->text, w->text_len, "line",
                     (json_int_t)w->line, "extra", extra, "extra_json", w->extra);
}

int serve_read_reviews(const char *body, size_t len, const serve_reviews_opts *o, char **out)
{
    const char *format = given(o->format);
    *out = NULL;
    if (format && strcmp(format, "csv") && strcmp(format, "jsonl"))
        return (*out = serve_error_body("format must be csv or jsonl (or empty: by the file's name)")) ? 400 : 500;
    pd_reviews_params p = pd_reviews_default_params();
    p.format = !format ? PD_REVIEWS_AUTO : strcmp(format, "jsonl") == 0 ? PD_REVIEWS_JSONL : PD_REVIEWS_CSV;
    p.id_column = given(o->id_column);
    p.text_column = given(o->text_column);
    p.encoding = given(o->encoding);
    p.keep_extra = 1;
    pd_error err = {0};
    pd_reviews *r = pd_reviews_open_memory(body ? body : "", len, given(o->name) ? o->name : "upload", &p, &err);
    json_t *rows = json_array(), *problems = json_array();
    pd_review w;
    int got = 0;
    bool oom = !rows || !problems;
    while (r && !oom && (got = pd_reviews_next(r, &w, &err)) == 1) {
        if (w.header) continue;
        oom = w.problem ? json_array_append_new(problems, json_string(w.problem)) != 0
                        : json_array_append_new(rows, review_json(&w)) != 0;
    }
    pd_reviews_free(r);
    int status = oom || err.code == PD_ERR_NOMEM ? 500 : !r || got < 0 ? 400 : 200;
    if (status == 200) {
        json_t *answer = json_pack("{s:O, s:O}", "rows", rows, "problems", problems);
        *out = answer ? json_dumps(answer, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(answer);
        if (!*out) status = 500;
    } else {
        *out = serve_error_body(status == 500 ? "out of memory" : err.message);
    }
    json_decref(rows);
    json_decref(problems);
    return status;
}
