/* Internals of the writer (writer*.c), shared by its files and by nothing
 * else: the row layouts it holds back, its hash map and batches (in line:
 * they run per record), its state, and each file's functions. The rest of
 * the tracer sees only tr_impl.h's tr_writer_* functions. */
#ifndef DEVTRACE_WRITER_IMPL_H
#define DEVTRACE_WRITER_IMPL_H

#include "tr_impl.h"
#include "trace_schema.h"

#include <sqlite3.h>
#include <string.h>

/* schema.c: SQL text run when the trace is made (kinds, views) and finished (indexes). */
extern const char tr_schema_kinds[], tr_schema_views[], tr_schema_indexes[];
TR_HIDDEN const char *tr_py_version(void); /* pystack.c: the Python running, or NULL */

#define TR_NULLV     INT64_MIN /* a NULL column in a batch */
#define TR_BATCH     32        /* rows per multi-row INSERT */
#define TR_PEND_OPS  16        /* open ops held per thread */
#define TR_PEND_ROWS 4         /* tensors rows held per open op */

/* Column positions are common/trace_schema.h's TS_<table>_<column>. */

/* The widest row a batch holds (cuda_calls). */
#define TR_BATCH_COLS TS_cuda_calls_NCOLS

/* A tensor's row held back (in a batch, or with its open op) so that its
 * free, when it comes soon, goes into it: its tensor_rows columns (the free
 * ones NULL until then), then the columns of its tensor_attrs row (the id
 * NULL: given when it is written), then its source (derived.src, or NULL). */
enum {
    TR_HELD_ATTRS = TS_tensor_rows_NCOLS,                /* first tensor_attrs column */
    TR_HELD_SRC = TR_HELD_ATTRS + TS_tensor_attrs_NCOLS, /* derived.src */
    TR_HELD_NCOLS
};
#define TR_HELD_ATTR(c) (TR_HELD_ATTRS + TS_tensor_attrs_##c)
#define TR_HELD_NFREE   5 /* free_seq, free_t, free_thread, free_stack, free_pystack: a frees_late row but its tensor */

/* An ops row keeps its first TR_OARGS arguments (the rest: op_args_more), each
 * as TR_OARG_COLS columns: name, tensor, device. */
#define TR_OARGS     2
#define TR_OARG_COLS (TS_ops_arg1_name - TS_ops_arg0_name)

_Static_assert(TS_tensor_attrs_id == 0, "tensor_attrs: the id first, then the attributes hashed as one key");
_Static_assert(TS_tensor_rows_free_pystack == TS_tensor_rows_free_seq + TR_HELD_NFREE - 1 &&
                   TS_frees_late_pystack == TS_frees_late_seq + TR_HELD_NFREE - 1 &&
                   TS_frees_late_NCOLS == 1 + TR_HELD_NFREE,
               "a held row's free columns and a frees_late row's match, in order");
_Static_assert(TS_ops_arg1_name == TS_ops_arg0_name + TR_OARG_COLS && TS_ops_arg0_tensor == TS_ops_arg0_name + 1 &&
                   TS_ops_arg0_device == TS_ops_arg0_name + 2 &&
                   TS_ops_out0 == TS_ops_arg0_name + TR_OARGS * TR_OARG_COLS,
               "ops: the arguments kept in the row are name, tensor, device each, then out0");
_Static_assert((int)TS_frames_id == (int)TS_py_frames_id && (int)TS_frames_parent == (int)TS_py_frames_parent &&
                   (int)TS_frames_ip == (int)TS_py_frames_code && (int)TS_frames_NCOLS == (int)TS_py_frames_line,
               "frames and py_frames rows are built alike (trie_node)");
_Static_assert(TS_strings_NCOLS == 2 && TS_py_code_NCOLS == 4 && TS_errors_NCOLS == 12 && TS_threads_NCOLS == 5 &&
                   TS_devices_NCOLS == 3 && TS_meta_NCOLS == 2 && TS_throw_sites_NCOLS == 3,
               "the statements prepared in writer_open name every column");

/* ---------------------------------------------------------------- hash map (writer_map.c) */

/* Open addressing from a (k1, k2) key to a nonzero id. */
struct tr_map2 {
    uint64_t *k1, *k2;
    int64_t *v;
    size_t cap, n;
};

