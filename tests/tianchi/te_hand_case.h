/* te_hand_case.h - the small gold of the hand-worked comparison and sweep
 * tests (test_compare.c, test_jsonl.c): three reviews, two quadruples each,
 * with offsets. As macros, so a test that leaves one unused gets no warning. */
#ifndef TE_HAND_CASE_H
#define TE_HAND_CASE_H

#define HAND_GOLD_HEADER "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"

/* Reviews: 1 包装很好，价格便宜  2 物流很快，味道好闻  3 颜色好看，质地细腻 */
#define HAND_GOLD                                                                             \
    HAND_GOLD_HEADER                                                                          \
    "1,包装,0,2,很好,2,4,包装,正面\n"                                                         \
    "1,价格,5,7,便宜,7,9,价格,正面\n"                                                         \
    "2,物流,0,2,很快,2,4,物流,正面\n"                                                         \
    "2,味道,5,7,好闻,7,9,气味,正面\n"                                                         \
    "3,颜色,0,2,好看,2,4,整体,正面\n"                                                         \
    "3,质地,5,7,细腻,7,9,使用体验,正面\n"

#define HAND_REVIEWS "id,Reviews\n1,包装很好，价格便宜\n2,物流很快，味道好闻\n3,颜色好看，质地细腻\n"

#endif /* TE_HAND_CASE_H */
