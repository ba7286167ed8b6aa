/* ok_setup_on_device: a correct program, the twin of the setup-constant
 * bugs, and the report must say so. The model is moved before use; a
 * per-feature gain, a warmup schedule and the running loss are made once on
 * the device and viewed (unsqueeze, expand, narrow) at every step; the
 * recurrent-style state and the padding mask are made on the device of the
 * tensors they meet; the 0-dim CPU learning-rate factor joins device
 * tensors as a scalar, which PyTorch allows. */
#include "example.h"

#define FEATURES 16
#define STEPS    4

int main(void) {
    dt_device dev = example_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(128, FEATURES, 4, &x_cpu, &y_cpu);
    dt_module *model = must(dt_nn_linear(FEATURES, 4, 1));
    dt_module_to(model, dev);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    dt_optimizer *opt = must(dt_sgd(model, 0.1, 0.9, 0));
    dt_tensor *gain = must(dt_full(DT_SHAPE(FEATURES), 1.0, DT_F32, dev));
    dt_tensor *warmup = must(dt_arange(0.25, 1.01, 0.25, DT_F32, dev));
    dt_tensor *running = must(dt_zeros(DT_SHAPE(1), DT_F32, dev));
    dt_tensor *half = must(dt_full(DT_SCALAR, 0.5, DT_F32, dt_cpu_device()));
    for (int i = 0; i < STEPS; i++) {
        dt_optimizer_zero_grad(opt);
        dt_tensor *row = must(dt_unsqueeze(gain, 0));
        dt_tensor *wide = must(dt_expand(row, DT_SHAPE(128, FEATURES)));
        dt_tensor *scaled_x = must(dt_mul(x, wide));
        dt_tensor *h0 = must(dt_zeros(DT_SHAPE(128, 4), DT_F32, dt_device_of(scaled_x)));
        dt_tensor *out = must(dt_module_forward(model, scaled_x));
        dt_tensor *logits = must(dt_add(out, h0));
        dt_tensor *pos = must(dt_arange(0, 4, 1, DT_I64, dt_device_of(logits)));
        dt_tensor *mask = must(dt_gt_scalar(pos, 5)); /* nothing masked */
        dt_tensor *masked = must(dt_masked_fill(logits, mask, -1e9));
        dt_tensor *loss = must(dt_cross_entropy(masked, y, NULL, DT_IGNORE_INDEX_DEFAULT));
        dt_tensor *factor = must(dt_narrow(warmup, 0, i, 1));
        dt_tensor *scaled = must(dt_mul(loss, factor));
        dt_tensor *halved = must(dt_mul(scaled, half));
        dt_tensor *total = must(dt_sum(halved));
        dt_backward(total);
        dt_optimizer_step(opt);
        dt_tensor *val = must(dt_detach(loss));
        if (dt_add_(running, val) != 0) return 1;
        printf("step %d loss %.4f\n", i + 1, dt_item(loss));
        dt_tensor *tmp[] = {val, total,  halved, scaled, factor,   loss, masked, mask,
                            pos, logits, out,    h0,     scaled_x, wide, row};
        for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) dt_free(tmp[k]);
    }
    printf("running loss %.4f\n", dt_item(running));
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(gain), dt_free(warmup), dt_free(running), dt_free(half);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
