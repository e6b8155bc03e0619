/* heads.h - what the files of heads/ share, and what a composer reads of a
 * loaded head: head.c (head files) and head_files.c (their text files and
 * tensors), decider.c (decision prompts and scores), tagger.c (tagger heads:
 * files and scores), tag_prompt.c and tag_run.c (a tagger's pass),
 * tag_lattice.c (its CRF), gazetteer.c, features.c and feature_sums.c (its
 * terms and sparse features), head_math.c (the arithmetic all of them use). */
#ifndef PD_HEADS_H
#define PD_HEADS_H

#include "pd_internal.h"
#include "pocketdec_heads.h"

#include <jansson.h>

/* Marker token ids of the prompt layout, in prompt order of appearance. */
enum { PD_MK_PREFIX, PD_MK_MIDDLE, PD_MK_CAND_START, PD_MK_CAND_END, PD_MK_SUFFIX, PD_MK_COUNT };

/* Default marker names (llama.cpp's pointer-head decision adapters). */
extern const char *const pdi_marker_default_names[PD_MK_COUNT];

/* Look up the marker names in the model's tokenizer: each must be one token
 * with an id inside the model's embedding. src names the file for errors. */
pd_status pdi_markers_resolve(const pd_model *model, const char *const names[PD_MK_COUNT], int32_t ids[PD_MK_COUNT],
                              const char *src, pd_error *err);

/* A tagger head (type "tagger"): BIO tags over the read copy of an echo
 * prompt, a link between two span fields, labels of each record. Tag 0 is
 * "O", tag 1 + 2k "B-<spans[k]>", tag 2 + 2k "I-<spans[k]>". */
#define PDI_MIN_WINDOW 16 /* the fewest characters of a window (PD_PIPELINE_MIN_WINDOW) */
#define PD_TAGGER_MAX_SPANS 2 /* records pair two span fields at most (the link) */
_Static_assert(sizeof((pd_tag_candidate){0}.spans) == PD_TAGGER_MAX_SPANS * sizeof(int32_t),
               "pd_tag_candidate holds a span of each span field");

/* The token states of a span a label classifier may read (head.json's
 * "label_states": "first", "last"). */
typedef enum { PD_SPAN_FIRST = 0, PD_SPAN_LAST = 1, PD_SPAN_N_STATES = 2 } pdi_span_state;

/* A tagger head's gazetteer (gazetteer.c): terms of its span fields that the
 * prompt's {marked} copy shows between the field's marker tokens. */
typedef struct pdi_gazetteer pdi_gazetteer;
#define PD_GAZETTEER_MAX_CHARS 64 /* characters of one term */

/* A tagger head's sparse features (features.c): hashed features of the
 * review's characters whose learned weights add to the dense scores. */
typedef struct pdi_features pdi_features;

typedef struct pdi_tagger {
    char *prompt;          /* template holding {text} or {chars} once or more, and {marked} with a gazetteer */
    pdi_gazetteer *gazetteer; /* NULL without */
    pdi_features *features;   /* head.json "features"; NULL without */
    int32_t n_spans, n_tags;
    char **spans;          /* span field names, in tag order */
    int32_t link_from, link_to; /* indices in spans; -1 without a link */
    int32_t link_dim;
    int32_t n_label_fields, n_labels;
    char **label_fields;   /* enum field names */
    char **label_values;   /* [n_labels][n_label_fields] */
    int32_t n_label_states; /* 1 or 2; ["last"] when head.json names none */
    bool no_record;        /* head.json "no_record": one more label row, last, that drops the record */
    bool posterior_spans;  /* head.json "span_decoding" "posterior": spans by their marginal probability */
    double span_threshold; /* with it, the least probability of a kept span, in [0.01, 1] */
    double min_confidence; /* head.json "min_confidence": records less sure are not written, in [0, 1] */
    int32_t max_chars;     /* head.json "max_chars": longer texts are read in windows (0: none) */
    pdi_span_state label_states[PD_SPAN_N_STATES];
    float *tag_w, *tag_b;  /* [n_tags][hidden], [n_tags] */
    float *trans, *start, *end; /* [n_tags][n_tags] (row: previous tag), [n_tags], [n_tags]; zeros when absent */
    float *lq_w, *lq_b, *lk_w, *lk_b, *l_none; /* [d][hidden], [d], [d][hidden], [d], [d] */
    float *lab_w, *lab_b, *lab_none; /* [n_labels + no_record][n_spans * n_label_states * hidden],
                                        [n_labels + no_record], [hidden] */
} pdi_tagger;

