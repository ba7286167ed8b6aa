/* bug_stray_cuda: "Evaluation on the CPU fails at the calibration step."
 * The evaluation script runs on the CPU on purpose (the GPU is busy
 * training), but its temperature-scaling step was pasted from the training
 * script, .cuda() included. Both operands of the division count the same,
 * one on each device, and the program's one explicit move went to the GPU;
 * everything else it did ran on the CPU. The report says that the intent is
 * not clear, names both devices with what happened on each, and takes the
 * CPU, where the work ran. Fix: drop the stray .cuda() (keep the
 * temperature on the CPU). */
#include "example.h"

int main(void) {
    example_device();
    dt_device cpu = dt_cpu_device(); /* evaluation on the CPU, on purpose */
    dt_tensor *x, *y;
    example_data(256, 16, 4, &x, &y);
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_train(model, 0);
    dt_set_grad_enabled(0);
    double correct = 0;
    for (int k = 0; k < 4; k++) {
        dt_tensor *xs = must(dt_narrow(x, 0, k * 64, 64)), *ys = must(dt_narrow(y, 0, k * 64, 64));
        dt_tensor *logits = must(dt_module_forward(model, xs));
        dt_tensor *pred = must(dt_argmax_dim(logits, 1, 0));
        dt_tensor *hits = must(dt_eq(pred, ys));
        dt_tensor *hits_f = must(dt_cast(hits, DT_F32));
        dt_tensor *n = must(dt_sum(hits_f));
        correct += dt_item(n);
        dt_free(n), dt_free(hits_f), dt_free(hits), dt_free(pred), dt_free(logits), dt_free(xs), dt_free(ys);
    }
    printf("accuracy %.3f\n", correct / 256);
    dt_tensor *t = must(dt_full(DT_SHAPE(1), 1.5, DT_F32, cpu));
    dt_tensor *temperature = must(dt_cuda(t, 0)); /* devtrace: origin */ /* devtrace: fix */
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *calibrated = must(dt_div(logits, temperature));
    dt_tensor *probs = must(dt_softmax(calibrated, 1));
    dt_tensor *top = must(dt_max(probs));
    printf("largest calibrated probability %.3f\n", dt_item(top));
    dt_free(top), dt_free(probs), dt_free(calibrated), dt_free(logits), dt_free(temperature), dt_free(t);
    dt_module_free(model), dt_free(x), dt_free(y);
    return 0;
}
