/* A newcomer's first run: what `devtrace run` prints at the end (the short
 * report on a device mismatch, nothing more on a clean run), which traces it
 * leaves (none for a helper process that recorded nothing), what it says of a
 * Python that never imported torch, a trace cut before its first event, one
 * line of usage for a missing argument, and reading commands that never
 * write beside any trace. */
#include "testutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];
static char out[1 << 16], err[1 << 16];

/* A shell command in dir (its working directory); stdout and stderr land in out and err. */
#define sh(...) tu_sh(dir, 1, out, sizeof out, err, sizeof err, __VA_ARGS__)

/* The names in dir (not the captured output), sorted, one per line. */
static void listing(char *buf, size_t size) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -v '^\\.out$\\|^\\.err$' | sort", dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(buf, 1, size - 1, p) : 0;
    buf[n] = '\0';
    if (p) pclose(p);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/dt_run.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* report, on one trace of a directory holding others (a forked child's, a
 * sibling run's), reads each and writes nothing beside any of them: no -shm,
 * no -wal, no journal (the children are looked for among the siblings). */
START_TEST(test_reading_writes_nothing_beside_any_trace) {
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o a.db -- %s", DEVTRACE_CLI, MISMATCH_EXAMPLE), 1);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o b.db -- %s --fixed", DEVTRACE_CLI, MISMATCH_EXAMPLE), 0);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o c.db -- %s fork", DEVTRACE_CLI, TRACE_TARGET), 0);
    char before[4096], after[4096];
    listing(before, sizeof before);
    ck_assert_msg(strstr(before, "a.db\nb.db\nc.") && !strstr(before, "-shm") && !strstr(before, "-wal"),
                  "run left:\n%s", before);
    ck_assert_int_eq(sh("%s report a.db", DEVTRACE_CLI), 1);
    ck_assert_int_eq(sh("%s report b.db", DEVTRACE_CLI), 0);
    ck_assert_int_eq(sh("%s report c.db", DEVTRACE_CLI), 0);
    ck_assert_msg(strstr(out, "processes it forked wrote traces of their own"), "no child listed:\n%s%s", out, err);
    ck_assert_int_eq(sh("%s report --json a.db b.db", DEVTRACE_CLI), 1);
    ck_assert_int_eq(
        sh("%s tensors a.db && %s transfers a.db && %s show a.db 1", DEVTRACE_CLI, DEVTRACE_CLI, DEVTRACE_CLI), 0);
    listing(after, sizeof after);
    ck_assert_str_eq(after, before);
}
END_TEST

/* run without a program and report without a file: one line of usage,
 * exit 2, nothing on stdout. */
START_TEST(test_missing_argument_is_one_line_of_usage) {
    ck_assert_int_eq(sh("%s run", DEVTRACE_CLI), 2);
    ck_assert_msg(!out[0] && count_lines(err) == 1 && strstr(err, "usage: devtrace run ") == err, "%s%s", out, err);
    ck_assert_int_eq(sh("%s run --", DEVTRACE_CLI), 2);
    ck_assert_msg(count_lines(err) == 1 && strstr(err, "usage: devtrace run ") == err, "%s", err);
    ck_assert_int_eq(sh("%s report", DEVTRACE_CLI), 2);
    ck_assert_msg(!out[0] && count_lines(err) == 1 && strstr(err, "usage: devtrace report ") == err, "%s%s", out, err);
    ck_assert_int_eq(sh("%s report --json", DEVTRACE_CLI), 2);
    ck_assert_msg(count_lines(err) == 1 && strstr(err, "usage: devtrace report ") == err, "%s", err);
    ck_assert_int_eq(sh("%s run --help", DEVTRACE_CLI), 0); /* the whole help is still there when asked for */
    ck_assert_msg(strstr(out, "--quiet") && count_lines(out) > 10, "%s", out);
}
END_TEST

/* The processes a wrapper starts that record nothing (sh itself, date) leave
 * no trace; the program that recorded is the run's one trace, and run says
 * where it is. A run where nothing at all was recorded keeps the program's
 * trace, and says so too. */
