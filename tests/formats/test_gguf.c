/* test_gguf.c - GGUF v2/v3 files: metadata, tensors under HF names, vocabulary. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fx {
    char *tmp;
    char path[1024];
    tmodel m;
    tlist l;
    tbuf file;
    gguf_layout lay;
    pdi_tensor_store st;
    pd_config cfg;
    pdi_vocab_parts vocab;
    pd_error err;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->tmp = tdir_new();
    tpath(f->path, sizeof f->path, f->tmp, "model.gguf");
    f->m = tmodel_default();
    f->l = tmodel_tensors(&f->m, true);
    pdi_store_init(&f->st);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pdi_store_free(&f->st);
    pdi_vocab_parts_free(&f->vocab);
    tlist_free(&f->l);
    free(f->file.data);
    tdir_remove(f->tmp);
    free(f);
    return 0;
}

/* Regenerate the tensors (after a change to f->m) and build the file. */
static void rebuild(fx *f, const gguf_opts *o)
{
    free(f->file.data);
    f->file = gguf_build(&f->m, &f->l, o, &f->lay);
    twrite(f->path, f->file.data, f->file.len);
}

static void retensor(fx *f)
{
    tlist_free(&f->l);
    f->l = tmodel_tensors(&f->m, true);
}

static pd_status load(fx *f) { return pdi_gguf_load(f->path, &f->st, &f->cfg, &f->vocab, &f->err); }

/* A failed load leaves nothing behind. */
static void check_clean(fx *f)
{
    assert_int_equal(f->st.n_tensors, 0);
    assert_int_equal(f->st.n_maps, 0);
    assert_null(f->vocab.tokens);
    assert_int_equal(f->vocab.n_tokens, 0);
}

/* Also: sizes from the row formula, data at multiples of 32 into the data section. */
static void check_tensors(fx *f)
{
    check_store_matches(&f->st, &f->l);
    for (size_t i = 0; i < f->st.n_tensors; i++) {
        const pdi_tensor *t = &f->st.tensors[i];
        size_t rows = t->n_dims == 2 ? (size_t)t->shape[0] : 1;
        assert_int_equal(t->nbytes, pdi_dtype_row_bytes(t->dtype, t->shape[t->n_dims - 1]) * rows);
        assert_int_equal(((size_t)(t->data - f->st.maps[0].data) - f->lay.data_start) % 32, 0);
    }
}

static void test_valid_tied_with_vocab(void **state)
{
    fx *f = *state;
    f->m.lm_head = false;
    retensor(f);
    rebuild(f, &(gguf_opts){.vocab = true});
    assert_int_equal(load(f), PD_OK);
    const pd_config *c = &f->cfg;
    assert_int_equal(c->n_layers, 2);
    assert_int_equal(c->hidden, 32);
    assert_int_equal(c->n_heads, 2);
    assert_int_equal(c->n_kv_heads, 1);
    assert_int_equal(c->head_dim, 16);
    assert_int_equal(c->ffn, 64);
    assert_int_equal(c->vocab, 40);
    assert_int_equal(c->max_positions, 512);
    assert_float_equal(c->rope_theta, 1e6f, 1.0f);
    assert_float_equal(c->rms_eps, 1e-6f, 1e-12f);
    assert_int_equal(c->tied_embeddings, 1);
    assert_int_equal(c->bos_id, 1);
    assert_int_equal(c->eos_id, 2);
    check_tensors(f);
    /* [out, in] in HF order: q_proj is [heads*head_dim, hidden] */
    const pdi_tensor *q = pdi_store_find(&f->st, "model.layers.1.self_attn.q_proj.weight");
    assert_int_equal(q->shape[0], 32);
    assert_int_equal(q->shape[1], 32);
    const pdi_tensor *down = pdi_store_find(&f->st, "model.layers.0.mlp.down_proj.weight");
    assert_int_equal(down->shape[0], 32);
    assert_int_equal(down->shape[1], 64);

    const pdi_vocab_parts *v = &f->vocab;
    assert_int_equal(v->n_tokens, 40);
    char tok[32];
    for (int i = 0; i < 40; i++) {
        tvocab_token(i, tok, sizeof tok);
        assert_string_equal(v->tokens[i], tok);
        assert_int_equal(v->token_types[i], tvocab_type(i, 40));
    }
    assert_int_equal(v->n_merges, TVOCAB_N_MERGES);
    for (int i = 0; i < TVOCAB_N_MERGES; i++) assert_string_equal(v->merges[i], tvocab_merges[i]);
    assert_string_equal(v->pre, "qwen2");
}

