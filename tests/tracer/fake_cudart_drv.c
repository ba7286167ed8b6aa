/* A fake cudart on the fake driver (fake_cuda.c), for the CUPTI tests:
 * built as a static library, which a program links the way nvcc links
 * libcudart_static.a (its calls never leave the program, so LD_PRELOAD
 * cannot interpose them), and as a shared libcudart.so.13, which the
 * interposition sees as well as CUPTI (the double-counting test). Like the
 * real one it opens libcuda.so.1 at its first call and calls cuInit (where
 * the driver starts the injection library), and announces each of its
 * calls to the driver's tool, as runtime API callbacks, from internal
 * functions named as CUDA 12 and 13 name theirs in libcudart_static.a
 * (libcudart_static_<sha1>): between the program's call and the driver
 * are the entry point's frame and an internal one, as on a real GPU. */
#include "fake_cuda.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

static struct {
    int tried, ok;
    fakecuda_api_enter_fn enter;
    fakecuda_api_exit_fn exit;
    CUresult (*init)(unsigned);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*alloc_host)(void **, size_t);
    CUresult (*free_host)(void *);
    CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*set8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **);
} D;

static int driver(void) {
    if (D.tried) return D.ok;
    D.tried = 1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
#define SYM(f, n) *(void **)&D.f = dlsym(h, n)
    SYM(enter, "fakecuda_api_enter");
    SYM(exit, "fakecuda_api_exit");
    SYM(init, "cuInit");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(free, "cuMemFree_v2");
    SYM(alloc_host, "cuMemAllocHost_v2");
    SYM(free_host, "cuMemFreeHost");
    SYM(copy, "cuMemcpy");
    SYM(htod, "cuMemcpyHtoD_v2");
    SYM(htod_async, "cuMemcpyHtoDAsync_v2");
    SYM(dtoh, "cuMemcpyDtoH_v2");
    SYM(dtod, "cuMemcpyDtoD_v2");
    SYM(set8, "cuMemsetD8_v2");
    SYM(launch, "cuLaunchKernel");
#undef SYM
    D.ok = D.enter && D.exit && D.init && D.alloc && D.launch && D.init(0) == CUDA_SUCCESS;
    return D.ok;
}

static cudaError_t err_of(CUresult r) {
    return r == CUDA_SUCCESS               ? cudaSuccess
           : r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                           : cudaErrorInvalidValue;
}

#define DEV(p) ((CUdeviceptr)(uintptr_t)(p))

/* The call's exit announced from an internal function of its own frame
 * (not a tail call: the empty asm after the call keeps the frame). */
__attribute__((noinline)) void libcudart_static_3f0c9a4e1b7d2c865a0e4f19d3b8c7a2e6f5d401(int cbid, const char *name,
                                                                                         const void *params,
                                                                                         cudaError_t *rc, uint32_t corr,
                                                                                         uint64_t *data) {
    D.exit(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, params, rc, corr, data);
    __asm__ volatile("" ::: "memory");
}
#define RUNTIME_EXIT libcudart_static_3f0c9a4e1b7d2c865a0e4f19d3b8c7a2e6f5d401

/* A runtime call: announced, done on the driver, announced done. */
#define RUNTIME(cbid, name, params, body)                                                                              \
    do {                                                                                                               \
        if (!driver()) return cudaErrorInsufficientDriver;                                                             \
        uint64_t data_ = 0;                                                                                            \
        uint32_t corr_ = D.enter(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, &(params), &data_);                          \
        cudaError_t rc_ = (body);                                                                                      \
        RUNTIME_EXIT(cbid, name, &(params), &rc_, corr_, &data_);                                                      \
        return rc_;                                                                                                    \
    } while (0)

EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
    cudaMalloc_v3020_params a = {p, n};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", a, err_of(D.alloc((CUdeviceptr *)p, n)));
}

EXPORT cudaError_t cudaFree(void *p) {
    cudaFree_v3020_params a = {p};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", a, p ? err_of(D.free(DEV(p))) : cudaSuccess);
}

EXPORT cudaError_t cudaMallocHost(void **p, size_t n) {
    cudaMallocHost_v3020_params a = {p, n};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, "cudaMallocHost", a, err_of(D.alloc_host(p, n)));
}

EXPORT cudaError_t cudaFreeHost(void *p) {
    cudaFreeHost_v3020_params a = {p};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost", a, err_of(D.free_host(p)));
}

static CUresult copy_kind(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s, int async) {
    switch (kind) {
    case cudaMemcpyHostToDevice: return async ? D.htod_async(DEV(dst), src, n, s) : D.htod(DEV(dst), src, n);
    case cudaMemcpyDeviceToHost: return D.dtoh(dst, DEV(src), n);
    case cudaMemcpyDeviceToDevice: return D.dtod(DEV(dst), DEV(src), n);
    default: return D.copy(DEV(dst), DEV(src), n);
    }
}

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    cudaMemcpy_v3020_params a = {dst, src, n, kind};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", a, err_of(copy_kind(dst, src, n, kind, NULL, 0)));
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
    cudaMemcpyAsync_v3020_params a = {dst, src, n, kind, s};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", a,
            err_of(copy_kind(dst, src, n, kind, (CUstream)s, 1)));
}

/* Row by row, each row a driver copy of its own (not rows of the trace:
 * they are inside this call). */
static CUresult copy2d(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k) {
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < h && rc == CUDA_SUCCESS; i++)
        rc = copy_kind((char *)dst + i * dp, (const char *)src + i * sp, w, k, NULL, 0);
    return rc;
}

EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                                enum cudaMemcpyKind kind) {
    cudaMemcpy2D_v3020_params a = {dst, dp, src, sp, w, h, kind};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, "cudaMemcpy2D", a,
            err_of(copy2d(dst, dp, src, sp, w, h, kind)));
}

EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n) {
    cudaMemcpyPeer_v4000_params a = {dst, dd, src, sd, n};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, "cudaMemcpyPeer", a, err_of(D.dtod(DEV(dst), DEV(src), n)));
}

EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
    cudaHostAlloc_v3020_params a = {p, n, flags};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, "cudaHostAlloc", a, err_of(D.alloc_host(p, n)));
}

EXPORT cudaError_t cudaMemset(void *p, int v, size_t n) {
    cudaMemset_v3020_params a = {p, v, n};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", a, err_of(D.set8(DEV(p), (unsigned char)v, n)));
}

EXPORT cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s) {
    cudaLaunchKernel_v7000_params a = {f, g, b, args, shmem, s};
    RUNTIME(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", a,
            err_of(D.launch((CUfunction)(uintptr_t)f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, (CUstream)s, args,
                            NULL)));
}

EXPORT cudaError_t cudaDeviceSynchronize(void) { return driver() ? cudaSuccess : cudaErrorInsufficientDriver; }
EXPORT cudaError_t cudaGetDevice(int *d) { return *d = 0, cudaSuccess; }
EXPORT cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    (void)p;
    a->type = cudaMemoryTypeUnregistered, a->device = 0, a->devicePointer = NULL, a->hostPointer = NULL;
    return cudaSuccess;
}
