// rule: plain-attribute
// code: dt_module_register_buffer(m, "offset", self->offset);
/* A layer keeps a learned-once offset in a plain field of its struct; moving the module moves what it registered
 * (its child's weight and bias) and leaves the field on the cpu, where the forward adds it to the device's output.
 * The fix registers the field as the module's buffer where the module is made, so that moving the module moves
 * it. */
#include "example.h"

struct shifted {
    dt_tensor *offset; /* a plain field: never registered */
};

static dt_tensor *shifted_forward(dt_module *m, const dt_tensor *input) {
    struct shifted *self = dt_module_self(m);
    dt_tensor *h = dt_module_forward(dt_module_child(m, "proj"), input);
    if (!h) return NULL;
    dt_tensor *out = dt_add(h, self->offset);
    dt_free(h);
    return out;
}

static void shifted_free(void *p) {
    struct shifted *self = p;
    dt_free(self->offset);
    free(self);
}

static dt_module *shifted_new(int64_t in, int64_t out) {
    struct shifted *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    self->offset = must(dt_zeros(DT_SHAPE(out), DT_F32, dt_cpu_device()));
    dt_set_name(self->offset, "offset");
    dt_module *m = must(dt_module_new("Shifted", shifted_forward, self, shifted_free)); /* devtrace: fix */
    dt_module_add_child(m, "proj", must(dt_nn_linear(in, out, 1)));
    return m;
}

int main(void) {
    dt_device dev = example_device();
    dt_module *model = must(shifted_new(8, 2));
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_randn(DT_SHAPE(5, 8), dev));
    dt_tensor *y = must(dt_module_forward(model, x));
    dt_tensor *m = must(dt_mean(y));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(y), dt_free(x), dt_module_free(model);
    return 0;
}
