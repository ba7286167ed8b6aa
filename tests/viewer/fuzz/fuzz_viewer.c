/* libFuzzer harness over the viewer: each input becomes a trace file read
 * by every reading command, in text and JSON (report, tensors, transfers,
 * show by id and by name, export chrome and html to stdout, with stdout
 * sent to /dev/null). A trace is untrusted input: none of them may crash,
 * leak, overflow or hang on it. Two ways to make the trace:
 *  - raw (the default): the input is the file, bytes as they are;
 *  - DEVTRACE_FUZZ_SEEDS=DIR: the input edits one of DIR's real traces
 *    through SQL: its first byte picks the trace, then records of (table,
 *    column, row, value: a 64-bit integer, a small or extreme one, NULL or
 *    a text)
 *    each overwrite one cell. Byte flips rarely get past SQLite's own
 *    checks; this reaches the viewer's logic with hostile ids, counts,
 *    links (a cycle in frames.parent) and strings.
 * Built with -DDEVTRACE_FUZZ_FIX, the harness is the `fix` target instead: each input's trace goes through
 * `fix` and `fix --verify` (without a say, with --run-recorded-command, with a command after --) with the
 * command runner stubbed: the stub runs nothing, and aborts when --verify would have run a command without
 * the user's say, or another command than the user's.
 * Built and run by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined). */
#include "vw.h"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_path[96];

#ifdef DEVTRACE_FUZZ_FIX
static int g_may_run;          /* the input's command gave --verify the user's say */
static const char *g_user_cmd; /* the command the user gave after --, or NULL */

/* fix --verify's runner: checks what it was asked to run, runs nothing (no patched program: no trace, and
 * verify says so). */
static int stub_runner(char *const *argv, const char *cwd, char *const *env) {
    (void)cwd;
    if (!g_may_run) abort(); /* a command from the trace would have run without the user's say */
    int i = 0;
    while (argv[i] && strcmp(argv[i], "--")) i++;
    if (!argv[i] || !argv[i + 1] || strcmp(argv[1], "run")) abort();
    if (g_user_cmd && strcmp(argv[i + 1], g_user_cmd)) abort(); /* not the user's command */
    for (int k = 0; env && env[k]; k++)
        if (strncmp(env[k], "DEVTRACE_SIM_CUDA=", 18) && strcmp(env[k], "DEVTRACE_QUIET=1") &&
            strncmp(env[k], "PYTHONPATH=", 11))
            abort(); /* an environment change verify does not say it makes */
    return 0;
}
#endif

static void run(int (*cmd)(int, char **), const char *a0, const char *a1, const char *a2, const char *a3,
                const char *a4, const char *a5) {
    const char *v[8] = {a0, a1, a2, a3, a4, a5, NULL};
    int n = 0;
    while (v[n]) n++;
    cmd(n, (char **)v);
    fflush(stdout);
}

/* The real traces edited in the SQL mode (DEVTRACE_FUZZ_SEEDS). */
#define MAX_SEEDS 32
static struct {
    unsigned char *data;
    size_t size;
} g_seeds[MAX_SEEDS];
static int g_nseeds;

static void load_seeds(const char *dir) {
    struct dirent **names;
    int nnames = scandir(dir, &names, NULL, alphasort); /* in name order: an input picks the same trace each time */
    if (nnames < 0) abort();
    for (int i = 0; i < nnames; i++) {
        const struct dirent *e = names[i];
        if (e->d_name[0] == '.' || g_nseeds == MAX_SEEDS) continue;
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        FILE *f = fopen(p, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n)
            g_seeds[g_nseeds].data = buf, g_seeds[g_nseeds++].size = (size_t)n;
        else
            free(buf);
        fclose(f);
    }
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    if (!g_nseeds) abort();
}

static void put(const unsigned char *data, size_t size) {
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
}

