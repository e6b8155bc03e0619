/* score.c - matching, the metric and its breakdowns, and the checks of a
 * submission. The rules are in docs/tianchi-eval.md. */
#include "te_internal.h"

#include <stdlib.h>
#include <string.h>

struct te_result {
    te_pool pool; /* issue messages, unknown label lists */
    te_score overall, pairs;
    te_label_score *labels[2];
    size_t n_labels[2];
    te_span_counts spans;
    te_mismatch *mm;
    te_error_class *mm_class; /* the class of each mismatch */
    size_t n_mm;
    long class_count[TE_N_CLASSES][2]; /* by class and side (te_mismatch_kind) */
    te_issue *issues;
    size_t n_issues, cap_issues, n_violations;
    te_input_summary inputs[TE_N_INPUTS];
    const te_eval *ev;  /* scored from, for the HTML report's confidence sweep */
    size_t ev_rows[2];  /* its gold and prediction rows then */
};

/* One distinct id of gold or predictions. */
typedef struct id_entry {
    long id;
    const te_row *first; /* its first row in input order */
    long quads, placeholders;
    int reported; /* an unknown-id issue was raised */
} id_entry;

typedef struct id_list {
    id_entry *v;
    size_t n;
} id_list;

/* State of one scoring run. */
typedef struct scorer {
    const te_eval *ev;
    te_result *res;
    te_error *err;
    const te_row **quads[2]; /* non-placeholder rows of gold and predictions */
    size_t n_quads[2];
    unsigned char *matched[2]; /* by index into ev->rows[k].v */
    id_list ids[2];
} scorer;

static const char *const field_names[TE_N_FIELDS] = {"aspect", "opinion", "category", "polarity"};

te_score te_score_make(long matched, long predicted, long gold)
{
    te_score s = {matched, predicted, gold, 0.0, 0.0, 0.0};
    if (predicted > 0)
        s.precision = (double)matched / (double)predicted;
    if (gold > 0)
        s.recall = (double)matched / (double)gold;
    if (s.precision + s.recall > 0)
        s.f1 = 2.0 * s.precision * s.recall / (s.precision + s.recall);
    return s;
}

/* ---------------------------------------------------------------- sorting */

/* Order rows by id, then by the first `depth` fields. */
static int cmp_key(const te_row *a, const te_row *b, int depth)
{
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    for (int i = 0; i < depth; i++) {
        int c = strcmp(a->f[i], b->f[i]);
        if (c)
            return c;
    }
    return 0;
}

/* The same, ties broken by input order (rows of one kind live in one array,
 * in input order), so that earlier copies of a quadruple are matched first and
 * the result does not depend on qsort. */
static int cmp_rows(const te_row *a, const te_row *b, int depth)
{
    int c = cmp_key(a, b, depth);
    return c ? c : (a > b) - (a < b);
}

static int cmp_quad(const void *a, const void *b)
{
    return cmp_rows(*(const te_row *const *)a, *(const te_row *const *)b, TE_N_FIELDS);
}

static int cmp_pair(const void *a, const void *b)
{
    return cmp_rows(*(const te_row *const *)a, *(const te_row *const *)b, 2);
}

static int cmp_id(const void *a, const void *b)
{
    return cmp_rows(*(const te_row *const *)a, *(const te_row *const *)b, 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* -------------------------------------------------------------- matching */

/* Walk two sorted lists and pair equal keys one to one: a multiset
 * intersection. Marks matched rows when marks are given; returns the count. */
static long match_sorted(const te_row **gold, size_t ng, const te_row **pred, size_t np, int depth,
                         const scorer *sc, int mark)
{
    size_t i = 0, j = 0;
    long s = 0;
    while (i < ng && j < np) {
        int c = cmp_key(gold[i], pred[j], depth);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {
            if (mark) {
                sc->matched[0][gold[i] - sc->ev->rows[0].v] = 1;
                sc->matched[1][pred[j] - sc->ev->rows[1].v] = 1;
            }
            s++, i++, j++;
        }
    }
    return s;
}

const te_review *te_find_review(const te_eval *ev, long id)
{
    size_t lo = 0, hi = ev->n_reviews;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev->reviews[mid].id < id)
            lo = mid + 1;
        else if (ev->reviews[mid].id > id)
            hi = mid;
        else
            return &ev->reviews[mid];
    }
    return NULL;
}

