/* tagger.c - tagger heads: head.json's prompt, span fields, link and labels,
 * their tensors, and the pure scores over hidden states (emissions, the
 * constrained Viterbi, link scores, label logits). Binding a tagger head to a
 * schema and running it is the composer's job (compose/). */
#include "heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void free_strings(char **v, int32_t n)
{
    for (int32_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void pdi_tagger_free(pdi_tagger *t)
{
    if (!t) return;
    free(t->prompt);
    pdi_gazetteer_free(t->gazetteer);
    pdi_features_free(t->features);
    free_strings(t->spans, t->n_spans);
    free_strings(t->label_fields, t->n_label_fields);
    free_strings(t->label_values, t->n_labels * t->n_label_fields);
    float *arrays[] = {t->tag_w, t->tag_b, t->trans, t->start, t->end, t->lq_w, t->lq_b,
                       t->lk_w,  t->lk_b,  t->l_none, t->lab_w, t->lab_b, t->lab_none};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    free(t);
}

/* ------------------------------------------------------------- head.json */

/* A non-empty array of distinct non-empty strings under key, copied into *out. */
static pd_status string_list(json_t *root, const char *key, char ***out, int32_t *n, const char *path, pd_error *err)
{
    json_t *a = json_object_get(root, key);
    if (!json_is_array(a) || json_array_size(a) == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: a tagger head needs \"%s\", a non-empty array of field names", path,
                             key);
    size_t count = json_array_size(a);
    if (count > 64) return pdi_set_error(err, PD_ERR_LIMIT, "%s: \"%s\" has %zu names, more than 64", path, key, count);
    if (!(*out = calloc(count, sizeof **out))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < count; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (!s || !*s) return pdi_set_error(err, PD_ERR_FORMAT, "%s: %s[%zu] is not a non-empty string", path, key, i);
        for (size_t j = 0; j < i; j++)
            if (strcmp((*out)[j], s) == 0)
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"%s\" names field '%s' twice", path, key, s);
        if (!((*out)[i] = strdup(s))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        *n = (int32_t)i + 1;
    }
    return PD_OK;
}

static int32_t span_index(const pdi_tagger *t, const char *name)
{
    for (int32_t k = 0; name && k < t->n_spans; k++)
        if (strcmp(t->spans[k], name) == 0) return k;
    return -1;
}

static pd_status parse_link(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *link = json_object_get(root, "link");
    t->link_from = t->link_to = -1;
    if (t->n_spans == 1) {
        if (link) return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"link\" needs two span fields, the head has one", path);
        return PD_OK;
    }
    if (!json_is_object(link))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: two span fields need a \"link\" object (from, to, head_dim)", path);
    const char *from = json_string_value(json_object_get(link, "from")), *to = json_string_value(json_object_get(link, "to"));
    json_t *hd = json_object_get(link, "head_dim");
    t->link_from = span_index(t, from);
    t->link_to = span_index(t, to);
    if (t->link_from < 0 || t->link_to < 0 || t->link_from == t->link_to)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: link.from (%s) and link.to (%s) must be the two span fields", path,
                             from ? from : "missing", to ? to : "missing");
    json_int_t d = json_integer_value(hd);
    if (!json_is_integer(hd) || d <= 0 || d > 65536)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: link.head_dim must be a positive integer", path);
    t->link_dim = (int32_t)d;
    return PD_OK;
}

/* "label_states": which token states of a span the labels read, ["last"] by default. */
static pd_status parse_label_states(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    static const char *const names[PD_SPAN_N_STATES] = {"first", "last"};
    json_t *a = json_object_get(root, "label_states");
    t->n_label_states = 1;
    t->label_states[0] = PD_SPAN_LAST;
    if (!a) return PD_OK;
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n == 0 || n > PD_SPAN_N_STATES)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"label_states\" must be an array of one or two of \"first\", \"last\"",
                             path);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        int32_t k = 0;
        while (k < PD_SPAN_N_STATES && !(s && strcmp(s, names[k]) == 0)) k++;
        if (k == PD_SPAN_N_STATES)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: label_states[%zu] is not \"first\" or \"last\"", path, i);
        if (i == 1 && (int32_t)t->label_states[0] == k)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"label_states\" names '%s' twice", path, s);
        t->label_states[i] = (pdi_span_state)k;
    }
    t->n_label_states = (int32_t)n;
    return PD_OK;
}

/* "no_record": true adds a label class, after the labels, that means "no record here". */
static pd_status parse_no_record(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *v = json_object_get(root, "no_record");
    if (!v) return PD_OK;
    if (!json_is_boolean(v)) return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"no_record\" must be true or false", path);
    if (json_is_true(v) && t->n_labels == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"no_record\" without \"labels\"", path);
    t->no_record = json_is_true(v);
    return PD_OK;
}

