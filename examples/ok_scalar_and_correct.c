/* ok_scalar_and_correct: a correct program, and the report must say so.
 * Everything is moved to the device, and it also uses 0-dim CPU tensors as
 * scalars next to device tensors (a loss scale, a temperature), which
 * PyTorch allows: a 0-dim cpu tensor combines with a tensor on any device.
 * devtrace must not call that a device mismatch. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(256, 16, 4, &x_cpu, &y_cpu);
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x_cpu, y_cpu}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, 64, 1, 3, 0, 0));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));
    dt_tensor *temperature = must(dt_full(DT_SCALAR, 2.0, DT_F32, dt_cpu_device())); /* 0-dim, on the cpu */
    dt_tensor *loss_scale = must(dt_full(DT_SCALAR, 0.5, DT_F32, dt_cpu_device()));
    double last = 0;
    for (int epoch = 1; epoch <= 4; epoch++) {
        dt_tensor *b[2];
        double total = 0;
        int n = 0;
        while (dt_dataloader_next(loader, b) == 1) {
            dt_tensor *inputs = must(dt_to(b[0], dev)), *labels = must(dt_to(b[1], dev));
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *cooled = must(dt_div(logits, temperature)); /* cuda / 0-dim cpu: allowed */
            dt_tensor *ce = must(dt_cross_entropy(cooled, labels, NULL, DT_IGNORE_INDEX_DEFAULT));
            dt_tensor *loss = must(dt_mul(ce, loss_scale)); /* allowed too */
            dt_backward(loss);
            dt_optimizer_step(opt);
            total += dt_item(ce), n++;
            dt_tensor *tmp[] = {loss, ce, cooled, logits, inputs, labels, b[0], b[1]};
            for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) dt_free(tmp[i]);
        }
        last = total / n;
        printf("epoch %d loss %.4f\n", epoch, last);
    }
    printf("final loss %.4f: %s\n", last, last < 1.0 ? "ok" : "NOT LEARNING");
    dt_free(temperature), dt_free(loss_scale);
    dt_optimizer_free(opt), dt_module_free(model), dt_dataloader_free(loader), dt_dataset_free(ds);
    dt_free(x_cpu), dt_free(y_cpu);
    return last < 1.0 ? 0 : 1;
}
