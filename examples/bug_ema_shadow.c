/* bug_ema_shadow: "The EMA of the weights fails at its first update." The
 * program keeps an exponential moving average of the weights for
 * evaluation: a shadow copy made with clone() of each parameter when the
 * model is built, updated in place after every optimizer step. The shadow
 * was cloned before the model was moved to the GPU, so it is a CPU copy of
 * what were then CPU parameters; the move took the parameters and left the
 * copy behind. Fix: make the shadow copy after the move (or move it too). */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(16, 4, 1)); /* devtrace: origin */
    dt_tensor *weight = dt_module_get(model, "weight");
    int was = dt_set_grad_enabled(0);
    dt_tensor *shadow = must(dt_clone(weight)); /* devtrace: fix */
    dt_set_grad_enabled(was);
    dt_set_name(shadow, "ema.weight");
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int i = 1; i <= 3; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        was = dt_set_grad_enabled(0);
        dt_mul_scalar_(shadow, 0.99);
        if (dt_add_scaled_(shadow, weight, 0.01) != 0) return 1;
        dt_set_grad_enabled(was);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_module_free(model), dt_free(shadow);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
