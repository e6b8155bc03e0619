/* bundle.c - what a user names as "the model" opened in one call: a bundle
 * folder (base/, adapter/, head/ side by side, as models/tianchi), an HF
 * directory or a .gguf file; the base loaded, its adapter and any more
 * applied, its head loaded against the result. */
#include "pocketdec_compose.h"
#include "pocketdec_adapters.h"
#include "pd_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pd_bundle {
    pd_model *base, *model; /* model: base with the adapters applied, or base */
    pd_head *head;          /* NULL without one */
    char *head_dir;
};

pd_bundle_params pd_bundle_default_params(void)
{
    return (pd_bundle_params){.adapter_mode = PD_APPLY_AUTO};
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* path/part (malloc'ed) when path is a bundle folder holding that part: a
 * folder with no config.json of its own and a base/ beside its parts. NULL
 * otherwise, or with *nomem set when out of memory. */
static char *bundle_part(const char *path, const char *part, bool *nomem)
{
    if (!is_dir(path)) return NULL;
    char *own = pdi_path_join(path, "config.json"), *base = pdi_path_join(path, "base");
    char *want = pdi_path_join(path, part);
    bool bundle = own && base && want && !exists(own) && exists(base) && exists(want);
    if (!own || !base || !want) *nomem = true;
    free(own);
    free(base);
    if (!bundle) free(want);
    return bundle ? want : NULL;
}

char *pd_bundle_part(const char *path, const char *part)
{
    bool nomem = false;
    return path && part ? bundle_part(path, part, &nomem) : NULL;
}

void pd_bundle_free(pd_bundle *b)
{
    if (!b) return;
    pd_head_free(b->head);
    if (b->model != b->base) pd_model_free(b->model);
    pd_model_free(b->base);
    free(b->head_dir);
    free(b);
}

/* The bundle's adapter/ (when there is one) then params' adapters, applied to b->base. */
static pd_status apply_adapters(pd_bundle *b, const char *path, const pd_bundle_params *p, pd_error *err /* not NULL */)
{
    bool nomem = false;
    char *own = bundle_part(path, "adapter", &nomem);
    size_t first = own ? 1 : 0, n = first + p->n_adapters;
    if (nomem) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    if (n == 0) return PD_OK;
    pd_adapter **list = calloc(n, sizeof *list);
    float *weights = calloc(n, sizeof *weights);
    pd_status rc = list && weights ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *dir = i < first ? own : p->adapters[i - first];
        weights[i] = i < first || !p->weights ? 1.0f : p->weights[i - first];
        if (!dir) rc = pdi_set_error(err, PD_ERR_ARG, "adapter %zu of %s: no directory", i - first, path);
        else if (!(list[i] = pd_adapter_load(dir, err))) rc = err->code;
    }
    pd_model *adapted = NULL;
    if (!rc && !(adapted = pd_model_apply_adapters(b->base, (const pd_adapter *const *)list, weights, n,
                                                   p->adapter_mode, err)))
        rc = err->code;
    for (size_t i = 0; list && i < n; i++) pd_adapter_free(list[i]);
    free(list);
    free(weights);
    free(own);
    if (adapted) b->model = adapted;
    return rc;
}

pd_bundle *pd_bundle_open(const char *path, const pd_bundle_params *params, pd_error *err)
{
    pd_bundle_params p = params ? *params : pd_bundle_default_params();
    pd_error local;
    if (!err) err = &local; /* the callees' codes are read back */
    if (!path) {
        pdi_set_error(err, PD_ERR_ARG, "no model path to open");
        return NULL;
    }
    if (p.n_adapters && !p.adapters) {
        pdi_set_error(err, PD_ERR_ARG, "%s: %zu adapters named but no list of them", path, p.n_adapters);
        return NULL;
    }
    bool nomem = false;
    pd_bundle *b = calloc(1, sizeof *b);
    char *base = b ? bundle_part(path, "base", &nomem) : NULL;
    pd_status rc = b && !nomem ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    if (!rc && !(b->model = b->base = pd_model_load(base ? base : path, &p.model, err))) rc = err->code;
    free(base);
    if (!rc) rc = apply_adapters(b, path, &p, err);
    if (!rc && !p.no_head) {
        b->head_dir = p.head ? strdup(p.head) : bundle_part(path, "head", &nomem);
        if ((p.head && !b->head_dir) || nomem) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        else if (b->head_dir && !(b->head = pd_head_load(b->head_dir, b->model, err))) rc = err->code;
    }
    if (rc) {
        pd_bundle_free(b);
        return NULL;
    }
    return b;
}

const pd_model *pd_bundle_model(const pd_bundle *b) { return b ? b->model : NULL; }
const pd_model *pd_bundle_base(const pd_bundle *b) { return b ? b->base : NULL; }
const pd_head *pd_bundle_head(const pd_bundle *b) { return b ? b->head : NULL; }
const char *pd_bundle_head_dir(const pd_bundle *b) { return b ? b->head_dir : NULL; }
