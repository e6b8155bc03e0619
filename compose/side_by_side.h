/*
 * side_by_side.h - a stream's texts on worker threads, one context each: the
 * pipeline's way to keep a tagger head's texts in flight. Not installed.
 */
#ifndef PD_COMPOSE_SIDE_BY_SIDE_H
#define PD_COMPOSE_SIDE_BY_SIDE_H

#include "pd_internal.h"
#include "pocketdec_schemas.h"

/* Worker k's extraction of one text (on the k-th context of the caller's). */
typedef pd_status (*pdi_side_extract)(void *user, int32_t k, const char *text, size_t len, pd_extraction **out,
                                      pd_error *err);

/* Texts from src handed to n_workers worker threads as they free, each text
 * extracted whole by extract on the worker's own context; src->next and
 * src->done are called from the calling thread only (the source's
 * contract), done as soon as a text is ready; returns when next has said
 * the end and nothing is in flight. false when no worker could start (the
 * caller then reads the texts itself). */
bool pdi_side_by_side(int32_t n_workers, pdi_side_extract extract, void *user, const pd_text_source *src);

#endif
