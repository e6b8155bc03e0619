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

#endif
