// rule: module-never-moved
// code: dt_module_to(restored, dev);
/* A helper rebuilds the model from a checkpoint: it makes a fresh module (on the cpu, as modules are made) and
 * loads the trained state into it, which keeps the module's device. The helper has no device; the caller binds
 * the rebuilt model, and that is where it is moved, not where the helper made it. */
#include "example.h"

#include <unistd.h>

static char path[64];
static void remove_checkpoint(void) { unlink(path); }

static dt_module *load_model(const char *file) {
    dt_module *net = example_mlp(16, 32, 4);
    dt_state_dict *sd = must(dt_load(file, NULL));
    if (dt_module_load_state_dict(net, sd, 1) != 0) exit(1);
    dt_state_dict_free(sd);
    return net;
}

int main(void) {
    dt_device dev = example_device();
    snprintf(path, sizeof path, "/tmp/devtrace_model.%d.ckpt", (int)getpid());
    atexit(remove_checkpoint);
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev));
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_state_dict *sd = must(dt_module_state_dict(model));
    if (dt_save(sd, path) < 0) return 1;
    dt_state_dict_free(sd), dt_module_free(model);

    dt_module *restored = load_model(path); /* devtrace: fix */
    dt_tensor *logits = must(dt_module_forward(restored, x));
    dt_tensor *m = must(dt_mean(logits));
    printf("mean logit %.4f\n", dt_item(m));
    dt_free(m), dt_free(logits), dt_module_free(restored);
    dt_free(x), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
