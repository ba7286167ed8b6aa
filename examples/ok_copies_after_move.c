/* ok_copies_after_move: a correct program, the twin of the copies-before-
 * the-move bugs, and the report must say so. The model is moved first;
 * then the gradient accumulators (zeros_like) and the EMA shadow (clone) are
 * made from the parameters, so they are born on the device; after training,
 * a rebuilt evaluation model is moved to the device before its state is
 * loaded; a metric is read back with .cpu() for logging and used only on the
 * CPU. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(16, 4, 1));
    dt_module_to(model, dev);
    dt_tensor *weight = dt_module_get(model, "weight");
    dt_tensor *acc_w = must(dt_zeros_like(weight));
    int was = dt_set_grad_enabled(0);
    dt_tensor *shadow = must(dt_clone(weight));
    dt_set_grad_enabled(was);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int i = 1; i <= 3; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_module_forward(model, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        if (dt_add_(acc_w, dt_grad(weight)) != 0) return 1;
        dt_optimizer_step(opt);
        was = dt_set_grad_enabled(0);
        dt_mul_scalar_(shadow, 0.99);
        if (dt_add_scaled_(shadow, weight, 0.01) != 0) return 1;
        dt_set_grad_enabled(was);
        dt_tensor *loss_cpu = must(dt_cpu(loss));
        dt_tensor *logged = must(dt_mul_scalar(loss_cpu, 1.0));
        printf("step %d loss %.4f\n", i, dt_item(logged));
        dt_free(logged), dt_free(loss_cpu), dt_free(loss), dt_free(logits);
    }
    dt_state_dict *trained = must(dt_module_state_dict(model));
    dt_module *eval_model = must(dt_nn_linear(16, 4, 1));
    dt_module_to(eval_model, dev);
    if (dt_module_load_state_dict(eval_model, trained, 1) != 0) return 1;
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
    dt_free(acc_w), dt_free(shadow);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
