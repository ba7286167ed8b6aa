/* The tracer never kills or changes the program it watches, and never
 * loses events without saying so: a trace that reaches RLIMIT_FSIZE gets
 * one warning and is marked incomplete while the program goes on (its own
 * writes past the limit still get their SIGXFSZ); a full ring makes the
 * producer wait for the writer, so a burst loses nothing, and the lossy
 * mode (DEVTRACE_LOSSY=1) counts every drop where `devtrace run` and
 * `devtrace report` say it. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
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
    /* the limit set by the shell, over devtrace run itself and the training
     * example: it trains and exits as untraced, and run is not killed
     * recording the status */
    for (int kb = 200; kb <= 1000; kb += 800) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "ulimit -f %d; exec %s/mlp_train", kb, EXAMPLES_BINARY_DIR);
        const char *const untraced[] = {"/bin/sh", "-c", cmd, NULL};
        plain = run(0, ENV("DEVTRACE_SIM_CUDA=1"), untraced);
        ck_assert(WIFEXITED(plain) && WEXITSTATUS(plain) == 0);
        strcpy(plain_out, out_buf);
        snprintf(cmd, sizeof cmd, "ulimit -f %d; exec %s run -o u%d.db -- %s/mlp_train", kb, DEVTRACE_CLI, kb,
                 EXAMPLES_BINARY_DIR);
        const char *const traced[] = {"/bin/sh", "-c", cmd, NULL};
        st = run(0, ENV("DEVTRACE_SIM_CUDA=1"), traced);
        ck_assert_msg(st == plain, "ulimit -f %d: status 0x%x; stderr: %s", kb, st, err_buf);
        ck_assert_str_eq(out_buf, plain_out);
        ck_assert_msg(count(err_buf, "devtrace: warning") == 1 && strstr(last_line(err_buf), "incomplete"),
                      "ulimit -f %d: %s", kb, err_buf);
    }
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

/* A burst that fills a small ring many times over: by default the producer
 * waits for the writer and every event is in the trace, in order; in lossy
 * mode events are dropped and counted, and `devtrace run`'s last line,
 * the report's header and its JSON say how many. */
START_TEST(test_full_ring_waits_and_loses_nothing) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "w.db", TRACE_TARGET, "burst", "200000", NULL};
    int st = run(0, ENV("DEVTRACE_RING_KB=64"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err_buf);
    ck_assert_str_eq(out_buf, "burst done\n");
    ck_assert_msg(!strstr(err_buf, "dropped") && !strstr(err_buf, "incomplete"), "%s", err_buf);
    sqlite3 *db = open_trace("w.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='events_dropped'"), 0);
    ck_assert_int_gt(q_int(db, "SELECT value FROM meta WHERE key='ring_waits'"), 0); /* it was full, and waited */
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = 'burst'"),
                     200000);
    ck_assert_int_eq(q_int(db, "SELECT max(seq) - min(seq) + 1 - count(*) FROM events"), 0); /* no gap */
    sqlite3_close(db);
    const char *const report[] = {DEVTRACE_CLI, "report", "w.db", NULL};
    st = run(0, NULL, report);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strstr(out_buf, "note:"), "%s", out_buf);
}
END_TEST

