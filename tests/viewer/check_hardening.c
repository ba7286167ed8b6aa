/* Nothing injected, nothing left behind: a trace is untrusted input (it may
 * be mailed to you), so every viewer command is run on one whose strings
 * and meta values carry terminal controls (ESC, the one-byte CSI 0x9b, CR),
 * bytes that are not UTF-8, `</script>`, `&` and U+2028; the text output
 * must hold none of the controls and be UTF-8, the JSON must parse, the
 * HTML export must keep it all inside its JSON data. Output paths that are
 * not regular files are refused, half documents are never printed, and a
 * viewer stopped by a signal removes its private copy of a trace. */
#include "testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64], trace[128], evil[128];
static char out[1 << 18], err[1 << 16];
static size_t out_len;

static size_t slurp(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return n;
}

/* Runs a shell command; stdout and stderr land in out and err. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[4096], full[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "(%s) >%s/out 2>%s/err", cmd, dir, dir);
    int st = system(full);
    char p[128];
    snprintf(p, sizeof p, "%s/out", dir);
    out_len = slurp(p, out, sizeof out);
    snprintf(p, sizeof p, "%s/err", dir);
    slurp(p, err, sizeof err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void exec_sql(const char *path, const char *sql) {
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A hostile copy of the trace: every interned string and the meta values
 * the viewer prints carry controls, broken UTF-8 and markup. */
#define EVIL_TAIL "CAST(x'1b5b324a9bff0d07' AS TEXT) || '</script><b>&' || char(8232) || char(155)"
static const char evil_sql[] =
    "UPDATE strings SET text = text || " EVIL_TAIL ";"
    "UPDATE meta SET value = '1</script><script>alert(1)//' || " EVIL_TAIL " WHERE key IN ('pid', 'exit_status');"
    "UPDATE meta SET value = value || " EVIL_TAIL " WHERE key IN ('program', 'host');";

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/dt_hard.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/bug.db", dir);
    snprintf(evil, sizeof evil, "%s/evil.db", dir);
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o %s -- %s", DEVTRACE_CLI, trace, MISMATCH_EXAMPLE), 1);
    ck_assert_int_eq(sh("cp %s %s", trace, evil), 0);
    exec_sql(evil, evil_sql);
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

/* Whether buf (n bytes) is well-formed UTF-8. */
static int utf8_ok(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        int k = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!k || i + (size_t)k > n) return 0;
        for (int j = 1; j < k; j++)
            if ((p[i + j] & 0xc0) != 0x80) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Text for a terminal: no control byte but newline, no C1 (raw or as
 * UTF-8), nothing that is not UTF-8. */
static void expect_terminal_safe(const char *what) {
    const unsigned char *p = (const unsigned char *)out;
    ck_assert_msg(out_len > 0, "%s printed nothing (%s)", what, err);
    for (size_t i = 0; i < out_len; i++) {
        ck_assert_msg(p[i] >= 0x20 || p[i] == '\n', "%s: control byte 0x%02x at %zu: %s", what, p[i], i, out);
        ck_assert_msg(p[i] != 0x7f, "%s: DEL at %zu", what, i);
        ck_assert_msg(!(p[i] == 0xc2 && i + 1 < out_len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f),
                      "%s: a C1 control at %zu", what, i);
    }
    ck_assert_msg(utf8_ok(p, out_len), "%s: output is not UTF-8", what);
    ck_assert_msg(strstr(out, "\\x1b[2J\\x9b\\xff\\x0d\\x07"), "%s: the controls are not shown escaped: %s", what, out);
}