/* "span_decoding": "viterbi" (the default: the best tag sequence),
 * "posterior" or {"rule": "posterior", "threshold": p} (the spans at least
 * p probable, 0.01 <= p <= 1, 0.5 when not given). The floor bounds the
 * candidates: their probabilities add up to the expected number of spans,
 * at most one a token, so at most 100 a token pass 0.01. */
static pd_status parse_span_decoding(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *v = json_object_get(root, "span_decoding");
    if (!v) return PD_OK;
    json_t *th = NULL;
    const char *rule = json_string_value(v);
    if (json_is_object(v)) {
        rule = json_string_value(json_object_get(v, "rule"));
        th = json_object_get(v, "threshold");
        if (json_object_size(v) != 1u + (th != NULL)) rule = NULL; /* an unknown key */
    }
    bool viterbi = rule && strcmp(rule, "viterbi") == 0;
    if (!rule || (!viterbi && strcmp(rule, "posterior") != 0) || (viterbi && th))
        return pdi_set_error(err, PD_ERR_FORMAT,
                             "%s: \"span_decoding\" must be \"viterbi\", \"posterior\" or {\"rule\": \"posterior\", "
                             "\"threshold\": p}",
                             path);
    double p = th ? json_number_value(th) : 0.5;
    if (th && (!json_is_number(th) || !(p >= 0.01 && p <= 1.0)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: span_decoding.threshold must be a number in [0.01, 1]", path);
    t->posterior_spans = !viterbi;
    t->span_threshold = p;
    return PD_OK;
}

/* "min_confidence": p, 0 <= p <= 1 (0 when not given): the head writes no
 * record whose confidence (pd_record) is below p. */
static pd_status parse_min_confidence(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *v = json_object_get(root, "min_confidence");
    double p = v ? json_number_value(v) : 0.0;
    if (v && (!json_is_number(v) || !(p >= 0.0 && p <= 1.0)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"min_confidence\" must be a number in [0, 1]", path);
    t->min_confidence = p;
    return PD_OK;
}

/* "max_chars": n, at least PDI_MIN_WINDOW (absent: 0, none): the
 * longest text the head reads whole; a pipeline reads longer ones in windows
 * of at most n characters. */
static pd_status parse_max_chars(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *v = json_object_get(root, "max_chars");
    if (!v) return PD_OK;
    json_int_t n = json_integer_value(v);
    if (!json_is_integer(v) || n < PDI_MIN_WINDOW || n > INT32_MAX)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"max_chars\" must be an integer of at least %d", path,
                             PDI_MIN_WINDOW);
    t->max_chars = (int32_t)n;
    return PD_OK;
}

static pd_status parse_labels(pdi_tagger *t, json_t *root, const char *path, pd_error *err)
{
    json_t *fields = json_object_get(root, "label_fields"), *labels = json_object_get(root, "labels");
    if (!fields && !labels) {
        if (json_object_get(root, "label_states"))
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"label_states\" without \"labels\"", path);
        return parse_no_record(t, root, path, err);
        return PD_OK;
    }
    if (!fields || !labels)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"label_fields\" and \"labels\" go together", path);
    pd_status rc = string_list(root, "label_fields", &t->label_fields, &t->n_label_fields, path, err);
    for (int32_t j = 0; !rc && j < t->n_label_fields; j++)
        if (span_index(t, t->label_fields[j]) >= 0)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: field '%s' is both a span and a label field", path,
                               t->label_fields[j]);
    if (rc) return rc;
    size_t n = json_is_array(labels) ? json_array_size(labels) : 0;
    if (n == 0) return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"labels\" must be a non-empty array", path);
    if (n > PD_MAX_CANDIDATES)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s: %zu labels, more than the limit of %d (PD_MAX_CANDIDATES)", path, n,
                             PD_MAX_CANDIDATES);
    int32_t nf = t->n_label_fields;
    if (!(t->label_values = calloc(n * (size_t)nf, sizeof *t->label_values)))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(labels, i);
        if (!json_is_array(l) || json_array_size(l) != (size_t)nf)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: labels[%zu] must be an array of %d values (one per label field)",
                                 path, i, nf);
        t->n_labels = (int32_t)i + 1;
        for (int32_t j = 0; j < nf; j++) {
            const char *v = json_string_value(json_array_get(l, (size_t)j));
            if (!v) return pdi_set_error(err, PD_ERR_FORMAT, "%s: labels[%zu][%d] is not a string", path, i, j);
            if (!(t->label_values[i * (size_t)nf + (size_t)j] = strdup(v)))
                return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        }
        for (size_t k = 0; k < i; k++) {
            int32_t j = 0;
            while (j < nf && strcmp(t->label_values[k * (size_t)nf + (size_t)j], t->label_values[i * (size_t)nf + (size_t)j]) == 0) j++;
            if (j == nf) return pdi_set_error(err, PD_ERR_FORMAT, "%s: labels[%zu] repeats labels[%zu]", path, i, k);
        }
    }
    rc = parse_label_states(t, root, path, err);
    return rc ? rc : parse_no_record(t, root, path, err);
}

