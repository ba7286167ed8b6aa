/* Internal structures of libdtrt's training layer (modules), shared by
 * module.c, optim.c, state.c and parallel.c. */
#ifndef DEVTRACE_NN_IMPL_H
#define DEVTRACE_NN_IMPL_H

#include <devtrace/dt_nn.h>

#include "dt_impl.h"

struct dt_mod_entry {
    char *local;  /* name within its module ("weight") */
    dt_tensor *t; /* retained */
    int buffer;   /* a buffer (no grad) rather than a parameter */
};

struct dt_mod_child {
    char *name;   /* name within its parent ("fc1") */
    dt_module *m; /* owned */
};

struct dt_module {
    char *type;                /* "Linear", or the program's own */
    dt_forward_fn forward;     /* NULL: a container without forward */
    void *self;                /* the program's state */
    void (*free_self)(void *); /* frees self, or NULL */
    int training;              /* train() / eval() */
    char *prefix;              /* dotted path from the outermost module, "" or "fc1." */
    dt_module *parent;         /* NULL for the outermost */
    struct dt_mod_entry *e;    /* parameters and buffers, registration order */
    int ne, cap_e;
    struct dt_mod_child *ch; /* children, registration order */
    int nc, cap_c;
    int64_t cfg[4]; /* built-in layers: stride, padding, kernel... */
    double fcfg;    /* dropout p */
};

/* Calls fn(ctx, path, tensor, is_buffer) on every entry of m, depth first
 * (own entries, then children), path relative to m with prefix prepended.
 * Stops at and returns fn's first non-zero result (-1 with an error raised
 * when out of memory). */
DT_HIDDEN int dt__module_walk(const dt_module *m, const char *prefix,
                              int (*fn)(void *ctx, const char *path, dt_tensor *t, int buffer), void *ctx);
/* A replica of m on dev whose tensors are differentiable copies of m's. */
DT_HIDDEN dt_module *dt__module_replicate(const dt_module *m, dt_device dev);

#endif /* DEVTRACE_NN_IMPL_H */
