"""The tensor recorder: PyTorch's events as devtrace probe calls.

What it uses (public extension points, present in torch 1.13 and 2.x):

- a ``TorchFunctionMode`` entered for the whole program: every torch
  function and tensor method the program calls, factories included, with
  its arguments; the op is recorded with its tensor operands, its results
  as tensors made by it (an op output, a view, a copy on another device),
  and a device mismatch it raises is recorded with its operands before the
  error reaches the program;
- ``nn.Module.to/cuda/cpu`` (wrapped): each parameter and buffer that changed
  device is a move; names of parameters, buffers and plain tensor
  attributes (``fc.weight``), also given when a module is first called;
- ``Optimizer.step/zero_grad/load_state_dict`` (wrapped): a step is one op,
  its state has the role of its parameter's optimizer state (``P.role``) and
  is named ``optimizer.state.<param>.<key>`` for people; a mismatch inside a
  step is recorded with the parameter, its gradient and its state;
- ``DataLoader`` iteration, ``torch.load``, ``nn.Parameter``, ``torch.Tensor(...)``,
  the legacy typed constructors (``torch.LongTensor(n)``, ``torch.cuda.FloatTensor(...)``)
  and ``torch.from_numpy`` (wrapped): where tensors come from that no mode sees.

Everything the chain needs is then the tracer's and the viewer's: this file
keeps no chain, no schema and no report. It never raises into the program:
what it cannot record, it leaves unrecorded.
"""

import inspect
import os
import sys
import weakref
from _thread import get_ident

from . import _probes as P
from .source import Emitter as _SourceFacts

# The vocabulary (common/vocab.h, probe.h's numbers), from the extension: never retyped here.
FACTORY, OP_OUTPUT, VIEW, TRANSFER, CHECKPOINT, OTHER = (P.ORIGIN_FACTORY, P.ORIGIN_OP_OUTPUT, P.ORIGIN_VIEW,
                                                         P.ORIGIN_TRANSFER, P.ORIGIN_CHECKPOINT, P.ORIGIN_OTHER)
X_TO, X_COPY, X_READ, X_MOVE = P.TRANSFER_TO, P.TRANSFER_COPY, P.TRANSFER_READ, P.TRANSFER_MOVE
ERR_DEVICE, ERR_ARG = P.ERROR_DEVICE, P.ERROR_ARG

# Where the adapter's ids and op numbers start: far from libdtrt's, which
# may run in the same process (both count from 1 otherwise).
ID_BASE = 1 << 40

# How a torch function is recorded: the call classes of the extension's mode entry, which finishes some itself.
_PASS, _OP, _FACTORY, _TRANSFER, _COPY, _READ, _SIMPROP = (P.CALL_PASS, P.CALL_OP, P.CALL_FACTORY, P.CALL_TRANSFER,
                                                           P.CALL_COPY, P.CALL_READ, P.CALL_SIMPROP)

# Calls that make no tensor and check no device: passed straight through.
_PASS_NAMES = frozenset("""
    dim size numel stride is_contiguous __len__ data_ptr element_size storage_offset is_floating_point
    is_complex get_device __repr__ __format__ __hash__ __reduce_ex__ __setstate__ __getstate__
    _is_view has_names register_hook retain_grad requires_grad_ __iter__ __dir__ __array__ __array_wrap__
    untyped_storage storage _typed_storage is_pinned is_shared share_memory_ nelement ndimension is_set_to
    is_signed is_inference __contains__ __reversed__ __torch_function__ _version backward_hooks
    is_nonzero __index__ __bool__ __float__ __int__ __complex__ __sizeof__ names refine_names align_to rename
    """.split())
# The op families (common/op_families.h), from the extension: one table for the producers and the viewer.
_READ_NAMES = frozenset(P.OPS_READ)
_FACTORY_NAMES = frozenset(P.OPS_FACTORY)
# Indexing's ops and PyTorch's device rule are sim.py's (_INDEXING, counted_operands): one for both.
_TRANSFER_NAMES = frozenset(P.OPS_MOVE)
_VIEW_PROPS = frozenset("T mT H mH real imag".split())
# Reads that say where a tensor is: answered by the simulator on simulated GPUs.
_SIM_NAMES = frozenset("device is_cuda get_device grad data _base numpy __array__ __repr__ pin_memory is_pinned"
                       .split())
_sim = None  # the Simulator, when DEVTRACE_SIM_CUDA asks for simulated GPUs
_CPU_INTEGERS_OK = ()  # sim.py's ops whose integer tensors may stay on the CPU (set with _sim)


def _argnames(func, method=False):
    """The names of func's positional parameters, or None: from its signature,
    else from the first line of a builtin's documentation, which PyTorch
    writes as one ("linear(input, weight, bias=None) -> Tensor")."""
    if method:  # PyTorch's own table of its overridable functions' signatures (a method's first is self)
        try:
            import torch

            fake = torch.overrides.get_testing_overrides().get(func)
            if fake is not None:
                names = _argnames(fake)
                if names:
                    return ("self",) + names[1:]
        except Exception:
            pass
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        doc = (getattr(func, "__doc__", None) or "").lstrip().split("\n", 1)[0]
        name = getattr(func, "__name__", "")
        if not name or not doc.startswith(name + "(") or ")" not in doc:
            return None
        names = []
        for part in doc[len(name) + 1:doc.index(")")].split(","):
            part = part.strip().split("=")[0].strip()
            if not part or part.startswith("*"):
                break
            names.append(part)
        return (("self",) if method else ()) + tuple(names)
    names = []
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return tuple(names)


class _Kind:
    __slots__ = ("kind", "name", "argnames")

    def __init__(self, kind, name, argnames=None):
        self.kind, self.name, self.argnames = kind, name, argnames


_kinds = {}
_tensor_methods = set()


def _classify(func):
    name = getattr(func, "__name__", None) or "?"
    if name in ("__get__", "__set__", "__delete__"):
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        if _sim is not None and name == "__get__" and prop in _SIM_NAMES:
            k = _Kind(_SIMPROP, prop)
        elif _sim is not None and name == "__set__" and prop == "data":
            k = _Kind(_SIMPROP, "data=")  # param.data = t: PyTorch refuses a tensor on another device
        else:
            k = _Kind(_OP, prop) if name == "__get__" and prop in _VIEW_PROPS else _Kind(_PASS, prop)
    elif _sim is not None and name in _SIM_NAMES and func in _tensor_methods:
        k = _Kind(_SIMPROP, name)
    elif name in _READ_NAMES:
        k = _Kind(_READ, name)
    elif name in _PASS_NAMES or name.startswith("_record_function"):  # the profiler's own ops
        k = _Kind(_PASS, name)
    elif name == "copy_":
        k = _Kind(_COPY, name)
    elif name in _TRANSFER_NAMES and func in _tensor_methods:
        k = _Kind(_TRANSFER, name)
    elif name in _FACTORY_NAMES:
        k = _Kind(_FACTORY, name)
    else:
        names = _argnames(func, func in _tensor_methods)
        if names is None and func in _tensor_methods:
            names = ("self", "other")  # PyTorch's names for a method's first two operands
        elif names is None:
            names = ("input",)
        k = _Kind(_OP, name, names)
    try:
        _kinds[func] = k
        if _entry is not None:  # the C entry finishes this function's calls itself from now on
            _entry.classified(func, k.kind, k.name, tuple(k.argnames or ("self",)))
    except TypeError:
        pass
    return k


def _operands(argnames, args, kwargs, Tensor):
    """(name, tensor) of an op's tensor operands, named and ordered as _probes.op_begin
    lists them: positional ones by argnames ("arg<i>" past them), then keyword ones, a
    list's or tuple's tensors as "name[j]"."""
    pos = argnames or ("self",)
    out = []
    for n, v in [(pos[i] if i < len(pos) else "arg%d" % i, v) for i, v in enumerate(args)] + list(kwargs.items()):
        if isinstance(v, Tensor):
            out.append((n, v))
        elif isinstance(v, (list, tuple)):
            out.extend(("%s[%d]" % (n, j), e) for j, e in enumerate(v) if isinstance(e, Tensor))
    return out


