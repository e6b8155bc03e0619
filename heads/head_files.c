/* head_files.c - what every part of a head file reads with: paths in the
 * head's folder, its text files (gazetteer, lexicon, memory) line by line,
 * and F32 copies of head.safetensors tensors of a checked shape. A leaf:
 * head.c, tagger.c, gazetteer.c and features.c call it. */
#include "heads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- head text files */

char *pdi_head_path(const pd_head *h, const char *name)
{
    return name[0] == '/' ? strdup(name) : pdi_path_join(h->source, name);
}

pd_status pdi_head_text_read(const char *file, char **data, size_t *len, size_t *lines, pd_error *err)
{
    pd_status rc = pdi_read_file(file, data, len, err);
    if (rc) return rc;
    if (*len > PD_HEAD_TEXT_MAX)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s: %zu bytes, more than the limit of %u for a head's text file", file,
                             *len, PD_HEAD_TEXT_MAX);
    if (memchr(*data, '\0', *len)) return pdi_set_error(err, PD_ERR_FORMAT, "%s: a NUL byte (not a text file)", file);
    *lines = 1;
    for (size_t i = 0; i < *len; i++) *lines += (*data)[i] == '\n';
    return PD_OK;
}

bool pdi_head_text_line(char *data, size_t len, size_t *pos, char **line, size_t *n)
{
    if (*pos >= len) return false;
    char *s = data + *pos, *nl = memchr(s, '\n', len - *pos), *end = nl ? nl : data + len;
    *pos = nl ? (size_t)(nl - data) + 1 : len;
    if (end > s && end[-1] == '\r') end--;
    *line = s;
    *n = (size_t)(end - s);
    return true;
}

/* ------------------------------------------------------ head.safetensors */

void pdi_tensor_shape_text(const pdi_tensor *t, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < t->n_dims && i < 4; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
}

pd_status pdi_head_take_tensor(const pdi_tensor_store *st, const char *name, int64_t rows, int64_t cols, bool optional,
                               float **out, const char *path, pd_error *err)
{
    const pdi_tensor *t = pdi_store_find(st, name);
    int64_t n = rows * (cols ? cols : 1);
    if (!t && optional) {
        if (!(*out = calloc((size_t)n, sizeof(float)))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        return PD_OK;
    }
    if (!t) return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s is missing", path, name);
    int want_dims = cols ? 2 : 1;
    if (t->n_dims != want_dims || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got[64], want[64];
        pdi_tensor_shape_text(t, got, sizeof got);
        if (cols)
            snprintf(want, sizeof want, "%lld, %lld", (long long)rows, (long long)cols);
        else
            snprintf(want, sizeof want, "%lld", (long long)rows);
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has shape [%s], expected [%s]%s", path, name, got, want,
                             cols ? " (rows x the model's hidden size)" : "");
    }
    if (!(*out = malloc((size_t)n * sizeof(float)))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    pdi_row_to_f32(t->dtype, t->data, *out, n);
    return PD_OK;
}
