// rule: checkpoint-map-location
// code: mean = must(dt_to(mean, dev));
/* The normalization statistics were computed on the cpu and saved; the training run loads them with no
 * map_location, so each tensor comes back on the device it was saved from, the cpu. The program declares its
 * variables first (C89 style) and binds the tensor from the loaded dict on the line after the load: the move goes
 * after that line, where the name holds the loaded tensor, not after the load, where it is still NULL. */
#include "example.h"

#include <unistd.h>

static char path[64];
static void remove_stats(void) { unlink(path); }

int main(void) {
    dt_device dev = example_device();
    dt_state_dict *stats = NULL;
    dt_tensor *mean = NULL;
    snprintf(path, sizeof path, "/tmp/devtrace_stats.%d.ckpt", (int)getpid());
    atexit(remove_stats);
    dt_tensor *x_cpu, *y_cpu;
    example_data(64, 8, 2, &x_cpu, &y_cpu);
    dt_tensor *col_mean = must(dt_mean_dim(x_cpu, 0, 1));
    dt_state_dict *save = must(dt_state_dict_new());
    dt_state_dict_set_tensor(save, "mean", col_mean);
    if (dt_save(save, path) < 0) return 1;
    dt_state_dict_free(save), dt_free(col_mean);

    dt_tensor *x = must(dt_to(x_cpu, dev));
    stats = must(dt_load(path, NULL));
    mean = must(dt_state_dict_tensor(stats, "mean")); /* devtrace: fix */
    dt_tensor *centred = must(dt_sub(x, mean));
    dt_tensor *m = must(dt_mean(centred));
    printf("mean after centring %.4f\n", dt_item(m));
    dt_free(m), dt_free(centred), dt_state_dict_free(stats);
    dt_free(x), dt_free(x_cpu), dt_free(y_cpu);
    return 0;
}
