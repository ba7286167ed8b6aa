/* The op families: which named ops move a tensor, copy into one, initialize a parameter in place, make a tensor
 * and take device=, index, read values back to the host, or construct a tensor the legacy way. One table, read
 * by the producers (the PyTorch adapter gets it through its extension, _probes.c: OPS_<FAMILY> tuples) and by
 * the viewer (C lookups, or SQL lists made from the same macros), so that no second copy of a list of op
 * names exists. It says what a name is; what a rule concludes from it is the reader's. */
#ifndef DEVTRACE_OP_FAMILIES_H
#define DEVTRACE_OP_FAMILIES_H

#include <string.h>

/* One family per X-macro; each row is X(name), the op's name as the producers record it (PyTorch's function or
 * method name; an aten:: prefix is the reader's to strip). A name may be in several families. */

/* Moves: a tensor method returning the tensor on another device (the same tensor when already there). */
#define DT_OPS_MOVE(X) X("to") X("cpu") X("cuda") X("type") X("mps") X("xpu")

/* Copies between devices that are not moves: into an existing tensor, or aten's own copy and data swap. */
#define DT_OPS_COPY(X) X("copy_") X("_to_copy") X("set_data")

/* In-place initializers: what a module's construction runs on its parameters, on whatever device it is built on
 * (torch.nn.init and Tensor's random and fill methods). */
#define DT_OPS_INIT(X)                                                                                                 \
    X("uniform_")                                                                                                      \
    X("normal_") X("fill_") X("zero_") X("random_") X("bernoulli_") X("exponential_") X("cauchy_") X("log_normal_")    \
        X("geometric_") X("kaiming_uniform_") X("kaiming_normal_") X("xavier_uniform_") X("xavier_normal_")            \
            X("trunc_normal_") X("orthogonal_") X("constant_") X("ones_") X("zeros_") X("eye_") X("dirac_")

/* Factories: functions that make a tensor from no tensor operand and take device= (torch.zeros(n, device=d)).
 * Not torch.multinomial, poisson or bernoulli: they sample from a tensor operand and take no device=, so they are
 * ops whose output is on that operand's device. */
#define DT_OPS_FACTORY(X)                                                                                              \
    X("zeros")                                                                                                         \
    X("ones") X("empty") X("full") X("rand") X("randn") X("randint") X("randperm") X("arange") X("range")              \
        X("linspace") X("logspace") X("eye") X("tensor") X("as_tensor") X("asarray") X("scalar_tensor")                \
            X("empty_strided") X("zeros_like") X("ones_like") X("empty_like") X("full_like") X("rand_like")            \
                X("randn_like") X("randint_like") X("frombuffer") X("complex") X("polar") X("tril_indices")            \
                    X("triu_indices") X("sparse_coo_tensor") X("sparse_csr_tensor") X("bartlett_window")               \
                        X("blackman_window") X("hamming_window") X("hann_window") X("kaiser_window") X("normal")

/* Indexing: a cpu integer index may index a tensor on any device (PyTorch's device rule for these). */
#define DT_OPS_INDEX(X)                                                                                                \
    X("__getitem__") X("__setitem__") X("index") X("index_put") X("index_put_") X("_index_put_impl_")

/* Reads: values copied back to the host (a transfer of kind DTP_TRANSFER_READ, no tensor made). */
#define DT_OPS_READ(X)                                                                                                 \
    X("item") X("tolist") X("numpy") X("__bool__") X("__float__") X("__int__") X("__index__") X("__complex__")

/* Legacy typed constructors: <kind>Tensor, as torch.<kind>Tensor and torch.cuda.<kind>Tensor, which no
 * function mode sees (the producer records them as factories named by their dotted name). */
#define DT_OPS_LEGACY_CTOR(X)                                                                                          \
    X("Float") X("Double") X("Half") X("BFloat16") X("Long") X("Int") X("Short") X("Char") X("Byte") X("Bool")

/* Factories that take no device argument: a tensor made from host memory (numpy's, a buffer), or the legacy
 * torch.Tensor constructor (which refuses another device): such a tensor goes to a device by .to() on the call. */
#define DT_OPS_NO_DEVICE(X) X("from_numpy") X("frombuffer") X("from_dlpack") X("Tensor")

/* Combining: a new tensor assembled from several (a batch stacked from a dataset's rows): where the value the
 * program uses was made, not where the rows were (the chain's origin stops there). */
