/* The writer's SQLite plumbing: the one failure path of a trace that cannot
 * be written (tracing off, one warning), plain statements, batches of rows
 * inserted TR_BATCH at a time by prepared multi-row statements, and the
 * WAL's checkpoints. What the rows mean is the callers' business. The
 * writer's lowest file: it calls no other writer file. */
#include "writer_impl.h"

#include <stdio.h>
#include <string.h>

void tr_sql_fail(const char *what) {
    if (tr_w.failed) return;
    tr_w.failed = 1;
    int err = tr_w.db ? sqlite3_system_errno(tr_w.db) : 0; /* EFBIG (ulimit -f), ENOSPC... say which */
    tr_fail("cannot write trace %s (%s: %s%s%s)", tr_w.path, what, tr_w.db ? sqlite3_errmsg(tr_w.db) : "no database",
            err ? ": " : "", err ? strerror(err) : "");
}

#define SQL_CHECK(call, what)                                                                                          \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != SQLITE_OK && rc_ != SQLITE_DONE && rc_ != SQLITE_ROW) {                                             \
            tr_sql_fail(what);                                                                                         \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

int tr_sql_exec(const char *sql) {
    if (tr_w.failed) return -1;
    char *err = NULL;
    if (sqlite3_exec(tr_w.db, sql, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        tr_sql_fail(sql);
        return -1;
    }
    return 0;
}

sqlite3_stmt *tr_sql_prep(const char *sql) {
    sqlite3_stmt *st = NULL;
    if (!tr_w.failed && sqlite3_prepare_v3(tr_w.db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        tr_sql_fail(sql);
        return NULL;
    }
    return st;
}

/* Rows of ts_tables[table], batched. */
int tr_batch_init(struct tr_batch *b, enum ts_table_id table, int ncols) {
    char sql[8192], row[128];
    if (ncols != ts_tables[table].ncols || ncols > TR_BATCH_COLS) {
        tr_sql_fail("batch layout");
        return -1;
    }
    int n = snprintf(row, sizeof row, "(");
    for (int c = 0; c < ncols; c++) n += snprintf(row + n, sizeof row - (size_t)n, c ? ",?" : "?");
    snprintf(row + n, sizeof row - (size_t)n, ")");
    /* OR IGNORE: a producer that breaks the contract and reuses an id must
     * not cost the whole trace; the first row stays */
    int k = snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s VALUES %s", ts_tables[table].name, row);
    b->single = tr_sql_prep(sql);
    for (int r = 1; r < TR_BATCH; r++) k += snprintf(sql + k, sizeof sql - (size_t)k, ",%s", row);
    b->multi = tr_sql_prep(sql);
    b->ncols = ncols;
    b->n = 0;
    b->bound_ok = 0;
    return b->single && b->multi ? 0 : -1;
}

static int bind_row(sqlite3_stmt *st, int first, const int64_t *v, int ncols) {
    for (int c = 0; c < ncols; c++) {
        int rc = tr_bind_int(st, first + c, v[c]);
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

int tr_batch_flush(struct tr_batch *b) {
    if (tr_w.failed || b->n == 0) return tr_w.failed ? -1 : 0;
    if (b->n == TR_BATCH) {
        int n = TR_BATCH * b->ncols;
        for (int i = 0; i < n; i++) {
            int64_t v = b->vals[i];
            if (b->bound_ok && v == b->bound[i]) continue;
            int rc = tr_bind_int(b->multi, 1 + i, v);
            if (rc != SQLITE_OK) b->bound_ok = 0;
            SQL_CHECK(rc, "bind");
            b->bound[i] = v;
        }
        b->bound_ok = 1;
        SQL_CHECK(sqlite3_step(b->multi), "insert");
        sqlite3_reset(b->multi);
    } else {
        for (int r = 0; r < b->n; r++) {
            SQL_CHECK(bind_row(b->single, 1, b->vals + r * b->ncols, b->ncols), "bind");
            SQL_CHECK(sqlite3_step(b->single), "insert");
            sqlite3_reset(b->single);
        }
    }
    b->n = 0;
    return 0;
}

/* ---------------------------------------------------------------- the WAL's checkpoints */

/* After a commit: the WAL's size, in frames (this hook replaces SQLite's
 * automatic checkpoint, which tr_checkpoint_when does instead). */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int frames) {
    (void)ctx, (void)db, (void)name;
    tr_w.wal_frames = frames;
    return SQLITE_OK;
}

void tr_wal_watch(void) { sqlite3_wal_hook(tr_w.db, wal_hook, NULL); }

/* Copies the WAL into the file (SQLite's automatic checkpoint at 1000
 * frames), and as soon as the writer has caught up with 64 or more: not at
 * the end on the program's time; the WAL then starts over, small and in
 * cache. Not after every idle commit: that copied the same last pages of
 * each table over and over. */
void tr_checkpoint_when(int idle) {
    if (tr_w.wal_frames < tr_w.ckpt_frames && !(idle && tr_w.wal_frames >= 64)) return;
    int log = 0, done = 0;
    uint64_t t0 = tr_thread_cpu_ns();
    int rc = sqlite3_wal_checkpoint_v2(tr_w.db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED) /* busy: a reader checkpoints */
        tr_sql_fail("checkpoint");
    if (rc == SQLITE_OK && done == log) tr_w.wal_frames = 0; /* the next commit starts the WAL over */
    tr_w.busy_ns += tr_thread_cpu_ns() - t0;
}
