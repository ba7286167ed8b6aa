"""Simulated GPUs for a CPU-only PyTorch (``DEVTRACE_SIM_CUDA=N``).

A script written for a GPU server runs unchanged and fails where it would
fail there: ``torch.cuda.is_available()`` is True with N devices, and a
tensor put on ``cuda:K`` (a factory's ``device=``, ``.to``, ``.cuda``,
``Module.to``, ``torch.load(map_location=...)``) says ``cuda:K`` wherever the
program looks (``.device``, ``.is_cuda``, ``get_device()``, ``type()``,
``repr``), while its data and autograd stay on the CPU. The device sits
beside each tensor, in the adapter's table of tensors (never in the tensor
itself, so nothing of it reaches a checkpoint or a copy), and the tracer
records it as the tensor's device.

The rules and texts are those of the installed torch's version (DEVTRACE_SIM_TORCH_VERSION=2.11
fakes another, for tests): the error texts, per version, are one table in sim_texts.py (TEXTS), and
the rules a version changed are listed there (RULES): on 2.x the texts of PyTorch 2.11, a square
causal mask on the cpu given to nn.TransformerEncoder/Decoder accepted (2.1+), and
torch.normal(mean, std) on two devices refused (2.0+). docs/torch2.md says which were measured.

The rules it emulates, as a CUDA build of PyTorch applies them:

- an op's tensor operands must be on one device, as PyTorch's checks count
  them (counted_operands: TensorIterator's 0-dim cpu inputs, indexing's cpu
  indices, a set's copy, a kernel's own check that excepts nothing; docs/torch2.md);
  otherwise the op raises PyTorch's ``RuntimeError`` with its text
  ("... found at least two devices, A and B!", A being the first GPU operand's);
  an op with a meta operand is torch's own;
- an op's results are on its operands' device (or its ``device=``);
- ``copy_`` and the transfers may cross devices; ``.to`` returns the tensor
  itself when nothing changes, a copy otherwise (autograd flows through);
- a gradient lives on its parameter's device; an optimizer's state on its
  parameter's, except 0-dim CPU counters (``step``); a step whose state or
  gradient is on another device than its parameter raises before it
  changes anything;
- ``.numpy()`` of a GPU tensor raises PyTorch's TypeError.

``nn.DataParallel`` and ``nn.parallel.data_parallel`` keep PyTorch's check
that the module is on ``device_ids[0]`` and gather outputs on
``output_device``, running the whole batch on ``device_ids[0]``.

GradScaler runs (its two CUDA-only kernels as torch ops); autocast on "cuda"
gives float16 results where the CPU's autocast has float16 (2.x; 1.13 keeps float32). TorchScript
and torch.compile run their functions eagerly (install_eager), so their ops are checked. Streams and events are
synchronous stand-ins (an event's ``elapsed_time`` is the host's time);
``torch.cuda.FloatTensor`` and kin construct, convert and test as on a GPU
build; ``torch.Generator(device="cuda")`` is a CPU generator that says cuda.

torch.distributed (install_distributed, docs/ddp.md): a group asked for with NCCL is made with gloo and
says it is NCCL; its collectives refuse a cpu tensor as ProcessGroupNCCL does; DistributedDataParallel
runs on the simulated devices as it is (its checks read ``.device``).

Not simulated (docs/pytorch.md lists it too): NCCL's own kernels and its checks beyond a cpu tensor,
CUDA graphs, 1.13's autocast float16 results, and custom CUDA kernels.

A checkpoint remembers the GPU its tensors were saved from, as on a GPU
build: ``torch.save`` writes PyTorch's location tag ``cuda:K`` for them (the
file is a GPU run's: a CPU-only PyTorch loads it with ``map_location``),
and ``torch.load`` puts them back there unless ``map_location`` says
otherwise.
"""

import inspect
import os
import sys

from . import sim_texts as T

CUDA = 1 << 16  # probe device code of cuda:0; cuda:K is CUDA | K