static inline uint64_t tr_mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* Twice the slots (4096 at first), rehashed; 0, or -1 when out of memory. */
TR_HIDDEN int tr_map2_grow(struct tr_map2 *m);
TR_HIDDEN void tr_map2_free(struct tr_map2 *m);

/* The slot of (k1, k2), or of the empty slot where it belongs; verify (if
 * given) confirms a key match (strings compare their text). */
static inline size_t tr_map2_slot(const struct tr_map2 *m, uint64_t k1, uint64_t k2,
                                  int (*verify)(int64_t, const void *), const void *ctx) {
    size_t j = tr_mix(k1, k2) & (m->cap - 1);
    while (m->v[j] && !(m->k1[j] == k1 && m->k2[j] == k2 && (!verify || verify(m->v[j], ctx))))
        j = (j + 1) & (m->cap - 1);
    return j;
}

/* Two independent 64-bit hashes of n words: together a 128-bit key, whose
 * collisions are too rare to matter, so a cache hit needs no verification.
 * Each hash runs two lanes (even and odd words) so that the multiply chains
 * overlap: a 20-frame stack is hashed on every event. */
static inline void tr_hash128(const uint64_t *w, int n, uint64_t *h1, uint64_t *h2) {
    uint64_t a = 0x243f6a8885a308d3ull ^ (uint64_t)n, b = 0x13198a2e03707344ull + (uint64_t)n;
    uint64_t c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
    int i = 0;
    for (; i + 1 < n; i += 2) {
        a = (a ^ w[i]) * 0x100000001b3ull;
        c = (c ^ w[i + 1]) * 0x100000001b3ull;
        b = (b + w[i]) * 0x9e3779b97f4a7c15ull;
        d = (d + w[i + 1]) * 0x9e3779b97f4a7c15ull;
        a ^= a >> 29, c ^= c >> 29, b ^= b >> 32, d ^= d >> 32;
    }
    if (i < n) {
        a = (a ^ w[i]) * 0x100000001b3ull;
        b = (b + w[i]) * 0x9e3779b97f4a7c15ull;
    }
    *h1 = tr_mix(a, c) | 1; /* nonzero */
    *h2 = tr_mix(b, d);
}

/* id cached under a 128-bit key, or 0 (*slot is (size_t)-1 when the cache
 * cannot grow: the caller works uncached). */
static inline int64_t tr_cache_get(struct tr_map2 *m, uint64_t h1, uint64_t h2, size_t *slot) {
    *slot = (size_t)-1;
    if (m->n * 2 >= m->cap && tr_map2_grow(m) < 0) return 0;
    *slot = tr_map2_slot(m, h1, h2, NULL, NULL);
    return m->v[*slot];
}

static inline void tr_cache_put(struct tr_map2 *m, size_t slot, uint64_t h1, uint64_t h2, int64_t id) {
    if (slot == (size_t)-1 || id <= 0) return;
    m->k1[slot] = h1, m->k2[slot] = h2, m->v[slot] = id;
    m->n++;
}

/* ---------------------------------------------------------------- batches (writer_sql.c) */

/* Rows of integers (or TR_NULLV) inserted TR_BATCH at a time. The multi-row
 * statement keeps its bindings between steps: only the values that changed
 * are bound again (most NULL columns stay NULL row after row). */
struct tr_batch {
    sqlite3_stmt *multi, *single;
    int ncols, n;
    int bound_ok; /* `bound` holds what multi is bound to */
    int64_t vals[TR_BATCH * TR_BATCH_COLS];
    int64_t bound[TR_BATCH * TR_BATCH_COLS];
};

/* Turns tracing off with one warning naming what failed (once); every later write is skipped. */
TR_HIDDEN void tr_sql_fail(const char *what);
TR_HIDDEN int tr_sql_exec(const char *sql);           /* 0, or -1 (failed) */
TR_HIDDEN sqlite3_stmt *tr_sql_prep(const char *sql); /* a persistent statement, or NULL (failed) */
TR_HIDDEN int tr_batch_init(struct tr_batch *b, enum ts_table_id table, int ncols);
TR_HIDDEN int tr_batch_flush(struct tr_batch *b); /* the rows held, inserted; 0 or -1 */
/* The WAL's checkpoints, the writer's own (SQLite's automatic one off): tr_wal_watch, once the trace is open,
 * counts the WAL's frames after each commit; tr_checkpoint_when copies the WAL into the file when it is due. */
