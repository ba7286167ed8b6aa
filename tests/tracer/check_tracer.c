/* Tests of libdevtrace.so and `devtrace run`: programs run traced (in child
 * processes), their traces opened with SQLite and checked for the rows each
 * probe must become, stacks that resolve to the right modules, nothing lost
 * on abort/SIGSEGV, at most the last window lost on SIGKILL, fork, threads,
 * output naming, full disk, and a traced run that behaves as the untraced. */
#include "testutil.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracetest.h"

#define TARGET(...) ((const char *const[]){TRACE_TARGET, __VA_ARGS__, NULL})
#define ENV(...)    ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_probes_become_rows) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("basic"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 16);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    ck_assert(strstr(q_text(db, "SELECT value FROM meta WHERE key='argv'"), "\"basic\"") != NULL);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='events_dropped'"), 0);
    ck_assert_str_eq(q_text(db, "SELECT backend FROM devices WHERE name='cuda:0'"), "cuda-sim");
    /* the factory, its name, its transfer and the copy's origin */
    ck_assert_str_eq(
        q_text(
            db,
            "SELECT what||' '||dtype||' '||shape||' '||device FROM v_tensors WHERE name='inputs' AND origin='factory'"),
        "randn float32 [4,3] cpu");
    int64_t x = q_int(db, "SELECT id FROM v_tensors WHERE name='inputs' AND origin='factory'");
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT src_device||'>'||dst_device||' '||bytes||' '||kind||' '||via FROM v_transfers WHERE src=%lld",
             (long long)x);
    ck_assert_str_eq(q_text(db, sql), "cpu>cuda:0 48 to to");
    snprintf(sql, sizeof sql, "SELECT origin||' '||device FROM v_tensors WHERE src=%lld AND origin='transfer'",
             (long long)x);
    ck_assert_str_eq(q_text(db, sql), "transfer cuda:0");
    /* ops: arguments, outputs, status */
    ck_assert_str_eq(q_text(db, "SELECT args FROM v_ops WHERE name='linear'"),
                     q_text(db, "SELECT 'input=t'||(SELECT id FROM v_tensors WHERE origin='transfer')||', weight=t'||"
                                "(SELECT id FROM v_tensors WHERE what='ones' AND device='cuda:0')"));
    ck_assert_int_eq(q_int(db, "SELECT status FROM v_ops WHERE name='linear'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM op_outputs o JOIN ops p ON p.op=o.op JOIN strings s ON "
                               "s.id=p.name WHERE s.text='linear'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT status FROM v_ops WHERE name='matmul'"), 1);
    /* a third argument (op_args_more), an in-place op's output (its input) */
    ck_assert_str_eq(q_text(db, "SELECT args FROM v_ops WHERE name='where'"),
                     q_text(db, "SELECT 'condition=t'||(SELECT id FROM v_tensors WHERE what='gt')||', self=t'||"
                                "(SELECT id FROM v_tensors WHERE what='linear')||', other=t'||"
                                "(SELECT id FROM v_tensors WHERE what='zeros')"));
    ck_assert_str_eq(q_text(db,
                            "SELECT group_concat(pos||':'||device, ' ') FROM (SELECT a.pos, a.device FROM op_args a "
                            "JOIN v_ops o ON o.op=a.op WHERE o.name='where' ORDER BY a.pos)"),
                     "0:65536 1:65536 2:65536");
    ck_assert_str_eq(q_text(db, "SELECT outputs FROM v_ops WHERE name='add_'"),
                     q_text(db, "SELECT 't'||id FROM v_tensors WHERE what='where'"));
    ck_assert_str_eq(q_text(db, "SELECT args FROM v_ops WHERE name='add_'"),
                     q_text(db, "SELECT 'self=t'||(SELECT id FROM v_tensors WHERE what='where')||', other=t'||"
                                "(SELECT id FROM v_tensors WHERE what='linear')"));
    /* and devtrace show finds them by tensor: in the op's row, in the tables for the rest */
    char where[32], zeros[32];
    snprintf(where, sizeof where, "t%s", q_text(db, "SELECT id FROM v_tensors WHERE what='where'"));
    snprintf(zeros, sizeof zeros, "t%s", q_text(db, "SELECT id FROM v_tensors WHERE what='zeros'"));
    const char *const show_where[] = {DEVTRACE_CLI, "show", "t.db", where, NULL};
    ck_assert_int_eq(run(0, NULL, show_where), 0);
    ck_assert_msg(strstr(out_buf, "used by add_ (op #") && strstr(out_buf, "written by add_ (op #"), "%s", out_buf);
    const char *const show_zeros[] = {DEVTRACE_CLI, "show", "t.db", zeros, NULL};
    ck_assert_int_eq(run(0, NULL, show_zeros), 0);
    ck_assert_msg(strstr(out_buf, "used by where (op #"), "%s", out_buf);
    /* and the views made from a tensor (the derived table, by its src index) */
    char linear[32], view_line[64];
    snprintf(linear, sizeof linear, "t%s", q_text(db, "SELECT id FROM v_tensors WHERE what='linear'"));
    snprintf(view_line, sizeof view_line, "t%s made from it: a transpose view",
             q_text(db, "SELECT id FROM v_tensors WHERE what='transpose'"));
    const char *const show_linear[] = {DEVTRACE_CLI, "show", "t.db", linear, NULL};
    ck_assert_int_eq(run(0, NULL, show_linear), 0);
    ck_assert_msg(strstr(out_buf, view_line), "%s", out_buf);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM derived"), q_int(db, "SELECT count(*) FROM tensors WHERE src IS "
                                                                          "NOT NULL"));
    /* the mismatch: message, which operand was elsewhere, before the error row */
    ck_assert_str_eq(q_text(db, "SELECT message FROM v_errors WHERE what='device_mismatch'"),
                     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                     "(when checking argument for argument mat2 in method matmul)");
    ck_assert_int_eq(q_int(db, "SELECT other_arg FROM v_errors WHERE what='device_mismatch'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT a.device FROM op_args a JOIN errors e ON 1 JOIN events v ON v.seq=e.seq AND "
                               "v.op=a.op WHERE e.first_arg IS NOT NULL AND a.pos=1"),
                     0);
    /* a view points at its base; a read back is a transfer to the host; frees */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_tensors v JOIN v_tensors b ON b.id=v.src WHERE v.origin='view' "
                               "AND v.what='transpose' AND b.what='linear'"),
                     1);
    ck_assert_int_eq(
        q_int(db, "SELECT count(*) FROM v_transfers WHERE kind='read' AND dst IS NULL AND src_device='cuda:0'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events WHERE kind=6"), q_int(db, "SELECT count(*) FROM tensors"));
    /* a free that came while its tensor's row was still held is in that row; the rest are frees_late rows;
     * never both, and each after its creation, with its stack */
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM tensors WHERE free_seq IS NOT NULL"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensors t JOIN frees_late l ON l.tensor = t.id WHERE "
                               "t.free_seq IS NOT NULL"),
                     0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM frees f JOIN tensors t ON t.id = f.tensor WHERE f.seq <= t.seq OR "
                               "f.stack IS NULL OR f.thread IS NULL OR f.t < t.t"),
                     0);
    /* every event has a stack, one thread, sequence numbers without holes */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events WHERE stack IS NULL"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM threads"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events"),
                     q_int(db, "SELECT value FROM meta WHERE key='events_recorded'"));
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type='index' AND name IN ('misc_op_end', "
                               "'derived_src', 'names_tensor', 'transfers_src', 'transfers_dst')"),
                     5);
    /* an op's begin and end share one row, its stack and thread */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE len IS NULL OR dur IS NULL OR status IS NULL"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.op = e.op WHERE e.kind = 8 AND "
                               "(e.seq != o.seq + o.len OR e.stack != o.stack OR e.thread != o.thread)"),
                     q_int(db, "SELECT 0"));
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events WHERE kind = 8"), q_int(db, "SELECT count(*) FROM ops"));
    /* an op's outputs carry the stacks of the op's call, taken at its begin */
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM tensors WHERE origin = 1"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensors t JOIN ops o ON o.op = t.op WHERE t.origin = 1 AND "
                               "(t.stack IS NOT o.stack OR t.pystack IS NOT o.pystack)"),
                     0);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_training_step_events_take_its_stack) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=s.db"), TARGET("train"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    sqlite3 *db = open_trace("s.db");
    /* what backward and the optimizer's step do inside (ops, tensors,
     * frees) is made by the runtime in the step's call: it takes the
     * step's stack; a forward op's events outside any step keep their own */
    const char *inside = "SELECT count(*) FROM events e JOIN ops o ON o.thread = e.thread AND o.seq < e.seq AND e.seq "
                         "< o.seq + o.len JOIN strings s ON s.id = o.name WHERE s.text = '%s' AND e.kind != 8 AND "
                         "e.stack %s o.stack";
    char sql[512];
    for (int i = 0; i < 3; i++) {
        const char *step = (const char *[]){"backward", "optimizer.step", "optimizer.zero_grad"}[i];
        snprintf(sql, sizeof sql, inside, step, "=");
        ck_assert_int_ge(q_int(db, sql), 4);
        snprintf(sql, sizeof sql, inside, step, "!=");
        ck_assert_int_eq(q_int(db, sql), 0);
    }
    ck_assert_int_ge(q_int(db, "SELECT count(DISTINCT stack) FROM events"), 8);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_writer_gets_every_cpu_back) {
    /* the writer starts away from the program's CPU, then may use every CPU
     * the program may */
    int st = run(1, ENV("DEVTRACE_OUTPUT=w.db"), TARGET("writer_cpus"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, "writer cpus: same\n");
    st = run(0, ENV("DEVTRACE_OUTPUT=w.db"), TARGET("writer_cpus"));
    ck_assert_str_eq(out_buf, "writer cpus: none\n");
}
END_TEST

START_TEST(test_ops_at_their_edges) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=s.db"), TARGET("slowop"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    sqlite3 *db = open_trace("s.db");
    /* committed while open: its row has no end, the end is a late event
     * whose status and output still show in the views */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops o JOIN strings s ON s.id = o.name WHERE s.text = "
                               "'slow_op' AND o.len IS NULL"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM misc_events WHERE kind = 8 AND op = 900001 AND value = 0"), 1);
    ck_assert_int_eq(q_int(db, "SELECT status FROM v_ops WHERE op = 900001"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM op_outputs o JOIN tensors t ON t.id = o.tensor WHERE "
                               "o.op = 900001 AND t.origin = 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT end_seq > begin_seq FROM v_ops WHERE op = 900001"), 1);
    /* six nested ops, each output made after the ops inside ended: begun
     * inside the outermost, all six and their outputs take its stack, the 2
     * deeper than the 4 kept too */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensors t JOIN ops o ON o.op = t.op WHERE o.op BETWEEN 900010 "
                               "AND 900015 AND t.stack = o.stack AND o.stack = (SELECT stack FROM ops WHERE op = "
                               "900010) AND o.status = 0"),
                     6);
    /* inside an op, a name event takes the op's stack; after an error
     * raised in the op, it is unwound again: the same caller, its own line */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events e JOIN names n ON n.seq = e.seq JOIN strings s ON s.id = "
                               "n.name JOIN ops o ON o.op = 900020 WHERE s.text = 'inside_op' AND e.stack = o.stack"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events e JOIN names n ON n.seq = e.seq JOIN strings s ON s.id = "
                               "n.name JOIN ops o ON o.op = 900020 JOIN frames a ON a.id = e.stack JOIN frames b ON "
                               "b.id = o.stack WHERE s.text = 'after_error' AND e.stack != o.stack AND a.parent = "
                               "b.parent"),
                     1);
    /* an outer op ended with its inner op open: both rows, the inner without end */
    ck_assert_int_eq(q_int(db, "SELECT status FROM v_ops WHERE op = 900002"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM ops WHERE op = 900003 AND len IS NULL"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_ops WHERE op = 900003 AND status IS NULL"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events"),
                     q_int(db, "SELECT value FROM meta WHERE key='events_recorded'"));
    sqlite3_close(db);
}
END_TEST

