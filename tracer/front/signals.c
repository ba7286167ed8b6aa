/* Fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the handler
 * records the signal and its stack, asks the writer to commit everything
 * (waiting up to 2 s), then restores the previous action and lets the
 * process die as it would have: the old handler runs, or the signal is
 * delivered again with the default action. Each recording thread gets an
 * alternate signal stack, so a stack overflow is recorded too. */
#include "tr_impl.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>

static const int g_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NSIGS ((int)(sizeof g_sigs / sizeof g_sigs[0]))
static struct sigaction g_old[NSIGS];
static _Atomic int g_in_handler;

static int slot_of(int sig) {
    for (int i = 0; i < NSIGS; i++)
        if (g_sigs[i] == sig) return i;
    return -1;
}

static void handler(int sig, siginfo_t *info, void *uctx) {
    int slot = slot_of(sig);
    if (!atomic_exchange(&g_in_handler, 1)) {
        atomic_store(&g_tr.fatal_signal, sig);
        if (!tr_in_emit && atomic_load(&g_tr.enabled)) { /* a record half-built on this thread would be torn */
            struct tr_ev e = {.kind = TR_EV_SIGNAL, .nint = 3, .stack = 1, .no_python = 1};
            e.ints[0] = (uint64_t)sig;
            e.ints[1] = (uint64_t)(int64_t)(info ? info->si_code : 0);
            e.ints[2] = (uint64_t)(uintptr_t)(info ? info->si_addr : 0);
            tr_ev_emit(&e);
        }
        tr_writer_flush_now();
    }
    /* die as the program would have without us */
    if (slot >= 0) sigaction(sig, &g_old[slot], NULL);
    struct sigaction *old = slot >= 0 ? &g_old[slot] : NULL;
    if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, info, uctx);
    } else if (old && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else if (!info || info->si_code <= 0 || sig == SIGABRT) {
        /* sent by kill/raise/abort: returning would not repeat it */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
        raise(sig);
    }
    /* a fault returns and faults again, now with the default action */
}

/* Once per process, at the tracer's first start. */
static void signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(g_sigs[i], NULL, &cur) == 0 && cur.sa_handler == SIG_IGN) continue; /* keep ignoring */
        sigaction(g_sigs[i], &sa, &g_old[i]);
    }
}

/* Each thread's own signal stack, made with its ring. */
static void signals_thread_init(struct tr_ring *r) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return; /* the program has its own */
    size_t bytes = 64 * 1024;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    stack_t ss = {.ss_sp = m, .ss_size = bytes, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(m, bytes);
        return;
    }
    r->altstack = m;
    r->altstack_bytes = bytes;
}

TR_FRONT(signals) = {.name = "signals", .once = signals_install, .thread = signals_thread_init};
