#!/usr/bin/env python3
"""The mutation benchmark (issue 41, item 6): one-line device-placement mutants of any PyTorch program, each run
on a simulated GPU under `devtrace run`, and devtrace's report and patch scored against the mutated statement.

One program:   mutbench.py --program DIR --run "python main.py ARGS" [--files a.py,b.py] [--json OUT]
A program list: mutbench.py --list scripts/corpus/mutbench.json --src /work/mutbench/src [--only NAMES]
                [--half tune|heldout] [--json OUT] [--table OUT.md]
Common options: --devtrace build/viewer/devtrace, --python INTERP (what the word `python` of --run means),
                -j N (at most 2), --timeout S, --max-per-kind N, --list-mutants (generate only, run nothing)

The mutants come from Python's `ast` (the sites where the program places tensors); nothing of the program is
hard-coded here. A mutant is KEPT when it fails on one simulated GPU (DEVTRACE_SIM_CUDA=1) with a device
mismatch in `devtrace report --json`. A kept mutant is scored on
  ORIGIN: the odd operand's `reached_device_at` lies in the mutated statement, or in a statement of the same
          function that binds the value the mutated statement moves or binds;
  FIX:    the patch (the report's `diff`, what `devtrace fix` writes) touches the mutated statement or such a
          binding statement only, or inserts code right before/after one of them in its block (the same test as
          scripts/corpus/score.py); a fix without a patch is judged by its site;
  BOTH:   the patch, applied to a copy, makes the program run to the end on the simulated GPU (traced) and on
          the cpu (untraced, no DEVTRACE_SIM_CUDA);
  LITERAL: the patch writes a device literal ('cuda', "cuda:0", 'cpu') although the fixed function has a device
          expression or a peer tensor in scope (counted, not a pass/fail of its own).
It prints a summary (per kind, per program, per half) and writes every mutant's row as JSON.
"""

import argparse
import ast
import concurrent.futures
import copy
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "corpus"))
import score  # noqa: E402  (scripts/corpus/score.py: its statement spans and patch-site test are the corpus's own)

KINDS = [
    "move-dropped",  # .to(...)/.cuda() dropped from an assignment or a return
    "move-removed",  # a statement `x = x.to(d)` (or `x.to_(...)`-like rebinding) removed
    "factory-device",  # device= dropped from a factory, or *_like / new_* replaced by a shaped factory
    "buffer-to-attr",  # register_buffer(n, t) replaced by a plain attribute
    "model-move-removed",  # a module's .to(...)/.cuda() removed
    "cpu-added",  # .cpu() added to a value that later meets device tensors
    "map-location-cpu",  # torch.load(..., map_location='cpu') before a manual state assignment
    "weight-no-device",  # a loss's weight / pos_weight made without a device
]
FACTORIES = {"zeros", "ones", "arange", "randn", "rand", "full", "tensor", "empty", "eye", "linspace", "randint",
             "randperm", "as_tensor", "logspace", "tril_indices", "triu_indices", "ones_like", "zeros_like",
             "randn_like", "rand_like", "full_like", "empty_like", "randint_like"}
LIKE = {"zeros_like": "zeros", "ones_like": "ones", "randn_like": "randn", "rand_like": "rand", "empty_like": "empty"}
NEW = {"new_zeros": "zeros", "new_ones": "ones", "new_empty": "empty", "new_full": "full", "new_tensor": "tensor"}
DTYPE_WORDS = re.compile(r"^(torch\.)?(float|double|half|bfloat16|int|long|bool|uint8|int8|int16|int32|int64|"
                         r"float16|float32|float64|complex64|complex128|short|cfloat)\d*$")
LOSSES_WEIGHT = ("weight", "pos_weight")
LITERAL = re.compile(r"""["'](cuda(:\d+)?|cpu)["']""")
TIMEOUT = 120
PYTHON = sys.executable


# ---------------------------------------------------------------------------- source positions


