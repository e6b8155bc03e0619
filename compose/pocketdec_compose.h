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
 * pd_extraction_free): n_prompt_tokens the prompt's length, n_tokens 0, stop
 * PD_STOP_END, no mask_us. */
PD_API pd_status pd_tag_extract(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                                pd_extraction **out, pd_error *err);

/* pd_tag_extract that also fills *trace (pocketdec_heads.h; may be NULL;
 * free it with pd_tag_trace_free). out may be NULL when only the trace is wanted. */
PD_API pd_status pd_tag_extract_trace(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                                      pd_extraction **out, pd_tag_trace **trace, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_COMPOSE_H */
