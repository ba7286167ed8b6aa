/* The viewer: `devtrace report` on real traces (the bundled example, traced
 * with `devtrace run` on a simulated GPU) names the op, the call line, the
 * odd operand, its chain and the fix line marked in the source, in text and
 * JSON; and every kind of bad input gets one clear line, exit 2, and is left
 * untouched. */
#include "testutil.h"
#include "trace_schema.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64], trace[128], fixed[128];
static char out[1 << 16], err[1 << 16];

/* A shell command in dir; stdout and stderr land in out and err. */
#define sh(...) tu_sh(dir, 0, out, sizeof out, err, sizeof err, __VA_ARGS__)

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/dt_viewer.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/bug.db", dir);
    snprintf(fixed, sizeof fixed, "%s/fixed.db", dir);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o %s -- %s", DEVTRACE_CLI, trace, MISMATCH_EXAMPLE), 1);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o %s -- %s --fixed", DEVTRACE_CLI, fixed, MISMATCH_EXAMPLE), 0);
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_report_names_the_chain_and_the_fix) {
    int fix = marker_line(MISMATCH_SOURCE, "devtrace: fix"), origin = marker_line(MISMATCH_SOURCE, "devtrace: origin");
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, trace), 1);
    ck_assert_msg(strstr(out, "error: device mismatch in mul at "), "%s", out);
    ck_assert_msg(strstr(out, "mismatch_minimal.c:51 (main)"), "no call site in:\n%s", out);
    ck_assert(strstr(out, "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
                          "and cpu!"));
    ck_assert_msg(strstr(out, "cpu      ") && strstr(out, "\"targets\" bool[8,3]   <- the odd one out"), "%s", out);
    ck_assert(strstr(out, "why t"));
    ck_assert(strstr(out, "created on cpu by randint"));
    ck_assert(strstr(out, "never moved to another device"));
    ck_assert_msg(strstr(out, "reached cuda:0 here:"), "%s", out);
    char want[128];
    snprintf(want, sizeof want, "made on cpu by eq from t");
    ck_assert(strstr(out, want));
    snprintf(want, sizeof want, "mismatch_minimal.c:%d (main)", origin);
    ck_assert_msg(strstr(out, want), "origin line %d not in:\n%s", origin, out);
    snprintf(want, sizeof want, "fix: move \"targets\" to cuda:0 right after it is made, after ");
    char *f = strstr(out, want);
    ck_assert_msg(f, "%s", out);
    snprintf(want, sizeof want, "mismatch_minimal.c:%d", fix);
    ck_assert_msg(strstr(f, want), "fix line %d not in: %s", fix, f);

    /* the source around the failing, origin and fix lines, each marked; --no-source leaves it out */
    snprintf(want, sizeof want, "\n  > %5d |", fix);
    ck_assert_msg(strstr(out, want) && strstr(out, "devtrace: fix"), "no fix line snippet in:\n%s", out);
    snprintf(want, sizeof want, "\n  > %5d |", origin);
    ck_assert_msg(strstr(out, want), "no origin line snippet in:\n%s", out);
    ck_assert_msg(strstr(out, "\n  >    51 |"), "no failing line snippet in:\n%s", out);
    ck_assert_int_eq(sh("%s report --no-source %s", DEVTRACE_CLI, trace), 1);
    ck_assert_msg(!strstr(out, " | ") && strstr(out, "fix: move"), "%s", out);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, trace), 1);

    /* the failing call's stack: the program's frames; --all-frames adds the runtime's */
    ck_assert_msg(strstr(out, "call stack:") && !strstr(out, "(dt_mul)") && strstr(out, "--all-frames shows them"),
                  "%s", out);
    ck_assert_int_eq(sh("%s report --all-frames %s", DEVTRACE_CLI, trace), 1);
    ck_assert_msg(strstr(out, "(dt_mul)  [hidden by default]"), "%s", out);
    ck_assert_int_eq(sh("%s report --json %s", DEVTRACE_CLI, trace), 1);
    ck_assert_msg(strstr(out, "\"op\": \"mul\""), "%s", out);
    ck_assert(strstr(out, "\"odd\": true"));
    ck_assert(strstr(out, "\"intended_device\": \"cuda:0\""));
    f = strstr(out, "\"fix\": {");
    ck_assert_ptr_nonnull(f);
    snprintf(want, sizeof want, "\"line\": %d", fix);
    ck_assert_msg(strstr(f, want), "fix line %d not in JSON: %s", fix, f);
    /* the JSON is valid: python's parser accepts it */
    ck_assert_int_eq(sh("%s report --json %s | python3 -c 'import json,sys; d=json.load(sys.stdin); "
                        "print(d[\"traces\"][0][\"mismatches\"][0][\"fix\"][\"site\"][\"line\"])'",
                        DEVTRACE_CLI, trace),
                     0);
    ck_assert_int_eq(atoi(out), fix);
    /* the source snippets in JSON: the fix line marked, and the diff that moves "onehot" there, in C (the
     * tracer's source facts of the program); --no-source: none */
    ck_assert_int_eq(
        sh("%s report --json %s | python3 -c 'import json,sys; m=json.load(sys.stdin)[\"traces\"][0]"
           "[\"mismatches\"][0]; print([l[\"n\"] for s in m[\"source\"] for l in s[\"lines\"] "
           "if \"fix\" in l[\"marks\"]], \"+    onehot = dt_to(onehot, dev);\" in m[\"diff\"].split(\"\\n\"))'",
           DEVTRACE_CLI, trace),
        0);
    snprintf(want, sizeof want, "[%d] True\n", fix);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(sh("%s report --json --no-source %s | python3 -c 'import json,sys; m=json.load(sys.stdin)"
                        "[\"traces\"][0][\"mismatches\"][0]; print(m[\"source\"], m[\"diff\"])'",
                        DEVTRACE_CLI, trace),
                     0);
    ck_assert_str_eq(out, "[] None\n");
}
END_TEST

