"""Facts about the program's source, read with Python's ``ast``, for the trace's
``source_facts`` table (probe ``dtp_source_fact``): what each line's statement
binds, its indentation and block, the enclosing function and loop, the calls
starting on the line and the device expressions it uses. The viewer reads these
instead of parsing source text. It does not decide what a fact means for a
diagnosis: that is the viewer's.

``file_facts(path)`` yields (line, key, value) for one file, parsed once and
cached; ``Emitter`` writes the facts of the program's own files into the trace,
each file once. The keys come from the extension (``_probes.FACT_*``, defined
once in common/trace_schema.h); docs/source-facts.md says what each means.
"""

import ast
import hashlib
import os
import re
import sys
import sysconfig

from . import _probes as P

_cache = {}  # path -> tuple of (line, key, value), or () when it cannot be read or parsed
MAX_FILES = 256  # files whose facts one process writes at most: a bound on the time the first mismatch takes

# dtypes that `.to(X)` may be given instead of a device: `torch.<one of these>`
_DTYPES = frozenset((
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32", "int",
    "int16", "short", "int8", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble", "qint8", "quint8",
    "float8_e4m3fn", "float8_e5m2"))
_DEVICE_STRING = re.compile(r"^(cpu|cuda|mps|xpu|meta|hip|xla|npu|privateuseone)(:\d+)?$")
_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) \
    + ((ast.Match,) if hasattr(ast, "Match") else ())
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _File:
    """One file's text, lines and the ast's byte offsets made characters."""

    def __init__(self, data):
        self.text = _decode(data)
        # lines as Python numbers them: ended by \n, \r\n or \r only (str.splitlines also splits at \f, \x1c...)
        self.lines = re.split(r"\r\n|\r|\n", self.text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.tree = ast.parse(data)

    def line(self, n):
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def indent(self, n):
        s = self.line(n)
        return s[:len(s) - len(s.lstrip(" \t\f"))]

    def col(self, n, byte_col):
        """The ast's column (UTF-8 bytes) on line n, in characters."""
        s = self.line(n)
        return len(s.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def src(self, node):
        seg = ast.get_source_segment(self.text, node)
        if seg is None:
            return ""
        return re.sub(r"\s*\n\s*", "", seg) if "\n" in seg else seg


def _decode(data):
    """The file's text as Python reads it (a coding declaration or a BOM included)."""
    import io
    import tokenize
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        enc = "utf-8"
    return data.decode(enc, "replace")


def _first_line(node):
    """A statement's first line: its first decorator's for a decorated def or class."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _names(target, out):
    """The plain names a target binds (tuples and lists of names, starred names); False if it has anything else."""
    if isinstance(target, ast.Name):
        out.append(target.id)
        return True
    if isinstance(target, ast.Starred):
        return _names(target.value, out)
    if isinstance(target, (ast.Tuple, ast.List)):
        ok = True
        for e in target.elts:
            ok = _names(e, out) and ok
        return ok
    return False


def _self_attrs(target, out):
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        out.append("self." + target.attr)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            _self_attrs(e, out)
    elif isinstance(target, ast.Starred):
        _self_attrs(target.value, out)


def _receiver(fn):
    """The name a method (a def in a class body) calls the object it is called on: its first positional parameter;
    None for a static or class method, or a method that takes none."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for d in fn.decorator_list:
        if isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod"):
            return None
    named = fn.args.posonlyargs + fn.args.args
    return named[0].arg if named else None


def _is_dtype(node):
    """`torch.float32`, `x.dtype`: what `.to(X)` takes that is not a device."""
    if isinstance(node, ast.Attribute):
        if node.attr == "dtype":
            return True
        return node.attr in _DTYPES and isinstance(node.value, ast.Name) and node.value.id == "torch"
    return False


def _is_device_value(node):
    """An expression that evidently makes a device: torch.device(...), "cuda:0", x.device, a choice between them."""
    if isinstance(node, ast.Call):
        f = node.func
        return (isinstance(f, ast.Attribute) and f.attr == "device") or (isinstance(f, ast.Name) and f.id == "device")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_DEVICE_STRING.match(node.value))
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return isinstance(first, ast.Constant) and isinstance(first.value, str) and \
            bool(re.match(r"^(cpu|cuda|mps|xpu)(:|$)", first.value))
    if isinstance(node, ast.Attribute):
        return node.attr == "device"
    if isinstance(node, ast.IfExp):
        return _is_device_value(node.body) or _is_device_value(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_is_device_value(v) for v in node.values)
    return False


def _header_exprs(node):
    """The expressions of a compound statement's header (not of its body)."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target, node.iter]
    if isinstance(node, (ast.While, ast.If)):
        return [node.test]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        out = []
        for item in node.items:
            out.append(item.context_expr)
            if item.optional_vars is not None:
                out.append(item.optional_vars)
        return out
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return list(node.decorator_list) + [d for d in a.defaults + a.kw_defaults if d is not None] + \
            ([node.returns] if node.returns is not None else [])
    if isinstance(node, ast.ClassDef):
        return list(node.decorator_list) + list(node.bases) + [k.value for k in node.keywords]
    if hasattr(ast, "Match") and isinstance(node, ast.Match):
        return [node.subject]
    return []


_TORCH_NAMES = frozenset(("torch", "th", "F", "nn"))  # torch and the names programs import its modules as
_MOVES = frozenset(("to", "cuda", "type"))  # a tensor's or a module's move: its argument is the target


def _device_names(tree):
    """The names (NAME, OBJ.NAME) a file binds to a device value or passes as a device (device=NAME, .cuda(NAME));
    not .to(NAME), which as often takes a dtype (hidden.to(dtype))."""
    out = set()

    def name(n):
        if isinstance(n, ast.Name):
            return n.id
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            return "%s.%s" % (n.value.id, n.attr)
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_device_value(node.value):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if name(t):
                    out.add(name(t))
        elif isinstance(node, ast.Call):
            for k in node.keywords:
                if k.arg == "device" and name(k.value):
                    out.add(name(k.value))
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "cuda" and node.args and name(node.args[0]):
                out.add(name(node.args[0]))
    # a parameter of the file's own function to which one of its calls hands a device (main(torch.device(...))
    # makes main's `device` one, then evaluate(model, xs, device) evaluate's), until no call adds one
    params = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params.setdefault(node.name, []).append([a.arg for a in node.args.posonlyargs + node.args.args])
        elif isinstance(node, ast.ClassDef):  # called by its class's name: its __init__'s, less the receiver
            for d in node.body:
                if isinstance(d, ast.FunctionDef) and d.name == "__init__":
                    params.setdefault(node.name, []).append([a.arg for a in d.args.posonlyargs + d.args.args][1:])
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]

    def device(n):
        return _is_device_value(n) or (name(n) is not None and name(n) in out)
    for _ in range(8):
        before = len(out)
        for node in calls:
            f = node.func
            fn = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            defs = params.get(fn, [])
            if len(defs) != 1:  # none of the file's, or two of one name: which one is not known here
                continue
            ps = defs[0]
            # a method called on an object (self.evaluate(x, device)): its receiver is no argument of the call
            skip = 1 if isinstance(f, ast.Attribute) and ps and ps[0] in ("self", "cls") else 0
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Starred):
                    break
                if i + skip < len(ps) and device(a):
                    out.add(ps[i + skip])
            for k in node.keywords:
                if k.arg in ps and device(k.value):
                    out.add(k.arg)
        if len(out) == before:
            break
    return out


class _Facts:
    """Walks one file's tree into (line, key, value) facts."""

    def __init__(self, f):
        self.f = f
        self.facts = []
        self.owner = {}  # line -> depth of the statement whose facts it has
        self.attrs = {}  # (function, def line) -> the "self.NAME" its statements set so far, in source order
        self.bases = {}  # (class, class line) -> its bases' source text, comma-separated
        self.device_names = _device_names(f.tree)
        self.guard = None  # the test of the innermost `if` of the function whose body holds the statement walked

    def add(self, line, key, value):
        self.facts.append((line, key, str(value)))

    # ------------------------------------------------------------ expressions: calls and device expressions

    def exprs(self, roots, whole, receiver=None):
        """The calls and device expressions inside roots; whole: the expressions that are a statement's whole value
        (a call that is one of them is not a temporary)."""
        for root in roots:
            for node in ast.walk(root):
                if isinstance(node, ast.Call):
                    self.call(node, any(node is w for w in whole), receiver)

    def call(self, node, whole, receiver=None):
        f = self.f
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        func = f.src(node.func).replace("\t", " ")
        end_line = node.end_lineno or node.lineno
        end_col = f.col(end_line, node.end_col_offset or 0)
        has_args = "1" if node.args or node.keywords else "0"
        # a comma after the last argument (`f(a,\n)`): an argument added before `)` takes none of its own
        trailing = "1" if has_args == "1" and re.search(r",\s*(#[^\n]*\s*)*\)$", f.src(node)) else "0"
        self.add(node.lineno, P.FACT_CALL, "\t".join((func, f.src(device).replace("\t", " ") if device is not None
                                                       else "", "0" if whole else "1", str(end_line), str(end_col),
                                                       has_args, trailing)))
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if device is not None:
            self.add(device.lineno, P.FACT_DEVICE_EXPR, f.src(device))
            self.device_of(device, receiver)
        # a device handed to a function of the program's (mel_filters(audio.device, n), make_mask(n, device=d)):
        # which of its parameters, by position or keyword, is given a device, so that a tensor it makes without it
        # is fixed there (not torch's own functions, nor a move: .to(d), .cuda(d))
        root = node.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in _TORCH_NAMES) and attr not in _MOVES:
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Starred):
                    break
                if self.is_device(a):
                    self.add(node.lineno, P.FACT_DEVICE_ARG, "%s\t#%d" % (func, i))
                    self.device_of(a, receiver)  # causal_mask(n, h.device): what it makes follows h
            for k in node.keywords:
                if k.arg and self.is_device(k.value):
                    self.add(node.lineno, P.FACT_DEVICE_ARG, "%s\t%s" % (func, k.arg))
                    self.device_of(k.value, receiver)
            # the positional arguments it hands a function of the program's, when one is a plain name
            # (shift_tokens_right(labels, pad, start)): a tensor that function makes without a device can follow
            # the one it was handed (device=input_ids.device), not the caller's device; each argument's text with
            # its whitespace squeezed, "?" for one longer than a line of a fact, at most 8 (the native `args`)
            given = []
            for a in node.args[:8]:
                if isinstance(a, ast.Starred):
                    break
                text = " ".join(f.src(a).split())
                given.append(text if text and len(text) <= 160 else "?")
            if any(isinstance(a, ast.Name) for a in node.args[:len(given)]):
                self.add(node.lineno, P.FACT_CALL_ARGS, "\t".join([" ".join(func.split())] + given))
        if attr == "to" and node.args and not _is_dtype(node.args[0]):
            self.add(node.args[0].lineno, P.FACT_DEVICE_EXPR, f.src(node.args[0]))
            self.device_of(node.args[0], receiver)
        elif attr == "cuda":
            if node.args:
                self.add(node.args[0].lineno, P.FACT_DEVICE_EXPR, f.src(node.args[0]))
            elif not node.keywords:
                self.add(node.func.end_lineno or node.lineno, P.FACT_DEVICE_EXPR, '"cuda"')  # a literal

    def is_device(self, node):
        """An argument that is a device: a device value (x.device, torch.device(...), "cuda:0") or a name the file
        binds to one or moves and makes tensors with (device, self.device)."""
        if _is_device_value(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.device_names
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            "%s.%s" % (node.value.id, node.attr) in self.device_names

    def device_of(self, expr, receiver):
        """NAME.device: what is made or moved with it follows the tensor NAME holds (not a method's receiver: a
        module's own device attribute)."""
        if isinstance(expr, ast.Attribute) and expr.attr == "device" and isinstance(expr.value, ast.Name) \
                and expr.value.id != receiver:
            self.add(expr.lineno, P.FACT_DEVICE_OF, expr.value.id)

    # ------------------------------------------------------------ statements

    def body(self, stmts, scope, loop, depth):
        for s in stmts:
            self.stmt(s, scope, loop, depth)

    def own(self, first, last, depth):
        """The lines first..last whose facts this statement gives: each line its innermost statement's, the first
        of two statements on one line (a `;`) keeping it."""
        lines = []
        for n in range(first, last + 1):
            if self.owner.get(n, -1) < depth:
                self.owner[n] = depth
                lines.append(n)
        return lines

    def stmt(self, s, scope, loop, depth):
        f = self.f
        first = _first_line(s)
        compound = isinstance(s, _COMPOUND)
        if compound:
            # the header: its first line to the line before its body (none of its own when the body starts on
            # its line, `if x: y()`, whose line is the body statement's)
            is_match = hasattr(ast, "Match") and isinstance(s, ast.Match)
            body0 = _first_line(s.cases[0].pattern if is_match else s.body[0])
            last = body0 - 1
        else:
            last = s.end_lineno or s.lineno
        if isinstance(s, _LOOPS):
            loop = (first, s.end_lineno or first, f.indent(_first_line(s.body[0])))
        facts = []  # (key, value) for every line of the statement (of the header)
        facts.append((P.FACT_STMT, "%d %d" % (first, max(first, last))))
        facts.append((P.FACT_INDENT, f.indent(first)))
        if compound:
            facts.append((P.FACT_OPENS, "1"))
            facts.append((P.FACT_BODY_INDENT, f.indent(body0)))
        facts.append((P.FACT_FUNCTION, scope[0]))
        facts.append((P.FACT_FUNCTION_LINE, str(scope[1])))
        if loop is not None:
            facts.append((P.FACT_LOOP, "%d %d %s" % loop))
        facts.extend(self.binds(s))
        # an attribute the function set before (self.bias = None, then self.bias = torch.zeros(n)): a buffer
        # registered under that name needs the plain attribute gone first
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = s.args
            named = a.posonlyargs + a.args
            pairs = list(zip(named[len(named) - len(a.defaults):], a.defaults)) + \
                [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            params = [x.arg for x in named + ([a.vararg] if a.vararg else []) + a.kwonlyargs +
                      ([a.kwarg] if a.kwarg else [])]
            if params:  # def forward(self, x, mask=None): "self,x,mask": what a fix inside may name
                facts.append((P.FACT_PARAMS, ",".join(params)))
            if pairs:  # def load(path, device='cpu'): "device='cpu'"
                facts.append((P.FACT_DEFAULTS, "\t".join("%s=%s" % (k.arg, f.src(d).replace("\t", " "))
                                                         for k, d in pairs)))
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope[2] and self.bases.get(scope[:2]):
            facts.append((P.FACT_CLASS_BASES, self.bases[scope[:2]]))  # a method: its class's bases
        if isinstance(s, ast.ClassDef):
            prefix = "" if scope[0] == "<module>" else scope[0] + ("." if scope[2] else ".<locals>.")
            self.bases[(prefix + s.name, s.lineno)] = ",".join(f.src(b) for b in s.bases)
        seen = self.attrs.setdefault(scope[:2], set())
        attrs = next((v.split(",") for k, v in facts if k == P.FACT_BINDS_ATTR), [])
        again = [a for a in attrs if a in seen]
        if again:
            facts.append((P.FACT_ATTR_AGAIN, ",".join(again)))
        seen.update(attrs)
        # setattr(self, k, v) alone: an attribute set by a name computed at run time (a loop over a dict)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) \
                and s.value.func.id == "setattr" and len(s.value.args) == 3 and not s.value.keywords \
                and not any(isinstance(a, ast.Starred) for a in s.value.args):
            texts = [f.src(a) for a in s.value.args]
            obj = s.value.args[0]
            # and whether OBJ is the receiver of the method it stands in (its first parameter: `self`)
            texts.append("1" if scope[3] and isinstance(obj, ast.Name) and obj.id == scope[3] else "0")
            if all("\n" not in t and "\t" not in t for t in texts):
                facts.append((P.FACT_SETATTR, "\t".join(texts)))
        if not compound:
            guard = self.move_guard(s)
            if guard:
                facts.append((P.FACT_GUARD, guard))
        if isinstance(s, ast.Return):
            facts.append((P.FACT_RETURNS, "1"))
            if s.value is not None:
                facts.append((P.FACT_RETURN_VALUE, f.src(s.value)))
        for n in self.own(first, last, depth):
            for k, v in facts:
                self.add(n, k, v)
        # the calls and device expressions of the statement itself (of a compound one: its header's)
        if compound:
            self.exprs(_header_exprs(s), (), scope[3])
        else:
            whole = [s.value] if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)) \
                and s.value is not None else []
            self.exprs([s], whole, scope[3])
        if not compound:
            return
        inner = scope
        outer_guard = self.guard
        if isinstance(s, _SCOPES):
            prefix = "" if scope[0] == "<module>" else scope[0] + ("." if scope[2] else ".<locals>.")
            inner = (prefix + s.name, s.lineno, isinstance(s, ast.ClassDef), _receiver(s) if scope[2] else None)
            loop = None  # a loop of another function is not this one's
            self.guard = None  # nor an `if` around the def
        elif isinstance(s, ast.If):
            self.guard = s.test
        self.body(getattr(s, "body", ()), inner, loop, depth + 1)  # a match has cases instead
        self.guard = None if isinstance(s, (ast.If,) + _SCOPES) else outer_guard  # an else: not the if's test
        if hasattr(ast, "Match") and isinstance(s, ast.Match):
            for c in s.cases:
                self.exprs([c.pattern] + ([c.guard] if c.guard is not None else []), (), scope[3])
                self.body(c.body, inner, loop, depth + 1)
        for h in getattr(s, "handlers", ()):
            self.clause(h.lineno, h.body, inner, loop, depth + 1, [(P.FACT_BINDS, h.name), (P.FACT_BINDS_KIND,
                                                                                             "other")] if h.name
                        else [])
            if h.type is not None:
                self.exprs([h.type], (), scope[3])
            self.body(h.body, inner, loop, depth + 1)
        for name in ("orelse", "finalbody"):
            stmts = getattr(s, name, None)
            if not stmts:
                continue
            if name == "orelse" and isinstance(s, ast.If) and len(stmts) == 1 and isinstance(stmts[0], ast.If) \
                    and f.line(stmts[0].lineno).lstrip().startswith("elif"):
                self.stmt(stmts[0], inner, loop, depth)  # an elif: a header of its own, at the if's depth
                continue
            kw = self.keyword_line(_first_line(stmts[0]), "else" if name == "orelse" else "finally")
            if kw:
                self.clause(kw, stmts, inner, loop, depth + 1, [])
            self.body(stmts, inner, loop, depth + 1)
        self.guard = outer_guard

    def move_guard(self, s):
        """The condition under which a statement's move runs, as written: the test of the `if` whose body holds it
        (`if args.cuda: model.cuda()`), or of the conditional expression whose taken branch holds the move call
        (`x = x.cuda() if use_cuda else x`); None when it holds no move (.to, .cuda) or runs unguarded. A program
        in the .cuda() idiom names no device: a move the fix adds runs under the program's own condition."""
        moves = [n for n in ast.walk(s) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("to", "cuda")]
        if not moves:
            return None
        test = self.guard
        if test is None:
            for n in ast.walk(s):
                if isinstance(n, ast.IfExp) and any(m is c for c in ast.walk(n.body) for m in moves):
                    test = n.test
                    break
        if test is None:
            return None
        text = self.f.src(test)
        return text if "\n" not in text and "\t" not in text and len(text) <= 200 else None

    def keyword_line(self, body_line, word):
        """The line of the `else:` / `finally:` before a clause's body starting at body_line, or 0."""
        for n in range(body_line, 0, -1):
            text = self.f.line(n).lstrip()
            if re.match(word + r"\s*:", text):
                return n
            if n < body_line and text and not text.startswith("#"):
                return 0
        return 0

    def clause(self, first, stmts, scope, loop, depth, extra):
        """An except/else/finally header: a compound header of its own."""
        f = self.f
        body0 = _first_line(stmts[0])
        if body0 <= first:
            return  # `else: x = 1`: the line is its statement's
        facts = [(P.FACT_STMT, "%d %d" % (first, body0 - 1)), (P.FACT_INDENT, f.indent(first)), (P.FACT_OPENS, "1"),
                 (P.FACT_BODY_INDENT, f.indent(body0)), (P.FACT_FUNCTION, scope[0]),
                 (P.FACT_FUNCTION_LINE, str(scope[1]))]
        if loop is not None:
            facts.append((P.FACT_LOOP, "%d %d %s" % loop))
        facts.extend(extra)
        for n in self.own(first, body0 - 1, depth):
            for k, v in facts:
                self.add(n, k, v)

    def binds(self, s):
        """binds, binds_kind, binds_attr and device_var of a statement."""
        targets, value, kind = [], None, None
        if isinstance(s, ast.Assign):
            targets, value = s.targets, s.value
        elif isinstance(s, ast.AugAssign) or (isinstance(s, ast.AnnAssign) and s.value is not None):
            targets, value = [s.target], s.value
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            targets, kind = [s.target], "other"
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            targets, kind = [i.optional_vars for i in s.items if i.optional_vars is not None], "other"
        if not targets:
            return []
        names, attrs = [], []
        for t in targets:
            _names(t, names)
            _self_attrs(t, attrs)
        unpack = any(isinstance(t, (ast.Tuple, ast.List)) for t in targets)
        devs = []
        if value is not None and not unpack and _is_device_value(value):
            for t in targets:
                if isinstance(t, ast.Name):
                    devs.append((P.FACT_DEVICE_VAR, t.id))
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    # self.device, and an attribute of another object: args.device = torch.device(...)
                    devs.append((P.FACT_DEVICE_VAR, t.value.id + "." + t.attr))
        if not names and not attrs:
            return devs
        if unpack:
            kind = "unpack"
        elif kind is None:
            kind = ("tuple" if isinstance(value, (ast.Tuple, ast.List)) else
                    "call" if isinstance(value, ast.Call) else "other")
        out = []
        if names:
            out.append((P.FACT_BINDS, ",".join(names)))
        if attrs:
            out.append((P.FACT_BINDS_ATTR, ",".join(attrs)))
        out.append((P.FACT_BINDS_KIND, kind))
        if attrs and len(targets) == 1 and not unpack and isinstance(value, ast.Name):
            out.append((P.FACT_ATTR_FROM, value.id))  # self.pe = pe: the attribute holds what the name held
        return out + devs


