/* cmd_extract.c - `pocketdec extract`: schema-bound extraction over a stream
 * of reviews (Tianchi CSV `id,Reviews` or JSONL {"id","text"}) in constant
 * memory (one review at a time, or a batch of them with --parallel, written
 * in input order), so batch engines can shard a corpus through it. */
#include "cli.h"
#include "reviews.h"

#include <errno.h>
#include <signal.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The input: the reviews' reader (reviews.h). */
typedef cli_reviews reader;
typedef cli_review row;

/* ------------------------------------------------------------ the command */

typedef struct run_state {
    cli_args *a;
    pd_pipeline *pipe;
    const pd_schema *schema;
    pd_record_format fmt;
    FILE *out;         /* stdout, when --output - */
    pd_output *o;      /* else the resumable output file */
    long reviews0;     /* reviews written before a resume */
    bool done;         /* every row read and written */
    long reviews, records, broken, failed, tokens, forward, drafted, accepted, copies_drafted, copies_kept;
    long prompts, draft_passes, draft_drafted, draft_kept; /* texts that ran the model; the draft's figures */
    const char *draft_dir; /* --draft DIR, or NULL */
    bool bar;          /* stderr is a terminal: a bar redrawn in place */
    double every;      /* --progress S: a line every S seconds instead (< 0: none) */
    double t0, shown;  /* when the run started; when progress was last drawn */
} run_state;

static void progress(run_state *s, reader *r);

/* Row w's lines (len bytes, maybe none) written whole: to the resumable
 * output as one commit, with the counts a resume starts from. */
static int emit(run_state *s, const row *w, const char *text, size_t len)
{
    if (!s->o) {
        if ((len && fwrite(text, 1, len, s->out) != len) || fflush(s->out))
            return cli_failf("%s: cannot write: %s", cli_opt(s->a, "--output"), strerror(errno));
        return 0;
    }
    char state[160];
    snprintf(state, sizeof state, "rows=%ld reviews=%ld records=%ld broken=%ld failed=%ld", w->ordinal, s->reviews,
             s->records, s->broken, s->failed);
    pd_error err;
    return pd_output_commit(s->o, text, len, state, &err) ? cli_fail(&err) : 0;
}

/* The counts of a resumed run's state (emit's; empty before the first
 * review); false when it is not one. */
static bool restore(run_state *s, const char *state, long *rows)
{
    int end = 0;
    if (!*state) return true;
    return sscanf(state, "rows=%ld reviews=%ld records=%ld broken=%ld failed=%ld%n", rows, &s->reviews, &s->records,
                  &s->broken, &s->failed, &end) == 5 && state[end] == 0 && *rows >= 0;
}

static int write_result(run_state *s, const row *w, const pd_extraction *x)
{
    char *text = NULL;
    size_t len = 0;
    pd_error err;
    if (pd_extraction_format(s->schema, x, w->id, s->fmt, &text, &len, &err)) {
        fprintf(stderr, "pocketdec: %s:%ld: %s\n", cli_opt(s->a, "--input"), w->line, err.message);
        s->failed++;
        return emit(s, w, NULL, 0);
    }
    char *joined = NULL;
    if (w->extra && s->fmt == PD_FORMAT_JSONL && !(joined = pd_reviews_join_extra(text, len, w->extra, &len))) {
        pd_free(text);
        return cli_failf("out of memory");
    }
    int rc = emit(s, w, joined ? joined : text, len);
    pd_free(joined);
    pd_free(text);
    return rc;
}

/* A broken row: reported, and its id written with no records when it has one. */
static int broken_row(run_state *s, reader *r, row *w)
{
    s->broken++;
    if (!w->keep_id) {
        fprintf(stderr, "pocketdec: %s%s\n", w->problem, r->jsonl ? "" : "; nothing written for it");
        return emit(s, w, NULL, 0);
    }
    /* the id stays in the output with no records, so that none is lost */
    fprintf(stderr, "pocketdec: %s; id %s written with no records\n", w->problem, w->id);
    int rc = write_result(s, w, NULL);
    progress(s, r);
    return rc;
}