/* out as a JSON document: parsed by Python's strict UTF-8 and JSON readers. */
static void expect_json(const char *what) {
    char p[128];
    snprintf(p, sizeof p, "%s/doc.json", dir);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(out, 1, out_len, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json,sys; d=json.loads(open(sys.argv[1],\"rb\").read().decode(\"utf-8\")); "
             "assert \"\\ufffd\" in json.dumps(d, ensure_ascii=False)' %s",
             PYTHON3, p);
    ck_assert_msg(system(cmd) == 0, "%s: not valid JSON, or the broken UTF-8 was not replaced: %s", what, out);
    ck_assert_msg(!strstr(out, "</script") && !strchr(out, '<') && !strchr(out, '&'), "%s: markup left raw", what);
    ck_assert_msg(!strstr(out, "\xe2\x80\xa8"), "%s: U+2028 left raw", what);
}

START_TEST(test_hostile_strings_are_escaped) {
    static const char *const cmds[] = {
        "report",      "report --all-frames", "tensors",        "transfers",       "show",
        "show --json", "report --json",       "tensors --json", "transfers --json"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int show = !strncmp(cmds[i], "show", 4), json = strstr(cmds[i], "--json") != NULL;
        int rc = sh("%s %s %s %s", DEVTRACE_CLI, cmds[i], evil, show ? "1" : "");
        ck_assert_msg(rc == 0 || rc == 1, "%s: exit %d: %s", cmds[i], rc, err);
        if (json)
            expect_json(cmds[i]);
        else
            expect_terminal_safe(cmds[i]);
    }
    /* the export: the trace's text only inside the page's JSON data */
    ck_assert_int_eq(sh("%s export --format html -o %s/x.html %s", DEVTRACE_CLI, dir, evil), 0);
    char p[128];
    snprintf(p, sizeof p, "%s/x.html", dir);
    out_len = slurp(p, out, sizeof out);
    char *data = strstr(out, "id=\"data\">"), *end = data ? strstr(data, "</script>") : NULL;
    ck_assert_ptr_nonnull(end);
    ck_assert_msg(!strstr(end + 9, "alert(1)"), "the meta value escaped its JSON");
    *end = '\0';
    memmove(out, data + 10, (size_t)(end - data - 10) + 1);
    out_len = strlen(out);
    expect_json("export --format html");
    ck_assert_int_eq(sh("%s export --format chrome -o - %s", DEVTRACE_CLI, evil), 0);
    expect_json("export --format chrome");
    /* and the page, opened in a browser: its script runs to its end and
     * the meta value is text on the page, not a script of its own */
    ck_assert_msg(sh("command -v chromium") == 0,
                  "Debian's chromium is needed for this test (scripts/install-deps.sh installs it)");
    ck_assert_int_eq(sh("timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                        "--user-data-dir=%s/chr --dump-dom file://%s/x.html 2>/dev/null",
                        dir, dir),
                     0);
    ck_assert_msg(strstr(out, "data-rendered=\"yes\""), "the page's script did not finish:\n%.2000s", out);
    ck_assert_msg(strstr(out, "(pid 1&lt;/script&gt;&lt;script&gt;alert(1)//"), "the pid is not text:\n%.3000s", out);
    ck_assert_int_eq(count(out, "<script"), 2); /* the page's own two */
}
END_TEST

START_TEST(test_json_is_all_or_nothing) {
    /* the second trace has no tensor 1 under that name: no half document */
    char other[160];
    snprintf(other, sizeof other, "%s/other.db", dir);
    ck_assert_int_eq(sh("cp %s %s", trace, other), 0);
    exec_sql(other, "UPDATE strings SET text = 'renamed' WHERE text = 'labels';");
    ck_assert_int_eq(sh("%s show --json %s %s labels", DEVTRACE_CLI, trace, other), 2);
    ck_assert_msg(out_len == 0, "half a document: %s", out);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    /* a bad id or name: one line, nothing on stdout, text or JSON */
    static const char *const bad[] = {"999999", "t0", "no_such_name", "t99999999999999999999"};
    for (int json = 0; json < 2; json++)
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(sh("%s show %s %s %s", DEVTRACE_CLI, json ? "--json" : "", trace, bad[i]), 2);
            ck_assert_msg(out_len == 0 && strchr(err, '\n') == err + strlen(err) - 1, "show %s: %s%s", bad[i], out,
                          err);
        }
}
END_TEST

START_TEST(test_output_paths_that_are_not_files) {
    char fifo[160], sub[160];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    const char *targets[] = {"/dev/full", "/dev/null", fifo, sub};
    const char *what[] = {"a character device", "a character device", "a FIFO", "a directory"};
    for (int i = 0; i < 4; i++) {
        struct stat before, after;
        ck_assert_int_eq(stat(targets[i], &before), 0);
        ck_assert_int_eq(sh("%s export --format chrome -o %s %s", DEVTRACE_CLI, targets[i], trace), 2);
        ck_assert_msg(strstr(err, what[i]) && strchr(err, '\n') == err + strlen(err) - 1, "%s: %s", targets[i], err);
        ck_assert_int_eq(stat(targets[i], &after), 0);
        ck_assert_int_eq(before.st_mode, after.st_mode);
        ck_assert(before.st_ino == after.st_ino);
    }
    ck_assert_int_eq(sh("ls -A %s | grep -c tmp", dir), 1); /* no temp file left */
    /* a regular file is replaced */
    ck_assert_int_eq(
        sh("echo old > %s/ok.json && %s export --format chrome -o %s/ok.json %s", dir, DEVTRACE_CLI, dir, trace), 0);
    ck_assert_int_eq(sh("head -c 1 %s/ok.json", dir), 0);
    ck_assert_str_eq(out, "{");
}
END_TEST

/* A trace left with a write-ahead log is read from a private copy in
 * $TMPDIR; a viewer ended by SIGINT, SIGTERM or SIGHUP while it prints
 * removes it. The viewer is held mid-output by a pipe nobody reads (its
 * output is far larger than the pipe), so the signal finds it reading. */
START_TEST(test_private_copy_removed_on_signal) {
    char big[160], tmp[160];
    snprintf(big, sizeof big, "%s/big.db", dir);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    ck_assert_int_eq(sh("%s run -o %s -- %s/mlp_train", DEVTRACE_CLI, big, EXAMPLES_BINARY_DIR), 0);
    sqlite3 *db; /* held open with a WAL, as a killed program leaves it; pid of no live process */
    ck_assert_int_eq(sqlite3_open(big, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; UPDATE meta SET value = "
                                  "'2147483646' WHERE key = 'pid';",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        int fd[2];
        ck_assert_int_eq(pipe(fd), 0);
        fcntl(fd[0], F_SETPIPE_SZ, 4096);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            dup2(fd[1], 1);
            close(fd[0]), close(fd[1]);
            setenv("TMPDIR", tmp, 1);
            for (int k = 0; k < 3; k++)
                signal(sigs[k], SIG_DFL); /* as a terminal leaves them (a background job ignores SIGINT) */
            execl(DEVTRACE_CLI, DEVTRACE_CLI, "tensors", big, (char *)NULL);
            _exit(127);
        }
        close(fd[1]);
        char c;
        ck_assert_int_eq(read(fd[0], &c, 1), 1); /* it has opened the trace and is printing */
        ck_assert_int_eq(sh("ls %s | grep -c devtrace-read", tmp), 0);
        ck_assert_int_eq(kill(pid, sigs[i]), 0);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        close(fd[0]);
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i], "signal %d: status 0x%x", sigs[i], st);
        ck_assert_int_eq(sh("ls -A %s", tmp), 0);
        ck_assert_msg(out_len == 0, "left behind after signal %d: %s", sigs[i], out);
    }
    sqlite3_close(db);
}
END_TEST

