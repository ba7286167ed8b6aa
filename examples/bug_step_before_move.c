/* bug_step_before_move: "A quick sanity step on the CPU, then onto the
 * GPU, and the first real optimizer step fails." The optimizer is made and
 * stepped once on the CPU to check that everything runs; that step creates
 * Adam's moment tensors lazily, on the CPU, next to the parameters. Then the
 * model is moved to the GPU: the parameters go, the optimizer's state stays.
 * Fix: move the model before the first step (or create the optimizer after
 * the move and skip the CPU warm-up). */
#include "example.h"

static double step(dt_module *model, dt_optimizer *opt, dt_tensor *x, dt_tensor *y) {
    dt_optimizer_zero_grad(opt);
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
    dt_backward(loss);
    dt_optimizer_step(opt); /* devtrace: origin */
    double v = dt_item(loss);
    dt_free(loss), dt_free(logits);
    return v;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = example_mlp(16, 32, 4);
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));

    printf("warm-up loss on the cpu %.4f\n", step(model, opt, x_cpu, y_cpu)); /* a sanity check */
    dt_module_to(model, dev);                                                 /* devtrace: fix */
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    for (int i = 1; i <= 5; i++) printf("step %d loss %.4f\n", i, step(model, opt, x, y));
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