/* A review's extraction x (NULL when it failed: err says why), counted and
 * written; takes x. */
static int finish_row(run_state *s, reader *r, const row *w, pd_extraction *x, pd_error *err)
{
    if (!x) {
        /* the id stays in the output (no quadruple), so nothing is lost */
        fprintf(stderr, "pocketdec: %s:%ld: id %s: %s\n", r->name, w->line, w->id, err->message);
        s->failed++;
    }
    s->reviews++;
    if (x) {
        s->records += x->n_records;
        s->tokens += x->stats.n_tokens;
        s->forward += x->stats.n_forward;
        s->drafted += x->stats.n_drafted;
        s->accepted += x->stats.n_accepted;
        s->copies_drafted += x->stats.n_copies_drafted;
        s->copies_kept += x->stats.n_copies_kept;
        s->prompts += x->stats.n_forward > 0;
        s->draft_passes += x->stats.n_draft_passes;
        s->draft_drafted += x->stats.n_draft_drafted;
        s->draft_kept += x->stats.n_draft_kept;
    }
    int rc = write_result(s, w, x);
    pd_extraction_free(x);
    progress(s, r);
    return rc;
}

static int one_row(run_state *s, reader *r, row *w)
{
    if (w->problem[0]) return broken_row(s, r, w);
    pd_extraction *x = NULL;
    pd_error err;
    pd_pipeline_extract(s->pipe, w->text, w->text_len, &x, &err);
    return finish_row(s, r, w, x, &err);
}

/* Reviews in flight (--parallel): rows gathered a batch at a time
 * (pd_pipeline_read_ahead; their id and text copied), extracted together, then
 * written in input order. */
typedef struct batch {
    row *rows;
    char **copies; /* [2 n]: each row's id and text */
    const char **texts;
    size_t *lens;
    pd_extraction **outs;
    pd_error *errs;
    int32_t n, cap;
} batch;

static bool batch_init(batch *b, int32_t cap)
{
    b->cap = cap;
    b->rows = calloc((size_t)cap, sizeof *b->rows);
    b->copies = calloc(2 * (size_t)cap, sizeof *b->copies);
    b->texts = calloc((size_t)cap, sizeof *b->texts);
    b->lens = calloc((size_t)cap, sizeof *b->lens);
    b->outs = calloc((size_t)cap, sizeof *b->outs);
    b->errs = calloc((size_t)cap, sizeof *b->errs);
    return b->rows && b->copies && b->texts && b->lens && b->outs && b->errs;
}

static void batch_clear(batch *b)
{
    for (int32_t i = 0; i < 2 * b->n; i++) {
        free(b->copies[i]);
        b->copies[i] = NULL;
    }
    for (int32_t i = 0; i < b->n; i++) cli_review_release(&b->rows[i]);
    b->n = 0;
}

static void batch_free(batch *b)
{
    batch_clear(b);
    free(b->rows);
    free(b->copies);
    free(b->texts);
    free(b->lens);
    free(b->outs);
    free(b->errs);
}

/* Row w into the batch, its id and text copied (the reader reuses its record). */
static bool batch_add(batch *b, const row *w)
{
    row *c = &b->rows[b->n];
    *c = *w;
    /* the extra moves to the batch (stream() leaves it) */
    char **id = &b->copies[2 * b->n], **text = id + 1;
    b->n++;
    if (w->id && !(*id = strdup(w->id))) return false;
    if (w->text && !(*text = malloc(w->text_len + 1))) return false;
    if (w->text) {
        memcpy(*text, w->text, w->text_len);
        (*text)[w->text_len] = 0;
    }
    c->id = *id;
    c->text = *text;
    return true;
}

