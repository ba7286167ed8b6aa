/* The flight recorder (DEVTRACE_MAX_MB): the live tensors kept in memory
 * under a cap, marks of the largest ids, and the passes that drop freed
 * tensors' old events from the trace when its live pages pass the cap's
 * high mark, counting what they dropped in meta. */
#include "writer_impl.h"

#include <stdlib.h>
#include <string.h>

/* A bounded trace (DEVTRACE_MAX_MB): when the live pages of the file pass
 * PRUNE_HIGH percent of the cap, passes of one transaction each drop the
 * events of the oldest part of the span not yet pruned that belong to freed
 * tensors (the part the live pages are over PRUNE_LOW percent by, and a
 * little more), until the live pages are under PRUNE_LOW percent. The
 * marks leave room for the WAL beside the file.
 * Kept always: every tensor still alive, the tensors named by an error or
 * used by the op that failed, and everything their chains reach backwards
 * (derived.src, the op that made a tensor and that op's arguments, again
 * and again), with their names and transfers; errors and the events that
 * carry them; modules, threads, devices, strings, stacks and source facts.
 * Dropped: a freed tensor's row (its creation and free), derived, names and
 * transfers rows, when it was created and freed before the horizon and no
 * kept chain reaches it; an op that ended before the horizon and made no
 * kept tensor, with its arguments, outputs and end; CUDA calls and activity
 * records before the horizon. The freed pages are reused by later inserts
 * (no vacuum: the file stops growing). Each pass's counts go into meta in
 * its own transaction: a trace cut short at any moment says what it lost. */
#define PRUNE_HIGH   55     /* percent of the cap: prune above */
#define PRUNE_LOW    40     /* percent of the cap: prune down to */
#define PRUNE_STEP   10     /* percent: a pass drops the share of the unpruned span the cap is over by, +STEP/2 */
#define PRUNE_PASSES 12     /* passes at the exit at most */
#define PRUNE_EMPTY  3      /* passes in a row that drop nothing: the kept chains fill the cap, stop */
#define PRUNE_EVERY  1      /* commits between two checks of the size */
#define PRUNE_SLICE  262144 /* seqs a pass covers at most: ~1 us of writer time per row it drops */
#define PRUNE_MARK   4096   /* under a cap: records between two marks of the largest tensor and op ids */

/* ---------------------------------------------------------------- live tensors */

/* The live set is kept only under a cap (the pruning's seeds). A free
 * leaves its slot marked -1 so that probing past it still finds the ids
 * after it; slots are taken back when the table is rebuilt. Out of memory:
 * pruning stops (said in meta), tracing goes on. */
static void prune_stop(const char *why) {
    if (tr_w.prune.off) return;
    tr_w.prune.off = 1;
    tr_meta_text("prune_stopped", why);
}

static int alive_rebuild(size_t cap) {
    struct tr_map2 n = {0};
    n.cap = cap;
    n.k1 = calloc(cap, 8), n.k2 = calloc(cap, 8), n.v = calloc(cap, 8);
    if (!n.k1 || !n.k2 || !n.v) {
        tr_map2_free(&n);
        return -1;
    }
    for (size_t i = 0; i < tr_w.alive.cap; i++) {
        if (tr_w.alive.v[i] != 1) continue;
        size_t j = tr_mix(tr_w.alive.k1[i], 0) & (cap - 1);
        while (n.v[j]) j = (j + 1) & (cap - 1);
        n.k1[j] = tr_w.alive.k1[i], n.v[j] = 1, n.n++;
    }
    tr_map2_free(&tr_w.alive);
    tr_w.alive = n;
    return 0;
}

void tr_alive_add(int64_t id) {
    if (!g_tr.cfg.max_mb || tr_w.prune.off) return;
    if (tr_w.alive.n * 2 >= tr_w.alive.cap) { /* full of live ones and freed slots: twice the room if half are live */
        size_t cap = tr_w.alive.cap ? tr_w.alive.cap : 4096;
        if (tr_w.alive_n * 4 >= cap) cap *= 2;
        if (alive_rebuild(cap) < 0) return prune_stop("out of memory for the live tensors");
    }
    size_t j = tr_map2_slot(&tr_w.alive, (uint64_t)id, 0, NULL, NULL);
    if (tr_w.alive.v[j] == 1) return;
    if (!tr_w.alive.v[j]) tr_w.alive.n++;
    tr_w.alive.k1[j] = (uint64_t)id, tr_w.alive.k2[j] = 0, tr_w.alive.v[j] = 1;
    tr_w.alive_n++;
}