START_TEST(test_stacks_resolve_to_modules) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("basic"));
    ck_assert(WIFEXITED(st));
    unsigned long long marker = 0;
    ck_assert_int_eq(sscanf(out_buf, "marker %llx", &marker), 1);
    sqlite3 *db = open_trace("t.db");
    /* the creation stack of "marked" passes through make_marked_tensor() in
     * trace_target, at the very address the target printed */
    char sql[1024];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE w(id, ip) AS (SELECT f.id, f.ip FROM frames f WHERE f.id = (SELECT stack FROM v_tensors"
             " WHERE name_at_creation='' AND id=(SELECT tensor FROM names n JOIN strings s ON s.id=n.name WHERE"
             " s.text='marked'))"
             " UNION ALL SELECT p.id, p.ip FROM w JOIN frames c ON c.id = w.id JOIN frames p ON p.id = c.parent)"
             " SELECT count(*) FROM w JOIN modules m ON w.ip >= m.start AND w.ip < m.end"
             " WHERE m.path LIKE '%%/trace_target' AND w.ip = %llu",
             marker);
    ck_assert_int_eq(q_int(db, sql), 1);
    /* and through libdtrt, with the main program's build-id recorded */
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM v_stack_frames WHERE module LIKE '%libdtrt%'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT length(build_id) FROM modules WHERE path LIKE '%/trace_target'"), 40);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM modules WHERE path LIKE '%libc.so%'"), 1);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_stack_depth_setting) {
    run(1, ENV("DEVTRACE_OUTPUT=t.db", "DEVTRACE_STACK_DEPTH=2"), TARGET("basic"));
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT max(level) FROM v_stack_frames"), 1);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='stack_depth'"), 2);
    sqlite3_close(db);
}
END_TEST

