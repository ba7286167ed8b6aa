/* A correct training run of a small convolutional network: 12x12 one-channel
 * images of four noisy patterns (a horizontal bar, a vertical bar, a
 * diagonal, a square) classified by Conv2d -> ReLU -> MaxPool2d -> Conv2d ->
 * ReLU -> MaxPool2d -> Flatten -> Linear. Picks dt_default_device(), moves
 * the model and every batch, trains with SGD and momentum, prints the mean
 * loss of each epoch and checks that the last one fell below LOSS_THRESHOLD
 * (exit 1 if not).
 *
 *   ./cnn_train [--device cpu|cuda|cuda:N] [--epochs N]
 */
#include <devtrace/dt.h>
#include <devtrace/dt_nn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES        512
#define SIDE           12
#define CLASSES        4
#define BATCH          32
#define LOSS_THRESHOLD 0.3

static void *must(void *p) {
    if (!p) {
        fprintf(stderr, "cnn_train: %s\n", dt_last_error());
        exit(1);
    }
    return p;
}

/* Pattern `label` at a random offset, plus noise, into img (SIDE x SIDE). */
static void draw(float *img, int label, unsigned *seed) {
    int oy = rand_r(seed) % 4, ox = rand_r(seed) % 4;
    for (int i = 0; i < SIDE * SIDE; i++) img[i] = (float)(rand_r(seed) % 1000) / 2500.0f;
    for (int k = 0; k < 8; k++) {
        int y = 0, x = 0;
        switch (label) {
        case 0: y = oy + 3, x = ox + k; break;                  /* horizontal */
        case 1: y = oy + k, x = ox + 3; break;                  /* vertical */
        case 2: y = oy + k, x = ox + k; break;                  /* diagonal */
        default: y = oy + 2 + k / 3, x = ox + 2 + k % 3; break; /* square */
        }
        img[y * SIDE + x] += 1.0f;
    }
}

int main(int argc, char **argv) {
    dt_device dev = dt_default_device();
    int epochs = 6;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (dt_device_parse(argv[++i], &dev) < 0) return 2;
        } else if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--device cpu|cuda|cuda:N] [--epochs N]\n", argv[0]);
            return 2;
        }
    }
    char name[16];
    printf("device: %s (%s)\n", dt_device_str(dev, name, sizeof name), dt_device_backend_name(dev));
    dt_manual_seed(0);

    static float pixels[SAMPLES * SIDE * SIDE];
    static int64_t labels[SAMPLES];
    unsigned seed = 7;
    for (int i = 0; i < SAMPLES; i++) {
        labels[i] = i % CLASSES;
        draw(pixels + (size_t)i * SIDE * SIDE, (int)labels[i], &seed);
    }
    dt_tensor *x = must(dt_from_data(pixels, DT_F32, 4, (int64_t[]){SAMPLES, 1, SIDE, SIDE}, dt_cpu_device()));
    dt_tensor *y = must(dt_from_data(labels, DT_I64, 1, (int64_t[]){SAMPLES}, dt_cpu_device()));
    dt_dataset *ds = must(dt_tensor_dataset(2, (dt_tensor *[]){x, y}));
    dt_dataloader *loader = must(dt_dataloader_new(ds, BATCH, 1, 99, 0, 0));

    dt_module *layers[] = {must(dt_nn_conv2d(1, 8, 3, 1, 1, 1)),
                           must(dt_nn_relu()),
                           must(dt_nn_max_pool2d(2, 2)),
                           must(dt_nn_conv2d(8, 16, 3, 1, 1, 1)),
                           must(dt_nn_relu()),
                           must(dt_nn_max_pool2d(2, 2)),
                           must(dt_nn_flatten()),
                           must(dt_nn_linear(16 * 3 * 3, CLASSES, 1))};
    dt_module *model = must(dt_nn_sequential(8, layers));
    if (dt_module_to(model, dev) < 0) return 1;
    dt_optimizer *opt = must(dt_sgd(model, 0.05, 0.9, 0));

    double last = 0;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        double total = 0;
        int batches = 0, rc;
        dt_tensor *b[2];
        while ((rc = dt_dataloader_next(loader, b)) == 1) {
            dt_tensor *inputs = must(dt_to(b[0], dev)), *targets = must(dt_to(b[1], dev));
            dt_optimizer_zero_grad(opt);
            dt_tensor *logits = must(dt_module_forward(model, inputs));
            dt_tensor *loss = must(dt_cross_entropy(logits, targets, NULL, DT_IGNORE_INDEX_DEFAULT));
            if (dt_backward(loss) < 0 || dt_optimizer_step(opt) < 0) return 1;
            total += dt_item(loss);
            batches++;
            dt_free(loss), dt_free(logits), dt_free(inputs), dt_free(targets), dt_free(b[0]), dt_free(b[1]);
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
