/* The public API of libdtrt, devtrace's instrumented tensor runtime: tensors
 * on cpu and cuda:N devices, explicit transfers, ops with PyTorch's device
 * check, and errors reported as PyTorch reports them.
 *
 * Ownership: every function that returns a dt_tensor * returns a new
 * reference that the caller releases with dt_free(), including dt_to() when
 * the tensor is already on the device (it then returns the same tensor with
 * one more reference), except dt_grad() and the accessors documented as
 * BORROWED. Arguments are borrowed.
 *
 * Errors: a failing call sets a thread-local error (dt_last_error()), runs
 * the process-wide error handler, and, if the handler returns, returns NULL
 * or a negative status. The default handler prints "RuntimeError: <message>"
 * to stderr and exits with status 1, as an uncaught Python exception would. */
#ifndef DEVTRACE_DT_H
#define DEVTRACE_DT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DT_BUILDING_RUNTIME)
#define DT_API __attribute__((visibility("default")))
#else
#define DT_API
#endif

#define DT_MAX_DIMS 8 /* most dimensions a tensor can have */

typedef struct dt_tensor dt_tensor;

/* Element types (same numbers as enum dtp_dtype). */
typedef enum dt_dtype {
    DT_F32 = 0,  /* float */
    DT_I64 = 1,  /* int64_t */
    DT_BOOL = 2, /* uint8_t holding 0 or 1 */
} dt_dtype;

/* Device kinds (same numbers as enum dtp_device_type). */
typedef enum dt_device_type {
    DT_DEVICE_CPU = 0,
    DT_DEVICE_CUDA = 1,
} dt_device_type;

/* A device, passed by value: {DT_DEVICE_CPU, 0} or {DT_DEVICE_CUDA, N}. */
typedef struct dt_device {
    int32_t type;  /* dt_device_type */
    int32_t index; /* N of cuda:N; 0 for cpu */
} dt_device;

/* Kinds of error (same numbers as enum dtp_error_kind). */
typedef enum dt_error_kind {
    DT_OK = 0,
    DT_ERR_DEVICE = 1,  /* operands on different devices */
    DT_ERR_SHAPE = 2,   /* shapes do not fit */
    DT_ERR_DTYPE = 3,   /* dtype not supported or not castable */
    DT_ERR_INDEX = 4,   /* index out of range */
    DT_ERR_MEMORY = 5,  /* allocation failed */
    DT_ERR_BACKEND = 6, /* device backend failed */
    DT_ERR_ARG = 7,     /* bad argument */
    DT_ERR_STATE = 8,   /* not allowed now */
    DT_ERR_IO = 9,      /* file read or write failed */
} dt_error_kind;

/* Shape literal for the factories: dt_zeros(DT_SHAPE(64, 10), DT_F32, dev). */
#define DT_SHAPE(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})
/* Scalar (0-dim) shape for the factories. */
#define DT_SCALAR 0, NULL

/* ---------------------------------------------------------------- devices */

DT_API dt_device dt_cpu_device(void);
DT_API dt_device dt_cuda_device(int index);
DT_API int dt_device_equal(dt_device a, dt_device b);
/* "cpu", "cuda" (= cuda:0), "cuda:N". Returns 0, or -1 with an error set. */
DT_API int dt_device_parse(const char *text, dt_device *out);
/* Writes "cpu" or "cuda:N" into buf (at least 16 bytes) and returns buf. */
DT_API const char *dt_device_str(dt_device d, char *buf, size_t size);

/* Number of cuda devices: simulated ones if DEVTRACE_SIM_CUDA=N is set or
 * dt_sim_cuda_enable() was called, else real GPUs. */
DT_API int dt_cuda_device_count(void);
/* True when at least one cuda device exists, real or simulated (the
 * torch.cuda.is_available() idiom). */
DT_API int dt_cuda_is_available(void);
/* cuda:0 when available, else cpu. */
DT_API dt_device dt_default_device(void);
/* Ask for n simulated GPUs (1..16) instead of real ones. Allowed until the
 * first cuda tensor exists; returns 0, or -1 with an error set. */
DT_API int dt_sim_cuda_enable(int n);
/* "cpu", "cuda" or "cuda-sim"; NULL when the device does not exist. */
DT_API const char *dt_device_backend_name(dt_device d);
/* Bytes currently allocated on a device by live storages. */
DT_API uint64_t dt_memory_allocated(dt_device d);
/* Waits for queued work on a device (no-op for cpu and simulated cuda). */
DT_API int dt_synchronize(dt_device d);

/* ---------------------------------------------------------------- errors */

typedef struct dt_error_info {
    dt_error_kind kind;  /* what went wrong */
    const char *op;      /* op or function that failed */
    const char *message; /* full text, as PyTorch would print it */
} dt_error_info;

