/* test_tokenizer_json.c - tokenizer.json reading on small tokenizers: the
 * two merge notations, added-token flags, split behaviours, normalizers,
 * and malformed files. Expected ids were worked out by hand and checked
 * with HF tokenizers 0.23.2.
 *
 * Usage: test_tokenizer_json DATA_DIR (tests/tokenizer/data) */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "tok_test_util.h"

static const char *data_dir;
static char tmp_dir[] = "/tmp/pd_tok_test_XXXXXX";
static char tmp_json[sizeof tmp_dir + 16];

/* GPT-2's bytes_to_unicode, written out independently of the library. */
static uint32_t byte_cp(int b)
{
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (printable) return (uint32_t)b;
    uint32_t n = 0;
    for (int i = 0; i < b; i++) n += !((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE);
    return 256 + n;
}

static const char *byte_str(int b, char out[4])
{
    uint32_t cp = byte_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
    return out;
}

/* Every byte as token id = byte value, then ab 256, Ġa 257, cd 258, abc 259,
 * Ġab 260, bcd 261, -- 262, b- 263, -c 264; "<|end|>" is added (265). */
static json_t *base_json(void)
{
    json_t *vocab = json_object();
    char s[4];
    for (int b = 0; b < 256; b++) json_object_set_new(vocab, byte_str(b, s), json_integer(b));
    const char *more[] = {"ab", "\xc4\xa0" "a", "cd", "abc", "\xc4\xa0" "ab", "bcd", "--", "b-", "-c"};
    for (int i = 0; i < 9; i++) json_object_set_new(vocab, more[i], json_integer(256 + i));
    return json_pack(
        "{s:s, s:[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}], s:{s:s}, s:{s:s, s:b, s:b, s:b}, s:n, s:{s:s, s:o, "
        "s:[[s,s],[s,s],[s,s],[s,s],[s,s],[s,s],[s,s],[s,s]], s:n, s:n, s:s, s:s, s:b, s:b, s:b}}",
        "version", "1.0",
        "added_tokens", "id", 265, "content", "<|end|>", "special", 1, "normalized", 0, "lstrip", 0, "rstrip", 0,
        "single_word", 0,
        "normalizer", "type", "NFC",
        "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 1,
        "decoder",
        "model", "type", "BPE", "vocab", vocab,
        "merges", "-", "-", "b", "-", "-", "c", "a", "b", "\xc4\xa0", "a", "c", "d", "ab", "c", "\xc4\xa0" "a", "b",
        "dropout", "unk_token", "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0,
        "byte_fallback", 0, "ignore_merges", 0);
}

static json_t *added0(json_t *j)
{
    return json_array_get(json_object_get(j, "added_tokens"), 0);
}

static json_t *model(json_t *j)
{
    return json_object_get(j, "model");
}

static pd_tokenizer *load_json(json_t *j, pd_error *err)
{
    if (json_dump_file(j, tmp_json, JSON_COMPACT) != 0) fail_msg("cannot write %s", tmp_json);
    json_decref(j);
    return pd_tokenizer_load(tmp_json, err);
}

static pd_tokenizer *must_load(json_t *j)
{
    pd_error err = {0};
    pd_tokenizer *tok = load_json(j, &err);
    if (!tok) fail_msg("%s", err.message);
    return tok;
}

static json_t *split_then_byte_level(json_t *split, bool prefix_space)
{
    return json_pack("{s:s, s:[o, {s:s, s:b, s:b, s:b}]}", "type", "Sequence", "pretokenizers", split, "type",
                     "ByteLevel", "add_prefix_space", prefix_space, "trim_offsets", 0, "use_regex", 0);
}

static void test_merge_notations(void **state)
{
    (void)state;
    const char *files[] = {"tiny_pairs.json", "tiny_strings.json"};
    for (int f = 0; f < 2; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", data_dir, files[f]);
        pd_error err = {0};
        pd_tokenizer *tok = pd_tokenizer_load(path, &err);
        if (!tok) fail_msg("%s", err.message);
        assert_int_equal(pd_tokenizer_n_vocab(tok), 12);
        /* "abcd": a+b (rank 0), then c+d (rank 2) before ab+c (rank 3) */
        assert_encodes(tok, "abcd ab!", 6, 8, 4, 6, 5);
        assert_encodes(tok, "abc", 9);
        /* " abc": a+b first leaves Ġ alone, "Ġa b" never applies */
        assert_encodes(tok, " abc", 4, 9);
        assert_encodes(tok, "ab<|end|>cd", 6, 11, 8);
        assert_encodes(tok, "<|end|><|end|>", 11, 11);
        /* bytes without a token vanish, as in HF without unk_token */
        assert_encodes_nothing(tok, "xyz");
        assert_encodes(tok, "axb", 6);
        assert_int_equal(pd_tokenizer_token_id(tok, "ab"), 6);
        assert_int_equal(pd_tokenizer_token_id(tok, "<|end|>"), 11);
        assert_true(pd_tokenizer_is_special(tok, 11));
        assert_false(pd_tokenizer_is_special(tok, 6));
        size_t len;
        assert_string_equal(pd_tokenizer_token_bytes(tok, 10, &len), " ab");
        pd_tokenizer_free(tok);
    }
}

static void test_byte_table(void **state)
{
    (void)state;
    pd_tokenizer *tok = must_load(base_json());
    for (int b = 0; b < 256; b++) {
        size_t len;
        const char *s = pd_tokenizer_token_bytes(tok, b, &len);
        assert_int_equal(len, 1);
        assert_int_equal((uint8_t)s[0], b);
    }
    assert_int_equal(pd_tokenizer_n_vocab(tok), 266);
    assert_encodes(tok, "abcd ab!", 256, 258, 32, 256, 33);
    assert_encodes(tok, "ab<|end|>cd", 256, 265, 258);
    assert_encodes(tok, "a  <|end|>  b", 97, 32, 32, 265, 32, 32, 98);
    assert_encodes(tok, "e\xcc\x81", 195, 169); /* NFC: é */
    pd_tokenizer_free(tok);
}

static void test_added_token_flags(void **state)
{
    (void)state;
    json_t *j = base_json();
    json_object_set_new(added0(j), "lstrip", json_true());
    json_object_set_new(added0(j), "rstrip", json_true());
    pd_tokenizer *tok = must_load(j);
    assert_encodes(tok, "a  <|end|>  b", 97, 265, 98);
    assert_encodes(tok, "a\xe3\x80\x80<|end|>\n\tb", 97, 265, 98);
    assert_encodes(tok, "<|end|> <|end|>", 265, 265);
    assert_encodes(tok, "  <|end|>", 265);
    pd_tokenizer_free(tok);

    j = base_json();
    json_array_append_new(json_object_get(j, "added_tokens"),
                          json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", 266, "content", "cat", "special", 0,
                                    "normalized", 0, "lstrip", 0, "rstrip", 0, "single_word", 1));
    tok = must_load(j);
    assert_encodes(tok, "cat concat cat_x cat. catcat", 266, 32, 99, 111, 110, 99, 97, 116, 32, 99, 97, 116, 95,
                   120, 32, 266, 46, 32, 99, 97, 116, 99, 97, 116);
    assert_encodes(tok, "\xc3\xa9" "cat", 195, 169, 99, 97, 116);
    assert_encodes(tok, "1cat", 49, 99, 97, 116);
    assert_encodes(tok, "cat", 266);
    assert_false(pd_tokenizer_is_special(tok, 266));
    pd_tokenizer_free(tok);

    /* normalized added tokens are searched for in the normalised text */
    const char *contents[] = {"\xef\xac\x81x", "fix"}; /* "ﬁx", "fix" */
    for (int k = 0; k < 2; k++) {
        j = base_json();
        json_object_set_new(j, "normalizer", json_pack("{s:s}", "type", "NFKC"));
        json_array_append_new(json_object_get(j, "added_tokens"),
                              json_pack("{s:i, s:s, s:b, s:b}", "id", 266, "content", contents[k], "special", 0,
                                        "normalized", 1));
        tok = must_load(j);
        assert_encodes(tok, "\xef\xac\x81x fix", 266, 32, 266);
        assert_encodes(tok, "x fix", 120, 32, 266);
        assert_encodes(tok, "\xef\xbd\x86\xef\xbd\x89\xef\xbd\x98", 266); /* fullwidth "ｆｉｘ" */
        pd_tokenizer_free(tok);
    }
}

