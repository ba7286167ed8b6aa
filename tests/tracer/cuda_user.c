/* A program on the CUDA runtime API (no CUDA headers: its prototypes are
 * restated), for the interposition tests: every wrapped call family, with
 * pageable, pinned and device memory, a per-thread-stream (_ptds/_ptsz)
 * call, a nested one (cudaMemcpy2D) and a failing one. It prints a checksum
 * of what came back, so a traced run can be compared with an untraced one.
 * Built as a program linked against the real libcudart (or the fake when
 * the toolkit is absent) and as libcuda_ext.so, which a Python host loads
 * with ctypes (RTLD_LOCAL) and calls cuda_user_main from. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct {
    unsigned x, y, z;
} dim3;
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaMallocManaged(void **, size_t, unsigned);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaMemcpy_ptds(void *, const void *, size_t, int);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, cudaStream_t);
cudaError_t cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t, int);
cudaError_t cudaMemcpyPeer(void *, int, const void *, int, size_t);
cudaError_t cudaMemcpyToSymbol(const void *, const void *, size_t, size_t, int);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaSetDevice(int);
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t);

enum { H2D = 1, D2H = 2, D2D = 3, DEFAULT = 4 };

/* The "kernel" the fake runs at launch (a real GPU would not: the test
 * that launches it uses the fake runtime). */
static void scale_kernel(void **args) {
    float *p = *(float **)args[0];
    for (int i = 0; i < 256; i++) p[i] *= 2;
}

#define N 256

int cuda_user_main(int fail_copy) {
    static float pageable[N], back[N];
    float *pinned = NULL, *dev = NULL, *dev2 = NULL, *managed = NULL;
    int rcs = 0;
    for (int i = 0; i < N; i++) pageable[i] = (float)i;
    rcs |= cudaSetDevice(0);
    rcs |= cudaMalloc((void **)&dev, N * sizeof(float));
    rcs |= cudaMalloc((void **)&dev2, N * sizeof(float));
    rcs |= cudaMallocHost((void **)&pinned, N * sizeof(float));
    rcs |= cudaMallocManaged((void **)&managed, N * sizeof(float), 1);
    memcpy(pinned, pageable, sizeof pageable);
    rcs |= cudaMemcpy(dev, pageable, sizeof pageable, H2D);              /* HtoD, pageable */
    rcs |= cudaMemcpyAsync(dev2, pinned, sizeof pageable, H2D, NULL);    /* HtoD, pinned, async */
    rcs |= cudaMemcpy_ptds(dev2, dev, sizeof pageable, D2D);             /* DtoD, per-thread stream */
    rcs |= cudaMemcpy2D(dev, 64, pageable, 64, 64, N * 4 / 64, DEFAULT); /* nested: recorded once */
    void *args[] = {&dev};
    dim3 one = {1, 1, 1};
    rcs |= cudaLaunchKernel((const void *)scale_kernel, one, one, args, 0, NULL);
    rcs |= cudaStreamSynchronize(NULL);
    rcs |= cudaMemcpyToSymbol(dev2, pinned, 16, 0, H2D);
    rcs |= cudaMemcpyPeer(dev2, 1, dev, 0, sizeof pageable);
    rcs |= cudaMemset(managed, 0, 16);
    rcs |= cudaDeviceSynchronize();
    rcs |= cudaMemcpy(back, dev2, sizeof back, DEFAULT);                    /* DtoH, inferred */
    int bad = fail_copy ? cudaMemcpy(back, pageable, sizeof back, D2H) : 0; /* wrong kind: fails */
    double sum = 0;
    for (int i = 0; i < N; i++) sum += back[i];
    cudaFree(dev);
    cudaFree(dev2);
    cudaFree(managed);
    cudaFreeHost(pinned);
    printf("checksum %.1f rc %d failing copy %d\n", sum, rcs, bad);
    return rcs;
}

#ifndef CUDA_USER_LIBRARY
/* A training loop's copies, the way they hide in a real one: each step
 * copies the same pageable host batch to the device again, and reads the
 * loss back (PyTorch's loss.item()), which waits for the device. */