/* Post-mortem: a program that went on after a device mismatch and then
 * crashed. The report's first line says how it ended (the signal, where,
 * and how long after the mismatch), in text and in JSON. */
START_TEST(test_report_says_how_it_ended) {
    char t[160];
    snprintf(t, sizeof t, "%s/crash.db", dir);
    int crash = marker_line(TRACE_TARGET_SOURCE, "devtrace: crash");
    /* under the sanitizers, the fault is the program's, not ASan's to report */
    ck_assert_int_eq(sh("ASAN_OPTIONS=\"$ASAN_OPTIONS:handle_segv=0\" %s run -o %s -- %s mismatch_segv", DEVTRACE_CLI,
                        t, TRACE_TARGET),
                     128 + 11);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, t), 1);
    char want[256];
    snprintf(want, sizeof want, "the program was killed by SIGSEGV (signal 11, exit status 139) at ");
    ck_assert_msg(strstr(out, want) == out, "not the first line:\n%s", out);
    snprintf(want, sizeof want, "trace_target.c:%d (main)", crash);
    const char *nl = strchr(out, '\n');
    ck_assert_msg(strstr(out, want) && strstr(out, want) < nl, "no '%s' in the first line:\n%s", want, out);
    ck_assert_msg(strstr(out, " ms after the device mismatch") && strstr(out, " ms after the device mismatch") < nl,
                  "%s", out);
    ck_assert_msg(strstr(nl, "\nerror: device mismatch in add at "), "%s", out);
    ck_assert_int_eq(sh("%s report --json %s | /usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin)"
                        "[\"traces\"][0][\"ending\"]; print(e[\"signal\"], e[\"signal_site\"][\"line\"], "
                        "e[\"exit_status\"], e[\"ns_after_mismatch\"] >= 10000000)'",
                        DEVTRACE_CLI, t),
                     0);
    snprintf(want, sizeof want, "SIGSEGV %d 139 True\n", crash);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_report_without_mismatch) {
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, fixed), 0);
    ck_assert_msg(strstr(out, "no device mismatch in "), "%s", out);
    ck_assert(strstr(out, "tensors per device:"));
    ck_assert(strstr(out, "cuda:0"));
    ck_assert(strstr(out, "busiest transfer sites:"));
    ck_assert(strstr(out, "mismatch_minimal.c:"));
    ck_assert_int_eq(sh("%s report --json %s %s", DEVTRACE_CLI, fixed, trace), 1); /* several files */
    ck_assert(strstr(out, "\"mismatches\": []"));
    ck_assert(strstr(out, "\"tensors_per_device\""));
}
END_TEST

/* A program that makes no tensor and ends well is a clean run: exit 0, "no
 * device mismatch", counts of what was seen; DEVTRACE_QUIET=1 silences
 * every line of devtrace's own; a death by signal is shown as such. */
START_TEST(test_clean_run_quiet_and_signal) {
    char t[160];
    snprintf(t, sizeof t, "%s/true.db", dir);
    ck_assert_int_eq(sh("DEVTRACE_QUIET=1 %s run -o %s -- /bin/true", DEVTRACE_CLI, t), 0);
    ck_assert_msg(!err[0] && !out[0], "devtrace printed under DEVTRACE_QUIET=1:\n%s%s", out, err);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, t), 0);
    ck_assert_msg(strstr(out, "no device mismatch in ") && strstr(out, "exit status 0)") &&
                      strstr(out, "no tensors recorded"),
                  "%s%s", out, err);
    ck_assert_int_eq(sh("%s report --json %s", DEVTRACE_CLI, t), 0);
    ck_assert_msg(strstr(out, "\"exit_status\": 0, \"signal\": null") && strstr(out, "\"ops\": 0"), "%s", out);
    /* without DEVTRACE_QUIET, run says where the trace went */
    snprintf(t, sizeof t, "%s/abort.db", dir);
    ck_assert_int_eq(sh("%s run -o %s -- /bin/sh -c 'kill -ABRT $$'", DEVTRACE_CLI, t), 128 + 6);
    ck_assert_msg(strstr(err, "trace written to"), "%s", err);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, t), 0);
    ck_assert_msg(strstr(out, "exit status 134, killed by SIGABRT)"), "%s%s", out, err);
    ck_assert_int_eq(sh("%s report --json %s", DEVTRACE_CLI, t), 0);
    ck_assert_msg(strstr(out, "\"exit_status\": 134, \"signal\": {\"number\": 6, \"name\": \"SIGABRT\"}"), "%s", out);
}
END_TEST

/* Helpers inlined into their callers, one inside the other, are frames of
 * their own in the call stack, each at its own line: text, JSON and show. */
