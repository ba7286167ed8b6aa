// rule: optimizer-state-left-behind
// code: dt_state_dict *opt_state = dt_optimizer_state_dict(opt);
// code: if (opt_state) dt_optimizer_load_state_dict(opt, opt_state), dt_state_dict_free(opt_state);
/* A warm-up step of Adam taken on the cpu (a smoke test of the pipeline) before the model is moved: Adam's state
 * is made then, on the cpu, next to each parameter; the move takes the parameters and leaves the state, which the
 * next step on the device reads. The optimizer's state dict loaded back after the move places each state next to
 * its parameter. */
#include "example.h"

static void train_step(dt_module *model, dt_optimizer *opt, dt_tensor *x, dt_tensor *y) {
    dt_optimizer_zero_grad(opt);
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
    dt_backward(loss);
    if (dt_optimizer_step(opt) != 0) {
        fprintf(stderr, "error: %s\n", dt_last_error());
        exit(1);
    }
    printf("loss %.4f\n", dt_item(loss));
    dt_free(loss), dt_free(logits);
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 8, 3, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(8, 3, 1));
    dt_optimizer *opt = must(dt_adam(model, 0.01, 0.9, 0.999, 1e-8, 0));
    train_step(model, opt, x_cpu, y_cpu);
    dt_module_to(model, dev); /* devtrace: fix */
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    train_step(model, opt, x, y);
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
