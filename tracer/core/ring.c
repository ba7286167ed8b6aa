/* Per-thread rings: each thread that records gets its own mmap'd ring on
 * first use, published on a lock-free list for the writer. The producer
 * (the thread) moves head, in line in event.c; the writer moves tail; a
 * producer that finds its ring full waits for the writer, bounded
 * (tr_ring_wait), or in lossy mode drops the record and counts it. No
 * malloc, stdio or locks here. */
#include "tr_impl.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

_Thread_local struct tr_ring *tr_tl_ring; /* this thread's ring */
static _Thread_local int tl_ring_failed;  /* mmap failed once: stop trying */
static pthread_key_t g_exit_key;          /* marks rings of exited threads */
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *p) {
    struct tr_ring *r = p;
    atomic_store(&r->state, TR_RING_EXITED);
    if (r->altstack) { /* stop using it before the writer may unmap it */
        stack_t ss = {.ss_flags = SS_DISABLE};
        sigaltstack(&ss, NULL);
    }
}

static void make_key(void) { pthread_key_create(&g_exit_key, on_thread_exit); }

#define RING_HDR   4096u
#define HUGE_PAGE  (2u << 20)
#define RING_EAGER (512u << 10) /* data populated by the thread itself */
#define RING_STEP  (4u << 20)   /* kept populated ahead of the producer by the writer */
#define RING_WRAP  (1u << 20)   /* where the producer starts over early (below) */
#define RING_FAR   (3u << 19)   /* past it, the producer is not expected to start over soon */
_Static_assert(sizeof(struct tr_ring) <= RING_HDR, "a ring's header fits its page");
_Static_assert(RING_WRAP >= 2 * TR_RING_NEAR && RING_WRAP < RING_FAR && RING_FAR < HUGE_PAGE,
               "starting over early leaves room, in the first 2 MiB");

/* Populates [p, p + n): writable pages mapped now, their contents untouched
 * (so the writer may do it while the producer writes). 0 on success. */
static int populate(unsigned char *p, size_t n) {
#ifdef MADV_POPULATE_WRITE
    return madvise(p, n, MADV_POPULATE_WRITE);
#else
    (void)p, (void)n;
    return -1;
#endif
}

/* A ring's memory: a header page, then `size` bytes of data, 2 MiB-aligned.
 * A page fault on the producer path costs more than the event, so pages are
 * mapped before use: the first RING_EAGER bytes here, the rest by the writer
 * thread (tr_ring_populate), which keeps the pages ahead of the producer
 * mapped (a short program never maps the rest). Past its first 2 MiB the
 * ring asks for transparent huge pages, which the writer reads faster (2.4 M
 * events/s in the burst benchmark; 1.9-2.4 in 4 KiB pages). Populating all
 * 8 MiB here took 2.6-3.6 ms of a short program's start in 4 KiB pages, and
 * in huge pages 0.4 ms but 1.6-16 ms whenever the kernel compacted memory to
 * find them: that wait is now the writer's.
 *
 * The producer starts over at the ring's start early (event.c), once it is
 * past RING_WRAP, if the lap took TR_RING_LAP_MS or more (1 MiB at 64 MB/s
 * or less) and the writer waits in poll at most TR_RING_NEAR bytes behind;
 * it then wakes the writer. A program the writer keeps up with goes round
 * its first 2 MiB, and the rest is only mapped when it does not. Mapping is
 * not free: the kernel zeroes each new page, 2-3 ms a MiB on this VM, on
 * the writer's CPU, and the pages stay in the program's memory. mlp_train,
 * which puts 13 MiB through its ring, had all 8 MiB mapped (13-14 ms of the
 * writer's time); it has 2. Its wall time did not measurably change (40
 * rounds each way, paired: 0.99-1.01). Until the writer reads past the pad,
 * the new lap has only the room before the writer's place in the last one
 * (768 KiB or more): the three conditions keep a burst from filling it
 * first. Starting over at any writer distance, at any rate and with no
 * wake, dropped 7110 events of bench_probe's burst in one run of several;
 * with them, none in 24. Returns the data, or NULL. */
static unsigned char *map_ring(size_t size) {
    size_t align = size >= HUGE_PAGE ? HUGE_PAGE : 4096, span = RING_HDR + size + align;
    unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    unsigned char *data = (unsigned char *)(((uintptr_t)m + RING_HDR + align - 1) & ~(uintptr_t)(align - 1));
    unsigned char *lo = data - RING_HDR, *hi = data + size;
    if (lo > m) munmap(m, (size_t)(lo - m));
    if (m + span > hi) munmap(hi, (size_t)(m + span - hi));
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE && size > HUGE_PAGE) madvise(data + HUGE_PAGE, size - HUGE_PAGE, MADV_HUGEPAGE);
#endif
    size_t eager = RING_HDR + (size < RING_EAGER ? size : RING_EAGER);
    if (populate(lo, eager) < 0) /* nothing written there yet: touching is safe */
        for (size_t off = 0; off < eager; off += 4096) ((volatile unsigned char *)lo)[off] = 0;
    return data;
}

/* Maps the pages ahead of the producer: the first 2 MiB while it is before
 * RING_FAR (it goes round them while the writer keeps up: on mlp_train it
 * got 0.2-0.9 MiB past RING_WRAP before it started over), then RING_STEP
 * ahead of it. */
