/*
 * pocketdec_schemas.h - extraction schemas (schemas/): read a YAML schema,
 * extract records under its constraint, print them. Part of libpocketdec;
 * include pocketdec.h for all of it.
 */
#ifndef POCKETDEC_SCHEMAS_H
#define POCKETDEC_SCHEMAS_H

#include "pocketdec_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- extraction */

/* Schema-bound extraction: generation under a token mask so that the output
 * always parses into records that obey a YAML schema (spans copied verbatim
 * from the input text or `_`, enum values from closed sets, PCRE2 patterns),
 * whatever the weights. See schemas/tianchi-makeup.yaml for the format. */

typedef struct pd_schema pd_schema;

/* Read a schema file. Errors name the file, line and column (PD_ERR_FORMAT). */
PD_API pd_schema *pd_schema_load(const char *path, pd_error *err);
/* Same from YAML text in memory; name is used in messages (NULL: "<memory>"). */
PD_API pd_schema *pd_schema_parse(const char *yaml, size_t len, const char *name, pd_error *err);
PD_API void pd_schema_free(pd_schema *schema);
PD_API int32_t pd_schema_n_fields(const pd_schema *schema);
PD_API const char *pd_schema_field_name(const pd_schema *schema, int32_t i); /* NULL when out of range */
/* What a field holds: a span of the input text, one of a closed set of
 * values, or text matching a pattern. */
typedef enum pd_field_kind { PD_FIELD_SPAN = 0, PD_FIELD_ENUM = 1, PD_FIELD_PATTERN = 2 } pd_field_kind;
/* Field i's kind (PD_FIELD_SPAN when out of range), whether it may be `_`
 * (0 when out of range), and an enum field's values (0 and NULL for another
 * field, or out of range): for callers that build forms from a schema. */
PD_API pd_field_kind pd_schema_field_kind(const pd_schema *schema, int32_t i);
PD_API int pd_schema_field_empty(const pd_schema *schema, int32_t i);
PD_API int32_t pd_schema_field_n_values(const pd_schema *schema, int32_t i);
PD_API const char *pd_schema_field_value(const pd_schema *schema, int32_t i, int32_t k);
       /* Candidates of the schema's decide section (see pd_extraction_decide); 0 when it has none. */
       PD_API int32_t pd_schema_n_candidates(const pd_schema *schema);

/* A schema bound to a model's vocabulary (a trie of every token's bytes).
 * Immutable: share it between contexts and threads. model and schema must
 * outlive it. */
typedef struct pd_extractor pd_extractor;

PD_API pd_extractor *pd_extractor_new(const pd_model *model, const pd_schema *schema, pd_error *err);
PD_API void pd_extractor_free(pd_extractor *ex);

/* A learned drafter for extraction by generation: a model that proposes the
 * next tokens from the target's layer states (a DFlash draft: make one with
 * pd_extract_drafter_new, pocketdec_compose.h). This is the seam: schemas/
 * calls it and knows nothing of drafts. Each text in flight keeps a state of
 * its own (one per context): the layer states of every position the target's
 * cache holds for it, the prompt's and every verified row's. A drafter holds
 * mutable states: use it from one thread at a time. */
typedef struct pd_extract_drafter {
    int32_t block;         /* tokens a proposal block: the last token, then block - 1 proposals */
    const int32_t *layers; /* the target layers whose states it reads (pd_context_keep_layer_states) */
    int32_t n_layers;
    void *user;
    /* A text starts on ctx, its prompt ids[0..n_keep) already in ctx's cache:
     * *state receives the drafter's state for ctx, *held how many of those
     * leading positions it holds the states of (at most n_keep; it forgets
     * the rest). */
    pd_status (*begin)(void *user, pd_context *ctx, const int32_t *ids, int32_t n_keep, void **state, int32_t *held,
                       pd_error *err);
    /* The next n positions: their tokens and layer states (n rows of
     * n_layers x hidden floats, pd_context_layer_states). PD_ERR_CONTEXT when
     * they do not fit (nothing appended: drafting stops for that text). */
    pd_status (*append)(void *state, const int32_t *ids, const float *states, int32_t n, pd_error *err);
    /* Proposals for the n - 1 positions after last (at the position after
     * those held), 2 <= n <= block, into tokens[0..n-1); *logits receives
     * the drafter's scores of every token of the model's vocabulary at those
     * positions (n - 1 rows, valid until its next call on state), or NULL. */
    pd_status (*propose)(void *state, int32_t last, int32_t n, int32_t *tokens, const float **logits, pd_error *err);
} pd_extract_drafter;