static id_entry *find_id(const id_list *l, long id)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].id < id)
            lo = mid + 1;
        else if (l->v[mid].id > id)
            hi = mid;
        else
            return &l->v[mid];
    }
    return NULL;
}

static int outside(const char *term, const te_review *rv)
{
    return rv && strcmp(term, TE_PLACEHOLDER) != 0 && !strstr(rv->text, term);
}

/* ------------------------------------------------------------- preparing */

static int nomem(scorer *sc)
{
    te_fail(sc->err, TE_ERR_NOMEM, NULL, 0, "out of memory while scoring");
    return -1;
}

/* The quadruple lists (placeholders left out), the match marks, and the
 * distinct ids of each kind. */
static int prepare(scorer *sc)
{
    for (int k = 0; k < 2; k++) {
        const te_rows *rows = &sc->ev->rows[k];
        size_t n = rows->n ? rows->n : 1;
        const te_row **all = malloc(n * sizeof *all);
        sc->quads[k] = malloc(n * sizeof *sc->quads[k]);
        sc->matched[k] = calloc(n, 1);
        if (!all || !sc->quads[k] || !sc->matched[k]) {
            free(all);
            return nomem(sc);
        }
        for (size_t i = 0; i < rows->n; i++) {
            all[i] = &rows->v[i];
            if (!rows->v[i].placeholder)
                sc->quads[k][sc->n_quads[k]++] = &rows->v[i];
        }
        qsort(all, rows->n, sizeof *all, cmp_id);
        id_list *ids = &sc->ids[k];
        ids->v = calloc(n, sizeof *ids->v);
        if (!ids->v) {
            free(all);
            return nomem(sc);
        }
        for (size_t i = 0; i < rows->n; i++) {
            if (ids->n == 0 || ids->v[ids->n - 1].id != all[i]->id)
                ids->v[ids->n++] = (id_entry){all[i]->id, all[i], 0, 0, 0};
            id_entry *e = &ids->v[ids->n - 1];
            if (all[i]->placeholder)
                e->placeholders++;
            else
                e->quads++;
        }
        free(all);
        te_input_summary *sum = &sc->res->inputs[k];
        sum->file = sc->ev->last_file[k];
        sum->rows = (long)rows->n;
        sum->quadruples = (long)sc->n_quads[k];
        sum->placeholders = (long)(rows->n - sc->n_quads[k]);
        sum->ids = (long)ids->n;
    }
    te_input_summary *rv = &sc->res->inputs[TE_INPUT_REVIEWS];
    rv->file = sc->ev->last_file[TE_INPUT_REVIEWS];
    rv->rows = rv->quadruples = rv->ids = (long)sc->ev->n_reviews;
    return 0;
}

/* ---------------------------------------------------------------- labels */

