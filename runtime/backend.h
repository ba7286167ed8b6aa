/* The device backend contract of libdtrt: the vtable every backend (cpu,
 * simulated cuda, real cuda) fills, and the argument blocks its kernels take.
 * Plain C with no atomics, so the CUDA backend (C++) includes it too. Memory
 * movement between devices is not here: it lives in transfer.c alone. */
#ifndef DEVTRACE_BACKEND_H
#define DEVTRACE_BACKEND_H

#include <devtrace/dt.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- kernel arguments */

/* What a kernel sees of a tensor: memory plus a strided layout. */
struct dt_view {
    void *base;                   /* storage data pointer */
    int64_t offset;               /* first element, in elements */
    dt_dtype dtype;               /* element type */
    int ndim;                     /* dimensions used in shape/strides */
    int64_t shape[DT_MAX_DIMS];   /* sizes */
    int64_t strides[DT_MAX_DIMS]; /* in elements; 0 for broadcast dims */
};

/* An elementwise input: a view, or a scalar constant (is_scalar). */
struct dt_operand {
    struct dt_view v; /* shape == out's; v.dtype also for scalars */
    int is_scalar;    /* use scalar instead of v.base */
    double scalar;    /* the constant */
};

enum dt_ew_op {
    DT_EW_COPY, /* out = in0 (with dtype conversion) */
    DT_EW_FILL, /* out = p0 */
    DT_EW_NEG,
    DT_EW_EXP,
    DT_EW_LOG,
    DT_EW_SQRT,
    DT_EW_ABS,
    DT_EW_RELU,
    DT_EW_SIGMOID,
    DT_EW_TANH,
    DT_EW_CLAMP, /* min(max(in0, p0), p1) */
    DT_EW_ADD,   /* in0 + p0 * in1 */
    DT_EW_SUB,   /* in0 - p0 * in1 */
    DT_EW_MUL,
    DT_EW_DIV,
    DT_EW_POW,
    DT_EW_EQ,
    DT_EW_NE,
    DT_EW_LT,
    DT_EW_LE,
    DT_EW_GT,
    DT_EW_GE,
    DT_EW_WHERE, /* in0 ? in1 : in2 */
    DT_EW_NOPS
};

struct dt_ew_args {
    enum dt_ew_op op;        /* what to compute */
    dt_dtype compute;        /* F32 computes in floating point, I64/BOOL in integers */
    struct dt_view out;      /* written; may be strided (in-place ops) */
    int nin;                 /* inputs used: 0..3 */
    struct dt_operand in[3]; /* broadcast to out's shape */
    double p0, p1;           /* op parameters, see enum dt_ew_op */
};

enum dt_reduce_op {
    DT_RED_SUM,
    DT_RED_MEAN,
    DT_RED_MAX,    /* values, and indices when idx.base is set */
    DT_RED_ARGMAX, /* indices only (into idx) */
};

/* Reduce in along dim; output j is the j-th combination of the other dims in
 * row-major order. Outputs are contiguous. */
struct dt_reduce_args {
    enum dt_reduce_op op;
    struct dt_view in;  /* strided */
    int dim;            /* reduced dimension of in */
    struct dt_view out; /* values (unused for ARGMAX): numel = in.numel / in.shape[dim] */
    struct dt_view idx; /* i64 indices, or base NULL */
};

/* softmax / log_softmax along dim; in and out share a shape. */
struct dt_softmax_args {
    int log;            /* log_softmax */
    struct dt_view in;  /* f32, strided */
    struct dt_view out; /* f32, strided */
    int dim;
};

/* out[b] = a[b] @ b[b] (+ bias), all 3-D (B, M, K) x (B, K, N) -> (B, M, N),
 * strided (a batch stride of 0 broadcasts). f32 only. */
struct dt_matmul_args {
    struct dt_view a, b, out;
    int has_bias;
    struct dt_view bias; /* 1-D (N) */
};

/* out = in with dim indexed by index (1-D i64). out contiguous. */
struct dt_index_args {
    struct dt_view in;
    int dim;
    struct dt_view index;
    struct dt_view out;
};

/* ---------------------------------------------------------------- backends */

/* A device backend. Every kernel returns 0, or a dt_error_kind with a message
 * left by dt__backend_msg(). Memory movement lives in transfer.c alone. */
struct dt_backend {
    const char *name;    /* "cpu", "cuda-sim", "cuda" */
    int host_accessible; /* its memory is plain host memory (cpu, cuda-sim) */
    int (*device_count)(void);
    void *(*alloc)(int index, size_t bytes); /* NULL on failure */
    void (*free)(int index, void *ptr, size_t bytes);
    /* Copies within the backend, possibly between two of its devices; each
     * pointer is an allocation's base plus a byte offset. */
    int (*copy_peer)(int dst_index, void *dst_base, size_t dst_off, int src_index, const void *src_base, size_t src_off,
                     size_t bytes);
    /* Host memory <-> this backend; NULL when host_accessible. */
    int (*upload)(int index, void *dst, const void *host_src, size_t bytes);
    int (*download)(int index, void *host_dst, const void *src, size_t bytes);
    int (*ew)(int index, const struct dt_ew_args *a);
    int (*reduce)(int index, const struct dt_reduce_args *a);
    int (*softmax)(int index, const struct dt_softmax_args *a);
    int (*matmul)(int index, const struct dt_matmul_args *a);
    /* On an out-of-range index returns DT_ERR_INDEX and stores it in *bad. */
    int (*index_select)(int index, const struct dt_index_args *a, int64_t *bad);
    int (*synchronize)(int index);
};

extern DT_HIDDEN const struct dt_backend dt__backend_cpu;
extern DT_HIDDEN const struct dt_backend dt__backend_sim;
/* NULL when built without CUDA. */
extern DT_HIDDEN const struct dt_backend *const dt__backend_cuda_ptr;

/* Host kernels, shared by the cpu and simulated backends (kernels_host.c). */
DT_HIDDEN int dt__host_ew(const struct dt_ew_args *a);
DT_HIDDEN int dt__host_reduce(const struct dt_reduce_args *a);
DT_HIDDEN int dt__host_softmax(const struct dt_softmax_args *a);
DT_HIDDEN int dt__host_matmul(const struct dt_matmul_args *a);
DT_HIDDEN int dt__host_index_select(const struct dt_index_args *a, int64_t *bad);

/* Leaves a backend failure message for the op layer (thread-local). */
DT_HIDDEN void dt__backend_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
DT_HIDDEN const char *dt__backend_last_msg(void);

#ifdef __cplusplus
}
#endif

#endif /* DEVTRACE_BACKEND_H */