START_TEST(test_inlined_frames) {
    char t[160], want[256];
    int fails = marker_line(INLINE_SOURCE, "inlined: fails here"),
        inner = marker_line(INLINE_SOURCE, "inlined: calls checked_add"),
        call = marker_line(INLINE_SOURCE, "calls the inlined helper"),
        origin = marker_line(INLINE_SOURCE, "devtrace: origin");
    snprintf(t, sizeof t, "%s/inline.db", dir);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o %s -- %s", DEVTRACE_CLI, t, INLINE_TARGET), 1);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, t), 1);
    /* innermost first, in order: checked_add, layer, main */
    snprintf(want, sizeof want, "inline_target.c:%d (checked_add)  [inlined]\n", fails);
    char *a = strstr(out, want);
    ck_assert_msg(a, "no '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "inline_target.c:%d (layer)  [inlined]\n", inner);
    char *b = strstr(out, want);
    ck_assert_msg(b && b > a, "no '%s' after checked_add in:\n%s", want, out);
    snprintf(want, sizeof want, "inline_target.c:%d (main)\n", call);
    char *c = strstr(out, want);
    ck_assert_msg(c && c > b, "no '%s' after layer in:\n%s", want, out);
    /* the call line is the innermost frame's */
    snprintf(want, sizeof want, "inline_target.c:%d (checked_add)\n", fails);
    ck_assert_msg(on_line(report_headline(out, "error: device mismatch in add at "), want),
                  "the headline does not end with '%s':\n%s", want, out);
    /* the odd operand is the cpu bias, made at its marked line */
    snprintf(want, sizeof want, "inline_target.c:%d (main)", origin);
    ck_assert_msg(strstr(out, "<- the odd one out") && strstr(out, want), "no origin '%s' in:\n%s", want, out);
    ck_assert_int_eq(sh("%s report --json %s", DEVTRACE_CLI, t), 1);
    ck_assert_msg(strstr(out, "\"inlined\": true"), "%s", out);
    snprintf(want, sizeof want, "inline_target.c:%d (layer)\", \"hidden\": false, \"inlined\": true}", inner);
    ck_assert_msg(strstr(out, want), "no %s in:\n%s", want, out);
    snprintf(want, sizeof want, "inline_target.c:%d (main)\", \"hidden\": false, \"inlined\": false}", call);
    ck_assert_msg(strstr(out, want), "no %s in:\n%s", want, out);
}
END_TEST

/* The runtime driven from Python: sites are the Python lines, and the
 * failing call's Python stack is shown in place. */
START_TEST(test_python_frames_in_place) {
#ifdef DEVTRACE_SANITIZED
    printf(TU_SKIP_PYTHON_UNDER_SANITIZERS);
#else
    char t[160], want[1024], script[512];
    snprintf(t, sizeof t, "%s/py.db", dir);
    snprintf(script, sizeof script, "%s/viewer/runtime_from_python.py", TESTS_SOURCE_DIR);
    ck_assert_int_eq(
        sh("DEVTRACE_SIM_CUDA=1 %s run -o %s -- /usr/bin/python3 %s %s", DEVTRACE_CLI, t, script, DTRT_LIB), 1);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, t), 1);
    int call = marker_line(script, "the failing call"), culprit = marker_line(script, "the culprit");
    snprintf(want, sizeof want, "runtime_from_python.py:%d (forward)\n", call);
    ck_assert_msg(on_line(report_headline(out, "error: device mismatch"), want),
                  "call site '%s' not in the headline:\n%s", want, out);
    ck_assert_msg(strstr(out, "  Python stack:\n    #0  "), "%s", out);
    /* the culprit's creation and the fix name the Python line that made it */
    snprintf(want, sizeof want, "runtime_from_python.py:%d (<module>)\n", culprit);
    const char *made = strstr(out, "t2 created on cpu by ones  "),
               *fix = strstr(out, "fix: move the tensor passed as 'other' to cuda:0");
    ck_assert_msg(made && strstr(made, want) && strstr(made, want) < strchr(made, '\n'), "no '%s' in:\n%s", want, out);
    ck_assert_msg(fix && strstr(fix, want) && strstr(fix, want) < strchr(fix, '\n'), "no fix at '%s' in:\n%s", want,
                  out);
    ck_assert_int_eq(sh("%s report --json %s", DEVTRACE_CLI, t), 1);
    ck_assert_msg(strstr(out, "\"python_stack\": [{\"file\": "), "%s", out);
#endif
}
END_TEST

/* The input is left exactly as it was, with nothing created beside it. */
static void expect_untouched(const char *path, const struct stat *before) {
    struct stat now;
    if (before) {
        ck_assert_int_eq(stat(path, &now), 0);
        ck_assert_int_eq(now.st_size, before->st_size);
        ck_assert(now.st_mtim.tv_sec == before->st_mtim.tv_sec && now.st_mtim.tv_nsec == before->st_mtim.tv_nsec);
    }
    char side[256];
    snprintf(side, sizeof side, "%s-shm", path);
    ck_assert_msg(access(side, F_OK) != 0, "%s was created", side);
}

static void expect_refused(const char *path, const char *why) {
    struct stat before;
    int exists = stat(path, &before) == 0;
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, path), 2);
    ck_assert_msg(strstr(err, why), "for %s expected \"%s\" in: %s", path, why, err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "more than one line: %s", err);
    ck_assert_str_eq(out, "");
    if (exists && !S_ISDIR(before.st_mode)) expect_untouched(path, &before);
}

static void copy_trace(const char *to) { ck_assert_int_eq(sh("cp %s %s", trace, to), 0); }