TCase *make_hostguard_tcase(void); /* check_hostguard.c */

/* Values no tracer writes but a damaged or hostile trace may hold: a cycle
 * in a stack's frames is refused with one line (never walked for ever),
 * extreme times, counts and device numbers are read without overflow (the
 * sanitizer build makes any signed overflow fatal). */
START_TEST(test_damaged_values) {
    char p[160];
    snprintf(p, sizeof p, "%s/cycle.db", dir);
    ck_assert_int_eq(sh("cp %s %s", trace, p), 0);
    exec_sql(p, "UPDATE frames SET parent = id WHERE id = (SELECT max(id) FROM frames);");
    static const char *const cmds[] = {"report", "tensors", "transfers", "show"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(sh("%s %s %s %s", DEVTRACE_CLI, cmds[i], p, i == 3 ? "1" : ""), 2);
        ck_assert_msg(strstr(err, "damaged trace: a native stack has a frame whose parent is not an earlier frame") &&
                          strchr(err, '\n') == err + strlen(err) - 1,
                      "%s: %s", cmds[i], err);
        ck_assert_int_eq((int)out_len, 0);
    }
    snprintf(p, sizeof p, "%s/extreme.db", dir);
    ck_assert_int_eq(sh("cp %s %s", trace, p), 0);
    exec_sql(p, "UPDATE ops SET t = 9223372036854775807, dur = -9223372036854775808;"
                "UPDATE transfers SET bytes = 9223372036854775807, src_device = -9223372036854775808, dst_device = "
                "9223372036854775807;"
                "UPDATE misc_events SET t = 9223372036854775807; UPDATE tensor_rows SET t = -9223372036854775808;"
                "UPDATE meta SET value = '-9223372036854775808' WHERE key = 'start_time_ns';");
    static const char *const all[] = {"report",    "report --json",    "tensors",
                                      "transfers", "transfers --json", "export --format chrome -o -",
                                      "show",      "show --json"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int rc = sh("%s %s %s %s", DEVTRACE_CLI, all[i], p, !strncmp(all[i], "show", 4) ? "1" : "");
        ck_assert_msg(rc == 0 || rc == 1, "%s: exit %d: %s", all[i], rc, err);
    }
    ck_assert_int_eq(sh("%s export --format html -o %s/x.html %s", DEVTRACE_CLI, dir, p), 0);
}
END_TEST

