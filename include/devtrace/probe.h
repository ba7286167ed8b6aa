/* The devtrace probe ABI: plain C functions that a tensor runtime calls at
 * every tensor event, and that a tracer loaded with LD_PRELOAD implements.
 *
 * How it works. libdtrt (the devtrace runtime) defines every dtp_* function
 * below as an empty function with default visibility and calls it across its
 * shared-object boundary. A library that defines the same symbols and is
 * loaded first (LD_PRELOAD=libdevtrace.so) wins the symbol lookup, so its
 * definitions receive the events. Without a tracer a probe costs one call to
 * an empty function. Any other C or C++ tensor code may emit the same probes
 * (define the empty functions in a shared library of its own and call them);
 * that is why this header depends on nothing but <stdint.h>.
 *
 * Rules for implementers (the tracer):
 *  - Every pointer argument is valid only for the duration of the call; copy
 *    what you keep. Strings are NUL-terminated UTF-8 and never NULL unless
 *    documented.
 *  - Probes are called from any thread, possibly concurrently, and may be
 *    called before main() (static constructors) and after exit() started.
 *  - A probe must not call back into the runtime.
 *  - dtp_runtime_init() is called once per runtime before any other probe,
 *    with the ABI version the runtime was built against. A tracer that does
 *    not know that version must ignore every later call.
 *
 * Tensor ids are unique within a process and never reused; 0 means "no
 * tensor". Op sequence numbers are unique within a process, start at 1 and
 * increase in the order ops begin. */
#ifndef DEVTRACE_PROBE_H
#define DEVTRACE_PROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to a struct layout, a function signature or the
 * meaning of a number below. 2: device types meta and other, dtypes past
 * bool (libtorch, PyTorch), dtp_stack_policy() (the PyTorch adapter).
 * 3: dtp_source_fact() (facts about the program's source, from the
 * producer that knows its language).
 * 4: dtp_tensor_role() (what a tensor is to the program: an optimizer's
 * state of a parameter, recorded as a fact instead of a naming convention).
 * A tracer of version N accepts runtimes of versions 1 to N, whose calls
 * are a subset of its own. */
#define DTP_ABI_VERSION 4u

/* ---------------------------------------------------------------- types */

/* Device kinds; the numbers are part of the ABI. */
enum dtp_device_type {
    DTP_DEVICE_CPU = 0,   /* host memory; index is always 0 */
    DTP_DEVICE_CUDA = 1,  /* cuda:<index>, real or simulated */
    DTP_DEVICE_META = 2,  /* "meta": shapes without data (PyTorch's kMeta); ABI 2 */
    DTP_DEVICE_OTHER = 3, /* an accelerator of another kind (mps, xpu, xla...), other:<index>; ABI 2 */
};

/* A device, passed by value. */
struct dtp_device {
    int32_t type;  /* enum dtp_device_type */
    int32_t index; /* ordinal within the type: N of cuda:N */
};

/* Element types; the numbers are part of the ABI. */
enum dtp_dtype {
    DTP_DTYPE_F32 = 0,  /* 32-bit IEEE float */
    DTP_DTYPE_I64 = 1,  /* 64-bit signed integer */
    DTP_DTYPE_BOOL = 2, /* one byte, 0 or 1 */
    /* ABI 2, for PyTorch's tensors: */
    DTP_DTYPE_F64 = 3,   /* 64-bit IEEE float */
    DTP_DTYPE_F16 = 4,   /* 16-bit IEEE float */
    DTP_DTYPE_BF16 = 5,  /* bfloat16 */
    DTP_DTYPE_I32 = 6,   /* 32-bit signed integer */
    DTP_DTYPE_U8 = 7,    /* unsigned byte */
    DTP_DTYPE_OTHER = 8, /* any other element type */
};

/* A tensor as it is at the moment of the event. */
struct dtp_tensor {
    uint64_t id;              /* process-unique tensor id, never reused */
    uint64_t storage_id;      /* id of the storage; views share their base's */
    int32_t dtype;            /* enum dtp_dtype */
    int32_t ndim;             /* number of dimensions, 0 for a scalar */
    const int64_t *shape;     /* [ndim] sizes */
    const int64_t *strides;   /* [ndim] strides, in elements */
    int64_t storage_offset;   /* first element's offset in the storage, in elements */
    struct dtp_device device; /* where the storage lives */
    uint64_t nbytes;          /* numel * element size (this view, not the storage) */
    const char *name;         /* name given so far, or NULL */
};

