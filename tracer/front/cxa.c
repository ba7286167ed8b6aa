/* C++ throws in any traced binary: __cxa_throw and __cxa_rethrow are
 * interposed (LD_PRELOAD puts these definitions ahead of libstdc++'s), the
 * throw is recorded with its type, its message and the stacks, and the real
 * function then runs unchanged.
 *
 * The message comes from what() only for std::exception types, and that is
 * checked, never guessed: std::exception's type_info is asked whether it
 * would catch the thrown type (its __do_catch, the very test a catch clause
 * makes), which also adjusts the object pointer to the std::exception base.
 * That path is taken only under libstdc++ (its type_info vtable layout); on
 * another C++ runtime the type is recorded without a message.
 *
 * A rethrow of an exception this thread recorded is not recorded again
 * (see rethrow_news for the one exception): one exception, one record. A
 * rethrow of one thrown elsewhere (another thread, through
 * std::exception_ptr) is recorded, with its object.
 *
 * Throws are rate-limited per throw site (the caller's return address): the
 * first TR_THROWS_PER_SITE are recorded in full, later ones only counted, so
 * a program that throws in a loop stays cheap. The counts reach the trace's
 * throw_sites table at the end. Whether a message is a device mismatch is
 * decided later, by the writer. */
#include "front.h"

#include <stdlib.h>
#include <string.h>

/* A C++ runtime symbol, wherever the runtime was loaded (RTLD_LOCAL under
 * Python: a torch extension brings libstdc++ in outside the global scope),
 * looked up once per use site. */
#define CXX_SYM(name)                                                                                                  \
    ({                                                                                                                 \
        static _Atomic(void *) slot_;                                                                                  \
        tr_sym_once(&slot_, tr_cxx_libs, name, 0);                                                                     \
    })

#define TR_THROWS_PER_SITE 16
#define TR_SITES           4096 /* distinct throw sites counted (open addressing) */

static struct site {
    _Atomic uintptr_t addr;
    _Atomic uint64_t throws, recorded;
} g_sites[TR_SITES];

/* The site's slot, claimed on first use; NULL when the table is full. */
static struct site *site_of(uintptr_t addr) {
    unsigned h = (unsigned)((addr >> 2) * 2654435761u) & (TR_SITES - 1);
    for (unsigned i = 0; i < TR_SITES; i++, h = (h + 1) & (TR_SITES - 1)) {
        uintptr_t cur = atomic_load_explicit(&g_sites[h].addr, memory_order_acquire);
        if (cur == addr) return &g_sites[h];
        if (cur == 0) {
            uintptr_t expected = 0;
            if (atomic_compare_exchange_strong(&g_sites[h].addr, &expected, addr) || expected == addr)
                return &g_sites[h];
        }
    }
    return NULL;
}

/* The per-site counts, into the trace's throw_sites at its end. */
static void finish(const struct tr_front_sink *out) {
    for (unsigned i = 0; i < TR_SITES; i++) {
        uintptr_t a = atomic_load(&g_sites[i].addr);
        if (a) out->throw_site(a, atomic_load(&g_sites[i].throws), atomic_load(&g_sites[i].recorded));
    }
}
TR_FRONT(cxa) = {.name = "cxa", .finish = finish};

typedef int (*do_catch_fn)(const void *self, const void *thrown_type, void **obj, unsigned outer);
typedef const char *(*what_fn)(const void *self);

/* std::exception's type_info and its __do_catch, under libstdc++ only. */
static const void *exception_type(do_catch_fn *do_catch) {
    static const void *ti;
    static do_catch_fn dc;
    static _Atomic int state; /* 0 unknown, 1 found, 2 absent */
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == 0) {
        /* std::type_info::__do_catch exists only in libstdc++, whose type_info
         * vtable is {~D1, ~D0, __is_pointer_p, __is_function_p, __do_catch, ...} */
        const void *t = CXX_SYM("_ZTISt9exception");
        if (t && CXX_SYM("_ZNKSt9type_info10__do_catchEPKS_PPvj")) {
            ti = t;
            dc = (do_catch_fn)(*(void *const *const *)t)[4];
            s = 1;
        } else {
            s = 2;
        }
        atomic_store_explicit(&state, s, memory_order_release);
    }
    *do_catch = dc;
    return s == 1 ? ti : NULL;
}

static _Thread_local int in_hook; /* a throw from inside our own recording is not recorded */

/* The objects of the last throws recorded on this thread, and whether each
 * throw had a Python stack. A rethrow (`catch` + `throw;`, or
 * std::terminate's verbose handler asking what()) of one of them is the
 * same exception: it is not recorded again, unless it holds the GIL its
 * throw did not (PyTorch throws with the GIL released and rethrows after
 * taking it back): that record brings the exception's Python line, and the
 * report folds it into its throw. An address is reused only once its
 * exception is freed, and a rethrown one is alive, so the latest throw at
 * that address is the one rethrown. */
