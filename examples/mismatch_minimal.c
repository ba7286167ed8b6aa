/* The smallest device-placement bug: a classifier's weights and inputs are
 * moved to the GPU, but the one-hot targets are built on the CPU, so the
 * loss fails with PyTorch's "Expected all tensors to be on the same device"
 * error. On a laptop without a GPU everything stays on the CPU and the bug
 * hides; DEVTRACE_SIM_CUDA=1 simulates a GPU so it fails here as on a server.
 *
 *   ./mismatch_minimal           the bug (exits 1 with the error on a GPU)
 *   ./mismatch_minimal --fixed   the targets are moved too: prints the loss
 */
#include <devtrace/dt.h>
#include <stdio.h>
#include <string.h>

#define N 8 /* batch */
#define D 4 /* features */
#define C 3 /* classes */

int main(int argc, char **argv) {
    int fixed = argc > 1 && strcmp(argv[1], "--fixed") == 0;
    dt_device dev = dt_default_device();
    char name[16];
    printf("device: %s (%s)\n", dt_device_str(dev, name, sizeof name), dt_device_backend_name(dev));
    dt_manual_seed(0);

    // ---- model: logits = x W^T + b, moved to the device
    dt_tensor *w_cpu = dt_randn(DT_SHAPE(C, D), dt_cpu_device());
    dt_tensor *b_cpu = dt_zeros(DT_SHAPE(C), DT_F32, dt_cpu_device());
    dt_tensor *w = dt_to(w_cpu, dev), *b = dt_to(b_cpu, dev);
    dt_set_name(w, "fc.weight");
    dt_set_name(b, "fc.bias");

    // ---- a batch: inputs moved, one-hot targets built on the cpu
    dt_tensor *x_cpu = dt_randn(DT_SHAPE(N, D), dt_cpu_device());
    dt_tensor *labels = dt_randint(0, C, DT_SHAPE(N), dt_cpu_device());
    dt_set_name(labels, "labels");
    dt_tensor *x = dt_to(x_cpu, dev);
    dt_set_name(x, "inputs");
    dt_tensor *classes = dt_arange(0, C, 1, DT_I64, dt_cpu_device()); /* one-hot targets: bool (N, C), cpu */
    dt_tensor *lab_col = dt_unsqueeze(labels, 1);
    dt_tensor *onehot = dt_eq(lab_col, classes); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(onehot, "targets");
    if (fixed) {
        dt_tensor *moved = dt_to(onehot, dev);
        dt_free(onehot);
        onehot = moved;
    }

    // ---- loss = -(onehot * log_softmax(logits)).sum() / N
    dt_tensor *logits = dt_linear(x, w, b);
    dt_tensor *logp = dt_log_softmax(logits, 1);
    dt_tensor *picked = dt_mul(logp, onehot); /* the bug fails here */
    dt_tensor *total = dt_sum(picked);
    double loss = -dt_item(total) / N;
    printf("loss: %.4f\n", loss);

    dt_tensor *all[] = {w_cpu, b_cpu, w, b, x_cpu, labels, x, classes, lab_col, onehot, logits, logp, picked, total};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
    return 0;
}
