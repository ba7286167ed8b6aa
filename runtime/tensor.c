/* Tensors and storages of libdtrt: allocation, reference counting, ids,
 * names, accessors and the factories. Views are in shape.c, ops in ops_*.c,
 * data movement between devices in transfer.c. */
#include "dt_impl.h"

#include <math.h>
#include <string.h>

static _Atomic uint64_t g_next_tensor_id = 1; /* ids are never reused */
static _Atomic uint64_t g_next_storage_id = 1;

/* ---------------------------------------------------------------- helpers */

size_t dt_dtype_size(dt_dtype d) { return d == DT_F32 ? 4 : d == DT_I64 ? 8 : 1; }

const char *dt_dtype_name(dt_dtype d) {
    switch (d) {
    case DT_F32: return "float32";
    case DT_I64: return "int64";
    case DT_BOOL: return "bool";
    }
    return "invalid";
}

int64_t dt__numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

void dt__contig_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

const char *dt__shape_str(int ndim, const int64_t *shape, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

int dt__wrap_dim(int dim, int ndim, const char *op) {
    int lo = ndim ? -ndim : -1, hi = ndim ? ndim - 1 : 0;
    if (dim < lo || dim > hi) {
        dt__raise(DT_ERR_INDEX, op, "Dimension out of range (expected to be in range of [%d, %d], but got %d)", lo, hi,
                  dim);
        return -1;
    }
    return (int)dt__dim_index(dim, ndim);
}

int dt__is_cpu_scalar(const dt_tensor *t) { return t->ndim == 0 && t->storage->device.type == DT_DEVICE_CPU; }

void dt__view_of(const dt_tensor *t, struct dt_view *v) {
    memset(v, 0, sizeof *v);
    v->base = t->storage->data;
    v->offset = t->offset;
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(v->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
}

/* ---------------------------------------------------------------- storages */

struct dt_storage *dt__storage_new(dt_device dev, size_t nbytes, const char *op) {
    const struct dt_backend *b = dt__backend_for(dev, op);
    if (!b) return NULL;
    if (dev.type == DT_DEVICE_CUDA) dt__note_cuda_tensor();
    struct dt_storage *st = calloc(1, sizeof *st);
    void *data = st ? b->alloc(dev.index, nbytes ? nbytes : 1) : NULL;
    if (!data) {
        free(st);
        char name[32];
        dt__raise(DT_ERR_MEMORY, op, "%s out of memory: tried to allocate %zu bytes on %s",
                  dev.type == DT_DEVICE_CUDA ? "CUDA" : "CPU", nbytes, dt_device_str(dev, name, sizeof name));
        return NULL;
    }
    st->id = atomic_fetch_add(&g_next_storage_id, 1);
    atomic_init(&st->refs, 1);
    st->device = dev;
    st->backend = b;
    st->data = data;
    st->nbytes = nbytes;
    dt__memory_account(dev, (int64_t)nbytes);
    return st;
}

void dt__storage_release(struct dt_storage *st) {
    if (!st || atomic_fetch_sub(&st->refs, 1) != 1) return;
    st->backend->free(st->device.index, st->data, st->nbytes ? st->nbytes : 1);
    dt__memory_account(st->device, -(int64_t)st->nbytes);
    free(st);
}

/* ---------------------------------------------------------------- tensors */

dt_tensor *dt__tensor_wrap(struct dt_storage *st, dt_dtype dtype, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t offset) {
    dt_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        dt__raise(DT_ERR_MEMORY, "tensor", "out of host memory for a tensor header");
        return NULL;
    }
    t->id = atomic_fetch_add(&g_next_tensor_id, 1);
    atomic_init(&t->refs, 1);
    atomic_fetch_add(&st->refs, 1);
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    t->offset = offset;
    return t;
}

/* Validates a requested shape and dtype; raises and returns -1 when wrong. */
static int check_shape(int ndim, const int64_t *shape, dt_dtype dtype, const char *op) {
    char buf[256];
    if (ndim < 0 || ndim > DT_MAX_DIMS || (ndim > 0 && !shape)) {
        dt__raise(DT_ERR_SHAPE, op, "%s: a tensor has 0 to %d dimensions, got %d%s", op, DT_MAX_DIMS, ndim,
                  ndim > 0 && !shape ? " with a NULL shape" : "");
        return -1;
    }
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            dt__raise(DT_ERR_SHAPE, op, "Trying to create tensor with negative dimension %lld: %s", (long long)shape[i],
                      dt__shape_str(ndim, shape, buf, sizeof buf));
            return -1;
        }
    if ((unsigned)dtype > DT_BOOL) {
        dt__raise(DT_ERR_DTYPE, op, "%s: invalid dtype %d", op, (int)dtype);
        return -1;
    }
    return 0;
}

