/* reload.c - the models `pocketdec serve` runs, one generation each: a new
 * bundle taken without a restart (POST /v1/reload, SIGHUP). The new bundle
 * is loaded and its engine started beside the old one while the old one
 * serves; then, under the server's mutex, the new one becomes current: every
 * request queued from then on is bound to it, and the old one's engine
 * answers the requests already bound to it and ends; the old one is freed
 * when its last request is answered. A request is bound to one generation
 * when it is queued, so it never sees two models, nor a model half loaded;
 * a bundle that fails to load changes nothing. With --teach, the review
 * queue moves onto the new model before the swap (teach.c), its reference
 * on the old one dropped with the server's. A generation freed prints a
 * line on stderr. */
#include "jobs.h"
#include "teach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The rates a generation summarizes with: its bundle's calibration.json (the
 * start's: the server's configured file), read once, so summaries follow a
 * reload and a file that cannot be read refuses the bundle. */
static int load_rates(server *s, generation *g, const char *path, char *msg, size_t msg_size)
{
    const char *file = s->cfg->calibration;
    char buf[4096];
    if (path) {
        struct stat st;
        snprintf(buf, sizeof buf, "%s/calibration.json", path);
        file = stat(buf, &st) == 0 ? buf : NULL; /* a bundle without rates: the estimates are the counts */
    }
    if (!file) return 0;
    pds_error err;
    if (!(g->rates = pds_calibration_load(file, &err)) || !(g->rates_path = strdup(file))) {
        snprintf(msg, msg_size, "%s", g->rates ? "out of memory" : err.message);
        return -1;
    }
    return 0;
}

generation *serve_gen_new(server *s, const pd_model *model, const pd_head *head, void *owner, const char *path,
                          char *msg, size_t msg_size)
{
    generation *g = calloc(1, sizeof *g);
    if (!g || (path && !(g->path = strdup(path)))) {
        free(g);
        snprintf(msg, msg_size, "out of memory");
        return NULL;
    }
    g->refs = 1; /* the server's, once current */
    g->model = model;
    g->head = head;
    g->owner = owner;
    g->can_score = head && pd_head_get_type(head) != PD_HEAD_TAGGER;
    pd_error err;
    if (load_rates(s, g, path, msg, msg_size)) {
        /* refused: a reload keeps the old model, a start stops with msg */
    } else if (head && pd_head_get_type(head) == PD_HEAD_TAGGER &&
        !(g->why = pd_tag_extractor_new(model, s->schema, head, &err)))
        snprintf(msg, msg_size, "%s", err.message);
    else if (serve_engine_start(s, g, msg, msg_size) == 0)
        return g;
    g->owner = NULL; /* the caller's still, as the model was not taken */
    serve_gen_free(s, g);
    return NULL;
}

void serve_gen_free(server *s, generation *g)
{
    if (g->running) {
        pthread_mutex_lock(&s->mu);
        g->retired = true; /* its engine ends when none of its requests is left */
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(g->thread, NULL);
    }
    pd_pipeline_free(g->w.pipe);
    pd_decider_free(g->w.dec);
    pd_context_free(g->w.why_ctx);
    pd_tag_extractor_free(g->why);
    const serve_loader *l = s->cfg->loader;
    if (g->owner && l) l->close(l->user, g->owner);
    free(g->path);
    pds_calibration_free(g->rates);
    free(g->rates_path);
    free(g);
}

void serve_gen_unref(generation *g)
{
    g->refs--; /* freed by serve_gen_reap, outside the mutex: freeing a model takes a while */
}

void serve_gen_reap(server *s)
{
    for (;;) {
        generation *dead = NULL;
        pthread_mutex_lock(&s->mu);
        for (generation **p = &s->gens; *p; p = &(*p)->next)
            if ((*p)->retired && (*p)->refs == 0 && (*p)->ended) {
                dead = *p;
                *p = dead->next;
                break;
            }
        pthread_mutex_unlock(&s->mu);
        if (!dead) return;
        long id = dead->id;
        serve_gen_free(s, dead);
        fprintf(stderr, "pocketdec serve: generation %ld released\n", id);
        fflush(stderr);
    }
}

char *serve_info_text(const server *s, const generation *g)
{
    json_t *fields = json_array();
    for (int32_t i = 0; fields && i < pd_schema_n_fields(s->schema); i++)
        json_array_append_new(fields, json_string(pd_schema_field_name(s->schema, i)));
    return serve_dump(json_pack("{s:s,s:s,s:o*,s:b,s:b,s:i,s:I,s:b,s:I}", "version", PD_VERSION, "head",
                                g->head ? pd_head_type_name(pd_head_get_type(g->head)) : "none", "fields", fields,
                                "score", g->can_score, "why", g->why != NULL, "max_texts", s->cfg->max_texts,
                                "max_body", (json_int_t)s->cfg->max_body, "api_key", s->cfg->api_key != NULL,
                                "generation", (json_int_t)g->id));
}

int serve_reload(server *s, const char *path, char **body)
{
    const serve_loader *l = s->cfg->loader;
    char msg[SERVE_MESSAGE_SIZE];
    if (!l) {
        *body = serve_error_body("this server cannot reload (it was started without a loader)");
        return 422;
    }
    pthread_mutex_lock(&s->mu);
    bool busy = s->reloading;
    s->reloading = true;
    pthread_mutex_unlock(&s->mu);
    if (busy) {
        *body = serve_error_body("a reload is loading already; retry when it has answered");
        return 409;
    }
    const pd_model *model = NULL;
    const pd_head *head = NULL;
    void *owner = NULL;
    generation *g = NULL, *taught = NULL;
    int status = 200;
    if (l->open(l->user, path, &model, &head, &owner, msg, sizeof msg)) status = 422;
    else if (!(g = serve_gen_new(s, model, head, owner, path, msg, sizeof msg))) {
        l->close(l->user, owner);
        status = 422;
    }
    if (g) {
        pthread_mutex_lock(&s->mu);
        g->id = s->gen->id + 1; /* one reload at a time: s->gen stays until the swap */
        pthread_mutex_unlock(&s->mu);
    }
    if (g && s->teach && serve_teach_follow(s->teach, g, &taught, msg, sizeof msg)) {
        serve_gen_free(s, g); /* its engine has no request: nothing was bound to it */
        g = NULL;
        status = 422;
    }
    pthread_mutex_lock(&s->mu);
    if (g) { /* the swap: requests queued from now on run on g */
        generation *old = s->gen;
        if (taught) { /* the review queue's reference moved onto g */
            g->refs++;
            serve_gen_unref(taught);
        }
        *body = serve_info_text(s, g); /* now: once another reload retires g, it may be freed */
        g->next = s->gens;
        s->gens = g;
        s->gen = g;
        old->retired = true;
        serve_gen_unref(old);
        pthread_cond_broadcast(&s->work); /* the old engine ends once its requests are done */
        s->reloads++;
    } else {
        s->reload_failures++;
    }
    s->reloading = false;
    pthread_mutex_unlock(&s->mu);
    if (!g) {
        char why[SERVE_MESSAGE_SIZE + 64];
        snprintf(why, sizeof why, "the bundle was not loaded, the old one serves on: %s", msg);
        *body = serve_error_body(why);
        return status;
    }
    if (!*body) {
        *body = serve_error_body("out of memory");
        return 500;
    }
    return 200;
}
