// rule: peer-moved-from-same-source
// code: targets = must(dt_to(targets, dev));
/* A regression's batches come from a loader as inputs and targets; the loop moves the inputs to the device and
 * takes the targets as they come, on the cpu, into the loss next to the model's output. The targets' move goes
 * beside the inputs', where the loop binds them. */
#include "example.h"

int main(void) {
    dt_device dev = example_device();
    dt_tensor *features = must(dt_randn(DT_SHAPE(96, 4), dt_cpu_device()));
    dt_tensor *values = must(dt_randn(DT_SHAPE(96, 1), dt_cpu_device()));
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){features, values}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, 32, 0, 0, 0, 0));
    dt_module *model = must(dt_nn_linear(4, 1, 1));
    dt_module_to(model, dev);
    dt_tensor *batch[2];
    double total = 0;
    while (dt_dataloader_next(loader, batch) == 1) {
        dt_tensor *inputs = must(dt_to(batch[0], dev));
        dt_tensor *targets = batch[1]; /* devtrace: fix */
        dt_tensor *pred = must(dt_module_forward(model, inputs));
        dt_tensor *loss = must(dt_mse_loss(pred, targets));
        total += dt_item(loss);
        dt_free(loss), dt_free(pred), dt_free(inputs), dt_free(batch[0]), dt_free(batch[1]);
    }
    printf("loss %.4f\n", total);
    dt_module_free(model), dt_dataloader_free(loader), dt_dataset_free(ds), dt_free(features), dt_free(values);
    return 0;
}
