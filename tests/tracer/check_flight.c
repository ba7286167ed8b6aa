/* The flight recorder (DEVTRACE_MAX_MB, devtrace run --max-mb): a long C loop
 * and a long PyTorch loop stay under an 8 MB cap and a mismatch at their last
 * step still gets its whole chain (origin, fix) in `devtrace report`; a
 * SIGKILL leaves a readable trace within the cap; the trace counts what was
 * pruned; live tensors are never pruned; an unbounded run prunes nothing. */
#include "testutil.h"
#include "tracetest.h"

#include <signal.h>
#include <sys/stat.h>

#define ENV(...)   ((const char *const[]){__VA_ARGS__, NULL})
#define CAP_MB     8
#define C_STEPS    "400000" /* ~3.2 M events, ~50 MB unbounded */
#define PY_STEPS   "60000"  /* ~0.5 M events, ~18 MB unbounded */
#define FLIGHT_SRC TESTS_SOURCE_DIR "/tracer/trace_target.c"
#define FLIGHT_PY  TESTS_SOURCE_DIR "/tracer/flight_loop.py"

/* Bytes of a trace and its WAL, as they are now. */
static long long trace_bytes(const char *name) {
    char path[256];
    struct stat st;
    long long n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) == 0) n += st.st_size;
    snprintf(path, sizeof path, "%s/%s-wal", dir, name);
    if (stat(path, &st) == 0) n += st.st_size;
    return n;
}

/* What a pruned trace says of itself. */
static void check_pruned(sqlite3 *db) {
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='max_mb'"), CAP_MB);
    int64_t pruned = q_int(db, "SELECT value FROM meta WHERE key='pruned_events'");
    int64_t first = q_int(db, "SELECT value FROM meta WHERE key='pruned_first_seq'"),
            last = q_int(db, "SELECT value FROM meta WHERE key='pruned_last_seq'"),
            before = q_int(db, "SELECT value FROM meta WHERE key='pruned_before_seq'");
    ck_assert_int_gt(pruned, 100000);
    ck_assert_msg(first > 0 && last > first && last < before, "pruned span #%lld to #%lld, before #%lld",
                  (long long)first, (long long)last, (long long)before);
    /* nothing left of the span but what a chain keeps: far fewer events than were pruned */
    ck_assert_int_lt(q_int(db, "SELECT count(*) FROM events"), pruned);
    ck_assert_int_gt(q_int(db, "SELECT value FROM meta WHERE key='pruned_rows'"), 0);
}

/* The report of a pruned trace: the note, the odd operand's whole chain
 * from its origin line, and the fix line, at src's markers. */
static void check_report(const char *db, const char *src, const char *file, const char *origin_marker,
                         const char *fix_marker) {
    const char *const argv[] = {DEVTRACE_CLI, "report", db, NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "report: %#x\n%s%s", st, out_buf, err_buf);
    ck_assert_msg(strstr(out_buf, "note: a bounded trace: ") && strstr(out_buf, "events of freed tensors pruned"), "%s",
                  out_buf);
    ck_assert_msg(strstr(out_buf, "under a cap of 8 MB"), "%s", out_buf);
    const char *why = strstr(out_buf, "is on cpu:\n");
    ck_assert_msg(why && strstr(out_buf, "\"scale\""), "no chain for scale:\n%s", out_buf);
    char origin[256], fix[256];
    snprintf(origin, sizeof origin, "%s:%d", file, marker_line(src, origin_marker));
    snprintf(fix, sizeof fix, "%s:%d", file, marker_line(src, fix_marker));
    const char *created = strstr(why, "created on cpu by ones");
    ck_assert_msg(created && on_line(created, origin), "origin %s not in the chain:\n%s", origin, out_buf);
    ck_assert_msg(strstr(why, "none of its links") || strstr(why, "lost nothing to pruning"), "%s", out_buf);
    const char *f = report_headline(out_buf, "fix: ");
    ck_assert_msg(f && on_line(f, fix), "fix line %s:\n%s", fix, out_buf);
}