pd_status pdi_tagger_parse(pd_head *h, json_t *root, const char *path, pd_error *err)
{
    pdi_tagger *t = h->tagger = calloc(1, sizeof *t);
    if (!t) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    const char *prompt = json_string_value(json_object_get(root, "prompt"));
    if (!prompt || (!strstr(prompt, "{text}") && !strstr(prompt, "{chars}")))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: a tagger head needs \"prompt\", a string holding {text} or {chars}",
                             path);
    if (!(t->prompt = strdup(prompt))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    pd_status rc = string_list(root, "spans", &t->spans, &t->n_spans, path, err);
    if (!rc && t->n_spans > PD_TAGGER_MAX_SPANS)
        rc = pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: %d span fields; a tagger head tags one or two", path, t->n_spans);
    t->n_tags = 1 + 2 * t->n_spans;
    if (!rc) rc = parse_link(t, root, path, err);
    if (!rc) rc = parse_labels(t, root, path, err);
    if (!rc) rc = parse_span_decoding(t, root, path, err);
    if (!rc) rc = parse_min_confidence(t, root, path, err);
    if (!rc) rc = parse_max_chars(t, root, path, err);
    if (!rc) rc = pdi_gazetteer_parse(h, root, path, err);
    if (!rc) rc = pdi_features_parse(h, root, path, err);
    return rc;
}

/* ------------------------------------------------------ head.safetensors */

pd_status pdi_tagger_tensors(pd_head *h, const pdi_tensor_store *st, const char *path, pd_error *err)
{
    pdi_tagger *t = h->tagger;
    int64_t H = h->hidden, T = t->n_tags, d = t->link_dim;
    pd_status rc = pdi_head_take_tensor(st, "tag.weight", T, H, false, &t->tag_w, path, err);
    if (!rc) rc = pdi_head_take_tensor(st, "tag.bias", T, 0, false, &t->tag_b, path, err);
    if (!rc) rc = pdi_head_take_tensor(st, "tag.transitions", T, T, true, &t->trans, path, err);
    if (!rc) rc = pdi_head_take_tensor(st, "tag.start", T, 0, true, &t->start, path, err);
    if (!rc) rc = pdi_head_take_tensor(st, "tag.end", T, 0, true, &t->end, path, err);
    if (!rc && t->link_from >= 0) {
        rc = pdi_head_take_tensor(st, "link.q.weight", d, H, false, &t->lq_w, path, err);
        if (!rc) rc = pdi_head_take_tensor(st, "link.q.bias", d, 0, false, &t->lq_b, path, err);
        if (!rc) rc = pdi_head_take_tensor(st, "link.k.weight", d, H, false, &t->lk_w, path, err);
        if (!rc) rc = pdi_head_take_tensor(st, "link.k.bias", d, 0, false, &t->lk_b, path, err);
        if (!rc) rc = pdi_head_take_tensor(st, "link.none", d, 0, false, &t->l_none, path, err);
    }
    if (!rc && t->n_labels > 0) {
        int64_t rows = t->n_labels + t->no_record;
        rc = pdi_head_take_tensor(st, "label.weight", rows, t->n_spans * t->n_label_states * H, false, &t->lab_w, path,
                                  err);
        if (!rc) rc = pdi_head_take_tensor(st, "label.bias", rows, 0, false, &t->lab_b, path, err);
        if (!rc) rc = pdi_head_take_tensor(st, "label.none", H, 0, false, &t->lab_none, path, err);
    }
    return rc ? rc : pdi_features_tensors(h, st, path, err);
}

/* ---------------------------------------------------------------- scores */

void pdi_tagger_emissions(const pd_head *h, const float *const *rows, int32_t n, const double *sparse, float *out)
{
    const pdi_tagger *t = h->tagger;
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < t->n_tags; k++) {
            int64_t at = (int64_t)i * t->n_tags + k;
            double e = pdi_head_dot(t->tag_w + (int64_t)k * h->hidden, rows[i], h->hidden) + (double)t->tag_b[k];
            out[at] = (float)(sparse ? e + sparse[at] : e);
        }
}

