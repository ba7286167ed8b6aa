/* Event times. A producer stamps each record with the CPU's time-stamp
 * counter when the kernel itself keeps time with it (clocksource "tsc": the
 * kernel checked that it runs at a constant rate and in step on every CPU),
 * else with CLOCK_MONOTONIC. Reading the counter costs ~10 ns here, the
 * vDSO's clock_gettime ~23 ns: on mlp_train's 300 k events a second, 0.4% of
 * the program's time. The writer turns counter values into nanoseconds since
 * the trace began by interpolating between (counter, CLOCK_MONOTONIC) pairs
 * it takes as records come: exact at each pair, monotonic in between.
 * DEVTRACE_CLOCK=monotonic stamps with clock_gettime everywhere. */
#include "tr_impl.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t tr_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tr_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#include <x86intrin.h>

/* The kernel keeps time with the TSC. */
static int kernel_uses_tsc(void) {
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n == 4 && memcmp(buf, "tsc\n", 4) == 0;
}

/* A (counter, CLOCK_MONOTONIC) pair: the counter read on both sides of the
 * clock, the pair kept from the tightest of three tries. */
static struct tr_clock_pair pair_now(void) {
    struct tr_clock_pair best = {0, 0};
    uint64_t gap = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = __rdtsc(), ns = tr_now_ns(), b = __rdtsc();
        if (b - a < gap) gap = b - a, best.tsc = a + (b - a) / 2, best.ns = ns;
    }
    return best;
}
#else
static int kernel_uses_tsc(void) { return 0; }
static struct tr_clock_pair pair_now(void) {
    struct tr_clock_pair p = {0, tr_now_ns()};
    return p;
}
#endif

void tr_clock_start(void) {
    const char *env = getenv("DEVTRACE_CLOCK");
    g_tr.tsc = !(env && strcmp(env, "monotonic") == 0) && kernel_uses_tsc();
    g_tr.start = pair_now();
    g_tr.t0 = g_tr.start.ns;
}

/* TR_RING_LAP_MS in stamps, for the producers' rule on starting over early
 * (event.c): ns themselves with the monotonic clock; with the counter, its
 * rate measured over the trace's first 20 ms or more. */
void tr_clock_calibrate(void) {
    if (atomic_load_explicit(&g_tr.lap_ticks, memory_order_relaxed)) return;
    uint64_t lap_ns = (uint64_t)TR_RING_LAP_MS * 1000000u;
    if (!g_tr.tsc) {
        atomic_store(&g_tr.lap_ticks, lap_ns);
        return;
    }
    struct tr_clock_pair p = pair_now();
    if (p.ns < g_tr.start.ns + 20000000u || p.tsc <= g_tr.start.tsc) return;
    double per_ns = (double)(p.tsc - g_tr.start.tsc) / (double)(p.ns - g_tr.start.ns);
    atomic_store(&g_tr.lap_ticks, (uint64_t)(per_ns * (double)lap_ns) + 1);
}

void tr_clock_conv_init(struct tr_clock_conv *c) {
    memset(c, 0, sizeof *c);
    c->pairs[0] = g_tr.start;
    c->n = 1;
    c->tsc = g_tr.tsc;
    c->t0 = g_tr.t0;
}

/* ns of pair p since the start */
static int64_t since(const struct tr_clock_conv *c, const struct tr_clock_pair *p) { return (int64_t)(p->ns - c->t0); }

int64_t tr_clock_ns(struct tr_clock_conv *c, uint64_t stamp) {
    if (!c->tsc) return (int64_t)(stamp - c->t0);
    int last = (c->first + c->n - 1) % TR_CLOCK_PAIRS;
    if (stamp > c->pairs[last].tsc) { /* newer than every pair: take one now */
        struct tr_clock_pair p = pair_now();
        if (p.tsc <= c->pairs[last].tsc || p.ns <= c->pairs[last].ns) /* the counter went wrong: the last time */
            return since(c, &c->pairs[last]);
        if (c->n == TR_CLOCK_PAIRS) c->first = (c->first + 1) % TR_CLOCK_PAIRS, c->n--;
        last = (c->first + c->n) % TR_CLOCK_PAIRS;
        c->pairs[last] = p;
        c->n++;
    }
    /* the segment [a, b] holding stamp, newest first (records come nearly in
     * order); one older than every pair kept extends the oldest segment */
    int k = c->n - 1;
    while (k > 1 && c->pairs[(c->first + k - 1) % TR_CLOCK_PAIRS].tsc > stamp) k--;
    if (k == 0) return since(c, &c->pairs[c->first]); /* one pair only: it is the start */
    const struct tr_clock_pair *a = &c->pairs[(c->first + k - 1) % TR_CLOCK_PAIRS];
    const struct tr_clock_pair *b = &c->pairs[(c->first + k) % TR_CLOCK_PAIRS];
    double x = ((double)(int64_t)(stamp - a->tsc)) * (double)(b->ns - a->ns) / (double)(b->tsc - a->tsc);
    int64_t ns = since(c, a) + (int64_t)x;
    if (ns > since(c, b)) ns = since(c, b); /* clamped into the segment: monotonic across segments */
    if (ns < 0) ns = 0;
    return ns;
}
