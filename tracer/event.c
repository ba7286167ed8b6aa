/* Builds one record on the calling thread's ring: stacks first (they may
 * emit records of their own, for new Python code objects), then the record
 * itself with the next sequence number. The producer path: no malloc, stdio,
 * locks or SQLite; a full ring drops the record and counts it. */
#include "tr_impl.h"

#include <string.h>

/* n 8-byte words: a few dozen at most, copied in line (a libc memcpy call
 * per array cost more than the copy). Not turned back into a call: */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static inline unsigned char *
put_words(unsigned char *w, const uint64_t *src, size_t n) {
    uint64_t *d = (uint64_t *)(void *)w; /* records and their arrays are 8-aligned */
    for (size_t i = 0; i < n; i++) d[i] = src[i];
    return w + 8 * n;
}

void tr_ev_emit(struct tr_ev *ev) {
    if (!atomic_load_explicit(&g_tr.enabled, memory_order_relaxed)) return;
    struct tr_ring *r = tr_ring_self();
    if (!r) return;
    uint64_t ips[TR_MAX_DEPTH], py[2 * TR_MAX_PY];
    int nips = 0, npy = 0;
    if (ev->stack) {
        nips = tr_stack_capture(ips, g_tr.cfg.depth, ev->skip + 1, ev->skip_own);
        if (g_tr.cfg.python && !ev->no_python) npy = tr_py_capture(py, TR_MAX_PY);
    }
    size_t lens[TR_MAX_STRS];
    size_t bytes = sizeof(struct tr_rec) + 8 * (size_t)ev->nint + 8 * (size_t)nips + 16 * (size_t)npy;
    for (int i = 0; i < ev->nstr; i++) {
        size_t n = ev->strs[i] ? strlen(ev->strs[i]) : 0;
        lens[i] = n > TR_MAX_STR ? TR_MAX_STR : n;
        bytes += 2 + lens[i];
    }
    bytes = (bytes + 7) & ~(size_t)7;
    unsigned char *p = tr_ring_reserve(r, (uint32_t)bytes);
    if (!p) return;
    struct tr_rec *h = (struct tr_rec *)p;
    h->size = (uint32_t)bytes;
    h->kind = (uint16_t)ev->kind;
    h->nint = (uint16_t)ev->nint;
    h->nips = (uint16_t)nips;
    h->npy = (uint16_t)npy;
    h->nstr = (uint16_t)ev->nstr;
    h->flags = 0;
    h->seq = atomic_fetch_add_explicit(&g_tr.next_seq, 1, memory_order_relaxed);
    h->t_ns = tr_now_ns() - g_tr.t0;
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
    tr_ring_commit(r, (uint32_t)bytes);
}