static void exec_sql(const char *path, const char *sql) {
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A mismatch recorded at an op's start, for an op that then ended well (a
 * producer that checks before its library does, and was wrong), is no
 * mismatch; the same op failing, or never ending, is one. */
START_TEST(test_mismatch_of_an_op_that_succeeded) {
    char p[256];
    snprintf(p, sizeof p, "%s/ok.db", dir);
    copy_trace(p);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 1);
    exec_sql(p, "UPDATE ops SET status = 0, len = 1 WHERE op IN (SELECT e.op FROM errors r JOIN misc_events e ON e.seq "
                "= r.seq WHERE r.first_arg IS NOT NULL); DELETE FROM errors WHERE first_arg IS NULL;");
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 0);
    ck_assert_msg(strstr(out, "no device mismatch in "), "%s", out);
    exec_sql(p, "UPDATE ops SET status = 1 WHERE status = 0 AND op IN (SELECT e.op FROM errors r JOIN misc_events e "
                "ON e.seq = r.seq WHERE r.first_arg IS NOT NULL);");
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 1);
}
END_TEST

/* A job's traces, one per rank: the directory read as one report, the ranks' one mismatch once. */
START_TEST(test_report_ranks_of_a_job) {
    char job[256];
    snprintf(job, sizeof job, "%s/job", dir);
    ck_assert_int_eq(mkdir(job, 0700), 0);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(
            sh("RANK=%d DEVTRACE_SIM_CUDA=2 %s run -o %s/train.db -- %s", r, DEVTRACE_CLI, job, LABELS_EXAMPLE), 1);
    ck_assert_int_eq(sh("ls %s | grep -c 'rank[0-3]'", job), 0);
    ck_assert_int_eq(atoi(out), 4);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, job), 1);
    ck_assert_msg(strstr(out, "== ranks 0\u2013"
                              "3: 4 traces with the same device mismatch"),
                  "%s", out);
    const char *e = strstr(out, "error: device mismatch in cross_entropy");
    ck_assert_msg(e && !strstr(e + 1, "error: device mismatch"), "not one block:\n%s", out);
    ck_assert_msg(strstr(out, "  target      cpu ") && strstr(out, "<- the odd one out"), "%s", out);
    /* two of them, named as files: the same group; JSON has each rank and its host, and the group */
    ck_assert_int_eq(sh("%s report %s/train.*.rank3.*.db %s/train.*.rank1.*.db", DEVTRACE_CLI, job, job), 1);
    ck_assert_msg(strstr(out, "== ranks 1, 3: 2 traces"), "%s", out);
    ck_assert_int_eq(sh("%s report --json %s | python3 -c 'import json,sys; d=json.load(sys.stdin); "
                        "t=d[\"traces\"]; g=d[\"groups\"]; "
                        "print(len(t), sorted(x[\"rank\"] for x in t), all(x[\"host\"] for x in t), len(g), "
                        "g[0][\"ranks\"], g[0][\"mismatches\"])'",
                        DEVTRACE_CLI, job),
                     0);
    ck_assert_str_eq(out, "4 [0, 1, 2, 3] True 1 [0, 1, 2, 3] 1\n");
    /* one rank alone: its own heading, no group */
    ck_assert_int_eq(sh("%s report %s %s/train.*.rank2.*.db", DEVTRACE_CLI, trace, job), 1);
    ck_assert_msg(strstr(out, "(rank 2, host ") && !strstr(out, "ranks "), "%s", out);
}
END_TEST

START_TEST(test_bad_inputs) {
    char p[256];
    snprintf(p, sizeof p, "%s/missing.db", dir);
    expect_refused(p, "No such file or directory");
    ck_assert_int_ne(access(p, F_OK), 0);       /* not created */
    snprintf(p, sizeof p, "%s/no_traces", dir); /* a directory is read as a job's traces: it has none */
    ck_assert_int_eq(mkdir(p, 0700), 0);
    expect_refused(p, "is a directory with no *.db trace");
    snprintf(p, sizeof p, "%s/empty.db", dir);
    ck_assert_int_eq(sh(": > %s", p), 0);
    expect_refused(p, "empty file");
    snprintf(p, sizeof p, "%s/text.db", dir);
    ck_assert_int_eq(sh("echo hello > %s", p), 0);
    expect_refused(p, "not a devtrace trace (not an SQLite database)");
    snprintf(p, sizeof p, "%s/other.db", dir);
    exec_sql(p, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
    expect_refused(p, "an SQLite database, but not a devtrace trace");
    snprintf(p, sizeof p, "%s/newer.db", dir);
    copy_trace(p);
    exec_sql(p, "PRAGMA user_version = 99;");
    expect_refused(p, "trace schema version 99; this devtrace");
    snprintf(p, sizeof p, "%s/cut.db", dir);
    ck_assert_int_eq(sh("head -c $(( $(stat -c %%s %s) / 2 )) %s > %s", trace, trace, p), 0);
    expect_refused(p, "truncated");
    snprintf(p, sizeof p, "%s/noevents.db", dir);
    copy_trace(p);
    /* (derived too: its rows are tensors' rows, and one whose tensor is gone is refused as damaged) */
    exec_sql(p, "DELETE FROM misc_events; DELETE FROM tensor_rows; DELETE FROM derived; DELETE FROM frees_late; "
                "DELETE FROM ops; DELETE FROM meta WHERE key IN ('complete', 'exit_status', 'killed_by_signal', "
                "'fatal_signal');");
    expect_refused(p, "the trace holds no events: ");
    /* still being written: a WAL and a live writer (this process) */
    snprintf(p, sizeof p, "%s/live.db", dir);
    copy_trace(p);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; UPDATE meta SET value = '%d' WHERE key = 'pid';",
             (int)getpid());
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 2);
    ck_assert_msg(strstr(err, "still being written by process"), "%s", err);
    sqlite3_close(db);
    /* unknown option, no file */
    ck_assert_int_eq(sh("%s report --bogus %s", DEVTRACE_CLI, trace), 2);
    ck_assert(strstr(err, "unknown option '--bogus'"));
    ck_assert_int_eq(sh("%s report", DEVTRACE_CLI), 2);
    ck_assert_int_eq(sh("%s report --help", DEVTRACE_CLI), 0);
    ck_assert(strstr(out, "Exit status: 0 no mismatch, 1 a mismatch was found, 2"));
    /* the good trace itself was never written to */
    struct stat st;
    ck_assert_int_eq(stat(trace, &st), 0);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, trace), 1);
    expect_untouched(trace, &st);
}
END_TEST

