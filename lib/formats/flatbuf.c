/* flatbuf.c - the bounds-checked FlatBuffers reader (flatbuf.h). */
#include "flatbuf.h"

#include "formats.h"

#include <stdarg.h>
#include <stdio.h>

static bool fail(pdi_fb *fb, const char *fmt, ...) PD_PRINTF(2, 3);

static bool fail(pdi_fb *fb, const char *fmt, ...)
{
    if (fb->what[0]) return false; /* keep the first problem */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fb->what, sizeof fb->what, fmt, ap);
    va_end(ap);
    if (!fb->what[0]) snprintf(fb->what, sizeof fb->what, "malformed flatbuffer");
    return false;
}

/* Whether [pos, pos + n) lies in the buffer. */
static bool inside(const pdi_fb *fb, size_t pos, size_t n) { return pos <= fb->size && n <= fb->size - pos; }

/* The table at pos: its vtable found and sized. */
static bool table_at(pdi_fb *fb, size_t pos, int depth, pdi_fb_table *t)
{
    if (depth > PDI_FB_MAX_DEPTH) return fail(fb, "tables nested deeper than %d at offset %zu", PDI_FB_MAX_DEPTH, pos);
    if (!inside(fb, pos, 4)) return fail(fb, "table offset %zu is past the end (%zu bytes)", pos, fb->size);
    int64_t vt = (int64_t)pos - (int32_t)pdi_le32(fb->data + pos);
    if (vt < 0 || !inside(fb, (size_t)vt, 4))
        return fail(fb, "the vtable of the table at offset %zu lies outside the buffer (at %lld)", pos, (long long)vt);
    uint16_t vt_size = pdi_le16(fb->data + vt), size = pdi_le16(fb->data + vt + 2);
    if (vt_size < 4 || vt_size % 2 || !inside(fb, (size_t)vt, vt_size))
        return fail(fb, "the vtable at offset %lld claims %u bytes, which do not fit", (long long)vt, vt_size);
    if (size < 4 || !inside(fb, pos, size))
        return fail(fb, "the table at offset %zu claims %u bytes, which do not fit", pos, size);
    *t = (pdi_fb_table){fb, pos, (size_t)vt, vt_size, size, depth};
    return true;
}

bool pdi_fb_root(pdi_fb *fb, pdi_fb_table *root)
{
    fb->what[0] = '\0';
    if (!inside(fb, 0, 8)) return fail(fb, "%zu bytes is too short for a flatbuffer", fb->size);
    uint32_t off = pdi_le32(fb->data);
    if (off == 0) return fail(fb, "the root offset is 0");
    return table_at(fb, off, 0, root);
}

/* Offset of field id inside the table (0 when absent), checked to leave room
 * for n bytes inside the table as its vtable sizes it. */
static bool field(const pdi_fb_table *t, int id, size_t n, size_t *off)
{
    *off = 0;
    size_t slot = 4 + 2 * (size_t)id;
    if (id < 0 || slot + 2 > t->vt_size) return true; /* beyond the vtable: absent */
    uint16_t fo = pdi_le16(t->fb->data + t->vt + slot);
    if (fo == 0) return true;
    if (fo < 4 || (size_t)fo + n > t->size)
        return fail(t->fb, "field %d of the table at offset %zu: its %zu bytes at +%u lie outside the table's %u "
                    "(a vtable that lies)", id, t->pos, n, fo, t->size);
    *off = t->pos + fo;
    return true;
}

bool pdi_fb_has(const pdi_fb_table *t, int id)
{
    size_t slot = 4 + 2 * (size_t)id;
    return id >= 0 && slot + 2 <= t->vt_size && pdi_le16(t->fb->data + t->vt + slot) != 0;
}

bool pdi_fb_u8(const pdi_fb_table *t, int id, uint8_t def, uint8_t *out)
{
    size_t at;
    if (!field(t, id, 1, &at)) return false;
    *out = at ? t->fb->data[at] : def;
    return true;
}