class Simulator:
    def __init__(self, torch, ndev, P):
        self.torch, self.n, self.P = torch, ndev, P
        self.current = 0
        self.cpu = torch.device("cpu")
        # the version whose rules and texts are simulated: torch's own, or DEVTRACE_SIM_TORCH_VERSION's
        # (for tests: only 1.13 runs here, and the 2.x rules are tested with the version faked)
        self.quietly = lambda fn, *args, **kwargs: fn(*args, **kwargs)  # the recorder's, once it is there
        self.nccl_groups = set()  # id() of the process groups the program asked NCCL for (install_distributed)
        self.version = T.parse_version(torch.__version__) or (1, 13)
        faked = os.environ.get("DEVTRACE_SIM_TORCH_VERSION", "")
        if faked and T.parse_version(faked) is None:
            sys.stderr.write("devtrace: warning: DEVTRACE_SIM_TORCH_VERSION=%s is no version (say 2.11); the "
                             "simulated GPUs follow torch %d.%d's rules\n" % (faked, self.version[0], self.version[1]))
        elif faked:
            self.version = T.parse_version(faked)

    def text(self, key, **fields):
        """PyTorch's text for error key, as this version gives it (sim_texts.TEXTS)."""
        return T.text(key, self.version, **fields)

    # ---------------------------------------------------------- devices

    def code_of(self, dev):
        """A device argument (str, torch.device, int) as a code; None when it names none."""
        if dev is None:
            return None
        torch = self.torch
        if isinstance(dev, int):
            return CUDA | dev
        d = dev if isinstance(dev, torch.device) else torch.device(dev)
        if d.type == "cuda":
            k = self.current if d.index is None else d.index
            if k >= self.n:
                raise RuntimeError(self.text("ordinal"))
            return CUDA | k
        if d.type == "cpu":
            return 0
        return None

    def code(self, t):
        return self.P.sim(t)

    def mark(self, t, code, what="seen first on a simulated device"):
        self.P.set_sim(t, code, what)

    def device(self, code):
        return self.torch.device("cuda", code & 0xFFFF) if code else self.cpu

    @staticmethod
    def name(code):
        return "cuda:%d" % (code & 0xFFFF) if code else "cpu"

    # ---------------------------------------------------------- the rules

    def dev_name(self, t):
        """Where t is, by name: its simulated GPU ("cuda:1"), else its own device ("cpu", "meta")."""
        c = self.code(t)
        return self.name(c) if c else str(t.device)

    def check(self, name, tensors, index_ok=None, names=None):
        """The device an op on these operands runs on, or PyTorch's error (names: the operands'
        argument names, for the error's text). The rule is PyTorch's (operands_apart, below); an op
        with a meta operand is left to torch itself, whose meta kernels decide as without the
        simulation. index_ok is unused: the op's name says whether it indexes."""
        names = list(names) if names and len(names) == len(tensors) else ["arg%d" % i for i in range(len(tensors))]
        if any(t.is_meta for t in tensors):
            return 0  # torch decides, as it does without simulated GPUs (its meta kernels' own checks)
        order = T.aten(name, self.version)
        if name == "linear" and "bias" not in names:
            order = T.aten("linear:mm", self.version) or order  # 2.x: no bias, input @ weight.t() is mm
        entry = T.ATEN.get("linear:mm" if name == "linear" and "bias" not in names else name)
        ops = list(zip(names, tensors))
        if entry:
            ops = kernel_order(entry[0], ops)  # the operands in the order the CUDA kernel checks them
            names = [n for n, _ in ops]
        verdict = operands_apart(name, ops, self.dev_name, strict=bool(entry) or name in _FIRST_IS_COMMON)
        if verdict is None:
            return _code_of_name(device_of_result(name, ops, self.dev_name))
        kind, common, odd, arg, i = verdict
        if kind == "index":
            raise RuntimeError(self.text("index_devices", self_dev=common))
        if kind == "cpu_scalars":
            raise RuntimeError(self.text("cpu_scalars"))
        first = next(t for n, t in ops if self.dev_name(t) == common)
        raise RuntimeError(self.message(name, order, arg, first, ops[i][1], _code_of_name(common),
                                        _code_of_name(odd), names))

    def message(self, name, order, arg, first, other, common, c, names=()):
        """PyTorch's text for this op's device mismatch, as a CUDA build of this version raises it."""
        odd, peers = self.name(c), self.name(common)
        if name.startswith(("conv", "_convolution", "convolution")) and common and c:
            return self.text("conv_devices", arg=arg or "weight", odd=odd, common=peers)
        if name.startswith(("conv", "_convolution", "convolution")):
            if name in ("conv1d", "conv2d") and not common and arg == "weight" and T.has("conv_slow", self.version):
                return self.text("conv_slow", odd=odd, common=peers)

            def legacy(t, code):  # torch.cuda.FloatTensor and the like
                kind = _LEGACY.get(t.dtype, "Float")
                return "torch.%s%sTensor" % ("cuda." if code else "", kind)

            inp, weight = (first, other) if arg != "input" else (other, first)
            ic, wc = (common, c) if arg != "input" else (c, common)
            return self.text("conv_types", input_type=legacy(inp, ic), weight_type=legacy(weight, wc))
        if name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
            # the input is checked against the hidden state first, then against the weights
            hidden = arg and arg.startswith(("hx", "arg1"))
            return self.text("rnn_hidden" if hidden else "rnn_parameter", odd=odd, common=peers)
        if name in ("masked_fill", "masked_fill_"):
            on_self = first if arg == "mask" else other
            return self.text("masked_fill", odd=odd, common=peers, mask_dev=odd if arg == "mask" else peers,
                             self_dev=self.name(self.code(on_self)))
        if name == "multi_head_attention_forward" and _base_name(arg) == "attn_mask" and T.has("aten_21", self.version):
            # 2.x: the mask is added to the scores by baddbmm(attn_mask, q, k^T), whose first operand it is
            return self.text("argument", arg="batch1", odd=peers, common=odd, method="wrapper_CUDA_baddbmm")
        if name == "take_along_dim":
            return self.text("take_along_dim", odd=odd, common=peers)
        if order and arg:
            return self.text("argument", arg=dict(order[0]).get(_base_name(arg), _base_name(arg)), odd=odd,
                             common=peers, method=order[1])
        return self.text("devices", odd=odd, common=peers)

    def target_of_to(self, t, args, kwargs):
        """The device .to(...) asks for (a code), or None when it keeps t's."""
        dev = kwargs.get("device")
        if dev is None and args:
            a = args[0]
            if isinstance(a, self.torch.Tensor):
                return self.code(a)
            if isinstance(a, (str, self.torch.device, int)) and not isinstance(a, bool):
                dev = a
        return self.code_of(dev)

    def foreign_target(self, args, kwargs):
        """Whether .to(...) asks for a device the simulation leaves to torch (meta): by name or by a tensor's."""
        dev = kwargs.get("device")
        if dev is None and args:
            a = args[0]
            if isinstance(a, self.torch.Tensor):
                return a.is_meta
            if isinstance(a, (str, self.torch.device)):
                dev = a
        if dev is None or isinstance(dev, int):
            return False
        try:
            return self.torch.device(dev).type not in ("cpu", "cuda")
        except (RuntimeError, TypeError):
            return False

    def strip_device(self, args, kwargs):
        """.to's arguments without the device (what the CPU build can run)."""
        torch = self.torch
        args = list(args)
        if args and isinstance(args[0], (str, torch.device, int)) and not isinstance(args[0], bool):
            args.pop(0)
        elif args and isinstance(args[0], torch.Tensor):
            args[0] = args[0].dtype
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        return tuple(args), kwargs

    # ---------------------------------------------------------- calls the mode hands over

    def factory(self, func, args, kwargs):
        """A factory: its device= is simulated; a *_like one follows its input.
        Returns (result, device code of the result)."""
        code = None
        if "device" in kwargs:
            code = self.code_of(kwargs["device"])
            if code is not None:
                kwargs = dict(kwargs)
                kwargs["device"] = "cpu"
        elif args and isinstance(args[0], self.torch.Tensor):
            code = self.code(args[0])
        out = func(*args, **kwargs)
        if code and isinstance(out, self.torch.Tensor) and any(out is a for a in args) and self.code(out) != code:
            out = out.clone()  # as_tensor(t, device="cuda") of a CPU tensor is a copy on the GPU, not t
        return out, code or 0

    def factory_is_op(self, name, args, kwargs):
        """Whether a factory call is checked as an op: torch.normal(Tensor mean, Tensor std) from 2.0
        (RULES "normal_checks_devices"); 1.13 put the result on mean's device whatever std's."""
        if name != "normal" or not T.has("normal_checks_devices", self.version):
            return False
        Tensor = self.torch.Tensor
        operands = list(args[:2]) + [kwargs.get("mean"), kwargs.get("std")]
        return sum(isinstance(a, Tensor) for a in operands) >= 2

    def transfer(self, name, func, t, args, kwargs):
        """.to / .cuda / .cpu / .type of t: (the result, t itself when nothing
        changes, and the device code of a new result)."""
        torch = self.torch
        src = self.code(t)
        if name in ("to", "cuda", "cpu") and (t.is_meta or (name == "to" and self.foreign_target(args, kwargs))):
            # the meta device (any but cpu and cuda) is torch's own: to and from it as without the simulation
            if name == "cuda":
                return t.to("cpu", copy=True), 0  # a meta tensor has no data to copy: torch's own error
            if name == "to" and t.is_meta and not self.foreign_target(args, kwargs):
                want = self.target_of_to(t, args, kwargs)
                if want:  # meta to a simulated GPU: torch's own error, as to the cpu
                    rest_args, rest_kw = self.strip_device(args, kwargs)
                    return t.to("cpu", *rest_args, **rest_kw), want
            return func(t, *args, **kwargs), 0
        if name == "cuda":
            dev = args[0] if args else kwargs.get("device")
            want = self.code_of(dev if dev is not None else self.current)
            rest = {k: v for k, v in kwargs.items() if k in ("memory_format",)}
            out = t if want == src else t.to(copy=True, **rest)
        elif name == "cpu":
            want = 0
            out = t if src == 0 else t.to(copy=True)
        elif name == "type" and not args and not kwargs:
            text = func(t)
            return (text.replace("torch.", "torch.cuda.", 1) if src else text), 0
        elif name == "type" and args and self.legacy_name(args[0]):
            # a legacy type, by its name or its class: torch.cuda.* is on the GPU (the one t is on, or
            # the current one), torch.* on the cpu
            tname = self.legacy_name(args[0])
            want = (src or CUDA | self.current) if ".cuda." in tname else 0
            out = func(t, tname.replace(".cuda.", "."), *args[1:], **kwargs)
            if out is t and src != want:
                out = t.clone()
        elif name == "to":
            want = self.target_of_to(t, args, kwargs)
            rest_args, rest_kw = self.strip_device(args, kwargs)
            out = func(t, *rest_args, **rest_kw) if (rest_args or rest_kw) else t
            if want is not None and want != src and out is t:
                out = t.to(copy=True)
        else:
            want = None
            out = func(t, *args, **kwargs)
        return out, (src if want is None else want)

    def legacy_name(self, a):
        """'torch.cuda.FloatTensor' for that name or class (torch.FloatTensor too), else None."""
        if isinstance(a, str):
            return a if a.startswith("torch.") and a.endswith("Tensor") else None
        name = getattr(a, "_devtrace_legacy", None)
        if name is None and isinstance(a, type) and getattr(a, "__module__", "") in ("torch", "torch.cuda") \
                and a.__name__.endswith("Tensor") and a.__name__ != "Tensor":
            name = "%s.%s" % (a.__module__, a.__name__)
        return name

    def op_device(self, k, kwargs, operands):
        """Checks an op's operands ((name, tensor) pairs); the device of its results."""
        tensors = [t for _, t in operands]
        dev = kwargs.get("device")
        if k.name in _SHAPE_ONLY and tensors:
            return self.code(tensors[0])  # the other tensor lends its shape (or type) only
        if k.name == "type_as" and len(tensors) > 1:
            return self.code(tensors[1])  # converts to the other's type, its device included
        code = self.check(k.name, tensors, None, [n for n, _ in operands])
        if dev is not None:
            code = self.code_of(dev)
        return code

    def run_op(self, func, args, kwargs):
        """Runs an op on the CPU; the recorder puts its new results on the op's device."""
        if "device" in kwargs and self.code_of(kwargs["device"]) is not None:
            kwargs = dict(kwargs)
            kwargs["device"] = "cpu"
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:  # backward(): DDP's reducer all-reduces the gradients
            if self.peer_gone(e):
                self.wait_as_nccl(e)
            raise

    def peer_gone(self, e):
        """Whether e is gloo's word that another rank's process is gone, in a job whose groups the program
        asked NCCL for."""
        return bool(self.nccl_groups) and isinstance(e, RuntimeError) and any(s in str(e) for s in _GLOO_PEER_GONE)

    def wait_as_nccl(self, e):
        """NCCL does not fail a collective whose peer died: it waits (its watchdog aborts after the group's
        timeout, 30 minutes by default), and the launcher (torch.multiprocessing.spawn, torchrun) ends the
        other ranks when one fails, so the job fails with the first rank's error. gloo fails at once
        ("Connection closed by peer"), and the job could fail with a survivor's error instead: a simulated
        NCCL rank waits as NCCL does (2.x: NCCL's own default timeout, 10 minutes), then raises gloo's
        error."""
        import time

        from torch.distributed import distributed_c10d as c10d

        timeout = getattr(c10d, "default_pg_nccl_timeout", None) or c10d.default_pg_timeout
        end = time.monotonic() + timeout.total_seconds()
        while time.monotonic() < end:
            time.sleep(1)
        raise e

    def prop(self, k, func, args, kwargs):
        """Reads (and a few methods) that say where a tensor is."""
        torch = self.torch
        t = args[0] if args else None
        name = k.name
        if not isinstance(t, torch.Tensor):
            return func(*args, **kwargs)
        code = self.code(t)
        if name == "device":
            return self.device(code) if code else func(*args, **kwargs)
        if name == "is_cuda":
            return bool(code) or func(*args, **kwargs)
        if name == "get_device":
            return (code & 0xFFFF) if code else func(*args, **kwargs)
        if name in ("grad", "data", "_base"):
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor) and code and not self.P.tensor_id(out):
                of = self.P.name_of(t)
                self.mark(out, code, "the %s of %s" % (name, '"%s"' % of if of else "t%d" % self.P.tensor_id(t)))
            return out
        if name == "type" and not args[1:] and not kwargs and code:
            return func(*args, **kwargs).replace("torch.", "torch.cuda.", 1)
        if name in ("numpy", "__array__") and code:
            raise TypeError(self.text("numpy", odd=self.name(code)))
        if name == "__repr__" and code:
            return _with_device(func(*args, **kwargs), self.name(code))
        if name == "data=" and len(args) > 1 and isinstance(args[1], torch.Tensor) and self.code(args[1]) != code:
            raise RuntimeError(self.text("set_data"))
        if name in ("pin_memory",):
            return t.clone()
        if name == "is_pinned":
            return False
        return func(*args, **kwargs)

    # ---------------------------------------------------------- what no mode sees

    def module_to(self, old, module, args, kwargs):
        """Module.to/cuda/cpu: parameters and buffers (and their gradients) move in place."""
        torch = self.torch
        name = old.__name__
        if name == "to":
            device, dtype, non_blocking, fmt = torch._C._nn._parse_to(*args, **kwargs)
            if device is not None and device.type not in ("cpu", "cuda"):
                return old(module, *args, **kwargs)  # the meta device is torch's own, as without the simulation
            want = self.code_of(device) if device is not None else None
            if dtype is not None or fmt is not None:
                kw = {}
                if dtype is not None:
                    kw["dtype"] = dtype
                if fmt is not None:
                    kw["memory_format"] = fmt
                old(module, **kw)
        elif name == "cuda":
            dev = args[0] if args else kwargs.get("device")
            want = self.code_of(dev if dev is not None else self.current)
        elif name == "cpu":
            want = 0
        else:
            return old(module, *args, **kwargs)
        if want is not None:
            for t in list(module.parameters()) + list(module.buffers()):
                self.mark(t, want, "a parameter or buffer")
                if t.grad is not None:
                    self.mark(t.grad, want, "a gradient")
        return module

    def optimizer_check(self, opt):
        """Raises, before a step changes anything, what the step would raise on a GPU."""
        torch = self.torch
        for group in opt.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                pc = self.code(p)
                if pc and not self.P.tensor_id(g):
                    self.mark(g, pc, "a gradient (backward)")
                tensors = [p, g] + [v for v in opt.state.get(p, {}).values() if isinstance(v, torch.Tensor)]
                self.check("optimizer.step", tensors, False)

    def optimizer_state(self, opt, fresh):
        """New state (fresh(v)) follows its parameter's device, but for 0-dim CPU counters."""
        torch = self.torch
        for group in opt.param_groups:
            for p in group["params"]:
                pc = self.code(p)
                for v in opt.state.get(p, {}).values():
                    if isinstance(v, torch.Tensor) and pc and v.dim() > 0 and not self.code(v) and fresh(v):
                        self.mark(v, pc)

    def load_location(self, kwargs, args):
        """torch.load's map_location as the CPU build can take it, and the device to mark."""
        loc = kwargs.get("map_location", args[0] if args else None)
        try:
            code = self.code_of(loc) if isinstance(loc, (str, self.torch.device)) else None
        except Exception:
            code = None
        if code:
            if "map_location" in kwargs:
                kwargs = dict(kwargs)
                kwargs["map_location"] = "cpu"
            else:
                args = ("cpu",) + tuple(args[1:])
        return code, args, kwargs

    def install_cuda_api(self):
        """torch.cuda answers as a machine with N GPUs does."""
        torch, sim = self.torch, self
        cuda = torch.cuda

        def set_device(device):
            k = device if isinstance(device, int) else torch.device(device).index or 0
            if k < 0 or k >= sim.n:
                raise RuntimeError(sim.text("ordinal"))
            sim.current = k

        class device:
            def __init__(self, dev):
                self.idx = dev if isinstance(dev, int) else (torch.device(dev).index or 0)

            def __enter__(self):
                self.prev = sim.current
                sim.current = self.idx

            def __exit__(self, *exc):
                sim.current = self.prev
                return False

        def allocated(device=None):
            return 0

        api = {
            "is_available": lambda: True,
            "device_count": lambda: sim.n,
            "current_device": lambda: sim.current,
            "set_device": set_device,
            "device": device,
            "synchronize": lambda device=None: None,
            "is_initialized": lambda: True,
            "init": lambda: None,
            "_lazy_init": lambda: None,
            "empty_cache": lambda: None,
            "manual_seed": lambda seed: None,
            "manual_seed_all": lambda seed: None,
            "seed": lambda: None,
            "seed_all": lambda: None,
            "memory_allocated": allocated,
            "max_memory_allocated": allocated,
            "memory_reserved": allocated,
            "max_memory_reserved": allocated,
            "reset_peak_memory_stats": lambda device=None: None,
            "get_device_name": lambda device=None: "devtrace simulated GPU",
            "get_device_capability": lambda device=None: (9, 0),
            "is_bf16_supported": lambda *a, **kw: True,
        }
        class _Properties:  # what torch.cuda.get_device_properties tells of a simulated GPU
            name = "devtrace simulated GPU"
            major, minor = 9, 0
            total_memory = 80 * 2 ** 30
            multi_processor_count = 132
            is_integrated = is_multi_gpu_board = 0

        api["get_device_properties"] = lambda device=None: _Properties()
        for k, v in api.items():
            setattr(cuda, k, v)
        torch.Tensor.pin_memory = lambda self, *a, **kw: self.clone()
        try:  # cuDNN is not there to use: an RNN's flatten_parameters on a simulated GPU returns quietly
            cudnn = torch.backends.cudnn
            acceptable = cudnn.is_acceptable
            cudnn.is_acceptable = lambda t: False if sim.code(t) else acceptable(t)
        except Exception:
            pass
        _LEGACY.update(_legacy_names(torch))
        self.install_data_parallel()
        try:
            self.install_distributed()
        except Exception:  # a torch without torch.distributed: nothing to simulate there
            pass
        if T.has("causal_mask_hint", self.version):
            self.install_causal_mask_hint()
        self.install_grad_scaler()
        for install in (self.install_legacy_types, self.install_streams, self.install_generator,
                        self.install_accelerator, self.install_eager, self.install_autocast):
            try:
                install()
            except Exception:  # another torch: that part of torch.cuda stays as the CPU build has it
                pass
        try:
            self.install_checkpoints()
        except Exception:  # another torch's serialization: checkpoints load on the cpu, as before
            pass

    def install_checkpoints(self):
        """A checkpoint remembers the GPU its tensors were saved from, as on a GPU
        build: torch.save tags each storage of a tensor on a simulated GPU
        "cuda:K" (PyTorch's own location tag), and torch.load without a
        map_location (or with one that maps to "cuda:K") puts them back there;
        their data is restored on the CPU. A checkpoint written on a real GPU
        loads the same way."""
        torch, sim = self.torch, self
        ser = torch.serialization
        self.saving = None  # storage data_ptr -> code, while torch.save pickles
        self.loaded = None  # storage data_ptr -> code, while torch.load restores

        def key(storage):
            """The storage itself (its C object: the same for every wrapper of it, an empty one too), else
            its data's address."""
            try:
                return getattr(storage, "_cdata", None) or storage.data_ptr() or None
            except Exception:
                return None

        self.storage_key = key

        def storage_of(t):
            """t's storage, as torch.save pickles it: untyped on torch 2 (Tensor.storage() warns there that
            TypedStorage is deprecated: a line a program on a GPU does not print), typed on 1.x (no other)."""
            untyped = getattr(t, "untyped_storage", None)
            return untyped() if untyped is not None else t.storage()

        self.storage_of = storage_of

        def tagger(storage):
            if sim.saving:
                code = sim.saving.get(key(storage))
                if code:
                    return sim.name(code)
            return None

        def deserializer(storage, location):
            if not (isinstance(location, str) and location.startswith("cuda")):
                return None
            code = sim.code_of(location)  # an ordinal past the simulated GPUs raises, as on a GPU
            if sim.loaded is not None and key(storage) is not None:
                sim.loaded[key(storage)] = code
            return storage

        ser.register_package(5, tagger, deserializer)

        def remember(old):
            def __reduce_ex__(t, proto):
                if sim.saving is not None:
                    code = sim.code(t)
                    if code:
                        try:
                            k = key(storage_of(t))
                        except Exception:
                            k = None
                        if k is not None:
                            sim.saving[k] = code
                return old(t, proto)

            __reduce_ex__.__name__ = old.__name__
            __reduce_ex__.__qualname__ = getattr(old, "__qualname__", old.__name__)
            return __reduce_ex__

        for cls in (torch.Tensor, torch.nn.Parameter):
            if "__reduce_ex__" in cls.__dict__:
                setattr(cls, "__reduce_ex__", remember(cls.__dict__["__reduce_ex__"]))

        def saver(old):
            def save(*args, **kwargs):
                outer, sim.saving = sim.saving, {}
                try:
                    return old(*args, **kwargs)
                finally:
                    sim.saving = outer

            save.__name__, save.__doc__ = old.__name__, old.__doc__
            return save

        torch.save = saver(torch.save)

    def loading(self):
        """torch.load begins: the storages it restores onto a simulated GPU are remembered."""
        outer = getattr(self, "loaded", None)
        self.loaded = {}
        return outer

    def loaded_code(self, t):
        """The simulated GPU a tensor just loaded was restored to (0: the cpu)."""
        if not self.loaded or not isinstance(t, self.torch.Tensor):
            return 0
        try:
            return self.loaded.get(self.storage_key(self.storage_of(t)), 0)
        except Exception:
            return 0

    def loaded_done(self, out, outer):
        """torch.load is done: what it restored onto a simulated GPU and no one recorded is put there."""
        try:
            if self.loaded:
                for t in _tensors_in(out, self.torch):
                    code = self.loaded_code(t)
                    if code and not self.code(t):
                        self.mark(t, code, "loaded from a checkpoint onto %s" % self.name(code))
        finally:
            self.loaded = outer

    def install_legacy_types(self):
        """torch.cuda.FloatTensor and its kin, as older scripts use them: a constructor
        (``torch.cuda.FloatTensor(n, 1).fill_(1.0)``, ``Tensor(np_array)``), a type to
        convert to (``x.type(torch.cuda.FloatTensor)``) and to test (``isinstance``)."""
        torch, sim, P = self.torch, self, self.P

        class _LegacyType(type):
            def __instancecheck__(cls, obj):
                return isinstance(obj, torch.Tensor) and obj.dtype == cls.dtype and bool(sim.code(obj))

        for dtype, kind in _legacy_names(torch).items():
            name = kind + "Tensor"
            cpu = getattr(torch, name, None)
            if cpu is None or not hasattr(torch.cuda, name):
                continue

            def new(cls, *args, _cpu=cpu, **kwargs):
                dev = kwargs.pop("device", None)
                code = sim.code_of(dev) if dev is not None else CUDA | sim.current
                t = _cpu(*args, **kwargs)
                try:
                    _, fresh = P.output(t, 0, "torch.cuda." + cls.__name__, 0, 0, code)
                except Exception:
                    fresh = False
                if not fresh:
                    sim.mark(t, code, "made by torch.cuda." + cls.__name__)
                return t

            setattr(torch.cuda, name, _LegacyType(name, (), {"__new__": new, "dtype": dtype, "__module__": "torch.cuda",
                                                             "is_cuda": True, "_devtrace_legacy": "torch.cuda." + name}))

    def install_streams(self):
        """CUDA streams and events as a program that times or overlaps its work uses them: one
        stream, everything synchronous; an event's elapsed_time is the host's time between records."""
        torch, sim = self.torch, self
        import contextlib
        import time

        class Event:
            def __init__(self, enable_timing=False, blocking=False, interprocess=False):
                self.t = None

            def record(self, stream=None):
                self.t = time.perf_counter()

            def synchronize(self):
                pass

            def wait(self, stream=None):
                pass

            def query(self):
                return True

            def elapsed_time(self, end):
                if self.t is None or end.t is None:
                    raise RuntimeError(sim.text("event"))
                return (end.t - self.t) * 1000.0

        class Stream:
            def __init__(self, device=None, priority=0, **kwargs):
                k = sim.current if device is None else (device if isinstance(device, int)
                                                        else torch.device(device).index or 0)
                self.device = torch.device("cuda", k)
                self.priority = priority

            def synchronize(self):
                pass

            def query(self):
                return True

            def wait_stream(self, stream):
                pass

            def wait_event(self, event):
                pass

            def record_event(self, event=None):
                event = event or Event()
                event.record(self)
                return event

            def is_capturing(self):  # no CUDA graph is captured (not simulated); torch.optim asks on 2.x
                return False

            @property
            def device_type(self):  # torch.Stream's (2.x), which torch.accelerator.current_stream() returns
                return "cuda"

            @property
            def device_index(self):
                return self.device.index

            stream_id = cuda_stream = native_handle = 0

            def __eq__(self, other):
                return isinstance(other, Stream) and other.device == self.device

            def __hash__(self):
                return hash(self.device)

        @contextlib.contextmanager
        def stream(s):
            yield

        cuda = torch.cuda
        for k, v in {"Event": Event, "Stream": Stream, "stream": stream,
                     "current_stream": lambda device=None: Stream(device),
                     "default_stream": lambda device=None: Stream(device),
                     "set_stream": lambda s: None,
                     "is_current_stream_capturing": lambda: False,
                     "mem_get_info": lambda device=None: (80 * 2 ** 30, 80 * 2 ** 30),
                     "get_rng_state": lambda device="cuda": torch.get_rng_state(),
                     "get_rng_state_all": lambda: [torch.get_rng_state() for _ in range(sim.n)],
                     "set_rng_state": lambda new_state, device="cuda": None,
                     "set_rng_state_all": lambda new_states: None,
                     "initial_seed": lambda: torch.initial_seed()}.items():
            setattr(cuda, k, v)
        torch.Tensor.record_stream = lambda self, stream: None
        nvtx = getattr(cuda, "nvtx", None)
        if nvtx is not None:
            nvtx.range_push = lambda msg: 0
            nvtx.range_pop = lambda: 0
            nvtx.mark = lambda msg: None
            nvtx.range = contextlib.contextmanager(lambda msg, *a, **kw: (yield))

    def install_accelerator(self):
        """torch.accelerator (2.6+), which torch.distributed (init_process_group's device_id, as Lightning
        passes it), the DataLoader's pin_memory and the trainers read: the accelerator is "cuda", with the
        simulated GPUs and the current one; its memory queries answer as torch.cuda's."""
        torch, sim = self.torch, self
        acc = getattr(torch, "accelerator", None)
        if acc is None:
            return
        cuda = torch.cuda
        api = {
            "is_available": lambda: True,
            "current_accelerator": lambda check_available=False: torch.device("cuda"),
            "device_count": lambda: sim.n,
            "current_device_index": lambda: sim.current,
            "current_device_idx": lambda: sim.current,
            "set_device_index": lambda device: cuda.set_device(device),
            "set_device_idx": lambda device: cuda.set_device(device),
            "device_index": lambda device: cuda.device(device if device is not None else sim.current),
            "synchronize": lambda device=None: None,
            "current_stream": lambda device=None: cuda.current_stream(device),
            "set_stream": lambda stream: None,
            "empty_cache": lambda: None,
            "memory_allocated": lambda device_index=None: 0,
            "max_memory_allocated": lambda device_index=None: 0,
            "memory_reserved": lambda device_index=None: 0,
            "max_memory_reserved": lambda device_index=None: 0,
            "reset_peak_memory_stats": lambda device_index=None: None,
            "reset_accumulated_memory_stats": lambda device_index=None: None,
            "memory_stats": lambda device_index=None: {},
            "get_memory_info": lambda device_index=None: cuda.mem_get_info(),
            "get_device_capability": lambda device=None: {"major": 9, "minor": 0},
        }
        for k, v in api.items():
            if hasattr(acc, k):
                setattr(acc, k, v)

    def install_generator(self):
        """torch.Generator(device="cuda"): a CPU generator that says it is on the simulated GPU."""
        torch, sim = self.torch, self
        Base = torch.Generator

        class _Meta(type(Base)):
            def __instancecheck__(cls, obj):  # torch.default_generator is one too
                return isinstance(obj, Base)

        class Generator(Base, metaclass=_Meta):
            def __new__(cls, device="cpu"):
                g = Base.__new__(cls)
                return g

            def __init__(self, device="cpu"):
                code = sim.code_of(device) if not isinstance(device, int) else CUDA | device
                self._devtrace_code = code or 0

            @property
            def device(self):
                return sim.device(self._devtrace_code) if self._devtrace_code else Base.device.__get__(self)

        Generator.__name__ = Generator.__qualname__ = "Generator"
        Generator.__module__ = "torch"
        torch.Generator = Generator

    def install_eager(self):
        """TorchScript and torch.compile run their functions eagerly on simulated GPUs, so that every op in
        them is the program's own and checked as it would fail on a GPU (a scripted function's ops never
        reach Python, a compiled graph's are traced once and then run unseen): torch.jit.script returns
        the function or module as it is (torch.jit._state.disable(), what PYTORCH_JIT=0 does), and
        torch.compile, nn.Module.compile and torch._dynamo.optimize return theirs unchanged."""
        torch = self.torch
        try:
            from torch.jit import _state

            _state.disable()
        except (ImportError, AttributeError):
            pass

        def eager(old):
            def compile(model=None, *args, **kwargs):
                if model is None:
                    return lambda fn: fn  # @torch.compile(mode=...) as a decorator factory
                return model

            return _named_like(compile, old)

        if callable(getattr(torch, "compile", None)):
            torch.compile = eager(torch.compile)
        if callable(getattr(torch.nn.Module, "compile", None)):
            torch.nn.Module.compile = lambda self, *args, **kwargs: None
        dynamo = sys.modules.get("torch._dynamo")
        if dynamo is not None and callable(getattr(dynamo, "optimize", None)):
            dynamo.optimize = lambda *args, **kwargs: (lambda fn: fn)

    def install_autocast(self):
        """autocast("cuda") on simulated GPUs: PyTorch's own context (enabled, as torch.cuda.is_available()
        says True) and, with it, the CPU's autocast in the CUDA one's dtype (float16 unless told), so that a
        matmul's result is float16 as on a GPU. The CPU's op lists are not CUDA's in every op; where this
        torch's CPU autocast refuses float16 (1.13: bfloat16 only) the ops keep their dtype."""
        torch = self.torch
        amp = getattr(torch, "amp", None)
        cls = getattr(getattr(amp, "autocast_mode", None), "autocast", None)
        if cls is None or getattr(cls.__enter__, "_devtrace_sim", False):
            return
        enter, exit_ = cls.__enter__, cls.__exit__
        import warnings

        probe = torch.zeros(1, 1)
        try:  # does this torch's CPU autocast take float16? (1.13 warns that it does not, and runs on)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.autocast("cpu", dtype=torch.float16):
                    ok = (probe @ probe).dtype == torch.float16
        except Exception:
            ok = False
        if not ok:
            return

        def __enter__(self):
            out = enter(self)
            if getattr(self, "device", None) == "cuda" and getattr(self, "_enabled", True):
                self._devtrace_cpu = torch.autocast("cpu", dtype=getattr(self, "fast_dtype", torch.float16))
                self._devtrace_cpu.__enter__()
            return out

        def __exit__(self, *exc):
            inner = self.__dict__.pop("_devtrace_cpu", None)
            if inner is not None:
                inner.__exit__(*exc)
            return exit_(self, *exc)

        cls.__enter__ = _named_like(__enter__, enter)
        cls.__exit__ = _named_like(__exit__, exit_)

    def install_grad_scaler(self):
        """torch.cuda.amp.GradScaler's two CUDA-only kernels, where this torch has no CPU one: the
        same arithmetic in torch ops, so their operands' devices are checked as any op's."""
        torch = self.torch

        def unscale(grads, found_inf, inv_scale):
            for g in grads:
                if not bool(torch.isfinite(g).all()):
                    found_inf.fill_(1.0)
                g.mul_(inv_scale)

        def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
            if float(found_inf):
                scale.mul_(backoff_factor)
                growth_tracker.fill_(0)
            else:
                successful = int(growth_tracker) + 1
                if successful == growth_interval:
                    scale.mul_(growth_factor)
                    growth_tracker.fill_(0)
                else:
                    growth_tracker.fill_(successful)
            return scale

        for name, fallback in (("_amp_foreach_non_finite_check_and_unscale_", unscale),
                               ("_amp_update_scale_", update_scale)):
            native = getattr(torch, name, None)
            if native is None:
                continue

            def op(*args, _native=native, _fallback=fallback, **kwargs):
                try:
                    return _native(*args, **kwargs)
                except NotImplementedError:  # no CPU kernel in this torch
                    return _fallback(*args, **kwargs)

            op.__name__ = name
            setattr(torch, name, op)

    def install_causal_mask_hint(self):
        """PyTorch 2.1+ (RULES "causal_mask_hint", read from its torch/nn/modules/transformer.py and
        functional.py): nn.TransformerEncoder, and nn.TransformerDecoder for tgt_mask, find out
        whether the mask is the square causal one (_detect_is_causal_mask) and pass is_causal to
        their layers, whose attention (need_weights=False) then drops the mask for SDPA's
        is_causal when no key padding mask is given: the mask's device is never checked, and a
        causal mask left on the cpu works on a GPU. Simulated: such a mask reaches the layers as a
        copy on the input's device (the same values: the result is the one the mask gives)."""
        torch, sim = self.torch, self
        nn = torch.nn

        def causal(mask):
            sz = mask.size(-2)
            full = torch.triu(torch.full((sz, sz), float("-inf"), dtype=mask.dtype), diagonal=1)
            return mask.size() == full.size() and bool((mask == full).all())

        def hinted(mask, x):
            code = sim.code(x) if isinstance(x, torch.Tensor) else 0
            if not isinstance(mask, torch.Tensor) or sim.code(mask) == code or mask.dim() != 2:
                return mask
            if not sim.quietly(causal, mask):
                return mask
            copy = sim.quietly(mask.detach().clone)
            sim.mark(copy, code, "the causal mask, which PyTorch 2.1+ replaces with is_causal")
            return copy

        def encoder(old):
            def forward(self, src, mask=None, src_key_padding_mask=None, *args, **kwargs):
                if mask is not None and src_key_padding_mask is None:
                    mask = hinted(mask, src)
                return old(self, src, mask, src_key_padding_mask, *args, **kwargs)

            return forward

        def decoder(old):
            def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None, *args,
                        **kwargs):
                if tgt_mask is not None and tgt_key_padding_mask is None:
                    tgt_mask = hinted(tgt_mask, tgt)
                return old(self, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, *args, **kwargs)

            return forward

        for cls, wrap in ((nn.TransformerEncoder, encoder), (nn.TransformerDecoder, decoder)):
            old = cls.forward
            new = wrap(old)
            new.__name__, new.__qualname__, new.__doc__ = old.__name__, old.__qualname__, old.__doc__
            cls.forward = new

    def install_distributed(self):
        """torch.distributed on simulated GPUs: a process group asked for with NCCL ("nccl", or 2.x's
        "cuda:nccl,cpu:gloo") is made with gloo, which this CPU build has, and says it is NCCL
        (get_backend); a collective of such a group checks, as ProcessGroupNCCL does, that its tensors are on
        a GPU (TEXTS "nccl_cpu_tensor"), and gloo then runs it on the tensors' data, which the CPU holds.
        DistributedDataParallel needs nothing more: its checks read .device, which the simulation answers,
        it moves the forward's inputs with .to, and its reducer's buckets hold the parameters' data."""
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        if not dist.is_available():
            return
        sim, Tensor = self, self.torch.Tensor
        nccl = self.nccl_groups
        cpu_backend = set()  # id() of those of them with another backend for the cpu ("cpu:gloo,cuda:nccl")
        keep = []  # the groups themselves, so that an id is never another's

        def wants_nccl(backend):
            return isinstance(backend, str) and "nccl" in backend.lower()

        helper = c10d._new_process_group_helper
        try:
            helper_takes_device_id = list(inspect.signature(helper).parameters).index("device_id") == 9
        except (ValueError, TypeError):
            helper_takes_device_id = False

        def new_process_group_helper(*args, **kwargs):
            args = list(args)
            asked = kwargs.get("backend", args[3] if len(args) > 3 else None)
            if wants_nccl(asked):
                if "backend" in kwargs:
                    kwargs["backend"] = "gloo"
                else:
                    args[3] = "gloo"
                # 2.x: a group bound to a GPU (init_process_group(device_id=cuda:K), as Lightning asks) makes
                # gloo allocate its barrier's tensor there, which this CPU build cannot: the gloo group is
                # bound to no device, and its barrier runs on the cpu
                if kwargs.get("device_id") is not None:
                    kwargs["device_id"] = None
                elif len(args) > 9 and helper_takes_device_id:
                    args[9] = None
            made = helper(*args, **kwargs)
            pg = made[0] if isinstance(made, tuple) else made  # 2.x returns (group, its prefix store)
            if wants_nccl(asked) and pg is not None and pg is not getattr(c10d.GroupMember, "NON_GROUP_MEMBER", None):
                nccl.add(id(pg))
                keep.append(pg)
                pairs = dict(p.split(":", 1) for p in asked.lower().split(",") if ":" in p)
                if pairs.get("cpu", "nccl") != "nccl":
                    cpu_backend.add(id(pg))
            return made

        c10d._new_process_group_helper = new_process_group_helper
        # 2.x: an NCCL group's default timeout is NCCL's own (_DEFAULT_PG_NCCL_TIMEOUT, from
        # kProcessGroupNCCLDefaultTimeout in ProcessGroupNCCL.hpp: 10 minutes), which a build without NCCL
        # lacks: torch would warn "NCCL support is not compiled" and give the group gloo's 30 minutes
        if hasattr(c10d, "default_pg_nccl_timeout") and c10d.default_pg_nccl_timeout is None:
            import datetime

            c10d.default_pg_nccl_timeout = datetime.timedelta(minutes=10)

        def resolve(group):
            if group is None or group is getattr(c10d.GroupMember, "WORLD", None):
                group = c10d._get_default_group() if dist.is_initialized() else None
            return group

        def is_nccl(group):
            group = resolve(group)
            return group is not None and id(group) in nccl

        def cpu_ok(group):
            """A "cpu:gloo,cuda:nccl" group has a backend of its own for cpu tensors."""
            group = resolve(group)
            return group is not None and id(group) in cpu_backend

        def new_group(old):
            def call(*args, **kwargs):
                try:
                    bound = inspect.signature(old).bind_partial(*args, **kwargs).arguments
                except TypeError:
                    return old(*args, **kwargs)
                if bound.get("backend") is None and dist.is_initialized() and is_nccl(None):
                    bound["backend"] = "nccl"  # a new group takes the default group's backend
                    return old(**bound)
                return old(*args, **kwargs)

            return call

        def get_backend(old):
            def call(group=None):
                return "nccl" if is_nccl(group) else old(group)

            return call

        def collective(old):
            sig = inspect.signature(old)

            def call(*args, **kwargs):
                try:
                    bound = sig.bind_partial(*args, **kwargs).arguments
                except TypeError:
                    return old(*args, **kwargs)  # the program's own mistake: torch says it
                if is_nccl(bound.get("group")):
                    sim.check_nccl(old.__name__, list(_tensor_args(bound, Tensor)), cpu_ok(bound.get("group")))
                try:
                    return old(*args, **kwargs)
                except RuntimeError as e:
                    if sim.peer_gone(e):
                        sim.wait_as_nccl(e)
                    raise

            return call

        def object_coll_device(old):
            # object collectives (broadcast_object_list, all_gather_object) serialize into a tensor on the
            # group's device: NCCL's is cuda (its only device type), unless the program gave the cpu a
            # backend of its own; the gloo group under the simulated NCCL says cpu
            def call(group=None):
                return "cuda" if is_nccl(group) and not cpu_ok(group) else old(group)

            return call

        if callable(getattr(c10d, "_get_object_coll_device", None)) and not getattr(
                c10d._get_object_coll_device, "_devtrace_sim", False):
            c10d._get_object_coll_device = _named_like(object_coll_device(c10d._get_object_coll_device),
                                                       c10d._get_object_coll_device)
        # c10d's logger reads NCCL's version when a collective of an NCCL group raises (2.x): this CPU build
        # has no NCCL to ask, the simulated one answers with the version torch's CUDA wheels bundle
        torch = self.torch
        nccl_mod = getattr(getattr(torch, "cuda", None), "nccl", None)
        if nccl_mod is not None and not hasattr(torch._C, "_nccl_version"):
            nccl_mod.version = lambda: _SIM_NCCL_VERSION

        for mod in (dist, c10d):
            for name in _COLLECTIVES:
                old = getattr(mod, name, None)
                if callable(old) and not getattr(old, "_devtrace_sim", False):
                    setattr(mod, name, _named_like(collective(old), old))
            for name, make in (("new_group", new_group), ("get_backend", get_backend)):
                old = getattr(mod, name, None)
                if callable(old) and not getattr(old, "_devtrace_sim", False):
                    setattr(mod, name, _named_like(make(old), old))
            if hasattr(mod, "is_nccl_available"):
                mod.is_nccl_available = lambda: True

    def check_nccl(self, name, tensors, cpu_ok):
        """A collective of a group the program asked NCCL for, given tensors [(argument, tensor)], fails
        where it would on GPUs. torch 1.x: NCCL's own check refuses a tensor off the GPU. 2.x
        (RULES "nccl_cuda_only"): the c10d op is dispatched on its dispatch arguments' device (a GPU if
        one of them is on a GPU, else the cpu); on the cpu the group has no backend unless the program
        gave it one ("cpu:gloo,cuda:nccl"), on a GPU NCCL's check refuses any tensor off the GPU."""
        off = [t for _, t in tensors if not self.code(t)]
        if not off:
            return
        nccl_error = ValueError if T.has("nccl_value_error", self.version) else RuntimeError
        if not T.has("nccl_cuda_only", self.version):
            raise nccl_error(self.text("nccl_cpu_tensor"))
        only = _DISPATCHED_ON.get(name)
        dispatched = [t for n, t in tensors if only is None or n.partition("[")[0] in only]
        if any(self.code(t) for t in dispatched):
            raise nccl_error(self.text("nccl_cpu_tensor"))
        if not cpu_ok:
            raise RuntimeError(self.text("nccl_no_cpu_backend"))

    def install_data_parallel(self):
        """nn.DataParallel on simulated GPUs: PyTorch's own check that the module
        is on device_ids[0], the inputs moved there (the whole batch: the
        arithmetic is one CPU's anyway), the outputs gathered on output_device.
        What each replica would compute is not split up."""
        torch = self.torch
        DP = torch.nn.DataParallel

        def to_device(obj, dev):
            if isinstance(obj, torch.Tensor):
                return obj.to(dev)
            if isinstance(obj, (list, tuple)):
                return type(obj)(to_device(v, dev) for v in obj)
            if isinstance(obj, dict):
                return {k: to_device(v, dev) for k, v in obj.items()}
            return obj

        def forward(self, *inputs, **kwargs):
            if not self.device_ids:
                return self.module(*inputs, **kwargs)
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                if t.device != self.src_device_obj:
                    raise RuntimeError(sim.text("data_parallel", common=self.src_device_obj, odd=t.device))
            out = self.module(*to_device(inputs, self.src_device_obj), **to_device(kwargs, self.src_device_obj))
            dev = torch.device("cuda", self.output_device) if isinstance(self.output_device, int) else \
                torch.device(self.output_device)
            return to_device(out, dev) if dev != self.src_device_obj else out

        DP.forward = forward

        def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
            """nn.parallel.data_parallel, the functional form, as DataParallel.forward above."""
            from torch.cuda._utils import _get_device_index
            if not isinstance(inputs, tuple):
                inputs = (inputs,) if inputs is not None else ()
            if device_ids is None:
                device_ids = list(range(sim.n))
            if output_device is None:
                output_device = device_ids[0]
            device_ids = [_get_device_index(x, True) for x in device_ids]
            output_device = _get_device_index(output_device, True)
            src = torch.device("cuda", device_ids[0])
            for t in list(module.parameters()) + list(module.buffers()):
                if t.device != src:
                    raise RuntimeError(sim.text("data_parallel", common=src, odd=t.device))
            out = module(*to_device(inputs, src), **to_device(module_kwargs or {}, src))
            dev = torch.device("cpu") if output_device == -1 else torch.device("cuda", output_device)
            return to_device(out, dev) if dev != src else out

        sim = self
        parallel = sys.modules.get("torch.nn.parallel.data_parallel")
        if parallel is not None and callable(getattr(parallel, "data_parallel", None)):
            parallel.data_parallel = data_parallel
        if callable(getattr(torch.nn.parallel, "data_parallel", None)):
            torch.nn.parallel.data_parallel = data_parallel


