/* test_hf.c - config.json and HF model directories (single file, sharded). */
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
    char dir[1024], config[1024];
    tmodel m;
    tlist l;
    pdi_tensor_store st;
    pd_config cfg;
    pd_error err;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->tmp = tdir_new();
    tpath(f->dir, sizeof f->dir, f->tmp, "model");
    tpath(f->config, sizeof f->config, f->dir, "config.json");
    f->m = tmodel_default();
    f->l = tmodel_tensors(&f->m, false);
    pdi_store_init(&f->st);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pdi_store_free(&f->st);
    tlist_free(&f->l);
    tdir_remove(f->tmp);
    free(f);
    return 0;
}

static pd_status load(fx *f) { return pdi_hf_dir_load(f->dir, &f->st, &f->cfg, &f->err); }

static void check_tensors(fx *f) { check_store_matches(&f->st, &f->l); }

static void test_single_untied_f32(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
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
    assert_int_equal(c->tied_embeddings, 0);
    assert_int_equal(c->bos_id, -1);
    assert_int_equal(c->eos_id, 3);
    check_tensors(f);
}

static void test_single_tied_mixed(void **state)
{
    fx *f = *state;
    f->m.lm_head = false;
    f->m.dtypes[0] = PD_F16, f->m.dtypes[1] = PD_BF16, f->m.dtypes[2] = PD_F32, f->m.n_dtypes = 3;
    tlist_free(&f->l);
    f->l = tmodel_tensors(&f->m, false);
    hf_write_dir(f->dir, &f->m, &f->l, true, NULL, 1);
    assert_int_equal(load(f), PD_OK);
    assert_int_equal(f->cfg.tied_embeddings, 1);
    assert_null(pdi_store_find(&f->st, "lm_head.weight"));
    check_tensors(f);
}

/* tie_word_embeddings true yet lm_head.weight present: the head is used. */
static void test_tied_config_with_head(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, true, NULL, 1);
    assert_int_equal(load(f), PD_OK);
    assert_int_equal(f->cfg.tied_embeddings, 0);
}

static void test_untied_missing_head(void **state)
{
    fx *f = *state;
    tlist_remove(&f->l, "lm_head.weight");
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
    check_error(load(f), &f->err, PD_ERR_SHAPE, f->dir, "missing tensor lm_head.weight", "[40, 32]");
    assert_int_equal(f->st.n_tensors, 0);
    assert_int_equal(f->st.n_maps, 0);
}

static void test_sharded(void **state)
{
    fx *f = *state;
    for (int tied = 0; tied < 2; tied++) {
        f->m.lm_head = !tied;
        f->m.dtypes[0] = PD_BF16, f->m.dtypes[1] = PD_F32, f->m.dtypes[2] = PD_F16, f->m.n_dtypes = 3;
        tlist_free(&f->l);
        f->l = tmodel_tensors(&f->m, false);
        hf_write_dir(f->dir, &f->m, &f->l, tied, NULL, 3);
        assert_int_equal(load(f), PD_OK);
        assert_int_equal(f->cfg.tied_embeddings, tied);
        assert_int_equal(f->st.n_maps, 3);
        check_tensors(f);
        /* tensor i went to shard i % 3 */
        for (size_t i = 0; i < f->l.n; i++) {
            char want[64];
            snprintf(want, sizeof want, "model-%05zu-of-00003.safetensors", i % 3 + 1);
            const pdi_tensor *t = pdi_store_find(&f->st, f->l.t[i].name);
            assert_non_null(strstr(pdi_store_tensor_path(&f->st, t), want));
        }
        pdi_store_free(&f->st);
        for (int s = 1; s <= 3; s++) {
            char path[1100];
            snprintf(path, sizeof path, "%s/model-%05d-of-00003.safetensors", f->dir, s);
            unlink(path);
        }
    }
}

static void test_missing_paths(void **state)
{
    fx *f = *state;
    check_error(load(f), &f->err, PD_ERR_IO, f->dir);
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
    unlink(f->config);
    check_error(load(f), &f->err, PD_ERR_IO, "config.json");
    char *config = tconfig_json(&f->m, false, NULL);
    twrite_str(f->dir, "config.json", config);
    free(config);
    char path[1100];
    snprintf(path, sizeof path, "%s/model.safetensors", f->dir);
    unlink(path);
    check_error(load(f), &f->err, PD_ERR_IO, f->dir, "no model.safetensors");
    check_error(pdi_hf_dir_load(f->config, &f->st, &f->cfg, &f->err), &f->err, PD_ERR_IO, "not a directory");
}

