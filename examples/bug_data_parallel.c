/* bug_data_parallel: "With two GPUs the loss says cuda:0 and cuda:1."
 * The model is wrapped in data parallel over cuda:0 and cuda:1, and the
 * batch was put on cuda:1 (the script once ran on the second GPU alone and
 * kept device = "cuda:1"). Data parallel scatters the inputs over both GPUs
 * and gathers the outputs on its output device, cuda:0; the labels are
 * still on cuda:1, and the loss mixes the two GPUs.
 * Fix: put the batch on the data-parallel output device, cuda:0.
 * Needs two GPUs: DEVTRACE_SIM_CUDA=2 simulates them. */
#include "example.h"

int main(void) {
    example_device();
    if (dt_cuda_device_count() < 2) {
        fprintf(stderr, "bug_data_parallel: needs 2 GPUs (DEVTRACE_SIM_CUDA=2 simulates them)\n");
        return 2;
    }
    dt_device gpus[2] = {dt_cuda_device(0), dt_cuda_device(1)};
    dt_device device = gpus[1]; /* left over from a single-GPU run */
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, device));
    dt_tensor *y = must(dt_to(y_cpu, device)); /* devtrace: origin */ /* devtrace: fix */
    dt_set_name(y, "labels");
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, gpus[0]);
    dt_data_parallel *dp = must(dt_data_parallel_new(model, 2, gpus, gpus[0]));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    for (int i = 1; i <= 3; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *logits = must(dt_data_parallel_forward(dp, x));
        dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_backward(loss);
        dt_optimizer_step(opt);
        printf("step %d loss %.4f\n", i, dt_item(loss));
        dt_free(loss), dt_free(logits);
    }
    dt_optimizer_free(opt), dt_data_parallel_free(dp), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