def _results(out, Tensor):
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(e for e in out if isinstance(e, Tensor))
    return ()


_LIB_DIRS = ()
_source_facts = _SourceFacts()


_PACKAGE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _is_library(filename):
    """A frame of torch, of another installed package (a trainer: lightning, transformers, accelerate,
    whose locals would lend operands their names), of this adapter, or of Python itself: not the user's,
    as the viewer's vw_py_file_is_library has it."""
    return filename.startswith(_LIB_DIRS) or filename.startswith("<frozen") or \
        any(d in filename for d in _PACKAGE_DIRS)


def _user_frames():
    """The program's own frames, innermost first."""
    f = sys._getframe(1)
    out = []
    while f is not None:
        if not _is_library(f.f_code.co_filename):
            out.append(f)
        f = f.f_back
    return out


class Recorder(P.State):
    """State of the recorder; its mode is the TorchFunctionMode below. Its counters
    (quiet, light, thread) are fields of P.State, which the mode's C entry reads."""

    def __init__(self, torch):
        self.torch = torch
        self.Tensor = torch.Tensor
        self.quiet = 0  # > 0 inside a wrapped call whose inner ops are not recorded
        self.light = 0  # > 0 inside a DataLoader's iteration: factories recorded, other ops not
        # The thread whose calls are recorded: a TorchFunctionMode is per thread, and the one
        # entered at import is the importing (main) thread's; the wrappers of what no mode sees
        # record on that thread too, so that state shared by them (quiet, the op being
        # recorded) is never another thread's.
        self.thread = get_ident()
        self.optimizers = weakref.WeakSet()
        self.mismatches = 0  # device mismatches recorded so far (devtrace_torch.mismatches(): the pytest plugin)
        self.state_sizes = {}  # id(optimizer) -> its count of state entries when last named
        self.mode = None
        self.cpu = torch.device("cpu")
        self.off = False  # the recorder failed inside itself: nothing more is recorded

    def broken(self, exc):
        """The recorder's own failure (its bug, a tensor it cannot read): never the program's. From
        here on every op and wrapper passes straight through (a simulation stops with it), the
        tracer warns once and the trace says why, rather than a trace silently missing what follows."""
        if self.off:
            return
        self.off = True
        self.quiet += 1 << 40  # every wrapper and the mode check quiet: they pass through from now on
        why = "the PyTorch recorder failed (%s: %s); nothing after this is recorded%s" % (
            type(exc).__name__, str(exc)[:200], ", and the simulated GPUs stop" if _sim is not None else "")
        try:
            told = P.producer_failed(why)
        except Exception:
            told = False
        if not told:
            sys.stderr.write("devtrace: warning: %s\n" % why)

    # ------------------------------------------------------------ the mode

    def where(self, t):
        """Where t is: its simulated device, or its real one."""
        return _sim.code(t) or t.device if _sim is not None else t.device

    def record(self, func, k, args, kwargs):
        Tensor = self.Tensor
        kind = k.kind
        sim = _sim
        if kind == _SIMPROP:
            return sim.prop(k, func, args, kwargs)
        if kind == _FACTORY and sim is not None and sim.factory_is_op(k.name, args, kwargs):
            # a factory this version checks as an op (torch.normal(mean, std) on 2.x)
            k, kind = _Kind(_OP, k.name, _argnames(func) or ("mean", "std")), _OP
        if kind == _FACTORY:
            out, code = sim.factory(func, args, kwargs) if sim is not None else (func(*args, **kwargs), 0)
            try:
                for t in _results(out, Tensor):
                    P.output(t, FACTORY, k.name, 0, 0, code)
            except Exception as exc:
                self.broken(exc)
            return out
        if kind == _READ:
            if sim is not None and k.name == "numpy":
                return sim.prop(k, func, args, kwargs)
            out = func(*args, **kwargs)
            try:
                if args and isinstance(args[0], Tensor) and (sim.code(args[0]) if sim is not None
                                                             else args[0].device.type != "cpu"):
                    P.transfer(args[0], None, X_READ, k.name)
            except Exception as exc:
                self.broken(exc)
            return out
        try:
            seq = P.op_begin(k.name, k.argnames or ("self",), args, kwargs)
        except Exception as exc:
            self.broken(exc)
            return func(*args, **kwargs)
        src = args[0] if args and isinstance(args[0], Tensor) else None
        code = 0  # the simulated device of new results
        self.quiet += 1  # what the op itself calls is the op's
        try:
            if sim is None:
                out = func(*args, **kwargs)
            elif kind == _TRANSFER and src is not None:
                out, code = sim.transfer(k.name, func, src, args[1:], kwargs)
            elif kind == _OP:
                code = sim.op_device(k, kwargs, _operands(k.argnames, args, kwargs, Tensor))
                out = sim.run_op(func, args, kwargs)
            else:
                out = func(*args, **kwargs)
        except BaseException as e:
            self.quiet -= 1
            self.failed(seq, k, e, args, kwargs)
            raise
        self.quiet -= 1
        try:  # the op ran: a failure from here on is the recorder's, and the program gets its result
            if kind == _OP:
                if code and k.name in _CPU_INTEGERS_OK:  # lengths and batch sizes stay on the CPU
                    for t in _results(out, Tensor):
                        if not t.is_floating_point():
                            P.output(t, OP_OUTPUT, k.name, 0, seq, 0)
                return P.op_done(seq, k.name, out, src, code)
            results = _results(out, Tensor)
            ids = []
            where = self.where
            for t in results:
                if kind == _TRANSFER and src is not None and t is not src:
                    moved = (code != sim.code(src)) if sim is not None else t.device != src.device
                    tid, new = P.output(t, TRANSFER if moved else OP_OUTPUT, k.name, P.tensor_id(src), seq, code)
                    if new and moved:
                        P.transfer(src, t, X_TO, _via(k.name, kwargs))
                elif src is not None and t is not src and t._is_view():
                    base = t._base
                    # a view of the tensor it was taken from (a module's attribute "self.mask[:T]"), else of the base
                    tid, new = P.output(t, VIEW, k.name, P.tensor_id(src) or P.tensor_id(base if base is not None else src),
                                        seq, code)
                else:
                    tid, new = P.output(t, OP_OUTPUT, k.name, 0, seq, code)
                ids.append(tid)
            if kind == _COPY and src is not None and len(args) > 1 and isinstance(args[1], Tensor):
                if where(args[1]) != where(src):
                    P.transfer(args[1], src, X_COPY, "copy_")
            P.op_end(seq, k.name, 0, tuple(ids))
            return out
        except Exception as exc:
            self.broken(exc)
            return out

    def failed(self, seq, k, e, args, kwargs):
        """Op seq raised e: a device mismatch is recorded with its operands."""
        name = k.name
        try:
            parsed = P.parse_mismatch(str(e)) if isinstance(e, RuntimeError) else None
            if parsed is None and isinstance(e, RuntimeError) and k.kind == _OP:
                parsed = self.mixed_devices(k, args, kwargs)
            if parsed is None:
                P.op_end(seq, name, ERR_ARG if isinstance(e, Exception) else 0, ())
                return
            self.name_operands([t for _, t in _operands(k.argnames, args, kwargs, self.Tensor)])
            self.mismatch(seq, name, parsed, str(e))
        except Exception as exc:  # the program's error goes on to the program as it is
            self.broken(exc)

    def mixed_devices(self, k, args, kwargs):
        """(odd device, peers' device, argument) when an op's tensor operands (in nested lists and
        tuples too) sit on more than one device as PyTorch's checks count them (sim.counted_operands,
        the simulation's rule too: a 0-dim cpu tensor is a scalar where TensorIterator takes one,
        indexing takes cpu indices and a set copies, sequence ops' cpu lengths, a kernel's own check
        takes none of these); None otherwise. An op that raises on such operands failed on their devices
        whatever its message says (a text the parser has not learnt). The odd device is the one fewer
        operands are on; on a tie, PyTorch's: the first operand's device is the common one."""
        from .sim import counted_operands, is_strict

        Tensor, sim, name = self.Tensor, _sim, k.name
        ops = []  # (argument name, tensor), in the order the op lists them

        def walk(n, v, depth):
            if isinstance(v, Tensor):
                ops.append((n, v))
            elif isinstance(v, (list, tuple)) and depth < 4:
                for j, e in enumerate(v):
                    walk("%s[%d]" % (n, j), e, depth + 1)

        def device_of(v):
            code = sim.code(v) if sim is not None else 0
            return sim.name(code) if code else str(v.device)

        pos = k.argnames or ("self",)
        for i, v in enumerate(args):
            walk(pos[i] if i < len(pos) else "arg%d" % i, v, 0)
        for n, v in kwargs.items():
            walk(n, v, 0)
        _, keep, _ = counted_operands(name, ops, device_of, is_strict(name))
        found = [(n, d) for _, n, d in keep if d != "cpu scalars"]
        devs = [d for _, d in found]
        kinds = sorted(set(devs), key=devs.index)
        if len(kinds) < 2:
            return None
        common = kinds[0]
        odd = min(kinds[1:], key=devs.count)
        if devs.count(odd) > devs.count(common):
            odd, common = common, odd
        peers = max((d for d in kinds if d != odd), key=devs.count)
        arg = next(n for n, d in found if d == odd)
        return odd, peers, arg

    def mismatch(self, seq, name, parsed, message):
        odd, peers, arg = parsed
        ops = P.op_args(seq)

        def on(dev, want):
            return dev == want or (":" not in want and dev.split(":")[0] == want)

        other = next((i for i, (n, d) in enumerate(ops) if arg and n == arg and on(d, odd)), -1)
        if other < 0:
            other = next((i for i, (n, d) in enumerate(ops) if on(d, odd)), -1)
        first = next((i for i, (n, d) in enumerate(ops) if on(d, peers) and i != other), -1)
        P.mismatch(seq, name, first, other, message.split("\n")[0])
        self.mismatches += 1
        _source_facts.emit()  # the program's files' facts for the report (source.py), each once; never raises
        P.op_end(seq, name, ERR_DEVICE, ())

    # ------------------------------------------------------------ names

    def name_module(self, module, prefix=""):
        """Names the parameters, buffers and plain tensor attributes of module."""
        for qual, t, kind in _module_tensor_kinds(module, self.Tensor):
            P.named(t, prefix + qual)
            if kind == _BUFFER:  # registered: it moves with its module (a fact, the role)
                P.role(t, P.ROLE_MODULE_BUFFER, None, qual)
        for opt in list(self.optimizers):
            self.name_optimizer_state(opt)

    def name_optimizer_state(self, opt):
        Tensor = self.Tensor
        index = 0
        for group in opt.param_groups:
            for p in group["params"]:
                pname = _param_name(p) or str(index)
                for key, v in opt.state.get(p, {}).items():
                    if isinstance(v, Tensor):
                        if not P.tensor_id(v):
                            P.created(v, FACTORY, "%s.step state" % type(opt).__name__, 0, 0)
                        P.role(v, P.ROLE_OPTIMIZER_STATE, p, str(key))  # the fact; the name is for people
                        _set_name(v, "optimizer.state.%s.%s" % (pname, key))
                index += 1

    def name_operands(self, tensors):
        """Gives the operands of a failed op the names the program knows them by
        (a parameter its module's path; others the program's variables, innermost
        frame first, else the module attribute that holds them); a view's base
        too (the report moves a view's base, once)."""
        want = {id(t): t for t in tensors}
        for t in list(want.values()):
            base = getattr(t, "_base", None)
            if isinstance(base, self.Tensor):
                want.setdefault(id(base), base)
        found = {}
        frames = _user_frames()
        Module, Parameter = self.torch.nn.Module, self.torch.nn.Parameter
        # A parameter goes by its module's path ("ema_model.0.weight": the module is what to move), found
        # from the outermost scope in; any other tensor by the program's variable, innermost frame first,
        # else by the module attribute that holds it.
        scopes = [f.f_globals for f in frames[-1:]] + [f.f_locals for f in reversed(frames)]
        held = {}
        for scope in scopes:
            for var, v in list(scope.items()):
                if isinstance(v, Module) and not var.startswith("_"):
                    for qual, t, kind in _module_tensor_kinds(v, self.Tensor):
                        if id(t) not in want:
                            continue
                        if kind == _BUFFER:  # registered: it moves with its module (a fact, the role)
                            P.role(t, P.ROLE_MODULE_BUFFER, None, qual)
                        if id(t) not in held:
                            held[id(t)] = var + "." + qual
        for tid, name in held.items():
            if isinstance(want[tid], Parameter):
                found[tid] = name
        outer = {}  # the names callers hold it by: the report's fix may be in their function
        for f in frames:
            for var, v in list(f.f_locals.items()):
                if id(v) in want and not var.startswith("_") and var != "self":
                    if id(v) not in found:
                        found[id(v)] = var
                    elif var != found[id(v)] and var not in outer.setdefault(id(v), []):
                        outer[id(v)].append(var)
        for tid, name in held.items():
            found.setdefault(tid, name)
        for tid, name in found.items():
            for alias in reversed(outer.get(tid, ())):  # outermost first; the innermost name is said last
                _set_name(want[tid], alias)
            _set_name(want[tid], name)
        # the other recorded tensors the program holds in these frames ("imgs" of the loop, which the failing
        # operand was made from): the report names the steps of its chains, and the line of its fix, by them
        # every name a frame holds it by ("targets" in forward, "y" where the loop unpacked the batch): a fix
        # at a statement that binds one of them can move the others that statement binds
        Tensor, more = self.Tensor, set()
        for f in frames:
            for var, v in list(f.f_locals.items()):
                if (isinstance(v, Tensor) and id(v) not in want and (id(v), var) not in more and len(more) < 256
                        and not var.startswith("_") and var != "self" and P.tensor_id(v)):
                    more.add((id(v), var))
                    _set_name(v, var)

    # ------------------------------------------------------------ wrapped calls

    def quietly(self, fn, *args, **kwargs):
        if get_ident() != self.thread:
            return fn(*args, **kwargs)
        self.quiet += 1
        popped = _pop_ours(self.mode)
        try:
            return fn(*args, **kwargs)
        finally:
            if popped:
                if _direct is not None:
                    _direct.set(self.mode)
                else:
                    _push_mode(self.mode)
            self.quiet -= 1