START_TEST(test_lossy_mode_says_how_many_were_dropped) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "l.db", TRACE_TARGET, "burst", "200000", NULL};
    int st = run(0, ENV("DEVTRACE_RING_KB=64", "DEVTRACE_LOSSY=1"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err_buf);
    sqlite3 *db = open_trace("l.db");
    long long dropped = (long long)q_int(db, "SELECT value FROM meta WHERE key='events_dropped'");
    sqlite3_close(db);
    ck_assert_int_gt(dropped, 0);
    char want[128];
    snprintf(want, sizeof want, "%lld events dropped (full rings in lossy mode, DEVTRACE_LOSSY=1, between events #",
             dropped);
    ck_assert_msg(strstr(last_line(err_buf), want), "run's last line: %s", err_buf);
    const char *const report[] = {DEVTRACE_CLI, "report", "l.db", NULL};
    run(0, NULL, report);
    ck_assert_msg(!strncmp(out_buf, "note: ", 6) && strstr(out_buf, want), "%s", out_buf);
    const char *const json[] = {DEVTRACE_CLI, "report", "--json", "l.db", NULL};
    run(0, NULL, json);
    snprintf(want, sizeof want, "\"events_dropped\": %lld,", dropped);
    ck_assert_msg(strstr(out_buf, want), "%s", out_buf);
    /* plain LD_PRELOAD: the tracer's own line says it */
    const char *const plain[] = {TRACE_TARGET, "burst", "200000", NULL};
    run(1, ENV("DEVTRACE_RING_KB=64", "DEVTRACE_LOSSY=1", "DEVTRACE_OUTPUT=p.db"), plain);
    ck_assert_msg(strstr(err_buf, "events dropped (full rings in lossy mode"), "%s", err_buf);
}
END_TEST

/* A chain whose span holds dropped events says a link of it may be
 * missing; one made after the last drop does not. */
START_TEST(test_chain_over_dropped_events_says_so) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "g.db", TRACE_TARGET, "burst_mismatch", "200000", NULL};
    /* no C source facts: written at the first mismatch, thousands of them, a 64 KB lossy ring drops some
     * after made_after, which this test is not about */
    int st = run(0, ENV("DEVTRACE_RING_KB=64", "DEVTRACE_LOSSY=1", "DEVTRACE_C_FACTS=0"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out_buf, "mismatches recorded"), "%s%s", out_buf,
                  err_buf);
    sqlite3 *db = open_trace("g.db");
    long long first = (long long)q_int(db, "SELECT value FROM meta WHERE key='first_dropped_seq'"),
              last = (long long)q_int(db, "SELECT value FROM meta WHERE key='last_dropped_seq'"),
              after = (long long)q_int(db, "SELECT min(n.seq) FROM names n JOIN strings s ON s.id = n.name WHERE "
                                           "s.text = 'made_after'");
    long long facts = (long long)q_int(db, "SELECT count(*) FROM source_facts"),
              top = (long long)q_int(db, "SELECT max(seq) FROM misc_events");
    sqlite3_close(db);
    ck_assert_msg(first > 0 && last >= first && after > last,
                  "first %lld last %lld after %lld (facts %lld, last seq %lld)", first, last, after, facts, top);
    const char *const report[] = {DEVTRACE_CLI, "report", "--no-source", "g.db", NULL};
    st = run(0, NULL, report);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s", out_buf);
    /* the first mismatch's block (made_before) has the line, the second's not */
    char *first_block = strstr(out_buf, "error: device mismatch");
    char *second = first_block ? strstr(first_block, "\nerror: device mismatch") : NULL;
    ck_assert_msg(second, "%s", out_buf);
    *second = '\0';
    char want[160];
    snprintf(want, sizeof want, "dropped between #%lld and #%lld, within this chain's span", first, last);
    ck_assert_msg(strstr(out_buf, "made_before") && strstr(out_buf, want), "%s", out_buf);
    ck_assert_msg(strstr(second + 1, "made_after") && !strstr(second + 1, "within this chain's span"), "%s",
                  second + 1);
    const char *const json[] = {DEVTRACE_CLI, "report", "--json", "g.db", NULL};
    run(0, NULL, json);
    char *one = strstr(out_buf, "\"may_miss_links\": true"), *none = strstr(out_buf, "\"may_miss_links\": false");
    ck_assert_msg(one && none && !strstr(one + 1, "\"may_miss_links\": true"), "%s", out_buf);
}
END_TEST

/* A full ring while the program is inside dlopen (a library's
 * constructor records events, the loader's lock held): the producer waits
 * for the writer as anywhere else (the writer's look at the module list,
 * dl_iterate_phdr, takes the loader's write lock, which dlopen does not
 * hold while constructors run), and nothing is dropped or stopped. */