void tr_alive_del(int64_t id) {
    if (!tr_w.alive.cap) return;
    size_t j = tr_map2_slot(&tr_w.alive, (uint64_t)id, 0, NULL, NULL);
    if (tr_w.alive.v[j] == 1) tr_w.alive.v[j] = -1, tr_w.alive_n--;
}

/* After each record under a cap: the largest ids, and a mark every PRUNE_MARK records. */
void tr_prune_note(int64_t seq) {
    if (!g_tr.cfg.max_mb || tr_w.prune.off || tr_w.events_written % PRUNE_MARK) return;
    if (tr_w.prune.nmarks == tr_w.prune.capmarks) {
        int cap = tr_w.prune.capmarks ? 2 * tr_w.prune.capmarks : 256;
        struct prune_mark *m = realloc(tr_w.prune.marks, sizeof *m * (size_t)cap);
        if (!m) return prune_stop("out of memory for the marks");
        tr_w.prune.marks = m, tr_w.prune.capmarks = cap;
    }
    tr_w.prune.marks[tr_w.prune.nmarks++] = (struct prune_mark){seq, tr_w.prune.max_tensor, tr_w.prune.max_op};
}

/* ---------------------------------------------------------------- passes */

/* Seeds of the kept set (temp.prune_alive: the live tensors, from the
 * writer's memory) and its closure; then what a pass drops. :h is the
 * horizon (events before it may go), :idh and :oph the largest tensor and
 * op ids seen before it: the scans of tensor_rows and ops are ranges of
 * their keys, and misc_events, transfers and the CUDA tables are keyed by
 * seq, so a pass reads what lies before its horizon (the new slice and
 * what older passes kept), not the whole trace. The recursive CTE walks
 * only INTEGER PRIMARY KEYs (no index exists while tracing). */
static const char prune_keep_sql[] =
    "DELETE FROM temp.prune_keep;"
    "INSERT OR IGNORE INTO temp.prune_keep WITH RECURSIVE k(id) AS ("
    " SELECT id FROM temp.prune_alive"
    " UNION SELECT first_arg FROM errors WHERE first_arg IS NOT NULL"
    " UNION SELECT other_arg FROM errors WHERE other_arg IS NOT NULL"
    " UNION SELECT o.arg0_tensor FROM errors x JOIN misc_events e ON e.seq = x.seq AND e.kind = 9 JOIN ops o ON"
    " o.op = e.op WHERE o.arg0_tensor IS NOT NULL"
    " UNION SELECT o.arg1_tensor FROM errors x JOIN misc_events e ON e.seq = x.seq AND e.kind = 9 JOIN ops o ON"
    " o.op = e.op WHERE o.arg1_tensor IS NOT NULL"
    " UNION SELECT a.tensor FROM errors x JOIN misc_events e ON e.seq = x.seq AND e.kind = 9 JOIN op_args_more a ON"
    " a.op = e.op"
    " UNION SELECT d.src FROM k JOIN derived d ON d.tensor = k.id"
    " UNION SELECT o.arg0_tensor FROM k JOIN tensor_rows r ON r.id = k.id JOIN ops o ON o.op = r.op"
    " WHERE o.arg0_tensor IS NOT NULL"
    " UNION SELECT o.arg1_tensor FROM k JOIN tensor_rows r ON r.id = k.id JOIN ops o ON o.op = r.op"
    " WHERE o.arg1_tensor IS NOT NULL"
    " UNION SELECT a.tensor FROM k JOIN tensor_rows r ON r.id = k.id JOIN op_args_more a ON a.op = r.op"
    ") SELECT id FROM k WHERE id IS NOT NULL;"
    "DELETE FROM temp.prune_keep_ops;"
    "INSERT OR IGNORE INTO temp.prune_keep_ops SELECT r.op FROM temp.prune_keep k JOIN tensor_rows r ON r.id = k.id"
    " WHERE r.op IS NOT NULL UNION SELECT e.op FROM errors x JOIN misc_events e ON e.seq = x.seq WHERE e.op IS NOT"
    " NULL;";

