/* bug_hidden_state: "My recurrent cell runs on the CPU but not on the GPU."
 * A custom recurrent layer makes its initial hidden state inside forward,
 * with zeros() and no device, as the tutorials' RNNs do: every call makes a
 * fresh CPU tensor, and the first step adds it to the input projection on
 * the GPU. The model itself was moved correctly. Fix: make the state on the
 * input's device where it is made (zeros(..., device of the input)). */
#include "example.h"

#define HIDDEN 8

static dt_tensor *cell_forward(dt_module *m, const dt_tensor *input) {
    dt_tensor *proj = dt_module_forward(dt_module_child(m, "in"), input);
    if (!proj) return NULL;
    int64_t n = dt_size(input, 0);
    dt_tensor *h0 = dt_zeros(DT_SHAPE(n, HIDDEN), DT_F32, dt_cpu_device()); /* devtrace: origin */ /* devtrace: fix */
    dt_tensor *sum = h0 ? dt_add(proj, h0) : NULL;
    dt_tensor *h = sum ? dt_tanh(sum) : NULL;
    dt_free(sum), dt_free(h0), dt_free(proj);
    return h;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *cell = must(dt_module_new("Cell", cell_forward, NULL, NULL));
    dt_module_add_child(cell, "in", must(dt_nn_linear(16, HIDDEN, 1)));
    dt_module *layers[] = {cell, must(dt_nn_linear(HIDDEN, 4, 1))};
    dt_module *model = must(dt_nn_sequential(2, layers));
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));
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
