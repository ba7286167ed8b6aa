/* devtrace run [-o FILE] [--overwrite] [--quiet] [--] PROG [ARGS...]: runs
 * PROG with libdevtrace.so preloaded (found next to this executable, in the
 * build tree or the install prefix), passes PROG's exit status through (128+N
 * when a signal N killed it), writes that status into the trace, and says
 * where the trace is. When PROG failed and its trace holds a device mismatch,
 * the short report follows on stderr. A helper process that recorded nothing
 * leaves no trace. A PROG that does not exist or cannot be executed is
 * reported as a shell would, with 127 or 126, before anything runs. -o
 * names a regular file or nothing (a device, a FIFO is refused), and two runs
 * never write one -o name at once when one of them overwrites (a lock file
 * beside it: the second is refused, never silently lost). */
#include "vw.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN_USAGE "devtrace run [-o FILE] [--overwrite] [--max-mb N] [--quiet] [--] PROG [ARGS...]"

static void run_usage(FILE *f) {
    fprintf(f, "usage: " RUN_USAGE "\n\n"
               "Runs PROG with the tracer loaded and records every tensor event into a trace. PROG may be a\n"
               "program built on libdtrt, any CUDA program, a libtorch program, or python3 running PyTorch.\n"
               "When PROG fails and its trace holds a device mismatch, the short report (what went wrong,\n"
               "the tensor on the wrong device and where it was made, the fix) follows PROG's output on\n"
               "stderr. A process PROG starts that records nothing (a wrapper's helper) leaves no trace.\n\n"
               "  -o, --output FILE   write the trace to FILE (default: devtrace.PROG.PID.db here);\n"
               "                      an existing FILE is kept and a fresh name is used instead\n"
               "  --overwrite         replace FILE if it exists\n"
               "  --max-mb N          bound the trace to N MiB (DEVTRACE_MAX_MB; default 1024, 0: unbounded):\n"
               "                      old events of freed tensors are pruned, live tensors' chains kept\n"
               "  -q, --quiet         no lines of devtrace's own on stderr (DEVTRACE_QUIET=1)\n\n"
               "Exit status: PROG's own (128+N when signal N killed it); 126 PROG is not executable,\n"
               "127 PROG not found, 125 devtrace could not start it, 2 bad usage.\n\n"
               "Environment:\n"
               "  DEVTRACE_SIM_CUDA=N      N simulated GPUs (cuda:0..N-1, 1..16) for libdtrt programs and\n"
               "                           PyTorch without a GPU; 0 or unset: none\n"
               "  DEVTRACE_SIM_TORCH_VERSION=V  for tests: the PyTorch version whose rules and texts the\n"
               "                           simulated GPUs follow (default: the installed one)\n"
               "  DEVTRACE_QUIET=1         no lines of devtrace's own on stderr (tracer, run, adapter)\n"
               "  DEVTRACE_OUTPUT=FILE     the trace's name (what -o sets); with a rank or a forked child,\n"
               "                           host, rank and pid are added to it\n"
               "  DEVTRACE_OVERWRITE=1     replace an existing trace (what --overwrite sets)\n"
               "  DEVTRACE_STACK_DEPTH=N   native frames kept per event (32; 0..128)\n"
               "  DEVTRACE_RING_KB=N       per-thread event ring in KiB (8192; 64..1048576)\n"
               "  DEVTRACE_PYTHON=0        no Python stacks (1, the default, records them)\n"
               "  DEVTRACE_COMMIT_MS=N     commit the trace at least every N ms (20; 1..50)\n"
               "  DEVTRACE_CLOCK=monotonic time events with clock_gettime, not the CPU's counter\n"
               "  DEVTRACE_MAX_MB=N        the trace's cap in MiB (1024; 0: unbounded; what --max-mb sets)\n"
               "  DEVTRACE_LOSSY=1         a thread whose ring is full drops and counts events instead of\n"
               "                           waiting for the writer (by default nothing is lost: a writer\n"
               "                           stuck for 2 s turns tracing off with one warning)\n"
               "  DEVTRACE_CUPTI=0|1       CUPTI off, or on from the start (default: when CUDA starts)\n"
               "  DEVTRACE_CUPTI_LIB=PATH  the libcupti to open (else libcupti.so.13/12, then under\n"
               "                           CUDA_HOME and /usr/local/cuda)\n"
               "  DEVTRACE_CUDA_ACTIVITY=1 also record kernel launches, frees and CUPTI's activity\n"
               "                           records (device times); by default launches and frees are\n"
               "                           counted, not recorded (old name: DEVTRACE_CUPTI_ACTIVITY)\n"
               "  DEVTRACE_CUPTI_VERBOSE=1 say which libcupti was started, and how\n"
               "  DEVTRACE_C_FACTS=0       no source facts of C and C++ programs at their first mismatch\n"
               "                           (read from DWARF and the program's files: the fix's code)\n"
               "  DEVTRACE_PYTORCH=0       leave the PyTorch adapter out (native tracing goes on)\n"
               "  DEVTRACE_LIBTORCH_OBSERVER=PATH|0  the libtorch observer to load (default: the one\n"
               "                           next to libdevtrace.so), or 0 for none\n"
               "  DEVTRACE_LIB=PATH        the tracer to preload (default: the libdevtrace.so installed\n"
               "                           with this devtrace)\n"
               "  DEVTRACE_PYTHON_BOOTSTRAP=DIR  the directory holding the adapter's sitecustomize.py\n"
               "  DEVTRACE_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID, LOCAL_RANK\n"
               "                           the first one set is the process's rank, put in its trace's\n"
               "                           name and meta (the PyTorch adapter sets DEVTRACE_RANK for the\n"
               "                           ranks torch.multiprocessing.spawn starts)\n"
               "devtrace run sets LD_PRELOAD and PYTHONPATH (prepending to yours), DEVTRACE_MANIFEST and\n"
               "DEVTRACE_ROOT_PID for the processes it starts. NO_COLOR turns colors off in every command;\n"
               "TMPDIR is where the reading commands copy a trace left with a WAL by a killed program;\n"
               "DEVTRACE_SOURCE_ROOT=DIR[:DIR...] the directories whose source lines a trace may show in the\n"
               "reading commands (what --source-root sets; default: the current directory);\n"
               "DEVTRACE_READ_LIVE=PID lets the reading commands read a trace still being written by process PID\n"
               "(the pytest plugin's own, after a test failed; otherwise such a trace is refused).\n");
}

