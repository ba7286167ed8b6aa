/* A fake libcuda.so.1 (the driver) for the CUPTI tests: "device" memory is
 * host memory it remembers, copies really copy, a "kernel" (CUfunction) is
 * a host function void (*)(void **params) run at launch. Like the real
 * driver, cuInit loads the library CUDA_INJECTION64_PATH names and calls
 * its InitializeInjection, once. Every call is announced to the tool that
 * the fake libcupti attached (fake_cuda.h), which is how a call of a
 * program that links cudart statically reaches CUPTI. Not thread-safe
 * beyond what the tests need (one thread makes the calls). */
#include "fake_cuda.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct fakecuda_tool *_Atomic tool;
static _Atomic uint32_t next_corr;
static _Thread_local int depth;           /* API calls in progress on this thread */
static _Thread_local uint32_t outer_corr; /* the outermost one's id: its work is attributed to it */

__attribute__((visibility("default"))) void fakecuda_set_tool(const struct fakecuda_tool *t) { tool = t; }

__attribute__((visibility("default"))) uint32_t fakecuda_api_enter(int domain, int cbid, const char *name,
                                                                   const void *params, uint64_t *data) {
    uint32_t corr = ++next_corr;
    if (depth++ == 0) outer_corr = corr;
    const struct fakecuda_tool *t = tool;
    if (t) t->api(domain, cbid, name, params, NULL, 0, corr, data);
    return corr;
}

