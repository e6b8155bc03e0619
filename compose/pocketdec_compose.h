/*
 * pocketdec_compose.h - what combines decision heads and schemas (compose/):
 * extracted records relabelled by a decision head, and extraction by
 * decisions with a tagger head. Part of libpocketdec; include pocketdec.h for
 * all of it.
 */
#ifndef POCKETDEC_COMPOSE_H
#define POCKETDEC_COMPOSE_H

#include "pocketdec_adapters.h"
#include "pocketdec_heads.h"
#include "pocketdec_schemas.h"
#include "pocketdec_drafts.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- bundles */

/* What a user names as "the model", opened in one call: a bundle folder
 * (base/ an HF directory or .gguf file, adapter/ a PEFT adapter, head/ a
 * head; a folder with no config.json of its own and a base/ beside its
 * parts, as models/tianchi), an HF directory or a .gguf file. The base is
 * loaded, the bundle's adapter/ and then params' adapters are applied, and
 * the head (params' head, else the bundle's head/) is loaded against the
 * result. Immutable like its parts: share it between contexts and threads. */
typedef struct pd_bundle pd_bundle;

typedef struct pd_bundle_params {
    pd_model_params model;       /* how the base is loaded (layout, quantize) */
    const char *const *adapters; /* more adapter directories, applied after the bundle's adapter/ */
    const float *weights;        /* [n_adapters] their weights; NULL: 1 each */
    size_t n_adapters;
    pd_apply_mode adapter_mode;  /* how all of them are applied */
    const char *head;            /* a head directory in place of the bundle's head/; NULL: the bundle's */
    int no_head;                 /* nonzero: load no head at all */
} pd_bundle_params;

/* Defaults: the model as stored, no more adapters, PD_APPLY_AUTO, the bundle's head. */
PD_API pd_bundle_params pd_bundle_default_params(void);
/* Open path (params may be NULL: the defaults). Each failure is the failing
 * part's (pd_model_load, pd_adapter_load, pd_model_apply_adapters,
 * pd_head_load: their codes and messages, naming the file); NULL then. */
PD_API pd_bundle *pd_bundle_open(const char *path, const pd_bundle_params *params, pd_error *err);
/* Release it and its parts (NULL is fine); nothing may still use them. */
PD_API void pd_bundle_free(pd_bundle *bundle);
/* The model to run: the base with every adapter applied (the base without any). */
PD_API const pd_model *pd_bundle_model(const pd_bundle *bundle);
/* The base as loaded, before the adapters. */
PD_API const pd_model *pd_bundle_base(const pd_bundle *bundle);
/* The loaded head, NULL when there is none; and the directory it came from. */
PD_API const pd_head *pd_bundle_head(const pd_bundle *bundle);
PD_API const char *pd_bundle_head_dir(const pd_bundle *bundle);
/* path/part (release it with pd_free) when path is a bundle folder holding that
 * part (e.g. "base" for a command that reads the base alone), else NULL. */
PD_API char *pd_bundle_part(const char *path, const char *part);

/* ------------------------------------------------------- the extraction pipeline */

/* A DFlash draft as the drafter of extraction by generation
 * (pd_extract_params.drafter): draft loaded for the extraction's model
 * (pd_draft_load), blocks of block tokens (0: the draft's block size; 2 to
 * it, else PD_ERR_ARG), each draft pass on n_threads threads (0: every core).
 * It keeps a draft context per target context it is used with (made on its
 * first text there, as long as that context), holding the states of the
 * tokens that context's cache holds: the schema's prompt prefix cached from
 * one text to the next needs no new states. A text on a context of another
 * model fails with PD_ERR_ARG. Mutable: one thread at a time (one per
 * pipeline); the draft must outlive it. docs/drafts.md, "Under a schema". */
PD_API pd_extract_drafter *pd_extract_drafter_new(const pd_draft *draft, int32_t block, int32_t n_threads,
                                                  pd_error *err);
PD_API void pd_extract_drafter_free(pd_extract_drafter *drafter);

