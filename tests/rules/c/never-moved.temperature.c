// rule: never-moved
// code: temperature = must(dt_to(temperature, dev));
/* Logits divided by a per-class temperature before the softmax: the temperatures are made on the cpu in main,
 * next to a model and a batch the program moved, and never moved themselves. The move goes right after they are
 * made, by the program's own name and device variable. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 8, 3, &x_cpu, &y_cpu);
    dt_module *model = example_mlp(8, 16, 3);
    dt_module_to(model, dev);
    dt_tensor *temperature = must(dt_full(DT_SHAPE(3), 1.5, DT_F32, dt_cpu_device())); /* devtrace: fix */
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *scaled = must(dt_div(logits, temperature));
    dt_tensor *p = must(dt_softmax(scaled, 1));
    dt_tensor *m = must(dt_mean(p));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(p), dt_free(scaled), dt_free(logits), dt_free(x), dt_free(temperature);
    dt_module_free(model), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
