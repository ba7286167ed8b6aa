/* bug_labels_on_cpu: "The forward pass runs on the GPU, then the loss
 * fails: Expected all tensors to be on the same device, cuda:0 and cpu."
 * The training loop moves each batch's inputs to the device but forgets
 * the labels; the model's output is on the GPU, the labels are still where
 * the DataLoader made them, and cross_entropy refuses to mix the two.
 * Fix: move the labels where the inputs are moved. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x, *y;
    example_data(512, 16, 4, &x, &y);
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x, y}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, 64, 1, 7, 0, 0));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));

    for (int epoch = 1; epoch <= 3; epoch++) {
        dt_tensor *batch[2];
        double total = 0;
        int n = 0;
        while (dt_dataloader_next(loader, batch) == 1) { /* devtrace: origin */
            dt_tensor *inputs = must(dt_to(batch[0], dev));
            dt_tensor *labels = batch[1]; /* devtrace: fix */ /* the labels stay on the cpu */
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *loss = must(dt_cross_entropy(logits, labels, NULL, DT_IGNORE_INDEX_DEFAULT));
            dt_backward(loss);
            dt_optimizer_step(opt);
            total += dt_item(loss), n++;
            dt_free(loss), dt_free(logits), dt_free(inputs), dt_free(batch[0]), dt_free(batch[1]);
        }
        printf("epoch %d loss %.4f\n", epoch, total / n);
    }
    dt_optimizer_free(opt), dt_module_free(model), dt_dataloader_free(loader), dt_dataset_free(ds);
    dt_free(x), dt_free(y);
    return 0;
}
