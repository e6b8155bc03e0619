/* output.c - a crash-safe, resumable output file (pocketdec_runtime.h,
 * "Resumable output"): whole commits only, and a progress file beside it
 * that says how far the output is whole and what run wrote it.
 *
 * Why the order of the steps: a commit's bytes are written (all of them, or
 * the file is cut back to the last commit), then the progress file is
 * replaced by rename, so that at any instant the progress file names a
 * prefix of the output made of whole commits. A crash leaves at most bytes
 * past that prefix (a commit not yet recorded, or one torn), which a resume
 * cuts. A process crash keeps everything written; a power loss keeps what
 * was fsync'ed, so the progress file also carries the last synced point, and
 * a resume falls back to it when the output lost its tail. */
#include "pd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "pocketdec output progress 1"
#define PROGRESS_SUFFIX ".progress"
#define MAX_RUN ((size_t)1 << 20)  /* a run's description: options and file names, far below this */
#define MAX_STATE ((size_t)4096)
#define PROGRESS_EVERY 0.05        /* seconds between progress updates that are not syncs */

struct pd_output {
    int fd;
    bool failed;                    /* a write failed: no more commits */
    char *path, *progress, *tmp, *run;
    char *state, *synced_state;
    int64_t bytes, synced_bytes;    /* the whole prefix; the part of it last fsync'ed */
    int64_t recorded;               /* bytes the progress file on disk names */
    double sync_seconds, last_sync, last_progress;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

pd_output_params pd_output_default_params(void)
{
    return (pd_output_params){.resume = false, .sync_seconds = PD_OUTPUT_SYNC_SECONDS};
}

static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

static bool one_line(const char *s)
{
    return !strchr(s, '\n') && !strchr(s, '\r');
}

/* fsync the folder holding path, so that a rename in it is durable. */
static void sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse fsync on folders */
        close(fd);
    }
    free(dir);
}

static pd_status write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return PD_ERR_IO;
        if (w == 0) {
            errno = ENOSPC;
            return PD_ERR_IO;
        }
        p += w;
        n -= (size_t)w;
    }
    return PD_OK;
}

/* The progress file replaced (written aside, then renamed over it); durable
 * when sync. */
static pd_status write_progress(pd_output *o, bool complete, bool sync, pd_error *err)
{
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return pdi_set_error(err, PD_ERR_IO, "%s: cannot create: %s", o->tmp, strerror(errno));
    size_t cap = strlen(o->run) + strlen(o->state ? o->state : "") + strlen(o->synced_state ? o->synced_state : "") + 256;
    char *text = malloc(cap);
    if (!text) {
        close(fd);
        unlink(o->tmp);
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", o->progress);
    }
    int n = snprintf(text, cap, MAGIC "\nbytes %lld\nstate %s\nsynced-bytes %lld\nsynced-state %s\ncomplete %s\nrun\n%s",
                     (long long)o->bytes, o->state ? o->state : "", (long long)o->synced_bytes,
                     o->synced_state ? o->synced_state : "", complete ? "yes" : "no", o->run);
    pd_status st = write_all(fd, text, (size_t)n);
    int saved = errno;
    free(text);
    if (st == PD_OK && sync && fsync(fd) != 0) {
        st = PD_ERR_IO;
        saved = errno;
    }
    if (close(fd) != 0 && st == PD_OK) {
        st = PD_ERR_IO;
        saved = errno;
    }
    if (st == PD_OK && rename(o->tmp, o->progress) != 0) {
        st = PD_ERR_IO;
        saved = errno;
    }
    if (st != PD_OK) {
        unlink(o->tmp);
        return pdi_set_error(err, PD_ERR_IO, "%s: cannot write: %s", o->progress, strerror(saved));
    }
    if (sync) sync_folder(o->progress);
    o->recorded = o->bytes;
    o->last_progress = now_seconds();
    return PD_OK;
}

static pd_status set_state(char **slot, const char *state)
{
    char *s = strdup(state ? state : "");
    if (!s) return PD_ERR_NOMEM;
    free(*slot);
    *slot = s;
    return PD_OK;
}

/* The output's bytes made durable, then the progress file naming them. */
static pd_status sync_now(pd_output *o, bool complete, pd_error *err)
{
    if (fsync(o->fd) != 0 && errno != EINVAL)
        return pdi_set_error(err, PD_ERR_IO, "%s: cannot sync: %s", o->path, strerror(errno));
    o->synced_bytes = o->bytes;
    if (set_state(&o->synced_state, o->state)) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    o->last_sync = now_seconds();
    return write_progress(o, complete, true, err);
}