/* A copy of the trace, edited by sql: what every reading command says of
 * it is one line on stderr saying `expect`, exit 2, nothing on stdout. */
static void expect_refused(const char *name, const char *sql, const char *expect) {
    char p[160];
    snprintf(p, sizeof p, "%s/%s.db", dir, name);
    ck_assert_int_eq(sh("cp %s %s", trace, p), 0);
    exec_sql(p, sql);
    static const char *const cmds[] = {"report",    "report --json", "tensors",
                                       "transfers", "show",          "export --format chrome -o -"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int rc = sh("%s %s %s %s", DEVTRACE_CLI, cmds[i], p, !strcmp(cmds[i], "show") ? "1" : "");
        ck_assert_msg(rc == 2, "%s, %s: exit %d, not 2: %s", name, cmds[i], rc, err);
        ck_assert_msg(strstr(err, expect) && strchr(err, '\n') == err + strlen(err) - 1,
                      "%s, %s: not the one line '%s': %s", name, cmds[i], expect, err);
        ck_assert_msg(out_len == 0, "%s, %s: printed %s", name, cmds[i], out);
    }
}

/* Each edit breaks what common/trace_schema.h says of the trace (a table or
 * a column gone or renamed, a reference the writer guarantees left
 * dangling, a value out of its range): refused at open with the table, the
 * row and what is wrong. */
