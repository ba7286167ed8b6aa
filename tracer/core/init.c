/* Process lifecycle of libdevtrace.so: configuration from the environment,
 * start-up (output file, writer thread, signal handlers), fork (the child
 * records into a file of its own), and exit (drain, finish, say where the
 * trace is). The global state and the failure path are in ground.c. */
#include "tr_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_forked; /* set in the child of a fork until it re-initialises */
static pid_t g_owner_pid;    /* process whose trace g_tr describes */
static int g_once_done;      /* one-time setup (atfork, signals, stack) done */

/* An integer setting from the environment; a bad value is said and ignored. */
static long env_long(const char *name, long def, long lo, long hi) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < lo || n > hi) {
        if (!g_tr.cfg.quiet)
            fprintf(stderr, "devtrace: %s='%s' is not a number in %ld..%ld; using %ld\n", name, v, lo, hi, def);
        return def;
    }
    return n;
}

static void read_config(void) {
    struct tr_config *c = &g_tr.cfg;
    const char *q = getenv("DEVTRACE_QUIET");
    c->quiet = q && strcmp(q, "1") == 0;
    c->depth = (int)env_long("DEVTRACE_STACK_DEPTH", 32, 0, TR_MAX_DEPTH);
    long kb = env_long("DEVTRACE_RING_KB", 8192, 64, 1L << 20);
    size_t bytes = 1;
    while (bytes < (size_t)kb * 1024) bytes <<= 1; /* a power of two */
    c->ring_bytes = bytes;
    c->python = (int)env_long("DEVTRACE_PYTHON", 1, 0, 1);
    c->commit_ms = (int)env_long("DEVTRACE_COMMIT_MS", 20, 1, 50);
    c->lossy = (int)env_long("DEVTRACE_LOSSY", 0, 0, 1);
    c->max_mb = env_long("DEVTRACE_MAX_MB", 1024, 0, 1L << 22); /* a day-long run's trace; 0: unbounded */
}