/* HF's AddedVocabulary ignores the file's id: a new token follows the vocabulary. */
static void test_added_token_ids(void **state)
{
    (void)state;
    json_t *j = base_json();
    json_object_set_new(added0(j), "id", json_integer(999));
    json_array_append_new(json_object_get(j, "added_tokens"),
                          json_pack("{s:i, s:s}", "id", 7, "content", "ab")); /* already in the vocabulary */
    json_array_append_new(json_object_get(j, "added_tokens"), json_pack("{s:i, s:s}", "id", 5, "content", "zz"));
    pd_tokenizer *tok = must_load(j);
    assert_int_equal(pd_tokenizer_token_id(tok, "<|end|>"), 265);
    assert_int_equal(pd_tokenizer_token_id(tok, "ab"), 256);
    assert_int_equal(pd_tokenizer_token_id(tok, "zz"), 266);
    assert_int_equal(pd_tokenizer_n_vocab(tok), 267);
    assert_encodes(tok, "xabzz", 120, 256, 266);
    pd_tokenizer_free(tok);
}

static void test_split_behaviors(void **state)
{
    (void)state;
    static const struct {
        const char *behavior;
        int32_t ids[3][8]; /* -1 ends */
    } cases[] = {
        {"Isolated", {{256, 45, 258, 45, 45, 256, -1}, {45, 256, 45, 258, 45, -1}, {45, 45, -1}}},
        {"Removed", {{256, 258, 256, -1}, {256, 258, -1}, {-1}}},
        {"MergedWithPrevious", {{97, 263, 258, 45, 45, 256, -1}, {45, 97, 263, 258, 45, -1}, {45, 45, -1}}},
        {"MergedWithNext", {{256, 264, 100, 45, 45, 256, -1}, {45, 256, 264, 100, 45, -1}, {45, 45, -1}}},
        {"Contiguous", {{256, 45, 258, 262, 256, -1}, {45, 256, 45, 258, 45, -1}, {262, -1}}},
    };
    /* with invert, Removed keeps the matches and the merges swap sides */
    static const int32_t inverted[][3][8] = {
        {{256, 45, 258, 45, 45, 256, -1}, {45, 256, 45, 258, 45, -1}, {45, 45, -1}},
        {{45, 45, 45, -1}, {45, 45, 45, -1}, {45, 45, -1}},
        {{256, 264, 100, 45, 45, 256, -1}, {45, 256, 264, 100, 45, -1}, {45, 45, -1}},
        {{97, 263, 258, 45, 45, 256, -1}, {45, 97, 263, 258, 45, -1}, {45, 45, -1}},
        {{256, 45, 258, 262, 256, -1}, {45, 256, 45, 258, 45, -1}, {262, -1}},
    };
    const char *texts[] = {"ab-cd--ab", "-ab-cd-", "--"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int inv = 0; inv < 2; inv++) {
            json_t *j = base_json();
            json_t *split = json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "String", "-",
                                      "behavior", cases[c].behavior, "invert", inv);
            json_object_set_new(j, "pre_tokenizer", split_then_byte_level(split, false));
            pd_tokenizer *tok = must_load(j);
            for (int t = 0; t < 3; t++) {
                const int32_t *want = inv ? inverted[c][t] : cases[c].ids[t];
                size_t n = 0;
                while (want[n] >= 0) n++;
                check_encode(tok, texts[t], strlen(texts[t]), want, n);
            }
            pd_tokenizer_free(tok);
        }
    }
}

