/* fuzz_util.h - shared by the libFuzzer targets: loaders take paths, so each
 * input is written to a private temporary file first. */
#ifndef PD_FUZZ_UTIL_H
#define PD_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#endif
