// rule: view-of-unmoved-base
// code: table = must(dt_to(table, dev));
/* A table of per-step scales made once on the cpu; each step takes its row (a view) and multiplies the device's
 * activations by it. Moving the row in the loop would copy it every step: the base is moved once, where it is
 * made. (Made by a plain call: where a wrapper such as the examples' must() takes the factory's result, the trace
 * cannot tell that the name holds the tensor made inside it, and the fix is advice; see docs/rules.md.) */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *table = dt_rand(DT_SHAPE(4, 8), dt_cpu_device()); /* devtrace: fix */
    if (!table) return 1;
    dt_tensor *x_cpu = must(dt_randn(DT_SHAPE(16, 8), dt_cpu_device()));
    dt_tensor *x = must(dt_to(x_cpu, dev));
    double total = 0;
    for (int step = 0; step < 4; step++) {
        dt_tensor *row = must(dt_select(table, 0, step));
        dt_tensor *h = must(dt_mul(x, row));
        dt_tensor *m = must(dt_mean(h));
        total += dt_item(m);
        dt_free(m), dt_free(h), dt_free(row);
    }
    printf("total %.4f\n", total);
    dt_free(x), dt_free(x_cpu), dt_free(table);
    return 0;
}
