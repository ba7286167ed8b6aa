/* bug_cpu_roundtrip: "Adding an accuracy printout broke training two
 * epochs later." To log accuracy, the predicted probabilities are copied to
 * the CPU with .cpu(). Later the same copy is reused as the soft target of a
 * self-distillation term in the loss, next to the cuda logits.
 * Fix: use the device tensor in the loss, and keep the .cpu() copy for the
 * metric only. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(256, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    dt_tensor *soft_targets = NULL; /* the previous epoch's predictions */
    for (int epoch = 1; epoch <= 3; epoch++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        if (soft_targets) { /* self-distillation: stay close to last epoch's predictions */
            dt_tensor *probs = must(dt_softmax(logits, 1));
            dt_tensor *distill = must(dt_mse_loss(probs, soft_targets)); /* devtrace: fix */
            dt_tensor *sum = must(dt_add(loss, distill));
            dt_free(loss), dt_free(probs), dt_free(distill);
            loss = sum;
        }
        dt_backward(loss);
        dt_optimizer_step(opt);
        /* accuracy, computed on the cpu copy */
        dt_tensor *probs = must(dt_softmax(logits, 1)), *detached = must(dt_detach(probs));
        dt_free(soft_targets);
        soft_targets = must(dt_cpu(detached)); /* devtrace: origin */
        dt_tensor *pred = must(dt_argmax_dim(soft_targets, 1, 0));
        dt_tensor *right = must(dt_eq(pred, y_cpu)), *rightf = must(dt_cast(right, DT_F32)),
                  *acc = must(dt_mean(rightf));
        printf("epoch %d loss %.4f accuracy %.3f\n", epoch, dt_item(loss), dt_item(acc));
        dt_tensor *tmp[] = {loss, logits, probs, detached, pred, right, rightf, acc};
        for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) dt_free(tmp[i]);
    }
    dt_free(soft_targets);
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
