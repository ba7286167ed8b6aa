/* The writer: one thread that drains every ring into the SQLite trace (WAL,
 * prepared multi-row inserts, a commit every cycle, at least every 50 ms,
 * checkpoints of its own), interns strings, shapes, stacks
 * (native and Python, as tries) and the repeating attributes of tensors,
 * keeps the module, thread and device tables, and at the end builds the
 * indexes.
 * Any SQLite failure (disk full, unwritable file) turns tracing off with one
 * warning; what was committed stays readable. Only this thread touches the
 * database, except the exit and fatal paths, which stop it first. */
#include "tr_impl.h"
#include "trace_schema.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern const char tr_schema_kinds[], tr_schema_views[], tr_schema_indexes[];
TR_HIDDEN const char *tr_py_version(void);

#define NULLV      INT64_MIN /* a NULL column in a batch */
#define BATCH      32        /* rows per multi-row INSERT */
#define PEND_OPS   16        /* open ops held per thread */
#define PEND_ROWS  4         /* tensors rows held per open op */
#define DRAIN_MAX  16384     /* records taken from a ring per transaction while the program runs */
#define STEP_MS    5         /* rings drained this often between commits */
#define PRUNE_MARK 4096      /* under a cap: records between two marks of the largest tensor and op ids */

/* Column positions are common/trace_schema.h's TS_<table>_<column>. */

/* The widest row a batch holds (cuda_calls). */
#define BATCH_COLS TS_cuda_calls_NCOLS

/* A tensor's row held back (in a batch, or with its open op) so that its
 * free, when it comes soon, goes into it: its tensor_rows columns (the free
 * ones NULL until then), then the columns of its tensor_attrs row (the id
 * NULL: given when it is written), then its source (derived.src, or NULL). */
enum {
    HELD_ATTRS = TS_tensor_rows_NCOLS,             /* first tensor_attrs column */
    HELD_SRC = HELD_ATTRS + TS_tensor_attrs_NCOLS, /* derived.src */
    HELD_NCOLS
};
#define HELD_ATTR(c) (HELD_ATTRS + TS_tensor_attrs_##c)
#define HELD_NFREE   5 /* free_seq, free_t, free_thread, free_stack, free_pystack: a frees_late row but its tensor */

/* An ops row keeps its first OARGS arguments (the rest: op_args_more), each
 * as OARG_COLS columns: name, tensor, device. */
#define OARGS     2
#define OARG_COLS (TS_ops_arg1_name - TS_ops_arg0_name)

_Static_assert(TS_tensor_attrs_id == 0, "tensor_attrs: the id first, then the attributes hashed as one key");
_Static_assert(TS_tensor_rows_free_pystack == TS_tensor_rows_free_seq + HELD_NFREE - 1 &&
                   TS_frees_late_pystack == TS_frees_late_seq + HELD_NFREE - 1 && TS_frees_late_NCOLS == 1 + HELD_NFREE,
               "a held row's free columns and a frees_late row's match, in order");
_Static_assert(TS_ops_arg1_name == TS_ops_arg0_name + OARG_COLS && TS_ops_arg0_tensor == TS_ops_arg0_name + 1 &&
                   TS_ops_arg0_device == TS_ops_arg0_name + 2 && TS_ops_out0 == TS_ops_arg0_name + OARGS * OARG_COLS,
               "ops: the arguments kept in the row are name, tensor, device each, then out0");
_Static_assert((int)TS_frames_id == (int)TS_py_frames_id && (int)TS_frames_parent == (int)TS_py_frames_parent &&
                   (int)TS_frames_ip == (int)TS_py_frames_code && (int)TS_frames_NCOLS == (int)TS_py_frames_line,
               "frames and py_frames rows are built alike (trie_node)");
_Static_assert(TS_strings_NCOLS == 2 && TS_py_code_NCOLS == 4 && TS_errors_NCOLS == 12 && TS_threads_NCOLS == 5 &&
                   TS_devices_NCOLS == 3 && TS_meta_NCOLS == 2 && TS_throw_sites_NCOLS == 3,
               "the statements prepared in writer_open name every column");

/* ---------------------------------------------------------------- hash map */

/* Open addressing from a (k1, k2) key to a nonzero id. */
struct map2 {
    uint64_t *k1, *k2;
    int64_t *v;
    size_t cap, n;
};

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

static int map2_grow(struct map2 *m) {
    size_t cap = m->cap ? 2 * m->cap : 4096;
    uint64_t *k1 = calloc(cap, 8), *k2 = calloc(cap, 8);
    int64_t *v = calloc(cap, 8);
    if (!k1 || !k2 || !v) {
        free(k1), free(k2), free(v);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->v[i]) continue;
        size_t j = mix(m->k1[i], m->k2[i]) & (cap - 1);
        while (v[j]) j = (j + 1) & (cap - 1);
        k1[j] = m->k1[i], k2[j] = m->k2[i], v[j] = m->v[i];
    }
    free(m->k1), free(m->k2), free(m->v);
    m->k1 = k1, m->k2 = k2, m->v = v, m->cap = cap;
    return 0;
}

/* The slot of (k1, k2), or of the empty slot where it belongs; verify (if
 * given) confirms a key match (strings compare their text). */
static size_t map2_slot(const struct map2 *m, uint64_t k1, uint64_t k2, int (*verify)(int64_t, const void *),
                        const void *ctx) {
    size_t j = mix(k1, k2) & (m->cap - 1);
    while (m->v[j] && !(m->k1[j] == k1 && m->k2[j] == k2 && (!verify || verify(m->v[j], ctx))))
        j = (j + 1) & (m->cap - 1);
    return j;
}

