/* bug_pos_weight: "Multi-label training fails inside the loss, although
 * logits and targets are both on the GPU." Positives are rare, so the loss
 * is weighted with a pos_weight per label, built with a factory that, as
 * in PyTorch, makes it on the CPU unless told otherwise.
 * binary_cross_entropy_with_logits then sees cuda logits and a cpu weight.
 * Fix: make pos_weight on the device (or move it there once). */
#include "example.h"

#define LABELS 5

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu = must(dt_randn(DT_SHAPE(256, 16), dt_cpu_device()));
    dt_tensor *u = must(dt_rand(DT_SHAPE(256, LABELS), dt_cpu_device()));
    dt_tensor *hits = must(dt_lt_scalar(u, 0.2)), *t_cpu = must(dt_cast(hits, DT_F32)); /* 20% positives */
    dt_tensor *x = must(dt_to(x_cpu, dev)), *targets = must(dt_to(t_cpu, dev));
    dt_module *model = example_mlp(16, 32, LABELS);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    dt_device cpu = dt_cpu_device();
    dt_tensor *pos_weight = must(dt_full(DT_SHAPE(LABELS), 4, DT_F32, cpu)); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(pos_weight, "pos_weight");

    for (int i = 1; i <= 5; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_bce_with_logits(logits, targets, pos_weight));
        dt_backward(loss);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_module_free(model);
    dt_tensor *all[] = {x_cpu, u, hits, t_cpu, x, targets, pos_weight};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
    return 0;
}
