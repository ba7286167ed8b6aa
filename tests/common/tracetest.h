/* What the suites that run programs traced share: a scratch directory per
 * test, running a program (traced or not) in it with its output captured,
 * and reading the trace it left. */
#ifndef DEVTRACE_TRACETEST_H
#define DEVTRACE_TRACETEST_H

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64] __attribute__((unused)); /* per-test scratch directory */
static char out_buf[65536], err_buf[65536], plain_out[65536] __attribute__((unused));

static inline void rm_rf(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(path);
}

static inline void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/dt_tracer_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}
static inline void teardown(void) { rm_rf(dir); }

static inline void slurp(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* Runs argv with env entries ("NAME=value", or "NAME=" to unset) added;
 * stdout/stderr land in out_buf/err_buf. traced adds the tracer. Returns
 * the wait status. */
static inline int run(int traced, const char *const *env, const char *const *argv) {
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
            e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        setenv("DEVTRACE_SIM_CUDA", "2", 1);
        unsetenv("DEVTRACE_OUTPUT");
        unsetenv("DEVTRACE_OVERWRITE");
        unsetenv("LD_PRELOAD");
        if (traced) setenv("LD_PRELOAD", TRACER_LIB, 1);
        for (int i = 0; env && env[i]; i++) {
            char name[128];
            const char *eq = strchr(env[i], '=');
            snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
            if (eq[1])
                setenv(name, eq + 1, 1);
            else
                unsetenv(name);
        }
        if (chdir(dir) != 0) _exit(99);
        execv(argv[0], (char *const *)argv);
        _exit(98);
    }
    int st;
    waitpid(pid, &st, 0);
    slurp(out_path, out_buf, sizeof out_buf);
    slurp(err_path, err_buf, sizeof err_buf);
    return st;
}

static inline sqlite3 *open_trace(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sqlite3 *db;
    ck_assert_msg(access(path, R_OK) == 0, "no trace at %s; stderr: %s", path, err_buf);
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

static inline int64_t q_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

/* The first column of the first row as text ("" for none or NULL), in one
 * of 4 buffers used in turn: two results compared with each other are two
 * buffers. */
static inline char *q_text(sqlite3 *db, const char *sql) {
    static char bufs[4][4096];
    static int next;
    char *buf = bufs[next++ & 3];
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    buf[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, sizeof bufs[0], "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

#endif