static void map2_free(struct map2 *m) {
    free(m->k1), free(m->k2), free(m->v);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- batches */

/* Rows of integers (or NULLV) inserted BATCH at a time. The multi-row
 * statement keeps its bindings between steps: only the values that changed
 * are bound again (most NULL columns stay NULL row after row). */
struct batch {
    sqlite3_stmt *multi, *single;
    int ncols, n;
    int bound_ok; /* `bound` holds what multi is bound to */
    int64_t vals[BATCH * BATCH_COLS];
    int64_t bound[BATCH * BATCH_COLS];
};

/* ---------------------------------------------------------------- open ops */

/* An op that began on a thread and has not ended: its ops row and the rows
 * of tensors it created, held back so that its end fills in the row's len,
 * dur and status, each output's out_pos and out0: one row per op instead of
 * two events, and no output row for an output the op created or an in-place
 * op's. Written at the op's end or at the next commit, whichever comes first
 * (then its end, when it comes, is a misc_events row and its outputs
 * op_outputs_more rows). */
struct pend {
    int64_t row[TS_ops_NCOLS];
    int flushed; /* row written already */
    int nrows;
    int64_t trows[PEND_ROWS][HELD_NCOLS]; /* held tensor rows */
};

struct rctx { /* per recording thread, by threads.id */
    int depth;
    struct pend st[PEND_OPS];
};

/* ---------------------------------------------------------------- writer state */

static struct {
    sqlite3 *db;
    char path[4096];
    int failed; /* an SQLite call failed: nothing more is written */
    struct batch misc, frees_late, tensors, derived, attrs, args, outs, names, transfers, ops, frames, pyframes, cuda,
        cuda_act, facts;
    sqlite3_stmt *ins_string, *ins_pycode, *ins_error, *ins_thread, *upd_thread, *ins_device, *ins_module, *upd_module,
        *ins_meta, *ins_site;
    struct map2 strings, stacks, pystacks, pycode;
    struct map2 stack_cache, dims_cache; /* whole stack / whole shape (128-bit key) -> id */
    struct map2 attrs_cache;             /* a tensor's attributes (128-bit key) -> tensor_attrs.id */
    char **texts;                        /* interned strings by id - 1 */
    int64_t ntexts, captexts;
    int64_t nframes, npyframes, npycode, nthreads, nattrs;
    struct rctx **rctx; /* by threads.id; [0] unused */
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
    struct map2 alive; /* under a cap: the live tensors (v 1; -1 a freed one's slot, kept for the probe chain) */
    size_t alive_n;    /* of them live */
} W;

static void sql_fail(const char *what) {
    if (W.failed) return;
    W.failed = 1;
    int err = W.db ? sqlite3_system_errno(W.db) : 0; /* EFBIG (ulimit -f), ENOSPC... say which */
    tr_fail("cannot write trace %s (%s: %s%s%s)", W.path, what, W.db ? sqlite3_errmsg(W.db) : "no database",
            err ? ": " : "", err ? strerror(err) : "");
}

#define SQL_CHECK(call, what)                                                                                          \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != SQLITE_OK && rc_ != SQLITE_DONE && rc_ != SQLITE_ROW) {                                             \
            sql_fail(what);                                                                                            \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static int exec(const char *sql) {
    if (W.failed) return -1;
    char *err = NULL;
    if (sqlite3_exec(W.db, sql, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        sql_fail(sql);
        return -1;
    }
    return 0;
}

static sqlite3_stmt *prep(const char *sql) {
    sqlite3_stmt *st = NULL;
    if (!W.failed && sqlite3_prepare_v3(W.db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        sql_fail(sql);
        return NULL;
    }
    return st;
}

/* Rows of ts_tables[table], batched. */
static int batch_init(struct batch *b, enum ts_table_id table, int ncols) {
    char sql[8192], row[128];
    if (ncols != ts_tables[table].ncols || ncols > BATCH_COLS) {
        sql_fail("batch layout");
        return -1;
    }
    int n = snprintf(row, sizeof row, "(");
    for (int c = 0; c < ncols; c++) n += snprintf(row + n, sizeof row - (size_t)n, c ? ",?" : "?");
    snprintf(row + n, sizeof row - (size_t)n, ")");
    /* OR IGNORE: a producer that breaks the contract and reuses an id must
     * not cost the whole trace; the first row stays */
    int k = snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s VALUES %s", ts_tables[table].name, row);
    b->single = prep(sql);
    for (int r = 1; r < BATCH; r++) k += snprintf(sql + k, sizeof sql - (size_t)k, ",%s", row);
    b->multi = prep(sql);
    b->ncols = ncols;
    b->n = 0;
    b->bound_ok = 0;
    return b->single && b->multi ? 0 : -1;
}

/* An integer, or SQL NULL for NULLV. */
static int bind_int(sqlite3_stmt *st, int i, int64_t v) {
    return v == NULLV ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

static int bind_row(sqlite3_stmt *st, int first, const int64_t *v, int ncols) {
    for (int c = 0; c < ncols; c++) {
        int rc = bind_int(st, first + c, v[c]);
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

static int batch_flush(struct batch *b) {
    if (W.failed || b->n == 0) return W.failed ? -1 : 0;
    if (b->n == BATCH) {
        int n = BATCH * b->ncols;
        for (int i = 0; i < n; i++) {
            int64_t v = b->vals[i];
            if (b->bound_ok && v == b->bound[i]) continue;
            int rc = bind_int(b->multi, 1 + i, v);
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

static int batch_add(struct batch *b, const int64_t *row) {
    memcpy(b->vals + b->n * b->ncols, row, sizeof(int64_t) * (size_t)b->ncols);
    if (++b->n == BATCH) return batch_flush(b);
    return 0;
}

/* ---------------------------------------------------------------- interning */

struct strkey {
    const char *s;
    size_t len;
};
static int str_equal(int64_t id, const void *ctx) {
    const struct strkey *k = ctx;
    const char *t = W.texts[id - 1];
    return strlen(t) == k->len && memcmp(t, k->s, k->len) == 0;
}

/* Out of memory where going on would write an id of a row never written:
 * tracing stops (the viewer refuses a trace whose references dangle). */
static int64_t out_of_memory(void) {
    sql_fail("out of memory");
    return 0;
}

/* The id of a string (inserted on first sight); 0 on failure (then
 * nothing more is committed). */
static int64_t intern(const char *s, size_t len) {
    if (W.failed) return 0;
    if (W.strings.n * 2 >= W.strings.cap && map2_grow(&W.strings) < 0) return out_of_memory();
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    struct strkey key = {s, len};
    size_t j = map2_slot(&W.strings, h, len, str_equal, &key);
    if (W.strings.v[j]) return W.strings.v[j];
    if (W.ntexts == W.captexts) {
        int64_t cap = W.captexts ? 2 * W.captexts : 1024;
        char **t = realloc(W.texts, sizeof *t * (size_t)cap);
        if (!t) return out_of_memory();
        W.texts = t, W.captexts = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return out_of_memory();
    memcpy(copy, s, len);
    copy[len] = '\0';
    int64_t id = ++W.ntexts;
    W.texts[id - 1] = copy;
    W.strings.k1[j] = h, W.strings.k2[j] = len, W.strings.v[j] = id;
    W.strings.n++;
    sqlite3_bind_int64(W.ins_string, 1 + TS_strings_id, id);
    sqlite3_bind_text(W.ins_string, 1 + TS_strings_text, copy, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(W.ins_string);
    sqlite3_reset(W.ins_string);
    if (rc != SQLITE_DONE) {
        sql_fail("insert string");
        return 0;
    }
    return id;
}

/* A node of a trie (frames or py_frames): the id of (parent, key). */
static int64_t trie_node(struct map2 *m, struct batch *b, int64_t *count, int64_t parent, uint64_t key, int64_t line,
                         int py) {
    if (m->n * 2 >= m->cap && map2_grow(m) < 0) return 0;
    uint64_t k2 = py ? key << 24 ^ (uint64_t)line : key;
    size_t j = map2_slot(m, (uint64_t)parent, k2, NULL, NULL);
    if (m->v[j]) return m->v[j];
    int64_t id = ++*count;
    m->k1[j] = (uint64_t)parent, m->k2[j] = k2, m->v[j] = id;
    m->n++;
    int64_t row[TS_py_frames_NCOLS] = {[TS_py_frames_id] = id,
                                       [TS_py_frames_parent] = parent ? parent : NULLV,
                                       [TS_py_frames_code] = (int64_t)key,
                                       [TS_py_frames_line] = line}; /* frames takes the first 3 */
    if (batch_add(b, row) < 0) return 0;
    return id;
}

/* Two independent 64-bit hashes of n words: together a 128-bit key, whose
 * collisions are too rare to matter, so a cache hit needs no verification.
 * Each hash runs two lanes (even and odd words) so that the multiply chains
 * overlap: a 20-frame stack is hashed on every event. */
static void hash128(const uint64_t *w, int n, uint64_t *h1, uint64_t *h2) {
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
    *h1 = mix(a, c) | 1; /* nonzero */
    *h2 = mix(b, d);
}

/* id cached under a 128-bit key, or 0 (*slot is (size_t)-1 when the cache
 * cannot grow: the caller works uncached). */
static int64_t cache_get(struct map2 *m, uint64_t h1, uint64_t h2, size_t *slot) {
    *slot = (size_t)-1;
    if (m->n * 2 >= m->cap && map2_grow(m) < 0) return 0;
    *slot = map2_slot(m, h1, h2, NULL, NULL);
    return m->v[*slot];
}

static void cache_put(struct map2 *m, size_t slot, uint64_t h1, uint64_t h2, int64_t id) {
    if (slot == (size_t)-1 || id <= 0) return;
    m->k1[slot] = h1, m->k2[slot] = h2, m->v[slot] = id;
    m->n++;
}

/* A native stack (innermost first) as the id of its innermost trie node. */
static int64_t intern_stack(const uint64_t *ips, int n) {
    if (n == 0) return NULLV;
    uint64_t h1, h2;
    size_t slot;
    hash128(ips, n, &h1, &h2);
    int64_t id = cache_get(&W.stack_cache, h1, h2, &slot);
    if (id) return id;
    int64_t parent = 0;
    for (int i = n - 1; i >= 0; i--) parent = trie_node(&W.stacks, &W.frames, &W.nframes, parent, ips[i], 0, 0);
    cache_put(&W.stack_cache, slot, h1, h2, parent);
    return parent ? parent : NULLV;
}

/* The py_code id of a code object address (unknown ones get a "?" row). */
static int64_t pycode_id(uint64_t code, int64_t first_line, const char *file, size_t flen, const char *name,
                         size_t nlen, int define) {
    if (W.pycode.n * 2 >= W.pycode.cap && map2_grow(&W.pycode) < 0) return out_of_memory();
    size_t j = map2_slot(&W.pycode, code, 0, NULL, NULL);
    if (W.pycode.v[j] && !define) return W.pycode.v[j];
    int64_t id = W.pycode.v[j] ? W.pycode.v[j] : ++W.npycode;
    if (!W.pycode.v[j]) {
        W.pycode.k1[j] = code, W.pycode.k2[j] = 0, W.pycode.v[j] = id;
        W.pycode.n++;
    }
    sqlite3_bind_int64(W.ins_pycode, 1 + TS_py_code_id, id);
    sqlite3_bind_int64(W.ins_pycode, 1 + TS_py_code_file, intern(file, flen));
    sqlite3_bind_int64(W.ins_pycode, 1 + TS_py_code_name, intern(name, nlen));
    sqlite3_bind_int64(W.ins_pycode, 1 + TS_py_code_first_line, first_line);
    int rc = sqlite3_step(W.ins_pycode);
    sqlite3_reset(W.ins_pycode);
    if (rc != SQLITE_DONE) sql_fail("insert py_code");
    return id;
}

static int64_t intern_pystack(const uint64_t *pairs, int n) {
    int64_t parent = 0;
    for (int i = n - 1; i >= 0; i--) {
        int64_t code = pycode_id(pairs[2 * i], 0, "?", 1, "?", 1, 0);
        parent =
            trie_node(&W.pystacks, &W.pyframes, &W.npyframes, parent, (uint64_t)code, (int64_t)pairs[2 * i + 1], 1);
    }
    return parent ? parent : NULLV;
}

/* "[64,10]" for a shape of n dims (cached: most shapes repeat). */
static int64_t intern_dims(const uint64_t *d, int n) {
    uint64_t h1, h2;
    size_t slot;
    hash128(d, n, &h1, &h2);
    int64_t id = cache_get(&W.dims_cache, h1, h2, &slot);
    if (id) return id;
    char buf[256];
    int k = snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < n && k < (int)sizeof buf - 24; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? "," : "", (long long)(int64_t)d[i]);
    k += snprintf(buf + k, sizeof buf - (size_t)k, "]");
    id = intern(buf, (size_t)k);
    cache_put(&W.dims_cache, slot, h1, h2, id);
    return id;
}

/* Strides, or NULL when they are the contiguous strides of the shape. */
static int64_t intern_strides(const uint64_t *shape, const uint64_t *strides, int n) {
    int64_t expect = 1;
    for (int i = n - 1; i >= 0; i--) {
        if ((int64_t)strides[i] != expect) return intern_dims(strides, n);
        expect *= (int64_t)shape[i];
    }
    return NULLV;
}

/* A held row into tensor_rows: the columns that repeat from tensor to
 * tensor (its attributes: dtype to name, all but the event, the storage,
 * the source, the op and the free) are one tensor_attrs row, written on
 * first sight. A training loop makes the same few kinds of tensor over and
 * over: 14 columns a row instead of 25 (SQLite's cost grows with each).
 * The source of a view, copy or transfer (a sixth of mlp_train's tensors)
 * is a row of the narrow table `derived`: its index on src, built at the
 * end, scans that table instead of every tensor's row (0.3 ms against 1.2
 * at mlp_train's exit). */
static int tensor_add(const int64_t *held) {
    const int64_t *a = held + HELD_ATTRS; /* its id column unused: the rest is the key */
    uint64_t h1, h2;
    size_t slot;
    hash128((const uint64_t *)a + 1, TS_tensor_attrs_NCOLS - 1, &h1, &h2);
    int64_t id = cache_get(&W.attrs_cache, h1, h2, &slot);
    if (!id) {
        int64_t arow[TS_tensor_attrs_NCOLS];
        memcpy(arow, a, sizeof arow);
        arow[TS_tensor_attrs_id] = id = ++W.nattrs;
        if (batch_add(&W.attrs, arow) < 0) return -1;
        cache_put(&W.attrs_cache, slot, h1, h2, id);
    }
    int64_t row[TS_tensor_rows_NCOLS];
    memcpy(row, held, sizeof row);
    row[TS_tensor_rows_attrs] = id;
    if (held[HELD_SRC] != NULLV &&
        batch_add(&W.derived,
                  (const int64_t[TS_derived_NCOLS]){
                      [TS_derived_tensor] = held[TS_tensor_rows_id], [TS_derived_src] = held[HELD_SRC]}) < 0)
        return -1;
    return batch_add(&W.tensors, row);
}

/* ---------------------------------------------------------------- metadata */

/* Binds the key, steps and resets W.ins_meta (value already bound). */
static int meta_step(const char *key) {
    sqlite3_bind_text(W.ins_meta, 1 + TS_meta_key, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(W.ins_meta);
    sqlite3_reset(W.ins_meta);
    if (rc != SQLITE_DONE) sql_fail("meta");
    return rc == SQLITE_DONE ? 0 : -1;
}

static int meta_textn(const char *key, const char *value, size_t len) {
    if (W.failed) return -1;
    sqlite3_bind_text(W.ins_meta, 1 + TS_meta_value, value, (int)len, SQLITE_TRANSIENT);
    return meta_step(key);
}

static int meta_text(const char *key, const char *value) { return meta_textn(key, value, strlen(value)); }

static int meta_int(const char *key, int64_t value) {
    if (W.failed) return -1;
    sqlite3_bind_int64(W.ins_meta, 1 + TS_meta_value, value);
    return meta_step(key);
}

static int64_t unix_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* argv as a JSON array, from /proc/self/cmdline. */
static void argv_json(char *out, size_t size) {
    char buf[16384];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    size_t k = 0;
    out[k++] = '[';
    for (ssize_t i = 0, first = 1; i < n && k + 8 < size; first = 0) {
        if (!first) out[k++] = ',';
        out[k++] = '"';
        for (; i < n && buf[i] && k + 8 < size; i++) {
            unsigned char c = (unsigned char)buf[i];
            if (c == '"' || c == '\\')
                out[k++] = '\\', out[k++] = (char)c;
            else if (c < 0x20)
                k += (size_t)snprintf(out + k, size - k, "\\u%04x", c);
            else
                out[k++] = (char)c;
        }
        out[k++] = '"';
        i++;
    }
    out[k++] = ']';
    out[k] = '\0';
}

static int write_start_meta(void) {
    char buf[16384];
    meta_int("schema_version", TS_SCHEMA_VERSION);
    meta_text("devtrace_version", TR_VERSION);
    meta_int("probe_abi", DTP_ABI_VERSION);
    meta_int("pid", getpid());
    meta_int("ppid", getppid());
    gethostname(buf, 256);
    buf[255] = '\0';
    meta_text("host", buf);
    const char *rank = tr_rank();
    if (rank) meta_text("rank", rank);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    meta_text("program", buf);
    if (getcwd(buf, sizeof buf)) meta_text("cwd", buf);
    const char *sim =
        getenv("DEVTRACE_SIM_CUDA"); /* the simulated GPUs asked for: `devtrace fix --verify` asks again */
    if (sim && sim[0]) meta_text("sim_cuda", sim);
    argv_json(buf, sizeof buf);
    meta_text("argv", buf);
    meta_int("start_time_ns", unix_ns());
    meta_text("clock", g_tr.tsc ? "tsc" : "monotonic");
    meta_int("stack_depth", g_tr.cfg.depth);
    meta_int("ring_bytes", (int64_t)g_tr.cfg.ring_bytes);
    meta_int("max_mb", g_tr.cfg.max_mb);
    meta_int("complete", 0);
    return W.failed ? -1 : 0;
}

/* ---------------------------------------------------------------- records */

struct strs {
    const char *p[TR_MAX_STRS];
    size_t len[TR_MAX_STRS];
};

static int64_t S(const struct strs *s, int i, int n) { return i < n ? intern(s->p[i], s->len[i]) : NULLV; }

static int64_t thread_of(struct tr_ring *r) {
    if (r->writer_id) return r->writer_id;
    r->writer_id = ++W.nthreads;
    sqlite3_bind_int64(W.ins_thread, 1 + TS_threads_id, r->writer_id);
    sqlite3_bind_int64(W.ins_thread, 1 + TS_threads_tid, r->tid);
    sqlite3_bind_text(W.ins_thread, 1 + TS_threads_name, r->name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(W.ins_thread);
    sqlite3_reset(W.ins_thread);
    if (rc != SQLITE_DONE) sql_fail("insert thread");
    return r->writer_id;
}

/* The open-op state of a recording thread (NULL when out of memory: then
 * every row is written at once). */
static struct rctx *rctx_of(int64_t thread) {
    if (thread >= W.caprctx) {
        int64_t cap = W.caprctx ? 2 * W.caprctx : 16;
        while (cap <= thread) cap *= 2;
        struct rctx **n = realloc(W.rctx, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        memset(n + W.caprctx, 0, sizeof *n * (size_t)(cap - W.caprctx));
        W.rctx = n, W.caprctx = cap;
    }
    if (!W.rctx[thread]) W.rctx[thread] = calloc(1, sizeof **W.rctx);
    return W.rctx[thread];
}

/* Writes what an open op holds: its row (once) and its tensors rows. */
static int pend_flush(struct pend *p) {
    if (!p->flushed && batch_add(&W.ops, p->row) < 0) return -1;
    p->flushed = 1;
    for (int i = 0; i < p->nrows; i++)
        if (tensor_add(p->trows[i]) < 0) return -1;
    p->nrows = 0;
    return 0;
}

/* The open op `op` on this thread, or NULL. */
static struct pend *pend_find(struct rctx *c, int64_t op, int *index) {
    for (int i = c ? c->depth - 1 : -1; i >= 0; i--)
        if (c->st[i].row[TS_ops_op] == op) {
            if (index) *index = i;
            return &c->st[i];
        }
    return NULL;
}

/* Before a commit: every open op is written as far as it is known. */
static int pend_flush_all(void) {
    for (int64_t i = 1; i < W.caprctx; i++)
        for (int j = 0; W.rctx[i] && j < W.rctx[i]->depth; j++)
            if (pend_flush(&W.rctx[i]->st[j]) < 0) return -1;
    return 0;
}

static int misc_row(const struct tr_rec *h, int64_t thread, int64_t tensor, int64_t op, int64_t stack, int64_t pystack,
                    int64_t value) {
    int64_t ev[TS_misc_events_NCOLS] = {
        [TS_misc_events_seq] = (int64_t)h->seq, [TS_misc_events_t] = W.rec_t,       [TS_misc_events_thread] = thread,
        [TS_misc_events_kind] = h->kind,        [TS_misc_events_tensor] = tensor,   [TS_misc_events_op] = op,
        [TS_misc_events_stack] = stack,         [TS_misc_events_pystack] = pystack, [TS_misc_events_value] = value};
    return batch_add(&W.misc, ev);
}

static int op_end(const struct tr_rec *h, int64_t thread, const uint64_t *I, int ni) {
    struct rctx *c = rctx_of(thread);
    int64_t op = (int64_t)I[0], status = ni > 1 ? (int64_t)I[1] : NULLV;
    int nout = ni > 2 ? (int)I[2] : 0, at = 0;
    struct pend *p = pend_find(c, op, &at);
    if (p) {
        while (c->depth - 1 > at) /* inner ops whose end never came: written as they are */
            if (pend_flush(&c->st[--c->depth]) < 0) return -1;
        if (!p->flushed) {
            p->row[TS_ops_len] = (int64_t)h->seq - p->row[TS_ops_seq];
            p->row[TS_ops_dur] = W.rec_t - p->row[TS_ops_t];
            p->row[TS_ops_status] = status;
        }
    }
    if ((!p || p->flushed) && misc_row(h, thread, NULLV, op, NULLV, NULLV, status) < 0) return -1;
    for (int o = 0; o < nout && 3 + o < ni; o++) {
        int held = 0;
        for (int k = 0; p && k < p->nrows && !held; k++)
            if (p->trows[k][TS_tensor_rows_id] == (int64_t)I[3 + o] && p->trows[k][HELD_ATTR(out_pos)] == NULLV)
                p->trows[k][HELD_ATTR(out_pos)] = o, held = 1;
        int64_t row[TS_op_outputs_more_NCOLS] = {[TS_op_outputs_more_op] = op,
                                                 [TS_op_outputs_more_pos] = o,
                                                 [TS_op_outputs_more_tensor] = (int64_t)I[3 + o]};
        if (!held && o == 0 && p && !p->flushed) /* an in-place op's: in its row */
            p->row[TS_ops_out0] = row[TS_op_outputs_more_tensor];
        else if (!held && batch_add(&W.outs, row) < 0)
            return -1;
    }
    if (p) {
        if (pend_flush(p) < 0) return -1;
        c->depth = at;
    }
    return 0;
}

/* One errors row: NULLV and NULL are SQL NULLs. */
struct err_row {
    int64_t seq, kind, op, signal, first, other, object;
    const char *msg; /* msglen bytes */
    int msglen;
    const char *exc, *a, *b, *arg; /* NUL-terminated */
};

static void error_row(const struct err_row *e) {
    sqlite3_stmt *st = W.ins_error;
    static const int icol[] = {TS_errors_seq,       TS_errors_kind,      TS_errors_op,    TS_errors_signal,
                               TS_errors_first_arg, TS_errors_other_arg, TS_errors_object};
    const int64_t ints[] = {e->seq, e->kind, e->op, e->signal, e->first, e->other, e->object};
    for (int c = 0; c < 7; c++) bind_int(st, 1 + icol[c], ints[c]);
    static const int tcol[] = {TS_errors_exception, TS_errors_device_a, TS_errors_device_b, TS_errors_arg};
    const char *texts[] = {e->exc, e->a, e->b, e->arg};
    for (int c = 0; c < 4; c++)
        if (texts[c])
            sqlite3_bind_text(st, 1 + tcol[c], texts[c], -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, 1 + tcol[c]);
    if (e->msg)
        sqlite3_bind_text(st, 1 + TS_errors_message, e->msg, e->msglen, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 1 + TS_errors_message);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) sql_fail("insert error");
}

/* A C++ throw: an errors row with the demangled type and the message, parsed
 * for a device mismatch, and a misc_events row for its stacks. */
static int throw_row(const struct tr_rec *h, int64_t seq, int64_t thread, int64_t stack, int64_t pystack,
                     const struct strs *s, int ns) {
    const uint64_t *I = (const uint64_t *)(h + 1);
    char type[512];
    size_t tl = ns > 0 ? s->len[0] : 0;
    if (tl >= sizeof type) tl = sizeof type - 1;
    memcpy(type, ns > 0 ? s->p[0] : "", tl);
    type[tl] = 0;
    static _Atomic(void *) demangle_slot;
    char *(*demangle)(const char *, char *, size_t *, int *);
    *(void **)&demangle = tr_sym_once(&demangle_slot, tr_cxx_libs, "__cxa_demangle", 0);
    int status = -1;
    char *pretty = demangle && tl ? demangle(type, NULL, NULL, &status) : NULL;
    struct tr_mismatch m;
    int is_mm = ns > 1 && tr_parse_mismatch(s->p[1], s->len[1], &m);
    struct err_row e = {.seq = seq,
                        .kind = NULLV,
                        .op = NULLV,
                        .signal = NULLV,
                        .first = NULLV,
                        .other = NULLV,
                        .object = h->nint > 2 && I[2] ? (int64_t)I[2] : NULLV,
                        .msg = ns > 1 && s->len[1] ? s->p[1] : NULL,
                        .msglen = ns > 1 ? (int)s->len[1] : 0,
                        .exc = pretty && status == 0 ? pretty : type,
                        .a = is_mm ? m.a : NULL,
                        .b = is_mm ? m.b : NULL,
                        .arg = is_mm && m.arg[0] ? m.arg : NULL};
    error_row(&e);
    free(pretty);
    return misc_row(h, thread, NULLV, NULLV, stack, pystack, h->nint > 0 ? (int64_t)I[0] : 0);
}

/* The free columns of tensor id's row while the row is still held (in the
 * unwritten batch, or with an open op of the thread) and has no free in it
 * yet; NULL otherwise. A tensor's free usually follows its creation
 * closely, so the batch is searched newest first. */
static int64_t *held_free(int64_t thread, int64_t id) {
    const int f = TS_tensor_rows_free_seq;
    for (int r = W.tensors.n - 1; r >= 0; r--) {
        int64_t *row = W.tensors.vals + r * TS_tensor_rows_NCOLS;
        if (row[TS_tensor_rows_id] == id) return row[f] == NULLV ? row + f : NULL;
    }
    struct rctx *c = thread > 0 && thread < W.caprctx ? W.rctx[thread] : NULL;
    for (int d = 0; c && d < c->depth && d < PEND_OPS; d++)
        for (int k = 0; k < c->st[d].nrows; k++) {
            int64_t *row = c->st[d].trows[k];
            if (row[TS_tensor_rows_id] == id) return row[f] == NULLV ? row + f : NULL;
        }
    return NULL;
}

/* ---------------------------------------------------------------- live tensors (flight recorder) */

/* The live set is kept only under a cap (the pruning's seeds). A free
 * leaves its slot marked -1 so that probing past it still finds the ids
 * after it; slots are taken back when the table is rebuilt. Out of memory:
 * pruning stops (said in meta), tracing goes on. */
static void prune_stop(const char *why) {
    if (W.prune.off) return;
    W.prune.off = 1;
    meta_text("prune_stopped", why);
}

static int alive_rebuild(size_t cap) {
    struct map2 n = {0};
    n.cap = cap;
    n.k1 = calloc(cap, 8), n.k2 = calloc(cap, 8), n.v = calloc(cap, 8);
    if (!n.k1 || !n.k2 || !n.v) {
        map2_free(&n);
        return -1;
    }
    for (size_t i = 0; i < W.alive.cap; i++) {
        if (W.alive.v[i] != 1) continue;
        size_t j = mix(W.alive.k1[i], 0) & (cap - 1);
        while (n.v[j]) j = (j + 1) & (cap - 1);
        n.k1[j] = W.alive.k1[i], n.v[j] = 1, n.n++;
    }
    map2_free(&W.alive);
    W.alive = n;
    return 0;
}

static void alive_add(int64_t id) {
    if (!g_tr.cfg.max_mb || W.prune.off) return;
    if (W.alive.n * 2 >= W.alive.cap) { /* full of live ones and freed slots: twice the room if half are live */
        size_t cap = W.alive.cap ? W.alive.cap : 4096;
        if (W.alive_n * 4 >= cap) cap *= 2;
        if (alive_rebuild(cap) < 0) return prune_stop("out of memory for the live tensors");
    }
    size_t j = map2_slot(&W.alive, (uint64_t)id, 0, NULL, NULL);
    if (W.alive.v[j] == 1) return;
    if (!W.alive.v[j]) W.alive.n++;
    W.alive.k1[j] = (uint64_t)id, W.alive.k2[j] = 0, W.alive.v[j] = 1;
    W.alive_n++;
}

static void alive_del(int64_t id) {
    if (!W.alive.cap) return;
    size_t j = map2_slot(&W.alive, (uint64_t)id, 0, NULL, NULL);
    if (W.alive.v[j] == 1) W.alive.v[j] = -1, W.alive_n--;
}

/* After each record under a cap: the largest ids, and a mark every PRUNE_MARK records. */
static void prune_note(int64_t seq) {
    if (!g_tr.cfg.max_mb || W.prune.off || W.events_written % PRUNE_MARK) return;
    if (W.prune.nmarks == W.prune.capmarks) {
        int cap = W.prune.capmarks ? 2 * W.prune.capmarks : 256;
        struct prune_mark *m = realloc(W.prune.marks, sizeof *m * (size_t)cap);
        if (!m) return prune_stop("out of memory for the marks");
        W.prune.marks = m, W.prune.capmarks = cap;
    }
    W.prune.marks[W.prune.nmarks++] = (struct prune_mark){seq, W.prune.max_tensor, W.prune.max_op};
}

static int handle(struct tr_ring *r, const struct tr_rec *h) {
    const uint64_t *I = (const uint64_t *)(h + 1), *ips = I + h->nint, *py = ips + h->nips;
    const unsigned char *sp = (const unsigned char *)(py + 2 * h->npy), *end = (const unsigned char *)h + h->size;
    struct strs s;
    int ns = 0;
    for (; ns < h->nstr && ns < TR_MAX_STRS && sp + 2 <= end; ns++) {
        uint16_t len;
        memcpy(&len, sp, 2);
        if (sp + 2 + len > end) break;
        s.p[ns] = (const char *)sp + 2;
        s.len[ns] = len;
        sp += 2 + len;
    }
    int ni = h->nint;
#define INT(i) ((i) < ni ? (int64_t)I[i] : NULLV)
    if (h->kind == TR_EV_PYCODE) { /* bookkeeping only, no event row */
        pycode_id(I[0], INT(1), ns > 0 ? s.p[0] : "?", ns > 0 ? s.len[0] : 1, ns > 1 ? s.p[1] : "?",
                  ns > 1 ? s.len[1] : 1, 1);
        return W.failed ? -1 : 0;
    }
    if (h->kind == TR_EV_SOURCE_FACT) { /* no event row either; the table's key keeps each fact once */
        if (ns < 3 || ni < 1) return 0;
        int64_t x[TS_source_facts_NCOLS] = {[TS_source_facts_file] = S(&s, 0, ns),
                                            [TS_source_facts_line] = INT(0),
                                            [TS_source_facts_key] = S(&s, 1, ns),
                                            [TS_source_facts_value] = S(&s, 2, ns)};
        return batch_add(&W.facts, x) < 0 || W.failed ? -1 : 0;
    }
    if (h->kind < TR_EV_INIT || (h->kind > TR_EV_THROW && h->kind != TR_EV_CUPTI))
        return 0; /* from a newer producer: skipped */
    int64_t seq = (int64_t)h->seq, t = W.rec_t = tr_clock_ns(&W.clock, h->stamp), thread = thread_of(r);
    if (seq > W.max_seq) W.max_seq = seq;
    int64_t stack = intern_stack(ips, h->nips), pystack = intern_pystack(py, h->npy);
    int rc = 0;
    W.events_written++;
    prune_note(seq);
    switch (h->kind) {
    case TR_EV_INIT:
        meta_int("runtime_abi", INT(0));
        if (ns > 0) meta_textn("runtime", s.p[0], s.len[0]);
        if (ns > 1) meta_textn("runtime_version", s.p[1], s.len[1]);
        rc = misc_row(h, thread, NULLV, NULLV, stack, pystack, NULLV);
        break;
    case TR_EV_BACKEND: {
        char name[32];
        int64_t d = INT(0);
        if ((d >> 16) == DTP_DEVICE_CUDA)
            snprintf(name, sizeof name, "cuda:%lld", (long long)(d & 0xffff));
        else if ((d >> 16) == DTP_DEVICE_META)
            snprintf(name, sizeof name, "meta");
        else if ((d >> 16) == DTP_DEVICE_OTHER)
            snprintf(name, sizeof name, "other:%lld", (long long)(d & 0xffff));
        else
            snprintf(name, sizeof name, d == 0 ? "cpu" : "device%lld", (long long)d);
        sqlite3_bind_int64(W.ins_device, 1 + TS_devices_device, d);
        sqlite3_bind_text(W.ins_device, 1 + TS_devices_name, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(W.ins_device, 1 + TS_devices_backend, ns > 0 ? s.p[0] : "?", ns > 0 ? (int)s.len[0] : 1,
                          SQLITE_TRANSIENT);
        int src = sqlite3_step(W.ins_device);
        sqlite3_reset(W.ins_device);
        if (src != SQLITE_DONE) sql_fail("insert device");
        rc = misc_row(h, thread, NULLV, NULLV, stack, pystack, NULLV);
        break;
    }
    case TR_EV_CREATED: {
        int nd = (int)INT(3);
        if (nd < 0 || 10 + 2 * nd > ni) nd = 0;
        int64_t op = INT(9) ? INT(9) : NULLV, dtype = INT(2), origin = INT(7);
        /* a producer's value outside the ABI's enums is written as `other`:
         * the viewer reads these columns as the ABI defines them */
        if (dtype < DTP_DTYPE_F32 || dtype > DTP_DTYPE_OTHER) dtype = DTP_DTYPE_OTHER;
        if (origin < DTP_ORIGIN_FACTORY || origin > DTP_ORIGIN_OTHER) origin = DTP_ORIGIN_OTHER;
        int64_t row[HELD_NCOLS];
        for (int c = 0; c < HELD_NCOLS; c++) row[c] = NULLV;
        row[TS_tensor_rows_id] = INT(0);
        if (g_tr.cfg.max_mb) {
            alive_add(INT(0));
            if (INT(0) > W.prune.max_tensor) W.prune.max_tensor = INT(0);
        }
        row[TS_tensor_rows_seq] = seq;
        row[TS_tensor_rows_t] = t;
        row[TS_tensor_rows_thread] = thread;
        row[TS_tensor_rows_stack] = stack;
        row[TS_tensor_rows_pystack] = pystack;
        row[TS_tensor_rows_storage] = INT(1);
        row[TS_tensor_rows_op] = op;
        row[HELD_ATTR(dtype)] = dtype;
        row[HELD_ATTR(shape)] = intern_dims(I + 10, nd);
        row[HELD_ATTR(strides)] = intern_strides(I + 10, I + 10 + nd, nd);
        row[HELD_ATTR(storage_offset)] = INT(6);
        row[HELD_ATTR(device)] = INT(4);
        row[HELD_ATTR(nbytes)] = INT(5);
        row[HELD_ATTR(origin)] = origin;
        row[HELD_ATTR(what)] = S(&s, 0, ns);
        row[HELD_ATTR(detail)] = ns > 2 && s.len[2] ? S(&s, 2, ns) : NULLV;
        row[HELD_ATTR(name)] = ns > 1 && s.len[1] ? S(&s, 1, ns) : NULLV;
        row[HELD_SRC] = INT(8) ? INT(8) : NULLV;
        struct pend *p = op != NULLV ? pend_find(rctx_of(thread), op, NULL) : NULL;
        if (p && p->nrows < PEND_ROWS)
            memcpy(p->trows[p->nrows++], row, sizeof row);
        else
            rc = tensor_add(row);
        break;
    }
    case TR_EV_TRANSFER: {
        int64_t x[TS_transfers_NCOLS] = {[TS_transfers_seq] = seq,
                                         [TS_transfers_src] = INT(0),
                                         [TS_transfers_dst] = INT(1) ? INT(1) : NULLV,
                                         [TS_transfers_src_device] = INT(2),
                                         [TS_transfers_dst_device] = INT(3),
                                         [TS_transfers_bytes] = INT(4),
                                         [TS_transfers_kind] = INT(5),
                                         [TS_transfers_via] = S(&s, 0, ns)};
        rc = batch_add(&W.transfers, x) < 0 ? -1 : misc_row(h, thread, INT(0), NULLV, stack, pystack, NULLV);
        break;
    }
    case TR_EV_NAMED: {
        int64_t x[TS_names_NCOLS] = {[TS_names_seq] = seq, [TS_names_tensor] = INT(0), [TS_names_name] = S(&s, 0, ns)};
        rc = batch_add(&W.names, x) < 0 ? -1 : misc_row(h, thread, INT(0), NULLV, stack, pystack, NULLV);
        break;
    }
    case TR_EV_FREED: {
        int64_t x[TS_frees_late_NCOLS] = {
            [TS_frees_late_tensor] = INT(0), [TS_frees_late_seq] = seq,     [TS_frees_late_t] = t,
            [TS_frees_late_thread] = thread, [TS_frees_late_stack] = stack, [TS_frees_late_pystack] = pystack};
        alive_del(x[TS_frees_late_tensor]);
        int64_t *fr = held_free(thread, x[TS_frees_late_tensor]);
        if (fr) /* still held: its free goes into its row (one row, not two) */
            memcpy(fr, x + TS_frees_late_seq, HELD_NFREE * sizeof *x);
        else
            rc = batch_add(&W.frees_late, x);
        break;
    }
    case TR_EV_OP_BEGIN: {
        int64_t o[TS_ops_NCOLS];
        for (int c = 0; c < TS_ops_NCOLS; c++) o[c] = NULLV;
        o[TS_ops_op] = INT(0), o[TS_ops_name] = S(&s, 0, ns), o[TS_ops_seq] = seq, o[TS_ops_thread] = thread;
        if (INT(0) > W.prune.max_op) W.prune.max_op = INT(0);
        o[TS_ops_t] = t, o[TS_ops_stack] = stack, o[TS_ops_pystack] = pystack;
        int nargs = (int)INT(1), a = 0;
        for (; a < nargs && 2 + 2 * a + 1 < ni && rc == 0; a++) {
            int64_t row[TS_op_args_more_NCOLS] = {[TS_op_args_more_op] = INT(0),
                                                  [TS_op_args_more_pos] = a,
                                                  [TS_op_args_more_name] = S(&s, 1 + a, ns),
                                                  [TS_op_args_more_tensor] = INT(2 + 2 * a),
                                                  [TS_op_args_more_device] = INT(3 + 2 * a)};
            if (a < OARGS) { /* in the op's own row: 40 k rows fewer on mlp_train */
                o[TS_ops_arg0_name + OARG_COLS * a] = row[TS_op_args_more_name];
                o[TS_ops_arg0_tensor + OARG_COLS * a] = row[TS_op_args_more_tensor];
                o[TS_ops_arg0_device + OARG_COLS * a] = row[TS_op_args_more_device];
            } else {
                rc = batch_add(&W.args, row);
            }
        }
        if (rc < 0) break;
        o[TS_ops_nargs] = a;
        struct rctx *c = rctx_of(thread);
        if (!c || c->depth == PEND_OPS) {
            rc = batch_add(&W.ops, o);
        } else {
            struct pend *p = &c->st[c->depth++];
            memcpy(p->row, o, sizeof o);
            p->flushed = 0, p->nrows = 0;
        }
        break;
    }
    case TR_EV_OP_END: rc = op_end(h, thread, I, ni); break;
    case TR_EV_MISMATCH:
    case TR_EV_ERROR:
    case TR_EV_SIGNAL: {
        int mm = h->kind == TR_EV_MISMATCH, sig = h->kind == TR_EV_SIGNAL;
        struct err_row e = {.seq = seq,
                            .kind = sig  ? NULLV
                                    : mm ? DTP_ERROR_DEVICE
                                         : INT(0),
                            .op = sig ? NULLV : S(&s, 0, ns),
                            .signal = sig ? INT(0) : NULLV,
                            .first = mm ? INT(1) : NULLV,
                            .other = mm ? INT(2) : NULLV,
                            .object = NULLV,
                            .msg = !sig && ns > 1 ? s.p[1] : NULL,
                            .msglen = ns > 1 ? (int)s.len[1] : 0};
        error_row(&e);
        rc = misc_row(h, thread, NULLV, mm ? INT(0) : NULLV, stack, pystack,
                      sig  ? INT(0)
                      : mm ? DTP_ERROR_DEVICE
                           : INT(0));
        break;
    }
    case TR_EV_CUDA: {
        int64_t x[TS_cuda_calls_NCOLS] = {[TS_cuda_calls_seq] = seq,
                                          [TS_cuda_calls_t] = t,
                                          [TS_cuda_calls_thread] = thread,
                                          [TS_cuda_calls_stack] = stack,
                                          [TS_cuda_calls_pystack] = pystack,
                                          [TS_cuda_calls_api] = S(&s, 0, ns),
                                          [TS_cuda_calls_kind] = INT(0),
                                          [TS_cuda_calls_dir] = INT(1) < 0 ? NULLV : INT(1),
                                          [TS_cuda_calls_bytes] = INT(2),
                                          [TS_cuda_calls_dst] = INT(3),
                                          [TS_cuda_calls_src] = INT(4),
                                          [TS_cuda_calls_host] = INT(5) < 0 ? NULLV : INT(5),
                                          [TS_cuda_calls_device] = INT(6) < 0 ? NULLV : INT(6),
                                          [TS_cuda_calls_peer] = INT(7) < 0 ? NULLV : INT(7),
                                          [TS_cuda_calls_stream] = INT(8),
                                          [TS_cuda_calls_func] = INT(9),
                                          [TS_cuda_calls_rc] = INT(10),
                                          [TS_cuda_calls_dur] = INT(11),
                                          [TS_cuda_calls_corr] = ni > 12 && INT(12) ? INT(12) : NULLV};
        int64_t kind = x[TS_cuda_calls_kind];
        if (kind == 2 || kind == 3 || kind == 4) x[TS_cuda_calls_src] = NULLV; /* malloc, free, memset: one pointer */
        if (kind != 1 && kind != 2 && kind != 4)
            x[TS_cuda_calls_bytes] = NULLV;           /* bytes only where they mean something */
        if (kind != 5) x[TS_cuda_calls_func] = NULLV; /* a kernel only for launches */
        rc = batch_add(&W.cuda, x);
        break;
    }
    case TR_EV_CUPTI: { /* no stacks: made on CUPTI's thread, long after the call */
        int64_t x[TS_cuda_activity_NCOLS] = {[TS_cuda_activity_seq] = seq,
                                             [TS_cuda_activity_t] = t,
                                             [TS_cuda_activity_thread] = thread,
                                             [TS_cuda_activity_what] = S(&s, 0, ns),
                                             [TS_cuda_activity_kind] = INT(0),
                                             [TS_cuda_activity_dir] = INT(1) < 0 ? NULLV : INT(1),
                                             [TS_cuda_activity_bytes] = INT(2),
                                             [TS_cuda_activity_host] = INT(3) < 0 ? NULLV : INT(3),
                                             [TS_cuda_activity_device] = INT(4) < 0 ? NULLV : INT(4),
                                             [TS_cuda_activity_stream] = INT(5),
                                             [TS_cuda_activity_corr] = INT(6),
                                             [TS_cuda_activity_start] = INT(7),
                                             [TS_cuda_activity_dur] = INT(8),
                                             [TS_cuda_activity_name] = ns > 1 && s.len[1] ? S(&s, 1, ns) : NULLV};
        rc = batch_add(&W.cuda_act, x);
        break;
    }
    case TR_EV_THROW: rc = throw_row(h, seq, thread, stack, pystack, &s, ns); break;
    default: break;
    }
#undef INT
    return W.failed ? -1 : rc;
}

/* Drains one ring, up to W.drain_max records; returns records handled, or
 * -1. A burst is written in transactions of bounded size: one transaction of
 * a million rows spills SQLite's page cache into the WAL and grows the WAL
 * to the transaction's size before any of it is checkpointed. */
static int64_t drain(struct tr_ring *r) {
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    const unsigned char *data = r->data;
    uint64_t size = r->size;
    int64_t n = 0;
    while (tail < head && !W.failed) {
        if (n == W.drain_max) {
            W.more = 1;
            break;
        }
        const struct tr_rec *h = (const struct tr_rec *)(data + (tail & (size - 1)));
        if (h->size < 8 || h->size > size) { /* never happens unless memory was corrupted */
            tr_fail("ring of thread %lld is corrupt", (long long)r->tid);
            return -1;
        }
        if (h->kind != TR_EV_PAD) {
            if (handle(r, h) < 0) return -1;
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
    if (W.failed) return -1;
    sqlite3_stmt *st = row ? W.upd_module : W.ins_module;
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
        sql_fail("module");
        return -1;
    }
    return row ? row : sqlite3_last_insert_rowid(W.db);
}

static void update_threads(void) {
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r && !W.failed; r = r->next) {
        uint64_t d = atomic_load(&r->dropped), w = atomic_load(&r->written);
        if (!r->writer_id || (d == r->writer_dropped && w == r->writer_written)) continue;
        r->writer_dropped = d, r->writer_written = w;
        sqlite3_bind_int64(W.upd_thread, 1, (int64_t)w);
        sqlite3_bind_int64(W.upd_thread, 2, (int64_t)d);
        sqlite3_bind_int64(W.upd_thread, 3, r->writer_id);
        int rc = sqlite3_step(W.upd_thread);
        sqlite3_reset(W.upd_thread);
        if (rc != SQLITE_DONE) sql_fail("update thread");
    }
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A step: every ring drained into the transaction, begun here when none is
 * open, and the module table brought up to date. */
static int step_body(void) {
    if (W.failed) return -1;
    if (!W.in_txn) {
        if (exec("BEGIN") < 0) return -1;
        W.in_txn = 1, W.txn_records = 0;
    }
    W.more = 0;
    if (tr_modules_changed()) tr_modules_scan(atomic_load(&g_tr.next_seq));
    tr_modules_flush(module_row, NULL);
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) {
        int64_t n = drain(r);
        if (n < 0) break;
        W.txn_records += n;
        thread_of(r);
    }
    return W.failed ? -1 : 0;
}

/* A cycle: a last step, then the held rows and the counters, committed. */
static int cycle_body(void) {
    if (step_body() < 0) return -1;
    pend_flush_all();
    struct batch *all[] = {&W.frames,     &W.pyframes, &W.attrs, &W.tensors,   &W.derived,
                           &W.args,       &W.outs,     &W.names, &W.transfers, &W.ops,
                           &W.frees_late, &W.misc,     &W.cuda,  &W.cuda_act,  &W.facts};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) batch_flush(all[i]);
    update_threads();
    if (W.failed) return -1;
    W.in_txn = 0;
    return exec("COMMIT");
}

static int timed(int (*body)(void)) {
    uint64_t t0 = thread_cpu_ns();
    int rc = body();
    W.busy_ns += thread_cpu_ns() - t0;
    return rc;
}
static int cycle(void) { return timed(cycle_body); }

/* ---------------------------------------------------------------- lifecycle */

/* After a commit: the WAL's size, in frames (this hook replaces SQLite's
 * automatic checkpoint, which checkpoint_when does instead). */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int frames) {
    (void)ctx, (void)db, (void)name;
    W.wal_frames = frames;
    return SQLITE_OK;
}

/* Copies the WAL into the file (SQLite's automatic checkpoint at 1000
 * frames), and as soon as the writer has caught up with 64 or more: not at
 * the end on the program's time; the WAL then starts over, small and in
 * cache. Not after every idle commit: that copied the same last pages of
 * each table over and over. */
static void checkpoint_when(int idle) {
    if (W.wal_frames < W.ckpt_frames && !(idle && W.wal_frames >= 64)) return;
    int log = 0, done = 0;
    uint64_t t0 = thread_cpu_ns();
    int rc = sqlite3_wal_checkpoint_v2(W.db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED) /* busy: a reader checkpoints */
        sql_fail("checkpoint");
    if (rc == SQLITE_OK && done == log) W.wal_frames = 0; /* the next commit starts the WAL over */
    W.busy_ns += thread_cpu_ns() - t0;
}

/* ---------------------------------------------------------------- flight recorder */

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
    for (int n = 0; !W.failed && tail && *tail; n++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(W.db, tail, -1, &st, &tail) != SQLITE_OK) {
            sql_fail("prune");
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
        if (changes && rc == SQLITE_DONE) changes[n] = sqlite3_changes(W.db);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            sql_fail("prune");
            return -1;
        }
    }
    return W.failed ? -1 : 0;
}

static int64_t pragma_int(const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(W.db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
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
    while (k < W.prune.nmarks && W.prune.marks[k].seq < h) k++;
    *idh = k < W.prune.nmarks ? W.prune.marks[k].max_tensor : W.prune.max_tensor;
    *oph = k < W.prune.nmarks ? W.prune.marks[k].max_op : W.prune.max_op;
    memmove(W.prune.marks, W.prune.marks + k, sizeof *W.prune.marks * (size_t)(W.prune.nmarks - k));
    W.prune.nmarks -= k;
}

/* The live tensors into temp.prune_alive. */
static int prune_alive_rows(void) {
    if (exec("DELETE FROM temp.prune_alive") < 0) return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(W.db, "INSERT OR IGNORE INTO temp.prune_alive VALUES(?)", -1, &st, NULL) != SQLITE_OK) {
        sql_fail("prune");
        return -1;
    }
    for (size_t j = 0; j < W.alive.cap; j++) {
        if (W.alive.v[j] != 1) continue;
        sqlite3_bind_int64(st, 1, (int64_t)W.alive.k1[j]);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(st);
            sql_fail("prune");
            return -1;
        }
    }
    sqlite3_finalize(st);
    return 0;
}

/* One pass up to horizon h, in its own transaction: 1 when it dropped
 * something, 0 when nothing was to drop, -1 on failure. */
static int prune_pass(int64_t from, int64_t h) {
    uint64_t t0 = thread_cpu_ns();
    /* its scratch tables, in memory, made on the first pass: a trace that never reaches the cap pays nothing */
    if (W.prune.kept_seq == -1 &&
        exec("PRAGMA temp_store=MEMORY; CREATE TEMP TABLE IF NOT EXISTS prune_alive(id INTEGER PRIMARY KEY);"
             " CREATE TEMP TABLE IF NOT EXISTS prune_keep(id INTEGER PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS"
             " prune_keep_ops(op INTEGER PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS prune_gone(id INTEGER"
             " PRIMARY KEY); CREATE TEMP TABLE IF NOT EXISTS prune_gone_ops(op INTEGER PRIMARY KEY);") < 0)
        return -1;
    struct prune_at at = {.h = h};
    prune_ids_before(h, &at.idh, &at.oph);
    if (exec("BEGIN") < 0) return -1;
    /* the kept set holds for the next pass while nothing new was recorded */
    if (W.prune.kept_seq != W.max_seq && (prune_alive_rows() < 0 || exec_pass(prune_keep_sql, &at, NULL, NULL) < 0))
        return -1;
    W.prune.kept_seq = W.max_seq;
    int64_t firsts[2] = {0, 0}, c[PD_N + 1] = {0};
    if (exec_pass(prune_doomed_sql, &at, NULL, firsts) < 0 || exec_pass(prune_delete_sql, &at, c, NULL) < 0) return -1;
    int64_t rows = 0, events = c[PD_MISC_NAME] + c[PD_MISC_TRANSFER] + 2 * c[PD_TENSORS] + 2 * c[PD_OPS] + c[PD_CUDA];
    for (int k = 0; k < PD_N; k++) rows += c[k];
    W.prune.horizon = h;
    if (rows > 0) {
        int64_t first = firsts[0] > 0 && (firsts[1] <= 0 || firsts[0] < firsts[1]) ? firsts[0] : firsts[1];
        if (first <= 0) first = from > 0 ? from : 1; /* only transfers or CUDA calls: the pass's span */
        W.prune.events += events, W.prune.rows += rows, W.prune.passes++;
        if (!W.prune.first || first < W.prune.first) W.prune.first = first;
        if (h - 1 > W.prune.last) W.prune.last = h - 1;
    }
    W.prune.ns += thread_cpu_ns() - t0;
    if (W.prune.passes) { /* the keys appear with the first rows dropped */
        meta_int("pruned_events", W.prune.events);
        meta_int("pruned_rows", W.prune.rows);
        meta_int("pruned_passes", W.prune.passes);
        meta_int("pruned_before_seq", W.prune.horizon);
        meta_int("pruned_first_seq", W.prune.first);
        meta_int("pruned_last_seq", W.prune.last);
        meta_int("prune_ns", (int64_t)W.prune.ns);
    }
    if (exec("COMMIT") < 0) return -1;
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
    if (!g_tr.cfg.max_mb || W.failed || W.prune.off) return W.failed ? -1 : 0;
    int64_t cap = (int64_t)g_tr.cfg.max_mb << 20, live = live_bytes();
    if (live < 0) return 0;
    if (!W.prune.active || all) {
        if (live <= cap / 100 * high_pct || (!all && live <= W.prune.retry_at)) return 0;
        W.prune.active = 1, W.prune.npass = 0, W.prune.empty = 0;
    }
    do {
        int64_t from = W.prune.horizon, to = W.max_seq + 1;
        if (live <= cap / 100 * PRUNE_LOW || (all && W.prune.npass == PRUNE_PASSES) || W.prune.empty >= PRUNE_EMPTY ||
            to - from < 2) {
            W.prune.active = 0;
            W.prune.retry_at = live > cap / 100 * PRUNE_LOW ? live + cap / 100 * PRUNE_STEP : 0;
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
        W.prune.empty = dropped ? 0 : W.prune.empty + 1;
        W.prune.npass++;
        checkpoint_when(1);
        live = live_bytes();
        if (live <= cap / 100 * PRUNE_LOW) W.prune.active = 0, W.prune.retry_at = 0; /* done */
    } while (all && W.prune.active);
    return 0;
}

static int writer_open(const char *path) {
    memset(&W, 0, sizeof W);
    snprintf(W.path, sizeof W.path, "%s", path);
    W.drain_max = DRAIN_MAX;
    W.prune.kept_seq = -1;
    /* under a cap the WAL, beside the file, stays a tenth of it (a page is 4 KiB) */
    W.ckpt_frames = 1000;
    if (g_tr.cfg.max_mb && g_tr.cfg.max_mb * 256 / 10 < W.ckpt_frames)
        W.ckpt_frames = g_tr.cfg.max_mb * 256 / 10 < 64 ? 64 : (int)(g_tr.cfg.max_mb * 256 / 10);
    tr_clock_conv_init(&W.clock);
    if (sqlite3_open_v2(path, &W.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sql_fail("open");
        return -1;
    }
    sqlite3_busy_timeout(W.db, 2000);
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
    if (exec(pragmas) < 0) return -1;
    if (g_tr.cfg.max_mb) { /* a WAL reset after a checkpoint is cut back to this */
        snprintf(pragmas, sizeof pragmas, "PRAGMA journal_size_limit=%lld;", (long long)(g_tr.cfg.max_mb << 20) / 10);
        if (exec(pragmas) < 0) return -1;
    }
    sqlite3_wal_hook(W.db, wal_hook, NULL);
    static char tables[8192]; /* the writer's only: made once per trace */
    if (ts_create_sql(tables, sizeof tables) >= (int)sizeof tables) {
        sql_fail("schema too long");
        return -1;
    }
    if (exec("BEGIN") < 0 || exec(tables) < 0 || exec(tr_schema_kinds) < 0 || exec(tr_schema_views) < 0) return -1;
    W.ins_string = prep("INSERT INTO strings VALUES(?,?)");
    W.ins_pycode = prep("INSERT OR REPLACE INTO py_code VALUES(?,?,?,?)");
    W.ins_error = prep("INSERT INTO errors VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    W.ins_site = prep("INSERT OR REPLACE INTO throw_sites VALUES(?,?,?)");
    W.ins_thread = prep("INSERT INTO threads VALUES(?,?,?,0,0)");
    W.upd_thread = prep("UPDATE threads SET events=?, dropped=? WHERE id=?");
    W.ins_device = prep("INSERT OR REPLACE INTO devices VALUES(?,?,?)");
    W.ins_module =
        prep("INSERT INTO modules(path,base,start,end,build_id,loaded_seq,unloaded_seq) VALUES(?,?,?,?,?,?,?)");
    W.upd_module = prep("UPDATE modules SET unloaded_seq=? WHERE id=?");
    W.ins_meta = prep("INSERT OR REPLACE INTO meta VALUES(?,?)");
#define BATCH_INIT(b, t) batch_init(b, TS_T_##t, TS_##t##_NCOLS)
    if (W.failed || BATCH_INIT(&W.misc, misc_events) || BATCH_INIT(&W.frees_late, frees_late) ||
        BATCH_INIT(&W.tensors, tensor_rows) || BATCH_INIT(&W.derived, derived) || BATCH_INIT(&W.attrs, tensor_attrs) ||
        BATCH_INIT(&W.args, op_args_more) || BATCH_INIT(&W.outs, op_outputs_more) || BATCH_INIT(&W.names, names) ||
        BATCH_INIT(&W.transfers, transfers) || BATCH_INIT(&W.ops, ops) || BATCH_INIT(&W.frames, frames) ||
        BATCH_INIT(&W.pyframes, py_frames) || BATCH_INIT(&W.cuda, cuda_calls) ||
        BATCH_INIT(&W.cuda_act, cuda_activity) || BATCH_INIT(&W.facts, source_facts))
        return -1;
#undef BATCH_INIT
    if (map2_grow(&W.strings) || map2_grow(&W.stacks) || map2_grow(&W.pystacks) || map2_grow(&W.pycode) ||
        map2_grow(&W.stack_cache) || map2_grow(&W.dims_cache) || map2_grow(&W.attrs_cache)) {
        sql_fail("out of memory");
        return -1;
    }
    if (write_start_meta() < 0 || exec("COMMIT") < 0) return -1;
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
        int wait = W.more || now >= due ? 0 : (int)((due - now + 999999) / 1000000);
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
        W.drain_max = flush ? INT64_MAX : DRAIN_MAX;
        int commit = flush || tr_now_ns() >= due || W.txn_records >= DRAIN_MAX;
        int rc = commit ? cycle() : timed(step_body);
        if (commit) {
            if (rc == 0) checkpoint_when(!W.more);
            if (rc == 0 && (W.prune.active || ++W.prune.commits % PRUNE_EVERY == 0)) rc = prune_check(PRUNE_HIGH, 0);
            due = tr_now_ns() + (uint64_t)g_tr.cfg.commit_ms * 1000000u;
        }
        if (flush) {
            if (rc == 0 && exec("BEGIN") == 0) {
                meta_int("fatal_signal", atomic_load(&g_tr.fatal_signal));
                meta_int("end_time_ns", unix_ns());
                exec("COMMIT");
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

static void site_row(void *ctx, uint64_t site, uint64_t throws, uint64_t recorded) {
    (void)ctx;
    sqlite3_bind_int64(W.ins_site, 1 + TS_throw_sites_site, (int64_t)site);
    sqlite3_bind_int64(W.ins_site, 1 + TS_throw_sites_throws, (int64_t)throws);
    sqlite3_bind_int64(W.ins_site, 1 + TS_throw_sites_recorded, (int64_t)recorded);
    int rc = sqlite3_step(W.ins_site);
    sqlite3_reset(W.ins_site);
    if (rc != SQLITE_DONE) sql_fail("insert throw site");
}

static void finish(int complete, const char *exec_path) {
    if (W.failed || !W.db) return;
    /* the end in the events' own time: exit() when it was called, else now (main returned), before the last
     * drain and the indexes make it later */
    uint64_t end = atomic_load(&g_tr.exit_stamp);
    if (!end) end = tr_stamp();
    W.drain_max = INT64_MAX; /* everything recorded until now, in one go */
    /* pruning at the exit (on the program's time) only when the run outpaced it: the indexes need room */
    if (cycle() < 0 || prune_check(PRUNE_HIGH + 20, 1) < 0) return;
    uint64_t dropped = 0, waits = 0, wait_ns = 0, first_drop = 0, last_drop = 0;
    for (struct tr_ring *r = atomic_load(&g_tr.rings); r; r = r->next) {
        dropped += atomic_load(&r->dropped), waits += atomic_load(&r->waits), wait_ns += atomic_load(&r->wait_ns);
        uint64_t f = atomic_load(&r->first_drop);
        if (f && (!first_drop || f < first_drop)) first_drop = f;
        uint64_t l = atomic_load(&r->last_drop);
        if (l > last_drop) last_drop = l;
    }
    if (exec("BEGIN") < 0) return;
    meta_int("end_time_ns", unix_ns());
    meta_int("end_t", tr_clock_ns(&W.clock, end));
    meta_int("events_recorded", (int64_t)W.events_written);
    meta_int("events_dropped", (int64_t)dropped);
    meta_int("lossy", g_tr.cfg.lossy);
    if (first_drop) meta_int("first_dropped_seq", (int64_t)first_drop);
    if (last_drop) meta_int("last_dropped_seq", (int64_t)last_drop);
    meta_int("ring_waits", (int64_t)waits);
    meta_int("ring_wait_ns", (int64_t)wait_ns);
    /* tracing turned off early (one warning): what follows it is missing */
    if (atomic_load(&g_tr.warned)) {
        complete = 0;
        meta_text("tracing_stopped", g_tr.fail_msg[0] ? g_tr.fail_msg : "an internal failure (see the warning)");
    }
    meta_int("writer_busy_ns", (int64_t)W.busy_ns);
    int st = atomic_load(&g_tr.exit_status);
    if (st >= 0) meta_int("exit_status", st);
    const char *pyv = tr_py_version();
    if (pyv) meta_text("python", pyv);
    meta_int("complete", complete);
    if (exec_path) meta_text("exec", exec_path);
    tr_throw_sites_flush(site_row, NULL);
    if (exec("COMMIT") < 0) return;
    if (exec("BEGIN") == 0 && exec(tr_schema_indexes) == 0) exec("COMMIT"); /* one commit for the five */
    exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

/* The writer's heap memory (its SQLite handle aside). */
static void free_mem(void) {
    for (int64_t i = 0; i < W.ntexts; i++) free(W.texts[i]);
    free(W.texts);
    for (int64_t i = 0; i < W.caprctx; i++) free(W.rctx[i]);
    free(W.rctx);
    map2_free(&W.strings), map2_free(&W.stacks), map2_free(&W.pystacks), map2_free(&W.pycode);
    map2_free(&W.stack_cache), map2_free(&W.dims_cache), map2_free(&W.attrs_cache), map2_free(&W.alive);
    free(W.prune.marks);
    W.prune.marks = NULL, W.prune.nmarks = W.prune.capmarks = 0;
    W.texts = NULL, W.ntexts = 0, W.rctx = NULL, W.caprctx = 0;
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
    uint64_t written = W.failed ? UINT64_MAX : W.events_written;
    if (W.db) {
        sqlite3_stmt *st = NULL;
        while ((st = sqlite3_next_stmt(W.db, NULL)) != NULL) sqlite3_finalize(st);
        sqlite3_close(W.db);
        W.db = NULL;
    }
    free_mem();
    pthread_mutex_unlock(&g_tr.writer_lock);
    xfsz_restore(&xg);
    return written;
}

void tr_writer_wake(void) {
    if (g_tr.wake_fd[1] >= 0 && write(g_tr.wake_fd[1], "w", 1) < 0) { /* full: it is woken already */
    }
}

void tr_writer_flush_now(void) {
    /* Called on the fatal path from a program thread: the writer does the
     * work (SQLite is not async-signal-safe); this only asks and waits. */
    if (!g_tr.writer_running || pthread_equal(pthread_self(), g_tr.writer)) return;
    atomic_store(&g_tr.flush_done, 0);
    atomic_store(&g_tr.flush_request, 1);
    tr_writer_wake();
    for (int i = 0; i < 2000 && !atomic_load(&g_tr.flush_done) && !atomic_load(&g_tr.writer_gone);
         i++) { /* up to 2 s */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void tr_writer_abandon(void) {
    /* Fork child: the handle and its memory belong to the parent's trace.
     * Closing it here could checkpoint or delete the parent's WAL: forget it.
     * Its memory is this process's copy, free to give back (fork's prepare
     * handler held the writer lock: nothing was half-done). */
    free_mem();
    memset(&W, 0, sizeof W);
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