/* How a tensor came to exist. */
enum dtp_origin_kind {
    DTP_ORIGIN_FACTORY = 0,    /* zeros, randn, from_data...: what = factory name */
    DTP_ORIGIN_OP_OUTPUT = 1,  /* output of an op: what = op name, op_seq set */
    DTP_ORIGIN_VIEW = 2,       /* view of src_id: what = view kind ("transpose") */
    DTP_ORIGIN_TRANSFER = 3,   /* copy of src_id on another device: what = "to", ... */
    DTP_ORIGIN_CHECKPOINT = 4, /* loaded from a checkpoint: what = key, detail = file */
    DTP_ORIGIN_OTHER = 5,      /* anything else: what says what */
};

struct dtp_origin {
    int32_t kind;       /* enum dtp_origin_kind */
    const char *what;   /* see enum dtp_origin_kind; never NULL */
    uint64_t src_id;    /* base (view) or source (transfer) tensor, else 0 */
    uint64_t op_seq;    /* op that produced it (op output), else 0 */
    const char *detail; /* extra text (checkpoint path), or NULL */
};

/* What kind of copy a transfer was. */
enum dtp_transfer_kind {
    DTP_TRANSFER_TO = 0,   /* a new tensor on another device (to, cpu, cuda) */
    DTP_TRANSFER_COPY = 1, /* copy_ into an existing tensor on another device */
    DTP_TRANSFER_READ = 2, /* values read back into a host buffer (dst_id = 0) */
    DTP_TRANSFER_MOVE = 3, /* the tensor itself moved in place (module to): src_id == dst_id */
};

struct dtp_transfer {
    uint64_t src_id;        /* tensor copied from */
    uint64_t dst_id;        /* tensor copied into, 0 for DTP_TRANSFER_READ */
    struct dtp_device from; /* source device */
    struct dtp_device to;   /* destination device (cpu for a read) */
    uint64_t bytes;         /* payload size */
    int32_t kind;           /* enum dtp_transfer_kind */
    const char *via;        /* API that asked: "to", "cpu", "copy_", "to_host", ... */
};

/* One argument of an op. Non-tensor arguments are not listed. */
struct dtp_arg {
    const char *name;         /* argument name as in the error text: "self", "mat2" */
    uint64_t id;              /* tensor id */
    struct dtp_device device; /* its device at the call */
};

/* An op being dispatched. */
struct dtp_op {
    uint64_t seq;               /* unique, increasing; pairs begin with end */
    const char *name;           /* "matmul", "cross_entropy", ... */
    int32_t nargs;              /* entries in args */
    const struct dtp_arg *args; /* [nargs] tensor arguments in signature order */
};

/* Error kinds reported by dtp_error(). */
enum dtp_error_kind {
    DTP_ERROR_DEVICE = 1,  /* device mismatch (also reported by dtp_device_mismatch) */
    DTP_ERROR_SHAPE = 2,   /* shapes do not fit */
    DTP_ERROR_DTYPE = 3,   /* dtype not supported or not castable */
    DTP_ERROR_INDEX = 4,   /* index out of range */
    DTP_ERROR_MEMORY = 5,  /* allocation failed */
    DTP_ERROR_BACKEND = 6, /* the device backend failed (CUDA error, ...) */
    DTP_ERROR_ARG = 7,     /* bad argument value */
    DTP_ERROR_STATE = 8,   /* call not allowed now */
    DTP_ERROR_IO = 9,      /* file read or write failed */
};

/* What a tensor is to the program, beyond how it was made (ABI 4); the
 * numbers are part of the ABI. */
enum dtp_tensor_role {
    DTP_ROLE_OPTIMIZER_STATE = 1, /* an optimizer's state of parameter `of` (exp_avg, momentum_buffer...):
                                     key = the state's key */
    DTP_ROLE_MODULE_BUFFER = 2,   /* a buffer a module registered (it moves with the module): of = 0, key =
                                     its path in the module ("norm.running_mean") */
    DTP_ROLE_PARAMETER = 3,       /* a parameter (torch.nn.Parameter): a module holds it and moves it with
                                     itself, an optimizer updates it: of = 0, key = "" */
};

/* ---------------------------------------------------------------- probes */

/* Once per runtime, before its first other probe. abi_version is the
 * DTP_ABI_VERSION the runtime was compiled with. */
void dtp_runtime_init(uint32_t abi_version, const char *runtime, const char *version);

/* A device was first used; backend names what serves it: "cpu", "cuda"
 * (real CUDA), "cuda-sim" (the simulated backend). */
void dtp_device_backend(struct dtp_device device, const char *backend);

/* A tensor was created. Fired after it is fully initialised. */
void dtp_tensor_created(const struct dtp_tensor *tensor, const struct dtp_origin *origin);

