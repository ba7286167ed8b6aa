/* The dtp_* probes (include/devtrace/probe.h), as libdevtrace.so implements
 * them: each turns its arguments into one record on the calling thread's
 * ring. Guarded against re-entry (a probe firing while a record is being
 * built on this thread), running before init, after shutdown, and against a
 * runtime that speaks another probe ABI. */
#include "front.h"

#include <string.h>

static _Atomic int g_abi_ok = 1; /* cleared when a runtime announces another ABI */

#define ENTER()                                                                                                        \
    if (tr_in_emit) return;                                                                                            \
    if (!atomic_load_explicit(&g_tr.enabled, memory_order_relaxed) && !tr_ensure_init()) return;                       \
    if (!atomic_load_explicit(&g_abi_ok, memory_order_relaxed)) return;                                                \
    tr_in_emit = 1
#define LEAVE() tr_in_emit = 0

static inline void ev_init(struct tr_ev *e, enum tr_kind kind, int nint, int nstr) {
    e->kind = kind;
    e->nint = nint;
    e->nstr = nstr;
    e->stack = 1;
    e->skip = 1; /* the probe itself */
    e->no_python = 0;
    e->op = 0;
    e->in_op = 1;
}

static inline uint64_t dev(struct dtp_device d) { return (uint64_t)(uint32_t)d.type << 16 | (uint32_t)d.index; }

TR_EXPORT void dtp_runtime_init(uint32_t abi_version, const char *runtime, const char *version) {
    if (abi_version < 1 || abi_version > DTP_ABI_VERSION) { /* an older version's calls are a subset of this one's */
        atomic_store(&g_abi_ok, 0);
        tr_info("%s speaks probe ABI %u, this tracer ABI %u: its events are not recorded",
                runtime ? runtime : "a runtime", abi_version, DTP_ABI_VERSION);
        return;
    }
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_INIT, 1, 2);
    e.ints[0] = abi_version;
    e.strs[0] = runtime;
    e.strs[1] = version;
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_device_backend(struct dtp_device device, const char *backend) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_BACKEND, 1, 1);
    e.ints[0] = dev(device);
    e.strs[0] = backend;
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_tensor_created(const struct dtp_tensor *t, const struct dtp_origin *o) {
    ENTER();
    struct tr_ev e;
    int nd = t->ndim < 0 ? 0 : t->ndim > (TR_MAX_INTS - 10) / 2 ? (TR_MAX_INTS - 10) / 2 : t->ndim;
    ev_init(&e, TR_EV_CREATED, 10 + 2 * nd, 3);
    uint64_t *I = e.ints;
    I[0] = t->id, I[1] = t->storage_id, I[2] = (uint64_t)t->dtype, I[3] = (uint64_t)nd, I[4] = dev(t->device);
    I[5] = t->nbytes, I[6] = (uint64_t)t->storage_offset, I[7] = (uint64_t)o->kind, I[8] = o->src_id, I[9] = o->op_seq;
    for (int i = 0; i < nd; i++) I[10 + i] = (uint64_t)t->shape[i], I[10 + nd + i] = (uint64_t)t->strides[i];
    e.strs[0] = o->what, e.strs[1] = t->name, e.strs[2] = o->detail;
    if (o->kind == DTP_ORIGIN_OP_OUTPUT) e.op = o->op_seq;
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_tensor_transferred(const struct dtp_transfer *x) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_TRANSFER, 6, 1);
    e.ints[0] = x->src_id, e.ints[1] = x->dst_id, e.ints[2] = dev(x->from), e.ints[3] = dev(x->to);
    e.ints[4] = x->bytes, e.ints[5] = (uint64_t)x->kind;
    e.strs[0] = x->via;
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_tensor_named(uint64_t id, const char *name) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_NAMED, 1, 1);
    e.ints[0] = id;
    e.strs[0] = name;
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_tensor_freed(uint64_t id) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_FREED, 1, 0);
    e.ints[0] = id;
    tr_ev_emit(&e);
    LEAVE();
}

