/* The end of a trace: the last drain, the end's meta rows and the indexes
 * (finish), on the program's thread at exit or exec; the writer's memory
 * given back; a fork child abandoning its parent's handle; a note into a
 * trace already closed. SQLite's writes here are guarded against SIGXFSZ. */
#include "writer_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void site_row(uint64_t site, uint64_t throws, uint64_t recorded) {
    sqlite3_bind_int64(tr_w.ins_site, 1 + TS_throw_sites_site, (int64_t)site);
    sqlite3_bind_int64(tr_w.ins_site, 1 + TS_throw_sites_throws, (int64_t)throws);
    sqlite3_bind_int64(tr_w.ins_site, 1 + TS_throw_sites_recorded, (int64_t)recorded);
    int rc = sqlite3_step(tr_w.ins_site);
    sqlite3_reset(tr_w.ins_site);
    if (rc != SQLITE_DONE) tr_sql_fail("insert throw site");
}

static void meta_int(const char *key, int64_t value) { tr_meta_int(key, value); }

static void finish(int complete, const char *exec_path) {
    if (tr_w.failed || !tr_w.db) return;
    /* the end in the events' own time: exit() when it was called, else now (main returned), before the last
     * drain and the indexes make it later */
    uint64_t end = atomic_load(&g_tr.exit_stamp);
    if (!end) end = tr_stamp();
    tr_w.drain_max = INT64_MAX; /* everything recorded until now, in one go */
    /* pruning at the exit (on the program's time) only when the run outpaced it: the indexes need room */
    if (tr_writer_cycle() < 0 || tr_prune_at_exit() < 0) return;
    uint64_t dropped = 0, waits = 0, wait_ns = 0, first_drop = 0, last_drop = 0;
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) {
        dropped += atomic_load(&r->dropped), waits += atomic_load(&r->waits), wait_ns += atomic_load(&r->wait_ns);
        uint64_t f = atomic_load(&r->first_drop);
        if (f && (!first_drop || f < first_drop)) first_drop = f;
        uint64_t l = atomic_load(&r->last_drop);
        if (l > last_drop) last_drop = l;
    }
    if (tr_sql_exec("BEGIN") < 0) return;
    tr_meta_int("end_time_ns", tr_unix_ns());
    tr_meta_int("end_t", tr_clock_ns(&tr_w.clock, end));
    tr_meta_int("events_recorded", (int64_t)tr_w.events_written);
    tr_meta_int("events_dropped", (int64_t)dropped);
    tr_meta_int("lossy", g_tr.cfg.lossy);
    if (first_drop) tr_meta_int("first_dropped_seq", (int64_t)first_drop);
    if (last_drop) tr_meta_int("last_dropped_seq", (int64_t)last_drop);
    tr_meta_int("ring_waits", (int64_t)waits);
    tr_meta_int("ring_wait_ns", (int64_t)wait_ns);
    /* tracing turned off early (one warning): what follows it is missing */
    if (atomic_load(&g_tr.warned)) {
        complete = 0;
        tr_meta_text("tracing_stopped", g_tr.fail_msg[0] ? g_tr.fail_msg : "an internal failure (see the warning)");
    }
    tr_meta_int("writer_busy_ns", (int64_t)tr_w.busy_ns);
    int st = atomic_load(&g_tr.exit_status);
    if (st >= 0) tr_meta_int("exit_status", st);
    const char *pyv = tr_py_version();
    if (pyv) tr_meta_text("python", pyv);
    tr_meta_int("complete", complete);
    if (exec_path) tr_meta_text("exec", exec_path);
    /* the front-ends' counts: CUDA calls forwarded without a record (DEVTRACE_CUDA_ACTIVITY unset), C++ throw
     * sites */
    const struct tr_front_sink sink = {.meta_int = meta_int, .throw_site = site_row};
    tr_fronts_each(f) if (f->finish) f->finish(&sink);
    if (tr_sql_exec("COMMIT") < 0) return;
    if (tr_sql_exec("BEGIN") == 0 && tr_sql_exec(tr_schema_indexes) == 0)
        tr_sql_exec("COMMIT"); /* one commit for the five */
    tr_sql_exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

