/* bug_broadcast_view: "The per-channel gain works in the notebook, fails in
 * the training loop." A calibration gain per feature is set up once, as a
 * CPU tensor, before the loop. Each step broadcasts it against the batch
 * (unsqueeze to a row, expand to the batch's shape: views, made anew every
 * step) and multiplies the batch, which was moved to the GPU. The failing
 * operand is the per-step view, but the view only follows its base: moving
 * the view inside the loop would copy the gain at every step. Fix: move the
 * gain to the device once, right after it is made. */
#include "example.h"

#define FEATURES 4
#define BATCH    32

static const float GAIN[FEATURES] = {1.0f, 0.5f, 2.0f, 1.5f};

int main(void) {
    dt_device dev = example_device();
    dt_device cpu = dt_cpu_device();
    dt_tensor *gain = must(dt_from_data(GAIN, DT_F32, DT_SHAPE(4), cpu)); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(gain, "gain");
    for (int step = 1; step <= 3; step++) {
        dt_tensor *raw = must(dt_rand(DT_SHAPE(BATCH, FEATURES), dt_cpu_device()));
        dt_tensor *batch = must(dt_to(raw, dev));
        dt_tensor *row = must(dt_unsqueeze(gain, 0));
        dt_tensor *wide = must(dt_expand(row, DT_SHAPE(BATCH, FEATURES)));
        dt_tensor *scaled = must(dt_mul(batch, wide));
        dt_tensor *m = must(dt_mean(scaled));
        printf("step %d: mean %.4f\n", step, dt_item(m));
        dt_free(m), dt_free(scaled), dt_free(wide), dt_free(row), dt_free(batch), dt_free(raw);
    }
    dt_free(gain);
    return 0;
}