struct pd_head {
    char *source;     /* the directory it was loaded from */
    pd_head_type type;
    pd_layout layout; /* SEQUENTIAL or PARALLEL */
    int32_t hidden, head_dim;
    float temperature;
    int32_t markers[PD_MK_COUNT];
    float *wq, *bq, *wk, *bk; /* pointer: [head_dim][hidden], [head_dim] */
    float *w, *b;             /* classifier: [n_labels][hidden], [n_labels] */
    int32_t n_labels;
    char **labels;
    pdi_tagger *tagger;        /* PD_HEAD_TAGGER only */
};

/* An F32 copy of tensor `name` (any float dtype in the file), which must have
 * shape [rows] (cols 0) or [rows, cols]; PD_ERR_SHAPE naming it otherwise.
 * With optional, a missing tensor gives zeros. */
pd_status pdi_head_take_tensor(const pdi_tensor_store *st, const char *name, int64_t rows, int64_t cols, bool optional,
                               float **out, const char *path, pd_error *err);

/* A file named in head.json: name in the head's folder (as given when
 * absolute); malloc'ed, NULL when out of memory. */
char *pdi_head_path(const pd_head *h, const char *name);

/* A head's text file (gazetteer, lexicon, memory) into *data (*len bytes,
 * NUL-terminated): at most PD_HEAD_TEXT_MAX bytes (PD_ERR_LIMIT), no NUL
 * byte (PD_ERR_FORMAT). *lines: how many lines it can hold at most. */
#define PD_HEAD_TEXT_MAX (64u << 20)
pd_status pdi_head_text_read(const char *file, char **data, size_t *len, size_t *lines, pd_error *err);
/* The line at *pos of data[0..len) (without its \n or \r\n) into *line, *n,
 * and *pos past it; false at the end. */
bool pdi_head_text_line(char *data, size_t len, size_t *pos, char **line, size_t *n);
/* Characters of s[0..n) when it is well-formed UTF-8 with no control
 * character (below U+0020, U+007F); -1 otherwise. */
int32_t pdi_text_chars(const char *s, size_t n);

/* sum a[i] b[i] in double; y[r] = W[r] . x + b[r] for W [rows][cols]. */
double pdi_head_dot(const float *a, const float *b, int64_t n);
void pdi_head_affine(const float *w, const float *b, const float *x, int64_t rows, int64_t cols, double *y);

/* ------------------------------------------------------------ tagger heads */

/* head.json's tagger keys (prompt, spans, link, label_fields, labels, label_states) into h->tagger. */
pd_status pdi_tagger_parse(pd_head *h, json_t *root, const char *path, pd_error *err);
/* Its tensors from head.safetensors. */
pd_status pdi_tagger_tensors(pd_head *h, const pdi_tensor_store *st, const char *path, pd_error *err);
void pdi_tagger_free(pdi_tagger *t);

/* Emissions of n hidden states rows[i] ([hidden] each): out[i][t] =
 * tag.weight[t] . h_i + tag.bias[t] + sparse[i][t], summed in double and
 * rounded once (sparse: the sparse features' sums, or NULL). */
void pdi_tagger_emissions(const pd_head *h, const float *const *rows, int32_t n, const double *sparse, float *out);
/* The best tag sequence under the BIO constraints (I-f only after B-f or
 * I-f; a token that does not start a character, boundary[i] == 0, continues
 * its predecessor's span or is O). Ties go to the smaller tag. Scores in
 * double. PD_ERR_NOMEM is the only failure. */
pd_status pdi_tagger_viterbi(const pdi_tagger *t, const float *emissions, const uint8_t *boundary, int32_t n,
                             int32_t *tags, pd_error *err);
/* Whether tag `next` may follow tag `prev` (-1: nothing, the first token) at
 * a token that starts a character (boundary) or continues one. */
bool pdi_tagger_allowed(int32_t prev, int32_t next, bool boundary);

/* The tagger's CRF over the tag sequences of n tokens allowed as for the
 * Viterbi (start, emissions, transitions, end): forward and backward tables
 * in log space, double. */
typedef struct pdi_tag_lattice {
    const pdi_tagger *t;
    const float *emissions; /* [n][n_tags], borrowed */
    const uint8_t *boundary;
    int32_t n;
    double *alpha, *beta; /* [n][n_tags] each: prefix and suffix log-sums */
    double log_z;         /* log of the sum over every allowed sequence */
} pdi_tag_lattice;