/* Labels of an axis: the task's set, then the other labels of the inputs. */
static int build_labels(scorer *sc, te_axis axis)
{
    int field = axis == TE_AXIS_CATEGORY ? TE_CATEGORY : TE_POLARITY;
    const char *const *set = axis == TE_AXIS_CATEGORY ? te_categories : te_polarities;
    size_t n_set = axis == TE_AXIS_CATEGORY ? te_n_categories : te_n_polarities;
    size_t total = sc->n_quads[0] + sc->n_quads[1];
    const char **other = malloc((total ? total : 1) * sizeof *other);
    if (!other)
        return nomem(sc);
    size_t n_other = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sc->n_quads[k]; i++)
            if (te_label_index(axis, sc->quads[k][i]->f[field]) < 0)
                other[n_other++] = sc->quads[k][i]->f[field];
    qsort(other, n_other, sizeof *other, cmp_str);
    size_t n_unique = 0;
    for (size_t i = 0; i < n_other; i++)
        if (n_unique == 0 || strcmp(other[n_unique - 1], other[i]) != 0)
            other[n_unique++] = other[i];

    te_label_score *labels = calloc(n_set + n_unique, sizeof *labels);
    if (!labels) {
        free(other);
        return nomem(sc);
    }
    for (size_t i = 0; i < n_set; i++)
        labels[i] = (te_label_score){set[i], 1, {0, 0, 0, 0, 0, 0}};
    for (size_t i = 0; i < n_unique; i++)
        labels[n_set + i] = (te_label_score){other[i], 0, {0, 0, 0, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < sc->n_quads[k]; i++) {
            const te_row *r = sc->quads[k][i];
            int idx = te_label_index(axis, r->f[field]);
            size_t at = idx >= 0 ? (size_t)idx : 0;
            if (idx < 0) {
                const char **hit = bsearch(&r->f[field], other, n_unique, sizeof *other, cmp_str);
                at = n_set + (size_t)(hit - other);
            }
            te_score *s = &labels[at].score;
            if (k == 0)
                s->gold++;
            else
                s->predicted++;
            /* Count a match once, on the gold side. */
            if (k == 0 && sc->matched[0][r - sc->ev->rows[0].v])
                s->matched++;
        }
    }
    for (size_t i = 0; i < n_set + n_unique; i++) {
        te_score *s = &labels[i].score;
        *s = te_score_make(s->matched, s->predicted, s->gold);
    }
    free(other);
    sc->res->labels[axis] = labels;
    sc->res->n_labels[axis] = n_set + n_unique;
    return 0;
}

/* ------------------------------------------------------------ mismatches */

/* A mismatch and the row it came from, to sort them together. */
typedef struct mm_entry {
    te_mismatch m;
    const te_row *row;
} mm_entry;

/* By id, misses first, then by line, then by input order (a JSONL line holds
 * several records), so the order does not depend on qsort. */
static int cmp_mismatch(const void *a, const void *b)
{
    const mm_entry *x = a, *y = b;
    if (x->m.quad.id != y->m.quad.id)
        return x->m.quad.id < y->m.quad.id ? -1 : 1;
    if (x->m.kind != y->m.kind)
        return x->m.kind < y->m.kind ? -1 : 1;
    if (x->m.line != y->m.line)
        return x->m.line < y->m.line ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Misses, false positives, their classes and the span counts. */
static int collect_mismatches(scorer *sc)
{
    te_result *res = sc->res;
    size_t n = sc->n_quads[0] + sc->n_quads[1];
    mm_entry *all = malloc((n ? n : 1) * sizeof *all);
    const te_row **rows = malloc((n ? n : 1) * sizeof *rows);
    res->mm = malloc((n ? n : 1) * sizeof *res->mm);
    res->mm_class = malloc((n ? n : 1) * sizeof *res->mm_class);
    if (!all || !rows || !res->mm || !res->mm_class) {
        free(all);
        free(rows);
        return nomem(sc);
    }
    res->spans.available = sc->ev->n_reviews > 0;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < sc->n_quads[k]; i++) {
            const te_row *r = sc->quads[k][i];
            const te_review *rv = te_find_review(sc->ev, r->id);
            int a_out = outside(r->f[TE_ASPECT], rv), o_out = outside(r->f[TE_OPINION], rv);
            if (k == 1 && res->spans.available) {
                res->spans.no_review += !rv;
                res->spans.aspect_outside += a_out;
                res->spans.opinion_outside += o_out;
                res->spans.either_outside += a_out || o_out;
            }
            if (sc->matched[k][r - sc->ev->rows[k].v])
                continue;
            all[res->n_mm++] = (mm_entry){
                {k == 0 ? TE_MISS : TE_FALSE_POSITIVE, {r->id, r->f[0], r->f[1], r->f[2], r->f[3]},
                 r->file, r->line, rv ? rv->text : NULL, a_out, o_out},
                r};
        }
    }
    qsort(all, res->n_mm, sizeof *all, cmp_mismatch);
    for (size_t i = 0; i < res->n_mm; i++) {
        res->mm[i] = all[i].m;
        rows[i] = all[i].row;
    }
    free(all);
    int bad = te_classify(sc->ev, res->mm, rows, res->n_mm, res->mm_class);
    free(rows);
    if (bad)
        return nomem(sc);
    for (size_t i = 0; i < res->n_mm; i++)
        res->class_count[res->mm_class[i]][res->mm[i].kind]++;
    return 0;
}

