/* Modules of libdtrt: a tree of named children, each holding registered
 * parameters and buffers whose tensor names are their dotted paths from the
 * outermost module ("fc1.weight"). dt_module_to() moves exactly the
 * registered tensors in place, as PyTorch's Module.to does, so a tensor a
 * program keeps in a struct field of its own stays behind: the bug class
 * devtrace exists to explain. The built-in layers are modules whose forward
 * calls the functional layers of nn_functional.c. */
#include "dt_impl.h"
#include "nn_impl.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- tree */

/* prefix + name + suffix, malloc'd (NULL when out of memory). */
static char *join_name(const char *prefix, const char *name, const char *suffix) {
    size_t n = strlen(prefix) + strlen(name) + strlen(suffix) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", prefix, name, suffix);
    return s;
}

static int valid_name(const char *what, const char *name) {
    if (!name || !*name || strchr(name, '.')) {
        dt__raise(DT_ERR_ARG, what, "%s: name \"%s\" must be non-empty and contain no \".\"", what, name ? name : "");
        return 0;
    }
    return 1;
}

static int name_taken(const dt_module *m, const char *name) {
    for (int i = 0; i < m->ne; i++)
        if (!strcmp(m->e[i].local, name)) return 1;
    for (int i = 0; i < m->nc; i++)
        if (!strcmp(m->ch[i].name, name)) return 1;
    return 0;
}

/* Renames every registered tensor under m after m's prefix changed. */
static void rename_tree(dt_module *m) {
    for (int i = 0; i < m->ne; i++) {
        char *full = join_name(m->prefix, m->e[i].local, "");
        if (full) {
            dt_set_name(m->e[i].t, full);
            free(full);
        }
    }
    for (int i = 0; i < m->nc; i++) {
        dt_module *c = m->ch[i].m;
        char *p = join_name(m->prefix, m->ch[i].name, ".");
        if (!p) continue;
        free(c->prefix);
        c->prefix = p;
        rename_tree(c);
    }
}

dt_module *dt_module_new(const char *type, dt_forward_fn forward, void *self, void (*free_self)(void *)) {
    dt__runtime_init();
    dt_module *m = calloc(1, sizeof *m);
    if (m) {
        m->type = strdup(type ? type : "Module");
        m->prefix = strdup("");
    }
    if (!m || !m->type || !m->prefix) {
        if (m) free(m->type), free(m->prefix);
        free(m);
        dt__raise(DT_ERR_MEMORY, "module", "out of host memory for a module");
        return NULL;
    }
    m->forward = forward;
    m->self = self;
    m->free_self = free_self;
    m->training = 1;
    return m;
}

void *dt_module_self(const dt_module *m) { return m->self; }
const char *dt_module_type(const dt_module *m) { return m->type; }

static int add_entry(dt_module *m, const char *name, dt_tensor *t, int buffer) {
    const char *what = buffer ? "register_buffer" : "register_parameter";
    if (!valid_name(what, name)) return -1;
    if (!t) {
        dt__raise(DT_ERR_ARG, what, "%s: tensor for \"%s\" is NULL", what, name);
        return -1;
    }
    if (name_taken(m, name)) {
        dt__raise(DT_ERR_ARG, what, "attribute '%s' already exists", name);
        return -1;
    }
    if (!buffer && (t->grad_fn || t->dtype != DT_F32)) {
        dt__raise(DT_ERR_ARG, what,
                  "cannot assign a %s as parameter '%s' (a parameter is a float leaf tensor; detach it first)",
                  t->grad_fn ? "computed tensor" : dt_dtype_name(t->dtype), name);
        return -1;
    }
    if (m->ne == m->cap_e) {
        int cap = m->cap_e ? m->cap_e * 2 : 4;
        struct dt_mod_entry *ne = realloc(m->e, sizeof *ne * (size_t)cap);
        if (!ne) {
            dt__raise(DT_ERR_MEMORY, what, "out of host memory");
            return -1;
        }
        m->e = ne;
        m->cap_e = cap;
    }
    char *local = strdup(name), *full = join_name(m->prefix, name, "");
    if (!local || !full) {
        free(local);
        free(full);
        dt__raise(DT_ERR_MEMORY, what, "out of host memory");
        return -1;
    }
    m->e[m->ne++] = (struct dt_mod_entry){local, dt_retain(t), buffer};
    if (!buffer) dt_set_requires_grad(t, 1);
    dt_set_name(t, full);
    free(full);
    return 0;
}