# Indexing (the one list of the recorder and the simulation): a get takes cpu indices on any device, a set is
# a copy (basic indices) or index_put_ (advanced ones), whose indices and 0-dim value may be anywhere
_GETITEM = frozenset("__getitem__ index".split())
_SETITEM = frozenset("__setitem__ index_put index_put_ _index_put_impl_".split())
_INDEXING = _GETITEM | _SETITEM
# ops that take CPU integer tensors next to GPU ones: lengths of packed sequences and of CTC, batch sizes
_CPU_INTEGERS_OK = frozenset("_pack_padded_sequence pack_padded_sequence _pad_packed_sequence pad_packed_sequence "
                             "ctc_loss _ctc_loss lstm gru rnn_tanh rnn_relu".split())
# TensorIterator's binary ops (build_binary_op, comparisons, binary float ops: allow_cpu_scalars, at most one
# 0-dim cpu input next to a GPU) and unary ones (no cpu scalar: only their out= can be elsewhere), by the
# name a call gives them without "__", "_" of an in-place form, or the "r"/"i" of a reflected or in-place dunder
_BINARY = frozenset("""add sub subtract mul multiply div divide true_divide truediv floor_divide floordiv remainder
    mod fmod maximum minimum fmax fmin atan2 arctan2 pow eq ne lt le gt ge greater less equal not_equal greater_equal
    less_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor and or xor lshift rshift hypot
    copysign nextafter xlogy heaviside""".split())
