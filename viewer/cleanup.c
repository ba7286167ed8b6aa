/* What the viewer leaves behind when it is stopped: the private copies of
 * traces read with a write-ahead log (/tmp/devtrace-read.*) and the temp
 * file an export writes beside its target are removed on every exit path
 * the viewer can catch (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT), and the
 * signal then ends the viewer as it would have. Also the checks on an output
 * path (only a regular file, or nothing, is ever replaced) and writing one
 * whole or not at all. */
#include "vw.h"

#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* THREAD SAFETY NOTES: the viewer is single-threaded; the tables are
 * changed with the caught signals blocked, and read by the handler. */
#define CLEAN_FILES 8
#define CLEAN_DIRS  256
static char g_files[CLEAN_FILES][4200]; /* temp files to unlink; "" when free */
static char g_dirs[CLEAN_DIRS][256];    /* private copy dirs: their trace.db* then the dir */
static const int g_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
#define NSIGS ((int)(sizeof g_sigs / sizeof g_sigs[0]))

static void remove_dir(const char *dir) {
    static const char *const names[] = {"/trace.db", "/trace.db-wal", "/trace.db-shm", "/trace.db-journal"};
    char p[300];
    size_t n = strlen(dir);
    for (int i = 0; i < 4; i++) {
        size_t m = strlen(names[i]);
        if (n + m + 1 > sizeof p) continue;
        memcpy(p, dir, n), memcpy(p + n, names[i], m + 1); /* no snprintf in a handler */
        unlink(p);
    }
    rmdir(dir);
}

static void on_signal(int sig) {
    int saved = errno;
    for (int i = 0; i < CLEAN_FILES; i++)
        if (g_files[i][0]) unlink(g_files[i]);
    for (int i = 0; i < CLEAN_DIRS; i++)
        if (g_dirs[i][0]) remove_dir(g_dirs[i]);
    signal(sig, SIG_DFL);
    errno = saved;
    raise(sig); /* delivered when the handler returns: the viewer ends as the signal says */
}

/* Blocks the caught signals while a table changes; restores with *old. */
static void block(sigset_t *old) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < NSIGS; i++) sigaddset(&set, g_sigs[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

static void install(void) {
    static int done;
    if (done) return;
    done = 1;
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction old;
        if (sigaction(g_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue; /* nohup: keep ignoring */
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(g_sigs[i], &sa, NULL);
    }
}

static int add(char *table, size_t width, int n, const char *path) {
    if (strlen(path) >= width) return -1;
    install();
    sigset_t old;
    block(&old);
    int rc = -1;
    for (int i = 0; i < n && rc < 0; i++)
        if (!table[(size_t)i * width]) memcpy(table + (size_t)i * width, path, strlen(path) + 1), rc = 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void drop(char *table, size_t width, int n, const char *path) {
    sigset_t old;
    block(&old);
    for (int i = 0; i < n; i++)
        if (!strcmp(table + (size_t)i * width, path)) table[(size_t)i * width] = '\0';
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int vw_cleanup_add_file(const char *path) { return add(&g_files[0][0], sizeof g_files[0], CLEAN_FILES, path); }
void vw_cleanup_drop_file(const char *path) { drop(&g_files[0][0], sizeof g_files[0], CLEAN_FILES, path); }
int vw_cleanup_add_dir(const char *dir) { return add(&g_dirs[0][0], sizeof g_dirs[0], CLEAN_DIRS, dir); }
void vw_cleanup_drop_dir(const char *dir) { drop(&g_dirs[0][0], sizeof g_dirs[0], CLEAN_DIRS, dir); }

/* ---------------------------------------------------------------- output paths */

int vw_output_check(const char *cmd, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        vw_error("%s: cannot write %s: %s", cmd, path, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode)) return 0;
    const char *what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    vw_error("%s: %s is %s; give the name of a regular file to write (or - for standard output)", cmd, path, what);
    return -1;
}

/* Writing OUT whole or not at all: a temp file beside it, registered for removal, renamed over it by
 * vw_out_finish. */
FILE *vw_out_open(const char *cmd, const char *out, char *tmp, size_t size) {
    if (vw_output_check(cmd, out) < 0) return NULL;
    if (snprintf(tmp, size, "%s.tmpXXXXXX", out) >= (int)size) {
        vw_error("%s: output path too long", cmd);
        return NULL;
    }
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old); /* made and registered for removal at once */
    int fd = mkstemp(tmp);
    if (fd >= 0) vw_cleanup_add_file(tmp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        vw_error("%s: cannot write %s: %s", cmd, out, strerror(errno));
        if (fd >= 0) close(fd), unlink(tmp), vw_cleanup_drop_file(tmp);
    }
    return f;
}

int vw_out_finish(const char *cmd, const char *out, const char *tmp, FILE *f, int keep) {
    int bad = ferror(f) | (fflush(f) != 0) | (fsync(fileno(f)) != 0), err = errno, rc = 0;
    if (fclose(f) != 0) bad = 1, err = errno;
    if (keep && (bad || rename(tmp, out) != 0)) {
        vw_error("%s: cannot write %s: %s", cmd, out, strerror(bad ? err : errno));
        rc = -1;
    }
    if (!keep || rc) unlink(tmp);
    vw_cleanup_drop_file(tmp);
    return keep ? rc : -1;
}