/* libdevtrace.so next to this executable: build tree or install prefix. */
static int find_tracer(char *out, size_t size) {
    const char *env = getenv("DEVTRACE_LIB");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    const char *dir = dirname(exe);
    /* beside it (the Python wheel), the build tree, the install prefix (its libdir) */
    static const char *const rel[] = {"libdevtrace.so", "../tracer/libdevtrace.so", VW_TRACER_FROM_BIN,
                                      "../lib/devtrace/libdevtrace.so", "../lib/libdevtrace.so"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out)) return 0;
    }
    return -1;
}

/* The PyTorch adapter's bootstrap directory (its sitecustomize.py), found
 * from libdevtrace.so's path: <build>/adapters/pytorch in the build tree,
 * <libdir>/python when installed; DEVTRACE_PYTHON_BOOTSTRAP overrides.
 * -1 when there is none (the adapter was not built). */
static int find_bootstrap(const char *lib, char *out, size_t size) {
    const char *env = getenv("DEVTRACE_PYTHON_BOOTSTRAP");
    char dir[PATH_MAX], cand[PATH_MAX + 64];
    if (env && *env) {
        snprintf(cand, sizeof cand, "%s/sitecustomize.py", env);
        if (access(cand, R_OK) != 0) return -1;
        snprintf(out, size, "%s", env);
        return 0;
    }
    snprintf(dir, sizeof dir, "%s", lib);
    const char *d = dirname(dir);
    static const char *const rel[] = {"../adapters/pytorch", "python"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s/sitecustomize.py", d, rel[i]);
        if (access(cand, R_OK) == 0) {
            snprintf(cand, sizeof cand, "%s/%s", d, rel[i]);
            if (realpath(cand, out)) return 0;
        }
    }
    return -1;
}