/* The batch's reviews extracted together and written in order. */
static int batch_flush(run_state *s, reader *r, batch *b)
{
    int32_t n = 0;
    for (int32_t i = 0; i < b->n; i++)
        if (!b->rows[i].problem[0]) {
            b->texts[n] = b->rows[i].text;
            b->lens[n++] = b->rows[i].text_len;
        }
    pd_error err;
    pd_pipeline_extract_many(s->pipe, b->texts, b->lens, n, b->outs, b->errs, &err);
    int rc = 0;
    for (int32_t i = 0, k = 0; i < b->n; i++) {
        row *w = &b->rows[i];
        if (w->problem[0]) {
            if (!rc) rc = broken_row(s, r, w);
            continue;
        }
        if (rc) pd_extraction_free(b->outs[k]);
        else rc = finish_row(s, r, w, b->outs[k], &b->errs[k]);
        k++;
    }
    batch_clear(b);
    return rc;
}

/* The share of the input read when it is a regular file (its size is
 * known), a count alone otherwise: as a bar redrawn in place on a terminal,
 * as one line for --progress (logs and pipes keep every line). */
static void draw_progress(const run_state *s, reader *r, double elapsed)
{
    long pos, size;
    pd_reviews_position(r->h, &pos, &size);
    int pct = -1;
    if (size > 0 && pos >= 0) pct = (int)(100.0 * (double)pos / (double)size);
    if (s->bar) {
        char bar[33] = "";
        for (int i = 0; pct >= 0 && i < 32; i++) bar[i] = i < pct * 32 / 100 ? '#' : '.';
        fprintf(stderr, pct >= 0 ? "\r[%s] %3d%% " : "\r", bar, pct);
    } else if (pct >= 0) {
        fprintf(stderr, "pocketdec extract: %3d%% of %s, ", pct, r->name);
    } else {
        fprintf(stderr, "pocketdec extract: ");
    }
    fprintf(stderr, "%ld reviews, %ld records, %.1f reviews/s%s", s->reviews, s->records,
            (double)(s->reviews - s->reviews0) / (elapsed + 1e-9), s->bar ? " " : "\n");
}

/* Progress after a row is written (a batch's rows as the batch is written). */
static void progress(run_state *s, reader *r)
{
    double now = s->bar || s->every >= 0 ? cli_seconds() : 0;
    if (s->bar ? (s->reviews + s->broken) % 8 == 0 : s->every >= 0 && now - s->shown >= s->every) {
        draw_progress(s, r, now - s->t0);
        s->shown = now;
    }
}

/* A resumed run: the rows its output holds read again, not extracted. */
static int skip_rows(reader *r, long rows)
{
    row w;
    while (r->rows < rows && cli_reviews_next(r, &w)) {
        cli_review_release(&w);
        if (r->failed) return cli_reviews_fail(r);
    }
    if (r->rows < rows)
        return cli_failf("%s: cannot resume: the input has %ld rows, fewer than the %ld the output holds", r->name, r->rows,
                         rows);
    return 0;
}