START_TEST(test_c_loop_stays_under_cap) {
    const char *const argv[] = {DEVTRACE_CLI, "run",        "--max-mb", "8",     "-o", "f.db",
                                "--",         TRACE_TARGET, "flight",   C_STEPS, NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%#x: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "mismatch recorded"), "%s", out_buf);
    ck_assert_msg(strstr(err_buf, "events of freed tensors pruned"), "run's summary: %s", err_buf);
    long long bytes = trace_bytes("f.db");
    ck_assert_msg(bytes > 0 && bytes <= (long long)CAP_MB << 20, "trace of %lld bytes over %d MB", bytes, CAP_MB);
    sqlite3 *db = open_trace("f.db");
    check_pruned(db);
    /* the weight, freed once it was moved, is a link of its live copy's chain: kept */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = 'weight'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM transfers x JOIN tensors t ON t.id = x.src JOIN names n ON"
                               " n.tensor = t.id JOIN strings s ON s.id = n.name WHERE s.text = 'weight'"),
                     1);
    sqlite3_close(db);
    check_report("f.db", FLIGHT_SRC, "trace_target.c", "flight: origin", "flight: move");
}
END_TEST

START_TEST(test_python_loop_stays_under_cap) {
#ifndef DT_HAVE_TORCH_ADAPTER
    printf("python_loop: skipped, the PyTorch adapter is not built\n");
    return;
#endif
    const char *const probe[] = {PYTHON3, "-c", "import torch", NULL};
    if (run(0, NULL, probe) != 0) {
        printf("python_loop: skipped, %s cannot import torch\n", PYTHON3);
        return;
    }
    const char *const argv[] = {DEVTRACE_CLI, "run",   "--max-mb", "8",      "-o", "p.db",
                                "--",         PYTHON3, FLIGHT_PY,  PY_STEPS, NULL};
    int st = run(0, ENV("DEVTRACE_SIM_CUDA=1"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%#x: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "steps " PY_STEPS), "%s", out_buf);
    long long bytes = trace_bytes("p.db");
    ck_assert_msg(bytes > 0 && bytes <= (long long)CAP_MB << 20, "trace of %lld bytes over %d MB", bytes, CAP_MB);
    sqlite3 *db = open_trace("p.db");
    check_pruned(db);
    sqlite3_close(db);
    /* made by a factory that takes device=: the fix is at its origin */
    check_report("p.db", FLIGHT_PY, "flight_loop.py", "devtrace: origin", "devtrace: origin");
}
END_TEST

/* Killed at any moment, the trace is readable and within the cap: each
 * pass commits its deletions and its counts together. */
START_TEST(test_sigkill_leaves_a_bounded_trace) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=k.db", "DEVTRACE_MAX_MB=8"),
                 ((const char *const[]){TRACE_TARGET, "flight_kill", C_STEPS, NULL}));
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    long long bytes = trace_bytes("k.db");
    ck_assert_msg(bytes > 0 && bytes <= (long long)CAP_MB << 20, "trace of %lld bytes over %d MB", bytes, CAP_MB);
    sqlite3 *db = open_trace("k.db");
    check_pruned(db);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 0);
    sqlite3_close(db);
    const char *const argv[] = {DEVTRACE_CLI, "tensors", "k.db", NULL};
    st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out_buf, "scale"), "%#x: %s%s", st, out_buf, err_buf);
}
END_TEST

/* 0 is unbounded: nothing pruned, every tensor kept; a run under its cap
 * prunes nothing either; the default cap is 1024 MB. */
