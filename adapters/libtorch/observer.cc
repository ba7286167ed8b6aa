// The libtorch observer: libtorch's aten ops, as a RecordFunction global
// callback sees them, turned into the devtrace probes (include/devtrace/
// probe.h) that libdtrt fires, so the tracer, the trace and the report's
// chain serve native libtorch programs too. libdevtrace.so loads it at its
// start into a process that maps the libtorch it was compiled against
// (tracer/front/libtorch.c); it reaches the probes through the tracer's exported
// dtp_* functions, and does nothing when they are not there.
//
// What it records, for each op the program calls (an op nested in another,
// such as the empty_strided and copy_ inside to, is part of the outer one
// and not recorded):
//  - the op's begin and end, with its tensor arguments named as in its
//    schema ("self", "other", "tensors[1]");
//  - each tensor the first time it is seen: an op's new output is a view
//    when it shares its storage with an input, a transfer when every input
//    is on one device and it is on another, a factory product when the op
//    has no tensor input, else an op output; a tensor first seen as an
//    input (made outside any op) on the storage of a tensor seen before is
//    that tensor when it alone held the storage and is gone (torch::tensor
//    ({...}) returns a new impl of the empty() it filled), else a view of
//    it; on an unknown storage (from_blob) it is "first seen";
//  - transfers: the result of a copy to another device, a copy_ into a
//    tensor on another device, and a tensor whose device an op changed in
//    place (set_data, as a module's to() does);
//  - a device mismatch, checked at the op's start with PyTorch's rule (all
//    tensor operands on one device; a 0-dim cpu tensor may join any), before
//    libtorch throws: an uncaught throw ends the process without running the
//    op's end callback. Ops that take operands on two devices by design
//    (copies, index with cpu indices) are not checked; a mismatch recorded
//    for an op that then succeeds is shown by no report (its status is 0).
//
// Not recorded: frees (a TensorImpl's end is not observable from a
// callback; a map entry only remembers the impl weakly), names, and ops
// that libtorch runs without RecordFunction.
//
// Compiled with -DNDEBUG like Debian's libtorch: RecordFunction's layout
// depends on it.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/TensorImpl.h>
#include <torch/version.h>

#include <devtrace/probe.h>

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

// ---------------------------------------------------------------- probes

struct probes {
    decltype(&dtp_runtime_init) runtime_init;
    decltype(&dtp_device_backend) device_backend;
    decltype(&dtp_tensor_created) tensor_created;
    decltype(&dtp_tensor_transferred) tensor_transferred;
    decltype(&dtp_op_begin) op_begin;
    decltype(&dtp_op_end) op_end;
    decltype(&dtp_device_mismatch) device_mismatch;
    decltype(&dtp_producer_failed) producer_failed; // optional (NULL under an older tracer)
} P;

bool resolve_probes() {
    struct {
        void **slot;
        const char *name;
    } want[] = {
        {reinterpret_cast<void **>(&P.runtime_init), "dtp_runtime_init"},
        {reinterpret_cast<void **>(&P.device_backend), "dtp_device_backend"},
        {reinterpret_cast<void **>(&P.tensor_created), "dtp_tensor_created"},
        {reinterpret_cast<void **>(&P.tensor_transferred), "dtp_tensor_transferred"},
        {reinterpret_cast<void **>(&P.op_begin), "dtp_op_begin"},
        {reinterpret_cast<void **>(&P.op_end), "dtp_op_end"},
        {reinterpret_cast<void **>(&P.device_mismatch), "dtp_device_mismatch"},
    };
    for (auto &w : want)
        if (!(*w.slot = dlsym(RTLD_DEFAULT, w.name))) return false;
    *reinterpret_cast<void **>(&P.producer_failed) = dlsym(RTLD_DEFAULT, "dtp_producer_failed"); // optional
    return true;
}

// The observer's own failure (an exception inside a callback): never into
// the program; recording stops here, with the tracer's one warning, and
// the trace says why, rather than a trace that silently lacks this op.
std::atomic<bool> g_off{false};
void fail(const char *what) {
    if (g_off.exchange(true)) return;
    std::string m = std::string("the libtorch observer failed (") + (what ? what : "an unknown exception") +
                    "); nothing after this is recorded";
    if (P.producer_failed) P.producer_failed(m.c_str());
}

// ---------------------------------------------------------------- devices and dtypes