TR_HIDDEN void tr_wal_watch(void);
TR_HIDDEN void tr_checkpoint_when(int idle);

/* An integer, or SQL NULL for TR_NULLV. */
static inline int tr_bind_int(sqlite3_stmt *st, int i, int64_t v) {
    return v == TR_NULLV ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

static inline int tr_batch_add(struct tr_batch *b, const int64_t *row) {
    memcpy(b->vals + b->n * b->ncols, row, sizeof(int64_t) * (size_t)b->ncols);
    if (++b->n == TR_BATCH) return tr_batch_flush(b);
    return 0;
}

/* ---------------------------------------------------------------- open ops (writer_ops.c) */

/* An op that began on a thread and has not ended: its ops row and the rows
 * of tensors it created, held back so that its end fills in the row's len,
 * dur and status, each output's out_pos and out0: one row per op instead of
 * two events, and no output row for an output the op created or an in-place
 * op's. Written at the op's end or at the next commit, whichever comes first
 * (then its end, when it comes, is a misc_events row and its outputs
 * op_outputs_more rows). */
struct tr_pend {
    int64_t row[TS_ops_NCOLS];
    int flushed; /* row written already */
    int nrows;
    int64_t trows[TR_PEND_ROWS][TR_HELD_NCOLS]; /* held tensor rows */
};

struct tr_rctx { /* per recording thread, by threads.id */
    int depth;
    struct tr_pend st[TR_PEND_OPS];
};

TR_HIDDEN struct tr_rctx *tr_rctx_of(int64_t thread);                              /* NULL: out of memory */
TR_HIDDEN struct tr_pend *tr_pend_find(struct tr_rctx *c, int64_t op, int *index); /* the open op, or NULL */
TR_HIDDEN int tr_pend_flush_all(void); /* before a commit: every open op, as far as it is known */
TR_HIDDEN int tr_op_end(const struct tr_rec *h, int64_t thread, const uint64_t *I, int ni);
/* A misc_events row of record h (TR_NULLV: NULL): what an op's end or a record with no table of its own becomes. */
TR_HIDDEN int tr_misc_row(const struct tr_rec *h, int64_t thread, int64_t tensor, int64_t op, int64_t stack,
                          int64_t pystack, int64_t value);
/* The free columns of a tensor's row still held, or NULL. */
TR_HIDDEN int64_t *tr_held_free(int64_t thread, int64_t id);

/* ---------------------------------------------------------------- writer state (writer.c) */

/* The writer's state (writer.c defines it). */
struct tr_writer {
    sqlite3 *db;
    char path[4096];
    int failed; /* an SQLite call failed: nothing more is written */
    struct tr_batch misc, frees_late, tensors, derived, attrs, args, outs, names, transfers, ops, frames, pyframes,
        cuda, cuda_act, facts, roles;
    sqlite3_stmt *ins_string, *ins_pycode, *ins_error, *ins_thread, *upd_thread, *ins_device, *ins_module, *upd_module,
        *ins_meta, *ins_site;
    struct tr_map2 strings, stacks, pystacks, pycode;
    struct tr_map2 stack_cache, dims_cache; /* whole stack / whole shape (128-bit key) -> id */
    struct tr_map2 attrs_cache;             /* a tensor's attributes (128-bit key) -> tensor_attrs.id */
    char **texts;                           /* interned strings by id - 1 */
    int64_t ntexts, captexts;
    int64_t nframes, npyframes, npycode, nthreads, nattrs;
    struct tr_rctx **rctx; /* by threads.id; [0] unused */
    int64_t caprctx;
    uint64_t events_written;
    int64_t drain_max;          /* records per ring per cycle (DRAIN_MAX; no limit at the end) */
    int more;                   /* a ring was left with records by that limit */
    uint64_t busy_ns;           /* CPU time spent in cycles (for the throughput benchmark) */
    int wal_frames;             /* in the WAL after the last commit */
    struct tr_clock_conv clock; /* record stamps -> ns since the start */
    int64_t rec_t;              /* the time of the record being handled */
    int in_txn;                 /* a transaction is open (steps drain into it) */
    int64_t txn_records;        /* records it holds */
    int64_t max_seq;            /* the newest record's seq */
    int ckpt_frames;            /* checkpoint when the WAL holds this many frames */
    struct {                    /* the flight recorder (DEVTRACE_MAX_MB) */
        int64_t events, rows;   /* dropped so far: events (as the events view counts them), rows of every table */
        int64_t first, last;    /* seqs of the first and last event dropped; 0: none */
        int64_t horizon;        /* the last pass dropped only events before this seq */
        int64_t passes;         /* passes that dropped something */
        int64_t retry_at;       /* live bytes before the next check (the last one could not get under the low mark) */
        int64_t commits;        /* commits since the start (a check every PRUNE_EVERY) */
        uint64_t ns;            /* writer CPU time spent pruning */
        int64_t kept_seq;       /* temp.prune_keep is the kept set as of this max_seq (-1: not made) */
        int active, npass;      /* a check is under way: passes made */
        int empty;              /* passes in a row of this check that dropped nothing */
        int off;                /* out of memory for the live set: no more pruning (meta prune_stopped) */
        int64_t max_tensor, max_op; /* the largest tensor and op ids seen */
        struct prune_mark {         /* every PRUNE_MARK records: the largest ids seen by then */
            int64_t seq, max_tensor, max_op;
        } * marks;
        int nmarks, capmarks;
    } prune;
    struct tr_map2 alive; /* under a cap: the live tensors (v 1; -1 a freed one's slot, kept for the probe chain) */
    size_t alive_n;       /* of them live */
};
extern TR_HIDDEN struct tr_writer tr_w;

/* ---------------------------------------------------------------- interning (writer_intern.c) */

TR_HIDDEN int64_t tr_intern(const char *s, size_t len);
TR_HIDDEN int64_t tr_intern_stack(const uint64_t *ips, int n);
TR_HIDDEN int64_t tr_intern_pycode(uint64_t code, int64_t first_line, const char *file, size_t flen, const char *name,
                                   size_t nlen, int define);
TR_HIDDEN int64_t tr_intern_pystack(const uint64_t *pairs, int n);
TR_HIDDEN int64_t tr_intern_dims(const uint64_t *d, int n);
TR_HIDDEN int64_t tr_intern_strides(const uint64_t *shape, const uint64_t *strides, int n);
TR_HIDDEN int tr_tensor_add(const int64_t *held);

/* ---------------------------------------------------------------- meta (writer_meta.c) */

TR_HIDDEN int tr_meta_textn(const char *key, const char *value, size_t len);
TR_HIDDEN int tr_meta_text(const char *key, const char *value);
TR_HIDDEN int tr_meta_int(const char *key, int64_t value);
TR_HIDDEN int64_t tr_unix_ns(void); /* CLOCK_REALTIME, ns */
TR_HIDDEN int tr_meta_start(void);  /* the rows written when the trace is made */

/* ---------------------------------------------------------------- records (writer_records.c) */

/* Its thread's threads.id (the row written on first sight). */
TR_HIDDEN int64_t tr_thread_of(struct tr_ring *r);
/* One record of ring r into its rows; 0, or -1 when the trace failed. */
TR_HIDDEN int tr_record_handle(struct tr_ring *r, const struct tr_rec *h);

/* ---------------------------------------------------------------- flight recorder (writer_prune.c) */

/* The live tensors, kept only under a cap: a creation, a free. */
TR_HIDDEN void tr_alive_add(int64_t id);
TR_HIDDEN void tr_alive_del(int64_t id);
TR_HIDDEN void tr_prune_note(int64_t seq); /* after each record: the marks of the largest ids */
/* Checks of the trace's size, and passes when it is over the cap's mark:
 * after a commit; at the end, before the indexes. 0, or -1 (failed). */
TR_HIDDEN int tr_prune_after_commit(void);
TR_HIDDEN int tr_prune_at_exit(void);

/* ---------------------------------------------------------------- the thread (writer.c) */

TR_HIDDEN int tr_writer_cycle(void); /* a last step, the held rows and counters, committed; timed */

#endif /* DEVTRACE_WRITER_IMPL_H */
