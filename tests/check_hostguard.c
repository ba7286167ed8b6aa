/* The tracer never kills or changes the program it watches, and never
 * loses events without saying so: a trace that reaches RLIMIT_FSIZE gets
 * one warning and is marked incomplete while the program goes on (its own
 * writes past the limit still get their SIGXFSZ); a full ring makes the
 * producer wait for the writer, so a burst loses nothing, and the lossy
 * mode (DEVTRACE_LOSSY=1) counts every drop where `devtrace run` and
 * `devtrace report` say it. */
#include "testutil.h"

#include <signal.h>
#include <sys/stat.h>

#include "tracetest.h"

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The last line of s (without its newline). */
static const char *last_line(const char *s) {
    size_t n = strlen(s);
    while (n && s[n - 1] == '\n') n--;
    const char *p = s + n;
    while (p > s && p[-1] != '\n') p--;
    return p;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

START_TEST(test_file_size_limit_does_not_kill_the_program) {
    const char *const plain_argv[] = {TRACE_TARGET, "fsize", NULL};
    int plain = run(0, NULL, plain_argv);
    ck_assert(WIFEXITED(plain) && WEXITSTATUS(plain) == 0);
    strcpy(plain_out, out_buf);
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "f.db", TRACE_TARGET, "fsize", NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(st == plain, "traced status 0x%x, untraced 0x%x; stderr: %s", st, plain, err_buf);
    ck_assert_str_eq(out_buf, plain_out);
    ck_assert_msg(count(err_buf, "devtrace: warning") == 1, "%s", err_buf);
    ck_assert_msg(strstr(last_line(err_buf), "incomplete"), "run's last line does not say so: %s", err_buf);
    const char *const report[] = {DEVTRACE_CLI, "report", "f.db", NULL};
    st = run(0, NULL, report);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err_buf);
    ck_assert_msg(strstr(out_buf, "this trace is incomplete"), "%s", out_buf);
    const char *const json[] = {DEVTRACE_CLI, "report", "--json", "f.db", NULL};
    st = run(0, NULL, json);
    ck_assert_msg(strstr(out_buf, "\"complete\": false, \"incomplete\": \"the tracer stopped writing"), "%s", out_buf);
    /* under plain LD_PRELOAD too: the status is the program's */
    st = run(1, ENV("DEVTRACE_OUTPUT=g.db"), plain_argv);
    ck_assert_int_eq(st, plain);
}
END_TEST

START_TEST(test_the_programs_own_sigxfsz_still_reaches_it) {
    const char *const plain_argv[] = {TRACE_TARGET, "fsize", "big.bin", NULL};
    int plain = run(0, NULL, plain_argv);
    ck_assert_msg(WIFSIGNALED(plain) && WTERMSIG(plain) == SIGXFSZ, "untraced status 0x%x", plain);
    int st = run(1, ENV("DEVTRACE_OUTPUT=s.db"), plain_argv);
    ck_assert_msg(st == plain, "traced status 0x%x, untraced 0x%x", st, plain);
    ck_assert(!strstr(out_buf, "lived"));
}
END_TEST

TCase *make_hostguard_tcase(void) {
    TCase *tc = tcase_create("tracer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_file_size_limit_does_not_kill_the_program);
    tcase_add_test(tc, test_the_programs_own_sigxfsz_still_reaches_it);
    return tc;
}
