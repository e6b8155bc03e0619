/* run_id.c - what makes a command's output what it is, as the text a
 * resumable output records (pd_output_open's run): the version, then each
 * option a line, "key: value", the files and folders it names identified by
 * their real path and contents, so that a resume with another model, schema,
 * input or option is refused naming what differs. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WHOLE_FILE ((off_t)8 << 20) /* files up to this size are hashed whole */
#define EDGE ((off_t)64 << 10)      /* of a larger one: size, mtime, its first and last 64 KiB */
#define MAX_DEPTH 4

typedef struct text {
    char *s;
    size_t len, cap;
    bool failed;
} text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->failed || n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = 2 * (t->len + (size_t)n + 1);
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* FNV-1a, 64 bits: an identity of contents, not a defence against forgery. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_range(uint64_t h, FILE *f, off_t from, off_t n)
{
    char buf[65536];
    if (fseeko(f, from, SEEK_SET) != 0) return h ^ 1;
    while (n > 0) {
        size_t got = fread(buf, 1, (size_t)(n < (off_t)sizeof buf ? n : (off_t)sizeof buf), f);
        if (got == 0) return h ^ 1;
        h = fnv(h, buf, got);
        n -= (off_t)got;
    }
    return h;
}

/* A file's identity into h: its contents, or for a large one its size,
 * modification time and edges. */
static uint64_t hash_file(uint64_t h, const char *path, const struct stat *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fnv(h, "unreadable", 10);
    if (st->st_size <= WHOLE_FILE) {
        h = hash_range(h, f, 0, st->st_size);
    } else {
        long long stamp[3] = {(long long)st->st_size, (long long)st->st_mtim.tv_sec, (long long)st->st_mtim.tv_nsec};
        h = fnv(h, stamp, sizeof stamp);
        h = hash_range(hash_range(h, f, 0, EDGE), f, st->st_size - EDGE, EDGE);
    }
    fclose(f);
    return h;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or a folder's files (sorted by name, to MAX_DEPTH), into h. */
static uint64_t hash_path(uint64_t h, const char *path, int depth, long *files, long long *bytes)
{
    struct stat st;
    if (stat(path, &st) != 0) return fnv(h, "missing", 7);
    if (S_ISREG(st.st_mode)) {
        (*files)++;
        *bytes += (long long)st.st_size;
        return hash_file(h, path, &st);
    }
    if (!S_ISDIR(st.st_mode) || depth >= MAX_DEPTH) return h;
    DIR *d = opendir(path);
    if (!d) return fnv(h, "unreadable", 10);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .. and hidden files (editors' swap files) */
        if (n == cap) {
            char **more = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!more) break;
            names = more;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(path) + strlen(names[i]) + 2;
        char *child = malloc(len);
        if (child) {
            snprintf(child, len, "%s/%s", path, names[i]);
            h = fnv(fnv(h, names[i], strlen(names[i]) + 1), "", 0);
            h = hash_path(h, child, depth + 1, files, bytes);
        }
        free(child);
        free(names[i]);
    }
    free(names);
    return h;
}

/* An option's value as a line: a path that exists by its real path and
 * contents, anything else as given. */
static void add_value(text *t, const char *key, const char *value)
{
    char real[PATH_MAX];
    struct stat st;
    if (stat(value, &st) == 0 && realpath(value, real)) {
        long files = 0;
        long long bytes = 0;
        uint64_t h = hash_path(0xcbf29ce484222325ull, real, 0, &files, &bytes);
        add(t, "%s: %s (%ld file%s, %lld bytes, fnv1a64 %016llx)\n", key, real, files, files == 1 ? "" : "s", bytes,
            (unsigned long long)h);
    } else {
        add(t, "%s: %s\n", key, value);
    }
}

static bool excluded(const char *opt, const char *const *skip)
{
    for (size_t i = 0; skip[i]; i++)
        if (strcmp(opt, skip[i]) == 0) return true;
    return false;
}

char *cli_run_id(cli_args *a, const char *const *skip)
{
    text t = {0};
    add(&t, "pocketdec: %s\ncommand: %s\n", PD_VERSION, a->command);
    for (int i = 0; i < a->argc; i++) {
        const char *opt = a->argv[i];
        if (strncmp(opt, "--", 2) != 0) continue;
        bool has_value = i + 1 < a->argc && strncmp(a->argv[i + 1], "--", 2) != 0;
        const char *value = has_value ? a->argv[++i] : "(set)";
        if (excluded(opt, skip)) continue;
        int seen = 0; /* a repeated option (--adapter): each by its place */
        for (int j = 0; j < i - (has_value ? 1 : 0); j++) seen += strcmp(a->argv[j], opt) == 0;
        char key[96];
        snprintf(key, sizeof key, seen ? "%s#%d" : "%s", opt + 2, seen + 1);
        add_value(&t, key, value);
    }
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s ? t.s : strdup("");
}