static void test_byte_level_options(void **state)
{
    (void)state;
    /* add_prefix_space: each piece that reaches ByteLevel gets a space */
    json_t *j = base_json();
    json_t *split = json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex", "\\s+", "behavior",
                              "Removed", "invert", 0);
    json_object_set_new(j, "pre_tokenizer", split_then_byte_level(split, true));
    pd_tokenizer *tok = must_load(j);
    assert_encodes(tok, "ab cd", 32, 256, 32, 258);
    assert_encodes(tok, " ab", 32, 256);
    pd_tokenizer_free(tok);

    j = base_json();
    json_object_set_new(json_object_get(j, "pre_tokenizer"), "add_prefix_space", json_true());
    tok = must_load(j);
    assert_encodes(tok, "ab cd", 32, 256, 32, 258);
    assert_encodes(tok, " ab", 32, 256);
    assert_encodes(tok, "ab<|end|>ab", 32, 256, 265, 32, 256);
    pd_tokenizer_free(tok);

    /* ignore_merges: a piece that is a vocabulary token is taken whole */
    tok = must_load(base_json());
    assert_encodes(tok, "bcd", 98, 258);
    pd_tokenizer_free(tok);
    j = base_json();
    json_object_set_new(model(j), "ignore_merges", json_true());
    tok = must_load(j);
    assert_encodes(tok, "bcd", 261);
    assert_encodes(tok, "abcd", 256, 258);
    pd_tokenizer_free(tok);
}

