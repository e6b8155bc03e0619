/* side_by_side.c - a stream's texts on worker threads, one context each (a
 * tagger head's pipeline with parallel > 1): the calling thread hands texts
 * out as workers free and hands results back. */
#include "side_by_side.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* One worker's text: handed out by the calling thread, extracted on the
 * worker's own context, handed back. */
typedef struct side_slot {
    enum { SLOT_FREE, SLOT_BUSY, SLOT_DONE } state;
    const char *text;
    size_t len;
    void *tag;
    pd_extraction *x;
    pd_status rc;
    pd_error e;
} side_slot;

typedef struct side {
    pdi_side_extract extract;
    void *user;
    pthread_mutex_t mu;
    pthread_cond_t work, ready; /* a slot given a text; a slot done */
    side_slot *slots;
    bool stop;
} side;

typedef struct side_worker {
    side *s;
    int32_t k;
} side_worker;

static void *side_work(void *arg)
{
    side_worker *w = arg;
    side *s = w->s;
    side_slot *slot = &s->slots[w->k];
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (slot->state != SLOT_BUSY && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        if (slot->state != SLOT_BUSY) break;
        pthread_mutex_unlock(&s->mu);
        pd_extraction *x = NULL;
        pd_error e = {0};
        pd_status rc = s->extract(s->user, w->k, slot->text, slot->len, &x, &e);
        pthread_mutex_lock(&s->mu);
        *slot = (side_slot){.state = SLOT_DONE, .tag = slot->tag, .x = x, .rc = rc, .e = e};
        pthread_cond_signal(&s->ready);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The calling thread's part: texts from src handed to free workers, results
 * handed to src->done as they come (both from this thread, as the source
 * expects), until next says the end and nothing is in flight. Waits a
 * millisecond at most for a result while the source may have more to give. */
static void side_run(side *s, int32_t n, const pd_text_source *src)
{
    int32_t in_flight = 0;
    bool ended = false;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        bool progress = false;
        for (int32_t k = 0; k < n; k++) {
            if (s->slots[k].state != SLOT_DONE) continue;
            side_slot d = s->slots[k];
            s->slots[k] = (side_slot){.state = SLOT_FREE};
            in_flight--;
            progress = true;
            pthread_mutex_unlock(&s->mu);
            if (!d.rc) d.e = (pd_error){.code = PD_OK};
            src->done(src->user, d.tag, d.rc ? NULL : d.x, &d.e);
            pthread_mutex_lock(&s->mu);
        }
        while (!ended && in_flight < n) {
            const char *text = NULL;
            size_t len = 0;
            void *tag = NULL;
            pthread_mutex_unlock(&s->mu);
            int r = src->next(src->user, in_flight == 0, &text, &len, &tag);
            if (r > 0 && !text && len) {
                pd_error e;
                pdi_set_error(&e, PD_ERR_ARG, "no text to extract from (NULL with a length of %zu)", len);
                src->done(src->user, tag, NULL, &e);
            }
            pthread_mutex_lock(&s->mu);
            if (r < 0) ended = true;
            if (r <= 0) break;
            progress = true;
            if (!text && len) continue;
            int32_t k = 0;
            while (s->slots[k].state != SLOT_FREE) k++;
            s->slots[k] = (side_slot){.state = SLOT_BUSY, .text = text, .len = len, .tag = tag};
            in_flight++;
            pthread_cond_broadcast(&s->work);
        }
        if (ended && in_flight == 0) break;
        if (progress || in_flight == 0) continue;
        bool done = false;
        for (int32_t k = 0; k < n; k++) done |= s->slots[k].state == SLOT_DONE;
        if (done) continue;
        if (ended) {
            pthread_cond_wait(&s->ready, &s->mu);
        } else {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 1000000;
            if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&s->ready, &s->mu, &t);
        }
    }
    s->stop = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
}

bool pdi_side_by_side(int32_t n_workers, pdi_side_extract extract, void *user, const pd_text_source *src)
{
    side s = {.extract = extract, .user = user, .slots = calloc((size_t)n_workers, sizeof *s.slots)};
    pthread_t *threads = calloc((size_t)n_workers, sizeof *threads);
    side_worker *workers = calloc((size_t)n_workers, sizeof *workers);
    int32_t n = 0;
    if (s.slots && threads && workers && !pthread_mutex_init(&s.mu, NULL)) {
        if (!pthread_cond_init(&s.work, NULL)) {
            if (!pthread_cond_init(&s.ready, NULL)) {
                for (; n < n_workers; n++) {
                    workers[n] = (side_worker){&s, n};
                    if (pthread_create(&threads[n], NULL, side_work, &workers[n])) break;
                }
                if (n > 0) side_run(&s, n, src);
                for (int32_t k = 0; k < n; k++) pthread_join(threads[k], NULL);
                pthread_cond_destroy(&s.ready);
            }
            pthread_cond_destroy(&s.work);
        }
        pthread_mutex_destroy(&s.mu);
    }
    free(s.slots);
    free(threads);
    free(workers);
    return n > 0;
}