START_TEST(test_full_ring_inside_dlopen_waits) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "d.db", TRACE_TARGET, "dlopen", CTOR_BURST_LIB, NULL};
    int st = run(0, ENV("DEVTRACE_RING_KB=64", "DT_CTOR_BURST=300000"), argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", out_buf, err_buf);
    ck_assert_msg(!strstr(err_buf, "dropped") && !strstr(err_buf, "stopped") && !strstr(err_buf, "warning"), "%s",
                  err_buf);
    sqlite3 *db = open_trace("d.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = 'ctor'"),
                     300000);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='events_dropped'"), 0);
    ck_assert_int_gt(q_int(db, "SELECT value FROM meta WHERE key='ring_waits'"), 0); /* it was full, and waited */
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    sqlite3_close(db);
}
END_TEST

/* A run that used only the cpu cannot show a placement bug: the report
 * says so, and how to get a simulated GPU; one with a GPU does not. */
START_TEST(test_cpu_only_run_hints_at_simulation) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "c.db", TRACE_TARGET, "burst", "10", NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err_buf);
    const char *const report[] = {DEVTRACE_CLI, "report", "c.db", NULL};
    st = run(0, NULL, report);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out_buf, "only the cpu was used") &&
                      strstr(out_buf, "DEVTRACE_SIM_CUDA=1 devtrace run"),
                  "%s", out_buf);
    const char *const json[] = {DEVTRACE_CLI, "report", "--json", "c.db", NULL};
    run(0, NULL, json);
    ck_assert_msg(strstr(out_buf, "\"cpu_only\": true"), "%s", out_buf);
    const char *const gpu[] = {DEVTRACE_CLI, "run", "-o", "s.db", MISMATCH_EXAMPLE, "--fixed", NULL};
    st = run(0, ENV("DEVTRACE_SIM_CUDA=1"), gpu);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", err_buf);
    const char *const report2[] = {DEVTRACE_CLI, "report", "--json", "s.db", NULL};
    st = run(0, NULL, report2);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out_buf, "\"cpu_only\": false"), "%s", out_buf);
}
END_TEST

/* A producer's own failure (dtp_producer_failed): one warning, tracing
 * off, the program unchanged, and the trace and its report say why, with
 * the producer's text escaped. */
START_TEST(test_producer_failure_stops_tracing_and_says_why) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "f.db", TRACE_TARGET, "producer_failed", NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(out_buf, "producer done\n"), "%s%s", out_buf,
                  err_buf);
    const char *w = strstr(err_buf, "warning: the test's producer failed (\\x1b[31mred\\x1b[0m)");
    ck_assert_msg(w && !strstr(w + 1, "warning:") && strstr(err_buf, "tracing is off, the program goes on"), "%s",
                  err_buf);
    sqlite3 *db = open_trace("f.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = "
                               "'before_failure'"),
                     3);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id = n.name WHERE s.text = "
                               "'after_failure'"),
                     0);
    sqlite3_close(db);
    const char *const report[] = {DEVTRACE_CLI, "report", "f.db", NULL};
    run(0, NULL, report);
    ck_assert_msg(strstr(out_buf, "tracing stopped before the program ended: the test's producer failed (\\x1b[31mred"),
                  "%s", out_buf);
}
END_TEST

/* How many files in the test's directory end in .db. */
static int count_traces(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 3 && !strcmp(e->d_name + len - 3, ".db");
    }
    if (d) closedir(d);
    return n;
}

/* Under a wrapper that forks the program (timeout, a shell running it as
 * one of several commands), the trace with the program's events carries
 * the -o name and its status, and it is the run's only trace. */
