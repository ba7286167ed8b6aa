// rule: never-moved
// code: scale = must(dt_to(scale, dt_device_of(features)));
/* A normalization helper makes its per-feature scale on the cpu and multiplies the features it is given by it.
 * The helper has no device variable of its own; the features it receives are on the device: the scale follows
 * them (dt_device_of(features)), so the helper keeps running on whatever device its caller uses. */
#include "example.h"

static dt_tensor *rescale(const dt_tensor *features) {
    static const float s[4] = {0.5f, 1.0f, 2.0f, 4.0f};
    dt_tensor *scale = must(dt_from_data(s, DT_F32, DT_SHAPE(4), dt_cpu_device())); /* devtrace: fix */
    dt_tensor *out = dt_mul(features, scale);
    dt_free(scale);
    return out;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu = must(dt_randn(DT_SHAPE(8, 4), dt_cpu_device()));
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_tensor *y = must(rescale(x));
    dt_tensor *m = must(dt_mean(y));
    printf("mean %.4f\n", dt_item(m));
    dt_free(m), dt_free(y), dt_free(x), dt_free(x_cpu);
    return 0;
}