/* Traced and untraced runs end the same way; the trace holds every event. */
static void crash_case(const char *mode, int sig) {
    /* in the sanitizer build ASan would take SIGSEGV itself: these tests are
     * about our handler, so ASan leaves the signal alone here */
    const char *const plain_env[] = {"ASAN_OPTIONS=verify_asan_link_order=0:handle_segv=0:handle_abort=0", NULL};
    int plain = run(0, plain_env, TARGET(mode));
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db", "ASAN_OPTIONS=verify_asan_link_order=0:handle_segv=0:handle_abort=0"),
                 TARGET(mode));
    ck_assert_msg(st == plain, "traced status %#x, untraced %#x; stderr: %s", st, plain, err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    ck_assert_int_eq(
        q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='before_crash'"), 1000);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='fatal_signal'"), sig);
    ck_assert_int_eq(q_int(db, "SELECT signal FROM v_errors WHERE what='fatal_signal'"), sig);
    ck_assert_int_gt(q_int(db, "SELECT stack FROM v_errors WHERE what='fatal_signal'"), 0);
    sqlite3_close(db);
}

START_TEST(test_abort_loses_nothing) { crash_case("abort", SIGABRT); }
END_TEST

START_TEST(test_segv_loses_nothing) { crash_case("segv", SIGSEGV); }
END_TEST

