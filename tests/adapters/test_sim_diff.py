"""The differential test of the simulated GPUs (DEVTRACE_SIM_CUDA): do they raise where PyTorch raises, with
PyTorch's text, and run where it runs? Three references, each for its own cases:

- the table measured on a GPU (tests/adapters/data/torch2.11-device-errors.txt, PyTorch 2.11 on an H200): every row
  run under the simulation (its version's own on 2.x; 2.11 faked on 1.x) must raise the row's text or run as
  the row did: 0 disagreements;
- generated calls (hypothesis: shapes, dtypes, 0-dim operands, views, in-place and out= forms, indexing get
  and set with basic and advanced indices, copy_, index_put_, where, cat/stack, an LSTM's hidden state,
  torch.nn.functional ops) on cpu, cuda:0 and cuda:1, against ORACLE below: PyTorch's device rules as its
  source states them (each rule says where it is read from);
- the same calls on the cpu and the meta device, against the same program run without devtrace: the meta
  device is real on a CPU build, and the simulation must leave it as torch has it (same error, same result).

Run with pytest (`pytest tests/adapters/test_sim_diff.py`, DEVTRACE=the devtrace binary, DEVTRACE_TEST_PYTHON=the
python whose torch is tested, default this one) or as a script (`python tests/adapters/test_sim_diff.py DEVTRACE
[PYTHON [WORK_DIR]]`, what ctest runs; no pytest needed). Without hypothesis the generated part is skipped
with a printed reason; the table part runs regardless. docs/torch2.md lists the case families and the
disagreements that remain, with their reasons.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "data", "torch2.11-device-errors.txt")
CASES = os.path.join(HERE, "sim_diff_cases.py")
DEVS = ("cpu", "cuda:0", "cuda:1", "meta")
N_CASES = int(os.environ.get("DEVTRACE_SIM_DIFF_CASES", "400"))  # distinct ones: fewer

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # the generated part needs it; the table's does not
    hypothesis = st = None


def _config(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    devtrace = argv[0] if argv else os.environ.get("DEVTRACE", "")
    python = argv[1] if len(argv) > 1 else os.environ.get("DEVTRACE_TEST_PYTHON", sys.executable)
    work = argv[2] if len(argv) > 2 else tempfile.mkdtemp(prefix="sim-diff-")
    os.makedirs(work, exist_ok=True)
    return devtrace, python, work


def torch_version(python):
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    major, minor = out.stdout.strip().split("+")[0].split(".")[:2]
    return int(major), int(minor)


def run_cases(devtrace, python, work, cases, name, simulated):
    """Runs cases in one process (sim_diff_cases.py): under devtrace with 2 simulated GPUs, or plainly."""
    src, dst = os.path.join(work, name + ".json"), os.path.join(work, name + ".out.json")
    with open(src, "w") as f:
        json.dump(cases, f)
    env = dict(os.environ)
    for k in ("DEVTRACE_SIM_CUDA", "DEVTRACE_SIM_TORCH_VERSION"):
        env.pop(k, None)
    env["DEVTRACE_QUIET"] = "1"
    cmd = [python, CASES, src, dst]
    if simulated:
        env["DEVTRACE_SIM_CUDA"] = "2"
        cmd = [devtrace, "run", "-o", os.path.join(work, name + ".db"), "--overwrite", "--"] + cmd
    p = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0 or not os.path.exists(dst):
        raise AssertionError("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    with open(dst) as f:
        return json.load(f)


# ------------------------------------------------------------------ the oracle: PyTorch's rules, from its source

TI = "Expected all tensors to be on the same device, but found at least two devices, {common} and {odd}!"
KERNEL = ("Expected all tensors to be on the same device, but got {arg} is on {odd}, different from other tensors "
          "on {common} (when checking argument in method {method})")
INDEX = "indices should be either on cpu or on the same device as the indexed tensor ({dev})"
SCALARS = "Trying to pass too many CPU scalars to non-CPU kernel!"
MASK = "expected self and mask to be on the same device, but got mask on {mask} and self on {self}"
RNN = "Input and {what} tensors are not at the same device, found input tensor at {input} and {what} tensor at {odd}"


def tensor_iterator(ops, outputs, cpu_scalars):
    """TensorIterator's compute_types (aten/src/ATen/TensorIterator.cpp): the common device is the first
    operand's (outputs first) that is not on the cpu; a 0-dim cpu input may join a GPU's when the op
    allows cpu scalars (binary ops: one of them), any other operand elsewhere raises."""
    common = next((d for d, _ in ops if d != "cpu"), "cpu")
    seen = 0
    for i, (d, dim) in enumerate(ops):
        if common != "cpu" and cpu_scalars and i not in outputs and dim == 0 and d == "cpu":
            seen += 1
            if seen > cpu_scalars:
                return ("error", SCALARS)
            continue
        if d != common:
            return ("error", TI.format(common=common, odd=d))
    return ("ok", common)


def kernel_check(ops, method):
    """The generated device check of a CUDA kernel (torchgen's gen_device_check, adaption.cpp's
    check_and_update_common_device): out= and positional tensors in the schema's order, the first one's
    device is the common one, no exception for 0-dim cpu tensors. ops: (kernel argument name, device)."""
    common = ops[0][1]
    for arg, d in ops[1:]:
        if d != common:
            return ("error", KERNEL.format(arg=arg, odd=d, common=common, method=method))
    return ("ok", common)


def oracle(case):
    """("ok", the result's device) or ("error", PyTorch's text) for a case on cpu and CUDA devices."""
    T = case["tensors"]
    dev = {k: v["dev"] for k, v in T.items()}
    dim = {k: len(v["shape"]) for k, v in T.items()}
    fam = case["family"]
    if fam == "binary":  # TensorIterator binary ops: allow_cpu_scalars, at most one (TensorIteratorConfig)
        form = case["form"]
        order = (["o"] if form == "out" else []) + ["a", "b"]
        outputs = {0} if form in ("out", "inplace") else set()
        return tensor_iterator([(dev[k], dim[k]) for k in order], outputs, 1)
    if fam == "unary_out":  # build_borrowing_unary_op: no cpu scalar allowed
        return tensor_iterator([(dev["o"], dim["o"]), (dev["a"], dim["a"])], {0}, 0)
    if fam == "where":
        # where (TensorCompare.cpp): the result's device is the first operand's not on the cpu; a 0-dim operand
        # on another device is moved there; then TensorIterator over (out, condition, self, other)
        out = next((dev[k] for k in ("c", "a", "b") if dev[k] != "cpu"), "cpu")
        ops = [(out, 1)] + [(out if dim[k] == 0 else dev[k], dim[k]) for k in ("c", "a", "b")]
        return tensor_iterator(ops, {0}, 0)
    if fam == "kernel":
        return kernel_check([(arg, dev[k]) for arg, k in case["kernel"]], case["method"])
    if fam == "get":
        # index (TensorAdvancedIndexing.cpp, check_indices_on_cpu_or_selfdevice): an index tensor on the cpu or
        # on self's device; a 0-dim integer index is a select by its value (TensorIndexing.h)
        for k in case["indices"]:
            if dim[k] and dev[k] not in ("cpu", dev["a"]):
                return ("error", INDEX.format(dev=dev["a"]))
        return ("ok", dev["a"])
    if fam == "set":
        return index_put(case, dev, dim)
    if fam == "copy":  # copy_ crosses devices (Copy.cpp)
        return ("ok", dev["a"])
    if fam == "masked_fill":  # masked_fill__cuda (Indexing.cu): self and mask on one device
        if dev["a"] != dev["m"]:
            return ("error", MASK.format(mask=dev["m"], self=dev["a"]))
        return ("ok", dev["a"])
    if fam == "lstm":
        # RNN.cpp's check_attributes: the input against the hidden states, then the parameters
        for what, k in (("hidden", "h"), ("hidden", "c"), ("parameter", "lstm")):
            if dev[k] != dev["s"]:
                return ("error", RNN.format(what=what, input=dev["s"], odd=dev[k]))
        return ("ok", dev["s"])
    raise KeyError(fam)


def index_put(case, dev, dim):
    """A set (python_variable_indexing.cpp THPVariable_setitem, TensorAdvancedIndexing.cpp _index_put_impl_):
    with basic indices only (ints, slices, 0-dim integer tensors) a copy into a view, which crosses devices;
    else index_put_: a 0-dim value is moved to self's device, and so are the indices (make_info); a
    1-element cpu value with one bool mask on self's device is masked_fill_; otherwise TensorIterator over
    (self, value)."""
    a, v = "a", "v"
    shape = case["tensors"][v]["shape"]
    numel = 1
    for s in shape:
        numel *= s
    tensors = [k for k in case["indices"]]
    if case["form"] == "setitem" and all(dim[k] == 0 for k in tensors):
        return ("ok", dev[a])
    if dim[v] == 0:
        return ("ok", dev[a])
    masks = [k for k in tensors if case["tensors"][k].get("dtype") == "bool"]
    if numel == 1 and dev[v] == "cpu" and len(tensors) == 1 and masks and dev[masks[0]] == dev[a]:
        return ("ok", dev[a])
    return tensor_iterator([(dev[a], dim[a]), (dev[v], dim[v])], {0}, 0)


# ------------------------------------------------------------------ the generated cases

def _spec(dev, shape, dtype="float32", view=None, high=None):
    s = {"dev": dev, "shape": list(shape), "dtype": dtype}
    if view:
        s["view"] = view
    if high:
        s["high"] = high
    return s


if st is not None:
    devices = st.sampled_from(DEVS)
    views = st.sampled_from([None, None, "t", "slice", "expand"])

    @st.composite
    def binary(draw):
        op = draw(st.sampled_from(["add", "sub", "mul", "maximum", "atan2", "eq"]))
        dunder = ["dunder"] if op in ("add", "sub", "mul", "eq") else []
        form = draw(st.sampled_from(["fn", "method", "inplace", "out"] + dunder))
        if (op == "eq" and form in ("inplace", "out")) or (op == "maximum" and form == "inplace"):
            form = "fn"  # no eq_ out of a bool result here, no maximum_ at all
        sa = draw(st.sampled_from([(3, 4), (4,), ()]))
        sb = draw(st.sampled_from([(3, 4), (4,), ()]))
        if form == "inplace" and len(sa) < len(sb):
            sa = sb
        T = {"a": _spec(draw(devices), sa, view=draw(views) if sa == (3, 4) and form != "inplace" else None),
             "b": _spec(draw(devices), sb, view=draw(views) if sb == (3, 4) else None)}
        sym = {"add": "+", "sub": "-", "mul": "*", "eq": "=="}.get(op)
        case = {"family": "binary", "form": form, "tensors": T,
                "expr": {"fn": "torch.%s(a, b)" % op, "method": "a.%s(b)" % op, "inplace": "a.%s_(b)" % op,
                         "out": "torch.%s(a, b, out=o)" % op, "dunder": "a %s b" % sym}[form]}
        if form == "out":
            T["o"] = _spec(draw(devices), max(sa, sb, key=len))
            case["target"] = "o"
        if form == "inplace":
            case["target"] = "a"
        return case

    @st.composite
    def unary_out(draw):
        op = draw(st.sampled_from(["neg", "exp", "sigmoid"]))
        s = draw(st.sampled_from([(3, 4), ()]))
        return {"family": "unary_out", "tensors": {"a": _spec(draw(devices), s), "o": _spec(draw(devices), s)},
                "expr": "torch.%s(a, out=o)" % op, "target": "o"}

    @st.composite
    def where(draw):
        T = {"c": _spec(draw(devices), draw(st.sampled_from([(3, 4), (4,), ()])), "bool"),
             "a": _spec(draw(devices), draw(st.sampled_from([(3, 4), ()]))),
             "b": _spec(draw(devices), draw(st.sampled_from([(3, 4), ()])))}
        return {"family": "where", "tensors": T, "expr": "torch.where(c, a, b)"}

    # the kernels with a generated device check: (call, tensors, the kernel's (argument, tensor) order, method)
    KERNELS = [
        ("torch.mm(a, b)", {"a": (3, 4), "b": (4, 5)}, [("self", "a"), ("mat2", "b")], "wrapper_CUDA_mm"),
        ("a @ b", {"a": (3, 4), "b": (4, 5)}, [("self", "a"), ("mat2", "b")], "wrapper_CUDA_mm"),
        ("torch.bmm(a, b)", {"a": (2, 3, 4), "b": (2, 4, 5)}, [("self", "a"), ("mat2", "b")], "wrapper_CUDA_bmm"),
        ("a.index_select(0, i)", {"a": (3, 4), "i": ("int64", (2,), 3)}, [("self", "a"), ("index", "i")],
         "wrapper_CUDA__index_select"),
        ("torch.index_select(a, 1, i)", {"a": (3, 4), "i": ("int64", (), 4)}, [("self", "a"), ("index", "i")],
         "wrapper_CUDA__index_select"),
        ("torch.cat([a, b])", {"a": (3, 4), "b": (2, 4)}, [("tensors", "a"), ("tensors", "b")], "wrapper_CUDA_cat"),
        ("torch.stack([a, b, c])", {"a": (3, 4), "b": (3, 4), "c": (3, 4)},
         [("tensors", "a"), ("tensors", "b"), ("tensors", "c")], "wrapper_CUDA_cat"),
        ("torch.gather(a, 1, i)", {"a": (3, 4), "i": ("int64", (3, 2), 4)}, [("self", "a"), ("index", "i")],
         "wrapper_CUDA_gather"),
        ("torch.dot(a, b)", {"a": (4,), "b": (4,)}, [("self", "a"), ("tensor", "b")], "wrapper_CUDA__dot"),
        ("torch.clamp(a, min=b)", {"a": (3, 4), "b": (4,)}, [("self", "a"), ("min", "b")],
         "wrapper_CUDA_clamp_Tensor"),
        ("torch.clamp(a, min=b)", {"a": (3, 4), "b": ()}, [("self", "a"), ("min", "b")],
         "wrapper_CUDA_clamp_Tensor"),
        ("F.linear(a, w)", {"a": (2, 4), "w": (3, 4)}, [("self", "a"), ("mat2", "w")], "wrapper_CUDA_mm"),
        ("F.linear(a, w, b)", {"a": (2, 4), "w": (3, 4), "b": (3,)}, [("self", "b"), ("mat1", "a"), ("mat2", "w")],
         "wrapper_CUDA_addmm"),
        ("F.embedding(i, w)", {"i": ("int64", (3,), 10), "w": (10, 4)}, [("self", "w"), ("index", "i")],
         "wrapper_CUDA__index_select"),
        ("F.embedding(i, w)", {"i": ("int64", (), 10), "w": (10, 4)}, [("self", "w"), ("index", "i")],
         "wrapper_CUDA__index_select"),
        ("F.cross_entropy(a, i)", {"a": (3, 5), "i": ("int64", (3,), 5)}, [("self", "a"), ("target", "i")],
         "wrapper_CUDA_nll_loss_forward"),
        ("F.cross_entropy(a, i, weight=w)", {"a": (3, 5), "i": ("int64", (3,), 5), "w": (5,)},
         [("self", "a"), ("target", "i"), ("weight", "w")], "wrapper_CUDA_nll_loss_forward"),
        ("F.layer_norm(a, (4,), weight=w, bias=b)", {"a": (3, 4), "w": (4,), "b": (4,)},
         [("input", "a"), ("weight", "w"), ("bias", "b")], "wrapper_CUDA__native_layer_norm"),
    ]

    @st.composite
    def kernel(draw):
        expr, shapes, order, method = draw(st.sampled_from(KERNELS))
        T = {}
        for k, s in shapes.items():
            if s and isinstance(s[0], str):
                T[k] = _spec(draw(devices), s[1], s[0], high=s[2])
            else:
                T[k] = _spec(draw(devices), s, view=draw(views) if len(s) == 2 else None)
        return {"family": "kernel", "tensors": T, "expr": expr, "kernel": [[a, k] for a, k in order],
                "method": method}

    @st.composite
    def get(draw):
        kind = draw(st.sampled_from(["long", "long0", "mask", "cols", "two"]))
        T = {"a": _spec(draw(devices), (3, 4), view=draw(views))}
        if kind == "long":
            T["i"] = _spec(draw(devices), (2,), "int64", high=3)
            expr, idx = "a[i]", ["i"]
        elif kind == "long0":
            T["i"] = _spec(draw(devices), (), "int64", high=3)
            expr, idx = "a[i]", ["i"]
        elif kind == "mask":
            T["i"] = _spec(draw(devices), (3,), "bool")
            expr, idx = "a[i]", ["i"]
        elif kind == "cols":
            T["i"] = _spec(draw(devices), (2,), "int64", high=4)
            expr, idx = "a[:, i]", ["i"]
        else:
            T["i"] = _spec(draw(devices), (2,), "int64", high=3)
            T["j"] = _spec(draw(devices), (2,), "int64", high=4)
            expr, idx = "a[i, j]", ["i", "j"]
        return {"family": "get", "tensors": T, "expr": expr, "indices": idx}

    @st.composite
    def set_(draw):
        form = draw(st.sampled_from(["setitem", "setitem", "index_put_"]))
        kind = draw(st.sampled_from(["int", "slice", "long0", "long", "mask"] if form == "setitem" else
                                    ["long0", "long", "mask"]))
        T = {"a": _spec(draw(devices), (3, 4))}
        idx = []
        if kind == "int":
            key, vs = "1", [(4,), ()]
        elif kind == "slice":
            key, vs = "slice(0, 2)", [(2, 4), (4,), ()]
        elif kind == "long0":
            T["i"] = _spec(draw(devices), (), "int64", high=3)
            key, vs, idx = "i", [(4,), ()], ["i"]
        elif kind == "long":
            T["i"] = _spec(draw(devices), (2,), "int64", high=3)
            key, vs, idx = "i", [(2, 4), (4,), ()], ["i"]
        else:
            T["i"] = _spec(draw(devices), (3,), "bool")
            key, vs, idx = "i", [(4,), (1,), ()], ["i"]
        T["v"] = _spec(draw(devices), draw(st.sampled_from(vs)))
        expr = "a.__setitem__(%s, v)" % key if form == "setitem" else "a.index_put_((i,), v)"
        return {"family": "set", "form": form, "tensors": T, "expr": expr, "indices": idx, "target": "a"}

    @st.composite
    def copy(draw):
        s = draw(st.sampled_from([(3, 4), (4,), ()]))
        return {"family": "copy", "tensors": {"a": _spec(draw(devices), (3, 4)), "b": _spec(draw(devices), s)},
                "expr": "a.copy_(b)", "target": "a"}

    @st.composite
    def masked_fill(draw):
        T = {"a": _spec(draw(devices), (3, 4), view=draw(views)),
             "m": _spec(draw(devices), draw(st.sampled_from([(3, 4), (4,), ()])), "bool")}
        return {"family": "masked_fill", "tensors": T, "expr": "a.masked_fill(m, 0.5)"}

    @st.composite
    def lstm(draw):
        T = {"lstm": dict(_spec(draw(devices), (4, 3)), module="lstm"), "s": _spec(draw(devices), (5, 2, 4)),
             "h": _spec(draw(devices), (1, 2, 3)), "c": _spec(draw(devices), (1, 2, 3))}
        return {"family": "lstm", "tensors": T, "expr": "lstm(s, (h, c))"}

    @st.composite
    def any_case(draw):
        case = draw(st.one_of(binary(), unary_out(), where(), kernel(), get(), set_(), copy(), masked_fill(),
                              lstm()))
        devs = {v["dev"] for v in case["tensors"].values()}
        if "meta" in devs and devs - {"meta", "cpu"}:
            # meta next to a simulated GPU: not compared (docs/torch2.md); the meta one becomes a cpu one
            for v in case["tensors"].values():
                if v["dev"] == "meta":
                    v["dev"] = "cpu"
        return case


def generated_cases(n=N_CASES):
    """n cases from hypothesis, the same ones every run (derandomized), duplicates dropped."""
    out, seen = [], set()

    @hypothesis.settings(max_examples=n, derandomize=True, database=None, deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(any_case())
    def collect(case):
        key = json.dumps(case, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(case)

    collect()
    return out


def compare_generated(devtrace, python, work):
    """The generated cases under the simulation against the oracle (GPU devices) and against torch run
    plainly (cpu and meta only); returns (the number of cases compared, their families, the disagreements)."""
    version = torch_version(python)
    cases = generated_cases()
    sim = run_cases(devtrace, python, work, cases, "generated", True)
    plain_idx = [i for i, c in enumerate(cases) if not any(v["dev"].startswith("cuda") for v in c["tensors"].values())]
    plain = run_cases(devtrace, python, work, [cases[i] for i in plain_idx], "generated-plain", False)
    plain = dict(zip(plain_idx, plain))
    bad, families = [], {}
    for i, (case, got) in enumerate(zip(cases, sim)):
        families[case["family"]] = families.get(case["family"], 0) + 1
        if got["raised"].startswith("setup"):
            bad.append((case, got, "the case's setup failed"))
            continue
        if i in plain:
            want = plain[i]
            if (got["raised"], got["text"], got["device"]) != (want["raised"], want["text"], want["device"]):
                bad.append((case, got, "without devtrace: %r" % (want,)))
            continue
        kind, what = oracle(case)
        if kind == "ok":
            if got["raised"] or got["device"] != what:
                bad.append((case, got, "PyTorch runs it, result on %s" % what))
        elif got["raised"] != "RuntimeError":
            bad.append((case, got, "PyTorch raises: %s" % what))
        elif (version >= (2, 1) or case["family"] not in ("kernel",)) and got["text"] != what \
                and not (case["family"] == "lstm" or (version < (2, 0) and case["family"] == "masked_fill")):
            bad.append((case, got, "PyTorch's text: %s" % what))
        elif case["family"] == "lstm" and got["text"] != what:
            bad.append((case, got, "PyTorch's text: %s" % what))
    return len(cases), families, bad


# ------------------------------------------------------------------ the measured table

def table_rows():
    rows = {}
    with open(TABLE) as f:
        for line in f:
            if not line.startswith("#") and line.strip():
                row = line.rstrip("\n").split("|")
                rows[row[0]] = row[4] if row[2] == "yes" else ""
    return rows


def compare_table(devtrace, python, work):
    """Every row of the table under the simulation: (rows compared, rows this torch cannot run, disagreements)."""
    with open(os.path.join(HERE, "torch_table_ops.py")) as f:
        code = f.read().replace("sys.argv[1]", repr(TABLE))
    script = os.path.join(work, "table.py")
    with open(script, "w") as f:
        f.write(code)
    env = dict(os.environ)
    env.update({"DEVTRACE_SIM_CUDA": "2", "DEVTRACE_QUIET": "1"})
    env.pop("DEVTRACE_SIM_TORCH_VERSION", None)
    if torch_version(python) < (2, 1):
        env["DEVTRACE_SIM_TORCH_VERSION"] = "2.11"  # 1.x: the table's version faked, its texts compared
    p = subprocess.run([devtrace, "run", "-o", os.path.join(work, "table.db"), "--overwrite", "--", python, script],
                       env=env, cwd=work, capture_output=True, text=True, timeout=600)
    got = json.loads(p.stdout)
    rows = table_rows()
    unavailable = sorted(k for k in rows if got.get(k, "").startswith("unavailable"))
    bad = [(k, rows[k], got.get(k)) for k in rows if k not in unavailable and got.get(k) != rows[k]]
    return len(rows) - len(unavailable), unavailable, bad


# ------------------------------------------------------------------ pytest and the script

def test_table():
    devtrace, python, work = _config([])
    if not devtrace:
        import pytest

        pytest.skip("DEVTRACE (the devtrace binary) is not set")
    n, unavailable, bad = compare_table(devtrace, python, work)
    assert not bad, bad


def test_generated():
    devtrace, python, work = _config([])
    import pytest

    if not devtrace:
        pytest.skip("DEVTRACE (the devtrace binary) is not set")
    if hypothesis is None:
        pytest.skip("hypothesis is not installed")
    n, families, bad = compare_generated(devtrace, python, work)
    assert not bad, json.dumps(bad[:20], indent=1)


def main():
    devtrace, python, work = _config()
    failed = 0
    n, unavailable, bad = compare_table(devtrace, python, work)
    print("%s the measured table: %d rows compared, %d disagreements%s" % (
        "ok  " if not bad else "FAIL", n, len(bad),
        "; not run by this torch: %s" % ", ".join(unavailable) if unavailable else ""))
    for k, want, got in bad:
        print("  %s: table %r, simulation %r" % (k, want, got))
    failed += bool(bad)
    if hypothesis is None:
        print("skip the generated cases: hypothesis is not installed for %s" % sys.executable)
    else:
        n, families, bad = compare_generated(devtrace, python, work)
        print("%s generated cases: %d compared (%s), %d disagreements" % (
            "ok  " if not bad else "FAIL", n, ", ".join("%s %d" % kv for kv in sorted(families.items())), len(bad)))
        for case, got, why in bad[:40]:
            print("  %s  %s\n    simulation: %s %s (result on %s)\n    %s" % (
                case["expr"], {k: v["dev"] + str(tuple(v["shape"])) for k, v in case["tensors"].items()},
                got["raised"] or "ran", got["text"], got["device"], why))
        failed += bool(bad)
    print("%d passed, %d failed" % (2 - failed - (hypothesis is None), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