typedef struct pd_extract_params {
    pd_sampler_params sampler; /* greedy by default */
    int32_t max_records;       /* 0: the schema's limit (limits.max_records); more: PD_ERR_LIMIT */
    int32_t max_tokens;        /* 0: the schema's limit (limits.max_tokens); more: PD_ERR_LIMIT */
    int32_t sparse_head;       /* -1 auto (sparse when the allowed set is small), 0 never, 1 always */
    int32_t speculate;         /* copy speculation: draft tokens a forward pass verifies, 0..PD_SPECULATE_MAX
                                  (0 off; PD_SPECULATE_DEFAULT by default). Inside a
                                  span value, the prompt tokens after the latest place that ends like the
                                  output are evaluated with the next token in one pass (while at least one in 4
                                  of the text's drafted copies was kept, at most one more than it has kept),
                                  elsewhere the tokens the schema forces; those that decoding under the mask
                                  picks are kept: the output is the same as with 0 (sampling: for the same
                                  seed, a drafted token kept when the sample at its row is that token) */
    const pd_extract_drafter *drafter; /* NULL: none. Each pass the drafter proposes block - 1 tokens after the
                                  chosen one (when copy speculation proposes nothing: no forced token,
                                  no copy); they are walked through the schema's constraint: a token it
                                  forbids is replaced by the drafter's best of its next
                                  PD_DRAFTER_ALTERNATIVES choices that the schema allows, and where
                                  none is, the draft ends; the target keeps what greedy
                                  decoding under the mask picks, so the output is the same as without
                                  a drafter. While a text runs its context keeps the drafter's layer
                                  states (pd_context_keep_layer_states, off again at its end). A block
                                  outside 2..PD_DRAFTER_BLOCK_MAX, no layers or a NULL function:
                                  PD_ERR_ARG before anything runs */
} pd_extract_params;

#define PD_SPECULATE_MAX 16
#define PD_SPECULATE_DEFAULT 4
#define PD_DRAFTER_BLOCK_MAX 256 /* the longest drafter block */
#define PD_DRAFTER_ALTERNATIVES 4 /* a drafter's choices tried in place of a token the schema forbids */

PD_API pd_extract_params pd_extract_default_params(void);

/* One record: n_fields NUL-terminated values in schema order ("_" for an
 * empty field), where its spans are in the text, and how sure the model is
 * of it. Every array has n_fields entries and belongs to the extraction.
 *
 * Offsets count characters (Unicode code points) of the text the record was
 * extracted from, as the Tianchi gold's A_start/A_end: text[start, end) is
 * the value. A span value that occurs more than once is placed where the
 * path read it (a tagger head: its own tokens; generation: the first
 * occurrence at or after the previous record's span of that field, else the
 * first). Enum fields, `_` and a value the text does not hold (one the
 * tokenizer's normalisation changed) have -1, -1.
 *
 * Probabilities are the model's, under the schema (docs/extraction.md
 * "Confidence" has the details):
 * - a tagger head: a span's is the lattice's probability that exactly this
 *   span is there; link is the softmax probability of the record's pairing
 *   (its `from` span's choice, "none" included; for a lone `to` span, that no
 *   `from` span chose it); each label field's is the marginal probability of
 *   its value over the label classes (the no-record class included);
 *   confidence = the spans' probabilities x link x the probability of the
 *   joint label class.
 * - generation: a field's is the product over its value's tokens and the
 *   separator after it of each token's probability among the tokens the
 *   schema allows there (1 for a forced token); link is 1; confidence = the
 *   product over all the record's tokens (the fields' product).
 * - generation relabelled by a decision head: the span fields as generation
 *   gives them; each decided field's is its value's marginal over the
 *   candidates; confidence = the span fields' probabilities x the chosen
 *   candidate's probability. */