_UNARY = frozenset("abs neg negative exp log log2 log10 sqrt rsqrt sin cos tan tanh sigmoid floor ceil round trunc "
                   "reciprocal erf expm1 log1p sign".split())
# ops whose check takes their first operand's device as the common one and excepts no 0-dim cpu tensor: the
# kernels with a generated device check (sim_texts.ATEN), convolutions (their input's type), RNNs
# (check_attributes: the input against hidden states, then parameters), masked_fill (self and mask),
# take_along_dim (checkDevice with self's)
_FIRST_IS_COMMON = frozenset("""conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution
    _convolution lstm gru rnn_tanh rnn_relu masked_fill masked_fill_ take_along_dim""".split())


def _base_op(name):
    """An op's TensorIterator name: "add" of "__radd__", "__iadd__", "add_"."""
    if name.startswith("__") and name.endswith("__"):
        n = name[2:-2]
        return n[1:] if n[:1] in ("r", "i") and n[1:] in _BINARY else n
    return name[:-1] if name.endswith("_") else name


def _in_place(name):
    return (name.endswith("_") and not name.endswith("__")) or (name.startswith("__i") and _base_op(name) != name[2:-2])


def is_strict(name):
    """Whether the op's device check is a kernel's own (first operand's device common, no cpu scalar)."""
    return name in T.ATEN or name in _FIRST_IS_COMMON


