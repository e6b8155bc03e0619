/*
 * tag_extract.h - what the pipeline sets on the tag extractor it owns before
 * any text: the floor its caller chose in place of the head's. Not installed.
 */
#ifndef PD_COMPOSE_TAG_EXTRACT_H
#define PD_COMPOSE_TAG_EXTRACT_H

#include "pocketdec_compose.h"

/* Records (and trace candidates) less sure than min_confidence are dropped
 * (fate PD_TAG_BELOW_FLOOR) instead of those below the head's min_confidence.
 * Only before tx is shared. */
void pdi_tag_extractor_set_floor(pd_tag_extractor *tx, float min_confidence);

/* The extractor's head (heads.h) and its pass runner, for tag_explain.c. */
const struct pdi_tagger *pdi_tag_extractor_tagger(const pd_tag_extractor *tx);
const struct pdi_tag_runner *pdi_tag_extractor_runner(const pd_tag_extractor *tx);

#endif