/* The cell edits of the SQL mode, applied to the trace at g_path. */
static void edit(const uint8_t *p, size_t n) {
    sqlite3 *db;
    if (sqlite3_open(g_path, &db) != SQLITE_OK) abort();
    sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    char tables[64][64];
    int ntables = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name", -1, &st, NULL) ==
        SQLITE_OK) {
        while (ntables < 64 && sqlite3_step(st) == SQLITE_ROW)
            snprintf(tables[ntables++], sizeof tables[0], "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    for (int edits = 0; ntables && n >= 5 && edits < 16; edits++) {
        const char *table = tables[p[0] % ntables];
        int col = p[1], row = p[2] | p[3] << 8, kind = p[4] & 3;
        p += 5, n -= 5;
        char column[64] = "", sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT name FROM pragma_table_info('%s') LIMIT 1 OFFSET "
                 "(%d %% (SELECT count(*) FROM pragma_table_info('%s')))",
                 table, col, table);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                snprintf(column, sizeof column, "%s", (const char *)sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
        if (!column[0]) continue;
        snprintf(sql, sizeof sql,
                 "UPDATE \"%s\" SET \"%s\" = ?1 WHERE \"%s\" IS (SELECT \"%s\" FROM \"%s\" LIMIT 1 OFFSET ?2)", table,
                 column, column, column, table);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) continue;
        if (kind == 0 && n >= 8) {
            int64_t v;
            memcpy(&v, p, 8);
            sqlite3_bind_int64(st, 1, v);
            p += 8, n -= 8;
        } else if (kind == 1 && n >= 1) { /* the values that break arithmetic and links */
            static const int64_t odd[] = {
                INT64_MAX, INT64_MIN,        INT64_MAX - 1,    -1,     0,  1, 2, 3, 1 << 16, (1 << 16) + 1, INT32_MAX,
                INT32_MIN, (int64_t)1 << 32, (int64_t)1 << 62, -65536, 255};
            sqlite3_bind_int64(st, 1, p[0] < 16 * 8 ? odd[p[0] % 16] : (int8_t)p[0]);
            p += 1, n -= 1;
        } else if (kind == 3 && n >= 1) {
            size_t len = p[0] < n - 1 ? p[0] : n - 1;
            sqlite3_bind_text(st, 1, (const char *)p + 1, (int)len, SQLITE_TRANSIENT);
            p += 1 + len, n -= 1 + len;
        } else {
            sqlite3_bind_null(st, 1);
        }
        sqlite3_bind_int(st, 2, row % 64);
        sqlite3_step(st);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[] = "/tmp/devtrace-fuzz.XXXXXX";
    if (!mkdtemp(dir)) abort();
    snprintf(g_path, sizeof g_path, "%s/t.db", dir);
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 1) < 0) abort(); /* the commands' output: only its making is under test */
    if (dup2(null, 0) < 0) abort();             /* and no terminal to ask at: --verify never waits */
    close(null);
#ifdef DEVTRACE_FUZZ_FIX
    vw_fix_runner = stub_runner;
#endif
    setenv("NO_COLOR", "1", 1);
    const char *seeds = getenv("DEVTRACE_FUZZ_SEEDS");
    if (seeds && *seeds) load_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_nseeds) {
        if (!size) return 0;
        const int seed = (data[0] & 7) % g_nseeds;
        put(g_seeds[seed].data, g_seeds[seed].size);
        edit(data + 1, size - 1);
        const char *keep = getenv("DEVTRACE_FUZZ_KEEP"); /* the edited trace, for a regression input */
        if (keep && *keep) {
            char cmd[4400];
            snprintf(cmd, sizeof cmd, "cp '%s' '%s'", g_path, keep);
            if (system(cmd) != 0) abort();
        }
    } else {
        put(data, size);
    }
#ifdef DEVTRACE_FUZZ_FIX
    /* fix, then --verify three ways (the SQL mode: one per input, by the first byte's high bits) */
    int which = g_nseeds ? (data[0] >> 3) % 4 : -1;
    g_may_run = 0, g_user_cmd = NULL;
    if (which == 0 || which < 0) run(vw_cmd_fix, "fix", g_path, NULL, NULL, NULL, NULL);
    if (which == 1 || which < 0) run(vw_cmd_fix, "fix", "--verify", g_path, NULL, NULL, NULL);
    g_may_run = 1;
    if (which == 2 || which < 0) run(vw_cmd_fix, "fix", "--verify", "--run-recorded-command", g_path, NULL, NULL);
    g_user_cmd = "/bin/true";
    if (which == 3 || which < 0) run(vw_cmd_fix, "fix", "--verify", g_path, "--", "/bin/true", "x");
    return 0;
#endif
    /* the SQL mode runs one command per input (the first byte's high bits;
     * all of them for 11 and up): symbolizing a stack takes tens of ms, and
     * more inputs find more */
    int only = g_nseeds ? (data[0] >> 3) % 13 : 11;
    const char *p = g_path;
    if (only == 0 || only >= 11) run(vw_cmd_report, "report", p, NULL, NULL, NULL, NULL);
    if (only == 1 || only >= 11) run(vw_cmd_report, "report", "--json", "--all-frames", p, NULL, NULL);
    if (only == 2 || only >= 11) run(vw_cmd_tensors, "tensors", p, NULL, NULL, NULL, NULL);
    if (only == 3 || only >= 11) run(vw_cmd_tensors, "tensors", "--json", "--alive-at-error", p, NULL, NULL);
    if (only == 4 || only >= 11) run(vw_cmd_transfers, "transfers", p, NULL, NULL, NULL, NULL);
    if (only == 5 || only >= 11) run(vw_cmd_transfers, "transfers", "--json", p, NULL, NULL, NULL);
    if (only == 6 || only >= 11) run(vw_cmd_show, "show", p, "1", NULL, NULL, NULL);
    if (only == 7 || only >= 11) run(vw_cmd_show, "show", "--json", p, "labels", NULL, NULL);
    if (only == 8 || only >= 11) run(vw_cmd_export, "export", "--format", "chrome", "-o", "-", p);
    if (only == 9 || only >= 11) run(vw_cmd_export, "export", "--format", "html", "-o", "-", p);
    if (only == 10 || only >= 11) run(vw_cmd_fix, "fix", p, NULL, NULL, NULL, NULL); /* the patch, never --verify */
    return 0;
}
