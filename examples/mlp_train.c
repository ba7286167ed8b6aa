/* A correct training run: a multi-layer perceptron learns a synthetic
 * 4-class problem (noisy points around 4 random centres in 32 dimensions).
 * It picks dt_default_device() (cuda:0 when there is one, real or simulated
 * with DEVTRACE_SIM_CUDA=1, else the cpu), moves the model and every batch,
 * trains with Adam, prints the mean loss of each epoch, and checks that the
 * last one fell below LOSS_THRESHOLD (exit 1 if not). It is also the
 * reference workload of the tracer's benchmarks: about 1 to 3 seconds
 * untraced on a 2-core machine.
 *
 *   ./mlp_train [--device cpu|cuda|cuda:N] [--epochs N] [--workers N]
 */
#include <devtrace/dt.h>
#include <devtrace/dt_nn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES        2048
#define FEATURES       32
#define HIDDEN         96
#define CLASSES        4
#define BATCH          64
#define LOSS_THRESHOLD 0.2

/* Exits with the runtime's error when a call failed (the default handler
 * already does; this covers a program that installs its own). */
static void *must(void *p) {
    if (!p) {
        fprintf(stderr, "mlp_train: %s\n", dt_last_error());
        exit(1);
    }
    return p;
}

/* Noisy points around CLASSES random centres: labels are learnable. */
static void make_data(dt_tensor **x, dt_tensor **y) {
    dt_tensor *centres = must(dt_randn(DT_SHAPE(CLASSES, FEATURES), dt_cpu_device()));
    dt_tensor *labels = must(dt_randint(0, CLASSES, DT_SHAPE(SAMPLES), dt_cpu_device()));
    dt_tensor *noise = must(dt_randn(DT_SHAPE(SAMPLES, FEATURES), dt_cpu_device()));
    dt_tensor *picked = must(dt_index_select(centres, 0, labels));
    dt_tensor *scaled = must(dt_mul_scalar(noise, 2.2));
    *x = must(dt_add(picked, scaled));
    *y = labels;
    dt_free(centres), dt_free(noise), dt_free(picked), dt_free(scaled);
}

int main(int argc, char **argv) {
    dt_device dev = dt_default_device();
    int epochs = 8, workers = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (dt_device_parse(argv[++i], &dev) < 0) return 2;
        } else if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            workers = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--device cpu|cuda|cuda:N] [--epochs N] [--workers N]\n", argv[0]);
            return 2;
        }
    }
    char name[16];
    printf("device: %s (%s)\n", dt_device_str(dev, name, sizeof name), dt_device_backend_name(dev));
    dt_manual_seed(0);

    dt_tensor *x, *y;
    make_data(&x, &y);
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x, y}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, BATCH, 1, 1234, 0, workers));

    dt_module *layers[] = {must(dt_nn_linear(FEATURES, HIDDEN, 1)), must(dt_nn_relu()),
                           must(dt_nn_linear(HIDDEN, HIDDEN, 1)), must(dt_nn_relu()),
                           must(dt_nn_linear(HIDDEN, CLASSES, 1))};
    dt_module *model = must(dt_nn_sequential(5, layers));
    if (dt_module_to(model, dev) < 0) return 1;
    dt_optimizer *opt = must(dt_adam(model, 1e-3, 0.9, 0.999, 1e-8, 0));

    double last = 0;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        double total = 0;
        int batches = 0;
        dt_tensor *b[2];
        int rc;
        while ((rc = dt_dataloader_next(loader, b)) == 1) {
            dt_tensor *inputs = must(dt_to(b[0], dev)), *labels = must(dt_to(b[1], dev));
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *loss = must(dt_cross_entropy(logits, labels, NULL, DT_IGNORE_INDEX_DEFAULT));
            if (dt_backward(loss) < 0 || dt_optimizer_step(opt) < 0) return 1;
            total += dt_item(loss);
            batches++;
            dt_free(loss), dt_free(logits), dt_free(inputs), dt_free(labels), dt_free(b[0]), dt_free(b[1]);
        }
        if (rc < 0) return 1;
        last = total / batches;
        printf("epoch %d loss %.6f\n", epoch, last);
    }
    int ok = last < LOSS_THRESHOLD;
    printf("final loss %.6f, threshold %.2f: %s\n", last, LOSS_THRESHOLD, ok ? "ok" : "NOT REACHED");
    dt_optimizer_free(opt);
    dt_module_free(model);
    dt_dataloader_free(loader);
    dt_dataset_free(ds);
    dt_free(x), dt_free(y);
    return ok ? 0 : 1;
}