bool pdi_tagger_allowed(int32_t prev, int32_t next, bool boundary)
{
    int32_t prev_field = prev > 0 ? (prev - 1) / 2 : -1;
    if (!boundary) return next == (prev_field >= 0 ? 2 + 2 * prev_field : 0);
    if (next == 0 || next % 2 == 1) return true; /* O, B-f */
    return prev_field == (next - 2) / 2;         /* I-f after B-f or I-f */
}

pd_status pdi_tagger_viterbi(const pdi_tagger *t, const float *emissions, const uint8_t *boundary, int32_t n,
                             int32_t *tags, pd_error *err)
{
    int32_t T = t->n_tags;
    if (n <= 0) return PD_OK;
    double *score = malloc(sizeof *score * (size_t)T * 2);
    int32_t *back = malloc(sizeof *back * (size_t)T * (size_t)n);
    if (!score || !back) {
        free(score);
        free(back);
        return pdi_set_error(err, PD_ERR_NOMEM, "tagger: out of memory for %d tokens", n);
    }
    double *cur = score, *next = score + T;
    for (int32_t k = 0; k < T; k++) {
        cur[k] = pdi_tagger_allowed(-1, k, boundary[0]) ? (double)t->start[k] + (double)emissions[k] : -INFINITY;
        back[k] = -1;
    }
    for (int32_t i = 1; i < n; i++) {
        const float *e = emissions + (int64_t)i * T;
        for (int32_t k = 0; k < T; k++) {
            double best = -INFINITY;
            int32_t arg = -1;
            for (int32_t p = 0; p < T; p++) {
                if (cur[p] == -INFINITY || !pdi_tagger_allowed(p, k, boundary[i])) continue;
                double s = cur[p] + (double)t->trans[p * T + k];
                if (arg < 0 || s > best) {
                    best = s;
                    arg = p;
                }
            }
            next[k] = arg < 0 ? -INFINITY : best + (double)e[k];
            back[(int64_t)i * T + k] = arg;
        }
        double *swap = cur;
        cur = next;
        next = swap;
    }
    int32_t last = -1;
    double best = -INFINITY;
    for (int32_t k = 0; k < T; k++) {
        if (cur[k] == -INFINITY) continue;
        double s = cur[k] + (double)t->end[k];
        if (last < 0 || s > best) {
            best = s;
            last = k;
        }
    }
    /* "O" everywhere is always allowed, so some sequence is finite */
    for (int32_t i = n - 1; i >= 0; i--) {
        tags[i] = last;
        last = back[(int64_t)i * T + last];
    }
    free(score);
    free(back);
    return PD_OK;
}

/* v[j] = W[j] . x + b[j], rounded to float, for W [rows][hidden]. */
static void project(const float *w, const float *b, const float *x, int32_t rows, int64_t hidden, float *v)
{
    for (int32_t j = 0; j < rows; j++) v[j] = (float)(pdi_head_dot(w + j * hidden, x, hidden) + (double)b[j]);
}

void pdi_tagger_link_scores(const pd_head *h, const float *h_from, const float *const *to, int32_t n_to,
                            const double *sparse, float *work, float *out)
{
    const pdi_tagger *t = h->tagger;
    int32_t d = t->link_dim;
    double scale = 1.0 / sqrt((double)d);
    float *q = work, *k = work + d;
    project(t->lq_w, t->lq_b, h_from, d, h->hidden, q);
    for (int32_t a = 0; a < n_to; a++) {
        project(t->lk_w, t->lk_b, to[a], d, h->hidden, k);
        double s = pdi_head_dot(q, k, d) * scale;
        out[a] = (float)(sparse ? s + sparse[a] : s);
    }
    double none = pdi_head_dot(q, t->l_none, d) * scale;
    out[n_to] = (float)(sparse ? none + sparse[n_to] : none);
}

void pdi_tagger_label_logits(const pd_head *h, const float *const *x, const double *sparse, float *out)
{
    const pdi_tagger *t = h->tagger;
    int32_t inputs = t->n_spans * t->n_label_states;
    int64_t H = h->hidden, width = inputs * H;
    for (int32_t l = 0; l < t->n_labels + t->no_record; l++) {
        double s = (double)t->lab_b[l];
        for (int32_t k = 0; k < inputs; k++)
            s += pdi_head_dot(t->lab_w + l * width + k * H, x[k] ? x[k] : t->lab_none, H);
        out[l] = (float)(sparse ? s + sparse[l] : s);
    }
}
