/* store.c - element types, the tensor store and its file mappings. */
#include "formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- dtypes */

const char *pdi_dtype_name(pdi_dtype t)
{
    switch (t) {
    case PD_F32: return "F32";
    case PD_F16: return "F16";
    case PD_BF16: return "BF16";
    case PD_Q4_0: return "Q4_0";
    case PD_Q4_1: return "Q4_1";
    case PD_Q8_0: return "Q8_0";
    case PD_Q4_64: return "Q4_64";
    }
    return "unknown";
}

bool pdi_dtype_known(int t)
{
    return t == PD_F32 || t == PD_F16 || t == PD_BF16 || t == PD_Q4_0 || t == PD_Q4_1 || t == PD_Q8_0;
}

int pdi_dtype_block_len(pdi_dtype t)
{
    return t == PD_Q4_64 ? PD_QBLOCK_64 : t == PD_Q8_0 || t == PD_Q4_0 || t == PD_Q4_1 ? PD_QBLOCK : 1;
}

size_t pdi_dtype_row_bytes(pdi_dtype t, int64_t n)
{
    size_t per, unit; /* bytes per unit of `unit` elements */
    switch (t) {
    case PD_F32: per = 4, unit = 1; break;
    case PD_F16:
    case PD_BF16: per = 2, unit = 1; break;
    case PD_Q8_0: per = 34, unit = PD_QBLOCK; break;
    case PD_Q4_0: per = 18, unit = PD_QBLOCK; break;
    case PD_Q4_1: per = 20, unit = PD_QBLOCK; break;
    case PD_Q4_64: per = 36, unit = PD_QBLOCK_64; break;
    default: return 0;
    }
    if (n < 0 || (uint64_t)n % unit != 0 || (uint64_t)n > SIZE_MAX) return 0;
    size_t bytes;
    return pdi_mul_size((size_t)n / unit, per, &bytes) ? bytes : 0;
}

/* ------------------------------------------------------------- shapes */

void pdi_shape_str(char *buf, size_t size, int n_dims, const int64_t *shape)
{
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (int i = 0; i <= n_dims && used < size; i++) {
        int n = i < n_dims ? snprintf(buf + used, size - used, "%s%lld", i ? ", " : "[", (long long)shape[i])
                           : snprintf(buf + used, size - used, "%s]", n_dims ? "" : "[");
        if (n < 0) break;
        used += (size_t)n;
    }
}

bool pdi_shape_elements(int n_dims, const int64_t *shape, size_t *out)
{
    size_t n = 1;
    for (int i = 0; i < n_dims; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > SIZE_MAX || !pdi_mul_size(n, (size_t)shape[i], &n))
            return false;
    }
    if ((uint64_t)n > INT64_MAX) return false;
    *out = n;
    return true;
}

/* -------------------------------------------------------------- store */

void pdi_store_init(pdi_tensor_store *st) { memset(st, 0, sizeof *st); }

static void unmap(pdi_mapping *m)
{
    if (m->data && m->size) munmap((void *)m->data, m->size);
    free(m->path);
}

void pdi_store_rollback(pdi_tensor_store *st, size_t n_tensors, size_t n_maps)
{
    while (st->n_tensors > n_tensors) free(st->tensors[--st->n_tensors].name);
    while (st->n_maps > n_maps) unmap(&st->maps[--st->n_maps]);
}

void pdi_store_free(pdi_tensor_store *st)
{
    if (!st) return;
    pdi_store_rollback(st, 0, 0);
    free(st->tensors);
    free(st->maps);
    pdi_store_init(st);
}

/* Linear scan: a Qwen3 checkpoint has a few hundred tensors and lookups
 * happen at load time only. */