/* ------------------------------------------------------------ resuming */

typedef struct progress {
    long long bytes, synced_bytes;
    char *state, *synced_state;
    const char *run;
} progress;

/* The line after "key " at *p, NUL-terminated in place; *p moves past it. */
static char *field(char **p, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(*p, key, k) != 0 || (*p)[k] != ' ') return NULL;
    char *v = *p + k + 1, *nl = strchr(v, '\n');
    if (!nl) return NULL;
    *nl = 0;
    *p = nl + 1;
    return v;
}

static bool parse_count(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : -1;
    if (!s || end == s || *end || errno || v < 0) return false;
    *out = v;
    return true;
}

/* text (NUL-terminated, modified in place) as a progress file. */
static bool parse_progress(char *text, progress *pr)
{
    char *p = text;
    size_t m = strlen(MAGIC);
    if (strncmp(p, MAGIC "\n", m + 1) != 0) return false;
    p += m + 1;
    char *complete;
    if (!parse_count(field(&p, "bytes"), &pr->bytes) || !(pr->state = field(&p, "state")) ||
        !parse_count(field(&p, "synced-bytes"), &pr->synced_bytes) || !(pr->synced_state = field(&p, "synced-state")) ||
        !(complete = field(&p, "complete")) || strncmp(p, "run\n", 4) != 0)
        return false;
    pr->run = p + 4;
    return pr->synced_bytes <= pr->bytes;
}

/* The value of the run line `key: value` (len into *n), or NULL. */
static const char *run_value(const char *run, const char *key, size_t k, size_t *n)
{
    for (const char *l = run; *l;) {
        const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
        if ((size_t)(end - l) > k && strncmp(l, key, k) == 0 && l[k] == ':') {
            const char *v = l + k + 1;
            while (v < end && *v == ' ') v++;
            *n = (size_t)(end - v);
            return v;
        }
        l = nl ? nl + 1 : end;
    }
    return NULL;
}

/* Appends to msg what differs between the recorded run `was` and `now`, a
 * key at a time ("schema: was X, now Y"); false when nothing does. */
static bool run_differs(const char *was, const char *now, char *msg, size_t cap)
{
    bool differs = false;
    size_t used = strlen(msg);
    for (int pass = 0; pass < 2; pass++) {
        const char *a = pass ? now : was, *b = pass ? was : now;
        for (const char *l = a; *l;) {
            const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l), *colon = memchr(l, ':', (size_t)(end - l));
            size_t k = colon ? (size_t)(colon - l) : (size_t)(end - l), na = 0, nb = 0;
            const char *va = run_value(a, l, k, &na), *vb = run_value(b, l, k, &nb);
            bool same = vb && va && na == nb && memcmp(va, vb, na) == 0;
            if (!same && (pass == 0 || !vb)) { /* a key of both runs once, from the first pass */
                const char *wv = pass ? vb : va, *nv = pass ? va : vb;
                size_t wn = pass ? nb : na, nn = pass ? na : nb;
                int w = snprintf(msg + used, used < cap ? cap - used : 0, "%s%.*s: was %s%.*s%s, now %s%.*s%s",
                                 differs ? "; " : "", (int)k, l, wv ? "'" : "", (int)(wv ? wn : 4), wv ? wv : "none",
                                 wv ? "'" : "", nv ? "'" : "", (int)(nv ? nn : 4), nv ? nv : "none", nv ? "'" : "");
                if (w > 0) used += (size_t)w;
                differs = true;
            }
            l = nl ? nl + 1 : end;
        }
    }
    return differs;
}

static char *read_small_file(const char *path, size_t max, size_t *len, int *saved)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *saved = errno;
        return NULL;
    }
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    *saved = buf ? (ferror(f) ? EIO : 0) : ENOMEM;
    fclose(f);
    if (!buf || *saved) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Continue the run of o->progress: checks, the output cut to its last whole
 * commit, and that commit's state into *state. */
