/* example_model.h - what the examples share: the options before their
 * positional arguments (--adapter DIR, --head DIR) and a model loaded with its
 * LoRA adapter applied. A trained adapter is what makes a small base useful:
 * without it the bundled models answer near-uniformly. */
#ifndef EXAMPLE_MODEL_H
#define EXAMPLE_MODEL_H

#include <pocketdec.h>

#include <stddef.h>
#include <string.h>

typedef struct example_model {
    const char *adapter_dir, *head_dir; /* NULL when not given */
    pd_model *base;                     /* the model file */
    pd_model *model;                    /* base with the adapter applied, or base */
} example_model;

/* Take "--adapter DIR" and "--head DIR" off the front of argv; returns the
 * index of the first positional argument, or -1 for an option without its
 * value or an unknown one. */
static int example_options(int argc, char **argv, example_model *m)
{
    int i = 1;
    memset(m, 0, sizeof *m);
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc) return -1;
        if (strcmp(argv[i], "--adapter") == 0) m->adapter_dir = argv[i + 1];
        else if (strcmp(argv[i], "--head") == 0) m->head_dir = argv[i + 1];
        else return -1;
    }
    return i;
}

/* Load the model at path and apply the adapter (merged on F32 weights, at
 * runtime on 16-bit and quantized ones). Returns 0, or -1 with err set. */
static int example_load(example_model *m, const char *path, pd_error *err)
{
    if (!(m->model = m->base = pd_model_load(path, NULL, err))) return -1;
    if (!m->adapter_dir) return 0;
    pd_adapter *adapter = pd_adapter_load(m->adapter_dir, err);
    const pd_adapter *list[1] = {adapter};
    const float weight = 1.0f;
    pd_model *adapted = adapter ? pd_model_apply_adapters(m->base, list, &weight, 1, PD_APPLY_AUTO, err) : NULL;
    pd_adapter_free(adapter); /* the adapted model keeps what it needs */
    if (!adapted) return -1;
    m->model = adapted;
    return 0;
}

static void example_free(example_model *m)
{
    if (m->model != m->base) pd_model_free(m->model);
    pd_model_free(m->base);
    m->model = m->base = NULL;
}

#endif
