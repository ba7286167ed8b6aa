// rule: copied-off-device
// code: moved = must(dt_to(moved, dev));
/* A helper sends a batch to the device it is given, but was written for a two-GPU job whose data went to the
 * second GPU: it copies to cuda:1 whenever there are two. The model is on the program's device (cuda:0). The
 * mistake is the helper's copy: the fix goes in the helper, where it binds the copy, not in each caller. */
#include "example.h"

static dt_tensor *to_device(const dt_tensor *t, dt_device dev) {
    dt_device target = dt_cuda_device_count() > 1 ? dt_cuda_device(1) : dev;
    dt_tensor *moved = must(dt_to(t, target)); /* devtrace: fix */
    return moved;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_tensor *x = to_device(x_cpu, dev);
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *m = must(dt_mean(logits));
    printf("mean logit %.4f\n", dt_item(m));
    dt_free(m), dt_free(logits), dt_module_free(model);
    dt_free(x), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