typedef void (*dt_error_handler)(const dt_error_info *err, void *ctx);

/* Replace the process-wide handler (NULL restores the default). Returns the
 * previous one; *old_ctx (if not NULL) receives its context. */
DT_API dt_error_handler dt_set_error_handler(dt_error_handler h, void *ctx, void **old_ctx);
/* A handler that does nothing, so failing calls just return NULL / -1. */
DT_API void dt_error_handler_return(const dt_error_info *err, void *ctx);
/* The default: prints "RuntimeError: <message>" to stderr and exits 1. */
DT_API void dt_error_handler_default(const dt_error_info *err, void *ctx);
/* Last error on this thread ("" when none) and its kind (DT_OK when none). */
DT_API const char *dt_last_error(void);
DT_API dt_error_kind dt_last_error_kind(void);
DT_API void dt_clear_error(void);

/* ---------------------------------------------------------------- tensors */

DT_API dt_tensor *dt_retain(dt_tensor *t); /* one more reference; returns t */
DT_API void dt_free(dt_tensor *t);         /* drop a reference; NULL is fine */

DT_API uint64_t dt_id(const dt_tensor *t);
DT_API dt_dtype dt_dtype_of(const dt_tensor *t);
DT_API dt_device dt_device_of(const dt_tensor *t);
DT_API int dt_ndim(const dt_tensor *t);
DT_API const int64_t *dt_shape(const dt_tensor *t);   /* [ndim] */
DT_API const int64_t *dt_strides(const dt_tensor *t); /* [ndim], in elements */
DT_API int64_t dt_size(const dt_tensor *t, int dim);  /* negative dim counts from the end */
DT_API int64_t dt_numel(const dt_tensor *t);
DT_API int64_t dt_storage_offset(const dt_tensor *t);
DT_API int dt_is_contiguous(const dt_tensor *t);
DT_API int dt_shares_storage(const dt_tensor *a, const dt_tensor *b);
DT_API const char *dt_name(const dt_tensor *t); /* NULL when unnamed */
DT_API void dt_set_name(dt_tensor *t, const char *name);
DT_API size_t dt_dtype_size(dt_dtype d);
DT_API const char *dt_dtype_name(dt_dtype d); /* "float32", "int64", "bool" */
/* Host pointer to the first element of a cpu tensor; NULL with an error for
 * any other device (device memory is never host memory, simulated or not). */
DT_API void *dt_data(dt_tensor *t);
/* Copies the values, in t's dtype and row-major order, into buf (at least
 * numel * dtype size bytes). From a cuda tensor this is a device-to-host
 * transfer. Returns 0 or -1. */
DT_API int dt_to_host(const dt_tensor *t, void *buf, size_t size);
/* The value of a one-element tensor as a double (NAN with an error set
 * otherwise). */
DT_API double dt_item(const dt_tensor *t);
/* Short text such as "f32[64,10] cuda:0" into buf. */
DT_API const char *dt_describe(const dt_tensor *t, char *buf, size_t size);

/* ---------------------------------------------------------------- factories */

DT_API void dt_manual_seed(uint64_t seed); /* seeds randn, rand, randint */
DT_API dt_tensor *dt_empty(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev);
DT_API dt_tensor *dt_zeros(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev);
DT_API dt_tensor *dt_ones(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev);
DT_API dt_tensor *dt_full(int ndim, const int64_t *shape, double value, dt_dtype dtype, dt_device dev);
/* start, start+step, ... < end (> end for a negative step). */
DT_API dt_tensor *dt_arange(double start, double end, double step, dt_dtype dtype, dt_device dev);
DT_API dt_tensor *dt_randn(int ndim, const int64_t *shape, dt_device dev); /* f32, N(0,1) */
DT_API dt_tensor *dt_rand(int ndim, const int64_t *shape, dt_device dev);  /* f32, [0,1) */
/* i64, uniform in [low, high). */
DT_API dt_tensor *dt_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, dt_device dev);
/* Copies numel elements of dtype from a host buffer. */
DT_API dt_tensor *dt_from_data(const void *data, dt_dtype dtype, int ndim, const int64_t *shape, dt_device dev);
DT_API dt_tensor *dt_zeros_like(const dt_tensor *t);
DT_API dt_tensor *dt_ones_like(const dt_tensor *t);
DT_API dt_tensor *dt_full_like(const dt_tensor *t, double value);
DT_API dt_tensor *dt_randn_like(const dt_tensor *t);
DT_API dt_tensor *dt_rand_like(const dt_tensor *t);

/* ---------------------------------------------------------------- transfers */

