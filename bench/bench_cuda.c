/* Interposition cost: calls a CUDA runtime function N times from a 20-frame
 * deep stack and prints ns per call. Linked against libcudart.so.13 and run
 * on the fake one (tests/tracer/fake_cudart.c, through LD_LIBRARY_PATH) so that the
 * call itself costs almost nothing: run untraced and traced (libdevtrace.so
 * preloaded), the difference is what the wrapper adds to each call: finding
 * the real function, the depth guard, the stacks and the record (for a copy,
 * two cudaPointerGetAttributes and a cudaGetDevice too). Used by bench/run.sh.
 * Modes: memcpy (HtoD, 64 bytes from pageable memory), launch (a no-op
 * kernel), malloc (cudaMalloc + cudaFree: two calls per iteration). By
 * default the tracer records the copies and allocations and only counts
 * the launches and frees; run.sh measures DEVTRACE_CUDA_ACTIVITY=1, which
 * records them all, beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int cudaError_t;
typedef struct {
    unsigned x, y, z;
} dim3;
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, void *);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long n_calls;
static const char *which;
static void *dev;
static char host[64];

static void noop_kernel(void **args) { (void)args; }

__attribute__((noinline)) static double burst(void) {
    dim3 one = {1, 1, 1};
    double t0 = now();
    if (strcmp(which, "memcpy") == 0)
        for (long i = 0; i < n_calls; i++) cudaMemcpy(dev, host, sizeof host, 1);
    else if (strcmp(which, "launch") == 0)
        for (long i = 0; i < n_calls; i++) cudaLaunchKernel((const void *)noop_kernel, one, one, NULL, 0, NULL);
    else
        for (long i = 0; i < n_calls; i++) {
            void *p;
            cudaMalloc(&p, 256);
            cudaFree(p);
        }
    return now() - t0;
}

__attribute__((noinline)) static double deep(int depth) {
    if (depth > 0) {
        double r = deep(depth - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    return burst();
}

int main(int argc, char **argv) {
    which = argc > 1 ? argv[1] : "memcpy";
    n_calls = argc > 2 ? atol(argv[2]) : 100000;
    if (cudaMalloc(&dev, sizeof host) != 0) {
        fprintf(stderr, "bench_cuda: cudaMalloc failed (run on tests' fake libcudart)\n");
        return 1;
    }
    deep(16); /* warm: resolve the real functions, page in the ring */
    double s = deep(16);
    int calls = strcmp(which, "malloc") == 0 ? 2 : 1;
    printf("%s %.1f ns/call\n", which, s * 1e9 / (double)n_calls / calls);
    return 0;
}