START_TEST(test_helpers_that_recorded_nothing_leave_no_trace) {
    char ls[4096], want[4200];
    ck_assert_int_eq(
        sh("DEVTRACE_SIM_CUDA=1 %s run -- /bin/sh -c '%s --fixed; date; true'", DEVTRACE_CLI, MISMATCH_EXAMPLE), 0);
    listing(ls, sizeof ls);
    ck_assert_msg(count_lines(ls) == 1 && strstr(ls, "devtrace.mismatch_minimal.") == ls, "traces left:\n%s\n%s", ls,
                  err);
    ls[strcspn(ls, "\n")] = '\0';
    snprintf(want, sizeof want, "devtrace: trace written to %s/%s\n", dir, ls);
    ck_assert_msg(strstr(err, want) && count_lines(strstr(err, "devtrace:")) == 1, "want '%s' alone in:\n%s", want,
                  err);
    /* with -o, the program's trace takes the name, and keeps its own status (1), not the wrapper's (0) */
    ck_assert_int_eq(sh("rm -f *.db"), 0);
    ck_assert_int_eq(
        sh("DEVTRACE_SIM_CUDA=1 %s run -o w.db -- /bin/sh -c '%s; date; true'", DEVTRACE_CLI, LABELS_EXAMPLE), 0);
    listing(ls, sizeof ls);
    ck_assert_msg(!strcmp(ls, "w.db\n"), "traces left:\n%s\n%s", ls, err);
    ck_assert_int_eq(sh("%s report --json w.db", DEVTRACE_CLI), 1);
    ck_assert_msg(strstr(out, "\"exit_status\": 1,"), "%s", out);
    ck_assert_int_eq(sh("rm -f *.db"), 0);
    ck_assert_int_eq(sh("%s run -- /bin/sh -c 'true; date; true'", DEVTRACE_CLI), 0);
    listing(ls, sizeof ls);
    ck_assert_msg(count_lines(ls) == 1 && strstr(ls, "devtrace.") == ls, "traces left:\n%s\n%s", ls, err);
    ck_assert_msg(strstr(err, "devtrace: trace written to ") && !strstr(err, "trace of process"), "%s", err);
}
END_TEST

/* A program killed before its first event leaves a trace, and report says
 * what there is: the program, how it ended, nothing recorded before it was
 * killed; exit 0 (no mismatch), not a refusal. */
START_TEST(test_killed_before_its_first_event_is_reported) {
    ck_assert_int_eq(sh("%s run -o cut.db -- /bin/sh -c 'sleep 0.3; kill -KILL $$'", DEVTRACE_CLI), 128 + 9);
    ck_assert_msg(strstr(err, "nothing recorded before it was killed"), "%s", err);
    ck_assert_int_eq(sh("%s report cut.db", DEVTRACE_CLI), 0);
    ck_assert_msg(strstr(out, "nothing recorded before it was killed") && strstr(out, "killed by SIGKILL") &&
                      strstr(out, "no device mismatch in cut.db (/") && !err[0],
                  "%s%s", out, err);
    ck_assert_int_eq(sh("%s report --json cut.db", DEVTRACE_CLI), 0);
    ck_assert_msg(strstr(out, "\"signal\": {\"number\": 9, \"name\": \"SIGKILL\"}") &&
                      strstr(out, "\"mismatches\": []"),
                  "%s", out);
}
END_TEST

/* A Python that never imported torch recorded nothing: run says so once,
 * naming the interpreter it ran, though two Pythons ran; a program that is
 * not Python gets no such line. */
START_TEST(test_python_without_torch_is_said_once) {
#ifdef DEVTRACE_SANITIZED
    fputs(TU_SKIP_PYTHON_UNDER_SANITIZERS, stderr);
    return;
#endif
    ck_assert_int_eq(sh("%s run -- /usr/bin/python3 -c 'import subprocess; subprocess.run([\"/usr/bin/python3\", "
                        "\"-c\", \"pass\"])'",
                        DEVTRACE_CLI),
                     0);
    const char *w = strstr(err, "devtrace: /usr/bin/python3 ran no PyTorch (torch was never imported)");
    ck_assert_msg(w && !strstr(strstr(w, "ran no PyTorch") + 1, "ran no PyTorch"), "%s", err);
    char ls[4096];
    listing(ls, sizeof ls);
    ck_assert_msg(count_lines(ls) == 1, "traces left:\n%s", ls); /* the child Python's is gone */
    /* through a shim (as pyenv's): its helpers leave no trace, and the line names the shim that was run */
    ck_assert_int_eq(sh("rm -f *.db && printf '#!/bin/sh\\np=$(readlink -f /usr/bin/python3)\\nd=$(dirname \"$p\")\\n"
                        "exec \"$d/$(basename \"$p\")\" \"$@\"\\n' > shim && chmod +x shim && %s run -- ./shim -c pass",
                        DEVTRACE_CLI),
                     0);
    listing(ls, sizeof ls);
    ck_assert_msg(count_lines(ls) == 2 && strstr(ls, "shim\n"), "left:\n%s", ls); /* the shim and one trace */
    ck_assert_msg(strstr(err, "/shim ran no PyTorch (torch was never imported)"), "%s", err);
    ck_assert_int_eq(sh("DEVTRACE_PYTORCH=0 %s run -- /usr/bin/python3 -c pass", DEVTRACE_CLI), 0);
    ck_assert_msg(!strstr(err, "ran no PyTorch"), "%s", err); /* without the adapter, nothing is known */
    ck_assert_int_eq(sh("%s run -- /bin/true", DEVTRACE_CLI), 0);
    ck_assert_msg(!strstr(err, "ran no PyTorch"), "%s", err);
}
END_TEST

