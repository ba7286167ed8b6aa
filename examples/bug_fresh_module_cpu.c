/* bug_fresh_module_cpu: "I moved my data to the GPU and it still says cpu."
 * The program picks the GPU, builds a new classifier and moves the batch and
 * its labels there, but never moves the model itself: its weight and bias
 * stay on the CPU, where modules are made. Two of the three operands of the
 * first linear layer are on the CPU, so counting operands would blame the
 * one input the program deliberately sent to the GPU; what the program did
 * (every explicit move went to cuda:0) says the model is what was left
 * behind. Fix: move the model to the device right after building it. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_module *model = must(dt_nn_linear(16, 4, 1)); /* devtrace: origin */ /* devtrace: fix */
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int i = 1; i <= 3; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
