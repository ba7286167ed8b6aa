/* bug_warmup_schedule: "Loss scaling by a warmup schedule breaks the first
 * step on the GPU." The warmup factors for the first steps are computed once,
 * before training, as a CPU tensor (arange, as a scheduler would tabulate
 * them). Each step takes its factor with narrow, a one-element view (not a
 * 0-dim scalar, so PyTorch's scalar exception does not apply), and scales
 * the loss on the GPU by it. Fix: tabulate the schedule on the device (or
 * move it once), not the factor at every step. */
#include "example.h"

#define STEPS 4

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    dt_device cpu = dt_cpu_device();
    dt_tensor *warmup = must(dt_arange(0.25, 1.01, 0.25, DT_F32, cpu)); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(warmup, "warmup");
    for (int i = 0; i < STEPS; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_tensor *factor = must(dt_narrow(warmup, 0, i, 1));
        dt_tensor *scaled = must(dt_mul(loss, factor));
        dt_tensor *total = must(dt_sum(scaled));
        dt_backward(total);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i + 1, dt_item(loss));
        dt_free(total), dt_free(scaled), dt_free(factor), dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_module_free(model), dt_free(warmup);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