static void test_missing_tensor(void **state)
{
    fx *f = *state;
    tlist_remove(&f->l, "model.layers.1.mlp.up_proj.weight");
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 2);
    check_error(load(f), &f->err, PD_ERR_SHAPE, f->dir, "missing tensor model.layers.1.mlp.up_proj.weight",
                "[64, 32]");
    assert_int_equal(f->st.n_maps, 0);
}

static void test_wrong_shape(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"intermediate_size\": 48", 1);
    check_error(load(f), &f->err, PD_ERR_SHAPE, "model.safetensors", "model.layers.0.mlp.gate_proj.weight",
                "shape [64, 32]", "expected [48, 32]");
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"num_key_value_heads\": 2", 1);
    check_error(load(f), &f->err, PD_ERR_SHAPE, "model.layers.0.self_attn.k_proj.weight", "[16, 32]",
                "[32, 32]");
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"vocab_size\": 41", 1);
    check_error(load(f), &f->err, PD_ERR_SHAPE, "model.embed_tokens.weight", "[40, 32]", "[41, 32]");
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"num_hidden_layers\": 3", 1);
    check_error(load(f), &f->err, PD_ERR_SHAPE, "missing tensor model.layers.2.input_layernorm.weight");
}

static void test_not_qwen3(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false,
                 "\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\"", 1);
    check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->config, "LlamaForCausalLM", "llama");
    /* model_type alone is enough */
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"architectures\": null", 1);
    assert_int_equal(load(f), PD_OK);
}

static void test_malformed_config(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 1);
    twrite_str(f->dir, "config.json", "{\"hidden_size\": 32,");
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->config, "line 1");
    twrite_str(f->dir, "config.json", "[1, 2]");
    check_error(load(f), &f->err, PD_ERR_FORMAT, f->config, "not a JSON object");
}

static void test_rope_scaling(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}", 1);
    check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->config, "rope_scaling", "yarn");
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}", 1);
    check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->config, "rope_scaling", "linear");
    hf_write_dir(f->dir, &f->m, &f->l, false, "\"rope_scaling\": {\"rope_type\": \"default\"}", 1);
    assert_int_equal(load(f), PD_OK);
}

static void test_unsupported_features(void **state)
{
    fx *f = *state;
    const char *extra[][2] = {{"\"attention_bias\": true", "attention_bias"},
                              {"\"use_sliding_window\": true", "use_sliding_window"},
                              {"\"hidden_act\": \"gelu\"", "gelu"}};
    for (size_t i = 0; i < 3; i++) {
        hf_write_dir(f->dir, &f->m, &f->l, false, extra[i][0], 1);
        check_error(load(f), &f->err, PD_ERR_UNSUPPORTED, f->config, extra[i][1]);
    }
}

static pd_status load_config(fx *f, const char *json)
{
    mkdir(f->dir, 0700);
    twrite_str(f->dir, "config.json", json);
    return pdi_hf_config_load(f->config, &f->cfg, &f->err);
}

#define MINIMAL "\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 32, \"num_hidden_layers\": 2, " \
                "\"num_attention_heads\": 2, \"intermediate_size\": 64, \"vocab_size\": 40"

static void test_config_defaults(void **state)
{
    fx *f = *state;
    assert_int_equal(load_config(f, "{" MINIMAL ", \"bos_token_id\": 5, \"eos_token_id\": [7, 8]}"), PD_OK);
    assert_int_equal(f->cfg.n_kv_heads, 2);
    assert_int_equal(f->cfg.head_dim, 16);
    assert_int_equal(f->cfg.max_positions, 32768);
    assert_float_equal(f->cfg.rope_theta, 10000.0f, 1e-3f);
    assert_float_equal(f->cfg.rms_eps, 1e-6f, 1e-12f);
    assert_int_equal(f->cfg.tied_embeddings, 0);
    assert_int_equal(f->cfg.bos_id, 5);
    assert_int_equal(f->cfg.eos_id, 7);
    /* transformers 5 keeps rope_theta in rope_parameters */
    assert_int_equal(load_config(f, "{" MINIMAL ", \"head_dim\": 32, \"num_key_value_heads\": null, "
                                 "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 500000}, "
                                 "\"tie_word_embeddings\": true, \"eos_token_id\": []}"), PD_OK);
    assert_float_equal(f->cfg.rope_theta, 5e5f, 1.0f);
    assert_int_equal(f->cfg.head_dim, 32);
    assert_int_equal(f->cfg.n_kv_heads, 2);
    assert_int_equal(f->cfg.tied_embeddings, 1);
    assert_int_equal(f->cfg.eos_id, -1);
}