static void append_manifest(void) {
    const char *m = getenv("DEVTRACE_MANIFEST");
    if (!m || !*m) return;
    int fd = open(m, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    char line[4200];
    int n = snprintf(line, sizeof line, "%d\t%s\n", (int)getpid(), g_tr.cfg.path);
    if (write(fd, line, (size_t)n) < 0) {
    }
    close(fd);
}

/* The writer's lock, then the module table's: the writer takes them in
 * that order too. */
static void on_prepare(void) {
    if (g_tr.writer_running) pthread_mutex_lock(&g_tr.writer_lock);
    tr_modules_atfork_prepare();
}
static void on_parent(void) {
    tr_modules_atfork_parent();
    if (g_tr.writer_running) pthread_mutex_unlock(&g_tr.writer_lock);
}
/* Set by the in-process API (tr_api_untraced_children): a forked child
 * records nothing. Loaded with dlopen, the tracer cannot finish a child's
 * trace when it leaves with _exit (a DataLoader worker does): libc's _exit,
 * not the wrapper below, is the one called, and the child would leave an
 * empty file. */
static int g_untraced_children;

static void on_child(void) {
    tr_modules_atfork_child();
    pthread_mutex_init(&g_tr.writer_lock, NULL);
    pthread_mutex_init(&g_init_lock, NULL);
    if (atomic_load(&g_tr.initialized)) {
        atomic_store(&g_tr.enabled, 0);
        if (!g_untraced_children) atomic_store(&g_forked, 1); /* re-initialised at this process's first event */
    }
}

/* Starts tracing in this process; forked_child names the file accordingly.
 * Called with g_init_lock held. */
static void start(int forked_child) {
    if (!g_once_done) {
        read_config();
        tr_stack_init();
        pthread_atfork(on_prepare, on_parent, on_child);
        tr_fronts_each(f) if (f->once) f->once();
        g_once_done = 1;
    }
    tr_py_init();
    g_owner_pid = getpid();
    tr_clock_start();
    atomic_store(&g_tr.next_seq, 1);
    atomic_store(&g_tr.initialized, 1);
    const char *root = getenv("DEVTRACE_ROOT_PID");
    int other_process = forked_child || (root && *root && atoi(root) != (int)g_owner_pid);
    if (tr_output_claim(g_tr.cfg.path, sizeof g_tr.cfg.path, other_process) < 0) return;
    if (forked_child) tr_modules_new_trace(); /* the parent's module map, as this trace's own rows */
    tr_modules_scan(0);
    /* The writer thread opens the file and creates the schema (5 ms of SQLite
     * parsing) while the program goes on: its events wait in the rings. */
    atomic_store(&g_tr.enabled, 1);
    if (tr_writer_start() < 0) {
        atomic_store(&g_tr.enabled, 0);
        return;
    }
    append_manifest();
}

int tr_ensure_init(void) {
    if (atomic_load(&g_tr.initialized) && !atomic_load(&g_forked)) return atomic_load(&g_tr.enabled);
    int saved_errno = errno; /* the program's, from its first probe: the output file, the writer's start */
    pthread_mutex_lock(&g_init_lock);
    if (atomic_load(&g_forked)) {
        tr_writer_abandon();
        tr_ring_forget_all();
        atomic_store(&g_forked, 0);
        start(1);
    } else if (!atomic_load(&g_tr.initialized)) {
        start(0);
    }
    pthread_mutex_unlock(&g_init_lock);
    errno = saved_errno;
    return atomic_load(&g_tr.enabled);
}

/* At the preloaded tracer's start: glibc has run the constructors of the
 * libraries the program needs (libtorch's among them: checked, a preloaded
 * object's constructor runs after those of the program's DT_NEEDED
 * libraries), not yet the program's own, nor main. */
__attribute__((constructor)) static void tracer_init(void) {
    if (tr_ensure_init()) tr_fronts_each(f) if (f->started) f->started();
}

/* Finishes this process's trace (once). exec_path: the program the process
 * is about to become; a trace that recorded no event then is removed (a
 * `#!/usr/bin/env python3` script runs env first, which has nothing to say
 * and would otherwise leave a trace of its own under the name the user
 * asked for, pushing the real one to a fresh name). */
static int g_trace_removed; /* finish_trace removed a trace that recorded nothing */

/* This process owns the trace in g_tr: not a fork child that has not
 * started its own yet, nor a vfork child running in its parent's memory. */
static int owns_trace(void) {
    return atomic_load(&g_tr.initialized) && !atomic_load(&g_forked) && getpid() == g_owner_pid;
}

static int g_finish_silent; /* the in-process API finishes the trace and says where it is itself */

static void finish_trace(const char *exec_path) {
    static _Atomic int done;
    if (!owns_trace()) return;
    if (atomic_exchange(&done, 1)) return;
    tr_fronts_each(f) if (f->flush) f->flush(); /* CUPTI's last activity records, while the writer runs */
    int was_on = atomic_load(&g_tr.enabled) || g_tr.writer_running;
    uint64_t written = tr_writer_stop(1, exec_path);
    atomic_store(&g_tr.enabled, 0);
    if (exec_path && written == 0) {
        tr_output_remove(g_tr.cfg.path);
        g_trace_removed = 1;
        return;
    }
    uint64_t dropped = 0;
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) dropped += atomic_load(&r->dropped);
    if (was_on && !atomic_load(&g_tr.warned) && !getenv("DEVTRACE_MANIFEST") && !g_finish_silent) {
        if (dropped)
            tr_info("trace written to %s; %llu events dropped (full rings%s)", g_tr.cfg.path,
                    (unsigned long long)dropped, g_tr.cfg.lossy ? " in lossy mode, DEVTRACE_LOSSY=1" : "");
        else
            tr_info("trace written to %s", g_tr.cfg.path);
    }
}

__attribute__((destructor)) static void tracer_fini(void) { finish_trace(NULL); }

/* The in-process API (python/devtrace: the tracer loaded with dlopen into a
 * running interpreter, not preloaded). tr_api_trace_path: this process's
 * trace, NULL when it has none (tracing failed to start: warned). */
TR_EXPORT const char *tr_api_trace_path(void) { return owns_trace() && g_tr.cfg.path[0] ? g_tr.cfg.path : NULL; }

/* Everything recorded so far committed to the trace (waits up to 2 s), so
 * that a reader of the live trace (devtrace report, from the pytest plugin
 * after a failed test) sees it. 0, or -1 when this process has no trace. */
TR_EXPORT int tr_api_flush(void) {
    if (!tr_api_trace_path()) return -1;
    tr_writer_sync();
    return 0;
}

/* From now on a forked child records nothing (see g_untraced_children). */
TR_EXPORT void tr_api_untraced_children(void) { g_untraced_children = 1; }

/* Finishes this process's trace now, as at exit (drain, indexes, close),
 * silently: the caller says where it is. The process goes on untraced; a
 * process has one trace, whose meta says it was stopped so (the program's
 * exit status is not in it). 0, or -1 when it had none to finish. */