dt_tensor *dt__tensor_alloc(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev, const char *op) {
    dt__runtime_init();
    if (check_shape(ndim, shape, dtype, op) < 0) return NULL;
    int64_t strides[DT_MAX_DIMS];
    dt__contig_strides(ndim, shape, strides);
    struct dt_storage *st = dt__storage_new(dev, (size_t)dt__numel(ndim, shape) * dt_dtype_size(dtype), op);
    if (!st) return NULL;
    dt_tensor *t = dt__tensor_wrap(st, dtype, ndim, shape, strides, 0);
    dt__storage_release(st); /* the tensor holds it now */
    return t;
}

void dt__tensor_announce(const dt_tensor *t, int kind, const char *what, uint64_t src_id, uint64_t op_seq) {
    dt__tensor_announce_detail(t, kind, what, src_id, op_seq, NULL);
}

void dt__tensor_announce_detail(const dt_tensor *t, int kind, const char *what, uint64_t src_id, uint64_t op_seq,
                                const char *detail) {
    struct dtp_tensor pt = {
        .id = t->id,
        .storage_id = t->storage->id,
        .dtype = (int32_t)t->dtype,
        .ndim = t->ndim,
        .shape = t->shape,
        .strides = t->strides,
        .storage_offset = t->offset,
        .device = dt__pdev(t->storage->device),
        .nbytes = (uint64_t)dt_numel(t) * dt_dtype_size(t->dtype),
        .name = t->name,
    };
    struct dtp_origin o = {.kind = kind, .what = what, .src_id = src_id, .op_seq = op_seq, .detail = detail};
    dtp_tensor_created(&pt, &o);
}

dt_tensor *dt_retain(dt_tensor *t) {
    if (t) atomic_fetch_add(&t->refs, 1);
    return t;
}

void dt_free(dt_tensor *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    dtp_tensor_freed(t->id);
    dt__ag_release(t);
    dt__storage_release(t->storage);
    free(t->name);
    free(t);
}

/* ---------------------------------------------------------------- accessors */

uint64_t dt_id(const dt_tensor *t) { return t->id; }
dt_dtype dt_dtype_of(const dt_tensor *t) { return t->dtype; }
dt_device dt_device_of(const dt_tensor *t) { return t->storage->device; }
int dt_ndim(const dt_tensor *t) { return t->ndim; }
const int64_t *dt_shape(const dt_tensor *t) { return t->shape; }
const int64_t *dt_strides(const dt_tensor *t) { return t->strides; }
int64_t dt_numel(const dt_tensor *t) { return dt__numel(t->ndim, t->shape); }
int64_t dt_storage_offset(const dt_tensor *t) { return t->offset; }
const char *dt_name(const dt_tensor *t) { return t->name; }
int dt_shares_storage(const dt_tensor *a, const dt_tensor *b) { return a->storage == b->storage; }

int64_t dt_size(const dt_tensor *t, int dim) {
    int d = dt__wrap_dim(dim, t->ndim, "size");
    if (d < 0) return -1;
    return t->ndim ? t->shape[d] : 1;
}

int dt_is_contiguous(const dt_tensor *t) {
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->shape[i] == 0) return 1;
        if (t->strides[i] != expect) return 0;
        expect *= t->shape[i];
    }
    return 1;
}

void dt_set_name(dt_tensor *t, const char *name) {
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy) {
        dt__raise(DT_ERR_MEMORY, "set_name", "out of host memory for a tensor name");
        return;
    }
    free(t->name);
    t->name = copy;
    dtp_tensor_named(t->id, name ? name : "");
}

