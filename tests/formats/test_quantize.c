/* test_quantize.c - pd_model_quantize, the GGUF writer of the API: what it
 * refuses (bad paths, unknown types, no tokenizer) with a code and a message
 * naming the file, leaving no file behind, and a written file read back by
 * the GGUF loader. tests/cli/test_quantize.py checks the bytes against an
 * independent writer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fx {
    char *tmp;
    char dir[1024], out[1024];
    tmodel m;
    tlist l;
    pd_error err;
} fx;

/* An untied HF directory of the default test model (no tokenizer.json yet). */
static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->tmp = tdir_new();
    tpath(f->dir, sizeof f->dir, f->tmp, "model");
    tpath(f->out, sizeof f->out, f->tmp, "model-q8_0.gguf");
    assert_int_equal(mkdir(f->dir, 0755), 0);
    f->m = tmodel_default();
    f->l = tmodel_tensors(&f->m, false);
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tlist_free(&f->l);
    tdir_remove(f->tmp);
    free(f);
    return 0;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* tokenizer.json with one token a row of the embedding but the last (a
 * [PAD]), two merges and a special added token. */
static void write_tokenizer(const fx *f, int first_added)
{
    char text[4096] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {";
    size_t n = strlen(text);
    for (int i = 0; i < first_added; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"t%d\": %d", i ? ", " : "", i, i);
    snprintf(text + n, sizeof text - n, "}, \"merges\": [\"t 1\", [\"t\", \"2\"]]}, \"added_tokens\": "
             "[{\"id\": %d, \"content\": \"<|im_end|>\", \"special\": true}]}", first_added);
    twrite_str(f->dir, "tokenizer.json", text);
}

static void test_bad_paths(void **state)
{
    fx *f = *state;
    check_error(pd_model_quantize(NULL, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_ARG, "directory");
    check_error(pd_model_quantize(f->dir, NULL, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_ARG, "output path");
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/nope", f->tmp);
    check_error(pd_model_quantize(missing, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_IO, missing);
    char config[1100];
    snprintf(config, sizeof config, "%s/config.json", f->dir);
    check_error(pd_model_quantize(config, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_IO, config,
                "not a directory");
    assert_false(exists(f->out));
    write_tokenizer(f, f->m.vocab - 2);
    char unwritable[1100];
    snprintf(unwritable, sizeof unwritable, "%s/no-such-dir/m.gguf", f->tmp);
    check_error(pd_model_quantize(f->dir, unwritable, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_IO, unwritable,
                "cannot create");
}

static void test_unknown_type(void **state)
{
    fx *f = *state;
    write_tokenizer(f, f->m.vocab - 2);
    check_error(pd_model_quantize(f->dir, f->out, (pd_weight_quant)42, NULL, &f->err), &f->err, PD_ERR_ARG, f->out,
                "type 42");
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_NONE, NULL, &f->err), &f->err, PD_ERR_ARG, f->out);
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q4_64, NULL, &f->err), &f->err, PD_ERR_UNSUPPORTED, f->out,
                "Q4_64");
    assert_false(exists(f->out));
}

/* Every type's name read back as that type; other names and values refused. */
static void test_type_names(void **state)
{
    (void)state;
    const char *want[] = {"none", "q8_0", "q4_0", "q4_1", "q4_64"};
    for (int k = 0; k < 5; k++) {
        pd_weight_quant q = (pd_weight_quant)-1;
        pd_error err;
        assert_string_equal(pd_quant_type_name((pd_weight_quant)k), want[k]);
        assert_int_equal(pd_quant_type_from_name(want[k], &q, &err), PD_OK);
        assert_int_equal(q, k);
    }
    assert_null(pd_quant_type_name((pd_weight_quant)5));
    assert_null(pd_quant_type_name((pd_weight_quant)-1));
    pd_error err;
    pd_weight_quant q = PD_QUANT_Q8_0;
    assert_int_equal(pd_quant_type_from_name("Q8_0", &q, &err), PD_ERR_ARG);
    assert_string_equal(err.message, "no weight type 'Q8_0' (none, q8_0, q4_0, q4_1 or q4_64)");
    assert_int_equal(q, PD_QUANT_Q8_0);
    assert_int_equal(pd_quant_type_from_name("", &q, &err), PD_ERR_ARG);
    assert_int_equal(pd_quant_type_from_name(NULL, &q, &err), PD_ERR_ARG);
    assert_int_equal(pd_quant_type_from_name("q4_0", NULL, &err), PD_ERR_ARG);
}

/* A refused tokenizer leaves a file already at the output as it was. */
static void test_tokenizer_refused(void **state)
{
    fx *f = *state;
    twrite(f->out, "old", 3);
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_IO, "tokenizer.json");
    twrite_str(f->dir, "tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 0}}}");
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_FORMAT,
                "tokenizer.json", "model.merges");
    twrite_str(f->dir, "tokenizer.json", "{\"model\": ");
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_FORMAT,
                "tokenizer.json");
    write_tokenizer(f, f->m.vocab); /* the added token's id is one past the embedding */
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q8_0, NULL, &f->err), &f->err, PD_ERR_RANGE,
                "tokenizer.json", "token id 40");
    struct stat sb;
    assert_int_equal(stat(f->out, &sb), 0);
    assert_int_equal(sb.st_size, 3);
}

