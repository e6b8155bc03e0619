/* fuzz_util.h - shared by the libFuzzer targets: loaders take paths, so each
 * input is written to a private temporary file first. */
#ifndef PD_FUZZ_UTIL_H
#define PD_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Write data to a per-process file named by suffix; returns its path (static storage). */
static inline const char *fuzz_write_file(const char *suffix, const uint8_t *data, size_t size)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/pocketdec-fuzz-%ld%s", (long)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}

/* Make a per-process directory holding two files from one input: the bytes up
 * to the first NUL go to `first`, the rest to `second` (a config file and its
 * tensors). Returns the directory (static storage). */
/* data[0..n) as file `name` in dir. */
static inline void fuzz_write_part(const char *dir, const char *name, const uint8_t *data, size_t n)
{
    char path[192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
}

static inline const char *fuzz_write_pair(const char *tag, const char *first, const char *second,
                                          const uint8_t *data, size_t size)
{
    static char dir[128];
    snprintf(dir, sizeof dir, "/tmp/pocketdec-fuzz-%s-%ld", tag, (long)getpid());
    mkdir(dir, 0700);
    const uint8_t *nul = memchr(data, 0, size);
    size_t head = nul ? (size_t)(nul - data) : size;
    fuzz_write_part(dir, first, data, head);
    fuzz_write_part(dir, second, nul ? nul + 1 : data + size, nul ? size - head - 1 : 0);
    return dir;
}

#endif