#define DT_OPS_COMBINE(X)                                                                                              \
    X("stack") X("cat") X("concat") X("concatenate") X("hstack") X("vstack") X("dstack") X("column_stack")

/* Shape of: ops that take their second tensor (other) for its shape only (x.expand_as(other)): other's device and
 * values play no part, so such a call is no use of other's values. */
#define DT_OPS_SHAPE_OF(X) X("expand_as") X("view_as") X("reshape_as")

/* Copy into: ops that copy their second tensor (src) into their first (dst.copy_(src)), across devices: dst's
 * device decides where the values go, so such a call is no use of src on its own device. */
#define DT_OPS_COPY_INTO(X) X("copy_")

/* F(NAME, bit, rows): every family, for a reader that iterates them (the extension's OPS_<NAME> tuples). */
#define DT_OP_FAMILIES(F)                                                                                              \
    F(MOVE, 0x01, DT_OPS_MOVE)                                                                                         \
    F(COPY, 0x02, DT_OPS_COPY)                                                                                         \
    F(INIT, 0x04, DT_OPS_INIT)                                                                                         \
    F(FACTORY, 0x08, DT_OPS_FACTORY)                                                                                   \
    F(INDEX, 0x10, DT_OPS_INDEX)                                                                                       \
    F(READ, 0x20, DT_OPS_READ)                                                                                         \
    F(LEGACY_CTOR, 0x40, DT_OPS_LEGACY_CTOR)                                                                           \
    F(COMBINE, 0x80, DT_OPS_COMBINE)                                                                                   \
    F(NO_DEVICE, 0x100, DT_OPS_NO_DEVICE)                                                                              \
    F(SHAPE_OF, 0x200, DT_OPS_SHAPE_OF)                                                                                \
    F(COPY_INTO, 0x400, DT_OPS_COPY_INTO)

enum dt_op_family {
#define DT_OPF_ENUM_(name, bit, rows) DT_OPF_##name = bit,
    DT_OP_FAMILIES(DT_OPF_ENUM_)
#undef DT_OPF_ENUM_
};

/* A family's names as the items of an SQL list: `s.text IN (DT_OPS_SQL(DT_OPS_MOVE))` is
 * `s.text IN ('to', 'cpu', ..., '')`; the closing '' (no op has an empty name) ends the list. */
#define DT_OPS_SQL_ITEM_(n) "'" n "', "
#define DT_OPS_SQL(rows)    rows(DT_OPS_SQL_ITEM_) "''"

/* The namespace libtorch's op names carry ("aten::eq"), which a reader strips to compare an op with the families
 * and with the program's source (x.eq(y), torch::eq(x, y)). */
#define DT_OP_NS_ATEN "aten::"
/* name without that namespace. */
static inline const char *dt_op_bare(const char *name) {
    return name && !strncmp(name, DT_OP_NS_ATEN, sizeof DT_OP_NS_ATEN - 1) ? name + sizeof DT_OP_NS_ATEN - 1 : name;
}

/* libdtrt's C function of an op is the op's name with this prefix (op cross_entropy: dt_cross_entropy), as the
 * program's source calls it. */
#define DT_OP_C_PREFIX "dt_"

/* C++'s binary arithmetic operators on tensors and the ops they call (image - mean is aten::sub): the C/C++
 * statement reader records `operatorSYM` calls with their two operands (tracer/front/cfacts.c), which the
 * viewer matches to the failing op by this table. X(op, symbol). */
#define DT_OP_CXX_OPERATORS(X) X("add", "+") X("sub", "-") X("mul", "*") X("div", "/")
#define DT_OP_CXX_OPERATOR_PREFIX "operator"

/* The symbol of the C++ operator that calls op ("aten::sub": "-"), or NULL. */
static inline const char *dt_op_cxx_operator(const char *op) {
    op = dt_op_bare(op);
#define DT_OPX_TEST_(n, sym)                                                                                           \
    if (op && !strcmp(op, n)) return sym;
    DT_OP_CXX_OPERATORS(DT_OPX_TEST_)
#undef DT_OPX_TEST_
    return NULL;
}

/* The families (enum dt_op_family bits) of the op called name, 0 for none; an "aten::" prefix is skipped. */
static inline unsigned dt_op_families_of(const char *name) {
    if (!name) return 0;
    name = dt_op_bare(name);
    unsigned f = 0;
#define DT_OPF_TEST_(n) || !strcmp(name, n)
#define DT_OPF_FAMILY_(fam, bit, rows)                                                                                 \
    if (0 rows(DT_OPF_TEST_)) f |= bit;
    DT_OP_FAMILIES(DT_OPF_FAMILY_)
#undef DT_OPF_FAMILY_
#undef DT_OPF_TEST_
    return f;
}

