/* tok_mnn.c - MNN's tokenizer.txt (the HUGGINGFACE kind its LLM exporter
 * writes for byte-level BPE) as vocabulary parts, which
 * pdi_tokenizer_from_parts builds as it does a GGUF file's.
 *
 * The file: "430 3" (magic, kind 3); "S T P" (special, stop and prefix id
 * counts); those S + T + P ids; "V M" (tokens, merges); then V lines, token i
 * on line i as tokenizer.json spells it, and M lines "a b". */
#include "tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MNN_TOKENIZER_MAGIC 430
#define MNN_KIND_HUGGINGFACE 3
#define MNN_MAX_IDS (1 << 24)

typedef struct lines {
    const char *path;
    char *p, *end;
    int line; /* of the line last read */
    pd_error *err;
} lines;

/* The next line (NUL-terminated in place), or NULL at the end of the file. */
static char *next_line(lines *l)
{
    if (l->p >= l->end) return NULL;
    char *s = l->p, *nl = memchr(s, '\n', (size_t)(l->end - s));
    if (nl) *nl = '\0';
    l->p = nl ? nl + 1 : l->end;
    l->line++;
    return s;
}

static pd_status cut_short(lines *l, const char *what)
{
    return pdi_set_error(l->err, PD_ERR_FORMAT, "%s: the file ends at line %d, before %s", l->path, l->line, what);
}

/* n non-negative integers below limit from the next line. */
static pd_status read_ints(lines *l, const char *what, long *v, int n, long limit)
{
    char *s = next_line(l), *e;
    if (!s) return cut_short(l, what);
    for (int i = 0; i < n; i++) {
        v[i] = strtol(s, &e, 10);
        if (e == s || v[i] < 0 || v[i] >= limit)
            return pdi_set_error(l->err, PD_ERR_FORMAT, "%s: line %d: expected %d numbers (%s)", l->path, l->line, n,
                                 what);
        s = e;
    }
    while (*s == ' ' || *s == '\r') s++;
    if (*s) return pdi_set_error(l->err, PD_ERR_FORMAT, "%s: line %d: more than %d numbers (%s)", l->path, l->line, n,
                                 what);
    return PD_OK;
}

/* Copies of the next n lines into out[0..n). */
static pd_status copy_lines(lines *l, char **out, long n, const char *what)
{
    for (long i = 0; i < n; i++) {
        char *s = next_line(l);
        if (!s) {
            char msg[96];
            snprintf(msg, sizeof msg, "%s %ld of %ld", what, i, n);
            return cut_short(l, msg);
        }
        if (!(out[i] = strdup(s))) return pdi_set_error(l->err, PD_ERR_NOMEM, "%s: out of memory", l->path);
    }
    return PD_OK;
}

static pd_status parse(lines *l, pdi_vocab_parts *parts, int32_t *eos)
{
    long head[2], counts[3], sizes[2];
    pd_status rc = read_ints(l, "the magic number and kind", head, 2, MNN_MAX_IDS);
    if (rc) return rc;
    if (head[0] != MNN_TOKENIZER_MAGIC)
        return pdi_set_error(l->err, PD_ERR_FORMAT, "%s: not an MNN tokenizer file (magic %ld, expected %d)", l->path,
                             head[0], MNN_TOKENIZER_MAGIC);
    if (head[1] != MNN_KIND_HUGGINGFACE)
        return pdi_set_error(l->err, PD_ERR_UNSUPPORTED, "%s: tokenizer kind %ld; pocketdec reads kind %d (byte-level "
                             "BPE, HUGGINGFACE)", l->path, head[1], MNN_KIND_HUGGINGFACE);
    if ((rc = read_ints(l, "the special, stop and prefix counts", counts, 3, MNN_MAX_IDS))) return rc;
    long n_ids = counts[0] + counts[1] + counts[2];
    long *ids = malloc((size_t)(n_ids + 1) * sizeof *ids);
    if (!ids) return pdi_set_error(l->err, PD_ERR_NOMEM, "%s: out of memory", l->path);
    rc = n_ids ? read_ints(l, "the special, stop and prefix ids", ids, (int)n_ids, MNN_MAX_IDS) : PD_OK;
    if (rc == PD_OK) rc = read_ints(l, "the token and merge counts", sizes, 2, TOK_MAX_IDS + 1L);
    if (rc == PD_OK && sizes[0] == 0) rc = pdi_set_error(l->err, PD_ERR_FORMAT, "%s: no tokens", l->path);
    for (long i = 0; rc == PD_OK && i < counts[0] + counts[1]; i++)
        if (ids[i] >= sizes[0])
            rc = pdi_set_error(l->err, PD_ERR_RANGE, "%s: line 3: id %ld is not below the %ld tokens", l->path, ids[i],
                               sizes[0]);
    if (rc == PD_OK) {
        parts->tokens = calloc((size_t)sizes[0], sizeof *parts->tokens);
        parts->token_types = malloc((size_t)sizes[0] * sizeof *parts->token_types);
        parts->merges = calloc((size_t)sizes[1] + 1, sizeof *parts->merges);
        parts->pre = strdup("qwen2");
        if (!parts->tokens || !parts->token_types || !parts->merges || !parts->pre)
            rc = pdi_set_error(l->err, PD_ERR_NOMEM, "%s: out of memory", l->path);
    }
    if (rc == PD_OK) {
        parts->n_tokens = (size_t)sizes[0];
        for (long i = 0; i < sizes[0]; i++) parts->token_types[i] = 1;
        for (long i = 0; i < counts[0]; i++) parts->token_types[ids[i]] = 3; /* special: control */
        if (eos) *eos = counts[1] ? (int32_t)ids[counts[0]] : -1;
        rc = copy_lines(l, parts->tokens, sizes[0], "token");
    }
    if (rc == PD_OK) {
        parts->n_merges = (size_t)sizes[1];
        rc = copy_lines(l, parts->merges, sizes[1], "merge");
    }
    free(ids);
    return rc;
}

pd_status pdi_mnn_vocab_parts(const char *path, pdi_vocab_parts *parts, int32_t *eos, pd_error *err)
{
    char *data;
    size_t len;
    memset(parts, 0, sizeof *parts);
    pd_status rc = pdi_read_file(path, &data, &len, err);
    if (rc) return rc;
    lines l = {path, data, data + len, 0, err};
    rc = parse(&l, parts, eos);
    free(data);
    if (rc) pdi_vocab_parts_free(parts);
    return rc;
}