START_TEST(test_wrapper_leaves_the_name_to_the_program) {
    const char *const timeout_argv[] = {DEVTRACE_CLI, "run",        "-o",   "w.db", "timeout",
                                        "60",         TRACE_TARGET, "exit", "3",    NULL};
    int st = run(0, NULL, timeout_argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "%s", err_buf);
    sqlite3 *db = open_trace("w.db");
    ck_assert_str_eq(q_text(db, "SELECT value FROM meta WHERE key='program'"), TRACE_TARGET);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM names n JOIN strings s ON s.id=n.name WHERE s.text='x'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 3);
    sqlite3_close(db);
    ck_assert_int_eq(count_traces(), 1);
    char script[600];
    snprintf(script, sizeof script, "%s exit 4; exit 4", TRACE_TARGET);
    const char *const sh_argv[] = {DEVTRACE_CLI, "run", "-o", "s.db", "sh", "-c", script, NULL};
    st = run(0, NULL, sh_argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 4, "%s", err_buf);
    db = open_trace("s.db");
    ck_assert_str_eq(q_text(db, "SELECT value FROM meta WHERE key='program'"), TRACE_TARGET);
    sqlite3_close(db);
    ck_assert_int_eq(count_traces(), 2);
}
END_TEST

START_TEST(test_killed_before_any_event) {
    const char *const argv[] = {DEVTRACE_CLI, "run", "-o", "k.db", "sh", "-c", "kill -9 $$", NULL};
    int st = run(0, NULL, argv);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL);
    ck_assert_msg(strstr(err_buf, "killed by SIGKILL before any event was written") &&
                      strchr(err_buf, '\n') == err_buf + strlen(err_buf) - 1,
                  "%s", err_buf);
    ck_assert_int_eq(count_traces(), 0);
}
END_TEST

/* Killed after the tracer switched its file to WAL (which writes the header) and before it committed its
 * tables: the file is not empty, yet no trace. The program puts such a file (made here by SQLite, as the
 * tracer begins) in place of its trace before it is killed, which a race gives now and then. */
START_TEST(test_killed_before_the_schema_was_committed) {
    char header[128];
    snprintf(header, sizeof header, "%s/header.sqlite", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(header, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; PRAGMA user_version=1;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    struct stat hs;
    ck_assert(stat(header, &hs) == 0 && hs.st_size > 0);
    const char *const argv[] = {DEVTRACE_CLI,
                                "run",
                                "-o",
                                "k2.db",
                                "sh",
                                "-c",
                                "rm -f k2.db k2.db-wal k2.db-shm && mv header.sqlite k2.db && kill -9 $$",
                                NULL};
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL, "%s", err_buf);
    ck_assert_msg(strstr(err_buf, "killed by SIGKILL before any event was written") &&
                      strchr(err_buf, '\n') == err_buf + strlen(err_buf) - 1,
                  "%s", err_buf);
    ck_assert_int_eq(count_traces(), 0);
}
END_TEST

/* plain LD_PRELOAD, no devtrace run: a status returned from main is recorded */
START_TEST(test_status_returned_from_main) {
    const char *const argv[] = {TRACE_TARGET, "exit", "5", NULL};
    int st = run(1, ENV("DEVTRACE_OUTPUT=m.db"), argv);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 5);
    sqlite3 *db = open_trace("m.db");
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='exit_status'"), 5);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key='complete'"), 1);
    sqlite3_close(db);
}
END_TEST

/* The thread id of pid's thread named name, or 0 once pid has no such
 * thread (yet). */
static pid_t thread_named(pid_t pid, const char *name) {
    char p[400], comm[64];
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    struct dirent *e;
    pid_t tid = 0;
    while (d && !tid && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "/proc/%d/task/%s/comm", (int)pid, e->d_name);
        FILE *f = fopen(p, "r");
        if (f && fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name))) tid = (pid_t)atoi(e->d_name);
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return tid;
}

/* A writer that stops draining (its thread stopped by ptrace, as a hung
 * disk would stop it) cannot hang the program: the producer waits for it,
 * bounded, then tracing goes off with one warning and the program ends as
 * it would untraced; the trace is marked incomplete. */