static int train_loop(int steps) {
    static float batch[N];
    float *dev = NULL, loss = 0, total = 0;
    int rcs = cudaMalloc((void **)&dev, N * sizeof(float));
    for (int i = 0; i < N; i++) batch[i] = 1;
    for (int step = 0; step < steps; step++) {
        rcs |= cudaMemcpy(dev, batch, sizeof batch, H2D); /* the batch, every step */
        void *args[] = {&dev};
        dim3 one = {1, 1, 1};
        rcs |= cudaLaunchKernel((const void *)scale_kernel, one, one, args, 0, NULL);
        rcs |= cudaMemcpy(&loss, dev, sizeof loss, D2H); /* loss.item(), every step */
        total += loss;
    }
    cudaFree(dev);
    printf("loop total %.1f rc %d\n", total, rcs);
    return rcs;
}

/* The same loop as a tensor runtime on CUDA runs it (libdtrt's CUDA
 * backend, PyTorch, libtorch): each copy is made inside the tensor op that
 * asked for it, and the runtime tells the tracer of its tensors and ops
 * through the probe ABI (weak here: run untraced, nothing is told). The
 * batch goes to the device by a "to" op on a tensor named "images"; the
 * loss is read back by an item() (a read the runtime reports once its
 * copy is done), and a raw copy is made outside any op. */
#include <devtrace/probe.h>
#pragma weak dtp_runtime_init
#pragma weak dtp_tensor_created
#pragma weak dtp_tensor_named
#pragma weak dtp_op_begin
#pragma weak dtp_op_end
#pragma weak dtp_tensor_transferred
static void tensor(uint64_t id, int on_device, uint64_t op, const char *name) {
    if (!dtp_tensor_created) return;
    static const int64_t shape[1] = {N}, strides[1] = {1};
    struct dtp_tensor t = {id,
                           id,
                           DTP_DTYPE_F32,
                           1,
                           shape,
                           strides,
                           0,
                           {on_device ? DTP_DEVICE_CUDA : DTP_DEVICE_CPU, 0},
                           N * sizeof(float),
                           NULL};
    struct dtp_origin o = {op ? DTP_ORIGIN_OP_OUTPUT : DTP_ORIGIN_FACTORY, op ? "to" : "from_data", 0, op, NULL};
    dtp_tensor_created(&t, &o);
    if (name) dtp_tensor_named(id, name);
}

static int runtime_loop(int steps) {
    static float batch[N];
    float *dev = NULL, loss = 0, total = 0;
    if (dtp_runtime_init) dtp_runtime_init(DTP_ABI_VERSION, "cuda_user", "1");
    int rcs = cudaMalloc((void **)&dev, N * sizeof(float));
    for (int i = 0; i < N; i++) batch[i] = 1;
    for (int step = 0; step < steps; step++) {
        uint64_t host = 100 + 2 * (uint64_t)step, gpu = host + 1, seq = 1 + (uint64_t)step;
        tensor(host, 0, 0, "images");
        struct dtp_arg arg = {"self", host, {DTP_DEVICE_CPU, 0}};
        struct dtp_op op = {seq, "to", 1, &arg};
        if (dtp_op_begin) dtp_op_begin(&op);
        rcs |= cudaMemcpy(dev, batch, sizeof batch, H2D); /* inside the op */
        tensor(gpu, 1, seq, NULL);
        if (dtp_op_end) dtp_op_end(seq, "to", 0, 1, &gpu);
        tensor(gpu + 1000, 1, 0, "loss");
        rcs |= cudaMemcpy(&loss, dev, sizeof loss, D2H); /* loss.item() */
        struct dtp_transfer read = {gpu + 1000,        0,     {DTP_DEVICE_CUDA, 0}, {DTP_DEVICE_CPU, 0}, 4,
                                    DTP_TRANSFER_READ, "item"};
        if (dtp_tensor_transferred) dtp_tensor_transferred(&read);
        rcs |= cudaMemcpy(dev, batch, 16, H2D); /* outside any op */
        total += loss;
    }
    cudaFree(dev);
    printf("runtime loop total %.1f rc %d\n", total, rcs);
    return rcs;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "loop")) return train_loop(argc > 2 ? atoi(argv[2]) : 5) ? 1 : 0;
    if (argc > 1 && !strcmp(argv[1], "runtime")) return runtime_loop(argc > 2 ? atoi(argv[2]) : 5) ? 1 : 0;
    return cuda_user_main(argc > 1) ? 1 : 0;
}
#endif