TR_EXPORT int tr_api_finish(void) {
    if (!tr_api_trace_path()) return -1;
    g_finish_silent = 1;
    finish_trace(NULL);
    tr_writer_note(g_tr.cfg.path, "stopped_in_process", "1");
    return 0;
}

/* exit() and _exit() are wrapped to note the status (a return from main
 * through the wrapper of main below). Only
 * the process that owns the trace notes it: a vfork or posix_spawn child
 * runs in its parent's memory until it execs or calls _exit. */
static void note_exit_status(int status) {
    if (!owns_trace()) return;
    atomic_store(&g_tr.exit_status, status & 0xff);
    atomic_store(&g_tr.exit_stamp, tr_stamp());
}

TR_EXPORT __attribute__((noreturn)) void exit(int status) {
    static void (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "exit");
    note_exit_status(status);
    if (real) real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

TR_EXPORT __attribute__((noreturn)) void _exit(int status) {
    static void (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "_exit");
    note_exit_status(status);
    finish_trace(NULL); /* no destructors will run */
    if (real) real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* A return from main calls exit inside libc, past the wrapper above: main
 * itself is wrapped, through glibc's __libc_start_main (called by _start
 * through the PLT, so the preloaded definition wins), and its return value
 * noted before libc exits with it. */
typedef int (*main_fn)(int, char **, char **);
static main_fn g_real_main;

static int main_wrapper(int argc, char **argv, char **envp) {
    int rc = g_real_main(argc, argv, envp);
    note_exit_status(rc);
    return rc;
}

TR_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                void (*rtld_fini)(void), void *stack_end) {
    typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
    static start_fn real;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) abort(); /* no libc to start the program: nothing else can be done */
    g_real_main = main;
    return real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

/* exec: the image ends without destructors, so the trace is finished here,
 * before the call (a successful exec does not return). The new image, when
 * it loads the tracer again, starts a trace of its own. A failed exec
 * returns to a process that is no longer traced; it is said once. A vfork
 * child (another pid, the parent's memory) leaves the parent's trace alone. */
static void before_exec(const char *path) { finish_trace(path ? path : "?"); }

static void after_failed_exec(const char *path, int err) {
    if (owns_trace()) {
        if (!g_trace_removed) tr_writer_note(g_tr.cfg.path, "exec_failed", strerror(err));
        tr_info("exec of %s failed (%s); the rest of process %d is not traced", path, strerror(err), (int)getpid());
    }
    errno = err;
}

#define REAL_EXEC(name, type)                                                                                          \
    static type real;                                                                                                  \
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, name);                                                               \
    if (!real) {                                                                                                       \
        errno = ENOSYS;                                                                                                \
        return -1;                                                                                                     \
    }

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

TR_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    REAL_EXEC("execve", execve_fn);
    before_exec(path);
    int rc = real(path, argv, envp);
    after_failed_exec(path, errno);
    return rc;
}

TR_EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

TR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    REAL_EXEC("execvpe", execvpe_fn);
    before_exec(file);
    int rc = real(file, argv, envp);
    after_failed_exec(file, errno);
    return rc;
}

/* as glibc's own execvp: execvpe with this process's environment */
TR_EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

TR_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    REAL_EXEC("fexecve", fexecve_fn);
    char what[32];
    snprintf(what, sizeof what, "fd %d", fd);
    before_exec(what);
    int rc = real(fd, argv, envp);
    after_failed_exec(what, errno);
    return rc;
}

/* execl, execlp, execle: the variadic list as an array, then the v form. */
#define LIST_ARGS(first, ap, argv, n)                                                                                  \
    size_t n = 1;                                                                                                      \
    va_start(ap, first);                                                                                               \
    while (va_arg(ap, const char *)) n++;                                                                              \
    va_end(ap);                                                                                                        \
    const char *argv[n + 1];                                                                                           \
    argv[0] = first;                                                                                                   \
    va_start(ap, first);                                                                                               \
    for (size_t i_ = 1; i_ <= n; i_++) argv[i_] = va_arg(ap, const char *);

TR_EXPORT int execl(const char *path, const char *arg, ...) {
    va_list ap;
    LIST_ARGS(arg, ap, argv, n);
    va_end(ap);
    return execve(path, (char *const *)argv, environ);
}

TR_EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    LIST_ARGS(arg, ap, argv, n);
    va_end(ap);
    return execvp(file, (char *const *)argv);
}

TR_EXPORT int execle(const char *path, const char *arg, ...) {
    va_list ap;
    LIST_ARGS(arg, ap, argv, n);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, (char *const *)argv, envp);
}
