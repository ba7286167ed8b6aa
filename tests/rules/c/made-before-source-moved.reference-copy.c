// rule: made-before-source-moved
// code: dt_module_to(model, dev);
/* Fine-tuning with a penalty that keeps the weights near where they started (L2-SP): a reference copy of the
 * weight is cloned when the model is built, before the model is moved; the move takes the weight to the device
 * and leaves the copy on the cpu, where the penalty subtracts one from the other. The program's own move goes
 * before the copy is made. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 8, 3, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(8, 3, 1));
    dt_tensor *weight = dt_module_get(model, "weight");
    int was = dt_set_grad_enabled(0);
    dt_tensor *start = must(dt_clone(weight)); /* devtrace: fix */
    dt_set_grad_enabled(was);
    dt_set_name(start, "start.weight");
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
    dt_tensor *drift = must(dt_sub(weight, start));
    dt_tensor *sq = must(dt_mul(drift, drift));
    dt_tensor *penalty = must(dt_sum(sq));
    printf("loss %.4f penalty %.4f\n", dt_item(loss), dt_item(penalty));
    dt_free(penalty), dt_free(sq), dt_free(drift), dt_free(loss), dt_free(logits);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu), dt_free(start), dt_module_free(model);
    return 0;
}
