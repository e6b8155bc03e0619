/*
 * pocketdec.h - the public API of libpocketdec, all of it: include this one.
 *
 * It includes one header per part of the library, each of which may also be
 * included alone:
 *   pocketdec_runtime.h   errors, tokenizer, models, contexts, sampling, generation (lib/)
 *   pocketdec_adapters.h  PEFT LoRA adapters (adapters/)
 *   pocketdec_heads.h     decision heads (heads/)
 *   pocketdec_drafts.h    DFlash / DFlash2 speculative-decoding drafts (drafts/)
 *   pocketdec_schemas.h   extraction schemas and constrained extraction (schemas/)
 *   pocketdec_compose.h   relabelling extractions with a head, extraction by a tagger head (compose/)
 *   pocketdec_reviews.h   files of reviews: CSV and JSONL, columns, encodings (reviews/)
 *   pocketdec_summarize.h the summary of a corpus from its files: counts, estimates, intervals (summary/)
 * The conventions of every call (errors, memory, threads) are in pocketdec_runtime.h.
 */
#ifndef POCKETDEC_H
#define POCKETDEC_H

#include "pocketdec_runtime.h"
#include "pocketdec_adapters.h"
#include "pocketdec_heads.h"
#include "pocketdec_drafts.h"
#include "pocketdec_schemas.h"
#include "pocketdec_compose.h"
#include "pocketdec_reviews.h"
#include "pocketdec_summarize.h"

#endif /* POCKETDEC_H */