START_TEST(test_damaged_schema) {
    expect_refused("no_column", /* the declaration edited, the rows left as they are */
                   "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, ', dropped INTEGER', '') "
                   "WHERE name = 'threads';",
                   "damaged trace: table threads has no column dropped (column 5 of 5)");
    expect_refused("renamed_column",
                   "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, 'attrs INTEGER', "
                   "'attributes INTEGER') WHERE name = 'tensor_rows';",
                   "damaged trace: table tensor_rows: column 7 is not attrs but attributes");
    expect_refused("retyped_column",
                   "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql, 'kind INTEGER', "
                   "'kind TEXT') WHERE name = 'transfers';",
                   "damaged trace: table transfers: column kind is declared 'INTEGER', not TEXT");
    expect_refused("no_table", "DROP TABLE cuda_activity;",
                   "damaged trace: no table cuda_activity (a version 16 trace");
    expect_refused("renamed_table", "PRAGMA legacy_alter_table=ON; ALTER TABLE frames RENAME TO frames_old;",
                   "damaged trace: no table frames (a version 16 trace has one)");
    expect_refused("table_is_view", "DROP TABLE kinds; CREATE VIEW kinds AS SELECT 1 AS kind, 'x' AS name;",
                   "damaged trace: no table kinds");
    /* a counted table: its ids 1..N, the reference a range test */
    expect_refused("dangling_stack",
                   "UPDATE tensor_rows SET stack = 99999 WHERE id = (SELECT min(id) FROM tensor_rows);",
                   "damaged trace: tensor_rows row ");
    ck_assert_msg(strstr(err, ": stack 99999 is not a recorded native stack\n"), "%s", err);
    expect_refused("dangling_thread", "UPDATE ops SET thread = 0 WHERE op = (SELECT max(op) FROM ops);",
                   "is not a recorded thread");
    ck_assert_msg(strstr(err, "damaged trace: ops row ") && strstr(err, ": thread 0 is not a recorded thread"), "%s",
                  err);
    /* a gap in the ids (a row deleted): each reference looked up */
    expect_refused("dangling_string", "DELETE FROM strings WHERE id = (SELECT shape FROM tensor_attrs WHERE id = 1);",
                   "damaged trace: tensor_attrs row 1: shape ");
    ck_assert_msg(strstr(err, " is not a recorded string\n"), "%s", err);
    expect_refused("dangling_attrs", "DELETE FROM tensor_attrs WHERE id = 1;", "is not a recorded tensor_attrs row");
    expect_refused("dangling_derived", "INSERT INTO derived VALUES(987654321, 1);",
                   "damaged trace: derived row 987654321: tensor 987654321 is not a recorded tensor");
    expect_refused("dtype", "UPDATE tensor_attrs SET dtype = 42 WHERE id = 2;",
                   "damaged trace: tensor_attrs row 2: dtype 42 is not an integer from 0 to 8");
    expect_refused("origin", "UPDATE tensor_attrs SET origin = -1 WHERE id = 1;",
                   "damaged trace: tensor_attrs row 1: origin -1 is not an integer from 0 to 5");
    expect_refused("event_kind", "UPDATE misc_events SET kind = 99 WHERE seq = (SELECT min(seq) FROM misc_events);",
                   ": kind 99 is not an integer from 1 to 14");
    expect_refused("negative_count", "UPDATE ops SET nargs = -3 WHERE op = (SELECT min(op) FROM ops);",
                   ": nargs -3 is not an integer >= 0");
    expect_refused("text_count", "UPDATE threads SET events = 'many' WHERE id = 1;",
                   "damaged trace: threads row 1: events 'many' is not an integer >= 0");
    expect_refused("arg_pos", "INSERT INTO op_args_more VALUES(1, 0, NULL, 5, 0);",
                   "damaged trace: op_args_more op 1 pos 0: pos 0 is not an integer >= 2");
    /* the header set, no table made yet: the program ended first (not damage) */
    char p[160];
    snprintf(p, sizeof p, "%s/notables.db", dir);
    exec_sql(p, "PRAGMA application_id = 1146376771; PRAGMA user_version = 9;");
    ck_assert_int_eq(sh("%s report %s", DEVTRACE_CLI, p), 2);
    ck_assert_msg(strstr(err, "the trace holds no tables: the traced program ended (or was killed) before the tracer "
                              "made them\n") &&
                      strchr(err, '\n') == err + strlen(err) - 1 && out_len == 0,
                  "%s", err);
    /* a table too large to check whole: its last rows are always checked */
    expect_refused("large_table",
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO "
                   "frees_late SELECT 1000000000 + i, NULL, NULL, 1, NULL, NULL FROM n;"
                   "UPDATE frees_late SET stack = 99999 WHERE tensor = 1000019990;",
                   "damaged trace: frees_late row 1000019990: stack 99999 is not a recorded native stack");
    expect_refused("large_table_start",
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO "
                   "frees_late SELECT 1000000000 + i, NULL, NULL, 1, NULL, NULL FROM n;"
                   "UPDATE frees_late SET thread = 77 WHERE tensor = (SELECT min(tensor) FROM frees_late);",
                   ": thread 77 is not a recorded thread");
    /* untrusted text in the line is escaped */
    expect_refused("escaped", "UPDATE threads SET events = 'x' || char(27) || '[2J' WHERE id = 1;",
                   "events 'x\\x1b[2J' is not an integer >= 0");
}
END_TEST

