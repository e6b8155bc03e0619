/* test_output.c - the resumable output (pd_output_*): whole commits, a
 * progress file that names the run and the whole prefix, resumes that cut
 * what a crash left past it, refusals that name what differs, and a full
 * file-size limit that leaves no torn commit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pocketdec.h"

static char dir[64], path[128], progress[160];
static const char *RUN = "input: reviews.csv (10 bytes)\nmodel: m (fnv 1)\nschema: s.yaml\n";

static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    *n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

static void put(const char *p, const char *text, const char *mode)
{
    FILE *f = fopen(p, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_file(const char *p, const char *want)
{
    size_t n = 0;
    char *got = slurp(p, &n);
    assert_non_null(got);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    free(got);
}

static void expect_message(const pd_error *err, const char *needle)
{
    if (!strstr(err->message, needle)) fail_msg("\"%s\" does not mention \"%s\"", err->message, needle);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/pd-output-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.csv", dir);
    snprintf(progress, sizeof progress, "%s.progress", path);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* path opened to continue the run `run`. */
static pd_output *resume_open(const char *run, char **state, pd_error *err)
{
    pd_output_params p = pd_output_default_params();
    p.resume = 1;
    return pd_output_open(path, run, &p, state, err);
}

/* Three commits written; the process "dies" (the output freed without
 * finishing, then a torn line appended as a kill mid-write leaves). */
static void write_three(void)
{
    pd_error err;
    char *state = (char *)1;
    pd_output *o = pd_output_open(path, RUN, NULL, &state, &err);
    assert_non_null(o);
    assert_null(state);
    assert_int_equal(pd_output_commit(o, "1,a\n", 4, "rows=1", &err), PD_OK);
    assert_int_equal(pd_output_commit(o, "", 0, "rows=2", &err), PD_OK); /* a row that writes nothing */
    assert_int_equal(pd_output_commit(o, "3,b\n3,c\n", 8, "rows=3", &err), PD_OK);
    pd_output_free(o);
    put(path, "4,torn", "ab");
}

static void test_resume_cuts_the_torn_tail(void **unused)
{
    (void)unused;
    write_three();
    pd_error err;
    char *state = NULL;
    pd_output *o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_string_equal(state, "rows=3");
    pd_free(state);
    expect_file(path, "1,a\n3,b\n3,c\n");
    assert_int_equal(pd_output_commit(o, "4,d\n", 4, "rows=4", &err), PD_OK);
    assert_int_equal(pd_output_finish(o, &err), PD_OK);
    expect_file(path, "1,a\n3,b\n3,c\n4,d\n");
    size_t n;
    char *text = slurp(progress, &n);
    assert_non_null(strstr(text, "\ncomplete yes\n"));
    assert_non_null(strstr(text, "\nstate rows=4\n"));
    free(text);
    /* a finished run resumed: its last state, nothing cut */
    o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_string_equal(state, "rows=4");
    pd_free(state);
    assert_int_equal(pd_output_finish(o, &err), PD_OK);
    expect_file(path, "1,a\n3,b\n3,c\n4,d\n");
}

/* A commit taken back (an annotation undone): the file cut at once, the
 * progress naming it, the next commit after it, and a resume that agrees. */
static void test_rewind(void **unused)
{
    (void)unused;
    pd_error err;
    char *state = NULL;
    pd_output_params p = pd_output_default_params();
    p.sync_seconds = 0;
    pd_output *o = pd_output_open(path, RUN, &p, &state, &err);
    assert_non_null(o);
    assert_int_equal(pd_output_commit(o, "1,a\n", 4, "rows=1", &err), PD_OK);
    assert_int_equal(pd_output_commit(o, "2,b\n", 4, "rows=2", &err), PD_OK);
    assert_int_equal(pd_output_rewind(o, 9, "rows=1", &err), PD_ERR_ARG); /* past the end */
    assert_int_equal(pd_output_rewind(o, 4, "rows=1", &err), PD_OK);
    expect_file(path, "1,a\n");
    size_t n;
    char *text = slurp(progress, &n);
    assert_non_null(strstr(text, "\nbytes 4\nstate rows=1\nsynced-bytes 4\n"));
    free(text);
    assert_int_equal(pd_output_commit(o, "3,c\n", 4, "rows=2", &err), PD_OK);
    expect_file(path, "1,a\n3,c\n");
    pd_output_free(o);
    o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_string_equal(state, "rows=2");
    pd_free(state);
    assert_int_equal(pd_output_rewind(o, 0, "rows=0", &err), PD_OK);
    pd_output_free(o);
    expect_file(path, "");
}

static void test_replace_without_resume(void **unused)
{
    (void)unused;
    write_three();
    pd_error err;
    char *state = NULL;
    pd_output *o = pd_output_open(path, RUN, NULL, &state, &err);
    assert_non_null(o);
    assert_null(state);
    expect_file(path, "");
    assert_int_equal(pd_output_finish(o, &err), PD_OK);
}