/* ---------------------------------------------------------------- issues */

static int add_issue(scorer *sc, te_issue_kind kind, int rule, const char *file, long line,
                     long id, const char *message)
{
    te_result *res = sc->res;
    if (!message || te_grow((void **)&res->issues, &res->cap_issues, res->n_issues + 1,
                            sizeof *res->issues) != 0)
        return nomem(sc);
    res->issues[res->n_issues++] = (te_issue){kind, rule, file, line, id, message};
    res->n_violations += rule != 0;
    return 0;
}

/* A label outside its set: a rule of the submission, a note about gold. */
static int check_label(scorer *sc, const te_row *r, te_axis axis, int gold)
{
    int field = axis == TE_AXIS_CATEGORY ? TE_CATEGORY : TE_POLARITY;
    if (te_label_index(axis, r->f[field]) >= 0)
        return 0;
    char snip[64];
    te_snippet(r->f[field], strlen(r->f[field]), snip, sizeof snip, 40);
    const char *msg = te_pool_printf(
        &sc->res->pool, "%s%s \"%s\" is not in the set (%s)", gold ? "gold " : "",
        field_names[field], snip,
        axis == TE_AXIS_CATEGORY ? "包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他"
                                 : "正面 中性 负面");
    te_issue_kind kind = gold ? TE_ISSUE_GOLD_LABEL
                              : axis == TE_AXIS_CATEGORY ? TE_ISSUE_CATEGORY : TE_ISSUE_POLARITY;
    return add_issue(sc, kind, !gold, r->file, r->line, r->id, msg);
}

/* Issues the loaders found: a BOM, a header row in a submission. */
static int check_notes(scorer *sc)
{
    const te_eval *ev = sc->ev;
    for (size_t i = 0; i < ev->n_notes; i++) {
        const te_note *n = &ev->notes[i];
        int rule = n->input == TE_INPUT_PREDICTIONS;
        const char *msg =
            n->kind == TE_ISSUE_BOM
                ? "the file starts with a UTF-8 BOM; the task wants files without one (read anyway)"
                : "a header row; a submission has none (skipped)";
        if (add_issue(sc, n->kind, rule, n->file, n->line, -1, msg) != 0)
            return -1;
    }
    return 0;
}

/* Each submission row in input order: id order, unknown ids, labels, empty
 * terms, placeholders next to quadruples. */
static int check_rows(scorer *sc)
{
    const te_rows *rows = &sc->ev->rows[TE_INPUT_PREDICTIONS];
    int have_reviews = sc->ev->n_reviews > 0;
    te_pool *pool = &sc->res->pool;
    for (size_t i = 0; i < rows->n; i++) {
        const te_row *r = &rows->v[i];
        /* A labels file is in the order its reviews were answered, not by id. */
        if (i > 0 && r->id < rows->v[i - 1].id && !r->labels &&
            add_issue(sc, TE_ISSUE_ORDER, 1, r->file, r->line, r->id,
                      te_pool_printf(pool, "id %ld comes after id %ld: ids must be in order",
                                     r->id, rows->v[i - 1].id)) != 0)
            return -1;
        id_entry *e = find_id(&sc->ids[1], r->id);
        if (have_reviews && !te_find_review(sc->ev, r->id) && !e->reported) {
            e->reported = 1;
            if (add_issue(sc, TE_ISSUE_UNKNOWN_ID, 1, r->file, r->line, r->id,
                          te_pool_printf(pool, "id %ld is not an id of the reviews", r->id)) != 0)
                return -1;
        }
        if (r->placeholder) {
            if (e->quads > 0 &&
                add_issue(sc, TE_ISSUE_PLACEHOLDER_MIXED, 0, r->file, r->line, r->id,
                          te_pool_printf(pool,
                                         "placeholder row for id %ld, which has quadruples too "
                                         "(ignored)", r->id)) != 0)
                return -1;
            continue;
        }
        for (int f = TE_ASPECT; f <= TE_OPINION; f++)
            if (r->f[f][0] == '\0' &&
                add_issue(sc, TE_ISSUE_EMPTY_TERM, 1, r->file, r->line, r->id,
                          te_pool_printf(pool, "empty %s; write _ for an implicit one",
                                         field_names[f])) != 0)
                return -1;
        if (check_label(sc, r, TE_AXIS_CATEGORY, 0) != 0 ||
            check_label(sc, r, TE_AXIS_POLARITY, 0) != 0)
            return -1;
    }
    return 0;
}