/* t on dev: t itself (new reference) when already there, else a copy. */
DT_API dt_tensor *dt_to(const dt_tensor *t, dt_device dev);
DT_API dt_tensor *dt_cpu(const dt_tensor *t);             /* dt_to(t, cpu) */
DT_API dt_tensor *dt_cuda(const dt_tensor *t, int index); /* dt_to(t, cuda:index) */
/* Copies src's values into dst (shapes broadcast to dst, dtype converted),
 * across devices if need be. Returns 0 or -1. */
DT_API int dt_copy_(dt_tensor *dst, const dt_tensor *src);

/* ---------------------------------------------------------------- elementwise ops */
/* Binary ops broadcast as PyTorch does and promote bool < int64 < float32.
 * A 0-dim cpu tensor may be combined with a tensor on any device. */

DT_API dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b); /* true division: float */
DT_API dt_tensor *dt_pow(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_add_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_sub_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_mul_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_div_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_pow_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_rsub_scalar(const dt_tensor *a, double s); /* s - a */

DT_API dt_tensor *dt_neg(const dt_tensor *a);
DT_API dt_tensor *dt_exp(const dt_tensor *a);
DT_API dt_tensor *dt_log(const dt_tensor *a);
DT_API dt_tensor *dt_sqrt(const dt_tensor *a);
DT_API dt_tensor *dt_abs(const dt_tensor *a);
DT_API dt_tensor *dt_relu(const dt_tensor *a);
DT_API dt_tensor *dt_sigmoid(const dt_tensor *a);
DT_API dt_tensor *dt_tanh(const dt_tensor *a);
/* Clamp into [lo, hi]; pass -INFINITY / INFINITY for no bound. */
DT_API dt_tensor *dt_clamp(const dt_tensor *a, double lo, double hi);
/* Converts to another dtype (a new tensor even when the dtype is the same). */
DT_API dt_tensor *dt_cast(const dt_tensor *a, dt_dtype dtype);

/* Comparisons return bool tensors. */
DT_API dt_tensor *dt_eq(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_ne(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_lt(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_le(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_gt(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_ge(const dt_tensor *a, const dt_tensor *b);
DT_API dt_tensor *dt_eq_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_gt_scalar(const dt_tensor *a, double s);
DT_API dt_tensor *dt_lt_scalar(const dt_tensor *a, double s);

/* cond ? a : b, elementwise, broadcasting all three. */
DT_API dt_tensor *dt_where(const dt_tensor *cond, const dt_tensor *a, const dt_tensor *b);
/* a copy of a with value where mask is true. */
DT_API dt_tensor *dt_masked_fill(const dt_tensor *a, const dt_tensor *mask, double value);

/* In place; each returns 0 or -1. other broadcasts to self's shape, and the
 * result must be castable to self's dtype. */
DT_API int dt_add_(dt_tensor *self, const dt_tensor *other);
DT_API int dt_add_scaled_(dt_tensor *self, const dt_tensor *other, double alpha); /* self += alpha*other */
DT_API int dt_sub_(dt_tensor *self, const dt_tensor *other);
DT_API int dt_mul_(dt_tensor *self, const dt_tensor *other);
DT_API int dt_div_(dt_tensor *self, const dt_tensor *other);
DT_API int dt_add_scalar_(dt_tensor *self, double s);
DT_API int dt_mul_scalar_(dt_tensor *self, double s);
DT_API int dt_zero_(dt_tensor *self);
DT_API int dt_fill_(dt_tensor *self, double value);
DT_API int dt_clamp_(dt_tensor *self, double lo, double hi);

/* ---------------------------------------------------------------- linear algebra */

/* 2-D @ 2-D, or batched: (..., n, k) @ (..., k, m) with broadcast batch
 * dims; a 1-D operand is treated as a row (self) or column (mat2) vector. */
DT_API dt_tensor *dt_matmul(const dt_tensor *self, const dt_tensor *mat2);
/* input @ weight^T + bias; weight is (out, in), bias (out) or NULL. */
DT_API dt_tensor *dt_linear(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias);
/* Rows of weight (V, D) picked by integer indices of any shape: shape
 * indices.shape + (D). */
DT_API dt_tensor *dt_embedding(const dt_tensor *weight, const dt_tensor *indices);
/* Entries of self along dim picked by a 1-D integer index. */
DT_API dt_tensor *dt_index_select(const dt_tensor *self, int dim, const dt_tensor *index);
DT_API dt_tensor *dt_softmax(const dt_tensor *self, int dim);
DT_API dt_tensor *dt_log_softmax(const dt_tensor *self, int dim);

/* ---------------------------------------------------------------- reductions */

DT_API dt_tensor *dt_sum(const dt_tensor *self); /* 0-dim */
DT_API dt_tensor *dt_sum_dim(const dt_tensor *self, int dim, int keepdim);
DT_API dt_tensor *dt_mean(const dt_tensor *self); /* float only */
DT_API dt_tensor *dt_mean_dim(const dt_tensor *self, int dim, int keepdim);
DT_API dt_tensor *dt_max(const dt_tensor *self);
/* Max along dim; *indices (if not NULL) receives the i64 positions. */
DT_API dt_tensor *dt_max_dim(const dt_tensor *self, int dim, int keepdim, dt_tensor **indices);
DT_API dt_tensor *dt_argmax(const dt_tensor *self); /* flat index, 0-dim i64 */
DT_API dt_tensor *dt_argmax_dim(const dt_tensor *self, int dim, int keepdim);

/* ---------------------------------------------------------------- shape ops */
/* Views share storage with their base; the others copy. */

/* One size may be -1. A view when possible, else a copy (as PyTorch). */
DT_API dt_tensor *dt_reshape(const dt_tensor *self, int ndim, const int64_t *shape);
/* Always a view; fails when the strides do not allow one. */
DT_API dt_tensor *dt_view(const dt_tensor *self, int ndim, const int64_t *shape);
DT_API dt_tensor *dt_transpose(const dt_tensor *self, int dim0, int dim1); /* view */
DT_API dt_tensor *dt_permute(const dt_tensor *self, const int *dims);      /* view; ndim entries */
/* Elements start, start+step, ... < end of dim (view). Negative start/end
 * count from the end; they are clamped into range as Python slices are. */
DT_API dt_tensor *dt_slice(const dt_tensor *self, int dim, int64_t start, int64_t end, int64_t step);
DT_API dt_tensor *dt_narrow(const dt_tensor *self, int dim, int64_t start, int64_t length); /* view */
DT_API dt_tensor *dt_select(const dt_tensor *self, int dim, int64_t index);                 /* view, drops dim */
DT_API dt_tensor *dt_unsqueeze(const dt_tensor *self, int dim);                             /* view */
DT_API dt_tensor *dt_squeeze(const dt_tensor *self, int dim);                               /* view; dim of size 1 */
DT_API dt_tensor *dt_squeeze_all(const dt_tensor *self);                                    /* view */
DT_API dt_tensor *dt_flatten(const dt_tensor *self, int start_dim, int end_dim);
/* A view with size-1 dims repeated (stride 0) to shape; -1 keeps a size. */
DT_API dt_tensor *dt_expand(const dt_tensor *self, int ndim, const int64_t *shape);
/* self itself (new reference) when contiguous, else a contiguous copy. */
DT_API dt_tensor *dt_contiguous(const dt_tensor *self);
DT_API dt_tensor *dt_clone(const dt_tensor *self); /* always a contiguous copy */
DT_API dt_tensor *dt_cat(int n, dt_tensor *const *tensors, int dim);
DT_API dt_tensor *dt_stack(int n, dt_tensor *const *tensors, int dim);

/* ---------------------------------------------------------------- autograd */
/* As in PyTorch: a float tensor may require grad; while grad mode is on (the
 * default, per thread), ops on such tensors record a graph, and
 * dt_backward(loss) accumulates d loss / d leaf into each leaf's grad, which
 * lives on the leaf's device. The graph lives as long as the tensors that
 * hold it. In-place ops on a tensor that requires grad are refused while grad
 * mode is on: update parameters with grad mode off, as optimizers do. */

/* Marks a float leaf as wanting a gradient (or not). Returns 0 or -1. */
DT_API int dt_set_requires_grad(dt_tensor *t, int on);
DT_API int dt_requires_grad(const dt_tensor *t);
DT_API int dt_is_leaf(const dt_tensor *t); /* made by no recorded op */
/* The accumulated gradient, or NULL. BORROWED: owned by t, valid until the
 * next backward, zero_grad or free of t (do not dt_free it). */
DT_API dt_tensor *dt_grad(const dt_tensor *t);
DT_API void dt_zero_grad(dt_tensor *t); /* drops the gradient (PyTorch's set_to_none) */
/* Backpropagates from a one-element loss. Returns 0 or -1. */
DT_API int dt_backward(const dt_tensor *loss);
/* Turns graph recording on or off for this thread; returns the previous state. */
DT_API int dt_set_grad_enabled(int on);
DT_API int dt_is_grad_enabled(void);
/* A view of t outside any graph (shares storage, requires no grad). */
DT_API dt_tensor *dt_detach(const dt_tensor *t);
/* Name of the node that made t ("MulBackward0"), or NULL for a leaf. */
DT_API const char *dt_grad_fn_name(const dt_tensor *t);

/* ---------------------------------------------------------------- misc */

DT_API const char *dt_version(void); /* "0.1.0" */

#ifdef __cplusplus
}
#endif

#endif /* DEVTRACE_DT_H */
