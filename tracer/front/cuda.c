/* The CUDA runtime boundary of any dynamically linked program: the
 * allocation, copy, set, launch and synchronisation calls of cudart are
 * interposed (LD_PRELOAD puts these definitions first), each forwarded to
 * the real function, and the outermost call of a nested chain recorded with
 * what it did: direction, bytes, both pointers, pageable or pinned host
 * memory, device, stream, kernel, return code, time, and the stacks.
 *
 * Programs built with a per-thread default stream call the _ptds/_ptsz
 * forms, so those are wrapped too. The real function is found with
 * dlsym(RTLD_NEXT); when cudart was loaded RTLD_LOCAL (ctypes, a Python
 * extension module) that finds nothing, and the loaded libcudart is looked
 * up by name instead (dl_iterate_phdr, then dlopen(RTLD_NOLOAD) and dlsym
 * on its own handle). Nothing here needs the CUDA toolkit to build: the few
 * types used are the runtime's ABI, restated.
 *
 * Pointer kinds come from the real cudaPointerGetAttributes, which since
 * CUDA 11 succeeds for pageable memory (type "unregistered"); it is only
 * asked about pointers the program itself passed to a copy.
 *
 * By default only what the viewer reads is recorded: copies, sets,
 * allocations, synchronisations, device switches. Kernel launches and frees
 * are forwarded and counted (no stack, no record: the count goes into the
 * trace's meta at exit); DEVTRACE_CUDA_ACTIVITY=1 records them too, as it
 * turns on CUPTI's launch callbacks and activity records (cupti.c). */
#include "front.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared with init.c and cupti.c; declared here while tr_impl.h is being
 * reorganised (move them there): this process's trace, NULL when it has
 * none; whether launches and frees are recorded (1) or counted (0). */

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct {
    unsigned x, y, z;
} dim3;
struct ptr_attrs { /* struct cudaPointerAttributes (CUDA 11 to 13) */
    int type;      /* 0 unregistered, 1 host (pinned), 2 device, 3 managed */
    int device;
    void *device_pointer, *host_pointer;
    long reserved[8];
};

enum { CU_UNKNOWN = 999 /* cudaErrorUnknown */ };
enum { /* cuda_calls.kind: common/vocab.h's numbers, short names for the wrappers' tables */
    K_MEMCPY = DT_CUDA_MEMCPY,
    K_MALLOC = DT_CUDA_MALLOC,
    K_FREE = DT_CUDA_FREE,
    K_MEMSET = DT_CUDA_MEMSET,
    K_LAUNCH = DT_CUDA_LAUNCH,
    K_SYNC = DT_CUDA_SYNC,
    K_SET_DEVICE = DT_CUDA_SET_DEVICE
};
enum { H_NONE = -1, H_PAGEABLE = 0, H_PINNED = 1, H_MANAGED = 2 };

/* ---------------------------------------------------------------- resolving */

static const char *const cudart_libs[] = {"libcudart.so", NULL};

/* The real function called name, looked up once into *slot; NULL when no
 * loaded cudart has it (with one warning when `warn`: the program called it). */
static void *real_fn(_Atomic(void *) *slot, const char *name, int warn) {
    void *fn = tr_sym_once(slot, cudart_libs, name, 1);
    if (!fn && warn)
        tr_info("%s was called but no loaded libcudart defines it; the call fails with cudaErrorUnknown", name);
    return fn;
}