/* Every review id (or, without reviews, every gold id) needs a row. */
static int check_missing(scorer *sc)
{
    const te_eval *ev = sc->ev;
    const char *file = ev->last_file[TE_INPUT_PREDICTIONS];
    size_t n = ev->n_reviews ? ev->n_reviews : sc->ids[0].n;
    const char *of = ev->n_reviews ? "reviews" : "gold labels";
    for (size_t i = 0; i < n; i++) {
        long id = ev->n_reviews ? ev->reviews[i].id : sc->ids[0].v[i].id;
        if (find_id(&sc->ids[1], id))
            continue;
        const char *msg = te_pool_printf(&sc->res->pool,
                                         "id %ld of the %s is missing: every review needs a row "
                                         "(%ld,_,_,_,_ when it has no quadruple)", id, of, id);
        if (add_issue(sc, TE_ISSUE_MISSING_ID, 1, file, 0, id, msg) != 0)
            return -1;
    }
    return 0;
}

/* Whether characters [start, end) of text are term. */
static int span_is(const char *text, long start, long end, const char *term)
{
    if (start < 0 || end < start)
        return 0;
    const char *p = text, *from = NULL;
    for (long c = 0; c <= end; c++) {
        if (c == start)
            from = p;
        if (c == end)
            return strlen(term) == (size_t)(p - from) && memcmp(from, term, strlen(term)) == 0;
        if (!*p)
            return 0;
        uint32_t cp;
        p += te_utf8_next(p, &cp);
    }
    return 0;
}

/* Notes about gold: labels outside the sets, ids without a review, offsets
 * that disagree with the review. */