def kernel_order(order, ops):
    """The operands ((argument, tensor) pairs) in the order the CUDA kernel checks them (ATEN's entry: its
    (call's name, kernel's name) pairs), each found by the call's name for it, else by the kernel's (a
    method's "self"); the others after them as they came."""
    pos = {}
    for i, (n, _) in enumerate(ops):
        pos.setdefault(_base_name(n), []).append(i)
    idx = []
    for py, at in order:
        idx += [i for i in pos.get(py, pos.get(at, ())) if i not in idx]
    idx += [i for i in range(len(ops)) if i not in idx]
    return [ops[i] for i in idx]


def counted_operands(name, ops, device_of, strict=False):
    """The one device rule of the simulation and the recorder (read from PyTorch's source: TensorIterator's
    compute_types, the generated device checks of aten/src/ATen/core/adaption.cpp, TensorAdvancedIndexing.cpp's
    index and index_put_, python_variable_indexing.cpp's setitem): of an op's tensor operands ((argument,
    tensor) pairs, in the order the op checks them), those PyTorch compares, as (kind, [(index in ops,
    argument, device)], scalars): kind "strict" (the first one's device is the common one), "iter"
    (TensorIterator: the first one not on the cpu), "index" (a get's indices: on the cpu or self's device);
    scalars: whether more 0-dim cpu tensors joined a GPU's than the op takes. device_of(t): "cpu", "cuda:1",
    "meta"."""
    devs = [device_of(t) for _, t in ops]
    if name in _GETITEM:
        # a 0-dim integer index selects by its value, wherever it is; a cpu index may index any device
        keep = [0] + [i for i in range(1, len(ops)) if devs[i] != "cpu"
                      and not (ops[i][1].dim() == 0 and not ops[i][1].is_floating_point())]
        return "index", [(i, ops[i][0], devs[i]) for i in keep if ops], False
    if name in _SETITEM:
        values = [i for i, (n, _) in enumerate(ops) if _base_name(n) == "values"]
        indices = [i for i, (n, _) in enumerate(ops) if _base_name(n) == "indices"]
        if name == "__setitem__" and all(ops[i][1].dim() == 0 and not ops[i][1].is_floating_point() for i in indices):
            return "iter", [], False  # basic indexing: a copy into a view, which may cross devices
        v = ops[values[0]][1] if values else None
        if v is None or (v.dim() == 0 and v.numel() == 1):
            return "iter", [], False  # a 0-dim value is moved to self's device; indices always are (make_info)
        # index_put_'s masked_fill_ path: one bool mask on self's device and a 1-element cpu value
        masks = [i for i in indices if str(ops[i][1].dtype) in ("torch.bool", "torch.uint8")]
        if v.numel() == 1 and devs[values[0]] == "cpu" and len(indices) == 1 and masks and devs[masks[0]] == devs[0]:
            return "iter", [], False
        return "iter", [(0, ops[0][0], devs[0]), (values[0], ops[values[0]][0], devs[values[0]])], False
    if name == "where":
        # where's out device is its first operand's not on the cpu; a 0-dim operand elsewhere is moved there
        out = next((d for d in devs if d != "cpu"), "cpu")
        keep = [i for i in range(len(ops)) if devs[i] == out or ops[i][1].dim() != 0]
        return "iter", [(i, ops[i][0], devs[i]) for i in keep], False
    if name in ("masked_fill", "masked_fill_"):
        keep = [i for i, (n, _) in enumerate(ops) if _base_name(n) in ("self", "input", "mask")] or [0, 1][:len(ops)]
        return "strict", [(i, ops[i][0], devs[i]) for i in keep], False
    if strict:
        skip = name in _CPU_INTEGERS_OK
        keep = [i for i in range(len(ops)) if not (skip and i > 0 and devs[i] == "cpu"
                                                   and not ops[i][1].is_floating_point())]
        return "strict", [(i, ops[i][0], devs[i]) for i in keep], False
    # TensorIterator: outputs first (out=, an in-place op's self); 0-dim cpu inputs may join a GPU's, a
    # binary op's one of them, a unary op's none
    order = [i for i, (n, _) in enumerate(ops) if n == "out"] + [i for i, (n, _) in enumerate(ops) if n != "out"]
    outputs = {i for i, (n, _) in enumerate(ops) if n == "out"} | ({0} if _in_place(name) and ops else set())
    gpu = any(d != "cpu" for d in devs)
    base = _base_op(name)
    limit = 1 if base in _BINARY else 0 if base in _UNARY else len(ops)
    keep, scalars, over = [], 0, False
    for i in order:
        t = ops[i][1]
        if gpu and devs[i] == "cpu" and i not in outputs and t.dim() == 0 and limit:
            scalars += 1
            if scalars > limit and not over:
                over = True
                keep.append((i, ops[i][0], "cpu scalars"))  # where TensorIterator finds one too many
            continue
        if gpu and devs[i] == "cpu" and name in _CPU_INTEGERS_OK and i > 0 and not t.is_floating_point():
            continue  # lengths and batch sizes stay on the cpu
        keep.append((i, ops[i][0], devs[i]))
    return "iter", keep, over