/* Fill L (emissions and boundary stay borrowed). PD_ERR_NOMEM is the only failure. */
pd_status pdi_tag_lattice_init(pdi_tag_lattice *L, const pdi_tagger *t, const float *emissions, const uint8_t *boundary,
                               int32_t n, pd_error *err);
void pdi_tag_lattice_free(pdi_tag_lattice *L);
/* log P(tokens first..last are one span of field `field`): tags B-f I-f ...
 * I-f there and the token after last (if any) not I-f. -inf when impossible
 * or out of range. */
double pdi_tag_lattice_span_logprob(const pdi_tag_lattice *L, int32_t field, int32_t first, int32_t last);
/* out[n][n_tags]: P(token i has tag k), alpha + beta - log Z (each row sums to 1). */
void pdi_tag_lattice_tag_marginals(const pdi_tag_lattice *L, float *out);
/* The posterior span rule: every span whose probability is at least
 * threshold, most probable first (ties: earlier, smaller field, shorter),
 * kept unless it overlaps one kept before; tags B-f I-f... for the kept
 * spans, O elsewhere. At threshold >= 0.5 the kept spans are exactly those
 * at least that probable (two overlapping spans exclude each other, so both
 * cannot pass 0.5). PD_ERR_NOMEM is the only failure. */
pd_status pdi_tag_lattice_posterior_tags(const pdi_tag_lattice *L, double threshold, int32_t *tags, pd_error *err);

/* Link scores of one `from` span (hidden state h_from) against the `to`
 * spans to[0..n_to) then "none": out[n_to + 1], plus sparse[n_to + 1] (or
 * NULL) before the rounding to float; work holds 2 link_dim floats. */
void pdi_tagger_link_scores(const pd_head *h, const float *h_from, const float *const *to, int32_t n_to,
                            const double *sparse, float *work, float *out);
/* Label logits of a record: x[k * n_label_states + j] is the hidden state at
 * token label_states[j] (first or last) of its span of field spans[k], or
 * NULL for `_`; out[n_labels + no_record] (the no-record class last), plus
 * sparse[n_labels + no_record] (or NULL) before the rounding to float. */
void pdi_tagger_label_logits(const pd_head *h, const float *const *x, const double *sparse, float *out);
/* head.json's "gazetteer" ({"file", "marks": {span field: [open, close]}})
 * and its file (one `field<TAB>term` a line; `#` comments, blank lines; a
 * term listed under two fields has both) into h->tagger->gazetteer. The
 * prompt must hold {marked} exactly when there is a gazetteer. */
pd_status pdi_gazetteer_parse(pd_head *h, json_t *root, const char *path, pd_error *err);
void pdi_gazetteer_free(pdi_gazetteer *g);
/* The open (close false) or close marker name of span field k; NULL when the
 * field has none. */
const char *pdi_gazetteer_mark(const pdi_gazetteer *g, int32_t field, bool close);

/* A term list of the same file format without marks (the sparse features'
 * lexicon): file `name` in the head's folder, every span field allowed. */
pd_status pdi_lexicon_load(const pd_head *h, const char *name, pdi_gazetteer **out, pd_error *err);

/* A match: bytes [start, end) of the text, the span fields (bit k) of its term. */
typedef struct pdi_gaz_match {
    size_t start, end;
    uint32_t fields;
} pdi_gaz_match;

/* The matches in text (len bytes of valid UTF-8) of the terms of `fields`
 * (bits of span fields; ~0u for every term), in text order: at each
 * character the longest such term starting there; those longer first, then
 * earlier, each kept unless it overlaps one kept before (lengths in
 * characters). A match's fields are its term's among `fields`. *out is
 * malloc'ed (NULL when none). PD_ERR_NOMEM is the only failure. */
pd_status pdi_gazetteer_match(const pdi_gazetteer *g, uint32_t fields, const char *text, size_t len, pdi_gaz_match **out,
                              int32_t *n_out, pd_error *err);

/* ------------------------------------------------------- sparse features */

/* head.json's "features" (hash, lexicon, memory, tag/link/label tables of
 * buckets and templates) and its lexicon and memory files into
 * h->tagger->features (NULL without the key). After the tagger's other keys. */
pd_status pdi_features_parse(pd_head *h, json_t *root, const char *path, pd_error *err);
/* Its tables features.tag [buckets, n_tags], features.link [buckets, 1],
 * features.label [buckets, n_labels + no_record]; a features.* tensor that
 * head.json does not declare is refused (PD_ERR_SHAPE), with or without
 * features. */