START_TEST(test_sigkill_loses_at_most_last_window) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("sigkill"));
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    sqlite3 *db = open_trace("t.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='before_kill'"),
                     100);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 0);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_fork_child_has_own_trace) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("fork"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stderr: %s", err_buf);
    int child = 0;
    ck_assert_msg(sscanf(strstr(out_buf, "child "), "child %d", &child) == 1, "%s", out_buf);
    char host[256] = "", name[512];
    gethostname(host, sizeof host - 1);
    snprintf(name, sizeof name, "t.%s.%d.db", host, child);
    sqlite3 *parent = open_trace("t.db"), *kid = open_trace(name);
    const char *count = "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='%s'";
    char sql[256];
    snprintf(sql, sizeof sql, count, "parent_before");
    ck_assert_int_eq(q_int(parent, sql), 5);
    ck_assert_int_eq(q_int(kid, sql), 0);
    snprintf(sql, sizeof sql, count, "parent_after");
    ck_assert_int_eq(q_int(parent, sql), 3);
    snprintf(sql, sizeof sql, count, "child_only");
    ck_assert_int_eq(q_int(parent, sql), 0);
    ck_assert_int_eq(q_int(kid, sql), 7);
    ck_assert_int_eq(q_int(kid, "SELECT value FROM meta WHERE key='pid'"), child);
    ck_assert_int_eq(q_int(kid, "SELECT value FROM meta WHERE key='complete'"), 1);
    ck_assert_str_eq(q_text(parent, "PRAGMA integrity_check"), "ok");
    /* the child has the parent's module map as its own rows: its stacks symbolize like the parent's */
    ck_assert_int_eq(q_int(kid, "SELECT count(*) FROM modules WHERE path LIKE '%/trace_target'"), 1);
    ck_assert_int_eq(q_int(kid, "SELECT count(*) FROM modules"), q_int(parent, "SELECT count(*) FROM modules"));
    ck_assert_int_gt(q_int(kid, "SELECT count(*) FROM frames"), 0);
    ck_assert_int_eq(q_int(kid, "SELECT count(*) FROM frames f WHERE NOT EXISTS (SELECT 1 FROM modules m WHERE "
                                "f.ip >= m.start AND f.ip < m.end)"),
                     0);
    sqlite3_close(parent);
    sqlite3_close(kid);
    const char *const show[] = {DEVTRACE_CLI, "tensors", name, NULL};
    st = run(0, NULL, show);
    ck_assert_msg(strstr(out_buf, "child_only") && strstr(out_buf, "trace_target.c:") && !strstr(out_buf, "?+0x"), "%s",
                  out_buf);
    /* the parent's report names the child's trace */
    const char *const report[] = {DEVTRACE_CLI, "report", "t.db", NULL};
    st = run(0, NULL, report);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", out_buf, err_buf);
    ck_assert_msg(strstr(out_buf, "processes it forked wrote traces of their own") && strstr(out_buf, name), "%s",
                  out_buf);
}
END_TEST

START_TEST(test_eight_threads) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("threads", "8", "2000"));
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='events_dropped'"), 0);
    /* 6 events per iteration; the first thread to touch the runtime also carries
     * runtime_init and device_backend */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM threads WHERE events BETWEEN 12000 AND 12002"), 8);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events"), 8 * 12000 + 2);
    ck_assert_int_eq(
        q_int(db, "SELECT count(*) FROM (SELECT thread FROM events GROUP BY thread HAVING count(*) >= 12000)"), 8);
    ck_assert_int_eq(q_int(db, "SELECT count(DISTINCT thread) FROM events WHERE kind=3"), 8);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events"), q_int(db, "SELECT max(seq) - min(seq) + 1 FROM events"));
    /* 8 x 4000 tensors of a few kinds: each kind is one tensor_attrs row
     * (no two alike), every row points at one, and the tensors view gives
     * each tensor its kind's attributes */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensor_rows"), 8 * 4000);
    ck_assert_int_le(q_int(db, "SELECT count(*) FROM tensor_attrs"), 16);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM (SELECT DISTINCT dtype, shape, strides, storage_offset, device, "
                               "nbytes, origin, what, out_pos, detail, name FROM tensor_attrs)"),
                     q_int(db, "SELECT count(*) FROM tensor_attrs"));
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensor_rows r LEFT JOIN tensor_attrs a ON a.id = r.attrs "
                               "WHERE a.id IS NULL"),
                     0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM tensors t JOIN tensor_rows r ON r.id = t.id JOIN tensor_attrs a "
                               "ON a.id = r.attrs WHERE t.device IS NOT a.device OR t.shape IS NOT a.shape OR t.what "
                               "IS NOT a.what OR t.nbytes IS NOT a.nbytes"),
                     0);
    sqlite3_close(db);
}
END_TEST

/* Times in ns since the trace began, never going back on a thread, within
 * the run: with the time-stamp counter (where the kernel keeps time with it)
 * and with DEVTRACE_CLOCK=monotonic, and on eight threads at once. */
static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void check_times(sqlite3 *db, int64_t wall_ns) {
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events WHERE t < 0"), 0);
    ck_assert_int_le(q_int(db, "SELECT max(t) FROM events"), wall_ns);
    ck_assert_int_eq(q_int(db, "WITH e AS (SELECT t, lag(t) OVER (PARTITION BY thread ORDER BY seq) AS before FROM "
                               "events) SELECT count(*) FROM e WHERE t < before"),
                     0);
}

START_TEST(test_event_times) {
    for (int monotonic = 0; monotonic <= 1; monotonic++) {
        int64_t t0 = now_ns();
        int st =
            run(1, monotonic ? ENV("DEVTRACE_OUTPUT=m.db", "DEVTRACE_CLOCK=monotonic") : ENV("DEVTRACE_OUTPUT=d.db"),
                TARGET("slowop"));
        int64_t wall = now_ns() - t0;
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        sqlite3 *db = open_trace(monotonic ? "m.db" : "d.db");
        const char *clock = q_text(db, "SELECT value FROM meta WHERE key='clock'");
        if (monotonic) ck_assert_str_eq(clock, "monotonic");
        if (!monotonic) printf("test_event_times: the default clock here: %s\n", clock);
        check_times(db, wall);
        /* slow_op slept 200 ms between its begin and its end (which came
         * after its row was committed) */
        ck_assert_int_ge(q_int(db, "SELECT dur_ns FROM v_ops WHERE op = 900001"), 200 * 1000 * 1000);
        ck_assert_int_lt(q_int(db, "SELECT dur_ns FROM v_ops WHERE op = 900001"), wall);
        sqlite3_close(db);
    }
    int64_t t0 = now_ns();
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("threads", "8", "500"));
    int64_t wall = now_ns() - t0;
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sqlite3 *db = open_trace("t.db");
    check_times(db, wall);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_full_ring_drops_and_counts) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db", "DEVTRACE_RING_KB=64", "DEVTRACE_LOSSY=1"), TARGET("burst", "200000"));
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert(strstr(out_buf, "burst done") != NULL);
    sqlite3 *db = open_trace("t.db");
    int64_t dropped = q_int(db, "SELECT value FROM meta WHERE key='events_dropped'");
    ck_assert_int_gt(dropped, 0);
    ck_assert_int_eq(q_int(db, "SELECT sum(dropped) FROM threads"), dropped);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM events") + dropped,
                     q_int(db, "SELECT sum(events) FROM threads") + dropped);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_ring_goes_round_its_start) {
    /* a program the writer keeps up with puts ~5 MiB through its 8 MiB ring
     * and has only its first 2 MiB mapped: the producer starts over early */
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("paced", "15000"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, "ring mapped past 2 MiB: 0 KiB\n");
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='events_dropped'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = 'paced'"),
                     15000);
    /* every event, in order, none twice: seq has no gap */
    ck_assert_int_eq(q_int(db, "SELECT max(seq) - min(seq) + 1 - count(*) FROM events"), 0);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_errno_kept) {
    /* a probe leaves the program's errno as it found it, the first one too */
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("errno"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, "errno changed by 0 probe calls\n");
}
END_TEST

