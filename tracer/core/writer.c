/* The writer: one thread that drains every ring into the SQLite trace (WAL,
 * a commit every cycle, at least every 50 ms, checkpoints of its own),
 * keeps the module and thread tables, and opens the trace with its schema.
 * What a record becomes is writer_records.c's; interning writer_intern.c's;
 * the end of the trace (finish, indexes, close, fork) writer_exit.c's; the
 * flight recorder writer_prune.c's. Any SQLite failure (disk full,
 * unwritable file) turns tracing off with one warning; what was committed
 * stays readable. Only this thread touches the database, except the exit
 * and fatal paths, which stop it first. */
#include "writer_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define DRAIN_MAX 16384 /* records taken from a ring per transaction while the program runs */
#define STEP_MS   5     /* rings drained this often between commits */

/* The writer's state: only this thread, or the exit and fatal paths after they stopped it, touch it. */
struct tr_writer tr_w;

/* Drains one ring, up to tr_w.drain_max records; returns records handled, or
 * -1. A burst is written in transactions of bounded size: one transaction of
 * a million rows spills SQLite's page cache into the WAL and grows the WAL
 * to the transaction's size before any of it is checkpointed. */
static int64_t drain(struct tr_ring *r) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    const unsigned char *data = r->data;
    uint64_t size = r->size;
    int64_t n = 0;
    while (tail < head && !tr_w.failed) {
        if (n == tr_w.drain_max) {
            tr_w.more = 1;
            break;
        }
        const struct tr_rec *h = (const struct tr_rec *)(data + (tail & (size - 1)));
        if (h->size < 8 || h->size > size) { /* never happens unless memory was corrupted */
            tr_fail("ring of thread %lld is corrupt", (long long)r->tid);
            return -1;
        }
        if (h->kind != TR_EV_PAD) {
            if (tr_record_handle(r, h) < 0) return -1;
            n++;
        }
        tail += h->size;
        /* the space goes back every 1024 records, not after each: each store
         * takes the line the producer reads the tail from */
        if ((n & 1023) == 0) atomic_store_explicit(&r->tail, tail, memory_order_release);
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    if (atomic_load(&r->state) == TR_RING_EXITED && tail == atomic_load(&r->head) && r->writer_state == 0) {
        r->writer_state = 1; /* drained for good: give its pages back */
        madvise(r->data, r->size, MADV_DONTNEED);
    }
    return n;
}

static int64_t module_row(void *ctx, const char *path, uint64_t base, uint64_t start, uint64_t end,
                          const char *build_id, uint64_t loaded, uint64_t unloaded, int64_t row) {
    (void)ctx;
    if (tr_w.failed) return -1;
    sqlite3_stmt *st = row ? tr_w.upd_module : tr_w.ins_module;
    if (row) {
        sqlite3_bind_int64(st, 1, (int64_t)unloaded);
        sqlite3_bind_int64(st, 2, row);
    } else {
        sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, (int64_t)base);
        sqlite3_bind_int64(st, 3, (int64_t)start);
        sqlite3_bind_int64(st, 4, (int64_t)end);
        sqlite3_bind_text(st, 5, build_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 6, (int64_t)loaded);
        if (unloaded)
            sqlite3_bind_int64(st, 7, (int64_t)unloaded);
        else
            sqlite3_bind_null(st, 7);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        tr_sql_fail("module");
        return -1;
    }
    return row ? row : sqlite3_last_insert_rowid(tr_w.db);
}

static void update_threads(void) {
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r && !tr_w.failed; r = r->next) {
        uint64_t d = atomic_load(&r->dropped), w = atomic_load(&r->written);
        if (!r->writer_id || (d == r->writer_dropped && w == r->writer_written)) continue;
        r->writer_dropped = d, r->writer_written = w;
        sqlite3_bind_int64(tr_w.upd_thread, 1, (int64_t)w);
        sqlite3_bind_int64(tr_w.upd_thread, 2, (int64_t)d);
        sqlite3_bind_int64(tr_w.upd_thread, 3, r->writer_id);
        int rc = sqlite3_step(tr_w.upd_thread);
        sqlite3_reset(tr_w.upd_thread);
        if (rc != SQLITE_DONE) tr_sql_fail("update thread");
    }
}

/* A step: every ring drained into the transaction, begun here when none is
 * open, and the module table brought up to date. */
static int step_body(void) {
    if (tr_w.failed) return -1;
    if (!tr_w.in_txn) {
        if (tr_sql_exec("BEGIN") < 0) return -1;
        tr_w.in_txn = 1, tr_w.txn_records = 0;
    }
    tr_w.more = 0;
    if (tr_modules_changed()) tr_modules_scan(atomic_load(&g_tr.next_seq));
    tr_modules_flush(module_row, NULL);
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) {
        int64_t n = drain(r);
        if (n < 0) break;
        tr_w.txn_records += n;
        tr_thread_of(r);
    }
    return tr_w.failed ? -1 : 0;
}

