// rule: made-in-callee
// code: weights = must(dt_to(weights, dev));
/* A helper computes class weights from the labels, which live on the cpu like the dataset, and returns a cpu
 * tensor; the caller binds it and passes it to the loss next to the device's logits. The helper has no device to
 * move to: the move goes where the caller binds what it returned, by the caller's name for it. */
#include "example.h"

#define CLASSES 4

static dt_tensor *inverse_frequency(dt_tensor *labels, int64_t n) {
    const int64_t *l = dt_data(labels);
    float counts[CLASSES] = {0}, w[CLASSES];
    for (int64_t i = 0; i < n; i++) counts[l[i]] += 1;
    for (int c = 0; c < CLASSES; c++) w[c] = (float)n / (CLASSES * (counts[c] + 1));
    dt_tensor *inv = must(dt_from_data(w, DT_F32, DT_SHAPE(CLASSES), dt_cpu_device()));
    return inv;
}

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(256, 16, CLASSES, &x_cpu, &y_cpu);
    dt_tensor *weights = inverse_frequency(y_cpu, 256); /* devtrace: fix */
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_module *model = example_mlp(16, 32, CLASSES);
    dt_module_to(model, dev);
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *loss = must(dt_cross_entropy(logits, y, weights, DT_IGNORE_INDEX_DEFAULT));
    printf("loss %.4f\n", dt_item(loss));
    dt_free(loss), dt_free(logits), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu), dt_free(weights);
    return 0;
}