static void test_each_dtype(void **state)
{
    fx *f = *state;
    const pdi_dtype types[] = {PD_F32, PD_F16, PD_BF16, PD_Q8_0, PD_Q4_0, PD_Q4_1};
    for (size_t i = 0; i < 6; i++) {
        f->m.dtypes[0] = types[i];
        f->m.dtypes[1] = types[(i + 1) % 6]; /* a mix within one file too */
        f->m.n_dtypes = 2;
        retensor(f);
        rebuild(f, &(gguf_opts){.version = i % 2 ? 2 : 3});
        assert_int_equal(pdi_gguf_load(f->path, &f->st, &f->cfg, NULL, &f->err), PD_OK);
        assert_int_equal(f->cfg.tied_embeddings, 0);
        check_tensors(f);
        assert_int_equal(pdi_store_find(&f->st, "lm_head.weight")->dtype, f->l.t[f->l.n - 1].dtype);
        pdi_store_free(&f->st);
    }
}

static void test_bad_magic(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){0});
    f->file.data[0] = 'X';
    twrite(f->path, f->file.data, f->file.len);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "bad magic");
    twrite(f->path, "GG", 2);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "bad magic");
    check_clean(f);
}

static void test_bad_version(void **state)
{
    fx *f = *state;
    const struct {
        uint32_t version;
        const char *needle;
    } cases[] = {{1, "version 1 "}, {4, "version 4 "}, {0x03000000, "big-endian"}};
    for (size_t i = 0; i < 3; i++) {
        rebuild(f, &(gguf_opts){.version = cases[i].version});
        check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->path, cases[i].needle);
        check_clean(f);
    }
}

/* Every prefix of the file fails cleanly: truncated header, metadata,
 * tensor infos or data. */
static void test_truncated(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.vocab = true, .nested = true});
    twrite(f->path, f->file.data, f->lay.meta_end - 3);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "truncated", "metadata");
    twrite(f->path, f->file.data, f->lay.meta_end + 10);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "truncated", "tensor info");
    char want[128]; /* output.weight is the last tensor and ends the file */
    snprintf(want, sizeof want, "tensor output.weight data ends at %zu, file is %zu bytes", f->file.len,
             f->file.len - 40);
    twrite(f->path, f->file.data, f->file.len - 40);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, want);
    for (size_t cut = 0; cut < f->file.len; cut += cut < f->lay.data_start + 64 ? 1 : 61) {
        twrite(f->path, f->file.data, cut);
        pd_status rc = load(f);
        if (rc != PD_ERR_FORMAT) fail_msg("cut at %zu: status %d, %s", cut, (int)rc, f->err.message);
        check_clean(f);
    }
}

static void test_unsupported_type(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.bad_type = 2});
    check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->path, "blk.0.attn_norm.weight", "type 12", "Q4_K");
    check_clean(f);
}

static void test_misaligned(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.misalign = 3});
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "blk.0.attn_q.weight", "not a multiple of the alignment 32");
    check_clean(f);
}

static void test_alignment(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.alignment = 64});
    assert_int_equal(load(f), PD_OK);
    assert_int_equal(f->lay.data_start % 64, 0);
    pdi_store_free(&f->st);
    rebuild(f, &(gguf_opts){.alignment = 16, .misalign = 0});
    assert_int_equal(load(f), PD_OK);
    pdi_store_free(&f->st);
    rebuild(f, &(gguf_opts){.alignment = 48});
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "general.alignment 48");
}

static void test_wrong_architecture(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.arch = "llama"});
    check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->path, "architecture llama");
    check_clean(f);
}

/* Unknown tensor names stay as they are; nested arrays are stepped over. */
static void test_extras(void **state)
{
    fx *f = *state;
    const int64_t shape[1] = {8};
    tlist_add(&f->l, "rope_freqs.weight", "rope_freqs.weight", PD_F32, 1, shape);
    tlist_add(&f->l, "blk.0.attn_sinks", "blk.0.attn_sinks", PD_F32, 1, shape);
    rebuild(f, &(gguf_opts){.nested = true, .vocab = true});
    assert_int_equal(load(f), PD_OK);
    check_tensors(f);
    assert_int_equal(f->vocab.n_tokens, 40);
}