int dt_module_register_parameter(dt_module *m, const char *name, dt_tensor *t) { return add_entry(m, name, t, 0); }
int dt_module_register_buffer(dt_module *m, const char *name, dt_tensor *t) { return add_entry(m, name, t, 1); }

int dt_module_add_child(dt_module *m, const char *name, dt_module *child) {
    if (!valid_name("add_module", name)) return -1;
    if (!child || child == m || child->parent) {
        dt__raise(DT_ERR_ARG, "add_module", "add_module: \"%s\" is %s", name,
                  !child       ? "NULL"
                  : child == m ? "the module itself"
                               : "already a child of another module");
        return -1;
    }
    if (name_taken(m, name)) {
        dt__raise(DT_ERR_ARG, "add_module", "attribute '%s' already exists", name);
        return -1;
    }
    if (m->nc == m->cap_c) {
        int cap = m->cap_c ? m->cap_c * 2 : 4;
        struct dt_mod_child *nc = realloc(m->ch, sizeof *nc * (size_t)cap);
        if (!nc) {
            dt__raise(DT_ERR_MEMORY, "add_module", "out of host memory");
            return -1;
        }
        m->ch = nc;
        m->cap_c = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        dt__raise(DT_ERR_MEMORY, "add_module", "out of host memory");
        return -1;
    }
    m->ch[m->nc++] = (struct dt_mod_child){copy, child};
    child->parent = m;
    /* the whole subtree takes its names from the outermost module */
    dt_module *root = m;
    while (root->parent) root = root->parent;
    rename_tree(root);
    return 0;
}

dt_module *dt_module_child(const dt_module *m, const char *name) {
    for (int i = 0; i < m->nc; i++)
        if (!strcmp(m->ch[i].name, name)) return m->ch[i].m;
    return NULL;
}

dt_tensor *dt_module_get(const dt_module *m, const char *name) {
    const char *dot = strchr(name, '.');
    if (!dot) {
        for (int i = 0; i < m->ne; i++)
            if (!strcmp(m->e[i].local, name)) return m->e[i].t;
        return NULL;
    }
    for (int i = 0; i < m->nc; i++)
        if (strlen(m->ch[i].name) == (size_t)(dot - name) && !strncmp(m->ch[i].name, name, (size_t)(dot - name)))
            return dt_module_get(m->ch[i].m, dot + 1);
    return NULL;
}

dt_tensor *dt_module_forward(dt_module *m, const dt_tensor *input) {
    if (!m->forward) {
        dt__raise(DT_ERR_STATE, "forward", "Module [%s] is missing the required \"forward\" function", m->type);
        return NULL;
    }
    return m->forward(m, input);
}

static int module_to(dt_module *m, dt_device dev) {
    for (int i = 0; i < m->ne; i++)
        if (dt__move_inplace(m->e[i].t, dev, "module.to") < 0) return -1;
    for (int i = 0; i < m->nc; i++)
        if (module_to(m->ch[i].m, dev) < 0) return -1;
    return 0;
}

int dt_module_to(dt_module *m, dt_device dev) {
    dt__runtime_init();
    if (!dt__backend_for(dev, "module.to")) return -1;
    return module_to(m, dev);
}