dtp_device device_of(const c10::Device &d) {
    int32_t index = d.has_index() ? d.index() : 0;
    switch (d.type()) {
    case c10::DeviceType::CPU: return {DTP_DEVICE_CPU, 0};
    case c10::DeviceType::CUDA: return {DTP_DEVICE_CUDA, index};
    case c10::DeviceType::Meta: return {DTP_DEVICE_META, 0};
    default: return {DTP_DEVICE_OTHER, index};
    }
}

bool same_device(dtp_device a, dtp_device b) { return a.type == b.type && a.index == b.index; }

int32_t dtype_of(c10::ScalarType t) {
    switch (t) {
    case c10::ScalarType::Float: return DTP_DTYPE_F32;
    case c10::ScalarType::Long: return DTP_DTYPE_I64;
    case c10::ScalarType::Bool: return DTP_DTYPE_BOOL;
    case c10::ScalarType::Double: return DTP_DTYPE_F64;
    case c10::ScalarType::Half: return DTP_DTYPE_F16;
    case c10::ScalarType::BFloat16: return DTP_DTYPE_BF16;
    case c10::ScalarType::Int: return DTP_DTYPE_I32;
    case c10::ScalarType::Byte: return DTP_DTYPE_U8;
    default: return DTP_DTYPE_OTHER;
    }
}

// "aten::zeros" -> "zeros": the what of an origin, as libdtrt names them.
const char *short_name(const char *op) {
    const char *p = std::strstr(op, "::");
    return p ? p + 2 : op;
}

// ---------------------------------------------------------------- tensor identity
//
// THREAD SAFETY NOTES: g_mu guards g_ids, g_storages, g_sweep_at and g_devices; ops run
// on any thread (autograd's included). Probes are called with it held: they
// take no lock of theirs and never call back.

using weak_impl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct entry {
    uint64_t id;      // the tensor's devtrace id
    uint64_t storage; // id of the tensor whose storage it shares (its own for a new storage)
    weak_impl impl;   // keeps the impl's memory (not its data) from reuse while the entry lives
};

// The tensor that made a storage, by the storage: a tensor first met as an
// input on a known storage was made outside any op from a tensor the
// observer saw (libtorch's torch::tensor({...}) fills an empty() and hands
// back a shallow copy of it, made by make_variable; .data() is another).
struct storage_owner {
    uint64_t id;                                 // the tensor that made the storage
    uint64_t nbytes;                             // its bytes
    weak_impl impl;                              // that tensor, while it lives
    c10::weak_intrusive_ptr<c10::StorageImpl> s; // keeps the storage's memory from reuse while remembered
};

std::mutex g_mu;
std::unordered_map<const c10::TensorImpl *, entry> g_ids;
std::unordered_map<const c10::StorageImpl *, storage_owner> g_storages;
size_t g_sweep_at = 4096;              // entries before the next sweep of dead impls
std::unordered_set<int64_t> g_devices; // packed dtp devices announced by dtp_device_backend
std::atomic<uint64_t> g_next_id{1}, g_next_op{1};

// Forgets impls whose tensors are gone (amortized: at twice the live count),
// so their addresses can be reused by new tensors, which get new ids.
void sweep_locked() {
    if (g_ids.size() + g_storages.size() < g_sweep_at) return;
    for (auto it = g_ids.begin(); it != g_ids.end();) it = it->second.impl.expired() ? g_ids.erase(it) : std::next(it);
    for (auto it = g_storages.begin(); it != g_storages.end();)
        it = it->second.s.expired() ? g_storages.erase(it) : std::next(it);
    g_sweep_at = std::max<size_t>(4096, 2 * (g_ids.size() + g_storages.size()));
}

void announce_device_locked(dtp_device d, const c10::Device &cd) {
    int64_t key = (int64_t)d.type << 16 | d.index;
    if (!g_devices.insert(key).second) return;
    std::string backend = c10::DeviceTypeName(cd.type(), /*lower_case=*/true);
    P.device_backend(d, backend.c_str());
}