/* The writer's heap memory (its SQLite handle aside). */
static void free_mem(void) {
    for (int64_t i = 0; i < tr_w.ntexts; i++) free(tr_w.texts[i]);
    free(tr_w.texts);
    for (int64_t i = 0; i < tr_w.caprctx; i++) free(tr_w.rctx[i]);
    free(tr_w.rctx);
    tr_map2_free(&tr_w.strings), tr_map2_free(&tr_w.stacks), tr_map2_free(&tr_w.pystacks), tr_map2_free(&tr_w.pycode);
    tr_map2_free(&tr_w.stack_cache), tr_map2_free(&tr_w.dims_cache), tr_map2_free(&tr_w.attrs_cache),
        tr_map2_free(&tr_w.alive);
    free(tr_w.prune.marks);
    tr_w.prune.marks = NULL, tr_w.prune.nmarks = tr_w.prune.capmarks = 0;
    tr_w.texts = NULL, tr_w.ntexts = 0, tr_w.rctx = NULL, tr_w.caprctx = 0;
}

/* SQLite's writes on a program thread (the trace finished at exit, a note
 * after a failed exec): past RLIMIT_FSIZE, write() sends that thread
 * SIGXFSZ, whose default kills the program the tracer was only watching.
 * The signal is blocked around them, so the write fails with EFBIG (one
 * warning, tracing off), and a SIGXFSZ they made is taken back before the
 * mask is restored. One that was pending before stays: it is the
 * program's. (The writer thread blocks every signal: one sent to it stays
 * pending there, unseen.) */
struct xfsz_guard {
    sigset_t old; /* the thread's mask before */
    int pending;  /* SIGXFSZ was pending already */
};

static void xfsz_block(struct xfsz_guard *g) {
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
    g->pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
}

static void xfsz_restore(struct xfsz_guard *g) {
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    if (!g->pending && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        int saved = errno;
        sigtimedwait(&set, NULL, &zero);
        errno = saved;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The calling thread finishes the trace itself: it takes the lock (after
 * the step the writer may be in), drains what is left, and closes. The
 * writer, asleep or waiting for the lock, sees stop and returns; it is
 * detached, not joined: waking it and waiting for it to end took the
 * program 0.15-0.25 ms at its exit for nothing. A writer still creating the
 * schema is waited for, so that the file is made before it is finished;
 * every wait here is bounded (TR_RING_STUCK_MS and 3 s more). */
uint64_t tr_writer_stop(int final, const char *exec_path) {
    if (g_tr.writer_running) {
        atomic_store(&g_tr.stop, 1);
        tr_writer_wake();
        /* bounded: a writer stuck while it creates the schema (a hung
         * disk) must not hang the program's exit either */
        for (int i = 0; i < TR_RING_STUCK_MS + 3000 && !atomic_load(&g_tr.writer_opened); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        pthread_detach(g_tr.writer);
        g_tr.writer_running = 0;
        if (!atomic_load(&g_tr.writer_opened)) { /* it still holds the handle: leave it all alone */
            tr_fail("the trace writer is stuck creating the trace; it is left unfinished");
            return UINT64_MAX;
        }
    }
    struct xfsz_guard xg;
    xfsz_block(&xg);
    /* bounded: a writer stuck inside its cycle (holding the lock) must not
     * hang the program's exit; the trace then ends at its last commit */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += TR_RING_STUCK_MS / 1000 + 3;
    if (pthread_mutex_timedlock(&g_tr.writer_lock, &until) != 0) {
        tr_fail("the trace writer is stuck; the trace ends at its last commit");
        xfsz_restore(&xg);
        return UINT64_MAX;
    }
    finish(final, exec_path);
    uint64_t written = tr_w.failed ? UINT64_MAX : tr_w.events_written;
    if (tr_w.db) {
        sqlite3_stmt *st = NULL;
        while ((st = sqlite3_next_stmt(tr_w.db, NULL)) != NULL) sqlite3_finalize(st);
        sqlite3_close(tr_w.db);
        tr_w.db = NULL;
    }
    free_mem();
    pthread_mutex_unlock(&g_tr.writer_lock);
    xfsz_restore(&xg);
    return written;
}

void tr_writer_abandon(void) {
    /* Fork child: the handle and its memory belong to the parent's trace.
     * Closing it here could checkpoint or delete the parent's WAL: forget it.
     * Its memory is this process's copy, free to give back (fork's prepare
     * handler held the writer lock: nothing was half-done). */
    free_mem();
    memset(&tr_w, 0, sizeof tr_w);
    g_tr.writer_running = 0;
    if (g_tr.wake_fd[0] > 0) close(g_tr.wake_fd[0]), close(g_tr.wake_fd[1]);
    g_tr.wake_fd[0] = g_tr.wake_fd[1] = -1;
    atomic_store(&g_tr.stop, 0);
    atomic_store(&g_tr.flush_request, 0);
}

int tr_writer_note(const char *path, const char *key, const char *value) {
    struct xfsz_guard xg;
    xfsz_block(&xg);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES(?,?)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    xfsz_restore(&xg);
    return rc == SQLITE_OK ? 0 : -1;
}