static const char prune_doomed_sql[] =
    "DELETE FROM temp.prune_gone; DELETE FROM temp.prune_gone_ops;"
    "INSERT INTO temp.prune_gone SELECT r.id FROM tensor_rows r WHERE r.id <= :idh AND r.seq < :h AND"
    " COALESCE(r.free_seq, (SELECT f.seq FROM frees_late f WHERE f.tensor = r.id)) < :h AND r.id NOT IN"
    " temp.prune_keep;"
    "INSERT OR IGNORE INTO temp.prune_gone_ops SELECT o.op FROM ops o WHERE o.op <= :oph AND o.seq < :h AND o.len IS"
    " NOT NULL AND o.seq + o.len < :h AND o.op NOT IN temp.prune_keep_ops"
    " UNION SELECT e.op FROM misc_events e WHERE e.seq < :h AND e.kind = 8 AND e.op IS NOT NULL AND e.op NOT IN"
    " temp.prune_keep_ops AND (SELECT o.seq FROM ops o WHERE o.op = e.op) < :h;"
    "SELECT (SELECT min(seq) FROM tensor_rows WHERE id IN temp.prune_gone), (SELECT min(seq) FROM ops WHERE op IN"
    " temp.prune_gone_ops);";

/* One statement a table; PD_* name their positions: the events a pass
 * drops are counted from their changes, as the events view counts them
 * (every tensor dropped was freed: its creation and its free; every op
 * ended: its begin and its end, in its row or a misc_events row). */
enum {
    PD_MISC_END,
    PD_MISC_NAME,
    PD_MISC_TRANSFER,
    PD_TRANSFERS,
    PD_NAMES,
    PD_DERIVED,
    PD_FREES_LATE,
    PD_TENSORS,
    PD_ARGS,
    PD_OUTS,
    PD_OPS,
    PD_CUDA,
    PD_CUDA_ACT,
    PD_N
};
static const char prune_delete_sql[] =
    "DELETE FROM misc_events WHERE seq < :h AND kind = 8 AND op IN temp.prune_gone_ops;"
    "DELETE FROM misc_events WHERE seq < :h AND kind = 5 AND tensor IN temp.prune_gone;"
    "DELETE FROM misc_events WHERE seq < :h AND kind = 4 AND seq IN (SELECT seq FROM transfers WHERE seq < :h AND src"
    " NOT IN temp.prune_keep AND (dst IS NULL OR dst NOT IN temp.prune_keep));"
    "DELETE FROM transfers WHERE seq < :h AND src NOT IN temp.prune_keep AND (dst IS NULL OR dst NOT IN"
    " temp.prune_keep);"
    "DELETE FROM names WHERE seq < :h AND tensor IN temp.prune_gone;"
    "DELETE FROM derived WHERE tensor IN temp.prune_gone;"
    "DELETE FROM frees_late WHERE tensor IN temp.prune_gone;"
    "DELETE FROM tensor_rows WHERE id IN temp.prune_gone;"
    "DELETE FROM op_args_more WHERE op IN temp.prune_gone_ops;"
    "DELETE FROM op_outputs_more WHERE op IN temp.prune_gone_ops;"
    "DELETE FROM ops WHERE op IN temp.prune_gone_ops;"
    "DELETE FROM cuda_calls WHERE seq < :h;"
    "DELETE FROM cuda_activity WHERE seq < :h;";

/* The values a pass's statements bind by name. */
struct prune_at {
    int64_t h, idh, oph; /* :h, :idh, :oph */
};

/* Runs each statement of sql with its parameters bound from at; the rows
 * each changed go into changes[i] (when given), the first row a SELECT
 * returns into row[0..1] (NULL: 0). */
static int exec_pass(const char *sql, const struct prune_at *at, int64_t *changes, int64_t *row) {
    const char *tail = sql;
    for (int n = 0; !tr_w.failed && tail && *tail; n++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(tr_w.db, tail, -1, &st, &tail) != SQLITE_OK) {
            tr_sql_fail("prune");
            return -1;
        }
        if (!st) break; /* trailing whitespace */
        const char *names[] = {":h", ":idh", ":oph"};
        const int64_t vals[] = {at->h, at->idh, at->oph};
        for (int k = 0; k < 3; k++) {
            int i = sqlite3_bind_parameter_index(st, names[k]);
            if (i) sqlite3_bind_int64(st, i, vals[k]);
        }
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && row) {
            row[0] = sqlite3_column_int64(st, 0), row[1] = sqlite3_column_int64(st, 1);
            while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            }
        }
        if (changes && rc == SQLITE_DONE) changes[n] = sqlite3_changes(tr_w.db);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            tr_sql_fail("prune");
            return -1;
        }
    }
    return tr_w.failed ? -1 : 0;
}

