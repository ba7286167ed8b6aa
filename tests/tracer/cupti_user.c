/* A program on the CUDA runtime API for the CUPTI tests, built two ways:
 * cupti_user_static links the fake cudart statically (nvcc's default: the
 * interposition never sees its calls, only CUPTI does) and cupti_user_dyn
 * links it as libcudart.so.13 (both see them: each call must still be one
 * row). `driver` also calls the driver API directly, as cuBLAS or PyTorch
 * do. It prints a checksum, so a traced run can be compared with an
 * untraced one; its status is 0 when every call succeeded. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int cudaError_t;
typedef struct {
    unsigned x, y, z;
} dim3;
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, void *);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t, int);
cudaError_t cudaMemcpyPeer(void *, int, const void *, int, size_t);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, void *);
cudaError_t cudaDeviceSynchronize(void);

enum { H2D = 1, D2H = 2 };
#define N 256

static void twice(void **args) { /* the "kernel" the fake driver runs on the host */
    float *p = *(float **)args[0];
    for (int i = 0; i < N; i++) p[i] *= 2;
}

/* The driver API, as a library that skips cudart calls it. */
static int driver_calls(float *out) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 1;
    int (*alloc)(uint64_t *, size_t) = (int (*)(uint64_t *, size_t))dlsym(h, "cuMemAlloc_v2");
    int (*htod)(uint64_t, const void *, size_t) = (int (*)(uint64_t, const void *, size_t))dlsym(h, "cuMemcpyHtoD_v2");
    int (*dtoh)(void *, uint64_t, size_t) = (int (*)(void *, uint64_t, size_t))dlsym(h, "cuMemcpyDtoH_v2");
    int (*release)(uint64_t) = (int (*)(uint64_t))dlsym(h, "cuMemFree_v2");
    if (!alloc || !htod || !dtoh || !release) return 1;
    static float src[64];
    for (int i = 0; i < 64; i++) src[i] = 3;
    uint64_t d = 0;
    int rc = alloc(&d, sizeof src);
    rc |= htod(d, src, sizeof src); /* devtrace: driver copy */
    rc |= dtoh(out, d, sizeof src);
    rc |= release(d);
    return rc;
}

int main(int argc, char **argv) {
    int with_driver = argc > 1 && !strcmp(argv[1], "driver");
    static float host[N], back[N];
    float *dev = NULL, *pinned = NULL;
    int rcs = 0;
    for (int i = 0; i < N; i++) host[i] = (float)i;
    rcs |= cudaMalloc((void **)&dev, sizeof host);
    rcs |= cudaMallocHost((void **)&pinned, sizeof host);
    rcs |= cudaMemcpy(dev, host, sizeof host, H2D); /* devtrace: batch to the device */
    void *args[] = {&dev};
    dim3 one = {1, 1, 1};
    rcs |= cudaLaunchKernel((const void *)twice, one, one, args, 0, NULL);
    rcs |= cudaMemcpyAsync(pinned, dev, sizeof host, D2H, NULL);
    rcs |= cudaMemset(dev, 0, 16);
    rcs |= cudaDeviceSynchronize();
    rcs |= cudaMemcpy(back, dev, sizeof back, D2H); /* devtrace: result to the host */
    /* the other copy families, into memory of their own: 16 rows of 64 bytes, then device to device */
    float *dev2 = NULL, *dev3 = NULL, *staging = NULL;
    rcs |= cudaMalloc((void **)&dev2, sizeof host);
    rcs |= cudaMalloc((void **)&dev3, sizeof host);
    rcs |= cudaHostAlloc((void **)&staging, 64, 0);
    rcs |= cudaMemcpy2D(dev2, 64, host, 64, 64, 16, H2D);
    rcs |= cudaMemcpyPeer(dev3, 0, dev2, 0, sizeof host);
    rcs |= cudaFree(dev3);
    rcs |= cudaFree(dev2);
    rcs |= cudaFreeHost(staging);
    rcs |= cudaFree(dev);
    rcs |= cudaFreeHost(pinned);
    double sum = 0;
    for (int i = 0; i < N; i++) sum += back[i];
    if (with_driver) {
        float out[64];
        rcs |= driver_calls(out);
        sum += out[0];
    }
    printf("checksum %.1f rc %d\n", sum, rcs);
    return rcs ? 1 : 0;
}
