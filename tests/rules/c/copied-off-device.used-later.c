// rule: copied-off-device
// code: snapshot = must(dt_to(snapshot, dev));
// says: it was copied off the device at
// says: copied-off-device.used-later.c:16 (main)
/* A copy to the cpu (dt_to(x, cpu), PyTorch's .cpu()) made at one line for a summary, and used several lines further
 * down next to the device's tensors. As in bug_metrics_on_cpu, the failing statement gets the device's tensor back
 * right before it; the advice cites the copy at its own line, not the line of the fix. */
#include "example.h"

int main(void) {
    dt_device dev = example_device(), cpu = dt_cpu_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 8, 2, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_tensor *feats = must(dt_relu(x));
    dt_tensor *snapshot = must(dt_to(feats, cpu));
    dt_tensor *scaled = must(dt_mul_scalar(feats, 2.0));
    dt_tensor *shifted = must(dt_add_scalar(scaled, 1.0));
    dt_tensor *mixed = must(dt_add(shifted, snapshot)); /* devtrace: fix */
    dt_tensor *m = must(dt_mean(mixed));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(mixed), dt_free(shifted), dt_free(scaled), dt_free(snapshot), dt_free(feats);
    dt_free(x), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