#define TR_RECENT_THROWS 8
static _Thread_local struct {
    void *obj;
    int python; /* recorded with a Python stack */
} recent[TR_RECENT_THROWS];
static _Thread_local unsigned recent_next;

/* Whether a rethrow of obj is to be recorded (marking it as having a
 * Python stack when this one brings it). */
static int rethrow_news(const void *obj) {
    for (unsigned i = 0; obj && i < TR_RECENT_THROWS; i++) {
        if (recent[i].obj != obj) continue;
        if (recent[i].python || !tr_py_held()) return 0;
        recent[i].python = 1;
        return 1;
    }
    return 1;
}

static __attribute__((noinline)) void record(void *obj, const void *tinfo, uintptr_t site_addr, int rethrow) {
    if (rethrow && !rethrow_news(obj)) return;
    if (!rethrow && obj) {
        unsigned k = recent_next++ % TR_RECENT_THROWS;
        recent[k].obj = obj;
        recent[k].python = tr_py_held();
    }
    struct site *site = site_of(site_addr);
    if (site) {
        uint64_t n = atomic_fetch_add_explicit(&site->throws, 1, memory_order_relaxed);
        if (n >= TR_THROWS_PER_SITE) return;
        atomic_fetch_add_explicit(&site->recorded, 1, memory_order_relaxed);
    }
    const char *type = "?", *message = NULL;
    if (tinfo) {
        type = ((const char *const *)tinfo)[1]; /* type_info::__name */
        if (type && *type == '*') type++;       /* local types carry a leading '*' */
    }
    do_catch_fn do_catch;
    const void *exc = exception_type(&do_catch);
    void *base = obj;
    if (exc && tinfo && obj && do_catch(exc, tinfo, &base, 1) && base) {
        what_fn what = (what_fn)(*(void *const *const *)base)[2]; /* std::exception vtable: {~D1, ~D0, what} */
        message = what(base);
    }
    struct tr_ev e = {.kind = TR_EV_THROW, .nint = 3, .nstr = 2, .stack = 1, .skip_own = 1};
    e.ints[0] = (uint64_t)rethrow;
    e.ints[1] = site_addr;
    e.ints[2] = (uint64_t)(uintptr_t)obj; /* links a rethrow to its throw */
    e.strs[0] = type;
    e.strs[1] = message;
    tr_ev_emit(&e);
}

/* The object of the exception being handled, under libstdc++ on x86_64:
 * __cxa_get_globals()->caughtExceptions is its __cxa_exception header (112
 * bytes: the type at offset 0, the unwinder's header at 80 whose class is
 * "GNUCC++\0" for a primary exception) and the object follows it. Checked
 * against the current type and the class, NULL when anything differs. */
static void *current_object(const void *tinfo) {
#if defined(__x86_64__)
    void **(*globals)(void) = (void **(*)(void))CXX_SYM("__cxa_get_globals");
    unsigned char *hdr = globals ? (unsigned char *)*globals() : NULL;
    uint64_t cls;
    if (!hdr) return NULL;
    memcpy(&cls, hdr + 80, 8);
    if (*(const void **)hdr != tinfo || cls != 0x474e5543432b2b00ull) return NULL;
    return hdr + 112;
#else
    (void)tinfo;
    return NULL;
#endif
}

typedef void (*throw_fn)(void *, void *, void (*)(void *));
typedef void (*rethrow_fn)(void);

TR_EXPORT __attribute__((noreturn)) void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *)) {
    static _Atomic(void *) real;
    throw_fn f;
    *(void **)&f = tr_sym_once(&real, tr_cxx_libs, "__cxa_throw", 1);
    if (!f) abort(); /* nothing can throw without it; the program would have died the same way */
    if (!in_hook && atomic_load_explicit(&g_tr.enabled, memory_order_relaxed)) {
        in_hook = 1;
        record(obj, tinfo, (uintptr_t)__builtin_return_address(0), 0);
        in_hook = 0;
        tr_cfacts_flush(); /* the throw that follows a mismatch the libtorch observer saw */
    }
    f(obj, tinfo, dest);
    __builtin_unreachable();
}

TR_EXPORT __attribute__((noreturn)) void __cxa_rethrow(void) {
    static _Atomic(void *) real;
    rethrow_fn f;
    *(void **)&f = tr_sym_once(&real, tr_cxx_libs, "__cxa_rethrow", 1);
    if (!f) abort();
    if (!in_hook && atomic_load_explicit(&g_tr.enabled, memory_order_relaxed)) {
        in_hook = 1;
        /* The exception being rethrown: the one currently handled. */
        const void *(*type)(void) = (const void *(*)(void))CXX_SYM("__cxa_current_exception_type");
        const void *tinfo = type ? type() : NULL;
        record(tinfo ? current_object(tinfo) : NULL, tinfo, (uintptr_t)__builtin_return_address(0), 1);
        in_hook = 0;
    }
    f();
    __builtin_unreachable();
}