static pd_status resume(pd_output *o, char **state, pd_error *err)
{
    struct stat st;
    bool have_output = stat(o->path, &st) == 0;
    int saved = 0;
    size_t len = 0;
    char *text = read_small_file(o->progress, MAX_RUN + 2 * MAX_STATE + 256, &len, &saved);
    if (!text && saved == ENOENT) {
        if (have_output && st.st_size > 0)
            return pdi_set_error(err, PD_ERR_IO,
                                 "%s: cannot resume: the output exists but %s does not (not written by a run of this "
                                 "version, or moved); remove the output or run without resume", o->path, o->progress);
        return PD_OK; /* nothing to continue: a fresh start */
    }
    if (!text) return pdi_set_error(err, PD_ERR_IO, "%s: cannot read: %s", o->progress, strerror(saved));
    progress pr = {0};
    if (len > MAX_RUN + 2 * MAX_STATE || memchr(text, 0, len) || !parse_progress(text, &pr)) {
        free(text);
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: not a progress file of pocketdec (damaged?); run without resume to "
                             "start again", o->progress);
    }
    char msg[PD_ERROR_MESSAGE_SIZE];
    snprintf(msg, sizeof msg, "%s: cannot resume: another run wrote it: ", o->progress);
    if (run_differs(pr.run, o->run, msg, sizeof msg)) {
        free(text);
        return pdi_set_error(err, PD_ERR_ARG, "%s", msg);
    }
    long long size = have_output ? (long long)st.st_size : 0;
    const char *use = pr.state;
    long long bytes = pr.bytes;
    if (size < bytes) { /* the tail after the last sync lost (a power loss) */
        use = pr.synced_state;
        bytes = pr.synced_bytes;
    }
    if (size < bytes) {
        free(text);
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: cannot resume: the output has %lld bytes, fewer than the %lld its "
                             "progress file last synced (changed by something else?); run without resume to start again",
                             o->path, size, bytes);
    }
    pd_status s = PD_OK;
    if (ftruncate(o->fd, (off_t)bytes) != 0 || lseek(o->fd, 0, SEEK_END) < 0)
        s = pdi_set_error(err, PD_ERR_IO, "%s: cannot cut the output to its last whole record: %s", o->path, strerror(errno));
    else if (set_state(&o->state, use) || set_state(&o->synced_state, use) || !(*state = strdup(use)))
        s = pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    o->bytes = o->synced_bytes = bytes;
    free(text);
    return s;
}

/* ------------------------------------------------------------ the API */

void pd_output_free(pd_output *o)
{
    if (!o) return;
    if (o->fd >= 0) {
        if (o->recorded != o->bytes) {
            pd_error ignored;
            write_progress(o, false, false, &ignored); /* what is whole, for a later resume */
        }
        close(o->fd);
    }
    free(o->path);
    free(o->progress);
    free(o->tmp);
    free(o->run);
    free(o->state);
    free(o->synced_state);
    free(o);
}

