/* bug_normalize_const: "Pre-processing on the GPU fails at the
 * normalization." Batches are moved to the GPU first, then normalized with
 * the dataset's per-feature mean and standard deviation, which were written
 * down as constants and turned into tensors on the CPU.
 * Fix: make the mean and std tensors on the device (or move them once). */
#include "example.h"

#define FEATURES 4

static const float MEAN[FEATURES] = {0.485f, 0.456f, 0.406f, 0.5f};
static const float STD[FEATURES] = {0.229f, 0.224f, 0.225f, 0.25f};

int main(void) {
    dt_device dev = example_device();
    dt_device cpu = dt_cpu_device();
    dt_tensor *mean = dt_from_data(MEAN, DT_F32, DT_SHAPE(FEATURES), cpu);                 /* devtrace: origin */
    dt_tensor *std = must(dt_from_data(STD, DT_F32, DT_SHAPE(FEATURES), dt_cpu_device())); /* devtrace: fix */
    dt_set_name(mean, "mean");
    dt_set_name(std, "std");
    for (int step = 1; step <= 3; step++) {
        dt_tensor *raw = must(dt_rand(DT_SHAPE(32, FEATURES), dt_cpu_device()));
        dt_tensor *batch = must(dt_to(raw, dev));
        dt_tensor *centred = must(dt_sub(batch, mean));
        dt_tensor *normed = must(dt_div(centred, std));
        dt_tensor *m = must(dt_mean(normed));
        printf("step %d: normalized mean %.4f\n", step, dt_item(m));
        dt_free(m), dt_free(normed), dt_free(centred), dt_free(batch), dt_free(raw);
    }
    dt_free(mean), dt_free(std);
    return 0;
}
