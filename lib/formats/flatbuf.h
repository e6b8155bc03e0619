/*
 * flatbuf.h - a small, bounds-checked reader of the FlatBuffers binary format
 * (the container of MNN's llm.mnn graph). Internal to lib/formats.
 *
 * Every access checks the buffer: a table's vtable must lie inside it and be
 * as long as it says, each field it points to must fit inside the table as
 * the vtable sizes it, and every offset to a sub-table, vector or string must
 * land inside the buffer with its whole extent. Offsets between tables are
 * unsigned and added to their own position, so they only ever point forward:
 * a chain of them cannot loop; an offset of 0 (a field pointing at itself) is
 * refused, and nesting is bounded by PDI_FB_MAX_DEPTH all the same.
 *
 * A failed access returns false and records the first problem in fb->what
 * ("field 3 of the table at offset 120: ..."), for the caller's message.
 */
#ifndef PD_FLATBUF_H
#define PD_FLATBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDI_FB_MAX_DEPTH 32

typedef struct pdi_fb {
    const uint8_t *data;
    size_t size;
    char what[160]; /* the first problem found, "" while none */
} pdi_fb;

/* A table: its position, its vtable and their sizes, its nesting depth. */
typedef struct pdi_fb_table {
    pdi_fb *fb;
    size_t pos, vt;
    uint16_t vt_size, size;
    int depth;
} pdi_fb_table;

/* A vector: n elements of elem bytes from pos. */
typedef struct pdi_fb_vec {
    pdi_fb *fb;
    size_t pos;
    uint32_t n;
    size_t elem;
    int depth; /* of the table holding it */
} pdi_fb_vec;

/* The root table of a buffer. */
bool pdi_fb_root(pdi_fb *fb, pdi_fb_table *root);

/* Whether field id is present. */
bool pdi_fb_has(const pdi_fb_table *t, int id);

/* Scalars: def when the field is absent; false when it does not fit the table. */
bool pdi_fb_u8(const pdi_fb_table *t, int id, uint8_t def, uint8_t *out);
bool pdi_fb_i32(const pdi_fb_table *t, int id, int32_t def, int32_t *out);
bool pdi_fb_f32(const pdi_fb_table *t, int id, float def, float *out);

/* A sub-table; *present false (and true returned) when the field is absent. */
bool pdi_fb_table_field(const pdi_fb_table *t, int id, pdi_fb_table *out, bool *present);

/* A vector of elem-byte scalars (elem 4 for tables and strings); an absent
 * field gives an empty vector. */
bool pdi_fb_vector(const pdi_fb_table *t, int id, size_t elem, pdi_fb_vec *out);

/* Element i of a vector of tables. */
bool pdi_fb_vec_table(const pdi_fb_vec *v, uint32_t i, pdi_fb_table *out);

/* Scalars of a vector (i < v->n, checked by the vector's extent). */
int32_t pdi_fb_vec_i32(const pdi_fb_vec *v, uint32_t i);
int64_t pdi_fb_vec_i64(const pdi_fb_vec *v, uint32_t i);
float pdi_fb_vec_f32(const pdi_fb_vec *v, uint32_t i);

/* A string field: *s points into the buffer (NUL-terminated there, as the
 * format requires and this checks), "" when absent. */
bool pdi_fb_string(const pdi_fb_table *t, int id, const char **s, size_t *len);

#endif /* PD_FLATBUF_H */