START_TEST(test_existing_output_kept) {
    char path[256];
    snprintf(path, sizeof path, "%s/t.db", dir);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("exit", "0"));
    slurp(path, out_buf, sizeof out_buf);
    ck_assert_str_eq(out_buf, "precious");
    ck_assert_msg(strstr(err_buf, "t.db exists; writing") && strstr(err_buf, "t.1.db instead"), "%s", err_buf);
    sqlite3 *db = open_trace("t.1.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    sqlite3_close(db);
    /* unless told to overwrite */
    run(1, ENV("DEVTRACE_OUTPUT=t.db", "DEVTRACE_OVERWRITE=1"), TARGET("exit", "0"));
    db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    sqlite3_close(db);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600); /* owner only: it holds argv, paths and stacks */
}
END_TEST

START_TEST(test_default_name) {
    run(1, NULL, TARGET("exit", "0"));
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "devtrace.trace_target.", 22) == 0 && strstr(e->d_name, ".db") &&
            !strstr(e->d_name, "-"))
            found++;
    closedir(d);
    ck_assert_int_eq(found, 1);
    ck_assert_msg(strstr(err_buf, "devtrace: trace written to ") != NULL, "%s", err_buf);
}
END_TEST

START_TEST(test_ranks_get_their_own_names) {
    run(1, ENV("DEVTRACE_OUTPUT=t.db", "RANK=3"), TARGET("exit", "0"));
    char host[256] = "", pat[300];
    gethostname(host, sizeof host - 1);
    snprintf(pat, sizeof pat, "t.%s.rank3.", host);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) found += strncmp(e->d_name, pat, strlen(pat)) == 0 && !strstr(e->d_name, "-");
    closedir(d);
    ck_assert_int_eq(found, 1);
}
END_TEST

START_TEST(test_unwritable_output_warns_once) {
    int plain = run(0, NULL, TARGET("exit", "7"));
    strcpy(plain_out, out_buf);
    int st = run(1, ENV("DEVTRACE_OUTPUT=/nonexistent/dir/t.db"), TARGET("exit", "7"));
    ck_assert_int_eq(st, plain);
    ck_assert_str_eq(out_buf, plain_out);
    ck_assert_msg(strstr(err_buf, "cannot create trace file /nonexistent/dir/t.db") != NULL, "%s", err_buf);
    char *first = strstr(err_buf, "devtrace: warning");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "devtrace: warning")); /* one line */
}
END_TEST

