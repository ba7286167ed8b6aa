/* A CUDA program as nvcc builds it by default: cudart linked statically,
 * so LD_PRELOAD never sees its calls and only CUPTI can. Copies a batch to
 * the device, doubles it there, copies it back, and prints a checksum (or
 * the first error, and exits 3: without a GPU the first call fails). On a
 * GPU machine the cupti suite checks that `devtrace run` recorded its copies
 * at the lines marked below; without one, that tracing changed nothing. */
#include <cstdio>
#include <cuda_runtime.h>

__global__ void twice(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= 2;
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            std::printf("%s: %s\n", #call, cudaGetErrorName(e_));                                                      \
            return 3;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main() {
    const int n = 256;
    static float host[n];
    for (int i = 0; i < n; i++) host[i] = (float)i;
    float *dev = nullptr;
    CHECK(cudaMalloc(&dev, sizeof host));
    CHECK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice)); /* devtrace: static copy in */
    twice<<<1, n>>>(dev, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost)); /* devtrace: static copy out */
    CHECK(cudaFree(dev));
    double sum = 0;
    for (int i = 0; i < n; i++) sum += host[i];
    std::printf("checksum %.1f\n", sum);
    return 0;
}