static void test_bad_tensors(void **state)
{
    fx *f = *state;
    const int64_t odd[2] = {2, 16}, norm[1] = {32};
    tlist_add(&f->l, "x", "x.weight", PD_Q8_0, 2, odd);
    rebuild(f, &(gguf_opts){0});
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "x.weight", "row length 16 is not a multiple of 32");
    tlist_remove(&f->l, "x");
    tlist_add(&f->l, "dup", "output_norm.weight", PD_F32, 1, norm);
    rebuild(f, &(gguf_opts){0});
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "model.norm.weight appears twice");
    tlist_remove(&f->l, "dup");
    tlist_remove(&f->l, "model.layers.1.mlp.up_proj.weight");
    rebuild(f, &(gguf_opts){0});
    check_error(load(f), &f->err, PD_ERR_SHAPE, f->path, "missing tensor model.layers.1.mlp.up_proj.weight");
    check_clean(f);
}

static void test_bad_metadata(void **state)
{
    fx *f = *state;
    rebuild(f, &(gguf_opts){.vocab = true, .short_types = true});
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "token_type has 39 entries for 40 tokens");
    check_clean(f);
    /* A file with the architecture and nothing else. */
    tbuf b = {0};
    tb_put(&b, "GGUF", 4);
    tb_u32(&b, 3);
    tb_u64(&b, 0);
    tb_u64(&b, 2);
    tb_str(&b, "general.architecture");
    tb_u32(&b, 8);
    tb_str(&b, "qwen3");
    tb_str(&b, "qwen3.block_count");
    tb_u32(&b, 8); /* a string where a number belongs */
    tb_str(&b, "2");
    twrite(f->path, b.data, b.len);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "qwen3.block_count must be a 32-bit integer");
    b.len = 4 + 4 + 8 + 8 + 8 + 20 + 4 + 8 + 5; /* keep the architecture only */
    b.data[16] = 1;                              /* one pair */
    twrite(f->path, b.data, b.len);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "missing metadata key qwen3.block_count");
    b.data[8] = 0xff; /* absurd tensor count */
    twrite(f->path, b.data, b.len);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "implausible counts");
    b.data[8] = 0;
    b.data[24 + 8 + 20] = 99; /* unknown value type */
    twrite(f->path, b.data, b.len);
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->path, "unknown value type 99");
    free(b.data);
}

/* Random damage: a load either succeeds with tensors inside the mapping or
 * fails with a message; never a crash (ASan). */
static void test_mutations(void **state)
{
    fx *f = *state;
    f->m.dtypes[1] = PD_Q4_1;
    f->m.n_dtypes = 2;
    retensor(f);
    rebuild(f, &(gguf_opts){.vocab = true, .nested = true});
    uint8_t *buf = malloc(f->file.len);
    uint64_t rng = 99;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(buf, f->file.data, f->file.len);
        for (int k = 0; k < 2; k++) {
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            buf[(size_t)(rng >> 33) % f->lay.data_start] = (uint8_t)(rng >> 15); /* header and infos */
        }
        twrite(f->path, buf, f->file.len);
        if (load(f) == PD_OK) {
            for (size_t i = 0; i < f->st.n_tensors; i++)
                assert_true(pdi_mapping_holds(&f->st.maps[0], &f->st.tensors[i]));
            pdi_store_free(&f->st);
            pdi_vocab_parts_free(&f->vocab);
        } else {
            assert_true(f->err.message[0] != '\0');
            check_clean(f);
        }
    }
    free(buf);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_valid_tied_with_vocab), T(test_each_dtype),  T(test_bad_magic),
        T(test_bad_version),           T(test_truncated),   T(test_unsupported_type),
        T(test_misaligned),            T(test_alignment),   T(test_wrong_architecture),
        T(test_extras),                T(test_bad_tensors), T(test_bad_metadata),
        T(test_mutations),
    };
    return cmocka_run_group_tests_name("formats_gguf", tests, NULL, NULL);
}
