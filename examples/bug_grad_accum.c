/* bug_grad_accum: "Gradient accumulation into our own buffers fails on the
 * GPU." To average gradients over several micro-batches the program keeps
 * one accumulator per parameter, made with zeros_like right after building
 * the model, before the model was moved: zeros_like copies the parameter's
 * device at that moment, the CPU. The gradients live on the GPU with their
 * parameters. Fix: make the accumulators after moving the model (or on the
 * device). */
#include "example.h"

#define MICRO 4

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(16, 4, 1));
    dt_tensor *acc_w = must(dt_zeros_like(dt_module_get(model, "weight"))); /* devtrace: origin */
    dt_tensor *acc_b = must(dt_zeros_like(dt_module_get(model, "bias")));   /* devtrace: fix */
    dt_set_name(acc_w, "acc.weight");
    dt_set_name(acc_b, "acc.bias");
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    for (int k = 0; k < MICRO; k++) {
        dt_tensor *xs = must(dt_narrow(x, 0, k * 32, 32)), *ys = must(dt_narrow(y, 0, k * 32, 32));
        dt_module_zero_grad(model);
        dt_tensor *logits = must(dt_module_forward(model, xs));
        dt_tensor *loss = must(dt_cross_entropy(logits, ys, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        if (dt_add_(acc_w, dt_grad(dt_module_get(model, "weight"))) != 0) return 1;
        if (dt_add_(acc_b, dt_grad(dt_module_get(model, "bias"))) != 0) return 1;
        printf("micro-batch %d loss %.4f\n", k, dt_item(loss));
        dt_free(loss), dt_free(logits), dt_free(xs), dt_free(ys);
    }
    dt_module_free(model), dt_free(acc_w), dt_free(acc_b);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