pd_status pdi_features_tensors(pd_head *h, const pdi_tensor_store *st, const char *path, pd_error *err);
void pdi_features_free(pdi_features *f);

typedef enum { PD_FEAT_TAG, PD_FEAT_LINK, PD_FEAT_LABEL } pdi_feat_decision;
/* Whether decision d has a sparse part (false when f is NULL). */
bool pdi_features_on(const pdi_features *f, pdi_feat_decision d);
/* FNV-1a 64 of p[0..n) from the basis 0xcbf29ce484222325 XOR seed. */
uint64_t pdi_fnv1a64(uint64_t seed, const void *p, size_t n);

/* Characters [start, end) of the text; start < 0: none (a record's `_`). */
typedef struct pdi_feat_span {
    int32_t start, end;
} pdi_feat_span;

/* What a text's polarity atoms read (polarity.c). */
typedef struct pdi_pol_text pdi_pol_text;

/* The review as the features see it: its characters (code points of the
 * bytes the read copy's tokens cover), their kinds, clause punctuation and
 * lexicon marks, and the room the sums work in. One per extraction. */
typedef struct pdi_feat_text {
    const pdi_features *f;
    const char *bytes; /* borrowed */
    size_t len;
    int32_t n;         /* characters */
    size_t *start;     /* [n + 1] byte offset of each character; start[n] = len */
    int32_t *cp;       /* [n] code points, -1 where the bytes are not UTF-8 */
    char *kind;        /* [n] d a h s p */
    uint8_t *punct;    /* [n] 1 at clause punctuation */
    char *marks;       /* [n_spans][n] lexicon marks B I E S -, of the fields lex. atoms read */
    int32_t *scratch;  /* [n] a clause's distinct characters */
    char *key;         /* a record's memory key */
    pdi_pol_text *pol; /* what the polarity atoms read; NULL without a polarity table */
} pdi_feat_text;

/* x over bytes[0..len) (borrowed; the read copy's bytes). PD_ERR_NOMEM and
 * PD_ERR_LIMIT (a text over 1 GiB) are the failures; x is empty after one. */
pd_status pdi_feat_text_init(pdi_feat_text *x, const pdi_features *f, const char *bytes, size_t len, pd_error *err);
void pdi_feat_text_free(pdi_feat_text *x);
/* The character that starts at byte offset `byte` (n at the end of the
 * text); -1 inside a character or past the end. */
int32_t pdi_feat_text_char(const pdi_feat_text *x, size_t byte);

/* The sparse sums, added to out (the caller zeroes it). Emissions of the
 * token that starts at character i: out[n_tags]. */
void pdi_features_tag(const pdi_feat_text *x, int32_t i, double *out);
/* Link scores of `from` against each to[0..n_to) (every `to` span of the
 * review, in text order) then none: out[n_to + 1]. */
void pdi_features_link(const pdi_feat_text *x, pdi_feat_span from, const pdi_feat_span *to, int32_t n_to, double *out);
/* Label logits of a record (spans[k]: its span of head span field k):
 * out[n_labels + no_record]. */
void pdi_features_label(const pdi_feat_text *x, const pdi_feat_span *spans, double *out);

/* The same sums, each feature also told to visit: its name (the template as
 * head.json writes it, "=", its atoms' values separated by spaces, cut at
 * PDI_FEAT_NAME_MAX - 1 bytes), its table row (out's width) and `which`
 * (the link candidate, 0 for a token or a record). For explaining a pass. */
#define PDI_FEAT_NAME_MAX 160
typedef void (*pdi_feat_visit)(void *arg, int32_t which, const char *name, const float *row);
void pdi_features_tag_named(const pdi_feat_text *x, int32_t i, double *out, pdi_feat_visit visit, void *arg);
void pdi_features_link_named(const pdi_feat_text *x, pdi_feat_span from, const pdi_feat_span *to, int32_t n_to,
                             double *out, pdi_feat_visit visit, void *arg);
void pdi_features_label_named(const pdi_feat_text *x, const pdi_feat_span *spans, double *out, pdi_feat_visit visit,
                              void *arg);

/* ------------------------------------------------- a tagger head's pass */

/* A tagger head ready to run on one model (tag_prompt.c): its prompt
 * template split at each {text}, {chars} and {marked}, the literal parts
 * tokenized once, its gazetteer's marker tokens resolved. Immutable; head
 * and model must outlive it. */
