// rule: made-in-callee
// code: bias = must(dt_to(bias, dev));
/* A helper builds a position bias from a length alone, binding it under its own name and returning it; it has no
 * device to follow (no device variable, no tensor on the device in scope), so a device written into it would pin
 * one. Its one caller holds the program's device: the move goes where that caller binds what the helper
 * returned. */
#include "example.h"

static dt_tensor *position_bias(int64_t n) {
    dt_tensor *bias = must(dt_arange(0, (double)n, 1, DT_F32, dt_cpu_device()));
    return bias;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu = must(dt_randn(DT_SHAPE(4, 6), dt_cpu_device()));
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_tensor *bias = position_bias(6); /* devtrace: fix */
    dt_tensor *y = must(dt_add(x, bias));
    dt_tensor *m = must(dt_mean(y));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(y), dt_free(bias), dt_free(x), dt_free(x_cpu);
    return 0;
}
