/* CUDA seen through CUPTI: the calls the cudart interposition (cuda.c)
 * cannot see — a program linked with static cudart (nvcc's default), the
 * driver API called directly (cuBLAS, NCCL, PyTorch's kernels), a cudart
 * loaded RTLD_LOCAL or privately copied — recorded as cuda_calls rows whose
 * api says "cupti:<function>", with the stacks of the calling thread; and
 * the activity API's records of copies, sets and kernels (bytes, direction,
 * memory kinds, device, GPU time) as cuda_activity rows, joined to their
 * call by CUPTI's correlation id.
 *
 * libcupti is opened at run time (never linked; the toolkit's headers give
 * the types only), once: from InitializeInjection, which the driver calls
 * at cuInit when CUDA_INJECTION64_PATH names libdevtrace.so (devtrace run
 * sets it), or at the tracer's start when libcuda is already loaded or
 * DEVTRACE_CUPTI=1; DEVTRACE_CUPTI=0 never opens it. A call the wrappers
 * of cuda.c record is not recorded again here (their depth guard), and a
 * runtime call's nested driver calls are not rows of their own. Any CUPTI
 * failure (no libcupti, no driver, another profiler subscribed: one
 * subscriber per process) prints one warning and leaves the interposition
 * as it was. Not done: joining copies to the runtime's tensors by address.
 *
 * What is enabled is what the viewer reads (copies, sets, allocations), one
 * callback id at a time; launches, frees and the activity records only with
 * DEVTRACE_CUDA_ACTIVITY=1 (its older name DEVTRACE_CUPTI_ACTIVITY too). A
 * call's stack starts at the program's call: the frames of libcupti,
 * libcuda and a shared libcudart are left out by their objects' names, those
 * of a cudart linked into the program (nvcc's default) by their symbols. */
#include "front.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(TR_HAVE_CUPTI)
#include <cupti.h>

/* cuda.c: whether launches, frees and activity records are recorded
 * (declared here while tr_impl.h is being reorganised: move it there). */

enum { /* cuda_calls.kind: common/vocab.h's numbers, as cuda.c writes them */
    K_MEMCPY = DT_CUDA_MEMCPY,
    K_MALLOC = DT_CUDA_MALLOC,
    K_FREE = DT_CUDA_FREE,
    K_MEMSET = DT_CUDA_MEMSET,
    K_LAUNCH = DT_CUDA_LAUNCH
};
enum { H_NONE = -1, H_PAGEABLE = 0, H_PINNED = 1, H_MANAGED = 2 };

/* ---------------------------------------------------------------- libcupti */

/* The libcupti functions used, looked up in the handle opened. */
static struct {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
    CUptiResult (*register_buffers)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*activity_enable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*get_version)(uint32_t *);
    CUptiResult (*device_id)(CUcontext, uint32_t *); /* optional */
} C;

enum { ST_IDLE, ST_STARTING, ST_ON, ST_OFF };
static _Atomic int g_state;          /* ST_* */
static _Atomic int g_flushed;        /* the last flush ran: libcupti is not called again */
static CUpti_SubscriberHandle g_sub; /* while ST_ON */
static pid_t g_pid;                  /* the process that subscribed (a fork child never flushes) */
static _Atomic int g_activity;       /* the activity API is on */
static _Thread_local int api_depth;  /* runtime or driver calls entered on this thread, not yet left */
static char g_lib_path[512];         /* the libcupti opened */

/* One warning for all of CUPTI: the interposition goes on. */
static void cupti_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cupti_warn(const char *fmt, ...) {
    static _Atomic int warned;
    if (atomic_exchange(&warned, 1)) return;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tr_info("warning: CUPTI is off (%s); CUDA calls are recorded only where cudart's dynamic symbols are "
            "interposed",
            msg);
}

static const char *result_text(CUptiResult r) {
    const char *s = NULL;
    if (C.result_string && C.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
    return "unknown CUPTI error";
}

/* Opens libcupti: DEVTRACE_CUPTI_LIB, else the loader's search by soname,
 * else the toolkit's places. */
static void *open_cupti(void) {
    const char *explicit_path = getenv("DEVTRACE_CUPTI_LIB");
    if (explicit_path && *explicit_path) {
        snprintf(g_lib_path, sizeof g_lib_path, "%s", explicit_path);
        return dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
    }
    static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return snprintf(g_lib_path, sizeof g_lib_path, "%s", names[i]), h;
    }
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home, home, "/usr/local/cuda", "/usr/local/cuda"};
    const char *subs[] = {"extras/CUPTI/lib64", "lib64", "extras/CUPTI/lib64", "lib64"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !*dirs[i]) continue;
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
            snprintf(g_lib_path, sizeof g_lib_path, "%s/%s/%s", dirs[i], subs[i], names[j]);
            void *h = dlopen(g_lib_path, RTLD_NOW | RTLD_LOCAL);
            if (h) return h;
        }
    }
    g_lib_path[0] = '\0';
    return NULL;
}