START_TEST(test_killed_writer_trace_is_read_from_a_copy) {
    /* a WAL left by a writer that is gone: read through a private copy */
    char p[256];
    snprintf(p, sizeof p, "%s/killed.db", dir);
    copy_trace(p);
    ck_assert_int_eq(sh("cd %s && python3 -c \"import sqlite3,os; c=sqlite3.connect('killed.db'); "
                        "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0'); "
                        "c.execute(\\\"UPDATE meta SET value='999999999' WHERE key='pid'\\\"); c.commit(); "
                        "os.system('cp killed.db-wal keep-wal'); c.close(); os.rename('keep-wal', 'killed.db-wal')\"",
                        dir),
                     0);
    struct stat before;
    ck_assert_int_eq(stat(p, &before), 0);
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 1);
    ck_assert_msg(strstr(out, "<- the odd one out"), "%s%s", out, err);
    expect_untouched(p, &before);
}
END_TEST

/* Number of lines of s that contain needle. */
static int count_lines(const char *s, const char *needle) {
    int n = 0;
    for (const char *l = s; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (strstr(line, needle)) n++;
        l = e ? e + 1 : NULL;
    }
    return n;
}

START_TEST(test_tensors_table) {
    ck_assert_int_eq(sh("%s tensors %s", DEVTRACE_CLI, trace), 0);
    ck_assert_msg(count_lines(out, "targets ") == 1 && strstr(out, "bool     [8,3]"), "%s", out);
    ck_assert(strstr(out, "fc.weight"));
    ck_assert(strstr(out, "mismatch_minimal.c:"));
    int rows = 0;
    for (char *l = out; (l = strstr(l, "\nt")) != NULL; l++) rows++;
    ck_assert_int_ge(rows, 10);
    /* --device: only that device's rows, and the count says so */
    ck_assert_int_eq(sh("%s tensors --device cuda:0 %s", DEVTRACE_CLI, trace), 0);
    ck_assert_int_eq(count_lines(out, " cpu "), 0);
    ck_assert_msg(strstr(out, "tensors on cuda:0"), "%s", out);
    ck_assert_int_eq(sh("%s tensors --device gpu9 %s", DEVTRACE_CLI, trace), 2);
    ck_assert_msg(strstr(err, "--device takes cpu, cuda or cuda:N, not 'gpu9'"), "%s", err);
    /* --alive-at-error: made before the mismatch, not freed before it */
    ck_assert_int_eq(sh("%s tensors --alive-at-error --json %s | python3 -c 'import json,sys; d=json.load(sys.stdin)"
                        "[\"traces\"][0]; e=d[\"alive_at_seq\"]; ts=d[\"tensors\"]; print(len(ts), "
                        "all(t[\"created_seq\"] < e and (t[\"freed_seq\"] is None or t[\"freed_seq\"] > e) for t "
                        "in ts), sum(t[\"name\"] == \"targets\" for t in ts))'",
                        DEVTRACE_CLI, trace),
                     0);
    int n = 0, ok = 0, targets = 0;
    char okw[8];
    ck_assert_int_eq(sscanf(out, "%d %7s %d", &n, okw, &targets), 3);
    ok = !strcmp(okw, "True");
    ck_assert_msg(n >= 5 && ok && targets == 1, "%s", out);
    ck_assert_int_eq(sh("%s tensors --alive-at-error %s", DEVTRACE_CLI, fixed), 2);
    ck_assert_msg(strstr(err, "holds no error"), "%s", err);
}
END_TEST