/* Resolves PROG as execvp would; returns 0, or 126/127 after saying why. */
static int resolve(const char *prog, char *out, size_t size) {
    struct stat st;
    if (strchr(prog, '/')) {
        if (stat(prog, &st) != 0) {
            vw_error("%s: %s", prog, strerror(errno));
            return errno == ENOENT || errno == ENOTDIR ? 127 : 126;
        }
        if (S_ISDIR(st.st_mode)) {
            vw_error("%s: Is a directory", prog);
            return 126;
        }
        if (access(prog, X_OK) != 0) {
            vw_error("%s: Permission denied", prog);
            return 126;
        }
        snprintf(out, size, "%s", prog);
        return 0;
    }
    const char *path = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    int denied = 0;
    for (char *save, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX + 256];
        snprintf(cand, sizeof cand, "%s/%s", *d ? d : ".", prog);
        if (stat(cand, &st) != 0 || S_ISDIR(st.st_mode)) continue;
        if (access(cand, X_OK) != 0) {
            denied = 1;
            continue;
        }
        snprintf(out, size, "%s", cand);
        return 0;
    }
    vw_error(denied ? "%s: Permission denied" : "%s: command not found", prog);
    return denied ? 126 : 127;
}

/* Can a file be created at path? Says why not. */
static int check_output(const char *path) {
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) != 0) {
        vw_error("cannot write the trace to %s: %s: %s", path, dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        vw_error("cannot write the trace to %s: %s is not a directory", path, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        vw_error("cannot write the trace to %s: %s: %s", path, dir, strerror(errno));
        return -1;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a trace goes to a file: never /dev/full.1 */
        vw_error("cannot write the trace to %s: it is %s, not a regular file", path,
                 S_ISDIR(st.st_mode)    ? "a directory"
                 : S_ISCHR(st.st_mode)  ? "a character device"
                 : S_ISBLK(st.st_mode)  ? "a block device"
                 : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                                        : "something else");
        return -1;
    }
    return 0;
}

/* The lock of an -o name, held for the whole run: shared by runs that keep an existing trace (the tracer
 * picks a fresh name beside it), exclusive for --overwrite, which removes it: so an overwriting run never
 * removes the trace another run is writing, and is refused while one is (not made to wait: the user
 * decides). The lock file (.NAME.devtrace-lock beside it) is removed by the last holder; a name whose lock
 * file was replaced meanwhile is locked again. The descriptor, or -1 after saying why. */
static int lock_output(const char *out_abs, int overwrite, char *lock, size_t size) {
    char copy[2 * PATH_MAX + 2], copy2[2 * PATH_MAX + 2];
    snprintf(copy, sizeof copy, "%s", out_abs);
    snprintf(copy2, sizeof copy2, "%s", out_abs);
    if (snprintf(lock, size, "%s/.%s.devtrace-lock", dirname(copy), basename(copy2)) >= (int)size) {
        vw_error("cannot write the trace to %s: the path is too long", out_abs);
        return -1;
    }
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            vw_error("cannot write the trace to %s: cannot create its lock %s: %s", out_abs, lock, strerror(errno));
            return -1;
        }
        if (flock(fd, (overwrite ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                vw_error("%s: another 'devtrace run' is writing this trace%s; wait for it to end, or give another -o",
                         out_abs, overwrite ? "" : " and overwrites it");
            else
                vw_error("cannot lock %s: %s", lock, strerror(e));
            return -1;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lock, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) return fd;
        close(fd); /* its last holder removed it as we opened it: lock the new one */
    }
    vw_error("cannot lock %s: it keeps being replaced", lock);
    return -1;
}

/* Removes the lock file when no other run holds it, then lets go. */
static void unlock_output(int fd, const char *lock) {
    if (fd < 0) return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) unlink(lock); /* the last holder: a shared one may remain */
    close(fd);
}

