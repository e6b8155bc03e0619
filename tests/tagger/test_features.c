/* Sparse features on hand-worked texts: FNV-1a 64 against known vectors,
 * then each atom's key bytes. The tables are "identity" tables (row r holds
 * r in its first column) and each head has one template, so a sum is the sum
 * of the feature ids, which the test computes from keys written out by hand:
 * the template's bytes, then 0x1F and each value. Also characters, kinds,
 * lexicon marks, the features of records with empty fields, and the
 * polarity table's atoms worked out by hand on POL_TEXT; features named as
 * pd_tag_explain shows them (test_named). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "heads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define B 65521 /* buckets of every table: ids of distinct keys rarely collide */
#define SEED 7
#define N_LABELS 2

static char g_dir[64];

/* The text of most tests: 好 a ' ' 1 ， 很 好 用 。 é 😀 (27 bytes, 11 characters). */
static const char TEXT[] = "好a 1，很好用。é😀";

static void write_file(const char *name, const void *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static const char *const DECISIONS[3] = {"tag", "link", "label"};

/* DECISION.safetensors holding features.DECISION [B, width] (tag: 5 tags,
 * link: 1, label: N_LABELS), each row r = (r, 0, ...). */
static void write_table(int d)
{
    const int width = d == 0 ? 5 : d == 1 ? 1 : N_LABELS;
    size_t n = (size_t)B * (size_t)width * 4;
    char header[256], name[32];
    snprintf(header, sizeof header, "{\"features.%s\": {\"dtype\": \"F32\", \"shape\": [%d, %d], \"data_offsets\": [0, %zu]}}",
             DECISIONS[d], B, width, n);
    while (strlen(header) % 8) strcat(header, " ");
    uint64_t hlen = strlen(header);
    uint8_t *file = calloc(8 + hlen + n, 1);
    assert_non_null(file);
    memcpy(file, &hlen, 8); /* little-endian hosts */
    memcpy(file + 8, header, hlen);
    float *w = (float *)(file + 8 + hlen);
    for (int r = 0; r < B; r++) w[(size_t)r * (size_t)width] = (float)r;
    snprintf(name, sizeof name, "%s.safetensors", DECISIONS[d]);
    write_file(name, file, 8 + hlen + n);
    free(file);
}

/* A head whose `decision` has the one template tpl; the others none. */
static pd_head *head_with(const char *decision, const char *tpl)
{
    static pd_head h;
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"type\": \"tagger\", \"prompt\": \"{text}\", \"spans\": [\"aspect\", \"opinion\"],"
             " \"link\": {\"from\": \"opinion\", \"to\": \"aspect\", \"head_dim\": 4},"
             " \"label_fields\": [\"category\", \"polarity\"], \"labels\": [[\"包装\", \"正面\"], [\"物流\", \"负面\"]],"
             " \"features\": {\"hash\": {\"function\": \"fnv1a64\", \"seed\": %d}, \"lexicon\": \"lexicon.tsv\","
             " \"memory\": \"memory.tsv\", \"polarity\": \"polarity.tsv\","
             " \"%s\": {\"buckets\": %d, \"templates\": [\"%s\"]}}}",
             SEED, decision, B, tpl);
    json_t *root = json_loads(doc, 0, NULL);
    assert_non_null(root);
    h = (pd_head){.source = g_dir, .type = PD_HEAD_TAGGER, .hidden = 4};
    pd_error err = {0};
    if (pdi_tagger_parse(&h, root, "head.json", &err)) fail_msg("%s: %s", tpl, err.message);
    json_decref(root);
    char path[128];
    snprintf(path, sizeof path, "%s/%s.safetensors", g_dir, decision);
    pdi_tensor_store st;
    pdi_store_init(&st);
    assert_int_equal(pdi_safetensors_add(&st, path, &err), PD_OK);
    if (pdi_features_tensors(&h, &st, path, &err)) fail_msg("%s", err.message);
    pdi_store_free(&st);
    return &h;
}

static void free_head(pd_head *h)
{
    pdi_tagger_free(h->tagger);
    h->tagger = NULL;
}

