/* Internals of libdevtrace.so, shared by its sources: the per-thread ring
 * and its record format (producer side), the writer (consumer side), stack
 * capture, the module table. The global state and the failure path are in
 * ground.h. Nothing here is public. */
#ifndef DEVTRACE_TR_IMPL_H
#define DEVTRACE_TR_IMPL_H

#include "ground.h"
#include "vocab.h"

#include <devtrace/probe.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- records */

/* What a ring record describes: common/vocab.h's event and record kinds (DT_EVENT_KINDS, DT_RECORD_KINDS), as
 * TR_EV_<NAME>; the numbers are the events' `kind` column. What each record holds:
 *   INIT        ints {abi}, strs {runtime, version}
 *   BACKEND     device first used: ints {device}, strs {backend}
 *   CREATED     ints {id, storage, dtype, ndim, device, nbytes, offset, origin, src, op, shape[ndim], strides[ndim]},
 *               strs {what, name, detail}
 *   TRANSFER    ints {src, dst, from, to, bytes, kind}, strs {via}
 *   NAMED       ints {id}, strs {name}
 *   FREED       ints {id}
 *   OP_BEGIN    ints {op, nargs, (id, device) * nargs}, strs {op, argname * nargs}
 *   OP_END      ints {op, status, nout, id * nout}, strs {op}
 *   MISMATCH    ints {op, first, other, nargs, (id, device) * nargs}, strs {op, message, argname * nargs}
 *   ERROR       ints {kind}, strs {op, message}
 *   SIGNAL      ints {signo, code, addr}
 *   PYCODE      a Python code object seen first: ints {code, firstline}, strs {file, name}
 *   CUDA        a CUDA runtime call: ints {kind, dir, bytes, dst, src, host, device, peer, stream, func, rc, dur,
 *               corr}, strs {api}
 *   THROW       a C++ throw: ints {rethrow, site, object}, strs {type, message}
 *   PAD         filler to the end of the ring (never a real event)
 *   CUPTI       a CUPTI activity record: ints {kind, dir, bytes, host, device, stream, corr, start, dur}, strs {what,
 *               name}
 *   SOURCE_FACT a fact about the source (no event row, no stack): ints {line}, strs {file, key, value}
 *   ROLE        a tensor's role (no event row): ints {id, role, of}, strs {key} */
enum tr_kind {
#define TR_KIND_(name, n, text) TR_EV_##name = n,
    DT_EVENT_KINDS(TR_KIND_) DT_RECORD_KINDS(TR_KIND_)
#undef TR_KIND_
};

/* A record in a ring. size covers the whole record and is a multiple of 8.
 * After the header: ints[nint], ips[nips], py[npy] (code, line pairs as two
 * uint64), then nstr strings, each a uint16 length and its bytes. */
struct tr_rec {
    uint32_t size;  /* bytes, header included */
    uint16_t kind;  /* enum tr_kind */
    uint16_t nint;  /* integers */
    uint16_t nips;  /* native frames, innermost first */
    uint16_t npy;   /* Python frames, innermost first */
    uint16_t nstr;  /* strings */
    uint16_t flags; /* unused, 0 */
    uint64_t seq;   /* global event sequence number */
    uint64_t stamp; /* tr_stamp(): the writer makes it ns since the trace started */
};

#define TR_MAX_INTS  160  /* integers in one record (op args are truncated to fit) */
#define TR_MAX_STRS  40   /* strings in one record */
#define TR_MAX_STR   1024 /* longest string kept (longer ones are cut) */
#define TR_MAX_DEPTH 128  /* deepest native stack */
#define TR_MAX_PY    64   /* deepest Python stack */

/* ---------------------------------------------------------------- rings */

enum { TR_RING_LIVE = 0, TR_RING_EXITED = 1 };

/* The stacks of a thread's ops in progress, outermost first (event.c): what
 * the runtime makes inside an op (its outputs, nested ops, frees...) is
 * made in the op's call, and is given its stacks instead of unwinding the
 * same call again (tr_op_stacks). */
#define TR_OPS_KEPT 4  /* nested ops remembered; deeper ones share the 4th's */
#define TR_OPS_IPS  32 /* an op stack longer than this is not kept */
#define TR_OPS_PY   16
struct tr_op_stack {
    uint64_t op; /* dtp_op.seq */
    int nips, npy;
    uint64_t ips[TR_OPS_IPS], py[2 * TR_OPS_PY];
};