/* A cycle: a last step, then the held rows and the counters, committed. */
static int cycle_body(void) {
    if (step_body() < 0) return -1;
    tr_pend_flush_all();
    struct tr_batch *all[] = {&tr_w.frames,    &tr_w.pyframes, &tr_w.attrs,      &tr_w.tensors,
                              &tr_w.derived,   &tr_w.args,     &tr_w.outs,       &tr_w.names,
                              &tr_w.transfers, &tr_w.ops,      &tr_w.frees_late, &tr_w.misc,
                              &tr_w.cuda,      &tr_w.cuda_act, &tr_w.facts,      &tr_w.roles};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tr_batch_flush(all[i]);
    update_threads();
    if (tr_w.failed) return -1;
    tr_w.in_txn = 0;
    return tr_sql_exec("COMMIT");
}

static int timed(int (*body)(void)) {
    uint64_t t0 = tr_thread_cpu_ns();
    int rc = body();
    tr_w.busy_ns += tr_thread_cpu_ns() - t0;
    return rc;
}
int tr_writer_cycle(void) { return timed(cycle_body); }

static int writer_open(const char *path) {
    memset(&tr_w, 0, sizeof tr_w);
    snprintf(tr_w.path, sizeof tr_w.path, "%s", path);
    tr_w.drain_max = DRAIN_MAX;
    tr_w.prune.kept_seq = -1;
    /* under a cap the WAL, beside the file, stays a tenth of it (a page is 4 KiB) */
    tr_w.ckpt_frames = 1000;
    if (g_tr.cfg.max_mb && g_tr.cfg.max_mb * 256 / 10 < tr_w.ckpt_frames)
        tr_w.ckpt_frames = g_tr.cfg.max_mb * 256 / 10 < 64 ? 64 : (int)(g_tr.cfg.max_mb * 256 / 10);
    tr_clock_conv_init(&tr_w.clock);
    if (sqlite3_open_v2(path, &tr_w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        tr_sql_fail("open");
        return -1;
    }
    sqlite3_busy_timeout(tr_w.db, 2000);
    /* 4 KiB pages, not DESIGN.md's 64 KiB: a traced program trickles events,
     * and every commit rewrites the last page of each table it touched. With
     * 64 KiB pages that made a 2 s training workload 1.07x slower traced and
     * its trace 25% larger; 4 KiB: 1.00x (bench/run.sh). 64 KiB only wins
     * for bulk bursts (0.82 against 0.66 M events/s). synchronous=OFF: no
     * fsync at checkpoints. What is written reaches the OS before the next
     * commit, so a crash or SIGKILL of the traced program loses nothing more
     * (SQLite's documented guarantee); only an OS crash or power loss could
     * lose the tail, which a debugging trace does not need to survive. It comes
     * before journal_mode=WAL: the switch to WAL writes through a rollback
     * journal, with four fdatasyncs at the default level (2-3 ms at start). */
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA page_size=4096; PRAGMA synchronous=OFF; PRAGMA journal_mode=WAL;"
             " PRAGMA application_id=%d; PRAGMA user_version=%d;",
             TS_APPLICATION_ID, TS_SCHEMA_VERSION);
    if (tr_sql_exec(pragmas) < 0) return -1;
    if (g_tr.cfg.max_mb) { /* a WAL reset after a checkpoint is cut back to this */
        snprintf(pragmas, sizeof pragmas, "PRAGMA journal_size_limit=%lld;", (long long)(g_tr.cfg.max_mb << 20) / 10);
        if (tr_sql_exec(pragmas) < 0) return -1;
    }
    tr_wal_watch();
    static char tables[8192]; /* the writer's only: made once per trace */
    if (ts_create_sql(tables, sizeof tables) >= (int)sizeof tables) {
        tr_sql_fail("schema too long");
        return -1;
    }
    if (tr_sql_exec("BEGIN") < 0 || tr_sql_exec(tables) < 0 || tr_sql_exec(tr_schema_kinds) < 0 ||
        tr_sql_exec(tr_schema_views) < 0)
        return -1;
    tr_w.ins_string = tr_sql_prep("INSERT INTO strings VALUES(?,?)");
    tr_w.ins_pycode = tr_sql_prep("INSERT OR REPLACE INTO py_code VALUES(?,?,?,?)");
    tr_w.ins_error = tr_sql_prep("INSERT INTO errors VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    tr_w.ins_site = tr_sql_prep("INSERT OR REPLACE INTO throw_sites VALUES(?,?,?)");
    tr_w.ins_thread = tr_sql_prep("INSERT INTO threads VALUES(?,?,?,0,0)");
    tr_w.upd_thread = tr_sql_prep("UPDATE threads SET events=?, dropped=? WHERE id=?");
    tr_w.ins_device = tr_sql_prep("INSERT OR REPLACE INTO devices VALUES(?,?,?)");
    tr_w.ins_module =
        tr_sql_prep("INSERT INTO modules(path,base,start,end,build_id,loaded_seq,unloaded_seq) VALUES(?,?,?,?,?,?,?)");
    tr_w.upd_module = tr_sql_prep("UPDATE modules SET unloaded_seq=? WHERE id=?");
    tr_w.ins_meta = tr_sql_prep("INSERT OR REPLACE INTO meta VALUES(?,?)");
#define BATCH_INIT(b, t) tr_batch_init(b, TS_T_##t, TS_##t##_NCOLS)
    if (tr_w.failed || BATCH_INIT(&tr_w.misc, misc_events) || BATCH_INIT(&tr_w.frees_late, frees_late) ||
        BATCH_INIT(&tr_w.tensors, tensor_rows) || BATCH_INIT(&tr_w.derived, derived) ||
        BATCH_INIT(&tr_w.attrs, tensor_attrs) || BATCH_INIT(&tr_w.args, op_args_more) ||
        BATCH_INIT(&tr_w.outs, op_outputs_more) || BATCH_INIT(&tr_w.names, names) ||
        BATCH_INIT(&tr_w.transfers, transfers) || BATCH_INIT(&tr_w.ops, ops) || BATCH_INIT(&tr_w.frames, frames) ||
        BATCH_INIT(&tr_w.pyframes, py_frames) || BATCH_INIT(&tr_w.cuda, cuda_calls) ||
        BATCH_INIT(&tr_w.cuda_act, cuda_activity) || BATCH_INIT(&tr_w.facts, source_facts) ||
        BATCH_INIT(&tr_w.roles, roles))
        return -1;
#undef BATCH_INIT
    if (tr_map2_grow(&tr_w.strings) || tr_map2_grow(&tr_w.stacks) || tr_map2_grow(&tr_w.pystacks) ||
        tr_map2_grow(&tr_w.pycode) || tr_map2_grow(&tr_w.stack_cache) || tr_map2_grow(&tr_w.dims_cache) ||
        tr_map2_grow(&tr_w.attrs_cache)) {
        tr_sql_fail("out of memory");
        return -1;
    }
    if (tr_meta_start() < 0 || tr_sql_exec("COMMIT") < 0) return -1;
    return 0;
}

/* The CPUs the writer may use, given back to it once its schema is made
 * (tr_writer_start); has_mask is 0 when it started with all of them. */
static cpu_set_t g_writer_cpus;
static int g_writer_has_mask;

static void *writer_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals belong to the program's threads */
    pthread_setname_np(pthread_self(), "devtrace-writer");
    pthread_mutex_lock(&g_tr.writer_lock);
    int opened = writer_open(g_tr.cfg.path) == 0; /* warned when not */
    atomic_store(&g_tr.writer_opened, 1);
    pthread_mutex_unlock(&g_tr.writer_lock);
    if (g_writer_has_mask) pthread_setaffinity_np(pthread_self(), sizeof g_writer_cpus, &g_writer_cpus);
    /* Commits every commit_ms; in between, drains the rings every STEP_MS
     * into the open transaction, so that what is left when the program ends
     * (and waits for the writer) is at most that much, not a whole commit
     * interval's events (mlp_train: 1-5 ms at exit, now 0.3-1). Each step
     * finds the writer's caches cold: at 2 ms the writer's CPU time per
     * record grew by ~10%. */
    uint64_t due = tr_now_ns() + (uint64_t)g_tr.cfg.commit_ms * 1000000u;
    while (opened && !atomic_load(&g_tr.stop)) {
        struct pollfd p = {.fd = g_tr.wake_fd[0], .events = POLLIN};
        uint64_t now = tr_now_ns();
        int wait = tr_w.more || now >= due ? 0 : (int)((due - now + 999999) / 1000000);
        atomic_store_explicit(&g_tr.writer_idle, 1, memory_order_relaxed);
        int woken = poll(&p, 1, wait < STEP_MS ? wait : STEP_MS) > 0;
        atomic_store_explicit(&g_tr.writer_idle, 0, memory_order_relaxed);
        if (woken) {
            char buf[64];
            while (read(g_tr.wake_fd[0], buf, sizeof buf) > 0) {
            }
        }
        pthread_mutex_lock(&g_tr.writer_lock);
        if (atomic_load(&g_tr.stop)) { /* the trace is being finished (or is): hands off */
            pthread_mutex_unlock(&g_tr.writer_lock);
            break;
        }
        tr_clock_calibrate();
        for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) tr_ring_populate(r);
        /* a fatal signal's flush takes everything recorded before it asked;
         * a request that comes during the cycle waits for the next one (the
         * pipe wakes it at once) */
        int flush = atomic_load(&g_tr.flush_request);
        tr_w.drain_max = flush ? INT64_MAX : DRAIN_MAX;
        int commit = flush || tr_now_ns() >= due || tr_w.txn_records >= DRAIN_MAX;
        int rc = commit ? tr_writer_cycle() : timed(step_body);
        if (commit) {
            if (rc == 0) tr_checkpoint_when(!tr_w.more);
            if (rc == 0) rc = tr_prune_after_commit();
            due = tr_now_ns() + (uint64_t)g_tr.cfg.commit_ms * 1000000u;
        }
        if (flush) {
            if (flush == TR_FLUSH_FATAL && rc == 0 && tr_sql_exec("BEGIN") == 0) {
                tr_meta_int("fatal_signal", atomic_load(&g_tr.fatal_signal));
                tr_meta_int("end_time_ns", tr_unix_ns());
                tr_sql_exec("COMMIT");
            }
            atomic_store(&g_tr.flush_request, 0);
            atomic_store(&g_tr.flush_done, 1);
        }
        pthread_mutex_unlock(&g_tr.writer_lock);
        if (rc < 0) break;
    }
    if (!atomic_load(&g_tr.stop)) atomic_store(&g_tr.writer_gone, 1); /* failed: warned */
    return NULL;
}

