/*
 * pocketdec_heads.h - decision heads (heads/): load a head, score candidates
 * for a text in one forward pass. Part of libpocketdec; include pocketdec.h
 * for all of it. Tagger heads extract records with a schema: their API is in
 * pocketdec_compose.h.
 */
#ifndef POCKETDEC_HEADS_H
#define POCKETDEC_HEADS_H

#include "pocketdec_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ decision heads */

/* Score label candidates for a text in one forward pass, without generating.
 *
 * Prompt (marker tokens named in head.json; these are the defaults):
 *   <|fim_prefix|>{text}<|fim_middle|>{question}
 *   <|box_start|>{candidate}<|box_end|>   ... once per candidate
 *   <|fim_suffix|>                        the query token
 * Pointer head: q = Wq h[query] + bq, k_i = Wk h[end marker of i] + bk,
 * score_i = q.k_i / sqrt(head_dim) / temperature, prob = softmax(scores).
 * Classifier head: the candidates are not in the prompt (text, question,
 * suffix); score_l = (W h[query] + b)_l / temperature over the head's labels.
 * No head (LM verbalizer): score_i = sum of log p(candidate token | prompt and
 * the candidate's earlier tokens) under the LM, prob = softmax(scores).
 *
 * Layouts: sequential (candidates follow each other; what the pointer heads
 * that llama.cpp converts were trained on) or parallel (each candidate sees
 * the prefix and itself only, positions restart after the prefix, the query
 * token sees everything and sits at prefix + total candidate tokens, so
 * scores do not depend on the order of the candidates). Either way a
 * decision is one pd_eval. Text and candidates are tokenized as plain text,
 * but special tokens written inline are recognised (do not pass untrusted
 * text containing marker tokens). */

typedef struct pd_head pd_head;

typedef enum pd_head_type {
    PD_HEAD_POINTER = 0,
    PD_HEAD_CLASSIFIER = 1,
    PD_HEAD_VERBALIZER = 2,
    PD_HEAD_TAGGER = 3 /* extraction by decisions: see pd_tag_extractor_new */
} pd_head_type;
typedef enum pd_layout { PD_LAYOUT_DEFAULT = 0, PD_LAYOUT_SEQUENTIAL = 1, PD_LAYOUT_PARALLEL = 2 } pd_layout;

/* Load a head directory (head.json + head.safetensors) and check it against
 * model: tensor shapes vs the hidden size, marker tokens in the model's
 * vocabulary (a tagger head has no markers; its fields are checked against a
 * schema by pd_tag_extractor_new). The head keeps no reference to model; it is immutable and may
 * be shared by any number of deciders in any threads. */
PD_API pd_head *pd_head_load(const char *dir, const pd_model *model, pd_error *err);
/* Release a head (NULL is fine); no decider may still use it. */
PD_API void pd_head_free(pd_head *head);
/* PD_HEAD_POINTER, PD_HEAD_CLASSIFIER or PD_HEAD_TAGGER. */
PD_API pd_head_type pd_head_get_type(const pd_head *head);
/* A head type's name as head.json writes it ("pointer", "classifier",
 * "verbalizer", "tagger"); "unknown" for another value. */
PD_API const char *pd_head_type_name(pd_head_type type);
/* A classifier's labels (NULL for a pointer head); *n receives their number. */
PD_API const char *const *pd_head_labels(const pd_head *head, int32_t *n);

typedef struct pd_decider_params {
    pd_layout layout;  /* DEFAULT: the head's layout (sequential without a head) */
    int32_t n_threads; /* 0 = pd_cpu_count() (pd_context_params) */
    int32_t n_ctx;     /* 0 = min(model max, 4096) */
    size_t max_bytes;  /* memory budget of the decider's context (see pd_context_params); 0 = none */
} pd_decider_params;

/* The most candidates one decision scores (and the most labels a classifier
 * head may have): more give PD_ERR_LIMIT before anything is tokenized. */
#define PD_MAX_CANDIDATES 4096

/* Layout DEFAULT, every core (n_threads 0), the default context length. */
PD_API pd_decider_params pd_decider_default_params(void);

/* A decider: one context over model plus a head (NULL: LM verbalizer).
 * Use one per thread; model and head are only read. A tagger head is refused
 * with PD_ERR_ARG (it extracts records: pd_tag_extractor_new). */
typedef struct pd_decider pd_decider;
PD_API pd_decider *pd_decider_new(const pd_model *model, const pd_head *head, const pd_decider_params *params,
                                  pd_error *err);
/* Release a decider and its context (NULL is fine). */
PD_API void pd_decider_free(pd_decider *d);

/* Prefix reuse: evaluate "<|fim_prefix|>{text}<|fim_middle|>" once; later
 * pd_decide calls with text NULL start from it (the cache past it is dropped
 * before each decision). text NULL forgets the document. */
PD_API pd_status pd_decider_set_text(pd_decider *d, const char *text, pd_error *err);
/* A new decider (e.g. for another thread) holding a copy of d's document. */
PD_API pd_decider *pd_decider_fork(const pd_decider *d, pd_error *err);