/* Writes how the program ended into its trace. own: the trace is the
 * started process's; else it is another process's that stands for the run
 * (a wrapper's child), which keeps a status of its own when it has one. */
static void record_status(const char *trace, int status, int own) {
    sqlite3 *db;
    if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 5000);
    char sql[400];
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta SELECT '%s', %d%s",
             WIFEXITED(status) ? "exit_status" : "killed_by_signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
             own ? ""
                 : " WHERE NOT EXISTS(SELECT 1 FROM meta WHERE key IN ('exit_status', 'killed_by_signal', "
                   "'fatal_signal'))");
    const char *q = getenv("DEVTRACE_QUIET");
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK && !(q && !strcmp(q, "1")))
        vw_error("could not record the exit status in %s: %s", trace, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* ", incomplete: why" and ", N events dropped" when the trace is not
 * whole, and what a bounded trace pruned, into buf ("" when none). */
static void trace_whole(const char *trace, char *buf, size_t size) {
    sqlite3 *db = NULL;
    struct vw_health h;
    buf[0] = '\0';
    /* read-write, as record_status: a read-only connection would leave a -shm file behind */
    if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        if (vw_health(db, &h))
            snprintf(buf, size, "%s%s%s%s", h.why[0] ? ", incomplete: " : "", h.why, h.lost[0] ? "; " : "", h.lost);
        size_t n = strlen(buf);
        if (h.pruned > 0 && n < size) /* a bounded trace says what it pruned, even when whole */
            snprintf(buf + n, size - n, "%s%s", n ? "; " : ", ", h.pruned_text);
    }
    sqlite3_close(db);
}