static int check_gold(scorer *sc)
{
    const te_eval *ev = sc->ev;
    te_pool *pool = &sc->res->pool;
    for (size_t i = 0; ev->n_reviews && i < sc->ids[0].n; i++) {
        const id_entry *e = &sc->ids[0].v[i];
        if (!te_find_review(ev, e->id) &&
            add_issue(sc, TE_ISSUE_GOLD_ID_UNKNOWN, 0, e->first->file, e->first->line, e->id,
                      te_pool_printf(pool, "gold id %ld has no review", e->id)) != 0)
            return -1;
    }
    const te_rows *rows = &ev->rows[TE_INPUT_GOLD];
    for (size_t i = 0; i < rows->n; i++) { /* input order, for the reader */
        const te_row *r = &rows->v[i];
        if (r->placeholder)
            continue;
        if (check_label(sc, r, TE_AXIS_CATEGORY, 1) != 0 ||
            check_label(sc, r, TE_AXIS_POLARITY, 1) != 0)
            return -1;
        const te_review *rv = te_find_review(ev, r->id);
        const long span[2][2] = {{r->a_start, r->a_end}, {r->o_start, r->o_end}};
        for (int f = TE_ASPECT; rv && f <= TE_OPINION; f++) {
            if (strcmp(r->f[f], TE_PLACEHOLDER) == 0 || span[f][0] < 0 || span[f][1] < 0 ||
                span_is(rv->text, span[f][0], span[f][1], r->f[f]))
                continue;
            char snip[64];
            te_snippet(r->f[f], strlen(r->f[f]), snip, sizeof snip, 40);
            if (add_issue(sc, TE_ISSUE_GOLD_SPAN, 0, r->file, r->line, r->id,
                          te_pool_printf(pool,
                                         "gold %s \"%s\" is not at characters %ld..%ld of "
                                         "review %ld", field_names[f], snip, span[f][0],
                                         span[f][1], r->id)) != 0)
                return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- scoring */

static void scorer_free(scorer *sc)
{
    for (int k = 0; k < 2; k++) {
        free(sc->quads[k]);
        free(sc->matched[k]);
        free(sc->ids[k].v);
    }
}

long te_match_rows(const te_eval *ev, const unsigned char *keep, unsigned char *pred_matched,
                   unsigned char *gold_matched)
{
    const te_rows *rows[2] = {&ev->rows[0], &ev->rows[1]};
    const te_row **q[2] = {malloc((rows[0]->n + 1) * sizeof *q[0]),
                           malloc((rows[1]->n + 1) * sizeof *q[1])};
    unsigned char *gm = gold_matched ? gold_matched : calloc(rows[0]->n + 1, 1);
    long s = -1;
    if (q[0] && q[1] && gm) {
        size_t n[2] = {0, 0};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < rows[k]->n; i++)
                if (!rows[k]->v[i].placeholder && (k == 0 || !keep || keep[i]))
                    q[k][n[k]++] = &rows[k]->v[i];
        qsort(q[0], n[0], sizeof *q[0], cmp_quad);
        qsort(q[1], n[1], sizeof *q[1], cmp_quad);
        scorer sc = {ev, NULL, NULL, {NULL, NULL}, {0, 0}, {gm, pred_matched}, {{NULL, 0}, {NULL, 0}}};
        s = match_sorted(q[0], n[0], q[1], n[1], TE_N_FIELDS, &sc, 1);
    }
    if (gm != gold_matched)
        free(gm);
    free(q[0]);
    free(q[1]);
    return s;
}

/* A JSONL line is the extractor's output for a review: an id that is not a
 * review's means it ran over other reviews, an input error rather than the
 * unknown-id rule of a submission. */
static int check_jsonl_ids(const te_eval *ev, te_error *err)
{
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    for (size_t i = 0; ev->n_reviews && i < rows->n; i++) {
        const te_row *r = &rows->v[i];
        if (r->jsonl && !te_find_review(ev, r->id)) {
            te_fail(err, TE_ERR_FORMAT, r->file, r->line,
                    "id %ld is not an id of the reviews (%s)", r->id,
                    ev->last_file[TE_INPUT_REVIEWS]);
            return -1;
        }
    }
    return 0;
}

te_result *te_eval_score(const te_eval *ev, te_error *err)
{
    if (!ev) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no evaluator");
        return NULL;
    }
    if (check_jsonl_ids(ev, err) != 0)
        return NULL;
    te_result *res = calloc(1, sizeof *res);
    if (!res) {
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory while scoring");
        return NULL;
    }
    res->ev = ev;
    res->ev_rows[0] = ev->rows[TE_INPUT_GOLD].n;
    res->ev_rows[1] = ev->rows[TE_INPUT_PREDICTIONS].n;
    scorer sc = {ev, res, err, {NULL, NULL}, {0, 0}, {NULL, NULL}, {{NULL, 0}, {NULL, 0}}};
    int bad = prepare(&sc);
    if (!bad) {
        const te_row **g = sc.quads[0], **p = sc.quads[1];
        size_t ng = sc.n_quads[0], np = sc.n_quads[1];
        qsort(g, ng, sizeof *g, cmp_quad);
        qsort(p, np, sizeof *p, cmp_quad);
        res->overall = te_score_make(match_sorted(g, ng, p, np, TE_N_FIELDS, &sc, 1), (long)np,
                                     (long)ng);
        qsort(g, ng, sizeof *g, cmp_pair);
        qsort(p, np, sizeof *p, cmp_pair);
        res->pairs = te_score_make(match_sorted(g, ng, p, np, 2, &sc, 0), (long)np, (long)ng);
        bad = build_labels(&sc, TE_AXIS_CATEGORY) || build_labels(&sc, TE_AXIS_POLARITY) ||
              collect_mismatches(&sc) || check_notes(&sc) || check_rows(&sc) ||
              check_missing(&sc) || check_gold(&sc);
    }
    scorer_free(&sc);
    if (bad) {
        te_result_free(res);
        return NULL;
    }
    return res;
}

const te_eval *te_result_eval(const te_result *res)
{
    const te_eval *ev = res->ev;
    return ev->rows[TE_INPUT_GOLD].n == res->ev_rows[0] &&
                   ev->rows[TE_INPUT_PREDICTIONS].n == res->ev_rows[1]
               ? ev
               : NULL;
}

void te_result_free(te_result *res)
{
    if (!res)
        return;
    te_pool_free(&res->pool);
    free(res->labels[0]);
    free(res->labels[1]);
    free(res->mm);
    free(res->mm_class);
    free(res->issues);
    free(res);
}

/* ------------------------------------------------------------- accessors */

te_score te_result_overall(const te_result *res)
{
    return res->overall;
}

te_score te_result_pairs(const te_result *res)
{
    return res->pairs;
}

size_t te_result_n_labels(const te_result *res, te_axis axis)
{
    return (unsigned)axis < 2 ? res->n_labels[axis] : 0;
}

int te_result_has_unknown_labels(const te_result *res)
{
    return res->n_labels[TE_AXIS_CATEGORY] > te_n_categories || res->n_labels[TE_AXIS_POLARITY] > te_n_polarities;
}

const te_label_score *te_result_label(const te_result *res, te_axis axis, size_t i)
{
    return (unsigned)axis < 2 && i < res->n_labels[axis] ? &res->labels[axis][i] : NULL;
}

const te_label_score *te_result_find_label(const te_result *res, te_axis axis, const char *label)
{
    for (size_t i = 0; label && i < te_result_n_labels(res, axis); i++)
        if (strcmp(res->labels[axis][i].label, label) == 0)
            return &res->labels[axis][i];
    return NULL;
}

te_span_counts te_result_spans(const te_result *res)
{
    return res->spans;
}

size_t te_result_n_mismatches(const te_result *res)
{
    return res->n_mm;
}

const te_mismatch *te_result_mismatch(const te_result *res, size_t i)
{
    return i < res->n_mm ? &res->mm[i] : NULL;
}

te_error_class te_result_mismatch_class(const te_result *res, size_t i)
{
    return i < res->n_mm ? res->mm_class[i] : TE_N_CLASSES;
}

long te_result_class_count(const te_result *res, te_error_class c, te_mismatch_kind side)
{
    return (unsigned)c < TE_N_CLASSES && (unsigned)side < 2 ? res->class_count[c][side] : 0;
}

size_t te_result_n_issues(const te_result *res)
{
    return res->n_issues;
}

const te_issue *te_result_issue(const te_result *res, size_t i)
{
    return i < res->n_issues ? &res->issues[i] : NULL;
}

size_t te_result_n_violations(const te_result *res)
{
    return res->n_violations;
}

te_input_summary te_result_input(const te_result *res, te_input kind)
{
    te_input_summary none = {NULL, 0, 0, 0, 0};
    return (unsigned)kind < TE_N_INPUTS ? res->inputs[kind] : none;
}

const char *te_issue_kind_name(te_issue_kind kind)
{
    switch (kind) {
    case TE_ISSUE_BOM: return "bom";
    case TE_ISSUE_HEADER: return "header";
    case TE_ISSUE_MISSING_ID: return "missing-id";
    case TE_ISSUE_UNKNOWN_ID: return "unknown-id";
    case TE_ISSUE_ORDER: return "order";
    case TE_ISSUE_CATEGORY: return "category";
    case TE_ISSUE_POLARITY: return "polarity";
    case TE_ISSUE_EMPTY_TERM: return "empty-term";
    case TE_ISSUE_PLACEHOLDER_MIXED: return "placeholder-mixed";
    case TE_ISSUE_GOLD_LABEL: return "gold-label";
    case TE_ISSUE_GOLD_SPAN: return "gold-span";
    case TE_ISSUE_GOLD_ID_UNKNOWN: return "gold-id-unknown";
    }
    return "unknown";
}