typedef struct pd_decision {
    int32_t n_candidates;
    float *probs;          /* [n_candidates], softmax of scores */
    float *scores;         /* [n_candidates], raw scores */
    float *mean_logprob;   /* [n_candidates], verbalizer only (else NULL) */
    int32_t *label_index;  /* [n_candidates], classifier: index in the head's labels (else NULL) */
    int32_t forward_passes;  /* pd_eval calls made by this decision (1) */
    int32_t prompt_tokens;   /* tokens of the whole prompt, document included */
    int32_t *tokens;       /* [prompt_tokens] the prompt's ids */
    int32_t *positions;    /* [prompt_tokens] their RoPE positions */
    int32_t query_index;   /* index in tokens of the query token (-1 for the verbalizer) */
    int32_t *key_index;    /* [n_candidates] pointer: index of each end marker; verbalizer: first token (else NULL) */
} pd_decision;

/* Score candidates (1 <= n_candidates <= PD_MAX_CANDIDATES; for a classifier,
 * 0 means all its labels, otherwise each candidate must be one of its labels)
 * in one pd_eval. A prompt longer than the decider's context gives
 * PD_ERR_CONTEXT before the model runs.
 * text NULL reuses the document: the text of pd_decider_set_text or of the
 * last successful pd_decide (its cache is kept), so only the question and
 * candidates are evaluated. On success *out is a decision to release with
 * pd_decision_free. */
PD_API pd_status pd_decide(pd_decider *d, const char *text, const char *question, const char *const *candidates,
                           int32_t n_candidates, pd_decision **out, pd_error *err);
/* Release a decision and its arrays (NULL is fine). */
PD_API void pd_decision_free(pd_decision *dec);

/* pd_eval calls made by d since it was created (a document counts one). */
PD_API int64_t pd_decider_forward_passes(const pd_decider *d);

/* ------------------------------------------------------ tagger head passes */

/* What one pass of a tagger head saw and decided (pd_tag_extract_trace in
 * pocketdec_compose.h runs one), for tests and debugging. */
typedef struct pd_tag_span {
    int32_t field;        /* index of its field in the head's spans (tag B = 1 + 2 field) */
    const char *name;     /* that field's name */
    int32_t first, last;  /* its first and last token, indices within the read copy */
    char *text;           /* its bytes, NUL-terminated */
    double probability;   /* P(these tokens are one span of this field) under the head's CRF */
} pd_tag_span;

typedef struct pd_tag_link {
    int32_t from;         /* index in spans of a span of the link's `from` field */
    int32_t n_scores;     /* the `to` spans in text order, then "none" */
    float *scores;
    int32_t choice;       /* index in spans of the chosen `to` span, -1 for none */
} pd_tag_link;

/* What became of a candidate record of a tagger pass (the order of the
 * checks: a record is a repeat only when written above the floor). */
typedef enum pd_tag_fate {
    PD_TAG_WRITTEN = 0,     /* in the extraction */
    PD_TAG_NO_RECORD = 1,   /* its label's argmax is the head's no-record class */
    PD_TAG_BELOW_FLOOR = 2, /* its confidence is below the head's min_confidence */
    PD_TAG_REPEAT = 3       /* the values of a record written before it (a schema's distinct_records) */
} pd_tag_fate;

/* "written", "no_record", "below_floor", "repeat"; NULL for another value. */
PD_API const char *pd_tag_fate_name(pd_tag_fate fate);

typedef struct pd_tag_candidate {
    int32_t spans[2];     /* index in the trace's spans of its span of each span field (the head's order),
                             -1 for none; the second -1 for a head of one span field */
    int32_t label;        /* its label class (an index of the label logits' row; the no-record class
                             is the last); -1 for a head without labels */
    float confidence;     /* its spans', link's and label's probabilities multiplied (docs/extraction.md);
                             0 for a no-record candidate */
    pd_tag_fate fate;
} pd_tag_candidate;

typedef struct pd_tag_trace {
    int32_t n_tokens;     /* the whole prompt */
    int32_t *tokens;
    int32_t read_start;   /* index in tokens of the read copy's first token */
    int32_t n_read;       /* tokens of the read copy */
    int32_t n_tags;       /* 1 + 2 x span fields */
    char **tag_names;     /* [n_tags]: "O", "B-<field>", "I-<field>", ... */
    float *emissions;     /* [n_read][n_tags] */
    int32_t *tags;        /* [n_read] */
    int32_t n_spans;      /* in text order */
    pd_tag_span *spans;
    int32_t n_links;      /* one per span of the `from` field, in text order */
    pd_tag_link *links;
    int32_t n_label_rows; /* one per record before sorting and dropping repeats; 0 without labels */
    int32_t n_labels;     /* label classes of the head, its no-record class included */
    float *label_logits;  /* [n_label_rows][n_labels] */
    int32_t forward_passes; /* pd_eval calls (1; 0 for an empty text) */
    int32_t no_record;    /* 1 when the head has the no-record class: the last of n_labels, a record
                             whose argmax it is is not written */
    int32_t n_candidates; /* every record the pass made, in the order made (the label rows' order) */
    pd_tag_candidate *candidates; /* with what became of each: no record is dropped without its reason */
    float *tag_marginals; /* [n_read][n_tags] P(token i has tag k) under the head's CRF (forward-backward;
                             each row sums to 1); NULL for an empty text */
} pd_tag_trace;

/* Release a trace and its arrays (NULL is fine). */
PD_API void pd_tag_trace_free(pd_tag_trace *trace);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_HEADS_H */
