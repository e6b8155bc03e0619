/* safetensors.c - map a .safetensors file and add its tensors to a store. */
#include "formats.h"

#include <jansson.h>
#include <stdlib.h>

/* Real headers are a few hundred kB; anything near this is a corrupt length. */
#define ST_MAX_HEADER ((uint64_t)100 << 20)

static pd_status parse_dtype(const char *path, const char *name, const char *s, pdi_dtype *out,
                             pd_error *err)
{
    if (strcmp(s, "F32") == 0) *out = PD_F32;
    else if (strcmp(s, "F16") == 0) *out = PD_F16;
    else if (strcmp(s, "BF16") == 0) *out = PD_BF16;
    else
        return pdi_set_error(err, PD_ERR_UNSUPPORTED,
                             "%s: tensor %s has dtype %s; pocketdec reads F32, F16 and BF16", path, name, s);
    return PD_OK;
}

/* A JSON integer >= 0 (json_int_t is 64-bit, so it fits int64_t). */
static bool json_uint(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* Validate one header entry and add it; data/data_size: the byte buffer
 * after the header that data_offsets are relative to. */
static pd_status add_entry(pdi_tensor_store *st, const char *path, const char *name, const json_t *e,
                           const uint8_t *data, size_t data_size, pd_error *err)
{
    const json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape");
    const json_t *jo = json_object_get(e, "data_offsets");
    if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) || json_array_size(jo) != 2)
        return pdi_set_error(err, PD_ERR_FORMAT,
                             "%s: tensor %s needs dtype (a string), shape (an array) and data_offsets "
                             "([begin, end])", path, name);
    pdi_dtype dt = PD_F32;
    pd_status rc = parse_dtype(path, name, json_string_value(jd), &dt, err);
    if (rc) return rc;

    size_t n_dims = json_array_size(js);
    if (n_dims > 4)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s has %zu dims; pocketdec handles up to 4",
                             path, name, n_dims);
    int64_t shape[4];
    for (size_t i = 0; i < n_dims; i++) {
        uint64_t d;
        if (!json_uint(json_array_get(js, i), &d))
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: shape holds something other than a "
                                 "non-negative integer", path, name);
        shape[i] = (int64_t)d;
    }

    uint64_t begin, end;
    if (!json_uint(json_array_get(jo, 0), &begin) || !json_uint(json_array_get(jo, 1), &end) || begin > end)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: data_offsets must be two integers "
                             "0 <= begin <= end", path, name);
    if (end > data_size)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: data_offsets [%llu, %llu] run past the end "
                             "of the data (%zu bytes; truncated file?)", path, name, (unsigned long long)begin,
                             (unsigned long long)end, data_size);

    char shape_s[96];
    pdi_shape_str(shape_s, sizeof shape_s, (int)n_dims, shape);
    size_t elements, want;
    if (!pdi_shape_elements((int)n_dims, shape, &elements) ||
        !pdi_mul_size(elements, pdi_dtype_row_bytes(dt, 1), &want))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: shape %s is too large", path, name, shape_s);
    if (want != end - begin)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: shape %s of %s needs %zu bytes but "
                             "data_offsets [%llu, %llu] hold %llu", path, name, shape_s, pdi_dtype_name(dt), want,
                             (unsigned long long)begin, (unsigned long long)end,
                             (unsigned long long)(end - begin));

    const pdi_tensor *dup = pdi_store_find(st, name);
    if (dup)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s is already loaded from %s", path, name,
                             pdi_store_tensor_path(st, dup));
    return pdi_store_add_tensor(st, name, strlen(name), dt, (int)n_dims, shape, data + begin, want, err);
}

/* Parse the header of mapping m: *root gets the JSON object, *data and
 * *data_size the byte buffer after it. */
static pd_status parse_header(const pdi_mapping *m, json_t **root, const uint8_t **data, size_t *data_size,
                              pd_error *err)
{
    pdi_cursor c = {m->data, m->size, 0};
    uint64_t n;
    if (!pdi_cur_u64(&c, &n))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: file is %zu bytes, too short for a safetensors header",
                             m->path, m->size);
    const uint8_t *json = pdi_cur_take(&c, n);
    if (!json)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: header length %llu runs past the end of the file "
                             "(%zu bytes; truncated file?)", m->path, (unsigned long long)n, m->size);
    if (n > ST_MAX_HEADER)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: header length %llu is implausibly large (limit %llu)",
                             m->path, (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
    json_error_t je;
    /* Duplicate keys would be two tensors of one name: refuse them. */
    *root = json_loadb((const char *)json, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!*root)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: header JSON, line %d column %d: %s", m->path, je.line,
                             je.column, je.text);
    if (!json_is_object(*root))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: header JSON is not an object", m->path);
    *data = c.data + c.pos;
    *data_size = pdi_cur_left(&c);
    return PD_OK;
}

pd_status pdi_safetensors_add(pdi_tensor_store *st, const char *path, pd_error *err)
{
    size_t n_tensors = st->n_tensors, n_maps = st->n_maps, mi;
    pd_status rc = pdi_store_map_file(st, path, &mi, err);
    if (rc) return rc;
    const pdi_mapping *m = &st->maps[mi];
    json_t *root = NULL;
    const uint8_t *data = NULL;
    size_t data_size = 0;
    rc = parse_header(m, &root, &data, &data_size, err);
    const char *name;
    json_t *entry;
    if (rc == PD_OK) {
        json_object_foreach(root, name, entry) {
            if (strcmp(name, "__metadata__") == 0) continue;
            if (!json_is_object(entry))
                rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s: entry is not an object", path, name);
            else
                rc = add_entry(st, path, name, entry, data, data_size, err);
            if (rc) break;
        }
    }
    if (rc == PD_OK) rc = pdi_store_check_overlaps(st, n_tensors, path, err);
    json_decref(root);
    if (rc) pdi_store_rollback(st, n_tensors, n_maps);
    return rc;
}