typedef struct pd_record {
    char **values;
    int32_t *start, *end; /* character offsets of each span value, -1 when none */
    float *prob;          /* each field's probability */
    float link;           /* the pairing's probability (1 when the path decides none) */
    float confidence;     /* the record's probability as a whole, in [0, 1] */
} pd_record;
/* (A pd_extraction built by hand, for pd_extraction_format or
 * pd_extraction_decide, may leave start, end and prob NULL: the JSONL writer
 * then leaves out "spans", or "probs" and "confidence".) */

typedef enum pd_extract_stop {
    PD_STOP_END = 0,     /* the model ended the output */
    PD_STOP_RECORDS = 1, /* max_records reached */
    PD_STOP_TOKENS = 2,  /* max_tokens reached (an unfinished record is dropped) */
    PD_STOP_CONTEXT = 3, /* the context is full (an unfinished record is dropped) */
    PD_STOP_REPEAT = 4   /* distinct_records: the model repeated a record (dropped) */
} pd_extract_stop;

/* What an extraction cost: for benchmarks, progress lines and tests. */
typedef struct pd_extraction_stats {
    int32_t n_prompt_tokens, n_tokens; /* prompt length; tokens generated */
    int32_t n_sparse;                  /* steps that used the sparse LM head */
    double *mask_us;                   /* [n_tokens + 1] time to compute each step's token set, microseconds */
    int32_t n_cached_tokens;           /* prompt tokens the context's cache already held (not evaluated again) */
    int32_t n_forward;                 /* pd_eval calls: the prompt's, then one per verified draft or token */
    int32_t n_drafted, n_accepted;     /* speculation (copies, forced tokens, the drafter): draft tokens evaluated, and kept */
    int32_t n_copies_drafted, n_copies_kept; /* of those, the span copies (the rest: forced tokens, the drafter's) */
    int32_t n_windows;                 /* pd_pipeline: the windows a long text was read in (0: read whole) */
    int32_t n_draft_passes;            /* drafter (pd_extract_params.drafter) passes: proposals asked */
    int32_t n_draft_drafted, n_draft_kept; /* of n_drafted and n_accepted, the drafter's tokens */
} pd_extraction_stats;

typedef struct pd_extraction {
    int32_t n_fields, n_records;
    pd_record *records;
    pd_extract_stop stop;
    pd_extraction_stats stats;
} pd_extraction;

/* Extract records from text (valid UTF-8; an empty text gives no records
 * without running the model). The prompt's leading tokens that ctx's cache
 * already holds (pd_context_kv_match: the schema's prompt before {text},
 * after an earlier extraction on ctx) are kept and not evaluated again; the
 * rest of the cache is dropped. The records are the bits a cleared cache
 * gives (pd_context_kv_truncate(ctx, 0) first to evaluate it all). A
 * prompt longer than the context gives PD_ERR_CONTEXT; params asking more
 * records or tokens than the schema's limits give PD_ERR_LIMIT, negative ones
 * PD_ERR_ARG, before anything runs (an empty text checks params alone).
 * *out is freed with pd_extraction_free. */
PD_API pd_status pd_extract(pd_context *ctx, const pd_extractor *ex, const char *text, size_t len,
                            const pd_extract_params *params, pd_extraction **out, pd_error *err);
PD_API void pd_extraction_free(pd_extraction *x);

/* Extraction from n_texts texts with up to n_ctxs of them in flight, one on
 * each context. The texts in flight advance together, a token (and its
 * draft) each, in joint passes (pd_eval_many: the weights are read once a
 * pass for all of them); when one ends, the next text takes its context (the
 * schema's prompt before {text} stays cached there, as with pd_extract).
 * ctxs[0] lends its scratch and threads to the passes; the other contexts
 * need only their caches (pd_context_new with n_threads 1 and a small
 * n_batch: each then costs its KV cache and little more). outs[i] receives
 * text i's extraction, the records pd_extract gives it (greedy decoding: the
 * same tokens, up to the float rounding pd_eval_many notes; sampling: each
 * text's own stream from params->sampler.seed), or NULL when it fails, with
 * the reason in errs[i] (errs may be NULL; a success leaves code PD_OK
 * there): one text's failure (a prompt longer than the context, say) loses no
 * other. Returns PD_OK when every text has its extraction, else the status of
 * the first failed text, with its message in err prefixed by its index.
 * params are checked first, as pd_extract checks them, before anything runs.
 * With speculation, a pass drafts span copies only while no more texts are
 * in flight than ctxs[0] has threads; past that (a pass of many rows costs
 * its arithmetic) it drafts only the tokens the schema forces. Either way
 * the outputs are those without speculation; stats.n_drafted and
 * stats.n_accepted count what was drafted.
 * Memory: the texts' results, and per context its KV cache. */