bool pdi_fb_i32(const pdi_fb_table *t, int id, int32_t def, int32_t *out)
{
    size_t at;
    if (!field(t, id, 4, &at)) return false;
    *out = at ? (int32_t)pdi_le32(t->fb->data + at) : def;
    return true;
}

bool pdi_fb_f32(const pdi_fb_table *t, int id, float def, float *out)
{
    size_t at;
    if (!field(t, id, 4, &at)) return false;
    uint32_t bits = at ? pdi_le32(t->fb->data + at) : 0;
    if (at) memcpy(out, &bits, 4);
    else *out = def;
    return true;
}

/* Follow the uoffset stored at `at`: the position it points to. */
static bool follow(pdi_fb *fb, size_t at, const char *what, size_t *target)
{
    uint32_t off = pdi_le32(fb->data + at);
    if (off == 0) return fail(fb, "%s at offset %zu points at itself", what, at);
    if ((uint64_t)at + off >= fb->size)
        return fail(fb, "%s at offset %zu points past the end (to %llu of %zu bytes)", what, at,
                    (unsigned long long)at + off, fb->size);
    *target = at + off;
    return true;
}

bool pdi_fb_table_field(const pdi_fb_table *t, int id, pdi_fb_table *out, bool *present)
{
    size_t at, target = 0;
    *present = false;
    if (!field(t, id, 4, &at)) return false;
    if (!at) return true;
    if (!follow(t->fb, at, "a table offset", &target) || !table_at(t->fb, target, t->depth + 1, out)) return false;
    *present = true;
    return true;
}

bool pdi_fb_vector(const pdi_fb_table *t, int id, size_t elem, pdi_fb_vec *out)
{
    size_t at, target = 0;
    *out = (pdi_fb_vec){t->fb, 0, 0, elem, t->depth};
    if (!field(t, id, 4, &at)) return false;
    if (!at) return true;
    if (!follow(t->fb, at, "a vector offset", &target)) return false;
    if (!inside(t->fb, target, 4)) return fail(t->fb, "vector length at offset %zu is past the end", target);
    uint32_t n = pdi_le32(t->fb->data + target);
    if ((uint64_t)n * elem > t->fb->size - target - 4)
        return fail(t->fb, "the vector at offset %zu claims %u elements of %zu bytes, past the end (%zu bytes)",
                    target, n, elem, t->fb->size);
    out->pos = target + 4;
    out->n = n;
    return true;
}

bool pdi_fb_vec_table(const pdi_fb_vec *v, uint32_t i, pdi_fb_table *out)
{
    size_t target = 0;
    if (i >= v->n || v->elem != 4) return fail(v->fb, "vector element %u of %u", i, v->n);
    return follow(v->fb, v->pos + 4 * (size_t)i, "a vector's table offset", &target) &&
           table_at(v->fb, target, v->depth + 1, out);
}

int32_t pdi_fb_vec_i32(const pdi_fb_vec *v, uint32_t i) { return (int32_t)pdi_le32(v->fb->data + v->pos + 4 * (size_t)i); }

int64_t pdi_fb_vec_i64(const pdi_fb_vec *v, uint32_t i) { return (int64_t)pdi_le64(v->fb->data + v->pos + 8 * (size_t)i); }

float pdi_fb_vec_f32(const pdi_fb_vec *v, uint32_t i)
{
    uint32_t bits = pdi_le32(v->fb->data + v->pos + 4 * (size_t)i);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

bool pdi_fb_string(const pdi_fb_table *t, int id, const char **s, size_t *len)
{
    pdi_fb_vec v;
    *s = "";
    *len = 0;
    if (!pdi_fb_vector(t, id, 1, &v)) return false;
    if (!v.pos) return true;
    if (v.n >= t->fb->size - v.pos || t->fb->data[v.pos + v.n] != 0)
        return fail(t->fb, "the string at offset %zu has no terminating NUL", v.pos);
    *s = (const char *)t->fb->data + v.pos;
    *len = v.n;
    return true;
}