START_TEST(test_full_disk_warns_and_program_goes_on) {
    int plain = run(0, NULL, TARGET("fulldisk"));
    strcpy(plain_out, out_buf);
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("fulldisk"));
    ck_assert_int_eq(st, plain);
    ck_assert_str_eq(out_buf, plain_out);
    ck_assert_str_eq(out_buf, "sum 400000\n");
    ck_assert_msg(strstr(err_buf, "devtrace: warning: cannot write trace") && strstr(err_buf, "tracing is off"), "%s",
                  err_buf);
    sqlite3 *db = open_trace("t.db"); /* what was committed stays readable */
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='before_full'"),
                     10);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_traced_run_behaves_as_untraced) {
    const char *modes[][2] = {{"basic", NULL}, {"exit", "0"}, {"exit", "42"}, {"threads", "4"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *const argv[] = {TRACE_TARGET, modes[i][0], modes[i][1], NULL};
        int plain = run(0, NULL, argv);
        /* the marker line carries an address that moves between runs */
        strcpy(plain_out, strchr(out_buf, '\n') && modes[i][0][0] == 'b' ? strchr(out_buf, '\n') : out_buf);
        int st = run(1, ENV("DEVTRACE_OVERWRITE=1", "DEVTRACE_OUTPUT=same.db"), argv);
        const char *traced = strchr(out_buf, '\n') && modes[i][0][0] == 'b' ? strchr(out_buf, '\n') : out_buf;
        ck_assert_msg(st == plain, "%s: status %#x vs %#x", modes[i][0], st, plain);
        ck_assert_str_eq(traced, plain_out);
    }
}
END_TEST

START_TEST(test_vfork_child_status_is_not_ours) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("vfork"));
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    ck_assert_str_eq(out_buf, "vfork child 127\n");
    sqlite3 *db = open_trace("t.db");
    /* the child's 127 must not pass for ours; ours, returned from main, is recorded under plain LD_PRELOAD */
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 3);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_dlclose_keeps_module_table) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), TARGET("dlopen", DUMMY_LIB));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", out_buf, err_buf);
    sqlite3 *db = open_trace("t.db");
    /* unloaded after the last event that ran while it was loaded, before the next */
    const char *named = "(SELECT n.seq FROM names n JOIN strings s ON s.id=n.name WHERE s.text='%s')";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM modules WHERE path LIKE '%%libdt_dummy.so' AND unloaded_seq > ");
    snprintf(sql + strlen(sql), sizeof sql - strlen(sql), named, "while_loaded");
    strcat(sql, " AND unloaded_seq <= ");
    snprintf(sql + strlen(sql), sizeof sql - strlen(sql), named, "after_unload");
    ck_assert_int_eq(q_int(db, sql), 1);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_python_stacks) {
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : NULL;
#ifdef DEVTRACE_SANITIZED
    printf("test_python_stacks: skipped under the sanitizers (python3 is not built with ASan, so the ASan-built tracer "
           "cannot be preloaded into it); the normal build runs it\n");
    return;
#endif
    if (!py) {
        printf("test_python_stacks: skipped: no /usr/bin/python3 on this machine\n");
        return;
    }
    char script[256];
    snprintf(script, sizeof script, "%s/script.py", dir);
    FILE *f = fopen(script, "w");
    fprintf(f,
            "import ctypes\n"
            "rt = ctypes.PyDLL('%s')  # PyDLL keeps the GIL held during calls\n"
            "rt.dt_cpu_device.restype = ctypes.c_uint64\n"
            "def make():\n"
            "    return rt.dt_zeros(1, (ctypes.c_int64 * 1)(4), 0, ctypes.c_uint64(rt.dt_cpu_device()))\n"
            "t = make()\n"
            "print('made')\n",
            DTRT_LIB);
    fclose(f);
    const char *const argv[] = {py, script, NULL};
    int st = run(1, ENV("DEVTRACE_OUTPUT=t.db"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", out_buf, err_buf);
    sqlite3 *db = open_trace("t.db");
    char sql[512];
    snprintf(
        sql, sizeof sql,
        "SELECT count(*) FROM v_py_frames p JOIN v_tensors t ON t.pystack = p.stack WHERE t.what='zeros'"
        " AND p.file = '%s' AND ((p.line = 5 AND p.function = 'make') OR (p.line = 6 AND p.function = '<module>'))",
        script);
    ck_assert_int_eq(q_int(db, sql), 2);
    ck_assert_str_eq(q_text(db, "SELECT value FROM meta WHERE key='python'"), "3.11");
    sqlite3_close(db);
}
END_TEST

/* ---------------------------------------------------------------- devtrace run */

START_TEST(test_run_passes_status_and_records_it) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "r.db", TRACE_TARGET, "exit", "42", NULL};
    int st = run(0, NULL, argv);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    ck_assert_msg(strstr(err_buf, "devtrace: trace written to ") && strstr(err_buf, "/r.db"), "%s", err_buf);
    sqlite3 *db = open_trace("r.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 42);
    sqlite3_close(db);
    /* killed by a signal: 128 + N, and the trace says so */
    const char *const kill_argv[] = {DEVTRACE_CLI, "run", "-o", "k.db", TRACE_TARGET, "sigkill", NULL};
    st = run(0, NULL, kill_argv);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL);
    db = open_trace("k.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='killed_by_signal'"), SIGKILL);
    sqlite3_close(db);
}
END_TEST

/* exec ends a process's trace: one that recorded events keeps it, finished
 * and saying what it exec'd; one that recorded nothing (the shell of a
 * script) leaves none, so the name asked for goes to the real program. */