START_TEST(test_show_one_tensor) {
    ck_assert_int_eq(sh("%s show %s targets", DEVTRACE_CLI, trace), 0);
    ck_assert_msg(strstr(out, "bool [8,3] on cpu"), "%s", out);
    ck_assert(strstr(out, "created on cpu as the output of eq"));
    ck_assert(strstr(out, "named targets"));
    ck_assert_msg(strstr(out, "used by mul (op #") && strstr(out, "on cpu, which failed"), "%s", out);
    ck_assert(strstr(out, "mismatch_minimal.c:51 (main)"));
    /* by id, with the t prefix or without, and in JSON */
    ck_assert_int_eq(sh("%s show --json %s targets | python3 -c 'import json,sys; d=json.load(sys.stdin)"
                        "[\"traces\"][0]; print(d[\"tensor\"][\"id\"], [e[\"kind\"] for e in d[\"life\"]])'",
                        DEVTRACE_CLI, trace),
                     0);
    int id = atoi(out);
    ck_assert_msg(id > 0 && strstr(out, "'created'") && strstr(out, "'used'"), "%s", out);
    char first[sizeof out];
    ck_assert_int_eq(sh("%s show %s t%d", DEVTRACE_CLI, trace, id), 0);
    snprintf(first, sizeof first, "%s", out);
    ck_assert_int_eq(sh("%s show %s %d", DEVTRACE_CLI, trace, id), 0);
    ck_assert_str_eq(out, first);
    ck_assert_int_eq(sh("%s show %s no_such_name", DEVTRACE_CLI, trace), 2);
    ck_assert_msg(strstr(err, "no tensor 'no_such_name'"), "%s", err);
    ck_assert_int_eq(sh("%s show %s", DEVTRACE_CLI, trace), 2); /* no tensor given */
    ck_assert(strstr(err, "usage: devtrace show"));
}
END_TEST

START_TEST(test_transfers_by_site) {
    ck_assert_int_eq(sh("%s transfers %s", DEVTRACE_CLI, fixed), 0);
    ck_assert_msg(strstr(out, "cpu -> cuda:0 by to"), "%s", out);
    ck_assert(strstr(out, "mismatch_minimal.c:"));
    ck_assert(!strstr(out, "every step"));
    /* hand-written rows: the same tensor copied five times from one place,
     * unchanged (a constant moved inside the loop): flagged; a device-to-host
     * read of a new tensor each step (a loss read for logging): not flagged */
    char p[256];
    snprintf(p, sizeof p, "%s/loop.db", dir);
    ck_assert_int_eq(sh("cp %s %s", fixed, p), 0);
    exec_sql(p, "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 5) "
                "INSERT INTO misc_events SELECT 1000000 + n, 5000000 + n * 1000, 1, 4, 1, NULL, "
                "(SELECT stack FROM tensors WHERE id = 1), NULL, NULL FROM i;"
                "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 5) "
                "INSERT INTO transfers SELECT 1000000 + n, 1, 900000 + n, 0, 65536, 48, 0, "
                "(SELECT via FROM transfers LIMIT 1) FROM i;"
                "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 4) "
                "INSERT INTO misc_events SELECT 2000000 + n, 6000000 + n * 1000, 1, 4, 2, NULL, "
                "(SELECT stack FROM tensors WHERE id = 2), NULL, NULL FROM i;"
                "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 4) "
                "INSERT INTO transfers SELECT 2000000 + n, 100 + n, NULL, 65536, 0, 4, 2, "
                "(SELECT via FROM transfers LIMIT 1) FROM i;");
    ck_assert_int_eq(sh("%s transfers %s", DEVTRACE_CLI, p), 0);
    ck_assert_msg(strstr(out, "the same content copied again each step (5 copies of 1 unchanged tensor): move it once, "
                              "before the loop"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "device-to-host"), "%s", out);
    ck_assert_msg(strstr(out, "cuda:0 -> host memory"), "%s", out);
    ck_assert_int_eq(sh("%s transfers --json %s | python3 -c 'import json,sys; d=json.load(sys.stdin)[\"traces\"]"
                        "[0]; print(sum(s[\"count\"] for s in d[\"sites\"]) == d[\"transfers\"], "
                        "sum(s[\"per_step\"] for s in d[\"sites\"]), [s[\"reason\"] for s in d[\"sites\"] "
                        "if s[\"reason\"]])'",
                        DEVTRACE_CLI, p),
                     0);
    ck_assert_str_eq(out, "True 1 ['same_content']\n");
}
END_TEST

START_TEST(test_export_chrome) {
    char p[256];
    snprintf(p, sizeof p, "%s/t.json", dir);
    ck_assert_int_eq(sh("%s export --format chrome -o %s %s %s", DEVTRACE_CLI, p, trace, fixed), 0);
    ck_assert_int_eq(
        sh("python3 -c 'import json; d=json.load(open(\"%s\"))[\"traceEvents\"]; "
           "print(len({e[\"pid\"] for e in d}), any(e[\"ph\"] in \"Xi\" and e[\"name\"] == "
           "\"mul\" and e[\"args\"].get(\"status\") == 1 for e in d), any(e[\"ph\"] == \"i\" and "
           "\"cuda:0 and cpu\" in e[\"args\"].get(\"message\", \"\") for e in d), any(e[\"ph\"] == \"M\" and "
           "e[\"args\"].get(\"name\") == \"device cuda:0\" for e in d), any(e.get(\"cat\") == "
           "\"transfer\" and e[\"tid\"] == 1000000 + 65536 for e in d))'",
           p),
        0);
    ck_assert_str_eq(out, "2 True True True True\n"); /* two processes, the failed op, the error, device tracks */
    /* an unwritable OUT: one line, exit 2, nothing left behind */
    ck_assert_int_eq(sh("%s export --format chrome -o %s/no/such/dir/t.json %s", DEVTRACE_CLI, dir, trace), 2);
    ck_assert_msg(strstr(err, "cannot write"), "%s", err);
    ck_assert_int_eq(sh("%s export --format svg -o %s %s", DEVTRACE_CLI, p, trace), 2);
    ck_assert(strstr(err, "unknown format 'svg'"));
}
END_TEST