// Fires dtp_tensor_created for t; the entry it made.
entry &create_locked(const at::Tensor &t, const dtp_origin &origin, uint64_t storage) {
    sweep_locked();
    uint64_t id = g_next_id++;
    entry &e = g_ids
                   .insert_or_assign(t.unsafeGetTensorImpl(),
                                     entry{id, storage ? storage : id, weak_impl(t.getIntrusivePtr())})
                   .first->second;
    dtp_device dev = device_of(t.device());
    announce_device_locked(dev, t.device());
    std::vector<int64_t> strides;
    const bool strided = t.layout() == c10::kStrided;
    if (strided) {
        strides.assign(t.strides().begin(), t.strides().end());
    } else { // sparse and other layouts: contiguous strides of the shape
        strides.resize((size_t)t.dim());
        int64_t s = 1;
        for (int64_t i = t.dim() - 1; i >= 0; i--) strides[(size_t)i] = s, s *= t.size(i);
    }
    dtp_tensor d = {};
    d.id = id;
    d.storage_id = e.storage;
    d.dtype = dtype_of(t.scalar_type());
    d.ndim = (int32_t)t.dim();
    d.shape = t.sizes().data();
    d.strides = strides.data();
    d.storage_offset = strided ? t.storage_offset() : 0;
    d.device = dev;
    d.nbytes = (uint64_t)t.numel() * (uint64_t)t.element_size();
    d.name = nullptr;
    P.tensor_created(&d, &origin);
    if (!storage && t.has_storage() && t.storage().unsafeGetStorageImpl()) // a new storage: its maker
        g_storages.insert_or_assign(t.storage().unsafeGetStorageImpl(),
                                    storage_owner{id, d.nbytes, e.impl, t.storage().getWeakStorageImpl()});
    return e;
}

// The entry of t when its impl is known and alive, else NULL.
entry *find_locked(const at::Tensor &t) {
    auto it = g_ids.find(t.unsafeGetTensorImpl());
    if (it == g_ids.end()) return nullptr;
    if (it->second.impl.expired()) { // a freed impl's address, now a new tensor's
        g_ids.erase(it);
        return nullptr;
    }
    return &it->second;
}

// ---------------------------------------------------------------- ops

// Schema argument names by op, looked up once per op: keyed by the op's
// name as RecordFunction gives it for a dispatcher op, a pointer into the
// op's schema that the dispatcher keeps for the process's life (one per
// overload). An autograd node's name is the RecordFunction's own copy, and
// it has no schema: none.
std::mutex g_names_mu;
std::unordered_map<const char *, std::vector<std::string>> g_names;

const std::vector<std::string> &arg_names(const at::RecordFunction &fn) {
    static const std::vector<std::string> none;
    if (fn.scope() != at::RecordScope::FUNCTION) return none;
    std::lock_guard<std::mutex> lock(g_names_mu);
    auto it = g_names.find(fn.name());
    if (it != g_names.end()) return it->second;
    std::vector<std::string> names;
    auto opname = fn.operator_name();
    auto handle = opname ? c10::Dispatcher::singleton().findSchema(*opname) : c10::nullopt;
    if (handle)
        for (const auto &a : handle->schema().arguments()) names.push_back(a.name());
    return g_names.emplace(fn.name(), std::move(names)).first->second;
}

// Ops that take operands on two devices by design: copies across devices,
// and indexing with cpu indices.
bool mixed_devices_allowed(const char *name) {
    static const char *const ops[] = {"aten::to",
                                      "aten::_to_copy",
                                      "aten::copy_",
                                      "aten::_copy_from",
                                      "aten::_copy_from_and_resize",
                                      "aten::set_",
                                      "aten::set_data",
                                      "aten::index",
                                      "aten::index_put_",
                                      "aten::index_put",
                                      "aten::_index_put_impl_",
                                      nullptr};
    for (int i = 0; ops[i]; i++)
        if (!std::strcmp(name, ops[i])) return true;
    return false;
}

// An operand, remembered weakly: a strong reference would change the
// use_count the op sees (libtorch optimizes on unique tensors).
struct operand {
    weak_impl impl;   // the tensor, while it lives
    uint64_t id;      // its devtrace id
    dtp_device dev;   // its device at the op's start
    c10::Device cdev; // the same, as libtorch names it
    int64_t dim;      // its number of dimensions at the op's start
    std::string name; // argument name
};

// The operand's tensor, or an undefined one when it is gone.
at::Tensor tensor_of(const operand &o) {
    auto strong = o.impl.lock();
    return strong ? at::Tensor(std::move(strong)) : at::Tensor();
}

struct op_ctx : at::ObserverContext {
    uint64_t seq = 0;
    std::string name;
    std::vector<operand> in;
    bool mismatch = false;
    int uncaught = 0; // std::uncaught_exceptions() at the start
};

thread_local int t_depth; // ops running on this thread, the recorded outer one included

