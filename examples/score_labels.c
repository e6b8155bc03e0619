/* score_labels.c - which category and polarity does a review give an
 * (aspect, opinion) pair? The 39 Tianchi "category/polarity" candidates are
 * scored by a decision head (or, without --head, by the LM's log-probability
 * of each) in one forward pass, asked what the bundled heads were trained on
 * (the schema's decide section: "属性：{aspect}；观点：{opinion}"); each
 * category's probability is the sum over its three polarities.
 *
 * Built against the installed library and run from the repository root, on
 * the bundled generative model (models/tianchi-gen: base, LoRA adapter,
 * pointer head). pkg-config must find pocketdec.pc: for a prefix of your own,
 * export PKG_CONFIG_PATH=PREFIX/lib/x86_64-linux-gnu/pkgconfig (the libdir
 * meson chose). The rpath lets the program find libpocketdec.so.0 there;
 * without it, export LD_LIBRARY_PATH="$(pkg-config --variable=libdir pocketdec)".
 *
 *   $ cc examples/score_labels.c $(pkg-config --cflags --libs pocketdec) \
 *       -Wl,-rpath,"$(pkg-config --variable=libdir pocketdec)" -o score_labels
 *   $ ./score_labels --adapter models/tianchi-gen/adapter --head models/tianchi-gen/head \
 *       models/tianchi-gen/base "物流很快，第二天就到了，包装也很好" 物流 很快
 *
 * prints the 13 categories, most probable first (物流 1.0000, best polarity
 * 正面). Usage: score_labels [--adapter DIR] [--head DIR] MODEL [REVIEW [ASPECT OPINION]]
 * (ASPECT and OPINION default to "_", the whole review).
 */
#include "example_model.h"

#include <stdio.h>
#include <stdlib.h>

#define N_CATEGORIES 13
#define N_POLARITIES 3
#define N_CANDIDATES (N_CATEGORIES * N_POLARITIES)

static const char *const categories[N_CATEGORIES] = {"包装", "成分", "尺寸", "服务", "功效", "价格", "气味",
                                                     "使用体验", "物流", "新鲜度", "真伪", "整体", "其他"};
static const char *const polarities[N_POLARITIES] = {"正面", "中性", "负面"};

/* Print s left-aligned in `cols` terminal columns (a Chinese character takes 2). */
static void print_padded(const char *s, size_t cols)
{
    size_t w = pd_text_width(s, strlen(s));
    printf("%s%*s", s, (int)(cols > w ? cols - w : 0), "");
}

int main(int argc, char **argv)
{
    example_model m;
    int k = example_options(argc, argv, &m);
    int n_pos = k < 0 ? -1 : argc - k;
    if (n_pos != 1 && n_pos != 2 && n_pos != 4) {
        fprintf(stderr, "usage: %s [--adapter DIR] [--head DIR] MODEL [REVIEW [ASPECT OPINION]]\n", argv[0]);
        return 2;
    }
    const char *review = n_pos > 1 ? argv[k + 1] : "物流很快，第二天就到了，包装也很好";
    const char *aspect = n_pos > 2 ? argv[k + 2] : n_pos > 1 ? "_" : "物流";
    const char *opinion = n_pos > 2 ? argv[k + 3] : n_pos > 1 ? "_" : "很快";
    char labels[N_CANDIDATES][32], question[512];
    const char *cands[N_CANDIDATES];
    for (int c = 0; c < N_CANDIDATES; c++) {
        snprintf(labels[c], sizeof labels[c], "%s/%s", categories[c / N_POLARITIES], polarities[c % N_POLARITIES]);
        cands[c] = labels[c];
    }
    snprintf(question, sizeof question, "属性：%s；观点：%s", aspect, opinion);

    pd_error err;
    pd_decider *d = NULL;
    pd_decision *dec = NULL;
    int rc = 1;
    if (example_load(&m, argv[k], &err) || !(d = pd_decider_new(m.model, m.head, NULL, &err)) ||
        pd_decide(d, review, question, cands, N_CANDIDATES, &dec, &err)) {
        fprintf(stderr, "score_labels: %s\n", err.message);
    } else {
        double sum[N_CATEGORIES] = {0};
        int order[N_CATEGORIES], best = 0;
        for (int c = 0; c < N_CANDIDATES; c++) {
            sum[c / N_POLARITIES] += dec->probs[c];
            if (dec->probs[c] > dec->probs[best]) best = c;
        }
        for (int i = 0; i < N_CATEGORIES; i++) { /* most probable first (insertion sort of 13) */
            int j = i;
            for (; j > 0 && sum[order[j - 1]] < sum[i]; j--) order[j] = order[j - 1];
            order[j] = i;
        }
        printf("review: %s\nquestion: %s\n", review, question);
        print_padded("category", 10);
        printf("  prob    best polarity\n");
        for (int i = 0; i < N_CATEGORIES; i++) {
            int c = order[i], p = 0;
            for (int q = 1; q < N_POLARITIES; q++)
                if (dec->probs[c * N_POLARITIES + q] > dec->probs[c * N_POLARITIES + p]) p = q;
            print_padded(categories[c], 10);
            printf("  %.4f  %s\n", sum[c], polarities[p]);
        }
        printf("best: %s (%.4f; %d prompt tokens, %d forward pass)\n", cands[best], dec->probs[best],
               dec->prompt_tokens, dec->forward_passes);
        rc = 0;
    }
    pd_decision_free(dec);
    pd_decider_free(d);
    example_free(&m);
    return rc;
}