/* Extraction's one entry point: records from texts under a schema, by the
 * path the head calls for, chosen once:
 *   - a tagger head: extraction by decisions, one forward pass a text
 *     (pd_tag_extractor_new / pd_tag_extract);
 *   - a pointer or classifier head: generation under the schema's
 *     constraints (pd_extract), each text's records then relabelled by the
 *     head (pd_extraction_decide: the schema needs a `decide` section);
 *   - no head: generation alone.
 * The pipeline owns its contexts: one with n_threads and, for generation,
 * parallel - 1 more holding a cache each, so that pd_pipeline_extract_many
 * keeps that many texts in flight in joint passes (pd_extract_many). Use a
 * pipeline from one thread at a time (one per thread); model, schema and
 * head are only read and must outlive it. */
typedef struct pd_pipeline pd_pipeline;

typedef enum pd_pipeline_path {
    PD_PIPELINE_TAG = 0,      /* a tagger head decides spans, links and labels */
    PD_PIPELINE_GENERATE = 1, /* generation under the schema */
    PD_PIPELINE_RELABEL = 2   /* generation, then relabelled by a decision head */
} pd_pipeline_path;

#define PD_PIPELINE_PARALLEL_MAX 256

typedef struct pd_pipeline_params {
    pd_extract_params extract; /* generation's limits, sampler and speculation; a tagger head takes
                                  only the defaults (another value: PD_ERR_ARG naming it);
                                  extract.drafter must be NULL (a draft enters by .draft) */
    int32_t n_threads;         /* threads of each forward pass; 0 = pd_cpu_count() (pd_context_params) */
    int32_t n_ctx;             /* each context's length; 0 = min(model max, 4096) */
    int32_t parallel;          /* generation: texts in flight; 0 = 2 a thread, at most 16. A tagger
                                  head takes 0 or 1 (one pass a text) */
    size_t max_bytes;          /* memory budget of the main context (pd_context_params); 0 = none */
    float min_confidence;      /* records whose confidence (pd_record) is below it are dropped: within
                                  [0, 1] (0 keeps every record), or PD_PIPELINE_HEAD_DEFAULT (the
                                  default): a tagger head's min_confidence (head.json), else 0 */
    int32_t max_chars;         /* a text of more characters is read in windows of at most this many
                                  (below); 0: only a text too long for the context is, in windows
                                  that fit; else at least PD_PIPELINE_MIN_WINDOW; or
                                  PD_PIPELINE_HEAD_DEFAULT (the default): a tagger head's max_chars
                                  (head.json: the longest texts it learned from), else 0 */
    const pd_draft *draft;     /* generation: a DFlash draft of the model proposes tokens
                                  (the pipeline makes its pd_extract_drafter): the same
                                  records (sampling: of the same seed). NULL: none. A tagger
                                  head refuses it (PD_ERR_ARG) */
    int32_t draft_block;       /* its blocks: 0 the draft's block size, else 2 to it */
} pd_pipeline_params;

/* The fewest characters a window may hold. */
#define PD_PIPELINE_MIN_WINDOW 16
/* min_confidence and max_chars: the head's value (a default that the caller's replaces). */
#define PD_PIPELINE_HEAD_DEFAULT (-1)

/* extract as pd_extract_default_params, every core (n_threads 0), the default
 * context, parallel 0, min_confidence and max_chars the head's. */
PD_API pd_pipeline_params pd_pipeline_default_params(void);
/* The checks of params that need no model (what pd_pipeline_new checks
 * first): n_threads, n_ctx and parallel not negative, min_confidence and
 * max_chars as above (PD_ERR_ARG, the message naming the field and the
 * value). For callers that check options before loading anything. */
PD_API pd_status pd_pipeline_params_check(const pd_pipeline_params *params, pd_error *err);
/* A pipeline (params NULL: the defaults). Refused: no model or schema, a
 * negative param, a generation option or parallel > 1 with a tagger head, a
 * decision head with a schema that has no `decide` section (PD_ERR_ARG, the
 * message naming the head or schema); parallel over PD_PIPELINE_PARALLEL_MAX
 * (PD_ERR_LIMIT); limits past the schema's (PD_ERR_LIMIT, checked here before
 * any text); and whatever binding the head to the schema and model refuses
 * (pd_tag_extractor_new, pd_extractor_new, pd_decider_new). */
