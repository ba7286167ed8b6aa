/* bug_resume_checkpoint: "Training resumes from the checkpoint, then the
 * very first optimizer step fails." A first run trained on the GPU and
 * saved the model and the optimizer. The resumed run loads the checkpoint
 * onto the CPU (map_location cpu, the usual advice), restores the model and
 * then the optimizer, and only then moves the model to the GPU. As in
 * PyTorch, loading the optimizer state puts each state tensor on the device
 * its parameter is on at that moment: the CPU. Moving the model afterwards
 * moves the parameters, not the Adam moments, and the step mixes the two.
 * Fix: move the model to the device before loading the optimizer state (or
 * move the state too). */
#include "example.h"

#include <string.h>
#include <unistd.h>

static char ckpt[64];
static void remove_checkpoint(void) { unlink(ckpt); }

/* One Adam step on a batch, on whatever device model and data are on. */
static void train_step(dt_module *model, dt_optimizer *opt, dt_tensor *x, dt_tensor *y) {
    dt_optimizer_zero_grad(opt);
    dt_tensor *logits = must(dt_module_forward(model, x));
    dt_tensor *loss = must(dt_cross_entropy(logits, y, NULL, DT_IGNORE_INDEX_DEFAULT));
    dt_backward(loss);
    dt_optimizer_step(opt); /* the resumed run fails here */
    printf("loss %.4f\n", dt_item(loss));
    dt_free(loss), dt_free(logits);
}

int main(void) {
    dt_device dev = example_device(), cpu = dt_cpu_device();
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 16, 4, &x_cpu, &y_cpu);
    dt_tensor *x = must(dt_to(x_cpu, dev)), *y = must(dt_to(y_cpu, dev));
    snprintf(ckpt, sizeof ckpt, "/tmp/bug_resume_checkpoint.%d.ckpt", (int)getpid());
    atexit(remove_checkpoint);

    /* ---- the first run: train on the device, save model and optimizer */
    dt_module *model = example_mlp(16, 32, 4);
    dt_module_to(model, dev);
    dt_optimizer *opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));
    train_step(model, opt, x, y);
    dt_state_dict *save = must(dt_state_dict_new());
    dt_state_dict *msd = must(dt_module_state_dict(model)), *osd = must(dt_optimizer_state_dict(opt));
    dt_state_dict_merge(save, "model.", msd), dt_state_dict_merge(save, "optimizer.", osd);
    if (dt_save(save, ckpt) < 0) return 1;
    dt_state_dict_free(save), dt_state_dict_free(msd), dt_state_dict_free(osd);
    dt_optimizer_free(opt), dt_module_free(model);
    printf("checkpoint saved\n");

    /* ---- the resumed run */
    model = example_mlp(16, 32, 4);
    opt = must(dt_adam(model, 1e-2, 0.9, 0.999, 1e-8, 0));
    dt_state_dict *ck = must(dt_load(ckpt, &cpu)); /* devtrace: origin */ /* devtrace: fix */
    dt_state_dict *m = must(dt_state_dict_sub(ck, "model.")), *o = must(dt_state_dict_sub(ck, "optimizer."));
    dt_module_load_state_dict(model, m, 1);
    dt_optimizer_load_state_dict(opt, o); /* the state goes where the parameters are: the cpu */
    dt_module_to(model, dev);
    train_step(model, opt, x, y);
    dt_state_dict_free(m), dt_state_dict_free(o), dt_state_dict_free(ck);
    dt_optimizer_free(opt), dt_module_free(model);
    dt_free(x), dt_free(y), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