#define REAL(name, type)                                                                                               \
    static _Atomic(void *) real_##name;                                                                                \
    type real;                                                                                                         \
    *(void **)&real = real_fn(&real_##name, #name, 1);                                                                 \
    if (!real) return CU_UNKNOWN;

/* Helpers the wrappers call into the real runtime for; 0 when missing. */
static int attrs_of(const void *p, struct ptr_attrs *a) {
    static _Atomic(void *) slot;
    cudaError_t (*f)(struct ptr_attrs *, const void *);
    *(void **)&f = real_fn(&slot, "cudaPointerGetAttributes", 0);
    memset(a, 0, sizeof *a);
    return f && f(a, p) == 0;
}

static int current_device(void) {
    static _Atomic(void *) slot;
    cudaError_t (*f)(int *);
    *(void **)&f = real_fn(&slot, "cudaGetDevice", 0);
    int d = -1;
    return f && f(&d) == 0 ? d : -1;
}

/* ---------------------------------------------------------------- what is recorded */

/* DEVTRACE_CUDA_ACTIVITY (DEVTRACE_CUPTI_ACTIVITY, its older name, when it
 * is not set): 1 records every launch and free and CUPTI's activity
 * records; 0, the default, counts launches and frees instead. Read once. */
static _Atomic int g_activity = -1;

static int activity_from_env(void) {
    const char *name = "DEVTRACE_CUDA_ACTIVITY", *v = getenv(name);
    if (!v || !*v) name = "DEVTRACE_CUPTI_ACTIVITY", v = getenv(name);
    if (!v || !*v || !strcmp(v, "0")) return 0;
    if (!strcmp(v, "1")) return 1;
    tr_info("warning: %s=%s is not 0 or 1; kernel launches are counted, not recorded (the default)", name, v);
    return 0;
}

int tr_cuda_activity(void) {
    int on = atomic_load_explicit(&g_activity, memory_order_relaxed);
    if (on >= 0) return on;
    int expected = -1;
    on = activity_from_env();
    if (!atomic_compare_exchange_strong(&g_activity, &expected, on)) on = expected; /* another thread read it */
    return on;
}

/* Calls forwarded without a record (activity off), by kind: alone on their
 * line, which every launch takes for its add. */
static _Alignas(64) _Atomic uint64_t g_counted[8];

static void reset_counted(void) {
    for (size_t i = 0; i < sizeof g_counted / sizeof g_counted[0]; i++) atomic_store(&g_counted[i], 0);
}

__attribute__((constructor)) static void cuda_counts_init(void) { pthread_atfork(NULL, NULL, reset_counted); }

/* Launches and frees forwarded without a record, into the trace's meta at its end (so nothing is dropped
 * silently). */
static void finish(const struct tr_front_sink *out) {
    uint64_t launches = atomic_load(&g_counted[K_LAUNCH]), frees = atomic_load(&g_counted[K_FREE]);
    if (launches) out->meta_int("cuda_launches_counted", (int64_t)launches);
    if (frees) out->meta_int("cuda_frees_counted", (int64_t)frees);
}
TR_FRONT(cuda) = {.name = "cuda", .finish = finish};

/* ---------------------------------------------------------------- recording */

/* CUDA calls in progress on this thread: CUPTI's callbacks (cupti.c) skip
 * a call made under a wrapper, which records it, and hand the wrapper the
 * call's CUPTI correlation id, which joins its activity records to the row. */
_Thread_local int tr_cuda_depth;
_Thread_local uint32_t tr_cuda_corr;

struct call {
    const char *api;
    int kind, dir, host, device, peer;
    uint64_t bytes;
    const void *dst, *src, *func;
    cudaStream_t stream;
};

static void emit(const struct call *c, cudaError_t rc, uint64_t t0) {
    struct tr_ev e = {.kind = TR_EV_CUDA, .nint = 13, .nstr = 1, .stack = 1, .skip_own = 1};
    e.ints[0] = (uint64_t)c->kind;
    e.ints[1] = (uint64_t)(int64_t)c->dir;
    e.ints[2] = c->bytes;
    e.ints[3] = (uint64_t)(uintptr_t)c->dst;
    e.ints[4] = (uint64_t)(uintptr_t)c->src;
    e.ints[5] = (uint64_t)(int64_t)c->host;
    e.ints[6] = (uint64_t)(int64_t)c->device;
    e.ints[7] = (uint64_t)(int64_t)c->peer;
    e.ints[8] = (uint64_t)(uintptr_t)c->stream;
    e.ints[9] = (uint64_t)(uintptr_t)c->func;
    e.ints[10] = (uint64_t)(int64_t)rc;
    e.ints[11] = tr_now_ns() - t0;
    e.ints[12] = tr_cuda_corr;
    e.strs[0] = c->api;
    tr_ev_emit(&e);
}

static int is_device(int type) { return type == 2 || type == 3; }

static int host_kind(int type) { return type == 1 ? H_PINNED : type == 3 ? H_MANAGED : H_PAGEABLE; }

/* Fills direction, host memory kind and devices of a copy from its
 * pointers; kind is the cudaMemcpyKind (4, Default, means "inferred"). */
static void classify(struct call *c, int kind) {
    struct ptr_attrs d, s;
    int have_d = attrs_of(c->dst, &d), have_s = attrs_of(c->src, &s);
    if (kind >= 0 && kind <= 3)
        c->dir = kind;
    else if (have_d && have_s)
        c->dir = (is_device(s.type) ? 2 : 0) | (is_device(d.type) ? 1 : 0);
    else
        c->dir = -1;
    c->host = H_NONE;
    c->device = -1;
    c->peer = -1;
    if (c->dir == 1 || c->dir == 0) c->host = have_s ? host_kind(s.type) : H_NONE;
    if (c->dir == 2) c->host = have_d ? host_kind(d.type) : H_NONE;
    if ((c->dir == 1 || c->dir == 3) && have_d && is_device(d.type)) c->device = d.device;
    if (c->dir == 2 && have_s && is_device(s.type)) c->device = s.device;
    if (c->dir == 3 && have_s && is_device(s.type)) c->peer = s.device;
    if (c->device < 0) c->device = current_device(); /* only when no pointer said */
}

/* Runs one wrapped call: `call_expr` is the real function applied to the
 * arguments, run with the depth raised so nested cudart calls are not
 * recorded; `after` completes the record from the call's results. */
#define RUN(c, call_expr, after)                                                                                       \
    do {                                                                                                               \
        int outer_ = tr_cuda_depth++ == 0 && atomic_load_explicit(&g_tr.enabled, memory_order_relaxed);                \
        if (outer_) tr_cuda_corr = 0;                                                                                  \
        uint64_t t0_ = outer_ ? tr_now_ns() : 0;                                                                       \
        cudaError_t rc_ = (call_expr);                                                                                 \
        if (outer_) {                                                                                                  \
            after;                                                                                                     \
            emit(&(c), rc_, t0_);                                                                                      \
        }                                                                                                              \
        tr_cuda_depth--;                                                                                               \
        return rc_;                                                                                                    \
    } while (0)

/* A call of a kind recorded only with DEVTRACE_CUDA_ACTIVITY=1: without
 * it, forwarded and counted, with no clock, stack or record. The depth is
 * still raised, so that a call CUPTI reports from inside it (a driver copy
 * a launch makes) is not taken for one of the program's. */
#define COUNT_OR_RUN(c, call_expr, after)                                                                              \
    do {                                                                                                               \
        if (!tr_cuda_activity()) {                                                                                     \
            atomic_fetch_add_explicit(&g_counted[(c).kind], 1, memory_order_relaxed);                                  \
            tr_cuda_depth++;                                                                                           \
            cudaError_t rc_ = (call_expr);                                                                             \
            tr_cuda_depth--;                                                                                           \
            return rc_;                                                                                                \
        }                                                                                                              \
        RUN(c, call_expr, after);                                                                                      \
    } while (0)

/* ---------------------------------------------------------------- memory */

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*malloc_flags_fn)(void **, size_t, unsigned);
typedef cudaError_t (*malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*free_fn)(void *);
typedef cudaError_t (*free_async_fn)(void *, cudaStream_t);

