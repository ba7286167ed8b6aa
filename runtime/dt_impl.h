/* Internal structures of libdtrt: tensors, storages, and the helpers the
 * runtime's C sources share. Not installed; C only (the CUDA backend sees
 * backend.h alone). */
#ifndef DEVTRACE_DT_IMPL_H
#define DEVTRACE_DT_IMPL_H

#include <devtrace/dt.h>
#include <devtrace/probe.h>
#include "backend.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DT_MAX_CUDA 16 /* most cuda devices, real or simulated */
#define DT_VERSION  "0.1.0"

/* Invariant check: a failure here is a bug in the runtime, never a user error. */
#define DT_ASSERT(cond)                                                                                                \
    do {                                                                                                               \
        if (!(cond)) dt__assert_fail(#cond, __FILE__, __LINE__);                                                       \
    } while (0)

/* ---------------------------------------------------------------- tensors */

/* Refcounted device memory shared by a tensor and its views. */
struct dt_storage {
    uint64_t id;                      /* process-unique storage id */
    atomic_int refs;                  /* tensors pointing here */
    dt_device device;                 /* where data lives */
    const struct dt_backend *backend; /* serves device */
    void *data;                       /* device pointer, backend-specific */
    size_t nbytes;                    /* allocation size, bytes */
};

struct dt_tensor {
    uint64_t id;                  /* process-unique, never reused */
    atomic_int refs;              /* references held by callers */
    struct dt_storage *storage;   /* shared with views */
    dt_dtype dtype;               /* element type */
    int ndim;                     /* 0..DT_MAX_DIMS */
    int64_t shape[DT_MAX_DIMS];   /* sizes */
    int64_t strides[DT_MAX_DIMS]; /* in elements */
    int64_t offset;               /* first element in storage, in elements */
    char *name;                   /* malloc'd, or NULL */
    /* autograd (autograd.c) */
    int requires_grad;       /* a leaf that wants .grad, or an output of a recorded op */
    struct dt_node *grad_fn; /* the op that made it, when recorded; NULL for leaves */
    dt_tensor *grad;         /* accumulated gradient of a leaf, or NULL */
};

/* ---------------------------------------------------------------- internal helpers */

DT_HIDDEN void dt__assert_fail(const char *cond, const char *file, int line);
/* Sets the thread-local error, fires dtp_error, runs the handler. */
DT_HIDDEN void dt__raise(dt_error_kind kind, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with a preformatted message (the mismatch probe already fired). */
DT_HIDDEN void dt__raise_msg(dt_error_kind kind, const char *op, const char *msg);

/* The backend serving dev, initialising it on first use (fires
 * dtp_device_backend). NULL with an error raised when dev does not exist. */
DT_HIDDEN const struct dt_backend *dt__backend_for(dt_device dev, const char *op);
DT_HIDDEN void dt__runtime_init(void);     /* idempotent; fires dtp_runtime_init */
DT_HIDDEN void dt__note_cuda_tensor(void); /* a cuda storage exists: freeze the config */
DT_HIDDEN struct dtp_device dt__pdev(dt_device d);
DT_HIDDEN void dt__memory_account(dt_device d, int64_t delta);

/* Tensors (tensor.c). */
DT_HIDDEN dt_tensor *dt__tensor_alloc(int ndim, const int64_t *shape, dt_dtype dtype, dt_device dev, const char *op);
/* A tensor over st (retained) with the given layout; fires no probe. */
DT_HIDDEN dt_tensor *dt__tensor_wrap(struct dt_storage *st, dt_dtype dtype, int ndim, const int64_t *shape,
                                     const int64_t *strides, int64_t offset);
DT_HIDDEN void dt__tensor_announce(const dt_tensor *t, int kind, const char *what, uint64_t src_id, uint64_t op_seq);
/* The same with the origin's detail text (a checkpoint's path). */
DT_HIDDEN void dt__tensor_announce_detail(const dt_tensor *t, int kind, const char *what, uint64_t src_id,
                                          uint64_t op_seq, const char *detail);
DT_HIDDEN void dt__view_of(const dt_tensor *t, struct dt_view *v);
DT_HIDDEN void dt__contig_strides(int ndim, const int64_t *shape, int64_t *strides);
DT_HIDDEN int64_t dt__numel(int ndim, const int64_t *shape);
DT_HIDDEN int dt__wrap_dim(int dim, int ndim, const char *op); /* -1 on error (raised) */
/* dim counted from the end made non-negative, its range unchecked (for
 * recording an op's dims; the op itself validates them). */
static inline int64_t dt__dim_index(int dim, int ndim) { return dim < 0 ? dim + (ndim ? ndim : 1) : dim; }
DT_HIDDEN const char *dt__shape_str(int ndim, const int64_t *shape, char *buf, size_t size);
DT_HIDDEN int dt__is_cpu_scalar(const dt_tensor *t);
/* Runs an elementwise kernel on dev's backend; raises on failure. */
DT_HIDDEN int dt__ew_run(dt_device dev, const struct dt_ew_args *a, const char *op);

/* Raw storages (tensor.c): allocation with accounting, and release. */
DT_HIDDEN struct dt_storage *dt__storage_new(dt_device dev, size_t nbytes, const char *op);
DT_HIDDEN void dt__storage_release(struct dt_storage *st);

/* Broadcasting (op.c). Shapes of n tensors broadcast together into
 * (*ndim, shape); raises and returns -1 when they do not. */
DT_HIDDEN int dt__broadcast_shapes(int n, const dt_tensor *const *ts, int *ndim, int64_t *shape, const char *op);
/* Whether t broadcasts to (ndim, shape) without changing that shape. */
DT_HIDDEN int dt__can_broadcast_to(const dt_tensor *t, int ndim, const int64_t *shape);
/* Re-strides v to read as shape (ndim dims): size-1 and missing dims get stride 0. */
DT_HIDDEN void dt__broadcast_view(struct dt_view *v, int ndim, const int64_t *shape);
/* v as a contiguous (numel) 1-D view, copying into *tmp when v is not
 * contiguous (tmp is NULL otherwise; release it after use). */
DT_HIDDEN int dt__contig_view(const dt_tensor *t, struct dt_view *v, struct dt_storage **tmp, const char *op);
/* Result dtype of combining a and b: bool < int64 < float32. */
DT_HIDDEN dt_dtype dt__promote(dt_dtype a, dt_dtype b);

/* Cross-device data movement (transfer.c): the only code that moves bytes
 * between devices or between host buffers and devices. */
/* Pointers are a storage's base plus a byte offset, so that the simulated
 * backend can check which device each block belongs to. */
DT_HIDDEN int dt__mem_copy(dt_device dst_dev, void *dst_base, size_t dst_off, dt_device src_dev, const void *src_base,
                           size_t src_off, size_t bytes, const char *op);

/* Random numbers (random.c): fill host buffers from the global generator. */
DT_HIDDEN void dt__rand_uniform(float *out, int64_t n);
DT_HIDDEN void dt__rand_normal(float *out, int64_t n);
DT_HIDDEN void dt__rand_int(int64_t *out, int64_t n, int64_t low, int64_t high);

/* Ops (op.c): the begin/check/end protocol every op follows. */
#define DT_OP_INLINE_ARGS 8
struct dt_opctx {
    uint64_t seq;                                  /* from the global op counter */
    const char *name;                              /* op name */
    int nargs;                                     /* tensor arguments in args/tensors */
    struct dtp_arg *args;                          /* probe view of the arguments */
    const dt_tensor **tensors;                     /* the same arguments */
    struct dtp_arg args_inline[DT_OP_INLINE_ARGS]; /* storage when nargs is small */
    const dt_tensor *tensors_inline[DT_OP_INLINE_ARGS];
    dt_device device;                 /* device the op runs on (after the check) */
    const struct dt_backend *backend; /* serves device */
    int ended;                        /* dtp_op_end fired */
};
/* How dt__op_begin checks devices. */
enum dt_check {
    DT_CHECK_STRICT,  /* every tensor on one device */
    DT_CHECK_SCALARS, /* same, but a 0-dim cpu tensor may join any device */
    DT_CHECK_NONE,    /* no check (copy_): the op runs on the first tensor's device */
};
/* Fires dtp_op_begin, then checks devices. names and tensors have n
 * entries; NULL tensors are skipped. Returns 0, or -1 after raising (op_end
 * fired first). */
DT_HIDDEN int dt__op_begin(struct dt_opctx *c, const char *name, int n, const dt_tensor *const *tensors,
                           const char *const *names, enum dt_check check);
/* Fires dtp_op_end with the tensors made or written (NULLs skipped); once. */
DT_HIDDEN void dt__op_end(struct dt_opctx *c, int status, int nout, dt_tensor *const *outs);
/* A new tensor made by op c. */
DT_HIDDEN dt_tensor *dt__op_output(struct dt_opctx *c, int ndim, const int64_t *shape, dt_dtype dtype);
/* Raises an error inside op c and ends it: returns -1 for convenience. */
DT_HIDDEN int dt__op_fail(struct dt_opctx *c, dt_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Turns a backend status into an op failure (no-op for 0). */
DT_HIDDEN int dt__op_kernel_status(struct dt_opctx *c, int status);

/* ---------------------------------------------------------------- autograd (autograd.c) */

/* What a recorded node computes the gradient of. */
enum dt_ag_kind {
    DT_AG_ADD,       /* a + p0*b */
    DT_AG_MUL,       /* a * b */
    DT_AG_DIV,       /* a / b */
    DT_AG_POW,       /* a ^ b */
    DT_AG_SCALE,     /* p0*a + const (add/sub/mul/div by a scalar, rsub) */
    DT_AG_POW_S,     /* a ^ p0 */
    DT_AG_EXP,       /* exp(a) */
    DT_AG_LOG,       /* log(a) */
    DT_AG_SQRT,      /* sqrt(a) */
    DT_AG_ABS,       /* |a| */
    DT_AG_RELU,      /* relu(a) */
    DT_AG_SIGMOID,   /* sigmoid(a) */
    DT_AG_TANH,      /* tanh(a) */
    DT_AG_CLAMP,     /* clamp(a, p0, p1) */
    DT_AG_IDENTITY,  /* a copy: clone, contiguous, float cast */
    DT_AG_WHERE,     /* where(cond, a, b): in = {cond, a, b} */
    DT_AG_MASKED,    /* masked_fill(a, mask, v): in = {a, mask} */
    DT_AG_MATMUL,    /* a @ b */
    DT_AG_LINEAR,    /* x @ w^T + bias: in = {x, w, bias or NULL} */
    DT_AG_EMBED,     /* embedding(weight, idx): in = {weight, idx} */
    DT_AG_INDEX,     /* index_select(a, i0, idx) */
    DT_AG_SOFTMAX,   /* softmax(a, i0) */
    DT_AG_LOGSM,     /* log_softmax(a, i0) */
    DT_AG_SUM,       /* sum(a) */
    DT_AG_SUM_DIM,   /* sum_dim(a, i0, i1) */
    DT_AG_MEAN,      /* mean(a) */
    DT_AG_MEAN_DIM,  /* mean_dim(a, i0, i1) */
    DT_AG_MAX,       /* max(a) */
    DT_AG_MAX_DIM,   /* max_dim(a, i0, i1) */
    DT_AG_RESHAPE,   /* any shape change keeping the order: view, reshape, flatten, squeeze, unsqueeze */
    DT_AG_TRANSPOSE, /* transpose(a, i0, i1) */
    DT_AG_PERMUTE,   /* permute(a, i[0..ndim)) */
    DT_AG_SLICE,     /* slice(a, i0, i1, i2, i3) (narrow too) */
    DT_AG_SELECT,    /* select(a, i0, i1) */
    DT_AG_EXPAND,    /* expand(a, ...) */
    DT_AG_CAT,       /* cat(in..., i0) */
    DT_AG_STACK,     /* stack(in..., i0) */
    DT_AG_TO,        /* a copied to another device */
    DT_AG_PAD2D,     /* constant pad of the last two dims by i0 */
    DT_AG_UNFOLD2D,  /* (N,C,H,W) -> (N,C,OH,OW,KH,KW) view: i = {KH, KW, stride} */
    DT_AG_NKINDS
};

/* Whether ops on this thread record graphs now. */
DT_HIDDEN int dt__grad_mode(void);
/* Records that out was computed from in[0..nin) by kind, when grad mode is
 * on and an input requires grad (else does nothing). Returns out; on
 * failure (no memory) frees out and returns NULL with an error raised. NULL
 * entries of in are allowed (an absent bias). */
DT_HIDDEN dt_tensor *dt__ag_record(dt_tensor *out, enum dt_ag_kind kind, int nin, const dt_tensor *const *in, double p0,
                                   double p1, int ni, const int64_t *ip);
static inline dt_tensor *dt__ag1(dt_tensor *out, enum dt_ag_kind kind, const dt_tensor *a, double p0, double p1) {
    return dt__ag_record(out, kind, 1, &a, p0, p1, 0, NULL);
}
static inline dt_tensor *dt__ag2(dt_tensor *out, enum dt_ag_kind kind, const dt_tensor *a, const dt_tensor *b,
                                 double p0) {
    const dt_tensor *in[2] = {a, b};
    return dt__ag_record(out, kind, 2, in, p0, 0, 0, NULL);
}
static inline dt_tensor *dt__agi(dt_tensor *out, enum dt_ag_kind kind, const dt_tensor *a, int ni, const int64_t *ip) {
    return dt__ag_record(out, kind, 1, &a, 0, 0, ni, ip);
}
/* Raises and returns -1 when self may not be written in place now (it
 * requires grad and grad mode is on). */
DT_HIDDEN int dt__ag_check_inplace(const dt_tensor *self, const char *op);
/* Drops a tensor's autograd state when it is freed. */
DT_HIDDEN void dt__ag_release(dt_tensor *t);
/* Moves t's storage to dev in place (module to): same tensor, new storage,
 * a DTP_TRANSFER_MOVE probe. Its grad moves along. Returns 0 or -1. */
DT_HIDDEN int dt__move_inplace(dt_tensor *t, dt_device dev, const char *via);

/* ---------------------------------------------------------------- temporaries */

/* Intermediate tensors of a composite computation (a backward formula, a
 * loss), freed together. */
struct dt_arena {
    dt_tensor **t;
    int n, cap;
};
/* Keeps t (NULL passes through); on no memory frees t and returns NULL. */
DT_HIDDEN dt_tensor *dt__keep(struct dt_arena *a, dt_tensor *t);
DT_HIDDEN void dt__arena_free(struct dt_arena *a);
/* DT_T(ar, expr): expr's tensor kept in arena ar; jumps to `fail` when it
 * is NULL (the op failed and raised). */
#define DT_T(ar, e)                                                                                                    \
    ({                                                                                                                 \
        dt_tensor *t_ = dt__keep((ar), (e));                                                                           \
        if (!t_) goto fail;                                                                                            \
        t_;                                                                                                            \
    })

#endif /* DEVTRACE_DT_IMPL_H */