static void test_normalizers_and_unk(void **state)
{
    (void)state;
    json_t *j = base_json();
    json_object_set_new(j, "normalizer", json_null());
    pd_tokenizer *tok = must_load(j);
    assert_encodes(tok, "e\xcc\x81", 101, 204, 129);
    pd_tokenizer_free(tok);

    j = base_json();
    json_object_set_new(j, "normalizer",
                        json_pack("{s:s, s:[{s:s}, {s:s}]}", "type", "Sequence", "normalizers", "type", "NFD", "type",
                                  "NFC"));
    tok = must_load(j);
    assert_encodes(tok, "e\xcc\x81", 195, 169);
    assert_encodes(tok, "\xe2\x84\xab", 195, 133); /* angstrom sign -> Å */
    pd_tokenizer_free(tok);

    for (int fuse = 0; fuse < 2; fuse++) {
        j = base_json();
        json_object_del(json_object_get(model(j), "vocab"), "z");
        json_object_set_new(json_object_get(model(j), "vocab"), "<unk>", json_integer('z'));
        json_object_set_new(model(j), "unk_token", json_string("<unk>"));
        json_object_set_new(model(j), "fuse_unk", json_boolean(fuse));
        tok = must_load(j);
        if (fuse) assert_encodes(tok, "azzb", 97, 122, 98);
        else assert_encodes(tok, "azzb", 97, 122, 122, 98);
        pd_tokenizer_free(tok);
    }
}

/* ------------------------------------------------------ malformed files */

static void expect_failure(pd_status code, const char *needle)
{
    pd_error err = {0};
    pd_tokenizer *tok = pd_tokenizer_load(tmp_json, &err);
    if (tok) fail_msg("loaded although %s was expected", needle);
    if (err.code != code) fail_msg("\"%s\": code %d, want %d", err.message, err.code, code);
    if (strncmp(err.message, tmp_json, strlen(tmp_json)) != 0 || !strstr(err.message, needle))
        fail_msg("\"%s\" should start with the file name and mention \"%s\"", err.message, needle);
}

static void expect_json_failure(json_t *j, pd_status code, const char *needle)
{
    if (json_dump_file(j, tmp_json, JSON_COMPACT) != 0) fail_msg("cannot write %s", tmp_json);
    json_decref(j);
    expect_failure(code, needle);
}

static void expect_text_failure(const char *text, pd_status code, const char *needle)
{
    FILE *f = fopen(tmp_json, "w");
    fputs(text, f);
    fclose(f);
    expect_failure(code, needle);
}

static json_t *with_pre(json_t *pre)
{
    json_t *j = base_json();
    json_object_set_new(j, "pre_tokenizer", pre);
    return j;
}

