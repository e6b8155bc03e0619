/* fuzz_reviews.c - the reader of review files (pocketdec_reviews.h) over any
 * bytes from memory. The first byte picks the format (CSV, JSONL), the
 * columns (the defaults, or review_id/content), the encoding (none, gb18030,
 * utf-16) and keep_extra. Every row must be a header, a review with an id
 * and a text of its length, or a broken row with its problem; a failure must
 * come with a message and stay. */
#include "fuzz_util.h"
#include "pocketdec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const char *const enc[] = {NULL, "gb18030", "utf-16", NULL};
    pd_reviews_params p = pd_reviews_default_params();
    p.format = data[0] & 1 ? PD_REVIEWS_JSONL : PD_REVIEWS_CSV;
    if (data[0] & 2) {
        p.id_column = "review_id";
        p.text_column = "content";
    }
    p.encoding = enc[(data[0] >> 2) & 3];
    p.keep_extra = (data[0] >> 4) & 1;
    pd_error err;
    pd_reviews *r = pd_reviews_open_memory((const char *)data + 1, size - 1, "fuzz", &p, &err);
    if (!r) {
        if (!err.message[0]) abort();
        return 0;
    }
    pd_review w;
    char buf[32];
    int got;
    long rows = 0;
    while ((got = pd_reviews_next(r, &w, &err)) == 1) {
        if (w.ordinal != ++rows || w.line < 1) abort();
        if (w.problem ? w.text != NULL || !w.problem[0] : !w.header && (!w.id || !w.text || strlen(w.text) != w.text_len))
            abort();
        if (w.extra && !strlen(w.extra)) abort();
        pd_reviews_column(r, "sku", buf);
    }
    if (got < 0 && (!err.message[0] || pd_reviews_next(r, &w, &err) != -1)) abort();
    pd_reviews_free(r);
    return 0;
}