typedef struct pdi_tag_runner pdi_tag_runner;
/* A head of another type, or without a tagger, gives PD_ERR_ARG; a head for
 * another hidden size PD_ERR_SHAPE; a model without a tokenizer PD_ERR_ARG;
 * a gazetteer marker that is no token of the model PD_ERR_FORMAT. */
pd_status pdi_tag_runner_new(const pd_head *head, const pd_model *model, pdi_tag_runner **out, pd_error *err);
void pdi_tag_runner_free(pdi_tag_runner *r);
const pd_head *pdi_tag_runner_head(const pdi_tag_runner *r);
const pd_model *pdi_tag_runner_model(const pdi_tag_runner *r);
/* The prompt of text (len > 0 bytes) into tr: tokens, n_tokens, read_start, n_read. */
pd_status pdi_tag_prompt(const pdi_tag_runner *r, const char *text, size_t len, pd_tag_trace *tr, pd_error *err);

/* A record the head decided (tag_run.c): its span (an index in the trace's
 * spans) of each head span field, -1 for `_`, and its label class (the
 * argmax of its label logits, the trace's row of the same index; n_labels is
 * the no-record class; -1 when the head has no labels). */
typedef struct pdi_tag_record {
    int32_t span[PD_TAGGER_MAX_SPANS];
    int32_t label;
    float link;       /* the pairing's probability: the `from` span's choice (none included), or
                         for a lone `to` span that no `from` span chose it; 1 without a link */
    float label_prob; /* the label class's softmax probability (1 without labels) */
} pdi_tag_record;

/* One pass over text (len bytes of valid UTF-8): the prompt evaluated in one
 * pd_eval on ctx (its cache cleared first; a prompt longer than the context
 * gives PD_ERR_CONTEXT before the model runs), then emissions, tags, spans,
 * links and label logits into tr (zeroed by the caller; tag names only with
 * names), and the records into *recs (malloc'ed, *n_recs of them): one per
 * `from` span in text order with its chosen partner, then one per `to` span
 * that no `from` span chose (one per span without a link). An empty text
 * decides nothing and does not run the model. */
pd_status pdi_tag_run(const pdi_tag_runner *r, pd_context *ctx, const char *text, size_t len, bool names,
                      pd_tag_trace *tr, pdi_tag_record **recs, int32_t *n_recs, pd_error *err);
/* The read copy of ids[0..n): its bytes (NUL-terminated), each token's byte
 * offset [n + 1] and whether it starts a character [n]; PD_ERR_NOMEM (set no
 * message) with whatever was allocated in the outputs, for the caller to free. */
pd_status pdi_tag_read_copy(const pd_tokenizer *tok, const int32_t *ids, int32_t n, char **bytes, size_t **offset,
                            uint8_t **boundary);

/* The sparse features behind a traced pass's decisions (tag_why.c), for
 * pd_tag_explain: per span the features of its tokens' tags (each weighed
 * as its row's tag minus O), per link those of the chosen candidate, per
 * label row those of its argmax class; equal names merged, the PDI_WHY_TOP
 * heaviest (by |weight|) kept, heaviest first. */
#define PDI_WHY_TOP 5
typedef struct pdi_why_feature {
    double weight;
    char name[PDI_FEAT_NAME_MAX];
} pdi_why_feature;
typedef struct pdi_why {
    bool on;            /* the decision has a sparse part */
    double sparse;      /* the sum of all its features' weights */
    int32_t n_features; /* distinct names */
    int32_t n_top;
    pdi_why_feature top[PDI_WHY_TOP];
} pdi_why;
/* *why[n_spans + n_links + n_label_rows] in that order (free()). */
pd_status pdi_tag_why(const pdi_tag_runner *r, const pd_tag_trace *tr, pdi_why **why, pd_error *err);
/* Characters [start, end) of a span of the read copy (offset: its tokens'). */
pdi_feat_span pdi_tag_span_chars(const pdi_feat_text *x, const size_t *offset, const pd_tag_span *s);

/* [d0, d1, ...] of a tensor's shape into buf, for messages. */
void pdi_tensor_shape_text(const pdi_tensor *t, char *buf, size_t n);

/* Index of the largest of v[0..n) (the first on ties). */
int32_t pdi_argmax(const float *v, int32_t n);
/* softmax(v[0..n))[k], in double. */
double pdi_softmax_at(const float *v, int32_t n, int32_t k);

#endif