/* The legacy typed constructors are PyTorch's <kind>Tensor (torch.LongTensor: kind Long). */
#define DT_OP_LEGACY_CTOR_SUFFIX "Tensor"

/* Whether the factory named what (a producer's name, dotted or not: "torch.from_numpy", "torch.LongTensor") takes
 * no device argument: DT_OPS_NO_DEVICE by its last name, or a legacy typed constructor. */
static inline int dt_op_takes_no_device(const char *what) {
    const char *dot = what ? strrchr(what, '.') : NULL, *base = dot ? dot + 1 : what;
    if (!base) return 0;
    if (dt_op_families_of(base) & DT_OPF_NO_DEVICE) return 1;
    size_t n = strlen(base), t = sizeof DT_OP_LEGACY_CTOR_SUFFIX - 1;
    char kind[32];
    if (n <= t || n - t >= sizeof kind || strcmp(base + n - t, DT_OP_LEGACY_CTOR_SUFFIX)) return 0;
    memcpy(kind, base, n - t);
    kind[n - t] = 0;
    return (dt_op_families_of(kind) & DT_OPF_LEGACY_CTOR) != 0;
}


/* ================================================================ what the viewer's diagnosis reads
 * Names the producers write and the diagnosis reads, until the producers record them as typed facts (a
 * tensor's role is one now: the roles table, common/vocab.h). The viewer compares against these constants
 * only, never against a literal of its own. */

/* ---------------------------------------------------------------- the diagnosis's op lists (ops.name, aten:: stripped) */

/* Ops that move a tensor between devices, and the copies they are made of: their input is where the data came
 * from, not where the program works. As an SQL list. */
#define DT_OPS_MOVE_SQL "'to', 'cpu', 'cuda', 'copy_', '_to_copy', 'set_data'"
/* The moves a program writes as a method that takes the device (Tensor.to, .cuda): a move that returned its own
 * input moved nothing. As an SQL list. */
#define DT_OPS_MOVE_TO_SQL "'to', 'cuda'"
/* The in-place random and fill initializers of a module's parameters (torch.nn.init and Tensor's own): they run
 * at construction, on the cpu wherever the model is meant to run. As an SQL list. */
#define DT_OPS_INIT_SQL DT_OPS_SQL(DT_OPS_INIT)

/* The methods a program moves an object with (x.to(device), model.cuda()), as the source facts name a call's
 * callee ("model.to"): the last name after a dot. */
#define DT_METHOD_MOVE_TO   "to"
#define DT_METHOD_MOVE_CUDA "cuda"
/* The method that copies a tensor to the cpu (x.cpu()). */
#define DT_METHOD_COPY_CPU "cpu"

/* ---------------------------------------------------------------- origins and roles */

/* tensors.what of a module's parameter, as the PyTorch recorder writes it (origin factory), a name for people.
 * Since schema 13 the parameter's role (roles, DTP_ROLE_PARAMETER) is the fact; the viewer reads this name only in
 * a trace older than that (model.c, is_parameter and vw_fact_params_made_in). */
#define DT_WHAT_PARAMETER "nn.Parameter"
/* The name prefix of an optimizer's state tensor: "optimizer.state.<parameter>.<key>" (runtime/optim.c, the
 * PyTorch recorder), a name for people. Since schema 11 the state's role (roles, DTP_ROLE_OPTIMIZER_STATE) is the
 * fact; the viewer reads this prefix only in a trace older than that (model.c, vw_fact_state_left_behind). */
#define DT_NAME_OPTIMIZER_STATE "optimizer.state."

/* ---------------------------------------------------------------- frames (Python) */

/* The name Python code conventionally gives a method's receiver. Read only in a trace older than schema 13, whose
 * setattr facts do not say whether their object is the receiver (model.c, src_fact). */
#define DT_PY_RECEIVER "self"
/* The last name of a constructor's frame ("Net.__init__"). */
#define DT_PY_CONSTRUCTOR "__init__"
/* torch's module class, as a class's bases name it (nn.Module, torch.nn.Module) */
#define DT_PY_MODULE_CLASS "Module"
/* The frame of a script's top level, and C's entry point: the program's outermost function. */
#define DT_PY_TOP_LEVEL "<module>"
#define DT_C_MAIN       "main"

#endif /* DEVTRACE_OP_FAMILIES_H */