/* The HTML report in a real browser: headless Chromium runs its script and
 * the dumped DOM holds the rendered chain and fix; text from the trace
 * (here a tensor name made of markup) stays text. */
START_TEST(test_export_html_in_chromium) {
    const char *chromium = "chromium";
    ck_assert_msg(sh("command -v %s", chromium) == 0,
                  "Debian's chromium is needed for this test (scripts/install-deps.sh installs it)");
    char db[256], html[256];
    snprintf(db, sizeof db, "%s/markup.db", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    ck_assert_int_eq(sh("cp %s %s", trace, db), 0);
    exec_sql(db, "UPDATE strings SET text = '<b id=\"injected\">targets</b>' WHERE text = 'targets'");
    ck_assert_int_eq(sh("%s export --format html -o %s %s", DEVTRACE_CLI, html, db), 0);
    ck_assert_int_eq(sh("timeout 60 %s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s/chr "
                        "--dump-dom file://%s 2>/dev/null",
                        chromium, dir, html),
                     0);
    ck_assert_msg(strstr(out, "data-rendered=\"yes\""), "the page's script did not finish:\n%.2000s", out);
    char *chain = strstr(out, "id=\"chain-0-0-1\"");
    ck_assert_msg(chain, "no rendered chain in:\n%.4000s", out);
    ck_assert_msg(strstr(chain, "created on cpu by randint") && strstr(chain, "made on cpu by eq from t"), "%.2000s",
                  chain);
    int fix = marker_line(MISMATCH_SOURCE, "devtrace: fix");
    char want[128];
    snprintf(want, sizeof want, "mismatch_minimal.c:%d (main)", fix);
    char *f = strstr(out, "id=\"fix-0-0\"");
    ck_assert_msg(f && strstr(f, want), "fix line %d not rendered", fix);
    ck_assert_msg(strstr(out, "&lt;b id=\"injected\"&gt;") && !strstr(out, "<b id=\"injected\">"),
                  "trace text became markup");
    /* under the mismatch, the source around its lines, the marked ones highlighted, and the suggested diff */
    char *src = strstr(out, "id=\"source-0-0\"");
    ck_assert_msg(src, "no source snippets rendered:\n%.4000s", out);
    snprintf(want, sizeof want, "<div class=\"mark\"><span class=\"ln\">%5d &gt; </span>", fix);
    ck_assert_msg(strstr(src, want) && strstr(src, "dt_mul(logp, onehot)") && strstr(src, "\u2190 fix"),
                  "fix line %d not highlighted in:\n%.4000s", fix, src);
    ck_assert_msg(strstr(out, "id=\"diff-0-0\""), "no diff for C");
    /* the answer first, as the text report gives it: the fix, the source with its diff, the odd operand's chain
     * (onehot, passed second), and only then, folded, the peers' (logp's) */
    const char *order[] = {"id=\"fix-0-0\"",      "id=\"source-0-0\"", "id=\"diff-0-0\"",
                           "id=\"chain-0-0-1\"", "<details>",          "id=\"chain-0-0-0\""};
    for (int i = 0; i < 6; i++) {
        char *at = strstr(out, order[i]), *next = i < 5 ? strstr(out, order[i + 1]) : NULL;
        ck_assert_msg(at && (i == 5 || (next && at < next)), "the HTML report: %s not before %s (fix, source, diff, "
                      "the odd operand's chain, then the peers folded)", order[i], i < 5 ? order[i + 1] : "-");
    }
    /* the timeline at two window widths: its SVG fits the column, the legend
     * and the zoom buttons are there, and the mismatch's link (#show-0-0 does
     * what a click does) outlines its events on the timeline */
    ck_assert_msg(strstr(out, "id=\"tl-link-0-0\""), "no link from the mismatch to the timeline");
    const int widths[] = {800, 1400};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sh("timeout 60 %s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s/chr "
                            "--window-size=%d,1000 --dump-dom 'file://%s#show-0-0' 2>/dev/null",
                            chromium, dir, widths[i], html),
                         0);
        ck_assert_msg(strstr(out, "data-rendered=\"yes\""), "%d px: the script did not finish", widths[i]);
        char *svg = strstr(out, "<svg id=\"tlsvg\"");
        ck_assert_msg(svg, "%d px: no timeline:\n%.3000s", widths[i], out);
        char *w = strstr(svg, " width=\""), *hl = strstr(svg, "data-highlighted=\"");
        ck_assert(w && hl);
        int width = atoi(w + 8);
        ck_assert_msg(width >= 300 && width <= widths[i], "%d px window: an SVG %d px wide", widths[i], width);
        if (i == 1) ck_assert_msg(width > 800, "the timeline does not grow with the window (%d px)", width);
        ck_assert_msg(atoi(hl + 18) >= 3, "the mismatch's events not outlined: %.200s", svg);
        ck_assert(strstr(out, "id=\"legend\"") && strstr(out, "transfer host") && strstr(out, "failed op"));
        ck_assert(strstr(out, "id=\"tl-in\"") && strstr(out, "id=\"tl-reset\""));
    }
    /* zoom and pan: a script after the page's own clicks its buttons and
     * sends a wheel event; the axis' two labels (the view's ends) after each */
    char probe[256];
    snprintf(probe, sizeof probe, "%s/probe.html", dir);
    ck_assert_int_eq(sh("cp %s %s", html, probe), 0);
    FILE *pf = fopen(probe, "a");
    ck_assert_ptr_nonnull(pf);
    fputs("<script>\nconst lab = () => Array.from(document.querySelectorAll('#tlsvg text')).slice(-2).map(t => "
          "t.textContent).join('|'), r = [lab()], click = id => { document.getElementById(id).click(); r.push(lab()); "
          "};\nclick('tl-in'); click('tl-right');\nconst s = document.getElementById('tlsvg'), b = "
          "s.getBoundingClientRect();\ns.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: b.left + 300, "
          "clientY: b.top + 5, bubbles: true, cancelable: true})); r.push(lab());\nclick('tl-reset');\n"
          "document.body.setAttribute('data-probe', r.join('#'));\n</script>\n",
          pf);
    fclose(pf);
    ck_assert_int_eq(sh("timeout 60 %s --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=%s/chr "
                        "--window-size=1000,1000 --dump-dom file://%s 2>/dev/null",
                        chromium, dir, probe),
                     0);
    char *pr = strstr(out, "data-probe=\"");
    ck_assert_msg(pr, "the probe did not run");
    char views[5][64];
    ck_assert_int_eq(
        sscanf(pr + 12, "%63[^#]#%63[^#]#%63[^#]#%63[^#]#%63[^\"]", views[0], views[1], views[2], views[3], views[4]),
        5);
    ck_assert_msg(strcmp(views[0], views[1]) && strcmp(views[1], views[2]) && strcmp(views[2], views[3]) &&
                      !strcmp(views[0], views[4]),
                  "zoom/pan did not move the view: %.300s", pr);
}
END_TEST