// A tensor first met as an input that shares a known tensor's storage: made
// outside any op from that tensor. When that tensor is gone and this one is
// all of its storage, it is the same tensor under a new impl (torch::tensor's
// make_variable): its id, no new record. Else a view of it. NULL otherwise.
entry *alias_locked(const at::Tensor &t) {
    if (!t.has_storage() || !t.storage().unsafeGetStorageImpl()) return nullptr;
    auto it = g_storages.find(t.storage().unsafeGetStorageImpl());
    if (it == g_storages.end()) return nullptr;
    if (it->second.s.expired()) { // a freed storage's address, now a new one's
        g_storages.erase(it);
        return nullptr;
    }
    const storage_owner o = it->second;
    const uint64_t nbytes = (uint64_t)t.numel() * (uint64_t)t.element_size();
    if (o.impl.expired() && t.layout() == c10::kStrided && t.storage_offset() == 0 && t.is_contiguous() &&
        nbytes == o.nbytes)
        return &g_ids.insert_or_assign(t.unsafeGetTensorImpl(), entry{o.id, o.id, weak_impl(t.getIntrusivePtr())})
                    .first->second;
    dtp_origin view = {DTP_ORIGIN_VIEW, "alias", o.id, 0, nullptr};
    return &create_locked(t, view, o.id);
}

void add_operand(op_ctx &c, const at::Tensor &t, std::string name) {
    if (!t.defined()) return;
    std::lock_guard<std::mutex> lock(g_mu);
    entry *e = find_locked(t);
    if (!e) e = alias_locked(t);
    if (!e) {
        std::string what = "first seen as an input of " + c.name;
        dtp_origin o = {DTP_ORIGIN_OTHER, what.c_str(), 0, 0, nullptr};
        e = &create_locked(t, o, 0);
    }
    c.in.push_back(
        operand{weak_impl(t.getIntrusivePtr()), e->id, device_of(t.device()), t.device(), t.dim(), std::move(name)});
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
    if (t_depth++ > 0 || g_off.load(std::memory_order_relaxed)) return nullptr; // inside an op already recorded
    try {
        auto c = std::make_unique<op_ctx>();
        c->seq = g_next_op++;
        c->name = fn.name();
        c->uncaught = std::uncaught_exceptions();
        const auto &names = arg_names(fn);
        auto inputs = fn.inputs();
        for (size_t i = 0; i < inputs.size(); i++) {
            std::string name = i < names.size() ? names[i] : "arg" + std::to_string(i);
            const c10::IValue &v = inputs[i];
            if (v.isTensor()) {
                add_operand(*c, v.toTensor(), name);
            } else if (v.isTensorList() || v.isList()) {
                auto list = v.toListRef();
                for (size_t k = 0; k < list.size(); k++)
                    if (list[k].isTensor()) add_operand(*c, list[k].toTensor(), name + "[" + std::to_string(k) + "]");
            }
        }
        std::vector<dtp_arg> args;
        for (const auto &o : c->in) args.push_back(dtp_arg{o.name.c_str(), o.id, o.dev});
        dtp_op op = {c->seq, c->name.c_str(), (int32_t)args.size(), args.data()};
        P.op_begin(&op);
        // PyTorch's rule: one device for all, but a 0-dim cpu tensor
        int first = -1, other = -1;
        for (size_t i = 0; i < c->in.size() && other < 0; i++) {
            const operand &o = c->in[i];
            if (o.dev.type == DTP_DEVICE_CPU && o.dim == 0) continue;
            if (first < 0)
                first = (int)i;
            else if (!same_device(o.dev, c->in[(size_t)first].dev))
                other = (int)i;
        }
        // an autograd node (backward scope) takes gradients where they come from
        if (other >= 0 && fn.scope() == at::RecordScope::FUNCTION && !mixed_devices_allowed(c->name.c_str())) {
            std::string msg = "Expected all tensors to be on the same device, but found at least two devices, " +
                              c->in[(size_t)first].cdev.str() + " and " + c->in[(size_t)other].cdev.str() + "!";
            P.device_mismatch(&op, first, other, msg.c_str());
            c->mismatch = true;
        }
        return c;
    } catch (const std::exception &e) {
        fail(e.what());
        return nullptr;
    } catch (...) {
        fail(nullptr);
        return nullptr;
    }
}

