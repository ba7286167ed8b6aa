/* bug_running_loss: "Accumulating the epoch's loss crashes after the first
 * batch." The program keeps a running total of the loss in a one-element
 * tensor made with zeros(1) (a tensor, not a number, so the total can be
 * averaged and logged later), and adds each batch's detached loss to it in
 * place. The total was made on the CPU; the losses are on the GPU. Fix:
 * make the total on the device (or accumulate loss.item() in a double). */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_device cpu = dt_cpu_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(256, 16, 4, &x_cpu, &y_cpu);
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x_cpu, y_cpu}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, 64, 1, 3, 0, 0));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int epoch = 1; epoch <= 2; epoch++) {
        dt_tensor *running = must(dt_zeros(DT_SHAPE(1), DT_F32, cpu)); /* devtrace: origin */ /* devtrace: fix */
        dt_set_name(running, "running_loss");
        dt_tensor *b[2];
        while (dt_dataloader_next(loader, b) == 1) {
            dt_tensor *inputs = must(dt_to(b[0], dev)), *labels = must(dt_to(b[1], dev));
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *loss = must(dt_cross_entropy(logits, labels, NULL, DT_IGNORE_INDEX_DEFAULT));
            dt_backward(loss);
            dt_optimizer_step(opt);
            dt_tensor *val = must(dt_detach(loss));
            if (dt_add_(running, val) != 0) return 1;
            dt_free(val), dt_free(loss), dt_free(logits), dt_free(inputs), dt_free(labels), dt_free(b[0]),
                dt_free(b[1]);
        }
        printf("epoch %d total loss %.4f\n", epoch, dt_item(running));
        dt_free(running);
    }
    dt_optimizer_free(opt), dt_module_free(model), dt_dataloader_free(loader), dt_dataset_free(ds);
    dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