/* ---------------------------------------------------------------- stacks */

/* Code ranges of the objects between the program's call and this callback
 * (libcupti, libcuda, a shared libcudart): left out of the stacks, as the
 * tracer's own frames are. Filled at the start and once more at the first
 * callback (a libcudart loaded in between). */
#define SKIP_MAX 8
static struct { uintptr_t lo, hi; } g_skip[SKIP_MAX];
static _Atomic int g_nskip;
static _Atomic int g_rescanned; /* the first callback collected them again */

static int collect_skip(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    static const char *const prefixes[] = {"libcupti", "libcuda.so", "libcudart"};
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    int match = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !match; i++)
        match = strncmp(base, prefixes[i], strlen(prefixes[i])) == 0;
    int n = atomic_load(&g_nskip);
    for (int i = 0; match && i < info->dlpi_phnum && n < SKIP_MAX; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = g_skip[k].lo == lo;
        if (!seen) g_skip[n].lo = lo, g_skip[n].hi = hi, n++;
    }
    atomic_store(&g_nskip, n);
    return 0;
}

static int skipped(uintptr_t ip) {
    if (ip >= tr_own_lo && ip < tr_own_hi) return 1;
    int n = atomic_load_explicit(&g_nskip, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (ip >= g_skip[i].lo && ip < g_skip[i].hi) return 1;
    return 0;
}

/* ---------------------------------------------------------------- a cudart inside the program */

/* A cudart linked into an object (libcudart_static.a, nvcc's default; a
 * library's private copy) is found by its symbols, not by the object's
 * name: its internal functions are named libcudart_static_<hash> (CUDA 12
 * and 13) or __cudart<n> (older), its entry points cuda<Name> and
 * __cuda<Name>. An object with no internal function of cudart's has none
 * (a program's own cudaCheck helper stays its code). Each object is read
 * once (its .symtab, else .dynsym, from its file), when a recorded call's
 * stack first reaches it; a stripped one reads as having none. */
struct cudart_fn {
    uintptr_t lo, hi; /* loaded address range */
    uint32_t entry;   /* 0: internal; else the FNV-1a hash of an entry point's name */
};
#define CUDART_OBJS 32
static struct cudart_obj {
    uintptr_t lo, hi;      /* the object's executable segments, loaded */
    struct cudart_fn *fns; /* sorted by lo; NULL when it has no cudart */
    size_t nfns;
} g_objs[CUDART_OBJS];
static _Atomic int g_nobjs; /* entries of g_objs published (filled before the count is raised) */
static pthread_mutex_t g_objs_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h ? h : 1;
}

/* 1: an internal function of cudart's; 2: an entry point; 0: neither. */
static int cudart_name(const char *n) {
    if (!strncmp(n, "libcudart_static_", 17) || !strncmp(n, "__cudart", 8)) return 1;
    if (!strncmp(n, "__cuda", 6)) n += 2;
    return !strncmp(n, "cuda", 4) && n[4] >= 'A' && n[4] <= 'Z' ? 2 : 0;
}

static int fn_cmp(const void *a, const void *b) {
    uintptr_t x = ((const struct cudart_fn *)a)->lo, y = ((const struct cudart_fn *)b)->lo;
    return x < y ? -1 : x > y;
}

/* The cudart functions of the object mapped at base from file path, into
 * o->fns (malloc'd); none when the file cannot be read or has no symbols. */
static void read_cudart_fns(struct cudart_obj *o, const char *path, uintptr_t base) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return;
    void *map = fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))
                    ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) return;
    const unsigned char *f = map;
    size_t size = (size_t)st.st_size;
    const ElfW(Ehdr) *eh = map;
    const ElfW(Shdr) *sh = NULL;
    if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
        eh->e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
        eh->e_shentsize == sizeof(ElfW(Shdr)) && eh->e_shoff < size &&
        eh->e_shnum <= (size - eh->e_shoff) / sizeof(ElfW(Shdr)))
        sh = (const ElfW(Shdr) *)(f + eh->e_shoff);
    const ElfW(Shdr) *symtab = NULL;
    for (int pass = 0; sh && pass < 2 && !symtab; pass++)
        for (int i = 0; i < eh->e_shnum && !symtab; i++)
            if (sh[i].sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB) && sh[i].sh_link < eh->e_shnum) symtab = &sh[i];
    const ElfW(Shdr) *strs = symtab ? &sh[symtab->sh_link] : NULL;
    if (!symtab || symtab->sh_offset > size || symtab->sh_size > size - symtab->sh_offset ||
        symtab->sh_entsize != sizeof(ElfW(Sym)) || strs->sh_offset > size || strs->sh_size > size - strs->sh_offset) {
        munmap(map, size);
        return;
    }
    const ElfW(Sym) *syms = (const ElfW(Sym) *)(f + symtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(ElfW(Sym)), n = 0, internal = 0;
    const char *names = (const char *)(f + strs->sh_offset);
    for (int fill = 0; fill < 2; fill++) {
        for (size_t i = 0; i < nsyms; i++) {
            const ElfW(Sym) *y = &syms[i];
            if (ELF64_ST_TYPE(y->st_info) != STT_FUNC || y->st_shndx == SHN_UNDEF || !y->st_size ||
                y->st_name >= strs->sh_size || !memchr(names + y->st_name, 0, strs->sh_size - y->st_name))
                continue;
            int kind = cudart_name(names + y->st_name);
            if (!kind) continue;
            if (fill)
                o->fns[n] = (struct cudart_fn){base + y->st_value, base + y->st_value + y->st_size,
                                               kind == 2 ? name_hash(names + y->st_name) : 0};
            n++, internal += kind == 1;
        }
        if (fill || !internal || !(o->fns = malloc(n * sizeof *o->fns))) break;
        n = internal = 0;
    }
    if (o->fns) {
        o->nfns = n;
        qsort(o->fns, n, sizeof *o->fns, fn_cmp);
    }
    munmap(map, size);
}

