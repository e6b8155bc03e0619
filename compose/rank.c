/* rank.c - which reviews a person should label first (pd_ranker,
 * pocketdec_compose.h "Ranking reviews to label"): each review's usefulness
 * by one rule, the model's own uncertainty or a seeded draw, and the order
 * most useful first. `pocketdec rank` and the annotation queue of
 * `pocketdec serve --teach` both call this, so they agree. */
#include "heads.h"
#include "tag_extract.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const order_names[] = {"confidence", "entropy", "complaint", "random"};

/* The label values that mean a complaint, in the schemas this project ships
 * (tianchi-makeup's 负面, train/examples/coarse's 差评) and in English. */
static const char *const negative_values[] = {"负面", "差评", "negative", "neg"};

struct pd_ranker {
    pd_rank_order order;
    uint64_t seed;
    pd_pipeline *pipe;            /* the records a person is shown, and the confidence rule */
    pd_tag_extractor *tx;         /* entropy and complaint: a tagger head's pass */
    pd_context *ctx;
    bool *negative;               /* complaint: [n_labels] whether label class c is a complaint */
};

const char *pd_rank_order_name(pd_rank_order order)
{
    return (unsigned)order < sizeof order_names / sizeof order_names[0] ? order_names[order] : NULL;
}

pd_status pd_rank_order_parse(const char *name, pd_rank_order *order, pd_error *err)
{
    for (size_t k = 0; name && k < sizeof order_names / sizeof order_names[0]; k++)
        if (strcmp(name, order_names[k]) == 0) {
            *order = (pd_rank_order)k;
            return PD_OK;
        }
    return pdi_set_error(err, PD_ERR_ARG, "no ordering '%s': confidence, entropy, complaint or random",
                         name ? name : "(none)");
}

/* How many of a tagger's label classes are complaints: those whose value of
 * some label field is a negative value; with is, marks them there. */
static int32_t negative_classes(const pdi_tagger *t, bool *is)
{
    int32_t found = 0;
    for (int32_t c = 0; c < t->n_labels; c++) {
        bool neg = false;
        for (int32_t j = 0; j < t->n_label_fields; j++)
            for (size_t v = 0; v < sizeof negative_values / sizeof negative_values[0]; v++)
                neg |= strcmp(t->label_values[(size_t)c * (size_t)t->n_label_fields + (size_t)j], negative_values[v]) == 0;
        found += neg;
        if (is) is[c] = neg;
    }
    return found;
}

/* From a seed model, complaint reached random's 800-label F1 in the fewest
 * labels on the mean and before random on every fold, and from nothing it
 * beat random on every fold too; confidence, within noise of it, reads any
 * head (train/README.md, "The simulated annotator"). */
pd_rank_order pd_rank_default_order(const pd_head *head)
{
    bool tagger = head && pd_head_get_type(head) == PD_HEAD_TAGGER && head->tagger;
    return tagger && negative_classes(head->tagger, NULL) ? PD_RANK_COMPLAINT : PD_RANK_CONFIDENCE;
}

/* The complaint classes into r->negative. Fails when there are none. */
static pd_status complaint_classes(pd_ranker *r, pd_error *err)
{
    const pdi_tagger *t = pdi_tag_extractor_tagger(r->tx);
    if (!(r->negative = calloc((size_t)t->n_labels + 1, sizeof *r->negative)))
        return pdi_set_error(err, PD_ERR_NOMEM, "out of memory ranking reviews");
    if (!negative_classes(t, r->negative))
        return pdi_set_error(err, PD_ERR_ARG, "the complaint ordering needs a label value 负面, 差评, negative or neg "
                                              "among the head's labels; this head has none");
    return PD_OK;
}

pd_ranker *pd_ranker_new(const pd_model *model, const pd_schema *schema, const pd_head *head, pd_rank_order order,
                         uint64_t seed, const pd_pipeline_params *params, pd_error *err)
{
    if (!pd_rank_order_name(order)) {
        pdi_set_error(err, PD_ERR_ARG, "no ordering number %d", (int)order);
        return NULL;
    }
    pd_ranker *r = calloc(1, sizeof *r);
    if (!r) {
        pdi_set_error(err, PD_ERR_NOMEM, "out of memory ranking reviews");
        return NULL;
    }
    r->order = order;
    r->seed = seed;
    pd_status st = (r->pipe = pd_pipeline_new(model, schema, head, params, err)) ? PD_OK : err->code;
    bool tagger = head && pd_head_get_type(head) == PD_HEAD_TAGGER;
    if (!st && (order == PD_RANK_ENTROPY || order == PD_RANK_COMPLAINT)) {
        if (!tagger)
            st = pdi_set_error(err, PD_ERR_ARG, "the %s ordering reads a tagger head's pass; this model has %s",
                               order_names[order], head ? "another head" : "no head (confidence or random work)");
        else if (!(r->tx = pd_tag_extractor_new(model, schema, head, err)))
            st = err->code;
        if (!st) {
            pd_context_params cp = pd_context_default_params();
            cp.n_threads = params ? params->n_threads : 0;
            if (params && params->n_ctx) cp.n_ctx = params->n_ctx;
            if (!(r->ctx = pd_context_new(model, &cp, err))) st = err->code;
        }
        if (!st && order == PD_RANK_COMPLAINT) st = complaint_classes(r, err);
    }
    if (st) {
        pd_ranker_free(r);
        return NULL;
    }
    return r;
}

