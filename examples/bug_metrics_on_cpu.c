/* bug_metrics_on_cpu: "Training went fine; the epoch summary crashes."
 * Every step copies its logits, loss and labels to the CPU for the metrics
 * code (.cpu(), as logging and metric libraries want). The summary at the
 * end recomputes the last batch's loss from a fresh forward pass on the GPU
 * and the labels' logged CPU copy. The program sent as many tensors to the
 * CPU as to the GPU, so its moves alone do not say which device it meant;
 * its work ran on the GPU, and that settles it. Fix: use the device labels
 * in the summary (or CPU copies on both sides). */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0, 0));
    dt_tensor *logged_labels = NULL;
    double sum = 0;
    for (int i = 1; i <= 6; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        dt_tensor *logits_cpu = must(dt_cpu(logits)), *loss_cpu = must(dt_cpu(loss));
        dt_free(logged_labels);
        logged_labels = must(dt_cpu(y)); /* devtrace: origin */
        sum += dt_item(loss_cpu);
        printf("step %d loss %.4f\n", i, dt_item(loss_cpu));
        dt_free(loss_cpu), dt_free(logits_cpu), dt_free(loss), dt_free(logits);
    }
    dt_tensor *last = must(dt_module_forward(model, x));
    dt_tensor *summary = must(dt_cross_entropy(last, logged_labels, NULL, DT_IGNORE_INDEX_DEFAULT)); /* devtrace: fix */
    printf("summary: last loss %.4f, mean %.4f\n", dt_item(summary), sum / 6);
    dt_free(summary), dt_free(last), dt_free(logged_labels);
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