#define ALLOC_RESULT(c, p, rc_host)                                                                                    \
    do {                                                                                                               \
        (c).dst = (p) ? *(p) : NULL;                                                                                   \
        (c).device = (rc_host) ? -1 : current_device();                                                                \
    } while (0)

TR_EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
    REAL(cudaMalloc, malloc_fn);
    struct call c = {.api = "cudaMalloc", .kind = K_MALLOC, .dir = -1, .host = H_NONE, .peer = -1, .bytes = n};
    RUN(c, real(p, n), ALLOC_RESULT(c, p, 0));
}

TR_EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags) {
    REAL(cudaMallocManaged, malloc_flags_fn);
    struct call c = {
        .api = "cudaMallocManaged", .kind = K_MALLOC, .dir = -1, .host = H_MANAGED, .peer = -1, .bytes = n};
    RUN(c, real(p, n, flags), ALLOC_RESULT(c, p, 0));
}

TR_EXPORT cudaError_t cudaMallocHost(void **p, size_t n) {
    REAL(cudaMallocHost, malloc_fn);
    struct call c = {.api = "cudaMallocHost", .kind = K_MALLOC, .dir = -1, .host = H_PINNED, .peer = -1, .bytes = n};
    RUN(c, real(p, n), ALLOC_RESULT(c, p, 1));
}