static void test_malformed(void **state)
{
    (void)state;
    expect_text_failure("", PD_ERR_FORMAT, "line");
    expect_text_failure("{\"model\": ", PD_ERR_FORMAT, "line 1");
    expect_text_failure("[1, 2]", PD_ERR_FORMAT, "not an object");
    json_t *j;

    j = base_json(), json_object_del(j, "model");
    expect_json_failure(j, PD_ERR_FORMAT, "model: missing or not an object");
    j = base_json(), json_object_set_new(model(j), "type", json_string("WordPiece"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "model.type: \"WordPiece\" is not supported");
    j = base_json(), json_object_set_new(model(j), "type", json_string("Unigram"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "Unigram");
    j = base_json(), json_object_set_new(model(j), "vocab", json_array());
    expect_json_failure(j, PD_ERR_FORMAT, "model.vocab: missing or not an object");
    j = base_json(), json_object_set_new(model(j), "vocab", json_object());
    expect_json_failure(j, PD_ERR_FORMAT, "model.vocab: no tokens");
    j = base_json(), json_object_set_new(json_object_get(model(j), "vocab"), "a", json_string("97"));
    expect_json_failure(j, PD_ERR_FORMAT, "model.vocab[\"a\"]: the id is not an integer");
    j = base_json(), json_object_set_new(json_object_get(model(j), "vocab"), "zz", json_integer(1 << 30));
    expect_json_failure(j, PD_ERR_FORMAT, "out of range");
    j = base_json(), json_object_set_new(json_object_get(model(j), "vocab"), "zz", json_integer(5));
    expect_json_failure(j, PD_ERR_FORMAT, "id 5 is given to both");
    j = base_json(), json_object_del(json_object_get(model(j), "vocab"), "z");
    expect_json_failure(j, PD_ERR_FORMAT, "added_tokens[0]: \"<|end|>\" takes id 264");
    j = base_json(), json_object_set_new(model(j), "merges", json_object());
    expect_json_failure(j, PD_ERR_FORMAT, "model.merges: missing or not an array");
    j = base_json(), json_array_append_new(json_object_get(model(j), "merges"), json_pack("[s,s]", "a", "nosuch"));
    expect_json_failure(j, PD_ERR_FORMAT, "model.merges[8]: unknown token \"nosuch\"");
    j = base_json(), json_array_append_new(json_object_get(model(j), "merges"), json_string("b a"));
    expect_json_failure(j, PD_ERR_FORMAT, "model.merges[8]: merged token \"ba\" is not in the vocabulary");
    j = base_json(), json_array_append_new(json_object_get(model(j), "merges"), json_string("ab"));
    expect_json_failure(j, PD_ERR_FORMAT, "model.merges[8]: expected \"left right\"");
    j = base_json(), json_array_append_new(json_object_get(model(j), "merges"), json_pack("[s,s,s]", "a", "b", "c"));
    expect_json_failure(j, PD_ERR_FORMAT, "model.merges[8]");
    j = base_json(), json_object_set_new(model(j), "dropout", json_real(0.1));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "dropout");
    j = base_json(), json_object_set_new(model(j), "continuing_subword_prefix", json_string("##"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "model: subword prefixes");
    j = base_json(), json_object_set_new(model(j), "fuse_unk", json_string("no"));
    expect_json_failure(j, PD_ERR_FORMAT, "model: \"fuse_unk\" is not a boolean");

    j = base_json(), json_object_set_new(j, "added_tokens", json_object());
    expect_json_failure(j, PD_ERR_FORMAT, "added_tokens: not an array");
    j = base_json(), json_object_del(added0(j), "content");
    expect_json_failure(j, PD_ERR_FORMAT, "added_tokens[0]: \"content\" is missing");
    j = base_json(), json_object_set_new(added0(j), "id", json_integer(-1));
    expect_json_failure(j, PD_ERR_FORMAT, "added_tokens[0]: id -1 is out of range");
    j = base_json(), json_object_set_new(added0(j), "lstrip", json_string("yes"));
    expect_json_failure(j, PD_ERR_FORMAT, "added_tokens[0]: \"lstrip\" is not a boolean");

    j = base_json(), json_object_set_new(j, "normalizer", json_pack("{s:s}", "type", "Lowercase"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "normalizer: normalizer type \"Lowercase\" is not supported");
    j = base_json(), json_object_set_new(j, "normalizer", json_pack("{s:s, s:i}", "type", "Sequence", "normalizers", 3));
    expect_json_failure(j, PD_ERR_FORMAT, "normalizer: \"normalizers\" is not an array");

    j = with_pre(split_then_byte_level(
        json_pack("{s:s, s:{s:s}, s:s}", "type", "Split", "pattern", "Regex", "(\\p{L}", "behavior", "Isolated"), false));
    expect_json_failure(j, PD_ERR_FORMAT, "pre_tokenizer.pretokenizers[0].pattern.Regex: bad regex at offset");
    j = with_pre(split_then_byte_level(
        json_pack("{s:s, s:{s:s}, s:s}", "type", "Split", "pattern", "Regex", "a", "behavior", "Weird"), false));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "split behavior \"Weird\" is not supported");
    j = with_pre(split_then_byte_level(json_pack("{s:s, s:s}", "type", "Split", "behavior", "Isolated"), false));
    expect_json_failure(j, PD_ERR_FORMAT, "pre_tokenizer.pretokenizers[0].pattern: missing");
    j = with_pre(json_pack("{s:s}", "type", "Whitespace"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "pre-tokenizer type \"Whitespace\" is not supported");
    j = with_pre(json_null());
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "no ByteLevel step");
    j = with_pre(json_pack("{s:s, s:{s:s}, s:s}", "type", "Split", "pattern", "Regex", "a", "behavior", "Isolated"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "no ByteLevel step");
    j = with_pre(json_pack("{s:s, s:[{s:s}, {s:s, s:{s:s}, s:s}]}", "type", "Sequence", "pretokenizers", "type",
                           "ByteLevel", "type", "Split", "pattern", "Regex", "a", "behavior", "Isolated"));
    expect_json_failure(j, PD_ERR_UNSUPPORTED, "pre_tokenizer.pretokenizers[1]: a Split after ByteLevel");
}

static void test_missing_file(void **state)
{
    (void)state;
    pd_error err = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/no_such_tokenizer.json", tmp_dir);
    assert_null(pd_tokenizer_load(path, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, path));
    assert_null(pd_tokenizer_load(tmp_dir, &err)); /* a directory */
    assert_int_equal(err.code, PD_ERR_IO);
    assert_null(pd_tokenizer_load(NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_tokenizer_load(path, NULL)); /* no error object: still no crash */
    pd_tokenizer_free(NULL);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmp_dir)) return -1;
    snprintf(tmp_json, sizeof tmp_json, "%s/tok.json", tmp_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(tmp_json);
    rmdir(tmp_dir);
    return 0;
}

/* Display columns: hand-counted cases (wide Chinese 2, ASCII 1, a combining
 * mark 0, an invalid byte 1, a stop at len and at NUL). */
static void test_text_width(void **state)
{
    (void)state;
    const char *mixed = "\xe7\x89\xa9\xe6\xb5\x81 ok"; /* 物流 ok */
    assert_int_equal(pd_text_width(mixed, strlen(mixed)), 7);
    assert_int_equal(pd_text_width(mixed, 3), 2);             /* 物 alone */
    assert_int_equal(pd_text_width(mixed, 4), 3);             /* 物 and a cut byte of 流 */
    assert_int_equal(pd_text_width("e\xcc\x81", 3), 1);       /* e + combining acute */
    assert_int_equal(pd_text_width("\xff" "a", 2), 2);          /* invalid byte, a */
    assert_int_equal(pd_text_width("ab\0cd", 5), 2);           /* stops at NUL */
    assert_int_equal(pd_text_width("\xef\xbc\xa1", 3), 2);    /* fullwidth A */
    assert_int_equal(pd_text_width(NULL, 5), 0);
    assert_int_equal(pd_text_width("", 0), 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_notations),
        cmocka_unit_test(test_byte_table),
        cmocka_unit_test(test_added_token_flags),
        cmocka_unit_test(test_added_token_ids),
        cmocka_unit_test(test_split_behaviors),
        cmocka_unit_test(test_byte_level_options),
        cmocka_unit_test(test_normalizers_and_unk),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_text_width),
    };
    return cmocka_run_group_tests_name("tokenizer_json", tests, setup, teardown);
}