void dt_module_train(dt_module *m, int training) {
    m->training = training != 0;
    for (int i = 0; i < m->nc; i++) dt_module_train(m->ch[i].m, training);
}
int dt_module_is_training(const dt_module *m) { return m->training; }

/* Calls fn on every entry, depth first, with its path relative to m. */
int dt__module_walk(const dt_module *m, const char *prefix,
                    int (*fn)(void *ctx, const char *path, dt_tensor *t, int buffer), void *ctx) {
    for (int i = 0; i < m->ne; i++) {
        char *path = join_name(prefix, m->e[i].local, "");
        if (!path) {
            dt__raise(DT_ERR_MEMORY, "module", "out of host memory");
            return -1;
        }
        int rc = fn(ctx, path, m->e[i].t, m->e[i].buffer);
        free(path);
        if (rc) return rc;
    }
    for (int i = 0; i < m->nc; i++) {
        char *p = join_name(prefix, m->ch[i].name, ".");
        if (!p) {
            dt__raise(DT_ERR_MEMORY, "module", "out of host memory");
            return -1;
        }
        int rc = dt__module_walk(m->ch[i].m, p, fn, ctx);
        free(p);
        if (rc) return rc;
    }
    return 0;
}

struct nth {
    int want, seen;
    dt_tensor *t;
    const char *name;
};
static int nth_param(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)path;
    struct nth *n = ctx;
    if (buffer) return 0;
    if (n->seen++ == n->want) {
        n->t = t;
        n->name = t->name; /* the tensor's own name outlives the walk */
        return 1;
    }
    return 0;
}

int dt_module_num_parameters(const dt_module *m) {
    struct nth n = {-1, 0, NULL, NULL};
    dt__module_walk(m, "", nth_param, &n);
    return n.seen;
}

dt_tensor *dt_module_parameter(const dt_module *m, int i, const char **name) {
    struct nth n = {i, 0, NULL, NULL};
    dt__module_walk(m, "", nth_param, &n);
    if (name) *name = n.name;
    return n.t;
}

static int zero_one(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)ctx, (void)path, (void)buffer;
    dt_zero_grad(t);
    return 0;
}
void dt_module_zero_grad(dt_module *m) { dt__module_walk(m, "", zero_one, NULL); }

void dt_module_free(dt_module *m) {
    if (!m) return;
    for (int i = 0; i < m->nc; i++) {
        m->ch[i].m->parent = NULL;
        dt_module_free(m->ch[i].m);
        free(m->ch[i].name);
    }
    for (int i = 0; i < m->ne; i++) {
        dt_free(m->e[i].t);
        free(m->e[i].local);
    }
    if (m->free_self) m->free_self(m->self);
    free(m->ch);
    free(m->e);
    free(m->type);
    free(m->prefix);
    free(m);
}

/* A copy of m's tree whose tensors are dt_to(tensor, dev): differentiable,
 * so gradients of the replica flow back into m's own parameters. The
 * program's self is shared, as PyTorch's replicate shares plain attributes. */
dt_module *dt__module_replicate(const dt_module *m, dt_device dev) {
    dt_module *r = dt_module_new(m->type, m->forward, m->self, NULL);
    if (!r) return NULL;
    r->training = m->training;
    memcpy(r->cfg, m->cfg, sizeof r->cfg);
    r->fcfg = m->fcfg;
    r->e = calloc((size_t)(m->ne ? m->ne : 1), sizeof *r->e);
    r->ch = calloc((size_t)(m->nc ? m->nc : 1), sizeof *r->ch);
    if (!r->e || !r->ch) goto oom;
    r->cap_e = m->ne;
    r->cap_c = m->nc;
    for (int i = 0; i < m->ne; i++) {
        dt_tensor *t = dt_to(m->e[i].t, dev);
        char *local = t ? strdup(m->e[i].local) : NULL;
        if (!local) {
            dt_free(t);
            goto fail;
        }
        r->e[r->ne++] = (struct dt_mod_entry){local, t, m->e[i].buffer};
    }
    for (int i = 0; i < m->nc; i++) {
        dt_module *c = dt__module_replicate(m->ch[i].m, dev);
        char *name = c ? strdup(m->ch[i].name) : NULL;
        if (!name) {
            dt_module_free(c);
            goto fail;
        }
        c->parent = r;
        r->ch[r->nc++] = (struct dt_mod_child){name, c};
    }
    return r;
oom:
    dt__raise(DT_ERR_MEMORY, "replicate", "out of host memory replicating a module");
fail:
    dt_module_free(r);
    return NULL;
}