void *dt_data(dt_tensor *t) {
    if (t->storage->device.type != DT_DEVICE_CPU) {
        char name[32];
        dt__raise(DT_ERR_DEVICE, "data",
                  "can't access the data of a %s tensor from the host: copy it with dt_cpu() or "
                  "dt_to_host() first",
                  dt_device_str(t->storage->device, name, sizeof name));
        return NULL;
    }
    return (char *)t->storage->data + t->offset * (int64_t)dt_dtype_size(t->dtype);
}

const char *dt_describe(const dt_tensor *t, char *buf, size_t size) {
    static const char *const short_names[] = {"f32", "i64", "bool"};
    char shape[192], dev[32];
    dt__shape_str(t->ndim, t->shape, shape, sizeof shape);
    /* "[64, 10]" -> "[64,10]" for compactness */
    char *w = shape;
    for (const char *r = shape; *r; r++)
        if (*r != ' ') *w++ = *r;
    *w = '\0';
    snprintf(buf, size, "%s%s %s", short_names[t->dtype], shape, dt_device_str(t->storage->device, dev, sizeof dev));
    return buf;
}

/* ---------------------------------------------------------------- factories */

/* A new tensor filled by fn on the host and uploaded; fill_host writes
 * numel elements into a host buffer. */
static dt_tensor *factory_from_host(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev, const char *what,
                                    const void *data, void (*fill_host)(void *buf, int64_t n, const void *arg),
                                    const void *arg) {
    dt_tensor *t = dt__tensor_alloc(ndim, shape, dtype, dev, what);
    if (!t) return NULL;
    int64_t n = dt_numel(t);
    size_t bytes = (size_t)n * dt_dtype_size(dtype);
    void *buf = (void *)data;
    if (!data) {
        buf = dev.type == DT_DEVICE_CPU ? t->storage->data : malloc(bytes ? bytes : 1);
        if (!buf) {
            dt_free(t);
            dt__raise(DT_ERR_MEMORY, what, "out of host memory (%zu bytes)", bytes);
            return NULL;
        }
        fill_host(buf, n, arg);
    }
    if (buf != t->storage->data && dt__mem_copy(dev, t->storage->data, 0, dt_cpu_device(), buf, 0, bytes, what) < 0) {
        if (!data) free(buf);
        dt_free(t);
        return NULL;
    }
    if (!data && buf != t->storage->data) free(buf);
    dt__tensor_announce(t, DTP_ORIGIN_FACTORY, what, 0, 0);
    return t;
}

/* A new tensor filled with a constant by the device's own kernel. */
static dt_tensor *factory_fill(int ndim, const int64_t *shape, double value, dt_dtype dtype, dt_device dev,
                               const char *what) {
    dt_tensor *t = dt__tensor_alloc(ndim, shape, dtype, dev, what);
    if (!t) return NULL;
    struct dt_ew_args a = {.op = DT_EW_FILL, .compute = dtype, .nin = 0, .p0 = value};
    dt__view_of(t, &a.out);
    if (dt__ew_run(dev, &a, what) < 0) {
        dt_free(t);
        return NULL;
    }
    dt__tensor_announce(t, DTP_ORIGIN_FACTORY, what, 0, 0);
    return t;
}

dt_tensor *dt_empty(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev) {
    dt_tensor *t = dt__tensor_alloc(ndim, shape, dtype, dev, "empty");
    if (t) dt__tensor_announce(t, DTP_ORIGIN_FACTORY, "empty", 0, 0);
    return t;
}
dt_tensor *dt_zeros(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev) {
    return factory_fill(ndim, shape, 0.0, dtype, dev, "zeros");
}
dt_tensor *dt_ones(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev) {
    return factory_fill(ndim, shape, 1.0, dtype, dev, "ones");
}
dt_tensor *dt_full(int ndim, const int64_t *shape, double value, dt_dtype dtype, dt_device dev) {
    return factory_fill(ndim, shape, value, dtype, dev, "full");
}

