/* A fake libcudart.so.13 for machines without a GPU: the same soname and
 * symbol version node as NVIDIA's (version script fake_cudart.map), linked
 * -Bsymbolic like it, picked up through LD_LIBRARY_PATH by programs linked
 * against the real one. "Device" memory is host memory it remembers, so
 * copies really copy and a program's results can be compared traced and
 * untraced. cudaMemcpy2D copies row by row through the global cudaMemcpy,
 * as a runtime that calls itself would: the tracer must record it once. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct {
    unsigned x, y, z;
} dim3;
struct attrs {
    int type, device;
    void *dptr, *hptr;
    long reserved[8];
};
enum { OK = 0, ERR_VALUE = 1, ERR_MEMORY = 2, ERR_DEVICE = 101, ERR_DIRECTION = 21 };

#define MAX_ALLOCS 4096
static struct alloc {
    char *p;
    size_t n;
    int type, device; /* 1 pinned, 2 device, 3 managed */
} allocs[MAX_ALLOCS];
static int cur_device, ndevices = 2, last_error, high; /* allocs[high..] were never used */

static struct alloc *find(const void *p) {
    for (int i = 0; i < high; i++)
        if (allocs[i].p && (const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].n)
            return &allocs[i];
    return NULL;
}

static cudaError_t remember(void **p, size_t n, int type) {
    if (!p) return last_error = ERR_VALUE;
    *p = NULL;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            allocs[i].p = calloc(1, n ? n : 1);
            if (!allocs[i].p) return last_error = ERR_MEMORY;
            allocs[i].n = n ? n : 1, allocs[i].type = type, allocs[i].device = type == 1 ? -1 : cur_device;
            *p = allocs[i].p;
            if (i >= high) high = i + 1;
            return OK;
        }
    return last_error = ERR_MEMORY;
}

static cudaError_t forget(void *p, int type) {
    if (!p) return OK;
    struct alloc *a = find(p);
    if (!a || a->p != p || (type == 1) != (a->type == 1)) return last_error = ERR_VALUE;
    free(a->p);
    memset(a, 0, sizeof *a);
    return OK;
}

/* Checks a copy's kind against its pointers, as the real runtime does. */
static cudaError_t copy(void *dst, const void *src, size_t n, int kind) {
    if (kind < 0 || kind > 4) return last_error = ERR_DIRECTION;
    struct alloc *d = find(dst), *s = find(src);
    int dd = d && d->type >= 2, sd = s && s->type >= 2;
    if ((kind == 1 && !dd) || (kind == 2 && !sd) || (kind == 3 && (!dd || !sd))) return last_error = ERR_VALUE;
    memmove(dst, src, n);
    return OK;
}

cudaError_t cudaGetDeviceCount(int *n) { return *n = ndevices, OK; }
cudaError_t cudaGetDevice(int *d) { return *d = cur_device, OK; }
cudaError_t cudaSetDevice(int d) { return d < 0 || d >= ndevices ? (last_error = ERR_DEVICE) : (cur_device = d, OK); }
cudaError_t cudaGetLastError(void) {
    int e = last_error;
    last_error = OK;
    return e;
}
const char *cudaGetErrorString(cudaError_t e) { return e == OK ? "no error" : "fake error"; }
cudaError_t cudaPointerGetAttributes(struct attrs *a, const void *p) {
    memset(a, 0, sizeof *a);
    struct alloc *m = find(p);
    a->type = m ? m->type : 0;
    a->device = m && m->device >= 0 ? m->device : -2;
    return OK;
}

cudaError_t cudaMalloc(void **p, size_t n) { return remember(p, n, 2); }
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned f) { return (void)f, remember(p, n, 3); }
cudaError_t cudaMallocHost(void **p, size_t n) { return remember(p, n, 1); }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) { return (void)f, remember(p, n, 1); }
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { return (void)s, remember(p, n, 2); }
cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { return (void)s, remember(p, n, 2); }
cudaError_t cudaFree(void *p) { return forget(p, 2); }
cudaError_t cudaFreeHost(void *p) { return forget(p, 1); }
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return (void)s, forget(p, 2); }
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { return (void)s, forget(p, 2); }

cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int k) { return copy(d, s, n, k); }
cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, int k) { return copy(d, s, n, k); }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int k, cudaStream_t st) {
    return (void)st, copy(d, s, n, k);
}
cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, int k, cudaStream_t st) {
    return (void)st, copy(d, s, n, k);
}

static cudaError_t copy2d(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k) {
    /* through the global symbol, as a runtime calling its own API would */
    cudaError_t (*row)(void *, const void *, size_t, int) =
        (cudaError_t(*)(void *, const void *, size_t, int))dlsym(RTLD_DEFAULT, "cudaMemcpy");
    if (!row) row = cudaMemcpy;
    for (size_t i = 0; i < h; i++) {
        cudaError_t e = row((char *)d + i * dp, (const char *)s + i * sp, w, k);
        if (e) return e;
    }
    return OK;
}
cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k) {
    return copy2d(d, dp, s, sp, w, h, k);
}
cudaError_t cudaMemcpy2D_ptds(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k) {
    return copy2d(d, dp, s, sp, w, h, k);
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k,
                              cudaStream_t st) {
    return (void)st, copy2d(d, dp, s, sp, w, h, k);
}
cudaError_t cudaMemcpy2DAsync_ptsz(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k,
                                   cudaStream_t st) {
    return (void)st, copy2d(d, dp, s, sp, w, h, k);
}
cudaError_t cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n) {
    return (void)dd, (void)sd, copy(d, s, n, 3);
}
cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st) {
    return (void)dd, (void)sd, (void)st, copy(d, s, n, 3);
}

/* A "symbol" is any remembered device allocation here. */
cudaError_t cudaMemcpyToSymbol(const void *sym, const void *s, size_t n, size_t off, int k) {
    return (void)k, copy((char *)sym + off, s, n, 4);
}
cudaError_t cudaMemcpyToSymbol_ptds(const void *sym, const void *s, size_t n, size_t off, int k) {
    return cudaMemcpyToSymbol(sym, s, n, off, k);
}
cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *s, size_t n, size_t off, int k, cudaStream_t st) {
    return (void)st, cudaMemcpyToSymbol(sym, s, n, off, k);
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *s, size_t n, size_t off, int k, cudaStream_t st) {
    return (void)st, cudaMemcpyToSymbol(sym, s, n, off, k);
}
cudaError_t cudaMemcpyFromSymbol(void *d, const void *sym, size_t n, size_t off, int k) {
    return (void)k, copy(d, (const char *)sym + off, n, 4);
}
cudaError_t cudaMemcpyFromSymbol_ptds(void *d, const void *sym, size_t n, size_t off, int k) {
    return cudaMemcpyFromSymbol(d, sym, n, off, k);
}
cudaError_t cudaMemcpyFromSymbolAsync(void *d, const void *sym, size_t n, size_t off, int k, cudaStream_t st) {
    return (void)st, cudaMemcpyFromSymbol(d, sym, n, off, k);
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *d, const void *sym, size_t n, size_t off, int k, cudaStream_t st) {
    return (void)st, cudaMemcpyFromSymbol(d, sym, n, off, k);
}

cudaError_t cudaMemset(void *p, int v, size_t n) {
    struct alloc *a = find(p);
    if (!a || a->type < 2) return last_error = ERR_VALUE;
    memset(p, v, n);
    return OK;
}
cudaError_t cudaMemset_ptds(void *p, int v, size_t n) { return cudaMemset(p, v, n); }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) { return (void)s, cudaMemset(p, v, n); }
cudaError_t cudaMemsetAsync_ptsz(void *p, int v, size_t n, cudaStream_t s) { return (void)s, cudaMemset(p, v, n); }

/* A "kernel" here is a host function void (*)(void **args), run at launch. */
cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t sh, cudaStream_t s) {
    (void)g, (void)b, (void)sh, (void)s;
    if (!f) return last_error = ERR_VALUE;
    ((void (*)(void **))(uintptr_t)f)(args);
    return OK;
}
cudaError_t cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **args, size_t sh, cudaStream_t s) {
    return cudaLaunchKernel(f, g, b, args, sh, s);
}
cudaError_t cudaDeviceSynchronize(void) { return OK; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return (void)s, OK; }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return (void)s, OK; }
