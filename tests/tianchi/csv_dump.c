/* csv_dump.c - what the CSV reader (te_csv.h) reads from a file, as JSON
 * lines, for tests that compare it with other readers (Python's csv).
 *
 * usage: csv_dump [--stream] [--fields N] FILE
 * One line per event: {"line": N, "fields": [...]} for a row,
 * {"broken": "FILE:LINE: what", "fields": [...]} for a broken record. The file
 * is read whole into a buffer, or with --stream through the stream reader. */
#include "te_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int print_event(te_csv *csv, te_csv_result r, const te_error *err)
{
    json_t *fields = json_array();
    for (size_t i = 0; i < te_csv_n_fields(csv); i++) {
        size_t len;
        const char *f = te_csv_field(csv, i, &len);
        json_array_append_new(fields, json_stringn(f, len));
    }
    json_t *o = r == TE_CSV_ROW ? json_pack("{s:I,s:o}", "line", (json_int_t)te_csv_line(csv), "fields", fields)
                                : json_pack("{s:s,s:o}", "broken", err->message, "fields", fields);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (!text)
        return -1;
    puts(text);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    int stream = 0;
    size_t expect = 0;
    int i = 1;
    for (; i < argc - 1; i++) {
        if (strcmp(argv[i], "--stream") == 0)
            stream = 1;
        else if (strcmp(argv[i], "--fields") == 0 && i + 2 < argc)
            expect = (size_t)strtoul(argv[++i], NULL, 10);
        else
            break;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: csv_dump [--stream] [--fields N] FILE\n");
        return 2;
    }
    const char *path = argv[i];
    te_error err = {TE_OK, ""};
    char *data = NULL;
    size_t len = 0;
    FILE *f = NULL;
    te_csv *csv;
    if (stream) {
        f = fopen(path, "rb");
        csv = f ? te_csv_open(path, f, &err) : NULL;
    } else {
        csv = te_read_file(path, &data, &len, &err) == TE_OK ? te_csv_new(path, data, len, &err) : NULL;
    }
    int rc = 0;
    if (!csv) {
        fprintf(stderr, "csv_dump: %s\n", f || data ? err.message : path);
        rc = 1;
    } else {
        te_csv_expect_fields(csv, expect);
        te_csv_result r;
        while (rc == 0 && (r = te_csv_next(csv, &err)) != TE_CSV_END) {
            if (r == TE_CSV_FAIL || print_event(csv, r, &err) != 0) {
                fprintf(stderr, "csv_dump: %s\n", r == TE_CSV_FAIL ? err.message : "out of memory");
                rc = 1;
            }
        }
    }
    te_csv_free(csv);
    if (f)
        fclose(f);
    free(data);
    return rc;
}
