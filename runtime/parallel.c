/* Single-process data parallelism of libdtrt, as torch.nn.DataParallel:
 * replicate the module onto each device (differentiable copies of its
 * parameters), scatter the batch along dim 0, run each replica, gather the
 * outputs on the output device. Gradients reach the module's own parameters
 * through the copies' backward (a transfer back and a sum), which is
 * PyTorch's reduce of replica gradients. */
#include "nn_impl.h"

#include <string.h>

struct dt_data_parallel {
    dt_module *m; /* not owned */
    int n;
    dt_device *devs;
    dt_device out;
};

dt_data_parallel *dt_data_parallel_new(dt_module *module, int ndevices, const dt_device *devices,
                                       dt_device output_device) {
    dt__runtime_init();
    if (!module || ndevices < 1 || !devices) {
        dt__raise(DT_ERR_ARG, "DataParallel", "DataParallel: expected a module and at least one device");
        return NULL;
    }
    for (int i = 0; i < ndevices; i++)
        if (!dt__backend_for(devices[i], "DataParallel")) return NULL;
    if (!dt__backend_for(output_device, "DataParallel")) return NULL;
    dt_data_parallel *dp = calloc(1, sizeof *dp);
    dt_device *devs = malloc(sizeof *devs * (size_t)ndevices);
    if (!dp || !devs) {
        free(dp);
        free(devs);
        dt__raise(DT_ERR_MEMORY, "DataParallel", "out of host memory");
        return NULL;
    }
    memcpy(devs, devices, sizeof *devs * (size_t)ndevices);
    *dp = (struct dt_data_parallel){module, ndevices, devs, output_device};
    return dp;
}

void dt_data_parallel_free(dt_data_parallel *dp) {
    if (!dp) return;
    free(dp->devs);
    free(dp);
}

struct where {
    dt_device want;
    dt_tensor *bad;
};
static int off_device(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)path, (void)buffer;
    struct where *w = ctx;
    if (dt_device_equal(t->storage->device, w->want)) return 0;
    w->bad = t;
    return 1;
}

dt_tensor *dt_data_parallel_forward(dt_data_parallel *dp, const dt_tensor *input) {
    char a[32], b[32];
    struct where w = {dp->devs[0], NULL};
    dt__module_walk(dp->m, "", off_device, &w);
    if (w.bad) {
        dt__raise(DT_ERR_DEVICE, "DataParallel",
                  "module must have its parameters and buffers on device %s (device_ids[0]) but found one of them "
                  "on device: %s (%s)",
                  dt_device_str(dp->devs[0], a, sizeof a), dt_device_str(w.bad->storage->device, b, sizeof b),
                  w.bad->name ? w.bad->name : "unnamed");
        return NULL;
    }
    if (input->ndim == 0) {
        dt__raise(DT_ERR_SHAPE, "DataParallel", "DataParallel: cannot scatter a 0-dim input along dim 0");
        return NULL;
    }
    int64_t n = input->shape[0], chunk = (n + dp->n - 1) / dp->n;
    int used = 0;
    dt_tensor *outs[64] = {0};
    dt_tensor *result = NULL;
    if (dp->n > 64) {
        dt__raise(DT_ERR_ARG, "DataParallel", "DataParallel: at most 64 devices");
        return NULL;
    }
    for (int i = 0; i < dp->n && i * chunk < n; i++, used++) {
        int64_t len = n - i * chunk < chunk ? n - i * chunk : chunk;
        dt_tensor *part = dt_narrow(input, 0, i * chunk, len);
        dt_tensor *moved = part ? dt_to(part, dp->devs[i]) : NULL; /* scatter */
        dt_free(part);
        dt_module *replica = i == 0 || !moved ? dp->m : dt__module_replicate(dp->m, dp->devs[i]);
        dt_tensor *y = moved && replica ? dt_module_forward(replica, moved) : NULL;
        if (replica != dp->m) dt_module_free(replica); /* the graph keeps what backward needs */
        dt_free(moved);
        outs[i] = y ? dt_to(y, dp->out) : NULL; /* gather */
        dt_free(y);
        if (!outs[i]) goto out;
    }
    result = dt_cat(used, outs, 0);
out:
    for (int i = 0; i <= used && i < 64; i++) dt_free(outs[i]); /* outs[used]: NULL, or a failed step's */
    return result;
}