def operands_apart(name, ops, device_of, strict=False):
    """PyTorch's verdict on an op's operands: None when their devices go together, else (kind, the
    common device, the odd one, its argument, its index in ops); kind "devices", "index" (the common
    device is then self's) or "cpu_scalars" (more 0-dim cpu tensors than a binary op takes)."""
    kind, keep, _ = counted_operands(name, ops, device_of, strict)
    if not keep:
        return None
    if kind == "index":
        self_dev = keep[0][2]
        odd = next(((i, n, d) for i, n, d in keep[1:] if d != self_dev), None)
        return None if odd is None else ("index", self_dev, odd[2], odd[1], odd[0])
    if kind == "strict":
        common = keep[0][2]
    else:
        common = next((d for _, _, d in keep if d not in ("cpu", "cpu scalars")), "cpu")
    for i, n, d in keep:
        if d == "cpu scalars":
            return "cpu_scalars", common, "cpu", n, i
        if d != common:
            return "devices", common, d, n, i
    return None


def device_of_result(name, ops, device_of):
    """The device of an op's results when its operands' devices go together."""
    if not ops:
        return "cpu"
    if name in _INDEXING or is_strict(name):
        return device_of(ops[0][1])
    return next((d for d in (device_of(t) for _, t in ops) if d != "cpu"), "cpu")