static int stream(run_state *s, reader *r)
{
    double t0 = s->t0 = s->shown = cli_seconds();
    row w;
    int rc = 0;
    batch b = {0};
    bool many = pd_pipeline_read_ahead(s->pipe) > 1;
    if (many && !batch_init(&b, pd_pipeline_read_ahead(s->pipe))) rc = cli_failf("out of memory");
    while (rc == 0 && cli_reviews_next(r, &w)) {
        if (r->failed) {
            cli_review_release(&w);
            if (many) rc = batch_flush(s, r, &b); /* what was read before is still written */
            batch_free(&b);
            return rc ? rc : cli_reviews_fail(r);
        }
        if (many && (!w.header || w.problem[0])) {
            if (!batch_add(&b, &w)) rc = cli_failf("out of memory");
            else if (b.n == b.cap) rc = batch_flush(s, r, &b);
            w.extra = NULL;
        } else if (!w.header || w.problem[0]) {
            rc = one_row(s, r, &w);
        }
        cli_review_release(&w);
    }
    if (many && rc == 0) rc = batch_flush(s, r, &b);
    batch_free(&b);
    if (s->bar) fprintf(stderr, "\n");
    if (rc) return rc;
    if (s->reviews == 0 && s->broken == 0)
        return cli_failf("%s: no reviews found (the input is empty%s)", r->name,
                         r->jsonl ? " or holds only blank lines" : ", or holds only a header");
    s->done = true;
    double dt = cli_seconds() - t0;
    if (pd_pipeline_get_path(s->pipe) == PD_PIPELINE_TAG) /* one forward pass a review, nothing generated */
        fprintf(stderr, "pocketdec extract: %ld reviews, %ld records, %ld broken rows, %ld failed in %.2f s (%.1f reviews/s)\n",
                s->reviews, s->records, s->broken, s->failed, dt, (double)(s->reviews - s->reviews0) / (dt > 0 ? dt : 1));
    else
        fprintf(stderr,
                "pocketdec extract: %ld reviews, %ld records, %ld broken rows, %ld failed, %ld tokens in %.2f s (%.1f tok/s); "
                "%ld forward passes, %ld of %ld drafted tokens kept (%.1f%%; span copies: %ld of %ld)\n",
                s->reviews, s->records, s->broken, s->failed, s->tokens, dt, (double)s->tokens / (dt > 0 ? dt : 1),
                s->forward, s->accepted, s->drafted, s->drafted ? 100.0 * (double)s->accepted / (double)s->drafted : 0.0,
                s->copies_kept, s->copies_drafted);
    if (s->draft_dir) /* a second line: the draft's figures (the passes after the prompts verify drafts) */
        fprintf(stderr, "pocketdec extract: draft %s: %ld draft passes, %ld of %ld drafted tokens kept; %.2f tokens a pass "
                "after the prompts\n", s->draft_dir, s->draft_passes, s->draft_kept, s->draft_drafted,
                (double)s->tokens / (double)(s->forward - s->prompts > 0 ? s->forward - s->prompts : 1));
    return (s->broken || s->failed) ? 1 : 0;
}

static int open_files(cli_args *a, reader *r, FILE **out)
{
    /* a CSV's other columns carried into JSONL lines (a JSONL input's other keys are not, as Python's
     * Extractor.extract_file writes the same lines) */
    r->keep_extra = cli_opt(a, "--format") && strcmp(cli_opt(a, "--format"), "jsonl") == 0;
    int rc = cli_reviews_open(a, r, cli_opt(a, "--input"), cli_opt(a, "--input-format"));
    if (rc) return rc;
    if (strcmp(cli_opt(a, "--output"), "-") == 0) *out = stdout;
    return 0;
}

/* The options that do not change the output: a resume may change them. */
static const char *const not_the_run[] = {"--output", "--threads", "--parallel", "--progress", "--resume", "--sync", NULL};

/* --output FILE as a resumable output (docs/reliability.md): replaced, or
 * with --resume continued, its counts and the rows to skip from *rows. */
static int open_output(run_state *s, long *rows)
{
    cli_args *a = s->a;
    pd_output_params op = pd_output_default_params();
    op.resume = cli_flag(a, "--resume");
    if (cli_flag(a, "--sync")) op.sync_seconds = 0;
    char *run = cli_run_id(a, not_the_run), *state = NULL;
    if (!run) return cli_failf("out of memory");
    pd_error err;
    s->o = pd_output_open(cli_opt(a, "--output"), run, &op, &state, &err);
    free(run);
    if (!s->o) return cli_fail(&err);
    int rc = 0;
    if (state && !restore(s, state, rows))
        rc = cli_failf("%s.progress: cannot resume: its state '%s' is not one of pocketdec extract's", cli_opt(a, "--output"),
                       state);
    else if (state)
        fprintf(stderr, "pocketdec extract: resuming %s after %ld rows of %s (%ld reviews written)\n", cli_opt(a, "--output"),
                *rows, cli_opt(a, "--input"), s->reviews);
    s->reviews0 = s->reviews;
    pd_free(state);
    return rc;
}