static int64_t pragma_int(const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(tr_w.db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Bytes the trace's live pages hold (the freelist's pages are reused). */
static int64_t live_bytes(void) {
    int64_t pages = pragma_int("PRAGMA main.page_count"), free_pages = pragma_int("PRAGMA main.freelist_count");
    if (pages < 0 || free_pages < 0) return -1;
    return (pages - free_pages) * pragma_int("PRAGMA main.page_size");
}

/* The largest tensor and op ids seen before seq h (the marks hold them
 * every PRUNE_MARK records); marks before h are dropped: no later pass
 * needs them. */
static void prune_ids_before(int64_t h, int64_t *idh, int64_t *oph) {
    int k = 0;
    while (k < tr_w.prune.nmarks && tr_w.prune.marks[k].seq < h) k++;
    *idh = k < tr_w.prune.nmarks ? tr_w.prune.marks[k].max_tensor : tr_w.prune.max_tensor;
    *oph = k < tr_w.prune.nmarks ? tr_w.prune.marks[k].max_op : tr_w.prune.max_op;
    memmove(tr_w.prune.marks, tr_w.prune.marks + k, sizeof *tr_w.prune.marks * (size_t)(tr_w.prune.nmarks - k));
    tr_w.prune.nmarks -= k;
}

/* The live tensors into temp.prune_alive. */
static int prune_alive_rows(void) {
    if (tr_sql_exec("DELETE FROM temp.prune_alive") < 0) return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(tr_w.db, "INSERT OR IGNORE INTO temp.prune_alive VALUES(?)", -1, &st, NULL) != SQLITE_OK) {
        tr_sql_fail("prune");
        return -1;
    }
    for (size_t j = 0; j < tr_w.alive.cap; j++) {
        if (tr_w.alive.v[j] != 1) continue;
        sqlite3_bind_int64(st, 1, (int64_t)tr_w.alive.k1[j]);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(st);
            tr_sql_fail("prune");
            return -1;
        }
    }
    sqlite3_finalize(st);
    return 0;
}

/* One pass up to horizon h, in its own transaction: 1 when it dropped
 * something, 0 when nothing was to drop, -1 on failure. */
static int prune_pass(int64_t from, int64_t h) {
    uint64_t t0 = tr_thread_cpu_ns();
    /* its scratch tables, in memory, made on the first pass: a trace that never reaches the cap pays nothing */
    if (tr_w.prune.kept_seq == -1 &&
        tr_sql_exec(
            "PRAGMA temp_store=MEMORY; CREATE TEMP TABLE IF NOT EXISTS prune_alive(id INTEGER PRIMARY KEY);"
            " CREATE TEMP TABLE IF NOT EXISTS prune_keep(id INTEGER PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS"
            " prune_keep_ops(op INTEGER PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS prune_gone(id INTEGER"
            " PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS prune_gone_ops(op INTEGER PRIMARY KEY);") < 0)
        return -1;
    struct prune_at at = {.h = h};
    prune_ids_before(h, &at.idh, &at.oph);
    if (tr_sql_exec("BEGIN") < 0) return -1;
    /* the kept set holds for the next pass while nothing new was recorded */
    if (tr_w.prune.kept_seq != tr_w.max_seq &&
        (prune_alive_rows() < 0 || exec_pass(prune_keep_sql, &at, NULL, NULL) < 0))
        return -1;
    tr_w.prune.kept_seq = tr_w.max_seq;
    int64_t firsts[2] = {0, 0}, c[PD_N + 1] = {0};
    if (exec_pass(prune_doomed_sql, &at, NULL, firsts) < 0 || exec_pass(prune_delete_sql, &at, c, NULL) < 0) return -1;
    int64_t rows = 0, events = c[PD_MISC_NAME] + c[PD_MISC_TRANSFER] + 2 * c[PD_TENSORS] + 2 * c[PD_OPS] + c[PD_CUDA];
    for (int k = 0; k < PD_N; k++) rows += c[k];
    tr_w.prune.horizon = h;
    if (rows > 0) {
        int64_t first = firsts[0] > 0 && (firsts[1] <= 0 || firsts[0] < firsts[1]) ? firsts[0] : firsts[1];
        if (first <= 0) first = from > 0 ? from : 1; /* only transfers or CUDA calls: the pass's span */
        tr_w.prune.events += events, tr_w.prune.rows += rows, tr_w.prune.passes++;
        if (!tr_w.prune.first || first < tr_w.prune.first) tr_w.prune.first = first;
        if (h - 1 > tr_w.prune.last) tr_w.prune.last = h - 1;
    }
    tr_w.prune.ns += tr_thread_cpu_ns() - t0;
    if (tr_w.prune.passes) { /* the keys appear with the first rows dropped */
        tr_meta_int("pruned_events", tr_w.prune.events);
        tr_meta_int("pruned_rows", tr_w.prune.rows);
        tr_meta_int("pruned_passes", tr_w.prune.passes);
        tr_meta_int("pruned_before_seq", tr_w.prune.horizon);
        tr_meta_int("pruned_first_seq", tr_w.prune.first);
        tr_meta_int("pruned_last_seq", tr_w.prune.last);
        tr_meta_int("prune_ns", (int64_t)tr_w.prune.ns);
    }
    if (tr_sql_exec("COMMIT") < 0) return -1;
    return rows > 0;
}