pd_output *pd_output_open(const char *path, const char *run, const pd_output_params *params, char **state,
                          pd_error *err)
{
    pd_output_params p = params ? *params : pd_output_default_params();
    if (state) *state = NULL;
    if (!path || !*path || !run || !state) {
        pdi_set_error(err, PD_ERR_ARG, "pd_output_open: path, run and state are required");
        return NULL;
    }
    if (strlen(run) > MAX_RUN || strlen(path) > 4096) {
        pdi_set_error(err, PD_ERR_LIMIT, "%s: the run's description or the path is too long", path);
        return NULL;
    }
    if (!(p.sync_seconds >= 0)) {
        pdi_set_error(err, PD_ERR_ARG, "%s: sync_seconds must be 0 or more", path);
        return NULL;
    }
    pd_output *o = calloc(1, sizeof *o);
    if (o) {
        o->fd = -1;
        o->path = strdup(path);
        o->progress = concat(path, PROGRESS_SUFFIX);
        o->tmp = concat(path, PROGRESS_SUFFIX ".tmp");
        o->run = strdup(run);
        o->sync_seconds = p.sync_seconds;
        o->recorded = -1;
    }
    if (!o || !o->path || !o->progress || !o->tmp || !o->run) {
        pd_output_free(o);
        pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    o->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (p.resume ? 0 : O_TRUNC), 0644);
    if (o->fd < 0) {
        pdi_set_error(err, PD_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        pd_output_free(o);
        return NULL;
    }
    unlink(o->tmp); /* a progress update that a crash cut short */
    pd_status s = p.resume ? resume(o, state, err) : PD_OK;
    if (s == PD_OK && !*state && (ftruncate(o->fd, 0) != 0 || lseek(o->fd, 0, SEEK_SET) < 0))
        s = pdi_set_error(err, PD_ERR_IO, "%s: cannot empty: %s", path, strerror(errno));
    if (s == PD_OK) s = write_progress(o, false, false, err);
    o->last_sync = now_seconds();
    if (s != PD_OK) {
        close(o->fd);
        o->fd = -1; /* the files as they were: nothing more written */
        pd_free(*state);
        *state = NULL;
        pd_output_free(o);
        return NULL;
    }
    return o;
}

/* The progress file could not follow: the output cut to what it names, so
 * that the two agree, and closed (a resume continues from there). */
static pd_status fail_output(pd_output *o, pd_status s)
{
    if (o->recorded >= 0 && ftruncate(o->fd, (off_t)o->recorded) == 0) o->bytes = o->recorded;
    close(o->fd);
    o->fd = -1;
    o->failed = true;
    return s;
}

pd_status pd_output_commit(pd_output *o, const void *bytes, size_t len, const char *state, pd_error *err)
{
    if (!o || (len && !bytes) || !state) return pdi_set_error(err, PD_ERR_ARG, "pd_output_commit: NULL argument");
    if (!one_line(state) || strlen(state) > MAX_STATE)
        return pdi_set_error(err, PD_ERR_ARG, "%s: a commit's state must be one line of at most %zu bytes", o->path,
                             MAX_STATE);
    if (o->failed) return pdi_set_error(err, PD_ERR_ARG, "%s: the output failed before; resume it", o->path);
    if (write_all(o->fd, bytes, len) != PD_OK) {
        int saved = errno;
        /* no torn record: the output ends at its last whole commit */
        o->failed = true;
        if (ftruncate(o->fd, (off_t)o->bytes) != 0) {
            close(o->fd);
            o->fd = -1;
        }
        return pdi_set_error(err, PD_ERR_IO, "%s: cannot write: %s (the output ends at its last whole record: resume it "
                             "when the cause is gone)", o->path, strerror(saved));
    }
    o->bytes += (int64_t)len;
    if (set_state(&o->state, state)) return fail_output(o, pdi_set_error(err, PD_ERR_NOMEM, "out of memory"));
    double t = now_seconds();
    pd_status s = PD_OK;
    if (t - o->last_sync >= o->sync_seconds)
        s = sync_now(o, false, err);
    else if (t - o->last_progress >= PROGRESS_EVERY)
        s = write_progress(o, false, false, err);
    return s == PD_OK ? PD_OK : fail_output(o, s);
}

pd_status pd_output_rewind(pd_output *o, int64_t bytes, const char *state, pd_error *err)
{
    if (!o || !state || !one_line(state) || strlen(state) > MAX_STATE)
        return pdi_set_error(err, PD_ERR_ARG, "pd_output_rewind: no output, or a state that is not one short line");
    if (o->failed) return pdi_set_error(err, PD_ERR_ARG, "%s: the output failed before; resume it", o->path);
    if (bytes < 0 || bytes > o->bytes)
        return pdi_set_error(err, PD_ERR_ARG, "%s: cannot take back to byte %lld of %lld", o->path, (long long)bytes,
                             (long long)o->bytes);
    if (set_state(&o->state, state)) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    o->bytes = bytes;
    if (o->synced_bytes > bytes) {
        o->synced_bytes = bytes;
        if (set_state(&o->synced_state, state)) return fail_output(o, pdi_set_error(err, PD_ERR_NOMEM, "out of memory"));
    }
    pd_status s = write_progress(o, false, true, err); /* first: it names the shorter output */
    if (s == PD_OK && (ftruncate(o->fd, (off_t)bytes) != 0 || lseek(o->fd, (off_t)bytes, SEEK_SET) < 0 ||
                       (fsync(o->fd) != 0 && errno != EINVAL)))
        s = pdi_set_error(err, PD_ERR_IO, "%s: cannot cut the output: %s", o->path, strerror(errno));
    if (s == PD_OK) {
        o->synced_bytes = bytes;
        s = set_state(&o->synced_state, state) ? pdi_set_error(err, PD_ERR_NOMEM, "out of memory") : PD_OK;
    }
    return s == PD_OK ? PD_OK : fail_output(o, s);
}

pd_status pd_output_finish(pd_output *o, pd_error *err)
{
    if (!o) return pdi_set_error(err, PD_ERR_ARG, "pd_output_finish: NULL output");
    pd_status s = o->failed ? pdi_set_error(err, PD_ERR_IO, "%s: the output failed before; resume it", o->path)
                            : sync_now(o, true, err);
    if (s == PD_OK) {
        if (close(o->fd) != 0) s = pdi_set_error(err, PD_ERR_IO, "%s: cannot write: %s", o->path, strerror(errno));
        o->fd = -1;
    }
    pd_output_free(o);
    return s;
}