/* Rows that are not whole blocks of 32 are refused, naming the tensor. */
static void test_not_whole_blocks(void **state)
{
    fx *f = *state;
    tlist_free(&f->l);
    f->m.hidden = 48;
    f->m.head_dim = 24;
    f->l = tmodel_tensors(&f->m, false);
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
    write_tokenizer(f, f->m.vocab - 2);
    check_error(pd_model_quantize(f->dir, f->out, PD_QUANT_Q4_0, NULL, &f->err), &f->err, PD_ERR_SHAPE,
                "model.embed_tokens.weight", "not a multiple of 32");
    assert_false(exists(f->out));
}

/* The written file loads: its dimensions, tensors and vocabulary. */
static void test_round_trip(void **state)
{
    fx *f = *state;
    write_tokenizer(f, f->m.vocab - 2);
    pd_quantize_stats stats;
    assert_int_equal(pd_model_quantize(f->dir, f->out, PD_QUANT_Q8_0, &stats, &f->err), PD_OK);
    struct stat sb;
    assert_int_equal(stat(f->out, &sb), 0);
    assert_int_equal(stats.n_bytes, (uint64_t)sb.st_size);
    assert_int_equal(stats.n_tensors, 3 + 11 * f->m.layers);
    pdi_tensor_store st;
    pdi_store_init(&st);
    pd_config cfg;
    pdi_vocab_parts v;
    assert_int_equal(pdi_gguf_load(f->out, &st, &cfg, &v, &f->err), PD_OK);
    assert_int_equal(cfg.n_layers, f->m.layers);
    assert_int_equal(cfg.hidden, f->m.hidden);
    assert_int_equal(cfg.vocab, f->m.vocab);
    assert_false(cfg.tied_embeddings);
    assert_int_equal(pdi_store_find(&st, "model.layers.1.mlp.down_proj.weight")->dtype, PD_Q8_0);
    assert_int_equal(pdi_store_find(&st, "model.layers.1.self_attn.q_norm.weight")->dtype, PD_F32);
    assert_int_equal(v.n_tokens, (size_t)f->m.vocab);
    assert_string_equal(v.tokens[1], "t1");
    assert_int_equal(v.token_types[1], 1);
    assert_string_equal(v.tokens[f->m.vocab - 2], "<|im_end|>");
    assert_int_equal(v.token_types[f->m.vocab - 2], 3);
    assert_string_equal(v.tokens[f->m.vocab - 1], "[PAD39]");
    assert_int_equal(v.token_types[f->m.vocab - 1], 5);
    assert_int_equal(v.n_merges, 2);
    assert_string_equal(v.merges[1], "t 2");
    assert_string_equal(v.pre, "qwen2");
    assert_int_equal(cfg.eos_id, 3);              /* config.json's */
    assert_int_equal(cfg.bos_id, f->m.vocab - 1); /* config.json names none, nor is <|endoftext|> a token */
    pdi_vocab_parts_free(&v);
    pdi_store_free(&st);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_bad_paths), T(test_unknown_type), T(test_tokenizer_refused), T(test_not_whole_blocks),
        T(test_round_trip), T(test_type_names),
    };
    return cmocka_run_group_tests_name("formats_quantize", tests, NULL, NULL);
}