/* After a commit: prunes when the live pages pass the high mark, one pass
 * per commit (the rings are drained in between: a producer never waits on
 * a whole check) until they are under the low mark. A check whose last
 * PRUNE_EMPTY passes dropped nothing (the kept chains fill the cap) stops,
 * and the next waits until the trace has grown by another PRUNE_STEP
 * percent. At the end (all set) it runs only above high_pct, whatever a
 * check under way, and makes up to PRUNE_PASSES passes at once: the
 * indexes built then need room. */
static int prune_check(int high_pct, int all) {
    if (!g_tr.cfg.max_mb || tr_w.failed || tr_w.prune.off) return tr_w.failed ? -1 : 0;
    int64_t cap = (int64_t)g_tr.cfg.max_mb << 20, live = live_bytes();
    if (live < 0) return 0;
    if (!tr_w.prune.active || all) {
        if (live <= cap / 100 * high_pct || (!all && live <= tr_w.prune.retry_at)) return 0;
        tr_w.prune.active = 1, tr_w.prune.npass = 0, tr_w.prune.empty = 0;
    }
    do {
        int64_t from = tr_w.prune.horizon, to = tr_w.max_seq + 1;
        if (live <= cap / 100 * PRUNE_LOW || (all && tr_w.prune.npass == PRUNE_PASSES) ||
            tr_w.prune.empty >= PRUNE_EMPTY || to - from < 2) {
            tr_w.prune.active = 0;
            tr_w.prune.retry_at = live > cap / 100 * PRUNE_LOW ? live + cap / 100 * PRUNE_STEP : 0;
            return 0;
        }
        /* the share of the span to drop: what the live pages are over the low mark, and a little more (the
         * kept rows are spread over the span too) */
        int64_t pct = (live - cap / 100 * PRUNE_LOW) * 100 / (live ? live : 1) + PRUNE_STEP / 2;
        if (pct < PRUNE_STEP / 2) pct = PRUNE_STEP / 2;
        if (pct > 5 * PRUNE_STEP) pct = 5 * PRUNE_STEP;
        int64_t h = from + (to - from) * pct / 100;
        if (h - from > PRUNE_SLICE) h = from + PRUNE_SLICE; /* a pass holds the writer ~0.1-0.3 s at most */
        if (h <= from) h = from + 1;
        int dropped = prune_pass(from, h);
        if (dropped < 0) return -1;
        tr_w.prune.empty = dropped ? 0 : tr_w.prune.empty + 1;
        tr_w.prune.npass++;
        tr_checkpoint_when(1);
        live = live_bytes();
        if (live <= cap / 100 * PRUNE_LOW) tr_w.prune.active = 0, tr_w.prune.retry_at = 0; /* done */
    } while (all && tr_w.prune.active);
    return 0;
}

/* After a commit while the program runs: a check every PRUNE_EVERY commits,
 * or a pass when one is under way. */
int tr_prune_after_commit(void) {
    if (tr_w.prune.active || ++tr_w.prune.commits % PRUNE_EVERY == 0) return prune_check(PRUNE_HIGH, 0);
    return 0;
}

/* At the end, before the indexes are built: pruning on the program's time
 * only when the run outpaced it (the indexes need room). */
int tr_prune_at_exit(void) { return prune_check(PRUNE_HIGH + 20, 1); }