/* Whether a trace holds events: 1, 0, or -1 when it cannot be read. */
static int trace_events(const char *trace) {
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT EXISTS(SELECT 1 FROM events)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        rc = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* Removes a trace and what SQLite may have left beside it. */
static void remove_trace(const char *path) {
    char side[PATH_MAX + 80];
    unlink(path);
    for (int w = 0; w < 2; w++) {
        snprintf(side, sizeof side, "%s%s", path, w ? "-shm" : "-wal");
        unlink(side);
    }
}

/* Whether a trace ended before its tracer committed the schema: 1, an empty file; 2, a database with no table
 * (the tracer switches the file to WAL, which writes its header, then creates its tables in one transaction:
 * a process killed between the two leaves the header alone, as does a first commit that failed); else 0 (not
 * a database, or unreadable: kept). */
static int trace_schemaless(const char *trace) {
    struct stat fst;
    if (stat(trace, &fst) != 0 || !S_ISREG(fst.st_mode)) return 0;
    if (fst.st_size == 0) return 1;
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int none = 0;
    /* read-write, as record_status: a read-only connection would leave a -shm file behind */
    if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT NOT EXISTS(SELECT 1 FROM sqlite_master)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        none = sqlite3_column_int(st, 0) ? 2 : 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return none;
}

/* What run reads of a finished trace. */
struct look {
    int events;             /* it holds at least one event */
    int clean_end;          /* the process ended through exit (complete; no signal, fatal or not) */
    int mismatch;           /* an error naming devices: a device mismatch the report may explain */
    char python[32];        /* the Python version that ran in the process, or "" */
    char program[PATH_MAX]; /* the process's executable, or "" */
};

/* 0, or -1 when the trace cannot be read. */
static int trace_look(const char *trace, struct look *l) {
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    memset(l, 0, sizeof *l);
    /* read-write, as record_status: a read-only connection would leave a -shm file behind */
    if (sqlite3_open_v2(trace, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(
            db,
            "SELECT EXISTS(SELECT 1 FROM events), COALESCE((SELECT CAST(value AS INTEGER) FROM meta "
            "WHERE key = 'complete'), 0) = 1 AND NOT EXISTS(SELECT 1 FROM meta WHERE key IN "
            "('fatal_signal', 'killed_by_signal')), EXISTS(SELECT 1 FROM errors WHERE first_arg IS NOT "
            "NULL OR device_a IS NOT NULL), (SELECT value FROM meta WHERE key = 'python'), (SELECT value "
            "FROM meta WHERE key = 'program')",
            -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        l->events = sqlite3_column_int(st, 0);
        l->clean_end = sqlite3_column_int(st, 1);
        l->mismatch = sqlite3_column_int(st, 2);
        if (sqlite3_column_text(st, 3)) snprintf(l->python, sizeof l->python, "%s", sqlite3_column_text(st, 3));
        if (sqlite3_column_text(st, 4)) snprintf(l->program, sizeof l->program, "%s", sqlite3_column_text(st, 4));
        rc = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* Runs this devtrace's `report --brief` on a trace in a child, its output (stdout
 * and stderr) captured; 1 when it found a mismatch, 0 when not, 2 when it
 * could not read the trace, -1 when it could not be run. *text (malloc'd,
 * the caller frees) holds what it printed. */
static int report_child(const char *trace, char **text) {
    *text = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        setenv("NO_COLOR", "1", 1);
        execl("/proc/self/exe", "devtrace", "report", "--brief", trace, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0, cap = 0;
    char *buf = NULL, chunk[8192];
    int ok = 1;
    for (;;) { /* read to the end, or the child would block: past 4 MiB (or memory) the rest is dropped */
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (ok && n + (size_t)got + 1 > cap) {
            char *grown = cap < (4u << 20) ? realloc(buf, cap = 2 * (n + (size_t)got + 1)) : NULL;
            if (grown)
                buf = grown;
            else
                ok = 0;
        }
        if (ok) memcpy(buf + n, chunk, (size_t)got), n += (size_t)got;
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!buf && !(buf = malloc(1))) return -1;
    buf[n] = '\0';
    *text = buf;
    return WIFEXITED(st) && WEXITSTATUS(st) <= 2 ? WEXITSTATUS(st) : -1;
}

/* The short report of a trace that holds a device mismatch, on stderr. */
static void brief_report(const char *trace) {
    char *text;
    int rc = report_child(trace, &text);
    if (rc == 1 && text) {
        fputc('\n', stderr);
        fputs(text, stderr);
    }
    free(text);
}

static pid_t g_child;
static void forward(int sig) {
    if (g_child > 0) kill(g_child, sig);
}

static int run_traced(int argc, char **argv, int i, const char *prog, const char *lib, const char *output,
                      int overwrite);

int vw_cmd_run(int argc, char **argv) {
    const char *output = NULL;
    int overwrite = 0, i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            run_usage(stdout);
            return VW_EXIT_OK;
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i == argc) {
                vw_error("%s needs a file name", argv[i - 1]);
                return VW_EXIT_USAGE;
            }
            output = argv[i];
        } else if (strncmp(argv[i], "--output=", 9) == 0) {
            output = argv[i] + 9;
        } else if (strcmp(argv[i], "--max-mb") == 0 || strncmp(argv[i], "--max-mb=", 9) == 0) {
            const char *v = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            errno = 0;
            long mb = v ? strtol(v, &end, 10) : -1;
            if (!v || !*v || *end || errno || mb < 0 || mb > (1L << 22)) {
                vw_error("--max-mb needs a size in MiB from 0 (unbounded) to %ld, not '%s'", 1L << 22, v ? v : "");
                return VW_EXIT_USAGE;
            }
            char num[32];
            snprintf(num, sizeof num, "%ld", mb);
            setenv("DEVTRACE_MAX_MB", num, 1); /* for the tracer in PROG and its children */
        } else if (strcmp(argv[i], "--overwrite") == 0) {
            overwrite = 1;
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            setenv("DEVTRACE_QUIET", "1", 1); /* for the tracer and the adapter in PROG too */
        } else if (argv[i][0] == '-') {
            vw_error("run: unknown option '%s'; see 'devtrace run --help'", argv[i]);
            return VW_EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: " RUN_USAGE "  ('devtrace run --help' says more)\n");
        return VW_EXIT_USAGE;
    }
    char prog[PATH_MAX + 256], lib[PATH_MAX], out_abs[2 * PATH_MAX + 2];
    int rc = resolve(argv[i], prog, sizeof prog);
    if (rc) return rc;
    if (find_tracer(lib, sizeof lib) < 0) {
        vw_error("cannot find libdevtrace.so next to this devtrace (nor in DEVTRACE_LIB); reinstall devtrace");
        return VW_EXIT_LAUNCH;
    }
    if (output) {
        if (check_output(output) < 0) return VW_EXIT_LAUNCH;
        if (output[0] == '/')
            snprintf(out_abs, sizeof out_abs, "%s", output);
        else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd)) cwd[0] = '\0';
            snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output);
        }
    }
    char lock[2 * PATH_MAX + 64];
    int lockfd = output ? lock_output(out_abs, overwrite, lock, sizeof lock) : -1;
    if (output && lockfd < 0) return VW_EXIT_LAUNCH;
    rc = run_traced(argc, argv, i, prog, lib, output ? out_abs : NULL, overwrite);
    unlock_output(lockfd, lock);
    return rc;
}

