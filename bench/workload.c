/* A training-like workload on the runtime for the traced/untraced ratio: a
 * two-layer MLP's forward pass, loss, and a hand-written parameter update,
 * on dt_default_device(), for a fixed number of steps. (examples/mlp_train,
 * with autograd, comes with the training layer; until then this stands in.)
 * Prints the final loss, which must not change under the tracer. */
#include <devtrace/dt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 1000; /* about 2 s on a 2-core machine */
    dt_device dev = dt_default_device();
    dt_manual_seed(0);
    const int64_t B = 64, D = 64, H = 128, C = 10;
    dt_tensor *w1 = dt_randn(DT_SHAPE(H, D), dev), *b1 = dt_zeros(DT_SHAPE(H), DT_F32, dev);
    dt_tensor *w2 = dt_randn(DT_SHAPE(C, H), dev), *b2 = dt_zeros(DT_SHAPE(C), DT_F32, dev);
    dt_mul_scalar_(w1, 0.1);
    dt_mul_scalar_(w2, 0.1);
    double loss = 0;
    for (int s = 0; s < steps; s++) {
        dt_tensor *x_cpu = dt_randn(DT_SHAPE(B, D), dt_cpu_device());
        dt_tensor *y_cpu = dt_randint(0, C, DT_SHAPE(B), dt_cpu_device());
        dt_tensor *x = dt_to(x_cpu, dev), *y = dt_to(y_cpu, dev);
        dt_tensor *h = dt_linear(x, w1, b1), *a = dt_relu(h), *z = dt_linear(a, w2, b2);
        dt_tensor *lp = dt_log_softmax(z, 1);
        dt_tensor *cls = dt_arange(0, C, 1, DT_I64, dev), *yc = dt_unsqueeze(y, 1), *oh = dt_eq(yc, cls);
        dt_tensor *pick = dt_mul(lp, oh), *tot = dt_sum(pick);
        loss = -dt_item(tot) / (double)B;
        /* a stand-in update: decay the weights a little */
        dt_mul_scalar_(w1, 0.9999);
        dt_mul_scalar_(w2, 0.9999);
        dt_tensor *all[] = {x_cpu, y_cpu, x, y, h, a, z, lp, cls, yc, oh, pick, tot};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
    }
    printf("loss %.6f\n", loss);
    dt_free(w1);
    dt_free(b1);
    dt_free(w2);
    dt_free(b2);
    return 0;
}