START_TEST(test_stuck_writer_cannot_hang_the_program) {
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
            e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1), dup2(e, 2), dup2(go[0], 0);
        close(go[1]);
        setenv("LD_PRELOAD", TRACER_LIB, 1);
        setenv("DEVTRACE_OUTPUT", "x.db", 1);
        setenv("DEVTRACE_RING_KB", "64", 1);
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1); /* LSan's own ptrace would fail here */
        if (chdir(dir) != 0) _exit(99);
        execl(TRACE_TARGET, TRACE_TARGET, "stall", "200000", (char *)NULL);
        _exit(98);
    }
    close(go[0]);
    pid_t writer = 0;
    for (int i = 0; i < 20000 && !writer; i++) { /* it starts with the program; 20 s at most */
        writer = thread_named(pid, "devtrace-writer");
        if (!writer) usleep(1000);
    }
    ck_assert_int_gt(writer, 0);
    char trace[160];
    snprintf(trace, sizeof trace, "%s/x.db", dir);
    int ready = 0; /* the writer made the trace (its meta is committed): stopped now, it is stuck in its loop */
    for (int i = 0; i < 20000 && !ready; i++) {
        sqlite3 *db;
        if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
            ready = sqlite3_exec(db, "SELECT value FROM meta WHERE key = 'pid'", NULL, NULL, NULL) == SQLITE_OK;
        sqlite3_close(db);
        if (!ready) usleep(1000);
    }
    ck_assert(ready);
    if (ptrace(PTRACE_SEIZE, writer, NULL, NULL) != 0) {
        printf("SKIP: ptrace is not allowed here (%s): the stuck writer cannot be made\n", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return;
    }
    ck_assert_int_eq(ptrace(PTRACE_INTERRUPT, writer, NULL, NULL), 0);
    int ws;
    ck_assert_int_eq(waitpid(writer, &ws, __WALL), writer); /* stopped now */
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    /* a traced thread is reaped by its tracer before its process's status
     * is reported: wait for both (the writer is never resumed) */
    int st = 0;
    for (;;) {
        int s2;
        pid_t w = waitpid(-1, &s2, __WALL);
        ck_assert_int_gt(w, 0);
        if (w == pid) {
            st = s2;
            break;
        }
    }
    slurp(out_path, out_buf, sizeof out_buf);
    slurp(err_path, err_buf, sizeof err_buf);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x: %s", st, err_buf);
    ck_assert_str_eq(out_buf, "burst done\n");
    ck_assert_msg(count(err_buf, "devtrace: warning") == 1 && strstr(err_buf, "read nothing of thread"), "%s", err_buf);
    const char *const report[] = {DEVTRACE_CLI, "report", "x.db", NULL};
    st = run(0, NULL, report);
    /* the report's note, or, when the writer stopped before it committed
     * an event, the one line for a trace with none: either says why */
    ck_assert_msg(strstr(out_buf, "this trace is incomplete: ") ||
                      strstr(err_buf, "the trace holds no events: the tracer stopped writing"),
                  "%s%s", out_buf, err_buf);
}
END_TEST

TCase *make_hostguard_tcase(void) {
    TCase *tc = tcase_create("tracer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_file_size_limit_does_not_kill_the_program);
    tcase_add_test(tc, test_the_programs_own_sigxfsz_still_reaches_it);
    tcase_add_test(tc, test_full_ring_waits_and_loses_nothing);
    tcase_add_test(tc, test_lossy_mode_says_how_many_were_dropped);
    tcase_add_test(tc, test_chain_over_dropped_events_says_so);
    tcase_add_test(tc, test_full_ring_inside_dlopen_waits);
    tcase_add_test(tc, test_cpu_only_run_hints_at_simulation);
    tcase_add_test(tc, test_producer_failure_stops_tracing_and_says_why);
    tcase_add_test(tc, test_wrapper_leaves_the_name_to_the_program);
    tcase_add_test(tc, test_killed_before_any_event);
    tcase_add_test(tc, test_killed_before_the_schema_was_committed);
    tcase_add_test(tc, test_status_returned_from_main);
    tcase_add_test(tc, test_stuck_writer_cannot_hang_the_program);
    return tc;
}