/* A program that dies of a device mismatch gets the report at the end of
 * its run, on stderr after its own error; its exit status is still run's;
 * --quiet and DEVTRACE_QUIET=1 keep it silent; a clean run, or one that
 * failed of something else, prints no more than where the trace is; of a
 * wrapper's processes, only the trace with the mismatch is reported. */
START_TEST(test_the_answer_at_the_end_of_the_run) {
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o bug.db -- %s", DEVTRACE_CLI, LABELS_EXAMPLE), 1);
    const char *own = strstr(err, "RuntimeError: Expected all tensors to be on the same device"),
               *where = strstr(err, "devtrace: trace written to "),
               *head = strstr(err, "error: device mismatch in cross_entropy at ");
    ck_assert_msg(own && where && head && own < where && where < head, "%s", err);
    ck_assert_msg(strstr(head, "the odd one out: 'target'") && strstr(head, "bug_labels_on_cpu.c:") &&
                      strstr(head, "\nfix: ") && strstr(head, "devtrace report ") && !strstr(head, "\nwhy t"),
                  "%s", err);
    ck_assert_msg(!strstr(out, "device mismatch in"), "the report went to stdout:\n%s", out);
    ck_assert_msg(!strstr(err, "\033["), "colors in:\n%s", err);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run --quiet -o q1.db -- %s", DEVTRACE_CLI, LABELS_EXAMPLE), 1);
    ck_assert_msg(strstr(err, "RuntimeError: ") == err && count_lines(err) == 1, "%s", err);
    ck_assert_int_eq(sh("DEVTRACE_QUIET=1 DEVTRACE_SIM_CUDA=1 %s run -o q2.db -- %s", DEVTRACE_CLI, LABELS_EXAMPLE), 1);
    ck_assert_msg(strstr(err, "RuntimeError: ") == err && count_lines(err) == 1, "%s", err);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o fixed.db -- %s --fixed", DEVTRACE_CLI, MISMATCH_EXAMPLE), 0);
    ck_assert_msg(strstr(err, "devtrace: trace written to ") == err && count_lines(err) == 1, "%s", err);
    ck_assert_int_eq(sh("%s run -o three.db -- /bin/sh -c 'exit 3'", DEVTRACE_CLI), 3);
    ck_assert_msg(strstr(err, "devtrace: trace written to ") == err && count_lines(err) == 1, "%s", err);
    ck_assert_int_eq(
        sh("DEVTRACE_SIM_CUDA=1 %s run -- /bin/sh -c '%s --fixed; %s'", DEVTRACE_CLI, MISMATCH_EXAMPLE, LABELS_EXAMPLE),
        1);
    head = strstr(err, "error: device mismatch in cross_entropy at ");
    ck_assert_msg(head && !strstr(head + 1, "error: device mismatch in") && !strstr(err, "no device mismatch in"), "%s",
                  err);
}
END_TEST

Suite *make_run_suite(void) {
    Suite *s = suite_create("run");
    TCase *tc = tcase_create("run");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reading_writes_nothing_beside_any_trace);
    tcase_add_test(tc, test_missing_argument_is_one_line_of_usage);
    tcase_add_test(tc, test_helpers_that_recorded_nothing_leave_no_trace);
    tcase_add_test(tc, test_killed_before_its_first_event_is_reported);
    tcase_add_test(tc, test_python_without_torch_is_said_once);
    tcase_add_test(tc, test_the_answer_at_the_end_of_the_run);
    suite_add_tcase(s, tc);
    return s;
}
