/* Builds one record on the calling thread's ring, once tr_ev_emit (in line
 * in each probe, tr_impl.h) has numbered, stamped and unwound it. The
 * producer path: no malloc, stdio, locks or SQLite; a full ring makes the
 * producer wait for the writer (ring.c), or, in lossy mode, drops the
 * record and counts it. */
#include "tr_impl.h"

#include <string.h>

/* n 8-byte words: a few dozen at most, copied in line (a libc memcpy call
 * per array cost more than the copy; this file is built with
 * -fno-tree-loop-distribute-patterns, which keeps the loop a loop). */
static inline unsigned char *put_words(unsigned char *w, const uint64_t *src, size_t n) {
    uint64_t *d = (uint64_t *)(void *)w; /* records and their arrays are 8-aligned */
    for (size_t i = 0; i < n; i++) d[i] = src[i];
    return w + 8 * n;
}

/* +1 to a counter only its own thread changes (the writer only reads it):
 * no locked instruction on the producer path. */
static inline void bump(_Atomic uint64_t *c) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Reserves len bytes (a multiple of 8) in r, waiting for the writer when
 * full (tr_ring_wait); NULL (and a drop counted) when it cannot wait.
 * Published by ring_commit. */
static inline void *ring_reserve(struct tr_ring *r, uint32_t len, uint64_t stamp) {
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t pos = head & (r->size - 1), to_end = r->size - pos;
    int over = len > to_end, early = 0;                       /* a record never wraps */
    if (!over && pos >= r->wrap_at && head >= r->wrap_next) { /* start over early: a slow lap, the writer close */
        uint64_t lap = atomic_load_explicit(&g_tr.lap_ticks, memory_order_relaxed);
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (lap && (int64_t)(stamp - r->lap_stamp) >= (int64_t)lap && head - r->tail_seen <= TR_RING_NEAR &&
            len <= TR_RING_NEAR && atomic_load_explicit(&g_tr.writer_idle, memory_order_relaxed))
            over = early = 1; /* fits: what is in use, and len, is less than pos */
        else
            r->wrap_next = head + TR_RING_RECHECK;
    }
    uint64_t need = over ? to_end + len : len;
    if (head - r->tail_seen + need > r->size) /* full, as far as this thread knows: read the writer's tail */
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (len > r->size / 2 || (head - r->tail_seen + need > r->size && tr_ring_wait(r, need) < 0)) {
        bump(&r->dropped);
        return NULL;
    }
    if (over) { /* pad to the end, start over at 0 */
        struct tr_rec *pad = (struct tr_rec *)(r->data + pos);
        pad->size = (uint32_t)to_end;
        pad->kind = TR_EV_PAD;
        atomic_store_explicit(&r->head, head + to_end, memory_order_release);
        r->lap_stamp = stamp;
        /* Until the writer reads past the pad, this lap has only the room
         * before the writer's place in the last one (pos less what it had
         * left to read, 768 KiB or more): it is woken now, not at its next
         * step up to STEP_MS later, in which a burst filled that room and
         * dropped events. Once a MiB of records at most. */
        if (early) tr_writer_wake();
        return r->data;
    }
    return r->data + pos;
}

static inline void ring_commit(struct tr_ring *r, uint32_t len) {
    bump(&r->written);
    atomic_store_explicit(&r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + len, memory_order_release);
}

/* Keeps an op's stacks until its end. An op nested deeper than TR_OPS_KEPT
 * is not kept: what it makes takes the innermost kept op's stacks, which it
 * took itself at its begin. */
static void op_push(struct tr_ring *r, uint64_t op, const uint64_t *ips, int nips, const uint64_t *py, int npy) {
    if (r->nops == TR_OPS_KEPT) return;
    struct tr_op_stack *o = &r->ops[r->nops++];
    o->op = op;
    o->nips = nips <= TR_OPS_IPS && npy <= TR_OPS_PY ? nips : -1;
    o->npy = npy;
    if (o->nips >= 0) {
        put_words((unsigned char *)o->ips, ips, (size_t)nips);
        put_words((unsigned char *)o->py, py, 2 * (size_t)npy);
    }
}

/* An op ended: forget its stacks, and those of ops begun inside it that
 * never said they ended. */
static void op_pop(struct tr_ring *r, uint64_t op) {
    for (int i = r->nops - 1; i >= 0; i--)
        if (r->ops[i].op == op) {
            r->nops = i;
            return;
        }
}

void tr_ev_record(struct tr_ring *r, const struct tr_ev *ev, uint64_t seq, uint64_t stamp, const uint64_t *ips,
                  int nips, const uint64_t *py, int npy) {
    if (ev->kind == TR_EV_OP_BEGIN)
        op_push(r, ev->ints[0], ips, nips, py, npy);
    else if (ev->kind == TR_EV_OP_END)
        op_pop(r, ev->ints[0]);
    else if (ev->kind == TR_EV_MISMATCH || ev->kind == TR_EV_ERROR)
        r->nops = 0; /* the program's error handler runs next, and may leave the ops unended (longjmp) */
    size_t lens[TR_MAX_STRS];
    size_t bytes = sizeof(struct tr_rec) + 8 * (size_t)ev->nint + 8 * (size_t)nips + 16 * (size_t)npy;
    for (int i = 0; i < ev->nstr; i++) {
        size_t n = ev->strs[i] ? strlen(ev->strs[i]) : 0;
        lens[i] = n > TR_MAX_STR ? TR_MAX_STR : n;
        bytes += 2 + lens[i];
    }
    bytes = (bytes + 7) & ~(size_t)7;
    unsigned char *p = ring_reserve(r, (uint32_t)bytes, stamp);
    if (!p) { /* dropped (counted): the trace says from when */
        if (!atomic_load_explicit(&r->first_drop, memory_order_relaxed))
            atomic_store_explicit(&r->first_drop, seq, memory_order_relaxed);
        atomic_store_explicit(&r->last_drop, seq, memory_order_relaxed);
        return;
    }
    struct tr_rec *h = (struct tr_rec *)p;
    h->size = (uint32_t)bytes;
    h->kind = (uint16_t)ev->kind;
    h->nint = (uint16_t)ev->nint;
    h->nips = (uint16_t)nips;
    h->npy = (uint16_t)npy;
    h->nstr = (uint16_t)ev->nstr;
    h->flags = 0;
    h->seq = seq;
    h->stamp = stamp;
    unsigned char *w = p + sizeof *h;
    w = put_words(w, ev->ints, (size_t)ev->nint);
    w = put_words(w, ips, (size_t)nips);
    w = put_words(w, py, 2 * (size_t)npy);
    for (int i = 0; i < ev->nstr; i++) {
        uint16_t n = (uint16_t)lens[i];
        memcpy(w, &n, 2);
        if (n) memcpy(w + 2, ev->strs[i], n);
        w += 2 + n;
    }
    ring_commit(r, (uint32_t)bytes);
}

/* The calling thread's state every record reads: a probe building a record (the re-entry guard of probes.c,
 * read by the signal handler), and its stack policy (dtp_stack_policy). */
TR_HIDDEN _Thread_local int tr_in_emit;
TR_HIDDEN _Thread_local int tr_no_native;