def _loud(rec, fn, failed):
    """fn, called from inside a wrapped call that runs quietly (an optimizer's step calling
    its closure: LBFGS's forward and backward), recorded as the program's own work; failed
    (a list) gets True when fn raises."""
    def call(*args, **kwargs):
        if not rec.quiet or get_ident() != rec.thread or rec.mode is None:
            try:
                return fn(*args, **kwargs)
            except BaseException:
                failed.append(True)
                raise
        saved, rec.quiet = rec.quiet, 0
        if _direct is not None:
            pushed = _direct.get() is None
            if pushed:
                _direct.set(rec.mode)
        else:
            try:
                pushed = _push_mode is not None and _get_current_function_mode() is not rec.mode
                if pushed:
                    _push_mode(rec.mode)
            except Exception:
                pushed = False
        try:
            return fn(*args, **kwargs)
        except BaseException:
            failed.append(True)
            raise
        finally:
            if pushed:
                _pop_ours(rec.mode)
            rec.quiet = saved

    return call


def _set_name(t, name):
    P.named(t, name)  # a name t already has is not said again


def _param_name(p):
    return P.name_of(p)


_PARAMETER, _BUFFER, _ATTRIBUTE = range(3)  # how a module holds a tensor


def _module_tensor_kinds(module, Tensor):
    """(path, tensor, how it is held) of each parameter, buffer and plain tensor attribute of module and its
    submodules, in that order per module."""
    for mname, m in module.named_modules():
        base = mname + "." if mname else ""
        for n, p in list(m._parameters.items()):
            if p is not None:
                yield base + n, p, _PARAMETER
        for n, b in list(m._buffers.items()):
            if b is not None:
                yield base + n, b, _BUFFER
        for n, v in list(vars(m).items()):
            if isinstance(v, Tensor) and not n.startswith("_"):
                yield base + n, v, _ATTRIBUTE