def _code_of_name(dev):
    """A device's name as a probe code: "cuda:K" is CUDA | K, anything else 0."""
    if isinstance(dev, str) and dev.startswith("cuda"):
        return CUDA | int(dev.partition(":")[2] or 0)
    return 0


# torch.distributed's collectives and point-to-point calls, checked on a group the program asked NCCL for
# The NCCL version torch.cuda.nccl.version() gives under the simulation (torch 2.x's CUDA wheels bundle NCCL 2.x):
# only c10d's logger reads it, when a collective of an NCCL group raises.
_SIM_NCCL_VERSION = (2, 21, 5)

_COLLECTIVES = ("all_reduce broadcast reduce all_gather all_gather_into_tensor _all_gather_base reduce_scatter "
                "reduce_scatter_tensor _reduce_scatter_base all_to_all all_to_all_single gather scatter send recv "
                "isend irecv all_reduce_coalesced all_gather_coalesced").split()


# The collectives whose c10d op is dispatched on some of their tensor arguments only (the others reach
# the op as a list of lists, Tensor[][], which the dispatcher does not look into; torch/csrc/distributed/
# c10d/Ops.cpp): the Python arguments it is dispatched on. Every other collective: all its tensors.
_DISPATCHED_ON = {"all_gather": ("tensor",), "gather": ("tensor",), "scatter": ("tensor",),
                  "reduce_scatter": ("output",), "all_gather_coalesced": ("input_tensor_list",)}


