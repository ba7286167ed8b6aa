// rule: never-moved
// code: x = dt_to(x, dev);
/* A batch stacked from a dataset's rows on the cpu, in the loop that uses it: the batch is where the value was
 * made (dt_stack), not the dataset it was cut from, which stays on the cpu as datasets do. The move goes right
 * after the stack, by the program's device. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *data = must(dt_randn(DT_SHAPE(16, 4), dt_cpu_device()));
    dt_module *model = must(dt_nn_linear(4, 2, 1));
    dt_module_to(model, dev);
    for (int64_t i = 0; i < 16; i += 4) {
        dt_tensor *rows[4];
        for (int j = 0; j < 4; j++) rows[j] = must(dt_select(data, 0, i + j));
        dt_tensor *x = must(dt_stack(4, rows, 0)); /* devtrace: origin */ /* devtrace: fix */
        dt_tensor *y = must(dt_module_forward(model, x));
        dt_tensor *m = must(dt_mean(y));
        printf("batch %d: %.4f\n", (int)(i / 4), dt_item(m));
        dt_free(m), dt_free(y), dt_free(x);
        for (int j = 0; j < 4; j++) dt_free(rows[j]);
    }
    dt_module_free(model), dt_free(data);
    return 0;
}
