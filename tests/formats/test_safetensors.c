/* test_safetensors.c - the tensor store and the safetensors reader. */
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
    char *dir;
    char path[1024];
    pdi_tensor_store st;
    pd_error err;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tdir_new();
    tpath(f->path, sizeof f->path, f->dir, "t.safetensors");
    pdi_store_init(&f->st);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    pdi_store_free(&f->st);
    tdir_remove(f->dir);
    free(f);
    return 0;
}

static void test_dtype_helpers(void **state)
{
    (void)state;
    assert_int_equal(pdi_dtype_row_bytes(PD_F32, 5), 20);
    assert_int_equal(pdi_dtype_row_bytes(PD_F16, 5), 10);
    assert_int_equal(pdi_dtype_row_bytes(PD_BF16, 5), 10);
    assert_int_equal(pdi_dtype_row_bytes(PD_Q8_0, 64), 68);
    assert_int_equal(pdi_dtype_row_bytes(PD_Q4_0, 64), 36);
    assert_int_equal(pdi_dtype_row_bytes(PD_Q4_1, 96), 60);
    assert_int_equal(pdi_dtype_row_bytes(PD_Q8_0, 33), 0);
    assert_int_equal(pdi_dtype_row_bytes(PD_F32, -1), 0);
    assert_int_equal(pdi_dtype_row_bytes((pdi_dtype)12, 32), 0);
    assert_string_equal(pdi_dtype_name(PD_BF16), "BF16");
    assert_string_equal(pdi_dtype_name(PD_Q4_1), "Q4_1");
    assert_string_equal(pdi_dtype_name((pdi_dtype)99), "unknown");
    assert_true(pdi_dtype_known(30) && pdi_dtype_known(8) && pdi_dtype_known(0));
    assert_false(pdi_dtype_known(12) || pdi_dtype_known(-1) || pdi_dtype_known(4));
}

/* F32, F16, BF16, a scalar and an empty tensor, read back byte for byte. */
static void test_valid_file(void **state)
{
    fx *f = *state;
    tlist l = {0};
    const int64_t s1[] = {2, 3}, s2[] = {4}, s3[] = {2, 2, 2, 2}, s5[] = {0, 5};
    tlist_add(&l, "a.weight", "", PD_F32, 2, s1);
    tlist_add(&l, "b", "", PD_F16, 1, s2);
    tlist_add(&l, "c", "", PD_BF16, 4, s3);
    tlist_add(&l, "scalar", "", PD_F32, 0, NULL);
    tlist_add(&l, "empty", "", PD_F16, 2, s5);
    ttensor *p[] = {&l.t[0], &l.t[1], &l.t[2], &l.t[3], &l.t[4]};
    st_write_tensors(f->path, p, 5);

    assert_int_equal(pdi_safetensors_add(&f->st, f->path, &f->err), PD_OK);
    assert_int_equal(f->st.n_tensors, 5);
    assert_int_equal(f->st.n_maps, 1);
    assert_string_equal(f->st.maps[0].path, f->path);
    check_store_matches(&f->st, &l);
    for (size_t i = 0; i < f->st.n_tensors; i++)
        assert_true(pdi_mapping_holds(&f->st.maps[0], &f->st.tensors[i]));
    assert_null(pdi_store_find(&f->st, "__metadata__"));
    assert_null(pdi_store_find(&f->st, "missing"));
    tlist_free(&l);
}

static void test_missing_file(void **state)
{
    fx *f = *state;
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_IO, f->path);
    assert_int_equal(f->st.n_maps, 0);
}

static void test_short_files(void **state)
{
    fx *f = *state;
    twrite(f->path, "", 0);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "too short");
    twrite(f->path, "\x10\0\0", 3);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "too short");
    assert_int_equal(f->st.n_maps, 0);
}

static void test_header_past_end(void **state)
{
    fx *f = *state;
    tbuf b = {0};
    tb_u64(&b, 1000);
    tb_put(&b, "{\"a\": {}}", 9);
    twrite(f->path, b.data, b.len);
    free(b.data);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path,
                "header length 1000", "17 bytes");
    /* A length near 2^64 must not wrap around. */
    b = (tbuf){0};
    tb_u64(&b, UINT64_MAX - 3);
    tb_put(&b, "{}", 2);
    twrite(f->path, b.data, b.len);
    free(b.data);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "runs past");
}

static void test_data_shorter_than_offsets(void **state)
{
    fx *f = *state;
    const uint8_t data[16] = {0};
    st_write(f->path, "{\"x\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", data, 15);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "x",
                "[0, 16]", "15 bytes");
    st_write(f->path, "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [100, 108]}}", data, 16);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "x",
                "[100, 108]");
    st_write(f->path, "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 4]}}", data, 16);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "x", "begin");
}

static void test_overlap(void **state)
{
    fx *f = *state;
    const uint8_t data[12] = {0};
    st_write(f->path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
             "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", data, 12);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "overlap");
    assert_int_equal(f->st.n_tensors, 0);
    /* Touching is fine; an empty tensor inside another holds no bytes. */
    st_write(f->path, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
             "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}, "
             "\"e\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [6, 6]}}", data, 12);
    assert_int_equal(pdi_safetensors_add(&f->st, f->path, &f->err), PD_OK);
}