PD_API pd_pipeline *pd_pipeline_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                                    const pd_pipeline_params *params, pd_error *err);
/* Release it and its contexts (NULL is fine). */
PD_API void pd_pipeline_free(pd_pipeline *p);
/* The path it chose. */
PD_API pd_pipeline_path pd_pipeline_get_path(const pd_pipeline *p);
/* Texts it keeps in flight. */
PD_API int32_t pd_pipeline_parallel(const pd_pipeline *p);
/* How many texts a caller of pd_pipeline_extract_many should hand it at a
 * time to keep every context busy: 32 x parallel (1 for a tagger head that
 * reads one text at a time). ("Windows" are the pieces of a long text, below.) */
PD_API int32_t pd_pipeline_read_ahead(const pd_pipeline *p);

/* Long texts: a text longer than max_chars characters, or one whose prompt
 * (or, in generation, its output) does not fit the context, is not refused:
 * it is cut at sentence ends into windows (at most max_chars characters; with
 * max_chars 0, half the text, then halves again until each window fits, down
 * to PD_PIPELINE_MIN_WINDOW) that share their edge sentences; each window is
 * extracted as a text of its own (the limits, max_records included, apply to
 * each), its records placed in the whole text, the windows' records merged:
 * a record two windows read at the same places kept once (the more confident
 * reading), a span a cut inside a sentence may have shortened read from the
 * neighbour that holds it whole, the records in text order, then the
 * schema's distinct_records and min_confidence applied. stats add up the
 * windows' (stats.n_windows counts them). docs/extraction.md, "Long reviews". */

/* Records of text (len bytes of valid UTF-8) into *out (free with
 * pd_extraction_free), as the path's own call gives them; an empty text gives
 * none without running the model. On error *out is NULL. */
PD_API pd_status pd_pipeline_extract(pd_pipeline *p, const char *text, size_t len, pd_extraction **out,
                                     pd_error *err);
/* n texts: outs[i] as pd_pipeline_extract(texts[i]) gives it (generation: the
 * texts advance together, pd_extract_many), or NULL when text i fails, with
 * its reason in errs[i] (errs may be NULL): one text's failure loses no other.
 * Returns PD_OK when every text has its records, else the status of the first
 * failed text, its message in err prefixed by its index. */
PD_API pd_status pd_pipeline_extract_many(pd_pipeline *p, const char *const *texts, const size_t *lens, int32_t n,
                                          pd_extraction **outs, pd_error *errs, pd_error *err);

/* Texts as they come (a server's requests from many clients): src->next is
 * asked for a text whenever the pipeline can take one (generation: as soon as
 * one of its parallel contexts frees, so texts from any caller share the
 * joint passes: continuous batching; a tagger head: one text at a time), and
 * src->done receives each text's records, as pd_pipeline_extract gives them
 * (generation: up to the float rounding pd_eval_many notes), as soon as they
 * are ready; a long text is read in windows at once, on a context of its
 * own, while the others stay in flight. Returns when next has returned -1 and
 * every text taken is done: PD_OK, or PD_ERR_ARG for a NULL argument (a
 * text's failure is its done call's). Calls come from the calling thread. */
PD_API pd_status pd_pipeline_extract_stream(pd_pipeline *p, const pd_text_source *src, pd_error *err);

/* ------------------------------------------- extraction relabelled by a head */

/* Relabel x with a decision head, for a schema with a `decide` section
 * (question and candidate templates over its fields, e.g. question
 * "aspect: {aspect}; opinion: {opinion}", candidate "{category}/{polarity}"):
 * the candidates are every combination of the enum fields the candidate
 * template names; for each record of x, d is asked the question filled from
 * the record (one pd_decide a record, text evaluated once and reused) and
 * those fields take the values of the most probable candidate. With the
 * schema's distinct_records, records that become equal to an earlier one are
 * dropped. text (NUL-terminated) is the text x was extracted from; d's
 * document is replaced by it. No records: no model call. On error x keeps
 * the records relabelled so far. */