/* The run itself, once the -o name is held: forks PROG, waits, then looks at the traces it left. */
static int run_traced(int argc, char **argv, int i, const char *prog, const char *lib, const char *output,
                      int overwrite) {
    const char *out_abs = output;
    (void)argc;
    char manifest[] = "/tmp/devtrace-run-XXXXXX";
    int mfd = mkstemp(manifest);
    if (mfd < 0) {
        vw_error("cannot create a temporary file in /tmp: %s", strerror(errno));
        return VW_EXIT_LAUNCH;
    }
    close(mfd);

    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, old_int, old_quit, old_term, old_hup;
    sigaction(SIGINT, &ign, &old_int); /* the terminal's ^C reaches the program itself */
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    int errpipe[2]; /* the child reports a failed exec here; a successful one closes it */
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        vw_error("cannot create a pipe: %s", strerror(errno));
        unlink(manifest);
        return VW_EXIT_LAUNCH;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        vw_error("cannot fork: %s", strerror(errno));
        unlink(manifest);
        return VW_EXIT_LAUNCH;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        const char *pre = getenv("LD_PRELOAD");
        char preload[2 * PATH_MAX + 2];
        snprintf(preload, sizeof preload, "%s%s%s", lib, pre && *pre ? ":" : "", pre && *pre ? pre : "");
        char rootpid[32];
        snprintf(rootpid, sizeof rootpid, "%d", (int)getpid());
        setenv("LD_PRELOAD", preload, 1);
        setenv("DEVTRACE_MANIFEST", manifest, 1);
        setenv("DEVTRACE_ROOT_PID", rootpid, 1);
        if (output) setenv("DEVTRACE_OUTPUT", out_abs, 1);
        if (overwrite) setenv("DEVTRACE_OVERWRITE", "1", 1);
        /* The driver loads the tracer again at cuInit and starts CUPTI
         * there, for the CUDA calls LD_PRELOAD cannot see (static cudart,
         * the driver API); another tool's injection library is left alone. */
        const char *cupti = getenv("DEVTRACE_CUPTI"), *inject = getenv("CUDA_INJECTION64_PATH");
        if (!(cupti && !strcmp(cupti, "0")) && !(inject && *inject)) setenv("CUDA_INJECTION64_PATH", lib, 1);
        const char *torch_off = getenv("DEVTRACE_PYTORCH");
        char boot[PATH_MAX];
        if (!(torch_off && !strcmp(torch_off, "0")) && find_bootstrap(lib, boot, sizeof boot) == 0) {
            /* Python programs import its sitecustomize first; it hands over to theirs */
            const char *pp = getenv("PYTHONPATH");
            char pypath[2 * PATH_MAX + 2];
            snprintf(pypath, sizeof pypath, "%s%s%s", boot, pp && *pp ? ":" : "", pp && *pp ? pp : "");
            setenv("PYTHONPATH", pypath, 1);
        }
        close(errpipe[0]);
        execv(prog, argv + i);
        int e = errno;
        if (write(errpipe[1], &e, sizeof e) < 0) {
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    close(errpipe[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(errpipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
    }
    close(errpipe[0]);
    g_child = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    signal(SIGXFSZ, SIG_IGN); /* past the program's RLIMIT_FSIZE, recording its status fails: it does not kill us */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (got == (ssize_t)sizeof exec_errno) { /* PROG never ran */
        vw_error("%s: %s", argv[i], strerror(exec_errno));
        unlink(manifest);
        return exec_errno == ENOENT ? 127 : 126;
    }

    /* the traces the processes wrote: "pid\tpath" lines. A process that
     * exec'd another program before recording anything removed its trace
     * (env in a "#!/usr/bin/env" line): its line is skipped, and a name
     * listed twice (that trace's name, reused by the new image) is said once.
     * The exit status goes to the last trace of the process we started. */
    struct entry {
        int pid;
        char path[PATH_MAX + 64];
    } *ent = NULL;
    size_t n = 0, cap = 0;
    FILE *m = fopen(manifest, "r");
    char line[PATH_MAX + 64];
    while (m && fgets(line, sizeof line, m)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = '\0';
        if (n == cap) {
            struct entry *grown = realloc(ent, (cap = cap ? 2 * cap : 8) * sizeof *ent);
            if (!grown) break;
            ent = grown;
        }
        ent[n].pid = atoi(line);
        snprintf(ent[n].path, sizeof ent[n].path, "%s", tab + 1);
        ent[n].path[strcspn(ent[n].path, "\n")] = '\0';
        n++;
    }
    if (m) fclose(m);
    unlink(manifest);
    int ntraces = 0;
    size_t status_at = n;
    /* DEVTRACE_QUIET=1, as the tracer reads it: no line of ours once PROG ran */
    const char *q = getenv("DEVTRACE_QUIET");
    int quiet = q && !strcmp(q, "1");
    for (size_t k = 0; k < n; k++)
        if (ent[k].pid == pid && access(ent[k].path, F_OK) == 0) status_at = k;
    /* A wrapper that forks the program (timeout, sh -c 'prog; ...', a
     * launcher) took the -o name and recorded nothing; the program wrote
     * the run's one trace with events under another name: it takes the
     * -o name (and the status), which is the trace the user will open. */
    if (output && status_at < n && !strcmp(ent[status_at].path, out_abs) && trace_events(out_abs) == 0) {
        size_t real = n;
        int several = 0;
        for (size_t k = 0; k < n; k++)
            if (strcmp(ent[k].path, out_abs) && access(ent[k].path, F_OK) == 0 && trace_events(ent[k].path) > 0) {
                several |= real < n && strcmp(ent[real].path, ent[k].path);
                real = k;
            }
        if (real < n && !several && rename(ent[real].path, out_abs) == 0) {
            char side[2 * PATH_MAX + 16];
            for (int w = 0; w < 2; w++) { /* an empty -wal or -shm of a finished trace: not needed */
                snprintf(side, sizeof side, "%s%s", ent[real].path, w ? "-shm" : "-wal");
                unlink(side);
                snprintf(side, sizeof side, "%s%s", out_abs, w ? "-shm" : "-wal");
                unlink(side);
            }
            for (size_t k = 0; k < n; k++)
                if (k != real && !strcmp(ent[k].path, ent[real].path)) ent[k].path[0] = '\0';
            snprintf(ent[real].path, sizeof ent[real].path, "%.*s", (int)sizeof ent[real].path - 1, out_abs);
            ent[status_at].path[0] = '\0';
            status_at = real;
        }
    }
    /* Each trace once (its last line), and what it holds. A trace whose
     * process ended through exit having recorded nothing (a wrapper's
     * helper: sh, env, a pyenv shim's readlink) is removed; the root's is
     * kept when no other trace holds an event, so that run can say where
     * the program's trace is, and otherwise the one trace that holds events
     * is the program's. A Python that recorded nothing never imported torch:
     * said once. */
    struct look *lk = calloc(n ? n : 1, sizeof *lk);
    int *live = calloc(n ? n : 1, sizeof *live); /* 1: a trace to report; 0: a duplicate line, gone, or removed */
    int full = 0, warned_python = 0;
    const char *torch_off = getenv("DEVTRACE_PYTORCH");
    int adapter = !(torch_off && !strcmp(torch_off, "0")); /* importing torch records an event */
    for (size_t k = 0; lk && live && k < n; k++) {
        int later = 0;
        for (size_t j = k + 1; j < n && !later; j++) later = strcmp(ent[j].path, ent[k].path) == 0;
        if (later || !ent[k].path[0] || access(ent[k].path, F_OK) != 0) continue;
        /* ended before the tracer wrote its schema: an empty file, or (the root, killed) one with no table yet;
         * a file the tracer failed to write its tables into (a full disk) stays, as the tracer said */
        int schemaless = trace_schemaless(ent[k].path);
        if (schemaless == 1 || (schemaless == 2 && ent[k].pid == pid && WIFSIGNALED(status))) {
            remove_trace(ent[k].path);
            char why[64] = "ended";
            if (ent[k].pid == pid && WIFSIGNALED(status))
                snprintf(why, sizeof why, "was killed by SIG%s",
                         sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
            if (!quiet)
                vw_error("no trace: process %d %s before any event was written (the empty %s was removed)", ent[k].pid,
                         why, ent[k].path);
            ntraces++;
            continue;
        }
        live[k] = 1;
        if (trace_look(ent[k].path, &lk[k]) < 0) lk[k].events = 1; /* unreadable: kept, as it is */
        full += lk[k].events || !lk[k].clean_end;
        if (!lk[k].events && lk[k].clean_end && lk[k].python[0] && !warned_python && !quiet && adapter) {
            const char *who = ent[k].pid == pid ? prog : lk[k].program;
            fprintf(stderr,
                    "devtrace: %s ran no PyTorch (torch was never imported): nothing was recorded; it ran Python %s "
                    "(%s): is torch installed for it ('%s -c \"import torch\"')?\n",
                    who, lk[k].python, lk[k].program, who);
            warned_python = 1;
        }
    }
    if (lk && live) {
        size_t only = n; /* the one trace that holds events, when there is one */
        int several = 0;
        for (size_t k = 0; k < n; k++) {
            if (!live[k] || !(lk[k].events || !lk[k].clean_end)) continue;
            several |= only < n;
            only = k;
        }
        for (size_t k = 0; k < n; k++) {
            if (!live[k] || lk[k].events || !lk[k].clean_end) continue;
            if (full == 0 && k == status_at) continue; /* the program's, though it recorded nothing */
            remove_trace(ent[k].path);
            live[k] = 0;
            if (k == status_at && only < n && !several) status_at = only; /* it takes the status, as with -o */
        }
    }
    for (size_t k = 0; lk && live && k < n; k++) {
        if (!live[k]) continue;
        if (k == status_at) record_status(ent[k].path, status, ent[k].pid == pid);
        char whole[600] = "";
        trace_whole(ent[k].path, whole, sizeof whole);
        if (!quiet && (ent[k].pid == pid || k == status_at))
            fprintf(stderr, "devtrace: trace written to %s%s\n", ent[k].path, whole);
        else if (!quiet)
            fprintf(stderr, "devtrace: trace of process %d written to %s%s\n", ent[k].pid, ent[k].path, whole);
        ntraces++;
    }
    /* The answer at the end of a failed run: the short report of each trace
     * that holds a device mismatch (a clean run, or one that failed of
     * something else, prints nothing more). */
    int failed = WIFSIGNALED(status) || WEXITSTATUS(status) != 0;
    for (size_t k = 0; failed && !quiet && lk && live && k < n; k++)
        if (live[k] && lk[k].mismatch) brief_report(ent[k].path);
    free(lk);
    free(live);
    free(ent);
    if (ntraces == 0 && !quiet) vw_error("no trace was written (the tracer said why above)");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