static void test_unsupported_dtype(void **state)
{
    fx *f = *state;
    const uint8_t data[16] = {0};
    const char *dtypes[] = {"I64", "F64", "F8_E4M3", "XYZ"};
    char header[256];
    for (size_t i = 0; i < 4; i++) {
        snprintf(header, sizeof header,
                 "{\"pos\": {\"dtype\": \"%s\", \"shape\": [2], \"data_offsets\": [0, 16]}}", dtypes[i]);
        st_write(f->path, header, data, 16);
        check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_UNSUPPORTED, f->path,
                    "tensor pos", dtypes[i]);
    }
}

static void test_shape_byte_mismatch(void **state)
{
    fx *f = *state;
    const uint8_t data[16] = {0};
    st_write(f->path, "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", data, 16);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, f->path, "tensor w",
                "needs 12 bytes", "hold 8");
    st_write(f->path, "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}", data, 16);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, "needs 8 bytes",
                "hold 16");
    /* Dims whose product overflows. */
    st_write(f->path, "{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], "
             "\"data_offsets\": [0, 16]}}", data, 16);
    check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, PD_ERR_FORMAT, "too large");
}

static void test_malformed_header(void **state)
{
    fx *f = *state;
    const uint8_t data[8] = {0};
    const struct {
        const char *header, *needle;
        pd_status code;
    } cases[] = {
        {"{\"a\": ", "header JSON", PD_ERR_FORMAT},
        {"[1, 2]", "not an object", PD_ERR_FORMAT},
        {"{\"a\": 5}", "not an object", PD_ERR_FORMAT},
        {"{\"a\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", "needs dtype", PD_ERR_FORMAT},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", "needs dtype", PD_ERR_FORMAT},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", "shape", PD_ERR_FORMAT},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 8]}}", "shape", PD_ERR_FORMAT},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 8]}}", "data_offsets",
         PD_ERR_FORMAT},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,2], \"data_offsets\": [0, 8]}}", "5 dims",
         PD_ERR_UNSUPPORTED},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
         "\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", "duplicate", PD_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_write(f->path, cases[i].header, data, 8);
        check_error(pdi_safetensors_add(&f->st, f->path, &f->err), &f->err, cases[i].code, f->path,
                    cases[i].needle);
        assert_int_equal(f->st.n_tensors, 0);
        assert_int_equal(f->st.n_maps, 0);
    }
}

/* Two files naming one tensor; the failed load leaves the store as it was. */
static void test_duplicate_across_files(void **state)
{
    fx *f = *state;
    const uint8_t data[16] = {1, 2, 3, 4, 5, 6, 7, 8};
    char second[1024];
    tpath(second, sizeof second, f->dir, "u.safetensors");
    st_write(f->path, "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", data, 8);
    st_write(second, "{\"v\": {\"dtype\": \"F16\", \"shape\": [4], \"data_offsets\": [0, 8]}, "
             "\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}", data, 16);
    assert_int_equal(pdi_safetensors_add(&f->st, f->path, &f->err), PD_OK);
    check_error(pdi_safetensors_add(&f->st, second, &f->err), &f->err, PD_ERR_FORMAT, second, "tensor w",
                f->path);
    assert_int_equal(f->st.n_tensors, 1);
    assert_int_equal(f->st.n_maps, 1);
    assert_null(pdi_store_find(&f->st, "v"));
    assert_memory_equal(pdi_store_find(&f->st, "w")->data, data, 8);
}

/* Random damage to a valid file: every load either succeeds with tensors
 * inside the mapping or fails with a message; never a crash (ASan). */
static void test_mutations(void **state)
{
    fx *f = *state;
    tmodel m = tmodel_default();
    m.layers = 1;
    m.dtypes[1] = PD_BF16, m.dtypes[2] = PD_F16, m.n_dtypes = 3;
    tlist l = tmodel_tensors(&m, false);
    ttensor **p = malloc(l.n * sizeof *p);
    for (size_t i = 0; i < l.n; i++) p[i] = &l.t[i];
    st_write_tensors(f->path, p, l.n);
    char *orig;
    size_t len;
    assert_int_equal(pdi_read_file(f->path, &orig, &len, &f->err), PD_OK);
    uint8_t *buf = malloc(len);
    uint64_t rng = 12345;
    for (int iter = 0; iter < 300; iter++) {
        memcpy(buf, orig, len);
        size_t cut = len;
        for (int k = 0; k < 3; k++) {
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            size_t at = (size_t)(rng >> 33) % (iter % 2 ? len : 600); /* mostly the header */
            buf[at] = (uint8_t)(rng >> 13);
        }
        if (iter % 5 == 0) cut = (size_t)(rng >> 40) % len;
        twrite(f->path, buf, cut);
        pdi_tensor_store st;
        pdi_store_init(&st);
        pd_error err = {0};
        if (pdi_safetensors_add(&st, f->path, &err) == PD_OK) {
            for (size_t i = 0; i < st.n_tensors; i++) assert_true(pdi_mapping_holds(&st.maps[0], &st.tensors[i]));
        } else {
            assert_true(err.code != PD_OK && err.message[0]);
            assert_int_equal(st.n_maps, 0);
        }
        pdi_store_free(&st);
    }
    free(buf);
    free(orig);
    free(p);
    tlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_helpers),
        cmocka_unit_test_setup_teardown(test_valid_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_shorter_than_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_byte_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_across_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
    };
    return cmocka_run_group_tests_name("formats_safetensors", tests, NULL, NULL);
}