def file_facts(path):
    """The facts of one file, (line, key, value) with every value a string, in a stable order: line 0's first.
    Read and parsed once per path; () when the file cannot be read or is not valid Python."""
    got = _cache.get(path)
    if got is not None:
        return got
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        f = _File(data)
        w = _Facts(f)
        w.body(f.tree.body, ("<module>", 0, False, None), None, 0)
        seen, facts = set(), [(0, P.FACT_SHA256, hashlib.sha256(data).hexdigest()),
                              (0, P.FACT_LINES, str(len(f.lines)))]
        for fact in w.facts:
            if fact not in seen:
                seen.add(fact)
                facts.append(fact)
        got = tuple(facts)
    except Exception:  # unreadable, not Python (SyntaxError), too deep (RecursionError): no facts for it
        got = ()
    _cache[path] = got
    return got


# ------------------------------------------------------------ which files are the program's


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_path(key)
        except Exception:
            p = None
        if p:
            dirs.add(p)
    for name in ("torch", "numpy"):  # a source checkout of torch is not the program either
        m = sys.modules.get(name)
        f = getattr(m, "__file__", None)
        if isinstance(f, str):
            dirs.add(os.path.dirname(f))
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.add(here)  # devtrace's own package
    dirs.add(os.path.join(os.path.dirname(here), "sitecustomize.py"))  # and its bootstrap beside it
    # each as given and with its links resolved: a file is matched both ways too
    both = set()
    for d in dirs:
        for form in (os.path.abspath(d), os.path.realpath(d)):
            both.add(form if form.endswith(".py") else form + os.sep)
    return tuple(sorted(both))