int cmd_extract(cli_args *a)
{
    run_state s = {.a = a};
    pd_pipeline_params pp = pd_pipeline_default_params();
    const char *schema_path = cli_opt(a, "--schema"), *fmt = cli_opt(a, "--format");
    int32_t seed;
    double temp;
    const char *draft_dir = cli_opt(a, "--draft");
    int rc = cli_float_opt(a, "--progress", -1.0, 0.0, 86400.0, &s.every);
    if (rc) return rc;
    if (!schema_path) return cli_usage(a, "--schema FILE is required");
    if (!cli_opt(a, "--input") || !cli_opt(a, "--output"))
        return cli_usage(a, "--input FILE and --output FILE are required ('-' for stdin/stdout)");
    if (fmt && strcmp(fmt, "tianchi") && strcmp(fmt, "jsonl")) return cli_usage(a, "--format must be tianchi or jsonl");
    if ((cli_flag(a, "--resume") || cli_flag(a, "--sync")) &&
        (strcmp(cli_opt(a, "--output"), "-") == 0 || strcmp(cli_opt(a, "--input"), "-") == 0))
        return cli_usage(a, "--resume and --sync need --input FILE and --output FILE (a stream cannot be read again)");
    /* a file-size limit (RLIMIT_FSIZE) then fails the write with EFBIG, as a full disk does, not the process */
    signal(SIGXFSZ, SIG_IGN);
    s.fmt = fmt && strcmp(fmt, "jsonl") == 0 ? PD_FORMAT_JSONL : PD_FORMAT_TIANCHI;
    if ((rc = cli_threads_opt(a, &pp.n_threads)) ||
        (rc = cli_int_opt(a, "--max-records", 0, 0, 100000, &pp.extract.max_records)) ||
        (rc = cli_int_opt(a, "--max-tokens", 0, 0, 1000000, &pp.extract.max_tokens)) ||
        (rc = cli_int_opt(a, "--speculate", PD_SPECULATE_DEFAULT, 0, PD_SPECULATE_MAX, &pp.extract.speculate)) ||
        (rc = cli_int_opt(a, "--parallel", 0, 1, PD_PIPELINE_PARALLEL_MAX, &pp.parallel)) ||
        (rc = cli_int_opt(a, "--seed", 0, 0, INT32_MAX, &seed)) || (rc = cli_pipeline_opts(a, &pp)) ||
        (rc = cli_float_opt(a, "--temperature", 0.0, 0.0, 100.0, &temp)) ||
        (rc = cli_int_opt(a, "--draft-block", 0, 2, PD_DRAFTER_BLOCK_MAX, &pp.draft_block)))
        return rc;
    if (pp.draft_block && !draft_dir) return cli_usage(a, "--draft-block needs --draft DIR");
    s.draft_dir = draft_dir;
    pp.extract.sampler.temperature = (float)temp;
    pp.extract.sampler.seed = (uint64_t)seed;
    pd_error err;
    pd_schema *schema = pd_schema_load(schema_path, &err);
    if (!schema) return cli_fail(&err);
    s.schema = schema;
    cli_model m;
    reader r = {0};
    FILE *out = NULL;
    pd_draft *draft = NULL;
    if ((rc = cli_model_open(a, &m, true))) goto done_schema;
    if ((rc = cli_draft_open(a, m.model, &draft))) goto done;
    pp.draft = draft;
    if (!(s.pipe = pd_pipeline_new(m.model, schema, m.head, &pp, &err))) {
        rc = cli_fail(&err);
        goto done;
    }
    long rows = 0;
    if ((rc = open_files(a, &r, &out))) goto done;
    s.out = out;
    if (!out && (rc = open_output(&s, &rows)) == 0) rc = skip_rows(&r, rows);
    s.bar = s.every < 0 && isatty(STDERR_FILENO);
    if (rc == 0) rc = stream(&s, &r);
    cli_reviews_close(&r);
    if (s.o && s.done) {
        int fin = pd_output_finish(s.o, &err) ? cli_fail(&err) : 0;
        rc = rc ? rc : fin;
    } else {
        pd_output_free(s.o); /* the progress says what is whole, for --resume */
    }
done:
    cli_reviews_close(&r);
    pd_pipeline_free(s.pipe);
    pd_draft_free(draft);
    cli_model_close(&m);
done_schema:
    pd_schema_free(schema);
    return rc;
}