/* One thread's ring, in its own mmap'd block: written only by its thread
 * (head), read only by the writer (tail). What the producer changes on every
 * event, what the writer changes while draining, and what neither changes
 * sit on separate cache lines: sharing one, each event's stores and the
 * writer's tail made every record move that line between the two cores. */
struct tr_ring {
    /* the producer's line: */
    _Atomic uint64_t head;    /* bytes produced, ever */
    _Atomic uint64_t dropped; /* events that found the ring full */
    _Atomic uint64_t written; /* events accepted into the ring */
    uint64_t tail_seen;       /* tail when the producer last read it: space is only reread when this says full */
    uint64_t wrap_at;         /* offset from which the producer starts over early (ring.c); UINT64_MAX: never */
    uint64_t wrap_next;       /* head at which it next looks whether it may */
    uint64_t lap_stamp;       /* tr_stamp() when the producer last started over */
    /* the producer's, changed only when the ring is full: off the line every event touches */
    _Alignas(64) _Atomic uint64_t waits; /* times the producer found it full and waited for the writer */
    _Atomic uint64_t wait_ns;            /* time it waited, in all */
    _Atomic uint64_t first_drop;         /* seq of the first event dropped, 0 when none */
    _Atomic uint64_t last_drop;          /* seq of the last one */
    /* the writer's line: */
    _Alignas(64) _Atomic uint64_t tail;      /* bytes consumed, ever */
    int64_t writer_id;                       /* row of the threads table, 0 until seen */
    int writer_state;                        /* 1 once drained for good after the thread exited */
    uint64_t writer_mapped;                  /* data offsets below it mapped by tr_ring_populate; UINT64_MAX: all */
    uint64_t writer_dropped, writer_written; /* counters last written */
    /* set when the ring is made: */
    _Alignas(64) uint64_t size; /* data bytes, a power of two */
    unsigned char *data;        /* size bytes after the header */
    int64_t tid;                /* OS thread id */
    _Atomic int state;          /* TR_RING_LIVE / TR_RING_EXITED */
    struct tr_ring *next;       /* registry list, newest first */
    size_t map_bytes;           /* the whole mapping, for munmap */
    char name[16];              /* thread name at registration */
    void *altstack;             /* this thread's signal stack, or NULL */
    size_t altstack_bytes;
    /* the producer's own, never read by the writer: */
    int nops;
    struct tr_op_stack ops[TR_OPS_KEPT];
};

/* The writer's conversion of stamps keeps the last TR_CLOCK_PAIRS clock pairs (clock.c). */
#define TR_CLOCK_PAIRS 64
struct tr_clock_conv {
    struct tr_clock_pair pairs[TR_CLOCK_PAIRS];
    int first, n; /* a circular list, oldest first */
    int tsc;      /* g_tr.tsc, and */
    uint64_t t0;  /* g_tr.t0, copied: read per record */
};

/* ---------------------------------------------------------------- functions */