static void test_config_invalid(void **state)
{
    fx *f = *state;
    const struct {
        const char *json, *needle;
    } cases[] = {
        {"{" MINIMAL ", \"num_key_value_heads\": 3}", "not a multiple"},
        {"{\"architectures\": [\"Qwen3ForCausalLM\"], \"num_hidden_layers\": 2}", "missing hidden_size"},
        {"{" MINIMAL ", \"hidden_size\": \"32\"}", "hidden_size must be an integer"},
        {"{" MINIMAL ", \"num_hidden_layers\": 0}", "num_hidden_layers = 0 is out of range"},
        {"{" MINIMAL ", \"num_hidden_layers\": 5000}", "out of range"},
        {"{" MINIMAL ", \"vocab_size\": 1000000000000}", "out of range"},
        {"{" MINIMAL ", \"intermediate_size\": -4}", "out of range"},
        {"{" MINIMAL ", \"head_dim\": 15}", "odd"},
        {"{" MINIMAL ", \"head_dim\": 1048576}", "head_dim"},
        {"{" MINIMAL ", \"rms_norm_eps\": \"x\"}", "rms_norm_eps must be a number"},
        {"{" MINIMAL ", \"rms_norm_eps\": 0}", "rms_norm_eps"},
        {"{" MINIMAL ", \"rope_theta\": -1}", "rope_theta"},
        {"{" MINIMAL ", \"bos_token_id\": \"a\"}", "bos_token_id"},
        {"{" MINIMAL ", \"tie_word_embeddings\": \"yes\"}", "tie_word_embeddings"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_error(load_config(f, cases[i].json), &f->err, PD_ERR_FORMAT, f->config, cases[i].needle);
}

static void test_index_missing_shard(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 2);
    char path[1100];
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", f->dir);
    unlink(path);
    check_error(load(f), &f->err, PD_ERR_IO, path);
    assert_int_equal(f->st.n_maps, 0);
    assert_int_equal(f->st.n_tensors, 0);
}

static void test_index_inconsistent(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 2);
    /* embed_tokens (tensor 0) is in shard 1; the index claims shard 2. */
    hf_write_index(f->dir, &f->l, 2, "model.embed_tokens.weight", "model-00002-of-00002.safetensors");
    check_error(load(f), &f->err, PD_ERR_FORMAT, "index.json", "model.embed_tokens.weight",
                "model-00002-of-00002.safetensors");
    hf_write_index(f->dir, &f->l, 2, "model.norm.weight", "../model.safetensors");
    check_error(load(f), &f->err, PD_ERR_FORMAT, "index.json", "not a plain file name");
    twrite_str(f->dir, "model.safetensors.index.json", "{\"metadata\": {}}");
    check_error(load(f), &f->err, PD_ERR_FORMAT, "index.json", "weight_map");
    twrite_str(f->dir, "model.safetensors.index.json", "{\"weight_map\": {\"a\": 1}}");
    check_error(load(f), &f->err, PD_ERR_FORMAT, "index.json", "not a file name");
    twrite_str(f->dir, "model.safetensors.index.json", "{\"weight_map\": ");
    check_error(load(f), &f->err, PD_ERR_FORMAT, "index.json");
    assert_int_equal(f->st.n_maps, 0);
}

/* One tensor in two shards. */
static void test_shard_duplicate(void **state)
{
    fx *f = *state;
    hf_write_dir(f->dir, &f->m, &f->l, false, NULL, 2);
    ttensor *pick[64]; /* shard 2 (the odd tensors) plus tensor 0 of shard 1 */
    size_t n = 0;
    for (size_t i = 1; i < f->l.n; i += 2) pick[n++] = &f->l.t[i];
    pick[n++] = &f->l.t[0];
    char path[1100];
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", f->dir);
    st_write_tensors(path, pick, n);
    check_error(load(f), &f->err, PD_ERR_FORMAT, path, "model.embed_tokens.weight", "already loaded");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_single_untied_f32),  T(test_single_tied_mixed),   T(test_tied_config_with_head),
        T(test_untied_missing_head), T(test_sharded),            T(test_missing_paths),
        T(test_missing_tensor),     T(test_wrong_shape),         T(test_not_qwen3),
        T(test_malformed_config),   T(test_rope_scaling),        T(test_unsupported_features),
        T(test_config_defaults),    T(test_config_invalid),      T(test_index_missing_shard),
        T(test_index_inconsistent), T(test_shard_duplicate),
    };
    return cmocka_run_group_tests_name("formats_hf", tests, NULL, NULL);
}
