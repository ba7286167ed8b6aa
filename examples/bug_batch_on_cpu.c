/* bug_batch_on_cpu: "I called model.to('cuda'), so why does the first
 * forward pass complain about cpu?" The model is moved to the GPU, and so
 * are the labels, but the input batch is fed to the model exactly as the
 * DataLoader yields it: on the CPU. The first linear layer sees a cpu input
 * and cuda weights. Fix: move each batch to the device as it arrives. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x, *y;
    example_data(512, 16, 4, &x, &y);
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x, y}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, 64, 1, 7, 0, 0));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));

    for (int epoch = 1; epoch <= 3; epoch++) {
        dt_tensor *batch[2];
        double total = 0;
        int n = 0;
        while (dt_dataloader_next(loader, batch) == 1) {                    /* devtrace: origin */
            dt_tensor *inputs = batch[0]; /* not moved: still on the cpu */ /* devtrace: fix */
            dt_tensor *labels = must(dt_to(batch[1], dev));
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *loss = must(dt_cross_entropy(logits, labels, NULL, DT_IGNORE_INDEX_DEFAULT));
            dt_backward(loss);
            dt_optimizer_step(opt);
            total += dt_item(loss), n++;
            dt_free(loss), dt_free(logits), dt_free(labels), dt_free(batch[0]), dt_free(batch[1]);
        }
        printf("epoch %d loss %.4f\n", epoch, total / n);
    }
    dt_optimizer_free(opt), dt_module_free(model), dt_dataloader_free(loader), dt_dataset_free(ds);
    dt_free(x), dt_free(y);
    return 0;
}