/* The id of a key written out by hand (NUL-terminated; 0x1F as \x1f). */
static double id(const char *key) { return (double)(pdi_fnv1a64(SEED, key, strlen(key)) % B); }

static void test_fnv(void **state)
{
    (void)state;
    assert_true(pdi_fnv1a64(0, "", 0) == 0xcbf29ce484222325ull);
    assert_true(pdi_fnv1a64(0, "a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(pdi_fnv1a64(0, "foobar", 6) == 0x85944171f73967e8ull);
    assert_true(pdi_fnv1a64(1, "", 0) == 0xcbf29ce484222324ull); /* the seed XORs the basis */
    assert_true(pdi_fnv1a64(1, "a", 1) == 0xaf63dd4c8601ee3full);
    assert_true(pdi_fnv1a64(0xFFFFFFFFull, "a", 1) == 0x6b1d533e79fe11c1ull);
    const char key[] = "c[-1] c[0]\x1f<s>\x1f好";
    assert_true(pdi_fnv1a64(7, key, strlen(key)) == 0x1fd383a47e78e2baull);
}

static void init_text(pdi_feat_text *x, const pd_head *h, const char *text)
{
    pd_error err = {0};
    assert_int_equal(pdi_feat_text_init(x, h->tagger->features, text, strlen(text), &err), PD_OK);
}

/* Characters, kinds, clause punctuation, lexicon marks of each field. */
static void test_text(void **state)
{
    (void)state;
    pd_head *h = head_with("tag", "lex.aspect[0] lex.opinion[0]");
    pdi_feat_text x;
    init_text(&x, h, TEXT);
    assert_int_equal(x.n, 11);
    assert_int_equal(pdi_feat_text_char(&x, 0), 0);
    assert_int_equal(pdi_feat_text_char(&x, 1), -1);
    assert_int_equal(pdi_feat_text_char(&x, 3), 1);
    assert_int_equal(pdi_feat_text_char(&x, 23), 10);
    assert_int_equal(pdi_feat_text_char(&x, 24), -1);
    assert_int_equal(pdi_feat_text_char(&x, 27), 11);
    assert_int_equal(pdi_feat_text_char(&x, 28), -1);
    assert_memory_equal(x.kind, "hasdphhhppp", 11);
    const uint8_t punct[11] = {0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0};
    assert_memory_equal(x.punct, punct, 11);
    /* aspect: 好a (longest at 0) and 好 at 6; opinion: 很好用 (longest first) drops 好用, and 1 */
    assert_memory_equal(x.marks, "BE----S----", 11);
    assert_memory_equal(x.marks + 11, "---S-BIE---", 11);
    pdi_feat_text_free(&x);
    free_head(h);
}

/* The sum of template tpl's tag features at character i of text. */
static double tag_sum(const char *tpl, const char *text, int32_t i)
{
    pd_head *h = head_with("tag", tpl);
    pdi_feat_text x;
    double out[5] = {0};
    init_text(&x, h, text);
    pdi_features_tag(&x, i, out);
    for (int y = 1; y < 5; y++) assert_true(out[y] == 0.0);
    pdi_feat_text_free(&x);
    free_head(h);
    return out[0];
}

static void test_tag_atoms(void **state)
{
    (void)state;
    assert_true(tag_sum("c[-1] c[0]", TEXT, 0) == id("c[-1] c[0]\x1f<s>\x1f好"));
    assert_true(tag_sum("kind[0] kind[1] kind[2] kind[3]", TEXT, 0) == id("kind[0] kind[1] kind[2] kind[3]\x1fh\x1f" "a\x1fs\x1f" "d"));
    assert_true(tag_sum("kind[4] c[4]", TEXT, 7) == id("kind[4] c[4]\x1f</s>\x1f</s>"));
    assert_true(tag_sum("c[2] kind[1] kind[-4]", TEXT, 8) == id("c[2] kind[1] kind[-4]\x1f😀\x1fp\x1fp"));
    assert_true(tag_sum("lex.aspect[0] lex.opinion[-1] lex.aspect[-4]", TEXT, 6) ==
                id("lex.aspect[0] lex.opinion[-1] lex.aspect[-4]\x1fS\x1f" "B\x1f-"));
    assert_true(tag_sum("lex.opinion[-4]", TEXT, 1) == id("lex.opinion[-4]\x1f<s>"));
    assert_true(tag_sum("bias", TEXT, 3) == id("bias"));
}

/* The link sums of from (5, 7) 很好 against to spans 好a (0, 2) and 😀 (10, 11), then none. */
static void link_sums(const char *tpl, const char *text, pdi_feat_span from, const pdi_feat_span *to, int32_t n_to,
                      double *out)
{
    pd_head *h = head_with("link", tpl);
    pdi_feat_text x;
    init_text(&x, h, text);
    memset(out, 0, sizeof *out * (size_t)(n_to + 1));
    pdi_features_link(&x, from, to, n_to, out);
    pdi_feat_text_free(&x);
    free_head(h);
}

static void test_link_atoms(void **state)
{
    (void)state;
    const pdi_feat_span from = {5, 7}, to[2] = {{0, 2}, {10, 11}};
    double s[3];
    link_sums("from to dir", TEXT, from, to, 2, s);
    assert_true(s[0] == id("from to dir\x1f很好\x1f好a\x1fL"));
    assert_true(s[1] == id("from to dir\x1f很好\x1f😀\x1fR"));
    assert_true(s[2] == id("from to dir\x1f很好\x1f<none>\x1f<none>"));
    link_sums("dist gap break between", TEXT, from, to, 2, s);
    assert_true(s[0] == id("dist gap break between\x1fL3\x1f 1，\x1f" "1\x1f" "0"));
    assert_true(s[1] == id("dist gap break between\x1fR3\x1f用。é\x1f" "1\x1f" "0"));
    assert_true(s[2] == id("dist gap break between\x1f<none>\x1f<none>\x1f<none>\x1f<none>"));
    /* from's clause is 很好用 (between ， and 。): no to span in it; the memory holds (好a, 很好) */
    link_sums("none clause count memory", TEXT, from, to, 2, s);
    assert_true(s[0] == id("none clause count memory\x1f" "0\x1f" "0\x1f" "2\x1f" "1"));
    assert_true(s[1] == id("none clause count memory\x1f" "0\x1f" "0\x1f" "2\x1f" "0"));
    assert_true(s[2] == id("none clause count memory\x1f" "1\x1f" "0\x1f" "2\x1f<none>"));
    /* distance buckets, gaps longer than 4, spans between (capped at 3), a whole-text clause */
    static const char digits[] = "0123456789012345678901234567890";
    static const int d[10] = {0, 3, 4, 5, 6, 9, 10, 15, 16, 20};
    static const char *const want[10] = {"R0\x1f\x1f" "0", "R3\x1f" "123\x1f" "1", "R4\x1f" "1234\x1f" "2",
                                         "R4\x1f>4\x1f" "3", "R6\x1f>4\x1f" "3", "R6\x1f>4\x1f" "3",
                                         "R10\x1f>4\x1f" "3", "R10\x1f>4\x1f" "3", "R16\x1f>4\x1f" "3",
                                         "R16\x1f>4\x1f" "3"};
    pdi_feat_span far[10];
    double t[11];
    for (int i = 0; i < 10; i++) far[i] = (pdi_feat_span){1 + d[i], 2 + d[i]};
    link_sums("dist gap between", digits, (pdi_feat_span){0, 1}, far, 10, t);
    for (int i = 0; i < 10; i++) {
        char key[64];
        snprintf(key, sizeof key, "dist gap between\x1f%s", want[i]);
        if (t[i] != id(key)) fail_msg("candidate %d: %g, the key's id %g", i, t[i], id(key));
    }
    link_sums("clause count", digits, (pdi_feat_span){0, 1}, far, 10, t);
    for (int i = 0; i <= 10; i++) assert_true(t[i] == id("clause count\x1f" "3\x1f" "3")); /* none too */
}

/* The label sums of a record (aspect, opinion spans; start < 0 for `_`). */
static double label_sum(const char *tpl, const char *text, pdi_feat_span aspect, pdi_feat_span opinion)
{
    pd_head *h = head_with("label", tpl);
    pdi_feat_text x;
    double out[N_LABELS] = {0};
    const pdi_feat_span spans[2] = {aspect, opinion};
    init_text(&x, h, text);
    pdi_features_label(&x, spans, out);
    pdi_feat_text_free(&x);
    free_head(h);
    return out[0];
}

static void test_label_atoms(void **state)
{
    (void)state;
    const pdi_feat_span a = {0, 2}, o = {5, 7}, none = {-1, -1};
    assert_true(label_sum("text.aspect text.opinion", TEXT, a, o) == id("text.aspect text.opinion\x1f好a\x1f很好"));
    assert_true(label_sum("pair empty memory", TEXT, a, o) == id("pair empty memory\x1f好a|很好\x1f" "00\x1f包装/正面"));
    assert_true(label_sum("pair empty memory", TEXT, none, o) == id("pair empty memory\x1f_|很好\x1f" "10\x1f<none>"));
    /* the anchor is the from span (opinion) */
    assert_true(label_sum("left[1] left[4] right[1] right[4]", TEXT, a, o) ==
                id("left[1] left[4] right[1] right[4]\x1f，\x1f" "a\x1f用\x1f😀"));
    /* a lone to span anchors on itself */
    assert_true(label_sum("left[1] right[1]", TEXT, (pdi_feat_span){10, 11}, none) == id("left[1] right[1]\x1fé\x1f</s>"));
    /* multi-valued atoms: one feature a value */
    assert_true(label_sum("chars.opinion left[1]", TEXT, a, o) ==
                id("chars.opinion left[1]\x1f很\x1f，") + id("chars.opinion left[1]\x1f好\x1f，"));
    assert_true(label_sum("bigrams.opinion", TEXT, a, (pdi_feat_span){5, 8}) ==
                id("bigrams.opinion\x1f很好") + id("bigrams.opinion\x1f好用"));
    assert_true(label_sum("bigrams.aspect", TEXT, (pdi_feat_span){0, 1}, o) == 0.0);
    assert_true(label_sum("chars.aspect text.opinion", TEXT, none, o) == 0.0);
    assert_true(label_sum("clause", TEXT, a, o) == id("clause\x1f很") + id("clause\x1f好") + id("clause\x1f用"));
    /* a clause's characters count once however often they occur */
    double digits = 0.0;
    for (int c = 0; c < 10; c++) {
        char key[16];
        snprintf(key, sizeof key, "clause\x1f%d", c);
        digits += id(key);
    }
    assert_true(label_sum("clause", "0123456789012", none, (pdi_feat_span){3, 4}) == digits);
    assert_true(label_sum("bias", TEXT, a, o) == id("bias"));
}

/* Features named as pd_tag_explain shows them: what each visit is told. */
typedef struct named {
    char names[4][PDI_FEAT_NAME_MAX];
    double rows[4], sum;
    int32_t which[4], n;
} named;

static void visit(void *arg, int32_t which, const char *name, const float *row)
{
    named *v = arg;
    assert_true(v->n < 4);
    snprintf(v->names[v->n], sizeof v->names[0], "%s", name);
    v->which[v->n] = which;
    v->rows[v->n++] = (double)row[0];
    v->sum += (double)row[0];
}

/* Template tpl of `decision` over TEXT, v emptied; end() frees both. */
static pd_head *begin(pdi_feat_text *x, named *v, const char *decision, const char *tpl)
{
    pd_head *h = head_with(decision, tpl);
    init_text(x, h, TEXT);
    *v = (named){0};
    return h;
}

static void end(pdi_feat_text *x, pd_head *h)
{
    pdi_feat_text_free(x);
    free_head(h);
}

static void test_named(void **state)
{
    (void)state;
    pdi_feat_text x;
    named v;
    double out[N_LABELS] = {0}, s[2] = {0}, e[5] = {0};
    const pdi_feat_span spans[2] = {{0, 2}, {5, 7}}, to[1] = {{0, 2}};
    pd_head *h = begin(&x, &v, "label", "chars.opinion left[1]");
    pdi_features_label_named(&x, spans, out, visit, &v);
    assert_int_equal(v.n, 2); /* one a value of the multi-valued atom, each its row: the sum's parts */
    assert_string_equal(v.names[0], "chars.opinion left[1]=很 ，");
    assert_string_equal(v.names[1], "chars.opinion left[1]=好 ，");
    assert_true(v.rows[0] == id("chars.opinion left[1]\x1f很\x1f，") && v.sum == out[0]);
    end(&x, h);
    h = begin(&x, &v, "link", "from to");
    pdi_features_link_named(&x, (pdi_feat_span){5, 7}, to, 1, s, visit, &v);
    assert_int_equal(v.n, 2);
    assert_string_equal(v.names[0], "from to=很好 好a");
    assert_string_equal(v.names[1], "from to=很好 <none>");
    assert_true(v.which[0] == 0 && v.which[1] == 1 && v.rows[1] == s[1]);
    end(&x, h);
    h = begin(&x, &v, "tag", "bias");
    pdi_features_tag_named(&x, 3, e, visit, &v);
    assert_true(v.n == 1 && !strcmp(v.names[0], "bias") && v.rows[0] == e[0]);
    end(&x, h);
}

/* 不 太 好 ， 没 有 很 差 劲 。 好: negation 不 and 没有, degree 很 and 太, valued
 * 好 0.8, 太好 2.5, 差 -1.5, 很差 -2, 差劲 -3.9, 很差劲 -4 (polarity.tsv, written in
 * main, which also holds 好棒 -0.8). */
static const char POL_TEXT[] = "不太好，没有很差劲。好";

static void test_polarity_atoms(void **state)
{
    (void)state;
    /* the strongest covering term: 太好 over 好 (at 2), 很差劲 over the others (6 to 8) */
    assert_true(tag_sum("pol[0] polpos[0]", POL_TEXT, 2) == id("pol[0] polpos[0]\x1f+2\x1f" "E"));
    assert_true(tag_sum("pol[0] polpos[0]", POL_TEXT, 1) == id("pol[0] polpos[0]\x1f+2\x1f" "B"));
    assert_true(tag_sum("pol[0] polpos[0]", POL_TEXT, 6) == id("pol[0] polpos[0]\x1f-4\x1f" "B"));
    assert_true(tag_sum("pol[0] polpos[0]", POL_TEXT, 7) == id("pol[0] polpos[0]\x1f-4\x1f" "I"));
    assert_true(tag_sum("pol[0] polpos[0]", POL_TEXT, 10) == id("pol[0] polpos[0]\x1f+0.5\x1f" "S"));
    assert_true(tag_sum("pol[-1] polpos[0] pol[4]", POL_TEXT, 0) == id("pol[-1] polpos[0] pol[4]\x1f<s>\x1f-\x1f" "0"));
    assert_true(tag_sum("pol[4]", POL_TEXT, 8) == id("pol[4]\x1f</s>"));
    /* |value| tied (好 0.8, 好棒 -0.8): the longer term is the strongest */
    assert_true(tag_sum("pol[0] polpos[0]", "好棒", 0) == id("pol[0] polpos[0]\x1f-0.5\x1f" "B"));
    /* negation in scope: inside 不 and 没有, up to 2 characters after one in its clause */
    static const char *const negated[11] = {"n", "1", "1", "1", "n", "n", "1", "1", "1", "0", "0"};
    for (int32_t i = 0; i < 11; i++) {
        char key[32];
        snprintf(key, sizeof key, "negated[0]\x1f%s", negated[i]);
        if (tag_sum("negated[0]", POL_TEXT, i) != id(key)) fail_msg("negated at %d: not '%s'", i, negated[i]);
    }
    const pdi_feat_span none = {-1, -1}, cha_jin = {7, 9}, hen_cha_jin = {6, 9};
    /* in 差劲: 差 -1.5 then 差劲 -3.9 (sum -5.4); its clause 没有很差劲 adds 很差 -2 and 很差劲 -4 */
    assert_true(label_sum("polsum.opinion polmin.opinion polmax.opinion", POL_TEXT, none, cha_jin) ==
                id("polsum.opinion polmin.opinion polmax.opinion\x1f-4\x1f-2\x1f-1"));
    assert_true(label_sum("clausesum clausemin clausemax", POL_TEXT, none, cha_jin) ==
                id("clausesum clausemin clausemax\x1f-8\x1f-4\x1f-1"));
    assert_true(label_sum("negation degree", POL_TEXT, none, cha_jin) == id("negation degree\x1f" "1\x1f" "1"));
    assert_true(label_sum("negation degree", POL_TEXT, none, hen_cha_jin) == id("negation degree\x1f" "1\x1fin"));
    assert_true(label_sum("negation degree", POL_TEXT, none, (pdi_feat_span){4, 6}) == id("negation degree\x1fin\x1f" "0"));
    assert_true(label_sum("negation degree", POL_TEXT, none, (pdi_feat_span){10, 11}) == id("negation degree\x1f" "0\x1f" "0"));
    /* 3 characters after 不 is out of scope; the aspect `_` and a span with no term have no statistic */
    assert_true(label_sum("negation", "不会这么好", none, (pdi_feat_span){4, 5}) == id("negation\x1f" "0"));
    assert_true(label_sum("negation", "不会这好", none, (pdi_feat_span){3, 4}) == id("negation\x1f" "1"));
    assert_true(label_sum("polsum.aspect polmax.opinion", POL_TEXT, none, (pdi_feat_span){3, 4}) ==
                id("polsum.aspect polmax.opinion\x1f<none>\x1f<none>"));
}

/* A head without features has no sparse part; one feature counts as often as it occurs. */
static void test_no_features(void **state)
{
    (void)state;
    assert_false(pdi_features_on(NULL, PD_FEAT_TAG));
    pd_head *h = head_with("label", "chars.opinion");
    assert_false(pdi_features_on(h->tagger->features, PD_FEAT_TAG));
    assert_true(pdi_features_on(h->tagger->features, PD_FEAT_LABEL));
    free_head(h);
    assert_true(label_sum("chars.opinion", "好好", (pdi_feat_span){-1, -1}, (pdi_feat_span){0, 2}) ==
                2 * id("chars.opinion\x1f好"));
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/pd-features-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    static const char lexicon[] = "# aspect and opinion terms\naspect\t好a\naspect\t好\r\n\nopinion\t很好\n"
                                  "opinion\t好用\nopinion\t很好用\nopinion\t1\n";
    static const char memory[] = "好a\t很好\t包装\t正面\n_\t很好用\t物流\t负面\n";
    write_file("lexicon.tsv", lexicon, strlen(lexicon));
    write_file("memory.tsv", memory, strlen(memory));
    static const char polarity[] = "# term<TAB>value\n不\tnegation\n没有\tnegation\n很\tdegree\n太\tdegree\n好\t0.8\n"
                                   "太好\t2.5\n好棒\t-0.8\n差\t-1.5\n很差\t-2\r\n差劲\t-3.9\n\n很差劲\t-4e0\n";
    write_file("polarity.tsv", polarity, strlen(polarity));
    for (int d = 0; d < 3; d++) write_table(d);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv),        cmocka_unit_test(test_text),        cmocka_unit_test(test_tag_atoms),
        cmocka_unit_test(test_link_atoms), cmocka_unit_test(test_label_atoms), cmocka_unit_test(test_no_features),
        cmocka_unit_test(test_polarity_atoms), cmocka_unit_test(test_named),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    static const char *const files[] = {"lexicon.tsv", "memory.tsv", "polarity.tsv", "tag.safetensors",
                                        "link.safetensors", "label.safetensors"};
    for (int i = 0; i < 6; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", g_dir, files[i]);
        unlink(path);
    }
    rmdir(g_dir);
    return failed;
}