__attribute__((visibility("default"))) void fakecuda_api_exit(int domain, int cbid, const char *name,
                                                              const void *params, const void *ret, uint32_t corr,
                                                              uint64_t *data) {
    const struct fakecuda_tool *t = tool;
    if (t) t->api(domain, cbid, name, params, ret, 1, corr, data);
    depth--;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- memory */

#define MAX_ALLOCS 1024
static struct alloc {
    char *p;
    size_t n;
    int kind; /* CUPTI_ACTIVITY_MEMORY_KIND_DEVICE or _PINNED */
} allocs[MAX_ALLOCS];
static int high; /* allocs[high..] were never used */

static struct alloc *find(const void *p) {
    for (int i = 0; i < high; i++)
        if (allocs[i].p && (const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].n)
            return &allocs[i];
    return NULL;
}

static int kind_of(const void *p) {
    struct alloc *a = find(p);
    return a ? a->kind : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static CUresult remember(void **p, size_t n, int kind) {
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            allocs[i].p = calloc(1, n ? n : 1);
            if (!allocs[i].p) return CUDA_ERROR_OUT_OF_MEMORY;
            allocs[i].n = n ? n : 1, allocs[i].kind = kind;
            *p = allocs[i].p;
            if (i >= high) high = i + 1;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult forget(void *p, int kind) {
    struct alloc *a = find(p);
    if (!a || a->p != p || a->kind != kind) return CUDA_ERROR_INVALID_VALUE;
    free(a->p);
    memset(a, 0, sizeof *a);
    return CUDA_SUCCESS;
}

static int initialized;

/* A call's entry, its work, its exit: the macros keep each function short. */
#define ENTER(cbid, name, params)                                                                                      \
    uint64_t data_ = 0;                                                                                                \
    uint32_t corr_ = fakecuda_api_enter(CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, &(params), &data_);                    \
    CUresult rc_ = initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED
#define LEAVE(cbid, name, params)                                                                                      \
    fakecuda_api_exit(CUPTI_CB_DOMAIN_DRIVER_API, cbid, name, &(params), &rc_, corr_, &data_);                         \
    return rc_

static CUresult copy(void *dst, const void *src, size_t n, int want_dst, int want_src) {
    int dk = kind_of(dst), sk = kind_of(src);
    if ((want_dst && dk != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) || (want_src && sk != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t t0 = now_ns();
    memmove(dst, src, n);
    int d = dk == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, s = sk == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    int ck = d && s ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
             : d    ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
             : s    ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
                    : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    const struct fakecuda_tool *t = tool;
    if (t) t->copy(ck, sk, dk, n, 0, outer_corr, t0, now_ns() + 1);
    return CUDA_SUCCESS;
}

#define P(x) ((void *)(uintptr_t)(x))

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
    (void)flags;
    if (!initialized) {
        initialized = 1;
        const char *inj = getenv("CUDA_INJECTION64_PATH");
        void *h = inj && *inj ? dlopen(inj, RTLD_NOW | RTLD_LOCAL) : NULL;
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init) init();
    }
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *v) { return *v = 13000, CUDA_SUCCESS; }

__attribute__((visibility("default"))) CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    cuMemAlloc_v2_params p = {dptr, bytesize};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", p);
    if (!rc_) {
        void *q = NULL;
        rc_ = remember(&q, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
        if (dptr) *dptr = (CUdeviceptr)(uintptr_t)q;
    }
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemFree(CUdeviceptr dptr) {
    cuMemFree_v2_params p = {dptr};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", p);
    if (!rc_) rc_ = forget(P(dptr), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemAllocHost(void **pp, size_t bytesize) {
    cuMemAllocHost_v2_params p = {pp, bytesize};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", p);
    if (!rc_) rc_ = remember(pp, bytesize, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, "cuMemAllocHost_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemFreeHost(void *ptr) {
    cuMemFreeHost_params p = {ptr};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost", p);
    if (!rc_) rc_ = forget(ptr, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, "cuMemFreeHost", p);
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
    cuMemcpyHtoD_v2_params p = {dst, src, n};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", p);
    if (!rc_) rc_ = copy(P(dst), src, n, 1, 0);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n,
                                                                  CUstream s) {
    cuMemcpyHtoDAsync_v2_params p = {dst, src, n, s};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", p);
    if (!rc_) rc_ = copy(P(dst), src, n, 1, 0);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
    cuMemcpyDtoH_v2_params p = {dst, src, n};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", p);
    if (!rc_) rc_ = copy(dst, P(src), n, 0, 1);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", p);
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    cuMemcpyDtoD_v2_params p = {dst, src, n};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2", p);
    if (!rc_) rc_ = copy(P(dst), P(src), n, 1, 1);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2", p);
}

/* Unified addressing: the direction comes from the pointers. */
__attribute__((visibility("default"))) CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    cuMemcpy_params p = {dst, src, n};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, "cuMemcpy", p);
    if (!rc_) rc_ = copy(P(dst), P(src), n, 0, 0);
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, "cuMemcpy", p);
}

__attribute__((visibility("default"))) CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
    cuMemsetD8_v2_params p = {dst, v, n};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, "cuMemsetD8_v2", p);
    if (!rc_ && kind_of(P(dst)) != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) rc_ = CUDA_ERROR_INVALID_VALUE;
    if (!rc_) {
        uint64_t t0 = now_ns();
        memset(P(dst), v, n);
        const struct fakecuda_tool *t = tool;
        if (t) t->set(n, 0, outer_corr, t0, now_ns() + 1);
    }
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, "cuMemsetD8_v2", p);
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                               unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                               CUstream s, void **params, void **extra) {
    cuLaunchKernel_params p = {f, gx, gy, gz, bx, by, bz, shmem, s, params, extra};
    ENTER(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", p);
    if (!rc_ && !f) rc_ = CUDA_ERROR_INVALID_VALUE;
    if (!rc_) {
        uint64_t t0 = now_ns();
        ((void (*)(void **))(uintptr_t)f)(params);
        const struct fakecuda_tool *t = tool;
        if (t) t->kernel("fake_kernel", 0, outer_corr, t0, now_ns() + 1);
    }
    LEAVE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", p);
}

__attribute__((visibility("default"))) CUresult cuCtxSynchronize(void) {
    return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}
