/*
 * fixtures.h - tiny Qwen3 models written byte by byte by the tests
 * themselves: safetensors files, HF directories and GGUF files.
 */
#ifndef PD_TEST_FORMATS_FIXTURES_H
#define PD_TEST_FORMATS_FIXTURES_H

#include "formats/formats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Dimensions of a test model. dtypes are cycled over the tensors (HF) or
 * over the matrices (GGUF, whose 1-D tensors stay F32 as llama.cpp writes). */
typedef struct tmodel {
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
    bool lm_head;
    pdi_dtype dtypes[4];
    int n_dtypes;
} tmodel;

/* Two layers, hidden 32, 2 heads / 1 KV head of 16, FFN 64, vocab 40, an
 * LM head, all F32. Row lengths are multiples of 32 for block types. */
tmodel tmodel_default(void);

typedef struct ttensor {
    char name[128];      /* HF name */
    char gguf_name[128];
    pdi_dtype dtype;
    int n_dims;
    int64_t shape[4];    /* HF order, outermost first */
    uint8_t *data;       /* deterministic bytes */
    size_t nbytes;
} ttensor;

typedef struct tlist {
    ttensor *t;
    size_t n;
} tlist;

tlist tmodel_tensors(const tmodel *m, bool gguf);
/* Add a tensor with bytes derived from its name. */
ttensor *tlist_add(tlist *l, const char *name, const char *gguf_name, pdi_dtype dt, int n_dims,
                   const int64_t *shape);
void tlist_remove(tlist *l, const char *name);
ttensor *tlist_find(tlist *l, const char *name);
void tlist_free(tlist *l);

/* A growable byte buffer. */
typedef struct tbuf {
    uint8_t *data;
    size_t len, cap;
} tbuf;

void tb_put(tbuf *b, const void *p, size_t n);
void tb_u32(tbuf *b, uint32_t v);
void tb_u64(tbuf *b, uint64_t v);
void tb_str(tbuf *b, const char *s); /* GGUF string: u64 length + bytes */

/* Temporary directories (removed recursively) and plain files. */
char *tdir_new(void);
void tdir_remove(char *dir);
void tpath(char *out, size_t size, const char *dir, const char *name);
void twrite(const char *path, const void *data, size_t len);
void twrite_str(const char *dir, const char *name, const char *text);

/* safetensors: the JSON header of tensors t[0..n) laid out back to back, and
 * a file written from a header and data (the header is padded to 8 bytes). */
char *st_header(ttensor *const *t, size_t n);
void st_write(const char *path, const char *header, const void *data, size_t data_len);
void st_write_tensors(const char *path, ttensor *const *t, size_t n);

/* config.json of m; extra ("\"key\": value, ...") is appended and, jansson
 * keeping the last of repeated keys, overrides. */
char *tconfig_json(const tmodel *m, bool tie, const char *extra);

/* An HF directory: config.json and one model.safetensors (n_shards 1) or
 * n_shards shards, tensor i in shard i % n_shards, plus the index. */
void hf_write_dir(const char *dir, const tmodel *m, const tlist *l, bool tie, const char *extra,
                  int n_shards);

/* model.safetensors.index.json for that layout; the tensor `moved` (may be
 * NULL) is listed in file moved_to instead. */
void hf_write_index(const char *dir, const tlist *l, int n_shards, const char *moved, const char *moved_to);

typedef struct gguf_opts {
    uint32_t version;        /* 0: 3 */
    const char *arch;        /* NULL: "qwen3" */
    uint32_t alignment;      /* 0: no general.alignment key (32) */
    bool vocab;              /* tokenizer.ggml.* arrays */
    bool nested;             /* add an array of arrays to step over */
    bool short_types;        /* token_type one entry shorter than tokens */
    size_t bad_type;         /* 1-based tensor whose type becomes 12 (Q4_K); 0 none */
    size_t misalign;         /* 1-based tensor whose offset gets +1; 0 none */
} gguf_opts;

typedef struct gguf_layout {
    size_t meta_end;   /* end of the metadata pairs */
    size_t data_start; /* start of the data section */
} gguf_layout;

/* A GGUF file of m holding the tensors of l (under their GGUF names). */
tbuf gguf_build(const tmodel *m, const tlist *l, const gguf_opts *o, gguf_layout *lay);

/* The vocabulary gguf_build writes with o->vocab. */
#define TVOCAB_N_MERGES 3
extern const char *const tvocab_merges[TVOCAB_N_MERGES];
void tvocab_token(int i, char *buf, size_t size);
int32_t tvocab_type(int i, int n);

/* The store holds exactly the tensors of l: names, dtypes, shapes, bytes. */
void check_store_matches(const pdi_tensor_store *st, const tlist *l);

/* Fail the test unless rc == code and the message holds every needle. */
#define check_error(rc, err, code, ...) \
    check_error_(rc, err, code, (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)
void check_error_(pd_status rc, const pd_error *err, pd_status code, const char *const *needles,
                  const char *file, int line);

#endif
