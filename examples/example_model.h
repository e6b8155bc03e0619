/* example_model.h - what the examples share: the options before their
 * positional arguments (--adapter DIR, --head DIR) and the model opened with
 * pd_bundle_open: a bundle folder (models/tianchi: base, adapter and head in
 * one), an HF directory or a .gguf file, with the LoRA adapter applied. A
 * trained adapter is what makes a small base useful: without it the bundled
 * models answer near-uniformly. */
#ifndef EXAMPLE_MODEL_H
#define EXAMPLE_MODEL_H

#include <pocketdec.h>

#include <stddef.h>
#include <string.h>

typedef struct example_model {
    const char *adapter_dir, *head_dir; /* NULL when not given */
    pd_bundle *bundle;
    const pd_model *model;              /* the base with the adapters applied */
    const pd_head *head;                /* --head, else a bundle's head/; NULL when neither */
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

/* Open the model at path with the adapter applied (merged on F32 weights, at
 * runtime on 16-bit and quantized ones) and the head loaded. Returns 0, or
 * -1 with err set. */
static int example_load(example_model *m, const char *path, pd_error *err)
{
    pd_bundle_params p = pd_bundle_default_params();
    const char *adapters[1] = {m->adapter_dir};
    p.adapters = adapters;
    p.n_adapters = m->adapter_dir ? 1 : 0;
    p.head = m->head_dir;
    if (!(m->bundle = pd_bundle_open(path, &p, err))) return -1;
    m->model = pd_bundle_model(m->bundle);
    m->head = pd_bundle_head(m->bundle);
    return 0;
}

static void example_free(example_model *m)
{
    pd_bundle_free(m->bundle);
    m->bundle = NULL;
    m->model = NULL;
    m->head = NULL;
}

#endif
