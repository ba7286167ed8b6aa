"""Tests of the source facts (devtrace_torch/source.py, probe dtp_source_fact, table source_facts; run by ctest).

1. source.py on tests/adapters/fixtures/source_facts_input.py: every fact of every line, exactly (multi-line statements,
   headers and their bodies' indentation, loops, calls and temporaries, binds, device expressions, returns), the
   keys being the extension's FACT_* constants; a file read once; no facts for a file that is not Python or cannot
   be read; which files are the program's; an emitter under a tracer without the probe stops at once.
2. A PyTorch program with a device mismatch, traced on two simulated GPUs: source_facts_v holds its file's sha256,
   line count and the facts of its lines, and no other file's (not torch's, nor devtrace's); its fixed twin, with
   no mismatch, has no facts.

usage: source_facts.py PYDIR DEVTRACE PYTHON EXAMPLES_DIR WORK_DIR
Prints one line per check and "N passed, N failed"; exits 1 on a failure.
"""

import hashlib
import os
import sqlite3
import subprocess
import sys

PYDIR, DEVTRACE, PYTHON, EXAMPLES, WORK = sys.argv[1:6]
sys.path.insert(0, PYDIR)
from devtrace_torch import _probes, source  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "source_facts_input.py")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else "\n" + str(detail)), flush=True)


# ------------------------------------------------------------ 1. source.py alone

