/* The ground of libdevtrace.so: the process-wide state (g_tr, its
 * configuration) and the one-warning failure path every module reports
 * through. It depends on nothing else in the tracer, so that any module can
 * use it without the circle through init.c. */
#ifndef DEVTRACE_GROUND_H
#define DEVTRACE_GROUND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TR_HIDDEN  __attribute__((visibility("hidden")))
#define TR_EXPORT  __attribute__((visibility("default")))
#define TR_VERSION "0.1.0"

struct tr_ring; /* one thread's ring (tr_impl.h) */

/* ---------------------------------------------------------------- global state */

struct tr_config {
    char path[4096];   /* the trace file */
    int depth;         /* native frames per event */
    size_t ring_bytes; /* per thread */
    int python;        /* capture Python stacks */
    int commit_ms;     /* commit interval */
    int quiet;         /* DEVTRACE_QUIET=1: no line of our own on stderr, warnings included */
    int lossy;         /* DEVTRACE_LOSSY=1: a full ring drops (and counts) instead of waiting for the writer */
    long max_mb; /* DEVTRACE_MAX_MB: the trace's cap in MiB (the writer prunes freed tensors' old events); 0: none */
};

/* A clock pair (clock.c): a time-stamp counter value and CLOCK_MONOTONIC
 * at the same moment. */
struct tr_clock_pair {
    uint64_t tsc, ns;
};

/* THREAD SAFETY NOTES: g_tr.enabled is read by every producer and cleared
 * by whoever hits an internal failure; rings are published through the
 * lock-free list g_tr.rings (push only; the writer unlinks under
 * g_tr.writer_lock). Everything the writer owns (SQLite handle, interning
 * tables) is touched by the writer thread only, or by the exit and fatal
 * paths after they stopped it. */
struct tr_state {
    /* alone on its line, which each event takes for its locked add: the
     * fields beside it, read by the writer per record, made every event
     * fetch it back from the writer's core */
    _Alignas(64) _Atomic uint64_t next_seq; /* global event counter */
    _Alignas(64) _Atomic int enabled;       /* producers record only while 1 */
    _Atomic int initialized;                /* init ran in this process */
    uint64_t t0;                            /* CLOCK_MONOTONIC at start, ns */
    int tsc;                                /* records are stamped with the time-stamp counter */
    struct tr_clock_pair start;             /* the counter at t0 */
    _Atomic(struct tr_ring *) rings;        /* all rings of this process */
    struct tr_config cfg;
    pthread_t writer; /* the writer thread */
    int writer_running;
    pthread_mutex_t writer_lock; /* held while the writer works; fork takes it */
    int wake_fd[2];              /* pipe: wakes the writer (signal-safe) */
    _Atomic int stop;            /* writer: return; the program's thread finishes the trace */
    _Atomic int writer_opened;   /* the writer made the file and its schema (or failed to) */
    _Atomic uint64_t lap_ticks;  /* TR_RING_LAP_MS in tr_stamp() units; 0 until the writer knows */
    _Atomic int writer_idle;     /* the writer waits in poll: a wake gets it going at once */
    _Atomic int flush_request;   /* fatal path: drain and commit now */
    _Atomic int flush_done;      /* writer: request served */
    _Atomic int writer_gone;     /* writer thread returned (failed): nobody serves requests */
    _Atomic int warned;          /* the one warning was printed */
    _Atomic int fatal_signal;    /* signal that is killing us, or 0 */
    _Atomic int exit_status;     /* status passed to exit(), or -1 */
    char fail_msg[512];          /* the one warning's text (tracing stopped early), "" when none; set once */
    _Atomic uint64_t exit_stamp; /* tr_stamp() when exit() was called, or 0 */
};

extern TR_HIDDEN struct tr_state g_tr;

/* ---------------------------------------------------------------- failures */

/* Turns tracing off with one warning line on stderr (printf-like). */
TR_HIDDEN void tr_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
TR_HIDDEN void tr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
TR_HIDDEN int64_t tr_gettid(void);

#endif /* DEVTRACE_GROUND_H */