TR_EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
    REAL(cudaHostAlloc, malloc_flags_fn);
    struct call c = {.api = "cudaHostAlloc", .kind = K_MALLOC, .dir = -1, .host = H_PINNED, .peer = -1, .bytes = n};
    RUN(c, real(p, n, flags), ALLOC_RESULT(c, p, 1));
}

#define MALLOC_ASYNC(name)                                                                                             \
    TR_EXPORT cudaError_t name(void **p, size_t n, cudaStream_t s) {                                                   \
        REAL(name, malloc_async_fn);                                                                                   \
        struct call c = {                                                                                              \
            .api = #name, .kind = K_MALLOC, .dir = -1, .host = H_NONE, .peer = -1, .bytes = n, .stream = s};           \
        RUN(c, real(p, n, s), ALLOC_RESULT(c, p, 0));                                                                  \
    }
MALLOC_ASYNC(cudaMallocAsync)
MALLOC_ASYNC(cudaMallocAsync_ptsz)

#define FREE(name, hostkind)                                                                                           \
    TR_EXPORT cudaError_t name(void *p) {                                                                              \
        REAL(name, free_fn);                                                                                           \
        struct call c = {.api = #name, .kind = K_FREE, .dir = -1, .host = hostkind, .peer = -1, .dst = p};             \
        COUNT_OR_RUN(c, real(p), c.device = hostkind == H_PINNED ? -1 : current_device());                             \
    }
FREE(cudaFree, H_NONE)
FREE(cudaFreeHost, H_PINNED)

#define FREE_ASYNC(name)                                                                                               \
    TR_EXPORT cudaError_t name(void *p, cudaStream_t s) {                                                              \
        REAL(name, free_async_fn);                                                                                     \
        struct call c = {.api = #name, .kind = K_FREE, .dir = -1, .host = H_NONE, .peer = -1, .dst = p, .stream = s};  \
        COUNT_OR_RUN(c, real(p, s), c.device = current_device());                                                      \
    }
FREE_ASYNC(cudaFreeAsync)
FREE_ASYNC(cudaFreeAsync_ptsz)

/* ---------------------------------------------------------------- copies */

typedef cudaError_t (*memcpy_fn)(void *, const void *, size_t, int);
typedef cudaError_t (*memcpy_async_fn)(void *, const void *, size_t, int, cudaStream_t);
typedef cudaError_t (*memcpy2d_fn)(void *, size_t, const void *, size_t, size_t, size_t, int);
typedef cudaError_t (*memcpy2d_async_fn)(void *, size_t, const void *, size_t, size_t, size_t, int, cudaStream_t);
typedef cudaError_t (*peer_fn)(void *, int, const void *, int, size_t);
typedef cudaError_t (*peer_async_fn)(void *, int, const void *, int, size_t, cudaStream_t);
typedef cudaError_t (*to_symbol_fn)(const void *, const void *, size_t, size_t, int);
typedef cudaError_t (*to_symbol_async_fn)(const void *, const void *, size_t, size_t, int, cudaStream_t);
typedef cudaError_t (*from_symbol_fn)(void *, const void *, size_t, size_t, int);
typedef cudaError_t (*from_symbol_async_fn)(void *, const void *, size_t, size_t, int, cudaStream_t);

#define MEMCPY(name)                                                                                                   \
    TR_EXPORT cudaError_t name(void *dst, const void *src, size_t n, int kind) {                                       \
        REAL(name, memcpy_fn);                                                                                         \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = dst, .src = src};                          \
        RUN(c, real(dst, src, n, kind), classify(&c, kind));                                                           \
    }
MEMCPY(cudaMemcpy)
MEMCPY(cudaMemcpy_ptds)

#define MEMCPY_ASYNC(name)                                                                                             \
    TR_EXPORT cudaError_t name(void *dst, const void *src, size_t n, int kind, cudaStream_t s) {                       \
        REAL(name, memcpy_async_fn);                                                                                   \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = dst, .src = src, .stream = s};             \
        RUN(c, real(dst, src, n, kind, s), classify(&c, kind));                                                        \
    }
MEMCPY_ASYNC(cudaMemcpyAsync)
MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

#define MEMCPY2D(name)                                                                                                 \
    TR_EXPORT cudaError_t name(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, int kind) {       \
        REAL(name, memcpy2d_fn);                                                                                       \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = (uint64_t)w * h, .dst = dst, .src = src};            \
        RUN(c, real(dst, dp, src, sp, w, h, kind), classify(&c, kind));                                                \
    }