/* ---------------------------------------------------------------- built-in layers */

static dt_tensor *p_(const dt_module *m, const char *name) { return dt_module_get(m, name); }

static dt_tensor *fwd_linear(dt_module *m, const dt_tensor *x) { return dt_linear(x, p_(m, "weight"), p_(m, "bias")); }
static dt_tensor *fwd_embedding(dt_module *m, const dt_tensor *x) { return dt_embedding(p_(m, "weight"), x); }
static dt_tensor *fwd_conv2d(dt_module *m, const dt_tensor *x) {
    return dt_conv2d(x, p_(m, "weight"), p_(m, "bias"), (int)m->cfg[0], (int)m->cfg[1]);
}
static dt_tensor *fwd_pool(dt_module *m, const dt_tensor *x) {
    return dt_max_pool2d(x, (int)m->cfg[0], (int)m->cfg[1], 0);
}
static dt_tensor *fwd_flatten(dt_module *m, const dt_tensor *x) {
    (void)m;
    return dt_flatten(x, 1, -1);
}
static dt_tensor *fwd_relu(dt_module *m, const dt_tensor *x) {
    (void)m;
    return dt_relu(x);
}
static dt_tensor *fwd_dropout(dt_module *m, const dt_tensor *x) { return dt_dropout(x, m->fcfg, m->training); }
static dt_tensor *fwd_layer_norm(dt_module *m, const dt_tensor *x) {
    return dt_layer_norm(x, p_(m, "weight"), p_(m, "bias"), 1e-5);
}
static dt_tensor *fwd_sequential(dt_module *m, const dt_tensor *x) {
    dt_tensor *cur = dt_retain((dt_tensor *)x);
    for (int i = 0; i < m->nc && cur; i++) {
        dt_tensor *next = dt_module_forward(m->ch[i].m, cur);
        dt_free(cur);
        cur = next;
    }
    return cur;
}

/* A cpu tensor uniform in [-bound, bound), from the global generator. */
static dt_tensor *uniform(int ndim, const int64_t *shape, double bound) {
    dt_tensor *t = dt_rand(ndim, shape, dt_cpu_device());
    if (!t) return NULL;
    float *p = dt_data(t);
    for (int64_t i = 0; i < dt_numel(t); i++) p[i] = (float)((2.0 * p[i] - 1.0) * bound);
    return t;
}

/* Registers a new tensor t (consumed) as parameter name; -1 on failure. */
static int own_param(dt_module *m, const char *name, dt_tensor *t) {
    int rc = t ? dt_module_register_parameter(m, name, t) : -1;
    dt_free(t);
    return rc;
}

static dt_module *layer(const char *type, dt_forward_fn fwd) { return dt_module_new(type, fwd, NULL, NULL); }

dt_module *dt_nn_linear(int64_t in_features, int64_t out_features, int bias) {
    if (in_features <= 0 || out_features <= 0) {
        dt__raise(DT_ERR_ARG, "Linear", "Linear: features must be positive, got in=%lld out=%lld",
                  (long long)in_features, (long long)out_features);
        return NULL;
    }
    dt_module *m = layer("Linear", fwd_linear);
    double bound = 1.0 / sqrt((double)in_features); /* PyTorch's default init bounds */
    if (!m || own_param(m, "weight", uniform(2, (int64_t[]){out_features, in_features}, bound)) < 0 ||
        (bias && own_param(m, "bias", uniform(1, &out_features, bound)) < 0)) {
        dt_module_free(m);
        return NULL;
    }
    return m;
}