# line -> its facts, in the order source.py gives them
EXPECTED = {
    2: [('stmt', '2 2'), ('indent', ''), ('function', '<module>'), ('function_line', '0')],
    4: [('stmt', '4 4'), ('indent', ''), ('function', '<module>'), ('function_line', '0'), ('binds', 'device'),
         ('binds_kind', 'call'), ('device_var', 'device'), ('call', 'torch.device\t\t0\t4\t69\t1\t0'),
         ('call', 'torch.cuda.is_available\t\t1\t4\t57\t0\t0')],
    5: [('stmt', '5 5'), ('indent', ''), ('function', '<module>'), ('function_line', '0'), ('binds', 'dev2'),
         ('binds_kind', 'other'), ('device_var', 'dev2'), ('call', 'torch.cuda.is_available\t\t1\t5\t42\t0\t0')],
    8: [('stmt', '8 8'), ('indent', ''), ('opens', '1'), ('body_indent', '    '), ('function', '<module>'),
         ('function_line', '0')],
    9: [('stmt', '9 9'), ('indent', '    '), ('opens', '1'), ('body_indent', '        '), ('function', 'Net'),
         ('function_line', '8'), ('params', 'self,args'), ('class_bases', 'torch.nn.Module')],
    10: [('stmt', '10 10'), ('indent', '        '), ('function', 'Net.__init__'), ('function_line', '9'),
         ('call', 'super().__init__\t\t0\t10\t26\t0\t0'), ('call', 'super\t\t1\t10\t15\t0\t0')],
    11: [('stmt', '11 11'), ('indent', '        '), ('function', 'Net.__init__'), ('function_line', '9'),
         ('binds_attr', 'self.device'), ('binds_kind', 'other'), ('device_var', 'self.device')],
    12: [('stmt', '12 12'), ('indent', '        '), ('function', 'Net.__init__'), ('function_line', '9'),
         ('binds_attr', 'self.mask,self.scale'), ('binds_kind', 'unpack'), ('call', 'torch.ones\t\t1\t12\t45\t1\t0')],
    14: [('stmt', '14 14'), ('indent', '    '), ('opens', '1'), ('body_indent', '        '), ('function', 'Net'),
         ('function_line', '8'), ('params', 'self,x'), ('class_bases', 'torch.nn.Module')],
    15: [('stmt', '15 15'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('binds', 'pos'), ('binds_kind', 'call'), ('call', 'self.emb\t\t0\t15\t64\t1\t0'),
         ('call', 'torch.arange\tx.device\t1\t15\t63\t1\t0'), ('device_expr', 'x.device'), ('device_of', 'x'),
         ('call', 'x.size\t\t1\t15\t45\t1\t0')],
    16: [('stmt', '16 17'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('binds', 'h,c'), ('binds_kind', 'unpack'), ('call', 'self.init_hidden\t\t0\t17\t41\t1\t0'),
         ('device_arg', 'self.init_hidden\t#1'), ('call', 'x.size\t\t1\t16\t41\t1\t0')],
    17: [('stmt', '16 17'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('binds', 'h,c'), ('binds_kind', 'unpack'), ('device_of', 'x')],
    18: [('stmt', '18 18'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('binds', 'states'), ('binds_kind', 'tuple')],
    19: [('stmt', '19 19'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('binds', 'y'), ('binds_kind', 'call'),
         ('call', 'x.to(torch.float32).to(self.device).cuda\t\t0\t19\t54\t0\t0'), ('device_expr', '"cuda"'),
         ('call', 'x.to(torch.float32).to\t\t1\t19\t47\t1\t0'), ('device_expr', 'self.device'),
         ('call', 'x.to\t\t1\t19\t31\t1\t0')],
    20: [('stmt', '20 20'), ('indent', '        '), ('function', 'Net.forward'), ('function_line', '14'),
         ('returns', '1'), ('return_value', 'pos + y, states')],
    23: [('stmt', '23 23'), ('indent', ''), ('opens', '1'), ('body_indent', '    '), ('function', '<module>'),
         ('function_line', '0'), ('params', 'model,loader,args')],
    24: [('stmt', '24 24'), ('indent', '    '), ('opens', '1'), ('body_indent', '        '), ('function', 'train'),
         ('function_line', '23'), ('loop', '24 33         '), ('binds', 'step,x,y'), ('binds_kind', 'unpack'),
         ('call', 'enumerate\t\t1\t24\t41\t1\t0'), ('args', 'enumerate\tloader')],
    25: [('stmt', '25 25'), ('indent', '        '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         '), ('binds', 'x'), ('binds_kind', 'call'), ('call', 'x.to\t\t0\t25\t48\t1\t0'),
         ('device_expr', 'args.device'), ('device_of', 'args')],
    26: [('stmt', '26 26'), ('indent', '        '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         '), ('binds', 'y'), ('binds_kind', 'call'), ('call', 'y.cuda\t\t0\t26\t21\t1\t0'),
         ('device_expr', '1')],
    27: [('stmt', '27 27'), ('indent', '        '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         '), ('binds', 'z'), ('binds_kind', 'other'), ('call', 'x.to\t\t1\t27\t26\t1\t0'),
         ('device_expr', '"cuda:0"'), ('call', 'y.to\t\t1\t27\t58\t1\t0'), ('device_expr', 'torch.device("cuda", 1)'),
         ('call', 'torch.device\t\t1\t27\t57\t1\t0'), ('call', 'str\t\t1\t27\t82\t1\t0'),
         ('call', 'z.cpu\t\t1\t27\t81\t0\t0')],
    28: [('stmt', '28 28'), ('indent', '        '), ('opens', '1'), ('body_indent', '            '),
         ('function', 'train'), ('function_line', '23'), ('loop', '24 33         ')],
    29: [('stmt', '29 29'), ('indent', '            '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         '), ('binds', 'loss'), ('binds_kind', 'call'), ('call', 'model\t\t0\t29\t27\t1\t0'),
         ('args', 'model\tx')],
    30: [('stmt', '30 30'), ('indent', '        '), ('opens', '1'), ('body_indent', '            '),
         ('function', 'train'), ('function_line', '23'), ('loop', '24 33         '), ('binds', 'e'),
         ('binds_kind', 'other')],
    31: [('stmt', '31 31'), ('indent', '            '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         ')],
    32: [('stmt', '32 32'), ('indent', '        '), ('opens', '1'), ('body_indent', '            '),
         ('function', 'train'), ('function_line', '23'), ('loop', '24 33         ')],
    33: [('stmt', '33 33'), ('indent', '            '), ('function', 'train'), ('function_line', '23'),
         ('loop', '24 33         '), ('call', 'model.step\t\t0\t33\t24\t0\t0')],
    34: [('stmt', '34 34'), ('indent', '    '), ('function', 'train'), ('function_line', '23'), ('returns', '1'),
         ('return_value', 'loss')],
    37: [('stmt', '37 37'), ('indent', ''), ('opens', '1'), ('body_indent', '    '), ('function', '<module>'),
         ('function_line', '0')],
    38: [('stmt', '38 39'), ('indent', '    '), ('opens', '1'), ('body_indent', '        '), ('function', 'outer'),
         ('function_line', '37'), ('params', 't')],
    39: [('stmt', '38 39'), ('indent', '    '), ('opens', '1'), ('body_indent', '        '), ('function', 'outer'),
         ('function_line', '37'), ('params', 't')],
    40: [('stmt', '40 40'), ('indent', '        '), ('opens', '1'), ('body_indent', '            '),
         ('function', 'outer.<locals>.inner'), ('function_line', '39'), ('loop', '40 41             '),
         ('call', 't.sum\t\t1\t40\t21\t0\t0')],
    41: [('stmt', '41 41'), ('indent', '            '), ('function', 'outer.<locals>.inner'),
         ('function_line', '39'), ('loop', '40 41             '), ('binds', 't'), ('binds_kind', 'other')],
    42: [('stmt', '42 42'), ('indent', '        '), ('function', 'outer.<locals>.inner'), ('function_line', '39'),
         ('binds', 't'), ('binds_kind', 'call'), ('call', 'torch.zeros\tdevice\t0\t42\t55\t1\t0'),
         ('device_expr', 'device')],
    43: [('stmt', '43 43'), ('indent', '        '), ('function', 'outer.<locals>.inner'), ('function_line', '39'),
         ('returns', '1'), ('return_value', 't')],
    44: [('stmt', '44 44'), ('indent', '    '), ('function', 'outer'), ('function_line', '37'), ('returns', '1'),
         ('return_value', 'inner')],
}


def unit():
    with open(FIXTURE, "rb") as f:
        data = f.read()
    facts = source.file_facts(FIXTURE)
    check("line 0: sha256 and lines", facts[:2] == ((0, "sha256", hashlib.sha256(data).hexdigest()),
                                                    (0, "lines", str(data.count(b"\n")))), facts[:2])
    got = {}
    for line, key, value in facts[2:]:
        got.setdefault(line, []).append((key, value))
    for line in sorted(set(EXPECTED) | set(got)):
        check("line %d: its facts" % line, got.get(line) == EXPECTED.get(line),
              "got      %r\nexpected %r" % (got.get(line), EXPECTED.get(line)))
    keys = {k for _, k, _ in facts}
    consts = {getattr(_probes, n) for n in dir(_probes) if n.startswith("FACT_")}
    # 26 keys the Python producer writes (module_class when it writes them, from the loaded classes), and 6 only
    # the tracer's native producer writes (lang, block, args, module_var, optimizer_var, move_wrap)
    check("every key is one of the extension's FACT_* constants", keys <= consts and len(consts) == 33,
          (sorted(keys - consts), sorted(consts)))
    check("FACT_STMT is common/trace_schema.h's DT_FACT_STMT", _probes.FACT_STMT == "stmt")
    check("a file is read once", source.file_facts(FIXTURE) is facts)
    os.makedirs(WORK, exist_ok=True)
    bad = os.path.join(WORK, "not_python.py")
    with open(bad, "w") as f:
        f.write("def broken(:\n    pass\n")
    check("no facts for a file that is not Python", source.file_facts(bad) == ())
    check("no facts for a file that cannot be read", source.file_facts(os.path.join(WORK, "missing.py")) == ())
    more = os.path.join(WORK, "more_facts.py")
    with open(more, "w") as f:
        f.write("import torch\nw = torch.full(\n    (3,), 1.0,  # a comment\n)\nv = torch.ones(3, 2)\n\n\n"
                "class M:\n    def __init__(self, n=3, *, device='cpu'):\n        self.bias = None\n        self.scale = 1\n"
                "        if n:\n            self.bias, self.scale = torch.zeros(n), 2\n\n    def reset(self):\n"
                "        self.bias = None\n        self.w = v\n")
    mf = source.file_facts(more)
    calls = {(l, v.split("\t")[0]): v.split("\t")[6] for l, k, v in mf if k == "call"}
    check("a call's trailing comma (after a comment too), and none", calls.get((2, "torch.full")) == "1" and
          calls.get((5, "torch.ones")) == "0", calls)
    froms = [(l, v) for l, k, v in mf if k == "attr_from"]
    check("an attribute set from a name, and only from one", froms == [(17, "v")], froms)
    defaults = [(l, v) for l, k, v in mf if k == "defaults"]
    check("a def line's parameters with a default", defaults == [(9, "n=3\tdevice='cpu'")], defaults)
    params = [(l, v) for l, k, v in mf if k == "params"]
    check("a def line's parameters, all of them (keyword-only too), in order", params ==
          [(9, "self,n,device"), (15, "self")], params)
    again = [(l, v) for l, k, v in mf if k == "attr_again"]
    check("attributes an earlier statement of the same function set, and only those", again ==
          [(13, "self.bias,self.scale")], again)
    def facts_of(name, text, key):
        """(line, value) of every `key` fact of a file holding text."""
        path = os.path.join(WORK, name)
        with open(path, "w") as f:
            f.write(text)
        return [(l, v) for l, k, v in source.file_facts(path) if k == key]

    sets = facts_of("receiver_facts.py", "class M:\n    def __init__(me, t):\n        setattr(me, 'a', t)\n"
                    "        setattr(t, 'b', me)\n        def inner(self):\n            setattr(self, 'c', 1)\n\n"
                    "    @staticmethod\n    def make(self):\n        setattr(self, 'd', 1)\n\n\n"
                    "def f(self):\n    setattr(self, 'e', 1)\n", "setattr")
    check("setattr says whether its object is the method's receiver (its first parameter, by any name), and only "
          "in a method", sets == [(3, "me\t'a'\tt\t1"), (4, "t\t'b'\tme\t0"), (6, "self\t'c'\t1\t0"),
                                   (10, "self\t'd'\t1\t0"), (14, "self\t'e'\t1\t0")], sets)
    of = facts_of("device_of_facts.py", "import torch\nx = torch.ones(2)\ny = torch.zeros(2, device=x.device)\n"
                  "z = y.to(x.device)\nw = y.to(device=x.device)\nv = y.to(self.a.device)\n"
                  "u = torch.ones(2, device=dev)\n\n\nclass M:\n    def f(me, q):\n"
                  "        return torch.ones(2, device=me.device), q.to(q.device)\n", "device_of")
    check("device_of: the name whose .device a device= or .to() follows, and nothing else (not a method's "
          "receiver)", of == [(3, "x"), (4, "x"), (5, "x"), (12, "q")], of)
    guards = facts_of("guard_facts.py", "import torch\nuse_cuda = torch.cuda.is_available()\nm = torch.nn.Linear(2, 2)\n"
                      "if use_cuda:\n    m.cuda()\n    for i in range(2):\n        x = torch.ones(2).cuda()\n"
                      "    y = torch.ones(2)\nelse:\n    m.to('cpu')\nif args.cuda and torch.cuda.is_available():\n"
                      "    def f(t):\n        return t.cuda()\nz = x.cuda() if not args.cpu else x\n"
                      "w = x if use_cuda else x.cuda()\nm.cuda()\n", "guard")
    check("guard: the condition of the innermost `if` whose body holds a move (through a loop; not its else, nor a "
          "def inside it), or of the conditional expression whose taken branch holds it; none unguarded",
          guards == [(5, "use_cuda"), (7, "use_cuda"), (14, "not args.cpu")], guards)
    check("the fixture is the program's", source.is_program_file(FIXTURE))
    check("the standard library is not", not source.is_program_file(os.__file__))
    check("an installed package is not", not source.is_program_file("/usr/lib/python3/dist-packages/x/y.py")
          and not source.is_program_file("/opt/venv/lib/python3.11/site-packages/x.py"))
    check("devtrace's own package is not", not source.is_program_file(source.__file__))
    check("<stdin> and extension modules are not", not source.is_program_file("<stdin>")
          and not source.is_program_file(_probes.__file__))
    check("this test is a program file on its own stack", __file__ in source.program_files()
          or os.path.abspath(__file__) in source.program_files())

    class NoProbe:  # an older tracer: source_fact says False
        calls = 0

        def source_fact(self, *a):
            NoProbe.calls += 1
            return False

        def __getattr__(self, name):
            return getattr(_probes, name)
    saved = source.P
    try:
        source.P = NoProbe()
        e = source.Emitter()
        e.emit()
        e.emit()
    finally:
        source.P = saved
    check("without the probe: one call, then none", NoProbe.calls == 1 and e.off, NoProbe.calls)


# ------------------------------------------------------------ 2. a traced program


def traced(script, db):
    env = dict(os.environ, DEVTRACE_SIM_CUDA="2", DEVTRACE_QUIET="1")
    p = subprocess.run([DEVTRACE, "run", "-o", db, "--overwrite", "--", PYTHON, script], env=env, cwd=WORK,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stderr


def end_to_end():
    script = os.path.join(EXAMPLES, "bug_lstm_init_hidden.py")
    db = os.path.join(WORK, "lstm.db")
    rc, err = traced(script, db)
    check("the bug fails on the simulated GPUs", rc == 1 and "RuntimeError" in err, err[-2000:])
    con = sqlite3.connect(db)
    q = lambda sql, *a: con.execute(sql, a).fetchall()  # noqa: E731
    files = [r[0] for r in q("SELECT DISTINCT file FROM source_facts_v")]
    check("facts of the program's file only", files == [script], files)
    with open(script, "rb") as f:
        data = f.read()
    check("its sha256", q("SELECT value FROM source_facts_v WHERE file = ? AND line = 0 AND key = 'sha256'", script)
          == [(hashlib.sha256(data).hexdigest(),)])
    check("its line count", q("SELECT value FROM source_facts_v WHERE file = ? AND line = 0 AND key = 'lines'",
                              script) == [(str(data.count(b"\n")),)])
    with open(script) as f:
        lines = f.read().split("\n")
    origin = next(n for n, s in enumerate(lines, 1) if "devtrace: origin" in s)
    got = q("SELECT key, value FROM source_facts_v WHERE file = ? AND line = ? ORDER BY key, value", script, origin)
    want = sorted(source.file_facts(script)[i][1:] for i in range(len(source.file_facts(script)))
                  if source.file_facts(script)[i][0] == origin)
    check("the origin line's facts, as source.py reads them", got == want and ("binds_kind", "call") in got
          and any(k == "call" and v.startswith("torch.zeros\t") for k, v in got), (got, want))
    rows = q("SELECT line, key, value FROM source_facts_v WHERE file = ?", script)
    static = [r for r in rows if r[1] != "module_class"]
    check("every fact of the file, once", sorted(static) == sorted(source.file_facts(script))
          and len(rows) == len(set(rows)), (len(static), len(source.file_facts(script))))
    # the program's class CharLSTM is an nn.Module: each of its methods' def lines says so, asked of the class
    methods = sorted((line, "module_class", "1") for line, key, _ in source.file_facts(script) if key == "class_bases")
    check("module_class on each def line of the module's methods, from the class itself",
          len(methods) == 3 and sorted(r for r in rows if r[1] == "module_class") == methods,
          (methods, [r for r in rows if r[1] == "module_class"]))
    # the mismatch's own line (its innermost frame in the program) has its statement's facts
    line = q("SELECT f.line FROM v_errors e JOIN v_py_frames f ON f.stack = e.pystack WHERE f.file = ? "
             "ORDER BY e.seq, f.level LIMIT 1", script)
    check("the mismatch's line has facts", line and q("SELECT value FROM source_facts_v WHERE file = ? AND line = ? "
                                                      "AND key = 'stmt'", script, line[0][0]), line)
    con.close()
    rep = subprocess.run([DEVTRACE, "report", db], capture_output=True, text=True, timeout=120)
    check("the report reads the trace", rep.returncode == 1 and "device mismatch" in rep.stdout, rep.stderr)
    ok_db = os.path.join(WORK, "ok.db")
    rc, err = traced(os.path.join(EXAMPLES, "ok_lstm_init_hidden.py"), ok_db)
    con = sqlite3.connect(ok_db)
    n = con.execute("SELECT count(*) FROM source_facts").fetchone()[0]
    con.close()
    check("no mismatch, no facts", rc == 0 and n == 0, (rc, n, err[-1000:]))


def imported_module():
    """A program of two files: the module it imports is the program's too, and its lines join its frames."""
    d = os.path.join(WORK, "two_files")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "helper.py"), "w") as f:
        f.write("import torch\n\n\ndef make(n):\n    return torch.ones(n)\n")
    with open(os.path.join(d, "main.py"), "w") as f:
        f.write("import torch\nimport helper\n\nx = torch.ones(3).to(\"cuda:0\")\ny = helper.make(3)\nprint(x + y)\n")
    db = os.path.join(WORK, "two.db")
    env = dict(os.environ, DEVTRACE_SIM_CUDA="2", DEVTRACE_QUIET="1")
    p = subprocess.run([DEVTRACE, "run", "-o", db, "--overwrite", "--", PYTHON, "main.py"], env=env, cwd=d,
                       capture_output=True, text=True, timeout=300)
    con = sqlite3.connect(db)
    files = sorted(os.path.basename(r[0]) for r in con.execute("SELECT DISTINCT file FROM source_facts_v"))
    check("an imported module of the program has facts too", p.returncode == 1 and files == ["helper.py", "main.py"],
          (p.returncode, files, p.stderr[-1000:]))
    # the facts of the line that made y's tensor, found through its creation stack's frame in helper.py
    got = con.execute("SELECT x.key, x.value FROM v_tensors t JOIN v_py_frames f ON f.stack = t.pystack "
                      "JOIN source_facts_v x ON x.file = f.file AND x.line = f.line WHERE t.what = 'ones' "
                      "AND f.file LIKE '%helper.py' AND x.key IN ('returns', 'return_value', 'function')"
                      " ORDER BY x.key").fetchall()
    con.close()
    check("a frame's (file, line) finds its facts", got == [("function", "make"), ("return_value", "torch.ones(n)"),
                                                            ("returns", "1")], got)


unit()
end_to_end()
imported_module()
print("%d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