PD_API pd_status pd_extraction_decide(pd_decider *d, const pd_schema *schema, const char *text, pd_extraction *x,
                                      pd_error *err);

/* -------------------------------------------- extraction by decisions (tagger) */

/* Records from one forward pass, for small models: no generation. A tagger
 * head (head.json "type": "tagger") names its prompt, e.g.
 *   <|fim_prefix|>{text}<|fim_middle|>{text}<|fim_suffix|>
 * (literal parts tokenized with special tokens recognised, each {text} the
 * text alone by pd_tokenizer_encode_plain), so the last copy of the text, the
 * read copy, is read by a causal trunk that has seen the whole text. One
 * pd_eval keeps the final-norm hidden states h_i of the read copy; then
 *   1. emissions e_i[t] = tag.weight[t] . h_i + tag.bias[t] over the tags
 *      O, B-<span 1>, I-<span 1>, B-<span 2>, I-<span 2>;
 *   2. the tags, under a linear-chain CRF (start, emissions, transitions,
 *      end) in which I-f follows only B-f or I-f, and a token that does not
 *      start a UTF-8 character continues its predecessor (I-f after B-f/I-f,
 *      else O). head.json "span_decoding" chooses the rule: "viterbi" (the
 *      default), the best sequence, ties to the smaller tag index; or
 *      "posterior", every span (B-f I-f*, ending where the next token is not
 *      I-f) whose marginal probability is at least the threshold (0.5 by
 *      default), most probable first, unless it overlaps one kept before;
 *   3. each run B-f I-f* is a span of field f (its bytes those of its tokens),
 *      represented by h at its last token;
 *   4. each span of the link's `from` field picks among the `to` spans (text
 *      order) and "none": q . k / sqrt(d), ties to the earlier;
 *   5. records: one per `from` span in text order (partner or `_`, span), then
 *      one per `to` span that no `from` span chose (span, `_`);
 *   6. each record's label class: argmax of label.weight [x_1; x_2] +
 *      label.bias, x_k the hidden state of its span of field k or label.none
 *      for `_`; the label fields take that class's values;
 *   7. records stably sorted by the first token of their earliest span; with
 *      the schema's distinct_records, repeats of an earlier record dropped.
 * Fields that are neither spans nor labels are `_`. See
 * docs/extraction-by-decisions.md for the head file format. */

typedef struct pd_tag_extractor pd_tag_extractor;

/* Bind a tagger head to a schema and a model, once: the head's span fields
 * must be span fields of the schema and its label fields enum fields, every
 * label value one of that field's values (PD_ERR_FORMAT naming the head and
 * the field or value; fields a record leaves `_` are `_` whatever the
 * schema's `empty` says);
 * the head's hidden size must be the model's (PD_ERR_SHAPE); the model needs
 * a tokenizer (PD_ERR_ARG); a head of another type gives PD_ERR_ARG.
 * Immutable: share it between contexts and threads. model, schema and head
 * must outlive it. */
PD_API pd_tag_extractor *pd_tag_extractor_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                                              pd_error *err);
/* Release it (NULL is fine). */
PD_API void pd_tag_extractor_free(pd_tag_extractor *tx);

/* Extract records from text (len bytes of valid UTF-8) in one pd_eval on ctx
 * (its cache is cleared first). An empty text gives no records without
 * running the model; a prompt longer than the context gives PD_ERR_CONTEXT
 * before it runs. *out is a pd_extraction as pd_extract makes (free it with
 * pd_extraction_free): stop PD_STOP_END, stats.n_prompt_tokens the prompt's
 * length, stats.n_tokens 0, no stats.mask_us. */
PD_API pd_status pd_tag_extract(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                                pd_extraction **out, pd_error *err);

/* pd_tag_extract that also fills *trace (pocketdec_heads.h; may be NULL;
 * free it with pd_tag_trace_free). out may be NULL when only the trace is wanted. */
