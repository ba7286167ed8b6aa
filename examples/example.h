/* What the bug_* and ok_* examples share: the device they train on (cuda:0
 * when there is one, real or simulated with DEVTRACE_SIM_CUDA=1, else the
 * cpu, where every bug hides), a small learnable classification problem,
 * and a check for calls that return NULL. Each example is one short
 * training program that makes one device-placement mistake the way a user
 * would; the runtime's default error handler then prints PyTorch's message
 * and exits 1, as an uncaught RuntimeError would. */
#ifndef DEVTRACE_EXAMPLE_H
#define DEVTRACE_EXAMPLE_H

#include <devtrace/dt.h>
#include <devtrace/dt_nn.h>
#include <stdio.h>
#include <stdlib.h>

/* Exits with the runtime's error when a call failed (the default handler
 * already does; this covers a program that installs its own). */
static inline void *must(void *p) {
    if (!p) {
        fprintf(stderr, "error: %s\n", dt_last_error());
        exit(1);
    }
    return p;
}

/* The device to train on, printed with its backend. */
static inline dt_device example_device(void) {
    dt_device dev = dt_default_device();
    char name[16];
    printf("device: %s (%s)\n", dt_device_str(dev, name, sizeof name), dt_device_backend_name(dev));
    dt_manual_seed(0);
    return dev;
}

/* n noisy points (features wide) around `classes` random centres, with
 * their class labels (int64), both on the cpu as a dataset would hold them. */
static inline void example_data(int64_t n, int64_t features, int64_t classes, dt_tensor **x, dt_tensor **y) {
    dt_tensor *centres = must(dt_randn(DT_SHAPE(classes, features), dt_cpu_device()));
    dt_tensor *labels = must(dt_randint(0, classes, DT_SHAPE(n), dt_cpu_device()));
    dt_tensor *noise = must(dt_randn(DT_SHAPE(n, features), dt_cpu_device()));
    dt_tensor *picked = must(dt_index_select(centres, 0, labels));
    *x = must(dt_add(picked, noise));
    *y = labels;
    dt_free(centres), dt_free(noise), dt_free(picked);
}

/* A two-layer classifier, made on the cpu as PyTorch makes modules. */
static inline dt_module *example_mlp(int64_t in, int64_t hidden, int64_t out) {
    dt_module *layers[] = {must(dt_nn_linear(in, hidden, 1)), must(dt_nn_relu()), must(dt_nn_linear(hidden, out, 1))};
    return must(dt_nn_sequential(3, layers));
}

#endif