struct arange_arg {
    double start, step;
    dt_dtype dtype;
};
static void fill_arange(void *buf, int64_t n, const void *arg) {
    const struct arange_arg *a = arg;
    for (int64_t i = 0; i < n; i++) {
        double v = a->start + (double)i * a->step;
        if (a->dtype == DT_F32)
            ((float *)buf)[i] = (float)v;
        else if (a->dtype == DT_I64)
            ((int64_t *)buf)[i] = (int64_t)v;
        else
            ((uint8_t *)buf)[i] = v != 0;
    }
}
dt_tensor *dt_arange(double start, double end, double step, dt_dtype dtype, dt_device dev) {
    dt__runtime_init();
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step)) {
        dt__raise(DT_ERR_ARG, "arange", "arange: step must be nonzero and bounds finite (start=%g, end=%g, step=%g)",
                  start, end, step);
        return NULL;
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        dt__raise(DT_ERR_ARG, "arange", "upper bound and larger bound inconsistent with step sign");
        return NULL;
    }
    if (dtype == DT_BOOL) {
        dt__raise(DT_ERR_DTYPE, "arange", "\"arange_cpu\" not implemented for 'Bool'");
        return NULL;
    }
    int64_t n = (int64_t)ceil((end - start) / step);
    struct arange_arg a = {start, step, dtype};
    return factory_from_host(1, &n, dtype, dev, "arange", NULL, fill_arange, &a);
}

static void fill_normal(void *buf, int64_t n, const void *arg) {
    (void)arg;
    dt__rand_normal(buf, n);
}
static void fill_uniform(void *buf, int64_t n, const void *arg) {
    (void)arg;
    dt__rand_uniform(buf, n);
}
static void fill_int(void *buf, int64_t n, const void *arg) {
    const int64_t *r = arg;
    dt__rand_int(buf, n, r[0], r[1]);
}

dt_tensor *dt_randn(int ndim, const int64_t *shape, dt_device dev) {
    return factory_from_host(ndim, shape, DT_F32, dev, "randn", NULL, fill_normal, NULL);
}
dt_tensor *dt_rand(int ndim, const int64_t *shape, dt_device dev) {
    return factory_from_host(ndim, shape, DT_F32, dev, "rand", NULL, fill_uniform, NULL);
}
dt_tensor *dt_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, dt_device dev) {
    dt__runtime_init();
    if (high <= low) {
        dt__raise(DT_ERR_ARG, "randint", "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                  (long long)low, (long long)high);
        return NULL;
    }
    int64_t range[2] = {low, high};
    return factory_from_host(ndim, shape, DT_I64, dev, "randint", NULL, fill_int, range);
}

dt_tensor *dt_from_data(const void *data, dt_dtype dtype, int ndim, const int64_t *shape, dt_device dev) {
    dt__runtime_init();
    if (check_shape(ndim, shape, dtype, "from_data") < 0) return NULL;
    if (!data && dt__numel(ndim, shape) != 0) {
        dt__raise(DT_ERR_ARG, "from_data", "from_data: data is NULL");
        return NULL;
    }
    static const char zero = 0; /* an empty tensor may come from NULL */
    return factory_from_host(ndim, shape, dtype, dev, "from_data", data ? data : &zero, NULL, NULL);
}

dt_tensor *dt_zeros_like(const dt_tensor *t) {
    return factory_fill(t->ndim, t->shape, 0.0, t->dtype, t->storage->device, "zeros_like");
}
dt_tensor *dt_ones_like(const dt_tensor *t) {
    return factory_fill(t->ndim, t->shape, 1.0, t->dtype, t->storage->device, "ones_like");
}
dt_tensor *dt_full_like(const dt_tensor *t, double value) {
    return factory_fill(t->ndim, t->shape, value, t->dtype, t->storage->device, "full_like");
}
dt_tensor *dt_randn_like(const dt_tensor *t) {
    return factory_from_host(t->ndim, t->shape, DT_F32, t->storage->device, "randn_like", NULL, fill_normal, NULL);
}
dt_tensor *dt_rand_like(const dt_tensor *t) {
    return factory_from_host(t->ndim, t->shape, DT_F32, t->storage->device, "rand_like", NULL, fill_uniform, NULL);
}
