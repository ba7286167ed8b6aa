/* bug_rebuilt_after_load: "Training worked; evaluating the trained weights
 * fails." The model trains on the GPU. For evaluation the program builds a
 * fresh copy of the architecture and loads the trained state dict into it,
 * as an evaluation script would; load_state_dict copies the values into the
 * new module's tensors wherever they are, and they are on the CPU. The
 * evaluation batch goes to the GPU as before. Most operands of the failing
 * layer are on the CPU, but the program's work ran on the GPU and every move
 * it made went there. Fix: move the rebuilt model to the device after
 * building it (loading the state dict keeps the device). */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_module *model = must(dt_nn_linear(16, 4, 1));
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));
    for (int i = 1; i <= 5; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_state_dict *trained = must(dt_module_state_dict(model));

    dt_module *eval_model = must(dt_nn_linear(16, 4, 1)); /* devtrace: origin */ /* devtrace: fix */
    if (dt_module_load_state_dict(eval_model, trained, 1) != 0) return 1;
    dt_module_train(eval_model, 0);
    dt_set_grad_enabled(0);
    dt_tensor *logits = must(dt_module_forward(eval_model, x));
    dt_tensor *pred = must(dt_argmax_dim(logits, 1, 0));
    dt_tensor *hits = must(dt_eq(pred, y));
    dt_tensor *hits_f = must(dt_cast(hits, DT_F32));
    dt_tensor *acc = must(dt_mean(hits_f));
    printf("accuracy %.3f\n", dt_item(acc));
    dt_free(acc), dt_free(hits_f), dt_free(hits), dt_free(pred), dt_free(logits);
    dt_state_dict_free(trained);
    dt_optimizer_free(opt), dt_module_free(model), dt_module_free(eval_model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