START_TEST(test_help_and_colors) {
    const char *cmds[] = {"report", "show", "tensors", "transfers", "export", "run"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        ck_assert_int_eq(sh("%s %s --help", DEVTRACE_CLI, cmds[i]), 0);
        char want[64];
        snprintf(want, sizeof want, "usage: devtrace %s", cmds[i]);
        ck_assert_msg(strstr(out, want), "%s --help: %s", cmds[i], out);
    }
    ck_assert_int_eq(sh("%s --help", DEVTRACE_CLI), 0);
    ck_assert(strstr(out, "transfers") && strstr(out, "export"));
    /* no color into a pipe; color on a terminal unless NO_COLOR is set */
    ck_assert_int_eq(sh("%s transfers %s", DEVTRACE_CLI, trace), 0);
    ck_assert(!strchr(out, '\033'));
    ck_assert_int_eq(sh("script -qec '%s transfers %s' /dev/null", DEVTRACE_CLI, trace), 0);
    ck_assert_msg(strchr(out, '\033'), "no color on a terminal: %s", out);
    ck_assert_int_eq(sh("NO_COLOR=1 script -qec '%s transfers %s' /dev/null", DEVTRACE_CLI, trace), 0);
    ck_assert_msg(!strchr(out, '\033'), "color despite NO_COLOR: %s", out);
}
END_TEST

/* docs/trace-format.md documents every table and column the tracer writes
 * (common/trace_schema.h): each table has its row in the table of tables,
 * "| `name` | ...", and each column is named in it as `column`. */
START_TEST(test_schema_documented) {
    static char doc[1 << 17];
    tu_slurp(DOCS_DIR "/trace-format.md", doc, sizeof doc);
    ck_assert_msg(strlen(doc) > 1000, "cannot read " DOCS_DIR "/trace-format.md");
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *t = &ts_tables[i];
        char head[64], col[64];
        snprintf(head, sizeof head, "\n| `%s` |", t->name);
        const char *row = strstr(doc, head);
        ck_assert_msg(row, "docs/trace-format.md: no row for table %s", t->name);
        row++;
        const char *end = strchr(row, '\n');
        size_t len = end ? (size_t)(end - row) : strlen(row);
        for (int c = 0; c < t->ncols; c++) {
            snprintf(col, sizeof col, "`%s`", t->cols[c].name);
            int found = 0;
            for (const char *p = row; !found && (p = strstr(p, col)) != NULL && p < row + len; p++) found = 1;
            ck_assert_msg(found, "docs/trace-format.md: table %s's row does not name its column %s", t->name,
                          t->cols[c].name);
        }
    }
}
END_TEST

Suite *make_viewer_suite(void) {
    Suite *s = suite_create("viewer");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_report_names_the_chain_and_the_fix);
    tcase_add_test(tc, test_report_without_mismatch);
    tcase_add_test(tc, test_report_ranks_of_a_job);
    tcase_add_test(tc, test_bad_inputs);
    tcase_add_test(tc, test_mismatch_of_an_op_that_succeeded);
    tcase_add_test(tc, test_killed_writer_trace_is_read_from_a_copy);
    tcase_add_test(tc, test_tensors_table);
    tcase_add_test(tc, test_show_one_tensor);
    tcase_add_test(tc, test_transfers_by_site);
    tcase_add_test(tc, test_export_chrome);
    tcase_add_test(tc, test_export_html_in_chromium);
    tcase_add_test(tc, test_help_and_colors);
    tcase_add_test(tc, test_inlined_frames);
    tcase_add_test(tc, test_clean_run_quiet_and_signal);
    tcase_add_test(tc, test_report_says_how_it_ended);
    tcase_add_test(tc, test_python_frames_in_place);
    suite_add_tcase(s, tc);
    TCase *docs = tcase_create("schema");
    tcase_add_test(docs, test_schema_documented);
    suite_add_tcase(s, docs);
    return s;
}
