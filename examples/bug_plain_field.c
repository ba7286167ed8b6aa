/* bug_plain_field: "model.to('cuda') moved everything, except it didn't."
 * A custom layer keeps a fixed per-feature scale in a plain struct field
 * instead of registering it as a buffer. Moving the module moves what was
 * registered (the linear layer's weight and bias); the field stays on the
 * CPU, and the forward pass multiplies a cuda activation by it.
 * Fix: register the tensor as a buffer where it is made, so that moving
 * the module moves it. */
#include "example.h"

struct scaled_linear {
    dt_tensor *scale; /* a plain field: not registered, so never moved */
};

static dt_tensor *scaled_forward(dt_module *m, const dt_tensor *input) {
    struct scaled_linear *self = dt_module_self(m);
    dt_tensor *h = dt_module_forward(dt_module_child(m, "fc"), input);
    if (!h) return NULL;
    dt_tensor *out = dt_mul(h, self->scale);
    dt_free(h);
    return out;
}

static void scaled_free(void *p) {
    struct scaled_linear *self = p;
    dt_free(self->scale);
    free(self);
}

static dt_module *scaled_linear_new(int64_t in, int64_t out) {
    struct scaled_linear *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    self->scale = must(dt_full(DT_SHAPE(out), 0.5, DT_F32, dt_cpu_device())); /* devtrace: origin */
    dt_set_name(self->scale, "scale");
    dt_module *m = must(dt_module_new("ScaledLinear", scaled_forward, self, scaled_free)); /* devtrace: fix */
    dt_module_add_child(m, "fc", must(dt_nn_linear(in, out, 1)));
    return m;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = must(scaled_linear_new(16, 4));
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0, 0));
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