def is_program_file(path, lib_dirs=None):
    """A file of the program: not of the standard library, of an installed package (site-packages,
    dist-packages) or of devtrace; a real file (not `<stdin>`, `<frozen ...>`)."""
    if not path or path.startswith("<") or (os.path.splitext(path)[1] not in ("", ".py", ".pyw")):
        return False
    libs = lib_dirs if lib_dirs is not None else _library_dirs()
    for form in (os.path.abspath(path), os.path.realpath(path)):  # Debian's sitecustomize.py links to /etc
        parts = form.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts or form.startswith(libs):
            return False
    return True


def program_files(frame=None):
    """The program's files now: __main__'s, those of the frames on the calling thread's stack, and those of every
    loaded module that is the program's; as each names its file (a frame's co_filename)."""
    libs = _library_dirs()
    out = []
    main = sys.modules.get("__main__")
    cands = [getattr(main, "__file__", None)]
    f = frame if frame is not None else sys._getframe(1)
    while f is not None:
        cands.append(f.f_code.co_filename)
        f = f.f_back
    for m in list(sys.modules.values()):
        cands.append(getattr(m, "__file__", None))
    for c in cands:
        if isinstance(c, str) and c not in out and is_program_file(c, libs):
            out.append(c)
    return out


def _loaded_module(path):
    """The module the program loaded from path (its script's __main__ too), or None."""
    try:
        real = os.path.realpath(path)
        for mod in list(sys.modules.values()):
            f = getattr(mod, "__file__", None)
            if isinstance(f, str) and (f == path or (os.path.basename(f) == os.path.basename(path)
                                                     and os.path.realpath(f) == real)):
                return mod
    except Exception:
        pass
    return None