int tr_writer_start(void) {
    atomic_store(&g_tr.writer_gone, 0);
    atomic_store(&g_tr.writer_opened, 0);
    if (pipe2(g_tr.wake_fd, O_CLOEXEC | O_NONBLOCK) < 0) {
        tr_fail("cannot create the writer's pipe: %s", strerror(errno));
        return -1;
    }
    /* The new thread starts away from this thread's CPU when the process
     * has another. Placed on it, it preempted the program for the 3-5 ms of
     * its schema until the kernel moved one of the two: mlp_train's start
     * took 0.05-2.3 ms longer, at random. It gets every CPU back after. */
    pthread_attr_t attr;
    int has_attr = pthread_attr_init(&attr) == 0, cpu = sched_getcpu();
    g_writer_has_mask = 0;
    if (has_attr && cpu >= 0 && cpu < CPU_SETSIZE && sched_getaffinity(0, sizeof g_writer_cpus, &g_writer_cpus) == 0 &&
        CPU_ISSET(cpu, &g_writer_cpus) && CPU_COUNT(&g_writer_cpus) > 1) {
        cpu_set_t others = g_writer_cpus;
        CPU_CLR(cpu, &others);
        g_writer_has_mask = pthread_attr_setaffinity_np(&attr, sizeof others, &others) == 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&g_tr.writer, g_writer_has_mask ? &attr : NULL, writer_main, NULL);
    if (rc != 0 && g_writer_has_mask) { /* a mask the system refused: start it as any thread */
        g_writer_has_mask = 0;
        rc = pthread_create(&g_tr.writer, NULL, writer_main, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (has_attr) pthread_attr_destroy(&attr);
    if (rc != 0) {
        tr_fail("cannot start the writer thread: %s", strerror(rc));
        return -1;
    }
    g_tr.writer_running = 1;
    return 0;
}

/* Asks the writer to drain every ring and commit, and waits up to 2 s for it.
 * kind: TR_FLUSH_FATAL (the fatal path: the end's meta is written too) or
 * TR_FLUSH_SYNC (a reader is about to read the live trace: nothing else). */
static void flush_wait(int kind) {
    /* Called from a program thread: the writer does the work (SQLite is not
     * async-signal-safe); this only asks and waits. */
    if (!g_tr.writer_running || pthread_equal(pthread_self(), g_tr.writer)) return;
    atomic_store(&g_tr.flush_done, 0);
    atomic_store(&g_tr.flush_request, kind);
    tr_writer_wake();
    for (int i = 0; i < 2000 && !atomic_load(&g_tr.flush_done) && !atomic_load(&g_tr.writer_gone);
         i++) { /* up to 2 s */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void tr_writer_flush_now(void) { flush_wait(TR_FLUSH_FATAL); }

void tr_writer_sync(void) { flush_wait(TR_FLUSH_SYNC); }