/* Op arguments as (id, device) ints from `first` and names from strs[1]. */
static int put_args(struct tr_ev *e, int first, const struct dtp_op *op, int first_str) {
    int max = (TR_MAX_INTS - first) / 2, n = op->nargs < 0 ? 0 : op->nargs;
    if (max > TR_MAX_STRS - first_str) max = TR_MAX_STRS - first_str;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        e->ints[first + 2 * i] = op->args[i].id;
        e->ints[first + 2 * i + 1] = dev(op->args[i].device);
        e->strs[first_str + i] = op->args[i].name;
    }
    e->nint = first + 2 * n;
    e->nstr = first_str + n;
    return n;
}

TR_EXPORT void dtp_op_begin(const struct dtp_op *op) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_OP_BEGIN, 2, 1);
    e.ints[0] = op->seq;
    e.strs[0] = op->name;
    e.ints[1] = (uint64_t)put_args(&e, 2, op, 1);
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_op_end(uint64_t seq, const char *name, int32_t status, int32_t noutputs, const uint64_t *outputs) {
    ENTER();
    struct tr_ev e;
    int n = noutputs < 0 ? 0 : noutputs > TR_MAX_INTS - 3 ? TR_MAX_INTS - 3 : noutputs;
    ev_init(&e, TR_EV_OP_END, 3 + n, 1);
    e.stack = 0; /* the same call as its op_begin: the trace gives the end that stack */
    e.ints[0] = seq, e.ints[1] = (uint64_t)(int64_t)status, e.ints[2] = (uint64_t)n;
    for (int i = 0; i < n; i++) e.ints[3 + i] = outputs[i];
    e.strs[0] = name;
    tr_ev_emit(&e);
    LEAVE();
    tr_cfacts_flush();
}

TR_EXPORT void dtp_device_mismatch(const struct dtp_op *op, int32_t first, int32_t other, const char *message) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_MISMATCH, 4, 2);
    e.in_op = 0; /* its own stack: where the error was raised */
    e.ints[0] = op->seq, e.ints[1] = (uint64_t)(int64_t)first, e.ints[2] = (uint64_t)(int64_t)other;
    e.strs[0] = op->name, e.strs[1] = message;
    e.ints[3] = (uint64_t)put_args(&e, 4, op, 2);
    tr_ev_emit(&e);
    LEAVE();
    tr_cfacts_at_mismatch(); /* native source facts, once, when the op has ended */
}

TR_EXPORT int32_t dtp_stack_policy(int32_t policy) {
    int32_t old = tr_no_native;
    tr_no_native = policy == DTP_STACKS_INTERPRETER || policy == DTP_STACKS_NONE ? policy : DTP_STACKS_ALL;
    return old;
}

TR_EXPORT void dtp_producer_failed(const char *why) {
    if (atomic_load_explicit(&g_tr.enabled, memory_order_relaxed))
        tr_fail("%.400s", why && *why ? why : "a producer of events failed");
}

TR_EXPORT void dtp_tensor_role(uint64_t id, int32_t role, uint64_t of, const char *key) {
    if (!id) return; /* outside the contract: no tensor */
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_ROLE, 3, 1);
    e.stack = 0; /* a fact about the tensor; its naming and making have the stacks */
    e.ints[0] = id, e.ints[1] = (uint64_t)(int64_t)role, e.ints[2] = of;
    e.strs[0] = key ? key : "";
    tr_ev_emit(&e);
    LEAVE();
}

TR_EXPORT void dtp_source_fact(const char *file, int32_t line, const char *key, const char *value) {
    if (!file || !key || !value || line < 0) return; /* outside the contract: nothing to keep */
    ENTER();
    tr_source_fact(file, line, key, value);
    LEAVE();
}

TR_EXPORT void dtp_error(const char *op, int32_t kind, const char *message) {
    ENTER();
    struct tr_ev e;
    ev_init(&e, TR_EV_ERROR, 1, 2);
    e.in_op = 0; /* its own stack: where the error was raised */
    e.ints[0] = (uint64_t)(int64_t)kind;
    e.strs[0] = op, e.strs[1] = message;
    tr_ev_emit(&e);
    LEAVE();
    tr_cfacts_flush();
}