PD_API pd_status pd_extract_many(pd_context *const *ctxs, int32_t n_ctxs, const pd_extractor *ex,
                                 const char *const *texts, const size_t *lens, int32_t n_texts,
                                 const pd_extract_params *params, pd_extraction **outs, pd_error *errs,
                                 pd_error *err);

/* A stream of texts, the caller's, for extraction that takes texts as they
 * come (a server's requests): pd_extract_stream and
 * pd_pipeline_extract_stream call next when a context is free (continuous
 * batching: a text joins the passes as soon as one frees) and done as soon as
 * a text's result is ready, both from the calling thread. */
typedef struct pd_text_source {
    /* The next text: set *text (len bytes of valid UTF-8, unchanged until
     * its done call), *len and *tag (handed back to done) and return 1;
     * return 0 when no text is ready now, -1 when no more will come (the
     * stream ends once what is in flight is done). wait != 0 when no text is
     * in flight: the call may then block until a text comes or the stream
     * ends (a 0 is asked again). */
    int (*next)(void *user, int wait, const char **text, size_t *len, void **tag);
    /* Text tag's result: x (the callee's, freed with pd_extraction_free), or
     * NULL with e saying why the text failed. */
    void (*done)(void *user, void *tag, pd_extraction *x, const pd_error *e);
    void *user;
} pd_text_source;

/* pd_extract_many over a stream: texts taken from src while contexts are
 * free, each text's result handed to src->done as soon as it ends, until
 * next returns -1 and nothing is in flight. A text's records are those
 * pd_extract_many gives it, whatever else is in flight (up to the float
 * rounding pd_eval_many notes). Returns PD_ERR_ARG for a NULL argument and
 * what params' check gives, before any next call; PD_OK otherwise (a text's
 * failure is its done call's). */
PD_API pd_status pd_extract_stream(pd_context *const *ctxs, int32_t n_ctxs, const pd_extractor *ex,
                                   const pd_extract_params *params, const pd_text_source *src, pd_error *err);

typedef enum pd_record_format {
    PD_FORMAT_TIANCHI = 0, /* CSV rows "id,<print.csv fields>" (RFC 4180 quoting); "id,_,..,_" for none */
    PD_FORMAT_JSONL = 1    /* one line {"id": id, "records": [{field: value, ..., "spans": {field: [start, end],
                              ...}, "probs": {field: p, ..., "link": p}, "confidence": p}, ...]}: spans only
                              for values placed in the text; probabilities to 4 significant digits */
} pd_record_format;

/* The JSON of x's records as PD_FORMAT_JSONL writes them after "records"
 * (compact, probabilities to 4 significant digits, no line break): record
 * -1 gives the array [{...}, ...] of every record ("[]" for x NULL or no
 * record), record r (0 <= r < x->n_records) the one object {...} of
 * x->records[r]. *text is pd_free()-able and NUL-terminated; *len (may be
 * NULL) excludes the NUL. PD_ERR_ARG for a NULL schema or text, a record out
 * of range or records of another field count; PD_ERR_FORMAT when a value is
 * not UTF-8. For callers that wrap the records in a JSON of their own (an
 * HTTP answer, a line with an id of the caller's kind). */
PD_API pd_status pd_extraction_json(const pd_schema *schema, const pd_extraction *x, int32_t record, char **text,
                                    size_t *len, pd_error *err);

/* Print x for input id in the given form. *text is pd_free()-able and
 * NUL-terminated; *len (may be NULL) excludes the NUL. x may be NULL (no
 * records). */
PD_API pd_status pd_extraction_format(const pd_schema *schema, const pd_extraction *x, const char *id,
                                      pd_record_format fmt, char **text, size_t *len, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_SCHEMAS_H */