START_TEST(test_exec_ends_the_trace) {
    const char *const chain[] = {DEVTRACE_CLI, "run",        "-o",   "e.db", TRACE_TARGET,
                                 "exec",       TRACE_TARGET, "exit", "7",    NULL};
    int st = run(0, NULL, chain);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 7, "stderr: %s", err_buf);
    ck_assert_msg(strstr(err_buf, "/e.db\n") && strstr(err_buf, "/e.1.db\n"), "%s", err_buf);
    sqlite3 *db = open_trace("e.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='before_exec'"),
                     4);
    ck_assert_str_eq(q_text(db, "SELECT value FROM meta WHERE key='exec'"), TRACE_TARGET);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key='exit_status'"), 0);
    sqlite3_close(db);
    db = open_trace("e.1.db"); /* the new image: the status is its */
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 7);
    sqlite3_close(db);

    char script[256];
    snprintf(script, sizeof script, "%s/job.sh", dir);
    FILE *f = fopen(script, "w");
    fprintf(f, "#!/bin/sh\nexec %s exit 9\n", TRACE_TARGET);
    fclose(f);
    chmod(script, 0755);
    const char *const sh[] = {DEVTRACE_CLI, "run", "-o", "s.db", script, NULL};
    st = run(0, NULL, sh);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 9, "stderr: %s", err_buf);
    ck_assert_msg(access("s.1.db", F_OK) != 0, "the shell left a trace: %s", err_buf);
    ck_assert_msg(strstr(err_buf, "exists") == NULL, "%s", err_buf);
    db = open_trace("s.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 9);
    ck_assert(strstr(q_text(db, "SELECT value FROM meta WHERE key='argv'"), "trace_target") != NULL);
    sqlite3_close(db);

    const char *const bad[] = {DEVTRACE_CLI, "run", "-o", "f.db", TRACE_TARGET, "exec", "/nonexistent/prog", NULL};
    st = run(0, NULL, bad);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 5, "stderr: %s", err_buf);
    ck_assert_msg(strstr(err_buf, "exec of /nonexistent/prog failed (No such file or directory)"), "%s", err_buf);
    ck_assert_str_eq(out_buf, "exec failed\n");
    db = open_trace("f.db");
    ck_assert_str_eq(q_text(db, "SELECT value FROM meta WHERE key='exec_failed'"), "No such file or directory");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 5);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_run_bad_programs) {
    const char *const missing[] = {DEVTRACE_CLI, "run", "no-such-program-xyz", NULL};
    int st = run(0, NULL, missing);
    ck_assert_int_eq(WEXITSTATUS(st), 127);
    ck_assert_str_eq(err_buf, "devtrace: no-such-program-xyz: command not found\n");
    char plain_file[128], junk[128], expect[256];
    snprintf(plain_file, sizeof plain_file, "%s/notes.txt", dir);
    snprintf(junk, sizeof junk, "%s/junk.bin", dir);
    FILE *f = fopen(plain_file, "w");
    fputs("not a program", f);
    fclose(f);
    f = fopen(junk, "w");
    fputs("\x01\x02 garbage", f);
    fclose(f);
    chmod(plain_file, 0644);
    chmod(junk, 0755);
    const char *const noexec[] = {DEVTRACE_CLI, "run", plain_file, NULL};
    st = run(0, NULL, noexec);
    ck_assert_int_eq(WEXITSTATUS(st), 126);
    snprintf(expect, sizeof expect, "devtrace: %s: Permission denied\n", plain_file);
    ck_assert_str_eq(err_buf, expect);
    const char *const badexec[] = {DEVTRACE_CLI, "run", junk, NULL};
    st = run(0, NULL, badexec);
    ck_assert_int_eq(WEXITSTATUS(st), 126);
    snprintf(expect, sizeof expect, "devtrace: %s: Exec format error\n", junk);
    ck_assert_str_eq(err_buf, expect);
    const char *const nofile[] = {DEVTRACE_CLI, "run", "./nope", NULL};
    st = run(0, NULL, nofile);
    ck_assert_int_eq(WEXITSTATUS(st), 127);
    const char *const badout[] = {DEVTRACE_CLI, "run", "-o", "/nonexistent/x.db", TRACE_TARGET, NULL};
    st = run(0, NULL, badout);
    ck_assert_int_eq(WEXITSTATUS(st), 125);
    ck_assert(strstr(err_buf, "cannot write the trace to /nonexistent/x.db") != NULL);
    ck_assert_str_eq(out_buf, ""); /* nothing ran */
    const char *const noprog[] = {DEVTRACE_CLI, "run", NULL};
    st = run(0, NULL, noprog);
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    ck_assert(strstr(err_buf, "usage: devtrace run") != NULL);
}
END_TEST

START_TEST(test_run_keeps_existing_preload_and_fork_traces) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "f.db", TRACE_TARGET, "fork", NULL};
    int st = run(0, ENV("LD_PRELOAD=" DUMMY_LIB), argv);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_msg(strstr(err_buf, "devtrace: trace of process ") != NULL, "%s", err_buf);
    sqlite3 *db = open_trace("f.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM modules WHERE path LIKE '%libdt_dummy.so'"), 1);
    sqlite3_close(db);
}
END_TEST

/* dtp_source_fact: each fact a row of source_facts (strings interned),
 * the same fact given twice kept once, a call outside the contract
 * ignored; dtp_tensor_role: a known role a row of roles, an unknown one and
 * a call without a tensor left out; the viewer reads the trace, and a trace
 * of schema 9 (before source_facts and roles) too, but refuses a version 12
 * trace without the table or with a fact whose string is not recorded. */
static void exec_db(const char *name, const char *sql) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql, err ? err : "");
    sqlite3_close(db);
}

START_TEST(test_source_facts) {
    int st = run(1, ENV("DEVTRACE_OUTPUT=f.db"), TARGET("source_facts"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, "facts done\n");
    sqlite3 *db = open_trace("f.db");
    ck_assert_int_eq(q_int(db, "PRAGMA user_version"), 16);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM source_facts"), 6);
    ck_assert_str_eq(q_text(db, "SELECT group_concat(line || ' ' || key || '=' || value, '|') FROM (SELECT * FROM "
                                "source_facts_v WHERE file = 'prog.py' ORDER BY line, key, value)"),
                     "0 sha256=00ff|3 call=torch.ones\t\t1\t3\t20\t1|3 call=x.to\tdevice\t0\t4\t9\t1|3 stmt=3 "
                     "4|4 stmt=3 4");
    ck_assert_str_eq(q_text(db, "SELECT value FROM source_facts_v WHERE file = 'lib/other.py' AND line = 3"), "3 3");
    /* roles (probe ABI 4): the known one, as ids; the unknown role and the call without a tensor left out */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM roles"), 1);
    ck_assert_str_eq(q_text(db, "SELECT role || ' ' || key || ' ' || (of_tensor = tensor - 1) FROM v_roles"),
                     "optimizer_state exp_avg 1");
    /* the file, the key and the value are interned: one string each */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM strings WHERE text IN ('prog.py', 'stmt', '3 4')"), 3);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM source_facts_v WHERE line = 1 OR line < 0"), 0);
    sqlite3_close(db);
    const char *const tensors[] = {DEVTRACE_CLI, "tensors", "f.db", NULL};
    st = run(0, NULL, tensors);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "with_facts"), "%s", out_buf);
    /* schema 9: no source_facts, read all the same */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/f.db %s/v9.db && cp %s/f.db %s/nofacts.db && cp %s/f.db %s/badfact.db", dir, dir,
             dir, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    exec_db("v9.db", "DROP VIEW v_roles; DROP TABLE roles; DROP VIEW source_facts_v; DROP TABLE source_facts; "
                     "PRAGMA user_version = 9;");
    const char *const old[] = {DEVTRACE_CLI, "tensors", "v9.db", NULL};
    st = run(0, NULL, old);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "with_facts"), "%s", out_buf);
    exec_db("nofacts.db", "DROP VIEW source_facts_v; DROP TABLE source_facts;");
    const char *const nofacts[] = {DEVTRACE_CLI, "tensors", "nofacts.db", NULL};
    st = run(0, NULL, nofacts);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
                      strstr(err_buf, "damaged trace: no table source_facts (a version 16 trace has one)"),
                  "status %d: %s", st, err_buf);
    exec_db("badfact.db", "UPDATE source_facts SET value = 987654 WHERE line = 4;");
    const char *const bad[] = {DEVTRACE_CLI, "tensors", "badfact.db", NULL};
    st = run(0, NULL, bad);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(err_buf, "damaged trace: source_facts file ") &&
                      strstr(err_buf, "value 987654 is not a recorded string"),
                  "status %d: %s", st, err_buf);
    /* untraced, the probe is libdtrt's empty one */
    st = run(0, NULL, TARGET("source_facts"));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr: %s", st, err_buf);
}
END_TEST