MEMCPY2D(cudaMemcpy2D)
MEMCPY2D(cudaMemcpy2D_ptds)

#define MEMCPY2D_ASYNC(name)                                                                                           \
    TR_EXPORT cudaError_t name(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, int kind,         \
                               cudaStream_t s) {                                                                       \
        REAL(name, memcpy2d_async_fn);                                                                                 \
        struct call c = {                                                                                              \
            .api = #name, .kind = K_MEMCPY, .bytes = (uint64_t)w * h, .dst = dst, .src = src, .stream = s};            \
        RUN(c, real(dst, dp, src, sp, w, h, kind, s), classify(&c, kind));                                             \
    }
MEMCPY2D_ASYNC(cudaMemcpy2DAsync)
MEMCPY2D_ASYNC(cudaMemcpy2DAsync_ptsz)

/* A copy between two devices' memory: DtoD from device sd to device dd. */
static struct call peer_call(const char *api, void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s) {
    return (struct call){.api = api,
                         .kind = K_MEMCPY,
                         .dir = 3,
                         .host = H_NONE,
                         .device = dd,
                         .peer = sd,
                         .bytes = n,
                         .dst = dst,
                         .src = src,
                         .stream = s};
}

TR_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n) {
    REAL(cudaMemcpyPeer, peer_fn);
    struct call c = peer_call("cudaMemcpyPeer", dst, dd, src, sd, n, NULL);
    RUN(c, real(dst, dd, src, sd, n), (void)0);
}

TR_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s) {
    REAL(cudaMemcpyPeerAsync, peer_async_fn);
    struct call c = peer_call("cudaMemcpyPeerAsync", dst, dd, src, sd, n, s);
    RUN(c, real(dst, dd, src, sd, n, s), (void)0);
}

/* A symbol is device memory: copies to it are HtoD or DtoD by kind. */
static void symbol_copy(struct call *c, int kind, int to_symbol) {
    c->dir = kind >= 0 && kind <= 3 ? kind : to_symbol ? 1 : 2;
    struct ptr_attrs a;
    const void *host = to_symbol ? c->src : c->dst;
    c->host = (c->dir == 1 || c->dir == 2) && attrs_of(host, &a) ? host_kind(a.type) : H_NONE;
    c->device = current_device();
    c->peer = -1;
}

#define TO_SYMBOL(name)                                                                                                \
    TR_EXPORT cudaError_t name(const void *sym, const void *src, size_t n, size_t off, int kind) {                     \
        REAL(name, to_symbol_fn);                                                                                      \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = sym, .src = src};                          \
        RUN(c, real(sym, src, n, off, kind), symbol_copy(&c, kind, 1));                                                \
    }
TO_SYMBOL(cudaMemcpyToSymbol)
TO_SYMBOL(cudaMemcpyToSymbol_ptds)

#define TO_SYMBOL_ASYNC(name)                                                                                          \
    TR_EXPORT cudaError_t name(const void *sym, const void *src, size_t n, size_t off, int kind, cudaStream_t s) {     \
        REAL(name, to_symbol_async_fn);                                                                                \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = sym, .src = src, .stream = s};             \
        RUN(c, real(sym, src, n, off, kind, s), symbol_copy(&c, kind, 1));                                             \
    }
TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync)
TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync_ptsz)

#define FROM_SYMBOL(name)                                                                                              \
    TR_EXPORT cudaError_t name(void *dst, const void *sym, size_t n, size_t off, int kind) {                           \
        REAL(name, from_symbol_fn);                                                                                    \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = dst, .src = sym};                          \
        RUN(c, real(dst, sym, n, off, kind), symbol_copy(&c, kind, 0));                                                \
    }