START_TEST(test_unbounded_prunes_nothing) {
    const char *const argv[] = {DEVTRACE_CLI, "run",        "--max-mb", "0",     "-o", "u.db",
                                "--",         TRACE_TARGET, "flight",   "40000", NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%#x: %s", st, err_buf);
    ck_assert_msg(!strstr(err_buf, "pruned"), "%s", err_buf);
    ck_assert_int_gt(trace_bytes("u.db"), (long long)CAP_MB << 20); /* what a cap of 8 would have pruned */
    sqlite3 *db = open_trace("u.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='max_mb'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key LIKE 'prune%'"), 0);
    /* 3 tensors a step (batch, its copy, the output), each made and freed */
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM frees"), 3 * 40000);
    sqlite3_close(db);
    const char *const rep[] = {DEVTRACE_CLI, "report", "u.db", NULL};
    run(0, NULL, rep);
    ck_assert_msg(!strstr(out_buf, "bounded") && !strstr(out_buf, "prun"), "%s", out_buf);
    st = run(1, ENV("DEVTRACE_OUTPUT=d.db", "DEVTRACE_MAX_MB="),
             ((const char *const[]){TRACE_TARGET, "flight", "2000", NULL}));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%#x: %s", st, err_buf);
    db = open_trace("d.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='max_mb'"), 1024);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key LIKE 'prune%'"), 0);
    sqlite3_close(db);
}
END_TEST

/* A program that keeps every tensor alive: nothing of theirs may go, so the
 * trace outgrows the cap (the writer stops trying after passes that drop
 * nothing), and each tensor keeps its chain (its freed base). */
START_TEST(test_live_tensors_are_never_pruned) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=h.db", "DEVTRACE_MAX_MB=1"),
                 ((const char *const[]){TRACE_TARGET, "flight_hoard", "30000", NULL}));
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%#x: %s", st, err_buf);
    ck_assert_int_gt(trace_bytes("h.db"), 1 << 20);
    sqlite3 *db = open_trace("h.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    /* every tensor recorded before the kill is there: ids 1 to N, no gap (a
     * loaded machine's writer may be behind by some when it comes) */
    ck_assert_int_gt(q_int(db, "SELECT count(*) FROM tensor_rows"), 20000);
    ck_assert_int_eq(q_int(db, "SELECT max(id) - min(id) + 1 - count(*) FROM tensor_rows"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM derived d LEFT JOIN tensor_rows r ON r.id = d.src WHERE r.id IS"
                               " NULL"),
                     0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key = 'pruned_events'"), 0);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_bad_caps_are_refused) {
    const char *bad[] = {"-1", "8M", "", "99999999999", NULL};
    for (int i = 0; bad[i]; i++) {
        const char *const argv[] = {DEVTRACE_CLI, "run", "--max-mb", bad[i], "--", TRACE_TARGET, "exit", "0", NULL};
        int st = run(0, NULL, argv);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(err_buf, "--max-mb needs a size in MiB"),
                      "--max-mb '%s': %#x %s", bad[i], st, err_buf);
    }
    const char *const missing[] = {DEVTRACE_CLI, "run", "--max-mb", NULL};
    int st = run(0, NULL, missing);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%#x %s", st, err_buf);
    /* the environment variable: a bad value is said, and the default used */
    st = run(1, ENV("DEVTRACE_OUTPUT=e.db", "DEVTRACE_MAX_MB=lots"),
             ((const char *const[]){TRACE_TARGET, "exit", "0", NULL}));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(err_buf, "DEVTRACE_MAX_MB='lots'"), "%s", err_buf);
    sqlite3 *db = open_trace("e.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='max_mb'"), 1024);
    sqlite3_close(db);
}
END_TEST

Suite *make_flight_suite(void) {
    Suite *s = suite_create("flight");
    TCase *tc = tcase_create("bounded");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_bad_caps_are_refused);
    tcase_add_test(tc, test_unbounded_prunes_nothing);
    tcase_add_test(tc, test_c_loop_stays_under_cap);
    tcase_add_test(tc, test_sigkill_leaves_a_bounded_trace);
    tcase_add_test(tc, test_live_tensors_are_never_pruned);
    tcase_add_test(tc, test_python_loop_stays_under_cap);
    suite_add_tcase(s, tc);
    return s;
}