/* What the writer does not guarantee is read: a tensor an op, a transfer,
 * a view, a name or a free refers to may have been dropped (lossy mode) or
 * made before tracing; a table the viewer does not know, or a column after
 * the ones it reads, is let be. */
START_TEST(test_tolerated_edits) {
    char p[160];
    snprintf(p, sizeof p, "%s/dropped.db", dir);
    ck_assert_int_eq(sh("cp %s %s", trace, p), 0);
    exec_sql(p, "DELETE FROM tensor_rows WHERE id = (SELECT arg0_tensor FROM ops WHERE arg0_tensor NOT IN "
                "(SELECT tensor FROM derived) AND arg0_tensor <> 1 ORDER BY op LIMIT 1);"
                "UPDATE ops SET arg1_tensor = 987654321 WHERE op = (SELECT min(op) FROM ops WHERE nargs > 1);"
                "UPDATE transfers SET src = 987654322, dst = 987654323;"
                "UPDATE derived SET src = 987654324;"
                "INSERT INTO names VALUES(1000000, 987654325, 1);"
                "INSERT INTO frees_late VALUES(987654326, 1000001, 0, 1, NULL, NULL);"
                "INSERT INTO op_outputs_more VALUES(987654327, 0, 987654328);"
                "UPDATE errors SET first_arg = 99, other_arg = -5;"
                "CREATE TABLE my_notes(tensor INTEGER, note TEXT);"
                "ALTER TABLE ops ADD COLUMN my_flag INTEGER;");
    static const char *const cmds[] = {"report",    "report --json", "tensors",
                                       "transfers", "show",          "export --format chrome -o -"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int rc = sh("%s %s %s %s", DEVTRACE_CLI, cmds[i], p, !strcmp(cmds[i], "show") ? "1" : "");
        ck_assert_msg((rc == 0 || rc == 1) && !strstr(err, "damaged"), "%s: exit %d: %s", cmds[i], rc, err);
        ck_assert_msg(out_len > 0, "%s printed nothing: %s", cmds[i], err);
    }
}
END_TEST

Suite *make_hardening_suite(void) {
    Suite *s = suite_create("hardening");
    TCase *tc = tcase_create("viewer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hostile_strings_are_escaped);
    tcase_add_test(tc, test_json_is_all_or_nothing);
    tcase_add_test(tc, test_output_paths_that_are_not_files);
    tcase_add_test(tc, test_private_copy_removed_on_signal);
    tcase_add_test(tc, test_damaged_values);
    tcase_add_test(tc, test_damaged_schema);
    tcase_add_test(tc, test_tolerated_edits);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, make_hostguard_tcase());
    return s;
}