void tr_ring_populate(struct tr_ring *r) {
    if (r->writer_mapped == UINT64_MAX) return;
    uint64_t at = atomic_load_explicit(&r->head, memory_order_relaxed) & (r->size - 1) & ~(uint64_t)4095;
    uint64_t from = r->writer_mapped > at ? r->writer_mapped : at;
    uint64_t to = at < RING_FAR ? HUGE_PAGE : at + RING_STEP;
    if (to > r->size) to = r->size;
    if (from < RING_EAGER) from = RING_EAGER;
    if (atomic_load(&r->state) != TR_RING_LIVE ||               /* exited: nothing more comes */
        (from < to && populate(r->data + from, to - from) < 0)) /* not there: the producer faults them in */
        to = UINT64_MAX;
    if (to > r->writer_mapped) r->writer_mapped = to >= r->size ? UINT64_MAX : to;
}

/* Lossless by default, as heaptrack: a producer that finds its ring full
 * wakes the writer and sleeps in short steps until the writer has read
 * enough. Nothing is held while it waits (no lock, no malloc), so the
 * writer never waits for it. Bounded: a writer that reads nothing of this
 * ring for TR_RING_STUCK_MS is taken as stuck; tracing goes off with one
 * warning (the trace says why) and the program goes on. Never waited for:
 * in lossy mode, on the writer's own thread, with no writer running (a
 * fork child before its own starts) or once the trace is being finished.
 * The writer takes no lock a producer may hold while it records: inside
 * dlopen (a library's constructor) the loader holds its load lock, while
 * the writer's look at the module list (dl_iterate_phdr) takes only the
 * loader's write lock, held while the list itself changes, when no
 * constructor runs (tested: 300,000 events from a constructor through a
 * 64 KiB ring, none dropped). */
int tr_ring_wait(struct tr_ring *r, uint64_t need) {
    if (g_tr.cfg.lossy || !g_tr.writer_running || pthread_equal(pthread_self(), g_tr.writer)) return -1;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t start = tr_now_ns(), since = start, last = r->tail_seen;
    int rc = -1;
    for (unsigned i = 0;; i++) {
        if (atomic_load(&g_tr.stop) || atomic_load(&g_tr.writer_gone) || !atomic_load(&g_tr.enabled)) break;
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire), now = tr_now_ns();
        r->tail_seen = tail;
        if (head - tail + need <= r->size) {
            rc = 0;
            break;
        }
        if (tail != last)
            last = tail, since = now;
        else if (now - since >= (uint64_t)TR_RING_STUCK_MS * 1000000u) {
            tr_fail("the trace writer read nothing of thread %lld's full ring for %d ms", (long long)r->tid,
                    TR_RING_STUCK_MS);
            break;
        }
        if (i % 64 == 0) tr_writer_wake(); /* at once, then again now and then: a wake is a write to a pipe */
        struct timespec ts = {0, i < 16 ? 20000 : 200000};
        nanosleep(&ts, NULL);
    }
    atomic_store_explicit(&r->waits, atomic_load_explicit(&r->waits, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_store_explicit(&r->wait_ns, atomic_load_explicit(&r->wait_ns, memory_order_relaxed) + (tr_now_ns() - start),
                          memory_order_relaxed);
    return rc;
}

struct tr_ring *tr_ring_make(void) {
    struct tr_ring *r = NULL;
    if (tl_ring_failed) return r;
    unsigned char *data = map_ring(g_tr.cfg.ring_bytes);
    if (!data) {
        tl_ring_failed = 1;
        return NULL; /* this thread's events are lost; counted nowhere but harmless */
    }
    r = (struct tr_ring *)(data - RING_HDR);
    r->size = g_tr.cfg.ring_bytes;
    r->wrap_at = r->size > HUGE_PAGE ? RING_WRAP : UINT64_MAX; /* a smaller ring has all its pages mapped anyway */
    r->lap_stamp = tr_stamp();
    r->data = data;
    r->map_bytes = RING_HDR + g_tr.cfg.ring_bytes;
    r->tid = tr_gettid();
    pthread_getname_np(pthread_self(), r->name, sizeof r->name);
    tr_fronts_each(f) if (f->thread) f->thread(r); /* its signal stack */
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_exit_key, r);
    struct tr_ring *old = atomic_load(&g_tr.rings);
    do r->next = old;
    while (!atomic_compare_exchange_weak(&g_tr.rings, &old, r));
    tr_tl_ring = r;
    tr_writer_wake(); /* the writer maps the rest now */
    return r;
}

void tr_ring_forget_all(void) {
    /* After fork the child holds private copies of the parent's rings: their
     * events belong to the parent's trace. Unmap them all but this thread's
     * own copy, which is emptied and kept (its TLS still points at it). */
    struct tr_ring *r = atomic_load(&g_tr.rings), *mine = tr_tl_ring;
    while (r) {
        struct tr_ring *next = r->next;
        if (r != mine) munmap(r, r->map_bytes);
        r = next;
    }
    if (mine) {
        atomic_store(&mine->tail, atomic_load(&mine->head));
        mine->tail_seen = atomic_load(&mine->tail);
        atomic_store(&mine->dropped, 0);
        atomic_store(&mine->written, 0);
        atomic_store(&mine->waits, 0);
        atomic_store(&mine->wait_ns, 0);
        atomic_store(&mine->first_drop, 0);
        atomic_store(&mine->last_drop, 0);
        mine->tid = tr_gettid();
        mine->next = NULL;
        mine->writer_id = 0, mine->writer_state = 0, mine->writer_mapped = 0; /* the parent writer's bookkeeping */
        mine->writer_dropped = mine->writer_written = 0;
    }
    atomic_store(&g_tr.rings, mine);
}

/* The writer steps now: a byte into its wake pipe (signal-safe; the pipe is the writer's, made when it
 * starts, in g_tr). On the producer's side, as every producer wakes the writer and the writer wakes no one. */
void tr_writer_wake(void) {
    if (g_tr.wake_fd[1] >= 0 && write(g_tr.wake_fd[1], "w", 1) < 0) { /* full: it is woken already */
    }
}
