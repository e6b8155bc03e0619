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
static inline const char *fuzz_write_pair(const char *tag, const char *first, const char *second,
                                          const uint8_t *data, size_t size)
{
    static char dir[128];
    char path[192];
    snprintf(dir, sizeof dir, "/tmp/pocketdec-fuzz-%s-%ld", tag, (long)getpid());
    mkdir(dir, 0700);
    const uint8_t *nul = memchr(data, 0, size);
    size_t head = nul ? (size_t)(nul - data) : size;
    const char *names[2] = {first, second};
    const uint8_t *parts[2] = {data, nul ? nul + 1 : data + size};
    size_t lens[2] = {head, nul ? size - head - 1 : 0};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f) abort();
        if (lens[i] && fwrite(parts[i], 1, lens[i], f) != lens[i]) abort();
        fclose(f);
    }
    return dir;
}

#endif
