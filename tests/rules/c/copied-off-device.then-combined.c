// rule: copied-off-device
// code: pair = must(dt_to(pair, dev));
// says: it was copied off the device at
/* A copy to the cpu, then assembled with itself into a wider tensor (dt_cat) on the cpu, which meets the device's
 * tensors: the copy is where it got onto the cpu, not the assembly after it (the odd operand's origin is the
 * copy's line). */
#include "example.h"

int main(void) {
    dt_device dev = example_device(), cpu = dt_cpu_device();
    dt_tensor *x_cpu = must(dt_randn(DT_SHAPE(8, 4), dt_cpu_device()));
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_tensor *half = must(dt_to(x, cpu)); /* devtrace: origin */
    dt_tensor *parts[2] = {half, half};
    dt_tensor *pair = must(dt_cat(2, parts, 1));
    dt_tensor *wide = must(dt_cat(2, (dt_tensor *[]){x, x}, 1));
    dt_tensor *sum = must(dt_add(wide, pair)); /* devtrace: fix */
    dt_tensor *m = must(dt_mean(sum));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(sum), dt_free(wide), dt_free(pair), dt_free(half), dt_free(x), dt_free(x_cpu);
    return 0;
}
