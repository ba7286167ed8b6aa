/* bug_class_weight: "Adding class weights for the imbalanced classes broke
 * the loss." The weights are computed from the class counts of the training
 * labels, which live on the CPU, so the weight tensor is on the CPU too;
 * cross_entropy gets cuda logits and targets with a cpu weight.
 * Fix: move the class weights to the device once, after computing them. */
#include "example.h"

#define CLASSES 4

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(512, 16, CLASSES, &x_cpu, &y_cpu);
    /* inverse class frequencies, from the labels (on the cpu, like the dataset) */
    const int64_t *labels = dt_data(y_cpu);
    float counts[CLASSES] = {0}, w[CLASSES];
    for (int64_t i = 0; i < 512; i++) counts[labels[i]] += 1;
    for (int c = 0; c < CLASSES; c++) w[c] = 512.0f / (CLASSES * (counts[c] + 1));
    dt_device cpu = dt_cpu_device();
    dt_tensor *weights = dt_from_data(w, DT_F32, DT_SHAPE(CLASSES), cpu); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(weights, "class_weight");

    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_module *model = example_mlp(16, 32, CLASSES);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int i = 1; i <= 5; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, weights, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu), dt_free(weights);
    return 0;
}