def _module_tensors(module, Tensor):
    for q, t, _ in _module_tensor_kinds(module, Tensor):
        yield q, t


def _via(name, kwargs):
    return name + "(non_blocking)" if kwargs.get("non_blocking") else name


# Popping our mode while a wrapped call runs spares its inner calls the
# mode's cost; torch keeps the helpers private, so they are optional.
try:
    from torch.overrides import _get_current_function_mode, _pop_mode, _push_mode
except ImportError:  # pragma: no cover - another torch
    _get_current_function_mode = _pop_mode = _push_mode = None


def _pop_ours(mode):
    if _direct is not None:  # torch 1.x, the mode set directly: off while the wrapped call runs
        if _direct.get() is mode:
            _direct.set(None)
            return True
        return False
    if _pop_mode is None or mode is None:
        return False
    try:
        if _get_current_function_mode() is mode:
            _pop_mode()
            return True
    except Exception:
        pass
    return False


# ---------------------------------------------------------------- tracebacks

_ADAPTER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _strip(tb, mode_file):
    """The traceback without the adapter's frames and the frame of torch's
    mode dispatch that called them: an uncaught error prints as untraced."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    # torch's dispatch to modes (overrides.py) right before the adapter's frames goes too
    drop = [t.tb_frame.f_code.co_filename.startswith(_ADAPTER_DIR) for t in entries]
    for i in range(len(entries) - 2, -1, -1):
        if drop[i + 1] and entries[i].tb_frame.f_code.co_filename == mode_file:
            drop[i] = True
    keep = [t for t, d in zip(entries, drop) if not d]
    if not keep:
        return entries[0] if entries else None
    for a, b in zip(keep, keep[1:]):
        a.tb_next = b
    keep[-1].tb_next = None
    return keep[0]


def _install_excepthooks(torch):
    import threading

    mode_file = getattr(sys.modules.get("torch.overrides"), "__file__", "") or ""

    def clean(value, tb):
        seen = set()
        e = value
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            if e.__traceback__ is not None:
                e.__traceback__ = _strip(e.__traceback__, mode_file)
            e = e.__cause__ or e.__context__
        return _strip(tb, mode_file) if tb is not None else tb

    old_hook = sys.excepthook

    def excepthook(etype, value, tb):
        try:
            tb = clean(value, tb)
        except Exception:
            pass
        return old_hook(etype, value, tb)

    sys.excepthook = excepthook
    old_thread_hook = getattr(threading, "excepthook", None)
    if old_thread_hook is not None:
        def thread_excepthook(args):
            try:
                clean(args.exc_value, None)
            except Exception:
                pass
            return old_thread_hook(args)

        threading.excepthook = thread_excepthook


_rec = None
_direct = None
_entry = None  # the mode's C entry (a P.Mode): _classify tells it how each function is recorded


class _Direct(P.Mode):
    """torch 1.x runs a mode pushed the public way through a Python helper and
    a context manager on every call (~2 us, most of the recorder's cost on
    small ops). Set as the one C-level mode, this object gets the calls
    straight into its C entry (P.Mode's __torch_function__, which sets the
    mode off while the call runs and on again after it), and leaves them to
    torch's own stack while the program uses a mode of its own (``with
    SomeMode():``); it is back when that one ends."""

    def __init__(self, torch, rec, slow, raised):
        P.Mode.__init__(self, rec, slow, raised, torch._C._set_torch_function_mode)
        self._set = torch._C._set_torch_function_mode
        self.active = False  # set as the C-level mode (torch 1.x has no getter)

    def set(self, mode):
        self.active = mode is self
        self._set(mode)

    def get(self):
        return self if self.active else None


def _enter_direct(torch, rec, slow, raised):
    global _direct, _entry
    ov = torch.overrides
    if not hasattr(ov, "_TorchFunctionStackMode") or not hasattr(ov, "_push_mode"):
        return False  # torch 2.x dispatches its mode stack in C++: the public way is the fast one
    if torch._C._is_torch_function_mode_enabled():
        return False  # the program entered a mode already: ours goes on top of it, the public way
    direct = _Direct(torch, rec, slow, raised)
    old_pop, old_push = ov._pop_mode, ov._push_mode

    def _push_mode(mode):
        if ov._len_torch_function_stack() == 0:
            direct.active = False  # torch's stack takes the C-level slot
        return old_push(mode)

    def _pop_mode():
        out = old_pop()
        if ov._len_torch_function_stack() == 0:
            direct.set(direct)
        return out

    # Python-level torch functions (torch.nn.functional's, init's) reach the
    # mode through handle_torch_function, which calls torch's stack helper
    # by name, inside _no_torch_function_mode: both hand over to this mode
    # while it is the one set.
    stack_cls, C = ov._TorchFunctionStackMode, torch._C

    class _StackMode(stack_cls):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if direct.active and ov._len_torch_function_stack() == 0:
                return direct.handle(func, types, args, kwargs)
            return stack_cls.__torch_function__(self, func, types, args, kwargs)

    import contextlib

    @contextlib.contextmanager
    def _no_torch_function_mode():
        C._set_torch_function_mode(None)
        try:
            yield
        finally:
            if ov._len_torch_function_stack() > 0:
                C._set_torch_function_mode(ov._TorchFunctionStackMode())
            elif direct.active:
                C._set_torch_function_mode(direct)

    # handle_torch_function itself, as torch's modules imported it by name (torch.nn.functional's
    # relu and cross_entropy, Tensor.backward): while this mode is the one set, a call goes straight
    # to its entry, as torch's own would after ~5 us of stack helpers (the context manager and stack
    # mode above); otherwise, to torch's own.
    orig_handle = ov.handle_torch_function
    enabled, stack_len = C._is_torch_function_mode_enabled, ov._len_torch_function_stack

    def handle_torch_function(public_api, relevant_args, *args, **kwargs):
        if direct.active and stack_len() == 0 and enabled():
            return direct.__torch_function__(public_api, (), args, kwargs)
        return orig_handle(public_api, relevant_args, *args, **kwargs)

    handle_torch_function.__doc__, handle_torch_function.__wrapped__ = orig_handle.__doc__, orig_handle
    for name, mod in list(sys.modules.items()):
        if (name == "torch" or name.startswith("torch.")) and getattr(mod, "handle_torch_function", None) is orig_handle:
            try:
                mod.handle_torch_function = handle_torch_function
            except Exception:
                pass
    ov._push_mode, ov._pop_mode = _push_mode, _pop_mode
    ov._TorchFunctionStackMode, ov._no_torch_function_mode = _StackMode, _no_torch_function_mode
    _direct = _entry = direct
    rec.mode = direct
    direct.set(direct)
    return True


def _enter_functions(torch, mode, entry):
    """torch 2.x: functions written in Python (torch.nn.functional's layer_norm and cross_entropy,
    Tensor.backward, split and __rsub__) reach a mode through torch.overrides.handle_torch_function,
    which finds their tensor subclasses (_get_overloaded_args), takes the mode off the stack in a
    generator context manager and calls the mode's __torch_function__: ~20,000 instructions a call
    before the recorder runs, more than the op's own recording. torch's modules that imported it by
    name get a version that does what torch's does when this mode is the top of the stack (takes it
    off for the call, puts it back after), straight into the C entry; otherwise (another mode on top,
    the stack empty, another thread, torch functions disabled) torch's own. The types torch would pass
    are not computed: the entry never reads them (torch passes them on to what a mode returns
    NotImplemented for, which this version does as torch's does). Dynamo never runs it: it answers
    has_torch_function from the tensors' types alone, so a compiled function's F.relu never reaches it."""
    ov, C = torch.overrides, torch._C
    try:
        stack_len, stack_at = C._len_torch_function_stack, C._get_function_stack_at
        pop, push, enabled = C._pop_torch_function_stack, C._push_on_torch_function_stack, \
            C._is_torch_function_mode_enabled
        orig, overloaded_of = ov.handle_torch_function, ov._get_overloaded_args
    except AttributeError:
        return
    handle = entry.handle

    def not_handled(public_api, relevant_args, args, kwargs):
        # the mode returned NotImplemented: the rest of torch's handle_torch_function, as it is there
        overloaded = overloaded_of(relevant_args)
        types = tuple(map(type, overloaded))
        for arg in overloaded:
            fn = arg.__torch_function__
            if hasattr(fn, "__self__") and fn.__self__ is arg and fn is not C._disabled_torch_function_impl:
                import warnings

                warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and will be an "
                              "error in future, please define it as a classmethod.", DeprecationWarning, stacklevel=3)
            result = fn(public_api, types, args, kwargs)
            if result is not NotImplemented:
                return result
        msg = "no implementation found for '%s.%s' on types that implement __torch_function__: %s" % (
            public_api.__module__, public_api.__name__, [type(arg) for arg in overloaded])
        if enabled():
            msg += " nor in mode %s" % (ov._get_current_function_mode(),)
        raise TypeError(msg)

    def handle_torch_function(public_api, relevant_args, *args, **kwargs):
        n = stack_len()
        if n and stack_at(n - 1) is mode and enabled():
            pop()
            try:
                result = handle(public_api, (), args, kwargs)
            finally:
                push(mode)
            if result is not NotImplemented:
                return result
            return not_handled(public_api, relevant_args, args, kwargs)
        return orig(public_api, relevant_args, *args, **kwargs)

    handle_torch_function.__doc__, handle_torch_function.__wrapped__ = orig.__doc__, orig
    handle_torch_function.__module__, handle_torch_function._devtrace = orig.__module__, True
    for name, mod in list(sys.modules.items()):  # torch.overrides' own is left as it is: the public one
        if name.startswith("torch.") and name != "torch.overrides" and \
                getattr(mod, "handle_torch_function", None) is orig:
            try:
                mod.handle_torch_function = handle_torch_function
            except Exception:
                pass


def install(torch):
    """Enters the recorder's mode for the whole program and wraps what no mode sees."""
    global _rec, _LIB_DIRS, _entry
    from torch.overrides import TorchFunctionMode

    dtypes = {torch.float32: 0, torch.int64: 1, torch.bool: 2, torch.float64: 3, torch.float16: 4,
              torch.bfloat16: 5, torch.int32: 6, torch.uint8: 7}  # probe.h's; any other is "other" (8)
    if not P.init(torch.__version__, _tensor_base(torch), dtypes, ID_BASE):
        return False  # no tracer in this process
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    _LIB_DIRS = (torch_dir, here, stdlib, os.path.dirname(os.path.dirname(here)) + os.sep + "sitecustomize.py")
    for name in dir(torch.Tensor):
        try:
            _tensor_methods.add(getattr(torch.Tensor, name))
        except Exception:
            pass
    rec = _rec = Recorder(torch)
    _start_simulator(torch)

    def slow(func, types, args=(), kwargs=None):
        """What the C entry does not finish itself: a function's first call
        (classified here), and what is not a plain op or a pass-through."""
        if kwargs is None:
            kwargs = {}
        k = _kinds.get(func)
        if k is None:
            k = _classify(func)
        if k.kind == _PASS or rec.quiet or (rec.light and k.kind != _FACTORY) or get_ident() != rec.thread:
            return func(*args, **kwargs)
        return rec.record(func, k, args, kwargs)

    def raised(seq, func, e, args, kwargs):
        """Op seq, recorded by the C entry, raised e: a device mismatch is recorded."""
        k = _kinds.get(func) or _classify(func)
        rec.failed(seq, k, e, args, kwargs if kwargs is not None else {})

    _wrap_modules(torch, rec)
    _wrap_optimizers(torch, rec)
    try:
        _wrap_data_parallel(torch, rec)
    except Exception:
        pass
    try:
        _wrap_distributed(torch, rec)
    except Exception:
        pass
    _wrap_sources(torch, rec)
    _wrap_indexing(torch, rec)
    _install_excepthooks(torch)
    if not _enter_direct(torch, rec, slow, raised) and hasattr(torch.overrides, "_TorchFunctionStackMode"):
        # torch 1.x whose program entered a mode of its own first: ours on top of it, the public way
        entry = _entry = P.Mode(rec, slow, raised)

        class DevtraceMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return entry.handle(func, types, args, kwargs)

        rec.mode = DevtraceMode()
        rec.mode.__enter__()
    elif _direct is None:
        class DevtraceMode(P.Mode, TorchFunctionMode):
            """torch 2.x's mode, entered the public way: a TorchFunctionMode whose __torch_function__ is
            the C entry's own method (P.Mode's), bound to the mode as torch requires of a mode's
            __torch_function__; torch takes the mode off its stack while it runs. (A Python method that
            called the C entry cost a Python frame and a bound method on every call torch dispatches.)"""

        entry = _entry = DevtraceMode(rec, slow, raised)
        rec.mode = entry
        rec.mode.__enter__()
        _enter_functions(torch, rec.mode, entry)
    for func, k in list(_kinds.items()):  # any classified before the entry was made
        _entry.classified(func, k.kind, k.name, tuple(k.argnames or ("self",)))
    return True


def _tensor_base(torch):
    """The C type every tensor derives from: torch._C.TensorBase (2.2 on), _TensorBase before."""
    return getattr(torch._C, "TensorBase", None) or torch._C._TensorBase


def _start_simulator(torch):
    """DEVTRACE_SIM_CUDA=N: N simulated GPUs, when this torch has none."""
    global _sim
    want = os.environ.get("DEVTRACE_SIM_CUDA", "")
    if not want or want == "0":
        return
    try:
        n = int(want)
    except ValueError:
        n = -1
    if not 1 <= n <= 16:
        _warn_once("DEVTRACE_SIM_CUDA=%s: give a number of GPUs from 1 to 16; no GPU is simulated" % want)
        return
    if torch.cuda.is_available():
        _warn_once("DEVTRACE_SIM_CUDA=%s: this PyTorch has real GPUs, which are used; none is simulated" % want)
        return
    from .sim import _CPU_INTEGERS_OK as cpu_ok
    from .sim import Simulator

    global _CPU_INTEGERS_OK
    _CPU_INTEGERS_OK = cpu_ok
    _sim = Simulator(torch, n, P)
    if _rec is not None:
        _sim.quietly = _rec.quietly  # the simulation's own work is not the program's
    P.simulate(True)
    _sim.install_cuda_api()


def _warn_once(msg):
    if os.environ.get("DEVTRACE_QUIET", "0") in ("", "0"):
        sys.stderr.write("devtrace: %s\n" % msg)


def _wrap(owner, name, make):
    old = getattr(owner, name, None)
    if old is None or getattr(old, "_devtrace", False):
        return
    new = make(old)
    new._devtrace = True
    new.__wrapped__ = old
    try:
        new.__name__, new.__qualname__, new.__doc__ = old.__name__, old.__qualname__, old.__doc__
    except Exception:
        pass
    setattr(owner, name, new)


def _wrap_modules(torch, rec):
    Module, Tensor = torch.nn.Module, torch.Tensor

    def mover(old):
        def moved(self, *args, **kwargs):
            if rec.quiet:
                return old(self, *args, **kwargs)
            where = rec.where
            try:
                rec.name_module(self)  # named before the move, so the move is the named tensor's
            except Exception:
                pass
            before = [(q, t, where(t), str(_sim.device(_sim.code(t)) if _sim is not None else t.device))
                      for q, t in _module_tensors(self, Tensor)]
            if _sim is not None:
                out = rec.quietly(_sim.module_to, old, self, args, kwargs)
            else:
                out = rec.quietly(old, self, *args, **kwargs)
            try:
                after = dict(_module_tensors(self, Tensor))
                for q, t, dev, devname in before:
                    now = after.get(q)
                    if now is None:
                        continue
                    if now is t and where(t) != dev:
                        P.transfer(t, None, X_MOVE, "%s.%s" % (type(self).__name__, old.__name__), devname)
                    elif now is not t and where(now) != dev:
                        P.output(now, TRANSFER, old.__name__, P.tensor_id(t), 0)
                        P.transfer(t, now, X_TO, "%s.%s" % (type(self).__name__, old.__name__))
                rec.name_module(self)
            except Exception:
                pass
            return out

        return moved

    # (No global forward hook names modules at their first call: one would
    # put every module call of the program on torch's slow path with hooks.
    # Modules are named when moved, and the operands of a failed op by the
    # program's own variables.)
    for name in ("to", "cuda", "cpu", "to_empty"):
        _wrap(Module, name, mover)


def _wrap_data_parallel(torch, rec):
    """nn.DataParallel's own device check ("module must have its parameters and buffers on
    device cuda:0 (device_ids[0]) but found one of them on device: cpu"), which no tensor op
    raises: recorded as a mismatch of the module's first parameter or buffer elsewhere and the
    inputs, which the program put on device_ids[0]."""
    DP, Tensor = torch.nn.DataParallel, torch.Tensor

    def wrap(old):
        def forward(self, *inputs, **kwargs):
            try:
                return old(self, *inputs, **kwargs)
            except RuntimeError as e:
                if not rec.quiet and "module must have its parameters and buffers on device" in str(e):
                    try:
                        _data_parallel_failed(torch, rec, self, inputs, kwargs, e)
                    except Exception:
                        pass
                raise

        return forward

    _wrap(DP, "forward", wrap)


def _data_parallel_failed(torch, rec, dp, inputs, kwargs, e):
    Tensor = torch.Tensor
    want = dp.src_device_obj
    where = rec.where
    odd = None
    for q, t in list(dp.module.named_parameters()) + list(dp.module.named_buffers()):
        if t.device != want:
            odd = (q, t)
            break
    if odd is None:
        return
    args = [t for t in list(inputs) + list(kwargs.values()) if isinstance(t, Tensor)]
    names = ["input%d" % i if i else "input" for i in range(len(args))]
    dev = where(odd[1])
    if not any(where(t) != dev for t in args):
        return  # nothing on the device the module was meant for: no pair to show
    seq = P.op_begin("DataParallel", tuple(["module." + odd[0]] + names), tuple([odd[1]] + args), None)
    rec.name_operands([odd[1]] + args)
    odd_name = str(odd[1].device)
    rec.mismatch(seq, "DataParallel", (odd_name, str(want), "module." + odd[0]), str(e))


def _wrap_distributed(torch, rec):
    """What no mode sees of torch.distributed and torch.multiprocessing:

    - the ranks torch.multiprocessing.spawn starts have no launcher's RANK: each is started with
      DEVTRACE_RANK=<its index>, which the tracer reads first, so its trace is named and headed by its
      rank (the program's own environment is left as it was);
    - a collective of an NCCL group given a tensor on the cpu ("Tensors must be CUDA and dense", NCCL's own
      or the simulation's): recorded as a mismatch of that tensor and the group's device (the current
      GPU, a 0-element tensor named "nccl.device" stands for it);
    - DistributedDataParallel's ValueError for a module on the cpu given device_ids (the model wrapped
      before it was moved): recorded as a mismatch of the module's first parameter on the cpu and
      device_ids[0] (a 0-element tensor named "device_ids[0]" on that device)."""
    import multiprocessing.process

    spawn = sys.modules.get("torch.multiprocessing.spawn")  # (torch.multiprocessing.spawn is its function)
    spawn_wrap = getattr(spawn, "_wrap", None)

    def starter(old):
        def start(self):
            target, args = getattr(self, "_target", None), getattr(self, "_args", ())
            if spawn_wrap is None or target is not spawn_wrap or len(args) < 2 or not isinstance(args[1], int):
                return old(self)
            _helpers_first(self)
            had = os.environ.get("DEVTRACE_RANK")
            os.environ["DEVTRACE_RANK"] = str(args[1])
            try:
                return old(self)
            finally:
                if had is None:
                    os.environ.pop("DEVTRACE_RANK", None)
                else:
                    os.environ["DEVTRACE_RANK"] = had

        return start

    _wrap(multiprocessing.process.BaseProcess, "start", starter)
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return
    from torch.distributed import distributed_c10d as c10d
    from .sim import _COLLECTIVES, _tensor_args

    Tensor = torch.Tensor

    def collective(old):
        sig = inspect.signature(old)

        def call(*args, **kwargs):
            try:
                return old(*args, **kwargs)
            except (RuntimeError, ValueError) as e:  # NCCL's check raises ValueError on 2.x
                if not rec.quiet and not rec.off:
                    try:
                        bound = sig.bind_partial(*args, **kwargs).arguments
                        if dist.get_backend(bound.get("group")) == "nccl":
                            _collective_failed(torch, rec, old.__name__, list(_tensor_args(bound, Tensor)), e)
                    except Exception:
                        pass
                raise

        return call

    for mod in (dist, c10d):
        for name in _COLLECTIVES:
            _wrap(mod, name, collective)

    DDP = torch.nn.parallel.DistributedDataParallel

    def init(old):
        def __init__(self, module, device_ids=None, *args, **kwargs):
            try:
                return old(self, module, device_ids, *args, **kwargs)
            except ValueError as e:
                if device_ids and not rec.quiet and not rec.off:
                    try:
                        _ddp_failed(torch, rec, module, device_ids[0], e)
                    except Exception:
                        pass
                raise

        return __init__

    _wrap(DDP, "__init__", init)


def _helpers_first(process):
    """Starts, before a rank's DEVTRACE_RANK is set, the helper processes that multiprocessing would start
    inside this rank's start() and that would inherit the variable: the resource tracker (the spawn and
    forkserver methods start it on their first process) and the fork server. They run no code of the
    program's and must not write a trace headed by the rank (with torch 2.x's spawn, which makes no queue
    before its first process, the tracker was first started there and wrote a second rank-0 trace). Both
    calls are the ones multiprocessing makes in start() itself, a moment later: the program's result is
    the same; a failure is left to start() to meet and raise, as it would without the recorder."""
    method = getattr(process, "_start_method", None)
    if method not in ("spawn", "forkserver"):
        return
    try:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        if method == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()
    except Exception:
        pass


def _device_marker(torch, rec, index, name):
    """A 0-element tensor on cuda:index that stands for a device a check compared with (no tensor of the
    program's was there), recorded as made there and named name."""
    if _sim is not None:
        t = rec.quietly(torch.empty, 0)
        P.output(t, FACTORY, name, 0, 0, _sim.code_of(index))
    else:
        t = rec.quietly(torch.empty, 0, device=torch.device("cuda", index))
        P.output(t, FACTORY, name, 0, 0)
    _set_name(t, name)
    return t


def _collective_failed(torch, rec, name, operands, e):
    """A collective of an NCCL group refused an operand on the cpu: that operand against the group's device."""
    where = rec.where
    odd = next(((n, t) for n, t in operands if where(t) == rec.cpu or where(t) == 0), None)
    if odd is None:
        return
    peer = _device_marker(torch, rec, torch.cuda.current_device(), "nccl.device")
    seq = P.op_begin(name, (odd[0], "device"), (odd[1], peer), None)
    rec.name_operands([odd[1]])
    rec.mismatch(seq, name, ("cpu", str(peer.device), odd[0]), str(e))


def _ddp_failed(torch, rec, module, want, e):
    """DistributedDataParallel refused a module with a parameter on the cpu for device_ids: that parameter
    against device_ids[0]."""
    from torch.cuda._utils import _get_device_index

    where = rec.where
    odd = next(((q, p) for q, p in module.named_parameters() if where(p) == rec.cpu or where(p) == 0), None)
    if odd is None:
        return
    rec.name_module(module)
    peer = _device_marker(torch, rec, _get_device_index(want, True), "device_ids[0]")
    seq = P.op_begin("DistributedDataParallel", ("module." + odd[0], "device_ids[0]"), (odd[1], peer), None)
    rec.name_operands([odd[1]])
    rec.mismatch(seq, "DistributedDataParallel", ("cpu", str(peer.device), "module." + odd[0]), str(e))


def _wrap_optimizers(torch, rec):
    Optimizer = torch.optim.Optimizer

    Tensor = torch.Tensor

    def stepper(old):
        def step(self, *args, **kwargs):
            if rec.quiet:
                return old(self, *args, **kwargs)
            rec.optimizers.add(self)
            seq = P.op_begin("optimizer.step", (), (), None)
            failed = []  # the closure raised
            try:
                if _sim is not None:
                    _sim.optimizer_check(self)
                # a closure (LBFGS) computes the loss: the program's forward and backward, recorded, each
                # tensor with its own line (the step, a begun op, would lend them its own)
                if args and callable(args[0]):
                    args = (_loud(rec, args[0], failed),) + tuple(args[1:])
                elif callable(kwargs.get("closure")):
                    kwargs = dict(kwargs, closure=_loud(rec, kwargs["closure"], failed))
                if (args and callable(args[0])) or callable(kwargs.get("closure")):
                    P.op_end(seq, "optimizer.step", 0, ())
                    seq = None
                out = rec.quietly(old, self, *args, **kwargs)
            except BaseException as e:
                if not failed:  # the closure's own error was recorded where it was raised
                    _step_failed(torch, rec, self, seq or P.op_begin("optimizer.step", (), (), None), e)
                raise
            try:
                # state is made at the first step (or loaded): looked at when it changed
                size = sum(len(st) for st in self.state.values())
                if rec.state_sizes.get(id(self)) != size:
                    rec.state_sizes[id(self)] = size
                    known = set(id(v) for st in self.state.values() for v in st.values()
                                if isinstance(v, Tensor) and P.tensor_id(v)) if _sim is not None else ()
                    rec.name_optimizer_state(self)
                    if _sim is not None:
                        _sim.optimizer_state(self, lambda v: id(v) not in known)
            except Exception:
                pass
            if seq is not None:
                P.op_end(seq, "optimizer.step", 0, ())
            return out

        return step

    def wrap_class(cls):
        if "step" in cls.__dict__:
            _wrap(cls, "step", stepper)

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    for cls in [Optimizer] + list(subclasses(Optimizer)):
        wrap_class(cls)
    old_init_subclass = Optimizer.__dict__.get("__init_subclass__")

    @classmethod
    def __init_subclass__(cls, **kw):
        if old_init_subclass is not None:
            old_init_subclass.__func__(cls, **kw)
        else:
            super(Optimizer, cls).__init_subclass__(**kw)
        wrap_class(cls)

    Optimizer.__init_subclass__ = __init_subclass__

    # torch wraps each optimizer class's step, at its first instance, in a profiler hook
    # (record_function, which makes a tensor of its own, and the step hooks of 2.x): the step is
    # recorded from outside that hook, so that what the hook does is the step's, run quietly
    # (the step wrapped above, inside it, then passes straight through)
    def outer_step(hook):
        def patched(self, *args, **kwargs):
            out = hook(self, *args, **kwargs)
            try:
                cls = self.__class__
                inner = cls.__dict__.get("step")
                if inner is not None and getattr(inner, "hooked", False) and not getattr(inner, "_devtrace_outer",
                                                                                          False):
                    outer = stepper(inner)
                    outer.__wrapped__, outer.hooked, outer._devtrace, outer._devtrace_outer = inner, inner.hooked, True, True
                    outer.__name__, outer.__qualname__, outer.__doc__ = inner.__name__, inner.__qualname__, inner.__doc__
                    cls.step = outer
            except Exception:
                pass
            return out

        return patched

    for name in ("_hook_for_profile", "_patch_step_function"):  # torch 1.x's name, 2.x's
        if callable(Optimizer.__dict__.get(name)):
            _wrap(Optimizer, name, outer_step)

    def quiet(old):
        def call(self, *args, **kwargs):
            return rec.quietly(old, self, *args, **kwargs)

        return call

    _wrap(Optimizer, "zero_grad", quiet)

    def loader(old):
        def load_state_dict(self, *args, **kwargs):
            rec.optimizers.add(self)
            out = old(self, *args, **kwargs)
            try:
                rec.name_optimizer_state(self)
            except Exception:
                pass
            return out

        return load_state_dict

    _wrap(Optimizer, "load_state_dict", loader)


def _step_failed(torch, rec, opt, seq, e):
    """A step raised e: for a device mismatch, its operands are each
    parameter, its gradient and its state, named; the op is the step."""
    try:
        parsed = P.parse_mismatch(str(e)) if isinstance(e, RuntimeError) else None
        if parsed is None:
            P.op_end(seq, "optimizer.step", ERR_ARG, ())
            return
        rec.name_optimizer_state(opt)
        Tensor = torch.Tensor
        # the first parameter whose gradient or state is on another device
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                where = rec.where
                state = [(k, v) for k, v in opt.state.get(p, {}).items()
                         if isinstance(v, Tensor) and not (v.dim() == 0 and where(v) in (0, rec.cpu))]
                if all(where(v) == where(p) for _, v in state) and where(p.grad) == where(p):
                    continue
                args = {"param": p, "grad": p.grad}
                args.update(state)
                P.op_end(seq, "optimizer.step", ERR_DEVICE, ())
                seq2 = P.op_begin("%s.step" % type(opt).__name__, (), (), args)
                rec.mismatch(seq2, "%s.step" % type(opt).__name__, parsed, str(e))
                return
        P.op_end(seq, "optimizer.step", ERR_DEVICE, ())
    except Exception:
        pass
        pass


def _wrap_indexing(torch, rec):
    """Indexing, which torch 1.x dispatches to no mode: recorded as an op."""
    Tensor = torch.Tensor
    for name, names in (("__getitem__", ("self", "indices")), ("__setitem__", ("self", "indices", "values"))):
        orig = getattr(Tensor, name)

        def make(orig, k):
            def index(self, *args):
                if rec.quiet or rec.light or get_ident() != rec.thread:
                    return orig(self, *args)
                return rec.quietly(rec.record, orig, k, (self,) + args, {})

            return index

        _wrap(Tensor, name, lambda orig, k=_Kind(_OP, name, names): make(orig, k))


def _wrap_sources(torch, rec):
    Tensor = torch.Tensor

    def register(obj, kind, what, detail=None, path="", code=0, depth=0):
        """Records the tensors in obj (nested dicts, lists, tuples, a whole module) that
        have no id: a checkpoint's by their key ("model.fc.weight"), others as `what`;
        code: their simulated device, or a function of the tensor that tells it."""
        if depth > 16:
            return
        if isinstance(obj, Tensor):
            if not P.tensor_id(obj):
                P.created(obj, kind, (path or what) if kind == CHECKPOINT else what, 0, 0, None, detail,
                          code(obj) if callable(code) else code)
        elif isinstance(obj, torch.nn.Module):
            for q, t in _module_tensors(obj, Tensor):
                register(t, kind, what, detail, "%s.%s" % (path, q) if path else q, code, depth + 1)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                register(v, kind, what, detail, "%s.%s" % (path, k) if path else str(k), code, depth + 1)
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                register(v, kind, what, detail, "%s.%d" % (path, i) if path else str(i), code, depth + 1)

    # DataLoader batches: what a factory made in collate in this process is
    # recorded there (the collate function's line, when it is the program's
    # own); the rest of a batch, and batches from worker processes, here,
    # where the loop receives them
    try:
        from torch.utils.data import dataloader as dl

        def next_(old):
            def __next__(self):
                # Where the batch's tensors are made (a collate_fn's torch.tensor, a transform's
                # from_numpy) is recorded, with its line; the ops of the data pipeline, per sample
                # (indexing, stacking, normalizing), are not: they would cost more than the step.
                rec.light += 1
                try:
                    out = old(self)
                finally:
                    rec.light -= 1
                if not rec.quiet:
                    try:
                        register(out, FACTORY, "DataLoader")
                    except Exception:
                        pass
                return out

            return __next__

        _wrap(dl._BaseDataLoaderIter, "__next__", next_)
    except Exception:
        pass

    # checkpoints: each tensor is the key it was stored under
    def loader(old):
        def load(f, *args, **kwargs):
            code = outer = out = None
            if _sim is not None:
                code, args, kwargs = _sim.load_location(kwargs, args)
                outer = _sim.loading()  # where the checkpoint says its tensors were
            try:
                out = rec.quietly(old, f, *args, **kwargs)
                if not rec.quiet:
                    try:
                        loc = kwargs.get("map_location", args[0] if args else None)
                        detail = str(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "a file object")
                        if loc is not None:
                            detail += " (map_location=%s)" % (loc,)
                        register(out, CHECKPOINT, "checkpoint", str(detail), "",
                                 code or (_sim.loaded_code if _sim is not None else 0))
                    except Exception:
                        pass
            finally:
                if _sim is not None:
                    _sim.loaded_done(out, outer)
            return out

        return load

    _wrap(torch, "load", loader)

    def numpy_src(old):
        def from_numpy(*args, **kwargs):
            out = old(*args, **kwargs)
            if not rec.quiet:
                try:
                    P.output(out, FACTORY, "from_numpy", 0, 0)
                except Exception:
                    pass
            return out

        return from_numpy

    _wrap(torch, "from_numpy", numpy_src)

    # nn.Parameter(data): a parameter made from data
    Parameter = torch.nn.Parameter
    param_new = Parameter.__dict__.get("__new__")
    if param_new is not None:
        inner = param_new.__func__ if isinstance(param_new, staticmethod) else param_new

        def __new__(cls, *args, **kwargs):
            p = inner(cls, *args, **kwargs)
            if not rec.quiet:
                try:
                    data = args[0] if args else kwargs.get("data")
                    src = P.tensor_id(data) if isinstance(data, Tensor) else 0
                    code = P.sim(data) if isinstance(data, Tensor) else 0  # where its data is
                    P.output(p, VIEW if src else FACTORY, "nn.Parameter", src, 0, code)
                    P.role(p, P.ROLE_PARAMETER, None, "")  # the fact; the call's name is for people
                except Exception:
                    pass
            return p

        Parameter.__new__ = staticmethod(__new__)

    # Variable(t) of older scripts: a new tensor object on t's data (no mode sees it)
    try:
        from torch.autograd.variable import Variable

        legacy_new = Variable.__new__

        def variable_new(cls, *args, **kwargs):
            v = legacy_new(cls, *args, **kwargs)
            if not rec.quiet:
                try:
                    data = args[0] if args else kwargs.get("data")
                    if isinstance(data, Tensor) and isinstance(v, Tensor) and v is not data:
                        src = P.tensor_id(data)
                        P.output(v, VIEW if src else FACTORY, "Variable", src, 0, P.sim(data))
                except Exception:
                    pass
            return v

        Variable.__new__ = staticmethod(variable_new)
    except Exception:
        pass

    # torch.Tensor([...]) and its legacy kin: no mode sees these constructors
    base_new = _tensor_base(torch).__new__

    def tensor_new(*args, **kwargs):
        # (*args, **kwargs), not (cls, ...): torch 2.x's dynamo substitutes its own function for
        # Tensor.__new__ and refuses, at import, a signature other than the original's or a wildcard
        cls = args[0]
        t = base_new(*args, **kwargs)
        if not rec.quiet and cls is Tensor:
            try:
                P.output(t, FACTORY, "torch.Tensor", 0, 0)
            except Exception:
                pass
        return t

    try:
        Tensor.__new__ = staticmethod(tensor_new)
    except Exception:
        pass
    try:
        _wrap_legacy_types(torch, rec)
    except Exception:
        pass


# The legacy typed constructors: torch.LongTensor(n), torch.cuda.FloatTensor(...) and kin.
_LEGACY_KINDS = P.OPS_LEGACY_CTOR


def _wrap_legacy_types(torch, rec):
    """torch.LongTensor(n) and its kin make a tensor no mode sees (PyTorch's tensortype
    objects, immutable): each is replaced by a class that records the tensor where the
    constructor is called and is otherwise the original (isinstance, its dtype and other
    attributes, x.type(torch.LongTensor), set_default_tensor_type). The simulated GPUs'
    torch.cuda.* classes, installed before, record their own."""
    tensortype = type(torch.FloatTensor)
    originals = {}  # proxy -> the original tensortype

    def proxy(orig, qual):
        class _Legacy(type):
            def __instancecheck__(cls, obj):
                return isinstance(obj, orig)

            def __call__(cls, *args, **kwargs):
                t = orig(*args, **kwargs)
                if not rec.quiet and isinstance(t, torch.Tensor) and not any(t is a for a in args):
                    try:
                        P.output(t, FACTORY, qual, 0, 0)
                    except Exception as exc:
                        rec.broken(exc)
                return t

            def __getattr__(cls, name):
                return getattr(orig, name)

            def __repr__(cls):
                return "<class '%s'>" % qual

        # named by its dotted name: x.type(cls) reads the type's name as PyTorch's own types spell it
        cls = _Legacy(qual, (), {"__module__": qual.rsplit(".", 1)[0], "__doc__": orig.__doc__,
                                 "_devtrace_legacy": qual})
        originals[cls] = orig
        return cls

    for mod, prefix in ((torch, "torch"), (getattr(torch, "cuda", None), "torch.cuda")):
        for kind in _LEGACY_KINDS:
            orig = getattr(mod, kind + "Tensor", None)
            if isinstance(orig, tensortype):
                setattr(mod, kind + "Tensor", proxy(orig, "%s.%sTensor" % (prefix, kind)))

    def unwrapped(old):
        def set_default_tensor_type(t):
            return old(originals.get(t, t) if not isinstance(t, str) else t)

        set_default_tensor_type.__name__, set_default_tensor_type.__doc__ = old.__name__, old.__doc__
        return set_default_tensor_type

    if callable(getattr(torch, "set_default_tensor_type", None)):
        torch.set_default_tensor_type = unwrapped(torch.set_default_tensor_type)