struct obj_query {
    uintptr_t ip;
    struct cudart_obj o; /* its range */
    uintptr_t base;      /* its load bias */
    char path[4096];     /* its file */
};

/* dl_iterate_phdr: the object holding q->ip (only its range and file: it
 * is read after the loader's lock is let go). */
static int find_obj(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct obj_query *q = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr, b = a + p->p_memsz;
        if (a < lo) lo = a;
        if (b > hi) hi = b;
        holds |= q->ip >= a && q->ip < b;
    }
    if (!holds) return 0;
    q->o.lo = lo, q->o.hi = hi, q->base = info->dlpi_addr;
    snprintf(q->path, sizeof q->path, "%s", info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
    return 1;
}

/* Return addresses in no loaded object (JIT code) looked up so far: past
 * CUDART_MISSES, such a stack is taken as it is without looking. */
#define CUDART_MISSES 64
static _Atomic int g_misses;

/* The object holding ip, read the first time; NULL when none is known
 * (no object holds it, or the table is full). g_objs_lock is never held
 * while the loader's lock is taken (a dlopen on another thread may be
 * calling CUDA from a constructor) nor while a file is read. */
static const struct cudart_obj *obj_of(uintptr_t ip) {
    int n = atomic_load_explicit(&g_nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (ip >= g_objs[i].lo && ip < g_objs[i].hi) return &g_objs[i];
    if (n == CUDART_OBJS || atomic_load_explicit(&g_misses, memory_order_relaxed) >= CUDART_MISSES) return NULL;
    struct obj_query *q = malloc(sizeof *q); /* not on a stack that may be a small one, nor in TLS */
    if (!q) return NULL;
    memset(&q->o, 0, sizeof q->o);
    q->ip = ip;
    if (!dl_iterate_phdr(find_obj, q)) {
        atomic_fetch_add(&g_misses, 1);
        free(q);
        return NULL;
    }
    read_cudart_fns(&q->o, q->path, q->base);
    const struct cudart_obj *found = NULL;
    pthread_mutex_lock(&g_objs_lock);
    n = atomic_load(&g_nobjs);
    for (int i = 0; i < n && !found; i++) /* another thread read it meanwhile */
        if (ip >= g_objs[i].lo && ip < g_objs[i].hi) found = &g_objs[i];
    if (!found && n < CUDART_OBJS) {
        g_objs[n] = q->o;
        q->o.fns = NULL;
        found = &g_objs[n];
        atomic_store_explicit(&g_nobjs, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_objs_lock);
    free(q->o.fns);
    free(q);
    return found;
}

/* The cudart function of o holding ip, or NULL. */
static const struct cudart_fn *cudart_fn_at(const struct cudart_obj *o, uintptr_t ip) {
    size_t lo = 0, hi = o->nfns;
    while (lo < hi) { /* the last function starting at or before ip */
        size_t mid = (lo + hi) / 2;
        if (o->fns[mid].lo <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && ip < o->fns[lo - 1].hi ? &o->fns[lo - 1] : NULL;
}

/* The first of buf[i..n) outside the object's own cudart: its internal
 * functions and the entry point the program called (api, its name), which
 * is the last frame left out. Past the innermost, each is a return address,
 * just after its call: ip - 1 is inside the calling function. */
static int past_cudart(void *const *buf, int i, int n, const char *api) {
    const struct cudart_obj *o = i < n ? obj_of((uintptr_t)buf[i] - (i > 0)) : NULL;
    if (!o || !o->fns) return i;
    uint32_t want = api ? name_hash(api) : 0;
    for (int k = i; k < n; k++) {
        uintptr_t ip = (uintptr_t)buf[k] - (k > 0);
        const struct cudart_fn *fn = ip >= o->lo && ip < o->hi ? cudart_fn_at(o, ip) : NULL;
        if (!fn) return k;
        if (fn->entry && fn->entry == want) return k + 1;
    }
    return i; /* all of it cudart's: not a stack this understands */
}

/* The calling thread's stack from the program's call outward (api: the
 * function called, as CUPTI names it). */
static int capture(uint64_t *ips, int max, const char *api) {
    void *buf[TR_MAX_DEPTH + 48];
    int want = max + 48;
    if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
    int n = tr_unw_backtrace ? tr_unw_backtrace(buf, want) : backtrace(buf, want);
    int i = 0, k = 0;
    while (i < n && skipped((uintptr_t)buf[i])) i++;
    i = past_cudart(buf, i, n, api);
    for (; i < n && k < max; i++) ips[k++] = (uint64_t)(uintptr_t)buf[i];
    return k;
}

/* ---------------------------------------------------------------- callbacks */

struct row {
    const char *api;
    int kind, dir, host;
    uint64_t bytes, dst, src, stream, func;
};

static int put(struct row *r, const char *api, int kind, int dir, int host, uint64_t bytes, uint64_t dst, uint64_t src,
               uint64_t stream, uint64_t func) {
    *r = (struct row){api, kind, dir, host, bytes, dst, src, stream, func};
    return 1;
}

/* cudaMemcpyKind as a direction: 0..3 are HtoH..DtoD; Default says nothing. */
static int dir_of_kind(int kind) { return kind >= 0 && kind <= 3 ? kind : -1; }

/* What the call did, from its parameters; 0 when it is not one of ours.
 * A _ptds/_ptsz form has the parameters of its plain form. */
static int decode(CUpti_CallbackDomain dom, CUpti_CallbackId id, const CUpti_CallbackData *cb, struct row *r) {
    const void *p = cb->functionParams;
#define U(x) ((uint64_t)(uintptr_t)(x))
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
            const cudaMalloc_v3020_params *a = p; /* the pointer is read at the exit */
            return put(r, "cupti:cudaMalloc", K_MALLOC, -1, H_NONE, a->size, a->devPtr ? U(*a->devPtr) : 0, 0, 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
            const cudaMallocHost_v3020_params *a = p;
            return put(r, "cupti:cudaMallocHost", K_MALLOC, -1, H_PINNED, a->size, a->ptr ? U(*a->ptr) : 0, 0, 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
            const cudaMallocManaged_v6000_params *a = p;
            return put(r, "cupti:cudaMallocManaged", K_MALLOC, -1, H_MANAGED, a->size, a->devPtr ? U(*a->devPtr) : 0, 0,
                       0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
            return put(r, "cupti:cudaFree", K_FREE, -1, H_NONE, 0, U(((const cudaFree_v3020_params *)p)->devPtr), 0, 0,
                       0);
        case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
            return put(r, "cupti:cudaFreeHost", K_FREE, -1, H_PINNED, 0, U(((const cudaFreeHost_v3020_params *)p)->ptr),
                       0, 0, 0);
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
            const cudaMemcpy_v3020_params *a = p;
            return put(r,
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 ? "cupti:cudaMemcpy" : "cupti:cudaMemcpy_ptds",
                       K_MEMCPY, dir_of_kind((int)a->kind), H_NONE, a->count, U(a->dst), U(a->src), 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
            const cudaMemcpyAsync_v3020_params *a = p;
            return put(r,
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 ? "cupti:cudaMemcpyAsync"
                                                                            : "cupti:cudaMemcpyAsync_ptsz",
                       K_MEMCPY, dir_of_kind((int)a->kind), H_NONE, a->count, U(a->dst), U(a->src), U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
            const cudaHostAlloc_v3020_params *a = p;
            return put(r, "cupti:cudaHostAlloc", K_MALLOC, -1, H_PINNED, a->size, a->pHost ? U(*a->pHost) : 0, 0, 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
            const cudaMallocAsync_v11020_params *a = p;
            return put(r, "cupti:cudaMallocAsync", K_MALLOC, -1, H_NONE, a->size, a->devPtr ? U(*a->devPtr) : 0, 0,
                       U(a->hStream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
            const cudaFreeAsync_v11020_params *a = p;
            return put(r, "cupti:cudaFreeAsync", K_FREE, -1, H_NONE, 0, U(a->devPtr), 0, U(a->hStream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: {
            const cudaMemcpy2D_v3020_params *a = p;
            return put(r, "cupti:cudaMemcpy2D", K_MEMCPY, dir_of_kind((int)a->kind), H_NONE,
                       (uint64_t)a->width * a->height, U(a->dst), U(a->src), 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
            const cudaMemcpy2DAsync_v3020_params *a = p;
            return put(r, "cupti:cudaMemcpy2DAsync", K_MEMCPY, dir_of_kind((int)a->kind), H_NONE,
                       (uint64_t)a->width * a->height, U(a->dst), U(a->src), U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000: {
            const cudaMemcpyPeer_v4000_params *a = p;
            return put(r, "cupti:cudaMemcpyPeer", K_MEMCPY, 3, H_NONE, a->count, U(a->dst), U(a->src), 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000: {
            const cudaMemcpyPeerAsync_v4000_params *a = p;
            return put(r, "cupti:cudaMemcpyPeerAsync", K_MEMCPY, 3, H_NONE, a->count, U(a->dst), U(a->src),
                       U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020: { /* a symbol is device memory */
            const cudaMemcpyToSymbol_v3020_params *a = p;
            int dir = dir_of_kind((int)a->kind);
            return put(r, "cupti:cudaMemcpyToSymbol", K_MEMCPY, dir < 0 ? 1 : dir, H_NONE, a->count, U(a->symbol),
                       U(a->src), 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020: {
            const cudaMemcpyToSymbolAsync_v3020_params *a = p;
            int dir = dir_of_kind((int)a->kind);
            return put(r, "cupti:cudaMemcpyToSymbolAsync", K_MEMCPY, dir < 0 ? 1 : dir, H_NONE, a->count, U(a->symbol),
                       U(a->src), U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020: {
            const cudaMemcpyFromSymbol_v3020_params *a = p;
            int dir = dir_of_kind((int)a->kind);
            return put(r, "cupti:cudaMemcpyFromSymbol", K_MEMCPY, dir < 0 ? 2 : dir, H_NONE, a->count, U(a->dst),
                       U(a->symbol), 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020: {
            const cudaMemcpyFromSymbolAsync_v3020_params *a = p;
            int dir = dir_of_kind((int)a->kind);
            return put(r, "cupti:cudaMemcpyFromSymbolAsync", K_MEMCPY, dir < 0 ? 2 : dir, H_NONE, a->count, U(a->dst),
                       U(a->symbol), U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000: {
            const cudaMemset_v3020_params *a = p;
            return put(r,
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020 ? "cupti:cudaMemset" : "cupti:cudaMemset_ptds",
                       K_MEMSET, -1, H_NONE, a->count, U(a->devPtr), 0, 0, 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
            const cudaMemsetAsync_v3020_params *a = p;
            return put(r,
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 ? "cupti:cudaMemsetAsync"
                                                                            : "cupti:cudaMemsetAsync_ptsz",
                       K_MEMSET, -1, H_NONE, a->count, U(a->devPtr), 0, U(a->stream), 0);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
            const cudaLaunchKernel_v7000_params *a = p;
            return put(r,
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ? "cupti:cudaLaunchKernel"
                                                                             : "cupti:cudaLaunchKernel_ptsz",
                       K_LAUNCH, -1, H_NONE, 0, 0, 0, U(a->stream), U(a->func));
        }
        default: return 0;
        }
    if (dom != CUPTI_CB_DOMAIN_DRIVER_API) return 0;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
        const cuMemAlloc_v2_params *a = p;
        return put(r, "cupti:cuMemAlloc_v2", K_MALLOC, -1, H_NONE, a->bytesize, a->dptr ? *a->dptr : 0, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
        const cuMemAllocHost_v2_params *a = p;
        return put(r, "cupti:cuMemAllocHost_v2", K_MALLOC, -1, H_PINNED, a->bytesize, a->pp ? U(*a->pp) : 0, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
        const cuMemAllocManaged_params *a = p;
        return put(r, "cupti:cuMemAllocManaged", K_MALLOC, -1, H_MANAGED, a->bytesize, a->dptr ? *a->dptr : 0, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
        return put(r, "cupti:cuMemFree_v2", K_FREE, -1, H_NONE, 0, ((const cuMemFree_v2_params *)p)->dptr, 0, 0, 0);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
        return put(r, "cupti:cuMemFreeHost", K_FREE, -1, H_PINNED, 0, U(((const cuMemFreeHost_params *)p)->p), 0, 0, 0);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: {
        const cuMemcpyHtoD_v2_params *a = p;
        return put(r, "cupti:cuMemcpyHtoD_v2", K_MEMCPY, 1, H_NONE, a->ByteCount, a->dstDevice, U(a->srcHost), 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
        const cuMemcpyHtoDAsync_v2_params *a = p;
        return put(r, "cupti:cuMemcpyHtoDAsync_v2", K_MEMCPY, 1, H_NONE, a->ByteCount, a->dstDevice, U(a->srcHost),
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
        const cuMemcpyDtoH_v2_params *a = p;
        return put(r, "cupti:cuMemcpyDtoH_v2", K_MEMCPY, 2, H_NONE, a->ByteCount, U(a->dstHost), a->srcDevice, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
        const cuMemcpyDtoHAsync_v2_params *a = p;
        return put(r, "cupti:cuMemcpyDtoHAsync_v2", K_MEMCPY, 2, H_NONE, a->ByteCount, U(a->dstHost), a->srcDevice,
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: {
        const cuMemcpyDtoD_v2_params *a = p;
        return put(r, "cupti:cuMemcpyDtoD_v2", K_MEMCPY, 3, H_NONE, a->ByteCount, a->dstDevice, a->srcDevice, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
        const cuMemcpyDtoDAsync_v2_params *a = p;
        return put(r, "cupti:cuMemcpyDtoDAsync_v2", K_MEMCPY, 3, H_NONE, a->ByteCount, a->dstDevice, a->srcDevice,
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds: {
        const cuMemcpyPeer_params *a = p;
        return put(r, "cupti:cuMemcpyPeer", K_MEMCPY, 3, H_NONE, a->ByteCount, a->dstDevice, a->srcDevice, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz: {
        const cuMemcpyPeerAsync_params *a = p;
        return put(r, "cupti:cuMemcpyPeerAsync", K_MEMCPY, 3, H_NONE, a->ByteCount, a->dstDevice, a->srcDevice,
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: { /* unified addressing: the activity record says which way */
        const cuMemcpy_params *a = p;
        return put(r, "cupti:cuMemcpy", K_MEMCPY, -1, H_NONE, a->ByteCount, a->dst, a->src, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
        const cuMemcpyAsync_params *a = p;
        return put(r, "cupti:cuMemcpyAsync", K_MEMCPY, -1, H_NONE, a->ByteCount, a->dst, a->src, U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: {
        const cuMemsetD8_v2_params *a = p;
        return put(r, "cupti:cuMemsetD8_v2", K_MEMSET, -1, H_NONE, a->N, a->dstDevice, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
        const cuMemsetD32_v2_params *a = p;
        return put(r, "cupti:cuMemsetD32_v2", K_MEMSET, -1, H_NONE, 4 * (uint64_t)a->N, a->dstDevice, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
        const cuMemsetD8Async_params *a = p;
        return put(r, "cupti:cuMemsetD8Async", K_MEMSET, -1, H_NONE, a->N, a->dstDevice, 0, U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds: {
        const cuMemsetD16_v2_params *a = p;
        return put(r, "cupti:cuMemsetD16_v2", K_MEMSET, -1, H_NONE, 2 * (uint64_t)a->N, a->dstDevice, 0, 0, 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
        const cuMemsetD16Async_params *a = p;
        return put(r, "cupti:cuMemsetD16Async", K_MEMSET, -1, H_NONE, 2 * (uint64_t)a->N, a->dstDevice, 0,
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
        const cuMemsetD32Async_params *a = p;
        return put(r, "cupti:cuMemsetD32Async", K_MEMSET, -1, H_NONE, 4 * (uint64_t)a->N, a->dstDevice, 0,
                   U(a->hStream), 0);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        const cuLaunchKernel_params *a = p;
        return put(r, "cupti:cuLaunchKernel", K_LAUNCH, -1, H_NONE, 0, 0, 0, U(a->hStream), U(a->f));
    }
    default: return 0;
    }
#undef U
}

/* The call ids enabled, one by one (never a whole domain: every call of
 * an enabled id costs a callback, on a real driver with a stack 1.7-3 us):
 * by default what a chain, `devtrace transfers` and the report read, the
 * copies, sets and allocations (the report lists the allocations before an
 * error); with DEVTRACE_CUDA_ACTIVITY=1 also the launches and frees, which
 * only the export's timeline shows. Only these reach on_callback. */
static const CUpti_CallbackId runtime_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,           CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,      CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,     CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,         CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,       CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,           CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,      CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
};
static const CUpti_CallbackId runtime_activity_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,         CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,   CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
};
static const CUpti_CallbackId driver_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};
static const CUpti_CallbackId driver_activity_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
};

/* Enables each of ids (n of them) in domain dom; the first failure. */
static CUptiResult enable_ids(CUpti_CallbackDomain dom, const CUpti_CallbackId *ids, size_t n) {
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; i < n && r == CUPTI_SUCCESS; i++) r = C.enable_callback(1, g_sub, dom, ids[i]);
    return r;
}
#define ENABLE_IDS(dom, ids) enable_ids(dom, ids, sizeof ids / sizeof ids[0])

/* One cuda_calls row, with the stacks of this (the calling) thread. */
static void emit_call(const struct row *c, const char *fn, int device, int rc, uint64_t dur, uint32_t corr) {
    struct tr_ring *ring = tr_ring_self();
    if (!ring) return;
    uint64_t seq = atomic_fetch_add_explicit(&g_tr.next_seq, 1, memory_order_relaxed);
    uint64_t stamp = tr_stamp();
    uint64_t ips[TR_MAX_DEPTH], py[2 * TR_MAX_PY];
    int nips = tr_no_native ? 0 : capture(ips, g_tr.cfg.depth, fn);
    int npy = g_tr.cfg.python && tr_no_native != DTP_STACKS_NONE ? tr_py_capture(py, TR_MAX_PY) : 0;
    struct tr_ev e = {.kind = TR_EV_CUDA, .nint = 13, .nstr = 1, .stack = 1};
    uint64_t v[13] = {(uint64_t)c->kind,
                      (uint64_t)(int64_t)c->dir,
                      c->bytes,
                      c->dst,
                      c->src,
                      (uint64_t)(int64_t)c->host,
                      (uint64_t)(int64_t)device,
                      (uint64_t)(int64_t)-1,
                      c->stream,
                      c->func,
                      (uint64_t)(int64_t)rc,
                      dur,
                      corr};
    memcpy(e.ints, v, sizeof v);
    e.strs[0] = c->api;
    tr_ev_record(ring, &e, seq, stamp, ips, nips, py, npy);
}

/* Every enabled runtime and driver call, on the calling thread, at entry
 * and exit. The outermost call of the thread that no wrapper of cuda.c
 * records is a row, at its exit (its results: a new pointer, the return
 * code). Never calls CUDA. */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *data) {
    (void)userdata;
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData *cb = data;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (api_depth++ == 0) {
            if (tr_cuda_depth > 0) { /* a wrapper records this call: give it the id that joins its activity */
                if (!tr_cuda_corr) tr_cuda_corr = cb->correlationId;
            } else if (cb->correlationData) {
                *cb->correlationData = tr_now_ns();
            }
        }
        return;
    }
    int outer = api_depth == 1 && tr_cuda_depth == 0;
    api_depth -= api_depth > 0;
    if (!outer || tr_in_emit || !atomic_load_explicit(&g_tr.enabled, memory_order_relaxed)) return;
    struct row r;
    if (!decode(dom, id, cb, &r)) return;
    if (!atomic_load_explicit(&g_rescanned, memory_order_relaxed) && !atomic_exchange(&g_rescanned, 1))
        dl_iterate_phdr(collect_skip, NULL);
    int saved_errno = errno;
    int rc = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;
    uint64_t t0 = cb->correlationData ? *cb->correlationData : 0;
    uint32_t device = 0; /* of the call's context (the current one when it has none) */
    int have_device = C.device_id && C.device_id(cb->context, &device) == CUPTI_SUCCESS;
    emit_call(&r, cb->functionName ? cb->functionName : r.api + 6, have_device ? (int)device : -1, rc,
              t0 ? tr_now_ns() - t0 : 0, cb->correlationId);
    errno = saved_errno;
}

/* ---------------------------------------------------------------- activity */

#define BUF_BYTES (1u << 20)

static void CUPTIAPI on_buffer_request(uint8_t **buf, size_t *size, size_t *max_records) {
    *buf = aligned_alloc(8, BUF_BYTES);
    *size = *buf ? BUF_BYTES : 0;
    *max_records = 0;
}

static int dir_of_copy(int copy_kind) {
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return 1;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return 2;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return 3;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return 0;
    default: return -1;
    }
}

static int host_of_memory(int memory_kind) {
    switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return H_PAGEABLE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return H_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return H_MANAGED;
    default: return H_NONE;
    }
}

static void emit_activity(const char *what, int kind, int dir, uint64_t bytes, int host, uint32_t device,
                          uint32_t stream, uint32_t corr, uint64_t start, uint64_t end, const char *name) {
    struct tr_ev e = {.kind = TR_EV_CUPTI, .nint = 9, .nstr = 2};
    uint64_t v[9] = {(uint64_t)kind, (uint64_t)(int64_t)dir,       bytes, (uint64_t)(int64_t)host, device, stream, corr,
                     start,          end > start ? end - start : 0};
    memcpy(e.ints, v, sizeof v);
    e.strs[0] = what;
    e.strs[1] = name ? name : "";
    tr_ev_emit(&e);
}

/* Only the fields every version of these records has, at the same place
 * (CUPTI 12 and 13 alike), are read; kernels only from the CUPTI whose
 * header this was built with. */
static void CUPTIAPI on_buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (valid && C.next_record(buf, valid, &rec) == CUPTI_SUCCESS && rec) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            int dir = dir_of_copy(m->copyKind);
            int host = dir == 1 || dir == 0 ? host_of_memory(m->srcKind) : dir == 2 ? host_of_memory(m->dstKind) : -1;
            emit_activity("cupti.activity.memcpy", K_MEMCPY, dir, m->bytes, host, m->deviceId, m->streamId,
                          m->runtimeCorrelationId ? m->runtimeCorrelationId : m->correlationId, m->start, m->end, NULL);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            emit_activity("cupti.activity.memset", K_MEMSET, -1, m->bytes, -1, m->deviceId, m->streamId,
                          m->correlationId, m->start, m->end, NULL);
            break;
        }
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            emit_activity("cupti.activity.kernel", K_LAUNCH, -1, 0, -1, k->deviceId, k->streamId, k->correlationId,
                          k->start, k->end, k->name);
            break;
        }
        default: break;
        }
    }
    free(buf);
}

/* ---------------------------------------------------------------- start, stop */

static void cupti_flush(void);
static void at_exit_flush(void) { cupti_flush(); }

/* Subscribes and enables; a message on failure (libcupti left loaded:
 * unloading a library that may have started threads is not safe). */
static const char *start_cupti(char *why, size_t size) {
    void *h = open_cupti();
    if (!h) {
        snprintf(why, size, "no libcupti: set DEVTRACE_CUPTI_LIB or CUDA_HOME");
        return why;
    }
#define SYM(field, name)                                                                                               \
    if (!(*(void **)&C.field = dlsym(h, name))) {                                                                      \
        snprintf(why, size, "%s has no %s", g_lib_path, name);                                                         \
        return why;                                                                                                    \
    }
    SYM(result_string, "cuptiGetResultString");
    SYM(get_version, "cuptiGetVersion");
    SYM(subscribe, "cuptiSubscribe");
    SYM(unsubscribe, "cuptiUnsubscribe");
    SYM(enable_callback, "cuptiEnableCallback");
    SYM(register_buffers, "cuptiActivityRegisterCallbacks");
    SYM(activity_enable, "cuptiActivityEnable");
    SYM(flush_all, "cuptiActivityFlushAll");
    SYM(next_record, "cuptiActivityGetNextRecord");
#undef SYM
    *(void **)&C.device_id = dlsym(h, "cuptiGetDeviceId");
    uint32_t version = 0;
    CUptiResult r = C.get_version(&version);
    if (r != CUPTI_SUCCESS || version == 0) {
        snprintf(why, size, "cuptiGetVersion of %s: %s", g_lib_path, result_text(r));
        return why;
    }
    dl_iterate_phdr(collect_skip, NULL);
    r = C.subscribe(&g_sub, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, size, "cuptiSubscribe: %s%s", result_text(r),
                 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                     ? ": another profiler (nsys, ncu, torch.profiler, compute-sanitizer) holds CUPTI"
                     : "");
        return why;
    }
    int activity = tr_cuda_activity();
    r = ENABLE_IDS(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids);
    if (r == CUPTI_SUCCESS) r = ENABLE_IDS(CUPTI_CB_DOMAIN_DRIVER_API, driver_ids);
    if (r == CUPTI_SUCCESS && activity) r = ENABLE_IDS(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_activity_ids);
    if (r == CUPTI_SUCCESS && activity) r = ENABLE_IDS(CUPTI_CB_DOMAIN_DRIVER_API, driver_activity_ids);
    if (r != CUPTI_SUCCESS) {
        C.unsubscribe(g_sub);
        snprintf(why, size, "cuptiEnableCallback: %s", result_text(r));
        return why;
    }
    /* The activity API, only when asked for: without it the calls are
     * still recorded. */
    if (!activity) return NULL;
    r = C.register_buffers(on_buffer_request, on_buffer_complete);
    if (r == CUPTI_SUCCESS) r = C.activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r == CUPTI_SUCCESS) r = C.activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
    if (r == CUPTI_SUCCESS && version == CUPTI_API_VERSION)
        r = C.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS)
        tr_info("warning: CUPTI's activity API is off (%s); CUDA calls are still recorded, without GPU times",
                result_text(r));
    else
        atomic_store(&g_activity, 1);
    return NULL;
}

void tr_cupti_start(const char *how) {
    const char *env = getenv("DEVTRACE_CUPTI");
    if (env && !strcmp(env, "0")) return;
    int idle = ST_IDLE;
    if (!atomic_compare_exchange_strong(&g_state, &idle, ST_STARTING)) return;
    if (!tr_ensure_init()) {
        atomic_store(&g_state, ST_OFF);
        return;
    }
    char why[700];
    const char *err = start_cupti(why, sizeof why);
    if (err) {
        atomic_store(&g_state, ST_OFF);
        cupti_warn("%s", err);
        return;
    }
    g_pid = getpid();
    atomic_store(&g_state, ST_ON);
    /* after libcupti's own atexit handlers: this one runs before them, and
     * before any library's destructor */
    atexit(at_exit_flush);
    if (getenv("DEVTRACE_CUPTI_VERBOSE")) tr_info("CUPTI on: %s, started by %s", g_lib_path, how);
}

/* The tracer started in a program that may already run CUDA, or was told to start CUPTI. */
static void cupti_at_init(void) {
    const char *env = getenv("DEVTRACE_CUPTI");
    if (env && !strcmp(env, "1")) {
        tr_cupti_start("DEVTRACE_CUPTI=1");
        return;
    }
    if (env && !strcmp(env, "0")) return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        tr_cupti_start("libcuda already loaded");
    }
}

/* Before the trace ends: CUPTI's last activity records, while the writer runs. */
static void cupti_flush(void) {
    if (atomic_load(&g_state) != ST_ON || getpid() != g_pid || atomic_exchange(&g_flushed, 1)) return;
    if (atomic_load(&g_activity)) C.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* The driver calls this at cuInit when CUDA_INJECTION64_PATH names this
 * library: CUDA is starting, in any program, however it reached the driver. */
TR_EXPORT int InitializeInjection(void) {
    tr_cupti_start("CUDA_INJECTION64_PATH");
    return 1;
}

TR_FRONT(cupti) = {.name = "cupti", .started = cupti_at_init, .flush = cupti_flush};

#else /* no CUPTI headers at build time: nothing to start */

void tr_cupti_start(const char *how) { (void)how; }

#endif