const pdi_tensor *pdi_store_find(const pdi_tensor_store *st, const char *name)
{
    for (size_t i = 0; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

/* Room for one more mapping. */
static bool grow_maps(pdi_tensor_store *st)
{
    pdi_mapping *m = pdi_grow(st->maps, &st->cap_maps, st->n_maps + 1, sizeof *m);
    if (m) st->maps = m;
    return m != NULL;
}

pd_status pdi_store_map_file(pdi_tensor_store *st, const char *path, size_t *index, pd_error *err)
{
    if (!grow_maps(st))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pdi_set_error(err, PD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pdi_set_error(err, PD_ERR_IO, "%s: not a regular file", path);
    }
    if ((uintmax_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pdi_set_error(err, PD_ERR_IO, "%s: too large to map", path);
    }
    pdi_mapping m = {.path = strdup(path), .data = NULL, .size = (size_t)sb.st_size};
    /* mmap refuses a zero length; an empty file simply has no bytes. */
    if (m.size) {
        void *p = mmap(NULL, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(m.path);
            return pdi_set_error(err, PD_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
        m.data = p;
    }
    close(fd); /* the mapping stays valid without the descriptor */
    if (!m.path) {
        unmap(&m);
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    }
    st->maps[st->n_maps] = m;
    *index = st->n_maps++;
    return PD_OK;
}

pd_status pdi_store_map_anonymous(pdi_tensor_store *st, size_t size, const char *name, uint8_t **data, pd_error *err)
{
    if (!grow_maps(st))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", name);
    pdi_mapping m = {.path = strdup(name), .data = NULL, .size = size, .owned = true};
    void *p = size ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    if (p == MAP_FAILED || !m.path) {
        if (p != MAP_FAILED && p) munmap(p, size);
        free(m.path);
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for %zu bytes", name, size);
    }
#ifdef MADV_HUGEPAGE
    /* filled at load (repacked or quantized weights): 2 MiB pages where the
     * system gives them, a few hundred page faults instead of tens of thousands */
    if (p) madvise(p, size, MADV_HUGEPAGE);
#endif
    m.data = p;
    st->maps[st->n_maps++] = m;
    *data = p;
    return PD_OK;
}

pd_status pdi_store_add_tensor(pdi_tensor_store *st, const char *name, size_t name_len, pdi_dtype dtype,
                               int n_dims, const int64_t *shape, const uint8_t *data, size_t nbytes,
                               pd_error *err)
{
    if (n_dims < 0 || n_dims > 4) return pdi_set_error(err, PD_ERR_INTERNAL, "tensor with %d dims", n_dims);
    char *copy = malloc(name_len + 1);
    pdi_tensor *grown = copy ? pdi_grow(st->tensors, &st->cap_tensors, st->n_tensors + 1, sizeof *grown) : NULL;
    if (!grown) {
        free(copy);
        return pdi_set_error(err, PD_ERR_NOMEM, "out of memory adding a tensor");
    }
    st->tensors = grown;
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    pdi_tensor *t = &st->tensors[st->n_tensors++];
    memset(t, 0, sizeof *t);
    t->name = copy;
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (int i = 0; i < n_dims; i++) t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = nbytes;
    return PD_OK;
}

bool pdi_mapping_holds(const pdi_mapping *m, const pdi_tensor *t)
{
    /* Compare as integers: the pointer may belong to another mapping. */
    uintptr_t a = (uintptr_t)m->data, x = (uintptr_t)t->data;
    return m->data && x >= a && x - a <= m->size;
}

const char *pdi_store_tensor_path(const pdi_tensor_store *st, const pdi_tensor *t)
{
    for (size_t i = 0; i < st->n_maps; i++)
        if (pdi_mapping_holds(&st->maps[i], t)) return st->maps[i].path;
    return "?";
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)(*(const pdi_tensor *const *)a)->data;
    uintptr_t y = (uintptr_t)(*(const pdi_tensor *const *)b)->data;
    return (x > y) - (x < y);
}

pd_status pdi_store_check_overlaps(const pdi_tensor_store *st, size_t first, const char *source,
                                   pd_error *err)
{
    size_t n = 0;
    const pdi_tensor **order = malloc((st->n_tensors - first + 1) * sizeof *order);
    if (!order) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", source);
    for (size_t i = first; i < st->n_tensors; i++)
        if (st->tensors[i].nbytes) order[n++] = &st->tensors[i]; /* empty ones hold no bytes */
    qsort(order, n, sizeof *order, by_address);
    pd_status rc = PD_OK;
    for (size_t i = 1; i < n && rc == PD_OK; i++) {
        const pdi_tensor *a = order[i - 1], *b = order[i];
        if ((uintptr_t)a->data + a->nbytes > (uintptr_t)b->data)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: tensors %s and %s overlap", source, a->name, b->name);
    }
    free(order);
    return rc;
}