/* The fallback symbol lookup (tracer/core/resolve.c) while another thread loads and unloads a library: the
 * lookup walks the loaded objects with dl_iterate_phdr and must not dlopen inside the walk (that took the
 * loader's locks in the reverse order of a dlopen and hung a traced program that dlopen'd while the writer
 * looked up __cxa_demangle). Check's timeout catches a hang. */
void *tr_lib_sym(const char *const *prefixes, const char *name);
static _Atomic int g_loading;
static _Atomic long g_loads;
static void *load_loop(void *arg) {
    (void)arg;
    while (atomic_load(&g_loading)) {
        void *h = dlopen(DUMMY_LIB, RTLD_NOW | RTLD_LOCAL);
        if (h) dlclose(h);
        atomic_fetch_add(&g_loads, 1);
    }
    return NULL;
}
/* Lookups for a few seconds (a dlopen under ASan takes milliseconds on a loaded 2-core machine, so a fixed
 * count of lookups ran past Check's timeout there without any hang), and at least 200 loads beside them. */
START_TEST(test_lib_sym_beside_dlopen) {
    static const char *const libs[] = {"libc.so", "libdt_dummy", NULL};
    pthread_t t;
    atomic_store(&g_loading, 1);
    atomic_store(&g_loads, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, load_loop, NULL), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long lookups = 0, found = 0;
    for (;;) {
        found += tr_lib_sym(libs, "getpid") != NULL;
        lookups++;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double secs = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (lookups >= 20000 || (secs > 3 && atomic_load(&g_loads) >= 200)) break;
    }
    atomic_store(&g_loading, 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(found, lookups);
    ck_assert_msg(atomic_load(&g_loads) > 0, "no library was loaded beside the lookups");
}
END_TEST

Suite *make_tracer_suite(void) {
    Suite *s = suite_create("tracer");
    TCase *tc = tcase_create("traced");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_probes_become_rows);
    tcase_add_test(tc, test_ops_at_their_edges);
    tcase_add_test(tc, test_training_step_events_take_its_stack);
    tcase_add_test(tc, test_writer_gets_every_cpu_back);
    tcase_add_test(tc, test_stacks_resolve_to_modules);
    tcase_add_test(tc, test_stack_depth_setting);
    tcase_add_test(tc, test_abort_loses_nothing);
    tcase_add_test(tc, test_segv_loses_nothing);
    tcase_add_test(tc, test_sigkill_loses_at_most_last_window);
    tcase_add_test(tc, test_fork_child_has_own_trace);
    tcase_add_test(tc, test_eight_threads);
    tcase_add_test(tc, test_event_times);
    tcase_add_test(tc, test_full_ring_drops_and_counts);
    tcase_add_test(tc, test_ring_goes_round_its_start);
    tcase_add_test(tc, test_errno_kept);
    tcase_add_test(tc, test_existing_output_kept);
    tcase_add_test(tc, test_default_name);
    tcase_add_test(tc, test_ranks_get_their_own_names);
    tcase_add_test(tc, test_unwritable_output_warns_once);
    tcase_add_test(tc, test_full_disk_warns_and_program_goes_on);
    tcase_add_test(tc, test_traced_run_behaves_as_untraced);
    tcase_add_test(tc, test_vfork_child_status_is_not_ours);
    tcase_add_test(tc, test_dlclose_keeps_module_table);
    tcase_add_test(tc, test_python_stacks);
    tcase_add_test(tc, test_run_passes_status_and_records_it);
    tcase_add_test(tc, test_exec_ends_the_trace);
    tcase_add_test(tc, test_run_bad_programs);
    tcase_add_test(tc, test_run_keeps_existing_preload_and_fork_traces);
    suite_add_tcase(s, tc);
    TCase *resolve = tcase_create("resolve");
    tcase_set_timeout(resolve, 60);
    tcase_add_test(resolve, test_lib_sym_beside_dlopen);
    suite_add_tcase(s, resolve);
    TCase *facts = tcase_create("facts");
    tcase_add_checked_fixture(facts, setup, teardown);
    tcase_set_timeout(facts, 120);
    tcase_add_test(facts, test_source_facts);
    suite_add_tcase(s, facts);
    return s;
}
