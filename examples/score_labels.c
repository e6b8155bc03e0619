/* score_labels.c - which Tianchi category does a review talk about? The 13
 * categories are scored by a decision head (or, without one, by the LM's
 * log-probability of each label) in one forward pass. Built against the
 * installed library:
 *
 *   cc score_labels.c $(pkg-config --cflags --libs pocketdec) -o score_labels
 *   ./score_labels MODEL [HEAD_DIR|-] [REVIEW]
 */
#include <pocketdec.h>

#include <stdio.h>
#include <stdlib.h>

static const char *const categories[13] = {"包装", "成分", "尺寸", "服务", "功效", "价格", "气味",
                                           "使用体验", "物流", "新鲜度", "真伪", "整体", "其他"};

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL [HEAD_DIR|-] [REVIEW]\n", argv[0]);
        return 2;
    }
    const char *head_dir = argc > 2 && argv[2][0] != '-' ? argv[2] : NULL;
    const char *review = argc > 3 ? argv[3] : "活动价很是划算，买一送一共60片才花八十五块，天天用都不心疼啊";
    pd_error err;
    pd_model *model = pd_model_load(argv[1], NULL, &err);
    pd_head *head = NULL;
    pd_decider *d = NULL;
    pd_decision *dec = NULL;
    int rc = 1;
    if (!model || (head_dir && !(head = pd_head_load(head_dir, model, &err))) ||
        !(d = pd_decider_new(model, head, NULL, &err)) ||
        pd_decide(d, review, "这条评论说的是哪个方面？", categories, 13, &dec, &err)) {
        fprintf(stderr, "score_labels: %s\n", err.message);
    } else {
        int best = 0;
        for (int i = 0; i < dec->n_candidates; i++) {
            printf("%-12s %.4f\n", categories[i], dec->probs[i]);
            if (dec->probs[i] > dec->probs[best]) best = i;
        }
        printf("best: %s (%d prompt tokens, %d forward pass)\n", categories[best], dec->prompt_tokens,
               dec->forward_passes);
        rc = 0;
    }
    pd_decision_free(dec);
    pd_decider_free(d);
    pd_head_free(head);
    pd_model_free(model);
    return rc;
}
