/* decoder.h - the decoding loop of extraction by generation (extract.c)
 * and its drafter side (extract_draft.c). Internal to schemas/. */
#ifndef PD_SCHEMAS_DECODER_H
#define PD_SCHEMAS_DECODER_H

#include "schema_internal.h"

#include <stdbool.h>
#include <stdint.h>

struct pd_extractor {
    const pd_model *model;
    const pd_schema *schema;
    pdi_trie vocab;   /* bytes of every ordinary token the model can emit */
    int32_t n_vocab; /* ids below this are rows of the LM head */
    int32_t end_id;
};

/* The decoding loop's working set. */
typedef struct decoder {
    pd_context *ctx;
    const pd_extractor *ex;
    pd_extract_params p;
    pdi_constraint con;
    int32_t *allowed; /* [n_vocab + 1]: the step's candidates (the end token last) */
    float *cand;      /* their logits */
    uint64_t rng;
    int32_t *out;     /* [max_tokens + 1]: the tokens generated so far, then a draft */
    double *logp;     /* [max_tokens + 1]: each generated token's log probability among the allowed ones */
    const char *text; /* the review, where the records' spans are placed */
    size_t len;
    int32_t *scratch; /* [n_vocab + 1]: allowed sets while drafting */
    int32_t *batch;   /* [cap]: the last evaluation's tokens (a token, then its draft) */
    int32_t cap;      /* 1 + the longest draft: PD_SPECULATE_MAX, or the drafter's block - 1 */
    int32_t row, n_rows; /* the row of the last evaluation whose logits decide next, and its rows */
    bool full;        /* the last evaluation computed full logits */
    /* between evaluations (the loop is resumed after each, alone or with other decoders) */
    pd_extraction *x;
    pdi_cstate s;      /* the constraint's state after the output so far */
    int32_t n;        /* candidates of the next token (in allowed) */
    bool sparse;      /* they are few enough for the sparse head */
    size_t complete;  /* bytes of the output's complete records */
    int32_t *ids;     /* the prompt's tokens (where drafts are looked up) */
    size_t n_ids;
    int32_t *rows;    /* [cap] */
    pd_batch next;    /* the evaluation the decoder waits for */
    bool copy_drafts; /* drafts may guess a span's copy, not only the tokens the schema forces */
    uint8_t *source;  /* [cap]: where each row of the last evaluation came from (a PDI_ROW_ value) */
    /* the drafter (p.drafter; extract_draft.c) */
    void *dstate;     /* its state for this text */
    bool drafting;    /* it holds the states of every position before the next evaluation */
    bool states_on;   /* d->ctx keeps layer states for it */
    int32_t *proposal; /* [cap]: its tokens */
} decoder;

/* Where a row of an evaluation came from. */
enum { PDI_ROW_CHOSEN = 0, PDI_ROW_FORCED, PDI_ROW_COPY, PDI_ROW_DRAFTER };

/* The drafter's side (extract_draft.c), each a no-op without a drafter. */
/* Layer states on for d->ctx and the drafter's state for the text; the
 * prompt's cached tokens (stats.n_cached_tokens) lowered to those the
 * drafter holds. */
pd_status pdi_decoder_draft_open(decoder *d, pd_error *err);
/* The rows of the last evaluation the output keeps (the prompt's, or rows
 * 0..d->row) to the drafter, before the next evaluation is prepared. */
pd_status pdi_decoder_draft_feed(decoder *d, pd_error *err);
/* The drafter's proposals after token last (the output's n_out-th, state s
 * after it), at most k_max, walked through the constraint: they stop at the
 * first one it forbids, at the end token or when the output is complete.
 * Into d->proposal; *k receives how many. */
pd_status pdi_decoder_draft_propose(decoder *d, int32_t last, pdi_cstate s, int32_t k_max, int32_t *k, pd_error *err);
/* Layer states off again. */
void pdi_decoder_draft_close(decoder *d);

#endif