# gloo's texts for a peer whose process is gone (a rank that failed and exited)
_GLOO_PEER_GONE = ("Connection closed by peer", "Connection reset by peer")


def _tensor_args(bound, Tensor):
    """(argument name, tensor) of a call's bound arguments, lists of tensors as "name[i]"."""
    for n, v in bound.items():
        if isinstance(v, Tensor):
            yield n, v
        elif isinstance(v, (list, tuple)):
            for i, e in enumerate(v):
                if isinstance(e, Tensor):
                    yield "%s[%d]" % (n, i), e


def _named_like(new, old):
    """new, wrapping old, under old's name and doc."""
    new._devtrace_sim = True
    new.__wrapped__ = old
    new.__name__, new.__qualname__, new.__doc__ = old.__name__, getattr(old, "__qualname__", old.__name__), old.__doc__
    new.__module__ = getattr(old, "__module__", None)
    return new


def _base_name(arg):
    """An operand's argument without its position in a list: "tensors" of "tensors[1]"."""
    return arg.split("[", 1)[0] if arg else arg


def _tensors_in(obj, torch, depth=0, seen=None):
    """The tensors in what torch.load returned: nested dicts, lists, tuples, a module's
    parameters and buffers, an object's attributes."""
    seen = set() if seen is None else seen
    if depth > 16 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        yield obj
        return
    if isinstance(obj, torch.nn.Module):
        for t in list(obj.parameters()) + list(obj.buffers()):
            yield t
        items = [v for k, v in vars(obj).items() if not k.startswith("_")]
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = list(vars(obj).values())
    else:
        return
    for v in items:
        for t in _tensors_in(v, torch, depth + 1, seen):
            yield t


def _legacy_names(torch):
    return {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
            torch.int64: "Long", torch.int32: "Int", torch.uint8: "Byte", torch.bool: "Bool"}


_LEGACY = {}


# ops that read another tensor's shape only: no device check
_SHAPE_ONLY = frozenset("expand_as view_as reshape_as broadcast_to is_same_size new_empty new_zeros new_ones new_full "
                        "new_tensor".split())


def _with_device(text, dev):
    """repr of a tensor with ", device='cuda:0'" where PyTorch puts it: after the values."""
    for marker in (", dtype=", ", grad_fn=", ", requires_grad=", ", size=", ", layout="):
        i = text.find(marker)
        if i >= 0:
            return text[:i] + ", device='%s'" % dev + text[i:]
    if text.endswith(")"):
        return text[:-1] + ", device='%s')" % dev
    return text