PD_API pd_status pd_tag_extract_trace(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                                      pd_extraction **out, pd_tag_trace **trace, pd_error *err);

/* Why the pass of pd_tag_extract_trace decided what it did, for a person to
 * read: one JSON document (UTF-8, NUL-terminated, *json_len bytes without the
 * NUL when json_len is not NULL; release it with pd_free) holding the text's
 * characters with their tag marginals under the head's CRF, the spans with
 * their probabilities, each link's choice and runner-up, each candidate
 * record's three likeliest labels, and per decision the sparse features that
 * weighed most beside the trunk's (dense) share. Its shape is in
 * docs/extraction-by-decisions.md ("Why it decided so"); `pocketdec tag --html`
 * draws it. One pass over the whole text, as pd_tag_extract_trace (no
 * windows). PD_ERR_FORMAT for a text that is not UTF-8 (as pd_tag_extract),
 * PD_ERR_ARG for a NULL ctx, tx or json; otherwise pd_tag_extract_trace's. */
PD_API pd_status pd_tag_explain(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                                char **json, size_t *json_len, pd_error *err);

/* ------------------------------------------------ ranking reviews to label */

/* Which reviews a person should label first, by the model's own
 * uncertainty (docs/serve.md, "Teach it"): each review's usefulness is a
 * score, higher first.
 *   PD_RANK_CONFIDENCE  1 - the lowest confidence of the records the
 *                       pipeline writes (1 for a review with none): any head;
 *   PD_RANK_ENTROPY     the mean over the review's tokens of the entropy
 *                       (nats) of their tag marginals under a tagger head's
 *                       CRF (pd_tag_trace.tag_marginals);
 *   PD_RANK_COMPLAINT   the likeliest complaint: the largest probability any
 *                       candidate record of a tagger pass gives to the label
 *                       classes holding 负面, 差评, negative or neg;
 *   PD_RANK_RANDOM      a uniform draw from the seed and the review's id alone. */
typedef enum pd_rank_order {
    PD_RANK_CONFIDENCE = 0,
    PD_RANK_ENTROPY = 1,
    PD_RANK_COMPLAINT = 2,
    PD_RANK_RANDOM = 3
} pd_rank_order;

/* "confidence", "entropy", "complaint", "random"; NULL for another value. */
PD_API const char *pd_rank_order_name(pd_rank_order order);
/* The ordering of that name into *order; PD_ERR_ARG naming the four otherwise. */
PD_API pd_status pd_rank_order_parse(const char *name, pd_rank_order *order, pd_error *err);
/* The ordering to use when none is asked for: complaint for a tagger head
 * with a complaint label (on 5 folds it reached random's 800-label F1 in
 * the fewest labels, ahead of random on every fold, and found complaints
 * soonest: train/README.md, "The simulated annotator"), else confidence,
 * which every head supports and which was ahead of random on every fold. */
PD_API pd_rank_order pd_rank_default_order(const pd_head *head);

typedef struct pd_ranker pd_ranker;
/* A ranker over a pipeline of model, schema and head (params as
 * pd_pipeline_new; NULL: the defaults). Refused: what pd_pipeline_new
 * refuses; entropy or complaint without a tagger head, or complaint with a
 * head that has no complaint label (PD_ERR_ARG). Use it from one thread at a
 * time; model, schema and head must outlive it. */
PD_API pd_ranker *pd_ranker_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                                pd_rank_order order, uint64_t seed, const pd_pipeline_params *params, pd_error *err);
PD_API void pd_ranker_free(pd_ranker *r);
/* The usefulness of labelling the review id / text (len bytes of UTF-8) into
 * *score, and when records is not NULL the pipeline's records of it (what a
 * person is shown; free with pd_extraction_free). */
PD_API pd_status pd_ranker_score(pd_ranker *r, const char *id, const char *text, size_t len, double *score,
                                 pd_extraction **records, pd_error *err);
/* order[0..n) = the indices of scores, the highest score first, equal scores
 * in input order (NaN last). */
PD_API pd_status pd_rank_sort(const double *scores, size_t n, size_t *order, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_COMPOSE_H */