static void test_another_run_refused(void **unused)
{
    (void)unused;
    write_three();
    pd_error err;
    char *state = NULL;
    const char *other = "input: reviews.csv (10 bytes)\nmodel: m (fnv 2)\nthreshold: 0.5\n";
    assert_null(resume_open(other, &state, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    expect_message(&err, "model: was 'm (fnv 1)', now 'm (fnv 2)'");
    expect_message(&err, "schema: was 's.yaml', now none");
    expect_message(&err, "threshold: was none, now '0.5'");
    assert_null(state);
    expect_file(path, "1,a\n3,b\n3,c\n4,torn"); /* refused: nothing touched */
}

static void test_damaged_or_missing_progress(void **unused)
{
    (void)unused;
    pd_error err;
    char *state = NULL;
    /* no progress, no output: a fresh start */
    pd_output *o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_null(state);
    pd_output_free(o);
    /* an output that no resumable run wrote */
    unlink(progress);
    put(path, "1,a\n", "wb");
    assert_null(resume_open(RUN, &state, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    expect_message(&err, "out.csv.progress does not");
    /* a damaged progress file */
    put(progress, "pocketdec output progress 1\nbytes 12x\n", "wb");
    assert_null(resume_open(RUN, &state, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    expect_message(&err, "out.csv.progress: not a progress file");
    expect_file(path, "1,a\n");
}

static void test_output_shorter_than_progress(void **unused)
{
    (void)unused;
    pd_error err;
    char *state = NULL;
    pd_output *o = pd_output_open(path, RUN, NULL, &state, &err);
    assert_non_null(o);
    assert_int_equal(pd_output_commit(o, "1,a\n", 4, "rows=1", &err), PD_OK);
    assert_int_equal(pd_output_finish(o, &err), PD_OK); /* synced: 4 bytes */
    assert_int_equal(truncate(path, 2), 0); /* the output changed by something else */
    assert_null(resume_open(RUN, &state, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    expect_message(&err, "the output has 2 bytes");
}

/* A power loss after the last sync: the output lost its tail; the resume
 * goes back to the synced point the progress file also names. */
static void test_back_to_the_last_sync(void **unused)
{
    (void)unused;
    pd_error err;
    pd_output_params p = pd_output_default_params();
    p.sync_seconds = 1e9; /* no sync after the open */
    char *state = NULL;
    pd_output *o = pd_output_open(path, RUN, &p, &state, &err);
    assert_non_null(o);
    assert_int_equal(pd_output_commit(o, "1,a\n", 4, "rows=1", &err), PD_OK);
    pd_output_free(o);
    assert_int_equal(truncate(path, 0), 0);
    o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_string_equal(state, ""); /* the state at the open's sync: nothing done */
    pd_free(state);
    pd_output_free(o);
}

static void test_bad_arguments(void **unused)
{
    (void)unused;
    pd_error err;
    char *state = NULL;
    assert_null(pd_output_open(NULL, RUN, NULL, &state, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    pd_output_params p = pd_output_default_params();
    p.sync_seconds = -1;
    assert_null(pd_output_open(path, RUN, &p, &state, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    char missing[200];
    snprintf(missing, sizeof missing, "%s/no/such/folder/out.csv", dir);
    assert_null(pd_output_open(missing, RUN, NULL, &state, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    expect_message(&err, "no/such/folder/out.csv: cannot create");
    pd_output *o = pd_output_open(path, RUN, NULL, &state, &err);
    assert_non_null(o);
    assert_int_equal(pd_output_commit(o, "x\n", 2, "two\nlines", &err), PD_ERR_ARG);
    assert_int_equal(pd_output_commit(o, NULL, 2, "rows=1", &err), PD_ERR_ARG);
    assert_int_equal(pd_output_finish(o, &err), PD_OK);
    expect_file(path, "");
    assert_int_equal(pd_output_finish(NULL, &err), PD_ERR_ARG);
    pd_output_free(NULL);
}

/* A file-size limit (as a full disk): the commit that crosses it fails with
 * PD_ERR_IO, the output ends at the last whole commit, further commits are
 * refused, and a resume without the limit continues from there. In a child,
 * whose limit does not outlast it. */
static void test_full_disk(void **unused)
{
    (void)unused;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {3000, 3000};
        if (setrlimit(RLIMIT_FSIZE, &lim)) _exit(10);
        pd_error err;
        char *state = NULL;
        pd_output *o = pd_output_open(path, RUN, NULL, &state, &err);
        if (!o) _exit(11);
        char line[1001];
        memset(line, 'x', 1000);
        line[1000] = '\n';
        for (int i = 0; i < 2; i++)
            if (pd_output_commit(o, line, 1001, i ? "rows=2" : "rows=1", &err)) _exit(12);
        if (pd_output_commit(o, line, 1001, "rows=3", &err) != PD_ERR_IO || !strstr(err.message, "cannot write")) _exit(13);
        if (pd_output_commit(o, "y\n", 2, "rows=4", &err) == PD_OK) _exit(14);
        pd_output_free(o);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 2002);
    pd_error err;
    char *state = NULL;
    pd_output *o = resume_open(RUN, &state, &err);
    assert_non_null(o);
    assert_string_equal(state, "rows=2");
    pd_free(state);
    assert_int_equal(pd_output_finish(o, &err), PD_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resume_cuts_the_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_without_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_run_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_or_missing_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_shorter_than_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_back_to_the_last_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewind, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
