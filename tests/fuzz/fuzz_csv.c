/* fuzz_csv.c - the CSV reader (te_csv.h) over any bytes, once from a buffer
 * (as tianchi-eval reads) and once from a stream (as pocketdec extract reads):
 * both must give the same rows and broken records. The first byte picks the
 * field count a row must have when resynchronising (0 to 3). */
#include "fuzz_util.h"
#include "te_internal.h"

/* A running digest of every event, so the two reads compare cheaply. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t read_all(te_csv *csv, size_t expect, long *events)
{
    te_error err;
    uint64_t h = 14695981039346656037ull;
    te_csv_result r;
    te_csv_expect_fields(csv, expect);
    *events = 0;
    while ((r = te_csv_next(csv, &err)) != TE_CSV_END) {
        if (r == TE_CSV_FAIL) abort(); /* nothing here can run out of memory or fail to read */
        long line = te_csv_line(csv);
        h = mix(h, &r, sizeof r);
        h = mix(h, &line, sizeof line);
        if (r == TE_CSV_BROKEN) h = mix(h, err.message, strlen(err.message));
        for (size_t i = 0; i < te_csv_n_fields(csv); i++) {
            size_t len;
            const char *f = te_csv_field(csv, i, &len);
            if (strlen(f) != len) abort(); /* fields hold no NUL */
            h = mix(h, f, len + 1);
        }
        ++*events;
    }
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t expect = data[0] % 4;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    te_error err;
    te_csv *mem = te_csv_new("fuzz.csv", text, len, &err);
    if (!mem) abort();
    long n_mem, n_stream;
    uint64_t h_mem = read_all(mem, expect, &n_mem);
    te_csv_free(mem);
    FILE *f = len ? fmemopen((void *)text, len, "rb") : NULL;
    if (!f) return 0;
    te_csv *stream = te_csv_open("fuzz.csv", f, &err);
    if (!stream) abort();
    uint64_t h_stream = read_all(stream, expect, &n_stream);
    te_csv_free(stream);
    fclose(f);
    if (h_mem != h_stream || n_mem != n_stream) abort(); /* one reader, one reading */
    return 0;
}