TR_HIDDEN uint64_t tr_now_ns(void); /* CLOCK_MONOTONIC, ns */
TR_HIDDEN uint64_t tr_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID, ns (the writer's own time) */

/* Event times (clock.c). tr_clock_start picks the clock and takes the
 * start; tr_stamp is a record's time as producers take it; the writer turns
 * stamps into ns since the start through a conversion of its own. */
TR_HIDDEN void tr_clock_start(void);
static inline uint64_t tr_stamp(void) {
#if defined(__x86_64__)
    if (g_tr.tsc) return __builtin_ia32_rdtsc();
#endif
    return tr_now_ns();
}
TR_HIDDEN void tr_clock_conv_init(struct tr_clock_conv *c);
TR_HIDDEN void tr_clock_calibrate(void); /* writer: sets g_tr.lap_ticks once it can */
TR_HIDDEN int64_t tr_clock_ns(struct tr_clock_conv *c, uint64_t stamp);

/* Lazy, idempotent process init (config, output file, writer thread). */
TR_HIDDEN int tr_ensure_init(void);

/* Rings (ring.c). The calling thread's ring, created on first use; NULL when
 * it cannot be had (tracing off, or mmap failed). */
extern TR_HIDDEN _Thread_local struct tr_ring *tr_tl_ring;
TR_HIDDEN struct tr_ring *tr_ring_make(void);
static inline struct tr_ring *tr_ring_self(void) { return tr_tl_ring ? tr_tl_ring : tr_ring_make(); }
TR_HIDDEN void tr_ring_forget_all(void); /* fork child: drop inherited rings */
/* The producer starts over at the ring's start early, from offset wrap_at
 * on, when its lap took TR_RING_LAP_MS or more and the writer waits idle at
 * most TR_RING_NEAR bytes behind; when not, it looks again TR_RING_RECHECK
 * bytes later (ring.c says why). */
#define TR_RING_NEAR    (256u << 10)
#define TR_RING_RECHECK (16u << 10)
#define TR_RING_LAP_MS  16
/* A full ring (lossless mode): the producer waits for the writer to make
 * room for need bytes past head. 0 when there is room now; -1 when the
 * record is to be dropped (lossy mode, no writer to wait for, tracing
 * stopped, or the writer made no progress for TR_RING_STUCK_MS: then one
 * warning and tracing off). Out of line: the hot path only calls it when
 * full. */
#define TR_RING_STUCK_MS 2000
TR_HIDDEN int tr_ring_wait(struct tr_ring *r, uint64_t need);
/* Writer: maps the next pages of r ahead of its producer (writer_mapped
 * becomes UINT64_MAX once there is nothing left to map). */
TR_HIDDEN void tr_ring_populate(struct tr_ring *r);

/* Event building (event.c): one record on the calling thread's ring. */
struct tr_ev {
    enum tr_kind kind;
    int nint, nstr;
    uint64_t ints[TR_MAX_INTS];
    const char *strs[TR_MAX_STRS];
    int stack;     /* capture native and Python stacks */
    uint64_t op;   /* the op (dtp_op.seq) whose stacks this takes (an op's end, an op's output); or 0 */
    int in_op;     /* made by the runtime's own code: inside an op, takes the innermost op's stacks */
    int skip;      /* innermost frames to leave out, tr_ev_emit's caller first */
    int skip_own;  /* and every innermost frame inside libdevtrace.so (hooks) */
    int no_python; /* never call into Python (signal handlers) */
};
extern TR_HIDDEN _Thread_local int tr_in_emit; /* a probe is building a record on this thread */
/* dtp_stack_policy of this thread: DTP_STACKS_ALL (0), _INTERPRETER (skips the native unwind), _NONE */
extern TR_HIDDEN _Thread_local int tr_no_native;

/* Native stacks (stack.c): libunwind's unw_backtrace, or glibc's backtrace
 * when libunwind is missing; libdevtrace.so's own code range. */
extern TR_HIDDEN int (*tr_unw_backtrace)(void **buffer, int size);
extern TR_HIDDEN uintptr_t tr_own_lo, tr_own_hi;
TR_HIDDEN void tr_stack_init(void);

/* The calling function's stack, innermost first, leaving out its `skip`
 * innermost frames (the caller's own is the first), and with `own` every
 * innermost frame inside libdevtrace.so (hooks, whose depth inlining can
 * change). In line, so that no frame of the tracer's is unwound but the
 * probe's: each costs a step of the unwinder. */
__attribute__((always_inline)) static inline int tr_stack_capture(uint64_t *ips, int max, int skip, int own) {
    void *buf[TR_MAX_DEPTH + 16];
    int want = max + skip;
    if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
    int n = tr_unw_backtrace ? tr_unw_backtrace(buf, want) : backtrace(buf, want);
    int k = 0, i = skip;
    if (own)
        while (i < n && (uintptr_t)buf[i] >= tr_own_lo && (uintptr_t)buf[i] < tr_own_hi) i++;
    for (; i < n && k < max; i++) ips[k++] = (uint64_t)(uintptr_t)buf[i];
    return k;
}

/* The kept stacks ev takes instead of unwinding, or NULL: those of its own
 * op (ev->op), else, for an event the runtime makes inside an op, those of
 * the innermost op in progress on the thread. */
static inline const struct tr_op_stack *tr_op_stacks(const struct tr_ring *r, const struct tr_ev *ev) {
    if (!r->nops || !ev->stack) return NULL;
    const struct tr_op_stack *o = NULL;
    for (int i = r->nops - 1; ev->op && i >= 0; i--)
        if (r->ops[i].op == ev->op) {
            o = &r->ops[i];
            break;
        }
    if (!o && ev->in_op) o = &r->ops[r->nops - 1];
    return o && o->nips >= 0 ? o : NULL;
}

/* Builds and commits the record (event.c). */
TR_HIDDEN void tr_ev_record(struct tr_ring *r, const struct tr_ev *ev, uint64_t seq, uint64_t stamp,
                            const uint64_t *ips, int nips, const uint64_t *py, int npy);

/* Python stacks (pystack.c): frames of the calling thread when it holds the
 * GIL, as (code object, line) pairs; 0 when not in Python. May emit
 * TR_EV_PYCODE records for code objects seen the first time. */
TR_HIDDEN void tr_py_init(void);
TR_HIDDEN int tr_py_capture(uint64_t *pairs, int max);
/* This thread holds the GIL of an initialized CPython: a Python stack can be taken now. */
TR_HIDDEN int tr_py_held(void);

/* tr_ev_emit's work: numbered and stamped first (the locked add then waits
 * for no store into the ring), stacks next (Python's may emit records of
 * their own, for new code objects); an op's output takes its op's. */
__attribute__((always_inline)) static inline void tr_ev_build(struct tr_ev *ev) {
    struct tr_ring *r = tr_ring_self();
    if (!r) return;
    uint64_t seq = atomic_fetch_add_explicit(&g_tr.next_seq, 1, memory_order_relaxed);
    uint64_t stamp = tr_stamp();
    uint64_t ips[TR_MAX_DEPTH], py[2 * TR_MAX_PY];
    int nips = 0, npy = 0;
    const struct tr_op_stack *o = tr_op_stacks(r, ev);
    if (o) { /* the same call as the op's, unwound at its begin */
        tr_ev_record(r, ev, seq, stamp, o->ips, o->nips, o->py, o->npy);
        return;
    }
    if (ev->stack) {
        if (!tr_no_native) nips = tr_stack_capture(ips, g_tr.cfg.depth, ev->skip, ev->skip_own);
        if (g_tr.cfg.python && !ev->no_python && tr_no_native != DTP_STACKS_NONE) npy = tr_py_capture(py, TR_MAX_PY);
    }
    tr_ev_record(r, ev, seq, stamp, ips, nips, py, npy);
}

/* One record of ev on the calling thread's ring, leaving the program's
 * errno as it was: making a ring, libunwind's checks of memory (a pipe
 * read that fails with EAGAIN on a first unwind) and waking the writer all
 * set it. In line in each caller, which is the innermost frame unwound
 * (ev->skip counts it). */
__attribute__((always_inline)) static inline void tr_ev_emit(struct tr_ev *ev) {
    if (!atomic_load_explicit(&g_tr.enabled, memory_order_relaxed)) return;
    int saved_errno = errno;
    tr_ev_build(ev);
    errno = saved_errno;
}

/* Modules (modules.c): the loaded objects, rescanned when they change. */
TR_HIDDEN void tr_modules_scan(uint64_t seq);
struct dl_phdr_info;
/* The GNU build-id of a loaded object, in hex (41 bytes), "" when none. */
TR_HIDDEN void tr_build_id_of(const struct dl_phdr_info *info, char *out);
TR_HIDDEN int tr_modules_changed(void);
/* fork: the table held across it (prepare, parent, child), and the child's
 * new trace given every module still loaded (the parent's rows are not its). */
TR_HIDDEN void tr_modules_atfork_prepare(void);
TR_HIDDEN void tr_modules_atfork_parent(void);
TR_HIDDEN void tr_modules_atfork_child(void);
TR_HIDDEN void tr_modules_new_trace(void);
TR_HIDDEN void tr_modules_flush(int64_t (*fn)(void *ctx, const char *path, uint64_t base, uint64_t start, uint64_t end,
                                              const char *build_id, uint64_t loaded, uint64_t unloaded, int64_t row),
                                void *ctx);

/* The writer (writer.c, writer_exit.c; its internals: writer_impl.h). */
TR_HIDDEN int tr_writer_start(void); /* the thread opens the trace and creates its schema; 0 or -1 (warned) */
/* drain, finish, close; exec_path: the program this process is about to
 * exec (noted in the trace), or NULL. Returns the events written, or
 * UINT64_MAX when the trace failed. */
TR_HIDDEN uint64_t tr_writer_stop(int final, const char *exec_path);
/* After the stop: one meta row into the closed trace at path; 0 or -1. */
TR_HIDDEN int tr_writer_note(const char *path, const char *key, const char *value);
TR_HIDDEN void tr_writer_flush_now(void); /* fatal path: drain and commit in this thread */
TR_HIDDEN void tr_writer_sync(void);      /* drain and commit, for a reader of the live trace (tr_api_flush) */
enum { TR_FLUSH_FATAL = 1, TR_FLUSH_SYNC = 2 }; /* g_tr.flush_request's kinds */
TR_HIDDEN void tr_writer_wake(void);      /* the writer steps now (signal-safe; may set errno) */
TR_HIDDEN void tr_writer_abandon(void);   /* fork child: forget the parent's handle */

/* Output naming (output.c): claims a fresh file per the config and env. */
TR_HIDDEN const char *tr_rank(void); /* RANK, OMPI_COMM_WORLD_RANK, ... or NULL */
TR_HIDDEN int tr_output_claim(char *path, size_t size, int forked_child);
TR_HIDDEN void tr_output_remove(const char *path); /* the trace and its -wal, -shm */

/* Symbols of libraries loaded RTLD_LOCAL (resolve.c): the definition of
 * name in the first loaded object whose file name starts with one of
 * prefixes (NULL-terminated). */
TR_HIDDEN void *tr_lib_sym(const char *const *prefixes, const char *name);
/* tr_sym_once: dlsym(RTLD_NEXT when next, else RTLD_DEFAULT), then tr_lib_sym,
 * looked up once into *slot; a miss is not remembered. */
TR_HIDDEN void *tr_sym_once(_Atomic(void *) *slot, const char *const *prefixes, const char *name, int next);
extern TR_HIDDEN const char *const tr_cxx_libs[]; /* libstdc++, libc++abi, libc++ */

/* A fact about the source (no event row, no stack), from a producer's dtp_source_fact or the tracer's own
 * reader of native sources (cfacts.c); in line in each, as tr_ev_emit is. */
static inline void tr_source_fact(const char *file, int line, const char *key, const char *value) {
    struct tr_ev e = {.kind = TR_EV_SOURCE_FACT, .nint = 1, .nstr = 3, .stack = 0}; /* not an event of the program */
    e.ints[0] = (uint64_t)line;
    e.strs[0] = file, e.strs[1] = key, e.strs[2] = value;
    tr_ev_emit(&e);
}

/* ---------------------------------------------------------------- front-ends */

/* What a front-end (tracer/front/) asks the core to call, at points of the tracer's life the front-end cannot
 * see itself. The core knows no front-end: each one registers its hooks statically with TR_FRONT, into a
 * section of libdevtrace.so that the core walks (tr_fronts_each), so a front-end is added or removed by its
 * file alone and no core file names a front-end's function. A hook left NULL is not called. Called in link
 * order (tracer/CMakeLists.txt), all from the thread that drives that point of the life. */
struct tr_front_sink; /* the writer's, for what a front-end writes into the trace at its end (writer_exit.c) */
struct tr_front {
    const char *name;                                /* for people: "signals", "cupti" */
    void (*once)(void);                              /* the first start in the process, before the writer starts */
    void (*started)(void);                           /* the preloaded library's constructor started tracing */
    void (*thread)(struct tr_ring *r);               /* a thread's ring was made, on that thread */
    void (*flush)(void);                             /* the trace ends, the writer still running: write what is held */
    void (*finish)(const struct tr_front_sink *out); /* the writer's last transaction: counts into the trace */
};
/* The writer's side of finish: a meta row, a throw_sites row. */
struct tr_front_sink {
    void (*meta_int)(const char *key, int64_t value);
    void (*throw_site)(uint64_t site, uint64_t throws, uint64_t recorded);
};
#define TR_FRONT(id)                                                                                                   \
    __attribute__((used, section("tr_fronts"), aligned(sizeof(void *)))) static const struct tr_front tr_front_##id
/* The section's bounds, which the linker defines. */
extern TR_HIDDEN const struct tr_front __start_tr_fronts[], __stop_tr_fronts[];
#define tr_fronts_each(f) for (const struct tr_front *f = __start_tr_fronts; f < __stop_tr_fronts; f++)

#endif /* DEVTRACE_TR_IMPL_H */