/* Data crossed devices. For DTP_TRANSFER_TO, dtp_tensor_created() for dst_id
 * fired just before. */
void dtp_tensor_transferred(const struct dtp_transfer *transfer);

/* A tensor was given a name (by the program, or by module registration). */
void dtp_tensor_named(uint64_t id, const char *name);

/* The last reference to a tensor was dropped. */
void dtp_tensor_freed(uint64_t id);

/* An op starts: after its arguments are known, before the device check.
 * Until its dtp_op_end, the calling thread runs only the runtime's own code,
 * never the program's (a callback would break this; the error handler is
 * the one exception, always announced by dtp_device_mismatch or dtp_error
 * first): a tracer may give the events the runtime fires in between the
 * op's call site, unwound once at its begin. Besides the tensor ops,
 * dt_backward ("backward"), dt_optimizer_step ("optimizer.step") and
 * dt_optimizer_zero_grad ("optimizer.zero_grad") are ops, with no tensor
 * argument, around all they do. */
void dtp_op_begin(const struct dtp_op *op);

/* The op with this seq finished. status is 0 on success, else the
 * enum dtp_error_kind of its failure; outputs lists the tensors it made, or,
 * for an in-place op (add_, copy_), the tensor it wrote. When the runtime's
 * error handler ends the process, the failing op's end may never come:
 * dtp_error() then follows its dtp_op_begin(). */
void dtp_op_end(uint64_t seq, const char *name, int32_t status, int32_t noutputs, const uint64_t *outputs);

/* The device check of op failed. first and other index op->args: the operand
 * that fixed the op's device and the first operand found elsewhere. message is
 * the full error text. Fired before the runtime's error handler runs (which
 * may exit the process). */
void dtp_device_mismatch(const struct dtp_op *op, int32_t first, int32_t other, const char *message);

/* Any runtime error, device mismatch included, before the error handler runs.
 * op is the op or API function that failed ("" when none). */
void dtp_error(const char *op, int32_t kind, const char *message);

/* Which stacks the tracer records for the probes this thread fires next
 * (ABI 2). A producer written in an interpreted language whose own stack is
 * what its user reads (the PyTorch adapter: the Python stack) sets
 * DTP_STACKS_INTERPRETER around its probe calls, which spares the native
 * unwind through the interpreter, and puts the previous policy back after.
 * Returns the previous policy. */
enum dtp_stack_policy {
    DTP_STACKS_ALL = 0,         /* native and, in CPython, Python frames (the default) */
    DTP_STACKS_INTERPRETER = 1, /* the interpreter's frames only (Python) */
    DTP_STACKS_NONE = 2,        /* no stack at all (a free whose place says nothing) */
};
int32_t dtp_stack_policy(int32_t policy);

/* A producer that failed inside itself (an adapter's own bug, a tensor it
 * cannot read): tracing stops with one warning that says why, the program
 * goes on, and the trace says why (meta tracing_stopped), instead of a
 * trace that silently lacks what came after. ABI 2, optional: a producer
 * looks it up (dlsym) and does without where it is absent. */
void dtp_producer_failed(const char *why);

/* A fact about the program's source (ABI 3): at line `line` of file `file`
 * (as the producer's stacks name it: a Python frame's co_filename), `key`
 * has `value`; line 0 is about the whole file. The producer that knows the
 * program's language writes them (the PyTorch adapter, from Python's ast),
 * so that a reader of the trace never parses source text. The keys and
 * what their values mean are common/trace_schema.h's DT_FACT_* and
 * docs/source-facts.md. A key may have several values on one line (one per
 * call starting there); the same (file, line, key, value) given twice is
 * kept once. Never on a hot path: a producer emits a file's facts once,
 * when a reader will need them (the PyTorch adapter: at the first device
 * mismatch). Optional, as dtp_producer_failed: a producer looks it up
 * (dlsym) and writes no facts where it is absent. */
void dtp_source_fact(const char *file, int32_t line, const char *key, const char *value);

/* Tensor id has role `role` (enum dtp_tensor_role) with respect to tensor
 * `of` (0 when the role names none), key saying which of its kind it is
 * ("exp_avg"; never NULL, "" when there is nothing to say). ABI 4, optional
 * as dtp_source_fact: a producer looks it up (dlsym) and does without where
 * it is absent. A tensor's name stays for people; a reader of the trace
 * decides on the role, never on the name. Fired once per tensor and role,
 * after dtp_tensor_created() for both tensors. */
void dtp_tensor_role(uint64_t id, int32_t role, uint64_t of, const char *key);

#ifdef __cplusplus
}
#endif

#endif /* DEVTRACE_PROBE_H */