void pd_ranker_free(pd_ranker *r)
{
    if (!r) return;
    pd_pipeline_free(r->pipe);
    pd_tag_extractor_free(r->tx);
    pd_context_free(r->ctx);
    free(r->negative);
    free(r);
}

/* A uniform draw in [0, 1) from the seed and the id alone (FNV-1a, then
 * splitmix64's finaliser): the same review gets the same draw whatever else
 * is ranked beside it. */
static double draw(uint64_t seed, const char *id)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)(id ? id : ""); *p; p++) h = (h ^ *p) * 1099511628211ull;
    uint64_t z = h ^ (seed + 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* The mean over the read copy's tokens of the entropy (nats) of each
 * token's tag marginals. */
static double mean_entropy(const pd_tag_trace *tr)
{
    if (!tr->tag_marginals || tr->n_read <= 0) return 0;
    double sum = 0;
    for (int32_t i = 0; i < tr->n_read; i++)
        for (int32_t k = 0; k < tr->n_tags; k++) {
            double p = tr->tag_marginals[(size_t)i * (size_t)tr->n_tags + (size_t)k];
            if (p > 0) sum -= p * log(p);
        }
    return sum / tr->n_read;
}

/* The largest probability any candidate record of the pass gives to the
 * complaint classes (softmax of its label row, the no-record class in the
 * denominator). */
static double complaint_mass(const pd_ranker *r, const pd_tag_trace *tr)
{
    double best = 0;
    for (int32_t row = 0; row < tr->n_label_rows; row++) {
        const float *l = tr->label_logits + (size_t)row * (size_t)tr->n_labels;
        double mx = l[0], z = 0, neg = 0;
        for (int32_t c = 1; c < tr->n_labels; c++) mx = l[c] > mx ? l[c] : mx;
        for (int32_t c = 0; c < tr->n_labels; c++) {
            double e = exp(l[c] - mx);
            z += e;
            if (r->negative[c]) neg += e;
        }
        if (neg / z > best) best = neg / z;
    }
    return best;
}

pd_status pd_ranker_score(pd_ranker *r, const char *id, const char *text, size_t len, double *score,
                          pd_extraction **records, pd_error *err)
{
    if (records) *records = NULL;
    if (!r || !score || (!text && len)) return pdi_set_error(err, PD_ERR_ARG, "no ranker, text or score");
    *score = 0;
    pd_extraction *x = NULL;
    pd_status st = PD_OK;
    if (r->order == PD_RANK_CONFIDENCE || records) st = pd_pipeline_extract(r->pipe, text ? text : "", len, &x, err);
    if (!st && r->order == PD_RANK_CONFIDENCE) {
        double least = 0; /* no record: as unsure as can be */
        for (int32_t k = 0; k < x->n_records; k++)
            if (k == 0 || x->records[k].confidence < least) least = x->records[k].confidence;
        *score = 1 - least;
    } else if (!st && r->order == PD_RANK_RANDOM) {
        *score = draw(r->seed, id);
    } else if (!st) {
        pd_tag_trace *tr = NULL;
        if (len && !(st = pd_tag_extract_trace(r->ctx, r->tx, text, len, NULL, &tr, err)))
            *score = r->order == PD_RANK_ENTROPY ? mean_entropy(tr) : complaint_mass(r, tr);
        pd_tag_trace_free(tr);
    }
    if (st || !records) pd_extraction_free(x);
    else *records = x;
    return st;
}

/* qsort's comparison for pd_rank_sort: higher score first, then input order. */
typedef struct ranked {
    double score;
    size_t i;
} ranked;

static int by_usefulness(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

pd_status pd_rank_sort(const double *scores, size_t n, size_t *order, pd_error *err)
{
    ranked *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory sorting %zu reviews", n);
    for (size_t i = 0; i < n; i++) v[i] = (ranked){isnan(scores[i]) ? -INFINITY : scores[i], i};
    qsort(v, n, sizeof *v, by_usefulness);
    for (size_t i = 0; i < n; i++) order[i] = v[i].i;
    free(v);
    return PD_OK;
}