// An op's new output: what made it, from the op's inputs. Its id.
uint64_t output_created_locked(const op_ctx &c, const at::Tensor &t) {
    const operand *base = nullptr, *src = nullptr;
    bool one_device = !c.in.empty();
    for (const auto &o : c.in) {
        if (!base && t.has_storage()) {
            at::Tensor in = tensor_of(o);
            if (in.defined() && in.has_storage() && in.is_alias_of(t)) base = &o;
        }
        if (!same_device(o.dev, c.in[0].dev)) one_device = false;
    }
    dtp_device dev = device_of(t.device());
    if (base) {
        dtp_origin o = {DTP_ORIGIN_VIEW, short_name(c.name.c_str()), base->id, 0, nullptr};
        at::Tensor in = tensor_of(*base);
        auto it = in.defined() ? g_ids.find(in.unsafeGetTensorImpl()) : g_ids.end();
        return create_locked(t, o, it != g_ids.end() ? it->second.storage : 0).id;
    } else if (one_device && !same_device(c.in[0].dev, dev)) {
        src = &c.in[0];
        dtp_origin o = {DTP_ORIGIN_TRANSFER, short_name(c.name.c_str()), src->id, 0, nullptr};
        entry &e = create_locked(t, o, 0);
        dtp_transfer x = {src->id,
                          e.id,
                          src->dev,
                          dev,
                          (uint64_t)t.numel() * (uint64_t)t.element_size(),
                          DTP_TRANSFER_TO,
                          short_name(c.name.c_str())};
        P.tensor_transferred(&x);
        return e.id;
    } else if (c.in.empty()) {
        dtp_origin o = {DTP_ORIGIN_FACTORY, short_name(c.name.c_str()), 0, 0, nullptr};
        return create_locked(t, o, 0).id;
    }
    dtp_origin o = {DTP_ORIGIN_OP_OUTPUT, short_name(c.name.c_str()), 0, c.seq, nullptr};
    return create_locked(t, o, 0).id;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *ctx) {
    if (--t_depth > 0 || !ctx) return;
    auto &c = *static_cast<op_ctx *>(ctx);
    try {
        const bool failed = std::uncaught_exceptions() > c.uncaught;
        std::vector<uint64_t> out;
        std::lock_guard<std::mutex> lock(g_mu);
        auto note = [&](const at::Tensor &t) {
            if (!t.defined()) return;
            entry *e = find_locked(t);
            if (e) { // an input returned (in place): a copy_ from another device is a transfer into it
                for (const auto &o : c.in)
                    if (o.id != e->id && o.dim > 0 && !same_device(o.dev, device_of(t.device())) &&
                        mixed_devices_allowed(c.name.c_str())) {
                        dtp_transfer x = {o.id,
                                          e->id,
                                          o.dev,
                                          device_of(t.device()),
                                          (uint64_t)t.numel() * (uint64_t)t.element_size(),
                                          DTP_TRANSFER_COPY,
                                          short_name(c.name.c_str())};
                        P.tensor_transferred(&x);
                        break;
                    }
                out.push_back(e->id);
                return;
            }
            out.push_back(output_created_locked(c, t));
        };
        if (!failed)
            for (const auto &v : fn.outputs()) {
                if (v.isTensor())
                    note(v.toTensor());
                else if (v.isTensorList() || v.isList())
                    for (const auto &item : v.toListRef())
                        if (item.isTensor()) note(item.toTensor());
            }
        // a tensor whose device the op changed in place (set_data): a move
        for (const auto &o : c.in) {
            at::Tensor t = tensor_of(o);
            if (!t.defined()) continue;
            dtp_device now = device_of(t.device());
            if (same_device(now, o.dev)) continue;
            announce_device_locked(now, t.device());
            dtp_transfer x = {o.id,
                              o.id,
                              o.dev,
                              now,
                              (uint64_t)t.numel() * (uint64_t)t.element_size(),
                              DTP_TRANSFER_MOVE,
                              short_name(c.name.c_str())};
            P.tensor_transferred(&x);
        }
        // a failure libtorch did not explain to us: the backend's
        int32_t status = !failed ? 0 : c.mismatch ? DTP_ERROR_DEVICE : DTP_ERROR_BACKEND;
        P.op_end(c.seq, c.name.c_str(), status, (int32_t)out.size(), out.data());
    } catch (const std::exception &e) {
        fail(e.what());
    } catch (...) {
        fail(nullptr);
    }
}

__attribute__((constructor)) void observer_init() {
    if (!resolve_probes()) return; // not under the tracer
    try {
        P.runtime_init(DTP_ABI_VERSION, "libtorch", TORCH_VERSION);
        at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                  .needsInputs(true)
                                  .needsOutputs(true)
                                  .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    } catch (...) {
    }
}

} // namespace