def module_class_facts(path, facts):
    """(line, FACT_MODULE_CLASS, "1") for each method's def line of path whose class is a torch.nn.Module, asked of the
    class itself where the program's module holds it (an nn.Embedding subclass, a PreTrainedModel's, a
    LightningModule's: whatever its bases are called); () when the file's module or torch is not loaded."""
    torch = sys.modules.get("torch")
    Module = getattr(getattr(torch, "nn", None), "Module", None)
    mod = _loaded_module(path) if isinstance(Module, type) else None
    if mod is None:
        return ()
    scope = {line: value for line, key, value in facts if key == P.FACT_FUNCTION}
    out, seen = [], {}
    for line, key, value in facts:
        if key != P.FACT_CLASS_BASES or line not in scope:
            continue
        qual = scope[line]
        if qual not in seen:
            try:  # the class as the module holds it (a class made in a function has no such name: not said)
                obj = mod
                for part in qual.split("."):
                    obj = getattr(obj, part, None) if part != "<locals>" else None
                    if obj is None:
                        break
                seen[qual] = isinstance(obj, type) and issubclass(obj, Module)
            except Exception:
                seen[qual] = False
        if seen[qual]:
            out.append((line, P.FACT_MODULE_CLASS, "1"))
    return tuple(out)


class Emitter:
    """Writes the facts of the program's files into the trace, each file once: at the first device mismatch all of
    them, at a later one those not written yet. Never raises into the program."""

    def __init__(self):
        self.done = set()
        self.off = False  # the tracer has no dtp_source_fact (an older one): nothing is written

    def emit(self, frame=None):
        if self.off:
            return
        try:
            paths = program_files(frame if frame is not None else sys._getframe(1))
        except Exception:  # never the program's failure: no facts (the trace says nothing it does not know)
            return
        for path in paths:
            if path in self.done or len(self.done) >= MAX_FILES:
                continue
            self.done.add(path)
            try:
                facts = file_facts(path)
                for line, key, value in facts + module_class_facts(path, facts):
                    if not P.source_fact(path, line, key, value):
                        self.off = True
                        return
            except Exception:  # a name that is not text (undecodable bytes), a value with a NUL: this file's rest
                continue