FROM_SYMBOL(cudaMemcpyFromSymbol)
FROM_SYMBOL(cudaMemcpyFromSymbol_ptds)

#define FROM_SYMBOL_ASYNC(name)                                                                                        \
    TR_EXPORT cudaError_t name(void *dst, const void *sym, size_t n, size_t off, int kind, cudaStream_t s) {           \
        REAL(name, from_symbol_async_fn);                                                                              \
        struct call c = {.api = #name, .kind = K_MEMCPY, .bytes = n, .dst = dst, .src = sym, .stream = s};             \
        RUN(c, real(dst, sym, n, off, kind, s), symbol_copy(&c, kind, 0));                                             \
    }
FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync)
FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync_ptsz)

/* ---------------------------------------------------------------- set, launch, sync */

typedef cudaError_t (*memset_fn)(void *, int, size_t);
typedef cudaError_t (*memset_async_fn)(void *, int, size_t, cudaStream_t);
typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*void_fn)(void);
typedef cudaError_t (*stream_fn)(cudaStream_t);
typedef cudaError_t (*int_fn)(int);

#define MEMSET(name)                                                                                                   \
    TR_EXPORT cudaError_t name(void *p, int v, size_t n) {                                                             \
        REAL(name, memset_fn);                                                                                         \
        struct call c = {.api = #name, .kind = K_MEMSET, .dir = -1, .host = H_NONE, .peer = -1, .bytes = n, .dst = p}; \
        RUN(c, real(p, v, n), c.device = current_device());                                                            \
    }
MEMSET(cudaMemset)
MEMSET(cudaMemset_ptds)

#define MEMSET_ASYNC(name)                                                                                             \
    TR_EXPORT cudaError_t name(void *p, int v, size_t n, cudaStream_t s) {                                             \
        REAL(name, memset_async_fn);                                                                                   \
        struct call c = {                                                                                              \
            .api = #name, .kind = K_MEMSET, .dir = -1, .host = H_NONE, .peer = -1, .bytes = n, .dst = p, .stream = s}; \
        RUN(c, real(p, v, n, s), c.device = current_device());                                                         \
    }
MEMSET_ASYNC(cudaMemsetAsync)
MEMSET_ASYNC(cudaMemsetAsync_ptsz)

#define LAUNCH(name)                                                                                                   \
    TR_EXPORT cudaError_t name(const void *f, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s) {      \
        REAL(name, launch_fn);                                                                                         \
        struct call c = {                                                                                              \
            .api = #name, .kind = K_LAUNCH, .dir = -1, .host = H_NONE, .peer = -1, .func = f, .stream = s};            \
        COUNT_OR_RUN(c, real(f, grid, block, args, shmem, s), c.device = current_device());                            \
    }
LAUNCH(cudaLaunchKernel)
LAUNCH(cudaLaunchKernel_ptsz)

TR_EXPORT cudaError_t cudaDeviceSynchronize(void) {
    REAL(cudaDeviceSynchronize, void_fn);
    struct call c = {.api = "cudaDeviceSynchronize", .kind = K_SYNC, .dir = -1, .host = H_NONE, .peer = -1};
    RUN(c, real(), c.device = current_device());
}

#define STREAM_SYNC(name)                                                                                              \
    TR_EXPORT cudaError_t name(cudaStream_t s) {                                                                       \
        REAL(name, stream_fn);                                                                                         \
        struct call c = {.api = #name, .kind = K_SYNC, .dir = -1, .host = H_NONE, .peer = -1, .stream = s};            \
        RUN(c, real(s), c.device = current_device());                                                                  \
    }
STREAM_SYNC(cudaStreamSynchronize)
STREAM_SYNC(cudaStreamSynchronize_ptsz)

TR_EXPORT cudaError_t cudaSetDevice(int d) {
    REAL(cudaSetDevice, int_fn);
    struct call c = {.api = "cudaSetDevice", .kind = K_SET_DEVICE, .dir = -1, .host = H_NONE, .device = d, .peer = -1};
    RUN(c, real(d), (void)0);
}