dt_module *dt_nn_embedding(int64_t num_embeddings, int64_t dim) {
    if (num_embeddings <= 0 || dim <= 0) {
        dt__raise(DT_ERR_ARG, "Embedding", "Embedding: sizes must be positive");
        return NULL;
    }
    dt_module *m = layer("Embedding", fwd_embedding);
    if (!m || own_param(m, "weight", dt_randn(2, (int64_t[]){num_embeddings, dim}, dt_cpu_device())) < 0) {
        dt_module_free(m);
        return NULL;
    }
    return m;
}

dt_module *dt_nn_conv2d(int64_t in_channels, int64_t out_channels, int kernel, int stride, int padding, int bias) {
    if (in_channels <= 0 || out_channels <= 0 || kernel <= 0 || stride <= 0 || padding < 0) {
        dt__raise(DT_ERR_ARG, "Conv2d", "Conv2d: channels, kernel and stride must be positive, padding >= 0");
        return NULL;
    }
    dt_module *m = layer("Conv2d", fwd_conv2d);
    double bound = 1.0 / sqrt((double)(in_channels * kernel * kernel));
    if (!m || own_param(m, "weight", uniform(4, (int64_t[]){out_channels, in_channels, kernel, kernel}, bound)) < 0 ||
        (bias && own_param(m, "bias", uniform(1, &out_channels, bound)) < 0)) {
        dt_module_free(m);
        return NULL;
    }
    m->cfg[0] = stride;
    m->cfg[1] = padding;
    return m;
}

dt_module *dt_nn_max_pool2d(int kernel, int stride) {
    if (kernel <= 0 || stride < 0) {
        dt__raise(DT_ERR_ARG, "MaxPool2d", "MaxPool2d: kernel must be positive and stride >= 0");
        return NULL;
    }
    dt_module *m = layer("MaxPool2d", fwd_pool);
    if (m) m->cfg[0] = kernel, m->cfg[1] = stride ? stride : kernel;
    return m;
}

dt_module *dt_nn_flatten(void) { return layer("Flatten", fwd_flatten); }
dt_module *dt_nn_relu(void) { return layer("ReLU", fwd_relu); }

dt_module *dt_nn_dropout(double p) {
    if (!(p >= 0 && p <= 1)) {
        dt__raise(DT_ERR_ARG, "Dropout", "dropout probability has to be between 0 and 1, but got %g", p);
        return NULL;
    }
    dt_module *m = layer("Dropout", fwd_dropout);
    if (m) m->fcfg = p;
    return m;
}

dt_module *dt_nn_layer_norm(int64_t dim) {
    if (dim <= 0) {
        dt__raise(DT_ERR_ARG, "LayerNorm", "LayerNorm: normalized size must be positive");
        return NULL;
    }
    dt_module *m = layer("LayerNorm", fwd_layer_norm);
    if (!m || own_param(m, "weight", dt_ones(1, &dim, DT_F32, dt_cpu_device())) < 0 ||
        own_param(m, "bias", dt_zeros(1, &dim, DT_F32, dt_cpu_device())) < 0) {
        dt_module_free(m);
        return NULL;
    }
    return m;
}

dt_module *dt_nn_sequential(int n, dt_module *const *modules) {
    dt_module *m = layer("Sequential", fwd_sequential);
    int i = 0;
    for (; m && i < n; i++) {
        char name[24];
        snprintf(name, sizeof name, "%d", i);
        if (dt_module_add_child(m, name, modules[i]) < 0) break;
    }
    if (!m || i < n) { /* the modules not yet added are still ours to free */
        for (int j = i; j < n; j++) dt_module_free(modules[j]);
        dt_module_free(m);
        return NULL;
    }
    return m;
}