class Src:
    """One file's text with ast positions turned into string offsets (ast's col_offset counts UTF-8 bytes)."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        self.starts = [0]
        for l in self.lines:
            self.starts.append(self.starts[-1] + len(l) + 1)

    def off(self, line, col_bytes):
        l = self.lines[line - 1]
        return self.starts[line - 1] + len(l.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def span(self, node):
        return self.off(node.lineno, node.col_offset), self.off(node.end_lineno, node.end_col_offset)

    def seg(self, node):
        a, b = self.span(node)
        return self.text[a:b]


def dotted(node):
    """`torch.nn.functional.pad` for an Attribute/Name chain, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def is_device_move(call):
    """A call `X.to(...)` that moves to a device (not a dtype-only cast), or `X.cuda(...)`."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    if any(k.arg == "device" for k in call.keywords):
        return True
    if not call.args:
        return False
    a = call.args[0]
    if isinstance(a, ast.Constant):
        return isinstance(a.value, str) and a.value.startswith("cuda")
    d = dotted(a)
    if d and DTYPE_WORDS.match(d) or (d.endswith(".dtype")):
        return False
    return True  # a name, an attribute (x.device, self.device), a call (torch.device(...)), a peer tensor


def names_bound(target):
    """Names (x, self.x as 'self.x') a statement's target binds."""
    out = []
    for n in ast.walk(target):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.append(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            d = dotted(n)
            if d:
                out.append(d)
    return out


def receiver_name(node):
    """The name (x, self.x) a move's receiver is, or None."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
        node = node.func.value
    d = dotted(node)
    return d or None


# ---------------------------------------------------------------------------- mutant generation


class Finder(ast.NodeVisitor):
    """Walks one file and proposes mutants: dicts with kind, the statement's span, the text edit and the names
    of the value the statement moves or binds (for ORIGIN and FIX)."""

    def __init__(self, src, rel):
        self.src, self.rel = src, rel
        self.out = []
        self.func = None  # the innermost def (node) around the statement, None at module level
        self.stmt = None

    # -- helpers
    def add(self, kind, node, new_text, names, what):
        """NAMES: the names whose value the mutated statement moves or stores (a move's receiver): statements that
        bind them are where that value is made. The names the statement itself binds are recorded as `bound`."""
        a, b = self.src.span(node)
        bound = []
        for t in (self.stmt.targets if isinstance(self.stmt, ast.Assign) else
                  [self.stmt.target] if isinstance(self.stmt, (ast.AnnAssign, ast.AugAssign)) else []):
            bound += names_bound(t)
        self.out.append({"kind": kind, "file": self.rel, "start": a, "end": b, "new": new_text,
                         "stmt_first": self.stmt.lineno, "stmt_last": self.stmt.end_lineno,
                         "line": node.lineno, "names": sorted(set(n for n in names if n)), "what": what,
                         "bound": sorted(set(bound)),
                         "func": self.func.name if self.func is not None else "<module>",
                         "func_first": self.func.lineno if self.func is not None else 1,
                         "func_last": self.func.end_lineno if self.func is not None else len(self.src.lines)})

    def visit_FunctionDef(self, node):
        outer = self.func
        self.func = node
        self.generic_visit(node)
        self.func = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def generic_visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            outer = self.stmt
            self.stmt = node
            self.statement(node)
            super().generic_visit(node)
            self.stmt = outer
        else:
            super().generic_visit(node)

    # -- per statement
    def statement(self, st):
        bound = []
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                bound += names_bound(t)
        value = getattr(st, "value", None)
        # a statement `X.to(d)` / `X.cuda()` on its own: tensors' .to is not in place, so this moves a module
        if isinstance(st, ast.Expr) and is_device_move(st.value):
            r = receiver_name(st.value.func.value)
            self.add("model-move-removed", st, "pass", [r], "statement %s removed" % self.src.seg(st).strip()[:60])
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.Return)) and value is not None:
            self.moves_in_value(st, value, bound)
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            c = st.value
            if isinstance(c.func, ast.Attribute) and c.func.attr == "register_buffer" and len(c.args) >= 2 \
                    and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str) \
                    and not (isinstance(c.args[1], ast.Constant) and c.args[1].value is None):
                owner = self.src.seg(c.func.value)
                name = c.args[0].value
                if name.isidentifier():
                    self.add("buffer-to-attr", st, "%s.%s = %s" % (owner, name, self.src.seg(c.args[1])),
                             [dotted(c.args[1])], "register_buffer(%r) made a plain attribute" % name)
        # calls anywhere in the statement's own expressions (not in nested statements)
        for node in self.own_nodes(st):
            if isinstance(node, ast.Call):
                self.call(st, node, bound)
        # .cpu() added: an assignment of one name from a call or arithmetic inside a function, whose name is used
        # again later in the same function (the use is where it meets the other operands)
        if isinstance(st, ast.Assign) and self.func is not None and self.func.name != "__init__" \
                and len(st.targets) == 1 \
                and isinstance(st.targets[0], ast.Name) and isinstance(st.value, (ast.Call, ast.BinOp)) \
                and not self.cpu_already(st.value) and self.tensorish(st.value):
            name = st.targets[0].id
            if self.used_later(name, st):
                v = self.src.seg(st.value)
                self.add("cpu-added", st.value, "(%s).cpu()" % v if isinstance(st.value, ast.BinOp) else v + ".cpu()",
                         [name], "%s made on the cpu" % name)

    def own_nodes(self, st):
        """The expression nodes of statement ST that belong to no nested statement."""
        todo = [c for c in ast.iter_child_nodes(st) if not isinstance(c, ast.stmt)]
        while todo:
            n = todo.pop()
            yield n
            todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.stmt))

    def cpu_already(self, v):
        return any(isinstance(n, ast.Attribute) and n.attr in ("cpu", "numpy", "item", "tolist") for n in ast.walk(v))

    def tensorish(self, v):
        """A value that is likely a tensor: a torch.* / F.* call, a method call on a value, a module's call
        (self.layer(x)), or arithmetic on such. Non-tensors fail with another error and are simply not kept."""
        if isinstance(v, ast.BinOp):
            return self.tensorish(v.left) or self.tensorish(v.right)
        if not isinstance(v, ast.Call):
            return False
        d = dotted(v.func)
        if d.startswith(("torch.", "F.", "th.", "self.")):
            return not d.startswith("torch.device") and not d.startswith("self.register")
        return isinstance(v.func, ast.Attribute) and v.func.attr in (
            "matmul", "mm", "bmm", "softmax", "sum", "mean", "view", "reshape", "transpose", "permute", "float",
            "masked_fill", "unsqueeze", "squeeze", "expand", "repeat", "flatten", "contiguous", "exp", "sqrt",
            "sigmoid", "tanh", "relu", "log", "abs", "clone", "detach", "type_as", "gather", "index_select")

    def used_later(self, name, st):
        """NAME is read after ST in the function, and never moved there (a later move would undo the .cpu())."""
        for n in ast.walk(self.func):
            if is_device_move(n) and dotted(n.func.value) == name and n.lineno > st.end_lineno:
                return False
        for n in ast.walk(self.func):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and n.lineno > st.end_lineno:
                return True
        return False

    def moves_in_value(self, st, value, bound):
        """`.to(d)`/`.cuda()` in the value of an assignment or return: each one dropped (its receiver stays)."""
        for node in ast.walk(value):
            if not is_device_move(node):
                continue
            recv = node.func.value
            rtext = self.src.seg(recv)
            r = receiver_name(recv)
            # a module made and moved in one expression (`Net(...).to(d)`): a capitalized constructor, but not torch's
            # own tensor constructors (`torch.Tensor(x)`, `torch.LongTensor(n)`)
            ctor = dotted(recv.func) if isinstance(recv, ast.Call) else ""
            model = ctor.split(".")[-1][:1].isupper() and not (
                ctor.startswith(("torch.", "th.")) and not ctor.startswith(("torch.nn.", "th.nn.")))
            if model:
                kind = "model-move-removed"
            elif isinstance(st, ast.Assign) and node is value and r and r in bound:
                kind = "move-removed"  # `x = x.to(d)`: the whole statement is the move; remove it
                self.add(kind, st, "pass", [r], "move of %s removed" % r)
                continue
            else:
                kind = "move-dropped"
            self.add(kind, node, rtext, [r] if r else [], "%s of %s dropped" % (
                "." + node.func.attr + "(...)", rtext[:40]))

    def call(self, st, c, bound):
        d = dotted(c.func)
        last = d.split(".")[-1] if d else (c.func.attr if isinstance(c.func, ast.Attribute) else "")
        dev = [k for k in c.keywords if k.arg == "device"]
        torchish = d.startswith(("torch.", "th.")) or d in FACTORIES
        if last in FACTORIES and dev and (torchish or isinstance(c.func, ast.Attribute)):
            self.add("factory-device", c, self.drop_keyword(c, dev[0]), [],
                     "device= dropped from %s" % (d or last))
        elif last in LIKE and torchish and c.args and not dev:
            self.add("factory-device", c, "torch.%s(%s.shape%s)" % (
                LIKE[last], self.src.seg(c.args[0]), "".join(", " + self.src.seg(k) for k in c.keywords if k.arg == "dtype")),
                [], "%s replaced by torch.%s(shape)" % (d, LIKE[last]))
        elif isinstance(c.func, ast.Attribute) and last in NEW and c.args and not dev:
            self.add("factory-device", c, "torch.%s(%s)" % (NEW[last], ", ".join(self.src.seg(a) for a in c.args)),
                     [], "%s replaced by torch.%s" % (last, NEW[last]))
        if last == "load" and d.startswith(("torch.", "th.")):
            ml = [k for k in c.keywords if k.arg == "map_location"]
            if ml:
                a, b = self.src.span(ml[0].value)
                self.add_raw("map-location-cpu", c, a, b, "'cpu'", [], "map_location='cpu'")
            else:
                inner = self.src.seg(c)
                self.add("map-location-cpu", c, inner[:-1].rstrip() + ", map_location='cpu')", [],
                         "map_location='cpu' added")
        for k in c.keywords:
            if k.arg in LOSSES_WEIGHT and (last.endswith("Loss") or last in ("cross_entropy", "nll_loss",
                                           "binary_cross_entropy_with_logits", "binary_cross_entropy")):
                for n in ast.walk(k.value):
                    if is_device_move(n):
                        self.add("weight-no-device", n, self.src.seg(n.func.value), [receiver_name(n.func.value)],
                                 "%s= made without a device" % k.arg)
                        break
                    if isinstance(n, ast.Call) and any(kk.arg == "device" for kk in n.keywords):
                        kk = [kk for kk in n.keywords if kk.arg == "device"][0]
                        self.add("weight-no-device", n, self.drop_keyword(n, kk), [], "%s= made without a device" % k.arg)
                        break
                else:
                    if isinstance(k.value, ast.Name):
                        self.weight_names.append((k.value.id, k.arg, self.func))

    weight_names = None

    def add_raw(self, kind, node, a, b, new, names, what):
        """An edit of offsets [a, b) inside NODE's statement (the mutant's text is NODE's text with it applied)."""
        na, nb = self.src.span(node)
        t = self.src.text[na:a] + new + self.src.text[b:nb]
        self.add(kind, node, t, names, what)

    def drop_keyword(self, c, kw):
        """C's text without keyword KW (and the comma that joined it), in place, multi-line calls kept."""
        na, nb = self.src.span(c)
        ka, kb = self.src.off(kw.lineno, kw.col_offset), self.src.off(kw.end_lineno, kw.end_col_offset)
        args = list(c.args) + list(c.keywords)
        args.sort(key=lambda n: (n.lineno, n.col_offset))
        i = args.index(kw)
        if i > 0:
            prev = args[i - 1]
            a = self.src.off(prev.end_lineno, prev.end_col_offset)
            b = kb
        elif len(args) > 1:
            nxt = args[1]
            a, b = ka, self.src.off(nxt.lineno, nxt.col_offset)
        else:
            a, b = ka, kb
        return self.src.text[na:a] + self.src.text[b:nb]


def weight_defs(tree, src, rel, finder):
    """A loss weight passed as a name (`w = torch.tensor(..., device=d)` ... `CrossEntropyLoss(weight=w)`): the
    binding of that name in the same function loses its device."""
    out = []
    for name, arg, func in finder.weight_names:
        scope = func if func is not None else tree
        for st in ast.walk(scope):
            if isinstance(st, ast.Assign) and any(name in names_bound(t) for t in st.targets):
                sub = Finder(src, rel)
                sub.func, sub.stmt, sub.weight_names = func, st, []
                for n in ast.walk(st.value):
                    if is_device_move(n):
                        sub.add("weight-no-device", n, src.seg(n.func.value), [receiver_name(n.func.value)],
                                "%s= %s made without a device" % (arg, name))
                        break
                    if isinstance(n, ast.Call) and any(k.arg == "device" for k in n.keywords):
                        sub.add("weight-no-device", n, sub.drop_keyword(n, [k for k in n.keywords if k.arg == "device"][0]),
                                [], "%s= %s made without a device" % (arg, name))
                        break
                out += sub.out
    return out


def generate(program_dir, files):
    """Every mutant of FILES (paths relative to PROGRAM_DIR), in file and line order, each with a stable id."""
    muts = []
    for rel in files:
        with open(os.path.join(program_dir, rel), encoding="utf-8") as f:
            text = f.read()
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            raise SystemExit("mutbench: %s does not parse: %s" % (rel, e))
        src = Src(text)
        fd = Finder(src, rel)
        fd.weight_names = []
        fd.visit(tree)
        found = fd.out + weight_defs(tree, src, rel, fd)
        seen = set()
        # a weight made without a device is also a factory/move mutant: it is kept once, as the weight kind
        for m in sorted(found, key=lambda m: (m["start"], m["kind"] != "weight-no-device", KINDS.index(m["kind"]))):
            key = (m["start"], m["end"], m["new"])
            if key in seen or text[m["start"]:m["end"]] == m["new"]:
                continue
            seen.add(key)
            # the mutant must still parse (a removed statement alone in a block became `pass`)
            t2 = text[:m["start"]] + m["new"] + text[m["end"]:]
            try:
                ast.parse(t2)
            except SyntaxError:
                continue
            m["old"] = text[m["start"]:m["end"]]
            muts.append(m)
    for i, m in enumerate(muts):
        m["id"] = "%s:%d:%s:%d" % (m["file"], m["line"], m["kind"], i)
    return muts


def apply(work, m):
    """Write mutant M into the copy WORK; returns the mutated statement's (first, last) lines there."""
    p = os.path.join(work, m["file"])
    with open(p, encoding="utf-8") as f:
        text = f.read()
    assert text[m["start"]:m["end"]] == m["old"], "the copy differs from the program"
    new = text[:m["start"]] + m["new"] + text[m["end"]:]
    with open(p, "w", encoding="utf-8") as f:
        f.write(new)
    delta = m["new"].count("\n") - m["old"].count("\n")
    return m["stmt_first"], m["stmt_last"] + delta, delta


# ---------------------------------------------------------------------------- runs


def run(cmd, cwd, env=None, timeout=None):
    """(status, stdout, stderr); past the timeout the whole process group is killed and the status is 124."""
    e = dict(os.environ)
    for k in ("DEVTRACE_SIM_CUDA", "CUDA_VISIBLE_DEVICES"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        so, se = p.communicate(timeout=timeout or TIMEOUT)
        return p.returncode, so, se
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        return 124, "", "timed out after %d s" % (timeout or TIMEOUT)


def argv(prog):
    """The program's run command as a list, the word `python` being the interpreter that imports torch (the
    program's own `python` in the list, else --python)."""
    words = shlex.split(prog["run"])
    return [score.program_python(prog.get("python")) or PYTHON if w in ("python", "python3") else w for w in words]


def traced(args, work, prog, sim="1"):
    return run([args.devtrace, "run", "-o", "m.db", "--overwrite", "--"] + argv(prog), work,
               {"DEVTRACE_SIM_CUDA": sim, "DEVTRACE_QUIET": "1"})


def on_cpu(work, prog):
    return run(argv(prog), work, {"CUDA_VISIBLE_DEVICES": ""})


def copy_program(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.db", "*.pyc", ".mutbench.json"))


# ---------------------------------------------------------------------------- scoring


def binding_spans(work, m, first, last, delta):
    """The statements that count for ORIGIN and FIX: the mutated one, and those of the same function that bind
    one of the names the mutated statement moves or binds (x, self.x): (file, first, last, indent)."""
    p = os.path.join(work, m["file"])
    with open(p, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text)
    fl, ll = m["func_first"], m["func_last"] + delta
    out = []
    s = score.stmt_span(p, first)
    out.append((m["file"], first, last, s[2] if s else ""))
    names = set(m["names"])
    if names:
        for st in ast.walk(tree):
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)) and fl <= st.lineno <= ll:
                targets = (st.targets if isinstance(st, ast.Assign) else
                           [st.target] if isinstance(st, (ast.AnnAssign, ast.AugAssign, ast.For)) else
                           [i.optional_vars for i in st.items if i.optional_vars is not None])
                hit = any(n in names for t in targets for n in names_bound(t))
                # a later statement that moves the same value under the name the mutant binds (`x = x.to(d)`)
                v = getattr(st, "value", None)
                hit |= isinstance(st, ast.Assign) and v is not None and receiver_name(v) is not None and \
                    any(n in m.get("bound", []) and n == receiver_name(v) for t in targets for n in names_bound(t))
                if hit:
                    sp = score.stmt_span(p, st.lineno)
                    if sp and not (sp[0] == first):
                        out.append((m["file"],) + sp)
            # a module-level name bound by a def (a function that makes it) is no binding of a value: skipped
    return out


def func_has_peer_or_device(work, rel, line):
    """Whether the function around LINE (or the module, at top level) has a device expression or a peer: a name
    or attribute mentioning `device`, a `.device` read, or a parameter besides `self` (a tensor it receives),
    or is a method (its module's own parameters are peers)."""
    p = os.path.join(work, rel)
    try:
        with open(p, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return False
    best = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno <= line <= n.end_lineno:
            if best is None or n.lineno > best.lineno:
                best = n
    scope = best if best is not None else tree
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and "device" in n.id.lower():
            return True
        if isinstance(n, ast.Attribute) and "device" in n.attr.lower():
            return True
    if best is not None:
        params = [a.arg for a in best.args.args + best.args.kwonlyargs]
        if [a for a in params if a not in ("self", "cls")] or "self" in params:
            return True
    # module level: a module-level device name counts
    for n in tree.body:
        if isinstance(n, ast.Assign) and any("device" in x for t in n.targets for x in names_bound(t)):
            return True
    return False


def judge(work, m, first, last, delta, m0):
    """ORIGIN, FIX and LITERAL of mutant M (applied in WORK; its statement now FIRST..LAST, DELTA lines longer)
    from the first mismatch M0 of `devtrace report --json`. No program is run here."""
    out = {"origin_ok": False, "fix_ok": False, "literal": False, "literal_in_scope": False, "has_patch": False}
    fix = m0.get("fix") or {}
    out["rule"] = fix.get("rule") or "(none)"
    spans = binding_spans(work, m, first, last, delta)
    out["accepted"] = ", ".join("%s:%d" % (s[0], s[1]) for s in spans)
    said = []
    for o in m0.get("operands", []):
        if not o.get("odd"):
            continue
        chain = o.get("chain") or []
        s = o.get("reached_device_at") or (chain[-1].get("site") if chain else None)
        if s:
            f = score.site_file(work, s.get("file"))
            said.append("%s:%s" % (f or s.get("file"), s.get("line")))
            out["origin_ok"] |= f is not None and score.in_spans(spans, f, s.get("line", 0))
    out["origin_said"] = ", ".join(said) or "(no odd operand)"
    site = fix.get("site") or {}
    sf = score.site_file(work, site.get("file"))
    out["fix_said"] = "%s %s:%s" % (fix.get("placement", ""), sf or site.get("file"), site.get("line")) if site else "(none)"
    diff = m0.get("diff") or ""
    out["has_patch"] = bool(diff.strip())
    if out["has_patch"]:
        out["diff"] = diff
        hunks = score.diff_hunks(diff)
        out["fix_ok"] = score.diff_ok(work, diff, spans)
        added = [t for _, ch in hunks for k, _, t in ch if k == "+"]
        out["literal"] = any(LITERAL.search(t) for t in added)
        if out["literal"]:
            at = sf or (score.site_file(work, hunks[0][0]) if hunks else None)
            line = site.get("line") or next((ln for _, ch in hunks for k, ln, _ in ch), 1)
            out["literal_in_scope"] = bool(at) and func_has_peer_or_device(work, at, line)
    else:
        out["fix_ok"] = sf is not None and score.site_ok(work, spans, sf, site.get("line", 0), fix.get("placement"))
        out["patch_note"] = "advice only (no patch)"
    return out


def score_mutant(args, prog, m, work_root):
    """One mutant: its row (a dict)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", "%s-%s" % (prog["name"], m["id"]))
    work = os.path.join(work_root, name)
    copy_program(prog["dir_path"], work)
    first, last, delta = apply(work, m)
    row = {"program": prog["name"], "half": prog.get("split", ""), "id": m["id"], "kind": m["kind"],
           "file": m["file"], "line": m["line"], "what": m["what"], "old": m["old"], "new": m["new"],
           "kept": False, "why_not_kept": "", "rule": "", "origin_ok": False, "fix_ok": False,
           "gpu_ok": False, "cpu_ok": False, "both_ok": False, "literal": False, "literal_in_scope": False,
           "has_patch": False, "origin_said": "", "fix_said": "", "seconds": 0.0}
    t0 = time.monotonic()
    rc, so, se = traced(args, work, prog)
    if rc == 124:
        row["why_not_kept"] = "timed out"
    elif rc == 0:
        row["why_not_kept"] = "runs to the end"
    jrc, jout, _ = run([args.devtrace, "report", "--json", "m.db"], work) if rc not in (0, 124) else (0, "", "")
    try:
        mm = json.loads(jout)["traces"][0]["mismatches"]
    except (ValueError, KeyError, IndexError, TypeError):
        mm = None
    if rc not in (0, 124) and not mm:
        tail = (se.strip().split("\n") or [""])[-1]
        row["why_not_kept"] = "exit %d, no device mismatch: %s" % (rc, tail[:160])
    if rc in (0, 124) or not mm:
        row["seconds"] = round(time.monotonic() - t0, 1)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return row
    row["kept"] = True
    row.update(judge(work, m, first, last, delta, mm[0]))
    if row["has_patch"]:
        row["gpu_ok"], row["cpu_ok"], row["patch_note"] = patched_runs(args, prog, work, row["diff"])
        row["both_ok"] = row["gpu_ok"] and row["cpu_ok"]
    row["seconds"] = round(time.monotonic() - t0, 1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return row


def patched_runs(args, prog, work, diff):
    """(runs on the simulated GPU, runs on the cpu, note) of the program with DIFF applied to a copy of WORK."""
    cp = work + ".patched"
    copy_program(work, cp)
    try:
        for fname, _ in score.diff_hunks(diff):
            rel = score.site_file(work, fname)
            if rel is None:
                return False, False, "the patch edits a file outside the program: %s" % fname
        for fname, _ in score.diff_hunks(diff)[:1]:
            p = subprocess.run(["patch", "-s", "-N", "-p0", "-d", cp], input=rewrite_paths(work, diff), text=True,
                               capture_output=True)
            if p.returncode != 0:
                return False, False, "patch does not apply: %s" % (p.stdout + p.stderr).strip()[:160]
        g = traced(args, cp, prog)
        # the cpu run only matters when the simulated GPU's did end well (both are needed): saves a run per failure
        c = on_cpu(cp, prog) if g[0] == 0 else (-1, "", "not run (the simulated GPU's run failed)")
        note = []
        if g[0] != 0:
            note.append("gpu: exit %d %s" % (g[0], (g[2].strip().split("\n") or [""])[-1][:120]))
        if c[0] != 0:
            note.append("cpu: exit %d %s" % (c[0], (c[2].strip().split("\n") or [""])[-1][:120]))
        return g[0] == 0, c[0] == 0, "; ".join(note)
    finally:
        if not args.keep:
            shutil.rmtree(cp, ignore_errors=True)


def rewrite_paths(work, diff):
    """The diff with its file names made relative to the program (patch -p0 -d COPY)."""
    out = []
    for l in diff.split("\n"):
        if l.startswith("--- ") or l.startswith("+++ "):
            rel = score.site_file(work, l[4:].split("\t")[0].strip())
            l = l[:4] + (rel or l[4:])
        out.append(l)
    return "\n".join(out) + ("\n" if not diff.endswith("\n") else "")


# ---------------------------------------------------------------------------- programs and the table


def baseline(args, prog, work_root):
    """The unmutated program must run to the end on the simulated GPU (traced) and on the cpu."""
    work = os.path.join(work_root, prog["name"] + "-base")
    copy_program(prog["dir_path"], work)
    t0 = time.monotonic()
    g = traced(args, work, prog)
    t1 = time.monotonic()
    c = on_cpu(work, prog)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    why = []
    if g[0] != 0:
        why.append("simulated GPU: exit %d: %s" % (g[0], g[2].strip()[-400:]))
    if c[0] != 0:
        why.append("cpu: exit %d: %s" % (c[0], c[2].strip()[-400:]))
    return not why, "; ".join(why), round(t1 - t0, 1)


def pct(n, d):
    return "%d/%d (%.0f%%)" % (n, d, 100.0 * n / d) if d else "0/0"


def summary(rows, by):
    """Markdown table of ROWS grouped by BY (a row key, or None for all)."""
    groups = {}
    for r in rows:
        groups.setdefault(r[by] if by else "all", []).append(r)
    head = "| %s | run | kept | origin right | fix site right | patch runs on both | device literal (peer/device in scope) |" % (by or "")
    out = [head, "|---|---|---|---|---|---|---|"]
    order = KINDS if by == "kind" else sorted(groups)
    for g in order:
        if g not in groups:
            if by == "kind":
                out.append("| %s | 0 | 0 | - | - | - | - |" % g)
            continue
        rs = groups[g]
        k = [r for r in rs if r["kept"]]
        out.append("| %s | %d | %d | %s | %s | %s | %d (%d) |" % (
            g, len(rs), len(k), pct(sum(r["origin_ok"] for r in k), len(k)), pct(sum(r["fix_ok"] for r in k), len(k)),
            pct(sum(r["both_ok"] for r in k), len(k)), sum(r["literal"] for r in k), sum(r["literal_in_scope"] for r in k)))
    return "\n".join(out)


def generated_text(generated, halves):
    """Mutants generated (before any --max-per-kind draw) per kind, in each half: {program: {kind: n}}."""
    hs = sorted(set(halves.values())) or [""]
    out = ["| kind | %s |" % " | ".join("generated (%s)" % (h or "all") for h in hs), "|---|%s" % ("---|" * len(hs))]
    for k in KINDS + ["all"]:
        out.append("| %s | %s |" % (k, " | ".join(str(sum(n for prog, kinds in generated.items() if halves.get(prog, "") == h
                                                           for kk, n in kinds.items() if k in ("all", kk)))
                                                   for h in hs)))
    return "\n".join(out)


def report_text(rows, bases, generated=None, halves=None):
    out = []
    if generated:
        out.append("### Mutants generated\n")
        out.append(generated_text(generated, halves or {}))
        out.append("")
    halves = sorted({r["half"] for r in rows if r["half"]})
    out.append("### All programs\n")
    out.append(summary(rows, None if not halves else "half"))
    for h in halves or [None]:
        rs = [r for r in rows if r["half"] == h] if h else rows
        out.append("\n### Per kind%s\n" % (" (%s half)" % h if h else ""))
        out.append(summary(rs, "kind"))
    out.append("\n### Per program\n")
    out.append(summary(rows, "program"))
    if bases:
        bad = [(n, b) for n, b in bases.items() if not b[0]]
        if bad:
            out.append("\nPrograms whose unmutated run fails (not scored): " +
                       "; ".join("%s: %s" % (n, b[1].replace("\n", " ")[:300]) for n, b in bad))
    return "\n".join(out)


def load_list(args):
    with open(args.list) as f:
        spec = json.load(f)
    progs = []
    for name, p in spec["programs"].items():
        p = dict(p)
        p["name"] = name
        p["dir_path"] = os.path.join(args.src, name)
        made = os.path.join(p["dir_path"], ".mutbench.json")  # the run and files, resolved by mutbench_prepare.py
        if os.path.isfile(made):
            with open(made) as f:
                p.update({k: v for k, v in json.load(f).items() if k in ("run", "mutate", "python") and v})
        progs.append(p)
    if args.only:
        want = args.only.split(",")
        progs = sorted([p for p in progs if p["name"] in want], key=lambda p: want.index(p["name"]))  # in the order given
        if not progs:
            raise SystemExit("mutbench: no program named %s in %s" % (args.only, args.list))
    if args.half:
        progs = [p for p in progs if p.get("split") == args.half]
    return progs


def program_files(prog):
    if prog.get("mutate"):
        return prog["mutate"]
    out = []
    for root, _, files in os.walk(prog["dir_path"]):
        for f in sorted(files):
            if f.endswith(".py"):
                out.append(os.path.relpath(os.path.join(root, f), prog["dir_path"]))
    return sorted(out)


def cap(muts, n, seed):
    """At most N mutants of each kind per program, drawn with a fixed seed (the rest are listed as skipped)."""
    if not n:
        return muts
    rnd = random.Random(seed)
    keep = []
    for k in KINDS:
        ms = [m for m in muts if m["kind"] == k]
        keep += ms if len(ms) <= n else rnd.sample(ms, n)
    ids = {m["id"] for m in keep}
    return [m for m in muts if m["id"] in ids]


def main():
    global PYTHON, TIMEOUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", help="a program's folder (run in a copy of it)")
    ap.add_argument("--run", help="the command that runs it from its folder, e.g. \"python main.py --epochs 1\"")
    ap.add_argument("--files", help="the files to mutate, comma-separated (default: every .py file)")
    ap.add_argument("--list", help="a program list (scripts/corpus/mutbench.json)")
    ap.add_argument("--src", default="/work/mutbench/src", help="where the list's programs were prepared")
    ap.add_argument("--only", help="programs of the list to run, comma-separated")
    ap.add_argument("--half", choices=["tune", "heldout"], help="only the programs of this half of the list")
    ap.add_argument("--devtrace", default=os.path.join(HERE, "..", "build", "viewer", "devtrace"))
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="what `python` in --run means (a program of the list may name its own)")
    ap.add_argument("-j", type=int, default=2, help="mutants run at once (at most 2)")
    ap.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds for one run (default %d)" % TIMEOUT)
    ap.add_argument("--max-per-kind", type=int, default=0, help="at most N mutants of each kind per program")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--table", help="write the summary (markdown) here")
    ap.add_argument("--work", help="work folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep every work copy and trace")
    ap.add_argument("--list-mutants", action="store_true", help="print the mutants and run nothing")
    ap.add_argument("--resume", help="a --json file of an earlier run: its rows are kept, its programs not run again")
    ap.add_argument("--table-from", help="print (and --table) the summary of a --json file, run nothing")
    ap.add_argument("--kinds", help="only mutants of these kinds, comma-separated (%s)" % ", ".join(KINDS))
    ap.add_argument("--match", help="only mutants whose id or new text contains this string")
    args = ap.parse_args()
    PYTHON, TIMEOUT = args.python, args.timeout
    if args.table_from:
        with open(args.table_from) as f:
            old = json.load(f)
        text = report_text(old["rows"], {n: (b["runs"], b["why"], b["traced_seconds"]) for n, b in old["programs"].items()},
                           old.get("generated"), old.get("halves"))
        print(text)
        if args.table:
            with open(args.table, "w") as f:
                f.write(text + "\n")
        return 0
    args.j = max(1, min(2, args.j))
    args.devtrace = os.path.abspath(args.devtrace)
    if args.program:
        if not args.run:
            ap.error("--program needs --run")
        progs = [{"name": os.path.basename(os.path.abspath(args.program)), "dir_path": os.path.abspath(args.program),
                  "run": args.run, "mutate": args.files.split(",") if args.files else None, "split": ""}]
    elif args.list:
        progs = load_list(args)
    else:
        ap.error("give --program DIR --run CMD, or --list FILE")
    plan, generated, halves = [], {}, {}
    for p in progs:
        if not os.path.isdir(p["dir_path"]):
            print("mutbench: %s: %s is missing (scripts/corpus/mutbench_prepare.py)" % (p["name"], p["dir_path"]),
                  file=sys.stderr)
            continue
        allm = generate(p["dir_path"], program_files(p))
        counts = {k: sum(m["kind"] == k for m in allm) for k in KINDS}
        halves[p["name"]] = p.get("split", "")
        ms = cap(allm, args.max_per_kind or p.get("max_per_kind", 0), args.seed)
        if args.kinds:
            ms = [m for m in ms if m["kind"] in args.kinds.split(",")]
        if args.match:
            ms = [m for m in ms if args.match in m["id"] or args.match in m["new"]]
        plan.append((p, ms))
        generated[p["name"]] = counts
    if args.list_mutants:
        for p, ms in plan:
            for m in ms:
                print("%s %-20s %s:%d %s  |  %s -> %s" % (p["name"], m["kind"], m["file"], m["line"], m["what"],
                                                        m["old"].replace("\n", " ")[:70], m["new"].replace("\n", " ")[:70]))
        print("%d mutants in %d programs" % (sum(len(ms) for _, ms in plan), len(plan)))
        return 0
    if not os.access(args.devtrace, os.X_OK):
        ap.error("%s is not an executable devtrace (build it, or give --devtrace)" % args.devtrace)
    own = not args.work
    work_root = os.path.abspath(args.work or tempfile.mkdtemp(prefix="mutbench."))
    os.makedirs(work_root, exist_ok=True)
    rows, bases = [], {}
    if args.resume:  # rows of programs run before (an earlier, cut-off run): kept, and those programs skipped
        with open(args.resume) as f:
            old = json.load(f)
        rows = old["rows"]
        bases = {n: (b["runs"], b["why"], b["traced_seconds"]) for n, b in old["programs"].items()}
        done = {r["program"] for r in rows} | {n for n, b in bases.items() if not b[0]}
        plan = [(p, ms) for p, ms in plan if p["name"] not in done]
    args.generated, args.halves = generated, halves
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.j) as ex:
        for p, ms in plan:
            b = baseline(args, p, work_root)
            bases[p["name"]] = b
            print("== %s (%s): %d mutants; unmutated %s" % (p["name"], p.get("split") or "-", len(ms),
                  "runs on both (%.1f s traced)" % b[2] if b[0] else "FAILS: " + b[1][:300]), flush=True)
            if not b[0]:
                continue
            for r in ex.map(lambda m: score_mutant(args, p, m, work_root), ms):
                rows.append(r)
                print("  %-18s %-40s %s" % (r["kind"], "%s:%d" % (r["file"], r["line"]),
                      ("kept  origin %-3s fix %-3s gpu %-3s cpu %-3s%s  [%s]" % (
                          "ok" if r["origin_ok"] else "NO", "ok" if r["fix_ok"] else "NO", "ok" if r["gpu_ok"] else "NO",
                          "ok" if r["cpu_ok"] else "NO", " LITERAL" if r["literal"] else "", r["rule"]))
                      if r["kept"] else "not kept: " + r["why_not_kept"][:90]), flush=True)
            if args.json:  # after each program, so that a long run that is cut off leaves its rows
                write_json(args, rows, bases, time.monotonic() - t0)
    text = report_text(rows, bases, generated, halves)
    print()
    print(text)
    if args.json:
        write_json(args, rows, bases, time.monotonic() - t0)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")
    if own and not args.keep:
        shutil.rmtree(work_root, ignore_errors=True)
    return 0


def write_json(args, rows, bases, took):
    with open(args.json, "w") as f:
        json.dump({"devtrace": args.devtrace, "python": PYTHON, "seconds": round(took), "rows": rows,
                   "generated": args.generated, "halves": args.halves,
                   "programs": {n: {"runs": b[0], "why": b[1], "traced_seconds": b[2]} for n, b in bases.items()}},
                  f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
